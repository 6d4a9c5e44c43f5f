//! File status looked up relative to open directory handles.
//!
//! A warm rescan does little but ask the status of ~1,400 executables and ~1,300 man
//! pages. `stat("/usr/share/man/man1/ls.1.gz")` walks every component of the path on
//! each call; `fstatat(dirfd, "ls.1.gz")` walks one. [`StatAt`] opens each parent
//! directory once (`O_PATH`: no read permission needed, nothing to list) and stats
//! file names against it. Symlinks are followed, as `std::fs::metadata` does, unless asked
//! otherwise ([`StatAt::link_status_in`]; [`StatAt::read_link_in`]: resolving a PATH
//! symlink without walking its whole path twice).
//!
//! Stats are the warm rescan's main cost and each waits on the kernel alone, so
//! [`in_parts`] spreads a list of them over the cores (each thread with its own
//! [`StatAt`]); [`SharedDir`] is one directory's handle that threads use at once.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::fs::Metadata;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

/// What a scan needs of a file's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    /// `st_mode`: type and permission bits.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Device.
    pub dev: u64,
    /// Inode.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: i128,
    /// Status change time, ns since the epoch.
    pub ctime_ns: i128,
}

impl Status {
    /// A regular file (after following symlinks).
    pub fn is_file(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFREG
    }

    /// A directory (after following symlinks).
    pub fn is_dir(&self) -> bool {
        self.mode & libc::S_IFMT == libc::S_IFDIR
    }

    fn from_stat(st: &libc::stat) -> Status {
        Status {
            mode: st.st_mode,
            uid: st.st_uid,
            gid: st.st_gid,
            dev: st.st_dev,
            ino: st.st_ino,
            size: st.st_size as u64,
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
            ctime_ns: i128::from(st.st_ctime) * 1_000_000_000 + i128::from(st.st_ctime_nsec),
        }
    }
}

impl From<&Metadata> for Status {
    fn from(md: &Metadata) -> Status {
        Status {
            mode: md.mode(),
            uid: md.uid(),
            gid: md.gid(),
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
            ctime_ns: i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec()),
        }
    }
}

/// Directory handles opened on demand, one per parent directory asked about.
#[derive(Debug, Default)]
pub struct StatAt {
    /// Each directory asked about, with its handle (`None`: it could not be opened; such
    /// paths are stat'ed by their whole path, so errors read as they always did).
    dirs: Vec<(PathBuf, Option<OwnedFd>)>,
    /// Directory → its index in `dirs`.
    index: HashMap<PathBuf, usize>,
    /// The index of the directory asked about last: files come directory by directory,
    /// so most calls compare one path instead of hashing it.
    last: usize,
}

impl StatAt {
    /// Up to this many directories, a look-up compares paths instead of hashing one.
    const SEARCHED: usize = 16;

    /// No directory opened yet.
    pub fn new() -> StatAt {
        StatAt::default()
    }

