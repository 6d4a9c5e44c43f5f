//! Text normalisation for search: tokens, light stemming and the abbreviation table.
//!
//! Owns how words in metadata and queries become index terms. Must not rank anything.

/// Abbreviations and the words they stand for, as agents and CLIs write them. A text that
/// contains either side also gets the short form as a term, so `pull request` finds
/// `gh pr` and `pr` finds "Create a pull request".
pub const ABBREVIATIONS: &[(&str, &[&str])] = &[
    ("pr", &["pull", "request"]),
    ("mr", &["merge", "request"]),
    ("repo", &["repository"]),
    ("config", &["configuration"]),
    ("config", &["configure"]),
    ("auth", &["authentication"]),
    ("auth", &["authenticate"]),
    ("env", &["environment"]),
    ("dir", &["directory"]),
    ("ls", &["list"]),
    ("rm", &["remove"]),
    ("rm", &["delete"]),
    ("del", &["delete"]),
    ("mv", &["move"]),
    ("cp", &["copy"]),
    ("mkdir", &["make", "directory"]),
    ("info", &["information"]),
    ("msg", &["message"]),
    ("pkg", &["package"]),
    ("dep", &["dependency"]),
    ("db", &["database"]),
    ("doc", &["documentation"]),
    ("img", &["image"]),
    ("k8s", &["kubernetes"]),
    ("ci", &["continuous", "integration"]),
    ("gh", &["github"]),
    ("vm", &["virtual", "machine"]),
    ("ssh", &["secure", "shell"]),
    ("url", &["link"]),
    ("cmd", &["command"]),
    ("arg", &["argument"]),
    ("opt", &["option"]),
    ("var", &["variable"]),
    ("stat", &["status"]),
    ("ver", &["version"]),
    ("fmt", &["format"]),
    ("io", &["i", "o"]),
];

/// How people name tasks, against the words command descriptions use: the curated task
/// vocabulary (`vocabulary.txt` beside this file, data with its own tests). Each line
/// `word: other words` lets a query word also match the others (at a lower weight, and
/// only as an alternative: never added to its own match); `phrase = word` lines join two
/// query words into one (`log in` → `login`).
const VOCABULARY: &str = include_str!("vocabulary.txt");

/// The parsed vocabulary: synonyms by (stemmed) query word, and phrases.
struct Vocabulary {
    synonyms: Vec<(String, Vec<&'static str>)>,
    phrases: Vec<([String; 2], String)>,
    /// Everyday task words that are also some program's name (`last`, `time`, `file`):
    /// such a word in a query does not by itself name that program.
    plain: Vec<String>,
}

fn vocabulary() -> &'static Vocabulary {
    static V: std::sync::OnceLock<Vocabulary> = std::sync::OnceLock::new();
    V.get_or_init(|| parse_vocabulary(VOCABULARY).expect("vocabulary.txt parses"))
}

/// A line of vocabulary.txt that does not parse (the file is built in, so this is a bug
/// its unit test catches).
#[derive(Debug, thiserror::Error)]
#[error("vocabulary.txt line {line}: {why}: {text:?}")]
struct VocabularyError {
    line: usize,
    why: &'static str,
    text: &'static str,
}

