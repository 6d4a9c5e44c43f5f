//! `atip mcp install|uninstall --host H` through the real binary, on real-shaped config
//! files of each host at their documented places inside the sandbox's HOME: install,
//! install again (no change), uninstall (the file as before, byte for byte), a dry run
//! that writes nothing, and a malformed file left untouched.

use crate::common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

const CLAUDE_CODE: &str = r#"{
  "numStartups": 12,
  "installMethod": "npm",
  "autoUpdates": true,
  "projects": {
    "/home/u/src/app": {
      "allowedTools": [],
      "mcpServers": {}
    }
  },
  "mcpServers": {
    "github": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}
    }
  },
  "userID": "0f3c"
}
"#;

const CLAUDE_DESKTOP: &str = r#"{
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/Desktop"]
        }
    },
    "globalShortcut": ""
}"#;

const CURSOR: &str = "{\n  \"mcpServers\": {\n    \"sentry\": {\n      \"url\": \"https://mcp.sentry.dev/mcp\"\n    }\n  }\n}\n";

const VSCODE: &str = r#"// VS Code user MCP servers
{
	"servers": {
		// Git, through uvx
		"git": {
			"type": "stdio",
			"command": "uvx",
			"args": ["mcp-server-git"],
		},
	},
	"inputs": [
		{"type": "promptString", "id": "token", "description": "API token", "password": true}
	]
}
"#;

const CODEX: &str = r#"# Codex configuration
model = "o3"
approval_policy = "on-request"

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-docs"]   # pinned by hand
env = { "API_KEY" = "x" }

[profiles.fast]
model = "o4-mini"
"#;

const GEMINI: &str = r#"{
  "theme": "Default",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {
    "git": {"command": "uvx", "args": ["mcp-server-git"], "timeout": 30000, "trust": false}
  }
}
"#;

/// (host, file under the sandbox root, real-shaped content).
fn hosts() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        ("claude-code", "home/.claude.json", CLAUDE_CODE),
        (
            "claude-desktop",
            "xdg-config/Claude/claude_desktop_config.json",
            CLAUDE_DESKTOP,
        ),
        ("cursor", "home/.cursor/mcp.json", CURSOR),
        ("vscode", "xdg-config/Code/User/mcp.json", VSCODE),
        ("codex", "home/.codex/config.toml", CODEX),
        ("gemini-cli", "home/.gemini/settings.json", GEMINI),
    ]
}

fn atip(sb: &Sandbox, cwd: &Path, args: &[&str]) -> Output {
    sb.atip()
        .current_dir(cwd)
        .args(["--output", "json", "mcp"])
        .args(args)
        .output()
        .unwrap()
}

fn report(out: &Output) -> Value {
    assert!(out.status.success(), "{}", show(out));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", show(out)))
}

