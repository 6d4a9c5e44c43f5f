//! `atip search` end to end: ranking on the gh-like fixture and a registry, typo and
//! abbreviation tolerance, schemas for the top K, the byte cap and the JSON shape.

use crate::common;

use sha2::Digest;

use common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::Path;

fn gh() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/export/gh.json")
        .display()
        .to_string()
}

fn search(sb: &Sandbox, args: &[&str]) -> (Option<i32>, Value, String) {
    let out = sb
        .atip()
        .args(["--output", "json", "search"])
        .args(args)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v, show(&out))
}

fn names(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn finds_commands_despite_typos_and_abbreviations() {
    let sb = Sandbox::new();
    let cases: &[(&str, &str, usize)] = &[
        // A typo alone among a dozen `gh pr` siblings that all say "pull request".
        ("pul request", "gh_pr_create", 10),
        ("create pull request", "gh_pr_create", 1),
        ("creat pr", "gh_pr_create", 1),
        ("delete repository", "gh_repo_delete", 1),
        ("gh repo delete", "gh_repo_delete", 1),
        ("upload release asets", "gh_release_upload", 1),
        ("list workflow runs", "gh_run_list", 1),
        ("merge", "gh_pr_merge", 1),
        ("config set", "gh_config_set", 1),
    ];
    for (q, want, within) in cases {
        let (code, v, out) = search(&sb, &["--file", &gh(), "--limit", "10", q]);
        assert_eq!(code, Some(0), "{out}");
        let got = names(&v);
        assert!(
            got.iter().take(*within).any(|n| n == want),
            "{q:?}: wanted {want} in top {within}, got {got:?}"
        );
    }
}

#[test]
fn json_shape_schemas_for_top_k_and_formats() {
    let sb = Sandbox::new();
    let (code, v, out) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--limit",
            "4",
            "--schemas",
            "2",
            "pull",
            "request",
        ],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(v["query"], "pull request");
    assert_eq!(v["truncated"], false);
    let results = v["results"].as_array().unwrap();
    assert_eq!(results.len(), 4);
    let scores: Vec<f64> = results
        .iter()
        .map(|r| r["score"].as_f64().unwrap())
        .collect();
    assert!(
        scores.windows(2).all(|w| w[0] >= w[1]),
        "best first: {scores:?}"
    );
    for (i, r) in results.iter().enumerate() {
        let keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = vec!["name", "kind", "tool", "command", "score", "description"];
        if i < 2 {
            want.push("schema");
        }
        assert_eq!(keys, want);
        assert_eq!(r["tool"], "gh");
        assert_eq!(r["kind"], "command");
    }
    assert_eq!(results[0]["schema"]["type"], "object");
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--format",
            "openai-strict",
            "--schemas",
            "1",
            "delete",
            "label",
        ],
    );
    assert_eq!(v["results"][0]["name"], "gh_label_delete");
    assert_eq!(v["results"][0]["schema"]["function"]["strict"], true);
    assert_eq!(
        v["results"][0]["schema"]["function"]["parameters"]["properties"]["repo"]["type"],
        json!(["string", "null"])
    );
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--format",
            "gemini",
            "--schemas",
            "1",
            "delete",
            "label",
        ],
    );
    assert_eq!(v["results"][0]["schema"]["parameters"]["type"], "OBJECT");
    let (code, _, out) = search(&sb, &["--file", &gh(), "--format", "skill", "x"]);
    assert_eq!(code, Some(2), "{out}");
}

