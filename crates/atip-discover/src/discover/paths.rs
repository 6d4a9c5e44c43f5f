//! PATH enumeration and path safety: which directories are scanned, which files in them
//! are executables the current user may run, and which name each executable answers to.
//!
//! Owns the rules a shell uses to resolve a name (first executable occurrence in PATH
//! order) and the safety rules of the scan (no `.`, relative, missing, world-writable or
//! foreign-owned directories; no world-writable files). Reads directories and `stat`s
//! files; must not read file contents or run anything.

use crate::statat::{StatAt, Status, in_parts};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// What `stat` says about a file, enough to tell whether it changed since the last scan.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    serde::Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(compare(PartialEq))]
pub struct Fingerprint {
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status-change time, nanoseconds since the epoch.
    pub ctime_ns: i128,
}

impl Fingerprint {
    /// The fingerprint of already-fetched metadata.
    pub(crate) fn of(md: &fs::Metadata) -> Fingerprint {
        Fingerprint::of_status(&Status::from(md))
    }

    /// The fingerprint of a [`Status`].
    pub(crate) fn of_status(st: &Status) -> Fingerprint {
        Fingerprint {
            dev: st.dev,
            ino: st.ino,
            size: st.size,
            mtime_ns: st.mtime_ns,
            ctime_ns: st.ctime_ns,
        }
    }
}

/// Canonical paths of symlinked executables, with each link's directory canonicalized
/// once per scan: `fs::canonicalize` re-reads every component of every path (five
/// `readlink`s for `/usr/bin/x` → `/etc/alternatives/x` → …), while PATH links mostly
/// point into a handful of directories. Each link is read relative to its directory's
/// handle ([`StatAt`]), one `readlinkat` per link followed.
#[derive(Debug, Default)]
pub(crate) struct LinkResolver {
    dirs: HashMap<PathBuf, PathBuf>,
}

impl LinkResolver {
    /// Most links followed for one path, as the kernel's limit (`ELOOP` after 40).
    const MAX_LINKS: usize = 40;

    /// The canonical path of `path` (absolute, no symlink anywhere in it), as
    /// `fs::canonicalize` gives it.
    pub(crate) fn resolve(&mut self, path: &Path, stat: &mut StatAt) -> std::io::Result<PathBuf> {
        let mut current = path.to_path_buf();
        for _ in 0..Self::MAX_LINKS {
            let (Some(dir), Some(name)) = (current.parent(), current.file_name()) else {
                return fs::canonicalize(path);
            };
            if name == OsStr::new("..") || name == OsStr::new(".") {
                return fs::canonicalize(path);
            }
            if !self.dirs.contains_key(dir) {
                let c = fs::canonicalize(dir)?;
                self.dirs.insert(dir.to_path_buf(), c);
            }
            let dir = &self.dirs[dir];
            let next = match stat.read_link_in(dir, name) {
                // Not a symlink (it exists: a missing file fails with ENOENT).
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(dir.join(name)),
                Err(e) => return Err(e),
                Ok(target) if target.is_absolute() => target,
                Ok(target) => dir.join(target),
            };
            current = next;
        }
        Err(std::io::Error::from_raw_os_error(libc::ELOOP))
    }
}

impl From<crate::registry::FileStamp> for Fingerprint {
    fn from(s: crate::registry::FileStamp) -> Self {
        Fingerprint {
            dev: s.dev,
            ino: s.ino,
            size: s.size,
            mtime_ns: s.mtime_ns.into(),
            ctime_ns: s.ctime_ns.into(),
        }
    }
}

impl From<Fingerprint> for crate::registry::FileStamp {
    fn from(f: Fingerprint) -> Self {
        crate::registry::FileStamp {
            dev: f.dev,
            ino: f.ino,
            size: f.size,
            mtime_ns: f.mtime_ns as i64,
            ctime_ns: f.ctime_ns as i64,
        }
    }
}

/// Why a PATH entry was not scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DirSkipReason {
    /// An empty PATH entry (which a shell would read as `.`).
    Empty,
    /// `.` or another relative entry: it would depend on the working directory.
    Relative,
    /// The directory does not exist (or a component is not searchable).
    Missing,
    /// The entry exists but is not a directory.
    NotADirectory,
    /// Anyone may add files to it.
    WorldWritable,
    /// Owned by neither root nor the current user.
    ForeignOwner,
    /// The same directory (after resolving symlinks) came earlier.
    Duplicate,
    /// The directory could not be listed.
    Unreadable,
}

