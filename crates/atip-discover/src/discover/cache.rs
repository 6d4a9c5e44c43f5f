//! The scan's fingerprint cache: `<data-dir>/cache/scan-cache.bin` plus the raw native
//! answers under `<data-dir>/cache/native/<sha256-hex>.json`.
//!
//! Everything learnt about a file is keyed by its canonical path and valid only while its
//! fingerprint (device, inode, size, mtime ns, ctime ns) is unchanged: whether it shows
//! an ATIP sign (and which), its sha256, whether its `--help` mentions `--agent`, and the outcome of
//! its `--agent` probe. Shim files are cached the same way (their validation verdict).
//! For each registered tool the cache keeps the composition key of what was sent to the
//! registry, so an unchanged tool is sent as "unchanged" without reading anything, and
//! the fingerprint of each registry metadata file last known intact, so that its bytes
//! are hashed again only when its `stat` changed.
//!
//! The cache is an optimisation: a missing, unreadable or corrupt cache only makes the
//! next scan cold. It is an rkyv archive followed by its CRC-32 (checked, then rkyv's
//! `bytecheck`, so a damaged file is noticed rather than half-believed): a warm rescan
//! reads it whole, decodes its small tables, and decodes each executable's record in place
//! only when `plan` asks for it ([`OldCache`]). It is written only when it changed (see
//! `unchanged_cache` in `discover.rs`; else its bytes are compared with those read). Files
//! are replaced atomically (temp file + rename) but not fsynced; must not touch
//! `registry.json`.

use super::framework::AppRecord;
use super::paths::Fingerprint;
use super::report::{FailReason, ReportDiagnostic};
use super::sign::Sign;
use crate::archive::{ArchiveError, Owned};
use crate::atomic;
use crate::registry::Source;
use atip_base::fileio::CacheError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Version of the cache format; a cache of another version is ignored.
pub const CACHE_VERSION: u32 = 12;

/// The cache file of versions before 4 (JSON), removed when the binary cache is written.
const OLD_JSON_FILE: &str = "scan-cache.json";

/// `scan-cache.json`.
#[derive(
    Debug,
    Clone,
    Default,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct Cache {
    /// Always [`CACHE_VERSION`].
    pub version: u32,
    /// Canonical executable path → what is known about it. Keys are strings (paths that
    /// are not UTF-8 are not cached): byte comparison keeps look-ups cheap on a warm scan.
    pub files: BTreeMap<String, FileRecord>,
    /// Shim or pattern file path → its validation verdict.
    pub shims: BTreeMap<String, ShimRecord>,
    /// Tool name → what the last scan sent to the registry for it.
    pub tools: BTreeMap<String, ToolRecord>,
    /// Registry metadata file (`<sha256 hex>.json` under `tools/`) → its fingerprint
    /// when it was last known to hash to its name (written by a commit, or hashed by a
    /// scan). While the fingerprint holds, a warm rescan takes the file as intact
    /// without reading it; an edit in place changes its ctime, so it is hashed again.
    pub docs: BTreeMap<String, Fingerprint>,
    /// `registry.json` as the last scan found it, when it held exactly the entries that
    /// scan sent (see [`RegistryMemo`]).
    pub registry: Option<RegistryMemo>,
}

/// `<data-dir>/cache/listings.bin`: canonical directory → its entries as a scan listed
/// them (see [`super::paths::Listings`] for when they are kept and used). A file of its
/// own, small and read before the PATH is walked, so that the scan cache (validated
/// whole: ~2 ms for a big PATH's) is read beside the walk, not before it. Same framing
/// as the scan cache (an rkyv archive and its CRC-32); anything unusable is ignored.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ListingsFile {
    /// Always [`CACHE_VERSION`].
    pub version: u32,
    /// Canonical directory → its listing.
    pub dirs: BTreeMap<String, Listing>,
}

/// The file name of [`ListingsFile`] in the cache dir.
const LISTINGS_FILE: &str = "listings.bin";

/// The listings a previous scan kept, read in place.
pub struct OldListings(Owned<ListingsFile>);

impl OldListings {
    /// The kept listings of `data`'s cache dir; `None` when there are none usable
    /// (missing, damaged, another version: the directories are simply listed).
    pub(crate) fn load(data: &Path) -> Option<OldListings> {
        let bytes = crate::archive::map_file(&cache_dir(data).join(LISTINGS_FILE)).ok()?;
        let len = crate::archive::strip_crc((*bytes).as_ref()).ok()?.len();
        let owned = Owned::<ListingsFile>::in_shared(bytes, 0..len).ok()?;
        (owned.get().version.to_native() == CACHE_VERSION).then_some(OldListings(owned))
    }

