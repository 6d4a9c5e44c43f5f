//! `mcp`: the command of the mcp-cli document (spec/mcp-cli.md), run when atip's binary is
//! started under the name `mcp` (a symlink or hard link, `atip mcp link-cli`).
//!
//! Only the document's command line, config files, output shapes and exit codes live
//! here. Connecting, listing, caching, validation, policy, confirmation, audit and
//! redaction are those of `atip mcp` (`atip::mcp::remote`, `atip::mcp::client`), so the
//! two commands cannot drift apart in what they let through.

use super::mcp::{ClientFlags, Target};
use crate::Ctx;
use atip::compile::FlatTool;
use atip::dirs::Dirs;
use atip::env::Env;
use atip::exec::Confirmation;
use atip::exec::audit::AuditLog;
use atip::exec::policy::{Decision, Policy};
use atip::mcp::cache::ToolCache;
use atip::mcp::client::{ClientOptions, Session};
use atip::mcp::config::{self, Loader, McpConfig, ServerSpec};
use atip::mcp::remote::Remote;
use atip::mcp::tools;
use atip::mcp::trust::TrustStore;
use atip::output::ExitStatus;
use atip::output::text::{escape_controls, escape_controls_keep_lines};
use atip::output::{AtipError, ColorChoice, ErrorCode, OutputFormat, Printer, Verbosity};
use clap::Parser;
use serde_json::{Map, Value, json};
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Environment variable naming the server when `--server` is not given.
pub const SERVER_ENV: &str = "MCP_CLI_SERVER";
/// The document's cap on what one command prints in JSON mode.
pub const DEFAULT_MAX_OUTPUT: usize = 256 * 1024;

/// The document's exit codes.
pub mod code {
    use atip::output::ExitStatus;
    /// Success.
    pub const OK: ExitStatus = ExitStatus::Success;
    /// Tool not found, usage error.
    pub const USAGE: ExitStatus = ExitStatus::Convention(2);
    /// Transport or connect error.
    pub const TRANSPORT: ExitStatus = ExitStatus::Convention(3);
    /// The tool call failed (an `isError` result, a JSON-RPC error, a refused call).
    pub const TOOL: ExitStatus = ExitStatus::Convention(4);
    /// Invalid JSON input.
    pub const INPUT: ExitStatus = ExitStatus::Convention(5);
}

/// A universal command-line client for MCP servers (stdio and Streamable HTTP).
#[derive(Debug, Parser)]
#[command(name = "mcp", version, about, propagate_version = true)]
pub struct McpCli {
    #[command(flatten)]
    g: Global,
    #[command(subcommand)]
    command: Cmd,
}

// Flags accepted before or after the subcommand (the document's global flags).
#[derive(Debug, clap::Args)]
struct Global {
    /// Server name from the config (default: MCP_CLI_SERVER, defaultServer, or the only one).
    #[arg(long, global = true, env = SERVER_ENV, value_name = "NAME")]
    server: Option<String>,
    /// Output format (default: text for servers, tools and ping; JSON for describe,
    /// tool-search and call).
    #[arg(long, global = true, value_enum, value_name = "FORMAT")]
    output: Option<Format>,
    /// Same as --output json.
    #[arg(long, global = true)]
    json: bool,
    /// Indent JSON output.
    #[arg(long, global = true)]
    pretty: bool,
    /// The global config directory (default: ~/.mcp-cli).
    #[arg(long, global = true, value_name = "DIR")]
    config_dir: Option<PathBuf>,
    /// Neither read nor write the tools cache.
    #[arg(long, global = true)]
    no_cache: bool,
    /// Lifetime of cached tool lists in seconds (default: the config's cache.ttlSeconds, else 300).
    #[arg(long, global = true, value_name = "SECONDS")]
    cache_ttl: Option<u64>,
    /// Lifecycle lines on stderr: connect, cache hits, timing.
    #[arg(long, short = 'v', global = true)]
    verbose: bool,
    /// Every JSON-RPC frame on stderr (secrets redacted).
    #[arg(long, global = true)]
    trace: bool,
    /// Do not forward a stdio server's stderr.
    #[arg(long, global = true)]
    quiet_server_stderr: bool,
    /// Explicit mode: a Streamable HTTP endpoint, no config needed.
    #[arg(
        long,
        global = true,
        value_name = "URL",
        conflicts_with = "stdio_command"
    )]
    http_url: Option<String>,
    /// With --http-url: a header, `Name: value` (repeatable).
    #[arg(long = "header", global = true, value_name = "K:V")]
    headers: Vec<String>,
    /// Explicit mode: start this stdio server; words split as a shell would, but nothing
    /// is expanded and no shell runs.
    #[arg(long, global = true, value_name = "COMMAND")]
    stdio_command: Option<String>,
    /// With --stdio-command: one more argument, taken as it is (repeatable).
    #[arg(
        long = "stdio-arg",
        global = true,
        value_name = "ARG",
        allow_hyphen_values = true
    )]
    stdio_args: Vec<String>,
    /// With --stdio-command: an environment entry `K=V` (repeatable).
    #[arg(long = "env", global = true, value_name = "K=V")]
    envs: Vec<String>,
    /// Deadline for connecting and for each request, e.g. `10s` (default: the server's
    /// timeoutMs, else 30s).
    #[arg(long, global = true, value_name = "DURATION", value_parser = atip::units::parse_duration)]
    timeout: Option<Duration>,
    /// Cap on what one command prints in JSON mode, e.g. `512KiB` (default 256KiB).
    #[arg(long, global = true, value_name = "SIZE", value_parser = parse_size)]
    max_output: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Format {
    Json,
    Text,
}

