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
        common::skip_optional("a_full_disk_loses_no_tool needs to mount a small tmpfs (root)");
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

#[test]
fn protocol_0_1_documents_are_accepted_as_written_by_validate_and_scan_alike() {
    let env = Env::new();
    // 0.1 style: a string version, options and arguments without descriptions.
    let doc = r#"{"atip": "0.1", "name": "hub", "version": "1.2.0", "description": "A 0.1 tool",
      "commands": {"issue": {"description": "Issues", "commands": {
        "list": {"description": "List issues",
                 "options": [{"name": "state", "flags": ["-s", "--state"], "type": "enum", "enum": ["open", "closed"]}],
                 "effects": {"network": true, "idempotent": true}},
        "close": {"description": "Close an issue",
                  "arguments": [{"name": "number", "type": "integer", "required": true}],
                  "effects": {"network": true}}}}}}"#;
    env.sb.write("pkg/share/agent-tools/tools/hub.json", doc);
    env.script("pkg/bin/hub", "echo hub");
    // An RFC-style name-keyed shim: a plain document, no `binary`.
    env.sb.write(
        "myshims/oldtool.json",
        r#"{"atip": "0.1", "name": "oldtool", "version": "3.0", "description": "Legacy tool", "commands": {}}"#,
    );
    env.script("pkg/bin/oldtool", "echo old");
    // validate accepts both, with warnings.
    for (file, kind) in [
        ("pkg/share/agent-tools/tools/hub.json", "metadata"),
        ("myshims/oldtool.json", "shim"),
    ] {
        let out = env
            .sb
            .atip()
            .args(["validate", "--output", "json", "--kind", kind])
            .arg(env.p(file))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{file}: {}", show(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("description-missing-0.1") || text.contains("shim-without-binary"),
            "{text}"
        );
    }
    // scan accepts the same documents.
    let path = env.p("pkg/bin").display().to_string();
    let shims = env.p("myshims");
    let r = env.scan(&path, &["--shims", shims.to_str().unwrap()]);
    assert_eq!(tool(&r, "hub").unwrap()["source"], "installed", "{r:#}");
    assert_eq!(tool(&r, "oldtool").unwrap()["source"], "shim", "{r:#}");
    assert_eq!(r["shims"]["rejected"], serde_json::json!([]), "{r:#}");
    // A content-addressed shim still needs binary.hash.
    let hex = "a".repeat(64);
    env.sb.write(
        &format!("myshims/sha256/{hex}.json"),
        r#"{"atip": "0.1", "name": "oldtool", "version": "3.0", "description": "Legacy", "commands": {}}"#,
    );
    let r = env.scan(&path, &["--shims", shims.to_str().unwrap()]);
    assert!(r["shims"]["rejected"].to_string().contains(&hex), "{r:#}");
    assert_eq!(env.log(), "", "nothing was to be run");
}

/// The absolute path of a program on this test's PATH, if installed.
fn which(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

fn ok(cmd: &mut Command, what: &str) -> bool {
    match cmd.output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            common::skip(&format!("{what} failed: {}", show(&o)));
            false
        }
        Err(e) => {
            common::skip(&format!("{what}: {e}"));
            false
        }
    }
}

