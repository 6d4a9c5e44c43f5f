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

/// A whole file in an aligned buffer, sized from its length and filled by one read, so
/// that an archive at its start is checked and used in place, with no second copy.
pub fn read_file(path: &std::path::Path) -> std::io::Result<AlignedVec> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata().map_or(0, |m| m.len() as usize);
    let mut buf = AlignedVec::with_capacity(len.saturating_add(1));
    buf.extend_from_reader(&mut file)?;
    Ok(buf)
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
}
