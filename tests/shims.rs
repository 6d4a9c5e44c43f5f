//! The shims we ship (`shims/*.json`): well-formed ATIP 0.6 name-keyed shims, and
//! accurate — every flag they declare is checked against the installed tool's own
//! help text (and, for `git log`/`git show`, its manual page), and the tar mode letters
//! and a few read-only git commands are run for real.
//!
//! Flag checks need the real tools; a tool that is missing (or, for coreutils, grep and
//! tar, is not the GNU implementation the shim describes) is skipped with a note on stderr.

use crate::common;

use atip::model::{Metadata, Opt, ParamType};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

fn shims_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("shims")
}

fn load_all() -> Vec<(String, Metadata, serde_json::Value)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(shims_dir()).expect("shims/ exists") {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let stem = path.file_stem().unwrap().to_str().unwrap().to_string();
        let bytes = std::fs::read(&path).unwrap();
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let meta = Metadata::from_value(value.clone())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push((stem, meta, value));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Every tool issue 11 asks a curated shim for (plus timeout and nice, two more runners).
const PROMISED: &[&str] = &[
    // coreutils and friends
    "cat",
    "ls",
    "cp",
    "mv",
    "rm",
    "rmdir",
    "mkdir",
    "touch",
    "ln",
    "chmod",
    "chown",
    "stat",
    "file",
    "du",
    "df",
    "find",
    "xargs",
    "sort",
    "uniq",
    "cut",
    "tr",
    "tee",
    "dd",
    "shred",
    "truncate",
    "head",
    "tail",
    "wc",
    "diff",
    "patch",
    "sed",
    "awk",
    "grep",
    "jq",
    "yq",
    "tar",
    "gzip",
    "zip",
    "unzip",
    "xz",
    "zstd",
    "base64",
    "sha256sum",
    "env",
    "date",
    "sleep",
    "ps",
    "kill",
    "timeout",
    "nice",
    // network tools
    "curl",
    "wget",
    "ssh",
    "scp",
    "rsync",
    "openssl",
    // developer tools
    "git",
    "gh",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "uv",
    "python",
    "python3",
    "node",
    "cargo",
    "rustc",
    "go",
    "make",
    "cmake",
    "apt-get",
    "apt",
    "dpkg",
    "systemctl",
    "journalctl",
];

#[test]
fn the_promised_shims_exist() {
    let names: BTreeSet<String> = load_all().into_iter().map(|(n, _, _)| n).collect();
    for want in PROMISED {
        assert!(names.contains(*want), "shims/{want}.json missing");
    }
}

/// Whether a command carries the runner mark (`"x-atip-runner": true`): it runs a program
/// its arguments name, so its effects are that program's.
fn is_runner(command: &atip::model::Command) -> bool {
    command.extra.get("x-atip-runner") == Some(&serde_json::Value::Bool(true))
}

#[test]
fn shims_are_well_formed_name_keyed_shims() {
    for (stem, meta, value) in load_all() {
        assert_eq!(meta.to_value(), value, "{stem}: lossless through the model");
        assert_eq!(value["atip"]["version"], "0.6", "{stem}");
        assert!(
            meta.atip.features().iter().any(|f| f == "trust-v1"),
            "{stem}"
        );
        assert_eq!(meta.name.as_deref(), Some(stem.as_str()), "{stem}: name");
        let binary = meta.binary.as_ref().expect("binary");
        assert_eq!(binary.name.as_deref(), Some(stem.as_str()), "{stem}");
        assert_eq!(binary.version, meta.version, "{stem}");
        assert!(
            binary.hash.is_none(),
            "{stem}: name-keyed shims carry no hash"
        );
        let trust = meta.trust.as_ref().expect("trust");
        assert_eq!(trust.source.as_deref(), Some("community"), "{stem}");
        assert_eq!(trust.verified, Some(false), "{stem}");
        assert!(!meta.description.is_empty() && meta.description.chars().count() <= 200);

        for entry in meta.walk() {
            let where_ = format!("{stem} {}", entry.path_string());
            assert!(!entry.command.description.trim().is_empty(), "{where_}");
            if !entry.command.is_runnable() {
                continue;
            }
            let effects = meta.effective_effects(&entry);
            if let Some(mark) = entry.command.extra.get("x-atip-runner") {
                assert_eq!(
                    mark,
                    &serde_json::Value::Bool(true),
                    "{where_}: runner mark"
                );
            }
            let unstated = effects.destructive.is_none()
                || effects.network.is_none()
                || effects.filesystem.is_none();
            // Only a command that runs code it cannot know (a named program, a script, a
            // build) may leave effects unstated: what that code does stays unknown, never
            // claimed safe. A runner claims nothing about destructiveness.
            if unstated {
                assert_eq!(effects.subprocess, Some(true), "{where_}: effects unsaid");
            }
            if is_runner(entry.command) {
                assert_eq!(effects.subprocess, Some(true), "{where_}: runner");
                assert_eq!(effects.destructive, None, "{where_}: runner claims safety");
            }
            let mut seen = BTreeSet::new();
            for opt in meta.options_in_scope(&entry) {
                for flag in &opt.flags {
                    assert!(seen.insert(flag.clone()), "{where_}: {flag} twice");
                }
                check_param(&where_, &opt.name, &opt.kind, opt.values.as_deref());
            }
            let mut names = BTreeSet::new();
            let mut optional_seen = false;
            let args = entry.command.args();
            for (i, arg) in args.iter().enumerate() {
                assert!(
                    names.insert(&arg.name),
                    "{where_}: argument {} twice",
                    arg.name
                );
                check_param(&where_, &arg.name, &arg.kind, arg.values.as_deref());
                if arg.is_required() {
                    assert!(
                        !optional_seen,
                        "{where_}: required {} after optional",
                        arg.name
                    );
                } else {
                    optional_seen = true;
                }
                if arg.is_variadic() {
                    assert_eq!(
                        i,
                        args.len() - 1,
                        "{where_}: variadic {} not last",
                        arg.name
                    );
                }
            }
        }
    }
}

fn check_param(where_: &str, name: &str, kind: &ParamType, values: Option<&[serde_json::Value]>) {
    assert!(
        !matches!(kind, ParamType::Unknown(_)),
        "{where_}: {name} has unknown type"
    );
    if *kind == ParamType::Enum {
        assert!(values.is_some_and(|v| !v.is_empty()), "{where_}: {name}");
    }
}

/// Words that say an option or argument can destroy or replace something.
const DANGER_WORDS: &[&str] = &[
    "destructive",
    "dangerous",
    "delet",
    "remov",
    "overwrit",
    "force",
    "in place",
    "in-place",
    "replac",
    "discard",
];

/// Whether a description names a danger: one of [`DANGER_WORDS`] at the start of a word.
fn says_danger(description: &str) -> bool {
    let d = description.to_lowercase();
    DANGER_WORDS.iter().any(|w| {
        d.match_indices(w)
            .any(|(i, _)| !d[..i].chars().next_back().is_some_and(char::is_alphabetic))
    })
}

/// Options and arguments whose description uses a danger word on a command stated
/// non-destructive, reviewed one by one: they add no danger a policy must see (a
/// negation, a listing, a dry run, data the tool only reads, or a step that acts only on
/// a path another parameter's `x-atip-writes` already makes ask). (tool, command path,
/// first flag or argument name, why.)
const REVIEWED_PROSE: &[(&str, &str, &str, &str)] = &[
    ("cargo", "clean", "-n", "dry run"),
    (
        "cargo",
        "uninstall",
        "spec",
        "removes installed binaries; reinstallable",
    ),
    ("cp", "", "-n", "never overwrites"),
    (
        "cp",
        "",
        "-f",
        "acts on an existing destination, which asks",
    ),
    (
        "cp",
        "",
        "--remove-destination",
        "acts on an existing destination, which asks",
    ),
    (
        "cp",
        "",
        "-b",
        "acts on an existing destination, which asks; keeps a backup",
    ),
    ("curl", "", "--no-clobber", "never overwrites"),
    (
        "curl",
        "",
        "--remove-on-error",
        "removes only the partial file curl wrote",
    ),
    (
        "gh",
        "pr edit",
        "--remove-label",
        "a label, put back by --add-label",
    ),
    (
        "gh",
        "issue edit",
        "--remove-label",
        "a label, put back by --add-label",
    ),
    ("git", "log", "-G", "a search"),
    ("git", "log", "--stat", "a report"),
    ("git", "log", "--numstat", "a report"),
    ("git", "diff", "--numstat", "a report"),
    ("git", "diff", "--diff-filter", "a filter"),
    (
        "git",
        "add",
        "-A",
        "stages deletions; the files stay in HEAD",
    ),
    (
        "git",
        "add",
        "-u",
        "stages deletions; the files stay in HEAD",
    ),
    (
        "git",
        "commit",
        "-a",
        "stages deletions; the files stay in history",
    ),
    (
        "git",
        "branch",
        "-r",
        "lists; deleting needs -d/-D, which carry effects",
    ),
    (
        "git",
        "branch",
        "--unset-upstream",
        "a setting, restored by --set-upstream-to",
    ),
    ("git", "stash push", "-k", "keeps changes"),
    (
        "git",
        "remote set-url",
        "oldurl",
        "selects the URL to change",
    ),
    ("git", "rm", "--cached", "untracks only; the file stays"),
    (
        "git",
        "rm",
        "-r",
        "removes tracked files, which stay in HEAD (git rm refuses unsaved changes)",
    ),
    (
        "git",
        "rm",
        "pathspec",
        "tracked files, which stay in HEAD (git rm refuses unsaved changes)",
    ),
    ("go", "build", "-trimpath", "about the built binary"),
    ("go", "install", "-trimpath", "about the built binary"),
    (
        "go",
        "get",
        "packages",
        "a dependency edit of go.mod, reversible",
    ),
    ("go", "clean", "-cache", "a cache, rebuilt on demand"),
    (
        "go",
        "clean",
        "-modcache",
        "a download cache, fetched again on demand",
    ),
    ("go", "clean", "-n", "dry run"),
    ("go", "mod tidy", "-v", "a report"),
    ("gzip", "", "-k", "keeps the inputs"),
    (
        "helm",
        "install",
        "--atomic",
        "removes only the release this call failed to install",
    ),
    ("kubectl", "wait", "--for", "waits; changes nothing"),
    ("npm", "uninstall", "-g", "global packages, reinstallable"),
    ("rmdir", "", "-p", "empty directories only"),
    ("rmdir", "", "-v", "a report"),
    ("rmdir", "", "directory", "empty directories only"),
    ("terraform", "plan", "-replace", "a plan; changes nothing"),
    ("tr", "", "-d", "characters of the text it prints"),
    ("tr", "", "-s", "characters of the text it prints"),
    ("tr", "", "set1", "characters of the text it prints"),
    ("tr", "", "set2", "characters of the text it prints"),
    (
        "uv",
        "python uninstall",
        "target",
        "managed Python versions, reinstallable",
    ),
    ("wget", "", "-nc", "never overwrites"),
    (
        "wget",
        "",
        "--no-check-certificate",
        "transport security, not an effect on data (DANGEROUS in prose on purpose)",
    ),
    ("xz", "", "-k", "keeps the inputs"),
    ("yq", "", "-M", "output colours"),
];

/// No danger lives only in prose (spec/shims.md §4b). An option or argument whose
/// description says DESTRUCTIVE carries an effect a policy reads (`x-atip-effects`
/// stating `destructive: true`, or `x-atip-writes`); and on a command stated
/// non-destructive, one whose description says it deletes, removes, overwrites, forces,
/// replaces, discards or works in place carries `x-atip-effects` or `x-atip-writes`,
/// unless it is in the reviewed list above. Stale reviewed entries fail too.
#[test]
fn destructive_options_carry_their_effects() {
    let mut missing = Vec::new();
    let mut used = BTreeSet::new();
    let mut annotated = 0;
    let mut shouting = 0;
    for (tool, meta, _) in load_all() {
        for entry in meta.walk() {
            if !entry.command.is_runnable() {
                continue;
            }
            let path = entry
                .path
                .iter()
                .copied()
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            let stated_safe = meta.effective_effects(&entry).destructive == Some(false);
            let mut params: Vec<(String, &str, &atip::model::Extra)> = meta
                .options_in_scope(&entry)
                .into_iter()
                .map(|o| (o.flags[0].clone(), o.description.as_str(), &o.extra))
                .collect();
            params.extend(
                entry
                    .command
                    .args()
                    .iter()
                    .map(|a| (a.name.clone(), a.description.as_str(), &a.extra)),
            );
            for (key, desc, extra) in params {
                let effects = extra.get("x-atip-effects");
                let writes = extra.get("x-atip-writes").is_some();
                if effects.is_some() || writes {
                    annotated += 1;
                }
                let place = format!("{tool} {path} {key}");
                if desc.contains("DESTRUCTIVE") {
                    shouting += 1;
                    let says = effects.is_some_and(|e| e["destructive"] == true) || writes;
                    if !says {
                        missing.push(format!("{place}: DESTRUCTIVE only in prose"));
                    }
                    continue;
                }
                if !stated_safe || !says_danger(desc) || effects.is_some() || writes {
                    continue;
                }
                let reviewed = REVIEWED_PROSE
                    .iter()
                    .position(|(t, p, k, _)| *t == tool && *p == path && *k == key);
                match reviewed {
                    Some(i) => {
                        used.insert(i);
                    }
                    None => missing.push(format!("{place}: {desc:?}")),
                }
            }
        }
    }
    assert!(shouting >= 20, "only {shouting} DESTRUCTIVE options found");
    assert!(annotated >= 70, "only {annotated} parameters carry effects");
    assert!(
        missing.is_empty(),
        "danger only in the description (annotate it, or review it into REVIEWED_PROSE): {missing:#?}"
    );
    let stale: Vec<_> = REVIEWED_PROSE
        .iter()
        .enumerate()
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, e)| e)
        .collect();
    assert!(
        stale.is_empty(),
        "reviewed entries that match nothing: {stale:?}"
    );
}