#[derive(Debug, clap::Subcommand)]
enum Cmd {
    /// List the configured servers (~/.mcp-cli, then ./mcp-cli).
    Servers,
    /// List the selected server's tools.
    Tools {
        /// Fetch the list even when the cache is fresh.
        #[arg(long)]
        refresh: bool,
    },
    /// Print one tool's definition: name, description, input schema.
    Describe {
        /// Tool name as the server lists it.
        tool: String,
    },
    /// Rank the server's tools for an intent; schemas only for the best few.
    ToolSearch(SearchArgs),
    /// Call a tool with JSON arguments.
    Call(CallArgs),
    /// Connect and report the server's capabilities.
    Ping,
}

#[derive(Debug, clap::Args)]
struct SearchArgs {
    /// What you want to do, e.g. "create issue" (several words are joined).
    #[arg(required = true, num_args = 1.., value_name = "QUERY")]
    query: Vec<String>,
    /// Most results (default: toolSearch.defaultLimit, else 5).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// How many of the best results carry their full input schema (default:
    /// toolSearch.defaultSchemas, else 3).
    #[arg(long, value_name = "N", conflicts_with = "no_schemas")]
    schemas: Option<usize>,
    /// Names and descriptions only.
    #[arg(long)]
    no_schemas: bool,
    /// Add how each result was scored.
    #[arg(long)]
    explain: bool,
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").args(["args", "args_file", "args_stdin"])))]
struct CallArgs {
    /// Tool name as the server lists it.
    tool: String,
    /// Arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Read the arguments (a JSON object) from a file.
    #[arg(long, value_name = "FILE")]
    args_file: Option<PathBuf>,
    /// Read the arguments (a JSON object) from stdin.
    #[arg(long)]
    args_stdin: bool,
    /// Drop large fields from the result (_meta, annotations, base64 payloads).
    #[arg(long)]
    compact: bool,
    /// Confirm a call atip's policy wants confirmed (a tool not marked read-only).
    #[arg(long, short = 'y')]
    yes: bool,
    /// atip policy file (default: atip's policy.json, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<usize, atip::units::UnitError> {
    atip::units::parse_size(s).map(|v| v as usize)
}

/// Whether the binary was started as `mcp` (its argv[0] file name).
pub fn invoked_as_mcp() -> bool {
    std::env::args_os()
        .next()
        .and_then(|a| {
            Path::new(&a)
                .file_name()
                .map(|n| n == "mcp" || n == "mcp.exe")
        })
        .unwrap_or(false)
}

/// The document's exit code for an error.
pub fn exit_code(e: &AtipError) -> ExitStatus {
    use ErrorCode::*;
    match e.code {
        McpConnectFailed | McpServerExited | McpTimeout | McpListCapped | McpFailed => {
            code::TRANSPORT
        }
        McpServerError | PolicyDenied | ConfirmationRequired | ConfirmationDeclined
        | PathOutsideRoots => code::TOOL,
        ArgsMalformed | ArgsInvalid | ArgsUnusable | InputUnreadable | InputNotFound => code::INPUT,
        // Not the document's to classify: a failed write to stdout, a bug.
        StdoutWriteFailed | Internal | Interrupted => ExitStatus::from(e),
        _ => code::USAGE,
    }
}

/// Runs `mcp …` in the environment `env` (read once by `main`) and returns its exit
/// status.
pub fn main(env: Env) -> ExitCode {
    let cli = match McpCli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::from(code::OK);
            }
            let args: Vec<String> = std::env::args().skip(1).collect();
            if wants_json(&args) {
                Printer::new(OutputFormat::Json, Verbosity::Normal, ColorChoice::Never)
                    .error(&usage_error(&e));
            } else {
                let _ = e.print();
            }
            return ExitCode::from(code::USAGE);
        }
    };
    let format = match (cli.g.json, cli.g.output) {
        (true, _) | (false, Some(Format::Json)) => OutputFormat::Json,
        (false, Some(Format::Text)) => OutputFormat::Text,
        (false, None) => match cli.command {
            Cmd::Servers | Cmd::Tools { .. } | Cmd::Ping => OutputFormat::Text,
            _ => OutputFormat::Json,
        },
    };
    let verbosity = if cli.g.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let color = ColorChoice::Auto.with_env(&env);
    let printer = || Printer::new(format, verbosity, color);
    if log::set_boxed_logger(Box::new(atip::output::PrinterLog(printer()))).is_ok() {
        log::set_max_level(log::LevelFilter::Debug);
    }
    let env_dir = |k: &str| env.non_empty(k).map(PathBuf::from);
    let ctx = Ctx {
        output: format,
        out: printer(),
        dirs: Dirs::resolve(
            env_dir("ATIP_DATA_DIR").as_deref(),
            env_dir("ATIP_CONFIG_DIR").as_deref(),
            env_dir("ATIP_STATE_DIR").as_deref(),
            &env,
        ),
        width: atip::output::term::stdout_width(&env),
        env,
    };
    super::signals::install(super::signals::Mode::Now);
    let code = match run(cli, &ctx) {
        Ok(c) => c,
        Err(e) => {
            ctx.out.error(&e);
            exit_code(&e)
        }
    };
    ExitCode::from(super::signals::finish().unwrap_or(code))
}

