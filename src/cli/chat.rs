//! `atip chat`: put the machine's tools in front of a model endpoint and run the tool
//! loop until the model answers. Flags, key lookup and rendering live here; the loop is
//! in `atip::chat`.

use crate::Ctx;
use crate::cli::exec::RunArgs;
use atip::chat::http::Client;
use atip::chat::provider::Api;
use atip::chat::transcript::Transcript;
use atip::chat::{Chat, ChatOptions, ChatReport, Offer, StopReason};
use atip::compile::{FlatTool, FlattenOptions};
use atip::exec::redact::Redactor;
use atip::exec::{Confirmation, Engine, Prepared};
use atip::output::ExitStatus;
use atip::output::term;
use atip::output::{AtipError, ErrorCode, OutputFormat, Verbosity};
use atip::search::mode::{self, SearchMode};
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Run the tool loop against a model endpoint.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to ask (default: read from stdin).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The model API.
    #[arg(long, value_enum, env = "ATIP_CHAT_PROVIDER")]
    pub provider: Api,
    /// Model name, e.g. `gpt-5-mini`, `claude-sonnet-4-5`, `gemini-2.5-flash`, or a local model.
    #[arg(long, env = "ATIP_CHAT_MODEL")]
    pub model: String,
    /// API base URL, e.g. `http://127.0.0.1:8080/v1` for a local OpenAI-compatible server
    /// (default: the provider's hosted API).
    #[arg(long, value_name = "URL", env = "ATIP_CHAT_BASE_URL")]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default: OPENAI_API_KEY,
    /// ANTHROPIC_API_KEY, GEMINI_API_KEY then GOOGLE_API_KEY, by provider).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// System instructions for the model.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Only these registry tools (comma-separated names), as in `atip export`.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub tools: Option<Vec<String>>,
    /// Only these commands: comma-separated "tool path" prefixes, e.g. "gh pr,git log".
    #[arg(long, value_delimiter = ',', value_name = "FILTERS")]
    pub commands: Option<Vec<String>>,
    /// Offer a search tool and a call tool instead of every tool: `auto` when the
    /// selection has more than --search-threshold tools.
    #[arg(long, value_enum, default_value = "auto")]
    pub tool_search: ToolSearch,
    /// Selections larger than this use the search tools with `--tool-search auto`.
    #[arg(long, default_value_t = mode::DEFAULT_THRESHOLD, value_name = "N")]
    pub search_threshold: usize,
    /// Most model requests.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_turns: u32,
    /// Most tool calls over the whole run.
    #[arg(long, default_value_t = 64, value_name = "N")]
    pub max_calls: usize,
    /// Time for the whole run, e.g. `10m`.
    #[arg(long, value_name = "DURATION", value_parser = atip::units::parse_duration, default_value = "10m")]
    pub run_timeout: Duration,
    /// Time for one model request.
    #[arg(long, value_name = "DURATION", value_parser = atip::units::parse_duration, default_value = "120s")]
    pub request_timeout: Duration,
    /// Retries of a failed model request (429, 5xx, timeouts, dropped connections).
    #[arg(long, default_value_t = 3, value_name = "N")]
    pub retries: u32,
    /// Output-token limit per response (Anthropic requires one).
    #[arg(long, default_value_t = 4096, value_name = "N")]
    pub max_tokens: u32,
    /// Most read-only or idempotent calls running at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
    /// Confirm calls the policy wants confirmed.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Write every message to FILE (JSON Lines, secrets redacted).
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Policy, per-call timeout, output cap, interactivity, as for `atip exec`.
    #[command(flatten)]
    pub run: RunArgs,
}

/// When to offer the search tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolSearch {
    /// When the selection is larger than --search-threshold.
    Auto,
    /// Always.
    On,
    /// Never: every selected tool is offered.
    Off,
}

/// The prompt: the argument, else stdin.
fn read_prompt(arg: Option<String>) -> Result<String, AtipError> {
    let text = match arg {
        Some(p) => p,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).map_err(|e| {
                AtipError::new(
                    ErrorCode::InputUnreadable,
                    format!("failed to read the prompt from stdin: {e}"),
                )
            })?;
            s
        }
    };
    if text.trim().is_empty() {
        return Err(
            AtipError::usage("the prompt is empty").hint("pass it as an argument, or on stdin")
        );
    }
    Ok(text)
}

