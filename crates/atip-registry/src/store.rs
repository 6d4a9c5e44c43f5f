//! The write path: hashing, atomic file replacement and [`commit`], which merges one
//! scan's findings into `registry.json` under the writer lock.
//!
//! Order of a commit (see `spec/registry.md`): create the data dir, take the lock,
//! re-read `registry.json` (a corrupt one is renamed aside and rebuilt), validate the
//! update, write new metadata files (`tools/<sha256 of the document>.json`), replace
//! `registry.json` (temp file in the same dir, mode 0644, `sync_all`, rename, fsync of
//! the dir) — while, beside them, the compiled catalog (`catalog.bin`, built by the layer above through [`AfterCommit`])
//! of the new index is compiled from the documents in memory, put in place once they
//! are written —, then garbage-collect metadata files no index generation needs and temp
//! files left by killed writers. When the merged index equals the old one apart from
//! `updated`, nothing is written at all.
//!
//! Must not probe or run tools, and must not derive any file name from a tool's name.

use super::lock::RegistryLock;
use super::{Entry, FORMAT_VERSION, Index, RegistryError, Source, TOOLS_DIR};
use crate::atomic;
use crate::digest::{sha256_file, sha256_hex};
use crate::dirs::Dirs;
use crate::model::Metadata;
use crate::timestamp::{compact, is_rfc3339};
use indexmap::IndexMap;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

pub(crate) use crate::atomic::TEMP_PREFIX;

/// Default wait for the writer lock when `ATIP_LOCK_TIMEOUT` is unset.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(30);

/// The path, relative to the data dir, of the metadata file holding `document`:
/// `tools/<sha256 of the document>.json`.
pub fn metadata_rel_path(document: &[u8]) -> String {
    format!("{TOOLS_DIR}/{}.json", sha256_hex(document))
}

impl From<atomic::WriteError> for RegistryError {
    fn from(e: atomic::WriteError) -> Self {
        RegistryError::Write {
            path: e.path,
            source: e.source,
        }
    }
}

/// How many temp files a batch keeps open at once.
const BATCH: usize = 256;

/// Writes many new files into one directory: every temp file is written, then made
/// durable (fsyncs in parallel, see [`sync_parallel`]), then renamed into
/// place, then the directory is synced. A name therefore never holds a partial file,
/// even after a crash. (The batched form of [`atomic::write_atomic`].)
fn write_batch(dir: &Path, files: &[(PathBuf, &[u8])]) -> Result<(), RegistryError> {
    for chunk in files.chunks(BATCH) {
        let mut temps = Vec::with_capacity(chunk.len());
        for (target, bytes) in chunk {
            let mut tmp = atomic::temp_file(target, atomic::Options::SHARED)?;
            tmp.as_file_mut()
                .write_all(bytes)
                .map_err(|source| RegistryError::Write {
                    path: target.clone(),
                    source,
                })?;
            temps.push((tmp, target));
        }
        sync_parallel(&temps)?;
        for (tmp, target) in temps {
            tmp.persist(target).map_err(|e| RegistryError::Write {
                path: target.clone(),
                source: e.error,
            })?;
        }
    }
    Ok(atomic::sync_dir(dir)?)
}

/// fsyncs every temp file, from several threads at once: the file system folds
/// concurrent fsyncs into shared journal commits, so a batch costs a few commits
/// rather than one per file. (`syncfs` would be one call, but it also flushes every
/// other program's dirty data on the same file system.)
fn sync_parallel(temps: &[(tempfile::NamedTempFile, &PathBuf)]) -> Result<(), RegistryError> {
    const THREADS: usize = 16;
    if temps.len() < 4 {
        for (tmp, target) in temps {
            sync_one(tmp, target)?;
        }
        return Ok(());
    }
    let per = temps.len().div_ceil(THREADS);
    std::thread::scope(|scope| {
        let handles: Vec<_> = temps
            .chunks(per)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .try_for_each(|(tmp, target)| sync_one(tmp, target))
                })
            })
            .collect();
        handles.into_iter().try_for_each(|h| {
            // sync_one cannot panic; a panic here would be a bug, reported as an error.
            h.join().unwrap_or_else(|_| {
                Err(RegistryError::Write {
                    path: PathBuf::new(),
                    source: std::io::Error::other("fsync thread panicked"),
                })
            })
        })
    })
}

