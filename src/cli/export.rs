//! `atip export`: registry tools (or one metadata file) as OpenAI, Anthropic, Gemini or
//! MCP tool definitions, SKILL.md files or a prompt fragment. Arguments and glue only;
//! the work is in `atip::compile`.

use crate::Ctx;
use atip::compile::{self, ExportOptions, FlattenOptions, Format, Rendered, Strategy, strict};
use atip::output::{AtipError, Category, exit};
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
    /// Check the output against the format's rules (OpenAI strict mode for openai-strict); exit 1 on a violation.
    #[arg(long)]
    pub check: bool,
}

/// Runs `atip export`; returns the exit code.
#[allow(clippy::result_large_err)]
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    let loaded = match &args.file {
        Some(path) => compile::source::Loaded {
            metas: vec![compile::source::load_file(path)?],
            warnings: Vec::new(),
        },
        None => compile::source::load_registry(&ctx.dirs, args.tools.as_deref())?,
    };
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let commands = args.commands.map(|c| {
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
            commands,
        },
    };
    let result = compile::export(&loaded.metas, &opts);
    if !result.unmatched_filters.is_empty() {
        return Err(AtipError::new(
            "no_such_command",
            Category::Usage,
            format!(
                "no command matches --commands {}",
                result.unmatched_filters.join(", ")
            ),
        )
        .hint("a filter is the tool name then a command path prefix, e.g. \"gh pr\"")
        .details(json!({"unmatched": result.unmatched_filters})));
    }
    if !result.skipped.is_empty() {
        let names: Vec<&str> = result.skipped.iter().map(|t| t.title.as_str()).collect();
        eprintln!(
            "note: left out {} interactive command{} an agent cannot drive (TTY, prompts or password): {}; --include-interactive keeps them",
            names.len(),
            if names.len() == 1 { "" } else { "s" },
            names.join(", ")
        );
    }
    let violations = match &result.rendered {
        Rendered::Json(v) if args.check => strict::check(args.format, v),
        _ => Vec::new(),
    };
    write_output(&result.rendered, args.out.as_deref())?;
    if args.check {
        if violations.is_empty() {
            let name = clap::ValueEnum::to_possible_value(&args.format)
                .map(|v| v.get_name().to_string())
                .unwrap_or_default();
            eprintln!(
                "check: {} tool{} pass the {name} rules",
                result.tools,
                if result.tools == 1 { "" } else { "s" }
            );
        } else if ctx.output.is_json() {
            eprintln!("{}", json!({"violations": violations}));
        } else {
            for v in &violations {
                eprintln!(
                    "violation [{}] {} at {}: {}",
                    v.rule, v.tool, v.pointer, v.message
                );
            }
            eprintln!(
                "check: {} violation{}",
                violations.len(),
                if violations.len() == 1 { "" } else { "s" }
            );
        }
        if !violations.is_empty() {
            return Ok(exit::FAILURE);
        }
    }
    Ok(exit::OK)
}

#[allow(clippy::result_large_err)]
fn write_output(rendered: &Rendered, out: Option<&Path>) -> Result<(), AtipError> {
    match rendered {
        Rendered::Json(v) => {
            let mut text = serde_json::to_string_pretty(v).expect("values always serialize");
            text.push('\n');
            emit(out, &text)
        }
        Rendered::Text(t) => emit(out, t),
        Rendered::Skills(skills) => match out {
            Some(dir) => {
                for (name, text) in skills {
                    let mut text = text.clone();
                    text.push('\n');
                    write_file(&dir.join(name).join("SKILL.md"), &text)?;
                }
                Ok(())
            }
            None if skills.len() <= 1 => emit(None, &skills.first().map(|(_, t)| format!("{t}\n")).unwrap_or_default()),
            None => Err(AtipError::new(
                "output_dir_needed",
                Category::Usage,
                format!("{} tools give {} SKILL.md files", skills.len(), skills.len()),
            )
            .hint("give a directory with -o DIR (one DIR/<tool>/SKILL.md each), or pick one tool with --tools")),
        },
    }
}

#[allow(clippy::result_large_err)]
fn emit(out: Option<&Path>, text: &str) -> Result<(), AtipError> {
    match out {
        Some(path) if path != Path::new("-") => write_file(path, text),
        _ => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|_| stdout.flush())
            {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(AtipError::new(
                    "output_failed",
                    Category::Output,
                    format!("failed to write stdout: {e}"),
                )),
                _ => Ok(()),
            }
        }
    }
}

/// Writes a file atomically (temp file in the same directory, then rename).
#[allow(clippy::result_large_err)]
fn write_file(path: &Path, text: &str) -> Result<(), AtipError> {
    let fail = |e: std::io::Error| {
        AtipError::new(
            "output_failed",
            Category::Output,
            format!("failed to write {}: {e}", path.display()),
        )
    };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir).map_err(fail)?;
    let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(fail)?;
    tmp.write_all(text.as_bytes()).map_err(fail)?;
    tmp.as_file().sync_all().map_err(fail)?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(fail)?;
    }
    tmp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
