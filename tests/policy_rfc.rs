//! The RFC's own policy documents (§8.2 `delegation`, §9.2 `autoApprove` /
//! `requireConfirmation`), taken from the RFC text itself at test time, accepted by
//! `atip exec --policy` and enforced on real script tools: what they forbid leaves no
//! marker file behind.

use crate::common;

use common::tools::register;
use common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The user's RFC, kept verbatim beside the tests.
const RFC: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/seeds/atip-rfc-0.1.md"
);

/// The first ```json block after the heading that starts with `heading`.
fn json_block(heading: &str) -> Value {
    let text = std::fs::read_to_string(RFC).unwrap();
    let at = text
        .lines()
        .position(|l| l.starts_with(heading))
        .unwrap_or_else(|| panic!("no heading {heading} in the RFC"));
    let mut lines = text.lines().skip(at + 1);
    lines
        .by_ref()
        .find(|l| l.trim() == "```json")
        .expect("a json block");
    let body: Vec<&str> = lines.take_while(|l| l.trim() != "```").collect();
    serde_json::from_str(&body.join("\n")).expect("the RFC's block is JSON")
}

/// A tool whose every command leaves `ran-<command>` in the working directory.
fn tool(sb: &Sandbox, name: &str, commands: Value) {
    let meta = json!({
        "atip": {"version": "0.6"}, "name": name, "version": "1.0.0",
        "description": format!("{name} for the RFC policy tests"),
        "commands": commands,
    });
    let script = "#!/bin/sh\nIFS=-; touch \"ran-$*\"; echo ran \"$*\"\n";
    register(sb, name, &meta, script, "native");
}

fn exec(sb: &Sandbox, policy: &Path, flat: &str, extra: &[&str]) -> Output {
    sb.atip()
        .args(["--output", "json", "exec", flat, "--policy"])
        .arg(policy)
        .args(extra)
        .output()
        .unwrap()
}

fn code(out: &Output) -> Value {
    let err: Value = serde_json::from_slice(&out.stderr).unwrap_or(Value::Null);
    err["error"]["code"].clone()
}

fn ran(sb: &Sandbox, marker: &str) -> bool {
    sb.path().join(format!("ran-{marker}")).exists()
}

fn policy_file(sb: &Sandbox, doc: &Value) -> PathBuf {
    sb.write("rfc-policy.json", serde_json::to_vec_pretty(doc).unwrap())
}