/// Reads the vocabulary's lines (`#` starts a comment); the error names the bad line.
fn parse_vocabulary(text: &'static str) -> Result<Vocabulary, VocabularyError> {
    let mut v = Vocabulary {
        synonyms: Vec::new(),
        phrases: Vec::new(),
        plain: Vec::new(),
    };
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: &'static str| VocabularyError {
            line: n + 1,
            why,
            text: line,
        };
        if let Some(list) = line.strip_prefix("plain words:") {
            // Kept as queries and titles are tokenized (`users` → `user`).
            let list: Vec<Vec<String>> = list.split_whitespace().map(words).collect();
            if list.is_empty() || list.iter().any(|w| w.len() != 1) {
                return Err(bad("plain words are single words"));
            }
            v.plain.extend(list.into_iter().flatten());
        } else if let Some((phrase, word)) = line.split_once('=') {
            let p: Vec<String> = words(phrase);
            let w = words(word);
            if p.len() != 2 || w.len() != 1 {
                return Err(bad("a phrase is two words = one word"));
            }
            v.phrases.push(([p[0].clone(), p[1].clone()], w[0].clone()));
        } else if let Some((word, others)) = line.split_once(':') {
            let w = words(word);
            let others: Vec<&'static str> = others.split_whitespace().collect();
            if w.len() != 1 || others.is_empty() {
                return Err(bad("expected `word: other words`"));
            }
            if others
                .iter()
                .any(|o| words(o) != [o.to_string()] || *o == w[0])
            {
                return Err(bad(
                    "synonyms are lower-case, unstemmed-equal words, not the word itself",
                ));
            }
            if v.synonyms.iter().any(|(x, _)| *x == w[0]) {
                return Err(bad("word listed twice"));
            }
            v.synonyms.push((w[0].clone(), others));
        } else {
            return Err(bad("neither `word: others` nor `two words = word`"));
        }
    }
    Ok(v)
}

/// The synonyms of a query word (stemmed like it).
pub(crate) fn synonyms(word: &str) -> &'static [&'static str] {
    vocabulary()
        .synonyms
        .iter()
        .find(|(w, _)| *w == word)
        .map_or(&[], |(_, s)| s.as_slice())
}

/// Whether `word` is an everyday task word that some program is also named, so that
/// its use in a query does not name the program (`show the last lines` is not about
/// `last`).
pub(crate) fn is_plain(word: &str) -> bool {
    vocabulary().plain.iter().any(|w| w == word)
}

/// `words` with the vocabulary's phrases joined (`log in` → `login`).
fn join_phrases(mut all: Vec<String>) -> Vec<String> {
    for ([a, b], joined) in &vocabulary().phrases {
        while let Some(at) = all.windows(2).position(|w| w[0] == *a && w[1] == *b) {
            all.splice(at..at + 2, [joined.clone()]);
        }
    }
    all
}

/// A word's root for matching its derived forms: a small suffix stripper of our own in
/// the spirit of Porter's, tuned to how commands and tasks are described. `creating`,
/// `created`, `creation` and `create` share `creat`; `compressed`, `compression` and
/// `compressor` share `compress`; `listing` and `list` share `list`; `executable` and
/// `execute` share `execut`. One derivational ending is stripped (`-ation`, `-ion`,
/// `-ing`, `-ed`, `-er`, `-or`, `-ly`, `-able`, `-ible`, `-ive`, `-ment`), twice at most,
/// each when enough of the word remains (three or four letters with a vowel, `editor` →
/// `edit`; five for `-ive` and `-ly`), then a doubled final consonant other than `l`, `s`, `z` is
/// undoubled (`running` → `run`); last a final `e` is dropped from words of four letters or more. Roots are only compared,
/// never shown.
pub(crate) fn root(word: &str) -> String {
    let mut w = word.to_string();
    if !w.is_ascii() {
        return w;
    }
    const ENDINGS: &[(&str, usize)] = &[
        ("ation", 3),
        ("ment", 4),
        ("able", 4),
        ("ible", 4),
        ("ing", 3),
        ("ion", 4),
        ("ive", 5),
        ("ed", 3),
        ("er", 4),
        ("or", 4),
        ("ly", 5),
    ];
    // Twice at most: `recursively` → `recursive` → `recurs`.
    for _ in 0..2 {
        let Some(base) = ENDINGS.iter().find_map(|(suffix, min)| {
            w.strip_suffix(suffix)
                .filter(|b| b.len() >= *min && b.contains(['a', 'e', 'i', 'o', 'u', 'y']))
        }) else {
            break;
        };
        w = base.to_string();
        let b = w.as_bytes();
        let last = b[b.len() - 1];
        if last == b[b.len() - 2] && !b"aeioulsz".contains(&last) {
            w.pop();
        }
    }
    if w.len() >= 4 && w.ends_with('e') {
        w.pop();
    }
    w
}

