//! `atip scan`: find ATIP tools on PATH and record them in the registry.
//!
//! Only the flags and the rendering; the scan itself is `atip::discover::scan`.

use crate::Ctx;
use atip::discover::report::{ProbeWhy, ScanReport, ToolStatus};
use atip::discover::{self, ProbeMode, Progress, ScanOptions};
use atip::output::ExitStatus;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, OutputFormat, Verbosity};
use std::ffi::OsString;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A reason's name as the JSON report writes it (`exit-status`, `world-writable`).
/// (A macro: naming serde's trait would make serde a dependency of the binary.)
macro_rules! kebab {
    ($value:expr) => {
        serde_json::to_value($value)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
}

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Find ATIP tools on PATH and record them in the registry.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directories to scan instead of $PATH, colon-separated like PATH.
    #[arg(long, value_name = "DIR:DIR…")]
    path: Option<OsString>,
    /// Also scan this directory, after PATH, trusting its owner (repeatable).
    #[arg(long = "allow-dir", value_name = "DIR")]
    allow_dir: Vec<PathBuf>,
    /// Also read shims from this directory (NAME.json, sha256/HEX.json); the first wins (repeatable).
    #[arg(long = "shims", value_name = "DIR")]
    shims: Vec<PathBuf>,
    /// Leave out the shims built into atip (git, curl, tar, …; the lowest-precedence layer).
    #[arg(long)]
    no_builtin_shims: bool,
    /// Do not infer metadata from installed man pages (the lowest-precedence source).
    #[arg(long)]
    no_infer: bool,
    /// Which executables may be run with --agent: auto (only those showing an ATIP sign
    /// or allowlisted in config.json), help (also those whose --help mentions --agent),
    /// all (everything, unsafe), none (shims and cached answers only).
    #[arg(long, value_enum, default_value = "auto")]
    probe: ProbeMode,
    /// Time limit of each probe, e.g. 2s or 500ms.
    #[arg(long, default_value = "2s", value_parser = atip::units::parse_duration)]
    timeout: std::time::Duration,
    /// Probes run at once [default: 4 × CPUs, at least 8].
    #[arg(long, short = 'j', value_name = "N")]
    jobs: Option<usize>,
    /// Leave out executables whose name matches this glob (repeatable).
    #[arg(long, value_name = "GLOB")]
    skip: Vec<String>,
    /// Ignore the cache: read, hash and probe everything again.
    #[arg(long, env = "ATIP_REFRESH", value_parser = clap::builder::BoolishValueParser::new())]
    refresh: bool,
    /// List what would be probed; probe nothing, write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Request nothing from remote registries: use their cached catalogs and shims
    /// (also ATIP_OFFLINE=1).
    #[arg(long)]
    offline: bool,
    /// Convert every recognised Tooli app (runs its own Python interpreter to print the
    /// app's manifest, which imports the app's code), not only those on the config
    /// allowlist.
    #[arg(long)]
    convert: bool,
    /// Print, instead of the report, every piece of evidence about this name, the source
    /// chosen and why the others lost (the scan itself runs as usual).
    #[arg(long, value_name = "NAME")]
    explain: Option<String>,
}

struct Bar(indicatif::ProgressBar);

impl Progress for Bar {
    fn start(&self, total: u64) {
        self.0.set_length(total);
    }
    fn tick(&self, name: &str) {
        self.0.set_message(name.to_owned());
        self.0.inc(1);
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// Progress on a terminal that must get no escape sequence (`NO_COLOR`, `TERM=dumb`,
/// `--color never`): one plain line when the work on executables starts, so a long first scan does
/// not look stuck, and nothing redrawn.
struct PlainProgress<'a>(&'a atip::output::Printer);

impl Progress for PlainProgress<'_> {
    fn start(&self, total: u64) {
        if total > 0 {
            let n = usize::try_from(total).unwrap_or(usize::MAX);
            self.0.stderr(&format!(
                "checking {}…\n",
                term::plural(n, "executable", "executables")
            ));
        }
    }
    fn tick(&self, _: &str) {}
    fn finish(&self) {}
}

