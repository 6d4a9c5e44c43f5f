//! The shims atip ships (`shims/` in the source tree), built into the binary as the
//! lowest-precedence shim layer, so a fresh `atip scan` already knows common tools
//! without an install step.
//!
//! They are used straight from memory — never written anywhere, so a full or read-only
//! disk cannot take them away — and recorded with `shimRegistry: "builtin"`. They are
//! validated by this module's tests rather than at every scan. Every other layer —
//! admins' system dirs, the user's, `--shims`, overrides — wins over them.
//!
//! Must not read or write any file.

/// One shipped shim, as tabulated at build time (build.rs).
#[derive(Debug)]
pub struct Shipped {
    /// `NAME.json`.
    pub file: &'static str,
    /// The file's contents.
    pub body: &'static str,
    /// sha256 hex of `body`.
    pub sha256: &'static str,
    /// The tool it describes: `binary.name`, else `name`.
    pub tool: Option<&'static str>,
    /// Its `trust.source`.
    pub trust: Option<&'static str>,
}

/// The shipped shims, sorted by tool name (file stem): every `shims/*.json` of the source tree.
pub const SHIPPED: &[Shipped] = include!(concat!(env!("OUT_DIR"), "/builtin_shims.rs"));

/// The tool name (file stem) of each of [`SHIPPED`], in its order: what [`get`] searches.
/// Short strings emitted together, so a look-up reads a page or two, where searching
/// `SHIPPED` itself read names lying between the shims' bodies (a page each, and a page
/// fault the first time): a warm rescan asks for every name on PATH (~1,400 here).
const STEMS: &[&str] = include!(concat!(env!("OUT_DIR"), "/builtin_stems.rs"));

/// The `shimRegistry` recorded for tools whose metadata comes from a built-in shim.
pub const REGISTRY: &str = crate::registry::BUILTIN_SHIMS;

/// The shipped shim for `name` (`NAME.json`), if atip ships one.
pub(crate) fn get(name: &str) -> Option<&'static Shipped> {
    // Asked for every name on PATH (thousands); the table is sorted by tool name.
    STEMS.binary_search(&name).ok().and_then(|i| SHIPPED.get(i))
}

#[cfg(test)]
fn stem(file: &str) -> &str {
    file.strip_suffix(".json").unwrap_or(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn shipped_list_matches_the_shims_directory() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("shims");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        on_disk.sort_by(|a, b| stem(a).cmp(stem(b)));
        let listed: Vec<&str> = SHIPPED.iter().map(|s| s.file).collect();
        assert_eq!(listed, on_disk, "build.rs tabulates every shims/*.json");
        // `get` searches the stems and takes the shim at the same place.
        let stems: Vec<&str> = SHIPPED.iter().map(|s| stem(s.file)).collect();
        assert_eq!(stems, STEMS);
        // `get` searches by stem: the table must be sorted that way too.
        assert!(
            SHIPPED
                .windows(2)
                .all(|w| stem(w[0].file) < stem(w[1].file))
        );
    }

    #[test]
    fn tabulated_facts_are_those_of_the_files() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("shims");
        for s in SHIPPED {
            let on_disk = std::fs::read_to_string(dir.join(s.file)).unwrap();
            assert_eq!(s.body, on_disk, "{}", s.file);
            assert_eq!(
                s.sha256,
                crate::digest::sha256_hex(s.body.as_bytes()),
                "{}",
                s.file
            );
            let value: serde_json::Value = serde_json::from_str(s.body).unwrap();
            let text = |p: &str| value.pointer(p).and_then(|v| v.as_str());
            assert_eq!(s.tool, text("/binary/name").or(text("/name")), "{}", s.file);
            assert_eq!(s.trust, text("/trust/source"), "{}", s.file);
        }
    }

    #[test]
    fn every_shipped_shim_is_valid() {
        for s in SHIPPED {
            let checked = crate::validate::check_bytes(
                s.body.as_bytes(),
                Some(crate::validate::Kind::Shim),
                Some(s.file),
            );
            assert!(checked.is_valid(), "{}: {:?}", s.file, checked.diagnostics);
        }
    }

    #[test]
    fn lookup_by_tool_name() {
        for s in SHIPPED {
            let name = s.file.strip_suffix(".json").unwrap();
            assert_eq!(get(name).map(|s| s.body), Some(s.body));
        }
        assert!(get("no-such-tool").is_none());
        assert!(get("rm.json").is_none());
        assert!(get("apt").is_some() && get("apt-get").is_some());
    }
}
