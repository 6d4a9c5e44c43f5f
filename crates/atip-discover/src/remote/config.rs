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

/// What is wrong with `registries.json` or one of its entries; each message names the
/// registry (and the file) it is about.
#[derive(Debug, thiserror::Error)]
pub enum RegistriesError {
    /// A name that cannot name a cache directory.
    #[error(
        "registry name {0:?}: use letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')"
    )]
    Name(String),
    /// `url` does not parse.
    #[error("registry {name:?}: url {url:?} is not a URL: {source}")]
    Url {
        /// The registry.
        name: String,
        /// Its `url`.
        url: String,
        /// Why it does not parse.
        #[source]
        source: url::ParseError,
    },
    /// `url` is not http(s).
    #[error("registry {name:?}: url {url:?} is not http(s)")]
    Scheme {
        /// The registry.
        name: String,
        /// Its `url`.
        url: String,
    },
    /// `auth.type` other than `bearer`.
    #[error("registry {name:?}: auth.type {kind:?} is not supported (only \"bearer\")")]
    AuthType {
        /// The registry.
        name: String,
        /// Its `auth.type`.
        kind: String,
    },
    /// `auth.tokenEnvVar` is empty.
    #[error("registry {0:?}: auth.tokenEnvVar is empty")]
    NoTokenVar(String),
    /// A token would be sent in the clear to another machine.
    #[error("registry {name:?}: a bearer token would travel over plain http to {host}; use https")]
    PlainHttpToken {
        /// The registry.
        name: String,
        /// The host it would go to.
        host: String,
    },
    /// A `publicKeys` entry is not a minisign public key.
    #[error("registry {name:?}: publicKeys entry {key:?}: {source}")]
    PublicKey {
        /// The registry.
        name: String,
        /// The entry.
        key: String,
        /// Why it is not a key.
        #[source]
        source: super::sign::KeyError,
    },
    /// The token variable a registry names is not set in this run's environment.
    #[error("registry {name:?}: the token variable {var} is not set")]
    TokenUnset {
        /// The registry.
        name: String,
        /// The variable.
        var: String,
    },
    /// The file cannot be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON of the right shape.
    #[error("failed to parse {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// An entry of the file is wrong.
    #[error("{}: {source}", path.display())]
    Entry {
        /// The file.
        path: PathBuf,
        /// What is wrong with the entry.
        #[source]
        source: Box<RegistriesError>,
    },
    /// Two entries have the same name.
    #[error("{}: registry {name:?} is listed twice", path.display())]
    Duplicate {
        /// The file.
        path: PathBuf,
        /// The name.
        name: String,
    },
    /// The file's directory cannot be created.
    #[error("failed to create {}: {source}", dir.display())]
    CreateDir {
        /// The directory.
        dir: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file cannot be written (the old one is untouched).
    #[error(transparent)]
    Write(#[from] crate::atomic::WriteError),
}

impl From<RegistriesError> for crate::output::AtipError {
    /// A file that cannot be written is `file_write_failed`; everything else is
    /// `registries_invalid` (exit 78).
    fn from(e: RegistriesError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        match e {
            RegistriesError::CreateDir { .. } | RegistriesError::Write(_) => {
                AtipError::new(ErrorCode::FileWriteFailed, e.to_string())
            }
            _ => AtipError::new(ErrorCode::RegistriesInvalid, e.to_string())
                .hint("fix registries.json, e.g. {\"registries\": [{\"name\": \"team\", \"url\": \"https://example.org/atip\"}]}"),
        }
    }
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
    pub fn check(&self) -> Result<(), RegistriesError> {
        let name = || self.name.clone();
        if !is_valid_registry_name(&self.name) {
            return Err(RegistriesError::Name(name()));
        }
        let url = reqwest::Url::parse(&self.url).map_err(|source| RegistriesError::Url {
            name: name(),
            url: self.url.clone(),
            source,
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(RegistriesError::Scheme {
                name: name(),
                url: self.url.clone(),
            });
        }
        if let Some(a) = &self.auth {
            if a.kind != "bearer" {
                return Err(RegistriesError::AuthType {
                    name: name(),
                    kind: a.kind.clone(),
                });
            }
            if a.token_env_var.is_empty() {
                return Err(RegistriesError::NoTokenVar(name()));
            }
            if url.scheme() == "http" && !is_loopback(&url) {
                return Err(RegistriesError::PlainHttpToken {
                    name: name(),
                    host: url.host_str().unwrap_or("?").to_owned(),
                });
            }
        }
        self.keys().map(|_| ())
    }

    /// The trusted keys, parsed.
    pub fn keys(&self) -> Result<Vec<TrustedKey>, RegistriesError> {
        self.public_keys
            .iter()
            .map(|k| {
                TrustedKey::parse(k).map_err(|source| RegistriesError::PublicKey {
                    name: self.name.clone(),
                    key: k.clone(),
                    source,
                })
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
    pub fn load(path: &Path) -> Result<RegistriesFile, RegistriesError> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(RegistriesFile::default());
            }
            Err(source) => {
                return Err(RegistriesError::Read {
                    path: path.to_owned(),
                    source,
                });
            }
        };
        let file: RegistriesFile =
            serde_json::from_slice(&bytes).map_err(|source| RegistriesError::Parse {
                path: path.to_owned(),
                source,
            })?;
        let mut seen = std::collections::HashSet::new();
        for r in &file.registries {
            r.check().map_err(|e| RegistriesError::Entry {
                path: path.to_owned(),
                source: Box::new(e),
            })?;
            if !seen.insert(r.name.as_str()) {
                return Err(RegistriesError::Duplicate {
                    path: path.to_owned(),
                    name: r.name.clone(),
                });
            }
        }
        Ok(file)
    }

    /// Writes the file atomically.
    pub fn save(&self, path: &Path) -> Result<(), RegistriesError> {
        // Serializing strings, numbers and maps of JSON values cannot fail.
        let mut bytes = serde_json::to_vec_pretty(self).expect("registries.json serializes");
        bytes.push(b'\n');
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| RegistriesError::CreateDir {
                dir: dir.to_owned(),
                source,
            })?;
        }
        Ok(crate::atomic::write_atomic(
            path,
            &bytes,
            crate::atomic::Options::SHARED,
        )?)
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
            let e = RegistriesFile::load(&p).unwrap_err().to_string();
            assert!(e.contains(what), "{bad}: {e}");
        }
    }
}
