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
//! [`config`], [`client`], [`cache`], [`tools`] and [`remote`]; [`proxy`] serves the
//! configured servers' tools next to the registered commands, through the same
//! confirmation, budget and audit.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{atomic, digest, dirs, env, output, timestamp, units};
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_exec as exec;
#[allow(unused_imports)]
pub(crate) use atip_model::model;
#[allow(unused_imports)]
pub(crate) use atip_process as process;
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;
#[allow(unused_imports)]
pub(crate) use atip_search as search;

pub mod cache;
pub mod client;
pub mod config;
mod confirm;
pub mod http;
pub mod import;
pub mod install;
pub mod proxy;
pub mod remote;
pub mod search_mode;
pub mod tools;
pub mod trust;
pub mod yaml;

use crate::compile::formats::{self, Format};
use crate::exec::policy::{Action, Overflow};
use crate::exec::{Confirmation, Engine, Prepared, Via};
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
/// How long a human has to answer an `elicitation/create` request.
const ELICIT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// The MCP server: tools compiled once at start-up, calls run through the engine.
#[derive(Clone)]
pub struct Server {
    engine: Arc<Engine>,
    /// Tools served (in a lazy server, most of them not read yet).
    total: usize,
    /// Tools are read from the compiled catalog when named (see `Engine::is_lazy`).
    lazy: bool,
    tools: Arc<Vec<Tool>>,
    visible: Arc<HashMap<String, usize>>,
    /// What `tools/list` shows: every tool, or in search mode the search and call tools
    /// plus pinned ones.
    listed: Arc<Vec<Tool>>,
    /// Set in search mode.
    finder: Option<Arc<search_mode::Finder>>,
    /// The configured MCP servers' tools, when proxied.
    proxy: Option<Arc<proxy::Proxy>>,
    running: Arc<Mutex<HashMap<u64, Arc<AtomicBool>>>>,
    next_id: Arc<AtomicU64>,
    slots: Arc<tokio::sync::Semaphore>,
    jobs: usize,
    budget: Arc<Mutex<Budget>>,
    /// Confirmation tokens (`requestState`): keyed, bound, single-use.
    tokens: Arc<confirm::Tokens>,
}

