//! The compiled catalog (`catalog.bin`, spec/catalog.md): written with the registry,
//! used by `atip search`, never trusted when missing, stale, truncated, corrupt, from
//! another version or keyed to another registry — each case is detected, noted on stderr
//! and rebuilt. A property test checks that the catalog answers exactly as the JSON path
//! does: names, schemas, effects and search results.

use crate::common::tools::register;
use crate::common::{Sandbox, show};
use atip::catalog::{self, Compiled};
use atip::compile::{Catalog, FlattenOptions};
use atip::dirs::Dirs;
use atip::model::Metadata;
use atip::search::SearchOptions;
use proptest::prelude::*;
use serde_json::{Value, json};
use sha2::Digest;
use std::path::Path;

fn tool(name: &str, verb: &str) -> Value {
    json!({"atip": {"version": "0.6"}, "name": name, "version": "1", "description": format!("The {name} tool"),
        "commands": {
            "bucket": {"description": "Work with storage buckets", "commands": {
                verb: {"description": format!("{verb} a storage bucket"),
                       "effects": {"destructive": verb == "delete"},
                       "arguments": [{"name": "bucket", "type": "string", "description": "Bucket name"}]},
                "list": {"description": "List storage buckets", "effects": {"destructive": false}}}},
            "login": {"description": "Log in", "effects": {"interactive": {"tty": true}}}}})
}

fn sandbox() -> Sandbox {
    sandbox_with("#!/bin/sh\necho\n")
}

/// Two registered tools, `store` (run by `store_script`) and `vault`.
fn sandbox_with(store_script: &str) -> Sandbox {
    let sb = Sandbox::new();
    register(
        &sb,
        "store",
        &tool("store", "create"),
        store_script,
        "native",
    );
    register(
        &sb,
        "vault",
        &tool("vault", "delete"),
        "#!/bin/sh\necho\n",
        "native",
    );
    sb
}

/// `atip --output json search QUERY`: (results, stderr).
fn search(sb: &Sandbox, query: &str) -> (Value, String) {
    let out = sb
        .atip()
        .args(["--output", "json", "search", query])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn catalog_file(sb: &Sandbox) -> std::path::PathBuf {
    sb.data_dir().join(catalog::FILE)
}

fn registry_key(sb: &Sandbox) -> [u8; 32] {
    catalog::registry_key(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
}

/// The first search compiles the catalog (the registry was written by hand); returns
/// the results a sound catalog gives.
fn compiled(sb: &Sandbox) -> Value {
    // A missing catalog is compiled quietly (a line with --verbose).
    let out = sb
        .atip()
        .args(["--verbose", "--output", "json", "search", "create bucket"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is missing"),
        "{}",
        show(&out)
    );
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(Compiled::open(&catalog_file(sb), &registry_key(sb)).is_ok());
    let (again, err) = search(sb, "create bucket");
    assert!(
        !err.contains("catalog"),
        "a sound catalog is used quietly: {err}"
    );
    assert_eq!(first, again);
    assert_eq!(again["results"][0]["name"], "store_bucket_create");
    again
}

/// Damages the catalog, then checks that the next search says why, answers as before
/// and leaves a sound catalog behind.
fn detected_and_rebuilt(sb: &Sandbox, expected: &Value, why: &str) {
    let (got, err) = search(sb, "create bucket");
    assert!(err.contains(why), "wanted {why:?} in: {err}");
    assert!(err.contains("compiling it again"), "{err}");
    assert_eq!(&got, expected);
    Compiled::open(&catalog_file(sb), &registry_key(sb)).expect("rebuilt and saved");
    let (_, err) = search(sb, "create bucket");
    assert!(!err.contains("catalog"), "{err}");
}

/// Rewrites the header CRC after a deliberate edit, so that the check under test (not
/// the checksum) is what catches it.
fn reseal(bytes: &mut [u8]) {
    let sections = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let head = 56 + sections * 24;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..48]);
    h.update(&[0; 8]);
    h.update(&bytes[56..head]);
    let crc = h.finalize();
    bytes[48..52].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn a_stale_catalog_is_rebuilt_when_the_registry_changes_behind_it() {
    let sb = sandbox();
    compiled(&sb);
    // Registered behind atip's back: registry.json no longer hashes to the catalog's key.
    register(
        &sb,
        "extra",
        &tool("extra", "purge"),
        "#!/bin/sh\necho\n",
        "native",
    );
    let (got, err) = search(&sb, "purge bucket");
    assert!(err.contains("is stale"), "{err}");
    assert_eq!(got["results"][0]["name"], "extra_bucket_purge");
    Compiled::open(&catalog_file(&sb), &registry_key(&sb)).expect("rebuilt for the new registry");
}

#[test]
fn a_truncated_catalog_is_detected_and_rebuilt() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let bytes = std::fs::read(catalog_file(&sb)).unwrap();
    for cut in [bytes.len() - 1, bytes.len() / 2, 100, 3] {
        std::fs::write(catalog_file(&sb), &bytes[..cut]).unwrap();
        detected_and_rebuilt(&sb, &expected, "is truncated");
    }
}

#[test]
fn a_catalog_from_another_version_is_detected_and_rebuilt() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let mut bytes = std::fs::read(catalog_file(&sb)).unwrap();
    bytes[8..12].copy_from_slice(&(catalog::FORMAT + 1).to_le_bytes());
    reseal(&mut bytes);
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    detected_and_rebuilt(
        &sb,
        &expected,
        &format!("was written by catalog format {}", catalog::FORMAT + 1),
    );
}

