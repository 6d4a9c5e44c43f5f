//! `atip::process::run` against real child processes: `/bin/sh` scripts written into a
//! temp dir that hang, flood, fork, escape their group, ignore SIGTERM, read stdin,
//! write files. Every test checks that no process it started is left behind.
//!
//! Timing assertions use generous margins (the machine is shared): they prove "bounded
//! by the timeout", not speed. Speed lives in `benches/`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::gone;
use atip::process::{self, DRAIN_WINDOW, ENV_ALLOWLIST, Exit, Outcome, ProcessError, Spawn};

/// Extra time allowed on top of any bound, for a loaded shared machine.
const SLACK: Duration = Duration::from_secs(2);
const SHORT: Duration = Duration::from_millis(400);

/// A temp dir holding test scripts.
struct Scripts {
    dir: tempfile::TempDir,
}

impl Scripts {
    fn new() -> Scripts {
        Scripts {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    /// Writes `body` as a POSIX shell script and returns a spawn running it with
    /// `/bin/sh` (not executing the fresh file itself avoids ETXTBSY races with other
    /// test threads forking while it is open for writing).
    fn sh(&self, name: &str, body: &str, timeout: Duration) -> Spawn {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        Spawn::new("/bin/sh", [path.into_os_string()], timeout)
    }
}

/// Pids a test must see dead (or dead it makes them) before it ends, even on panic.
struct Reaper(Vec<i32>);

impl Drop for Reaper {
    fn drop(&mut self) {
        for &pid in &self.0 {
            if pid > 1 {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// The pids a script printed, one per line, as `pid:NNN`.
fn pids(out: &Outcome) -> Vec<i32> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("pid:"))
        .map(|p| p.trim().parse().expect("pid"))
        .collect()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn normal_exit_captures_stdout_and_stderr() {
    let s = Scripts::new();
    let spawn = s.sh("ok", "echo hello; echo oops >&2; printf 'a b'", SHORT * 5);
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.success());
    assert_eq!(text(&out.stdout), "hello\na b");
    assert_eq!(text(&out.stderr), "oops\n");
    assert!(!out.stdout_truncated && !out.stderr_truncated);
    assert!(out.elapsed < SLACK);
}

#[test]
fn nonzero_exit_is_reported_not_an_error() {
    let s = Scripts::new();
    let out = process::run(&s.sh("bad", "echo failing >&2; exit 3", SHORT * 5)).unwrap();
    assert_eq!(out.exit, Exit::Code(3));
    assert!(!out.success());
    assert_eq!(text(&out.stderr), "failing\n");
}

#[test]
fn death_by_signal_is_reported_as_signal() {
    let s = Scripts::new();
    let out =
        process::run(&s.sh("sig", "echo before; kill -USR1 $$; echo after", SHORT * 5)).unwrap();
    assert_eq!(out.exit, Exit::Signal(libc::SIGUSR1));
    assert_eq!(text(&out.stdout), "before\n");
}

#[test]
fn bare_program_name_is_resolved_on_path() {
    let mut spawn = Spawn::new("sh", ["-c", "echo resolved"], SHORT * 5);
    // The PATH of the run's environment, handed in (the process layer reads none).
    spawn.inherit = atip::env::Env::from_pairs([("PATH", "/usr/bin:/bin")]);
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "resolved\n");
}

#[test]
fn arguments_are_never_interpreted_by_a_shell() {
    let hostile = [
        "; touch pwned",
        "$(touch pwned)",
        "`touch pwned`",
        "a\nb",
        "*",
    ];
    let out = process::run(&Spawn::new("/bin/echo", hostile, SHORT * 5)).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), format!("{}\n", hostile.join(" ")));
}

#[test]
fn executable_script_runs_directly() {
    use std::os::unix::fs::PermissionsExt;
    let s = Scripts::new();
    let path = s.dir.path().join("direct");
    std::fs::write(&path, "#!/bin/sh\necho direct \"$@\"\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = process::run(&Spawn::new(&path, ["--agent"], SHORT * 5)).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "direct --agent\n");
}

#[test]
fn missing_or_non_executable_program_is_a_spawn_error() {
    let s = Scripts::new();
    let err = process::run(&Spawn::new(
        "atip-no-such-program-xyz",
        Vec::<OsString>::new(),
        SHORT,
    ))
    .unwrap_err();
    match &err {
        ProcessError::Spawn { program, source } => {
            assert_eq!(program, Path::new("atip-no-such-program-xyz"));
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("atip-no-such-program-xyz"),
        "{err}"
    );

    let plain = s.dir.path().join("not-exec");
    std::fs::write(&plain, "#!/bin/sh\necho no\n").unwrap();
    let err = process::run(&Spawn::new(&plain, Vec::<OsString>::new(), SHORT)).unwrap_err();
    match err {
        ProcessError::Spawn { source, .. } => {
            assert_eq!(source.kind(), std::io::ErrorKind::PermissionDenied)
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn hang_times_out_and_the_group_is_killed() {
    let s = Scripts::new();
    // The direct child waits on a child of its own: both must die.
    let spawn = s.sh("hang", "sleep 30 & echo pid:$!; echo pid:$$; wait", SHORT);
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::TimedOut);
    assert!(out.elapsed >= SHORT, "{:?}", out.elapsed);
    assert!(
        out.elapsed < SHORT + spawn.kill_grace + SLACK,
        "{:?}",
        out.elapsed
    );
    assert_eq!(pids.len(), 2, "output before the timeout is kept: {out:?}");
    for pid in pids {
        assert!(gone(pid), "pid {pid} survived the timeout");
    }
}

#[test]
fn sigterm_ignored_means_sigkill_after_the_grace() {
    let s = Scripts::new();
    let mut spawn = s.sh(
        "stubborn",
        "trap '' TERM; echo pid:$$; while :; do sleep 0.05; done",
        SHORT,
    );
    spawn.kill_grace = Duration::from_millis(300);
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::TimedOut);
    assert!(
        out.elapsed >= SHORT + spawn.kill_grace - Duration::from_millis(20),
        "SIGKILL came before the grace: {:?}",
        out.elapsed
    );
    assert!(
        out.elapsed < SHORT + spawn.kill_grace + SLACK,
        "{:?}",
        out.elapsed
    );
    assert_eq!(pids.len(), 1);
    assert!(gone(pids[0]), "SIGTERM-ignoring child survived");
}

#[test]
fn grandchild_holding_stdout_does_not_delay_the_result() {
    let s = Scripts::new();
    // Generous timeout: the result must come from the child's exit, not the deadline.
    let spawn = s.sh(
        "fork",
        "sleep 30 & echo pid:$!; echo done",
        Duration::from_secs(20),
    );
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::Code(0));
    assert!(text(&out.stdout).ends_with("done\n"), "{out:?}");
    assert!(
        out.elapsed < SLACK,
        "waited on the grandchild: {:?}",
        out.elapsed
    );
    assert_eq!(pids.len(), 1);
    assert!(gone(pids[0]), "grandchild in the group outlived its parent");
}

#[test]
fn escaped_grandchild_holding_stdout_costs_at_most_the_drain_window_and_dies() {
    let s = Scripts::new();
    let spawn = s.sh(
        "escape",
        // Waits until the grandchild has really left the group before exiting.
        "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' &\n\
         while [ ! -s escaped.pid ]; do sleep 0.01; done\n\
         echo pid:$(cat escaped.pid); echo done",
        Duration::from_secs(20),
    );
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::Code(0));
    assert!(
        out.elapsed < DRAIN_WINDOW + SLACK,
        "waited on an escaped grandchild: {:?}",
        out.elapsed
    );
    assert_eq!(pids.len(), 1);
    // It left the group and the session, but it holds the tool's stdout pipe: on Linux
    // atip finds it through /proc and kills it when the drain window ends.
    if cfg!(target_os = "linux") {
        assert!(
            gone(pids[0]),
            "the escaped grandchild holding stdout survived"
        );
    }
    drop(reaper);
    assert!(gone(pids[0]));
}

#[test]
fn escaped_grandchild_and_hanging_child_end_at_the_timeout() {
    let s = Scripts::new();
    let spawn = s.sh(
        "escape-hang",
        "setsid sleep 30 & echo pid:$!; echo pid:$$; sleep 30",
        SHORT,
    );
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::TimedOut);
    assert!(
        out.elapsed < SHORT + spawn.kill_grace + DRAIN_WINDOW + SLACK,
        "{:?}",
        out.elapsed
    );
    assert_eq!(pids.len(), 2);
    assert!(gone(pids[1]), "the direct child survived");
    if cfg!(target_os = "linux") {
        assert!(
            gone(pids[0]),
            "the escaped grandchild holding stdout survived"
        );
    }
}

#[test]
fn stdout_flood_is_capped_and_drained() {
    let s = Scripts::new();
    let mut spawn = s.sh(
        "flood",
        "head -c 50000000 /dev/zero; echo tail >&2",
        Duration::from_secs(20),
    );
    spawn.stdout_cap = 1 << 20;
    let out = process::run(&spawn).unwrap();
    assert_eq!(
        out.exit,
        Exit::Code(0),
        "the writer must never block on a full pipe"
    );
    assert!(out.stdout_truncated);
    assert_eq!(out.stdout.len(), 1 << 20);
    assert!(out.stdout.iter().all(|&b| b == 0));
    assert!(!out.stderr_truncated);
    assert_eq!(text(&out.stderr), "tail\n");
    assert!(out.elapsed < Duration::from_secs(10), "{:?}", out.elapsed);
}

#[test]
fn stderr_flood_is_capped_too() {
    let s = Scripts::new();
    let mut spawn = s.sh(
        "errflood",
        "head -c 5000000 /dev/zero >&2; echo ok",
        SHORT * 25,
    );
    spawn.stderr_cap = 1000;
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.stderr_truncated);
    assert_eq!(out.stderr.len(), 1000);
    assert_eq!(text(&out.stdout), "ok\n");
}

