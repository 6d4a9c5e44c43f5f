//! Finding a command's manual page as `man` would, without running `man`.
//!
//! The search path is `MANPATH` when set (an empty component stands for the defaults),
//! else, for each PATH directory in order, `share/man` and `man` beside it, then
//! `/usr/local/share/man` and `/usr/share/man`. In each, sections 1, 8 and 6 are looked
//! at in that order; a plain section (`ls.1`) beats a suffixed one (`passwd.1ssl`). Pages
//! may be plain or compressed with gzip, zstd or xz (recognised by their magic bytes;
//! pure-Rust decoders, bounded output). A page that is only `.so other/page.N` is followed
//! (at most 4 times) inside the same manual tree.

use flate2::read::GzDecoder;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Sections searched for commands, in order.
pub const SECTIONS: [&str; 3] = ["1", "8", "6"];

/// Largest page file read (compressed size).
pub const MAX_FILE: u64 = 8 << 20;
/// Largest decompressed page.
pub const MAX_TEXT: u64 = 16 << 20;

/// A page file found for a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRef {
    /// The file.
    pub path: PathBuf,
    /// The manual tree it is in (the directory holding `man1`…).
    pub root: PathBuf,
    /// Its section, as in the file name (`1`, `8`, `1ssl`).
    pub section: String,
}

/// Identity of a file, cheap to read: a page is re-read only when this changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Inode.
    pub ino: u64,
    /// Device.
    pub dev: u64,
}

impl Stamp {
    /// The stamp of a file's [`Status`](crate::statat::Status).
    pub(crate) fn of_status(st: &crate::statat::Status) -> Stamp {
        Stamp {
            size: st.size,
            mtime_ns: st.mtime_ns,
            ino: st.ino,
            dev: st.dev,
        }
    }

    /// The stamp of `path` (following symlinks).
    pub(crate) fn of(path: &Path) -> std::io::Result<Stamp> {
        let m = std::fs::metadata(path)?;
        Ok(Stamp {
            size: m.len(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        })
    }
}

/// The manual trees to search, in order.
pub(crate) fn manpath(manpath_env: Option<&OsStr>, path_env: Option<&OsStr>) -> Vec<PathBuf> {
    let mut defaults: Vec<PathBuf> = Vec::new();
    if let Some(p) = path_env {
        for dir in std::env::split_paths(p) {
            if !dir.is_absolute() {
                continue;
            }
            if let Some(parent) = dir.parent() {
                defaults.push(parent.join("share/man"));
                defaults.push(parent.join("man"));
            }
        }
    }
    defaults.push(PathBuf::from("/usr/local/share/man"));
    defaults.push(PathBuf::from("/usr/share/man"));
    let mut out: Vec<PathBuf> = Vec::new();
    let push = |out: &mut Vec<PathBuf>, d: PathBuf| {
        if !out.contains(&d) {
            out.push(d);
        }
    };
    match manpath_env {
        Some(mp) if !mp.is_empty() => {
            let s = mp.to_string_lossy();
            for part in s.split(':') {
                if part.is_empty() {
                    for d in &defaults {
                        push(&mut out, d.clone());
                    }
                } else if part.starts_with('/') {
                    push(&mut out, PathBuf::from(part));
                }
            }
        }
        _ => {
            for d in defaults {
                push(&mut out, d);
            }
        }
    }
    out
}

/// One section directory's listing: one page file per name, sorted by name so that
/// per-command pages (`git-*`) can be found by prefix. Only the file names are kept (a
/// name and its section are read off the file name when asked): a section of ~18,000
/// pages is listed on every cold scan, beside the probes, and three strings and a tree
/// node per page were ~4 MB of the scan's peak memory.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct DirListing {
    /// The directory's modification time when listed (ns); a listing is reused while
    /// it is unchanged.
    pub mtime_ns: i128,
    /// The page files, one per name, sorted by name (`ls.1.gz` is the page of `ls`).
    pub files: Vec<Box<str>>,
}

