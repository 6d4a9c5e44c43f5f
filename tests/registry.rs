//! Registry write path and the read-only commands (`list`, `get`, `doctor`), tested on
//! real files in temp dirs, with real threads, real child processes (this test binary
//! re-invoked through `ATIP_REGISTRY_CHILD`) and the real `atip` binary.

use crate::common;

use atip::digest::sha256_file;
use atip::dirs::Dirs;
use atip::model::Metadata;
use atip::registry::{
    CommitOptions, CommitReport, Found, FoundMeta, Index, MetaSummary, Source, Update, commit,
};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::Duration;

// ---------------------------------------------------------------- helpers

fn dirs_at(data: &Path) -> Dirs {
    Dirs {
        data: data.to_path_buf(),
        config: data.with_file_name("config"),
        state: data.with_file_name("state"),
        cache: data.with_file_name("cache"),
        system_data: vec![],
    }
}

fn opts() -> CommitOptions {
    CommitOptions {
        lock_timeout: Duration::from_secs(20),
        now: "2026-11-25T12:00:00Z".into(),
        announce: false,
        after: Some(std::sync::Arc::new(atip::catalog::OnCommit)),
    }
}

/// An ATIP document for `name` with `extra` top-level commands (plus one nested).
fn doc(name: &str, version: &str, extra: usize) -> Vec<u8> {
    let mut commands = serde_json::Map::new();
    commands.insert(
        "list".into(),
        json!({"description": "List things", "effects": {"destructive": false, "filesystem": {"write": false}},
               "commands": {"all": {"description": "List everything"}}}),
    );
    commands.insert(
        "delete".into(),
        json!({"description": "Delete a thing", "arguments": [{"name": "id", "type": "string", "description": "Which"}],
               "effects": {"destructive": true, "reversible": false}}),
    );
    for i in 0..extra {
        commands.insert(
            format!("c{i}"),
            json!({"description": format!("Command {i}")}),
        );
    }
    let v = json!({
        "atip": {"version": "0.6", "features": ["partial-discovery"]},
        "name": name,
        "version": version,
        "description": format!("The {name} tool"),
        "effects": {"network": true},
        "commands": commands,
    });
    serde_json::to_vec_pretty(&v).unwrap()
}

/// Creates an executable in `dir` and returns its path.
fn make_bin(dir: &Path, name: &str, body: &str) -> PathBuf {
    fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    fs::write(&p, format!("#!/bin/sh\n# {body}\necho hi\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn fresh(name: &str, path: &Path, document: Vec<u8>) -> Found {
    let metadata = Metadata::from_slice(&document).unwrap();
    Found {
        name: name.into(),
        path: path.to_path_buf(),
        hash: Some(sha256_file(path).unwrap()),
        source: Source::Native,
        shim_registry: None,
        trust: "native".into(),
        fingerprint: None,
        vouched_by: None,
        meta: FoundMeta::Fresh {
            document: document.into(),
            summary: MetaSummary::of(&metadata),
            checked_at: "2026-11-25T11:59:00Z".into(),
        },
    }
}

fn unchanged(name: &str, path: &Path) -> Found {
    Found {
        name: name.into(),
        path: path.to_path_buf(),
        hash: Some(sha256_file(path).unwrap()),
        source: Source::Native,
        shim_registry: None,
        trust: "native".into(),
        fingerprint: None,
        vouched_by: None,
        meta: FoundMeta::Unchanged,
    }
}

fn load(data: &Path) -> Index {
    Index::load(&dirs_at(data))
        .unwrap()
        .expect("registry exists")
}

/// Checks registry.json against schemas/registry.schema.json and that every
/// metadata file it names exists and is named by its own sha256.
fn assert_valid(data: &Path) -> Index {
    let bytes = fs::read(data.join("registry.json")).unwrap();
    let value: Value = serde_json::from_slice(&bytes).unwrap();
    let schema: Value = serde_json::from_str(atip::registry::SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&value)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "schema errors: {errors:?}");
    let index: Index = serde_json::from_slice(&bytes).unwrap();
    let names: Vec<&String> = index.tools.keys().collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "entries sorted by name");
    for (name, e) in &index.tools {
        let file = data.join(&e.metadata);
        let content = fs::read(&file).unwrap_or_else(|err| panic!("{name}: {file:?}: {err}"));
        let hex = atip::digest::sha256_hex(&content);
        assert_eq!(e.metadata, format!("tools/{hex}.json"), "{name}");
        Metadata::from_slice(&content).unwrap();
    }
    index
}

fn names(report: &[String]) -> Vec<&str> {
    report.iter().map(String::as_str).collect()
}

fn run_commit(data: &Path, update: &Update) -> CommitReport {
    commit(&dirs_at(data), update, &opts()).unwrap()
}

// ---------------------------------------------------------------- commit

#[test]
fn commit_round_trip_builds_entries_and_metadata_files() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let kc = make_bin(&bin, "kubectl", "kubectl");
    let update = Update {
        found: vec![
            fresh("kubectl", &kc, doc("kubectl", "1.30", 3)),
            fresh("gh", &gh, doc("gh", "2.40.0", 0)),
        ],
        scanned_dirs: vec![bin.clone()],
    };
    let report = run_commit(&data, &update);
    assert!(report.written);
    assert_eq!(names(&report.added), ["gh", "kubectl"]);
    assert!(report.locked);
    let index = assert_valid(&data);
    assert_eq!(index.version, "2");
    assert_eq!(index.updated, "2026-11-25T12:00:00Z");
    let e = &index.tools["kubectl"];
    assert_eq!(e.path, kc);
    assert_eq!(e.hash, Some(sha256_file(&kc).unwrap()));
    assert_eq!(e.description, "The kubectl tool");
    assert_eq!(e.version.as_deref(), Some("1.30"));
    assert_eq!(e.atip, "0.6");
    assert_eq!(e.trust, "native");
    assert_eq!(
        e.effects,
        "mixed: 1/5 destructive, 5/5 network, 1/5 read-only"
    );
    assert_eq!(e.commands, 6, "list, list all, delete, c0..c2");
    assert_eq!(e.last_checked, "2026-11-25T11:59:00Z");
    // The stored document is byte for byte what the scan read.
    assert_eq!(
        fs::read(data.join(&e.metadata)).unwrap(),
        doc("kubectl", "1.30", 3)
    );
    let meta = Index::read_metadata(&dirs_at(&data), e).unwrap();
    assert_eq!(meta.tool_name(), Some("kubectl"));
    // Files are 0644 and nothing but the registry, its compiled catalog, the lock and
    // tools/ is in the data dir.
    for f in ["registry.json", "catalog.bin"] {
        let mode = fs::metadata(data.join(f)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o644, "{f}");
    }
    let mut listing: Vec<String> = fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    listing.sort();
    assert_eq!(
        listing,
        ["catalog.bin", "registry.json", "registry.lock", "tools"]
    );
}

