//! `mcp`: every registered command-line tool served as MCP tools over stdio, on the
//! official Rust SDK (`rmcp`), with dynamic tools.
//!
//! `tools/list` is the `compile` MCP format (annotations from effects), in catalog order
//! (registry names sorted, then document order), paginated with opaque cursors.
//! `tools/call` goes through the same [`Engine`] as `atip exec`: schema validation,
//! path guardrails, policy, the `process` module, redaction, audit. Calls that need
//! confirmation are confirmed through elicitation when the client supports it: a
//! server→client `elicitation/create` request on sessions that negotiated a protocol
//! with the `initialize` handshake, or an `input_required` result and a retry on
//! 2026-07-28 sessions, which forbid server→client requests. Otherwise they are
//! refused with a message naming the rule.
//!
//! Must not print to stdout (the protocol owns it); logs go to stderr.
//!
//! The client side (atip talking to other MCP servers) lives in the submodules:
//! [`config`], [`client`], [`cache`], [`tools`] and [`remote`].

pub mod cache;
pub mod client;
pub mod config;
pub mod http;
pub mod import;
pub mod remote;
pub mod search_mode;
pub mod tools;

use crate::compile::formats::{self, Format};
use crate::exec::policy::{Action, Overflow};
use crate::exec::{self, Confirmation, Engine, Prepared, Via};
use crate::output::{AtipError, ErrorCode};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, ErrorData, Implementation, InputRequest, InputRequests,
    InputRequiredResult, ListToolsResult, PaginatedRequestParams, Request, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Tools per `tools/list` page.
pub const PAGE_SIZE: usize = 200;
/// Key of the confirmation request in an `input_required` result.
const CONFIRM_KEY: &str = "confirm";
/// Prefix of the request state that binds a confirmation to one exact call.
const STATE_PREFIX: &str = "atip-confirm-v1:";
/// How long a human has to answer an `elicitation/create` request.
const ELICIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The MCP server: tools compiled once at start-up, calls run through the engine.
#[derive(Clone)]
pub struct Server {
    engine: Arc<Engine>,
    tools: Arc<Vec<Tool>>,
    visible: Arc<HashMap<String, usize>>,
    /// What `tools/list` shows: every tool, or in search mode the search and call tools
    /// plus pinned ones.
    listed: Arc<Vec<Tool>>,
    /// Set in search mode.
    finder: Option<Arc<search_mode::Finder>>,
    running: Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>,
    next_id: Arc<AtomicU64>,
    slots: Arc<tokio::sync::Semaphore>,
    jobs: usize,
    budget: Arc<Mutex<Budget>>,
}

/// The session's call budget and rate window (`limits.maxSessionCalls`,
/// `limits.callsPerMinute`).
#[derive(Debug, Default)]
struct Budget {
    runs: usize,
    recent: std::collections::VecDeque<std::time::Instant>,
}

const RATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(60);

