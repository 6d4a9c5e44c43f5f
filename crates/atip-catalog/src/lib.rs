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

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{archive, atomic, digest, dirs, output};
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_model::model;
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;
#[allow(unused_imports)]
pub(crate) use atip_search as search;

/// The catalog as the step that follows every registry commit: pass it in
/// [`crate::registry::CommitOptions::after`] (a scan does, through its options) so the
/// catalog is compiled beside the commit's writes and installed under the same lock.
#[derive(Debug, Default, Clone, Copy)]
pub struct OnCommit;

impl crate::registry::AfterCommit for OnCommit {
    fn prepare(
        &self,
        dirs: &Dirs,
        index: &Index,
        registry_bytes: &[u8],
        documents: &InMemory,
    ) -> Result<Option<tempfile::NamedTempFile>, RegistryError> {
        compile(dirs, index, registry_bytes, documents)
    }

    fn install(&self, dirs: &Dirs, prepared: tempfile::NamedTempFile) -> Result<(), RegistryError> {
        install(dirs, prepared)
    }
}

pub mod facts;
pub mod kept;
pub mod key;
pub mod rendered;

use crate::archive::Owned;
use crate::compile::{FlatTool, FlattenOptions};
use crate::dirs::Dirs;
use crate::output::{AtipError, ErrorCode};
use crate::registry::{Entry, Index, RegistryError, RegistryLock, Source};
use crate::search::{Facts, IndexBuilder, SearchIndex};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// File name of the catalog, in the data dir beside `registry.json`.
pub const FILE: &str = "catalog.bin";
/// The format this atip writes and reads; any change to the layout, or to what flattening
/// or indexing produce for the same documents, must raise it.
pub const FORMAT: u32 = 12;

const MAGIC: &[u8; 8] = b"ATIPCAT\0";
/// Magic, format, section count, registry sha256, CRC-32 of header and table, zero.
const HEAD: usize = 8 + 4 + 4 + 32 + 4 + 4;
/// Offset, length, CRC-32, zero.
const ROW: usize = 8 + 8 + 4 + 4;
const SECTIONS: usize = 7;
const META: usize = 0;
const TOOLS: usize = 1;
const INDEX: usize = 2;
const RECORDS: usize = 3;
const DOCS: usize = 4;
const NAMES: usize = 5;
/// The search index's posting lists, each checked (CRC-32 in the index) when a query reads it.
const POSTINGS: usize = 6;
/// Count, zero: the start of the documents and names tables.
const TABLE_HEAD: usize = 8;
/// A document's entry: offset, length, CRC-32 of its postcard bytes.
const DOC_ENTRY: usize = 8 + 4 + 4;
/// A name's entry: name offset and length, row, document, record length, record offset,
/// record CRC-32, CRC-32 of the entry's first 36 bytes and the name.
const NAME_ENTRY: usize = 8 + 4 + 4 + 4 + 4 + 8 + 4 + 4;

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
    /// Its registry entry as `registry.json` has it (JSON; parsed only for the entry a
    /// reader uses, e.g. the one tool `atip exec` runs).
    pub entry: String,
    /// Its tools: rows `first .. first + count`.
    pub first: u32,
    /// Number of tools.
    pub count: u32,
}

impl Doc {
    /// Its registry entry. The catalog was opened against the bytes of `registry.json`,
    /// so this is the entry as it is now.
    pub fn entry(&self) -> Result<Entry, AtipError> {
        serde_json::from_str(&self.entry).map_err(|e| {
            AtipError::new(
                ErrorCode::RegistryCorrupt,
                format!("the catalog's entry for {} does not parse: {e}", self.name),
            )
        })
    }
}

/// One flattened tool's row: names, flags and where its record is. Archived (rkyv): a
/// reader looks rows up in place, by position or by name.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize)]
pub struct Row {
    /// Its name was made unique across documents (`_2`): flattening gave it another.
    /// A flag, not that other name: every reader checks the whole table, and 20,000 more
    /// strings were a good part of that check at 1,000 tools.
    pub renamed: bool,
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

/// Section `META`: what every reader checks before anything else, small so that a reader
/// that looks one name up decodes nothing more.
#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    /// The atip version that wrote it.
    atip: String,
    /// Number of documents (registry entries).
    docs: u32,
    /// Number of rows (flattened commands).
    rows: u32,
    /// A document could not be read when compiled.
    unreadable: bool,
    /// Two documents name the same tool.
    tool_twice: bool,
}

/// The rows table (section `TOOLS`), archived.
#[derive(Debug, Default, rkyv::Archive, rkyv::Serialize)]
struct RowTable {
    /// Every flattened tool, documents in name order, commands in document order.
    rows: Vec<Row>,
    /// Row numbers in name order: a name's row by binary search.
    by_name: Vec<u32>,
    /// The rows of `atip search`'s default selection (every readable document, the
    /// commands that need no human), by position in the search index.
    searchable: Vec<u32>,
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

/// A catalog's bytes: the file mapped (read-only; atip replaces the file by a rename,
/// never in place, so a mapping always sees one whole file), or a buffer.
enum Bytes {
    Map(memmap2::Mmap),
    Memory(crate::archive::Bytes),
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        match self {
            Bytes::Map(m) => m,
            Bytes::Memory(b) => b,
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "catalog bytes ({})", self.as_ref().len())
    }
}

/// `len` bytes at `at` of `bytes`, or why not.
fn read(bytes: &[u8], at: u64, len: u64) -> Result<&[u8], Unusable> {
    usize::try_from(at)
        .ok()
        .zip(usize::try_from(len).ok())
        .and_then(|(at, len)| bytes.get(at..at.checked_add(len)?))
        .ok_or(Unusable::Truncated)
}

#[derive(Debug, Clone, Copy)]
struct Section {
    at: u64,
    len: u64,
    crc: u32,
}

/// A catalog whose header and meta were checked: enough to look one name up, each entry
/// read checked on its own ([`Opened::lookup`]), or to check whole ([`Compiled::check`]).
#[derive(Debug)]
struct Opened {
    bytes: Arc<Bytes>,
    path: PathBuf,
    sections: [Section; SECTIONS],
    meta: Meta,
}