#[test]
fn endless_flood_stops_at_the_timeout_with_the_cap_kept() {
    let s = Scripts::new();
    let mut spawn = s.sh("endless", "echo pid:$$; exec cat /dev/zero", SHORT);
    spawn.stdout_cap = 64 << 10;
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::TimedOut);
    assert!(out.stdout_truncated);
    assert_eq!(out.stdout.len(), 64 << 10);
    assert!(
        out.elapsed < SHORT + spawn.kill_grace + SLACK,
        "{:?}",
        out.elapsed
    );
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert!(gone(pids[0]));
}

#[test]
fn stdin_is_dev_null_so_readers_see_eof() {
    let s = Scripts::new();
    let spawn = s.sh("reader", "cat; echo eof", Duration::from_secs(20));
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "eof\n");
    assert!(out.elapsed < SLACK, "{:?}", out.elapsed);
}

#[test]
fn given_stdin_bytes_are_written_then_closed() {
    let s = Scripts::new();
    let mut spawn = s.sh("echoer", "cat; echo; echo eof", SHORT * 5);
    spawn.stdin = Some(b"hello".to_vec());
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "hello\neof\n");
}

#[test]
fn large_stdin_and_large_stdout_at_once_do_not_deadlock() {
    let s = Scripts::new();
    let mut spawn = s.sh("pipe", "cat", Duration::from_secs(20));
    let input: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    spawn.stdin = Some(input.clone());
    spawn.stdout_cap = 8 << 20;
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.stdout == input, "stdin did not round-trip intact");
}