#[test]
fn explain_says_why() {
    let sb = Sandbox::new();
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--explain",
            "--limit",
            "1",
            "pul",
            "request",
        ],
    );
    let why: Vec<&str> = v["results"][0]["why"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    // "pul" reads as "pull" (a typo), and "pull request" as the path word `pr`.
    assert!(
        why.iter()
            .any(|w| w.starts_with("pr (abbreviation of \"pul\")")),
        "{why:?}"
    );
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--explain",
            "--limit",
            "1",
            "upload",
            "asets",
        ],
    );
    assert_eq!(v["results"][0]["name"], "gh_release_upload");
    let why = v["results"][0]["why"].to_string();
    assert!(why.contains("asset (typo of \\\"aset\\\")"), "{why}");
    let out = sb
        .atip()
        .args([
            "--output",
            "text",
            "search",
            "--file",
            &gh(),
            "--explain",
            "gh pr create",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("gh_pr_create"), "{text}");
    assert!(
        text.lines().next().unwrap().contains("  gh pr create  "),
        "{text}"
    );
    assert!(text.contains("why: exact name: +8.00"), "{text}");
    // On a terminal a result is one line; schemas only when asked for by number.
    let text_of = |extra: &[&str]| {
        let out = sb
            .atip()
            .args([
                "--output",
                "text",
                "search",
                "--file",
                &gh(),
                "--limit",
                "5",
            ])
            .args(extra)
            .arg("pull request")
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = text_of(&[]);
    assert_eq!(plain.lines().count(), 5, "{plain}");
    assert!(!plain.contains("schema:"), "{plain}");
    let with = text_of(&["--schemas", "2"]);
    assert_eq!(with.matches("    schema: {").count(), 2, "{with}");
}

#[test]
fn output_is_capped_with_an_explicit_flag() {
    let sb = Sandbox::new();
    for cap in [200usize, 900, 3000] {
        let out = sb
            .atip()
            .args([
                "--output",
                "json",
                "search",
                "--file",
                &gh(),
                "--limit",
                "40",
                "--schemas",
                "40",
                "--max-bytes",
                &cap.to_string(),
                "pull request",
            ])
            .output()
            .unwrap();
        assert!(
            out.stdout.len() <= cap,
            "{} bytes > cap {cap}",
            out.stdout.len()
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["truncated"], true);
    }
    let (_, v, _) = search(
        &sb,
        &[
            "--file",
            &gh(),
            "--limit",
            "40",
            "--schemas",
            "40",
            "pull request",
        ],
    );
    assert_eq!(v["truncated"], false);
    assert!(v["results"].as_array().unwrap().len() > 8);
}

#[test]
fn no_match_exits_1_and_registry_search_spans_tools() {
    let sb = Sandbox::new();
    let (code, v, out) = search(&sb, &["--file", &gh(), "qqqqqqqq"]);
    assert_eq!(code, Some(1), "{out}");
    assert_eq!(v["results"], json!([]));
    let (code, _, out) = search(&sb, &["anything"]);
    assert_eq!(code, Some(66), "no registry: {out}");
    let gh_doc: Value = serde_json::from_str(&std::fs::read_to_string(gh()).unwrap()).unwrap();
    let git = json!({"atip": "0.4", "name": "git", "version": "2", "description": "Distributed version control",
        "commands": {"log": {"description": "Show commit logs", "effects": {"destructive": false}},
                     "commit": {"description": "Record changes to the repository", "options": [{"name": "message", "flags": ["-m", "--message"], "type": "string", "description": "Commit message"}]}}});
    let mut tools = serde_json::Map::new();
    for (i, (name, doc)) in [("gh", gh_doc), ("git", git)].into_iter().enumerate() {
        let _ = i;
        let text = doc.to_string();
        let hex = hex::encode(sha2::Sha256::digest(text.as_bytes()));
        sb.write(&format!("data/tools/{hex}.json"), text);
        tools.insert(name.into(), json!({"path": format!("/usr/bin/{name}"), "hash": format!("sha256:{hex}"), "source": "native",
            "lastChecked": "2026-01-01T00:00:00Z", "description": "d", "atip": "0.6", "trust": "native", "effects": "unknown",
            "commands": 1, "metadata": format!("tools/{hex}.json")}));
    }
    sb.write("data/registry.json", json!({"version": "2", "updated": "2026-01-01T00:00:00Z", "agent": {"name": "atip", "version": "0"}, "tools": tools}).to_string());
    let (code, v, out) = search(&sb, &["commit message"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(names(&v)[0], "git_commit");
    let (_, v, _) = search(&sb, &["--tools", "gh", "commit message"]);
    assert!(!names(&v).contains(&"git_commit".to_string()));
    // Names from search are the names export gives.
    let exported = sb
        .atip()
        .args(["export", "--format", "openai"])
        .output()
        .unwrap();
    let e: Value = serde_json::from_slice(&exported.stdout).unwrap();
    let all: Vec<&str> = e
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    let (_, v, _) = search(&sb, &["--limit", "30", "list"]);
    for n in names(&v) {
        assert!(all.contains(&n.as_str()), "{n} not exported");
    }
}

/// Curated task lines (uses.txt) rank whatever program the registry holds under their
/// name, through the compiled catalog of the real binary: a user's own script registered
/// as `chmod`, whose description says nothing of the task, answers "make a file
/// executable"; `c++filt`'s lines reach its tool, which is called `c__filt`. The result
/// shows the tool's own description, and the lines never permit anything: the policy
/// still withholds a denied tool from the answer.
#[test]
fn task_lines_rank_the_registered_program_by_name_and_never_permit() {
    let sb = Sandbox::new();
    let tool = |name: &str, description: &str| {
        json!({"atip": "0.6", "name": name, "version": "1", "description": description,
               "effects": {"destructive": false, "filesystem": {"read": true, "write": false}}})
    };
    // (file name, tool name, description): distinct scripts, so distinct metadata files.
    for (i, (file, name, description)) in [
        ("chmod", "chmod", "a helper of mine"),
        ("mknod", "mknod", "make block or character special files"),
        ("c++filt", "c__filt", "a filter"),
    ]
    .into_iter()
    .enumerate()
    {
        let script = format!("#!/bin/sh\nexit {i}\n");
        common::tools::register(&sb, file, &tool(name, description), &script, "native");
    }
    let (code, v, out) = search(&sb, &["make a file executable"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(names(&v)[0], "chmod", "{v}");
    assert!(
        v["results"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("a helper of mine"),
        "{v}"
    );
    let (_, v, out) = search(&sb, &["demangle c++ symbol names"]);
    assert_eq!(
        names(&v).first().map(String::as_str),
        Some("c__filt"),
        "{out}"
    );
    sb.write(
        "config/policy.json",
        json!({"tools": {"deny": ["chmod"]}}).to_string(),
    );
    let (_, v, out) = search(&sb, &["make a file executable"]);
    assert!(!names(&v).contains(&"chmod".to_string()), "{out}");
}

/// One way of asking: the ranked results of a query, each as the names that count for it
/// (tool, tool-call name, aliases).
type Ask<'a> = dyn FnMut(&str) -> Vec<Vec<String>> + 'a;

/// Top-1, top-3 and mean reciprocal rank over `tasks`.
fn figures(tasks: &[&Value], ask: &mut Ask<'_>) -> (f64, f64, f64, Vec<String>) {
    let (mut t1, mut t3, mut rr) = (0usize, 0usize, 0f64);
    let mut misses = Vec::new();
    for t in tasks {
        let q = t["q"].as_str().unwrap();
        let want: Vec<&str> = t["want"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap())
            .collect();
        let got = ask(q);
        let at = got
            .iter()
            .position(|names| names.iter().any(|n| want.contains(&n.as_str())));
        t1 += usize::from(at == Some(0));
        t3 += usize::from(at.is_some_and(|i| i < 3));
        rr += at.map_or(0.0, |i| 1.0 / (i + 1) as f64);
        if at != Some(0) {
            let top: Vec<&str> = got.iter().take(3).map(|n| n[1].as_str()).collect();
            misses.push(format!(
                "  {q:?} → {want:?} at {:?}; top 3 {top:?}",
                at.map(|i| i + 1)
            ));
        }
    }
    let n = tasks.len().max(1) as f64;
    (t1 as f64 / n, t3 as f64 / n, rr / n, misses)
}

fn result_names(r: &Value) -> Vec<String> {
    let mut names = vec![
        r["tool"].as_str().unwrap_or_default().to_string(),
        r["name"].as_str().unwrap_or_default().to_string(),
    ];
    if let Some(a) = r["aliases"].as_array() {
        names.extend(a.iter().filter_map(Value::as_str).map(str::to_string));
    }
    names
}

/// The quality gate of issue 31: a scan of this machine's real PATH (its real manual
/// pages), then every task of tests/fixtures/search/tasks.json asked of `atip search` and
/// of `atip mcp serve`'s search tool. Fails below the floors reached (held-out third and
/// the rest apart) or when too few tasks can be asked (programs missing from PATH).
#[test]
fn everyday_tasks_on_the_real_path_meet_the_floors() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let set: Value = serde_json::from_slice(
        &std::fs::read(root.join("tests/fixtures/search/tasks.json")).unwrap(),
    )
    .unwrap();
    let tasks: Vec<&Value> = set["tasks"].as_array().unwrap().iter().collect();
    assert!(tasks.len() >= 150, "the task set needs at least 150 tasks");
    let sb = Sandbox::new();
    let real = |mut c: std::process::Command| {
        c.env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env_remove("MANPATH");
        c
    };
    let mut scan = real(sb.atip());
    let out = scan.arg("scan").output().unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let registry: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    let registered = |w: &str| registry["tools"].get(w).is_some();
    let asked: Vec<&Value> = tasks
        .iter()
        .copied()
        .filter(|t| {
            t["want"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| registered(w.as_str().unwrap()))
        })
        .collect();
    assert!(
        asked.len() * 10 >= tasks.len() * 9,
        "only {} of {} tasks have an answer on this PATH",
        asked.len(),
        tasks.len()
    );
    let (held, tuning): (Vec<&Value>, Vec<&Value>) =
        asked.iter().partition(|t| t["heldout"] == true);
    // Tuning tasks are added as the ranking grows; the held-out part must keep up, or
    // its figures stop saying how the ranking does on tasks nobody tuned for.
    let held_out_total = tasks.iter().filter(|t| t["heldout"] == true).count();
    assert!(
        held_out_total * 3 >= tasks.len(),
        "only {held_out_total} of {} tasks are held out: keep at least a third out of tuning",
        tasks.len()
    );
    // The ranking is measured over every registered command: the default policy denies
    // command runners outright (ssh, env, python, …) and neither `atip search` nor the
    // MCP search tool offers what it denies, which is the policy's choice, not the
    // ranking's (benches/README.md gives the default policy's figures beside these).
    sb.write(
        "config/policy.json",
        json!({"runners": {"allow": ["*"]}}).to_string(),
    );
    // Compact answers: five results, three with schemas, under 8 KB even when the best
    // tools have man pages of hundreds of options (ld, gcc, tar, curl).
    for q in [
        "link object files",
        "compile a C program",
        "create a tar archive",
        "make an http request",
    ] {
        let out = real(sb.atip())
            .args([
                "--output",
                "json",
                "search",
                "--no-mcp",
                "--limit",
                "5",
                "--schemas",
                "3",
                q,
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{q}: {}", show(&out));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["results"].as_array().unwrap().len(), 5, "{q}");
        assert!(out.stdout.len() < 8192, "{q}: {} bytes", out.stdout.len());
    }

    let mut cli = |q: &str| -> Vec<Vec<String>> {
        let out = real(sb.atip())
            .args([
                "--output",
                "json",
                "search",
                "--no-mcp",
                "--limit",
                "10",
                "--schemas",
                "0",
                q,
            ])
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        v["results"]
            .as_array()
            .map_or_else(Vec::new, |r| r.iter().map(result_names).collect())
    };

    use std::io::{BufRead, BufReader, Write};
    let mut child = real(sb.atip())
        .args(["mcp", "serve", "--no-mcp"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut id = 0;
    let mut rpc = |method: &str, params: Value| -> Value {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{msg}").unwrap();
        if method == "initialize" {
            writeln!(
                stdin,
                r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
            )
            .unwrap();
        }
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "server closed stdout"
            );
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    rpc(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let mut mcp = |q: &str| -> Vec<Vec<String>> {
        let r = rpc(
            "tools/call",
            json!({"name": "atip_search_tools", "arguments": {"query": q, "limit": 10, "schemas": 0}}),
        );
        let body = &r["result"]["structuredContent"];
        body["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{q:?}: {r}"))
            .iter()
            .map(|r| {
                let mut names = result_names(r);
                // The MCP result has no `tool`: its title's first word is the program.
                names[0] = r["title"]
                    .as_str()
                    .unwrap_or_default()
                    .split(' ')
                    .next()
                    .unwrap_or_default()
                    .to_string();
                names
            })
            .collect()
    };

    // One ranking everywhere: the CLI and the MCP search tool answer every task with the
    // same five names in the same order.
    let mut differ = Vec::new();
    for t in &asked {
        let q = t["q"].as_str().unwrap();
        let top = |r: Vec<Vec<String>>| -> Vec<String> {
            r.into_iter().take(5).map(|n| n[1].clone()).collect()
        };
        let (c, m) = (top(cli(q)), top(mcp(q)));
        if c != m {
            differ.push(format!("  {q:?}: atip search {c:?}, MCP {m:?}"));
        }
    }
    assert!(
        differ.is_empty(),
        "atip search and atip_search_tools answer differently:\n{}",
        differ.join("\n")
    );
    // And `atip chat`'s search tool (over the same offer: inferred tools included)
    // answers a model with the same five, in the same order.
    use common::endpoint::{Api, Endpoint, Reply};
    let chat = |q: &str| -> Vec<String> {
        let api = Api::Openai;
        let search = [("s1", "atip_search", json!({"query": q, "limit": 5}))];
        let ep = Endpoint::start(vec![
            Reply::ok(api.calls(&search)),
            Reply::ok(api.text("done")),
        ]);
        let out = real(sb.atip())
            .args(["--output", "json", "chat", "--provider", "openai"])
            .args(["--model", "m", "--base-url", &api.base(&ep)])
            .args(["--include-inferred", "find a tool"])
            .env(api.key_var(), "sk-test-0123456789abcdef")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{q}: {}", show(&out));
        let reqs = ep.requests();
        let answer = &api.results(&reqs[1].body, &search)[0].content;
        answer["results"]
            .as_array()
            .unwrap_or_else(|| panic!("{q}: {answer}"))
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    };
    let top5 = |r: Vec<Vec<String>>| -> Vec<String> {
        r.into_iter().take(5).map(|n| n[1].clone()).collect()
    };
    let few = [
        "count lines in a file",
        "list running processes",
        "create a tar archive",
        "show memory usage",
        "change file permissions",
    ];
    for q in few {
        let answered = chat(q);
        assert_eq!(
            answered,
            top5(cli(q)),
            "{q}: atip chat and atip search differ"
        );
        assert_eq!(
            answered,
            top5(mcp(q)),
            "{q}: atip chat and atip_search_tools differ"
        );
    }

    let mut report = String::new();
    let mut fails = Vec::new();
    for (label, ask, floors) in [
        ("atip search", &mut cli as &mut Ask<'_>, FLOORS_CLI),
        (
            "mcp atip_search_tools",
            &mut mcp as &mut Ask<'_>,
            FLOORS_MCP,
        ),
    ] {
        for (part, set, (min1, min3)) in
            [("held-out", &held, floors.0), ("tuning", &tuning, floors.1)]
        {
            let (t1, t3, mrr, misses) = figures(set, ask);
            // Held-out misses are never printed: reading them is tuning on them. The
            // held-out third is reported as totals only.
            let shown = if part == "tuning" {
                misses.join("\n")
            } else {
                format!("  ({} misses not shown)", misses.len())
            };
            report += &format!(
                "{label} {part} ({} tasks): top-1 {:.1}% top-3 {:.1}% MRR {mrr:.3}\n{shown}\n",
                set.len(),
                t1 * 100.0,
                t3 * 100.0,
            );
            if t1 < min1 || t3 < min3 {
                fails.push(format!(
                    "{label} {part}: top-1 {:.1}% (floor {:.0}%), top-3 {:.1}% (floor {:.0}%)",
                    t1 * 100.0,
                    min1 * 100.0,
                    t3 * 100.0,
                    min3 * 100.0
                ));
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    // What the policy denies outright is withheld from chat's search as from `atip
    // search`'s, the next hits taking its place.
    sb.write(
        "config/policy.json",
        json!({"runners": {"allow": ["*"]}, "tools": {"deny": ["wc"]}}).to_string(),
    );
    let q = "count lines in a file";
    let answered = chat(q);
    assert!(!answered.iter().any(|n| n == "wc"), "{answered:?}");
    assert_eq!(
        answered,
        top5(cli(q)),
        "{q}: atip chat and atip search differ"
    );
    eprintln!("{report}");
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// Floors of the real-PATH gate, (top-1, top-3) for the held-out third then the tuning
/// part: what this ranking reaches (benches/README.md, Search quality), less a margin for
/// the machine's PATH varying. With session 20's curated task lines (uses.txt) the
/// held-out part (139 tasks) reaches 91.9% / 97.0% and the tuning part (269) 86.0% / 96.6%.
const FLOORS_CLI: ((f64, f64), (f64, f64)) = ((0.89, 0.95), (0.84, 0.95));
/// `atip mcp serve`'s search tool answers through the same engine search as `atip
/// search` (the gate checks their top five agree), so its floors are the same.
const FLOORS_MCP: ((f64, f64), (f64, f64)) = FLOORS_CLI;

/// A configured MCP server is in every search (issue 31, item 6): a list missing from the
/// cache is fetched from the real server (every missing list at once); a server that
/// never answers is bounded by its `timeoutMs`, named in `notes` (and stderr), and its
/// process stopped; an untrusted project file's server is named and never started; and
/// the cache is not keyed on the expanded token, so rotating it keeps the server's tools.
#[test]
fn mcp_servers_are_in_every_search_and_a_rotated_token_keeps_their_tools() {
    let Some(bin) = crate::mcp_client::everything_bin() else {
        return;
    };
    let sb = Sandbox::new();
    let pid_file = sb.path().join("hang.pid");
    let hang = sb.script(
        "bin/hang",
        &format!(
            "#!/bin/sh\necho $$ > '{}'\nexec tail -f /dev/null\n",
            pid_file.display()
        ),
    );
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {
            "everything": {"command": bin, "args": ["stdio"], "env": {"API_TOKEN": "${EV_TOKEN}"}},
            "hang": {"command": hang, "timeoutMs": 1500}}})
        .to_string(),
    );
    // A server that never answers (its stdout open, nothing written), and a repository's
    // own server: untrusted, so it must never start.
    let marker = sb.path().join("project-server-ran");
    sb.write(
        ".mcp.json",
        json!({"mcpServers": {"proj": {"command": "sh",
            "args": ["-c", format!("touch '{}'", marker.display())]}}})
        .to_string(),
    );
    std::fs::create_dir_all(sb.path().join("empty")).unwrap();
    let o = sb
        .atip()
        .args(["scan", "--path"])
        .arg(sb.path().join("empty"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let search = |token: &str, extra: &[&str]| {
        let mut c = sb.atip();
        crate::mcp_client::with_node(&mut c);
        let o = c
            .env("EV_TOKEN", token)
            .args(["--output", "json", "search"])
            .args(extra)
            .arg("sum of two numbers")
            .output()
            .unwrap();
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
        let found =
            v["results"].as_array().unwrap().iter().any(|r| {
                r["server"] == "everything" && r["name"].as_str().unwrap().contains("sum")
            });
        (v, found, String::from_utf8_lossy(&o.stderr).into_owned())
    };
    // Nothing cached: both trusted servers are asked at once; everything answers, hang
    // does not, and the search still returns.
    let (v, found, stderr) = search("token-one", &[]);
    assert!(found, "the missing list was not fetched: {v} {stderr}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("MCP server hang left out") && notes.contains("1500ms"),
        "{v}"
    );
    assert!(stderr.contains("MCP server hang left out"), "{stderr}");
    assert!(
        notes.contains(".mcp.json"),
        "the untrusted project file is not named: {v}"
    );
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::assert_dead(pid);
    assert!(!marker.exists(), "an untrusted project server was started");

    // The list is cached now: the next search connects to nothing for it.
    std::fs::remove_file(&pid_file).unwrap();
    let (v, found, _) = search("token-one", &["--no-mcp"]);
    assert!(!found && v.get("notes").is_none(), "{v}");
    // The token rotates: the cached list is still this server's.
    let (v, found, stderr) = search("token-two", &[]);
    assert!(found, "rotating the token emptied search: {v} {stderr}");
    assert!(!v["notes"].to_string().contains("everything"), "{v}");
    // No cache file is named after a secret's value.
    for e in walk(&sb.path().join("xdg-cache")) {
        assert!(!e.contains("token-"), "{e}");
    }
    assert!(!marker.exists(), "an untrusted project server was started");
}

/// A list past the cache's TTL is fetched again by a plain search (no flag), the same
/// bounded way as a missing one; when the server then does not answer, the old list is
/// used with a note naming it, and the stuck process is stopped.
#[test]
fn stale_mcp_lists_are_fetched_again_and_used_with_a_note_when_that_fails() {
    let Some(bin) = crate::mcp_client::everything_bin() else {
        return;
    };
    let sb = Sandbox::new();
    let (starts, stuck, pid_file) = (
        sb.path().join("starts"),
        sb.path().join("stuck"),
        sb.path().join("ev.pid"),
    );
    // One command (one cache key) that serves, or hangs once `stuck` exists.
    let ev = sb.script(
        "bin/ev",
        &format!(
            "#!/bin/sh\necho start >> '{starts}'\nif [ -e '{stuck}' ]; then echo $$ > '{pid}'; exec tail -f /dev/null; fi\nexec '{bin}' stdio\n",
            starts = starts.display(),
            stuck = stuck.display(),
            pid = pid_file.display(),
            bin = bin.display()
        ),
    );
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"ev": {"command": ev, "timeoutMs": 3000}}}).to_string(),
    );
    std::fs::create_dir_all(sb.path().join("empty")).unwrap();
    let o = sb
        .atip()
        .args(["scan", "--path"])
        .arg(sb.path().join("empty"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let search = || {
        let mut c = sb.atip();
        crate::mcp_client::with_node(&mut c);
        let o = c
            .args(["--output", "json", "search", "sum of two numbers"])
            .output()
            .unwrap();
        let v: Value =
            serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&o)));
        let found = v["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["server"] == "ev" && r["name"].as_str().unwrap().contains("sum"));
        (v, found)
    };
    let started = || {
        std::fs::read_to_string(&starts)
            .unwrap_or_default()
            .lines()
            .count()
    };
    // The cached list, made older than the TTL (300 s by default) by its own clock.
    let age_cache = || {
        let files: Vec<String> = walk(&sb.path().join("xdg-cache"))
            .into_iter()
            .filter(|f| f.ends_with(".json"))
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        let mut c: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
        let at = c["fetchedAtMs"].as_u64().unwrap();
        c["fetchedAtMs"] = json!(at - 3_600_000);
        std::fs::write(&files[0], c.to_string()).unwrap();
    };
    let (v, found) = search();
    assert!(found && started() == 1, "{v}");
    // Fresh: used as it is, nothing started.
    let (v, found) = search();
    assert!(found && started() == 1, "{v}");
    // Stale: fetched again without `--mcp-refresh`, and no note.
    age_cache();
    let (v, found) = search();
    assert!(found && started() == 2, "{v}");
    assert!(v.get("notes").is_none(), "{v}");
    // Stale, and the server no longer answers: the old list, with a note; the process
    // that hung is gone.
    age_cache();
    std::fs::write(&stuck, "").unwrap();
    let (v, found) = search();
    assert!(found && started() == 3, "the stale list was not used: {v}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("MCP server ev") && notes.contains("could not be fetched again"),
        "{v}"
    );
    assert!(notes.contains("3s") && notes.contains("old"), "{v}");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    common::assert_dead(pid);
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}
