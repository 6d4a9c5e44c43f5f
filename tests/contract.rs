//! The CLI contract every subcommand shares (spec/exit-codes.md): usage errors follow
//! `--output json`, a closed stdout pipe is a quiet exit, a failed write is exit 74,
//! options are accepted only where they work, warnings go to stderr once.

use crate::common;

use common::{Sandbox, show};
use serde_json::Value;
use std::path::Path;
use std::process::{Output, Stdio};

fn fixture(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(rel)
        .display()
        .to_string()
}

fn run(sb: &Sandbox, args: &[&str]) -> Output {
    sb.atip().args(args).output().unwrap()
}

/// The one JSON error object on stderr.
fn json_error(out: &Output) -> Value {
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .last()
        .unwrap_or_else(|| panic!("{}", show(out)));
    let v: Value = serde_json::from_str(line).unwrap_or_else(|_| panic!("{}", show(out)));
    v["error"].clone()
}

#[test]
fn usage_errors_are_json_when_json_is_asked_for() {
    let sb = Sandbox::new();
    let out = run(&sb, &["--output", "json", "list", "--bogus"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(out.stdout.is_empty());
    let e = json_error(&out);
    assert_eq!(e["code"], "usage");
    assert_eq!(e["category"], "usage");
    assert!(e["message"].as_str().unwrap().contains("--bogus"), "{e}");
    // The flag that was meant, as a corrected command line.
    let out = run(&sb, &["--output=json", "list", "--sorce", "shim"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let e = json_error(&out);
    assert_eq!(e["suggestion"]["action"], "retry_with_modified_input");
    assert_eq!(
        e["suggestion"]["example"],
        "atip --output=json list --source shim"
    );
    assert_eq!(e["suggestion"]["applicability"], "maybe_incorrect");
    // A mistyped subcommand.
    let e = json_error(&run(&sb, &["--output", "json", "serch"]));
    assert_eq!(e["suggestion"]["example"], "atip --output json search");
    // Text output keeps clap's own message.
    let out = run(&sb, &["--output", "text", "list", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage:"));
}

/// atip with stdout a pipe whose reader is already gone.
fn closed_pipe(sb: &Sandbox, args: &[&str]) -> Output {
    let mut child = sb
        .atip()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_pipe_is_a_quiet_exit() {
    let sb = Sandbox::new();
    for args in [
        &["--agent"][..],
        &["--output", "text", "validate", &fixture("valid")],
        &[
            "--output",
            "json",
            "search",
            "--file",
            &fixture("export/gh.json"),
            "pull request",
        ],
        &[
            "--output",
            "text",
            "search",
            "--file",
            &fixture("export/gh.json"),
            "pull request",
        ],
        &[
            "export",
            "--format",
            "openai",
            "--file",
            &fixture("export/gh.json"),
        ],
    ] {
        let out = closed_pipe(&sb, args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            // "error:" (the diagnostic's prefix), not "error": a note may name a path
            // with the word in it (a checkout under /work/wt/errors did).
            !stderr.contains("error:") && !stderr.contains("panicked"),
            "{args:?}: {}",
            show(&out)
        );
    }
}

#[test]
fn a_failed_write_exits_74() {
    if !Path::new("/dev/full").exists() {
        common::skip_optional("no /dev/full on this system");
        return;
    }
    let sb = Sandbox::new();
    for args in [
        &["--output", "json", "--agent"][..],
        &["--output", "json", "validate", &fixture("valid")],
        &[
            "--output",
            "json",
            "search",
            "--file",
            &fixture("export/gh.json"),
            "pull request",
        ],
        &[
            "--output",
            "json",
            "export",
            "--format",
            "openai",
            "--file",
            &fixture("export/gh.json"),
        ],
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = sb.atip().args(args).stdout(full).output().unwrap();
        assert_eq!(out.status.code(), Some(74), "{args:?}: {}", show(&out));
        assert_eq!(json_error(&out)["code"], "stdout_write_failed", "{args:?}");
    }
}

#[test]
fn options_are_accepted_only_where_they_work() {
    let sb = Sandbox::new();
    for (args, what) in [
        (&["--output", "sarif", "list"][..], "list"),
        (&["--output", "sarif", "doctor"][..], "doctor"),
        (&["--output", "github", "search", "x"][..], "search"),
    ] {
        let out = run(&sb, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(out.stdout.is_empty());
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(
            text.contains(&format!("`atip {what}` cannot print")),
            "{text}"
        );
    }
    // search schemas are JSON tool definitions only.
    let out = run(
        &sb,
        &["--output", "json", "search", "--format", "skill", "x"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // `validate --exec TOOL` passes only --exec-arg values to the tool.
    let tool = sb.script(
        "bin/argtool",
        "#!/bin/sh\nprintf '%s\\n' \"$@\" > \"$0.args\"\nprintf '{\"atip\":{\"version\":\"0.6\"},\"name\":\"argtool\",\"version\":\"1\",\"description\":\"d\"}'\n",
    );
    let out = run(
        &sb,
        &[
            "validate",
            "--exec",
            tool.to_str().unwrap(),
            "--output",
            "text",
            "--exec-arg",
            "sub",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let seen = std::fs::read_to_string(format!("{}.args", tool.display())).unwrap();
    assert_eq!(seen, "sub\n--agent\n");
    assert!(String::from_utf8_lossy(&out.stdout).contains("checked 1 document"));
}

#[test]
fn jsonl_prints_one_object_per_line() {
    let sb = Sandbox::new();
    let out = run(&sb, &["--output", "jsonl", "validate", &fixture("valid")]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let array = run(&sb, &["--output", "json", "validate", &fixture("valid")]);
    let array: Vec<Value> = serde_json::from_slice(&array.stdout).unwrap();
    assert_eq!(lines, array);
    assert!(lines.iter().all(|l| l["valid"] == true));
    let out = run(
        &sb,
        &[
            "--output",
            "jsonl",
            "search",
            "--file",
            &fixture("export/gh.json"),
            "create pull request",
        ],
    );
    let first: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().next().unwrap()).unwrap();
    assert_eq!(first["name"], "gh_pr_create", "{}", show(&out));
}

#[test]
fn validate_github_annotates_each_diagnostic() {
    let sb = Sandbox::new();
    let bad = sb.write(
        "shims/bad.json",
        "{\n  \"atip\": {\"version\": \"0.6\"},\n  \"name\": \"bad\",\n  \"version\": \"1\",\n  \"description\": \"d\",\n  \"nmae\": 1\n}\n",
    );
    let out = run(
        &sb,
        &["--output", "github", "validate", bad.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("::warning file="), "{text}");
    assert!(first.contains("(hint: "), "{first}");
    assert!(
        first.contains(&format!("file={}", bad.display())),
        "{first}"
    );
    assert!(first.contains(",line=6,"), "{first}");
    assert!(first.contains(",title="), "{first}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .starts_with("checked 1 document")
    );
}

#[test]
fn quiet_silences_notes_and_errors_stay() {
    let sb = Sandbox::new();
    let out = run(&sb, &["--output", "text", "list"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("note: no registry"));
    let out = run(&sb, &["--quiet", "--output", "text", "list"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty(), "{}", show(&out));
    let out = run(&sb, &["-q", "--output", "json", "get", "nope"]);
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(json_error(&out)["code"], "registry_not_found");
    assert_eq!(json_error(&out)["suggestion"]["example"], "atip scan");
}