    /// The status of `path`, following symlinks.
    pub fn status(&mut self, path: &Path) -> io::Result<Status> {
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return std::fs::metadata(path).map(|m| Status::from(&m));
        };
        if parent.as_os_str().is_empty() {
            return std::fs::metadata(path).map(|m| Status::from(&m));
        }
        self.status_in(parent, name)
    }

    /// The status of `name` in the directory `dir` (opened once), following symlinks.
    pub fn status_in(&mut self, dir: &Path, name: &OsStr) -> io::Result<Status> {
        match self.handle(dir) {
            Some(fd) => stat_in(fd, name, 0),
            None => std::fs::metadata(dir.join(name)).map(|m| Status::from(&m)),
        }
    }

    /// The status of `name` in `dir` itself: a symlink is not followed.
    pub fn link_status_in(&mut self, dir: &Path, name: &OsStr) -> io::Result<Status> {
        match self.handle(dir) {
            Some(fd) => stat_in(fd, name, libc::AT_SYMLINK_NOFOLLOW),
            None => std::fs::symlink_metadata(dir.join(name)).map(|m| Status::from(&m)),
        }
    }

    /// The target of the symlink `name` in `dir` (`EINVAL` when it is not a symlink).
    pub fn read_link_in(&mut self, dir: &Path, name: &OsStr) -> io::Result<PathBuf> {
        match self.handle(dir) {
            Some(fd) => read_link_in(fd, name),
            None => std::fs::read_link(dir.join(name)),
        }
    }

    /// The handle of `dir`, opened on first use; `None` when it could not be opened.
    /// Paths are compared as bytes (the same directory spelt two ways gets two handles,
    /// which is harmless); a few directories are searched in order, more by hash.
    fn handle(&mut self, dir: &Path) -> Option<&OwnedFd> {
        let same = |d: &PathBuf| d.as_os_str().as_bytes() == dir.as_os_str().as_bytes();
        if !self.dirs.get(self.last).is_some_and(|(d, _)| same(d)) {
            let known = if self.dirs.len() <= Self::SEARCHED {
                self.dirs.iter().position(|(d, _)| same(d))
            } else {
                self.index.get(dir).copied()
            };
            self.last = match known {
                Some(i) => i,
                None => {
                    self.dirs.push((dir.to_path_buf(), open_dir(dir).ok()));
                    self.index.insert(dir.to_path_buf(), self.dirs.len() - 1);
                    self.dirs.len() - 1
                }
            };
        }
        self.dirs[self.last].1.as_ref()
    }
}