#[test]
fn stdin_the_child_never_reads_does_not_block() {
    let s = Scripts::new();
    let mut spawn = s.sh("ignore-stdin", "echo quick", Duration::from_secs(20));
    spawn.stdin = Some(vec![b'x'; 4 << 20]);
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(text(&out.stdout), "quick\n");
    assert!(out.elapsed < SLACK, "{:?}", out.elapsed);
}

#[test]
fn default_cwd_is_a_fresh_temp_dir_removed_afterwards() {
    let s = Scripts::new();
    let spawn = s.sh(
        "writer",
        "pwd; echo data > out.txt; ls; ls -ld .",
        SHORT * 5,
    );
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines();
    let dir = PathBuf::from(lines.next().unwrap());
    assert_eq!(lines.next(), Some("out.txt"), "the temp dir starts empty");
    let mode = lines.next().unwrap();
    assert!(
        mode.starts_with("drwx------"),
        "temp dir not private: {mode}"
    );
    let here = std::env::current_dir().unwrap();
    assert_ne!(dir, here);
    assert!(
        !here.join("out.txt").exists(),
        "file landed in the caller's cwd"
    );
    assert!(!s.dir.path().join("out.txt").exists());
    assert!(!dir.exists(), "temp cwd {} was not removed", dir.display());
}

