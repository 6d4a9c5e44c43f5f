//! The one way atip runs a child process (scan probes, `validate --exec`, `exec`, `mcp`).
//!
//! Owns spawning, supervising and reaping children: argv only, never a shell; stdin
//! from /dev/null (or given bytes, then EOF); environment scrubbed to [`ENV_ALLOWLIST`]
//! plus explicit extras; a fresh temporary working directory unless one is given; its
//! own session and process group (setsid: no controlling terminal); a deadline after
//! which the whole process group gets SIGTERM, then SIGKILL after a grace; the rest of
//! the group killed as soon as the direct child exits; stdout and stderr capped and
//! read with non-blocking `poll`, so neither a flood nor a grandchild holding a pipe
//! open can delay the result past the deadline (plus the grace and [`DRAIN_WINDOW`]).
//!
//! Must not interpret what the child printed (that is the caller's job: probe parsing,
//! exec result shaping, truncation markers) and must not be bypassed: nothing else in
//! atip calls `std::process::Command`. The normative description is `spec/process.md`.

// The layers below, under the module names this code was written with (`crate::output`, …).

mod launch;
pub mod server;
mod sys;

pub use atip_base::cancel::Cancel;
pub use atip_base::env::Env;

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Default stdout cap for `--agent` probes: room for a kubectl-sized document.
pub const DEFAULT_PROBE_STDOUT_CAP: usize = 16 << 20;
/// Default stderr cap.
pub const DEFAULT_STDERR_CAP: usize = 64 << 10;
/// Grace between SIGTERM and SIGKILL.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_millis(200);
/// How long the pipes are still read after the direct child has exited (EOF ends it
/// sooner). Output a tool wrote just before exiting is kept; an escaped grandchild
/// that holds a pipe open costs at most this long.
pub const DRAIN_WINDOW: Duration = Duration::from_millis(100);
/// Environment variables passed through to children (when set in the run's [`Env`]).
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
    /// The run's environment the [`ENV_ALLOWLIST`] variables are taken from (and `PATH`
    /// when `env` sets none); empty by default: the child then gets only `env`.
    pub inherit: Env,
    /// Bytes written to stdin before it is closed; `None` = /dev/null.
    pub stdin: Option<Vec<u8>>,
    /// Set from another thread to kill the group early.
    pub cancel: Option<Cancel>,
    /// Grace between SIGTERM and SIGKILL.
    pub kill_grace: Duration,
    /// The executable, already opened and checked by the caller: the child runs this
    /// very file, not `program` looked up again (`program` is then only its `argv[0]`).
    pub opened: Option<Opened>,
}

/// An executable file atip opened (and the caller checked, e.g. hashed): the child
/// executes this open file through `/proc/self/fd/N`, so a file swapped in at the path
/// after the check is never what runs. Just before the start, the file's `stat`
/// (device, inode, size, times) must still be what it was when opened, so bytes written
/// into it in place after the check do not run either.
#[derive(Debug, Clone)]
pub struct Opened {
    file: Arc<File>,
    stat: sys::StatKey,
    script: bool,
}

impl Opened {
    /// Takes an open file (read-only, or `O_PATH` for a binary atip may execute but not
    /// read): records its `stat` and whether it is a `#!` script.
    pub fn new(file: File) -> io::Result<Opened> {
        let file = sys::above_stdio(file)?;
        let stat = sys::stat_key(&file)?;
        let mut head = [0u8; 2];
        // Unreadable (`O_PATH`): not a script, which would need reading to run anyway.
        let n = std::os::unix::fs::FileExt::read_at(&file, &mut head, 0).unwrap_or(0);
        Ok(Opened {
            file: Arc::new(file),
            stat,
            script: n == 2 && head == *b"#!",
        })
    }

