//! Discovery: finds the ATIP tools on this machine and hands them to the registry.
//!
//! A scan is a pipeline of phases (see `spec/scan.md` §0), each its own function here
//! or its own module; [`scan`] only runs them in order and carries their results:
//! 1. **enumerate** the directories and executables, and every name of each file
//!    (`enumerate`, [`paths`]);
//! 2. **fingerprint and cache**: what is already known of each unchanged file
//!    (`plan`, [`cache`]);
//! 3. **classify** each unknown file by the evidence in its bytes ([`sign`]) or in the
//!    files it launches ([`launcher`]), and
//! 4. **probe** those that may be run, in parallel through `process` (`examine`,
//!    [`probe`]);
//! 5. **hash** the files some source may offer metadata for (`hash_wanted`; remote
//!    shims for what nothing better describes: `remote_wanted`);
//! 6. **resolve** one winner per name (`resolve_names`): every metadata source
//!    ([`source`] is the interface — [`native`] answers, [`installed`] files, [`shims`]
//!    layers with the [`builtin`] ones, [`inferred`] man pages, remote registries)
//!    offers candidates, and [`resolve`] alone chooses, by its documented precedence; a
//!    source that failed keeps the entries it provided; then the fresh documents are
//!    composed (`Resolved::compose_fresh`);
//! 7. **commit** to the registry (`Resolved::send`); 8. save the caches
//!    (`save_scan_cache`, `finish_inference`); 9. [`report`] (and `--explain`).
//!
//! Must not write `registry.json` or `tools/` itself: it builds a
//! [`crate::registry::Update`] and the registry's `commit` merges it under the lock.
//! Must not spawn a process except through [`crate::process::run`].

pub mod builtin;
pub mod cache;
pub mod converted;
pub mod framework;
pub mod inferred;
pub mod installed;
pub mod launcher;
pub mod native;
mod old_index;
pub mod paths;
pub mod probe;
pub mod remote;
pub mod report;
pub mod resolve;
pub mod shims;
pub mod sign;
pub mod source;
pub mod tooli;

