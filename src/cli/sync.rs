//! `atip sync`: bring the remote registries' shims up to date and register them — a
//! scan whose report is about the registries in `registries.json` (`spec/registries.md`).
//!
//! Only the flags and the rendering; the work is `atip::discover::scan` with the remote
//! source (`atip::remote::sync`).

use crate::Ctx;
use atip::discover::report::ScanReport;
use atip::discover::{self, ProbeMode, ScanOptions};
use atip::output::ExitStatus;
use atip::output::Verbosity;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::remote::config::{self, RegistriesFile};
use atip::remote::sync::{CatalogStatus, RegistrySync, RemoteOptions};
use std::ffi::OsString;
use std::path::PathBuf;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Fetch the shims of the remote registries for the binaries here, verify and register them.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Re-check every catalog and shim now (conditional requests), not only those
    /// checked more than 24 h ago.
    #[arg(long, env = "ATIP_REFRESH", value_parser = clap::builder::BoolishValueParser::new())]
    refresh: bool,
    /// Request nothing: register from the cache (also ATIP_OFFLINE=1).
    #[arg(long)]
    offline: bool,
    /// Time limit of each request, e.g. 10s.
    #[arg(long, default_value = "10s", value_parser = atip::units::parse_duration)]
    timeout: std::time::Duration,
    /// Time limit of all the requests together.
    #[arg(long, default_value = "2m", value_parser = atip::units::parse_duration)]
    deadline: std::time::Duration,
    /// Requests in flight at once.
    #[arg(long, short = 'j', default_value_t = 8, value_name = "N")]
    jobs: usize,
    /// Directories to scan instead of $PATH, colon-separated like PATH.
    #[arg(long, value_name = "DIR:DIR…")]
    path: Option<OsString>,
    /// Also read local shims from this directory (they outrank remote ones; repeatable).
    #[arg(long = "shims", value_name = "DIR")]
    shims: Vec<PathBuf>,
    /// Which executables the scan may run with --agent (as `atip scan --probe`).
    #[arg(long, value_enum, default_value = "auto")]
    probe: ProbeMode,
}

/// What became of a registry's catalog, in a few words.
fn catalog_words(r: &RegistrySync) -> String {
    let what = match r.catalog {
        CatalogStatus::Fetched => "fetched",
        CatalogStatus::NotModified => "not modified",
        CatalogStatus::Fresh => "fresh in cache",
        CatalogStatus::Cached => "from cache",
        CatalogStatus::Failed => "failed",
    };
    let mut t = what.to_string();
    if r.offline {
        t.push_str(" (offline)");
    }
    if let Some(g) = r.generation {
        t.push_str(&format!(", gen {g}"));
    }
    t
}

/// Bytes as a person reads them: `512 B`, `12 KB`, `3.4 MB`.
fn bytes(n: u64) -> String {
    match n {
        0..1_000 => format!("{n} B"),
        1_000..1_000_000 => format!("{} KB", n.div_ceil(1_000)),
        _ => format!("{:.1} MB", n as f64 / 1_000_000.0),
    }
}

/// `atip sync` for a person: the verdict and count first, a table of the registries,
/// then what needs attention (refused catalogs and shims, failures), a few unless
/// `verbose`; with `verbose` also each registry's URL, expiry and traffic.
fn text(report: &ScanReport, verbose: bool, width: Option<usize>, style: Style) -> String {
    let remote = &report.remote;
    let from_remote = report
        .tools
        .iter()
        .filter(|t| t.source == atip::registry::Source::Remote)
        .count();
    let trouble: Vec<String> = remote.iter().flat_map(attention).collect();
    let (mark, paint) = if trouble.is_empty() {
        ("✓", Paint::Bold)
    } else {
        ("✗", Paint::Red)
    };
    let mut t = style.paint(
        Some(paint),
        &format!(
            "{mark} {} from {}",
            term::plural(from_remote, "tool registered", "tools registered"),
            term::plural(remote.len(), "remote registry", "remote registries")
        ),
    );
    t.push('\n');
    t.push_str(&term::wrap_long_lines(
        &format!("  registry: {}\n", report.registry.path.display()),
        width,
    ));
    t.push('\n');
    t.push_str(&table(remote, width, style));
    if verbose {
        t.push_str(&details(remote, width, style));
    }
    if !trouble.is_empty() {
        t.push('\n');
        t.push_str(&style.paint(Some(Paint::Bold), "Needs attention"));
        t.push('\n');
        let shown = if verbose { usize::MAX } else { 6 };
        for line in trouble.iter().take(shown) {
            if verbose {
                t.push_str(&term::wrap_whole("  - ", line, width, 4));
            } else {
                t.push_str(&term::wrap("  - ", line, width, 4));
            }
        }
        if trouble.len() > shown {
            t.push_str(&format!(
                "  and {} more: run again with --verbose\n",
                term::count(trouble.len() - shown)
            ));
        }
    }
    t
}

/// One row per registry: its catalog, the tools it lists, the shims used of those
/// wanted, and how many were signed by a trusted key.
fn table(remote: &[RegistrySync], width: Option<usize>, style: Style) -> String {
    let mut table = Table::new(Some(&[
        "REGISTRY",
        "CATALOG",
        "TOOLS",
        "SHIMS USED",
        "SIGNED",
    ]))
    .flex(1)
    .shrink(0, 8);
    for r in remote {
        let catalog = catalog_words(r);
        let failed = r.catalog == CatalogStatus::Failed || r.catalog_refused.is_some();
        table.row(vec![
            Cell::painted(term::one_line(&r.name), Some(Paint::Bold)),
            Cell::painted(catalog, failed.then_some(Paint::Red)),
            Cell::new(term::count(r.listed)),
            Cell::new(format!(
                "{} of {}",
                term::count(r.used),
                term::count(r.wanted)
            )),
            Cell::new(term::count(r.verified)),
        ]);
    }
    table.render(width, style)
}