    /// The open file (to hash its bytes: reads through it do not change what runs).
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Whether the file's `stat` is still the one recorded when it was opened.
    pub fn unchanged(&self) -> bool {
        sys::stat_key(&*self.file).is_ok_and(|now| now == self.stat)
    }
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
            inherit: Env::default(),
            stdin: None,
            cancel: None,
            kill_grace: DEFAULT_KILL_GRACE,
            opened: None,
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
    /// The opened executable changed (its `stat`) between the caller's check and the
    /// child's `exec`: nothing ran.
    #[error("{program} changed between its check and its start; it was not run")]
    Changed {
        /// Program path.
        program: PathBuf,
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

impl Exit {
    /// Whether the child exited by itself with code 0.
    pub fn success(&self) -> bool {
        *self == Exit::Code(0)
    }
}

impl Outcome {
    /// Whether the child exited by itself with code 0.
    pub fn success(&self) -> bool {
        self.exit.success()
    }
}

/// How long to keep waiting for a SIGKILLed child before giving up on it and
/// reaping it in the background (a process stuck in uninterruptible sleep).
const KILL_WAIT: Duration = Duration::from_secs(2);
/// Poll slice while a cancel flag must be watched.
const CANCEL_SLICE: Duration = Duration::from_millis(20);
/// Longest poll slice when no pidfd tells us about the child's exit.
const FALLBACK_SLICE: Duration = Duration::from_millis(10);
/// Bytes read per `read` call.
const CHUNK: usize = 64 << 10;
/// Reads per pipe per wake-up, so a flood cannot starve the deadline checks.
const READS_PER_WAKE: usize = 16;
/// Attempts to start a program that is busy (ETXTBSY: someone has it open for writing,
/// typically a freshly written script while another thread starts a child).
const SPAWN_ATTEMPTS: u32 = 5;

/// Runs a child under the contract of this module and returns what came back.
///
/// Blocks the calling thread until the child has exited (or was killed) and its output
/// has been collected; safe to call from many threads at once. Returns at the latest
/// after `timeout + kill_grace + DRAIN_WINDOW` (plus scheduling noise), whatever the
/// child and its descendants do. A cancel flag that is already set when `run` is called
/// starts nothing and returns [`Exit::Cancelled`].
///
/// Errors only when the program cannot be resolved or started, or when supervising
/// fails at the OS level; a child that misbehaves is an `Ok` [`Outcome`].
pub fn run(spawn: &Spawn) -> Result<Outcome, ProcessError> {
    let start = Instant::now();
    if is_cancelled(spawn) {
        return Ok(Outcome {
            exit: Exit::Cancelled,
            stdout: Vec::new(),
            stderr: Vec::new(),
            stdout_truncated: false,
            stderr_truncated: false,
            elapsed: start.elapsed(),
        });
    }
    let program = match &spawn.opened {
        Some(_) => spawn.program.clone(),
        None => resolve_program(spawn)?,
    };
    if let Some(dir) = &spawn.cwd
        && !dir.is_dir()
    {
        return Err(ProcessError::Spawn {
            program,
            source: io::Error::new(
                io::ErrorKind::NotFound,
                format!("working directory {} is not a directory", dir.display()),
            ),
        });
    }
    let io_err = |source| ProcessError::Io {
        program: program.clone(),
        source,
    };
    // Removed once the child has been reaped.
    let temp_cwd = match spawn.cwd {
        Some(_) => None,
        None => Some(
            tempfile::Builder::new()
                .prefix("atip-run-")
                .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
                .tempdir()
                .map_err(io_err)?,
        ),
    };
    let cwd: Option<&Path> = spawn.cwd.as_deref().or(temp_cwd.as_ref().map(|t| t.path()));
    let child = start_child(spawn, &program, cwd)?;
    let mut sup = Supervisor::new(child, spawn, start).map_err(io_err)?;
    let result = sup.supervise().map_err(io_err);
    drop(sup); // kills and reaps whatever is left, even on error
    if let Some(dir) = temp_cwd {
        remove_temp_dir(dir);
    }
    let (exit, stdout, stderr) = result?;
    Ok(Outcome {
        exit,
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        stdout: stdout.buf,
        stderr: stderr.buf,
        elapsed: start.elapsed(),
    })
}

/// The child's environment: the allowlisted variables of the run's environment, then
/// the spawn's own entries (which win over them).
fn child_env(spawn: &Spawn) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = spawn
        .inherit
        .pick(ENV_ALLOWLIST.iter().copied())
        .map(|(name, value)| (name.into(), value.into()))
        .collect();
    env.extend(spawn.env.iter().cloned());
    env
}

/// Starts the child and registers its group: the opened file itself when there is one
/// (the kernel opens it through the descriptor atip holds, whatever the path names by
/// now), in `cwd`, with piped output, stdin piped only when there is input, the
/// environment cleared to [`child_env`]. An opened file that changed since its check is
/// [`ProcessError::Changed`].
fn start_child(
    spawn: &Spawn,
    program: &Path,
    cwd: Option<&Path>,
) -> Result<launch::Started, ProcessError> {
    let via_fd = spawn
        .opened
        .as_ref()
        .map(|o| OsString::from(format!("/proc/self/fd/{}", o.file.as_raw_fd())));
    let env = child_env(spawn);
    let plan = launch::Launch {
        exec: via_fd.as_deref().unwrap_or(program.as_os_str()),
        argv0: program.as_os_str(),
        args: &spawn.args,
        env: &env,
        cwd,
        stdin_piped: spawn.stdin.is_some(),
        opened: spawn.opened.as_ref(),
    };
    // No termination sweep (`kill_started_groups`) runs between the start and the
    // group's registration, so no child escapes it.
    let _gate = groups::spawning();
    let child = spawn_retrying(&plan).map_err(|source| {
        if spawn.opened.is_some() && source.raw_os_error() == Some(sys::CHANGED_ERRNO) {
            ProcessError::Changed {
                program: program.to_owned(),
            }
        } else {
            ProcessError::Spawn {
                program: program.to_owned(),
                source,
            }
        }
    })?;
    groups::register(child.pid);
    Ok(child)
}

fn is_cancelled(spawn: &Spawn) -> bool {
    spawn
        .cancel
        .as_ref()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}

/// An absolute path for `spawn.program`: absolute as given, relative paths with a `/`
/// against atip's working directory (the child runs elsewhere), bare names on PATH (the
/// PATH the child will see: an explicit `PATH` in `spawn.env`, else atip's own).
fn resolve_program(spawn: &Spawn) -> Result<PathBuf, ProcessError> {
    let program = &spawn.program;
    let not_found = |msg: String| ProcessError::Spawn {
        program: program.clone(),
        source: io::Error::new(io::ErrorKind::NotFound, msg),
    };
    if program.as_os_str().is_empty() {
        return Err(not_found("empty program name".into()));
    }
    if program.is_absolute() {
        return Ok(program.clone());
    }
    let cwd = std::env::current_dir().map_err(|source| ProcessError::Spawn {
        program: program.clone(),
        source,
    })?;
    if program.as_os_str().as_bytes().contains(&b'/') {
        return Ok(cwd.join(program));
    }
    let path_var: Option<OsString> = spawn
        .env
        .iter()
        .rev()
        .find(|(name, _)| name.as_os_str() == OsStr::new("PATH"))
        .map(|(_, value)| value.clone())
        .or_else(|| spawn.inherit.var_os("PATH").map(OsStr::to_owned));
    which::which_in(program, path_var, &cwd)
        .map_err(|e| not_found(format!("not found on PATH ({e})")))
}

fn spawn_retrying(plan: &launch::Launch) -> io::Result<launch::Started> {
    let mut attempt = 0;
    loop {
        match launch::start(plan) {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt + 1 < SPAWN_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(5 << attempt));
            }
            other => return other,
        }
    }
}

