//! `atip mcp`: serve registered tools as MCP tools over stdio. Only the flags live
//! here; the server is `atip::mcp`.

use crate::Ctx;
use atip::exec::policy::Policy;
use atip::exec::{Engine, Settings};
use atip::output::{AtipError, Category};
use std::path::PathBuf;

/// Serve every registered tool over MCP (stdio).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only these registered tools, comma-separated (e.g. `gh,git`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Policy file (default: <config-dir>/policy.json, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Timeout per call (default: the command's duration.timeout, else 60s).
    #[arg(long, value_name = "DURATION", value_parser = atip::units::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Cap on each of stdout and stderr, e.g. `256KiB`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256KiB")]
    pub max_output: usize,
    /// Serve (and run) commands that need a terminal, prompts, or stdin.
    #[arg(long)]
    pub allow_interactive: bool,
}

fn parse_size(s: &str) -> Result<usize, String> {
    atip::units::parse_size(s).map(|v| v as usize)
}

/// Runs `atip mcp`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    let cwd = std::env::current_dir()
        .map_err(|e| AtipError::new("cwd_unavailable", Category::Unavailable, e.to_string()))?;
    let policy = Policy::load(args.policy.as_deref(), &ctx.dirs.config, &cwd)?;
    let settings = Settings {
        timeout: args.timeout,
        stdout_cap: args.max_output,
        stderr_cap: args.max_output,
        allow_interactive: args.allow_interactive,
    };
    let engine = Engine::load(&ctx.dirs, policy, settings, args.tools.as_deref(), None)?;
    for w in &engine.warnings {
        eprintln!("atip mcp: warning: {w}");
    }
    atip::mcp::serve_blocking(engine)?;
    Ok(0)
}