fn sync_one(tmp: &tempfile::NamedTempFile, target: &Path) -> Result<(), RegistryError> {
    tmp.as_file()
        .sync_all()
        .map_err(|source| RegistryError::Write {
            path: target.to_path_buf(),
            source,
        })
}

/// One tool this scan resolved.
#[derive(Debug, Clone)]
pub struct Found {
    /// Tool name (the registry key); must match `^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`, ≤ 255.
    pub name: String,
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// `sha256:<hex>` of the binary, when pinned (see [`Entry::hash`]); without it,
    /// `fingerprint` must be given.
    pub hash: Option<String>,
    /// Which source won.
    pub source: Source,
    /// The shim directory the metadata came from, for shim sources.
    pub shim_registry: Option<String>,
    /// Trust source: native, vendor, org, community, user or inferred.
    pub trust: String,
    /// `stat` of the executable taken before it was hashed.
    pub fingerprint: Option<super::FileStamp>,
    /// Who vouches for the metadata.
    pub vouched_by: Option<super::Vouch>,
    /// Fresh metadata, or "keep what is stored".
    pub meta: FoundMeta,
}

/// What a scan knows about a found tool's metadata.
#[derive(Debug, Clone)]
pub enum FoundMeta {
    /// Metadata freshly read (probe answer or shim), already validated. `document` is
    /// the JSON to store, byte for byte.
    Fresh {
        /// The JSON document stored under `tools/` (shared with the source that made
        /// it, not copied).
        document: std::sync::Arc<[u8]>,
        /// What the index records of `document` (a scan of a thousand tools holds these,
        /// not a thousand parsed documents, until the commit).
        summary: MetaSummary,
        /// When it was read (RFC 3339); becomes the entry's `lastChecked`.
        checked_at: String,
    },
    /// Nothing changed since the last scan: keep the stored entry as it is. Honoured
    /// only when a stored entry with the same path, hash and source exists; otherwise
    /// the name is reported in [`CommitReport::stale`] and not registered.
    Unchanged,
}

/// The fields of an index entry taken from its metadata document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetaSummary {
    /// The one-line description.
    pub description: String,
    /// The tool's version, when known.
    pub version: Option<String>,
    /// The declared protocol version text, e.g. `0.6`.
    pub atip: String,
    /// See [`Metadata::effects_summary`].
    pub effects: String,
    /// Commands at every depth.
    pub commands: u64,
}

impl MetaSummary {
    /// The summary of a parsed document.
    pub fn of(metadata: &Metadata) -> MetaSummary {
        MetaSummary {
            description: metadata.description.clone(),
            version: metadata.tool_version().map(str::to_string),
            atip: metadata.atip.version_text().to_string(),
            effects: metadata.effects_summary(),
            commands: metadata.command_count() as u64,
        }
    }
}

/// One scan's findings.
#[derive(Debug, Clone, Default)]
pub struct Update {
    /// Tools resolved by this scan.
    pub found: Vec<Found>,
    /// Canonical dirs this scan covered completely: stored tools there that are not in
    /// `found` are removed.
    pub scanned_dirs: Vec<PathBuf>,
}

/// The documents a commit is writing, by path relative to the data dir
/// (`tools/<sha256>.json`): what follows the commit reads them from memory.
pub type Documents<'a> = HashMap<String, &'a [u8]>;

/// What must follow a commit under its lock: state derived from the registry (atip's
/// compiled catalog), built by the layer above. The registry knows only this interface,
/// so it never depends on what it feeds.
pub trait AfterCommit: Send + Sync + std::fmt::Debug {
    /// Builds the derived state of `index` (whose `registry.json` holds `registry_bytes`)
    /// into a temporary file while the registry's own files are written; `Ok(None)` when
    /// what is in place is already current.
    fn prepare(
        &self,
        dirs: &Dirs,
        index: &Index,
        registry_bytes: &[u8],
        documents: &Documents,
    ) -> Result<Option<tempfile::NamedTempFile>, RegistryError>;
    /// Puts what [`AfterCommit::prepare`] built in place, once `registry.json` is written.
    fn install(&self, dirs: &Dirs, prepared: tempfile::NamedTempFile) -> Result<(), RegistryError>;
}

