//! Starting a child for [`run`](super::run): the one place it is created.
//!
//! On glibc this is `posix_spawn`, which starts the child vfork-style: it shares atip's
//! memory until its `exec`. A `fork` instead copies the page tables of atip's whole
//! multi-threaded process, and every thread's next write to each page then faults; a
//! scan paid that for every probe. What the forked child used to do for itself between
//! `fork` and `exec` becomes spawn attributes and file actions (new session, empty
//! signal mask, default dispositions, descriptors closed, working directory), and the
//! rest moves to atip's side: the opened file's check just before the spawn, and the
//! core-dump limit (see [`no_core_dumps`]). Other platforms keep std's `fork` + `exec`
//! with the same setup run in the child.

use std::ffi::{OsStr, OsString};
use std::io;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::os::fd::RawFd;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

/// What the child is started with, already resolved by the caller.
pub(super) struct Launch<'a> {
    /// What the kernel executes: an absolute path, or `/proc/self/fd/N`.
    pub exec: &'a OsStr,
    /// The child's `argv[0]`.
    pub argv0: &'a OsStr,
    /// The rest of its argv.
    pub args: &'a [OsString],
    /// Its whole environment (later entries of a name win).
    pub env: &'a [(OsString, OsString)],
    /// Its working directory, if not atip's.
    pub cwd: Option<&'a Path>,
    /// Whether stdin is a pipe (else /dev/null).
    pub stdin_piped: bool,
    /// The opened executable `exec` names through /proc: checked right before the start.
    pub opened: Option<&'a super::Opened>,
}

/// A started child: its pid (unreaped) and atip's ends of its pipes.
pub(super) struct Started {
    pub pid: libc::pid_t,
    pub stdin: Option<OwnedFd>,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
}

/// The environment as `NAME=VALUE` strings, one per name (the last entry wins, as with
/// `Command::env`), sorted by name.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn env_block(env: &[(OsString, OsString)]) -> Vec<OsString> {
    let mut merged: std::collections::BTreeMap<&OsStr, &OsStr> = Default::default();
    for (name, value) in env {
        merged.insert(name, value);
    }
    merged
        .into_iter()
        .map(|(name, value)| {
            let mut line = OsString::with_capacity(name.len() + value.len() + 1);
            line.push(name);
            line.push("=");
            line.push(value);
            line
        })
        .collect()
}

/// Lowers atip's own soft core-dump limit to zero, once per process, so every child
/// starts without core dumps: a probed binary that crashes must not write a core file,
/// and a `posix_spawn`ed child runs no code of atip's in which to lower its own limit.
/// The hard limit is left alone here (atip could not raise it back), and lowered to zero
/// for each child right after its start instead.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn no_core_dumps() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: getrlimit/setrlimit on a zeroed local.
        unsafe {
            let mut lim: libc::rlimit = std::mem::zeroed();
            if libc::getrlimit(libc::RLIMIT_CORE, &mut lim) == 0 && lim.rlim_cur != 0 {
                lim.rlim_cur = 0;
                libc::setrlimit(libc::RLIMIT_CORE, &lim);
            }
        }
    });
}

/// A string for C: an error naming it when it holds a NUL byte.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn c_string(s: &OsStr) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(s.as_bytes()).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a NUL byte in {:?}", s.to_string_lossy()),
        )
    })
}

/// The child's descriptors and directory: stdin (`stdin_r`, else /dev/null), stdout and
/// stderr on 0–2; every descriptor above 2 closed, except the opened file's, which
/// `exec` opens through /proc, and which a `#!` script keeps past `exec` (its
/// interpreter opens /proc/self/fd/N); then the working directory.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn file_actions(
    launch: &Launch,
    stdin_r: Option<RawFd>,
    out_w: RawFd,
    err_w: RawFd,
    cwd: Option<&std::ffi::CStr>,
) -> io::Result<spawn::Actions> {
    let mut actions = spawn::Actions::new()?;
    match stdin_r {
        Some(r) => actions.dup2(r, 0)?,
        None => actions.open(0, c"/dev/null", libc::O_RDONLY)?,
    }
    actions.dup2(out_w, 1)?;
    actions.dup2(err_w, 2)?;
    let first_closed = match launch.opened {
        Some(o) => {
            let fd = o.file.as_raw_fd();
            for other in 3..fd {
                actions.close(other)?;
            }
            if o.script {
                // glibc: a dup2 onto itself clears the child's FD_CLOEXEC.
                actions.dup2(fd, fd)?;
            }
            fd + 1
        }
        None => 3,
    };
    actions.close_from(first_closed)?;
    if let Some(dir) = cwd {
        actions.chdir(dir)?;
    }
    Ok(actions)
}