/// The key and the variable it came from. Without `--base-url` (a hosted API) a key is
/// required; a local server may need none.
fn api_key(args: &Args, env: &atip::env::Env) -> Result<Option<(String, String)>, AtipError> {
    let vars: Vec<String> = match &args.api_key_env {
        Some(v) => vec![v.clone()],
        None => args
            .provider
            .key_vars()
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let found = vars.iter().find_map(|v| {
        env.var(v)
            .filter(|k| !k.trim().is_empty())
            .map(|k| (v.clone(), k.trim().to_string()))
    });
    if found.is_none() && (args.base_url.is_none() || args.api_key_env.is_some()) {
        return Err(AtipError::new(
            ErrorCode::ApiKeyMissing,
            format!("no API key: {} is not set", vars.join(" or ")),
        )
        .hint(format!(
            "export {}=… (a local server that needs no key: pass --base-url)",
            vars[0]
        )));
    }
    Ok(found)
}

/// Checks the base URL; a key never travels over plain HTTP except to this machine.
fn base_url(args: &Args, key: bool) -> Result<String, AtipError> {
    let base = args
        .base_url
        .clone()
        .unwrap_or_else(|| args.provider.default_base_url().to_string());
    let url = reqwest::Url::parse(&base)
        .map_err(|e| AtipError::usage(format!("--base-url {base:?}: {e}")))?;
    match url.scheme() {
        "https" => {}
        "http" => {
            let host = url.host_str().unwrap_or("");
            let loopback = host.eq_ignore_ascii_case("localhost")
                || host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback());
            if key && !loopback {
                return Err(AtipError::new(
                    ErrorCode::InsecureEndpoint,
                    format!(
                        "refusing to send the API key over plain http to {}",
                        url.host_str().unwrap_or("")
                    ),
                )
                .hint("use https, or a server on this machine (127.0.0.1, localhost)"));
            }
        }
        other => {
            return Err(AtipError::usage(format!(
                "--base-url must be http or https, not {other}"
            )));
        }
    }
    Ok(base)
}

/// The selected tools, named as `atip export` names them with the same flags.
fn selection(args: &Args, engine: &Engine) -> Result<Vec<FlatTool>, AtipError> {
    let filters: Option<Vec<String>> = args.commands.as_ref().map(|c| {
        c.iter()
            .map(|f| f.trim().to_string())
            .filter(|f| !f.is_empty())
            .collect()
    });
    let opts = FlattenOptions {
        include_interactive: true,
        commands: filters.clone(),
    };
    if let Some(filters) = &filters {
        let all: Vec<FlatTool> = engine.all_tools().into_iter().cloned().collect();
        super::export::check_filters_match(filters, &all)?;
    }
    Ok(engine
        .visible_tools()
        .into_iter()
        .filter(|t| opts.wants(&t.tool, &t.command))
        .cloned()
        .collect())
}

/// Runs `atip chat`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let key = api_key(&args, &ctx.env)?;
    let base = base_url(&args, key.is_some())?;
    let prompt = read_prompt(args.prompt.clone())?;
    let redactor = redactor(key.as_ref(), ctx);
    let (policy, settings) = args.run.resolve(ctx)?;
    let filters_only = atip::compile::source::selected_tools(
        &ctx.dirs,
        args.tools.as_deref(),
        args.commands.as_deref(),
    )?;
    let engine = Engine::load(&ctx.dirs, policy, settings, filters_only.as_deref(), None)?;
    ctx.out.warnings(&engine.warnings);
    let offer = offer(&args, &engine, ctx)?;
    let client = client(&args, &base, key.as_ref(), &redactor)?;
    let transcript = match &args.transcript {
        Some(p) => Some(Transcript::create(p, redactor.clone())?),
        None => None,
    };
    let chat = Chat {
        engine: &engine,
        offer,
        options: ChatOptions {
            api: args.provider,
            model: args.model.clone(),
            system: args.system.clone(),
            max_turns: args.max_turns,
            max_calls: args.max_calls,
            run_timeout: args.run_timeout,
            jobs: args.jobs as usize,
            max_tokens: args.max_tokens,
        },
        client,
        redactor,
        transcript,
    };
    // Calls a person confirmed (or --yes did), by name, for the transcript's decision.
    let confirmed = std::cell::RefCell::new(Vec::<String>::new());
    let yes = args.yes;
    let mut confirm = |p: &Prepared| {
        let answer = if yes {
            Confirmation::Yes
        } else {
            crate::cli::exec::prompt(p)
        };
        if answer == Confirmation::Yes {
            confirmed.borrow_mut().push(p.tool.name.clone());
        }
        answer
    };
    let text = ctx.output == OutputFormat::Text;
    let verbose = ctx.out.verbosity() >= Verbosity::Verbose;
    let width = term::stderr_width();
    let mut log = |c: &atip::chat::CallRecord| {
        if text {
            let mut list = confirmed.borrow_mut();
            let was_confirmed = list
                .iter()
                .position(|n| *n == c.name)
                .map(|i| list.remove(i))
                .is_some();
            ctx.out
                .stderr(&call_text(c, was_confirmed, yes, verbose, width));
        }
    };
    let report = chat.run(&prompt, &mut confirm, &mut log);
    render(&report, ctx)
}

/// Secrets kept out of every message and the transcript: the provider keys in the
/// environment and the key in use.
fn redactor(key: Option<&(String, String)>, ctx: &Ctx) -> Redactor {
    let mut redactor = Redactor::new().with_env_vars(
        &ctx.env,
        Api::Openai
            .key_vars()
            .iter()
            .chain(Api::Anthropic.key_vars())
            .chain(Api::Gemini.key_vars())
            .copied(),
    );
    if let Some((var, k)) = key {
        redactor.add_value(var, k.clone());
    }
    redactor
}

