//! `atip scan` end to end: the real binary over sandbox PATH dirs of real shell-script
//! tools, friendly and hostile. Every tool script appends its pid (and its children's)
//! to `<sandbox>/pids`; each test ends by checking that none of them is still alive
//! (processes that escape with `setsid` are killed by the test and say so).
//!
//! Timing assertions are bounds with generous slack for a shared machine, not speed
//! measurements (those live in `benches/`).

use crate::common;

use common::{Sandbox, alive, show};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Held while writing a script or forking: a script still open for writing in this
/// process when another test thread forks would make its exec fail with ETXTBSY.
static FORK: Mutex<()> = Mutex::new(());

const SLACK: Duration = Duration::from_secs(3);

pub(crate) fn lock() -> std::sync::MutexGuard<'static, ()> {
    FORK.lock().unwrap_or_else(|e| e.into_inner())
}

/// A sandbox with PATH dirs, a pid file and an execution log.
struct Env {
    sb: Sandbox,
}

impl Env {
    fn new() -> Env {
        let sb = Sandbox::new();
        for d in ["bin1", "bin2"] {
            std::fs::create_dir_all(sb.path().join(d)).unwrap();
        }
        Env { sb }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.sb.path().join(rel)
    }

    fn pids_file(&self) -> PathBuf {
        self.p("pids")
    }

    fn log_file(&self) -> PathBuf {
        self.p("exec.log")
    }

    /// Writes an executable script whose every run logs `NAME ARGS` and its pid.
    fn script(&self, rel: &str, body: &str) -> PathBuf {
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let text = format!(
            "#!/bin/sh\necho $$ >> '{pids}'\necho \"{name} $*\" >> '{log}'\n{body}\n",
            pids = self.pids_file().display(),
            log = self.log_file().display()
        );
        let _g = lock();
        self.sb.script(rel, &text)
    }

    /// A well-behaved ATIP tool.
    fn tool(&self, rel: &str, name: &str, version: &str) -> PathBuf {
        self.script(rel, &atip_body(name, version))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_file()).unwrap_or_default()
    }

    fn pids(&self) -> Vec<i32> {
        std::fs::read_to_string(self.pids_file())
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|s| s.parse().ok())
            .collect()
    }

    fn path_arg(&self) -> String {
        format!("{}:{}", self.p("bin1").display(), self.p("bin2").display())
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.sb.atip();
        c.arg("scan").args(args);
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let child = {
            let _g = lock();
            self.cmd(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn atip")
        };
        child.wait_with_output().unwrap()
    }

    /// `atip scan --output json --path bin1:bin2 --timeout 500ms ARGS` (unless ARGS set a
    /// timeout), expecting exit 0.
    fn scan(&self, args: &[&str]) -> Value {
        let path = self.path_arg();
        let mut all = vec!["--output", "json", "--path", &path];
        if !args.contains(&"--timeout") {
            all.extend(["--timeout", "500ms"]);
        }
        all.extend_from_slice(args);
        let out = self.run(&all);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)))
    }

    fn registry(&self) -> Value {
        let bytes = std::fs::read(self.sb.data_dir().join("registry.json")).expect("registry.json");
        serde_json::from_slice(&bytes).expect("registry.json parses")
    }

    /// `atip validate registry.json` exits 0.
    fn assert_registry_valid(&self) {
        let out = {
            let _g = lock();
            self.sb
                .atip()
                .args(["validate", "--kind", "registry"])
                .arg(self.sb.data_dir().join("registry.json"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        }
        .wait_with_output()
        .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "registry invalid: {}",
            show(&out)
        );
    }
}

