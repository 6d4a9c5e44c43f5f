//! `atip list`: list the tools in the registry, as a table on a terminal or a JSON
//! array (see `spec/registry.md`). Read-only; never takes the writer lock.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::registry::{Index, Source, query};

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// List the tools in the registry.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only tools whose name matches this glob, e.g. `kube*` or `g?`.
    pub glob: Option<String>,
    /// Only tools whose metadata came from this source (repeatable).
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub source: Vec<SourceArg>,
}

/// `--source` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SourceArg {
    /// The tool's own `--agent` answer.
    Native,
    /// A user override from the config dir.
    Override,
    /// A content-addressed shim matching the binary's hash.
    ShimHash,
    /// A name-keyed shim.
    Shim,
    /// A metadata file installed beside the tool.
    Installed,
    /// Converted from an agent-CLI framework's manifest.
    Converted,
    /// A content-addressed shim from a remote registry (`registries.json`).
    Remote,
    /// Inferred from the installed man page.
    Inferred,
}

impl From<SourceArg> for Source {
    fn from(s: SourceArg) -> Source {
        match s {
            SourceArg::Native => Source::Native,
            SourceArg::Override => Source::Override,
            SourceArg::ShimHash => Source::ShimHash,
            SourceArg::Shim => Source::Shim,
            SourceArg::Installed => Source::Installed,
            SourceArg::Converted => Source::Converted,
            SourceArg::Remote => Source::Remote,
            SourceArg::Inferred => Source::Inferred,
        }
    }
}

fn source_name(s: Source) -> &'static str {
    match s {
        Source::Native => "native",
        Source::Override => "override",
        Source::ShimHash => "shim-hash",
        Source::Shim => "shim",
        Source::Installed => "installed",
        Source::Converted => "converted",
        Source::Remote => "remote",
        Source::Inferred => "inferred",
    }
}

/// Runs `atip list`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    use OutputFormat::{Json, Jsonl, Text};
    ctx.output.require("list", &[Text, Json, Jsonl])?;
    let index = Index::load(&ctx.dirs)?;
    let empty = Index::empty(String::new());
    let index_ref = index.as_ref().unwrap_or(&empty);
    let sources: Vec<Source> = args.source.iter().copied().map(Source::from).collect();
    let listed = query::filter(index_ref, args.glob.as_deref(), &sources).map_err(|e| {
        AtipError::new(
            ErrorCode::InvalidGlob,
            format!("invalid glob {:?}: {e}", args.glob.as_deref().unwrap_or("")),
        )
        .hint("use `*`, `?`, `[abc]` or `{a,b}`, e.g. `atip list 'kube*'`")
    })?;
    match &index {
        None => ctx.out.note(format_args!(
            "no registry at {} yet; run `atip scan` to find the ATIP tools on PATH",
            ctx.dirs.registry_file().display()
        )),
        Some(i) => ctx.out.info(format_args!(
            "{} of {} tools in {}",
            listed.len(),
            i.tools.len(),
            ctx.dirs.registry_file().display()
        )),
    }
    match ctx.output {
        Json => return ctx.out.json(&listed).map(|_| ExitStatus::Success),
        Jsonl => return ctx.out.json_lines(&listed).map(|_| ExitStatus::Success),
        _ => {}
    }
    if listed.is_empty() {
        if index.is_some() {
            ctx.out.note("no tools match");
        }
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<[String; 7]> = listed
        .iter()
        .map(|l| {
            let e = l.entry;
            [
                printable(l.name),
                printable(e.version.as_deref().unwrap_or("-")),
                source_name(e.source).into(),
                printable(&e.trust),
                e.commands.to_string(),
                printable(&e.effects),
                one_line(&e.description, 60),
            ]
        })
        .collect();
    let header = [
        "NAME",
        "VERSION",
        "SOURCE",
        "TRUST",
        "COMMANDS",
        "EFFECTS",
        "DESCRIPTION",
    ];
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == cells.len() {
                l.push_str(cell);
            } else {
                l.push_str(&format!("{cell:<w$}  "));
            }
        }
        text.push_str(l.trim_end());
        text.push('\n');
    };
    line(header.to_vec());
    for row in &rows {
        line(row.iter().map(String::as_str).collect());
    }
    ctx.out.text(&text)?;
    Ok(ExitStatus::Success)
}

/// `s` safe for a terminal: control characters (escape sequences a hostile tool
/// could put in its description, newlines) become `�`.
pub(crate) fn printable(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}

/// First line of `s`, cut to `max` characters with an ellipsis, made printable.
fn one_line(s: &str, max: usize) -> String {
    let first = printable(s.lines().next().unwrap_or_default());
    if first.chars().count() <= max {
        first.to_string()
    } else {
        let mut t: String = first.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}
