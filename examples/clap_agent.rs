//! A clap CLI that answers `--agent` with ATIP metadata built by `atip::from_clap`,
//! effects per command, and partial discovery (`--agent --commands PATHS --depth N`).
//!
//! Run: `cargo run --example clap_agent -- --agent --commands backup`.
//! Its tests parse real command lines, then check the answer with `atip validate` and
//! `atip lint` (the library calls behind those commands). They run with `cargo test`
//! (Cargo.toml sets `test = true` for this example), so CI runs them.

use atip::from_clap::FromClap;
use atip::model::{Effects, FilesystemEffects, Metadata};
use clap::{CommandFactory, Parser, Subcommand};

/// Back up and restore a directory.
#[derive(Parser)]
#[command(name = "stash-dir", version = "0.3.0")]
struct Cli {
    /// Print ATIP metadata for agents and exit.
    #[arg(long)]
    agent: bool,
    /// With --agent: only these command paths, comma-separated.
    #[arg(long, requires = "agent", value_delimiter = ',')]
    commands: Option<Vec<String>>,
    /// With --agent: only commands nested at most N levels deep.
    #[arg(long, requires = "agent")]
    depth: Option<usize>,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Copy a directory into the backup store.
    Backup {
        /// Directory to back up.
        dir: std::path::PathBuf,
    },
    /// Delete backups older than the given number of days.
    Prune {
        /// Keep backups younger than this many days.
        #[arg(long, default_value_t = 30)]
        days: u32,
    },
}

/// What each command does: the one thing clap cannot know.
fn effects() -> Vec<(&'static [&'static str], Effects)> {
    let fs = |write, delete| FilesystemEffects {
        read: Some(true),
        write: Some(write),
        delete: Some(delete),
        ..FilesystemEffects::default()
    };
    let local = Effects {
        network: Some(false),
        subprocess: Some(false),
        ..Effects::default()
    };
    vec![
        (
            &["backup"],
            Effects {
                filesystem: Some(fs(true, false)),
                destructive: Some(false),
                idempotent: Some(true),
                reversible: Some(true),
                ..local.clone()
            },
        ),
        (
            &["prune"],
            Effects {
                filesystem: Some(fs(true, true)),
                destructive: Some(true),
                reversible: Some(false),
                idempotent: Some(true),
                ..local
            },
        ),
    ]
}

/// The whole `--agent` answer, or the partial one when `--commands`/`--depth` are given.
fn agent_metadata(commands: Option<&[String]>, depth: Option<usize>) -> Metadata {
    let meta = FromClap::new(&Cli::command())
        .skip_root_arg("commands")
        .skip_root_arg("depth")
        .feature("partial-discovery")
        .effects_table(&effects())
        .build()
        .expect("the effects table names real commands");
    if commands.is_some() || depth.is_some() {
        meta.partial(commands, depth)
    } else {
        meta
    }
}

/// The `--agent` answer for a parsed command line, or `None` when it is a normal run.
fn agent_answer(cli: &Cli) -> Option<String> {
    cli.agent.then(|| {
        let meta = agent_metadata(cli.commands.as_deref(), cli.depth);
        serde_json::to_string_pretty(&meta).expect("serializes")
    })
}

fn main() {
    let cli = Cli::parse();
    if let Some(answer) = agent_answer(&cli) {
        println!("{answer}");
        return;
    }
    match cli.command {
        Some(Cmd::Backup { dir }) => println!("would back up {}", dir.display()),
        Some(Cmd::Prune { days }) => println!("would prune backups older than {days} days"),
        None => println!("try --help"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(meta: &Metadata) -> Vec<u8> {
        serde_json::to_vec_pretty(meta).unwrap()
    }

    #[test]
    fn agent_answer_is_valid_and_lint_clean() {
        let doc = bytes(&agent_metadata(None, None));
        let checked = atip::validate::check_bytes(&doc, None, None);
        assert!(checked.diagnostics.is_empty(), "{:?}", checked.diagnostics);
        let config = atip::lint::config::Config::default();
        let (_, findings, errors) = atip::lint::lint_bytes(&doc, None, None, &config, false);
        assert!(errors.is_empty());
        let ids: Vec<&str> = findings
            .iter()
            .map(|f| f.diagnostic.rule.as_str())
            .collect();
        assert!(ids.is_empty(), "lint findings: {ids:?}");
    }

    #[test]
    fn partial_discovery_is_valid_and_says_what_it_left_out() {
        let wanted = vec!["backup".to_string()];
        let meta = agent_metadata(Some(&wanted), None);
        assert!(meta.find(&["prune"]).is_none());
        assert_eq!(meta.partial, Some(true));
        let omitted = meta.omitted.as_ref().unwrap();
        assert_eq!(omitted.safety_assumption.as_deref(), Some("unknown"));
        let checked = atip::validate::check_bytes(&bytes(&meta), None, None);
        assert!(checked.is_valid(), "{:?}", checked.diagnostics);
        let meta = agent_metadata(None, Some(1));
        assert!(atip::validate::check_bytes(&bytes(&meta), None, None).is_valid());
    }

    /// The answer to a real command line, as the binary prints it.
    fn answer(argv: &[&str]) -> (Vec<u8>, serde_json::Value) {
        let cli = Cli::try_parse_from(argv).expect("valid command line");
        let text = agent_answer(&cli).expect("--agent answers");
        let v = serde_json::from_str(&text).unwrap();
        (text.into_bytes(), v)
    }

    #[test]
    fn command_lines_with_partial_discovery_flags() {
        // `--agent --commands prune`: only prune, marked partial, and still valid.
        let (doc, v) = answer(&["stash-dir", "--agent", "--commands", "prune"]);
        assert!(atip::validate::check_bytes(&doc, None, None).is_valid());
        let names: Vec<&String> = v["commands"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["prune"]);
        assert_eq!(v["partial"], true);
        assert_eq!(v["commands"]["prune"]["effects"]["destructive"], true);
        // The discovery flags are not options of the tool itself.
        let opts = serde_json::to_string(&v["globalOptions"]).unwrap();
        assert!(
            !opts.contains("\"depth\"") && !opts.contains("\"commands\""),
            "{opts}"
        );
        // `--depth 1` keeps both top-level commands; the whole answer is not partial.
        let (doc, v) = answer(&["stash-dir", "--agent", "--depth", "1"]);
        assert!(atip::validate::check_bytes(&doc, None, None).is_valid());
        assert_eq!(v["commands"].as_object().unwrap().len(), 2);
        let (_, full) = answer(&["stash-dir", "--agent"]);
        assert!(full.get("partial").is_none(), "{full}");
        assert!(
            full["atip"]["features"]
                .to_string()
                .contains("partial-discovery"),
            "{full}"
        );
        // The discovery flags need --agent; a normal run has no answer.
        assert!(Cli::try_parse_from(["stash-dir", "--depth", "1"]).is_err());
        let cli = Cli::try_parse_from(["stash-dir", "prune", "--days", "3"]).unwrap();
        assert!(agent_answer(&cli).is_none());
    }

    #[test]
    fn effects_are_per_command() {
        let meta = agent_metadata(None, None);
        let prune = meta.find(&["prune"]).unwrap();
        assert_eq!(meta.effective_effects(&prune).destructive, Some(true));
        let backup = meta.find(&["backup"]).unwrap();
        assert_eq!(meta.effective_effects(&backup).destructive, Some(false));
    }
}