/// Words that carry no meaning in a task description ("make **a** new branch"): left
/// out of queries (not of the index, where BM25's idf already makes them cheap), unless
/// the query holds nothing else.
pub const STOPWORDS: &[&str] = &[
    "a", "an", "the", "to", "of", "in", "on", "for", "with", "and", "or", "my", "me", "i", "is",
    "are", "be", "it", "its", "this", "that", "these", "those", "from", "by", "at", "as", "into",
    "how", "do", "does", "can", "please", "some", "what", "which", "who",
];

/// The words of a query, without stopwords (all of them when nothing else is left),
/// each once: `line by line` asks about lines once, not twice.
pub(crate) fn query_words(query: &str) -> Vec<String> {
    let all = join_phrases(words(query));
    let mut kept: Vec<String> = Vec::new();
    for w in &all {
        // Compared as they are tokenized: `does` is `doe` by then, `this` `thi`.
        let stop = STOPWORDS.iter().any(|s| *s == w || stem(s) == *w);
        if !stop && !kept.contains(w) {
            kept.push(w.clone());
        }
    }
    if kept.is_empty() { all } else { kept }
}

/// Lower-case alphanumeric words, each lightly stemmed (plural `s`/`es`/`ies`).
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem_owned(w.to_lowercase()))
        .collect()
}

/// Strips an English plural ending from words longer than three letters.
pub(crate) fn stem(word: &str) -> String {
    stem_owned(word.to_string())
}

/// [`stem`] of a word already in a `String` of its own, shortened in place: the index
/// stems every word of every text it takes, one allocation each instead of two.
fn stem_owned(mut word: String) -> String {
    let n = word.len();
    if n <= 3 || !word.is_ascii() {
        return word;
    }
    if word.ends_with("ies") {
        word.truncate(n - 3);
        word.push('y');
        return word;
    }
    if let Some(base) = word.strip_suffix("es")
        && (base.ends_with("sh")
            || base.ends_with("ch")
            || base.ends_with('x')
            || base.ends_with("ss"))
    {
        word.truncate(n - 2);
        return word;
    }
    if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        word.truncate(n - 1);
    }
    word
}

/// `words` plus the short form of every abbreviation whose long form occurs (in order,
/// as consecutive words).
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = words(text);
    expand(&mut out);
    out
}

/// The abbreviation table with stemmed long forms, and which of its entries each long
/// form's first word starts (a bit per entry), built once.
struct Table {
    entries: Vec<(&'static str, Vec<String>)>,
    starts: std::collections::HashMap<String, u64, super::FxBuild>,
}

fn table() -> &'static Table {
    static TABLE: std::sync::OnceLock<Table> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        const { assert!(ABBREVIATIONS.len() <= 64, "a bit per entry in a u64") };
        let entries: Vec<(&'static str, Vec<String>)> = ABBREVIATIONS
            .iter()
            .map(|(short, long)| (*short, long.iter().map(|w| stem(w)).collect()))
            .collect();
        let mut starts = std::collections::HashMap::default();
        for (i, (_, long)) in entries.iter().enumerate() {
            *starts.entry(long[0].clone()).or_insert(0u64) |= 1 << i;
        }
        Table { entries, starts }
    })
}

/// Appends abbreviation short forms for long forms found in `tokens`.
pub(crate) fn expand(tokens: &mut Vec<String>) {
    for (short, _) in abbreviations_in(tokens) {
        if !tokens.iter().any(|t| t == short) {
            tokens.push(short.to_string());
        }
    }
}