impl DirListing {
    /// The page file of `name` and its section, in section directory `section`.
    fn get<'l>(&'l self, name: &str, section: &str) -> Option<(&'l str, &'l str)> {
        let i = self
            .files
            .binary_search_by(|f| page_name(f, section).unwrap_or_default().0.cmp(name))
            .ok()?;
        let file = &self.files[i];
        page_name(file, section).map(|(_, sec)| (sec, &**file))
    }

    /// The (name, section, file) of every page whose name starts with `prefix`.
    fn starting_with<'l>(
        &'l self,
        prefix: &'l str,
        section: &'l str,
    ) -> impl Iterator<Item = (&'l str, &'l str, &'l str)> + 'l {
        let start = self
            .files
            .partition_point(|f| page_name(f, section).unwrap_or_default().0 < prefix);
        self.files[start..]
            .iter()
            .map(move |f| {
                let (name, sec) = page_name(f, section).unwrap_or_default();
                (name, sec, &**f)
            })
            .take_while(move |(name, _, _)| name.starts_with(prefix))
    }
}

/// Splits a page file name into (name, section): `ls.1.gz` → (`ls`, `1`), for a file of
/// section directory `man<section>`.
fn page_name<'f>(file: &'f str, section: &str) -> Option<(&'f str, &'f str)> {
    let base = file
        .strip_suffix(".gz")
        .or_else(|| file.strip_suffix(".zst"))
        .or_else(|| file.strip_suffix(".xz"))
        .or_else(|| file.strip_suffix(".bz2"))
        .unwrap_or(file);
    let dot = base.rfind('.')?;
    let (name, sec) = (&base[..dot], &base[dot + 1..]);
    if name.is_empty() || !sec.starts_with(section) {
        return None;
    }
    Some((name, sec))
}

/// Lists one section directory.
pub(crate) fn list_dir(dir: &Path, section: &str) -> Option<DirListing> {
    let mtime_ns = Stamp::of(dir).ok()?.mtime_ns;
    let names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    let mut pages: Vec<(&str, usize, &str)> = names
        .iter()
        .filter_map(|f| page_name(f, section).map(|(name, sec)| (name, sec.len(), f.as_str())))
        .collect();
    // Per name, a plain section beats a suffixed one; then plain text beats compressed
    // (then the file name decides, so the listing does not depend on the directory's
    // order). Sorted once, not inserted one by one.
    pages.sort_unstable_by(|a, b| (a.0, a.1, a.2.len(), a.2).cmp(&(b.0, b.1, b.2.len(), b.2)));
    pages.dedup_by(|later, first| later.0 == first.0);
    let files = pages
        .into_iter()
        .map(|(_, _, file)| Box::from(file))
        .collect();
    Some(DirListing { mtime_ns, files })
}

/// Every page of the manual trees, by name, first tree and section first.
#[derive(Debug, Default)]
pub struct ManIndex {
    /// (root, section directory name, listing), in search order.
    pub dirs: Vec<(PathBuf, String, DirListing)>,
}

impl ManIndex {
    /// Lists the section directories of `roots`. `reuse` gives a cached listing of a
    /// directory, taken when its modification time is unchanged.
    pub fn build(roots: &[PathBuf], reuse: &BTreeMap<PathBuf, DirListing>) -> ManIndex {
        let mut dirs = Vec::new();
        for root in roots {
            for sec in SECTIONS {
                let dir = root.join(format!("man{sec}"));
                let Ok(stamp) = Stamp::of(&dir) else { continue };
                let listing = match reuse.get(&dir) {
                    Some(l) if l.mtime_ns == stamp.mtime_ns => l.clone(),
                    _ => match list_dir(&dir, sec) {
                        Some(l) => l,
                        None => continue,
                    },
                };
                dirs.push((root.clone(), sec.to_owned(), listing));
            }
        }
        ManIndex { dirs }
    }

