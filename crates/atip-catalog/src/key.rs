//! The registry's key — the sha256 of `registry.json`'s bytes, which every catalog is
//! compiled for — without hashing the file on every read: on a CPU without SHA
//! instructions the hash of a 500 KB registry is ~2.5 ms, a third of what `atip exec`
//! spent of its own.
//!
//! `catalog.key` (beside `catalog.bin`) remembers the key with the stamp — device, inode,
//! size, mtime and ctime in nanoseconds — of the file it was computed from. A reader whose
//! open `registry.json` has that stamp uses the remembered key; any other hashes the file
//! and remembers the result, when the file's stamp did not change while it was read. This
//! is the trust the run-time integrity check gives executables (spec/exec.md): writers
//! replace `registry.json` by rename (a new inode), a write in place changes ctime, and
//! nobody can set ctime back. A key is remembered only for a file whose ctime is at least
//! `RACY` (3 s) old: file systems stamp times in ticks (a jiffy, or 1–2 s on some), and a
//! write in place in the same tick as the one remembered would otherwise keep the stamp
//! (git's "racily clean" index entries are the same problem). A missing, damaged or
//! stale `catalog.key` costs one hash, never a wrong key.
//!
//! Must not be used for anything but the catalog's key: the registry's content is still
//! read and checked wherever it is used.

use crate::registry::FileStamp;
use std::fs::File;
use std::path::Path;

/// The file's name in the data dir.
pub const FILE: &str = "catalog.key";

/// First bytes of the file (format 1).
const MAGIC: &[u8; 8] = b"ATIPKEY1";

/// Magic, stamp (5 × 8 bytes), key, CRC-32 of all before it.
const LEN: usize = 8 + 40 + 32 + 4;

/// How old a file's last change must be for its key to be remembered: more than the
/// coarsest timestamp tick of common file systems (FAT: 2 s).
const RACY: std::time::Duration = std::time::Duration::from_secs(3);

/// The key of the `registry.json` at `registry` (whose data dir is `data`): remembered,
/// or computed and remembered. Errors are those of opening and reading the registry.
pub(crate) fn registry_key(data: &Path, registry: &Path) -> std::io::Result<[u8; 32]> {
    key_with_margin(data, registry, RACY)
}

/// [`registry_key`], remembering keys of files changed at least `racy` ago.
fn key_with_margin(
    data: &Path,
    registry: &Path,
    racy: std::time::Duration,
) -> std::io::Result<[u8; 32]> {
    let mut file = File::open(registry)?;
    let before = FileStamp::of(&file.metadata()?);
    let remembered = data.join(FILE);
    if let Some(key) = read(&remembered).filter(|(stamp, _)| *stamp == before) {
        return Ok(key.1);
    }
    let key = crate::digest::sha256_raw_reader(&mut file)?;
    // Remembered only when nothing wrote to the file while it was read; best effort (a
    // read-only data dir only means hashing every time).
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let settled = now_ns - i128::from(before.ctime_ns) >= racy.as_nanos() as i128;
    if settled && FileStamp::of(&file.metadata()?) == before {
        let _ = crate::atomic::write_atomic(
            &remembered,
            &encode(&before, &key),
            crate::atomic::Options::CACHE,
        );
    }
    Ok(key)
}

