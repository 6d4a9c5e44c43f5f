//! The measure of issue 32: a table of concrete calls over the real programs of this
//! machine (`tests/fixtures/calls/calls.json`: the call, the tool and its arguments,
//! whether it must run, ask or be refused, and why), with the shipped shims and the
//! DEFAULT policy, through both doors an agent uses: `atip exec --dry-run` (plus a real
//! `atip exec` of every call that must not run) and `atip mcp` over stdio with a real MCP
//! client. Escape attempts name a marker file; a test fails if any marker appears, and a
//! call that asks or is refused must leave the working directory byte for byte as it was.

use crate::common;

use common::{Sandbox, show};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::ServiceError;
use rmcp::transport::TokioChildProcess;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One row of the table.
struct Call {
    call: String,
    tool: String,
    args: Value,
    expect: String,
    payload: bool,
}

const MARKER: &str = "@MARKER@";

fn table(marker: &Path) -> Vec<Call> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calls/calls.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let rows: Vec<Value> = serde_json::from_str(&text).unwrap();
    rows.into_iter()
        .map(|r| {
            let args = r["args"]
                .to_string()
                .replace(MARKER, &marker.display().to_string());
            let expect = r["expect"].as_str().unwrap().to_string();
            assert!(
                ["run", "ask", "refuse"].contains(&expect.as_str()),
                "{r}: expect must be run, ask or refuse"
            );
            assert!(!r["why"].as_str().unwrap_or("").is_empty(), "{r}: why");
            Call {
                call: r["call"].as_str().unwrap().to_string(),
                tool: r["tool"].as_str().unwrap().to_string(),
                args: serde_json::from_str(&args).unwrap(),
                expect,
                payload: r["payload"] == true,
            }
        })
        .collect()
}

/// The program a tool name runs (`git_push` → git; `awk` is GNU awk, which has a sandbox).
fn program_of(tool: &str) -> &str {
    match tool.split('_').next().unwrap() {
        "awk" => "gawk",
        p => p,
    }
}

/// Programs `.ci/setup-test-deps` or the base system provide; the others (containers,
/// clusters, services, GitHub, mikefarah's yq) are optional here.
const OPTIONAL: &[&str] = &["docker", "kubectl", "systemctl", "gh", "yq"];

fn real(program: &str) -> Option<PathBuf> {
    ["/usr/bin", "/bin", "/usr/local/bin"]
        .iter()
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// A sandbox whose registry holds every program the table names (links in `bin/`,
/// registered by a real scan with the built-in shims), the rows whose program is here,
/// and the marker path.
fn setup() -> Option<(Sandbox, PathBuf, Vec<Call>, PathBuf)> {
    let sb = Sandbox::new();
    let marker = sb.path().join("PWNED");
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let mut rows = Vec::new();
    let mut linked = std::collections::BTreeSet::new();
    for row in table(&marker) {
        let program = program_of(&row.tool).to_string();
        let Some(path) = real(&program) else {
            if OPTIONAL.contains(&program.as_str()) {
                common::skip_optional(&format!("{program} not installed: {}", row.call));
                continue;
            }
            common::skip(&format!("{program} is not installed"));
            return None;
        };
        let name = row.tool.split('_').next().unwrap().to_string();
        if linked.insert(name.clone()) {
            std::os::unix::fs::symlink(path, bin.join(&name)).unwrap();
        }
        rows.push(row);
    }
    let out = sb
        .atip()
        .args(["--output", "json", "scan", "--path"])
        .arg(&bin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        rows.len() >= 60,
        "only {} calls can be checked here",
        rows.len()
    );
    let w = sb.path().join("w");
    std::fs::create_dir_all(&w).unwrap();
    reset(&sb, &w);
    Some((sb, w, rows, marker))
}

fn git(sb: &Sandbox, w: &Path, args: &[&str]) {
    let out = Command::new(real("git").unwrap())
        .args(args)
        .current_dir(w)
        .env_clear()
        .env("HOME", sb.path().join("home"))
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", show(&out));
}

/// Empties the working directory (not the directory itself: a server runs in it) and
/// writes the files the table's calls use: a git repository with a commit, a branch
/// `topic` and a tag `v1`, text, JSON and YAML files, `sub/`, and a git configuration
/// that would run the marker's command if it were ever planted.
fn reset(sb: &Sandbox, w: &Path) {
    for e in std::fs::read_dir(w).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() && !p.is_symlink() {
            std::fs::remove_dir_all(&p).unwrap();
        } else {
            std::fs::remove_file(&p).unwrap();
        }
    }
    std::fs::write(w.join("in.txt"), "alpha beta\ngamma delta\n").unwrap();
    std::fs::write(w.join("keep.txt"), "precious\n").unwrap();
    std::fs::write(w.join("data.json"), "{\"a\": 1}\n").unwrap();
    std::fs::write(w.join("data.yaml"), "a: 1\n").unwrap();
    std::fs::create_dir_all(w.join("sub")).unwrap();
    std::fs::write(w.join("sub/one.txt"), "one\n").unwrap();
    std::fs::write(w.join("sub/two.txt"), "two\n").unwrap();
    let marker = sb.path().join("PWNED");
    std::fs::write(
        w.join("evil.conf"),
        format!("[core]\n\tfsmonitor = touch {}\n", marker.display()),
    )
    .unwrap();
    git(sb, w, &["init", "-q", "-b", "main"]);
    git(sb, w, &["add", "in.txt"]);
    git(sb, w, &["commit", "-qm", "init"]);
    git(sb, w, &["branch", "topic"]);
    git(sb, w, &["tag", "v1"]);
}