/// The flag SIGINT, SIGTERM and SIGHUP set: probes run in their own sessions, so a
/// Ctrl-C does not reach them; atip kills their groups itself and exits without writing
/// (`cli::signals`).
pub(crate) fn interrupt_flag() -> Arc<AtomicBool> {
    crate::cli::signals::install(crate::cli::signals::Mode::WindDown)
}

/// Runs `atip scan`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    use OutputFormat::{Json, Jsonl, Text};
    limit_malloc_arenas();
    ctx.output.require("scan", &[Text, Json, Jsonl])?;
    check_args(&args, ctx)?;
    let opts = scan_options(args, ctx);
    let report = scan_with_progress(&opts, ctx)?;
    let code = source_failures(&report, ctx);
    if let Some(ex) = &report.explain {
        if ctx.output.is_json() {
            ctx.out.json(ex)?;
        } else {
            ctx.out.text(&ex.to_text())?;
        }
        return Ok(code);
    }
    match ctx.output {
        Json => ctx.out.json(&report)?,
        Jsonl => ctx.out.json_lines(&report.tools)?,
        _ => ctx.out.text(&render(
            &report,
            ctx.out.verbosity() == Verbosity::Verbose,
            ctx.width,
            Style::new(ctx.out.stdout_color()),
        ))?,
    }
    ctx.out.warnings(&report.warnings);
    // The process exits next: the report's thousands of strings are not freed one by one.
    std::mem::forget(report);
    Ok(code)
}

/// Refuses what cannot work (no jobs, no time) and warns of `--probe all`.
fn check_args(args: &Args, ctx: &Ctx) -> Result<(), AtipError> {
    if args.jobs == Some(0) {
        return Err(AtipError::usage("--jobs must be at least 1"));
    }
    if args.timeout.is_zero() {
        return Err(AtipError::usage("--timeout must be more than 0"));
    }
    if args.probe == ProbeMode::All && !args.dry_run {
        ctx.out.warn(
            "--probe all runs EVERY executable on PATH with --agent, including programs that know nothing of ATIP; prefer --probe auto or --probe help",
        );
    }
    Ok(())
}

/// The library's options from the flags and the run context.
fn scan_options(args: Args, ctx: &Ctx) -> ScanOptions {
    ScanOptions {
        path: args.path,
        allow_dirs: args.allow_dir,
        shim_dirs: args.shims,
        builtin_shims: !args.no_builtin_shims,
        probe: args.probe,
        timeout: args.timeout,
        jobs: args.jobs.unwrap_or_else(discover::default_jobs),
        skip: args.skip,
        refresh: args.refresh,
        dry_run: args.dry_run,
        cancel: Some(interrupt_flag()),
        after_commit: Some(std::sync::Arc::new(atip::catalog::OnCommit)),
        explain: args.explain,
        infer: !args.no_infer,
        convert: args.convert,
        manpath: None,
        env: ctx.env.clone(),
        // The process exits after printing the report.
        one_shot: true,
        remote: atip::remote::sync::RemoteOptions {
            refresh: args.refresh,
            offline: args.offline || ctx.env.flag("ATIP_OFFLINE"),
            ..Default::default()
        },
    }
}

