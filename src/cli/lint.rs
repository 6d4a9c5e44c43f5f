//! `atip lint`: rules that make ATIP metadata better for agents, beyond validity.
//!
//! Only the clap arguments and the glue: config → `atip::lint::config`, inputs →
//! `atip::lint::lint_inputs`, results → the validate printers, totals → exit code.

use crate::Ctx;
use atip::lint::config::Config;
use atip::lint::rules::LINT_RULES;
use atip::lint::{Options, lint_inputs};
use atip::output::ExitStatus;
use atip::output::{AtipError, OutputFormat};
use atip::validate::Input;
use atip::validate::render::{Format, Printer};
use atip::validate::rules::{RULES, RuleInfo};
use std::ffi::OsString;
use std::path::PathBuf;

/// Lint's findings can carry lint rules and validate's errors: SARIF lists both.
static CATALOGUES: &[&[RuleInfo]] = &[LINT_RULES, RULES];

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Check ATIP metadata for what makes it better for agents: effects stated, good
// descriptions, consistent names, narrow types, provider-safe names.
//
// Exit status: 0 no errors (warnings allowed unless --deny-warnings), 1 any error,
// 2 usage, 66 an input missing or unreadable, 78 a bad .atip-lint.json. See spec/lint.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Files or directories (searched recursively for *.json); `-` reads standard input.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Run `TOOL [ARGS...] --agent` and lint its answer (and its --agent contract).
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
    /// Lint every document the registry holds (what `atip scan` registered), each
    /// named after its tool; never rewritten.
    #[arg(long, conflicts_with = "fix")]
    pub registry: bool,
    /// Apply the mechanical fixes to the files (rewritten atomically, as 2-space JSON).
    #[arg(long)]
    pub fix: bool,
    /// Config file (default: the nearest .atip-lint.json in the working directory or above).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Ignore any .atip-lint.json.
    #[arg(long, conflicts_with = "config")]
    pub no_config: bool,
    /// Also check that each described binary is on PATH (rule binary-missing).
    #[arg(long)]
    pub check_binary: bool,
    /// Treat warnings as errors for the exit status.
    #[arg(long)]
    pub deny_warnings: bool,
    /// Print the rule catalogue (id, default severity, what it finds) and exit.
    #[arg(long)]
    pub list_rules: bool,
    /// Refuse inputs larger than this, unread (e.g. 16MiB).
    #[arg(long, value_name = "SIZE", default_value = "16MiB", value_parser = atip::units::parse_size)]
    pub max_size: u64,
    /// Timeout for --exec (e.g. 5s).
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = atip::units::parse_duration)]
    pub timeout: std::time::Duration,
}

fn usage(message: impl Into<String>) -> AtipError {
    AtipError::usage(message)
}

fn list_rules(ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output.require(
        "lint --list-rules",
        &[OutputFormat::Text, OutputFormat::Json],
    )?;
    if ctx.output.is_json() {
        let rules: Vec<serde_json::Value> = LINT_RULES
            .iter()
            .map(|r| {
                serde_json::json!({"id": r.id, "severity": r.severity, "summary": r.summary, "hint": r.hint})
            })
            .collect();
        ctx.out.json(&rules)?;
    } else {
        let mut text = String::new();
        for r in LINT_RULES {
            text.push_str(&format!(
                "{:<32} {:<8} {}\n",
                r.id,
                r.severity.as_str(),
                r.summary
            ));
        }
        ctx.out.text(&text)?;
    }
    Ok(ExitStatus::Success)
}

/// Runs `atip lint`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    if args.list_rules {
        return list_rules(ctx);
    }
    let inputs = inputs(&args)?;
    let config = config(&args)?;
    let format = super::findings::format(ctx, "lint")?;
    let verbose = ctx.out.verbosity() == atip::output::Verbosity::Verbose;
    let opts = Options {
        read: atip::validate::Options {
            max_size: args.max_size,
            timeout: args.timeout,
            env: ctx.env.clone(),
            ..atip::validate::Options::default()
        },
        check_binary: args.check_binary,
        fix: args.fix,
        // Findings in full (source line, caret, hint) only when they are shown.
        render_text: match format {
            Format::Text { color } if verbose => Some(color),
            _ => None,
        },
    };
    let run = Run {
        inputs: &inputs,
        config: &config,
        opts: &opts,
        registry: args.registry,
    };
    let totals = match format {
        Format::Text { color } => run.for_a_person(ctx, verbose, color)?,
        format => run.printed(ctx, format)?,
    };
    Ok(finish(&args, ctx, &totals))
}