/// The danger-word check itself: words at a word start, any case; `enforce` is no `force`.
#[test]
fn danger_words_are_found_in_prose() {
    assert!(says_danger("Overwrite existing files."));
    assert!(says_danger("write the result back in place"));
    assert!(says_danger("Allow deleting '/'"));
    assert!(says_danger("FORCE the removal"));
    assert!(!says_danger("Enforce the policy."));
    assert!(!says_danger("Print matching lines."));
}

#[test]
fn dangerous_commands_say_so() {
    let all = load_all();
    let get = |tool: &str, path: &[&str]| {
        let (_, meta, _) = all.iter().find(|(n, _, _)| n == tool).unwrap();
        let entry = meta.find(path).unwrap();
        meta.effective_effects(&entry)
    };
    assert_eq!(get("rm", &[""]).destructive, Some(true));
    assert_eq!(get("rm", &[""]).reversible, Some(false));
    assert!(get("rm", &[""]).deletes_files());
    for path in [
        &["reset"][..],
        &["clean"],
        &["restore"],
        &["stash", "clear"],
    ] {
        assert_eq!(get("git", path).destructive, Some(true), "git {path:?}");
    }
    assert_eq!(get("git", &["push"]).network, Some(true));
    assert_eq!(get("git", &["push"]).reversible, Some(false));
    assert!(get("git", &["status"]).is_read_only());
    assert!(get("git", &["log"]).is_read_only());
    assert!(get("ls", &[""]).is_read_only());
    assert!(get("grep", &[""]).is_read_only());
    assert!(get("tar", &["t"]).is_read_only());
    assert_eq!(get("tar", &["x"]).destructive, Some(true));
    assert_eq!(get("curl", &[""]).network, Some(true));
    assert_eq!(get("mv", &[""]).destructive, Some(true));
    assert!(get("jq", &[""]).is_read_only());
    assert!(!get("sed", &[""]).is_read_only());
    for tool in [
        "diff",
        "head",
        "tail",
        "wc",
        "cat",
        "stat",
        "file",
        "du",
        "df",
        "cut",
        "tr",
        "base64",
        "sha256sum",
        "date",
        "ps",
    ] {
        assert!(get(tool, &[""]).is_read_only(), "{tool}");
    }
    for tool in ["shred", "dd", "truncate", "kill", "tee", "unzip"] {
        assert_eq!(get(tool, &[""]).destructive, Some(true), "{tool}");
        assert!(!get(tool, &[""]).is_read_only(), "{tool}");
    }
    for tool in ["scp", "rsync"] {
        assert_eq!(get(tool, &[""]).destructive, Some(true), "{tool}");
        assert_eq!(get(tool, &[""]).network, Some(true), "{tool}");
    }
    assert_eq!(get("wget", &[""]).network, Some(true));
    assert!(get("openssl", &["version"]).is_read_only());
    assert!(get("openssl", &["verify"]).is_read_only());
    assert_eq!(get("openssl", &["s_client"]).network, Some(true));
    assert!(!get("openssl", &["req"]).is_read_only());
    // The brief's own examples, and the like.
    assert!(get("git", &["status"]).is_read_only());
    assert_eq!(get("git", &["clean"]).destructive, Some(true));
    assert_eq!(get("git", &["fetch"]).network, Some(true));
    assert_eq!(get("git", &["gc"]).destructive, Some(true));
    assert_eq!(get("git", &["reflog", "expire"]).destructive, Some(true));
    for path in [
        &["grep"][..],
        &["describe"],
        &["blame"],
        &["shortlog"],
        &["worktree", "list"],
    ] {
        assert!(get("git", path).is_read_only(), "git {path:?}");
    }
    for tool in ["apt-get", "apt"] {
        for cmd in ["remove", "purge", "autoremove"] {
            assert_eq!(get(tool, &[cmd]).destructive, Some(true), "{tool} {cmd}");
        }
    }
    assert_eq!(get("apt-get", &["dist-upgrade"]).destructive, Some(true));
    assert_eq!(get("dpkg", &["--remove"]).destructive, Some(true));
    assert!(get("dpkg", &["--list"]).is_read_only());
    assert!(get("apt", &["list"]).is_read_only());
    for cmd in ["rm", "rmi", "kill"] {
        assert_eq!(
            get("docker", &[cmd]).destructive,
            Some(true),
            "docker {cmd}"
        );
    }
    assert_eq!(get("docker", &["volume", "rm"]).destructive, Some(true));
    assert_eq!(get("docker", &["system", "prune"]).destructive, Some(true));
    assert_eq!(get("kubectl", &["delete"]).destructive, Some(true));
    assert_eq!(get("kubectl", &["delete"]).network, Some(true));
    assert_eq!(get("kubectl", &["get"]).network, Some(true));
    assert_eq!(get("kubectl", &["get"]).destructive, Some(false));
    assert_eq!(get("helm", &["uninstall"]).destructive, Some(true));
    assert_eq!(get("terraform", &["apply"]).destructive, Some(true));
    assert_eq!(get("terraform", &["destroy"]).destructive, Some(true));
    assert_eq!(get("gh", &["repo", "delete"]).destructive, Some(true));
    assert_eq!(get("gh", &["api"]).destructive, Some(true));
    assert_eq!(get("gh", &["pr", "list"]).network, Some(true));
    assert_eq!(get("pip", &["uninstall"]).destructive, Some(true));
    assert_eq!(get("systemctl", &["reboot"]).destructive, Some(true));
    for cmd in ["status", "list-units", "show", "cat"] {
        assert!(get("systemctl", &[cmd]).is_read_only(), "systemctl {cmd}");
    }
    assert!(get("journalctl", &[""]).is_read_only());
    // Builds, tests and installs run code the shim cannot know: never claimed safe.
    for (tool, path) in [
        ("cargo", &["build"][..]),
        ("cargo", &["test"]),
        ("npm", &["install"]),
        ("npm", &["run"]),
        ("go", &["test"]),
        ("pip", &["install"]),
        ("apt-get", &["install"]),
    ] {
        let effects = get(tool, path);
        assert_eq!(effects.subprocess, Some(true), "{tool} {path:?}");
        assert_eq!(effects.destructive, None, "{tool} {path:?}");
    }
    for tool in ["touch", "chmod", "gzip", "xz", "zstd", "patch"] {
        assert!(!get(tool, &[""]).is_read_only(), "{tool} can write files");
    }
    assert_eq!(
        get("chmod", &[""]).destructive,
        Some(true),
        "chmod: odd modes ask"
    );
    // Issue 32: these print (or, for find, search) as a command; what writes, deletes or
    // runs is a parameter carrying its effect, judged per call.
    let writes = Some(&serde_json::json!("path"));
    let extra_of = |tool: &str, key: &str| {
        let (_, meta, _) = all.iter().find(|(n, _, _)| n == tool).unwrap();
        let entry = meta.find(&[""]).unwrap();
        let opt = meta
            .options_in_scope(&entry)
            .into_iter()
            .find(|o| o.flags.iter().any(|f| f == key))
            .map(|o| o.extra.clone());
        opt.or_else(|| {
            let a = entry.command.args().iter().find(|a| a.name == key)?;
            Some(a.extra.clone())
        })
        .unwrap_or_else(|| panic!("{tool} has no {key}"))
    };
    for (tool, key) in [
        ("sort", "-o"),
        ("uniq", "output"),
        ("cp", "destination"),
        ("curl", "-o"),
        ("wget", "-O"),
        ("find", "-fprint"),
    ] {
        assert_eq!(
            extra_of(tool, key).get("x-atip-writes"),
            writes,
            "{tool} {key}"
        );
    }
    for tool in ["sort", "uniq", "yq", "find"] {
        assert!(get(tool, &[""]).is_read_only(), "{tool}");
    }
    assert_eq!(
        get("cp", &[""]).destructive,
        Some(false),
        "cp onto a new path"
    );
    for (tool, key) in [("yq", "-i"), ("find", "-delete"), ("curl", "-O")] {
        assert_eq!(
            extra_of(tool, key)["x-atip-effects"]["destructive"],
            true,
            "{tool} {key}"
        );
    }
    for key in ["-exec", "-execdir"] {
        let extra = extra_of("find", key);
        assert_eq!(extra["x-atip-runner"], true, "find {key}");
        assert_eq!(extra["x-atip-terminator"], ";", "find {key}");
    }
    assert_eq!(extra_of("find", "path")["x-atip-leading"], true);
    for (tool, path) in [
        ("systemctl", &["stop"][..]),
        ("systemctl", &["restart"]),
        ("systemctl", &["mask"]),
        ("systemctl", &["disable"]),
        ("helm", &["upgrade"]),
        ("helm", &["rollback"]),
        ("docker", &["stop"]),
        ("docker", &["push"]),
        ("kubectl", &["scale"]),
        ("git", &["remote", "remove"]),
        ("gh", &["run", "cancel"]),
    ] {
        assert_eq!(get(tool, path).destructive, Some(true), "{tool} {path:?}");
    }
    for (tool, path) in [
        ("systemctl", &["start"][..]),
        ("systemctl", &["enable"]),
        ("docker", &["start"]),
    ] {
        assert_eq!(get(tool, path).destructive, Some(false), "{tool} {path:?}");
    }
}

