//! `atip get`: print a registered tool's stored metadata, whole or as the partial
//! document of partial discovery (`--commands`, `--depth`). Read-only; never takes the
//! writer lock. Unknown names and commands exit 66 with the closest names.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode};
use atip::registry::query;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Print a registered tool's metadata, whole or partial.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tool name, as in `atip list`.
    pub name: String,
    /// Only these commands (with their subcommands), comma-separated; nested ones
    /// as space-separated paths: `--commands 'pr create,issue'`.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub commands: Option<Vec<String>>,
    /// Cut commands nested deeper than N levels (1 = top-level commands only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub depth: Option<u64>,
}

/// Runs `atip get`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let tool = query::get_tool(&ctx.dirs, &args.name).map_err(|e| e.to_atip())?;
    let value = if args.commands.is_none() && args.depth.is_none() {
        serde_json::from_slice::<serde_json::Value>(&tool.document).map_err(|e| {
            AtipError::new(
                ErrorCode::MetadataInvalid,
                format!("stored metadata of {} is not JSON: {e}", tool.name),
            )
        })?
    } else {
        let commands: Option<Vec<String>> = args.commands.map(|list| {
            list.iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|c| !c.is_empty())
                .collect()
        });
        for wanted in commands.iter().flatten() {
            let path: Vec<&str> = wanted.split(' ').collect();
            if tool.metadata.find(&path).is_none() {
                let all: Vec<String> = tool
                    .metadata
                    .walk()
                    .iter()
                    .map(|e| e.path_string())
                    .collect();
                let close = query::suggest(all.iter().map(String::as_str), wanted, 3);
                let hint = if close.is_empty() {
                    format!(
                        "its top-level commands: {}",
                        tool.metadata
                            .top_commands()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    format!("did you mean {}?", close.join(", "))
                };
                return Err(AtipError::new(
                    ErrorCode::CommandNotFound,
                    format!("{} has no command {wanted:?}", tool.name),
                )
                .hint(hint)
                .details(
                    serde_json::json!({"tool": tool.name, "command": wanted, "suggestions": close}),
                ));
            }
        }
        let depth = args.depth.map(|d| d as usize);
        tool.metadata.partial(commands.as_deref(), depth).to_value()
    };
    ctx.out.json(&value)?;
    Ok(ExitStatus::Success)
}
