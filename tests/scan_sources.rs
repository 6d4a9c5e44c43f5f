//! `atip scan` as a pipeline of metadata sources: installed files, aliases, failing
//! sources that lose nothing, `--explain`. Every test runs the real binary in a sandbox;
//! every program it plants logs its runs, and the tests assert what was (not) run.

use crate::common;

use common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Writing a script and spawning must not interleave (ETXTBSY): the same lock as the
/// other scan tests, which run in this binary.
use super::scan::lock;

struct Env {
    sb: Sandbox,
}

impl Env {
    fn new() -> Env {
        Env { sb: Sandbox::new() }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.sb.path().join(rel)
    }

    /// An executable script logging `NAME ARGS` on every run.
    fn script(&self, rel: &str, body: &str) -> PathBuf {
        let name = Path::new(rel).file_name().unwrap().to_str().unwrap();
        let text = format!(
            "#!/bin/sh\necho \"{name} $*\" >> '{log}'\n{body}\n",
            log = self.p("exec.log").display()
        );
        let _g = lock();
        self.sb.script(rel, &text)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.p("exec.log")).unwrap_or_default()
    }

    fn run(&self, path: &str, args: &[&str]) -> Output {
        let child = {
            let _g = lock();
            let mut c: Command = self.sb.atip();
            c.args([
                "scan",
                "--output",
                "json",
                "--timeout",
                "2s",
                "--path",
                path,
            ])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            c.spawn().expect("spawn atip")
        };
        child.wait_with_output().unwrap()
    }

    fn scan(&self, path: &str, args: &[&str]) -> Value {
        let out = self.run(path, args);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(&out)))
    }

    fn registry(&self) -> Value {
        let bytes = std::fs::read(self.sb.data_dir().join("registry.json")).expect("registry.json");
        serde_json::from_slice(&bytes).unwrap()
    }
}

fn meta(name: &str, desc: &str) -> String {
    format!(
        r#"{{"atip": {{"version": "0.6"}}, "name": "{name}", "version": "1.0.0", "description": "{desc}", "commands": {{"run": {{"description": "Run it", "effects": {{"network": false}}}}}}}}"#
    )
}

fn shim(name: &str, desc: &str) -> String {
    format!(
        r#"{{"atip": {{"version": "0.6"}}, "binary": {{"name": "{name}", "version": "1.0"}}, "description": "{desc}", "commands": {{"go": {{"description": "Go", "effects": {{"network": false}}}}}}}}"#
    )
}

/// A tool answering `--agent` with its metadata from a heredoc.
fn native_body(name: &str) -> String {
    format!(
        "if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi",
        meta(name, &format!("native {name}"))
    )
}

