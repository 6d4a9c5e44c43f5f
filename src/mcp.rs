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

use crate::compile::formats::{self, Format};
use crate::exec::policy::Action;
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
    running: Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>,
    next_id: Arc<AtomicU64>,
}

impl Server {
    /// Builds the tool list from the engine's visible tools.
    pub fn new(engine: Engine) -> Result<Server, AtipError> {
        let visible: Vec<_> = engine.visible_tools().into_iter().cloned().collect();
        let rendered = formats::render(&formats::flat(&visible), Format::Mcp);
        let list = rendered["tools"].as_array().cloned().unwrap_or_default();
        let mut tools = Vec::with_capacity(list.len());
        for t in list {
            let tool: Tool = serde_json::from_value(t).map_err(|e| {
                AtipError::new(
                    ErrorCode::Internal,
                    format!("compiled MCP tool does not fit the MCP model: {e}"),
                )
            })?;
            tools.push(tool);
        }
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        Ok(Server {
            engine: Arc::new(engine),
            tools: Arc::new(tools),
            visible: Arc::new(index),
            running: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Number of tools served.
    pub fn tool_count(&self) -> usize {
        self.tools.len()
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
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        h.update(name.as_bytes());
        h.update([0]);
        h.update(serde_json::to_vec(args).unwrap_or_default());
        format!("{STATE_PREFIX}{}", hex::encode(h.finalize()))
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
                .filter(|n| *n > 0 && *n < self.tools.len())
                .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor {c:?}"), None))?,
        };
        let end = (start + PAGE_SIZE).min(self.tools.len());
        let page = self.tools[start..end].to_vec();
        let next = (end < self.tools.len()).then(|| format!("atip-page:{end}"));
        Ok(ListToolsResult {
            next_cursor: next,
            ..ListToolsResult::with_all_items(page)
        })
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
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
        let name = request.name.to_string();
        if !self.visible.contains_key(&name) {
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
pub fn serve_blocking(engine: Engine) -> Result<(), AtipError> {
    let server = Server::new(engine)?;
    eprintln!("atip mcp: serving {} tools on stdio", server.tool_count());
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
