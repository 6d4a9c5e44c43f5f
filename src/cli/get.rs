//! `atip get`: a registered tool as a page for a person on a terminal, or its stored
//! metadata as JSON (piped, `--output json`), whole or as the partial document of
//! partial discovery (`--commands`, `--depth`). Read-only; never takes the writer lock.
//! Unknown names and commands exit 66 with the closest names.

use crate::Ctx;
use atip::compile::guard::ParamGuard;
use atip::model::{Argument, CommandEntry, Effects, Metadata, Opt, ParamType};
use atip::output::ExitStatus;
use atip::output::term::{self, Cell, Paint, Style, Table, fit};
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::registry::query::{self, StoredTool};
use std::fmt::Write as _;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Print a registered tool's metadata, whole or partial.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Tool name, as in `atip list`.
    pub name: String,
    /// Only these commands (with their subcommands), comma-separated; nested ones
    /// as space-separated paths: `--commands 'pr create,issue'`.
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub commands: Option<Vec<String>>,
    /// Cut commands nested deeper than N levels (1 = top-level commands only).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub depth: Option<u64>,
}

/// Runs `atip get`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let tool = query::get_tool(&ctx.dirs, &args.name).map_err(|e| e.to_atip())?;
    let page = ctx.output == OutputFormat::Text;
    let value = if args.commands.is_none() && args.depth.is_none() {
        serde_json::from_slice::<serde_json::Value>(&tool.document).map_err(|e| {
            AtipError::new(
                ErrorCode::MetadataInvalid,
                format!("stored metadata of {} is not JSON: {e}", tool.name),
            )
        })?
    } else {
        let commands: Option<Vec<String>> = args.commands.map(|list| {
            list.iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .filter(|c| !c.is_empty())
                .collect()
        });
        for wanted in commands.iter().flatten() {
            let path: Vec<&str> = wanted.split(' ').collect();
            if tool.metadata.find(&path).is_none() {
                let all: Vec<String> = tool
                    .metadata
                    .walk()
                    .iter()
                    .map(|e| e.path_string())
                    .collect();
                let close = query::suggest(all.iter().map(String::as_str), wanted, 3);
                let hint = if close.is_empty() {
                    format!(
                        "its top-level commands: {}",
                        tool.metadata
                            .top_commands()
                            .map(|(n, _)| n.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                } else {
                    format!("did you mean {}?", close.join(", "))
                };
                return Err(AtipError::new(
                    ErrorCode::CommandNotFound,
                    format!("{} has no command {wanted:?}", tool.name),
                )
                .hint(hint)
                .details(
                    serde_json::json!({"tool": tool.name, "command": wanted, "suggestions": close}),
                ));
            }
        }
        let depth = args.depth.map(|d| d as usize);
        if page {
            let text = render_page(
                &tool,
                &View {
                    commands: commands.as_deref(),
                    depth,
                },
                ctx.width,
                Style::new(ctx.out.stdout_color()),
            );
            return ctx.out.text(&text).map(|_| ExitStatus::Success);
        }
        tool.metadata.partial(commands.as_deref(), depth).to_value()
    };
    if page {
        let text = render_page(
            &tool,
            &View::default(),
            ctx.width,
            Style::new(ctx.out.stdout_color()),
        );
        return ctx.out.text(&text).map(|_| ExitStatus::Success);
    }
    ctx.out.json(&value)?;
    Ok(ExitStatus::Success)
}

/// Which part of the tool the page shows.
#[derive(Debug, Default)]
pub(crate) struct View<'a> {
    /// Only these command paths (space-separated), each in full.
    pub commands: Option<&'a [String]>,
    /// Only commands at most this deep.
    pub depth: Option<usize>,
}

/// A tool with at most this many runnable commands is shown in full (usage, options,
/// effects of each); a larger one as a table of its commands, one line each.
const FULL_PAGE_COMMANDS: usize = 3;