use crate::digest::sha256_hex;
use crate::dirs::Dirs;
use crate::env::Env;
use crate::output::{AtipError, ErrorCode};
use crate::registry::{self, Found, FoundMeta, Source, Update};
use crate::remote::sync::{Remote, RemoteOptions};
use crate::statat::in_parts;
use cache::{Cache, FileRecord, ProbeRecord, ToolRecord};
use converted::Converted;
use framework::AppRecord;
use installed::Installed;
use native::Native;
use paths::{DirEntrySpec, Enumeration, Executable, FileSkip, FileSkipReason, Identity};
use probe::Cancel;
use rayon::prelude::*;
use report::{
    Explanation, FailReason, FailedTool, PlannedProbe, ProbeWhy, RegistryInfo, ScanReport,
    ShimSummary, Skipped, Summary, ToolReport, ToolStatus,
};
use resolve::Outcome;
use serde::Serialize;
use shims::PatternFile;
use source::{Candidate, MetadataSource, SourceFailure, Subject};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Which executables a scan may run with `--agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum ProbeMode {
    /// Only executables that show an ATIP sign in their bytes, or are on the config
    /// allowlist. Never runs anything else.
    Auto,
    /// `auto`, plus every other executable whose `--help` output mentions `--agent`
    /// (this runs `--help` of unknown programs).
    Help,
    /// Every executable (runs all of PATH with `--agent`).
    All,
    /// Nothing: shims and cached answers only.
    None,
}

/// A scan's resolved options.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// PATH-like value to scan; `None` = `PATH` of [`ScanOptions::env`].
    pub path: Option<OsString>,
    /// Extra directories, scanned after PATH; their owner is trusted.
    pub allow_dirs: Vec<PathBuf>,
    /// Extra shim directories (`NAME.json`, `sha256/<hex>.json`); the first wins.
    pub shim_dirs: Vec<PathBuf>,
    /// Use the shims built into atip as the lowest-precedence layer.
    pub builtin_shims: bool,
    /// Probe strategy.
    pub probe: ProbeMode,
    /// Timeout of each probe.
    pub timeout: Duration,
    /// Probes run at once.
    pub jobs: usize,
    /// Globs of executable names to leave out.
    pub skip: Vec<String>,
    /// Forget the cache: read, hash and probe everything again.
    pub refresh: bool,
    /// List what would be probed; probe nothing, write nothing.
    pub dry_run: bool,
    /// Set (e.g. from a SIGINT handler) to kill running probes and abort the scan
    /// before anything is written.
    pub cancel: Option<Cancel>,
    /// What follows the registry commit under its lock (the CLI passes the catalog).
    pub after_commit: Option<std::sync::Arc<dyn registry::AfterCommit>>,
    /// Infer metadata from installed man pages for names no other source describes
    /// (the lowest-precedence source; spec/infer.md).
    pub infer: bool,
    /// `MANPATH` to search; `None` = `MANPATH` of [`ScanOptions::env`] (unset: derived
    /// from PATH).
    pub manpath: Option<OsString>,
    /// Explain how this name was decided (`--explain NAME`): the report carries the
    /// evidence, the candidates and why each lost.
    pub explain: Option<String>,
    /// How remote registries (`registries.json`) are consulted.
    pub remote: RemoteOptions,
    /// Convert every recognised agent-CLI framework app (run its interpreter to print
    /// the framework's manifest), not only allowlisted ones (`--convert`).
    pub convert: bool,
    /// The run's environment: `PATH` and `MANPATH` when not given, and what probes
    /// inherit.
    pub env: Env,
    /// The process ends soon after this scan (`atip scan`): when the scan wrote nothing
    /// to the registry (a warm rescan), its working state (the old cache's tables, the
    /// sources, the work items, the per-name tables: tens of thousands of allocations on
    /// a big PATH) is left to the exit instead of being freed piece by piece, ~4 ms of
    /// CPU on a real-PATH warm rescan. A caller that lives on (`atip sync`, a server)
    /// leaves it false: everything is freed.
    pub one_shot: bool,
}

/// Whether this scan leaves its working state to the process's exit
/// ([`ScanOptions::one_shot`]): only a scan that wrote nothing. One that committed frees
/// it as before, so the report reuses that memory and a cold scan's peak RSS (a
/// target: benches/README.md) does not grow by what it would leave (~3 MB for the
/// 2,000-executable tree).
fn left_to_exit(opts: &ScanOptions, registry: &RegistryInfo) -> bool {
    opts.one_shot && !registry.written
}

/// Frees `v`, unless `leave` (see [`left_to_exit`]): then its memory is left to the
/// exit, which returns it all at once.
fn discard<T>(leave: bool, v: T) {
    if leave {
        std::mem::forget(v);
    }
}

/// Default number of probes run at once: probes mostly wait on children, and a hanging
/// tool holds its slot until the timeout, so several per CPU.
pub fn default_jobs() -> usize {
    let cpus = crate::statat::cpus().unwrap_or(2);
    (cpus * 4).clamp(8, 64)
}

/// Reports progress of the probe phase; implemented by the CLI's progress bar.
pub trait Progress: Sync {
    /// The probe phase starts with this many executables to run.
    fn start(&self, total: u64);
    /// One executable is done.
    fn tick(&self, name: &str);
    /// The probe phase is over.
    fn finish(&self);
}

/// No progress reporting.
pub struct NoProgress;

impl Progress for NoProgress {
    fn start(&self, _: u64) {}
    fn tick(&self, _: &str) {}
    fn finish(&self) {}
}

/// A thread pool of the scan, built only when some phase has work: a warm rescan starts
/// no threads. Two are used: one of `--jobs` threads for reading evidence and probing
/// (probes mostly wait on their children), and one of one thread per CPU for the work
/// that only computes (man pages, hashes): more threads there than CPUs only add
/// allocator arenas, memory held at once, and switches.
struct LazyPool {
    jobs: usize,
    pool: std::cell::OnceCell<Option<rayon::ThreadPool>>,
}

impl LazyPool {
    fn new(jobs: usize) -> LazyPool {
        LazyPool {
            jobs: jobs.max(1),
            pool: std::cell::OnceCell::new(),
        }
    }

    /// Runs `f` (which uses rayon) on the pool; on the global pool if it cannot be built.
    fn install<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let pool = self.pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.jobs)
                .build()
                .ok()
        });
        match pool {
            Some(p) => p.install(f),
            None => f(),
        }
    }
}

/// Wall time of each phase, logged at debug level (`atip -v scan`): where a scan spends
/// its time, without a profiler.
struct Phases {
    last: std::time::Instant,
}

impl Phases {
    fn start() -> Phases {
        Phases {
            last: std::time::Instant::now(),
        }
    }

    /// Logs the time since the previous phase ended.
    fn done(&mut self, phase: &str) {
        let now = std::time::Instant::now();
        log::debug!(
            "scan phase {phase}: {:.1} ms",
            (now - self.last).as_secs_f64() * 1e3
        );
        self.last = now;
    }
}

/// Per-executable state during a scan.
struct Work {
    exe: Executable,
    rec: FileRecord,
    allowlisted: bool,
    /// Why it is probed now (None: not probed by this scan).
    probe_now: Option<ProbeWhy>,
    /// Probe outcome came from the cache.
    cached: bool,
    /// No sign (counted, not probed).
    no_sign: bool,
    unreadable: Option<String>,
    /// Its evidence was read by this scan (not taken from the cache).
    read_now: bool,
    /// What its probe or conversion answered now (`None` when it ran neither: boxed,
    /// as all but a few works of a rescan hold none, and each byte of a work is a
    /// byte per executable of fresh pages).
    answers: Option<Box<Answers>>,
    /// A framework app whose manifest this scan converts.
    convert_now: bool,
    /// A framework app the user has not allowed to convert (counted, hinted).
    app_waiting: bool,
    /// `plan` took the record from the scan cache: while every such record is still the
    /// one stored there (compared in place, [`cache::OldCache::visit_stored`]), the cache need
    /// not be encoded again to compare. (A kept copy of each record cost a rescan an
    /// allocation, a clone and a free per executable.)
    from_cache: bool,
}

/// The answers of a work's probe or conversion this scan ran ([`Work::answers`]).
#[derive(Default)]
struct Answers {
    /// Valid answers (or converted documents) that could not be stored: (sha256 hex,
    /// bytes), used from memory.
    unstored: Vec<(String, Arc<[u8]>)>,
    /// The index summary of each answer judged now, by its sha256 hex (see [`Judged`]).
    judged: Vec<(String, registry::MetaSummary)>,
}

fn build_globs(globs: &[String], what: &'static str) -> Result<globset::GlobSet, GlobError> {
    let mut b = globset::GlobSetBuilder::new();
    for g in globs {
        b.add(globset::Glob::new(g).map_err(|source| GlobError {
            what,
            glob: g.clone(),
            source,
        })?);
    }
    // Every glob was compiled above; building the set only combines them.
    b.build().map_err(|source| GlobError {
        what,
        glob: globs.join(" "),
        source,
    })
}

/// A glob (`--skip`, `probe.allow`) that does not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid {what} glob {glob:?}: {source}")]
pub struct GlobError {
    /// Where it was given: `--skip`, `probe.allow`.
    what: &'static str,
    /// The glob.
    glob: String,
    /// Why it does not parse.
    #[source]
    source: globset::Error,
}

/// Why a scan could not complete.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// `config.json` is unreadable or malformed.
    #[error(transparent)]
    Config(#[from] shims::ScanConfigError),
    /// A `probe.allow` glob in `config.json` does not parse.
    #[error("config.json: {0}")]
    AllowGlob(#[source] GlobError),
    /// A flag value is malformed (a `--skip` glob).
    #[error(transparent)]
    Usage(GlobError),
    /// `registries.json` is unreadable or malformed.
    #[error(transparent)]
    Registries(#[from] crate::remote::sync::OpenError),
    /// The registry could not be written (or its lock was held too long).
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    /// Interrupted (the cancel flag was set): running probes were killed, nothing was
    /// written.
    #[error("scan interrupted; running probes were killed and nothing was written")]
    Interrupted,
}

impl From<ScanError> for AtipError {
    /// Exit 78 (config, registries), 2 (flags), 73/75 (registry write or lock) or 75
    /// (interrupted).
    fn from(e: ScanError) -> Self {
        match e {
            ScanError::Config(_) | ScanError::AllowGlob(_) => {
                AtipError::new(ErrorCode::ConfigInvalid, e.to_string())
                    .hint("fix config.json, e.g. {\"probe\": {\"allow\": [\"mytool\"]}}")
            }
            ScanError::Usage(_) => AtipError::new(ErrorCode::Usage, e.to_string()),
            ScanError::Registries(e) => AtipError::from(e),
            ScanError::Registry(e) => e.to_atip(),
            ScanError::Interrupted => AtipError::new(ErrorCode::Interrupted, e.to_string())
                .hint("run `atip scan` again; the registry is as it was"),
        }
    }
}

/// The PATH value a scan walks (`--path`, else the run's).
fn path_value(opts: &ScanOptions) -> OsString {
    opts.path
        .clone()
        .or_else(|| opts.env.var_os("PATH").map(OsStr::to_owned))
        .unwrap_or_default()
}

/// Runs a whole scan, phase by phase (`spec/scan.md` §0): enumerate, fingerprint and
/// cache, classify and probe, load the other sources, hash, resolve one winner per name,
/// commit, save the cache, report. Per-tool failures and failed sources are in the
/// report; an error here means the scan itself could not complete (bad config or flags,
/// registry not writable, lock held too long, interrupted).
pub fn scan(
    dirs: &Dirs,
    opts: &ScanOptions,
    progress: &dyn Progress,
) -> Result<ScanReport, ScanError> {
    let mut run = Run {
        dirs,
        opts,
        phases: Phases::start(),
        warnings: Vec::new(),
        cpu_pool: LazyPool::new(cpu_jobs(opts.jobs)),
    };
    let mut ex = run.examine(progress)?;
    let mut inferred = ex.inferred.take();
    // The metadata sources on this machine, and the registry as it is (its memo read in
    // place from a handle of the scan cache that outlives them).
    let old = ex.caches.old_files.clone();
    let (caches, warnings) = (&mut ex.caches, &mut run.warnings);
    let local = LocalSources::load(dirs, opts, &ex.scan_dirs, caches, old.as_ref(), warnings);
    run.phases.done("load sources and index");
    // The registry's metadata files, as intact as checked (see `StoredDocs`).
    let unchanged = std::mem::take(&mut ex.caches.docs_unchanged);
    let stored = StoredDocs::of(&dirs.data, ex.caches.old_files.as_ref(), unchanged);
    // Man pages: found and read (only where the cache is not current) before the offers.
    if let Some(inf) = inferred.as_mut()
        && !opts.dry_run
    {
        let readable = readable_names(&ex.names, &ex.works);
        read_man_pages(inf, readable, &stored, &run.cpu_pool, &mut run.phases);
    }
    run.phases.done("man-page listings handed to their writer");
    // Remote registries: catalogs now (cache or conditional requests), shims after
    // hashing, only for binaries no better source describes.
    let mut remote = open_remote(dirs, opts, &mut run.warnings)?;

    run.phases.done("remote catalogs");
    // 5. Hash the files some source may offer metadata for.
    let unstored = &ex.examined.unstored;
    let native = Native {
        data: &dirs.data,
        unstored,
    };
    let converted = Converted {
        data: &dirs.data,
        unstored,
    };
    let sources = local.sources(&native, &converted, inferred.as_ref(), &remote);
    hash_wanted(&mut ex.works, &ex.names, &sources, &run.cpu_pool);

    run.phases.done("hash");
    // 5b. Fetch the remote shims of the hashed binaries that nothing better describes.
    if !remote.is_empty() {
        let wanted = remote_wanted(&remote, &ex.works, &ex.names, &sources);
        remote.fetch_shims(&wanted);
    }
    let sources = local.sources(&native, &converted, inferred.as_ref(), &remote);
    let failures: Vec<SourceFailure> = sources.iter().flat_map(|s| s.failures()).collect();

    run.phases.done("remote shims");
    // 6. Resolve each name's winner (in `resolve`, the one place) and what to send.
    let previous = Previous {
        index: &local.old_index,
        cache: ex.caches.old_files.as_ref(),
        stored: &stored,
    };
    let resolved = resolve_names(
        &ex.names,
        &ex.works,
        &sources,
        &failures,
        &previous,
        &local.patterns,
        opts,
        run.cpu_pool.jobs,
    );
    stored.log_hashed();
    run.phases.done("resolve");
    let report = run.finish(ex, resolved, &local, inferred, &remote, failures);
    report.inspect(|r| discard(left_to_exit(opts, &r.registry), (local, remote)))
}

/// One scan's settings and what it collects on the way (phase timings, warnings); the
/// pool for the work that only computes.
struct Run<'a> {
    dirs: &'a Dirs,
    opts: &'a ScanOptions,
    phases: Phases,
    warnings: Vec<String>,
    cpu_pool: LazyPool,
}

/// What phases 1-4 leave: the executables examined and every name of them, what was
/// skipped, and the scan cache.
struct Examination {
    scan_dirs: Vec<paths::ScanDir>,
    skipped_dirs: Vec<paths::DirSkip>,
    skipped_files: Vec<FileSkip>,
    works: Vec<Work>,
    /// Every name an agent can type, with the index of its work item.
    names: Names,
    caches: Caches,
    examined: Examined,
    /// The man-page source (taken by `scan`).
    inferred: Option<inferred::Inferred>,
}

impl Run<'_> {
    /// Phases 1-4: enumerate, fingerprint and cache, classify and probe.
    fn examine(&mut self, progress: &dyn Progress) -> Result<Examination, ScanError> {
        let (dirs, opts) = (self.dirs, self.opts);
        let (skip, allow) = filters(dirs, opts)?;
        // 1. Enumerate: directories, executables, the names of each file, taking the
        // directory listings the last scan kept. Meanwhile, on a second thread (a helper
        // kept for the process), the man-page source opens (its cache checked, the
        // manual's listing started when needed) and the scan cache is read and checked.
        let threads = self.cpu_pool.jobs;
        let warnings = &mut self.warnings;
        let ((inferred, (mut caches, cache_warning)), (enumeration, old_listings)) =
            crate::statat::beside(
                || (open_inference(dirs, opts), Caches::load(dirs, opts)),
                || enumerate(dirs, opts, &skip, threads, warnings),
            );
        let Enumeration {
            dirs: scan_dirs,
            skipped_dirs,
            executables,
            skipped_files,
            aliases,
            listed,
        } = enumeration;
        let kept = listed.iter().filter(|l| **l == paths::Listed::Remembered);
        log::debug!(
            "scan: {} of {} directory listing(s) taken from the scan cache",
            kept.count(),
            listed.len()
        );
        caches.listed = listed;
        caches.old_listings = old_listings;
        self.warnings.extend(cache_warning);

        self.phases.done("enumerate and read the cache");
        // 2. Fingerprint and cache: what is already known of each file. Each unchanged
        // file's record moves from the old cache into its work item.
        let mut works = plan(executables, caches.old_files.as_ref(), &allow, dirs, opts);

        self.phases.done("plan");
        // 3-4. Classify each executable by its evidence and probe those that may be run.
        // The probe pool ends with this statement: its threads' stacks, read buffers and
        // allocator arenas are freed before the sources are loaded and the registry
        // written (the scan's peak), instead of holding `--jobs` idle threads to the end.
        examine(&mut works, dirs, opts, progress, &LazyPool::new(opts.jobs));
        if cancelled(opts) {
            // Running probes were killed with their groups; nothing is written.
            return Err(ScanError::Interrupted);
        }
        let examined = Examined::of(&mut works, dirs, opts, &mut self.warnings);
        self.phases.done("examine and probe");
        Ok(Examination {
            scan_dirs,
            skipped_dirs,
            skipped_files,
            names: Names { aliases },
            works,
            caches,
            examined,
            inferred,
        })
    }

    /// Phase 6, composing: fresh documents for everything not unchanged, while the
    /// manual's listing is written; it is waited for (and its memory freed) before the
    /// commit, whose catalog is the scan's memory peak.
    fn compose(
        &mut self,
        resolved: &mut Resolved<'_>,
        inferred: Option<&mut inferred::Inferred>,
        judged: &Judged,
    ) {
        resolved.compose_fresh(&registry::rfc3339_now(), judged);
        if let Some(inf) = inferred.filter(|i| i.src.writing_listings()) {
            if let Err(m) = inf.src.listings_saved() {
                self.warnings
                    .push(format!("failed to save the inference cache: {m}"));
            }
            // The listing was made and freed on threads of its own, whose allocator
            // arenas the commit would not reuse.
            release_free_memory();
        }
        self.phases.done("compose");
    }

    /// Phases 6 (composing) to 9: compose the fresh documents, commit, save the caches,
    /// report.
    fn finish(
        mut self,
        ex: Examination,
        mut resolved: Resolved<'_>,
        local: &LocalSources,
        mut inferred: Option<inferred::Inferred>,
        remote: &Remote,
        failures: Vec<SourceFailure>,
    ) -> Result<ScanReport, ScanError> {
        let (dirs, opts) = (self.dirs, self.opts);
        let Examination {
            scan_dirs,
            skipped_dirs,
            mut skipped_files,
            works,
            names,
            mut caches,
            examined,
            inferred: _,
        } = ex;
        skipped_files.append(&mut resolved.unreadable);
        self.compose(&mut resolved, inferred.as_mut(), &examined.judged);
        // 7. Commit (not in a dry run).
        let (registry, removed) = if opts.dry_run {
            (unwritten(dirs), Vec::new())
        } else {
            let scanned = scan_dirs.iter().map(|d| d.canonical.clone()).collect();
            resolved.send(
                dirs,
                &local.old_index,
                scanned,
                opts,
                &self.cpu_pool,
                &mut self.warnings,
            )?
        };

        self.phases.done("commit");
        let leave = left_to_exit(opts, &registry);
        // 8. Save the caches (never in a dry run).
        let tool_records = caches.remember(&mut resolved, &local.old_index);
        let warnings = &mut self.warnings;
        caches.save(
            dirs,
            &works,
            tool_records,
            &local.old_index,
            &scan_dirs,
            (opts.dry_run, leave),
            warnings,
        );
        if let Some(inf) = inferred {
            finish_inference(inf, opts.dry_run, warnings);
        }
        self.phases.done("save caches");
        // 9. Report.
        let report = Finished {
            dirs,
            opts,
            works: &works,
            names: names.len(&works),
            scan_dirs: scan_dirs.len(),
            skipped_dirs,
            skipped_files,
            examined,
            registry,
            removed,
            resolved,
            remote,
            failures,
            local,
            warnings: std::mem::take(&mut self.warnings),
        }
        .report();
        discard(leave, (works, names));
        self.phases.done("report");
        Ok(report)
    }
}

/// The registry's part of the report when nothing was committed (a dry run).
fn unwritten(dirs: &Dirs) -> RegistryInfo {
    RegistryInfo {
        path: dirs.registry_file(),
        written: false,
        corrupt_backup: None,
    }
}

/// The `--skip` globs (a usage error when malformed) and the config's `probe.allow`
/// globs (a config error).
fn filters(
    dirs: &Dirs,
    opts: &ScanOptions,
) -> Result<(globset::GlobSet, globset::GlobSet), ScanError> {
    let config = shims::load_config(&dirs.config)?;
    let skip = build_globs(&opts.skip, "--skip").map_err(ScanError::Usage)?;
    let allow = build_globs(&config.allow, "probe.allow").map_err(ScanError::AllowGlob)?;
    Ok((skip, allow))
}

/// Threads of the pool that only computes: one per CPU, no more than `--jobs`.
fn cpu_jobs(jobs: usize) -> usize {
    crate::statat::cpus().unwrap_or(2).min(jobs.max(1))
}

/// The cancel flag is set (e.g. by SIGINT).
fn cancelled(opts: &ScanOptions) -> bool {
    opts.cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
}

/// Every name an agent can type: each executable's first name (its work item's), then
/// its aliases. Read through the work items, not copied from them.
struct Names {
    aliases: Vec<paths::Alias>,
}

impl Names {
    /// Each name, with its path and the index of its work item: the first names in
    /// work order, then the aliases.
    fn iter<'a>(
        &'a self,
        works: &'a [Work],
    ) -> impl Iterator<Item = (&'a str, &'a std::path::Path, usize)> + 'a {
        let first = works.iter().enumerate();
        first
            .map(|(i, w)| (w.exe.name.as_str(), w.exe.path.as_path(), i))
            .chain(
                self.aliases
                    .iter()
                    .map(|a| (a.name.as_str(), a.path.as_path(), a.of)),
            )
    }

    /// How many there are.
    fn len(&self, works: &[Work]) -> usize {
        works.len() + self.aliases.len()
    }
}

/// The names whose file could be read (man pages are looked up for these only).
fn readable_names<'n>(names: &'n Names, works: &'n [Work]) -> Vec<&'n str> {
    names
        .iter(works)
        .filter(|(_, _, i)| works[*i].unreadable.is_none())
        .map(|(n, _, _)| n)
        .collect()
}

/// Opens the remote registries of `registries.json`; a dry run requests nothing.
fn open_remote(
    dirs: &Dirs,
    opts: &ScanOptions,
    warnings: &mut Vec<String>,
) -> Result<Remote, ScanError> {
    let mut remote_opts = opts.remote.clone();
    remote_opts.offline |= opts.dry_run;
    let mut remote = Remote::open(
        &dirs.config,
        &dirs.cache,
        &dirs.state,
        &remote_opts,
        &opts.env,
    )?;
    warnings.append(&mut remote.warnings);
    Ok(remote)
}

/// The scan cache before this scan (empty with `--refresh`) and the one it builds.
struct Caches {
    /// What the previous scan left, but the executables' records (in `old_files`).
    old: Cache,
    /// The old cache file, used in place: `plan` takes each unchanged file's record from
    /// it, resolve compares each name's tool record with it, the registry's metadata files
    /// and memo are judged by it, and an unchanged cache is not written again.
    old_files: Option<cache::OldCache>,
    /// What this scan's sources record as they load.
    new: Cache,
    /// The registry memo for the next scan (set before saving; put into `new` only if
    /// the cache is written).
    memo: old_index::NextMemo,
    /// Whether that memo is the one `old` held (set before saving).
    same_memo: bool,
    /// How each scanned directory was listed (in their order; set after enumerating).
    listed: Vec<paths::Listed>,
    /// The directory listings the last scan kept (set after enumerating).
    old_listings: Option<cache::OldListings>,
    /// The registry metadata files of `old.docs` found unchanged right after the cache
    /// was read ([`check_known`]; taken by [`StoredDocs::of`]).
    docs_unchanged: UnchangedDocs,
}

impl Caches {
    /// Reads the old cache (not with `--refresh`), with a warning when it was unusable,
    /// and checks the registry metadata files it knew intact ([`check_known`], on this
    /// thread): the cache is read beside the walk of PATH, and these ~1,000 stats of a
    /// big PATH's warm rescan are then done there too instead of after it.
    fn load(dirs: &Dirs, opts: &ScanOptions) -> (Caches, Option<String>) {
        let (old, old_files, warning) = if opts.refresh {
            (Cache::empty(), None, None)
        } else {
            let loaded = Cache::load(&dirs.data);
            (loaded.cache, loaded.files, loaded.warning)
        };
        let docs_unchanged = check_known(&dirs.data, old_files.as_ref(), 1);
        let caches = Caches {
            old,
            old_files,
            new: Cache::empty(),
            memo: old_index::NextMemo::None,
            same_memo: false,
            listed: Vec::new(),
            old_listings: None,
            docs_unchanged,
        };
        (caches, warning)
    }

    /// Takes what resolving and sending learnt for the next scan (the metadata files known
    /// intact, the registry memo); returns the tool records.
    fn remember(
        &mut self,
        resolved: &mut Resolved<'_>,
        old_index: &old_index::OldIndex,
    ) -> BTreeMap<String, ToolRecord> {
        // Sorted once here (the cache keeps them in order), not by an ordered insert per
        // name while resolving.
        self.new.docs = last_of_each(std::mem::take(&mut resolved.docs));
        self.memo = std::mem::take(&mut resolved.registry_memo);
        self.same_memo = old_index.memo_unchanged(&self.memo);
        let mut records = std::mem::take(&mut resolved.tool_records);
        // Each name once (resolve meets each name once): no order among equals to keep.
        records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        records.into_iter().collect()
    }

    /// Phase 8: saves the scan cache (never in a dry run; `leave`: see [`left_to_exit`]); a
    /// failure is a warning.
    #[allow(clippy::too_many_arguments)]
    fn save(
        self,
        dirs: &Dirs,
        works: &[Work],
        tool_records: BTreeMap<String, ToolRecord>,
        old_index: &old_index::OldIndex,
        scan_dirs: &[paths::ScanDir],
        (dry_run, leave): (bool, bool),
        warnings: &mut Vec<String>,
    ) {
        if dry_run {
            return;
        }
        let Caches {
            old,
            old_files,
            mut new,
            memo,
            same_memo,
            listed,
            old_listings,
            docs_unchanged: _,
        } = self;
        if let Some(kept) = listings_to_keep(old_listings.as_ref(), scan_dirs, &listed)
            && let Err(m) = cache::save_listings(&dirs.data, kept)
        {
            warnings.push(format!("failed to save the directory listings: {m}"));
        }
        new.tools = tool_records;
        if let Some(files) = &old_files
            && same_memo
            && unchanged_cache(works, &old, files, &new, scan_dirs)
        {
            discard(leave, (old, old_files, new));
            return;
        }
        new.registry = old_index.memo_to_save(memo);
        if let Err(m) = save_scan_cache(dirs, works, old_files.as_ref(), new, scan_dirs) {
            warnings.push(format!("failed to save the scan cache: {m}"));
        }
        discard(leave, (old, old_files));
    }
}

/// The man-page source when inference is on; unless this is a dry run (which reads no
/// page), the manual's listing starts on its own thread if the scan will need it.
fn open_inference(dirs: &Dirs, opts: &ScanOptions) -> Option<inferred::Inferred> {
    opts.infer.then(|| {
        let mut src = crate::infer::source::InferSource::open(
            &dirs.data,
            opts.manpath
                .as_deref()
                .or_else(|| opts.env.var_os("MANPATH")),
            Some(&path_value(opts)),
            opts.refresh,
        );
        if !opts.dry_run {
            src.start_index();
        }
        inferred::Inferred {
            src,
            root_dirs: Default::default(),
        }
    })
}

/// The metadata sources read from this machine (shims, installed files, pattern files)
/// and the registry's index as the previous scan left it. (Man pages are a source of
/// their own: their cache is saved, consuming it, after the commit.)
struct LocalSources<'c> {
    shims: shims::Shims,
    installed: Installed,
    patterns: shims::Patterns,
    old_index: old_index::OldIndex<'c>,
}

impl<'c> LocalSources<'c> {
    /// Loads them (`old_cache`: the scan cache as read, whose registry memo is used).
    fn load(
        dirs: &Dirs,
        opts: &ScanOptions,
        scan_dirs: &[paths::ScanDir],
        caches: &mut Caches,
        old_cache: Option<&'c cache::OldCache>,
        warnings: &mut Vec<String>,
    ) -> LocalSources<'c> {
        let memo = old_cache.and_then(cache::OldCache::memo);
        let (old, new) = (&caches.old, &mut caches.new);
        let layers =
            shims::shim_layers(&dirs.system_data, &dirs.data, &opts.shim_dirs, &dirs.config);
        let shims = shims::load_shims(&layers, opts.builtin_shims, old, new);
        let shim_dirs: Vec<PathBuf> = layers.iter().map(|(_, d)| d.clone()).collect();
        let canonical: Vec<PathBuf> = scan_dirs.iter().map(|d| d.canonical.clone()).collect();
        let installed = Installed::load(&canonical, &dirs.system_data, &shim_dirs, old, new);
        let pattern_dirs = shims::pattern_dirs(&dirs.system_data, &dirs.data);
        let patterns = shims::load_patterns(&pattern_dirs, old, new);
        let old_index = old_index::OldIndex::open(dirs.registry_file(), memo, warnings);
        LocalSources {
            shims,
            installed,
            patterns,
            old_index,
        }
    }

    /// Every source that offers candidates, in the order `resolve` reads them; the
    /// remote registries only when some are configured.
    fn sources<'a>(
        &'a self,
        native: &'a Native<'a>,
        converted: &'a Converted<'a>,
        inferred: Option<&'a inferred::Inferred>,
        remote: &'a Remote,
    ) -> Vec<&'a dyn MetadataSource> {
        let mut sources: Vec<&dyn MetadataSource> =
            vec![native, &self.installed, converted, &self.shims];
        if let Some(inf) = inferred {
            sources.push(inf);
        }
        if !remote.is_empty() {
            sources.push(remote);
        }
        sources
    }

    /// The report's account of shims and pattern files: directories looked at, files
    /// valid, applied and refused.
    fn shim_summary(&self, applied: usize) -> ShimSummary {
        let mut rejected = self.shims.rejected.clone();
        rejected.extend(self.installed.rejected.iter().cloned());
        let mut dirs = self.shims.dirs.clone();
        dirs.extend(self.installed.dirs.iter().cloned());
        ShimSummary {
            dirs,
            valid: self.shims.valid,
            applied,
            rejected,
            pattern_files: self.patterns.files.len(),
            rejected_patterns: self.patterns.rejected.clone(),
        }
    }
}

/// What the phases leave for the report (phase 9).
struct Finished<'a> {
    dirs: &'a Dirs,
    opts: &'a ScanOptions,
    works: &'a [Work],
    /// Names met (first names and aliases).
    names: usize,
    /// Directories scanned.
    scan_dirs: usize,
    skipped_dirs: Vec<paths::DirSkip>,
    skipped_files: Vec<FileSkip>,
    examined: Examined,
    registry: RegistryInfo,
    removed: Vec<String>,
    resolved: Resolved<'a>,
    remote: &'a Remote,
    failures: Vec<SourceFailure>,
    local: &'a LocalSources<'a>,
    warnings: Vec<String>,
}

impl Finished<'_> {
    fn report(self) -> ScanReport {
        let no_sign = self.works.iter().filter(|w| w.no_sign).count();
        let apps_waiting = self.works.iter().filter(|w| w.app_waiting).count();
        let mut rest = self.resolved;
        let tool_reports = std::mem::take(&mut rest.tool_reports);
        let mut failed = std::mem::take(&mut rest.failed);
        let kept = std::mem::take(&mut rest.kept);
        let (explanation, applied_shims) = (rest.explanation.take(), rest.applied_shims);
        discard(left_to_exit(self.opts, &self.registry), rest);
        failed.sort_by(|a, b| a.name.cmp(&b.name));
        let opts = self.opts;
        let has_failures = !self.failures.is_empty();
        let hints = hints(
            no_sign,
            apps_waiting,
            &failed,
            has_failures,
            opts,
            self.dirs,
        );
        let mut tools = tool_reports;
        tools.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let summary = Summary {
            dirs: self.scan_dirs,
            names: self.names,
            probed: self.examined.probed,
            converted: self.examined.converted,
            kept: kept.len(),
            removed: self.removed.len(),
            failed: failed.len(),
            skipped: self.skipped_dirs.len() + self.skipped_files.len() + no_sign,
            no_sign,
            ..summarize(self.works, &tools, self.names)
        };
        ScanReport {
            report_version: report::REPORT_VERSION,
            dry_run: opts.dry_run,
            probe: opts.probe,
            timeout: crate::units::format_duration(opts.timeout),
            registry: self.registry,
            summary,
            tools,
            removed: self.removed,
            failed,
            remote: self.remote.reports(),
            source_failures: self
                .failures
                .iter()
                .map(|f| report::FailedSource {
                    source: f.source.to_owned(),
                    message: f.message.clone(),
                })
                .collect(),
            shims: self.local.shim_summary(applied_shims),
            skipped: Skipped {
                counts: skip_counts(&self.skipped_dirs, &self.skipped_files, no_sign),
                dirs: self.skipped_dirs,
                files: self.skipped_files,
                no_sign,
            },
            would_probe: self.examined.would_probe,
            explain: opts
                .explain
                .as_ref()
                .map(|n| explanation.unwrap_or_else(|| not_found(n))),
            warnings: self.warnings,
            hints,
        }
    }
}

/// What examining the executables (phases 3-4) did, as the report counts it.
struct Examined {
    /// Executables run with `--agent` now (0 in a dry run).
    probed: usize,
    /// Framework manifests converted now (0 in a dry run).
    converted: usize,
    /// What a dry run would have run.
    would_probe: Option<Vec<PlannedProbe>>,
    /// Native answers the cache could not store, by key: used from memory.
    unstored: HashMap<String, Arc<[u8]>>,
    /// The summaries of the answers judged by this scan.
    judged: Judged,
}

/// The index summary of each answer this scan judged (its model was parsed then), by
/// the sha256 hex of its bytes: composing bytes with that hash takes the summary
/// instead of parsing them again. Keyed by content, not by the cache file's name, so
/// a stored answer damaged since (the cache keeps an existing file) is parsed as read.
type Judged = HashMap<String, registry::MetaSummary>;

impl Examined {
    /// Counts what the examination ran (warning when `--probe all` ran everything) and
    /// takes the answers that could not be stored out of the work items.
    fn of(
        works: &mut [Work],
        dirs: &Dirs,
        opts: &ScanOptions,
        warnings: &mut Vec<String>,
    ) -> Examined {
        let ran = |pred: &dyn Fn(&Work) -> bool| {
            if opts.dry_run {
                0
            } else {
                works.iter().filter(|w| pred(w)).count()
            }
        };
        let probed = ran(&|w| w.probe_now.is_some() && w.rec.probe.is_some());
        let converted = ran(&|w| w.convert_now && w.rec.convert.is_some());
        if opts.probe == ProbeMode::All && !opts.dry_run {
            warnings.push(format!(
                "--probe all ran {probed} executable(s) with --agent, ATIP or not"
            ));
        }
        let would_probe = opts.dry_run.then(|| {
            works
                .iter()
                .flat_map(|w| {
                    let convert = w.convert_now.then_some(ProbeWhy::Convert);
                    w.probe_now
                        .into_iter()
                        .chain(convert)
                        .map(|why| PlannedProbe {
                            name: w.exe.name.clone(),
                            path: w.exe.path.clone(),
                            why,
                        })
                })
                .collect()
        });
        let unstored: HashMap<String, Arc<[u8]>> = works
            .iter_mut()
            .filter_map(|w| w.answers.as_mut())
            .flat_map(|a| std::mem::take(&mut a.unstored))
            .collect();
        if !unstored.is_empty() {
            warnings.push(format!(
                "{} native answer(s) could not be stored in {}; they are used from memory",
                unstored.len(),
                cache::cache_dir(&dirs.data).display()
            ));
        }
        let judged = works
            .iter_mut()
            .filter_map(|w| w.answers.as_mut())
            .flat_map(|a| std::mem::take(&mut a.judged))
            .collect();
        Examined {
            probed,
            converted,
            would_probe,
            unstored,
            judged,
        }
    }
}

/// Finds and reads the man pages of `names` (only where the inference cache is not
/// current), infers on the CPU pool, and starts saving the manual's listings: every page
/// is read, so the index is not needed any more.
fn read_man_pages(
    inf: &mut inferred::Inferred,
    names: Vec<&str>,
    stored: &StoredDocs<'_>,
    cpu_pool: &LazyPool,
    phases: &mut Phases,
) {
    let registry = |file: &str| stored.intact(file).is_some();
    inf.src.look_up(names, &registry, cpu_pool.jobs);
    phases.done("man-page lookup");
    if inf.src.has_pending() {
        cpu_pool.install(|| inf.src.infer_pending());
    }
    phases.done("man-page inference");
    inf.src.save_listings();
}

/// The report's count of what was skipped, by reason.
fn skip_counts(
    dirs: &[paths::DirSkip],
    files: &[FileSkip],
    no_sign: usize,
) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for d in dirs {
        *counts.entry(enum_name(&d.reason)).or_default() += 1;
    }
    for f in files {
        *counts.entry(enum_name(&f.reason)).or_default() += 1;
    }
    if no_sign > 0 {
        counts.insert("no-sign".into(), no_sign);
    }
    counts
}

/// The summary's counts that follow from the work items and the registered tools: by
/// status, by evidence class and by source (`none`: names nothing describes). The
/// caller fills in the rest.
fn summarize(works: &[Work], tools: &[ToolReport], names: usize) -> Summary {
    let mut by_class: BTreeMap<&'static str, usize> = BTreeMap::new();
    for w in works {
        *by_class.entry(evidence_class(w)).or_default() += 1;
    }
    let evidence = by_class
        .into_iter()
        .map(|(c, n)| (c.to_owned(), n))
        .collect();
    // Counted by source, then named: one name per source, not per tool.
    let mut by_source: BTreeMap<Source, usize> = BTreeMap::new();
    for t in tools {
        *by_source.entry(t.source).or_default() += 1;
    }
    let mut sources: BTreeMap<String, usize> = by_source
        .into_iter()
        .map(|(s, n)| (resolve::source_name(s), n))
        .collect();
    sources.insert("none".into(), names.saturating_sub(tools.len()));
    let status = |s: ToolStatus| tools.iter().filter(|t| t.status == s).count();
    Summary {
        executables: works.len(),
        cached: works.iter().filter(|w| w.cached).count(),
        new: status(ToolStatus::New),
        updated: status(ToolStatus::Updated),
        unchanged: status(ToolStatus::Unchanged),
        evidence,
        sources,
        ..Summary::default()
    }
}

/// `--explain`'s answer for a name the scan did not meet.
fn not_found(name: &str) -> Explanation {
    Explanation {
        name: name.to_owned(),
        path: None,
        evidence: vec![format!(
            "no executable named {name:?} on the scanned PATH (or it was skipped: see `skipped`)"
        )],
        candidates: Vec::new(),
        outcome: "not registered".into(),
    }
}

/// The registry metadata files known intact by their 64 hex digits, with their
/// fingerprint (see [`StoredDocs::intact`]).
type UnchangedDocs = foldhash::HashMap<[u8; 64], paths::Fingerprint>;

/// Judges at once, on up to `threads` threads, every file of `<data>/tools` the scan
/// cache knew intact (`known`): on a warm rescan they are the files the man-page
/// look-up and resolve ask about, one `fstatat` each. A file whose status is still the
/// recorded one is intact, as [`StoredDocs::intact`] would find it; any other is left to
/// it (read and hashed only if asked about). Returns the intact ones.
fn check_known(
    data: &std::path::Path,
    known: Option<&cache::OldCache>,
    threads: usize,
) -> UnchangedDocs {
    /// Files per thread below which they are stat'ed on the calling thread alone.
    const MIN_PART: usize = 200;
    let mut unchanged = UnchangedDocs::default();
    let known: Vec<(&str, paths::Fingerprint)> = known.into_iter().flat_map(|k| k.docs()).collect();
    if known.is_empty() {
        return unchanged;
    }
    let tools = crate::statat::SharedDir::new(data.join(registry::TOOLS_DIR));
    let same = in_parts(
        &known,
        threads,
        MIN_PART,
        || (),
        |_, (file, fp)| {
            if !registry_file_name(file) {
                return false;
            }
            let st = tools.link_status(OsStr::new(file));
            st.is_ok_and(|st| st.is_file() && paths::Fingerprint::of_status(&st) == *fp)
        },
    );
    unchanged.reserve(known.len());
    for ((file, fp), same) in known.into_iter().zip(same) {
        if same && let Some(key) = registry_file_key(file) {
            unchanged.insert(key, fp);
        }
    }
    unchanged
}

/// What the previous scan left: the registry's index, the scan cache, and the registry's
/// metadata files.
struct Previous<'a> {
    index: &'a old_index::OldIndex<'a>,
    /// The scan cache as read, when there was one.
    cache: Option<&'a cache::OldCache>,
    stored: &'a StoredDocs<'a>,
}

/// The registry's metadata files (`tools/<sha256>.json`) as this scan finds them: whether
/// each is there and still hashes to its name, judged once per scan and file, for the
/// man-page source (whether it may offer the registry's copy of a document) and for
/// resolve (whether an unchanged entry's file must be written again).
struct StoredDocs<'a> {
    /// `<data-dir>/tools`, whose files are stat'ed relative to one handle of it.
    tools: crate::statat::SharedDir,
    /// The scan cache, whose fingerprints are those of the files it last knew intact.
    known: Option<&'a cache::OldCache>,
    /// The files of `known` found unchanged when the scan began, by their 64 hex digits
    /// (no string allocated per file; a fast hash), with their fingerprint: filled once
    /// before the look-ups start and only read afterwards, so without a lock (the
    /// man-page look-up asks from several threads at once, ~1,000 times on a warm
    /// rescan).
    unchanged: foldhash::HashMap<[u8; 64], paths::Fingerprint>,
    /// The verdicts on every other file asked about: the fingerprint of an intact file,
    /// `None` for a missing or damaged one. Behind a lock (as `hashed` is atomic).
    verdicts: std::sync::Mutex<foldhash::HashMap<[u8; 64], Option<paths::Fingerprint>>>,
    /// How many metadata files were read and hashed to check them (`atip -v scan` logs
    /// it: 0 on a warm rescan).
    hashed: std::sync::atomic::AtomicUsize,
}

impl<'a> StoredDocs<'a> {
    /// The metadata files of `<data>/tools`; `known` is the scan cache's fingerprints,
    /// of which [`check_known`] found `unchanged` still so.
    fn of(
        data: &std::path::Path,
        known: Option<&'a cache::OldCache>,
        unchanged: UnchangedDocs,
    ) -> Self {
        StoredDocs {
            tools: crate::statat::SharedDir::new(data.join(registry::TOOLS_DIR)),
            known,
            unchanged,
            verdicts: Default::default(),
            hashed: Default::default(),
        }
    }

    /// The fingerprint of the metadata file `file` (under `tools/`) if it is a regular
    /// file whose bytes hash to its name. Its bytes are read and hashed only when its
    /// fingerprint is not the one the scan cache recorded when it was last known intact:
    /// a warm rescan stats each file instead of hashing ~1,000 of them, and an edit in
    /// place still changes the fingerprint (its ctime, which no program can set back).
    fn intact(&self, file: &str) -> Option<paths::Fingerprint> {
        let key = registry_file_key(file)?;
        if let Some(fp) = self.unchanged.get(&key) {
            return Some(*fp);
        }
        let verdicts = || self.verdicts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = verdicts().get(&key) {
            return *v;
        }
        let verdict = self.judge(file);
        verdicts().insert(key, verdict);
        verdict
    }

    /// Logs (`atip -v scan`) how many files were read and hashed to check them.
    fn log_hashed(&self) {
        let hashed = self.hashed.load(Ordering::Relaxed);
        log::debug!("scan: {hashed} registry metadata file(s) hashed to check them");
    }

    /// Only a name of the form the registry writes (`<64 hex>.json`: nothing that
    /// reaches outside `tools/`) can be intact, and only as a regular file in `tools/`
    /// itself (`lstat`: a symlink is not one), as one listing of the directory used to
    /// tell; one `fstatat` per file now tells it without the listing.
    fn judge(&self, file: &str) -> Option<paths::Fingerprint> {
        if !registry_file_name(file) {
            return None;
        }
        let st = self.tools.link_status(OsStr::new(file)).ok()?;
        // Taken before the bytes are read: a change made meanwhile is seen next time.
        let fp = paths::Fingerprint::of_status(&st);
        let ok = st.is_file()
            && (self.known.and_then(|k| k.doc(file)) == Some(fp) || {
                self.hashed.fetch_add(1, Ordering::Relaxed);
                registry::hashes_to_name(self.tools.path(), file)
            });
        ok.then_some(fp)
    }
}

/// Whether `file` has the form of the registry's metadata files, `<64 hex>.json`
/// (nothing that reaches outside `tools/`).
fn registry_file_name(file: &str) -> bool {
    file.strip_suffix(".json")
        .is_some_and(crate::digest::is_hex64)
}

/// The 64 hex digits of a metadata file named as the registry writes them: the key of
/// its verdict.
fn registry_file_key(file: &str) -> Option<[u8; 64]> {
    registry_file_name(file).then(|| file.as_bytes()[..64].try_into().ok())?
}

/// Each registered name's winning candidate and the pattern files merged into its
/// document, in resolve order (each name once).
#[derive(Default)]
struct Winners<'p>(Vec<(String, Candidate, Vec<&'p PatternFile>)>);

impl<'p> Winners<'p> {
    /// Each winner by its name: made only when a commit found names stale (another
    /// writer changed the registry meanwhile).
    fn by_name(&self) -> HashMap<&str, (&Candidate, &[&'p PatternFile])> {
        let each = self.0.iter();
        each.map(|(n, w, applied)| (n.as_str(), (w, applied.as_slice())))
            .collect()
    }
}

/// What phase 6 decided for every name.
#[derive(Default)]
struct Resolved<'p> {
    /// What goes to the registry, per registered name (unchanged or fresh).
    found: Vec<Found>,
    /// The report's entry of each registered name (names are unique: each belongs to
    /// one file), in resolve order; sorted by name for the report. A list rather than
    /// a map keyed by a copy of each name.
    tool_reports: Vec<ToolReport>,
    /// Probes and conversions that failed, and documents that could not be made.
    failed: Vec<FailedTool>,
    /// What the scan cache remembers as sent, per name, in resolve order (each name
    /// once: sorted once for the cache). A list, not a hash table: a warm rescan fills
    /// it with every name, and a table sized for them all is written all over (a page
    /// fault per page), a list only as far as it is filled.
    tool_records: Vec<(String, ToolRecord)>,
    /// Each name's winning candidate and the pattern files merged in (an unchanged
    /// name's is composed only if the registry changed under the commit), in resolve
    /// order: found by name through `fresh`, or by [`Winners::by_name`] for the rare names
    /// a commit finds stale. A list for the same reason as `tool_records` (a candidate
    /// is a few hundred bytes).
    winners: Winners<'p>,
    /// Names whose document must be composed and sent, with their winner's place in
    /// `winners` (none on a warm rescan).
    fresh: foldhash::HashMap<String, usize>,
    /// Names kept from the previous scan because the source that gave them failed.
    kept: Vec<String>,
    /// `--explain`'s answer, when its name was met.
    explanation: Option<Explanation>,
    /// Names whose winner is a shim.
    applied_shims: usize,
    /// Executables that could not be read or hashed (each once, by its first name).
    unreadable: Vec<FileSkip>,
    /// When the fresh documents were checked (set by `compose_fresh`).
    now: String,
    /// Registry metadata files known intact this scan, with their fingerprint: the scan
    /// cache's memo for the next scan (see [`Previous::intact`]). In the order learnt,
    /// a file again for each name that shares it and again when the commit rewrote it:
    /// the last word on a file is its entry ([`Caches::remember`]). A list for the
    /// reason `tool_records` is one.
    docs: Vec<(String, paths::Fingerprint)>,
    /// What the registry holds after this scan, for the next one (set by `send`).
    registry_memo: old_index::NextMemo,
}

impl Resolved<'_> {
    /// Composes the document of every fresh name. Names sharing a file and a winner
    /// share one document (the registry stores it once, by content hash); a document
    /// that cannot be made turns its name into a failure.
    fn compose_fresh(&mut self, now: &str, judged: &Judged) {
        self.now = now.to_owned();
        // Nothing fresh (a warm rescan): rayon's global pool is not started for nothing.
        if self.fresh.is_empty() {
            return;
        }
        // Each document is parsed whole to be checked (a 1 MB answer for ~9 ms), unless
        // this scan judged the same bytes: on every core, the results then taken in order.
        let (winners, fresh) = (&self.winners, &self.fresh);
        let composed: Vec<_> = self
            .found
            .par_iter()
            .map(|f| {
                fresh.get(&f.name).map(|&i| {
                    let (_, winner, applied) = &winners.0[i];
                    compose(winner, applied, judged)
                })
            })
            .collect();
        let mut dropped: HashSet<String> = HashSet::new();
        for (f, composed) in self.found.iter_mut().zip(composed) {
            let Some(composed) = composed else { continue };
            match composed {
                Ok((document, summary)) => {
                    f.meta = FoundMeta::Fresh {
                        document,
                        summary,
                        checked_at: now.to_owned(),
                    }
                }
                Err(e) => {
                    self.failed.push(FailedTool {
                        name: f.name.clone(),
                        path: f.path.clone(),
                        reason: FailReason::Invalid,
                        message: e.to_string(),
                        cached: false,
                        diagnostics: Vec::new(),
                    });
                    dropped.insert(f.name.clone());
                }
            }
        }
        self.found.retain(|f| !dropped.contains(&f.name));
        self.tool_reports.retain(|t| !dropped.contains(&t.name));
        if !dropped.is_empty() {
            self.tool_records.retain(|(n, _)| !dropped.contains(n));
        }
    }

    /// Phase 7: sends what was resolved to the registry (unless nothing changed: a warm
    /// rescan takes no lock and re-reads nothing) and updates the report's statuses
    /// with what the registry said. Returns the registry's part of the report and the
    /// names it removed.
    fn send(
        &mut self,
        dirs: &Dirs,
        old_index: &old_index::OldIndex,
        scanned_dirs: Vec<PathBuf>,
        opts: &ScanOptions,
        cpu_pool: &LazyPool,
        warnings: &mut Vec<String>,
    ) -> Result<(RegistryInfo, Vec<String>), ScanError> {
        let mut update = Update {
            found: std::mem::take(&mut self.found),
            scanned_dirs,
        };
        // A warm rescan that changes nothing does not take the lock or re-read the index
        // (nor read it at all while the scan cache's memo of it holds).
        let needed = old_index.commit_needed(&update);
        // On the CPU pool: the catalog compiled after the commit flattens documents with
        // rayon, and would otherwise start rayon's global pool beside this one.
        let (commit, stored) = if needed {
            let (winners, now) = (&self.winners, self.now.as_str());
            cpu_pool.install(|| commit(dirs, &mut update, winners, now, opts))?
        } else {
            Default::default()
        };
        let clean = self.kept.is_empty() && commit.rejected.is_empty() && commit.stale.is_empty();
        self.registry_memo = old_index.memo_after(&update.found, needed, clean);
        old_index.log_read();
        warnings.extend(old_index.take_warning());
        self.remember_stored(&dirs.data, &stored);
        let added: HashSet<&String> = commit.added.iter().collect();
        let updated: HashSet<&String> = commit.updated.iter().collect();
        for t in self.tool_reports.iter_mut() {
            if t.status == ToolStatus::Kept {
                continue;
            }
            t.status = if added.contains(&t.name) {
                ToolStatus::New
            } else if updated.contains(&t.name) {
                ToolStatus::Updated
            } else {
                ToolStatus::Unchanged
            };
        }
        for r in &commit.rejected {
            if let Some(i) = self.tool_reports.iter().position(|t| t.name == r.name) {
                let t = self.tool_reports.remove(i);
                self.failed.push(FailedTool {
                    name: t.name.clone(),
                    path: t.path.clone(),
                    reason: FailReason::Invalid,
                    message: format!("refused by the registry: {}", r.reason),
                    cached: false,
                    diagnostics: Vec::new(),
                });
            }
            self.tool_records.retain(|(n, _)| *n != r.name);
        }
        for n in &commit.stale {
            self.tool_reports.retain(|t| t.name != *n);
            self.tool_records.retain(|(t, _)| t != n);
            warnings.push(format!(
                "{n}: the registry changed under this scan; run `atip scan` again"
            ));
        }
        warnings.extend(commit.warnings.iter().cloned());
        let mut removed = commit.removed.clone();
        removed.sort();
        removed.dedup();
        let registry_info = RegistryInfo {
            path: dirs.registry_file(),
            written: commit.written,
            corrupt_backup: commit.corrupt_backup.clone(),
        };
        Ok((registry_info, removed))
    }
}

impl Resolved<'_> {
    /// Remembers the fingerprint of each metadata file (`<hex>.json`) the commit wrote
    /// or found intact, so the next scan does not hash them.
    fn remember_stored(&mut self, data: &std::path::Path, files: &[String]) {
        let dir = data.join(registry::TOOLS_DIR);
        for file in files {
            if let Ok(md) = std::fs::symlink_metadata(dir.join(file))
                && md.is_file()
            {
                self.docs
                    .push((file.to_owned(), paths::Fingerprint::of(&md)));
            }
        }
    }
}

/// Phase 8: the scan cache as this scan leaves it — every readable executable's record,
/// what was sent per name, and what the old cache knew of files outside this scan's
/// directories (so scans with different `--path` values do not undo each other's work)
/// — written only if its bytes changed.
fn save_scan_cache(
    dirs: &Dirs,
    works: &[Work],
    old_files: Option<&cache::OldCache>,
    mut new: Cache,
    scan_dirs: &[paths::ScanDir],
) -> Result<bool, atip_base::fileio::CacheError> {
    for w in works {
        if w.unreadable.is_none()
            && let Some(k) = w.exe.canonical().to_str()
        {
            new.files.insert(k.to_owned(), w.rec.clone());
        }
    }
    // The old records of files this scan did not examine.
    let examined = examined_paths(works);
    let left = old_files.map(|f| f.kept(|p| !examined.contains(p) && kept_elsewhere(p, scan_dirs)));
    new.files.extend(left.into_iter().flatten());
    new.save_unless(&dirs.data, old_files)
}

/// The directory listings the next scan may use, when they are not those kept: each
/// scanned directory's listing (remembered, or read now and calm), and the old ones of
/// directories this scan did not list that still exist. `None` when nothing changed:
/// every scanned directory's listing was remembered, or read now and neither kept nor
/// replacing a kept one.
fn listings_to_keep(
    old: Option<&cache::OldListings>,
    scan_dirs: &[paths::ScanDir],
    listed: &[paths::Listed],
) -> Option<BTreeMap<String, cache::Listing>> {
    let unchanged = scan_dirs.iter().zip(listed).all(|(d, l)| match l {
        paths::Listed::Remembered => true,
        paths::Listed::Read(None) => d
            .canonical
            .to_str()
            .is_none_or(|k| old.is_none_or(|o| !o.has_listing(k))),
        paths::Listed::Read(Some(_)) => false,
    });
    if unchanged {
        return None;
    }
    let how: HashMap<&str, &paths::Listed> = scan_dirs
        .iter()
        .zip(listed)
        .filter_map(|(d, l)| Some((d.canonical.to_str()?, l)))
        .collect();
    let mut kept: BTreeMap<String, cache::Listing> = old
        .map(|o| {
            o.listings(|dir| match how.get(dir) {
                Some(l) => **l == paths::Listed::Remembered,
                None => std::path::Path::new(dir).is_dir(),
            })
        })
        .into_iter()
        .flatten()
        .collect();
    for (d, l) in scan_dirs.iter().zip(listed) {
        if let (paths::Listed::Read(Some(packed)), Some(k)) = (l, d.canonical.to_str()) {
            let listing = cache::Listing {
                dir: d.status,
                names: packed.bytes.clone(),
                links: packed.links.clone(),
            };
            kept.insert(k.to_owned(), listing);
        }
    }
    Some(kept)
}

/// The canonical path of every executable examined (the keys `plan` looked up).
fn examined_paths(works: &[Work]) -> HashSet<&str> {
    works
        .iter()
        .filter_map(|w| w.exe.canonical().to_str())
        .collect()
}

/// Whether the old record of a file this scan did not examine is kept: the file is
/// outside the scanned directories (another `--path` scanned it) and still there.
fn kept_elsewhere(p: &str, scan_dirs: &[paths::ScanDir]) -> bool {
    let path = std::path::Path::new(p);
    !paths::in_dirs(path, scan_dirs) && path.exists()
}

/// Whether the scan cache this scan would write is the one it read, without encoding it:
/// every executable's record is the one `plan` took from the cache, every record left
/// there is kept (its file is outside the scanned directories and still there), and the
/// tools, shims and metadata files are as they were. Anything else (an unreadable file,
/// a path that is not UTF-8, …) answers no: the cache is encoded and compared by bytes.
/// (`new.tools` is set.)
fn unchanged_cache(
    works: &[Work],
    old: &Cache,
    files: &cache::OldCache,
    new: &Cache,
    scan_dirs: &[paths::ScanDir],
) -> bool {
    let same = files.same_tools(&new.tools)
        && new.shims == old.shims
        && files.same_docs(&new.docs)
        && works.iter().all(|w| {
            w.unreadable.is_none() && w.exe.canonical().to_str().is_some() && w.from_cache
        })
        && {
            let paths: Vec<Option<&str>> =
                works.iter().map(|w| w.exe.canonical().to_str()).collect();
            let mut held = 0;
            files.visit_stored(&paths, |i, a| held += usize::from(*a == works[i].rec));
            held == works.len()
        };
    // Every work item took its own record (canonical paths are distinct): the others
    // are records of files this scan did not examine.
    same && (files.len() == works.len() || {
        let examined = examined_paths(works);
        files.all_paths(|p| examined.contains(p) || kept_elsewhere(p, scan_dirs))
    })
}

/// Reports the man pages that gave no document and saves the inference cache (not in a
/// dry run).
fn finish_inference(inf: inferred::Inferred, dry_run: bool, warnings: &mut Vec<String>) {
    let failed_pages = inf.src.failed();
    if !failed_pages.is_empty() {
        let first: Vec<String> = failed_pages
            .iter()
            .take(3)
            .map(|(n, m)| format!("{n}: {m}"))
            .collect();
        warnings.push(format!(
            "{} man page(s) gave no document ({}{})",
            failed_pages.len(),
            first.join("; "),
            if failed_pages.len() > 3 { "; …" } else { "" }
        ));
    }
    if !dry_run && let Err(m) = inf.src.save() {
        warnings.push(format!("failed to save the inference cache: {m}"));
    }
}

/// The report's hints: what the user can do about what this scan left out.
fn hints(
    no_sign: usize,
    apps_waiting: usize,
    failed: &[FailedTool],
    source_failed: bool,
    opts: &ScanOptions,
    dirs: &Dirs,
) -> Vec<String> {
    let mut hints = Vec::new();
    if no_sign > 0 {
        hints.push(match opts.probe {
            ProbeMode::Help => format!(
                "{no_sign} executable(s) show no sign of supporting ATIP and their --help does not mention --agent; list trusted tools in {} as {{\"probe\": {{\"allow\": [\"NAME\"]}}}} to probe them anyway",
                dirs.config.join("config.json").display()
            ),
            _ => format!(
                "{no_sign} executable(s) show no sign of supporting ATIP and were not run; `atip scan --probe help` also asks their --help (which runs them), or list trusted tools in {} as {{\"probe\": {{\"allow\": [\"NAME\"]}}}}",
                dirs.config.join("config.json").display()
            ),
        });
    }
    if apps_waiting > 0 {
        hints.push(format!(
            "{apps_waiting} Tooli app(s) recognised from their package metadata were not converted (converting imports the app's code); list them in {} as {{\"probe\": {{\"allow\": [\"NAME\"]}}}} or run `atip scan --convert`",
            dirs.config.join("config.json").display()
        ));
    }
    if failed.iter().any(|f| f.cached) {
        hints.push("failures marked cached are from an earlier scan of the unchanged file; `atip scan --refresh` probes them again".into());
    }
    if source_failed {
        hints.push("a metadata source could not be read: the tools it provided before were kept; fix the cause and scan again".into());
    }
    hints
}

/// Whether metadata of `source` is bound to the executable's bytes (it came from running
/// them), so that its entry must pin their sha256.
fn binds_bytes(source: Source) -> bool {
    matches!(source, Source::Native | Source::Converted)
}

/// Phase 5: hashes (in parallel) every readable file that some source needs the sha256
/// of (see [`MetadataSource::needs_hash`]) and whose hash the cache does not hold. Files
/// described by name only are not read: their entries are pinned by their `stat`.
fn hash_wanted(
    works: &mut [Work],
    names: &Names,
    sources: &[&dyn MetadataSource],
    pool: &LazyPool,
) {
    let mut wants = vec![false; works.len()];
    for (name, path, i) in names.iter(works) {
        let w = &works[i];
        if wants[i] || w.unreadable.is_some() || w.rec.sha256.is_some() {
            continue;
        }
        let subject = subject(name, path, w);
        wants[i] = sources.iter().any(|s| s.needs_hash(&subject));
    }
    if !wants.iter().any(|b| *b) {
        return;
    }
    pool.install(|| {
        works
            .par_iter_mut()
            .zip(wants.par_iter())
            .filter(|(_, want)| **want)
            .for_each(
                |(w, _)| match crate::digest::sha256_file(w.exe.canonical()) {
                    Ok(h) => w.rec.sha256 = Some(h),
                    Err(e) => w.unreadable = Some(format!("failed to hash: {e}")),
                },
            );
    });
}

/// The hashes whose remote shims to fetch: binaries a remote registry lists that no
/// source of higher precedence describes.
fn remote_wanted(
    remote: &Remote,
    works: &[Work],
    names: &Names,
    sources: &[&dyn MetadataSource],
) -> std::collections::BTreeSet<String> {
    let remote_rank = resolve::rank(Source::Remote);
    let mut wanted: std::collections::BTreeSet<String> = Default::default();
    for (name, path, i) in names.iter(works) {
        let w = &works[i];
        let Some(hex) = w
            .rec
            .sha256
            .as_deref()
            .and_then(|h| h.strip_prefix("sha256:"))
        else {
            continue;
        };
        if wanted.contains(hex) || !remote.lists_hash(hex) {
            continue;
        }
        let subj = subject(name, path, w);
        let mut offered = Vec::new();
        for s in sources.iter().filter(|s| s.id() != "remote") {
            s.offer(&subj, &mut offered);
        }
        if !offered
            .iter()
            .any(|c| resolve::rank(c.source) < remote_rank)
        {
            wanted.insert(hex.to_owned());
        }
    }
    wanted
}

/// Tools below which [`resolve_names`] resolves on the calling thread alone: a name that
/// gets a winner costs a few µs (a name nothing describes, a fraction of one), handing
/// half of them to a helper a wake-up and the faults of a second set of lists.
const MIN_PARALLEL_RESOLVE: usize = 256;

/// Phase 6: every name's candidates from every source, the winner chosen by
/// [`resolve::choose`] (the one place that decides), and whether what it would send is
/// what the registry already holds. Names are independent of each other: with
/// `threads` > 1 the second half of them is resolved on a helper while this thread
/// resolves the first, and the halves are joined in order, so the outcome is the one
/// thread's.
#[allow(clippy::too_many_arguments)]
fn resolve_names<'p>(
    names: &Names,
    works: &[Work],
    sources: &[&dyn MetadataSource],
    failures: &[SourceFailure],
    previous: &Previous<'_>,
    patterns: &'p shims::Patterns,
    opts: &ScanOptions,
    threads: usize,
) -> Resolved<'p> {
    // Only pattern files ask which names exist: the set is built for them alone.
    let exe_names: foldhash::HashSet<&str> = if patterns.files.is_empty() {
        Default::default()
    } else {
        names.iter(works).map(|(n, _, _)| n).collect()
    };
    let resolver = Resolver {
        works,
        sources,
        failures,
        previous,
        patterns,
        opts,
        exe_names: &exe_names,
        // The stored entry matters only when a source failed (it may be kept):
        // otherwise the index need not be read (see `old_index`).
        index: if failures.is_empty() {
            None
        } else {
            previous.index.get()
        },
    };
    let all: Vec<(&str, &std::path::Path, usize)> = names.iter(works).collect();
    // The tools the last scan sent (every name, scanning cold): a warm rescan of many
    // executables but few tools (the bench tree: 2,000 and 3) is faster on one thread.
    let tools = previous.cache.map_or(all.len(), cache::OldCache::tools);
    if threads < 2 || all.len().min(tools) < MIN_PARALLEL_RESOLVE {
        return resolver.resolve(&all, 0, all.len());
    }
    let (first, second) = all.split_at(all.len() / 2);
    // The first part's lists are sized for every name: the second's are appended to
    // them in place, not copied to lists grown anew.
    let (later, mut out) = crate::statat::beside(
        || resolver.resolve(second, first.len(), second.len()),
        || resolver.resolve(first, 0, all.len()),
    );
    out.append(later);
    out
}

/// What resolving a name needs besides the name (see [`resolve_names`]).
struct Resolver<'a, 'p> {
    works: &'a [Work],
    sources: &'a [&'a dyn MetadataSource],
    failures: &'a [SourceFailure],
    previous: &'a Previous<'a>,
    patterns: &'p shims::Patterns,
    opts: &'a ScanOptions,
    /// Every name, when a pattern file asks which exist (else empty).
    exe_names: &'a foldhash::HashSet<&'a str>,
    /// The registry's index, read only when a source failed.
    index: Option<&'a registry::Index>,
}

impl<'p> Resolver<'_, 'p> {
    /// Resolves `names` (each with its path and work item), the first of them being the
    /// `offset`th of all names, into lists sized for `room` names.
    fn resolve(
        &self,
        names: &[(&str, &std::path::Path, usize)],
        offset: usize,
        room: usize,
    ) -> Resolved<'p> {
        let (works, opts) = (self.works, self.opts);
        let exists = |n: &str| self.exe_names.contains(n);
        let (mut out, mut candidates) = (Resolved::for_names(room), Vec::new());
        for (n, &(name, path, i)) in names.iter().enumerate() {
            let w = &works[i];
            // An executable's first name is its primary one; the others are its aliases.
            let primary = offset + n < works.len();
            let explaining = opts.explain.as_deref() == Some(name);
            if let Some(m) = &w.unreadable {
                if primary {
                    out.unreadable.push(FileSkip {
                        name: name.to_owned(),
                        path: path.to_owned(),
                        reason: FileSkipReason::Unreadable,
                        detail: m.clone(),
                    });
                }
                if explaining {
                    out.explanation = Some(explain(name, path, w, primary, &[], None, Some(m)));
                }
                continue;
            }
            if primary {
                out.failed.extend(failed_examinations(name, path, w));
            }
            let resolution = choose(
                name,
                path,
                w,
                self.sources,
                self.failures,
                self.index,
                &mut candidates,
            );
            if explaining {
                out.explanation = Some(explain(
                    name,
                    path,
                    w,
                    primary,
                    &resolution.losers,
                    Some(&resolution.outcome),
                    None,
                ));
            }
            let winner = match resolution.outcome {
                Outcome::Nothing => continue,
                Outcome::Kept { entry, why } => {
                    out.keep(name, &entry, &why, self.previous);
                    continue;
                }
                Outcome::Winner(c) => c,
            };
            // Pinned when known (see `hash_wanted`). Metadata bound to the bytes always
            // is: not hashed then is only possible in a dry run's planning of a probe.
            if w.rec.sha256.is_none() && (winner.by_hash || binds_bytes(winner.source)) {
                continue;
            }
            let applied: Vec<&PatternFile> = (self.patterns.files.iter())
                .filter(|p| p.applies_to(name, &exists))
                .collect();
            out.add_winner(name, path, w, winner, applied, self.previous, opts);
        }
        out
    }
}

/// A readable name's candidates from every source, and the choice among them
/// (`index`: the registry's index, read only when a source failed). `candidates`: an
/// empty list to collect them in, left empty.
fn choose(
    name: &str,
    path: &std::path::Path,
    w: &Work,
    sources: &[&dyn MetadataSource],
    failures: &[SourceFailure],
    index: Option<&registry::Index>,
    candidates: &mut Vec<Candidate>,
) -> resolve::Resolution {
    let subj = subject(name, path, w);
    for s in sources {
        s.offer(&subj, candidates);
    }
    let stored = index.and_then(|i| i.tools.get(name));
    resolve::choose(candidates, stored, failures)
}

/// The failed probe and the failed framework-manifest conversion of an executable, as
/// the report's failures.
fn failed_examinations(name: &str, path: &std::path::Path, w: &Work) -> Vec<FailedTool> {
    let failure = |rec: Option<&ProbeRecord>| match rec {
        Some(ProbeRecord::Failed {
            reason,
            message,
            diagnostics,
            ..
        }) => Some((*reason, message.clone(), diagnostics.clone())),
        _ => None,
    };
    let probe = failure(w.rec.probe.as_deref()).map(|(reason, message, diagnostics)| FailedTool {
        name: name.to_owned(),
        path: path.to_owned(),
        reason,
        message,
        cached: w.cached,
        diagnostics,
    });
    let convert =
        failure(w.rec.convert.as_deref()).map(|(reason, message, diagnostics)| FailedTool {
            name: name.to_owned(),
            path: path.to_owned(),
            reason,
            message: format!("converting its framework manifest: {message}"),
            cached: !w.convert_now,
            diagnostics,
        });
    probe.into_iter().chain(convert).collect()
}

impl<'p> Resolved<'p> {
    /// Nothing decided yet for `names` names: the tables every winner goes into sized
    /// once (a winner, a report entry and a registry entry are a few hundred bytes
    /// each, copied at every growth).
    fn for_names(names: usize) -> Self {
        let mut out = Resolved::default();
        out.winners.0.reserve(names);
        out.found.reserve(names);
        out.tool_reports.reserve(names);
        out.tool_records.reserve(names);
        out.docs.reserve(names);
        out
    }

    /// `later`'s decisions after these (names resolved after this part's): lists
    /// joined in order, `later`'s winners found at their new places.
    fn append(&mut self, later: Resolved<'p>) {
        // Every field named: one added later must be joined here too.
        let Resolved {
            found,
            tool_reports,
            failed,
            tool_records,
            winners,
            fresh,
            kept,
            explanation,
            applied_shims,
            unreadable,
            docs,
            now: _,
            registry_memo: _,
        } = later;
        let offset = self.winners.0.len();
        self.found.extend(found);
        self.tool_reports.extend(tool_reports);
        self.failed.extend(failed);
        self.tool_records.extend(tool_records);
        self.winners.0.extend(winners.0);
        (self.fresh).extend(fresh.into_iter().map(|(n, i)| (n, offset + i)));
        self.kept.extend(kept);
        self.explanation = self.explanation.take().or(explanation);
        self.applied_shims += applied_shims;
        self.unreadable.extend(unreadable);
        self.docs.extend(docs);
    }

    /// A name kept from the previous scan as it was (the source that gave it failed):
    /// sent unchanged, reported as kept, and remembered as sent before so the next scan
    /// finds it unchanged.
    fn keep(&mut self, name: &str, entry: &registry::Entry, why: &str, previous: &Previous<'_>) {
        self.kept.push(name.to_owned());
        if let Some(r) = previous.tool(name).and_then(cache::decode_tool) {
            self.tool_records.push((name.to_owned(), r));
        }
        self.tool_reports.push(ToolReport {
            name: name.to_owned(),
            path: entry.path.clone(),
            source: entry.source,
            shim: None,
            trust: entry.trust.clone(),
            status: ToolStatus::Kept,
            patterns: Vec::new(),
            warnings: vec![format!("kept from the previous scan: {why}")],
        });
        self.found.push(Found {
            name: name.to_owned(),
            path: entry.path.clone(),
            hash: entry.hash.clone(),
            source: entry.source,
            shim_registry: entry.shim_registry.clone(),
            trust: entry.trust.clone(),
            fingerprint: entry.fingerprint,
            vouched_by: None,
            meta: FoundMeta::Unchanged,
        });
    }

    /// A name's winner: reported, remembered, and sent, as unchanged when the registry
    /// already holds exactly it (else its document is composed later, as fresh).
    #[allow(clippy::too_many_arguments)]
    fn add_winner(
        &mut self,
        name: &str,
        path: &std::path::Path,
        w: &Work,
        winner: Candidate,
        applied: Vec<&'p PatternFile>,
        previous: &Previous<'_>,
        opts: &ScanOptions,
    ) {
        if matches!(
            winner.source,
            Source::Shim | Source::ShimHash | Source::Override | Source::Remote
        ) {
            self.applied_shims += 1;
        }
        let record = ToolRecord {
            key: composition_key(&winner.identity, &applied),
            path: path.to_owned(),
            hash: w.rec.sha256.clone(),
            source: winner.source,
        };
        let unchanged = !opts.refresh
            && previous
                .tool(name)
                .is_some_and(|a| cache::same_tool(a, &record))
            && previous.holds(name, &record, &mut self.docs);
        self.tool_reports.push(ToolReport {
            name: name.to_owned(),
            path: path.to_owned(),
            source: winner.source,
            shim: winner.origin.clone(),
            trust: winner.trust.clone(),
            status: if opts.dry_run {
                ToolStatus::Planned
            } else if unchanged {
                ToolStatus::Unchanged
            } else {
                ToolStatus::New
            },
            patterns: applied.iter().map(|p| p.path.clone()).collect(),
            warnings: winner.warnings.clone(),
        });
        self.found.push(Found {
            name: name.to_owned(),
            path: path.to_owned(),
            hash: record.hash.clone(),
            vouched_by: Some(winner.vouch.unwrap_or_else(|| {
                registry::Vouch::derive(
                    winner.source,
                    winner.shim_registry.as_deref().map(std::path::Path::new),
                    &winner.trust,
                )
            })),
            source: winner.source,
            shim_registry: winner.shim_registry.clone(),
            trust: winner.trust.clone(),
            fingerprint: Some(w.exe.fingerprint.into()),
            meta: FoundMeta::Unchanged,
        });
        self.tool_records.push((name.to_owned(), record));
        if !unchanged {
            self.fresh.insert(name.to_owned(), self.winners.0.len());
        }
        self.winners.0.push((name.to_owned(), winner, applied));
    }
}

impl Previous<'_> {
    /// What the last scan sent for `name`, as the scan cache holds it.
    fn tool(&self, name: &str) -> Option<&cache::ArchivedToolRecord> {
        self.cache?.tool(name)
    }

    /// Whether `name`'s stored entry is what `record` would send: same path, hash and
    /// source, and its metadata file still intact (a deleted or damaged one is written
    /// again from the document). Files found intact go into `checked`.
    fn holds(
        &self,
        name: &str,
        record: &ToolRecord,
        checked: &mut Vec<(String, paths::Fingerprint)>,
    ) -> bool {
        self.index
            .entry_file(name, record)
            .is_some_and(|file| self.intact(file, checked))
    }

    /// Whether the metadata file `file` (under `tools/`) is intact
    /// ([`StoredDocs::intact`], which judges each file once per scan); if so it goes
    /// into `checked` with its fingerprint.
    fn intact(&self, file: &str, checked: &mut Vec<(String, paths::Fingerprint)>) -> bool {
        let Some(fp) = self.stored.intact(file) else {
            return false;
        };
        checked.push((file.to_owned(), fp));
        true
    }
}

/// `pairs` as a map, the last pair of each key winning (as inserting them in order
/// would), sorted once instead of inserted one by one.
fn last_of_each<V>(mut pairs: Vec<(String, V)>) -> BTreeMap<String, V> {
    // Stable: a key's pairs stay in the order given, so the last is the latest.
    pairs.sort_by(|a, b| a.0.cmp(&b.0));
    pairs.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(later, kept);
        }
        same
    });
    pairs.into_iter().collect()
}

/// The composition key of a winner and the pattern files merged into its document: the
/// identity itself when there are none (most tools: no hashing per name on every
/// rescan), else the sha256 hex of the identity and each pattern's path and document.
/// Identities always hold a `:`, hex never does, so the two forms cannot meet.
fn composition_key(identity: &str, applied: &[&PatternFile]) -> String {
    if applied.is_empty() {
        return identity.to_owned();
    }
    let mut src = identity.to_owned();
    for p in applied {
        src.push_str(&format!("|pattern:{}:{}", p.path.display(), p.doc));
    }
    sha256_hex(src.as_bytes())
}

/// Phase 1: the scanned directories (the PATH's and `--allow-dir`s, in order) and their
/// executables, stat'ed on up to `threads` threads, each directory's entries taken from
/// the listings the last scan kept while they hold (returned, for the next save).
fn enumerate(
    dirs: &Dirs,
    opts: &ScanOptions,
    skip: &globset::GlobSet,
    threads: usize,
    warnings: &mut Vec<String>,
) -> (Enumeration, Option<cache::OldListings>) {
    let now_ns = paths::now_ns();
    let old = if opts.refresh {
        None
    } else {
        cache::OldListings::load(&dirs.data)
    };
    let remembered = |d: &paths::ScanDir| {
        old.as_ref()
            .and_then(|o| o.listing(&d.canonical, &d.status))
    };
    let listings = paths::Listings {
        remembered: &remembered,
        now_ns,
    };
    let me = Identity::current();
    let (chosen, skipped) = paths::resolve_dirs(&path_specs(opts, warnings), &me);
    let enumeration = paths::enumerate(chosen, skipped, &me, skip, threads, &listings);
    (enumeration, old)
}

/// The PATH's entries (or `--path`'s) and the `--allow-dir`s, in order.
fn path_specs(opts: &ScanOptions, warnings: &mut Vec<String>) -> Vec<DirEntrySpec> {
    let path_value = match &opts.path {
        Some(p) => p.clone(),
        None => opts
            .env
            .var_os("PATH")
            .map(OsStr::to_owned)
            .unwrap_or_else(|| {
                warnings.push("PATH is not set; only --allow-dir directories are scanned".into());
                OsString::new()
            }),
    };
    let mut specs: Vec<DirEntrySpec> = if path_value.is_empty() {
        Vec::new()
    } else {
        paths::split_path(&path_value)
            .into_iter()
            .map(|path| DirEntrySpec {
                path,
                allowed: false,
            })
            .collect()
    };
    specs.extend(opts.allow_dirs.iter().map(|d| DirEntrySpec {
        path: d.clone().into_os_string(),
        allowed: true,
    }));
    specs
}

/// Phase 2: each executable with what the cache knows of its unchanged file; outcomes
/// that cannot be reused (a timeout shorter than this scan's, a lost answer) are dropped.
fn plan(
    executables: Vec<Executable>,
    old_files: Option<&cache::OldCache>,
    allow: &globset::GlobSet,
    dirs: &Dirs,
    opts: &ScanOptions,
) -> Vec<Work> {
    let mut works: Vec<Work> = executables
        .into_iter()
        .map(|exe| Work {
            // (An empty set answers without building globset's candidate path.)
            allowlisted: !allow.is_empty() && allow.is_match(&exe.name),
            rec: FileRecord::new(exe.fingerprint),
            exe,
            probe_now: None,
            cached: false,
            no_sign: false,
            unreadable: None,
            read_now: false,
            answers: None,
            convert_now: false,
            app_waiting: false,
            from_cache: false,
        })
        .collect();
    // Each record decoded into its work in place: a table of them beside the works
    // touched as many fresh pages again (~300 KB on the tree of 2,000).
    if let Some(files) = old_files {
        let mut paths: Vec<Option<&str>> = Vec::with_capacity(works.len());
        let mut slots = Vec::with_capacity(works.len());
        for Work {
            exe,
            rec,
            from_cache,
            cached,
            ..
        } in works.iter_mut()
        {
            paths.push(exe.canonical().to_str());
            slots.push((&exe.fingerprint, rec, from_cache, cached));
        }
        files.visit_stored(&paths, |i, a| {
            let (fp, rec, from_cache, cached) = &mut slots[i];
            if let Some(mut decoded) = cache::decode_if(a, fp) {
                reuse_outcomes(&mut decoded, &dirs.data, opts.timeout);
                **cached = decoded.probe.is_some();
                **rec = decoded;
                **from_cache = true;
            }
        });
    }
    works
}

/// Drops the outcomes of a cached `rec` a scan with this probe `timeout` cannot reuse:
/// a timeout shorter than its own (probe or conversion), a native answer whose document
/// is lost from `data`.
fn reuse_outcomes(rec: &mut FileRecord, data: &std::path::Path, timeout: Duration) {
    let timeout_ms = timeout.as_millis() as u64;
    let convert_ms = timeout.max(framework::CONVERT_TIMEOUT_MIN).as_millis() as u64;
    let kept = |outcome: &ProbeRecord, at_least_ms: u64| match outcome {
        ProbeRecord::Failed {
            reason: FailReason::Timeout,
            timeout_ms: t,
            ..
        } => *t >= at_least_ms,
        ProbeRecord::Native { doc, .. } => cache::native_doc_file(data, doc).is_file(),
        ProbeRecord::Failed { .. } => true,
    };
    if rec.probe.as_deref().is_some_and(|p| !kept(p, timeout_ms)) {
        rec.probe = None;
    }
    if rec.convert.as_deref().is_some_and(|c| !kept(c, convert_ms)) {
        rec.convert = None;
    }
}

/// Phases 3-4: read each unknown file's evidence and probe what may be run, in one
/// parallel pass: a tool's probe starts as soon as its sign is seen, as a job of its own,
/// not after the whole PATH has been read nor after the files read before it. Only files that need I/O enter the pass, so a warm rescan starts
/// no thread at all.
fn examine(
    works: &mut [Work],
    dirs: &Dirs,
    opts: &ScanOptions,
    progress: &dyn Progress,
    pool: &LazyPool,
) {
    let read_signs = matches!(opts.probe, ProbeMode::Auto | ProbeMode::Help);
    let needs_sign = |w: &Work| read_signs && !w.cached && !w.allowlisted && w.rec.sign.is_none();
    // Package metadata is read once per file (fingerprint) whatever the probe mode.
    let needs_read = |w: &Work| needs_sign(w) || w.rec.app.is_none();
    let convert = opts.convert;
    for w in works.iter_mut() {
        if !needs_read(w) {
            decide(w, opts.probe, convert);
        }
    }
    let active =
        |w: &Work| needs_read(w) || (!opts.dry_run && (w.probe_now.is_some() || w.convert_now));
    let todo = works.iter().filter(|w| active(w)).count() as u64;
    if todo == 0 {
        return;
    }
    progress.start(todo);
    let data = dirs.data.as_path();
    let timeout = opts.timeout;
    let mode = opts.probe;
    let dry_run = opts.dry_run;
    let cancel = opts.cancel.as_ref();
    let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let child = probe::Child {
        cancel,
        env: &opts.env,
    };
    let follower = follower(opts);
    let runs_children = |w: &Work| !dry_run && (w.probe_now.is_some() || w.convert_now);
    // One thread per CPU (at most half the pool) reads files, one at a time from a
    // shared queue, and hands each executable to run on as a job of its own; the other
    // threads (and readers once the queue is empty) take those jobs at once. A tool's
    // probe so starts while the rest of the PATH is still read. (When every thread read
    // and probed what it read, the tools that sort together — `atip-*` — ran one after
    // another on the thread that read them.) Reading is CPU work: more readers than CPUs
    // would only hold more read buffers.
    let queue = std::sync::Mutex::new(works.iter_mut().filter(|w| active(w)));
    let readers = crate::statat::cpus().unwrap_or(2).min(pool.jobs / 2).max(1);
    pool.install(|| {
        rayon::scope(|children| {
            for _ in 0..readers {
                children.spawn(|children| {
                    loop {
                        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                        let Some(w) = next else { return };
                        if cancelled() {
                            return;
                        }
                        if needs_read(w) {
                            read_evidence(w, &follower, needs_sign(w));
                            decide(w, mode, convert);
                        }
                        if !runs_children(w) {
                            progress.tick(&w.exe.name);
                            continue;
                        }
                        children.spawn(move |_| run_children(w, data, timeout, child, progress));
                    }
                });
            }
        });
    });
    progress.finish();
    // The answers judged on the probe threads (a 1 MB document's model among them) are
    // freed, but stay resident in those threads' arenas under the man-page listing.
    release_free_memory();
}

/// Follows launchers as the tools would run: `#!/usr/bin/env python3` finds its
/// interpreter on the PATH the tools run with.
fn follower(opts: &ScanOptions) -> launcher::Follower {
    launcher::Follower::with_path(
        paths::split_path(&path_value(opts))
            .into_iter()
            .map(PathBuf::from)
            .filter(|d| d.is_absolute())
            .collect(),
    )
}