/// How to commit.
#[derive(Debug, Clone)]
pub struct CommitOptions {
    /// Longest wait for another writer's lock.
    pub lock_timeout: Duration,
    /// Timestamp for `updated` (RFC 3339).
    pub now: String,
    /// Say when waiting for the lock (live progress, a note to the `log` facade; warnings
    /// are returned in the report instead).
    pub announce: bool,
    /// What follows the commit under the same lock (`None`: nothing).
    pub after: Option<std::sync::Arc<dyn AfterCommit>>,
}

impl Default for CommitOptions {
    /// The default lock wait (30 s), the current time, announcements on.
    fn default() -> Self {
        CommitOptions {
            lock_timeout: DEFAULT_LOCK_TIMEOUT,
            now: super::rfc3339_now(),
            announce: true,
            after: None,
        }
    }
}

impl CommitOptions {
    /// The defaults with the lock wait from `ATIP_LOCK_TIMEOUT` of the run's `env` (e.g.
    /// `30s`, `500ms`); a value that does not parse is ignored with a warning.
    pub fn from_env(env: &crate::env::Env) -> Self {
        let lock_timeout = match env.var("ATIP_LOCK_TIMEOUT") {
            Some(v) => crate::units::parse_duration(v).unwrap_or_else(|e| {
                log::warn!(
                    "ignoring ATIP_LOCK_TIMEOUT: {e}; waiting up to {} for the registry lock",
                    crate::units::format_duration(DEFAULT_LOCK_TIMEOUT)
                );
                DEFAULT_LOCK_TIMEOUT
            }),
            None => DEFAULT_LOCK_TIMEOUT,
        };
        CommitOptions {
            lock_timeout,
            ..CommitOptions::default()
        }
    }
}

/// A found tool the registry refused, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rejected {
    /// The name as given (may be hostile; never used as a path).
    pub name: String,
    /// Why it was refused.
    pub reason: String,
}

/// What a commit did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CommitReport {
    /// Whether `registry.json` was replaced.
    pub written: bool,
    /// Names new to the registry.
    pub added: Vec<String>,
    /// Names whose entry changed.
    pub updated: Vec<String>,
    /// Names found with an identical entry.
    pub unchanged: Vec<String>,
    /// Names dropped (in a scanned dir but not found, or binary gone).
    pub removed: Vec<String>,
    /// Names sent as `Unchanged` without a matching stored entry: not registered;
    /// the scanner should read their metadata again.
    pub stale: Vec<String>,
    /// Found tools refused as invalid.
    pub rejected: Vec<Rejected>,
    /// Where a corrupt `registry.json` was moved before it was rebuilt.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub corrupt_backup: Option<PathBuf>,
    /// Metadata files deleted because no index generation refers to them any more.
    pub collected: usize,
    /// Whether the writer lock was held (false on file systems without locking).
    pub locked: bool,
    /// Warnings, also printed on stderr as they happen when announcing.
    pub warnings: Vec<String>,
}

const TRUST_SOURCES: [&str; 6] = ["native", "vendor", "org", "community", "user", "inferred"];

/// Whether a tool name may be a registry key: `^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`, at
/// most 255 bytes. Names never become file names, but this keeps keys printable and
/// rules out path-like names such as `../../X`.
pub fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 255
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-'))
}

/// Whether `s` is `sha256:` followed by 64 lowercase hex digits.
pub fn is_valid_hash(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(crate::digest::is_hex64)
}

