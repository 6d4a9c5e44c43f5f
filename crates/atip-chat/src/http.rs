//! Posting a request to the model endpoint: one JSON body in, one JSON body out, with
//! the retries that are right for an API call that changes nothing on our side.
//!
//! Retried: 408, 409, 429 and 5xx responses (after `retry-after-ms` / `Retry-After`
//! when the server says, else an exponential backoff), timeouts, refused connections and
//! connections closed mid-response. Not retried: 401/403, other 4xx, a whole body that
//! is not JSON. Every failure becomes an [`AtipError`] with a code from `spec/chat.md`;
//! the key never appears in one (errors are redacted). Must not know any API's format.

use crate::exec::redact::Redactor;
use crate::output::{AtipError, ErrorCode};
use serde_json::{Value, json};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

/// Longest wait for a server's `Retry-After` that is still worth it.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// First backoff; it doubles per attempt.
const BACKOFF: Duration = Duration::from_millis(500);
/// Longest backoff.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// A configured endpoint.
pub struct Client {
    http: reqwest::blocking::Client,
    url: String,
    headers: Vec<(&'static str, String)>,
    /// Retries after the first attempt.
    pub retries: u32,
    /// Timeout of one attempt (cut to the time left before the deadline).
    pub request_timeout: Duration,
    redactor: Redactor,
    /// Name of the variable the key came from, for hints.
    key_var: Option<String>,
    /// Set (by a SIGINT handler) to give up at once: `interrupted`.
    pub interrupt: Option<atip_base::cancel::Cancel>,
}

/// How often a wait looks at the interrupt flag.
const POLL: Duration = Duration::from_millis(50);

/// A response, read whole.
struct Exchange {
    status: u16,
    retry_after_ms: Option<String>,
    retry_after: Option<String>,
    should_retry: Option<String>,
    body: Vec<u8>,
}

/// Why an attempt failed, and whether another may succeed.
struct Failure {
    error: AtipError,
    retry: bool,
    wait: Option<Duration>,
}

impl Client {
    /// A client posting to `url` with `headers` (secrets included: they are sent, never
    /// shown). `redactor` knows the key.
    pub fn new(
        url: String,
        headers: Vec<(&'static str, String)>,
        redactor: Redactor,
        key_var: Option<String>,
    ) -> Result<Client, AtipError> {
        let http = atip_net::blocking_client()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| {
                AtipError::new(
                    ErrorCode::Internal,
                    format!("failed to set up the HTTP client: {e}"),
                )
            })?;
        Ok(Client {
            http,
            url,
            headers,
            retries: 3,
            request_timeout: Duration::from_secs(120),
            redactor,
            key_var,
            interrupt: None,
        })
    }

    /// The endpoint URL, redacted (for messages).
    pub fn shown_url(&self) -> String {
        self.redactor.redact(&self.url).into_owned()
    }

