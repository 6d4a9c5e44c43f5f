//! `atip scan`: Find ATIP tools on PATH and record them in the registry.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Find ATIP tools on PATH and record them in the registry.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip scan`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip scan` is not built yet",
    ))
}