#[test]
fn unchanged_commit_skips_the_write() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let first = Update {
        found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
        scanned_dirs: vec![bin.clone()],
    };
    run_commit(&data, &first);
    let reg = data.join("registry.json");
    // An old mtime, so a rewrite would show even within the clock's tick (no sleep).
    let old = std::time::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options()
        .write(true)
        .open(&reg)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let before = fs::metadata(&reg).unwrap();
    let bytes_before = fs::read(&reg).unwrap();

    // Unchanged, and the same Fresh document again: neither rewrites registry.json.
    for found in [unchanged("gh", &gh), fresh("gh", &gh, doc("gh", "1", 0))] {
        let mut o = opts();
        o.now = "2030-01-01T00:00:00Z".into();
        let report = commit(
            &dirs_at(&data),
            &Update {
                found: vec![found],
                scanned_dirs: vec![bin.clone()],
            },
            &o,
        )
        .unwrap();
        assert!(!report.written, "{report:?}");
        assert_eq!(names(&report.unchanged), ["gh"]);
        let after = fs::metadata(&reg).unwrap();
        assert_eq!(after.ino(), before.ino(), "registry.json was replaced");
        assert_eq!(
            (after.mtime(), after.mtime_nsec()),
            (before.mtime(), before.mtime_nsec())
        );
        assert_eq!(
            fs::read(&reg).unwrap(),
            bytes_before,
            "`updated` was bumped"
        );
    }
}

#[test]
fn merge_rule_removes_only_in_scanned_dirs_or_vanished() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let one = make_bin(&a, "one", "1");
    let two = make_bin(&a, "two", "2");
    let three = make_bin(&b, "three", "3");
    let four = make_bin(&b, "four", "4");
    run_commit(
        &data,
        &Update {
            found: vec![
                fresh("one", &one, doc("one", "1", 0)),
                fresh("two", &two, doc("two", "1", 0)),
                fresh("three", &three, doc("three", "1", 0)),
                fresh("four", &four, doc("four", "1", 0)),
            ],
            scanned_dirs: vec![a.clone(), b.clone()],
        },
    );
    // A scan of `a` alone that finds only `one`: `two` goes (its dir was scanned),
    // `three` stays (another dir), `four` goes (binary deleted).
    fs::remove_file(&four).unwrap();
    let report = run_commit(
        &data,
        &Update {
            found: vec![unchanged("one", &one)],
            scanned_dirs: vec![a.clone()],
        },
    );
    assert!(report.written);
    assert_eq!(names(&report.removed), ["four", "two"]);
    assert_eq!(names(&report.unchanged), ["one"]);
    let index = assert_valid(&data);
    assert_eq!(index.tools.keys().collect::<Vec<_>>(), ["one", "three"]);
    // Metadata files of removed tools are collected one generation later (a reader
    // holding the previous index may still open them); then only live ones remain.
    run_commit(
        &data,
        &Update {
            found: vec![fresh("one", &one, doc("one", "2", 0))],
            scanned_dirs: vec![a.clone()],
        },
    );
    run_commit(
        &data,
        &Update {
            found: vec![fresh("one", &one, doc("one", "3", 0))],
            scanned_dirs: vec![a.clone()],
        },
    );
    let index = assert_valid(&data);
    let files = fs::read_dir(data.join("tools")).unwrap().count();
    assert_eq!(files, 3, "one@3, one@2 (previous generation), three");
    assert_eq!(index.tools["one"].version.as_deref(), Some("3"));
}

#[test]
fn unchanged_without_matching_entry_is_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let report = run_commit(
        &data,
        &Update {
            found: vec![unchanged("gh", &gh)],
            scanned_dirs: vec![bin.clone()],
        },
    );
    assert_eq!(names(&report.stale), ["gh"]);
    assert!(report.added.is_empty());
    assert!(load(&data).tools.is_empty());
    // A stored entry whose binary hash differs from what the scan saw is stale too.
    run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin.clone()],
        },
    );
    let mut f = unchanged("gh", &gh);
    f.hash = Some(format!("sha256:{}", "0".repeat(64)));
    let report = run_commit(
        &data,
        &Update {
            found: vec![f],
            scanned_dirs: vec![bin.clone()],
        },
    );
    assert_eq!(names(&report.stale), ["gh"]);
    assert_eq!(names(&report.removed), ["gh"]);
}

#[test]
fn hostile_names_and_bad_fields_are_rejected_and_nothing_escapes() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("deep/data");
    let bin = tmp.path().join("bin");
    let x = make_bin(&bin, "X", "x");
    let ok = make_bin(&bin, "ok", "ok");
    let mut bad_hash = fresh("badhash", &ok, doc("badhash", "1", 0));
    bad_hash.hash = Some("md5:abc".into());
    let mut bad_trust = fresh("badtrust", &ok, doc("badtrust", "1", 0));
    bad_trust.trust = "root".into();
    let mut relative = fresh("relative", &ok, doc("relative", "1", 0));
    relative.path = PathBuf::from("bin/ok");
    // Neither a hash nor a fingerprint: nothing would pin the binary.
    let mut unpinned = fresh("unpinned", &ok, doc("unpinned", "1", 0));
    unpinned.hash = None;
    let update = Update {
        found: vec![
            fresh("../../X", &x, doc("../../X", "1", 0)),
            fresh("/etc/passwd", &x, doc("x", "1", 0)),
            bad_hash,
            bad_trust,
            relative,
            unpinned,
            fresh("ok", &ok, doc("ok", "1", 0)),
            fresh("ok", &ok, doc("ok", "2", 0)),
        ],
        scanned_dirs: vec![bin.clone()],
    };
    let report = run_commit(&data, &update);
    let rejected: Vec<&str> = report.rejected.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        rejected,
        [
            "../../X",
            "/etc/passwd",
            "badhash",
            "badtrust",
            "relative",
            "unpinned",
            "ok"
        ]
    );
    assert!(report.rejected[5].reason.contains("fingerprint"));
    assert!(report.rejected[6].reason.contains("duplicate"));
    let index = assert_valid(&data);
    assert_eq!(index.tools.keys().collect::<Vec<_>>(), ["ok"]);
    assert_eq!(index.tools["ok"].version.as_deref(), Some("1"));
    // Nothing was created beside the data dir.
    let mut above: Vec<String> = fs::read_dir(tmp.path().join("deep"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    above.sort();
    assert_eq!(above, ["data"]);
    assert!(!tmp.path().join("X").exists());
}

#[test]
fn corrupt_registry_is_kept_aside_and_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    fs::create_dir_all(&data).unwrap();
    fs::write(
        data.join("registry.json"),
        b"{\"version\": \"2\", \"tools\": {tru",
    )
    .unwrap();
    let report = run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin.clone()],
        },
    );
    let aside = report.corrupt_backup.clone().expect("backup path");
    assert!(
        aside
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("registry.json.corrupt-20")
    );
    assert_eq!(
        fs::read(&aside).unwrap(),
        b"{\"version\": \"2\", \"tools\": {tru"
    );
    assert_eq!(report.warnings.len(), 1);
    assert!(
        report.warnings[0].contains("corrupt"),
        "{:?}",
        report.warnings
    );
    assert_eq!(names(&report.added), ["gh"]);
    assert_valid(&data);
}

