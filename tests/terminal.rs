//! What a person sees (spec/cli.md, terminal output): snapshots of the text `scan`,
//! `list`, `get` and `search` print, taken with `insta` so that a change to it shows in
//! review as a diff of `tests/snapshots/`; and every one of those commands run in a real
//! pseudo-terminal at 80 and 120 columns: no line wider than the terminal, `get` a page
//! and not JSON, no escape sequence with `NO_COLOR`, `scan` of this machine's real PATH in
//! at most 30 lines.

use crate::common::{Sandbox, show};
use serde_json::{Value, json};
use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Stdio};

/// A native tool with subcommands, authentication and a per-call condition.
fn deploy_meta(version: &str) -> Value {
    json!({
        "atip": {"version": "0.6"},
        "name": "deploy",
        "version": version,
        "description": "Deploy services to the staging and production clusters",
        "authentication": {"required": true, "methods": [
            {"type": "token", "envVar": "DEPLOY_TOKEN", "description": "API token from the console"}
        ], "checkCommand": "deploy whoami"},
        "commands": {
            "status": {
                "description": "Show what runs where",
                "arguments": [{"name": "service", "type": "string", "description": "Service name", "required": false}],
                "options": [{"name": "env", "flags": ["-e", "--env"], "type": "enum", "enum": ["staging", "production"],
                             "default": "staging", "description": "Environment"}],
                "effects": {"destructive": false, "network": true, "idempotent": true,
                            "filesystem": {"read": false, "write": false}}
            },
            "rollout": {
                "description": "Roll a new version out, replacing the running one",
                "arguments": [{"name": "service", "type": "string", "description": "Service name", "required": true}],
                "options": [
                    {"name": "force", "flags": ["--force"], "type": "boolean",
                     "description": "Skip the health check and replace every instance at once",
                     "x-atip-effects": {"destructive": true, "reversible": false}},
                    {"name": "log", "flags": ["--log"], "type": "file", "description": "Append the rollout log here",
                     "x-atip-writes": "path"}
                ],
                "effects": {"destructive": false, "network": true, "idempotent": false, "reversible": true,
                            "filesystem": {"read": false, "write": false}}
            },
            "history": {"description": "Past rollouts, newest first",
                        "effects": {"destructive": false, "network": true, "idempotent": true,
                                    "filesystem": {"read": false, "write": false}}},
            "purge": {"description": "Delete a service and its data",
                      "arguments": [{"name": "service", "type": "string", "description": "Service name", "required": true}],
                      "effects": {"destructive": true, "reversible": false, "network": true,
                                  "filesystem": {"read": false, "write": false}}}
        }
    })
}

/// A name-keyed shim for the sandbox's `count`.
fn count_shim() -> Value {
    json!({
        "atip": {"version": "0.6", "features": ["trust-v1"]},
        "name": "count", "version": "3.0",
        "description": "Count lines, words and bytes",
        "binary": {"name": "count", "version": "3.0"},
        "trust": {"source": "community", "verified": false},
        "commands": {"": {
            "description": "Print line, word and byte counts for each file.",
            "arguments": [{"name": "file", "type": "file", "description": "Files to read", "required": false, "variadic": true}],
            "options": [
                {"name": "lines", "flags": ["-l", "--lines"], "type": "boolean", "description": "Print the line counts."},
                {"name": "words", "flags": ["-w", "--words"], "type": "boolean", "description": "Print the word counts."}
            ],
            "effects": {"filesystem": {"read": true, "write": false, "delete": false}, "network": false,
                        "idempotent": true, "reversible": true, "destructive": false}
        }}
    })
}

/// A sandbox PATH of four programs: `deploy` answers `--agent`, `count` is described by
/// a shim, `broken` shows the sign but fails its probe, `plain` is described by nothing.
struct World {
    sb: Sandbox,
}

impl World {
    fn new() -> World {
        let sb = Sandbox::new();
        std::fs::create_dir_all(sb.path().join("home")).unwrap();
        let w = World { sb };
        w.native("2.1.0");
        w.sb.script("bin/count", "#!/bin/sh\nexec wc \"$@\"\n");
        w.sb.script(
            "bin/broken",
            "#!/bin/sh\n# answers \"atip\" --agent, but not today\nexit 4\n",
        );
        w.sb.script("bin/plain", "#!/bin/sh\necho plain\n");
        w.sb.write(
            "shims/count.json",
            serde_json::to_vec_pretty(&count_shim()).unwrap(),
        );
        w
    }