impl Drop for Env {
    /// Kills anything a tool left behind, so a failing test does not leak processes.
    fn drop(&mut self) {
        for pid in self.pids() {
            if pid > 1 {
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

fn atip_body(name: &str, version: &str) -> String {
    format!(
        "if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi\necho 'usage: {name}'",
        meta(name, version)
    )
}

fn meta(name: &str, version: &str) -> String {
    format!(
        r#"{{"atip": {{"version": "0.6"}}, "name": "{name}", "version": "{version}", "description": "Test tool {name}", "commands": {{"run": {{"description": "Run it", "effects": {{"network": false, "destructive": false}}}}}}}}"#
    )
}

/// Asserts every recorded pid is gone (waiting a moment for the kernel).
fn assert_all_dead(env: &Env) {
    let until = Instant::now() + Duration::from_secs(2);
    let mut left: Vec<i32> = env.pids();
    while !left.is_empty() && Instant::now() < until {
        left.retain(|&p| alive(p));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(left.is_empty(), "tool processes still alive: {left:?}");
}

fn failed<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["failed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in failed: {report:#}"))
}

fn tool<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

fn registered(env: &Env) -> Vec<String> {
    env.registry()["tools"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect()
}

#[test]
fn hanging_and_term_ignoring_tools_time_out_and_are_killed() {
    let env = Env::new();
    env.tool("bin1/good", "good", "1.0.0");
    env.script("bin1/hang", "# \"atip\" --agent\nexec sleep 30");
    env.script(
        "bin2/noterm",
        "# \"atip\" --agent\ntrap '' TERM\nsleep 30 &\necho $! >> pids\nwait; sleep 30",
    );
    let start = Instant::now();
    let r = env.scan(&[]);
    assert!(
        start.elapsed() < Duration::from_millis(500) + SLACK,
        "scan took {:?}",
        start.elapsed()
    );
    assert_eq!(failed(&r, "hang")["reason"], "timeout");
    assert_eq!(failed(&r, "noterm")["reason"], "timeout");
    assert_eq!(registered(&env), ["good"]);
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn grandchildren_holding_stdout_do_not_delay_the_scan() {
    let env = Env::new();
    let esc = env.p("escaped.pid");
    env.script(
        "bin1/gc",
        &format!(
            "if [ \"$1\" = --agent ]; then\n( sleep 30 ) &\necho $! >> '{}'\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi",
            env.pids_file().display(),
            meta("gc", "1.0.0")
        ),
    );
    env.script(
        "bin2/gcsetsid",
        &format!(
            "if [ \"$1\" = --agent ]; then\nsetsid sh -c 'echo $$ > \"{}\"; exec sleep 30' &\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi",
            esc.display(),
            meta("gcsetsid", "1.0.0")
        ),
    );
    let start = Instant::now();
    let r = env.scan(&[]);
    assert!(
        start.elapsed() < Duration::from_millis(500) + SLACK,
        "scan waited on a grandchild: {:?}",
        start.elapsed()
    );
    assert!(tool(&r, "gc").is_some(), "{r:#}");
    assert!(tool(&r, "gcsetsid").is_some(), "{r:#}");
    assert_eq!(registered(&env), ["gc", "gcsetsid"]);
    // The grandchild in the tool's own group is gone with it.
    assert_all_dead(&env);
    // One that escaped with setsid is outside any group atip may kill: the test reaps it.
    if let Ok(pid) = std::fs::read_to_string(&esc)
        && let Ok(pid) = pid.trim().parse::<i32>()
    {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

fn tree(root: &Path, skip: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_entry(|e| e.path() != skip)
        .filter_map(Result::ok)
        .map(|e| e.path().to_path_buf())
        .filter(|p| !p.ends_with("pids") && !p.ends_with("exec.log"))
        .collect()
}

#[test]
fn hostile_names_never_become_paths() {
    let env = Env::new();
    let traversal = meta("../../X", "1.0.0");
    env.script(
        "bin1/trav",
        &format!("if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{traversal}\nEOF\nfi"),
    );
    // A valid document that names another tool: registered under its executable name.
    env.script(
        "bin1/alias",
        &format!(
            "if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nfi",
            meta("X", "1.0.0")
        ),
    );
    let data = env.sb.data_dir();
    let before = tree(env.sb.path(), &data);
    let r = env.scan(&[]);
    let after = tree(env.sb.path(), &data);
    assert_eq!(before, after, "files appeared outside the data dir");
    assert_eq!(failed(&r, "trav")["reason"], "invalid");
    let alias = tool(&r, "alias").expect("alias registered");
    assert!(
        alias["warnings"][0].as_str().unwrap().contains("\"X\""),
        "{alias}"
    );
    assert_eq!(registered(&env), ["alias"]);
    assert!(!env.sb.path().join("X").exists());
    assert!(!data.parent().unwrap().join("X").exists());
    for entry in walkdir::WalkDir::new(&data)
        .into_iter()
        .filter_map(Result::ok)
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        assert!(!name.contains("X") || name.contains("registry"), "{name}");
    }
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn bad_answers_are_reported_per_tool_and_never_registered() {
    let env = Env::new();
    env.tool("bin1/ok", "ok", "1.0.0");
    env.script(
        "bin1/flood",
        "# \"atip\" --agent\nprintf '{\"atip\":\"0.4\",\"name\":\"flood\",\"description\":\"'\nhead -c 20000000 /dev/zero | tr '\\000' a\nprintf '\"}'",
    );
    env.script(
        "bin1/badjson",
        "# \"atip\" --agent\nprintf '{\"atip\": {\"version\": \"0.6\"}, \"name\": '",
    );
    env.script("bin1/notjson", "# \"atip\" --agent\necho 'hello, not json'");
    env.script(
        "bin2/nonzero",
        &format!(
            "# --agent\ncat <<'EOF'\n{}\nEOF\nexit 3",
            meta("nonzero", "1.0.0")
        ),
    );
    env.script("bin2/schema", "# --agent\necho '{\"atip\": {\"version\": \"9.9\"}, \"name\": \"bad name!\", \"version\": 3}'");
    env.script("bin2/empty", "# \"atip\" --agent\nexit 0");
    // A longer timeout so that a loaded machine still lets the flood reach the cap.
    let r = env.scan(&["--timeout", "5s"]);
    assert_eq!(failed(&r, "flood")["reason"], "oversize");
    assert_eq!(failed(&r, "badjson")["reason"], "not-json");
    assert_eq!(failed(&r, "notjson")["reason"], "not-json");
    assert_eq!(failed(&r, "nonzero")["reason"], "exit-status");
    let schema = failed(&r, "schema");
    assert_eq!(schema["reason"], "invalid");
    assert!(
        !schema["diagnostics"].as_array().unwrap().is_empty(),
        "{schema}"
    );
    assert_eq!(failed(&r, "empty")["reason"], "no-output");
    assert_eq!(registered(&env), ["ok"]);
    assert_eq!(r["summary"]["failed"], 6);
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn stdin_is_closed_and_cwd_is_a_temp_dir() {
    let env = Env::new();
    env.script(
        "bin1/reader",
        &format!(
            "# --agent\ncat > /dev/null\ncat <<'EOF'\n{}\nEOF",
            meta("reader", "1.0.0")
        ),
    );
    env.script(
        "bin1/dropper",
        &format!(
            "# --agent\necho dropped > dropped.txt\npwd > '{}'\ncat <<'EOF'\n{}\nEOF",
            env.p("cwd.txt").display(),
            meta("dropper", "1.0.0")
        ),
    );
    let start = Instant::now();
    let r = env.scan(&[]);
    assert!(start.elapsed() < Duration::from_millis(500) + SLACK);
    assert!(tool(&r, "reader").is_some(), "{r:#}");
    assert!(tool(&r, "dropper").is_some(), "{r:#}");
    // atip ran in the sandbox root; the file must not be there (or in this test's cwd).
    assert!(!env.sb.path().join("dropped.txt").exists());
    assert!(
        !std::env::current_dir()
            .unwrap()
            .join("dropped.txt")
            .exists()
    );
    let cwd = std::fs::read_to_string(env.p("cwd.txt")).unwrap();
    let cwd = Path::new(cwd.trim());
    assert!(!cwd.starts_with(env.sb.path()), "ran in {cwd:?}");
    assert!(
        !cwd.exists(),
        "the probe's temp dir {cwd:?} was left behind"
    );
    assert_all_dead(&env);
}

#[test]
fn default_mode_never_runs_a_program_without_a_sign() {
    let env = Env::new();
    env.tool("bin1/real", "real", "1.0.0");
    env.script("bin1/canary", "echo 'a harmless program'");
    // Mentions --agent (an ssh-agent option) and ATIP in prose, but carries no ATIP key.
    env.script(
        "bin2/decoy",
        "# not an ATIP tool\ncase \"$1\" in --agent) echo 'needs SOCKET' >&2; exit 2;; esac",
    );
    let r = env.scan(&[]);
    assert_eq!(env.log().lines().collect::<Vec<_>>(), ["real --agent"]);
    assert_eq!(r["summary"]["noSign"], 2);
    assert_eq!(r["skipped"]["counts"]["no-sign"], 2);
    assert!(
        r["hints"][0].as_str().unwrap().contains("--probe help"),
        "{r:#}"
    );

    // --dry-run lists and runs nothing.
    let env2 = Env::new();
    env2.tool("bin1/real", "real", "1.0.0");
    env2.script("bin1/canary", "echo hi");
    let r = env2.scan(&["--dry-run", "--probe", "all"]);
    assert_eq!(env2.log(), "");
    let plan: Vec<&str> = r["wouldProbe"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(plan, ["canary", "real"]);
    assert!(!env2.sb.data_dir().exists(), "a dry run wrote something");

    // --probe none runs nothing either.
    let r = env2.scan(&["--probe", "none"]);
    assert_eq!(env2.log(), "");
    assert_eq!(r["summary"]["probed"], 0);

    // --probe help runs --help of unknown programs, and --agent only where it is mentioned;
    // a short script that answers --agent with a JSON file is a sign by itself.
    let env3 = Env::new();
    env3.script("bin1/canary", "echo hi");
    env3.script(
        "bin1/helpful",
        "case \"$1\" in --help) echo '  --agent  print metadata';; --agent) cat \"$(dirname \"$0\")/../meta.json\";; esac",
    );
    env3.sb.write("meta.json", meta("helpful", "1.0.0"));
    let r = env3.scan(&["--probe", "help"]);
    let mut log: Vec<String> = env3.log().lines().map(str::to_owned).collect();
    log.sort();
    assert_eq!(log, ["canary --help", "helpful --agent"]);
    assert!(tool(&r, "helpful").is_some(), "{r:#}");
    // The config allowlist probes a tool without a sign in auto mode.
    let env4 = Env::new();
    env4.script(
        "bin1/helpful",
        "case \"$1\" in --agent) cat \"$(dirname \"$0\")/../meta.txt\";; esac",
    );
    env4.sb.write("meta.txt", meta("helpful", "1.0.0"));
    env4.sb
        .write("config/config.json", r#"{"probe": {"allow": ["help*"]}}"#);
    let r = env4.scan(&[]);
    assert!(tool(&r, "helpful").is_some(), "{r:#}");
    assert_all_dead(&env);
    assert_all_dead(&env3);
}

#[test]
fn unsafe_path_entries_are_skipped_with_reasons() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.tool("bin1/real", "real", "1.0.0");
    let ww = env.p("ww");
    std::fs::create_dir(&ww).unwrap();
    env.tool("ww/planted", "planted", "1.0.0");
    std::fs::set_permissions(&ww, std::fs::Permissions::from_mode(0o777)).unwrap();
    env.tool("bin2/openfile", "openfile", "1.0.0");
    std::fs::set_permissions(
        env.p("bin2/openfile"),
        std::fs::Permissions::from_mode(0o777),
    )
    .unwrap();
    let path = format!(
        "{}::.:rel/bin:{}:{}:{}",
        env.p("bin1").display(),
        env.p("missing").display(),
        ww.display(),
        env.p("bin2").display()
    );
    let out = env.run(&["--output", "json", "--path", &path, "--timeout", "500ms"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let reasons: Vec<(String, String)> = r["skipped"]["dirs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["path"].as_str().unwrap().to_owned(),
                d["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("".to_string(), "empty".to_string()),
            (".".into(), "relative".into()),
            ("rel/bin".into(), "relative".into()),
            (env.p("missing").display().to_string(), "missing".into()),
            (ww.display().to_string(), "world-writable".into()),
        ]
    );
    let file = &r["skipped"]["files"][0];
    assert_eq!(file["name"], "openfile");
    assert_eq!(file["reason"], "world-writable");
    assert_eq!(registered(&env), ["real"]);
    assert_eq!(env.log().lines().collect::<Vec<_>>(), ["real --agent"]);
    assert_all_dead(&env);
}

#[test]
fn foreign_owned_dirs_need_allow_dir_and_skip_globs_apply() {
    use std::os::unix::fs::MetadataExt;
    let env = Env::new();
    env.tool("bin1/real", "real", "1.0.0");
    env.tool("bin1/internal-tool", "internal-tool", "1.0.0");
    let other = env.p("other");
    std::fs::create_dir(&other).unwrap();
    env.tool("other/theirs", "theirs", "1.0.0");
    // --skip leaves matching names out (the name stays taken, as the shell sees it).
    let r = env.scan(&["--skip", "internal-*"]);
    assert_eq!(r["skipped"]["files"][0]["name"], "internal-tool");
    assert_eq!(r["skipped"]["files"][0]["reason"], "skip-glob");
    assert_eq!(registered(&env), ["real"]);
    let me = std::fs::metadata(env.sb.path()).unwrap().uid();
    // Only root can hand a directory to another user; elsewhere the owner check is
    // covered by the unit tests of `paths`.
    if me == 0 {
        let c = std::ffi::CString::new(other.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 12345, 12345) }, 0);
        let path = format!("{}:{}", env.p("bin1").display(), other.display());
        let out = env.run(&[
            "--output",
            "json",
            "--path",
            &path,
            "--timeout",
            "500ms",
            "--skip",
            "internal-*",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["skipped"]["dirs"][0]["reason"], "foreign-owner", "{r:#}");
        assert!(
            r["skipped"]["dirs"][0]["detail"]
                .as_str()
                .unwrap()
                .contains("--allow-dir")
        );
        assert!(!registered(&env).contains(&"theirs".to_string()));
        // --allow-dir trusts its owner.
        let bin1 = env.p("bin1");
        let out = env.run(&[
            "--output",
            "json",
            "--path",
            bin1.to_str().unwrap(),
            "--allow-dir",
            other.to_str().unwrap(),
            "--timeout",
            "500ms",
            "--skip",
            "internal-*",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        assert_eq!(registered(&env), ["real", "theirs"]);
    }
    assert!(!env.log().contains("internal-tool"));
    assert_all_dead(&env);
}

#[test]
fn a_duplicated_name_always_resolves_to_the_first_dir() {
    let env = Env::new();
    env.tool("bin1/dup", "dup", "1.0.0");
    env.tool("bin2/dup", "dup", "2.0.0");
    for _ in 0..3 {
        let r = env.scan(&["--refresh"]);
        let t = tool(&r, "dup").unwrap();
        assert!(t["path"].as_str().unwrap().ends_with("bin1/dup"), "{t}");
        let shadowed = &r["skipped"]["files"][0];
        assert_eq!(shadowed["reason"], "shadowed");
        assert!(shadowed["path"].as_str().unwrap().ends_with("bin2/dup"));
        let reg = env.registry();
        assert!(
            reg["tools"]["dup"]["path"]
                .as_str()
                .unwrap()
                .ends_with("bin1/dup")
        );
        assert_eq!(reg["tools"]["dup"]["version"], "1.0.0");
    }
    assert!(!env.log().contains("bin2"));
    assert_all_dead(&env);
}

#[test]
fn warm_rescan_runs_nothing_and_changes_are_picked_up() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    env.tool("bin2/beta", "beta", "1.0.0");
    env.script("bin2/broken", "# \"atip\" --agent\nexit 4");
    let r = env.scan(&[]);
    assert_eq!(r["summary"]["new"], 2);
    assert_eq!(r["summary"]["probed"], 3);
    let runs = env.log().lines().count();
    assert_eq!(runs, 3);

    let r = env.scan(&[]);
    assert_eq!(env.log().lines().count(), runs, "a warm rescan ran a tool");
    assert_eq!(r["summary"]["probed"], 0);
    assert_eq!(r["summary"]["unchanged"], 2);
    assert_eq!(r["summary"]["new"], 0);
    assert_eq!(r["summary"]["updated"], 0);
    assert_eq!(r["registry"]["written"], false);
    let broken = failed(&r, "broken");
    assert_eq!(broken["cached"], true);
    assert!(
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "unchanged")
    );

    // A deleted metadata file is restored from the cached answer, without a probe.
    let meta_rel = env.registry()["tools"]["beta"]["metadata"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_file(env.sb.data_dir().join(&meta_rel)).unwrap();
    let r = env.scan(&[]);
    assert_eq!(r["summary"]["probed"], 0);
    assert_eq!(
        env.log().lines().count(),
        runs,
        "restoring metadata ran a tool"
    );
    let meta_rel = env.registry()["tools"]["beta"]["metadata"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(env.sb.data_dir().join(&meta_rel).is_file(), "{r:#}");

    // A changed tool is probed again; the others are not.
    std::thread::sleep(Duration::from_millis(20));
    env.tool("bin1/alpha", "alpha", "1.1.0");
    let r = env.scan(&[]);
    assert_eq!(r["summary"]["probed"], 1, "{r:#}");
    assert_eq!(tool(&r, "alpha").unwrap()["status"], "updated");
    assert_eq!(env.registry()["tools"]["alpha"]["version"], "1.1.0");
    assert_eq!(env.log().lines().last().unwrap(), "alpha --agent");

    // A removed tool leaves the registry.
    std::fs::remove_file(env.p("bin2/beta")).unwrap();
    let r = env.scan(&[]);
    assert_eq!(r["removed"], serde_json::json!(["beta"]));
    assert_eq!(registered(&env), ["alpha"]);

    // --refresh probes everything again; a tool found the same is not reported updated,
    // though its entry is rewritten with the new check time (whole seconds: wait one).
    let checked = env.registry()["tools"]["alpha"]["lastChecked"].clone();
    std::thread::sleep(Duration::from_millis(1100));
    let before = env.log().lines().count();
    let r = env.scan(&["--refresh"]);
    assert_ne!(env.registry()["tools"]["alpha"]["lastChecked"], checked);
    assert_eq!(r["summary"]["probed"], 2);
    assert_eq!(env.log().lines().count(), before + 2);
    assert_eq!(tool(&r, "alpha").unwrap()["status"], "unchanged", "{r:#}");
    assert_eq!(r["summary"]["updated"], 0, "{r:#}");
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn a_corrupt_registry_is_set_aside_and_rebuilt() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    env.sb
        .write("data/registry.json", "{\"version\": \"2\", \"tools\": {tru");
    let r = env.scan(&[]);
    assert_eq!(registered(&env), ["alpha"]);
    env.assert_registry_valid();
    let backups: Vec<String> = std::fs::read_dir(env.sb.data_dir())
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("registry.json.corrupt"))
        .collect();
    assert_eq!(backups.len(), 1, "{r:#}");
    assert!(r["registry"]["corruptBackup"].is_string(), "{r:#}");
    // A corrupt cache only makes the scan cold.
    env.sb.write("data/cache/scan-cache.bin", "garbage");
    let r = env.scan(&[]);
    assert_eq!(r["summary"]["probed"], 1);
    assert!(
        r["warnings"][0].as_str().unwrap().contains("cache"),
        "{r:#}"
    );
    assert_all_dead(&env);
}

#[test]
fn concurrent_scans_all_finish_and_agree() {
    let env = Env::new();
    let names = ["t1", "t2", "t3", "t4", "t5"];
    for (i, n) in names.iter().enumerate() {
        env.tool(&format!("bin{}/{n}", i % 2 + 1), n, "1.0.0");
    }
    let path = env.path_arg();
    let children: Vec<_> = (0..8)
        .map(|_| {
            let _g = lock();
            env.cmd(&["--output", "json", "--path", &path, "--timeout", "2s"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let r: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(r["tools"].as_array().unwrap().len(), 5, "{r:#}");
    }
    assert_eq!(registered(&env), names);
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn kill_9_mid_scan_leaves_a_valid_registry() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    env.scan(&[]);
    let old = env.registry();
    env.tool("bin2/beta", "beta", "1.0.0");
    env.script("bin2/slow", "# \"atip\" --agent\nexec sleep 30");
    let path = env.path_arg();
    let child = {
        let _g = lock();
        env.cmd(&["--output", "json", "--path", &path, "--timeout", "10s"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    // Wait until the slow probe runs, then kill atip outright.
    let until = Instant::now() + Duration::from_secs(10);
    while !env.log().contains("slow --agent") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut child = child;
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    child.wait().unwrap();
    env.assert_registry_valid();
    assert_eq!(
        env.registry(),
        old,
        "the registry changed under a killed scan"
    );
    // The orphaned probe is killed by the test (atip had no chance to).
    for pid in env.pids() {
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    // The next scan completes and registers everything.
    std::fs::remove_file(env.p("bin2/slow")).unwrap();
    env.scan(&[]);
    assert_eq!(registered(&env), ["alpha", "beta"]);
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn sigint_kills_running_probes_and_writes_nothing() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    env.scan(&[]);
    let old = env.registry();
    env.tool("bin2/beta", "beta", "1.0.0");
    env.script("bin2/slow", "# \"atip\" --agent\nexec sleep 30");
    let path = env.path_arg();
    let mut child = {
        let _g = lock();
        env.cmd(&["--output", "json", "--path", &path, "--timeout", "20s"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let until = Instant::now() + Duration::from_secs(10);
    while !env.log().contains("slow --agent") && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Instant::now();
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(
        sent.elapsed() < SLACK,
        "atip took {:?} to stop",
        sent.elapsed()
    );
    assert_eq!(status.code(), Some(130));
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(
        env.registry(),
        old,
        "an interrupted scan wrote the registry"
    );
    // The hanging probe was killed with its group, not left behind.
    assert_all_dead(&env);
}

fn sha256_hex(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}

fn shim(name: &str, hash: Option<&str>, desc: &str) -> String {
    let hash = hash
        .map(|h| format!(r#""hash": "sha256:{h}", "#))
        .unwrap_or_default();
    format!(
        r#"{{"atip": {{"version": "0.6"}}, "binary": {{{hash}"name": "{name}", "version": "1.0"}}, "description": "{desc}", "trust": {{"source": "community"}}, "commands": {{"go": {{"description": "Go", "effects": {{"network": false}}}}}}}}"#
    )
}

#[test]
fn shims_overrides_and_patterns_follow_precedence() {
    let env = Env::new();
    let legacy = env.script("bin1/legacy", "echo legacy");
    env.script("bin1/hashed", "echo hashed");
    let hashed_hex = sha256_hex(&env.p("bin1/hashed"));
    env.script("bin2/overridden", "echo overridden");
    env.tool("bin2/native", "native", "1.0.0");
    env.script(
        "bin2/vendored",
        r#"if [ "$1" = --agent ]; then
cat <<'EOF'
{"atip": {"version": "0.6", "features": ["trust-v1"]}, "name": "vendored", "version": "2.0.0", "description": "Vendor-published metadata", "trust": {"source": "vendor", "verified": true}}
EOF
fi"#,
    );
    // Name-keyed shims from --shims; a shim for a tool that is not installed.
    env.sb.write(
        "extra/legacy.json",
        shim("legacy", None, "Legacy from --shims"),
    );
    env.sb
        .write("extra/absent.json", shim("absent", None, "Not installed"));
    env.sb.write(
        "extra/native.json",
        shim("native", None, "Loses to the native answer"),
    );
    // A lower layer (user data dir) loses to --shims for the same name.
    env.sb.write(
        "data/shims/legacy.json",
        shim("legacy", None, "Legacy from the data dir"),
    );
    // Content-addressed: matches the binary; another one with a wrong binary.hash.
    env.sb.write(
        &format!("data/shims/sha256/{hashed_hex}.json"),
        shim("hashed", Some(&hashed_hex), "Hashed shim"),
    );
    env.sb.write(
        "data/shims/hashed.json",
        shim("hashed", None, "Name shim loses to hash shim"),
    );
    let wrong = "0".repeat(64);
    env.sb.write(
        &format!("data/shims/sha256/{wrong}.json"),
        shim("hashed", Some(&"1".repeat(64)), "Mismatched"),
    );
    // Override beats shims; a pattern file merged into a tool.
    env.sb.write(
        "data/shims/overridden.json",
        shim("overridden", None, "Shim"),
    );
    env.sb.write(
        "config/overrides/overridden.json",
        shim("overridden", None, "User override"),
    );
    env.sb.write(
        "data/patterns/legacy.json",
        r#"{"tool": "legacy", "patterns": [{"name": "twice", "description": "Run it twice", "steps": [{"command": "legacy"}, {"command": "legacy"}]}]}"#,
    );
    let extra = env.p("extra");
    let r = env.scan(&["--shims", extra.to_str().unwrap()]);
    let src = |n: &str| tool(&r, n).map(|t| t["source"].as_str().unwrap().to_owned());
    assert_eq!(src("legacy").as_deref(), Some("shim"));
    assert_eq!(src("hashed").as_deref(), Some("shim-hash"));
    assert_eq!(src("overridden").as_deref(), Some("override"));
    assert_eq!(src("native").as_deref(), Some("native"));
    assert_eq!(src("absent"), None);
    assert_eq!(tool(&r, "overridden").unwrap()["trust"], "community");
    let rejected = &r["shims"]["rejected"];
    assert_eq!(rejected.as_array().unwrap().len(), 1, "{r:#}");
    assert!(
        rejected[0]["path"]
            .as_str()
            .unwrap()
            .ends_with(&format!("{wrong}.json"))
    );
    assert!(!rejected[0]["diagnostics"].as_array().unwrap().is_empty());
    assert_eq!(tool(&r, "vendored").unwrap()["trust"], "vendor");
    assert_eq!(tool(&r, "native").unwrap()["trust"], "native");
    assert_eq!(
        registered(&env),
        ["hashed", "legacy", "native", "overridden", "vendored"]
    );
    assert_eq!(env.registry()["tools"]["vendored"]["trust"], "vendor");
    // The winner's document (with the merged pattern) is what `get` returns.
    let reg = env.registry();
    assert_eq!(reg["tools"]["legacy"]["description"], "Legacy from --shims");
    assert_eq!(reg["tools"]["hashed"]["description"], "Hashed shim");
    assert_eq!(reg["tools"]["overridden"]["description"], "User override");
    // Metadata bound to the bytes pins their sha256; metadata found by name pins the
    // stat alone (the binary is not read).
    for name in ["hashed", "native", "vendored"] {
        let h = reg["tools"][name]["hash"].as_str().unwrap_or_default();
        assert!(h.starts_with("sha256:"), "{name}: {reg:#}");
    }
    assert_eq!(
        reg["tools"]["hashed"]["hash"],
        format!("sha256:{hashed_hex}")
    );
    for name in ["legacy", "overridden"] {
        assert!(reg["tools"][name].get("hash").is_none(), "{name}: {reg:#}");
        assert!(reg["tools"][name]["fingerprint"]["ino"].is_u64(), "{name}");
    }
    let meta_file = env
        .sb
        .data_dir()
        .join(reg["tools"]["legacy"]["metadata"].as_str().unwrap());
    let doc: Value = serde_json::from_slice(&std::fs::read(meta_file).unwrap()).unwrap();
    assert_eq!(doc["patterns"][0]["name"], "twice");
    // No shimmed program was ever run, and only the native one was probed.
    let mut log: Vec<String> = env.log().lines().map(str::to_owned).collect();
    log.sort();
    assert_eq!(log, ["native --agent", "vendored --agent"]);
    // Changing the binary drops its content-addressed shim (falls back to the name shim).
    let _ = legacy;
    env.script("bin1/hashed", "echo hashed v2");
    let r = env.scan(&["--shims", extra.to_str().unwrap()]);
    assert_eq!(tool(&r, "hashed").unwrap()["source"], "shim");
    assert_eq!(
        tool(&r, "vendored").unwrap()["trust"],
        "vendor",
        "trust lost on a warm scan"
    );
    assert_eq!(
        env.registry()["tools"]["hashed"]["description"],
        "Name shim loses to hash shim"
    );
    env.assert_registry_valid();
    assert_all_dead(&env);
}

#[test]
fn exit_codes_for_usage_unwritable_registry_and_lock_timeout() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    let path = env.path_arg();
    // Usage.
    let out = env.run(&["--timeout", "soon"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = env.run(&["--path", &path, "--skip", "a[", "--output", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // Bad config.
    env.sb
        .write("config/config.json", r#"{"probe": {"allow": 3}}"#);
    let out = env.run(&["--path", &path]);
    assert_eq!(out.status.code(), Some(78), "{}", show(&out));
    std::fs::remove_file(env.p("config/config.json")).unwrap();
    // A data dir that cannot be created: 73, with a JSON error on stderr.
    env.sb.write("plainfile", "x");
    let out = {
        let _g = lock();
        env.sb
            .atip()
            .args(["--output", "json", "--data-dir"])
            .arg(env.p("plainfile/data"))
            .args(["scan", "--path", &path, "--timeout", "500ms"])
            .output()
            .unwrap()
    };
    assert_eq!(out.status.code(), Some(73), "{}", show(&out));
    let err: Value = serde_json::from_slice(&out.stderr).expect("JSON error on stderr");
    assert_eq!(err["error"]["category"], "output");
    // The writer lock held elsewhere: 75 after ATIP_LOCK_TIMEOUT.
    env.scan(&[]);
    let lockf = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(env.sb.data_dir().join("registry.lock"))
        .unwrap();
    lockf.lock().unwrap();
    env.tool("bin1/beta", "beta", "1.0.0");
    let out = {
        let _g = lock();
        env.cmd(&["--path", &path, "--timeout", "500ms"])
            .env("ATIP_LOCK_TIMEOUT", "300ms")
            .output()
            .unwrap()
    };
    assert_eq!(out.status.code(), Some(75), "{}", show(&out));
    drop(lockf);
    assert_all_dead(&env);
}

#[test]
fn text_output_summarises() {
    let env = Env::new();
    env.tool("bin1/alpha", "alpha", "1.0.0");
    env.script("bin1/broken", "# \"atip\" --agent\nexit 4");
    let path = env.path_arg();
    let out = env.run(&["--output", "text", "--path", &path, "--timeout", "500ms"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    // The summary: one new tool named, the failed probe under what needs attention.
    assert!(text.contains("1 tool in the registry (written)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["new", "1", "alpha"])),
        "{text}"
    );
    assert!(text.contains("Needs attention (1)"), "{text}");
    assert!(
        text.contains("probe failed  broken (exit-status)"),
        "{text}"
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_all_dead(&env);
}

/// The team's synthetic PATH generator, outside this repository.
fn generator() -> Option<PathBuf> {
    let p = std::env::var_os("ATIP_FAKE_PATH_GEN")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench/make-fake-path.sh")
        });
    p.is_file().then_some(p)
}

#[test]
#[ignore = "needs make-fake-path.sh (ATIP_FAKE_PATH_GEN), gcc and python3; run with --ignored"]
fn synthetic_tree_end_to_end() {
    let gen_path = generator().expect("set ATIP_FAKE_PATH_GEN to make-fake-path.sh");
    let env = Env::new();
    let tree = env.p("tree");
    let out = {
        let _g = lock();
        Command::new("bash")
            .arg(&gen_path)
            .args(["-n", "50", "-o"])
            .arg(&tree)
            .env("HOSTILE_SLEEP", "5")
            .env("HANG_SLEEP", "30")
            .env("HUGE_MB", "20")
            .env("BIG_KB", "64")
            .output()
            .unwrap()
    };
    assert!(out.status.success(), "{}", show(&out));
    let path = format!(
        "{}:{}",
        tree.join("bin1").display(),
        tree.join("bin2").display()
    );
    let scan = |extra: &[&str]| -> Value {
        let mut args = vec!["--output", "json", "--path", &path, "--timeout", "1s"];
        args.extend_from_slice(extra);
        let out = env.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let start = Instant::now();
    let r = scan(&[]);
    assert!(
        start.elapsed() < Duration::from_secs(1) + SLACK,
        "{:?}",
        start.elapsed()
    );
    let log = std::fs::read_to_string(tree.join("exec.log")).unwrap();
    assert!(!log.contains("canary"), "canaries ran:\n{log}");
    assert!(!log.contains("decoy"), "the decoy ran:\n{log}");
    let names = registered(&env);
    for expected in [
        "atip-sh-01",
        "atip-c-01",
        "atip-py",
        "atip-nested",
        "atip-dup",
        "atip-alias",
    ] {
        assert!(
            names.contains(&expected.to_string()),
            "{expected} missing: {names:?}"
        );
    }
    assert!(
        !names.contains(&"atip-shadowed".to_string()),
        "a shadowed tool was registered"
    );
    assert!(
        env.registry()["tools"]["atip-dup"]["path"]
            .as_str()
            .unwrap()
            .contains("/bin1/")
    );
    for (name, reason) in [
        ("hostile-badjson", "not-json"),
        ("hostile-exit-nonzero", "exit-status"),
        ("hostile-huge-stdout", "oversize"),
        ("hostile-name-traversal", "invalid"),
        ("hostile-schema-invalid", "invalid"),
    ] {
        assert_eq!(failed(&r, name)["reason"], reason, "{name}");
    }
    env.assert_registry_valid();
    // Warm: nothing runs.
    let before = log.lines().count();
    let r = scan(&[]);
    assert_eq!(r["summary"]["probed"], 0);
    let log = std::fs::read_to_string(tree.join("exec.log")).unwrap();
    assert_eq!(log.lines().count(), before, "a warm rescan ran something");
    // Kill whatever escaped into its own session (setsid grandchildren).
    let _ = Command::new("pkill")
        .arg("-KILL")
        .arg("-f")
        .arg(tree.to_str().unwrap())
        .status();
}

#[test]
fn builtin_shims_register_shipped_tools_and_lose_to_every_other_layer() {
    let env = Env::new();
    // Stand-ins named like shipped shims: no sign, so never run in default mode.
    env.script("bin1/rm", "echo fake rm");
    env.script("bin1/tar", "echo fake tar");
    // A dry run already resolves them from the built-in layer, and writes nothing.
    let dry = env.scan(&["--dry-run"]);
    let names: Vec<&str> = dry["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["rm", "tar"], "{dry}");
    assert!(!env.sb.data_dir().exists(), "a dry run wrote something");
    let r = env.scan(&[]);
    assert!(!env.sb.data_dir().join("builtin-shims").exists());
    let reg = env.registry();
    // Built-in shims are used from memory: nothing is written for them.
    let builtin_dir = std::path::PathBuf::from("builtin");
    for name in ["rm", "tar"] {
        let e = &reg["tools"][name];
        assert_eq!(e["source"], "shim", "{name}: {e}");
        assert_eq!(e["trust"], "community", "{name}: {e}");
        assert_eq!(
            e["shimRegistry"],
            builtin_dir.to_str().unwrap(),
            "{name}: {e}"
        );
    }
    assert!(
        reg["tools"]["rm"]["effects"]
            .as_str()
            .unwrap()
            .contains("destructive"),
        "{}",
        reg["tools"]["rm"]
    );
    // Shipped shims for tools that are not installed (git, curl, …) are not registered.
    assert!(reg["tools"].get("git").is_none(), "{reg}");
    assert_eq!(env.log(), "", "the stand-ins were run: {r}");
    env.assert_registry_valid();

    // A user's --shims entry wins over the built-in one.
    env.sb
        .write("extra/rm.json", shim("rm", None, "Site-specific rm"));
    let extra = env.p("extra");
    env.scan(&["--shims", extra.to_str().unwrap()]);
    let reg = env.registry();
    assert_eq!(reg["tools"]["rm"]["description"], "Site-specific rm");
    assert_eq!(
        reg["tools"]["tar"]["shimRegistry"],
        builtin_dir.to_str().unwrap()
    );

    // --no-builtin-shims leaves them out: the stand-ins drop out of the registry.
    env.scan(&["--no-builtin-shims"]);
    let reg = env.registry();
    assert!(reg["tools"].get("rm").is_none(), "{reg}");
    assert!(reg["tools"].get("tar").is_none(), "{reg}");
    assert_eq!(env.log(), "");
}

/// A directory unchanged for a while is listed once: the next scan takes its entries from
/// the scan cache (spec/scan.md §4). The repository's own fixture directory has been
/// unchanged since the checkout; a fresh directory is never kept (its ctime is too recent
/// to vouch for), so it is listed every time.
#[test]
fn a_calm_directory_is_listed_once_and_a_fresh_one_every_time() {
    let env = Env::new();
    env.tool("bin1/real", "real", "1.0.0");
    let calm = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    let path = format!("{}:{}", calm.display(), env.p("bin1").display());
    let kept = |n| format!("{n} of 2 directory listing(s) taken from the scan cache");
    let local = atip::statat::keeps_directory_times(&calm);
    // (The fixtures are MCP servers: skipped by name, they are still listed.)
    for (round, want) in [(1, 0), (2, usize::from(local)), (3, usize::from(local))] {
        let out = env.run(&["-v", "--output", "json", "--skip", "*.py", "--path", &path]);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&kept(want)), "scan {round}: {}", show(&out));
        assert!(env.registry()["tools"]["real"].is_object(), "scan {round}");
    }
    // A file added to the fresh directory is found at once.
    env.tool("bin1/added", "added", "1.0.0");
    let out = env.run(&["-v", "--output", "json", "--skip", "*.py", "--path", &path]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        env.registry()["tools"]["added"].is_object(),
        "{}",
        show(&out)
    );
}

/// `v` with `dir` spelled `DATA`, timestamps `TS` and durations 0: what two scans of
/// the same files into different data dirs must agree on.
fn masked(v: &Value, dir: &Path) -> Value {
    let dir = dir.display().to_string();
    match v {
        Value::String(s) if s.len() > 19 && s.as_bytes()[4] == b'-' && s.ends_with('Z') => {
            "TS".into()
        }
        Value::String(s) => s.replace(&dir, "DATA").into(),
        Value::Array(a) => a.iter().map(|x| masked(x, dir.as_ref())).collect(),
        Value::Object(o) => (o.iter())
            .map(|(k, x)| {
                let timing = k.contains("elapsed") || k.contains("duration");
                let x = if timing {
                    0.into()
                } else {
                    masked(x, dir.as_ref())
                };
                (k.replace(&dir, "DATA"), x)
            })
            .collect(),
        other => other.clone(),
    }
}

#[test]
fn resolving_on_two_threads_decides_what_one_thread_does() {
    let env = Env::new();
    // Enough names for resolve to split them (256 at least): shims for most, two
    // layers for some (a loser each), a pattern file, and names nothing describes.
    for i in 0..400 {
        env.script(&format!("bin1/t{i:03}"), "echo t");
        if i % 5 != 0 {
            env.sb.write(
                &format!("extra/t{i:03}.json"),
                shim(&format!("t{i:03}"), None, &format!("Tool {i}")),
            );
        }
        if i % 7 == 0 {
            env.sb.write(
                &format!("data/shims/t{i:03}.json"),
                shim(&format!("t{i:03}"), None, "Loses to --shims"),
            );
        }
    }
    let extra = env.p("extra");
    let shims = extra.to_str().unwrap();
    let (one, two) = (env.p("one"), env.p("two"));
    let scan_in = |dir: &Path, jobs: &str| {
        let dir = dir.to_str().unwrap();
        env.scan(&["--data-dir", dir, "--jobs", jobs, "--shims", shims])
    };
    for round in ["cold", "warm"] {
        let (a, b) = (scan_in(&one, "1"), scan_in(&two, "2"));
        assert_eq!(a["summary"]["names"], 400, "{round}");
        assert_eq!(masked(&a, &one), masked(&b, &two), "{round} reports");
        let registry = |d: &Path| -> Value {
            serde_json::from_slice(&std::fs::read(d.join("registry.json")).unwrap()).unwrap()
        };
        assert_eq!(
            masked(&registry(&one), &one),
            masked(&registry(&two), &two),
            "{round} registries"
        );
        assert_eq!(registry(&two)["tools"].as_object().unwrap().len(), 320);
    }
    assert!(env.log().is_empty(), "nothing ran: {}", env.log());
}