    /// The entries kept for the directory `dir` (canonical), if it still has the status
    /// `now` they were read under.
    pub(crate) fn listing(&self, dir: &Path, now: &Fingerprint) -> Option<Vec<(OsString, bool)>> {
        let kept = self.0.get().dirs.get(dir.to_str()?)?;
        let links = kept.links.iter().copied();
        (kept.dir == *now).then(|| super::paths::PackedNames::unpack(&kept.names, links))?
    }

    /// The listings kept for the directories `keep` accepts, decoded.
    pub(crate) fn listings(&self, keep: impl FnMut(&str) -> bool) -> Vec<(String, Listing)> {
        decode_kept(&self.0.get().dirs, keep)
    }

    /// Whether a listing is kept for the directory `dir` (canonical).
    pub(crate) fn has_listing(&self, dir: &str) -> bool {
        self.0.get().dirs.contains_key(dir)
    }
}

/// Replaces the kept listings by `dirs` (atomically, like every cache file).
pub(crate) fn save_listings(
    data: &Path,
    dirs: BTreeMap<String, Listing>,
) -> Result<(), CacheError> {
    let file = ListingsFile {
        version: CACHE_VERSION,
        dirs,
    };
    let mut bytes = rkyv::to_bytes::<rkyv::rancor::Error>(&file).map_err(CacheError::Encode)?;
    let crc = crc32fast::hash(&bytes).to_le_bytes();
    bytes.extend_from_slice(&crc);
    let dir = cache_dir(data);
    std::fs::create_dir_all(&dir).map_err(CacheError::create_dir(&dir))?;
    replace_file(&dir.join(LISTINGS_FILE), &bytes)
}

/// A scanned directory's entries, valid while the directory keeps the status they were
/// read under.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct Listing {
    /// The directory's status before it was listed.
    pub dir: Fingerprint,
    /// Its entries that could be run (see `paths::dir_entries`), in name order, packed
    /// ([`super::paths::PackedNames`]): each name's bytes followed by a NUL.
    pub names: Vec<u8>,
    /// Whether each is a symlink.
    pub links: Vec<bool>,
}

/// What `registry.json` held when a scan last read it and found nothing to change: its
/// stamp, and per name what the entry holds beyond the scan's [`ToolRecord`] (whose
/// path, hash and source the entry equalled). While the file keeps that stamp, a warm
/// rescan compares against this instead of parsing the index (~700 KB of JSON for a
/// big PATH). Kept only when the index had no other entries than the scan's names.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct RegistryMemo {
    /// `registry.json`'s stamp (device, inode, size, mtime and ctime in ns).
    pub file: Fingerprint,
    /// The index's `version` and `agent` (name and version): a binary that writes
    /// another does not use the memo.
    pub format: String,
    /// Tool name → what its entry holds.
    pub entries: BTreeMap<String, EntryMemo>,
}

/// The parts of a registry entry a warm rescan compares beyond its [`ToolRecord`].
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct EntryMemo {
    /// The entry's `fingerprint` of the executable.
    pub fingerprint: Option<Fingerprint>,
    /// The entry's `vouchedBy`, as its kebab-case name.
    pub vouch: Option<String>,
    /// The entry's metadata file name under `tools/` (`<sha256 hex>.json`).
    pub file: String,
}

/// What is known about one executable while its fingerprint holds.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
// Compared in place with a rescan's record (`OldCache::holds`).
#[rkyv(compare(PartialEq))]
pub struct FileRecord {
    /// The fingerprint this record is valid for.
    pub fp: Fingerprint,
    /// What its bytes show (unset when never read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sign: Option<Sign>,
    /// `sha256:<hex>` (unset when never hashed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Whether `--help` mentions `--agent` (unset when never asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<bool>,
    /// Outcome of the `--agent` probe (unset when never probed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Box<ProbeRecord>>,
    /// Whether its package metadata makes it an app of a framework atip converts
    /// (unset when never looked at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppRecord>,
    /// Outcome of converting the framework's manifest (unset when never run); a
    /// converted document is stored like a native answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convert: Option<Box<ProbeRecord>>,
}

impl FileRecord {
    /// An empty record for a fingerprint.
    pub fn new(fp: Fingerprint) -> FileRecord {
        FileRecord {
            fp,
            sign: None,
            sha256: None,
            help: None,
            probe: None,
            app: None,
            convert: None,
        }
    }
}

