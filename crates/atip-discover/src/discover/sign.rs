//! ATIP-sign detection: whether an executable's bytes show that it answers `--agent`,
//! and which kind of evidence they show ([`Sign`]).
//!
//! The rules (each measured on a real PATH; see `spec/scan.md` §2 "The sign"):
//! - [`Sign::FlagKey`]: the literal `--agent` and the metadata key quoted — `"atip"`,
//!   `'atip'`, `` `atip` `` or `\"atip\"` (embedded JSON, a heredoc, a Go struct tag, a
//!   string in a script);
//! - [`Sign::FlagWord`]: `--agent` and `atip` used as a bare key — `atip:` (JS/TS object
//!   literal, YAML) or `atip=` (Python keyword argument): the word, not inside another
//!   word or a path (`/tmp/atip-x`), followed by `:` or `=`;
//! - [`Sign::Binary`]: a compiled program (ELF or Mach-O) holding `atip` not flanked by
//!   letters on both sides, or packed against another ATIP field name (`atipname`: a
//!   serde struct's field table), and `agent` anywhere (clap and cobra store the flag
//!   without dashes);
//! - [`Sign::Script`]: a short (≤ [`SCRIPT_MAX`]) `#!` script that tests for `--agent`
//!   itself — a `case` arm (`--agent)`, `--agent|`), a quoted comparison (`"--agent"`,
//!   `'--agent'`) or `= --agent` — followed within `ANSWER_WINDOW` bytes by JSON
//!   (`json`, `JSON` or `{`), such as a wrapper that `cat`s its metadata from a data file.
//!
//! Not a sign: help text or comments alone ("--agent print ATIP metadata"), `ATIP` in
//! capitals, `atip` inside a longer word (`datatip`), `--agent` alone in a binary (an
//! ssh-agent option). Everything is read within the first [`SIGN_READ_CAP`] bytes
//! through a bounded per-thread buffer with SIMD substring search (memchr).
//!
//! Must not run anything, and must not read more than the cap of any file.

use memchr::memmem::Finder;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::path::Path;
use std::sync::OnceLock;

/// Bytes of a file searched for a sign; the rest of a bigger file is not read.
pub const SIGN_READ_CAP: u64 = 64 << 20;

/// The largest file that can show a [`Sign::Script`].
pub const SCRIPT_MAX: u64 = 64 << 10;

/// Read buffer per thread: most executables fit in one fill.
const CHUNK: usize = 256 << 10;

/// Bytes carried from one fill to the next so a pattern split across fills, with the
/// context around it, is seen whole.
const CARRY: usize = 32;

/// Context needed to the right of a hit before it is judged (else the next fill judges it).
const RIGHT: usize = 12;

/// ATIP root field names: `atip` packed against one of them in a binary is a serde-style
/// field table.
const ROOT_FIELDS: [&[u8]; 6] = [
    b"name",
    b"version",
    b"description",
    b"commands",
    b"binary",
    b"trust",
];

/// Bytes after a script's `--agent` test searched for the JSON it answers with.
const ANSWER_WINDOW: usize = 200;

/// What an executable's bytes show.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(compare(PartialEq))]
#[serde(rename_all = "kebab-case")]
pub enum Sign {
    /// No sign: not run by `--probe auto`.
    None,
    /// `--agent` and the quoted key `"atip"`.
    FlagKey,
    /// `--agent` and `atip` as a bare key (`atip:`, `atip=`).
    FlagWord,
    /// A compiled program holding `atip` and `agent`.
    Binary,
    /// A short script that tests for `--agent` itself.
    Script,
    /// A launcher (a console-script wrapper) whose launched code shows a sign
    /// (`super::launcher`).
    Launcher,
}

impl Sign {
    /// Whether this evidence lets `--probe auto` run the executable.
    pub(crate) fn shown(self) -> bool {
        self != Sign::None
    }

    /// The kebab-case name used in reports.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Sign::None => "none",
            Sign::FlagKey => "flag-key",
            Sign::FlagWord => "flag-word",
            Sign::Binary => "binary",
            Sign::Script => "script",
            Sign::Launcher => "launcher",
        }
    }
}