    /// The listings, by section directory (sorted, so that the cache file's bytes do not
    /// depend on a hash seed), for caching (moved out, not copied: the
    /// listing of a big manual is megabytes).
    pub(crate) fn into_listings(self) -> BTreeMap<PathBuf, DirListing> {
        self.dirs
            .into_iter()
            .map(|(root, sec, l)| (root.join(format!("man{sec}")), l))
            .collect()
    }

    /// The page `man NAME` would show from sections 1, 8, 6.
    pub fn find(&self, name: &str) -> Option<PageRef> {
        for (root, sec, listing) in &self.dirs {
            if let Some((section, file)) = listing.get(name, sec) {
                return Some(PageRef {
                    path: root.join(format!("man{sec}")).join(file),
                    root: root.clone(),
                    section: section.to_owned(),
                });
            }
        }
        None
    }

    /// Pages named `PREFIX-*` in the tree and section of `main` (per-command pages such
    /// as `git-commit`), with the part after the dash.
    pub(crate) fn subpages(&self, main: &PageRef, prefix: &str) -> Vec<(String, PageRef)> {
        let start = format!("{prefix}-");
        let mut out = Vec::new();
        for (root, sec, listing) in &self.dirs {
            if root != &main.root || !main.section.starts_with(sec.as_str()) {
                continue;
            }
            for (name, section, file) in listing.starting_with(&start, sec) {
                let rest = &name[start.len()..];
                if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                    continue;
                }
                out.push((
                    rest.to_owned(),
                    PageRef {
                        path: root.join(format!("man{sec}")).join(file),
                        root: root.clone(),
                        section: section.to_owned(),
                    },
                ));
            }
        }
        out
    }
}

/// Why a page could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The page.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Larger than [`MAX_FILE`] or, decompressed, [`MAX_TEXT`].
    #[error("{path} is too large for a man page")]
    TooLarge {
        /// The page.
        path: PathBuf,
    },
    /// A compression this build does not read (`.bz2`).
    #[error("{path}: compressed in a format atip does not read")]
    Unsupported {
        /// The page.
        path: PathBuf,
    },
    /// `.so` redirects that go on too long or leave the manual tree.
    #[error("{path}: .so redirect loop or redirect outside the manual tree")]
    BadRedirect {
        /// The page.
        path: PathBuf,
    },
}

/// A page's text and the files it was read from (after `.so` redirects).
#[derive(Debug, Clone)]
pub struct PageText {
    /// The roff source.
    pub text: String,
    /// Every file read, first the one asked for.
    pub files: Vec<PathBuf>,
}

/// Reads a page file: decompresses, follows a whole-page `.so` redirect.
pub fn read_page(page: &PageRef) -> Result<PageText, ReadError> {
    let mut files = Vec::new();
    let mut path = page.path.clone();
    for _ in 0..5 {
        let text = read_text(&path)?;
        files.push(path.clone());
        match so_target(&text) {
            None => return Ok(PageText { text, files }),
            Some(target) => {
                let next = resolve_so(&page.root, &path, target)
                    .ok_or_else(|| ReadError::BadRedirect { path: path.clone() })?;
                path = next;
            }
        }
    }
    Err(ReadError::BadRedirect { path })
}

/// The target of a page that is only a `.so` request (comments aside).
fn so_target(text: &str) -> Option<&str> {
    let mut target = None;
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with(".\\\"") || l.starts_with("'\\\"") {
            continue;
        }
        match l.strip_prefix(".so") {
            Some(t) if target.is_none() && t.starts_with([' ', '\t']) => target = Some(t.trim()),
            _ => return None,
        }
    }
    target
}

