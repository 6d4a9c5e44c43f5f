//! `atip mcp install|uninstall --host H`: atip's own server entry written into an agent
//! host's config file, in that host's shape (JSON `mcpServers`/`servers`, or Codex's
//! TOML `[mcp_servers.NAME]`).
//!
//! The file is the user's: only atip's entry changes, as a text edit at the byte
//! offsets where it goes, so comments, key order, indentation and every other server
//! stay byte-for-byte (re-serialising the whole document would not keep them). The
//! edit is computed first and checked by parsing the result; a file that does not parse
//! is an error and is not touched. Pure: reading, writing and backups are the caller's.

use serde_json::{Map, Value};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// The name atip's entry has in every host's server list.
pub const ENTRY_NAME: &str = "atip";

/// Agent hosts atip installs itself into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// Claude Code: `~/.claude.json` (user), `.mcp.json` (project); `mcpServers`.
    ClaudeCode,
    /// Claude Desktop: `claude_desktop_config.json` (user only); `mcpServers`.
    ClaudeDesktop,
    /// Cursor: `~/.cursor/mcp.json`, `.cursor/mcp.json`; `mcpServers`.
    Cursor,
    /// VS Code: `Code/User/mcp.json` (user), `.vscode/mcp.json` (project); `servers`.
    Vscode,
    /// Codex: `$CODEX_HOME/config.toml` or `~/.codex/config.toml`, `.codex/config.toml`;
    /// TOML `[mcp_servers.NAME]`.
    Codex,
    /// Gemini CLI: `~/.gemini/settings.json`, `.gemini/settings.json`; `mcpServers`.
    GeminiCli,
}

/// Where the entry goes: the user's own config or the project's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user's config, for every project.
    User,
    /// The config file in the working directory, shared with the project.
    Project,
}

/// The environment a location depends on, passed in so tests never see the real home.
#[derive(Debug, Clone)]
pub struct Env {
    /// `$HOME`.
    pub home: PathBuf,
    /// `$XDG_CONFIG_HOME` when set and absolute.
    pub xdg_config: Option<PathBuf>,
    /// `$CODEX_HOME` when set.
    pub codex_home: Option<PathBuf>,
    /// The working directory (project scope).
    pub cwd: PathBuf,
}

