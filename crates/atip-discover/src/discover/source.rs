//! The metadata-source interface: how a scan asks each source of ATIP metadata what it
//! knows about one executable name.
//!
//! A scan runs in phases (see `spec/scan.md` §0): enumerate → fingerprint and cache →
//! classify each executable by its evidence → probe / read / convert → **resolve one
//! winner per name** → commit. Every source of metadata — the tool's own `--agent`
//! answer ([`super::native`]), metadata files installed beside the tool
//! ([`super::installed`]), the shim layers including the built-in one ([`super::shims`]),
//! and any later one (framework conversion, man-page inference) — is one
//! [`MetadataSource`]. A source only *offers* [`Candidate`]s; it never decides. The
//! winner is chosen in exactly one place, [`super::resolve`], by the precedence table
//! there.
//!
//! Adding a source:
//! 1. implement [`MetadataSource`] in its own module: `offer` appends at most a few
//!    candidates for one [`Subject`] and must only read files (anything that runs a
//!    program happens in the probe phase, through `crate::process`, and is remembered in
//!    the cache record the subject carries);
//! 2. give it a [`crate::registry::Source`] variant and a place in
//!    [`super::resolve::PRECEDENCE`] (and in `spec/scan.md`);
//! 3. report a source that could not be read as a whole through
//!    [`MetadataSource::failures`]: the registry entries it provided before are kept and
//!    the scan exits non-zero (never "the source had nothing, so drop its tools").
//!
//! Must not run anything and must not write anything.

use super::cache::FileRecord;
use crate::registry::{Entry, Source};
use atip_base::fileio::ReadError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where a candidate document's bytes are.
#[derive(Debug, Clone)]
pub enum Doc {
    /// A file, read when the winner's document is composed.
    File(PathBuf),
    /// Bytes in memory: built-in shims, answers the scan could not cache, documents a
    /// source made itself.
    Bytes(Arc<[u8]>),
    /// Bytes built into atip (the built-in shims).
    Static(&'static [u8]),
    /// A file named by the sha256 of its bytes (a document an earlier scan made); read
    /// only if it still hashes to that name.
    Checked {
        /// The file.
        path: PathBuf,
        /// Lowercase sha256 hex its bytes must have.
        sha: String,
    },
}

impl Doc {
    /// The document's bytes (in-memory bytes are shared, not copied: a scan of a
    /// thousand inferred documents holds each once).
    pub(crate) fn read(&self) -> Result<Arc<[u8]>, DocError> {
        match self {
            Doc::File(p) => Ok(std::fs::read(p).map(Arc::from).map_err(ReadError::at(p))?),
            Doc::Bytes(b) => Ok(b.clone()),
            Doc::Static(b) => Ok(Arc::from(*b)),
            Doc::Checked { path, sha } => {
                let bytes = std::fs::read(path).map_err(ReadError::at(path))?;
                if crate::digest::sha256_hex(&bytes) != *sha {
                    return Err(DocError::Changed(path.clone()));
                }
                Ok(bytes.into())
            }
        }
    }
}

/// Why the winning document of a name could not be sent to the registry (the name then
/// becomes a failure of the scan's report).
#[derive(Debug, thiserror::Error)]
pub enum DocError {
    /// Its file could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A document kept by its sha256 no longer has it.
    #[error("{} changed on disk (its sha256 is not its name)", .0.display())]
    Changed(PathBuf),
    /// Pattern files were to be merged in, but it is not JSON.
    #[error("failed to parse {shown}: {source}")]
    Parse {
        /// The file, or the source's identity.
        shown: String,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// It is not ATIP metadata.
    #[error("{shown}: {source}")]
    Metadata {
        /// The file, or the source's identity.
        shown: String,
        /// What is wrong.
        #[source]
        source: crate::model::ModelError,
    },
}

/// What the scan knows about one executable name when it asks the sources.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The registry key: the name a shell resolves.
    pub name: &'a str,
    /// `<canonical dir>/<name>`: what is recorded and run.
    pub path: &'a Path,
    /// The file with every symlink resolved.
    pub canonical: &'a Path,
    /// `sha256:<hex>` of the file, when it was hashed (see [`MetadataSource::needs_hash`]).
    pub sha256: Option<&'a str>,
    /// What is known of the file while its fingerprint holds (sign, probe outcome, …).
    pub record: &'a FileRecord,
    /// Owner and mode of the file, from the scan's `stat` of it (links followed).
    pub owner_mode: (u32, u32),
}

impl Subject<'_> {
    /// The lowercase hex of the file's sha256, when hashed.
    pub(crate) fn hex(&self) -> Option<&str> {
        self.sha256.and_then(|h| h.strip_prefix("sha256:"))
    }
}