/// Whether a command line that did not parse asked for JSON: `--json`, `--output json`,
/// or a command whose output is JSON by default without `--output text`.
fn wants_json(args: &[String]) -> bool {
    let mut output = None;
    for (i, a) in args.iter().enumerate() {
        match a.as_str() {
            "--json" => return true,
            "--output" => output = args.get(i + 1).map(String::as_str),
            _ => {
                if let Some(v) = a.strip_prefix("--output=") {
                    output = Some(v);
                }
            }
        }
    }
    match output {
        Some(f) => f == "json",
        None => args
            .iter()
            .any(|a| matches!(a.as_str(), "describe" | "tool-search" | "call")),
    }
}

/// clap's error as atip's `usage` error: its first line the message, its tip the hint.
fn usage_error(e: &clap::Error) -> AtipError {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let message = lines
        .next()
        .unwrap_or("the command line is wrong")
        .trim_start_matches("error: ")
        .to_string();
    let mut err = AtipError::usage(message);
    if let Some(tip) = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("tip: "))
    {
        err = err.hint(tip.to_string());
    }
    err
}

fn run(cli: McpCli, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let g = &cli.g;
    match cli.command {
        Cmd::Servers => servers(g, ctx),
        Cmd::Tools { refresh } => super::mcp::block_on(list_tools(g, refresh, ctx)),
        Cmd::Describe { tool } => super::mcp::block_on(describe(g, &tool, ctx)),
        Cmd::ToolSearch(a) => super::mcp::block_on(tool_search(g, a, ctx)),
        Cmd::Call(a) => super::mcp::block_on(call(g, a, ctx)),
        Cmd::Ping => super::mcp::block_on(ping(g, ctx)),
    }
}

/// The document's config files: `--config-dir` (else `~/.mcp-cli`), then `./mcp-cli`.
fn cli_paths(g: &Global, env: &Env) -> Result<(Option<PathBuf>, Option<PathBuf>), AtipError> {
    let cwd = std::env::current_dir()
        .map_err(|e| AtipError::new(ErrorCode::CwdUnavailable, e.to_string()))?;
    let global_dir = g.config_dir.clone().or_else(|| {
        env.non_empty("HOME")
            .map(|h| PathBuf::from(h).join(config::CLI_GLOBAL_DIR))
    });
    Ok((
        global_dir.and_then(|d| config::cli_file(&d)),
        config::cli_file(&cwd.join(config::CLI_PROJECT_DIR)),
    ))
}

/// Reads and merges the config files, trust applied; no printing.
fn read_config(g: &Global, ctx: &Ctx) -> Result<McpConfig, AtipError> {
    let (global, project) = cli_paths(g, &ctx.env)?;
    let store = TrustStore::load(&ctx.dirs.config)?;
    let lookup = |n: &str| ctx.env.var(n).map(str::to_owned);
    Loader { lookup: &lookup }.load_cli(global.as_deref(), project.as_deref(), &store)
}

/// The config for a command, its warnings printed; with `ask`, an untrusted project file
/// is offered for trust on a terminal first.
fn load_config(g: &Global, ctx: &Ctx, ask: bool) -> Result<McpConfig, AtipError> {
    super::mcp_trust::load_with(ctx, ask, &|| read_config(g, ctx))
}

