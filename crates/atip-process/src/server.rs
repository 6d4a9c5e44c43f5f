//! Long-lived children: MCP servers that `atip mcp` talks to over stdin/stdout.
//!
//! The same rules as every other child of atip (argv only, never a shell; environment
//! scrubbed to [`ENV_ALLOWLIST`](super::ENV_ALLOWLIST) plus the configured entries; its
//! own session and process group; default signal dispositions), but the pipes stay open
//! for the life of the session and the caller (the rmcp child-process transport) owns
//! them. [`GroupGuard`] kills the whole group when the session ends, however it ends.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::time::Duration;

/// A command for a server child: argv only, scrubbed environment (the allowlisted
/// variables of the run's `inherit` environment plus `env`), own session.
pub fn server_command(
    program: &str,
    args: &[String],
    env: &[(String, String)],
    inherit: &super::Env,
    cwd: Option<&Path>,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).env_clear();
    for (name, value) in inherit.pick(super::ENV_ALLOWLIST.iter().copied()) {
        cmd.env(name, value);
    }
    for (name, value) in env {
        cmd.env(OsString::from(name), OsString::from(value));
    }
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    // SAFETY: `child_setup` only makes async-signal-safe calls.
    unsafe {
        cmd.pre_exec(super::sys::child_setup);
    }
    cmd
}

/// Owns a server child's process group: SIGTERM then SIGKILL to the whole group on
/// `terminate` or drop, so grandchildren (`npx` → `node`) go too.
#[derive(Debug)]
pub struct GroupGuard {
    pgid: libc::pid_t,
    done: bool,
}

impl GroupGuard {
    /// Guards the group led by `pid` (the child called `setsid`, so its pid is the group id).
    /// Registered with [`super::terminate_all`], so a termination signal kills it too.
    pub fn new(pid: u32) -> GroupGuard {
        let pgid = pid as libc::pid_t;
        super::groups::register(pgid);
        GroupGuard { pgid, done: false }
    }

    /// Whether any process of the group is still alive.
    pub fn alive(&self) -> bool {
        // SAFETY: signal 0 only checks for existence.
        self.pgid > 1 && unsafe { libc::kill(-self.pgid, 0) } == 0
    }

    /// SIGTERM to the group, up to `grace` for it to go, then SIGKILL.
    pub fn terminate(&mut self, grace: Duration) {
        if self.done {
            return;
        }
        self.done = true;
        if !self.alive() {
            super::groups::unregister(self.pgid);
            return;
        }
        super::sys::kill_group(self.pgid, libc::SIGTERM);
        let until = std::time::Instant::now() + grace;
        while std::time::Instant::now() < until && self.alive() {
            std::thread::sleep(Duration::from_millis(10));
        }
        super::sys::kill_group(self.pgid, libc::SIGKILL);
        super::groups::unregister(self.pgid);
    }

    /// SIGKILL to the group now (Ctrl-C, panics, early exits).
    pub(crate) fn kill_now(&mut self) {
        if !self.done {
            self.done = true;
            super::sys::kill_group(self.pgid, libc::SIGKILL);
            super::groups::unregister(self.pgid);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_now();
    }
}
