//! The MCP client: one session with one configured server, over stdio (rmcp's
//! child-process transport) or Streamable HTTP (rmcp's reqwest transport, rustls).
//!
//! Owns connecting and initializing under a deadline, forwarding a stdio server's
//! stderr (each line prefixed with the server's name, secrets redacted, or drained
//! silently), `--verbose` lifecycle lines and `--trace` JSON-RPC frames on stderr (both
//! redacted), mapping failures to atip's error codes, and ending the session cleanly:
//! stdin closed, then the child's whole process group terminated; an HTTP session is
//! ended with DELETE by the transport. Must not decide policy or print to stdout.
//!
//! A server is not trusted with the terminal: what it says (stderr lines, error
//! messages, `serverInfo` in `--verbose` lines) reaches stderr with its control
//! characters escaped ([`crate::output::text::escape_controls`]), and its lists are
//! bounded ([`MAX_LIST_PAGES`], [`MAX_LIST_BYTES`]).

use super::config::{ServerSpec, Transport as Spec};
use crate::exec::redact::Redactor;
use crate::output::text::escape_controls;
use crate::output::{AtipError, ErrorCode};
use crate::process::server::{GroupGuard, server_command};
use rmcp::ClientLifecycleMode;
use rmcp::ClientServiceExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, ClientRequest,
    DiscoverRequest, DiscoverRequestParams, Implementation, PingRequest, ProtocolVersion,
    ServerResult, Tool,
};
use rmcp::service::{RoleClient, RunningService, ServiceError};
use rmcp::transport::{TokioChildProcess, Transport};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::AsyncBufReadExt;

/// Default deadline for connecting plus one request, when neither `--timeout` nor the
/// server's `timeoutMs` says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest server stderr line forwarded; the rest of the line is dropped.
const MAX_STDERR_LINE: usize = 4096;
/// How long a stdio server gets to exit after stdin closes, then SIGTERM, then SIGKILL.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// Most pages one list call follows (`nextCursor`): a server that paginates forever is
/// stopped here instead of at the deadline, with memory still small.
pub const MAX_LIST_PAGES: usize = 100;
/// Most bytes (as JSON) of the items one list call gathers over all its pages. One
/// message is already capped by the transport (rmcp: 16 MiB a line or SSE event).
pub const MAX_LIST_BYTES: usize = 16 << 20;

/// Diagnostics switches.
#[derive(Debug, Clone, Default)]
pub struct ClientOptions {
    /// Deadline for each step (connect + initialize, then each request).
    pub timeout: Option<Duration>,
    /// Lifecycle lines (connect, cache, timings).
    pub verbose: bool,
    /// Every JSON-RPC frame, redacted.
    pub trace: bool,
    /// Drop the server's stderr instead of forwarding it.
    pub quiet_server_stderr: bool,
    /// How the session starts: `server/discover` (2026-07-28) or `initialize`. `None`:
    /// the server's own `protocol` setting, else [`Protocol::Auto`].
    pub protocol: Option<Protocol>,
    /// Tell a stdio server it was started by `atip mcp serve`'s proxy
    /// ([`super::proxy::NESTED_ENV`]).
    pub mark_nested: bool,
    /// The run's environment: what a stdio server inherits (its allowlisted variables)
    /// and `ATIP_MCP_SERVER`. Empty by default.
    pub env: crate::env::Env,
}

/// How a session starts (`--protocol`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// Probe with `server/discover` (2026-07-28); a server that answers it with an
    /// error is legacy and gets the `initialize` handshake (2025-11-25) on the same
    /// connection.
    #[default]
    Auto,
    /// Only the `initialize` handshake (2025-11-25 and older).
    Legacy,
    /// Only `server/discover`; a legacy server is a connection failure.
    Modern,
}

impl ClientOptions {
    /// How a session with `spec` starts: the flag, else the server's setting, else auto.
    pub(crate) fn protocol_for(&self, spec: &ServerSpec) -> Protocol {
        self.protocol.or(spec.protocol).unwrap_or_default()
    }
}

