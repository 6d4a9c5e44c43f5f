//! Provider-safe names: tool names (`gh_pr_create`) and property identifiers (`dry_run`).
//!
//! Owns the one naming rule every export format shares, so a name printed by `atip export`
//! is the name `atip exec` and `atip mcp` accept. Must not know about providers' schema rules.

use std::collections::HashSet;

/// Longest tool name any provider accepts (OpenAI and Anthropic: 64).
pub const MAX_NAME: usize = 64;
/// Longest property name Gemini accepts.
pub const MAX_PROPERTY: usize = 64;

/// Whether `name` matches `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`: valid for OpenAI, Anthropic,
/// Gemini and MCP at once.
pub fn is_valid_tool_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= MAX_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `name` matches `^[a-zA-Z_][a-zA-Z0-9_]{0,63}$` (Gemini's parameter-name rule,
/// which also suits every other provider).
pub fn is_valid_property(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && name.len() <= MAX_PROPERTY
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Replaces every run of characters outside `keep` with one `_`, trims `_` at both ends.
fn squash(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pending = false;
    for c in text.chars() {
        if keep(c) {
            if pending && !out.is_empty() {
                out.push('_');
            }
            pending = false;
            out.push(c);
        } else {
            pending = true;
        }
    }
    out.trim_matches('_').to_string()
}

/// A short stable digest of `text`, 8 hex digits.
fn short_hash(text: &str) -> String {
    crate::digest::sha256_hex(text.as_bytes())[..8].to_string()
}

/// Cuts `name` to `max` characters; a cut name ends in `_` + 8 hex digits of the full
/// name so two long names that share a prefix stay distinct.
fn fit(name: String, full: &str, max: usize) -> String {
    if name.len() <= max {
        return name;
    }
    let hash = short_hash(full);
    let keep = max - hash.len() - 1;
    let mut head: String = name.chars().take(keep).collect();
    while head.ends_with('_') || head.ends_with('-') {
        head.pop();
    }
    format!("{head}_{hash}")
}

/// The base tool name for a command: tool name and path segments joined with `_`,
/// sanitised (`gh pr create` → `gh_pr_create`, the root command → `gh`).
pub fn tool_name(tool: &str, path: &[String]) -> String {
    let keep = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let mut parts: Vec<String> = Vec::with_capacity(path.len() + 1);
    parts.push(squash(tool, keep));
    for seg in path.iter().filter(|s| !s.is_empty()) {
        parts.push(squash(seg, keep));
    }
    let mut name = parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    if name.is_empty() {
        name = "tool".into();
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    if name.len() <= MAX_NAME {
        return name;
    }
    let full = format!("{tool}\u{0}{}", path.join("\u{0}"));
    fit(name, &full, MAX_NAME)
}

/// A property identifier for an argument or option name (`dry-run` → `dry_run`,
/// `2fa` → `_2fa`, `` → `arg`).
pub(crate) fn property_name(raw: &str) -> String {
    let trimmed = raw.trim_start_matches('-');
    let mut name = squash(trimmed, |c| c.is_ascii_alphanumeric() || c == '_');
    if name.is_empty() {
        name = "arg".into();
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        name.insert(0, '_');
    }
    fit(name, raw, MAX_PROPERTY)
}

/// Makes `candidate` unique against `taken` with the smallest `_N` suffix (N ≥ 2) that
/// is free, keeping within `max` characters; records and returns the result.
pub(crate) fn unique(candidate: String, taken: &mut HashSet<String>, max: usize) -> String {
    if taken.insert(candidate.clone()) {
        return candidate;
    }
    for n in 2usize.. {
        let suffix = format!("_{n}");
        let mut head = candidate.clone();
        while head.len() + suffix.len() > max {
            head.pop();
        }
        let name = format!("{head}{suffix}");
        if taken.insert(name.clone()) {
            return name;
        }
    }
    unreachable!("an unbounded counter always finds a free name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names() {
        let p = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(tool_name("gh", &p(&["pr", "create"])), "gh_pr_create");
        assert_eq!(tool_name("gh", &p(&[""])), "gh");
        assert_eq!(tool_name("7z", &p(&["a"])), "_7z_a");
        assert_eq!(
            tool_name("kubectl", &p(&["config", "use.context"])),
            "kubectl_config_use_context"
        );
        let long = tool_name("t", &p(&["x".repeat(100).as_str()]));
        assert_eq!(long.len(), 64);
        assert!(is_valid_tool_name(&long));
    }

    #[test]
    fn property_names() {
        assert_eq!(property_name("--dry-run"), "dry_run");
        assert_eq!(property_name("dry-run"), "dry_run");
        assert_eq!(property_name("2fa"), "_2fa");
        assert_eq!(property_name("..."), "arg");
        assert_eq!(property_name("héllo wörld"), "h_llo_w_rld");
        assert!(is_valid_property(&property_name(&"a-".repeat(80))));
    }

    #[test]
    fn uniqueness() {
        let mut taken = HashSet::new();
        assert_eq!(unique("a".into(), &mut taken, 64), "a");
        assert_eq!(unique("a".into(), &mut taken, 64), "a_2");
        assert_eq!(unique("a".into(), &mut taken, 64), "a_3");
        let long = "b".repeat(64);
        assert_eq!(unique(long.clone(), &mut taken, 64), long);
        let second = unique(long.clone(), &mut taken, 64);
        assert_eq!(second.len(), 64);
        assert!(second.ends_with("_2"));
    }
}