/// One captured stream: kept bytes, whether more came, and the pipe while still open.
struct Capture {
    pipe: Option<File>,
    buf: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Capture {
    fn empty(cap: usize) -> Capture {
        Capture {
            pipe: None,
            buf: Vec::new(),
            cap,
            truncated: false,
        }
    }

    fn attach(&mut self, pipe: Option<OwnedFd>) -> io::Result<()> {
        if let Some(fd) = pipe {
            sys::set_nonblocking(&fd)?;
            self.pipe = Some(File::from(fd));
        }
        Ok(())
    }

    fn open(&self) -> bool {
        self.pipe.is_some()
    }

    /// Reads what is available (bounded per call); bytes past the cap are dropped.
    fn drain(&mut self, scratch: &mut [u8]) -> io::Result<()> {
        let Some(pipe) = self.pipe.as_mut() else {
            return Ok(());
        };
        for _ in 0..READS_PER_WAKE {
            match pipe.read(scratch) {
                Ok(0) => {
                    self.pipe = None;
                    return Ok(());
                }
                Ok(n) => {
                    let room = self.cap.saturating_sub(self.buf.len());
                    let keep = n.min(room);
                    self.buf.extend_from_slice(&scratch[..keep]);
                    if keep < n {
                        self.truncated = true;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Bytes still to be written to the child's stdin.
struct Feed<'a> {
    pipe: Option<File>,
    data: &'a [u8],
}

impl Feed<'_> {
    /// Writes what the pipe accepts; closes it when done or when the reader is gone.
    fn pump(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        while !self.data.is_empty() {
            match sys::write_no_sigpipe(pipe, self.data) {
                Ok(n) => self.data = &self.data[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // EPIPE and friends: the child does not want the rest.
                Err(_) => break,
            }
        }
        self.pipe = None;
    }
}

/// Where the end of one child stands.
struct Phase {
    /// Set once atip starts killing: the reason reported instead of the status.
    verdict: Option<Exit>,
    /// When SIGKILL follows the SIGTERM of a verdict.
    kill_at: Option<Instant>,
    /// When SIGKILL was sent.
    killed_at: Option<Instant>,
    /// When the direct child was seen to have exited.
    exited_at: Option<Instant>,
    /// The poll slice while no pidfd tells of the exit.
    fallback: Duration,
}

/// Watches one child until it has exited and its pipes are drained or abandoned.
struct Supervisor<'a> {
    /// Whether the child still waits to be reaped.
    unreaped: bool,
    pid: libc::pid_t,
    pidfd: Option<OwnedFd>,
    spawn: &'a Spawn,
    start: Instant,
    out: Capture,
    err: Capture,
    feed: Feed<'a>,
}

impl<'a> Supervisor<'a> {
    fn new(child: launch::Started, spawn: &'a Spawn, start: Instant) -> io::Result<Supervisor<'a>> {
        let pid = child.pid;
        let (out, err, stdin) = (Some(child.stdout), Some(child.stderr), child.stdin);
        // Own the child before anything can fail, so Drop cleans up.
        let mut sup = Supervisor {
            unreaped: true,
            pid,
            pidfd: child_pidfd(pid),
            spawn,
            start,
            out: Capture::empty(spawn.stdout_cap),
            err: Capture::empty(spawn.stderr_cap),
            feed: Feed {
                pipe: None,
                data: spawn.stdin.as_deref().unwrap_or_default(),
            },
        };
        sup.out.attach(out)?;
        sup.err.attach(err)?;
        if let Some(fd) = stdin {
            sys::set_nonblocking(&fd)?;
            sup.feed.pipe = Some(File::from(fd));
            sup.feed.pump();
        }
        Ok(sup)
    }

    /// The supervision loop; returns how the child ended and the two captures.
    fn supervise(&mut self) -> io::Result<(Exit, Capture, Capture)> {
        let deadline = self.start.checked_add(self.spawn.timeout);
        let mut scratch = vec![0u8; CHUNK];
        let mut phase = Phase {
            verdict: None,
            kill_at: None,
            killed_at: None,
            exited_at: None,
            fallback: Duration::from_millis(1),
        };
        loop {
            let now = Instant::now();
            if self.advance(&mut phase, now, deadline)? {
                break;
            }
            self.wait(&mut phase, now, deadline, &mut scratch)?;
        }
        let status = if phase.exited_at.is_some() {
            self.reap()?
        } else {
            None
        };
        let exit = match (phase.verdict, status) {
            (Some(why), _) => why,
            (None, Some(status)) => exit_of(status),
            // No verdict means the loop ended on the child's exit, so a status exists;
            // report a generic failure rather than panic should that ever break.
            (None, None) => Exit::Code(-1),
        };
        let out = std::mem::replace(&mut self.out, Capture::empty(0));
        let err = std::mem::replace(&mut self.err, Capture::empty(0));
        Ok((exit, out, err))
    }

    /// Moves the end along at `now`: notes the child's exit (killing what is left of its
    /// group), then waits for the pipes to drain; before that, sends SIGTERM on a timeout
    /// or cancel and SIGKILL after the grace. True when supervision is over.
    fn advance(
        &mut self,
        phase: &mut Phase,
        now: Instant,
        deadline: Option<Instant>,
    ) -> io::Result<bool> {
        if phase.exited_at.is_none() && sys::exited_unreaped(self.pid)? {
            // The direct child is gone: nothing of its group may outlive it.
            sys::kill_group(self.pid, libc::SIGKILL);
            if phase.verdict.is_some() {
                sys::signal_session(self.pid, libc::SIGKILL);
            }
            phase.exited_at = Some(now);
            self.feed.pipe = None;
        }
        if let Some(at) = phase.exited_at {
            return Ok(self.drained_or_abandoned(at, now));
        }
        if phase.verdict.is_none() {
            let why = if is_cancelled(self.spawn) {
                Some(Exit::Cancelled)
            } else if deadline.is_some_and(|d| now >= d) {
                Some(Exit::TimedOut)
            } else {
                None
            };
            if let Some(why) = why {
                phase.verdict = Some(why);
                sys::kill_group(self.pid, libc::SIGTERM);
                sys::signal_session(self.pid, libc::SIGTERM);
                phase.kill_at = Some(later(now, self.spawn.kill_grace));
                self.feed.pipe = None;
            }
        }
        if phase.killed_at.is_none() && phase.kill_at.is_some_and(|k| now >= k) {
            sys::kill_group(self.pid, libc::SIGKILL);
            sys::signal_session(self.pid, libc::SIGKILL);
            phase.killed_at = Some(now);
        }
        // Unkillable for now past KILL_WAIT; Drop reaps it in the background.
        Ok(phase.killed_at.is_some_and(|k| now >= k + KILL_WAIT))
    }

    /// After the child's exit (at `at`): done when both pipes are closed; once the drain
    /// window has passed, a descendant still holding a pipe goes, wherever it moved, and
    /// so does anything else left in the tool's session.
    fn drained_or_abandoned(&self, at: Instant, now: Instant) -> bool {
        if !self.out.open() && !self.err.open() {
            return true;
        }
        if now >= at + DRAIN_WINDOW {
            let held: Vec<u64> = [&self.out.pipe, &self.err.pipe]
                .into_iter()
                .flatten()
                .filter_map(sys::pipe_inode)
                .collect();
            sys::signal_pipe_writers(&held, libc::SIGKILL);
            sys::signal_session(self.pid, libc::SIGKILL);
            return true;
        }
        false
    }

    /// Sleeps until a pipe is ready, the child exits or the next step of the end is due,
    /// then reads the output and feeds stdin.
    fn wait(
        &mut self,
        phase: &mut Phase,
        now: Instant,
        deadline: Option<Instant>,
        scratch: &mut [u8],
    ) -> io::Result<()> {
        let (mut fds, slots) = self.poll_set(phase);
        sys::poll(&mut fds, self.wake_in(phase, now, deadline))?;
        let ready = |slot: usize| slots[slot] != usize::MAX && fds[slots[slot]].revents != 0;
        if ready(0) {
            self.out.drain(scratch)?;
        }
        if ready(1) {
            self.err.drain(scratch)?;
        }
        if ready(2) {
            self.feed.pump();
        }
        Ok(())
    }

    /// What to poll, and where each of out, err, stdin and the pidfd sits in it
    /// (`usize::MAX`: not polled). Pipes are read before the deadline and after the
    /// child's exit (drain window), never while a killed child is dying: the result must
    /// not wait on output.
    fn poll_set(&self, phase: &Phase) -> (Vec<libc::pollfd>, [usize; 4]) {
        let reading = phase.exited_at.is_some() || phase.verdict.is_none();
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(4);
        let mut slots = [usize::MAX; 4]; // out, err, stdin, pidfd
        let mut add = |slot: usize, fd: i32, events: i16| {
            slots[slot] = fds.len();
            fds.push(libc::pollfd {
                fd,
                events,
                revents: 0,
            });
        };
        if reading {
            if let Some(p) = &self.out.pipe {
                add(0, p.as_raw_fd(), libc::POLLIN);
            }
            if let Some(p) = &self.err.pipe {
                add(1, p.as_raw_fd(), libc::POLLIN);
            }
        }
        if let Some(p) = &self.feed.pipe {
            add(2, p.as_raw_fd(), libc::POLLOUT);
        }
        if phase.exited_at.is_none()
            && let Some(p) = &self.pidfd
        {
            add(3, p.as_raw_fd(), libc::POLLIN);
        }
        (fds, slots)
    }

    /// How long the poll may sleep: until the next step of the end is due, a cancel check,
    /// or (without a pidfd to tell of the exit) a slice that doubles up to
    /// [`FALLBACK_SLICE`].
    fn wake_in(&self, phase: &mut Phase, now: Instant, deadline: Option<Instant>) -> Duration {
        let mut wake: Option<Instant> = None;
        let mut sooner = |t: Instant| wake = Some(wake.map_or(t, |w| w.min(t)));
        match (phase.exited_at, phase.verdict, phase.killed_at) {
            (Some(at), _, _) => sooner(at + DRAIN_WINDOW),
            (None, None, _) => {
                if let Some(d) = deadline {
                    sooner(d);
                }
                if self.spawn.cancel.is_some() {
                    sooner(now + CANCEL_SLICE);
                }
            }
            (None, Some(_), None) => sooner(phase.kill_at.unwrap_or(now)),
            (None, Some(_), Some(k)) => sooner(k + KILL_WAIT),
        }
        if phase.exited_at.is_none() && self.pidfd.is_none() {
            sooner(now + phase.fallback);
            phase.fallback = (phase.fallback * 2).min(FALLBACK_SLICE);
        }
        wake.map_or(Duration::from_secs(3600), |w| {
            w.saturating_duration_since(Instant::now())
        })
    }

    /// Collects the exit status of a child known to have exited.
    fn reap(&mut self) -> io::Result<Option<ExitStatus>> {
        if !std::mem::take(&mut self.unreaped) {
            return Ok(None);
        }
        // Unregistered while still a zombie: its pid cannot have been reused.
        groups::unregister(self.pid);
        sys::reap(self.pid).map(Some)
    }
}

impl Drop for Supervisor<'_> {
    fn drop(&mut self) {
        if std::mem::take(&mut self.unreaped) {
            sys::kill_group(self.pid, libc::SIGKILL);
            sys::signal_session(self.pid, libc::SIGKILL);
            // Unregistered before it is reaped (while its pid cannot be reused); a
            // process stuck in the kernel stays registered until its reaper has it.
            let exited = !matches!(sys::exited_unreaped(self.pid), Ok(false));
            if exited {
                groups::unregister(self.pid);
            }
            match sys::try_reap(self.pid) {
                Ok(Some(_)) | Err(_) => {
                    if !exited {
                        groups::unregister(self.pid);
                    }
                }
                // Stuck in the kernel; reap it whenever it finally dies.
                Ok(None) => {
                    let pid = self.pid;
                    std::thread::spawn(move || {
                        let _ = sys::wait_exit_unreaped(pid);
                        groups::unregister(pid);
                        let _ = sys::reap(pid);
                    });
                }
            }
        }
    }
}

/// Kills every process group atip started that is still registered (children not yet
/// reaped, MCP servers still guarded), and every other direct child of atip with its
/// group, for a process about to exit because of a termination signal: SIGTERM, up to
/// `grace` for them to go, then SIGKILL. From then on no new child starts (a spawn in
/// progress finishes registering first, then the next one waits forever), so nothing
/// started later can outlive atip either. Returns how many groups were signalled.
pub fn terminate_all(grace: Duration) -> usize {
    groups::terminate_all(grace)
}

/// Whether a child atip started is still registered (not reaped, or a guarded server).
pub fn started_alive() -> bool {
    groups::any()
}

/// The process groups of children atip started and has not reaped yet.
///
/// A group is registered between the start and the first look at the child, under a read
/// lock that [`terminate_all`] takes for writing, and unregistered while its leader is
/// still an unreaped zombie (so the group id cannot have been reused by then).
pub(crate) mod groups {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Mutex, RwLock, RwLockReadGuard};
    use std::time::{Duration, Instant};

    static LIVE: Mutex<Vec<libc::pid_t>> = Mutex::new(Vec::new());
    static GATE: RwLock<()> = RwLock::new(());
    static TERMINATING: AtomicBool = AtomicBool::new(false);
    /// Held by the one `terminate_all` at work: a second caller (the signal watcher and
    /// `main` at once) waits until the first is done, then finds little left to kill.
    static TERMINATE: Mutex<()> = Mutex::new(());

    pub(super) fn any() -> bool {
        !LIVE.lock().unwrap_or_else(|e| e.into_inner()).is_empty()
    }

    /// Held while a child is started and registered.
    pub(crate) fn spawning() -> RwLockReadGuard<'static, ()> {
        GATE.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the group led by `pid` (the child calls `setsid`, so its pid is its group).
    pub(crate) fn register(pid: libc::pid_t) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.push(pid);
        if TERMINATING.load(Ordering::SeqCst) {
            super::sys::kill_group(pid, libc::SIGKILL);
            super::sys::kill_pid(pid, libc::SIGKILL);
        }
    }

    /// Forgets the group led by `pid`; call before its leader is reaped.
    pub(crate) fn unregister(pid: libc::pid_t) {
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = live.iter().position(|&p| p == pid) {
            live.swap_remove(i);
        }
    }

    pub(super) fn terminate_all(grace: Duration) -> usize {
        let _one = TERMINATE.lock().unwrap_or_else(|e| e.into_inner());
        if !TERMINATING.swap(true, Ordering::SeqCst) {
            // Never released: the process is about to exit; no child starts after this.
            std::mem::forget(GATE.write().unwrap_or_else(|e| e.into_inner()));
        }
        let mut targets: Vec<libc::pid_t> = LIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for child in super::sys::direct_children() {
            if !targets.contains(&child) {
                targets.push(child);
            }
        }
        for &pid in &targets {
            super::sys::kill_group(pid, libc::SIGTERM);
            super::sys::signal_session(pid, libc::SIGTERM);
            super::sys::kill_pid(pid, libc::SIGTERM);
        }
        let until = Instant::now() + grace;
        while Instant::now() < until && targets.iter().any(|&p| super::sys::group_alive(p)) {
            std::thread::sleep(Duration::from_millis(5));
        }
        for &pid in &targets {
            super::sys::kill_group(pid, libc::SIGKILL);
            super::sys::signal_session(pid, libc::SIGKILL);
            super::sys::kill_pid(pid, libc::SIGKILL);
        }
        targets.len()
    }
}

/// The child's pidfd, unless a unit test forces the portable fallback.
fn child_pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    #[cfg(test)]
    if tests::NO_PIDFD.load(Ordering::SeqCst) {
        return None;
    }
    sys::pidfd_open(pid)
}

/// Removes the child's temporary working directory, even when the tool left
/// directories without write or search permission in it (symlinks are never followed).
fn remove_temp_dir(dir: tempfile::TempDir) {
    let path = dir.path().to_path_buf();
    if dir.close().is_ok() || !path.exists() {
        return;
    }
    unlock_tree(&path, 0);
    let _ = std::fs::remove_dir_all(&path);
}

/// Gives the owner rwx on `dir` and every directory below it (not through symlinks), so
/// the tree can be removed. Each directory is unlocked before it is read.
fn unlock_tree(dir: &Path, depth: usize) {
    use std::os::unix::fs::PermissionsExt;
    if depth > 256 {
        return;
    }
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            unlock_tree(&entry.path(), depth + 1);
        }
    }
}

