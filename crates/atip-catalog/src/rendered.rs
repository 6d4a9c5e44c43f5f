//! Rendered documents: each registry document's part of a whole-registry flat JSON
//! export, kept in the data dir (`exports/docs/<atip version>.<options>/<document
//! sha256>.bin`) so that the first export after the registry changed renders only the
//! documents that changed. (An unchanged registry is served whole by [`super::kept`].)
//!
//! Keyed by what decides the bytes: the document's content address (its metadata file
//! name), the export options and the atip version. Derived data, never trusted: a file
//! whose CRC-32 or encoding does not check is ignored and replaced. Written through a
//! temp file and a rename; a failure to keep one never fails the export. Files no export
//! of the same options used last time are removed after it.

use crate::compile::RenderedDoc;
use crate::dirs::Dirs;
use std::collections::HashSet;
use std::path::PathBuf;

/// The rendered documents of one set of export options.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store for exports made with `options` (a file-name-safe word, as in
    /// [`super::kept::Key::options`]).
    pub fn open(dirs: &Dirs, options: &str) -> Store {
        Store {
            dir: dirs
                .data
                .join("exports")
                .join("docs")
                .join(format!("{}.{options}", env!("CARGO_PKG_VERSION"))),
        }
    }

    fn path(&self, sha: &str) -> Option<PathBuf> {
        crate::digest::is_hex64(sha).then(|| self.dir.join(format!("{sha}.bin")))
    }

    /// The kept rendering of the document whose sha256 is `sha`, when there is a sound one.
    pub fn load(&self, sha: &str) -> Option<RenderedDoc> {
        let bytes = std::fs::read(self.path(sha)?).ok()?;
        let body = crate::archive::strip_crc(&bytes).ok()?;
        postcard::from_bytes(body).ok()
    }

    /// Keeps `doc` as the rendering of the document whose sha256 is `sha`.
    pub fn save(&self, sha: &str, doc: &RenderedDoc) {
        let Some(path) = self.path(sha) else { return };
        let Ok(mut bytes) = postcard::to_stdvec(doc) else {
            return;
        };
        bytes.extend_from_slice(&crc32fast::hash(&bytes).to_le_bytes());
        if std::fs::create_dir_all(&self.dir).is_ok() {
            let _ = crate::atomic::write_atomic(&path, &bytes, crate::atomic::Options::CACHE);
        }
    }

    /// Removes the renderings of documents not in `used` (sha256s), and the stores of
    /// other atip versions: what the last export did not need is not kept.
    pub fn prune(&self, used: &HashSet<String>) {
        if let Ok(entries) = std::fs::read_dir(&self.dir) {
            for e in entries.flatten() {
                let name = e.file_name();
                let keep = name
                    .to_str()
                    .and_then(|n| n.strip_suffix(".bin"))
                    .is_some_and(|sha| used.contains(sha));
                if !keep {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let Some(parent) = self.dir.parent() else {
            return;
        };
        let version = concat!(env!("CARGO_PKG_VERSION"), ".");
        if let Ok(entries) = std::fs::read_dir(parent) {
            for e in entries.flatten() {
                if e.file_name()
                    .to_str()
                    .is_some_and(|n| !n.starts_with(version))
                {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> RenderedDoc {
        RenderedDoc {
            names: vec!["t_go".into(), "t_edit".into()],
            skipped: vec!["t edit".into()],
            elements: vec![b"{\n  \"name\": \"t_go\"\n}".to_vec()],
        }
    }

    #[test]
    fn kept_renderings_round_trip_and_damage_is_ignored() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(tmp.path());
        let store = Store::open(&dirs, "openai.flat.i0.n0");
        let sha = "a".repeat(64);
        assert_eq!(store.load(&sha), None);
        store.save(&sha, &doc());
        assert_eq!(store.load(&sha), Some(doc()));
        // Another option set does not see it.
        assert_eq!(Store::open(&dirs, "mcp.flat.i0.n0").load(&sha), None);
        // A flipped byte fails the CRC; a truncated file too.
        let path = store.path(&sha).unwrap();
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(store.load(&sha), None);
        std::fs::write(&path, &bytes[..5]).unwrap();
        assert_eq!(store.load(&sha), None);
        // Names that are not a sha256 never become paths.
        store.save("../../x", &doc());
        assert_eq!(store.load("../../x"), None);
        assert!(!tmp.path().join("x.bin").exists());
    }

    #[test]
    fn prune_keeps_only_what_was_used_and_this_version() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(tmp.path());
        let store = Store::open(&dirs, "openai.flat.i0.n0");
        let (a, b) = ("a".repeat(64), "b".repeat(64));
        store.save(&a, &doc());
        store.save(&b, &doc());
        let old = dirs.data.join("exports/docs/0.0.0-old.openai.flat.i0.n0");
        std::fs::create_dir_all(&old).unwrap();
        store.prune(&HashSet::from([a.clone()]));
        assert_eq!(store.load(&a), Some(doc()));
        assert_eq!(store.load(&b), None);
        assert!(!old.exists());
    }
}
