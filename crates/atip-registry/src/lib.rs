//! The local registry: `registry.json` (ATIP index format "2", plus what agents need
//! without opening more files) and the metadata files it points at.
//!
//! This file holds the on-disk format and the lock-free read side every stage uses.
//! Writers replace `registry.json` atomically, so a reader never sees half a file and
//! never takes a lock. Submodules: `store` (the locked, atomic write path: [`commit`],
//! through [`crate::atomic`], hashing with [`crate::digest`]), `lock` (the advisory writer lock), `time`
//! (RFC 3339 timestamps), [`query`] (list filters, `get` look-ups with suggestions) and
//! [`doctor`] (health checks). The normative description is `spec/registry.md`.
//!
//! Must not probe or run tools, and must never write outside the data dir: metadata
//! files are named by the sha256 of their contents, never by a tool's name.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{atomic, digest, dirs, env, output, similar, timestamp, units};
#[allow(unused_imports)]
pub(crate) use atip_model::{model, schema, validate};

use crate::dirs::Dirs;
use crate::model::Metadata;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub mod doctor;
mod lock;
pub mod query;
mod store;

pub use crate::timestamp::{is_rfc3339, rfc3339, rfc3339_now};
pub use lock::RegistryLock;
pub use store::{
    AfterCommit, CommitOptions, CommitReport, DEFAULT_LOCK_TIMEOUT, Documents, Found, FoundMeta,
    MetaSummary, Rejected, Update, commit, commit_needed, is_valid_hash, is_valid_name,
    metadata_rel_path,
};

/// File name of the advisory writer lock, beside `registry.json`.
pub const LOCK_FILE: &str = "registry.lock";
/// Subdirectory of the data dir holding metadata files named by content hash.
pub const TOOLS_DIR: &str = "tools";
/// The `shimRegistry` recorded for tools whose metadata comes from a shim built into
/// atip (a real shim directory is always an absolute path).
pub const BUILTIN_SHIMS: &str = "builtin";
/// The registry's JSON Schema (`schemas/registry.schema.json`), embedded.
pub const SCHEMA: &str = crate::schema::REGISTRY_SCHEMA;

/// The regular files of one directory, listed with one directory read: a warm rescan
/// asks whether each of ~1,000 metadata files still exists, and one listing costs a few
/// `getdents` calls where a `stat` per file costs a path walk each.
#[derive(Debug, Default)]
pub struct FileList {
    dir: PathBuf,
    names: std::collections::HashSet<std::ffi::OsString>,
}

impl FileList {
    /// Lists `dir`; a missing or unreadable directory lists as empty (every file then
    /// counts as missing, so it is written again: never the unsafe way round).
    pub fn of(dir: &Path) -> FileList {
        let names = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.file_name())
            .collect();
        FileList {
            dir: dir.to_path_buf(),
            names,
        }
    }

    /// Whether the directory held a regular file (not a symlink) named `name`.
    pub fn has(&self, name: &str) -> bool {
        self.names.contains(std::ffi::OsStr::new(name))
    }

    /// [`FileList::has`], and the file's bytes still hash to its name
    /// (`<sha256 hex>.json`): a metadata file damaged in place counts as missing, so a
    /// scan writes it again from the document instead of keeping it.
    pub fn has_intact(&self, name: &str) -> bool {
        self.has(name) && hashes_to_name(&self.dir, name)
    }
}

/// Whether the file `name` of `dir` (`<sha256 hex>.json`) still hashes to its name.
pub fn hashes_to_name(dir: &Path, name: &str) -> bool {
    name.strip_suffix(".json").is_some_and(|hex| {
        crate::digest::sha256_file(&dir.join(name))
            .is_ok_and(|h| h.strip_prefix("sha256:") == Some(hex))
    })
}

/// The index format atip writes: the protocol's name-keyed version "2".
pub const FORMAT_VERSION: &str = "2";

/// `registry.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    /// Always `"2"`.
    pub version: String,
    /// When it was last written (RFC 3339, UTC).
    pub updated: String,
    /// The program that wrote it.
    pub agent: AgentInfo,
    /// Tool name → entry, sorted by name.
    pub tools: IndexMap<String, Entry>,
}

/// `agent` of the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// `atip`.
    pub name: String,
    /// atip's version.
    pub version: String,
}

/// Where a tool's winning metadata came from.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// The tool's own `--agent` answer.
    Native,
    /// A user override from the config dir.
    Override,
    /// A content-addressed shim (`shims/sha256/<hex>.json`) matching the binary's hash.
    ShimHash,
    /// A name-keyed shim (`shims/NAME.json`).
    Shim,
    /// A metadata file installed beside the tool (`<prefix>/share/agent-tools/tools/NAME.json`).
    Installed,
    /// Converted by atip from an agent-CLI framework's own manifest (not native ATIP).
    Converted,
    /// A content-addressed shim fetched from a remote registry (`registries.json`).
    Remote,
    /// Inferred from the tool's installed man page (no effects stated).
    Inferred,
}

