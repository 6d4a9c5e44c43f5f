//! `atip validate`: check ATIP metadata, shims, registries and pattern files.
//!
//! Only the clap arguments and the glue: inputs → `atip::validate::run`, results →
//! `atip::validate::render`, totals → exit code. Rules and formats live in the library.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode};
use atip::validate::render::{Format, Printer};
use atip::validate::{Input, Kind, Options, check_inputs};
use std::ffi::OsString;
use std::path::PathBuf;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Check ATIP metadata, shims, registries and pattern files against the schema and semantic rules.
//
// Exit status: 0 all valid (warnings allowed unless --deny-warnings), 1 any invalid,
// 2 usage, 66 an input missing or unreadable. See spec/validate.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories (searched recursively for *.json); `-` reads standard input.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Run `TOOL [ARGS...] --agent` and check its answer and the --agent contract
    /// (exit 0, one JSON document on stdout).
    #[arg(long, value_name = "TOOL")]
    pub exec: Option<OsString>,
    /// With --exec: one argument for TOOL, before `--agent` (repeatable, in order).
    #[arg(
        long,
        value_name = "ARG",
        requires = "exec",
        allow_hyphen_values = true
    )]
    pub exec_arg: Vec<OsString>,
    /// Check every input as this kind instead of detecting it.
    #[arg(long, value_enum)]
    pub kind: Option<Kind>,
    /// Treat warnings as errors for the exit status.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Refuse inputs larger than this, unread (e.g. 16MiB, 500KB, 1048576).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = parse_size)]
    pub max_size: u64,
    /// Timeout for --exec (e.g. 5s, 500ms); the whole process group is killed past it.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration)]
    pub timeout: std::time::Duration,
    /// Only decode and parse, no schema or rules (benchmark floor).
    #[arg(long, hide = true)]
    pub parse_only: bool,
}

fn parse_size(s: &str) -> Result<u64, atip::units::UnitError> {
    atip::units::parse_size(s)
}

fn parse_duration(s: &str) -> Result<std::time::Duration, atip::units::UnitError> {
    atip::units::parse_duration(s)
}

/// Runs `atip validate`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let inputs = super::findings::inputs(&args.paths, args.exec.as_ref(), &args.exec_arg)?;
    if inputs.is_empty() {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "nothing to validate: give files, directories, `-` or --exec TOOL",
        )
        .hint("e.g. `atip validate shims/` or `atip validate --exec mytool`"));
    }
    let format = super::findings::format(ctx, "validate")?;
    let verbose = ctx.out.verbosity() == atip::output::Verbosity::Verbose;
    let opts = Options {
        kind: args.kind,
        max_size: args.max_size,
        timeout: args.timeout,
        parse_only: args.parse_only,
        // Findings in full (source line, caret, hint) only when they are shown.
        render_text: match format {
            Format::Text { color } if verbose => Some(color),
            _ => None,
        },
        env: ctx.env.clone(),
    };
    let summary = if let Format::Text { color } = format {
        // For a person: the totals first, then the findings (crate::cli::findings).
        let mut findings = super::findings::Findings::new(verbose);
        let summary = check_inputs(&inputs, &opts, |report| findings.add(&report));
        ctx.out.text(&findings.render(
            &summary,
            ctx.width,
            atip::output::term::Style::new(color),
        ))?;
        summary
    } else {
        printed(&inputs, &opts, format, ctx)?
    };
    notes(&summary, ctx);
    Ok(status(&summary, args.deny_warnings))
}

/// For a program: each file's findings streamed in `format` as they come, the totals
/// last; the first failure to write stdout is the error.
fn printed(
    inputs: &[Input],
    opts: &Options,
    format: Format,
    ctx: &Ctx,
) -> Result<atip::validate::Summary, AtipError> {
    let mut printer = Printer::new(std::io::BufWriter::new(ctx.out.stdout()), format);
    let mut write_error = None;
    let mut note = |r: std::io::Result<()>| {
        if let Err(e) = r
            && write_error.is_none()
        {
            write_error = Some(e);
        }
    };
    note(printer.begin());
    let summary = check_inputs(inputs, opts, |report| note(printer.file(&report)));
    note(printer.end(&summary));
    if let Some(e) = write_error {
        return Err(atip::output::stdout_failed(e));
    }
    Ok(summary)
}

/// Notes on stderr about atip's own directories validate read.
fn notes(summary: &atip::validate::Summary, ctx: &Ctx) {
    for dir in &summary.atip_dirs {
        ctx.out.note(atip_dir_line(dir));
    }
}

/// The exit status the totals call for (spec/validate.md).
fn status(summary: &atip::validate::Summary, deny_warnings: bool) -> ExitStatus {
    if summary.missing > 0 {
        ExitStatus::Error(atip::output::Category::Input)
    } else if summary.invalid > 0 || (deny_warnings && summary.warnings > 0) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}

/// What validate made of one of atip's own directories: what it checked there, and the
/// bookkeeping files it left unchecked (counted and named, never silently).
fn atip_dir_line(d: &atip::validate::run::AtipDir) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let mut line = format!(
        "{} is {}: checked {} document{} as atip uses them",
        d.dir,
        d.what,
        d.checked,
        plural(d.checked)
    );
    if d.stored > 0 {
        line.push_str(&format!(
            " ({} stored under the sha256 of their bytes, which was checked too)",
            d.stored
        ));
    }
    if d.skipped > 0 {
        let named: Vec<String> = d
            .skipped_files
            .iter()
            .map(|(f, what)| format!("{f} ({what})"))
            .collect();
        let more = d.skipped - named.len();
        line.push_str(&format!(
            "; skipped {} file{} of atip's own bookkeeping, not ATIP documents: {}{}",
            d.skipped,
            plural(d.skipped),
            named.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ));
    }
    line
}
