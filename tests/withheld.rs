//! What the policy denies whatever the arguments (its `tools`, `commands` and `programs`
//! lists) is not offered to a model: `atip search` leaves those commands out, `atip
//! export` those tools.

use crate::common::{Sandbox, show};
use serde_json::{Value, json};

const ALPHA: &str = r#"{"atip": {"version": "0.6"}, "name": "alpha", "version": "1.0", "description": "Alpha tool",
 "commands": {"frobnicate": {"description": "Frobnicate the widgets", "effects": {"network": false}},
              "inspect": {"description": "Inspect the widgets", "effects": {"network": false}}}}"#;
const BETA: &str = r#"{"atip": {"version": "0.6"}, "name": "beta", "version": "1.0", "description": "Beta tool",
 "commands": {"polish": {"description": "Polish the widgets", "effects": {"network": false}}}}"#;

fn sandbox() -> Sandbox {
    let sb = Sandbox::new();
    sb.script("bin/alpha", "#!/bin/sh\necho alpha\n");
    sb.script("bin/beta", "#!/bin/sh\necho beta\n");
    sb.write("shims/alpha.json", ALPHA);
    sb.write("shims/beta.json", BETA);
    let out = sb
        .atip()
        .args(["scan", "--output", "json", "--path"])
        .arg(sb.path().join("bin"))
        .arg("--shims")
        .arg(sb.path().join("shims"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    sb
}

fn search(sb: &Sandbox, query: &str) -> (Vec<String>, String) {
    let out = sb
        .atip()
        .args([
            "--verbose",
            "search",
            "--output",
            "json",
            "--no-mcp",
            "--limit",
            "20",
            query,
        ])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    let names = v["results"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| r["name"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    (names, show(&out))
}

fn export(sb: &Sandbox, extra: &[&str]) -> String {
    let out = sb
        .atip()
        .args(["--verbose", "export", "--format", "openai"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    show(&out)
}

#[test]
fn denied_tools_and_commands_are_not_offered() {
    let sb = sandbox();
    // Without a policy everything is offered.
    let (names, out) = search(&sb, "widgets");
    for n in ["alpha_frobnicate", "alpha_inspect", "beta_polish"] {
        assert!(names.iter().any(|x| x == n), "{n}: {out}");
    }
    let typo = |sb: &Sandbox| {
        let out = sb
            .atip()
            .args(["exec", "beta_polsh", "--args", "{}", "--output", "json"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{}", show(&out));
        show(&out)
    };
    assert!(
        typo(&sb).contains("did you mean: beta_polish"),
        "{}",
        typo(&sb)
    );
    let all = export(&sb, &[]);
    assert!(
        all.contains("beta_polish") && all.contains("alpha_inspect"),
        "{all}"
    );

    for policy in [
        json!({"tools": {"deny": ["beta"]}, "commands": {"deny": ["alpha frobnicate"]}}),
        json!({"programs": {"deny": ["**/bin/beta"]}, "tools": {"deny": ["alpha_frobnicate"]}}),
        json!({"tools": {"allow": ["alpha"]}, "commands": {"allow": ["alpha inspect"]}}),
    ] {
        sb.write("config/policy.json", policy.to_string());
        let (names, out) = search(&sb, "widgets");
        assert_eq!(names, ["alpha_inspect"], "{policy}: {out}");
        assert!(out.contains("2 result(s) withheld"), "{policy}: {out}");
        // Never silently: the JSON answer says so too, without --verbose.
        let quiet = sb
            .atip()
            .args(["search", "--output", "json", "--no-mcp", "widgets"])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&quiet.stdout).unwrap();
        assert!(
            v["notes"][0]
                .as_str()
                .is_some_and(|n| n.starts_with("2 result(s) withheld")),
            "{policy}: {}",
            show(&quiet)
        );
        // Asked by name, still not offered.
        let (names, out) = search(&sb, "polish");
        assert!(!names.iter().any(|x| x == "beta_polish"), "{policy}: {out}");
        // Export: the denied tool is not exported (whole-registry and chosen tools).
        for extra in [&[][..], &["--tools", "alpha,beta"][..]] {
            let out = export(&sb, extra);
            assert!(out.contains("alpha_inspect"), "{policy}: {out}");
            assert!(!out.contains("beta_polish"), "{policy}: {out}");
            assert!(out.contains("1 tool(s) withheld"), "{policy}: {out}");
        }
        // Nor is it suggested for a misspelt name.
        let out = typo(&sb);
        assert!(!out.contains("beta_polish"), "{policy}: {out}");
        // And exec's decision on what search withheld is the same: deny.
        let out = sb
            .atip()
            .args([
                "exec",
                "beta_polish",
                "--args",
                "{}",
                "--dry-run",
                "--output",
                "json",
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_eq!(v["decision"]["action"], "deny", "{policy}: {}", show(&out));
    }
}