#[test]
fn given_cwd_is_used_and_kept() {
    let s = Scripts::new();
    let work = tempfile::tempdir().unwrap();
    let mut spawn = s.sh("writer", "echo data > out.txt", SHORT * 5);
    spawn.cwd = Some(work.path().to_path_buf());
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    assert_eq!(
        std::fs::read_to_string(work.path().join("out.txt")).unwrap(),
        "data\n"
    );
}

/// Runs `test` in a fresh copy of this test binary with `env` added to its environment,
/// so the test process's own environment is never mutated.
fn in_child_process(test: &str, env: &[(&str, &str)]) {
    if std::env::var_os("ATIP_PROCESS_TEST_CHILD").is_some() {
        return;
    }
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    let test = crate::common::test_name(module_path!(), test);
    cmd.args(["--exact", &test, "--nocapture", "--test-threads=1"])
        .env("ATIP_PROCESS_TEST_CHILD", "1");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "child test failed:\n{all}");
    assert!(all.contains("1 passed"), "child ran no test:\n{all}");
}

fn is_child_process() -> bool {
    std::env::var_os("ATIP_PROCESS_TEST_CHILD").is_some()
}

/// The child's environment is what the caller hands in: with nothing inherited, not
/// even atip's own `PATH` or `HOME` reaches it (the process layer reads no variable).
#[test]
fn a_child_inherits_only_the_environment_handed_in() {
    let mut spawn = Spawn::new("/usr/bin/env", Vec::<OsString>::new(), SHORT * 5);
    spawn.inherit = atip::env::Env::from_pairs([("HOME", "/handed/in"), ("NOT_LISTED", "x")]);
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    let env = text(&out.stdout);
    let names: Vec<&str> = env.lines().map(|l| l.split('=').next().unwrap()).collect();
    assert!(env.lines().any(|l| l == "HOME=/handed/in"), "{env}");
    assert!(
        names.iter().all(|n| *n == "HOME" || *n == "PWD"),
        "only what was handed in: {env}"
    );
}

#[test]
fn environment_is_scrubbed_to_the_allowlist() {
    in_child_process(
        "environment_is_scrubbed_to_the_allowlist",
        &[("ATIP_TEST_SECRET", "hunter2"), ("LANG", "C.UTF-8")],
    );
    if !is_child_process() {
        return;
    }
    assert_eq!(std::env::var("ATIP_TEST_SECRET").unwrap(), "hunter2");
    let mut spawn = Spawn::new("/usr/bin/env", Vec::<OsString>::new(), SHORT * 5);
    spawn.env.push(("ATIP_EXTRA".into(), "given".into()));
    spawn.inherit = atip::env::Env::capture();
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    let env = text(&out.stdout);
    assert!(!env.contains("hunter2"), "secret leaked:\n{env}");
    assert!(env.lines().any(|l| l == "ATIP_EXTRA=given"), "{env}");
    assert!(env.lines().any(|l| l == "LANG=C.UTF-8"), "{env}");
    for line in env.lines() {
        let name = line.split('=').next().unwrap();
        assert!(
            ENV_ALLOWLIST.contains(&name) || name == "ATIP_EXTRA" || name == "PWD",
            "unexpected variable {name}"
        );
    }
}