/// Each registry's URL, expiry and traffic (`--verbose`).
fn details(remote: &[RegistrySync], width: Option<usize>, style: Style) -> String {
    let mut t = String::new();
    for r in remote {
        t.push('\n');
        t.push_str(&style.paint(Some(Paint::Bold), &term::one_line(&r.name)));
        t.push('\n');
        let mut d = format!("  url       {}\n", term::one_line(&r.url));
        if let Some(e) = &r.expires {
            d.push_str(&format!("  expires   {e}\n"));
        }
        d.push_str(&format!(
            "  requests  {} ({} not modified), {}\n",
            r.requests,
            r.not_modified,
            bytes(r.bytes)
        ));
        t.push_str(&term::wrap_long_lines(&d, width));
    }
    t
}

/// What went wrong with one registry, one line each: a refused catalog, refused shims,
/// the run's failure.
fn attention(r: &RegistrySync) -> Vec<String> {
    let name = term::one_line(&r.name);
    let mut out = Vec::new();
    if let Some(m) = &r.catalog_refused {
        out.push(format!("{name}: refused its catalog: {m}"));
    }
    for s in &r.refused {
        out.push(format!("{name}: refused {}: {}", s.hash, s.reason));
    }
    if let Some(e) = &r.error {
        out.push(format!("{name}: {e}"));
    }
    out
}

/// Runs `atip sync`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("sync", &[OutputFormat::Text, OutputFormat::Json])?;
    let opts = options(args, ctx)?;
    let report =
        discover::scan(&ctx.dirs, &opts, &discover::NoProgress).map_err(AtipError::from)?;
    if ctx.output.is_json() {
        ctx.out.json(&report)?;
    } else {
        let verbose = ctx.out.verbosity() >= Verbosity::Verbose;
        ctx.out.text(&text(
            &report,
            verbose,
            ctx.width,
            Style::new(ctx.out.stdout_color()),
        ))?;
    }
    ctx.out.warnings(&report.warnings);
    outcome(&report)
}

/// The scan a sync is: the flags checked, the registries file read.
fn options(args: Args, ctx: &Ctx) -> Result<ScanOptions, AtipError> {
    if args.jobs == 0 {
        return Err(AtipError::usage("--jobs must be at least 1"));
    }
    if args.timeout.is_zero() || args.deadline.is_zero() {
        return Err(AtipError::usage(
            "--timeout and --deadline must be more than 0",
        ));
    }
    let path = config::path(&ctx.dirs.config, &ctx.env);
    let file = RegistriesFile::load(&path)?;
    if file.active().is_empty() {
        return Err(AtipError::new(
            ErrorCode::NoRegistries,
            format!("no enabled remote registry in {}", path.display()),
        )
        .hint("add one with `atip registry add NAME URL`"));
    }
    Ok(ScanOptions {
        path: args.path,
        allow_dirs: Vec::new(),
        shim_dirs: args.shims,
        builtin_shims: true,
        probe: args.probe,
        timeout: std::time::Duration::from_secs(2),
        jobs: discover::default_jobs(),
        skip: Vec::new(),
        refresh: false,
        dry_run: false,
        cancel: Some(crate::cli::scan::interrupt_flag()),
        after_commit: Some(std::sync::Arc::new(atip::catalog::OnCommit)),
        explain: None,
        infer: true,
        convert: false,
        manpath: None,
        env: ctx.env.clone(),
        // More follows the scan: its working state is freed.
        one_shot: false,
        remote: RemoteOptions {
            refresh: args.refresh,
            offline: args.offline || ctx.env.flag("ATIP_OFFLINE"),
            timeout: args.timeout,
            deadline: args.deadline,
            jobs: args.jobs,
        },
    })
}

/// The exit of a finished sync: a refused catalog, a failed registry or refused shims
/// are errors (the report is out already); a failed local source is a failure.
fn outcome(report: &ScanReport) -> Result<ExitStatus, AtipError> {
    let rolled_back: Vec<String> = report
        .remote
        .iter()
        .filter_map(|r| {
            r.catalog_refused
                .as_ref()
                .map(|e| format!("{}: {e}", r.name))
        })
        .collect();
    if !rolled_back.is_empty() {
        return Err(AtipError::new(
            ErrorCode::CatalogRefused,
            format!("catalog refused: {}", rolled_back.join("; ")),
        )
        .hint("a registry moves forward only: the accepted catalog and every registry entry were kept; if the publisher really restarted its generations, `atip registry remove` and `add` it again"));
    }
    let failed: Vec<String> = report
        .remote
        .iter()
        .filter_map(|r| r.error.as_ref().map(|e| format!("{}: {e}", r.name)))
        .collect();
    if !failed.is_empty() {
        return Err(AtipError::new(
            ErrorCode::SyncFailed,
            format!("sync incomplete: {}", failed.join("; ")),
        )
        .hint("the cached shims and every registry entry were kept; run `atip sync` again later"));
    }
    let refused: usize = report.remote.iter().map(|r| r.refused.len()).sum();
    if refused > 0 {
        return Err(AtipError::new(
            ErrorCode::ShimsRefused,
            format!("{refused} remote shim(s) failed verification and were not used"),
        )
        .hint(
            "see `refused` in the report; the registry's publisher must rebuild or re-sign them",
        ));
    }
    if !report.source_failures.is_empty() {
        return Ok(ExitStatus::Failure);
    }
    Ok(ExitStatus::Success)
}
