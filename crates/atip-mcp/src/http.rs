//! `atip mcp serve --http ADDR`: the same server over MCP Streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper), endpoint `/mcp`.
//!
//! Every request needs a bearer token, on loopback too: any account on the machine can
//! reach a loopback port, and a tool call runs as the user who started the server. The
//! token comes from an environment variable (never a flag, so it stays out of `ps`);
//! without one, a loopback server draws a random token and prints it once on stderr; a
//! non-loopback address refuses to start without a token of the user's choosing.
//! Requests without `Authorization: Bearer TOKEN` (compared in constant time) get 401
//! before their body is read. On loopback, the `Host` header must name a loopback host
//! and browser `Origin`s must be local (DNS-rebinding defence, as the MCP transport spec
//! asks); on other addresses every browser `Origin` is refused.
//!
//! Bounded: at most `max_connections` connections at once (further ones wait in the
//! kernel's backlog), at most `max_sessions` sessions (the least recently used one is
//! closed to make room, see `Capped`), and a client that does not finish sending a
//! request's headers within `header_timeout` (or sits idle that long between requests)
//! is disconnected. Accept failures (EMFILE at the descriptor limit) back off instead of
//! spinning, with one warning per burst. Must not print to stdout.

use super::Server;
use super::search_mode::Scale;
use crate::exec::Engine;
use crate::output::{AtipError, ErrorCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// What one HTTP server may hold at once, and how long a client may take.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open MCP sessions (`initialize` handshakes not yet ended).
    pub max_sessions: usize,
    /// Open TCP connections.
    pub max_connections: usize,
    /// Time to send a request's headers, or to start the next request on a kept-alive
    /// connection.
    pub header_timeout: Duration,
}

/// `--max-sessions` default: far more than one user's clients need, and small enough
/// that sessions (~70 KB each) stay a few megabytes.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// `--max-connections` default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 256;
/// `--header-timeout` default.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
        }
    }
}

/// The MCP endpoint path.
pub const ENDPOINT: &str = "/mcp";

fn usage(msg: String) -> AtipError {
    AtipError::new(ErrorCode::Usage, msg)
}

/// Whether `token` matches, in time independent of where they differ.
fn token_matches(header: Option<&http::HeaderValue>, token: &str) -> bool {
    let Some(got) = header
        .and_then(|h| h.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
    else {
        return false;
    };
    use crate::digest::sha256_raw;
    let (a, b) = (sha256_raw(got.as_bytes()), sha256_raw(token.as_bytes()));
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

fn plain(
    status: u16,
    text: &'static str,
) -> http::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>> {
    let mut r = http::Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *r.status_mut() = http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::BAD_REQUEST);
    r
}

/// A token for one run: 32 random bytes, hex.
fn generated_token() -> Result<String, AtipError> {
    let mut raw = [0u8; 32];
    atip_base::tls::random_bytes(&mut raw).map_err(|_| {
        AtipError::new(
            ErrorCode::Internal,
            "no random bytes for the HTTP bearer token",
        )
    })?;
    Ok(hex::encode(raw))
}

/// After an accept failure: how long to wait before the next accept (doubling from 5 ms
/// to 1 s), and whether to warn (only the first failure of a burst; a burst ends with
/// the next accepted connection).
#[derive(Debug, Default)]
struct Backoff {
    delay: Option<Duration>,
    failures: u64,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);

    /// One failure: (time to wait, whether to warn).
    fn failed(&mut self) -> (Duration, bool) {
        self.failures += 1;
        let (next, warn) = match self.delay {
            None => (Self::FIRST, true),
            Some(d) => ((d * 2).min(Self::MAX), false),
        };
        self.delay = Some(next);
        (next, warn)
    }

    /// A connection was accepted: the failures of the burst that ended, if any.
    fn succeeded(&mut self) -> Option<u64> {
        self.delay = None;
        (self.failures > 0).then(|| std::mem::take(&mut self.failures))
    }
}