    fn native(&self, version: &str) {
        self.sb.script(
            "bin/deploy",
            &format!(
                "#!/bin/sh\nif [ \"$1\" = --agent ]; then\ncat <<'EOF'\n{}\nEOF\nexit 0\nfi\necho deployed\n",
                deploy_meta(version)
            ),
        );
    }

    /// `atip ARGS` with the sandbox's PATH, shims and no inference, text on stdout. The
    /// probe timeout is long: the probes answer at once, but a loaded machine (parallel
    /// tests, builds) once took more than 5 s to start one, and `deploy` went missing.
    fn atip(&self, args: &[&str]) -> Command {
        let mut c = self.sb.atip();
        c.args(["--output", "text"]).args(args);
        if args.contains(&"scan") {
            c.args(["--path", self.sb.path().join("bin").to_str().unwrap()])
                .args(["--no-builtin-shims", "--no-infer", "--timeout", "60s"])
                .args(["--shims", self.sb.path().join("shims").to_str().unwrap()]);
        }
        c
    }

    /// Stdout of `atip ARGS`, sandbox paths written as `[SANDBOX]`.
    fn text(&self, columns: Option<u16>, args: &[&str]) -> String {
        let mut c = self.atip(args);
        if let Some(cols) = columns {
            c.env("COLUMNS", cols.to_string());
        }
        let out = c.output().unwrap();
        assert!(
            out.status.code().is_some_and(|c| c <= 1),
            "atip {args:?}: {}",
            show(&out)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        redact(&text, self.sb.path())
    }
}

fn redact(text: &str, root: &Path) -> String {
    let root = root.to_str().unwrap();
    let canonical = std::fs::canonicalize(root).unwrap();
    text.replace(canonical.to_str().unwrap(), "[SANDBOX]")
        .replace(root, "[SANDBOX]")
}

#[test]
fn snapshots_of_scan_list_get_and_search() {
    let w = World::new();
    insta::assert_snapshot!("scan_first", w.text(None, &["scan"]));
    // What changed since: a new version of deploy, count gone, a new described tool.
    w.native("2.2.0");
    std::fs::remove_file(w.sb.path().join("bin/count")).unwrap();
    w.sb.script("bin/tally", "#!/bin/sh\nexec wc \"$@\"\n");
    let mut shim = count_shim();
    shim["name"] = json!("tally");
    shim["binary"]["name"] = json!("tally");
    w.sb.write(
        "shims/tally.json",
        serde_json::to_vec_pretty(&shim).unwrap(),
    );
    insta::assert_snapshot!("scan_again", w.text(None, &["scan"]));
    insta::assert_snapshot!("scan_unchanged", w.text(None, &["scan"]));
    insta::assert_snapshot!("scan_verbose", w.text(None, &["--verbose", "scan"]));
    insta::assert_snapshot!("scan_dry_run", w.text(None, &["scan", "--dry-run"]));

    insta::assert_snapshot!("list_80", w.text(Some(80), &["list"]));
    insta::assert_snapshot!("list_50", w.text(Some(50), &["list"]));
    insta::assert_snapshot!(
        "list_destructive",
        w.text(Some(80), &["list", "--effects", "destructive"])
    );
    insta::assert_snapshot!(
        "list_verbose_shims",
        w.text(None, &["--verbose", "list", "--source", "shim"])
    );
    insta::assert_snapshot!("get_tally", w.text(None, &["get", "tally"]));
    insta::assert_snapshot!("get_deploy", w.text(None, &["get", "deploy"]));
    insta::assert_snapshot!(
        "get_deploy_rollout",
        w.text(None, &["get", "deploy", "--commands", "rollout"])
    );
    insta::assert_snapshot!(
        "search_80",
        w.text(Some(80), &["search", "--no-mcp", "roll out a new version"])
    );
    insta::assert_snapshot!(
        "search_120",
        w.text(Some(120), &["search", "--no-mcp", "count lines"])
    );
}

/// The commands beyond the first four: doctor healthy and not, validate and lint
/// (totals first, one line per finding; in full with --verbose), diff, registry list,
/// export to a file, exec --dry-run, mcp servers. Relative paths (the sandbox is the
/// working directory) or no width where a sandbox path is shown, so that a cut never
/// depends on where the sandbox is.
#[test]
fn snapshots_of_doctor_validate_lint_diff_registry_export_exec_and_mcp() {
    let w = World::new();
    w.text(None, &["scan"]);
    insta::assert_snapshot!("doctor_healthy", w.text(None, &["doctor"]));
    // deploy is replaced by a new version, count vanishes, broken loses its metadata.
    w.native("2.2.0");
    std::fs::remove_file(w.sb.path().join("bin/count")).unwrap();
    insta::assert_snapshot!("doctor_problems", w.text(None, &["doctor"]));
    insta::assert_snapshot!("doctor_verbose", w.text(None, &["--verbose", "doctor"]));
    w.native("2.1.0");

    // A shim with one error and warnings of several rules, next to a valid one.
    let mut bad = count_shim();
    bad["name"] = json!("tally");
    bad["binary"]["name"] = json!("tally");
    bad["commands"][""]["options"][0]["type"] = json!("flag");
    bad["commands"][""]
        .as_object_mut()
        .unwrap()
        .remove("effects");
    w.sb.write("docs/tally.json", serde_json::to_vec_pretty(&bad).unwrap());
    w.sb.write(
        "docs/count.json",
        serde_json::to_vec_pretty(&count_shim()).unwrap(),
    );
    insta::assert_snapshot!("validate_80", w.text(Some(80), &["validate", "docs"]));
    insta::assert_snapshot!(
        "validate_verbose",
        w.text(Some(80), &["--verbose", "validate", "docs"])
    );
    let mut vague = count_shim();
    vague["commands"][""]["description"] = json!("TODO");
    vague["commands"][""]
        .as_object_mut()
        .unwrap()
        .remove("effects");
    w.sb.write(
        "lint/count.json",
        serde_json::to_vec_pretty(&vague).unwrap(),
    );
    insta::assert_snapshot!(
        "lint_80",
        w.text(Some(80), &["lint", "--no-config", "lint/count.json"])
    );
    // Old and new deploy: a command removed, one made destructive.
    let old = deploy_meta("2.1.0");
    let mut new = deploy_meta("3.0.0");
    new["commands"].as_object_mut().unwrap().remove("history");
    new["commands"]["status"]["effects"]["destructive"] = json!(true);
    w.sb.write("old.json", serde_json::to_vec_pretty(&old).unwrap());
    w.sb.write("new.json", serde_json::to_vec_pretty(&new).unwrap());
    insta::assert_snapshot!(
        "diff_60",
        w.text(Some(60), &["diff", "old.json", "new.json"])
    );

    for add in [
        &[
            "registry",
            "add",
            "team",
            "https://tools.example.org/atip",
            "--no-check",
        ][..],
        &[
            "registry",
            "add",
            "mirror",
            "https://mirror.example.org/a/very/long/path/to/the/atip/registry/tree",
            "--no-check",
            "--disabled",
            "--priority",
            "50",
            "--token-env",
            "MIRROR_TOKEN",
        ],
    ] {
        w.text(None, add);
    }
    insta::assert_snapshot!("registry_list_80", w.text(Some(80), &["registry", "list"]));
    insta::assert_snapshot!(
        "export_to_a_file",
        w.text(
            Some(80),
            &[
                "export",
                "--format",
                "openai",
                "--tools",
                "deploy",
                "-o",
                "out/tools.json"
            ]
        )
    );
    assert!(w.sb.path().join("out/tools.json").is_file());
    insta::assert_snapshot!(
        "exec_dry_run",
        w.text(
            None,
            &[
                "exec",
                "deploy_purge",
                "--args",
                r#"{"service": "web"}"#,
                "--dry-run"
            ]
        )
    );
    w.sb.write(
        "config/mcp.json",
        json!({"mcpServers": {
            "local": {"command": "my-mcp-server", "args": ["--stdio", "--root", "/srv/data"]},
            "web": {"url": "https://mcp.example.org/mcp"}
        }, "defaultServer": "web"})
        .to_string(),
    );
    // No width: the FROM column holds the sandbox's path, whose length varies.
    insta::assert_snapshot!("mcp_servers", w.text(None, &["mcp", "servers"]));
}

/// `atip mcp tools` and `atip mcp describe` of a real (small, Python) MCP server, at 80
/// and 50 columns; every line fits.
#[test]
fn snapshot_of_mcp_tools() {
    let Some(sb) = crate::mcp_client::sandbox("ok") else {
        return;
    };
    let text = |cols: usize, args: &[&str]| {
        let out = sb
            .atip()
            .env("ATIP_CACHE_DIR", sb.path().join("cache"))
            .env("COLUMNS", cols.to_string())
            .current_dir(sb.path().join("proj"))
            .args(["--output", "text", "mcp"])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let text = String::from_utf8(out.stdout).unwrap();
        assert_fits(&text, cols, &args.join(" "));
        text
    };
    for cols in [80, 50] {
        insta::assert_snapshot!(
            format!("mcp_tools_{cols}"),
            text(cols, &["tools", "--no-cache"])
        );
    }
    insta::assert_snapshot!("mcp_describe_echo_80", text(80, &["describe", "echo"]));
    insta::assert_snapshot!("mcp_ping_80", redact_ms(&text(80, &["ping"])));
    insta::assert_snapshot!(
        "mcp_describe_write_note_50",
        text(50, &["describe", "write_note"])
    );
}

#[test]
fn list_filters_by_trust_and_effects_and_counts() {
    let w = World::new();
    w.text(None, &["scan"]);
    let names = |args: &[&str]| -> Vec<String> {
        let out =
            w.sb.atip()
                .args(["--output", "json", "list"])
                .args(args)
                .output()
                .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&[]), ["count", "deploy"]);
    assert_eq!(names(&["--effects", "read-only"]), ["count"]);
    assert_eq!(names(&["--effects", "destructive"]), ["deploy"]);
    assert!(names(&["--effects", "unknown"]).is_empty());
    assert_eq!(names(&["--trust", "community"]), ["count"]);
    assert_eq!(
        names(&["--trust", "native", "--trust", "community"]),
        ["count", "deploy"]
    );
    assert_eq!(names(&["--trust", "native", "c*"]), Vec::<String>::new());
    let text = w.text(None, &["list", "--effects", "read-only"]);
    assert_eq!(text.lines().last(), Some("1 of 2 tools"), "{text}");
    let out = w.atip(&["list", "--effects", "safe"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

/// A pseudo-terminal of `cols` columns: the child's stdin, stdout and stderr.
struct Pty {
    master: std::fs::File,
    slave: OwnedFd,
}

impl Pty {
    fn open(cols: u16) -> Pty {
        let (mut master, mut slave) = (-1, -1);
        let size = libc::winsize {
            ws_row: 40,
            ws_col: cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        // SAFETY: openpty writes two new descriptors into the integers; the name
        // pointer may be null, the termios pointer too, the winsize is read.
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                &size,
            )
        };
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // SAFETY: both descriptors are new and owned by nobody else.
        unsafe {
            Pty {
                master: std::fs::File::from_raw_fd(master),
                slave: OwnedFd::from_raw_fd(slave),
            }
        }
    }

    /// Runs `cmd` on the terminal; returns everything it wrote there (stdout and stderr
    /// as a person sees them interleaved) and its exit code.
    fn run(self, mut cmd: Command) -> (String, Option<i32>) {
        let Pty { mut master, slave } = self;
        cmd.stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let mut child = cmd.spawn().unwrap();
        // The parent's copies of the slave go with `cmd`: the read ends (EIO) once the
        // child and everything it started have closed the terminal.
        drop(cmd);
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match master.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => out.extend_from_slice(&buf[..n]),
                }
            }
            out
        });
        let status = child.wait().unwrap();
        let out = reader.join().unwrap();
        (String::from_utf8_lossy(&out).into_owned(), status.code())
    }
}

