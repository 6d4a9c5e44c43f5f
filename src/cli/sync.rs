//! `atip sync`: bring the remote registries' shims up to date and register them — a
//! scan whose report is about the registries in `registries.json` (`spec/registries.md`).
//!
//! Only the flags and the rendering; the work is `atip::discover::scan` with the remote
//! source (`atip::remote::sync`).

use crate::Ctx;
use atip::discover::{self, ProbeMode, ScanOptions};
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::remote::config::{self, RegistriesFile};
use atip::remote::sync::{RegistrySync, RemoteOptions};
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

/// One registry's line of the text report.
fn line(r: &RegistrySync) -> String {
    let catalog = serde_json::to_value(r.catalog)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let generation = match (r.generation, &r.expires) {
        (Some(g), Some(e)) => format!(" (generation {g}, expires {e})"),
        _ => String::new(),
    };
    let mut t = format!(
        "{} {}: catalog {catalog}{generation}{}, {} tool(s) listed; {} shim(s) wanted, {} used ({} signed by a trusted key); {} request(s), {} not modified, {} byte(s)\n",
        r.name,
        r.url,
        if r.offline { " (offline)" } else { "" },
        r.listed,
        r.wanted,
        r.used,
        r.verified,
        r.requests,
        r.not_modified,
        r.bytes
    );
    if let Some(m) = &r.catalog_refused {
        t.push_str(&format!("  refused its catalog: {m}\n"));
    }
    for s in &r.refused {
        t.push_str(&format!("  refused {}: {}\n", s.hash, s.reason));
    }
    if let Some(e) = &r.error {
        t.push_str(&format!("  error: {e}\n"));
    }
    t
}

/// The text lines of the remote registries in a scan report.
pub fn text(remote: &[RegistrySync]) -> String {
    remote.iter().map(line).collect()
}

/// Runs `atip sync`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("sync", &[OutputFormat::Text, OutputFormat::Json])?;
    if args.jobs == 0 {
        return Err(AtipError::usage("--jobs must be at least 1"));
    }
    if args.timeout.is_zero() || args.deadline.is_zero() {
        return Err(AtipError::usage(
            "--timeout and --deadline must be more than 0",
        ));
    }
    let path = config::path(&ctx.dirs.config, &ctx.env);
    let file = RegistriesFile::load(&path).map_err(crate::cli::registry::registries_error)?;
    if file.active().is_empty() {
        return Err(AtipError::new(
            ErrorCode::NoRegistries,
            format!("no enabled remote registry in {}", path.display()),
        )
        .hint("add one with `atip registry add NAME URL`"));
    }
    let opts = ScanOptions {
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
        remote: RemoteOptions {
            refresh: args.refresh,
            offline: args.offline || ctx.env.flag("ATIP_OFFLINE"),
            timeout: args.timeout,
            deadline: args.deadline,
            jobs: args.jobs,
        },
    };
    let report =
        discover::scan(&ctx.dirs, &opts, &discover::NoProgress).map_err(|e| e.to_atip())?;
    if ctx.output.is_json() {
        ctx.out.json(&report)?;
    } else {
        let from_remote = report
            .tools
            .iter()
            .filter(|t| t.source == atip::registry::Source::Remote)
            .count();
        ctx.out.text(&format!(
            "{}{} tool(s) registered from remote registries in {}\n",
            text(&report.remote),
            from_remote,
            report.registry.path.display()
        ))?;
    }
    ctx.out.warnings(&report.warnings);
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
