//! Discovery: finds the ATIP tools on this machine and hands them to the registry.
//!
//! Owns the scan as a whole (see `spec/scan.md`): which directories and executables are
//! looked at ([`paths`]), which executables may be run ([`sign`], the probe strategy and
//! the config allowlist), probing in parallel through `process` ([`probe`]), shims and
//! pattern files and their precedence ([`shims`]), the fingerprint cache that makes a
//! rescan of an unchanged PATH run nothing and read no executable ([`cache`]), and the
//! report ([`report`]).
//!
//! Must not write `registry.json` or `tools/` itself: it builds a
//! [`crate::registry::Update`] and the registry's `commit` merges it under the lock.
//! Must not spawn a process except through [`crate::process::run`].

pub mod builtin;
pub mod cache;
pub mod paths;
pub mod probe;
pub mod report;
pub mod shims;
pub mod sign;

use crate::dirs::Dirs;
use crate::output::{AtipError, ErrorCode};
use crate::registry::{self, Found, FoundMeta, Index, Source, Update};
use cache::{Cache, FileRecord, ProbeRecord, ToolRecord};
use paths::{DirEntrySpec, Enumeration, Executable, FileSkip, FileSkipReason, Identity};
use probe::Cancel;
use rayon::prelude::*;
use report::{
    FailReason, FailedTool, PlannedProbe, ProbeWhy, RegistryInfo, ScanReport, ShimSummary, Skipped,
    Summary, ToolReport, ToolStatus,
};
use serde::Serialize;
use sha2::Digest;
use shims::{PatternFile, ShimFile};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsString;
use std::path::PathBuf;
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
    /// PATH-like value to scan; `None` = atip's own `$PATH`.
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
    /// Infer metadata from installed man pages for executables no other source
    /// describes (the lowest-precedence source; spec/infer.md).
    pub infer: bool,
    /// `MANPATH` to search; `None` = atip's own `$MANPATH` (unset: derived from PATH).
    pub manpath: Option<OsString>,
}

/// Default number of probes run at once: probes mostly wait on children, and a hanging
/// tool holds its slot until the timeout, so several per CPU.
pub fn default_jobs() -> usize {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
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

/// The scan's thread pool, built only when some phase has work: a warm rescan starts
/// no threads.
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
    /// Its man page, when inference may describe it.
    man: Option<crate::infer::source::Lookup>,
    /// A fresh inference (document bytes, parsed, cache record) or why it failed.
    inferred: Option<Result<InferredDoc, String>>,
}

/// An inferred document ready for the registry.
struct InferredDoc {
    bytes: Vec<u8>,
    metadata: crate::model::Metadata,
    record: crate::infer::source::InferRecord,
}

/// Infers, serializes and validates the document of `name` (any validator finding,
/// warnings included, rejects it: inferred documents must be clean).
fn infer_doc(
    index: &crate::infer::locate::ManIndex,
    page: &crate::infer::locate::PageRef,
    name: &str,
) -> Result<InferredDoc, String> {
    let inf = crate::infer::infer_page(index, page, name).map_err(|e| e.to_string())?;
    let mut bytes = serde_json::to_vec_pretty(&inf.document).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    let checked = crate::validate::check_bytes(&bytes, None, None);
    if let Some(d) = checked.diagnostics.first() {
        return Err(format!(
            "inferred from {}: {} at {}: {}",
            page.path.display(),
            d.rule,
            d.pointer,
            d.message
        ));
    }
    let metadata = crate::model::Metadata::from_slice(&bytes).map_err(|e| e.to_string())?;
    let record = crate::infer::source::InferRecord {
        page: page.path.clone(),
        root: page.root.clone(),
        section: page.section.clone(),
        inputs: inf.inputs,
        doc: sha_hex(&bytes),
    };
    Ok(InferredDoc {
        bytes,
        metadata,
        record,
    })
}

/// The winning metadata source of one tool.
enum Winner<'a> {
    Native {
        doc: String,
        warnings: Vec<String>,
        trust: Option<String>,
    },
    Shim {
        file: &'a ShimFile,
        source: Source,
    },
    /// Read from the man page; `doc` is the document's sha256.
    Inferred { doc: String },
}

fn build_globs(globs: &[String], what: &str) -> Result<globset::GlobSet, String> {
    let mut b = globset::GlobSetBuilder::new();
    for g in globs {
        b.add(globset::Glob::new(g).map_err(|e| format!("invalid {what} glob {g:?}: {e}"))?);
    }
    b.build().map_err(|e| e.to_string())
}