/// Splits `--stdio-command` into words: whitespace separates, single and double quotes
/// group, a backslash escapes the next character. Nothing is expanded; no shell runs.
fn split_words(s: &str) -> Result<Vec<String>, AtipError> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => cur.push(c),
                        None => return Err(AtipError::usage("--stdio-command: unclosed '")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => cur.push(c),
                            None => return Err(AtipError::usage("--stdio-command: unclosed \"")),
                        },
                        Some(c) => cur.push(c),
                        None => return Err(AtipError::usage("--stdio-command: unclosed \"")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    cur.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// The document's flags as atip's target (explicit mode or a configured server).
fn target(g: &Global) -> Result<Target, AtipError> {
    if g.http_url.is_none() && !g.headers.is_empty() {
        return Err(AtipError::usage("--header needs --http-url"));
    }
    if g.stdio_command.is_none() && !(g.stdio_args.is_empty() && g.envs.is_empty()) {
        return Err(AtipError::usage(
            "--stdio-arg and --env need --stdio-command",
        ));
    }
    let (command, cmd_args) = match &g.stdio_command {
        None => (None, Vec::new()),
        Some(s) => {
            let mut words = split_words(s)?;
            if words.is_empty() {
                return Err(AtipError::usage("--stdio-command is empty"));
            }
            let cmd = words.remove(0);
            words.extend(g.stdio_args.iter().cloned());
            (Some(cmd), words)
        }
    };
    Ok(Target {
        server: g.server.clone(),
        url: g.http_url.clone(),
        headers: g.headers.clone(),
        command,
        cmd_args,
        envs: g.envs.clone(),
        client: ClientFlags {
            timeout: g.timeout,
            trace: g.trace,
            quiet_server_stderr: g.quiet_server_stderr,
            cache_ttl: g.cache_ttl,
            no_cache: g.no_cache,
            protocol: None,
        },
    })
}

/// Config (or the explicit server) plus cache and client settings: atip's [`Remote`].
fn remote(g: &Global, ctx: &Ctx) -> Result<Remote, AtipError> {
    let t = target(g)?;
    let config = match super::mcp::explicit(&t)? {
        Some(spec) => {
            let mut c = McpConfig::default();
            // Explicit mode still honours the config's cache and toolSearch settings.
            if let Ok(base) = read_config(g, ctx) {
                c.cache = base.cache;
                c.tool_search = base.tool_search;
            }
            c.default_server = Some(spec.name.clone());
            c.servers.insert(spec.name.clone(), spec);
            c
        }
        None => load_config(g, ctx, true)?,
    };
    let ttl = Duration::from_secs(g.cache_ttl.unwrap_or(config.cache.ttl_seconds));
    let use_cache = !g.no_cache && config.cache.enabled;
    Ok(Remote {
        config,
        cache: ToolCache::of(&ctx.dirs),
        opts: ClientOptions {
            timeout: g.timeout,
            verbose: g.verbose,
            trace: g.trace,
            quiet_server_stderr: g.quiet_server_stderr,
            protocol: None,
            mark_nested: false,
            env: ctx.env.clone(),
        },
        ttl,
        use_cache,
    })
}

/// The selected server, with hints in this command's words.
fn select(r: &Remote, g: &Global) -> Result<ServerSpec, AtipError> {
    r.select(g.server.as_deref()).cloned().map_err(|mut e| {
        let names: Vec<&str> = r.config.servers.keys().map(String::as_str).collect();
        match e.code {
            ErrorCode::McpServerNotFound if names.is_empty() => {
                e.hint = Some(
                    "add it to ~/.mcp-cli/config.json or ./mcp-cli/config.json, or use --http-url / --stdio-command"
                        .into(),
                );
            }
            ErrorCode::McpServerNotFound => {
                e.hint = Some(format!("configured: {}", names.join(", ")));
            }
            ErrorCode::Usage if names.is_empty() => {
                e.hint = Some("add servers to ~/.mcp-cli/config.json or ./mcp-cli/config.json, or use --http-url / --stdio-command".into());
            }
            ErrorCode::Usage => {
                e.hint = Some(format!(
                    "pass --server NAME (or set {SERVER_ENV}, or defaultServer): {}",
                    names.join(", ")
                ));
            }
            _ => {}
        }
        e
    })
}

/// The JSON output cap: `--max-output`, else the config's `maxOutputBytes`, else 256 KiB.
fn max_output(g: &Global, config: &McpConfig) -> usize {
    g.max_output
        .or(config
            .max_output
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
        .unwrap_or(DEFAULT_MAX_OUTPUT)
}

/// JSON on stdout: one line, or indented with `--pretty`.
fn emit(v: &Value, g: &Global, ctx: &Ctx) -> Result<(), AtipError> {
    let mut text = if g.pretty {
        serde_json::to_string_pretty(v)
    } else {
        serde_json::to_string(v)
    }
    .map_err(|e| AtipError::new(ErrorCode::Internal, format!("failed to serialize: {e}")))?;
    text.push('\n');
    ctx.out.write(text.as_bytes())
}

fn size(v: &Value) -> usize {
    serde_json::to_string(v).map(|s| s.len()).unwrap_or(0)
}

/// Room kept for the warning field a cut adds.
const WARNING_ROOM: usize = 400;

/// Brings a list of results under `cap`: first the schemas (`schema_key`) from the last
/// result that has one, then the last results; says what was cut in `warning`.
fn cap_list(v: &mut Value, list_key: &str, schema_key: &str, cap: usize) {
    if size(v) <= cap {
        return;
    }
    let budget = cap.saturating_sub(WARNING_ROOM);
    let (mut schemas, mut dropped) = (0usize, 0usize);
    loop {
        if size(v) <= budget {
            break;
        }
        let Some(list) = v.get_mut(list_key).and_then(Value::as_array_mut) else {
            break;
        };
        if let Some(item) = list.iter_mut().rev().find(|i| i.get(schema_key).is_some()) {
            if let Some(o) = item.as_object_mut() {
                o.remove(schema_key);
                if o.contains_key("schemaIncluded") {
                    o.insert("schemaIncluded".into(), Value::Bool(false));
                }
            }
            schemas += 1;
        } else if list.pop().is_some() {
            dropped += 1;
        } else {
            break;
        }
    }
    v["warning"] = json!(format!(
        "output capped at {cap} bytes: {schemas} schema(s) and {dropped} result(s) left out (--max-output)"
    ));
    fit_strings(v, cap);
}

/// Last resort for a value still over `cap`: cuts its longest strings.
fn fit_strings(v: &mut Value, cap: usize) {
    fn longest(v: &mut Value) -> Option<&mut String> {
        match v {
            Value::String(s) => Some(s),
            Value::Array(a) => a.iter_mut().filter_map(longest).max_by_key(|s| s.len()),
            Value::Object(o) => o.values_mut().filter_map(longest).max_by_key(|s| s.len()),
            _ => None,
        }
    }
    let mut cut = false;
    while size(v) > cap.saturating_sub(WARNING_ROOM) {
        let over = size(v) + WARNING_ROOM - cap;
        let Some(s) = longest(v) else { break };
        if s.len() < 64 {
            break;
        }
        let mut keep = s.len().saturating_sub(over + 64).max(32);
        while !s.is_char_boundary(keep) {
            keep -= 1;
        }
        s.truncate(keep);
        s.push_str(" [truncated]");
        cut = true;
    }
    if cut && let Some(o) = v.as_object_mut() {
        o.entry("warning").or_insert(json!(format!(
            "output capped at {cap} bytes: long strings were cut (--max-output)"
        )));
    }
}

fn servers(g: &Global, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let cfg = load_config(g, ctx, false)?;
    if ctx.output.is_json() {
        let list: Vec<Value> = cfg
            .servers
            .values()
            .map(|s| {
                json!({"name": s.name, "transport": s.transport.kind(), "summary": s.summary(),
                       "origin": s.origin,
                       "default": cfg.default_server.as_deref() == Some(s.name.as_str())})
            })
            .collect();
        let untrusted: Vec<Value> = cfg
            .untrusted
            .iter()
            .map(|u| {
                json!({"name": u.name, "transport": u.transport, "origin": u.origin,
                       "status": u.status,
                       "hint": cfg.project_of(&u.origin).map(|p| p.trust_hint())})
            })
            .collect();
        let mut v = json!({"servers": list});
        if !untrusted.is_empty() {
            v["untrusted"] = Value::Array(untrusted);
        }
        return emit(&v, g, ctx).map(|_| code::OK);
    }
    let mut out = String::new();
    for s in cfg.servers.values() {
        let _ = writeln!(
            out,
            "{}\t{}\t{}",
            escape_controls(&s.name),
            s.transport.kind(),
            escape_controls(&s.summary())
        );
    }
    for u in &cfg.untrusted {
        let _ = writeln!(
            out,
            "{}\t{}\tnot started: {} is {}",
            super::mcp_trust::printable(&u.name),
            super::mcp_trust::printable(&u.transport),
            super::mcp_trust::printable(&u.origin),
            u.status.as_str()
        );
    }
    if cfg.servers.is_empty() && cfg.untrusted.is_empty() {
        ctx.out.note(
            "no MCP servers configured (looked for ~/.mcp-cli/config.json|yaml|yml and ./mcp-cli/config.json|yaml|yml)",
        );
    }
    ctx.out.text(&out)?;
    Ok(code::OK)
}

async fn list_tools(g: &Global, refresh: bool, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(g, ctx)?;
    let spec = select(&r, g)?;
    let (listing, session) = r.tools(&spec, None, refresh).await?;
    if let Some(s) = session {
        s.close().await;
    }
    if ctx.output.is_json() {
        let mut v = json!({"server": spec.name, "cached": listing.from_cache,
                           "tools": listing.cached.tools});
        cap_list(&mut v, "tools", "inputSchema", max_output(g, &r.config));
        return emit(&v, g, ctx).map(|_| code::OK);
    }
    let mut out = String::new();
    for t in &listing.cached.tools {
        let _ = writeln!(
            out,
            "{}\t{}",
            escape_controls(&t.name),
            escape_controls(
                t.description
                    .as_deref()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim()
            )
        );
    }
    ctx.out.text(&out)?;
    Ok(code::OK)
}

async fn describe(g: &Global, name: &str, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(g, ctx)?;
    let spec = select(&r, g)?;
    let (tool, session) = r.find_tool(&spec, name).await?;
    if let Some(s) = session {
        s.close().await;
    }
    if ctx.output.is_json() {
        let mut v = serde_json::to_value(&tool).unwrap_or(Value::Null);
        fit_strings(&mut v, max_output(g, &r.config));
        return emit(&v, g, ctx).map(|_| code::OK);
    }
    let mut out = String::new();
    let _ = writeln!(out, "{}", escape_controls(&tool.name));
    let _ = writeln!(
        out,
        "description: {}",
        escape_controls_keep_lines(tool.description.as_deref().unwrap_or(""))
    );
    let _ = writeln!(
        out,
        "input schema: {}",
        serde_json::to_string_pretty(&tools::input_schema(&tool)).unwrap_or_default()
    );
    ctx.out.text(&out)?;
    Ok(code::OK)
}

/// Lowercase words of a name or text; `createIssue` and `create_issue` give the same.
fn words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            cur.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// How a tool matched a query.
#[derive(Debug)]
struct Match {
    /// 3 exact name, 2 part of the name, 1 description, 0.5 the index alone.
    tier: f64,
    /// The tier in words, for `--explain`.
    how: &'static str,
    /// Query words found in the name.
    name_terms: Vec<String>,
    /// Query words found in the description.
    desc_terms: Vec<String>,
}

/// How a tool matches a query, by the document's order: the exact name (3), part of the
/// name (2), the description (1), or only through atip's search index (stems, synonyms;
/// 0.5). `None`: no match at all.
fn tier(query: &str, tool: &rmcp::model::Tool, indexed: bool) -> Option<Match> {
    let q = words(query);
    let joined = |w: &[String]| w.concat();
    let name_words = words(&tool.name);
    let desc_words = words(tool.description.as_deref().unwrap_or(""));
    let lower_name = tool.name.to_lowercase();
    let in_name: Vec<String> = q
        .iter()
        .filter(|w| name_words.contains(w) || (w.len() >= 3 && lower_name.contains(w.as_str())))
        .cloned()
        .collect();
    let in_desc: Vec<String> = q
        .iter()
        .filter(|w| desc_words.contains(w))
        .cloned()
        .collect();
    if !q.is_empty() && (joined(&q) == joined(&name_words) || query.trim() == tool.name) {
        Some(Match {
            tier: 3.0,
            how: "exact name",
            name_terms: in_name,
            desc_terms: in_desc,
        })
    } else if !in_name.is_empty() {
        Some(Match {
            tier: 2.0,
            how: "name",
            name_terms: in_name,
            desc_terms: in_desc,
        })
    } else if !in_desc.is_empty() {
        Some(Match {
            tier: 1.0,
            how: "description",
            name_terms: in_name,
            desc_terms: in_desc,
        })
    } else if indexed {
        Some(Match {
            tier: 0.5,
            how: "related words",
            name_terms: in_name,
            desc_terms: in_desc,
        })
    } else {
        None
    }
}

async fn tool_search(g: &Global, a: SearchArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let query = a.query.join(" ").trim().to_string();
    if query.is_empty() {
        return Err(AtipError::usage("the query is empty"));
    }
    let r = remote(g, ctx)?;
    let spec = select(&r, g)?;
    let limit = a.limit.unwrap_or(r.config.tool_search.default_limit).max(1);
    let schemas = if a.no_schemas {
        0
    } else {
        a.schemas.unwrap_or(r.config.tool_search.default_schemas)
    };
    let (listing, session) = r.tools(&spec, None, false).await?;
    if let Some(s) = session {
        s.close().await;
    }
    let list = &listing.cached.tools;
    let ranked = rank(&query, &spec, list, limit, a.explain);
    let results: Vec<Value> = ranked
        .iter()
        .enumerate()
        .map(|(rank, hit)| result_object(&list[hit.i], hit, rank < schemas, a.explain))
        .collect();
    let mut v = json!({"query": query, "server": spec.name, "results": results});
    if ctx.output.is_json() {
        cap_list(&mut v, "results", "inputSchema", max_output(g, &r.config));
        return emit(&v, g, ctx).map(|_| code::OK);
    }
    ctx.out.text(&search_text(&v))?;
    Ok(code::OK)
}

/// One ranked tool of a search: its place in the list, score, match, index evidence.
struct Hit {
    score: f64,
    i: usize,
    m: Match,
    index_score: f32,
    index_terms: Vec<String>,
}

/// The tools matching `query`, best first, at most `limit`: ranked by tier, and within
/// a tier by atip's search index (BM25-like, stems, synonyms).
fn rank(
    query: &str,
    spec: &ServerSpec,
    list: &[rmcp::model::Tool],
    limit: usize,
    explain: bool,
) -> Vec<Hit> {
    let flat: Vec<FlatTool> = list
        .iter()
        .map(|t| tools::to_flat(&spec.name, t, spec.trust_hints))
        .collect();
    let index = atip::search::SearchIndex::build(&flat);
    let mut indexed: Vec<(f32, Vec<String>)> = vec![(0.0, Vec::new()); list.len()];
    let mut hit = vec![false; list.len()];
    for h in index.search(query, list.len().max(1), explain) {
        if h.doc < list.len() {
            indexed[h.doc] = (h.score, h.why);
            hit[h.doc] = true;
        }
    }
    let mut ranked: Vec<Hit> = list
        .iter()
        .enumerate()
        .filter_map(|(i, t)| {
            let m = tier(query, t, hit[i])?;
            let s = f64::from(indexed[i].0.max(0.0));
            // Within a tier, the index score, squeezed below 1 so tiers never mix.
            let score = ((m.tier + s / (1.0 + s)) * 1000.0).round() / 1000.0;
            Some(Hit {
                score,
                i,
                m,
                index_score: indexed[i].0,
                index_terms: std::mem::take(&mut indexed[i].1),
            })
        })
        .collect();
    ranked.sort_by(|x, y| y.score.total_cmp(&x.score).then(x.i.cmp(&y.i)));
    ranked.truncate(limit);
    ranked
}

/// A search result as the document shapes it.
fn result_object(t: &rmcp::model::Tool, hit: &Hit, schema: bool, explain: bool) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(t.name));
    o.insert("description".into(), json!(t.description));
    o.insert("score".into(), json!(hit.score));
    o.insert("schemaIncluded".into(), json!(schema));
    if schema {
        o.insert("inputSchema".into(), tools::input_schema(t));
    }
    if explain {
        let m = &hit.m;
        o.insert(
            "explain".into(),
            json!({"match": m.how, "nameTerms": m.name_terms, "descriptionTerms": m.desc_terms,
                   "indexScore": (f64::from(hit.index_score) * 1000.0).round() / 1000.0,
                   "indexTerms": hit.index_terms}),
        );
    }
    Value::Object(o)
}

