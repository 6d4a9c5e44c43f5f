//! MCP server configuration for the client side: where servers are declared, in which
//! shapes, and how the files merge.
//!
//! Two files: the global `<config-dir>/mcp.json` (`$XDG_CONFIG_HOME/agent-tools/mcp.json`),
//! then the project's `.mcp.json` in the working directory or its nearest ancestor (as
//! agent hosts look it up). The project file is content a repository brings, so it is
//! used only when trusted ([`super::trust`]); a trusted project file adds servers but
//! never replaces a global one of the same name, and expands only the variables its
//! trust record allows. Each file may use the `mcpServers` shape agent hosts write
//! (Claude Desktop, Claude Code, Cursor) or the `servers` shape (VS Code, the mcp-cli
//! document), with `defaultServer`, `strictEnv`, `cache` and `toolSearch` settings.
//! `${VAR}` in the global file expands from the environment. Values that look like
//! secrets (authorization headers, env entries named like tokens, the values of
//! secret-named variables wherever they were expanded) are collected so every printer
//! can redact them.
//!
//! Must not connect to anything or print; warnings are returned.

use crate::exec::redact::Redactor;
use crate::output::{AtipError, ErrorCode};
use indexmap::IndexMap;
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File name of the global config inside the config directory.
pub const GLOBAL_FILE: &str = "mcp.json";
/// File name of the project config, looked up from the working directory upwards.
pub const PROJECT_FILE: &str = ".mcp.json";
/// Default tools/list cache lifetime.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(300);

/// How atip reaches one server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdin/stdout.
    Stdio {
        /// Program (a path, or a name looked up on PATH).
        command: String,
        /// Arguments, passed as they are (no shell).
        args: Vec<String>,
        /// Extra environment entries.
        env: Vec<(String, String)>,
        /// Working directory.
        cwd: Option<PathBuf>,
    },
    /// MCP Streamable HTTP.
    Http {
        /// The MCP endpoint.
        url: String,
        /// Headers sent with every request.
        headers: Vec<(String, String)>,
    },
}

impl Transport {
    /// `stdio` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One configured server.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Name (the key in the config).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Per-server timeout (`timeoutMs`).
    pub timeout: Option<Duration>,
    /// Where it was configured: a file path, or `command line`.
    pub origin: String,
    /// Whether its tools' `readOnlyHint` is believed (`trustHints`, default true). With
    /// `false`, every call of its tools needs confirmation.
    pub trust_hints: bool,
    /// Secret values of this server (header values, secret-named env entries), for
    /// redaction.
    pub secrets: Vec<(String, String)>,
    /// How sessions start (`protocol`: auto, legacy, modern); a `--protocol` flag wins.
    pub protocol: Option<super::client::Protocol>,
}

impl ServerSpec {
    /// A redactor for this server's secrets plus the usual token shapes.
    pub(crate) fn redactor(&self) -> Redactor {
        let mut r = Redactor::new();
        for (label, value) in &self.secrets {
            r.add_value(label, value.clone());
        }
        r
    }

    /// One line: `node server.js --flag` or the URL, secrets redacted.
    pub fn summary(&self) -> String {
        let r = self.redactor();
        let text = match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .map(shell_word)
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => redact_url(url),
        };
        r.redact(&text).into_owned()
    }

    /// A key that changes whenever what the server is changes (command, args, env, url,
    /// headers): names the cache file, so an edited config never reads a stale list.
    /// Secret values are not part of it (each stands as its label): rotating a token is
    /// the same server, and no file name depends on a secret.
    pub fn identity(&self) -> String {
        let mut transport = serde_json::to_string(&self.transport).unwrap_or_default();
        let mut secrets: Vec<&(String, String)> =
            self.secrets.iter().filter(|(_, v)| !v.is_empty()).collect();
        // Longest first: `Bearer X` before `X`.
        secrets.sort_by_key(|(_, v)| std::cmp::Reverse(v.len()));
        for (label, value) in secrets {
            // As the JSON text writes it (quotes and backslashes escaped).
            let json = serde_json::to_string(value).unwrap_or_default();
            let escaped = json
                .get(1..json.len().saturating_sub(1))
                .unwrap_or_default();
            if !escaped.is_empty() {
                transport = transport.replace(escaped, &format!("${{secret:{label}}}"));
            }
        }
        let hex =
            crate::digest::sha256_hex_parts(&[self.name.as_bytes(), b"\0", transport.as_bytes()]);
        hex[..32].to_string()
    }
}

/// Quotes a word for display when it has spaces or quotes (display only, never run).
fn shell_word(w: &str) -> String {
    if !w.is_empty() && !w.contains([' ', '\'', '"', '\t', '\n']) {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// Whether a header or variable name names a secret.
pub fn is_secret_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    matches!(
        n.as_str(),
        "authorization" | "proxy-authorization" | "cookie"
    ) || [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "api_key",
        "api-key",
        "auth",
        "credential",
        "private",
        "key",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// A URL with the values of secret-looking query parameters and any userinfo password
/// replaced by `[REDACTED]`.
pub fn redact_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b.to_string(), Some(q)),
        None => (url.to_string(), None),
    };
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (auth, host) = match rest.split_once('@') {
                Some((a, h)) if !a.contains('/') => (Some(a), h),
                _ => (None, rest),
            };
            match auth {
                Some(a) => {
                    let user = a.split(':').next().unwrap_or("");
                    format!("{scheme}://{user}:[REDACTED]@{host}")
                }
                None => base.clone(),
            }
        }
        None => base,
    };
    match query {
        None => base,
        Some(q) => {
            let parts: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if is_secret_name(k) => format!("{k}=[REDACTED]"),
                    _ => kv.to_string(),
                })
                .collect();
            format!("{base}?{}", parts.join("&"))
        }
    }
}

/// `cache` settings.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheSettings {
    /// Whether tools/list results are cached at all.
    pub enabled: bool,
    /// Lifetime of a cached list.
    pub ttl_seconds: u64,
}

impl Default for CacheSettings {
    fn default() -> Self {
        CacheSettings {
            enabled: true,
            ttl_seconds: DEFAULT_CACHE_TTL.as_secs(),
        }
    }
}