// ---------------------------------------------------------------- child processes

/// Entry point of child processes: this test binary re-invoked with
/// `ATIP_REGISTRY_CHILD=<mode>`; a no-op in a normal run.
#[test]
fn child_process_entry() {
    let Ok(mode) = std::env::var("ATIP_REGISTRY_CHILD") else {
        return;
    };
    // What the library says while it works reaches stderr the way the CLI prints it.
    use atip::output::{ColorChoice, OutputFormat, Printer, PrinterLog, Verbosity};
    let printer = Printer::new(OutputFormat::Text, Verbosity::Normal, ColorChoice::Never);
    log::set_boxed_logger(Box::new(PrinterLog(printer))).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} unset"));
    let data = PathBuf::from(env("CHILD_DATA"));
    let dirs = dirs_at(&data);
    let mut o = opts();
    o.announce = true;
    if let Ok(t) = std::env::var("CHILD_LOCK_TIMEOUT") {
        o.lock_timeout = atip::units::parse_duration(&t).unwrap();
    }
    let finish = |r: Result<CommitReport, atip::registry::RegistryError>| match r {
        Ok(report) => {
            println!("REPORT:{}", serde_json::to_string(&report).unwrap());
            std::process::exit(0)
        }
        Err(e) => {
            let e = e.to_atip();
            println!("ERROR:{}", serde_json::to_string(&e).unwrap());
            std::process::exit(i32::from(e.exit_code()))
        }
    };
    match mode.as_str() {
        // Commit one tool NAME living in BIN (created here), scanning only BIN.
        "commit-one" => {
            let bin = PathBuf::from(env("CHILD_BIN"));
            let name = env("CHILD_NAME");
            let exe = make_bin(&bin, &name, &name);
            let update = Update {
                found: vec![fresh(&name, &exe, doc(&name, "1", 2))],
                scanned_dirs: vec![bin],
            };
            finish(commit(&dirs, &update, &o))
        }
        // Hold the writer lock until the test closes our stdin (or exits).
        "hold-lock" => {
            fs::create_dir_all(&data).unwrap();
            let lock = atip::registry::RegistryLock::acquire(&data, Duration::ZERO, false).unwrap();
            assert!(lock.is_locked());
            println!("LOCKED");
            let mut rest = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut rest).unwrap();
            drop(lock);
            std::process::exit(0)
        }
        // Commit big updates forever (until SIGKILL): the whole set at version a, at
        // version b, then a rescan where 5 tools changed (new metadata files) and the
        // rest are unchanged.
        "loop" => {
            let bin = PathBuf::from(env("CHILD_BIN"));
            let a = big_update(&bin, "a", 60, 30);
            let b = big_update(&bin, "b", 60, 30);
            println!("READY");
            for i in 0.. {
                let mut o = opts();
                o.announce = false;
                let t = std::time::Instant::now();
                let update = match i % 3 {
                    0 => a.clone(),
                    1 => b.clone(),
                    _ => {
                        let mut u = big_update(&bin, &format!("m{i}"), 60, 30);
                        for f in &mut u.found[5..] {
                            f.meta = FoundMeta::Unchanged;
                        }
                        u
                    }
                };
                let report = commit(&dirs, &update, &o).unwrap();
                assert!(report.stale.is_empty() && report.rejected.is_empty());
                if std::env::var_os("CHILD_VERBOSE").is_some() {
                    eprintln!("commit {i}: {:?}", t.elapsed());
                }
            }
        }
        // Commit under a file size limit of CHILD_FSIZE bytes (a full disk).
        "fsize" => {
            let limit: u64 = env("CHILD_FSIZE").parse().unwrap();
            let bin = PathBuf::from(env("CHILD_BIN"));
            let update = big_update(&bin, "big", 60, 0);
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
                let rl = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &rl), 0);
            }
            finish(commit(&dirs, &update, &o))
        }
        other => panic!("unknown child mode {other}"),
    }
}

/// `n` tools `t000…` in `bin` whose documents carry `extra` commands and version `v`.
fn big_update(bin: &Path, v: &str, n: usize, extra: usize) -> Update {
    let found = (0..n)
        .map(|i| {
            let name = format!("t{i:03}");
            let exe = bin.join(&name);
            if !exe.exists() {
                make_bin(bin, &name, &name);
            }
            fresh(&name, &exe, doc(&name, v, extra))
        })
        .collect();
    Update {
        found,
        scanned_dirs: vec![bin.to_path_buf()],
    }
}

fn child(mode: &str, data: &Path) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args([
        &common::test_name(module_path!(), "child_process_entry"),
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("ATIP_REGISTRY_CHILD", mode)
    .env("CHILD_DATA", data);
    cmd
}

fn stdout_line(out: &std::process::Output, prefix: &str) -> Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find_map(|l| l.find(prefix).map(|at| &l[at + prefix.len()..]))
        .unwrap_or_else(|| panic!("no {prefix} line in {}", common::show(out)));
    serde_json::from_str(line).unwrap()
}

#[test]
fn eight_threads_commit_at_once_and_every_tool_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|i| {
            let data = data.clone();
            let bin = tmp.path().join(format!("bin{i}"));
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let name = format!("tool{i}");
                let exe = make_bin(&bin, &name, &name);
                let update = Update {
                    found: vec![fresh(&name, &exe, doc(&name, "1", 5))],
                    scanned_dirs: vec![bin],
                };
                barrier.wait();
                commit(&dirs_at(&data), &update, &opts()).unwrap()
            })
        })
        .collect();
    for h in handles {
        let report = h.join().unwrap();
        assert!(report.written && report.locked);
        assert_eq!(report.added.len(), 1);
    }
    let index = assert_valid(&data);
    let expected: Vec<String> = (0..8).map(|i| format!("tool{i}")).collect();
    assert_eq!(index.tools.keys().cloned().collect::<Vec<_>>(), expected);
}

