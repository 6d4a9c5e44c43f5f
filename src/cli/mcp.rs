//! `atip mcp`: serve registered tools over MCP (`atip mcp`, `atip mcp serve`), and talk
//! to other MCP servers (`servers`, `tools`, `describe`, `call`, `ping`, `import`).
//! Only flags and rendering live here; the work is in `atip::mcp`.

use super::exec::RunArgs;
use crate::Ctx;
use atip::exec::audit::AuditLog;
use atip::exec::policy::{Action, Decision, Policy};
use atip::exec::{Confirmation, Engine, args};
use atip::mcp::cache::ToolCache;
use atip::mcp::client::{ClientOptions, Protocol, Session};
use atip::mcp::config::{self, McpConfig, ServerSpec, Transport};
use atip::mcp::remote::Remote;
use atip::mcp::tools;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Serve registered tools over MCP, or talk to MCP servers.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<McpCommand>,
    /// `atip mcp` with no subcommand serves, as `atip mcp serve` does.
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Debug, clap::Subcommand)]
enum McpCommand {
    /// Serve every registered tool over MCP (stdio; --http for Streamable HTTP).
    #[command(after_help = super::examples::MCP_SERVE)]
    Serve(ServeArgs),
    /// List the configured MCP servers (global mcp.json, then the project's .mcp.json).
    #[command(after_help = super::examples::MCP_SERVERS)]
    Servers(ServersArgs),
    /// List a server's tools (every server when none is named).
    #[command(after_help = super::examples::MCP_TOOLS)]
    Tools(ToolsArgs),
    /// Show one tool: title, description, input and output schema, annotations.
    #[command(after_help = super::examples::MCP_DESCRIBE)]
    Describe(DescribeArgs),
    /// Call a tool under policy.
    #[command(after_help = super::examples::MCP_CALL)]
    Call(CallArgs),
    /// Connect, initialize, report capabilities and round-trip time.
    #[command(after_help = super::examples::MCP_PING)]
    Ping(PingArgs),
    /// Copy servers configured for an agent host into atip's global mcp.json.
    #[command(after_help = super::examples::MCP_IMPORT)]
    Import(ImportArgs),
    /// Add atip's server to an agent host's own config file (JSON or Codex TOML).
    #[command(after_help = super::examples::MCP_INSTALL)]
    Install(super::mcp_install::InstallArgs),
    /// Remove atip's server from an agent host's config file.
    #[command(after_help = super::examples::MCP_UNINSTALL)]
    Uninstall(super::mcp_install::InstallArgs),
    /// Trust a project's .mcp.json (its exact content), or list trusted files.
    #[command(after_help = super::examples::MCP_TRUST)]
    Trust(super::mcp_trust::TrustArgs),
    /// Forget the trust of a project's .mcp.json.
    #[command(after_help = super::examples::MCP_UNTRUST)]
    Untrust(super::mcp_trust::UntrustArgs),
    /// Create `mcp` (a symlink to atip) that runs the mcp-cli command (spec/mcp-cli.md).
    #[command(after_help = super::examples::MCP_LINK_CLI)]
    LinkCli(super::mcp_cli::LinkArgs),
}

// Flags of the server.
// Not a doc comment: flattened into a command built on invocation, it would override that command's help text.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Only these registered tools, comma-separated (e.g. `gh,git`).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Most calls run at once; further calls wait for a slot, or are refused when the
    /// policy says `limits.overflow: refuse` (default: the number of CPUs).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
    /// Policy, limits and interactivity, as for `atip exec`.
    #[command(flatten)]
    pub run: RunArgs,
    /// Above this many tools, list a search tool and a call tool (plus pinned tools)
    /// instead of every tool.
    #[arg(long, default_value_t = atip::mcp::search_mode::DEFAULT_THRESHOLD, value_name = "N")]
    pub search_threshold: usize,
    /// Tools listed in search mode besides the search and call tools (flattened names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub pin: Vec<String>,
    /// Serve Streamable HTTP on this address (e.g. 127.0.0.1:8808) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Environment variable holding the bearer token HTTP clients must send (required
    /// for a non-loopback address; on loopback, unset means a random token printed once
    /// on stderr).
    #[arg(long, value_name = "VAR", default_value = "ATIP_MCP_TOKEN")]
    pub token_env: String,
    /// HTTP: most MCP sessions open at once; past it the least recently used is closed.
    #[arg(long, value_name = "N", requires = "http", default_value_t = atip::mcp::http::DEFAULT_MAX_SESSIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_sessions: u32,
    /// HTTP: most connections open at once; further ones wait.
    #[arg(long, value_name = "N", requires = "http", default_value_t = atip::mcp::http::DEFAULT_MAX_CONNECTIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// HTTP: time a client has to send a request's headers (and the longest idle time
    /// between requests on a connection), e.g. `10s`.
    #[arg(long, value_name = "DURATION", requires = "http", default_value = "10s",
          value_parser = atip::units::parse_duration)]
    pub header_timeout: std::time::Duration,
    /// Serve only the registered commands, not the configured MCP servers' tools.
    #[arg(long, conflicts_with = "mcp_server")]
    pub no_mcp: bool,
    /// Proxy only these configured MCP servers, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub mcp_server: Vec<String>,
    /// How sessions with the proxied servers start (as `--protocol` of the client commands;
    /// default: each server's `protocol` setting, else auto).
    #[arg(long, value_enum, value_name = "ERA")]
    pub mcp_protocol: Option<Protocol>,
}