/// Runs what was decided for one executable (its probe, its conversion), unless the scan
/// was interrupted meanwhile.
fn run_children(
    w: &mut Work,
    data: &std::path::Path,
    timeout: Duration,
    child: probe::Child<'_>,
    progress: &dyn Progress,
) {
    if child.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
        return;
    }
    if w.probe_now.is_some() {
        probe_one(w, data, timeout, child);
    }
    if w.convert_now {
        convert_one(w, data, timeout, child);
    }
    progress.tick(&w.exe.name);
}

/// Reads what one file's bytes show: its ATIP sign (when `sign`), following launchers,
/// and whether its package metadata makes it a framework app.
fn read_evidence(w: &mut Work, follower: &launcher::Follower, sign: bool) {
    let canonical = w.exe.canonical();
    // A small file's bytes, read with its sign, serve as its launcher head below.
    let mut small = None;
    let mut found = if sign {
        match sign::detect_keeping_small(canonical, launcher::WRAPPER_MAX) {
            Ok((s, bytes)) => {
                small = Some(bytes);
                Some(s)
            }
            Err(e) => {
                w.unreadable = Some(format!("failed to read: {e}"));
                return;
            }
        }
    } else {
        None
    };
    // A file that shows a sign is probed as a native tool; only the others (and files
    // whose sign is not read in this mode) are looked at as launchers and apps.
    if found.is_some_and(|s| s.shown()) {
        w.rec.app.get_or_insert(AppRecord::None);
    } else {
        let head = small.unwrap_or_else(|| launcher::read_wrapper(canonical));
        if found.is_some() {
            found = Some(match &head {
                Some(h) => follower.follow_bytes(canonical, h),
                None => sign::Sign::None,
            });
        }
        if w.rec.app.is_none() {
            w.rec.app = Some(match &head {
                Some(h) => framework::recognise(follower, canonical, h),
                None => AppRecord::None,
            });
        }
    }
    if let Some(s) = found {
        w.rec.sign = Some(s);
        w.read_now = true;
    }
}

