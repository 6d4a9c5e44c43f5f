//! A light, read-only view of one clean JSON document, for the fast path.
//!
//! Building a `serde_json::Value` with `preserve_order` costs one allocation per string
//! and container plus a SipHash per key: most of `atip validate`'s time. The view costs
//! four vectors per document: strings without escapes are borrowed from the text
//! (escaped ones are decoded into one shared buffer), arrays and objects are contiguous
//! runs of those vectors, objects are searched linearly (they are small), and duplicate
//! keys are noticed when an object closes.
//!
//! Owns only the "is this document clean" parse: [`Doc::parse`] answers `None` for
//! anything that is not plainly valid JSON — a byte-order mark, bad UTF-8, empty input,
//! any syntax error, duplicate keys, nesting past serde_json's limit, a number serde_json
//! might refuse — and the caller then runs the full parse (`parse`), which produces every
//! diagnostic. So `None` is always safe; `Some` must only ever be given for a document
//! serde_json parses to the same value. Nothing here recurses on the input.

use super::json::Json;
use serde_json::Value;

/// Deepest nesting accepted: the depth serde_json's recursion limit lets through
/// (tested against it).
const MAX_NESTING: usize = 127;

/// Duplicate keys are looked for by sorting above this many members, pairwise below.
const PAIRWISE: usize = 16;

/// A string: a span of the text, or of the decoded buffer when it had escapes (the top
/// bit of `len`). Eight bytes, so that members and parser results stay small and
/// aligned.
#[derive(Debug, Clone, Copy)]
struct Str {
    start: u32,
    len: u32,
}

const DECODED: u32 = 1 << 31;

impl Str {
    #[inline]
    fn text(start: usize, len: usize) -> Str {
        Str {
            start: start as u32,
            len: len as u32,
        }
    }
    #[inline]
    fn decoded(start: usize, len: usize) -> Str {
        Str {
            start: start as u32,
            len: len as u32 | DECODED,
        }
    }
    #[inline]
    fn is_decoded(self) -> bool {
        self.len & DECODED != 0
    }
    #[inline]
    fn range(self) -> std::ops::Range<usize> {
        let start = self.start as usize;
        start..start + (self.len & !DECODED) as usize
    }
}

/// Whether two keys with equal [`key_tag`]s (same length, same first seven bytes) are
/// equal: up to 15 bytes by comparing their last eight as one word, no `memcmp` call.
#[inline]
pub fn same_tagged_key(a: &str, b: &str) -> bool {
    same_tagged_bytes(a.as_bytes(), b.as_bytes())
}

/// [`same_tagged_key`] over bytes: a key read for it needs no UTF-8 boundary checks.
#[inline]
pub fn same_tagged_bytes(a: &[u8], b: &[u8]) -> bool {
    match a.len() {
        n if n != b.len() => false,
        0..8 => true,
        8..16 => tail_word(a) == tail_word(b),
        _ => a == b,
    }
}

/// The last eight bytes of a key of 8 to 15 bytes as one word (0 otherwise): keys with
/// equal [`key_tag`]s and equal tail words are equal.
#[inline]
pub fn tail_word(key: &[u8]) -> u64 {
    match key.len() {
        n @ 8..16 => key[n - 8..]
            .first_chunk::<8>()
            .map_or(0, |w| u64::from_le_bytes(*w)),
        _ => 0,
    }
}

#[derive(Debug, Clone, Copy)]
enum Node {
    Null,
    Bool(bool),
    /// A number serde_json holds as `i64` or `u64`, by its text. Integers and floats
    /// are apart so that a value's type is its variant alone.
    Int(Str),
    /// Any other number, by its text.
    Float(Str),
    Str(Str),
    /// `len` elements from `Doc::items[start]`.
    Arr {
        start: u32,
        len: u32,
    },
    /// `len` members from `Doc::members[start]`.
    Obj {
        start: u32,
        len: u32,
    },
}

#[derive(Debug, Clone, Copy)]
struct Member {
    key: Str,
    /// [`key_tag`] of the key: most look-ups are settled without comparing strings.
    tag: u64,
    value: Node,
}

/// A key's first seven bytes and its length in one word: equal tags mean equal keys
/// for keys of up to seven bytes, and a mere length-and-prefix match otherwise.
#[inline(always)]
pub fn key_tag(key: &str) -> u64 {
    let bytes = key.as_bytes();
    let n = bytes.len();
    let length = (n.min(255) as u64) << 56;
    let word = if let Some(head) = bytes.first_chunk::<8>() {
        u64::from_le_bytes(*head) & 0x00FF_FFFF_FFFF_FFFF
    } else if let (Some(head), Some(tail)) = (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        // 4 to 7 bytes: two overlapping loads (the shared bytes are the same).
        u64::from(u32::from_le_bytes(*head)) | u64::from(u32::from_le_bytes(*tail)) << (8 * (n - 4))
    } else if let (Some(&first), Some(&last)) = (bytes.first(), bytes.last()) {
        // 1 to 3 bytes: first, middle and last (some of them the same byte).
        let middle = bytes[n / 2];
        u64::from(first) | u64::from(middle) << (8 * (n / 2)) | u64::from(last) << (8 * (n - 1))
    } else {
        0
    };
    word | length
}

