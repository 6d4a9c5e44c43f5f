//! Shared test harness: the real `atip` binary run in a sandbox of temp dirs, script
//! tools registered in a sandbox registry (`tools`), and process checks.
#![allow(dead_code)]

pub mod endpoint;
pub mod static_server;
pub mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// A sandbox: temp HOME, data, config and state dirs; never the real ones.
pub struct Sandbox {
    pub root: tempfile::TempDir,
    /// atip's `TMPDIR` (probes' working dirs): beside the root, not in it, so that tests
    /// can still see that nothing ran or was written there, and removed with the sandbox
    /// even when a test kills atip before it cleans up.
    tmp: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox {
            root: tempfile::tempdir().expect("temp dir"),
            tmp: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    pub fn data_dir(&self) -> PathBuf {
        self.path().join("data")
    }

    pub fn config_dir(&self) -> PathBuf {
        self.path().join("config")
    }

    /// `atip` with every directory redirected into the sandbox.
    pub fn atip(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_atip"));
        cmd.env_clear()
            .env("TMPDIR", self.tmp.path())
            .env("PATH", "/usr/bin:/bin")
            .env("HOME", self.path().join("home"))
            .env("XDG_DATA_HOME", self.path().join("xdg-data"))
            .env("XDG_CONFIG_HOME", self.path().join("xdg-config"))
            .env("XDG_STATE_HOME", self.path().join("xdg-state"))
            .env("XDG_CACHE_HOME", self.path().join("xdg-cache"))
            .env("XDG_DATA_DIRS", self.path().join("xdg-system"))
            .env("ATIP_DATA_DIR", self.data_dir())
            .env("ATIP_CONFIG_DIR", self.config_dir())
            .env("ATIP_STATE_DIR", self.path().join("state"))
            .env("NO_COLOR", "1")
            // Man-page inference reads only the sandbox's manual tree.
            .env("MANPATH", self.path().join("man"))
            .current_dir(self.path());
        // atip keeps a signal its host ignores ignored (a background job's SIGINT), so a
        // test run started as such a job would see no interrupt reach atip: every atip
        // a test starts gets SIGINT, SIGTERM and SIGHUP at their defaults, whatever the
        // harness inherited (a test that wants one ignored sets it after this).
        // SAFETY: only signal(2), async-signal-safe, between fork and exec.
        unsafe {
            use std::os::unix::process::CommandExt;
            cmd.pre_exec(|| {
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                    libc::signal(sig, libc::SIG_DFL);
                }
                Ok(())
            });
        }
        cmd
    }

    /// Writes a file (creating parents) and returns its path.
    pub fn write(&self, rel: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, contents).unwrap();
        p
    }

    /// Writes an executable script.
    pub fn script(&self, rel: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let p = self.write(rel, body);
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }
}

/// Output as text, for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Whether `pid` is a live process (a zombie awaiting its reaper counts as dead).
pub fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(pid, 0) } != 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits up to 5 s for `pid` to be gone (the kernel needs a moment after SIGKILL, and a
/// loaded machine more).
pub fn gone(pid: i32) -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    !alive(pid)
}

/// Asserts that `pid` is gone within 3 s.
pub fn assert_dead(pid: i32) {
    assert!(gone(pid), "process {pid} survived");
}

/// The full name libtest knows a test by (`module::test`), for re-running one test of this
/// binary in a child process with `--exact`; `module` is the caller's `module_path!()`.
pub fn test_name(module: &str, test: &str) -> String {
    let module = module.split_once("::").map_or("", |(_, rest)| rest);
    if module.is_empty() {
        test.to_string()
    } else {
        format!("{module}::{test}")
    }
}

/// Whether this run is CI (`CI=true`, as CI services set it): there, a program that
/// `.ci/setup-test-deps` installs must be present, so its absence fails the test.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// A test cannot run because `what` is missing. Outside CI this prints a visible
/// `SKIPPED: …` and the caller returns; under CI it fails the test, because
/// `.ci/setup-test-deps` should have installed it and a green run must mean it ran.
#[track_caller]
pub fn skip(what: &str) {
    if in_ci() {
        panic!("required under CI=true but missing: {what}");
    }
    eprintln!("SKIPPED: {what}");
}

/// Like [`skip`], for a test part that is optional even in CI (a program that
/// `.ci/setup-test-deps` does not install, a kernel feature): always a visible note.
pub fn skip_optional(what: &str) {
    eprintln!("SKIPPED (optional): {what}");
}

/// Property-test cases: `default`, sized so a debug build runs the property in a few
/// seconds, or `ATIP_PROPTEST_CASES` for a deeper run (e.g. `ATIP_PROPTEST_CASES=2000`).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("ATIP_PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}
