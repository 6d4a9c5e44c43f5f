//! Curated effects over man-page inference (issue 32, item 4): a scan of this machine's
//! real programs and manual pages gives the programs atip's effects table names their
//! effects, so read-only ones run without confirmation and destructive ones ask; a
//! program the table does not name still asks (unknown is never safe), and a program
//! that only borrows a table name from a directory of its own is not believed.

use crate::common::{self, Sandbox, show};
use serde_json::{Map, Value, json};
use std::path::Path;
use std::process::Stdio;

/// The system's program directories, scanned as they are.
const SYSTEM_PATH: &str = "/usr/bin:/bin:/usr/sbin:/sbin";

/// A scan of the system's PATH, with the system's manual pages, into `sb`.
fn scan_system(sb: &Sandbox, path: &str) -> Value {
    let out = sb
        .atip()
        .env("MANPATH", "/usr/share/man")
        .args(["--output", "json", "scan", "--verbose", "--path", path])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The registry the scan wrote, checked against our own registry schema first (a new
/// `vouchedBy` value once broke it).
fn registry(sb: &Sandbox) -> Value {
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let schema: Value = serde_json::from_str(atip::registry::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&reg)
        .take(5)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "registry.json breaks its schema: {errors:?}"
    );
    reg
}

/// `atip exec --dry-run TOOL --args ARGS` in `cwd`: the decision's action and the report.
fn dry(sb: &Sandbox, cwd: &Path, tool: &str, args: Value) -> (String, Value) {
    let out = sb
        .atip()
        .current_dir(cwd)
        .env("MANPATH", "/usr/share/man")
        .args(["--output", "json", "exec", "--dry-run", tool, "--args"])
        .arg(args.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{tool} {args}: {}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["decision"]["action"].as_str().unwrap().to_owned(), v)
}

/// Whether the system has `name`'s program and manual page (else a skip; a failure
/// under CI, where the machine has them).
fn have(name: &str, section: &str) -> bool {
    let bin = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]
        .iter()
        .any(|d| Path::new(d).join(name).exists());
    let page = Path::new("/usr/share/man")
        .join(format!("man{section}"))
        .join(format!("{name}.{section}.gz"))
        .exists();
    if !(bin && page) {
        common::skip(&format!("{name} or its manual page is not installed"));
    }
    bin && page
}

/// Arguments that satisfy `schema`'s required properties with harmless values.
fn minimal_args(schema: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    let props = &schema["properties"];
    for r in schema["required"].as_array().into_iter().flatten() {
        let Some(k) = r.as_str() else { continue };
        let p = &props[k];
        let v = if let Some(e) = p["enum"].as_array().and_then(|e| e.first()) {
            e.clone()
        } else {
            match p["type"].as_str() {
                Some("integer") | Some("number") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!(["x"]),
                _ => json!("x"),
            }
        };
        out.insert(k.to_owned(), v);
    }
    out
}

