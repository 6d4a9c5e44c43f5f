//! Export and search benchmarks on a synthetic registry: 500 tools × 20 runnable commands
//! (10,000 flattened commands). Run by hand: `benches/export.sh` (or `cargo bench --bench export`).
//!
//! Targets: `atip export` whole process < 100 ms wall and < 50 MB peak RSS; search load
//! (registry read + flatten + index) < 100 ms; < 20 ms per query after load.

use atip::compile::{Catalog, FlattenOptions};
use atip::dirs::Dirs;
use atip::search::{SearchIndex, SearchOptions};
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TOOLS: usize = 500;
const GROUPS: usize = 4;
const LEAVES: usize = 5;

const WORDS: &[&str] = &[
    "create",
    "delete",
    "list",
    "show",
    "update",
    "sync",
    "archive",
    "restore",
    "deploy",
    "build",
    "test",
    "release",
    "package",
    "image",
    "container",
    "volume",
    "network",
    "secret",
    "token",
    "user",
    "group",
    "role",
    "policy",
    "bucket",
    "object",
    "queue",
    "topic",
    "stream",
    "table",
    "index",
    "schema",
    "migration",
    "backup",
    "snapshot",
    "cluster",
    "node",
    "pod",
    "service",
    "ingress",
    "certificate",
    "domain",
    "record",
    "zone",
    "function",
    "trigger",
    "schedule",
    "job",
    "pipeline",
    "workflow",
    "artifact",
    "cache",
    "log",
    "metric",
    "alert",
    "dashboard",
    "report",
    "issue",
    "pull",
    "request",
    "branch",
    "commit",
    "tag",
    "remote",
    "repository",
    "fork",
    "mirror",
    "webhook",
    "key",
    "file",
    "directory",
    "path",
    "archive",
    "compress",
    "extract",
    "encrypt",
    "decrypt",
    "sign",
    "verify",
    "upload",
    "download",
    "copy",
    "move",
    "rename",
    "watch",
    "status",
    "config",
    "setting",
    "profile",
    "account",
    "project",
];

fn w(i: usize) -> &'static str {
    WORDS[i % WORDS.len()]
}

fn sentence(seed: usize, n: usize) -> String {
    let mut s: Vec<&str> = (0..n)
        .map(|k| w(seed.wrapping_mul(31).wrapping_add(k * 17 + k * k)))
        .collect();
    let first = s[0].to_string();
    let cap = first[..1].to_uppercase() + &first[1..];
    s[0] = Box::leak(cap.into_boxed_str());
    s.join(" ")
}

fn tool_doc(t: usize) -> Value {
    let opt = |name: String, ty: &str, seed: usize| json!({"name": name, "flags": [format!("--{name}")], "type": ty, "description": sentence(seed, 8)});
    let mut groups = serde_json::Map::new();
    for g in 0..GROUPS {
        let mut leaves = serde_json::Map::new();
        for l in 0..LEAVES {
            let seed = t * 1000 + g * 100 + l;
            let effects = match l % 4 {
                0 => json!({"destructive": false, "filesystem": {"write": false}}),
                1 => json!({"destructive": true, "reversible": false}),
                2 => json!({"idempotent": false, "cost": {"billable": l % 2 == 0}}),
                _ => json!({"network": true}),
            };
            leaves.insert(
                format!("{}-{l}", w(seed)),
                json!({"description": sentence(seed, 12), "effects": effects,
                       "arguments": [{"name": "target", "type": "string", "description": sentence(seed + 1, 6)},
                                     {"name": "paths", "type": "file", "description": sentence(seed + 2, 6), "required": false, "variadic": true}],
                       "options": [opt(format!("{}-mode", w(seed + 3)), "enum", seed + 3),
                                   opt("limit".into(), "integer", seed + 4), opt("force".into(), "boolean", seed + 5),
                                   opt(format!("{}-name", w(seed + 6)), "string", seed + 6), opt("out".into(), "directory", seed + 7)]}),
            );
            if let Some(o) = leaves[&format!("{}-{l}", w(seed))]["options"][0].as_object_mut() {
                o.insert("enum".into(), json!(["fast", "safe", "full"]));
            }
        }
        groups.insert(
            format!("{}{g}", w(t + g)),
            json!({"description": sentence(t * 7 + g, 6), "options": [opt("project".into(), "string", t + g)], "commands": leaves}),
        );
    }
    json!({"atip": {"version": "0.6"}, "name": format!("tool{t:03}"), "version": "1.0.0",
           "description": sentence(t, 10), "effects": {"network": true},
           "globalOptions": [opt("verbose".into(), "boolean", t), opt("config".into(), "file", t + 1), opt("profile".into(), "string", t + 2)],
           "commands": groups})
}