/// Every file and link under `w` with its content (a link: its target), for "nothing
/// changed".
fn snapshot(w: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![w.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(w).unwrap().to_path_buf();
            if meta.is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, t.into_os_string().into_encoded_bytes());
            } else if meta.is_dir() {
                out.insert(rel, b"<dir>".to_vec());
                stack.push(p);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let mut bytes = std::fs::read(&p).unwrap();
                bytes.extend(format!("<mode {:o}>", meta.permissions().mode()).bytes());
                out.insert(rel, bytes);
            }
        }
    }
    out
}

/// What `atip exec --dry-run` decided: run, ask or refuse, and the detail shown on a
/// mismatch.
fn dry_run(sb: &Sandbox, w: &Path, c: &Call) -> (String, String) {
    let out = sb
        .atip()
        .current_dir(w)
        .args(["--output", "json", "exec", "--dry-run", &c.tool, "--args"])
        .arg(c.args.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    if out.status.code() != Some(0) {
        return ("refuse".into(), show(&out));
    }
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let got = match r["decision"]["action"].as_str() {
        Some("allow") => "run",
        Some("confirm") => "ask",
        Some("deny") => "refuse",
        other => panic!("{}: no decision ({other:?}): {r}", c.call),
    };
    (got.into(), r["decision"].to_string())
}

#[test]
fn the_call_table_through_exec() {
    let Some((sb, w, rows, marker)) = setup() else {
        return;
    };
    let mut wrong = Vec::new();
    for c in &rows {
        let (got, detail) = dry_run(&sb, &w, c);
        if got != c.expect {
            wrong.push(format!(
                "{}: expected {}, got {got}: {detail}",
                c.call, c.expect
            ));
        }
        // Calls that must not run are run for real, without --yes: nothing may change.
        // Escapes that do run (sandboxed) must not reach their payload.
        if c.expect == "run" && !c.payload {
            continue;
        }
        let before = snapshot(&w);
        let out = sb
            .atip()
            .current_dir(&w)
            .args(["--output", "json", "exec", &c.tool, "--args"])
            .arg(c.args.to_string())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            !marker.exists(),
            "{}: the payload ran: {}",
            c.call,
            show(&out)
        );
        if c.expect != "run" {
            assert_ne!(
                out.status.code(),
                Some(0),
                "{}: ran: {}",
                c.call,
                show(&out)
            );
            assert!(before == snapshot(&w), "{}: changed the directory", c.call);
        }
    }
    let asked = rows.iter().filter(|c| c.expect == "ask").count();
    let refused = rows.iter().filter(|c| c.expect == "refuse").count();
    eprintln!(
        "exec: {} calls ({} run, {asked} ask, {refused} refused), {} mismatches",
        rows.len(),
        rows.len() - asked - refused,
        wrong.len()
    );
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// What the MCP server did with a call: run (a result without an `error`, whatever the
/// exit code), ask (`confirmation_required`: this client offers no elicitation) or
/// refuse (any other error, or a protocol error: a tool that is never allowed is not
/// offered at all).
fn classify(r: &Result<rmcp::model::CallToolResult, ServiceError>) -> (String, String) {
    match r {
        Err(e) => ("refuse".into(), format!("protocol error: {e}")),
        Ok(r) => {
            let s = r.structured_content.clone().unwrap_or(Value::Null);
            let got = match s["error"]["code"].as_str() {
                None => "run",
                Some("confirmation_required") => "ask",
                Some(_) => "refuse",
            };
            (got.into(), s.to_string())
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_call_table_through_mcp() {
    let Some((sb, w, rows, marker)) = setup() else {
        return;
    };
    let mut cmd = sb.atip();
    cmd.current_dir(&w).arg("mcp");
    let (proc, _) = TokioChildProcess::builder(tokio::process::Command::from(cmd))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = ().serve(proc).await.unwrap();
    let mut wrong = Vec::new();
    for c in &rows {
        // Calls that run change the directory: every call starts from the same files.
        reset(&sb, &w);
        let before = snapshot(&w);
        let args: Map<String, Value> = c.args.as_object().unwrap().clone();
        let r = client
            .call_tool(CallToolRequestParams::new(c.tool.clone()).with_arguments(args))
            .await;
        let (got, detail) = classify(&r);
        if got != c.expect {
            wrong.push(format!(
                "{}: expected {}, got {got}: {detail}",
                c.call, c.expect
            ));
        }
        assert!(!marker.exists(), "{}: the payload ran: {detail}", c.call);
        if got != "run" {
            assert!(before == snapshot(&w), "{}: changed the directory", c.call);
        }
    }
    client.cancel().await.unwrap();
    eprintln!("mcp: {} calls, {} mismatches", rows.len(), wrong.len());
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The calls the table decides also work when they run: find from its starting points,
/// its -delete and -fprint, its -exec as one command line closed by `;` (with a policy
/// that allows find as a runner), and cp with the names an agent guesses.
#[test]
fn find_and_cp_run_as_their_arguments_say() {
    let Some((sb, w, _, marker)) = setup() else {
        return;
    };
    let run = |tool: &str, args: Value, extra: &[&str]| -> Value {
        let out = sb
            .atip()
            .current_dir(&w)
            .args(["--output", "json", "exec"])
            .args(extra)
            .args([tool, "--args"])
            .arg(args.to_string())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{tool} {args}: {}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["data"]["exitCode"], 0, "{v}");
        v
    };
    let v = run(
        "find",
        serde_json::json!({"path": ["sub"], "name": "one.txt"}),
        &[],
    );
    assert_eq!(v["data"]["stdout"], "sub/one.txt\n");
    let v = run(
        "find",
        serde_json::json!({"path": ["sub", "in.txt"], "type": "f"}),
        &[],
    );
    let mut found: Vec<&str> = v["data"]["stdout"].as_str().unwrap().lines().collect();
    found.sort();
    assert_eq!(found, ["in.txt", "sub/one.txt", "sub/two.txt"]);
    run(
        "find",
        serde_json::json!({"path": ["sub"], "name": "*.txt", "fprint": "list.txt"}),
        &[],
    );
    let mut listed: Vec<String> = std::fs::read_to_string(w.join("list.txt"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    listed.sort();
    assert_eq!(listed, ["sub/one.txt", "sub/two.txt"]);
    // -delete asks; confirmed, it deletes the match and nothing else.
    run(
        "find",
        serde_json::json!({"path": ["sub"], "name": "one.txt", "delete": true}),
        &["--yes"],
    );
    assert!(!w.join("sub/one.txt").exists());
    assert!(w.join("sub/two.txt").exists() && w.join("in.txt").exists());
    // -exec: refused by default (the table), run when the policy allows find as a runner.
    let policy = sb.write("find-runs.json", r#"{"runners": {"allow": ["find"]}}"#);
    let policy = policy.to_str().unwrap();
    let v = run(
        "find",
        serde_json::json!({"path": ["sub"], "name": "two.txt", "exec": ["cat", "{}"]}),
        &["--policy", policy],
    );
    assert_eq!(v["data"]["stdout"], "two\n");
    // Even then an item ';' cannot close -exec early and slip in an action of its own.
    let out = sb
        .atip()
        .current_dir(&w)
        .args([
            "--output", "json", "exec", "--policy", policy, "--yes", "find", "--args",
        ])
        .arg(
            serde_json::json!({"path": ["."], "exec": ["true", ";", "-fprint", marker]})
                .to_string(),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("args_unusable"),
        "{}",
        show(&out)
    );
    assert!(!marker.exists());
    // cp: source and destination; a new destination runs without asking.
    run(
        "cp",
        serde_json::json!({"source": "in.txt", "destination": "copy.txt"}),
        &[],
    );
    assert_eq!(
        std::fs::read(w.join("copy.txt")).unwrap(),
        std::fs::read(w.join("in.txt")).unwrap()
    );
}