/// Real tools of the common shapes, built here: a Node tool installed like `npm i -g`
/// (bin symlink to a JS file whose metadata is an object literal), a Python console
/// script (a pip/pipx wrapper in a venv; the package builds its metadata with
/// `dict(atip=…)`), a Go tool with a `flag`-package `agent` flag (cobra-style: no
/// `--agent` literal), a Rust tool whose flag is stored as `agent` (clap-style), and a
/// shell wrapper reading its metadata from a data file. Beside them, canaries that log
/// every run. A default scan registers every tool and runs no canary.
#[test]
fn tools_of_every_ecosystem_are_found_without_running_strangers() {
    let env = Env::new();
    let bin = env.p("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let mut expected: Vec<&str> = Vec::new();
    let log = env.p("exec.log");
    let meta_json = |name: &str| {
        format!(
            r#"{{"atip": {{"version": "0.6"}}, "name": "{name}", "version": "1.0.0", "description": "{name} test tool"}}"#
        )
    };

    // Canaries: a script and a copy of a real binary, both logging… the script logs;
    // the binary (true) cannot, so it is checked by the report: never probed.
    for i in 0..20 {
        env.script(&format!("bin/canary-{i:02}"), "echo canary");
    }
    if let Some(t) = which("true") {
        std::fs::copy(t, bin.join("canary-elf")).unwrap();
    }

    // Shell wrapper with its metadata in a data file.
    env.sb.write("share/wrap/wrap.json", meta_json("wrap"));
    env.script(
        "bin/wrap",
        &format!(
            "case \"${{1:-}}\" in\n  --agent) exec cat '{}' ;;\nesac\necho wrap",
            env.p("share/wrap/wrap.json").display()
        ),
    );
    expected.push("wrap");

    // Node, installed like npm: bin/nodetool -> ../lib/node_modules/nodetool/bin/cli.js
    match which("node") {
        None => common::skip("node is not installed (.ci/setup-test-deps installs it)"),
        Some(node) => {
            let js = format!(
                "#!{node}\nrequire('fs').appendFileSync({log:?}, 'nodetool ' + process.argv.slice(2).join(' ') + '\\n');\nconst meta = {{ atip: {{ version: '0.6' }}, name: 'nodetool', version: '1.0.0', description: 'nodetool test tool' }};\nif (process.argv.includes('--agent')) {{ console.log(JSON.stringify(meta)); process.exit(0); }}\nconsole.log('nodetool');\n",
                node = node.display(),
                log = log.display().to_string()
            );
            let cli = env.sb.script("lib/node_modules/nodetool/bin/cli.js", &js);
            std::os::unix::fs::symlink(cli, bin.join("nodetool")).unwrap();
            expected.push("nodetool");
        }
    }

    // Python console script in a venv (pipx-style: PATH holds a symlink to the wrapper).
    let venv = env.p("venv");
    let py = which("python3");
    if py.is_some()
        && ok(
            Command::new(py.as_ref().unwrap())
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv),
            "python3 -m venv",
        )
    {
        let ver = Command::new(venv.join("bin/python"))
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .unwrap();
        let ver = String::from_utf8_lossy(&ver.stdout).trim().to_owned();
        let pkg = venv.join(format!("lib/python{ver}/site-packages/pytool"));
        std::fs::create_dir_all(&pkg).unwrap();
        std::fs::write(pkg.join("__init__.py"), "").unwrap();
        std::fs::write(
            pkg.join("cli.py"),
            format!(
                "import json, sys\nMETA = dict(atip=dict(version=\"0.6\"), name=\"pytool\", version=\"1.0.0\", description=\"pytool test tool\")\ndef main():\n    open({log:?}, 'a').write('pytool ' + ' '.join(sys.argv[1:]) + '\\n')\n    if '--agent' in sys.argv[1:]:\n        print(json.dumps(META))\n        return 0\n    print('pytool')\n    return 0\n",
                log = log.display().to_string()
            ),
        )
        .unwrap();
        let wrapper = env.sb.script(
            "venv/bin/pytool",
            &format!(
                "#!{}/bin/python\n# -*- coding: utf-8 -*-\nimport re\nimport sys\nfrom pytool.cli import main\nif __name__ == '__main__':\n    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n    sys.exit(main())\n",
                venv.display()
            ),
        );
        std::os::unix::fs::symlink(wrapper, bin.join("pytool")).unwrap();
        expected.push("pytool");
    } else {
        common::skip("python3 with venv is not available");
    }

    // Go, flag stored as `agent` (the `flag` package, as cobra does), key in a struct tag.
    match which("go") {
        None => common::skip("go is not installed (.ci/setup-test-deps installs it)"),
        Some(go) => {
            let src = env.sb.write(
                "src/gotool/main.go",
                format!(
                    "package main\n\nimport (\n\t\"encoding/json\"\n\t\"flag\"\n\t\"fmt\"\n\t\"os\"\n)\n\ntype atipInfo struct {{\n\tVersion string `json:\"version\"`\n}}\n\ntype meta struct {{\n\tAtip        atipInfo `json:\"atip\"`\n\tName        string   `json:\"name\"`\n\tVersion     string   `json:\"version\"`\n\tDescription string   `json:\"description\"`\n}}\n\nfunc main() {{\n\tf, _ := os.OpenFile({log:?}, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)\n\tfmt.Fprintln(f, \"gotool\", os.Args[1:])\n\tagent := flag.Bool(\"agent\", false, \"print machine-readable metadata\")\n\tflag.Parse()\n\tif *agent {{\n\t\tb, _ := json.Marshal(meta{{atipInfo{{\"0.6\"}}, \"gotool\", \"1.0.0\", \"gotool test tool\"}})\n\t\tfmt.Println(string(b))\n\t\treturn\n\t}}\n\tfmt.Println(\"gotool\")\n}}\n",
                    log = log.display().to_string()
                ),
            );
            let built = ok(
                Command::new(go)
                    .args(["build", "-o"])
                    .arg(bin.join("gotool"))
                    .arg(&src)
                    .env("GOCACHE", env.p("gocache"))
                    .env("GOPATH", env.p("gopath"))
                    .env("HOME", env.p("home"))
                    .env("GOFLAGS", "-mod=mod")
                    .env("GOTOOLCHAIN", "local")
                    .env("CGO_ENABLED", "0"),
                "go build",
            );
            if built {
                expected.push("gotool");
            }
        }
    }

    // Rust, the flag kept as `agent` and the key as a plain literal (clap/serde-style).
    match which("rustc") {
        None => common::skip_optional("rustc is not on PATH"),
        Some(rustc) => {
            let src = env.sb.write(
                "src/rusttool.rs",
                format!(
                    "use std::io::Write;\n// serde keeps a struct's field names in a table; clap keeps each flag's long name.\nstatic FIELDS: &[&str] = &[\"atip\", \"name\", \"version\", \"description\"];\nstatic ARGS: &[(&str, &str)] = &[(\"agent\", \"print machine-readable metadata\"), (\"help\", \"print help\")];\nfn main() {{\n    let args: Vec<String> = std::env::args().skip(1).collect();\n    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).create(true).open({log:?}) {{\n        let _ = writeln!(f, \"rusttool {{}}\", args.join(\" \"));\n    }}\n    let fields = std::hint::black_box(FIELDS);\n    let specs = std::hint::black_box(ARGS);\n    if args.iter().any(|a| a.strip_prefix(\"--\") == Some(specs[0].0)) {{\n        println!(\"{{{{\\\"{{}}\\\":{{{{\\\"version\\\":\\\"0.6\\\"}}}},\\\"{{}}\\\":\\\"rusttool\\\",\\\"{{}}\\\":\\\"1.0.0\\\",\\\"{{}}\\\":\\\"rusttool test tool\\\"}}}}\", fields[0], fields[1], fields[2], fields[3]);\n        return;\n    }}\n    println!(\"rusttool\");\n}}\n",
                    log = log.display().to_string()
                ),
            );
            if ok(
                Command::new(rustc)
                    .args(["-O", "--edition", "2021", "-o"])
                    .arg(bin.join("rusttool"))
                    .arg(&src),
                "rustc",
            ) {
                expected.push("rusttool");
            }
        }
    }

    let r = env.scan(bin.to_str().unwrap(), &["--no-builtin-shims"]);
    let mut names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    expected.sort();
    assert_eq!(names, expected, "{r:#}");
    let log = env.log();
    assert!(!log.contains("canary"), "a canary ran: {log}");
    assert!(
        r["failed"].as_array().unwrap().is_empty(),
        "probed something that did not answer: {r:#}"
    );
    assert_eq!(r["summary"]["probed"], expected.len(), "{r:#}");
}

