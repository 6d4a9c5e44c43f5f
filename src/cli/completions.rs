//! `atip completions SHELL`: the shell completion script, generated from the same clap
//! definition the binary parses with, so it always offers exactly the real options.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{AtipError, OutputFormat};

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Print a shell completion script (bash, zsh, fish, powershell, elvish).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Runs `atip completions`: the script on stdout. `--output` only chooses between text and
/// json (what `auto` resolves to); the script is printed as is either way.
pub fn run(args: Args, mut command: clap::Command, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("completions", &[OutputFormat::Text, OutputFormat::Json])?;
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "atip", &mut script);
    ctx.out.write(&script)?;
    Ok(ExitStatus::Success)
}
