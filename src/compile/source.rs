//! Where `export` and `search` get metadata: every registry tool (or a chosen few), or
//! one metadata file. The only part of `compile` that reads files.
//!
//! Must not write anything. A registry entry whose metadata cannot be read is reported
//! as a warning and skipped, unless the caller named that tool.

// AtipError is the project-wide error contract; its size is the lead's call.
#![allow(clippy::result_large_err)]

use crate::dirs::Dirs;
use crate::model::Metadata;
use crate::output::{AtipError, Category};
use crate::registry::Index;
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

/// Reads the registry's tools, all of them or those named in `only`.
pub fn load_registry(dirs: &Dirs, only: Option<&[String]>) -> Result<Loaded, AtipError> {
    let index = Index::load(dirs)
        .map_err(|e| {
            AtipError::new("registry_unreadable", Category::Data, e.to_string())
                .hint("run `atip scan` to rebuild it")
        })?
        .ok_or_else(|| {
            AtipError::new(
                "registry_missing",
                Category::Input,
                format!("no registry at {}", dirs.registry_file().display()),
            )
            .hint("run `atip scan` first, or export one file with --file")
        })?;
    let mut names: Vec<&String> = index.tools.keys().collect();
    names.sort();
    if let Some(only) = only {
        let missing: Vec<&String> = only
            .iter()
            .filter(|n| !index.tools.contains_key(n.as_str()))
            .collect();
        if !missing.is_empty() {
            let known: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            return Err(AtipError::new(
                "tool_not_found",
                Category::Input,
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
        names.retain(|n| only.contains(n));
    }
    let results: Vec<(String, Result<Metadata, String>)> = names
        .par_iter()
        .map(|name| {
            let entry = &index.tools[name.as_str()];
            let r = Index::read_metadata(dirs, entry).map_err(|e| e.to_string());
            ((*name).clone(), r)
        })
        .collect();
    let mut loaded = Loaded::default();
    for (name, r) in results {
        match r {
            Ok(mut m) => {
                if m.tool_name().is_none() {
                    m.name = Some(name);
                }
                loaded.metas.push(m);
            }
            Err(e) if only.is_some() => {
                return Err(AtipError::new(
                    "metadata_unreadable",
                    Category::Data,
                    format!("tool {name}: {e}"),
                )
                .hint("run `atip scan` to refresh it, or `atip doctor`"));
            }
            Err(e) => loaded.warnings.push(format!("skipped {name}: {e}")),
        }
    }
    Ok(loaded)
}

/// Reads one metadata file (`-` is stdin).
pub fn load_file(path: &Path) -> Result<Metadata, AtipError> {
    let bytes = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map_err(|e| {
            AtipError::new(
                "input_unreadable",
                Category::Input,
                format!("failed to read stdin: {e}"),
            )
        })?;
        buf
    } else {
        std::fs::read(path).map_err(|e| {
            AtipError::new(
                "input_not_found",
                Category::Input,
                format!("failed to read {}: {e}", path.display()),
            )
        })?
    };
    Metadata::from_slice(&bytes).map_err(|e| {
        AtipError::new(
            "invalid_metadata",
            Category::Data,
            format!("{}: {e}", path.display()),
        )
        .hint("`atip validate` explains what is wrong")
    })
}