#[test]
fn eight_processes_commit_at_once_and_every_tool_survives() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let children: Vec<_> = (0..8)
        .map(|i| {
            child("commit-one", &data)
                .env("CHILD_BIN", tmp.path().join(format!("bin{i}")))
                .env("CHILD_NAME", format!("proc{i}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", common::show(&out));
        let report = stdout_line(&out, "REPORT:");
        assert_eq!(report["added"].as_array().unwrap().len(), 1);
    }
    let index = assert_valid(&data);
    let expected: Vec<String> = (0..8).map(|i| format!("proc{i}")).collect();
    assert_eq!(index.tools.keys().cloned().collect::<Vec<_>>(), expected);
}

/// A child process holding the registry lock of `data` until [`LockHolder::release`]
/// (or drop): tests wait on events, not on a guessed hold time.
struct LockHolder(std::process::Child);

impl LockHolder {
    /// Closes the holder's stdin, so it drops the lock and exits; waits for it.
    fn release(mut self) {
        drop(self.0.stdin.take());
        assert!(self.0.wait().unwrap().success());
    }
}

impl Drop for LockHolder {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_lock_holder(data: &Path) -> LockHolder {
    use std::io::BufRead;
    let mut holder = child("hold-lock", data)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    let mut reader = std::io::BufReader::new(holder.stdout.take().unwrap());
    while !line.contains("LOCKED") {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "holder died");
    }
    LockHolder(holder)
}

/// Reads `child`'s stderr until a line contains `what`; returns what was read.
fn stderr_until(child: &mut std::process::Child, what: &str) -> String {
    use std::io::BufRead;
    let mut reader = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "stderr closed before {what:?}: {seen}"
        );
        seen.push_str(&line);
        if line.contains(what) {
            // The rest of stderr is read by whoever waits for the child.
            child.stderr = Some(reader.into_inner());
            return seen;
        }
    }
}

#[test]
fn second_writer_waits_for_the_lock_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let holder = spawn_lock_holder(&data);
    let mut waiter = child("commit-one", &data)
        .env("CHILD_BIN", tmp.path().join("bin"))
        .env("CHILD_NAME", "waiter")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let said = stderr_until(&mut waiter, "another atip run holds the registry lock");
    // The lock is still held: the waiter cannot have committed.
    assert!(waiter.try_wait().unwrap().is_none(), "did not wait: {said}");
    assert!(!data.join("registry.json").exists());
    holder.release();
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", common::show(&out));
    let stderr = said + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .matches("another atip run holds the registry lock")
            .count(),
        1,
        "said once: {stderr}"
    );
    assert!(stderr.contains("registry.lock"), "{stderr}");
    assert_valid(&data);
}

#[test]
fn lock_wait_has_a_limit_and_fails_as_temporary() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    // The lock is held until the waiter has exited: only its own limit can end its wait.
    let holder = spawn_lock_holder(&data);
    let out = child("commit-one", &data)
        .env("CHILD_BIN", tmp.path().join("bin"))
        .env("CHILD_NAME", "impatient")
        .env("CHILD_LOCK_TIMEOUT", "300ms")
        .output()
        .unwrap();
    holder.release();
    assert_eq!(out.status.code(), Some(75), "{}", common::show(&out));
    let err = stdout_line(&out, "ERROR:");
    assert_eq!(err["code"], "registry_locked");
    assert_eq!(err["category"], "temporary");
    assert_eq!(err["retryable"], true);
    assert!(!data.join("registry.json").exists());
}

#[test]
fn kill_9_mid_write_leaves_a_valid_registry() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    // A first registry, so every round starts from a valid one.
    run_commit(&data, &big_update(&bin, "seed", 60, 30));
    let mut versions = std::collections::HashSet::new();
    for round in 0..10 {
        use std::io::BufRead;
        let mut c = child("loop", &data)
            .env("CHILD_BIN", &bin)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut reader = std::io::BufReader::new(c.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("READY") {
            line.clear();
            assert!(
                reader.read_line(&mut line).unwrap() > 0,
                "round {round}: child died"
            );
        }
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_millis(5 + (seed >> 33) % 150));
        c.kill().unwrap(); // SIGKILL
        c.wait().unwrap();
        let index = assert_valid(&data);
        assert_eq!(index.tools.len(), 60, "round {round}");
        versions.insert(index.tools["t010"].version.clone());
    }
    // The next commit clears whatever temp files the killed writers left.
    run_commit(&data, &big_update(&bin, "c", 60, 0));
    assert_valid(&data);
    for dir in [data.clone(), data.join("tools")] {
        for e in fs::read_dir(dir).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            assert!(!name.starts_with(".atip-tmp-"), "temp file left: {name}");
        }
    }
    eprintln!("versions seen after kills: {versions:?}");
}

// ---------------------------------------------------------------- unwritable targets

#[test]
fn full_disk_on_registry_write_is_exit_73_and_old_registry_untouched() {
    // Simulates a full disk with RLIMIT_FSIZE (works as root, unlike chmod): metadata
    // files are small enough to be written, the new registry.json is not.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&tmp.path().join("other"), "gh", "gh");
    run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![],
        },
    );
    let before = fs::read(data.join("registry.json")).unwrap();
    let out = child("fsize", &data)
        .env("CHILD_BIN", &bin)
        .env("CHILD_FSIZE", "4096")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(73), "{}", common::show(&out));
    let err = stdout_line(&out, "ERROR:");
    assert_eq!(err["code"], "registry_write_failed");
    assert_eq!(err["category"], "output");
    assert!(
        err["message"].as_str().unwrap().contains("registry.json"),
        "{err}"
    );
    assert!(err["hint"].as_str().unwrap().contains("full"), "{err}");
    assert_eq!(fs::read(data.join("registry.json")).unwrap(), before);
    for e in fs::read_dir(&data).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.starts_with(".atip-tmp-"), "temp file left: {name}");
    }
    assert_valid(&data);
}

