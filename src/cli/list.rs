//! `atip list`: List the tools in the registry.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// List the tools in the registry.
#[derive(Debug, clap::Args)]
pub struct Args {}

#[expect(
    clippy::result_large_err,
    reason = "the run signature is fixed by the cli contract"
)]
/// Runs `atip list`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip list` is not built yet",
    ))
}
