//! How atip ends when its host ends it: SIGINT, SIGTERM or SIGHUP.
//!
//! Every tool and MCP server atip starts runs in a session of its own, so a signal sent
//! to atip (or to the terminal's foreground group) never reaches them: atip must kill
//! them itself, or they outlive it. The handler installed here only records the signal,
//! sets the shared cancel flag and wakes a watcher thread. Then:
//!
//! - [`Mode::WindDown`] (`exec`, `chat`, `scan`, `sync`): running calls see the flag and
//!   are killed with their process groups; the command ends as it would on a cancel,
//!   printing what it has, and `main` exits with [`status`] after [`finish`] killed
//!   anything left. Should the command not have ended within [`WIND_DOWN`] (a second
//!   signal cuts that short), the watcher kills every process group atip started and
//!   exits with that status itself.
//! - [`Mode::Now`] (`mcp`: the stdio and HTTP servers, `mcp call`…): a server has
//!   nothing to print for its host, so the watcher kills every process group atip
//!   started (the tools it runs, the MCP servers it talks to) and exits at once.
//!
//! The status is 128 + the signal's number, as a shell reports it: 130 (SIGINT), 143
//! (SIGTERM), 129 (SIGHUP); spec/exit-codes.md, "Signals".

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// How long a command may take to wind down after the first signal.
pub const WIND_DOWN: Duration = Duration::from_secs(2);
/// Grace between SIGTERM and SIGKILL for the groups killed on the way out.
const GRACE: Duration = Duration::from_millis(200);

/// What the watcher does once a signal came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Let the command cancel its calls and finish; kill and exit after [`WIND_DOWN`].
    WindDown,
    /// Kill every started process group and exit now.
    Now,
}

/// The first termination signal received (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Write end of the pipe that wakes the watcher (-1 until installed).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The installed [`Mode`], as a number (0 = wind down, 1 = now).
static MODE: AtomicU8 = AtomicU8::new(0);
static FLAG: OnceLock<Arc<AtomicBool>> = OnceLock::new();

extern "C" fn on_signal(sig: libc::c_int) {
    // Async-signal-safe only: atomics and write(2); errno is kept for the interrupted code.
    // SAFETY: errno is thread-local; write(2) on a pipe we own.
    unsafe {
        let saved = *libc::__errno_location();
        let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
        if let Some(flag) = FLAG.get() {
            flag.store(true, Ordering::SeqCst);
        }
        let fd = WAKE.load(Ordering::SeqCst);
        if fd >= 0 {
            let byte = [sig as u8];
            libc::write(fd, byte.as_ptr().cast(), 1);
        }
        *libc::__errno_location() = saved;
    }
}

/// Installs the handler for SIGINT, SIGTERM and SIGHUP (once; a later call may only
/// switch to [`Mode::Now`]) and returns the cancel flag it sets.
pub fn install(mode: Mode) -> Arc<AtomicBool> {
    if mode == Mode::Now {
        MODE.store(1, Ordering::SeqCst);
    }
    let mut fresh = false;
    let flag = FLAG
        .get_or_init(|| {
            fresh = true;
            Arc::new(AtomicBool::new(false))
        })
        .clone();
    if fresh {
        start_watcher();
        // SAFETY: the handler is async-signal-safe (see `on_signal`).
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                // A signal the host set to be ignored (`nohup`, a background job's
                // SIGINT) stays ignored: that was the host's way of saying "not this".
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                    && old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                libc::sigaction(sig, &act, std::ptr::null_mut());
            }
        }
    }
    flag
}

/// The signal that ended the run, if one came.
pub fn received() -> Option<i32> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// At the end of `main`: when a signal came, kills whatever atip started that is still
/// there and returns the status to exit with; else kills only leftovers (none, unless
/// a call was abandoned) and returns `None`.
pub fn finish() -> Option<atip::output::ExitStatus> {
    let sig = received();
    if sig.is_some() || atip::process::started_alive() {
        atip::process::terminate_all(GRACE);
    }
    sig.map(atip::output::ExitStatus::Signal)
}

/// The thread that acts on a signal (the handler itself may do almost nothing).
fn start_watcher() {
    let mut fds = [-1; 2];
    // SAFETY: pipe2 fills `fds` on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return; // no watcher: the flag still cancels, and `finish` still kills
    }
    let [read_end, write_end] = fds;
    WAKE.store(write_end, Ordering::SeqCst);
    let spawned = std::thread::Builder::new()
        .name("atip-signals".into())
        .spawn(move || {
            wait_byte(read_end, None);
            if MODE.load(Ordering::SeqCst) == 0 {
                // The command winds down and exits by itself; a second signal, or
                // the command taking too long, ends it here.
                wait_byte(read_end, Some(WIND_DOWN));
            }
            atip::process::terminate_all(GRACE);
            let sig = received().unwrap_or(libc::SIGTERM);
            std::process::exit(atip::output::ExitStatus::Signal(sig).code().into());
        });
    if spawned.is_err() {
        WAKE.store(-1, Ordering::SeqCst);
    }
}

/// Waits for one byte on `fd`, at most `limit` (forever when `None`).
fn wait_byte(fd: i32, limit: Option<Duration>) {
    let deadline = limit.map(|l| std::time::Instant::now() + l);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return;
                }
                left.as_millis().min(i32::MAX as u128) as i32
            }
        };
        let mut pfd = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd; read into a local byte.
        unsafe {
            if libc::poll(&mut pfd, 1, ms) == 1 {
                let mut b = 0u8;
                if libc::read(fd, (&mut b as *mut u8).cast(), 1) == 1 {
                    return;
                }
            }
        }
    }
}
