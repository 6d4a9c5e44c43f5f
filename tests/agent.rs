//! `atip --agent` through the real binary: the ATIP `--agent` contract (exit 0, one
//! JSON document on stdout, nothing else), partial discovery, and usage errors.

use crate::common;

use atip::model::{Metadata, ParamType};
use common::{Sandbox, show};
use serde_json::Value;

fn agent(sandbox: &Sandbox, extra: &[&str]) -> std::process::Output {
    sandbox
        .atip()
        .arg("--agent")
        .args(extra)
        .output()
        .expect("run atip")
}

#[test]
fn agent_prints_one_json_document_and_exits_0() {
    let sb = Sandbox::new();
    let out = agent(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(out.stderr.is_empty(), "{}", show(&out));
    // Exactly one JSON document: a streaming parse finds one value and then the end.
    let mut docs = serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>();
    let value = docs.next().expect("a document").expect("valid JSON");
    assert!(docs.next().is_none(), "more than one document on stdout");
    let meta = Metadata::from_value(value.clone()).expect("ATIP metadata");
    assert_eq!(meta.to_value(), value, "lossless through the model");
    assert_eq!(value["atip"]["version"], "0.6");
    assert_eq!(meta.name.as_deref(), Some("atip"));
    assert_eq!(meta.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
}

#[test]
fn agent_metadata_is_well_formed() {
    let sb = Sandbox::new();
    let out = agent(&sb, &[]);
    let meta = Metadata::from_slice(&out.stdout).expect("ATIP metadata");
    assert!(!meta.description.is_empty() && meta.description.len() <= 200);
    let names: Vec<String> = meta.walk().iter().map(|e| e.path_string()).collect();
    for expected in [
        "validate", "scan", "list", "get", "doctor", "export", "search", "exec", "mcp",
    ] {
        assert!(names.iter().any(|n| n == expected), "missing {expected}");
    }
    for entry in meta.walk() {
        assert!(!entry.command.description.trim().is_empty());
        let effects = meta.effective_effects(&entry);
        assert_ne!(
            effects.summary(),
            "unknown",
            "{} has no effects",
            entry.path_string()
        );
        for opt in meta.options_in_scope(&entry) {
            assert!(!opt.description.trim().is_empty(), "{}", opt.name);
            assert!(
                opt.flags.iter().all(|f| f.starts_with('-')),
                "{:?}",
                opt.flags
            );
            if opt.kind == ParamType::Enum {
                assert!(opt.values.as_ref().is_some_and(|v| !v.is_empty()));
            }
        }
        for arg in entry.command.args() {
            assert!(!arg.description.trim().is_empty(), "{}", arg.name);
        }
    }
    // The global --output enum comes from the real ValueEnum.
    let output = meta
        .global_opts()
        .iter()
        .find(|o| o.name == "output")
        .expect("--output");
    assert_eq!(output.kind, ParamType::Enum);
    let real: Vec<Value> = <atip::output::OutputFormat as clap::ValueEnum>::value_variants()
        .iter()
        .filter_map(clap::ValueEnum::to_possible_value)
        .map(|p| Value::from(p.get_name()))
        .collect();
    assert_eq!(output.values.as_deref(), Some(&real[..]));
    assert_eq!(output.default, Some("auto".into()));
    let data_dir = meta
        .global_opts()
        .iter()
        .find(|o| o.name == "data-dir")
        .expect("--data-dir");
    assert_eq!(data_dir.env_var.as_deref(), Some("ATIP_DATA_DIR"));
    assert_eq!(data_dir.kind, ParamType::Directory);
}

#[test]
fn agent_read_only_commands_say_so() {
    let sb = Sandbox::new();
    let meta = Metadata::from_slice(&agent(&sb, &[]).stdout).unwrap();
    for name in ["list", "get", "doctor", "search"] {
        let entry = meta.find(&[name]).unwrap();
        assert_eq!(
            meta.effective_effects(&entry).summary(),
            "read-only",
            "{name}"
        );
    }
    let exec = meta.find(&["exec"]).unwrap();
    let e = meta.effective_effects(&exec);
    assert_eq!(e.subprocess, Some(true));
    assert_eq!(e.destructive, None);
}

#[test]
fn agent_partial_discovery_by_commands_and_depth() {
    let sb = Sandbox::new();
    let out = agent(&sb, &["--commands", "validate,export"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let meta = Metadata::from_slice(&out.stdout).unwrap();
    assert_eq!(meta.partial, Some(true));
    let kept: Vec<&String> = meta.top_commands().map(|(n, _)| n).collect();
    assert_eq!(kept, ["validate", "export"]);
    let omitted = meta.omitted.as_ref().expect("omitted");
    assert_eq!(omitted.reason.as_deref(), Some("filtered"));
    assert_eq!(omitted.safety_assumption.as_deref(), Some("unknown"));
    assert_eq!(meta.included_commands, Some(2));
    assert!(meta.total_commands.unwrap() >= 9);

    let out = agent(&sb, &["--depth", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let meta = Metadata::from_slice(&out.stdout).unwrap();
    assert_eq!(meta.partial, Some(true));
    assert_eq!(meta.filter.as_ref().unwrap().depth, Some(1));
}

#[test]
fn agent_unknown_command_filter_is_command_not_found() {
    let sb = Sandbox::new();
    let out = agent(&sb, &["--commands", "nonesuch", "--output", "json"]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(out.stdout.is_empty());
    let err: Value = serde_json::from_slice(&out.stderr).expect("JSON error");
    assert_eq!(err["error"]["code"], "command_not_found");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nonesuch")
    );
}

#[test]
fn partial_flags_need_agent() {
    let sb = Sandbox::new();
    let out = sb.atip().args(["--depth", "1", "list"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--agent"));
}

#[test]
fn agent_output_passes_atips_own_validator() {
    let sb = Sandbox::new();
    let out = agent(&sb, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let metadata = sb.write("atip-agent.json", &out.stdout);
    let checked = sb
        .atip()
        .args(["validate", "--deny-warnings", "--output", "json"])
        .arg(&metadata)
        .output()
        .unwrap();
    assert_eq!(checked.status.code(), Some(0), "{}", show(&checked));
    let report: Value = serde_json::from_slice(&checked.stdout).expect("JSON report");
    assert_eq!(report[0]["kind"], "metadata", "{report}");
    assert_eq!(report[0]["diagnostics"], serde_json::json!([]), "{report}");

    // The same through stdin, as `atip --agent | atip validate -`.
    use std::io::Write;
    let mut child = sb
        .atip()
        .args(["validate", "--deny-warnings", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&out.stdout).unwrap();
    let piped = child.wait_with_output().unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", show(&piped));
}

#[test]
fn agent_contract_passes_validate_exec() {
    let sb = Sandbox::new();
    let out = sb
        .atip()
        .args(["validate", "--deny-warnings", "--output", "json", "--exec"])
        .arg(env!("CARGO_BIN_EXE_atip"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report[0]["valid"], true, "{report}");
    // A partial answer is valid metadata too.
    let out = sb
        .atip()
        .args(["validate", "--deny-warnings", "--exec"])
        .arg(env!("CARGO_BIN_EXE_atip"))
        .args([
            "--exec-arg",
            "--commands",
            "--exec-arg",
            "export,exec",
            "--exec-arg=--depth",
            "--exec-arg",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}