/// Whether `dir` lies on a file system whose directory times follow its entries (a local
/// one: ext2/3/4, XFS, Btrfs, tmpfs, F2FS, ZFS, overlayfs), so that an unchanged ctime
/// means unchanged entries. Network and FUSE file systems may report times of their own
/// (or none): they, and any file system not named here, answer `false`.
pub fn keeps_directory_times(dir: &Path) -> bool {
    /// `f_type` of the file systems named above (linux/magic.h, zfs).
    const LOCAL: [i64; 7] = [
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0x794C_7630, // overlayfs
    ];
    let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut fs = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: `c` is a NUL-terminated path and `fs` a buffer of the type `statfs` fills;
    // it is read only when the call succeeded.
    if unsafe { libc::statfs(c.as_ptr(), fs.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: filled by the successful call above.
    #[allow(clippy::unnecessary_cast)] // `f_type`'s integer type differs by platform
    let kind = unsafe { fs.assume_init() }.f_type as i64;
    LOCAL.contains(&kind)
}

/// One directory's handle for threads that ask about its files at the same time
/// (a [`StatAt`] belongs to one thread: it opens handles as it goes). Opened on first
/// use; a directory that cannot be opened is asked about by whole paths, so errors read
/// as `std` gives them.
#[derive(Debug)]
pub struct SharedDir {
    dir: PathBuf,
    fd: OnceLock<Option<OwnedFd>>,
}

impl SharedDir {
    /// `dir`, not opened yet.
    pub fn new(dir: PathBuf) -> SharedDir {
        SharedDir {
            dir,
            fd: OnceLock::new(),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The status of `name` in the directory itself: a symlink is not followed.
    pub fn link_status(&self, name: &OsStr) -> io::Result<Status> {
        match self.fd.get_or_init(|| open_dir(&self.dir).ok()) {
            Some(fd) => stat_in(fd, name, libc::AT_SYMLINK_NOFOLLOW),
            None => std::fs::symlink_metadata(self.dir.join(name)).map(|m| Status::from(&m)),
        }
    }
}

/// `f` applied to each of `items` with a per-thread state made by `state` (a
/// [`StatAt`], say), the results in the order of `items`. Up to `threads` threads (the
/// calling one and helpers kept for the process, started on first need) take the items
/// in chunks from a shared counter, so a thread the scheduler starts late (a loaded
/// machine) takes less of the work instead of holding back a fixed share. Each thread
/// beyond the caller needs at least `min_part` items: handing work over costs a wake-up
/// (a thread start, the first time), so a short list runs on the calling thread alone,
/// and so does every item when no helper can be started. A panic in `f` is the
/// caller's panic.
pub fn in_parts<T, S, R>(
    items: &[T],
    threads: usize,
    min_part: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<R>
where
    T: Sync,
    R: Send,
{
    let mut chunks = in_chunks(items, threads, min_part, state, f);
    if chunks.len() == 1 {
        return chunks.pop().unwrap_or_default();
    }
    // Each chunk freed once copied: all of them held until the end doubled the peak.
    let mut out = Vec::with_capacity(items.len());
    chunks.into_iter().for_each(|mut r| out.append(&mut r));
    out
}

/// [`in_parts`]'s results as the chunks the threads made them in, in order: a caller
/// that goes through them once need not have them copied into one vector (fresh pages
/// and a copy of every result, on the calling thread, when they are big).
pub fn in_chunks<T, S, R>(
    items: &[T],
    threads: usize,
    min_part: usize,
    state: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, &T) -> R + Sync,
) -> Vec<Vec<R>>
where
    T: Sync,
    R: Send,
{
    let parts = threads.min(items.len() / min_part.max(1)).max(1);
    if parts == 1 {
        let mut s = state();
        return vec![items.iter().map(|t| f(&mut s, t)).collect()];
    }
    let size = items.len().div_ceil(parts * CHUNKS_PER_THREAD);
    let next = std::sync::atomic::AtomicUsize::new(0);
    // The chunks one thread took, each with its index.
    let take = || {
        let mut s = None;
        let mut done: Chunks<R> = Vec::new();
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let start = i.saturating_mul(size);
            let Some(chunk) = items.get(start..items.len().min(start + size)) else {
                return done;
            };
            if chunk.is_empty() {
                return done;
            }
            let s = s.get_or_insert_with(&state);
            done.push((i, chunk.iter().map(|t| f(s, t)).collect()));
        }
    };
    // One result slot per helper asked; a job no helper took runs on this thread after
    // its own part, and finds no chunk left.
    let slots: Vec<Mutex<Option<std::thread::Result<Chunks<R>>>>> =
        (1..parts).map(|_| Mutex::new(None)).collect();
    let jobs = slots
        .iter()
        .map(|slot| {
            let take = &take;
            Box::new(move || {
                let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(take));
                *lock(slot) = Some(got);
            }) as Box<dyn FnOnce() + Send + '_>
        })
        .collect();
    let mut chunks = lend_while(jobs, take);
    for slot in slots {
        match slot.into_inner().unwrap_or_else(PoisonError::into_inner) {
            Some(Ok(mut theirs)) => chunks.append(&mut theirs),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => {}
        }
    }
    chunks.sort_unstable_by_key(|(i, _)| *i);
    chunks.into_iter().map(|(_, r)| r).collect()
}

/// The CPUs this process may use ([`std::thread::available_parallelism`]), `None` when
/// unknown. Found once per process: std reads the cgroup's CPU quota files on every
/// call, and a scan asks several times (its `--jobs` default, each pool's size).
pub fn cpus() -> Option<usize> {
    static CPUS: OnceLock<Option<usize>> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().ok().map(|n| n.get()))
}

/// `a` and `b` run at the same time, `a` on a helper thread (see [`in_parts`]) and `b`
/// on the calling one; `a` runs on the calling one after `b` when no helper took it
/// meanwhile (none could be started, or all were busy). A panic in either is the
/// caller's panic, once both are over.
pub fn beside<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    let slot = Mutex::new(None);
    let into = &slot;
    let lent: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(a));
        *lock(into) = Some(got);
    });
    let b = lend_while(vec![lent], b);
    let a = lock(&slot).take();
    match a {
        Some(Ok(a)) => (a, b),
        Some(Err(panic)) => std::panic::resume_unwind(panic),
        // `lend_while` runs every job it lends before it returns.
        None => unreachable!("a lent job ran"),
    }
}