/// `toolSearch` settings: defaults for `atip mcp tools --search`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSearchSettings {
    /// Most results.
    pub default_limit: usize,
    /// Results that carry a full schema.
    pub default_schemas: usize,
}

impl Default for ToolSearchSettings {
    fn default() -> Self {
        ToolSearchSettings {
            default_limit: 5,
            default_schemas: 3,
        }
    }
}

/// `compact` settings: what `--compact` drops from a call's result besides its built-in
/// rule (`tools::compact`). Named as the mcp-cli document names them.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CompactSettings {
    /// Keys kept whatever the built-in rule says (`_meta`, `annotations`, `data`, `blob`,
    /// `text` uncut).
    pub allowlist: Vec<String>,
    /// Keys removed wherever they are in the result, `structuredContent` and JSON text
    /// blocks included.
    pub denylist: Vec<String>,
}

/// Reads a `compact` object: `allowlist` and `denylist`, lists of key names. A list
/// replaces an earlier file's (lists are not merged); any other key is an error, so a
/// misspelt list is never silently ignored.
fn read_compact(path: &Path, v: &Value, out: &mut CompactSettings) -> Result<(), AtipError> {
    let obj = v
        .as_object()
        .ok_or_else(|| config_error(path, "compact must be an object"))?;
    for (key, list) in obj {
        let slot = match key.as_str() {
            "allowlist" => &mut out.allowlist,
            "denylist" => &mut out.denylist,
            other => {
                return Err(config_error(
                    path,
                    format!(
                        "compact.{other} is not a setting (compact takes allowlist and denylist)"
                    ),
                ));
            }
        };
        let names = list
            .as_array()
            .and_then(|a| {
                a.iter()
                    .map(|n| n.as_str().filter(|s| !s.is_empty()).map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
            })
            .ok_or_else(|| {
                config_error(
                    path,
                    format!("compact.{key} must be a list of key names (non-empty strings)"),
                )
            })?;
        *slot = names;
    }
    Ok(())
}

/// The merged configuration.
#[derive(Debug, Clone, Default)]
pub struct McpConfig {
    /// Servers by name, in the order first declared.
    pub servers: IndexMap<String, ServerSpec>,
    /// `defaultServer` (the later file wins).
    pub default_server: Option<String>,
    /// Cache settings (the later file wins, per key).
    pub cache: CacheSettings,
    /// Tool search defaults.
    pub tool_search: ToolSearchSettings,
    /// `--compact`'s allowlist and denylist (the later file wins, per list).
    pub compact: CompactSettings,
    /// `maxOutputBytes`: the output cap when `--max-output` is not given.
    pub max_output: Option<u64>,
    /// Files read, in order.
    pub files: Vec<PathBuf>,
    /// Non-fatal problems (missing variables, skipped entries).
    pub warnings: Vec<String>,
    /// The project file found, and whether it is used.
    pub project: Option<ProjectState>,
    /// Servers of a project file that is not used (untrusted, changed or refused): listed,
    /// never started.
    pub untrusted: Vec<UntrustedServer>,
    /// Project files found after the first (`./mcp-cli/config.*` next to `.mcp.json`).
    pub other_projects: Vec<ProjectState>,
}

impl McpConfig {
    /// Every project file found, first the one in `project`.
    pub fn projects(&self) -> impl Iterator<Item = &ProjectState> {
        self.project.iter().chain(&self.other_projects)
    }

    /// The project file a server was declared in (by its origin).
    pub fn project_of(&self, origin: &str) -> Option<&ProjectState> {
        self.projects()
            .find(|p| p.path.display().to_string() == origin)
            .or(self.project.as_ref())
    }

    /// The error for a server (or flattened tool name `mcp__SERVER__…`) declared only in
    /// a project file that is not used: `mcp_config_untrusted` with the trust hint. `None`
    /// when no untrusted server has that name.
    pub fn untrusted_error(&self, name: &str) -> Option<AtipError> {
        let u = self
            .untrusted
            .iter()
            .find(|u| u.name == name || name.starts_with(&super::tools::flat_name(&u.name, "")))?;
        let project = self.project_of(&u.origin)?;
        let why = project
            .note()
            .unwrap_or_else(|| format!("{} is not used", u.origin));
        Some(
            AtipError::new(
                ErrorCode::McpConfigUntrusted,
                format!("MCP server {:?} was not started: {why}", u.name),
            )
            .hint(match project.status {
                super::trust::TrustStatus::Refused => {
                    "only a file that nobody but you (or root) can write is used".to_string()
                }
                _ => format!("review the file, then run: {}", project.trust_hint()),
            })
            .details(
                serde_json::json!({"server": u.name, "path": project.path, "status": u.status}),
            ),
        )
    }
}

/// The project `.mcp.json` and what trust says about it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectState {
    /// The file as found.
    pub path: PathBuf,
    /// SHA-256 of its content.
    pub sha256: String,
    /// Trusted, untrusted, changed or refused.
    pub status: super::trust::TrustStatus,
    /// Why it is refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Variables it may expand (when trusted).
    pub allow_env: Vec<String>,
    /// Variables it references.
    pub references: Vec<String>,
}

impl ProjectState {
    /// The command that trusts this file.
    pub fn trust_hint(&self) -> String {
        let mut hint = format!(
            "atip mcp trust {}",
            shell_word(&self.path.display().to_string())
        );
        for v in &self.references {
            hint.push_str(" --allow-env ");
            hint.push_str(v);
        }
        hint
    }

    /// A one-line note on why its servers are not used (None when trusted).
    pub fn note(&self) -> Option<String> {
        use super::trust::TrustStatus::*;
        let p = self.path.display();
        match self.status {
            Trusted => None,
            Untrusted => Some(format!(
                "{p} is not trusted: its servers are listed but not started; review it, then run `atip mcp trust` (or answer the prompt on a terminal)"
            )),
            Changed => Some(format!(
                "{p} changed since you trusted it: its servers are listed but not started; review it, then run `atip mcp trust` again"
            )),
            Refused => Some(format!(
                "{p} is not used: {}",
                self.reason.as_deref().unwrap_or("unsafe location")
            )),
        }
    }
}

