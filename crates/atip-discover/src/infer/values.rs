//! Enum values an option's description lists in prose (spec/infer.md "Enum values"):
//! `WHEN can be auto, never or always`, `sort by WORD: none (-U), size (-S), …`,
//! `Must be one of 1440, 1460, 1500, or 8896`, `Possible values are always, auto and never`.
//!
//! Precision first: a list is read only after an anchor naming the option's value (or a
//! sentence that starts by announcing the values), only when every item is one plain
//! word (optionally quoted, optionally followed by a parenthesis or the flag it stands
//! for), and only when the list ends the sentence. A list with anything else in it
//! (`+FORMAT`, `a regular file`) is not an enum.

/// Most values read from one list.
const MAX_VALUES: usize = 40;

/// Phrases that, after the value's name, introduce its values. `true`: the list may
/// be as short as two unquoted words; `false`: an unquoted list needs three (two words
/// after "can be" are too often adjectives: "absolute or relative").
const AFTER_VALUE: [(&str, bool); 12] = [
    (", which is one of", true),
    (" is one of", true),
    (" can be one of", true),
    (" must be one of", true),
    (" may be one of", true),
    (" should be one of", true),
    (" is either", true),
    (" can be either", true),
    (":", true),
    (", which can be", false),
    (" can be", false),
    (" may be", false),
];

/// Sentences that start by announcing the values (no value name needed).
const SENTENCE: [&str; 10] = [
    "must be one of",
    "valid options are",
    "valid argument values are",
    "can be one of",
    "possible values are",
    "valid values are",
    "accepted values are",
    "allowed values are",
    "supported values are",
    "expects one of",
];

/// [`SENTENCE`]'s searchers, built once: every option with a value is searched for all.
static SENTENCE_FINDERS: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
    std::sync::LazyLock::new(|| SENTENCE.iter().map(memchr::memmem::Finder::new).collect());

