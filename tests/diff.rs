//! `atip diff` through the real binary: one fixture pair per change kind, golden outputs
//! per format, `--fail-on`, `--semver`, `--exec`, stdin, and the exit statuses.

use crate::common;

use common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn diff_json(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Value) {
    let out = sb
        .atip()
        .args(["--output", "json", "diff"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", show(&out)));
    (out.status.code(), v)
}

fn pair(kind: &str) -> (String, String) {
    let dir = fixtures().join("diff").join(kind);
    (
        dir.join("old.json").to_str().unwrap().to_string(),
        dir.join("new.json").to_str().unwrap().to_string(),
    )
}

#[test]
fn every_change_kind_has_a_fixture_pair_and_is_found() {
    let sb = Sandbox::new();
    let expected: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixtures().join("diff/expected.json")).unwrap())
            .unwrap();
    assert!(expected.len() >= 39);
    for e in &expected {
        let kind = e["kind"].as_str().unwrap();
        let (old, new) = pair(kind);
        let (code, report) = diff_json(&sb, &[&old, &new]);
        assert_eq!(code, Some(0), "{kind}: no --fail-on, exit 0");
        let changes = report["changes"].as_array().unwrap();
        let hit = changes.iter().find(|c| c["kind"] == kind);
        let hit = hit.unwrap_or_else(|| panic!("{kind}: not found in {changes:?}"));
        assert_eq!(hit["class"], e["class"], "{kind}");
        assert_eq!(hit["command"], e["command"], "{kind}: full command path");
        for c in changes {
            let message = c["message"].as_str().unwrap();
            assert!(
                message.starts_with(c["command"].as_str().unwrap()),
                "{kind}: message names the command: {message}"
            );
        }
        // The reverse direction is never silent either.
        let (_, back) = diff_json(&sb, &[&new, &old]);
        assert!(
            !back["changes"].as_array().unwrap().is_empty(),
            "{kind} reversed"
        );
    }
}

#[test]
fn identical_documents_have_no_changes() {
    let sb = Sandbox::new();
    let (old, _) = pair("option-added");
    let (code, report) = diff_json(&sb, &["--fail-on", "breaking,effects", &old, &old]);
    assert_eq!(code, Some(0));
    assert_eq!(report["changes"], Value::Array(vec![]));
}

fn golden(name: &str, actual: &str) {
    let path = fixtures().join("diff-golden").join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(actual, expected, "golden {name} differs");
}

#[test]
fn golden_outputs_per_format() {
    let sb = Sandbox::new();
    for f in ["old.json", "new.json"] {
        std::fs::copy(fixtures().join("diff-golden").join(f), sb.path().join(f)).unwrap();
    }
    for (format, file) in [
        ("text", "text.txt"),
        ("json", "json.json"),
        ("markdown", "markdown.md"),
    ] {
        let out = sb
            .atip()
            .args([
                "--output", format, "diff", "--semver", "old.json", "new.json",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {}", show(&out));
        golden(file, &String::from_utf8(out.stdout).unwrap());
    }
}

#[test]
fn fail_on_picks_the_class() {
    let sb = Sandbox::new();
    let (old, new) = pair("option-removed");
    let (code, _) = diff_json(&sb, &["--fail-on", "breaking", &old, &new]);
    assert_eq!(code, Some(1));
    let (code, _) = diff_json(&sb, &["--fail-on", "effects", &old, &new]);
    assert_eq!(code, Some(0), "a breaking change is not an effects change");
    let (old, new) = pair("effects-destructive");
    let (code, _) = diff_json(&sb, &["--fail-on", "effects", &old, &new]);
    assert_eq!(code, Some(1));
    let (code, _) = diff_json(&sb, &["--fail-on", "breaking", &old, &new]);
    assert_eq!(code, Some(0));
    let (old, new) = pair("option-added");
    let (code, _) = diff_json(
        &sb,
        &["--fail-on", "breaking", "--fail-on", "effects", &old, &new],
    );
    assert_eq!(code, Some(0));
    let (code, _) = diff_json(&sb, &["--fail-on", "non-breaking", &old, &new]);
    assert_eq!(code, Some(1));
}

#[test]
fn semver_advice_in_json() {
    let sb = Sandbox::new();
    let g = fixtures().join("diff-golden");
    let (_, r) = diff_json(
        &sb,
        &[
            "--semver",
            g.join("old.json").to_str().unwrap(),
            g.join("new.json").to_str().unwrap(),
        ],
    );
    assert_eq!(r["semver"]["required"], "major");
    assert_eq!(r["semver"]["actual"], "minor");
    assert_eq!(r["semver"]["sufficient"], false);
    let (_, r) = diff_json(
        &sb,
        &[
            g.join("old.json").to_str().unwrap(),
            g.join("new.json").to_str().unwrap(),
        ],
    );
    assert!(r.get("semver").is_none(), "only with --semver");
}

#[test]
fn exec_stdin_and_exit_codes() {
    let sb = Sandbox::new();
    let (old, new) = pair("command-removed");
    let a = sb.script("old-tool", &format!("#!/bin/sh\ncat '{old}'\n"));
    let b = sb.script("new-tool", &format!("#!/bin/sh\ncat '{new}'\n"));
    let (code, r) = diff_json(
        &sb,
        &[
            "--exec",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--fail-on",
            "breaking",
        ],
    );
    assert_eq!(code, Some(1));
    assert_eq!(r["changes"][0]["kind"], "command-removed");
    assert!(
        r["old"]["source"]
            .as_str()
            .unwrap()
            .ends_with("old-tool --agent")
    );
    // Standard input as one side.
    let out = sb
        .atip()
        .args(["--output", "json", "diff", "-", &new])
        .stdin(std::fs::File::open(&old).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["old"]["source"], "-");
    assert_eq!(r["summary"]["breaking"], 1);
    // A tool that fails its --agent contract: 69.
    let broken = sb.script("broken", "#!/bin/sh\necho '{}'\nexit 3\n");
    let out = sb
        .atip()
        .args([
            "diff",
            "--exec",
            broken.to_str().unwrap(),
            b.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(69), "{}", show(&out));
    // Missing file 66, invalid document 65, one document 2, sarif 2.
    let out = sb
        .atip()
        .args(["diff", "nope.json", &new])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    let bad = sb.write("bad.json", r#"{"atip": {"version": "0.6"}, "name": "x"}"#);
    let out = sb
        .atip()
        .args(["diff", bad.to_str().unwrap(), &new])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.json:1:"),
        "{}",
        show(&out)
    );
    let out = sb.atip().args(["diff", &new]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = sb
        .atip()
        .args(["--output", "sarif", "diff", &old, &new])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
