//! Thin, audited wrappers over the Unix calls the supervisor needs (setsid, group
//! signals, non-reaping exit checks, pidfd, poll, O_NONBLOCK).
//!
//! Owns the raw libc calls of the process module. Must not hold policy: no deadlines,
//! no caps, no decisions about which signal to send; `super` decides.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

/// Runs in the forked child between `fork` and `exec` (std calls it after wiring fds
/// 0–2). Only async-signal-safe calls are allowed here: no allocation, no locks.
///
/// - `setsid`: new session and process group led by the child; no controlling terminal,
///   so the tool cannot read from or signal the user's terminal, and `kill(-pid)`
///   reaches everything it forks that does not escape on its own.
/// - Empty signal mask and default dispositions: ignored signals survive `exec`, and a
///   tool that inherited "SIGTERM ignored" from atip's parent would defeat the timeout.
/// - No core dumps: a probed binary crashing must not write a core file.
/// - Close-on-exec on every descriptor above 2 (Linux 5.11+, best effort): descriptors
///   some library opened without `O_CLOEXEC` must not leak into the tool.
pub(super) fn child_setup() -> io::Result<()> {
    // SAFETY: all calls below are async-signal-safe syscall wrappers operating on
    // locals or on process-wide state of the child only.
    unsafe {
        if libc::setsid() == -1 {
            return Err(io::Error::last_os_error());
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::pthread_sigmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        reset_signal_dispositions();
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        #[cfg(target_os = "linux")]
        libc::syscall(
            libc::SYS_close_range,
            3 as libc::c_uint,
            libc::c_uint::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        );
    }
    Ok(())
}

/// Sets every signal atip may have inherited as ignored back to its default. Handlers
/// are reset by `exec` anyway; only `SIG_IGN` survives it.
///
/// On these 64-signal Linux targets the raw `rt_sigaction` syscall also reaches 32 and
/// 33, which glibc's wrappers refuse (they are its internal signals), and which glibc's
/// `posix_spawn` (std's fast path) leaves ignored in processes it starts. An all-zero
/// kernel `struct sigaction` means SIG_DFL, no flags, empty mask on every layout.
#[cfg(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
))]
unsafe fn reset_signal_dispositions() {
    let dfl = [0u64; 4];
    for sig in 1..=64 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: `dfl` outlives the call; the kernel validates `sig`.
            unsafe {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    dfl.as_ptr(),
                    std::ptr::null_mut::<u64>(),
                    8usize,
                );
            }
        }
    }
}

/// Sets every standard signal atip may have inherited as ignored back to its default.
#[cfg(not(all(
    target_os = "linux",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64"
    )
)))]
unsafe fn reset_signal_dispositions() {
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: async-signal-safe; invalid numbers just fail.
            unsafe {
                libc::signal(sig, libc::SIG_DFL);
            }
        }
    }
}

/// What identifies a file's contents for the "still the checked file" test: device,
/// inode, size, and modification and status-change times (any write changes these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StatKey {
    dev: libc::dev_t,
    ino: libc::ino_t,
    size: libc::off_t,
    mtime: (libc::time_t, libc::c_long),
    ctime: (libc::time_t, libc::c_long),
}

fn key_of(st: &libc::stat) -> StatKey {
    StatKey {
        dev: st.st_dev,
        ino: st.st_ino,
        size: st.st_size,
        mtime: (st.st_mtime, st.st_mtime_nsec),
        ctime: (st.st_ctime, st.st_ctime_nsec),
    }
}

/// The [`StatKey`] of an open file.
pub(super) fn stat_key(fd: &impl AsRawFd) -> io::Result<StatKey> {
    // SAFETY: fstat into a zeroed local on a descriptor the caller owns.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd.as_raw_fd(), &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(key_of(&st))
    }
}

