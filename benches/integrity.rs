//! What the run-time safety checks cost per call: the integrity check when nothing
//! changed (one `stat` against the recorded fingerprint), the same check when the
//! fingerprint differs (a full sha256), the self check and the runner names. By hand:
//! `cargo bench --bench integrity`. Figures go in benches/README.md.

use atip::dirs::Dirs;
use atip::exec::policy::Policy;
use atip::exec::{Engine, Settings, runners};
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

fn time(label: &str, runs: u32, mut f: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    let per = start.elapsed() / runs;
    println!("{label:<58} {:>10.3} µs", per.as_secs_f64() * 1e6);
    per
}

fn register(data: &Path, tool: &Path, with_fingerprint: bool) {
    let meta = json!({"atip": {"version": "0.6"}, "name": "big", "version": "1", "description": "Big",
        "commands": {"go": {"description": "Go", "effects": {"destructive": false}}}});
    let doc = serde_json::to_vec(&meta).unwrap();
    let hex = atip::digest::sha256_hex(&doc);
    std::fs::create_dir_all(data.join("tools")).unwrap();
    std::fs::write(data.join(format!("tools/{hex}.json")), &doc).unwrap();
    let m = std::fs::metadata(tool).unwrap();
    let mut entry = json!({"path": tool, "hash": atip::digest::sha256_file(tool).unwrap(),
        "source": "native", "lastChecked": "2026-01-01T00:00:00Z", "description": "Big", "atip": "0.6",
        "trust": "native", "effects": "", "commands": 1, "metadata": format!("tools/{hex}.json")});
    if with_fingerprint {
        entry["fingerprint"] = json!({"dev": m.dev(), "ino": m.ino(), "size": m.size(),
            "mtimeNs": m.mtime() * 1_000_000_000 + m.mtime_nsec(),
            "ctimeNs": m.ctime() * 1_000_000_000 + m.ctime_nsec()});
    }
    let index = json!({"version": "2", "updated": "2026-01-01T00:00:00Z",
        "agent": {"name": "atip", "version": "0"}, "tools": {"big": entry}});
    std::fs::write(data.join("registry.json"), index.to_string()).unwrap();
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    // A 32 MiB executable, the size of a large real-world CLI.
    let tool = tmp.path().join("big");
    let mut body = b"#!/bin/sh\nexit 0\n".to_vec();
    body.resize(32 << 20, b'#');
    std::fs::write(&tool, &body).unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cwd = tmp.path().to_path_buf();
    for with_fingerprint in [true, false] {
        let data = tmp
            .path()
            .join(if with_fingerprint { "data-fp" } else { "data" });
        register(&data, &tool, with_fingerprint);
        let dirs = Dirs::resolve(
            Some(&data),
            Some(&tmp.path().join("config")),
            None,
            &atip::env::Env::capture(),
        );
        let engine = Engine::load(
            &dirs,
            Policy::defaults(&cwd),
            Settings::default(),
            None,
            None,
        )
        .unwrap();
        let p = engine.prepare("big_go", serde_json::Map::new()).unwrap();
        let mut info = p.info.clone();
        if with_fingerprint {
            time(
                "integrity check, nothing changed (stat only)",
                10_000,
                || assert!(engine.check_integrity(&info).is_ok()),
            );
            time(
                "prepare() of a call: every check and the policy",
                2_000,
                || {
                    let p = engine.prepare("big_go", serde_json::Map::new()).unwrap();
                    assert_eq!(p.decision.action, atip::exec::policy::Action::Allow);
                },
            );
        } else {
            // A fingerprint that never matches: every call re-hashes (the first call of
            // a process after a touch, or a registry without fingerprints).
            info.fingerprint = None;
            let fresh = Engine::load(
                &dirs,
                Policy::defaults(&cwd),
                Settings::default(),
                None,
                None,
            )
            .unwrap();
            time(
                "integrity check, fingerprint differs (sha256 of 32 MiB)",
                1,
                || assert!(fresh.check_integrity(&info).is_ok()),
            );
            time("  same, later calls (re-hash remembered)", 10_000, || {
                assert!(fresh.check_integrity(&info).is_ok())
            });
        }
    }
    time("is_self(program), sizes differ (stat only)", 10_000, || {
        assert!(!runners::is_self(&tool))
    });
    time("program_names(program) (canonicalize)", 10_000, || {
        assert!(!runners::program_names(&tool).is_empty())
    });
}