/// A PATH entry that was not scanned, and why.
#[derive(Debug, Clone, Serialize)]
pub struct DirSkip {
    /// The entry as given.
    pub path: String,
    /// Why.
    pub reason: DirSkipReason,
    /// Details (the earlier duplicate, the owner uid, the OS error).
    pub detail: String,
}

/// A directory that is scanned.
#[derive(Debug, Clone)]
pub struct ScanDir {
    /// The entry as given.
    pub given: PathBuf,
    /// Its canonical form (symlinks resolved); executables are recorded under it.
    pub canonical: PathBuf,
}

/// Why an executable (or a file that looked like one) was not considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileSkipReason {
    /// Anyone may change the file.
    WorldWritable,
    /// An earlier PATH directory already holds an executable of that name.
    Shadowed,
    /// Matched a `--skip` glob.
    SkipGlob,
    /// The name cannot be a registry key (see `spec/scan.md`).
    InvalidName,
    /// The file could not be examined.
    Unreadable,
}

/// A file that was not considered, and why.
#[derive(Debug, Clone, Serialize)]
pub struct FileSkip {
    /// Executable name.
    pub name: String,
    /// Path as found in its PATH directory.
    pub path: PathBuf,
    /// Why.
    pub reason: FileSkipReason,
    /// Details (the winning path for shadowed names and same files).
    pub detail: String,
}

/// One executable the scan considers: the file a shell would run for `name`.
#[derive(Debug, Clone)]
pub struct Executable {
    /// The name a shell resolves to it (its file name in the PATH directory).
    pub name: String,
    /// `<canonical dir>/<name>`: what the registry records and what is run.
    pub path: PathBuf,
    /// The file with every symlink resolved; the cache key.
    pub canonical: PathBuf,
    /// `stat` of the resolved file.
    pub fingerprint: Fingerprint,
    /// Owner and mode (`st_mode`) of the resolved file, from the same `stat`.
    pub owner_mode: (u32, u32),
}

/// Result of enumerating the scanned directories.
#[derive(Debug, Default)]
pub struct Enumeration {
    /// Directories scanned, in PATH order.
    pub dirs: Vec<ScanDir>,
    /// PATH entries skipped.
    pub skipped_dirs: Vec<DirSkip>,
    /// Executables, in PATH order then name order.
    pub executables: Vec<Executable>,
    /// Files skipped with a reason.
    pub skipped_files: Vec<FileSkip>,
    /// Further names of an executable's file (hard or symbolic links to the same file):
    /// each is a name an agent can type, so each is registered, sharing what is known of
    /// the file.
    pub aliases: Vec<Alias>,
}

/// Another name of an executable already listed.
#[derive(Debug, Clone)]
pub struct Alias {
    /// The name a shell resolves to the file.
    pub name: String,
    /// `<canonical dir>/<name>`.
    pub path: PathBuf,
    /// Index of the first name's executable in [`Enumeration::executables`].
    pub of: usize,
}

/// The process's effective identity, for permission checks.
#[derive(Debug, Clone)]
pub struct Identity {
    /// Effective uid.
    pub uid: u32,
    /// Effective gid.
    pub gid: u32,
    /// Supplementary groups.
    pub groups: Vec<u32>,
}

impl Identity {
    /// The current process's identity.
    pub(crate) fn current() -> Identity {
        // SAFETY: plain libc getters with no preconditions; getgroups writes at most
        // `n` entries into a buffer of that size.
        unsafe {
            let uid = libc::geteuid();
            let gid = libc::getegid();
            let n = libc::getgroups(0, std::ptr::null_mut());
            let mut groups = vec![0 as libc::gid_t; n.max(0) as usize];
            let got = if n > 0 {
                libc::getgroups(n, groups.as_mut_ptr())
            } else {
                0
            };
            groups.truncate(got.max(0) as usize);
            Identity { uid, gid, groups }
        }
    }

    /// Whether this identity may execute a file with these mode bits and owner, the
    /// way the kernel decides it (root needs at least one x bit).
    pub(crate) fn may_execute(&self, st: &Status) -> bool {
        let mode = st.mode;
        if self.uid == 0 {
            return mode & 0o111 != 0;
        }
        if st.uid == self.uid {
            mode & 0o100 != 0
        } else if st.gid == self.gid || self.groups.contains(&st.gid) {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        }
    }
}

