//! `registries.json`: the remote registries this machine reads, in the protocol's shape
//! plus `publicKeys`, the minisign keys this machine trusts for each.
//!
//! `$XDG_CONFIG_HOME/agent-tools/registries.json` (the config dir), or the file
//! `ATIP_REGISTRIES` names. A missing file means no registries. Unknown keys are kept as
//! they are when atip rewrites the file (`atip registry add|remove`), which it does
//! atomically. A key listed only in a registry's own manifest is never trusted: only
//! `publicKeys` here are.

use super::sign::TrustedKey;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// File name inside the config dir.
pub const FILE: &str = "registries.json";
/// Priority of a registry that does not state one.
pub const DEFAULT_PRIORITY: i64 = 100;

/// The whole file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RegistriesFile {
    /// The registries, in file order.
    #[serde(default)]
    pub registries: Vec<RemoteRegistry>,
    /// Other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One registry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RemoteRegistry {
    /// Name: letters, digits, `.`, `_`, `-`; names its cache directory.
    pub name: String,
    /// Base URL of the static tree (`…/.well-known/atip-registry.json` lives under it).
    pub url: String,
    /// Read by scans and syncs.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Lower numbers are consulted first when several registries offer the same binary.
    #[serde(default = "default_priority")]
    pub priority: i64,
    /// Refuse shims (and the catalog) without a valid signature by a `publicKeys` key.
    #[serde(default)]
    pub require_signatures: bool,
    /// How to authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<Auth>,
    /// Minisign public keys (base64, as in a `.pub` file's second line) this machine
    /// trusts to sign this registry's shims.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub public_keys: Vec<String>,
    /// Other keys, kept as they are.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `auth` of a registry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Auth {
    /// Only `bearer`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Environment variable holding the token (never the token itself).
    pub token_env_var: String,
}

fn yes() -> bool {
    true
}

fn default_priority() -> i64 {
    DEFAULT_PRIORITY
}

/// Whether a registry name is usable (it names a cache directory).
pub(crate) fn is_valid_registry_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with(['.', '-'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Whether plain http to this URL's host stays on this machine.
fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or("");
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

impl RemoteRegistry {
    /// What is wrong with this entry, if anything.
    pub fn check(&self) -> Result<(), String> {
        if !is_valid_registry_name(&self.name) {
            return Err(format!(
                "registry name {:?}: use letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')",
                self.name
            ));
        }
        let url = reqwest::Url::parse(&self.url).map_err(|e| {
            format!(
                "registry {:?}: url {:?} is not a URL: {e}",
                self.name, self.url
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!(
                "registry {:?}: url {:?} is not http(s)",
                self.name, self.url
            ));
        }
        if let Some(a) = &self.auth {
            if a.kind != "bearer" {
                return Err(format!(
                    "registry {:?}: auth.type {:?} is not supported (only \"bearer\")",
                    self.name, a.kind
                ));
            }
            if a.token_env_var.is_empty() {
                return Err(format!(
                    "registry {:?}: auth.tokenEnvVar is empty",
                    self.name
                ));
            }
            if url.scheme() == "http" && !is_loopback(&url) {
                return Err(format!(
                    "registry {:?}: a bearer token would travel over plain http to {}; use https",
                    self.name,
                    url.host_str().unwrap_or("?")
                ));
            }
        }
        self.keys().map(|_| ())
    }

    /// The trusted keys, parsed.
    pub fn keys(&self) -> Result<Vec<TrustedKey>, String> {
        self.public_keys
            .iter()
            .map(|k| {
                TrustedKey::parse(k)
                    .map_err(|e| format!("registry {:?}: publicKeys entry {k:?}: {e}", self.name))
            })
            .collect()
    }

    /// The URL of a path inside the tree (`shims/index.json`).
    pub(crate) fn url_of(&self, rel: &str) -> String {
        format!("{}/{rel}", self.url.trim_end_matches('/'))
    }
}

/// Where `registries.json` is read from: `ATIP_REGISTRIES` of the run's `env` when set,
/// else the config dir.
pub fn path(config_dir: &Path, env: &crate::env::Env) -> PathBuf {
    match env.non_empty("ATIP_REGISTRIES") {
        Some(p) => PathBuf::from(p),
        None => config_dir.join(FILE),
    }
}

impl RegistriesFile {
    /// Reads and checks the file; a missing file is an empty list.
    pub fn load(path: &Path) -> Result<RegistriesFile, String> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(RegistriesFile::default());
            }
            Err(e) => return Err(format!("failed to read {}: {e}", path.display())),
        };
        let file: RegistriesFile = serde_json::from_slice(&bytes)
            .map_err(|e| format!("failed to parse {}: {e}", path.display()))?;
        let mut seen = std::collections::HashSet::new();
        for r in &file.registries {
            r.check().map_err(|m| format!("{}: {m}", path.display()))?;
            if !seen.insert(r.name.as_str()) {
                return Err(format!(
                    "{}: registry {:?} is listed twice",
                    path.display(),
                    r.name
                ));
            }
        }
        Ok(file)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(|e| e.to_string())?;
        bytes.push(b'\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("failed to create {}: {e}", dir.display()))?;
        }
        crate::atomic::write_atomic(path, &bytes, crate::atomic::Options::SHARED)
            .map_err(|e| e.to_string())
    }

    /// The enabled registries, in the order they are consulted: priority, then file
    /// order.
    pub fn active(&self) -> Vec<&RemoteRegistry> {
        let mut v: Vec<&RemoteRegistry> = self.registries.iter().filter(|r| r.enabled).collect();
        v.sort_by_key(|r| r.priority);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_checks_and_keeps_unknown_keys() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join(FILE);
        assert!(RegistriesFile::load(&p).unwrap().registries.is_empty());
        std::fs::write(
            &p,
            r#"{"registries": [
                {"name": "b", "url": "https://b.example/reg", "priority": 5, "x-note": 1},
                {"name": "a", "url": "http://127.0.0.1:9/", "auth": {"type": "bearer", "tokenEnvVar": "T"}},
                {"name": "off", "url": "https://c.example", "enabled": false}
            ], "x-top": true}"#,
        )
        .unwrap();
        let f = RegistriesFile::load(&p).unwrap();
        let names: Vec<&str> = f.active().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(
            f.registries[0].url_of("shims/index.json"),
            "https://b.example/reg/shims/index.json"
        );
        f.save(&p).unwrap();
        let again: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        assert_eq!(again["x-top"], true);
        assert_eq!(again["registries"][0]["x-note"], 1);
        assert_eq!(again["registries"][1]["auth"]["tokenEnvVar"], "T");

        for (bad, what) in [
            (
                r#"{"registries": [{"name": "../x", "url": "https://x"}]}"#,
                "registry name",
            ),
            (
                r#"{"registries": [{"name": "x", "url": "ftp://x"}]}"#,
                "not http(s)",
            ),
            (
                r#"{"registries": [{"name": "x", "url": "http://x.example", "auth": {"type": "bearer", "tokenEnvVar": "T"}}]}"#,
                "plain http",
            ),
            (
                r#"{"registries": [{"name": "x", "url": "https://x", "publicKeys": ["nope"]}]}"#,
                "publicKeys",
            ),
            (
                r#"{"registries": [{"name": "x", "url": "https://x"}, {"name": "x", "url": "https://y"}]}"#,
                "twice",
            ),
            (r#"{"registries": 3}"#, "failed to parse"),
        ] {
            std::fs::write(&p, bad).unwrap();
            let e = RegistriesFile::load(&p).unwrap_err();
            assert!(e.contains(what), "{bad}: {e}");
        }
    }
}
