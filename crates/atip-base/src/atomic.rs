//! The one way atip replaces a file: write a temp file in the target's directory, set
//! its mode, fsync it, rename it over the target, fsync the directory.
//!
//! A reader therefore sees the old file or the new one, never half of one, and after a
//! crash the name holds one of the two. A failure leaves the old file untouched and
//! removes the temp file. Every writer in atip (registry, lint `--fix`, export `--out`,
//! MCP import and tool-list cache, infer and scan caches) goes through [`write_atomic`]
//! or, when it streams or batches, through its parts [`temp_file`] and [`persist`].
//!
//! Errors are values ([`WriteError`]), never panics; the CLI reports them as
//! `file_write_failed` (exit 73) unless the caller has a more precise code.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Prefix of every temp file atip writes; a file with it is the leftover of a killed
/// writer, which the registry's next commit removes.
pub const TEMP_PREFIX: &str = ".atip-tmp-";

/// How a file is written: its permission bits and whether it must survive a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Permission bits of the new file (tempfile would create it 0600).
    pub mode: u32,
    /// fsync the file before the rename and the directory after it. Off only for caches,
    /// where a lost file after a crash just means a cold start.
    pub durable: bool,
}

impl Options {
    /// World-readable and durable: registry, metadata, exports, fixed documents.
    pub const SHARED: Options = Options {
        mode: 0o644,
        durable: true,
    };
    /// Owner-only and durable: configuration that may hold secrets (MCP client config).
    pub const PRIVATE: Options = Options {
        mode: 0o600,
        durable: true,
    };
    /// Readable, atomic but not fsynced: caches that are rebuilt when lost.
    pub const CACHE: Options = Options {
        mode: 0o644,
        durable: false,
    };
}

/// A file could not be written; the old file, if any, is untouched.
#[derive(Debug, thiserror::Error)]
#[error("failed to write {}: {source}", path.display())]
pub struct WriteError {
    /// The target file (or the directory being synced).
    pub path: PathBuf,
    /// Cause.
    #[source]
    pub source: std::io::Error,
}

impl WriteError {
    fn at(path: &Path) -> impl Fn(std::io::Error) -> WriteError + '_ {
        move |source| WriteError {
            path: path.to_path_buf(),
            source,
        }
    }

    /// What the user can do about it, from the kind of I/O error.
    pub(crate) fn advice(&self) -> &'static str {
        use std::io::ErrorKind::*;
        match self.source.kind() {
            StorageFull | QuotaExceeded | FileTooLarge => {
                "the disk or quota is full; free some space and run again"
            }
            ReadOnlyFilesystem => "the file system is read-only; write somewhere else",
            PermissionDenied => "the directory is not writable by you; write somewhere else",
            _ => "check that the directory exists and is writable",
        }
    }
}

impl From<WriteError> for crate::output::AtipError {
    /// `file_write_failed` (exit 73) with the path in `details.path`.
    fn from(e: WriteError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        AtipError::new(ErrorCode::FileWriteFailed, e.to_string())
            .hint(e.advice())
            .details(serde_json::json!({ "path": e.path.display().to_string() }))
    }
}

/// The directory a file lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Replaces `path` with `bytes` atomically (see the module doc). The directory must
/// exist.
pub fn write_atomic(path: &Path, bytes: &[u8], opts: Options) -> Result<(), WriteError> {
    let mut tmp = temp_file(path, opts)?;
    tmp.as_file_mut()
        .write_all(bytes)
        .map_err(WriteError::at(path))?;
    persist(tmp, path, opts)
}

/// A new temp file, with `opts.mode`, in the directory of `target`, for a caller that
/// streams into it and then calls [`persist`]. Dropping it unpersisted deletes it.
pub fn temp_file(target: &Path, opts: Options) -> Result<tempfile::NamedTempFile, WriteError> {
    let err = WriteError::at(target);
    let tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .tempfile_in(parent_dir(target))
        .map_err(&err)?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(opts.mode))
        .map_err(&err)?;
    Ok(tmp)
}

/// Makes a written temp file the new `target`: fsync (when durable), rename, fsync of
/// the directory (when durable). On failure the temp file is deleted.
pub fn persist(
    tmp: tempfile::NamedTempFile,
    target: &Path,
    opts: Options,
) -> Result<(), WriteError> {
    let err = WriteError::at(target);
    if opts.durable {
        tmp.as_file().sync_all().map_err(&err)?;
    }
    // On error the NamedTempFile inside PersistError is dropped, which deletes it.
    tmp.persist(target).map_err(|e| err(e.error))?;
    if opts.durable {
        sync_dir(parent_dir(target))?;
    }
    Ok(())
}

/// fsyncs a directory, so that renames and new names in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<(), WriteError> {
    let err = WriteError::at(dir);
    File::open(dir).map_err(&err)?.sync_all().map_err(&err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(TEMP_PREFIX))
            .collect()
    }

    #[test]
    fn replaces_the_file_with_the_mode_asked_for() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f.json");
        write_atomic(&p, b"one", Options::SHARED).unwrap();
        write_atomic(&p, b"two", Options::PRIVATE).unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        write_atomic(&p, b"three", Options::CACHE).unwrap();
        assert_eq!(
            fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o644
        );
        assert!(leftovers(d.path()).is_empty());
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_the_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("no/such/dir/f.json");
        let e = write_atomic(&p, b"x", Options::SHARED).unwrap_err();
        assert_eq!(e.path, p);
        assert!(e.to_string().contains("no/such/dir/f.json"), "{e}");
        let atip: crate::output::AtipError = e.into();
        assert_eq!(atip.exit_code(), 73);
    }

    #[test]
    fn a_failed_rename_keeps_the_old_file_and_removes_the_temp() {
        let d = tempfile::tempdir().unwrap();
        // A non-empty directory in the target's place: the rename must fail.
        let p = d.path().join("target");
        fs::create_dir(&p).unwrap();
        fs::write(p.join("keep"), b"old").unwrap();
        assert!(write_atomic(&p, b"new", Options::SHARED).is_err());
        assert_eq!(fs::read(p.join("keep")).unwrap(), b"old");
        assert!(leftovers(d.path()).is_empty());
    }
}
