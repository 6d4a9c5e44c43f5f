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

#[test]
fn the_promised_shims_exist() {
    let names: BTreeSet<String> = load_all().into_iter().map(|(n, _, _)| n).collect();
    for want in [
        "git", "curl", "tar", "rm", "ls", "grep", "cp", "mv", "sed", "jq",
    ] {
        assert!(names.contains(want), "shims/{want}.json missing");
    }
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
            assert!(
                effects.destructive.is_some(),
                "{where_}: destructive unsaid"
            );
            assert!(effects.network.is_some(), "{where_}: network unsaid");
            assert!(effects.filesystem.is_some(), "{where_}: filesystem unsaid");
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
    assert_eq!(get("cp", &[""]).destructive, Some(true));
    assert_eq!(get("mv", &[""]).destructive, Some(true));
    assert!(get("jq", &[""]).is_read_only());
    assert!(!get("sed", &[""]).is_read_only());
    for tool in ["diff", "head", "tail", "wc"] {
        assert!(get(tool, &[""]).is_read_only(), "{tool}");
    }
}

#[test]
fn jq_accepts_every_declared_option() {
    use std::io::Write;
    if help_of("jq", &["--version"]).is_none() {
        eprintln!("note: jq not installed; not run");
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

#[test]
fn single_command_tool_flags_match_their_help() {
    for (tool, help_args) in [
        ("rm", &["--help"][..]),
        ("ls", &["--help"]),
        ("grep", &["--help"]),
        ("curl", &["--help", "all"]),
        ("tar", &["--help"]),
        ("cp", &["--help"]),
        ("mv", &["--help"]),
        ("sed", &["--help"]),
        ("diff", &["--help"]),
        ("head", &["--help"]),
        ("tail", &["--help"]),
        ("wc", &["--help"]),
        ("mkdir", &["--help"]),
    ] {
        let Some(help) = help_of(tool, help_args) else {
            eprintln!("note: {tool} not installed; flags not checked");
            continue;
        };
        if tool != "curl" && !is_gnu(tool) {
            eprintln!("note: {tool} is not GNU; flags not checked");
            continue;
        }
        let meta = shim(tool);
        let mut missing = Vec::new();
        for entry in meta.walk() {
            let opts = meta.options_in_scope(&entry);
            for flag in missing_flags(&help, &opts) {
                missing.push(format!("{} {flag}", entry.path_string()));
            }
        }
        assert!(
            missing.is_empty(),
            "{tool}: flags not in its help: {missing:?}"
        );
    }
}

#[test]
fn git_flags_match_git_help() {
    if help_of("git", &["--version"]).is_none() {
        eprintln!("note: git not installed; flags not checked");
        return;
    }
    let meta = shim("git");
    let man = |page: &str| match help_of("man", &["-P", "cat", page]) {
        Some(text) if text.contains("--stat") => Some(text),
        _ => {
            eprintln!("note: no man page {page}; some git flags not checked");
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
            help_of("git", &args).unwrap_or_default()
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
        eprintln!("note: GNU tar not installed; not run");
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
        eprintln!("note: git not installed; not run");
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