    /// Posts `body` and returns the response body, retrying as the module doc says;
    /// gives up when `deadline` comes (`run_timeout`).
    pub(crate) fn post(&self, body: &Value, deadline: Instant) -> Result<Value, AtipError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| AtipError::new(ErrorCode::Internal, format!("request body: {e}")))?;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(run_timeout());
            }
            let limit = self.request_timeout.min(left);
            let failure = match self.attempt(&bytes, limit) {
                Ok(v) => return Ok(v),
                Err(f) if f.error.code == ErrorCode::Interrupted => return Err(f.error),
                Err(f) => f,
            };
            // A timeout that the deadline caused is the run's, not the endpoint's.
            if deadline.saturating_duration_since(Instant::now()) < Duration::from_millis(20) {
                return Err(run_timeout());
            }
            let mut error = failure.error;
            error.details["attempts"] = attempt.into();
            if !failure.retry || attempt > self.retries {
                return Err(error);
            }
            let wait = match failure.wait {
                Some(w) if w > MAX_RETRY_AFTER => {
                    return Err(error.hint(format!(
                        "the endpoint asks to wait {} s, longer than atip waits ({} s); try again later",
                        w.as_secs(),
                        MAX_RETRY_AFTER.as_secs()
                    )));
                }
                Some(w) => w,
                None => (BACKOFF * 2u32.pow(attempt - 1)).min(MAX_BACKOFF),
            };
            if Instant::now() + wait >= deadline {
                return Err(error);
            }
            let until = Instant::now() + wait;
            while Instant::now() < until {
                if self.interrupted() {
                    return Err(interrupted());
                }
                std::thread::sleep(POLL.min(until.saturating_duration_since(Instant::now())));
            }
        }
    }

    /// One request and its whole response, on its own thread so that an interrupt
    /// never waits for a slow endpoint: the caller polls the flag meanwhile.
    fn exchange(&self, body: &[u8], limit: Duration) -> Result<Exchange, Failure> {
        let mut req = self
            .http
            .post(&self.url)
            .timeout(limit)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        for (k, v) in &self.headers {
            req = req.header(*k, v.as_str());
        }
        let req = req.body(body.to_vec());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let got = req.send().and_then(|resp| {
                let header = |name: &str| {
                    resp.headers()
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string)
                };
                let status = resp.status().as_u16();
                let retry_after_ms = header("retry-after-ms");
                let retry_after = header("retry-after");
                let should_retry = header("x-should-retry");
                Ok(Exchange {
                    status,
                    retry_after_ms,
                    retry_after,
                    should_retry,
                    body: resp.bytes()?.to_vec(),
                })
            });
            let _ = tx.send(got);
        });
        loop {
            match rx.recv_timeout(POLL) {
                Ok(got) => return got.map_err(|e| self.transport(e)),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if self.interrupted() => {
                    return Err(Failure {
                        error: interrupted(),
                        retry: false,
                        wait: None,
                    });
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(Failure {
                        error: AtipError::new(ErrorCode::Internal, "the HTTP request thread died"),
                        retry: false,
                        wait: None,
                    });
                }
            }
        }
    }

    /// Whether the interrupt flag is set.
    pub(crate) fn interrupted(&self) -> bool {
        self.interrupt
            .as_ref()
            .is_some_and(|f| f.load(Ordering::SeqCst))
    }

    fn attempt(&self, body: &[u8], limit: Duration) -> Result<Value, Failure> {
        let Exchange {
            status,
            retry_after_ms,
            retry_after: retry_after_header,
            should_retry,
            body: text,
        } = self.exchange(body, limit)?;
        let wait = retry_after(retry_after_ms.as_deref(), retry_after_header.as_deref());
        if (200..300).contains(&status) {
            return serde_json::from_slice::<Value>(&text).map_err(|e| Failure {
                error: AtipError::new(
                    ErrorCode::EndpointMalformed,
                    format!("the model endpoint's response is not JSON: {e}"),
                )
                .hint("check --base-url points at the API itself")
                .details(json!({"status": status, "body": self.excerpt(&text)})),
                retry: false,
                wait: None,
            });
        }
        let message = self.provider_message(&text);
        let (code, hint, retry) = match status {
            401 | 403 => (
                ErrorCode::EndpointAuth,
                match &self.key_var {
                    Some(v) => format!("the endpoint refused the key from {v}; check it"),
                    None => "the endpoint wants an API key: set the provider's key variable, or name one with --api-key-env".into(),
                },
                false,
            ),
            429 => (
                ErrorCode::EndpointRateLimited,
                "the endpoint is rate limiting; try again later, or lower --jobs".into(),
                true,
            ),
            408 | 409 => (
                ErrorCode::EndpointUnavailable,
                "the endpoint timed out or conflicted; try again".into(),
                true,
            ),
            500..=599 => (
                ErrorCode::EndpointUnavailable,
                "the endpoint failed; try again later".into(),
                true,
            ),
            _ => (
                ErrorCode::EndpointRejected,
                "check --model, --base-url and --provider".into(),
                false,
            ),
        };
        let retry = match should_retry.as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => retry,
        };
        let mut error = AtipError::new(
            code,
            format!("the model endpoint answered HTTP {status}: {message}"),
        )
        .hint(hint)
        .details(json!({"status": status}));
        error.retryable = retry;
        if let Some(w) = wait {
            error.details["retryAfterMs"] = (w.as_millis() as u64).into();
        }
        Err(Failure { error, retry, wait })
    }

    fn transport(&self, e: reqwest::Error) -> Failure {
        let shown = self.redactor.redact(&error_chain(&e)).into_owned();
        let (code, what) = if e.is_timeout() {
            (ErrorCode::EndpointTimeout, "timed out")
        } else if e.is_connect() {
            (ErrorCode::EndpointUnreachable, "cannot be reached")
        } else {
            (
                ErrorCode::EndpointUnreachable,
                "closed the connection or sent a broken response",
            )
        };
        let mut error = AtipError::new(
            code,
            format!("the model endpoint {} {what}: {shown}", self.shown_url()),
        )
        .hint("check --base-url and that the server is running; raise --request-timeout for slow models")
        .details(json!({}));
        error.retryable = true;
        Failure {
            error,
            retry: !e.is_builder(),
            wait: None,
        }
    }

    /// The provider's own error message (`error.message` in every API), redacted and cut.
    fn provider_message(&self, body: &[u8]) -> String {
        let parsed: Option<Value> = serde_json::from_slice(body).ok();
        let msg = parsed
            .as_ref()
            .and_then(|v| {
                v.pointer("/error/message")
                    .or_else(|| v.get("message"))
                    .or_else(|| v.get("error"))
            })
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| self.excerpt(body));
        let msg: String = msg.chars().take(500).collect();
        self.redactor.redact(msg.trim()).into_owned()
    }

    fn excerpt(&self, body: &[u8]) -> String {
        let s: String = String::from_utf8_lossy(body).chars().take(200).collect();
        self.redactor.redact(&s).into_owned()
    }
}