/// [`key_tag`] of a key of `len` bytes whose first bytes (and then whatever follows)
/// are the eight of `word`: one load instead of a byte loop.
#[inline]
fn tag_of_word(word: &[u8], len: usize) -> u64 {
    let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
    let kept = if len >= 7 { 7 } else { len };
    let mask = (1u64 << (8 * kept)) - 1;
    (word & mask) | ((len.min(255) as u64) << 56)
}

/// One parsed document.
#[derive(Debug)]
pub struct Doc<'t> {
    text: &'t str,
    decoded: String,
    items: Vec<Node>,
    members: Vec<Member>,
    root: Node,
}

/// A value of a [`Doc`].
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    doc: &'a Doc<'a>,
    node: &'a Node,
}

enum Frame {
    Arr { start: usize },
    Obj { start: usize, key: (Str, u64) },
}

/// What became of a value handed to its container ([`Parser::hand_up`]).
enum Handed {
    /// There was no container: this is the document.
    Root(Node),
    /// A comma: the container's next value comes.
    More,
    /// The container ended: it is the finished value.
    Closed(Node),
}

struct Parser<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
    decoded: String,
    items: Vec<Node>,
    members: Vec<Member>,
    // Elements and members of the containers still open; moved to `items` and
    // `members` as one run when their container closes.
    open_items: Vec<Node>,
    open_members: Vec<Member>,
}

impl<'t> Doc<'t> {
    /// Parses a clean document; `None` for anything else (see the module comment).
    pub fn parse(bytes: &'t [u8]) -> Option<Doc<'t>> {
        // Spans are 31 bits (`Str`).
        if bytes.starts_with(super::parse::BOM) || bytes.len() >= DECODED as usize {
            return None;
        }
        let text = std::str::from_utf8(bytes).ok()?;
        if text.trim_ascii().is_empty() {
            return None;
        }
        let spare = SPARE.take();
        let mut p = Parser {
            text,
            bytes,
            pos: 0,
            decoded: spare.decoded,
            items: spare.items,
            members: spare.members,
            open_items: spare.open_items,
            open_members: spare.open_members,
        };
        let root = p.document()?;
        SPARE.with_borrow_mut(|s| {
            s.open_items = std::mem::take(&mut p.open_items);
            s.open_members = std::mem::take(&mut p.open_members);
        });
        Some(Doc {
            text,
            decoded: p.decoded,
            items: p.items,
            members: p.members,
            root,
        })
    }

    /// The whole document.
    pub fn root(&self) -> View<'_> {
        View {
            doc: self,
            node: &self.root,
        }
    }

    #[inline]
    fn str(&self, s: Str) -> &str {
        let range = s.range();
        if s.is_decoded() {
            &self.decoded[range]
        } else {
            &self.text[range]
        }
    }

    /// [`Doc::str`]'s bytes, sliced without checking character boundaries (every span
    /// is a whole string, so they hold): key comparisons need no more.
    #[inline]
    fn bytes_of(&self, s: Str) -> &[u8] {
        let range = s.range();
        if s.is_decoded() {
            &self.decoded.as_bytes()[range]
        } else {
            &self.text.as_bytes()[range]
        }
    }
}

/// The vectors of the last document a thread dropped, cleared, for the next one: a
/// document then costs no allocation once the first few have grown them.
#[derive(Default)]
struct Spare {
    decoded: String,
    items: Vec<Node>,
    members: Vec<Member>,
    open_items: Vec<Node>,
    open_members: Vec<Member>,
}

/// Spare vectors above this many elements are freed rather than kept per thread. A
/// ~60 KB document of ~200 commands stays well below; a 1 MB answer's vectors (~1.3 MB)
/// are freed, not held on a scan's probe thread beside the model it parses next.
const KEEP_SPARE: usize = 1 << 14;

thread_local! {
    static SPARE: std::cell::RefCell<Spare> = std::cell::RefCell::default();
}

impl Drop for Doc<'_> {
    fn drop(&mut self) {
        if self.items.capacity().max(self.members.capacity()) > KEEP_SPARE
            || self.decoded.capacity() > KEEP_SPARE * 16
        {
            return;
        }
        let mut decoded = std::mem::take(&mut self.decoded);
        let mut items = std::mem::take(&mut self.items);
        let mut members = std::mem::take(&mut self.members);
        decoded.clear();
        items.clear();
        members.clear();
        // `try_with`: a document dropped while the thread ends just frees its vectors.
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                s.decoded = decoded;
                s.items = items;
                s.members = members;
            }
        });
    }
}

impl<'t> Parser<'t> {
    #[inline]
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.bytes.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> Option<()> {
        self.skip_ws();
        (self.peek()? == b).then(|| self.pos += 1)
    }

