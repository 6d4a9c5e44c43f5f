//! atip's `net` layer: the one factory of the async runtime and of the HTTP clients.
//!
//! Every tokio runtime atip starts comes from [`runtime`], every HTTP client from
//! [`blocking_client`] or [`async_client`]: TLS is ring's (installed here, see
//! [`atip_base::tls`]), every request says it is atip's, and a second way to build
//! either cannot creep back in (a test in `tests/layers.rs` fails when one appears
//! outside this file). Callers add what is theirs (timeouts, pools) to the builder.

use atip_base::output::{AtipError, ErrorCode};

/// The `User-Agent` of every HTTP request atip sends.
pub const USER_AGENT: &str = concat!("atip/", env!("CARGO_PKG_VERSION"));

/// The threads a runtime runs its tasks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    /// On the thread that blocks on it (one request or session at a time).
    Current,
    /// On this many worker threads (a server answering several clients).
    Workers(usize),
}

/// A tokio runtime with I/O and timers enabled.
pub fn runtime(threads: Threads) -> Result<tokio::runtime::Runtime, AtipError> {
    let mut builder = match threads {
        Threads::Current => tokio::runtime::Builder::new_current_thread(),
        Threads::Workers(n) => {
            let mut b = tokio::runtime::Builder::new_multi_thread();
            b.worker_threads(n.max(1));
            b
        }
    };
    builder.enable_all().build().map_err(|e| {
        AtipError::new(
            ErrorCode::Internal,
            format!("failed to start the async runtime: {e}"),
        )
    })
}

/// A builder of a blocking HTTP client (remote registries, model endpoints): ring's
/// TLS installed, atip's user agent, no overall timeout (the caller sets its own).
pub fn blocking_client() -> reqwest::blocking::ClientBuilder {
    atip_base::tls::use_ring();
    reqwest::blocking::Client::builder()
        .user_agent(USER_AGENT)
        .timeout(None)
}

/// A builder of an async HTTP client (MCP over HTTP): ring's TLS installed, atip's
/// user agent.
pub fn async_client() -> reqwest::ClientBuilder {
    atip_base::tls::use_ring();
    reqwest::Client::builder().user_agent(USER_AGENT)
}

/// How often [`cancelled`] looks at the token.
const CANCEL_POLL: std::time::Duration = std::time::Duration::from_millis(25);

/// Resolves once `token` is set: what an async wait selects on to stop when the run is
/// cancelled (the signal handler sets the token; nothing async listens for signals).
pub async fn cancelled(token: atip_base::cancel::Cancel) {
    let mut tick = tokio::time::interval(CANCEL_POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !atip_base::cancel::is_set(Some(&token)) {
        tick.tick().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_of_both_kinds_run_a_task() {
        for threads in [Threads::Current, Threads::Workers(2)] {
            let rt = runtime(threads).unwrap();
            // A timer needs the time driver: `enable_all` must have turned it on.
            let got = rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(60), async { 7 }).await
            });
            assert_eq!(got, Ok(7), "{threads:?}");
        }
    }

    #[test]
    fn cancelled_resolves_once_the_token_is_set_and_not_before() {
        let rt = runtime(Threads::Current).unwrap();
        let token = atip_base::cancel::token();
        let setter = token.clone();
        let order = rt.block_on(async move {
            let wait = tokio::spawn(cancelled(token));
            // On this one thread the wait runs at each yield: it must keep waiting.
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            let early = wait.is_finished();
            setter.store(true, std::sync::atomic::Ordering::SeqCst);
            wait.await.unwrap();
            early
        });
        assert!(!order, "resolved before the token was set");
    }

    #[test]
    fn clients_build_with_the_ring_provider() {
        // Without a crypto provider installed, building a rustls client panics.
        blocking_client().build().unwrap();
        let rt = runtime(Threads::Current).unwrap();
        rt.block_on(async { async_client().build().unwrap() });
    }
}