/// How to reach a server: by name from the config, or explicitly.
#[derive(Debug, Clone, clap::Args)]
pub struct Target {
    /// Server name from the config (default: ATIP_MCP_SERVER, defaultServer, or the only one).
    #[arg(long, env = atip::mcp::remote::SERVER_ENV, value_name = "NAME")]
    pub server: Option<String>,
    /// Explicit mode: a Streamable HTTP endpoint, no config needed.
    #[arg(long, value_name = "URL", conflicts_with = "command")]
    pub url: Option<String>,
    /// With --url: a header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "K:V", requires = "url")]
    pub headers: Vec<String>,
    /// Explicit mode: start this stdio server (no shell).
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
    /// With --command: one argument (repeatable).
    #[arg(
        long = "arg",
        value_name = "A",
        requires = "command",
        allow_hyphen_values = true
    )]
    pub cmd_args: Vec<String>,
    /// With --command: an environment entry `K=V` (repeatable).
    #[arg(long = "env", value_name = "K=V", requires = "command")]
    pub envs: Vec<String>,
    /// Client settings.
    #[command(flatten)]
    pub client: ClientFlags,
}

/// Connection and diagnostics flags.
#[derive(Debug, Clone, clap::Args)]
pub struct ClientFlags {
    /// Deadline for connecting and for each request, e.g. `10s` (default: the server's
    /// timeoutMs, else 30s).
    #[arg(long, value_name = "DURATION", value_parser = atip::units::parse_duration)]
    pub timeout: Option<Duration>,
    /// Every JSON-RPC frame on stderr (secrets redacted).
    #[arg(long)]
    pub trace: bool,
    /// Do not forward a stdio server's stderr.
    #[arg(long)]
    pub quiet_server_stderr: bool,
    /// Lifetime of cached tool lists in seconds (default: the config's, else 300).
    #[arg(long, value_name = "SECONDS")]
    pub cache_ttl: Option<u64>,
    /// Neither read nor write the tools cache.
    #[arg(long)]
    pub no_cache: bool,
    /// How sessions start: `auto` probes `server/discover` (MCP 2026-07-28) and falls
    /// back to the `initialize` handshake; `legacy` or `modern` use only one. Default: the
    /// server's `protocol` setting in the config, else auto.
    #[arg(long, value_enum, value_name = "ERA")]
    pub protocol: Option<Protocol>,
}

/// `atip mcp servers`.
#[derive(Debug, clap::Args)]
pub struct ServersArgs {}

/// `atip mcp tools`.
#[derive(Debug, clap::Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    target: Target,
    /// Fetch the list even when the cache is fresh.
    #[arg(long)]
    refresh: bool,
}

/// `atip mcp describe`.
#[derive(Debug, clap::Args)]
pub struct DescribeArgs {
    /// Tool name as the server lists it.
    tool: String,
    #[command(flatten)]
    target: Target,
}

/// `atip mcp call`.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").args(["args", "args_file", "args_stdin"])))]
pub struct CallArgs {
    /// Tool name as the server lists it.
    tool: String,
    #[command(flatten)]
    target: Target,
    /// Arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    args: Option<String>,
    /// Read the arguments (a JSON object) from a file.
    #[arg(long, value_name = "FILE")]
    args_file: Option<PathBuf>,
    /// Read the arguments (a JSON object) from stdin.
    #[arg(long)]
    args_stdin: bool,
    /// Confirm a call the policy wants confirmed.
    #[arg(long, short = 'y')]
    yes: bool,
    /// Policy file (default: <config-dir>/policy.json, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Drop large fields from the result (see spec/mcp-client.md, "--compact").
    #[arg(long)]
    compact: bool,
    /// Cap on each text block and payload of the result, e.g. `256KiB` (default: the
    /// config's `maxOutputBytes`, else 1 MiB).
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    max_output: Option<usize>,
}

/// `atip mcp ping`.
#[derive(Debug, clap::Args)]
pub struct PingArgs {
    #[command(flatten)]
    target: Target,
}

/// `atip mcp import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Agent host: claude-desktop, claude-code, cursor, vscode.
    #[arg(value_enum)]
    host: atip::mcp::import::Host,
    /// Read this file instead of the host's usual one.
    #[arg(long, value_name = "FILE")]
    from: Option<PathBuf>,
    /// Replace servers of the same name already in mcp.json.
    #[arg(long)]
    force: bool,
    /// Show what would be imported; write nothing.
    #[arg(long)]
    dry_run: bool,
}

fn parse_size(s: &str) -> Result<usize, atip::units::UnitError> {
    atip::units::parse_size(s).map(|v| v as usize)
}

/// Runs `atip mcp …`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    // SIGINT, SIGTERM, SIGHUP: every server and tool this atip started is killed with its
    // process group, and atip exits 128 + the signal's number (cli::signals).
    super::signals::install(super::signals::Mode::Now);
    match args.command {
        None => serve(args.serve, ctx),
        Some(McpCommand::Serve(a)) => serve(a, ctx),
        Some(McpCommand::Servers(_)) => servers(ctx),
        Some(McpCommand::Tools(a)) => block_on(tools_cmd(a, ctx)),
        Some(McpCommand::Describe(a)) => block_on(describe(a, ctx)),
        Some(McpCommand::Call(a)) => block_on(call(a, ctx)),
        Some(McpCommand::Ping(a)) => block_on(ping(a, ctx)),
        Some(McpCommand::Import(a)) => import(a, ctx),
        Some(McpCommand::Install(a)) => super::mcp_install::run(a, true, ctx),
        Some(McpCommand::Uninstall(a)) => super::mcp_install::run(a, false, ctx),
        Some(McpCommand::Trust(a)) => super::mcp_trust::trust(a, ctx),
        Some(McpCommand::Untrust(a)) => super::mcp_trust::untrust(a, ctx),
        Some(McpCommand::LinkCli(a)) => super::mcp_cli::link(a, ctx),
    }
}