/// Why a found tool is not accepted into the registry (its `rejected[].reason`).
#[derive(Debug, thiserror::Error)]
enum FoundInvalid {
    #[error(
        "invalid tool name: use letters, digits, `_`, `.`, `+`, `-` (first a letter, digit or `_`), at most 255 bytes"
    )]
    Name,
    #[error("path {} is not absolute", .0.display())]
    Relative(PathBuf),
    #[error("path {} is not UTF-8", .0.display())]
    NotUtf8(PathBuf),
    #[error("hash {0:?} is not sha256:<64 lowercase hex>")]
    Hash(String),
    #[error("neither a hash nor a fingerprint pins the executable")]
    Unpinned,
    #[error("trust {0:?} is not one of {list}", list = TRUST_SOURCES.join(", "))]
    Trust(String),
    #[error("checkedAt {0:?} is not an RFC 3339 time")]
    CheckedAt(String),
    #[error("metadata document is not JSON")]
    NotJson,
    #[error("metadata protocol version {0:?} is not 0.N")]
    Protocol(String),
}

fn check_found(f: &Found) -> Result<(), FoundInvalid> {
    if !is_valid_name(&f.name) {
        return Err(FoundInvalid::Name);
    }
    if !f.path.is_absolute() {
        return Err(FoundInvalid::Relative(f.path.clone()));
    }
    if f.path.to_str().is_none() {
        return Err(FoundInvalid::NotUtf8(f.path.clone()));
    }
    match &f.hash {
        Some(h) if !is_valid_hash(h) => {
            return Err(FoundInvalid::Hash(h.clone()));
        }
        None if f.fingerprint.is_none() => {
            return Err(FoundInvalid::Unpinned);
        }
        _ => {}
    }
    if !TRUST_SOURCES.contains(&f.trust.as_str()) {
        return Err(FoundInvalid::Trust(f.trust.clone()));
    }
    if let FoundMeta::Fresh {
        document,
        summary,
        checked_at,
    } = &f.meta
    {
        if !is_rfc3339(checked_at) {
            return Err(FoundInvalid::CheckedAt(checked_at.clone()));
        }
        if serde_json::from_slice::<serde::de::IgnoredAny>(document).is_err() {
            return Err(FoundInvalid::NotJson);
        }
        let v = summary.atip.as_str();
        if crate::model::ProtocolVersion::parse(v).is_none() {
            return Err(FoundInvalid::Protocol(v.to_owned()));
        }
    }
    Ok(())
}

fn entry_from_fresh(f: &Found, summary: &MetaSummary, checked_at: &str, rel: String) -> Entry {
    Entry {
        path: f.path.clone(),
        hash: f.hash.clone(),
        source: f.source,
        shim_registry: f.shim_registry.clone(),
        last_checked: checked_at.to_string(),
        description: summary.description.clone(),
        version: summary.version.clone(),
        atip: summary.atip.clone(),
        trust: f.trust.clone(),
        effects: summary.effects.clone(),
        commands: summary.commands,
        metadata: rel,
        fingerprint: f.fingerprint,
        vouched_by: f.vouched_by,
    }
}

/// Serializes an index the way it is stored: pretty JSON, two-space indent, final newline.
pub(crate) fn index_bytes(index: &Index) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(index).expect("index always serializes");
    out.push(b'\n');
    out
}

