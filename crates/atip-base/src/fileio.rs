//! The error of a file atip could not read, with its path: the one shape behind every
//! "failed to read PATH: CAUSE" message (writing has [`crate::atomic::WriteError`]).

use std::path::{Path, PathBuf};

/// A file or directory exists (or should) but could not be read.
#[derive(Debug, thiserror::Error)]
#[error("failed to read {}: {source}", path.display())]
pub struct ReadError {
    /// The file.
    pub path: PathBuf,
    /// Cause.
    #[source]
    pub source: std::io::Error,
}

impl ReadError {
    /// A `map_err` adapter: the I/O error of reading `path`.
    pub fn at(path: &Path) -> impl Fn(std::io::Error) -> ReadError + '_ {
        move |source| ReadError {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == std::io::ErrorKind::NotFound
    }
}

/// A cache file could not be written. Caches are rebuilt when lost, so callers report
/// this as a warning, never as the failure of what they were doing.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// Its directory could not be created.
    #[error("failed to create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// Encoding the archive failed.
    #[error("failed to encode the cache: {0}")]
    Encode(#[source] rkyv::rancor::Error),
    /// Writing it failed (the old file is untouched).
    #[error(transparent)]
    Write(#[from] crate::atomic::WriteError),
    /// No thread could be started to write it (the old file is untouched).
    #[error("failed to start a thread to write the cache: {0}")]
    Thread(#[source] std::io::Error),
}

impl CacheError {
    /// A `map_err` adapter: creating directory `dir` failed.
    pub fn create_dir(dir: &Path) -> impl Fn(std::io::Error) -> CacheError + '_ {
        move |source| CacheError::CreateDir {
            dir: dir.to_path_buf(),
            source,
        }
    }
}

impl From<ReadError> for crate::output::AtipError {
    /// `input_not_found` or `input_unreadable` (exit 66), with the path in `details.path`.
    fn from(e: ReadError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        let code = if e.is_not_found() {
            ErrorCode::InputNotFound
        } else {
            ErrorCode::InputUnreadable
        };
        AtipError::new(code, e.to_string())
            .details(serde_json::json!({ "path": e.path.display().to_string() }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_path_and_classifies_by_cause() {
        let t = tempfile::tempdir().unwrap();
        let missing = t.path().join("nope.json");
        let e = std::fs::read(&missing)
            .map_err(ReadError::at(&missing))
            .unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("failed to read {}: ", missing.display()))
        );
        let a = crate::output::AtipError::from(e);
        assert_eq!(a.code, crate::output::ErrorCode::InputNotFound);
        assert_eq!(a.details["path"], missing.display().to_string());
        let dir = t.path().to_owned();
        let e = std::fs::read(&dir)
            .map_err(ReadError::at(&dir))
            .unwrap_err();
        assert_eq!(
            crate::output::AtipError::from(e).code,
            crate::output::ErrorCode::InputUnreadable
        );
    }
}
