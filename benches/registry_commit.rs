//! Hand-run benchmark of the registry write and read paths (not run by CI):
//! `cargo bench --bench registry_commit [-- N]` (N tools, default 2000).
//!
//! Builds N small executables and ATIP documents in a temp dir, then times a cold
//! commit (every metadata file new), a no-op rescan (all `Unchanged`: the write is
//! skipped), a rescan where 20 tools changed, a lock-free `Index::load`, one `get`
//! look-up and `doctor` over every entry (which hashes every binary).

use atip::digest::sha256_file;
use atip::dirs::Dirs;
use atip::model::Metadata;
use atip::registry::{
    CommitOptions, Found, FoundMeta, Index, MetaSummary, Source, Update, commit, doctor, query,
};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{Duration, Instant};

fn document(name: &str, version: &str) -> Vec<u8> {
    let mut commands = serde_json::Map::new();
    for i in 0..8 {
        commands.insert(
            format!("cmd{i}"),
            serde_json::json!({
                "description": format!("Command {i} of {name}"),
                "arguments": [{"name": "target", "type": "string", "description": "What to act on"}],
                "options": [{"name": "force", "flags": ["-f", "--force"], "type": "boolean", "description": "Do it anyway"}],
                "effects": {"destructive": i % 3 == 0, "network": i % 2 == 0}
            }),
        );
    }
    serde_json::to_vec_pretty(&serde_json::json!({
        "atip": {"version": "0.6"},
        "name": name,
        "version": version,
        "description": format!("Synthetic tool {name}"),
        "effects": {"network": true},
        "commands": commands,
    }))
    .unwrap()
}

fn found(name: &str, path: &Path, version: &str, fresh: bool) -> Found {
    let meta = if fresh {
        let document = document(name, version);
        FoundMeta::Fresh {
            summary: MetaSummary::of(&Metadata::from_slice(&document).unwrap()),
            document: document.into(),
            checked_at: atip::registry::rfc3339_now(),
        }
    } else {
        FoundMeta::Unchanged
    };
    Found {
        name: name.into(),
        path: path.into(),
        hash: Some(sha256_file(path).unwrap()),
        source: Source::Native,
        shim_registry: None,
        trust: "native".into(),
        fingerprint: None,
        vouched_by: None,
        meta,
    }
}

fn time<T>(label: &str, f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    let took = start.elapsed();
    println!("{label:<52} {:>10.2} ms", took.as_secs_f64() * 1000.0);
    (out, took)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let tmp = tempfile::tempdir().unwrap();
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let names: Vec<String> = (0..n).map(|i| format!("tool{i:05}")).collect();
    for name in &names {
        let p = bin.join(name);
        std::fs::write(&p, format!("#!/bin/sh\necho {name}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let dirs = Dirs {
        data: tmp.path().join("data"),
        config: tmp.path().join("config"),
        state: tmp.path().join("state"),
        cache: tmp.path().join("cache"),
        system_data: vec![],
    };
    let opts = CommitOptions {
        announce: true,
        ..CommitOptions::default()
    };
    println!("registry benchmark: {n} tools in {}", tmp.path().display());

    let cold = Update {
        found: names
            .iter()
            .map(|t| found(t, &bin.join(t), "1", true))
            .collect(),
        scanned_dirs: vec![bin.clone()],
    };
    let (r, _) = time("cold commit (every metadata file new)", || {
        commit(&dirs, &cold, &opts).unwrap()
    });
    assert!(r.written && r.added.len() == n);

    let same = Update {
        found: names
            .iter()
            .map(|t| found(t, &bin.join(t), "1", false))
            .collect(),
        scanned_dirs: vec![bin.clone()],
    };
    let (r, _) = time("no-op rescan (all unchanged, write skipped)", || {
        commit(&dirs, &same, &opts).unwrap()
    });
    assert!(!r.written && r.unchanged.len() == n);

    let mut some = same.clone();
    for (i, f) in some.found.iter_mut().enumerate().take(20) {
        *f = found(&names[i], &bin.join(&names[i]), "2", true);
    }
    let (r, _) = time("rescan with 20 tools changed", || {
        commit(&dirs, &some, &opts).unwrap()
    });
    assert!(r.written && r.updated.len() == 20);

    let bytes = std::fs::metadata(dirs.registry_file()).unwrap().len();
    println!("registry.json size {:>45} KiB", bytes / 1024);
    let (index, _) = time("Index::load (lock-free read)", || {
        Index::load(&dirs).unwrap().unwrap()
    });
    assert_eq!(index.tools.len(), n);
    let (_, _) = time("get one tool (load + metadata + hash check)", || {
        query::get_tool(&dirs, &names[n / 2]).unwrap()
    });
    let (report, _) = time("doctor (hash every binary, check every file)", || {
        doctor::check(&dirs)
    });
    assert!(report.healthy, "{:?}", report.problems.first());
}
