//! `mcp`, the mcp-cli document's command (spec/mcp-cli.md): atip's real binary started
//! as `mcp` through the link `atip mcp link-cli` makes in the sandbox, against real MCP
//! servers — small Python servers on stdio (tests/fixtures/mcp/cli_server.py and
//! fake_server.py), the reference server-everything from npm over stdio and Streamable
//! HTTP, and atip's own Streamable HTTP server. One test per requirement group; the
//! table in spec/mcp-cli.md names them.

use crate::common::{self, Sandbox, show};
use crate::mcp_client::{everything_bin, fake_script, free_port, python, wait_port, with_node};
use serde_json::{Value, json};
use std::io::Write as _;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const SECRET: &str = "supersecretvalue123";

fn cli_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp/cli_server.py")
}

/// A sandbox with `home/`, a project dir `proj/` and `bin/mcp`, a link to the built atip
/// made by `atip mcp link-cli`.
fn sandbox() -> Option<(Sandbox, PathBuf)> {
    let Some(py) = python() else {
        common::skip("python3 not found");
        return None;
    };
    Some((linked(Sandbox::new()), py))
}

/// `sb` with `home/`, `proj/` and the link `bin/mcp`.
fn linked(sb: Sandbox) -> Sandbox {
    for d in ["home", "proj", "bin"] {
        std::fs::create_dir_all(sb.path().join(d)).unwrap();
    }
    let o = sb
        .atip()
        .args(["mcp", "link-cli", "--dir"])
        .arg(sb.path().join("bin"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    sb
}

/// `mcp` in the sandbox: HOME, atip's dirs and the tools cache inside it, working in
/// `proj/`, a secret in the environment, no stdin.
fn mcp(sb: &Sandbox) -> Command {
    let mut c = Command::new(sb.path().join("bin/mcp"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", sb.path().join("home"))
        .env("XDG_CONFIG_HOME", sb.path().join("xdg-config"))
        .env("XDG_CACHE_HOME", sb.path().join("xdg-cache"))
        .env("XDG_STATE_HOME", sb.path().join("xdg-state"))
        .env("XDG_DATA_HOME", sb.path().join("xdg-data"))
        .env("ATIP_DATA_DIR", sb.data_dir())
        .env("ATIP_CONFIG_DIR", sb.config_dir())
        .env("ATIP_STATE_DIR", sb.path().join("state"))
        .env("ATIP_CACHE_DIR", sb.path().join("cache"))
        .env("MY_SECRET", SECRET)
        .env("NO_COLOR", "1")
        .current_dir(sb.path().join("proj"))
        .stdin(Stdio::null());
    c
}

fn run(sb: &Sandbox, args: &[&str]) -> Output {
    mcp(sb).args(args).output().unwrap()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json_out(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}\n{}", show(o)))
}

#[track_caller]
fn code(o: &Output, want: i32) {
    assert_eq!(o.status.code(), Some(want), "{}", show(o));
}

/// A server entry running cli_server.py (mode `mode`).
fn cli_entry(py: &Path, mode: &str) -> Value {
    json!({"transport": "stdio", "command": py, "args": [cli_script(), mode]})
}

/// A server entry running fake_server.py (mode `mode`), its token from `${MY_SECRET}`.
fn fake_entry(py: &Path, mode: &str) -> Value {
    json!({"command": py, "args": [fake_script(), mode], "env": {"FAKE_TOKEN": "${MY_SECRET}"}})
}

fn global(sb: &Sandbox, doc: &Value) -> PathBuf {
    sb.write("home/.mcp-cli/config.json", doc.to_string())
}

fn project_file(sb: &Sandbox, name: &str, text: &str) -> PathBuf {
    let p = sb.write(&format!("proj/mcp-cli/{name}"), text);
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    p
}

fn atip_trust(sb: &Sandbox, path: &Path) {
    let o = sb
        .atip()
        .args(["mcp", "trust"])
        .arg(path)
        .current_dir(sb.path().join("proj"))
        .output()
        .unwrap();
    code(&o, 0);
}

/// §5.2: ~/.mcp-cli then ./mcp-cli, merged by server name (a trusted project file
/// overrides), JSON and YAML, first file name wins per directory, defaultServer,
/// MCP_CLI_SERVER, --config-dir; §5.1 `servers` text and JSON; `atip mcp` reads the same
/// files after its own, with their origin.
#[test]
fn config_directories_merge_by_name_in_json_and_yaml() {
    let Some((sb, py)) = sandbox() else { return };
    global(
        &sb,
        &json!({"defaultServer": "b", "servers": {
            "a": cli_entry(&py, "ok"),
            "b": {"transport": "http", "url": "http://127.0.0.1:9/mcp",
                  "headers": {"Authorization": "Bearer ${MY_SECRET}"}}}}),
    );
    // config.json wins over config.yaml in the same directory.
    sb.write(
        "home/.mcp-cli/config.yaml",
        "servers: {zz: {command: never}}\n",
    );
    let yaml = format!(
        "# the project's servers\nservers:\n  b:\n    transport: stdio\n    command: {py}\n    args: ['{script}', ok]\n  c:\n    command: {py}\n    args:\n      - '{script}'\n      - ok\n    timeoutMs: 5000\n",
        py = py.display(),
        script = cli_script().display()
    );
    let proj = project_file(&sb, "config.yml", &yaml);

    // Untrusted: the project's servers are named, not used; the global ones are.
    let o = run(&sb, &["servers"]);
    code(&o, 0);
    let text = out(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        format!("a\tstdio\t{} {} ok", py.display(), cli_script().display())
    );
    assert!(
        lines[1].starts_with("b\thttp\thttp://127.0.0.1:9/mcp"),
        "{text}"
    );
    assert!(lines.iter().all(|l| l.split('\t').count() == 3), "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("c\tstdio\tnot started:")),
        "{text}"
    );
    assert!(!text.contains("zz") && !text.contains(SECRET), "{text}");
    assert!(err(&o).contains("atip mcp trust"), "{}", show(&o));

    atip_trust(&sb, &proj);
    let o = run(&sb, &["servers", "--json"]);
    code(&o, 0);
    let v = json_out(&o);
    let s = v["servers"].as_array().unwrap();
    let names: Vec<&str> = s.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["a", "b", "c"], "{v}");
    // The project's `b` replaced the global one (the document's rule).
    assert_eq!(s[1]["transport"], "stdio");
    assert!(
        s[1]["origin"]
            .as_str()
            .unwrap()
            .ends_with("mcp-cli/config.yml")
    );
    assert_eq!(s[1]["default"], true);
    assert!(
        s[0]["origin"]
            .as_str()
            .unwrap()
            .ends_with(".mcp-cli/config.json")
    );

    // defaultServer picks `b` (now the project's stdio server); MCP_CLI_SERVER and
    // --server win over it.
    let o = run(&sb, &["ping", "--json"]);
    code(&o, 0);
    assert_eq!(json_out(&o)["server"], "b");
    let o = mcp(&sb)
        .env("MCP_CLI_SERVER", "c")
        .args(["ping", "--json"])
        .output()
        .unwrap();
    code(&o, 0);
    assert_eq!(json_out(&o)["server"], "c");
    let o = mcp(&sb)
        .env("MCP_CLI_SERVER", "c")
        .args(["--server", "a", "ping", "--json"])
        .output()
        .unwrap();
    code(&o, 0);
    assert_eq!(json_out(&o)["server"], "a");

    // --config-dir replaces ~/.mcp-cli.
    sb.write(
        "other/config.json",
        json!({"servers": {"only": cli_entry(&py, "ok")}}).to_string(),
    );
    let dir = sb.path().join("other");
    let o = run(
        &sb,
        &["--config-dir", dir.to_str().unwrap(), "servers", "--json"],
    );
    code(&o, 0);
    let names: Vec<String> = json_out(&o)["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["only", "b", "c"]);

    // `atip mcp servers` reads the same files after its own mcp.json, whose `a` keeps
    // its name; the origin column names each file.
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"a": {"command": "atip-own-a"}}}).to_string(),
    );
    let o = sb
        .atip()
        .args(["mcp", "servers", "--output", "text"])
        .current_dir(sb.path().join("proj"))
        .output()
        .unwrap();
    code(&o, 0);
    let text = out(&o);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .to_string()
    };
    let a = row("a");
    assert!(
        a.contains(" stdio ") && a.contains(" atip-own-a ") && a.ends_with("mcp.json"),
        "{text}"
    );
    assert!(text.contains("mcp-cli/config.yml\n"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("http://127.0.0.1:9/mcp") && l.ends_with(".mcp-cli/config.json")),
        "{text}"
    );
    assert!(err(&o).contains("is ignored"), "{}", show(&o));

    // A YAML syntax error names the file and the line: exit 2.
    project_file(&sb, "config.yml", "servers:\n  x: [1,\n");
    atip_trust_expect_fail(&sb, &proj);
    let yaml_global = sb.write("home/.mcp-cli/config.json", "servers: {");
    let o = run(&sb, &["servers"]);
    code(&o, 2);
    assert!(
        err(&o).contains(yaml_global.to_str().unwrap()),
        "{}",
        show(&o)
    );
}