impl Protocol {
    fn lifecycle(self) -> ClientLifecycleMode {
        let modern = vec![ProtocolVersion::LATEST];
        match self {
            Protocol::Auto => ClientLifecycleMode::Auto {
                preferred_versions: modern,
                legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
            },
            Protocol::Legacy => ClientLifecycleMode::Initialize,
            Protocol::Modern => ClientLifecycleMode::Discover {
                preferred_versions: modern,
            },
        }
    }
}

/// Writes this session's diagnostics to stderr, redacted.
#[derive(Debug, Clone)]
pub struct Log {
    server: String,
    redactor: Arc<Redactor>,
    verbose: bool,
    trace: bool,
}

impl Log {
    /// A log for one server.
    pub fn new(spec: &ServerSpec, opts: &ClientOptions) -> Log {
        Log {
            server: spec.name.clone(),
            redactor: Arc::new(spec.redactor()),
            verbose: opts.verbose,
            trace: opts.trace,
        }
    }

    /// A `--verbose` line (it may quote the server: control characters escaped).
    pub(crate) fn verbose(&self, what: impl AsRef<str>) {
        if self.verbose {
            log::info!(
                target: crate::output::RAW_LOG,
                "atip mcp: [{}] {}",
                escape_controls(&self.server),
                escape_controls(&self.redactor.redact(what.as_ref()))
            );
        }
    }

    fn frame(&self, dir: &str, msg: &impl serde::Serialize) {
        if !self.trace {
            return;
        }
        let mut v = serde_json::to_value(msg).unwrap_or(Value::Null);
        self.redactor.redact_json(&mut v);
        log::info!(target: crate::output::RAW_LOG, "atip mcp: [{}] {dir} {v}", self.server);
    }
}

/// A transport that shows every frame under `--trace`.
struct Traced<T> {
    inner: T,
    log: Log,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Traced<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: rmcp::service::TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.log.frame("->", &item);
        self.inner.send(item)
    }

    fn receive(
        &mut self,
    ) -> impl Future<Output = Option<rmcp::service::RxJsonRpcMessage<RoleClient>>> + Send {
        let log = self.log.clone();
        let next = self.inner.receive();
        async move {
            let m = next.await;
            if let Some(m) = &m {
                log.frame("<-", m);
            }
            m
        }
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// An initialized session with one server.
pub struct Session {
    service: RunningService<RoleClient, ClientConfig>,
    /// The server's configuration.
    pub spec: ServerSpec,
    /// Diagnostics.
    pub log: Log,
    timeout: Duration,
    group: Option<GroupGuard>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    /// Time from spawn/connect to the end of initialization.
    pub connect_time: Duration,
}

/// The deadline that applies: `--timeout`, else the server's `timeoutMs`, else 30 s.
pub(crate) fn deadline(spec: &ServerSpec, opts: &ClientOptions) -> Duration {
    opts.timeout.or(spec.timeout).unwrap_or(DEFAULT_TIMEOUT)
}

fn timeout_error(spec: &ServerSpec, what: &str, t: Duration) -> AtipError {
    AtipError::new(
        ErrorCode::McpTimeout,
        format!(
            "server {:?} did not answer {what} within {}",
            spec.name,
            crate::units::format_duration(t)
        ),
    )
    .hint("retry, or raise --timeout (or timeoutMs in the server's config)")
    .details(json!({"server": spec.name, "timeoutMs": t.as_millis() as u64}))
}

fn connect_error(spec: &ServerSpec, msg: String, hint: &str) -> AtipError {
    AtipError::new(ErrorCode::McpConnectFailed, without_type_names(&msg))
        .hint(hint.to_string())
        .details(json!({"server": spec.name, "transport": spec.transport.kind()}))
}

fn client_info() -> ClientConfig {
    // The handshake's newest version: servers that only know older ones answer with theirs.
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("atip", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE)
}

/// The client side of a running session.
type Service = RunningService<RoleClient, ClientConfig>;

/// A session being started: what the steps of [`Session::connect`] share.
struct Connecting<'a> {
    spec: &'a ServerSpec,
    opts: &'a ClientOptions,
    log: Log,
    /// The deadline of the whole start (spawn or connect, and initialization).
    timeout: Duration,
}

