//! Text that came from someone else (a model's arguments, an MCP server's names) shown
//! to a human: on a terminal, in a confirmation prompt, in an elicitation message.
//!
//! Raw control characters in such text are instructions to the terminal, not text: a
//! carriage return and `ESC [2K` erase what was printed before them, so an argument can
//! redraw a prompt as an innocent command. Bidirectional overrides reorder what is
//! shown. Every place that shows untrusted text goes through [`escape_controls`] (or
//! [`escape_controls_keep_lines`] for multi-line text), so they all escape the same way.

use std::borrow::Cow;

/// Whether `c` must not reach a terminal or a prompt as itself: C0 controls, DEL, C1
/// controls, and the Unicode bidirectional marks, embeddings, overrides and isolates
/// (which reorder the text around them), plus the line and paragraph separators.
pub fn is_unsafe_char(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `s` with every unsafe character ([`is_unsafe_char`]) written as a visible escape:
/// `\r`, `\n`, `\t`, `\e` for ESC, `\xNN` for other ASCII controls, `\u{NNNN}` for the
/// rest. One line out, whatever came in. Borrowed when nothing needed escaping.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// [`escape_controls`], but newlines stay newlines (descriptions, multi-line text that
/// is printed as such). Carriage returns are still escaped: `\r\n` shows as `\r` + a
/// line break.
pub fn escape_controls_keep_lines(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe_char(c) && !(keep_lines && c == '\n');
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !bad(c) {
            out.push(c);
            continue;
        }
        match c {
            '\r' => out.push_str("\\r"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// One argument as a human should read it in a command line: control characters
/// escaped, and quoted (single quotes, POSIX style) when it is empty or holds spaces,
/// quotes or shell metacharacters — so `a b` cannot pass for two arguments.
pub fn shown_arg(arg: &str) -> String {
    let escaped = escape_controls(arg);
    let plain = !escaped.is_empty()
        && escaped.chars().all(|c| {
            c.is_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | '=' | ',' | '+' | '@' | '%')
        });
    if plain {
        escaped.into_owned()
    } else {
        format!("'{}'", escaped.replace('\'', "'\\''"))
    }
}

/// A command line (program and arguments) as [`shown_arg`] shows each word.
pub fn shown_argv<S: AsRef<str>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| shown_arg(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(escape_controls("git status -s"), Cow::Borrowed(_)));
        assert_eq!(escape_controls("héllo wörld ✓"), "héllo wörld ✓");
    }

    #[test]
    fn terminal_controls_are_escaped_visibly() {
        // The redraw attack: CR, erase line, then an innocent-looking command.
        let shown = escape_controls("x\r\x1b[2Kgit status");
        assert_eq!(shown, "x\\r\\e[2Kgit status");
        assert!(!shown.contains('\r') && !shown.contains('\x1b'));
        assert_eq!(escape_controls("a\nb\tc\0d\x7f"), "a\\nb\\tc\\x00d\\x7f");
        // C1: CSI (U+009B) is ESC [ to many terminals.
        assert_eq!(escape_controls("\u{9b}2J"), "\\u{009b}2J");
        // OSC with BEL terminator.
        assert_eq!(escape_controls("\x1b]0;t\x07"), "\\e]0;t\\x07");
    }

    #[test]
    fn bidi_overrides_and_isolates_are_escaped() {
        let s = "rm -rf \u{202e}txt.exe\u{202c} \u{2066}x\u{2069} \u{200f}";
        let shown = escape_controls(s);
        for c in ['\u{202e}', '\u{202c}', '\u{2066}', '\u{2069}', '\u{200f}'] {
            assert!(!shown.contains(c), "{shown}");
        }
        assert!(shown.contains("\\u{202e}"), "{shown}");
        assert!(shown.chars().all(|c| !is_unsafe_char(c)));
    }

    #[test]
    fn keep_lines_keeps_only_newlines() {
        assert_eq!(
            escape_controls_keep_lines("a\nb\r\n\x1b[2J"),
            "a\nb\\r\n\\e[2J"
        );
    }

    #[test]
    fn arguments_are_quoted_when_they_could_read_as_more() {
        assert_eq!(shown_arg("status"), "status");
        assert_eq!(shown_arg("--name=x/y.z"), "--name=x/y.z");
        assert_eq!(shown_arg("a b"), "'a b'");
        assert_eq!(shown_arg(""), "''");
        assert_eq!(shown_arg("it's"), "'it'\\''s'");
        assert_eq!(shown_arg("; rm -rf ~"), "'; rm -rf ~'");
        assert_eq!(
            shown_argv(&["rm", "-rf", "x\r\x1b[2Kls"]),
            "rm -rf 'x\\r\\e[2Kls'"
        );
    }
}
