//! JSON pointer → place in the source text, and duplicate keys with their pointers.
//!
//! Owns one iterative scanner over JSON text (an explicit stack, never recursion) that
//! knows, at every value, its JSON pointer and byte span. It runs only on the slow path:
//! when a document has something to report, or when the parser counted duplicate keys.
//!
//! Must not judge documents: it only finds places.

use super::Diagnostic;
use std::collections::HashMap;
use std::ops::Range;

/// A place in the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Byte offset in the text.
    pub offset: usize,
    /// Length in bytes of what is pointed at (at least 1 when rendered).
    pub len: usize,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
}

impl Position {
    /// The first byte of the input.
    pub const START: Position = Position {
        offset: 0,
        len: 1,
        line: 1,
        column: 1,
    };
}

/// Line and column (1-based; columns in characters) of many byte offsets, in one pass
/// over the text: thousands of findings in one huge minified line cost no more than one.
pub(crate) fn positions(bytes: &[u8], offsets: &[usize]) -> Vec<(usize, usize)> {
    let mut order: Vec<usize> = (0..offsets.len()).collect();
    order.sort_by_key(|&i| offsets[i]);
    let mut out = vec![(1, 1); offsets.len()];
    let (mut pos, mut line, mut column) = (0usize, 1usize, 1usize);
    for i in order {
        let target = offsets[i].min(bytes.len());
        for &b in &bytes[pos..target] {
            if b == b'\n' {
                line += 1;
                column = 1;
            } else if b & 0xC0 != 0x80 {
                // Not a UTF-8 continuation byte: a new character.
                column += 1;
            }
        }
        pos = pos.max(target);
        out[i] = (line, column);
    }
    out
}

fn position(bytes: &[u8], offset: usize, len: usize) -> Position {
    let (line, column) = positions(bytes, &[offset])[0];
    Position {
        offset: offset.min(bytes.len()),
        len,
        line,
        column,
    }
}

/// The position of a byte offset in raw bytes (which may not be UTF-8 past `offset`).
pub(crate) fn position_in_bytes(bytes: &[u8], offset: usize) -> Position {
    position(bytes, offset, 1)
}

/// The position serde_json reports as line and (byte) column, turned into an offset.
pub(crate) fn position_of_line_column(text: &str, line: usize, column: usize) -> Position {
    let bytes = text.as_bytes();
    let mut start = 0;
    if line > 1 {
        let mut seen = 1;
        for (i, b) in bytes.iter().enumerate() {
            if *b == b'\n' {
                seen += 1;
                if seen == line {
                    start = i + 1;
                    break;
                }
            }
        }
    }
    let mut offset = (start + column.saturating_sub(1)).min(bytes.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    position(bytes, offset, 1)
}

/// Escapes one reference token of a JSON pointer (`~` → `~0`, `/` → `~1`).
pub fn escape_token(token: &str) -> std::borrow::Cow<'_, str> {
    if token.contains(['~', '/']) {
        token.replace('~', "~0").replace('/', "~1").into()
    } else {
        token.into()
    }
}

/// One value met by [`scan`].
pub struct Visit<'p> {
    /// JSON pointer of the value.
    pub pointer: &'p str,
    /// Span of the member's key (with quotes) when the value is in an object.
    pub key: Option<Range<usize>>,
    /// Span of the value; for objects and arrays only the opening bracket.
    pub value: Range<usize>,
}

/// A key repeated in one object.
pub struct Duplicate {
    /// Pointer of the member.
    pub pointer: String,
    /// Span of the repeated key.
    pub key: Range<usize>,
    /// Offset of the first occurrence's key.
    pub first: usize,
}

enum Frame {
    Object {
        base: usize,
        keys: Option<HashMap<String, usize>>,
    },
    Array {
        base: usize,
        index: usize,
    },
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// End (exclusive) of the string starting at `i` (which holds the opening quote).
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    b.len()
}