/// The scan, with a progress bar on a terminal that takes escapes, one plain line on one
/// that does not, and nothing when quiet or piped.
fn scan_with_progress(opts: &ScanOptions, ctx: &Ctx) -> Result<ScanReport, AtipError> {
    let quiet = ctx.out.verbosity() == Verbosity::Quiet;
    let report = if !quiet && ctx.out.stderr_escapes(&ctx.env) {
        let bar = indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template("probing {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        discover::scan(&ctx.dirs, opts, &Bar(bar))
    } else if !quiet && std::io::stderr().is_terminal() {
        discover::scan(&ctx.dirs, opts, &PlainProgress(&ctx.out))
    } else {
        discover::scan(&ctx.dirs, opts, &discover::NoProgress)
    };
    report.map_err(AtipError::from)
}

/// The exit status the metadata sources decide: a failure when one failed (in JSON the
/// report's `sourceFailures` says it; in text, stderr says it too).
fn source_failures(report: &ScanReport, ctx: &Ctx) -> ExitStatus {
    if report.source_failures.is_empty() {
        return ExitStatus::Success;
    }
    if !ctx.output.is_json() {
        for f in &report.source_failures {
            ctx.out.stderr(&format!(
                "error: metadata source {} failed: {}; the tools it provided before were kept\n",
                f.source, f.message
            ));
        }
    }
    ExitStatus::Failure
}

/// Names are listed when there are at most this many of a kind, else counted.
const FEW: usize = 6;

/// The scan for a person: what was looked at, the tools by source, what changed since
/// the last scan, what needs attention, then the hints. `verbose` adds every tool, every
/// failure and everything skipped.
pub(crate) fn render(r: &ScanReport, verbose: bool, width: Option<usize>, style: Style) -> String {
    let mut p = Page {
        t: String::new(),
        width,
        style,
    };
    if r.dry_run {
        p.line(&p.paint(Paint::Bold, "Dry run: nothing probed, nothing written."));
        if let Some(plan) = &r.would_probe {
            p.probe_plan(plan, verbose);
        }
    }
    p.totals(r);
    p.tools_by_source(r);
    if !r.dry_run {
        p.changes(r);
    }
    p.remotes(r);
    p.needs_attention(&attention(r), verbose);
    if verbose {
        verbose_details(&mut p.t, r, width, style);
    }
    if !r.hints.is_empty() {
        p.t.push('\n');
    }
    for h in &r.hints {
        p.t.push_str(&wrap_hint(h, width, style));
    }
    if !r.dry_run && !r.tools.is_empty() && !verbose {
        let next = p.paint(
            Paint::Dim,
            "Next: atip list · atip search QUERY · atip get NAME · atip scan --verbose",
        );
        p.t.push('\n');
        p.line(&next);
    }
    p.t
}

/// The scan's page as it is written: the text so far, the terminal's width and the style.
struct Page {
    t: String,
    width: Option<usize>,
    style: Style,
}

impl Page {
    /// One line, given whole (already cut and painted).
    fn line(&mut self, line: &str) {
        self.t.push_str(line);
        self.t.push('\n');
    }

    /// `line` cut to the width, then painted: the order every one-line message uses.
    fn paint(&self, paint: Paint, line: &str) -> String {
        self.style.paint(Some(paint), &term::fit(line, self.width))
    }

    /// A heading after a blank line (headings are not cut: they are short).
    fn heading(&mut self, paint: Paint, title: &str) {
        let title = self.style.paint(Some(paint), title);
        let _ = writeln!(self.t, "\n{title}");
    }

    fn table(&mut self, table: &Table) {
        self.t.push_str(&table.render(self.width, self.style));
    }

    /// `--dry-run`: what would run with `--agent` and why, the first few unless `verbose`.
    fn probe_plan(&mut self, plan: &[discover::report::PlannedProbe], verbose: bool) {
        let what = if plan.is_empty() {
            "nothing".to_string()
        } else {
            term::plural(plan.len(), "executable", "executables")
        };
        self.line(&term::fit(
            &format!("Would run with --agent: {what}"),
            self.width,
        ));
        let mut table = Table::new(None).indent(2).flex(1);
        let shown = if verbose { plan.len() } else { FEW };
        for p in plan.iter().take(shown) {
            table.row(vec![
                Cell::painted(term::one_line(&p.name), Some(Paint::Bold)),
                Cell::painted(
                    term::one_line(&p.path.display().to_string()),
                    Some(Paint::Dim),
                ),
                Cell::new(probe_why(p.why)),
            ]);
        }
        self.table(&table);
        if plan.len() > shown {
            let more = format!(
                "  and {} more (--verbose lists them)",
                term::count(plan.len() - shown)
            );
            self.line(&self.paint(Paint::Dim, &more));
        }
    }

    /// What was looked at, what was run, how many tools the registry holds and where.
    fn totals(&mut self, r: &ScanReport) {
        let s = &r.summary;
        let ran = if s.probed + s.converted == 0 {
            "nothing run".to_string()
        } else {
            format!(
                "{} run",
                term::plural(s.probed + s.converted, "program", "programs")
            )
        };
        let scanned = format!(
            "Scanned {}: {}, {}; {ran}.",
            term::plural(s.dirs, "directory", "directories"),
            term::plural(s.executables, "executable", "executables"),
            term::plural(s.names, "name", "names"),
        );
        self.line(&term::fit(&scanned, self.width));
        let where_ = if r.dry_run {
            "would be in the registry".to_string()
        } else if r.registry.written {
            format!("in the registry (written): {}", r.registry.path.display())
        } else {
            format!("in the registry (unchanged): {}", r.registry.path.display())
        };
        let tools = term::plural(r.tools.len(), "tool", "tools");
        self.line(&term::fit(&format!("{tools} {where_}"), self.width));
        if let Some(b) = &r.registry.corrupt_backup {
            let moved = format!("The old registry was corrupt; moved to {}.", b.display());
            self.line(&self.paint(Paint::Yellow, &moved));
        }
    }

    /// The tools by source, most first, and how many names have no description.
    fn tools_by_source(&mut self, r: &ScanReport) {
        let mut by_source: std::collections::BTreeMap<atip::registry::Source, usize> =
            Default::default();
        for tool in &r.tools {
            *by_source.entry(tool.source).or_default() += 1;
        }
        let mut sources: Vec<_> = by_source.into_iter().collect();
        sources.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        if !sources.is_empty() {
            let title = self.style.paint(Some(Paint::Bold), "Tools by source");
            let _ = writeln!(self.t, "\n{title}");
            let mut table = Table::new(None).indent(2).flex(2);
            for (source, n) in &sources {
                table.row(vec![
                    Cell::new(super::words::source_word(*source)),
                    Cell::new(format!("{:>5}", term::count(*n))),
                    Cell::painted(super::words::source_meaning(*source), Some(Paint::Dim)),
                ]);
            }
            self.table(&table);
        }
        let undescribed = r.summary.sources.get("none").copied().unwrap_or(0);
        if undescribed > 0 {
            let line = format!(
                "  {} without a description (no ATIP answer, shim or man page)",
                term::plural(undescribed, "name", "names")
            );
            self.line(&self.paint(Paint::Dim, &line));
        }
    }

    /// What changed since the last scan: one line when nothing did or everything is new,
    /// else a table of the kinds of change with their names when few.
    fn changes(&mut self, r: &ScanReport) {
        let names_with = |status: ToolStatus| -> Vec<&str> {
            r.tools
                .iter()
                .filter(|x| x.status == status)
                .map(|x| x.name.as_str())
                .collect()
        };
        let changes = [
            ("new", names_with(ToolStatus::New)),
            ("changed", names_with(ToolStatus::Updated)),
            (
                "removed",
                r.removed.iter().map(String::as_str).collect::<Vec<_>>(),
            ),
            ("kept (their source failed)", names_with(ToolStatus::Kept)),
        ];
        let unchanged = r.summary.unchanged;
        let all_new = changes[0].1.len() == r.tools.len()
            && changes[1..].iter().all(|(_, v)| v.is_empty())
            && unchanged == 0;
        let since = self.style.paint(Some(Paint::Bold), "Since the last scan:");
        if all_new && changes[0].1.len() > FEW {
            // A first scan: a table of one row would say less than this line.
            let tools = term::plural(r.tools.len(), "tool", "tools");
            let _ = writeln!(self.t, "\n{since} all {tools} are new.");
            return;
        }
        if changes.iter().all(|(_, v)| v.is_empty()) {
            let _ = writeln!(self.t, "\n{since} nothing changed.");
            return;
        }
        self.heading(Paint::Bold, "Since the last scan");
        let mut table = Table::new(None).indent(2).flex(2);
        for (what, names) in changes.iter().filter(|(_, names)| !names.is_empty()) {
            let list = if names.len() <= FEW {
                term::some_names(names, FEW)
            } else {
                String::new()
            };
            table.row(vec![
                Cell::new(*what),
                Cell::new(format!("{:>5}", term::count(names.len()))),
                Cell::new(list),
            ]);
        }
        if unchanged > 0 {
            table.row(vec![
                Cell::painted("unchanged", Some(Paint::Dim)),
                Cell::painted(format!("{:>5}", term::count(unchanged)), Some(Paint::Dim)),
                Cell::new(""),
            ]);
        }
        self.table(&table);
    }

    /// Remote registries, one line each.
    fn remotes(&mut self, r: &ScanReport) {
        for reg in &r.remote {
            let line = format!(
                "Remote registry {}: {} used ({} signed by a trusted key), {} refused, {}{}",
                term::one_line(&reg.name),
                term::count(reg.used),
                term::count(reg.verified),
                term::count(reg.refused.len()),
                term::plural(reg.requests as usize, "request", "requests"),
                if reg.offline { ", offline" } else { "" },
            );
            self.line(&term::fit(&line, self.width));
        }
    }

    /// The table of what needs a person's attention, failures in red; the first few
    /// unless `verbose`.
    fn needs_attention(&mut self, attention: &[(&str, String)], verbose: bool) {
        if attention.is_empty() {
            return;
        }
        let title = format!("Needs attention ({})", term::count(attention.len()));
        self.heading(Paint::Yellow, &title);
        let shown = if verbose { attention.len() } else { FEW };
        let mut table = Table::new(None).indent(2).flex(1);
        for (what, detail) in attention.iter().take(shown) {
            let paint = if what.contains("failed") || what.contains("refused") {
                Some(Paint::Red)
            } else {
                Some(Paint::Yellow)
            };
            table.row(vec![Cell::painted(*what, paint), Cell::new(detail.clone())]);
        }
        self.table(&table);
        if attention.len() > shown {
            let more = format!(
                "  and {} more: atip scan --verbose",
                term::count(attention.len() - shown)
            );
            self.line(&self.paint(Paint::Dim, &more));
        }
    }
}

/// Why `--dry-run` would run an executable with `--agent`, in words.
fn probe_why(why: ProbeWhy) -> &'static str {
    match why {
        ProbeWhy::Sign => "shows an ATIP sign",
        ProbeWhy::Allowlist => "on the config allowlist",
        ProbeWhy::Help => "--help checked first",
        ProbeWhy::All => "--probe all",
        ProbeWhy::Convert => "a Tooli app: its manifest would be converted",
    }
}