/// The columns each line takes on screen: escape sequences take none, and a carriage
/// return starts the line over (a progress bar redraws itself so).
fn screen_lines(text: &str) -> Vec<(usize, String)> {
    let plain = strip_escapes(text);
    plain
        .split('\n')
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.is_empty())
        .map(|l| {
            let widest = l
                .split('\r')
                .map(atip::output::term::width)
                .max()
                .unwrap_or(0);
            (widest, l.to_string())
        })
        .collect()
}

fn strip_escapes(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        // CSI: ESC [ parameters, ended by a byte in @..~.
        if chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    out
}

fn assert_fits(text: &str, cols: usize, what: &str) {
    for (width, line) in screen_lines(text) {
        assert!(
            width <= cols,
            "{what}: a line of {width} columns on a {cols}-column terminal:\n{line}\n--- all:\n{text}"
        );
    }
}

/// Every command with text output for a person, in a real terminal at 80 and 120
/// columns, on a sandboxed scan of this machine's real PATH (and its man pages): lines
/// fit, with and without colour; the scan summary is at most 30 lines; `get` is a page;
/// `NO_COLOR` means no escape sequence, not even the scan's progress (the cold scan runs
/// with it); colour is there without it (so the check can fail). validate and lint read
/// the repository's shims (lint finds hundreds of warnings), diff its golden pair.
#[test]
fn commands_fit_a_real_terminal_at_80_and_120_columns() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let real_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into());
    let on_terminal = |cols: u16, no_color: bool, args: &[&str]| -> String {
        let mut c = sb.atip();
        c.env("PATH", &real_path)
            .env_remove("MANPATH")
            .env("TERM", "xterm-256color")
            .env_remove("NO_COLOR");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        c.args(args);
        let (text, code) = Pty::open(cols).run(c);
        assert!(
            code.is_some_and(|c| c <= 1),
            "atip {args:?} exited {code:?}:\n{text}"
        );
        text
    };
    for (cols, no_color) in [(80u16, true), (120, false)] {
        // The first pass scans cold; the second reads the cache: both are summaries.
        let scan = on_terminal(cols, no_color, &["scan"]);
        assert_fits(&scan, cols.into(), "scan");
        // The cold scan probes with NO_COLOR: its progress is plain text, no cursor codes.
        if no_color {
            assert!(
                !scan.contains('\x1b'),
                "scan with NO_COLOR wrote an escape sequence: {scan:?}"
            );
            assert!(scan.contains("checking "), "no progress line: {scan}");
        }
        let lines = screen_lines(&scan);
        assert!(
            lines.len() <= 30,
            "scan printed {} lines at {cols} columns:\n{scan}",
            lines.len()
        );
        assert!(strip_escapes(&scan).contains("Tools by source"), "{scan}");
    }
    // A tool this machine surely has a description of, whatever its source.
    let out = sb
        .atip()
        .env("PATH", &real_path)
        .args(["--output", "json", "list"])
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.is_empty(), "the real PATH gave no tools");
    let tool = ["git", "wc", "ls", "cat"]
        .into_iter()
        .find(|n| names.contains(n))
        .unwrap_or(names[0]);
    // Something for `registry list` and `mcp servers` to show (neither is contacted).
    let long = "https://mirror.example.org/a/long/path/to/where/the/registry/tree/is/served";
    let out = sb
        .atip()
        .args(["registry", "add", "mirror", long, "--no-check"])
        .args(["--token-env", "MIRROR_TOKEN", "--priority", "50"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {
            "files": {"command": "mcp-server-filesystem", "args": ["--root", "/srv/a/long/path/to/the/files/it/serves", "--read-only"]},
            "web": {"url": "https://mcp.example.org/a/long/path/mcp"}
        }})
        .to_string(),
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shims = repo.join("shims");
    let shims = shims.to_str().unwrap();
    let golden = repo.join("tests/fixtures/diff-golden");
    let (old, new) = (golden.join("old.json"), golden.join("new.json"));
    let mut commands = vec![
        (vec!["list"], "list"),
        (vec!["list", "--effects", "destructive"], "list --effects"),
        (vec!["get", tool], "get"),
        (
            vec!["search", "--no-mcp", "count lines in a file"],
            "search",
        ),
        (vec!["doctor"], "doctor"),
        (vec!["validate", shims], "validate"),
        (vec!["lint", "--no-config", shims], "lint"),
        (
            vec!["--verbose", "lint", "--no-config", shims],
            "lint --verbose",
        ),
        (
            vec!["diff", old.to_str().unwrap(), new.to_str().unwrap()],
            "diff",
        ),
        (vec!["registry", "list"], "registry list"),
        (vec!["mcp", "servers"], "mcp servers"),
    ];
    if names.contains(&"wc") {
        commands.push((
            vec!["exec", "wc", "--args", r#"{"lines": true}"#, "--dry-run"],
            "exec --dry-run",
        ));
    }
    // The setup commands that can run again and again: a registry build of the
    // repository's shims (all left out: name-keyed), an install and an import as dry
    // runs, the trusted project configs, a real exec.
    let built = sb.path().join("built");
    let built = built.to_str().unwrap();
    sb.write("host/mcp.json", "{\n  \"mcpServers\": {}\n}\n");
    let host = sb.path().join("host/mcp.json");
    let host = host.to_str().unwrap();
    sb.write(
        "host/cursor.json",
        json!({"mcpServers": {
            "github": {"command": "github-mcp", "args": ["stdio"]},
            "odd": {"transport": "carrier-pigeon"}
        }})
        .to_string(),
    );
    let cursor = sb.path().join("host/cursor.json");
    let cursor = cursor.to_str().unwrap();
    sb.write(
        "proj/.mcp.json",
        json!({"mcpServers": {"files": {"command": "mcp-server-filesystem",
            "args": ["--root", "/srv/a/long/path/to/the/files/it/serves/and/then/some/more", "--read-only"]}}})
        .to_string(),
    );
    let project = sb.path().join("proj/.mcp.json");
    let project = project.to_str().unwrap();
    let notes = sb.write("notes.txt", "one\ntwo\nthree\n");
    let wc_args = json!({"lines": true, "file": [notes]}).to_string();
    commands.extend([
        (vec!["registry", "build", shims, built], "registry build"),
        (
            vec![
                "mcp",
                "install",
                "--host",
                "cursor",
                "--config-file",
                host,
                "--dry-run",
            ],
            "mcp install --dry-run",
        ),
        (
            vec!["mcp", "import", "cursor", "--from", cursor, "--dry-run"],
            "mcp import --dry-run",
        ),
        (vec!["mcp", "trust", project], "mcp trust"),
        (vec!["mcp", "trust", "--list"], "mcp trust --list"),
    ]);
    if names.contains(&"wc") {
        commands.push((vec!["exec", "wc", "--args", &wc_args], "exec"));
    }
    for cols in [80u16, 120] {
        for (args, what) in &commands {
            let (args, what) = (args.as_slice(), *what);
            let plain = on_terminal(cols, true, args);
            assert!(
                !plain.contains('\x1b'),
                "{what} with NO_COLOR wrote an escape sequence: {plain:?}"
            );
            assert_fits(&plain, cols.into(), what);
            if what == "get" {
                let first = plain.trim_start().chars().next();
                assert!(
                    first != Some('{') && first != Some('['),
                    "get is JSON:\n{plain}"
                );
                assert!(
                    plain.contains("source") && plain.contains("effects"),
                    "{plain}"
                );
            }
            // In colour the lines fit all the same (escapes take no columns).
            let coloured = on_terminal(cols, false, args);
            assert_fits(&coloured, cols.into(), &format!("{what} in colour"));
            if what == "list" {
                assert!(
                    coloured.contains("\x1b["),
                    "no colour on a terminal: {coloured:?}"
                );
            }
        }
    }
    // Commands that change something run once each, at 80 columns, without colour.
    let key = sb.path().join("keys/key");
    std::fs::create_dir_all(key.parent().unwrap()).unwrap();
    let public = sb.path().join("keys/key.pub");
    let links = sb.path().join("links");
    std::fs::create_dir_all(&links).unwrap();
    let once: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["registry", "keygen", key.to_str().unwrap()],
            "registry keygen",
        ),
        (
            vec![
                "registry",
                "add",
                "team",
                long,
                "--no-check",
                "--public-key",
                public.to_str().unwrap(),
            ],
            "registry add",
        ),
        (vec!["registry", "remove", "team"], "registry remove"),
        (
            vec!["mcp", "install", "--host", "cursor", "--config-file", host],
            "mcp install",
        ),
        (
            vec![
                "mcp",
                "uninstall",
                "--host",
                "cursor",
                "--config-file",
                host,
            ],
            "mcp uninstall",
        ),
        (vec!["mcp", "untrust", project], "mcp untrust"),
        (
            vec!["mcp", "link-cli", "--dir", links.to_str().unwrap()],
            "mcp link-cli",
        ),
    ];
    for (args, what) in &once {
        let plain = on_terminal(80, true, args);
        assert!(!plain.contains('\x1b'), "{what} with NO_COLOR: {plain:?}");
        assert_fits(&plain, 80, what);
    }
}