#[test]
fn inherited_signal_mask_and_ignores_are_reset() {
    in_child_process("inherited_signal_mask_and_ignores_are_reset", &[]);
    if !is_child_process() || !cfg!(target_os = "linux") {
        return;
    }
    // Poison this (throw-away) test process the way a careless parent might.
    unsafe {
        libc::signal(libc::SIGTERM, libc::SIG_IGN);
        libc::signal(libc::SIGINT, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
    let out = process::run(&Spawn::new("/bin/cat", ["/proc/self/status"], SHORT * 5)).unwrap();
    let status = text(&out.stdout);
    for field in ["SigIgn:", "SigBlk:"] {
        let line = status.lines().find(|l| l.starts_with(field)).unwrap();
        let mask = u64::from_str_radix(line[field.len()..].trim(), 16).unwrap();
        // Signals 32 and 33 are glibc-internal; reset too where atip can reach them.
        let checked = if cfg!(target_arch = "x86_64") {
            u64::MAX
        } else {
            0x7fff_ffff
        };
        assert_eq!(mask & checked, 0, "{line}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn child_leads_its_own_session_without_a_terminal() {
    let out = process::run(&Spawn::new("/bin/cat", ["/proc/self/stat"], SHORT * 5)).unwrap();
    let stat = text(&out.stdout);
    let (pid, rest) = stat.split_once(" (").unwrap();
    let fields: Vec<&str> = rest.rsplit_once(") ").unwrap().1.split(' ').collect();
    // After the comm: state ppid pgrp session tty_nr ...
    assert_eq!(fields[2], pid, "process group");
    assert_eq!(fields[3], pid, "session");
    assert_eq!(fields[4], "0", "controlling terminal");
}

#[cfg(target_os = "linux")]
#[test]
fn descriptors_without_cloexec_do_not_leak() {
    let file = std::fs::File::open("/dev/null").unwrap();
    use std::os::fd::AsRawFd;
    let leaky = unsafe { libc::dup(file.as_raw_fd()) }; // dup clears FD_CLOEXEC
    assert!(leaky > 2);
    let probe = format!("test -e /proc/self/fd/{leaky} && echo leaked || echo clean");
    let out = process::run(&Spawn::new("/bin/sh", ["-c", probe.as_str()], SHORT * 5));
    unsafe { libc::close(leaky) };
    assert_eq!(text(&out.unwrap().stdout), "clean\n");
}

/// An opened executable keeps only its own descriptor for `exec`: a leaked descriptor
/// numbered below it is closed in the child too, a binary does not keep its own
/// descriptor past `exec`, and a `#!` script does (its interpreter reads it from there).
#[cfg(target_os = "linux")]
#[test]
fn descriptors_without_cloexec_do_not_leak_beside_an_opened_file() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let null = std::fs::File::open("/dev/null").unwrap();
    let leaky = unsafe { libc::dup(null.as_raw_fd()) }; // dup clears FD_CLOEXEC
    assert!(leaky > 2);
    let binary = dir.path().join("sh-copy");
    std::fs::copy("/bin/sh", &binary).unwrap();
    let script = dir.path().join("script");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nls /proc/self/fd/ | grep -qx {leaky} && echo leaked || echo clean\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let opened = |path: &Path| process::Opened::new(std::fs::File::open(path).unwrap()).unwrap();

    let bin = opened(&binary);
    let own = bin.file().as_raw_fd();
    assert!(
        own > leaky,
        "the opened file sits above the leaked descriptor"
    );
    let check = format!(
        "ls /proc/self/fd/ | grep -qx {leaky} && echo leaked; ls /proc/self/fd/ | grep -qx {own} && echo kept; echo done"
    );
    let mut spawn = Spawn::new(&binary, ["-c", check.as_str()], SHORT * 5);
    spawn.opened = Some(bin);
    let out = process::run(&spawn).unwrap();
    assert_eq!(text(&out.stdout), "done\n", "binary: {out:?}");

    let mut spawn = Spawn::new(&script, Vec::<OsString>::new(), SHORT * 5);
    spawn.opened = Some(opened(&script));
    let out = process::run(&spawn).unwrap();
    unsafe { libc::close(leaky) };
    assert_eq!(text(&out.stdout), "clean\n", "script: {out:?}");
}

/// No child may write a core file: it starts with a zero soft core-size limit, and its
/// hard limit is zero too by the time it could have raised the soft one (atip lowers it
/// right after the start; the script waits well past that).
#[cfg(target_os = "linux")]
#[test]
fn children_run_without_core_dumps() {
    let script = "sleep 0.2; cat /proc/self/limits";
    let out = process::run(&Spawn::new("/bin/sh", ["-c", script], SHORT * 5)).unwrap();
    let limits = text(&out.stdout);
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max core file size"))
        .unwrap_or_else(|| panic!("{limits}"));
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(fields[4..6], ["0", "0"], "{line}");
}

#[test]
fn cancellation_kills_the_group() {
    let s = Scripts::new();
    let work = tempfile::tempdir().unwrap();
    let flag = Arc::new(AtomicBool::new(false));
    let mut spawn = s.sh(
        "cancel",
        "sleep 30 & echo pid:$!; echo pid:$$; touch started; wait",
        Duration::from_secs(20),
    );
    spawn.cwd = Some(work.path().to_path_buf());
    spawn.cancel = Some(flag.clone());
    // Cancel once the group is running (the script says so), not after a guessed delay.
    let started = work.path().join("started");
    let setter = std::thread::spawn(move || {
        let until = Instant::now() + Duration::from_secs(15);
        while !started.exists() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        flag.store(true, Ordering::SeqCst);
    });
    let out = process::run(&spawn).unwrap();
    setter.join().unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    // Cancelled, not timed out (20 s): the flag ended the run.
    assert_eq!(out.exit, Exit::Cancelled);
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(gone(pid), "pid {pid} survived cancellation");
    }
}

#[test]
fn already_cancelled_starts_nothing() {
    let s = Scripts::new();
    let work = tempfile::tempdir().unwrap();
    let mut spawn = s.sh("marker", "touch started", SHORT * 5);
    spawn.cwd = Some(work.path().to_path_buf());
    spawn.cancel = Some(Arc::new(AtomicBool::new(true)));
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Cancelled);
    assert!(!work.path().join("started").exists());
}

#[test]
fn parallel_hostile_runs_all_finish_within_their_timeout() {
    let s = Arc::new(Scripts::new());
    let start = Instant::now();
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                let body = if i % 2 == 0 {
                    "setsid sleep 30 & echo pid:$!; sleep 30"
                } else {
                    "trap '' TERM; sleep 30 & echo pid:$!; while :; do sleep 0.05; done"
                };
                process::run(&s.sh(&format!("p{i}"), body, SHORT)).unwrap()
            })
        })
        .collect();
    let outs: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let all: Vec<i32> = outs.iter().flat_map(pids).collect();
    let _reaper = Reaper(all);
    assert!(start.elapsed() < SHORT * 2 + SLACK, "{:?}", start.elapsed());
    for (i, out) in outs.iter().enumerate() {
        assert_eq!(out.exit, Exit::TimedOut, "run {i}");
        if i % 2 == 1 {
            assert!(gone(pids(out)[0]), "run {i}: grandchild survived");
        }
    }
}

