//! The HTTP side of remote registries: one `reqwest` blocking client shared by every
//! request of a run: over https, HTTP/2 when the server offers it (ALPN), so parallel shim
//! requests share one connection; otherwise HTTP/1.1 keep-alive.
//!
//! Every request has a time limit (the per-request timeout, cut to what is left of the
//! run's total deadline) and every response a size cap, checked against
//! `Content-Length` before reading and enforced while reading. Requests are
//! conditional when the cache has validators (`If-None-Match`, `If-Modified-Since`).
//! Must not write anything.

use std::io::Read;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Cache validators of a stored response.
#[derive(Debug, Clone, Default)]
pub struct Validators {
    /// `ETag` as the server sent it.
    pub etag: Option<String>,
    /// `Last-Modified` as the server sent it.
    pub last_modified: Option<String>,
}

/// A successful exchange.
#[derive(Debug)]
pub enum Response {
    /// 304: the cached copy is current.
    NotModified {
        /// How long the server says it stays fresh (`fresh_for`).
        fresh_for: Option<u64>,
    },
    /// 200 with its body and validators.
    Body {
        /// The body (at most the cap).
        bytes: Vec<u8>,
        /// New validators.
        validators: Validators,
        /// How long the server says it stays fresh (`fresh_for`).
        fresh_for: Option<u64>,
    },
}

/// Seconds a response may be reused without asking again, from `Cache-Control`:
/// `no-cache`/`no-store` → 0, else `max-age=N`; `None` when the header says neither.
pub(crate) fn fresh_for(cache_control: Option<&str>) -> Option<u64> {
    let mut max_age = None;
    for directive in cache_control?.split(',') {
        let d = directive.trim().to_ascii_lowercase();
        if d == "no-cache" || d == "no-store" {
            return Some(0);
        }
        if let Some(n) = d.strip_prefix("max-age=") {
            max_age = n.trim_matches('"').parse().ok().or(Some(0));
        }
    }
    max_age
}

/// Why a request gave nothing usable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FetchError {
    /// 404 or 410.
    #[error("{url}: not found (HTTP {status})")]
    NotFound {
        /// URL.
        url: String,
        /// Status.
        status: u16,
    },
    /// 401 or 403.
    #[error("{url}: access refused (HTTP {status}); check the registry's auth.tokenEnvVar")]
    Auth {
        /// URL.
        url: String,
        /// Status.
        status: u16,
    },
    /// Another status.
    #[error("{url}: HTTP {status}")]
    Status {
        /// URL.
        url: String,
        /// Status.
        status: u16,
    },
    /// Larger than the cap.
    #[error("{url}: response larger than the {cap} byte limit")]
    TooLarge {
        /// URL.
        url: String,
        /// The cap.
        cap: u64,
    },
    /// Ran past its time limit.
    #[error("{url}: no complete answer within {}", crate::units::format_duration(*.limit))]
    Timeout {
        /// URL.
        url: String,
        /// The limit that applied.
        limit: Duration,
    },
    /// The run's total deadline passed before the request could start.
    #[error("{url}: not requested, the sync's total time limit was reached")]
    Deadline {
        /// URL.
        url: String,
    },
    /// Connection refused, DNS, TLS, a dropped connection.
    #[error("{url}: {message}")]
    Transport {
        /// URL.
        url: String,
        /// What failed.
        message: String,
    },
}