/// Every abbreviation whose long form occurs in `tokens` (as consecutive words), with the
/// positions it covers.
pub(crate) fn abbreviations_in(tokens: &[String]) -> Vec<(&'static str, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let table = table();
    // The entries whose first long word occurs: one look-up per token instead of a
    // pass over the tokens per entry (the index takes every text of every tool).
    let started = tokens
        .iter()
        .fold(0u64, |m, t| m | table.starts.get(t).copied().unwrap_or(0));
    if started == 0 {
        return out;
    }
    for (i, (short, long)) in table.entries.iter().enumerate() {
        if started & (1 << i) == 0 || long.len() > tokens.len() {
            continue;
        }
        if let Some(at) = tokens
            .windows(long.len())
            .position(|w| w == long.as_slice())
        {
            out.push((*short, at..at + long.len()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every abbreviation whose long form occurs, found by a pass over the tokens per
    /// entry: what [`abbreviations_in`] must keep giving.
    fn abbreviations_by_scan(tokens: &[String]) -> Vec<(&'static str, std::ops::Range<usize>)> {
        let mut out = Vec::new();
        for (short, long) in &table().entries {
            if long.len() > tokens.len() || !tokens.contains(&long[0]) {
                continue;
            }
            if let Some(at) = tokens
                .windows(long.len())
                .position(|w| w == long.as_slice())
            {
                out.push((*short, at..at + long.len()));
            }
        }
        out
    }

    #[test]
    fn abbreviations_are_found_as_a_scan_over_every_entry_finds_them() {
        // Token lists made of every long form's words, shuffled by a fixed stride, with
        // words that start no entry between them.
        let mut pool: Vec<String> = table()
            .entries
            .iter()
            .flat_map(|(_, l)| l.clone())
            .collect();
        pool.extend(["x", "files", "request", "github", "i"].map(String::from));
        let mut found = 0;
        for len in 0..12 {
            for start in 0..pool.len() {
                let tokens: Vec<String> = (0..len)
                    .map(|k| pool[(start + k * 7 + k * k) % pool.len()].clone())
                    .collect();
                let got = abbreviations_in(&tokens);
                assert_eq!(got, abbreviations_by_scan(&tokens), "{tokens:?}");
                found += got.len();
            }
        }
        assert!(found > 100, "the lists held long forms: {found}");
        let t = words("pull request from the repository in a virtual machine");
        let shorts: Vec<&str> = abbreviations_in(&t).iter().map(|(s, _)| *s).collect();
        assert_eq!(shorts, ["pr", "repo", "vm"]);
    }

    #[test]
    fn stems_and_abbreviations() {
        for (plural, one) in [
            ("libraries", "library"),
            ("boxes", "box"),
            ("branches", "branch"),
            ("pushes", "push"),
            ("passes", "pass"),
            ("files", "file"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("class", "class"),
            ("ies", "ies"),
            ("bus", "bus"),
            ("données", "données"),
        ] {
            assert_eq!(stem(plural), one);
        }
        assert_eq!(
            words("Pull-Requests repositories boxes status"),
            ["pull", "request", "repository", "box", "status"]
        );
        for (a, b) in [
            ("creating", "create"),
            ("created", "creates"),
            ("running", "run"),
            ("stopped", "stop"),
            ("installing", "install"),
        ] {
            assert_eq!(root(a), root(&stem(b)), "{a} {b}");
        }
        assert_eq!(root("string"), "string");
        assert_eq!(root("editor"), root("edit"));
        assert_eq!(root("compressor"), root("compress"));
        assert_ne!(root("file"), root("fill"));
        assert_eq!(synonyms("make"), ["create"]);
        // Plain words are kept as queries tokenize them; program names that say their
        // job are not plain.
        assert!(is_plain("last") && is_plain(&words("users")[0]) && is_plain(&words("less")[0]));
        assert!(!is_plain("sort") && !is_plain("bzip2"));
        assert_eq!(
            query_words("compare files line by line"),
            ["compare", "file", "line"]
        );
        assert_eq!(query_words("how long does it take"), ["time", "take"]);
        assert!(parse_vocabulary("plain words: two-words").is_err());
        assert!(parse_vocabulary("plain words:").is_err());
        // Everyday task words against manual-page words (vocabulary.txt).
        assert!(synonyms("system").contains(&"machine"));
        assert!(synonyms("full").contains(&"resolved"));
        assert!(synonyms("part").contains(&"component"));
        assert!(synonyms("executable").contains(&"permission"));
        assert!(synonyms(&words("postgres")[0]).contains(&"postgresql"));
        // `I/O` in a page is the `io` of a task.
        assert!(terms("set process I/O scheduling priority").contains(&"io".to_string()));
        let t = terms("Create a pull request in a repository");
        assert!(t.contains(&"pr".to_string()) && t.contains(&"repo".to_string()));
    }
}