/// What the sources are told about one name.
fn subject<'a>(name: &'a str, path: &'a std::path::Path, w: &'a Work) -> Subject<'a> {
    Subject {
        name,
        path,
        canonical: w.exe.canonical(),
        sha256: w.rec.sha256.as_deref(),
        record: &w.rec,
        owner_mode: w.exe.owner_mode,
    }
}

/// The evidence class an executable is counted under in the report.
fn evidence_class(w: &Work) -> &'static str {
    if w.unreadable.is_some() {
        return "unreadable";
    }
    if w.rec.app.as_ref().is_some_and(|a| a.tooli().is_some())
        && !w.rec.sign.is_some_and(|s| s.shown())
    {
        return "framework-app";
    }
    match w.rec.sign {
        Some(s) => s.as_str(),
        None if w.allowlisted => "allowlisted",
        None => "not-read",
    }
}

/// Phase 7: commits the update; when another writer changed the registry in between,
/// sends the names it reports stale again with their documents.
fn commit(
    dirs: &Dirs,
    update: &mut Update,
    winners: &Winners<'_>,
    now: &str,
    opts: &ScanOptions,
) -> Result<(registry::CommitReport, Vec<String>), ScanError> {
    let opts_commit = registry::CommitOptions {
        after: opts.after_commit.clone(),
        ..registry::CommitOptions::from_env(&opts.env)
    };
    release_free_memory();
    let mut commit = registry::commit(dirs, update, &opts_commit)?;
    if commit.stale.is_empty() {
        let stored = stored_files(update, &commit);
        return Ok((commit, stored));
    }
    let stale: HashSet<String> = commit.stale.iter().cloned().collect();
    let winners = winners.by_name();
    for f in update.found.iter_mut().filter(|f| stale.contains(&f.name)) {
        if let Some((winner, applied)) = winners.get(f.name.as_str())
            && let Ok((document, summary)) = compose(winner, applied, &Judged::new())
        {
            f.meta = FoundMeta::Fresh {
                document,
                summary,
                checked_at: now.to_owned(),
            };
        }
    }
    let again = registry::commit(dirs, update, &opts_commit)?;
    commit.written |= again.written;
    commit.added.extend(again.added);
    commit.updated.extend(again.updated);
    commit.unchanged.retain(|n| !stale.contains(n));
    commit.removed.extend(again.removed);
    commit.rejected.extend(again.rejected);
    commit.stale = again.stale;
    commit.warnings.extend(again.warnings);
    if commit.corrupt_backup.is_none() {
        commit.corrupt_backup = again.corrupt_backup;
    }
    let stored = stored_files(update, &commit);
    Ok((commit, stored))
}

