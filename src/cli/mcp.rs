//! `atip mcp`: serve registered tools as MCP tools over stdio. Only the flags live
//! here; the server is `atip::mcp`.

use super::exec::RunArgs;
use crate::Ctx;
use atip::exec::Engine;
use atip::output::AtipError;

/// Serve every registered tool over MCP (stdio).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only these registered tools, comma-separated (e.g. `gh,git`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Most calls run at once; further calls wait for a slot, or are refused when the
    /// policy says `limits.overflow: refuse` (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Policy, limits and interactivity, as for `atip exec`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs `atip mcp`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    let (policy, settings) = args.run.resolve(ctx)?;
    let engine = Engine::load(&ctx.dirs, policy, settings, args.tools.as_deref(), None)?;
    for w in &engine.warnings {
        eprintln!("atip mcp: warning: {w}");
    }
    let jobs = args.jobs.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    atip::mcp::serve_blocking(engine, jobs)?;
    Ok(0)
}
