//! `atip mcp`: Serve every registered tool over MCP (stdio).

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Serve every registered tool over MCP (stdio).
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip mcp`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip mcp` is not built yet",
    ))
}