/// A job lent to the helpers, its lifetime erased: [`lend_while`] does not return (nor
/// unwind) before each job it lent has run or been taken back.
type Job = Box<dyn FnOnce() + Send + 'static>;

/// Threads that take lent jobs, started when a job finds none idle and then kept for
/// the process: a warm rescan lends work 4–5 times, and each thread start cost
/// ~50–100 µs (clone, a fresh stack's pages, thread-local set-up) and the pages of one
/// more allocator arena.
struct Helpers {
    state: Mutex<HelperState>,
    wake: Condvar,
}

struct HelperState {
    /// Jobs no helper took yet, each with the flag its lender waits on.
    queue: VecDeque<(Job, Arc<Done>)>,
    /// Helpers waiting for a job.
    idle: usize,
    /// Helpers started (or being started).
    started: usize,
}

/// Set once a helper has run a job.
#[derive(Default)]
struct Done {
    flag: Mutex<bool>,
    cv: Condvar,
}

/// Most helpers ever started: [`in_parts`] asks for one per CPU at most, and a job that
/// finds every helper busy runs on its lender anyway.
const MAX_HELPERS: usize = 16;

fn helpers() -> &'static Helpers {
    static HELPERS: OnceLock<Helpers> = OnceLock::new();
    HELPERS.get_or_init(|| Helpers {
        state: Mutex::new(HelperState {
            queue: VecDeque::new(),
            idle: 0,
            started: 0,
        }),
        wake: Condvar::new(),
    })
}

/// Locks `m`; a lock whose holder panicked is still usable (no job panics while
/// holding one: each catches its own panics).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Helpers {
    /// Queues `job`; starts a helper when none is idle for it.
    fn lend(&'static self, job: Job) -> Arc<Done> {
        let done = Arc::new(Done::default());
        let mut st = lock(&self.state);
        st.queue.push_back((job, done.clone()));
        let start = st.queue.len() > st.idle && st.started < MAX_HELPERS;
        st.started += usize::from(start);
        drop(st);
        self.wake.notify_one();
        if start {
            let spawned = std::thread::Builder::new()
                .name("atip-helper".into())
                .spawn(move || self.serve());
            if spawned.is_err() {
                lock(&self.state).started -= 1;
            }
        }
        done
    }

    /// A helper's life: run queued jobs, wait when there are none.
    fn serve(&self) {
        let mut st = lock(&self.state);
        loop {
            if let Some((job, done)) = st.queue.pop_front() {
                drop(st);
                // Jobs catch their own panics (`beside`, `in_parts`).
                job();
                // The job is marked done under the state's lock, which this helper then
                // holds until it counts itself idle (or takes the next job): a lender
                // woken by the mark that lends again at once finds it idle instead of
                // starting another thread.
                st = lock(&self.state);
                *lock(&done.flag) = true;
                done.cv.notify_all();
                continue;
            }
            st.idle += 1;
            st = self.wake.wait(st).unwrap_or_else(PoisonError::into_inner);
            st.idle -= 1;
        }
    }

    /// Takes `done`'s job back if no helper has taken it yet; else waits until the
    /// helper has run it.
    fn reclaim(&self, done: &Arc<Done>) -> Option<Job> {
        let mut st = lock(&self.state);
        if let Some(i) = st.queue.iter().position(|(_, d)| Arc::ptr_eq(d, done)) {
            return st.queue.remove(i).map(|(job, _)| job);
        }
        drop(st);
        let flag = lock(&done.flag);
        drop(
            done.cv
                .wait_while(flag, |ran| !*ran)
                .unwrap_or_else(PoisonError::into_inner),
        );
        None
    }
}