/// Reads `registry.json` for writing. A file that cannot be parsed, or has another
/// format version, is renamed aside as `registry.json.corrupt-<timestamp>` and `None`
/// is returned, so it is rebuilt. Also returns whether defective entries were dropped.
fn load_for_write(
    path: &Path,
    report: &mut CommitReport,
) -> Result<(Option<Index>, bool), RegistryError> {
    let loaded = match Index::load_file(path) {
        // Another format version (from a newer atip, or hand-made) is not merged into
        // and not overwritten in place: it is kept aside like a corrupt file.
        Ok(Some(index)) if index.version != FORMAT_VERSION => Err(RegistryError::Parse {
            path: path.to_path_buf(),
            message: format!(
                "index format version {:?}, this atip writes {FORMAT_VERSION:?}",
                index.version
            ),
        }),
        other => other,
    };
    match loaded {
        Ok(Some(mut index)) => {
            // Entries a writer cannot rely on are dropped, not carried forward.
            let before = index.tools.len();
            index.tools.retain(|name, entry| match entry.defect(name) {
                None => true,
                Some(why) => {
                    report.warnings.push(format!(
                        "dropped the entry {name:?} from {}: {why}",
                        path.display()
                    ));
                    false
                }
            });
            let dropped = index.tools.len() != before;
            Ok((Some(index), dropped))
        }
        Ok(None) => Ok((None, false)),
        // A registry a writer cannot read (a directory in its place, no permission) is
        // one it cannot replace either: an output error, nothing touched.
        Err(RegistryError::Read { path, source }) => Err(RegistryError::Write { path, source }),
        Err(RegistryError::Parse { message, .. }) => {
            let stamp = compact(SystemTime::now());
            let mut aside = path.with_file_name(format!("registry.json.corrupt-{stamp}"));
            let mut n = 1;
            while aside.exists() {
                aside = path.with_file_name(format!("registry.json.corrupt-{stamp}.{n}"));
                n += 1;
            }
            fs::rename(path, &aside).map_err(|source| RegistryError::Write {
                path: path.to_path_buf(),
                source,
            })?;
            let warning = format!(
                "{} is corrupt ({message}); kept it as {} and rebuilt the registry from this scan",
                path.display(),
                aside.display()
            );
            report.warnings.push(warning);
            report.corrupt_backup = Some(aside);
            Ok((None, false))
        }
        Err(e) => Err(e),
    }
}

fn in_scanned_dir(path: &Path, scanned: &HashSet<&Path>) -> bool {
    let Some(parent) = path.parent() else {
        return false;
    };
    scanned.contains(parent)
        || fs::canonicalize(parent).is_ok_and(|c| scanned.contains(c.as_path()))
}

/// Whether committing `update` onto `old` (the index as a reader loaded it) could change
/// anything. `false` only when every found tool is sent unchanged and matches its stored
/// entry (path, hash, source, fingerprint, voucher), no stored entry would be removed, and
/// the index is this atip's own, without defects: then a scan need not take the lock,
/// re-read the index, or check the catalog (a warm rescan). Whatever another writer does
/// meanwhile is the next scan's to reconcile.
pub fn commit_needed(old: &Index, update: &Update) -> bool {
    let ours = Index::empty(String::new());
    if old.version != ours.version || old.agent != ours.agent {
        return true;
    }
    if old.tools.iter().any(|(n, e)| e.defect(n).is_some()) {
        return true;
    }
    let mut names: HashSet<&str> = HashSet::with_capacity(update.found.len());
    for f in &update.found {
        if !names.insert(f.name.as_str()) || check_found(f).is_err() {
            return true;
        }
        let (FoundMeta::Unchanged, Some(e)) = (&f.meta, old.tools.get(&f.name)) else {
            return true;
        };
        if e.path != f.path
            || e.hash != f.hash
            || e.source != f.source
            || f.fingerprint.is_some_and(|fp| e.fingerprint != Some(fp))
            || f.vouched_by.is_some_and(|v| e.vouched_by != Some(v))
        {
            return true;
        }
    }
    let scanned: HashSet<&Path> = update.scanned_dirs.iter().map(PathBuf::as_path).collect();
    old.tools.iter().any(|(n, e)| {
        !names.contains(n.as_str()) && (in_scanned_dir(&e.path, &scanned) || !e.path.exists())
    })
}

