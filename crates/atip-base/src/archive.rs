//! Owned, checked rkyv archives: the zero-copy form of the compiled catalog's large tables
//! (the search index, the tool rows), so that a reader uses them in place instead of
//! decoding tens of thousands of strings and vectors first.
//!
//! The bytes are checked once, when an [`Owned`] is made (bounds, pointers, UTF-8: rkyv's
//! `bytecheck`); every later access reuses that check. Catalog files are never trusted
//! unchecked — a hand-edited or hostile file fails here with a message, never with
//! undefined behaviour.

use rkyv::api::high::{HighSerializer, HighValidator};
use rkyv::bytecheck::CheckBytes;
use rkyv::rancor;
use rkyv::ser::allocator::ArenaHandle;
use rkyv::util::AlignedVec;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

/// The alignment archives need (rkyv's `AlignedVec` default); catalog sections start at
/// multiples of it.
pub const ALIGN: usize = 16;

/// The byte buffer archives live in: aligned as rkyv's archived types need.
pub type Bytes = AlignedVec;

/// An archived `T` that owns (or shares) its bytes, checked when made.
pub struct Owned<T> {
    bytes: Storage,
    _type: PhantomData<fn() -> T>,
}

/// A buffer archives can share: a mapped file, or a buffer read whole.
pub type Shared = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Where an archive's bytes are.
#[derive(Clone)]
enum Storage {
    /// Its own buffer.
    Own(AlignedVec),
    /// A part of a shared buffer (a section of a mapped catalog file).
    Part(Shared, Range<usize>),
}

impl Storage {
    fn slice(&self) -> &[u8] {
        match self {
            Storage::Own(v) => v,
            Storage::Part(b, r) => &(**b).as_ref()[r.clone()],
        }
    }
}

impl<T> Clone for Owned<T> {
    fn clone(&self) -> Self {
        Owned {
            bytes: self.bytes.clone(),
            _type: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for Owned<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Owned<{}>({} bytes)",
            std::any::type_name::<T>(),
            self.bytes.slice().len()
        )
    }
}

impl<T> Owned<T>
where
    T: rkyv::Archive,
    T::Archived: for<'a> CheckBytes<HighValidator<'a, rancor::Error>>,
{
    /// Checks `bytes` as an archived `T`; the error says what is wrong with them.
    pub fn new(bytes: AlignedVec) -> Result<Owned<T>, ArchiveError> {
        Self::checked(Storage::Own(bytes))
    }

    /// Checks bytes `range` of `shared` as an archived `T`, used in place.
    pub fn in_shared(shared: Shared, range: Range<usize>) -> Result<Owned<T>, ArchiveError> {
        if (*shared).as_ref().get(range.clone()).is_none() {
            return Err(ArchiveError::OutOfBounds);
        }
        Self::checked(Storage::Part(shared, range))
    }

    fn checked(bytes: Storage) -> Result<Owned<T>, ArchiveError> {
        let slice = bytes.slice();
        if !(slice.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(ArchiveError::Misaligned);
        }
        rkyv::access::<T::Archived, rancor::Error>(slice).map_err(ArchiveError::Invalid)?;
        Ok(Owned {
            bytes,
            _type: PhantomData,
        })
    }

    /// Archives `value`.
    pub fn from_value(value: &T) -> Owned<T>
    where
        T: for<'a> rkyv::Serialize<HighSerializer<AlignedVec, ArenaHandle<'a>, rancor::Error>>,
    {
        let bytes =
            rkyv::to_bytes::<rancor::Error>(value).expect("in-memory archiving cannot fail");
        Owned {
            bytes: Storage::Own(bytes),
            _type: PhantomData,
        }
    }

    /// The archived value.
    pub fn get(&self) -> &T::Archived {
        // SAFETY: `bytes` passed `rkyv::access` (a full check) when this value was made,
        // and nothing mutates them afterwards (private field, no `&mut` access).
        unsafe { rkyv::access_unchecked::<T::Archived>(self.bytes.slice()) }
    }

    /// The archive's bytes, for writing to a file.
    pub fn bytes(&self) -> &[u8] {
        self.bytes.slice()
    }
}

/// `len` bytes in an aligned buffer, filled by `fill` (a file read at an offset).
pub fn read_aligned(
    len: usize,
    fill: impl FnOnce(&mut [u8]) -> std::io::Result<()>,
) -> std::io::Result<AlignedVec> {
    let mut buf = AlignedVec::with_capacity(len);
    buf.resize(len, 0);
    fill(&mut buf)?;
    Ok(buf)
}

/// Why bytes are not a usable archive.
#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    /// Shorter than its checksum.
    #[error("the file is too short")]
    TooShort,
    /// The CRC-32 does not match.
    #[error("its checksum does not match (damaged or truncated)")]
    Checksum,
    /// A section range past the end of the file.
    #[error("out of bounds")]
    OutOfBounds,
    /// Not at an address the archived types need.
    #[error("not aligned to {ALIGN} bytes")]
    Misaligned,
    /// The bytes are not a valid archive of the type.
    #[error("{0}")]
    Invalid(#[source] rancor::Error),
}

/// The archive of a cache file written as an archive followed by its CRC-32
/// (little-endian): the scan and inference caches. The error says what is wrong.
pub fn strip_crc(bytes: &[u8]) -> Result<&[u8], ArchiveError> {
    let Some((archive, crc)) = bytes.split_last_chunk::<4>() else {
        return Err(ArchiveError::TooShort);
    };
    if crc32fast::hash(archive) != u32::from_le_bytes(*crc) {
        return Err(ArchiveError::Checksum);
    }
    Ok(archive)
}

