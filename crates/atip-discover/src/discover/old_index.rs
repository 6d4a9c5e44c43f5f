//! `registry.json` as the previous scan left it, for a scan to compare against — read
//! only when something needs it.
//!
//! A scan that finds the registry holding exactly what it sent leaves a
//! [`RegistryMemo`] in the scan cache: the file's stamp, and per name what the entry
//! holds beyond the scan's tool record. While `registry.json` keeps that stamp (every
//! writer replaces it by renaming a new file; an edit in place changes its ctime), the
//! next scan decides "unchanged" from the memo and does not parse the index (~700 KB of
//! JSON for a big PATH). Anything else — no memo, another stamp, another format, a name
//! the memo does not know — reads the index as before.

use super::cache::{ArchivedEntryMemo, ArchivedRegistryMemo, EntryMemo, RegistryMemo, ToolRecord};
use super::paths::Fingerprint;
use crate::registry::{self, FileStamp, Found, FoundMeta, Index, Update, Vouch};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock, PoisonError};

/// The previous index: a memo still valid (read in place from the scan cache, `'c`),
/// or the index read (now or when first asked).
pub(crate) struct OldIndex<'c> {
    path: PathBuf,
    /// The scan cache's memo, when `registry.json` still has the stamp it recorded.
    memo: Option<HeldMemo<'c>>,
    /// Whether the scan cache held a memo (valid or not).
    had_memo: bool,
    /// The index and the stamp of the file it was read from, once read. (Thread-safe
    /// cells: resolve asks from two threads.)
    loaded: OnceLock<Option<(Index, FileStamp)>>,
    /// Why the index could not be read (the scan's warning).
    warning: Mutex<Option<String>>,
    /// Whether the memo holds what this scan sends, once [`OldIndex::commit_needed`]
    /// asked (a warm rescan asks again after the commit it skipped).
    memo_held: Mutex<Option<bool>>,
}

/// A [`RegistryMemo`] in use, read in place from the scan cache (decoding it was three
/// strings per name): its entries by a fast hash of the name, as a warm rescan asks for
/// each name twice (its metadata file while resolving, its facts before the commit) and
/// an ordered map's look-up compares a dozen names.
struct HeldMemo<'c> {
    memo: &'c ArchivedRegistryMemo,
    entries: foldhash::HashMap<&'c str, &'c ArchivedEntryMemo>,
}

impl<'c> HeldMemo<'c> {
    fn of(memo: &'c ArchivedRegistryMemo) -> HeldMemo<'c> {
        let entries = memo.entries.iter().map(|(k, e)| (k.as_str(), e)).collect();
        HeldMemo { memo, entries }
    }

    /// The memo as the scan cache stores it (sorted by name); `None` if it does not
    /// decode.
    fn to_registry(&self) -> Option<RegistryMemo> {
        rkyv::deserialize::<RegistryMemo, rkyv::rancor::Error>(self.memo).ok()
    }

    /// Whether `m` is this memo.
    fn is(&self, m: &RegistryMemo) -> bool {
        self.memo.file == m.file
            && self.memo.format == m.format
            && self.entries.len() == m.entries.len()
            && (m.entries.iter()).all(|(k, v)| {
                self.entries
                    .get(k.as_str())
                    .is_some_and(|e| same_entry(e, v))
            })
    }
}

/// Whether the stored memo entry `a` is `e`.
fn same_entry(a: &ArchivedEntryMemo, e: &EntryMemo) -> bool {
    a.fingerprint.as_ref().map(Fingerprint::from) == e.fingerprint
        && a.vouch.as_ref().map(|v| v.as_str()) == e.vouch.as_deref()
        && a.file == e.file
}

/// The registry memo the next scan may use, as [`OldIndex::memo_after`] finds it.
#[derive(Debug, Default, PartialEq)]
pub(crate) enum NextMemo {
    /// None: the registry does not hold exactly what was sent (or it is not known).
    #[default]
    None,
    /// The memo this scan read, still holding: kept where it is rather than copied
    /// (three strings per name), and copied only if the scan cache must be written.
    Same,
    /// A memo made now from the index.
    New(RegistryMemo),
}

impl<'c> OldIndex<'c> {
    /// Opens `registry.json` at `path`; `memo`: the scan cache's. Without a memo that still
    /// holds, the index is read now (a failure is a warning: the registry will be rebuilt).
    pub(crate) fn open(
        path: PathBuf,
        memo: Option<&'c ArchivedRegistryMemo>,
        warnings: &mut Vec<String>,
    ) -> OldIndex<'c> {
        let had_memo = memo.is_some();
        let stamp = std::fs::metadata(&path).ok().map(|m| FileStamp::of(&m));
        let memo = memo
            .filter(|m| {
                let file = FileStamp::from(Fingerprint::from(&m.file));
                stamp == Some(file) && m.format == format_now()
            })
            .map(HeldMemo::of);
        let me = OldIndex {
            path,
            memo,
            had_memo,
            loaded: OnceLock::new(),
            warning: Mutex::new(None),
            memo_held: Mutex::new(None),
        };
        if me.memo.is_none() {
            me.get();
            warnings.extend(me.take_warning());
        }
        me
    }