fn write_registry(data: &Path) {
    std::fs::create_dir_all(data.join("tools")).unwrap();
    let mut tools = serde_json::Map::new();
    for t in 0..TOOLS {
        let doc = tool_doc(t);
        let hex = format!("{:064x}", t + 1);
        std::fs::write(
            data.join(format!("tools/{hex}.json")),
            serde_json::to_vec_pretty(&doc).unwrap(),
        )
        .unwrap();
        let name = format!("tool{t:03}");
        tools.insert(name.clone(), json!({"path": format!("/usr/bin/{name}"), "hash": format!("sha256:{hex}"), "source": "native",
            "lastChecked": "2026-01-01T00:00:00Z", "description": doc["description"], "atip": "0.6", "trust": "native",
            "effects": "network", "commands": GROUPS * (LEAVES + 1), "metadata": format!("tools/{hex}.json")}));
    }
    let index = json!({"version": "2", "updated": "2026-01-01T00:00:00Z", "agent": {"name": "atip", "version": "0.1.0"}, "tools": tools});
    std::fs::write(
        data.join("registry.json"),
        serde_json::to_vec_pretty(&index).unwrap(),
    )
    .unwrap();
}

/// CPU seconds (user + system) of every waited-for child so far.
fn child_cpu() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime fills the struct we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn child_maxrss_kib() -> i64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut u) };
    u.ru_maxrss
}