#[test]
fn a_catalog_claiming_another_registry_hash_is_detected_and_rebuilt() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let mut bytes = std::fs::read(catalog_file(&sb)).unwrap();
    bytes[16] ^= 0xff;
    reseal(&mut bytes);
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    detected_and_rebuilt(&sb, &expected, "is stale");
}

#[test]
fn a_corrupt_catalog_is_detected_and_rebuilt() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let good = std::fs::read(catalog_file(&sb)).unwrap();
    // Garbage in its place; then one flipped bit in the header, then in a table.
    std::fs::write(catalog_file(&sb), b"{\"not\": \"a catalog\"}").unwrap();
    detected_and_rebuilt(&sb, &expected, "is corrupt (not a catalog file)");
    let mut bytes = good.clone();
    bytes[12] ^= 1;
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    detected_and_rebuilt(&sb, &expected, "header checksum mismatch");
    let mut bytes = good.clone();
    // A byte of the first section (its offset is the first entry of the section table).
    let first = u64::from_le_bytes(good[56..64].try_into().unwrap()) as usize;
    bytes[first + 2] ^= 1;
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    detected_and_rebuilt(&sb, &expected, "checksum mismatch");
    // A damaged record is found when it is read: that search falls back to registry.json.
    // (The top hit's record is the last place its name occurs: records come last.)
    let mut bytes = good;
    let name = b"\"store_bucket_create\"";
    let at = bytes.windows(name.len()).rposition(|w| w == name).unwrap();
    bytes[at + 1] = b'S';
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    let (got, err) = search(&sb, "create bucket");
    assert!(
        err.contains("checksum mismatch") && err.contains("searching registry.json instead"),
        "{err}"
    );
    assert_eq!(got, expected);
}