fn serve(args: ServeArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let (policy, mut settings) = args.run.resolve(ctx)?;
    // Tools inferred from man pages are served like any other: past the search threshold
    // a client sees two tools whatever the registry holds, and a call whose effects are
    // unknown asks. Only what the policy denies outright is withheld (spec/mcp.md).
    settings.include_inferred = true;
    let engine = Engine::load(&ctx.dirs, policy, settings, args.tools.as_deref(), None)?;
    ctx.out.warnings(&engine.warnings);
    let jobs = args.jobs.map(usize::from).unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let proxy = proxy_setup(&args, ctx)?;
    // A served set indexed apart from the compiled catalog ranks with its facts too.
    let apart = args.tools.is_some() || engine.settings.allow_interactive || proxy.is_some();
    let scale = atip::mcp::search_mode::Scale {
        threshold: args.search_threshold,
        pinned: args.pin.clone(),
        defaults: tool_search_defaults(ctx),
        facts: if apart {
            atip::catalog::machine_facts(&ctx.dirs)
        } else {
            Default::default()
        },
    };
    match args.http {
        None => atip::mcp::serve_blocking(engine, scale, jobs, proxy)?,
        Some(addr) => {
            let token = ctx
                .env
                .var(&args.token_env)
                .filter(|t| !t.is_empty())
                .map(str::to_owned);
            atip::mcp::http::serve_blocking(
                engine,
                scale,
                jobs,
                &addr,
                token,
                &args.token_env,
                atip::mcp::http::Limits {
                    max_sessions: args.max_sessions as usize,
                    max_connections: args.max_connections as usize,
                    header_timeout: args.header_timeout,
                },
                proxy,
                super::signals::install(super::signals::Mode::Now),
            )?
        }
    }
    Ok(ExitStatus::Success)
}

/// How long a search waits for a server's tool list when the server sets no
/// `timeoutMs`: connect, handshake and `tools/list` together.
const LIST_TIMEOUT: Duration = Duration::from_secs(5);

/// The tool lists of `specs` (configured, trusted servers: an untrusted project file's
/// servers are never in the config's `servers`), fetched all at once, each bounded by its
/// server's `timeoutMs` (else [`LIST_TIMEOUT`]) and stored in the cache. A server that
/// fails or does not answer in time gets why, and its process is stopped when its
/// fetch is dropped.
fn fetch_lists<'s>(
    specs: &[&'s atip::mcp::config::ServerSpec],
    cache: &ToolCache,
    ttl: Duration,
    use_cache: bool,
    ctx: &Ctx,
) -> Vec<(
    &'s atip::mcp::config::ServerSpec,
    Result<Vec<rmcp::model::Tool>, String>,
)> {
    if specs.is_empty() {
        return Vec::new();
    }
    let fetch = |spec: atip::mcp::config::ServerSpec| {
        let r = Remote {
            config: McpConfig::default(),
            cache: cache.clone(),
            opts: ClientOptions {
                quiet_server_stderr: true,
                env: ctx.env.clone(),
                ..ClientOptions::default()
            },
            ttl,
            use_cache,
        };
        let limit = spec.timeout.unwrap_or(LIST_TIMEOUT);
        async move {
            let listed = tokio::time::timeout(limit, async {
                let (l, s) = r.tools(&spec, None, true).await?;
                if let Some(s) = s {
                    s.close().await;
                }
                Ok::<_, AtipError>(l.cached.tools)
            })
            .await;
            match listed {
                Ok(Ok(tools)) => Ok(tools),
                Ok(Err(e)) => Err(e.message),
                Err(_) => Err(format!(
                    "its tool list did not arrive within {}",
                    atip::units::format_duration(limit)
                )),
            }
        }
    };
    let all = run_async(async {
        let mut set = tokio::task::JoinSet::new();
        for (i, spec) in specs.iter().enumerate() {
            let f = fetch((*spec).clone());
            set.spawn(async move { (i, f.await) });
        }
        let mut got: Vec<Option<Result<Vec<rmcp::model::Tool>, String>>> = vec![None; specs.len()];
        while let Some(done) = set.join_next().await {
            if let Ok((i, r)) = done {
                got[i] = Some(r);
            }
        }
        Ok(got)
    });
    let got = match all {
        Ok(Some(got)) => got,
        Ok(None) => vec![None; specs.len()],
        Err(e) => vec![Some(Err(e.message)); specs.len()],
    };
    specs
        .iter()
        .zip(got)
        .map(|(spec, r)| {
            (
                *spec,
                r.unwrap_or_else(|| Err("its fetch was interrupted".into())),
            )
        })
        .collect()
}

/// `toolSearch` of the MCP config (global mcp.json, then .mcp.json): the defaults of
/// `atip search` and of search mode's search tool. A config that does not load gives
/// the built-in defaults (its problems are reported where servers are used).
pub fn tool_search_defaults(ctx: &Ctx) -> atip::mcp::search_mode::SearchDefaults {
    match load_config_quiet(ctx) {
        Ok(c) => atip::mcp::search_mode::SearchDefaults {
            limit: c.tool_search.default_limit.max(1),
            schemas: c.tool_search.default_schemas,
        },
        Err(_) => Default::default(),
    }
}