fn atip_trust_expect_fail(sb: &Sandbox, path: &Path) {
    let o = sb.atip().args(["mcp", "trust"]).arg(path).output().unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert!(err(&o).contains("line"), "{}", show(&o));
}

/// Attack: a cloned repository's ./mcp-cli/config.json (and .yaml) whose server command
/// touches a marker. No `mcp` command runs it until the user trusted that exact file,
/// and `atip mcp` does not either; a change after trusting untrusts it again.
#[test]
fn an_untrusted_project_config_never_starts_its_servers() {
    let Some((sb, py)) = sandbox() else { return };
    let marker = sb.path().join("PWNED");
    let evil = json!({"defaultServer": "evil", "servers": {"evil": {
        "command": "/bin/sh",
        "args": ["-c", format!("touch '{}'; exec '{}' '{}' ok", marker.display(), py.display(), cli_script().display())]}}});
    let proj = project_file(&sb, "config.json", &evil.to_string());
    let tries: &[&[&str]] = &[
        &["servers"],
        &["servers", "--json"],
        &["tools"],
        &["--server", "evil", "tools"],
        &["tools", "--server", "evil"],
        &["describe", "cwd"],
        &["tool-search", "issue"],
        &["call", "cwd", "--yes"],
        &["ping"],
    ];
    for args in tries {
        let o = run(&sb, args);
        assert!(
            !marker.exists(),
            "`mcp {}` ran the payload: {}",
            args.join(" "),
            show(&o)
        );
        if args[0] != "servers" {
            code(&o, 2);
            assert!(
                err(&o).contains("mcp_config_untrusted") || err(&o).contains("not trusted"),
                "{}",
                show(&o)
            );
        }
    }
    for args in [
        &["mcp", "servers"][..],
        &["mcp", "tools"],
        &["search", "--mcp-refresh", "issue"],
    ] {
        let o = sb
            .atip()
            .args(args)
            .current_dir(sb.path().join("proj"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(
            !marker.exists(),
            "`atip {}` ran the payload: {}",
            args.join(" "),
            show(&o)
        );
    }
    // The same in YAML (a .yaml next to no .json).
    std::fs::remove_file(&proj).unwrap();
    let yaml = project_file(
        &sb,
        "config.yaml",
        &format!(
            "servers:\n  evil:\n    command: /bin/sh\n    args: ['-c', \"touch '{}'\"]\n",
            marker.display()
        ),
    );
    let o = run(&sb, &["--server", "evil", "tools"]);
    code(&o, 2);
    assert!(!marker.exists(), "{}", show(&o));
    // An alias bomb in an untrusted YAML file is refused, not expanded.
    std::fs::write(&yaml, "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nservers: {}\n").unwrap();
    let o = run(&sb, &["servers"]);
    code(&o, 0);

    // Trusted: it runs (the marker shows the trust is what held it back) …
    let proj = project_file(&sb, "config.json", &evil.to_string());
    std::fs::remove_file(&yaml).unwrap();
    // `atip mcp trust` with no path finds ./mcp-cli/config.json when there is no .mcp.json.
    let o = sb
        .atip()
        .args(["mcp", "trust", "--output", "json"])
        .current_dir(sb.path().join("proj"))
        .output()
        .unwrap();
    code(&o, 0);
    assert_eq!(
        Path::new(json_out(&o)["trusted"]["path"].as_str().unwrap()),
        proj.canonicalize().unwrap()
    );
    let o = run(&sb, &["tools"]);
    code(&o, 0);
    assert!(marker.exists(), "{}", show(&o));
    std::fs::remove_file(&marker).unwrap();
    // … and one changed byte untrusts it.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&proj)
        .unwrap();
    f.write_all(b" ").unwrap();
    drop(f);
    let o = run(&sb, &["tools", "--no-cache"]);
    code(&o, 2);
    assert!(!marker.exists(), "{}", show(&o));
}

/// §7: global flags before or after the subcommand; --output/--json, --pretty; §5.1
/// `tools` (text and JSON), `describe`, `ping`; the tools cache (--verbose shows hits,
/// --no-cache and --cache-ttl 0 bypass it); --quiet-server-stderr; cwd.
#[test]
fn flags_go_anywhere_and_list_commands_print_the_documents_shapes() {
    let Some((sb, py)) = sandbox() else { return };
    let cwd_dir = sb.path().join("server-home");
    std::fs::create_dir_all(&cwd_dir).unwrap();
    let mut fake = fake_entry(&py, "ok");
    fake["cwd"] = json!("${SERVER_DIR}");
    global(
        &sb,
        &json!({"servers": {"cli": cli_entry(&py, "ok"), "fake": fake},
                "cache": {"enabled": true, "ttlSeconds": 600}}),
    );
    let before = run(&sb, &["--server", "cli", "--json", "tools"]);
    let after = run(&sb, &["tools", "--server", "cli", "--json"]);
    code(&before, 0);
    code(&after, 0);
    let (b, a) = (json_out(&before), json_out(&after));
    assert_eq!(b["tools"], a["tools"]);
    assert_eq!(b["server"], "cli");
    assert_eq!(a["cached"], true, "the second listing came from the cache");
    assert!(
        out(&before).lines().count() == 1,
        "one line without --pretty"
    );
    let o = run(
        &sb,
        &["tools", "--server", "cli", "--output", "json", "--pretty"],
    );
    code(&o, 0);
    assert!(out(&o).lines().count() > 5);
    let o = run(&sb, &["--server=cli", "tools"]);
    code(&o, 0);
    assert!(
        out(&o).contains("createIssue\tOpen a new ticket in a tracker\n"),
        "{}",
        show(&o)
    );
    // Several servers, none chosen: usage (2), naming them.
    let o = run(&sb, &["tools"]);
    code(&o, 2);
    assert!(
        err(&o).contains("cli, fake") && err(&o).contains("MCP_CLI_SERVER"),
        "{}",
        show(&o)
    );
    // Cache: --verbose shows the hit; --no-cache and --cache-ttl 0 go to the server.
    let o = run(&sb, &["--verbose", "tools", "--server", "cli"]);
    assert!(err(&o).contains("cache hit"), "{}", show(&o));
    let o = run(
        &sb,
        &["tools", "--server", "cli", "--no-cache", "--verbose"],
    );
    assert!(
        !err(&o).contains("cache hit") && err(&o).contains("initialized"),
        "{}",
        show(&o)
    );
    let o = run(&sb, &["tools", "--server", "cli", "--cache-ttl", "0", "-v"]);
    assert!(err(&o).contains("cache miss"), "{}", show(&o));

    // describe: the definition as listed (JSON by default), unknown → 2.
    let o = run(&sb, &["describe", "createIssue", "--server", "cli"]);
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["name"], "createIssue");
    assert_eq!(v["inputSchema"]["required"], json!(["project", "summary"]));
    let o = run(&sb, &["--server", "cli", "describe", "createIssu"]);
    code(&o, 2);
    assert!(
        err(&o).contains("mcp_tool_not_found") && err(&o).contains("createIssue"),
        "{}",
        show(&o)
    );

    // ping: text by default, JSON on request.
    let o = run(&sb, &["ping", "--server", "cli"]);
    code(&o, 0);
    assert!(
        out(&o).starts_with("cli\tok\tcli-fixture 1.0"),
        "{}",
        show(&o)
    );
    let o = run(&sb, &["--json", "--server", "cli", "ping"]);
    code(&o, 0);
    assert_eq!(json_out(&o)["capabilities"]["tools"], json!({}));

    // The server's stderr is forwarded, prefixed and redacted, unless quieted; cwd and
    // ${VAR} expansion reach the server.
    let o = mcp(&sb)
        .env("SERVER_DIR", &cwd_dir)
        .args([
            "--server",
            "fake",
            "call",
            "echo",
            "--args",
            r#"{"message":"x"}"#,
            "--no-cache",
        ])
        .output()
        .unwrap();
    code(&o, 0);
    assert!(
        err(&o).contains("[fake] fake: starting with token"),
        "{}",
        show(&o)
    );
    assert!(!err(&o).contains(SECRET), "{}", show(&o));
    let o = mcp(&sb)
        .env("SERVER_DIR", &cwd_dir)
        .args([
            "call",
            "echo",
            "--server",
            "fake",
            "--quiet-server-stderr",
            "--args",
            r#"{"message":"x"}"#,
        ])
        .output()
        .unwrap();
    code(&o, 0);
    assert!(!err(&o).contains("fake: starting"), "{}", show(&o));
    let mut cli = cli_entry(&py, "ok");
    cli["cwd"] = json!(cwd_dir);
    global(&sb, &json!({"servers": {"cli": cli}}));
    let o = run(&sb, &["call", "cwd"]);
    code(&o, 0);
    let got = json_out(&o)["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        Path::new(&got).canonicalize().unwrap(),
        cwd_dir.canonicalize().unwrap()
    );
}

/// §5.4: tool-search ranks exact name > part of the name > description, returns
/// `{query, server, results: [{name, description, score, schemaIncluded, inputSchema}]}`,
/// schemas for the top N only, --limit, --schemas, --no-schemas, --explain, the
/// toolSearch defaults of the config.
#[test]
fn tool_search_ranks_by_the_documents_order_and_includes_few_schemas() {
    let Some((sb, py)) = sandbox() else { return };
    global(&sb, &json!({"servers": {"jira": cli_entry(&py, "ok")}}));
    let o = run(&sb, &["--server", "jira", "tool-search", "create issue"]);
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["query"], "create issue");
    assert_eq!(v["server"], "jira");
    let r = v["results"].as_array().unwrap();
    let names: Vec<&str> = r.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names[0], "createIssue", "{v}");
    // The two name matches, then the description match; the unrelated tool never.
    assert_eq!(
        names[1..3]
            .iter()
            .collect::<std::collections::BTreeSet<_>>(),
        ["create_pr", "issue_comment"].iter().collect(),
        "{v}"
    );
    assert_eq!(names[3], "open_ticket", "{v}");
    let scores: Vec<f64> = r.iter().map(|x| x["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // Default: top 5, schemas for the first 3 only.
    assert!(r.len() <= 5);
    for (i, x) in r.iter().enumerate() {
        let keys: Vec<&String> = x.as_object().unwrap().keys().collect();
        assert_eq!(x["schemaIncluded"], i < 3, "{x}");
        assert_eq!(x.get("inputSchema").is_some(), i < 3, "{x}");
        assert!(keys.len() <= 5 && x.get("explain").is_none(), "{x}");
    }
    assert_eq!(
        r[0]["inputSchema"]["required"],
        json!(["project", "summary"])
    );
    // Flags after the query, words joined.
    let o = run(
        &sb,
        &[
            "tool-search",
            "create",
            "issue",
            "--server",
            "jira",
            "--limit",
            "2",
            "--schemas",
            "1",
        ],
    );
    code(&o, 0);
    let r = json_out(&o)["results"].as_array().unwrap().clone();
    assert_eq!(r.len(), 2);
    assert_eq!(
        (
            r[0]["schemaIncluded"].clone(),
            r[1]["schemaIncluded"].clone()
        ),
        (json!(true), json!(false))
    );
    let o = run(
        &sb,
        &["tool-search", "issue", "--server", "jira", "--no-schemas"],
    );
    code(&o, 0);
    assert!(
        json_out(&o)["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| x["schemaIncluded"] == false && x.get("inputSchema").is_none())
    );
    let o = run(
        &sb,
        &[
            "tool-search",
            "create issue",
            "--server",
            "jira",
            "--explain",
        ],
    );
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["results"][0]["explain"]["match"], "exact name", "{v}");
    assert_eq!(v["results"][3]["explain"]["match"], "description", "{v}");
    assert_eq!(
        v["results"][3]["explain"]["descriptionTerms"],
        json!(["create", "issue"]),
        "{v}"
    );
    // The config's toolSearch defaults.
    global(
        &sb,
        &json!({"servers": {"jira": cli_entry(&py, "ok")}, "toolSearch": {"defaultLimit": 2, "defaultSchemas": 0}}),
    );
    let o = run(&sb, &["tool-search", "create issue"]);
    code(&o, 0);
    let r = json_out(&o)["results"].as_array().unwrap().clone();
    assert_eq!(r.len(), 2);
    assert!(r.iter().all(|x| x["schemaIncluded"] == false));
    // A usage error: no query.
    let o = run(&sb, &["tool-search"]);
    code(&o, 2);
}

/// §5.1 `call`: arguments inline, from a file and from stdin; the result as received;
/// --compact; every exit code: 0, 2 (unknown tool, unknown server, bad flag), 3 (cannot
/// start, server died, timeout), 4 (isError, JSON-RPC error, refused by atip's policy),
/// 5 (not JSON, not an object, not matching the schema, unreadable file).
#[test]
fn call_takes_json_three_ways_and_exits_with_the_documents_codes() {
    let Some((sb, py)) = sandbox() else { return };
    global(
        &sb,
        &json!({"defaultServer": "cli", "servers": {
            "cli": cli_entry(&py, "ok"),
            "fake": fake_entry(&py, "ok"),
            "dead": fake_entry(&py, "exit-now"),
            "slow": {"command": py, "args": [fake_script(), "ok"], "timeoutMs": 1500}}}),
    );
    let o = run(&sb, &["call", "create_pr", "--args", r#"{"title":"x"}"#]);
    code(&o, 0);
    assert_eq!(
        json_out(&o),
        json!({"content": [{"type": "text", "text": "create_pr {\"title\": \"x\"}"}]})
    );
    let args = sb.write("args.json", r#"{"project":"ABC","summary":"Bug"}"#);
    let o = run(
        &sb,
        &[
            "call",
            "createIssue",
            "--yes",
            "--args-file",
            args.to_str().unwrap(),
        ],
    );
    code(&o, 0);
    assert!(
        out(&o).contains(r#"createIssue {\"project\": \"ABC\", \"summary\": \"Bug\"}"#),
        "{}",
        show(&o)
    );
    let mut child = mcp(&sb)
        .args(["call", "createIssue", "--args-stdin", "--yes"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"project":"ABC","summary":"Bug"}"#)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    code(&o, 0);
    assert!(out(&o).contains("ABC"), "{}", show(&o));
    // Text output on request.
    let o = run(&sb, &["call", "create_pr", "--output", "text"]);
    code(&o, 0);
    assert_eq!(out(&o), "create_pr {}\n");
    // --compact: base64 payloads left out.
    let o = run(&sb, &["--server", "fake", "call", "image", "--compact"]);
    code(&o, 0);
    assert!(out(&o).contains("bytes of base64 omitted"), "{}", show(&o));

    // 2: unknown tool, unknown server, a bad flag.
    let o = run(&sb, &["call", "nope"]);
    code(&o, 2);
    let o = run(&sb, &["call", "create_pr", "--server", "ghost"]);
    code(&o, 2);
    assert!(
        err(&o).contains("mcp_server_not_found") && err(&o).contains("cli, fake"),
        "{}",
        show(&o)
    );
    let o = run(&sb, &["call", "create_pr", "--no-such-flag"]);
    code(&o, 2);
    // JSON is call's output, so the usage error is one JSON line too.
    let e: Value = serde_json::from_str(err(&o).trim()).unwrap_or_else(|_| panic!("{}", show(&o)));
    assert_eq!(e["error"]["code"], "usage");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--no-such-flag")
    );
    let o = run(&sb, &["tools", "--no-such-flag"]);
    code(&o, 2);
    assert!(err(&o).starts_with("error: "), "{}", show(&o));
    // 3: cannot start; exits mid-call; no answer in timeoutMs.
    let o = run(&sb, &["--server", "dead", "call", "echo", "--args", "{}"]);
    code(&o, 3);
    assert!(err(&o).contains("mcp_connect_failed"), "{}", show(&o));
    let o = run(&sb, &["call", "die", "--server", "fake"]);
    code(&o, 3);
    let o = run(
        &sb,
        &["call", "hang", "--server", "slow", "--quiet-server-stderr"],
    );
    code(&o, 3);
    assert!(err(&o).contains("mcp_timeout"), "{}", show(&o));
    let o = run(
        &sb,
        &["--stdio-command", "/nonexistent/server --x", "call", "x"],
    );
    code(&o, 3);
    // 4: isError (the result still printed), a JSON-RPC error, a call atip's policy
    // refuses (not read-only, no --yes, no terminal).
    let o = run(&sb, &["call", "fail", "--server", "fake"]);
    code(&o, 4);
    assert_eq!(json_out(&o)["isError"], true);
    let o = run(&sb, &["call", "rpc_error"]);
    code(&o, 4);
    assert!(err(&o).contains("backend down"), "{}", show(&o));
    let o = run(&sb, &["call", "delete_repo"]);
    code(&o, 4);
    assert!(err(&o).contains("confirmation_required"), "{}", show(&o));
    // 5: not JSON, not an object, against the schema, an unreadable file, bad stdin.
    for bad in [
        &["--args", "{oops"][..],
        &["--args", "[1]"],
        &["--args", r#"{"project": 5}"#],
        &["--args-file", "/nonexistent/args.json"],
    ] {
        let mut a = vec!["call", "createIssue", "--yes"];
        a.extend_from_slice(bad);
        let o = run(&sb, &a);
        code(&o, 5);
    }
    let mut child = mcp(&sb)
        .args(["call", "create_pr", "--args-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"not json").unwrap();
    let o = child.wait_with_output().unwrap();
    code(&o, 5);
    // Exit codes do not depend on the output format.
    let o = run(&sb, &["call", "nope", "--output", "text"]);
    code(&o, 2);
}

/// §5.4 guardrail: JSON output is capped at 256 KB by default (--max-output changes it):
/// schemas go first, then results, with a `warning` field; a call's text is cut.
#[test]
fn json_output_is_capped_at_256_kb() {
    let Some((sb, py)) = sandbox() else { return };
    global(&sb, &json!({"servers": {"many": cli_entry(&py, "many")}}));
    const CAP: usize = 256 * 1024;
    let o = run(&sb, &["tools", "--json"]);
    code(&o, 0);
    assert!(o.stdout.len() <= CAP + 1, "{} bytes", o.stdout.len());
    let v = json_out(&o);
    assert!(
        v["warning"].as_str().unwrap().contains("262144"),
        "{}",
        v["warning"]
    );
    let tools = v["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 309, "schemas are cut before tools");
    assert!(tools.iter().any(|t| t.get("inputSchema").is_none()));
    assert!(tools[0].get("inputSchema").is_some());
    // Text output is not capped: every tool, one line each.
    let o = run(&sb, &["tools"]);
    assert_eq!(out(&o).lines().count(), 309);
    // tool-search under a small cap: schemas first, then results.
    let o = run(
        &sb,
        &[
            "tool-search",
            "filler tool",
            "--limit",
            "20",
            "--schemas",
            "20",
            "--max-output",
            "8KiB",
        ],
    );
    code(&o, 0);
    assert!(o.stdout.len() <= 8 * 1024 + 1, "{}", o.stdout.len());
    let v = json_out(&o);
    assert!(v["warning"].is_string(), "{v}");
    let r = v["results"].as_array().unwrap();
    assert!(r.iter().filter(|x| x["schemaIncluded"] == true).count() < 20);
    let o = run(
        &sb,
        &[
            "tool-search",
            "filler tool",
            "--limit",
            "25",
            "--no-schemas",
            "--max-output",
            "1KiB",
        ],
    );
    code(&o, 0);
    assert!(o.stdout.len() <= 1024 + 1);
    assert!(json_out(&o)["results"].as_array().unwrap().len() < 25);
    // A call's result: a 600 KB text comes back within 256 KB.
    let o = run(&sb, &["call", "big", "--args", r#"{"n": 600000}"#]);
    code(&o, 0);
    assert!(o.stdout.len() <= CAP + 1, "{}", o.stdout.len());
    assert!(json_out(&o)["content"][0]["text"].as_str().unwrap().len() > 100_000);
}

/// §5.3 and §6: explicit mode (--stdio-command, --http-url), Streamable HTTP with
/// headers against the reference server, --trace/--verbose with secrets redacted, a
/// refused connection is 3.
#[test]
fn explicit_mode_and_streamable_http_against_real_servers() {
    let Some((sb, py)) = sandbox() else { return };
    // No config at all: --stdio-command (words split, no shell) plus --stdio-arg.
    let cmd = format!("{} {}", py.display(), cli_script().display());
    let o = run(
        &sb,
        &[
            "--stdio-command",
            &cmd,
            "--stdio-arg",
            "ok",
            "tools",
            "--json",
        ],
    );
    code(&o, 0);
    assert_eq!(json_out(&o)["server"], "cli");
    let o = run(
        &sb,
        &["call", "create_pr", "--stdio-command", &cmd, "--args", "{}"],
    );
    code(&o, 0);
    // Nothing listens: 3.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let o = run(&sb, &["--http-url", &url, "ping"]);
    code(&o, 3);
    // Said in words, without rmcp's Rust type names (issue 33 item 5:
    // `Transport [atip::mcp::client::Traced<rmcp::transport::…>] error`).
    assert!(
        err(&o).contains("transport error") && !err(&o).contains("::"),
        "{}",
        show(&o)
    );

    let Some(bin) = everything_bin() else { return };
    let mut server = Command::new(&bin);
    with_node(&mut server);
    let _server = crate::mcp_client::Killed(
        server
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    assert!(
        wait_port(port),
        "everything server did not listen on {port}"
    );
    // Explicit mode over HTTP, a secret header sent, never shown.
    let o = run(
        &sb,
        &[
            "--http-url",
            &url,
            "--header",
            &format!("Authorization: Bearer {SECRET}"),
            "--trace",
            "call",
            "echo",
            "--args",
            r#"{"message":"over http"}"#,
        ],
    );
    code(&o, 0);
    assert_eq!(json_out(&o)["content"][0]["text"], "Echo: over http");
    assert!(
        err(&o).contains("->") && !err(&o).contains(SECRET),
        "{}",
        show(&o)
    );
    // From the config: transport http, headers with ${VAR}.
    global(
        &sb,
        &json!({"servers": {"ev": {"transport": "http", "url": url,
        "headers": {"Authorization": "Bearer ${MY_SECRET}"}, "timeoutMs": 30000}}}),
    );
    let o = run(&sb, &["ping", "--json", "--verbose"]);
    code(&o, 0);
    assert_eq!(json_out(&o)["transport"], "http");
    assert!(!err(&o).contains(SECRET), "{}", show(&o));
    let o = run(&sb, &["tool-search", "add two numbers"]);
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["server"], "ev");
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "get-sum"),
        "{v}"
    );
    let o = run(&sb, &["call", "get-sum", "--args", r#"{"a": 2, "b": 40}"#]);
    code(&o, 0);
    assert!(out(&o).contains("42"), "{}", show(&o));
    let o = run(&sb, &["call", "get-sum", "--args", r#"{"a": "2"}"#]);
    code(&o, 5);
    let o = run(&sb, &["servers"]);
    code(&o, 0);
    assert_eq!(out(&o), format!("ev\thttp\t{url}\n"));
}

/// The reference server over stdio, through the config: tools, describe, tool-search, call.
#[test]
fn the_reference_everything_server_over_stdio() {
    let Some((sb, _py)) = sandbox() else { return };
    let Some(bin) = everything_bin() else { return };
    global(
        &sb,
        &json!({"servers": {"everything": {"command": bin, "args": ["stdio"]}}}),
    );
    let node = |args: &[&str]| {
        let mut c = mcp(&sb);
        with_node(&mut c);
        c.args(args).output().unwrap()
    };
    let o = node(&["tools"]);
    code(&o, 0);
    assert!(
        out(&o).lines().any(|l| l.starts_with("get-sum\t")),
        "{}",
        show(&o)
    );
    let o = node(&["describe", "get-sum"]);
    code(&o, 0);
    assert_eq!(json_out(&o)["inputSchema"]["type"], "object");
    let o = node(&["tool-search", "echo", "--limit", "1"]);
    code(&o, 0);
    assert_eq!(json_out(&o)["results"][0]["name"], "echo");
    let o = node(&["call", "echo", "--args", r#"{"message":"hi"}"#]);
    code(&o, 0);
    assert_eq!(json_out(&o)["content"][0]["text"], "Echo: hi");
}

/// `atip mcp link-cli`: idempotent, and never replaces a different file named `mcp`.
#[test]
fn link_cli_is_idempotent_and_refuses_to_overwrite() {
    let Some((sb, _)) = sandbox() else { return };
    let again = sb
        .atip()
        .args(["mcp", "link-cli", "--output", "json", "--dir"])
        .arg(sb.path().join("bin"))
        .output()
        .unwrap();
    code(&again, 0);
    assert_eq!(json_out(&again)["created"], false);
    let other = sb.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("mcp"), "#!/bin/sh\necho mine\n").unwrap();
    let o = sb
        .atip()
        .args(["mcp", "link-cli", "--dir"])
        .arg(&other)
        .output()
        .unwrap();
    assert_ne!(o.status.code(), Some(0), "{}", show(&o));
    assert_eq!(
        std::fs::read_to_string(other.join("mcp")).unwrap(),
        "#!/bin/sh\necho mine\n"
    );
    // A hard link to atip counts as linked.
    let hard = sb.path().join("hard");
    std::fs::create_dir_all(&hard).unwrap();
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_atip")).unwrap();
    if std::fs::hard_link(&exe, hard.join("mcp")).is_ok() {
        let o = sb
            .atip()
            .args(["mcp", "link-cli", "--output", "json", "--dir"])
            .arg(&hard)
            .output()
            .unwrap();
        code(&o, 0);
        assert_eq!(json_out(&o)["created"], false);
        let o = Command::new(hard.join("mcp"))
            .arg("--version")
            .output()
            .unwrap();
        code(&o, 0);
        assert!(out(&o).starts_with("mcp "), "{}", show(&o));
    }
    // strictEnv: a missing variable is a config error (2) instead of a warning.
    let Some(py) = python() else {
        common::skip("python3 not found");
        return;
    };
    global(
        &sb,
        &json!({"servers": {"s": {"command": py, "args": ["${NOT_SET_X}"]}}}),
    );
    let o = run(&sb, &["servers"]);
    code(&o, 0);
    assert!(err(&o).contains("NOT_SET_X is not set"), "{}", show(&o));
    global(
        &sb,
        &json!({"strictEnv": true, "servers": {"s": {"command": py, "args": ["${NOT_SET_X}"]}}}),
    );
    let o = run(&sb, &["servers"]);
    code(&o, 2);
    assert!(
        err(&o).contains("NOT_SET_X") && err(&o).contains("strictEnv"),
        "{}",
        show(&o)
    );
}

/// atip's own Streamable HTTP server (`atip mcp serve --http`, bearer token) as the
/// server of explicit mode: its registered tool is listed, found and called; a wrong
/// token is a transport error (3).
#[test]
fn atips_own_streamable_http_server_through_explicit_mode() {
    const TOKEN: &str = "test-token-0123456789abcdef0123456789";
    let sb = linked(common::tools::sandbox_with_t());
    let mut child = sb
        .atip()
        .args(["mcp", "serve", "--http", "127.0.0.1:0"])
        .env("ATIP_MCP_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(child.stderr.take().unwrap()));
    let url = loop {
        let line = lines
            .next()
            .expect("server exited before its banner")
            .unwrap();
        if let Some(i) = line.find("http://") {
            break line[i..].split(' ').next().unwrap().to_string();
        }
    };
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    let _server = crate::mcp_client::Killed(child);
    let auth = format!("Authorization: Bearer {TOKEN}");
    let o = run(
        &sb,
        &["--http-url", &url, "--header", &auth, "tools", "--json"],
    );
    code(&o, 0);
    let v = json_out(&o);
    assert!(
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "t_echo"),
        "{v}"
    );
    let o = run(
        &sb,
        &[
            "tool-search",
            "print each argument",
            "--http-url",
            &url,
            "--header",
            &auth,
            "--limit",
            "1",
        ],
    );
    code(&o, 0);
    assert_eq!(json_out(&o)["results"][0]["name"], "t_echo", "{}", show(&o));
    let o = run(
        &sb,
        &[
            "call",
            "t_echo",
            "--args",
            r#"{"words": ["hi"]}"#,
            "--http-url",
            &url,
            "--header",
            &auth,
        ],
    );
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["structuredContent"]["status"], "ok", "{v}");
    assert_eq!(v["structuredContent"]["data"]["stdout"], "hi\u{0}", "{v}");
    assert!(!err(&o).contains(TOKEN));
    let o = run(
        &sb,
        &[
            "--http-url",
            &url,
            "--header",
            "Authorization: Bearer wrong-token",
            "ping",
        ],
    );
    code(&o, 3);
    assert!(!err(&o).contains("wrong-token"), "{}", show(&o));
}

/// §5.1 `--compact` with the configurable allowlist/denylist and §5.4 the output cap set
/// by config (`compact`, `maxOutputBytes`): the denylist reaches `structuredContent` and
/// JSON text blocks, the allowlist keeps what the built-in rule drops, `--max-output`
/// wins over the key, a later file's list replaces an earlier one's, a misspelt key is a
/// config error (exit 2), and `atip mcp call --compact` reads the same settings.
#[test]
fn compact_lists_and_the_output_cap_come_from_the_config() {
    let Some((sb, py)) = sandbox() else { return };
    let servers = json!({"cli": cli_entry(&py, "ok")});
    global(
        &sb,
        &json!({"servers": servers, "compact": {"denylist": ["logs", "trace"], "allowlist": ["_meta"]},
                "maxOutputBytes": 4096}),
    );
    let call = |extra: &[&str]| {
        let mut args = vec!["call", "build_report", "--args", "{}"];
        args.extend_from_slice(extra);
        run(&sb, &args)
    };
    // As received without --compact.
    let o = call(&[]);
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["structuredContent"]["logs"].as_array().unwrap().len(), 50);
    // --compact: the denylist goes everywhere, the allowlist keeps `_meta`.
    let o = call(&["--compact"]);
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(v["structuredContent"], json!({"failed": 2}), "{v}");
    let text: Value = serde_json::from_str(v["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, json!({"summary": "2 failed"}));
    assert_eq!(v["_meta"], json!({"server": "cli-fixture"}));
    // The cap from the config: a 20 KB text comes back within 4 KiB; --max-output wins.
    let o = run(&sb, &["call", "big", "--args", r#"{"n": 20000}"#]);
    code(&o, 0);
    assert!(o.stdout.len() <= 4096 + 1, "{}", o.stdout.len());
    let o = run(
        &sb,
        &[
            "call",
            "big",
            "--args",
            r#"{"n": 20000}"#,
            "--max-output",
            "64KiB",
        ],
    );
    code(&o, 0);
    assert!(o.stdout.len() > 20000, "{}", o.stdout.len());
    // A trusted project file's list replaces the global one (lists are not merged).
    let p = project_file(
        &sb,
        "config.json",
        &json!({"compact": {"denylist": ["trace"]}}).to_string(),
    );
    atip_trust(&sb, &p);
    let v = json_out(&call(&["--compact"]));
    assert_eq!(v["structuredContent"]["logs"].as_array().unwrap().len(), 50);
    assert!(v["structuredContent"].get("trace").is_none(), "{v}");
    assert_eq!(
        v["_meta"],
        json!({"server": "cli-fixture"}),
        "allowlist kept"
    );
    // A misspelt list is an error naming it, never ignored.
    std::fs::remove_file(&p).unwrap();
    global(
        &sb,
        &json!({"servers": servers, "compact": {"denyList": ["logs"]}}),
    );
    let o = call(&["--compact"]);
    code(&o, 2);
    assert!(err(&o).contains("compact.denyList"), "{}", err(&o));
    // atip's own `mcp call --compact` reads its mcp.json's lists the same way.
    sb.write(
        "config/mcp.json",
        json!({"mcpServers": {"cli": cli_entry(&py, "ok")}, "compact": {"denylist": ["logs"]}})
            .to_string(),
    );
    std::fs::remove_file(sb.path().join("home/.mcp-cli/config.json")).unwrap();
    let o = sb
        .atip()
        .args([
            "--output",
            "json",
            "mcp",
            "call",
            "build_report",
            "--server",
            "cli",
        ])
        .args(["--args", "{}", "--compact", "--yes"])
        .current_dir(sb.path().join("proj"))
        .output()
        .unwrap();
    code(&o, 0);
    let v = json_out(&o);
    assert_eq!(
        v["structuredContent"],
        json!({"failed": 2, "trace": {"spans": [1, 2, 3]}}),
        "{v}"
    );
    assert!(v.get("_meta").is_none(), "{v}");
}