fn encode(stamp: &FileStamp, key: &[u8; 32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(LEN);
    out.extend_from_slice(MAGIC);
    for n in [stamp.dev, stamp.ino, stamp.size] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    for n in [stamp.mtime_ns, stamp.ctime_ns] {
        out.extend_from_slice(&n.to_le_bytes());
    }
    out.extend_from_slice(key);
    out.extend_from_slice(&crc32fast::hash(&out).to_le_bytes());
    out
}

/// The remembered stamp and key, if the file is whole and of this format.
fn read(path: &Path) -> Option<(FileStamp, [u8; 32])> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() != LEN || !bytes.starts_with(MAGIC) {
        return None;
    }
    let (body, crc) = bytes.split_at(LEN - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return None;
    }
    let word = |i: usize| <[u8; 8]>::try_from(&body[8 + 8 * i..16 + 8 * i]).ok();
    let stamp = FileStamp {
        dev: u64::from_le_bytes(word(0)?),
        ino: u64::from_le_bytes(word(1)?),
        size: u64::from_le_bytes(word(2)?),
        mtime_ns: i64::from_le_bytes(word(3)?),
        ctime_ns: i64::from_le_bytes(word(4)?),
    };
    Some((stamp, body[48..80].try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::sha256_raw;
    use std::time::Duration;

    fn setup(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let registry = dir.path().join("registry.json");
        std::fs::write(&registry, text).unwrap();
        (dir, registry)
    }

    #[test]
    fn computes_then_remembers_the_key_of_the_file_as_it_is() {
        let (dir, registry) = setup("{\"a\": 1}");
        let key = key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap();
        assert_eq!(key, sha256_raw(b"{\"a\": 1}"));
        let (stamp, remembered) = read(&dir.path().join(FILE)).unwrap();
        assert_eq!(remembered, key);
        assert_eq!(stamp, FileStamp::of(&std::fs::metadata(&registry).unwrap()));
        assert_eq!(
            key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap(),
            key
        );
    }

    #[test]
    fn a_remembered_key_is_used_only_while_the_stamp_holds() {
        let (dir, registry) = setup("{\"a\": 1}");
        // A remembered key for the file's current stamp is taken without hashing (shown
        // with a key that is not the file's hash)...
        let stamp = FileStamp::of(&std::fs::metadata(&registry).unwrap());
        let forged = [7u8; 32];
        std::fs::write(dir.path().join(FILE), encode(&stamp, &forged)).unwrap();
        assert_eq!(
            key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap(),
            forged
        );
        // ...but not once the file is replaced (a new inode, as writers do)...
        let tmp = dir.path().join("new.json");
        std::fs::write(&tmp, "{\"a\": 2}").unwrap();
        std::fs::rename(&tmp, &registry).unwrap();
        assert_eq!(
            key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap(),
            sha256_raw(b"{\"a\": 2}")
        );
        // ...nor once it is written in place with the same size (its times move on; an
        // old mtime first, so that shows within one clock tick, without a sleep).
        std::fs::File::options()
            .write(true)
            .open(&registry)
            .unwrap()
            .set_modified(std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000))
            .unwrap();
        let now = FileStamp::of(&std::fs::metadata(&registry).unwrap());
        std::fs::write(dir.path().join(FILE), encode(&now, &forged)).unwrap();
        std::fs::write(&registry, "{\"a\": 3}").unwrap();
        assert_eq!(
            key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap(),
            sha256_raw(b"{\"a\": 3}")
        );
    }

    #[test]
    fn a_damaged_or_foreign_file_costs_a_hash_and_is_rewritten() {
        let (dir, registry) = setup("[]");
        let stamp = FileStamp::of(&std::fs::metadata(&registry).unwrap());
        let mut damaged = encode(&stamp, &[9u8; 32]);
        damaged[60] ^= 1;
        let mut foreign = encode(&stamp, &[9u8; 32]);
        foreign[7] = b'9';
        for bad in [damaged, foreign, b"short".to_vec(), Vec::new()] {
            std::fs::write(dir.path().join(FILE), &bad).unwrap();
            assert_eq!(
                key_with_margin(dir.path(), &registry, Duration::ZERO).unwrap(),
                sha256_raw(b"[]")
            );
            assert_eq!(read(&dir.path().join(FILE)).unwrap().1, sha256_raw(b"[]"));
        }
    }

    #[test]
    fn a_missing_registry_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let e = key_with_margin(
            dir.path(),
            &dir.path().join("registry.json"),
            Duration::ZERO,
        )
        .unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn a_file_changed_within_the_racy_margin_is_hashed_every_time() {
        let (dir, registry) = setup("{}");
        assert_eq!(
            registry_key(dir.path(), &registry).unwrap(),
            sha256_raw(b"{}")
        );
        assert!(
            !dir.path().join(FILE).exists(),
            "just written: not remembered"
        );
    }
}
