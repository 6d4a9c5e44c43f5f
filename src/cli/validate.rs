//! `atip validate`: Check ATIP metadata, shims, registries and pattern files against the schema and semantic rules.

use crate::Ctx;
use atip::output::{AtipError, Category};

/// Check ATIP metadata, shims, registries and pattern files against the schema and semantic rules.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `atip validate`; returns the exit code.
pub fn run(_args: Args, _ctx: &Ctx) -> Result<u8, AtipError> {
    Err(AtipError::new(
        "not_built",
        Category::Unavailable,
        "`atip validate` is not built yet",
    ))
}