/// Outcome of an `--agent` probe (or of a framework conversion).
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(compare(PartialEq))]
#[serde(tag = "result", rename_all = "kebab-case")]
pub enum ProbeRecord {
    /// A valid answer (or converted document); the raw document is stored as
    /// `native/<doc>.json`.
    Native {
        /// sha256 hex of the raw answer.
        doc: String,
        /// Warnings about the answer (e.g. a differing `name`).
        #[serde(default)]
        warnings: Vec<String>,
        /// The answer's `trust.source`, when it declares one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trust: Option<String>,
    },
    /// No usable answer.
    Failed {
        /// Why.
        reason: FailReason,
        /// Details.
        message: String,
        /// Diagnostics of an invalid answer.
        #[serde(default)]
        diagnostics: Vec<ReportDiagnostic>,
        /// The timeout the probe ran with, in ms (a timed-out probe is retried with a
        /// longer one).
        timeout_ms: u64,
    },
}

/// A shim file's verdict while its fingerprint holds.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct ShimRecord {
    /// The fingerprint this record is valid for.
    pub fp: Fingerprint,
    /// The verdict.
    pub verdict: ShimVerdict,
}

/// Whether a shim file is usable.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum ShimVerdict {
    /// Valid.
    Valid {
        /// `binary.name` (or root `name`), when present.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool: Option<String>,
        /// `trust.source`, when present.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        trust: Option<String>,
        /// sha256 hex of the file.
        doc: String,
        /// Warnings from the validator.
        #[serde(default)]
        warnings: Vec<ReportDiagnostic>,
    },
    /// Rejected.
    Rejected {
        /// Why, in one line.
        message: String,
        /// The validator's findings.
        #[serde(default)]
        diagnostics: Vec<ReportDiagnostic>,
    },
}

/// What was sent to the registry for a tool.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
pub struct ToolRecord {
    /// Composition key: the winning source's identity, or with pattern files merged in,
    /// the hash of it and them (`composition_key` in `discover.rs`).
    pub key: String,
    /// Path sent (the cache keeps only records whose path is UTF-8).
    #[rkyv(with = rkyv::with::AsString)]
    pub path: PathBuf,
    /// Hash sent, when pinned.
    pub hash: Option<String>,
    /// Source sent.
    pub source: Source,
}

/// Where the cache lives.
pub(crate) fn cache_dir(data: &Path) -> PathBuf {
    data.join("cache")
}

/// `scan-cache.bin`.
pub(crate) fn cache_file(data: &Path) -> PathBuf {
    cache_dir(data).join("scan-cache.bin")
}

/// The cache as read: its shim verdicts decoded, everything else left in place.
pub struct Loaded {
    /// The cache's shim verdicts (empty when there was none or it could not be used);
    /// its other tables are read in place from [`Loaded::files`].
    pub cache: Cache,
    /// The file as read and checked, when it was used: each record is decoded from it
    /// only when asked for, and an unchanged cache is not written again.
    pub files: Option<OldCache>,
    /// Why the file could not be used, when it exists but could not.
    pub warning: Option<String>,
}

/// The scan cache file as read (its archive, checked), used in place: the executables'
/// records, the tool records, the metadata files' fingerprints and the registry memo.
/// Decoding the executables' map (a key and a record per executable, then removing each
/// as `plan` takes it) was most of a warm rescan's work on a big PATH; decoding the
/// other three (~8,000 strings for ~1,100 tools) was 1.5-2.5 ms beside the walk.
#[derive(Clone)]
pub struct OldCache(Owned<Cache>);

impl OldCache {
    /// `cache` as a scan would read it back.
    #[cfg(test)]
    pub(crate) fn of(cache: &Cache) -> OldCache {
        OldCache(Owned::from_value(cache))
    }

    /// What the last scan sent for `name`.
    pub(crate) fn tool(&self, name: &str) -> Option<&ArchivedToolRecord> {
        self.0.get().tools.get(name)
    }

    /// How many tool records it holds (the tools the last scan sent).
    pub(crate) fn tools(&self) -> usize {
        self.0.get().tools.len()
    }

    /// Whether `tools` are the tool records stored, name for name.
    pub(crate) fn same_tools(&self, tools: &BTreeMap<String, ToolRecord>) -> bool {
        let stored = &self.0.get().tools;
        stored.len() == tools.len()
            && (stored.iter().zip(tools)).all(|((k, a), (n, r))| k == n && same_tool(a, r))
    }

    /// The registry metadata files the cache knew intact, with their fingerprints, in
    /// name order.
    pub(crate) fn docs(&self) -> impl Iterator<Item = (&str, Fingerprint)> {
        (self.0.get().docs.iter()).map(|(k, fp)| (k.as_str(), Fingerprint::from(fp)))
    }

    /// The fingerprint of the metadata file `file` when the cache last knew it intact.
    pub(crate) fn doc(&self, file: &str) -> Option<Fingerprint> {
        self.0.get().docs.get(file).map(Fingerprint::from)
    }