#[test]
fn system_programs_get_curated_effects_and_unknown_ones_still_ask() {
    let needed = [
        ("nl", "1"),
        ("column", "1"),
        ("tac", "1"),
        ("lsblk", "8"),
        ("free", "1"),
        ("uptime", "1"),
        ("shuf", "1"),
        ("gunzip", "1"),
        ("split", "1"),
        ("dmesg", "1"),
    ];
    if !needed.iter().all(|(n, s)| have(n, s)) {
        return;
    }
    let sb = Sandbox::new();
    let report = scan_system(&sb, SYSTEM_PATH);
    let reg = registry(&sb);
    let tools = reg["tools"].as_object().unwrap();
    let w = sb.path().join("w");
    std::fs::create_dir_all(&w).unwrap();
    std::fs::write(w.join("in.txt"), "b\na\n").unwrap();
    std::fs::write(w.join("old.txt"), "keep me\n").unwrap();

    // Table programs whose page the scan read are vouched for as curated, and this
    // machine's pages document every option the table names (else a warning says which).
    let table: Value = serde_json::from_str(atip::infer::curated::TABLE).unwrap();
    let mut curated = 0;
    for (name, e) in tools {
        if e["source"] != "inferred" || table["programs"].get(name).is_none() {
            continue;
        }
        assert_eq!(e["vouchedBy"], "curated", "{name}: {e}");
        let doc: Value = serde_json::from_slice(
            &std::fs::read(sb.data_dir().join(e["metadata"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        assert_eq!(doc["x-inferred"]["effects"]["source"], "curated", "{name}");
        assert!(
            doc["x-inferred"].get("effectsWarnings").is_none(),
            "{name}: the table names options its page does not document: {}",
            doc["x-inferred"]["effectsWarnings"]
        );
        curated += 1;
    }
    assert!(
        curated >= 300,
        "only {curated} programs got curated effects"
    );
    let _ = report;

    // Read-only programs described by their pages run without confirmation.
    for tool in ["nl", "column", "tac", "lsblk", "free", "uptime"] {
        let (action, v) = dry(&sb, &w, tool, json!({}));
        assert_eq!(action, "allow", "{tool}: {v}");
    }
    let (action, _) = dry(&sb, &w, "nl", json!({"file": ["in.txt"]}));
    assert_eq!(action, "allow");
    // Calls that destroy, overwrite or change the system ask.
    for (tool, args) in [
        ("rm", json!({"file": ["in.txt"]})),
        ("shred", json!({"file": ["in.txt"]})),
        ("dd", json!({"operand": ["if=in.txt", "of=old.txt"]})),
        ("truncate", json!({"file": ["in.txt"], "size": "0"})),
        ("split", json!({})),
        ("gunzip", json!({})),
        ("dmesg", json!({"clear": true})),
        ("shuf", json!({"output": "old.txt"})),
    ] {
        let (action, v) = dry(&sb, &w, tool, args.clone());
        assert_eq!(action, "confirm", "{tool} {args}: {v}");
    }
    // Conditions follow the call: gunzip -c only prints, shuf -o onto a new file writes it.
    let (action, v) = dry(&sb, &w, "gunzip", json!({"stdout": true}));
    assert_eq!(action, "allow", "{v}");
    let (action, v) = dry(&sb, &w, "shuf", json!({"output": "new.txt"}));
    assert_eq!(action, "allow", "{v}");
    let (action, v) = dry(&sb, &w, "dmesg", json!({}));
    assert_eq!(action, "allow", "{v}");

    // Unknown is never safe: every tool of the whole registry whose effects are neither
    // curated nor stated by a shim, the tool itself or its own manifest asks (or is
    // refused) on a call with valid arguments, through the same decision exec, mcp and
    // chat make.
    let dirs = atip::dirs::Dirs::resolve(
        Some(&sb.data_dir()),
        Some(&sb.config_dir()),
        Some(&sb.path().join("state")),
        &atip::env::Env::capture(),
    );
    let engine = atip::exec::Engine::load(
        &dirs,
        atip::exec::policy::Policy::defaults(&w),
        atip::exec::Settings {
            include_inferred: true,
            env: atip::env::Env::capture(),
            ..Default::default()
        },
        None,
        None,
    )
    .unwrap();
    let unvouched: Vec<&str> = tools
        .iter()
        .filter(|(_, e)| e["source"] == "inferred" && e["vouchedBy"] != "curated")
        .map(|(n, _)| n.as_str())
        .collect();
    assert!(
        unvouched.len() >= 100,
        "the system has hundreds of programs the table does not name ({})",
        unvouched.len()
    );
    let (mut asked, mut allowed_curated) = (0, 0);
    let mut allowed = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for t in engine.all_tools() {
        let Some(entry) = tools.get(&t.tool) else {
            continue;
        };
        seen.insert(t.tool.clone());
        let Ok(p) = engine.prepare(&t.name, minimal_args(&t.input_schema)) else {
            continue; // refused before any decision: it does not run either
        };
        let action = p.dry_run_report()["decision"]["action"].clone();
        if unvouched.contains(&t.tool.as_str()) {
            if action == "allow" {
                allowed.push(format!("{} ({})", t.name, p.dry_run_report()["decision"]));
            } else {
                asked += 1;
            }
        } else if action == "allow" && entry["vouchedBy"] == "curated" {
            allowed_curated += 1;
        }
    }
    assert!(
        allowed.is_empty(),
        "tools with unknown effects ran without confirmation: {allowed:?}"
    );
    let covered = unvouched.iter().filter(|n| seen.contains(**n)).count();
    assert!(
        covered * 10 >= unvouched.len() * 9,
        "the engine offered only {covered} of the {} tools with unknown effects",
        unvouched.len()
    );
    assert!(asked >= unvouched.len() / 2, "asked {asked}");
    assert!(
        allowed_curated >= 100,
        "curated read-only calls allowed: {allowed_curated}"
    );
}

/// A program of one's own named like a table program gets no curated effects: the
/// call asks and, unconfirmed, the program never runs.
#[test]
fn a_borrowed_table_name_is_not_believed() {
    if !have("nl", "1") {
        return;
    }
    let sb = Sandbox::new();
    let marker = sb.path().join("PWNED");
    sb.script(
        "bin/nl",
        &format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    );
    let report = scan_system(&sb, sb.path().join("bin").to_str().unwrap());
    let reg = registry(&sb);
    let e = &reg["tools"]["nl"];
    assert_eq!(e["source"], "inferred", "{e}");
    assert_eq!(e["vouchedBy"], "inferred", "{e}");
    assert_eq!(e["effects"], "unknown", "the index believed the table: {e}");
    let said = report.to_string();
    assert!(said.contains("are not vouched for"), "{said}");

    let (action, v) = dry(&sb, sb.path(), "nl", json!({}));
    assert_eq!(action, "confirm", "{v}");
    assert!(v.to_string().contains("effects.unknown"), "{v}");
    // Run for real, nobody to confirm: refused, the payload never runs.
    let out = sb
        .atip()
        .env("MANPATH", "/usr/share/man")
        .args(["--output", "json", "exec", "nl", "--args", "{}"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!marker.exists(), "the borrowed name ran: {}", show(&out));

    // Nor do the exported hints believe the table: a host that runs read-only tools
    // without asking must not be told this one is.
    let out = sb
        .atip()
        .args(["export", "--format", "mcp", "--tools", "nl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = v["tools"].as_array().unwrap();
    assert!(!tools.is_empty(), "{v}");
    for t in tools {
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], false, "{t}");
        assert_eq!(a["destructiveHint"], true, "{t}");
    }
    // And search describes its effects as unknown, not read-only.
    let out = sb
        .atip()
        .args([
            "--output",
            "json",
            "search",
            "number lines",
            "--format",
            "mcp",
        ])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(!said.contains("\"readOnlyHint\":true"), "{said}");
}