/// Launchers are followed, not run: a pip console script (written as pip's `/bin/sh`
/// trampoline, so it has no python `#!`) found through its package's `entry_points.txt`
/// and `RECORD`, whose flag and key sit in two modules; a node stub that `require`s the
/// package's real file; a shell script that `exec`s a file of its own prefix. Beside
/// them, wrappers that lead outside their package to a file that would show a sign:
/// never followed, never run.
#[test]
fn launchers_are_followed_to_the_files_they_start_inside_their_package() {
    let env = Env::new();
    let bin = env.p("opt/pkg/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = env.p("exec.log");
    let answer = |name: &str| {
        format!(
            "{{\"atip\": {{\"version\": \"0.6\"}}, \"name\": \"{name}\", \"version\": \"1.0.0\", \"description\": \"{name} test tool\"}}"
        )
    };
    let mut expected: Vec<&str> = Vec::new();

    // Shell: bin/shtool execs ../libexec/shtool-real, which answers --agent.
    env.script(
        "opt/pkg/libexec/shtool-real",
        &format!(
            "if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi\necho real",
            answer("shtool")
        ),
    );
    env.script(
        "opt/pkg/bin/shtool",
        "HERE=$(cd \"$(dirname \"$0\")/..\" && pwd)\nexec \"$HERE/libexec/shtool-real\" \"$@\"",
    );
    expected.push("shtool");
    // The same shape, leading outside the prefix: not followed, not run.
    env.script(
        "elsewhere/real",
        &format!(
            "if [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nfi",
            answer("escaper")
        ),
    );
    env.script(
        "opt/pkg/bin/escaper",
        "exec \"$(dirname \"$0\")/../../../elsewhere/real\" \"$@\"",
    );

    // Python, found by entry_points.txt + RECORD: the flag in cli.py, the key in meta.py.
    let venv = env.p("venv");
    let py = which("python3");
    if py.is_some()
        && ok(
            Command::new(py.as_ref().unwrap())
                .args(["-m", "venv", "--without-pip"])
                .arg(&venv),
            "python3 -m venv",
        )
    {
        let ver = Command::new(venv.join("bin/python"))
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .unwrap();
        let ver = String::from_utf8_lossy(&ver.stdout).trim().to_owned();
        let site = venv.join(format!("lib/python{ver}/site-packages"));
        let put = |rel: &str, text: String| {
            let p = site.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        put("disttool/__init__.py", String::new());
        put(
            "disttool/meta.py",
            "META = dict(atip=dict(version=\"0.6\"), name=\"disttool\", version=\"1.0.0\", description=\"disttool test tool\")\n".into(),
        );
        put(
            "disttool/cli.py",
            format!(
                "import json, sys\nfrom disttool.meta import META\ndef run():\n    open({log:?}, 'a').write('disttool ' + ' '.join(sys.argv[1:]) + '\\n')\n    if '--agent' in sys.argv[1:]:\n        print(json.dumps(META))\n        return 0\n    return 0\n",
                log = log.display().to_string()
            ),
        );
        put(
            "disttool-1.0.dist-info/entry_points.txt",
            "[console_scripts]\ndisttool = disttool.cli:run\n".into(),
        );
        put(
            "disttool-1.0.dist-info/RECORD",
            "disttool/__init__.py,,\ndisttool/cli.py,,\ndisttool/meta.py,,\n../../../bin/disttool,,\n".into(),
        );
        // pip's trampoline for a long interpreter path: no python `#!`, no import line
        // of the package (it imports through importlib).
        let guard = lock();
        let wrapper = env.sb.script(
            "venv/bin/disttool",
            &format!(
                "#!/bin/sh\n'''exec' \"{}/bin/python\" \"$0\" \"$@\"\n' '''\nimport sys, importlib\nsys.exit(importlib.import_module('disttool.cli').run())\n",
                venv.display()
            ),
        );
        drop(guard);
        std::os::unix::fs::symlink(wrapper, bin.join("disttool")).unwrap();
        expected.push("disttool");
    } else {
        common::skip("python3 with venv is not available");
    }

    // Node: a `#!/usr/bin/env node` stub requiring the package's file.
    match which("node") {
        None => common::skip("node is not installed (.ci/setup-test-deps installs it)"),
        Some(_) => {
            let pkg = "lib/node_modules/stubtool";
            env.sb
                .write(&format!("{pkg}/package.json"), "{\"name\": \"stubtool\"}");
            env.sb.write(
                &format!("{pkg}/lib/main.js"),
                format!(
                    "require('fs').appendFileSync({log:?}, 'stubtool ' + process.argv.slice(2).join(' ') + '\\n');\nconst meta = {{ atip: {{ version: '0.6' }}, name: 'stubtool', version: '1.0.0', description: 'stubtool test tool' }};\nif (process.argv.includes('--agent')) {{ console.log(JSON.stringify(meta)); process.exit(0); }}\n",
                    log = log.display().to_string()
                ),
            );
            let stub = {
                let _g = lock();
                env.sb.script(
                    &format!("{pkg}/bin/stubtool.js"),
                    "#!/usr/bin/env node\n'use strict';\nrequire('../lib/main.js');\n",
                )
            };
            std::os::unix::fs::symlink(stub, bin.join("stubtool")).unwrap();
            expected.push("stubtool");
        }
    }

    let r = env.scan(bin.to_str().unwrap(), &["--no-builtin-shims"]);
    let mut names: Vec<&str> = r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort();
    expected.sort();
    assert_eq!(names, expected, "{r:#}");
    assert_eq!(
        r["summary"]["evidence"]["launcher"],
        expected.len(),
        "{r:#}"
    );
    // Neither the wrapper that leads outside its package nor its target ran.
    let log = env.log();
    assert!(
        !log.lines()
            .any(|l| l.starts_with("escaper") || l.starts_with("real")),
        "{log}"
    );
    assert!(log.contains("shtool-real --agent"), "{log}");
    assert!(r["failed"].as_array().unwrap().is_empty(), "{r:#}");
}

/// A warm rescan that changes nothing makes no commit: it completes while another
/// writer holds the registry lock (a commit would wait for it and then give up), and a
/// change is still committed (and waits for the lock like any commit).
#[test]
fn a_warm_rescan_that_changes_nothing_does_not_take_the_registry_lock() {
    let env = Env::new();
    env.script("bin/real", &native_body("real"));
    let path = env.p("bin");
    let path = path.to_str().unwrap();
    let cold = env.scan(path, &["--no-builtin-shims"]);
    assert_eq!(tool(&cold, "real").unwrap()["status"], "new", "{cold:#}");
    let held = atip::registry::RegistryLock::acquire(
        &env.sb.data_dir(),
        std::time::Duration::from_secs(5),
        false,
    )
    .unwrap();
    assert!(held.is_locked());
    let warm = env.scan(path, &["--no-builtin-shims"]);
    assert_eq!(
        tool(&warm, "real").unwrap()["status"],
        "unchanged",
        "{warm:#}"
    );
    assert_eq!(warm["registry"]["written"], false);
    // A removed tool must be committed: with the lock held, the scan waits and fails.
    std::fs::remove_file(env.p("bin/real")).unwrap();
    let out = {
        let _g = lock();
        let mut c = env.sb.atip();
        c.env("ATIP_LOCK_TIMEOUT", "300ms")
            .args([
                "scan",
                "--output",
                "json",
                "--no-builtin-shims",
                "--path",
                path,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().unwrap()
    }
    .wait_with_output()
    .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    drop(held);
    let r = env.scan(path, &["--no-builtin-shims"]);
    assert_eq!(r["removed"], serde_json::json!(["real"]), "{r:#}");
}