/// A command run on a pseudo-terminal of `cols` columns, without colour: every line it
/// writes (stdout and stderr) fits, and there is no escape sequence.
fn fits_a_terminal(mut cmd: Command, cols: u16, what: &str) -> String {
    cmd.env("NO_COLOR", "1").env("TERM", "xterm-256color");
    let (text, code) = Pty::open(cols).run(cmd);
    assert!(
        code.is_some_and(|c| c <= 1),
        "{what} exited {code:?}:\n{text}"
    );
    assert!(!text.contains('\x1b'), "{what} with NO_COLOR: {text:?}");
    assert_fits(&text, cols.into(), what);
    text
}

/// Every `N ms` (or `N.NN ms`) written as `N ms`: timings differ from run to run.
fn redact_ms(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" ms") {
        let head = &rest[..at];
        let digits = head
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .count();
        let keep = head.len() - digits;
        out.push_str(&head[..keep]);
        out.push_str(if digits > 0 { "N ms" } else { " ms" });
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    out
}

/// The key id and public key of the minisign key at `key`, as `[KEY ID]` and `[PUBLIC KEY]`.
fn redact_key(text: &str, key: &Path) -> String {
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let mut lines = public.lines();
    let id = lines
        .next()
        .and_then(|l| l.split_whitespace().last())
        .unwrap()
        .to_string();
    let base64 = lines.next().unwrap().trim().to_string();
    text.replace(&base64, "[PUBLIC KEY]")
        .replace(&id, "[KEY ID]")
}

