//! `atip search` end to end: ranking on the gh-like fixture and a registry, typo and
//! abbreviation tolerance, schemas for the top K, the byte cap and the JSON shape.

use crate::common;

use sha2::Digest;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::Path;

fn gh() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/export/gh.json")
        .display()
        .to_string()
}

fn search(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = sb
        .atip()
        .args(["--output", "json", "search"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, show(&out))
}

fn names(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn finds_commands_despite_typos_and_abbreviations() {
    let sb = Sandbox::new();
    let cases: &[(&str, &str, usize)] = &[
        ("pul request", "gh_pr_create", 5),
        ("create pull request", "gh_pr_create", 1),
        ("creat pr", "gh_pr_create", 1),
        ("delete repository", "gh_repo_delete", 1),
        ("gh repo delete", "gh_repo_delete", 1),
        ("upload release asets", "gh_release_upload", 1),
        ("list workflow runs", "gh_run_list", 1),
        ("merge", "gh_pr_merge", 1),
        ("config set", "gh_config_set", 1),
    ];
    for (q, want, within) in cases {
        let (code, v, out) = search(&sb, &["--file", &gh(), q]);
        assert_eq!(code, Some(0), "{out}");
        let got = names(&v);
        assert!(
            got.iter().take(*within).any(|n| n == want),
            "{q:?}: wanted {want} in top {within}, got {got:?}"
        );
    }
}

#[test]
fn json_shape_schemas_for_top_k_and_formats() {
    let sb = Sandbox::new();
    let (code, v, out) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--limit",
            "4",
            "--schemas",
            "2",
            "pull",
            "request",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(v["query"], "pull request");
    assert_eq!(v["truncated"], false);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    for (i, r) in results.iter().enumerate() {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = vec!["name", "kind", "tool", "command", "score", "description"];
        if i < 2 {
            want.push("schema");
        }
        assert_eq!(keys, want);
        assert_eq!(r["tool"], "gh");
        assert_eq!(r["kind"], "command");
    }
    assert_eq!(results[0]["schema"]["type"], "object");
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--format",
            "openai-strict",
            "--schemas",
            "1",
            "delete",
            "label",
        ],
    );
    assert_eq!(v["results"][0]["name"], "gh_label_delete");
    assert_eq!(v["results"][0]["schema"]["function"]["strict"], true);
    assert_eq!(
        v["results"][0]["schema"]["function"]["parameters"]["properties"]["repo"]["type"],
        json!(["string", "null"])
    );
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--format",
            "gemini",
            "--schemas",
            "1",
            "delete",
            "label",
        ],
    );
    assert_eq!(v["results"][0]["schema"]["parameters"]["type"], "OBJECT");
    let (code, _, out) = search(&sb, &["--file", &gh(), "--format", "skill", "x"]);
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn explain_says_why() {
    let sb = Sandbox::new();
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--explain",
            "--limit",
            "1",
            "pul",
            "request",
        ],
    );
    let why: Vec<&str> = v["results"][0]["why"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    // "pul" reads as "pull" (a typo), and "pull request" as the path word `pr`.
    assert!(
        why.iter()
            .any(|w| w.starts_with("pr (abbreviation of \"pul\")")),
        "{why:?}"
    );
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--explain",
            "--limit",
            "1",
            "upload",
            "asets",
        ],
    );
    assert_eq!(v["results"][0]["name"], "gh_release_upload");
    let why = v["results"][0]["why"].to_string();
    assert!(why.contains("asset (typo of \\\"aset\\\")"), "{why}");
    let out = sb
        .atip()
        .args([
            "--output",
            "text",
            "search",
            "--file",
            &gh(),
            "--explain",
            "gh pr create",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("1. gh_pr_create  (gh pr create)"),
        "{text}"
    );
    assert!(text.contains("why: exact name: +8.00"), "{text}");
}

#[test]
fn output_is_capped_with_an_explicit_flag() {
    let sb = Sandbox::new();
    for cap in [200usize, 900, 3000] {
        let out = sb
            .atip()
            .args([
                "--output",
                "json",
                "search",
                "--file",
                &gh(),
                "--limit",
                "40",
                "--schemas",
                "40",
                "--max-bytes",
                &cap.to_string(),
                "pull request",
            ])
            .output()
            .unwrap();
        assert!(
            out.stdout.len() <= cap,
            "{} bytes > cap {cap}",
            out.stdout.len()
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["truncated"], true);
    }
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--limit",
            "40",
            "--schemas",
            "40",
            "pull request",
        ],
    );
    assert_eq!(v["truncated"], false);
    assert!(v["results"].as_array().unwrap().len() > 8);
}

#[test]
fn no_match_exits_1_and_registry_search_spans_tools() {
    let sb = Sandbox::new();
    let (code, v, out) = search(&sb, &["--file", &gh(), "qqqqqqqq"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(v["results"], json!([]));
    let (code, _, out) = search(&sb, &["anything"]);
    assert_eq!(code, Some(66), "no registry: {out}");
    let gh_doc: Value = serde_json::from_str(&std::fs::read_to_string(gh()).unwrap()).unwrap();
    let git = json!({"atip": "0.4", "name": "git", "version": "2", "description": "Distributed version control",
        "commands": {"log": {"description": "Show commit logs", "effects": {"destructive": false}},
                     "commit": {"description": "Record changes to the repository", "options": [{"name": "message", "flags": ["-m", "--message"], "type": "string", "description": "Commit message"}]}}});
    let mut tools = serde_json::Map::new();
    for (i, (name, doc)) in [("gh", gh_doc), ("git", git)].into_iter().enumerate() {
        let _ = i;
        let text = doc.to_string();
        let hex = hex::encode(sha2::Sha256::digest(text.as_bytes()));
        sb.write(&format!("data/tools/{hex}.json"), text);
        tools.insert(name.into(), json!({"path": format!("/usr/bin/{name}"), "hash": format!("sha256:{hex}"), "source": "native",
            "lastChecked": "2026-01-01T00:00:00Z", "description": "d", "atip": "0.6", "trust": "native", "effects": "unknown",
            "commands": 1, "metadata": format!("tools/{hex}.json")}));
    }
    sb.write("data/registry.json", json!({"version": "2", "updated": "2026-01-01T00:00:00Z", "agent": {"name": "atip", "version": "0"}, "tools": tools}).to_string());
    let (code, v, out) = search(&sb, &["commit message"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(names(&v)[0], "git_commit");
    let (_, v, _) = search(&sb, &["--tools", "gh", "commit message"]);
    assert!(!names(&v).contains(&"git_commit".to_string()));
    // Names from search are the names export gives.
    let exported = sb
        .atip()
        .args(["export", "--format", "openai"])
        .output()
        .unwrap();
    let e: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let all: Vec<&str> = e
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let (_, v, _) = search(&sb, &["--limit", "30", "list"]);
    for n in names(&v) {
        assert!(all.contains(&n.as_str()), "{n} not exported");
    }
}