    /// The whole text as one value (nothing but whitespace after it); `None` when it is
    /// not JSON the fast path takes. Iterative: containers are a stack of [`Frame`]s.
    fn document(&mut self) -> Option<Node> {
        let mut stack: Vec<Frame> = Vec::new();
        loop {
            let Some(mut value) = self.value_or_open(&mut stack)? else {
                continue;
            };
            // Hand the finished value to its container; close containers that end here.
            loop {
                match self.hand_up(&mut stack, value)? {
                    Handed::Root(value) => {
                        self.skip_ws();
                        return (self.pos == self.bytes.len()).then_some(value);
                    }
                    Handed::More => break,
                    Handed::Closed(container) => value = container,
                }
            }
        }
    }

    /// The value at `pos`: a scalar or an empty container, whole (`Some(Some)`), or a
    /// container opened onto `stack` whose first element comes next (`Some(None)`).
    #[inline]
    fn value_or_open(&mut self, stack: &mut Vec<Frame>) -> Option<Option<Node>> {
        self.skip_ws();
        let value = match self.peek()? {
            b'{' | b'[' if stack.len() >= MAX_NESTING => return None,
            b'{' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? != b'}' {
                    let key = self.key()?;
                    stack.push(Frame::Obj {
                        start: self.open_members.len(),
                        key,
                    });
                    return Some(None);
                }
                self.pos += 1;
                Node::Obj { start: 0, len: 0 }
            }
            b'[' => {
                self.pos += 1;
                self.skip_ws();
                if self.peek()? != b']' {
                    stack.push(Frame::Arr {
                        start: self.open_items.len(),
                    });
                    return Some(None);
                }
                self.pos += 1;
                Node::Arr { start: 0, len: 0 }
            }
            b'"' => Node::Str(self.string()?),
            b't' => self.literal(b"true", Node::Bool(true))?,
            b'f' => self.literal(b"false", Node::Bool(false))?,
            b'n' => self.literal(b"null", Node::Null)?,
            b'-' | b'0'..=b'9' => self.number()?,
            _ => return None,
        };
        Some(Some(value))
    }

    /// Gives a finished value to the innermost container, then reads what follows: a
    /// comma (the next element or member's value comes), or the container's end (it is
    /// closed and becomes the finished value).
    #[inline]
    fn hand_up(&mut self, stack: &mut Vec<Frame>, value: Node) -> Option<Handed> {
        match stack.last_mut() {
            None => Some(Handed::Root(value)),
            Some(Frame::Arr { start }) => {
                let start = *start;
                self.open_items.push(value);
                self.skip_ws();
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        Some(Handed::More)
                    }
                    b']' => {
                        self.pos += 1;
                        stack.pop();
                        let value = Node::Arr {
                            start: self.items.len() as u32,
                            len: (self.open_items.len() - start) as u32,
                        };
                        self.items.extend_from_slice(&self.open_items[start..]);
                        self.open_items.truncate(start);
                        Some(Handed::Closed(value))
                    }
                    _ => None,
                }
            }
            Some(Frame::Obj { start, key }) => {
                let start = *start;
                self.open_members.push(Member {
                    key: key.0,
                    tag: key.1,
                    value,
                });
                self.skip_ws();
                match self.peek()? {
                    b',' => {
                        self.pos += 1;
                        self.skip_ws();
                        *key = self.key()?;
                        Some(Handed::More)
                    }
                    b'}' => {
                        self.pos += 1;
                        stack.pop();
                        if self.has_duplicates(&self.open_members[start..]) {
                            return None;
                        }
                        let value = Node::Obj {
                            start: self.members.len() as u32,
                            len: (self.open_members.len() - start) as u32,
                        };
                        self.members.extend_from_slice(&self.open_members[start..]);
                        self.open_members.truncate(start);
                        Some(Handed::Closed(value))
                    }
                    _ => None,
                }
            }
        }
    }

    /// A member's key, its tag, and its colon.
    #[inline(always)]
    fn key(&mut self) -> Option<(Str, u64)> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        self.eat(b':')?;
        let tag = match self.bytes.get(key.start as usize..key.start as usize + 8) {
            Some(word) if !key.is_decoded() => tag_of_word(word, key.range().len()),
            _ => key_tag(self.resolve(key)),
        };
        Some((key, tag))
    }

    #[inline]
    fn resolve(&self, s: Str) -> &str {
        let range = s.range();
        if s.is_decoded() {
            &self.decoded[range]
        } else {
            &self.text[range]
        }
    }

    fn has_duplicates(&self, members: &[Member]) -> bool {
        if members.len() <= PAIRWISE {
            members.iter().enumerate().any(|(i, m)| {
                members[..i].iter().any(|n| {
                    n.tag == m.tag && same_tagged_key(self.resolve(n.key), self.resolve(m.key))
                })
            })
        } else {
            let mut keys: Vec<&str> = members.iter().map(|m| self.resolve(m.key)).collect();
            keys.sort_unstable();
            keys.windows(2).any(|w| w[0] == w[1])
        }
    }

    fn literal(&mut self, word: &[u8], node: Node) -> Option<Node> {
        self.bytes[self.pos..].starts_with(word).then(|| {
            self.pos += word.len();
            node
        })
    }

    /// A number as JSON writes it. serde_json holds integers that fit `u64` (or `i64`
    /// when negative, `-0` excepted) as integers and the rest as `f64`; a float that is
    /// not plainly finite (near or past `f64::MAX`) is left to serde_json, which may
    /// refuse it.
    fn number(&mut self) -> Option<Node> {
        let start = self.pos;
        let digits = |p: &mut Self| {
            let from = p.pos;
            while let Some(b'0'..=b'9') = p.peek() {
                p.pos += 1;
            }
            p.pos > from
        };
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => {
                self.pos += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return None;
                }
            }
            b'1'..=b'9' => {
                digits(self);
            }
            _ => return None,
        }
        let mut int = true;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            int = false;
            if !digits(self) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            int = false;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            if !digits(self) {
                return None;
            }
        }
        let text = &self.text[start..self.pos];
        let negative = text.starts_with('-');
        // Up to 18 digits always fit i64 and u64: no need to parse them.
        let short = text.len() - usize::from(negative) <= 18;
        let int = int
            && if short {
                text != "-0"
            } else if negative {
                text.parse::<i64>().is_ok_and(|n| n != 0)
            } else {
                text.parse::<u64>().is_ok()
            };
        if !int && !text.parse::<f64>().is_ok_and(|f| f.abs() < 1e300) {
            return None;
        }
        let text = Str::text(start, self.pos - start);
        Some(if int {
            Node::Int(text)
        } else {
            Node::Float(text)
        })
    }

    /// A string from its opening quote: borrowed when it has no escapes, else decoded
    /// into the shared buffer. Raw control characters and lone surrogates are refused,
    /// as serde_json refuses them.
    #[inline(always)]
    fn string(&mut self) -> Option<Str> {
        self.pos += 1;
        let start = self.pos;
        self.pos = special(self.bytes, self.pos);
        match *self.bytes.get(self.pos)? {
            b'"' => {
                self.pos += 1;
                Some(Str::text(start, self.pos - 1 - start))
            }
            b'\\' => self.escaped(start),
            _ => None,
        }
    }

    /// The rest of a string with escapes, from its first backslash (`start` is just
    /// after its opening quote): decoded into the shared buffer. Rare, so kept apart
    /// from the inlined common case.
    #[cold]
    #[inline(never)]
    fn escaped(&mut self, start: usize) -> Option<Str> {
        let from = self.decoded.len();
        self.decoded.push_str(&self.text[start..self.pos]);
        loop {
            let b = *self.bytes.get(self.pos)?;
            match b {
                b'"' => {
                    self.pos += 1;
                    return Some(Str::decoded(from, self.decoded.len() - from));
                }
                b'\\' => {
                    self.pos += 1;
                    let c = match *self.bytes.get(self.pos)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let hi = self.hex4()?;
                            match hi {
                                0xD800..=0xDBFF => {
                                    if !self.bytes[self.pos + 1..].starts_with(b"\\u") {
                                        return None;
                                    }
                                    self.pos += 2;
                                    let lo = self.hex4()?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return None;
                                    }
                                    let c = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                                    char::from_u32(c)?
                                }
                                0xDC00..=0xDFFF => return None,
                                c => char::from_u32(c)?,
                            }
                        }
                        _ => return None,
                    };
                    self.decoded.push(c);
                    self.pos += 1;
                }
                0..=0x1f => return None,
                _ => {
                    // Copy the run up to the next quote, escape or control character.
                    let run = self.pos;
                    self.pos = special(self.bytes, self.pos);
                    self.decoded.push_str(&self.text[run..self.pos]);
                }
            }
        }
    }

    /// The four hex digits after `\u` (`pos` on the `u`); leaves `pos` on the last one.
    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.pos + 1..self.pos + 5)?;
        let mut n = 0;
        for &d in digits {
            n = n * 16 + (d as char).to_digit(16)?;
        }
        self.pos += 4;
        Some(n)
    }
}

