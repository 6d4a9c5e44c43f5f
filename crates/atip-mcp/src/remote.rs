//! The client-side operations behind `atip mcp servers|tools|describe|call|ping` and
//! `atip exec mcp__…`: pick the server, get its tools (cache or a fresh `tools/list`),
//! find one tool, and run a call through validation, policy, confirmation, audit and
//! the output cap. Must not print results (the CLI renders) or prompt (the caller
//! passes a confirmation function).

use super::cache::{CachedTools, ToolCache};
use super::client::{ClientOptions, Session};
use super::config::{McpConfig, ServerSpec};
use super::tools;
use crate::exec::Confirmation;
use crate::exec::audit::{AuditLog, AuditRecord};
use crate::exec::policy::{Action, Decision, Policy};
use crate::exec::redact::Redactor;
use crate::exec::{args, repair};
use crate::output::{AtipError, ErrorCode};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

/// Environment variable naming the server when `--server` is not given.
pub const SERVER_ENV: &str = "ATIP_MCP_SERVER";

/// Configured servers plus cache and connection settings.
pub struct Remote {
    /// The merged configuration (or the one explicit server).
    pub config: McpConfig,
    /// The tools/list cache.
    pub cache: ToolCache,
    /// Connection and diagnostics settings.
    pub opts: ClientOptions,
    /// Cache lifetime.
    pub ttl: Duration,
    /// Whether the cache is read and written.
    pub use_cache: bool,
}

/// Where a tool list came from.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The list (cached or fresh).
    pub cached: CachedTools,
    /// Whether it came from the cache.
    pub from_cache: bool,
}

/// A finished call.
pub struct Called {
    /// The result as the server sent it.
    pub result: CallToolResult,
    /// The tool called.
    pub tool: Tool,
    /// The policy's verdict.
    pub decision: Decision,
    /// Wall time of `tools/call`.
    pub duration: Duration,
}