/// Serves until `cancel` is set (the binary's signal handler sets it on SIGINT, SIGTERM
/// or SIGHUP).
#[allow(clippy::too_many_arguments)]
pub fn serve_blocking(
    engine: Engine,
    scale: Scale,
    jobs: usize,
    addr: &str,
    token: Option<String>,
    token_env: &str,
    limits: Limits,
    proxy: Option<super::proxy::Setup>,
    cancel: crate::process::Cancel,
) -> Result<(), AtipError> {
    let sock = listen_address(addr, token.is_some(), token_env)?;
    let (token, generated) = match token {
        Some(t) => (t, false),
        None => (generated_token()?, true),
    };
    let rt = super::runtime()?;
    let res = rt.block_on(async move {
        let server = Server::build(engine, scale, jobs, proxy).await?;
        let listener = tokio::net::TcpListener::bind(sock).await.map_err(|e| {
            AtipError::new(
                ErrorCode::McpFailed,
                format!("failed to listen on {sock}: {e}"),
            )
        })?;
        let bound = listener.local_addr().unwrap_or(sock);
        let config = service_config(sock.ip().is_loopback());
        let ct = config.cancellation_token.clone();
        log::info!(
            target: crate::output::RAW_LOG,
            "{}",
            server.banner(&format!("http://{bound}{ENDPOINT}"))
        );
        if generated {
            // Printed once, here only: the user hands it to their client.
            log::info!(
                target: crate::output::RAW_LOG,
                "atip mcp: {token_env} is not set, so this run's bearer token is {token}\n\
                 atip mcp: clients send `Authorization: Bearer {token}` (set {token_env} to choose the token)"
            );
        }
        let factory = server.clone();
        let service = StreamableHttpService::new(
            move || Ok(factory.clone()),
            Arc::new(Capped::new(limits.max_sessions)),
            config,
        );
        accept_loop(listener, service, Arc::new(token), limits, cancel).await;
        ct.cancel();
        server.close_proxy().await;
        Ok(())
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    res
}

/// The MCP service of one run: the server per session, sessions capped.
type McpService = StreamableHttpService<Server, Capped>;

/// The address to listen on; one that is not loopback needs a bearer token.
fn listen_address(addr: &str, has_token: bool, token_env: &str) -> Result<SocketAddr, AtipError> {
    let sock: SocketAddr = addr.parse().map_err(|e| {
        usage(format!(
            "--http {addr:?} is not an address like 127.0.0.1:8808: {e}"
        ))
    })?;
    if !sock.ip().is_loopback() && !has_token {
        return Err(usage(format!(
            "--http {addr} is not a loopback address: a bearer token is required"
        ))
        .hint(format!(
            "set {token_env} to a long random secret; clients send `Authorization: Bearer …`"
        )));
    }
    Ok(sock)
}

/// On loopback, only local pages may call (Origin checked); elsewhere the token guards
/// the door and Host names are the deployment's own.
fn service_config(loopback: bool) -> StreamableHttpServerConfig {
    let mut config = StreamableHttpServerConfig::default();
    if loopback {
        config.allowed_origins = vec![
            "http://localhost:*".into(),
            "http://127.0.0.1:*".into(),
            "http://[::1]:*".into(),
        ];
    } else {
        config = config.disable_allowed_hosts().enforce_origin_validation();
    }
    config
}

/// Accepts connections until `cancel` is set, each served on its own task, at most
/// `limits.max_connections` at once.
async fn accept_loop(
    listener: tokio::net::TcpListener,
    service: McpService,
    token: Arc<String>,
    limits: Limits,
    cancel: crate::process::Cancel,
) {
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections.max(1)));
    let mut backoff = Backoff::default();
    let mut stop = Box::pin(atip_net::cancelled(cancel));
    loop {
        // A free connection slot first: at the cap, new connections wait in the
        // kernel's backlog rather than costing a task and a descriptor each.
        let permit = tokio::select! {
            p = connections.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = &mut stop => break,
        };
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // EMFILE and friends last until something closes: wait, do not
                    // spin, and say so once per burst.
                    let (wait, warn) = backoff.failed();
                    if warn {
                        log::warn!(
                            "MCP HTTP accept failed: {e}; retrying with backoff (up to {} s; \
                             further failures until a connection is accepted are not reported)",
                            Backoff::MAX.as_secs()
                        );
                    }
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => continue,
                        _ = &mut stop => break,
                    }
                }
            },
            _ = &mut stop => break,
        };
        if let Some(n) = backoff.succeeded() {
            log::warn!("MCP HTTP accepting connections again after {n} failed accepts");
        }
        let (service, token) = (service.clone(), token.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let handler =
                hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    handle(req, service.clone(), token.clone())
                });
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .serve_connection(io, handler)
                .await;
        });
    }
}