/// A server declared in a project file that is not used.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UntrustedServer {
    /// Its name.
    pub name: String,
    /// `stdio`, `http` or what the entry says (never expanded, never started).
    pub transport: String,
    /// The file.
    pub origin: String,
    /// Untrusted, changed or refused.
    pub status: super::trust::TrustStatus,
}

/// Where the config files are.
#[derive(Debug, Clone)]
pub struct ConfigPaths {
    /// The global file.
    pub global: PathBuf,
    /// The project file, when one was found.
    pub project: Option<PathBuf>,
    /// The mcp-cli document's global file (`~/.mcp-cli/config.*`), when there is one.
    pub cli_global: Option<PathBuf>,
    /// The mcp-cli document's project file (`./mcp-cli/config.*`), when there is one.
    pub cli_project: Option<PathBuf>,
}

impl ConfigPaths {
    /// The global file in `config_dir`, the nearest `.mcp.json` from `cwd` upwards, and
    /// the mcp-cli files in `$HOME/.mcp-cli/` and `cwd/mcp-cli/` (`HOME` of the run's
    /// `env`).
    pub fn locate(config_dir: &Path, cwd: &Path, env: &crate::env::Env) -> ConfigPaths {
        let home = env.non_empty("HOME").map(PathBuf::from);
        ConfigPaths::locate_in(config_dir, cwd, home.as_deref())
    }

    /// [`ConfigPaths::locate`] with the home directory given.
    pub fn locate_in(config_dir: &Path, cwd: &Path, home: Option<&Path>) -> ConfigPaths {
        let project = cwd
            .ancestors()
            .map(|d| d.join(PROJECT_FILE))
            .find(|p| p.is_file());
        ConfigPaths {
            global: config_dir.join(GLOBAL_FILE),
            project,
            cli_global: home.and_then(|h| cli_file(&h.join(CLI_GLOBAL_DIR))),
            cli_project: cli_file(&cwd.join(CLI_PROJECT_DIR)),
        }
    }
}

fn config_error(path: &Path, msg: impl std::fmt::Display) -> AtipError {
    AtipError::new(
        ErrorCode::McpConfigInvalid,
        format!("{}: {msg}", path.display()),
    )
    .hint("see spec/mcp-client.md for the accepted shapes")
    .details(serde_json::json!({"path": path}))
}

/// Expands `${NAME}` from `lookup`. Missing names stay literal and are returned.
pub(crate) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut missing = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end)
                if !after[..end].is_empty()
                    && after[..end]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                let name = &after[..end];
                match lookup(name) {
                    Some(v) => out.push_str(&v),
                    None => {
                        out.push_str(&rest[start..start + 3 + end]);
                        missing.push(name.to_string());
                    }
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    (out, missing)
}

/// Reads, validates and merges config files.
pub struct Loader<'a> {
    /// Looks a variable up (the process environment outside tests).
    pub lookup: &'a dyn Fn(&str) -> Option<String>,
}

/// How a file is merged: whose it is (the user's own, or a project's, trusted, with the
/// variables it may expand), whether it may replace a server an earlier file declared,
/// and whether its settings apply.
#[derive(Clone, Copy)]
struct Scope<'a> {
    /// `None`: every variable (the user's own file); else only these.
    allow_env: Option<&'a [String]>,
    /// An earlier file keeps a server name this one declares too (with a warning).
    keep_existing: bool,
    /// Its `defaultServer`, `cache` and `toolSearch` apply; else only a `defaultServer`
    /// when no earlier file set one.
    settings: bool,
}

/// The user's own file, later files winning by name and per setting.
const GLOBAL: Scope<'static> = Scope {
    allow_env: None,
    keep_existing: false,
    settings: true,
};

/// The mcp-cli document's config directories: `~/.mcp-cli/` (global) and `./mcp-cli/`
/// (the project's, in the working directory).
pub const CLI_GLOBAL_DIR: &str = ".mcp-cli";
/// See [`CLI_GLOBAL_DIR`].
pub const CLI_PROJECT_DIR: &str = "mcp-cli";
/// The file names looked for in each of those directories; the first that exists wins.
pub const CLI_FILES: [&str; 3] = ["config.json", "config.yaml", "config.yml"];

/// The config file of an mcp-cli directory: the first of [`CLI_FILES`] there.
pub fn cli_file(dir: &Path) -> Option<PathBuf> {
    CLI_FILES.iter().map(|f| dir.join(f)).find(|p| p.is_file())
}

/// A config file's content as a JSON value: YAML for `.yaml` / `.yml`, JSON otherwise.
pub fn parse_document(path: &Path, bytes: &[u8]) -> Result<Value, AtipError> {
    let yaml = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
    if yaml {
        let text = std::str::from_utf8(bytes)
            .map_err(|e| config_error(path, format!("not UTF-8 text: {e}")))?;
        super::yaml::parse(text).map_err(|e| config_error(path, e))
    } else {
        serde_json::from_slice(bytes)
            .map_err(|e| config_error(path, format!("not valid JSON: {e}")))
    }
}

