//! `atip --agent`: atip's own ATIP metadata, generated from its clap tree.
//!
//! Owns the one thing clap cannot know, the effects table of each atip subcommand, and
//! prints what [`atip::from_clap`] builds from the real `Cli::command()` tree, so the
//! metadata follows the real flags automatically. Must not hand-write commands,
//! arguments or options.

use crate::Cli;
use atip::from_clap::{FromClap, FromClapError};
use atip::model::{Effects, FilesystemEffects, Metadata};
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode};
use clap::CommandFactory;

fn fs(read: bool, write: bool, delete: bool) -> Option<FilesystemEffects> {
    Some(FilesystemEffects {
        read: Some(read),
        write: Some(write),
        delete: Some(delete),
        ..FilesystemEffects::default()
    })
}

/// Reads local files only: no network, no child processes, changes nothing.
fn read_only() -> Effects {
    Effects {
        filesystem: fs(true, false, false),
        network: Some(false),
        subprocess: Some(false),
        idempotent: Some(true),
        reversible: Some(true),
        destructive: Some(false),
        ..Effects::default()
    }
}

/// The effects of each atip subcommand, by command path.
///
/// `exec`, `mcp` and `chat` run whatever registered tool a model asks for, `scan` runs
/// the executables it finds (`--probe all` runs every one), and `validate`, `lint` and
/// `diff` run `TOOL --agent` with `--exec`: what those programs do is
/// unknown here, so `destructive`, `reversible`, `idempotent` and `network` are left
/// unsaid (unknown, which consumers treat as possibly destructive) rather than claimed
/// safe. They are also marked as command runners ([`RUNNERS`]).
// Long because: a data table, one entry per atip command, each with the comment that says
// why its effects are what they are; split up, the commands could no longer be compared.
pub fn effects_table() -> Vec<(&'static [&'static str], Effects)> {
    vec![
        (
            &["validate"],
            Effects {
                // `--exec TOOL` runs `TOOL --agent`: whatever that program does.
                subprocess: Some(true),
                destructive: None,
                reversible: None,
                idempotent: None,
                network: None,
                ..read_only()
            },
        ),
        (
            &["scan"],
            Effects {
                filesystem: fs(true, true, false),
                // Probes candidates with `TOOL --agent`: what they do is unknown.
                subprocess: Some(true),
                idempotent: Some(false),
                modifies: Some(vec!["registry".into()]),
                ..Effects::default()
            },
        ),
        (
            &["lint"],
            Effects {
                // `--fix` rewrites the linted files in place; `--exec TOOL` runs
                // `TOOL --agent`: whatever that program does, so not known harmless.
                filesystem: fs(true, true, false),
                subprocess: Some(true),
                reversible: Some(false),
                modifies: Some(vec!["metadata files (with --fix)".into()]),
                destructive: None,
                idempotent: None,
                network: None,
                ..read_only()
            },
        ),
        (
            &["diff"],
            Effects {
                // `--exec OLD NEW` runs both tools' `--agent`: whatever they do.
                subprocess: Some(true),
                destructive: None,
                reversible: None,
                idempotent: None,
                network: None,
                ..read_only()
            },
        ),
        (
            &["sync"],
            Effects {
                // Fetches from the configured remote registries, caches what it fetched,
                // and scans (which may probe executables showing an ATIP sign).
                filesystem: fs(true, true, false),
                network: Some(true),
                subprocess: Some(true),
                idempotent: Some(false),
                modifies: Some(vec!["registry".into(), "remote registry cache".into()]),
                ..Effects::default()
            },
        ),
        (
            &["registry"],
            Effects {
                // keygen/build write files, add/remove edit registries.json; nothing runs,
                // nothing is fetched.
                filesystem: fs(true, true, true),
                network: Some(false),
                subprocess: Some(false),
                idempotent: Some(false),
                modifies: Some(vec![
                    "registries.json".into(),
                    "registry trees".into(),
                    "key files".into(),
                ]),
                ..Effects::default()
            },
        ),
        (&["list"], read_only()),
        (&["get"], read_only()),
        (&["doctor"], read_only()),
        (&["search"], read_only()),
        // Print text generated from the command tree; touch nothing.
        (&["completions"], read_only()),
        (&["man"], read_only()),
        (
            &["export"],
            Effects {
                // `-o` writes the exported definitions to files.
                filesystem: fs(true, true, false),
                ..read_only()
            },
        ),
        (
            &["exec"],
            Effects {
                subprocess: Some(true),
                idempotent: Some(false),
                ..Effects::default()
            },
        ),
        (
            &["mcp"],
            Effects {
                subprocess: Some(true),
                idempotent: Some(false),
                ..Effects::default()
            },
        ),
        (
            &["chat"],
            Effects {
                // Talks to a model endpoint, then runs whatever tools the model calls.
                network: Some(true),
                subprocess: Some(true),
                idempotent: Some(false),
                ..Effects::default()
            },
        ),
    ]
}

/// The atip commands that run programs chosen by their arguments or found on disk,
/// marked `x-atip-runner` so a policy treats them as command runners.
pub const RUNNERS: &[&str] = &[
    "exec", "mcp", "chat", "scan", "sync", "validate", "lint", "diff",
];