/// One HTTP request: only the MCP endpoint, and only with the bearer token, reaches
/// the MCP service.
async fn handle(
    req: http::Request<hyper::body::Incoming>,
    mut service: McpService,
    token: Arc<String>,
) -> Result<
    http::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>>,
    std::convert::Infallible,
> {
    if req.uri().path() != ENDPOINT {
        return Ok(plain(404, "not found; the MCP endpoint is /mcp\n"));
    }
    if !token_matches(req.headers().get(http::header::AUTHORIZATION), &token) {
        let mut r = plain(401, "missing or wrong bearer token\n");
        r.headers_mut().insert(
            http::header::WWW_AUTHENTICATE,
            http::HeaderValue::from_static("Bearer"),
        );
        return Ok(r);
    }
    use tower_service::Service as _;
    service.call(req).await
}

/// The session manager with a cap: rmcp's in-memory sessions, at most `max` of them.
/// Each session holds a server and its buffers (~70 KB), and without a cap 40,000
/// `initialize` requests held 2.8 GB for the five minutes until rmcp's idle timeout.
/// At the cap a new session closes the least recently used session that has no
/// response stream open; when every session is streaming, the new one is refused.
struct Capped {
    inner: LocalSessionManager,
    max: usize,
    used: Arc<std::sync::Mutex<Used>>,
    /// Creations one at a time, so the count checked is the count kept.
    creating: tokio::sync::Mutex<()>,
    warned: std::sync::atomic::AtomicBool,
}

/// When each session was last used (a counter, not a clock) and its open streams.
#[derive(Default)]
struct Used {
    tick: u64,
    last: std::collections::HashMap<SessionId, u64>,
    streams: std::collections::HashMap<SessionId, usize>,
}

#[derive(Debug, thiserror::Error)]
enum CappedError {
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    #[error(
        "too many MCP sessions: all {0} (--max-sessions) have a request in progress; \
         end a session (HTTP DELETE) or raise --max-sessions"
    )]
    Full(usize),
}

