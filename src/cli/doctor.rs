//! `atip doctor`: check every registry entry (binary there, executable and unchanged;
//! metadata file present, intact and valid) and `registry.json` against its schema;
//! say what to do about each problem. Exit 1 when anything is wrong, 0 when healthy.
//! Read-only; never takes the writer lock.

use crate::Ctx;
use crate::cli::list::printable;
use atip::output::ExitStatus;
use atip::output::{AtipError, OutputFormat};
use atip::registry::doctor;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Check every registry entry and say what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip doctor`; returns the exit code.
pub fn run(_args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("doctor", &[OutputFormat::Text, OutputFormat::Json])?;
    let report = doctor::check(&ctx.dirs);
    if ctx.output == OutputFormat::Json {
        ctx.out.json(&report)?;
    } else {
        let mut text = String::new();
        for p in &report.problems {
            let who = p.tool.as_deref().unwrap_or("registry");
            text.push_str(&format!(
                "✗ {}: {}\n  fix: {}\n",
                printable(who),
                printable(&p.message),
                p.fix
            ));
        }
        for n in &report.notes {
            text.push_str(&format!("note: {}\n", printable(n)));
        }
        if report.healthy {
            text.push_str(&format!(
                "✓ {}: {} tool{} checked, no problems\n",
                report.registry.display(),
                report.tools,
                if report.tools == 1 { "" } else { "s" }
            ));
        } else {
            text.push_str(&format!(
                "{} problem{} in {} ({} tool{} checked)\n",
                report.problems.len(),
                if report.problems.len() == 1 { "" } else { "s" },
                report.registry.display(),
                report.tools,
                if report.tools == 1 { "" } else { "s" }
            ));
        }
        ctx.out.text(&text)?;
    }
    Ok(ExitStatus::verdict(report.healthy))
}