/// The inputs the arguments name: paths, `-` (once), and `--exec TOOL`; none at all
/// (without `--registry`) is a usage error.
fn inputs(args: &Args) -> Result<Vec<Input>, AtipError> {
    let inputs = super::findings::inputs(&args.paths, args.exec.as_ref(), &args.exec_arg)?;
    if inputs.is_empty() && !args.registry {
        return Err(usage(
            "nothing to lint: give files, directories, `-`, --exec TOOL or --registry",
        )
        .hint("e.g. `atip lint shims/`, `atip lint --exec mytool` or `atip lint --registry`"));
    }
    Ok(inputs)
}

/// The lint config: none with `--no-config`, the `--config` file, else the nearest
/// `.atip-lint.json` from the working directory up.
fn config(args: &Args) -> Result<Config, AtipError> {
    if args.no_config {
        Ok(Config::default())
    } else if let Some(path) = &args.config {
        Ok(Config::load(path)?)
    } else {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Ok(Config::discover(&cwd)?)
    }
}

/// What one lint run covers: the inputs, then the registry's documents with `--registry`.
struct Run<'a> {
    inputs: &'a [Input],
    config: &'a Config,
    opts: &'a Options,
    registry: bool,
}

impl Run<'_> {
    /// For a person: the totals first, then the findings (crate::cli::findings).
    fn for_a_person(
        &self,
        ctx: &Ctx,
        verbose: bool,
        color: bool,
    ) -> Result<atip::lint::LintSummary, AtipError> {
        let mut findings = super::findings::Findings::new(verbose);
        let mut totals = lint_inputs(self.inputs, self.config, self.opts, |l| {
            findings.add(&l.report)
        });
        if self.registry {
            let registered = atip::lint::lint_registry(&ctx.dirs, self.config, self.opts, |l| {
                findings.add(&l.report)
            })?;
            totals.merge(&registered);
        }
        ctx.out.text(&findings.render(
            &totals.summary,
            ctx.width,
            atip::output::term::Style::new(color),
        ))?;
        Ok(totals)
    }

    /// For a program: each file's findings streamed in `format` as they come, the totals
    /// last; the first failure to write stdout is the error.
    fn printed(&self, ctx: &Ctx, format: Format) -> Result<atip::lint::LintSummary, AtipError> {
        let mut printer = Printer::new(std::io::BufWriter::new(ctx.out.stdout()), format)
            .with_catalogues(CATALOGUES);
        let mut write_error = None;
        let mut note = |r: std::io::Result<()>| {
            if let Err(e) = r
                && write_error.is_none()
            {
                write_error = Some(e);
            }
        };
        note(printer.begin());
        let mut totals = lint_inputs(self.inputs, self.config, self.opts, |l| {
            note(printer.file(&l.report))
        });
        if self.registry {
            let registered = atip::lint::lint_registry(&ctx.dirs, self.config, self.opts, |l| {
                note(printer.file(&l.report))
            });
            match registered {
                Ok(r) => totals.merge(&r),
                Err(e) => {
                    drop(printer);
                    return Err(e);
                }
            }
        }
        note(printer.end(&totals.summary));
        drop(printer);
        if let Some(e) = write_error {
            return Err(atip::output::stdout_failed(e));
        }
        Ok(totals)
    }
}

/// Says how many findings `--fix` fixed; the exit status the totals call for.
fn finish(args: &Args, ctx: &Ctx, totals: &atip::lint::LintSummary) -> ExitStatus {
    if args.fix {
        ctx.out.note(format_args!(
            "fixed {} finding{}",
            totals.fixed,
            if totals.fixed == 1 { "" } else { "s" }
        ));
    }
    let s = &totals.summary;
    if s.missing > 0 {
        ExitStatus::Error(atip::output::Category::Input)
    } else if s.invalid > 0 || (args.deny_warnings && s.warnings > 0) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    }
}