/// The HTTP client could not be set up (TLS backend, system configuration).
#[derive(Debug, thiserror::Error)]
#[error("failed to set up the HTTP client: {0}")]
pub struct ClientError(#[source] reqwest::Error);

/// The client of one run, with its limits and counters.
pub struct Http {
    client: reqwest::blocking::Client,
    per_request: Duration,
    deadline: Instant,
    /// Requests sent.
    pub requests: AtomicU64,
}

impl Http {
    /// A client whose requests each take at most `per_request`, all of them ending by
    /// `total` from now.
    pub fn new(per_request: Duration, total: Duration) -> Result<Http, ClientError> {
        let client = atip_net::blocking_client()
            .connect_timeout(per_request.min(Duration::from_secs(10)))
            .pool_max_idle_per_host(16)
            .build()
            .map_err(ClientError)?;
        Ok(Http {
            client,
            per_request,
            deadline: Instant::now() + total,
            requests: AtomicU64::new(0),
        })
    }

    /// GETs `url` (conditionally when `cond` is given), reading at most `cap` bytes.
    pub(crate) fn get(
        &self,
        url: &str,
        cond: Option<&Validators>,
        token: Option<&str>,
        cap: u64,
    ) -> Result<Response, FetchError> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Deadline { url: url.into() });
        }
        let limit = self.per_request.min(left);
        let mut req = self.client.get(url).timeout(limit);
        if let Some(v) = cond {
            if let Some(e) = &v.etag {
                req = req.header("if-none-match", e.as_str());
            }
            if let Some(m) = &v.last_modified {
                req = req.header("if-modified-since", m.as_str());
            }
        }
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let resp = req.send().map_err(|e| {
            if e.is_timeout() {
                FetchError::Timeout {
                    url: url.into(),
                    limit,
                }
            } else {
                FetchError::Transport {
                    url: url.into(),
                    message: chain(&e),
                }
            }
        })?;
        let fresh = fresh_for(
            resp.headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
        );
        match resp.status().as_u16() {
            304 => return Ok(Response::NotModified { fresh_for: fresh }),
            200 => {}
            status => return Err(status_error(url, status)),
        }
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let validators = Validators {
            etag: header("etag"),
            last_modified: header("last-modified"),
        };
        let bytes = read_body(resp, url, cap, limit)?;
        Ok(Response::Body {
            bytes,
            validators,
            fresh_for: fresh,
        })
    }
}

/// The error of an answer other than 200 and 304.
fn status_error(url: &str, status: u16) -> FetchError {
    let url = url.into();
    match status {
        401 | 403 => FetchError::Auth { url, status },
        404 | 410 => FetchError::NotFound { url, status },
        _ => FetchError::Status { url, status },
    }
}

/// Reads a 200 answer's body, at most `cap` bytes (a larger one, announced or not, is
/// an error).
fn read_body(
    resp: reqwest::blocking::Response,
    url: &str,
    cap: u64,
    limit: Duration,
) -> Result<Vec<u8>, FetchError> {
    let too_large = || FetchError::TooLarge {
        url: url.into(),
        cap,
    };
    if resp.content_length().is_some_and(|n| n > cap) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    resp.take(cap + 1).read_to_end(&mut bytes).map_err(|e| {
        // The blocking client reports its own timeout through the reader.
        let timed_out = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<reqwest::Error>())
            .is_some_and(reqwest::Error::is_timeout)
            || e.kind() == std::io::ErrorKind::TimedOut;
        if timed_out {
            FetchError::Timeout {
                url: url.into(),
                limit,
            }
        } else {
            FetchError::Transport {
                url: url.into(),
                message: format!("failed to read the response: {e}"),
            }
        }
    })?;
    if bytes.len() as u64 > cap {
        return Err(too_large());
    }
    Ok(bytes)
}

/// An error and its causes on one line (reqwest's own message names only the outer one).
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let m = s.to_string();
        if !out.contains(&m) {
            out.push_str(": ");
            out.push_str(&m);
        }
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fresh_for;

    #[test]
    fn cache_control_freshness() {
        assert_eq!(fresh_for(None), None);
        assert_eq!(fresh_for(Some("public")), None);
        assert_eq!(fresh_for(Some("public, max-age=600")), Some(600));
        assert_eq!(fresh_for(Some("Max-Age=60, must-revalidate")), Some(60));
        assert_eq!(fresh_for(Some("max-age=600, no-cache")), Some(0));
        assert_eq!(fresh_for(Some("no-store")), Some(0));
        assert_eq!(fresh_for(Some("max-age=soon")), Some(0));
    }
}