/// The document's text output of a search: name, score, first line of the description.
fn search_text(v: &Value) -> String {
    let mut out = String::new();
    for r in v["results"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{}\t{}\t{}",
            escape_controls(r["name"].as_str().unwrap_or("")),
            r["score"],
            escape_controls(
                r["description"]
                    .as_str()
                    .unwrap_or("")
                    .lines()
                    .next()
                    .unwrap_or("")
            )
        );
    }
    out
}

fn read_args(a: &CallArgs) -> Result<Map<String, Value>, AtipError> {
    let text = if let Some(text) = &a.args {
        text.clone()
    } else if let Some(path) = &a.args_file {
        std::fs::read_to_string(path)
            .map_err(|e| AtipError::read_failed("arguments file ", path, &e))?
    } else if a.args_stdin {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            AtipError::new(
                ErrorCode::InputUnreadable,
                format!("failed to read stdin: {e}"),
            )
        })?;
        text
    } else {
        return Ok(Map::new());
    };
    atip::exec::args::parse_text(&text)
}

async fn call(g: &Global, a: CallArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    // Bad input is found before any server starts.
    let raw = read_args(&a)?;
    let r = remote(g, ctx)?;
    let spec = select(&r, g)?;
    let cwd = std::env::current_dir()
        .map_err(|e| AtipError::new(ErrorCode::CwdUnavailable, e.to_string()))?;
    let policy = Policy::load(a.policy.as_deref(), &ctx.dirs.config, &cwd)?;
    let audit = AuditLog::in_dir(&ctx.dirs.state);
    let yes = a.yes;
    let mut confirm = |p: &str, d: &Decision| {
        if yes {
            Confirmation::Yes
        } else {
            super::mcp::prompt(p, d)
        }
    };
    let cap = max_output(g, &r.config);
    // Each text and payload is cut to leave room for the result around it.
    let per_block = cap.saturating_sub(2 * WARNING_ROOM).max(1024);
    let called = r
        .call(
            &spec,
            &a.tool,
            raw,
            &policy,
            &audit,
            &mut confirm,
            per_block,
        )
        .await?;
    if r.opts.verbose {
        log::info!(
            target: atip::output::RAW_LOG,
            "atip mcp: [{}] tools/call {} took {} ms",
            escape_controls(&spec.name),
            escape_controls(&called.tool.name),
            called.duration.as_millis()
        );
    }
    if ctx.output.is_json() {
        let mut v = if a.compact {
            tools::compact(&called.result, &r.config.compact)
        } else {
            serde_json::to_value(&called.result).unwrap_or(Value::Null)
        };
        // Each block is capped already; many blocks can still add up.
        if size(&v) > cap {
            cap_list(&mut v, "content", "_meta", cap);
        }
        emit(&v, g, ctx)?;
        if called.result.is_error == Some(true) {
            ctx.out.note("the MCP tool reported an error (isError)");
        }
    } else {
        super::mcp::print_result(&called.result, a.compact.then_some(&r.config.compact), ctx)?;
    }
    Ok(if called.result.is_error == Some(true) {
        code::TOOL
    } else {
        code::OK
    })
}