/// The index of the first `"`, `\\` or control character at or after `at` (or the
/// length): eight bytes at a time, since strings are most of a metadata document.
#[inline]
fn special(bytes: &[u8], at: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    let at = match special_sse2(bytes, at) {
        Ok(found) => return found,
        Err(tail) => tail,
    };
    special_swar(bytes, at)
}

/// [`special`] sixteen bytes at a time with SSE2 (part of every x86-64 CPU): `Ok` with
/// the index found, or `Err` with where the last (under sixteen) bytes start, which are
/// left to [`special_swar`].
#[cfg(target_arch = "x86_64")]
#[inline]
fn special_sse2(bytes: &[u8], mut at: usize) -> Result<usize, usize> {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    // SAFETY: SSE2 is part of the x86-64 baseline, so its intrinsics are always
    // available; each load reads exactly the sixteen bytes of `chunk`, unaligned.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let control = _mm_set1_epi8(0x1f);
        while let Some(chunk) = bytes.get(at..at + 16) {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            let hits = _mm_or_si128(
                _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                // Bytes up to 0x1f: those whose minimum with 0x1f is themselves.
                _mm_cmpeq_epi8(_mm_min_epu8(v, control), v),
            );
            let mask = _mm_movemask_epi8(hits) as u32;
            if mask != 0 {
                return Ok(at + mask.trailing_zeros() as usize);
            }
            at += 16;
        }
    }
    Err(at)
}