/// Tools that run a program (or program text) their arguments name carry the runner
/// mark and state no safety of their own.
#[test]
fn runners_are_marked() {
    let all = load_all();
    for (tool, path) in [
        ("xargs", &[""][..]),
        ("env", &[""]),
        ("timeout", &[""]),
        ("nice", &[""]),
        ("awk", &[""]),
        ("ssh", &[""]),
        ("python", &[""]),
        ("python3", &[""]),
        ("node", &[""]),
        ("npx", &[""]),
        ("make", &[""]),
        ("cmake", &[""]),
        ("npm", &["exec"]),
        ("pnpm", &["exec"]),
        ("pnpm", &["dlx"]),
        ("uv", &["run"]),
        ("uv", &["tool", "run"]),
        ("docker", &["run"]),
        ("docker", &["exec"]),
        ("kubectl", &["exec"]),
        ("go", &["run"]),
        ("git", &["bisect", "run"]),
        ("git", &["submodule", "foreach"]),
    ] {
        let (_, meta, _) = all.iter().find(|(n, _, _)| n == tool).unwrap();
        let entry = meta.find(path).unwrap();
        assert!(is_runner(entry.command), "{tool} {path:?} not marked");
        let effects = meta.effective_effects(&entry);
        assert_eq!(effects.subprocess, Some(true), "{tool} {path:?}");
        assert!(!effects.is_read_only(), "{tool} {path:?}");
        assert_eq!(effects.destructive, None, "{tool} {path:?}");
    }
}