async fn ping(g: &Global, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(g, ctx)?;
    let spec = select(&r, g)?;
    let session = Session::connect(&spec, &r.opts).await?;
    let rtt = session.ping().await;
    let info = session.server_info();
    let connect = session.connect_time;
    session.close().await;
    let rtt = rtt?;
    let mut v = json!({
        "server": spec.name,
        "transport": spec.transport.kind(),
        "ok": true,
        "protocolVersion": info.get("protocolVersion"),
        "serverInfo": info.get("serverInfo"),
        "capabilities": info.get("capabilities"),
        "connectMs": connect.as_millis() as u64,
        "rttMs": (rtt.as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
    });
    if ctx.output.is_json() {
        fit_strings(&mut v, max_output(g, &r.config));
        return emit(&v, g, ctx).map(|_| code::OK);
    }
    let field = |p: &str| {
        escape_controls(info.pointer(p).and_then(Value::as_str).unwrap_or("?")).into_owned()
    };
    let caps: Vec<String> = info
        .get("capabilities")
        .and_then(Value::as_object)
        .map(|m| m.keys().map(|k| escape_controls(k).into_owned()).collect())
        .unwrap_or_default();
    ctx.out.text(&format!(
        "{}\tok\t{} {} (protocol {})\tcapabilities: {}\tconnect {} ms, ping {:.2} ms\n",
        escape_controls(&spec.name),
        field("/serverInfo/name"),
        field("/serverInfo/version"),
        field("/protocolVersion"),
        caps.join(","),
        connect.as_millis(),
        rtt.as_secs_f64() * 1000.0
    ))?;
    Ok(code::OK)
}

/// `atip mcp link-cli`.
#[derive(Debug, clap::Args)]
pub struct LinkArgs {
    /// Directory for the link (default: the directory atip itself is in).
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `atip mcp link-cli [--dir DIR]`: a symlink `DIR/mcp` to this atip, so that `mcp` runs
/// the mcp-cli command. Idempotent; a different file already named `mcp` is left alone.
pub fn link(a: LinkArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| {
            AtipError::new(
                ErrorCode::Internal,
                format!("cannot find atip's own executable: {e}"),
            )
        })?;
    let dir = match a.dir {
        Some(d) => d,
        None => exe.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let link = dir.join("mcp");
    let created = match std::fs::symlink_metadata(&link) {
        Ok(_) => {
            // Already this atip (a symlink to it, or a hard link): nothing to do.
            let same = std::fs::canonicalize(&link).is_ok_and(|p| p == exe) || {
                use std::os::unix::fs::MetadataExt;
                match (std::fs::metadata(&link), std::fs::metadata(&exe)) {
                    (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
                    _ => false,
                }
            };
            if !same {
                return Err(AtipError::new(
                    ErrorCode::FileWriteFailed,
                    format!(
                        "{} exists and is not this atip ({}); not replaced",
                        link.display(),
                        exe.display()
                    ),
                )
                .hint("remove it yourself, or choose another directory with --dir DIR")
                .details(json!({"path": link, "target": exe})));
            }
            false
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::os::unix::fs::symlink(&exe, &link).map_err(|e| {
                AtipError::new(
                    ErrorCode::FileWriteFailed,
                    format!("failed to create {}: {e}", link.display()),
                )
                .details(json!({"path": link}))
            })?;
            true
        }
        Err(e) => {
            return Err(AtipError::new(
                ErrorCode::FileWriteFailed,
                format!("cannot inspect {}: {e}", link.display()),
            ));
        }
    };
    if ctx.output.is_json() {
        ctx.out
            .json(&json!({"link": link, "target": exe, "created": created}))?;
    } else {
        let head = if created {
            "✓ Linked the mcp command to atip"
        } else {
            "✓ The mcp command is already atip"
        };
        let t = format!(
            "{}\n  link    {}\n  to      {}\n\nNext: mcp --help (run it with {} on your PATH)\n",
            atip::output::term::Style::new(ctx.out.stdout_color())
                .paint(Some(atip::output::term::Paint::Bold), head),
            link.display(),
            exe.display(),
            dir.display()
        );
        ctx.out
            .text(&atip::output::term::wrap_long_lines(&t, ctx.width))?;
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_commands_split_into_words_without_a_shell() {
        assert_eq!(
            split_words(r#"node "my server.js" --x='a b' \$HOME $(id)"#).unwrap(),
            ["node", "my server.js", "--x=a b", "$HOME", "$(id)"]
        );
        assert!(split_words("node 'open").is_err());
        assert_eq!(split_words("  ").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn names_split_into_words_across_conventions() {
        assert_eq!(words("jira.createIssue"), ["jira", "create", "issue"]);
        assert_eq!(words("get-sum"), ["get", "sum"]);
        assert_eq!(words("HTTPServer v2"), ["httpserver", "v2"]);
    }

    #[test]
    fn tiers_follow_the_documents_order() {
        let t = |n: &str, d: &str| -> rmcp::model::Tool {
            serde_json::from_value(
                json!({"name": n, "description": d, "inputSchema": {"type": "object"}}),
            )
            .unwrap()
        };
        let exact = tier("create issue", &t("createIssue", "x"), false).unwrap();
        let name = tier("create issue", &t("create_pr", "x"), false).unwrap();
        let desc = tier("create issue", &t("open", "Create something"), false).unwrap();
        assert!(
            exact.tier > name.tier && name.tier > desc.tier,
            "{exact:?} {name:?} {desc:?}"
        );
        assert!(tier("create issue", &t("open", "nothing"), false).is_none());
        assert_eq!(
            tier("create issue", &t("open", "nothing"), true)
                .unwrap()
                .how,
            "related words"
        );
    }

    #[test]
    fn lists_are_capped_schemas_first_then_results() {
        let big = "x".repeat(1000);
        let mut v = json!({"results": (0..10).map(|i| json!({"name": format!("t{i}"),
            "schemaIncluded": true, "inputSchema": {"description": big}})).collect::<Vec<_>>()});
        cap_list(&mut v, "results", "inputSchema", 6000);
        assert!(size(&v) <= 6000, "{}", size(&v));
        let r = v["results"].as_array().unwrap();
        assert_eq!(r.len(), 10, "schemas go first");
        assert!(r[0].get("inputSchema").is_some());
        assert_eq!(r[9]["schemaIncluded"], false);
        assert!(v["warning"].as_str().unwrap().contains("schema"));
        let mut v = json!({"results": (0..100).map(|i| json!({"name": format!("t{i}"), "description": big})).collect::<Vec<_>>()});
        cap_list(&mut v, "results", "inputSchema", 20_000);
        assert!(size(&v) <= 20_000);
        assert!(v["results"].as_array().unwrap().len() < 100);
    }

    #[test]
    fn usage_errors_are_json_when_json_was_asked_for() {
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert!(wants_json(&v(&["--json", "tools", "--x"])));
        assert!(wants_json(&v(&["call", "t", "--x"])));
        assert!(wants_json(&v(&["tools", "--output=json"])));
        assert!(!wants_json(&v(&["call", "t", "--output", "text"])));
        assert!(!wants_json(&v(&["tools", "--x"])));
        let e = McpCli::try_parse_from(["mcp", "--jsn", "tools"]).unwrap_err();
        let e = usage_error(&e);
        assert!(e.message.contains("--jsn"), "{}", e.message);
        assert!(e.hint.as_deref().unwrap_or("").contains("--json"), "{e:?}");
    }

    #[test]
    fn exit_codes_are_the_documents() {
        for (c, want) in [
            (ErrorCode::Usage, 2),
            (ErrorCode::McpToolNotFound, 2),
            (ErrorCode::McpServerNotFound, 2),
            (ErrorCode::McpConfigInvalid, 2),
            (ErrorCode::McpConnectFailed, 3),
            (ErrorCode::McpTimeout, 3),
            (ErrorCode::McpServerExited, 3),
            (ErrorCode::McpServerError, 4),
            (ErrorCode::PolicyDenied, 4),
            (ErrorCode::ArgsMalformed, 5),
            (ErrorCode::ArgsInvalid, 5),
            (ErrorCode::InputNotFound, 5),
        ] {
            assert_eq!(exit_code(&AtipError::new(c, "x")).code(), want, "{c:?}");
        }
    }
}
