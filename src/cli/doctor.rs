//! `atip doctor`: Check every registry entry and say what to fix.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Check every registry entry and say what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip doctor`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip doctor` is not built yet",
    ))
}
