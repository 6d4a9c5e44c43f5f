//! Inference as a scan source: which names have a page, which inferred documents are
//! still current, and the cache that lets a warm rescan read no man page.
//!
//! The cache is `<data-dir>/cache/infer-cache.bin` (per tool: the page, every file read
//! with its stamp, the document's sha256; an rkyv archive used in place, so a warm rescan
//! decodes nothing but what it compares) and `<data-dir>/cache/man-dirs.json` (the
//! listing of each manual section directory with its modification time). While no
//! section directory changed, the page `man` would pick for a name is the one recorded,
//! so neither listing nor page is read; a recorded document stays current while every
//! file it was read from keeps its stamp. Like the scan cache, it is an optimisation:
//! missing or corrupt, the next scan is cold.

use super::locate::{self, DirListing, ManIndex, PageRef, Stamp};
use crate::archive::Owned;
use crate::registry::FileList;
use crate::statat::{StatAt, in_parts};
use atip_base::fileio::CacheError;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Version of the cache files; another version is ignored.
pub const INFER_CACHE_VERSION: u32 = 3;

/// Version of `man-dirs.json` (4: a listing holds its page files only).
const LISTINGS_VERSION: u32 = 4;

/// The file name of the JSON cache of version 1, removed when this one is written.
const OLD_JSON_FILE: &str = "infer-cache.json";

/// What the last inference of one tool read and produced.
#[derive(Debug, Clone, PartialEq)]
pub struct InferRecord {
    /// The page file found for the name.
    pub page: PathBuf,
    /// The tree it is in.
    pub root: PathBuf,
    /// Its section.
    pub section: String,
    /// Every file read (page, `.so` targets, per-command pages) with its stamp.
    pub inputs: Vec<(PathBuf, Stamp)>,
    /// sha256 hex of the document.
    pub doc: String,
    /// Whether atip's effects table gave the document its effects.
    pub curated: bool,
    /// Table conditions the page did not support.
    pub warnings: Vec<String>,
}

/// `infer-cache.bin`: this, archived with rkyv, then the archive's CRC-32. Lists are
/// sorted (names and directories by bytes) so that look-ups are binary searches in
/// place. Paths are kept as text: a record naming a path that is not UTF-8 is not
/// stored, and that name is inferred again by the next scan.
#[derive(Debug, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct Stored {
    version: u32,
    /// The digest of the effects table the documents were made with
    /// ([`super::curated::digest`]): another table means a cold scan.
    table: String,
    /// The manual trees searched, in order, when the cache was written.
    roots: Vec<String>,
    /// Each section directory with its modification time (ns) when listed.
    dirs: Vec<StoredDir>,
    /// Tool name → its page and document.
    tools: Vec<StoredTool>,
    /// Names that had no page.
    none: Vec<String>,
}

#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct StoredDir {
    path: String,
    mtime_ns: i128,
}

#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct StoredTool {
    name: String,
    page: String,
    root: String,
    section: String,
    inputs: Vec<StoredInput>,
    doc: String,
    curated: bool,
    warnings: Vec<String>,
}

#[derive(Debug, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct StoredInput {
    path: String,
    size: u64,
    mtime_ns: i128,
    ino: u64,
    dev: u64,
}

impl StoredTool {
    /// The stored form of `name`'s record; `None` when a path in it is not UTF-8.
    fn of(name: &str, r: &InferRecord) -> Option<StoredTool> {
        Some(StoredTool {
            name: name.to_owned(),
            page: r.page.to_str()?.to_owned(),
            root: r.root.to_str()?.to_owned(),
            section: r.section.clone(),
            inputs: r
                .inputs
                .iter()
                .map(|(p, s)| {
                    Some(StoredInput {
                        path: p.to_str()?.to_owned(),
                        size: s.size,
                        mtime_ns: s.mtime_ns,
                        ino: s.ino,
                        dev: s.dev,
                    })
                })
                .collect::<Option<_>>()?,
            doc: r.doc.clone(),
            curated: r.curated,
            warnings: r.warnings.clone(),
        })
    }
}

impl ArchivedStored {
    /// The record of `name`, by binary search.
    fn tool(&self, name: &str) -> Option<&ArchivedStoredTool> {
        self.tool_index(name).map(|i| &self.tools[i])
    }

    /// Where the record of `name` is in the list, by binary search.
    fn tool_index(&self, name: &str) -> Option<usize> {
        self.tools
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()
    }

    /// Where `name` is in the list of names recorded as having no page.
    fn none_index(&self, name: &str) -> Option<usize> {
        self.none.binary_search_by(|n| n.as_str().cmp(name)).ok()
    }
}

/// Finds names in a list sorted by name when they are asked mostly in ascending runs
/// (a warm rescan asks for each PATH directory's names in order): each search starts
/// where the last one ended and gallops forward, so a run of names costs a few
/// comparisons each instead of a binary search over the whole list (~11 comparisons of
/// archived strings per name at ~1,500 records). A name behind the last one asked starts
/// again from the front: never fewer answers than a binary search, never other ones.
#[derive(Debug, Default)]
struct SortedCursor {
    /// Where the last search ended: every item before it sorts before the last name.
    next: usize,
}

impl SortedCursor {
    /// Where `key` is in `items` (sorted by `name`, each name once), as
    /// `items.binary_search_by(|t| name(t).cmp(key)).ok()` answers.
    fn find<T>(&mut self, items: &[T], key: &str, name: impl Fn(&T) -> &str) -> Option<usize> {
        let from = match self.next.checked_sub(1).map(|i| name(&items[i])) {
            Some(last) if last >= key => 0,
            _ => self.next,
        };
        // Every item before `from` sorts before `key`: widen a window from there until
        // its last item does not (or the list ends), then search inside it.
        let mut width = 1;
        while from + width < items.len() && name(&items[from + width - 1]) < key {
            width *= 2;
        }
        let window = &items[from..items.len().min(from + width)];
        let (found, next) = match window.binary_search_by(|t| name(t).cmp(key)) {
            Ok(i) => (Some(from + i), from + i + 1),
            Err(i) => (None, from + i),
        };
        self.next = next;
        found
    }
}

