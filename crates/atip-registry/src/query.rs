//! Read-side look-ups for `list` and `get`: filtering entries by glob and source, and
//! loading one tool's stored document, with suggestions when a name is unknown.
//!
//! Must not lock or write: these run while scans replace the registry. A reader that
//! loaded `registry.json` just before a writer replaced it may find a metadata file
//! collected; [`get_tool`] then reloads the index once.

use super::{Entry, Index, RegistryError, Source};
use crate::dirs::Dirs;
use crate::model::Metadata;
use crate::similar::edit_distance;
use serde::Serialize;
use std::path::PathBuf;

/// One listed tool: its name, then the entry's fields (the `registry.json` entry
/// format, see `spec/registry.md`).
#[derive(Debug, Clone, Serialize)]
pub struct Listed<'a> {
    /// Tool name.
    pub name: &'a str,
    /// The entry.
    #[serde(flatten)]
    pub entry: &'a Entry,
}

/// Entries whose name matches `glob` (all when `None`) and whose source is one of
/// `sources` (all when empty), in name order.
pub fn filter<'a>(
    index: &'a Index,
    glob: Option<&str>,
    sources: &[Source],
) -> Result<Vec<Listed<'a>>, globset::Error> {
    let matcher = glob
        .map(|g| {
            globset::GlobBuilder::new(g)
                .literal_separator(false)
                .build()
                .map(|g| g.compile_matcher())
        })
        .transpose()?;
    Ok(index
        .tools
        .iter()
        .filter(|(name, _)| matcher.as_ref().is_none_or(|m| m.is_match(name.as_str())))
        .filter(|(_, e)| sources.is_empty() || sources.contains(&e.source))
        .map(|(name, entry)| Listed { name, entry })
        .collect())
}

/// Up to `max` names close to `wanted`: same name ignoring case, names containing it
/// or contained in it, then edit distance at most a third of its length (at least 2).
pub fn suggest<'a>(
    names: impl IntoIterator<Item = &'a str>,
    wanted: &str,
    max: usize,
) -> Vec<String> {
    let w = wanted.to_lowercase();
    let limit = (w.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = names
        .into_iter()
        .filter_map(|name| {
            let n = name.to_lowercase();
            let score = if n == w {
                0
            } else if n.starts_with(&w) || w.starts_with(&n) {
                1
            } else if n.contains(&w) || (n.len() >= 3 && w.contains(&n)) {
                2
            } else {
                let d = edit_distance(&n, &w);
                if d > limit {
                    return None;
                }
                2 + d
            };
            Some((score, name))
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(max)
        .map(|(_, n)| n.to_string())
        .collect()
}

/// A registered tool with its stored metadata.
#[derive(Debug, Clone)]
pub struct StoredTool {
    /// Tool name.
    pub name: String,
    /// Its registry entry.
    pub entry: Entry,
    /// The stored document, byte for byte.
    pub document: Vec<u8>,
    /// The document, parsed.
    pub metadata: Metadata,
}

/// Why [`get_tool`] failed.
#[derive(Debug, thiserror::Error)]
pub enum GetError {
    /// There is no `registry.json` yet.
    #[error("no registry at {0} yet")]
    NoRegistry(PathBuf),
    /// No tool of that name.
    #[error("no tool named {name:?} in the registry {registry}")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The registry file.
        registry: PathBuf,
        /// Close names.
        suggestions: Vec<String>,
    },
    /// The metadata file's bytes do not hash to its name.
    #[error(
        "metadata file {path} of {name:?} does not match its sha256 name: it was modified or damaged"
    )]
    Tampered {
        /// Tool name.
        name: String,
        /// The metadata file.
        path: PathBuf,
    },
    /// Reading or parsing failed.
    #[error(transparent)]
    Registry(#[from] RegistryError),
}

impl GetError {
    /// The structured error: unknown tool or missing registry → input (66), tampered
    /// file or corrupt registry → data (65).
    pub fn to_atip(&self) -> crate::output::AtipError {
        use crate::output::{Applicability, AtipError, ErrorCode, SuggestedAction, Suggestion};
        match self {
            GetError::NoRegistry(path) => {
                AtipError::new(ErrorCode::RegistryNotFound, self.to_string())
                    .hint("run `atip scan` to find the ATIP tools on PATH")
                    .suggest(
                        Suggestion::new(SuggestedAction::Abort, "build the registry, then retry")
                            .example("atip scan", Applicability::MachineApplicable),
                    )
                    .details(serde_json::json!({ "path": path }))
            }
            GetError::Unknown {
                name, suggestions, ..
            } => {
                let hint = if suggestions.is_empty() {
                    "run `atip list` to see the registered tools, or `atip scan` to find new ones"
                        .to_string()
                } else {
                    format!(
                        "did you mean {}? `atip list` shows every registered tool",
                        suggestions.join(", ")
                    )
                };
                let e = AtipError::new(ErrorCode::ToolNotFound, self.to_string())
                    .hint(hint)
                    .details(serde_json::json!({ "name": name, "suggestions": suggestions }));
                match suggestions.first() {
                    Some(best) => e.suggest(
                        Suggestion::new(
                            SuggestedAction::RetryWithModifiedInput,
                            format!("{best} is the closest registered name"),
                        )
                        .example(format!("atip get {best}"), Applicability::MaybeIncorrect),
                    ),
                    None => e,
                }
            }
            GetError::Tampered { name, path } => {
                AtipError::new(ErrorCode::MetadataTampered, self.to_string())
                    .hint("run `atip scan --refresh` to read the tool's metadata again")
                    .details(serde_json::json!({ "name": name, "path": path }))
            }
            GetError::Registry(e) => e.to_atip(),
        }
    }
}

/// Loads one tool's entry and stored metadata, checking that the metadata file still
/// hashes to its name. Retries once with a freshly loaded index when the metadata file
/// vanished (a writer replaced the index and collected it in between).
pub fn get_tool(dirs: &Dirs, name: &str) -> Result<StoredTool, GetError> {
    let mut retried = false;
    loop {
        let index = Index::load(dirs)?.ok_or_else(|| GetError::NoRegistry(dirs.registry_file()))?;
        let Some(entry) = index.tools.get(name) else {
            return Err(GetError::Unknown {
                name: name.to_string(),
                registry: dirs.registry_file(),
                suggestions: suggest(index.tools.keys().map(String::as_str), name, 3),
            });
        };
        let path = entry.metadata_file(dirs)?;
        let document = match Index::read_document(dirs, entry) {
            Ok(d) => d,
            Err(RegistryError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound && !retried =>
            {
                retried = true;
                continue;
            }
            Err(RegistryError::Tampered { path }) => {
                return Err(GetError::Tampered {
                    name: name.to_string(),
                    path,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let metadata = Metadata::from_slice(&document).map_err(|e| RegistryError::Parse {
            path: path.clone(),
            message: e.to_string(),
        })?;
        return Ok(StoredTool {
            name: name.to_string(),
            entry: entry.clone(),
            document,
            metadata,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_rank_close_names_first() {
        let names = ["gh", "git", "kubectl", "kubectx", "docker", "go"];
        assert_eq!(suggest(names, "kubect", 3), ["kubectl", "kubectx"]);
        assert_eq!(suggest(names, "GH", 3)[0], "gh");
        assert_eq!(suggest(names, "dokcer", 3), ["docker"]);
        assert!(suggest(names, "zzzzzzzz", 3).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