/// Whether an executable name can be a registry key: letters, digits, `_`, `.`, `+`,
/// `-`, starting with a letter, digit or `_`, at most 255 bytes.
pub fn is_valid_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 255
        && (b[0].is_ascii_alphanumeric() || b[0] == b'_')
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'-'))
}

/// One PATH-like entry and whether it came from `--allow-dir` (whose owner is trusted).
#[derive(Debug, Clone)]
pub struct DirEntrySpec {
    /// The entry as given.
    pub path: OsString,
    /// From `--allow-dir`: the owner check is lifted.
    pub allowed: bool,
}

/// Splits a PATH value into entries, keeping empty ones so they can be reported.
pub(crate) fn split_path(value: &OsStr) -> Vec<OsString> {
    value
        .as_bytes()
        .split(|&b| b == b':')
        .map(|s| OsStr::from_bytes(s).to_os_string())
        .collect()
}

/// Decides which directories are scanned, in order, and reports the others.
pub(crate) fn resolve_dirs(specs: &[DirEntrySpec], me: &Identity) -> (Vec<ScanDir>, Vec<DirSkip>) {
    let mut dirs: Vec<ScanDir> = Vec::new();
    let mut skipped = Vec::new();
    for spec in specs {
        let given = PathBuf::from(&spec.path);
        let shown = given.display().to_string();
        let skip = |reason, detail: String| DirSkip {
            path: shown.clone(),
            reason,
            detail,
        };
        if spec.path.is_empty() {
            skipped.push(skip(
                DirSkipReason::Empty,
                "an empty PATH entry means the current directory".into(),
            ));
            continue;
        }
        if !given.is_absolute() {
            skipped.push(skip(
                DirSkipReason::Relative,
                "relative entries depend on the working directory".into(),
            ));
            continue;
        }
        let canonical = match fs::canonicalize(&given) {
            Ok(c) => c,
            Err(e) => {
                skipped.push(skip(DirSkipReason::Missing, e.to_string()));
                continue;
            }
        };
        let md = match fs::metadata(&canonical) {
            Ok(md) => md,
            Err(e) => {
                skipped.push(skip(DirSkipReason::Missing, e.to_string()));
                continue;
            }
        };
        if !md.is_dir() {
            skipped.push(skip(DirSkipReason::NotADirectory, String::new()));
            continue;
        }
        if md.mode() & 0o002 != 0 {
            skipped.push(skip(
                DirSkipReason::WorldWritable,
                format!(
                    "mode {:o}: anyone may add programs here",
                    md.mode() & 0o7777
                ),
            ));
            continue;
        }
        if !spec.allowed && md.uid() != 0 && md.uid() != me.uid {
            skipped.push(skip(
                DirSkipReason::ForeignOwner,
                format!(
                    "owned by uid {}; pass --allow-dir {} to trust it",
                    md.uid(),
                    shown
                ),
            ));
            continue;
        }
        if let Some(first) = dirs.iter().find(|d| d.canonical == canonical) {
            skipped.push(skip(
                DirSkipReason::Duplicate,
                format!(
                    "same directory as {} ({})",
                    first.given.display(),
                    canonical.display()
                ),
            ));
            continue;
        }
        dirs.push(ScanDir { given, canonical });
    }
    (dirs, skipped)
}

/// Entries per thread below which [`enumerate`] stats on the calling thread alone: a
/// stat costs ~1.5–3 µs, starting a thread ~50–100 µs.
const MIN_PART: usize = 200;

/// Symlinked executables per thread below which their canonical paths are found on the
/// calling thread alone (a link costs a few `readlinkat`s).
const MIN_LINK_PART: usize = 64;

/// Lists the executables of the scanned directories the way a shell resolves names:
/// a name belongs to the first directory holding an executable regular file of that
/// name; later ones are reported as shadowed. A file reached under several names (same
/// device and inode) is examined once, under its first name; its other names are
/// [`Alias`]es.
///
/// The stats (and the links followed to each symlinked executable's file) are taken on
/// up to `threads` threads, each with its own [`StatAt`]; the rules above are applied on
/// one thread in PATH order, so the result does not depend on the number of threads.
pub(crate) fn enumerate(
    dirs: Vec<ScanDir>,
    skipped_dirs: Vec<DirSkip>,
    me: &Identity,
    skip: &globset::GlobSet,
    threads: usize,
) -> Enumeration {
    enumerate_in_parts(dirs, skipped_dirs, me, skip, threads, MIN_PART).0
}