impl ArchivedStoredTool {
    fn page_ref(&self) -> PageRef {
        PageRef {
            path: PathBuf::from(self.page.as_str()),
            root: PathBuf::from(self.root.as_str()),
            section: self.section.as_str().to_owned(),
        }
    }

    /// Whether every file this record read still has its stamp.
    fn current(&self, stat: &mut StatAt) -> bool {
        self.inputs.iter().all(|i| {
            stat.status(Path::new(i.path.as_str())).is_ok_and(|st| {
                Stamp::of_status(&st)
                    == Stamp {
                        size: i.size.to_native(),
                        mtime_ns: i.mtime_ns.to_native(),
                        ino: i.ino.to_native(),
                        dev: i.dev.to_native(),
                    }
            })
        })
    }
}

/// `man-dirs.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct DirsCache {
    version: u32,
    listings: BTreeMap<PathBuf, DirListing>,
}

fn cache_file(data: &Path) -> PathBuf {
    data.join("cache").join("infer-cache.bin")
}

fn dirs_file(data: &Path) -> PathBuf {
    data.join("cache").join("man-dirs.json")
}

/// The inference source during one scan.
pub struct InferSource {
    data: PathBuf,
    roots: Vec<PathBuf>,
    /// The cache as the last scan left it (checked when read, used in place).
    old: Option<Owned<Stored>>,
    /// Each section directory's modification time, taken before anything was listed or
    /// read: what the next scan compares against.
    dirs_now: Vec<(PathBuf, i128)>,
    /// Whether every section directory is as the cache recorded it.
    dirs_unchanged: bool,
    index: Option<ManIndex>,
    /// The listing being made on its own thread ([`InferSource::start_index`]).
    building: Option<std::thread::JoinHandle<ManIndex>>,
    /// The listing being written on its own thread ([`InferSource::save_listings`]).
    saving: Option<Result<std::thread::JoinHandle<Result<(), CacheError>>, CacheError>>,
    offers: foldhash::HashMap<String, Offer>,
    /// Names found without a page this scan, but those the old cache recorded so (over
    /// unchanged directories), which are marked in `none_recorded` instead: a warm
    /// rescan of thousands of names without a page copies none of them.
    none: BTreeSet<String>,
    /// Per name of the old cache's list of names without a page: met again this scan.
    none_recorded: Vec<bool>,
    failed: BTreeMap<String, String>,
    /// Names whose document [`InferSource::infer_pending`] must make.
    pending: Vec<(String, PageRef)>,
    /// Handles of the manual's directories, for the stamps of recorded pages.
    stat: StatAt,
}

/// The listings the last scan saved, by section directory (empty when there is no
/// usable file): [`ManIndex::build`] takes each whose directory is unchanged.
fn cached_listings(file: &Path) -> BTreeMap<PathBuf, DirListing> {
    std::fs::read(file)
        .ok()
        .and_then(|b| serde_json::from_slice::<DirsCache>(&b).ok())
        .filter(|c| c.version == LISTINGS_VERSION)
        .map(|c| c.listings)
        .unwrap_or_default()
}

/// Writes the manual's listing to `cache/man-dirs.json` (atomically).
fn write_listings(data: &Path, index: ManIndex) -> Result<(), CacheError> {
    let listings = DirsCache {
        version: LISTINGS_VERSION,
        listings: index.into_listings(),
    };
    let dir = data.join("cache");
    std::fs::create_dir_all(&dir).map_err(CacheError::create_dir(&dir))?;
    write_atomic(
        &dirs_file(data),
        &serde_json::to_vec(&listings).unwrap_or_default(),
    )
}

impl Drop for InferSource {
    /// A scan that ends early (an error, an interrupt) still lets the listing it started
    /// writing finish, rather than leave a temporary file behind.
    fn drop(&mut self) {
        let _ = self.listings_saved();
    }
}

/// A prepared document, as offered to the scan.
pub struct Offered<'a> {
    /// sha256 hex of the document.
    pub sha: &'a str,
    /// A stored file (`Ok`) or this scan's bytes (`Err`).
    pub doc: Result<PathBuf, Arc<[u8]>>,
    /// The man page it was read from.
    pub page: &'a Path,
    /// Whether atip's effects table gave the document its effects.
    pub curated: bool,
    /// Table conditions the page did not support.
    pub warnings: Vec<String>,
}

/// A document ready to offer.
enum Offer {
    /// The old cache's record number `tool`, current, its document stored at `at`: read
    /// from the archive in place when offered, so a warm rescan copies no page path,
    /// digest or warning per name to prepare its offers.
    Recorded { tool: usize, at: StoredAt },
    /// A document found the long way, or made this scan (boxed: a warm rescan's
    /// offers are the small kind).
    Found(Box<FoundOffer>),
}

/// Which stored copy of an earlier scan's document is offered.
#[derive(Debug, Clone, Copy, PartialEq)]
enum StoredAt {
    /// The registry's (`tools/<sha256>.json`): an inferred document that won is stored
    /// there by the commit, so the cache does not keep a second copy.
    Registry,
    /// The cache's (`cache/inferred/<sha256>.json`).
    Cache,
}

impl Offer {
    /// What the cache must record for this offer when this scan made it; `None`: the
    /// old cache's record holds.
    fn made(&self) -> Option<&InferRecord> {
        match self {
            Offer::Found(o) => o.record.as_ref(),
            Offer::Recorded { .. } => None,
        }
    }
}

/// A document found the long way, or made this scan.
struct FoundOffer {
    page: PathBuf,
    sha: String,
    doc: OfferDoc,
    /// What to record for it; `None`: the old cache's record, unchanged.
    record: Option<InferRecord>,
    curated: bool,
    warnings: Vec<String>,
}

/// Where an offered document's bytes are.
enum OfferDoc {
    /// Made by an earlier scan, stored in the cache.
    Cached(PathBuf),
    /// Made by this scan.
    Fresh(Arc<[u8]>),
}

/// The path of the copy of document `sha` stored `at`, built with one allocation.
fn stored_path(data: &Path, sha: &str, at: StoredAt) -> PathBuf {
    let dirs: &[&str] = match at {
        StoredAt::Registry => &[crate::registry::TOOLS_DIR],
        StoredAt::Cache => &["cache", "inferred"],
    };
    let mut p = PathBuf::with_capacity(data.as_os_str().len() + sha.len() + 24);
    p.push(data);
    dirs.iter().for_each(|d| p.push(d));
    p.push(sha);
    p.as_mut_os_string().push(".json");
    p
}