/// What the model is offered: every selected tool, or the search and call tools.
fn offer(args: &Args, engine: &Engine, ctx: &Ctx) -> Result<Offer, AtipError> {
    let tools = selection(args, engine)?;
    let search = match args.tool_search {
        ToolSearch::On => true,
        ToolSearch::Off => false,
        ToolSearch::Auto => tools.len() > args.search_threshold,
    };
    if tools.is_empty() {
        ctx.out.warn("no tools selected; the model gets none");
    }
    Ok(if search && !tools.is_empty() {
        // Ranked as `atip search` ranks: with the machine's facts.
        Offer::Search(Box::new(SearchMode::with_facts(
            tools,
            &atip::catalog::machine_facts(&ctx.dirs),
        )))
    } else {
        Offer::Direct(tools)
    })
}

/// The endpoint's client: its URL, key headers, retries, timeout, and the interrupt
/// flag that stops the loop.
fn client(
    args: &Args,
    base: &str,
    key: Option<&(String, String)>,
    redactor: &Redactor,
) -> Result<Client, AtipError> {
    let mut headers = args.provider.fixed_headers();
    if let Some((_, k)) = key {
        headers.extend(args.provider.auth_headers(k));
    }
    let mut client = Client::new(
        args.provider.url(base, &args.model),
        headers,
        redactor.clone(),
        key.map(|(v, _)| v.clone()),
    )?;
    client.retries = args.retries;
    // Tool calls run in their own sessions, out of reach of the terminal's Ctrl-C: the
    // flag makes the loop kill them and stop, and no endpoint wait outlasts it.
    client.interrupt = Some(super::signals::install(super::signals::Mode::WindDown));
    client.request_timeout = args.request_timeout;
    Ok(client)
}

/// Lines of a call's output shown without --verbose.
const OUTPUT_LINES: usize = 3;

/// One call as a person follows it on stderr (spec/chat.md): what the model asked
/// (tool and arguments, one line), the decision and how it ended, then the first lines
/// of what the tool printed (or the error), cut to the terminal; `verbose` shows all
/// of it, wrapped.
fn call_text(
    c: &atip::chat::CallRecord,
    confirmed: bool,
    yes: bool,
    verbose: bool,
    width: Option<usize>,
) -> String {
    use serde_json::Value;
    let args = match &c.arguments {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    };
    let asked = format!("atip chat: {} {}", c.name, args);
    let mut t = if verbose {
        term::wrap_whole("", &asked, width, 4)
    } else {
        format!("{}\n", term::fit(&term::one_line(&asked), width))
    };
    let decision = match (c.status, c.error.as_deref()) {
        ("skipped", _) => "not run: a limit was reached".to_string(),
        (_, Some("policy_denied")) => "refused by the policy".to_string(),
        (_, Some("integrity_changed")) => {
            "refused: the program changed since it was scanned".to_string()
        }
        (_, Some("confirmation_declined")) => "declined at the prompt".to_string(),
        (_, Some("confirmation_required")) => {
            "not run: needs confirmation (--yes, or a terminal to ask on)".to_string()
        }
        (_, Some(code)) => format!("error {code}"),
        _ if confirmed && yes => "confirmed by --yes".to_string(),
        _ if confirmed => "confirmed at the prompt".to_string(),
        _ => "allowed by the policy".to_string(),
    };
    let ended = match (c.status, c.exit_code) {
        ("skipped", _) => String::new(),
        (_, Some(code)) => format!(" · exit {code} · {} ms", c.duration_ms),
        (_, None) if c.error.is_none() => format!(" · {} ms", c.duration_ms),
        _ => String::new(),
    };
    t.push_str(&term::fit(&format!("  {decision}{ended}"), width));
    t.push('\n');
    // What the tool printed; its stderr when stdout is empty (a failure says why there).
    let text_at = |p: &str| {
        c.result
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let shown = text_at("/data/stdout")
        .or_else(|| text_at("/data/stderr"))
        .or_else(|| text_at("/error/message"))
        .unwrap_or("");
    let text = atip::output::text::escape_controls_keep_lines(shown);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let keep = if verbose { lines.len() } else { OUTPUT_LINES };
    for l in lines.iter().take(keep) {
        if verbose {
            t.push_str(&term::wrap_whole("    ", l, width, 4));
        } else {
            t.push_str(&term::fit(&format!("    {l}"), width));
            t.push('\n');
        }
    }
    if lines.len() > keep {
        t.push_str(&term::fit(
            &format!(
                "    … {} (--verbose shows every line)",
                term::plural(lines.len() - keep, "more line", "more lines")
            ),
            width,
        ));
        t.push('\n');
    }
    t
}

fn render(report: &ChatReport, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    if ctx.output == OutputFormat::Text {
        if let Some(answer) = &report.answer {
            let mut text = answer.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            ctx.out.text(&text)?;
        }
    } else {
        ctx.out.json(report)?;
    }
    if report.stop_reason == StopReason::MaxTokens {
        ctx.out
            .warn("the model's answer was cut at its output-token limit (--max-tokens)");
    }
    match &report.error {
        Some(e) => Err(e.clone()),
        None => Ok(ExitStatus::Success),
    }
}
