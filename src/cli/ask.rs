//! The one confirmation prompt: a yes/no question on the controlling terminal.
//!
//! `exec`, `mcp call` and the trust question for a project's `.mcp.json` ask the same
//! way: only when the streams that must be a terminal are one (never in a pipeline),
//! on `/dev/tty` (so a redirected stdin or stdout cannot answer), and only `y` or `yes`
//! (any of the usual cases) is a yes; anything else, or no answer at all, is a no.

use std::io::{IsTerminal, Read, Write};

/// Which of atip's streams must be a terminal before it asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// stderr (a tool call's confirmation: its arguments come in on stdin).
    Stderr,
    /// stdin and stderr (trusting a file: nothing may answer for the user).
    StdinAndStderr,
}

/// Whether atip could ask now.
pub fn can_ask(needs: Needs) -> bool {
    std::io::stderr().is_terminal() && (needs == Needs::Stderr || std::io::stdin().is_terminal())
}

/// Asks `question` on the terminal: `None` when there is none to ask on, else whether
/// the answer was yes. `question` is shown as given: the caller escapes what came from
/// a model, a server or a file.
pub fn confirm(question: &str, needs: Needs) -> Option<bool> {
    if !can_ask(needs) {
        return None;
    }
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    tty.write_all(fitted(question, atip::output::term::stderr_width()).as_bytes())
        .ok()?;
    Some(is_yes(&read_line(&mut tty)))
}

/// A tool call's confirmation ([`confirm`] on stderr's terminal) as `exec` records it.
pub fn answer(question: &str) -> atip::exec::Confirmation {
    use atip::exec::Confirmation;
    match confirm(question, Needs::Stderr) {
        None => Confirmation::Unavailable,
        Some(true) => Confirmation::Yes,
        Some(false) => Confirmation::No,
    }
}

/// One line, read a byte at a time: nothing after the newline is consumed.
/// The question with each of its whole lines wrapped at words to the terminal's
/// `width` (continuation lines under themselves); the last, unfinished line (the prompt
/// the answer is typed after) is left as it is.
fn fitted(question: &str, width: Option<usize>) -> String {
    let (lines, prompt) = match question.rfind('\n') {
        Some(i) => question.split_at(i + 1),
        None => ("", question),
    };
    format!(
        "{}{prompt}",
        atip::output::term::wrap_long_lines(lines, width)
    )
}

fn read_line(from: &mut impl Read) -> Vec<u8> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while let Ok(1) = from.read(&mut byte) {
        if byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
    }
    line
}

/// Whether an answer says yes.
fn is_yes(answer: &[u8]) -> bool {
    matches!(
        String::from_utf8_lossy(answer).trim(),
        "y" | "Y" | "yes" | "Yes" | "YES"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_fits_the_terminal_and_the_prompt_stays_on_its_line() {
        let q = "atip: run `rm`?\n  effects.destructive (the command is destructive); effects.filesystemDelete (the command deletes files)\nConfirm [y/N]: ";
        let shown = fitted(q, Some(40));
        assert!(shown.ends_with("\nConfirm [y/N]: "), "{shown:?}");
        for l in shown.lines() {
            assert!(atip::output::term::width(l) <= 40, "{l:?}");
        }
        assert_eq!(
            shown.split_whitespace().collect::<Vec<_>>(),
            q.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(fitted(q, None), q);
    }

    #[test]
    fn only_yes_is_yes_and_one_line_is_read() {
        let mut input: &[u8] = b" yes \nrm -rf /\n";
        assert!(is_yes(&read_line(&mut input)));
        assert_eq!(input, b"rm -rf /\n", "the next line is left unread");
        for no in ["", "n", "no", "yess", "y y", "ja", "\u{1b}[Ay"] {
            assert!(!is_yes(no.as_bytes()), "{no:?}");
        }
        for yes in ["y", "Y", "yes", "Yes", "YES", "y\r"] {
            assert!(is_yes(yes.as_bytes()), "{yes:?}");
        }
        let mut eof: &[u8] = b"";
        assert!(!is_yes(&read_line(&mut eof)));
    }
}
