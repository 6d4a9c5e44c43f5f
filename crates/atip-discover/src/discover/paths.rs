//! PATH enumeration and path safety: which directories are scanned, which files in them
//! are executables the current user may run, and which name each executable answers to.
//!
//! Owns the rules a shell uses to resolve a name (first executable occurrence in PATH
//! order) and the safety rules of the scan (no `.`, relative, missing, world-writable or
//! foreign-owned directories; no world-writable files). Reads directories and `stat`s
//! files; must not read file contents or run anything.

use crate::statat::{StatAt, Status, in_chunks, in_parts};
use serde::Serialize;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
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

impl From<&ArchivedFingerprint> for Fingerprint {
    fn from(a: &ArchivedFingerprint) -> Fingerprint {
        Fingerprint {
            dev: a.dev.to_native(),
            ino: a.ino.to_native(),
            size: a.size.to_native(),
            mtime_ns: a.mtime_ns.to_native(),
            ctime_ns: a.ctime_ns.to_native(),
        }
    }
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
    /// Its status when the scan decided to scan it, before listing it.
    pub status: Fingerprint,
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
    /// The file `path` resolves to when it is a symlink (found by the walk or after
    /// it); `None` for a file, which is its own canonical path: a copy of each path
    /// cost a warm rescan an allocation per executable.
    resolved: Option<PathBuf>,
    /// `stat` of the resolved file.
    pub fingerprint: Fingerprint,
    /// Owner and mode (`st_mode`) of the resolved file, from the same `stat`.
    pub owner_mode: (u32, u32),
}

impl Executable {
    /// The file with every symlink resolved; the cache key.
    pub fn canonical(&self) -> &Path {
        self.resolved.as_deref().unwrap_or(&self.path)
    }
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
    /// How each of [`Enumeration::dirs`] was listed, in the same order.
    pub listed: Vec<Listed>,
}

/// A directory entry that could be run: its name and whether it is a symlink.
pub type DirName = (OsString, bool);

/// Directory entries packed for keeping: each name's bytes followed by a NUL (no file
/// name holds one), and per entry whether it is a symlink. One buffer instead of an
/// allocation per name: a scan holds the copy from its listing to its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PackedNames {
    /// The names, each ended by a NUL.
    pub bytes: Vec<u8>,
    /// Whether each is a symlink.
    pub links: Vec<bool>,
}

impl PackedNames {
    /// `entries`, packed.
    pub fn pack(entries: &[DirName]) -> PackedNames {
        let mut bytes = Vec::with_capacity(entries.iter().map(|e| e.0.len() + 1).sum());
        for (name, _) in entries {
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(0);
        }
        let links = entries.iter().map(|e| e.1).collect();
        PackedNames { bytes, links }
    }

    /// The entries of packed `bytes` and `links` (`None` when they do not match: not
    /// one NUL-ended name per link).
    pub fn unpack(
        bytes: &[u8],
        links: impl ExactSizeIterator<Item = bool>,
    ) -> Option<Vec<DirName>> {
        let names = bytes.strip_suffix(&[0]).map(|b| b.split(|&c| c == 0));
        let count = links.len();
        let out: Vec<DirName> = match names {
            Some(names) => names
                .zip(links)
                .map(|(n, link)| (OsString::from_vec(n.to_vec()), link))
                .collect(),
            None => Vec::new(),
        };
        let whole = out.len() == count && (count > 0 || bytes.is_empty());
        let every_name = out.len() == bytes.iter().filter(|&&c| c == 0).count();
        (whole && every_name).then_some(out)
    }
}

/// How a scanned directory's entries were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listed {
    /// As a previous scan read them ([`Listings::remembered`]): the directory's status
    /// is the one they were read under.
    Remembered,
    /// Read now; with a copy of them when a later scan may use it (see
    /// [`Listings::rememberable`]).
    Read(Option<PackedNames>),
}