/// Calls `f` with the file name `<sha>.json`, built on the stack for a sha256 hex digest
/// (what every record holds): asked once per recorded name on a warm rescan.
fn with_doc_file<R>(sha: &str, f: impl FnOnce(&str) -> R) -> R {
    let mut buf = [0u8; 69];
    if sha.len() == 64 {
        buf[..64].copy_from_slice(sha.as_bytes());
        buf[64..].copy_from_slice(b".json");
        if let Ok(file) = std::str::from_utf8(&buf) {
            return f(file);
        }
    }
    f(&format!("{sha}.json"))
}

/// Where an earlier scan's document is: the registry's copy, else the cache's.
fn stored_doc(data: &Path, sha: &str) -> Option<PathBuf> {
    [StoredAt::Registry, StoredAt::Cache]
        .into_iter()
        .map(|at| stored_path(data, sha, at))
        .find(|p| p.is_file())
}

/// [`stored_doc`] answered without a path walk per document: `registry` says whether the
/// registry's copy is there and intact, the cache's listing (made once per scan) whether
/// the cache's is. No path is built: [`stored_path`] builds it when it is offered.
fn listed_doc(sha: &str, registry: &dyn Fn(&str) -> bool, cache: &FileList) -> Option<StoredAt> {
    with_doc_file(sha, |file| {
        if registry(file) {
            Some(StoredAt::Registry)
        } else if cache.has(file) {
            Some(StoredAt::Cache)
        } else {
            None
        }
    })
}

/// Names per thread below which [`InferSource::look_up`] asks the cache on the calling
/// thread alone: a name costs a few stats, starting a thread ~50–100 µs.
const MIN_PART: usize = 100;

/// What the cache answers for a name, over unchanged section directories.
enum Recorded {
    /// Its recorded document (the old cache's record number `.0`), current and stored.
    Offer(usize, StoredAt),
    /// It is the `i`th name recorded as having no page.
    NoPage(usize),
    /// Neither: the name goes the long way ([`InferSource::lookup`]).
    No,
}

/// Where a warm rescan offers the document `rec` (a record of the cache, over unchanged
/// section directories) records from, when every file it was read from is unchanged and
/// a copy of it is stored. `None` sends the name the long way ([`InferSource::lookup`]),
/// which asks the same again: only names whose page changed or whose document is gone
/// pay twice.
fn recorded_offer(
    rec: &ArchivedStoredTool,
    registry: &dyn Fn(&str) -> bool,
    cache: &FileList,
    stat: &mut StatAt,
) -> Option<StoredAt> {
    if !rec.current(stat) {
        return None;
    }
    listed_doc(rec.doc.as_str(), registry, cache)
}

/// Infers, serializes and validates the document of `name`. Any validator finding,
/// warnings included, rejects it: inferred documents must be clean.
fn make_offer(index: &ManIndex, page: &PageRef, name: &str) -> Result<Offer, OfferError> {
    let inf = super::infer_page(index, page, name)?;
    let mut bytes = serde_json::to_vec_pretty(&inf.document).expect("a JSON value serializes");
    bytes.push(b'\n');
    // Only the verdict is needed (no value kept): clean documents take the quick path.
    let checked = crate::validate::check_with(&bytes, None, None, false);
    if let Some(d) = checked.diagnostics.first() {
        return Err(OfferError::Invalid {
            page: page.path.clone(),
            finding: format!("{} at {}: {}", d.rule, d.pointer, d.message),
        });
    }
    let sha = crate::digest::sha256_hex(&bytes);
    let record = InferRecord {
        page: page.path.clone(),
        root: page.root.clone(),
        section: page.section.clone(),
        inputs: inf.inputs,
        doc: sha.clone(),
        curated: inf.curated,
        warnings: inf.effects_warnings.clone(),
    };
    Ok(Offer::Found(Box::new(FoundOffer {
        page: page.path.clone(),
        sha,
        doc: OfferDoc::Fresh(bytes.into()),
        record: Some(record),
        curated: inf.curated,
        warnings: inf.effects_warnings,
    })))
}

/// Why a man page gave no document (said in the scan's warnings).
#[derive(Debug, thiserror::Error)]
enum OfferError {
    /// The page could not be read.
    #[error(transparent)]
    Read(#[from] locate::ReadError),
    /// The document made from it does not validate cleanly.
    #[error("the document inferred from {} is invalid: {finding}", page.display())]
    Invalid { page: PathBuf, finding: String },
}

/// Why a name has no page.
enum NoPage {
    /// The old cache records it so, and the manual's directories are unchanged (marked in
    /// `InferSource::none_recorded`).
    Recorded,
    /// This scan looked for it.
    Found,
}

/// A name's page and whether its recorded document is still current.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The page.
    pub page: PageRef,
    /// The recorded document's sha256, when every input is unchanged.
    pub current: Option<String>,
    /// The recorded document's effects facts (whether the table gave its effects, the
    /// table's warnings), when it is current.
    pub recorded: Option<(bool, Vec<String>)>,
}

impl ArchivedStoredTool {
    /// What [`Lookup`] says of this record when it is current.
    fn recorded(&self) -> (bool, Vec<String>) {
        let warnings = self.warnings.iter().map(|w| w.as_str().to_owned());
        (self.curated, warnings.collect())
    }
}

