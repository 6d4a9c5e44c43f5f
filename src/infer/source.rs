//! Inference as a scan source: which names have a page, which inferred documents are
//! still current, and the cache that lets a warm rescan read no man page.
//!
//! The cache is `<data-dir>/cache/infer-cache.json` (per tool: the page, every file read
//! with its stamp, the document's sha256) and `<data-dir>/cache/man-dirs.json` (the
//! listing of each manual section directory with its modification time). While no
//! section directory changed, the page `man` would pick for a name is the one recorded,
//! so neither listing nor page is read; a recorded document stays current while every
//! file it was read from keeps its stamp. Like the scan cache, it is an optimisation:
//! missing or corrupt, the next scan is cold.

use super::locate::{self, DirListing, ManIndex, PageRef, Stamp};
use crate::registry::FileList;
use crate::statat::StatAt;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Version of the cache files; another version is ignored.
pub const INFER_CACHE_VERSION: u32 = 1;

/// `infer-cache.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct InferCache {
    /// Always [`INFER_CACHE_VERSION`].
    pub version: u32,
    /// The manual trees searched, in order, when the cache was written.
    pub roots: Vec<PathBuf>,
    /// Section directory → its modification time (ns) when listed.
    pub dirs: BTreeMap<PathBuf, i128>,
    /// Tool name → its page and document.
    pub tools: BTreeMap<String, InferRecord>,
    /// Names that had no page.
    pub none: BTreeSet<String>,
}

/// What the last inference of one tool read and produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
}

/// `man-dirs.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct DirsCache {
    version: u32,
    listings: HashMap<PathBuf, DirListing>,
}

fn cache_file(data: &Path) -> PathBuf {
    data.join("cache").join("infer-cache.json")
}

fn dirs_file(data: &Path) -> PathBuf {
    data.join("cache").join("man-dirs.json")
}

/// The inference source during one scan.
pub struct InferSource {
    data: PathBuf,
    roots: Vec<PathBuf>,
    old: InferCache,
    /// Whether every section directory is as the cache recorded it.
    dirs_unchanged: bool,
    index: Option<ManIndex>,
    offers: HashMap<String, Offer>,
    none: BTreeSet<String>,
    failed: BTreeMap<String, String>,
    /// Names whose document [`InferSource::infer_pending`] must make.
    pending: Vec<(String, PageRef)>,
    /// Handles of the manual's directories, for the stamps of recorded pages.
    stat: StatAt,
}

/// A prepared document, as offered to the scan.
pub struct Offered<'a> {
    /// sha256 hex of the document.
    pub sha: &'a str,
    /// A cached file (`Ok`) or this scan's bytes (`Err`).
    pub doc: Result<&'a Path, Arc<[u8]>>,
    /// The man page it was read from.
    pub page: &'a Path,
}

/// A document ready to offer.
struct Offer {
    page: PathBuf,
    sha: String,
    doc: OfferDoc,
    record: InferRecord,
}

/// Where an offered document's bytes are.
enum OfferDoc {
    /// Made by an earlier scan, stored in the cache.
    Cached(PathBuf),
    /// Made by this scan.
    Fresh(Arc<[u8]>),
}

fn cached_doc(data: &Path, sha: &str) -> PathBuf {
    data.join("cache")
        .join("inferred")
        .join(format!("{sha}.json"))
}

/// The registry's copy of a document (`tools/<sha256>.json`): an inferred document that
/// won is stored there by the commit, so the cache does not keep a second copy.
fn registry_doc(data: &Path, sha: &str) -> PathBuf {
    data.join("tools").join(format!("{sha}.json"))
}

/// Where an earlier scan's document is: the registry's copy, else the cache's.
fn stored_doc(data: &Path, sha: &str) -> Option<PathBuf> {
    [registry_doc(data, sha), cached_doc(data, sha)]
        .into_iter()
        .find(|p| p.is_file())
}

/// [`stored_doc`] answered from listings of the two directories (made once per scan).
fn listed_doc(data: &Path, sha: &str, registry: &FileList, cache: &FileList) -> Option<PathBuf> {
    let file = format!("{sha}.json");
    if registry.has(&file) {
        Some(registry_doc(data, sha))
    } else if cache.has(&file) {
        Some(cached_doc(data, sha))
    } else {
        None
    }
}

