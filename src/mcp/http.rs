//! `atip mcp serve --http ADDR`: the same server over MCP Streamable HTTP (rmcp's
//! `StreamableHttpService` on hyper), endpoint `/mcp`.
//!
//! Loopback addresses by default. Any other address needs a bearer token (from an
//! environment variable, never a flag, so it stays out of `ps`); with a token set every
//! request must carry `Authorization: Bearer TOKEN` (compared in constant time), or gets
//! 401. On loopback, the `Host` header must name a loopback host and browser `Origin`s
//! must be local (DNS-rebinding defence, as the MCP transport spec asks); on other
//! addresses every browser `Origin` is refused. Must not print to stdout.

use super::Server;
use super::search_mode::Scale;
use crate::exec::Engine;
use crate::output::{AtipError, ErrorCode};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;

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

/// Serves until Ctrl-C or SIGTERM.
pub fn serve_blocking(
    engine: Engine,
    scale: Scale,
    jobs: usize,
    addr: &str,
    token: Option<String>,
    token_env: &str,
    proxy: Option<super::proxy::Setup>,
) -> Result<(), AtipError> {
    let sock: SocketAddr = addr.parse().map_err(|e| {
        usage(format!(
            "--http {addr:?} is not an address like 127.0.0.1:8808: {e}"
        ))
    })?;
    let loopback = sock.ip().is_loopback();
    if !loopback && token.is_none() {
        return Err(usage(format!(
            "--http {addr} is not a loopback address: a bearer token is required"
        ))
        .hint(format!(
            "set {token_env} to a long random secret; clients send `Authorization: Bearer …`"
        )));
    }
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
        let mut config = StreamableHttpServerConfig::default();
        if loopback {
            config.allowed_origins = vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ];
        } else {
            // The token guards the door; Host names are the deployment's own.
            config = config.disable_allowed_hosts().enforce_origin_validation();
        }
        let ct = config.cancellation_token.clone();
        log::info!(
            target: crate::output::RAW_LOG,
            "{}",
            server.banner(&format!("http://{bound}{ENDPOINT}"))
        );
        let factory = server.clone();
        let service = StreamableHttpService::new(
            move || Ok(factory.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let token = token.map(Arc::new);
        let mut stop = Box::pin(shutdown_signal());
        loop {
            let (stream, _) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        log::warn!("MCP HTTP accept failed: {e}");
                        continue;
                    }
                },
                _ = &mut stop => break,
            };
            let service = service.clone();
            let token = token.clone();
            tokio::spawn(async move {
                let handler =
                    hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                        let mut service = service.clone();
                        let token = token.clone();
                        async move {
                            if req.uri().path() != ENDPOINT {
                                return Ok::<_, std::convert::Infallible>(plain(
                                    404,
                                    "not found; the MCP endpoint is /mcp\n",
                                ));
                            }
                            if let Some(t) = &token
                                && !token_matches(req.headers().get(http::header::AUTHORIZATION), t)
                            {
                                let mut r = plain(401, "missing or wrong bearer token\n");
                                r.headers_mut().insert(
                                    http::header::WWW_AUTHENTICATE,
                                    http::HeaderValue::from_static("Bearer"),
                                );
                                return Ok(r);
                            }
                            use tower_service::Service;
                            service.call(req).await
                        }
                    });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, handler)
                    .await;
            });
        }
        ct.cancel();
        server.close_proxy().await;
        Ok(())
    });
    rt.shutdown_timeout(std::time::Duration::from_secs(2));
    res
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async {
            match term.as_mut() {
                Some(t) => { t.recv().await; }
                None => std::future::pending::<()>().await,
            }
        } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
