//! `atip mcp import HOST`: copy the servers an agent host already has into atip's
//! global `mcp.json`, so nobody types a server twice.
//!
//! Import rather than reading host files on every run: atip's behaviour then depends
//! only on files it owns (and the project `.mcp.json`, which hosts and atip share), and
//! a host rewriting its config cannot silently change what atip runs. Entries are copied
//! as written (`${VAR}` references stay references, so no secret is expanded into the
//! file), checked with the same parser as atip's own config, and written atomically
//! with mode 0600. Existing names are kept unless `--force`. A source file that someone
//! other than the user (or root) could have written is refused (the rule of
//! [`super::trust::location_problem`]). Must not connect.

use super::config::{Loader, McpConfig};
use crate::env::Env;
use crate::output::{AtipError, ErrorCode};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Agent hosts whose configs atip reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Host {
    /// Claude Desktop: `claude_desktop_config.json`, key `mcpServers`.
    ClaudeDesktop,
    /// Claude Code: `~/.claude.json`, key `mcpServers` (user scope).
    ClaudeCode,
    /// Cursor: `~/.cursor/mcp.json`, key `mcpServers`.
    Cursor,
    /// VS Code: `.vscode/mcp.json` in the working directory or an ancestor, key `servers`.
    Vscode,
}

impl Host {
    /// Where the host keeps its servers, and under which key (`HOME` and
    /// `XDG_CONFIG_HOME` from the run's `env`).
    pub(crate) fn location(self, cwd: &Path, env: &Env) -> (PathBuf, &'static str) {
        let home = || {
            env.var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("/"))
        };
        match self {
            Host::ClaudeDesktop => {
                let mac =
                    home().join("Library/Application Support/Claude/claude_desktop_config.json");
                let linux = env
                    .absolute_path("XDG_CONFIG_HOME")
                    .unwrap_or_else(|| home().join(".config"))
                    .join("Claude/claude_desktop_config.json");
                (
                    if cfg!(target_os = "macos") {
                        mac
                    } else {
                        linux
                    },
                    "mcpServers",
                )
            }
            Host::ClaudeCode => (home().join(".claude.json"), "mcpServers"),
            Host::Cursor => (home().join(".cursor/mcp.json"), "mcpServers"),
            Host::Vscode => (
                cwd.ancestors()
                    .map(|d| d.join(".vscode/mcp.json"))
                    .find(|p| p.is_file())
                    .unwrap_or_else(|| cwd.join(".vscode/mcp.json")),
                "servers",
            ),
        }
    }
}

/// What an import did (or would do).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    /// The host file read.
    pub source: PathBuf,
    /// atip's global config written.
    pub target: PathBuf,
    /// Servers imported (or that would be).
    pub imported: Vec<String>,
    /// Servers left out, with the reason.
    pub skipped: Vec<(String, String)>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

fn bad(path: &Path, msg: impl std::fmt::Display) -> AtipError {
    AtipError::new(
        ErrorCode::McpImportFailed,
        format!("{}: {msg}", path.display()),
    )
}

fn read_object(path: &Path, missing_ok: bool) -> Result<Map<String, Value>, AtipError> {
    match std::fs::read(path) {
        Err(e) if missing_ok && e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(AtipError::new(
            ErrorCode::InputUnreadable,
            format!("failed to read {}: {e}", path.display()),
        )),
        Ok(b) => match serde_json::from_slice(&b) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(bad(path, "the top level must be a JSON object")),
            Err(e) => Err(bad(path, format!("not valid JSON: {e}"))),
        },
    }
}