/// [`special`] eight bytes at a time in a plain word.
#[inline]
fn special_swar(bytes: &[u8], mut at: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = bytes.get(at..at + 8) {
        let w = u64::from_le_bytes(chunk.try_into().unwrap_or_default());
        let quote = w ^ (ONES * u64::from(b'"'));
        let backslash = w ^ (ONES * u64::from(b'\\'));
        // Per byte: zero (after the xor) or below 0x20. Borrows can only mark bytes
        // above a real match, so the lowest mark is always a real one.
        let found = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (w.wrapping_sub(ONES * 0x20) & !w))
            & HIGH;
        if found != 0 {
            return at + (found.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while at < bytes.len() && !matches!(bytes[at], b'"' | b'\\' | 0..=0x1f) {
        at += 1;
    }
    at
}

/// Array elements of a [`View`].
#[derive(Clone)]
pub struct Items<'a> {
    doc: &'a Doc<'a>,
    iter: std::slice::Iter<'a, Node>,
}

impl<'a> Iterator for Items<'a> {
    type Item = View<'a>;
    fn next(&mut self) -> Option<View<'a>> {
        let doc = self.doc;
        self.iter.next().map(|node| View { doc, node })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

impl DoubleEndedIterator for Items<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let doc = self.doc;
        self.iter.next_back().map(|node| View { doc, node })
    }
}

impl ExactSizeIterator for Items<'_> {}

/// Object members of a [`View`].
#[derive(Clone)]
pub struct Members<'a> {
    doc: &'a Doc<'a>,
    iter: std::slice::Iter<'a, Member>,
}

impl<'a> Iterator for Members<'a> {
    type Item = (&'a str, View<'a>);
    fn next(&mut self) -> Option<Self::Item> {
        let doc = self.doc;
        self.iter.next().map(|m| {
            (
                doc.str(m.key),
                View {
                    doc,
                    node: &m.value,
                },
            )
        })
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.iter.size_hint()
    }
}

impl DoubleEndedIterator for Members<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let doc = self.doc;
        self.iter.next_back().map(|m| {
            (
                doc.str(m.key),
                View {
                    doc,
                    node: &m.value,
                },
            )
        })
    }
}

impl ExactSizeIterator for Members<'_> {}

/// A member's key, not yet read from the text.
#[derive(Clone, Copy)]
pub struct Key<'a> {
    doc: &'a Doc<'a>,
    key: Str,
}

impl<'a> Key<'a> {
    /// Its length in bytes.
    #[inline]
    pub fn len(self) -> usize {
        self.key.range().len()
    }
    /// Whether it is `""`.
    #[inline]
    pub fn is_empty(self) -> bool {
        self.len() == 0
    }
    /// The key.
    #[inline]
    pub fn text(self) -> &'a str {
        self.doc.str(self.key)
    }
    /// The key's bytes (cheaper than [`Key::text`] to compare).
    #[inline]
    pub fn bytes(self) -> &'a [u8] {
        self.doc.bytes_of(self.key)
    }
}

/// The JSON type of a [`View`], in one match (the schema check asks it of every value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// `null`.
    Null,
    /// `true` or `false`.
    Boolean,
    /// A number serde_json holds as `i64` or `u64`.
    Integer,
    /// Any other number.
    Float,
    /// A string.
    String,
    /// An array.
    Array,
    /// An object.
    Object,
}

impl<'a> View<'a> {
    /// Its JSON type.
    #[inline]
    pub fn json_type(self) -> Type {
        match self.node {
            Node::Null => Type::Null,
            Node::Bool(_) => Type::Boolean,
            Node::Int(_) => Type::Integer,
            Node::Float(_) => Type::Float,
            Node::Str(_) => Type::String,
            Node::Arr { .. } => Type::Array,
            Node::Obj { .. } => Type::Object,
        }
    }