/// Files at least this long are mapped by [`map_file`], shorter ones read: a mapping
/// costs two more system calls and a page-table tear-down, a read one fault per page.
const MAP_AT_LEAST: u64 = 64 * 1024;

/// A whole file's bytes, for archives used in place ([`Owned::in_shared`]): mapped
/// read-only when it is long, read into an aligned buffer when short. A warm rescan reads
/// ~1.1 MB of caches: a read buffer takes a page fault per fresh 4 KiB page (~280),
/// while the kernel maps up to 16 page-cache pages per fault of a mapped file, and no
/// copy is made.
///
/// Only for files atip replaces by renaming a new file over them, never rewrites in
/// place (the caches, `catalog.bin`): a mapping keeps the file it was made of, so a
/// writer running meanwhile cannot change the bytes under a reader. The length mapped is
/// the one the file had when opened; should another program truncate it while mapped,
/// reading past its new end raises SIGBUS, which exits with a message
/// ([`explain_sigbus`]) instead of reading anything.
pub fn map_file(path: &std::path::Path) -> std::io::Result<Shared> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len < MAP_AT_LEAST {
        let mut buf = Bytes::with_capacity(len as usize + 1);
        buf.extend_from_reader(&mut &file)?;
        return Ok(Arc::new(buf));
    }
    explain_sigbus();
    // SAFETY: mapped read-only and private; see above: the files mapped are replaced by
    // rename only, so the mapping's bytes do not change, and a truncation by another
    // program ends the process through the SIGBUS handler rather than being read.
    let map = unsafe { memmap2::Mmap::map(&file) }?;
    Ok(Arc::new(map))
}

/// Installs (once) a SIGBUS handler for mapped files. A mapped file that another program
/// truncates in place makes the next access fault (SIGBUS). atip never does that (it
/// renames a new file over the old one); should anything else, the process says why and
/// exits 74 instead of dying unexplained.
pub fn explain_sigbus() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        extern "C" fn on_sigbus(_: libc::c_int) {
            const MSG: &[u8] = b"atip: error: a file atip had mapped (a cache, catalog.bin) was truncated by another program while in use; run the command again\n";
            // SAFETY: write(2) and _exit(2) are async-signal-safe.
            unsafe {
                libc::write(2, MSG.as_ptr().cast(), MSG.len());
                libc::_exit(74);
            }
        }
        // SAFETY: installs a handler that only calls async-signal-safe functions.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_sigbus as *const () as usize;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(libc::SIGBUS, &act, std::ptr::null_mut());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(rkyv::Archive, rkyv::Serialize, Debug)]
    struct Table {
        names: Vec<String>,
        ids: Vec<u32>,
    }

    #[test]
    fn round_trips_and_refuses_damaged_bytes() {
        let t = Table {
            names: vec!["gh_pr_create".into(), "git_log".into()],
            ids: vec![3, 7],
        };
        let owned = Owned::from_value(&t);
        let again = Owned::<Table>::new(
            read_aligned(owned.bytes().len(), |b| {
                b.copy_from_slice(owned.bytes());
                Ok(())
            })
            .unwrap(),
        )
        .unwrap();
        assert_eq!(again.get().names[1].as_str(), "git_log");
        assert_eq!(again.get().ids[0].to_native(), 3);
        // A relative pointer overwritten with garbage is caught, not followed.
        let len = owned.bytes().len();
        let mut bad = read_aligned(len, |b| {
            b.copy_from_slice(owned.bytes());
            Ok(())
        })
        .unwrap();
        for b in &mut bad[len - 16..] {
            *b = 0xff;
        }
        assert!(Owned::<Table>::new(bad).is_err());
        assert!(Owned::<Table>::new(AlignedVec::new()).is_err());
    }

    #[test]
    fn mapped_and_read_files_are_archives_in_place_and_keep_a_replaced_file() {
        let dir = tempfile::tempdir().unwrap();
        for n in [3usize, 40_000] {
            // A short file is read, a long one mapped: the same archive either way.
            let t = Table {
                names: (0..n).map(|i| format!("tool{i}")).collect(),
                ids: (0..n as u32).collect(),
            };
            let bytes = Owned::from_value(&t).bytes().to_vec();
            let path = dir.path().join(format!("t{n}.bin"));
            std::fs::write(&path, &bytes).unwrap();
            let shared = map_file(&path).unwrap();
            assert_eq!((*shared).as_ref(), &bytes[..]);
            assert_eq!(
                bytes.len() as u64 >= MAP_AT_LEAST,
                n > 3,
                "both ways are tried"
            );
            let len = bytes.len();
            let owned = Owned::<Table>::in_shared(shared, 0..len).unwrap();
            // Another writer renames a new file over it: the reader keeps the old one.
            let next = dir.path().join("next");
            std::fs::write(&next, vec![0xffu8; len]).unwrap();
            std::fs::rename(&next, &path).unwrap();
            assert_eq!(owned.get().names[n - 1].as_str(), format!("tool{}", n - 1));
            assert_eq!(owned.get().ids.len(), n);
            assert_eq!(owned.bytes(), &bytes[..]);
        }
        let missing = map_file(&dir.path().join("none")).err().unwrap();
        assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
    }
}
