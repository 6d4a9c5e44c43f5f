//! atip's own directories, recognised when `atip validate` is given one (or a path
//! inside one): each `*.json` file there is checked as what atip made it, and atip's
//! bookkeeping files are skipped and counted, never reported as broken documents.
//!
//! A directory is atip's when it holds `registry.json`, `registry.lock` or `catalog.bin`
//! (a data dir), `.well-known/atip-registry.json` (a remote registry tree built by
//! `atip registry build`), or is named `agent-tools` (every XDG directory atip uses:
//! system data dirs, the cache dir). Owns only the path → role table; the checks are
//! validate's own.

use super::Kind;
use std::path::{Component, Path, PathBuf};

/// What a `*.json` file of one of atip's directories is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Not in an atip directory: the kind is detected and file-name rules apply.
    Plain,
    /// Checked as `kind`; `named`: the file name carries meaning (a shim's
    /// `sha256/<hex>.json` must equal its `binary.hash`).
    As {
        /// The kind atip reads the file as.
        kind: Kind,
        /// Whether the file name rules apply.
        named: bool,
    },
    /// A document atip stored under the sha256 of its own bytes (`tools/<hex>.json`,
    /// `cache/native/`, `cache/inferred/`): kind detected (a stored shim keeps its
    /// `binary`, whose hash is the executable's, not the file's), no file-name rule for
    /// shims, and the name checked against the bytes (`stored-hash-mismatch`).
    Stored,
    /// atip's bookkeeping, not an ATIP document: skipped and counted. The text says what
    /// it is.
    Internal(&'static str),
}

/// A recognised atip directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The directory.
    pub dir: PathBuf,
    /// What it is, in words (`an atip data dir`).
    pub what: &'static str,
    /// A remote registry tree (`shims/index.json` is then its catalog).
    remote_tree: bool,
}

/// Ancestors looked at above an input (`data/cache/inferred/X.json` is three levels
/// below the data dir).
const MAX_UP: usize = 4;

/// Files at a directory's top that atip writes and that are not ATIP documents.
const SETTINGS: &[&str] = &[
    "config.json",
    "registries.json",
    "policy.json",
    "mcp.json",
    "trusted-projects.json",
];

/// The atip directory `dir` is, if it is one.
fn recognise(dir: &Path) -> Option<Root> {
    let root = |what, remote_tree| {
        Some(Root {
            dir: dir.to_path_buf(),
            what,
            remote_tree,
        })
    };
    if dir.join(".well-known/atip-registry.json").is_file() {
        return root("a remote registry tree", true);
    }
    if ["registry.json", "registry.lock", "catalog.bin"]
        .iter()
        .any(|f| dir.join(f).is_file())
    {
        return root("an atip data dir", false);
    }
    if dir
        .file_name()
        .is_some_and(|n| n == atip_base::dirs::APP_DIR)
    {
        return root("an atip directory", false);
    }
    None
}

/// The atip directory `path` is or lies in (itself first, then up to four
/// ancestors).
pub fn root_of(path: &Path) -> Option<Root> {
    let start = if path.is_dir() {
        Some(path)
    } else {
        path.parent()
    };
    start?
        .ancestors()
        .take(MAX_UP + 1)
        .filter(|d| !d.as_os_str().is_empty())
        .find_map(recognise)
}

fn hex_json(name: &str) -> bool {
    name.strip_suffix(".json")
        .is_some_and(atip_base::digest::is_hex64)
}

/// The role of `file` under `root`.
pub fn role(root: &Root, file: &Path) -> Role {
    let Ok(rel) = file.strip_prefix(&root.dir) else {
        return Role::Plain;
    };
    let parts: Vec<&str> = rel
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    let shim = Role::As {
        kind: Kind::Shim,
        named: true,
    };
    match parts.as_slice() {
        ["registry.json"] => Role::As {
            kind: Kind::Registry,
            named: false,
        },
        [name] if SETTINGS.contains(name) => Role::Internal("atip's settings"),
        ["tools", name] if hex_json(name) => Role::Stored,
        // Installed metadata of a system data dir, named after its tool.
        ["tools", _] => Role::As {
            kind: Kind::Metadata,
            named: true,
        },
        ["shims", "index.json"] if root.remote_tree => {
            Role::Internal("the remote registry's catalog")
        }
        ["shims" | "overrides", ..] => shim,
        ["patterns", ..] => Role::As {
            kind: Kind::Pattern,
            named: false,
        },
        ["cache", "native" | "inferred", name] if hex_json(name) => Role::Stored,
        ["cache", ..] => Role::Internal("a scan cache"),
        // The cache dir: what remote registries published.
        ["remote", _, "sha256", name] if hex_json(name) => shim,
        ["remote", ..] => Role::Internal("a remote registry's cached catalog or state"),
        ["mcp", ..] => Role::Internal("an MCP listing cache"),
        [".well-known", "atip-registry.json"] => Role::Internal("the remote registry's manifest"),
        _ => Role::Plain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_follow_the_layout() {
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("data");
        std::fs::create_dir_all(data.join("tools")).unwrap();
        // Not yet atip's: no marker.
        assert!(root_of(&data).is_none());
        std::fs::write(data.join("registry.lock"), "").unwrap();
        let root = root_of(&data.join("tools")).unwrap();
        assert_eq!(root.dir, data);
        let hex = "a".repeat(64);
        let r = |rel: &str| role(&root, &data.join(rel));
        assert_eq!(r(&format!("tools/{hex}.json")), Role::Stored);
        assert_eq!(r(&format!("cache/inferred/{hex}.json")), Role::Stored);
        assert!(matches!(r("cache/man-dirs.json"), Role::Internal(_)));
        assert!(matches!(r("config.json"), Role::Internal(_)));
        assert_eq!(
            r(&format!("shims/sha256/{hex}.json")),
            Role::As {
                kind: Kind::Shim,
                named: true
            }
        );
        // `shims/index.json` is a shim named index here, a catalog only in a remote tree.
        assert_eq!(
            r("shims/index.json"),
            Role::As {
                kind: Kind::Shim,
                named: true
            }
        );
        assert_eq!(r("elsewhere/x.json"), Role::Plain);
        assert_eq!(
            r("registry.json"),
            Role::As {
                kind: Kind::Registry,
                named: false
            }
        );
        // A directory named like atip's XDG dirs is recognised by its name.
        let xdg = t.path().join("share/agent-tools/shims");
        std::fs::create_dir_all(&xdg).unwrap();
        assert_eq!(
            root_of(&xdg).unwrap().dir,
            t.path().join("share/agent-tools")
        );
    }
}