/// Why an agent host's config file cannot be edited. The file is left as it was.
#[derive(Debug, thiserror::Error)]
pub enum HostConfigError {
    /// The host keeps no config in a project (`--scope project`).
    #[error("Claude Desktop has no project config; use --scope user")]
    NoProjectConfig,
    /// Not JSON (with the place).
    #[error("not valid JSON (line {}, column {}): {}", .0.line(), .0.column(), .0)]
    JsonAt(#[source] serde_json::Error),
    /// Not JSON (reading atip's entry back).
    #[error("not valid JSON: {0}")]
    Json(#[source] serde_json::Error),
    /// atip's own entry in the file is not JSON.
    #[error(transparent)]
    Entry(serde_json::Error),
    /// A JSON file whose top level is not an object.
    #[error("the top level is not a JSON object")]
    NotObject,
    /// The host's servers key holds something other than an object.
    #[error("\"{0}\" is not an object")]
    ServersNotObject(String),
    /// Not TOML (Codex).
    #[error("not valid TOML: {0}")]
    Toml(#[source] toml_edit::TomlError),
    /// `mcp_servers.atip` is not a table.
    #[error("mcp_servers.{ENTRY_NAME} is not a table")]
    EntryNotTable,
    /// `mcp_servers.atip` is written inline, not as its own table.
    #[error("mcp_servers.{ENTRY_NAME} is not written as a [mcp_servers.{ENTRY_NAME}] table; {fix}")]
    NotATable {
        /// What the user can do.
        fix: &'static str,
    },
    /// A bug: the edit made a file that does not parse.
    #[error("internal: the edited file would not parse: {0}")]
    EditBroke(#[source] Box<HostConfigError>),
    /// A bug: the edited file does not read back as intended.
    #[error("internal: {what}: {found}")]
    ReadBack {
        /// What went wrong.
        what: &'static str,
        /// What was read back (debug form).
        found: String,
    },
}

impl HostConfigError {
    /// This error, about the file at `path`.
    pub fn in_file(self, path: &std::path::Path) -> HostFileError {
        HostFileError {
            path: path.to_owned(),
            source: self,
        }
    }
}

/// A [`HostConfigError`] with the file it is about.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}; it was not changed", path.display())]
pub struct HostFileError {
    /// The host's config file.
    pub path: PathBuf,
    /// What is wrong with it.
    #[source]
    pub source: HostConfigError,
}

impl From<HostConfigError> for crate::output::AtipError {
    /// A scope the host has not is a usage error; anything else about its file is
    /// `mcp_host_config_invalid` (exit 78).
    fn from(e: HostConfigError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        match e {
            HostConfigError::NoProjectConfig => AtipError::new(ErrorCode::Usage, e.to_string()),
            _ => AtipError::new(ErrorCode::McpHostConfigInvalid, e.to_string()),
        }
    }
}

impl From<HostFileError> for crate::output::AtipError {
    /// Classified as the bare error; the message names the file.
    fn from(e: HostFileError) -> Self {
        let message = e.to_string();
        let mut err = crate::output::AtipError::from(e.source);
        err.message = message;
        err.details(serde_json::json!({ "path": e.path }))
    }
}

impl Host {
    /// The documented config file of this host for `scope`.
    pub fn location(self, scope: Scope, env: &Env) -> Result<PathBuf, HostConfigError> {
        let config = || {
            env.xdg_config
                .clone()
                .unwrap_or_else(|| env.home.join(".config"))
        };
        let mac = cfg!(target_os = "macos");
        let app_support = |p: &str| env.home.join("Library/Application Support").join(p);
        Ok(match (self, scope) {
            (Host::ClaudeCode, Scope::User) => env.home.join(".claude.json"),
            (Host::ClaudeCode, Scope::Project) => env.cwd.join(".mcp.json"),
            (Host::ClaudeDesktop, Scope::User) if mac => {
                app_support("Claude/claude_desktop_config.json")
            }
            (Host::ClaudeDesktop, Scope::User) => {
                config().join("Claude/claude_desktop_config.json")
            }
            (Host::ClaudeDesktop, Scope::Project) => {
                return Err(HostConfigError::NoProjectConfig);
            }
            (Host::Cursor, Scope::User) => env.home.join(".cursor/mcp.json"),
            (Host::Cursor, Scope::Project) => env.cwd.join(".cursor/mcp.json"),
            (Host::Vscode, Scope::User) if mac => app_support("Code/User/mcp.json"),
            (Host::Vscode, Scope::User) => config().join("Code/User/mcp.json"),
            (Host::Vscode, Scope::Project) => env.cwd.join(".vscode/mcp.json"),
            (Host::Codex, Scope::User) => env
                .codex_home
                .clone()
                .unwrap_or_else(|| env.home.join(".codex"))
                .join("config.toml"),
            (Host::Codex, Scope::Project) => env.cwd.join(".codex/config.toml"),
            (Host::GeminiCli, Scope::User) => env.home.join(".gemini/settings.json"),
            (Host::GeminiCli, Scope::Project) => env.cwd.join(".gemini/settings.json"),
        })
    }

    /// The key holding the servers (JSON hosts) or the table prefix (Codex).
    pub fn servers_key(self) -> &'static str {
        match self {
            Host::Vscode => "servers",
            Host::Codex => "mcp_servers",
            _ => "mcpServers",
        }
    }

    /// atip's entry in this host's shape: the stdio server `PROGRAM mcp serve`.
    pub fn entry(self, program: &str) -> Value {
        let mut m = Map::new();
        // Claude Code and VS Code write the transport type; the others infer stdio
        // from `command`.
        if matches!(self, Host::ClaudeCode | Host::Vscode) {
            m.insert("type".into(), "stdio".into());
        }
        m.insert("command".into(), program.into());
        m.insert("args".into(), serde_json::json!(["mcp", "serve"]));
        Value::Object(m)
    }

    /// atip's entry as `text` has it, to recognise an install (`Null` when absent).
    fn entry_in(self, text: &str) -> Result<Value, HostConfigError> {
        if self == Host::Codex {
            let e = toml_entry(text)?.unwrap_or(Value::Null);
            // The TOML table holds command and args; the entry shape is the host's.
            return Ok(match e["command"].as_str() {
                Some(c) => self.entry(c),
                None => Value::Null,
            });
        }
        if text.trim().is_empty() {
            return Ok(Value::Null);
        }
        let v: Value = serde_json::from_str(&drop_trailing_commas(&blank_comments(text)))
            .map_err(HostConfigError::Json)?;
        Ok(v[self.servers_key()][ENTRY_NAME].clone())
    }

    /// The file with atip's entry added (or corrected); `None` when it is already there
    /// as it should be. `text` is `None` for a file that does not exist yet.
    pub fn install(
        self,
        text: Option<&str>,
        entry: &Value,
    ) -> Result<Option<String>, HostConfigError> {
        match self {
            Host::Codex => toml_install(text.unwrap_or(""), entry),
            _ => json_install(text, self.servers_key(), entry),
        }
    }

    /// The file with atip's entry removed; `None` when there is none. `backup` is the
    /// file as it was before the last install, when kept: if installing into it gives
    /// exactly `text`, nothing else changed since and it is the answer, byte for byte
    /// (a servers key the install created goes away again with it).
    pub fn uninstall(
        self,
        text: &str,
        backup: Option<&str>,
    ) -> Result<Option<String>, HostConfigError> {
        if let Some(b) = backup
            && let Ok(Some(again)) = self.install(Some(b), &self.entry_in(text)?)
            && again == text
        {
            return Ok(Some(b.to_string()));
        }
        match self {
            Host::Codex => toml_uninstall(text),
            _ => json_uninstall(text, self.servers_key()),
        }
    }
}

// ---------------------------------------------------------------------------------------
// JSON (and the JSONC VS Code accepts: comments, trailing commas)

/// `text` with comments blanked out byte for byte (offsets unchanged).
fn blank_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                out[i] = b' ';
                i += 1;
            }
            continue;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = text[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
            for o in &mut out[i..end] {
                if *o != b'\n' {
                    *o = b' ';
                }
            }
            i = end;
            continue;
        }
        i += 1;
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced, by spaces")
}

/// `text` (comments already blanked) without trailing commas, for serde_json.
fn drop_trailing_commas(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let (mut i, mut in_str) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_str {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                in_str = false;
            }
        } else if c == b'"' {
            in_str = true;
        } else if c == b',' {
            let next = b[i + 1..].iter().find(|c| !c.is_ascii_whitespace());
            if matches!(next, Some(b'}' | b']')) {
                out[i] = b' ';
            }
        }
        i += 1;
    }
    String::from_utf8(out).expect("only ASCII bytes were replaced")
}