/// `t + d`, saturating far in the future instead of panicking on absurd durations.
fn later(t: Instant, d: Duration) -> Instant {
    t.checked_add(d)
        .unwrap_or_else(|| t + Duration::from_secs(365 * 24 * 3600))
}

fn exit_of(status: ExitStatus) -> Exit {
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(-1),
    }
}

#[cfg(test)]
mod tests {
    //! The supervision loop without a pidfd (the path other Unixes and old kernels take);
    //! the integration tests in tests/process.rs cover the rest.
    use super::*;
    use std::sync::atomic::AtomicBool;

    pub(super) static NO_PIDFD: AtomicBool = AtomicBool::new(false);

    fn sh(script: &str, timeout: Duration) -> Spawn {
        Spawn::new("/bin/sh", ["-c", script], timeout)
    }

    #[test]
    fn an_opened_file_runs_even_once_the_path_names_another() {
        use std::os::unix::fs::OpenOptionsExt;
        let root = tempfile::tempdir().unwrap();
        for o_path in [false, true] {
            let dir = root.path().join(format!("d{o_path}"));
            std::fs::create_dir(&dir).unwrap();
            let tool = dir.join("tool");
            std::fs::copy("/bin/echo", &tool).unwrap();
            let mut open = std::fs::OpenOptions::new();
            open.read(true);
            if o_path {
                // Execute-only binaries are opened this way (no read access needed).
                open.custom_flags(libc::O_PATH);
            }
            let opened = Opened::new(open.open(&tool).unwrap()).unwrap();
            assert!(opened.unchanged());
            // The path now names a different program (its directory was moved away,
            // which leaves the opened file itself untouched): the opened file runs.
            std::fs::rename(&dir, root.path().join(format!("old{o_path}"))).unwrap();
            std::fs::create_dir(&dir).unwrap();
            std::fs::copy("/bin/false", &tool).unwrap();
            let mut spawn = Spawn::new(&tool, ["from", "the", "fd"], Duration::from_secs(10));
            spawn.opened = Some(opened);
            let out = run(&spawn).unwrap();
            assert_eq!(out.exit, Exit::Code(0), "O_PATH {o_path}: {out:?}");
            assert_eq!(out.stdout, b"from the fd\n");
        }
        let tool = root.path().join("tool");
        std::fs::copy("/bin/echo", &tool).unwrap();
        // Replaced by a rename: the checked file lost a link (its ctime moved), so the
        // child refuses to run it; what was renamed in does not run either.
        let opened = Opened::new(File::open(&tool).unwrap()).unwrap();
        let other = root.path().join("other");
        std::fs::copy("/bin/false", &other).unwrap();
        std::fs::rename(&other, &tool).unwrap();
        let mut spawn = Spawn::new(&tool, ["ran"], Duration::from_secs(10));
        spawn.opened = Some(opened);
        assert!(matches!(run(&spawn), Err(ProcessError::Changed { .. })));
        // Written in place after it was opened: refused in the child, nothing runs.
        let opened = Opened::new(File::open(&tool).unwrap()).unwrap();
        let f = std::fs::OpenOptions::new()
            .append(true)
            .open(&tool)
            .unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
        drop(f);
        assert!(!opened.unchanged());
        let mut spawn = Spawn::new(&tool, ["ran"], Duration::from_secs(10));
        spawn.opened = Some(opened);
        assert!(matches!(run(&spawn), Err(ProcessError::Changed { .. })));
    }

