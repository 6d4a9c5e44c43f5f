//! Kept exports: the bytes a whole-registry `atip export` wrote in one format, stored
//! in the data dir (`exports/`) and keyed, like the catalog, by the sha256 of
//! `registry.json` — so that the next identical export copies them instead of reading,
//! flattening and rendering every document again.
//!
//! Derived data, never trusted: a file whose key, atip version, options, length or
//! CRC-32 does not match is ignored (and replaced by the next export). Written through a
//! temp file and a rename, so a reader sees a whole file or none; a failure to keep an
//! export never fails the export itself.

use crate::dirs::Dirs;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::rc::Rc;

const MAGIC: &[u8; 8] = b"ATIPEXP1";
/// Largest export kept (bytes): beyond it the copy on disk is not worth its size.
const MAX_KEPT: u64 = 256 << 20;

/// What identifies an export: the registry it was made from and the options that shape
/// its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    /// sha256 of `registry.json`'s bytes.
    pub registry: [u8; 32],
    /// The options, as a file-name-safe word (e.g. `openai-strict.flat.i0.n0`).
    pub options: String,
}

/// What the export reported besides its bytes, replayed with them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Warnings printed while exporting (documents skipped).
    pub warnings: Vec<String>,
    /// Titles of the interactive commands left out.
    pub skipped: Vec<String>,
    /// Provider tools written.
    pub tools: usize,
}

#[derive(Debug, Serialize, Deserialize)]
struct Trailer {
    registry: String,
    atip: String,
    options: String,
    len: u64,
    crc: u32,
    report: Report,
}

fn path(dirs: &Dirs, key: &Key) -> PathBuf {
    dirs.data
        .join("exports")
        .join(format!("{}.json", key.options))
}

/// A kept export that matches `key`: its file, positioned at the start of the bytes,
/// their length and the report. `None` when there is none or it does not match.
pub fn find(dirs: &Dirs, key: &Key) -> Option<(std::fs::File, u64, Report)> {
    let mut f = std::fs::File::open(path(dirs, key)).ok()?;
    let size = f.metadata().ok()?.len();
    if size < 16 {
        return None;
    }
    let mut tail = [0u8; 16];
    f.seek(SeekFrom::Start(size - 16)).ok()?;
    f.read_exact(&mut tail).ok()?;
    if &tail[8..] != MAGIC {
        return None;
    }
    let trailer_len = u64::from_le_bytes(tail[..8].try_into().ok()?);
    let body_end = size.checked_sub(16)?.checked_sub(trailer_len)?;
    let mut trailer = vec![0; usize::try_from(trailer_len).ok()?];
    f.seek(SeekFrom::Start(body_end)).ok()?;
    f.read_exact(&mut trailer).ok()?;
    let t: Trailer = serde_json::from_slice(&trailer).ok()?;
    if t.registry != hex::encode(key.registry)
        || t.atip != env!("CARGO_PKG_VERSION")
        || t.options != key.options
        || t.len != body_end
    {
        return None;
    }
    // The bytes are checked whole before any is used: a damaged file is never half-copied.
    f.seek(SeekFrom::Start(0)).ok()?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0; 1 << 16];
    let mut left = body_end;
    while left > 0 {
        let n = (left as usize).min(buf.len());
        f.read_exact(&mut buf[..n]).ok()?;
        h.update(&buf[..n]);
        left -= n as u64;
    }
    if h.finalize() != t.crc {
        return None;
    }
    f.seek(SeekFrom::Start(0)).ok()?;
    Some((f, body_end, t.report))
}

/// Copies a found export's `len` bytes from `file` to `out`.
pub fn copy(file: std::fs::File, len: u64, out: &mut dyn Write) -> std::io::Result<()> {
    let copied = std::io::copy(&mut file.take(len), out)?;
    if copied != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(())
}

/// Writes what an export writes to `out`, and a copy to a temp file that its
/// [`Keeper`] keeps once the export is done. Errors of the copy only stop the copy.
pub struct Recorder<W: Write> {
    out: W,
    copy: Rc<RefCell<Copy>>,
}

/// Keeps a [`Recorder`]'s copy when the export succeeded (drop it otherwise: the temp
/// file goes with it).
pub struct Keeper {
    copy: Rc<RefCell<Copy>>,
}

