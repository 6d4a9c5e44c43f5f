//! What `atip exec --dry-run` prints for a person (spec/cli.md, terminal output): the
//! command line as a shell would take it, then the policy's verdict and why, the
//! effects in the words `list` uses, the timeout and any value atip converted. A real
//! run's text output is the tool's own, untouched. JSON is `cli::exec`'s, unchanged.

use atip::output::term::{self, Paint, Style};
use serde_json::Value;
use std::fmt::Write as _;

/// The dry run's report (`Prepared::dry_run_report`) as text.
pub fn dry_run(r: &Value, width: Option<usize>, style: Style) -> String {
    let mut t = String::new();
    let argv: Vec<String> = r["argv"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(shell_word).collect())
        .unwrap_or_default();
    let _ = writeln!(
        t,
        "{}",
        style.paint(Some(Paint::Bold), "Would run (nothing was run):")
    );
    t.push_str(&term::wrap_whole("  ", &argv.join(" "), width, 4));
    let field = |t: &mut String, name: &str, value: &str, paint: Option<Paint>| {
        let label = format!("  {name:<9}");
        let text = term::wrap_whole(&label, value, width, 11);
        // Colour only the value, only when it fits one line.
        match paint {
            Some(p) if text.lines().count() == 1 => {
                let _ = writeln!(t, "{label}{}", style.paint(Some(p), value));
            }
            _ => t.push_str(&text),
        }
    };
    let action = r["decision"]["action"].as_str().unwrap_or("unknown");
    let paint = match action {
        "allow" => Some(Paint::Green),
        "confirm" => Some(Paint::Yellow),
        _ => Some(Paint::Red),
    };
    field(&mut t, "policy", action, paint);
    for hit in r["decision"]["rules"].as_array().into_iter().flatten() {
        let why = format!(
            "{} {}: {}",
            hit["action"].as_str().unwrap_or(""),
            hit["rule"].as_str().unwrap_or(""),
            hit["reason"].as_str().unwrap_or("")
        );
        field(&mut t, "", &why, None);
    }
    for c in r["decision"]["conditions"].as_array().into_iter().flatten() {
        field(
            &mut t,
            "",
            &format!("this call: {}", c.as_str().unwrap_or("")),
            None,
        );
    }
    let effects = r["effects"].as_str().unwrap_or("unknown");
    field(&mut t, "effects", effects, term::effects_paint(effects));
    if let Some(ms) = r["timeoutMs"].as_u64() {
        let timeout = if ms % 1000 == 0 {
            format!("{} s", ms / 1000)
        } else {
            format!("{ms} ms")
        };
        field(&mut t, "timeout", &timeout, None);
    }
    for c in r["coerced"].as_array().into_iter().flatten() {
        field(&mut t, "converted", c.as_str().unwrap_or(""), None);
    }
    if let Some(tr) = r.get("policyTranslation") {
        field(&mut t, "policy", &format!("translated from: {tr}"), None);
    }
    t
}

/// `s` as one shell word: as it is when only safe characters, else single-quoted;
/// control characters shown escaped.
fn shell_word(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    let s = atip::output::text::escape_controls(s);
    if safe {
        s.into_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_dry_run_reads_as_a_command_line_and_a_verdict() {
        let r = json!({"status": "dry-run", "tool": "rm", "command": "rm",
            "argv": ["/usr/bin/rm", "--", "my file's.txt"],
            "decision": {"action": "confirm", "rules": [
                {"rule": "effects.destructive", "action": "confirm", "reason": "the command is destructive"}]},
            "effects": "destructive, deletes files", "timeoutMs": 60000, "coerced": []});
        let text = dry_run(&r, Some(60), Style::plain());
        assert_eq!(
            text,
            "Would run (nothing was run):\n  /usr/bin/rm -- 'my file'\\''s.txt'\n  policy   confirm\n           confirm effects.destructive: the command is\n           destructive\n  effects  destructive, deletes files\n  timeout  60 s\n"
        );
    }
}