/// What a server lists and may call: the part of [`Server`] that differs between a
/// server over compiled tools and one over the lazy engine.
struct Listing {
    total: usize,
    lazy: bool,
    tools: Vec<Tool>,
    visible: HashMap<String, usize>,
    listed: Vec<Tool>,
    finder: Option<Arc<search_mode::Finder>>,
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
        Server::with_proxy(engine, scale, jobs, None)
    }

    /// [`Server::new`], also serving the configured MCP servers' tools (after the
    /// registered commands, in server then tool order).
    pub(crate) fn with_proxy(
        engine: Engine,
        scale: search_mode::Scale,
        jobs: usize,
        proxied: Option<proxy::Loaded>,
    ) -> Result<Server, AtipError> {
        // At registry scale, from the compiled catalog: nothing is read at start-up but
        // the catalog's tables; searches read their hits, calls their tool. (With MCP
        // servers proxied, or interactive commands allowed, the served set is not the
        // catalog's index: every tool is compiled as below.)
        if engine.is_lazy()
            && !engine.settings.allow_interactive
            && proxied.as_ref().is_none_or(|l| l.tools.is_empty())
        {
            let total = engine.visible_count();
            if total > scale.threshold {
                return Server::lazy(
                    Arc::new(engine),
                    scale,
                    jobs,
                    total,
                    proxied.map(|l| l.proxy),
                );
            }
        }
        let (mut tools, mut visible) = registered_tools(&engine)?;
        let proxy = proxied.map(|loaded| add_proxied(&mut tools, &mut visible, loaded));
        let index: HashMap<String, usize> = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        let (listed, finder) = if tools.len() > scale.threshold {
            search_listing(&tools, &index, visible, &scale)
        } else {
            (tools.clone(), None)
        };
        let listing = Listing {
            total: tools.len(),
            lazy: false,
            tools,
            visible: index,
            listed,
            finder,
        };
        Server::serving(Arc::new(engine), listing, proxy, jobs)
    }

    /// Search mode over a lazy engine (`total` tools served): the search and call tools
    /// plus the pinned ones, each pinned tool read now, every other tool when named.
    fn lazy(
        engine: Arc<Engine>,
        scale: search_mode::Scale,
        jobs: usize,
        total: usize,
        proxy: Option<Arc<proxy::Proxy>>,
    ) -> Result<Server, AtipError> {
        let mut tools = Vec::new();
        for name in &scale.pinned {
            match engine.resolve(name) {
                Ok(t) if !engine.denied_outright(t) => tools.push(render_one(t)?),
                _ => log::warn!("pinned tool {name:?} is not served; ignored"),
            }
        }
        let mut listed = vec![
            search_mode::search_tool(total, scale.defaults),
            search_mode::call_tool(),
        ];
        listed.extend(tools.iter().cloned());
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.to_string(), i))
            .collect();
        let finder = search_mode::Finder::over_engine(engine.clone(), total, scale.defaults);
        let listing = Listing {
            total,
            lazy: true,
            tools,
            visible: index,
            listed,
            finder: Some(Arc::new(finder)),
        };
        Server::serving(engine, listing, proxy, jobs)
    }

    /// A server of `listing`, no call running yet, at most `jobs` at once.
    fn serving(
        engine: Arc<Engine>,
        listing: Listing,
        proxy: Option<Arc<proxy::Proxy>>,
        jobs: usize,
    ) -> Result<Server, AtipError> {
        let tokens = confirm::Tokens::new()?;
        Ok(Server {
            engine,
            total: listing.total,
            lazy: listing.lazy,
            tools: Arc::new(listing.tools),
            visible: Arc::new(listing.visible),
            listed: Arc::new(listing.listed),
            finder: listing.finder,
            proxy,
            running: Arc::new(Mutex::new(HashMap::new())),
            next_id: Arc::new(AtomicU64::new(0)),
            slots: Arc::new(tokio::sync::Semaphore::new(jobs.max(1))),
            jobs: jobs.max(1),
            budget: Arc::new(Mutex::new(Budget::default())),
            tokens: Arc::new(tokens),
        })
    }

    /// Whether a call may name `name`: a served tool (in a lazy server, any command of
    /// the selection — the policy still decides — but never a grouped name, which this
    /// server does not list), or a command or group the engine knows.
    fn callable(&self, name: &str) -> bool {
        self.visible.contains_key(name)
            || if self.lazy {
                self.engine.flat_known(name)
            } else {
                self.engine.knows(name)
            }
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
    pub(crate) fn tool_count(&self) -> usize {
        self.total
    }

    /// Whether `tools/list` shows the search and call tools instead of every tool.
    pub(crate) fn search_mode(&self) -> bool {
        self.finder.is_some()
    }

    /// The start-up line: how many tools, and how they are listed.
    pub(crate) fn banner(&self, transport: &str) -> String {
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
    pub(crate) async fn serve_stdio(self) -> Result<(), AtipError> {
        let running = self.running.clone();
        let proxy = self.proxy.clone();
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
            log::warn!("MCP session ended with an error: {e}");
        }
        if let Some(p) = proxy {
            p.close().await;
        }
        Ok(())
    }

    /// Ends the proxied servers' sessions.
    pub(crate) async fn close_proxy(&self) {
        if let Some(p) = &self.proxy {
            p.close().await;
        }
    }

    /// The confirmation question: `what` is run (`shown` is the exact command or
    /// arguments), and `why` it needs asking. Arguments come from the model, so every
    /// part is shown with its control characters escaped (a CR and `ESC [2K` in an
    /// argument must not redraw the question as another command).
    fn confirm_params(what: &str, shown: &str, why: &str) -> ElicitRequestParams {
        use crate::output::text::escape_controls;
        let (what, shown, why) = (
            escape_controls(what),
            escape_controls(shown),
            escape_controls(why),
        );
        let schema: ElicitationSchema = serde_json::from_value(json!({
            "type": "object",
            "properties": {"confirm": {
                "type": "boolean",
                "title": "Run this command",
                "description": format!("Tick to run `{shown}`"),
            }},
            "required": ["confirm"],
        }))
        .expect("static elicitation schema");
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: format!("The model wants to run `{what}` ({why}). Allow it?"),
            requested_schema: schema,
        }
    }

    /// Asks the client's user to confirm one call: the answer carried by a 2026-07-28
    /// retry, else an `input_required` result (2026-07-28 sessions), else an
    /// `elicitation/create` request; nobody to ask when the client cannot elicit.
    ///
    /// A retry's answer counts only with a `requestState` this server minted for this
    /// session and this exact call, not redeemed before and not expired
    /// ([`confirm::Tokens`]); `inputResponses` without one are a refusal, whatever
    /// they say.
    async fn ask(
        &self,
        request: &CallToolRequestParams,
        call: &confirm::Call,
        params: ElicitRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Asked {
        let scope = session_scope(context);
        if let Some(responses) = &request.input_responses {
            let issued = request
                .request_state
                .as_deref()
                .is_some_and(|state| self.tokens.redeem(state, &scope, call));
            return Asked::Answer(match responses.get(CONFIRM_KEY) {
                Some(r) if issued => Self::accepted(r),
                _ => Confirmation::No,
            });
        }
        if !supports_form_elicitation(context) {
            return Asked::Answer(Confirmation::Unavailable);
        }
        if context
            .protocol_version()
            .is_some_and(|v| !v.has_initialize())
        {
            let mut reqs = InputRequests::new();
            reqs.insert(
                CONFIRM_KEY.into(),
                InputRequest::Elicitation(Request::new(params)),
            );
            let Some(token) = self.tokens.mint(&scope, call) else {
                return Asked::Answer(Confirmation::Unavailable);
            };
            return Asked::Respond(Box::new(
                InputRequiredResult::new(Some(reqs), Some(token)).into(),
            ));
        }
        let ask = context
            .peer
            .create_elicitation_with_timeout(params, Some(ELICIT_TIMEOUT));
        Asked::Answer(tokio::select! {
            r = ask => match r {
                Ok(res) if res.action == ElicitationAction::Accept => {
                    Self::accepted(&json!({"action": "accept", "content": res.content}))
                }
                Ok(_) => Confirmation::No,
                Err(e) => {
                    log::warn!("MCP elicitation failed: {e}");
                    Confirmation::Unavailable
                }
            },
            _ = context.ct.cancelled() => Confirmation::No,
        })
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
        let _permit = match self.admit(ctx).await {
            Ok(p) => p,
            Err(e) => return refused(e),
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

/// The registered commands the engine serves, as MCP tools and as flat tools (for
/// search mode's index); those the policy denies whatever the arguments are left out.
fn registered_tools(
    engine: &Engine,
) -> Result<(Vec<Tool>, Vec<crate::compile::FlatTool>), AtipError> {
    let visible: Vec<crate::compile::FlatTool> = engine
        .visible_tools()
        .into_iter()
        .filter(|t| !engine.denied_outright(t))
        .cloned()
        .collect();
    // Taken, not cloned, and consumed one tool at a time: at registry scale the
    // rendered list is the largest thing in memory, and a copy of it doubled the peak.
    let mut rendered = formats::render(&formats::flat(&visible), Format::Mcp);
    let list = match rendered.get_mut("tools").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(list)) => list,
        _ => Vec::new(),
    };
    drop(rendered);
    let mut tools = Vec::with_capacity(list.len());
    for t in list {
        tools.push(mcp_tool(t)?);
    }
    Ok((tools, visible))
}

/// Adds the proxied servers' tools after the registered ones; a registered command
/// keeps its name (the MCP tool is dropped, with a warning).
fn add_proxied(
    tools: &mut Vec<Tool>,
    visible: &mut Vec<crate::compile::FlatTool>,
    loaded: proxy::Loaded,
) -> Arc<proxy::Proxy> {
    let known: std::collections::HashSet<String> =
        tools.iter().map(|t| t.name.to_string()).collect();
    for (t, f) in loaded.tools.into_iter().zip(loaded.flat) {
        if known.contains(t.name.as_ref()) {
            log::warn!(
                "MCP tool {} has a registered command's name too; the command is served",
                t.name
            );
            continue;
        }
        tools.push(t);
        visible.push(f);
    }
    loaded.proxy
}

/// Search mode's listing: the search and call tools, then the pinned ones; and the
/// index the search tool searches.
fn search_listing(
    tools: &[Tool],
    index: &HashMap<String, usize>,
    visible: Vec<crate::compile::FlatTool>,
    scale: &search_mode::Scale,
) -> (Vec<Tool>, Option<Arc<search_mode::Finder>>) {
    let mut listed = vec![
        search_mode::search_tool(tools.len(), scale.defaults),
        search_mode::call_tool(),
    ];
    for name in &scale.pinned {
        match index.get(name) {
            Some(&i) => listed.push(tools[i].clone()),
            None => {
                log::warn!("pinned tool {name:?} is not served; ignored")
            }
        }
    }
    let finder = search_mode::Finder::with_facts(visible, scale.facts.clone(), scale.defaults);
    (listed, Some(Arc::new(finder)))
}

/// One rendered MCP tool (an element of `formats::render`'s `tools`) as the MCP model's
/// tool, with the output schema every call's envelope has.
fn mcp_tool(rendered: Value) -> Result<Tool, AtipError> {
    let mut tool: Tool = serde_json::from_value(rendered).map_err(|e| {
        AtipError::new(
            ErrorCode::Internal,
            format!("compiled MCP tool does not fit the MCP model: {e}"),
        )
    })?;
    tool.output_schema = Some(search_mode::envelope_schema());
    Ok(tool)
}

/// One flattened command as a served MCP tool.
fn render_one(t: &crate::compile::FlatTool) -> Result<Tool, AtipError> {
    let mut rendered = formats::render(&formats::flat(std::slice::from_ref(t)), Format::Mcp);
    match rendered.pointer_mut("/tools/0").map(Value::take) {
        Some(v) => mcp_tool(v),
        None => Err(AtipError::new(
            ErrorCode::Internal,
            format!("{} did not render as an MCP tool", t.name),
        )),
    }
}

fn via_mcp(ctx: &RequestContext<RoleServer>) -> Via {
    Via::Mcp {
        client: ctx
            .client_info()
            .map(|i| format!("{}/{}", i.name, i.version)),
    }
}

/// The session a confirmation token is bound to: over HTTP, the `Mcp-Session-Id` of a
/// session opened with `initialize`, or the stateless 2026-07-28 requests (which have
/// no session; the token's key, call binding, single use and expiry still hold); on
/// stdio the one session of the process (the key is per process).
fn session_scope(ctx: &RequestContext<RoleServer>) -> String {
    let Some(parts) = ctx.extensions.get::<::http::request::Parts>() else {
        return "stdio".into();
    };
    let session = parts
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok());
    match session {
        Some(id) if ctx.protocol_version().is_none_or(|v| v.has_initialize()) => {
            format!("http-session:{id}")
        }
        _ => "http".into(),
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
        if let Some(&i) = self.visible.get(name) {
            return Some(self.tools[i].clone());
        }
        if !self.lazy {
            return None;
        }
        let t = self.engine.resolve(name).ok()?;
        if t.effects.needs_human() || self.engine.denied_outright(t) {
            return None;
        }
        render_one(t).ok()
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
                // Registry tools report the program's exit; proxied tools and
                // atip's own (atip_search_tools) have none: their result's error flag.
                None => match s.and_then(|v| v.pointer("/data/exitCode")) {
                    Some(code) => format!("exit {code}"),
                    None if r.is_error == Some(true) => "tool error".into(),
                    None => "ok".into(),
                },
            }
        }
        Ok(CallToolResponse::InputRequired(_)) => "confirmation requested".into(),
        Ok(_) => "other".into(),
    };
    log::info!(target: crate::output::RAW_LOG, "atip mcp: {name}: {what} ({} ms)", took.as_millis());
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
                    Err(e) => CallToolResult::structured_error(exec::error_envelope(
                        Some(search_mode::SEARCH_TOOL),
                        &AtipError::from(e),
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
        if let Some(proxy) = self.proxy.as_ref().filter(|p| p.serves(&name)) {
            return Ok(self.proxy_call(proxy, request, &context).await);
        }
        if !self.callable(&name) {
            let close = self.engine.closest(&name, 5);
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {name}"),
                Some(json!({"closest": close})),
            ));
        }
        let args = request.arguments.clone().unwrap_or_default();
        let call = confirm::Call::new(&name, &args);
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
                let params = Self::confirm_params(
                    &p.command_path(),
                    &crate::output::text::shown_argv(&p.shown_argv()),
                    &p.decision.explain(Action::Confirm),
                );
                match self.ask(&request, &call, params, &context).await {
                    Asked::Respond(r) => return Ok(*r),
                    Asked::Answer(Confirmation::Yes) => true,
                    Asked::Answer(a) => return Ok(self.refused(&p, Some(a), &context).into()),
                }
            }
        };
        Ok(self.run_call(p, confirmed, &context).await.into())
    }

    /// A call to a configured MCP server's tool: the same checks, confirmation, budget
    /// and slots as a command; the server's result as it sent it (redacted, capped).
    async fn proxy_call(
        &self,
        proxy: &proxy::Proxy,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let name = request.name.to_string();
        let args = request.arguments.clone().unwrap_or_default();
        let refused =
            |e: AtipError| CallToolResult::structured_error(exec::error_envelope(Some(&name), &e));
        let call = confirm::Call::new(&name, &args);
        let caller = remote::Caller {
            via: "mcp-proxy",
            client: context
                .client_info()
                .map(|i| format!("{}/{}", i.name, i.version)),
            call_id: Some(context.id.to_string()),
        };
        let checked = match proxy.check(&name, args, &self.engine.policy) {
            Ok(c) => c,
            Err(e) => return refused(e).into(),
        };
        let confirmed = match checked.decision.action {
            Action::Allow => false,
            Action::Deny => return refused(checked.refuse(None, proxy.audit(), &caller)).into(),
            Action::Confirm => {
                let params = Self::confirm_params(
                    &checked.path(),
                    &format!("{} {}", checked.path(), Value::Object(checked.args.clone())),
                    &checked.decision.explain(Action::Confirm),
                );
                match self.ask(&request, &call, params, context).await {
                    Asked::Respond(r) => return *r,
                    Asked::Answer(Confirmation::Yes) => true,
                    Asked::Answer(a) => {
                        let mut e = checked.refuse(Some(a), proxy.audit(), &caller);
                        if e.code == ErrorCode::ConfirmationRequired {
                            e.hint = Some(format!(
                                "this MCP client cannot confirm (no elicitation support); allow it in the policy ({})",
                                checked.decision.rule_ids(Action::Confirm).join(", ")
                            ));
                        }
                        return refused(e).into();
                    }
                }
            }
        };
        let _permit = match self.admit(context).await {
            Ok(p) => p,
            Err(e) => return refused(e).into(),
        };
        let call = proxy.run(&checked, confirmed, &caller);
        let done = tokio::select! {
            r = call => r,
            // Dropping the request cancels it on the server (notifications/cancelled).
            _ = context.ct.cancelled() => Err(AtipError::new(ErrorCode::Cancelled, "the call was cancelled")),
        };
        match done {
            Ok(called) => called.result.into(),
            Err(e) => refused(e).into(),
        }
    }

    /// One run's admission: the session budget, then a slot (waiting, or refused past
    /// `--jobs` under `limits.overflow: refuse`).
    async fn admit(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, AtipError> {
        self.spend()?;
        match self.engine.policy.limits().overflow {
            Overflow::Wait => tokio::select! {
                p = self.slots.clone().acquire_owned() => p.map_err(|_| AtipError::new(ErrorCode::Cancelled, "the server is shutting down")),
                _ = ctx.ct.cancelled() => Err(AtipError::new(
                    ErrorCode::Cancelled,
                    "the call was cancelled while waiting for a free slot",
                )),
            },
            Overflow::Refuse => self.slots.clone().try_acquire_owned().map_err(|_| {
                AtipError::new(
                    ErrorCode::Busy,
                    format!("{} calls are already running (--jobs)", self.jobs),
                )
                .hint("retry when a running call has finished; the policy refuses calls past --jobs (limits.overflow: refuse)")
                .details(json!({"jobs": self.jobs}))
            }),
        }
    }
}