/// One tool in the index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// `sha256:<hex>` of the executable, pinned when its metadata is bound to its bytes
    /// (an `--agent` answer, a converted manifest, a content-addressed shim) or a source
    /// needed it to decide; absent otherwise: metadata found by name (shims by name,
    /// installed files, man pages) is pinned by `fingerprint` alone, so that a scan
    /// does not read every large binary on PATH (spec/registry.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Which source won.
    pub source: Source,
    /// The shim directory the metadata came from, for shim sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shim_registry: Option<String>,
    /// When the tool was last probed or checked (RFC 3339, UTC).
    pub last_checked: String,
    /// The metadata's one-line description.
    pub description: String,
    /// The tool's version, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The metadata's declared protocol version, e.g. `0.6`.
    pub atip: String,
    /// Trust source: `trust.source` of the metadata, else `native` for native answers and
    /// `community` for shims.
    pub trust: String,
    /// One-line summary of what the commands may do (see `Metadata::effects_summary`).
    pub effects: String,
    /// Number of commands at every depth.
    pub commands: u64,
    /// Metadata file, relative to the data dir (`tools/<hex>.json`).
    pub metadata: String,
    /// What `stat` said about the executable when `hash` was computed: the run-time
    /// integrity check compares it before every run and re-hashes only on a difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<FileStamp>,
    /// Who vouches for the metadata (see [`Vouch`]); derived from `source` and
    /// `shimRegistry` when absent (registries written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vouched_by: Option<Vouch>,
}

/// `stat` facts that change whenever a file's contents do (the kernel sets `ctime` on
/// every write, and nobody can set it back).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileStamp {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
}

impl FileStamp {
    /// The stamp of already-fetched metadata.
    pub fn of(md: &std::fs::Metadata) -> FileStamp {
        use std::os::unix::fs::MetadataExt;
        FileStamp {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime_ns: md.mtime().saturating_mul(1_000_000_000) + md.mtime_nsec(),
            ctime_ns: md.ctime().saturating_mul(1_000_000_000) + md.ctime_nsec(),
        }
    }
}

/// Who vouches for a registry entry's metadata — a fact atip records, unlike the
/// document's own `trust` block, which is a claim. Ranked from most to least vouched
/// for (see `spec/policy.md`, trust).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Vouch {
    /// A guess (metadata inferred from a man page or `--help`), or a shim from a
    /// directory owned by someone other than root or the current user.
    Inferred,
    /// The tool describes itself (its `--agent` answer).
    Tool,
    /// Effects from atip's reviewed table over an interface read from the man page, for a
    /// program in a directory only root can change (spec/infer.md, "Curated effects").
    /// Above `tool`: the policy decides on effects, and these were reviewed rather than
    /// claimed by the program itself.
    Curated,
    /// A shim or override in a directory the current user owns.
    User,
    /// A shim in a directory owned by root (an admin installed it).
    Admin,
    /// A shim built into atip itself.
    Builtin,
}

impl Vouch {
    /// Every value, lowest first, as written in files.
    pub const ALL: [&'static str; 6] = ["inferred", "tool", "curated", "user", "admin", "builtin"];

    /// The name as written in files.
    pub fn as_str(self) -> &'static str {
        Self::ALL[self as usize]
    }