/// A checked catalog: its tables in memory, the search index and records read on use.
#[derive(Debug)]
pub struct Compiled {
    opened: Opened,
    docs: Vec<Doc>,
    rows: Owned<RowTable>,
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

/// Documents compiled per batch: read and flattened in parallel, then written out, so
/// memory holds one batch of documents whatever the registry's size.
const BATCH: usize = 32;

/// Compiles `index` (the registry whose file bytes hash to `registry_sha256`) into
/// memory; see [`build_into`].
pub fn build(dirs: &Dirs, index: &Index, registry_sha256: &[u8; 32]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    build_into(dirs, index, registry_sha256, &InMemory::new(), &mut out)
        .expect("writing to memory cannot fail");
    out.into_inner()
}

/// Documents a writer holds in memory, by metadata path (`tools/<sha256>.json`): the
/// catalog is compiled from these bytes while their files are still being written.
pub(crate) use crate::registry::Documents as InMemory;

/// Compiles `index` into `out` (from its start): reads every entry's document
/// (hash-checked, see `Index::read_document`; from `in_memory` when it is there),
/// flattens it, names its tools across the
/// registry and indexes the default search selection. Records are streamed to `out` as
/// they are made, the tables follow them, the header is written last: the catalog is
/// never held whole in memory beside what it is made from.
pub fn build_into<W: Write + Seek>(
    dirs: &Dirs,
    index: &Index,
    registry_sha256: &[u8; 32],
    in_memory: &InMemory,
    out: &mut W,
) -> std::io::Result<()> {
    build_big_above(dirs, index, registry_sha256, in_memory, out, BIG)
}

/// [`build_into`] with documents of more than `big` bytes flattened on the writer's thread
/// (tests compare the two ways).
fn build_big_above<W: Write + Seek>(
    dirs: &Dirs,
    index: &Index,
    registry_sha256: &[u8; 32],
    in_memory: &InMemory,
    out: &mut W,
    big: usize,
) -> std::io::Result<()> {
    let mut entries: Vec<(&String, &Entry)> = index.tools.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let mut layout = Layout::start(out)?;
    // The search index is built on a thread of its own, a batch at a time, while the
    // next batches are flattened and their records written.
    let (to_index, batches) = std::sync::mpsc::sync_channel::<(Vec<Texts>, Vec<Facts>)>(2);
    let (records, search) = std::thread::scope(|scope| {
        let indexer = scope.spawn(move || {
            let mut builder = IndexBuilder::default();
            for (batch, facts) in batches {
                index_texts(&mut builder, batch, facts);
            }
            builder.finish()
        });
        let reading = Reading {
            dirs,
            in_memory,
            big,
        };
        let records = write_records(&reading, &entries, &mut layout, out, to_index);
        (records, indexer.join())
    });
    let search = search.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    let Records {
        docs,
        rows,
        searchable,
    } = records?;
    let mut by_name: Vec<u32> = (0..rows.len() as u32).collect();
    by_name.sort_unstable_by(|&a, &b| rows[a as usize].name.cmp(&rows[b as usize].name));
    let names = names_table(&rows, &by_name);
    let meta = encode(&Meta {
        atip: env!("CARGO_PKG_VERSION").to_string(),
        docs: docs.len() as u32,
        rows: rows.len() as u32,
        unreadable: docs.iter().any(|d| d.error.is_some()),
        tool_twice: names_a_tool_twice(&docs),
    });
    let docs = docs_table(&docs);
    let table = Owned::from_value(&RowTable {
        rows,
        by_name,
        searchable,
    });
    for (i, body) in [
        (META, meta.as_slice()),
        (TOOLS, table.bytes()),
        (INDEX, search.bytes()),
        (DOCS, docs.as_slice()),
        (NAMES, names.as_slice()),
        (POSTINGS, search.postings_bytes()),
    ] {
        let mut s = layout.section(out)?;
        s.write(out, body)?;
        layout.end(i, s);
    }
    layout.finish(out, registry_sha256)
}

/// What the records section says of the registry's documents and their tools.
struct Records {
    docs: Vec<Doc>,
    rows: Vec<Row>,
    /// Rows the default search covers (tools that need no human), in row order.
    searchable: Vec<u32>,
}

/// Section `RECORDS`: each entry's document read and flattened (in parallel, a batch at a
/// time; a big one on this thread, see [`BIG`]), its tools named across the registry and
/// written as JSON records. The searchable tools' texts go to `to_index` once written;
/// dropping the sender on return ends the indexer.
fn write_records<W: Write + Seek>(
    reading: &Reading,
    entries: &[(&String, &Entry)],
    layout: &mut Layout,
    out: &mut W,
    to_index: std::sync::mpsc::SyncSender<(Vec<Texts>, Vec<Facts>)>,
) -> std::io::Result<Records> {
    let mut docs = Vec::with_capacity(entries.len());
    let mut w = RecordWriter {
        section: layout.section(out)?,
        out,
        rows: Vec::new(),
        taken: HashSet::new(),
        searchable: Vec::new(),
        indexed: Vec::new(),
        indexed_facts: Vec::new(),
        to_index,
    };
    let mut machine = None;
    for batch in entries.chunks(BATCH) {
        let (known, prepared) = flatten_with_facts(reading, entries, batch, machine.take());
        let known = machine.insert(known);
        for ((name, entry), (entry_json, prepared)) in batch.iter().zip(prepared) {
            let first = w.rows.len() as u32;
            let doc = docs.len() as u32;
            let (tool, error) =
                w.document(reading.dirs, (name, entry), doc, known.get(*name), prepared)?;
            docs.push(Doc {
                name: (*name).clone(),
                tool,
                metadata: entry.metadata.clone(),
                source: entry.source,
                entry: entry_json,
                error,
                first,
                count: w.rows.len() as u32 - first,
            });
        }
        w.send();
    }
    let RecordWriter {
        section,
        rows,
        searchable,
        ..
    } = w;
    layout.end(RECORDS, section);
    Ok(Records {
        docs,
        rows,
        searchable,
    })
}

/// A document of more bytes than this is parsed and flattened on the writer's thread, each
/// tool's record written as the tool is made: its parsed model (~4.5 times its bytes) is
/// never beside another big document's, nor beside all its records (~2.5 times).
const BIG: usize = 128 << 10;

/// One entry of a batch as the pool leaves it for the writer.
enum Prepared<'b> {
    /// Flattened (or found unreadable) on a pool thread.
    Flat(Result<Flat, crate::registry::RegistryError>),
    /// A big document's bytes, read (hash-checked) but not parsed.
    Big(std::borrow::Cow<'b, [u8]>),
}

/// The records section being written: each tool is named across the registry, given its
/// row and its record written; the searchable tools' texts are sent to the indexer after
/// each batch, when a big document's model is gone (the index grows by megabytes while
/// it takes a big document's tools: not beside that model).
struct RecordWriter<'o, W> {
    out: &'o mut W,
    section: Open,
    rows: Vec<Row>,
    taken: HashSet<String>,
    searchable: Vec<u32>,
    indexed: Vec<Texts>,
    indexed_facts: Vec<Facts>,
    to_index: std::sync::mpsc::SyncSender<(Vec<Texts>, Vec<Facts>)>,
}