/// Directory listings a previous scan kept, and when they may be kept.
///
/// Listing a big directory is a warm rescan's second cost after the stats (ext4 sorts a
/// hashed directory's names for each listing: ~0.5 ms per 1,000 entries). Adding,
/// removing or renaming an entry changes the directory's ctime, which no user can set,
/// so a listing read under a status (device, inode, size, mtime and ctime in ns) holds
/// while the directory still has that status. Two limits keep that sound:
/// - a listing is kept only when the directory's ctime was at least [`CALM_NS`] older
///   than the start of the scan that read it: a change made after that scan's stat is
///   stamped later than it (the kernel's clock is coarse, but by milliseconds, not a
///   second), so it cannot leave the ctime as recorded;
/// - only on file systems whose directory times follow their entries
///   ([`atip_base::statat::keeps_directory_times`]): not network or FUSE ones, which
///   may report times of their own.
pub struct Listings<'a> {
    /// The entries a previous scan kept for a directory, when its status is still the
    /// one they were read under.
    pub remembered: &'a dyn Fn(&ScanDir) -> Option<Vec<DirName>>,
    /// The scan's start, in ns since the epoch (taken before any directory's stat).
    pub now_ns: i128,
}

/// The current time in ns since the epoch ([`Listings::now_ns`]).
pub fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

/// How long a directory must have been unchanged (ctime) before a listing of it is kept.
pub const CALM_NS: i128 = 1_000_000_000;

impl Listings<'_> {
    /// No listing remembered, none kept (for tests of the walk alone).
    #[cfg(test)]
    pub fn none() -> Listings<'static> {
        Listings {
            remembered: &|_| None,
            now_ns: i128::MIN,
        }
    }

    /// Whether a listing of `dir` read now may be used by a later scan.
    pub fn rememberable(&self, dir: &ScanDir) -> bool {
        dir.status.ctime_ns < self.now_ns.saturating_sub(CALM_NS)
            && atip_base::statat::keeps_directory_times(&dir.canonical)
    }
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
        match choose_dir(spec, &given, me, &dirs) {
            Ok((canonical, status)) => dirs.push(ScanDir {
                given,
                canonical,
                status,
            }),
            Err((reason, detail)) => skipped.push(DirSkip {
                path: given.display().to_string(),
                reason,
                detail,
            }),
        }
    }
    (dirs, skipped)
}

/// One PATH entry (`given`, from `spec`): its canonical path and status when it is
/// scanned after those `chosen` before it, else why not.
fn choose_dir(
    spec: &DirEntrySpec,
    given: &Path,
    me: &Identity,
    chosen: &[ScanDir],
) -> Result<(PathBuf, Fingerprint), (DirSkipReason, String)> {
    if spec.path.is_empty() {
        let detail = "an empty PATH entry means the current directory";
        return Err((DirSkipReason::Empty, detail.into()));
    }
    if !given.is_absolute() {
        let detail = "relative entries depend on the working directory";
        return Err((DirSkipReason::Relative, detail.into()));
    }
    let missing = |e: std::io::Error| (DirSkipReason::Missing, e.to_string());
    let canonical = fs::canonicalize(given).map_err(missing)?;
    let md = fs::metadata(&canonical).map_err(missing)?;
    if !md.is_dir() {
        return Err((DirSkipReason::NotADirectory, String::new()));
    }
    if md.mode() & 0o002 != 0 {
        let mode = md.mode() & 0o7777;
        let detail = format!("mode {mode:o}: anyone may add programs here");
        return Err((DirSkipReason::WorldWritable, detail));
    }
    if !spec.allowed && md.uid() != 0 && md.uid() != me.uid {
        let detail = format!(
            "owned by uid {}; pass --allow-dir {} to trust it",
            md.uid(),
            given.display()
        );
        return Err((DirSkipReason::ForeignOwner, detail));
    }
    if let Some(first) = chosen.iter().find(|d| d.canonical == canonical) {
        let detail = format!(
            "same directory as {} ({})",
            first.given.display(),
            canonical.display()
        );
        return Err((DirSkipReason::Duplicate, detail));
    }
    Ok((canonical, Fingerprint::of(&md)))
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
///
/// A directory is listed again unless `listings` remembers it.
pub(crate) fn enumerate(
    dirs: Vec<ScanDir>,
    skipped_dirs: Vec<DirSkip>,
    me: &Identity,
    skip: &globset::GlobSet,
    threads: usize,
    listings: &Listings,
) -> Enumeration {
    let walk = WalkSettings {
        me,
        skip,
        listings,
        min_part: MIN_PART,
    };
    enumerate_in_parts(dirs, skipped_dirs, &walk, threads).0
}

/// What [`enumerate`] is given besides the directories.
struct WalkSettings<'a> {
    me: &'a Identity,
    skip: &'a globset::GlobSet,
    listings: &'a Listings<'a>,
    /// Entries per thread at least (see [`MIN_PART`]).
    min_part: usize,
}