/// The page: what the tool is and where its description came from, then its commands —
/// each in full (usage, arguments, options, effects with the conditions that change them)
/// when there are few or they were asked for, else one line each with the command that
/// shows one in full.
pub(crate) fn render_page(
    tool: &StoredTool,
    view: &View<'_>,
    width: Option<usize>,
    style: Style,
) -> String {
    let m = &tool.metadata;
    let mut t = String::new();
    about_tool(&mut t, tool, width, style);
    let walk = m.walk();
    let in_view = |c: &&CommandEntry<'_>| {
        c.command.is_runnable() && view.depth.is_none_or(|d| c.depth() <= d)
    };
    let runnable: Vec<&CommandEntry<'_>> = walk.iter().filter(in_view).collect();
    let chosen: Vec<&CommandEntry<'_>> = match view.commands {
        Some(wanted) => walk
            .iter()
            .filter(|c| {
                let p = c.path_string();
                wanted
                    .iter()
                    .any(|w| p == *w || p.starts_with(&format!("{w} ")))
            })
            .filter(in_view)
            .collect(),
        None if runnable.len() <= FULL_PAGE_COMMANDS => runnable.clone(),
        None => Vec::new(),
    };
    if chosen.is_empty() && !runnable.is_empty() {
        commands_table(&mut t, tool, &runnable, width, style);
    }
    for c in &chosen {
        command_section(&mut t, &tool.name, m, c, width, style);
    }
    if let Some(auth) = &m.authentication {
        heading(&mut t, style, "AUTHENTICATION");
        t.push_str(&authentication(auth).render(width, style));
    }
    t
}

/// A section's title, bold, after a blank line.
fn heading(t: &mut String, style: Style, title: &str) {
    let _ = writeln!(t, "\n{}", style.paint(Some(Paint::Bold), title));
}

/// The page's head: name and version, description, then the facts of its entry (source,
/// trust, effects, path, homepage).
fn about_tool(t: &mut String, tool: &StoredTool, width: Option<usize>, style: Style) {
    let (m, e) = (&tool.metadata, &tool.entry);
    let mut title = term::one_line(&tool.name);
    if let Some(v) = m.tool_version() {
        title.push(' ');
        title.push_str(&term::one_line(v));
    }
    let _ = writeln!(t, "{}", style.paint(Some(Paint::Bold), &fit(&title, width)));
    t.push_str(&wrap(&m.description, width, 0));
    let mut facts = Table::new(None).indent(2).flex(1);
    let source = format!(
        "{} ({})",
        super::words::source_word(e.source),
        super::words::source_meaning(e.source)
    );
    facts.row(vec![Cell::new("source"), Cell::new(source)]);
    let verified = match m.trust.as_ref().and_then(|t| t.verified) {
        Some(true) => " (verified)",
        _ => " (not verified)",
    };
    facts.row(vec![
        Cell::new("trust"),
        Cell::new(format!("{}{verified}", term::one_line(&e.trust))),
    ]);
    facts.row(vec![
        Cell::new("effects"),
        Cell::painted(term::one_line(&e.effects), term::effects_paint(&e.effects)),
    ]);
    facts.row(vec![
        Cell::new("path"),
        Cell::new(term::one_line(&e.path.display().to_string())),
    ]);
    if let Some(h) = &m.homepage {
        facts.row(vec![Cell::new("homepage"), Cell::new(term::one_line(h))]);
    }
    t.push('\n');
    t.push_str(&facts.render(width, style));
}

