//! Effects that follow the call (issue 32): options that change what one call does
//! (`x-atip-effects`, `x-atip-writes`) and GNU sed/gawk run in their sandbox instead of
//! being refused. Each test drives the real `atip` binary with the DEFAULT policy, no
//! `--yes`, over the real programs and the shipped shims, and the escape attempts fail
//! if their payload runs (a marker file appears).

use crate::common;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

/// The real program `name` in /usr/bin or /bin, else a skip (a failure under CI).
fn program(name: &str) -> Option<PathBuf> {
    for dir in ["/usr/bin", "/bin"] {
        let p = Path::new(dir).join(name);
        if p.is_file() {
            return Some(p);
        }
    }
    common::skip(&format!("{name} is not installed"));
    None
}

/// A sandbox whose registry holds links named `links` (name, real program) registered
/// by a real scan with the built-in shims, and a working directory `w`.
fn sandbox_with(links: &[(&str, &str)]) -> Option<(Sandbox, PathBuf)> {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for (name, real) in links {
        std::os::unix::fs::symlink(program(real)?, bin.join(name)).unwrap();
    }
    let out = sb
        .atip()
        .args(["--output", "json", "scan", "--path"])
        .arg(&bin)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let w = sb.path().join("w");
    std::fs::create_dir_all(&w).unwrap();
    std::fs::write(w.join("in.txt"), "alpha beta\ngamma delta\n").unwrap();
    Some((sb, w))
}