/// A member of an object: its key and where its key and value are.
#[derive(Debug)]
struct Member {
    key: String,
    key_start: usize,
    value: Range<usize>,
    /// The comma after the value, if any.
    comma: Option<usize>,
}

/// An object: its braces and members.
#[derive(Debug)]
struct Obj {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() && b[i] != b'"' {
        if b[i] == b'\\' {
            i += 1;
        }
        i += 1;
    }
    i + 1
}

/// End of the value starting at `i` (the text is known to parse).
fn value_end(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let (mut depth, mut j) = (0usize, i);
            loop {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']') && !b[j].is_ascii_whitespace()
            {
                j += 1;
            }
            j
        }
    }
}

/// The object whose `{` is at `open` (text comments blanked, known to parse).
fn object(s: &str, open: usize) -> Obj {
    let b = s.as_bytes();
    let mut members = Vec::new();
    let mut i = skip_ws(b, open + 1);
    while b[i] != b'}' {
        let key_end = string_end(b, i);
        let key: String = serde_json::from_str(&s[i..key_end]).unwrap_or_default();
        let colon = skip_ws(b, key_end);
        let vstart = skip_ws(b, colon + 1);
        let vend = value_end(b, vstart);
        let mut j = skip_ws(b, vend);
        let comma = (b[j] == b',').then_some(j);
        if comma.is_some() {
            j = skip_ws(b, j + 1);
        }
        members.push(Member {
            key,
            key_start: i,
            value: vstart..vend,
            comma,
        });
        i = j;
    }
    Obj {
        open,
        close: i,
        members,
    }
}

/// The whitespace that starts the line `at` is on, when only whitespace precedes `at`.
fn line_indent(s: &str, at: usize) -> Option<&str> {
    let start = s[..at].rfind('\n').map_or(0, |n| n + 1);
    let lead = &s[start..at];
    lead.chars().all(|c| c == ' ' || c == '\t').then_some(lead)
}