impl Server {
    /// Builds the tool list from the engine's visible tools, leaving out every tool the
    /// policy denies whatever its arguments (the same decision a call would get); above
    /// `scale.threshold` tools, lists the search and call tools (plus pinned ones) instead.
    /// At most `jobs` calls run at once.
    pub fn new(
        engine: Engine,
        scale: search_mode::Scale,
        jobs: usize,
    ) -> Result<Server, AtipError> {
        let visible: Vec<_> = engine
            .visible_tools()
            .into_iter()
            .filter(|t| !engine.denied_outright(t))
            .cloned()
            .collect();
        let rendered = formats::render(&formats::flat(&visible), Format::Mcp);
        let list = rendered["tools"].as_array().cloned().unwrap_or_default();
        let mut tools = Vec::with_capacity(list.len());
        for t in list {
            let mut tool: Tool = serde_json::from_value(t).map_err(|e| {
                AtipError::new(
                    ErrorCode::Internal,
                    format!("compiled MCP tool does not fit the MCP model: {e}"),
                )
            })?;
            // Every call answers with the same envelope, so its schema is known.
            tool.output_schema = Some(search_mode::envelope_schema());
            tools.push(tool);
        }
        let index: HashMap<String, usize> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        let (listed, finder) = if tools.len() > scale.threshold {
            let mut listed = vec![
                search_mode::search_tool(tools.len()),
                search_mode::call_tool(),
            ];
            for name in &scale.pinned {
                match index.get(name) {
                    Some(&i) => listed.push(tools[i].clone()),
                    None => {
                        eprintln!("atip mcp: warning: pinned tool {name:?} is not served; ignored")
                    }
                }
            }
            (listed, Some(Arc::new(search_mode::Finder::new(visible))))
        } else {
            (tools.clone(), None)
        };
        Ok(Server {
            engine: Arc::new(engine),
            tools: Arc::new(tools),
            visible: Arc::new(index),
            listed: Arc::new(listed),
            finder,
            running: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicU64::new(0)),
            slots: Arc::new(tokio::sync::Semaphore::new(jobs.max(1))),
            jobs: jobs.max(1),
            budget: Arc::new(Mutex::new(Budget::default())),
        })
    }

    /// Counts one run against the session budget and the rate window, or says why not.
    fn spend(&self) -> Result<(), AtipError> {
        let limits = self.engine.policy.limits();
        let mut b = self.budget.lock().unwrap_or_else(|p| p.into_inner());
        if limits.max_session_calls > 0 && b.runs >= limits.max_session_calls {
            return Err(AtipError::new(
                ErrorCode::SessionBudgetExceeded,
                format!(
                    "this MCP session already ran {} tool calls, its budget (limits.maxSessionCalls)",
                    b.runs
                ),
            )
            .hint("start a new session, or raise limits.maxSessionCalls in the policy")
            .details(json!({"maxSessionCalls": limits.max_session_calls})));
        }
        let now = std::time::Instant::now();
        while b
            .recent
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW)
        {
            b.recent.pop_front();
        }
        if limits.calls_per_minute > 0 && b.recent.len() >= limits.calls_per_minute {
            let wait = b
                .recent
                .front()
                .map(|t| RATE_WINDOW.saturating_sub(now.duration_since(*t)))
                .unwrap_or(RATE_WINDOW);
            return Err(AtipError::new(
                ErrorCode::RateLimited,
                format!(
                    "more than {} tool calls in one minute (limits.callsPerMinute)",
                    limits.calls_per_minute
                ),
            )
            .hint(format!(
                "retry in {}, or raise limits.callsPerMinute in the policy",
                crate::units::format_duration(wait)
            ))
            .details(json!({"retryAfterMs": wait.as_millis() as u64})));
        }
        b.runs += 1;
        b.recent.push_back(now);
        Ok(())
    }

    /// Number of tools served.
    pub fn tool_count(&self) -> usize {
        self.tools.len()
    }

    /// Whether `tools/list` shows the search and call tools instead of every tool.
    pub fn search_mode(&self) -> bool {
        self.finder.is_some()
    }

    /// The start-up line: how many tools, and how they are listed.
    pub fn banner(&self, transport: &str) -> String {
        if self.search_mode() {
            format!(
                "atip mcp: serving {} tools on {transport} (search mode: {} listed)",
                self.tool_count(),
                self.listed.len()
            )
        } else {
            format!(
                "atip mcp: serving {} tools on {transport}",
                self.tool_count()
            )
        }
    }

    /// Serves on stdin/stdout until the client closes stdin, then kills any child
    /// still running.
    pub async fn serve_stdio(self) -> Result<(), AtipError> {
        let running = self.running.clone();
        let service = self.serve(rmcp::transport::stdio()).await.map_err(|e| {
            AtipError::new(
                ErrorCode::McpFailed,
                format!("failed to start the MCP session: {e}"),
            )
        })?;
        let res = service.waiting().await;
        // The client is gone: whatever still runs has nobody to report to.
        for flag in running.lock().unwrap_or_else(|p| p.into_inner()).values() {
            flag.store(true, Ordering::SeqCst);
        }
        if let Err(e) = res {
            eprintln!("atip mcp: session ended with an error: {e}");
        }
        Ok(())
    }

    fn state_token(name: &str, args: &serde_json::Map<String, Value>) -> String {
        let args = serde_json::to_vec(args).unwrap_or_default();
        let hex = crate::digest::sha256_hex_parts(&[name.as_bytes(), b"\0", &args]);
        format!("{STATE_PREFIX}{hex}")
    }

    fn confirm_params(p: &Prepared) -> ElicitRequestParams {
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"confirm": {
                "type": "boolean",
                "title": "Run this command",
                "description": format!("Tick to run `{}`", p.shown_argv().join(" ")),
            }},
            "required": ["confirm"],
        }))
        .expect("static elicitation schema");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!(
                "The model wants to run `{}` ({}). Allow it?",
                p.command_path(),
                p.decision.explain(Action::Confirm)
            ),
            requested_schema: schema,
        }
    }

    fn accepted(result: &Value) -> Confirmation {
        let action = result.get("action").and_then(Value::as_str);
        let ticked = result.pointer("/content/confirm") == Some(&Value::Bool(true));
        match action {
            Some("accept") if ticked => Confirmation::Yes,
            _ => Confirmation::No,
        }
    }

    async fn run_call(
        &self,
        p: Prepared,
        confirmed: bool,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let name = p.tool.name.clone();
        let refused =
            |e: AtipError| CallToolResult::structured_error(exec::error_envelope(Some(&name), &e));
        if let Err(e) = self.spend() {
            return refused(e);
        }
        let permit = match self.engine.policy.limits().overflow {
            Overflow::Wait => tokio::select! {
                p = self.slots.clone().acquire_owned() => p.ok(),
                _ = ctx.ct.cancelled() => None,
            },
            Overflow::Refuse => match self.slots.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    return refused(
                        AtipError::new(
                            ErrorCode::Busy,
                            format!("{} calls are already running (--jobs)", self.jobs),
                        )
                        .hint("retry when a running call has finished; the policy refuses calls past --jobs (limits.overflow: refuse)")
                        .details(json!({"jobs": self.jobs})),
                    );
                }
            },
        };
        let Some(_permit) = permit else {
            return refused(AtipError::new(
                ErrorCode::Cancelled,
                "the call was cancelled while waiting for a free slot",
            ));
        };
        let flag = Arc::new(AtomicBool::new(false));
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, flag.clone());
        let engine = self.engine.clone();
        let call_id = ctx.id.to_string();
        let via = via_mcp(ctx);
        let run_flag = flag.clone();
        let mut task = tokio::task::spawn_blocking(move || {
            let r = engine.run(&p, confirmed, Some(run_flag), &via, Some(&call_id));
            (p.tool.name.clone(), r)
        });
        let joined = tokio::select! {
            r = &mut task => r,
            _ = ctx.ct.cancelled() => {
                flag.store(true, Ordering::SeqCst);
                task.await
            }
        };
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
        match joined {
            Ok((_, Ok(r))) => {
                let failed = r.tool_failed();
                let v = serde_json::to_value(&r).unwrap_or(Value::Null);
                if failed {
                    CallToolResult::structured_error(v)
                } else {
                    CallToolResult::structured(v)
                }
            }
            Ok((name, Err(e))) => {
                CallToolResult::structured_error(exec::error_envelope(Some(&name), &e))
            }
            Err(e) => CallToolResult::structured_error(exec::error_envelope(
                None,
                &AtipError::new(ErrorCode::Internal, format!("call failed: {e}")),
            )),
        }
    }

    fn refused(
        &self,
        p: &Prepared,
        answer: Option<Confirmation>,
        ctx: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let call_id = ctx.id.to_string();
        let mut e = self.engine.refuse(p, answer, &via_mcp(ctx), Some(&call_id));
        if e.code == ErrorCode::ConfirmationRequired {
            e.hint = Some(format!(
                "this MCP client cannot confirm (no elicitation support); allow it in the policy ({}) or run it with `atip exec --yes`",
                p.decision.rule_ids(Action::Confirm).join(", ")
            ));
        }
        CallToolResult::structured_error(exec::error_envelope(Some(&p.tool.name), &e))
    }
}