#[test]
fn scan_writes_the_catalog_with_the_registry() {
    let sb = Sandbox::new();
    scanned_tool(&sb, "scanned", "create");
    let out = scan(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    Compiled::open(&catalog_file(&sb), &registry_key(&sb)).expect("scan wrote a sound catalog");
    let (got, err) = search(&sb, "create bucket");
    assert!(!err.contains("catalog"), "{err}");
    assert_eq!(got["results"][0]["name"], "scanned_bucket_create");
}

/// A scan that has a tool written as `bin/NAME`, answering `--agent` with `tool(NAME, verb)`.
fn scanned_tool(sb: &Sandbox, name: &str, verb: &str) {
    let meta = tool(name, verb);
    sb.script(
        &format!("bin/{name}"),
        &format!(
            "#!/bin/sh\n# \"atip\" --agent\nif [ \"$1\" = --agent ]; then cat <<'EOF'\n{meta}\nEOF\nexit 0; fi\necho\n"
        ),
    );
}

fn scan(sb: &Sandbox) -> std::process::Output {
    sb.atip()
        .args(["scan", "--timeout", "5s", "--path"])
        .arg(sb.path().join("bin"))
        .output()
        .unwrap()
}

/// The commit compiles the catalog beside writing the metadata files: when those writes
/// fail, the catalog compiled for the index that was never written must not replace
/// the one on disk, and no temp file is left behind.
#[test]
fn a_failed_commit_leaves_the_catalog_as_it_was() {
    let sb = Sandbox::new();
    scanned_tool(&sb, "first", "create");
    let out = scan(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let before = std::fs::read(catalog_file(&sb)).unwrap();
    let registry_before = std::fs::read(sb.data_dir().join("registry.json")).unwrap();

    // A second tool to store, and a `tools` that is a file: its metadata cannot be written.
    scanned_tool(&sb, "second", "delete");
    let tools = sb.data_dir().join("tools");
    std::fs::remove_dir_all(&tools).unwrap();
    std::fs::write(&tools, b"not a directory").unwrap();
    let out = scan(&sb);
    assert_ne!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(std::fs::read(catalog_file(&sb)).unwrap(), before);
    assert_eq!(
        std::fs::read(sb.data_dir().join("registry.json")).unwrap(),
        registry_before
    );
    let leftovers: Vec<_> = std::fs::read_dir(sb.data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".atip-tmp-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // Once the files can be written, the catalog is that of the new registry.
    std::fs::remove_file(&tools).unwrap();
    let out = scan(&sb);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    Compiled::open(&catalog_file(&sb), &registry_key(&sb)).expect("a sound catalog");
    let (got, _) = search(&sb, "delete bucket");
    assert_eq!(got["results"][0]["name"], "second_bucket_delete");
}

#[test]
fn exec_takes_the_command_from_the_catalog_and_still_refuses_an_edited_document() {
    let sb = sandbox_with("#!/bin/sh\necho ran \"$@\"\n");
    let exec = |name: &str| {
        sb.atip()
            .args([
                "--output",
                "json",
                "exec",
                "--yes",
                name,
                "--args",
                r#"{"bucket":"b"}"#,
            ])
            .output()
            .unwrap()
    };
    let out = exec("store_bucket_create");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        catalog_file(&sb).exists(),
        "the first call compiled and saved it"
    );
    let out = exec("store_bucket_create");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("catalog"),
        "{}",
        show(&out)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["data"]["stdout"], "ran bucket create b\n");
    // A close name is not in the catalog: the JSON path suggests the right one.
    let out = exec("store_bucket_creat");
    assert_eq!(out.status.code(), Some(66), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("store_bucket_create"),
        "{}",
        show(&out)
    );
    // The catalog is sound for registry.json, but the document was edited on disk.
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let file = sb
        .data_dir()
        .join(reg["tools"]["store"]["metadata"].as_str().unwrap());
    let text = std::fs::read_to_string(&file)
        .unwrap()
        .replace("Bucket name", "Bucket");
    std::fs::write(&file, text).unwrap();
    let out = exec("store_bucket_create");
    assert_eq!(out.status.code(), Some(65), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("metadata_tampered"),
        "{}",
        show(&out)
    );
}

/// Offset and length of section `i` of a catalog's bytes (from its section table).
fn section_of(bytes: &[u8], i: usize) -> (usize, usize) {
    let row = 56 + i * 24;
    let at = u64::from_le_bytes(bytes[row..row + 8].try_into().unwrap()) as usize;
    let len = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
    (at, len)
}

/// `atip exec NAME` looks one name up: it reads and checks only the name entries its
/// binary search visits, that row's document and its record (spec/catalog.md, format 4).
/// Damage in any of them — also with the entry's checksum made right again — is noted,
/// the catalog compiled again and saved, and the call answered as from a sound one.
#[test]
fn exec_checks_what_its_lookup_reads_and_refuses_damage_there() {
    let sb = sandbox_with("#!/bin/sh\necho ran \"$@\"\n");
    let exec = || {
        let out = sb
            .atip()
            .args([
                "--output",
                "json",
                "exec",
                "--yes",
                "store_bucket_create",
                "--args",
                r#"{"bucket":"b"}"#,
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["data"]["stdout"],
            "ran bucket create b\n",
            "{}",
            show(&out)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    exec();
    let err = exec();
    assert!(
        !err.contains("catalog"),
        "a sound catalog is used quietly: {err}"
    );
    let good = std::fs::read(catalog_file(&sb)).unwrap();
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    // Names: count, zero, 40-byte entries in name order (name offset and length, row,
    // document, record length, record offset, record CRC, entry CRC), the names.
    let (names, _) = section_of(&good, 5);
    assert_eq!(u32_at(&good, names), 6, "six commands, one entry each");
    let entry = names + 8;
    let name_at = names + u64_at(&good, entry) as usize;
    let name_len = u32_at(&good, entry + 8) as usize;
    assert_eq!(&good[name_at..name_at + name_len], b"store_bucket_create");
    let row = u32_at(&good, entry + 12);
    assert_eq!(u32_at(&good, entry + 16), 0, "store is the first document");
    let entry_crc = |b: &mut Vec<u8>| {
        let mut h = crc32fast::Hasher::new();
        h.update(&b[entry..entry + 36]);
        h.update(&b[name_at..name_at + name_len]);
        let crc = h.finalize();
        b[entry + 36..entry + 40].copy_from_slice(&crc.to_le_bytes());
    };
    let mut cases: Vec<(Vec<u8>, String)> = Vec::new();
    // A flipped bit in the name the search lands on.
    let mut b = good.clone();
    b[name_at + 2] ^= 1;
    cases.push((
        b,
        "is corrupt (section 5: entry 0 checksum mismatch)".into(),
    ));
    // The entry pointed at vault's document, its checksum made right again: the row is
    // not that document's, and the record's tool is not that document's tool.
    let mut b = good.clone();
    b[entry + 16..entry + 20].copy_from_slice(&1u32.to_le_bytes());
    entry_crc(&mut b);
    cases.push((b, "is corrupt (tables disagree)".into()));
    // The entry's record offset moved by one, its checksum made right again: the bytes
    // there do not have the record's CRC.
    let mut b = good.clone();
    let moved = u64_at(&good, entry + 24) + 1;
    b[entry + 24..entry + 32].copy_from_slice(&moved.to_le_bytes());
    entry_crc(&mut b);
    cases.push((b, format!("is corrupt (record {row} checksum mismatch)")));
    // A flipped bit in store's document (documents: count, zero, 16-byte entries of
    // offset, length, CRC, then the documents).
    let (docs, _) = section_of(&good, 4);
    let doc_at = docs + u64_at(&good, docs + 8) as usize;
    let mut b = good.clone();
    b[doc_at + 1] ^= 1;
    cases.push((
        b,
        "is corrupt (section 4: document 0 checksum mismatch)".into(),
    ));
    // A flipped bit in the record itself.
    let (records, _) = section_of(&good, 3);
    let record_at = records + u64_at(&good, entry + 24) as usize;
    let mut b = good.clone();
    b[record_at + 3] ^= 1;
    cases.push((b, format!("is corrupt (record {row} checksum mismatch)")));
    for (bytes, why) in cases {
        std::fs::write(catalog_file(&sb), &bytes).unwrap();
        let err = exec();
        assert!(
            err.contains(&why) && err.contains("compiling it again"),
            "wanted {why:?} in: {err}"
        );
        Compiled::open(&catalog_file(&sb), &registry_key(&sb)).expect("rebuilt and saved");
        let err = exec();
        assert!(!err.contains("catalog"), "{err}");
    }
}

/// Writes `metas` as a registry the way `atip scan` stores it.
fn write_registry(data: &Path, metas: &[Metadata]) -> atip::registry::Index {
    std::fs::create_dir_all(data.join("tools")).unwrap();
    let mut tools = serde_json::Map::new();
    for (i, m) in metas.iter().enumerate() {
        let doc = serde_json::to_vec(m).unwrap();
        let hex = hex::encode(sha2::Sha256::digest(&doc));
        std::fs::write(data.join(format!("tools/{hex}.json")), &doc).unwrap();
        tools.insert(format!("t{i:02}-{}", m.tool_name().unwrap_or("x")), json!({
            "path": "/bin/true", "hash": format!("sha256:{}", "0".repeat(64)), "source": "native",
            "lastChecked": "2026-01-01T00:00:00Z", "description": "d", "atip": "0.6", "trust": "native",
            "effects": "unknown", "commands": 1, "metadata": format!("tools/{hex}.json")}));
    }
    let index = json!({"version": "2", "updated": "2026-01-01T00:00:00Z",
        "agent": {"name": "atip", "version": "0.1.0"}, "tools": tools});
    std::fs::write(
        data.join("registry.json"),
        serde_json::to_vec(&index).unwrap(),
    )
    .unwrap();
    serde_json::from_value(index).unwrap()
}

fn query() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,8}( [a-z]{1,8}){0,3}",
        prop::sample::select(vec![
            "create",
            "list",
            "delete repository",
            "pull request",
            "get",
            "sync",
            "x",
            "run",
        ])
        .prop_map(String::from),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::common::proptest_cases(24), ..ProptestConfig::default() })]

    #[test]
    fn the_catalog_answers_as_the_json_path(
        metas in prop::collection::vec(crate::export_props::metadata(), 1..4),
        queries in prop::collection::vec(query(), 1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let dirs = Dirs::resolve(Some(&dir.path().join("data")), Some(&dir.path().join("c")), Some(&dir.path().join("s")), &atip::env::Env::default());
        let index = write_registry(&dirs.data, &metas);
        let key = catalog::registry_key(&std::fs::read(dirs.registry_file()).unwrap());
        let c = Compiled::from_bytes(catalog::build(&dirs, &index, &key), &catalog::path(&dirs), &key).unwrap();

        // The JSON path: read every document, flatten and name them all.
        let loaded = atip::compile::source::load_registry(&dirs, None).unwrap();
        prop_assert!(loaded.warnings.is_empty() && c.warnings().is_empty());
        let all = Catalog::build(&loaded.metas, &FlattenOptions { include_interactive: true, commands: None });
        prop_assert_eq!(c.rows().len(), all.tools().len());
        for (i, want) in all.tools().iter().enumerate() {
            let got = c.tool(i).unwrap();
            // Names, schemas, effects and everything else, field for field.
            prop_assert_eq!(&got, want);
            prop_assert_eq!(c.rows()[i].name.as_str(), want.name.as_str());
            prop_assert_eq!(c.rows()[i].needs_human, want.effects.needs_human());
            // The name lookup finds every tool by its registry-wide name.
            prop_assert_eq!(c.find(&want.name), Some(i));
        }

        // Search: the default selection, same hits, scores and reports.
        let json_catalog = Catalog::build(&loaded.metas, &FlattenOptions::default());
        // With the facts the catalog computes of the same entries (families, priors).
        let mut entries: Vec<_> = index.tools.iter().collect();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let machine = catalog::facts::of_entries(&entries, Path::new(catalog::facts::DPKG_ROOT));
        let by_tool: std::collections::HashMap<String, atip::search::Facts> = entries
            .iter()
            .zip(&loaded.metas)
            .map(|((name, _), m)| {
                let k = &machine[*name];
                let facts = atip::search::Facts {
                    prior: k.prior * catalog::facts::section_prior(m),
                    family: k.family.clone(),
                    uses: Some((*name).clone()),
                };
                (m.tool_name().unwrap_or(name).to_string(), facts)
            })
            .collect();
        let facts: Vec<_> = json_catalog.tools().iter().map(|t| by_tool[&t.tool].clone()).collect();
        let mut builder = atip::search::IndexBuilder::default();
        builder.add_ranked(json_catalog.tools(), &facts);
        let json_index = builder.finish();
        let (rows, index) = c.search_index().unwrap();
        prop_assert_eq!(rows.len(), json_catalog.tools().len());
        for q in &queries {
            let opts = SearchOptions { limit: 10, schemas: 3, format: None, explain: true, max_bytes: usize::MAX };
            let want = atip::search::search(&json_catalog, &json_index, q, &opts);
            let hits = index.search(q, opts.limit, opts.explain);
            let tools: Vec<_> = hits.iter().map(|h| c.tool(rows[h.doc] as usize).unwrap()).collect();
            let docs: Vec<usize> = hits.iter().map(|h| h.doc).collect();
            let got = atip::search::report(q, hits, &opts, |doc| {
                (&tools[docs.iter().position(|d| *d == doc).unwrap()], None)
            });
            prop_assert_eq!(serde_json::to_value(&got).unwrap(), serde_json::to_value(&want).unwrap());
        }
    }
}

