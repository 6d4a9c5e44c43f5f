//! `SKILL.md` for agents that load skills: YAML front matter (`name`, `description`), then
//! the tool's commands with their key options, effects warnings, authentication set-up,
//! patterns and examples, all in Markdown.
//!
//! Owns the SKILL.md layout. Must not write files; the caller puts each text at
//! `<DIR>/<skill name>/SKILL.md`.

use super::{FlatTool, ParamOrigin, ResolvedCommand, resolve, safety};
use crate::model::{Metadata, Opt};
use std::fmt::Write;

/// The skill name: lower-case letters, digits and `-`, at most 64 characters.
pub fn skill_name(meta: &Metadata) -> String {
    let raw = meta.tool_name().unwrap_or("tool").to_ascii_lowercase();
    let mut out = String::new();
    for c in raw.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut out: String = out.trim_matches('-').chars().take(64).collect();
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() { "tool".into() } else { out }
}

fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

fn flags_of(opt: &Opt) -> String {
    let mut flags = opt.flags.join(", ");
    if opt.kind != crate::model::ParamType::Boolean {
        let _ = write!(flags, " <{}>", opt.kind.as_str());
    }
    flags
}

/// An option's description on one line, or a fallback naming its flag.
fn opt_text(opt: &Opt) -> String {
    match one_line(&opt.description) {
        d if d.is_empty() => format!("The {} option.", opt.long_flag().unwrap_or(&opt.name)),
        d => d,
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The SKILL.md text for one tool and the flattened commands chosen for it.
pub fn render(meta: &Metadata, tools: &[FlatTool]) -> String {
    let tool = meta.tool_name().unwrap_or("tool");
    let mut s = String::new();
    let about = one_line(&meta.description);
    let about = if about.is_empty() {
        format!("The `{tool}` command-line tool.")
    } else {
        about
    };
    let description = safety::cut(
        &safety::join_sentences(
            &about,
            &format!(
                "Use when a task needs `{tool}`: {} command{} with their options and safety warnings.",
                tools.len(),
                if tools.len() == 1 { "" } else { "s" }
            ),
        ),
        1024,
    );
    let _ = writeln!(
        s,
        "---\nname: {}\ndescription: {}\n---\n",
        yaml_string(&skill_name(meta)),
        yaml_string(&description)
    );
    let _ = writeln!(s, "# {tool}\n\n{about}\n");
    if let Some(v) = meta.tool_version() {
        let _ = writeln!(s, "Version: {v}");
    }
    if let Some(h) = &meta.homepage {
        let _ = writeln!(s, "Homepage: {h}");
    }
    let tool_effects = meta.effects.clone().unwrap_or_default();
    let _ = writeln!(s, "Tool-level effects: {}.\n", tool_effects.summary());

    let warned: Vec<&FlatTool> = tools
        .iter()
        .filter(|t| !safety::flags(&t.effects).is_empty())
        .collect();
    s.push_str("## Safety\n\n");
    s.push_str("Warnings come from the commands' declared effects. Confirm with the user before running anything marked DESTRUCTIVE or NOT REVERSIBLE; metadata describes, it does not guarantee.\n\n");
    if warned.is_empty() {
        s.push_str("No command declares a destructive, irreversible, non-idempotent or billable effect.\n\n");
    } else {
        for t in &warned {
            let _ = writeln!(s, "- `{}` {}", t.title, t.safety);
        }
        s.push('\n');
    }

    if let Some(auth) = &meta.authentication {
        s.push_str("## Authentication\n\n");
        if auth.required == Some(true) {
            s.push_str("Authentication is required.\n\n");
        }
        for m in auth.methods.iter().flatten() {
            let _ = write!(s, "- {}", m.kind);
            if let Some(e) = &m.env_var {
                let _ = write!(s, ": set `{e}`");
            }
            if let Some(d) = &m.description {
                let _ = write!(s, " — {}", one_line(d));
            }
            if let Some(c) = &m.setup_command {
                let _ = write!(s, " (set up with `{c}`)");
            }
            s.push('\n');
        }
        if let Some(c) = &auth.check_command {
            let _ = writeln!(s, "\nCheck with `{c}`.");
        }
        s.push('\n');
    }

    let globals = meta.global_opts();
    if !globals.is_empty() {
        s.push_str("## Global options\n\n");
        for o in globals {
            let _ = writeln!(s, "- `{}`: {}", flags_of(o), opt_text(o));
        }
        s.push('\n');
    }

    s.push_str("## Commands\n\n");
    for t in tools {
        let _ = writeln!(s, "### `{}`\n\n{}\n", t.title, t.description);
        let entry = resolve(meta, &t.command);
        let (own_opts, examples): (Vec<&Opt>, Vec<String>) = match &entry {
            Some(ResolvedCommand::Entry(e)) => (
                meta.options_in_scope(e)
                    .into_iter()
                    .filter(|o| !globals.iter().any(|g| g.name == o.name))
                    .collect(),
                e.command
                    .examples
                    .iter()
                    .flatten()
                    .map(|v| {
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .collect(),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        let mut usage = t.title.clone();
        for p in &t.params {
            if let ParamOrigin::Argument { name, .. } = &p.origin {
                let dots = if p.variadic { "..." } else { "" };
                if p.required {
                    let _ = write!(usage, " <{name}{dots}>");
                } else {
                    let _ = write!(usage, " [{name}{dots}]");
                }
            }
        }
        if !own_opts.is_empty() {
            usage.push_str(" [options]");
        }
        let _ = writeln!(s, "Usage: `{usage}`\n");
        for p in &t.params {
            if let ParamOrigin::Argument { name, .. } = &p.origin {
                let req = if p.required { "required" } else { "optional" };
                let _ = writeln!(
                    s,
                    "- `<{name}>` ({}, {req}): {}",
                    p.kind.as_str(),
                    one_line(&p.description)
                );
            }
        }
        for o in &own_opts {
            let req = if o.is_required() { " (required)" } else { "" };
            let _ = writeln!(s, "- `{}`{req}: {}", flags_of(o), opt_text(o));
        }
        let _ = writeln!(s, "\nEffects: {}.", t.effects.summary());
        if !examples.is_empty() {
            s.push_str("\nExamples:\n\n```sh\n");
            for e in &examples {
                let _ = writeln!(s, "{e}");
            }
            s.push_str("```\n");
        }
        s.push('\n');
    }

    if let Some(patterns) = meta.patterns.as_ref().filter(|p| !p.is_empty()) {
        s.push_str("## Patterns\n\n");
        for p in patterns {
            let _ = writeln!(s, "### {}\n", p.name);
            if let Some(d) = &p.description {
                let _ = writeln!(s, "{}\n", one_line(d));
            }
            for (i, step) in p.steps.iter().flatten().enumerate() {
                let _ = write!(s, "{}. `{}`", i + 1, step.command);
                if let Some(d) = &step.description {
                    let _ = write!(s, " — {}", one_line(d));
                }
                s.push('\n');
            }
            if let Some(vars) = p.variables.as_ref().filter(|v| !v.is_empty()) {
                s.push_str("\nVariables:\n");
                for (name, v) in vars {
                    let desc = v.get("description").and_then(|d| d.as_str()).unwrap_or("");
                    let _ = writeln!(s, "- `{name}`: {}", one_line(desc));
                }
            }
            s.push('\n');
        }
    }
    while s.ends_with("\n\n") {
        s.pop();
    }
    s
}