impl InferSource {
    /// Opens the source: the manual trees for `manpath_env`/`path_env` and the cache
    /// (ignored with `refresh`). Reads no page and lists no directory yet.
    pub fn open(
        data: &Path,
        manpath_env: Option<&OsStr>,
        path_env: Option<&OsStr>,
        refresh: bool,
    ) -> InferSource {
        let roots = locate::manpath(manpath_env, path_env);
        let old = if refresh {
            None
        } else {
            read_stored(&cache_file(data))
                .filter(|o| o.get().table.as_str() == super::curated::digest())
        };
        let dirs_now: Vec<(PathBuf, i128)> = section_dirs(&roots)
            .into_iter()
            .filter_map(|d| Stamp::of(&d).ok().map(|s| (d, s.mtime_ns)))
            .collect();
        let dirs_unchanged = old.as_ref().is_some_and(|o| {
            let o = o.get();
            same_paths(&o.roots, &roots)
                && !o.dirs.is_empty()
                && o.dirs.len() == dirs_now.len()
                && dirs_now.iter().all(|(d, t)| {
                    d.to_str().is_some_and(|d| {
                        o.dirs
                            .binary_search_by(|x| x.path.as_str().cmp(d))
                            .is_ok_and(|i| o.dirs[i].mtime_ns.to_native() == *t)
                    })
                })
        });
        InferSource {
            data: data.to_owned(),
            roots,
            old,
            dirs_now,
            dirs_unchanged,
            index: None,
            building: None,
            saving: None,
            offers: Default::default(),
            none: BTreeSet::new(),
            none_recorded: Vec::new(),
            failed: BTreeMap::new(),
            pending: Vec::new(),
            stat: StatAt::new(),
        }
    }

    /// Starts listing the manual on its own thread when this scan will need the
    /// listing: the section directories changed (or nothing was recorded), so every name
    /// the old cache does not record is looked up in it. The listing (a cold scan reads
    /// ~20,000 entries here) is then made while the scan walks PATH and probes, instead of
    /// after. A warm rescan over unchanged directories starts nothing.
    pub(crate) fn start_index(&mut self) {
        if self.dirs_unchanged || self.index.is_some() || self.building.is_some() {
            return;
        }
        let (roots, cache) = (self.roots.clone(), dirs_file(&self.data));
        let building = std::thread::Builder::new()
            .name("atip-man-index".into())
            .spawn(move || ManIndex::build(&roots, &cached_listings(&cache)));
        // A thread that cannot start leaves the listing to be made when first needed.
        self.building = building.ok();
    }

    fn index(&mut self) -> &ManIndex {
        if self.index.is_none() {
            let built = match self.building.take() {
                Some(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                None => ManIndex::build(&self.roots, &cached_listings(&dirs_file(&self.data))),
            };
            self.index = Some(built);
        }
        self.index.as_ref().expect("index just built")
    }

    /// The page of `name`, and its recorded document if still current.
    fn lookup(&mut self, name: &str) -> Result<Lookup, NoPage> {
        if self.dirs_unchanged
            && let Some(old) = self.old.as_ref().map(Owned::get)
        {
            if let Some(i) = old.none_index(name) {
                self.met_no_page(i);
                return Err(NoPage::Recorded);
            }
            if let Some(rec) = old.tool(name) {
                let current = rec.current(&mut self.stat).then_some(rec);
                return Ok(Lookup {
                    page: rec.page_ref(),
                    current: current.map(|r| r.doc.as_str().to_owned()),
                    recorded: current.map(ArchivedStoredTool::recorded),
                });
            }
        }
        let page = self.index().find(name).ok_or(NoPage::Found)?;
        let current = self
            .old
            .as_ref()
            .and_then(|o| o.get().tool(name))
            .filter(|rec| Path::new(rec.page.as_str()) == page.path && rec.current(&mut self.stat));
        Ok(Lookup {
            page,
            current: current.map(|r| r.doc.as_str().to_owned()),
            recorded: current.map(ArchivedStoredTool::recorded),
        })
    }

    /// What the cache answers for each of `names` ([`Recorded`]), over unchanged
    /// section directories (else nothing). The names with a record are the ones that
    /// cost stats: only they are spread over up to `threads` threads (a PATH of
    /// programs without pages starts none).
    fn recorded(
        &self,
        names: &[&str],
        registry: &(dyn Fn(&str) -> bool + Sync),
        cache: &FileList,
        threads: usize,
        min_part: usize,
    ) -> Vec<Recorded> {
        let Some(old) = self.old.as_ref().filter(|_| self.dirs_unchanged) else {
            return Vec::new();
        };
        let old = old.get();
        let mut tools = SortedCursor::default();
        let records: Vec<Option<usize>> = (names.iter())
            .map(|n| tools.find(&old.tools, n, |t| t.name.as_str()))
            .collect();
        let asked: Vec<usize> = records.iter().flatten().copied().collect();
        let offered = in_parts(&asked, threads, min_part, StatAt::new, |stat, &t| {
            recorded_offer(&old.tools[t], registry, cache, stat)
        });
        let mut offered = offered.into_iter();
        let mut none = SortedCursor::default();
        let answer = |(name, rec): (&&str, Option<usize>)| {
            let at = rec.and_then(|t| Some((t, offered.next()??)));
            match at {
                Some((t, at)) => Recorded::Offer(t, at),
                None => (none.find(&old.none, name, |n| n.as_str()))
                    .map_or(Recorded::No, Recorded::NoPage),
            }
        };
        names.iter().zip(records).map(answer).collect()
    }

    /// Marks the `i`th name of the old cache's list of names without a page as met.
    fn met_no_page(&mut self, i: usize) {
        if self.none_recorded.is_empty() {
            let recorded = self.old.as_ref().map_or(0, |o| o.get().none.len());
            self.none_recorded = vec![false; recorded];
        }
        self.none_recorded[i] = true;
    }

    /// Looks up the page of every name and takes the documents still current from the
    /// cache; the others are left for [`InferSource::infer_pending`]. What the cache
    /// answers (a recorded document current and stored, or no page) is asked on up to
    /// `threads` threads, a part of the names each (each thread with its own handles;
    /// a warm rescan asks nothing else); the answers are taken in the order of `names`,
    /// and the names the cache cannot answer go the long way on the calling thread, so
    /// the outcome does not depend on the number of threads. Afterwards (and after
    /// `infer_pending`) [`InferSource::offer`] answers without reading anything.
    ///
    /// `registry` says whether a file of the registry's `tools/` directory is there and
    /// still hashes to its name: a recorded document is offered from there, else from the
    /// cache's copy, else made again (so a registry copy damaged in place is made again
    /// from its page, not offered and refused scan after scan).
    pub(crate) fn look_up<'n>(
        &mut self,
        names: impl IntoIterator<Item = &'n str>,
        registry: &(dyn Fn(&str) -> bool + Sync),
        threads: usize,
    ) {
        self.look_up_in_parts(names, registry, threads, MIN_PART);
    }