/// Gives the allocator's free pages back to the system, after the probes and before a
/// commit. By then the probes' answers (or the manual's listing and the composed
/// documents) are freed, but glibc keeps freed memory resident (and, with the 16 MiB
/// `M_TOP_PAD` atip sets, that much at each heap's top): it sat under the next phase's
/// own peak. Only a scan that probes or commits pays for it (well under a millisecond);
/// a warm rescan does neither.
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system; it takes each arena's
    // lock like any allocation does.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The metadata file (`<sha256 hex>.json`) of every fresh document the registry
/// accepted: the commit wrote it, or found it intact (`spec/registry.md` §4, step 5).
/// Hashed on the pool the commit runs in.
fn stored_files(update: &Update, commit: &registry::CommitReport) -> Vec<String> {
    let refused: HashSet<&str> = commit
        .rejected
        .iter()
        .map(|r| r.name.as_str())
        .chain(commit.stale.iter().map(String::as_str))
        .collect();
    update
        .found
        .par_iter()
        .filter_map(|f| match &f.meta {
            FoundMeta::Fresh { document, .. } if !refused.contains(f.name.as_str()) => {
                Some(format!("{}.json", sha256_hex(document)))
            }
            _ => None,
        })
        .collect()
}

/// `--explain NAME`: every piece of evidence about one name and how it was decided.
fn explain(
    name: &str,
    path: &std::path::Path,
    w: &Work,
    primary: bool,
    losers: &[(Candidate, String)],
    outcome: Option<&Outcome>,
    unreadable: Option<&String>,
) -> Explanation {
    let mut ev = Vec::new();
    ev.push(format!(
        "executable {} (file {})",
        path.display(),
        w.exe.canonical().display()
    ));
    if !primary {
        ev.push(format!(
            "another name of the same file as {}: shares its evidence and probe",
            w.exe.name
        ));
    }
    if let Some(m) = unreadable {
        ev.push(format!("unreadable: {m}"));
    }
    ev.push(match w.rec.sign {
        Some(s) => format!(
            "sign: {} ({})",
            s.as_str(),
            if w.read_now {
                "read by this scan"
            } else {
                "cached: the file is unchanged"
            }
        ),
        None => {
            "sign: not read (not needed in this probe mode, allowlisted, or cached outcome)".into()
        }
    });
    if w.allowlisted {
        ev.push("on the config allowlist (probe.allow)".into());
    }
    if let Some(h) = w.rec.help {
        ev.push(format!("--help mentions --agent: {h}"));
    }
    ev.push(probe_evidence(w));
    ev.extend(tooli_evidence(w));
    if let Some(s) = &w.rec.sha256 {
        ev.push(format!("content hash {s}"));
    }
    let mut candidates = Vec::new();
    let won = |c: &Candidate| report::ExplainedCandidate {
        source: c.source,
        origin: c.origin.clone(),
        by_hash: c.by_hash,
        trust: c.trust.clone(),
        won: true,
        why: None,
    };
    if let Some(Outcome::Winner(c)) = outcome {
        candidates.push(won(c));
    }
    for (c, why) in losers {
        let mut e = won(c);
        e.won = false;
        e.why = Some(why.clone());
        candidates.push(e);
    }
    Explanation {
        name: name.to_owned(),
        path: Some(path.to_path_buf()),
        evidence: ev,
        candidates,
        outcome: outcome_line(outcome),
    }
}

