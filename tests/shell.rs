//! `atip completions SHELL` and `atip man`: the generated scripts are loaded by the real
//! shells and asked to complete, and the man page is rendered by man/groff. A shell that
//! is not installed is a visible "SKIPPED" (CI installs bash, zsh, fish and groff through
//! .ci/setup-test-deps).

use crate::common;

use common::{Sandbox, show};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn atip(sb: &Sandbox, args: &[&str]) -> Output {
    let out = sb.atip().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    out
}

fn have(program: &str) -> bool {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        common::skip(&format!(
            "{program} is not installed (.ci/setup-test-deps installs it)"
        ));
    }
    found
}

fn script(sb: &Sandbox, shell: &str) -> PathBuf {
    let out = atip(sb, &["completions", shell]);
    assert!(!out.stdout.is_empty());
    sb.write(&format!("completion.{shell}"), &out.stdout)
}

fn lines(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{}", show(out));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or("").to_string())
        .collect()
}

/// Runs bash's completion function for a command line, as readline would.
fn bash_complete(file: &Path, words: &[&str]) -> Vec<String> {
    let program = r#"source "$1"; shift
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
_atip atip "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
printf '%s\n' "${COMPREPLY[@]}""#;
    lines(
        &Command::new("bash")
            .arg("-c")
            .arg(program)
            .arg("bash")
            .arg(file)
            .args(words)
            .output()
            .unwrap(),
    )
}

#[test]
fn bash_loads_the_script_and_completes_commands_and_values() {
    let sb = Sandbox::new();
    let file = script(&sb, "bash");
    let syntax = Command::new("bash").arg("-n").arg(&file).output().unwrap();
    assert!(syntax.status.success(), "{}", show(&syntax));
    assert_eq!(bash_complete(&file, &["atip", "comp"]), ["completions"]);
    let formats = bash_complete(&file, &["atip", "export", "--format", ""]);
    for f in ["openai", "openai-strict", "anthropic", "gemini", "mcp"] {
        assert!(formats.iter().any(|x| x == f), "{f} not in {formats:?}");
    }
}

#[test]
fn zsh_parses_the_script() {
    if !have("zsh") {
        return;
    }
    let sb = Sandbox::new();
    let file = script(&sb, "zsh");
    let out = Command::new("zsh").arg("-n").arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("#compdef atip"), "{}", &text[..80]);
}

#[test]
fn fish_loads_the_script_and_completes() {
    if !have("fish") {
        return;
    }
    let sb = Sandbox::new();
    let file = script(&sb, "fish");
    let out = Command::new("fish")
        .arg("--no-execute")
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let complete = |line: &str| {
        lines(
            &Command::new("fish")
                .arg("--no-config")
                .arg("-c")
                .arg(format!("source {}; complete -C '{line}'", file.display()))
                .env("HOME", sb.path())
                .output()
                .unwrap(),
        )
    };
    assert_eq!(complete("atip comp"), ["completions"]);
    let formats = complete("atip export --format ");
    assert!(formats.iter().any(|f| f == "openai-strict"), "{formats:?}");
}

#[test]
fn powershell_and_elvish_scripts_name_every_command() {
    // No PowerShell or Elvish here to load them: check the commands are all in them.
    common::skip_optional("loading the powershell and elvish scripts (no such shells here)");
    let sb = Sandbox::new();
    for shell in ["powershell", "elvish"] {
        let text = std::fs::read_to_string(script(&sb, shell)).unwrap();
        for cmd in [
            "validate",
            "scan",
            "export",
            "exec",
            "mcp",
            "completions",
            "man",
        ] {
            // Both key their per-command completions by `atip;CMD`.
            assert!(text.contains(&format!("'atip;{cmd}'")), "{shell}: {cmd}");
        }
    }
}

#[test]
fn unknown_shell_and_unsupported_output_are_usage_errors() {
    let sb = Sandbox::new();
    let out = sb.atip().args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let out = sb
        .atip()
        .args(["--output", "jsonl", "completions", "bash"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    assert!(out.stdout.is_empty());
}

#[test]
fn man_renders_with_man_and_groff_without_warnings() {
    let sb = Sandbox::new();
    let page = sb.write("atip.1", atip(&sb, &["man"]).stdout);
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(text.contains(".TH atip 1"), "{}", &text[..200]);
    if have("groff") {
        // -k runs preconv (the help texts hold UTF-8); -ww turns every warning on.
        let out = Command::new("groff")
            .args(["-k", "-man", "-Tutf8", "-ww", "-z"])
            .arg(&page)
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{}",
            show(&out)
        );
    }
    if have("man") {
        let out = Command::new("man")
            .arg("-l")
            .arg(&page)
            .env("MANPAGER", "cat")
            .env("MANWIDTH", "100")
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{}", show(&out));
        for want in ["NAME", "SYNOPSIS", "--output", "completions", "NO_COLOR"] {
            assert!(shown.contains(want), "{want} missing from:\n{shown}");
        }
    }
}

#[test]
fn man_of_a_subcommand_and_of_an_unknown_one() {
    let sb = Sandbox::new();
    let text = String::from_utf8(atip(&sb, &["man", "mcp", "call"]).stdout).unwrap();
    assert!(text.contains(".TH atip-mcp-call 1"), "{}", &text[..200]);
    assert!(text.contains("atip\\-mcp\\-call"));
    let out = sb
        .atip()
        .args(["--output", "json", "man", "expotr"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let e: serde_json::Value = serde_json::from_str(err.lines().last().unwrap()).unwrap();
    assert_eq!(e["error"]["code"], "command_not_found", "{err}");
    assert_eq!(
        e["error"]["suggestion"]["example"], "atip man export",
        "{err}"
    );
}