/// Lends `jobs` to the helpers and runs `mine` on the calling thread meanwhile; then
/// runs here each job no helper took, and waits for those a helper is running. A job
/// waited for is running, never queued behind other work, so nested lending cannot
/// deadlock.
fn lend_while<'s, R>(jobs: Vec<Box<dyn FnOnce() + Send + 's>>, mine: impl FnOnce() -> R) -> R {
    /// Takes back or waits for every lent job, also when `mine` panics: the jobs
    /// borrow from the lender's frame.
    struct Reclaim(Vec<Arc<Done>>);
    impl Drop for Reclaim {
        fn drop(&mut self) {
            for done in &self.0 {
                // While `mine` unwinds, a job no helper took is dropped, not run.
                if let Some(job) = helpers().reclaim(done)
                    && !std::thread::panicking()
                {
                    job();
                }
            }
        }
    }
    let h = helpers();
    let lent = jobs
        .into_iter()
        .map(|job| {
            // SAFETY: only the lifetime is changed (same fat-pointer layout). The job
            // borrows from the caller's frame for `'s`; `Reclaim` below runs on return
            // and on unwind, and neither happens before each lent job has either run on
            // a helper to its end or been taken back out of the queue (and run here).
            let job: Job =
                unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + 's>, Job>(job) };
            h.lend(job)
        })
        .collect();
    let reclaim = Reclaim(lent);
    let r = mine();
    drop(reclaim);
    r
}

/// The chunks one thread of [`in_parts`] took, each with its index.
type Chunks<R> = Vec<(usize, Vec<R>)>;

/// How many chunks [`in_parts`] cuts each thread's share of the items into.
const CHUNKS_PER_THREAD: usize = 8;