/// One source's offer of a metadata document for one name.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The source class recorded in the registry; decides precedence.
    pub source: Source,
    /// Looked up by the file's content hash (wins over a name look-up of the same source).
    pub by_hash: bool,
    /// Where the bytes are.
    pub doc: Doc,
    /// What identifies these bytes for the scan cache's composition key: it must change
    /// whenever the document may have changed (e.g. `shim:<path>:<sha256>`).
    pub identity: String,
    /// Trust source recorded (`native vendor org community user inferred`).
    pub trust: String,
    /// The file shown in the report (`shim`), for file-backed sources.
    pub origin: Option<PathBuf>,
    /// Recorded as the entry's `shimRegistry`: the directory (or `builtin`) it came from.
    pub shim_registry: Option<String>,
    /// Warnings about this document (a differing `name`, validator warnings).
    pub warnings: Vec<String>,
    /// Who vouches for it, when the source knows better than its class and directory
    /// (a remote shim: signed by a trusted key or not); else derived by
    /// `crate::registry::Vouch::derive`.
    pub vouch: Option<crate::registry::Vouch>,
}

/// A source that could not be read as a whole this scan.
#[derive(Debug, Clone)]
pub struct SourceFailure {
    /// The source's [`MetadataSource::id`].
    pub source: &'static str,
    /// What failed, naming the path.
    pub message: String,
    /// The source class whose registry entries it provided.
    pub class: Vec<Source>,
    /// When set, only entries whose `shimRegistry` is this value are its own.
    pub registry: Option<String>,
}

impl SourceFailure {
    /// Whether a stored registry entry was provided by the failed source.
    pub(crate) fn provided(&self, entry: &Entry) -> bool {
        self.class.contains(&entry.source)
            && self
                .registry
                .as_ref()
                .is_none_or(|r| entry.shim_registry.as_deref() == Some(r.as_str()))
    }
}

/// One source of ATIP metadata. See the module documentation for the contract.
pub trait MetadataSource: Sync {
    /// Short stable name, used in reports and `--explain` (`probe`, `installed`, `shims`).
    fn id(&self) -> &'static str;

    /// Whether this source needs `subject`'s sha256 (not known yet): to look it up by
    /// content (content-addressed shims, remote registries), or because what it offers
    /// came from running those bytes (an `--agent` answer, a converted manifest), whose
    /// entry pins the hash. Only such executables are read whole and hashed; an entry
    /// found by name is pinned by the executable's `stat` (spec/scan.md, phase 5).
    fn needs_hash(&self, subject: &Subject<'_>) -> bool;

    /// Appends this source's candidates for one executable. Reads files only.
    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>);

    /// Parts of this source that could not be read this scan.
    fn failures(&self) -> Vec<SourceFailure> {
        Vec::new()
    }
}

/// The trust sources a document may declare.
pub const TRUST_SOURCES: [&str; 6] = ["native", "vendor", "org", "community", "user", "inferred"];

/// A document's declared `trust.source` when it is a known one, else `fallback`.
pub(crate) fn trust_or(declared: Option<&str>, fallback: &str) -> String {
    match declared {
        Some(t) if TRUST_SOURCES.contains(&t) => t.to_owned(),
        _ => fallback.to_owned(),
    }
}