fn tool<'a>(report: &'a Value, name: &str) -> Option<&'a Value> {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn metadata_installed_beside_the_tool_is_used_without_running_it() {
    let env = Env::new();
    // A package under a prefix: its bin and its share/agent-tools.
    env.script("pkg/bin/itool", "echo 'no sign here'");
    env.sb.write(
        "pkg/share/agent-tools/tools/itool.json",
        meta("itool", "installed by its package"),
    );
    env.script("pkg/bin/ishim", "echo 'no sign either'");
    env.sb.write(
        "pkg/share/agent-tools/shims/ishim.json",
        shim("ishim", "a shim the package installed"),
    );
    // An invalid installed file is listed, never silently dropped.
    env.script("pkg/bin/broken", "echo broken");
    env.sb
        .write("pkg/share/agent-tools/tools/broken.json", r#"{"atip": 5}"#);
    // The protocol's canonical XDG location describes a tool anywhere on PATH.
    env.script("other/xtool", "echo xtool");
    env.sb.write(
        "xdg-system/agent-tools/tools/xtool.json",
        meta("xtool", "from XDG_DATA_DIRS"),
    );
    let path = format!(
        "{}:{}",
        env.p("pkg/bin").display(),
        env.p("other").display()
    );
    let r = env.scan(&path, &[]);
    assert_eq!(
        env.log(),
        "",
        "a tool with installed metadata was run: {r:#}"
    );
    for (name, desc) in [
        ("itool", "installed by its package"),
        ("ishim", "a shim the package installed"),
        ("xtool", "from XDG_DATA_DIRS"),
    ] {
        let t = tool(&r, name).unwrap_or_else(|| panic!("{name} missing: {r:#}"));
        assert_eq!(t["source"], "installed", "{t}");
        assert_eq!(t["trust"], "vendor", "{t}");
        assert_eq!(env.registry()["tools"][name]["description"], desc);
    }
    assert!(tool(&r, "broken").is_none());
    let rejected = r["shims"]["rejected"].to_string();
    assert!(rejected.contains("broken.json"), "{r:#}");
    // `atip list --source installed` knows the class.
    let out = env
        .sb
        .atip()
        .args(["list", "--source", "installed", "--output", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        listed.contains("itool") && listed.contains("xtool"),
        "{listed}"
    );
}

#[test]
fn every_name_of_a_file_is_registered_and_the_file_is_probed_once() {
    let env = Env::new();
    let real = env.script("bin1/real", &native_body("real"));
    std::os::unix::fs::symlink(&real, env.p("bin1/real-link")).unwrap();
    std::fs::create_dir_all(env.p("bin2")).unwrap();
    std::fs::hard_link(&real, env.p("bin2/real-hard")).unwrap();
    let path = format!("{}:{}", env.p("bin1").display(), env.p("bin2").display());
    let r = env.scan(&path, &[]);
    assert_eq!(
        env.log().lines().count(),
        1,
        "probed more than once: {}",
        env.log()
    );
    let reg = env.registry();
    let files: Vec<&str> = ["real", "real-link", "real-hard"]
        .iter()
        .map(|n| {
            reg["tools"][n]["metadata"]
                .as_str()
                .unwrap_or_else(|| panic!("{n} not registered: {r:#}"))
        })
        .collect();
    assert!(
        files.iter().all(|f| *f == files[0]),
        "{files:?}: one shared metadata file"
    );
    assert_eq!(r["summary"]["names"], 3);
    assert_eq!(r["summary"]["executables"], 1, "{r:#}");
    // Each name records its own path.
    assert!(
        reg["tools"]["real-hard"]["path"]
            .as_str()
            .unwrap()
            .ends_with("bin2/real-hard")
    );
}

#[test]
fn a_failing_source_keeps_its_entries_and_exits_non_zero() {
    let env = Env::new();
    env.script("bin1/st", "echo st");
    env.sb.write("myshims/st.json", shim("st", "from my shims"));
    env.script("bin1/real", &native_body("real"));
    let path = env.p("bin1").display().to_string();
    let shims = env.p("myshims");
    let r = env.scan(&path, &["--shims", shims.to_str().unwrap()]);
    assert_eq!(tool(&r, "st").unwrap()["source"], "shim", "{r:#}");
    // The shim directory becomes unreadable (a symlink loop: even root cannot list it).
    std::fs::rename(&shims, env.p("moved")).unwrap();
    std::os::unix::fs::symlink(env.p("loop-b"), &shims).unwrap();
    std::os::unix::fs::symlink(&shims, env.p("loop-b")).unwrap();
    let out = env.run(&path, &["--shims", shims.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["sourceFailures"][0]["source"], "shims", "{r:#}");
    // Text mode says it on stderr too.
    let mut c = env.sb.atip();
    c.args([
        "scan",
        "--output",
        "text",
        "--path",
        &path,
        "--shims",
        shims.to_str().unwrap(),
    ]);
    let text = c.output().unwrap();
    assert_eq!(text.status.code(), Some(1), "{}", show(&text));
    assert!(
        String::from_utf8_lossy(&text.stderr).contains("were kept"),
        "{}",
        show(&text)
    );
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("kept"),
        "{}",
        show(&text)
    );
    let st = tool(&r, "st").unwrap();
    assert_eq!(st["status"], "kept", "{st}");
    assert_eq!(r["summary"]["kept"], 1);
    let reg = env.registry();
    assert_eq!(reg["tools"]["st"]["description"], "from my shims");
    assert!(reg["tools"]["real"].is_object());
    // Fixed: the next scan is clean again.
    std::fs::remove_file(&shims).unwrap();
    std::fs::rename(env.p("moved"), &shims).unwrap();
    let r = env.scan(&path, &["--shims", shims.to_str().unwrap()]);
    assert_eq!(r["sourceFailures"], serde_json::json!([]));
    assert_eq!(tool(&r, "st").unwrap()["status"], "unchanged", "{r:#}");
}

/// Unmounts a tmpfs when dropped.
struct Mount(PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_loses_no_tool() {
    let env = Env::new();
    let data = env.sb.data_dir();
    std::fs::create_dir_all(&data).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&data)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("SKIPPED: a_full_disk_loses_no_tool needs to mount a small tmpfs (root)");
        return;
    }
    let _m = Mount(data.clone());
    // Stand-ins for shipped shims (rm, tar) and a native tool.
    env.script("bin1/rm", "echo fake rm");
    env.script("bin1/tar", "echo fake tar");
    env.script("bin1/real", &native_body("real"));
    let path = env.p("bin1").display().to_string();
    let r = env.scan(&path, &[]);
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&r), ["real", "rm", "tar"], "{r:#}");
    // Fill the disk to the last byte.
    let mut filler = std::fs::File::create(data.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while std::io::Write::write_all(&mut filler, &block).is_ok() {}
    drop(filler);
    // A rescan on the full disk keeps every tool (nothing needs writing).
    let r = env.scan(&path, &[]);
    assert_eq!(names(&r), ["real", "rm", "tar"], "{r:#}");
    assert_eq!(r["summary"]["removed"], 0);
    // A new tool cannot be stored: the scan says so (73) and the registry is as it was.
    env.script("bin1/newer", &native_body("newer"));
    let out = env.run(&path, &["--refresh"]);
    assert_eq!(out.status.code(), Some(73), "{}", show(&out));
    let reg = env.registry();
    for n in ["real", "rm", "tar"] {
        assert!(reg["tools"][n].is_object(), "{n} lost: {reg:#}");
    }
    // Space again: everything, the new tool too.
    std::fs::remove_file(data.join("filler")).unwrap();
    let r = env.scan(&path, &[]);
    assert_eq!(names(&r), ["newer", "real", "rm", "tar"], "{r:#}");
}