/// The configured MCP servers `atip mcp serve` proxies: none with `--no-mcp`, when no
/// server is configured, or when this atip was itself started by a proxy; a broken
/// config is a warning unless `--mcp-server` asked for servers by name.
fn proxy_setup(args: &ServeArgs, ctx: &Ctx) -> Result<Option<atip::mcp::proxy::Setup>, AtipError> {
    use atip::mcp::proxy::{NESTED_ENV, Setup};
    if args.no_mcp {
        return Ok(None);
    }
    if ctx.env.var_os(NESTED_ENV).is_some() {
        if !args.mcp_server.is_empty() {
            return Err(usage(format!(
                "--mcp-server: this atip was started by another atip's MCP proxy ({NESTED_ENV} is set), which never proxies again"
            )));
        }
        return Ok(None);
    }
    let config = match load_config(ctx) {
        Ok(c) => c,
        Err(e) if args.mcp_server.is_empty() => {
            ctx.out
                .warn(format_args!("MCP servers are not proxied: {}", e.message));
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    // A server asked for by name that an untrusted project file declares: say so.
    for name in &args.mcp_server {
        if !config.servers.contains_key(name)
            && let Some(e) = config.untrusted_error(name)
        {
            return Err(e);
        }
    }
    if config.servers.is_empty() {
        return Ok(None);
    }
    let ttl = Duration::from_secs(config.cache.ttl_seconds);
    let use_cache = config.cache.enabled;
    Ok(Some(Setup {
        remote: Remote {
            config,
            cache: ToolCache::of(&ctx.dirs),
            opts: ClientOptions {
                timeout: None,
                verbose: ctx.out.verbosity() == atip::output::Verbosity::Verbose,
                trace: false,
                quiet_server_stderr: false,
                protocol: args.mcp_protocol,
                mark_nested: true,
                env: ctx.env.clone(),
            },
            ttl,
            use_cache,
        },
        only: args.mcp_server.clone(),
        audit: AuditLog::in_dir(&ctx.dirs.state),
        max_output: args.run.max_output,
    }))
}

/// One runtime per command; Ctrl-C drops the work (which kills a stdio server's group)
/// and exits 130.
pub(crate) fn block_on(
    fut: impl Future<Output = Result<ExitStatus, AtipError>>,
) -> Result<ExitStatus, AtipError> {
    Ok(run_async(fut)?.unwrap_or_else(|| {
        log::info!(target: atip::output::RAW_LOG, "atip mcp: interrupted");
        ExitStatus::Signal(libc::SIGINT)
    }))
}

/// Runs `fut` on a fresh current-thread runtime; `None` when Ctrl-C came first.
fn run_async<T>(fut: impl Future<Output = Result<T, AtipError>>) -> Result<Option<T>, AtipError> {
    let rt = atip::net::runtime(atip::net::Threads::Current)?;
    // The run's one cancel token (cli::signals), set by SIGINT, SIGTERM or SIGHUP; a
    // command that installed no handler yet winds down.
    let cancel = super::signals::install(super::signals::Mode::WindDown);
    let r = rt.block_on(async {
        tokio::select! {
            r = fut => r.map(Some),
            _ = atip::net::cancelled(cancel) => Ok(None),
        }
    });
    rt.shutdown_timeout(Duration::from_millis(500));
    r
}

/// The merged config (a project file only when trusted), with warnings printed; never
/// asks.
pub fn load_config(ctx: &Ctx) -> Result<McpConfig, AtipError> {
    super::mcp_trust::load(ctx, false)
}

fn usage(msg: String) -> AtipError {
    AtipError::new(ErrorCode::Usage, msg)
}

/// The server of explicit mode (`--url` / `--command`), named `cli` unless --server names it.
pub(crate) fn explicit(t: &Target) -> Result<Option<ServerSpec>, AtipError> {
    let name = t.server.clone().unwrap_or_else(|| "cli".into());
    let mut secrets = Vec::new();
    let transport = if let Some(url) = &t.url {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(usage(format!(
                "--url {url:?} must start with http:// or https://"
            )));
        }
        let mut headers = Vec::new();
        for h in &t.headers {
            let (k, v) = h.split_once(':').ok_or_else(|| {
                usage(format!(
                    "--header {:?}: expected `Name: value`",
                    config::redact_url(h).split(':').next().unwrap_or("")
                ))
            })?;
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            if config::is_secret_name(&k) {
                secrets.push((k.clone(), v.clone()));
                if let Some((_, tok)) = v.split_once(' ') {
                    secrets.push((k.clone(), tok.trim().to_string()));
                }
            }
            headers.push((k, v));
        }
        Transport::Http {
            url: url.clone(),
            headers,
        }
    } else if let Some(cmd) = &t.command {
        let mut env = Vec::new();
        for e in &t.envs {
            let (k, v) = e
                .split_once('=')
                .ok_or_else(|| usage("--env: expected K=V".into()))?;
            if config::is_secret_name(k) {
                secrets.push((k.to_string(), v.to_string()));
            }
            env.push((k.to_string(), v.to_string()));
        }
        Transport::Stdio {
            command: cmd.clone(),
            args: t.cmd_args.clone(),
            env,
            cwd: None,
        }
    } else {
        return Ok(None);
    };
    Ok(Some(ServerSpec {
        name,
        transport,
        timeout: None,
        origin: "command line".into(),
        trust_hints: true,
        secrets,
        protocol: None,
    }))
}

/// Config (or the explicit server) plus cache and client settings.
fn remote(t: &Target, ctx: &Ctx) -> Result<Remote, AtipError> {
    let mut config = match explicit(t)? {
        Some(spec) => {
            let mut c = McpConfig::default();
            // Explicit mode still honours the config's cache settings.
            if let Ok(base) = load_config_quiet(ctx) {
                c.cache = base.cache;
            }
            c.servers.insert(spec.name.clone(), spec);
            c
        }
        // About to connect: an untrusted project file may be trusted on the terminal.
        None => super::mcp_trust::load(ctx, true)?,
    };
    if t.url.is_some() || t.command.is_some() {
        config.default_server = config.servers.keys().next().cloned();
    }
    let f = &t.client;
    let ttl = Duration::from_secs(f.cache_ttl.unwrap_or(config.cache.ttl_seconds));
    let use_cache = !f.no_cache && config.cache.enabled;
    Ok(Remote {
        config,
        cache: ToolCache::of(&ctx.dirs),
        opts: ClientOptions {
            timeout: f.timeout,
            verbose: ctx.out.verbosity() == atip::output::Verbosity::Verbose,
            trace: f.trace,
            quiet_server_stderr: f.quiet_server_stderr,
            protocol: f.protocol,
            mark_nested: false,
            env: ctx.env.clone(),
        },
        ttl,
        use_cache,
    })
}

fn load_config_quiet(ctx: &Ctx) -> Result<McpConfig, AtipError> {
    super::mcp_trust::read_config(ctx)
}

fn servers(ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let cfg = load_config(ctx)?;
    let list: Vec<Value> = cfg
        .servers
        .values()
        .map(|s| {
            json!({
                "name": s.name,
                "transport": s.transport.kind(),
                "origin": s.origin,
                "summary": s.summary(),
                "default": cfg.default_server.as_deref() == Some(s.name.as_str()),
            })
        })
        .collect();
    // Servers of a project file that is not used: named, never expanded or started.
    let untrusted: Vec<Value> = cfg
        .untrusted
        .iter()
        .map(|u| {
            let hint = cfg.project_of(&u.origin).map(|p| p.trust_hint());
            json!({"name": u.name, "transport": u.transport, "origin": u.origin,
                   "status": u.status, "hint": hint})
        })
        .collect();
    if ctx.output.is_json() {
        ctx.out.json(&json!({"servers": list, "files": cfg.files,
            "untrusted": untrusted, "project": cfg.project}))?;
    } else {
        if list.is_empty() && untrusted.is_empty() {
            ctx.out.note(format_args!(
                "no MCP servers configured (looked in {})",
                ctx.dirs.config.join(config::GLOBAL_FILE).display()
            ));
        }
        ctx.out.text(&super::mcp_text::servers(
            &cfg,
            ctx.width,
            atip::output::term::Style::new(ctx.out.stdout_color()),
        ))?;
    }
    Ok(ExitStatus::Success)
}

/// Text from an MCP server (or its config) shown on a terminal: its control characters
/// escaped, one line ([`atip::output::text`]).
fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    atip::output::text::escape_controls(s)
}

