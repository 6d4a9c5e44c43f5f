//! The compiled catalog: `catalog.bin` beside `registry.json` — the registry's documents
//! flattened, named and indexed for search once, when the registry changes, so that
//! readers start in milliseconds instead of parsing every metadata file.
//!
//! Owns the file format (normative description: `spec/catalog.md`), building it from the
//! registry, writing it (under the registry lock, through [`crate::atomic::write_atomic`]) and
//! checking it before any use. A missing, stale, truncated, corrupt or foreign-version
//! catalog is never trusted: [`load`] says why in a note, compiles the registry again
//! (`registry.json` and the metadata files stay the source of truth) and saves the result
//! when the writer lock is free.
//!
//! Decides nothing itself: flattening and naming are `compile`'s, ranking is `search`'s;
//! the catalog stores what they produced. Sections other than the small tables are read
//! only when used (the search index for a search, one record per tool looked at), each
//! checked against its CRC-32 first.

use crate::compile::{self, FlatTool, FlattenOptions};
use crate::dirs::Dirs;
use crate::output::{AtipError, ErrorCode};
use crate::registry::{Entry, Index, RegistryError, RegistryLock, Source};
use crate::search::SearchIndex;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File name of the catalog, in the data dir beside `registry.json`.
pub const FILE: &str = "catalog.bin";
/// The format this atip writes and reads; any change to the layout, or to what flattening
/// or indexing produce for the same documents, must raise it.
pub const FORMAT: u32 = 2;

const MAGIC: &[u8; 8] = b"ATIPCAT\0";
/// Magic, format, section count, registry sha256, CRC-32 of header and table, zero.
const HEAD: usize = 8 + 4 + 4 + 32 + 4 + 4;
/// Offset, length, CRC-32, zero.
const ROW: usize = 8 + 8 + 4 + 4;
const SECTIONS: usize = 4;
const META: usize = 0;
const TOOLS: usize = 1;
const INDEX: usize = 2;
const RECORDS: usize = 3;

/// One registry entry as compiled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    /// Registry name.
    pub name: String,
    /// The tool its document names (the registry name when it names none).
    pub tool: String,
    /// Its metadata file as the entry names it (`tools/<sha256>.json`).
    pub metadata: String,
    /// Where its metadata came from.
    pub source: Source,
    /// Why its metadata could not be read (then it has no tools), as the JSON path says it.
    pub error: Option<String>,
    /// Its tools: rows `first .. first + count`.
    pub first: u32,
    /// Number of tools.
    pub count: u32,
}

/// One flattened tool's row: names, flags and where its record is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The name flattening gave it, before names were made unique across documents.
    pub base: String,
    /// Its name in the whole registry (every readable document, in name order).
    pub name: String,
    /// Position of its document in `Compiled::docs`.
    pub doc: u32,
    /// It needs a human (TTY, prompts, password).
    pub needs_human: bool,
    at: u64,
    len: u32,
    crc: u32,
}

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    atip: String,
    docs: Vec<Doc>,
}

/// The search index of `atip search`'s default selection: every readable document, the
/// commands that need no human.
#[derive(Debug, Serialize, Deserialize)]
struct Searchable {
    rows: Vec<u32>,
    index: SearchIndex,
}

/// Why a catalog file was not used.
#[derive(Debug, thiserror::Error)]
pub enum Unusable {
    /// There is none.
    #[error("is missing")]
    Missing,
    /// It was compiled from another `registry.json`.
    #[error("is stale (compiled from another registry.json)")]
    Stale,
    /// It ends before its own tables say.
    #[error("is truncated")]
    Truncated,
    /// A check failed.
    #[error("is corrupt ({0})")]
    Corrupt(String),
    /// Another format or atip version wrote it.
    #[error("was written by {0}")]
    Foreign(String),
    /// Reading failed.
    #[error("could not be read ({0})")]
    Unreadable(std::io::Error),
}

#[derive(Debug)]
enum Bytes {
    File(File),
    Memory(Vec<u8>),
}