/// Under the lock: re-read `registry.json`, merge, write metadata files then
/// `registry.json` atomically, garbage-collect. See the module doc and
/// `spec/registry.md` for the merge rule.
pub fn commit(
    dirs: &Dirs,
    update: &Update,
    opts: &CommitOptions,
) -> Result<CommitReport, RegistryError> {
    let data = &dirs.data;
    let (lock, mut report) = lock_data_dir(data, opts)?;
    let registry_path = dirs.registry_file();
    let (old, dropped_defects) = load_for_write(&registry_path, &mut report)?;
    let empty = IndexMap::new();
    let old_tools = old.as_ref().map_or(&empty, |i| &i.tools);

    let valid = accept_found(update, &mut report);
    let files = plan_metadata_files(data, &valid);
    let mut index = Index::empty(opts.now.clone());
    index.tools = merge(
        old_tools,
        &valid,
        &files.rels,
        &update.scanned_dirs,
        &mut report,
    );

    let same = !dropped_defects && old.as_ref().is_some_and(|o| same_index(o, &index));
    let registry_bytes = (!same).then(|| index_bytes(&index));
    // The catalog is compiled (from the documents in memory) while the files are
    // written: metadata files first, so registry.json never points at a missing file.
    // It is put in place only after both, and it is keyed by registry.json's bytes.
    // Both run on the caller's rayon pool (a scan's CPU pool), where the catalog's own
    // parallel work runs too: a thread of their own would start rayon's global pool
    // beside it, with its threads' stacks and allocator arenas.
    let after = opts.after.as_deref().filter(|_| lock.is_locked());
    let (catalog, written) = rayon::join(
        || after.map(|after| prepare_after(after, dirs, &index, registry_bytes.as_deref(), &files)),
        || {
            write_metadata_files(data, &files).and_then(|()| match &registry_bytes {
                Some(bytes) => Ok(atomic::write_atomic(
                    &registry_path,
                    bytes,
                    atomic::Options::SHARED,
                )?),
                None => Ok(()),
            })
        },
    );
    written?;
    report.written = registry_bytes.is_some();
    if lock.is_locked() {
        let installed = match catalog {
            Some(Ok(Some(tmp))) => opts
                .after
                .as_deref()
                .map_or(Ok(()), |after| after.install(dirs, tmp)),
            Some(Err(e)) => Err(e),
            Some(Ok(None)) | None => Ok(()),
        };
        if let Err(e) = installed {
            report
                .warnings
                .push(format!("the catalog was not updated: {e}"));
        }
        // Keep what the new index and the one it replaced refer to, so a reader that
        // loaded the previous generation a moment ago can still open its files.
        let mut keep: HashSet<String> = index.tools.values().map(|e| e.metadata.clone()).collect();
        if report.written {
            keep.extend(old_tools.values().map(|e| e.metadata.clone()));
        }
        report.collected = collect_garbage(data, &keep, report.written);
    }
    drop(lock);
    Ok(report)
}

/// Creates the data dir and takes the writer lock; on a file system without locking the
/// commit goes on without it, with a warning in the report.
fn lock_data_dir(
    data: &Path,
    opts: &CommitOptions,
) -> Result<(RegistryLock, CommitReport), RegistryError> {
    fs::create_dir_all(data).map_err(|source| RegistryError::Write {
        path: data.to_path_buf(),
        source,
    })?;
    let lock = RegistryLock::acquire(data, opts.lock_timeout, opts.announce)?;
    let mut report = CommitReport {
        locked: lock.is_locked(),
        ..CommitReport::default()
    };
    if !lock.is_locked() {
        report.warnings.push(format!(
            "the file system of {} does not support locking; wrote without the lock",
            data.display()
        ));
    }
    Ok((lock, report))
}

/// Whether the merged index says what the stored one says: then `registry.json` is not
/// written again.
fn same_index(old: &Index, new: &Index) -> bool {
    old.version == new.version && old.agent == new.agent && old.tools.iter().eq(new.tools.iter())
}

/// The found tools a commit accepts: each passes [`check_found`], and the first
/// occurrence of a name wins. The others go into `report.rejected` with the reason.
fn accept_found<'u>(update: &'u Update, report: &mut CommitReport) -> Vec<&'u Found> {
    let mut valid: Vec<&Found> = Vec::with_capacity(update.found.len());
    let mut seen: HashSet<&str> = HashSet::new();
    for f in &update.found {
        if let Err(e) = check_found(f) {
            report.rejected.push(Rejected {
                name: f.name.clone(),
                reason: e.to_string(),
            });
        } else if !seen.insert(f.name.as_str()) {
            report.rejected.push(Rejected {
                name: f.name.clone(),
                reason: "duplicate name in this update; the first one was kept".into(),
            });
        } else {
            valid.push(f);
        }
    }
    valid
}