fn exec(sb: &Sandbox, cwd: &Path, tool: &str, args: &Value, dry: bool) -> Output {
    let mut c = sb.atip();
    c.current_dir(cwd).args(["--output", "json", "exec"]);
    if dry {
        c.arg("--dry-run");
    }
    c.arg(tool)
        .arg("--args")
        .arg(args.to_string())
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// The dry-run report of one call.
fn dry(sb: &Sandbox, cwd: &Path, tool: &str, args: Value) -> Value {
    let out = exec(sb, cwd, tool, &args, true);
    assert_eq!(out.status.code(), Some(0), "{tool} {args}: {}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn action(report: &Value) -> &str {
    report["decision"]["action"].as_str().unwrap()
}

#[test]
fn sed_and_gawk_run_sandboxed_and_escapes_do_not_run() {
    let Some((sb, w)) = sandbox_with(&[("sed", "sed"), ("awk", "gawk")]) else {
        return;
    };
    let marker = sb.path().join("PWNED");
    let m = marker.display().to_string();
    // Plain reads run without confirmation, with the sandbox atip added, and say so.
    for (tool, args) in [
        (
            "sed",
            json!({"script": "1p", "quiet": true, "file": ["in.txt"]}),
        ),
        (
            "awk",
            json!({"program": "{ print $1 }", "file": ["in.txt"]}),
        ),
    ] {
        let r = dry(&sb, &w, tool, args.clone());
        assert_eq!(action(&r), "allow", "{tool} {args}: {r}");
        assert!(
            r["argv"].as_array().unwrap().contains(&json!("--sandbox")),
            "{r}"
        );
        let conds = r["decision"]["conditions"].to_string();
        assert!(conds.contains("sandbox: atip added --sandbox"), "{r}");
        assert_eq!(r["effects"], "read-only", "{r}");
        let out = exec(&sb, &w, tool, &args, false);
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["data"]["stdout"],
            if tool == "sed" {
                "alpha beta\n"
            } else {
                "alpha\ngamma\n"
            },
            "{v}"
        );
    }
    // Escape attempts: each would create the marker outside the sandbox.
    let attempts = [
        (
            "sed",
            json!({"script": format!("1e touch {m}"), "file": ["in.txt"]}),
        ),
        (
            "sed",
            json!({"script": format!("s/.*/touch {m}/e"), "file": ["in.txt"]}),
        ),
        (
            "sed",
            json!({"script": format!("w {m}"), "file": ["in.txt"]}),
        ),
        (
            "sed",
            json!({"script": format!("1r {m}"), "file": ["in.txt"]}),
        ),
        (
            "awk",
            json!({"program": format!("BEGIN {{ system(\"touch {m}\") }}")}),
        ),
        (
            "awk",
            json!({"program": format!("BEGIN {{ print \"x\" > \"{m}\" }}")}),
        ),
        (
            "awk",
            json!({"program": format!("BEGIN {{ print \"x\" | \"tee {m}\" }}")}),
        ),
        (
            "awk",
            json!({"program": format!("BEGIN {{ \"touch {m}\" | getline x }}")}),
        ),
        (
            "awk",
            json!({"program": "BEGIN { while ((getline l < \"/etc/passwd\") > 0) print l }"}),
        ),
        (
            "awk",
            json!({"program": "@load \"filefuncs\"; BEGIN { print 1 }"}),
        ),
    ];
    for (tool, args) in attempts {
        let out = exec(&sb, &w, tool, &args, false);
        assert!(
            !marker.exists(),
            "{tool} {args} ran its payload: {}",
            show(&out)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_ne!(v["data"]["exitCode"], 0, "{tool} {args}: {}", show(&out));
        assert!(!v["data"]["stdout"].to_string().contains("root:"), "{v}");
    }
    // In place asks, even sandboxed, and names the condition.
    let r = dry(
        &sb,
        &w,
        "sed",
        json!({"script": "s/a/b/", "in_place": true, "file": ["in.txt"]}),
    );
    assert_eq!(action(&r), "confirm", "{r}");
    assert!(
        r["decision"]["conditions"]
            .to_string()
            .contains("--in-place: destructive"),
        "{r}"
    );
    let out = exec(
        &sb,
        &w,
        "sed",
        &json!({"script": "s/a/b/", "in_place": true, "file": ["in.txt"]}),
        false,
    );
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        std::fs::read_to_string(w.join("in.txt")).unwrap(),
        "alpha beta\ngamma delta\n"
    );
}

#[test]
fn awk_without_a_sandbox_stays_refused() {
    if !Path::new("/usr/bin/mawk").is_file() {
        common::skip_optional("mawk is not installed");
        return;
    }
    let Some((sb, w)) = sandbox_with(&[("awk", "mawk")]) else {
        return;
    };
    let marker = sb.path().join("PWNED");
    let args = json!({"program": format!("BEGIN {{ system(\"touch {}\") }}", marker.display())});
    let r = dry(&sb, &w, "awk", args.clone());
    assert_eq!(action(&r), "deny", "{r}");
    assert!(
        !r["argv"].as_array().unwrap().contains(&json!("--sandbox")),
        "{r}"
    );
    let out = exec(&sb, &w, "awk", &args, false);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert!(!marker.exists());
}

#[test]
fn options_change_the_calls_effects() {
    let Some((sb, w)) = sandbox_with(&[("sort", "sort"), ("git", "git")]) else {
        return;
    };
    // sort prints: runs. sort -o onto a new file: writes it, runs. Onto an existing
    // file: overwrites it, asks; nothing is written without an answer.
    let r = dry(&sb, &w, "sort", json!({"file": ["in.txt"]}));
    assert_eq!(action(&r), "allow", "{r}");
    let r = dry(
        &sb,
        &w,
        "sort",
        json!({"file": ["in.txt"], "output": "new.txt"}),
    );
    assert_eq!(action(&r), "allow", "{r}");
    assert!(
        r["decision"]["conditions"]
            .to_string()
            .contains("a new file"),
        "{r}"
    );
    std::fs::write(w.join("keep.txt"), "precious\n").unwrap();
    let args = json!({"file": ["in.txt"], "output": "keep.txt"});
    let r = dry(&sb, &w, "sort", args.clone());
    assert_eq!(action(&r), "confirm", "{r}");
    assert!(
        r["decision"]["conditions"]
            .to_string()
            .contains("which exists"),
        "{r}"
    );
    let out = exec(&sb, &w, "sort", &args, false);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(
        std::fs::read_to_string(w.join("keep.txt")).unwrap(),
        "precious\n"
    );
    // The written file is held to the roots like any path.
    let out = exec(
        &sb,
        &w,
        "sort",
        &json!({"file": ["in.txt"], "output": "/tmp/../etc/x"}),
        true,
    );
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    // git push runs; --force and --delete ask, naming the condition.
    let base = dry(&sb, &w, "git_push", json!({"repository": "origin"}));
    assert_eq!(action(&base), "allow", "{base}");
    for opt in ["force", "delete", "force_with_lease"] {
        let r = dry(
            &sb,
            &w,
            "git_push",
            json!({"repository": "origin", opt: true}),
        );
        assert_eq!(action(&r), "confirm", "{opt}: {r}");
        assert!(
            r["decision"]["conditions"]
                .to_string()
                .contains("destructive"),
            "{r}"
        );
    }
    // The shim's other history and ref destroyers ask the same way, while the plain
    // command runs: branch -D, switch --discard-changes, commit --amend, tag --delete.
    for (tool, plain, risky) in [
        (
            "git_branch",
            json!({}),
            json!({"force_delete": true, "name": "topic"}),
        ),
        (
            "git_switch",
            json!({"branch": "main"}),
            json!({"branch": "main", "discard_changes": true}),
        ),
        (
            "git_commit",
            json!({"message": "m"}),
            json!({"message": "m", "amend": true}),
        ),
    ] {
        let r = dry(&sb, &w, tool, plain.clone());
        assert_eq!(action(&r), "allow", "{tool} {plain}: {r}");
        let r = dry(&sb, &w, tool, risky.clone());
        assert_eq!(action(&r), "confirm", "{tool} {risky}: {r}");
    }
}