/// Process CPU time (all threads), in seconds.
fn cpu() -> f64 {
    let mut t: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: clock_gettime fills the struct we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn ce_ms(s: f64) -> f64 {
    s * 1000.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn stats(mut v: Vec<f64>) -> String {
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    format!(
        "min {:.1} ms, median {:.1} ms, mean {:.1} ms, max {:.1} ms",
        v[0],
        v[v.len() / 2],
        mean,
        v[v.len() - 1]
    )
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let t0 = Instant::now();
    write_registry(&data);
    eprintln!(
        "synthetic registry: {TOOLS} tools x {} runnable commands, written in {:.0} ms ({})",
        GROUPS * LEAVES,
        ms(t0.elapsed()),
        data.display()
    );
    let bin = env!("CARGO_BIN_EXE_atip");
    if let Some(keep) = std::env::var_os("KEEP_REGISTRY") {
        let _ = std::fs::remove_dir_all(&keep);
        std::fs::rename(&data, &keep)
            .or_else(|_| {
                Command::new("cp")
                    .arg("-r")
                    .arg(&data)
                    .arg(&keep)
                    .status()
                    .map(|_| ())
            })
            .unwrap();
        println!("registry kept at {}", Path::new(&keep).display());
        return;
    }
    if std::env::var_os("PHASES").is_some() {
        let dirs = Dirs::resolve(
            Some(&data),
            Some(&tmp.path().join("config")),
            None,
            &atip::env::Env::capture(),
        );
        let (a, ca) = (Instant::now(), cpu());
        let loaded = atip::compile::source::load_registry(&dirs, None).unwrap();
        let (b, cb) = (Instant::now(), cpu());
        let catalog = Catalog::build(&loaded.metas, &FlattenOptions::default());
        let (c, cc) = (Instant::now(), cpu());
        let index = SearchIndex::build(catalog.tools());
        let (d, cd) = (Instant::now(), cpu());
        let list = atip::compile::formats::flat(catalog.tools());
        let mut w = atip::compile::formats::ListWriter::new(
            std::io::sink(),
            atip::compile::Format::OpenaiStrict,
        );
        for t in &list {
            w.push(&atip::compile::formats::element(
                t,
                atip::compile::Format::OpenaiStrict,
            ))
            .unwrap();
        }
        w.finish().unwrap();
        let (e, ce) = (Instant::now(), cpu());
        println!(
            "phases (wall/cpu ms): load {:.0}/{:.0}, flatten {:.0}/{:.0}, index {:.0}/{:.0}, render openai-strict {:.0}/{:.0} ({} docs)",
            ms(b - a),
            ce_ms(cb - ca),
            ms(c - b),
            ce_ms(cc - cb),
            ms(d - c),
            ce_ms(cd - cc),
            ms(e - d),
            ce_ms(ce - cd),
            index.len()
        );
        return;
    }
    for format in [
        "openai-strict",
        "openai",
        "anthropic",
        "gemini",
        "mcp",
        "prompt",
    ] {
        let out = tmp.path().join(format!("out.{format}"));
        let mut walls = Vec::new();
        let mut cpus: Vec<f64> = Vec::new();
        for _ in 0..5 {
            let c0 = child_cpu();
            let start = Instant::now();
            let status = Command::new(bin)
                .args([
                    "--data-dir",
                    data.to_str().unwrap(),
                    "export",
                    "--format",
                    format,
                    "-o",
                    out.to_str().unwrap(),
                ])
                .env("ATIP_CONFIG_DIR", tmp.path().join("config"))
                .status()
                .unwrap();
            walls.push(ms(start.elapsed()));
            cpus.push((child_cpu() - c0) * 1000.0);
            assert!(status.success());
        }
        let size = std::fs::metadata(&out).unwrap().len();
        println!(
            "export --format {format:<13} wall {} ; output {:.1} MiB",
            stats(walls),
            size as f64 / 1048576.0
        );
        println!("{:>30}cpu  {}", "", stats(cpus));
    }
    println!(
        "export peak RSS (max over runs): {:.1} MB",
        child_maxrss_kib() as f64 / 1024.0
    );

    let dirs = Dirs::resolve(
        Some(&data),
        Some(&tmp.path().join("config")),
        None,
        &atip::env::Env::capture(),
    );
    let mut loads = Vec::new();
    let mut load_cpu = Vec::new();
    let mut last = None;
    for _ in 0..5 {
        let c0 = cpu();
        let start = Instant::now();
        let loaded = atip::compile::source::load_registry(&dirs, None).unwrap();
        let catalog = Catalog::build(&loaded.metas, &FlattenOptions::default());
        let index = SearchIndex::build(catalog.tools());
        loads.push(ms(start.elapsed()));
        load_cpu.push((cpu() - c0) * 1000.0);
        last = Some((catalog, index));
    }
    let (catalog, index) = last.unwrap();
    println!(
        "search load (read registry + flatten + index) of {} commands: wall {}",
        catalog.tools().len(),
        stats(loads)
    );
    println!("{:>30}cpu (all threads) {}", "", stats(load_cpu));
    let queries = [
        "pul request",
        "create pull request",
        "delete bucket",
        "list containers",
        "upload artifact",
        "sync repository",
        "restor snapshot",
        "deploy service to cluster",
        "tool042 status",
        "encrypt secret key",
        "watch pipeline logs",
        "download release",
        "rm volume",
        "show config profile",
        "archiv",
        "certificate domain record",
        "qqqqq",
        "tool123 archive0",
        "verify signature",
        "schedule job trigger",
    ];
    let opts = SearchOptions {
        limit: 5,
        schemas: 3,
        format: None,
        explain: false,
        max_bytes: 256 * 1024,
    };
    let mut per_query = Vec::new();
    let mut per_query_cpu = Vec::new();
    for _ in 0..5 {
        for q in queries {
            let c0 = thread_cpu();
            let start = Instant::now();
            let report = atip::search::search(&catalog, &index, q, &opts);
            per_query.push(ms(start.elapsed()));
            per_query_cpu.push((thread_cpu() - c0) * 1000.0);
            std::hint::black_box(report);
        }
    }
    println!(
        "search query (limit 5, 3 schemas) over {} commands, {} queries: wall {}",
        index.len(),
        per_query.len(),
        stats(per_query)
    );
    println!("{:>30}cpu {}", "", stats(per_query_cpu));
    let start = Instant::now();
    let status = Command::new(bin)
        .args([
            "--data-dir",
            data.to_str().unwrap(),
            "--output",
            "json",
            "search",
            "pul request",
        ])
        .env("ATIP_CONFIG_DIR", tmp.path().join("config"))
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    println!("atip search whole process: {:.1} ms", ms(start.elapsed()));
}