impl Loader<'_> {
    /// Loads the global file, then the project file when `trust` trusts its exact
    /// content; a missing file is not an error. An untrusted, changed or refused
    /// project file is only described (`project`, `untrusted`), never expanded.
    pub fn load(
        &self,
        paths: &ConfigPaths,
        trust: &super::trust::TrustStore,
    ) -> Result<McpConfig, AtipError> {
        let mut cfg = McpConfig::default();
        match std::fs::read(&paths.global) {
            Ok(bytes) => self.merge_file(&mut cfg, &paths.global, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(config_error(&paths.global, format!("failed to read: {e}")));
            }
        }
        if let Some(path) = &paths.project {
            self.read_project(&mut cfg, path, trust, true, true)?;
        }
        // The mcp-cli document's files, after atip's own: they add servers (atip's
        // files keep their names) and a defaultServer when atip's set none.
        if let Some(path) = &paths.cli_global {
            self.read_global(
                &mut cfg,
                path,
                Scope {
                    allow_env: None,
                    keep_existing: true,
                    settings: false,
                },
            )?;
        }
        if let Some(path) = &paths.cli_project {
            self.read_project(&mut cfg, path, trust, true, false)?;
        }
        Ok(cfg)
    }

    /// `mcp`'s config (the mcp-cli document): `global` (`~/.mcp-cli/config.*`), then the
    /// project's `./mcp-cli/config.*` when `trust` trusts its exact content. A trusted
    /// project file replaces a global server of the same name, as the document says
    /// (the user reviewed that file); an untrusted one is only described.
    pub fn load_cli(
        &self,
        global: Option<&Path>,
        project: Option<&Path>,
        trust: &super::trust::TrustStore,
    ) -> Result<McpConfig, AtipError> {
        let mut cfg = McpConfig::default();
        if let Some(path) = global {
            self.read_global(&mut cfg, path, GLOBAL)?;
        }
        if let Some(path) = project {
            self.read_project(&mut cfg, path, trust, false, true)?;
        }
        Ok(cfg)
    }

    /// Merges the user's own file at `path`; a missing file is skipped.
    fn read_global(
        &self,
        cfg: &mut McpConfig,
        path: &Path,
        scope: Scope<'_>,
    ) -> Result<(), AtipError> {
        match std::fs::read(path) {
            Ok(bytes) => self.merge_scoped(cfg, path, &bytes, scope),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(config_error(path, format!("failed to read: {e}"))),
        }
    }

    /// Reads a project file and merges it as [`Loader::merge_project`] does; a missing
    /// file is skipped.
    fn read_project(
        &self,
        cfg: &mut McpConfig,
        path: &Path,
        trust: &super::trust::TrustStore,
        keep_existing: bool,
        settings: bool,
    ) -> Result<(), AtipError> {
        let file = match super::trust::ProjectFile::read(path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(config_error(path, format!("failed to read: {e}"))),
        };
        self.merge_project_as(cfg, &file, trust, keep_existing, settings)
    }

    /// Adds a project file: merged when trusted, described otherwise.
    pub fn merge_project(
        &self,
        cfg: &mut McpConfig,
        file: &super::trust::ProjectFile,
        trust: &super::trust::TrustStore,
    ) -> Result<(), AtipError> {
        self.merge_project_as(cfg, file, trust, true, true)
    }

    fn merge_project_as(
        &self,
        cfg: &mut McpConfig,
        file: &super::trust::ProjectFile,
        trust: &super::trust::TrustStore,
        keep_existing: bool,
        settings: bool,
    ) -> Result<(), AtipError> {
        use super::trust::TrustStatus;
        let status = trust.status(file);
        let allow_env = match (status, trust.record(&file.canonical)) {
            (TrustStatus::Trusted, Some(r)) => r.allow_env.clone(),
            _ => Vec::new(),
        };
        let text = String::from_utf8_lossy(&file.bytes);
        let state = ProjectState {
            path: file.path.clone(),
            sha256: file.sha256.clone(),
            status,
            reason: file.problem.clone(),
            allow_env: allow_env.clone(),
            references: super::trust::referenced_vars(&text),
        };
        if cfg.project.is_none() {
            cfg.project = Some(state);
        } else {
            cfg.other_projects.push(state);
        }
        if status == TrustStatus::Trusted {
            return self.merge_scoped(
                cfg,
                &file.path,
                &file.bytes,
                Scope {
                    allow_env: Some(&allow_env),
                    keep_existing,
                    settings,
                },
            );
        }
        // Names only, from a best-effort parse: nothing is expanded or checked.
        let origin = file.path.display().to_string();
        if let Ok(Value::Object(doc)) = parse_document(&file.path, &file.bytes) {
            for key in ["mcpServers", "servers"] {
                for (name, entry) in doc
                    .get(key)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                {
                    let transport = entry
                        .get("transport")
                        .or_else(|| entry.get("type"))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| {
                            if entry.get("url").is_some() {
                                "http"
                            } else {
                                "stdio"
                            }
                            .to_string()
                        });
                    cfg.untrusted.push(UntrustedServer {
                        name: name.clone(),
                        transport,
                        origin: origin.clone(),
                        status,
                    });
                }
            }
        }
        Ok(())
    }

    /// Merges one global file's bytes into `cfg`: servers by name, settings per key.
    pub(crate) fn merge_file(
        &self,
        cfg: &mut McpConfig,
        path: &Path,
        bytes: &[u8],
    ) -> Result<(), AtipError> {
        self.merge_scoped(cfg, path, bytes, GLOBAL)
    }

    fn merge_scoped(
        &self,
        cfg: &mut McpConfig,
        path: &Path,
        bytes: &[u8],
        scope: Scope<'_>,
    ) -> Result<(), AtipError> {
        let doc = parse_document(path, bytes)?;
        let Value::Object(doc) = doc else {
            return Err(config_error(
                path,
                "the top level must be an object (a mapping)",
            ));
        };
        cfg.files.push(path.to_path_buf());
        let strict = match doc.get("strictEnv") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(config_error(path, "strictEnv must be true or false")),
        };
        let folder = workspace_folder(path);
        let lookup = |name: &str| -> Option<String> {
            if name == "workspaceFolder" {
                return Some(folder.clone());
            }
            (self.lookup)(name)
        };
        let mut ctx = FileCtx {
            path,
            strict,
            lookup: &lookup,
            allow_env: scope.allow_env,
            expanded: Vec::new(),
            warnings: Vec::new(),
        };
        if let Some(v) = doc.get("defaultServer") {
            let s = v
                .as_str()
                .ok_or_else(|| config_error(path, "defaultServer must be a string"))?;
            if scope.settings || cfg.default_server.is_none() {
                cfg.default_server = Some(s.to_string());
            }
        }
        // Settings of a file that only adds servers are checked but not applied.
        let mut settings = Settings::of(cfg);
        settings.read(path, &doc)?;
        if scope.settings {
            settings.apply(cfg);
        }
        let top_timeout = doc
            .get("timeoutMs")
            .map(|v| {
                v.as_u64()
                    .map(Duration::from_millis)
                    .ok_or_else(|| config_error(path, "timeoutMs must be a whole number"))
            })
            .transpose()?;
        ctx.merge_servers(cfg, &doc, scope.keep_existing, top_timeout)?;
        cfg.warnings.append(&mut ctx.warnings);
        Ok(())
    }
}