/// Resolves `.so man1/other.1` against the tree root (as man does), then against the
/// page's own directory; the result must stay inside the tree.
fn resolve_so(root: &Path, from: &Path, target: &str) -> Option<PathBuf> {
    if target.contains("..") {
        return None;
    }
    let candidates = [
        root.join(target),
        from.parent().unwrap_or(root).join(target),
    ];
    for c in candidates {
        for ext in ["", ".gz", ".zst", ".xz"] {
            let p = PathBuf::from(format!("{}{ext}", c.display()));
            if p.is_file() {
                let canon = p.canonicalize().ok()?;
                let root_canon = root.canonicalize().ok()?;
                if canon.starts_with(&root_canon) || p.starts_with(root) {
                    return Some(p);
                }
            }
        }
    }
    None
}

/// How a page file is compressed, by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compression {
    None,
    Gzip,
    Zstd,
    Xz,
    Bzip2,
}

impl Compression {
    fn of(raw: &[u8]) -> Compression {
        if raw.starts_with(&[0x1f, 0x8b]) {
            Compression::Gzip
        } else if raw.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Compression::Zstd
        } else if raw.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Compression::Xz
        } else if raw.starts_with(b"BZh") {
            Compression::Bzip2
        } else {
            Compression::None
        }
    }
}

/// A sink that refuses to grow past [`MAX_TEXT`] (the xz decoder writes, not reads).
struct Capped(Vec<u8>);

