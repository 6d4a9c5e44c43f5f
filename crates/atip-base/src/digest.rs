//! The one sha256 helper: content addresses of metadata files, binary hashes pinned in
//! the registry, cache keys and short name suffixes all come from here, so the
//! encoding (lowercase hex; `sha256:` prefix only where the protocol wants it) is
//! decided once.
//!
//! The implementation is ring's (already linked as rustls' crypto provider): its assembly
//! uses SHA instructions where the CPU has them and AVX2 otherwise, where the portable
//! `sha2` crate falls back to plain Rust on CPUs without SHA instructions (there, hashing
//! PATH's executables was over half of a cold scan's CPU).

use ring::digest::{Context, SHA256};
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Whether `s` is 64 lowercase hex digits: a sha256 as atip names files by it.
pub fn is_hex64(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// sha256 of the concatenation of `parts` as lowercase hex (64 characters). Callers
/// that hash several fields separate them with a `\0` part so that ("ab","c") and
/// ("a","bc") differ.
pub fn sha256_hex_parts(parts: &[&[u8]]) -> String {
    let mut h = Context::new(&SHA256);
    for p in parts {
        h.update(p);
    }
    hex::encode(h.finish())
}

/// sha256 of bytes as lowercase hex (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    sha256_hex_parts(&[bytes])
}

/// The raw 32-byte sha256 of bytes (for constant-time comparisons).
pub fn sha256_raw(bytes: &[u8]) -> [u8; 32] {
    raw(ring::digest::digest(&SHA256, bytes))
}

/// Read size of [`sha256_file`].
const FILE_CHUNK: usize = 256 * 1024;

thread_local! {
    /// [`sha256_file`]'s read buffer, one per thread and kept: a scan hashes thousands of
    /// files, and a fresh zeroed 256 KiB buffer per file cost a memset (or an mmap) each.
    static FILE_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// sha256 of a file, streamed in 256 KiB reads, as `sha256:<hex>` (the registry's
/// `hash` field).
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let mut file = File::open(path)?;
    // The buffer grows to the largest file hashed so far (up to the read size), so a
    // thread that hashes only small files does not hold 256 KiB.
    let len = file.metadata().map_or(FILE_CHUNK as u64, |m| m.len());
    let want = (len as usize).saturating_add(1).clamp(4096, FILE_CHUNK);
    let digest = FILE_BUF.with(|b| match b.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < want {
                buf.resize(want, 0);
            }
            stream(&mut file, &mut buf)
        }
        // Only if a reader hashes a file from inside its own read (never here).
        Err(_) => stream(&mut file, &mut vec![0u8; want]),
    })?;
    Ok(format!("sha256:{}", hex::encode(digest)))
}

/// The raw sha256 of what `reader` yields, through a 64 KiB buffer on the stack.
pub fn sha256_raw_reader(reader: &mut impl Read) -> std::io::Result<[u8; 32]> {
    stream(reader, &mut [0u8; 64 * 1024])
}

fn stream(file: &mut impl Read, buf: &mut [u8]) -> std::io::Result<[u8; 32]> {
    let mut hasher = Context::new(&SHA256);
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(raw(hasher.finish()))
}

/// The 32 bytes of a SHA-256 digest.
fn raw(digest: ring::digest::Digest) -> [u8; 32] {
    digest
        .as_ref()
        .try_into()
        .expect("a SHA-256 digest is 32 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

    #[test]
    fn known_vectors() {
        assert_eq!(sha256_hex(b"abc"), ABC);
        assert_eq!(sha256_hex_parts(&[b"a", b"bc"]), ABC);
        assert_eq!(hex::encode(sha256_raw(b"abc")), ABC);
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), format!("sha256:{ABC}"));
    }

    #[test]
    fn files_larger_than_the_buffer_hash_whole() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big");
        let bytes: Vec<u8> = (0..200_003u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let mut file = std::fs::File::open(&p).unwrap();
        assert_eq!(sha256_raw_reader(&mut file).unwrap(), sha256_raw(&bytes));
        assert_eq!(
            sha256_file(&p).unwrap(),
            format!("sha256:{}", sha256_hex(&bytes))
        );
    }

    #[test]
    fn the_kept_buffer_carries_nothing_from_one_file_to_the_next() {
        let d = tempfile::tempdir().unwrap();
        let (big, small) = (d.path().join("big"), d.path().join("small"));
        let bytes: Vec<u8> = (0..600_001u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&big, &bytes).unwrap();
        std::fs::write(&small, b"abc").unwrap();
        for _ in 0..2 {
            // Small first (the buffer grows on the big one), then small after big.
            assert_eq!(sha256_file(&small).unwrap(), format!("sha256:{ABC}"));
            let want = format!("sha256:{}", sha256_hex(&bytes));
            assert_eq!(sha256_file(&big).unwrap(), want);
        }
        assert!(sha256_file(&d.path().join("missing")).is_err());
    }
}
