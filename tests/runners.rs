//! Consent that holds against a model choosing calls (issue 30): planting a command in
//! configuration for a later read-only call to run, host guards that miss spellings of
//! loopback, options that read files outside the roots or connect through a private
//! proxy, and `programs` globs fooled by a symlink. Each test performs the attack through
//! the real `atip` binary with the DEFAULT policy and no `--yes`, against real `git` and
//! `curl`, and fails if the payload runs (a marker file appears, a local server is
//! reached, a secret leaves the roots).

use crate::common;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};

/// The real program `name` on this machine; `None` (a visible skip, or a failure under
/// CI where it must be present) when it is missing. scp and wget are optional: not every
/// CI image carries them.
fn program(name: &str) -> Option<PathBuf> {
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    if matches!(name, "scp" | "wget") {
        common::skip_optional(&format!("{name} is not installed"));
    } else {
        common::skip(&format!("{name} is not installed"));
    }
    None
}

/// A sandbox whose registry holds the real `git` and `curl` with atip's built-in shims,
/// registered by a real scan of a directory of links to them.
fn sandbox_with(programs: &[&str]) -> Option<Sandbox> {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    for name in programs {
        let real = program(name)?;
        std::os::unix::fs::symlink(&real, bin.join(name)).unwrap();
    }
    let out = sb
        .atip()
        .args(["--output", "json", "scan", "--path"])
        .arg(&bin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    Some(sb)
}

struct Run {
    code: i32,
    err: Value,
    raw: Output,
}

fn exec_in(sb: &Sandbox, cwd: &Path, args: &[&str]) -> Run {
    let raw = sb
        .atip()
        .current_dir(cwd)
        .args(["--output", "json", "exec"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&raw.stderr)
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or(Value::Null);
    Run {
        code: raw.status.code().unwrap_or(-1),
        err,
        raw,
    }
}

fn git(repo: &Path, home: &Path, args: &[&str]) -> Output {
    std::process::Command::new(program("git").unwrap())
        .args(args)
        .current_dir(repo)
        .env_clear()
        .env("HOME", home)
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap()
}

fn init_repo(sb: &Sandbox) -> PathBuf {
    let repo = sb.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let home = sb.path().join("home");
    assert!(git(&repo, &home, &["init", "-q"]).status.success());
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    assert!(git(&repo, &home, &["add", "a.txt"]).status.success());
    let commit = git(
        &repo,
        &home,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-qm",
            "init",
        ],
    );
    assert!(commit.status.success(), "{}", show(&commit));
    std::fs::write(repo.join("a.txt"), "a\nb\n").unwrap();
    repo
}

/// Keys that name a program git runs later, and one that pulls in a file that could set
/// any of them.
const PLANTED: &[&str] = &[
    "core.fsmonitor",
    "core.pager",
    "core.sshCommand",
    "core.hooksPath",
    "core.editor",
    "diff.external",
    "alias.st",
    "include.path",
    "includeIf.onbranch:main.path",
    "credential.helper",
    "filter.x.clean",
    "url.ext::sh.insteadOf",
    // Not on the known-safe list: unknown is never safe.
    "some.unlisted",
];

#[test]
fn a_model_cannot_plant_a_command_in_git_config_for_a_read_only_call_to_run() {
    let Some(sb) = sandbox_with(&["git"]) else {
        return;
    };
    let repo = init_repo(&sb);
    let home = sb.path().join("home");
    let marker = sb.path().join("planted-ran");
    let payload = format!("touch {}", marker.display());
    for key in PLANTED {
        for global in [false, true] {
            let args = json!({"name": key, "value": payload, "global": global}).to_string();
            let r = exec_in(&sb, &repo, &["git_config_set", "--args", &args]);
            assert_eq!(r.code, 77, "{key} global={global}: {}", show(&r.raw));
            assert_eq!(r.err["error"]["code"], "policy_denied", "{key}");
            let msg = r.err["error"]["message"].as_str().unwrap();
            assert!(msg.contains("runners"), "{key}: {msg}");
        }
        // Nothing was written, locally or to ~/.gitconfig.
        let got = git(&repo, &home, &["config", "--get-all", key]);
        assert!(got.stdout.is_empty(), "{key} was written: {}", show(&got));
    }
    // The read-only calls that would have run it.
    for tool in ["git_status", "git_diff", "git_log"] {
        let r = exec_in(&sb, &repo, &[tool]);
        assert_eq!(r.code, 0, "{tool}: {}", show(&r.raw));
    }
    assert!(!marker.exists(), "the planted command ran");
    // A known-safe key is still written: the rule is about what the key does.
    let r = exec_in(
        &sb,
        &repo,
        &[
            "git_config_set",
            "--args",
            r#"{"name":"user.name","value":"A Model"}"#,
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(
        String::from_utf8_lossy(&git(&repo, &home, &["config", "user.name"]).stdout).trim(),
        "A Model"
    );
    // The payload is real: the same value set by hand makes `git status` run it.
    let control = sb.path().join("control-ran");
    let out = git(
        &repo,
        &home,
        &[
            "-c",
            &format!("core.fsmonitor=touch {}", control.display()),
            "status",
        ],
    );
    assert!(out.status.success(), "{}", show(&out));
    assert!(control.exists(), "control: git runs core.fsmonitor");
}

/// The same plant without `git config`: a file tool writes git's configuration or a hook
/// (directly, or through a link into `.git`), then a read-only git call would run it.
#[test]
fn a_model_cannot_plant_a_command_by_writing_git_files_with_other_tools() {
    let Some(sb) = sandbox_with(&["git", "cp", "cat"]) else {
        return;
    };
    let repo = init_repo(&sb);
    let marker = sb.path().join("planted-ran");
    let evil = format!("[core]\n\tfsmonitor = touch {}\n", marker.display());
    std::fs::write(repo.join("evil.conf"), &evil).unwrap();
    let hook = format!("#!/bin/sh\ntouch {}\n", marker.display());
    std::fs::write(repo.join("hook.sh"), &hook).unwrap();
    std::os::unix::fs::symlink(repo.join(".git/hooks"), repo.join("innocent")).unwrap();
    let config_before = std::fs::read(repo.join(".git/config")).unwrap();
    for dest in [
        ".git/config",
        ".git/hooks/post-index-change",
        "innocent/pre-commit",
    ] {
        let args = json!({"source": "evil.conf", "destination": dest}).to_string();
        // Refused outright: a confirmation (`--yes`) does not lift a runner call.
        for yes in [&[][..], &["--yes"][..]] {
            let mut argv = vec!["cp", "--args", &args];
            argv.extend_from_slice(yes);
            let r = exec_in(&sb, &repo, &argv);
            assert_eq!(r.code, 77, "cp to {dest} {yes:?}: {}", show(&r.raw));
            assert_eq!(r.err["error"]["code"], "policy_denied", "{dest}");
            let msg = r.err["error"]["message"].as_str().unwrap();
            assert!(msg.contains("names programs"), "{dest}: {msg}");
        }
    }
    assert_eq!(
        std::fs::read(repo.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    for tool in ["git_status", "git_diff"] {
        let r = exec_in(&sb, &repo, &[tool]);
        assert_eq!(r.code, 0, "{tool}: {}", show(&r.raw));
    }
    assert!(!marker.exists(), "the planted command ran");
    // Reading git's files stays allowed (a read-only call plants nothing), and copying an
    // ordinary file still runs.
    let r = exec_in(
        &sb,
        &repo,
        &["cat", "--args", r#"{"file":[".git/config"]}"#],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    let r = exec_in(
        &sb,
        &repo,
        &[
            "cp",
            "--args",
            r#"{"source":"a.txt","destination":"b.txt"}"#,
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert!(repo.join("b.txt").exists());
}

#[test]
fn templates_and_ext_remotes_are_runner_calls() {
    let Some(sb) = sandbox_with(&["git"]) else {
        return;
    };
    let repo = init_repo(&sb);
    let marker = sb.path().join("ext-ran");
    std::fs::create_dir_all(sb.path().join("tpl/hooks")).unwrap();
    for (tool, args) in [
        (
            "git_remote_add",
            json!({"name": "evil", "url": format!("ext::sh -c touch% {}", marker.display())}),
        ),
        (
            "git_remote_set-url",
            json!({"name": "origin", "newurl": "EXT::sh -c id"}),
        ),
        ("git_init", json!({"template": "tpl", "directory": "fresh"})),
    ] {
        let r = exec_in(&sb, &repo, &[tool, "--args", &args.to_string()]);
        assert_eq!(r.code, 77, "{tool}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "policy_denied", "{tool}");
    }
    assert!(!repo.join("fresh").exists());
    let remotes = git(&repo, &sb.path().join("home"), &["remote", "-v"]);
    assert!(remotes.stdout.is_empty(), "{}", show(&remotes));
    assert!(!marker.exists());
    // An ordinary remote is added.
    let r = exec_in(
        &sb,
        &repo,
        &[
            "git_remote_add",
            "--args",
            r#"{"name":"origin","url":"https://example.com/r.git"}"#,
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
}

/// One JSON-RPC exchange with `atip mcp` over stdio: sends `req`, returns the reply
/// with the same id.
fn rpc(
    stdin: &mut impl Write,
    out: &mut impl BufRead,
    id: u64,
    method: &str,
    params: Value,
) -> Value {
    let req = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    writeln!(stdin, "{req}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "server closed stdout"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == id {
            return v;
        }
    }
}

#[test]
fn through_mcp_stdio_the_planted_command_is_refused_and_never_runs() {
    let Some(sb) = sandbox_with(&["git"]) else {
        return;
    };
    let repo = init_repo(&sb);
    let marker = sb.path().join("mcp-planted-ran");
    let mut child = sb
        .atip()
        .current_dir(&repo)
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let init = rpc(
        &mut stdin,
        &mut out,
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "raw", "version": "1"}}),
    );
    assert_eq!(init["result"]["serverInfo"]["name"], "atip", "{init}");
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    for (id, key) in [(2, "core.fsmonitor"), (3, "alias.st"), (4, "core.pager")] {
        let reply = rpc(
            &mut stdin,
            &mut out,
            id,
            "tools/call",
            json!({"name": "git_config_set",
                   "arguments": {"name": key, "value": format!("touch {}", marker.display())}}),
        );
        let text = reply.to_string();
        assert_eq!(reply["result"]["isError"], true, "{key}: {reply}");
        assert!(
            text.contains("policy_denied") && text.contains("runners"),
            "{key}: {reply}"
        );
    }
    let status = rpc(
        &mut stdin,
        &mut out,
        5,
        "tools/call",
        json!({"name": "git_status", "arguments": {}}),
    );
    assert_eq!(status["result"]["isError"], false, "{status}");
    drop(stdin);
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    child.wait().unwrap();
    assert!(!marker.exists(), "the planted command ran");
    let cfg = std::fs::read_to_string(repo.join(".git/config")).unwrap();
    assert!(!cfg.contains("touch"), "{cfg}");
}

/// A local TCP server that records every connection's first bytes before answering, so
/// that once a client has finished, whatever it sent is in the log.
struct Listener {
    port: u16,
    log: Arc<Mutex<Vec<String>>>,
}

impl Listener {
    fn start() -> Listener {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = log.clone();
        std::thread::spawn(move || {
            for conn in l.incoming() {
                let Ok(mut conn) = conn else { continue };
                let mut buf = vec![0u8; 65536];
                let n = conn.read(&mut buf).unwrap_or(0);
                log2.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                let _ = conn.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            }
        });
        Listener { port, log }
    }

    fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[test]
fn every_spelling_of_a_local_address_asks_and_curl_never_connects() {
    let Some(sb) = sandbox_with(&["curl"]) else {
        return;
    };
    let server = Listener::start();
    let p = server.port;
    let urls = [
        format!("http://0x7f000001:{p}/"),
        format!("http://0x7f.0.0.1:{p}/"),
        format!("http://017700000001:{p}/"),
        format!("http://0177.0.0.1:{p}/"),
        format!("http://127.1:{p}/"),
        format!("http://2130706433:{p}/"),
        format!("http://%31%32%37.0.0.1:{p}/"),
        format!("http://127.0.0.1.:{p}/"),
        format!("http://[::ffff:127.0.0.1]:{p}/"),
        format!("http://[::ffff:7f00:1]:{p}/"),
        format!("http://[::1]:{p}/"),
        format!("http://LOCALHOST.:{p}/"),
        format!("http://user@0x7F000001:{p}/"),
    ];
    for url in &urls {
        let r = exec_in(
            &sb,
            sb.path(),
            &["curl", "--args", &json!({"url": url}).to_string()],
        );
        assert_eq!(r.code, 77, "{url}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "confirmation_required", "{url}");
        assert!(
            r.err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("urls.private"),
            "{url}: {}",
            r.err
        );
    }
    // Through a proxy or a pinned address: the host in the URL is public, the one curl
    // connects to is not.
    for args in [
        json!({"url": "http://example.com/", "proxy": format!("0x7f000001:{p}")}),
        json!({"url": "http://example.com/", "proxy": format!("http://127.1:{p}")}),
        json!({"url": format!("http://example.com:{p}/"), "resolve": format!("example.com:{p}:0177.0.0.1")}),
        json!({"url": format!("http://example.com:{p}/"), "resolve": format!("example.com:{p}:[::1]")}),
        json!({"url": format!("http://example.com:{p}/"), "connect_to": format!("example.com:{p}:2130706433:{p}")}),
        json!({"url": format!("http://example.com:{p}/"), "connect_to": format!("::[::ffff:127.0.0.1]:{p}")}),
        json!({"url": "http://example.com/", "preproxy": format!("socks5h://%31%32%37.0.0.1:{p}")}),
    ] {
        let r = exec_in(&sb, sb.path(), &["curl", "--args", &args.to_string()]);
        assert_eq!(r.code, 77, "{args}: {}", show(&r.raw));
        assert!(
            r.err["error"]["message"]
                .as_str()
                .unwrap()
                .contains("urls.private"),
            "{args}: {}",
            r.err
        );
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());
    // Control: confirmed, the same call does reach the server.
    let r = exec_in(
        &sb,
        sb.path(),
        &[
            "curl",
            "--yes",
            "--args",
            &json!({"url": format!("http://0x7f000001:{p}/")}).to_string(),
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn curl_options_that_read_files_are_held_to_the_roots() {
    let Some(sb) = sandbox_with(&["curl"]) else {
        return;
    };
    let server = Listener::start();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "TOP-SECRET-VALUE").unwrap();
    let s = secret.display().to_string();
    let work = sb.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("inside.txt"), "inside-value").unwrap();
    // Private addresses allowed, so that only the file guard stands in the way.
    sb.write("config/policy.json", r#"{"urls": {"private": "allow"}}"#);
    let url = format!("http://127.0.0.1:{}/", server.port);
    let attacks = [
        json!({"data_binary": format!("@{s}")}),
        json!({"data": format!("@{s}")}),
        json!({"json": format!("@{s}")}),
        json!({"data_urlencode": format!("x@{s}")}),
        json!({"data_urlencode": "@../../../../../../../../".to_string() + s.trim_start_matches('/')}),
        json!({"form": format!("f=@{s}")}),
        json!({"form": format!("f=<{s};type=text/plain")}),
        json!({"form": format!("f=@inside.txt,{s}")}),
        json!({"form": format!("f=ok;headers=@{s}")}),
        json!({"header": format!("@{s}")}),
        json!({"cookie": s.clone()}),
        json!({"write_out": format!("@{s}")}),
        json!({"upload_file": s.clone()}),
    ];
    for extra in &attacks {
        let mut args = extra.clone();
        args["url"] = json!(url);
        let r = exec_in(&sb, &work, &["curl", "--args", &args.to_string()]);
        assert_eq!(r.code, 77, "{extra}: {}", show(&r.raw));
        assert_eq!(
            r.err["error"]["code"], "path_outside_roots",
            "{extra}: {}",
            r.err
        );
    }
    let got = server.requests();
    assert!(got.iter().all(|req| !req.contains("TOP-SECRET")), "{got:?}");
    assert!(got.is_empty(), "{got:?}");
    // The default policy refuses them the same way.
    std::fs::remove_file(sb.config_dir().join("policy.json")).unwrap();
    let r = exec_in(
        &sb,
        &work,
        &[
            "curl",
            "--args",
            &json!({"url": "https://example.com/", "data_binary": format!("@{s}")}).to_string(),
        ],
    );
    assert_eq!(r.err["error"]["code"], "path_outside_roots", "{}", r.err);
    // A file inside the roots is sent (the control).
    sb.write("config/policy.json", r#"{"urls": {"private": "allow"}}"#);
    let r = exec_in(
        &sb,
        &work,
        &[
            "curl",
            "--args",
            &json!({"url": url, "data_binary": "@inside.txt"}).to_string(),
        ],
    );
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert!(server.requests().iter().any(|r| r.contains("inside-value")));
}

#[test]
fn wget_files_to_send_are_held_to_the_roots() {
    let Some(sb) = sandbox_with(&["wget"]) else {
        return;
    };
    let server = Listener::start();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "TOP-SECRET-VALUE").unwrap();
    sb.write("config/policy.json", r#"{"urls": {"private": "allow"}}"#);
    let url = format!("http://127.0.0.1:{}/", server.port);
    for prop in ["post_file", "body_file", "input_file"] {
        let args = json!({"url": url, prop: secret, "method": "POST"});
        let r = exec_in(&sb, sb.path(), &["wget", "--args", &args.to_string()]);
        assert_eq!(r.code, 77, "{prop}: {}", show(&r.raw));
        assert_eq!(
            r.err["error"]["code"], "path_outside_roots",
            "{prop}: {}",
            r.err
        );
    }
    assert!(server.requests().is_empty(), "{:?}", server.requests());
}

fn register_at(sb: &Sandbox, name: &str, path: &Path, meta: &Value) {
    use sha2::Digest;
    let data = sb.data_dir();
    std::fs::create_dir_all(data.join("tools")).unwrap();
    let doc = serde_json::to_vec_pretty(meta).unwrap();
    let rel = format!("tools/{}.json", hex::encode(sha2::Sha256::digest(&doc)));
    std::fs::write(data.join(&rel), &doc).unwrap();
    let reg_path = data.join("registry.json");
    let mut reg: Value = std::fs::read(&reg_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| {
            json!({"version": "2", "updated": "2026-11-25T00:00:00Z",
                   "agent": {"name": "atip", "version": "0.1.0"}, "tools": {}})
        });
    let bytes = std::fs::read(path).unwrap();
    reg["tools"][name] = json!({
        "path": path, "hash": format!("sha256:{}", hex::encode(sha2::Sha256::digest(&bytes))),
        "source": "native", "lastChecked": "2026-11-25T00:00:00Z", "description": "d",
        "atip": "0.6", "trust": "native", "effects": "mixed", "commands": 1, "metadata": rel,
    });
    std::fs::write(&reg_path, serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
}

#[test]
fn programs_globs_judge_the_file_a_link_resolves_to() {
    let sb = Sandbox::new();
    let marker = sb.path().join("payload-ran");
    let payload = sb.script(
        "payload/evil",
        &format!("#!/bin/sh\ntouch {}\n", marker.display()),
    );
    let allowed = sb.path().join("allowed");
    std::fs::create_dir_all(&allowed).unwrap();
    let link = allowed.join("tool");
    std::os::unix::fs::symlink(&payload, &link).unwrap();
    let meta = json!({"atip": {"version": "0.6"}, "name": "tool", "version": "1",
        "description": "A harmless-looking tool",
        "effects": {"destructive": false, "network": false, "filesystem": {"read": true, "write": false}}});
    register_at(&sb, "tool", &link, &meta);
    let root = std::fs::canonicalize(sb.path()).unwrap();
    // An allow list naming the link's directory does not allow what the link runs.
    sb.write(
        "config/policy.json",
        json!({"programs": {"allow": [format!("{}/allowed/*", root.display()), format!("{}/allowed/*", sb.path().display())]}})
            .to_string(),
    );
    let r = exec_in(&sb, sb.path(), &["tool"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("programs.allow"),
        "{}",
        r.err
    );
    // A deny naming the resolved file catches it under any link name.
    sb.write(
        "config/policy.json",
        json!({"programs": {"deny": [format!("{}/payload/*", root.display())]}}).to_string(),
    );
    let r = exec_in(&sb, sb.path(), &["tool"]);
    assert_eq!(r.code, 77, "{}", show(&r.raw));
    assert!(
        r.err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("programs.deny"),
        "{}",
        r.err
    );
    assert!(!marker.exists(), "the linked program ran");
    // Control: allowed by the file it resolves to, it runs.
    sb.write(
        "config/policy.json",
        json!({"programs": {"allow": [format!("{}/payload/*", root.display())]}}).to_string(),
    );
    let r = exec_in(&sb, sb.path(), &["tool"]);
    assert_eq!(r.code, 0, "{}", show(&r.raw));
    assert!(marker.exists());
}

#[test]
fn atip_lint_and_diff_are_runners_in_atips_own_metadata() {
    let sb = Sandbox::new();
    let out = sb.atip().arg("--agent").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    for cmd in ["lint", "diff", "validate"] {
        let c = &meta["commands"][cmd];
        assert_eq!(c["x-atip-runner"], true, "{cmd}");
        assert_ne!(c["effects"]["destructive"], false, "{cmd}");
    }
}

#[test]
fn scp_options_that_run_a_program_are_denied_even_when_confirmed() {
    let Some(sb) = sandbox_with(&["scp"]) else {
        return;
    };
    let marker = sb.path().join("proxy-ran");
    std::fs::write(sb.path().join("a.txt"), "a").unwrap();
    let cmd = format!("touch {}", marker.display());
    for args in [
        json!({"option": [format!("ProxyCommand={cmd}")], "paths": ["a.txt", "h:b"]}),
        json!({"option": ["BatchMode=yes", format!("proxycommand {cmd}")], "paths": ["a.txt", "h:b"]}),
        json!({"option": ["PermitLocalCommand=yes", format!("LocalCommand={cmd}")], "paths": ["a.txt", "h:b"]}),
        json!({"config": "a.txt", "paths": ["a.txt", "h:b"]}),
    ] {
        let r = exec_in(
            &sb,
            sb.path(),
            &["scp", "--yes", "--args", &args.to_string()],
        );
        assert_eq!(r.code, 77, "{args}: {}", show(&r.raw));
        assert_eq!(r.err["error"]["code"], "policy_denied", "{args}: {}", r.err);
    }
    assert!(!marker.exists(), "scp ran the proxy command");
    // The payload is real: scp itself runs it.
    let out = std::process::Command::new(program("scp").unwrap())
        .args(["-o", "BatchMode=yes", "-o"])
        .arg(format!("ProxyCommand={cmd}"))
        .args(["a.txt", "h:b"])
        .current_dir(sb.path())
        .env_clear()
        .env("HOME", sb.path().join("home"))
        .env("PATH", "/usr/bin:/bin")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(marker.exists(), "control: {}", show(&out));
}

#[test]
fn the_scp_shim_and_the_built_in_table_agree_on_safe_ssh_options() {
    let shim: Value = serde_json::from_slice(&std::fs::read("shims/scp.json").unwrap()).unwrap();
    let opt = shim["commands"][""]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "option")
        .unwrap();
    let listed: Vec<&str> = opt["x-atip-runner-unless"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(listed, atip::exec::runners::SSH_SAFE_OPTIONS);
}
