//! Trust as atip derives it, never as a tool declares it.
//!
//! A document's `trust` block (`source: vendor`, `verified: true`, a signature) is a
//! claim: any binary can print it. What atip knows is who put the metadata there (the
//! registry entry's [`Vouch`]) and what it could check itself: whether a declared
//! checksum, or the hash a content-addressed shim is filed under, matches the binary it
//! hashed. From these it derives the protocol's trust level, which is what the policy's
//! trust floor acts on. Must not read files or decide policy.

use crate::model::Metadata;
use crate::registry::{Entry, Source, Vouch};
use serde::Serialize;

/// The protocol's trust levels atip can reach, lowest first. (`PROVENANCE_FAIL` needs a
/// provenance check atip does not do, so it never arises.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    /// A declared checksum does not match the binary: never run.
    Compromised,
    /// Nothing claims integrity.
    Unsigned,
    /// Something is claimed (a signature, provenance, `verified: true`, a checksum the tool
    /// declares about itself) that atip did not or could not verify.
    Unverified,
    /// atip itself checked that metadata vouched for by someone other than the tool
    /// describes exactly this binary (declared checksum or content-addressed shim).
    Verified,
}

impl TrustLevel {
    /// Every level a policy may name as its floor, lowest first.
    pub const FLOORS: [&'static str; 3] = ["unsigned", "unverified", "verified"];

    /// The name as written in policy files.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Compromised => "compromised",
            TrustLevel::Unsigned => "unsigned",
            TrustLevel::Unverified => "unverified",
            TrustLevel::Verified => "verified",
        }
    }

    /// Parses a floor name (`compromised` is not a floor).
    pub(crate) fn parse_floor(s: &str) -> Option<TrustLevel> {
        match s {
            "unsigned" => Some(TrustLevel::Unsigned),
            "unverified" => Some(TrustLevel::Unverified),
            "verified" => Some(TrustLevel::Verified),
            _ => None,
        }
    }
}

/// What the policy's trust rules look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TrustFacts {
    /// The derived level.
    pub level: TrustLevel,
    /// Who vouches for the metadata.
    pub vouch: Vouch,
    /// Why that level, in words.
    pub why: String,
}

/// The declared `sha256:<hex>` checksum of the binary, when the document declares one:
/// `trust.integrity.checksum`, or a content-addressed shim's `binary.hash`. Other
/// algorithms are returned as they are (they cannot be checked).
fn declared_checksums(meta: &Metadata) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = meta
        .trust
        .as_ref()
        .and_then(|t| t.integrity.as_ref())
        .and_then(|i| i.get("checksum"))
        .and_then(|c| c.as_str())
    {
        out.push(c.trim().to_ascii_lowercase());
    }
    if let Some(h) = meta.binary.as_ref().and_then(|b| b.hash.as_deref()) {
        out.push(h.trim().to_ascii_lowercase());
    }
    out
}

