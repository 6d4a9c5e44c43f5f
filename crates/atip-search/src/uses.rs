//! Curated task lines: what people use each program for, in everyday words
//! (`uses.txt` beside this file, data with its own tests). A manual page's NAME line
//! says what a program is (`chmod`: "change file mode bits"); people ask for what they
//! want done ("make a file executable"). The index reads these lines as a field of the
//! program's commands (spec/search.md, Task lines); results never show them.

use std::collections::HashMap;

/// The task lines, built in.
const USES: &str = include_str!("uses.txt");

/// A line of uses.txt that does not parse (the file is built in, so this is a bug its
/// unit test catches).
#[derive(Debug, thiserror::Error)]
#[error("uses.txt line {line}: {why}: {text:?}")]
pub(crate) struct UsesError {
    line: usize,
    why: &'static str,
    text: &'static str,
}

/// Task lines by key: a program's name, or its name and a command path joined by single
/// spaces (`git commit`).
fn table() -> &'static HashMap<&'static str, &'static str> {
    static T: std::sync::OnceLock<HashMap<&'static str, &'static str>> = std::sync::OnceLock::new();
    T.get_or_init(|| parse(USES).expect("uses.txt parses"))
}

/// Reads `key: phrase, phrase` lines (`#` starts a comment line); the error names the
/// bad line.
fn parse(text: &'static str) -> Result<HashMap<&'static str, &'static str>, UsesError> {
    let mut out = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &'static str| UsesError {
            line: n + 1,
            why,
            text: line,
        };
        let Some((key, phrases)) = line.split_once(": ") else {
            return Err(bad("expected `program: phrase, phrase`"));
        };
        if key.is_empty() || key.split(' ').any(str::is_empty) || key != key.trim() {
            return Err(bad(
                "a key is a program name and command words, one space apart",
            ));
        }
        let phrases = phrases.trim();
        if phrases.is_empty() || phrases.split(',').any(|p| p.trim().is_empty()) {
            return Err(bad("every phrase between commas needs words"));
        }
        if out.insert(key, phrases).is_some() {
            return Err(bad("key listed twice"));
        }
    }
    Ok(out)
}

/// The task lines of command `command` of the program registered as `program`: its own
/// line (the program's, for a command without subcommands), and the lines of what it
/// belongs to (the program, then each parent command, outermost first).
pub(crate) fn of(program: &str, command: &[String]) -> (Option<&'static str>, Vec<&'static str>) {
    let path: Vec<&str> = command
        .iter()
        .map(String::as_str)
        .filter(|c| !c.is_empty())
        .collect();
    let t = table();
    let mut key = program.to_string();
    let mut above = Vec::new();
    for part in &path {
        if let Some(line) = t.get(key.as_str()) {
            above.push(*line);
        }
        key.push(' ');
        key.push_str(part);
    }
    (t.get(key.as_str()).copied(), above)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_built_in_lines_parse_and_cover_the_everyday_programs() {
        let t = parse(USES).unwrap();
        assert!(t.len() > 600, "{} lines", t.len());
        // The gap they bridge: chmod's page says "change file mode bits".
        assert!(t["chmod"].contains("make a file executable"));
        // A name the tool-call form would change (`c__filt`) is keyed as the registry
        // names the program.
        assert!(t.contains_key("c++filt"));
        assert!(t.contains_key("git commit"));
        // Every program of the curated effects table and every shim has a line.
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        let effects: serde_json::Value = serde_json::from_slice(
            &std::fs::read(root.join("crates/atip-discover/src/infer/effects.json")).unwrap(),
        )
        .unwrap();
        let mut programs: Vec<String> = effects["programs"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        for e in std::fs::read_dir(root.join("shims")).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            if let Some(p) = name.strip_suffix(".json") {
                programs.push(p.to_string());
            }
        }
        let missing: Vec<&String> = programs
            .iter()
            .filter(|p| !t.contains_key(p.as_str()))
            .collect();
        assert!(missing.is_empty(), "no task line for {missing:?}");
    }

    #[test]
    fn a_command_gets_its_own_line_and_those_of_what_it_belongs_to() {
        let (own, above) = of("chmod", &path(&[""]));
        assert!(own.unwrap().contains("executable"));
        assert!(above.is_empty());
        let (own, above) = of("git", &path(&["commit"]));
        assert!(own.unwrap().contains("record changes"));
        assert_eq!(above, [of("git", &[]).0.unwrap()]);
        // A command with no line of its own still belongs to its program.
        let (own, above) = of("git", &path(&["notes", "add"]));
        assert_eq!(own, None);
        assert_eq!(above.len(), 1);
        // A program nobody wrote lines for, and a name the registry does not use.
        assert_eq!(of("no-such-program", &[]), (None, Vec::new()));
        assert_eq!(of("c__filt", &[]).0, None);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = |text: &'static str| parse(text).unwrap_err().to_string();
        assert!(err("# fine\nchmod change modes\n").starts_with("uses.txt line 2:"));
        assert!(err("chmod: ,\n").contains("needs words"));
        assert!(err("chmod:\n").contains("expected"));
        assert!(err("chmod: a,, b\n").contains("needs words"));
        assert!(err("git  commit: record\n").contains("one space apart"));
        assert!(err("ls: list\nls: show\n").contains("twice"));
        assert_eq!(parse("# only a comment\n\n").unwrap().len(), 0);
    }
}