impl Connecting<'_> {
    /// Starts a stdio server (its own process group, stderr forwarded) and initializes
    /// the session over its stdin and stdout.
    async fn stdio(
        &self,
        command: &str,
        args: &[String],
        env: &[(String, String)],
        cwd: Option<&std::path::Path>,
    ) -> Result<
        (
            Service,
            Option<GroupGuard>,
            Option<tokio::task::JoinHandle<()>>,
        ),
        AtipError,
    > {
        let (spec, opts, log) = (self.spec, self.opts, &self.log);
        log.verbose(format!("starting {}", spec.summary()));
        let mut std_cmd = server_command(command, args, env, &opts.env, cwd);
        if opts.mark_nested {
            std_cmd.env(super::proxy::NESTED_ENV, "1");
        }
        let cmd = tokio::process::Command::from(std_cmd);
        let (proc, stderr) = TokioChildProcess::builder(cmd)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| {
                connect_error(
                    spec,
                    format!(
                        "failed to start server {:?} ({}): {e}",
                        spec.name,
                        spec.summary()
                    ),
                    "check the server's command in the MCP config (it runs without a shell, on PATH)",
                )
            })?;
        let group = proc.id().map(GroupGuard::new);
        let stderr_task = stderr.map(|s| {
            let log = log.clone();
            let quiet = opts.quiet_server_stderr;
            tokio::spawn(forward_stderr(s, log, quiet))
        });
        let traced = Traced {
            inner: proc,
            log: log.clone(),
        };
        let service = match tokio::time::timeout(
            self.timeout,
            client_info().serve_with_lifecycle(traced, opts.protocol_for(spec).lifecycle()),
        )
        .await
        {
            Err(_) => return Err(timeout_error(spec, "initialize", self.timeout)),
            Ok(Err(e)) => {
                // A server that dies at start says why on stderr: forward what it
                // wrote before the error, which a user reads right above it.
                if let Some(t) = stderr_task {
                    let _ = tokio::time::timeout(Duration::from_millis(500), t).await;
                }
                return Err(connect_error(
                    spec,
                    format!(
                        "server {:?} failed to initialize: {}",
                        spec.name,
                        escape_controls(&log.redactor.redact(&e.to_string()))
                    ),
                    "run with --verbose and look at the server's stderr above",
                ));
            }
            Ok(Ok(s)) => s,
        };
        Ok((service, group, stderr_task))
    }

    /// Reaches a Streamable HTTP server and initializes the session.
    async fn http(&self, url: &str, headers: &[(String, String)]) -> Result<Service, AtipError> {
        use rmcp::transport::StreamableHttpClientTransport;
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
        let (spec, opts, log) = (self.spec, self.opts, &self.log);
        log.verbose(format!("connecting to {}", spec.summary()));
        let (map, auth) = http_headers(spec, headers)?;
        let client = atip_net::async_client()
            .connect_timeout(self.timeout)
            .build()
            .map_err(|e| {
                connect_error(
                    spec,
                    format!("failed to set up the HTTP client: {e}"),
                    "this is a bug; please report it",
                )
            })?;
        let mut config = StreamableHttpClientTransportConfig::with_uri(url).custom_headers(map);
        if let Some(a) = auth {
            config = config.auth_header(a);
        }
        let transport = StreamableHttpClientTransport::with_client(client, config);
        let traced = Traced {
            inner: transport,
            log: log.clone(),
        };
        match tokio::time::timeout(
            self.timeout,
            client_info().serve_with_lifecycle(traced, opts.protocol_for(spec).lifecycle()),
        )
        .await
        {
            Err(_) => Err(timeout_error(spec, "initialize", self.timeout)),
            Ok(Err(e)) => Err(connect_error(
                spec,
                format!(
                    "failed to connect to server {:?} at {}: {}",
                    spec.name,
                    spec.summary(),
                    escape_controls(&log.redactor.redact(&error_chain(&e)))
                ),
                "check the URL and headers, and that the server is running",
            )),
            Ok(Ok(s)) => Ok(s),
        }
    }
}

