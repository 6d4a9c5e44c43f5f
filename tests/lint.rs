//! `atip lint` through the real binary: every rule fires on its failing fixture and
//! stays quiet on its passing one, golden outputs per format, the config file, `--fix`,
//! `--exec`, and the exit statuses.

use crate::common;

use common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn lint_json(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Vec<Value>) {
    let out = sb
        .atip()
        .args(["--output", "json", "lint", "--no-config"])
        .args(args)
        .output()
        .unwrap();
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", show(&out)));
    (out.status.code(), docs)
}

fn rules_of(doc: &Value) -> Vec<String> {
    doc["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

/// Runs one rule's fixture, through `--exec` for `agent-contract` (a script printing
/// the fixture, exiting 3 for the failing case).
fn run_fixture(sb: &Sandbox, rule: &str, file: &Path, failing: bool) -> Vec<String> {
    let file_s = file.to_str().unwrap();
    let (_, docs) = match rule {
        "binary-missing" => lint_json(sb, &["--check-binary", file_s]),
        "agent-contract" => {
            let code = if failing { 3 } else { 0 };
            let script = sb.script(
                &format!("tool-{code}"),
                &format!("#!/bin/sh\ncat '{file_s}'\nexit {code}\n"),
            );
            lint_json(sb, &["--exec", script.to_str().unwrap()])
        }
        _ => lint_json(sb, &[file_s]),
    };
    assert_eq!(docs.len(), 1);
    rules_of(&docs[0])
}

#[test]
fn every_rule_has_a_failing_and_a_passing_fixture() {
    let sb = Sandbox::new();
    let out = sb
        .atip()
        .args(["--output", "json", "lint", "--list-rules"])
        .output()
        .unwrap();
    let catalogue: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(catalogue.len() >= 17, "{}", catalogue.len());
    for entry in &catalogue {
        let rule = entry["id"].as_str().unwrap();
        let dir = fixtures().join("lint").join(rule);
        assert!(dir.is_dir(), "no fixtures for rule {rule}");
        let failing = run_fixture(&sb, rule, &dir.join("fail.json"), true);
        assert!(
            failing.iter().any(|r| r == rule),
            "{rule}: fail.json gave {failing:?}"
        );
        let passing = run_fixture(&sb, rule, &dir.join("pass.json"), false);
        assert!(passing.is_empty(), "{rule}: pass.json gave {passing:?}");
        // Fixtures are valid documents: lint findings, not validation errors.
        let v = sb
            .atip()
            .args(["validate", dir.join("fail.json").to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(v.status.code(), Some(0), "{rule}: {}", show(&v));
    }
}

/// Compares with a golden file; `UPDATE_GOLDEN=1` rewrites it instead.
fn golden(name: &str, actual: &str) {
    let path = fixtures().join("lint-golden").join(name);
    let actual = actual.replace(env!("CARGO_PKG_VERSION"), "VERSION");
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert_eq!(actual, expected, "golden {name} differs");
}

#[test]
fn golden_outputs_per_format() {
    let sb = Sandbox::new();
    std::fs::copy(
        fixtures().join("lint-golden/input.json"),
        sb.path().join("demo.json"),
    )
    .unwrap();
    for (format, file) in [
        ("text", "text.txt"),
        ("json", "json.json"),
        ("sarif", "sarif.json"),
        ("github", "github.txt"),
    ] {
        let out = sb
            .atip()
            .args(["--output", format, "lint", "--no-config", "demo.json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{format}: {}", show(&out));
        golden(file, &String::from_utf8(out.stdout).unwrap());
    }
}

#[test]
fn findings_point_at_line_and_column_not_1_1() {
    let sb = Sandbox::new();
    let input = fixtures().join("lint-golden/input.json");
    let (_, docs) = lint_json(&sb, &[input.to_str().unwrap()]);
    let d = &docs[0]["diagnostics"];
    let find = |rule: &str| {
        d.as_array()
            .unwrap()
            .iter()
            .find(|x| x["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule} in {d}"))
            .clone()
    };
    let destructive = find("destructive-without-reversible");
    assert_eq!(
        destructive["pointer"],
        "/commands/delete/effects/destructive"
    );
    assert_eq!(
        (destructive["line"].as_u64(), destructive["column"].as_u64()),
        (Some(15), Some(19))
    );
    let todo = find("description-quality");
    assert_eq!(todo["line"].as_u64(), Some(18));
}

#[test]
fn config_file_changes_severity_and_turns_rules_off() {
    let sb = Sandbox::new();
    let dir = sb.path().join("proj/sub");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        fixtures().join("lint-golden/input.json"),
        dir.join("demo.json"),
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("lint-golden/cfg/.atip-lint.json"),
        sb.path().join("proj/.atip-lint.json"),
    )
    .unwrap();
    // Found from the working directory upwards.
    let out = sb
        .atip()
        .current_dir(&dir)
        .args(["--output", "json", "lint", "demo.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let docs: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let diags = docs[0]["diagnostics"].as_array().unwrap();
    assert!(
        diags
            .iter()
            .any(|d| d["rule"] == "description-quality" && d["severity"] == "error")
    );
    assert!(!diags.iter().any(|d| d["rule"] == "effects-unstated"));
    // Without the config the same file only warns.
    let (code, docs) = lint_json(&sb, &[dir.join("demo.json").to_str().unwrap()]);
    assert_eq!(code, Some(0));
    assert!(rules_of(&docs[0]).contains(&"effects-unstated".to_string()));
    // A config naming an unknown rule is a configuration error (78), naming the key.
    let bad = sb.write("bad.json", r#"{"rules": {"no-such-rule": "off"}}"#);
    let out = sb
        .atip()
        .args(["lint", "--config", bad.to_str().unwrap(), "demo.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-rule"));
}

#[test]
fn fix_applies_mechanical_fixes_and_relints() {
    let sb = Sandbox::new();
    let path = sb.path().join("demo.json");
    std::fs::copy(fixtures().join("lint-golden/input.json"), &path).unwrap();
    let (_, before) = lint_json(&sb, &[path.to_str().unwrap()]);
    let before = rules_of(&before[0]);
    assert!(before.contains(&"destructive-without-reversible".to_string()));
    assert!(before.contains(&"enum-values-undescribed".to_string()));
    let out = sb
        .atip()
        .args([
            "--output",
            "json",
            "lint",
            "--no-config",
            "--fix",
            "demo.json",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fixed 2 findings"),
        "{}",
        show(&out)
    );
    let after: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let after = rules_of(&after[0]);
    assert!(!after.contains(&"destructive-without-reversible".to_string()));
    assert!(!after.contains(&"enum-values-undescribed".to_string()));
    assert!(
        after.contains(&"description-quality".to_string()),
        "not mechanical: kept"
    );
    let fixed: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(fixed["commands"]["delete"]["effects"]["reversible"], false);
    assert_eq!(
        fixed["commands"]["delete"]["options"][0]["description"],
        "When to use colours. One of: auto, never."
    );
    // Key order kept: `commands` still comes after `description`.
    let keys: Vec<&String> = fixed.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["atip", "name", "version", "description", "commands"]);
    // The fixed file is still valid, and a second --fix has nothing to do.
    let v = sb.atip().args(["validate", "demo.json"]).output().unwrap();
    assert_eq!(v.status.code(), Some(0), "{}", show(&v));
    let again = sb
        .atip()
        .args(["lint", "--no-config", "--fix", "demo.json"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("fixed 0 findings"));
}

#[test]
fn fix_keeps_the_authors_layout() {
    let sb = Sandbox::new();
    // The golden input, re-indented with 4 spaces: a layout atip does not write itself.
    let doc: Value =
        serde_json::from_slice(&std::fs::read(fixtures().join("lint-golden/input.json")).unwrap())
            .unwrap();
    let mut orig = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut orig, fmt);
    serde::Serialize::serialize(&doc, &mut ser).unwrap();
    let orig = String::from_utf8(orig).unwrap();
    std::fs::write(sb.path().join("demo.json"), &orig).unwrap();
    let out = sb
        .atip()
        .args(["lint", "--no-config", "--fix", "demo.json"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fixed 2 findings"),
        "{}",
        show(&out)
    );
    let fixed = std::fs::read_to_string(sb.path().join("demo.json")).unwrap();
    let added: Vec<&str> = fixed
        .lines()
        .filter(|l| !orig.lines().any(|o| o == *l))
        .collect();
    let removed: Vec<&str> = orig
        .lines()
        .filter(|l| !fixed.lines().any(|f| f == *l))
        .collect();
    // The new member, on its own line with its siblings' 4-space indent.
    assert!(
        added
            .iter()
            .any(|l| l.trim() == r#""reversible": false"# && l.len() - l.trim_start().len() == 16),
        "{added:#?}"
    );
    // The changed description, in place.
    assert!(
        added.iter().any(|l| l.contains("One of: auto, never.")),
        "{added:#?}"
    );
    // Every other line is as written; the one before the new member only gained a comma.
    for r in &removed {
        assert!(
            r.contains("When to use colours") || added.contains(&format!("{r},").as_str()),
            "changed line {r:?}; added {added:#?}"
        );
    }
    assert_eq!(removed.len(), 2, "{removed:#?}");
    assert_eq!(fixed.lines().count(), orig.lines().count() + 1);
}

#[test]
fn invalid_documents_report_validation_errors_and_exit_1() {
    let sb = Sandbox::new();
    let bad = sb.write("bad.json", r#"{"atip": {"version": "0.6"}, "name": "x"}"#);
    let (code, docs) = lint_json(&sb, &[bad.to_str().unwrap()]);
    assert_eq!(code, Some(1));
    assert!(rules_of(&docs[0]).iter().any(|r| r == "schema-required"));
    // Missing input: 66; nothing to lint: 2; markdown is not a lint format: 2.
    let (code, _) = lint_json(&sb, &["nope.json"]);
    assert_eq!(code, Some(66));
    let out = sb.atip().args(["lint"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let out = sb
        .atip()
        .args(["--output", "markdown", "lint", "bad.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn deny_warnings_and_exec_contract() {
    let sb = Sandbox::new();
    let input = fixtures().join("lint-golden/input.json");
    let out = sb
        .atip()
        .args([
            "lint",
            "--no-config",
            "--deny-warnings",
            input.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    // A tool whose --agent hangs is reported as agent-contract, and the run ends.
    let hang = sb.script("hang", "#!/bin/sh\nsleep 30\n");
    let started = std::time::Instant::now();
    let (code, docs) = lint_json(
        &sb,
        &["--timeout", "300ms", "--exec", hang.to_str().unwrap()],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert_eq!(code, Some(1));
    assert_eq!(rules_of(&docs[0]), ["agent-contract"]);
}

#[test]
fn shipped_shims_lint_without_errors() {
    let sb = Sandbox::new();
    let shims = Path::new(env!("CARGO_MANIFEST_DIR")).join("shims");
    let (code, docs) = lint_json(&sb, &[shims.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{docs:?}");
    assert!(docs.len() >= 10);
}

#[test]
fn registry_mode_lints_every_registered_document_by_tool_name() {
    let sb = Sandbox::new();
    common::tools::register(
        &sb,
        "t",
        &common::tools::t_meta(),
        common::tools::T_SCRIPT,
        "native",
    );
    let (code, docs) = lint_json(&sb, &["--registry"]);
    assert_eq!(docs.len(), 1, "{docs:?}");
    let path = docs[0]["path"].as_str().unwrap();
    assert!(
        path.starts_with("t (tools/") && path.ends_with(".json)"),
        "{path}"
    );
    // The file name is the document's hash, not a shim's binary hash: no misfire.
    let rules = rules_of(&docs[0]);
    assert!(rules.iter().all(|r| !r.starts_with("shim-")), "{rules:?}");
    assert_eq!(docs[0]["valid"], true, "{docs:?}");
    assert_eq!(code, Some(0));
    // Given files and the registry together: both linted.
    let f = sb.write("extra.json", common::tools::t_meta().to_string());
    let (_, docs) = lint_json(&sb, &[f.to_str().unwrap(), "--registry"]);
    assert_eq!(docs.len(), 2, "{docs:?}");
    // A registered document changed after the scan is a failed report, not linted.
    let file = sb
        .data_dir()
        .join(path.trim_start_matches("t (").trim_end_matches(')'));
    let mut text = std::fs::read_to_string(&file).unwrap();
    text.push(' ');
    std::fs::write(&file, text).unwrap();
    let (code, docs) = lint_json(&sb, &["--registry"]);
    assert_eq!(rules_of(&docs[0]), ["input-unreadable"], "{docs:?}");
    assert_eq!(code, Some(1));
    // --fix never rewrites registry files; no registry at all is exit 66.
    let out = sb
        .atip()
        .args(["lint", "--registry", "--fix"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let empty = Sandbox::new();
    let out = empty.atip().args(["lint", "--registry"]).output().unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
}