/// The same file on a descriptor numbered 3 or above (close-on-exec), so that wiring the
/// child's stdin, stdout and stderr can never replace it (atip may run with 0–2 closed).
pub(super) fn above_stdio(file: std::fs::File) -> io::Result<std::fs::File> {
    if file.as_raw_fd() > 2 {
        return Ok(file);
    }
    // SAFETY: F_DUPFD_CLOEXEC returns a fresh descriptor we then own.
    let fd = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 3) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is fresh and owned by nobody else.
    Ok(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// The error number a child reports when its opened executable changed since the check
/// (it never occurs as an `execve` error of the path `/proc/self/fd/N`).
pub(super) const CHANGED_ERRNO: i32 = libc::ESTALE;

/// Runs in the child just before `exec` of an opened executable: the file must still have
/// the `stat` it had when it was checked. A `#!` script keeps its descriptor across
/// `exec` (the interpreter opens `/proc/self/fd/N`, the name the kernel hands it);
/// a binary does not need it. Async-signal-safe: fstat and fcntl only.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) fn exec_opened_check(fd: i32, want: &StatKey, script: bool) -> io::Result<()> {
    // SAFETY: fstat into a zeroed local; fcntl on a descriptor inherited from atip.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return Err(io::Error::last_os_error());
        }
        if key_of(&st) != *want {
            return Err(io::Error::from_raw_os_error(CHANGED_ERRNO));
        }
        if script && libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sends `sig` to one process. Never to pid 0, -1 or init.
pub(super) fn kill_pid(pid: libc::pid_t, sig: libc::c_int) {
    if pid > 1 {
        // SAFETY: plain syscall on a positive pid.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// Whether the group `pgid`, or a process `pgid`, still exists (zombies count).
pub(super) fn group_alive(pgid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks for existence.
    pgid > 1 && unsafe { libc::kill(-pgid, 0) == 0 || libc::kill(pgid, 0) == 0 }
}

/// `waitid` on the child `pid` with `WEXITED | WNOWAIT | flags`, retried on EINTR:
/// the pid it reports (0 when `WNOHANG` found nothing yet). The zombie stays unreaped.
fn waitid_unreaped(pid: libc::pid_t, flags: libc::c_int) -> io::Result<libc::pid_t> {
    loop {
        // SAFETY: `info` is a zeroed out-parameter owned by this frame.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT | flags,
            )
        };
        if rc == 0 {
            // SAFETY: waitid filled (or left zeroed) the structure.
            return Ok(unsafe { info.si_pid() });
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// `waitpid` on the child `pid`, retried on EINTR: its status once reaped, `None` when
/// `WNOHANG` found it still running.
fn waitpid(pid: libc::pid_t, flags: libc::c_int) -> io::Result<Option<ExitStatus>> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `status` is a local out-parameter.
        let rc = unsafe { libc::waitpid(pid, &mut status, flags) };
        if rc == pid {
            return Ok(Some(ExitStatus::from_raw(status)));
        }
        if rc == 0 {
            return Ok(None);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
    }
}

/// Reaps the child `pid`, blocking until it has exited.
pub(super) fn reap(pid: libc::pid_t) -> io::Result<ExitStatus> {
    waitpid(pid, 0).map(|status| status.unwrap_or_else(|| ExitStatus::from_raw(0)))
}

/// Reaps the child `pid` if it has exited; `None` while it runs.
pub(super) fn try_reap(pid: libc::pid_t) -> io::Result<Option<ExitStatus>> {
    waitpid(pid, libc::WNOHANG)
}

/// Blocks until `pid` (a child of atip) has exited, without reaping it.
pub(super) fn wait_exit_unreaped(pid: libc::pid_t) -> io::Result<()> {
    waitid_unreaped(pid, 0).map(drop)
}

/// Every live process whose parent is atip (Linux: read from /proc; elsewhere none).
pub(super) fn direct_children() -> Vec<libc::pid_t> {
    let mut out = Vec::new();
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscall.
        let me = unsafe { libc::getpid() };
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return out;
        };
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if stat_field(&stat, 1) == Some(me) {
                out.push(pid);
            }
        }
    }
    out
}

/// Sends `sig` to the process group `pgid`. A group that no longer exists is fine.
pub(super) fn kill_group(pgid: libc::pid_t, sig: libc::c_int) {
    if pgid <= 1 {
        return; // never signal "every process" or init's group by mistake
    }
    // SAFETY: plain syscall; a negative pid addresses the group.
    unsafe {
        libc::kill(-pgid, sig);
    }
}

