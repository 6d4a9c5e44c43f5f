//! The words every command uses for the same things on a terminal (spec/cli.md, terminal
//! output): a source is called what `list --source` takes, with one phrase saying what
//! it means.

/// The word for where a tool's metadata came from, the same in `scan`, `list`, `get`
/// and `search` (and the value `list --source` takes).
pub fn source_word(source: atip::registry::Source) -> &'static str {
    use atip::registry::Source;
    match source {
        Source::Native => "native",
        Source::Override => "override",
        Source::ShimHash => "shim-hash",
        Source::Shim => "shim",
        Source::Installed => "installed",
        Source::Converted => "converted",
        Source::Remote => "remote",
        Source::Inferred => "inferred",
    }
}

/// What each source means, for a person: one phrase.
pub fn source_meaning(source: atip::registry::Source) -> &'static str {
    use atip::registry::Source;
    match source {
        Source::Native => "the tool's own --agent answer",
        Source::Override => "your override in the config directory",
        Source::ShimHash => "a shim matching this exact binary",
        Source::Shim => "a shim file for this name",
        Source::Installed => "a metadata file installed beside the tool",
        Source::Converted => "converted from the tool's framework manifest",
        Source::Remote => "a shim from a remote registry",
        Source::Inferred => "from its man page; effects from atip's table or unknown",
    }
}