struct Finders {
    flag: Finder<'static>,
    word: Finder<'static>,
    agent: Finder<'static>,
}

fn finders() -> &'static Finders {
    static F: OnceLock<Finders> = OnceLock::new();
    F.get_or_init(|| Finders {
        flag: Finder::new(b"--agent"),
        word: Finder::new(b"atip"),
        agent: Finder::new(b"agent"),
    })
}

thread_local! {
    static BUF: RefCell<Vec<u8>> = RefCell::new(vec![0u8; CARRY + CHUNK]);
}

/// What was seen so far in one file.
#[derive(Default)]
struct Seen {
    flag: bool,
    handled: bool,
    key: bool,
    word: bool,
    loose: bool,
    agent: bool,
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

impl Seen {
    /// Judges one `atip` at `i` with its context.
    fn atip_at(&mut self, buf: &[u8], i: usize) {
        let before = i.checked_sub(1).map(|k| buf[k]);
        let after = buf.get(i + 4).copied();
        let letter = |b: Option<u8>| b.is_some_and(|c| c.is_ascii_alphabetic());
        // Between letters only when packed against another ATIP field name, as a
        // compiler lays out a serde struct's field names (`…atipnameversion…`).
        let packed = ROOT_FIELDS
            .iter()
            .any(|f| buf[i + 4..].starts_with(f) || buf[..i].ends_with(f));
        if !(letter(before) && letter(after)) || packed {
            self.loose = true;
        }
        const QUOTES: &[u8] = b"\"'`";
        if let (Some(b), Some(a)) = (before, after)
            && QUOTES.contains(&b)
            && a == b
        {
            self.key = true;
            return;
        }
        // `\"atip\"`: the key inside a quoted string.
        if before == Some(b'"')
            && i >= 2
            && buf[i - 2] == b'\\'
            && buf.get(i + 4..i + 6) == Some(b"\\\"")
        {
            self.key = true;
            return;
        }
        // A bare key: not inside a word or a path, then `:` or `=` (after an optional
        // closing quote and blanks).
        if before.is_some_and(|b| is_ident(b) || b"./-".contains(&b)) || after.is_some_and(is_ident)
        {
            return;
        }
        let mut k = i + 4;
        if buf.get(k).is_some_and(|c| QUOTES.contains(c)) {
            k += 1;
        }
        while buf.get(k).is_some_and(|c| *c == b' ' || *c == b'\t') {
            k += 1;
        }
        if buf.get(k).is_some_and(|c| *c == b':' || *c == b'=') {
            self.word = true;
        }
    }

    /// Judges one `--agent` at `i`: does the script test for it?
    fn flag_at(&mut self, buf: &[u8], i: usize) {
        self.flag = true;
        let after = buf.get(i + 7).copied();
        let before = i.checked_sub(1).map(|k| buf[k]);
        let quoted = matches!(
            (before, after),
            (Some(b'"'), Some(b'"')) | (Some(b'\''), Some(b'\''))
        );
        let arm = matches!(after, Some(b')') | Some(b'|'));
        let compared = buf[..i].ends_with(b"= ") || buf[..i].ends_with(b"==");
        // …and answers with JSON: a `.json` file, `json.dumps`, `JSON.stringify`, or an
        // inline document, within the next few lines. An ssh-agent style
        // `--agent) echo 'needs SOCKET' >&2; exit 2` does not.
        let next = &buf[i + 7..buf.len().min(i + 7 + ANSWER_WINDOW)];
        let json = memchr::memmem::find(next, b"json").is_some()
            || memchr::memmem::find(next, b"JSON").is_some()
            || memchr::memchr(b'{', next).is_some();
        if (quoted || arm || compared) && json {
            self.handled = true;
        }
    }
}

/// The two halves of a sign, for evidence spread over several files of one package
/// (a launcher's targets): the flag in one module, the metadata key in another.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Halves {
    /// The literal `--agent`.
    pub flag: bool,
    /// `atip` as a quoted or bare key.
    pub key: bool,
}