/// atip's metadata, from the real command tree.
pub fn metadata() -> Result<Metadata, FromClapError> {
    let mut meta = FromClap::new(&Cli::command())
        .description("Find, validate, export and run ATIP command-line tools for AI agents")
        .skip_root_arg("commands")
        .skip_root_arg("depth")
        .feature("partial-discovery")
        .effects_table(&effects_table())
        .build()?;
    for (name, cmd) in meta.commands.iter_mut().flatten() {
        if RUNNERS.contains(&name.as_str()) {
            cmd.extra.insert(
                atip::model::RUNNER_KEY.into(),
                serde_json::Value::Bool(true),
            );
        }
    }
    Ok(meta)
}

/// Prints atip's metadata (partial when `commands` or `depth` is given); returns the exit code.
pub fn run(
    commands: Option<&[String]>,
    depth: Option<usize>,
    out: &atip::output::Printer,
) -> Result<ExitStatus, AtipError> {
    let mut meta = metadata().map_err(|e| {
        AtipError::new(
            ErrorCode::Internal,
            format!("failed to build atip's own metadata: {e}"),
        )
        .hint("this is a bug in atip; please report it")
    })?;
    if commands.is_some() || depth.is_some() {
        if let Some(wanted) = commands {
            for path in wanted {
                let segments: Vec<&str> = path.split_whitespace().collect();
                if meta.find(&segments).is_none() {
                    return Err(AtipError::new(
                        ErrorCode::CommandNotFound,
                        format!("--commands names `{path}`, which atip does not have"),
                    )
                    .hint("list the paths with `atip --agent` (keys of `commands`)"));
                }
            }
        }
        meta = meta.partial(commands, depth);
    }
    out.json(&meta)?;
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ArgAction;

    /// Every real subcommand and every real, visible long flag and positional of the
    /// built clap tree shows up in the output: nothing is added or kept by hand.
    #[test]
    fn metadata_covers_the_real_tree() {
        let meta = metadata().unwrap();
        let mut cli = Cli::command();
        cli.build();
        let globals: Vec<String> = cli
            .get_arguments()
            .filter(|a| a.is_global_set())
            .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
            .collect();
        for g in &globals {
            assert!(
                meta.global_opts().iter().any(|o| o.flags.contains(g)),
                "global {g} missing"
            );
        }
        let mut seen = 0;
        let mut stack: Vec<(Vec<String>, &clap::Command)> = cli
            .get_subcommands()
            .map(|s| (vec![s.get_name().to_string()], s))
            .collect();
        while let Some((path, cmd)) = stack.pop() {
            if cmd.is_hide_set() || path.last().map(String::as_str) == Some("help") {
                continue;
            }
            seen += 1;
            let entry = meta
                .find(&path)
                .unwrap_or_else(|| panic!("subcommand `{}` missing", path.join(" ")));
            for arg in cmd.get_arguments() {
                if arg.is_hide_set()
                    || matches!(
                        arg.get_action(),
                        ArgAction::Help
                            | ArgAction::HelpShort
                            | ArgAction::HelpLong
                            | ArgAction::Version
                    )
                {
                    continue;
                }
                if arg.is_positional() {
                    assert!(
                        entry
                            .command
                            .args()
                            .iter()
                            .any(|a| a.name == arg.get_id().as_str()),
                        "positional {} of `{}` missing",
                        arg.get_id(),
                        path.join(" ")
                    );
                } else if let Some(long) = arg.get_long() {
                    let flag = format!("--{long}");
                    let in_scope = meta.options_in_scope(&entry);
                    assert!(
                        in_scope.iter().any(|o| o.flags.contains(&flag)),
                        "{flag} of `{}` missing",
                        path.join(" ")
                    );
                }
            }
            for sub in cmd.get_subcommands() {
                let mut p = path.clone();
                p.push(sub.get_name().to_string());
                stack.push((p, sub));
            }
        }
        assert_eq!(seen, meta.command_count());
        assert_eq!(meta.name.as_deref(), Some("atip"));
        assert_eq!(meta.version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn every_top_level_command_has_effects() {
        let meta = metadata().unwrap();
        for (name, cmd) in meta.top_commands() {
            assert!(cmd.effects.is_some(), "`{name}` has no effects");
        }
        let list = meta.find(&["list"]).unwrap();
        assert!(meta.effective_effects(&list).is_read_only());
        let exec = meta.find(&["exec"]).unwrap();
        let e = meta.effective_effects(&exec);
        assert_eq!(e.destructive, None, "exec's destructiveness is unknown");
        assert_eq!(e.subprocess, Some(true));
        for runner in RUNNERS {
            let entry = meta.find(&[runner]).unwrap();
            let e = meta.effective_effects(&entry);
            assert!(e.possibly_destructive() && !e.is_read_only(), "{runner}");
            assert_ne!(e.idempotent, Some(true), "{runner}");
            assert!(meta.is_runner(&entry), "{runner}");
        }
    }

    #[test]
    fn agent_flags_are_not_advertised() {
        let meta = metadata().unwrap();
        assert!(meta.find(&[""]).is_none());
        for o in meta.global_opts() {
            assert!(!o.flags.iter().any(|f| f == "--agent" || f == "--depth"));
        }
    }
}