/// [`enumerate`], with parts of at least `min_part` entries per thread; `true` when a
/// link that could not be followed had the walk done again on one thread.
fn enumerate_in_parts(
    dirs: Vec<ScanDir>,
    skipped_dirs: Vec<DirSkip>,
    me: &Identity,
    skip: &globset::GlobSet,
    threads: usize,
    min_part: usize,
) -> (Enumeration, bool) {
    let given_skips = skipped_dirs.len();
    let retry = (threads > 1).then(|| dirs.clone());
    let mut out = Enumeration {
        skipped_dirs,
        ..Enumeration::default()
    };
    let (kept, entries) = list_dirs(dirs, &mut out.skipped_dirs);
    // Each entry's status, when it is a file this user may run (a dangling symlink or
    // a vanished file is not: a shell would not run it either).
    let runnable = in_parts(&entries, threads, min_part, StatAt::new, |stat, e| {
        let st = stat.status_in(&kept[e.dir].canonical, &e.name).ok()?;
        (st.is_file() && me.may_execute(&st)).then_some(st)
    });
    let links = if threads > 1 {
        Links::Later(Vec::new())
    } else {
        Links::Now(LinkResolver::default(), StatAt::new())
    };
    let mut walk = Walk {
        out,
        skip,
        dirs: &kept,
        names: foldhash::HashMap::with_capacity_and_hasher(entries.len(), Default::default()),
        inodes: foldhash::HashMap::with_capacity_and_hasher(entries.len(), Default::default()),
        links,
    };
    walk.out.executables.reserve(entries.len());
    for (e, st) in entries.into_iter().zip(runnable) {
        if let Some(st) = st {
            walk.entry(e, &st);
        }
    }
    let Walk { mut out, links, .. } = walk;
    if let Links::Later(wanted) = links
        && !follow_links(&mut out.executables, wanted, threads)
    {
        // Only a link changed since its stat fails here (or a chain too long to
        // follow): the names already decided may be wrong, so the walk is done again
        // on one thread, following each link as it is met.
        let mut skipped_dirs = out.skipped_dirs;
        skipped_dirs.truncate(given_skips);
        let dirs = retry.unwrap_or_default();
        let again = enumerate_in_parts(dirs, skipped_dirs, me, skip, 1, min_part);
        return (again.0, true);
    }
    out.dirs = kept;
    (out, false)
}

/// Lists `dirs` in order: those listed, and each one's entries (with its index among
/// them); an unreadable one goes to `skipped`.
fn list_dirs(dirs: Vec<ScanDir>, skipped: &mut Vec<DirSkip>) -> (Vec<ScanDir>, Vec<Entry>) {
    let mut kept = Vec::new();
    let mut entries = Vec::new();
    for dir in dirs {
        match dir_entries(&dir.canonical) {
            Ok(listed) => {
                let d = kept.len();
                let listed = listed.into_iter().map(|(name, is_link)| Entry {
                    dir: d,
                    name,
                    is_link,
                });
                entries.extend(listed);
                kept.push(dir);
            }
            Err(e) => skipped.push(DirSkip {
                path: dir.given.display().to_string(),
                reason: DirSkipReason::Unreadable,
                detail: e.to_string(),
            }),
        }
    }
    (kept, entries)
}

/// Sets the canonical path of each of the `wanted` executables (symlinks), found on up
/// to `threads` threads; `false` when a link could not be followed.
fn follow_links(exes: &mut [Executable], wanted: Vec<usize>, threads: usize) -> bool {
    let state = || (LinkResolver::default(), StatAt::new());
    let found = in_parts(&wanted, threads, MIN_LINK_PART, state, |(r, stat), &i| {
        r.resolve(&exes[i].path, stat)
    });
    for (i, canonical) in wanted.into_iter().zip(found) {
        match canonical {
            Ok(c) => exes[i].canonical = c,
            Err(_) => return false,
        }
    }
    true
}

/// One entry of a scanned directory.
struct Entry {
    /// Index of its directory among those listed.
    dir: usize,
    name: OsString,
    is_link: bool,
}

