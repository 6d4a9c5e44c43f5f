//! `atip export`: registry tools (or one metadata file) as OpenAI, Anthropic, Gemini or
//! MCP tool definitions, SKILL.md files or a prompt fragment. Arguments and glue only;
//! the work is in `atip::compile`.

use crate::Ctx;
use atip::atomic;
use atip::catalog::{kept, rendered};
use atip::compile::{
    self, Catalog, ExportOptions, ExportSummary, Exporter, FlattenOptions, Format, Strategy,
};
use atip::model::Metadata;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, Printer};
use atip::registry::{Entry, RegistryError};
use rayon::prelude::*;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Export registry tools as provider tool definitions.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum)]
    pub format: Format,
    /// Only these registry tools (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Only these commands: comma-separated "tool path" prefixes, e.g. "gh pr,git log".
    #[arg(long, value_delimiter = ',', value_name = "FILTERS")]
    pub commands: Option<Vec<String>>,
    /// One tool per command (flat) or per command group with an `action` enum (grouped).
    #[arg(long, value_enum, default_value = "flat")]
    pub strategy: Strategy,
    /// Export this metadata file instead of the registry (`-` reads stdin).
    #[arg(long, value_name = "METADATA.json", conflicts_with = "tools")]
    pub file: Option<PathBuf>,
    /// Write to FILE (JSON formats, prompt) or DIR (skill: DIR/<tool>/SKILL.md) instead of stdout.
    #[arg(short = 'o', long = "out", value_name = "FILE|DIR")]
    pub out: Option<PathBuf>,
    /// Keep commands that need a human (TTY, prompts, password); they are marked INTERACTIVE.
    #[arg(long)]
    pub include_interactive: bool,
    /// Also export the tools inferred from man pages when no tool is named (left out by
    /// default, so that a model is not handed a thousand schemas at once).
    #[arg(long)]
    pub include_inferred: bool,
    /// Check the output against the format's rules (OpenAI strict mode for openai-strict); exit 1 on a violation.
    #[arg(long)]
    pub check: bool,
    /// Also export the tools of configured MCP servers (cached lists; JSON formats), as
    /// `mcp__SERVER__TOOL`, after the registry's.
    #[arg(long)]
    pub mcp: bool,
}

/// Documents read in parallel per batch, then compiled and written in order.
const BATCH: usize = 16;

/// Runs `atip export`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let commands = args.commands.clone().map(|c| {
        c.into_iter()
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect::<Vec<_>>()
    });
    let docs = select(&args, commands.as_deref(), ctx)?;
    let (docs, filtered_by_policy) = if args.file.is_none() {
        withhold_denied(docs, ctx)?
    } else {
        (docs, false)
    };
    check_combination(&args, &docs)?;
    let opts = ExportOptions {
        format: args.format,
        strategy: args.strategy,
        flatten: FlattenOptions {
            include_interactive: args.include_interactive,
            commands,
        },
    };
    let mut sink = Sink::open(args.out.as_deref(), args.format)?;
    // The whole registry in a JSON format: the same bytes as the last identical export
    // when the registry has not changed since (see `atip::catalog::kept`).
    // An export the policy filtered is not kept or replayed (the kept key knows the
    // registry, not the policy).
    let kept =
        kept_key(&args, ctx, opts.flatten.commands.is_some()).filter(|_| !filtered_by_policy);
    if let Some(key) = &kept
        && let Some((file, len, report)) = kept::find(&ctx.dirs, key)
    {
        return copy_kept(&args, ctx, sink, file, len, report);
    }
    let (writer, keeper): (Box<dyn Write>, _) = match &kept {
        Some(key) => {
            let (recorder, keeper) = kept::Recorder::new(&ctx.dirs, key, sink.writer(&ctx.out)?);
            (Box::new(recorder), Some(keeper))
        }
        None => (sink.writer(&ctx.out)?, None),
    };
    let mut exporter = Exporter::new(opts, writer, args.check).map_err(|e| sink.fail(e))?;
    let mut warnings = Vec::new();
    // Whole-registry flat JSON exports keep each document's rendering, so that after a
    // registry change only the changed documents are rendered again.
    let store = kept
        .as_ref()
        .filter(|_| exporter.reuses_rendered())
        .map(|k| rendered::Store::open(&ctx.dirs, &k.options));
    let skills = compile_all(&mut exporter, docs, ctx, store.as_ref(), &mut warnings)
        .map_err(|e| sink.fail(e))?;
    if args.mcp {
        add_mcp_tools(&mut exporter, ctx).map_err(|e| sink.fail(e))?;
    }
    let summary = exporter.finish().map_err(|e| sink.fail(e))?;
    if let (Some(keeper), Some(key)) = (keeper, &kept) {
        keep(keeper, key, warnings, &summary, ctx);
    }
    if args.format == Format::Skill {
        write_skills(args.out.as_deref(), &skills, ctx)?;
    }
    sink.commit()?;
    report(&args, ctx, &summary)
}

