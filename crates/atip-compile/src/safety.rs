//! Safety tunnelling: the protocol's warning suffix built from a command's effective
//! effects, and description cutting that never loses the suffix.
//!
//! Owns the exact suffix text (`[⚠️ DESTRUCTIVE | ⚠️ NOT REVERSIBLE | ⚠️ NOT IDEMPOTENT |
//! 💰 BILLABLE]`, `[READ-ONLY]`) and the 1024-character limit. Must not decide which
//! commands are exported.

use crate::model::Effects;

/// Longest description OpenAI accepts (characters); every format uses it.
pub const MAX_DESCRIPTION: usize = 1024;

/// The warning flags for a command, in the protocol's order. `INTERACTIVE` is added for
/// commands that need a human (only exported with `--include-interactive`).
pub(crate) fn flags(effects: &Effects) -> Vec<&'static str> {
    let mut out = Vec::new();
    if effects.destructive == Some(true) {
        out.push("⚠️ DESTRUCTIVE");
    }
    if effects.reversible == Some(false) {
        out.push("⚠️ NOT REVERSIBLE");
    }
    if effects.idempotent == Some(false) {
        out.push("⚠️ NOT IDEMPOTENT");
    }
    if effects.is_billable() {
        out.push("💰 BILLABLE");
    }
    if effects.needs_human() {
        out.push("⚠️ INTERACTIVE");
    }
    out
}

/// The suffix: `[flag | flag]`, `[READ-ONLY]` when there is no warning and the effects
/// say read-only, or empty when the effects say nothing either way.
pub fn suffix(effects: &Effects) -> String {
    let flags = flags(effects);
    if !flags.is_empty() {
        format!("[{}]", flags.join(" | "))
    } else if effects.is_read_only() {
        "[READ-ONLY]".into()
    } else {
        String::new()
    }
}

/// `text` + space + `suffix`, at most `max` characters: the text is cut (ending in `…`)
/// so the suffix always survives whole.
pub fn with_suffix(text: &str, suffix: &str, max: usize) -> String {
    let text = text.trim();
    let suffix_len = suffix.chars().count();
    let sep = usize::from(!suffix.is_empty() && !text.is_empty());
    let room = max.saturating_sub(suffix_len + sep);
    let body = cut(text, room);
    let mut out = String::with_capacity(body.len() + sep + suffix.len());
    out.push_str(&body);
    if sep == 1 {
        out.push(' ');
    }
    out.push_str(suffix);
    out
}

/// `a` and `b` joined as sentences: a full stop is added to `a` when it lacks closing
/// punctuation; either may be empty.
pub(crate) fn join_sentences(a: &str, b: &str) -> String {
    let (a, b) = (a.trim(), b.trim());
    if a.is_empty() || b.is_empty() {
        return format!("{a}{b}");
    }
    let stop = if a.ends_with(['.', '!', '?', ':', ')', ']', '`']) {
        ""
    } else {
        "."
    };
    format!("{a}{stop} {b}")
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(max - 1).collect();
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Cost;

    #[test]
    fn suffix_order_and_read_only() {
        let e = Effects {
            destructive: Some(true),
            reversible: Some(false),
            idempotent: Some(false),
            cost: Some(Box::new(Cost {
                billable: Some(true),
                ..Cost::default()
            })),
            ..Effects::default()
        };
        assert_eq!(
            suffix(&e),
            "[⚠️ DESTRUCTIVE | ⚠️ NOT REVERSIBLE | ⚠️ NOT IDEMPOTENT | 💰 BILLABLE]"
        );
        let mut ro = Effects {
            destructive: Some(false),
            ..Effects::default()
        };
        // `destructive: false` alone may still write files: no read-only claim.
        assert_eq!(suffix(&ro), "");
        ro.filesystem = Some(crate::model::FilesystemEffects {
            write: Some(false),
            ..Default::default()
        });
        assert_eq!(suffix(&ro), "[READ-ONLY]");
        assert_eq!(suffix(&Effects::default()), "");
    }

    #[test]
    fn cutting_keeps_suffix() {
        let long = "x".repeat(2000);
        let out = with_suffix(&long, "[⚠️ DESTRUCTIVE]", 1024);
        assert_eq!(out.chars().count(), 1024);
        assert!(out.ends_with("… [⚠️ DESTRUCTIVE]"));
        assert_eq!(
            with_suffix("Delete.", "[⚠️ DESTRUCTIVE]", 1024),
            "Delete. [⚠️ DESTRUCTIVE]"
        );
        assert_eq!(with_suffix("", "[READ-ONLY]", 1024), "[READ-ONLY]");
        assert_eq!(with_suffix("short", "", 3), "sh…");
    }
}