/// The outcome of asking for a confirmation.
enum Asked {
    /// The user's answer (or that nobody could be asked).
    Answer(Confirmation),
    /// Answer the call with this now (an `input_required` result); the client retries.
    Respond(Box<CallToolResponse>),
}

impl Server {}

/// Runs `atip mcp` to completion on a fresh multi-threaded runtime.
pub fn serve_blocking(
    engine: Engine,
    scale: search_mode::Scale,
    jobs: usize,
    proxy: Option<proxy::Setup>,
) -> Result<(), AtipError> {
    let rt = runtime()?;
    let res = rt.block_on(async move {
        let server = Server::build(engine, scale, jobs, proxy).await?;
        log::info!(target: crate::output::RAW_LOG, "{}", server.banner("stdio"));
        server.serve_stdio().await
    });
    // Cancelled children are killed by `process` within its grace; give them that long.
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    res
}

/// The runtime `atip mcp serve` runs on (two workers: several clients at once).
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, AtipError> {
    atip_net::runtime(atip_net::Threads::Workers(2))
}

impl Server {
    /// The server, with the configured MCP servers' tools loaded when `proxy` is given
    /// (inside the runtime that serves, which owns their sessions).
    pub async fn build(
        engine: Engine,
        scale: search_mode::Scale,
        jobs: usize,
        proxy: Option<proxy::Setup>,
    ) -> Result<Server, AtipError> {
        let loaded = match proxy {
            Some(setup) => Some(proxy::Proxy::load(setup, &engine.policy).await?),
            None => None,
        };
        Server::with_proxy(engine, scale, jobs, loaded)
    }
}