/// The document checked and scanned: (comment-blanked text, top-level object).
fn parse_json(text: &str) -> Result<(String, Obj), HostConfigError> {
    let blank = blank_comments(text);
    let value: Value =
        serde_json::from_str(&drop_trailing_commas(&blank)).map_err(HostConfigError::JsonAt)?;
    if !value.is_object() {
        return Err(HostConfigError::NotObject);
    }
    let open = skip_ws(blank.as_bytes(), 0);
    let top = object(&blank, open);
    Ok((blank, top))
}

/// `value` pretty-printed with `unit` per level, its lines after the first at `indent`.
fn render(value: &Value, unit: &str, indent: &str) -> String {
    use serde::Serialize;
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    value.serialize(&mut ser).expect("a JSON value serialises");
    String::from_utf8(buf)
        .expect("serde_json writes UTF-8")
        .replace('\n', &format!("\n{indent}"))
}

/// Inserts `"key": value` as the last member of `obj`, indented like its siblings.
fn insert_member(text: &str, obj: &Obj, unit: &str, key: &str, value: &Value) -> String {
    let key_json = Value::from(key).to_string();
    let mut out = String::with_capacity(text.len() + 128);
    match obj.members.last() {
        Some(last) => {
            let indent = line_indent(text, last.key_start).unwrap_or("");
            let member = format!("{key_json}: {}", render(value, unit, indent));
            let sep = if indent.is_empty() && !text[..last.key_start].ends_with('\n') {
                " ".to_string()
            } else {
                format!("\n{indent}")
            };
            // A file that ends its members with a comma (JSONC) gets ours with one too.
            let (at, lead, tail) = match last.comma {
                Some(c) => (c + 1, "", ","),
                None => (last.value.end, ",", ""),
            };
            out.push_str(&text[..at]);
            out.push_str(lead);
            out.push_str(&sep);
            out.push_str(&member);
            out.push_str(tail);
            out.push_str(&text[at..]);
        }
        None => {
            let start = text[..obj.open].rfind('\n').map_or(0, |n| n + 1);
            let line = &text[start..];
            let outer = &line[..line.len() - line.trim_start_matches([' ', '\t']).len()];
            let inner = format!("{outer}{unit}");
            let member = format!("{key_json}: {}", render(value, unit, &inner));
            out.push_str(&text[..=obj.open]);
            out.push_str(&format!("\n{inner}{member}\n{outer}"));
            out.push_str(&text[obj.close..]);
        }
    }
    out
}

/// The indentation unit the file uses (that of its first top-level member), else two spaces.
fn indent_unit<'a>(text: &'a str, top: &Obj) -> &'a str {
    top.members
        .first()
        .and_then(|m| line_indent(text, m.key_start))
        .filter(|i| !i.is_empty())
        .unwrap_or("  ")
}

fn json_install(
    text: Option<&str>,
    key: &str,
    entry: &Value,
) -> Result<Option<String>, HostConfigError> {
    let Some(text) = text.filter(|t| !t.trim().is_empty()) else {
        let mut servers = Map::new();
        servers.insert(ENTRY_NAME.into(), entry.clone());
        let mut doc = Map::new();
        doc.insert(key.into(), Value::Object(servers));
        return Ok(Some(render(&Value::Object(doc), "  ", "") + "\n"));
    };
    let (blank, top) = parse_json(text)?;
    let unit = indent_unit(text, &top);
    let new = match top.members.iter().find(|m| m.key == key) {
        None => {
            let mut servers = Map::new();
            servers.insert(ENTRY_NAME.into(), entry.clone());
            insert_member(text, &top, unit, key, &Value::Object(servers))
        }
        Some(m) if blank.as_bytes()[m.value.start] != b'{' => {
            return Err(HostConfigError::ServersNotObject(key.to_owned()));
        }
        Some(m) => {
            let servers = object(&blank, m.value.start);
            match servers.members.iter().find(|s| s.key == ENTRY_NAME) {
                Some(s) => {
                    let current: Value =
                        serde_json::from_str(&drop_trailing_commas(&blank[s.value.clone()]))
                            .map_err(HostConfigError::Entry)?;
                    if &current == entry {
                        return Ok(None);
                    }
                    let indent = line_indent(text, s.key_start).unwrap_or("");
                    format!(
                        "{}{}{}",
                        &text[..s.value.start],
                        render(entry, unit, indent),
                        &text[s.value.end..]
                    )
                }
                None => insert_member(text, &servers, unit, ENTRY_NAME, entry),
            }
        }
    };
    parse_json(&new).map_err(|e| HostConfigError::EditBroke(Box::new(e)))?;
    Ok(Some(new))
}