fn sha_hex(bytes: &[u8]) -> String {
    hex::encode(sha2::Sha256::digest(bytes))
}

const TRUST_SOURCES: [&str; 6] = ["native", "vendor", "org", "community", "user", "inferred"];

fn trust_or(declared: Option<&str>, fallback: &str) -> String {
    match declared {
        Some(t) if TRUST_SOURCES.contains(&t) => t.to_owned(),
        _ => fallback.to_owned(),
    }
}

/// Why a scan could not complete.
#[derive(Debug, thiserror::Error)]
pub enum ScanError {
    /// `config.json` is unreadable or malformed.
    #[error("{0}")]
    Config(String),
    /// A flag value is malformed (e.g. a `--skip` glob).
    #[error("{0}")]
    Usage(String),
    /// The registry could not be written (or its lock was held too long).
    #[error(transparent)]
    Registry(#[from] registry::RegistryError),
    /// Something atip itself got wrong.
    #[error("{0}")]
    Internal(String),
    /// Interrupted (the cancel flag was set): running probes were killed, nothing was
    /// written.
    #[error("scan interrupted; running probes were killed and nothing was written")]
    Interrupted,
}

impl ScanError {
    /// The structured error the binary reports (exit 78, 2, 73/75 or 70).
    pub fn to_atip(&self) -> AtipError {
        match self {
            ScanError::Config(m) => AtipError::new(ErrorCode::ConfigInvalid, m.clone())
                .hint("fix config.json, e.g. {\"probe\": {\"allow\": [\"mytool\"]}}"),
            ScanError::Usage(m) => AtipError::new(ErrorCode::Usage, m.clone()),
            ScanError::Registry(e) => e.to_atip(),
            ScanError::Internal(m) => AtipError::new(ErrorCode::Internal, m.clone()),
            ScanError::Interrupted => AtipError::new(ErrorCode::Interrupted, self.to_string())
                .hint("run `atip scan` again; the registry is as it was"),
        }
    }
}

/// Runs a whole scan: enumerate, probe, resolve shims, commit to the registry, save
/// the cache, and report. Per-tool failures are in the report; an error here means the
/// scan itself could not complete (bad config or flags, registry not writable, lock
/// held too long).
pub fn scan(
    dirs: &Dirs,
    opts: &ScanOptions,
    progress: &dyn Progress,
) -> Result<ScanReport, ScanError> {
    let mut warnings: Vec<String> = Vec::new();
    let config = shims::load_config(&dirs.config).map_err(ScanError::Config)?;
    let skip = build_globs(&opts.skip, "--skip").map_err(ScanError::Usage)?;
    let allow = build_globs(&config.allow, "probe.allow")
        .map_err(|m| ScanError::Config(format!("config.json: {m}")))?;

    // 1. Directories and executables.
    let path_value = match &opts.path {
        Some(p) => p.clone(),
        None => std::env::var_os("PATH").unwrap_or_else(|| {
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
    let me = Identity::current();
    let (scan_dirs, skipped_dirs) = paths::resolve_dirs(&specs, &me);
    let Enumeration {
        dirs: scan_dirs,
        skipped_dirs,
        executables,
        mut skipped_files,
    } = paths::enumerate(scan_dirs, skipped_dirs, &me, &skip);

    // 2. Cache, shims, patterns, the registry as it is.
    let old_cache = if opts.refresh {
        Cache::empty()
    } else {
        let (c, w) = Cache::load(&dirs.data);
        warnings.extend(w);
        c
    };
    let mut new_cache = Cache::empty();
    // A dry run writes nothing: unless the data dir's copy is current, it reads the
    // built-in shims from a throw-away directory (removed when the scan ends).
    let builtin_home = builtin::dir(&dirs.data);
    let needs_copy = opts.dry_run && !builtin::is_current(&builtin_home);
    let dry_copy = if opts.builtin_shims && needs_copy {
        tempfile::tempdir().ok()
    } else {
        None
    };
    let target = match &dry_copy {
        Some(t) => Some(t.path().to_path_buf()),
        None if opts.builtin_shims && !needs_copy => Some(builtin_home),
        None => None,
    };
    let builtin = target.and_then(|d| match builtin::install(&d) {
        Ok(()) => Some(d),
        Err(e) => {
            warnings.push(e);
            None
        }
    });
    let layers = shims::shim_layers(
        builtin.as_deref(),
        &dirs.system_data,
        &dirs.data,
        &opts.shim_dirs,
        &dirs.config,
    );
    let shim_set = shims::load_shims(&layers, &old_cache, &mut new_cache);
    let patterns = shims::load_patterns(
        &shims::pattern_dirs(&dirs.system_data, &dirs.data),
        &old_cache,
        &mut new_cache,
    );
    let old_index = match Index::load(dirs) {
        Ok(i) => i,
        Err(e) => {
            warnings.push(format!("{e}; the registry will be rebuilt"));
            None
        }
    };

    // 3. Plan: what is known, what must be read, what must be run.
    let mut works: Vec<Work> = executables
        .into_iter()
        .map(|exe| {
            let rec = old_cache
                .file(&exe.canonical, &exe.fingerprint)
                .cloned()
                .unwrap_or_else(|| FileRecord::new(exe.fingerprint));
            let allowlisted = allow.is_match(&exe.name);
            Work {
                exe,
                rec,
                allowlisted,
                probe_now: None,
                cached: false,
                no_sign: false,
                unreadable: None,
                man: None,
                inferred: None,
            }
        })
        .collect();
    let timeout_ms = opts.timeout.as_millis() as u64;
    let reusable = |w: &Work| match &w.rec.probe {
        None => false,
        Some(ProbeRecord::Failed {
            reason: FailReason::Timeout,
            timeout_ms: t,
            ..
        }) => *t >= timeout_ms,
        Some(ProbeRecord::Native { doc, .. }) => cache::native_doc_file(&dirs.data, doc).is_file(),
        Some(ProbeRecord::Failed { .. }) => true,
    };
    for w in works.iter_mut() {
        if reusable(w) {
            w.cached = true;
        } else {
            w.rec.probe = None;
        }
    }
    let pool = LazyPool::new(opts.jobs);

    // 4. Read signs and probe in one parallel pass: a tool's probe starts as soon as its
    //    sign is seen, not after the whole PATH has been read. Only files that need I/O
    //    enter the pass, so a warm rescan starts no thread at all.
    let read_signs = matches!(opts.probe, ProbeMode::Auto | ProbeMode::Help);
    let needs_sign = |w: &Work| read_signs && !w.cached && !w.allowlisted && w.rec.sign.is_none();
    for w in works.iter_mut() {
        if !needs_sign(w) {
            decide(w, opts.probe);
        }
    }
    let active = |w: &Work| needs_sign(w) || (!opts.dry_run && w.probe_now.is_some());
    let todo = works.iter().filter(|w| active(w)).count() as u64;
    if todo > 0 {
        progress.start(todo);
        let data = dirs.data.clone();
        let timeout = opts.timeout;
        let mode = opts.probe;
        let dry_run = opts.dry_run;
        let cancel = opts.cancel.as_ref();
        let cancelled = || cancel.is_some_and(|c| c.load(Ordering::Relaxed));
        pool.install(|| {
            // One job per executable: a hanging probe must never hold back others that
            // rayon would otherwise have batched with it on the same thread.
            works
                .par_iter_mut()
                .with_max_len(1)
                .filter(|w| active(w))
                .for_each(|w| {
                    if cancelled() {
                        return;
                    }
                    if needs_sign(w) {
                        match sign::detect(&w.exe.canonical) {
                            Ok(s) => w.rec.sign = Some(s),
                            Err(e) => w.unreadable = Some(format!("failed to read: {e}")),
                        }
                        decide(w, mode);
                    }
                    if !dry_run && w.probe_now.is_some() {
                        probe_one(w, &data, timeout, cancel);
                    }
                    progress.tick(&w.exe.name);
                });
        });
        progress.finish();
    }
    if opts
        .cancel
        .as_ref()
        .is_some_and(|c| c.load(Ordering::Relaxed))
    {
        // Running probes were killed with their groups; nothing is written.
        return Err(ScanError::Interrupted);
    }
    let probed = if opts.dry_run {
        0
    } else {
        works
            .iter()
            .filter(|w| w.probe_now.is_some() && w.rec.probe.is_some())
            .count()
    };
    if opts.probe == ProbeMode::All && !opts.dry_run {
        warnings.push(format!(
            "--probe all ran {probed} executable(s) with --agent, ATIP or not"
        ));
    }
    let plan: Vec<PlannedProbe> = works
        .iter()
        .filter_map(|w| {
            w.probe_now.map(|why| PlannedProbe {
                name: w.exe.name.clone(),
                path: w.exe.path.clone(),
                why,
            })
        })
        .collect();

    // 4b. Man pages of the executables no native answer or name-keyed shim describes
    //     (content-addressed shims still win below, once hashes are known).
    let mut infer_src = opts.infer.then(|| {
        let manpath = opts.manpath.clone().or_else(|| std::env::var_os("MANPATH"));
        crate::infer::source::InferSource::open(
            &dirs.data,
            manpath.as_deref(),
            Some(&path_value),
            opts.refresh,
        )
    });
    let mut no_page: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    if let Some(src) = infer_src.as_mut() {
        for w in works.iter_mut() {
            if w.unreadable.is_some()
                || matches!(w.rec.probe, Some(ProbeRecord::Native { .. }))
                || shim_set.by_name.contains_key(&w.exe.name)
                || shim_set.override_by_name.contains_key(&w.exe.name)
            {
                continue;
            }
            w.man = src.lookup(&w.exe.name);
            if w.man.is_none() {
                no_page.insert(w.exe.name.clone());
            }
        }
    }

    // 5. Hash what needs it: native tools, tools with a name-keyed shim or override,
    //    executables a content-addressed shim is about, and those with a man page.
    let any_hash_shim = !shim_set.by_hash.is_empty() || !shim_set.override_by_hash.is_empty();
    let needs_hash = |w: &Work| {
        w.unreadable.is_none()
            && w.rec.sha256.is_none()
            && (matches!(w.rec.probe, Some(ProbeRecord::Native { .. }))
                || shim_set.by_name.contains_key(&w.exe.name)
                || shim_set.override_by_name.contains_key(&w.exe.name)
                || (any_hash_shim && shim_set.hash_names.contains(&w.exe.name))
                || w.man.is_some())
    };
    if works.iter().any(needs_hash) {
        pool.install(|| {
            works.par_iter_mut().filter(|w| needs_hash(w)).for_each(
                |w| match registry::sha256_file(&w.exe.canonical) {
                    Ok(h) => w.rec.sha256 = Some(h),
                    Err(e) => w.unreadable = Some(format!("failed to hash: {e}")),
                },
            );
        });
    }

    // 5b. Infer, in parallel, what has no current cached inference and no other source.
    let hash_shim = |w: &Work| {
        w.rec
            .sha256
            .as_deref()
            .and_then(|h| h.strip_prefix("sha256:"))
            .is_some_and(|h| shim_set.by_hash.contains_key(h) || shim_set.override_by_hash.contains_key(h))
    };
    let needs_infer = |w: &Work| {
        w.man.as_ref().is_some_and(|m| m.current.is_none()) && w.unreadable.is_none() && !hash_shim(w)
    };
    if !opts.dry_run
        && let Some(src) = infer_src.as_mut()
        && works.iter().any(needs_infer)
    {
        let index = src.ready_index();
        pool.install(|| {
            works.par_iter_mut().filter(|w| needs_infer(w)).for_each(|w| {
                if let Some(m) = &w.man {
                    w.inferred = Some(infer_doc(index, &m.page, &w.exe.name));
                }
            });
        });
    }

    // 6. Resolve each name's winner and what to send to the registry.
    let exe_names: HashSet<String> = works.iter().map(|w| w.exe.name.clone()).collect();
    let exists = |n: &str| exe_names.contains(n);
    let mut found: Vec<Found> = Vec::new();
    let mut tool_reports: BTreeMap<String, ToolReport> = BTreeMap::new();
    let mut failed: Vec<FailedTool> = Vec::new();
    let mut tool_records: BTreeMap<String, ToolRecord> = BTreeMap::new();
    let mut fresh_inputs: HashMap<String, (Winner, Vec<&PatternFile>)> = HashMap::new();
    let mut applied_shims = 0usize;
    for w in &works {
        if let Some(m) = &w.unreadable {
            skipped_files.push(FileSkip {
                name: w.exe.name.clone(),
                path: w.exe.path.clone(),
                reason: FileSkipReason::Unreadable,
                detail: m.clone(),
            });
            continue;
        }
        if let Some(ProbeRecord::Failed {
            reason,
            message,
            diagnostics,
            ..
        }) = &w.rec.probe
        {
            failed.push(FailedTool {
                name: w.exe.name.clone(),
                path: w.exe.path.clone(),
                reason: *reason,
                message: message.clone(),
                cached: w.cached,
                diagnostics: diagnostics.clone(),
            });
        }
        let hex = w
            .rec
            .sha256
            .as_deref()
            .and_then(|h| h.strip_prefix("sha256:"));
        let winner = if let Some(ProbeRecord::Native {
            doc,
            warnings,
            trust,
        }) = &w.rec.probe
        {
            Some(Winner::Native {
                doc: doc.clone(),
                warnings: warnings.clone(),
                trust: trust.clone(),
            })
        } else {
            let pick = hex
                .and_then(|h| shim_set.override_by_hash.get(h))
                .map(|f| (f, Source::Override))
                .or_else(|| {
                    shim_set
                        .override_by_name
                        .get(&w.exe.name)
                        .map(|f| (f, Source::Override))
                })
                .or_else(|| {
                    hex.and_then(|h| shim_set.by_hash.get(h))
                        .map(|f| (f, Source::ShimHash))
                })
                .or_else(|| shim_set.by_name.get(&w.exe.name).map(|f| (f, Source::Shim)));
            pick.map(|(file, source)| Winner::Shim { file, source })
                .or_else(|| match (&w.man, &w.inferred) {
                    (Some(_), Some(Ok(d))) => Some(Winner::Inferred {
                        doc: d.record.doc.clone(),
                    }),
                    (Some(m), None) => m.current.clone().map(|doc| Winner::Inferred { doc }),
                    _ => None,
                })
        };
        if let (None, Some(Err(m))) = (&winner, &w.inferred) {
            failed.push(FailedTool {
                name: w.exe.name.clone(),
                path: w.exe.path.clone(),
                reason: FailReason::Invalid,
                message: m.clone(),
                cached: false,
                diagnostics: Vec::new(),
            });
        }
        let Some(winner) = winner else {
            continue;
        };
        let Some(hash) = w.rec.sha256.clone() else {
            continue; // not hashed: only possible in a dry run's planning of a probe
        };
        let applied: Vec<&PatternFile> = patterns
            .files
            .iter()
            .filter(|p| p.applies_to(&w.exe.name, &exists))
            .collect();
        let mut key_src = String::new();
        let (source, trust, shim, tool_warnings, shim_registry) = match &winner {
            Winner::Native {
                doc,
                warnings,
                trust: declared,
            } => {
                key_src.push_str(&format!("native:{doc}"));
                (
                    Source::Native,
                    trust_or(declared.as_deref(), "native"),
                    None,
                    warnings.clone(),
                    None,
                )
            }
            Winner::Shim { file, source } => {
                applied_shims += 1;
                key_src.push_str(&format!("shim:{}:{}", file.path.display(), file.doc));
                let mut ws = Vec::new();
                if let Some(t) = &file.tool
                    && t != &w.exe.name
                {
                    ws.push(format!(
                        "the shim {} describes {t:?}; it is registered under the executable name {:?}",
                        file.path.display(),
                        w.exe.name
                    ));
                }
                let fallback = if *source == Source::Override {
                    "user"
                } else {
                    "community"
                };
                (
                    *source,
                    trust_or(file.trust.as_deref(), fallback),
                    Some(file.path.clone()),
                    ws,
                    Some(file.dir.display().to_string()),
                )
            }
            Winner::Inferred { doc } => {
                key_src.push_str(&format!("inferred:{doc}"));
                (Source::Inferred, "inferred".to_owned(), None, Vec::new(), None)
            }
        };
        for p in &applied {
            key_src.push_str(&format!("|pattern:{}:{}", p.path.display(), p.doc));
        }
        let key = sha_hex(key_src.as_bytes());
        let record = ToolRecord {
            key,
            path: w.exe.path.clone(),
            hash: hash.clone(),
            source,
        };
        let unchanged = !opts.refresh
            && old_cache.tools.get(&w.exe.name) == Some(&record)
            && old_index.as_ref().is_some_and(|i| {
                i.tools.get(&w.exe.name).is_some_and(|e| {
                    e.path == record.path
                        && e.hash == record.hash
                        && e.source == record.source
                        // A deleted metadata file is written again from the document.
                        && dirs.data.join(&e.metadata).is_file()
                })
            });
        tool_reports.insert(
            w.exe.name.clone(),
            ToolReport {
                name: w.exe.name.clone(),
                path: w.exe.path.clone(),
                source,
                shim,
                trust: trust.clone(),
                status: if opts.dry_run {
                    ToolStatus::Planned
                } else if unchanged {
                    ToolStatus::Unchanged
                } else {
                    ToolStatus::New
                },
                patterns: applied.iter().map(|p| p.path.clone()).collect(),
                warnings: tool_warnings,
            },
        );
        tool_records.insert(w.exe.name.clone(), record);
        found.push(Found {
            name: w.exe.name.clone(),
            path: w.exe.path.clone(),
            hash,
            source,
            shim_registry,
            trust,
            meta: FoundMeta::Unchanged,
        });
        if !unchanged {
            fresh_inputs.insert(w.exe.name.clone(), (winner, applied));
        }
    }

    // Fresh documents for everything not unchanged.
    let now = registry::rfc3339_now();
    let mut dropped: HashSet<String> = HashSet::new();
    for f in found.iter_mut() {
        if let Some((winner, applied)) = fresh_inputs.get(&f.name) {
            let composed = match winner {
                Winner::Inferred { .. } => inferred_document(&mut works, infer_src.as_mut(), &f.name),
                _ => compose(&dirs.data, winner, applied),
            };
            match composed {
                Ok((document, metadata)) => {
                    f.meta = FoundMeta::Fresh {
                        document,
                        metadata,
                        checked_at: now.clone(),
                    }
                }
                Err(m) => {
                    failed.push(FailedTool {
                        name: f.name.clone(),
                        path: f.path.clone(),
                        reason: FailReason::Invalid,
                        message: m,
                        cached: false,
                        diagnostics: Vec::new(),
                    });
                    dropped.insert(f.name.clone());
                }
            }
        }
    }
    found.retain(|f| !dropped.contains(&f.name));
    for n in &dropped {
        tool_reports.remove(n);
        tool_records.remove(n);
    }

    // 7. Commit.
    let mut registry_info = RegistryInfo {
        path: dirs.registry_file(),
        written: false,
        corrupt_backup: None,
    };
    let mut removed: Vec<String> = Vec::new();
    if !opts.dry_run {
        let mut update = Update {
            found,
            scanned_dirs: scan_dirs.iter().map(|d| d.canonical.clone()).collect(),
        };
        let opts_commit = registry::CommitOptions::default();
        let mut commit = registry::commit(dirs, &update, &opts_commit)?;
        if !commit.stale.is_empty() {
            // Another writer changed the registry since it was read: send those again
            // with their documents.
            let stale: HashSet<String> = commit.stale.iter().cloned().collect();
            for f in update.found.iter_mut().filter(|f| stale.contains(&f.name)) {
                let name = f.name.clone();
                let w = works.iter().find(|w| w.exe.name == name);
                let winner = w.and_then(|w| match &w.rec.probe {
                    Some(ProbeRecord::Native {
                        doc,
                        warnings,
                        trust,
                    }) => Some(Winner::Native {
                        doc: doc.clone(),
                        warnings: warnings.clone(),
                        trust: trust.clone(),
                    }),
                    _ => tool_reports.get(&name).and_then(|t| {
                        let path = t.shim.as_ref()?;
                        [
                            &shim_set.override_by_hash,
                            &shim_set.override_by_name,
                            &shim_set.by_hash,
                            &shim_set.by_name,
                        ]
                        .iter()
                        .flat_map(|m| m.values())
                        .find(|s| &s.path == path)
                        .map(|file| Winner::Shim {
                            file,
                            source: t.source,
                        })
                    }),
                });
                let applied: Vec<&PatternFile> = patterns
                    .files
                    .iter()
                    .filter(|p| p.applies_to(&name, &exists))
                    .collect();
                let winner = winner.or_else(|| {
                    (tool_reports.get(&name).map(|t| t.source) == Some(Source::Inferred))
                        .then(|| Winner::Inferred { doc: String::new() })
                });
                let composed = match &winner {
                    Some(Winner::Inferred { .. }) => {
                        inferred_document(&mut works, infer_src.as_mut(), &name).ok()
                    }
                    Some(w) => compose(&dirs.data, w, &applied).ok(),
                    None => None,
                };
                if let Some((document, metadata)) = composed {
                    f.meta = FoundMeta::Fresh {
                        document,
                        metadata,
                        checked_at: now.clone(),
                    };
                }
            }
            let again = registry::commit(dirs, &update, &opts_commit)?;
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
        }
        registry_info.written = commit.written;
        registry_info.corrupt_backup = commit.corrupt_backup.clone();
        let added: HashSet<&String> = commit.added.iter().collect();
        let updated: HashSet<&String> = commit.updated.iter().collect();
        for (name, t) in tool_reports.iter_mut() {
            t.status = if added.contains(name) {
                ToolStatus::New
            } else if updated.contains(name) {
                ToolStatus::Updated
            } else {
                ToolStatus::Unchanged
            };
        }
        for r in &commit.rejected {
            if let Some(t) = tool_reports.remove(&r.name) {
                failed.push(FailedTool {
                    name: t.name.clone(),
                    path: t.path.clone(),
                    reason: FailReason::Invalid,
                    message: format!("refused by the registry: {}", r.reason),
                    cached: false,
                    diagnostics: Vec::new(),
                });
            }
            tool_records.remove(&r.name);
        }
        for n in &commit.stale {
            tool_reports.remove(n);
            tool_records.remove(n);
            warnings.push(format!(
                "{n}: the registry changed under this scan; run `atip scan` again"
            ));
        }
        warnings.extend(commit.warnings.iter().cloned());
        removed = commit.removed.clone();
        removed.sort();
        removed.dedup();
    }

    // 8. Save the cache (never in a dry run).
    if !opts.dry_run {
        for w in &works {
            if w.unreadable.is_none()
                && let Some(k) = w.exe.canonical.to_str()
            {
                new_cache.files.insert(k.to_owned(), w.rec.clone());
            }
        }
        new_cache.tools = tool_records;
        // Keep what the old cache knew about files outside this scan's dirs, so scans
        // with different --path values do not undo each other's work.
        for (p, r) in &old_cache.files {
            let path = std::path::Path::new(p);
            if !new_cache.files.contains_key(p)
                && !paths::in_dirs(path, &scan_dirs)
                && path.exists()
            {
                new_cache.files.insert(p.clone(), r.clone());
            }
        }
        if new_cache != old_cache
            && let Err(m) = new_cache.save(&dirs.data)
        {
            warnings.push(format!("failed to save the scan cache: {m}"));
        }
        if let Some(src) = infer_src.take() {
            let mut records = BTreeMap::new();
            for w in &works {
                let Some(m) = &w.man else { continue };
                match &w.inferred {
                    Some(Ok(d)) => {
                        records.insert(w.exe.name.clone(), d.record.clone());
                    }
                    Some(Err(_)) => {}
                    None => {
                        if let Some(old) = m.current.as_ref().and_then(|_| src.record(&w.exe.name)) {
                            records.insert(w.exe.name.clone(), old.clone());
                        }
                    }
                }
            }
            if let Err(m) = src.save(records, no_page) {
                warnings.push(format!("failed to save the inference cache: {m}"));
            }
        }
    }

    // 9. Report.
    let no_sign = works.iter().filter(|w| w.no_sign).count();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for d in &skipped_dirs {
        *counts.entry(enum_name(&d.reason)).or_default() += 1;
    }
    for f in &skipped_files {
        *counts.entry(enum_name(&f.reason)).or_default() += 1;
    }
    if no_sign > 0 {
        counts.insert("no-sign".into(), no_sign);
    }
    failed.sort_by(|a, b| a.name.cmp(&b.name));
    let tools: Vec<ToolReport> = tool_reports.into_values().collect();
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
    if failed.iter().any(|f| f.cached) {
        hints.push("failures marked cached are from an earlier scan of the unchanged file; `atip scan --refresh` probes them again".into());
    }
    let summary = Summary {
        dirs: scan_dirs.len(),
        executables: works.len(),
        probed,
        cached: works.iter().filter(|w| w.cached).count(),
        new: tools.iter().filter(|t| t.status == ToolStatus::New).count(),
        updated: tools
            .iter()
            .filter(|t| t.status == ToolStatus::Updated)
            .count(),
        unchanged: tools
            .iter()
            .filter(|t| t.status == ToolStatus::Unchanged)
            .count(),
        removed: removed.len(),
        failed: failed.len(),
        skipped: skipped_dirs.len() + skipped_files.len() + no_sign,
        no_sign,
    };
    Ok(ScanReport {
        report_version: report::REPORT_VERSION,
        dry_run: opts.dry_run,
        probe: opts.probe,
        timeout: crate::units::format_duration(opts.timeout),
        registry: registry_info,
        summary,
        tools,
        removed,
        failed,
        skipped: Skipped {
            dirs: skipped_dirs,
            files: skipped_files,
            no_sign,
            counts,
        },
        shims: ShimSummary {
            dirs: shim_set.dirs.clone(),
            valid: shim_set.valid,
            applied: applied_shims,
            rejected: shim_set.rejected,
            pattern_files: patterns.files.len(),
            rejected_patterns: patterns.rejected,
        },
        would_probe: opts.dry_run.then_some(plan),
        warnings,
        hints,
    })
}

/// Decides whether an executable is probed by this scan, from what is known of it.
fn decide(w: &mut Work, mode: ProbeMode) {
    if w.cached || w.unreadable.is_some() {
        return;
    }
    w.probe_now = match mode {
        ProbeMode::None => None,
        ProbeMode::All => Some(ProbeWhy::All),
        ProbeMode::Auto | ProbeMode::Help if w.allowlisted => Some(ProbeWhy::Allowlist),
        ProbeMode::Auto | ProbeMode::Help if w.rec.sign == Some(true) => Some(ProbeWhy::Sign),
        ProbeMode::Help if w.rec.help != Some(false) => Some(ProbeWhy::Help),
        ProbeMode::Auto | ProbeMode::Help => {
            w.no_sign = true;
            None
        }
    };
}

/// Runs one executable's probe (after `--help` in help mode) and records the outcome.
fn probe_one(w: &mut Work, data: &std::path::Path, timeout: Duration, cancel: Option<&Cancel>) {
    if w.probe_now == Some(ProbeWhy::Help) && w.rec.help.is_none() {
        // A --help that hangs or crashes says nothing about --agent.
        w.rec.help =
            Some(probe::help_mentions_agent(&w.exe.path, timeout, cancel).unwrap_or(false));
    }
    if w.probe_now == Some(ProbeWhy::Help) && w.rec.help == Some(false) {
        w.probe_now = None;
        w.no_sign = true;
        return;
    }
    w.rec.probe = Some(
        match probe::probe_agent(&w.exe.path, &w.exe.name, timeout, cancel) {
            Ok(answer) => match cache::store_native_doc(data, &answer.document) {
                Ok(doc) => ProbeRecord::Native {
                    doc,
                    warnings: answer.warnings,
                    trust: answer.trust,
                },
                Err(m) => ProbeRecord::Failed {
                    reason: FailReason::Unreadable,
                    message: format!("failed to keep the answer: {m}"),
                    diagnostics: Vec::new(),
                    timeout_ms: 0,
                },
            },
            Err(f) => ProbeRecord::Failed {
                reason: f.reason,
                message: f.message,
                diagnostics: f.diagnostics,
                timeout_ms: timeout.as_millis() as u64,
            },
        },
    );
}

fn enum_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The document sent to the registry: the winner's bytes, with pattern files merged in.
/// The inferred document of `name`: this scan's inference, or one made now (a cached
/// inference is current but the registry needs its document again).
fn inferred_document(
    works: &mut [Work],
    src: Option<&mut crate::infer::source::InferSource>,
    name: &str,
) -> Result<(Vec<u8>, crate::model::Metadata), String> {
    let w = works
        .iter_mut()
        .find(|w| w.exe.name == name)
        .ok_or_else(|| format!("{name}: not among the scanned executables"))?;
    if w.inferred.is_none()
        && let (Some(m), Some(src)) = (&w.man, src)
    {
        let page = m.page.clone();
        w.inferred = Some(infer_doc(src.ready_index(), &page, name));
    }
    match &w.inferred {
        Some(Ok(d)) => Ok((d.bytes.clone(), d.metadata.clone())),
        Some(Err(m)) => Err(m.clone()),
        None => Err(format!("{name}: no man page to infer from")),
    }
}

fn compose(
    data: &std::path::Path,
    winner: &Winner,
    applied: &[&PatternFile],
) -> Result<(Vec<u8>, crate::model::Metadata), String> {
    let path = match winner {
        Winner::Native { doc, .. } => cache::native_doc_file(data, doc),
        Winner::Shim { file, .. } => file.path.clone(),
        Winner::Inferred { .. } => {
            return Err("an inferred document is made by inferred_document".into());
        }
    };
    let mut bytes =
        std::fs::read(&path).map_err(|e| format!("failed to read {}: {e}", path.display()))?;
    if !applied.is_empty() {
        let mut value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        shims::merge_patterns(&mut value, applied);
        bytes = serde_json::to_vec_pretty(&value).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
    }
    let metadata = crate::model::Metadata::from_slice(&bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((bytes, metadata))
}
