//! `atip scan`: find ATIP tools on PATH and record them in the registry.
//!
//! Only the flags and the rendering; the scan itself is `atip::discover::scan`.

use crate::Ctx;
use atip::discover::{self, ProbeMode, Progress, ScanOptions};
use atip::output::ExitStatus;
use atip::output::{AtipError, OutputFormat, Verbosity};
use std::ffi::OsString;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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
    let opts = ScanOptions {
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
        remote: atip::remote::sync::RemoteOptions {
            refresh: args.refresh,
            offline: args.offline || atip::remote::sync::env_flag("ATIP_OFFLINE"),
            ..Default::default()
        },
    };
    let report = if std::io::stderr().is_terminal() && ctx.out.verbosity() != Verbosity::Quiet {
        let bar = indicatif::ProgressBar::new(0).with_style(
            indicatif::ProgressStyle::with_template("probing {pos}/{len} {wide_msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        discover::scan(&ctx.dirs, &opts, &Bar(bar)).map_err(|e| e.to_atip())?
    } else {
        discover::scan(&ctx.dirs, &opts, &discover::NoProgress).map_err(|e| e.to_atip())?
    };
    let code = if report.source_failures.is_empty() {
        ExitStatus::Success
    } else {
        // In JSON the report's `sourceFailures` says it; in text, stderr says it too.
        if !ctx.output.is_json() {
            for f in &report.source_failures {
                ctx.out.stderr(&format!(
                    "error: metadata source {} failed: {}; the tools it provided before were kept\n",
                    f.source, f.message
                ));
            }
        }
        ExitStatus::Failure
    };
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
        _ => ctx.out.text(&report.to_text())?,
    }
    ctx.out.warnings(&report.warnings);
    Ok(code)
}

/// A scan runs a pool per CPU for its CPU work and more threads that mostly wait (probes,
/// fsyncs). glibc gives threads up to 8 malloc arenas per CPU, and each arena keeps the
/// memory it once held: measured on this machine's PATH, the scan's peak was 64–66 MB
/// with the default and 59.7 MB with one arena per CPU, at the same CPU time. Called
/// before the scan starts any thread.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cpus).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets an allocator parameter; no thread allocates yet
        // apart from this one, and glibc applies it to arenas made from now on.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