impl<W: Write> RecordWriter<'_, W> {
    /// Writes one tool of document `doc`; `record` is its record under its own name.
    fn tool(&mut self, doc: u32, kept: Kept, record: &[u8], facts: &Facts) -> std::io::Result<()> {
        let name = compile::claim_name(kept.name.clone(), &mut self.taken);
        let owned;
        let record = if name != kept.name {
            owned = renamed(record, &kept.name, &name);
            owned.as_slice()
        } else {
            record
        };
        if kept.texts.is_some() {
            self.searchable.push(self.rows.len() as u32);
        }
        self.rows.push(Row {
            renamed: name != kept.name,
            name,
            doc,
            needs_human: kept.texts.is_none(),
            at: self.section.len,
            len: record.len() as u32,
            crc: crc32fast::hash(record),
        });
        self.section.write(self.out, record)?;
        if let Some(texts) = kept.texts {
            self.indexed.push(texts);
            self.indexed_facts.push(facts.clone());
        }
        Ok(())
    }

    /// Writes the tools of registry entry `name` (document `doc`, with the `machine`'s
    /// facts of it): the document's tool name, and why it could not be read.
    fn document(
        &mut self,
        dirs: &Dirs,
        (name, entry): (&String, &Entry),
        doc: u32,
        machine: Option<&facts::EntryFacts>,
        prepared: Prepared,
    ) -> std::io::Result<(String, Option<String>)> {
        match prepared {
            Prepared::Flat(Ok(flat)) => {
                let facts = facts_of(name, machine, flat.section_prior);
                let records = records_of(&flat.records, &flat.ends);
                for (kept, record) in flat.tools.into_iter().zip(records) {
                    self.tool(doc, kept, record, &facts)?;
                }
                Ok((flat.tool, None))
            }
            Prepared::Flat(Err(e)) => Ok((name.clone(), Some(e.to_string()))),
            Prepared::Big(bytes) => match compile::source::parse_entry(dirs, name, entry, &bytes) {
                Ok(m) => {
                    drop(bytes);
                    let facts = facts_of(name, machine, facts::section_prior(&m));
                    self.stream(doc, &m, &facts)?;
                    Ok((m.tool_name().unwrap_or(name).to_string(), None))
                }
                Err(e) => Ok((name.clone(), Some(e.to_string()))),
            },
        }
    }

    /// Flattens a parsed document here, writing each tool as it is made.
    fn stream(
        &mut self,
        doc: u32,
        m: &crate::model::Metadata,
        facts: &Facts,
    ) -> std::io::Result<()> {
        let mut record = Vec::new();
        let mut written = Ok(());
        compile::flatten_params_only(m, &everything(), |t| {
            if written.is_err() {
                return;
            }
            record.clear();
            serde_json::to_writer(&mut record, &t).expect("a flattened tool serializes");
            written = self.tool(doc, Kept::of(t), &record, facts);
            // The indexer takes the texts a slice at a time while the rest is flattened
            // (the channel's bound holds the writer back when it is ahead): its work
            // overlaps this thread's instead of following it, and the document's texts
            // are never all held at once.
            if self.indexed.len() >= STREAM_SLICE {
                self.send();
            }
        });
        written
    }

    /// Hands the texts of the batch to the indexer.
    fn send(&mut self) {
        if self.indexed.is_empty() {
            return;
        }
        let batch = (
            std::mem::take(&mut self.indexed),
            std::mem::take(&mut self.indexed_facts),
        );
        // A gone indexer panicked: its join says so.
        let _ = self.to_index.send(batch);
    }
}

/// The machine's facts of the registry's entries, by name ([`facts::of_entries`]).
type Machine = HashMap<String, facts::EntryFacts>;

/// A batch read and flattened ([`flatten_batch`]), with the machine's facts: `known`, or,
/// for the first batch, gathered meanwhile in the pool, while the documents are flattened
/// (stat calls, small scripts, dpkg's database: waiting for them before the first document
/// was a tenth of a catalog's compile). Both run in the pool the commit runs in, never on
/// a thread of their own: gathered so, they went to rayon's global pool while the writer,
/// a worker of it in a test, blocked waiting for them, and commits running at once could
/// take every worker that way and never finish.
fn flatten_with_facts<'b>(
    reading: &Reading<'b>,
    entries: &[(&String, &Entry)],
    batch: &[(&String, &Entry)],
    known: Option<Machine>,
) -> (Machine, Vec<(String, Prepared<'b>)>) {
    match known {
        Some(known) => (known, flatten_batch(reading, batch)),
        None => rayon::join(
            || facts::of_entries(entries, std::path::Path::new(facts::DPKG_ROOT)),
            || flatten_batch(reading, batch),
        ),
    }
}

/// Where the documents come from: the data dir, or memory when the commit holds them;
/// those of more than `big` bytes are flattened on the writer's thread.
struct Reading<'b> {
    dirs: &'b Dirs,
    in_memory: &'b InMemory<'b>,
    big: usize,
}

/// A batch of entries read and, but for the big ones, flattened in parallel, each with
/// its entry as JSON.
fn flatten_batch<'b>(
    reading: &Reading<'b>,
    batch: &[(&String, &Entry)],
) -> Vec<(String, Prepared<'b>)> {
    let Reading {
        dirs,
        in_memory,
        big,
    } = *reading;
    use rayon::prelude::*;
    use std::borrow::Cow;
    batch
        .par_iter()
        .map(|(name, entry)| {
            let entry_json = serde_json::to_string(entry).expect("a registry entry serializes");
            let bytes = match in_memory.get(entry.metadata.as_str()) {
                Some(bytes) => Ok(Cow::Borrowed(*bytes)),
                None => Index::read_document(dirs, entry).map(Cow::Owned),
            };
            let prepared = match bytes {
                Ok(bytes) if bytes.len() > big => Prepared::Big(bytes),
                Ok(bytes) => Prepared::Flat(
                    compile::source::parse_entry(dirs, name, entry, &bytes)
                        .map(|m| Flat::new(m.tool_name().unwrap_or(name).to_string(), &m)),
                ),
                Err(e) => Prepared::Flat(Err(e)),
            };
            (entry_json, prepared)
        })
        .collect()
}

/// The ranking facts of a document's tools: the machine's prior (1 when unknown) times
/// the manual section's, the family (the document's name when unknown), and the curated
/// task lines of the program registered under `name` (looked up by the registry's name,
/// not the document's tool name: `c++filt`'s tools are called `c__filt`).
fn facts_of(name: &str, known: Option<&facts::EntryFacts>, section: f32) -> Facts {
    Facts {
        prior: known.map_or(1.0, |k| k.prior) * section,
        family: known.map_or_else(|| name.to_string(), |k| k.family.clone()),
        uses: Some(name.to_string()),
    }
}

/// One document flattened off the writer's thread: its tool name, each tool's name and
/// what the search index reads of it, and the tools' records, as written when a tool
/// keeps its own name (the input schema left out: it is made of the parameters'
/// schemas, stored once, in them), one after the other in one buffer.
struct Flat {
    tool: String,
    tools: Vec<Kept>,
    /// The records, back to back.
    records: Vec<u8>,
    /// Where each record ends in `records`.
    ends: Vec<usize>,
    /// The document's manual-section prior (`facts::section_prior`).
    section_prior: f32,
}

/// One flattened tool as the writer needs it once its record is made.
struct Kept {
    /// Its name before the registry-wide claim.
    name: String,
    /// What the index reads of it; `None` for a tool that needs a human (not searched).
    texts: Option<Texts>,
}

impl Kept {
    /// A tool as kept once its record is made.
    fn of(t: FlatTool) -> Kept {
        Kept {
            name: t.name.clone(),
            texts: (!t.effects.needs_human()).then(|| Texts::of(t)),
        }
    }
}

/// What the search index reads of a tool ([`IndexBuilder::add_ranked`]): its texts,
/// moved out of the [`FlatTool`]. The whole tool is ~2 KB of struct before any text (its
/// effects and each parameter's guard are inline); kept for every tool of a document of
/// ~1,700 commands, those tools were a third of a cold scan's heap peak.
#[derive(Debug, Clone, PartialEq)]
struct Texts {
    tool: String,
    command: Vec<String>,
    title: String,
    summary: String,
    about: String,
    /// Each parameter's origin (its name) and description.
    params: Vec<(compile::ParamOrigin, String)>,
}