/// The commands that set things up, as a person sees them: registry keygen, build, add,
/// remove; sync (and --verbose); mcp install (dry run, install, uninstall), trust (and
/// --list), untrust, import, link-cli. Random parts (keys, ports, timings, paths) are
/// redacted; every line fits 80 columns where a width is given.
#[test]
fn snapshots_of_registry_sync_and_mcp_setup() {
    let w = World::new();
    let p = |rel: &str| w.sb.path().join(rel).to_str().unwrap().to_string();
    let text = |cols: Option<u16>, args: &[&str]| {
        let t = redact_ms(&redact_key(&w.text(cols, args), &w.sb.path().join("key")));
        if let Some(c) = cols {
            assert_fits(&t, c.into(), &args.join(" "));
        }
        t
    };
    insta::assert_snapshot!(
        "registry_keygen",
        text(None, &["registry", "keygen", &p("key")])
    );
    // count is published (its binary given), tally has no binary here: left out.
    let mut tally = count_shim();
    tally["name"] = json!("tally");
    tally["binary"]["name"] = json!("tally");
    w.sb.write(
        "src/count.json",
        serde_json::to_vec_pretty(&count_shim()).unwrap(),
    );
    w.sb.write("src/tally.json", serde_json::to_vec_pretty(&tally).unwrap());
    let build = [
        "registry",
        "build",
        &p("src"),
        &p("out"),
        "--name",
        "team",
        "--sign",
        &p("key"),
        "--binary",
        &p("bin/count"),
        "--expires",
        "2030-01-01T00:00:00Z",
        "--url",
        "https://tools.example.org/atip",
    ];
    insta::assert_snapshot!("registry_build", text(None, &build));
    let server = crate::common::static_server::StaticServer::start(&w.sb.path().join("out"));
    let add = text(
        None,
        &[
            "registry",
            "add",
            "team",
            &server.url,
            "--public-key",
            &p("key.pub"),
        ],
    );
    insta::assert_snapshot!("registry_add", add.replace(&server.url, "[URL]"));
    let sync = ["sync", "--path", &p("bin")];
    insta::assert_snapshot!("sync", text(None, &sync).replace(&server.url, "[URL]"));
    let verbose = ["--verbose", "sync", "--refresh", "--path", &p("bin")];
    insta::assert_snapshot!(
        "sync_verbose",
        text(None, &verbose).replace(&server.url, "[URL]")
    );
    for cols in [80, 50] {
        let c = w.atip(&["--verbose", "sync", "--path", &p("bin")]);
        let shown = fits_a_terminal(c, cols, "sync --verbose");
        assert!(shown.contains("1 tool registered"), "{shown}");
    }
    insta::assert_snapshot!(
        "registry_remove",
        text(None, &["registry", "remove", "team"])
    );

    w.sb.write("host/mcp.json", "{\n  \"mcpServers\": {}\n}\n");
    let install = [
        "mcp",
        "install",
        "--host",
        "cursor",
        "--config-file",
        &p("host/mcp.json"),
        "--program",
        "/opt/atip/bin/atip",
    ];
    let dry: Vec<&str> = install.iter().copied().chain(["--dry-run"]).collect();
    insta::assert_snapshot!("mcp_install_dry_run", text(Some(80), &dry));
    insta::assert_snapshot!("mcp_install", text(None, &install));
    insta::assert_snapshot!(
        "mcp_uninstall",
        text(
            None,
            &[
                "mcp",
                "uninstall",
                "--host",
                "cursor",
                "--config-file",
                &p("host/mcp.json")
            ]
        )
    );

    w.sb.write(
        "proj/.mcp.json",
        json!({"mcpServers": {
            "files": {"command": "mcp-server-filesystem", "args": ["--root", "/srv/a/long/path/to/the/files/it/serves", "--read-only"]},
            "web": {"url": "https://mcp.example.org/mcp", "headers": {"Authorization": "Bearer ${WEB_TOKEN}"}}
        }})
        .to_string(),
    );
    insta::assert_snapshot!(
        "mcp_trust_80",
        text(Some(80), &["mcp", "trust", "proj/.mcp.json"])
    );
    let list = text(None, &["mcp", "trust", "--list"]);
    assert!(list.ends_with("1 trusted project config\n"), "{list}");
    insta::assert_snapshot!(
        "mcp_untrust",
        text(None, &["mcp", "untrust", "proj/.mcp.json"])
    );

    w.sb.write(
        "host/cursor.json",
        json!({"mcpServers": {
            "github": {"command": "github-mcp", "args": ["stdio"]},
            "notes": {"url": "https://notes.example.org/mcp"},
            "odd": {"transport": "carrier-pigeon"}
        }})
        .to_string(),
    );
    insta::assert_snapshot!(
        "mcp_import_dry_run",
        text(
            None,
            &[
                "mcp",
                "import",
                "cursor",
                "--from",
                &p("host/cursor.json"),
                "--dry-run"
            ]
        )
    );
    let atip = std::fs::canonicalize(env!("CARGO_BIN_EXE_atip")).unwrap();
    std::fs::create_dir_all(w.sb.path().join("links")).unwrap();
    insta::assert_snapshot!(
        "mcp_link_cli",
        text(None, &["mcp", "link-cli", "--dir", &p("links")])
            .replace(atip.to_str().unwrap(), "[ATIP]")
    );
}