/// Damage with every checksum made right again (a hand-crafted or hostile file): the
/// archived tables' own check refuses it; nothing in it is followed.
#[test]
fn a_catalog_with_resealed_damage_is_refused_not_followed() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let good = std::fs::read(catalog_file(&sb)).unwrap();
    for section in [1usize, 2] {
        let mut bytes = good.clone();
        let row = 56 + section * 24;
        let at = u64::from_le_bytes(bytes[row..row + 8].try_into().unwrap()) as usize;
        let len = u64::from_le_bytes(bytes[row + 8..row + 16].try_into().unwrap()) as usize;
        // The archive's root (its relative pointers) sits at the end of the section.
        for b in &mut bytes[at + len - 16..at + len] {
            *b = 0xff;
        }
        let crc = crc32fast::hash(&bytes[at..at + len]);
        bytes[row + 16..row + 20].copy_from_slice(&crc.to_le_bytes());
        reseal(&mut bytes);
        std::fs::write(catalog_file(&sb), &bytes).unwrap();
        if section == 1 {
            detected_and_rebuilt(&sb, &expected, "is corrupt (section 1:");
        } else {
            // The search index is checked when a search reads it: that search falls
            // back to registry.json and says why.
            let (got, err) = search(&sb, "create bucket");
            assert!(
                err.contains("section 2:") && err.contains("searching registry.json instead"),
                "{err}"
            );
            assert_eq!(got, expected);
        }
    }
}