#[test]
fn explain_says_which_evidence_and_why_others_lost() {
    let env = Env::new();
    env.script("bin1/real", &native_body("real"));
    env.sb
        .write("myshims/real.json", shim("real", "a shim that loses"));
    let path = env.p("bin1").display().to_string();
    let shims = env.p("myshims");
    let out = env.run(
        &path,
        &["--shims", shims.to_str().unwrap(), "--explain", "real"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let ex: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(ex["name"], "real");
    let evidence = ex["evidence"].to_string();
    assert!(evidence.contains("sign: flag-key"), "{ex:#}");
    assert!(evidence.contains("valid --agent answer"), "{ex:#}");
    assert_eq!(ex["candidates"][0]["source"], "native");
    assert_eq!(ex["candidates"][0]["won"], true);
    assert_eq!(ex["candidates"][1]["source"], "shim");
    assert!(
        ex["candidates"][1]["why"]
            .as_str()
            .unwrap()
            .contains("outranks"),
        "{ex:#}"
    );
    // Text form; and a name that is not there says so.
    let mut c = env.sb.atip();
    c.args([
        "scan",
        "--output",
        "text",
        "--path",
        &path,
        "--explain",
        "nope",
    ]);
    let out = c.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no executable named"), "{}", show(&out));
    // The report counts executables per evidence class.
    let r = env.scan(&path, &[]);
    assert_eq!(r["summary"]["evidence"]["flag-key"], 1, "{r:#}");
}