/// An identical earlier export's bytes (see [`kept_key`]), and its report replayed.
fn copy_kept(
    args: &Args,
    ctx: &Ctx,
    mut sink: Sink,
    file: std::fs::File,
    len: u64,
    kept: kept::Report,
) -> Result<ExitStatus, AtipError> {
    let mut out = sink.writer(&ctx.out)?;
    kept::copy(file, len, &mut out)
        .and_then(|()| out.flush())
        .map_err(|e| sink.fail(e))?;
    drop(out);
    for w in &kept.warnings {
        ctx.out.warn(w);
    }
    sink.commit()?;
    let summary = ExportSummary {
        tools: kept.tools,
        skipped: kept.skipped,
        ..ExportSummary::default()
    };
    report(args, ctx, &summary)
}

/// Keeps this export's bytes for the next identical one, only when registry.json is
/// still the one the key was taken from (a registry changed during the export may have
/// given some documents of each).
fn keep(
    keeper: kept::Keeper,
    key: &kept::Key,
    warnings: Vec<String>,
    summary: &ExportSummary,
    ctx: &Ctx,
) {
    let unchanged = std::fs::read(ctx.dirs.registry_file())
        .is_ok_and(|b| atip::catalog::registry_key(&b) == key.registry);
    if unchanged {
        let report = kept::Report {
            warnings,
            skipped: summary.skipped.clone(),
            tools: summary.tools,
        };
        keeper.keep(&ctx.dirs, key, report);
    }
}

/// The documents an export compiles.
enum Documents {
    /// Read up front: a `--file`, or a `--tools`/`--commands` selection.
    Loaded(Vec<Metadata>),
    /// The whole registry, streamed in batches (see [`compile_all`]).
    Registry(Vec<(String, Entry)>),
}

impl Documents {
    fn len(&self) -> usize {
        match self {
            Documents::Loaded(docs) => docs.len(),
            Documents::Registry(entries) => entries.len(),
        }
    }
}

/// Picks the documents. With a file, a tool list or command filters they are few: they
/// are read first, so a bad filter fails before any output. Otherwise the whole
/// registry is streamed (without the inferred tools unless `--include-inferred`).
fn select(args: &Args, commands: Option<&[String]>, ctx: &Ctx) -> Result<Documents, AtipError> {
    let docs = if let Some(path) = &args.file {
        vec![compile::source::load_file(path)?]
    } else {
        let only = compile::source::selected_tools(&ctx.dirs, args.tools.as_deref(), commands)?;
        if only.is_none() {
            let mut entries = compile::source::registry_entries(&ctx.dirs, None)?;
            if !args.include_inferred {
                let all: Vec<String> = entries.iter().map(|(n, _)| n.clone()).collect();
                compile::source::drop_inferred(&mut entries);
                note_inferred(&all, &entries, ctx);
            }
            return Ok(Documents::Registry(entries));
        }
        compile::source::load_registry(&ctx.dirs, only.as_deref())?.metas
    };
    if let Some(filters) = commands {
        let catalog = Catalog::build(
            &docs,
            &FlattenOptions {
                include_interactive: true,
                commands: Some(filters.to_vec()),
            },
        );
        check_filters_match(filters, catalog.tools())?;
    }
    Ok(Documents::Loaded(docs))
}

