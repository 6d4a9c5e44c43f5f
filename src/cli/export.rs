//! `atip export`: registry tools (or one metadata file) as OpenAI, Anthropic, Gemini or
//! MCP tool definitions, SKILL.md files or a prompt fragment. Arguments and glue only;
//! the work is in `atip::compile`.

use crate::Ctx;
use atip::atomic;
use atip::catalog::kept;
use atip::compile::{
    self, Catalog, ExportOptions, ExportSummary, Exporter, FlattenOptions, Format, Strategy,
};
use atip::model::Metadata;
use atip::output::{AtipError, ErrorCode, exit};
use rayon::prelude::*;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Export registry tools as provider tool definitions.
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
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    let commands = args.commands.clone().map(|c| {
        c.into_iter()
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect::<Vec<_>>()
    });
    let opts = ExportOptions {
        format: args.format,
        strategy: args.strategy,
        flatten: FlattenOptions {
            include_interactive: args.include_interactive,
            commands: commands.clone(),
        },
    };
    // With a file, a tool list or command filters the documents are few: read them first
    // so a bad filter fails before any output. Otherwise stream the whole registry.
    let mut docs: Option<Vec<Metadata>> = None;
    let mut entries = Vec::new();
    if let Some(path) = &args.file {
        docs = Some(vec![compile::source::load_file(path)?]);
    } else {
        let only =
            compile::source::selected_tools(&ctx.dirs, args.tools.as_deref(), commands.as_deref())?;
        entries = compile::source::registry_entries(&ctx.dirs, only.as_deref())?;
        if only.is_none() && !args.include_inferred {
            compile::source::drop_inferred(&mut entries);
        }
        if only.is_some() {
            let loaded = compile::source::load_registry(&ctx.dirs, only.as_deref())?;
            docs = Some(loaded.metas);
        }
    }
    if let (Some(docs), Some(filters)) = (&docs, &commands) {
        let catalog = Catalog::build(
            docs,
            &FlattenOptions {
                include_interactive: true,
                commands: commands.clone(),
            },
        );
        check_filters_match(filters, catalog.tools())?;
    }
    if args.mcp && !args.format.is_json() {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "--mcp works with the JSON formats (openai, openai-strict, anthropic, gemini, mcp)",
        ));
    }
    if args.format == Format::Skill && args.out.is_none() {
        let n = docs.as_ref().map_or(entries.len(), Vec::len);
        if n > 1 {
            return Err(AtipError::new(ErrorCode::OutputDirNeeded, format!("{n} tools give {n} SKILL.md files"))
                .hint("give a directory with -o DIR (one DIR/<tool>/SKILL.md each), or pick one tool with --tools"));
        }
    }

    let mut sink = Sink::open(args.out.as_deref(), args.format)?;
    // The whole registry in a JSON format: the same bytes as the last identical export
    // when the registry has not changed since (see `atip::catalog::kept`).
    let kept = kept_key(&args, ctx, commands.is_some());
    if let Some(key) = &kept
        && let Some((file, len, report)) = kept::find(&ctx.dirs, key)
    {
        let mut out = sink.writer()?;
        kept::copy(file, len, &mut out)
            .and_then(|()| out.flush())
            .map_err(|e| sink.fail(e))?;
        drop(out);
        for w in &report.warnings {
            ctx.out.warn(w);
        }
        sink.commit()?;
        let summary = ExportSummary {
            tools: report.tools,
            skipped: report.skipped,
            ..ExportSummary::default()
        };
        return self::report(&args, ctx, &summary);
    }
    let mut warnings = Vec::new();
    let mut keeper = None;
    let writer: Box<dyn Write> = match &kept {
        Some(key) => {
            let (recorder, k) = kept::Recorder::new(&ctx.dirs, key, sink.writer()?);
            keeper = Some(k);
            Box::new(recorder)
        }
        None => sink.writer()?,
    };
    let mut exporter = Exporter::new(opts, writer, args.check).map_err(|e| sink.fail(e))?;
    let mut skills: Vec<(String, String)> = Vec::new();
    match docs {
        Some(docs) => {
            for batch in docs.chunks(BATCH) {
                skills.extend(exporter.add_batch(batch).map_err(|e| sink.fail(e))?);
            }
        }
        None => {
            for batch in entries.chunks(BATCH) {
                let read: Vec<Result<Metadata, String>> = batch
                    .par_iter()
                    .map(|(name, entry)| compile::source::read_entry(&ctx.dirs, name, entry))
                    .collect();
                let mut metas = Vec::with_capacity(batch.len());
                for ((name, _), r) in batch.iter().zip(read) {
                    match r {
                        Ok(meta) => metas.push(meta),
                        Err(e) => {
                            let w = format!("skipped {name}: {e}");
                            ctx.out.warn(&w);
                            warnings.push(w);
                        }
                    }
                }
                skills.extend(exporter.add_batch(&metas).map_err(|e| sink.fail(e))?);
            }
        }
    }
    if args.mcp {
        let tools = super::mcp::cached_flat_tools(ctx, false)
            .into_iter()
            .map(|(_, t)| t)
            .collect();
        for name in exporter.add_external(tools).map_err(|e| sink.fail(e))? {
            ctx.out.warn(format_args!(
                "MCP tool {name} left out: a command already has that name"
            ));
        }
    }
    let summary = exporter.finish().map_err(|e| sink.fail(e))?;
    // Kept only when registry.json is still the one the key was taken from: a registry
    // changed during the export may have given some documents of each.
    let unchanged = |key: &kept::Key| {
        std::fs::read(ctx.dirs.registry_file())
            .is_ok_and(|b| atip::catalog::registry_key(&b) == key.registry)
    };
    if let (Some(k), Some(key)) = (keeper, kept.as_ref().filter(|k| unchanged(k))) {
        let report = kept::Report {
            warnings,
            skipped: summary.skipped.clone(),
            tools: summary.tools,
        };
        k.keep(&ctx.dirs, key, report);
    }
    if args.format == Format::Skill {
        match args.out.as_deref() {
            Some(dir) => {
                for (name, text) in &skills {
                    write_file(&dir.join(name).join("SKILL.md"), &format!("{text}\n"))?;
                }
            }
            None => {
                if let Some((_, text)) = skills.first() {
                    ctx.out.text(&format!("{text}\n"))?;
                }
            }
        }
    }
    sink.commit()?;
    report(&args, ctx, &summary)
}
fn report(args: &Args, ctx: &Ctx, summary: &ExportSummary) -> Result<u8, AtipError> {
    if !summary.skipped.is_empty() {
        ctx.out.note(format_args!(
            "left out {} interactive command{} an agent cannot drive (TTY, prompts or password): {}; --include-interactive keeps them",
            summary.skipped.len(),
            if summary.skipped.len() == 1 { "" } else { "s" },
            summary.skipped.join(", ")
        ));
    }
    if !args.check {
        return Ok(exit::OK);
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
        return Ok(exit::OK);
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
    Ok(exit::FAILURE)
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

    fn writer(&mut self) -> Result<Box<dyn Write>, AtipError> {
        Ok(match &self.file {
            Some((tmp, path)) => Box::new(std::io::BufWriter::with_capacity(
                1 << 16,
                tmp.as_file()
                    .try_clone()
                    .map_err(|e| output_error(path, e))?,
            )),
            None => Box::new(Stdout(std::io::BufWriter::with_capacity(
                1 << 16,
                std::io::stdout(),
            ))),
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
struct Stdout(std::io::BufWriter<std::io::Stdout>);

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self.0.write(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(buf.len()),
            other => other,
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0.flush() {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            other => other,
        }
    }
}

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