/// A perl one-liner that leaves the tool's process group (but not its session), writes
/// its pid to `moved.pid`, optionally ignores SIGTERM, and sleeps holding stdout.
#[cfg(target_os = "linux")]
fn group_leaver(ignore_term: bool) -> Option<String> {
    if !Path::new("/usr/bin/perl").exists() {
        crate::common::skip_optional("needs /usr/bin/perl to call setpgrp");
        return None;
    }
    let trap = if ignore_term {
        "$SIG{TERM}=q(IGNORE); "
    } else {
        ""
    };
    Some(format!(
        "/usr/bin/perl -e '{trap}setpgrp(0,0); open(F,q(>moved.pid)); print F $$; close F; sleep 30' &\n\
         while [ ! -s moved.pid ]; do sleep 0.01; done\n\
         echo pid:$(cat moved.pid)"
    ))
}

#[cfg(target_os = "linux")]
#[test]
fn group_leaver_in_the_session_is_killed_at_the_timeout() {
    let Some(leaver) = group_leaver(true) else {
        return;
    };
    let s = Scripts::new();
    let spawn = s.sh("leaver-hang", &format!("{leaver}\nsleep 30"), SHORT);
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::TimedOut);
    assert_eq!(pids.len(), 1, "{out:?}");
    assert!(
        gone(pids[0]),
        "a grandchild in its own group survived the timeout"
    );
}

#[cfg(target_os = "linux")]
#[test]
fn group_leaver_holding_stdout_is_killed_after_the_drain_window() {
    let Some(leaver) = group_leaver(false) else {
        return;
    };
    let s = Scripts::new();
    let spawn = s.sh(
        "leaver-exit",
        &format!("{leaver}\necho done"),
        Duration::from_secs(20),
    );
    let out = process::run(&spawn).unwrap();
    let pids = pids(&out);
    let _reaper = Reaper(pids.clone());
    assert_eq!(out.exit, Exit::Code(0));
    assert!(out.elapsed < DRAIN_WINDOW + SLACK, "{:?}", out.elapsed);
    assert_eq!(pids.len(), 1, "{out:?}");
    assert!(
        gone(pids[0]),
        "a pipe-holding grandchild in the session survived"
    );
}