/// Starts the child with `posix_spawn`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(super) fn start(launch: &Launch) -> io::Result<Started> {
    use std::ffi::CString;
    let exec = c_string(launch.exec)?;
    let argv: Vec<CString> = std::iter::once(launch.argv0)
        .chain(launch.args.iter().map(OsString::as_os_str))
        .map(c_string)
        .collect::<io::Result<_>>()?;
    let envp: Vec<CString> = env_block(launch.env)
        .iter()
        .map(|s| c_string(s))
        .collect::<io::Result<_>>()?;
    let cwd = launch.cwd.map(|d| c_string(d.as_os_str())).transpose()?;
    let stdin = launch.stdin_piped.then(pipe).transpose()?;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = pipe()?;
    let actions = file_actions(
        launch,
        stdin.as_ref().map(|(r, _)| r.as_raw_fd()),
        out_w.as_raw_fd(),
        err_w.as_raw_fd(),
        cwd.as_deref(),
    )?;
    let attrs = spawn::Attrs::new()?;
    no_core_dumps();

    let ptrs = |v: &[CString]| -> Vec<*mut libc::c_char> {
        v.iter()
            .map(|s| s.as_ptr().cast_mut())
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect()
    };
    let (argv_p, envp_p) = (ptrs(&argv), ptrs(&envp));
    if let Some(o) = launch.opened
        && !o.unchanged()
    {
        return Err(io::Error::from_raw_os_error(super::sys::CHANGED_ERRNO));
    }
    let mut pid: libc::pid_t = 0;
    // SAFETY: every pointer is valid for the call: the C strings and their
    // null-terminated arrays live until the end of this function, and the file actions
    // and attributes are initialised and destroyed by their owners.
    let rc = unsafe {
        libc::posix_spawn(
            &mut pid,
            exec.as_ptr(),
            actions.as_ptr(),
            attrs.as_ptr(),
            argv_p.as_ptr(),
            envp_p.as_ptr(),
        )
    };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscall on our own child.
    unsafe {
        libc::prlimit(pid, libc::RLIMIT_CORE, &no_core, std::ptr::null_mut());
    }
    Ok(Started {
        pid,
        stdin: stdin.map(|(_, w)| w),
        stdout: out_r,
        stderr: err_r,
    })
}

/// Starts the child with std's `fork` + `exec`, running the setup in the child.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(super) fn start(launch: &Launch) -> io::Result<Started> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let mut cmd = Command::new(launch.exec);
    cmd.arg0(launch.argv0).args(launch.args).env_clear();
    for (name, value) in launch.env {
        cmd.env(name, value);
    }
    if let Some(dir) = launch.cwd {
        cmd.current_dir(dir);
    }
    cmd.stdin(if launch.stdin_piped {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // SAFETY: `child_setup` only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(super::sys::child_setup);
    }
    if let Some(o) = launch.opened {
        let (fd, stat, script) = (o.file.as_raw_fd(), o.stat, o.script);
        // SAFETY: `exec_opened_check` only makes async-signal-safe calls (fstat, fcntl).
        unsafe {
            cmd.pre_exec(move || super::sys::exec_opened_check(fd, &stat, script));
        }
    }
    let mut child = cmd.spawn()?;
    let pid = child.id() as libc::pid_t;
    let (stdin, stdout, stderr) = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    // Dropping a `Child` neither kills nor reaps it: the supervisor reaps `pid` itself.
    drop(child);
    let missing = || io::Error::other("a piped stream of the child is missing");
    Ok(Started {
        pid,
        stdin: stdin.map(OwnedFd::from),
        stdout: stdout.map(OwnedFd::from).ok_or_else(missing)?,
        stderr: stderr.map(OwnedFd::from).ok_or_else(missing)?,
    })
}

/// A close-on-exec pipe (read end, write end), both numbered above 2 so that wiring the
/// child's 0–2 can never overwrite one with another (atip may run with 0–2 closed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    use std::fs::File;
    use std::os::fd::FromRawFd;
    let mut fds: [RawFd; 2] = [-1; 2];
    // SAFETY: pipe2 fills the two-element array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are fresh and owned by nobody else.
    let (r, w) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    let above = |f| super::sys::above_stdio(f).map(OwnedFd::from);
    Ok((above(r)?, above(w)?))
}

