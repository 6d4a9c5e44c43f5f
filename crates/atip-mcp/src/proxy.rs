//! `atip mcp serve` as a proxy: the tools of the configured MCP servers served next to
//! the registered commands, so one server gives an agent both, under one policy.
//!
//! Owns loading the servers' tool lists when the server starts (the cache when fresh,
//! else `tools/list`; a server that fails is left out with a warning), the served form
//! of each tool (flattened name `mcp__SERVER__TOOL`, the server's schemas, annotations
//! as atip reads them, description with the safety suffix), checking a call (schema,
//! policy) and running it over one long-lived session per server, opened on first use
//! and reopened after the server died or timed out. Confirmation and the session
//! budget are the serving side's ([`super::Server`]); closing every session when
//! serving ends is [`Proxy::close`]'s.
//!
//! A stdio server started by the proxy gets [`NESTED_ENV`] in its environment; an
//! `atip mcp serve` that finds it set proxies nothing, so a config listing atip itself
//! cannot make atip start itself without end.

use super::client::Session;
use super::config::ServerSpec;
use super::remote::{Called, Caller, Checked, Remote};
use super::tools;
use crate::compile::FlatTool;
use crate::exec::audit::AuditLog;
use crate::exec::policy::{Action, Policy};
use crate::output::{AtipError, ErrorCode};
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// Set in the environment of stdio servers the proxy starts.
pub const NESTED_ENV: &str = "ATIP_MCP_PROXIED";

/// What the proxy needs to start: the servers and client settings, and which servers.
pub struct Setup {
    /// Configured servers, cache and client settings.
    pub remote: Remote,
    /// Only these servers (all when empty).
    pub only: Vec<String>,
    /// The audit log calls are recorded in.
    pub audit: AuditLog,
    /// Cap on each text block and payload of a result.
    pub max_output: usize,
}

/// One served MCP tool.
#[derive(Debug, Clone)]
struct Served {
    server: String,
    tool: Tool,
}

/// The configured MCP servers' tools, served.
pub struct Proxy {
    remote: Remote,
    audit: AuditLog,
    max_output: usize,
    tools: HashMap<String, Served>,
    sessions: tokio::sync::Mutex<HashMap<String, Arc<Session>>>,
}

/// What loading produced: the proxy, and its tools in served and searchable form.
pub struct Loaded {
    /// The proxy.
    pub proxy: Arc<Proxy>,
    /// The tools as `tools/list` shows them.
    pub tools: Vec<Tool>,
    /// The same tools for search mode's index.
    pub flat: Vec<FlatTool>,
}

impl Proxy {
    /// Lists every selected server's tools (cache or `tools/list`, all servers concurrently;
    /// tools in configuration order), leaving out servers
    /// that fail (a warning on stderr) and tools the policy denies whatever the arguments.
    /// Sessions opened for listing stay open for calls.
    pub async fn load(mut setup: Setup, policy: &Policy) -> Result<Loaded, AtipError> {
        for name in &setup.only {
            if setup.remote.config.servers.get(name).is_none() {
                return Err(AtipError::new(
                    ErrorCode::McpServerNotFound,
                    format!("--mcp-server {name:?}: no MCP server of that name is configured"),
                )
                .hint("`atip mcp servers` lists the configured servers"));
            }
        }
        setup.remote.opts.mark_nested = true;
        let specs: Vec<ServerSpec> = setup
            .remote
            .config
            .servers
            .values()
            .filter(|s| setup.only.is_empty() || setup.only.contains(&s.name))
            .cloned()
            .collect();
        let mut served = HashMap::new();
        let mut sessions = HashMap::new();
        let mut listed = Vec::new();
        let mut flat = Vec::new();
        // All servers at once: start-up waits for the slowest, not for the sum (a hanging
        // server costs its timeout once, however many are configured).
        let listings = futures_util::future::join_all(
            specs
                .iter()
                .map(|spec| setup.remote.tools(spec, None, false)),
        )
        .await;
        for (spec, listing) in specs.iter().zip(listings) {
            let (listing, session) = match listing {
                Ok(l) => l,
                Err(e) => {
                    log::warn!("MCP server {} left out: {}", spec.name, e.message);
                    continue;
                }
            };
            if let Some(s) = session {
                sessions.insert(spec.name.clone(), Arc::new(s));
            }
            for tool in listing.cached.tools {
                let decision =
                    tools::decide(policy, &spec.name, &spec.summary(), &tool, spec.trust_hints);
                if decision.action == Action::Deny {
                    continue;
                }
                let name = tools::flat_name(&spec.name, &tool.name);
                if served.contains_key(&name) {
                    log::warn!(
                        "{name} is listed twice by {}; the first is served",
                        spec.name
                    );
                    continue;
                }
                let f = tools::to_flat(&spec.name, &tool, spec.trust_hints);
                listed.push(served_form(&f, &tool));
                flat.push(f);
                served.insert(
                    name,
                    Served {
                        server: spec.name.clone(),
                        tool,
                    },
                );
            }
        }
        Ok(Loaded {
            proxy: Arc::new(Proxy {
                remote: setup.remote,
                audit: setup.audit,
                max_output: setup.max_output,
                tools: served,
                sessions: tokio::sync::Mutex::new(sessions),
            }),
            tools: listed,
            flat,
        })
    }

