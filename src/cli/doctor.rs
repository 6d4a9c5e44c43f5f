//! `atip doctor`: Check every registry entry and say what to fix.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Check every registry entry and say what to fix.
#[derive(Debug, clap::Args)]
pub struct Args {}

#[expect(
    clippy::result_large_err,
    reason = "the run signature is fixed by the cli contract"
)]
/// Runs `atip doctor`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip doctor` is not built yet",
    ))
}