/// `--explain`'s line on the `--agent` probe: would run, answered, failed, or not run.
fn probe_evidence(w: &Work) -> String {
    match (&w.probe_now, w.rec.probe.as_deref()) {
        (Some(why), _) if w.rec.probe.is_none() => {
            format!("would probe ({why:?}); not run (dry run)")
        }
        (_, Some(ProbeRecord::Native { doc, .. })) => format!(
            "probe: valid --agent answer (sha256 {doc}){}",
            if w.cached { ", cached" } else { "" }
        ),
        (
            _,
            Some(ProbeRecord::Failed {
                reason, message, ..
            }),
        ) => format!(
            "probe: failed, {}: {message}{}",
            reason.as_str(),
            if w.cached { " (cached)" } else { "" }
        ),
        (None, None) if w.no_sign => "not probed: no sign of supporting ATIP".into(),
        (None, None) => "not probed".into(),
        (Some(_), None) => "not probed".into(),
    }
}

/// `--explain`'s lines on a Tooli app, when the file is one: what it is, and whether
/// its manifest was converted.
fn tooli_evidence(w: &Work) -> Vec<String> {
    let Some(app) = w.rec.app.as_ref().and_then(AppRecord::tooli) else {
        return Vec::new();
    };
    let what = format!(
        "a Tooli app: package {} {} ({}) requires tooli; entry point {}:{}, interpreter {}",
        app.package,
        app.version,
        app.dist.display(),
        app.module,
        app.attr,
        app.interpreter.display()
    );
    let converted = match (w.rec.convert.as_deref(), w.convert_now) {
        (Some(ProbeRecord::Native { doc, .. }), now) => format!(
            "converted its Tooli manifest (document sha256 {doc}){}",
            if now { "" } else { ", cached" }
        ),
        (
            Some(ProbeRecord::Failed {
                reason, message, ..
            }),
            _,
        ) => {
            format!("conversion failed, {}: {message}", reason.as_str())
        }
        (None, true) => "would convert its Tooli manifest; not run (dry run)".into(),
        (None, false) => "not converted: not allowed (probe.allow or --convert)".into(),
    };
    vec![what, converted]
}