/// `atip chat`'s transcript on stderr: what the model asked, the decision, the output
/// cut to a few lines (all of it with --verbose).
#[test]
fn snapshot_of_a_chat_transcript() {
    use crate::common::endpoint::{Api, Endpoint, Reply};
    let sb = crate::common::tools::sandbox_with_t();
    let api = Api::Openai;
    let run = |verbose: bool, calls: &[(&str, &str, Value)]| {
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(calls)),
            Reply::ok(api.text("The tool says ok.")),
        ]);
        let mut cmd = sb.atip();
        if verbose {
            cmd.arg("--verbose");
        }
        cmd.args(["--output", "text", "chat", "--provider", api.flag()])
            .args(["--model", "test-model", "--base-url", &api.base(&ep)])
            .arg("What does the tool say?")
            .env(api.key_var(), "sk-test-0123456789abcdef")
            .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        redact_ms(&format!("--- stdout\n{stdout}--- stderr\n{stderr}"))
    };
    let calls = [
        ("call_1", "t_json", json!({})),
        ("call_2", "t_delete", json!({"target": "the-database"})),
        ("call_3", "t_fail", json!({})),
    ];
    insta::assert_snapshot!("chat_transcript_verbose", run(true, &calls));
    let calls = [("call_1", "t_flood", json!({}))];
    insta::assert_snapshot!("chat_transcript", run(false, &calls));
    // On a terminal the transcript fits it: the long output lines are cut.
    let calls = [
        ("call_1", "t_flood", json!({})),
        ("call_2", "t_json", json!({})),
    ];
    let ep = Endpoint::start(vec![
        Reply::ok(api.calls(&calls)),
        Reply::ok(api.text("The tool says ok.")),
    ]);
    let mut cmd = sb.atip();
    cmd.args(["--output", "text", "chat", "--provider", api.flag()])
        .args(["--model", "test-model", "--base-url", &api.base(&ep)])
        .arg("What does the tool say?")
        .env(api.key_var(), "sk-test-0123456789abcdef");
    let shown = fits_a_terminal(cmd, 40, "chat");
    assert!(shown.contains("line 0 of a long"), "{shown}");
    assert!(shown.contains("The tool says ok."), "{shown}");
}