impl Bytes {
    fn len(&self) -> std::io::Result<u64> {
        match self {
            Bytes::File(f) => f.metadata().map(|m| m.len()),
            Bytes::Memory(b) => Ok(b.len() as u64),
        }
    }

    fn read(&self, at: u64, len: usize) -> Result<Vec<u8>, Unusable> {
        match self {
            Bytes::File(f) => {
                let mut buf = vec![0; len];
                f.read_exact_at(&mut buf, at).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        Unusable::Truncated
                    } else {
                        Unusable::Unreadable(e)
                    }
                })?;
                Ok(buf)
            }
            Bytes::Memory(b) => usize::try_from(at)
                .ok()
                .and_then(|at| b.get(at..at.checked_add(len)?))
                .map(<[u8]>::to_vec)
                .ok_or(Unusable::Truncated),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Section {
    at: u64,
    len: u64,
    crc: u32,
}

/// A checked catalog: its tables in memory, the search index and records read on use.
#[derive(Debug)]
pub struct Compiled {
    bytes: Bytes,
    path: PathBuf,
    sections: [Section; SECTIONS],
    docs: Vec<Doc>,
    rows: Vec<Row>,
}

/// The path of the catalog of a data dir.
pub fn path(dirs: &Dirs) -> PathBuf {
    dirs.data.join(FILE)
}

fn everything() -> FlattenOptions {
    FlattenOptions {
        include_interactive: true,
        commands: None,
    }
}

/// What the search index reads of a tool (see `SearchIndex::build`): the rest is left
/// out so that indexing a large registry does not hold every schema in memory.
fn for_index(t: &FlatTool) -> FlatTool {
    FlatTool {
        name: String::new(),
        tool: t.tool.clone(),
        command: t.command.clone(),
        title: t.title.clone(),
        summary: t.summary.clone(),
        safety: String::new(),
        description: String::new(),
        params: t
            .params
            .iter()
            .map(|p| compile::Param {
                property: String::new(),
                origin: p.origin.clone(),
                kind: p.kind.clone(),
                required: p.required,
                variadic: p.variadic,
                description: p.description.clone(),
                schema: serde_json::Value::Null,
            })
            .collect(),
        effects: Default::default(),
        input_schema: serde_json::Value::Null,
        runner: false,
        about: t.about.clone(),
    }
}

/// Documents compiled per batch: read and flattened in parallel, then written out, so
/// memory holds one batch of documents whatever the registry's size.
const BATCH: usize = 32;