/// The configured headers of an HTTP server, checked: the custom ones, and the bearer
/// token of `Authorization` apart (rmcp sends that header itself, from the value after
/// `Bearer `).
fn http_headers(
    spec: &ServerSpec,
    headers: &[(String, String)],
) -> Result<
    (
        std::collections::HashMap<http::HeaderName, http::HeaderValue>,
        Option<String>,
    ),
    AtipError,
> {
    let mut map = std::collections::HashMap::new();
    let mut auth = None;
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("authorization") {
            auth = Some(v.strip_prefix("Bearer ").unwrap_or(v).to_string());
            continue;
        }
        let name = http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| {
            AtipError::new(
                ErrorCode::McpConfigInvalid,
                format!("server {:?}: header name {k:?}: {e}", spec.name),
            )
        })?;
        let value = http::HeaderValue::from_str(v).map_err(|_| {
            AtipError::new(
                ErrorCode::McpConfigInvalid,
                format!(
                    "server {:?}: the value of header {k:?} is not a valid header value",
                    spec.name
                ),
            )
        })?;
        map.insert(name, value);
    }
    Ok((map, auth))
}

impl Session {
    /// Starts (stdio) or reaches (HTTP) the server and initializes the session.
    pub async fn connect(spec: &ServerSpec, opts: &ClientOptions) -> Result<Session, AtipError> {
        let started = Instant::now();
        let how = Connecting {
            spec,
            opts,
            log: Log::new(spec, opts),
            timeout: deadline(spec, opts),
        };
        let (service, group, stderr_task) = match &spec.transport {
            Spec::Stdio {
                command,
                args,
                env,
                cwd,
            } => how.stdio(command, args, env, cwd.as_deref()).await?,
            Spec::Http { url, headers } => (how.http(url, headers).await?, None, None),
        };
        let session = Session {
            service,
            spec: spec.clone(),
            log: how.log,
            timeout: how.timeout,
            group,
            stderr_task,
            connect_time: started.elapsed(),
        };
        session.log_initialized();
        Ok(session)
    }

    /// The `--verbose` line of a finished initialization: how long it took and what the
    /// server says it is.
    fn log_initialized(&self) {
        let Some(info) = self.service.peer_info() else {
            return;
        };
        let server = info.server_info.as_ref();
        self.log.verbose(format!(
            "initialized in {} ms: {} {} (protocol {})",
            self.connect_time.as_millis(),
            server.map(|i| i.name.as_str()).unwrap_or("?"),
            server.map(|i| i.version.as_str()).unwrap_or(""),
            info.protocol_version
        ));
    }

    /// What the server said about itself at initialization.
    pub fn server_info(&self) -> Value {
        match self.service.peer_info() {
            Some(i) => serde_json::to_value(&*i).unwrap_or(Value::Null),
            None => Value::Null,
        }
    }

    fn request_error(&self, what: &str, e: ServiceError) -> AtipError {
        let spec = &self.spec;
        match e {
            ServiceError::McpError(err) => {
                let msg = escape_controls(&self.log.redactor.redact(&err.message)).into_owned();
                if err.code.0 == -32602 && msg.to_ascii_lowercase().contains("unknown tool") {
                    AtipError::new(
                        ErrorCode::McpToolNotFound,
                        format!("server {:?} has no such tool: {msg}", spec.name),
                    )
                    .hint(format!(
                        "list its tools with `atip mcp tools --server {}`",
                        spec.name
                    ))
                } else {
                    AtipError::new(
                        ErrorCode::McpServerError,
                        format!(
                            "server {:?} answered {what} with error {}: {msg}",
                            spec.name, err.code.0
                        ),
                    )
                    .details(json!({"server": spec.name, "code": err.code.0, "data": err.data}))
                }
            }
            ServiceError::Timeout { timeout } => timeout_error(spec, what, timeout),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => AtipError::new(
                ErrorCode::McpServerExited,
                format!(
                    "the connection to server {:?} closed during {what}",
                    spec.name
                ),
            )
            .hint("the server crashed or hung up; its stderr (above) may say why")
            .details(json!({"server": spec.name})),
            other => AtipError::new(
                ErrorCode::McpServerError,
                format!(
                    "{what} on server {:?} failed: {}",
                    spec.name,
                    escape_controls(&self.log.redactor.redact(&other.to_string()))
                ),
            ),
        }
    }

