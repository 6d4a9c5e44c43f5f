//! ATIP-sign detection: whether an executable's bytes show that it answers `--agent`.
//!
//! A file shows a sign when it contains the literal `--agent` AND one ATIP marker:
//! `"atip"` (the metadata's key, as embedded JSON or in source that builds it),
//! `'atip'` or `\"atip\"` (the key inside a quoted string). Help text alone ("--agent
//! print ATIP metadata") is not a sign: programs mention ATIP in comments and docs
//! without answering it, and `--agent` is a common flag of unrelated programs (ssh
//! agents). Both must occur within the first [`SIGN_READ_CAP`] bytes. Files are streamed through a bounded buffer with one
//! multi-pattern search and reading stops as soon as both are seen.
//!
//! Must not run anything, and must not read more than the cap of any file.

use aho_corasick::AhoCorasick;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// Bytes of a file searched for a sign; the rest of a bigger file is not read.
pub const SIGN_READ_CAP: u64 = 64 << 20;

/// The patterns: index 0 is the flag, the rest are markers.
const PATTERNS: [&[u8]; 4] = [b"--agent", b"\"atip\"", b"'atip'", b"\\\"atip\\\""];

fn searcher() -> &'static AhoCorasick {
    static AC: OnceLock<AhoCorasick> = OnceLock::new();
    AC.get_or_init(|| AhoCorasick::new(PATTERNS).expect("fixed patterns compile"))
}

/// Whether a byte stream shows an ATIP sign, reading at most [`SIGN_READ_CAP`] bytes.
pub fn detect_reader<R: Read>(reader: R) -> std::io::Result<bool> {
    let mut flag = false;
    let mut marker = false;
    for m in searcher().stream_find_iter(reader.take(SIGN_READ_CAP)) {
        if m?.pattern().as_usize() == 0 {
            flag = true;
        } else {
            marker = true;
        }
        if flag && marker {
            return Ok(true);
        }
    }
    Ok(false)
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
        let mut big = vec![b'x'; (1 << 20) - 3];
        big.extend_from_slice(b"--agent");
        big.extend(std::iter::repeat_n(b'y', 300_000));
        big.extend_from_slice(b"\"atip\"");
        assert!(sign(&big));
    }
}