    /// Parses a name as written in files.
    pub fn parse(s: &str) -> Option<Vouch> {
        [
            Vouch::Inferred,
            Vouch::Tool,
            Vouch::Curated,
            Vouch::User,
            Vouch::Admin,
            Vouch::Builtin,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }

    /// Who vouches for metadata from `source` (and, for shims, the directory it came
    /// from). A document whose own `trust.source` says `inferred` is believed: a claim
    /// can only lower trust.
    pub fn derive(source: Source, shim_dir: Option<&Path>, claimed: &str) -> Vouch {
        use std::os::unix::fs::MetadataExt;
        if claimed == "inferred" {
            return Vouch::Inferred;
        }
        match source {
            // The tool's own answer, a file its package installed beside it, or its own
            // framework manifest converted: the tool describes itself.
            Source::Native | Source::Installed | Source::Converted => Vouch::Tool,
            Source::Override => Vouch::User,
            // What the scan recorded (signed by a trusted key or not) is the fact; without
            // it, nobody vouches.
            Source::Inferred | Source::Remote => Vouch::Inferred,
            Source::Shim | Source::ShimHash => {
                let Some(dir) = shim_dir else {
                    return Vouch::Inferred;
                };
                // Built-in shims are recorded as the relative name `builtin`; a real
                // shim directory is always absolute.
                if dir == Path::new(BUILTIN_SHIMS) {
                    return Vouch::Builtin;
                }
                match std::fs::metadata(dir).map(|m| m.uid()) {
                    Ok(0) => Vouch::Admin,
                    Ok(uid) if uid == unsafe { libc::getuid() } => Vouch::User,
                    _ => Vouch::Inferred,
                }
            }
        }
    }
}

/// Failures reading or writing the registry.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// A file could not be read.
    #[error("failed to read {path}: {source}")]
    Read {
        /// File.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A file is not what it should be.
    #[error("failed to parse {path}: {message}")]
    Parse {
        /// File.
        path: PathBuf,
        /// What was wrong, with line and column when known.
        message: String,
    },
    /// A file or directory could not be created or replaced (read-only or full disk,
    /// missing permission, a path component that is not a directory).
    #[error("failed to write {path}: {source}")]
    Write {
        /// File or directory.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A metadata file's bytes do not hash to its name: modified or damaged since the scan.
    #[error(
        "metadata file {path} does not match its sha256 name: it was modified or damaged since the scan"
    )]
    Tampered {
        /// The metadata file.
        path: PathBuf,
    },
    /// Another atip run held the writer lock for longer than the wait limit.
    #[error("failed to lock {path}: another atip run held it for more than {}", crate::units::format_duration(*waited))]
    Locked {
        /// The lock file.
        path: PathBuf,
        /// How long this run waited.
        waited: Duration,
    },
}

impl RegistryError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            RegistryError::Read { path, .. }
            | RegistryError::Parse { path, .. }
            | RegistryError::Write { path, .. }
            | RegistryError::Tampered { path }
            | RegistryError::Locked { path, .. } => path,
        }
    }

    /// The structured error the binary reports: read → input (66), parse → data (65),
    /// write → output (73), lock timeout → temporary (75).
    pub fn to_atip(&self) -> crate::output::AtipError {
        use crate::output::{AtipError, ErrorCode};
        let path = self.path().display().to_string();
        match self {
            RegistryError::Read { .. } => {
                AtipError::new(ErrorCode::RegistryUnreadable, self.to_string())
                    .hint("check the file's permissions, or run `atip scan` to rebuild the registry")
            }
            RegistryError::Parse { .. } => {
                AtipError::new(ErrorCode::RegistryCorrupt, self.to_string())
                    .hint("run `atip scan` to rebuild the registry; the bad file is kept aside")
            }
            RegistryError::Tampered { .. } => {
                AtipError::new(ErrorCode::MetadataTampered, self.to_string())
                    .hint("run `atip scan --refresh` to read the tool's metadata again")
            }
            RegistryError::Write { source, .. } => {
                AtipError::new(ErrorCode::RegistryWriteFailed, self.to_string()).hint(
                    match source.kind() {
                        std::io::ErrorKind::StorageFull
                        | std::io::ErrorKind::QuotaExceeded
                        | std::io::ErrorKind::FileTooLarge => {
                            "the disk or quota is full; free some space and run again; the old registry is untouched"
                        }
                        std::io::ErrorKind::ReadOnlyFilesystem => {
                            "the file system is read-only; point --data-dir / ATIP_DATA_DIR at a writable directory"
                        }
                        _ => {
                            "check that the data dir is writable, or point --data-dir / ATIP_DATA_DIR elsewhere; the old registry is untouched"
                        }
                    },
                )
            }
            RegistryError::Locked { waited, .. } => {
                AtipError::new(ErrorCode::RegistryLocked, self.to_string()).hint(
                    format!(
                        "another `atip scan` is still writing; run again when it is done, or raise ATIP_LOCK_TIMEOUT (waited {})",
                        crate::units::format_duration(*waited)
                    ),
                )
            }
        }
        .details(serde_json::json!({ "path": path }))
    }
}

impl From<RegistryError> for crate::output::AtipError {
    fn from(e: RegistryError) -> Self {
        e.to_atip()
    }
}

impl Entry {
    /// The lowercase hex sha256 its metadata file is named by, when `metadata` has the
    /// only allowed form `tools/<64 hex>.json`.
    pub fn metadata_hex(&self) -> Option<&str> {
        let hex = self
            .metadata
            .strip_prefix("tools/")?
            .strip_suffix(".json")?;
        crate::digest::is_hex64(hex).then_some(hex)
    }