    /// Runs one request future under the deadline.
    async fn bounded<T>(
        &self,
        what: &str,
        fut: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, AtipError> {
        let started = Instant::now();
        let r = match tokio::time::timeout(self.timeout, fut).await {
            Err(_) => Err(timeout_error(&self.spec, what, self.timeout)),
            Ok(Err(e)) => Err(self.request_error(what, e)),
            Ok(Ok(v)) => Ok(v),
        };
        self.log
            .verbose(format!("{what}: {} ms", started.elapsed().as_millis()));
        r
    }

    /// Every tool, following `nextCursor` up to [`MAX_LIST_PAGES`] pages and
    /// [`MAX_LIST_BYTES`] bytes; past either, the list is an error (a partial list would
    /// pass for the whole one).
    pub(crate) async fn list_tools(&self) -> Result<Vec<Tool>, AtipError> {
        let pages = async {
            let mut tools: Vec<Tool> = Vec::new();
            let mut bytes = 0usize;
            let mut cursor = None;
            for page in 1..=MAX_LIST_PAGES {
                let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
                let result = self.service.list_tools(Some(params)).await?;
                bytes += result
                    .tools
                    .iter()
                    .map(|t| serde_json::to_vec(t).map_or(0, |v| v.len()))
                    .sum::<usize>();
                tools.extend(result.tools);
                if bytes > MAX_LIST_BYTES {
                    return Ok(Err(ListCap::Bytes { page, bytes }));
                }
                match result.next_cursor {
                    Some(c) => cursor = Some(c),
                    None => return Ok(Ok(tools)),
                }
            }
            Ok(Err(ListCap::Pages))
        };
        match self.bounded("tools/list", pages).await? {
            Ok(tools) => Ok(tools),
            Err(cap) => Err(self.list_cap_error("tools/list", cap)),
        }
    }

    fn list_cap_error(&self, what: &str, cap: ListCap) -> AtipError {
        let spec = &self.spec;
        let (msg, details) = match cap {
            ListCap::Pages => (
                format!(
                    "server {:?} answered {what} with more than {MAX_LIST_PAGES} pages (nextCursor every time); atip stopped following it",
                    spec.name
                ),
                json!({"server": spec.name, "maxPages": MAX_LIST_PAGES}),
            ),
            ListCap::Bytes { page, bytes } => (
                format!(
                    "server {:?} answered {what} with {bytes} bytes of items in {page} page(s), over the {MAX_LIST_BYTES} byte cap; atip stopped reading it",
                    spec.name
                ),
                json!({"server": spec.name, "maxBytes": MAX_LIST_BYTES, "bytes": bytes, "pages": page}),
            ),
        };
        AtipError::new(ErrorCode::McpListCapped, msg)
            .hint(
                "the server's list is unbounded or far larger than any real one; check the server",
            )
            .details(details)
    }

    /// Calls one tool.
    pub(crate) async fn call_tool(
        &self,
        name: &str,
        args: serde_json::Map<String, Value>,
    ) -> Result<CallToolResult, AtipError> {
        let params = CallToolRequestParams::new(name.to_string()).with_arguments(args);
        self.bounded("tools/call", self.service.call_tool(params))
            .await
    }

    /// The protocol revision the session runs.
    pub(crate) fn protocol_version(&self) -> Option<ProtocolVersion> {
        self.service.peer_info().map(|i| i.protocol_version.clone())
    }

    /// Whether the session started with `server/discover` (2026-07-28 and later).
    pub(crate) fn is_modern(&self) -> bool {
        self.protocol_version().is_some_and(|v| !v.has_initialize())
    }

    /// One round trip: `ping` on sessions that began with `initialize`; 2026-07-28
    /// removed `ping`, so there it is a `server/discover`.
    pub async fn ping(&self) -> Result<Duration, AtipError> {
        let started = Instant::now();
        let (what, req) = if self.is_modern() {
            (
                "server/discover",
                ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {})),
            )
        } else {
            (
                "ping",
                ClientRequest::PingRequest(PingRequest {
                    method: Default::default(),
                    extensions: Default::default(),
                }),
            )
        };
        match self.bounded(what, self.service.send_request(req)).await? {
            ServerResult::EmptyResult(_) | ServerResult::DiscoverResult(_) => Ok(started.elapsed()),
            _ => Ok(started.elapsed()),
        }
    }

    /// Ends the session: closes the transport (stdin EOF, or HTTP DELETE of the
    /// session), then terminates what is left of a stdio server's process group.
    pub async fn close(mut self) {
        let closed = self.service.close_with_timeout(EXIT_GRACE).await;
        if let Ok(None) = closed {
            self.log
                .verbose("the session did not close in time; stopping it");
        }
        if let Some(mut g) = self.group.take() {
            tokio::task::spawn_blocking(move || g.terminate(EXIT_GRACE))
                .await
                .ok();
        }
        if let Some(t) = self.stderr_task.take() {
            // The pipe closes with the group; whatever it still held is forwarded.
            let _ = tokio::time::timeout(Duration::from_millis(200), t).await;
        }
        self.log.verbose("closed");
    }
}