/// The metadata files of a commit: each fresh tool's path (relative to the data dir),
/// the files still to write, and every fresh document by path.
struct MetadataFiles<'f> {
    rels: HashMap<&'f str, String>,
    pending: Vec<(PathBuf, &'f [u8])>,
    documents: Documents<'f>,
}

/// Names the metadata file of every fresh document and lists those not already on disk.
fn plan_metadata_files<'f>(data: &Path, valid: &[&'f Found]) -> MetadataFiles<'f> {
    let mut files = MetadataFiles {
        rels: HashMap::new(),
        pending: Vec::new(),
        documents: Default::default(),
    };
    for f in valid {
        if let FoundMeta::Fresh { document, .. } = &f.meta {
            let hex = sha256_hex(document);
            let rel = format!("{TOOLS_DIR}/{hex}.json");
            let first = files.documents.insert(rel.clone(), &document[..]).is_none();
            let target = data.join(&rel);
            // A file already named by this hash is reused only if its bytes still
            // hash to its name, so a damaged one heals on the next scan.
            if first
                && !(fs::metadata(&target)
                    .is_ok_and(|m| m.is_file() && m.len() == document.len() as u64)
                    && sha256_file(&target)
                        .is_ok_and(|h| h.strip_prefix("sha256:") == Some(hex.as_str())))
            {
                files.pending.push((target, &document[..]));
            }
            files.rels.insert(f.name.as_str(), rel);
        }
    }
    files
}

