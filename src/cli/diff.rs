//! `atip diff OLD NEW`: what changed between two versions of a tool's metadata.
//!
//! Only the clap arguments and the glue: the two inputs → `atip::diff::load`, the
//! comparison → `atip::diff::Report`, output → `atip::diff::render` or JSON, classes
//! asked for with `--fail-on` → exit code.

use crate::Ctx;
use atip::diff::load::{Origin, load};
use atip::diff::{Class, Report, render};
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, OutputFormat};
use std::ffi::OsString;
use std::path::PathBuf;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Compare two ATIP metadata documents command by command: breaking changes, effects
// that became less safe, additions; with semver advice.
//
// Exit status: 0 (or 1 when a change of a --fail-on class exists), 2 usage, 65 a
// document is not valid metadata, 66 an input is missing, 69 a --exec tool fails its
// --agent contract. See spec/diff.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The old and the new document: files, or `-` for standard input (one of them).
    #[arg(value_name = "FILE", num_args = 0..=2)]
    pub files: Vec<PathBuf>,
    /// Compare the `--agent` answers of two executables instead: OLD_TOOL NEW_TOOL.
    #[arg(long, num_args = 2, value_names = ["OLD_TOOL", "NEW_TOOL"], conflicts_with = "files")]
    pub exec: Option<Vec<OsString>>,
    /// Exit 1 when a change of this class exists (repeatable or comma-separated).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "CLASS")]
    pub fail_on: Vec<Class>,
    /// Add version advice: the bump the changes need and whether the declared versions make it.
    #[arg(long)]
    pub semver: bool,
    /// Timeout for each --exec tool (e.g. 5s).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = atip::units::parse_duration)]
    pub timeout: std::time::Duration,
    /// Refuse documents larger than this (e.g. 16MiB).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = atip::units::parse_size)]
    pub max_size: u64,
}

/// Runs `atip diff`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let origins: Vec<Origin> = match &args.exec {
        Some(tools) => tools.iter().map(|t| Origin::Exec(t.clone())).collect(),
        None => args
            .files
            .iter()
            .map(|p| {
                if p.as_os_str() == "-" {
                    Origin::Stdin
                } else {
                    Origin::File(p.clone())
                }
            })
            .collect(),
    };
    if origins.len() != 2 {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "atip diff needs two documents: OLD NEW (files or `-`), or --exec OLD_TOOL NEW_TOOL",
        )
        .hint("e.g. `atip diff old.json new.json --semver`"));
    }
    if origins
        .iter()
        .filter(|o| matches!(o, Origin::Stdin))
        .count()
        > 1
    {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "`-` (standard input) can be only one of the two documents",
        ));
    }
    let format = match ctx.output {
        OutputFormat::Sarif | OutputFormat::Github => {
            return Err(AtipError::new(
                ErrorCode::Usage,
                "atip diff prints text, json or markdown",
            ));
        }
        other => other,
    };
    let opts = atip::validate::Options {
        max_size: args.max_size,
        timeout: args.timeout,
        env: ctx.env.clone(),
        ..atip::validate::Options::default()
    };
    let old = load(&origins[0], &opts)?;
    let new = load(&origins[1], &opts)?;
    let report = Report::build((&old.meta, old.source), (&new.meta, new.source));
    match format {
        OutputFormat::Json => {
            if args.semver {
                ctx.out.json(&report)?
            } else {
                let mut v = serde_json::to_value(&report).expect("report serializes");
                v.as_object_mut().map(|o| o.remove("semver"));
                ctx.out.json(&v)?
            }
        }
        OutputFormat::Markdown => ctx.out.text(&render::markdown(&report, args.semver))?,
        // For a person: long lines wrapped under themselves, never past the terminal.
        _ => ctx.out.text(&atip::output::term::wrap_long_lines(
            &render::text(&report, args.semver),
            ctx.width,
        ))?,
    }
    Ok(if args.fail_on.iter().any(|c| report.has(*c)) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