fn json_uninstall(text: &str, key: &str) -> Result<Option<String>, HostConfigError> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    let (blank, top) = parse_json(text)?;
    let Some(m) = top.members.iter().find(|m| m.key == key) else {
        return Ok(None);
    };
    if blank.as_bytes()[m.value.start] != b'{' {
        return Err(HostConfigError::ServersNotObject(key.to_owned()));
    }
    let servers = object(&blank, m.value.start);
    let Some(k) = servers.members.iter().position(|s| s.key == ENTRY_NAME) else {
        return Ok(None);
    };
    let ms = &servers.members;
    let cut = if ms.len() == 1 {
        servers.open + 1..servers.close
    } else if k + 1 == ms.len() {
        // The last: from the end of the one before (the comma between goes with us),
        // or, in a file with trailing commas, from after that comma through ours.
        match (ms[k - 1].comma, ms[k].comma) {
            (Some(c), Some(own)) => c + 1..own + 1,
            _ => ms[k - 1].value.end..ms[k].value.end,
        }
    } else {
        ms[k].key_start..ms[k + 1].key_start
    };
    let new = format!("{}{}", &text[..cut.start], &text[cut.end..]);
    parse_json(&new).map_err(|e| HostConfigError::EditBroke(Box::new(e)))?;
    Ok(Some(new))
}

// ---------------------------------------------------------------------------------------
// TOML (Codex)

/// Parses with toml_edit (a real TOML parser: a malformed file is refused before any
/// edit) and returns atip's entry, when there is one, as JSON.
fn toml_entry(text: &str) -> Result<Option<Value>, HostConfigError> {
    let doc = toml_edit::Document::parse(text).map_err(HostConfigError::Toml)?;
    let Some(servers) = doc.get("mcp_servers") else {
        return Ok(None);
    };
    let Some(entry) = servers.get(ENTRY_NAME) else {
        return Ok(None);
    };
    let Some(table) = entry.as_table_like() else {
        return Err(HostConfigError::EntryNotTable);
    };
    let mut m = Map::new();
    for (k, v) in table.iter() {
        let v = match v.as_value() {
            Some(toml_edit::Value::String(s)) => Value::from(s.value().as_str()),
            Some(toml_edit::Value::Array(a)) => Value::Array(
                a.iter()
                    .map(|x| x.as_str().map_or(Value::Null, Value::from))
                    .collect(),
            ),
            _ => Value::Null,
        };
        m.insert(k.to_string(), v);
    }
    Ok(Some(Value::Object(m)))
}

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    // JSON string escapes are valid TOML basic-string escapes for what we write.
    Value::from(s).to_string()
}

/// `[mcp_servers.atip]` and its keys, as text.
fn toml_table(entry: &Value) -> String {
    let mut t = format!("[mcp_servers.{ENTRY_NAME}]\n");
    if let Some(c) = entry["command"].as_str() {
        t.push_str(&format!("command = {}\n", toml_str(c)));
    }
    if let Some(args) = entry["args"].as_array() {
        let items: Vec<String> = args
            .iter()
            .filter_map(Value::as_str)
            .map(toml_str)
            .collect();
        t.push_str(&format!("args = [{}]\n", items.join(", ")));
    }
    t
}

/// The byte range of the `[mcp_servers.atip]` table: its header line to the next
/// table header or the end. `None` when it is not written as such a table.
fn toml_table_range(text: &str) -> Option<Range<usize>> {
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') {
            if start.is_some() {
                return start.map(|s| s..offset);
            }
            let name: String = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .chars()
                .filter(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
                .collect();
            if name == format!("mcp_servers.{ENTRY_NAME}") {
                start = Some(offset);
            }
        }
        offset += line.len();
    }
    start.map(|s| s..text.len())
}

