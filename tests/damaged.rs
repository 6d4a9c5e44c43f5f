//! A registry metadata file damaged in place (`tools/<sha256>.json` edited on disk):
//! `atip exec` refuses it, `atip search` leaves it out too, and a plain `atip scan`
//! writes it again from the document.

use crate::common::{Sandbox, show};
use serde_json::Value;

const ALPHA: &str = r#"{"atip": {"version": "0.6"}, "name": "alpha", "version": "1.0", "description": "Alpha tool",
 "commands": {"frobnicate": {"description": "Frobnicate the widgets", "effects": {"network": false, "destructive": true}}}}"#;

fn scan(sb: &Sandbox) {
    let out = sb
        .atip()
        .args(["scan", "--output", "json", "--path"])
        .arg(sb.path().join("bin"))
        .arg("--shims")
        .arg(sb.path().join("shims"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

fn search(sb: &Sandbox) -> (Vec<String>, String) {
    let out = sb
        .atip()
        .args([
            "search",
            "--output",
            "json",
            "--no-mcp",
            "frobnicate widgets",
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

#[test]
fn a_damaged_metadata_file_is_not_offered_and_a_rescan_repairs_it() {
    let sb = Sandbox::new();
    sb.script("bin/alpha", "#!/bin/sh\necho alpha\n");
    sb.write("shims/alpha.json", ALPHA);
    scan(&sb);
    let (names, out) = search(&sb);
    assert!(names.iter().any(|n| n == "alpha_frobnicate"), "{out}");

    // Damage the file in place: the destructive command now claims to be harmless.
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let rel = reg["tools"]["alpha"]["metadata"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = sb.data_dir().join(&rel);
    let good = std::fs::read(&file).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    assert!(text.contains("\"destructive\": true"), "{text}");
    std::fs::write(
        &file,
        text.replace("\"destructive\": true", "\"destructive\": false"),
    )
    .unwrap();

    // exec refuses it; search leaves it out (and says why).
    let out = sb
        .atip()
        .args(["exec", "alpha_frobnicate", "--args", "{}", "--dry-run"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "{}", show(&out));
    let (names, out) = search(&sb);
    assert!(!names.iter().any(|n| n == "alpha_frobnicate"), "{out}");
    assert!(out.contains("left out of the results"), "{out}");

    // A plain rescan (nothing else changed) writes the file again.
    scan(&sb);
    assert_eq!(std::fs::read(&file).unwrap(), good);
    let (names, out) = search(&sb);
    assert!(names.iter().any(|n| n == "alpha_frobnicate"), "{out}");
}
