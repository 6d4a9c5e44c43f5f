//! `atip list`: list the tools in the registry, as a table fitting the terminal or a
//! JSON array (see `spec/registry.md`, `spec/cli.md`). Read-only; never takes the
//! writer lock.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, ErrorCode, OutputFormat, Verbosity};
use atip::registry::{Entry, Index, Source, query};

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// List the tools in the registry.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only tools whose name matches this glob, e.g. `kube*` or `g?`.
    pub glob: Option<String>,
    /// Only tools whose metadata came from this source (repeatable).
    #[arg(long, value_enum, value_name = "SOURCE")]
    pub source: Vec<SourceArg>,
    /// Only tools whose metadata has this trust (repeatable).
    #[arg(long, value_enum, value_name = "TRUST")]
    pub trust: Vec<TrustArg>,
    /// Only tools whose commands are all read-only, those with a destructive command, or
    /// those whose metadata states no effects at all (repeatable).
    #[arg(long, value_enum, value_name = "EFFECTS")]
    pub effects: Vec<EffectsArg>,
}

/// `--trust` values: the trust recorded in the registry (`spec/registry.md`).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TrustArg {
    /// The tool's own answer.
    Native,
    /// The tool's vendor.
    Vendor,
    /// Your organisation.
    Org,
    /// A community shim (the ones built into atip).
    Community,
    /// Written by you.
    User,
    /// Guessed from a man page.
    Inferred,
}

impl TrustArg {
    fn as_str(self) -> &'static str {
        match self {
            TrustArg::Native => "native",
            TrustArg::Vendor => "vendor",
            TrustArg::Org => "org",
            TrustArg::Community => "community",
            TrustArg::User => "user",
            TrustArg::Inferred => "inferred",
        }
    }
}

/// `--effects` values, judged on the registry's effects summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EffectsArg {
    /// Every command is read-only.
    ReadOnly,
    /// Some command destroys or deletes something.
    Destructive,
    /// The metadata states no effects (nothing is assumed safe).
    Unknown,
}

impl EffectsArg {
    /// Whether an entry's effects summary (`Metadata::effects_summary`) is of this kind.
    fn matches(self, summary: &str) -> bool {
        match self {
            EffectsArg::ReadOnly => summary == "read-only",
            EffectsArg::Destructive => {
                summary.contains("destructive") || summary.contains("deletes")
            }
            EffectsArg::Unknown => summary == "unknown",
        }
    }
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

/// Runs `atip list`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    use OutputFormat::{Json, Jsonl, Text};
    ctx.output.require("list", &[Text, Json, Jsonl])?;
    let index = Index::load(&ctx.dirs)?;
    let empty = Index::empty(String::new());
    let index_ref = index.as_ref().unwrap_or(&empty);
    let sources: Vec<Source> = args.source.iter().copied().map(Source::from).collect();
    let mut listed = query::filter(index_ref, args.glob.as_deref(), &sources).map_err(|e| {
        AtipError::new(
            ErrorCode::InvalidGlob,
            format!("invalid glob {:?}: {e}", args.glob.as_deref().unwrap_or("")),
        )
        .hint("use `*`, `?`, `[abc]` or `{a,b}`, e.g. `atip list 'kube*'`")
    })?;
    listed.retain(|l| {
        (args.trust.is_empty() || args.trust.iter().any(|t| t.as_str() == l.entry.trust))
            && (args.effects.is_empty() || args.effects.iter().any(|e| e.matches(&l.entry.effects)))
    });
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
    let Some(index) = &index else {
        return Ok(ExitStatus::Success);
    };
    if listed.is_empty() {
        ctx.out.note("no tools match");
        return Ok(ExitStatus::Success);
    }
    let rows: Vec<(&str, &Entry)> = listed.iter().map(|l| (l.name, l.entry)).collect();
    let text = render(
        &rows,
        index.tools.len(),
        ctx.out.verbosity() == Verbosity::Verbose,
        ctx.width,
        Style::new(ctx.out.stdout_color()),
    );
    ctx.out.text(&text)?;
    Ok(ExitStatus::Success)
}

/// The table and its count line. Names, versions and effects are capped so that the
/// description keeps some room at 80 columns; `verbose` adds the command count and the
/// executable's path (last).
pub(crate) fn render(
    rows: &[(&str, &Entry)],
    total: usize,
    verbose: bool,
    width: Option<usize>,
    style: Style,
) -> String {
    let cap = |s: &str, max: usize| match width {
        Some(_) => term::cut(&term::one_line(s), max),
        None => term::one_line(s),
    };
    // Below 100 columns the version gives its room to the description.
    let with_version = verbose || width.is_none_or(|w| w >= 100);
    let mut header = vec!["NAME"];
    if with_version {
        header.push("VERSION");
    }
    header.extend(["SOURCE", "TRUST", "EFFECTS"]);
    if verbose {
        header.push("COMMANDS");
    }
    header.push("DESCRIPTION");
    let last = header.len() - 1;
    // The path goes last: paths differ in length, and a cut one still says where.
    if verbose {
        header.push("PATH");
    }
    let effects_col = header.iter().position(|h| *h == "EFFECTS").unwrap_or(0);
    let mut table = Table::new(Some(&header))
        .shrink(last, 24)
        .shrink(effects_col, 16)
        .shrink(0, 14)
        .shrink(last, 12);
    for (name, e) in rows {
        let trust_paint = (e.trust == "inferred").then_some(Paint::Yellow);
        let mut cells = vec![Cell::painted(cap(name, 28), Some(Paint::Bold))];
        if with_version {
            cells.push(Cell::new(cap(e.version.as_deref().unwrap_or("-"), 12)));
        }
        cells.extend([
            Cell::new(super::words::source_word(e.source)),
            Cell::painted(cap(&e.trust, 10), trust_paint),
            Cell::painted(cap(&e.effects, 36), term::effects_paint(&e.effects)),
        ]);
        if verbose {
            cells.push(Cell::new(e.commands.to_string()));
        }
        cells.push(Cell::new(term::one_line(&e.description)));
        if verbose {
            cells.push(Cell::painted(
                term::one_line(&e.path.display().to_string()),
                Some(Paint::Dim),
            ));
        }
        table.row(cells);
    }
    let mut text = table.render(width, style);
    let count = if rows.len() == total {
        term::plural(total, "tool", "tools")
    } else {
        format!(
            "{} of {}",
            term::count(rows.len()),
            term::plural(total, "tool", "tools")
        )
    };
    let count = width.map_or(count.clone(), |w| term::cut(&count, w));
    text.push_str(&style.paint(Some(Paint::Dim), &count));
    text.push('\n');
    text
}
