//! Remote registries (protocol 0.6): shims published as a plain static web site,
//! organised by the sha256 of the binaries they describe, and fetched by the machines
//! that have those binaries.
//!
//! - [`sign`]: minisign (Ed25519) keys, signatures and their verification;
//! - [`build`]: `atip registry build`, the publishing side: a directory of shims → the
//!   static tree (manifest, `shims/sha256/<hex>.json`, signatures, catalog);
//! - [`config`]: `registries.json`, the consuming machine's list of registries and the
//!   keys it trusts for each;
//! - [`fetch`]: the HTTP side (conditional requests, timeouts, size caps);
//! - [`manifest`]: `.well-known/atip-registry.json`, checked by `atip registry add`;
//! - [`sync`]: catalogs and shims fetched, verified and cached by hash, and offered
//!   to a scan as one more metadata source (`crate::discover::remote`).
//!
//! The normative description is `spec/registries.md`. Nothing here writes outside the
//! cache dir (consumer) or the output dir (publisher).

pub mod build;
pub mod config;
pub mod fetch;
pub mod manifest;
pub mod sign;
pub mod sync;

/// Path of the manifest inside a registry tree.
pub const MANIFEST_PATH: &str = ".well-known/atip-registry.json";
/// Path of the catalog inside a registry tree.
pub const INDEX_PATH: &str = "shims/index.json";
/// Directory of the content-addressed shims inside a registry tree.
pub const SHIMS_PATH: &str = "shims/sha256";
/// Suffix of a minisign signature file, beside the file it signs.
pub const SIG_SUFFIX: &str = ".minisig";
/// Version of the manifest and catalog formats atip writes and reads.
pub const FORMAT: &str = "1";

pub(crate) use crate::digest::is_hex64;

/// This machine's platform in the protocol's spelling (`linux-amd64`, `darwin-arm64`).
pub(crate) fn local_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        o => o,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        a => a,
    };
    format!("{os}-{arch}")
}

/// Writes `bytes` to `path` atomically ([`crate::atomic`], the cache options: no fsync —
/// registry trees and caches are rebuilt or re-fetched, and every reader checks what it
/// reads by hash), creating the directory first.
pub(crate) fn write_replace(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(crate::atomic::parent_dir(path))?;
    crate::atomic::write_atomic(path, bytes, crate::atomic::Options::CACHE).map_err(|e| e.source)
}