impl Texts {
    fn of(t: FlatTool) -> Texts {
        Texts {
            tool: t.tool,
            command: t.command,
            title: t.title,
            summary: t.summary,
            about: t.about,
            // Into a Vec of its own: `collect` would keep the parameters' buffer, which
            // is sized for whole parameters.
            params: {
                let mut params = Vec::with_capacity(t.params.len());
                params.extend(t.params.into_iter().map(|p| (p.origin, p.description)));
                params
            },
        }
    }

    /// A tool holding these texts and nothing else, for the index (which reads nothing
    /// else: `kept_texts_index_as_the_whole_tools` fails if it starts to).
    fn into_tool(self) -> FlatTool {
        FlatTool {
            name: String::new(),
            tool: self.tool,
            command: self.command,
            title: self.title,
            summary: self.summary,
            safety: String::new(),
            description: String::new(),
            params: self
                .params
                .into_iter()
                .map(|(origin, description)| compile::Param {
                    property: String::new(),
                    origin,
                    kind: crate::model::ParamType::String,
                    required: false,
                    variadic: false,
                    description,
                    schema: serde_json::Value::Null,
                    guard: Default::default(),
                })
                .collect(),
            effects: Default::default(),
            input_schema: serde_json::Value::Null,
            runner: false,
            about: self.about,
        }
    }
}

/// Tools handed to [`IndexBuilder::add_ranked`] at once: whole tools are rebuilt from
/// their texts a slice at a time, never a whole document's.
const INDEX_SLICE: usize = 256;

/// Tools of a big document handed to the indexer at once while it is flattened: the
/// indexer makes whole tools of a slice's texts, ~2 KB each, beside that document's model.
const STREAM_SLICE: usize = 64;

/// Indexes one batch's texts, in order.
fn index_texts(builder: &mut IndexBuilder, texts: Vec<Texts>, facts: Vec<Facts>) {
    let mut pairs = texts.into_iter().zip(facts);
    loop {
        let (tools, facts): (Vec<FlatTool>, Vec<Facts>) = pairs
            .by_ref()
            .take(INDEX_SLICE)
            .map(|(t, f)| (t.into_tool(), f))
            .unzip();
        if tools.is_empty() {
            return;
        }
        builder.add_ranked(&tools, &facts);
    }
}

/// The records of a buffer, given where each ends.
fn records_of<'a>(bytes: &'a [u8], ends: &'a [usize]) -> impl Iterator<Item = &'a [u8]> {
    ends.iter().scan(0, move |start, &end| {
        Some(&bytes[std::mem::replace(start, end)..end])
    })
}

impl Flat {
    /// Each tool's record is written as the tool is flattened; the tool is then kept as
    /// its name and texts only (see [`Texts`]).
    fn new(tool: String, m: &crate::model::Metadata) -> Flat {
        let (mut tools, mut records, mut ends) = (Vec::new(), Vec::new(), Vec::new());
        compile::flatten_params_only(m, &everything(), |t| {
            serde_json::to_writer(&mut records, &t).expect("a flattened tool serializes");
            ends.push(records.len());
            tools.push(Kept::of(t));
        });
        records.shrink_to_fit();
        Flat {
            tool,
            tools,
            records,
            ends,
            section_prior: facts::section_prior(m),
        }
    }
}

/// A tool's record with its name changed from `old` to `new` (claimed across the
/// registry): the name is the record's first field ([`FlatTool`] declares it first), so
/// only that prefix is rewritten; the kept tool has no parameter schemas to write again.
fn renamed(record: &[u8], old: &str, new: &str) -> Vec<u8> {
    let quoted = |n: &str| serde_json::to_vec(n).expect("a string serializes");
    let head = [b"{\"name\":".as_slice(), &quoted(old)].concat();
    let rest = record
        .strip_prefix(head.as_slice())
        .expect("a flattened tool's record starts with its name");
    [b"{\"name\":".as_slice(), &quoted(new), rest].concat()
}

/// Whether two documents name the same tool (the JSON path names their commands
/// otherwise). Sorted, not hashed: cheap at any registry size.
fn names_a_tool_twice(docs: &[Doc]) -> bool {
    let mut tools: Vec<&str> = docs.iter().map(|d| d.tool.as_str()).collect();
    tools.sort_unstable();
    tools.windows(2).any(|w| w[0] == w[1])
}

/// Section `DOCS`: count, zero, per document its entry (offset in the section, length,
/// CRC-32), then the documents as postcard, each checked on its own when read.
fn docs_table(docs: &[Doc]) -> Vec<u8> {
    let blobs: Vec<Vec<u8>> = docs.iter().map(encode).collect();
    let mut out = Vec::with_capacity(
        TABLE_HEAD + docs.len() * DOC_ENTRY + blobs.iter().map(Vec::len).sum::<usize>(),
    );
    out.extend_from_slice(&(docs.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    let mut at = (TABLE_HEAD + docs.len() * DOC_ENTRY) as u64;
    for b in &blobs {
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(b.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32fast::hash(b).to_le_bytes());
        at += b.len() as u64;
    }
    for b in &blobs {
        out.extend_from_slice(b);
    }
    out
}

/// Section `NAMES`: count, zero, per row in name order an entry (see [`NAME_ENTRY`]) that
/// carries its own CRC-32, then the names. One name is found by binary search that checks
/// only the entries it reads.
fn names_table(rows: &[Row], by_name: &[u32]) -> Vec<u8> {
    let names_len: usize = rows.iter().map(|r| r.name.len()).sum();
    let mut out = Vec::with_capacity(TABLE_HEAD + rows.len() * NAME_ENTRY + names_len);
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    let mut at = (TABLE_HEAD + rows.len() * NAME_ENTRY) as u64;
    for &i in by_name {
        let r = &rows[i as usize];
        let start = out.len();
        out.extend_from_slice(&at.to_le_bytes());
        out.extend_from_slice(&(r.name.len() as u32).to_le_bytes());
        out.extend_from_slice(&i.to_le_bytes());
        out.extend_from_slice(&r.doc.to_le_bytes());
        out.extend_from_slice(&r.len.to_le_bytes());
        out.extend_from_slice(&r.at.to_le_bytes());
        out.extend_from_slice(&r.crc.to_le_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&out[start..]);
        crc.update(r.name.as_bytes());
        out.extend_from_slice(&crc.finalize().to_le_bytes());
        at += r.name.len() as u64;
    }
    for &i in by_name {
        out.extend_from_slice(rows[i as usize].name.as_bytes());
    }
    out
}

/// Where the sections of a catalog being written lie: bodies are written in any order,
/// each from a multiple of [`crate::archive::ALIGN`], and the header that lists them last.
struct Layout {
    table: [Section; SECTIONS],
    at: u64,
}

/// A section being written: where it starts, its length so far and its running CRC.
struct Open {
    at: u64,
    len: u64,
    crc: crc32fast::Hasher,
}

impl Open {
    fn write<W: Write>(&mut self, out: &mut W, bytes: &[u8]) -> std::io::Result<()> {
        out.write_all(bytes)?;
        self.crc.update(bytes);
        self.len += bytes.len() as u64;
        Ok(())
    }
}

impl Layout {
    fn start<W: Write + Seek>(out: &mut W) -> std::io::Result<Layout> {
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&[0; HEAD + SECTIONS * ROW])?;
        Ok(Layout {
            table: [Section {
                at: 0,
                len: 0,
                crc: 0,
            }; SECTIONS],
            at: (HEAD + SECTIONS * ROW) as u64,
        })
    }

    /// Pads to the next aligned offset and opens a section there.
    fn section<W: Write>(&mut self, out: &mut W) -> std::io::Result<Open> {
        let aligned = self.at.next_multiple_of(crate::archive::ALIGN as u64);
        out.write_all(&[0; crate::archive::ALIGN][..(aligned - self.at) as usize])?;
        Ok(Open {
            at: aligned,
            len: 0,
            crc: crc32fast::Hasher::new(),
        })
    }

    fn end(&mut self, i: usize, s: Open) {
        self.at = s.at + s.len;
        self.table[i] = Section {
            at: s.at,
            len: s.len,
            crc: s.crc.finalize(),
        };
    }

    /// Writes the header and section table over the zeros `start` left.
    fn finish<W: Write + Seek>(self, out: &mut W, key: &[u8; 32]) -> std::io::Result<()> {
        let mut head = Vec::with_capacity(HEAD + SECTIONS * ROW);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&FORMAT.to_le_bytes());
        head.extend_from_slice(&(SECTIONS as u32).to_le_bytes());
        head.extend_from_slice(key);
        head.extend_from_slice(&[0; 8]);
        for s in &self.table {
            head.extend_from_slice(&s.at.to_le_bytes());
            head.extend_from_slice(&s.len.to_le_bytes());
            head.extend_from_slice(&s.crc.to_le_bytes());
            head.extend_from_slice(&[0; 4]);
        }
        let crc = header_crc(&head);
        head[HEAD - 8..HEAD - 4].copy_from_slice(&crc.to_le_bytes());
        out.seek(SeekFrom::Start(0))?;
        out.write_all(&head)?;
        out.seek(SeekFrom::Start(self.at))?;
        out.flush()
    }
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

/// Section `i`'s bytes, checked against its CRC-32.
fn section<'a>(
    bytes: &'a [u8],
    sections: &[Section; SECTIONS],
    i: usize,
) -> Result<&'a [u8], Unusable> {
    let s = sections[i];
    let body = read(bytes, s.at, s.len)?;
    if crc32fast::hash(body) != s.crc {
        return Err(Unusable::Corrupt(format!("section {i} checksum mismatch")));
    }
    Ok(body)
}

