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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ManifestError {
    /// The request failed (unreachable, timeout, HTTP status, not found, too large).
    Fetch(FetchError),
    /// The file is there but is not a manifest atip can read.
    Invalid(String),
}

/// Reads a manifest's bytes. Unknown members are ignored (a newer minor format may add
/// some); a different `atipRegistry` format is refused.
pub fn parse(bytes: &[u8]) -> Result<Manifest, String> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    let obj = v.as_object().ok_or("not a JSON object")?;
    match obj.get("atipRegistry") {
        Some(Value::String(f)) if f == FORMAT => {}
        Some(other) => {
            return Err(format!(
                "atipRegistry is {other}; this atip reads format \"{FORMAT}\""
            ));
        }
        None => return Err("no atipRegistry member: not an ATIP registry manifest".into()),
    }
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("name must be a non-empty string")?
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
    let http = Http::new(timeout, timeout).map_err(ManifestError::Invalid)?;
    match http.get(&url, None, token, MAX_MANIFEST_BYTES) {
        Ok(Response::Body { bytes, .. }) => {
            parse(&bytes).map_err(|m| ManifestError::Invalid(format!("{url}: {m}")))
        }
        Ok(Response::NotModified { .. }) => Err(ManifestError::Invalid(format!(
            "{url}: 304 to an unconditional request"
        ))),
        Err(e) => Err(ManifestError::Fetch(e)),
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
        assert!(parse(b"<html>").unwrap_err().contains("not JSON"));
        assert!(
            parse(br#"{"name": "t"}"#)
                .unwrap_err()
                .contains("no atipRegistry")
        );
        assert!(
            parse(br#"{"atipRegistry": "2", "name": "t"}"#)
                .unwrap_err()
                .contains("format \"1\"")
        );
        assert!(
            parse(br#"{"atipRegistry": "1"}"#)
                .unwrap_err()
                .contains("name")
        );
    }
}
