//! `atip search`: Find the registered commands that best match a query.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Find the registered commands that best match a query.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip search`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip search` is not built yet",
    ))
}
