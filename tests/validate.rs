//! `atip validate` end to end: the real binary on real files, stdin and child processes.

use crate::common;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every file under `dir` whose name ends with `suffix`, sorted.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn validate(sb: &Sandbox, args: &[&str]) -> Output {
    sb.atip().arg("validate").args(args).output().unwrap()
}

/// Runs with `--output json` and parses the array.
fn validate_json(sb: &Sandbox, args: &[&str]) -> (Output, Vec<Value>) {
    let out = sb
        .atip()
        .args(["--output", "json", "validate"])
        .args(args)
        .output()
        .unwrap();
    let parsed: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", show(&out)));
    let Value::Array(items) = parsed else {
        panic!("not an array:\n{}", show(&out))
    };
    (out, items)
}

fn rules_of(entry: &Value) -> Vec<String> {
    entry["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn valid_fixtures_are_valid_and_clean() {
    let sb = Sandbox::new();
    let dir = fixtures().join("valid");
    let (out, items) = validate_json(&sb, &[dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let expected: Vec<String> = files(&dir, ".json")
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let got: Vec<String> = items
        .iter()
        .map(|i| i["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, expected, "every *.json, in sorted order");
    for item in &items {
        assert_eq!(item["valid"], true, "{item}");
        assert_eq!(item["diagnostics"], serde_json::json!([]), "{item}");
    }
    let kinds: BTreeSet<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["metadata", "pattern", "registry", "shim"]),
        "every kind is detected at least once"
    );
}

#[test]
fn invalid_fixtures_give_their_expected_diagnostics() {
    let sb = Sandbox::new();
    let dir = fixtures().join("invalid");
    let docs = files(&dir, ".json");
    let expectations = files(&dir, ".expected");
    assert_eq!(
        docs.iter()
            .map(|p| p.with_extension(""))
            .collect::<Vec<_>>(),
        expectations
            .iter()
            .map(|p| p.with_extension(""))
            .collect::<Vec<_>>(),
        "each invalid fixture has exactly one NAME.expected beside it"
    );
    let (out, items) = validate_json(&sb, &[dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(items.len(), docs.len());
    for (item, doc) in items.iter().zip(&docs) {
        assert_eq!(item["path"].as_str().unwrap(), doc.to_str().unwrap());
        let expected: Value =
            serde_json::from_slice(&std::fs::read(doc.with_extension("expected")).unwrap())
                .unwrap();
        assert_eq!(item["valid"], expected["valid"], "{}", doc.display());
        assert_eq!(item["kind"], expected["kind"], "{}", doc.display());
        let got: Vec<Value> = item["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                assert!(!d["message"].as_str().unwrap().is_empty());
                assert!(d["hint"].is_string(), "every rule has a hint: {d}");
                serde_json::json!({"severity": d["severity"], "rule": d["rule"],
                                   "pointer": d["pointer"], "line": d["line"]})
            })
            .collect();
        assert_eq!(
            Value::Array(got),
            expected["diagnostics"],
            "diagnostics of {}",
            doc.display()
        );
    }
    // Every fixture also fails (or warns) alone, through the same binary.
    let one = validate(&sb, &[docs[0].to_str().unwrap()]);
    assert!(matches!(one.status.code(), Some(0 | 1)), "{}", show(&one));
}

#[test]
fn valid_fixtures_round_trip_through_the_model() {
    for path in files(&fixtures().join("valid"), ".json") {
        let bytes = std::fs::read(&path).unwrap();
        let checked = atip::validate::check_bytes(&bytes, None, None);
        assert!(
            checked.is_valid(),
            "{}: {:?}",
            path.display(),
            checked.diagnostics
        );
        let kind = checked.kind.unwrap();
        if !matches!(
            kind,
            atip::validate::Kind::Metadata | atip::validate::Kind::Shim
        ) {
            continue;
        }
        let value = checked.value.unwrap();
        let model = atip::model::Metadata::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(model.to_value(), value, "{} lost data", path.display());
        assert!(model.tool_name().is_some() && model.tool_version().is_some());
    }
}

#[test]
fn missing_input_exits_66_and_still_checks_the_rest() {
    let sb = Sandbox::new();
    let good = fixtures().join("valid/minimal-0.1.json");
    let (out, items) = validate_json(&sb, &["no/such/file.json", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["input-missing"]);
    assert_eq!(items[1]["valid"], true);
}

#[test]
fn usage_errors_exit_2() {
    let sb = Sandbox::new();
    let out = validate(&sb, &[]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to validate"));
    let out = validate(&sb, &["--kind", "nonsense", "x.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = validate(&sb, &["--max-size", "lots", "x.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = validate(&sb, &["-", "-"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
}

#[test]
fn warnings_pass_unless_denied() {
    let sb = Sandbox::new();
    let bom = fixtures().join("invalid/bom.json");
    let out = validate(&sb, &[bom.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = validate(&sb, &["--deny-warnings", bom.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn text_output_shows_source_line_and_caret() {
    let sb = Sandbox::new();
    let f = fixtures().join("invalid/duplicate-keys.json");
    // By default: the totals first, then one line per finding under the file's name.
    let out = sb
        .atip()
        .args(["--output", "text", "validate"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("✗ checked 1 document: 0 valid, 1 invalid (3 errors, 0 warnings)\n"),
        "{text}"
    );
    assert!(text.contains(&format!("\n{}\n", f.display())), "{text}");
    assert!(
        text.contains("  13:3  error  duplicate-key  key \"name\" appears again"),
        "{text}"
    );
    assert!(!text.contains("^^^"), "{text}");
    // With --verbose: each finding in full, its source line with a caret, the hint.
    let out = sb
        .atip()
        .args(["--output", "text", "--verbose", "validate"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("error[duplicate-key]"), "{text}");
    assert!(
        text.contains(&format!("--> {}:13:3", f.display())),
        "{text}"
    );
    assert!(text.contains("13 |   \"name\": \"dup2\""), "{text}");
    assert!(text.contains("^^^^^^ /name"), "{text}");
    assert!(text.contains("= help: remove or rename"), "{text}");
    assert!(text.contains("checked 1 document: 0 valid, 1 invalid (3 errors, 0 warnings)"));
}

#[test]
fn sarif_output_is_sarif_2_1_0() {
    let sb = Sandbox::new();
    let dir = fixtures().join("invalid");
    let out = sb
        .atip()
        .args(["--output", "sarif", "validate"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "atip");
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let results = run["results"].as_array().unwrap();
    assert!(results.len() > 40);
    for r in results {
        let id = r["ruleId"].as_str().unwrap();
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index], id);
        assert!(matches!(r["level"].as_str(), Some("error" | "warning")));
        let loc = &r["locations"][0]["physicalLocation"];
        assert!(
            loc["artifactLocation"]["uri"]
                .as_str()
                .unwrap()
                .ends_with(".json")
        );
        if id != "empty-input" {
            assert!(loc["region"]["startLine"].as_u64().unwrap() >= 1, "{r}");
            assert!(loc["region"]["startColumn"].as_u64().unwrap() >= 1, "{r}");
        }
    }
    let dup = results
        .iter()
        .find(|r| {
            r["ruleId"] == "duplicate-key"
                && r["locations"][0]["physicalLocation"]["region"]["startLine"] == 13
        })
        .expect("duplicate key result");
    assert_eq!(
        dup["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
        "/name"
    );
}

#[test]
fn stdin_is_read_with_dash() {
    let sb = Sandbox::new();
    let mut child = sb
        .atip()
        .args(["--output", "json", "validate", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            br#"{"atip": "0.1", "name": "x", "version": "1", "description": "d", "name": "y"}"#,
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let items: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(items[0]["path"], "-");
    assert_eq!(rules_of(&items[0]), ["duplicate-key"]);
    assert_eq!(items[0]["diagnostics"][0]["column"], 66);
}

#[test]
fn bad_bytes_are_reported_not_panicked_on() {
    let sb = Sandbox::new();
    let cases: &[(&str, &[u8], &str)] = &[
        ("empty.json", b"", "empty-input"),
        ("latin1.json", b"{\"a\": \"caf\xe9\"}", "invalid-utf8"),
        ("garbage.json", b"{} {}", "trailing-characters"),
        ("cut.json", b"{\"atip\": {\"version\":", "truncated-json"),
        ("nul.json", b"\0\0\0", "json-syntax"),
    ];
    for (name, bytes, rule) in cases {
        let p = sb.write(name, bytes);
        let (out, items) = validate_json(&sb, &[p.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}: {}", show(&out));
        assert_eq!(rules_of(&items[0]), [*rule], "{name}");
        assert!(out.stderr.is_empty(), "{name}: {}", show(&out));
    }
}

#[test]
fn nesting_200000_levels_is_a_clear_error() {
    let sb = Sandbox::new();
    let deep = format!("{}{}", "[".repeat(200_000), "]".repeat(200_000));
    let p = sb.write("deep.json", deep);
    let objects = "{\"a\":".repeat(200_000);
    let q = sb.write("deep-objects.json", objects);
    let (out, items) = validate_json(&sb, &[p.to_str().unwrap(), q.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    for item in &items {
        assert_eq!(rules_of(item), ["nesting-too-deep"]);
        assert!(
            item["diagnostics"][0]["message"]
                .as_str()
                .unwrap()
                .contains("128 levels")
        );
    }
    // Text output renders the (very long) line without trouble.
    let out = sb
        .atip()
        .args(["--output", "text", "validate"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn oversized_file_is_refused_unread() {
    let sb = Sandbox::new();
    let p = sb.path().join("huge.json");
    // Sparse: 300 MB of apparent size, no disk used.
    std::fs::File::create(&p)
        .unwrap()
        .set_len(300 << 20)
        .unwrap();
    let (out, items) = validate_json(&sb, &[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["file-too-large"]);
    let message = items[0]["diagnostics"][0]["message"].as_str().unwrap();
    assert!(message.contains("314572800 bytes"), "{message}");
    assert!(message.contains("16777216"), "{message}");
    // Refused from the file's metadata, not by reading it.
    assert!(message.ends_with("it was not read"), "{message}");

    // Standard input has no size up front: reading stops past the cap.
    let mut child = sb
        .atip()
        .args(["--output", "json", "validate", "--max-size", "1KiB", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The writer may see a closed pipe once atip stops reading.
    let _ = stdin.write_all(&vec![b' '; 64 << 10]);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let items: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rules_of(&items[0]), ["file-too-large"]);
    assert!(
        items[0]["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("reading stopped")
    );

    let small = fixtures().join("valid/gh-0.6.json");
    let (out, items) = validate_json(&sb, &["--max-size", "1KiB", small.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["file-too-large"]);
    let (out, _) = validate_json(&sb, &["--max-size", "1MiB", small.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn a_directory_of_2000_files_is_reported_in_order() {
    let sb = Sandbox::new();
    let dir = sb.path().join("many");
    for i in 0..2000 {
        let sub = dir.join(format!("d{}", i % 7));
        std::fs::create_dir_all(&sub).unwrap();
        let body = if i % 500 == 0 {
            format!(r#"{{"atip": "0.1", "name": "t{i}", "version": "1"}}"#)
        } else {
            format!(
                r#"{{"atip": "0.1", "name": "t{i}", "version": "1", "description": "tool {i}"}}"#
            )
        };
        std::fs::write(sub.join(format!("f{i:05}.json")), body).unwrap();
    }
    std::fs::write(dir.join("README.txt"), "not json, not checked").unwrap();
    let (out, items) = validate_json(&sb, &[dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(items.len(), 2000);
    let paths: Vec<&str> = items.iter().map(|i| i["path"].as_str().unwrap()).collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "deterministic, sorted order");
    let invalid: Vec<&str> = items
        .iter()
        .filter(|i| i["valid"] == false)
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(invalid.len(), 4, "{invalid:?}");
    for p in invalid {
        let n: usize = p
            .rsplit('f')
            .next()
            .unwrap()
            .trim_end_matches(".json")
            .parse()
            .unwrap();
        assert_eq!(n % 500, 0, "{p}");
    }
}

#[test]
fn kind_can_be_forced() {
    let sb = Sandbox::new();
    let reg = fixtures().join("valid/registry.json");
    let (out, items) = validate_json(&sb, &["--kind", "metadata", reg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(items[0]["kind"], "metadata");
    assert!(rules_of(&items[0]).contains(&"schema-required".to_string()));
    let (out, items) = validate_json(&sb, &["--kind", "registry", reg.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(items[0]["kind"], "registry");
}

#[test]
fn content_addressed_shim_name_is_checked_against_its_hash() {
    let sb = Sandbox::new();
    let src = std::fs::read(fixtures().join(
        "valid/shims/sha256/5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef.json",
    ))
    .unwrap();
    let renamed = sb.write(&format!("shims/sha256/{}.json", "e".repeat(64)), &src);
    let (out, items) = validate_json(&sb, &[renamed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["shim-hash-mismatch"]);
    assert_eq!(items[0]["diagnostics"][0]["pointer"], "/binary/hash");
    // A name-keyed shim with the same content is fine.
    let keyed = sb.write("shims/tar.json", &src);
    let (out, _) = validate_json(&sb, &[keyed.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

const GOOD_DOC: &str = r#"{"atip": "0.1", "name": "good", "version": "1", "description": "d"}"#;

#[test]
fn exec_checks_the_agent_contract() {
    let sb = Sandbox::new();
    let good = sb.script(
        "bin/good",
        &format!("#!/bin/sh\n[ \"$1\" = --agent ] || exit 9\necho '{GOOD_DOC}'\necho 'diagnostics may go to stderr' >&2\n"),
    );
    let (out, items) = validate_json(&sb, &["--exec", good.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(items[0]["path"], format!("{} --agent", good.display()));
    assert_eq!(items[0]["kind"], "metadata");

    // Arguments after TOOL come before --agent.
    let wrapper = sb.script(
        "bin/wrapper",
        "#!/bin/sh\n[ \"$1\" = sub ] && [ \"$2\" = --agent ] || exit 9\necho '{}'\n",
    );
    let (out, items) = validate_json(
        &sb,
        &["--exec", wrapper.to_str().unwrap(), "--exec-arg", "sub"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(rules_of(&items[0]).contains(&"schema-required".to_string()));

    let chatty = sb.script(
        "bin/chatty",
        &format!("#!/bin/sh\necho '{GOOD_DOC}'\necho 'done'\n"),
    );
    let (out, items) = validate_json(&sb, &["--exec", chatty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["trailing-characters"]);

    let failing = sb.script(
        "bin/failing",
        &format!("#!/bin/sh\necho '{GOOD_DOC}'\necho 'boom' >&2\nexit 3\n"),
    );
    let (out, items) = validate_json(&sb, &["--exec", failing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["agent-exit-status"]);
    let msg = items[0]["diagnostics"][0]["message"].as_str().unwrap();
    assert!(msg.contains("status 3") && msg.contains("boom"), "{msg}");

    let hang = sb.script("bin/hang", "#!/bin/sh\nsleep 30 &\nsleep 30\n");
    let (out, items) = validate_json(
        &sb,
        &["--timeout", "300ms", "--exec", hang.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["agent-timeout"]);
    assert!(
        items[0]["diagnostics"][0]["message"]
            .as_str()
            .unwrap()
            .contains("within 300ms")
    );

    let flood = sb.script("bin/flood", "#!/bin/sh\nhead -c 300000 /dev/zero\n");
    let (out, items) = validate_json(
        &sb,
        &["--max-size", "100KB", "--exec", flood.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["agent-output-too-large"]);

    let missing = sb.path().join("bin/does-not-exist");
    let (out, items) = validate_json(&sb, &["--exec", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["agent-spawn"]);
}

#[test]
fn parse_only_skips_schema_and_rules() {
    let sb = Sandbox::new();
    let p = sb.write("x.json", r#"{"not": "atip", "a": 1, "a": 2}"#);
    let (out, items) = validate_json(&sb, &["--parse-only", p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(rules_of(&items[0]), ["duplicate-key"]);
    let q = sb.write("y.json", r#"{"not": "atip"}"#);
    let (out, _) = validate_json(&sb, &["--parse-only", q.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}

#[test]
fn thousands_of_findings_in_one_minified_line() {
    let sb = Sandbox::new();
    let mut doc = serde_json::Map::new();
    doc.insert("atip".into(), "0.1".into());
    doc.insert("name".into(), "big".into());
    doc.insert("version".into(), "1".into());
    doc.insert("description".into(), "d".into());
    for i in 0..20_000 {
        doc.insert(format!("k{i}"), i.into());
    }
    let p = sb.write("big.json", serde_json::to_vec(&Value::Object(doc)).unwrap());
    let out = sb
        .atip()
        .args(["--output", "text", "--verbose", "validate"])
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("warning[unknown-field]").count(), 20_000);
    assert!(text.contains("(0 errors, 20000 warnings)"));
    let (_, items) = validate_json(&sb, &[p.to_str().unwrap()]);
    let last = items[0]["diagnostics"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["pointer"], "/k19999");
    assert_eq!(last["line"], 1);
    assert!(last["column"].as_u64().unwrap() > 200_000);
}

#[test]
fn a_fifo_or_device_is_refused_not_waited_on() {
    let sb = Sandbox::new();
    let fifo = sb.path().join("pipe.json");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    let (out, items) = validate_json(&sb, &[fifo.to_str().unwrap(), "/dev/zero"]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    for item in &items {
        assert_eq!(rules_of(item), ["input-unreadable"]);
        assert!(
            item["diagnostics"][0]["message"]
                .as_str()
                .unwrap()
                .contains("not a regular file")
        );
    }
    // Inside a directory, only regular *.json files are checked.
    let (out, items) = validate_json(&sb, &[sb.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(items.is_empty(), "{items:?}");
}

/// A document at the depth limit with findings at the bottom: schema validation, rules,
/// pointer resolution and rendering all run at full depth on worker threads.
#[test]
fn commands_nested_to_the_depth_limit() {
    let sb = Sandbox::new();
    let mut cmd = serde_json::json!({"description": "leaf", "options": [
        {"name": "o", "flags": ["-o"], "type": "bogus", "description": "d", "zzz": 1}]});
    for i in 0..60 {
        cmd = serde_json::json!({"description": format!("level {i}"), "commands": {format!("c{i}"): cmd}});
    }
    let doc = serde_json::json!({"atip": "0.1", "name": "deep", "version": "1",
        "description": "d", "commands": {"root": cmd}});
    let a = sb.write("a.json", doc.to_string());
    let b = sb.write("b.json", serde_json::to_string_pretty(&doc).unwrap());
    let (out, items) = validate_json(&sb, &[a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    for item in &items {
        assert_eq!(rules_of(item), ["schema-enum", "unknown-field"]);
        let pointer = item["diagnostics"][0]["pointer"].as_str().unwrap();
        assert!(
            pointer.ends_with("/commands/c0/options/0/type"),
            "{pointer}"
        );
    }
    let out = sb
        .atip()
        .args(["--output", "text", "validate"])
        .arg(&a)
        .arg(&b)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(2 errors, 2 warnings)"));
}

/// The documented `--output json` shape, pinned: no field more, none less.
mod pinned {
    #![allow(dead_code)]
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct File {
        pub path: String,
        pub kind: Option<String>,
        pub valid: bool,
        pub diagnostics: Vec<Diag>,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct Diag {
        pub severity: String,
        pub rule: String,
        pub pointer: String,
        pub line: Option<usize>,
        pub column: Option<usize>,
        pub message: String,
        pub hint: Option<String>,
    }
}

#[test]
fn json_output_has_exactly_the_documented_fields() {
    let sb = Sandbox::new();
    let out = sb
        .atip()
        .args(["--output", "json", "validate"])
        .arg(fixtures().join("invalid"))
        .arg(fixtures().join("valid"))
        .arg("missing.json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    let files: Vec<pinned::File> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(files.len() > 30);
    for f in &files {
        assert!(matches!(
            f.kind.as_deref(),
            None | Some("metadata" | "shim" | "registry" | "pattern")
        ));
        assert_eq!(
            f.valid,
            !f.diagnostics.iter().any(|d| d.severity == "error"),
            "{}",
            f.path
        );
        for d in &f.diagnostics {
            assert!(matches!(d.severity.as_str(), "error" | "warning"));
            assert!(
                atip::validate::rules::rule_info(&d.rule).is_some(),
                "{}",
                d.rule
            );
            assert_eq!(d.line.is_some(), d.column.is_some());
        }
    }
    assert_eq!(files.last().unwrap().path, "missing.json");
}

/// A shim for `name` as a user would write it (`binary` present, protocol 0.6).
fn user_shim(name: &str, hash: Option<&str>) -> String {
    let hash = hash.map_or(String::new(), |h| format!(",\"hash\":\"sha256:{h}\""));
    format!(
        r#"{{"atip":{{"version":"0.6"}},"name":"{name}","version":"1.0","description":"The {name} tool","binary":{{"name":"{name}","version":"1.0"{hash}}},"commands":{{"":{{"description":"Run it","effects":{{"network":false}}}}}}}}"#
    )
}

/// `atip validate` of atip's own data dir after a real scan (name-keyed and
/// content-addressed user shims, a tool inferred from its man page): every document is
/// checked as what atip made it — the stored copies under `tools/<hex>.json` (named by the
/// document's sha256, not the binary's) are not taken for content-addressed shims, the
/// scan caches are skipped and counted, never reported as broken documents. A stored
/// document changed afterwards is reported with its path. A remote registry tree built by
/// `atip registry build` checks clean the same way (its manifest and catalog skipped).
#[test]
fn validate_of_atip_data_dir_checks_what_atip_stored() {
    let sb = Sandbox::new();
    let hashed = sb.script("bin/hashtool", "#!/bin/sh\necho hashed\n");
    sb.script("bin/nametool", "#!/bin/sh\necho named\n");
    sb.script("bin/strings", "#!/bin/sh\necho strings\n");
    let hex = atip::digest::sha256_file(&hashed).unwrap();
    let hex = hex.trim_start_matches("sha256:").to_owned();
    let data = sb.data_dir();
    sb.write("data/shims/nametool.json", user_shim("nametool", None));
    sb.write(
        &format!("data/shims/sha256/{hex}.json"),
        user_shim("hashtool", Some(&hex)),
    );
    let page = fixtures().join("man/man1/strings.1.gz");
    std::fs::create_dir_all(sb.path().join("man/man1")).unwrap();
    std::fs::copy(&page, sb.path().join("man/man1/strings.1.gz")).unwrap();
    let out = sb
        .atip()
        .args(["--output", "json", "scan", "--no-builtin-shims", "--path"])
        .arg(sb.path().join("bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources: BTreeSet<String> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{}={}",
                t["name"].as_str().unwrap(),
                t["source"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        sources,
        BTreeSet::from([
            "hashtool=shim-hash".to_owned(),
            "nametool=shim".to_owned(),
            "strings=inferred".to_owned()
        ]),
        "{report}"
    );
    // What the scan left: stored documents, caches that are not ATIP documents.
    assert!(data.join("cache/man-dirs.json").is_file());
    let stored = files(&data.join("tools"), ".json");
    assert_eq!(stored.len(), 3, "{stored:?}");

    let data_arg = data.to_str().unwrap();
    let (out, reports) = validate_json(&sb, &[data_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(reports.iter().all(|r| r["valid"] == true), "{reports:?}");
    let paths: Vec<&str> = reports
        .iter()
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert!(
        !paths.iter().any(|p| p.ends_with("man-dirs.json")),
        "{paths:?}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{data_arg} is an atip data dir: checked {} documents",
            reports.len()
        )) && stderr.contains("3 stored under the sha256 of their bytes")
            && stderr.contains("cache/man-dirs.json (a scan cache)"),
        "{stderr}"
    );
    // Text output says the same and exits 0; a path inside the data dir is read the
    // same way (the data dir is found above it).
    let out = validate(
        &sb,
        &["--output", "text", data.join("tools").to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("checked 3 documents: 3 valid, 0 invalid"),
        "{}",
        show(&out)
    );

    // A stored document changed after the scan, still valid JSON: reported with its path.
    let victim = stored[0].clone();
    let text = std::fs::read_to_string(&victim).unwrap();
    // Stored documents are compact or pretty-printed by source: change the parsed value.
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["description"] = json!(format!("Changed: {}", doc["description"]));
    let changed = serde_json::to_string(&doc).unwrap();
    assert_ne!(text, changed);
    std::fs::write(&victim, changed).unwrap();
    // Another one cut short.
    let cut = stored[1].clone();
    let bytes = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let (out, reports) = validate_json(&sb, &[data_arg]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let bad: Vec<(&str, Vec<&str>)> = reports
        .iter()
        .filter(|r| r["valid"] == false)
        .map(|r| {
            (
                r["path"].as_str().unwrap(),
                r["diagnostics"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d["rule"].as_str().unwrap())
                    .collect(),
            )
        })
        .collect();
    let victim_path = victim.to_str().unwrap();
    let cut_path = cut.to_str().unwrap();
    assert_eq!(bad.len(), 2, "{bad:?}");
    assert!(
        bad.iter()
            .any(|(p, rules)| *p == victim_path && rules == &["stored-hash-mismatch"]),
        "{bad:?}"
    );
    assert!(
        bad.iter().any(|(p, rules)| *p == cut_path
            && rules.contains(&"stored-hash-mismatch")
            && rules.contains(&"truncated-json")),
        "{bad:?}"
    );
    let out = validate(&sb, &["--output", "text", data_arg]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("stored-hash-mismatch") && text.contains(victim_path),
        "{}",
        show(&out)
    );

    // A remote registry tree: the shims are checked (their file names against
    // binary.hash), the manifest and catalog are skipped and named.
    let src = sb.write(
        &format!("regsrc/sha256/{hex}.json"),
        user_shim("hashtool", Some(&hex)),
    );
    let tree = sb.path().join("tree");
    let out = sb
        .atip()
        .args(["registry", "build"])
        .arg(src.parent().unwrap().parent().unwrap())
        .arg(&tree)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let (out, reports) = validate_json(&sb, &[tree.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0]["kind"], "shim");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is a remote registry tree: checked 1 document")
            && stderr.contains(".well-known/atip-registry.json (the remote registry's manifest)")
            && stderr.contains("shims/index.json (the remote registry's catalog)"),
        "{stderr}"
    );
}
