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
];

/// Query words and other words that name the same action in command descriptions. A query
/// word also matches its synonyms (at a lower weight, and only as an alternative: never
/// added to its own match).
pub const SYNONYMS: &[(&str, &[&str])] = &[
    ("make", &["create"]),
    ("new", &["create"]),
    ("create", &["make", "new"]),
    ("delete", &["remove"]),
    ("remove", &["delete"]),
    ("erase", &["delete", "remove"]),
    ("show", &["display", "print", "view"]),
    ("display", &["show", "print"]),
    ("print", &["show", "display"]),
    ("view", &["show"]),
    ("download", &["fetch"]),
    ("fetch", &["download"]),
    ("start", &["run", "launch"]),
    ("launch", &["start", "run"]),
    ("execute", &["run"]),
    ("undo", &["revert"]),
    ("find", &["search", "locate"]),
    ("search", &["find"]),
    ("locate", &["find"]),
    ("edit", &["change", "modify"]),
    ("modify", &["change", "edit"]),
    ("update", &["upgrade"]),
    ("upgrade", &["update"]),
    ("uninstall", &["remove"]),
    ("folder", &["directory"]),
    ("terminate", &["kill", "stop"]),
];

/// The synonyms of a query word (stemmed like it).
pub(crate) fn synonyms(word: &str) -> &'static [&'static str] {
    SYNONYMS
        .iter()
        .find(|(w, _)| *w == word)
        .map_or(&[], |(_, s)| s)
}

/// A word's root for matching its inflections (`creating`, `created`, `create` → `creat`;
/// `running` → `run`): `-ing` and `-ed` stripped when three letters with a vowel remain
/// (then a doubled final consonant other than `l`, `s`, `z` is undoubled), and a final
/// `e` dropped from words of four letters or more. Roots are only compared, never shown.
pub(crate) fn root(word: &str) -> String {
    let mut w = word.to_string();
    if !w.is_ascii() {
        return w;
    }
    for suffix in ["ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix)
            && base.len() >= 3
            && base.contains(['a', 'e', 'i', 'o', 'u', 'y'])
        {
            w = base.to_string();
            let b = w.as_bytes();
            let last = b[b.len() - 1];
            if last == b[b.len() - 2] && !b"aeioulsz".contains(&last) {
                w.pop();
            }
            break;
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

/// The words of a query, without stopwords (all of them when nothing else is left).
pub(crate) fn query_words(query: &str) -> Vec<String> {
    let all = words(query);
    let kept: Vec<String> = all
        .iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() { all } else { kept }
}

/// Lower-case alphanumeric words, each lightly stemmed (plural `s`/`es`/`ies`).
pub(crate) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&w.to_lowercase()))
        .collect()
}

/// Strips an English plural ending from words longer than three letters.
pub(crate) fn stem(word: &str) -> String {
    let n = word.len();
    if n <= 3 || !word.is_ascii() {
        return word.to_string();
    }
    if let Some(base) = word.strip_suffix("ies") {
        return format!("{base}y");
    }
    if let Some(base) = word.strip_suffix("es")
        && (base.ends_with("sh")
            || base.ends_with("ch")
            || base.ends_with('x')
            || base.ends_with("ss"))
    {
        return base.to_string();
    }
    if word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        && !word.ends_with("is")
    {
        return word[..n - 1].to_string();
    }
    word.to_string()
}

/// `words` plus the short form of every abbreviation whose long form occurs (in order,
/// as consecutive words).
pub(crate) fn terms(text: &str) -> Vec<String> {
    let mut out = words(text);
    expand(&mut out);
    out
}

/// The abbreviation table with stemmed long forms, built once.
fn table() -> &'static [(&'static str, Vec<String>)] {
    static TABLE: std::sync::OnceLock<Vec<(&'static str, Vec<String>)>> =
        std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        ABBREVIATIONS
            .iter()
            .map(|(short, long)| (*short, long.iter().map(|w| stem(w)).collect()))
            .collect()
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
    for (short, long) in table() {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_and_abbreviations() {
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
        assert_ne!(root("file"), root("fill"));
        assert_eq!(synonyms("make"), ["create"]);
        let t = terms("Create a pull request in a repository");
        assert!(t.contains(&"pr".to_string()) && t.contains(&"repo".to_string()));
    }
}