/// A tool too large for one page: its commands one line each (usage and effects, the
/// description under it), the global options, and how to see one command in full.
fn commands_table(
    t: &mut String,
    tool: &StoredTool,
    runnable: &[&CommandEntry<'_>],
    width: Option<usize>,
    style: Style,
) {
    let m = &tool.metadata;
    let title = format!("COMMANDS ({})", term::count(runnable.len()));
    heading(t, style, &title);
    // Per command: its usage line and effects, then its description under it.
    let mut table = Table::new(None).indent(2).shrink(1, 16).shrink(0, 24);
    for c in runnable {
        let effects = m.effective_effects(c).summary();
        table.row(vec![
            Cell::painted(usage(&tool.name, m, c), Some(Paint::Bold)),
            Cell::painted(term::cut(&effects, 40), term::effects_paint(&effects)),
        ]);
    }
    let rows = table.render(width, style);
    for (c, line) in runnable.iter().zip(rows.lines()) {
        let _ = writeln!(t, "{line}");
        let about = format!("      {}", term::one_line(&c.command.description));
        let _ = writeln!(t, "{}", fit(about.trim_end(), width));
    }
    if !m.global_opts().is_empty() {
        heading(t, style, "GLOBAL OPTIONS");
        t.push_str(&options_table(m.global_opts(), width, style));
    }
    if let Some(first) = runnable.iter().find(|c| !c.path_string().is_empty()) {
        let example = format!(
            "One command in full: atip get {} --commands {}",
            shown(&tool.name),
            shown(&first.path_string())
        );
        let _ = writeln!(
            t,
            "\n{}",
            style.paint(Some(Paint::Dim), &fit(&example, width))
        );
    }
}

/// The tool's authentication: whether it is required, each method, the check command.
fn authentication(auth: &atip::model::Authentication) -> Table {
    let mut table = Table::new(None).indent(2).flex(1);
    let required = match auth.required {
        Some(true) => "yes",
        Some(false) => "no",
        None => "not stated",
    };
    table.row(vec![Cell::new("required"), Cell::new(required)]);
    for method in auth.methods.iter().flatten() {
        let mut what = term::one_line(&method.kind);
        if let Some(v) = &method.env_var {
            let _ = write!(what, " ${}", term::one_line(v));
        }
        if let Some(d) = &method.description {
            let _ = write!(what, ": {}", term::one_line(d));
        }
        table.row(vec![Cell::new("method"), Cell::new(what)]);
    }
    if let Some(check) = &auth.check_command {
        table.row(vec![Cell::new("check"), Cell::new(term::one_line(check))]);
    }
    table
}

/// One command in full: usage, description, arguments, options, effects.
fn command_section(
    t: &mut String,
    tool: &str,
    m: &Metadata,
    c: &CommandEntry<'_>,
    width: Option<usize>,
    style: Style,
) {
    let path = c.path_string();
    let title = if path.is_empty() {
        "USAGE".to_string()
    } else {
        format!("COMMAND {}", term::one_line(&path))
    };
    heading(t, style, &title);
    let _ = writeln!(t, "{}", fit(&format!("  {}", usage(tool, m, c)), width));
    if !path.is_empty() || c.command.description != m.description {
        t.push_str(&wrap(&c.command.description, width, 2));
    }
    if !c.command.args().is_empty() {
        heading(t, style, "ARGUMENTS");
        let mut table = Table::new(None).indent(2).flex(1);
        for a in c.command.args() {
            table.row(vec![
                Cell::new(arg_word(a)),
                Cell::new(with_default(
                    &a.description,
                    a.default.as_ref(),
                    a.values.as_deref(),
                )),
            ]);
        }
        t.push_str(&table.render(width, style));
    }
    let opts = m.options_in_scope(c);
    if !opts.is_empty() {
        heading(t, style, "OPTIONS");
        let owned: Vec<Opt> = opts.into_iter().cloned().collect();
        t.push_str(&options_table(&owned, width, style));
    }
    effects_section(t, m, c, width, style);
}

/// A command's effects: the summary, what it states besides, then the per-call
/// conditions (parameters whose value changes what the call may do).
fn effects_section(
    t: &mut String,
    m: &Metadata,
    c: &CommandEntry<'_>,
    width: Option<usize>,
    style: Style,
) {
    heading(t, style, "EFFECTS");
    let effects = m.effective_effects(c);
    let summary = effects.summary();
    let _ = writeln!(
        t,
        "  {}",
        style.paint(
            term::effects_paint(&summary),
            &fit(&summary, width.map(|w| w.saturating_sub(2)))
        )
    );
    for line in effect_words(&effects) {
        let _ = writeln!(t, "{}", fit(&format!("  {line}"), width));
    }
    let mut conditions = Table::new(None).indent(2).flex(1);
    let params = c
        .command
        .args()
        .iter()
        .map(|a| (arg_word(a), ParamGuard::from_extra(&a.extra)))
        .chain(
            m.options_in_scope(c)
                .into_iter()
                .map(|o| (flag_word(o), ParamGuard::from_extra(&o.extra))),
        );
    for (name, g) in params {
        if let Some(text) = condition(&g) {
            let paint = term::effects_paint(&text);
            conditions.row(vec![
                Cell::new(format!("with {}", term::one_line(&name))),
                Cell::painted(text, paint),
            ]);
        }
    }
    if !conditions.is_empty() {
        t.push_str(&conditions.render(width, style));
    }
}

/// What giving a parameter changes about a call, in words; `None` when nothing.
fn condition(g: &ParamGuard) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(fx) = &g.effects {
        let when = if g.effects_if.is_empty() {
            String::new()
        } else {
            format!(" (values {})", g.effects_if.join(", "))
        };
        parts.push(format!("{}{when}", fx.summary()));
    }
    if g.writes.is_some() {
        parts.push("writes the file it names (overwriting it is destructive)".into());
    }
    if g.runner || g.runner_unless.is_some() || !g.runner_if.is_empty() {
        parts.push("may run another program".into());
    }
    if g.invalid.is_some() {
        parts.push("malformed annotation: a call giving it is refused".into());
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// What an effects object states besides its summary, in words: files, resources,
/// interaction, cost and time.
fn effect_words(e: &Effects) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(fs) = &e.filesystem {
        let yes = |v: Option<bool>, w: &'static str| (v == Some(true)).then_some(w);
        let what: Vec<&str> = [
            yes(fs.read, "reads"),
            yes(fs.write, "writes"),
            yes(fs.delete, "deletes"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !what.is_empty() {
            let mut line = format!("files: {}", what.join(", "));
            if let Some(p) = &fs.paths {
                let _ = write!(line, " ({})", term::one_line(&p.join(", ")));
            }
            out.push(line);
        }
    }
    for (label, list) in [
        ("creates", &e.creates),
        ("modifies", &e.modifies),
        ("deletes", &e.deletes),
    ] {
        if let Some(l) = list.as_ref().filter(|l| !l.is_empty()) {
            out.push(format!("{label}: {}", term::one_line(&l.join(", "))));
        }
    }
    let said = |v: Option<bool>, yes: &str, no: &str| match v {
        Some(true) => Some(yes.to_string()),
        Some(false) => Some(no.to_string()),
        None => None,
    };
    let facts: Vec<String> = [
        said(e.network, "network", "no network"),
        said(e.idempotent, "safe to retry", "not safe to retry"),
        said(e.reversible, "reversible", "not reversible"),
        said(
            e.subprocess,
            "starts other programs",
            "starts no other programs",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !facts.is_empty() {
        out.push(facts.join(", "));
    }
    if e.interactive.as_ref().is_some_and(|i| i.needs_human()) {
        out.push("needs a person at a terminal (prompts, TTY or stdin)".into());
    }
    if let Some(c) = e.cost.as_ref().filter(|c| c.billable == Some(true)) {
        let est = c
            .estimate
            .as_deref()
            .map(term::one_line)
            .unwrap_or_default();
        out.push(format!("billable {est}").trim_end().to_string());
    }
    if let Some(typ) = e.duration.as_ref().and_then(|d| d.typical.as_ref()) {
        out.push(format!("takes {}", term::one_line(typ)));
    }
    out
}

/// `tool path [OPTIONS] <ARG> [ARG]...` for a command, with its required options.
fn usage(tool: &str, m: &Metadata, c: &CommandEntry<'_>) -> String {
    let mut words = vec![term::one_line(tool)];
    words.extend(
        c.path
            .iter()
            .filter(|p| !p.is_empty())
            .map(|p| term::one_line(p)),
    );
    let opts = m.options_in_scope(c);
    for o in opts.iter().filter(|o| o.is_required()) {
        words.push(flag_word(o));
    }
    if opts.iter().any(|o| !o.is_required()) {
        words.push("[OPTIONS]".into());
    }
    words.extend(c.command.args().iter().map(arg_word));
    words.join(" ")
}

/// An argument as usage shows it: `<FILE>` required, `[FILE]` optional, `...` repeated.
fn arg_word(a: &Argument) -> String {
    let name = term::one_line(&a.name).to_uppercase();
    let mut w = if a.is_required() {
        format!("<{name}>")
    } else {
        format!("[{name}]")
    };
    if a.is_variadic() {
        w.push_str("...");
    }
    w
}

/// An option's flags and value: `-o, --output <FILE>`.
fn flag_word(o: &Opt) -> String {
    let flags = term::one_line(&o.flags.join(", "));
    match &o.kind {
        ParamType::Boolean => flags,
        ParamType::Enum => format!("{flags} <VALUE>"),
        kind => format!("{flags} <{}>", kind.as_str().to_uppercase()),
    }
}

/// Options as a table: flags and value, then the description with default and values.
fn options_table(opts: &[Opt], width: Option<usize>, style: Style) -> String {
    let mut table = Table::new(None).indent(2).flex(1);
    for o in opts {
        let mut desc = with_default(&o.description, o.default.as_ref(), o.values.as_deref());
        if o.is_required() {
            desc = format!("(required) {desc}");
        }
        table.row(vec![
            Cell::painted(term::cut(&flag_word(o), 36), Some(Paint::Bold)),
            Cell::new(desc),
        ]);
    }
    table.render(width, style)
}

/// A parameter's description with `[values: a, b]` and `[default: x]` after it.
fn with_default(
    description: &str,
    default: Option<&serde_json::Value>,
    values: Option<&[serde_json::Value]>,
) -> String {
    let word = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => term::one_line(s),
        other => term::one_line(&other.to_string()),
    };
    let mut d = term::one_line(description);
    if let Some(vs) = values.filter(|v| !v.is_empty()) {
        let _ = write!(
            d,
            " [values: {}]",
            vs.iter().map(word).collect::<Vec<_>>().join(", ")
        );
    }
    if let Some(v) = default {
        let _ = write!(d, " [default: {}]", word(v));
    }
    d
}

/// A word as a shell would need it typed (quoted when it has spaces).
fn shown(word: &str) -> String {
    atip::output::text::shown_arg(word)
}

/// Prose wrapped at word boundaries to the width (a word longer than a line is cut),
/// each line indented; control characters escaped.
fn wrap(text: &str, width: Option<usize>, indent: usize) -> String {
    let mut out = String::new();
    for para in text.lines().filter(|l| !l.trim().is_empty()) {
        let para = term::one_line(para);
        let Some(w) = width else {
            let _ = writeln!(out, "{}{para}", " ".repeat(indent));
            continue;
        };
        let room = w.saturating_sub(indent).max(1);
        let mut line = String::new();
        for word in para.split(' ') {
            if !line.is_empty() && term::width(&line) + 1 + term::width(word) > room {
                let _ = writeln!(out, "{}{}", " ".repeat(indent), term::cut(&line, room));
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            let _ = writeln!(out, "{}{}", " ".repeat(indent), term::cut(&line, room));
        }
    }
    out
}