/// `--explain`'s outcome: registered from which source, kept, or not registered.
fn outcome_line(outcome: Option<&Outcome>) -> String {
    match outcome {
        None => "not registered: the file could not be read".to_owned(),
        Some(Outcome::Nothing) => "not registered: no source offers metadata".to_owned(),
        Some(Outcome::Winner(c)) => format!(
            "registered from {} ({})",
            resolve::source_name(c.source),
            c.origin
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "its --agent answer".into())
        ),
        Some(Outcome::Kept { entry, why }) => format!(
            "kept the stored {} entry: {why}",
            resolve::source_name(entry.source)
        ),
    }
}

/// Decides whether an executable is probed (and a framework app converted) by this
/// scan, from what is known of it. `convert`: `--convert`.
fn decide(w: &mut Work, mode: ProbeMode, convert: bool) {
    if w.unreadable.is_some() {
        return;
    }
    let app = w.rec.app.as_ref().is_some_and(|a| a.tooli().is_some());
    if app && w.rec.convert.is_none() {
        w.convert_now = match mode {
            ProbeMode::All => true,
            ProbeMode::None => convert,
            ProbeMode::Auto | ProbeMode::Help => convert || w.allowlisted,
        };
        w.app_waiting = !w.convert_now;
    }
    if w.cached {
        return;
    }
    if app && mode != ProbeMode::All && !w.rec.sign.is_some_and(|s| s.shown()) {
        // A framework app does not answer --agent (nor mention it in --help): it is
        // converted instead, when allowed.
        w.no_sign = !w.convert_now && w.rec.convert.is_none();
        return;
    }
    w.probe_now = match mode {
        ProbeMode::None => None,
        ProbeMode::All => Some(ProbeWhy::All),
        ProbeMode::Auto | ProbeMode::Help if w.allowlisted => Some(ProbeWhy::Allowlist),
        ProbeMode::Auto | ProbeMode::Help if w.rec.sign.is_some_and(|s| s.shown()) => {
            Some(ProbeWhy::Sign)
        }
        ProbeMode::Help if w.rec.help != Some(false) => Some(ProbeWhy::Help),
        ProbeMode::Auto | ProbeMode::Help => {
            w.no_sign = true;
            None
        }
    };
}

/// Runs one executable's probe (after `--help` in help mode) and records the outcome.
fn probe_one(w: &mut Work, data: &std::path::Path, timeout: Duration, child: probe::Child<'_>) {
    if w.probe_now == Some(ProbeWhy::Help) && w.rec.help.is_none() {
        // A --help that hangs or crashes says nothing about --agent.
        w.rec.help = Some(probe::help_mentions_agent(&w.exe.path, timeout, child).unwrap_or(false));
    }
    if w.probe_now == Some(ProbeWhy::Help) && w.rec.help == Some(false) {
        w.probe_now = None;
        w.no_sign = true;
        return;
    }
    let outcome = probe::probe_agent(&w.exe.path, &w.exe.name, timeout, child);
    w.rec.probe = Some(Box::new(record(w, data, outcome, timeout)));
}

/// Converts one framework app's manifest and records the outcome.
fn convert_one(w: &mut Work, data: &std::path::Path, timeout: Duration, child: probe::Child<'_>) {
    let Some(app) = w.rec.app.as_ref().and_then(AppRecord::tooli).cloned() else {
        return;
    };
    let outcome = framework::convert(&app, &w.exe.name, timeout, child);
    let timeout = timeout.max(framework::CONVERT_TIMEOUT_MIN);
    w.rec.convert = Some(Box::new(record(w, data, outcome, timeout)));
}

/// The cache record of a probe's (or conversion's) outcome; a valid document is stored
/// under `cache/native/`, or kept in memory when it cannot be.
fn record(
    w: &mut Work,
    data: &std::path::Path,
    outcome: Result<probe::ProbeAnswer, probe::ProbeFailure>,
    timeout: Duration,
) -> ProbeRecord {
    match outcome {
        Ok(answer) => {
            let doc = match cache::store_native_doc(data, &answer.document) {
                Ok(doc) => doc,
                Err(_) => {
                    // A full disk must not cost the tool its entry: keep the answer in
                    // memory for this scan (the next one probes again).
                    let doc = sha256_hex(&answer.document);
                    let answers = w.answers.get_or_insert_default();
                    answers
                        .unstored
                        .push((doc.clone(), Arc::from(answer.document)));
                    doc
                }
            };
            let answers = w.answers.get_or_insert_default();
            answers.judged.push((doc.clone(), answer.summary));
            ProbeRecord::Native {
                doc,
                warnings: answer.warnings,
                trust: answer.trust,
            }
        }
        Err(f) => ProbeRecord::Failed {
            reason: f.reason,
            message: f.message,
            diagnostics: f.diagnostics,
            timeout_ms: timeout.as_millis() as u64,
        },
    }
}