    #[test]
    fn fallback_without_pidfd_handles_exit_timeout_and_grandchildren() {
        NO_PIDFD.store(true, Ordering::SeqCst);
        let short = Duration::from_millis(300);

        let out = run(&sh("echo hi; exit 4", Duration::from_secs(10))).unwrap();
        assert_eq!(out.exit, Exit::Code(4));
        assert_eq!(out.stdout, b"hi\n");

        // The child closes its pipes long before it exits: only the exit check ends it.
        let out = run(&sh("exec >&- 2>&-; sleep 0.2", Duration::from_secs(10))).unwrap();
        assert_eq!(out.exit, Exit::Code(0));
        assert!(out.elapsed >= Duration::from_millis(200));
        assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);

        let out = run(&sh("sleep 30", short)).unwrap();
        assert_eq!(out.exit, Exit::TimedOut);
        assert!(out.elapsed < short + DEFAULT_KILL_GRACE + Duration::from_secs(2));

        let out = run(&sh("sleep 30 & echo $!", Duration::from_secs(10))).unwrap();
        assert_eq!(out.exit, Exit::Code(0));
        assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
        let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        // Dead (possibly a zombie awaiting init): a zombie still accepts signal 0, so
        // look at its state; the kill is sent, its delivery is awaited (bounded).
        let dead = || {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .to_owned();
            (stat.is_empty() || state.starts_with('Z'), stat)
        };
        let until = Instant::now() + Duration::from_secs(10);
        while !dead().0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        let (gone, stat) = dead();
        assert!(gone, "grandchild alive: {stat}");

        // Cancelled once the child runs (it says so in a file), not after a guessed delay.
        let work = tempfile::tempdir().unwrap();
        let flag = Arc::new(AtomicBool::new(false));
        let mut spawn = sh("touch started; sleep 30", Duration::from_secs(10));
        spawn.cwd = Some(work.path().to_path_buf());
        spawn.cancel = Some(flag.clone());
        let started = work.path().join("started");
        let setter = std::thread::spawn(move || {
            let until = Instant::now() + Duration::from_secs(9);
            while !started.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            flag.store(true, Ordering::SeqCst);
        });
        let out = run(&spawn).unwrap();
        setter.join().unwrap();
        assert_eq!(out.exit, Exit::Cancelled);
        assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
        NO_PIDFD.store(false, Ordering::SeqCst);
    }
}