#[test]
fn jq_accepts_every_declared_option() {
    use std::io::Write;
    if help_of("jq", &["--version"]).is_none() {
        common::skip("jq not installed; its declared options not checked");
        return;
    }
    let meta = shim("jq");
    let root = meta.find(&[""]).unwrap();
    for opt in meta.options_in_scope(&root) {
        for flag in &opt.flags {
            let mut args = vec![flag.clone()];
            if opt.kind != ParamType::Boolean {
                args.push("2".into());
            }
            args.push(".".into());
            let mut child = Command::new("jq")
                .args(&args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"{\"a\": 1}\n")
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "jq {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Output of a command (stdout + stderr, whatever the exit code), or None if it cannot run.
fn help_of(program: &str, args: &[&str]) -> Option<String> {
    let cwd = tempfile::tempdir().ok()?;
    let out = Command::new(program)
        .args(args)
        .current_dir(cwd.path())
        .env("LC_ALL", "C")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "200")
        .output()
        .ok()?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    (!text.trim().is_empty()).then_some(text)
}

/// Whether `flag` appears in `help` as a whole option token (`--force`, `--[no-]force`,
/// `--force=...`, `-f,`). `--no-X` also matches a `--[no-]X` entry.
fn mentions(help: &str, flag: &str) -> bool {
    let normalised = help.replace("--[no-]", "--").replace('\u{2010}', "-");
    let also_no = help.replace("--[no-]", "--no-");
    [normalised.as_str(), also_no.as_str()].iter().any(|text| {
        text.match_indices(flag).any(|(i, _)| {
            let before = text[..i].chars().next_back();
            let after = text[i + flag.len()..].chars().next();
            let starts = before.is_none_or(|c| !(c.is_alphanumeric() || c == '-'));
            let ends = after.is_none_or(|c| !(c.is_alphanumeric() || c == '-' || c == '_'));
            starts && ends
        })
    })
}

fn is_gnu(program: &str) -> bool {
    help_of(program, &["--version"]).is_some_and(|v| v.contains("GNU"))
}

fn missing_flags(help: &str, opts: &[&Opt]) -> Vec<String> {
    opts.iter()
        .flat_map(|o| o.flags.iter())
        .filter(|f| !mentions(help, f))
        .cloned()
        .collect()
}

fn shim(name: &str) -> Metadata {
    load_all()
        .into_iter()
        .find(|(n, _, _)| n == name)
        .map(|(_, m, _)| m)
        .unwrap()
}

/// How a subcommand's own help text is asked for.
#[derive(Clone, Copy)]
enum PerCommand {
    /// `TOOL PATH… FLAG` (`docker rm --help`, `terraform plan -help`).
    Flag(&'static str),
    /// `TOOL help PATH…` (`go help build`, `pnpm help exec`), for tools where a help flag
    /// after a runner command would be taken as the program to run (`pnpm dlx --help`).
    HelpWord,
    /// Only the tool's help and manual page: the manual page documents every command,
    /// and running a system-changing command with a help flag is not worth the risk
    /// (apt-get, dpkg, systemctl).
    Never,
}

/// How the flags of one shipped shim are checked against the installed tool.
struct HelpSource {
    tool: &'static str,
    /// Extra commands whose output documents the tool (besides `TOOL --help` and the
    /// manual page `TOOL`); `@` stands for the tool's program.
    help: &'static [&'static [&'static str]],
    /// Text that `TOOL --version` must contain for the shim to describe the installed
    /// implementation (GNU vs BSD, mikefarah's yq vs the Python one); None: any.
    implementation: Option<&'static str>,
    per_command: PerCommand,
}

const fn src(
    tool: &'static str,
    help: &'static [&'static [&'static str]],
    implementation: Option<&'static str>,
) -> HelpSource {
    HelpSource {
        tool,
        help,
        implementation,
        per_command: PerCommand::Flag("--help"),
    }
}

const fn cmds(
    tool: &'static str,
    help: &'static [&'static [&'static str]],
    per_command: PerCommand,
) -> HelpSource {
    HelpSource {
        tool,
        help,
        implementation: None,
        per_command,
    }
}

const GNU: Option<&str> = Some("GNU");
const NONE: &[&[&str]] = &[];
const DASH_HELP: PerCommand = PerCommand::Flag("--help");

/// Every shim whose flags are checked by `flags_match_the_installed_tools_help` (git and
/// jq have tests of their own below).
const HELP_SOURCES: &[HelpSource] = &[
    src("cat", NONE, GNU),
    src("ls", NONE, GNU),
    src("cp", NONE, GNU),
    src("mv", NONE, GNU),
    src("rm", NONE, GNU),
    src("rmdir", NONE, GNU),
    src("mkdir", NONE, GNU),
    src("touch", NONE, GNU),
    src("ln", NONE, GNU),
    src("chmod", NONE, GNU),
    src("chown", NONE, GNU),
    src("stat", NONE, GNU),
    src("file", NONE, None),
    src("du", NONE, GNU),
    src("df", NONE, GNU),
    src("find", NONE, GNU),
    src("xargs", NONE, GNU),
    src("sort", NONE, GNU),
    src("uniq", NONE, GNU),
    src("cut", NONE, GNU),
    src("tr", NONE, GNU),
    src("tee", NONE, GNU),
    src("dd", NONE, GNU),
    src("shred", NONE, GNU),
    src("truncate", NONE, GNU),
    src("head", NONE, GNU),
    src("tail", NONE, GNU),
    src("wc", NONE, GNU),
    src("diff", NONE, GNU),
    src("patch", NONE, GNU),
    src("sed", NONE, GNU),
    src("awk", NONE, None),
    src("grep", NONE, GNU),
    src("yq", NONE, Some("mikefarah")),
    src("tar", NONE, GNU),
    src("gzip", NONE, None),
    src("zip", &[&["@", "-h2"]], None),
    src("unzip", NONE, None),
    src("xz", NONE, None),
    src("zstd", NONE, None),
    src("base64", NONE, GNU),
    src("sha256sum", NONE, GNU),
    src("env", NONE, GNU),
    src("date", NONE, GNU),
    src("sleep", NONE, GNU),
    src("ps", &[&["@", "--help", "all"]], Some("procps")),
    src("kill", NONE, Some("procps")),
    src("timeout", NONE, GNU),
    src("nice", NONE, GNU),
    // network tools
    src("curl", &[&["@", "--help", "all"]], None),
    src("wget", NONE, GNU),
    src("ssh", NONE, None),
    src("scp", NONE, None),
    src("rsync", NONE, None),
    src("openssl", &[&["@", "help"]], None),
    // developer tools
    cmds("gh", NONE, DASH_HELP),
    cmds("docker", NONE, DASH_HELP),
    cmds("kubectl", &[&["@", "options"]], DASH_HELP),
    cmds("helm", NONE, DASH_HELP),
    cmds(
        "terraform",
        &[
            &["@", "-help"],
            &["@", "plan", "-help"],
            &["@", "apply", "-help"],
        ],
        PerCommand::Flag("-help"),
    ),
    cmds("npm", NONE, DASH_HELP),
    cmds("npx", &[&["npm", "help", "npx"]], DASH_HELP),
    cmds("yarn", NONE, DASH_HELP),
    cmds("pnpm", NONE, PerCommand::HelpWord),
    cmds("pip", NONE, DASH_HELP),
    cmds("pip3", NONE, DASH_HELP),
    cmds("uv", NONE, DASH_HELP),
    cmds("python", NONE, DASH_HELP),
    cmds("python3", NONE, DASH_HELP),
    cmds("node", NONE, DASH_HELP),
    cmds("cargo", &[&["@", "check", "--help"]], DASH_HELP),
    cmds("rustc", &[&["@", "--help", "-v"]], DASH_HELP),
    cmds(
        "go",
        &[&["@", "help", "build"], &["@", "help", "testflag"]],
        PerCommand::HelpWord,
    ),
    cmds("make", NONE, DASH_HELP),
    cmds("cmake", NONE, DASH_HELP),
    cmds("apt-get", NONE, PerCommand::Never),
    cmds(
        "apt",
        &[&["man", "-P", "cat", "apt-get"]],
        PerCommand::Never,
    ),
    cmds("dpkg", NONE, PerCommand::Never),
    cmds("systemctl", NONE, PerCommand::Never),
    cmds("journalctl", NONE, PerCommand::Never),
];

/// Where the tools `.ci/setup-test-deps` installs from npm and PyPI live.
fn test_deps_bins() -> [PathBuf; 2] {
    let deps = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-deps");
    [deps.join("node/node_modules/.bin"), deps.join("py/bin")]
}

/// The program to run for `tool`: its name when it is on PATH, else the copy
/// `.ci/setup-test-deps` installed (yarn, pnpm, uv); None when neither exists.
fn program(tool: &str) -> Option<String> {
    if help_of(tool, &["--version"]).is_some() {
        return Some(tool.to_string());
    }
    test_deps_bins()
        .iter()
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

/// The manual page of `page`, if one is installed.
fn man_page(page: &str) -> Option<String> {
    let text = help_of("man", &["-P", "cat", page])?;
    (!text.contains("No manual entry")).then_some(text)
}

#[test]
fn flags_match_the_installed_tools_help() {
    let shipped: BTreeSet<String> = load_all().into_iter().map(|(n, _, _)| n).collect();
    let checked: BTreeSet<&str> = HELP_SOURCES.iter().map(|s| s.tool).collect();
    for source in HELP_SOURCES {
        assert!(shipped.contains(source.tool), "no shim for {}", source.tool);
    }
    for tool in &shipped {
        assert!(
            checked.contains(tool.as_str()) || tool == "git" || tool == "jq",
            "shims/{tool}.json: add it to HELP_SOURCES"
        );
    }
    // Four workers: the time goes into waiting for child processes (man, --help).
    let next = std::sync::atomic::AtomicUsize::new(0);
    let checked_tools: usize = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    let mut checked = 0;
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(source) = HELP_SOURCES.get(i) else {
                            return checked;
                        };
                        checked += usize::from(check_flags(source));
                    }
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).sum()
    });
    eprintln!(
        "flags checked for {checked_tools} of {} tools",
        HELP_SOURCES.len()
    );
    // This machine's CI installs them (.ci/setup-test-deps): most must really be checked.
    assert!(
        checked_tools * 10 >= HELP_SOURCES.len() * 7,
        "only {checked_tools} tools checked"
    );
}

/// Checks every flag of one tool's shim against its help and manual page — for a
/// subcommand, also its own help and the pages `TOOL-PATH0` and `TOOL-PATH-…`
/// (`openssl-x509`, `gh-pr-list`). Returns false (and says so) when the tool cannot be
/// checked here.
fn check_flags(source: &HelpSource) -> bool {
    let tool = source.tool;
    let Some(prog) = program(tool) else {
        // Optional: most shimmed tools (docker, kubectl, …) are not set-up dependencies.
        common::skip_optional(&format!(
            "{tool} not installed; its shim's flags not checked (see spec/shims.md §6)"
        ));
        return false;
    };
    if let Some(marker) = source.implementation {
        let version = help_of(&prog, &["--version"]).unwrap_or_default();
        if !version.contains(marker) {
            common::skip_optional(&format!(
                "{tool} is not the {marker} implementation; flags not checked"
            ));
            return false;
        }
    }
    let mut help = help_of(&prog, &["--help"]).unwrap_or_default();
    for argv in source.help {
        let program = if argv[0] == "@" {
            prog.as_str()
        } else {
            argv[0]
        };
        help.push_str(&help_of(program, &argv[1..]).unwrap_or_default());
    }
    if let Some(page) = man_page(tool) {
        help.push_str(&page);
    }
    let meta = shim(tool);
    let mut pages: std::collections::HashMap<String, String> = Default::default();
    let mut missing = Vec::new();
    for entry in meta.walk() {
        let opts = meta.options_in_scope(&entry);
        if opts.is_empty() {
            continue;
        }
        let words: Vec<&str> = entry
            .path
            .iter()
            .copied()
            .filter(|w| !w.is_empty())
            .collect();
        let mut text = help.clone();
        if let Some(first) = words.first() {
            let asked = match source.per_command {
                PerCommand::Flag(flag) => {
                    let mut args = words.clone();
                    args.push(flag);
                    help_of(&prog, &args)
                }
                PerCommand::HelpWord => {
                    let mut args = vec!["help"];
                    args.extend(&words);
                    help_of(&prog, &args)
                }
                PerCommand::Never => None,
            };
            text.push_str(&asked.unwrap_or_default());
            let mut names = vec![format!("{tool}-{first}")];
            if words.len() > 1 {
                names.push(format!("{tool}-{}", words.join("-")));
            }
            for name in names {
                let page = pages
                    .entry(name)
                    .or_insert_with_key(|name| man_page(name).unwrap_or_default());
                text.push_str(page);
            }
        }
        for flag in missing_flags(&text, &opts) {
            missing.push(format!("{} {flag}", entry.path_string()));
        }
    }
    assert!(
        missing.is_empty(),
        "{tool}: flags not in its help or manual page: {missing:?}"
    );
    true
}

#[test]
fn git_flags_match_git_help() {
    if help_of("git", &["--version"]).is_none() {
        common::skip("git not installed; its shim's flags not checked");
        return;
    }
    let meta = shim("git");
    let man = |page: &str| match help_of("man", &["-P", "cat", page]) {
        Some(text) if text.contains("--stat") => Some(text),
        _ => {
            common::skip(&format!(
                "no man page {page}; the git flags it documents not checked"
            ));
            None
        }
    };
    let diff_man = man("git-diff");
    let repo = tempfile::tempdir().unwrap();
    let repo_path = repo.path().to_str().unwrap();
    let init = Command::new("git").args(["init", "-q", repo_path]).status();
    assert!(init.is_ok_and(|s| s.success()), "git init failed");
    let mut missing = Vec::new();
    let mut checked = 0;
    let mut pages: std::collections::HashMap<&str, String> = Default::default();
    for entry in meta.walk() {
        if entry.command.commands.is_some() && entry.command.opts().is_empty() {
            continue;
        }
        let mut help = if matches!(entry.path[0], "log" | "show" | "diff") {
            // Their `-h` lists only a few options; the manual page lists them all.
            match man(&format!("git-{}", entry.path[0])) {
                Some(text) => text,
                None => continue,
            }
        } else {
            // Some subcommands need a repository even to print their help.
            let mut args: Vec<&str> = vec!["-C", repo_path];
            args.extend(entry.path.iter().copied());
            args.push("-h");
            let mut text = help_of("git", &args).unwrap_or_default();
            // Commands that are not built on parse-options (bisect, submodule) print
            // only a usage line: their manual page documents the options.
            let page = pages
                .entry(entry.path[0])
                .or_insert_with_key(|cmd| man_page(&format!("git-{cmd}")).unwrap_or_default());
            text.push_str(page);
            text
        };
        if entry.path == ["stash", "show"] {
            // `stash show` takes diff options.
            match &diff_man {
                Some(text) => help.push_str(text),
                None => continue,
            }
        }
        let opts = meta.options_in_scope(&entry);
        checked += opts.len();
        for flag in missing_flags(&help, &opts) {
            missing.push(format!("git {} {flag}", entry.path_string()));
        }
    }
    assert!(checked > 200, "only {checked} options checked");
    assert!(missing.is_empty(), "flags not in git's help: {missing:?}");
}

/// Builds argv the way an agent would: the command path, then each option's preferred
/// (long) flag, then the positionals.
fn argv(path: &[&str], opts: &[(&Opt, Option<&str>)], positionals: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = path
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| p.to_string())
        .collect();
    for (opt, value) in opts {
        out.push(opt.long_flag().unwrap().to_string());
        if let Some(v) = value {
            out.push(v.to_string());
        }
    }
    out.extend(positionals.iter().map(|p| p.to_string()));
    out
}

fn find_opt<'a>(meta: &'a Metadata, path: &[&str], name: &str) -> &'a Opt {
    let entry = meta.find(path).unwrap();
    meta.options_in_scope(&entry)
        .into_iter()
        .find(|o| o.name == name)
        .unwrap_or_else(|| panic!("{path:?} has no option {name}"))
}