#[test]
fn host_with_default_sigpipe_survives_a_child_closing_stdin() {
    in_child_process(
        "host_with_default_sigpipe_survives_a_child_closing_stdin",
        &[],
    );
    if !is_child_process() {
        return;
    }
    // Some hosts restore SIGPIPE's default action; a write to a closed stdin pipe would
    // then kill the whole process instead of returning EPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    let s = Scripts::new();
    for _ in 0..5 {
        let mut spawn = s.sh("closer", "exec 0<&-; echo closed", Duration::from_secs(20));
        spawn.stdin = Some(vec![b'x'; 4 << 20]);
        let out = process::run(&spawn).unwrap();
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(text(&out.stdout), "closed\n");
    }
}

#[test]
fn absurd_durations_do_not_panic() {
    let s = Scripts::new();
    let out = process::run(&s.sh("quick", "echo ok", Duration::MAX)).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    let mut spawn = s.sh("term", "echo pid:$$; sleep 30", Duration::ZERO);
    spawn.kill_grace = Duration::MAX; // SIGTERM alone ends a plain sh
    let out = process::run(&spawn).unwrap();
    let _reaper = Reaper(pids(&out));
    assert_eq!(out.exit, Exit::TimedOut);
    assert!(out.elapsed < SLACK, "{:?}", out.elapsed);
}

#[test]
fn temp_cwd_is_removed_even_with_locked_subdirectories() {
    let s = Scripts::new();
    let spawn = s.sh(
        "locker",
        "mkdir -p a/b/c; echo x > a/b/c/f; ln -s / a/root; chmod 000 a/b/c; chmod 500 a/b; chmod 000 a; pwd",
        SHORT * 5,
    );
    let out = process::run(&spawn).unwrap();
    assert_eq!(out.exit, Exit::Code(0));
    let dir = PathBuf::from(text(&out.stdout).trim_end());
    assert!(dir.starts_with(std::env::temp_dir()) || dir.to_string_lossy().contains("atip-run-"));
    assert!(!dir.exists(), "{} left behind", dir.display());
}

#[test]
fn sweeps_never_hit_sibling_runs() {
    // Hostile runs end with group, session and pipe-holder sweeps while well-behaved
    // runs start and finish on other threads: none of those may be killed.
    let s = Arc::new(Scripts::new());
    let stop = Arc::new(AtomicBool::new(false));
    let hostile: Vec<_> = (0..4)
        .map(|i| {
            let s = s.clone();
            std::thread::spawn(move || {
                let body = "setsid sh -c 'echo pid:$$; exec sleep 30' & sleep 30 & echo pid:$!; echo pid:$$";
                let out = process::run(&s.sh(&format!("h{i}"), body, SHORT)).unwrap();
                let _reaper = Reaper(pids(&out));
                out.exit
            })
        })
        .collect();
    let calm: Vec<_> = (0..3)
        .map(|i| {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut runs = 0;
                while !stop.load(Ordering::SeqCst) || runs < 5 {
                    let spawn = s.sh(&format!("c{i}-{runs}"), "sleep 0.02; echo calm", SHORT * 10);
                    let out = process::run(&spawn).unwrap();
                    assert_eq!(out.exit, Exit::Code(0), "calm run {i}/{runs} was hit");
                    assert_eq!(text(&out.stdout), "calm\n");
                    runs += 1;
                }
                runs
            })
        })
        .collect();
    for h in hostile {
        assert_eq!(h.join().unwrap(), Exit::Code(0));
    }
    stop.store(true, Ordering::SeqCst);
    for c in calm {
        assert!(c.join().unwrap() >= 5);
    }
}

#[test]
fn missing_working_directory_is_named_in_the_error() {
    let mut spawn = Spawn::new("/bin/true", Vec::<OsString>::new(), SHORT);
    spawn.cwd = Some(PathBuf::from("/nonexistent/atip-cwd"));
    let err = process::run(&spawn).unwrap_err();
    assert!(matches!(err, ProcessError::Spawn { .. }), "{err:?}");
    assert!(err.to_string().contains("/nonexistent/atip-cwd"), "{err}");
}