/// Imports `host`'s servers into `target`; `env` is the run's environment (where the
/// host's file is, what `${VAR}` in an entry expands to while it is checked).
pub fn import(
    host: Host,
    from: Option<&Path>,
    target: &Path,
    cwd: &Path,
    env: &Env,
    force: bool,
    dry_run: bool,
) -> Result<ImportReport, AtipError> {
    let (default_source, key) = host.location(cwd, env);
    let source = from.map(Path::to_path_buf).unwrap_or(default_source);
    let servers = host_servers(&source, key)?;
    let mut out = read_object(target, true)?;
    let existing_key = if out.contains_key("servers") && !out.contains_key("mcpServers") {
        "servers"
    } else {
        "mcpServers"
    };
    let mut existing = match out.get(existing_key) {
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(bad(target, format!("{existing_key} must be an object"))),
        None => Map::new(),
    };
    let taken: Vec<String> = ["mcpServers", "servers"]
        .iter()
        .filter_map(|k| out.get(*k).and_then(Value::as_object))
        .flat_map(|m| m.keys().cloned())
        .collect();
    let mut report = ImportReport {
        source: source.clone(),
        target: target.to_path_buf(),
        imported: Vec::new(),
        skipped: Vec::new(),
        dry_run,
    };
    let lookup = |n: &str| env.var(n).map(str::to_owned);
    let loader = Loader { lookup: &lookup };
    for (name, entry) in servers {
        if taken.contains(&name) && !force {
            report
                .skipped
                .push((name, "already in mcp.json (use --force to replace)".into()));
            continue;
        }
        if let Some(why) = unusable(&loader, &source, &name, &entry) {
            report.skipped.push((name, why));
            continue;
        }
        if entry.to_string().contains("${input:") {
            log::warn!(
                "{name} uses VS Code ${{input:…}} prompts; atip leaves them as text, edit mcp.json to use ${{VAR}}"
            );
        }
        existing.insert(name.clone(), entry);
        report.imported.push(name);
    }
    if dry_run || report.imported.is_empty() {
        return Ok(report);
    }
    out.insert(existing_key.into(), Value::Object(existing));
    write_atomic(target, &Value::Object(out))?;
    Ok(report)
}

/// The servers of the host's file (under `key`, else `mcpServers`). Imported entries
/// land in the global file, where every variable expands: a host file someone else
/// could have written (a repository's `.vscode/mcp.json` in a shared directory, another
/// account's file) is refused like an untrusted project.
fn host_servers(source: &Path, key: &str) -> Result<Map<String, Value>, AtipError> {
    if let Ok(f) = super::trust::ProjectFile::read(source)
        && let Some(problem) = &f.problem
    {
        return Err(bad(source, format!("not imported: {problem}")));
    }
    let doc = read_object(source, false)?;
    match doc.get(key).or_else(|| doc.get("mcpServers")) {
        Some(Value::Object(m)) => Ok(m.clone()),
        Some(_) => Err(bad(source, format!("{key} must be an object"))),
        None => Ok(Map::new()),
    }
}

/// The same checks as a real load, on this one entry: why it cannot be used, if so.
fn unusable(loader: &Loader<'_>, source: &Path, name: &str, entry: &Value) -> Option<String> {
    let one = serde_json::json!({"mcpServers": {name: entry.clone()}});
    let mut probe = McpConfig::default();
    let bytes = serde_json::to_vec(&one).unwrap_or_default();
    if let Err(e) = loader.merge_file(&mut probe, source, &bytes) {
        return Some(e.message);
    }
    (!probe.servers.contains_key(name)).then(|| {
        probe
            .warnings
            .first()
            .cloned()
            .unwrap_or_else(|| "not usable".into())
    })
}

/// Writes the client config owner-only (it may hold tokens), atomically.
fn write_atomic(target: &Path, doc: &Value) -> Result<(), AtipError> {
    use crate::atomic::{Options, WriteError, parent_dir};
    let at = |source| WriteError {
        path: target.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(parent_dir(target)).map_err(at)?;
    let mut text = serde_json::to_string_pretty(doc).map_err(|e| at(std::io::Error::other(e)))?;
    text.push('\n');
    Ok(crate::atomic::write_atomic(
        target,
        text.as_bytes(),
        Options::PRIVATE,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn imports_new_entries_keeps_existing_and_variables() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("host.json");
        std::fs::write(
            &src,
            json!({"servers": {
            "a": {"type": "stdio", "command": "x", "env": {"TOKEN": "${MY_TOKEN}"}},
            "b": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
            "bad": {"args": []}}})
            .to_string(),
        )
        .unwrap();
        let target = dir.path().join("cfg/mcp.json");
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(
            &target,
            json!({"mcpServers": {"b": {"command": "keep"}}}).to_string(),
        )
        .unwrap();
        let r = import(
            Host::Vscode,
            Some(&src),
            &target,
            dir.path(),
            &Env::capture(),
            false,
            false,
        )
        .unwrap();
        assert_eq!(r.imported, ["a"]);
        let skipped: Vec<&str> = r.skipped.iter().map(|s| s.0.as_str()).collect();
        assert_eq!(skipped, ["b", "bad"]);
        let written: Value = serde_json::from_slice(&std::fs::read(&target).unwrap()).unwrap();
        assert_eq!(written["mcpServers"]["a"]["env"]["TOKEN"], "${MY_TOKEN}");
        assert_eq!(written["mcpServers"]["b"]["command"], "keep");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&target).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
