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
    ("apt-get.json", include_str!("../../shims/apt-get.json")),
    ("apt.json", include_str!("../../shims/apt.json")),
    ("awk.json", include_str!("../../shims/awk.json")),
    ("base64.json", include_str!("../../shims/base64.json")),
    ("cargo.json", include_str!("../../shims/cargo.json")),
    ("cat.json", include_str!("../../shims/cat.json")),
    ("chmod.json", include_str!("../../shims/chmod.json")),
    ("chown.json", include_str!("../../shims/chown.json")),
    ("cmake.json", include_str!("../../shims/cmake.json")),
    ("cp.json", include_str!("../../shims/cp.json")),
    ("curl.json", include_str!("../../shims/curl.json")),
    ("cut.json", include_str!("../../shims/cut.json")),
    ("date.json", include_str!("../../shims/date.json")),
    ("dd.json", include_str!("../../shims/dd.json")),
    ("df.json", include_str!("../../shims/df.json")),
    ("diff.json", include_str!("../../shims/diff.json")),
    ("docker.json", include_str!("../../shims/docker.json")),
    ("dpkg.json", include_str!("../../shims/dpkg.json")),
    ("du.json", include_str!("../../shims/du.json")),
    ("env.json", include_str!("../../shims/env.json")),
    ("file.json", include_str!("../../shims/file.json")),
    ("find.json", include_str!("../../shims/find.json")),
    ("gh.json", include_str!("../../shims/gh.json")),
    ("git.json", include_str!("../../shims/git.json")),
    ("go.json", include_str!("../../shims/go.json")),
    ("grep.json", include_str!("../../shims/grep.json")),
    ("gzip.json", include_str!("../../shims/gzip.json")),
    ("head.json", include_str!("../../shims/head.json")),
    ("helm.json", include_str!("../../shims/helm.json")),
    (
        "journalctl.json",
        include_str!("../../shims/journalctl.json"),
    ),
    ("jq.json", include_str!("../../shims/jq.json")),
    ("kill.json", include_str!("../../shims/kill.json")),
    ("kubectl.json", include_str!("../../shims/kubectl.json")),
    ("ln.json", include_str!("../../shims/ln.json")),
    ("ls.json", include_str!("../../shims/ls.json")),
    ("make.json", include_str!("../../shims/make.json")),
    ("mkdir.json", include_str!("../../shims/mkdir.json")),
    ("mv.json", include_str!("../../shims/mv.json")),
    ("nice.json", include_str!("../../shims/nice.json")),
    ("node.json", include_str!("../../shims/node.json")),
    ("npm.json", include_str!("../../shims/npm.json")),
    ("npx.json", include_str!("../../shims/npx.json")),
    ("openssl.json", include_str!("../../shims/openssl.json")),
    ("patch.json", include_str!("../../shims/patch.json")),
    ("pip.json", include_str!("../../shims/pip.json")),
    ("pip3.json", include_str!("../../shims/pip3.json")),
    ("pnpm.json", include_str!("../../shims/pnpm.json")),
    ("ps.json", include_str!("../../shims/ps.json")),
    ("python.json", include_str!("../../shims/python.json")),
    ("python3.json", include_str!("../../shims/python3.json")),
    ("rm.json", include_str!("../../shims/rm.json")),
    ("rmdir.json", include_str!("../../shims/rmdir.json")),
    ("rsync.json", include_str!("../../shims/rsync.json")),
    ("rustc.json", include_str!("../../shims/rustc.json")),
    ("scp.json", include_str!("../../shims/scp.json")),
    ("sed.json", include_str!("../../shims/sed.json")),
    ("sha256sum.json", include_str!("../../shims/sha256sum.json")),
    ("shred.json", include_str!("../../shims/shred.json")),
    ("sleep.json", include_str!("../../shims/sleep.json")),
    ("sort.json", include_str!("../../shims/sort.json")),
    ("ssh.json", include_str!("../../shims/ssh.json")),
    ("stat.json", include_str!("../../shims/stat.json")),
    ("systemctl.json", include_str!("../../shims/systemctl.json")),
    ("tail.json", include_str!("../../shims/tail.json")),
    ("tar.json", include_str!("../../shims/tar.json")),
    ("tee.json", include_str!("../../shims/tee.json")),
    ("terraform.json", include_str!("../../shims/terraform.json")),
    ("timeout.json", include_str!("../../shims/timeout.json")),
    ("touch.json", include_str!("../../shims/touch.json")),
    ("tr.json", include_str!("../../shims/tr.json")),
    ("truncate.json", include_str!("../../shims/truncate.json")),
    ("uniq.json", include_str!("../../shims/uniq.json")),
    ("unzip.json", include_str!("../../shims/unzip.json")),
    ("uv.json", include_str!("../../shims/uv.json")),
    ("wc.json", include_str!("../../shims/wc.json")),
    ("wget.json", include_str!("../../shims/wget.json")),
    ("xargs.json", include_str!("../../shims/xargs.json")),
    ("xz.json", include_str!("../../shims/xz.json")),
    ("yarn.json", include_str!("../../shims/yarn.json")),
    ("yq.json", include_str!("../../shims/yq.json")),
    ("zip.json", include_str!("../../shims/zip.json")),
    ("zstd.json", include_str!("../../shims/zstd.json")),
];

/// The `shimRegistry` recorded for tools whose metadata comes from a built-in shim.
pub const REGISTRY: &str = "builtin";

/// The shipped shim for `name` (`NAME.json`), if atip ships one.
pub(crate) fn get(name: &str) -> Option<&'static str> {
    // Asked for every name on PATH (thousands): a map, built once.
    static BY_NAME: std::sync::OnceLock<std::collections::HashMap<&str, &str>> =
        std::sync::OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            SHIPPED
                .iter()
                .filter_map(|(file, body)| Some((file.strip_suffix(".json")?, *body)))
                .collect()
        })
        .get(name)
        .copied()
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
