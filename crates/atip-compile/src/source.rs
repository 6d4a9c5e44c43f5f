//! Where `export` and `search` get metadata: every registry tool (or a chosen few), or
//! one metadata file. The only part of `compile` that reads files.
//!
//! Must not write anything. A registry entry whose metadata cannot be read is reported
//! as a warning and skipped, unless the caller named that tool.

use crate::dirs::Dirs;
use crate::model::Metadata;
use crate::output::{Applicability, AtipError, ErrorCode, SuggestedAction, Suggestion};
use crate::registry::{Entry, Index, RegistryError};
use rayon::prelude::*;
use serde_json::json;
use std::path::Path;

/// Metadata documents to compile, sorted by tool name, and what went wrong on the way.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The documents; a document without a `name` takes its registry name.
    pub metas: Vec<Metadata>,
    /// Skipped registry entries, one line each.
    pub warnings: Vec<String>,
}

/// The registry's entries sorted by tool name: all of them, or those named in `only`
/// (an unknown name is an error naming it).
pub fn registry_entries(
    dirs: &Dirs,
    only: Option<&[String]>,
) -> Result<Vec<(String, Entry)>, AtipError> {
    let index = Index::load(dirs).map_err(|e| e.to_atip())?.ok_or_else(|| {
        AtipError::new(
            ErrorCode::RegistryNotFound,
            format!("no registry at {}", dirs.registry_file().display()),
        )
        .hint("run `atip scan` first to find the ATIP tools on PATH")
        .suggest(
            Suggestion::new(
                SuggestedAction::Abort,
                "build the registry with `atip scan`, then retry",
            )
            .example("atip scan", Applicability::MachineApplicable),
        )
    })?;
    let mut entries: Vec<(String, Entry)> = index.tools.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    if let Some(only) = only {
        let missing: Vec<&String> = only
            .iter()
            .filter(|n| !entries.iter().any(|(e, _)| e == *n))
            .collect();
        if !missing.is_empty() {
            let known: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
            return Err(AtipError::new(
                ErrorCode::ToolNotFound,
                format!(
                    "not in the registry: {}",
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .hint("`atip list` shows the registered tools")
            .details(json!({"missing": missing, "known": known})));
        }
        entries.retain(|(n, _)| only.contains(n));
    }
    Ok(entries)
}

/// Leaves out the tools inferred from man pages: exports and MCP serve them only when
/// selected (by name, `--tools`, a command filter, or `--include-inferred`).
pub fn drop_inferred(entries: &mut Vec<(String, Entry)>) {
    entries.retain(|(_, e)| e.source != crate::registry::Source::Inferred);
}

/// The registry tools a `--tools` / `--commands` selection reads, as `atip export` picks
/// them (and so names their commands): the named tools, narrowed to those the command
/// filters name (a filter's first word is its tool); with filters alone, the registered
/// tools they name. `None`: every tool.
pub fn selected_tools(
    dirs: &Dirs,
    tools: Option<&[String]>,
    filters: Option<&[String]>,
) -> Result<Option<Vec<String>>, AtipError> {
    let Some(filters) = filters else {
        return Ok(tools.map(<[String]>::to_vec));
    };
    let named: Vec<&str> = filters
        .iter()
        .filter_map(|f| f.split_whitespace().next())
        .collect();
    Ok(Some(match tools {
        Some(t) => t
            .iter()
            .filter(|n| named.contains(&n.as_str()))
            .cloned()
            .collect(),
        None => {
            let all = registry_entries(dirs, None)?;
            let mut n: Vec<String> = named
                .into_iter()
                .filter(|n| all.iter().any(|(e, _)| e == n))
                .map(String::from)
                .collect();
            n.sort();
            n.dedup();
            n
        }
    }))
}

/// Reads one entry's metadata; a document without a `name` takes its registry name.
pub fn read_entry(dirs: &Dirs, name: &str, entry: &Entry) -> Result<Metadata, RegistryError> {
    let m = Index::read_metadata(dirs, entry)?;
    Ok(vouched(named(m, name), entry))
}

/// [`read_entry`] for a document a writer holds in memory (its file may not be written
/// yet); `bytes` are the ones its metadata path names.
pub fn parse_entry(
    dirs: &Dirs,
    name: &str,
    entry: &Entry,
    bytes: &[u8],
) -> Result<Metadata, RegistryError> {
    let m = Metadata::from_slice(bytes).map_err(|e| RegistryError::Parse {
        path: entry.metadata_file(dirs).unwrap_or_default(),
        message: e.to_string(),
    })?;
    Ok(vouched(named(m, name), entry))
}

/// Effects nobody vouches for are unknown: a document inferred from a manual page holds
/// atip's table effects for its program's name, but unless the scan found that program
/// where only root can put one (`Vouch::Curated`), a program of one's own could have
/// borrowed the name. Export hints, the catalog and search then say "unknown", as exec
/// decides (spec/infer.md, "Curated effects").
fn vouched(mut m: Metadata, entry: &Entry) -> Metadata {
    if entry.source == crate::registry::Source::Inferred
        && entry.vouch() != crate::registry::Vouch::Curated
    {
        m.forget_effects();
    }
    m
}

fn named(mut m: Metadata, name: &str) -> Metadata {
    if m.tool_name().is_none() {
        m.name = Some(name.to_string());
    }
    m
}

/// Reads the registry's tools, all of them or those named in `only`, in parallel. An
/// unreadable document is a warning, or an error when `only` named it.
pub fn load_registry(dirs: &Dirs, only: Option<&[String]>) -> Result<Loaded, AtipError> {
    let entries = registry_entries(dirs, only)?;
    let results: Vec<(&String, Result<Metadata, RegistryError>)> = entries
        .par_iter()
        .map(|(name, entry)| (name, read_entry(dirs, name, entry)))
        .collect();
    let mut loaded = Loaded::default();
    for (name, r) in results {
        match r {
            Ok(m) => loaded.metas.push(m),
            Err(e) if only.is_some() => return Err(unreadable(name, &e)),
            Err(e) => loaded.warnings.push(format!("skipped {name}: {e}")),
        }
    }
    Ok(loaded)
}

/// The error for a named tool whose metadata cannot be read.
pub(crate) fn unreadable(name: &str, e: &RegistryError) -> AtipError {
    AtipError::new(ErrorCode::MetadataInvalid, format!("tool {name}: {e}"))
        .hint("run `atip scan` to refresh it, or `atip doctor`")
}

/// Reads one metadata file (`-` is stdin).
pub fn load_file(path: &Path) -> Result<Metadata, AtipError> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(|e| {
            AtipError::new(
                ErrorCode::InputUnreadable,
                format!("failed to read stdin: {e}"),
            )
        })?;
        buf
    } else {
        std::fs::read(path).map_err(|e| AtipError::read_failed("", path, &e))?
    };
    Metadata::from_slice(&bytes).map_err(|e| {
        AtipError::new(
            ErrorCode::MetadataInvalid,
            format!("{}: {e}", path.display()),
        )
        .hint("`atip validate` explains what is wrong")
    })
}
