//! One failure model (spec/architecture.md, "Errors"): the library crates return typed
//! errors, never a bare `String`, and the binary classifies them into atip's error codes
//! in one place per type (`From<…> for AtipError`, beside the type).

use super::layers::{library_sources, rust_files, shipped_code};
use std::path::Path;

/// Stringly errors the library crates still have, each with the reason it stays.
/// `(file, text on the line, why)`; an entry that no longer matches fails the test, so
/// the list only shrinks.
const ALLOWED: &[(&str, &str, &str)] = &[];

/// The error type of each `Result<T, E>` in `code` that is `String`, and each
/// `Err(format!(…))`: `(byte offset, what)`.
fn stringly(code: &str) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    for (at, _) in code.match_indices("Err(format!(") {
        found.push((at, "Err(format!(…))"));
    }
    for (at, _) in code.match_indices("Result<") {
        // Only the `Result` type itself, not `MyResult<`.
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let bytes = code.as_bytes();
        let (mut depth, mut i) = (0i32, at + "Result".len());
        // Top-level commas: the error type follows the last one (or the one before a
        // trailing comma).
        let mut commas = Vec::new();
        let mut closed = false;
        while i < bytes.len() {
            match bytes[i] {
                b'<' | b'(' | b'[' => depth += 1,
                b'>' if i > 0 && bytes[i - 1] == b'-' => {} // `->` in a fn type
                b'>' | b')' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        closed = true;
                        break;
                    }
                }
                b',' if depth == 1 => commas.push(i),
                b';' | b'{' => break,
                _ => {}
            }
            i += 1;
        }
        if !closed {
            continue;
        }
        let error_type = match commas.as_slice() {
            [.., a, b] if code[b + 1..i].trim().is_empty() => Some(code[a + 1..*b].trim()),
            [.., c] if !code[c + 1..i].trim().is_empty() => Some(code[c + 1..i].trim()),
            _ => None,
        };
        if matches!(error_type, Some("String" | "std::string::String")) {
            found.push((at, "Result<_, String>"));
        }
    }
    found
}

#[test]
fn the_detector_sees_what_it_must() {
    for yes in [
        "fn f() -> Result<u8, String> {",
        "fn f() -> Result<Vec<u8>, String> {",
        "fn f() -> Result<(Vec<String>, Option<u8>), String> {",
        "let r: Vec<(String, Result<Offer, String>)> = x;",
        "fn f() -> Result<\n    Option<u8>,\n    String,\n> {",
        "return Err(format!(\"bad {x}\"));",
    ] {
        assert_eq!(stringly(yes).len(), 1, "{yes}");
    }
    for no in [
        "fn f() -> Result<String, Error> {",
        "fn f() -> Result<HashMap<String, String>, E> {",
        "fn f() -> io::Result<String> {",
        "fn f() -> Result<Box<dyn Fn(u8) -> String>, E> {",
        "Err(Error::Bad(format!(\"x\")))",
        "fn f() -> MyResult<u8, String> {",
    ] {
        assert!(stringly(no).is_empty(), "{no}");
    }
}

/// The library crates' shipped code (tests left out) has no `Result<_, String>` and
/// builds no `Err(format!(…))`: a failure is a typed error with its cause as `#[source]`,
/// and what the user reads is its `Display`.
#[test]
fn library_crates_return_typed_errors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in library_sources(root) {
        rust_files(&root.join(d), &mut files);
    }
    files.sort();
    let mut found = Vec::new();
    let mut used = vec![false; ALLOWED.len()];
    for f in files {
        let rel = f.strip_prefix(root).unwrap().to_string_lossy().into_owned();
        // Comments out, so a doc comment that names the pattern does not count.
        let code: String = shipped_code(&std::fs::read_to_string(&f).unwrap())
            .lines()
            .map(|l| l.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        for (at, what) in stringly(&code) {
            let line = code[at..].lines().next().unwrap_or("").trim();
            let n = code[..at].matches('\n').count() + 1;
            match ALLOWED
                .iter()
                .position(|(file, text, _)| *file == rel && line.contains(text))
            {
                Some(i) => used[i] = true,
                None => found.push(format!("{rel}:{n}: {what}: {line}")),
            }
        }
    }
    assert!(
        found.is_empty(),
        "stringly errors in library code (return a thiserror enum with the cause as #[source], classified by From<…> for AtipError):\n{}",
        found.join("\n")
    );
    let stale: Vec<_> = ALLOWED
        .iter()
        .zip(&used)
        .filter(|(_, u)| !**u)
        .map(|(a, _)| a)
        .collect();
    assert!(
        stale.is_empty(),
        "allow-list entries that match nothing: {stale:?}"
    );
}
