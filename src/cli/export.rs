//! `atip export`: Export registry tools as OpenAI, Anthropic, Gemini or MCP tool definitions.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Export registry tools as OpenAI, Anthropic, Gemini or MCP tool definitions.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip export`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip export` is not built yet",
    ))
}