/// Says which inferred tools a whole-registry export left out, so a missing tool is
/// never a silent surprise (their metadata is a guess from man pages or `--help`).
fn note_inferred(all: &[String], kept: &[(String, atip::registry::Entry)], ctx: &Ctx) {
    let kept: std::collections::HashSet<&str> = kept.iter().map(|(n, _)| n.as_str()).collect();
    let left: Vec<&str> = all
        .iter()
        .map(String::as_str)
        .filter(|n| !kept.contains(n))
        .collect();
    if left.is_empty() {
        return;
    }
    const SHOWN: usize = 10;
    let more = left.len().saturating_sub(SHOWN);
    ctx.out.note(format_args!(
        "left out {} tool{} inferred from man pages or --help (metadata guessed, not stated): {}{}; --include-inferred exports them too",
        left.len(),
        if left.len() == 1 { "" } else { "s" },
        left[..left.len().min(SHOWN)].join(", "),
        if more > 0 { format!(" and {more} more") } else { String::new() }
    ));
}

/// Leaves out the tools the policy denies whatever the call (its `tools` and `programs`
/// lists: `Policy::withholds`), so an export never offers a model what it may not call;
/// `--verbose` says how many. Returns whether the policy has such lists at all.
fn withhold_denied(docs: Documents, ctx: &Ctx) -> Result<(Documents, bool), AtipError> {
    let cwd = std::env::current_dir().map_err(|e| AtipError::usage(e.to_string()))?;
    let policy = atip::exec::policy::Policy::load(None, &ctx.dirs.config, &cwd)?;
    let f = &policy.file;
    if [&f.tools, &f.programs]
        .iter()
        .all(|l| l.allow.is_empty() && l.deny.is_empty())
    {
        return Ok((docs, false));
    }
    let denied = |name: &str, program: &Path| {
        policy
            .withholds(name, name, name, program)
            .iter()
            .any(|r| r.starts_with("tools.") || r.starts_with("programs."))
    };
    let before = docs.len();
    let docs = match docs {
        Documents::Registry(mut entries) => {
            entries.retain(|(name, e)| !denied(name, &e.path));
            Documents::Registry(entries)
        }
        Documents::Loaded(mut metas) => {
            let index = atip::registry::Index::load(&ctx.dirs).ok().flatten();
            metas.retain(|m| {
                let name = m.tool_name().unwrap_or_default();
                let program = index
                    .as_ref()
                    .and_then(|i| i.tools.get(name))
                    .map(|e| e.path.clone())
                    .unwrap_or_default();
                !denied(name, &program)
            });
            Documents::Loaded(metas)
        }
    };
    let withheld = before - docs.len();
    if withheld > 0 {
        ctx.out.info(format_args!(
            "{withheld} tool(s) withheld: the policy denies them (tools or programs lists)"
        ));
    }
    Ok((docs, true))
}

/// Options that do not fit together: `--mcp` outside the JSON formats, several SKILL.md
/// files without a directory to hold them.
fn check_combination(args: &Args, docs: &Documents) -> Result<(), AtipError> {
    if args.mcp && !args.format.is_json() {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "--mcp works with the JSON formats (openai, openai-strict, anthropic, gemini, mcp)",
        ));
    }
    if args.format == Format::Skill && args.out.is_none() {
        let n = docs.len();
        if n > 1 {
            return Err(AtipError::new(ErrorCode::OutputDirNeeded, format!("{n} tools give {n} SKILL.md files"))
                .hint("give a directory with -o DIR (one DIR/<tool>/SKILL.md each), or pick one tool with --tools"));
        }
    }
    Ok(())
}