#[test]
fn unwritable_tools_dir_is_an_output_error_and_old_registry_untouched() {
    // Simulates a read-only data dir as root: `tools` is a regular file, so no metadata
    // file can be created under it (ENOTDIR), whatever the permissions.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin.clone()],
        },
    );
    let before = fs::read(data.join("registry.json")).unwrap();
    fs::rename(data.join("tools"), tmp.path().join("tools-moved")).unwrap();
    fs::write(data.join("tools"), b"not a dir").unwrap();
    let err = commit(
        &dirs_at(&data),
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "2", 0))],
            scanned_dirs: vec![bin.clone()],
        },
        &opts(),
    )
    .unwrap_err();
    let e = err.to_atip();
    assert_eq!(e.exit_code(), 73, "{e:?}");
    assert!(e.message.contains("tools"), "{}", e.message);
    assert_eq!(fs::read(data.join("registry.json")).unwrap(), before);
}

#[test]
fn data_dir_that_cannot_be_created_is_an_output_error() {
    // Simulates an uncreatable data dir as root: its parent is a regular file.
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("file"), b"x").unwrap();
    let data = tmp.path().join("file/data");
    let err = commit(&dirs_at(&data), &Update::default(), &opts()).unwrap_err();
    let e = err.to_atip();
    assert_eq!(e.exit_code(), 73);
    assert_eq!(e.code, "registry_write_failed");
    assert!(e.message.contains("file/data"), "{}", e.message);
}

// ---------------------------------------------------------------- list / get / doctor

/// A sandbox whose registry holds gh (native), kubectl (shim-hash) and kubectx (shim).
fn populated() -> (common::Sandbox, PathBuf) {
    let sb = common::Sandbox::new();
    let bin = sb.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let kc = make_bin(&bin, "kubectl", "kubectl");
    let kx = make_bin(&bin, "kubectx", "kubectx");
    let mut kc_found = fresh("kubectl", &kc, doc("kubectl", "1.30", 1));
    kc_found.source = Source::ShimHash;
    kc_found.trust = "community".into();
    kc_found.shim_registry = Some("/usr/share/agent-tools/shims".into());
    let mut kx_found = fresh("kubectx", &kx, doc("kubectx", "0.9", 0));
    kx_found.source = Source::Shim;
    kx_found.trust = "community".into();
    commit(
        &dirs_at(&sb.data_dir()),
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "2.40.0", 0)), kc_found, kx_found],
            scanned_dirs: vec![bin.clone()],
        },
        &opts(),
    )
    .unwrap();
    (sb, bin)
}

