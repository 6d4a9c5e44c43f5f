//! The scan's fingerprint cache: `<data-dir>/cache/scan-cache.json` plus the raw native
//! answers under `<data-dir>/cache/native/<sha256-hex>.json`.
//!
//! Everything learnt about a file is keyed by its canonical path and valid only while its
//! fingerprint (device, inode, size, mtime ns, ctime ns) is unchanged: whether it shows
//! an ATIP sign (and which), its sha256, whether its `--help` mentions `--agent`, and the outcome of
//! its `--agent` probe. Shim files are cached the same way (their validation verdict).
//! For each registered tool the cache keeps the composition key of what was sent to the
//! registry, so an unchanged tool is sent as "unchanged" without reading anything.
//!
//! The cache is an optimisation: a missing, unreadable or corrupt cache only makes the
//! next scan cold. Files are replaced atomically (temp file + rename) but not fsynced;
//! must not touch `registry.json`.

use super::framework::AppRecord;
use super::paths::Fingerprint;
use super::report::{FailReason, ReportDiagnostic};
use super::sign::Sign;
use crate::atomic;
use crate::registry::Source;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Version of the cache format; a cache of another version is ignored.
pub const CACHE_VERSION: u32 = 3;

/// `scan-cache.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
}

/// What is known about one executable while its fingerprint holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    pub probe: Option<ProbeRecord>,
    /// Whether its package metadata makes it an app of a framework atip converts
    /// (unset when never looked at).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app: Option<AppRecord>,
    /// Outcome of converting the framework's manifest (unset when never run); a
    /// converted document is stored like a native answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub convert: Option<ProbeRecord>,
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShimRecord {
    /// The fingerprint this record is valid for.
    pub fp: Fingerprint,
    /// The verdict.
    pub verdict: ShimVerdict,
}

/// Whether a shim file is usable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// Composition key: hash of the winning source's identity and the pattern files
    /// merged in.
    pub key: String,
    /// Path sent.
    pub path: PathBuf,
    /// Hash sent.
    pub hash: String,
    /// Source sent.
    pub source: Source,
}

/// Where the cache lives.
pub(crate) fn cache_dir(data: &Path) -> PathBuf {
    data.join("cache")
}

/// `scan-cache.json`.
pub(crate) fn cache_file(data: &Path) -> PathBuf {
    cache_dir(data).join("scan-cache.json")
}

/// The stored raw native answer with this sha256 hex.
pub(crate) fn native_doc_file(data: &Path, doc: &str) -> PathBuf {
    cache_dir(data).join("native").join(format!("{doc}.json"))
}

impl Cache {
    /// Reads the cache; anything unusable gives an empty cache and a warning.
    pub fn load(data: &Path) -> (Cache, Option<String>) {
        let path = cache_file(data);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (Cache::empty(), None),
            Err(e) => {
                return (
                    Cache::empty(),
                    Some(format!(
                        "failed to read the scan cache {}: {e}; scanning cold",
                        path.display()
                    )),
                );
            }
        };
        match serde_json::from_slice::<Cache>(&bytes) {
            Ok(c) if c.version == CACHE_VERSION => (c, None),
            Ok(_) => (Cache::empty(), None),
            Err(e) => (
                Cache::empty(),
                Some(format!(
                    "ignoring the corrupt scan cache {}: {e}; scanning cold",
                    path.display()
                )),
            ),
        }
    }

    /// An empty cache.
    pub(crate) fn empty() -> Cache {
        Cache {
            version: CACHE_VERSION,
            ..Cache::default()
        }
    }

    /// The record of a file, if its fingerprint still matches.
    pub(crate) fn file(&self, canonical: &Path, fp: &Fingerprint) -> Option<&FileRecord> {
        self.files.get(canonical.to_str()?).filter(|r| r.fp == *fp)
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

    /// Writes the cache atomically.
    pub fn save(&self, data: &Path) -> Result<(), String> {
        let dir = cache_dir(data);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
        let bytes = serde_json::to_vec(self).map_err(|e| e.to_string())?;
        replace_file(&cache_file(data), &bytes)
    }
}

/// Stores a raw native answer under its sha256; returns the hex.
pub(crate) fn store_native_doc(data: &Path, doc: &[u8]) -> Result<String, String> {
    let hex = crate::digest::sha256_hex(doc);
    let path = native_doc_file(data, &hex);
    if path.exists() {
        return Ok(hex);
    }
    let dir = atomic::parent_dir(&path);
    std::fs::create_dir_all(dir).map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
    replace_file(&path, doc)?;
    Ok(hex)
}

/// Replaces a cache file atomically without fsync ([`atomic::Options::CACHE`]): after
/// a crash a cache file may be lost, which only makes the next scan cold, and skipping
/// the syncs keeps a cold scan of a big PATH from waiting on the disk once per tool.
fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), String> {
    atomic::write_atomic(path, bytes, atomic::Options::CACHE).map_err(|e| e.to_string())
}