/// The folder `${workspaceFolder}` names for a file: its directory, or the one above
/// when that is `.vscode` or `.cursor`.
fn workspace_folder(path: &Path) -> String {
    path.parent()
        .map(|d| {
            if d.file_name()
                .is_some_and(|n| n == ".vscode" || n == ".cursor")
            {
                d.parent().unwrap_or(d)
            } else {
                d
            }
        })
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// The settings one file may set, read onto the values earlier files left.
struct Settings {
    cache: CacheSettings,
    tool_search: ToolSearchSettings,
    compact: CompactSettings,
    max_output: Option<u64>,
}

impl Settings {
    fn of(cfg: &McpConfig) -> Settings {
        Settings {
            cache: cfg.cache.clone(),
            tool_search: cfg.tool_search.clone(),
            compact: cfg.compact.clone(),
            max_output: cfg.max_output,
        }
    }

    fn apply(self, cfg: &mut McpConfig) {
        cfg.cache = self.cache;
        cfg.tool_search = self.tool_search;
        cfg.compact = self.compact;
        cfg.max_output = self.max_output;
    }

    /// Reads `compact`, `maxOutputBytes`, `cache` and `toolSearch` of `doc`.
    fn read(&mut self, path: &Path, doc: &Map<String, Value>) -> Result<(), AtipError> {
        if let Some(c) = doc.get("compact") {
            read_compact(path, c, &mut self.compact)?;
        }
        if let Some(v) = doc.get("maxOutputBytes") {
            self.max_output = Some(v.as_u64().filter(|n| *n > 0).ok_or_else(|| {
                config_error(
                    path,
                    "maxOutputBytes must be a whole number of bytes above 0",
                )
            })?);
        }
        if let Some(c) = doc.get("cache") {
            let c = c
                .as_object()
                .ok_or_else(|| config_error(path, "cache must be an object"))?;
            if let Some(v) = c.get("enabled") {
                self.cache.enabled = v
                    .as_bool()
                    .ok_or_else(|| config_error(path, "cache.enabled must be true or false"))?;
            }
            if let Some(v) = c.get("ttlSeconds") {
                self.cache.ttl_seconds = v.as_u64().ok_or_else(|| {
                    config_error(path, "cache.ttlSeconds must be a whole number of seconds")
                })?;
            }
        }
        if let Some(t) = doc.get("toolSearch") {
            let t = t
                .as_object()
                .ok_or_else(|| config_error(path, "toolSearch must be an object"))?;
            for (key, slot) in [
                ("defaultLimit", &mut self.tool_search.default_limit),
                ("defaultSchemas", &mut self.tool_search.default_schemas),
            ] {
                if let Some(v) = t.get(key) {
                    *slot = v.as_u64().ok_or_else(|| {
                        config_error(path, format!("toolSearch.{key} must be a whole number"))
                    })? as usize;
                }
            }
        }
        Ok(())
    }
}

struct FileCtx<'a> {
    path: &'a Path,
    strict: bool,
    lookup: &'a dyn Fn(&str) -> Option<String>,
    /// `None`: every variable (the user's own file); else only these (and
    /// `workspaceFolder`).
    allow_env: Option<&'a [String]>,
    /// Variables expanded so far for the current server, with their values.
    expanded: Vec<(String, String)>,
    warnings: Vec<String>,
}