fn json_out(cmd: &mut Command) -> (Option<i32>, Value, String) {
    let out = cmd.output().unwrap();
    let stdout: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout not JSON ({e}): {}", common::show(&out)));
    (
        out.status.code(),
        stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn err_json(out: &std::process::Output) -> Value {
    let text = String::from_utf8_lossy(&out.stderr);
    let line = text
        .lines()
        .find(|l| l.starts_with("{\"error\""))
        .unwrap_or_else(|| {
            panic!("no JSON error: {}", common::show(out));
        });
    serde_json::from_str::<Value>(line).unwrap()["error"].clone()
}

#[test]
fn list_outputs_json_filters_by_glob_and_source() {
    let (sb, bin) = populated();
    let (code, all, _) = json_out(sb.atip().args(["--output", "json", "list"]));
    assert_eq!(code, Some(0));
    let names: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["gh", "kubectl", "kubectx"]);
    let gh = &all[0];
    assert_eq!(gh["path"], bin.join("gh").to_str().unwrap());
    assert_eq!(gh["source"], "native");
    assert_eq!(gh["version"], "2.40.0");
    assert_eq!(gh["commands"], 3);
    assert_eq!(
        gh["effects"],
        "mixed: 1/2 destructive, 2/2 network, 1/2 read-only"
    );
    assert_eq!(gh["description"], "The gh tool");
    assert!(gh["metadata"].as_str().unwrap().starts_with("tools/"));
    assert_eq!(all[1]["shimRegistry"], "/usr/share/agent-tools/shims");

    let (_, kube, _) = json_out(sb.atip().args(["--output", "json", "list", "kube*"]));
    assert_eq!(kube.as_array().unwrap().len(), 2);
    let (_, shims, _) = json_out(
        sb.atip()
            .args(["--output", "json", "list", "--source", "shim"]),
    );
    assert_eq!(shims.as_array().unwrap().len(), 1);
    assert_eq!(shims[0]["name"], "kubectx");
    let (_, both, _) = json_out(sb.atip().args([
        "--output",
        "json",
        "list",
        "--source",
        "shim",
        "--source",
        "shim-hash",
        "*ctl",
    ]));
    assert_eq!(both.as_array().unwrap().len(), 1);
    assert_eq!(both[0]["name"], "kubectl");

    let out = sb
        .atip()
        .args(["--output", "text", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("EFFECTS"),
        "{text}"
    );
    // A header, three tools and the count line.
    assert_eq!(lines.len(), 5, "{text}");
    assert!(
        lines[1].starts_with("gh ") && lines[1].contains("2.40.0") && lines[1].contains("native")
    );
    assert_eq!(lines[4], "3 tools", "{text}");

    let out = sb
        .atip()
        .args(["--output", "json", "list", "a[b"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::show(&out));
    assert_eq!(err_json(&out)["code"], "invalid_glob");
}

#[test]
fn list_without_a_registry_is_empty_and_says_how_to_make_one() {
    let sb = common::Sandbox::new();
    let (code, v, stderr) = json_out(sb.atip().args(["--output", "json", "list"]));
    assert_eq!(code, Some(0));
    assert_eq!(v, json!([]));
    assert!(stderr.contains("atip scan"), "{stderr}");
}

#[test]
fn get_prints_whole_or_partial_metadata() {
    let (sb, _) = populated();
    let (code, whole, _) = json_out(sb.atip().args(["get", "kubectl"]));
    assert_eq!(code, Some(0));
    let stored: Value = serde_json::from_slice(&doc("kubectl", "1.30", 1)).unwrap();
    assert_eq!(whole, stored);

    let (code, part, _) = json_out(sb.atip().args(["get", "kubectl", "--commands", "delete"]));
    assert_eq!(code, Some(0));
    assert_eq!(part["partial"], true);
    assert_eq!(part["filter"]["commands"], json!(["delete"]));
    assert_eq!(part["totalCommands"], 4);
    assert_eq!(part["includedCommands"], 1);
    assert_eq!(
        part["commands"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["delete"]
    );
    assert_eq!(part["omitted"]["reason"], "filtered");
    assert_eq!(part["omitted"]["safetyAssumption"], "unknown");

    let (_, nested, _) = json_out(
        sb.atip()
            .args(["get", "kubectl", "--commands", "list all,c0"]),
    );
    assert_eq!(
        nested["includedCommands"], 3,
        "list (on the way), list all, c0: {nested}"
    );

    let (_, shallow, _) = json_out(sb.atip().args(["get", "kubectl", "--depth", "1"]));
    assert_eq!(shallow["filter"]["depth"], 1);
    assert_eq!(shallow["includedCommands"], 3);
    assert_eq!(shallow["omitted"]["reason"], "depth-limited");
    assert!(shallow["commands"]["list"].get("commands").is_none());

    let out = sb
        .atip()
        .args(["get", "kubectl", "--depth", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::show(&out));
}

#[test]
fn get_unknown_names_exit_66_with_suggestions() {
    let (sb, _) = populated();
    let out = sb
        .atip()
        .args(["--output", "json", "get", "kubect"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", common::show(&out));
    assert!(out.stdout.is_empty());
    let e = err_json(&out);
    assert_eq!(e["code"], "tool_not_found");
    assert_eq!(e["details"]["suggestions"], json!(["kubectl", "kubectx"]));

    let out = sb
        .atip()
        .args(["--output", "text", "get", "gj"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("no tool named \"gj\"") && stderr.contains("did you mean gh"),
        "{stderr}"
    );

    let out = sb
        .atip()
        .args(["--output", "json", "get", "kubectl", "--commands", "delet"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", common::show(&out));
    let e = err_json(&out);
    assert_eq!(e["code"], "command_not_found");
    assert_eq!(e["details"]["suggestions"][0], "delete");

    // A hostile name is just a key that is not there.
    let out = sb
        .atip()
        .args(["get", "../../etc/passwd"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));

    let empty = common::Sandbox::new();
    let out = empty
        .atip()
        .args(["--output", "json", "get", "gh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(err_json(&out)["code"], "registry_not_found");
}

#[test]
fn get_refuses_a_tampered_metadata_file() {
    let (sb, _) = populated();
    let index = load(&sb.data_dir());
    let file = sb.data_dir().join(&index.tools["gh"].metadata);
    let mut v: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    v["description"] = json!("Totally harmless");
    fs::write(&file, serde_json::to_vec(&v).unwrap()).unwrap();
    let out = sb
        .atip()
        .args(["--output", "json", "get", "gh"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65), "{}", common::show(&out));
    assert_eq!(err_json(&out)["code"], "metadata_tampered");
}

#[test]
fn doctor_reports_healthy_then_each_problem_with_a_fix() {
    let (sb, bin) = populated();
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["healthy"], true);
    assert_eq!(v["tools"], 3);
    assert_eq!(v["problems"], json!([]));
    let out = sb
        .atip()
        .args(["--output", "text", "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 tools checked, no problems"));

    // gh changes, kubectl vanishes, kubectx loses its execute bit and its metadata.
    fs::write(bin.join("gh"), "#!/bin/sh\necho new version\n").unwrap();
    fs::remove_file(bin.join("kubectl")).unwrap();
    fs::set_permissions(bin.join("kubectx"), fs::Permissions::from_mode(0o644)).unwrap();
    let index = load(&sb.data_dir());
    fs::remove_file(sb.data_dir().join(&index.tools["kubectx"].metadata)).unwrap();

    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["healthy"], false);
    let found: Vec<(String, String)> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["tool"].as_str().unwrap().to_string(),
                p["check"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expect = [
        ("gh", "binary-changed"),
        ("kubectl", "binary-missing"),
        ("kubectx", "binary-not-executable"),
        ("kubectx", "metadata-missing"),
    ];
    assert_eq!(
        found,
        expect.map(|(a, b)| (a.to_string(), b.to_string())).to_vec()
    );
    for p in v["problems"].as_array().unwrap() {
        assert!(
            p["fix"].as_str().unwrap().contains("atip scan")
                || p["fix"].as_str().unwrap().contains("chmod"),
            "{p}"
        );
    }
    let out = sb
        .atip()
        .args(["--output", "text", "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("✗ 4 problems in 3 of 3 tools checked"),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("gh ") && l.contains("program changed")),
        "{text}"
    );
    assert!(
        text.contains("- run `atip scan` to update the registry"),
        "{text}"
    );
    // In full, with --verbose: each problem with its fix.
    let out = sb
        .atip()
        .args(["--output", "text", "--verbose", "doctor"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("✗ gh: program changed") && text.contains("fix: run `atip scan`"),
        "{text}"
    );
}

#[test]
fn doctor_checks_the_registry_file_itself() {
    let sb = common::Sandbox::new();
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1));
    assert_eq!(v["problems"][0]["check"], "registry-missing");
    assert_eq!(v["problems"][0]["tool"], Value::Null);

    let (sb, _) = populated();
    let reg = sb.data_dir().join("registry.json");
    let mut index: Value = serde_json::from_slice(&fs::read(&reg).unwrap()).unwrap();
    index["tools"]["gh"]["hash"] = json!("sha256:NOTHEX");
    fs::write(&reg, serde_json::to_vec(&index).unwrap()).unwrap();
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1));
    let checks: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["check"].as_str().unwrap())
        .collect();
    assert!(checks.contains(&"registry-schema"), "{v}");
    assert!(checks.contains(&"binary-changed"), "{v}");
    assert!(
        v["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("/tools/gh/hash"),
        "{v}"
    );

    fs::write(&reg, b"[1, 2").unwrap();
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1));
    assert_eq!(v["problems"][0]["check"], "registry-corrupt");
    assert!(
        v["problems"][0]["fix"]
            .as_str()
            .unwrap()
            .contains("atip scan")
    );
}

#[test]
fn hand_edited_entries_cannot_point_outside_the_data_dir() {
    let (sb, bin) = populated();
    let reg = sb.data_dir().join("registry.json");
    let mut index: Value = serde_json::from_slice(&fs::read(&reg).unwrap()).unwrap();
    let mut evil = index["tools"]["gh"].clone();
    evil["metadata"] = json!("../../../etc/passwd");
    index["tools"]["evil"] = evil.clone();
    index["tools"]["../up"] = index["tools"]["kubectl"].clone();
    fs::write(&reg, serde_json::to_vec_pretty(&index).unwrap()).unwrap();

    // Readers refuse to follow the path.
    let out = sb
        .atip()
        .args(["--output", "json", "get", "evil"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65), "{}", common::show(&out));
    assert!(out.stdout.is_empty());
    assert!(
        err_json(&out)["message"]
            .as_str()
            .unwrap()
            .contains("tools/<sha256 hex>.json")
    );
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1));
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["check"] == "registry-schema"),
        "{v}"
    );

    // The next writer drops both entries (with warnings) even though the scan itself
    // changes nothing, and keeps the sound ones.
    let gh = bin.join("gh");
    let report = run_commit(
        &sb.data_dir(),
        &Update {
            found: vec![unchanged("gh", &gh)],
            scanned_dirs: vec![],
        },
    );
    assert!(report.written);
    assert_eq!(report.warnings.len(), 2, "{:?}", report.warnings);
    let index = assert_valid(&sb.data_dir());
    assert_eq!(
        index.tools.keys().collect::<Vec<_>>(),
        ["gh", "kubectl", "kubectx"]
    );
}

#[test]
fn another_format_version_is_kept_aside_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    let future = br#"{"version": "3", "updated": "2030-01-01T00:00:00Z", "agent": {"name": "atip", "version": "9"}, "tools": {}}"#;
    fs::write(data.join("registry.json"), future).unwrap();
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let report = run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin],
        },
    );
    assert!(
        report.warnings[0].contains("format version \"3\""),
        "{:?}",
        report.warnings
    );
    assert_eq!(fs::read(report.corrupt_backup.unwrap()).unwrap(), future);
    assert_eq!(assert_valid(&data).version, "2");
}