fn via_mcp(ctx: &RequestContext<RoleServer>) -> Via {
    Via::Mcp {
        client: ctx
            .client_info()
            .map(|i| format!("{}/{}", i.name, i.version)),
    }
}

fn supports_form_elicitation(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("atip", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs one command of a registered command-line tool (ATIP metadata). \
                 Calls are validated, checked against atip's policy and run without a shell; \
                 results are {status, data:{exitCode, stdout, stderr, json?}, meta} or \
                 {status:\"error\", error:{code, category, message, hint, retryable, details}}.",
            )
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start = match request.and_then(|r| r.cursor) {
            None => 0,
            Some(c) => c
                .strip_prefix("atip-page:")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n > 0 && *n < self.listed.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor {c:?}"), None))?,
        };
        let end = (start + PAGE_SIZE).min(self.listed.len());
        let page = self.listed[start..end].to_vec();
        let next = (end < self.listed.len()).then(|| format!("atip-page:{end}"));
        Ok(ListToolsResult {
            next_cursor: next,
            ..ListToolsResult::with_all_items(page)
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        if self.search_mode()
            && let Some(t) = self.listed.iter().find(|t| t.name == name)
        {
            return Some(t.clone());
        }
        self.visible.get(name).map(|&i| self.tools[i].clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let started = std::time::Instant::now();
        let response = self.handle_call(request, &context).await;
        log_call(&name, &response, started.elapsed());
        response
    }
}

/// One line per call on stderr: tool, outcome, time. Never arguments or output.
fn log_call(name: &str, response: &Result<CallToolResponse, ErrorData>, took: std::time::Duration) {
    let what = match response {
        Err(e) => format!("protocol error {}", e.code.0),
        Ok(CallToolResponse::Complete(r)) => {
            let s = r.structured_content.as_ref();
            match s
                .and_then(|v| v.pointer("/error/code"))
                .and_then(Value::as_str)
            {
                Some(code) => format!("error {code}"),
                None => format!(
                    "exit {}",
                    s.and_then(|v| v.pointer("/data/exitCode"))
                        .map(|v| v.to_string())
                        .unwrap_or_else(|| "?".into())
                ),
            }
        }
        Ok(CallToolResponse::InputRequired(_)) => "confirmation requested".into(),
        Ok(_) => "other".into(),
    };
    eprintln!("atip mcp: {name}: {what} ({} ms)", took.as_millis());
}

impl Server {
    async fn handle_call(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let context = context.clone();
        let mut request = request;
        if let Some(finder) = &self.finder {
            if request.name == search_mode::SEARCH_TOOL {
                let args = request.arguments.clone().unwrap_or_default();
                return Ok(match finder.search(&args) {
                    Ok(v) => CallToolResult::structured(v).into(),
                    Err(why) => CallToolResult::structured_error(exec::error_envelope(
                        Some(search_mode::SEARCH_TOOL),
                        &AtipError::new(ErrorCode::ArgsInvalid, why),
                    ))
                    .into(),
                });
            }
            if request.name == search_mode::CALL_TOOL {
                let args = request.arguments.clone().unwrap_or_default();
                let inner = args.get("name").and_then(Value::as_str).map(str::to_string);
                let inner_args = match args.get("arguments") {
                    None | Some(Value::Null) => Some(serde_json::Map::new()),
                    Some(Value::Object(m)) => Some(m.clone()),
                    Some(_) => None,
                };
                let (Some(inner), Some(inner_args)) = (inner, inner_args) else {
                    return Ok(CallToolResult::structured_error(exec::error_envelope(
                        Some(search_mode::CALL_TOOL),
                        &AtipError::new(ErrorCode::ArgsInvalid, "atip_call_tool needs \"name\" (a string) and \"arguments\" (an object)",
                        ),
                    ))
                    .into());
                };
                // The same path as a direct call, under the inner tool's name.
                request.name = inner.into();
                request.arguments = Some(inner_args);
            }
        }
        let name = request.name.to_string();
        if !self.visible.contains_key(&name) && !self.engine.knows(&name) {
            let close = self.engine.catalog().closest(&name, 5);
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                Some(json!({"closest": close})),
            ));
        }
        let args = request.arguments.clone().unwrap_or_default();
        let token = Self::state_token(&name, &args);
        let p = match self.engine.prepare(&name, args) {
            Ok(p) => p,
            Err(e) => {
                return Ok(
                    CallToolResult::structured_error(exec::error_envelope(Some(&name), &e)).into(),
                );
            }
        };
        let confirmed = match p.decision.action {
            Action::Allow => false,
            Action::Deny => return Ok(self.refused(&p, None, &context).into()),
            Action::Confirm => {
                // 2026-07-28 retry form: the answer comes back with the same call.
                if let Some(responses) = &request.input_responses {
                    let answer =
                        match (responses.get(CONFIRM_KEY), request.request_state.as_deref()) {
                            (Some(r), Some(state)) if state == token => Self::accepted(r),
                            _ => Confirmation::No,
                        };
                    if answer != Confirmation::Yes {
                        return Ok(self.refused(&p, Some(answer), &context).into());
                    }
                    true
                } else if !supports_form_elicitation(&context) {
                    return Ok(self
                        .refused(&p, Some(Confirmation::Unavailable), &context)
                        .into());
                } else if context
                    .protocol_version()
                    .is_some_and(|v| !v.has_initialize())
                {
                    let mut reqs = InputRequests::new();
                    reqs.insert(
                        CONFIRM_KEY.into(),
                        InputRequest::Elicitation(Request::new(Self::confirm_params(&p))),
                    );
                    return Ok(InputRequiredResult::new(Some(reqs), Some(token)).into());
                } else {
                    let ask = context.peer.create_elicitation_with_timeout(
                        Self::confirm_params(&p),
                        Some(ELICIT_TIMEOUT),
                    );
                    let answer = tokio::select! {
                        r = ask => match r {
                            Ok(res) if res.action == ElicitationAction::Accept => {
                                Self::accepted(&json!({"action": "accept", "content": res.content}))
                            }
                            Ok(_) => Confirmation::No,
                            Err(e) => {
                                eprintln!("atip mcp: elicitation failed: {e}");
                                Confirmation::Unavailable
                            }
                        },
                        _ = context.ct.cancelled() => Confirmation::No,
                    };
                    if answer != Confirmation::Yes {
                        return Ok(self.refused(&p, Some(answer), &context).into());
                    }
                    true
                }
            }
        };
        Ok(self.run_call(p, confirmed, &context).await.into())
    }
}

/// Runs `atip mcp` to completion on a fresh multi-threaded runtime.
pub fn serve_blocking(
    engine: Engine,
    scale: search_mode::Scale,
    jobs: usize,
) -> Result<(), AtipError> {
    let server = Server::new(engine, scale, jobs)?;
    eprintln!("{}", server.banner("stdio"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| {
            AtipError::new(
                ErrorCode::Internal,
                format!("failed to start the async runtime: {e}"),
            )
        })?;
    let res = rt.block_on(server.serve_stdio());
    // Cancelled children are killed by `process` within its grace; give them that long.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    res
}