impl std::io::Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() as u64 + buf.len() as u64 > MAX_TEXT {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Reads and decompresses one file, bounded.
fn read_text(path: &Path) -> Result<String, ReadError> {
    let io = |source| ReadError::Io {
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let len = file.metadata().map_err(io)?.len();
    if len > MAX_FILE {
        return Err(ReadError::TooLarge {
            path: path.to_owned(),
        });
    }
    let mut raw = Vec::with_capacity(len as usize);
    file.take(MAX_FILE + 1).read_to_end(&mut raw).map_err(io)?;
    let too_large = || ReadError::TooLarge {
        path: path.to_owned(),
    };
    let raw_len = raw.len();
    let capped = |mut r: Box<dyn Read + '_>| -> Result<Vec<u8>, ReadError> {
        let mut out = Vec::with_capacity(raw_len * 3);
        r.by_ref()
            .take(MAX_TEXT + 1)
            .read_to_end(&mut out)
            .map_err(io)?;
        if out.len() as u64 > MAX_TEXT {
            return Err(too_large());
        }
        Ok(out)
    };
    let bytes = match Compression::of(&raw) {
        Compression::None => raw,
        Compression::Gzip => capped(Box::new(GzDecoder::new(&raw[..])))?,
        Compression::Zstd => {
            let d = ruzstd::decoding::StreamingDecoder::new(&raw[..]).map_err(|e| {
                io(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    e.to_string(),
                ))
            })?;
            capped(Box::new(d))?
        }
        Compression::Xz => {
            let mut out = Capped(Vec::with_capacity(raw.len() * 4));
            if let Err(e) = lzma_rs::xz_decompress(&mut &raw[..], &mut out) {
                return Err(match e {
                    lzma_rs::error::Error::IoError(e)
                        if e.kind() == std::io::ErrorKind::FileTooLarge =>
                    {
                        too_large()
                    }
                    e => io(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        e.to_string(),
                    )),
                });
            }
            out.0
        }
        Compression::Bzip2 => {
            return Err(ReadError::Unsupported {
                path: path.to_owned(),
            });
        }
    };
    Ok(match String::from_utf8(bytes) {
        Ok(s) => s,
        // Old pages are often Latin-1: every byte is a character.
        Err(e) => e.into_bytes().iter().map(|&b| b as char).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixtures() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("tests/fixtures/man")
    }

    fn page(path: PathBuf) -> PageRef {
        PageRef {
            root: path.parent().unwrap().to_path_buf(),
            path,
            section: "1".into(),
        }
    }

    /// The manual's listing is cached in a fixed order: two builds of one manual
    /// serialize to the same bytes (a hash map's order changes with its seed).
    #[test]
    fn listings_serialize_in_a_fixed_order() {
        let d = tempfile::tempdir().unwrap();
        let roots: Vec<PathBuf> = ["a", "b"].iter().map(|r| d.path().join(r)).collect();
        for root in &roots {
            for sec in SECTIONS {
                let dir = root.join(format!("man{sec}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(format!("t.{sec}.gz")), b"").unwrap();
            }
        }
        let bytes = || {
            let listings = ManIndex::build(&roots, &BTreeMap::new()).into_listings();
            assert_eq!(listings.len(), 2 * SECTIONS.len());
            serde_json::to_vec(&listings).unwrap()
        };
        assert_eq!(bytes(), bytes());
    }

    /// Pages compressed by the real `zstd` and `xz` tools read the same as the gzip one.
    #[test]
    fn a_listing_keeps_per_name_the_plain_section_then_the_shortest_file() {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "ls.1.gz",
            "ls.1",
            "ls.1p",
            "p.1p.gz",
            "a.1.xz",
            "a.1.gz",
            "git-commit.1.gz",
            "notes.txt",
            "eight.8",
        ] {
            std::fs::write(d.path().join(f), b"").unwrap();
        }
        let l = list_dir(d.path(), "1").unwrap();
        let got: Vec<(&str, &str, &str)> = l.starting_with("", "1").collect();
        assert_eq!(l.get("p", "1"), Some(("1p", "p.1p.gz")));
        assert_eq!(l.get("git", "1"), None);
        assert_eq!(
            got,
            [
                ("a", "1", "a.1.gz"),
                ("git-commit", "1", "git-commit.1.gz"),
                ("ls", "1", "ls.1"),
                ("p", "1p", "p.1p.gz"),
            ]
        );
        assert_eq!(l.mtime_ns, Stamp::of(d.path()).unwrap().mtime_ns);
    }

    #[test]
    fn zstd_and_xz_pages_read_like_gzip_ones() {
        let gz = read_page(&page(fixtures().join("man1/wc.1.gz"))).unwrap();
        assert!(gz.text.contains(".TH WC"), "{}", &gz.text[..200]);
        for f in ["wc.1.zst", "wc.1.xz"] {
            let got = read_page(&page(fixtures().join("compressed").join(f))).unwrap();
            assert_eq!(got.text, gz.text, "{f}");
        }
        assert!(matches!(
            read_page(&page(fixtures().join("compressed/wc.1.bz2"))),
            Err(ReadError::Unsupported { .. })
        ));
        assert_eq!(page_name("wc.1.zst", "1"), Some(("wc", "1")));
        assert_eq!(page_name("wc.1.xz", "1"), Some(("wc", "1")));
    }

    /// 17 MiB of zeros in 3 KB: decompression stops at the cap.
    #[test]
    fn compressed_bombs_stop_at_the_cap() {
        for f in ["bomb.1.zst", "bomb.1.xz"] {
            let got = read_page(&page(fixtures().join("compressed").join(f)));
            assert!(
                matches!(got, Err(ReadError::TooLarge { .. })),
                "{f}: {got:?}"
            );
        }
    }

    #[test]
    fn damaged_compressed_pages_are_read_errors() {
        let t = tempfile::tempdir().unwrap();
        for (f, magic) in [
            ("x.1.zst", &[0x28u8, 0xb5, 0x2f, 0xfd][..]),
            ("x.1.xz", &[0xfd, b'7', b'z', b'X', b'Z', 0x00][..]),
        ] {
            let p = t.path().join(f);
            let mut bytes = magic.to_vec();
            bytes.extend_from_slice(b"not really compressed");
            std::fs::write(&p, bytes).unwrap();
            let got = read_page(&page(p));
            assert!(matches!(got, Err(ReadError::Io { .. })), "{f}: {got:?}");
        }
    }
}
