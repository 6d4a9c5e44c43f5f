//! The workspace's layers (spec/architecture.md): every crate depends only on the crates
//! the spec lists before it, and the spec lists every crate there is.

use std::collections::BTreeSet;
use std::path::Path;

/// The crates in the order of spec/architecture.md's table (`| 1 | `atip-base` | …`).
fn spec_order(root: &Path) -> Vec<String> {
    let spec = std::fs::read_to_string(root.join("spec/architecture.md")).unwrap();
    spec.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 3 && cells[1].parse::<u32>().is_ok())
                .then(|| cells[2].trim_matches('`').to_owned())
        })
        .collect()
}

/// The `atip-*` crates a manifest's `[dependencies]` (and build-dependencies) name.
fn atip_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = "";
    let mut deps = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if matches!(section, "[dependencies]" | "[build-dependencies]")
            && line.starts_with("atip-")
        {
            deps.insert(line.split(['=', ' ']).next().unwrap().to_owned());
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let order = spec_order(root);
    assert_eq!(order.last().map(String::as_str), Some("atip"), "{order:?}");
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.insert("atip".into());
    let listed: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(
        listed, on_disk,
        "spec/architecture.md must list every crate"
    );
    for (i, name) in order.iter().enumerate() {
        let manifest = if name == "atip" {
            root.join("Cargo.toml")
        } else {
            root.join("crates").join(name).join("Cargo.toml")
        };
        let deps = atip_dependencies(&std::fs::read_to_string(&manifest).unwrap());
        for dep in &deps {
            let at = order.iter().position(|o| o == dep).unwrap_or_else(|| {
                panic!("{name} depends on {dep}, which spec/architecture.md does not list")
            });
            assert!(
                at < i,
                "{name} (layer {}) depends on {dep} (layer {})",
                i + 1,
                at + 1
            );
        }
    }
}

#[test]
fn a_dependency_that_points_up_is_caught() {
    let deps = atip_dependencies(
        "[package]\nname = \"x\"\n\n[dependencies]\natip-exec = { path = \"../atip-exec\" }\nserde = \"1\"\n\n[dev-dependencies]\natip-mcp = { path = \"../atip-mcp\" }\n",
    );
    assert_eq!(
        deps.into_iter().collect::<Vec<_>>(),
        vec!["atip-exec".to_owned()]
    );
}

/// `src` without the items marked `#[cfg(test)]` (a test module, a test-only function):
/// what a library ships. Braces are counted outside string and character literals and
/// comments, which is enough for the code in this repository.
pub(crate) fn shipped_code(src: &str) -> String {
    let mut out = String::new();
    let mut lines = src.lines();
    while let Some(line) = lines.next() {
        if line.trim_start().starts_with("#[cfg(test)]") {
            // Skip the item that follows: up to a `;` or its balanced braces.
            let mut depth = 0i32;
            let mut opened = false;
            for item in lines.by_ref() {
                depth += brace_balance(item);
                opened |= item.contains('{');
                let t = item.trim_end();
                if (opened && depth <= 0) || (!opened && t.ends_with(';')) {
                    break;
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// `{` minus `}` on a line, outside strings, character literals and `//` comments.
fn brace_balance(line: &str) -> i32 {
    let (mut n, mut in_str, mut prev) = (0, false, ' ');
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if prev != '\\' => in_str = !in_str,
            '/' if !in_str && chars.peek() == Some(&'/') => break,
            '\'' if !in_str => {
                // A character literal ('{', '\'') or a lifetime ('a): skip the former.
                let rest: String = chars.clone().take(3).collect();
                if rest.starts_with("\\") {
                    chars.nth(2);
                } else if rest.chars().nth(1) == Some('\'') {
                    chars.nth(1);
                }
            }
            '{' if !in_str => n += 1,
            '}' if !in_str => n -= 1,
            _ => {}
        }
        prev = if prev == '\\' && c == '\\' { ' ' } else { c };
    }
    n
}

/// Every `.rs` file under `dir`, recursively.
pub(crate) fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `(file, line)` of each shipped line under `dirs` containing one of `needles`, except
/// in the files `allowed` (paths relative to the repository root).
fn shipped_uses(root: &Path, dirs: &[&str], needles: &[&str], allowed: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    for d in dirs {
        let dir = root.join(d);
        if dir.is_dir() {
            rust_files(&dir, &mut files);
        }
    }
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        if allowed.contains(&rel.as_str()) {
            continue;
        }
        let code = shipped_code(&std::fs::read_to_string(&f).unwrap());
        for line in code.lines() {
            let code_part = line.split("//").next().unwrap_or("");
            if needles.iter().any(|n| code_part.contains(n)) {
                found.push(format!("{rel}: {}", line.trim()));
            }
        }
    }
    found
}

/// The library crates' source directories (`crates/*/src`).
pub(crate) fn library_sources(root: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| format!("crates/{}/src", e.unwrap().file_name().to_string_lossy()))
        .collect();
    v.sort();
    v
}

/// Library code reads no environment variable: the binary takes one snapshot
/// (`atip::env::Env::capture` in `main`) and hands it down, and its subcommands read
/// the snapshot too. The one boundary is the snapshot itself
/// (`crates/atip-base/src/env.rs`) and the one call of it (`src/main.rs`); test code may
/// read what it likes.
#[test]
fn library_crates_read_no_environment_variable() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = library_sources(root);
    dirs.push("src".into());
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let found = shipped_uses(
        root,
        &dirs,
        &[
            "env::var(",
            "env::var_os(",
            "env::vars(",
            "env::vars_os(",
            "env::set_var(",
            "env::remove_var(",
            "Env::capture(",
        ],
        // The snapshot (the only read of the process environment) and `main`, which
        // takes it once.
        &["crates/atip-base/src/env.rs", "src/main.rs"],
    );
    assert!(
        found.is_empty(),
        "library code reads the environment; take it from the run's Env instead:\n{}",
        found.join("\n")
    );
}

