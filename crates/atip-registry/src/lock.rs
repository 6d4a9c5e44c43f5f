//! The advisory writer lock: `registry.lock` beside `registry.json`.
//!
//! Writers take it exclusively (std `File::try_lock`) before they re-read, merge and
//! replace the registry, so concurrent scans serialize. The first attempt never blocks;
//! when another run holds the lock this says so once on stderr and retries every 50 ms
//! up to a limit, then fails with [`RegistryError::Locked`] (exit 75). On a file system
//! that cannot lock (some network mounts) the guard is returned unlocked and the write
//! goes ahead, because atomic renames still keep readers safe.
//!
//! Must not be taken by readers: `registry.json` is always replaced whole, so reads are
//! lock-free.

use super::{LOCK_FILE, RegistryError};
use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How often a waiting writer retries.
const RETRY_EVERY: Duration = Duration::from_millis(50);

/// Holds the writer lock until dropped (closing the file releases it).
#[derive(Debug)]
pub struct RegistryLock {
    file: File,
    path: PathBuf,
    locked: bool,
}

impl RegistryLock {
    /// Takes the lock in `data_dir` (which must exist), waiting at most `timeout`.
    /// When `announce` is set, a wait is reported once, as a note to the `log` facade
    /// (the CLI prints it through its printer).
    pub fn acquire(
        data_dir: &Path,
        timeout: Duration,
        announce: bool,
    ) -> Result<RegistryLock, RegistryError> {
        let path = data_dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .map_err(|source| RegistryError::Write {
                path: path.clone(),
                source,
            })?;
        let start = Instant::now();
        let mut said = false;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    return Ok(RegistryLock {
                        file,
                        path,
                        locked: true,
                    });
                }
                Err(TryLockError::WouldBlock) => {}
                Err(TryLockError::Error(e)) if cannot_lock(&e) => {
                    return Ok(RegistryLock {
                        file,
                        path,
                        locked: false,
                    });
                }
                Err(TryLockError::Error(source)) => {
                    return Err(RegistryError::Write { path, source });
                }
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(RegistryError::Locked { path, waited });
            }
            if announce && !said {
                log::info!(
                    "another atip run holds the registry lock {}; waiting up to {} for it",
                    path.display(),
                    crate::units::format_duration(timeout)
                );
                said = true;
            }
            std::thread::sleep(RETRY_EVERY.min(timeout - waited));
        }
    }

    /// Whether the lock is really held (false on file systems without locking).
    pub fn is_locked(&self) -> bool {
        self.locked
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RegistryLock {
    fn drop(&mut self) {
        if self.locked {
            let _ = self.file.unlock();
        }
    }
}

/// Errors meaning "this file system has no advisory locks", not "something broke".
fn cannot_lock(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported
        || matches!(
            e.raw_os_error(),
            Some(libc::ENOLCK) | Some(libc::EOPNOTSUPP) | Some(libc::ENOSYS)
        )
}