/// Opens a directory for `*at` calls only.
fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    let c = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: `c` is a valid NUL-terminated path; the returned descriptor is owned.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Calls `f` with `name` NUL-terminated: in a buffer on the stack when it fits (a file
/// name is at most 255 bytes), so a stat costs no allocation.
fn with_c_name<R>(name: &OsStr, f: impl FnOnce(&CStr) -> io::Result<R>) -> io::Result<R> {
    let bytes = name.as_bytes();
    let mut buf = [0u8; 256];
    if bytes.len() < buf.len() {
        buf[..bytes.len()].copy_from_slice(bytes);
        let c = CStr::from_bytes_with_nul(&buf[..=bytes.len()])
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        return f(c);
    }
    f(&CString::new(bytes)?)
}

/// `fstatat(dir, name, flags)`.
fn stat_in(dir: &OwnedFd, name: &OsStr, flags: libc::c_int) -> io::Result<Status> {
    with_c_name(name, |c| {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `dir` is an open descriptor, `c` a valid NUL-terminated name, and `st`
        // a buffer of the right type that fstatat fills on success.
        let rc = unsafe { libc::fstatat(dir.as_raw_fd(), c.as_ptr(), st.as_mut_ptr(), flags) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstatat returned 0, so `st` is initialised.
        let st = unsafe { st.assume_init() };
        Ok(Status::from_stat(&st))
    })
}

/// `readlinkat(dir, name)`, the whole target however long.
fn read_link_in(dir: &OwnedFd, name: &OsStr) -> io::Result<PathBuf> {
    with_c_name(name, |c| {
        let mut buf: Vec<u8> = Vec::with_capacity(256);
        loop {
            // SAFETY: `dir` is an open descriptor, `c` a valid NUL-terminated name, and
            // `buf` has `capacity` writable bytes.
            let n = unsafe {
                libc::readlinkat(
                    dir.as_raw_fd(),
                    c.as_ptr(),
                    buf.as_mut_ptr().cast(),
                    buf.capacity(),
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = n as usize;
            if n < buf.capacity() {
                // SAFETY: readlinkat wrote `n` bytes.
                unsafe { buf.set_len(n) };
                return Ok(PathBuf::from(OsString::from_vec(buf)));
            }
            // Possibly cut short: try again with more room.
            buf.reserve(buf.capacity() * 2);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directory_times_are_trusted_on_local_file_systems_only() {
        // The test's temporary directory is on a local file system in CI and here;
        // procfs invents its times.
        let tmp = tempfile::tempdir().unwrap();
        assert!(keeps_directory_times(tmp.path()));
        assert!(!keeps_directory_times(Path::new("/proc/self")));
        assert!(!keeps_directory_times(Path::new("/no/such/dir")));
    }

    #[test]
    fn agrees_with_std_and_follows_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a");
        std::fs::write(&file, b"hello").unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let mut at = StatAt::new();
        let direct = Status::from(&std::fs::metadata(&file).unwrap());
        assert_eq!(at.status(&file).unwrap(), direct);
        assert_eq!(at.status(&dir.path().join("link")).unwrap(), direct);
        assert_eq!(at.status_in(dir.path(), OsStr::new("a")).unwrap(), direct);
        assert!(direct.is_file() && direct.size == 5);
        assert!(at.status(&dir.path().join("sub")).unwrap().is_dir());
        let missing = at.status(&dir.path().join("nope")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        // A parent that is not a directory: the same error std gives.
        let under_file = at.status(&file.join("x")).unwrap_err();
        assert_eq!(
            under_file.raw_os_error(),
            std::fs::metadata(file.join("x"))
                .unwrap_err()
                .raw_os_error()
        );
        // Changes show: nothing is cached but the directory handle.
        std::fs::write(&file, b"longer text").unwrap();
        assert_eq!(at.status(&file).unwrap().size, 11);
    }

    /// The tests that count or block helpers run one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    #[test]
    fn parts_keep_order_and_run_on_their_own_threads() {
        let _serial = lock(&SERIAL);
        let items: Vec<u32> = (0..1000).collect();
        let me = std::thread::current().id();
        for (threads, min_part, want) in
            [(1, 1, 1), (2, 1, 2), (3, 10, 3), (2, 600, 1), (4, 400, 2)]
        {
            // Each thread's state is made when it takes its first chunk, and waits there
            // for the other threads: each of them must take a part of the work.
            let met = (Mutex::new(0usize), Condvar::new());
            let state = || {
                let (count, cv) = &met;
                let mut n = count.lock().unwrap();
                *n += 1;
                cv.notify_all();
                let wait = std::time::Duration::from_secs(20);
                drop(cv.wait_timeout_while(n, wait, |n| *n < want).unwrap());
                std::thread::current().id()
            };
            let got = in_parts(&items, threads, min_part, state, |id, x| (*id, x * 2));
            let doubled: Vec<u32> = got.iter().map(|(_, x)| *x).collect();
            assert_eq!(doubled, items.iter().map(|x| x * 2).collect::<Vec<_>>());
            let ids: std::collections::HashSet<_> = got.iter().map(|(id, _)| *id).collect();
            assert!(ids.contains(&me), "the calling thread takes its part");
            assert_eq!(ids.len(), want, "{threads} threads, parts of {min_part}");
            assert_eq!(*met.0.lock().unwrap(), want, "one state per thread");
        }
        assert!(in_parts(&[] as &[u32], 2, 1, || (), |_, x| *x).is_empty());
        let few: Vec<u32> = (0..5).collect();
        assert_eq!(in_parts(&few, 8, 1, || (), |_, x| *x), few);
    }

    #[test]
    fn chunks_hold_the_results_in_order() {
        let _serial = lock(&SERIAL);
        let items: Vec<u32> = (0..1000).collect();
        let doubled: Vec<u32> = items.iter().map(|x| x * 2).collect();
        // Split (two threads, parts of at least 100): several chunks, in order.
        let chunks = in_chunks(&items, 2, 100, || (), |_, x| x * 2);
        assert!(chunks.len() > 1);
        assert_eq!(chunks.concat(), doubled);
        assert_eq!(in_parts(&items, 2, 100, || (), |_, x| x * 2), doubled);
        // On the calling thread alone: one chunk of everything.
        let one = in_chunks(&items, 1, 100, || (), |_, x| x * 2);
        assert_eq!(one, vec![doubled]);
        let none = in_chunks(&[] as &[u32], 2, 1, || (), |_, x| *x);
        assert!(none.concat().is_empty());
    }

    /// Two threads' parts, each thread's state made once both have met: the names of
    /// the threads that took a part, but the caller's.
    fn two_parts() -> Vec<Option<String>> {
        let items: Vec<u32> = (0..100).collect();
        let met = std::sync::Barrier::new(2);
        let me = std::thread::current().id();
        let state = || {
            met.wait();
            let t = std::thread::current();
            (t.id() == me, t.name().map(str::to_owned))
        };
        let got = in_parts(&items, 2, 1, state, |t, x| (t.clone(), *x));
        assert_eq!(got.iter().map(|(_, x)| *x).collect::<Vec<_>>(), items);
        got.into_iter()
            .filter(|((mine, _), _)| !mine)
            .map(|((_, name), _)| name)
            .collect()
    }

    #[test]
    fn helpers_are_started_once_and_reused() {
        let _serial = lock(&SERIAL);
        assert!(
            two_parts()
                .iter()
                .all(|n| n.as_deref() == Some("atip-helper"))
        );
        // Each later call finds an idle helper: no thread is started again.
        let started = lock(&helpers().state).started;
        for _ in 0..5 {
            let names = two_parts();
            assert!(!names.is_empty() && names.iter().all(|n| n.as_deref() == Some("atip-helper")));
        }
        assert_eq!(lock(&helpers().state).started, started, "no new thread");
        assert_eq!(
            cpus(),
            std::thread::available_parallelism().ok().map(|n| n.get())
        );
    }

    #[test]
    fn a_helper_that_just_ran_a_job_is_found_idle_by_the_next_lend() {
        let _serial = lock(&SERIAL);
        two_parts();
        let started = lock(&helpers().state).started;
        for _ in 0..50 {
            // `a` runs on a helper (`b` waits until it has begun); the lender, woken
            // when `a` is done, lends again at once.
            let begun = (Mutex::new(false), Condvar::new());
            let a = || {
                *lock(&begun.0) = true;
                begun.1.notify_all();
            };
            let b = || {
                let wait = std::time::Duration::from_secs(10);
                let g = begun.1.wait_timeout_while(lock(&begun.0), wait, |b| !*b);
                assert!(
                    *g.unwrap_or_else(PoisonError::into_inner).0,
                    "a helper took `a`"
                );
            };
            beside(a, b);
            beside(|| (), || ());
        }
        assert_eq!(lock(&helpers().state).started, started, "no new thread");
    }

    #[test]
    fn lending_nested_in_lent_work_finishes() {
        let _serial = lock(&SERIAL);
        // Every part lends parts again: helpers busy with outer parts leave inner ones
        // queued, which their lender then takes back and runs itself.
        let outer: Vec<u64> = (0..64).collect();
        let sums = in_parts(
            &outer,
            4,
            1,
            || (),
            |_, &o| {
                let inner: Vec<u64> = (0..64).collect();
                in_parts(&inner, 4, 1, || (), |_, &i| o * i)
                    .iter()
                    .sum::<u64>()
            },
        );
        let want: Vec<u64> = outer.iter().map(|o| o * (0..64).sum::<u64>()).collect();
        assert_eq!(sums, want);
    }

    #[test]
    fn beside_runs_both_at_once_and_passes_panics_on() {
        let _serial = lock(&SERIAL);
        let met = std::sync::Barrier::new(2);
        let me = std::thread::current().id();
        let (a, b) = beside(
            || {
                met.wait();
                std::thread::current().id()
            },
            || {
                met.wait();
                7
            },
        );
        assert!(a != me && b == 7, "`a` ran on a helper while `b` ran here");
        // `a`'s panic is the caller's, after `b`.
        let b_ran = std::sync::atomic::AtomicBool::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            beside(
                || panic!("a failed"),
                || b_ran.store(true, std::sync::atomic::Ordering::SeqCst),
            )
        }));
        assert!(caught.is_err() && b_ran.load(std::sync::atomic::Ordering::SeqCst));
        // `b`'s panic waits for `a` to end: `a` borrows from the caller's frame.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let a_done = std::sync::atomic::AtomicBool::new(false);
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            beside(
                || {
                    // Runs on a helper (`b` below waits for it to start).
                    tx.send(()).unwrap();
                    met.wait();
                    a_done.store(true, std::sync::atomic::Ordering::SeqCst);
                },
                || {
                    rx.recv().unwrap();
                    met.wait();
                    panic!("b failed")
                },
            )
        }));
        assert!(caught.is_err() && a_done.load(std::sync::atomic::Ordering::SeqCst));
    }

    #[test]
    fn a_shared_directory_answers_from_several_threads() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"abc").unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("l")).unwrap();
        let shared = SharedDir::new(dir.path().to_path_buf());
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    assert_eq!(shared.link_status(OsStr::new("f")).unwrap().size, 3);
                    let l = shared.link_status(OsStr::new("l")).unwrap();
                    assert_eq!(l.mode & libc::S_IFMT, libc::S_IFLNK);
                });
            }
        });
        assert_eq!(
            shared.link_status(OsStr::new("nope")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let gone = SharedDir::new(dir.path().join("gone"));
        assert_eq!(
            gone.link_status(OsStr::new("x")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(gone.path(), dir.path().join("gone"));
    }

    #[test]
    fn links_are_read_in_place_and_directories_alternate() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("f"), b"1").unwrap();
        std::fs::write(b.join("f"), b"22").unwrap();
        let long = "t".repeat(300);
        std::os::unix::fs::symlink(&long, a.join("long")).unwrap();
        std::os::unix::fs::symlink("../a/f", b.join("rel")).unwrap();
        let mut at = StatAt::new();
        // Alternating directories: each answer is its own directory's, whether few
        // directories are known (searched) or many (hashed).
        for round in 0..2 {
            for _ in 0..3 {
                assert_eq!(at.status_in(&a, OsStr::new("f")).unwrap().size, 1);
                assert_eq!(at.status_in(&b, OsStr::new("f")).unwrap().size, 2);
            }
            if round == 0 {
                for i in 0..=StatAt::SEARCHED {
                    let d = dir.path().join(format!("d{i}"));
                    std::fs::create_dir(&d).unwrap();
                    assert!(at.status_in(&d, OsStr::new("f")).is_err());
                }
            }
        }
        assert_eq!(at.status_in(&b, OsStr::new("rel")).unwrap().size, 1);
        let link = at.link_status_in(&b, OsStr::new("rel")).unwrap();
        assert_eq!(link.mode & libc::S_IFMT, libc::S_IFLNK);
        assert!(!link.is_file());
        assert_eq!(
            at.read_link_in(&b, OsStr::new("rel")).unwrap(),
            PathBuf::from("../a/f")
        );
        // A target longer than the first buffer is read whole.
        assert_eq!(
            at.read_link_in(&a, OsStr::new("long")).unwrap(),
            PathBuf::from(&long)
        );
        let not_link = at.read_link_in(&a, OsStr::new("f")).unwrap_err();
        assert_eq!(not_link.raw_os_error(), Some(libc::EINVAL));
        let missing = at.read_link_in(&a, OsStr::new("nope")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        // A directory that cannot be opened answers as std does.
        let gone = dir.path().join("gone");
        assert_eq!(
            at.status_in(&gone, OsStr::new("x")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        assert_eq!(
            at.read_link_in(&gone, OsStr::new("x")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}