/// One factory each for the async runtime and the HTTP client (`atip-net`): a second
/// builder anywhere else in shipped code fails.
#[test]
fn runtimes_and_http_clients_come_from_the_one_factory() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = library_sources(root);
    dirs.push("src".into());
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let found = shipped_uses(
        root,
        &dirs,
        &[
            "runtime::Builder",
            "Runtime::new(",
            "tokio::main",
            "Client::builder(",
            "ClientBuilder::new(",
            "Client::new()",
        ],
        &["crates/atip-net/src/lib.rs"],
    );
    assert!(
        found.is_empty(),
        "build runtimes and HTTP clients with atip_net::{{runtime, blocking_client, async_client}}:\n{}",
        found.join("\n")
    );
}

/// The checks above see through test code and comments, but not past a shipped read.
#[test]
fn the_source_checks_skip_test_code_only() {
    let src = "fn a() { let _ = \"{\"; }\n#[cfg(test)]\nmod tests {\n    fn b() { std::env::var(\"X\"); }\n    const C: char = '}';\n}\n#[cfg(test)]\nfn only_tests() -> u32 { 1 }\nfn shipped() { std::env::var_os(\"Y\"); } // env::var(\n";
    let code = shipped_code(src);
    assert!(!code.contains("env::var(\"X\")"), "{code}");
    assert!(!code.contains("only_tests"), "{code}");
    assert!(code.contains("env::var_os(\"Y\")"), "{code}");
    assert!(code.contains("fn a()"), "{code}");
}

/// One confirmation prompt (`src/cli/ask.rs`) and one cache-dir resolver
/// (`Dirs::resolve`): a second one anywhere in shipped code fails.
#[test]
fn one_prompt_and_one_cache_dir_resolver() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = library_sources(root);
    dirs.push("src".into());
    let dirs: Vec<&str> = dirs.iter().map(String::as_str).collect();
    let prompts = shipped_uses(root, &dirs, &["\"/dev/tty\""], &["src/cli/ask.rs"]);
    assert!(
        prompts.is_empty(),
        "ask with cli::ask::confirm:\n{}",
        prompts.join("\n")
    );
    let caches = shipped_uses(
        root,
        &dirs,
        &["\"XDG_CACHE_HOME\"", "\"ATIP_CACHE_DIR\""],
        &["crates/atip-base/src/dirs.rs"],
    );
    assert!(
        caches.is_empty(),
        "take the cache dir from Dirs::cache:\n{}",
        caches.join("\n")
    );
}
