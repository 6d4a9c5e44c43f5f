//! `atip man [COMMAND]`: the manual page (roff) of atip or of one subcommand, generated
//! from the clap definition, so it always documents the real options. View it with
//! `atip man | man -l -`; install it with `atip man > ~/.local/share/man/man1/atip.1`.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{
    Applicability, AtipError, ErrorCode, OutputFormat, SuggestedAction, Suggestion,
};
use atip::similar::edit_distance;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Print the manual page (roff) of atip or of one of its commands.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A command path, e.g. `export` or `mcp call`; none gives atip(1).
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `atip man`: roff on stdout (`atip-export(1)` for `atip man export`).
pub fn run(args: Args, root: clap::Command, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("man", &[OutputFormat::Text, OutputFormat::Json])?;
    let page = find(root, &args.command)?;
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff).map_err(|e| {
        AtipError::new(
            ErrorCode::Internal,
            format!("cannot render the man page: {e}"),
        )
    })?;
    ctx.out.write(&roff)?;
    Ok(ExitStatus::Success)
}

/// The subcommand at `path`, named `atip-a-b` as man pages of subcommands are; an unknown
/// name is `command_not_found` with the names there are.
fn find(root: clap::Command, path: &[String]) -> Result<clap::Command, AtipError> {
    let mut cmd = root;
    let mut name = String::from("atip");
    for (i, word) in path.iter().enumerate() {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            let mut err = AtipError::new(
                ErrorCode::CommandNotFound,
                format!("`{}` has no command {word:?}", name.replace('-', " ")),
            )
            .hint(if names.is_empty() {
                "it has no subcommands".to_string()
            } else {
                format!("commands: {}", names.join(", "))
            });
            let closest = names
                .iter()
                .map(|n| (edit_distance(word, n), n))
                .filter(|(d, _)| *d <= (word.chars().count() / 3).max(2))
                .min();
            if let Some((_, n)) = closest {
                let fixed: Vec<&str> = path[..i]
                    .iter()
                    .map(String::as_str)
                    .chain([n.as_str()])
                    .collect();
                err = err.suggest(
                    Suggestion::new(
                        SuggestedAction::RetryWithModifiedInput,
                        format!("did you mean `{n}`?"),
                    )
                    .example(
                        format!("atip man {}", fixed.join(" ")),
                        Applicability::MaybeIncorrect,
                    ),
                );
            }
            return Err(err);
        };
        name = format!("{name}-{}", sub.get_name());
        cmd = sub.name(name.clone()).version(env!("CARGO_PKG_VERSION"));
    }
    Ok(cmd)
}
