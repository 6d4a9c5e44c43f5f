//! `SKILL.md` for agents that load skills: YAML front matter (`name`, `description`), then
//! the tool's commands with their key options (allowed values and defaults included, so an
//! agent never has to guess), effects warnings, authentication set-up, patterns and
//! examples, all in Markdown.
//!
//! Owns the SKILL.md layout. Must not write files; the caller puts each text at
//! `<DIR>/<skill name>/SKILL.md`.

use super::{FlatTool, Param, ParamOrigin, ResolvedCommand, resolve, safety};
use crate::model::{Argument, Metadata, Opt, ParamType};
use serde_json::Value;
use std::fmt::Write;

/// The skill name: lower-case letters, digits and `-`, at most 64 characters.
pub(crate) fn skill_name(meta: &Metadata) -> String {
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

/// The SKILL.md text for one tool and the flattened commands chosen for it.
pub fn render(meta: &Metadata, tools: &[FlatTool]) -> String {
    let mut s = String::new();
    front_matter(&mut s, meta, tools);
    safety_section(&mut s, tools);
    authentication_section(&mut s, meta);
    let globals = meta.global_opts();
    if !globals.is_empty() {
        s.push_str("## Global options\n\n");
        for o in globals {
            let _ = writeln!(s, "- {}", option_line(o));
        }
        s.push('\n');
    }
    s.push_str("## Commands\n\n");
    for t in tools {
        command_section(&mut s, meta, t, globals);
    }
    patterns_section(&mut s, meta);
    while s.ends_with("\n\n") {
        s.pop();
    }
    s
}

/// Front matter, title, version, homepage and tool-level effects.
fn front_matter(s: &mut String, meta: &Metadata, tools: &[FlatTool]) {
    let tool = meta.tool_name().unwrap_or("tool");
    let about = match one_line(&meta.description) {
        a if a.is_empty() => format!("The `{tool}` command-line tool."),
        a => a,
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
}

/// Every command whose effects carry a warning, with that warning.
fn safety_section(s: &mut String, tools: &[FlatTool]) {
    s.push_str("## Safety\n\n");
    s.push_str("Warnings come from the commands' declared effects. Confirm with the user before running anything marked DESTRUCTIVE or NOT REVERSIBLE; metadata describes, it does not guarantee.\n\n");
    let warned: Vec<&FlatTool> = tools
        .iter()
        .filter(|t| !safety::flags(&t.effects).is_empty())
        .collect();
    if warned.is_empty() {
        s.push_str("No command declares a destructive, irreversible, non-idempotent or billable effect.\n\n");
    } else {
        for t in &warned {
            let _ = writeln!(s, "- `{}` {}", t.title, t.safety);
        }
        s.push('\n');
    }
}

/// How to authenticate, when the metadata says.
fn authentication_section(s: &mut String, meta: &Metadata) {
    let Some(auth) = &meta.authentication else {
        return;
    };
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

/// One command: usage line, arguments, own options, effects and examples.
fn command_section(s: &mut String, meta: &Metadata, t: &FlatTool, globals: &[Opt]) {
    let _ = writeln!(s, "### `{}`\n\n{}\n", t.title, t.description);
    let entry = match resolve(meta, &t.command) {
        Some(ResolvedCommand::Entry(e)) => Some(e),
        _ => None,
    };
    let own_opts: Vec<&Opt> = entry.as_ref().map_or_else(Vec::new, |e| {
        meta.options_in_scope(e)
            .into_iter()
            .filter(|o| !globals.iter().any(|g| g.name == o.name))
            .collect()
    });
    // Positional arguments, each with its declaration (for its allowed values).
    let arguments: Vec<(&Param, &str, Option<&Argument>)> = t
        .params
        .iter()
        .filter_map(|p| match &p.origin {
            ParamOrigin::Argument { name, index } => Some((
                p,
                name.as_str(),
                entry.as_ref().and_then(|e| e.command.args().get(*index)),
            )),
            ParamOrigin::Option { .. } => None,
        })
        .collect();

    let mut usage = t.title.clone();
    for (p, name, _) in &arguments {
        let dots = if p.variadic { "..." } else { "" };
        if p.required {
            let _ = write!(usage, " <{name}{dots}>");
        } else {
            let _ = write!(usage, " [{name}{dots}]");
        }
    }
    if !own_opts.is_empty() {
        usage.push_str(" [options]");
    }
    let _ = writeln!(s, "Usage: `{usage}`\n");
    for (p, name, arg) in &arguments {
        let req = if p.required { "required" } else { "optional" };
        let _ = writeln!(
            s,
            "- `<{name}>` ({}, {req}): {}",
            value_placeholder(&p.kind, arg.and_then(|a| a.values.as_deref())),
            // Already ends with the default (see `flatten`).
            one_line(&p.description)
        );
    }
    for o in &own_opts {
        let _ = writeln!(s, "- {}", option_line(o));
    }
    let _ = writeln!(s, "\nEffects: {}.", t.effects.summary());
    let examples: Vec<String> = entry
        .iter()
        .flat_map(|e| e.command.examples.iter().flatten())
        .map(|v| {
            v.as_str()
                .map(String::from)
                .unwrap_or_else(|| v.to_string())
        })
        .collect();
    if !examples.is_empty() {
        s.push_str("\nExamples:\n\n```sh\n");
        for e in &examples {
            let _ = writeln!(s, "{e}");
        }
        s.push_str("```\n");
    }
    s.push('\n');
}

/// The tool's named multi-step patterns.
fn patterns_section(s: &mut String, meta: &Metadata) {
    let Some(patterns) = meta.patterns.as_ref().filter(|p| !p.is_empty()) else {
        return;
    };
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

/// One option as a list item: `` `-s, --state <open|closed>` (required): What. Default: `open`. ``
fn option_line(opt: &Opt) -> String {
    let mut flags = opt.flags.join(", ");
    if opt.kind != ParamType::Boolean {
        let _ = write!(
            flags,
            " <{}>",
            value_placeholder(&opt.kind, opt.values.as_deref())
        );
    }
    let req = if opt.is_required() { " (required)" } else { "" };
    let text = match one_line(&opt.description) {
        d if d.is_empty() => format!("The {} option.", opt.long_flag().unwrap_or(&opt.name)),
        d => d,
    };
    format!(
        "`{flags}`{req}: {}",
        with_default(text, &opt.kind, opt.default.as_ref())
    )
}

/// What a value looks like: its allowed values joined by `|` when the metadata lists them,
/// otherwise the type name (`string`, `integer`, …).
fn value_placeholder(kind: &ParamType, values: Option<&[Value]>) -> String {
    match values.filter(|v| !v.is_empty()) {
        Some(values) => values.iter().map(plain).collect::<Vec<_>>().join("|"),
        None => kind.as_str().to_string(),
    }
}

/// The description followed by the default value, when there is one worth saying (a
/// boolean switch that defaults to off is the norm and is left unsaid).
fn with_default(text: String, kind: &ParamType, default: Option<&Value>) -> String {
    let Some(d) = default.filter(|d| !d.is_null()) else {
        return text;
    };
    if *kind == ParamType::Boolean && *d == Value::Bool(false) {
        return text;
    }
    let sep = if text.is_empty() || text.ends_with(['.', '!', '?']) {
        ""
    } else {
        "."
    };
    format!("{text}{sep} Default: `{}`.", plain(d))
        .trim_start()
        .to_string()
}

/// A JSON value as a user would type it: strings without quotes.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialize")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(json: &str) -> Metadata {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn enum_values_and_defaults_are_shown() {
        let m = meta(
            r#"{"atip":{"version":"0.6"},"name":"t","version":"1","description":"T",
            "commands":{"ls":{"description":"List",
              "arguments":[{"name":"kind","type":"enum","enum":["a","b"],"required":false,"default":"a","description":"Which"}],
              "options":[
                {"name":"state","flags":["-s","--state"],"type":"enum","enum":["open","closed"],"default":"open","description":"Filter by state"},
                {"name":"limit","flags":["--limit"],"type":"integer","default":30,"description":"At most this many."},
                {"name":"all","flags":["--all"],"type":"boolean","default":false,"description":"Everything"},
                {"name":"style","flags":["--style"],"type":"enum","description":""}]}}}"#,
        );
        let tools = crate::flatten(&m, &Default::default());
        let text = render(&m, &tools);
        assert!(
            text.contains("- `-s, --state <open|closed>`: Filter by state. Default: `open`."),
            "{text}"
        );
        assert!(
            text.contains("- `--limit <integer>`: At most this many. Default: `30`."),
            "{text}"
        );
        assert!(text.contains("- `--all`: Everything\n"), "{text}");
        assert!(
            text.contains("- `--style <enum>`: The --style option.\n"),
            "{text}"
        );
        assert!(
            text.contains("- `<kind>` (a|b, optional): Which. Default: a."),
            "{text}"
        );
    }
}
