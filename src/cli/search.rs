//! `atip search`: rank the registry's commands for a query. Arguments and glue only; the
//! ranking is in `atip::search`.

use crate::Ctx;
use atip::compile::{self, Catalog, FlattenOptions, Format};
use atip::output::{AtipError, ErrorCode, exit, print_json};
use atip::search::{SearchIndex, SearchOptions};
use std::path::PathBuf;

/// Find the registered commands that best match a query.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What the agent wants to do, e.g. "create pull request".
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    pub query: Vec<String>,
    /// Most results.
    #[arg(long, default_value_t = 5)]
    pub limit: usize,
    /// Full schemas for this many of the best results.
    #[arg(long, default_value_t = 3, value_name = "K")]
    pub schemas: usize,
    /// Schema form: a provider's tool definition instead of the plain JSON Schema.
    #[arg(long, value_enum)]
    pub format: Option<Format>,
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
}

/// Runs `atip search`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    if matches!(args.format, Some(Format::Skill | Format::Prompt)) {
        return Err(AtipError::new(
            ErrorCode::Usage,
            "search schemas come in JSON formats only (openai, openai-strict, anthropic, gemini, mcp)",
        ));
    }
    let max_bytes = atip::units::parse_size(&args.max_bytes).map_err(|e| {
        AtipError::new(
            ErrorCode::Usage,
            format!("--max-bytes {}: {e}", args.max_bytes),
        )
    })?;
    let metas = match &args.file {
        Some(path) => vec![compile::source::load_file(path)?],
        None => {
            let loaded = compile::source::load_registry(&ctx.dirs, args.tools.as_deref())?;
            for w in &loaded.warnings {
                eprintln!("warning: {w}");
            }
            loaded.metas
        }
    };
    let catalog = Catalog::build(
        &metas,
        &FlattenOptions {
            include_interactive: args.include_interactive,
            commands: None,
        },
    );
    let index = SearchIndex::build(catalog.tools());
    let query = args.query.join(" ");
    let opts = SearchOptions {
        limit: args.limit,
        schemas: args.schemas,
        format: args.format,
        explain: args.explain,
        max_bytes: usize::try_from(max_bytes).unwrap_or(usize::MAX),
    };
    let report = atip::search::search(&catalog, &index, &query, &opts);
    if ctx.output.is_json() {
        print_json(&report).map_err(|e| {
            AtipError::new(
                ErrorCode::StdoutWriteFailed,
                format!("failed to write stdout: {e}"),
            )
        })?;
    } else {
        if report.results.is_empty() {
            eprintln!("no command matches {query:?}");
        }
        for (i, r) in report.results.iter().enumerate() {
            let title = std::iter::once(r.tool.as_str())
                .chain(
                    r.command
                        .iter()
                        .map(String::as_str)
                        .filter(|s| !s.is_empty()),
                )
                .collect::<Vec<_>>()
                .join(" ");
            println!("{}. {}  ({title})  score {:.2}", i + 1, r.name, r.score);
            println!("   {}", r.description);
            for w in &r.why {
                println!("   why: {w}");
            }
            if let Some(s) = &r.schema {
                println!("   schema: {s}");
            }
        }
        if report.truncated {
            eprintln!("note: output truncated at {max_bytes} bytes (--max-bytes)");
        }
    }
    Ok(if report.results.is_empty() {
        exit::FAILURE
    } else {
        exit::OK
    })
}