/// Multi-line text from an MCP server: control characters escaped, newlines kept.
fn esc_lines(s: &str) -> std::borrow::Cow<'_, str> {
    atip::output::text::escape_controls_keep_lines(s)
}

async fn tools_cmd(a: ToolsArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(&a.target, ctx)?;
    let named = a.target.server.is_some()
        || a.target.url.is_some()
        || a.target.command.is_some()
        || ctx
            .env
            .var(atip::mcp::remote::SERVER_ENV)
            .is_some_and(|s| !s.is_empty())
        || r.config.servers.len() == 1;
    let specs: Vec<ServerSpec> = if named {
        vec![r.select(a.target.server.as_deref())?.clone()]
    } else {
        if r.config.servers.is_empty() {
            r.select(None)?;
        }
        r.config.servers.values().cloned().collect()
    };
    let mut reports = Vec::new();
    let mut failed: Option<AtipError> = None;
    for spec in &specs {
        match r.tools(spec, None, a.refresh).await {
            Ok((listing, session)) => {
                if let Some(s) = session {
                    s.close().await;
                }
                reports.push((spec, Ok(listing)));
            }
            Err(e) if specs.len() == 1 => return Err(e),
            Err(e) => {
                ctx.out.error(&e);
                failed.get_or_insert(e.clone());
                reports.push((spec, Err(e)));
            }
        }
    }
    if ctx.output.is_json() {
        let list: Vec<Value> = reports
            .iter()
            .map(|(spec, l)| match l {
                Ok(l) => json!({
                    "server": spec.name,
                    "cached": l.from_cache,
                    "fetchedAtMs": l.cached.fetched_at_ms,
                    "tools": l.cached.tools,
                }),
                Err(e) => json!({"server": spec.name, "error": e}),
            })
            .collect();
        ctx.out.json(&json!({"servers": list}))?;
    } else {
        let listed: Vec<super::mcp_text::Listed<'_>> = reports
            .iter()
            .filter_map(|(spec, l)| l.as_ref().ok().map(|l| (spec, l)))
            .map(|(spec, l)| super::mcp_text::Listed {
                spec,
                tools: &l.cached.tools,
                cached: l.from_cache,
            })
            .collect();
        ctx.out.text(&super::mcp_text::tools(
            &listed,
            reports.len() - listed.len(),
            ctx.width,
            atip::output::term::Style::new(ctx.out.stdout_color()),
        ))?;
    }
    Ok(match failed {
        Some(e) => ExitStatus::from(&e),
        None => ExitStatus::Success,
    })
}

async fn describe(a: DescribeArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(&a.target, ctx)?;
    let spec = r.select(a.target.server.as_deref())?.clone();
    let (tool, session) = r.find_tool(&spec, &a.tool).await?;
    if let Some(s) = session {
        s.close().await;
    }
    let policy = load_policy(None, ctx)?;
    let decision = tools::decide(
        &policy,
        &spec.name,
        &spec.summary(),
        &tool,
        spec.trust_hints,
    );
    let v = tools::describe(&spec.name, &tool, spec.trust_hints, &decision);
    if ctx.output.is_json() {
        ctx.out.json(&v)?;
    } else {
        let d = super::mcp_text::Described {
            server: &spec.name,
            call_as: tools::flat_name(&spec.name, &tool.name),
            action: decision.action.to_string(),
            why: decision.explain(decision.action),
            trust_hints: spec.trust_hints,
        };
        ctx.out.text(&super::mcp_text::describe(
            &tool,
            &d,
            ctx.out.verbosity() == atip::output::Verbosity::Verbose,
            ctx.width,
            atip::output::term::Style::new(ctx.out.stdout_color()),
        ))?;
    }
    Ok(ExitStatus::Success)
}