fn unknown_server(name: &str, config: &McpConfig) -> AtipError {
    if let Some(e) = config.untrusted_error(name) {
        return e;
    }
    let known: Vec<&String> = config.servers.keys().collect();
    AtipError::new(
        ErrorCode::McpServerNotFound,
        format!("no MCP server named {name:?} is configured"),
    )
    .hint(if known.is_empty() {
        "add it to <config-dir>/mcp.json or .mcp.json, or use --url / --command".to_string()
    } else {
        format!(
            "configured: {}",
            known
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
    .details(json!({"configured": known, "files": config.files}))
}

impl Remote {
    /// The server to talk to: `--server`, else `ATIP_MCP_SERVER` (of the run's
    /// environment, [`ClientOptions::env`](crate::client::ClientOptions::env)), else
    /// `defaultServer`, else the only one configured.
    pub fn select(&self, name: Option<&str>) -> Result<&ServerSpec, AtipError> {
        let env = self
            .opts
            .env
            .var(SERVER_ENV)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let wanted = name
            .map(str::to_string)
            .or(env)
            .or_else(|| self.config.default_server.clone());
        match wanted {
            Some(n) => self
                .config
                .servers
                .get(&n)
                .ok_or_else(|| unknown_server(&n, &self.config)),
            None => match self.config.servers.len() {
                1 => Ok(&self.config.servers[0]),
                0 if !self.config.untrusted.is_empty() => {
                    let first = &self.config.untrusted[0].name;
                    Err(unknown_server(first, &self.config))
                }
                0 => Err(AtipError::new(ErrorCode::Usage, "no MCP server is configured",
                )
                .hint("add servers to <config-dir>/mcp.json or .mcp.json (mcpServers), or use --url / --command")),
                _ => Err(AtipError::new(ErrorCode::Usage, "several MCP servers are configured; say which one",
                )
                .hint(format!(
                    "pass --server NAME (or set {SERVER_ENV}, or defaultServer): {}",
                    self.config
                        .servers
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ))),
            },
        }
    }

    /// The server's tools: the cached list when fresh, else a `tools/list` over
    /// `session` (connecting when `None`), stored in the cache. Returns the session used,
    /// if one was opened, so a call can reuse it.
    pub async fn tools(
        &self,
        spec: &ServerSpec,
        session: Option<Session>,
        refresh: bool,
    ) -> Result<(Listing, Option<Session>), AtipError> {
        let log = super::client::Log::new(spec, &self.opts);
        if self.use_cache
            && !refresh
            && let Some(c) = self.cache.fresh(spec, self.ttl)
        {
            log.verbose(format!(
                "cache hit: {} tools, {} s old",
                c.tools.len(),
                c.age().as_secs()
            ));
            return Ok((
                Listing {
                    cached: c,
                    from_cache: true,
                },
                session,
            ));
        }
        if self.use_cache {
            log.verbose("cache miss");
        }
        let session = match session {
            Some(s) => s,
            None => Session::connect(spec, &self.opts).await?,
        };
        let listed = session.list_tools().await;
        let tools = match listed {
            Ok(t) => t,
            Err(e) => {
                session.close().await;
                return Err(e);
            }
        };
        let info = session.server_info();
        let cached = if self.use_cache {
            match self.cache.write(spec, info.clone(), tools.clone()) {
                Ok(c) => c,
                Err(e) => {
                    log::warn!(
                        "failed to write the MCP tools cache in {}: {e}",
                        self.cache.dir().display()
                    );
                    self.uncached(spec, info, tools)
                }
            }
        } else {
            self.uncached(spec, info, tools)
        };
        Ok((
            Listing {
                cached,
                from_cache: false,
            },
            Some(session),
        ))
    }

    fn uncached(&self, spec: &ServerSpec, info: Value, tools: Vec<Tool>) -> CachedTools {
        CachedTools {
            version: 1,
            server: spec.name.clone(),
            fetched_at_ms: 0,
            server_info: info,
            tools,
        }
    }

    /// Finds a tool by name; a cached list that lacks it is refreshed once before the
    /// name counts as unknown (exit 2).
    pub async fn find_tool(
        &self,
        spec: &ServerSpec,
        name: &str,
    ) -> Result<(Tool, Option<Session>), AtipError> {
        let (listing, session) = self.tools(spec, None, false).await?;
        if let Some(t) = listing.cached.tools.iter().find(|t| t.name == name) {
            return Ok((t.clone(), session));
        }
        let (listing, session) = if listing.from_cache {
            self.tools(spec, session, true).await?
        } else {
            (listing, session)
        };
        match listing.cached.tools.iter().find(|t| t.name == name) {
            Some(t) => Ok((t.clone(), session)),
            None => {
                if let Some(s) = session {
                    s.close().await;
                }
                let names: Vec<&str> = listing
                    .cached
                    .tools
                    .iter()
                    .map(|t| t.name.as_ref())
                    .collect();
                let mut close: Vec<(usize, &str)> = names
                    .iter()
                    .map(|n| (crate::compile::edit_distance(name, n), *n))
                    .filter(|(d, n)| *d <= (name.len() / 3).max(2) || n.contains(name))
                    .collect();
                close.sort();
                let close: Vec<&str> = close.into_iter().take(5).map(|(_, n)| n).collect();
                Err(AtipError::new(
                    ErrorCode::McpToolNotFound,
                    format!("server {:?} has no tool named {name:?}", spec.name),
                )
                .hint(if close.is_empty() {
                    format!(
                        "list its tools with `atip mcp tools --server {}`",
                        spec.name
                    )
                } else {
                    format!("did you mean: {}", close.join(", "))
                })
                .details(json!({"server": spec.name, "closest": close})))
            }
        }
    }

    /// The server and tool behind a flattened name `mcp__SERVER__TOOL` (as `atip search`
    /// and `atip export` print it), using the cached lists and fetching missing ones.
    pub async fn resolve_flat(&self, flat: &str) -> Result<(ServerSpec, String), AtipError> {
        let mut checked = Vec::new();
        for spec in self.config.servers.values() {
            let prefix = tools::flat_name(&spec.name, "");
            if !flat.starts_with(&prefix) {
                continue;
            }
            let (listing, session) = self.tools(spec, None, false).await?;
            if let Some(s) = session {
                s.close().await;
            }
            if let Some(t) = listing
                .cached
                .tools
                .iter()
                .find(|t| tools::flat_name(&spec.name, &t.name) == flat)
            {
                return Ok((spec.clone(), t.name.to_string()));
            }
            checked.push(spec.name.clone());
        }
        if checked.is_empty()
            && let Some(e) = self.config.untrusted_error(flat)
        {
            return Err(e);
        }
        Err(AtipError::new(
            ErrorCode::McpToolNotFound,
            format!("no configured MCP server has a tool named {flat:?}"),
        )
        .hint("list MCP tools with `atip mcp tools`; names are mcp__SERVER__TOOL")
        .details(json!({"serversChecked": checked})))
    }

    /// Validates `args` against the tool's input schema. A schema atip cannot compile (it
    /// refers to a file or URL, which atip never loads; a pattern the regex engine cannot
    /// run; not JSON Schema at all) refuses the call: arguments that cannot be checked
    /// are not sent.
    pub(crate) fn validate(&self, tool: &Tool, a: &Map<String, Value>) -> Result<(), AtipError> {
        let schema = tools::input_schema(tool);
        let checker = args::Checker::new(&schema).map_err(|e| {
            let why = e
                .message
                .strip_prefix("the input schema does not compile: ")
                .unwrap_or(&e.message);
            AtipError::new(
                ErrorCode::ArgsInvalid,
                format!(
                    "the input schema of MCP tool {} cannot be used to check the arguments: {why}",
                    tool.name
                ),
            )
            .hint("atip sends no call it cannot check; the server's maintainer has to fix its inputSchema")
        })?;
        let violations = checker.check(a);
        if violations.is_empty() {
            return Ok(());
        }
        let e = args::invalid(&tool.name, violations, &schema);
        Err(match repair::repair(&schema, a, &checker) {
            Some(r) => e.suggest(r.suggestion(&Redactor::new())),
            None => e,
        })
    }

    /// Finds the tool, validates the arguments and asks the policy; runs nothing.
    /// Returns the session opened for the listing, if any, so a call can reuse it.
    pub async fn check(
        &self,
        spec: &ServerSpec,
        name: &str,
        a: Map<String, Value>,
        policy: &Policy,
    ) -> Result<(Checked, Option<Session>), AtipError> {
        let (tool, session) = self.find_tool(spec, name).await?;
        match self.check_tool(spec, &tool, a, policy) {
            Ok(c) => Ok((c, session)),
            Err(e) => {
                if let Some(s) = session {
                    s.close().await;
                }
                Err(e)
            }
        }
    }

    /// Validates the arguments for a known tool and asks the policy; runs nothing.
    pub(crate) fn check_tool(
        &self,
        spec: &ServerSpec,
        tool: &Tool,
        a: Map<String, Value>,
        policy: &Policy,
    ) -> Result<Checked, AtipError> {
        self.validate(tool, &a)?;
        let decision = tools::decide(policy, &spec.name, &spec.summary(), tool, spec.trust_hints);
        Ok(Checked {
            spec: spec.clone(),
            tool: tool.clone(),
            args: a,
            decision,
        })
    }

    /// Runs one call: find the tool, validate, decide, confirm, call, audit, cap.
    #[allow(clippy::too_many_arguments)]
    pub async fn call(
        &self,
        spec: &ServerSpec,
        name: &str,
        a: Map<String, Value>,
        policy: &Policy,
        audit: &AuditLog,
        confirm: &mut dyn FnMut(&str, &Decision) -> Confirmation,
        max_output: usize,
    ) -> Result<Called, AtipError> {
        let (checked, session) = self.check(spec, name, a, policy).await?;
        let caller = Caller::client();
        let confirmed = match checked.settle(confirm, audit, &caller) {
            Ok(c) => c,
            Err(e) => {
                if let Some(s) = session {
                    s.close().await;
                }
                return Err(e);
            }
        };
        self.run(&checked, confirmed, session, audit, &caller, max_output)
            .await
    }

    /// Runs a checked call over `session` (connecting when `None`), then closes it.
    pub async fn run(
        &self,
        c: &Checked,
        confirmed: bool,
        session: Option<Session>,
        audit: &AuditLog,
        caller: &Caller,
        max_output: usize,
    ) -> Result<Called, AtipError> {
        let session = match session {
            Some(s) => s,
            None => self.connect_for(c, confirmed, audit, caller).await?,
        };
        let r = self
            .run_on(c, confirmed, &session, audit, caller, max_output)
            .await;
        session.close().await;
        r
    }

    /// Opens a session for a checked call; a failure is audited.
    pub async fn connect_for(
        &self,
        c: &Checked,
        confirmed: bool,
        audit: &AuditLog,
        caller: &Caller,
    ) -> Result<Session, AtipError> {
        Session::connect(&c.spec, &self.opts)
            .await
            .inspect_err(|e| {
                let word = c.word(confirmed);
                c.record(audit, caller, word, "failed", 0, Some(e.code.as_str()));
            })
    }

    /// Runs a checked call over an open session (left open): call, audit, redact, cap.
    pub async fn run_on(
        &self,
        c: &Checked,
        confirmed: bool,
        session: &Session,
        audit: &AuditLog,
        caller: &Caller,
        max_output: usize,
    ) -> Result<Called, AtipError> {
        let word = c.word(confirmed);
        let started = Instant::now();
        let r = session.call_tool(&c.tool.name, c.args.clone()).await;
        let duration = started.elapsed();
        let ms = duration.as_millis() as u64;
        match r {
            Err(e) => {
                let outcome = if e.code == ErrorCode::McpTimeout {
                    "timeout"
                } else {
                    "failed"
                };
                c.record(audit, caller, word, outcome, ms, Some(e.code.as_str()));
                Err(e)
            }
            Ok(result) => {
                let failed = result.is_error == Some(true);
                let outcome = if failed { "tool-error" } else { "completed" };
                c.record(audit, caller, word, outcome, ms, None);
                let redactor = c.spec.redactor();
                let mut v = serde_json::to_value(&result).unwrap_or(Value::Null);
                redactor.redact_json(&mut v);
                let cut = tools::cap(&mut v, max_output);
                if cut {
                    log::info!(
                        "the MCP result was cut at {max_output} bytes per text block (--max-output)"
                    );
                }
                let result: CallToolResult = serde_json::from_value(v).unwrap_or(result);
                Ok(Called {
                    result,
                    tool: c.tool.clone(),
                    decision: c.decision.clone(),
                    duration,
                })
            }
        }
    }
}

/// Who asked for a call, for the audit log.
#[derive(Debug, Clone)]
pub struct Caller {
    /// `mcp-client` (atip mcp call, atip exec) or `mcp-proxy` (atip mcp serve).
    pub via: &'static str,
    /// The MCP client's `name/version`, when the call came through `atip mcp serve`.
    pub client: Option<String>,
    /// The provider's or MCP request's call id.
    pub call_id: Option<String>,
}

impl Caller {
    /// A call typed on atip's command line.
    pub fn client() -> Caller {
        Caller {
            via: "mcp-client",
            client: None,
            call_id: None,
        }
    }
}

/// A call whose tool is found, arguments valid and policy decision made; nothing run.
#[derive(Debug, Clone)]
pub struct Checked {
    /// The server.
    pub spec: ServerSpec,
    /// The tool, as the server lists it.
    pub tool: Tool,
    /// The validated arguments.
    pub args: Map<String, Value>,
    /// The policy's verdict.
    pub decision: Decision,
}

impl Checked {
    /// `SERVER TOOL`, as policies and prompts name it.
    pub fn path(&self) -> String {
        format!("{} {}", self.spec.name, self.tool.name)
    }

    /// The flattened name, `mcp__SERVER__TOOL`.
    pub(crate) fn flat_name(&self) -> String {
        tools::flat_name(&self.spec.name, &self.tool.name)
    }

    fn word(&self, confirmed: bool) -> &'static str {
        if confirmed { "confirmed" } else { "allow" }
    }

    /// The arguments with secrets of the server's config redacted.
    fn shown_args(&self) -> Value {
        let mut v = Value::Object(self.args.clone());
        self.spec.redactor().redact_json(&mut v);
        v
    }

    /// The dry-run report: what would be sent where, and the policy's decision.
    pub fn dry_run_report(&self) -> Value {
        json!({
            "status": "dry-run",
            "tool": self.flat_name(),
            "command": self.path(),
            "server": self.spec.name,
            "transport": self.spec.transport.kind(),
            "program": self.spec.summary(),
            "arguments": self.shown_args(),
            "readOnly": tools::read_only(&self.tool, self.spec.trust_hints),
            "decision": self.decision,
        })
    }

    /// Applies the decision: `Ok(false)` allowed, `Ok(true)` confirmed through
    /// `confirm`; a refusal (deny, declined, nobody to ask) is audited and returned.
    pub fn settle(
        &self,
        confirm: &mut dyn FnMut(&str, &Decision) -> Confirmation,
        audit: &AuditLog,
        caller: &Caller,
    ) -> Result<bool, AtipError> {
        match self.decision.action {
            Action::Allow => Ok(false),
            Action::Deny => Err(self.refuse(None, audit, caller)),
            // The question names the call with its arguments: the user confirms what
            // runs, not only which tool.
            Action::Confirm => match confirm(
                &format!("{} {}", self.path(), Value::Object(self.args.clone())),
                &self.decision,
            ) {
                Confirmation::Yes => Ok(true),
                answer => Err(self.refuse(Some(answer), audit, caller)),
            },
        }
    }

    /// The refusal for a denied call (`answer: None`) or an unconfirmed one, audited.
    pub fn refuse(
        &self,
        answer: Option<Confirmation>,
        audit: &AuditLog,
        caller: &Caller,
    ) -> AtipError {
        let path = self.path();
        let d = &self.decision;
        match answer {
            None => {
                self.record(audit, caller, "deny", "refused", 0, Some("policy_denied"));
                AtipError::new(
                    ErrorCode::PolicyDenied,
                    format!("policy refuses {path}: {}", d.explain(Action::Deny)),
                )
                .hint("change the policy file if this call should be allowed (see spec/policy.md)")
                .details(json!({"rules": d.rules}))
            }
            Some(answer) => {
                let (code, word) = if answer == Confirmation::No {
                    (ErrorCode::ConfirmationDeclined, "declined")
                } else {
                    (ErrorCode::ConfirmationRequired, "needs-confirmation")
                };
                self.record(audit, caller, word, "refused", 0, Some(code.as_str()));
                AtipError::new(
                    code,
                    format!("{path} needs confirmation: {}", d.explain(Action::Confirm)),
                )
                .hint(format!(
                    "pass --yes, confirm on a terminal, or allow it in the policy ({})",
                    d.rule_ids(Action::Confirm).join(", ")
                ))
                .details(json!({"rules": d.rules}))
            }
        }
    }

    /// One audit record; read-only calls that were allowed are not recorded (as for
    /// commands).
    fn record(
        &self,
        audit: &AuditLog,
        caller: &Caller,
        decision: &str,
        outcome: &str,
        ms: u64,
        error: Option<&str>,
    ) {
        if tools::read_only(&self.tool, self.spec.trust_hints)
            && self.decision.action != Action::Deny
        {
            return;
        }
        let rec = AuditRecord {
            time: crate::timestamp::rfc3339_millis_now(),
            via: caller.via,
            client: caller.client.clone(),
            pid: std::process::id(),
            // SAFETY: getuid cannot fail.
            uid: unsafe { libc::getuid() },
            call_id: caller.call_id.clone(),
            tool: self.flat_name(),
            command: self.path(),
            program: self.spec.summary(),
            argv: vec![self.shown_args().to_string()],
            decision: decision.into(),
            rules: self.decision.rules.iter().map(|r| r.rule.clone()).collect(),
            conditions: Vec::new(),
            outcome: outcome.into(),
            exit_code: None,
            duration_ms: ms,
            error: error.map(str::to_string),
        };
        if let Err(e) = audit.append(&rec) {
            log::warn!("failed to write audit log {}: {e}", audit.path().display());
        }
    }
}
