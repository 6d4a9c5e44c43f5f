//! The table of built-in shims: `shims/*.json` (at the repository root) are compiled into
//! this crate with each file's sha256 and the two fields a scan needs before it reads a
//! shim (the tool it names and its `trust.source`), so a warm rescan neither hashes nor
//! parses the ~1 MB of shipped JSON on every run (it did: ~10 % of a warm rescan's time).
//! The table is `$OUT_DIR/builtin_shims.rs`, included by `src/discover/builtin.rs`, whose
//! tests check it against the files. Also the sha256 of the curated effects table
//! (`$OUT_DIR/effects_digest.rs`, for `src/infer/curated.rs`).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    builtin_shims();
    effects_digest();
}

/// Writes `$OUT_DIR/effects_digest.rs`: the sha256 hex of `src/infer/effects.json`
/// (the curated effects table), so that a scan does not hash the 68 KB table on every
/// run to compare it with the inference cache's. `infer::curated`'s tests check it.
fn effects_digest() {
    use sha2::Digest;
    use std::path::PathBuf;
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let table = root.join("src/infer/effects.json");
    println!("cargo:rerun-if-changed={}", table.display());
    let body =
        std::fs::read(&table).unwrap_or_else(|e| panic!("cannot read {}: {e}", table.display()));
    let sha: String = sha2::Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let target =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo")).join("effects_digest.rs");
    std::fs::write(&target, format!("{sha:?}\n"))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
}

/// Writes `$OUT_DIR/builtin_shims.rs`: one `Shipped` per `shims/*.json`, sorted by tool
/// name, and `$OUT_DIR/builtin_stems.rs`: the tool names alone, in the same order. A shim that is not a JSON object stops the build (shipped shims must be valid;
/// the unit tests check them in full).
fn builtin_shims() {
    use sha2::Digest;
    use std::fmt::Write as _;
    use std::path::PathBuf;
    println!("cargo:rerun-if-changed=shims");
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let dir = root.join("../../shims");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a readable shims/ entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    // Sorted by tool name (the file stem), which the look-up's binary search relies on
    // (by file name, `apt-get.json` would sort before `apt.json`).
    files.sort_by(|a, b| a.file_stem().cmp(&b.file_stem()));
    let mut out = String::from("&[\n");
    let mut stems = String::from("&[\n");
    for path in &files {
        let file = path
            .file_name()
            .and_then(|n| n.to_str())
            .expect("UTF-8 shim file name");
        let body =
            std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let value: serde_json::Value = serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
        assert!(
            value.is_object(),
            "{} must hold a JSON object",
            path.display()
        );
        let text = |ptr: &str| {
            value
                .pointer(ptr)
                .and_then(|v| v.as_str())
                .map(str::to_owned)
        };
        let tool = text("/binary/name").or_else(|| text("/name"));
        let trust = text("/trust/source");
        let sha: String = sha2::Sha256::digest(&body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let stem = file.strip_suffix(".json").unwrap_or(file);
        writeln!(stems, "    {stem:?},").expect("writing to a String");
        let path_text = path.to_str().expect("UTF-8 shim path");
        writeln!(
            out,
            "    Shipped {{ file: {file:?}, body: include_str!({path_text:?}), sha256: {sha:?}, tool: {tool:?}, trust: {trust:?} }},"
        )
        .expect("writing to a String");
    }
    out.push_str("]\n");
    stems.push_str("]\n");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    for (name, text) in [("builtin_shims.rs", out), ("builtin_stems.rs", stems)] {
        let target = out_dir.join(name);
        std::fs::write(&target, text)
            .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
    }
}