/// How [`Walk`] finds the canonical path of a symlinked executable.
enum Links {
    /// Follows its links when met (one thread).
    Now(LinkResolver, StatAt),
    /// Notes its index in the executables; the links are followed afterwards, on the
    /// threads.
    Later(Vec<usize>),
}

/// The entries of a directory that could be run (not directories, sockets, FIFOs or
/// block devices), sorted, each with whether it is a symlink.
fn dir_entries(dir: &Path) -> std::io::Result<Vec<(OsString, bool)>> {
    let mut entries: Vec<(OsString, bool)> = fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|e| {
            let ft = e.file_type().ok()?;
            if ft.is_dir() || ft.is_socket() || ft.is_fifo() || ft.is_block_device() {
                return None;
            }
            Some((e.file_name(), ft.is_symlink()))
        })
        .collect();
    // A directory's names are distinct: no tie for a stable sort to keep in order.
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// The state of [`enumerate`] as it goes through the entries in PATH order.
struct Walk<'a> {
    out: Enumeration,
    skip: &'a globset::GlobSet,
    /// The directories listed, in order.
    dirs: &'a [ScanDir],
    /// Each name met so far, with the index in `dirs` of the directory the shell runs
    /// it from. (foldhash, like the inodes: two look-ups per executable, and std's
    /// SipHash showed in a warm rescan's profile; PATH names are not an attack surface
    /// for a map that lives one scan.)
    names: foldhash::HashMap<String, usize>,
    /// Each file met so far (device, inode), with its index in `out.executables`.
    inodes: foldhash::HashMap<(u64, u64), usize>,
    links: Links,
}

impl Walk<'_> {
    fn skip_file(&mut self, name: String, path: PathBuf, reason: FileSkipReason, detail: String) {
        self.out.skipped_files.push(FileSkip {
            name,
            path,
            reason,
            detail,
        });
    }

    /// One entry a shell would run (`md`: its status): an executable (its file's first
    /// name), an alias of one met before, or skipped (with the reason).
    fn entry(&mut self, e: Entry, md: &Status) {
        let dirs = self.dirs;
        let path = dirs[e.dir].canonical.join(&e.name);
        let name = match e.name.into_string() {
            Ok(name) => name,
            Err(file_name) => {
                let shown = file_name.to_string_lossy().into_owned();
                let detail = "the name is not UTF-8".into();
                return self.skip_file(shown, path, FileSkipReason::InvalidName, detail);
            }
        };
        if let Some(&first) = self.names.get(&name) {
            let first = dirs[first].canonical.join(&name);
            let detail = format!("the shell runs {}", first.display());
            return self.skip_file(name, path, FileSkipReason::Shadowed, detail);
        }
        self.names.insert(name.clone(), e.dir);
        if let Some((reason, detail)) = self.refusal(&name, md) {
            return self.skip_file(name, path, reason, detail);
        }
        let fingerprint = Fingerprint::of_status(md);
        let inode = (fingerprint.dev, fingerprint.ino);
        if let Some(&of) = self.inodes.get(&inode) {
            self.out.aliases.push(Alias { name, path, of });
            return;
        }
        let index = self.out.executables.len();
        let canonical = match &mut self.links {
            _ if !e.is_link => path.clone(),
            Links::Now(links, stat) => match links.resolve(&path, stat) {
                Ok(c) => c,
                // Not recorded as the file's first name: a later name of the same
                // file is examined in its place.
                Err(e) => {
                    return self.skip_file(name, path, FileSkipReason::Unreadable, e.to_string());
                }
            },
            Links::Later(wanted) => {
                wanted.push(index);
                PathBuf::new()
            }
        };
        self.inodes.insert(inode, index);
        self.out.executables.push(Executable {
            name,
            path,
            canonical,
            fingerprint,
            owner_mode: (md.uid, md.mode),
        });
    }

    /// Why an executable that owns its name is not scanned: anyone may change it, a
    /// `--skip` glob matches it, or its name cannot be a registry key.
    fn refusal(&self, name: &str, md: &Status) -> Option<(FileSkipReason, String)> {
        if md.mode & 0o002 != 0 {
            let detail = format!("mode {:o}: anyone may change it", md.mode & 0o7777);
            return Some((FileSkipReason::WorldWritable, detail));
        }
        if !self.skip.is_empty() && self.skip.is_match(name) {
            return Some((FileSkipReason::SkipGlob, String::new()));
        }
        if !is_valid_name(name) {
            let detail = "registry keys use letters, digits, `_`, `.`, `+`, `-`".into();
            return Some((FileSkipReason::InvalidName, detail));
        }
        None
    }
}