/// [`enumerate`], with parts of at least `min_part` entries per thread; `true` when a
/// link that could not be followed had the walk done again on one thread.
fn enumerate_in_parts(
    dirs: Vec<ScanDir>,
    skipped_dirs: Vec<DirSkip>,
    settings: &WalkSettings,
    threads: usize,
) -> (Enumeration, bool) {
    let WalkSettings {
        me, skip, min_part, ..
    } = *settings;
    let given_skips = skipped_dirs.len();
    let retry = (threads > 1).then(|| dirs.clone());
    let mut out = Enumeration {
        skipped_dirs,
        ..Enumeration::default()
    };
    let (kept, entries, listed) = list_dirs(dirs, &mut out.skipped_dirs, settings.listings);
    // Each entry's status, when it is a file this user may run (a dangling symlink or
    // a vanished file is not: a shell would not run it either); in the chunks the
    // threads made, gone through once (not copied into one vector first).
    let runnable = in_chunks(&entries, threads, min_part, StatAt::new, |stat, e| {
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
    for (e, st) in entries.iter().zip(runnable.into_iter().flatten()) {
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
        let again = enumerate_in_parts(dirs, skipped_dirs, settings, 1);
        return (again.0, true);
    }
    out.dirs = kept;
    out.listed = listed;
    (out, false)
}

/// Lists `dirs` in order (or takes what `listings` remembers of them): those listed,
/// each one's entries (with its index among them), and how each was listed; an
/// unreadable one goes to `skipped`.
fn list_dirs(
    dirs: Vec<ScanDir>,
    skipped: &mut Vec<DirSkip>,
    listings: &Listings,
) -> (Vec<ScanDir>, Vec<Entry>, Vec<Listed>) {
    let mut kept = Vec::new();
    let mut entries = Vec::new();
    let mut how = Vec::new();
    for dir in dirs {
        let found = match (listings.remembered)(&dir) {
            Some(names) => Ok((names, Listed::Remembered)),
            None => dir_entries(&dir.canonical).map(|names| {
                let copy = listings
                    .rememberable(&dir)
                    .then(|| PackedNames::pack(&names));
                (names, Listed::Read(copy))
            }),
        };
        match found {
            Ok((listed, listed_how)) => {
                let d = kept.len();
                let listed = listed.into_iter().map(|(name, is_link)| Entry {
                    dir: d,
                    name,
                    is_link,
                });
                entries.extend(listed);
                kept.push(dir);
                how.push(listed_how);
            }
            Err(e) => skipped.push(DirSkip {
                path: dir.given.display().to_string(),
                reason: DirSkipReason::Unreadable,
                detail: e.to_string(),
            }),
        }
    }
    (kept, entries, how)
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
            Ok(c) => exes[i].resolved = Some(c),
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
    /// Each name met so far (borrowed from its entry: no copy per name), with the
    /// index in `dirs` of the directory the shell runs it from. (foldhash, like the
    /// inodes: two look-ups per executable, and std's SipHash showed in a warm rescan's
    /// profile; PATH names are not an attack surface for a map that lives one scan.)
    names: foldhash::HashMap<&'a str, usize>,
    /// Each file met so far (device, inode), with its index in `out.executables`.
    inodes: foldhash::HashMap<(u64, u64), usize>,
    links: Links,
}

impl<'a> Walk<'a> {
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
    fn entry(&mut self, e: &'a Entry, md: &Status) {
        let dirs = self.dirs;
        let path = join_name(&dirs[e.dir].canonical, &e.name);
        let Some(name) = e.name.to_str() else {
            let shown = e.name.to_string_lossy().into_owned();
            let detail = "the name is not UTF-8".into();
            return self.skip_file(shown, path, FileSkipReason::InvalidName, detail);
        };
        if let Some(&first) = self.names.get(name) {
            let first = dirs[first].canonical.join(name);
            let detail = format!("the shell runs {}", first.display());
            return self.skip_file(name.into(), path, FileSkipReason::Shadowed, detail);
        }
        self.names.insert(name, e.dir);
        if let Some((reason, detail)) = self.refusal(name, md) {
            return self.skip_file(name.into(), path, reason, detail);
        }
        let name = name.to_owned();
        let fingerprint = Fingerprint::of_status(md);
        let inode = (fingerprint.dev, fingerprint.ino);
        if let Some(&of) = self.inodes.get(&inode) {
            self.out.aliases.push(Alias { name, path, of });
            return;
        }
        let index = self.out.executables.len();
        let resolved = match &mut self.links {
            _ if !e.is_link => None,
            Links::Now(links, stat) => match links.resolve(&path, stat) {
                Ok(c) => Some(c),
                // Not recorded as the file's first name: a later name of the same
                // file is examined in its place.
                Err(e) => {
                    return self.skip_file(name, path, FileSkipReason::Unreadable, e.to_string());
                }
            },
            Links::Later(wanted) => {
                wanted.push(index);
                None
            }
        };
        self.inodes.insert(inode, index);
        self.out.executables.push(Executable {
            name,
            path,
            resolved,
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

/// `dir/name` (`name` a file name), allocated once: `Path::join` copies `dir`, then
/// grows the copy for the name (an allocation and a reallocation per entry of a walk).
fn join_name(dir: &Path, name: &OsStr) -> PathBuf {
    let mut path = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
    path.push(dir);
    path.push(name);
    path
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
    fn a_name_joins_its_directory_as_path_join_does() {
        for (dir, name) in [
            ("/usr/bin", "ls"),
            ("/", "sh"),
            ("/opt/a b", "x.y+z"),
            ("/d", "n\u{e9}"),
        ] {
            let (dir, name) = (Path::new(dir), OsStr::new(name));
            let joined = join_name(dir, name);
            assert_eq!(joined, dir.join(name));
            // Not grown after its first allocation.
            let first = PathBuf::with_capacity(dir.as_os_str().len() + 1 + name.len());
            assert_eq!(joined.capacity(), first.capacity());
        }
        let odd = OsString::from_vec(vec![b'x', 0xff]);
        assert_eq!(join_name(Path::new("/b"), &odd), Path::new("/b").join(&odd));
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
        let none = Listings::none();
        let e = enumerate(dirs, skipped, &me, &globset::GlobSet::empty(), 1, &none);
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

    /// The entries a scan read of the directories it listed (its copies).
    fn copies(e: &Enumeration) -> Vec<Option<Vec<(OsString, bool)>>> {
        e.listed
            .iter()
            .map(|l| match l {
                Listed::Read(copy) => copy
                    .as_ref()
                    .map(|c| PackedNames::unpack(&c.bytes, c.links.iter().copied()).unwrap()),
                Listed::Remembered => None,
            })
            .collect()
    }

    #[test]
    fn packed_names_unpack_to_what_was_packed_and_refuse_a_mismatch() {
        let names: Vec<DirName> = vec![
            (OsString::from("a"), false),
            (OsString::from_vec(vec![b'x', 0xff]), true),
            (OsString::from("long-name.sh"), false),
        ];
        let p = PackedNames::pack(&names);
        assert_eq!(p.bytes, b"a\0x\xff\0long-name.sh\0");
        let back = PackedNames::unpack(&p.bytes, p.links.iter().copied());
        assert_eq!(back.as_ref(), Some(&names));
        let none = PackedNames::pack(&[]);
        assert_eq!(
            PackedNames::unpack(&none.bytes, none.links.iter().copied()),
            Some(vec![])
        );
        // A link flag too many or too few, or an unended name: not a listing.
        assert_eq!(PackedNames::unpack(&p.bytes, [false; 2].into_iter()), None);
        assert_eq!(PackedNames::unpack(&p.bytes, [false; 4].into_iter()), None);
        assert_eq!(PackedNames::unpack(b"a\0b", [false; 2].into_iter()), None);
        assert_eq!(PackedNames::unpack(b"", [false; 1].into_iter()), None);
    }

    #[test]
    fn a_listing_is_remembered_only_while_its_directory_is_unchanged() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("bin");
        fs::create_dir(&dir).unwrap();
        let add = |name: &str| {
            let p = dir.join(name);
            fs::write(&p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        };
        add("one");
        let me = Identity::current();
        let specs = [spec(dir.to_str().unwrap())];
        let names = |e: &Enumeration| -> Vec<String> {
            e.executables.iter().map(|x| x.name.clone()).collect()
        };
        let now_ns = |later_s: i128| {
            let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
            t.unwrap().as_nanos() as i128 + later_s * 1_000_000_000
        };
        let run = |listings: &Listings| {
            let (dirs, skipped) = resolve_dirs(&specs, &me);
            enumerate(dirs, skipped, &me, &globset::GlobSet::empty(), 1, listings)
        };
        // Changed just now: read, and not kept (a change within the clock's grain could
        // leave its ctime as it is).
        let fresh = run(&Listings {
            remembered: &|_| None,
            now_ns: now_ns(0),
        });
        assert_eq!(fresh.listed, vec![Listed::Read(None)]);
        // Calm (as seen from two seconds on): read, and a copy kept.
        let calm = run(&Listings {
            remembered: &|_| None,
            now_ns: now_ns(2),
        });
        let kept = copies(&calm)
            .pop()
            .flatten()
            .expect("a copy of the listing");
        assert_eq!(kept, vec![(OsString::from("one"), false)]);
        let status = calm.dirs[0].status;
        // The copy, given while the directory keeps that status, is used as the listing:
        // a name only the copy holds is enumerated (it was not listed again).
        let mut stale = kept.clone();
        stale.push((OsString::from("two"), false));
        let memo = |d: &ScanDir| (d.status == status).then(|| stale.clone());
        let later = Listings {
            remembered: &memo,
            now_ns: now_ns(2),
        };
        let remembered = run(&later);
        assert_eq!(remembered.listed, vec![Listed::Remembered]);
        // ("two" is not a file: its stat fails, so it is left out like a vanished file.)
        assert_eq!(names(&remembered), vec!["one"]);
        // A new entry changes the directory's status: it is listed again.
        add("three");
        let relisted = run(&later);
        assert!(matches!(relisted.listed[0], Listed::Read(Some(_))));
        assert_eq!(names(&relisted), vec!["one", "three"]);
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
        let settings = WalkSettings {
            me: &me,
            skip: &skip_glob(),
            listings: &Listings::none(),
            min_part,
        };
        let e = enumerate_in_parts(scan_dirs, skipped, &settings, threads);
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
                    x.canonical().strip_prefix(&root).unwrap().into(),
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
        assert_eq!(same.canonical(), root.join("c/same"));
        assert!(e.aliases.iter().all(|a| a.name != "same"));
        let long = e.skipped_files.iter().find(|s| s.name == "long").unwrap();
        assert_eq!(long.reason, FileSkipReason::Unreadable);
    }
}