    /// Whether `docs` are the metadata files' fingerprints stored, file for file.
    pub(crate) fn same_docs(&self, docs: &BTreeMap<String, Fingerprint>) -> bool {
        let stored = &self.0.get().docs;
        stored.len() == docs.len()
            && (stored.iter().zip(docs)).all(|((k, a), (n, fp))| k == n && *a == *fp)
    }

    /// The registry memo.
    pub(crate) fn memo(&self) -> Option<&ArchivedRegistryMemo> {
        self.0.get().registry.as_ref()
    }

    /// The record of `canonical`, decoded, if its fingerprint is still `fp` (a record of
    /// another fingerprint describes another file).
    #[cfg(test)]
    pub(crate) fn record(&self, canonical: &Path, fp: &Fingerprint) -> Option<FileRecord> {
        decode_if(self.0.get().files.get(canonical.to_str()?)?, fp)
    }

    /// Calls `f` with the index in `paths` and the stored record of each path that has
    /// one (`None`: a path that is not UTF-8, never stored). One in-order pass over the
    /// records instead of a B-tree descent per path: paths share long prefixes, so each
    /// descent's dozen comparisons were a warm rescan's main user-space cost. Paths come
    /// directory by directory, each in name order, so sorting them merges a few runs.
    pub(crate) fn visit_stored(
        &self,
        paths: &[Option<&str>],
        mut f: impl FnMut(usize, &ArchivedFileRecord),
    ) {
        let mut order: Vec<usize> = (0..paths.len()).filter(|&i| paths[i].is_some()).collect();
        order.sort_by(|&a, &b| paths[a].cmp(&paths[b]));
        let mut next = order.into_iter().peekable();
        self.0.get().files.visit(|key, rec| {
            let key = key.as_str();
            while let Some(&i) = next.peek() {
                match paths[i].unwrap_or_default().cmp(key) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => f(i, rec),
                    std::cmp::Ordering::Greater => break,
                }
                next.next();
            }
            if next.peek().is_some() {
                std::ops::ControlFlow::Continue(())
            } else {
                std::ops::ControlFlow::Break(())
            }
        });
    }

    /// Whether the record stored for `canonical` is `rec`, compared in place (as the
    /// scan does, through [`OldCache::visit_stored`]).
    #[cfg(test)]
    pub(crate) fn holds(&self, canonical: &Path, rec: &FileRecord) -> bool {
        let mut held = false;
        self.visit_stored(&[canonical.to_str()], |_, a| held = a == rec);
        held
    }

    /// How many records it holds.
    pub(crate) fn len(&self) -> usize {
        self.0.get().files.len()
    }

    /// The records whose path `keep` accepts, decoded.
    pub(crate) fn kept(&self, keep: impl FnMut(&str) -> bool) -> Vec<(String, FileRecord)> {
        decode_kept(&self.0.get().files, keep)
    }

    /// Whether `keep` accepts the path of every record.
    pub(crate) fn all_paths(&self, mut keep: impl FnMut(&str) -> bool) -> bool {
        self.0
            .get()
            .files
            .visit(|k, _| {
                if keep(k.as_str()) {
                    std::ops::ControlFlow::Continue(())
                } else {
                    std::ops::ControlFlow::Break(())
                }
            })
            .is_none()
    }
}

/// `a` decoded, if its fingerprint is still `fp` (a record of another fingerprint
/// describes another file).
pub(crate) fn decode_if(a: &ArchivedFileRecord, fp: &Fingerprint) -> Option<FileRecord> {
    (a.fp == *fp).then(|| rkyv::deserialize::<FileRecord, rkyv::rancor::Error>(a).ok())?
}

/// Whether the stored tool record `a` is `r`.
pub(crate) fn same_tool(a: &ArchivedToolRecord, r: &ToolRecord) -> bool {
    a.key == r.key
        && r.path.to_str() == Some(a.path.as_str())
        && a.hash.as_ref().map(|h| h.as_str()) == r.hash.as_deref()
        && rkyv::deserialize::<Source, rkyv::rancor::Error>(&a.source).ok() == Some(r.source)
}

/// The stored tool record `a`, decoded.
pub(crate) fn decode_tool(a: &ArchivedToolRecord) -> Option<ToolRecord> {
    rkyv::deserialize::<ToolRecord, rkyv::rancor::Error>(a).ok()
}

