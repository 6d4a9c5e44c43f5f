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
    /// Policy, limits and interactivity, as for `atip exec`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// Runs `atip mcp`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<u8, AtipError> {
    let (policy, settings) = args.run.resolve(ctx)?;
    let engine = Engine::load(&ctx.dirs, policy, settings, args.tools.as_deref(), None)?;
    ctx.out.warnings(&engine.warnings);
    atip::mcp::serve_blocking(engine)?;
    Ok(0)
}