/// Compiles `index` (the registry whose file bytes hash to `registry_sha256`): reads
/// every entry's document (hash-checked, see `Index::read_document`), flattens it, names
/// its tools across the registry and indexes the default search selection.
pub fn build(dirs: &Dirs, index: &Index, registry_sha256: &[u8; 32]) -> Vec<u8> {
    use rayon::prelude::*;
    let mut entries: Vec<(&String, &Entry)> = index.tools.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut docs = Vec::with_capacity(entries.len());
    let mut rows: Vec<Row> = Vec::new();
    let mut records: Vec<u8> = Vec::new();
    let mut taken = HashSet::new();
    let mut indexed: Vec<FlatTool> = Vec::new();
    let mut indexed_rows: Vec<u32> = Vec::new();
    for batch in entries.chunks(BATCH) {
        let flat: Vec<Result<(String, Vec<FlatTool>), String>> = batch
            .par_iter()
            .map(|(name, entry)| {
                compile::source::read_entry(dirs, name, entry).map(|m| {
                    let tool = m.tool_name().unwrap_or(name).to_string();
                    (tool, compile::flatten(&m, &everything()))
                })
            })
            .collect();
        for ((name, entry), r) in batch.iter().zip(flat) {
            let first = rows.len() as u32;
            let (tool, tools, error) = match r {
                Ok((tool, t)) => (tool, t, None),
                Err(e) => ((*name).clone(), Vec::new(), Some(e)),
            };
            let count = tools.len() as u32;
            for mut t in tools {
                let base = t.name.clone();
                t.name = compile::claim_name(t.name, &mut taken);
                let needs_human = t.effects.needs_human();
                if !needs_human {
                    indexed_rows.push(rows.len() as u32);
                    indexed.push(for_index(&t));
                }
                let record = serde_json::to_vec(&t).expect("a flattened tool serializes");
                rows.push(Row {
                    base,
                    name: t.name,
                    doc: docs.len() as u32,
                    needs_human,
                    at: records.len() as u64,
                    len: record.len() as u32,
                    crc: crc32fast::hash(&record),
                });
                records.extend_from_slice(&record);
            }
            docs.push(Doc {
                name: (*name).clone(),
                tool,
                metadata: entry.metadata.clone(),
                source: entry.source,
                error,
                first,
                count,
            });
        }
    }
    let searchable = Searchable {
        index: SearchIndex::build(&indexed),
        rows: indexed_rows,
    };
    drop(indexed);
    let meta = Meta {
        atip: env!("CARGO_PKG_VERSION").to_string(),
        docs,
    };
    let sections: [Vec<u8>; 3] = [encode(&meta), encode(&rows), encode(&searchable)];
    let total =
        HEAD + SECTIONS * ROW + sections.iter().map(Vec::len).sum::<usize>() + records.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT.to_le_bytes());
    out.extend_from_slice(&(SECTIONS as u32).to_le_bytes());
    out.extend_from_slice(registry_sha256);
    out.extend_from_slice(&[0; 8]);
    let mut at = (HEAD + SECTIONS * ROW) as u64;
    for body in sections
        .iter()
        .map(Vec::as_slice)
        .chain([records.as_slice()])
    {
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(body).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        at += body.len() as u64;
    }
    let crc = header_crc(&out[..HEAD + SECTIONS * ROW]);
    out[HEAD - 8..HEAD - 4].copy_from_slice(&crc.to_le_bytes());
    for body in sections
        .iter()
        .map(Vec::as_slice)
        .chain([records.as_slice()])
    {
        out.extend_from_slice(body);
    }
    out
}

/// A table as postcard bytes.
fn encode<T: Serialize>(table: &T) -> Vec<u8> {
    postcard::to_stdvec(table).expect("catalog tables serialize")
}

/// CRC-32 of the header and table with the CRC field itself taken as zero.
fn header_crc(head: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&head[..HEAD - 8]);
    h.update(&[0; 8]);
    h.update(&head[HEAD..]);
    h.finalize()
}

/// sha256 of `registry.json`'s bytes: the key a catalog is compiled for.
pub fn registry_key(bytes: &[u8]) -> [u8; 32] {
    crate::digest::sha256_raw(bytes)
}