/// Section `i` as an rkyv archive used in place, checked (CRC-32, then rkyv's check).
fn archived<T>(
    bytes: &Arc<Bytes>,
    sections: &[Section; SECTIONS],
    i: usize,
) -> Result<Owned<T>, Unusable>
where
    T: rkyv::Archive,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rkyv::rancor::Error>>,
{
    section((**bytes).as_ref(), sections, i)?;
    let s = sections[i];
    let range = s.at as usize..(s.at + s.len) as usize;
    let shared: crate::archive::Shared = bytes.clone();
    Owned::in_shared(shared, range).map_err(|e| Unusable::Corrupt(format!("section {i}: {e}")))
}

/// `bytes` in a buffer aligned for rkyv archives.
fn aligned(bytes: &[u8]) -> crate::archive::Bytes {
    let mut v = crate::archive::Bytes::with_capacity(bytes.len());
    v.extend_from_slice(bytes);
    v
}

/// A postcard table.
fn decode<T: serde::de::DeserializeOwned>(body: &[u8], i: usize) -> Result<T, Unusable> {
    postcard::from_bytes(body).map_err(|e| Unusable::Corrupt(format!("section {i}: {e}")))
}

impl Opened {
    /// Opens the catalog at `path` and checks what every reader needs against the
    /// registry whose bytes hash to `key`: magic, format, header CRC, section bounds,
    /// registry hash, and meta (its CRC, atip version). Everything else is checked when
    /// read: by [`Compiled::check`] for whole tables, by [`Opened::lookup`] per entry.
    fn open(path: &Path, key: &[u8; 32]) -> Result<Opened, Unusable> {
        let file = match File::open(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Unusable::Missing),
            Err(e) => return Err(Unusable::Unreadable(e)),
        };
        let size = file.metadata().map_err(Unusable::Unreadable)?.len();
        let bytes = if size < (HEAD + SECTIONS * ROW) as u64 {
            let mut small = Vec::new();
            std::io::Read::read_to_end(&mut &file, &mut small).map_err(Unusable::Unreadable)?;
            Bytes::Memory(aligned(&small))
        } else {
            crate::archive::explain_sigbus();
            // SAFETY: mapped read-only; atip replaces catalog.bin by renaming a new file
            // over it, never in place, and a truncation by another program is reported
            // (explain_sigbus) instead of read.
            Bytes::Map(unsafe { memmap2::Mmap::map(&file) }.map_err(Unusable::Unreadable)?)
        };
        Self::check(Arc::new(bytes), path, key)
    }

    /// A catalog held in memory (just built), checked like a file.
    fn from_bytes(bytes: Vec<u8>, path: &Path, key: &[u8; 32]) -> Result<Opened, Unusable> {
        Self::check(Arc::new(Bytes::Memory(aligned(&bytes))), path, key)
    }

    fn check(bytes: Arc<Bytes>, path: &Path, key: &[u8; 32]) -> Result<Opened, Unusable> {
        let all: &[u8] = (*bytes).as_ref();
        let size = all.len() as u64;
        if size < (HEAD + SECTIONS * ROW) as u64 {
            // Whatever is there must at least start like a catalog.
            if !MAGIC.starts_with(&all[..all.len().min(MAGIC.len())]) {
                return Err(Unusable::Corrupt("not a catalog file".into()));
            }
            // A catalog of another format may have a shorter header: named as such.
            if all.len() >= 12 && &all[..8] == MAGIC && u32_le(&all[8..12]) != FORMAT {
                return Err(foreign_format(u32_le(&all[8..12])));
            }
            return Err(Unusable::Truncated);
        }
        let head = &all[..HEAD + SECTIONS * ROW];
        if &head[..8] != MAGIC {
            return Err(Unusable::Corrupt("not a catalog file".into()));
        }
        let format = u32_le(&head[8..12]);
        if format != FORMAT {
            return Err(foreign_format(format));
        }
        if u32_le(&head[12..16]) as usize != SECTIONS
            || u32_le(&head[HEAD - 8..HEAD - 4]) != header_crc(head)
        {
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
                at: u64_le(&head[r..r + 8]),
                len: u64_le(&head[r + 8..r + 16]),
                crc: u32_le(&head[r + 16..r + 20]),
            };
            if s.at.checked_add(s.len).is_none_or(|end| end > size) {
                return Err(Unusable::Truncated);
            }
        }
        let meta: Meta = decode(section(all, &sections, META)?, META)?;
        if meta.atip != env!("CARGO_PKG_VERSION") {
            return Err(Unusable::Foreign(format!("atip {}", meta.atip)));
        }
        Ok(Opened {
            bytes,
            path: path.to_path_buf(),
            sections,
            meta,
        })
    }

    /// Section `i`'s bytes, bounds checked when opened; not checksummed here.
    fn body(&self, i: usize) -> &[u8] {
        let s = self.sections[i];
        &(*self.bytes).as_ref()[s.at as usize..(s.at + s.len) as usize]
    }

    /// What the catalog says of the tool named `name`: the registry-wide facts that
    /// decide whether its names are the JSON path's, and, when they are, its row, its
    /// document and its flattened command. Reads and checks only the name entries a
    /// binary search visits (each against its own CRC-32), that row's document and its
    /// record, and that they agree with one another.
    fn lookup(&self, name: &str) -> Result<Lookup, Unusable> {
        let mut found = Lookup {
            unreadable: self.meta.unreadable,
            tool_twice: self.meta.tool_twice,
            named: None,
        };
        if found.unreadable || found.tool_twice {
            return Ok(found);
        }
        let names = self.body(NAMES);
        let count = table(names, NAME_ENTRY, NAMES)?;
        if count != self.meta.rows as usize {
            return Err(disagree());
        }
        let (mut lo, mut hi) = (0, count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = name_entry(names, mid)?;
            match e.name.cmp(name.as_bytes()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    found.named = Some(self.named(name, &e)?);
                    break;
                }
            }
        }
        Ok(found)
    }

    /// The tool of the name entry `e` (whose name is `name`), checked against it.
    fn named(&self, name: &str, e: &NameEntry) -> Result<Named, Unusable> {
        let row = e.row as usize;
        if row >= self.meta.rows as usize {
            return Err(disagree());
        }
        let doc = self.doc(e.doc as usize)?;
        if !(doc.first as usize..doc.first as usize + doc.count as usize).contains(&row) {
            return Err(disagree());
        }
        let tool = self.record(row, e.record_at, e.record_len, e.record_crc)?;
        if tool.name != name || tool.tool != doc.tool {
            return Err(disagree());
        }
        Ok(Named { row, doc, tool })
    }

    /// Document `i`, checked against its own CRC-32.
    fn doc(&self, i: usize) -> Result<Doc, Unusable> {
        let docs = self.body(DOCS);
        let count = table(docs, DOC_ENTRY, DOCS)?;
        if count != self.meta.docs as usize || i >= count {
            return Err(disagree());
        }
        let e = &docs[TABLE_HEAD + i * DOC_ENTRY..][..DOC_ENTRY];
        let blob = read(docs, u64_le(&e[..8]), u64::from(u32_le(&e[8..12]))).map_err(|_| {
            Unusable::Corrupt(format!("section {DOCS}: document {i} out of bounds"))
        })?;
        if crc32fast::hash(blob) != u32_le(&e[12..16]) {
            return Err(Unusable::Corrupt(format!(
                "section {DOCS}: document {i} checksum mismatch"
            )));
        }
        decode(blob, DOCS)
    }

    /// Row `row`'s record (`len` bytes at `at` of the records section), checked against
    /// `crc`, with its input schema built again.
    fn record(&self, row: usize, at: u64, len: u32, crc: u32) -> Result<FlatTool, Unusable> {
        let record = read(self.body(RECORDS), at, u64::from(len))?;
        if crc32fast::hash(record) != crc {
            return Err(Unusable::Corrupt(format!("record {row} checksum mismatch")));
        }
        let mut tool: FlatTool = serde_json::from_slice(record)
            .map_err(|e| Unusable::Corrupt(format!("record {row}: {e}")))?;
        tool.input_schema = compile::input_schema(&tool.params);
        Ok(tool)
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

/// What the catalog says of one name (see [`load_named`]).
#[derive(Debug)]
pub struct Lookup {
    /// A document could not be read when the catalog was compiled (the JSON path warns
    /// and leaves it out, so the catalog's names are not its).
    pub unreadable: bool,
    /// Two documents name the same tool (the JSON path names their commands otherwise).
    pub tool_twice: bool,
    /// The tool, when neither of the above holds and the catalog has the name.
    pub named: Option<Named>,
}

/// One tool found by name.
#[derive(Debug)]
pub struct Named {
    /// Its row.
    pub row: usize,
    /// Its document's registry entry as compiled.
    pub doc: Doc,
    /// Its flattened command (named as in the whole registry).
    pub tool: FlatTool,
}

/// A name entry of section `NAMES`, its CRC-32 checked.
struct NameEntry<'a> {
    name: &'a [u8],
    row: u32,
    doc: u32,
    record_len: u32,
    record_at: u64,
    record_crc: u32,
}

