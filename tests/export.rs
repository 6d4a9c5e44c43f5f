//! `atip export` end to end: golden outputs per format on the gh-like fixture, the
//! registry path, filters, interactive commands, `--check`, errors, and every shipped shim.
//!
//! Regenerate goldens with `UPDATE_GOLDENS=1 cargo test --test export`.

use crate::common;

use sha2::Digest;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/export")
        .join(name)
}

fn golden(name: &str, actual: &str) {
    let path = fixture("golden").join(name);
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "missing golden {}: {e} (run with UPDATE_GOLDENS=1)",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(expected.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from its golden at line {}:\n  golden: {:?}\n  actual: {:?}\n(run with UPDATE_GOLDENS=1 to accept)",
            line + 1,
            expected.lines().nth(line),
            actual.lines().nth(line)
        );
    }
}

fn export(sb: &Sandbox, args: &[&str]) -> std::process::Output {
    sb.atip().arg("export").args(args).output().unwrap()
}

fn gh() -> String {
    fixture("gh.json").display().to_string()
}

#[test]
fn golden_per_format_flat_and_grouped() {
    let sb = Sandbox::new();
    for format in [
        "openai",
        "openai-strict",
        "anthropic",
        "gemini",
        "mcp",
        "prompt",
    ] {
        for strategy in ["flat", "grouped"] {
            if format == "prompt" && strategy == "grouped" {
                continue;
            }
            // Two paths must print the same bytes: streamed views, and checked values.
            let fast = export(
                &sb,
                &["--format", format, "--strategy", strategy, "--file", &gh()],
            );
            assert_eq!(
                fast.status.code(),
                Some(0),
                "{format}/{strategy}: {}",
                show(&fast)
            );
            let out = export(
                &sb,
                &[
                    "--format",
                    format,
                    "--strategy",
                    strategy,
                    "--file",
                    &gh(),
                    "--check",
                ],
            );
            assert_eq!(
                out.status.code(),
                Some(0),
                "{format}/{strategy}: {}",
                show(&out)
            );
            assert_eq!(
                fast.stdout, out.stdout,
                "{format}/{strategy}: --check changed the output"
            );
            let ext = if format == "prompt" { "md" } else { "json" };
            golden(
                &format!("gh.{format}.{strategy}.{ext}"),
                &String::from_utf8(out.stdout).unwrap(),
            );
        }
    }
}

#[test]
fn golden_skill_directory() {
    let sb = Sandbox::new();
    let dir = sb.path().join("skills");
    let out = export(
        &sb,
        &[
            "--format",
            "skill",
            "--file",
            &gh(),
            "-o",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        out.stdout.is_empty(),
        "skill with -o writes nothing to stdout"
    );
    let text = std::fs::read_to_string(dir.join("gh/SKILL.md")).unwrap();
    assert!(
        text.starts_with("---\nname: \"gh\"\ndescription: \""),
        "{text}"
    );
    assert!(
        text.contains("## Authentication")
            && text.contains("GH_TOKEN")
            && text.contains("gh auth login")
    );
    assert!(text.contains("## Patterns") && text.contains("review-and-merge"));
    assert!(text.contains("```sh\ngh pr create --title"));
    golden("gh.SKILL.md", &text);
    // One tool and no -o: stdout, same text.
    let out = export(&sb, &["--format", "skill", "--file", &gh()]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), text);
}

