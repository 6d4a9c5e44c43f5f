//! `atip get`: Print a registered tool's metadata, whole or partial.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Print a registered tool's metadata, whole or partial.
#[derive(Debug, clap::Args)]
pub struct Args {}

#[expect(
    clippy::result_large_err,
    reason = "the run signature is fixed by the cli contract"
)]
/// Runs `atip get`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip get` is not built yet",
    ))
}