fn toml_install(text: &str, entry: &Value) -> Result<Option<String>, HostConfigError> {
    let current = toml_entry(text)?;
    let want = serde_json::json!({"command": entry["command"], "args": entry["args"]});
    let new = match current {
        Some(c) if c == want => return Ok(None),
        Some(_) => {
            let r = toml_table_range(text).ok_or(HostConfigError::NotATable {
                fix: "change it by hand or remove it",
            })?;
            // Keep the blank line that separated it from the next table.
            let trailing = &text[r.clone()];
            let kept = &trailing[trailing.trim_end().len()..];
            let kept = kept.strip_prefix('\n').unwrap_or(kept);
            format!(
                "{}{}{kept}{}",
                &text[..r.start],
                toml_table(entry),
                &text[r.end..]
            )
        }
        None if text.trim().is_empty() => toml_table(entry),
        None => {
            // One blank line before the table (uninstall takes it away again).
            let sep = if text.ends_with('\n') { "\n" } else { "\n\n" };
            format!("{text}{sep}{}", toml_table(entry))
        }
    };
    match toml_entry(&new) {
        Ok(Some(c)) if c == want => Ok(Some(new)),
        other => Err(HostConfigError::ReadBack {
            what: "the edited file does not read back as atip's entry",
            found: format!("{other:?}"),
        }),
    }
}

fn toml_uninstall(text: &str) -> Result<Option<String>, HostConfigError> {
    if toml_entry(text)?.is_none() {
        return Ok(None);
    }
    let r = toml_table_range(text).ok_or(HostConfigError::NotATable {
        fix: "remove it by hand",
    })?;
    let before = &text[..r.start];
    let after = &text[r.end..];
    // Undo the blank line an install put before the table.
    let before = if after.is_empty() {
        before
            .strip_suffix('\n')
            .filter(|b| b.ends_with('\n'))
            .unwrap_or(before)
    } else {
        before
    };
    let new = format!("{before}{after}");
    match toml_entry(&new) {
        Ok(None) => Ok(Some(new)),
        other => Err(HostConfigError::ReadBack {
            what: "the entry is still there after removal",
            found: format!("{other:?}"),
        }),
    }
}