    /// The number's text, when this is a number.
    pub fn number_text(self) -> Option<&'a str> {
        match *self.node {
            Node::Int(text) | Node::Float(text) => Some(self.doc.str(text)),
            _ => None,
        }
    }

    /// The members with their [`key_tag`]s, when this is an object; each key is read
    /// from the text only if asked ([`Key::text`]): the tag settles most questions.
    pub fn tagged_members(self) -> Option<impl Iterator<Item = (u64, Key<'a>, View<'a>)>> {
        let doc = self.doc;
        Some(self.member_slice()?.iter().map(move |m| {
            (
                m.tag,
                Key { doc, key: m.key },
                View {
                    doc,
                    node: &m.value,
                },
            )
        }))
    }

    fn member_slice(self) -> Option<&'a [Member]> {
        match *self.node {
            Node::Obj { start, len } => {
                Some(&self.doc.members[start as usize..(start + len) as usize])
            }
            _ => None,
        }
    }
}

impl<'a> Json<'a> for View<'a> {
    type Items = Items<'a>;
    type Members = Members<'a>;

    #[inline(always)]
    fn get(self, key: &str) -> Option<Self> {
        let doc = self.doc;
        let tag = key_tag(key);
        self.member_slice()?
            .iter()
            .find(|m| {
                m.tag == tag
                    && (key.len() < 8 || same_tagged_bytes(doc.bytes_of(m.key), key.as_bytes()))
            })
            .map(|m| View {
                doc,
                node: &m.value,
            })
    }
    #[inline]
    fn members(self) -> Option<Members<'a>> {
        Some(Members {
            doc: self.doc,
            iter: self.member_slice()?.iter(),
        })
    }
    #[inline]
    fn items(self) -> Option<Items<'a>> {
        match *self.node {
            Node::Arr { start, len } => Some(Items {
                doc: self.doc,
                iter: self.doc.items[start as usize..(start + len) as usize].iter(),
            }),
            _ => None,
        }
    }
    #[inline]
    fn no_items(self) -> Items<'a> {
        Items {
            doc: self.doc,
            iter: [].iter(),
        }
    }
    #[inline]
    fn as_str(self) -> Option<&'a str> {
        match *self.node {
            Node::Str(s) => Some(self.doc.str(s)),
            _ => None,
        }
    }
    #[inline]
    fn as_bool(self) -> Option<bool> {
        match *self.node {
            Node::Bool(b) => Some(b),
            _ => None,
        }
    }
    fn is_null(self) -> bool {
        matches!(self.node, Node::Null)
    }
    fn is_number(self) -> bool {
        matches!(self.node, Node::Int(_) | Node::Float(_))
    }
    fn is_integer(self) -> bool {
        matches!(self.node, Node::Int(_))
    }
    fn to_value(self) -> Value {
        match *self.node {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            // serde_json's own reading of the number, so that it prints as it would.
            Node::Int(text) | Node::Float(text) => {
                serde_json::from_str(self.doc.str(text)).unwrap_or(Value::Null)
            }
            Node::Str(s) => Value::String(self.doc.str(s).to_owned()),
            Node::Arr { .. } => Value::Array(
                self.items()
                    .into_iter()
                    .flatten()
                    .map(View::to_value)
                    .collect(),
            ),
            Node::Obj { .. } => Value::Object(
                self.members()
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.to_owned(), v.to_value()))
                    .collect(),
            ),
        }
    }
    fn same(self, other: Self) -> bool {
        match (*self.node, *other.node) {
            (Node::Null, Node::Null) => true,
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Int(_) | Node::Float(_), Node::Int(_) | Node::Float(_)) => {
                self.to_value() == other.to_value()
            }
            (Node::Str(a), Node::Str(b)) => self.doc.str(a) == other.doc.str(b),
            (Node::Arr { len: a, .. }, Node::Arr { len: b, .. }) => {
                a == b
                    && self
                        .items()
                        .into_iter()
                        .flatten()
                        .zip(other.items().into_iter().flatten())
                        .all(|(x, y)| x.same(y))
            }
            (Node::Obj { len: a, .. }, Node::Obj { len: b, .. }) => {
                // Keys are unique (documents with duplicates never get a view).
                a == b
                    && self
                        .members()
                        .into_iter()
                        .flatten()
                        .all(|(k, v)| other.get(k).is_some_and(|w| v.same(w)))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::parse;

    /// 20,000 members and items: about what a 1 MB answer of 1,700 commands makes.
    #[test]
    fn a_big_documents_vectors_are_freed_and_a_small_ones_kept() {
        let members: Vec<String> = (0..20_000).map(|i| format!("\"k{i}\":[{i}]")).collect();
        let big = format!("{{{}}}", members.join(","));
        drop(Doc::parse(big.as_bytes()).unwrap());
        SPARE.with_borrow(|s| assert_eq!((s.members.capacity(), s.items.capacity()), (0, 0)));
        drop(Doc::parse(br#"{"a": [1, 2], "b": "c"}"#).unwrap());
        SPARE.with_borrow(|s| assert!(s.members.capacity() > 0 && s.items.capacity() > 0));
    }

    /// serde_json's reading of `bytes` through the full parse: the value when there is
    /// no diagnostic and no duplicate key.
    fn full(bytes: &[u8]) -> Option<Value> {
        let p = parse::parse(bytes);
        (p.diagnostics.is_empty() && p.duplicates == 0)
            .then_some(p.value)
            .flatten()
    }

    /// The view never accepts what the full parse refuses, and reads the same value,
    /// members in the same order, numbers held alike (integer or float).
    fn agrees(bytes: &[u8]) -> bool {
        let Some(doc) = Doc::parse(bytes) else {
            return false;
        };
        let ours = doc.root().to_value();
        let theirs = full(bytes);
        assert_eq!(
            theirs.as_ref().map(|t| t.to_string()),
            Some(ours.to_string()),
            "{}",
            String::from_utf8_lossy(bytes)
        );
        if let Some(theirs) = &theirs {
            assert!(
                same_types(doc.root(), theirs),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
        true
    }

    fn same_types(v: View<'_>, w: &Value) -> bool {
        v.is_integer() == (w.is_i64() || w.is_u64())
            && v.is_number() == w.is_number()
            && match (v.items(), w.as_array()) {
                (Some(a), Some(b)) => a.zip(b).all(|(x, y)| same_types(x, y)),
                (None, None) => true,
                _ => false,
            }
            && match (v.members(), w.as_object()) {
                (Some(a), Some(b)) => a
                    .zip(b)
                    .all(|((k, x), (l, y))| k == l.as_str() && same_types(x, y)),
                (None, None) => true,
                _ => false,
            }
    }

    #[test]
    fn tricky_inputs_as_serde_json_reads_them() {
        let accepted: &[&[u8]] = &[
            b"{}",
            b"[]",
            b" \t\r\n{ \"a\" : [ 1 , -2 , 3.5 , -0 , 0.0e0 , 1E+2 , 2e-3 ] } \n",
            br#"{"s": "plain", "e": "q\" b\\ s\/ \b\f\n\r\t", "u": "\u00e9\u0000\uFFFF"}"#,
            b"{\"pair\": \"\\ud83d\\ude00\", \"raw\": \"\xc3\xa9 \xf0\x9f\x98\x80\", \"del\": \"\x7f\"}",
            br#"{"big": 18446744073709551615, "neg": -9223372036854775808, "z": [0, -0, -1]}"#,
            br#"{"over": 18446744073709551616, "under": -9223372036854775809}"#,
            br#"{"x": true, "y": false, "z": null, "n": [[], {}, [{}]]}"#,
            br#"{"a\u0062": 1, "ab\u0063": 2}"#,
            b"\"just a string\"",
            b"12",
            b"null",
        ];
        for &a in accepted {
            assert!(agrees(a), "{}", String::from_utf8_lossy(a));
        }
        let refused: &[&[u8]] = &[
            b"",
            b"  \n",
            b"\xEF\xBB\xBF{}",
            b"{\"a\": \"\xff\"}",
            b"{} x",
            b"{}}",
            b"{\"a\": [1, 2",
            b"{\"a\" 1}",
            b"{\"a\": 1,}",
            b"[1,]",
            b"[01]",
            b"[1.]",
            b"[.5]",
            b"[1e]",
            b"[-]",
            b"[+1]",
            b"[1e400]",
            b"[tru]",
            b"[nul]",
            b"{'a': 1}",
            b"{\"a\": \"tab\there\"}",
            b"{\"a\": \"new\nline\"}",
            b"[\"\\x\"]",
            b"[\"\\u12\"]",
            b"[\"\\ud800\"]",
            b"[\"\\udc00\"]",
            b"[\"\\ud800\\u0041\"]",
            b"[\"unterminated",
            br#"{"a": 1, "a": 2}"#,
            br#"{"a": 1, "\u0061": 2}"#,
            b"{1: 2}",
        ];
        for &r in refused {
            assert!(!agrees(r), "{}", String::from_utf8_lossy(r));
        }
        // Duplicates among many members (sorted, not pairwise).
        let many: Vec<String> = (0..40).map(|i| format!("\"k{}\": {i}", i % 39)).collect();
        assert!(!agrees(format!("{{{}}}", many.join(",")).as_bytes()));
        let distinct: Vec<String> = (0..40).map(|i| format!("\"k{i}\": {i}")).collect();
        assert!(agrees(format!("{{{}}}", distinct.join(",")).as_bytes()));
    }

    #[test]
    fn key_tag_is_the_first_seven_bytes_and_the_length() {
        let text = "abcdefghijklmnopq\u{e9}z";
        for start in 0..4 {
            for end in start..text.len() {
                let Some(key) = text.get(start..end) else {
                    continue;
                };
                let mut word = 0u64;
                for (i, &b) in key.as_bytes().iter().take(7).enumerate() {
                    word |= u64::from(b) << (8 * i);
                }
                assert_eq!(key_tag(key), word | (key.len() as u64) << 56, "{key:?}");
            }
        }
    }

    #[test]
    fn key_tags_settle_short_keys_and_long_ones_still_compare() {
        assert_ne!(key_tag("nam"), key_tag("name"));
        assert_ne!(key_tag("a"), key_tag("a\0"));
        assert_ne!(key_tag("abcdefg"), key_tag("abcdefh"));
        // Same first seven bytes and length: same tag, told apart by the string.
        assert_eq!(key_tag("descripXion"), key_tag("description"));
        for (a, b) in [("description", "description"), ("abcdefgh", "abcdefgh")] {
            assert!(same_tagged_key(a, b));
        }
        for (a, b) in [("descripXion", "description"), ("abcdefgh", "abcdefgi")] {
            assert_eq!(key_tag(a), key_tag(b));
            assert!(!same_tagged_key(a, b));
        }
        let long = "abcdefg-0123456789";
        assert!(same_tagged_key(long, long) && !same_tagged_key(long, "abcdefg-0123456788"));
        for key in ["", "a", "abcdefg", "abcdefgh", "descripXion", "é"] {
            let padded = format!("{key}\":0}}xxxxxxxx");
            assert_eq!(
                tag_of_word(&padded.as_bytes()[..8], key.len()),
                key_tag(key)
            );
        }
        let text = br#"{"descripXion": 1, "description": 2, "abcdefgh": 3, "abcdefgi": 4}"#;
        let doc = Doc::parse(text).unwrap_or_else(|| unreachable!());
        let get = |k: &str| doc.root().get(k).map(View::to_value);
        assert_eq!(get("description"), Some(Value::from(2)));
        assert_eq!(get("descripXion"), Some(Value::from(1)));
        assert_eq!(get("abcdefgi"), Some(Value::from(4)));
        assert_eq!(get("abcdefgj"), None);
        assert!(!agrees(br#"{"abcdefgh": 1, "abcdefgh": 2}"#));
        assert!(agrees(br#"{"abcdefgh": 1, "abcdefgi": 2}"#));
    }

    #[test]
    fn nesting_bound_is_serde_jsons() {
        let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        let objects = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        for doc in [nested, objects] {
            assert!(full(doc(MAX_NESTING).as_bytes()).is_some());
            assert!(full(doc(MAX_NESTING + 1).as_bytes()).is_none());
            assert!(agrees(doc(MAX_NESTING).as_bytes()));
            assert!(!agrees(doc(MAX_NESTING + 1).as_bytes()));
        }
        assert!(!agrees("[".repeat(200_000).as_bytes()));
    }

    #[test]
    fn special_finds_the_first_quote_backslash_or_control() {
        let text = b"abcdefghijklmnop\"qrs";
        for at in 0..text.len() {
            let expected = (at..text.len())
                .find(|&i| matches!(text[i], b'"' | b'\\' | 0..=0x1f))
                .unwrap_or(text.len());
            assert_eq!(special(text, at), expected);
        }
        for b in [b'"', b'\\', 0, 0x1f, b'\n'] {
            for pos in 0..20 {
                let mut t = vec![b'a'; 20];
                t[pos] = b;
                // A later byte a borrow could mark must not hide the real first one.
                t[19] = 0;
                assert_eq!(special(&t, 0), pos);
            }
        }
        assert_eq!(special("é\u{7f}\u{80}ü".as_bytes(), 0), 7);
        // Longer texts, where sixteen-byte steps run: every position, every special byte,
        // and bytes just above the range (0x20, 0x7f, 0x80, 0xff) that must not count.
        for b in [b'"', b'\\', 0, 0x1f, b'\n'] {
            for pos in 0..40 {
                let mut t: Vec<u8> = (0..40)
                    .map(|i| [0x20, 0x7f, 0x80, 0xff, b'a'][i % 5])
                    .collect();
                t[pos] = b;
                for from in 0..=pos {
                    assert_eq!(special(&t, from), pos);
                }
            }
        }
        assert_eq!(special(&[b'a'; 40], 3), 40);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::validate::proptest_cases(96)))]
        /// Whatever the bytes (JSON text, then cut, spliced or flipped), the view never
        /// accepts what the full parse refuses and never reads another value.
        #[test]
        fn view_never_disagrees_with_serde_json(
            value in json_value(),
            edits in proptest::collection::vec((0usize..4096, 0u8..6, proptest::num::u8::ANY), 0..4),
        ) {
            let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
            proptest::prop_assert!(agrees(&bytes));
            for (at, op, b) in edits {
                let at = at % (bytes.len() + 1);
                match op {
                    0 => bytes.truncate(at),
                    1 => bytes.insert(at, b),
                    2 if at < bytes.len() => bytes[at] = b,
                    3 => bytes.insert(at, b"\"\\,:{}[]-0e. \n"[usize::from(b) % 14]),
                    4 if at < bytes.len() => { bytes.remove(at); }
                    _ => {
                        for (i, c) in b"\\u00".iter().enumerate() {
                            bytes.insert(at + i, *c);
                        }
                    }
                }
                agrees(&bytes);
            }
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e10f64..1e10).prop_map(Value::from),
            "[a-c\"\\\\/\u{0}-\u{1f}é😀]{0,6}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                proptest::collection::vec(("[ab\"é]{0,3}", inner), 0..5)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