#[test]
fn tar_mode_letters_work_as_commands() {
    if !is_gnu("tar") {
        common::skip("GNU tar not installed; its mode letters not checked");
        return;
    }
    let meta = shim("tar");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "hello").unwrap();
    let file = find_opt(&meta, &["c"], "file");
    let gzip = find_opt(&meta, &["c"], "gzip");
    let run = |args: Vec<String>| {
        let out = Command::new("tar")
            .args(&args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tar {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(argv(
        &["c"],
        &[(file, Some("x.tgz")), (gzip, None)],
        &["a.txt"],
    ));
    let listed = run(argv(&["t"], &[(file, Some("x.tgz")), (gzip, None)], &[]));
    assert_eq!(listed.trim(), "a.txt");
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let directory = find_opt(&meta, &["x"], "directory");
    let keep = find_opt(&meta, &["x"], "keep-old-files");
    run(argv(
        &["x"],
        &[
            (file, Some("x.tgz")),
            (gzip, None),
            (directory, Some("out")),
            (keep, None),
        ],
        &[],
    ));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out/a.txt")).unwrap(),
        "hello"
    );
}

#[test]
fn git_read_only_commands_run_with_declared_flags() {
    if help_of("git", &["--version"]).is_none() {
        common::skip("git not installed; its read-only commands not run");
        return;
    }
    let meta = shim("git");
    let dir = tempfile::tempdir().unwrap();
    let git = |args: &[String]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("HOME", dir.path())
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&argv(
        &["init"],
        &[(find_opt(&meta, &["init"], "initial-branch"), Some("main"))],
        &[],
    ));
    std::fs::write(dir.path().join("f.txt"), "one\n").unwrap();
    git(&argv(
        &["add"],
        &[(find_opt(&meta, &["add"], "all"), None)],
        &[],
    ));
    git(&argv(
        &["commit"],
        &[(find_opt(&meta, &["commit"], "message"), Some("first"))],
        &[],
    ));
    // Options given as separate words, the way an agent passes them.
    let log = git(&argv(
        &["log"],
        &[
            (find_opt(&meta, &["log"], "max-count"), Some("1")),
            (find_opt(&meta, &["log"], "since"), Some("2000-01-01")),
            (find_opt(&meta, &["log"], "author"), Some("t")),
            (find_opt(&meta, &["log"], "date"), Some("iso")),
            (find_opt(&meta, &["log"], "oneline"), None),
        ],
        &[],
    ));
    assert!(log.contains("first"), "{log}");
    let status = git(&argv(
        &["status"],
        &[(find_opt(&meta, &["status"], "porcelain"), None)],
        &[],
    ));
    assert!(status.is_empty(), "{status}");
    let branch = git(&argv(
        &["branch"],
        &[(find_opt(&meta, &["branch"], "show-current"), None)],
        &[],
    ));
    assert_eq!(branch.trim(), "main");
    git(&argv(
        &["show"],
        &[(find_opt(&meta, &["show"], "stat"), None)],
        &["HEAD"],
    ));
    git(&argv(&["remote", "show"], &[], &[]));
    git(&argv(&["stash", "list"], &[], &[]));
}