/// Which cap a list call hit.
enum ListCap {
    Pages,
    Bytes { page: usize, bytes: usize },
}

/// `msg` without the Rust type names rmcp puts in transport errors
/// (`Transport [atip::mcp::client::Traced<rmcp::transport::…>] error: …`): they say
/// nothing to a user.
fn without_type_names(msg: &str) -> String {
    const OPEN: &str = "Transport [";
    let mut out = String::with_capacity(msg.len());
    let mut rest = msg;
    while let Some(at) = rest.find(OPEN) {
        let after = &rest[at + OPEN.len()..];
        let Some(close) = after.find("] error") else {
            break;
        };
        out.push_str(&rest[..at]);
        out.push_str("transport");
        rest = &after[close + 1..];
    }
    out.push_str(rest);
    out
}

/// The error and its sources, one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// Copies the server's stderr to ours, line by line, prefixed and redacted. A flood is
/// read at full speed (so the server never blocks on a full pipe), and a line is kept
/// only up to [`MAX_STDERR_LINE`] bytes however long it runs, so memory stays bounded.
async fn forward_stderr(stderr: tokio::process::ChildStderr, log: Log, quiet: bool) {
    let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stderr);
    let mut line: Vec<u8> = Vec::with_capacity(256);
    let mut cut = false;
    loop {
        let (used, end_of_line) = match reader.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(buf) => {
                let (chunk, eol) = match memchr::memchr(b'\n', buf) {
                    Some(i) => (&buf[..i], Some(i + 1)),
                    None => (buf, None),
                };
                if !quiet {
                    let room = MAX_STDERR_LINE.saturating_sub(line.len());
                    line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                    cut |= chunk.len() > room;
                }
                (eol.unwrap_or(buf.len()), eol.is_some())
            }
        };
        reader.consume(used);
        if end_of_line {
            emit_line(&log, &mut line, &mut cut, quiet);
        }
    }
    if !line.is_empty() {
        emit_line(&log, &mut line, &mut cut, quiet);
    }
}

fn emit_line(log: &Log, line: &mut Vec<u8>, cut: &mut bool, quiet: bool) {
    if !quiet {
        let text = String::from_utf8_lossy(line);
        let text = text.trim_end_matches('\r');
        let tail = if *cut { " [atip: line cut]" } else { "" };
        log::info!(
            target: crate::output::RAW_LOG,
            "[{}] {}{tail}",
            escape_controls(&log.server),
            escape_controls(&log.redactor.redact(text))
        );
    }
    line.clear();
    *cut = false;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_errors_lose_rust_type_names() {
        let raw = "failed to connect to server \"w\" at http://127.0.0.1:9/mcp: Transport [atip::mcp::client::Traced<rmcp::transport::streamable_http_client::StreamableHttpClientTransport<reqwest::async_impl::client::Client>>] error: Client error: error sending request, when send initialize request";
        let clean = without_type_names(raw);
        assert_eq!(
            clean,
            "failed to connect to server \"w\" at http://127.0.0.1:9/mcp: transport error: Client error: error sending request, when send initialize request"
        );
        assert!(!clean.contains("::"));
        assert_eq!(without_type_names("plain"), "plain");
    }
}