/// The search index's posting lists (section 6) are not checked whole when a catalog is
/// opened: each list a query reads is checked (CRC-32 in the index) first. Damage there
/// makes that search fall back to registry.json and say so, with the same answer.
#[test]
fn a_damaged_posting_list_is_found_by_the_search_that_reads_it() {
    let sb = sandbox();
    let expected = compiled(&sb);
    let mut bytes = std::fs::read(catalog_file(&sb)).unwrap();
    let (at, len) = section_of(&bytes, 6);
    assert!(len > 0);
    for b in &mut bytes[at..at + len] {
        *b ^= 0x5a;
    }
    std::fs::write(catalog_file(&sb), &bytes).unwrap();
    let (got, err) = search(&sb, "create bucket");
    assert!(
        err.contains("is corrupt (section 6: the posting list of term")
            && err.contains("searching registry.json instead"),
        "{err}"
    );
    assert_eq!(got, expected);
}

/// `atip export ARGS`: (stdout, stderr), exit 0.
fn export(sb: &Sandbox, args: &[&str]) -> (Vec<u8>, String) {
    let out = sb.atip().arg("export").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    (
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A whole-registry export is kept (exports/, keyed by registry.json's hash) and copied
/// by the next identical one: the same bytes and the same notes; a changed registry, a
/// damaged copy or other options are never served from it.
#[test]
fn identical_exports_are_copied_from_the_kept_one_and_never_from_a_stale_one() {
    let sb = sandbox();
    let kept = sb.data_dir().join("exports/openaistrict.flat.i0.n0.json");
    let (first, err1) = export(&sb, &["--format", "openai-strict"]);
    assert!(kept.exists(), "kept after the first export");
    assert!(err1.contains("left out 2 interactive"), "{err1}");
    // Proof that the second comes from the copy: the documents are gone, yet the bytes
    // and the note are the same.
    let tools = sb.data_dir().join("tools");
    let moved = sb.path().join("tools.away");
    std::fs::rename(&tools, &moved).unwrap();
    let (second, err2) = export(&sb, &["--format", "openai-strict"]);
    assert_eq!(first, second);
    assert_eq!(err1, err2);
    std::fs::rename(&moved, &tools).unwrap();
    // A damaged copy is not used (and is replaced).
    let mut bytes = std::fs::read(&kept).unwrap();
    bytes[10] ^= 0x20;
    std::fs::write(&kept, &bytes).unwrap();
    let (third, _) = export(&sb, &["--format", "openai-strict"]);
    assert_eq!(first, third);
    assert_ne!(
        std::fs::read(&kept).unwrap(),
        bytes,
        "replaced by a sound copy"
    );
    // Another format is another export.
    let (mcp, _) = export(&sb, &["--format", "mcp"]);
    assert_ne!(mcp, first);
    // The registry changes: the copy is stale and the new tool is exported.
    register(
        &sb,
        "extra",
        &tool("extra", "purge"),
        "#!/bin/sh\necho\n",
        "native",
    );
    let (fourth, _) = export(&sb, &["--format", "openai-strict"]);
    let text = String::from_utf8(fourth).unwrap();
    assert!(text.contains("extra_bucket_purge"), "{text}");
    // A filtered export neither uses nor replaces it.
    let before = std::fs::read(&kept).unwrap();
    let (filtered, _) = export(&sb, &["--format", "openai-strict", "--tools", "store"]);
    assert!(!String::from_utf8(filtered).unwrap().contains("vault"));
    assert_eq!(std::fs::read(&kept).unwrap(), before);
}

/// After a registry change, a whole-registry export renders only the documents that
/// changed; the others come from their kept renderings (`exports/docs/`). The bytes and
/// notes are exactly an export's from scratch — also when a new document takes a name a
/// kept rendering claims, and when a kept rendering is damaged.
#[test]
fn an_export_after_a_change_renders_only_the_changed_documents() {
    let sb = sandbox();
    let whole = sb.data_dir().join("exports/openaistrict.flat.i0.n0.json");
    let docs = sb.data_dir().join(format!(
        "exports/docs/{}.openaistrict.flat.i0.n0",
        env!("CARGO_PKG_VERSION")
    ));
    let scratch = |sb: &Sandbox| {
        let _ = std::fs::remove_dir_all(sb.data_dir().join("exports"));
        export(sb, &["--format", "openai-strict"])
    };
    let kept_renderings = || std::fs::read_dir(&docs).map_or(0, |d| d.count());
    let (first, err1) = scratch(&sb);
    assert_eq!(kept_renderings(), 2, "one per document");
    // Proof that they are used: without the whole export and without the documents,
    // the same bytes and notes.
    std::fs::remove_file(&whole).unwrap();
    let tools = sb.data_dir().join("tools");
    let away = sb.path().join("tools.away");
    std::fs::rename(&tools, &away).unwrap();
    let (second, err2) = export(&sb, &["--format", "openai-strict"]);
    assert_eq!((&first, &err1), (&second, &err2));
    std::fs::rename(&away, &tools).unwrap();
    // A new document, first in name order, claims a name vault's rendering has: vault is
    // rendered again (its command becomes `…_2`), exactly as from scratch.
    register(
        &sb,
        "aaa",
        &json!({"atip": {"version": "0.6"}, "name": "vault_bucket", "version": "1", "description": "Clash",
            "commands": {"delete": {"description": "Delete", "effects": {"destructive": true}}}}),
        "#!/bin/sh\necho\n",
        "native",
    );
    let (third, err3) = export(&sb, &["--format", "openai-strict"]);
    let text = String::from_utf8(third.clone()).unwrap();
    assert!(text.contains("\"vault_bucket_delete_2\""), "{text}");
    assert_eq!((third, err3), scratch(&sb));
    // A damaged rendering is not used.
    let one = std::fs::read_dir(&docs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut bytes = std::fs::read(&one).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    std::fs::write(&one, &bytes).unwrap();
    std::fs::remove_file(&whole).unwrap();
    let (fourth, err4) = export(&sb, &["--format", "openai-strict"]);
    assert_eq!((fourth, err4), scratch(&sb));
    // vault's names are not its own any more: only aaa and store are kept.
    assert_eq!(kept_renderings(), 2);
    // A rendering of no registered document is removed by the next export.
    let stray = docs.join(format!("{}.bin", "0".repeat(64)));
    let any = std::fs::read_dir(&docs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::copy(any, &stray).unwrap();
    std::fs::remove_file(&whole).unwrap();
    export(&sb, &["--format", "openai-strict"]);
    assert!(!stray.exists());
    assert_eq!(kept_renderings(), 2);
}

/// Two documents that name the same tool: the second one's commands take `_2` names,
/// and its records (written by the compile before names are made unique) carry them.
#[test]
fn a_second_document_of_a_tool_gets_suffixed_names_in_its_records() {
    let dir = tempfile::tempdir().unwrap();
    let dirs = Dirs::resolve(
        Some(&dir.path().join("data")),
        Some(&dir.path().join("c")),
        Some(&dir.path().join("s")),
        &atip::env::Env::default(),
    );
    let metas: Vec<Metadata> = [tool("twin", "create"), tool("twin", "delete")]
        .into_iter()
        .map(|v| serde_json::from_value(v).unwrap())
        .collect();
    let index = write_registry(&dirs.data, &metas);
    let key = catalog::registry_key(&std::fs::read(dirs.registry_file()).unwrap());
    let c = Compiled::from_bytes(
        catalog::build(&dirs, &index, &key),
        &catalog::path(&dirs),
        &key,
    )
    .unwrap();
    let all = Catalog::build(
        &metas,
        &FlattenOptions {
            include_interactive: true,
            commands: None,
        },
    );
    let names: Vec<&str> = all.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"twin_bucket_list_2"), "{names:?}");
    assert_eq!(c.rows().len(), all.tools().len());
    for (i, want) in all.tools().iter().enumerate() {
        let got = c.tool(i).unwrap();
        assert_eq!(&got, want);
        assert_eq!(c.find(&want.name), Some(i));
    }
}