/// Entry `i` of the names table `names` (whose count [`table`] checked).
fn name_entry(names: &[u8], i: usize) -> Result<NameEntry<'_>, Unusable> {
    let e = &names[TABLE_HEAD + i * NAME_ENTRY..][..NAME_ENTRY];
    let name = read(names, u64_le(&e[..8]), u64::from(u32_le(&e[8..12])))
        .map_err(|_| Unusable::Corrupt(format!("section {NAMES}: entry {i} out of bounds")))?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&e[..NAME_ENTRY - 4]);
    crc.update(name);
    if crc.finalize() != u32_le(&e[NAME_ENTRY - 4..]) {
        return Err(Unusable::Corrupt(format!(
            "section {NAMES}: entry {i} checksum mismatch"
        )));
    }
    Ok(NameEntry {
        name,
        row: u32_le(&e[12..16]),
        doc: u32_le(&e[16..20]),
        record_len: u32_le(&e[20..24]),
        record_at: u64_le(&e[24..32]),
        record_crc: u32_le(&e[32..36]),
    })
}

/// The number of entries of a table section (documents, names) whose entries of `entry`
/// bytes all lie within it.
fn table(body: &[u8], entry: usize, i: usize) -> Result<usize, Unusable> {
    let count = body.get(..4).map(u32_le).unwrap_or(0) as usize;
    if body.len() < TABLE_HEAD || (body.len() - TABLE_HEAD) / entry < count {
        return Err(Unusable::Corrupt(format!(
            "section {i}: its table runs past its end"
        )));
    }
    Ok(count)
}

fn disagree() -> Unusable {
    Unusable::Corrupt("tables disagree".into())
}

fn foreign_format(format: u32) -> Unusable {
    Unusable::Foreign(format!(
        "catalog format {format} (this atip reads {FORMAT})"
    ))
}