/// What needs a person's attention, as (kind, detail): failed sources, probes and
/// remotes, refused files, skipped unsafe directories and the tools' own warnings.
fn attention(r: &ScanReport) -> Vec<(&'static str, String)> {
    let mut attention: Vec<(&'static str, String)> = Vec::new();
    for f in &r.source_failures {
        let detail = format!(
            "{}: {}",
            term::one_line(&f.source),
            term::one_line(&f.message)
        );
        attention.push(("source failed", detail));
    }
    for f in &r.failed {
        let detail = format!(
            "{} ({}): {}{}",
            term::one_line(&f.name),
            kebab!(f.reason),
            term::one_line(&f.message),
            if f.cached { " (cached)" } else { "" }
        );
        attention.push(("probe failed", detail));
    }
    for x in r.shims.rejected.iter().chain(&r.shims.rejected_patterns) {
        let detail = format!(
            "{}: {}",
            term::one_line(&x.path.display().to_string()),
            term::one_line(&x.message)
        );
        attention.push(("refused file", detail));
    }
    for reg in &r.remote {
        let name = term::one_line(&reg.name);
        if let Some(e) = &reg.error {
            attention.push(("remote failed", format!("{name}: {}", term::one_line(e))));
        }
        for refused in &reg.refused {
            let detail = format!("{name}: {}", term::one_line(&format!("{refused:?}")));
            attention.push(("remote refused", detail));
        }
    }
    for d in &r.skipped.dirs {
        let reason = kebab!(d.reason);
        if matches!(
            reason.as_str(),
            "world-writable" | "foreign-owner" | "unreadable"
        ) {
            let detail = format!("{} ({reason})", term::one_line(&d.path));
            attention.push(("dir skipped", detail));
        }
    }
    for tool in &r.tools {
        for w in &tool.warnings {
            let detail = format!("{}: {}", term::one_line(&tool.name), term::one_line(w));
            attention.push(("warning", detail));
        }
    }
    attention
}

/// `--verbose`: every tool with its status, and every skipped directory and count.
fn verbose_details(t: &mut String, r: &ScanReport, width: Option<usize>, style: Style) {
    let _ = writeln!(t, "\n{}", style.paint(Some(Paint::Bold), "Tools"));
    let mut table = Table::new(Some(&["STATUS", "NAME", "SOURCE", "TRUST", "PATH"])).flex(4);
    for tool in &r.tools {
        let status = match tool.status {
            ToolStatus::New => "new",
            ToolStatus::Updated => "changed",
            ToolStatus::Unchanged => "unchanged",
            ToolStatus::Planned => "would register",
            ToolStatus::Kept => "kept",
        };
        table.row(vec![
            Cell::new(status),
            Cell::painted(term::one_line(&tool.name), Some(Paint::Bold)),
            Cell::new(super::words::source_word(tool.source)),
            Cell::new(term::one_line(&tool.trust)),
            Cell::painted(
                term::one_line(&tool.path.display().to_string()),
                Some(Paint::Dim),
            ),
        ]);
    }
    for name in &r.removed {
        table.row(vec![
            Cell::new("removed"),
            Cell::painted(term::one_line(name), Some(Paint::Bold)),
        ]);
    }
    t.push_str(&table.render(width, style));
    let fit = |line: &str| match width {
        Some(w) => term::cut(line, w),
        None => line.to_string(),
    };
    for f in &r.failed {
        for d in f.diagnostics.iter().take(5) {
            let _ = writeln!(
                t,
                "{}",
                fit(&format!(
                    "  {}: {} {} at {:?}: {}",
                    term::one_line(&f.name),
                    d.severity,
                    d.rule,
                    d.pointer,
                    term::one_line(&d.message)
                ))
            );
        }
    }
    if !r.skipped.counts.is_empty() {
        let counts: Vec<String> = r
            .skipped
            .counts
            .iter()
            .map(|(k, v)| format!("{} {k}", term::count(*v)))
            .collect();
        let _ = writeln!(t, "\n{}", fit(&format!("Skipped: {}", counts.join(", "))));
        for d in &r.skipped.dirs {
            let reason = kebab!(d.reason);
            let _ = writeln!(
                t,
                "{}",
                fit(&format!("  dir {}: {reason}", term::one_line(&d.path)))
            );
        }
    }
}

/// `hint: …` wrapped at word boundaries, continuation lines indented under the text.
fn wrap_hint(hint: &str, width: Option<usize>, style: Style) -> String {
    let label = style.paint(Some(Paint::Cyan), "hint");
    let text = term::one_line(hint);
    let Some(w) = width else {
        return format!("{label}: {text}\n");
    };
    let room = w.saturating_sub(6).max(1);
    let mut lines: Vec<String> = vec![String::new()];
    for word in text.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && term::width(line) + 1 + term::width(word) > room {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    let mut out = String::new();
    for (i, l) in lines.iter().enumerate() {
        let lead = if i == 0 {
            format!("{label}: ")
        } else {
            " ".repeat(6)
        };
        let _ = writeln!(out, "{lead}{}", term::cut(l, room));
    }
    out
}

/// A scan runs a pool per CPU for its CPU work and more threads that mostly wait (probes,
/// fsyncs). glibc gives threads up to 8 malloc arenas per CPU, and each arena keeps the
/// memory it once held: measured on this machine's PATH, the scan's peak was 64–66 MB
/// with the default and 59.7 MB with one arena per CPU, at the same CPU time. Called
/// before the scan starts any thread.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cpus = atip::statat::cpus().unwrap_or(1);
        let arenas = libc::c_int::try_from(cpus).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets an allocator parameter; no thread allocates yet
        // apart from this one, and glibc applies it to arenas made from now on.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