/// RAII owners of glibc's spawn attribute and file-action objects.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod spawn {
    use std::ffi::CStr;
    use std::io;
    use std::os::fd::RawFd;

    fn check(rc: libc::c_int) -> io::Result<()> {
        match rc {
            0 => Ok(()),
            e => Err(io::Error::from_raw_os_error(e)),
        }
    }

    /// File actions, boxed: the object must not move once initialised.
    pub(super) struct Actions(Box<libc::posix_spawn_file_actions_t>);

    impl Actions {
        pub fn new() -> io::Result<Actions> {
            // SAFETY: zeroed storage is what `init` expects to overwrite.
            let mut raw = Box::new(unsafe { std::mem::zeroed() });
            // SAFETY: `raw` is valid, writable storage for the object.
            check(unsafe { libc::posix_spawn_file_actions_init(&mut *raw) })?;
            Ok(Actions(raw))
        }

        pub fn as_ptr(&self) -> *const libc::posix_spawn_file_actions_t {
            &*self.0
        }

        pub fn dup2(&mut self, from: RawFd, to: RawFd) -> io::Result<()> {
            // SAFETY: an initialised object; glibc copies what it needs.
            check(unsafe { libc::posix_spawn_file_actions_adddup2(&mut *self.0, from, to) })
        }

        pub fn close(&mut self, fd: RawFd) -> io::Result<()> {
            // SAFETY: as above. Closing a descriptor that is not open is not an error.
            check(unsafe { libc::posix_spawn_file_actions_addclose(&mut *self.0, fd) })
        }

        pub fn close_from(&mut self, fd: RawFd) -> io::Result<()> {
            // SAFETY: as above (glibc 2.34+).
            check(unsafe { libc::posix_spawn_file_actions_addclosefrom_np(&mut *self.0, fd) })
        }

        pub fn open(&mut self, fd: RawFd, path: &CStr, flags: libc::c_int) -> io::Result<()> {
            // SAFETY: as above; glibc copies the path.
            check(unsafe {
                libc::posix_spawn_file_actions_addopen(&mut *self.0, fd, path.as_ptr(), flags, 0)
            })
        }

        pub fn chdir(&mut self, dir: &CStr) -> io::Result<()> {
            // SAFETY: as above; glibc copies the path (2.29+).
            check(unsafe { libc::posix_spawn_file_actions_addchdir_np(&mut *self.0, dir.as_ptr()) })
        }
    }

    impl Drop for Actions {
        fn drop(&mut self) {
            // SAFETY: initialised in `new`, destroyed once.
            unsafe {
                libc::posix_spawn_file_actions_destroy(&mut *self.0);
            }
        }
    }

    /// Adds glibc's own signals 32 and 33 to a full set: `sigfillset` leaves them out and
    /// `sigaddset` refuses them, but the spawn resets whatever the set holds, and without
    /// them it starts the child with both ignored.
    #[cfg(target_pointer_width = "64")]
    fn with_glibc_signals(set: &mut libc::sigset_t) {
        // SAFETY: glibc's sigset_t is an array of unsigned longs in which signal n is
        // bit n - 1 of the first word (for n ≤ 64); the set is a valid local.
        unsafe {
            let first = std::ptr::from_mut(set).cast::<u64>();
            *first |= (1 << 31) | (1 << 32);
        }
    }

    #[cfg(not(target_pointer_width = "64"))]
    fn with_glibc_signals(_: &mut libc::sigset_t) {}

    /// Spawn attributes: a new session (no controlling terminal; its pid is its group),
    /// an empty signal mask, and every signal back to its default disposition (ignored
    /// ones survive `exec`: a tool started with SIGTERM ignored would defeat the
    /// timeout).
    pub(super) struct Attrs(Box<libc::posix_spawnattr_t>);

    impl Attrs {
        pub fn new() -> io::Result<Attrs> {
            // SAFETY: zeroed storage is what `init` expects to overwrite.
            let mut raw: Box<libc::posix_spawnattr_t> = Box::new(unsafe { std::mem::zeroed() });
            // SAFETY: `raw` is valid, writable storage for the object.
            check(unsafe { libc::posix_spawnattr_init(&mut *raw) })?;
            let mut attrs = Attrs(raw);
            let flags = libc::POSIX_SPAWN_SETSID
                | libc::POSIX_SPAWN_SETSIGMASK as libc::c_short
                | libc::POSIX_SPAWN_SETSIGDEF as libc::c_short;
            // SAFETY: plain setters on the initialised object and on local signal sets
            // (glibc copies them).
            unsafe {
                let mut none: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut none);
                let mut all: libc::sigset_t = std::mem::zeroed();
                libc::sigfillset(&mut all);
                with_glibc_signals(&mut all);
                check(libc::posix_spawnattr_setsigmask(&mut *attrs.0, &none))?;
                check(libc::posix_spawnattr_setsigdefault(&mut *attrs.0, &all))?;
                check(libc::posix_spawnattr_setflags(&mut *attrs.0, flags))?;
            }
            Ok(attrs)
        }

        pub fn as_ptr(&self) -> *const libc::posix_spawnattr_t {
            &*self.0
        }
    }

    impl Drop for Attrs {
        fn drop(&mut self) {
            // SAFETY: initialised in `new`, destroyed once.
            unsafe {
                libc::posix_spawnattr_destroy(&mut *self.0);
            }
        }
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    #[test]
    fn the_environment_has_one_entry_per_name_the_last_one_winning() {
        let env: Vec<(OsString, OsString)> = [("PATH", "/a"), ("HOME", "/h"), ("PATH", "/b")]
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        assert_eq!(
            env_block(&env),
            vec![OsString::from("HOME=/h"), "PATH=/b".into()]
        );
    }
}
