//! The one way atip runs a child process (scan probes, `validate --exec`, `exec`, `mcp`).
//!
//! CONTRACT (implementation pending): argv only, never a shell; stdin from /dev/null;
//! environment scrubbed to an allowlist; a fresh temporary working directory unless one
//! is given; its own session and process group (setsid: no controlling terminal); a
//! timeout after which the whole process group is killed (SIGTERM, then SIGKILL after a
//! grace); stdout and stderr capped, drained without ever blocking past the deadline, so a
//! grandchild that keeps a pipe open cannot delay the result.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Default stdout cap for `--agent` probes: room for a kubectl-sized document.
pub const DEFAULT_PROBE_STDOUT_CAP: usize = 16 << 20;
/// Default stderr cap.
pub const DEFAULT_STDERR_CAP: usize = 64 << 10;
/// Grace between SIGTERM and SIGKILL.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(200);
/// Environment variables passed through to children.
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "USER", "LOGNAME", "TERM",
];

/// What to run and under which limits.
#[derive(Debug, Clone)]
pub struct Spawn {
    /// Program: an absolute path, or a name resolved on PATH.
    pub program: PathBuf,
    /// Arguments, passed as-is (no shell).
    pub args: Vec<OsString>,
    /// Wall-clock limit; the whole process group is killed past it.
    pub timeout: Duration,
    /// Bytes of stdout kept; the rest is drained and dropped.
    pub stdout_cap: usize,
    /// Bytes of stderr kept; the rest is drained and dropped.
    pub stderr_cap: usize,
    /// Working directory; `None` = a fresh temp dir, removed afterwards.
    pub cwd: Option<PathBuf>,
    /// Extra environment entries on top of the allowlist.
    pub env: Vec<(OsString, OsString)>,
    /// Bytes written to stdin before it is closed; `None` = /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// Set from another thread to kill the group early.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
}

impl Spawn {
    /// A spawn with probe-sized defaults.
    pub fn new(
        program: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<OsString>>,
        timeout: Duration,
    ) -> Self {
        Spawn {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            timeout,
            stdout_cap: DEFAULT_PROBE_STDOUT_CAP,
            stderr_cap: DEFAULT_STDERR_CAP,
            cwd: None,
            env: Vec::new(),
            stdin: None,
            cancel: None,
            kill_grace: DEFAULT_KILL_GRACE,
        }
    }
}

/// How the child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Exited with this code.
    Code(i32),
    /// Killed by this signal (not by atip).
    Signal(i32),
    /// Ran past the timeout; atip killed the group.
    TimedOut,
    /// Cancelled; atip killed the group.
    Cancelled,
}

/// What came back.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// How it ended.
    pub exit: Exit,
    /// Captured stdout, at most `stdout_cap` bytes.
    pub stdout: Vec<u8>,
    /// Captured stderr, at most `stderr_cap` bytes.
    pub stderr: Vec<u8>,
    /// Whether stdout went past its cap.
    pub stdout_truncated: bool,
    /// Whether stderr went past its cap.
    pub stderr_truncated: bool,
    /// Wall time from spawn to result.
    pub elapsed: Duration,
}

/// Failures to start or supervise a child.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The program could not be started.
    #[error("failed to start {program}: {source}")]
    Spawn {
        /// Program path.
        program: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// Other I/O failure while supervising.
    #[error("failed to supervise {program}: {source}")]
    Io {
        /// Program path.
        program: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
}

/// Runs a child under the contract above.
pub fn run(spawn: &Spawn) -> Result<Outcome, ProcessError> {
    let _ = spawn;
    unimplemented!("process::run is being implemented")
}