fn load_policy(path: Option<&std::path::Path>, ctx: &Ctx) -> Result<Policy, AtipError> {
    let cwd = std::env::current_dir().map_err(|e| usage(e.to_string()))?;
    let policy = Policy::load(path, &ctx.dirs.config, &cwd)?;
    for line in &policy.translated {
        ctx.out.info(format!("policy: {line}"));
    }
    Ok(policy)
}

fn read_args(a: &CallArgs) -> Result<serde_json::Map<String, Value>, AtipError> {
    if let Some(text) = &a.args {
        return args::parse_text(text);
    }
    let mut text = String::new();
    if let Some(path) = &a.args_file {
        text = std::fs::read_to_string(path).map_err(|e| {
            AtipError::new(
                ErrorCode::InputUnreadable,
                format!("failed to read arguments file {}: {e}", path.display()),
            )
        })?;
    } else if a.args_stdin {
        std::io::stdin().read_to_string(&mut text).map_err(|e| {
            AtipError::new(
                ErrorCode::InputUnreadable,
                format!("failed to read stdin: {e}"),
            )
        })?;
    } else {
        return Ok(serde_json::Map::new());
    }
    args::parse_text(&text)
}

/// Asks on the terminal, only when stderr is one. `call` is `SERVER TOOL {arguments}`.
pub fn prompt(call: &str, d: &Decision) -> Confirmation {
    // Names come from the server, arguments from the model: escaped.
    use atip::output::text::escape_controls;
    let q = format!(
        "atip: call MCP tool `{}`?\n  {}\nConfirm [y/N]: ",
        escape_controls(call),
        escape_controls(&d.explain(Action::Confirm))
    );
    super::ask::answer(&q)
}

