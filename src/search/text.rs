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
];

/// Lower-case alphanumeric words, each lightly stemmed (plural `s`/`es`/`ies`).
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| stem(&w.to_lowercase()))
        .collect()
}

/// Strips an English plural ending from words longer than three letters.
pub fn stem(word: &str) -> String {
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
pub fn terms(text: &str) -> Vec<String> {
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
pub fn expand(tokens: &mut Vec<String>) {
    let n = tokens.len();
    for (short, long) in table() {
        if long.len() > n || !tokens[..n].contains(&long[0]) {
            continue;
        }
        if tokens[..n]
            .windows(long.len())
            .any(|w| w == long.as_slice())
            && !tokens.iter().any(|t| t == short)
        {
            tokens.push((*short).to_string());
        }
    }
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
        let t = terms("Create a pull request in a repository");
        assert!(t.contains(&"pr".to_string()) && t.contains(&"repo".to_string()));
    }
}