impl FileCtx<'_> {
    fn expand(&mut self, where_: &str, text: &str) -> Result<String, AtipError> {
        let seen = std::cell::RefCell::new(Vec::new());
        let mut denied = Vec::new();
        let lookup = |name: &str| -> Option<String> {
            if name != "workspaceFolder"
                && let Some(allowed) = self.allow_env
                && !allowed.iter().any(|a| a == name)
            {
                return None;
            }
            let v = (self.lookup)(name)?;
            seen.borrow_mut().push((name.to_string(), v.clone()));
            Some(v)
        };
        let (out, mut missing) = expand(text, &lookup);
        if let Some(allowed) = self.allow_env {
            missing.retain(|m| {
                let deny = !allowed.iter().any(|a| a == m) && m != "workspaceFolder";
                if deny {
                    denied.push(m.clone());
                }
                !deny
            });
        }
        self.expanded.extend(seen.into_inner());
        for m in denied {
            if self.strict {
                return Err(config_error(
                    self.path,
                    format!("{where_}: environment variable {m} may not be read by this project file (strictEnv)"),
                )
                .hint(format!("atip mcp trust {} --allow-env {m}", self.path.display())));
            }
            self.warnings.push(format!(
                "{}: {where_}: environment variable {m} is not expanded: this project file may not read it (trust it with --allow-env {m}); left as ${{{m}}}",
                self.path.display()
            ));
        }
        for m in missing {
            if self.strict {
                return Err(config_error(
                    self.path,
                    format!("{where_}: environment variable {m} is not set (strictEnv)"),
                )
                .hint(format!("set {m}, or remove strictEnv")));
            }
            self.warnings.push(format!(
                "{}: {where_}: environment variable {m} is not set; left as ${{{m}}}",
                self.path.display()
            ));
        }
        Ok(out)
    }

    fn strings(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        at: &str,
    ) -> Result<Vec<String>, AtipError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let s = v.as_str().ok_or_else(|| {
                        config_error(self.path, format!("{at}.{key}[{i}] must be a string"))
                    })?;
                    self.expand(&format!("{at}.{key}[{i}]"), s)
                })
                .collect(),
            Some(_) => Err(config_error(
                self.path,
                format!("{at}.{key} must be an array of strings"),
            )),
        }
    }

    fn pairs(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        at: &str,
        secrets: &mut Vec<(String, String)>,
    ) -> Result<Vec<(String, String)>, AtipError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Object(m)) => {
                let mut out = Vec::new();
                for (k, v) in m {
                    let raw = v.as_str().ok_or_else(|| {
                        config_error(self.path, format!("{at}.{key}.{k} must be a string"))
                    })?;
                    let value = self.expand(&format!("{at}.{key}.{k}"), raw)?;
                    if is_secret_name(k) {
                        secrets.push((k.clone(), value.clone()));
                        // `Bearer X`: the token alone is the secret too.
                        if let Some((_, tok)) = value.split_once(' ') {
                            secrets.push((k.clone(), tok.trim().to_string()));
                        }
                    }
                    out.push((k.clone(), value));
                }
                Ok(out)
            }
            Some(_) => Err(config_error(
                self.path,
                format!("{at}.{key} must be an object of strings"),
            )),
        }
    }

    /// Adds the servers of `mcpServers` and `servers` to `cfg`, by name; the file's
    /// `timeoutMs` applies to those without their own.
    fn merge_servers(
        &mut self,
        cfg: &mut McpConfig,
        doc: &Map<String, Value>,
        keep_existing: bool,
        top_timeout: Option<Duration>,
    ) -> Result<(), AtipError> {
        let path = self.path;
        for key in ["mcpServers", "servers"] {
            let Some(servers) = doc.get(key) else {
                continue;
            };
            let servers = servers
                .as_object()
                .ok_or_else(|| config_error(path, format!("{key} must be an object")))?;
            for (name, entry) in servers {
                let Some(mut spec) = self.server(name, entry, key)? else {
                    continue;
                };
                if spec.timeout.is_none() {
                    spec.timeout = top_timeout;
                }
                // A project entry never replaces a global one: the name would
                // silently point at a server the user did not configure. (Under
                // `mcp`, a trusted project file may, as the mcp-cli document says.)
                if keep_existing && let Some(global) = cfg.servers.get(name) {
                    self.warnings.push(format!(
                        "{}: {key}.{name} is ignored: the server {name:?} of {} keeps that name (rename one of them)",
                        path.display(),
                        global.origin
                    ));
                    continue;
                }
                cfg.servers.insert(name.clone(), spec);
            }
        }
        Ok(())
    }

    fn server(
        &mut self,
        name: &str,
        entry: &Value,
        key: &str,
    ) -> Result<Option<ServerSpec>, AtipError> {
        let at = format!("{key}.{name}");
        self.expanded.clear();
        let obj = entry
            .as_object()
            .ok_or_else(|| config_error(self.path, format!("{at} must be an object")))?;
        check_server_name(self.path, name)?;
        if obj.get("disabled") == Some(&Value::Bool(true)) {
            self.warnings.push(format!(
                "{}: {at} is disabled; skipped",
                self.path.display()
            ));
            return Ok(None);
        }
        let mut secrets = Vec::new();
        let transport = match transport_kind(self.path, obj, &at)?.as_str() {
            "stdio" => self.stdio(obj, &at, &mut secrets)?,
            "http" | "streamable-http" | "streamablehttp" => self.http(obj, &at, &mut secrets)?,
            "sse" => {
                self.warnings.push(format!(
                    "{}: {at} uses the legacy HTTP+SSE transport, which atip does not speak; skipped",
                    self.path.display()
                ));
                return Ok(None);
            }
            other => {
                return Err(config_error(
                    self.path,
                    format!("{at}: unknown transport {other:?} (expected stdio or http)"),
                ));
            }
        };
        let timeout = timeout_ms(self.path, obj, &at)?;
        let trust_hints = trust_hints(self.path, obj, &at)?;
        let protocol = protocol(self.path, obj, &at)?;
        // The value of a secret-named variable is a secret wherever it was expanded (a
        // URL path, an argument), not only in a secret-named header or env entry.
        for (var, value) in self.expanded.drain(..) {
            if is_secret_name(&var) && !value.is_empty() {
                secrets.push((var, value));
            }
        }
        Ok(Some(ServerSpec {
            name: name.to_string(),
            transport,
            timeout,
            origin: self.path.display().to_string(),
            trust_hints,
            secrets,
            protocol,
        }))
    }

    /// A stdio server's command, arguments, environment and working directory, expanded.
    fn stdio(
        &mut self,
        obj: &Map<String, Value>,
        at: &str,
        secrets: &mut Vec<(String, String)>,
    ) -> Result<Transport, AtipError> {
        let command = obj
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| config_error(self.path, format!("{at}.command must be a string")))?;
        let command = self.expand(&format!("{at}.command"), command)?;
        if command.trim().is_empty() {
            return Err(config_error(self.path, format!("{at}.command is empty")));
        }
        let args = self.strings(obj, "args", at)?;
        let env = self.pairs(obj, "env", at, secrets)?;
        let cwd = match obj.get("cwd") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(PathBuf::from(self.expand(&format!("{at}.cwd"), s)?)),
            Some(_) => {
                return Err(config_error(
                    self.path,
                    format!("{at}.cwd must be a string"),
                ));
            }
        };
        Ok(Transport::Stdio {
            command,
            args,
            env,
            cwd,
        })
    }

    /// An HTTP server's URL (http or https) and headers, expanded.
    fn http(
        &mut self,
        obj: &Map<String, Value>,
        at: &str,
        secrets: &mut Vec<(String, String)>,
    ) -> Result<Transport, AtipError> {
        let url = obj
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| config_error(self.path, format!("{at}.url must be a string")))?;
        let url = self.expand(&format!("{at}.url"), url)?;
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(config_error(
                self.path,
                format!("{at}.url must start with http:// or https://"),
            ));
        }
        let headers = self.pairs(obj, "headers", at, secrets)?;
        Ok(Transport::Http { url, headers })
    }
}

/// A server name is 1-64 letters, digits, `_`, `-` or `.`: it is typed on command lines
/// and becomes part of tool names.
fn check_server_name(path: &Path, name: &str) -> Result<(), AtipError> {
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.';
    if name.is_empty() || name.len() > 64 || !name.chars().all(valid) {
        return Err(config_error(
            path,
            format!("server name {name:?}: use 1-64 letters, digits, '_', '-' or '.'"),
        ));
    }
    Ok(())
}

/// A server's transport, lowercased: `transport` (or `type`), else `stdio` when it has a
/// command and `http` when it has a URL.
fn transport_kind(path: &Path, obj: &Map<String, Value>, at: &str) -> Result<String, AtipError> {
    let kind = obj
        .get("transport")
        .or_else(|| obj.get("type"))
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase);
    match kind {
        Some(k) => Ok(k),
        None if obj.contains_key("command") => Ok("stdio".into()),
        None if obj.contains_key("url") => Ok("http".into()),
        None => Err(config_error(
            path,
            format!("{at} has neither \"command\" (stdio) nor \"url\" (http)"),
        )),
    }
}