impl Capped {
    fn new(max: usize) -> Capped {
        Capped {
            inner: LocalSessionManager::default(),
            max: max.max(1),
            used: Arc::default(),
            creating: tokio::sync::Mutex::new(()),
            warned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn touch(&self, id: &SessionId) {
        let mut u = self.used.lock().unwrap_or_else(|p| p.into_inner());
        u.tick += 1;
        let t = u.tick;
        u.last.insert(id.clone(), t);
    }

    fn forget(&self, id: &SessionId) {
        let mut u = self.used.lock().unwrap_or_else(|p| p.into_inner());
        u.last.remove(id);
    }

    /// `stream`, counted as open on session `id` until dropped.
    fn tracked<S>(&self, id: &SessionId, stream: S) -> Tracked<S> {
        let mut u = self.used.lock().unwrap_or_else(|p| p.into_inner());
        *u.streams.entry(id.clone()).or_default() += 1;
        Tracked {
            inner: Box::pin(stream),
            _open: OpenStream {
                used: self.used.clone(),
                id: id.clone(),
            },
        }
    }
}

/// A response stream of a session; the session is busy while one is open.
struct Tracked<S> {
    inner: std::pin::Pin<Box<S>>,
    _open: OpenStream,
}

struct OpenStream {
    used: Arc<std::sync::Mutex<Used>>,
    id: SessionId,
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        let mut u = self.used.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = u.streams.get_mut(&self.id) {
            *n -= 1;
            if *n == 0 {
                u.streams.remove(&self.id);
            }
        }
    }
}

impl<S: futures_util::Stream> futures_util::Stream for Tracked<S> {
    type Item = S::Item;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl SessionManager for Capped {
    type Error = CappedError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), CappedError> {
        let _one = self.creating.lock().await;
        loop {
            let open: Vec<SessionId> = self.inner.sessions.read().await.keys().cloned().collect();
            if open.len() < self.max {
                break;
            }
            let victim = {
                let mut u = self.used.lock().unwrap_or_else(|p| p.into_inner());
                // Sessions rmcp already closed are forgotten here too.
                let live: std::collections::HashSet<&SessionId> = open.iter().collect();
                u.last.retain(|id, _| live.contains(id));
                open.iter()
                    .filter(|id| !u.streams.contains_key(*id))
                    .min_by_key(|id| u.last.get(*id).copied().unwrap_or(0))
                    .cloned()
            };
            let Some(victim) = victim else {
                return Err(CappedError::Full(self.max));
            };
            if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                log::warn!(
                    "MCP HTTP: {} sessions open (--max-sessions); closing the least recently \
                     used one for each new session (reported once)",
                    self.max
                );
            }
            self.inner.close_session(&victim).await?;
            self.forget(&victim);
        }
        let (id, transport) = self.inner.create_session().await?;
        self.touch(&id);
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, CappedError> {
        self.touch(id);
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, CappedError> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), CappedError> {
        self.forget(id);
        Ok(self.inner.close_session(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        CappedError,
    > {
        self.touch(id);
        let s = self.inner.create_stream(id, message).await?;
        Ok(self.tracked(id, s))
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), CappedError> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        CappedError,
    > {
        self.touch(id);
        let s = self.inner.create_standalone_stream(id).await?;
        Ok(self.tracked(id, s))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<
        impl futures_util::Stream<Item = ServerSseMessage> + Send + Sync + 'static,
        CappedError,
    > {
        self.touch(id);
        let s = self.inner.resume(id, last_event_id).await?;
        Ok(self.tracked(id, s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_failures_back_off_and_warn_once_per_burst() {
        let mut b = Backoff::default();
        assert_eq!(b.succeeded(), None);
        let (d1, w1) = b.failed();
        assert_eq!((d1, w1), (Backoff::FIRST, true));
        let mut last = d1;
        for _ in 0..20 {
            let (d, warn) = b.failed();
            assert!(!warn);
            assert!(d >= last && d <= Backoff::MAX);
            last = d;
        }
        assert_eq!(last, Backoff::MAX);
        assert_eq!(b.succeeded(), Some(21));
        // A new burst warns again, from the short delay.
        assert_eq!(b.failed(), (Backoff::FIRST, true));
    }

    #[test]
    fn generated_tokens_are_long_and_fresh() {
        let (a, b) = (generated_token().unwrap(), generated_token().unwrap());
        assert_eq!(a.len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn bearer_tokens_must_match_exactly() {
        let h = http::HeaderValue::from_static("Bearer abc123");
        assert!(token_matches(Some(&h), "abc123"));
        assert!(!token_matches(Some(&h), "abc124"));
        assert!(!token_matches(None, "abc123"));
        let h = http::HeaderValue::from_static("abc123");
        assert!(!token_matches(Some(&h), "abc123"));
    }
}
