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

/// The shipped shims: (file name, contents), sorted by name. A unit test checks this list
/// against the `shims/` directory, so a new shim cannot be forgotten.
pub const SHIPPED: &[(&str, &str)] = &[
    ("cp.json", include_str!("../../shims/cp.json")),
    ("curl.json", include_str!("../../shims/curl.json")),
    ("diff.json", include_str!("../../shims/diff.json")),
    ("git.json", include_str!("../../shims/git.json")),
    ("grep.json", include_str!("../../shims/grep.json")),
    ("head.json", include_str!("../../shims/head.json")),
    ("jq.json", include_str!("../../shims/jq.json")),
    ("ls.json", include_str!("../../shims/ls.json")),
    ("mkdir.json", include_str!("../../shims/mkdir.json")),
    ("mv.json", include_str!("../../shims/mv.json")),
    ("rm.json", include_str!("../../shims/rm.json")),
    ("sed.json", include_str!("../../shims/sed.json")),
    ("tail.json", include_str!("../../shims/tail.json")),
    ("tar.json", include_str!("../../shims/tar.json")),
    ("wc.json", include_str!("../../shims/wc.json")),
];

/// The `shimRegistry` recorded for tools whose metadata comes from a built-in shim.
pub const REGISTRY: &str = "builtin";

/// The shipped shim for `name` (`NAME.json`), if atip ships one.
pub fn get(name: &str) -> Option<&'static str> {
    SHIPPED
        .iter()
        .find(|(file, _)| file.strip_suffix(".json") == Some(name))
        .map(|(_, body)| *body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn shipped_list_matches_the_shims_directory() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("shims");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = SHIPPED.iter().map(|(n, _)| *n).collect();
        assert_eq!(listed, on_disk, "list every shims/*.json in SHIPPED");
    }

    #[test]
    fn every_shipped_shim_is_valid() {
        for (name, body) in SHIPPED {
            let checked = crate::validate::check_bytes(
                body.as_bytes(),
                Some(crate::validate::Kind::Shim),
                Some(name),
            );
            assert!(checked.is_valid(), "{name}: {:?}", checked.diagnostics);
        }
    }

    #[test]
    fn lookup_by_tool_name() {
        for (file, body) in SHIPPED {
            let name = file.strip_suffix(".json").unwrap();
            assert_eq!(get(name), Some(*body));
        }
        assert_eq!(get("no-such-tool"), None);
        assert_eq!(get("rm.json"), None);
    }
}