/// The entries of an archived map (of the scan cache or the listings file) whose key
/// `keep` accepts, decoded; an entry that does not decode is left out.
fn decode_kept<V>(
    map: &rkyv::Archived<BTreeMap<String, V>>,
    mut keep: impl FnMut(&str) -> bool,
) -> Vec<(String, V)>
where
    V: rkyv::Archive,
    V::Archived: rkyv::Deserialize<V, rkyv::api::high::HighDeserializer<rkyv::rancor::Error>>,
{
    let mut out = Vec::new();
    map.visit(|k, v| {
        if keep(k.as_str())
            && let Ok(decoded) = rkyv::deserialize::<V, rkyv::rancor::Error>(v)
        {
            out.push((k.as_str().to_owned(), decoded));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    out
}

/// The stored raw native answer with this sha256 hex.
pub(crate) fn native_doc_file(data: &Path, doc: &str) -> PathBuf {
    cache_dir(data).join("native").join(format!("{doc}.json"))
}

impl Cache {
    /// Reads the cache; anything unusable gives an empty cache (and a warning, unless the
    /// file is simply absent or of another version: intact, but not this version's layout).
    pub fn load(data: &Path) -> Loaded {
        let path = cache_file(data);
        let empty = |warning| Loaded {
            cache: Cache::empty(),
            files: None,
            warning,
        };
        let bytes = match crate::archive::map_file(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return empty(None),
            Err(e) => {
                return empty(Some(format!(
                    "failed to read the scan cache {}: {e}; scanning cold",
                    path.display()
                )));
            }
        };
        match open(bytes) {
            Ok(Some((cache, files))) => Loaded {
                cache,
                files: Some(files),
                warning: None,
            },
            Ok(None) => empty(None),
            Err(e) => empty(Some(format!(
                "ignoring the corrupt scan cache {}: {e}; scanning cold",
                path.display()
            ))),
        }
    }

    /// An empty cache.
    pub(crate) fn empty() -> Cache {
        Cache {
            version: CACHE_VERSION,
            ..Cache::default()
        }
    }

    /// The record of a shim or pattern file, if its fingerprint still matches.
    pub(crate) fn shim(&self, path: &Path, fp: &Fingerprint) -> Option<&ShimRecord> {
        self.shims.get(path.to_str()?).filter(|r| r.fp == *fp)
    }

    /// Remembers a shim or pattern file's verdict (not for paths that are not UTF-8).
    pub(crate) fn put_shim(&mut self, path: &Path, rec: ShimRecord) {
        if let Some(k) = path.to_str() {
            self.shims.insert(k.to_owned(), rec);
        }
    }

    /// Writes the cache atomically unless its bytes are those of `before` (the file it
    /// was read from); returns whether it wrote. Tool records whose path is not UTF-8 are left out (such a
    /// tool is sent fresh on the next scan).
    pub fn save_unless(
        &mut self,
        data: &Path,
        before: Option<&OldCache>,
    ) -> Result<bool, CacheError> {
        self.tools.retain(|_, r| r.path.to_str().is_some());
        self.files.retain(|_, r| {
            r.app
                .as_ref()
                .and_then(|a| a.tooli())
                .is_none_or(|a| a.interpreter.to_str().is_some() && a.dist.to_str().is_some())
        });
        // Sized like the file it was read from: a warm rescan's archive grows no buffer.
        let capacity = before.map_or(0, |b| b.0.bytes().len() + 4);
        let mut bytes = rkyv::api::high::to_bytes_in::<_, rkyv::rancor::Error>(
            self,
            rkyv::util::AlignedVec::<16>::with_capacity(capacity),
        )
        .map_err(CacheError::Encode)?;
        if before.is_some_and(|b| b.0.bytes() == &bytes[..]) {
            return Ok(false);
        }
        let crc = crc32fast::hash(&bytes).to_le_bytes();
        bytes.extend_from_slice(&crc);
        let dir = cache_dir(data);
        std::fs::create_dir_all(&dir).map_err(CacheError::create_dir(&dir))?;
        replace_file(&cache_file(data), &bytes)?;
        // The JSON cache of earlier versions is dead weight once this one exists.
        let _ = std::fs::remove_file(dir.join(OLD_JSON_FILE));
        Ok(true)
    }
}

/// Checks a cache file's bytes (its CRC-32, little-endian, then the archive) and decodes
/// its shim verdicts (the rest is used in place); `None` for a cache of another version.
fn open(bytes: crate::archive::Shared) -> Result<Option<(Cache, OldCache)>, ArchiveError> {
    let len = crate::archive::strip_crc((*bytes).as_ref())?.len();
    // Damage fails the checksum above. Intact bytes that are not an archive of this
    // layout were written by another atip version (a format change adds or moves a
    // field, so the version number cannot be read first): ignored like an old version.
    let Ok(owned) = Owned::<Cache>::in_shared(bytes, 0..len) else {
        return Ok(None);
    };
    let a = owned.get();
    if a.version.to_native() != CACHE_VERSION {
        return Ok(None);
    }
    let de = ArchiveError::Invalid;
    let cache = Cache {
        shims: rkyv::deserialize::<_, rkyv::rancor::Error>(&a.shims).map_err(de)?,
        ..Cache::empty()
    };
    Ok(Some((cache, OldCache(owned))))
}

/// Stores a raw native answer under its sha256; returns the hex.
pub(crate) fn store_native_doc(data: &Path, doc: &[u8]) -> Result<String, CacheError> {
    let hex = crate::digest::sha256_hex(doc);
    let path = native_doc_file(data, &hex);
    if path.exists() {
        return Ok(hex);
    }
    let dir = atomic::parent_dir(&path);
    std::fs::create_dir_all(dir).map_err(CacheError::create_dir(dir))?;
    replace_file(&path, doc)?;
    Ok(hex)
}

/// Replaces a cache file atomically without fsync ([`atomic::Options::CACHE`]): after
/// a crash a cache file may be lost, which only makes the next scan cold, and skipping
/// the syncs keeps a cold scan of a big PATH from waiting on the disk once per tool.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    Ok(atomic::write_atomic(path, bytes, atomic::Options::CACHE)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(n: u64) -> Fingerprint {
        Fingerprint {
            dev: 1,
            ino: n,
            size: 10,
            mtime_ns: -5,
            ctime_ns: 1 << 70,
        }
    }

    fn sample() -> Cache {
        let mut c = Cache::empty();
        let mut rec = FileRecord::new(fp(7));
        rec.sign = Some(Sign::FlagKey);
        rec.sha256 = Some("sha256:ab".into());
        rec.probe = Some(Box::new(ProbeRecord::Failed {
            reason: FailReason::Timeout,
            message: "slow".into(),
            diagnostics: vec![ReportDiagnostic {
                severity: "error".into(),
                rule: "schema".into(),
                pointer: "/a".into(),
                line: Some(3),
                column: None,
                message: "bad".into(),
            }],
            timeout_ms: 2000,
        }));
        c.files.insert("/bin/t".into(), rec);
        c.tools.insert(
            "t".into(),
            ToolRecord {
                key: "k".into(),
                path: "/bin/t".into(),
                hash: Some("sha256:ab".into()),
                source: Source::Native,
            },
        );
        c
    }

    #[test]
    fn round_trips_and_writes_only_when_its_bytes_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        assert!(c.save_unless(dir.path(), None).unwrap());
        let loaded = Cache::load(dir.path());
        // Only the shim verdicts are decoded; the rest is read in place.
        assert_eq!(
            loaded.cache,
            Cache {
                shims: c.shims.clone(),
                ..Cache::empty()
            }
        );
        assert!(loaded.warning.is_none());
        let before = loaded.files.unwrap();
        assert!(before.same_tools(&c.tools) && before.same_docs(&c.docs));
        assert!(before.memo().is_none() && c.registry.is_none());
        assert_eq!(before.len(), 1);
        assert_eq!(
            before.record(Path::new("/bin/t"), &fp(7)),
            Some(c.files["/bin/t"].clone())
        );
        // Unchanged: not written again (the file keeps its inode).
        let ino = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
        let first = ino(&cache_file(dir.path()));
        assert!(!c.save_unless(dir.path(), Some(&before)).unwrap());
        assert_eq!(ino(&cache_file(dir.path())), first);
        // Changed: written.
        c.tools.clear();
        assert!(c.save_unless(dir.path(), Some(&before)).unwrap());
        let after = Cache::load(dir.path()).files.unwrap();
        assert!(after.same_tools(&c.tools) && !after.same_tools(&sample().tools));
    }

    #[test]
    fn tool_records_and_metadata_files_are_read_and_compared_in_place() {
        let mut c = sample();
        c.docs.insert("a.json".into(), fp(1));
        c.docs.insert("b.json".into(), fp(2));
        c.registry = Some(RegistryMemo {
            file: fp(3),
            format: "1 atip 0.1".into(),
            entries: BTreeMap::from([(
                "t".into(),
                EntryMemo {
                    fingerprint: Some(fp(7)),
                    vouch: Some("tool".into()),
                    file: "a.json".into(),
                },
            )]),
        });
        let old = OldCache::of(&c);
        let stored = old.tool("t").unwrap();
        assert!(same_tool(stored, &c.tools["t"]));
        assert_eq!(decode_tool(stored).as_ref(), Some(&c.tools["t"]));
        assert!(old.tool("u").is_none());
        // Each field counts.
        let differs = |change: fn(&mut ToolRecord)| {
            let mut r = c.tools["t"].clone();
            change(&mut r);
            !same_tool(stored, &r)
        };
        assert!(differs(|r| r.key.push('x')));
        assert!(differs(|r| r.path.push("x")));
        assert!(differs(|r| r.hash = None));
        assert!(differs(|r| r.source = Source::Shim));
        let docs: Vec<(&str, Fingerprint)> = old.docs().collect();
        assert_eq!(docs, [("a.json", fp(1)), ("b.json", fp(2))]);
        assert_eq!(old.doc("b.json"), Some(fp(2)));
        assert_eq!(old.doc("c.json"), None);
        assert!(old.same_docs(&c.docs));
        let mut fewer = c.docs.clone();
        fewer.remove("b.json");
        assert!(!old.same_docs(&fewer));
        fewer.insert("b.json".into(), fp(5));
        assert!(!old.same_docs(&fewer), "another fingerprint");
        let mut more = c.tools.clone();
        more.insert("u".into(), c.tools["t"].clone());
        assert!(old.same_tools(&c.tools) && !old.same_tools(&more));
        let memo = old.memo().unwrap();
        assert_eq!(memo.entries.len(), 1);
        assert_eq!(memo.entries.get("t").unwrap().file, "a.json");
    }

    #[test]
    fn records_are_read_in_place_while_their_fingerprint_holds() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        c.files.insert("/opt/u".into(), FileRecord::new(fp(9)));
        c.save_unless(dir.path(), None).unwrap();
        let files = Cache::load(dir.path()).files.unwrap();
        assert!(
            files.record(Path::new("/bin/t"), &fp(8)).is_none(),
            "another file"
        );
        let rec = files.record(Path::new("/bin/t"), &fp(7)).unwrap();
        assert_eq!(rec.sign, Some(Sign::FlagKey));
        assert!(files.record(Path::new("/bin/none"), &fp(7)).is_none());
        let kept: Vec<String> = files
            .kept(|p| p != "/bin/t")
            .into_iter()
            .map(|(p, _)| p)
            .collect();
        assert_eq!(kept, ["/opt/u"]);
        assert!(files.all_paths(|p| p.starts_with('/')));
        assert!(!files.all_paths(|p| p == "/bin/t"));
    }

    /// Every executable of a scan holds a record, and almost none was probed or is an
    /// app: those parts are boxed, so a record stays small (384 bytes when inline: a cold
    /// scan of 2,000 executables held 750 KB more).
    #[test]
    fn a_record_keeps_its_rare_parts_out_of_line() {
        assert!(std::mem::size_of::<FileRecord>() <= 128);
    }

    #[test]
    fn kept_listings_hold_while_the_status_does_and_a_damaged_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path();
        assert!(OldListings::load(data).is_none(), "none kept yet");
        let packed = super::super::paths::PackedNames::pack(&[
            (OsString::from("a"), false),
            (OsString::from("b"), true),
        ]);
        let listing = Listing {
            dir: fp(3),
            names: packed.bytes,
            links: packed.links,
        };
        let dirs = BTreeMap::from([("/bin".to_string(), listing)]);
        save_listings(data, dirs).unwrap();
        let kept = OldListings::load(data).expect("kept listings");
        let want = vec![(OsString::from("a"), false), (OsString::from("b"), true)];
        assert_eq!(kept.listing(Path::new("/bin"), &fp(3)), Some(want));
        assert_eq!(
            kept.listing(Path::new("/bin"), &fp(4)),
            None,
            "another status"
        );
        assert_eq!(kept.listing(Path::new("/usr/bin"), &fp(3)), None);
        assert!(kept.has_listing("/bin") && !kept.has_listing("/usr/bin"));
        drop(kept);
        // One flipped byte fails the checksum; a truncated file too: both are ignored.
        let file = cache_dir(data).join(LISTINGS_FILE);
        let mut bytes = std::fs::read(&file).unwrap();
        bytes[4] ^= 1;
        std::fs::write(&file, &bytes).unwrap();
        assert!(OldListings::load(data).is_none());
        std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
        assert!(OldListings::load(data).is_none());
    }

    #[test]
    fn records_are_found_for_paths_in_any_order_in_one_pass() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        for (i, p) in ["/a/x", "/a/y", "/b/x", "/opt/z/long/name"]
            .iter()
            .enumerate()
        {
            c.files
                .insert((*p).into(), FileRecord::new(fp(100 + i as u64)));
        }
        c.save_unless(dir.path(), None).unwrap();
        let files = Cache::load(dir.path()).files.unwrap();
        // Out of order, with paths the cache lacks (before, between and after its keys)
        // and one that is not UTF-8.
        let paths = [
            Some("/opt/z/long/name"),
            Some("/0"),
            Some("/b/x"),
            None,
            Some("/a/x"),
            Some("/a/xx"),
            Some("/zzz"),
            Some("/a/y"),
        ];
        let mut found = vec![None; paths.len()];
        files.visit_stored(&paths, |i, a| found[i] = Some(a.fp.ino.to_native()));
        let want = [
            Some(103),
            None,
            Some(102),
            None,
            Some(100),
            None,
            None,
            Some(101),
        ];
        assert_eq!(found, want);
        // Each found in place is what a look-up by key finds.
        for (p, w) in paths.iter().zip(want) {
            let by_key = p
                .and_then(|p| files.0.get().files.get(p))
                .map(|a| a.fp.ino.to_native());
            assert_eq!(by_key, w, "{p:?}");
        }
    }

    #[test]
    fn a_record_is_compared_in_place_field_by_field() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        let mut app = FileRecord::new(fp(9));
        app.app = Some(AppRecord::Tooli(Box::new(
            crate::discover::framework::TooliApp {
                interpreter: "/usr/bin/python3".into(),
                module: "notes.cli".into(),
                attr: "app".into(),
                dist: "/opt/notes.dist-info".into(),
                package: "notes".into(),
                version: "1.0".into(),
            },
        )));
        c.files.insert("/opt/u".into(), app);
        c.save_unless(dir.path(), None).unwrap();
        let files = Cache::load(dir.path()).files.unwrap();
        let (t, u) = (Path::new("/bin/t"), Path::new("/opt/u"));
        assert!(files.holds(t, &c.files["/bin/t"]));
        assert!(files.holds(u, &c.files["/opt/u"]));
        assert!(!files.holds(u, &c.files["/bin/t"]), "another record");
        assert!(!files.holds(Path::new("/bin/none"), &c.files["/bin/t"]));
        // Each kind of field, changed, makes it another record.
        let changes: [fn(&mut FileRecord); 7] = [
            |r| r.fp.mtime_ns += 1,
            |r| r.sha256 = None,
            |r| r.help = Some(true),
            |r| r.sign = Some(Sign::Binary),
            |r| match r.probe.as_deref_mut() {
                Some(ProbeRecord::Failed { diagnostics, .. }) => diagnostics[0].column = Some(1),
                _ => unreachable!(),
            },
            |r| match r.probe.as_deref_mut() {
                Some(ProbeRecord::Failed { diagnostics, .. }) => diagnostics[0].line = Some(4),
                _ => unreachable!(),
            },
            |r| r.convert = r.probe.clone(),
        ];
        for change in changes {
            let mut r = c.files["/bin/t"].clone();
            change(&mut r);
            assert!(!files.holds(t, &r), "{r:?}");
        }
        let mut r = c.files["/opt/u"].clone();
        if let Some(AppRecord::Tooli(a)) = &mut r.app {
            a.dist = "/opt/other.dist-info".into();
        }
        assert!(!files.holds(u, &r));
    }

    #[test]
    fn damaged_files_give_an_empty_cache_and_say_so() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        c.save_unless(dir.path(), None).unwrap();
        let good = std::fs::read(cache_file(dir.path())).unwrap();
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        flipped[mid] ^= 0xff;
        for bad in [
            b"garbage".to_vec(),
            good[..good.len() / 2].to_vec(),
            flipped,
        ] {
            std::fs::write(cache_file(dir.path()), &bad).unwrap();
            let loaded = Cache::load(dir.path());
            assert_eq!(loaded.cache, Cache::empty());
            assert!(loaded.files.is_none());
            assert!(loaded.warning.unwrap().contains("corrupt scan cache"));
        }
    }

    #[test]
    fn an_intact_file_of_another_layout_is_another_version_and_ignored_silently() {
        // What an upgrade finds: a cache an older atip wrote, checksum intact, whose
        // struct had other fields (here: not a `Cache` at all).
        let dir = tempfile::tempdir().unwrap();
        let other = rkyv::to_bytes::<rkyv::rancor::Error>(&vec![7u64, 8, 9]).unwrap();
        let mut bytes = other.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(&other).to_le_bytes());
        std::fs::create_dir_all(cache_dir(dir.path())).unwrap();
        std::fs::write(cache_file(dir.path()), &bytes).unwrap();
        let loaded = Cache::load(dir.path());
        assert_eq!(loaded.cache, Cache::empty());
        assert!(loaded.files.is_none());
        assert_eq!(loaded.warning, None);
    }

    #[test]
    fn another_version_is_ignored_silently_and_the_old_json_file_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = sample();
        c.version = CACHE_VERSION + 1;
        c.save_unless(dir.path(), None).unwrap();
        let loaded = Cache::load(dir.path());
        assert_eq!(loaded.cache, Cache::empty());
        assert!(loaded.warning.is_none());
        std::fs::write(cache_dir(dir.path()).join(OLD_JSON_FILE), "{}").unwrap();
        sample().save_unless(dir.path(), None).unwrap();
        assert!(!cache_dir(dir.path()).join(OLD_JSON_FILE).exists());
    }
}