fn u32_le(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn u64_le(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

impl Compiled {
    /// Opens the catalog at `path` and checks it against the registry whose bytes hash to
    /// `key`: magic, format, header CRC, section bounds, registry hash, atip version and
    /// the tables' CRCs and rkyv's check. The search index and the records are checked
    /// when read.
    pub fn open(path: &Path, key: &[u8; 32]) -> Result<Compiled, Unusable> {
        Opened::open(path, key).and_then(Compiled::check)
    }

    /// A catalog held in memory (just built), checked like a file.
    pub fn from_bytes(bytes: Vec<u8>, path: &Path, key: &[u8; 32]) -> Result<Compiled, Unusable> {
        Opened::from_bytes(bytes, path, key).and_then(Compiled::check)
    }

    /// Checks the tables of an opened catalog whole: the rows (CRC-32, rkyv's check),
    /// the documents (CRC-32 of the section and of each), and that they agree.
    fn check(opened: Opened) -> Result<Compiled, Unusable> {
        let rows = archived::<RowTable>(&opened.bytes, &opened.sections, TOOLS)?;
        section((*opened.bytes).as_ref(), &opened.sections, DOCS)?;
        let docs = (0..opened.meta.docs as usize)
            .map(|i| opened.doc(i))
            .collect::<Result<Vec<Doc>, Unusable>>()?;
        let t = rows.get();
        let n = t.rows.len();
        let sound = n == opened.meta.rows as usize
            && opened.meta.unreadable == docs.iter().any(|d| d.error.is_some())
            && opened.meta.tool_twice == names_a_tool_twice(&docs)
            && docs.iter().enumerate().all(|(i, d)| {
                let end = d.first as usize + d.count as usize;
                end <= n
                    && t.rows[d.first as usize..end]
                        .iter()
                        .all(|r| r.doc.to_native() as usize == i)
            })
            && t.rows.iter().all(|r| {
                r.at.to_native()
                    .checked_add(u64::from(r.len.to_native()))
                    .is_some_and(|end| end <= opened.sections[RECORDS].len)
            })
            && t.by_name.len() == n
            && t.by_name.iter().all(|i| (i.to_native() as usize) < n)
            && t.searchable.iter().all(|i| (i.to_native() as usize) < n);
        if !sound {
            return Err(disagree());
        }
        Ok(Compiled { opened, docs, rows })
    }

    /// The registry's entries, in name order.
    pub fn docs(&self) -> &[Doc] {
        &self.docs
    }

    /// Every flattened tool's row, documents in name order, commands in document order.
    pub fn rows(&self) -> &[ArchivedRow] {
        &self.rows.get().rows
    }

    /// The row of the tool named `name` (its name in the whole registry).
    pub fn find(&self, name: &str) -> Option<usize> {
        let t = self.rows.get();
        t.by_name
            .binary_search_by(|i| t.rows[i.to_native() as usize].name.as_str().cmp(name))
            .ok()
            .map(|at| t.by_name[at].to_native() as usize)
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
        let row = &self.rows()[i];
        self.opened
            .record(
                i,
                row.at.to_native(),
                row.len.to_native(),
                row.crc.to_native(),
            )
            .map_err(|e| self.opened.error(&e))
    }

    /// Why the document of row `i` cannot be offered now, if it cannot: its metadata
    /// file is gone, unreadable, or no longer hashes to its name (edited in place after
    /// the catalog was built; `atip exec` refuses it the same way, and `atip scan` writes
    /// it again). Reads and hashes that one file.
    pub fn damaged(&self, dirs: &Dirs, i: usize) -> Option<String> {
        let doc = self.docs.get(self.rows()[i].doc.to_native() as usize)?;
        match doc.entry() {
            Ok(entry) => Index::read_document(dirs, &entry)
                .err()
                .map(|e| e.to_string()),
            Err(e) => Some(e.message),
        }
    }

    /// The error for damage found in the search index (by [`Compiled::search_index`], or
    /// by a search that read a damaged posting list).
    pub fn index_damaged(&self, e: &crate::search::IndexError) -> AtipError {
        let section = match e {
            crate::search::IndexError::Postings(_) => POSTINGS,
            _ => INDEX,
        };
        self.opened
            .error(&Unusable::Corrupt(format!("section {section}: {e}")))
    }

    /// The search index of `atip search`'s default selection (every readable document,
    /// commands that need no human) and, per indexed position, its row.
    pub fn search_index(&self) -> Result<(Vec<u32>, SearchIndex), AtipError> {
        let o = &self.opened;
        section((*o.bytes).as_ref(), &o.sections, INDEX).map_err(|e| o.error(&e))?;
        let [s, p] = [o.sections[INDEX], o.sections[POSTINGS]];
        let shared: crate::archive::Shared = o.bytes.clone();
        let index = SearchIndex::from_shared(
            shared,
            s.at as usize..(s.at + s.len) as usize,
            p.at as usize..(p.at + p.len) as usize,
        )
        .map_err(|e| self.index_damaged(&e))?;
        let rows: Vec<u32> = self
            .rows
            .get()
            .searchable
            .iter()
            .map(|r| r.to_native())
            .collect();
        if rows.len() != index.len() {
            return Err(o.error(&Unusable::Corrupt("search index disagrees".into())));
        }
        Ok((rows, index))
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
    load_as(dirs, note, Compiled::check)
}

/// What the machine says of each registered program (prior and family, see
/// [`crate::search::Facts`]), as the compiled catalog's index holds it: for selections
/// indexed apart from the catalog, so that they rank as it does. Empty when there is no
/// registry or no usable catalog (notes about compiling it are dropped: the caller's
/// own read of the registry reports its problems).
pub fn machine_facts(dirs: &Dirs) -> std::collections::HashMap<String, Facts> {
    load(dirs, &mut |_| {})
        .ok()
        .flatten()
        .and_then(|c| c.search_index().ok())
        .map(|(_, index)| index.program_facts())
        .unwrap_or_default()
}

/// What the catalog of the registry as it is now says of the tool named `name` (see
/// [`Lookup`]): `None` when there is no registry yet. Only what the lookup reads is
/// checked (header, meta, the name entries visited, one document, one record), so one
/// name costs the same whatever the registry's size. Damage found on the way makes the
/// catalog unusable exactly as in [`load`]: said in a note, compiled again, saved.
pub fn load_named(
    dirs: &Dirs,
    name: &str,
    note: &mut dyn FnMut(Note),
) -> Result<Option<Lookup>, AtipError> {
    load_as(dirs, note, |opened| opened.lookup(name))
}

/// [`load`] with `finish` as the check (and use) of the opened catalog.
fn load_as<T>(
    dirs: &Dirs,
    note: &mut dyn FnMut(Note),
    finish: impl Fn(Opened) -> Result<T, Unusable>,
) -> Result<Option<T>, AtipError> {
    let registry_path = dirs.registry_file();
    let read_failed = |source| {
        RegistryError::Read {
            path: registry_path.clone(),
            source,
        }
        .to_atip()
    };
    // A usable catalog needs only the registry's hash: remembered with the file's stamp
    // (`key`), else streamed, the bytes not kept.
    let key = match key::registry_key(&dirs.data, &registry_path) {
        Ok(k) => k,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_failed(e)),
    };
    let file = path(dirs);
    let why = match Opened::open(&file, &key).and_then(&finish) {
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
    // Compiled from the bytes read now, keyed by their own hash: registry.json may have
    // been replaced since it was hashed above.
    let bytes = match std::fs::read(&registry_path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(read_failed(e)),
    };
    let key = registry_key(&bytes);
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
    Opened::from_bytes(compiled, &file, &key)
        .and_then(finish)
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

/// For writers, under the registry lock: compiles the catalog of `index` (whose
/// `registry.json` bytes are `registry_bytes`) into a temp file beside the catalog —
/// `None` when the one on disk is already that registry's. The writer may compile it
/// while it writes the metadata files and `registry.json` (documents from
/// `in_memory`), and [`install`]s it once they are written.
pub fn compile(
    dirs: &Dirs,
    index: &Index,
    registry_bytes: &[u8],
    in_memory: &InMemory,
) -> Result<Option<tempfile::NamedTempFile>, RegistryError> {
    let key = registry_key(registry_bytes);
    let target = path(dirs);
    // Sound for every reader: the whole tables, and the names `atip exec` looks up.
    if Compiled::open(&target, &key)
        .is_ok_and(|c| section((*c.opened.bytes).as_ref(), &c.opened.sections, NAMES).is_ok())
    {
        return Ok(None);
    }
    let failed = |source| RegistryError::Write {
        path: target.clone(),
        source,
    };
    let tmp = crate::atomic::temp_file(&target, crate::atomic::Options::CACHE)?;
    let mut out = std::io::BufWriter::with_capacity(256 << 10, tmp);
    build_into(dirs, index, &key, in_memory, &mut out).map_err(failed)?;
    out.into_inner()
        .map(Some)
        .map_err(|e| failed(e.into_error()))
}

/// Puts a catalog [`compile()`]d for a writer in place.
pub fn install(dirs: &Dirs, tmp: tempfile::NamedTempFile) -> Result<(), RegistryError> {
    Ok(crate::atomic::persist(
        tmp,
        &path(dirs),
        crate::atomic::Options::CACHE,
    )?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_renamed_record_is_the_renamed_tool_serialized() {
        let m = crate::model::Metadata::from_value(serde_json::json!({
            "atip": "0.6", "name": "t\"q", "version": "1", "description": "T",
            "commands": {"go": {"description": "Go", "options": [{"name": "n", "flags": ["-n"],
                "type": "integer", "description": "N"}]}}
        }))
        .unwrap();
        let mut tools = Vec::new();
        compile::flatten_params_only(&m, &everything(), |t| tools.push(t));
        let mut t = tools.pop().unwrap();
        let record = serde_json::to_vec(&t).unwrap();
        let old = t.name.clone();
        t.name = "t_q_go_2".into();
        assert_eq!(
            renamed(&record, &old, &t.name),
            serde_json::to_vec(&t).unwrap()
        );
    }

    /// A document of more commands than one index slice, with arguments, options, global
    /// options, effects, a command that needs a human, and parent descriptions.
    fn many_commands() -> crate::model::Metadata {
        let mut commands = serde_json::Map::new();
        for i in 0..(INDEX_SLICE + 40) {
            let mut c = serde_json::json!({
                "description": format!("Command {i} copies files over the network {}", i % 7),
                "arguments": [{"name": format!("src{}", i % 3), "type": "file",
                    "description": format!("Source {i}"), "required": true}],
                "options": [{"name": "n", "flags": ["-n", "--count"], "type": "integer",
                    "description": "How many"}],
                "effects": {"destructive": i % 5 == 0, "network": i % 2 == 0}
            });
            if i % 9 == 0 {
                c["effects"]["interactive"] = serde_json::json!({"tty": true});
            }
            if i % 50 == 0 {
                c["commands"] = serde_json::json!({"sub": {"description": "Nested one"}});
            }
            commands.insert(format!("c{i}"), c);
        }
        crate::model::Metadata::from_value(serde_json::json!({
            "atip": "0.6", "name": "t", "version": "1", "description": "Moves data around",
            "globalOptions": [{"name": "verbose", "flags": ["-v"], "type": "boolean",
                "description": "Say more"}],
            "commands": commands
        }))
        .unwrap()
    }

    #[test]
    fn records_are_the_whole_tools_serialized_back_to_back() {
        let m = many_commands();
        let mut full = Vec::new();
        compile::flatten_params_only(&m, &everything(), |t| full.push(t));
        let flat = Flat::new("t".into(), &m);
        assert_eq!(flat.tools.len(), full.len());
        assert_eq!(flat.ends.last(), Some(&flat.records.len()));
        for ((record, kept), t) in records_of(&flat.records, &flat.ends)
            .zip(&flat.tools)
            .zip(&full)
        {
            assert_eq!(record, serde_json::to_vec(t).unwrap().as_slice());
            assert_eq!(kept.name, t.name);
            assert_eq!(kept.texts.is_none(), t.effects.needs_human());
        }
        assert!(flat.tools.iter().any(|k| k.texts.is_none()));
    }

    #[test]
    fn kept_texts_index_as_the_whole_tools() {
        let m = many_commands();
        let mut full = Vec::new();
        compile::flatten_params_only(&m, &everything(), |t| {
            if !t.effects.needs_human() {
                full.push(t)
            }
        });
        let facts = |n: usize| -> Vec<Facts> {
            (0..n)
                .map(|i| Facts {
                    prior: 1.0 + (i % 4) as f32,
                    family: format!("f{}", i % 3),
                    uses: (i % 2 == 0).then(|| "cp".to_string()),
                })
                .collect()
        };
        let mut whole = IndexBuilder::default();
        whole.add_ranked(&full, &facts(full.len()));
        let whole = whole.finish();
        let flat = Flat::new("t".into(), &m);
        let texts: Vec<Texts> = flat.tools.into_iter().filter_map(|k| k.texts).collect();
        assert_eq!(texts.len(), full.len());
        assert!(texts.len() > INDEX_SLICE);
        let mut kept = IndexBuilder::default();
        index_texts(&mut kept, texts, facts(full.len()));
        let kept = kept.finish();
        assert!(whole.bytes() == kept.bytes(), "the index tables differ");
        assert!(
            whole.postings_bytes() == kept.postings_bytes(),
            "the postings differ"
        );
    }

    /// Documents flattened on the writer's thread, a tool at a time, make the same catalog
    /// as documents flattened on the pool: from memory and from files, with tools renamed
    /// across documents, one that needs a human, and an unreadable document.
    #[test]
    fn big_documents_written_a_tool_at_a_time_make_the_same_catalog() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(tmp.path());
        std::fs::create_dir_all(dirs.data.join("tools")).unwrap();
        let many = serde_json::to_vec(&serde_json::to_value(many_commands()).unwrap()).unwrap();
        let small = br#"{"atip": "0.6", "name": "t", "version": "1", "description": "Small",
            "commands": {"c1": {"description": "Clashes with many's c1"}}}"#
            .to_vec();
        let rel = |bytes: &[u8]| format!("tools/{}.json", crate::digest::sha256_hex(bytes));
        let entry = |name: &str, metadata: String| -> Entry {
            serde_json::from_value(serde_json::json!({"path": format!("/usr/bin/{name}"),
                "source": "native", "lastChecked": "2026-01-01T00:00:00Z",
                "description": name, "atip": "0.6", "trust": "native", "effects": "",
                "commands": 1, "metadata": metadata}))
            .unwrap()
        };
        let mut index = Index::empty("2026-01-01T00:00:00Z".into());
        // On disk: `a` (small) and `b` (many); in memory: `c` (many); `d`'s file is gone.
        for bytes in [&small, &many] {
            std::fs::write(dirs.data.join(rel(bytes)), bytes).unwrap();
        }
        index.tools.insert("a".into(), entry("a", rel(&small)));
        index.tools.insert("b".into(), entry("b", rel(&many)));
        index.tools.insert("c".into(), entry("c", rel(&many)));
        index.tools.insert("d".into(), entry("d", rel(b"gone")));
        let mut in_memory = InMemory::new();
        in_memory.insert(rel(&many), &many);
        let built = |big: usize| {
            let mut out = std::io::Cursor::new(Vec::new());
            build_big_above(&dirs, &index, &[7; 32], &in_memory, &mut out, big).unwrap();
            out.into_inner()
        };
        let pooled = built(usize::MAX);
        let streamed = built(small.len());
        assert!(pooled == streamed, "the catalogs differ");
        let c = Compiled::from_bytes(streamed, Path::new("catalog.bin"), &[7; 32]).unwrap();
        let flat = Flat::new("t".into(), &many_commands());
        assert_eq!(c.rows().len(), 1 + 2 * flat.tools.len());
        assert!(c.rows().iter().filter(|r| r.renamed).count() > flat.tools.len());
        assert!(c.docs()[3].error.is_some(), "{:?}", c.docs()[3]);
        assert_eq!(c.tool(1).unwrap().name, "t_c0");
    }
}