/// atip's entry as the host will read it: (command, args).
fn entry(host: &str, text: &str) -> (String, Vec<String>) {
    let e = if host == "codex" {
        let doc = toml_entry(text);
        return doc;
    } else {
        let v: Value = serde_json::from_str(&strip_jsonc(text)).expect("JSON after install");
        let key = if host == "vscode" {
            "servers"
        } else {
            "mcpServers"
        };
        v[key]["atip"].clone()
    };
    (
        e["command"].as_str().unwrap_or_default().to_string(),
        e["args"]
            .as_array()
            .map(|a| a.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default(),
    )
}

/// The `[mcp_servers.atip]` table's command and args, read line by line.
fn toml_entry(text: &str) -> (String, Vec<String>) {
    let table = text
        .split("[mcp_servers.atip]\n")
        .nth(1)
        .expect("an [mcp_servers.atip] table");
    let get = |k: &str| {
        table
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{k} = ")))
            .unwrap()
            .to_string()
    };
    let command: String = serde_json::from_str(&get("command")).unwrap();
    let args: Vec<String> = serde_json::from_str(&get("args")).unwrap();
    (command, args)
}

/// VS Code's JSONC as JSON: line comments and trailing commas dropped (enough for the
/// fixture above).
fn strip_jsonc(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect();
    lines
        .join("\n")
        .replace(",\n\t\t},", "\n\t\t},")
        .replace("},\n\t},", "}\n\t},")
}

#[test]
fn install_round_trips_for_every_host() {
    let sb = Sandbox::new();
    let atip_path = std::fs::canonicalize(env!("CARGO_BIN_EXE_atip")).unwrap();
    for (host, rel, original) in hosts() {
        let file = sb.write(rel, original);
        // Dry run: a diff adding atip, nothing written.
        let r = report(&atip(
            &sb,
            sb.path(),
            &["install", "--host", host, "--dry-run"],
        ));
        let diff = r["diff"].as_str().unwrap_or_else(|| panic!("{host}: {r}"));
        assert!(
            diff.lines()
                .any(|l| l.starts_with('+') && l.contains("atip")),
            "{host}: {diff}"
        );
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            original,
            "{host}: dry run wrote"
        );
        // Install.
        let r = report(&atip(&sb, sb.path(), &["install", "--host", host]));
        assert_eq!(r["changed"], true, "{host}: {r}");
        assert_eq!(PathBuf::from(r["file"].as_str().unwrap()), file, "{host}");
        let installed = std::fs::read_to_string(&file).unwrap();
        assert_eq!(
            entry(host, &installed),
            (
                atip_path.to_string_lossy().into_owned(),
                vec!["mcp".into(), "serve".into()]
            ),
            "{host}:\n{installed}"
        );
        assert!(
            installed.starts_with(&original[..original.len() / 2]),
            "{host}: {installed}"
        );
        let backup = PathBuf::from(r["backup"].as_str().unwrap());
        assert_eq!(
            std::fs::read_to_string(&backup).unwrap(),
            original,
            "{host}"
        );
        // Again: nothing changes, byte for byte.
        let r = report(&atip(&sb, sb.path(), &["install", "--host", host]));
        assert_eq!(r["changed"], false, "{host}: {r}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), installed, "{host}");
        // Uninstall: the file as it was.
        let r = report(&atip(&sb, sb.path(), &["uninstall", "--host", host]));
        assert_eq!(r["changed"], true, "{host}: {r}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), original, "{host}");
        let r = report(&atip(&sb, sb.path(), &["uninstall", "--host", host]));
        assert_eq!(r["changed"], false, "{host}: {r}");
        // Uninstall without the backup (removed): the text edit alone restores it.
        report(&atip(&sb, sb.path(), &["install", "--host", host]));
        std::fs::remove_file(&backup).unwrap();
        report(&atip(&sb, sb.path(), &["uninstall", "--host", host]));
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            original,
            "{host}: no backup"
        );
    }
}

#[test]
fn project_scope_new_files_and_config_file() {
    let sb = Sandbox::new();
    let project = sb.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    // Project scope: the files in the working directory, created when missing.
    for (host, rel) in [
        ("claude-code", ".mcp.json"),
        ("cursor", ".cursor/mcp.json"),
        ("vscode", ".vscode/mcp.json"),
        ("codex", ".codex/config.toml"),
        ("gemini-cli", ".gemini/settings.json"),
    ] {
        let r = report(&atip(
            &sb,
            &project,
            &["install", "--host", host, "--scope", "project"],
        ));
        assert_eq!(r["changed"], true, "{host}: {r}");
        let text = std::fs::read_to_string(project.join(rel)).unwrap();
        assert_eq!(entry(host, &text).1, ["mcp", "serve"], "{host}: {text}");
    }
    assert!(!sb.path().join("home/.claude.json").exists());
    // Claude Desktop has no project config.
    let out = atip(
        &sb,
        &project,
        &["install", "--host", "claude-desktop", "--scope", "project"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    // --config-file: any file, the host's shape.
    let f = sb.write("elsewhere/settings.json", GEMINI);
    let r = report(&atip(
        &sb,
        sb.path(),
        &[
            "install",
            "--host",
            "gemini-cli",
            "--config-file",
            f.to_str().unwrap(),
            "--program",
            "/opt/atip",
        ],
    ));
    assert_eq!(r["changed"], true);
    let text = std::fs::read_to_string(&f).unwrap();
    assert_eq!(entry("gemini-cli", &text).0, "/opt/atip");
    assert!(!sb.path().join("home/.gemini/settings.json").exists());
}

#[test]
fn malformed_host_files_are_refused_untouched() {
    let sb = Sandbox::new();
    for (host, rel, bad) in [
        (
            "claude-code",
            "home/.claude.json",
            "{\"mcpServers\": {\"a\": }",
        ),
        (
            "cursor",
            "home/.cursor/mcp.json",
            "{\"mcpServers\": [\"not\", \"an object\"]}",
        ),
        (
            "codex",
            "home/.codex/config.toml",
            "model = \"o3\n[mcp_servers.x]\n",
        ),
        ("gemini-cli", "home/.gemini/settings.json", "[1, 2]"),
    ] {
        let file = sb.write(rel, bad);
        for cmd in ["install", "uninstall"] {
            let out = atip(&sb, sb.path(), &[cmd, "--host", host]);
            assert_eq!(out.status.code(), Some(78), "{host} {cmd}: {}", show(&out));
            let err: Value = serde_json::from_slice(&out.stderr).unwrap_or(Value::Null);
            if cmd == "install" || host != "cursor" {
                assert_eq!(
                    err["error"]["code"],
                    "mcp_host_config_invalid",
                    "{host}: {}",
                    show(&out)
                );
            }
            assert_eq!(std::fs::read_to_string(&file).unwrap(), bad, "{host} {cmd}");
            assert!(!Path::new(&format!("{}.atip.bak", file.display())).exists());
        }
    }
}