    /// The index, read on first use; `None` when there is none or it is unreadable.
    pub(crate) fn get(&self) -> Option<&Index> {
        self.loaded
            .get_or_init(|| {
                Index::load_stamped(&self.path).unwrap_or_else(|e| {
                    *self.warning() = Some(format!("{e}; the registry will be rebuilt"));
                    None
                })
            })
            .as_ref()
            .map(|(index, _)| index)
    }

    /// Why the index could not be read, once.
    pub(crate) fn take_warning(&self) -> Option<String> {
        self.warning().take()
    }

    fn warning(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.warning.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn memo_held(&self) -> std::sync::MutexGuard<'_, Option<bool>> {
        self.memo_held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `next` is the memo the scan cache held (so the cache need not be written
    /// for it).
    pub(crate) fn memo_unchanged(&self, next: &NextMemo) -> bool {
        let new = match next {
            NextMemo::Same => return self.had_memo && self.memo.is_some(),
            NextMemo::New(m) => Some(m),
            NextMemo::None => None,
        };
        match (self.had_memo, &self.memo) {
            (false, _) => new.is_none(),
            (true, Some(m)) => new.is_some_and(|n| m.is(n)),
            (true, None) => false,
        }
    }

    /// The memo `next` stands for, to be written into the scan cache.
    pub(crate) fn memo_to_save(&self, next: NextMemo) -> Option<RegistryMemo> {
        match next {
            NextMemo::Same => self.memo.as_ref().and_then(HeldMemo::to_registry),
            NextMemo::New(m) => Some(m),
            NextMemo::None => None,
        }
    }

    /// Logs (`atip -v scan`) whether this scan parsed the index.
    pub(crate) fn log_read(&self) {
        log::debug!(
            "scan: registry.json {}",
            if self.loaded.get().is_some() {
                "read"
            } else {
                "not read: unchanged since the last scan"
            }
        );
    }

    /// The metadata file (`<hex>.json` under `tools/`) of `name`'s entry when the entry's
    /// path, hash and source are `record`'s. From the memo, the caller has checked that
    /// `record` is the tool record the memo's scan sent (whose values the entry held).
    pub(crate) fn entry_file(&self, name: &str, record: &ToolRecord) -> Option<&str> {
        if let Some(m) = &self.memo {
            return m.entries.get(name).map(|e| e.file.as_str());
        }
        let e = self.get()?.tools.get(name)?;
        (e.path == record.path && e.hash == record.hash && e.source == record.source)
            .then(|| {
                e.metadata
                    .strip_prefix(registry::TOOLS_DIR)
                    .and_then(|r| r.strip_prefix('/'))
            })
            .flatten()
    }

    /// Whether `update` must be committed: not when the memo says the registry holds
    /// exactly it, else as [`registry::commit_needed`] decides from the index.
    pub(crate) fn commit_needed(&self, update: &Update) -> bool {
        if let Some(m) = &self.memo {
            let held = memo_holds(m, &update.found);
            *self.memo_held() = Some(held);
            if held {
                return false;
            }
        }
        self.get()
            .is_none_or(|old| registry::commit_needed(old, update))
    }

    /// The memo the next scan may use, after this scan sent `found` (`committed`: a
    /// commit ran; else `found` is what [`OldIndex::commit_needed`] was asked about).
    /// None unless the registry holds exactly `found`; after a commit the index is read
    /// again to know what the file now holds. `clean`: no source failed and the registry
    /// refused nothing (a kept or refused name is not what was sent).
    pub(crate) fn memo_after(&self, found: &[Found], committed: bool, clean: bool) -> NextMemo {
        if !clean {
            return NextMemo::None;
        }
        if !committed && let Some(m) = &self.memo {
            let asked = *self.memo_held();
            let held = asked.unwrap_or_else(|| memo_holds(m, found));
            return if held { NextMemo::Same } else { NextMemo::None };
        }
        let made = || {
            let again;
            let (index, stamp) = if committed {
                again = Index::load_stamped(&self.path).ok()??;
                (&again.0, again.1)
            } else {
                let (index, stamp) = self.loaded.get()?.as_ref()?;
                (index, *stamp)
            };
            memo_of(index, stamp, found)
        };
        made().map_or(NextMemo::None, NextMemo::New)
    }
}

/// The index format this binary writes (`version` and `agent`): a memo made under
/// another one is not used (the registry must be rewritten).
fn format_now() -> String {
    let ours = Index::empty(String::new());
    format!(
        "{} {} {}",
        ours.version, ours.agent.name, ours.agent.version
    )
}

/// Whether the registry the memo describes holds exactly `found`, each unchanged, as
/// [`registry::commit_needed`] compares them.
fn memo_holds(m: &HeldMemo<'_>, found: &[Found]) -> bool {
    let mut names = foldhash::HashSet::with_capacity_and_hasher(found.len(), Default::default());
    found.len() == m.entries.len()
        && found.iter().all(|f| {
            names.insert(f.name.as_str())
                && matches!(f.meta, FoundMeta::Unchanged)
                && m.entries
                    .get(f.name.as_str())
                    .is_some_and(|e| same_facts(e, f))
        })
}

/// The entry's fingerprint and vouch are `f`'s, where `f` states them.
fn same_facts(e: &ArchivedEntryMemo, f: &Found) -> bool {
    let fingerprint = e.fingerprint.as_ref().map(Fingerprint::from);
    f.fingerprint
        .is_none_or(|fp| fingerprint.map(FileStamp::from) == Some(fp))
        && f.vouched_by
            .is_none_or(|v| e.vouch.as_ref().map(|x| x.as_str()) == Some(v.as_str()))
}

/// The memo of `index` (read from a file of `stamp`) if it holds exactly `found`: the
/// same names, each entry with `f`'s path, hash, source, fingerprint and vouch.
fn memo_of(index: &Index, stamp: FileStamp, found: &[Found]) -> Option<RegistryMemo> {
    if index.version != Index::empty(String::new()).version || index.tools.len() != found.len() {
        return None;
    }
    let mut entries = BTreeMap::new();
    for f in found {
        let e = index.tools.get(&f.name)?;
        let same = e.path == f.path
            && e.hash == f.hash
            && e.source == f.source
            && f.fingerprint.is_none_or(|fp| e.fingerprint == Some(fp))
            && f.vouched_by.is_none_or(|v| e.vouched_by == Some(v));
        e.metadata_hex().filter(|_| same)?;
        let memo = EntryMemo {
            fingerprint: e.fingerprint.map(Fingerprint::from),
            vouch: e.vouched_by.map(|v: Vouch| v.as_str().to_owned()),
            file: e.metadata[registry::TOOLS_DIR.len() + 1..].to_owned(),
        };
        if entries.insert(f.name.clone(), memo).is_some() {
            return None;
        }
    }
    let ours = Index::empty(String::new());
    (index.agent == ours.agent).then(|| RegistryMemo {
        file: Fingerprint::from(stamp),
        format: format_now(),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::cache::{Cache, OldCache};
    use crate::registry::{Entry, Source};

    /// `memo` as a scan cache holds it.
    fn archived(memo: &RegistryMemo) -> OldCache {
        OldCache::of(&Cache {
            registry: Some(memo.clone()),
            ..Cache::empty()
        })
    }

    fn stamp(n: u64) -> FileStamp {
        FileStamp {
            dev: 1,
            ino: n,
            size: 10,
            mtime_ns: 5,
            ctime_ns: 6,
        }
    }

    fn found(name: &str) -> Found {
        Found {
            name: name.into(),
            path: format!("/bin/{name}").into(),
            hash: None,
            source: Source::Shim,
            shim_registry: None,
            trust: "community".into(),
            fingerprint: Some(stamp(7)),
            vouched_by: Some(Vouch::User),
            meta: FoundMeta::Unchanged,
        }
    }

    fn index(names: &[&str]) -> Index {
        let mut index = Index::empty("2026-11-28T00:00:00Z".into());
        for n in names {
            let f = found(n);
            index.tools.insert(
                f.name,
                Entry {
                    path: f.path,
                    hash: None,
                    source: f.source,
                    shim_registry: None,
                    last_checked: "2026-11-28T00:00:00Z".into(),
                    description: "d".into(),
                    version: None,
                    atip: "0.6".into(),
                    trust: f.trust,
                    effects: "unknown".into(),
                    commands: 1,
                    metadata: format!("tools/{}.json", "ab".repeat(32)),
                    fingerprint: f.fingerprint,
                    vouched_by: f.vouched_by,
                },
            );
        }
        index
    }

    #[test]
    fn a_memo_is_made_only_of_an_index_holding_exactly_what_was_sent() {
        let sent = [found("a"), found("b")];
        let memo = memo_of(&index(&["a", "b"]), stamp(1), &sent).expect("a memo");
        assert_eq!(memo.entries.len(), 2);
        assert_eq!(memo.entries["a"].file, format!("{}.json", "ab".repeat(32)));
        assert_eq!(FileStamp::from(memo.file), stamp(1));
        let stored = archived(&memo);
        assert!(memo_holds(&HeldMemo::of(stored.memo().unwrap()), &sent));
        // An entry nobody sent (another scan's, or one to remove): no memo.
        assert!(memo_of(&index(&["a", "b", "c"]), stamp(1), &sent).is_none());
        // An entry that differs from what was sent: no memo.
        let mut moved = index(&["a", "b"]);
        moved.tools["b"].path = "/usr/bin/b".into();
        assert!(memo_of(&moved, stamp(1), &sent).is_none());
    }

    #[test]
    fn a_memo_holds_only_while_every_name_is_sent_unchanged_with_its_facts() {
        let sent = [found("a"), found("b")];
        let stored = archived(&memo_of(&index(&["a", "b"]), stamp(1), &sent).unwrap());
        let memo = HeldMemo::of(stored.memo().unwrap());
        assert!(!memo_holds(&memo, &sent[..1]), "a name gone");
        assert!(
            !memo_holds(&memo, &[found("a"), found("a")]),
            "a name twice"
        );
        let mut touched = found("b");
        touched.fingerprint = Some(stamp(8));
        assert!(
            !memo_holds(&memo, &[found("a"), touched]),
            "another fingerprint"
        );
        let mut vouched = found("b");
        vouched.vouched_by = Some(Vouch::Curated);
        assert!(!memo_holds(&memo, &[found("a"), vouched]), "another vouch");
        let mut fresh = found("b");
        fresh.meta = FoundMeta::Fresh {
            document: std::sync::Arc::from(&b"{}"[..]),
            summary: crate::registry::MetaSummary {
                description: String::new(),
                version: None,
                atip: "0.6".into(),
                effects: String::new(),
                commands: 0,
            },
            checked_at: String::new(),
        };
        assert!(!memo_holds(&memo, &[found("a"), fresh]), "a fresh document");
    }
    /// A memo held by the old index that a warm rescan finds still holding.
    fn holding(stored: &OldCache) -> OldIndex<'_> {
        OldIndex {
            path: PathBuf::from("/nonexistent/atip-test/registry.json"),
            memo: Some(HeldMemo::of(stored.memo().unwrap())),
            had_memo: true,
            loaded: OnceLock::new(),
            warning: Mutex::new(None),
            memo_held: Mutex::new(None),
        }
    }

    #[test]
    fn a_memo_still_holding_is_kept_in_place_and_copied_only_to_be_saved() {
        let sent = vec![found("a"), found("b")];
        let memo = memo_of(&index(&["a", "b"]), stamp(1), &sent).unwrap();
        let stored = archived(&memo);
        let old = holding(&stored);
        let update = Update {
            found: sent,
            scanned_dirs: Vec::new(),
        };
        assert!(!old.commit_needed(&update), "the memo says nothing changed");
        let next = old.memo_after(&update.found, false, true);
        assert_eq!(next, NextMemo::Same);
        assert!(
            old.memo_unchanged(&next),
            "the cache need not be written for it"
        );
        assert_eq!(old.memo_to_save(next), Some(memo.clone()));
        // A kept or refused name: no memo for the next scan, and that is a change.
        let unclean = old.memo_after(&update.found, false, false);
        assert_eq!(unclean, NextMemo::None);
        assert!(!old.memo_unchanged(&unclean));
        // A name gone: the memo does not hold (asked once, remembered for memo_after);
        // the index is missing, so a commit is needed.
        let old = holding(&stored);
        let fewer = Update {
            found: update.found[..1].to_vec(),
            scanned_dirs: Vec::new(),
        };
        assert!(old.commit_needed(&fewer));
        assert_eq!(old.memo_after(&fewer.found, false, true), NextMemo::None);
        // A new memo equal to the old one is unchanged; another is not.
        assert!(old.memo_unchanged(&NextMemo::New(memo.clone())));
        // Each fact of an entry counts.
        let changes: [fn(&mut EntryMemo); 3] = [
            |e| e.file.push('x'),
            |e| e.vouch = None,
            |e| e.fingerprint = Some(Fingerprint::from(stamp(9))),
        ];
        for change in changes {
            let mut other = memo.clone();
            change(other.entries.get_mut("a").unwrap());
            assert!(!old.memo_unchanged(&NextMemo::New(other)));
        }
        let mut other = memo;
        other.entries.remove("b");
        assert!(!old.memo_unchanged(&NextMemo::New(other)));
    }
}