impl Halves {
    /// Both halves, in this file or together with others.
    pub(crate) fn whole(self) -> bool {
        self.flag && self.key
    }

    /// The union of two files' halves.
    pub(crate) fn with(self, other: Halves) -> Halves {
        Halves {
            flag: self.flag || other.flag,
            key: self.key || other.key,
        }
    }
}

/// What a byte stream shows, reading at most [`SIGN_READ_CAP`] bytes.
pub(crate) fn detect_reader<R: Read>(reader: R) -> std::io::Result<Sign> {
    evidence_reader(reader).map(|(s, _)| s)
}

/// [`detect_reader`], with the halves seen.
fn evidence_reader<R: Read>(mut reader: R) -> std::io::Result<(Sign, Halves)> {
    let f = finders();
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let mut kept = 0usize;
        let mut total = 0u64;
        let mut seen = Seen::default();
        let (mut binary, mut script) = (false, false);
        let mut first = true;
        loop {
            let (n, eof) = fill(&mut reader, &mut buf, kept, &mut total)?;
            let chunk = &buf[..n];
            if first {
                binary = is_binary(chunk);
                script = chunk.starts_with(b"#!");
            }
            // A hit is judged once its context is in the buffer: not in the carried
            // head (judged by the previous fill) unless this is the first fill, and not
            // in the tail unless the file ends here.
            let judged = |i: usize| (first || i >= CARRY - RIGHT) && (eof || i + RIGHT <= n);
            for i in f.word.find_iter(chunk) {
                if judged(i) {
                    seen.atip_at(chunk, i);
                }
            }
            for i in f.flag.find_iter(chunk) {
                if judged(i) {
                    seen.flag_at(chunk, i);
                }
            }
            if binary && seen.loose && !seen.agent {
                seen.agent = f.agent.find(chunk).is_some();
            }
            let halves = Halves {
                flag: seen.flag,
                key: seen.key || seen.word,
            };
            if seen.flag && seen.key {
                return Ok((Sign::FlagKey, halves));
            }
            if eof {
                let sign = if seen.flag && seen.word {
                    Sign::FlagWord
                } else if binary && seen.loose && seen.agent {
                    Sign::Binary
                } else if script && total <= SCRIPT_MAX && seen.handled {
                    Sign::Script
                } else {
                    Sign::None
                };
                return Ok((sign, halves));
            }
            kept = CARRY.min(n);
            buf.copy_within(n - kept..n, 0);
            first = false;
        }
    })
}