/// A unified diff of one contiguous change (what install and uninstall make).
pub fn diff(path: &Path, old: &str, new: &str) -> String {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suf = a[pre..]
        .iter()
        .rev()
        .zip(b[pre..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let ctx = 3;
    let from = pre.saturating_sub(ctx);
    let a_to = (a.len() - suf + ctx).min(a.len());
    let b_to = (b.len() - suf + ctx).min(b.len());
    let mut out = format!(
        "--- {p}\n+++ {p}\n@@ -{},{} +{},{} @@\n",
        from + 1,
        a_to - from,
        from + 1,
        b_to - from,
        p = path.display()
    );
    let line = |out: &mut String, mark: char, l: &str| {
        out.push(mark);
        out.push_str(l);
        if !l.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    };
    for l in &a[from..pre] {
        line(&mut out, ' ', l);
    }
    for l in &a[pre..a.len() - suf] {
        line(&mut out, '-', l);
    }
    for l in &b[pre..b.len() - suf] {
        line(&mut out, '+', l);
    }
    for l in &a[a.len() - suf..a_to] {
        line(&mut out, ' ', l);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROG: &str = "/opt/atip/bin/atip";

    fn round_trip(host: Host, original: &str) -> String {
        let entry = host.entry(PROG);
        let installed = host
            .install(Some(original), &entry)
            .unwrap()
            .expect("a change");
        assert_eq!(
            host.install(Some(&installed), &entry).unwrap(),
            None,
            "{installed}"
        );
        let removed = host
            .uninstall(&installed, Some(original))
            .unwrap()
            .expect("a removal");
        assert_eq!(removed, original, "installed:\n{installed}");
        assert_eq!(host.uninstall(original, None).unwrap(), None);
        // Without the backup the edit is undone as text: the same bytes, except that a
        // servers key the install had to create stays (empty).
        let removed = host.uninstall(&installed, None).unwrap().unwrap();
        if original.contains(host.servers_key()) || host == Host::Codex {
            assert_eq!(removed, original);
        }
        installed
    }

    #[test]
    fn json_edits_keep_everything_else() {
        let claude = "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"git\": {\n      \"command\": \"uvx\",\n      \"args\": [\"mcp-server-git\"]\n    }\n  },\n  \"theme\": \"dark\"\n}\n";
        let installed = round_trip(Host::ClaudeCode, claude);
        assert!(
            installed.contains("    \"atip\": {\n      \"type\": \"stdio\",\n"),
            "{installed}"
        );
        // JSONC with comments and a trailing comma (VS Code).
        let vscode = "// my servers\n{\n\t\"servers\": {\n\t\t/* git */ \"git\": {\"type\": \"stdio\", \"command\": \"uvx\"},\n\t},\n\t\"inputs\": []\n}\n";
        round_trip(Host::Vscode, vscode);
        // No servers key yet; an empty servers object; a compact file.
        round_trip(Host::GeminiCli, "{\n  \"theme\": \"GitHub\"\n}\n");
        round_trip(Host::Cursor, "{\"mcpServers\": {}}");
        round_trip(
            Host::ClaudeDesktop,
            "{\"mcpServers\":{\"a\":{\"command\":\"a\"}}}",
        );
        // Entry first of several: removed with its comma.
        let first = "{\"mcpServers\": {\"atip\": {\"command\": \"x\"}, \"b\": {}}}";
        assert_eq!(
            Host::Cursor.uninstall(first, None).unwrap().unwrap(),
            "{\"mcpServers\": {\"b\": {}}}"
        );
        // A stale entry is corrected in place.
        let fixed = Host::Cursor
            .install(Some(first), &Host::Cursor.entry(PROG))
            .unwrap()
            .unwrap();
        assert!(
            fixed.contains(PROG) && fixed.ends_with("\"b\": {}}}"),
            "{fixed}"
        );
        // Missing file: a new one.
        let new = Host::Cursor
            .install(None, &Host::Cursor.entry(PROG))
            .unwrap()
            .unwrap();
        let v: Value = serde_json::from_str(&new).unwrap();
        assert_eq!(v["mcpServers"]["atip"]["args"][1], "serve");
        // Malformed or wrong shape: errors.
        for bad in ["{\"mcpServers\": {", "[1]", "{\"mcpServers\": []}"] {
            assert!(
                Host::Cursor
                    .install(Some(bad), &Host::Cursor.entry(PROG))
                    .is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn toml_edits_keep_everything_else() {
        let codex = "# Codex\nmodel = \"o3\"\n\n[mcp_servers.git]\ncommand = \"uvx\"\nargs = [\"mcp-server-git\"]  # pinned\n";
        let installed = round_trip(Host::Codex, codex);
        assert!(installed.ends_with("\n\n[mcp_servers.atip]\ncommand = \"/opt/atip/bin/atip\"\nargs = [\"mcp\", \"serve\"]\n"), "{installed}");
        round_trip(Host::Codex, "model = \"o3\"\n\n");
        round_trip(Host::Codex, "");
        // In the middle, stale: replaced in place, what follows kept.
        let mid = "[mcp_servers.atip]\ncommand = \"old\"\n\n[profiles.x]\nmodel = \"y\"\n";
        let fixed = Host::Codex
            .install(Some(mid), &Host::Codex.entry(PROG))
            .unwrap()
            .unwrap();
        assert!(
            fixed.ends_with("args = [\"mcp\", \"serve\"]\n\n[profiles.x]\nmodel = \"y\"\n"),
            "{fixed}"
        );
        assert_eq!(
            Host::Codex.uninstall(&fixed, None).unwrap().unwrap(),
            "[profiles.x]\nmodel = \"y\"\n"
        );
        assert!(
            Host::Codex
                .install(Some("model = "), &Host::Codex.entry(PROG))
                .is_err()
        );
        assert!(
            Host::Codex
                .install(
                    Some("mcp_servers = { atip = { command = \"x\" } }\n"),
                    &Host::Codex.entry(PROG)
                )
                .is_err()
        );
    }

    #[test]
    fn diff_shows_the_one_change() {
        let d = diff(Path::new("f"), "a\nb\nc\n", "a\nb\nx\nc\n");
        assert_eq!(d, "--- f\n+++ f\n@@ -1,3 +1,4 @@\n a\n b\n+x\n c\n");
    }
}