/// Compiles every document in order, [`BATCH`] at a time (registry documents are read
/// in parallel per batch; an unreadable one is a warning, not the end of the export, and
/// is added to `warnings` too).
/// Returns the rendered SKILL.md files, by tool.
fn compile_all<W: Write>(
    exporter: &mut Exporter<W>,
    docs: Documents,
    ctx: &Ctx,
    store: Option<&rendered::Store>,
    warnings: &mut Vec<String>,
) -> std::io::Result<Vec<(String, String)>> {
    let mut skills = Vec::new();
    match docs {
        Documents::Loaded(docs) => {
            for batch in docs.chunks(BATCH) {
                skills.extend(exporter.add_batch(batch)?);
            }
        }
        Documents::Registry(entries) => match store {
            Some(store) => {
                let mut used = std::collections::HashSet::new();
                for batch in entries.chunks(BATCH) {
                    add_reusing(exporter, batch, ctx, store, warnings, &mut used)?;
                }
                store.prune(&used);
            }
            None => {
                for batch in entries.chunks(BATCH) {
                    let read: Vec<Result<Metadata, RegistryError>> = batch
                        .par_iter()
                        .map(|(name, entry)| compile::source::read_entry(&ctx.dirs, name, entry))
                        .collect();
                    let mut metas = Vec::with_capacity(batch.len());
                    for ((name, _), r) in batch.iter().zip(read) {
                        match r {
                            Ok(meta) => metas.push(meta),
                            Err(e) => skip(ctx, warnings, name, &e),
                        }
                    }
                    skills.extend(exporter.add_batch(&metas)?);
                }
            }
        },
    }
    Ok(skills)
}

/// Adds a batch of registry documents in order, each from its kept rendering when there
/// is one whose names are free, else read, rendered (consecutive ones in parallel) and
/// its rendering kept. Adds the sha256 of every document it used or kept to `used`.
fn add_reusing<W: Write>(
    exporter: &mut Exporter<W>,
    batch: &[(String, Entry)],
    ctx: &Ctx,
    store: &rendered::Store,
    warnings: &mut Vec<String>,
    used: &mut std::collections::HashSet<String>,
) -> std::io::Result<()> {
    let kept: Vec<Option<compile::RenderedDoc>> = batch
        .par_iter()
        .map(|(_, e)| e.metadata_hex().and_then(|sha| store.load(sha)))
        .collect();
    let mut read: Vec<Option<Result<Metadata, RegistryError>>> = batch
        .par_iter()
        .zip(&kept)
        .map(|((name, entry), k)| {
            k.is_none()
                .then(|| compile::source::read_entry(&ctx.dirs, name, entry))
        })
        .collect();
    // Documents to render, in order, with their sha256: rendered together when a kept
    // rendering (or the batch's end) comes.
    let mut run: Vec<(Option<&str>, Metadata)> = Vec::new();
    let flush = |exporter: &mut Exporter<W>, run: &mut Vec<(Option<&str>, Metadata)>| {
        if run.is_empty() {
            return Ok(());
        }
        let (shas, metas): (Vec<Option<&str>>, Vec<Metadata>) = run.drain(..).unzip();
        let rendered = exporter.add_batch_rendered(&metas)?;
        shas.into_par_iter().zip(rendered).for_each(|(sha, r)| {
            if let (Some(sha), Some(r)) = (sha, r) {
                store.save(sha, &r);
            }
        });
        std::io::Result::Ok(())
    };
    for (i, (name, entry)) in batch.iter().enumerate() {
        let sha = entry.metadata_hex();
        if let Some(sha) = sha {
            used.insert(sha.to_owned());
        }
        let result = match &kept[i] {
            Some(doc) => {
                flush(exporter, &mut run)?;
                if exporter.add_rendered(doc)? {
                    continue;
                }
                // A name it claims is taken by an earlier document: rendered as it falls.
                compile::source::read_entry(&ctx.dirs, name, entry)
            }
            None => read[i].take().expect("read when not kept"),
        };
        match result {
            Ok(meta) => run.push((sha, meta)),
            Err(e) => skip(ctx, warnings, name, &e),
        }
    }
    flush(exporter, &mut run)
}

