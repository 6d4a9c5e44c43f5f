//! `atip exec`: Run a model's tool call under policy.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Run a model's tool call under policy.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip exec`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip exec` is not built yet",
    ))
}