/// Whether `path` lies directly in one of `dirs`.
pub(crate) fn in_dirs(path: &Path, dirs: &[ScanDir]) -> bool {
    path.parent()
        .is_some_and(|p| dirs.iter().any(|d| d.canonical == p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn link_resolver_agrees_with_canonicalize() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        for d in ["bin", "lib/real", "alt", "lib/linked-dir-target"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        fs::write(root.join("lib/real/tool"), "x").unwrap();
        symlink(root.join("lib/linked-dir-target"), root.join("lib/dirlink")).unwrap();
        fs::write(root.join("lib/linked-dir-target/other"), "y").unwrap();
        // bin/a → ../alt/a (relative) → /abs/lib/real/tool (absolute)
        symlink("../alt/a", root.join("bin/a")).unwrap();
        symlink(root.join("lib/real/tool"), root.join("alt/a")).unwrap();
        // bin/b → ../lib/dirlink/other: a directory symlink in the middle
        symlink("../lib/dirlink/other", root.join("bin/b")).unwrap();
        // bin/c → ./a: a link to a link in the same directory
        symlink("./a", root.join("bin/c")).unwrap();
        // loops and dangling links fail as canonicalize does
        symlink("loop2", root.join("bin/loop1")).unwrap();
        symlink("loop1", root.join("bin/loop2")).unwrap();
        symlink("missing", root.join("bin/dangling")).unwrap();
        let mut r = LinkResolver::default();
        let mut at = StatAt::new();
        for name in ["a", "b", "c", "a"] {
            let p = root.join("bin").join(name);
            assert_eq!(
                r.resolve(&p, &mut at).unwrap(),
                fs::canonicalize(&p).unwrap(),
                "{name}"
            );
        }
        assert!(r.resolve(&root.join("bin/loop1"), &mut at).is_err());
        assert_eq!(
            r.resolve(&root.join("bin/dangling"), &mut at)
                .unwrap_err()
                .kind(),
            std::io::ErrorKind::NotFound
        );
    }

    fn spec(p: &str) -> DirEntrySpec {
        DirEntrySpec {
            path: p.into(),
            allowed: false,
        }
    }

    #[test]
    fn names_and_path_splitting() {
        assert!(is_valid_name("gh"));
        assert!(is_valid_name("g++"));
        assert!(is_valid_name("python3.12"));
        assert!(!is_valid_name("../../X"));
        assert!(!is_valid_name("["));
        assert!(!is_valid_name(".hidden"));
        assert_eq!(
            split_path(OsStr::new("/a::b:")),
            vec![
                OsString::from("/a"),
                OsString::from(""),
                OsString::from("b"),
                OsString::from("")
            ]
        );
    }

    #[test]
    fn unsafe_dirs_are_skipped_with_reasons() {
        let t = tempfile::tempdir().unwrap();
        let good = t.path().join("good");
        let ww = t.path().join("ww");
        fs::create_dir(&good).unwrap();
        fs::create_dir(&ww).unwrap();
        fs::set_permissions(&ww, fs::Permissions::from_mode(0o777)).unwrap();
        std::os::unix::fs::symlink(&good, t.path().join("link")).unwrap();
        let specs: Vec<DirEntrySpec> = [
            "",
            ".",
            "rel/bin",
            good.to_str().unwrap(),
            ww.to_str().unwrap(),
            t.path().join("missing").to_str().unwrap(),
            t.path().join("link").to_str().unwrap(),
        ]
        .iter()
        .map(|p| spec(p))
        .collect();
        let (dirs, skipped) = resolve_dirs(&specs, &Identity::current());
        assert_eq!(dirs.len(), 1);
        let reasons: Vec<DirSkipReason> = skipped.iter().map(|s| s.reason).collect();
        assert_eq!(
            reasons,
            vec![
                DirSkipReason::Empty,
                DirSkipReason::Relative,
                DirSkipReason::Relative,
                DirSkipReason::WorldWritable,
                DirSkipReason::Missing,
                DirSkipReason::Duplicate
            ]
        );
    }

    #[test]
    fn first_directory_wins_and_inodes_dedupe() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a");
        let b = t.path().join("b");
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        for (dir, name, mode) in [
            (&a, "tool", 0o755),
            (&b, "tool", 0o755),
            (&a, "plain", 0o644),
            (&b, "plain", 0o755),
            (&a, "open", 0o777),
        ] {
            let p = dir.join(name);
            fs::write(&p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        }
        std::os::unix::fs::symlink(a.join("tool"), b.join("alias")).unwrap();
        let specs = vec![spec(a.to_str().unwrap()), spec(b.to_str().unwrap())];
        let me = Identity::current();
        let (dirs, skipped) = resolve_dirs(&specs, &me);
        let e = enumerate(dirs, skipped, &me, &globset::GlobSet::empty(), 1);
        let got: Vec<(String, PathBuf)> = e
            .executables
            .iter()
            .map(|x| (x.name.clone(), x.path.clone()))
            .collect();
        let a = fs::canonicalize(&a).unwrap();
        let b = fs::canonicalize(&b).unwrap();
        assert_eq!(
            got,
            vec![
                ("tool".to_string(), a.join("tool")),
                ("plain".to_string(), b.join("plain"))
            ]
        );
        let reasons: Vec<(&str, FileSkipReason)> = e
            .skipped_files
            .iter()
            .map(|s| (s.name.as_str(), s.reason))
            .collect();
        assert_eq!(
            reasons,
            vec![
                ("open", FileSkipReason::WorldWritable),
                ("tool", FileSkipReason::Shadowed)
            ]
        );
        // A second name of the same file is an alias of the first, not a skip.
        let aliases: Vec<(&str, usize)> =
            e.aliases.iter().map(|x| (x.name.as_str(), x.of)).collect();
        assert_eq!(aliases, vec![("alias", 0)]);
        assert_eq!(e.aliases[0].path, b.join("alias"));
    }

    /// The PATH directories of [`split_fixture`], in order.
    const SPLIT_DIRS: [&str; 5] = ["a", "b", "a", "gone", "c"];

    /// `--skip skipped-*`.
    fn skip_glob() -> globset::GlobSet {
        let glob = globset::Glob::new("skipped-*").unwrap();
        globset::GlobSetBuilder::new().add(glob).build().unwrap()
    }

    /// [`SPLIT_DIRS`] enumerated with `threads` threads and parts of `min_part`, after
    /// the directory `gone` was removed (it vanishes after it was chosen, so it cannot be
    /// listed); `true` when the split walk fell back to one thread.
    fn enumerate_split(root: &Path, threads: usize, min_part: usize) -> (Enumeration, bool) {
        let me = Identity::current();
        let specs = SPLIT_DIRS.map(|d| spec(root.join(d).to_str().unwrap()));
        let (scan_dirs, skipped) = resolve_dirs(&specs, &me);
        fs::remove_dir(root.join("gone")).unwrap();
        let e = enumerate_in_parts(scan_dirs, skipped, &me, &skip_glob(), threads, min_part);
        fs::create_dir(root.join("gone")).unwrap();
        e
    }

    /// Enumerates [`SPLIT_DIRS`] in every way the scan may split the work; `again`:
    /// whether a split walk must fall back to one thread.
    fn every_split(root: &Path, again: bool) -> Vec<String> {
        let mut seen = Vec::new();
        for (threads, min_part) in [(1, 1), (2, 1), (2, 2), (3, 1), (2, 1000)] {
            let (e, walked_again) = enumerate_split(root, threads, min_part);
            assert_eq!(walked_again, again && threads > 1, "{threads} threads");
            seen.push(format!("{e:?}"));
        }
        assert!(seen.iter().all(|s| s == &seen[0]), "{seen:#?}");
        seen
    }

    /// Directories `a`, `b`, `c`, `real` and `gone` under a fresh directory (canonical):
    /// shadowed names, hard and symbolic aliases, dangling links, world-writable,
    /// skipped, invalid and non-UTF-8 names, a link chain, enough entries to split.
    fn split_fixture() -> (tempfile::TempDir, PathBuf) {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        for d in ["a", "b", "c", "real", "gone", "a/subdir"] {
            fs::create_dir(root.join(d)).unwrap();
        }
        let file = |p: &Path, mode: u32| {
            fs::write(p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
        };
        for (p, mode) in [
            ("a/tool", 0o755),
            ("a/plain", 0o644),
            ("a/open", 0o777),
            ("a/[", 0o755),
            ("a/skipped-one", 0o755),
            ("b/tool", 0o755),
            ("b/plain", 0o755),
            ("c/zeta", 0o755),
            ("real/t1", 0o755),
            ("real/t2", 0o755),
        ] {
            file(&root.join(p), mode);
        }
        for i in 0..40 {
            file(&root.join(format!("c/many{i:02}")), 0o755);
        }
        let odd: &OsStr = std::os::unix::ffi::OsStrExt::from_bytes(&b"caf\xe9"[..]);
        file(&root.join("a").join(odd), 0o755);
        fs::hard_link(root.join("a/tool"), root.join("a/hard")).unwrap();
        symlink("nowhere", root.join("a/dangling")).unwrap();
        symlink("../real/t1", root.join("a/linked")).unwrap();
        symlink(root.join("a/tool"), root.join("b/alias")).unwrap();
        symlink("ln2", root.join("b/chain")).unwrap();
        symlink("../real/t2", root.join("b/ln2")).unwrap();
        symlink(root.join("real/t2"), root.join("c/again")).unwrap();
        (t, root)
    }

    #[test]
    fn any_split_of_the_work_enumerates_as_one_thread_does() {
        let (_t, root) = split_fixture();
        every_split(&root, false);
        let e = enumerate_split(&root, 2, 1).0;
        let exes: Vec<(String, PathBuf)> = (e.executables.iter())
            .map(|x| {
                (
                    x.name.clone(),
                    x.canonical.strip_prefix(&root).unwrap().into(),
                )
            })
            .collect();
        let pair = |n: &str, p: &str| (n.to_string(), PathBuf::from(p));
        let mut want = vec![
            pair("hard", "a/hard"),
            pair("linked", "real/t1"),
            pair("chain", "real/t2"),
            pair("plain", "b/plain"),
        ];
        want.extend((0..40).map(|i| pair(&format!("many{i:02}"), &format!("c/many{i:02}"))));
        want.push(pair("zeta", "c/zeta"));
        assert_eq!(exes, want);
        let aliases: Vec<(&str, usize)> =
            e.aliases.iter().map(|x| (x.name.as_str(), x.of)).collect();
        assert_eq!(
            aliases,
            [("tool", 0), ("alias", 0), ("ln2", 2), ("again", 2)]
        );
        let skips: Vec<(&str, FileSkipReason)> = (e.skipped_files.iter())
            .map(|s| (s.name.as_str(), s.reason))
            .collect();
        assert_eq!(
            skips,
            [
                ("[", FileSkipReason::InvalidName),
                ("caf\u{fffd}", FileSkipReason::InvalidName),
                ("open", FileSkipReason::WorldWritable),
                ("skipped-one", FileSkipReason::SkipGlob),
                ("tool", FileSkipReason::Shadowed),
            ]
        );
        let dir_skips: Vec<DirSkipReason> = e.skipped_dirs.iter().map(|d| d.reason).collect();
        assert_eq!(
            dir_skips,
            [DirSkipReason::Duplicate, DirSkipReason::Unreadable]
        );
    }

    #[test]
    fn a_link_too_long_to_follow_gives_its_file_to_the_next_name() {
        use std::os::unix::fs::symlink;
        let (_t, root) = split_fixture();
        // A chain the kernel follows (40 links) but the resolver gives up on: that name
        // is skipped as unreadable, and a later name of the same file is examined in its
        // place (not made an alias of another file). Split or not, the same.
        symlink("../real/l1", root.join("c/long")).unwrap();
        for i in 1..40 {
            let to = if i == 39 {
                "t3".to_string()
            } else {
                format!("l{}", i + 1)
            };
            symlink(to, root.join(format!("real/l{i}"))).unwrap();
        }
        fs::write(root.join("real/t3"), "x").unwrap();
        fs::set_permissions(root.join("real/t3"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::hard_link(root.join("real/t3"), root.join("c/same")).unwrap();
        every_split(&root, true);
        let e = enumerate_split(&root, 2, 1).0;
        let same = e.executables.iter().find(|x| x.name == "same").unwrap();
        assert_eq!(same.canonical, root.join("c/same"));
        assert!(e.aliases.iter().all(|a| a.name != "same"));
        let long = e.skipped_files.iter().find(|s| s.name == "long").unwrap();
        assert_eq!(long.reason, FileSkipReason::Unreadable);
    }
}
