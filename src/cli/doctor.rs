//! `atip doctor`: check every registry entry (binary there, executable and unchanged;
//! metadata file present, intact and valid) and `registry.json` against its schema;
//! say what to do about each problem. Exit 1 when anything is wrong, 0 when healthy.
//! Read-only; never takes the writer lock.
//!
//! Text for a person (spec/cli.md, terminal output): the verdict first, then one line
//! per problem fitting the terminal (at most [`SHOWN`]), then what to do, each fix once
//! with the tools it is for; `--verbose` gives every problem in full with its fix.

use crate::Ctx;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, ExitStatus, OutputFormat, Verbosity};
use atip::registry::doctor::{self, Check, DoctorReport};
use std::fmt::Write as _;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Check every registry entry and say what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Problems listed as lines without `--verbose`; the rest are counted.
const SHOWN: usize = 10;

/// Runs `atip doctor`; returns the exit code.
pub fn run(_args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("doctor", &[OutputFormat::Text, OutputFormat::Json])?;
    let report = doctor::check(&ctx.dirs);
    if ctx.output == OutputFormat::Json {
        ctx.out.json(&report)?;
    } else {
        ctx.out.text(&render(
            &report,
            ctx.out.verbosity() == Verbosity::Verbose,
            ctx.width,
            Style::new(ctx.out.stdout_color()),
        ))?;
    }
    Ok(ExitStatus::verdict(report.healthy))
}

/// What a check found, in a few words (the message says the rest).
fn what(check: Check) -> &'static str {
    match check {
        Check::RegistryMissing => "no registry",
        Check::RegistryUnreadable => "registry unreadable",
        Check::RegistryCorrupt => "registry damaged",
        Check::RegistrySchema => "registry breaks its schema",
        Check::BinaryMissing => "program gone",
        Check::BinaryNotExecutable => "not executable",
        Check::BinaryUnreadable => "program unreadable",
        Check::BinaryChanged => "program changed",
        Check::MetadataMissing => "metadata gone",
        Check::MetadataUnreadable => "metadata unreadable",
        Check::MetadataTampered => "metadata modified",
        Check::MetadataInvalid => "metadata invalid",
    }
}

/// The doctor's report for a person.
pub(crate) fn render(
    r: &DoctorReport,
    verbose: bool,
    width: Option<usize>,
    style: Style,
) -> String {
    let mut t = headline(r, width, style);
    for n in &r.notes {
        t.push_str(&term::wrap("  note: ", n, width, 8));
    }
    if r.problems.is_empty() {
        return t;
    }
    t.push('\n');
    if verbose {
        for p in &r.problems {
            let head = format!("✗ {}: {}", who(p), what(p.check));
            let head = style.paint(Some(Paint::Red), &term::fit(&head, width));
            let _ = writeln!(t, "{head}");
            t.push_str(&term::wrap_whole("    ", &p.message, width, 4));
            t.push_str(&term::wrap_whole("    fix: ", &p.fix, width, 9));
        }
        return t;
    }
    let mut table = Table::new(Some(&["TOOL", "PROBLEM", "DETAIL"]))
        .flex(2)
        .shrink(0, 12);
    for p in r.problems.iter().take(SHOWN) {
        table.row(vec![
            Cell::new(who(p)),
            Cell::painted(what(p.check), Some(Paint::Red)),
            Cell::new(term::one_line(&p.message)),
        ]);
    }
    t.push_str(&table.render(width, style));
    if r.problems.len() > SHOWN {
        let more = format!("and {} more", term::count(r.problems.len() - SHOWN));
        let _ = writeln!(t, "{}", term::fit(&more, width));
    }
    what_to_do(&mut t, r, width, style);
    t.push('\n');
    t.push_str(&term::wrap(
        "",
        "Every problem in full with its fix: run again with --verbose",
        width,
        0,
    ));
    t
}

/// Whose problem it is: the tool's name, or the registry's.
fn who(p: &doctor::Problem) -> String {
    term::one_line(p.tool.as_deref().unwrap_or("registry"))
}

/// The verdict (how many tools were checked; the problems and how many tools they touch)
/// and the registry checked.
fn headline(r: &DoctorReport, width: Option<usize>, style: Style) -> String {
    let mut t = String::new();
    let tools = term::plural(r.tools, "tool", "tools");
    if r.healthy {
        let line = term::fit(&format!("✓ {tools} checked, no problems"), width);
        let _ = writeln!(t, "{}", style.paint(Some(Paint::Green), &line));
    } else {
        let mut affected: Vec<&str> = r
            .problems
            .iter()
            .filter_map(|p| p.tool.as_deref())
            .collect();
        affected.dedup();
        let line = format!(
            "✗ {} in {} of {tools} checked",
            term::plural(r.problems.len(), "problem", "problems"),
            term::count(affected.len()),
        );
        let line = term::fit(&line, width);
        let _ = writeln!(t, "{}", style.paint(Some(Paint::Red), &line));
    }
    let registry = format!(
        "  registry: {}",
        term::one_line(&r.registry.to_string_lossy())
    );
    let registry = term::fit(&registry, width);
    let _ = writeln!(t, "{}", style.paint(Some(Paint::Dim), &registry));
    t
}

/// "What to do": each fix once, with the tools it is for.
fn what_to_do(t: &mut String, r: &DoctorReport, width: Option<usize>, style: Style) {
    let mut fixes: Vec<(&str, Vec<String>)> = Vec::new();
    for p in &r.problems {
        match fixes.iter_mut().find(|(f, _)| *f == p.fix) {
            Some((_, names)) => {
                if !names.contains(&who(p)) {
                    names.push(who(p));
                }
            }
            None => fixes.push((&p.fix, vec![who(p)])),
        }
    }
    let _ = writeln!(t, "\n{}", style.paint(Some(Paint::Bold), "What to do"));
    for (fix, names) in fixes.iter().take(SHOWN) {
        let line = format!("{fix} ({})", term::some_names(names, 6));
        t.push_str(&term::wrap("  - ", &line, width, 4));
    }
    if fixes.len() > SHOWN {
        let _ = writeln!(t, "  and {} more", term::count(fixes.len() - SHOWN));
    }
}
