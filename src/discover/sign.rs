//! ATIP-sign detection: whether an executable's bytes show that it answers `--agent`.
//!
//! A file shows a sign when it contains the literal `--agent` AND one ATIP marker:
//! `"atip"` (the metadata's key, as embedded JSON or in source that builds it),
//! `'atip'` or `\"atip\"` (the key inside a quoted string). Help text alone ("--agent
//! print ATIP metadata") is not a sign: programs mention ATIP in comments and docs
//! without answering it, and `--agent` is a common flag of unrelated programs (ssh
//! agents). Both must occur within the first [`SIGN_READ_CAP`] bytes. Files are read
//! through a bounded per-thread buffer with SIMD substring search (memchr), and reading
//! stops as soon as both have been seen.
//!
//! Must not run anything, and must not read more than the cap of any file.

use memchr::memmem::Finder;
use std::cell::RefCell;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::OnceLock;

/// Bytes of a file searched for a sign; the rest of a bigger file is not read.
pub const SIGN_READ_CAP: u64 = 64 << 20;

/// Read buffer per thread: most executables fit in one fill.
const CHUNK: usize = 256 << 10;

const FLAG: &[u8] = b"--agent";
const MARKERS: [&[u8]; 3] = [b"\"atip\"", b"'atip'", b"\\\"atip\\\""];
/// Bytes carried from one fill to the next so a pattern split across fills is found.
const CARRY: usize = 7;

struct Finders {
    flag: Finder<'static>,
    markers: Vec<Finder<'static>>,
}

fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        flag: Finder::new(FLAG),
        markers: MARKERS.iter().map(Finder::new).collect(),
    })
}

thread_local! {
    static BUF: RefCell<Vec<u8>> = RefCell::new(vec![0u8; CARRY + CHUNK]);
}

/// Whether a byte stream shows an ATIP sign, reading at most [`SIGN_READ_CAP`] bytes.
///
/// The common case, a file without `--agent` that fits one buffer, costs one read and
/// one SIMD substring search; markers are only looked for where they can matter.
pub fn detect_reader<R: Read>(mut reader: R) -> std::io::Result<bool> {
    let f = finders();
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let mut kept = 0usize;
        let mut total = 0u64;
        let mut flag = false;
        let mut marker = false;
        loop {
            let mut n = kept;
            let mut eof = false;
            while n < buf.len() {
                let room = (buf.len() - n).min((SIGN_READ_CAP - total) as usize);
                if room == 0 {
                    eof = true;
                    break;
                }
                match reader.read(&mut buf[n..n + room]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(k) => {
                        n += k;
                        total += k as u64;
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            let chunk = &buf[..n];
            if !flag {
                flag = f.flag.find(chunk).is_some();
            }
            // Without the flag in a last chunk the answer is no: skip the markers.
            if !marker && (flag || !eof) {
                marker = f.markers.iter().any(|m| m.find(chunk).is_some());
            }
            if flag && marker {
                return Ok(true);
            }
            if eof {
                return Ok(false);
            }
            kept = CARRY.min(n);
            buf.copy_within(n - kept..n, 0);
        }
    })
}

/// Whether the file at `path` shows an ATIP sign.
pub fn detect(path: &Path) -> std::io::Result<bool> {
    detect_reader(File::open(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(bytes: &[u8]) -> bool {
        detect_reader(bytes).unwrap()
    }

    #[test]
    fn needs_the_flag_and_a_marker() {
        assert!(sign(
            b"if [ \"$1\" = --agent ]; then cat <<E\n{\"atip\": \"0.4\"}\nE\nfi"
        ));
        assert!(sign(
            b"\x7fELF\0\0--agent\0{\"atip\":{\"version\":\"0.6\"}}"
        ));
        assert!(sign(b"print('{' + \"'atip'\" + '}') # --agent"));
        assert!(sign(b"echo \"{\\\"atip\\\": 1}\" --agent"));
        // Help text or a comment is not enough.
        assert!(!sign(b"  --agent   print ATIP metadata"));
        assert!(!sign(
            b"# decoy: not ATIP; --agent here means an ssh-agent socket"
        ));
        // A flag without a marker (an ssh-agent option), a marker without the flag.
        assert!(!sign(b"Usage: x [--agent SOCKET] HOST"));
        assert!(!sign(b"# not an ATIP tool; path /tmp/atip-fake/exec.log"));
        assert!(!sign(b"{\"atip\": \"0.4\"}"));
        assert!(!sign(b""));
    }

    #[test]
    fn matches_across_buffer_boundaries() {
        for split in [CHUNK - 3, CHUNK - 1, CHUNK, 2 * CHUNK - CARRY - 2] {
            let mut big = vec![b'x'; split];
            big.extend_from_slice(b"--agent");
            big.extend(std::iter::repeat_n(b'y', CHUNK + 5));
            big.extend_from_slice(b"\"atip\"");
            assert!(sign(&big), "split at {split}");
            // Marker first, flag later, across fills.
            let mut rev = vec![b'x'; split];
            rev.extend_from_slice(b"'atip'");
            rev.extend(std::iter::repeat_n(b'y', 3 * CHUNK));
            rev.extend_from_slice(b"--agent");
            assert!(sign(&rev), "reversed, split at {split}");
            let mut none = vec![b'x'; split];
            none.extend_from_slice(b"--agen");
            assert!(!sign(&none));
        }
    }
}