#[test]
fn delegation_block_of_the_rfc_restricts_a_sub_agent() {
    let doc = json_block("### 8.2");
    assert!(doc.get("delegation").is_some(), "{doc}");
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    let ro = json!({"destructive": false, "idempotent": true, "network": true});
    tool(
        &sb,
        "gh",
        json!({
            "repo": {"description": "Repositories", "commands": {
                "view": {"description": "Show a repository", "effects": ro},
                "delete": {"description": "Delete a repository", "effects": {"destructive": true}}
            }},
            "label": {"description": "Labels", "commands": {
                "remove": {"description": "Remove a label", "effects": {"destructive": true, "network": true}},
                "sync": {"description": "Effects not said", "effects": {"network": true}}
            }}
        }),
    );
    tool(
        &sb,
        "curl",
        json!({"get": {"description": "Fetch", "effects": ro}}),
    );
    let pf = policy_file(&sb, &doc);

    // Allowed: a read-only command of an allowed tool runs.
    let out = exec(&sb, &pf, "gh_repo_view", &[]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(ran(&sb, "repo-view"));
    // deniedCommands, allowedTools and effectRestrictions.destructive: refused even with
    // --yes, nothing runs.
    for (flat, marker, rule) in [
        ("gh_repo_delete", "repo-delete", "commands.deny"),
        ("curl_get", "get", "tools.allow"),
        ("gh_label_remove", "label-remove", "when.deny"),
        // destructive not stated: unknown is never safe.
        ("gh_label_sync", "label-sync", "when.deny"),
    ] {
        let out = exec(&sb, &pf, flat, &["--yes"]);
        assert_eq!(out.status.code(), Some(77), "{flat}: {}", show(&out));
        assert_eq!(code(&out), "policy_denied", "{flat}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(rule),
            "{flat}: {}",
            show(&out)
        );
        assert!(!ran(&sb, marker), "{flat} ran under the delegation");
    }
    // The same calls run without the delegation (the markers above prove the policy did it).
    let out = sb
        .atip()
        .args(["--output", "json", "exec", "gh_label_remove", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(ran(&sb, "label-remove"));

    // The translation is shown: --dry-run carries it, --verbose prints it.
    let out = exec(&sb, &pf, "gh_repo_view", &["--dry-run"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = report["policyTranslation"].as_array().expect("translation");
    assert!(
        lines
            .iter()
            .any(|l| l.as_str().unwrap().contains("tools.allow")),
        "{lines:?}"
    );
    let out = exec(&sb, &pf, "gh_repo_view", &["--dry-run", "--verbose"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("policy: delegation.deniedCommands \"gh repo delete\""),
        "{err}"
    );

    // A field atip cannot honour is an error naming it, and nothing runs.
    let mut bad = doc.clone();
    bad["delegation"]["maxDepth"] = json!(2);
    let pf = policy_file(&sb, &bad);
    let out = exec(&sb, &pf, "gh_repo_view", &[]);
    assert_eq!(out.status.code(), Some(78), "{}", show(&out));
    assert_eq!(code(&out), "policy_invalid");
    assert!(String::from_utf8_lossy(&out.stderr).contains("delegation.maxDepth"));
}

#[test]
fn permission_scoping_block_of_the_rfc_approves_and_asks() {
    let doc = json_block("### 9.2");
    assert!(doc.get("autoApprove").is_some(), "{doc}");
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.path().join("home")).unwrap();
    tool(
        &sb,
        "w",
        json!({
            "bill": {"description": "Billable, idempotent, offline",
                     "effects": {"destructive": false, "idempotent": true, "network": false, "cost": {"billable": true}}},
            "online": {"description": "Billable, idempotent, online",
                       "effects": {"destructive": false, "idempotent": true, "network": true, "cost": {"billable": true}}},
            "wipe": {"description": "Destructive, idempotent, offline",
                     "effects": {"destructive": true, "idempotent": true, "network": false}}
        }),
    );
    let pf = policy_file(&sb, &doc);

    // Without the RFC policy a billable call asks; the RFC approves it (idempotent,
    // no network), so it runs without --yes.
    let out = sb
        .atip()
        .args(["--output", "json", "exec", "w_bill"])
        .output()
        .unwrap();
    assert_eq!(code(&out), "confirmation_required", "{}", show(&out));
    assert!(!ran(&sb, "bill"));
    let out = exec(&sb, &pf, "w_bill", &[]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(ran(&sb, "bill"));
    // Not approved (network): asks, does not run.
    let out = exec(&sb, &pf, "w_online", &[]);
    assert_eq!(code(&out), "confirmation_required", "{}", show(&out));
    assert!(!ran(&sb, "online"));
    // Matches autoApprove but requireConfirmation wins: asks, runs only when confirmed.
    let out = exec(&sb, &pf, "w_wipe", &[]);
    assert_eq!(code(&out), "confirmation_required", "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("requireConfirmation"));
    assert!(!ran(&sb, "wipe"));
    let out = exec(&sb, &pf, "w_wipe", &["--yes"]);
    assert!(out.status.success(), "{}", show(&out));
    assert!(ran(&sb, "wipe"));

    let out = exec(&sb, &pf, "w_bill", &["--dry-run"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["decision"]["action"], "allow");
    assert!(
        report["decision"]["approved"][0]
            .as_str()
            .unwrap()
            .starts_with("effects.billable (lifted by autoApprove"),
        "{report}"
    );
    assert_eq!(report["policyTranslation"].as_array().unwrap().len(), 2);
}