#[test]
fn corrupt_registry_warning_reaches_stderr_and_readers_report_it() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    fs::create_dir_all(&data).unwrap();
    // What the reference scanners write: a version "1" array. Not format 2.
    let legacy = br#"[{"name": "gh", "path": "/usr/bin/gh"}]"#;
    fs::write(data.join("registry.json"), legacy).unwrap();

    let sb = common::Sandbox::new();
    let out = sb
        .atip()
        .env("ATIP_DATA_DIR", &data)
        .args(["--output", "json", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(65), "{}", common::show(&out));
    let e = err_json(&out);
    assert_eq!(e["code"], "registry_corrupt");
    assert!(e["hint"].as_str().unwrap().contains("atip scan"));

    let out = child("commit-one", &data)
        .env("CHILD_BIN", tmp.path().join("bin"))
        .env("CHILD_NAME", "gh")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::show(&out));
    // The library returns the warning (the CLI prints it once); it prints nothing itself.
    let report = stdout_line(&out, "REPORT:");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("is corrupt") && warnings.contains("registry.json.corrupt-"),
        "{warnings}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("warning:"),
        "{}",
        common::show(&out)
    );
    let aside = PathBuf::from(report["corrupt_backup"].as_str().unwrap());
    assert_eq!(fs::read(aside).unwrap(), legacy);
    let index = assert_valid(&data);
    assert_eq!(index.tools.keys().collect::<Vec<_>>(), ["gh"]);
    // doctor mentions the file kept aside, without calling it a problem.
    let (code, v, _) = json_out(
        sb.atip()
            .env("ATIP_DATA_DIR", &data)
            .args(["--output", "json", "doctor"]),
    );
    assert_eq!(code, Some(0), "{v}");
    assert!(
        v["notes"][0]
            .as_str()
            .unwrap()
            .contains("registry.json.corrupt-"),
        "{v}"
    );
}

#[test]
fn doctor_validates_stored_documents_like_atip_validate() {
    let sb = common::Sandbox::new();
    let bin = sb.path().join("bin");
    let odd = make_bin(&bin, "odd", "odd");
    // Parses as metadata, but `name` breaks the schema (letters, digits, `_`, `-`).
    let mut v: Value = serde_json::from_slice(&doc("odd", "1", 0)).unwrap();
    v["name"] = json!("odd name!");
    let document = serde_json::to_vec(&v).unwrap();
    run_commit(
        &sb.data_dir(),
        &Update {
            found: vec![fresh("odd", &odd, document)],
            scanned_dirs: vec![bin],
        },
    );
    let (code, v, _) = json_out(sb.atip().args(["--output", "json", "doctor"]));
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["problems"][0]["check"], "metadata-invalid", "{v}");
    assert!(
        v["problems"][0]["message"]
            .as_str()
            .unwrap()
            .contains("/name"),
        "{v}"
    );
}

#[test]
fn unchanged_with_another_source_is_stale() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    run_commit(
        &data,
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin.clone()],
        },
    );
    let mut f = unchanged("gh", &gh);
    f.source = Source::Override;
    let report = run_commit(
        &data,
        &Update {
            found: vec![f],
            scanned_dirs: vec![bin.clone()],
        },
    );
    assert_eq!(names(&report.stale), ["gh"]);
    assert!(load(&data).tools.is_empty());
}

#[test]
fn readers_never_see_a_partial_registry_while_a_writer_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let bin = tmp.path().join("bin");
    let a = big_update(&bin, "a", 60, 20);
    let b = big_update(&bin, "b", 60, 20);
    run_commit(&data, &a);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (data, done) = (data.clone(), done.clone());
        std::thread::spawn(move || {
            let dirs = dirs_at(&data);
            let mut reads = 0u32;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                let index = Index::load(&dirs).unwrap().expect("registry present");
                assert_eq!(index.tools.len(), 60);
                // Alternating a/b keeps both generations' files, so every look-up works.
                let tool = atip::registry::query::get_tool(&dirs, "t050").unwrap();
                assert!(matches!(tool.entry.version.as_deref(), Some("a" | "b")));
                reads += 1;
            }
            reads
        })
    };
    for i in 0..16 {
        let r = run_commit(&data, if i % 2 == 0 { &b } else { &a });
        assert!(r.written);
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
}