#[derive(Default)]
struct Copy {
    file: Option<(std::io::BufWriter<std::fs::File>, tempfile::NamedTempFile)>,
    crc: crc32fast::Hasher,
    len: u64,
}

impl<W: Write> Recorder<W> {
    /// Tees `out` into a temp file in the data dir's `exports/` (no copy when that
    /// cannot be made).
    pub fn new(dirs: &Dirs, key: &Key, out: W) -> (Recorder<W>, Keeper) {
        let target = path(dirs, key);
        let file = std::fs::create_dir_all(crate::atomic::parent_dir(&target))
            .ok()
            .and_then(|()| crate::atomic::temp_file(&target, crate::atomic::Options::CACHE).ok())
            .and_then(|tmp| {
                let f = tmp.as_file().try_clone().ok()?;
                Some((std::io::BufWriter::with_capacity(1 << 16, f), tmp))
            });
        let copy = Rc::new(RefCell::new(Copy {
            file,
            ..Copy::default()
        }));
        (
            Recorder {
                out,
                copy: copy.clone(),
            },
            Keeper { copy },
        )
    }
}

impl Keeper {
    /// Keeps the copy as the export of `key` with its `report`. Quietly does nothing
    /// when the copy failed or is too large.
    pub fn keep(self, dirs: &Dirs, key: &Key, report: Report) {
        let copy = self.copy.take();
        let Some((mut w, tmp)) = copy.file else {
            return;
        };
        let trailer = Trailer {
            registry: hex::encode(key.registry),
            atip: env!("CARGO_PKG_VERSION").to_string(),
            options: key.options.clone(),
            len: copy.len,
            crc: copy.crc.finalize(),
            report,
        };
        let Ok(t) = serde_json::to_vec(&trailer) else {
            return;
        };
        let done = w
            .write_all(&t)
            .and_then(|()| w.write_all(&(t.len() as u64).to_le_bytes()))
            .and_then(|()| w.write_all(MAGIC))
            .and_then(|()| w.flush());
        drop(w);
        if done.is_ok() {
            let _ = crate::atomic::persist(tmp, &path(dirs, key), crate::atomic::Options::CACHE);
        }
    }
}

impl<W: Write> Write for Recorder<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        let written = &buf[..n];
        let mut c = self.copy.borrow_mut();
        c.len += n as u64;
        c.crc.update(written);
        if c.len > MAX_KEPT {
            c.file = None;
        }
        if let Some((w, _)) = &mut c.file
            && w.write_all(written).is_err()
        {
            c.file = None;
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_bytes_come_back_only_for_the_same_key_and_intact() {
        let tmp = tempfile::tempdir().unwrap();
        let d = Dirs::under(tmp.path());
        let key = Key {
            registry: [7; 32],
            options: "openai.flat.i0.n0".into(),
        };
        let mut out = Vec::new();
        let (mut r, keeper) = Recorder::new(&d, &key, &mut out);
        r.write_all(b"[\n  {\"a\": 1}\n]\n").unwrap();
        drop(r);
        let report = Report {
            warnings: vec!["skipped x: unreadable".into()],
            skipped: vec![],
            tools: 1,
        };
        keeper.keep(&d, &key, report.clone());
        assert_eq!(out, b"[\n  {\"a\": 1}\n]\n");
        let (f, len, got) = find(&d, &key).expect("kept");
        assert_eq!(got, report);
        let mut copied = Vec::new();
        copy(f, len, &mut copied).unwrap();
        assert_eq!(copied, out);
        // Another registry or other options: not this export.
        let other = Key {
            registry: [8; 32],
            ..key.clone()
        };
        assert!(find(&d, &other).is_none());
        // A flipped byte in the body: ignored.
        let p = path(&d, &key);
        let mut bytes = std::fs::read(&p).unwrap();
        bytes[3] ^= 1;
        std::fs::write(&p, &bytes).unwrap();
        assert!(find(&d, &key).is_none());
        // Truncated: ignored.
        std::fs::write(&p, &bytes[..bytes.len() - 3]).unwrap();
        assert!(find(&d, &key).is_none());
    }
}