impl Compiled {
    /// Opens the catalog at `path` and checks it against the registry whose bytes hash to
    /// `key`: magic, format, header CRC, section bounds, registry hash, atip version and
    /// the tables' CRCs. The search index and the records are checked when read.
    pub fn open(path: &Path, key: &[u8; 32]) -> Result<Compiled, Unusable> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
            Err(e) => return Err(Unusable::Unreadable(e)),
        };
        Self::check(Bytes::File(file), path, key)
    }

    /// A catalog held in memory (just built), checked like a file.
    pub fn from_bytes(bytes: Vec<u8>, path: &Path, key: &[u8; 32]) -> Result<Compiled, Unusable> {
        Self::check(Bytes::Memory(bytes), path, key)
    }

    fn check(bytes: Bytes, path: &Path, key: &[u8; 32]) -> Result<Compiled, Unusable> {
        let size = bytes.len().map_err(Unusable::Unreadable)?;
        if size < (HEAD + SECTIONS * ROW) as u64 {
            // Whatever is there must at least start like a catalog.
            let head = bytes.read(0, size as usize)?;
            if !MAGIC.starts_with(&head[..head.len().min(MAGIC.len())]) {
                return Err(Unusable::Corrupt("not a catalog file".into()));
            }
            return Err(Unusable::Truncated);
        }
        let head = bytes.read(0, HEAD + SECTIONS * ROW)?;
        if &head[..8] != MAGIC {
            return Err(Unusable::Corrupt("not a catalog file".into()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(head[i..i + 8].try_into().expect("8 bytes"));
        let format = u32_at(8);
        if format != FORMAT {
            return Err(Unusable::Foreign(format!(
                "catalog format {format} (this atip reads {FORMAT})"
            )));
        }
        if u32_at(12) as usize != SECTIONS || u32_at(HEAD - 8) != header_crc(&head) {
            return Err(Unusable::Corrupt("header checksum mismatch".into()));
        }
        if head[16..48] != key[..] {
            return Err(Unusable::Stale);
        }
        let mut sections = [Section {
            at: 0,
            len: 0,
            crc: 0,
        }; SECTIONS];
        for (i, s) in sections.iter_mut().enumerate() {
            let r = HEAD + i * ROW;
            *s = Section {
                at: u64_at(r),
                len: u64_at(r + 8),
                crc: u32_at(r + 16),
            };
            if s.at.checked_add(s.len).is_none_or(|end| end > size) {
                return Err(Unusable::Truncated);
            }
        }
        let mut c = Compiled {
            bytes,
            path: path.to_path_buf(),
            sections,
            docs: Vec::new(),
            rows: Vec::new(),
        };
        let meta: Meta = c.table(META)?;
        if meta.atip != env!("CARGO_PKG_VERSION") {
            return Err(Unusable::Foreign(format!("atip {}", meta.atip)));
        }
        c.rows = c.table(TOOLS)?;
        c.docs = meta.docs;
        let sound = c.docs.iter().enumerate().all(|(i, d)| {
            let end = d.first as usize + d.count as usize;
            end <= c.rows.len()
                && c.rows[d.first as usize..end]
                    .iter()
                    .all(|r| r.doc as usize == i)
        }) && c.rows.iter().all(|r| {
            r.at.checked_add(u64::from(r.len))
                .is_some_and(|end| end <= c.sections[RECORDS].len)
        });
        if !sound {
            return Err(Unusable::Corrupt("tables disagree".into()));
        }
        Ok(c)
    }

    fn section(&self, i: usize) -> Result<Vec<u8>, Unusable> {
        let s = self.sections[i];
        let body = self.bytes.read(s.at, s.len as usize)?;
        if crc32fast::hash(&body) != s.crc {
            return Err(Unusable::Corrupt(format!("section {i} checksum mismatch")));
        }
        Ok(body)
    }

    fn table<T: serde::de::DeserializeOwned>(&self, i: usize) -> Result<T, Unusable> {
        postcard::from_bytes(&self.section(i)?)
            .map_err(|e| Unusable::Corrupt(format!("section {i}: {e}")))
    }

    /// The registry's entries, in name order.
    pub(crate) fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// Every flattened tool's row, documents in name order, commands in document order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// The JSON path's warnings: `skipped NAME: why` for every unreadable document.
    pub fn warnings(&self) -> Vec<String> {
        self.docs
            .iter()
            .filter_map(|d| d.error.as_ref().map(|e| format!("skipped {}: {e}", d.name)))
            .collect()
    }

    /// The flattened tool of row `i` (named as in the whole registry).
    pub fn tool(&self, i: usize) -> Result<FlatTool, AtipError> {
        let row = &self.rows[i];
        let s = self.sections[RECORDS];
        let record = self
            .bytes
            .read(s.at + row.at, row.len as usize)
            .and_then(|b| {
                if crc32fast::hash(&b) == row.crc {
                    Ok(b)
                } else {
                    Err(Unusable::Corrupt(format!("record {i} checksum mismatch")))
                }
            })
            .map_err(|e| self.error(&e))?;
        serde_json::from_slice(&record)
            .map_err(|e| self.error(&Unusable::Corrupt(format!("record {i}: {e}"))))
    }

    /// The search index of `atip search`'s default selection (every readable document,
    /// commands that need no human) and, per indexed position, its row.
    pub fn search_index(&self) -> Result<(Vec<u32>, SearchIndex), AtipError> {
        let s: Searchable = self.table(INDEX).map_err(|e| self.error(&e))?;
        if s.rows.len() != s.index.len() || s.rows.iter().any(|&r| r as usize >= self.rows.len()) {
            return Err(self.error(&Unusable::Corrupt("search index disagrees".into())));
        }
        Ok((s.rows, s.index))
    }

    /// The error for damage found after the catalog was opened.
    fn error(&self, why: &Unusable) -> AtipError {
        AtipError::new(
            ErrorCode::RegistryCorrupt,
            format!("catalog {} {why}", self.path.display()),
        )
        .hint("run `atip scan` to compile it again, or delete it")
    }
}

/// What [`load`] has to say besides its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// There was no catalog (a registry from before catalogs, or written by hand): it was
    /// compiled. Worth a line only when asked for detail.
    Compiled(String),
    /// The catalog was unusable (why), or a fresh one could not be saved: worth a note.
    Rejected(String),
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::Compiled(m) | Note::Rejected(m) => f.write_str(m),
        }
    }
}