/// The error for a run stopped by SIGINT or SIGTERM.
pub(crate) fn interrupted() -> AtipError {
    AtipError::new(
        ErrorCode::Interrupted,
        "the chat was interrupted; running tool calls were killed with their process groups",
    )
}

/// The error for a run that reached its `--run-timeout`.
pub(crate) fn run_timeout() -> AtipError {
    AtipError::new(ErrorCode::RunTimeout, "the chat reached its --run-timeout")
        .hint("raise --run-timeout, or ask for less")
}

/// The wait a server asked for: `retry-after-ms` (milliseconds), else `Retry-After` in
/// seconds (a decimal number) or as an HTTP date.
pub(crate) fn retry_after(ms: Option<&str>, header: Option<&str>) -> Option<Duration> {
    if let Some(ms) = ms.and_then(|v| v.trim().parse::<f64>().ok())
        && ms.is_finite()
        && ms >= 0.0
    {
        return Some(Duration::from_millis(ms as u64));
    }
    let h = header?.trim();
    if let Ok(secs) = h.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = crate::timestamp::parse_http_date(h)?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// The error and its sources, one line (reqwest's own message names only the outer layer).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    parts.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            retry_after(Some("250"), Some("9")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(None, Some("2")), Some(Duration::from_secs(2)));
        assert_eq!(
            retry_after(None, Some("0.5")),
            Some(Duration::from_millis(500))
        );
        assert_eq!(
            retry_after(None, Some("Sun, 06 Nov 1994 08:49:37 GMT")),
            Some(Duration::ZERO),
            "a date in the past means now"
        );
        assert_eq!(retry_after(None, Some("soon")), None);
        assert_eq!(retry_after(None, Some("-1")), None);
        assert_eq!(retry_after(None, None), None);
    }
}
