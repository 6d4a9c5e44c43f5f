//! `atip search`: rank the registry's commands for a query. Arguments and glue only; the
//! ranking is in `atip::search`.

use crate::Ctx;
use atip::compile::{self, Catalog, FlattenOptions, Format};
use atip::output::ExitStatus;
use atip::output::{AtipError, OutputFormat};
use atip::search::{SearchIndex, SearchOptions};
use std::path::PathBuf;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Find the registered commands that best match a query.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What the agent wants to do, e.g. "create pull request".
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Most results (default: `toolSearch.defaultLimit` in mcp.json, else 5).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Full schemas for this many of the best results (default:
    /// `toolSearch.defaultSchemas` in mcp.json, else 3).
    #[arg(long, value_name = "K")]
    pub schemas: Option<usize>,
    /// Schema form: a provider's tool definition instead of the plain JSON Schema.
    #[arg(long, value_enum)]
    pub format: Option<SchemaFormat>,
    /// Say why each result scored as it did.
    #[arg(long)]
    pub explain: bool,
    /// Cap on the JSON report (e.g. 256KiB); results past it are dropped and `truncated` is set.
    #[arg(long, default_value = "256KiB", value_name = "SIZE")]
    pub max_bytes: String,
    /// Only these registry tools (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Search this metadata file instead of the registry.
    #[arg(long, value_name = "METADATA.json", conflicts_with = "tools")]
    pub file: Option<PathBuf>,
    /// Also rank commands that need a human (TTY, prompts, password).
    #[arg(long)]
    pub include_interactive: bool,
    /// Leave out the tools of configured MCP servers.
    #[arg(long)]
    pub no_mcp: bool,
    /// Fetch every MCP tool list again, fresh ones too (lists missing from the cache or
    /// older than its TTL are always fetched, all servers at once, each bounded by its
    /// `timeoutMs`, else 5 s; a server that fails is named in the answer's `notes`, and
    /// its cached list, if any, used).
    #[arg(long, conflicts_with = "no_mcp")]
    pub mcp_refresh: bool,
}

/// `--format` values: the export formats that are JSON tool definitions.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum SchemaFormat {
    /// OpenAI Chat Completions tool.
    Openai,
    /// OpenAI tool with `strict: true`.
    OpenaiStrict,
    /// Anthropic Messages tool.
    Anthropic,
    /// Gemini function declaration.
    Gemini,
    /// MCP tool.
    Mcp,
}

impl From<SchemaFormat> for Format {
    fn from(f: SchemaFormat) -> Format {
        match f {
            SchemaFormat::Openai => Format::Openai,
            SchemaFormat::OpenaiStrict => Format::OpenaiStrict,
            SchemaFormat::Anthropic => Format::Anthropic,
            SchemaFormat::Gemini => Format::Gemini,
            SchemaFormat::Mcp => Format::Mcp,
        }
    }
}