fn scalar_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && !matches!(b[i], b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

fn decode_key(text: &str, span: Range<usize>) -> String {
    let raw = text.get(span.clone()).unwrap_or("\"\"");
    if raw.contains('\\') {
        serde_json::from_str(raw).unwrap_or_else(|_| raw.trim_matches('"').to_string())
    } else {
        raw.get(1..raw.len().saturating_sub(1))
            .unwrap_or("")
            .to_string()
    }
}

/// Walks JSON text (assumed to have parsed), calling `visit` for every value and
/// recording repeated keys when `dups` is given. Malformed text ends the walk early;
/// it never panics.
pub fn scan(text: &str, mut visit: impl FnMut(Visit<'_>), dups: Option<&mut Vec<Duplicate>>) {
    let b = text.as_bytes();
    let mut w = Walker {
        text,
        stack: Vec::new(),
        pointer: String::new(),
        key: None,
        i: skip_ws(b, 0),
        dups,
    };
    // Expecting a value at `w.i`.
    while w.i < b.len() {
        let start = w.i;
        let end = match b[start] {
            b'{' | b'[' => start + 1,
            b'"' => string_end(b, start),
            _ => scalar_end(b, start).max(start + 1),
        };
        visit(Visit {
            pointer: &w.pointer,
            key: w.key.take(),
            value: start..end,
        });
        if matches!(b[start], b'{' | b'[') {
            match w.open() {
                Opened::AtValue => continue,
                Opened::Empty => {}
                Opened::Malformed => return,
            }
        } else {
            w.i = end;
        }
        if !w.next_value() {
            return;
        }
    }
}

/// The walk of [`scan`]: where it is in the text, the containers it is in, the pointer
/// and key of the value at hand, and the repeated keys found so far.
struct Walker<'t, 'd> {
    text: &'t str,
    stack: Vec<Frame>,
    pointer: String,
    key: Option<Range<usize>>,
    i: usize,
    dups: Option<&'d mut Vec<Duplicate>>,
}

/// What follows the opening bracket of a container.
enum Opened {
    /// Its first element or member's value is at `i`.
    AtValue,
    /// It was empty and is closed: a separator or a closing bracket follows.
    Empty,
    /// Malformed text: the walk ends.
    Malformed,
}

impl Walker<'_, '_> {
    /// Enters the container whose opening bracket is at `i`.
    fn open(&mut self) -> Opened {
        let b = self.text.as_bytes();
        let base = self.pointer.len();
        self.stack.push(if b[self.i] == b'{' {
            Frame::Object {
                base,
                keys: self.dups.is_some().then(HashMap::new),
            }
        } else {
            Frame::Array { base, index: 0 }
        });
        self.i = skip_ws(b, self.i + 1);
        if self.i < b.len() && (b[self.i] == b'}' || b[self.i] == b']') {
            self.stack.pop();
            self.pointer.truncate(base);
            self.i += 1;
            return Opened::Empty;
        }
        let at_value = match self.stack.last() {
            Some(&Frame::Array { base, .. }) => {
                self.pointer.truncate(base);
                self.pointer.push_str("/0");
                true
            }
            Some(Frame::Object { .. }) => self.enter_member(),
            None => false,
        };
        if at_value {
            Opened::AtValue
        } else {
            Opened::Malformed
        }
    }

    /// After a value: reads separators and closing brackets up to the next value (true)
    /// or the end of the text or of the outermost container (false).
    fn next_value(&mut self) -> bool {
        let b = self.text.as_bytes();
        loop {
            self.i = skip_ws(b, self.i);
            let Some(frame) = self.stack.last_mut() else {
                return false;
            };
            match (b.get(self.i), frame) {
                (Some(b','), Frame::Array { base, index }) => {
                    *index += 1;
                    self.pointer.truncate(*base);
                    self.pointer.push('/');
                    self.pointer.push_str(&index.to_string());
                    self.i = skip_ws(b, self.i + 1);
                    return true;
                }
                (Some(b','), Frame::Object { .. }) => {
                    self.i = skip_ws(b, self.i + 1);
                    return self.enter_member();
                }
                (Some(b'}' | b']'), Frame::Object { base, .. } | Frame::Array { base, .. }) => {
                    self.pointer.truncate(*base);
                    self.stack.pop();
                    self.i += 1;
                }
                _ => return false,
            }
        }
    }

    /// Reads `"key":` at `i`, sets the pointer and key span; false on malformed text.
    fn enter_member(&mut self) -> bool {
        let b = self.text.as_bytes();
        if b.get(self.i) != Some(&b'"') {
            return false;
        }
        let end = string_end(b, self.i);
        let span = self.i..end;
        let name = decode_key(self.text, span.clone());
        let Some(Frame::Object { base, keys }) = self.stack.last_mut() else {
            return false;
        };
        self.pointer.truncate(*base);
        self.pointer.push('/');
        self.pointer.push_str(&escape_token(&name));
        if let (Some(keys), Some(out)) = (keys.as_mut(), self.dups.as_mut()) {
            match keys.get(&name) {
                Some(first) => out.push(Duplicate {
                    pointer: self.pointer.clone(),
                    key: span.clone(),
                    first: *first,
                }),
                None => {
                    keys.insert(name, span.start);
                }
            }
        }
        self.key = Some(span);
        self.i = skip_ws(b, end);
        if b.get(self.i) != Some(&b':') {
            return false;
        }
        self.i = skip_ws(b, self.i + 1);
        true
    }
}

/// Diagnostics for every repeated key, with pointer and source position.
pub(crate) fn duplicate_keys(text: &str) -> Vec<Diagnostic> {
    let mut found = Vec::new();
    scan(text, |_| {}, Some(&mut found));
    let firsts: Vec<usize> = found.iter().map(|d| d.first).collect();
    let firsts = positions(text.as_bytes(), &firsts);
    found
        .into_iter()
        .zip(firsts)
        .map(|(d, (line, column))| {
            let first = Position {
                offset: d.first,
                len: 0,
                line,
                column,
            };
            let name = text.get(d.key.clone()).unwrap_or("?");
            let mut diag = Diagnostic::new(
                "duplicate-key",
                d.pointer,
                format!(
                    "key {name} appears again in the same object (first at line {}, column {}); JSON readers disagree on which one wins",
                    first.line, first.column
                ),
            );
            diag.span = Some(d.key);
            diag
        })
        .collect()
}

/// Fills line, column and span of every diagnostic that has only a pointer. A pointer
/// that names nothing in the text (a missing member) falls back to its nearest
/// existing ancestor.
pub fn resolve(text: &str, _text_offset: usize, diagnostics: &mut [Diagnostic]) {
    if text.is_empty() {
        return;
    }
    let mut wanted: HashMap<String, Option<Range<usize>>> = HashMap::new();
    for d in diagnostics.iter().filter(|d| d.span.is_none()) {
        let mut p = d.pointer.as_str();
        loop {
            wanted.entry(p.to_string()).or_insert(None);
            match p.rfind('/') {
                Some(cut) => p = &p[..cut],
                None => break,
            }
        }
    }
    if !wanted.is_empty() {
        scan(
            text,
            |v| {
                if let Some(slot) = wanted.get_mut(v.pointer) {
                    let span = match v.key {
                        Some(k)
                            if v.value.len() == 1
                                && matches!(text.as_bytes()[v.value.start], b'{' | b'[') =>
                        {
                            k
                        }
                        Some(k) => k.start..v.value.end,
                        None => v.value,
                    };
                    *slot = Some(span);
                }
            },
            None,
        );
    }
    for d in diagnostics.iter_mut() {
        if d.span.is_none() {
            let mut p = d.pointer.as_str();
            loop {
                if let Some(Some(span)) = wanted.get(p) {
                    d.span = Some(span.clone());
                    break;
                }
                match p.rfind('/') {
                    Some(cut) => p = &p[..cut],
                    None => break,
                }
            }
        }
    }
    let todo: Vec<usize> = (0..diagnostics.len())
        .filter(|&i| diagnostics[i].line.is_none() && diagnostics[i].span.is_some())
        .collect();
    let offsets: Vec<usize> = todo
        .iter()
        .map(|&i| diagnostics[i].span.as_ref().map_or(0, |s| s.start))
        .collect();
    for (i, (line, column)) in todo.into_iter().zip(positions(text.as_bytes(), &offsets)) {
        diagnostics[i].line = Some(line);
        diagnostics[i].column = Some(column);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pointers_and_spans() {
        let text = "{\n  \"a\": [1, {\"b/c\": \"x\"}],\n  \"d\": {}\n}";
        let mut seen = Vec::new();
        scan(
            text,
            |v| seen.push((v.pointer.to_string(), text[v.value.clone()].to_string())),
            None,
        );
        let pointers: Vec<&str> = seen.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(pointers, ["", "/a", "/a/0", "/a/1", "/a/1/b~1c", "/d"]);
        assert_eq!(seen[4].1, "\"x\"");
    }

    #[test]
    fn duplicate_keys_with_positions() {
        let text = "{\"a\": 1,\n \"o\": {\"k\": 1, \"k\": 2},\n \"a\": 2}";
        let d = duplicate_keys(text);
        let got: Vec<&str> = d.iter().map(|d| d.pointer.as_str()).collect();
        assert_eq!(got, ["/o/k", "/a"]);
    }

    #[test]
    fn resolve_falls_back_to_ancestor() {
        let text = "{\n  \"commands\": {\n    \"x\": {}\n  }\n}";
        let mut d = vec![Diagnostic::new(
            "schema-required",
            "/commands/x/description",
            "m",
        )];
        resolve(text, 0, &mut d);
        assert_eq!((d[0].line, d[0].column), (Some(3), Some(5)));
    }

    #[test]
    fn never_panics_on_garbage() {
        for t in [
            "{",
            "[1,",
            "{\"a\"",
            "{\"a\":",
            "\"",
            "[}",
            "{\"a\":1,}",
            "{1:2}",
        ] {
            scan(t, |_| {}, None);
            let _ = duplicate_keys(t);
            let mut d = vec![Diagnostic::new("json-syntax", "/a/0", "m")];
            resolve(t, 0, &mut d);
        }
    }
}