/// An unreadable document: a warning now, and in the kept export's report.
fn skip(ctx: &Ctx, warnings: &mut Vec<String>, name: &str, why: &RegistryError) {
    let w = format!("skipped {name}: {why}");
    ctx.out.warn(&w);
    warnings.push(w);
}

/// `--mcp`: the configured MCP servers' cached tools, after the registry's; a name a
/// command already has is left out with a warning.
fn add_mcp_tools<W: Write>(exporter: &mut Exporter<W>, ctx: &Ctx) -> std::io::Result<()> {
    let tools = super::mcp::cached_flat_tools(ctx, false)
        .0
        .into_iter()
        .map(|(_, t)| t)
        .collect();
    for name in exporter.add_external(tools)? {
        ctx.out.warn(format_args!(
            "MCP tool {name} left out: a command already has that name"
        ));
    }
    Ok(())
}

/// SKILL.md files: `DIR/<tool>/SKILL.md` each with `-o DIR`, else the one file on stdout.
fn write_skills(
    dir: Option<&Path>,
    skills: &[(String, String)],
    ctx: &Ctx,
) -> Result<(), AtipError> {
    match dir {
        Some(dir) => {
            for (name, text) in skills {
                write_file(&dir.join(name).join("SKILL.md"), &format!("{text}\n"))?;
            }
            // On a terminal: what went where (see `report`).
            if ctx.output == atip::output::OutputFormat::Text {
                use atip::output::term;
                ctx.out.text(&term::wrap_whole(
                    "",
                    &format!(
                        "Wrote {} to {}",
                        term::plural(skills.len(), "SKILL.md file", "SKILL.md files"),
                        dir.display()
                    ),
                    ctx.width,
                    2,
                ))?;
            }
        }
        None => {
            if let Some((_, text)) = skills.first() {
                ctx.out.text(&format!("{text}\n"))?;
            }
        }
    }
    Ok(())
}

fn report(args: &Args, ctx: &Ctx, summary: &ExportSummary) -> Result<ExitStatus, AtipError> {
    // Written to a file or directory, on a terminal: say what went where (stdout carries
    // no data then; piped, it stays empty).
    if ctx.output == atip::output::OutputFormat::Text
        && args.format != Format::Skill
        && let Some(out) = args.out.as_deref().filter(|p| *p != Path::new("-"))
    {
        use atip::output::term;
        let format = clap::ValueEnum::to_possible_value(&args.format)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        let what = term::plural(summary.tools, "tool definition", "tool definitions");
        ctx.out.text(&term::wrap_whole(
            "",
            &format!("Wrote {what} ({format}) to {}", out.display()),
            ctx.width,
            2,
        ))?;
    }
    if !summary.skipped.is_empty() {
        ctx.out.note(format_args!(
            "left out {} interactive command{} an agent cannot drive (TTY, prompts or password): {}; --include-interactive keeps them",
            summary.skipped.len(),
            if summary.skipped.len() == 1 { "" } else { "s" },
            summary.skipped.join(", ")
        ));
    }
    if !args.check {
        return Ok(ExitStatus::Success);
    }
    let violations = &summary.violations;
    if violations.is_empty() {
        let name = clap::ValueEnum::to_possible_value(&args.format)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        ctx.out.stderr(&format!(
            "check: {} tool{} pass the {name} rules\n",
            summary.tools,
            if summary.tools == 1 { "" } else { "s" }
        ));
        return Ok(ExitStatus::Success);
    }
    if ctx.output.is_json() {
        ctx.out
            .stderr(&format!("{}\n", json!({"violations": violations})));
    } else {
        for v in violations {
            ctx.out.stderr(&format!(
                "violation [{}] {} at {}: {}\n",
                v.rule, v.tool, v.pointer, v.message
            ));
        }
        ctx.out.stderr(&format!(
            "check: {} violation{}\n",
            violations.len(),
            if violations.len() == 1 { "" } else { "s" }
        ));
    }
    Ok(ExitStatus::Failure)
}