#[test]
fn registry_path_taken_by_a_directory_is_an_output_error() {
    // Simulates an unreplaceable registry.json as root: a directory sits in its place.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    fs::create_dir_all(data.join("registry.json/keep")).unwrap();
    let bin = tmp.path().join("bin");
    let gh = make_bin(&bin, "gh", "gh");
    let err = commit(
        &dirs_at(&data),
        &Update {
            found: vec![fresh("gh", &gh, doc("gh", "1", 0))],
            scanned_dirs: vec![bin],
        },
        &opts(),
    )
    .unwrap_err();
    let e = err.to_atip();
    assert_eq!(
        (e.exit_code(), e.code.as_str()),
        (73, "registry_write_failed")
    );
    assert!(e.message.contains("registry.json"), "{}", e.message);
    assert!(data.join("registry.json/keep").is_dir());
    // Readers report it as unreadable input.
    let sb = common::Sandbox::new();
    let out = sb
        .atip()
        .env("ATIP_DATA_DIR", &data)
        .args(["--output", "json", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(66), "{}", common::show(&out));
    assert_eq!(err_json(&out)["code"], "registry_unreadable");
}

// ---------------------------------------------------------------- merge rule, as a property

/// One scan of the property test: binaries to delete first, tools found (index,
/// `Some(version)` for Fresh, `None` for Unchanged), dirs covered.
#[derive(Debug, Clone)]
struct Step {
    delete: Vec<usize>,
    found: Vec<(usize, Option<u8>)>,
    scanned: [bool; 3],
}

fn step_strategy() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    (
        proptest::collection::vec(0usize..6, 0..2),
        proptest::collection::vec((0usize..6, proptest::option::of(0u8..3)), 0..6),
        any::<[bool; 3]>(),
    )
        .prop_map(|(delete, found, scanned)| Step {
            delete,
            found,
            scanned,
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: crate::common::proptest_cases(24), ..Default::default() })]

    /// The registry after any sequence of scans equals a model of the merge rule:
    /// found tools are upserted (Unchanged only keeps an existing entry), other
    /// entries go when their dir was scanned or their binary vanished; the write is
    /// skipped exactly when nothing changed.
    #[test]
    fn merge_rule_matches_its_model(steps in proptest::collection::vec(step_strategy(), 1..5)) {
        use std::collections::BTreeMap;
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("data");
        let dir_of = |i: usize| tmp.path().join(format!("d{}", i % 3));
        let bins: Vec<PathBuf> = (0..6).map(|i| make_bin(&dir_of(i), &format!("n{i}"), &format!("n{i}"))).collect();
        let mut model: BTreeMap<String, String> = BTreeMap::new();
        let mut exists = [true; 6];
        let mut first = true;
        for step in steps {
            for &d in &step.delete {
                if exists[d] {
                    fs::remove_file(&bins[d]).unwrap();
                    exists[d] = false;
                }
            }
            let mut found = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for &(i, v) in &step.found {
                if !exists[i] || !seen.insert(i) {
                    continue;
                }
                let name = format!("n{i}");
                found.push(match v {
                    Some(v) => fresh(&name, &bins[i], doc(&name, &v.to_string(), 0)),
                    None => unchanged(&name, &bins[i]),
                });
            }
            let scanned: Vec<PathBuf> = (0..3).filter(|&d| step.scanned[d]).map(dir_of).collect();
            // The model.
            let before = model.clone();
            let found_names: std::collections::HashSet<String> = found.iter().map(|f| f.name.clone()).collect();
            model.retain(|name, _| {
                let i: usize = name[1..].parse().unwrap();
                found_names.contains(name) || (exists[i] && !step.scanned[i % 3])
            });
            for &(i, v) in &step.found {
                let name = format!("n{i}");
                if !exists[i] || !found_names.contains(&name) {
                    continue;
                }
                match v {
                    Some(v) if step.found.iter().find(|(j, _)| *j == i) == Some(&(i, Some(v))) => {
                        model.insert(name, v.to_string());
                    }
                    None if step.found.iter().find(|(j, _)| *j == i) == Some(&(i, None))
                        && !before.contains_key(&name) =>
                    {
                        model.remove(&name);
                    }
                    _ => {}
                }
            }
            let report = run_commit(&data, &Update { found, scanned_dirs: scanned });
            let index = assert_valid(&data);
            let got: BTreeMap<String, String> = index
                .tools
                .iter()
                .map(|(n, e)| (n.clone(), e.version.clone().unwrap()))
                .collect();
            proptest::prop_assert_eq!(&got, &model);
            proptest::prop_assert_eq!(report.written, first || model != before, "{:?}", report);
            first = false;
        }
    }
}

#[test]
fn list_text_neutralises_terminal_escapes_from_descriptions() {
    let sb = common::Sandbox::new();
    // Even the directory name carries an escape sequence (doctor prints paths).
    let bin = sb.path().join("bin\u{1b}[31m");
    let evil = make_bin(&bin, "evil", "evil");
    let mut v: Value = serde_json::from_slice(&doc("evil", "1", 0)).unwrap();
    v["description"] = json!("\u{1b}]0;pwned\u{7}\u{1b}[2J clears your screen\nsecond line");
    run_commit(
        &sb.data_dir(),
        &Update {
            found: vec![fresh("evil", &evil, serde_json::to_vec(&v).unwrap())],
            scanned_dirs: vec![bin.clone()],
        },
    );
    let out = sb
        .atip()
        .args(["--output", "text", "list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("clears your screen"), "{text}");
    // A header, the tool and the count line: the newline did not make a row.
    assert_eq!(text.lines().count(), 3, "{text}");
    // JSON output carries the exact text; escaping is the JSON encoder's job.
    let (_, v, _) = json_out(sb.atip().args(["--output", "json", "list"]));
    assert!(v[0]["description"].as_str().unwrap().starts_with('\u{1b}'));
    // doctor's text output too (the binary vanished: its path is in the message).
    fs::remove_file(&evil).unwrap();
    let out = sb
        .atip()
        .args(["--output", "text", "doctor"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("binary") || text.contains("gone"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
}

#[test]
fn the_cli_prints_the_lock_wait_once_through_its_printer() {
    // The library only reports the wait; `atip scan` prints it as its own note, once, and
    // not at all with --quiet.
    // Both scans wait on one holder: the quiet one starts first and holds the lock file
    // open (it is in its wait) before the other's note says the lock is still held.
    let sb = common::Sandbox::new();
    let holder = spawn_lock_holder(&sb.data_dir());
    let scan = |quiet: bool| {
        let mut cmd = sb.atip();
        if quiet {
            cmd.arg("--quiet");
        }
        cmd.args(["scan", "--output", "json"])
            .env("PATH", sb.path().join("empty-bin"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let quiet = scan(true);
    let lock = sb.data_dir().join("registry.lock");
    let fds = format!("/proc/{}/fd", quiet.id());
    let until = std::time::Instant::now() + Duration::from_secs(30);
    while !fs::read_dir(&fds)
        .unwrap()
        .any(|e| fs::read_link(e.unwrap().path()).is_ok_and(|t| t == lock))
    {
        assert!(
            std::time::Instant::now() < until,
            "the quiet scan never reached the lock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut loud = scan(false);
    let said = stderr_until(&mut loud, "note: another atip run holds the registry lock");
    holder.release();
    for (out, said, expected) in [
        (quiet.wait_with_output().unwrap(), String::new(), 0),
        (loud.wait_with_output().unwrap(), said, 1),
    ] {
        assert!(out.status.success(), "{}", common::show(&out));
        let stderr = said + &String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr
                .matches("note: another atip run holds the registry lock")
                .count(),
            expected,
            "{stderr}"
        );
    }
}
