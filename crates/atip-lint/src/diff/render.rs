//! How `atip diff` results look as text and as Markdown (JSON is the [`Report`] itself).
//!
//! Owns both layouts: a header naming the two documents, the counts, one section per
//! class (breaking, effects, non-breaking) with one line or table row per change, and
//! the semver line. Markdown is meant for pull-request comments: table cells escape `|`
//! and line breaks.
//!
//! Must not compare anything.

use super::{Class, Report, Side};

const CLASSES: [(Class, &str, &str); 3] = [
    (Class::Breaking, "breaking", "Breaking"),
    (
        Class::Effects,
        "effects (less safe)",
        "Effects that became less safe",
    ),
    (Class::NonBreaking, "non-breaking", "Non-breaking"),
];

fn side(s: &Side) -> String {
    let name = s.name.as_deref().unwrap_or("?");
    match &s.version {
        Some(v) => format!("{name} {v} ({})", s.source),
        None => format!("{name} ({})", s.source),
    }
}

fn counts(r: &Report) -> String {
    format!(
        "{} breaking, {} effects, {} non-breaking",
        r.summary.breaking, r.summary.effects, r.summary.non_breaking
    )
}

/// Plain text, one change per line.
pub fn text(r: &Report, semver: bool) -> String {
    let mut out = format!("{} → {}\n{}\n", side(&r.old), side(&r.new), counts(r));
    for s in [&r.old, &r.new] {
        if s.partial {
            out.push_str(&format!(
                "note: {} is a partial document; commands it leaves out count as removed or added\n",
                s.source
            ));
        }
    }
    for (class, title, _) in CLASSES {
        let changes: Vec<_> = r.changes.iter().filter(|c| c.class == class).collect();
        if changes.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}:\n"));
        for c in changes {
            out.push_str(&format!("  [{}] {}\n", c.kind, c.message));
        }
    }
    if semver {
        out.push('\n');
        out.push_str(
            &r.semver
                .line(r.old.version.as_deref(), r.new.version.as_deref()),
        );
        out.push('\n');
    }
    out
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Markdown for a pull-request comment.
pub fn markdown(r: &Report, semver: bool) -> String {
    let mut out = format!(
        "## ATIP diff: {} → {}\n\n",
        cell(&side(&r.old)),
        cell(&side(&r.new))
    );
    out.push_str(&format!(
        "**{} breaking**, **{} effects**, {} non-breaking\n",
        r.summary.breaking, r.summary.effects, r.summary.non_breaking
    ));
    for s in [&r.old, &r.new] {
        if s.partial {
            out.push_str(&format!(
                "\n> `{}` is a partial document: commands it leaves out count as removed or added.\n",
                cell(&s.source)
            ));
        }
    }
    for (class, _, title) in CLASSES {
        let changes: Vec<_> = r.changes.iter().filter(|c| c.class == class).collect();
        if changes.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n### {title} ({})\n\n| command | change | kind |\n|---|---|---|\n",
            changes.len()
        ));
        for c in changes {
            let what = match &c.target {
                Some(t) => c
                    .message
                    .strip_prefix(&format!("{}: ", c.command))
                    .unwrap_or(&c.message)
                    .replacen(t.as_str(), &format!("`{t}`"), 1),
                None => c
                    .message
                    .strip_prefix(&format!("{}: ", c.command))
                    .unwrap_or(&c.message)
                    .to_string(),
            };
            out.push_str(&format!(
                "| `{}` | {} | `{}` |\n",
                cell(&c.command),
                cell(&what),
                c.kind
            ));
        }
    }
    if r.changes.is_empty() {
        out.push_str("\nNo interface or effects change.\n");
    }
    if semver {
        out.push_str(&format!(
            "\n{}\n",
            r.semver
                .line(r.old.version.as_deref(), r.new.version.as_deref())
        ));
    }
    out
}