/// The values `body` lists for an option whose value is named `value` (as the tag
/// writes it: `WHEN`, `<format>`, `[=WORD]`).
pub(crate) fn prose_enum(body: &str, value: &str) -> Option<Vec<String>> {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = flat.to_ascii_lowercase();
    let name: String = value
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase();
    let word_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    let mut found: Vec<Vec<String>> = Vec::new();
    if word_ok {
        for i in memchr::memmem::find_iter(lower.as_bytes(), name.as_bytes()) {
            let before_ok = lower[..i]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_' && c != '-');
            let after = &lower[i + name.len()..];
            let after = after.strip_prefix('>').unwrap_or(after);
            let after_ok = after
                .chars()
                .next()
                .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_');
            if !before_ok || !after_ok {
                continue;
            }
            let start = flat.len() - after.len();
            let phrase = AFTER_VALUE
                .iter()
                .find(|(p, _)| after.starts_with(p))
                .map(|(p, short_ok)| (p.len(), *short_ok))
                .or_else(|| colon_after(after).map(|n| (n, true)));
            if let Some((skip, short_ok)) = phrase
                && let Some(v) = list(&flat[start + skip..], short_ok)
            {
                found.push(v);
            }
        }
    }
    for (phrase, finder) in SENTENCE.iter().zip(SENTENCE_FINDERS.iter()) {
        for i in finder.find_iter(lower.as_bytes()) {
            // At the start of a sentence, or after its "The".
            let head = lower[..i].strip_suffix("the ").unwrap_or(&lower[..i]);
            let starts_sentence = head.is_empty() || head.ends_with(". ");
            if starts_sentence && let Some(v) = list(&flat[i + phrase.len()..], true) {
                found.push(v);
            }
        }
    }
    // Two different lists: ambiguous, none is taken.
    found.dedup();
    match found.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// `WORD for entry names: …`: the bytes up to and including a `:` that follows the
/// value's name within a few words of the same clause.
fn colon_after(after: &str) -> Option<usize> {
    let end = after.find(':')?;
    let between = &after[..end];
    (between.split_whitespace().count() <= 4 && !between.contains(['.', ';', ',', '(']))
        .then_some(end + 1)
}

/// Reads a list of plain words at the start of `s` (after an optional `:`), ending the
/// sentence: `a, b, or c.`, `'a', 'b' and 'c'`, `a (x), b (y), c`, `a -A, b -B`.
fn list(s: &str, short_ok: bool) -> Option<Vec<String>> {
    let mut rest = s.strip_prefix(':').unwrap_or(s).trim_start();
    let mut values: Vec<String> = Vec::new();
    let mut quoted = true;
    loop {
        let (word, q, after) = item(rest)?;
        quoted &= q;
        if !values.contains(&word) {
            values.push(word);
        }
        if values.len() > MAX_VALUES {
            return None;
        }
        rest = skip_note(after);
        let mut next = None;
        for sep in [", or ", ", and ", ", ", " or ", " and "] {
            if let Some(r) = rest.strip_prefix(sep) {
                next = Some(r);
                break;
            }
        }
        match next {
            Some(r) => rest = r,
            None => break,
        }
    }
    let ends = rest.is_empty()
        || rest.starts_with(". ")
        || rest == "."
        || rest.starts_with(';')
        || rest.starts_with(')');
    let enough = values.len() >= 3 || (values.len() == 2 && (short_ok || quoted));
    (ends && enough).then_some(values)
}

/// One value: a plain word, optionally in quotes; returns it, whether it was quoted,
/// and the text after it.
fn item(s: &str) -> Option<(String, bool, &str)> {
    let (open, close): (&str, &[char]) = match s.chars().next()? {
        '\'' => ("'", &['\''][..]),
        '"' => ("\"", &['"'][..]),
        '`' => ("`", &['\''][..]),
        '‘' => ("‘", &['’'][..]),
        '“' => ("“", &['”'][..]),
        _ => ("", &[][..]),
    };
    let body = &s[open.len()..];
    let len = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+')))
        .unwrap_or(body.len());
    // A trailing `.` ends the sentence, not the word.
    let word = body[..len].trim_end_matches('.');
    // A word broken at the end of a line (`database-`) is no value.
    if word.is_empty()
        || !word.starts_with(|c: char| c.is_ascii_alphanumeric())
        || word.ends_with('-')
    {
        return None;
    }
    let mut after = &body[word.len()..];
    if !open.is_empty() {
        let c = after.chars().next()?;
        if !close.contains(&c) {
            return None;
        }
        after = &after[c.len_utf8()..];
    }
    Some((word.to_owned(), !open.is_empty(), after))
}

/// Skips what may follow a value: ` (note)` without nested parentheses, or the flag
/// it stands for (` -g`).
fn skip_note(s: &str) -> &str {
    if let Some(r) = s.strip_prefix(" (")
        && let Some(end) = r.find(')')
        && end <= 80
        && !r[..end].contains('(')
    {
        return &r[end + 1..];
    }
    if let Some(r) = s.strip_prefix(" -") {
        let len = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(r.len());
        if len > 0 {
            return &r[len..];
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(body: &str, value: &str) -> Option<Vec<&'static str>> {
        prose_enum(body, value).map(|v| {
            v.into_iter()
                .map(|s| &*Box::leak(s.into_boxed_str()))
                .collect()
        })
    }

    #[test]
    fn lists_after_the_value_name() {
        assert_eq!(
            vals(
                "Colorize the output. The optional argument when can be auto, never or always. If the when argument is omitted, it defaults to auto.",
                "<when>"
            ),
            Some(vec!["auto", "never", "always"])
        );
        assert_eq!(
            vals(
                "sort by WORD instead of name: none (-U), size (-S), time (-t), version (-v), extension (-X), width",
                "WORD"
            ),
            Some(vec![
                "none",
                "size",
                "time",
                "version",
                "extension",
                "width"
            ])
        );
        assert_eq!(
            vals(
                "sort according to WORD: general-numeric -g, human-numeric -h, month -M, numeric -n, random -R, version -V",
                "WORD"
            ),
            Some(vec![
                "general-numeric",
                "human-numeric",
                "month",
                "numeric",
                "random",
                "version"
            ])
        );
        assert_eq!(
            vals(
                "Print timestamps using the given format, which can be ctime, reltime, delta or iso. The first three formats are aliases.",
                "<format>"
            ),
            Some(vec!["ctime", "reltime", "delta", "iso"])
        );
        assert_eq!(
            vals(
                "Expects one of \"short\" (for the shortest output) or \"pretty\" (for a pretty version).",
                "<MODE>"
            ),
            Some(vec!["short", "pretty"])
        );
        assert_eq!(
            vals(
                "use quoting style WORD for entry names: literal, locale, shell, c, escape (overrides QUOTING_STYLE environment variable)",
                "WORD"
            ),
            Some(vec!["literal", "locale", "shell", "c", "escape"])
        );
    }

    #[test]
    fn sentences_announcing_values() {
        assert_eq!(
            vals(
                "Maximum transmission unit. Must be one of 1440, 1460, 1500, or 8896. If not specified, 1440.",
                "MTU"
            ),
            Some(vec!["1440", "1460", "1500", "8896"])
        );
        assert_eq!(
            vals(
                "Specify the type of the key. The possible values are \u{201c}dsa\u{201d}, \u{201c}ecdsa\u{201d}, or \u{201c}rsa\u{201d}.",
                "type"
            ),
            Some(vec!["dsa", "ecdsa", "rsa"])
        );
        assert_eq!(
            vals(
                "sort entries according to ORDER, which is one of none, name, or inode.",
                "ORDER"
            ),
            Some(vec!["none", "name", "inode"])
        );
        assert_eq!(
            vals(
                "Specify which compression type to use. Allowed values are gzip, xz (since dpkg 1.15.6), zstd (since dpkg 1.21.18) and none (default is xz).",
                "compress-type"
            ),
            Some(vec!["gzip", "xz", "zstd", "none"])
        );
    }

    #[test]
    fn anything_not_a_closed_list_of_words_is_no_enum() {
        for (body, value) in [
            // An open-ended member.
            (
                "TIME_STYLE is one of full-iso, long-iso, iso, locale, or +FORMAT.",
                "TIME_STYLE",
            ),
            // Two adjectives after "can be".
            ("The DIR can be absolute or relative.", "DIR"),
            // Words of a sentence.
            ("FILE can be stdin, a pipe or a regular file.", "FILE"),
            ("Can be 1-4, default is 1.", "PORT"),
            // Another placeholder's values (UNIT is part of the value).
            (
                "Valid values are strings of the form INTEGER[UNIT], where UNIT is one of \"s\", \"m\", \"h\", and \"d\" for seconds.",
                "EXPIRATION_PERIOD",
            ),
            // A list that does not end the sentence.
            (
                "WHEN can be auto, never or always depending on the terminal.",
                "WHEN",
            ),
            // Not at the start of a sentence, no value name.
            (
                "the state is one of install, hold, deinstall or purge.",
                "FILE",
            ),
            // One value only.
            ("WHEN may be omitted.", "WHEN"),
            // The value name inside another word.
            ("XWHEN can be a, b or c.", "WHEN"),
            ("Two options are supported: a and b.", "option"),
            // A word hyphenated at the end of a line.
            (
                "PATTERN is one of: unqualified, schema-qualified, database-",
                "PATTERN",
            ),
        ] {
            assert_eq!(prose_enum(body, value), None, "{body}");
        }
    }

    #[test]
    fn two_different_lists_are_ambiguous() {
        assert_eq!(
            prose_enum("MODE can be one of a, b. Possible values are c, d.", "MODE"),
            None
        );
        assert_eq!(
            prose_enum(
                "MODE is one of 'a' or 'b'. Yes: MODE is one of 'a' or 'b'.",
                "MODE"
            ),
            Some(vec!["a".to_owned(), "b".to_owned()])
        );
    }
}