    /// The absolute path of its metadata file inside the data dir; an error when
    /// `metadata` is not `tools/<64 hex>.json`.
    pub fn metadata_file(&self, dirs: &Dirs) -> Result<PathBuf, RegistryError> {
        match self.metadata_hex() {
            Some(_) => Ok(dirs.data.join(&self.metadata)),
            None => Err(RegistryError::Parse {
                path: dirs.registry_file(),
                message: format!(
                    "metadata path {:?} is not tools/<sha256 hex>.json",
                    self.metadata
                ),
            }),
        }
    }

    /// Who vouches for it: as recorded by the scan, else derived from its source.
    pub fn vouch(&self) -> Vouch {
        self.vouched_by.unwrap_or_else(|| {
            Vouch::derive(
                self.source,
                self.shim_registry.as_deref().map(Path::new),
                &self.trust,
            )
        })
    }

    /// Why this entry, stored under `name`, breaks the index format; `None` when it
    /// is sound. Checks what a writer relies on: the name, an absolute path, the hash
    /// and the metadata file name.
    pub(crate) fn defect(&self, name: &str) -> Option<String> {
        if !store::is_valid_name(name) {
            return Some(format!("invalid tool name {name:?}"));
        }
        if !self.path.is_absolute() {
            return Some(format!("path {} is not absolute", self.path.display()));
        }
        match &self.hash {
            Some(h) if !store::is_valid_hash(h) => {
                return Some(format!("hash {h:?} is not sha256:<64 hex>"));
            }
            None if self.fingerprint.is_none() => {
                return Some("neither a hash nor a fingerprint pins the executable".into());
            }
            _ => {}
        }
        if self.metadata_hex().is_none() {
            return Some(format!(
                "metadata {:?} is not tools/<64 hex>.json",
                self.metadata
            ));
        }
        None
    }
}

impl Index {
    /// An empty index.
    pub fn empty(updated: String) -> Index {
        Index {
            version: FORMAT_VERSION.into(),
            updated,
            agent: AgentInfo {
                name: "atip".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            tools: IndexMap::new(),
        }
    }

    /// Reads `registry.json` from the data dir; `Ok(None)` when there is none yet.
    pub fn load(dirs: &Dirs) -> Result<Option<Index>, RegistryError> {
        Self::load_file(&dirs.registry_file())
    }

    /// Reads an index file; `Ok(None)` when it does not exist.
    pub fn load_file(path: &Path) -> Result<Option<Index>, RegistryError> {
        Ok(Self::load_stamped(path)?.map(|(index, _)| index))
    }

    /// [`Index::load_file`], with the stamp of the file the bytes were read from, taken
    /// before reading them: while the file keeps that stamp it holds this index (writers
    /// replace it by renaming a new file, and an edit in place changes its ctime), so a
    /// reader that remembers what it found need not parse it again.
    pub fn load_stamped(path: &Path) -> Result<Option<(Index, FileStamp)>, RegistryError> {
        use std::io::Read;
        let read = |source| RegistryError::Read {
            path: path.into(),
            source,
        };
        let mut file = match std::fs::File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(read(e)),
        };
        let md = file.metadata().map_err(read)?;
        let mut bytes = Vec::with_capacity(md.len() as usize);
        file.read_to_end(&mut bytes).map_err(read)?;
        serde_json::from_slice(&bytes)
            .map(|index| Some((index, FileStamp::of(&md))))
            .map_err(|e| RegistryError::Parse {
                path: path.into(),
                message: e.to_string(),
            })
    }

    /// Reads the stored document of one entry, byte for byte, and checks that it hashes
    /// to its name: the one way every reader (exec, mcp, export, search, get) opens a
    /// metadata file, so a file edited on disk is refused everywhere alike. Refuses a
    /// `metadata` value that is not `tools/<64 hex>.json`, so a hand-edited index cannot
    /// make atip read elsewhere.
    pub fn read_document(dirs: &Dirs, entry: &Entry) -> Result<Vec<u8>, RegistryError> {
        let path = entry.metadata_file(dirs)?;
        let bytes = std::fs::read(&path).map_err(|source| RegistryError::Read {
            path: path.clone(),
            source,
        })?;
        if entry.metadata_hex() != Some(crate::digest::sha256_hex(&bytes).as_str()) {
            return Err(RegistryError::Tampered { path });
        }
        Ok(bytes)
    }

    /// Reads and parses the metadata document of one entry (see `Index::read_document`).
    pub fn read_metadata(dirs: &Dirs, entry: &Entry) -> Result<Metadata, RegistryError> {
        let bytes = Self::read_document(dirs, entry)?;
        Metadata::from_slice(&bytes).map_err(|e| RegistryError::Parse {
            path: entry.metadata_file(dirs).unwrap_or_default(),
            message: e.to_string(),
        })
    }
}