/// Runs `atip search`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    use OutputFormat::{Json, Jsonl, Text};
    ctx.output.require("search", &[Text, Json, Jsonl])?;
    let max_bytes = atip::units::parse_size(&args.max_bytes)
        .map_err(|e| AtipError::usage(format!("--max-bytes {}: {e}", args.max_bytes)))?;
    let (mcp_tools, mcp_notes) = if args.no_mcp || args.file.is_some() || args.tools.is_some() {
        (Vec::new(), Vec::new())
    } else {
        super::mcp::cached_flat_tools(ctx, args.mcp_refresh)
    };
    let query = args.query.join(" ");
    let defaults = if args.limit.is_none() || args.schemas.is_none() {
        super::mcp::tool_search_defaults(ctx)
    } else {
        Default::default()
    };
    // On a terminal a result is one line: schemas only when asked for by number.
    let default_schemas = if ctx.output == Text {
        0
    } else {
        defaults.schemas
    };
    let opts = SearchOptions {
        limit: args.limit.unwrap_or(defaults.limit),
        schemas: args.schemas.unwrap_or(default_schemas),
        format: args.format.map(Format::from),
        explain: args.explain,
        max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
    };
    // The default selection (every registered command that needs no human, nothing
    // else) is indexed in the compiled catalog; anything else is compiled here.
    let default_selection = args.file.is_none()
        && args.tools.is_none()
        && !args.include_interactive
        && mcp_tools.is_empty();
    let offered = if default_selection {
        search_offered(ctx, &query, &opts)?
    } else {
        None
    };
    let mut report = match offered {
        Some(report) => report,
        None => {
            let mut report = search_registry(&args, ctx, mcp_tools, &query, &opts)?;
            if args.file.is_none() {
                withhold_denied(&mut report, ctx)?;
            }
            report
        }
    };
    // Said on stderr as they were found; named in the JSON answer too, MCP servers
    // first, then what the policy withheld.
    report.notes.splice(0..0, mcp_notes);
    match ctx.output {
        Json => ctx.out.json(&report)?,
        Jsonl => ctx.out.json_lines(&report.results)?,
        _ => ctx.out.text(&render_text(&report, ctx))?,
    }
    if report.results.is_empty() {
        ctx.out.note(format_args!("no command matches {query:?}"));
    }
    if report.truncated {
        ctx.out.note(format_args!(
            "output truncated at {max_bytes} bytes (--max-bytes)"
        ));
    }
    Ok(if report.results.is_empty() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Drops the registry commands the policy denies whatever their arguments (its `tools`,
/// `commands` and `programs` lists: `Policy::withholds`), so a model is never offered
/// what it may not call; `--verbose` says how many.
fn withhold_denied(report: &mut atip::search::SearchReport, ctx: &Ctx) -> Result<(), AtipError> {
    let cwd = std::env::current_dir().map_err(|e| AtipError::usage(e.to_string()))?;
    let policy = atip::exec::policy::Policy::load(None, &ctx.dirs.config, &cwd)?;
    let index = atip::registry::Index::load(&ctx.dirs).ok().flatten();
    let before = report.results.len();
    report.results.retain(|r| {
        if r.server.is_some() {
            return true;
        }
        let program = index
            .as_ref()
            .and_then(|i| i.tools.get(&r.tool))
            .map(|e| e.path.clone())
            .unwrap_or_default();
        let path = std::iter::once(r.tool.as_str())
            .chain(
                r.command
                    .iter()
                    .map(String::as_str)
                    .filter(|c| !c.is_empty()),
            )
            .collect::<Vec<_>>()
            .join(" ");
        policy
            .withholds(&r.tool, &r.name, &path, &program)
            .is_empty()
    });
    let withheld = before - report.results.len();
    if withheld > 0 {
        let note = format!(
            "{withheld} result(s) withheld: the policy denies them (tools, commands or programs lists)"
        );
        ctx.out.info(&note);
        report.notes.push(note);
    }
    Ok(())
}

/// The default selection (every registered command that needs no human, inferred ones
/// included) searched exactly as `atip mcp serve`'s search tool searches it: one engine
/// over the compiled catalog's index, reading only the hits, leaving out what the policy
/// denies outright (any rule, as `atip exec` would refuse it) and what no longer
/// verifies, the next hits taking their places. `None` when the catalog cannot be read
/// lazily (or there is no registry): the caller compiles the registry instead.
fn search_offered(
    ctx: &Ctx,
    query: &str,
    opts: &SearchOptions,
) -> Result<Option<atip::search::SearchReport>, AtipError> {
    let cwd = std::env::current_dir().map_err(|e| AtipError::usage(e.to_string()))?;
    let policy = atip::exec::policy::Policy::load(None, &ctx.dirs.config, &cwd)?;
    let settings = atip::exec::Settings {
        include_inferred: true,
        env: ctx.env.clone(),
        ..Default::default()
    };
    let Ok(engine) = atip::exec::Engine::load(&ctx.dirs, policy, settings, None, None) else {
        return Ok(None);
    };
    let Some(found) = engine.search_offered(query, opts.limit, opts.explain) else {
        return Ok(None);
    };
    for n in &engine.compiled_notes {
        ctx.out.info(n);
    }
    for n in &engine.notes {
        ctx.out.note(n);
    }
    ctx.out.warnings(engine.catalog_warnings());
    let found = match found {
        Ok(found) => found,
        Err(e) => {
            ctx.out.note(format_args!(
                "{}; searching registry.json instead",
                e.message
            ));
            return Ok(None);
        }
    };
    for why in &found.unreadable {
        ctx.out.warn(format_args!(
            "left out of the results: {why}; `atip scan` writes it again"
        ));
    }
    // Never dropped silently: the answer names what the policy kept out of it.
    let withheld = (!found.withheld.is_empty()).then(|| {
        format!(
            "{} result(s) withheld: the policy denies them outright ({})",
            found.withheld.len(),
            found.withheld.join(", ")
        )
    });
    if let Some(note) = &withheld {
        ctx.out.info(note);
    }
    let (tools, hits): (Vec<_>, Vec<_>) = found
        .hits
        .into_iter()
        .enumerate()
        .map(|(i, (t, mut h))| {
            h.doc = i;
            (t, h)
        })
        .unzip();
    let mut report = atip::search::report(query, hits, opts, |doc| (tools[doc], None));
    report.notes.extend(withheld);
    Ok(Some(report))
}

/// Reads and compiles the selection (a file, chosen tools, interactive commands, MCP
/// tools) and searches it.
fn search_registry(
    args: &Args,
    ctx: &Ctx,
    mcp_tools: Vec<(String, atip::compile::FlatTool)>,
    query: &str,
    opts: &SearchOptions,
) -> Result<atip::search::SearchReport, AtipError> {
    let metas = match &args.file {
        Some(path) => vec![compile::source::load_file(path)?],
        None => match compile::source::load_registry(&ctx.dirs, args.tools.as_deref()) {
            Ok(loaded) => {
                ctx.out.warnings(&loaded.warnings);
                loaded.metas
            }
            // MCP tools alone are worth searching before any scan.
            Err(e)
                if e.code == atip::output::ErrorCode::RegistryNotFound && !mcp_tools.is_empty() =>
            {
                Vec::new()
            }
            Err(e) => return Err(e),
        },
    };
    let mut catalog = Catalog::build(
        &metas,
        &FlattenOptions {
            include_interactive: args.include_interactive,
            commands: None,
        },
    );
    for (server, tool) in mcp_tools {
        let name = tool.name.clone();
        if !catalog.push_external(tool, &server) {
            ctx.out.warn(format_args!(
                "MCP tool {name} left out: a command already has that name"
            ));
        }
    }
    // A file is not the machine: its tools are ranked on their text alone.
    let index = if args.file.is_some() {
        SearchIndex::build(catalog.tools())
    } else {
        SearchIndex::build_with(catalog.tools(), &atip::catalog::machine_facts(&ctx.dirs))
    };
    Ok(atip::search::search(&catalog, &index, query, opts))
}

/// The results, one line each, fitting the terminal: tool-call name, command,
/// description (with the aliases it stands for) and its effects in the words `list` and
/// `get` use; then reasons and schemas when asked for.
fn render_text(report: &atip::search::SearchReport, ctx: &Ctx) -> String {
    use atip::output::term::Style;
    use std::fmt::Write;
    let style = Style::new(ctx.out.stdout_color());
    render_results(report, ctx.width, style)
        .into_iter()
        .fold(String::new(), |mut t, l| {
            let _ = writeln!(t, "{l}");
            t
        })
}

/// The lines of [`render_text`].
pub(crate) fn render_results(
    report: &atip::search::SearchReport,
    width: Option<usize>,
    style: atip::output::term::Style,
) -> Vec<String> {
    use atip::output::term::{self, Cell, Paint, Table};
    // Below 100 columns the command (which the tool-call name spells too) gives its
    // room to the description; the description gives way first, then the effects.
    let with_command = width.is_none_or(|w| w >= 100);
    let (desc, fx) = if with_command { (2, 3) } else { (1, 2) };
    let mut table = Table::new(None)
        .shrink(desc, 30)
        .shrink(fx, 14)
        .shrink(desc, 12);
    for r in &report.results {
        let title = std::iter::once(r.tool.as_str())
            .chain(
                r.command
                    .iter()
                    .map(String::as_str)
                    .filter(|s| !s.is_empty()),
            )
            .collect::<Vec<_>>()
            .join(" ");
        let title = match &r.server {
            Some(s) => format!("{title} (MCP server {s})"),
            None => title,
        };
        let (text, effects) = split_safety(&r.description);
        let mut description = term::one_line(text);
        if !r.aliases.is_empty() {
            description.push_str(&format!(" (also {})", r.aliases.join(", ")));
        }
        let mut cells = vec![Cell::painted(term::one_line(&r.name), Some(Paint::Bold))];
        if with_command {
            cells.push(Cell::new(term::one_line(&title)));
        }
        cells.extend([
            Cell::new(description),
            Cell::painted(effects.clone(), term::effects_paint(&effects)),
        ]);
        table.row(cells);
    }
    let rows = table.render(width, style);
    let fit = |l: String| match width {
        Some(w) => term::cut(&l, w),
        None => l,
    };
    let mut out = Vec::new();
    for (r, line) in report.results.iter().zip(rows.lines()) {
        out.push(line.to_string());
        for w in &r.why {
            out.push(fit(format!("    why: {w} (score {:.2})", r.score)));
        }
        if let Some(s) = &r.schema {
            out.push(format!("    schema: {s}"));
            if r.omitted_options > 0 {
                out.push(fit(format!(
                    "    ({} more options: atip get {})",
                    r.omitted_options, r.tool
                )));
            }
        }
    }
    out
}

/// A description without the safety suffix export gives it (`[READ-ONLY]`,
/// `[⚠️ DESTRUCTIVE | ⚠️ NOT REVERSIBLE]`), and the suffix in the words `list` uses;
/// `unknown` when there is none (nothing says the command is safe).
fn split_safety(description: &str) -> (&str, String) {
    let d = description.trim_end();
    if let Some(open) = d.rfind(" [").filter(|_| d.ends_with(']')) {
        let inner = &d[open + 2..d.len() - 1];
        let words: Vec<String> = inner
            .split(" | ")
            .map(|f| {
                f.trim_start_matches(|c: char| !c.is_ascii_alphabetic())
                    .to_lowercase()
            })
            .collect();
        let known = [
            "read-only",
            "destructive",
            "not reversible",
            "not idempotent",
            "billable",
            "interactive",
        ];
        if !words.is_empty() && words.iter().all(|w| known.contains(&w.as_str())) {
            return (&d[..open], words.join(", "));
        }
    }
    (d, "unknown".to_string())
}