/// Whether the child `pid` has exited, without reaping it: while the zombie stays
/// unreaped its pid (= its group id) cannot be reused, so signalling the group after
/// this returns true still reaches only the tool's own processes.
pub(super) fn exited_unreaped(pid: libc::pid_t) -> io::Result<bool> {
    match waitid_unreaped(pid, libc::WNOHANG) {
        Ok(reported) => Ok(reported == pid),
        // Already reaped by someone else (e.g. SIGCHLD set to SIG_IGN): gone.
        Err(e) if e.raw_os_error() == Some(libc::ECHILD) => Ok(true),
        Err(e) => Err(e),
    }
}

/// A descriptor that becomes readable when `pid` exits (Linux 5.3+), or `None`, in
/// which case the supervisor falls back to short poll slices.
pub(super) fn pidfd_open(pid: libc::pid_t) -> Option<OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscall; on success we own the returned descriptor.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0 as libc::c_uint) };
        if fd >= 0 {
            // SAFETY: fd is a fresh descriptor owned by nobody else.
            return Some(unsafe {
                <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as std::os::fd::RawFd)
            });
        }
        None
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Puts a descriptor into non-blocking mode.
pub(super) fn set_nonblocking(fd: &impl AsRawFd) -> io::Result<()> {
    let fd = fd.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags == -1 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == -1 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `poll(2)` over `fds` for at most `wait`; EINTR counts as "nothing ready".
pub(super) fn poll(fds: &mut [libc::pollfd], wait: Duration) -> io::Result<()> {
    let ms = wait.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid slice of pollfd for its whole length.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if rc == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EINTR) {
            return Err(err);
        }
        for fd in fds.iter_mut() {
            fd.revents = 0;
        }
    }
    Ok(())
}

/// Sends `sig` to every process of session `sid` except its leader (which the group
/// signal reaches). Catches descendants that moved to a process group of their own
/// (`setpgid`, shell job control) but stayed in the tool's session; only
/// `setsid` leaves it. The leader is still unreaped when this runs, so no other
/// session can carry its id. Linux only (reads /proc); elsewhere a no-op.
pub(super) fn signal_session(sid: libc::pid_t, sig: libc::c_int) {
    #[cfg(target_os = "linux")]
    {
        use std::io::Read;
        if sid <= 1 {
            return;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return;
        };
        let mut buf = Vec::with_capacity(512);
        for entry in dir.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            if pid == sid {
                continue;
            }
            buf.clear();
            let Ok(mut stat) = std::fs::File::open(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if stat.read_to_end(&mut buf).is_ok() && stat_session(&buf) == Some(sid) {
                // SAFETY: plain syscall on a positive pid.
                unsafe {
                    libc::kill(pid, sig);
                }
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (sid, sig);
    }
}

/// The inode of a pipe descriptor (both ends of a pipe share it).
pub(super) fn pipe_inode(fd: &impl AsRawFd) -> Option<u64> {
    // SAFETY: fstat into a zeroed local on a descriptor we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstat(fd.as_raw_fd(), &mut st) == 0).then_some(st.st_ino as u64)
    }
}

/// Sends `sig` to every other process that holds the *write* end of one of the pipes
/// `inodes` (atip holds the read ends). Only the tool's descendants can hold them: they
/// inherited the tool's stdout/stderr, whatever session or group they moved to. This is
/// what reaches a grandchild that escaped with `setsid` but kept the pipe. Read ends are
/// skipped on purpose: a sibling child forked by another atip thread briefly holds
/// copies of atip's read ends until its `exec`. Linux only (reads /proc); elsewhere a
/// no-op.
pub(super) fn signal_pipe_writers(inodes: &[u64], sig: libc::c_int) {
    #[cfg(target_os = "linux")]
    {
        if inodes.is_empty() {
            return;
        }
        // SAFETY: plain syscall.
        let me = unsafe { libc::getpid() };
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return;
        };
        for proc_entry in procs.flatten() {
            let name = proc_entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<libc::pid_t>().ok()) else {
                continue;
            };
            if pid == me {
                continue;
            }
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                continue; // gone, or another user's process
            };
            for fd in fds.flatten() {
                let Ok(target) = std::fs::read_link(fd.path()) else {
                    continue;
                };
                let Some(inode) = pipe_link_inode(target.as_os_str().as_encoded_bytes()) else {
                    continue;
                };
                if !inodes.contains(&inode) {
                    continue;
                }
                let info = format!("/proc/{pid}/fdinfo/{}", fd.file_name().to_string_lossy());
                if std::fs::read_to_string(info)
                    .ok()
                    .and_then(|text| fdinfo_flags(&text))
                    .is_some_and(|flags| flags & libc::O_ACCMODE != libc::O_RDONLY)
                {
                    // SAFETY: plain syscall on a positive pid.
                    unsafe {
                        libc::kill(pid, sig);
                    }
                    break;
                }
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (inodes, sig);
    }
}