/// A server's own `timeoutMs`, if given.
fn timeout_ms(
    path: &Path,
    obj: &Map<String, Value>,
    at: &str,
) -> Result<Option<Duration>, AtipError> {
    obj.get("timeoutMs")
        .map(|v| {
            v.as_u64()
                .map(Duration::from_millis)
                .ok_or_else(|| config_error(path, format!("{at}.timeoutMs must be a whole number")))
        })
        .transpose()
}

/// Whether the server's own annotations may be shown as hints (`trustHints`, default
/// true).
fn trust_hints(path: &Path, obj: &Map<String, Value>, at: &str) -> Result<bool, AtipError> {
    match obj.get("trustHints") {
        None => Ok(true),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(config_error(
            path,
            format!("{at}.trustHints must be true or false"),
        )),
    }
}

/// The handshake the server is started with (`protocol`), if the file chooses one.
fn protocol(
    path: &Path,
    obj: &Map<String, Value>,
    at: &str,
) -> Result<Option<super::client::Protocol>, AtipError> {
    match obj.get("protocol") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => <super::client::Protocol as clap::ValueEnum>::from_str(s, true)
            .map(Some)
            .map_err(|_| {
                config_error(
                    path,
                    format!("{at}.protocol must be \"auto\", \"legacy\" or \"modern\", not {s:?}"),
                )
            }),
        Some(_) => Err(config_error(
            path,
            format!("{at}.protocol must be a string (auto, legacy or modern)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t-value".into()),
            "HOME" => Some("/home/u".into()),
            _ => None,
        }
    }

    fn load(files: &[(&str, Value)]) -> Result<McpConfig, AtipError> {
        let mut cfg = McpConfig::default();
        let loader = Loader { lookup: &env };
        for (p, v) in files {
            loader.merge_file(&mut cfg, Path::new(p), &serde_json::to_vec(v).unwrap())?;
        }
        Ok(cfg)
    }

    #[test]
    fn expansion_leaves_missing_literal() {
        let (s, missing) = expand("a ${HOME}/x ${NOPE} ${} $HOME ${bad-name}", &env);
        assert_eq!(s, "a /home/u/x ${NOPE} ${} $HOME ${bad-name}");
        assert_eq!(missing, ["NOPE"]);
    }

    fn project(bytes: Value, problem: Option<&str>) -> crate::trust::ProjectFile {
        let bytes = serde_json::to_vec(&bytes).unwrap();
        crate::trust::ProjectFile {
            path: "/p/.mcp.json".into(),
            canonical: "/p/.mcp.json".into(),
            sha256: crate::digest::sha256_hex(&bytes),
            bytes,
            problem: problem.map(str::to_string),
        }
    }

    fn with_project(
        file: &crate::trust::ProjectFile,
        store: &crate::trust::TrustStore,
    ) -> McpConfig {
        let mut cfg = load(&[(
            "/g/mcp.json",
            json!({"mcpServers": {"a": {"command": "global-a"}}}),
        )])
        .unwrap();
        Loader { lookup: &env }
            .merge_project(&mut cfg, file, store)
            .unwrap();
        cfg
    }

    #[test]
    fn a_project_file_is_used_only_when_trusted_and_expands_only_allowed_names() {
        use crate::trust::{TrustStatus, TrustStore};
        let doc = json!({"mcpServers": {
            "a": {"command": "evil-a"},
            "b": {"command": "b", "args": ["${TOKEN}", "${HOME}", "${workspaceFolder}"]},
            "c": {"url": "https://h/hook/${TOKEN}"}}});
        let file = project(doc.clone(), None);
        let mut store = TrustStore::default();
        // Untrusted: only named, nothing expanded, the global entry alone is a server.
        let cfg = with_project(&file, &store);
        assert_eq!(cfg.servers.keys().collect::<Vec<_>>(), ["a"]);
        assert_eq!(cfg.servers["a"].origin, "/g/mcp.json");
        let names: Vec<&str> = cfg.untrusted.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(cfg.untrusted[2].transport, "http");
        let p = cfg.project.as_ref().unwrap();
        assert_eq!(p.status, TrustStatus::Untrusted);
        assert_eq!(p.references, ["TOKEN", "HOME"]);
        assert!(
            p.trust_hint()
                .contains("--allow-env TOKEN --allow-env HOME")
        );
        // Trusted, HOME allowed: TOKEN stays literal, the global `a` keeps its name.
        store.trust(&file, vec!["HOME".into()]).unwrap();
        let cfg = with_project(&file, &store);
        assert!(cfg.untrusted.is_empty());
        assert_eq!(cfg.servers.keys().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(cfg.servers["a"].origin, "/g/mcp.json");
        let Transport::Stdio { args, .. } = &cfg.servers["b"].transport else {
            panic!()
        };
        assert_eq!(args, &["${TOKEN}", "/home/u", "/p"]);
        let Transport::Http { url, .. } = &cfg.servers["c"].transport else {
            panic!()
        };
        assert_eq!(url, "https://h/hook/${TOKEN}");
        assert!(
            cfg.warnings
                .iter()
                .any(|w| w.contains("mcpServers.a is ignored")),
            "{:?}",
            cfg.warnings
        );
        assert!(
            cfg.warnings
                .iter()
                .any(|w| w.contains("TOKEN is not expanded")),
            "{:?}",
            cfg.warnings
        );
        // TOKEN allowed: expanded, and its value is redacted from the summary.
        store.trust(&file, vec!["TOKEN".into()]).unwrap();
        let cfg = with_project(&file, &store);
        let c = &cfg.servers["c"];
        let Transport::Http { url, .. } = &c.transport else {
            panic!()
        };
        assert_eq!(url, "https://h/hook/s3cr3t-value");
        assert!(!c.summary().contains("s3cr3t"), "{}", c.summary());
        // Other content: changed, not used.
        let edited = project(json!({"mcpServers": {"b": {"command": "other"}}}), None);
        let cfg = with_project(&edited, &store);
        assert_eq!(cfg.project.as_ref().unwrap().status, TrustStatus::Changed);
        assert_eq!(cfg.servers.len(), 1);
        // A file in an unsafe place: refused even though trusted.
        let unsafe_file = project(doc, Some("directory /p is writable by every user"));
        let cfg = with_project(&unsafe_file, &store);
        let p = cfg.project.as_ref().unwrap();
        assert_eq!(p.status, TrustStatus::Refused);
        assert!(p.note().unwrap().contains("writable by every user"));
        assert_eq!(cfg.servers.len(), 1);
    }

    #[test]
    fn strict_env_refuses_a_variable_the_project_may_not_read() {
        let file = project(
            json!({"strictEnv": true, "mcpServers": {"b": {"command": "b", "args": ["${TOKEN}"]}}}),
            None,
        );
        let mut store = crate::trust::TrustStore::default();
        store.trust(&file, Vec::new()).unwrap();
        let mut cfg = McpConfig::default();
        let e = Loader { lookup: &env }
            .merge_project(&mut cfg, &file, &store)
            .unwrap_err();
        assert!(e.message.contains("may not be read"), "{}", e.message);
    }

    #[test]
    fn secret_named_variables_are_redacted_wherever_expanded() {
        let cfg = load(&[(
            "/g/mcp.json",
            json!({"mcpServers": {"h": {"url": "https://h/x/${TOKEN}?q=1"}}}),
        )])
        .unwrap();
        let s = cfg.servers["h"].summary();
        assert!(!s.contains("s3cr3t"), "{s}");
        assert!(s.contains("REDACTED"), "{s}");
    }

    #[test]
    fn global_files_merge_by_name_in_both_shapes() {
        let cfg = load(&[
            (
                "/g/mcp.json",
                json!({"mcpServers": {
                    "a": {"command": "node", "args": ["a.js"], "env": {"API_TOKEN": "${TOKEN}"}},
                    "b": {"type": "http", "url": "http://127.0.0.1:1/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}},
                  "defaultServer": "a"}),
            ),
            (
                "/p/.mcp.json",
                json!({"servers": {"a": {"transport": "http", "url": "https://x/mcp", "timeoutMs": 5000}},
                       "cache": {"ttlSeconds": 10}}),
            ),
        ])
        .unwrap();
        assert_eq!(cfg.servers.keys().collect::<Vec<_>>(), ["a", "b"]);
        let a = &cfg.servers["a"];
        assert_eq!(a.transport.kind(), "http");
        assert_eq!(a.origin, "/p/.mcp.json");
        assert_eq!(a.timeout, Some(Duration::from_millis(5000)));
        let b = &cfg.servers["b"];
        assert!(b.secrets.iter().any(|(_, v)| v == "s3cr3t-value"));
        assert!(
            !b.redactor()
                .redact("sent Bearer s3cr3t-value")
                .contains("s3cr3t")
        );
        assert_eq!(cfg.default_server.as_deref(), Some("a"));
        assert_eq!(cfg.cache.ttl_seconds, 10);
        assert!(cfg.cache.enabled);
    }

    #[test]
    fn per_server_protocol() {
        use crate::client::{ClientOptions, Protocol};
        let cfg = load(&[(
            "/g/mcp.json",
            json!({"mcpServers": {"a": {"command": "x", "protocol": "legacy"}, "b": {"command": "y"}}}),
        )])
        .unwrap();
        assert_eq!(cfg.servers["a"].protocol, Some(Protocol::Legacy));
        let flag = ClientOptions {
            protocol: Some(Protocol::Modern),
            ..Default::default()
        };
        let none = ClientOptions::default();
        assert_eq!(none.protocol_for(&cfg.servers["a"]), Protocol::Legacy);
        assert_eq!(none.protocol_for(&cfg.servers["b"]), Protocol::Auto);
        assert_eq!(flag.protocol_for(&cfg.servers["a"]), Protocol::Modern);
        let e = load(&[(
            "/g/mcp.json",
            json!({"mcpServers": {"a": {"command": "x", "protocol": "2026"}}}),
        )])
        .unwrap_err();
        assert!(
            e.message.contains("mcpServers.a.protocol must be"),
            "{}",
            e.message
        );
    }

    #[test]
    fn missing_variables_warn_or_fail_under_strict_env() {
        let cfg = load(&[(
            "/g/mcp.json",
            json!({"mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}}),
        )])
        .unwrap();
        assert!(cfg.warnings[0].contains("NOPE"), "{:?}", cfg.warnings);
        let Transport::Stdio { args, .. } = &cfg.servers["a"].transport else {
            panic!()
        };
        assert_eq!(args, &["${NOPE}"]);
        let e = load(&[(
            "/g/mcp.json",
            json!({"strictEnv": true, "mcpServers": {"a": {"command": "x", "args": ["${NOPE}"]}}}),
        )])
        .unwrap_err();
        assert_eq!(e.code, "mcp_config_invalid");
        assert!(e.message.contains("NOPE"));
    }

    #[test]
    fn bad_entries_name_the_place() {
        let e = load(&[("/g/mcp.json", json!({"mcpServers": {"a": {"args": []}}}))]).unwrap_err();
        assert!(e.message.contains("mcpServers.a"), "{}", e.message);
        let e = load(&[(
            "/g/mcp.json",
            json!({"servers": {"a": {"type": "http", "url": "ftp://x"}}}),
        )])
        .unwrap_err();
        assert!(e.message.contains("http://"), "{}", e.message);
        let e = load(&[("/g/mcp.json", json!([1]))]).unwrap_err();
        assert_eq!(e.category, crate::output::Category::Config);
    }

    #[test]
    fn urls_lose_their_secrets_in_summaries() {
        assert_eq!(
            redact_url("https://u:pw@h/mcp?api_key=abc&x=1"),
            "https://u:[REDACTED]@h/mcp?api_key=[REDACTED]&x=1"
        );
        assert!(
            is_secret_name("GITHUB_TOKEN")
                && is_secret_name("X-Api-Key")
                && !is_secret_name("PATH")
        );
    }
}