/// Fills `buf` after the `kept` bytes carried from the previous fill, reading no more
/// than [`SIGN_READ_CAP`] bytes in all (`total` counts them). Returns the bytes in the
/// buffer and whether the stream (or the cap) ended.
fn fill<R: Read>(
    reader: &mut R,
    buf: &mut [u8],
    kept: usize,
    total: &mut u64,
) -> std::io::Result<(usize, bool)> {
    let mut n = kept;
    while n < buf.len() {
        let room = (buf.len() - n).min((SIGN_READ_CAP - *total) as usize);
        if room == 0 {
            return Ok((n, true));
        }
        match reader.read(&mut buf[n..n + room]) {
            Ok(0) => return Ok((n, true)),
            Ok(k) => {
                n += k;
                *total += k as u64;
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok((n, false))
}

/// The file starts like a compiled executable (ELF, Mach-O, a universal binary).
fn is_binary(head: &[u8]) -> bool {
    head.starts_with(b"\x7fELF")
        || [
            [0xfe, 0xed, 0xfa, 0xce],
            [0xfe, 0xed, 0xfa, 0xcf],
            [0xce, 0xfa, 0xed, 0xfe],
            [0xcf, 0xfa, 0xed, 0xfe],
            [0xca, 0xfe, 0xba, 0xbe],
        ]
        .iter()
        .any(|m| head.starts_with(m))
}

/// What the file at `path` shows, and its bytes when it has at most `small` of them (a
/// possible launcher, which the caller reads next): a file is opened and read once.
pub(crate) fn detect_keeping_small(
    path: &Path,
    small: u64,
) -> std::io::Result<(Sign, Option<Vec<u8>>)> {
    let mut file = File::open(path)?;
    if file.metadata()?.len() > small {
        return Ok((detect_reader(file)?, None));
    }
    let mut bytes = Vec::new();
    // Bounded even if the file grew since its size was read.
    (&mut file).take(small + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > small {
        // It grew past `small`: read as a stream, from the start, as any big file.
        use std::io::{Seek, SeekFrom};
        file.seek(SeekFrom::Start(0))?;
        return Ok((detect_reader(file)?, None));
    }
    let sign = detect_reader(bytes.as_slice())?;
    Ok((sign, Some(bytes)))
}

/// What the file at `path` shows, with the halves it holds.
pub(crate) fn evidence(path: &Path) -> std::io::Result<(Sign, Halves)> {
    evidence_reader(File::open(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(bytes: &[u8]) -> Sign {
        detect_reader(bytes).unwrap()
    }

    #[test]
    fn a_small_file_is_kept_and_judged_as_its_bytes() {
        let t = tempfile::tempdir().unwrap();
        let small = t.path().join("small");
        let script = b"#!/bin/sh\ncase \"$1\" in --agent) cat \"$0.json\";; esac\n";
        std::fs::write(&small, script).unwrap();
        let (s, kept) = detect_keeping_small(&small, 8 << 10).unwrap();
        assert_eq!(s, sign(script));
        assert_eq!(s, Sign::Script);
        assert_eq!(kept.as_deref(), Some(&script[..]));
        // A file of more bytes than `small` is judged whole, and not kept.
        let big = t.path().join("big");
        let mut bytes = vec![b'x'; 9 << 10];
        bytes.extend_from_slice(b" --agent \"atip\"");
        std::fs::write(&big, &bytes).unwrap();
        let (s, kept) = detect_keeping_small(&big, 8 << 10).unwrap();
        assert_eq!((s, kept), (Sign::FlagKey, None));
        // Exactly `small` bytes is still small.
        let (_, kept) = detect_keeping_small(&small, script.len() as u64).unwrap();
        assert_eq!(kept.map(|k| k.len()), Some(script.len()));
        let (_, kept) = detect_keeping_small(&small, script.len() as u64 - 1).unwrap();
        assert_eq!(kept, None);
    }

    #[test]
    fn flag_with_a_quoted_key() {
        for b in [
            &b"if [ \"$1\" = --agent ]; then cat <<E\n{\"atip\": \"0.4\"}\nE\nfi"[..],
            b"\x7fELF\0\0--agent\0{\"atip\":{\"version\":\"0.6\"}}",
            b"print('{' + \"'atip'\" + '}') # --agent",
            b"echo \"{\\\"atip\\\": 1}\" --agent",
            b"const k = `atip`; // --agent",
        ] {
            assert_eq!(sign(b), Sign::FlagKey, "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn flag_with_a_bare_key() {
        // A JS/TS object literal, a Python keyword argument, YAML.
        for b in [
            &b"#!/usr/bin/env node\nconst meta = { atip: { version: '0.6' } };\nif (process.argv.includes('--agent')) {}"[..],
            b"def main():\n    m = dict(atip=dict(version=\"0.6\"))\n    if '--agent' in sys.argv: print(m)",
            b"atip :\n  version: 0.6\n# --agent",
        ] {
            assert_eq!(sign(b), Sign::FlagWord, "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn compiled_programs_with_atip_and_agent() {
        // clap keeps the flag as `agent`; serde keeps the key `atip` among other literals.
        assert_eq!(
            sign(b"\x7fELF\x02\x01\0\0agentprint metadata\0\0atip0.6name"),
            Sign::Binary
        );
        assert_eq!(
            sign(b"\xcf\xfa\xed\xfe\0agent\0json:\"atip\"\0"),
            Sign::Binary
        );
        // `atip` inside a word (gh's `datatipMove`), or no `agent`: nothing.
        assert_eq!(sign(b"\x7fELF\0datatipMove\0user-agent\0"), Sign::None);
        assert_eq!(sign(b"\x7fELF\0technoratipersonales agent"), Sign::None);
        // A serde field table packs the names together.
        assert_eq!(
            sign(b"\x7fELF\0helpshimatipnameversion\0agentprint"),
            Sign::Binary
        );
        assert_eq!(sign(b"\x7fELF\0{\"atip\":1}\0"), Sign::None);
        // The same bytes in a script are no sign: only compiled programs get this rule.
        assert_eq!(sign(b"#!/bin/sh\n# agent atip\n"), Sign::None);
    }

    #[test]
    fn short_scripts_that_test_for_the_flag() {
        assert_eq!(
            sign(b"#!/bin/sh\ncase \"${1:-}\" in\n  --agent) exec cat \"$DATA/tool.json\" ;;\nesac\n"),
            Sign::Script
        );
        assert_eq!(
            sign(b"#!/bin/sh\n[ \"$1\" = --agent ] && exec cat x.json\n"),
            Sign::Script
        );
        // An ssh-agent style option that answers no JSON is not.
        assert_eq!(
            sign(b"#!/bin/sh\ncase \"$1\" in --agent) echo 'needs SOCKET' >&2; exit 2;; esac\n"),
            Sign::None
        );
        assert_eq!(
            sign(b"#!/usr/bin/env python3\nif sys.argv[1] == \"--agent\": print(json.dumps(M))\n"),
            Sign::Script
        );
        // Not a script (no shebang), or only mentioning the flag in help text.
        assert_eq!(sign(b"case $1 in --agent) ;; esac"), Sign::None);
        assert_eq!(
            sign(b"#!/bin/sh\necho '  --agent   print ATIP metadata'\n"),
            Sign::None
        );
        // Too big to be a short wrapper.
        let mut big = b"#!/bin/sh\ncase $1 in --agent) cat x.json ;; esac\n".to_vec();
        big.extend(std::iter::repeat_n(b'#', SCRIPT_MAX as usize));
        assert_eq!(sign(&big), Sign::None);
    }

    #[test]
    fn not_signs() {
        for b in [
            &b"  --agent   print ATIP metadata"[..],
            b"# decoy: not ATIP; --agent here means an ssh-agent socket",
            b"Usage: x [--agent SOCKET] HOST",
            b"# not an ATIP tool; path /tmp/atip-fake/exec.log",
            b"{\"atip\": \"0.4\"}",
            b"",
            // A path holding the word next to the flag is not a key.
            b"echo run >> /tmp/atip-fake-path/exec.log; ssh-add --agent x",
        ] {
            assert_eq!(sign(b), Sign::None, "{}", String::from_utf8_lossy(b));
        }
    }

    #[test]
    fn matches_across_buffer_boundaries() {
        for split in [
            CHUNK - 3,
            CHUNK - 1,
            CHUNK,
            2 * CHUNK - CARRY - 2,
            CHUNK - 10,
            CHUNK + 20,
        ] {
            let mut big = vec![b'x'; split];
            big.extend_from_slice(b"--agent");
            big.extend(std::iter::repeat_n(b'y', CHUNK + 5));
            big.extend_from_slice(b" \"atip\" ");
            assert_eq!(sign(&big), Sign::FlagKey, "split at {split}");
            // Key first, flag later, across fills.
            let mut rev = vec![b'x'; split];
            rev.extend_from_slice(b" 'atip' ");
            rev.extend(std::iter::repeat_n(b'y', 3 * CHUNK));
            rev.extend_from_slice(b"--agent");
            assert_eq!(sign(&rev), Sign::FlagKey, "reversed, split at {split}");
            // A bare key whose `:` lands in the next fill.
            let mut word = vec![b'x'; split];
            word.extend_from_slice(b" atip: {} --agent");
            assert_eq!(sign(&word), Sign::FlagWord, "word, split at {split}");
            let mut none = vec![b'x'; split];
            none.extend_from_slice(b"--agen");
            assert_eq!(sign(&none), Sign::None);
        }
    }
}