#[test]
fn what_the_reference_compiler_gets_wrong_we_get_right() {
    let sb = Sandbox::new();
    let out = export(&sb, &["--format", "openai-strict", "--file", &gh()]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tool = |name: &str| {
        v.as_array()
            .unwrap()
            .iter()
            .find(|t| t["function"]["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"))["function"]
            .clone()
    };
    // Parent options reach leaves: gh pr -R/--repo on gh_pr_list.
    let list = tool("gh_pr_list");
    assert_eq!(
        list["parameters"]["properties"]["repo"]["type"],
        json!(["string", "null"])
    );
    // Nullable enums carry null; numeric enums stay numeric.
    assert_eq!(
        list["parameters"]["properties"]["state"]["enum"],
        json!(["open", "closed", "merged", "all", null])
    );
    let runs = tool("gh_run_list");
    assert_eq!(
        runs["parameters"]["properties"]["attempt"],
        json!({"type": ["integer", "null"], "enum": [1, 2, 3, null], "description": "Attempt number"})
    );
    // Arrays carry items.
    assert_eq!(
        tool("gh_pr_create")["parameters"]["properties"]["label"]["items"],
        json!({"type": "string"})
    );
    // Effects are inherited: gh repo delete is under a destructive parent.
    assert!(
        tool("gh_repo_delete")["description"]
            .as_str()
            .unwrap()
            .ends_with("[⚠️ DESTRUCTIVE | ⚠️ NOT REVERSIBLE]")
    );
    assert!(
        tool("gh_repo_archive")["description"]
            .as_str()
            .unwrap()
            .ends_with("[⚠️ DESTRUCTIVE]")
    );
    // Missing descriptions never become "undefined".
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(!text.contains("undefined"));
    assert_eq!(
        tool("gh_pr_review")["description"],
        "Run `gh pr review`. [⚠️ NOT IDEMPOTENT]"
    );
    // Agent-only fields never reach the schema.
    for word in [
        "\"interactive\"",
        "\"duration\"",
        "\"authentication\"",
        "GH_TOKEN",
        "x-vendor",
        "x-note",
        "1-3s",
    ] {
        assert!(!text.contains(word), "{word} leaked into the export");
    }
    assert!(!text.contains("$ref"));
    // Gemini: no dashes in property names, numeric enums not string enums.
    let out = export(&sb, &["--format", "gemini", "--file", &gh()]);
    let g: Value = serde_json::from_slice(&out.stdout).unwrap();
    let create = g[0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "gh_pr_create")
        .unwrap();
    assert!(create["parameters"]["properties"].get("dry_run").is_some());
    let runs = g[0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "gh_run_list")
        .unwrap();
    assert_eq!(
        runs["parameters"]["properties"]["attempt"],
        json!({"type": "INTEGER", "description": "Attempt number. One of: 1, 2, 3."})
    );
    // A command without parameters has no `parameters` in Gemini.
    let tools = export(
        &sb,
        &[
            "--format",
            "gemini",
            "--file",
            &fixture("bare.json").display().to_string(),
        ],
    );
    let b: Value = serde_json::from_slice(&tools.stdout).unwrap();
    assert_eq!(
        b[0]["functionDeclarations"][0],
        json!({"name": "sleepy", "description": "Wait a second [READ-ONLY]"})
    );
}

#[test]
fn interactive_commands_are_left_out_and_listed() {
    let sb = Sandbox::new();
    let out = export(&sb, &["--format", "mcp", "--file", &gh()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("left out 5 interactive commands"), "{err}");
    for t in [
        "gh auth login",
        "gh auth logout",
        "gh auth refresh",
        "gh run watch",
        "gh gist edit",
    ] {
        assert!(err.contains(t), "{t} not listed: {err}");
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"gh_auth_login"));
    assert_eq!(names.len(), 35);
    let out = export(
        &sb,
        &["--format", "mcp", "--file", &gh(), "--include-interactive"],
    );
    assert!(out.stderr.is_empty(), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let login = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "gh_auth_login")
        .unwrap();
    assert_eq!(
        login["description"],
        "Log in to a GitHub account [⚠️ NOT IDEMPOTENT | ⚠️ INTERACTIVE]"
    );
    assert_eq!(v["tools"].as_array().unwrap().len(), 40);
}

#[test]
fn mcp_annotations_follow_effects_and_defaults() {
    let sb = Sandbox::new();
    let out = export(&sb, &["--format", "mcp", "--file", &gh()]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ann = |name: &str| {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["annotations"]
            .clone()
    };
    assert_eq!(
        ann("gh_pr_list"),
        json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": true})
    );
    assert_eq!(
        ann("gh_repo_delete"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    // Effects unsaid: MCP's cautious defaults (destructive, open world).
    assert_eq!(
        ann("gh_label_create"),
        json!({"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true})
    );
    // network:false at the group level closes the world.
    assert_eq!(ann("gh_config_get")["openWorldHint"], false);
}

#[test]
fn check_fails_on_a_strict_limit() {
    let sb = Sandbox::new();
    let values: Vec<String> = (0..1001).map(|i| format!("v{i}")).collect();
    let doc = json!({"atip": "0.4", "name": "big", "version": "1", "description": "Big enum",
        "commands": {"pick": {"description": "Pick one", "options": [
            {"name": "which", "flags": ["--which"], "type": "enum", "description": "Which", "enum": values}]}}});
    let file = sb.write("big.json", doc.to_string());
    let out = export(
        &sb,
        &[
            "--format",
            "openai-strict",
            "--file",
            file.to_str().unwrap(),
            "--check",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("strict-limit") && err.contains("1002 enum values"),
        "{err}"
    );
    assert!(!out.stdout.is_empty(), "the output is still written");
    let out = sb
        .atip()
        .args([
            "--output",
            "json",
            "export",
            "--format",
            "openai-strict",
            "--file",
            file.to_str().unwrap(),
            "--check",
        ])
        .output()
        .unwrap();
    let report: Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stderr).lines().last().unwrap()).unwrap();
    assert_eq!(report["violations"][0]["rule"], "strict-limit");
    assert_eq!(report["violations"][0]["tool"], "big_pick");
}

fn registry(sb: &Sandbox, docs: &[(&str, Value)]) {
    let mut tools = serde_json::Map::new();
    for (i, (name, doc)) in docs.iter().enumerate() {
        // Named by the sha256 of the document, as readers check.
        let _ = i;
        let text = doc.to_string();
        let hex = hex::encode(sha2::Sha256::digest(text.as_bytes()));
        sb.write(&format!("data/tools/{hex}.json"), text);
        tools.insert(
            name.to_string(),
            json!({"path": format!("/usr/bin/{name}"), "hash": format!("sha256:{hex}"), "source": "native",
                   "lastChecked": "2026-01-01T00:00:00Z", "description": doc["description"], "atip": "0.6",
                   "trust": "native", "effects": "unknown", "commands": 1, "metadata": format!("tools/{hex}.json")}),
        );
    }
    let index = json!({"version": "2", "updated": "2026-01-01T00:00:00Z", "agent": {"name": "atip", "version": "0.1.0"}, "tools": tools});
    sb.write("data/registry.json", index.to_string());
}

fn small(name: &str) -> Value {
    json!({"atip": {"version": "0.6"}, "name": name, "version": "1", "description": format!("The {name} tool"),
           "commands": {"log": {"description": "Show logs", "effects": {"destructive": false}},
                        "rm": {"description": "Remove", "effects": {"destructive": true}, "arguments": [{"name": "path", "type": "file", "description": "What"}]}}})
}

#[test]
fn registry_export_with_tools_and_commands_filters() {
    let sb = Sandbox::new();
    let gh: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("gh.json")).unwrap()).unwrap();
    registry(
        &sb,
        &[("zed", small("zed")), ("gh", gh), ("abc", small("abc"))],
    );
    let out = export(&sb, &["--format", "anthropic"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 35 + 4);
    assert_eq!(&names[..2], ["abc_log", "abc_rm"], "tools sorted by name");
    assert_eq!(&names[names.len() - 2..], ["zed_log", "zed_rm"]);
    let out = export(
        &sb,
        &[
            "--format",
            "openai",
            "--tools",
            "zed,abc",
            "--commands",
            "zed rm, abc",
        ],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["abc_log", "abc_rm", "zed_rm"]);
    let out = export(
        &sb,
        &["--format", "openai", "--commands", "gh pr list,gh issue"],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "gh_pr_list",
            "gh_issue_create",
            "gh_issue_list",
            "gh_issue_close",
            "gh_issue_delete"
        ]
    );
    // Skill: several tools need a directory.
    let out = export(&sb, &["--format", "skill"]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let dir = sb.path().join("out");
    let out = export(&sb, &["--format", "skill", "-o", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for t in ["abc", "gh", "zed"] {
        assert!(dir.join(t).join("SKILL.md").is_file());
    }
    // -o FILE
    let file = sb.path().join("deep/tools.json");
    let out = export(&sb, &["--format", "mcp", "-o", file.to_str().unwrap()]);
    assert!(out.stdout.is_empty() && out.status.success());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(v["tools"].as_array().unwrap().len(), 39);
}

#[test]
fn errors_are_clear_and_coded() {
    let sb = Sandbox::new();
    let out = export(&sb, &["--format", "openai"]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("atip scan"));
    registry(&sb, &[("abc", small("abc"))]);
    let out = export(&sb, &["--format", "openai", "--tools", "nope"]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not in the registry: nope"));
    let out = export(&sb, &["--format", "openai", "--commands", "abc nothing"]);
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("abc nothing"));
    let bad = sb.write("bad.json", "{\"atip\": \"0.4\", \"name\": 3");
    let out = export(
        &sb,
        &["--format", "openai", "--file", bad.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(65), "{}", show(&out));
    let out = export(
        &sb,
        &["--format", "openai", "--file", "/nonexistent/x.json"],
    );
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    let out = export(&sb, &["--format", "yaml", "--file", &gh()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // A broken registry entry is skipped with a warning, not fatal.
    let index: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let rel = index["tools"]["abc"]["metadata"].as_str().unwrap();
    sb.write(&format!("data/{rel}"), "not json");
    let out = export(&sb, &["--format", "openai"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: skipped abc"));
    let out = export(&sb, &["--format", "openai", "--tools", "abc"]);
    assert_eq!(out.status.code(), Some(65), "{}", show(&out));
}

#[test]
fn output_is_deterministic() {
    let sb = Sandbox::new();
    let a = export(&sb, &["--format", "openai-strict", "--file", &gh()]).stdout;
    let b = export(&sb, &["--format", "openai-strict", "--file", &gh()]).stdout;
    assert_eq!(a, b);
}

/// Every shim we ship (shims/*.json, written on another branch) exports cleanly in every
/// format: the checker passes, names are valid and unique, nothing says "undefined".
#[test]
fn every_shipped_shim_exports_cleanly() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shims");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    let sb = Sandbox::new();
    for file in &files {
        for format in ["openai", "openai-strict", "anthropic", "gemini", "mcp"] {
            for strategy in ["flat", "grouped"] {
                let out = export(
                    &sb,
                    &[
                        "--format",
                        format,
                        "--strategy",
                        strategy,
                        "--file",
                        file.to_str().unwrap(),
                        "--check",
                    ],
                );
                assert_eq!(
                    out.status.code(),
                    Some(0),
                    "{} {format}/{strategy}: {}",
                    file.display(),
                    show(&out)
                );
                let text = String::from_utf8(out.stdout).unwrap();
                assert!(
                    !text.contains("undefined") && !text.contains("$ref"),
                    "{}",
                    file.display()
                );
            }
        }
        let out = export(
            &sb,
            &["--format", "prompt", "--file", file.to_str().unwrap()],
        );
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            show(&out)
        );
    }
    eprintln!("checked {} shims", files.len());
}

#[test]
fn unwritable_output_exits_73_and_leaves_nothing_behind() {
    let sb = Sandbox::new();
    let dir = sb.path().join("a-dir");
    std::fs::create_dir_all(&dir).unwrap();
    let out = export(
        &sb,
        &[
            "--format",
            "openai",
            "--file",
            &gh(),
            "-o",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(73), "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a-dir"));
    let leftovers: Vec<_> = std::fs::read_dir(sb.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temp files left: {leftovers:?}");
    // A filter that matches nothing fails before any file is written.
    let file = sb.path().join("never.json");
    let out = export(
        &sb,
        &[
            "--format",
            "openai",
            "--file",
            &gh(),
            "--commands",
            "gh nope",
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(!file.exists());
}

/// A whole-registry export leaves inferred tools out (their metadata is a guess) and
/// says so, naming them, instead of dropping them silently.
#[test]
fn inferred_tools_left_out_are_named() {
    let sb = common::tools::sandbox_with_t();
    let mut meta = common::tools::t_meta();
    meta["name"] = json!("guess");
    meta["trust"] = json!({"source": "inferred", "verified": false});
    common::tools::register(&sb, "guess", &meta, "#!/bin/sh\necho guess\n", "inferred");
    let reg_path = sb.data_dir().join("registry.json");
    let mut reg: Value = serde_json::from_slice(&std::fs::read(&reg_path).unwrap()).unwrap();
    reg["tools"]["guess"]["source"] = json!("inferred");
    std::fs::write(&reg_path, serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    for _ in 0..2 {
        // Twice: the second export may be replayed from the kept one; the note stays.
        let out = export(&sb, &["--format", "openai"]);
        assert!(out.status.success(), "{}", show(&out));
        let tools: Value = serde_json::from_slice(&out.stdout).unwrap();
        let names: Vec<&str> = tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert!(names.iter().all(|n| !n.starts_with("guess")), "{names:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("left out 1 tool inferred") && err.contains(": guess;"),
            "{err}"
        );
    }
    let out = export(&sb, &["--format", "openai", "--include-inferred"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("guess_echo"),
        "{}",
        show(&out)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("inferred from man pages"));
}
