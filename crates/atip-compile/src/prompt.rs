//! The `prompt` format: a Markdown system-prompt fragment listing each tool's commands
//! with their safety warnings, a safety summary per tool and its patterns.
//!
//! Owns the fragment's layout. Leaves out agent-only facts (authentication, interactive
//! details, durations). Must not do I/O.

use super::FlatTool;
use crate::model::Metadata;
use std::fmt::Write;

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The fragment for the given tools, each with its chosen flattened commands.
pub fn render(items: &[(&Metadata, Vec<&FlatTool>)]) -> String {
    let mut s = header();
    for (meta, tools) in items {
        s.push_str(&section(meta, tools));
    }
    s
}

/// The fragment's opening lines.
pub(crate) fn header() -> String {
    let mut s = String::from("## Command-line tools\n\n");
    s.push_str("You can run the commands below. Bracketed warnings come from each command's declared effects: ask the user before running anything marked DESTRUCTIVE or NOT REVERSIBLE, and do not repeat a NOT IDEMPOTENT command without checking its first result.\n");
    s
}

/// One tool's section: safety summary, commands, patterns.
pub(crate) fn section(meta: &Metadata, tools: &[&FlatTool]) -> String {
    let mut s = String::new();
    let name = meta.tool_name().unwrap_or("tool");
    let _ = write!(s, "\n### {name}");
    if let Some(v) = meta.tool_version() {
        let _ = write!(s, " {v}");
    }
    let about = one_line(&meta.description);
    if !about.is_empty() {
        let _ = write!(s, " — {about}");
    }
    s.push_str("\n\n");
    let destructive = tools
        .iter()
        .filter(|t| t.effects.destructive == Some(true))
        .count();
    let read_only = tools.iter().filter(|t| t.effects.is_read_only()).count();
    let _ = writeln!(
        s,
        "Safety: {} command{}, {read_only} read-only, {destructive} destructive; tool-level effects: {}.\n",
        tools.len(),
        if tools.len() == 1 { "" } else { "s" },
        meta.effects.clone().unwrap_or_default().summary()
    );
    for t in tools {
        let _ = writeln!(s, "- `{}` — {}", t.title, one_line(&t.description));
    }
    if let Some(patterns) = meta.patterns.as_ref().filter(|p| !p.is_empty()) {
        s.push_str("\nPatterns:\n");
        for p in patterns {
            let _ = write!(s, "- {}", p.name);
            if let Some(d) = &p.description {
                let _ = write!(s, ": {}", one_line(d));
            }
            let steps: Vec<String> = p
                .steps
                .iter()
                .flatten()
                .map(|st| format!("`{}`", st.command))
                .collect();
            if !steps.is_empty() {
                let _ = write!(s, " ({})", steps.join(" → "));
            }
            s.push('\n');
        }
    }
    s
}