#[test]
fn shims_pass_atip_validate_with_no_warnings() {
    let sb = common::Sandbox::new();
    let out = sb
        .atip()
        .args(["validate", "--deny-warnings", "--output", "json"])
        .arg(shims_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = report.as_array().unwrap();
    assert_eq!(files.len(), load_all().len());
    for file in files {
        assert_eq!(file["kind"], "shim", "{file}");
        assert_eq!(file["diagnostics"], serde_json::json!([]), "{file}");
    }
}

/// Issue 32 item 6, on the shims we ship: an exported tool's description states the
/// conditions under which it does more than its plain call ("Read-only unless
/// --output."), and its MCP annotations are the worst case over those conditions, since
/// MCP's hints are per tool while atip decides per call.
#[test]
fn exports_state_conditions_and_the_worst_case() {
    let sb = common::Sandbox::new();
    let tools_of = |shim: &str| -> Vec<serde_json::Value> {
        let file = shims_dir().join(format!("{shim}.json"));
        let out = sb
            .atip()
            .args(["export", "--format", "mcp", "--strategy", "flat", "--file"])
            .arg(&file)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::show(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["tools"].as_array().unwrap().clone()
    };
    let tool = |shim: &str, name: &str| {
        tools_of(shim)
            .into_iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{shim}: no tool {name}"))
    };
    // (shim, tool, words the description must hold).
    let cases: &[(&str, &str, &[&str])] = &[
        ("sort", "sort", &["Read-only unless", "--output"]),
        ("uniq", "uniq", &["Read-only unless", "output"]),
        ("yq", "yq", &["Read-only unless", "--inplace"]),
        ("find", "find", &["Read-only unless", "-delete", "-fprint"]),
        ("sed", "sed", &["More effects with", "--in-place"]),
        (
            "curl",
            "curl",
            &["More effects with", "--output", "--request"],
        ),
        (
            "git",
            "git_push",
            &["More effects with", "--force", "--delete", "refspec"],
        ),
        ("cp", "cp", &["More effects with", "destination"]),
        // Destructive as a command (odd modes); the common modes lower a call, not the tool.
        ("chmod", "chmod", &[]),
    ];
    for (shim, name, words) in cases {
        let t = tool(shim, name);
        let desc = t["description"].as_str().unwrap();
        for w in *words {
            assert!(desc.contains(w), "{name}: {w:?} not in {desc:?}");
        }
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], false, "{name}: {a}");
        assert_eq!(a["destructiveHint"], true, "{name}: {a}");
    }
    // A command with no condition keeps its own hints and says nothing more.
    let cat = tool("cat", "cat");
    assert_eq!(cat["annotations"]["readOnlyHint"], true);
    let desc = cat["description"].as_str().unwrap();
    assert!(
        !desc.contains("unless") && !desc.contains("More effects"),
        "{desc}"
    );
}