/// `pipe:[12345]` → 12345.
#[cfg(target_os = "linux")]
fn pipe_link_inode(link: &[u8]) -> Option<u64> {
    let digits = link.strip_prefix(b"pipe:[")?.strip_suffix(b"]")?;
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// The `flags:` field (octal) of a `/proc/PID/fdinfo/FD` file.
#[cfg(target_os = "linux")]
fn fdinfo_flags(text: &str) -> Option<libc::c_int> {
    let line = text.lines().find_map(|l| l.strip_prefix("flags:"))?;
    libc::c_int::from_str_radix(line.trim(), 8).ok()
}

/// The session id field of a `/proc/PID/stat` line.
#[cfg(target_os = "linux")]
fn stat_session(stat: &[u8]) -> Option<libc::pid_t> {
    stat_field(stat, 3)
}

/// Field `n` after the command name of a `/proc/PID/stat` line (0 state, 1 ppid, 2 pgrp,
/// 3 session). The name may contain spaces and parentheses, so fields are counted from
/// the last `)`.
#[cfg(target_os = "linux")]
fn stat_field(stat: &[u8], n: usize) -> Option<libc::pid_t> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(&stat[close + 1..]).ok()?;
    rest.split_ascii_whitespace().nth(n)?.parse().ok()
}

/// `write(2)` with SIGPIPE blocked for the calling thread, so a child that closed its
/// stdin yields EPIPE even in a host program that restored SIGPIPE's default action
/// (which would otherwise kill atip). A SIGPIPE raised by this write is consumed.
pub(super) fn write_no_sigpipe(file: &mut std::fs::File, data: &[u8]) -> io::Result<usize> {
    use std::io::Write;
    #[cfg(target_os = "linux")]
    // SAFETY: signal-set manipulation on locals; the mask is restored before return.
    unsafe {
        let mut pipe_only: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe_only);
        libc::sigaddset(&mut pipe_only, libc::SIGPIPE);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigpending(&mut pending);
        let already_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe_only, &mut old);
        let result = file.write(data);
        if !already_pending && matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EPIPE)) {
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            libc::sigtimedwait(&pipe_only, std::ptr::null_mut(), &now);
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        result
    }
    #[cfg(not(target_os = "linux"))]
    {
        // Rust programs ignore SIGPIPE from startup; atip keeps it that way.
        file.write(data)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{fdinfo_flags, pipe_link_inode, stat_session};

    #[test]
    fn pipe_links_and_fdinfo_flags_parse() {
        assert_eq!(pipe_link_inode(b"pipe:[98765]"), Some(98765));
        assert_eq!(pipe_link_inode(b"socket:[98765]"), None);
        assert_eq!(pipe_link_inode(b"/tmp/pipe:[1]"), None);
        let info = "pos:\t0\nflags:\t01000001\nmnt_id:\t15\n";
        assert_eq!(fdinfo_flags(info), Some(0o1000001));
        assert_eq!(
            fdinfo_flags(info).unwrap() & libc::O_ACCMODE,
            libc::O_WRONLY
        );
        assert_eq!(fdinfo_flags("pos: 0\n"), None);
    }

    #[test]
    fn session_is_read_after_the_last_parenthesis() {
        let stat = b"4242 (a) b (c)) S 1 4242 4300 0 -1 4194560";
        assert_eq!(stat_session(stat), Some(4300));
        assert_eq!(stat_session(b"garbage"), None);
        assert_eq!(stat_session(b"1 (x) S 0"), None);
    }
}