/// Infers, serializes and validates the document of `name`. Any validator finding,
/// warnings included, rejects it: inferred documents must be clean.
fn make_offer(index: &ManIndex, page: &PageRef, name: &str) -> Result<Offer, String> {
    let inf = super::infer_page(index, page, name).map_err(|e| e.to_string())?;
    let mut bytes = serde_json::to_vec_pretty(&inf.document).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    // Only the verdict is needed (no value kept): clean documents take the quick path.
    let checked = crate::validate::check_with(&bytes, None, None, false);
    if let Some(d) = checked.diagnostics.first() {
        return Err(format!(
            "the document inferred from {} is invalid: {} at {}: {}",
            page.path.display(),
            d.rule,
            d.pointer,
            d.message
        ));
    }
    let sha = crate::digest::sha256_hex(&bytes);
    let record = InferRecord {
        page: page.path.clone(),
        root: page.root.clone(),
        section: page.section.clone(),
        inputs: inf.inputs,
        doc: sha.clone(),
    };
    Ok(Offer {
        page: page.path.clone(),
        sha,
        doc: OfferDoc::Fresh(bytes.into()),
        record,
    })
}

/// A name's page and whether its recorded document is still current.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// The page.
    pub page: PageRef,
    /// The recorded document's sha256, when every input is unchanged.
    pub current: Option<String>,
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
        let old: InferCache = if refresh {
            InferCache::default()
        } else {
            std::fs::read(cache_file(data))
                .ok()
                .and_then(|b| serde_json::from_slice::<InferCache>(&b).ok())
                .filter(|c| c.version == INFER_CACHE_VERSION)
                .unwrap_or_default()
        };
        let dirs_unchanged = old.roots == roots
            && !old.dirs.is_empty()
            && section_dirs(&roots)
                .iter()
                .all(|d| Stamp::of(d).ok().map(|s| s.mtime_ns) == old.dirs.get(d).copied())
            && old.dirs.keys().all(|d| d.is_dir());
        InferSource {
            data: data.to_owned(),
            roots,
            old,
            dirs_unchanged,
            index: None,
            offers: HashMap::new(),
            none: BTreeSet::new(),
            failed: BTreeMap::new(),
            pending: Vec::new(),
            stat: StatAt::new(),
        }
    }

    fn index(&mut self) -> &ManIndex {
        if self.index.is_none() {
            let reuse: HashMap<PathBuf, DirListing> = std::fs::read(dirs_file(&self.data))
                .ok()
                .and_then(|b| serde_json::from_slice::<DirsCache>(&b).ok())
                .filter(|c| c.version == INFER_CACHE_VERSION)
                .map(|c| c.listings)
                .unwrap_or_default();
            self.index = Some(ManIndex::build(&self.roots, &reuse));
        }
        self.index.as_ref().expect("index just built")
    }

    /// The page of `name`, and its recorded document if still current.
    fn lookup(&mut self, name: &str) -> Option<Lookup> {
        if self.dirs_unchanged {
            if self.old.none.contains(name) {
                return None;
            }
            if let Some(rec) = self.old.tools.get(name) {
                let page = PageRef {
                    path: rec.page.clone(),
                    root: rec.root.clone(),
                    section: rec.section.clone(),
                };
                let current = rec
                    .inputs
                    .iter()
                    .all(|(p, s)| stamp_holds(&mut self.stat, p, s))
                    .then(|| rec.doc.clone());
                return Some(Lookup { page, current });
            }
        }
        let page = self.index().find(name)?;
        let stat = &mut self.stat;
        let current = self.old.tools.get(name).and_then(|rec| {
            (rec.page == page.path && rec.inputs.iter().all(|(p, s)| stamp_holds(stat, p, s)))
                .then(|| rec.doc.clone())
        });
        Some(Lookup { page, current })
    }

    /// Looks up the page of every name, on the calling thread, and takes the documents
    /// still current from the cache; the others are left for
    /// [`InferSource::infer_pending`]. A warm rescan has none, so the scan starts no
    /// thread for it. Afterwards (and after `infer_pending`) [`InferSource::offer`]
    /// answers without reading anything.
    ///
    /// `registry` lists the registry's `tools/` directory: a recorded document is offered
    /// from there, else from the cache's copy, else made again.
    pub(crate) fn look_up<'n>(
        &mut self,
        names: impl IntoIterator<Item = &'n str>,
        registry: &FileList,
    ) {
        let cache = FileList::of(&self.data.join("cache").join("inferred"));
        let mut todo = std::mem::take(&mut self.pending);
        for name in names {
            if self.offers.contains_key(name) || self.none.contains(name) {
                continue;
            }
            match self.lookup(name) {
                None => {
                    self.none.insert(name.to_owned());
                }
                Some(Lookup {
                    page,
                    current: Some(doc),
                }) if self.old.tools.contains_key(name) => {
                    match listed_doc(&self.data, &doc, registry, &cache) {
                        Some(stored) => {
                            let record = self.old.tools[name].clone();
                            self.offers.insert(
                                name.to_owned(),
                                Offer {
                                    page: page.path.clone(),
                                    doc: OfferDoc::Cached(stored),
                                    sha: doc,
                                    record,
                                },
                            );
                        }
                        None => todo.push((name.to_owned(), page)),
                    }
                }
                Some(Lookup { page, .. }) => todo.push((name.to_owned(), page)),
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
        let results: Vec<(String, Result<Offer, String>)> = todo
            .par_iter()
            .with_max_len(1)
            .map(|(name, page)| (name.clone(), make_offer(index, page, name)))
            .collect();
        for (name, r) in results {
            match r {
                Ok(o) => {
                    self.offers.insert(name, o);
                }
                Err(m) => {
                    self.failed.insert(name, m);
                }
            }
        }
    }

    /// Whether `name` has a document to offer (after [`InferSource::look_up`] and [`InferSource::infer_pending`]).
    pub(crate) fn has(&self, name: &str) -> bool {
        self.offers.contains_key(name)
    }

    /// The prepared document of `name`.
    pub(crate) fn offer(&self, name: &str) -> Option<Offered<'_>> {
        let o = self.offers.get(name)?;
        let doc = match &o.doc {
            OfferDoc::Cached(p) => Ok(p.as_path()),
            OfferDoc::Fresh(b) => Err(b.clone()),
        };
        Some(Offered {
            sha: o.sha.as_str(),
            doc,
            page: o.page.as_path(),
        })
    }

    /// Why inference failed for names whose page could not be read or gave an invalid
    /// document.
    pub(crate) fn failed(&self) -> &BTreeMap<String, String> {
        &self.failed
    }

    /// Writes the listings of the manual's section directories, if this scan built the
    /// index (`man-dirs.json`, so the next scan lists only the directories that
    /// changed), and frees the index: call it once every page is read, before the
    /// commit, so the commit does not hold both.
    pub fn save_listings(&mut self) -> Result<(), String> {
        let Some(index) = self.index.take() else {
            return Ok(());
        };
        let listings = DirsCache {
            version: INFER_CACHE_VERSION,
            listings: index.into_listings(),
        };
        let dir = self.data.join("cache");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        write_atomic(
            &dirs_file(&self.data),
            &serde_json::to_vec(&listings).unwrap_or_default(),
        )
    }

    /// Writes the cache, and the documents made this scan that the registry does not
    /// hold (those that lost to another source) under `cache/inferred/<sha256>.json`.
    /// Call it after the commit. Errors are returned as text (the scan reports them as
    /// warnings).
    pub fn save(mut self) -> Result<(), String> {
        let docs = self.data.join("cache").join("inferred");
        let dirs: BTreeMap<PathBuf, i128> = section_dirs(&self.roots)
            .into_iter()
            .filter_map(|d| Stamp::of(&d).ok().map(|s| (d, s.mtime_ns)))
            .collect();
        // A warm rescan offers exactly what the cache recorded: compared in place, nothing
        // is copied or written.
        let as_recorded = self.offers.len() == self.old.tools.len()
            && self.offers.iter().all(|(name, o)| {
                matches!(o.doc, OfferDoc::Cached(_)) && self.old.tools.get(name) == Some(&o.record)
            })
            && self.none == self.old.none
            && dirs == self.old.dirs
            && self.roots == self.old.roots;
        if as_recorded {
            return self.save_listings();
        }
        let mut tools = BTreeMap::new();
        let mut made_dir = false;
        for (name, o) in &self.offers {
            if let OfferDoc::Fresh(bytes) = &o.doc
                && stored_doc(&self.data, &o.sha).is_none()
            {
                if !made_dir {
                    std::fs::create_dir_all(&docs)
                        .map_err(|e| format!("cannot create {}: {e}", docs.display()))?;
                    made_dir = true;
                }
                write_atomic(&cached_doc(&self.data, &o.sha), bytes)?;
            }
            tools.insert(name.clone(), o.record.clone());
        }
        let none = std::mem::take(&mut self.none);
        let cache = InferCache {
            version: INFER_CACHE_VERSION,
            roots: self.roots.clone(),
            dirs,
            tools,
            none,
        };
        self.save_listings()?;
        let dir = self.data.join("cache");
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        if cache.tools != self.old.tools
            || cache.none != self.old.none
            || cache.dirs != self.old.dirs
            || cache.roots != self.old.roots
        {
            write_atomic(
                &cache_file(&self.data),
                &serde_json::to_vec(&cache).unwrap_or_default(),
            )?;
        }
        Ok(())
    }
}

/// Whether the file a cache record read still has the stamp recorded.
fn stamp_holds(stat: &mut StatAt, path: &Path, stamp: &Stamp) -> bool {
    stat.status(path).ok().map(|st| Stamp::of_status(&st)) == Some(*stamp)
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
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    crate::atomic::write_atomic(path, bytes, crate::atomic::Options::CACHE)
        .map_err(|e| e.to_string())
}