    /// [`InferSource::look_up`], with parts of at least `min_part` names per thread.
    fn look_up_in_parts<'n>(
        &mut self,
        names: impl IntoIterator<Item = &'n str>,
        registry: &(dyn Fn(&str) -> bool + Sync),
        threads: usize,
        min_part: usize,
    ) {
        let cache = FileList::of(&self.data.join("cache").join("inferred"));
        let names: Vec<&str> = names.into_iter().collect();
        let recorded = self.recorded(&names, registry, &cache, threads, min_part);
        let mut recorded = recorded.into_iter();
        let mut todo = std::mem::take(&mut self.pending);
        for name in names {
            let cached = recorded.next();
            if self.offers.contains_key(name) || self.none.contains(name) {
                continue;
            }
            match cached {
                Some(Recorded::Offer(tool, at)) => {
                    self.offers
                        .insert(name.to_owned(), Offer::Recorded { tool, at });
                    continue;
                }
                Some(Recorded::NoPage(i)) => {
                    self.met_no_page(i);
                    continue;
                }
                Some(Recorded::No) | None => {}
            }
            match self.lookup(name) {
                Err(NoPage::Recorded) => {}
                Err(NoPage::Found) => {
                    self.none.insert(name.to_owned());
                }
                Ok(Lookup {
                    page,
                    current: Some(doc),
                    recorded,
                }) => match listed_doc(&doc, registry, &cache) {
                    Some(at) => {
                        let (curated, warnings) = recorded.unwrap_or_default();
                        self.offers.insert(
                            name.to_owned(),
                            Offer::Found(Box::new(FoundOffer {
                                page: page.path,
                                doc: OfferDoc::Cached(stored_path(&self.data, &doc, at)),
                                sha: doc,
                                record: None,
                                curated,
                                warnings,
                            })),
                        );
                    }
                    None => todo.push((name.to_owned(), page)),
                },
                Ok(Lookup { page, .. }) => todo.push((name.to_owned(), page)),
            }
        }
        self.pending = todo;
    }

    /// Whether [`InferSource::look_up`] left documents to infer.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Infers the documents [`InferSource::look_up`] left pending, in parallel (on the
    /// caller's rayon pool).
    pub(crate) fn infer_pending(&mut self) {
        use rayon::prelude::*;
        let todo = std::mem::take(&mut self.pending);
        if todo.is_empty() {
            return;
        }
        let index = self.index();
        let results: Vec<(String, Result<Offer, OfferError>)> = todo
            .par_iter()
            .with_max_len(1)
            .map(|(name, page)| (name.clone(), make_offer(index, page, name)))
            .collect();
        for (name, r) in results {
            match r {
                Ok(o) => {
                    self.offers.insert(name, o);
                }
                Err(e) => {
                    self.failed.insert(name, e.to_string());
                }
            }
        }
    }

    /// The prepared document of `name`.
    pub(crate) fn offer(&self, name: &str) -> Option<Offered<'_>> {
        match self.offers.get(name)? {
            Offer::Recorded { tool, at } => {
                let rec = &self.old.as_ref()?.get().tools[*tool];
                let sha = rec.doc.as_str();
                Some(Offered {
                    sha,
                    doc: Ok(stored_path(&self.data, sha, *at)),
                    page: Path::new(rec.page.as_str()),
                    curated: rec.curated,
                    warnings: rec.warnings.iter().map(|w| w.as_str().to_owned()).collect(),
                })
            }
            Offer::Found(o) => Some(Offered {
                sha: o.sha.as_str(),
                doc: match &o.doc {
                    OfferDoc::Cached(p) => Ok(p.clone()),
                    OfferDoc::Fresh(b) => Err(b.clone()),
                },
                page: o.page.as_path(),
                curated: o.curated,
                warnings: o.warnings.clone(),
            }),
        }
    }

    /// Why inference failed for names whose page could not be read or gave an invalid
    /// document.
    pub(crate) fn failed(&self) -> &BTreeMap<String, String> {
        &self.failed
    }

    /// Writes the listings of the manual's section directories, if this scan built the
    /// index (`man-dirs.json`, so the next scan lists only the directories that
    /// changed), on its own thread, which frees the index: call it once every page is
    /// read, before the commit, so the commit does not hold both. [`InferSource::save`]
    /// waits for it and reports its failure.
    pub fn save_listings(&mut self) {
        let Some(index) = self.index.take() else {
            return;
        };
        let data = self.data.clone();
        let writing = std::thread::Builder::new()
            .name("atip-man-listing".into())
            .spawn(move || write_listings(&data, index));
        self.saving = Some(writing.map_err(CacheError::Thread));
    }

    /// Whether [`InferSource::save_listings`] started writing a listing not waited for.
    pub(crate) fn writing_listings(&self) -> bool {
        self.saving.is_some()
    }

    /// Waits for the listing [`InferSource::save_listings`] is writing, with its result
    /// (`Ok` when none is being written).
    pub(crate) fn listings_saved(&mut self) -> Result<(), CacheError> {
        match self.saving.take() {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(writing)) => writing
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }

    /// Writes the cache, and the documents made this scan that the registry does not
    /// hold (those that lost to another source) under `cache/inferred/<sha256>.json`.
    /// Call it after the commit. The scan reports an error as a warning.
    pub fn save(mut self) -> Result<(), CacheError> {
        let old = self.old.take();
        let old_archived = old.as_ref().map(Owned::get);
        // A warm rescan offers exactly what the cache recorded: nothing is copied or written.
        if old_archived.is_some_and(|o| self.as_recorded(o)) {
            self.save_listings();
            return self.listings_saved();
        }
        self.save_fresh_docs()?;
        let mut tools = Vec::with_capacity(self.offers.len());
        for (name, o) in &self.offers {
            let stored = match o.made() {
                Some(r) => StoredTool::of(name, r),
                None => old_archived
                    .and_then(|c| c.tool(name))
                    .and_then(|t| rkyv::deserialize::<StoredTool, rkyv::rancor::Error>(t).ok()),
            };
            tools.extend(stored);
        }
        tools.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let stored = self.stored(tools, old_archived);
        self.save_listings();
        self.listings_saved()?;
        // Trees or section directories that are not UTF-8 cannot be recorded: then no
        // cache is kept (the next scan is cold), rather than one that would look current.
        if stored.roots.len() != self.roots.len() || stored.dirs.len() != self.dirs_now.len() {
            let _ = std::fs::remove_file(cache_file(&self.data));
            return Ok(());
        }
        let archive = rkyv::to_bytes::<rkyv::rancor::Error>(&stored).map_err(CacheError::Encode)?;
        if old
            .as_ref()
            .is_some_and(|o| o.bytes() == archive.as_slice())
        {
            return Ok(());
        }
        let mut bytes = archive.to_vec();
        bytes.extend_from_slice(&crc32fast::hash(&archive).to_le_bytes());
        let dir = self.data.join("cache");
        std::fs::create_dir_all(&dir).map_err(CacheError::create_dir(&dir))?;
        write_atomic(&cache_file(&self.data), &bytes)?;
        let _ = std::fs::remove_file(dir.join(OLD_JSON_FILE));
        Ok(())
    }

    /// This scan offers exactly what the old cache recorded, over unchanged
    /// directories.
    fn as_recorded(&self, old: &ArchivedStored) -> bool {
        self.dirs_unchanged
            && self.offers.len() == old.tools.len()
            && self.offers.values().all(|o| o.made().is_none())
            && self.none.is_empty()
            && self.none_recorded.len() == old.none.len()
            && self.none_recorded.iter().all(|met| *met)
    }

    /// Writes the documents made this scan that are not stored yet under
    /// `cache/inferred/<sha256>.json`.
    fn save_fresh_docs(&self) -> Result<(), CacheError> {
        let docs = self.data.join("cache").join("inferred");
        let mut made_dir = false;
        for o in self.offers.values() {
            if let Offer::Found(o) = o
                && let OfferDoc::Fresh(bytes) = &o.doc
                && stored_doc(&self.data, &o.sha).is_none()
            {
                if !made_dir {
                    std::fs::create_dir_all(&docs).map_err(CacheError::create_dir(&docs))?;
                    made_dir = true;
                }
                write_atomic(&stored_path(&self.data, &o.sha, StoredAt::Cache), bytes)?;
            }
        }
        Ok(())
    }

    /// The cache as this scan leaves it, with these tool records (sorted by name); the
    /// names without a page are taken out of `self`.
    fn stored(&mut self, tools: Vec<StoredTool>, old: Option<&ArchivedStored>) -> Stored {
        let mut dirs: Vec<StoredDir> = self
            .dirs_now
            .iter()
            .filter_map(|(d, t)| {
                Some(StoredDir {
                    path: d.to_str()?.to_owned(),
                    mtime_ns: *t,
                })
            })
            .collect();
        dirs.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        Stored {
            version: INFER_CACHE_VERSION,
            table: super::curated::digest().to_owned(),
            roots: self
                .roots
                .iter()
                .map(|r| r.to_str().map(str::to_owned))
                .collect::<Option<_>>()
                .unwrap_or_default(),
            dirs,
            tools,
            none: self.none_list(old),
        }
    }

    /// Every name without a page this scan, sorted: those found so and those `old` (the
    /// cache read) recorded so.
    fn none_list(&mut self, old: Option<&ArchivedStored>) -> Vec<String> {
        let mut none: Vec<String> = std::mem::take(&mut self.none).into_iter().collect();
        if let Some(old) = old {
            let met = self.none_recorded.iter().zip(old.none.iter());
            none.extend(met.filter(|(m, _)| **m).map(|(_, n)| n.as_str().to_owned()));
            none.sort_unstable();
        }
        none
    }
}