/// The catalog of the registry as it is now: `None` when there is no registry yet.
/// A catalog that cannot be used is reported through `note` (why, and that it is being
/// rebuilt), compiled again from the registry, and saved when the writer lock is free
/// at once (a reader never waits for it).
pub fn load(dirs: &Dirs, note: &mut dyn FnMut(Note)) -> Result<Option<Compiled>, AtipError> {
    let registry_path = dirs.registry_file();
    let bytes = match std::fs::read(&registry_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(RegistryError::Read {
                path: registry_path,
                source,
            }
            .to_atip());
        }
    };
    let key = registry_key(&bytes);
    let file = path(dirs);
    let why = match Compiled::open(&file, &key) {
        Ok(c) => return Ok(Some(c)),
        Err(why) => why,
    };
    let text = format!(
        "catalog {} {why}; compiling it again from {}",
        file.display(),
        registry_path.display()
    );
    note(match why {
        Unusable::Missing => Note::Compiled(text),
        _ => Note::Rejected(text),
    });
    let index: Index = serde_json::from_slice(&bytes).map_err(|e| {
        RegistryError::Parse {
            path: registry_path.clone(),
            message: e.to_string(),
        }
        .to_atip()
    })?;
    let compiled = build(dirs, &index, &key);
    if let Err(e) = save_if_current(dirs, &compiled, &key) {
        note(Note::Rejected(format!("could not save the catalog: {e}")));
    }
    Compiled::from_bytes(compiled, &file, &key)
        .map(Some)
        .map_err(|e| AtipError::new(ErrorCode::Internal, format!("a fresh catalog {e}")))
}

/// Saves a reader's fresh catalog, only when the writer lock is free now and
/// `registry.json` still has the bytes it was compiled from.
fn save_if_current(dirs: &Dirs, compiled: &[u8], key: &[u8; 32]) -> Result<(), RegistryError> {
    let lock = match RegistryLock::acquire(&dirs.data, Duration::ZERO, false) {
        Ok(l) => l,
        // A writer is at work: it writes a catalog itself.
        Err(RegistryError::Locked { .. }) => return Ok(()),
        Err(e) => return Err(e),
    };
    let now = std::fs::read(dirs.registry_file()).map_err(|source| RegistryError::Read {
        path: dirs.registry_file(),
        source,
    })?;
    if lock.is_locked() && registry_key(&now) == *key {
        write(dirs, compiled)?;
    }
    Ok(())
}

/// For writers, under the registry lock, after `registry.json` was written (or kept):
/// compiles and saves the catalog unless the one on disk is already that of
/// `registry_bytes`.
pub(crate) fn refresh(
    dirs: &Dirs,
    index: &Index,
    registry_bytes: &[u8],
) -> Result<bool, RegistryError> {
    let key = registry_key(registry_bytes);
    if Compiled::open(&path(dirs), &key).is_ok() {
        return Ok(false);
    }
    write(dirs, &build(dirs, index, &key))?;
    Ok(true)
}

/// Replaces the catalog atomically. Not fsynced: it is derived data, and whatever a crash
/// leaves under its name fails the checks and is compiled again.
fn write(dirs: &Dirs, bytes: &[u8]) -> Result<(), RegistryError> {
    Ok(crate::atomic::write_atomic(
        &path(dirs),
        bytes,
        crate::atomic::Options::CACHE,
    )?)
}
