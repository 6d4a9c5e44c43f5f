//! The registry manifest (`.well-known/atip-registry.json`), read by `atip registry add`
//! to make sure a URL serves an ATIP registry tree before it is saved, and to tell the
//! user which keys sign it.
//!
//! Sync does not read it: the tree's layout is fixed (spec/registries.md), so a run costs
//! no request beyond the catalog and the shims. The signers a manifest lists are shown,
//! never trusted: only keys in `registries.json` are.

use super::fetch::{FetchError, Http, Response};
use super::{FORMAT, MANIFEST_PATH};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// Largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// What `registry add` reports of a manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The registry's own name for itself.
    pub name: String,
    /// Protocol version it serves (`0.6`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `minisign` or `none`.
    pub signatures: String,
    /// Key ids of the keys it says sign the tree.
    pub signers: Vec<String>,
    /// Number of shims, as the manifest states it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shims: Option<u64>,
}

/// Why no manifest could be used.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The request failed (unreachable, timeout, HTTP status, not found, too large).
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// No HTTP client to ask with.
    #[error(transparent)]
    Client(#[from] super::fetch::ClientError),
    /// The file is there but is not a manifest atip can read.
    #[error("{url}: {source}")]
    Invalid {
        /// Where it was fetched from.
        url: String,
        /// What is wrong with it.
        #[source]
        source: Invalid,
    },
    /// The server answered 304 to a request that had no validators.
    #[error("{url}: 304 to an unconditional request")]
    NotModified {
        /// The manifest's URL.
        url: String,
    },
}

/// What makes a file not a manifest this atip reads.
#[derive(Debug, thiserror::Error)]
pub enum Invalid {
    /// Not JSON.
    #[error("not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// Another format version.
    #[error("atipRegistry is {0}; this atip reads format \"{FORMAT}\"")]
    Format(Value),
    /// No `atipRegistry` member.
    #[error("no atipRegistry member: not an ATIP registry manifest")]
    NotManifest,
    /// No usable `name`.
    #[error("name must be a non-empty string")]
    NoName,
}

impl From<ManifestError> for crate::output::AtipError {
    /// `atip registry add` checks the manifest: a URL with no manifest, or an unusable
    /// one, is `registry_manifest_invalid`; one that cannot be reached is
    /// `remote_registry_unreachable`.
    fn from(e: ManifestError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        let skip = "`--no-check` adds it without asking the server";
        match e {
            ManifestError::Fetch(f @ FetchError::NotFound { .. }) => AtipError::new(
                ErrorCode::RegistryManifestInvalid,
                format!("{f}: no ATIP registry manifest there"),
            )
            .hint(format!(
                "give the base URL of a tree made by `atip registry build` (it serves {MANIFEST_PATH}); {skip}"
            )),
            ManifestError::Fetch(_) | ManifestError::Client(_) => {
                AtipError::new(ErrorCode::RemoteRegistryUnreachable, e.to_string())
                    .hint(format!("check the URL and the network; {skip}"))
            }
            ManifestError::Invalid { .. } | ManifestError::NotModified { .. } => {
                AtipError::new(ErrorCode::RegistryManifestInvalid, e.to_string()).hint(format!(
                    "the URL must be the base of a tree made by `atip registry build`; {skip}"
                ))
            }
        }
    }
}

/// Reads a manifest's bytes. Unknown members are ignored (a newer minor format may add
/// some); a different `atipRegistry` format is refused.
pub fn parse(bytes: &[u8]) -> Result<Manifest, Invalid> {
    let v: Value = serde_json::from_slice(bytes).map_err(Invalid::NotJson)?;
    let obj = v.as_object().ok_or(Invalid::NotObject)?;
    match obj.get("atipRegistry") {
        Some(Value::String(f)) if f == FORMAT => {}
        Some(other) => return Err(Invalid::Format(other.clone())),
        None => return Err(Invalid::NotManifest),
    }
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or(Invalid::NoName)?
        .to_string();
    let trust = obj.get("trust").and_then(Value::as_object);
    let signatures = trust
        .and_then(|t| t.get("signatures"))
        .and_then(Value::as_str)
        .unwrap_or("none")
        .to_string();
    let signers = trust
        .and_then(|t| t.get("signers"))
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(|s| s.get("keyId").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Ok(Manifest {
        name,
        protocol: obj
            .get("protocol")
            .and_then(Value::as_str)
            .map(str::to_string),
        signatures,
        signers,
        shims: obj.get("shims").and_then(Value::as_u64),
    })
}

/// Fetches and reads the manifest under `base_url` (one request, `timeout` at most).
pub fn fetch(
    base_url: &str,
    token: Option<&str>,
    timeout: Duration,
) -> Result<Manifest, ManifestError> {
    let url = format!("{}/{MANIFEST_PATH}", base_url.trim_end_matches('/'));
    let http = Http::new(timeout, timeout)?;
    match http.get(&url, None, token, MAX_MANIFEST_BYTES)? {
        Response::Body { bytes, .. } => {
            parse(&bytes).map_err(|source| ManifestError::Invalid { url, source })
        }
        Response::NotModified { .. } => Err(ManifestError::NotModified { url }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_build_writes_and_refuses_other_files() {
        let m = parse(
            br#"{"atipRegistry": "1", "name": "team", "protocol": "0.6", "x-new": 1,
                 "trust": {"signatures": "minisign", "signers": [{"type": "minisign", "keyId": "ABCD", "publicKey": "k"}]},
                 "shims": 3}"#,
        )
        .unwrap();
        assert_eq!(m.name, "team");
        assert_eq!(m.signatures, "minisign");
        assert_eq!(m.signers, ["ABCD"]);
        assert_eq!(m.shims, Some(3));
        let unsigned = parse(br#"{"atipRegistry": "1", "name": "t"}"#).unwrap();
        assert_eq!(
            (unsigned.signatures.as_str(), unsigned.signers.len()),
            ("none", 0)
        );
        assert!(matches!(parse(b"<html>"), Err(Invalid::NotJson(_))));
        assert!(
            parse(br#"{"name": "t"}"#)
                .unwrap_err()
                .to_string()
                .contains("no atipRegistry")
        );
        assert!(
            parse(br#"{"atipRegistry": "2", "name": "t"}"#)
                .unwrap_err()
                .to_string()
                .contains("format \"1\"")
        );
        assert!(
            parse(br#"{"atipRegistry": "1"}"#)
                .unwrap_err()
                .to_string()
                .contains("name")
        );
    }
}