/// The key of a kept export, when this export may be kept or copied: the whole registry
/// (no file, tool list or command filter), a JSON format, no `--check` (its findings are
/// not kept) and no `--mcp` (MCP servers' lists change without the registry changing).
fn kept_key(args: &Args, ctx: &Ctx, filtered: bool) -> Option<kept::Key> {
    if args.file.is_some()
        || args.tools.is_some()
        || filtered
        || args.check
        || args.mcp
        || !args.format.is_json()
    {
        return None;
    }
    let registry = std::fs::read(ctx.dirs.registry_file()).ok()?;
    let options = format!(
        "{:?}.{:?}.i{}.n{}",
        args.format,
        args.strategy,
        u8::from(args.include_interactive),
        u8::from(args.include_inferred),
    )
    .to_lowercase();
    Some(kept::Key {
        registry: atip::catalog::registry_key(&registry),
        options,
    })
}

/// Where the output goes: stdout, or a temp file persisted at the end (so a failed
/// export never leaves half a file behind).
struct Sink {
    file: Option<(tempfile::NamedTempFile, PathBuf)>,
}

impl Sink {
    fn open(out: Option<&Path>, format: Format) -> Result<Sink, AtipError> {
        match out {
            Some(path) if format != Format::Skill && path != Path::new("-") => {
                std::fs::create_dir_all(atomic::parent_dir(path))
                    .map_err(|e| output_error(path, e))?;
                let tmp = atomic::temp_file(path, atomic::Options::SHARED)?;
                Ok(Sink {
                    file: Some((tmp, path.to_path_buf())),
                })
            }
            _ => Ok(Sink { file: None }),
        }
    }

    /// The writer: the temp file, or stdout through the CLI's printer (a closed pipe
    /// ends the output quietly).
    fn writer<'p>(&mut self, printer: &'p Printer) -> Result<Box<dyn Write + 'p>, AtipError> {
        Ok(match &self.file {
            Some((tmp, path)) => Box::new(std::io::BufWriter::with_capacity(
                1 << 16,
                tmp.as_file()
                    .try_clone()
                    .map_err(|e| output_error(path, e))?,
            )),
            None => Box::new(std::io::BufWriter::with_capacity(1 << 16, printer.stdout())),
        })
    }

    fn fail(&self, e: std::io::Error) -> AtipError {
        match &self.file {
            Some((_, path)) => output_error(path, e),
            None => atip::output::stdout_failed(e),
        }
    }
    fn commit(self) -> Result<(), AtipError> {
        if let Some((tmp, path)) = self.file {
            atomic::persist(tmp, &path, atomic::Options::SHARED)?;
        }
        Ok(())
    }
}

/// Stdout where a closed pipe ends the output quietly.
fn output_error(path: &Path, source: std::io::Error) -> AtipError {
    atomic::WriteError {
        path: path.to_path_buf(),
        source,
    }
    .into()
}

/// Writes a file atomically, creating its directory.
fn write_file(path: &Path, text: &str) -> Result<(), AtipError> {
    std::fs::create_dir_all(atomic::parent_dir(path)).map_err(|e| output_error(path, e))?;
    Ok(atomic::write_atomic(
        path,
        text.as_bytes(),
        atomic::Options::SHARED,
    )?)
}

/// Every `--commands` filter must match at least one command, or the selection is an error
/// naming the filters that matched nothing (export and chat select the same way).
pub(crate) fn check_filters_match(
    filters: &[String],
    tools: &[atip::compile::FlatTool],
) -> Result<(), AtipError> {
    let unmatched: Vec<&String> = filters
        .iter()
        .filter(|f| {
            let one = FlattenOptions {
                include_interactive: true,
                commands: Some(vec![(*f).clone()]),
            };
            !tools.iter().any(|t| one.wants(&t.tool, &t.command))
        })
        .collect();
    if unmatched.is_empty() {
        return Ok(());
    }
    Err(AtipError::new(
        ErrorCode::CommandNotFound,
        format!(
            "no command matches --commands {}",
            unmatched
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    )
    .hint("a filter is the tool name then a command path prefix, e.g. \"gh pr\"")
    .details(json!({"unmatched": unmatched})))
}
