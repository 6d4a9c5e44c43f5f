//! The run's one cancellation token.
//!
//! The binary's signal handler (SIGINT, SIGTERM, SIGHUP) sets one flag; every command
//! that waits or runs children is handed that same flag: the process layer kills a
//! child's group when it is set, a scan stops probing, a chat stops waiting for the
//! model, the MCP client and HTTP server stop waiting (`atip_net::cancelled`). Nothing
//! else in atip listens for a signal.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once to stop what the run waits on or runs; never cleared.
pub type Cancel = Arc<AtomicBool>;

/// A token nothing has set yet (for a caller that cancels by itself, and tests).
pub fn token() -> Cancel {
    Arc::new(AtomicBool::new(false))
}

/// Whether `cancel` is given and set.
pub fn is_set(cancel: Option<&Cancel>) -> bool {
    cancel.is_some_and(|c| c.load(Ordering::SeqCst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_set_once_for_everyone_holding_it() {
        let t = token();
        let held = t.clone();
        assert!(!is_set(Some(&held)));
        assert!(!is_set(None));
        t.store(true, Ordering::SeqCst);
        assert!(is_set(Some(&held)));
    }
}
