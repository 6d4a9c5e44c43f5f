//! How close two names are, for every "did you mean …" suggestion (tools, commands,
//! subcommands, enum values): one edit distance, so all of them agree.

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `word` (ignoring case) when it is near enough to be what was
/// meant — at most 1 edit for words up to four characters, 2 for longer ones — and no
/// other candidate is as close.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_lowercase();
    let max = if word.chars().count() <= 4 { 1 } else { 2 };
    let mut near: Vec<(usize, &str)> = candidates
        .into_iter()
        .map(|c| (edit_distance(&word, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= max)
        .collect();
    near.sort();
    match near.as_slice() {
        [(d, c), rest @ ..] if rest.first().is_none_or(|(d2, _)| d2 > d) => Some(c),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("héllo", "hello"), 1);
        assert_eq!(closest("mrege", ["merge", "squash"]), Some("merge"));
        assert_eq!(closest("xyz", ["merge", "squash"]), None);
        // Two equally close: no guess.
        assert_eq!(closest("bat", ["cat", "hat"]), None);
    }
}