/// Reads `infer-cache.bin`: `None` when it is missing, damaged (checksum, rkyv's check)
/// or of another version — the scan is then cold for inference, never wrong.
fn read_stored(path: &Path) -> Option<Owned<Stored>> {
    let bytes = crate::archive::map_file(path).ok()?;
    let len = crate::archive::strip_crc((*bytes).as_ref()).ok()?.len();
    Owned::<Stored>::in_shared(bytes, 0..len)
        .ok()
        .filter(|o| o.get().version.to_native() == INFER_CACHE_VERSION)
}

/// Whether the recorded trees are `roots`, in order.
fn same_paths(
    recorded: &rkyv::vec::ArchivedVec<rkyv::string::ArchivedString>,
    roots: &[PathBuf],
) -> bool {
    recorded.len() == roots.len()
        && recorded
            .iter()
            .zip(roots)
            .all(|(a, b)| b.to_str() == Some(a.as_str()))
}

/// Every section directory of the trees (existing or not).
fn section_dirs(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for r in roots {
        for s in locate::SECTIONS {
            let d = r.join(format!("man{s}"));
            if d.is_dir() {
                out.push(d);
            }
        }
    }
    out
}

/// Caches are atomic but not fsynced: a lost file after a crash only means a cold start.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CacheError> {
    Ok(crate::atomic::write_atomic(
        path,
        bytes,
        crate::atomic::Options::CACHE,
    )?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_sorted_cursor_answers_as_a_binary_search_whatever_the_order_asked() {
        let items: Vec<String> = (0..300).map(|i| format!("n{:04}", i * 3)).collect();
        #[allow(clippy::ptr_arg)] // the cursor is given the list's own item type
        fn name(s: &String) -> &str {
            s.as_str()
        }
        // Keys in ascending runs (each PATH directory's names), with misses, repeats,
        // a jump backwards between runs, and keys past either end.
        let mut keys: Vec<String> = Vec::new();
        for run in [(0, 400), (100, 250), (890, 1000), (0, 5), (450, 460)] {
            keys.extend((run.0..run.1).map(|i| format!("n{i:04}")));
        }
        keys.extend(["a", "n0003", "n0003", "z", "n0000", "n0897"].map(String::from));
        // And a scrambled order (a multiplicative walk over 0..1000).
        keys.extend((0..1000).map(|i| format!("n{:04}", (i * 7919) % 1000)));
        let mut cursor = super::SortedCursor::default();
        for k in &keys {
            let expected = items.binary_search_by(|t| t.as_str().cmp(k)).ok();
            assert_eq!(cursor.find(&items, k, name), expected, "{k}");
        }
        let mut empty = super::SortedCursor::default();
        assert_eq!(empty.find(&Vec::<String>::new(), "a", name), None);
        assert_eq!(empty.find(&Vec::<String>::new(), "", name), None);
    }

    use super::*;

    /// A manual tree with one page, a data dir, and a fresh source over them.
    fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let man = t.path().join("man");
        std::fs::create_dir_all(man.join("man1")).unwrap();
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/fixtures/man/man1/size.1.gz"
            ),
            man.join("man1/size.1.gz"),
        )
        .unwrap();
        let data = t.path().join("data");
        std::fs::create_dir_all(&data).unwrap();
        (t, man, data)
    }

    /// One scan's use of the source: look up, infer, save. Returns whether anything
    /// had to be inferred (a cold look-up).
    fn run(data: &Path, man: &Path) -> bool {
        let mut src = InferSource::open(data, Some(man.as_os_str()), None, false);
        let tools = FileList::of(&data.join("tools"));
        src.look_up(["size", "nosuchtool"], &|f: &str| tools.has_intact(f), 1);
        let cold = src.has_pending();
        src.infer_pending();
        assert!(src.offer("size").is_some() && src.offer("nosuchtool").is_none());
        src.save().unwrap();
        cold
    }

    #[test]
    fn warm_source_takes_records_in_place_and_writes_nothing() {
        let (_t, man, data) = setup();
        assert!(run(&data, &man), "first scan infers");
        let file = cache_file(&data);
        let written = std::fs::read(&file).unwrap();
        let stamp = Stamp::of(&file).unwrap();
        assert!(!run(&data, &man), "second scan takes the record");
        assert_eq!(
            Stamp::of(&file).unwrap(),
            stamp,
            "unchanged cache not rewritten"
        );
        assert_eq!(std::fs::read(&file).unwrap(), written);

        // The page changes (another page's bytes): inferred again, cache rewritten.
        std::fs::copy(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../tests/fixtures/man/man1/cut.1.gz"
            ),
            man.join("man1/size.1.gz"),
        )
        .unwrap();
        assert!(run(&data, &man), "a changed page is read again");
        // The rewritten cache still records the name without a page (met in the old
        // record, not looked up again), so the next scan neither lists nor reads.
        let none = |data: &Path| {
            let stored = read_stored(&cache_file(data)).unwrap();
            let names: Vec<String> = stored.get().none.iter().map(|n| n.to_string()).collect();
            names
        };
        assert_eq!(none(&data), ["nosuchtool"]);
        let mut src = InferSource::open(&data, Some(man.as_os_str()), None, false);
        src.look_up(["size", "nosuchtool"], &|_: &str| false, 1);
        assert!(src.index.is_none(), "the manual was not listed");
        assert!(!run(&data, &man));
        assert_eq!(none(&data), ["nosuchtool"]);
    }

    #[test]
    fn the_listing_starts_early_only_when_the_scan_needs_it() {
        // Cold: listed on its own thread, with the same offers and listing file as a
        // source that lists when first asked.
        let scan = |data: &Path, man: &Path, early: bool| {
            let mut src = InferSource::open(data, Some(man.as_os_str()), None, false);
            if early {
                src.start_index();
                assert!(src.building.is_some(), "a cold source lists at once");
            }
            src.look_up(["size", "nosuchtool"], &|_: &str| false, 1);
            assert!(src.building.is_none() && src.index.is_some());
            src.infer_pending();
            let offered = src
                .offer("size")
                .map(|o| (o.sha.to_owned(), o.page.to_owned()));
            src.save().unwrap();
            (offered, std::fs::read(dirs_file(data)).unwrap())
        };
        let (t, man, data) = setup();
        let late = scan(&data, &man, false);
        let data2 = t.path().join("data2");
        std::fs::create_dir_all(&data2).unwrap();
        let early = scan(&data2, &man, true);
        assert!(early.0.is_some());
        assert_eq!(early, late);
        // Warm (directories unchanged): nothing starts, nothing is listed.
        let mut src = InferSource::open(&data2, Some(man.as_os_str()), None, false);
        src.start_index();
        assert!(src.building.is_none(), "a warm source lists nothing");
        src.look_up(["size", "nosuchtool"], &|_: &str| true, 1);
        assert!(src.index.is_none());
    }

    #[test]
    fn a_listing_written_on_its_own_thread_reports_its_failure_once() {
        let (_t, man, data) = setup();
        std::fs::write(data.join("cache"), b"a file where the cache directory goes").unwrap();
        let mut src = InferSource::open(&data, Some(man.as_os_str()), None, false);
        src.look_up(["size"], &|_: &str| false, 1);
        src.save_listings();
        assert!(src.index.is_none(), "the index went to the writer");
        assert!(matches!(
            src.listings_saved(),
            Err(CacheError::CreateDir { .. })
        ));
        assert!(src.listings_saved().is_ok(), "reported once");
        // A writable cache directory: the listing is there once waited for.
        std::fs::remove_file(data.join("cache")).unwrap();
        let mut src = InferSource::open(&data, Some(man.as_os_str()), None, false);
        src.look_up(["size"], &|_: &str| false, 1);
        src.save_listings();
        src.listings_saved().unwrap();
        assert!(dirs_file(&data).is_file());
    }

    #[test]
    fn damaged_foreign_or_legacy_caches_mean_a_cold_scan() {
        let (_t, man, data) = setup();
        run(&data, &man);
        let file = cache_file(&data);
        let good = std::fs::read(&file).unwrap();
        // One flipped bit, a truncation, another version: each ignored, then replaced.
        let mut flipped = good.clone();
        flipped[good.len() / 2] ^= 1;
        let mut other = Stored {
            version: INFER_CACHE_VERSION + 1,
            ..Stored::default()
        };
        other.roots.push(man.to_str().unwrap().into());
        let archive = rkyv::to_bytes::<rkyv::rancor::Error>(&other).unwrap();
        let mut foreign = archive.to_vec();
        foreign.extend_from_slice(&crc32fast::hash(&archive).to_le_bytes());
        for bad in [
            flipped,
            good[..good.len() - 9].to_vec(),
            foreign,
            Vec::new(),
        ] {
            std::fs::write(&file, &bad).unwrap();
            assert!(read_stored(&file).is_none());
            assert!(run(&data, &man), "an unusable cache is a cold scan");
            assert_eq!(std::fs::read(&file).unwrap(), good, "and is written anew");
        }
        // The JSON cache of version 1 is removed once this one is written.
        let legacy = data.join("cache").join(OLD_JSON_FILE);
        std::fs::write(&legacy, b"{}").unwrap();
        std::fs::remove_file(&file).unwrap();
        run(&data, &man);
        assert!(!legacy.exists() && file.exists());
    }

    #[test]
    fn stored_copies_are_named_as_the_registry_and_the_cache_name_them() {
        let data = Path::new("/data");
        let sha = "ab".repeat(32);
        assert_eq!(
            stored_path(data, &sha, StoredAt::Registry),
            data.join("tools").join(format!("{sha}.json"))
        );
        assert_eq!(
            stored_path(data, &sha, StoredAt::Cache),
            data.join("cache")
                .join("inferred")
                .join(format!("{sha}.json"))
        );
        // The name asked about is `<sha>.json`, for a digest and for anything else.
        for sha in [sha.as_str(), "short", ""] {
            assert_eq!(with_doc_file(sha, str::to_owned), format!("{sha}.json"));
        }
        let cache = FileList::of(Path::new("/nonexistent/atip-test"));
        let asked = std::cell::RefCell::new(Vec::new());
        let registry = |f: &str| {
            asked.borrow_mut().push(f.to_owned());
            f.starts_with("ab")
        };
        assert_eq!(
            listed_doc(&sha, &registry, &cache),
            Some(StoredAt::Registry)
        );
        assert_eq!(listed_doc("cd", &registry, &cache), None);
        assert_eq!(*asked.borrow(), [format!("{sha}.json"), "cd.json".into()]);
    }

    #[test]
    fn records_with_paths_that_are_not_utf8_are_not_stored() {
        use std::os::unix::ffi::OsStrExt;
        let rec = InferRecord {
            page: PathBuf::from(OsStr::from_bytes(b"/man/man1/a\xff.1")),
            root: "/man".into(),
            section: "1".into(),
            inputs: Vec::new(),
            doc: "0".repeat(64),
            curated: false,
            warnings: Vec::new(),
        };
        assert!(StoredTool::of("a", &rec).is_none());
        let ok = InferRecord {
            page: "/man/man1/a.1".into(),
            ..rec
        };
        assert_eq!(StoredTool::of("a", &ok).unwrap().page, "/man/man1/a.1");
    }

    /// What a look-up leaves, in a form that compares.
    fn looked_up(src: &InferSource) -> String {
        let mut offers: Vec<String> = src
            .offers
            .iter()
            .map(|(n, o)| {
                let made = o.made().is_some();
                let o = src.offer(n).unwrap();
                let doc = match &o.doc {
                    Ok(p) => p.display().to_string(),
                    Err(_) => "fresh".into(),
                };
                let (page, sha) = (o.page.display(), &o.sha);
                format!(
                    "{n} {page} {sha} {doc} {} {:?} {made}",
                    o.curated, o.warnings
                )
            })
            .collect();
        offers.sort();
        let pending: Vec<String> = (src.pending.iter())
            .map(|(n, p)| format!("{n} {}", p.path.display()))
            .collect();
        let (none, met, failed) = (&src.none, &src.none_recorded, &src.failed);
        format!("{offers:#?}\n{none:?}\n{met:?}\n{pending:?}\n{failed:?}")
    }

    #[test]
    fn a_split_look_up_finds_what_one_thread_finds() {
        let (_t, man, data) = setup();
        let pages = [
            "cut", "cp", "date", "head", "ls", "mkdir", "rm", "sort", "tail",
        ];
        for p in pages {
            std::fs::copy(
                format!(
                    "{}/../../tests/fixtures/man/man1/{p}.1.gz",
                    env!("CARGO_MANIFEST_DIR")
                ),
                man.join(format!("man1/{p}.1.gz")),
            )
            .unwrap();
        }
        let mut names: Vec<&str> = pages.to_vec();
        names.extend(["size", "nosuch1", "nosuch2", "nosuch3", "cut", "nosuch1"]);
        let mut src = InferSource::open(&data, Some(man.as_os_str()), None, false);
        src.look_up(names.iter().copied(), &|_: &str| false, 1);
        src.infer_pending();
        assert_eq!(src.failed().len(), 0, "{:?}", src.failed());
        let sha = |src: &InferSource, n: &str| src.offer(n).unwrap().sha.to_owned();
        let (ls, head) = (sha(&src, "ls"), sha(&src, "head"));
        src.save().unwrap();

        // Since then: one page changed (made again), one stored document lost (made
        // again), one document found in the registry (offered from there).
        std::fs::copy(man.join("man1/cut.1.gz"), man.join("man1/date.1.gz")).unwrap();
        std::fs::remove_file(stored_path(&data, &head, StoredAt::Cache)).unwrap();
        let in_registry = format!("{ls}.json");
        let registry = |f: &str| f == in_registry;
        let mut seen = Vec::new();
        for (threads, min_part) in [(1, 1), (2, 1), (2, 3), (3, 1), (2, 100)] {
            let mut src = InferSource::open(&data, Some(man.as_os_str()), None, false);
            src.look_up_in_parts(names.iter().copied(), &registry, threads, min_part);
            seen.push(looked_up(&src));
            if threads == 1 {
                let offered: BTreeSet<&str> = src.offers.keys().map(String::as_str).collect();
                let want = ["cp", "cut", "ls", "mkdir", "rm", "size", "sort", "tail"];
                assert_eq!(offered, want.into_iter().collect());
                assert!(src.offers.values().all(|o| o.made().is_none()));
                let Ok(from) = src.offer("ls").unwrap().doc else {
                    panic!("ls offered fresh");
                };
                assert_eq!(from, stored_path(&data, &ls, StoredAt::Registry));
                let pending: Vec<&str> = src.pending.iter().map(|(n, _)| n.as_str()).collect();
                assert_eq!(pending, ["date", "head"]);
                assert_eq!(src.none_recorded, [true, true, true]);
                assert!(src.none.is_empty() && src.index.is_none());
            }
        }
        assert!(seen.iter().all(|s| s == &seen[0]), "{seen:#?}");
    }
}