fn enum_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The document sent to the registry: the winner's bytes, with pattern files merged in,
/// and the index's summary of it (the parsed document is dropped here). Bytes this scan
/// judged as they are (no patterns, effects kept) take the judged summary: the same
/// bytes give the same model.
fn compose(
    winner: &Candidate,
    applied: &[&PatternFile],
    judged: &Judged,
) -> Result<(Arc<[u8]>, registry::MetaSummary), source::DocError> {
    let mut bytes = winner.doc.read()?;
    // The index's effects word follows what the policy believes: table effects that no
    // root-owned program vouches for are unknown (`atip list --effects read-only`).
    let forget =
        winner.source == Source::Inferred && winner.vouch != Some(registry::Vouch::Curated);
    if applied.is_empty()
        && !forget
        && !judged.is_empty()
        && let Some(summary) = judged.get(&sha256_hex(&bytes))
    {
        return Ok((bytes, summary.clone()));
    }
    let shown = || match &winner.doc {
        source::Doc::File(p) | source::Doc::Checked { path: p, .. } => p.display().to_string(),
        source::Doc::Bytes(_) | source::Doc::Static(_) => winner.identity.clone(),
    };
    if !applied.is_empty() {
        let mut value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|source| source::DocError::Parse {
                shown: shown(),
                source,
            })?;
        shims::merge_patterns(&mut value, applied);
        let mut merged = serde_json::to_vec_pretty(&value).expect("a JSON value serializes");
        merged.push(b'\n');
        bytes = merged.into();
    }
    let mut metadata = crate::model::Metadata::from_slice(&bytes).map_err(|source| {
        source::DocError::Metadata {
            shown: shown(),
            source,
        }
    })?;
    if forget {
        metadata.forget_effects();
    }
    Ok((bytes, registry::MetaSummary::of(&metadata)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cached outcome is reused only while it holds for this scan: a timed-out one
    /// when it ran with at least this scan's timeout (a conversion: at least its
    /// minimum), a native answer while its document is stored, any other failure always.
    #[test]
    fn cached_outcomes_are_reused_only_while_they_hold() {
        let data = tempfile::tempdir().unwrap();
        let stored = cache::native_doc_file(data.path(), "kept");
        std::fs::create_dir_all(stored.parent().unwrap()).unwrap();
        std::fs::write(&stored, b"{}").unwrap();
        let native = |doc: &str| ProbeRecord::Native {
            doc: doc.into(),
            warnings: Vec::new(),
            trust: None,
        };
        let failed = |reason, timeout_ms| ProbeRecord::Failed {
            reason,
            message: String::new(),
            diagnostics: Vec::new(),
            timeout_ms,
        };
        let fp = paths::Fingerprint {
            dev: 1,
            ino: 2,
            size: 3,
            mtime_ns: 4,
            ctime_ns: 5,
        };
        let timeout = Duration::from_millis(3000);
        let convert_min = framework::CONVERT_TIMEOUT_MIN.as_millis() as u64;
        let cases = [
            (native("kept"), native("kept"), true, true),
            (native("lost"), native("lost"), false, false),
            (
                failed(FailReason::Timeout, 3000),
                failed(FailReason::Timeout, convert_min),
                true,
                true,
            ),
            (
                failed(FailReason::Timeout, 2999),
                failed(FailReason::Timeout, 3000),
                false,
                false,
            ),
            (
                failed(FailReason::ExitStatus, 1),
                failed(FailReason::Invalid, 1),
                true,
                true,
            ),
        ];
        for (probe, convert, probe_kept, convert_kept) in cases {
            let mut rec = FileRecord::new(fp);
            rec.probe = Some(Box::new(probe.clone()));
            rec.convert = Some(Box::new(convert.clone()));
            reuse_outcomes(&mut rec, data.path(), timeout);
            assert_eq!(rec.probe.is_some(), probe_kept, "{probe:?}");
            assert_eq!(rec.convert.is_some(), convert_kept, "{convert:?}");
            assert_eq!(rec.probe.as_deref().unwrap_or(&probe), &probe);
        }
        let mut none = FileRecord::new(fp);
        reuse_outcomes(&mut none, data.path(), timeout);
        assert_eq!(none, FileRecord::new(fp));
    }

    fn pattern(path: &str, doc: &str) -> PatternFile {
        PatternFile {
            path: path.into(),
            tool: None,
            stem: "p".into(),
            patterns: Vec::new(),
            doc: doc.into(),
        }
    }

    /// The metadata files learnt while resolving and after the commit become the
    /// cache's map as inserting them in order would make it: a file met again (a name
    /// sharing it, or rewritten by the commit) keeps its latest fingerprint.
    #[test]
    fn the_last_pair_of_each_key_wins() {
        let pairs = vec![
            ("b.json".to_owned(), 1),
            ("a.json".to_owned(), 2),
            ("b.json".to_owned(), 3),
            ("c.json".to_owned(), 4),
            ("b.json".to_owned(), 5),
            ("a.json".to_owned(), 6),
        ];
        let mut inserted = BTreeMap::new();
        for (k, v) in pairs.clone() {
            inserted.insert(k, v);
        }
        assert_eq!(last_of_each(pairs), inserted);
        assert_eq!(inserted["b.json"], 5);
        assert!(last_of_each::<u8>(Vec::new()).is_empty());
    }

    /// A stale name's winner is found by its name in the resolve-order list.
    #[test]
    fn winners_are_found_by_name() {
        let candidate = |id: &str| Candidate {
            source: Source::Shim,
            by_hash: false,
            doc: source::Doc::Bytes(Arc::from(&b"{}"[..])),
            identity: id.to_owned(),
            trust: "community".into(),
            origin: None,
            shim_registry: None,
            warnings: Vec::new(),
            vouch: None,
        };
        let p = pattern("/p.json", "{}");
        let winners = Winners(vec![
            ("a".into(), candidate("shim:a"), Vec::new()),
            ("b".into(), candidate("shim:b"), vec![&p]),
        ]);
        let by_name = winners.by_name();
        assert_eq!(by_name.len(), 2);
        assert_eq!(by_name["b"].0.identity, "shim:b");
        assert_eq!(by_name["b"].1.len(), 1);
        assert!(by_name["a"].1.is_empty() && !by_name.contains_key("c"));
    }

    #[test]
    fn known_files_are_checked_at_once_and_only_unchanged_ones_pass() {
        let t = tempfile::tempdir().unwrap();
        let tools = t.path().join(registry::TOOLS_DIR);
        std::fs::create_dir(&tools).unwrap();
        let name_of = |bytes: &[u8]| format!("{}.json", &sha256_hex(bytes));
        let fp_of =
            |p: &std::path::Path| paths::Fingerprint::of(&std::fs::symlink_metadata(p).unwrap());
        let mut known = BTreeMap::new();
        // Enough unchanged files for the work to be split.
        for i in 0..450 {
            let bytes = format!("{{\"n\":{i}}}");
            let file = name_of(bytes.as_bytes());
            std::fs::write(tools.join(&file), &bytes).unwrap();
            known.insert(file.clone(), fp_of(&tools.join(&file)));
        }
        // Rewritten since (another inode) but intact; damaged in place; replaced by a
        // symlink to the recorded file; a name that reaches outside tools/.
        let (moved, damaged, linked) = (b"{\"m\":1}", b"{\"d\":1}", b"{\"l\":1}");
        for bytes in [&moved[..], &damaged[..], &linked[..]] {
            let p = tools.join(name_of(bytes));
            std::fs::write(&p, bytes).unwrap();
            known.insert(name_of(bytes), fp_of(&p));
        }
        let p = tools.join(name_of(moved));
        std::fs::write(t.path().join("new"), moved).unwrap();
        std::fs::rename(t.path().join("new"), &p).unwrap();
        std::fs::write(tools.join(name_of(damaged)), b"{\"d\":22}").unwrap();
        let outside = t.path().join(name_of(linked));
        std::fs::rename(tools.join(name_of(linked)), &outside).unwrap();
        std::os::unix::fs::symlink(&outside, tools.join(name_of(linked))).unwrap();
        let up = format!("../{}", name_of(linked));
        known.insert(up.clone(), fp_of(&outside));

        let old = cache::OldCache::of(&Cache {
            docs: known.clone(),
            ..Cache::empty()
        });
        let docs = StoredDocs::of(t.path(), Some(&old), check_known(t.path(), Some(&old), 2));
        let passed = docs.unchanged.len();
        assert_eq!(passed, 450, "only the unchanged files pass");
        assert_eq!(docs.hashed.load(Ordering::Relaxed), 0, "and none is read");
        assert!(docs.intact(&name_of(moved)).is_some());
        assert!(docs.intact(&name_of(damaged)).is_none());
        assert_eq!(
            docs.hashed.load(Ordering::Relaxed),
            2,
            "the changed ones are read"
        );
        assert!(
            docs.intact(&name_of(linked)).is_none(),
            "a symlink is not intact"
        );
        assert!(docs.intact(&up).is_none(), "nothing outside tools/");
        assert_eq!(docs.hashed.load(Ordering::Relaxed), 2);
        let one = name_of(b"{\"n\":0}");
        assert_eq!(docs.intact(&one), Some(known[&one]));
    }

    #[test]
    fn stored_docs_are_intact_only_as_regular_files_of_tools_that_hash_to_their_name() {
        let t = tempfile::tempdir().unwrap();
        let tools = t.path().join(registry::TOOLS_DIR);
        std::fs::create_dir(&tools).unwrap();
        let name_of = |bytes: &[u8]| format!("{}.json", &sha256_hex(bytes));
        let (good, linked, damaged) = (b"{\"a\":1}", b"{\"b\":2}", b"{\"c\":3}");
        std::fs::write(tools.join(name_of(good)), good).unwrap();
        std::fs::write(tools.join(name_of(damaged)), b"{\"c\":4}").unwrap();
        // A symlink named as an intact file, pointing at one outside tools/.
        let outside = t.path().join(name_of(linked));
        std::fs::write(&outside, linked).unwrap();
        std::os::unix::fs::symlink(&outside, tools.join(name_of(linked))).unwrap();
        let mut known = BTreeMap::new();
        let old = cache::OldCache::of(&Cache {
            docs: known.clone(),
            ..Cache::empty()
        });
        let docs = StoredDocs::of(t.path(), Some(&old), check_known(t.path(), Some(&old), 1));
        assert!(docs.intact(&name_of(good)).is_some());
        assert!(
            docs.intact(&name_of(linked)).is_none(),
            "a symlink is not intact"
        );
        assert!(docs.intact(&name_of(damaged)).is_none());
        assert!(docs.intact(&name_of(b"missing")).is_none());
        // Names the registry never writes, even of files that exist.
        let up = format!("../{}", name_of(linked));
        assert!(docs.intact(&up).is_none(), "nothing outside tools/");
        std::fs::write(tools.join("x.json"), b"{}").unwrap();
        assert!(docs.intact("x.json").is_none());
        assert_eq!(
            docs.hashed.load(Ordering::Relaxed),
            2,
            "the good and the damaged file were read"
        );
        // Known fingerprints are taken without reading; a changed one is read again.
        let fp = docs.intact(&name_of(good)).unwrap();
        known.insert(name_of(good), fp);
        known.insert(name_of(damaged), fp);
        let old = cache::OldCache::of(&Cache {
            docs: known.clone(),
            ..Cache::empty()
        });
        let docs = StoredDocs::of(t.path(), Some(&old), check_known(t.path(), Some(&old), 1));
        assert_eq!(docs.intact(&name_of(good)), Some(fp));
        assert!(docs.intact(&name_of(damaged)).is_none());
        assert_eq!(docs.hashed.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn composing_bytes_this_scan_judged_takes_their_summary_and_nothing_else_does() {
        let doc: &[u8] = br#"{"atip": {"version": "0.6"}, "name": "t", "description": "Parsed.",
            "effects": {"destructive": true}}"#;
        let candidate = |source, bytes: &[u8]| Candidate {
            source,
            by_hash: false,
            doc: source::Doc::Bytes(Arc::from(bytes)),
            identity: "native:x".into(),
            trust: "native".into(),
            origin: None,
            shim_registry: None,
            warnings: Vec::new(),
            vouch: None,
        };
        let summary = |c: &Candidate, applied: &[&PatternFile], judged: &Judged| {
            let (bytes, summary) = compose(c, applied, judged).unwrap();
            assert!(applied.is_empty() == (*bytes == *doc));
            summary
        };
        let parsed = registry::MetaSummary::of(&crate::model::Metadata::from_slice(doc).unwrap());
        // A judged summary marked so that its use shows.
        let mut marked = parsed.clone();
        marked.description = "judged".into();
        let judged: Judged = [(sha256_hex(doc), marked.clone())].into();
        assert_eq!(
            summary(&candidate(Source::Native, doc), &[], &judged),
            marked
        );
        assert_eq!(
            summary(&candidate(Source::Native, doc), &[], &Judged::new()),
            parsed
        );
        // Other bytes under the judged answer's name (a stored answer damaged since):
        // parsed as read.
        let damaged = String::from_utf8_lossy(doc).replace("Parsed.", "Damaged.");
        let c = candidate(Source::Native, damaged.as_bytes());
        let s = compose(&c, &[], &judged).unwrap().1;
        assert_eq!(s.description, "Damaged.");
        // Patterns merged in make other bytes; effects nobody vouches for are forgotten.
        let p = pattern("/p/a.json", "{}");
        assert_eq!(
            summary(&candidate(Source::Native, doc), &[&p], &judged),
            parsed
        );
        let inferred = summary(&candidate(Source::Inferred, doc), &[], &judged);
        assert_eq!(inferred.description, "Parsed.");
        assert_ne!(inferred.effects, parsed.effects);
    }

    #[test]
    fn composition_keys_change_with_identity_and_every_pattern() {
        let id = format!("inferred:{}", "ab".repeat(32));
        assert_eq!(composition_key(&id, &[]), id);
        let (a, b) = (pattern("/p/a.json", "11"), pattern("/p/a.json", "12"));
        let with_a = composition_key(&id, &[&a]);
        assert!(with_a.len() == 64 && !with_a.contains(':'));
        assert_ne!(with_a, composition_key(&id, &[&b]), "pattern document");
        assert_ne!(with_a, composition_key("shim:/x:1", &[&a]), "identity");
        assert_ne!(with_a, composition_key(&id, &[&a, &b]), "one more pattern");
        let moved = pattern("/q/a.json", "11");
        assert_ne!(with_a, composition_key(&id, &[&moved]), "pattern path");
    }
}
