//! MCP client and search-mode benchmarks (run by hand: `cargo bench --bench mcp_client`;
//! it builds nothing itself and uses target/release/atip, so `cargo build --release` first).
//!
//! 1. `atip mcp tools` answered from the cache (target < 50 ms per run).
//! 2. `atip mcp call` (cached list) vs the same call made directly with the rmcp SDK:
//!    spawn the server, initialize, one tools/call, close (target < 5 ms overhead).
//! 3. `atip mcp serve` with 10,000 registered commands in search mode: `tools/list`
//!    round trip after initialize (target < 20 ms).
//!
//! The server for 2 is `atip mcp serve` over a one-tool registry: it starts in a few
//! milliseconds, so the comparison is not drowned in interpreter start-up. Medians of
//! interleaved runs, so both sides see the same machine load.

use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn atip() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/atip")
}

/// A registry with one tool `triv` of `n` commands, each `triv cNNNN WORD`.
fn registry(dir: &Path, n: usize) {
    use sha2::{Digest, Sha256};
    std::fs::create_dir_all(dir.join("data/tools")).unwrap();
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let tool = dir.join("bin/triv");
    std::fs::write(&tool, "#!/bin/sh\necho \"$@\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let commands: serde_json::Map<String, serde_json::Value> = (0..n)
        .map(|i| {
            (
                format!("c{i:05}"),
                json!({"description": format!("Command number {i} of the trivial tool"),
                       "effects": {"destructive": false, "idempotent": true},
                       "arguments": [{"name": "word", "type": "string", "description": "A word"}]}),
            )
        })
        .collect();
    let meta = json!({"atip": {"version": "0.6"}, "name": "triv", "version": "1",
                      "description": "Trivial tool", "commands": commands});
    let body = serde_json::to_vec(&meta).unwrap();
    let hex = hex::encode(Sha256::digest(&body));
    std::fs::write(dir.join(format!("data/tools/{hex}.json")), &body).unwrap();
    let reg = json!({"version": "2", "updated": "2026-01-01T00:00:00Z",
        "agent": {"name": "atip", "version": "0"},
        "tools": {"triv": {"path": tool, "hash": format!("sha256:{hex}"), "source": "native",
            "lastChecked": "2026-01-01T00:00:00Z", "description": "Trivial tool", "atip": "0.6",
            "trust": "native", "effects": "read-only", "commands": n,
            "metadata": format!("tools/{hex}.json")}}});
    std::fs::write(dir.join("data/registry.json"), reg.to_string()).unwrap();
}

fn env(cmd: &mut Command, dir: &Path) {
    cmd.env("ATIP_DATA_DIR", dir.join("data"))
        .env("ATIP_CONFIG_DIR", dir.join("config"))
        .env("ATIP_STATE_DIR", dir.join("state"))
        .env("ATIP_CACHE_DIR", dir.join("cache"))
        .current_dir(dir);
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    if !atip().exists() {
        eprintln!("build first: cargo build --release");
        std::process::exit(2);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    registry(d, 1);
    std::fs::create_dir_all(d.join("config")).unwrap();
    // `--no-mcp`: the served atip must not proxy this same config (it would start itself).
    let cfg = json!({"mcpServers": {"self": {"command": atip(), "args": ["mcp", "serve", "--no-mcp"],
        "env": {"ATIP_DATA_DIR": d.join("data"), "ATIP_CONFIG_DIR": d.join("config"),
                "ATIP_STATE_DIR": d.join("state")}}}});
    std::fs::write(d.join("config/mcp.json"), cfg.to_string()).unwrap();
    let run_atip = |args: &[&str]| {
        let mut c = Command::new(atip());
        env(&mut c, d);
        let t = Instant::now();
        let o = c
            .args(args)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        t.elapsed()
    };

    // 1. Cached `atip mcp tools`.
    run_atip(&["mcp", "tools", "--output", "json"]);
    let cached: Vec<Duration> = (0..30)
        .map(|_| run_atip(&["mcp", "tools", "--output", "json"]))
        .collect();
    println!(
        "cached `atip mcp tools`: median {:.1} ms (target < 50 ms)",
        ms(median(cached))
    );

    // 2. One call through atip vs directly through the SDK, interleaved.
    let direct = || {
        rt.block_on(async {
            let mut cmd = tokio::process::Command::new(atip());
            cmd.args(["mcp", "serve", "--no-mcp"])
                .env("ATIP_DATA_DIR", d.join("data"))
                .env("ATIP_CONFIG_DIR", d.join("config"))
                .env("ATIP_STATE_DIR", d.join("state"));
            let t = Instant::now();
            let (proc, _) = TokioChildProcess::builder(cmd)
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let c = ().serve(proc).await.unwrap();
            let args = json!({"word": "hi"}).as_object().unwrap().clone();
            let r = c
                .call_tool(CallToolRequestParams::new("triv_c00000").with_arguments(args))
                .await
                .unwrap();
            assert_eq!(r.is_error, Some(false));
            c.cancel().await.unwrap();
            t.elapsed()
        })
    };
    let through_atip = || {
        run_atip(&[
            "mcp",
            "call",
            "triv_c00000",
            "--args",
            r#"{"word":"hi"}"#,
            "--output",
            "json",
        ])
    };
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for _ in 0..30 {
        a.push(direct());
        b.push(through_atip());
    }
    let (a, b) = (median(a), median(b));
    println!(
        "one call, spawn + initialize + tools/call + close: rmcp SDK direct {:.1} ms, `atip mcp call` {:.1} ms: overhead {:.1} ms (target < 5 ms)",
        ms(a),
        ms(b),
        ms(b) - ms(a)
    );

    // 3. Search-mode listing with 10,000 commands.
    let big = tempfile::tempdir().unwrap();
    registry(big.path(), 10_000);
    let (start, list) = rt.block_on(async {
        let mut cmd = tokio::process::Command::new(atip());
        cmd.args(["mcp", "serve"])
            .env("ATIP_DATA_DIR", big.path().join("data"))
            .env("ATIP_CONFIG_DIR", big.path().join("config"))
            .env("ATIP_STATE_DIR", big.path().join("state"));
        let t = Instant::now();
        let (proc, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let c = ().serve(proc).await.unwrap();
        let start = t.elapsed();
        let mut times = Vec::new();
        for _ in 0..50 {
            let t = Instant::now();
            let tools = c.list_all_tools().await.unwrap();
            times.push(t.elapsed());
            assert_eq!(
                tools.len(),
                2,
                "search mode lists the search and call tools"
            );
        }
        c.cancel().await.unwrap();
        (start, median(times))
    });
    println!(
        "search mode, 10,000 commands: tools/list {:.2} ms (target < 20 ms); start-up to initialized {:.0} ms",
        ms(list),
        ms(start)
    );
}