/// Writes the planned metadata files in one batch.
fn write_metadata_files(data: &Path, files: &MetadataFiles) -> Result<(), RegistryError> {
    if files.pending.is_empty() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let tools_dir = data.join(TOOLS_DIR);
    fs::create_dir_all(&tools_dir).map_err(|source| RegistryError::Write {
        path: tools_dir.clone(),
        source,
    })?;
    write_batch(&tools_dir, &files.pending)?;
    log::debug!(
        "commit: {} metadata file(s) written in {:.1} ms",
        files.pending.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(())
}

/// The merge rule (spec/registry.md): an old entry not found again is kept unless it
/// lay in a scanned directory or its file is gone; a found tool replaces its entry; an
/// `Unchanged` tool that no longer matches its entry is stale and dropped. Fills the
/// report's lists, sorted; returns the new tools, sorted by name.
fn merge(
    old_tools: &IndexMap<String, Entry>,
    valid: &[&Found],
    rels: &HashMap<&str, String>,
    scanned_dirs: &[PathBuf],
    report: &mut CommitReport,
) -> IndexMap<String, Entry> {
    let scanned: HashSet<&Path> = scanned_dirs.iter().map(PathBuf::as_path).collect();
    let found: HashSet<&str> = valid.iter().map(|f| f.name.as_str()).collect();
    let mut tools: IndexMap<String, Entry> = IndexMap::with_capacity(old_tools.len() + valid.len());
    for (name, entry) in old_tools {
        if found.contains(name.as_str()) {
            continue;
        }
        if in_scanned_dir(&entry.path, &scanned) || !entry.path.exists() {
            report.removed.push(name.clone());
        } else {
            tools.insert(name.clone(), entry.clone());
        }
    }
    for f in valid {
        let old_entry = old_tools.get(&f.name);
        let entry = match &f.meta {
            FoundMeta::Fresh {
                summary,
                checked_at,
                ..
            } => entry_from_fresh(f, summary, checked_at, rels[f.name.as_str()].clone()),
            FoundMeta::Unchanged => match old_entry {
                Some(e) if e.path == f.path && e.hash == f.hash && e.source == f.source => {
                    let mut e = e.clone();
                    // The same contents may have a new stamp (touched, copied over).
                    e.fingerprint = f.fingerprint.or(e.fingerprint);
                    e.vouched_by = f.vouched_by.or(e.vouched_by);
                    e
                }
                _ => {
                    report.stale.push(f.name.clone());
                    if old_entry.is_some() {
                        report.removed.push(f.name.clone());
                    }
                    continue;
                }
            },
        };
        match old_entry {
            None => report.added.push(f.name.clone()),
            // When it was checked and its file's stat are not news: a `--refresh` that
            // finds the same tool reports it unchanged (the entry is still rewritten).
            Some(e)
                if Entry {
                    fingerprint: entry.fingerprint,
                    last_checked: entry.last_checked.clone(),
                    ..e.clone()
                } == entry =>
            {
                report.unchanged.push(f.name.clone())
            }
            Some(_) => report.updated.push(f.name.clone()),
        }
        tools.insert(f.name.clone(), entry);
    }
    tools.sort_unstable_keys();
    for list in [
        &mut report.added,
        &mut report.updated,
        &mut report.unchanged,
        &mut report.removed,
        &mut report.stale,
    ] {
        list.sort_unstable();
    }
    tools
}

/// Prepares what follows the commit (the catalog) from the new index (`written`: the
/// bytes registry.json is being given; `None`: it keeps the bytes on disk). Only under the
/// lock. It is derived data: failing to build it costs readers time, never correctness,
/// so the caller reports a failure as a warning.
fn prepare_after(
    after: &dyn AfterCommit,
    dirs: &Dirs,
    index: &Index,
    written: Option<&[u8]>,
    files: &MetadataFiles,
) -> Result<Option<tempfile::NamedTempFile>, RegistryError> {
    let registry_path = dirs.registry_file();
    let on_disk;
    let bytes = match written {
        Some(b) => b,
        None => {
            on_disk = fs::read(&registry_path).map_err(|source| RegistryError::Read {
                path: registry_path,
                source,
            })?;
            &on_disk
        }
    };
    let started = std::time::Instant::now();
    let compiled = after.prepare(dirs, index, bytes, &files.documents);
    log::debug!(
        "commit: derived state (catalog) prepared in {:.1} ms",
        started.elapsed().as_secs_f64() * 1e3
    );
    compiled
}

/// Removes writer temp files (in `tools/` only when `metadata` is set) and, when
/// `metadata` is set, metadata files no index generation in `keep` refers to. Only ever called under the lock; only
/// touches `tools/*.json` named by a hash and `.atip-tmp-*` files. Failures are
/// ignored: garbage is harmless and the next commit tries again.
fn collect_garbage(data: &Path, keep: &HashSet<String>, metadata: bool) -> usize {
    let mut collected = 0;
    // `tools/` may hold thousands of files: list it only after a real write (stray
    // temp files there are invisible and harmless until then).
    let dirs: &[PathBuf] = if metadata {
        &[data.to_path_buf(), data.join(TOOLS_DIR)]
    } else {
        &[data.to_path_buf()]
    };
    for dir in dirs {
        let Ok(read) = fs::read_dir(dir) else {
            continue;
        };
        for item in read.flatten() {
            let name = item.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(TEMP_PREFIX) {
                let _ = fs::remove_file(item.path());
                continue;
            }
            if dir.as_path() == data {
                continue;
            }
            let is_hash_file = name
                .strip_suffix(".json")
                .is_some_and(|h| h.len() == 64 && h.bytes().all(|c| c.is_ascii_hexdigit()));
            if is_hash_file
                && !keep.contains(&format!("{TOOLS_DIR}/{name}"))
                && fs::remove_file(item.path()).is_ok()
            {
                collected += 1;
            }
        }
    }
    collected
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["gh", "kubectl", "g++", "python3.12", "_x", "a-b_c.d+e"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in [
            "",
            "../../X",
            "..",
            ".hidden",
            "a/b",
            "a b",
            "-x",
            "é",
            &"x".repeat(256),
        ] {
            assert!(!is_valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn hashes() {
        assert!(is_valid_hash(&format!("sha256:{}", "a".repeat(64))));
        assert!(!is_valid_hash(&format!("sha256:{}", "A".repeat(64))));
        assert!(!is_valid_hash(&format!("sha256:{}", "a".repeat(63))));
        assert!(!is_valid_hash(&"a".repeat(64)));
    }
}