async fn call(a: CallArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let raw = read_args(&a)?;
    let r = remote(&a.target, ctx)?;
    let spec = r.select(a.target.server.as_deref())?.clone();
    let policy = load_policy(a.policy.as_deref(), ctx)?;
    let audit = AuditLog::in_dir(&ctx.dirs.state);
    let yes = a.yes;
    let mut confirm = |p: &str, d: &Decision| if yes { Confirmation::Yes } else { prompt(p, d) };
    let called = r
        .call(
            &spec,
            &a.tool,
            raw,
            &policy,
            &audit,
            &mut confirm,
            a.max_output
                .or(r
                    .config
                    .max_output
                    .map(|n| usize::try_from(n).unwrap_or(usize::MAX)))
                .unwrap_or(CALL_MAX_OUTPUT),
        )
        .await?;
    print_result(&called.result, a.compact.then_some(&r.config.compact), ctx)?;
    if r.opts.verbose {
        ctx.out.stderr(&format!(
            "atip mcp: [{}] tools/call {} took {} ms\n",
            spec.name,
            called.tool.name,
            called.duration.as_millis()
        ));
    }
    Ok(if called.result.is_error == Some(true) {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// `atip mcp call`'s cap on each text and payload when neither `--max-output` nor the
/// config's `maxOutputBytes` sets one.
const CALL_MAX_OUTPUT: usize = 1 << 20;

/// Prints a call result: the JSON as received (or compacted under these settings), or
/// its text for people.
pub fn print_result(
    result: &rmcp::model::CallToolResult,
    compact: Option<&atip::mcp::config::CompactSettings>,
    ctx: &Ctx,
) -> Result<(), AtipError> {
    if ctx.output.is_json() {
        let v = if let Some(settings) = compact {
            tools::compact(result, settings)
        } else {
            serde_json::to_value(result).unwrap_or(Value::Null)
        };
        return ctx.out.json(&v);
    }
    let mut out = String::new();
    let mut any_text = false;
    for block in &result.content {
        let v = serde_json::to_value(block).unwrap_or(Value::Null);
        match v.get("type").and_then(Value::as_str) {
            Some("text") => {
                any_text = true;
                let _ = writeln!(out, "{}", esc_lines(v["text"].as_str().unwrap_or("")));
            }
            Some(kind) => {
                let size = v
                    .get("data")
                    .and_then(Value::as_str)
                    .map(str::len)
                    .unwrap_or(0);
                let mime = esc(v.get("mimeType").and_then(Value::as_str).unwrap_or(""));
                let _ = writeln!(out, "[{kind} {mime} {size} bytes base64]");
            }
            None => {}
        }
    }
    if !any_text && let Some(s) = &result.structured_content {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(s).unwrap_or_default()
        );
    }
    ctx.out.text(&out)?;
    if result.is_error == Some(true) {
        ctx.out.note("the MCP tool reported an error (isError)");
    }
    Ok(())
}

async fn ping(a: PingArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let r = remote(&a.target, ctx)?;
    let spec = r.select(a.target.server.as_deref())?.clone();
    let session = Session::connect(&spec, &r.opts).await?;
    let rtt = session.ping().await;
    let info = session.server_info();
    let connect = session.connect_time;
    session.close().await;
    let rtt = rtt?;
    let report = json!({
        "server": spec.name,
        "transport": spec.transport.kind(),
        "protocolVersion": info.get("protocolVersion"),
        "serverInfo": info.get("serverInfo"),
        "capabilities": info.get("capabilities"),
        "instructions": info.get("instructions"),
        "connectMs": connect.as_millis() as u64,
        "rttMs": (rtt.as_secs_f64() * 1000.0 * 100.0).round() / 100.0,
    });
    if ctx.output.is_json() {
        ctx.out.json(&report)?;
    } else {
        let ping = super::mcp_text::Ping {
            server: &spec.name,
            transport: spec.transport.kind(),
            info: &info,
            connect_ms: connect.as_millis(),
            rtt_ms: rtt.as_secs_f64() * 1000.0,
        };
        let verbose = ctx.out.verbosity() >= atip::output::Verbosity::Verbose;
        let style = atip::output::term::Style::new(ctx.out.stdout_color());
        ctx.out
            .text(&super::mcp_text::ping(&ping, verbose, ctx.width, style))?;
    }
    Ok(ExitStatus::Success)
}

fn import(a: ImportArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let cwd = std::env::current_dir().map_err(|e| usage(e.to_string()))?;
    let report = atip::mcp::import::import(
        a.host,
        a.from.as_deref(),
        &ctx.dirs.config.join(config::GLOBAL_FILE),
        &cwd,
        &ctx.env,
        a.force,
        a.dry_run,
    )?;
    if ctx.output.is_json() {
        ctx.out.json(&report)?;
    } else {
        let style = atip::output::term::Style::new(ctx.out.stdout_color());
        ctx.out
            .text(&super::mcp_text::import(&report, ctx.width, style))?;
    }
    Ok(ExitStatus::Success)
}

/// The remote side of `atip exec` for flattened MCP names: the merged config, the
/// cache, default client settings.
fn exec_remote(ctx: &Ctx, ask: bool) -> Result<Remote, AtipError> {
    let config = super::mcp_trust::load(ctx, ask)?;
    let ttl = Duration::from_secs(config.cache.ttl_seconds);
    let use_cache = config.cache.enabled;
    Ok(Remote {
        config,
        cache: ToolCache::of(&ctx.dirs),
        opts: ClientOptions::default(),
        ttl,
        use_cache,
    })
}

/// `atip exec mcp__SERVER__TOOL`: the same call as `atip mcp call`, found by its
/// flattened name across the configured servers; with `dry_run`, the decision only.
pub fn exec_flat(
    name: &str,
    raw: serde_json::Map<String, Value>,
    yes: bool,
    dry_run: bool,
    policy_path: Option<&std::path::Path>,
    ctx: &Ctx,
) -> Result<ExitStatus, AtipError> {
    block_on(async {
        let r = exec_remote(ctx, !dry_run)?;
        let (spec, tool) = r.resolve_flat(name).await?;
        let policy = load_policy(policy_path, ctx)?;
        if dry_run {
            let (checked, session) = r.check(&spec, &tool, raw, &policy).await?;
            if let Some(s) = session {
                s.close().await;
            }
            ctx.out.json(&checked.dry_run_report())?;
            return Ok(ExitStatus::Success);
        }
        let audit = AuditLog::in_dir(&ctx.dirs.state);
        let mut confirm =
            |p: &str, d: &Decision| if yes { Confirmation::Yes } else { prompt(p, d) };
        let called = r
            .call(
                &spec,
                &tool,
                raw,
                &policy,
                &audit,
                &mut confirm,
                atip::exec::DEFAULT_OUTPUT_CAP,
            )
            .await?;
        print_result(&called.result, None, ctx)?;
        Ok(if called.result.is_error == Some(true) {
            ExitStatus::Failure
        } else {
            ExitStatus::Success
        })
    })
}

/// The MCP calls of an `atip exec --calls` batch: each flattened name resolved to its
/// server, checked and confirmed in input order with the batch's other calls, run over
/// one session per server (opened on the first call, closed by [`McpBatch::finish`]).
pub struct McpBatch {
    rt: tokio::runtime::Runtime,
    remote: Remote,
    policy: Policy,
    audit: AuditLog,
    yes: bool,
    dry_run: bool,
    max_output: usize,
    checked: std::collections::HashMap<usize, (atip::mcp::remote::Checked, bool)>,
    sessions: std::collections::HashMap<String, Session>,
    /// Dry-run reports by call index.
    pub reports: std::collections::HashMap<usize, Value>,
}

impl McpBatch {
    /// Loads the MCP config; `None` when the batch has no MCP names (nothing to load).
    pub fn for_calls(
        calls: &[atip::exec::calls::ToolCall],
        yes: bool,
        dry_run: bool,
        policy_path: Option<&std::path::Path>,
        max_output: usize,
        ctx: &Ctx,
    ) -> Result<Option<McpBatch>, AtipError> {
        if !calls.iter().any(|c| tools::is_mcp_name(&c.name)) {
            return Ok(None);
        }
        let rt = atip::net::runtime(atip::net::Threads::Current)?;
        Ok(Some(McpBatch {
            rt,
            remote: exec_remote(ctx, !dry_run)?,
            policy: load_policy(policy_path, ctx)?,
            audit: AuditLog::in_dir(&ctx.dirs.state),
            yes,
            dry_run,
            max_output,
            checked: Default::default(),
            sessions: Default::default(),
            reports: Default::default(),
        }))
    }

    /// Closes the sessions the batch opened.
    pub fn finish(mut self) {
        let sessions: Vec<Session> = self.sessions.drain().map(|(_, s)| s).collect();
        self.rt.block_on(async {
            for s in sessions {
                s.close().await;
            }
        });
    }
}

impl atip::exec::Foreign for McpBatch {
    fn claims(&self, name: &str) -> bool {
        tools::is_mcp_name(name)
    }

    fn check(
        &mut self,
        index: usize,
        call: &atip::exec::calls::ToolCall,
        args: serde_json::Map<String, Value>,
    ) -> Result<(), AtipError> {
        let r = &self.remote;
        let policy = &self.policy;
        let (checked, session) = self.rt.block_on(async {
            let (spec, tool) = r.resolve_flat(&call.name).await?;
            r.check(&spec, &tool, args, policy).await
        })?;
        if let Some(s) = session {
            self.sessions.entry(checked.spec.name.clone()).or_insert(s);
        }
        if self.dry_run {
            let mut report = checked.dry_run_report();
            report["id"] = call.id.clone().map(Value::from).unwrap_or(Value::Null);
            self.reports.insert(index, report);
            return Ok(());
        }
        let caller = atip::mcp::remote::Caller {
            call_id: call.id.clone(),
            ..atip::mcp::remote::Caller::client()
        };
        let yes = self.yes;
        let mut confirm =
            |p: &str, d: &Decision| if yes { Confirmation::Yes } else { prompt(p, d) };
        let confirmed = checked.settle(&mut confirm, &self.audit, &caller)?;
        self.checked.insert(index, (checked, confirmed));
        Ok(())
    }

    fn run(&mut self, index: usize, call: &atip::exec::calls::ToolCall) -> atip::exec::CallOutcome {
        let Some((checked, confirmed)) = self.checked.remove(&index) else {
            return atip::exec::CallOutcome {
                envelope: atip::exec::error_envelope(
                    Some(&call.name),
                    &AtipError::new(ErrorCode::Internal, "MCP call was not checked first"),
                ),
                failed: true,
            };
        };
        let caller = atip::mcp::remote::Caller {
            call_id: call.id.clone(),
            ..atip::mcp::remote::Caller::client()
        };
        let server = checked.spec.name.clone();
        let (r, audit, sessions, max) = (
            &self.remote,
            &self.audit,
            &mut self.sessions,
            self.max_output,
        );
        let done = self.rt.block_on(async {
            if !sessions.contains_key(&server) {
                let s = r.connect_for(&checked, confirmed, audit, &caller).await?;
                sessions.insert(server.clone(), s);
            }
            let session = &sessions[&server];
            let called = r
                .run_on(&checked, confirmed, session, audit, &caller, max)
                .await;
            if called.as_ref().is_err_and(|e| {
                e.code == ErrorCode::McpServerExited || e.code == ErrorCode::McpTimeout
            }) && let Some(s) = sessions.remove(&server)
            {
                // A dead or stuck session is not reused by the next call.
                s.close().await;
            }
            called
        });
        match done {
            Ok(c) => atip::exec::CallOutcome {
                failed: c.result.is_error == Some(true),
                envelope: serde_json::to_value(&c.result).unwrap_or(Value::Null),
            },
            Err(e) => atip::exec::CallOutcome {
                envelope: atip::exec::error_envelope(Some(&call.name), &e),
                failed: true,
            },
        }
    }
}

/// The configured MCP servers' tools from the tool cache, and what the answer lacks
/// because of them. Lists missing from the cache or older than its TTL (every list with
/// `refresh`) are fetched, all at once and each bounded ([`fetch_lists`]); when a stale
/// list cannot be fetched again, it is used as it is, with a note. A note names every
/// server left out (no list at all), answered from an old list, or configured in a
/// project file not trusted: a server is never dropped silently.
pub fn cached_flat_tools(
    ctx: &Ctx,
    refresh: bool,
) -> (Vec<(String, atip::compile::FlatTool)>, Vec<String>) {
    let mut notes = Vec::new();
    let config = match load_config_quiet(ctx) {
        Ok(c) => {
            super::mcp_trust::note_untrusted(&c, ctx);
            notes.extend(c.projects().filter_map(|p| p.note()));
            c
        }
        Err(e) => {
            let note = format!("MCP servers left out: {}", e.message);
            ctx.out.warn(&note);
            return (Vec::new(), vec![note]);
        }
    };
    if config.servers.is_empty() {
        return (Vec::new(), notes);
    }
    let cache = ToolCache::of(&ctx.dirs);
    let ttl = Duration::from_secs(config.cache.ttl_seconds);
    let mut lists: std::collections::HashMap<&str, Vec<rmcp::model::Tool>> = Default::default();
    // Cached lists fetched again (stale, or all with `refresh`): the fallback.
    let mut old: std::collections::HashMap<&str, atip::mcp::cache::CachedTools> =
        Default::default();
    let mut fetch = Vec::new();
    for spec in config.servers.values() {
        match cache.read(spec) {
            Some(c) if !refresh && c.age() <= ttl => {
                lists.insert(&spec.name, c.tools);
            }
            Some(c) => {
                old.insert(&spec.name, c);
                fetch.push(spec);
            }
            None => fetch.push(spec),
        }
    }
    for (spec, fetched) in fetch_lists(&fetch, &cache, ttl, config.cache.enabled, ctx) {
        let note = match (fetched, old.remove(spec.name.as_str())) {
            (Ok(tools), _) => {
                lists.insert(&spec.name, tools);
                continue;
            }
            (Err(why), Some(c)) => {
                let note = format!(
                    "MCP server {}: its tool list could not be fetched again ({why}); the cached one, {} s old (TTL {} s), is used",
                    spec.name,
                    c.age().as_secs(),
                    ttl.as_secs()
                );
                lists.insert(&spec.name, c.tools);
                note
            }
            (Err(why), None) => format!(
                "MCP server {} left out: {why} (`atip mcp tools {}` fetches its list)",
                spec.name, spec.name
            ),
        };
        ctx.out.warn(&note);
        notes.push(note);
    }
    let mut out = Vec::new();
    for spec in config.servers.values() {
        for t in lists.remove(spec.name.as_str()).unwrap_or_default() {
            out.push((
                spec.name.clone(),
                tools::to_flat(&spec.name, &t, spec.trust_hints),
            ));
        }
    }
    (out, notes)
}