    /// Whether `name` is a served MCP tool.
    pub(crate) fn serves(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Number of tools served.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether no tool is served.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Validates the arguments and asks the policy; runs nothing.
    pub fn check(
        &self,
        name: &str,
        args: Map<String, Value>,
        policy: &Policy,
    ) -> Result<Checked, AtipError> {
        let served = self.tools.get(name).ok_or_else(|| {
            AtipError::new(
                ErrorCode::McpToolNotFound,
                format!("no MCP tool {name:?} is served"),
            )
        })?;
        let spec = self
            .remote
            .config
            .servers
            .get(&served.server)
            .expect("served tools come from configured servers");
        self.remote.check_tool(spec, &served.tool, args, policy)
    }

    /// The audit log.
    pub(crate) fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// Runs a checked (and, where needed, confirmed) call over the server's session.
    pub async fn run(
        &self,
        c: &Checked,
        confirmed: bool,
        caller: &Caller,
    ) -> Result<Called, AtipError> {
        let session = {
            let mut open = self.sessions.lock().await;
            match open.get(&c.spec.name) {
                Some(s) => s.clone(),
                None => {
                    let s = Arc::new(
                        self.remote
                            .connect_for(c, confirmed, &self.audit, caller)
                            .await?,
                    );
                    open.insert(c.spec.name.clone(), s.clone());
                    s
                }
            }
        };
        let r = self
            .remote
            .run_on(c, confirmed, &session, &self.audit, caller, self.max_output)
            .await;
        if let Err(e) = &r
            && (e.code == ErrorCode::McpServerExited || e.code == ErrorCode::McpTimeout)
        {
            // Not reused: the next call starts the server again.
            let mut open = self.sessions.lock().await;
            if open
                .get(&c.spec.name)
                .is_some_and(|s| Arc::ptr_eq(s, &session))
            {
                open.remove(&c.spec.name);
            }
        }
        r
    }

    /// Closes every session (stdin closed, then the server's process group ended).
    pub async fn close(&self) {
        let open: Vec<Arc<Session>> = self.sessions.lock().await.drain().map(|(_, s)| s).collect();
        for s in open {
            match Arc::try_unwrap(s) {
                Ok(s) => s.close().await,
                // A call still holds it; dropping the last handle kills the group.
                Err(s) => drop(s),
            }
        }
    }
}

/// The tool as `atip mcp serve` lists it: the flattened name, atip's description (with
/// the safety suffix) and annotations (what atip assumes, not what the server claims),
/// the server's input and output schemas.
fn served_form(f: &FlatTool, tool: &Tool) -> Tool {
    let read_only = f.effects.is_read_only();
    let annotations = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(!read_only)
        .idempotent(f.effects.idempotent == Some(true))
        .open_world(f.effects.network != Some(false));
    let mut t = Tool::new(
        f.name.clone(),
        f.description.clone(),
        tool.input_schema.clone(),
    )
    .with_title(f.title.clone())
    .with_annotations(annotations);
    t.output_schema = tool.output_schema.clone();
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn served_form_says_what_atip_assumes() {
        let tool: Tool = serde_json::from_value(json!({"name": "w", "description": "Write",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
            "outputSchema": {"type": "object"},
            "annotations": {"destructiveHint": false}}))
        .unwrap();
        let f = tools::to_flat("s", &tool, true);
        let t = served_form(&f, &tool);
        assert_eq!(t.name, "mcp__s__w");
        let a = t.annotations.unwrap();
        // destructiveHint:false is an unverifiable claim: not read-only.
        assert_eq!(a.read_only_hint, Some(false));
        assert_eq!(t.input_schema["properties"]["x"]["type"], "string");
        assert!(t.output_schema.is_some());
        assert!(t.description.unwrap().starts_with("Write"));
    }
}