/// Derives the trust of a registry entry from facts: who vouches for its metadata, and
/// whether what the metadata says about the binary matches the hash atip computed.
pub(crate) fn derive(meta: &Metadata, entry: &Entry, vouch: Vouch) -> TrustFacts {
    let declared = declared_checksums(meta);
    // A name-found entry pins no hash: one is computed here only when the document
    // declares a checksum to compare (unreadable: nothing matches it).
    let actual = match &entry.hash {
        Some(h) => h.to_ascii_lowercase(),
        None if declared.is_empty() => String::new(),
        None => crate::digest::sha256_file(&entry.path).unwrap_or_default(),
    };
    let mut bound = matches!(entry.source, Source::ShimHash | Source::Remote);
    let mut unverifiable = false;
    for c in declared {
        if c.starts_with("sha256:") {
            if c != actual {
                return TrustFacts {
                    level: TrustLevel::Compromised,
                    vouch,
                    why: if actual.is_empty() {
                        format!(
                            "the metadata declares checksum {c} but the binary cannot be read to compare"
                        )
                    } else {
                        format!("the metadata declares checksum {c} but the binary's is {actual}")
                    },
                };
            }
            bound = true;
        } else {
            unverifiable = true;
        }
    }
    let claims = meta.trust.as_ref().is_some_and(|t| {
        t.verified == Some(true)
            || t.provenance.is_some()
            || t.shim_integrity.is_some()
            || t.integrity
                .as_ref()
                .is_some_and(|i| i.get("signature").is_some())
    });
    let (level, why) = if entry.source == Source::Remote && vouch <= Vouch::Tool {
        // Its file name binds it to this binary, but nobody this machine trusts signed
        // it: anyone who can write to the registry could have published it.
        (
            TrustLevel::Unsigned,
            format!(
                "a remote shim ({}) that no key in registries.json signed",
                entry.shim_registry.as_deref().unwrap_or("remote")
            ),
        )
    } else if bound && vouch > Vouch::Tool {
        (
            TrustLevel::Verified,
            format!(
                "atip checked that metadata vouched for by {} describes exactly this binary ({actual})",
                vouch.as_str()
            ),
        )
    } else if bound || claims || unverifiable {
        (
            TrustLevel::Unverified,
            if bound {
                "the only checksum comes from the tool itself, which proves nothing".to_string()
            } else {
                "the metadata claims integrity (signature, provenance, verified or checksum) that atip did not verify".to_string()
            },
        )
    } else {
        (
            TrustLevel::Unsigned,
            "nothing ties the metadata to the binary".to_string(),
        )
    };
    TrustFacts { level, vouch, why }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(source: Source, hash: &str) -> Entry {
        serde_json::from_value(json!({
            "path": "/usr/bin/t", "hash": hash, "source": source, "lastChecked": "2026-01-01T00:00:00Z",
            "description": "t", "atip": "0.6", "trust": "vendor", "effects": "", "commands": 1,
            "metadata": format!("tools/{}.json", "0".repeat(64)),
        }))
        .unwrap()
    }

    fn meta(v: serde_json::Value) -> Metadata {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn levels() {
        let h = format!("sha256:{}", "a".repeat(64));
        let other = format!("sha256:{}", "b".repeat(64));
        let plain = meta(json!({"atip": "0.6", "name": "t", "version": "1", "description": "t"}));
        let e = entry(Source::Native, &h);
        assert_eq!(derive(&plain, &e, Vouch::Tool).level, TrustLevel::Unsigned);
        let liar = meta(
            json!({"atip": "0.6", "name": "t", "version": "1", "description": "t",
            "trust": {"source": "vendor", "verified": true}}),
        );
        assert_eq!(derive(&liar, &e, Vouch::Tool).level, TrustLevel::Unverified);
        let own_sum = meta(
            json!({"atip": "0.6", "name": "t", "version": "1", "description": "t",
            "trust": {"integrity": {"checksum": h}}}),
        );
        assert_eq!(
            derive(&own_sum, &e, Vouch::Tool).level,
            TrustLevel::Unverified
        );
        assert_eq!(
            derive(&own_sum, &e, Vouch::Admin).level,
            TrustLevel::Verified
        );
        let wrong = meta(
            json!({"atip": "0.6", "name": "t", "version": "1", "description": "t",
            "trust": {"integrity": {"checksum": other}}}),
        );
        assert_eq!(
            derive(&wrong, &e, Vouch::Builtin).level,
            TrustLevel::Compromised
        );
        let by_hash = entry(Source::ShimHash, &h);
        assert_eq!(
            derive(&plain, &by_hash, Vouch::User).level,
            TrustLevel::Verified
        );
        assert_eq!(
            derive(&plain, &by_hash, Vouch::Inferred).level,
            TrustLevel::Unverified
        );
        // Remote shims: signed by a trusted key → verified; unsigned → unsigned, even
        // when the document claims more; a checksum that lies is still compromised.
        let remote = entry(Source::Remote, &h);
        assert_eq!(
            derive(&plain, &remote, Vouch::User).level,
            TrustLevel::Verified
        );
        assert_eq!(
            derive(&plain, &remote, Vouch::Inferred).level,
            TrustLevel::Unsigned
        );
        assert_eq!(
            derive(&liar, &remote, Vouch::Inferred).level,
            TrustLevel::Unsigned
        );
        assert_eq!(
            derive(&wrong, &remote, Vouch::User).level,
            TrustLevel::Compromised
        );
    }
}
