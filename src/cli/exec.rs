//! `atip exec`: run one tool call, or every tool call of a provider response, under
//! policy. Only the flags and the rendering live here; the work is in `atip::exec`.

use crate::Ctx;
use atip::exec::calls::{self, Provider};
use atip::exec::policy::{Action, Policy};
use atip::exec::{self, Confirmation, Engine, Foreign, Prepared, Settings, Via, args};
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, OutputFormat};
use serde_json::{Value, json};
use std::io::Read;
use std::path::PathBuf;

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Run a model's tool call under policy.
#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("input").args(["args", "args_file", "args_stdin", "calls"])))]
pub struct Args {
    /// Flattened tool name, e.g. `gh_pr_create` (see `atip export`).
    #[arg(required_unless_present = "calls", conflicts_with = "calls")]
    pub name: Option<String>,
    /// Arguments as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Read the arguments (a JSON object) from a file.
    #[arg(long, value_name = "FILE")]
    pub args_file: Option<PathBuf>,
    /// Read the arguments (a JSON object) from stdin.
    #[arg(long)]
    pub args_stdin: bool,
    /// Run every tool call in a provider response (`-` = stdin) and print the
    /// tool-result messages to append to the conversation.
    #[arg(long, value_name = "FILE", requires = "provider")]
    pub calls: Option<PathBuf>,
    /// Provider format of `--calls`.
    #[arg(long, value_enum)]
    pub provider: Option<Provider>,
    /// Policy, limits and interactivity, shared with `atip mcp`.
    #[command(flatten)]
    pub run: RunArgs,
    /// Confirm calls the policy wants confirmed.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Print argv and the policy decision; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Parallel read-only/idempotent calls with `--calls`.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,
}

// How tool calls run, for `atip exec` and `atip mcp` alike.
// Not a doc comment: flattened into a command built on invocation, it would override that command's help text.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Policy file (default: <config-dir>/policy.json, else built-in defaults).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Timeout per call, e.g. `30s`, `500ms` (default: the command's duration.timeout, else 60s).
    #[arg(long, value_name = "DURATION", value_parser = atip::units::parse_duration)]
    pub timeout: Option<std::time::Duration>,
    /// Cap on each of stdout and stderr, e.g. `256KiB`.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, default_value = "256KiB")]
    pub max_output: usize,
    /// Allow commands that need a terminal, prompts, or stdin.
    #[arg(long)]
    pub allow_interactive: bool,
    /// Also take the tools inferred from man pages when no tool is named (`atip mcp serve`
    /// always serves them).
    #[arg(long)]
    pub include_inferred: bool,
}

impl RunArgs {
    /// Loads the policy (relative roots resolve against the working directory) and
    /// the engine settings.
    pub fn resolve(&self, ctx: &Ctx) -> Result<(Policy, Settings), AtipError> {
        let cwd = std::env::current_dir()
            .map_err(|e| AtipError::new(ErrorCode::CwdUnavailable, e.to_string()))?;
        let policy = Policy::load(self.policy.as_deref(), &ctx.dirs.config, &cwd)?;
        for line in &policy.translated {
            ctx.out.info(format!("policy: {line}"));
        }
        let settings = Settings {
            timeout: self.timeout,
            stdout_cap: self.max_output,
            stderr_cap: self.max_output,
            allow_interactive: self.allow_interactive,
            include_inferred: self.include_inferred,
            env: ctx.env.clone(),
        };
        Ok((policy, settings))
    }
}

/// A dry run under a policy written in the RFC's shapes shows how atip read it
/// (`policyTranslation`, absent for atip's own format).
fn with_translation(report: &mut Value, policy: &Policy) {
    if !policy.translated.is_empty() {
        report["policyTranslation"] = json!(policy.translated);
    }
}

fn parse_size(s: &str) -> Result<usize, atip::units::UnitError> {
    atip::units::parse_size(s).map(|v| v as usize)
}

fn read_input(path: &std::path::Path, what: &str) -> Result<String, AtipError> {
    let mut text = String::new();
    let res = if path.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        std::fs::read_to_string(path).map(|t| text = t)
    };
    res.map_err(|e| AtipError::read_failed(&format!("{what} "), path, &e))?;
    Ok(text)
}

/// Asks on the controlling terminal, only when stderr is one (never in a pipeline).
pub(crate) fn prompt(p: &Prepared) -> Confirmation {
    // Arguments come from the model: control characters escaped, so none can redraw
    // the question as another command.
    use atip::output::text::{escape_controls, shown_argv};
    let question = format!(
        "atip: run `{}`?\n  {}\n  argv: {}\nConfirm [y/N]: ",
        escape_controls(&p.command_path()),
        escape_controls(&p.decision.explain(Action::Confirm)),
        shown_argv(&p.shown_argv())
    );
    super::ask::answer(&question)
}

/// Reads and parses the provider response of `--calls`.
fn parse_calls(
    path: &std::path::Path,
    args: &Args,
) -> Result<(calls::Shape, Vec<calls::ToolCall>), AtipError> {
    let provider = args
        .provider
        .expect("clap requires --provider with --calls");
    let text = read_input(path, "provider response")?;
    let doc: Value = serde_json::from_str(&text).map_err(|e| {
        AtipError::new(
            ErrorCode::CallsMalformed,
            format!(
                "{} is not valid JSON: {e} (line {}, column {})",
                path.display(),
                e.line(),
                e.column()
            ),
        )
    })?;
    calls::parse(provider, &doc)
}

/// Runs `atip exec`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("exec", &[OutputFormat::Text, OutputFormat::Json])?;
    if args.calls.is_none()
        && let Some(name) = args
            .name
            .as_deref()
            .filter(|n| atip::mcp::tools::is_mcp_name(n))
    {
        return run_mcp(name, &args, ctx);
    }
    // SIGINT, SIGTERM, SIGHUP: running calls are killed with their groups (cli::signals).
    let cancel = super::signals::install(super::signals::Mode::WindDown);
    let (policy, settings) = args.run.resolve(ctx)?;
    // A batch parsed before the registry is read: one made only of MCP calls
    // (mcp__SERVER__TOOL) needs no registry at all.
    let batch = match &args.calls {
        Some(path) => Some(parse_calls(path, &args)?),
        None => None,
    };
    let batch_calls = batch.as_ref().map(|(_, list)| list.as_slice());
    let engine = load_engine(&args, (policy, settings), batch_calls, ctx)?;
    match batch {
        Some((shape, list)) => run_calls(&engine, shape, &list, &args, cancel, ctx),
        None => run_one(&engine, &args, cancel, ctx),
    }
}

/// The engine under the resolved policy: focused on the named tool for one call, without
/// the registry for a batch made only of MCP calls. Its notes and warnings go to stderr.
fn load_engine(
    args: &Args,
    (policy, settings): (Policy, Settings),
    batch: Option<&[calls::ToolCall]>,
    ctx: &Ctx,
) -> Result<Engine, AtipError> {
    let focus = if args.calls.is_none() {
        args.name.as_deref()
    } else {
        None
    };
    let only_mcp = batch.is_some_and(|list| {
        !list.is_empty() && list.iter().all(|c| atip::mcp::tools::is_mcp_name(&c.name))
    });
    let no_tools: &[String] = &[];
    let engine = Engine::load(
        &ctx.dirs,
        policy,
        settings,
        only_mcp.then_some(no_tools),
        focus,
    )?;
    for n in &engine.notes {
        ctx.out.note(n);
    }
    ctx.out.warnings(&engine.warnings);
    Ok(engine)
}

/// `--yes` confirms every call the policy wants confirmed; else the person is asked.
fn confirmer(yes: bool) -> impl FnMut(&Prepared) -> Confirmation {
    move |p: &Prepared| if yes { Confirmation::Yes } else { prompt(p) }
}

/// `--calls`: every call of a provider response, flattened MCP names (mcp__SERVER__TOOL)
/// going to their servers under the same policy; prints the tool-result messages.
fn run_calls(
    engine: &Engine,
    shape: calls::Shape,
    list: &[calls::ToolCall],
    args: &Args,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ctx: &Ctx,
) -> Result<ExitStatus, AtipError> {
    let mut mcp = super::mcp::McpBatch::for_calls(
        list,
        args.yes,
        args.dry_run,
        args.run.policy.as_deref(),
        args.run.max_output,
        ctx,
    )?;
    if args.dry_run {
        let reports: Vec<Value> = list
            .iter()
            .enumerate()
            .map(|(i, c)| dry_run_call(engine, mcp.as_mut(), i, c))
            .collect();
        if let Some(m) = mcp {
            m.finish();
        }
        ctx.out.json(&reports)?;
        return Ok(ExitStatus::Success);
    }
    let outcomes = exec::run_batch_with(
        engine,
        list,
        &exec::BatchOptions {
            cancel: Some(cancel),
            ..exec::BatchOptions::exec(args.jobs as usize)
        },
        &mut confirmer(args.yes),
        mcp.as_mut().map(|m| m as &mut dyn Foreign),
    );
    if let Some(m) = mcp {
        m.finish();
    }
    let envelopes: Vec<Value> = outcomes.iter().map(|o| o.envelope.clone()).collect();
    let failed: Vec<bool> = outcomes.iter().map(|o| o.failed).collect();
    ctx.out
        .json(&calls::result_messages(shape, list, &envelopes, &failed))?;
    Ok(ExitStatus::Success)
}

/// The `--dry-run` report of call `i` of a batch: its server's when an MCP server claims
/// it, else the engine's; an error envelope when it cannot be prepared.
fn dry_run_call(
    engine: &Engine,
    mcp: Option<&mut super::mcp::McpBatch>,
    i: usize,
    c: &calls::ToolCall,
) -> Value {
    let raw = match &c.arguments {
        calls::RawArgs::Text(t) => args::parse_text(t),
        calls::RawArgs::Value(v) => args::into_object(v.clone()),
    };
    if let Some(m) = mcp.filter(|m| m.claims(&c.name)) {
        return match raw.and_then(|r| m.check(i, c, r)) {
            Ok(()) => m.reports.remove(&i).unwrap_or(Value::Null),
            Err(e) => exec::error_envelope(Some(&c.name), &e),
        };
    }
    match raw.and_then(|r| engine.prepare(&c.name, r)) {
        Ok(p) => {
            let mut r = p.dry_run_report();
            r["id"] = c.id.clone().map(Value::from).unwrap_or(Value::Null);
            with_translation(&mut r, &engine.policy);
            r
        }
        Err(e) => exec::error_envelope(Some(&c.name), &e),
    }
}

/// One named call: its arguments prepared, shown (`--dry-run`), refused or confirmed
/// under policy, then run; its output and exit code are the command's.
fn run_one(
    engine: &Engine,
    args: &Args,
    cancel: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ctx: &Ctx,
) -> Result<ExitStatus, AtipError> {
    let name = args
        .name
        .as_deref()
        .expect("clap requires NAME without --calls");
    let prepared = engine.prepare(name, call_arguments(args)?)?;
    if args.dry_run {
        let mut r = prepared.dry_run_report();
        with_translation(&mut r, &engine.policy);
        if ctx.output == OutputFormat::Text {
            ctx.out.text(&super::exec_text::dry_run(
                &r,
                ctx.width,
                atip::output::term::Style::new(ctx.out.stdout_color()),
            ))?;
        } else {
            ctx.out.json(&r)?;
        }
        return Ok(ExitStatus::Success);
    }
    let confirmed = match prepared.decision.action {
        Action::Allow => false,
        Action::Deny => return Err(engine.refuse(&prepared, None, &Via::Exec, None)),
        Action::Confirm => match confirmer(args.yes)(&prepared) {
            Confirmation::Yes => true,
            answer => return Err(engine.refuse(&prepared, Some(answer), &Via::Exec, None)),
        },
    };
    let result = engine.run(&prepared, confirmed, Some(cancel), &Via::Exec, None)?;
    if ctx.output == OutputFormat::Text {
        ctx.out.text(&result.data.stdout)?;
        ctx.out.stderr(&result.data.stderr);
        ctx.out.note(format_args!(
            "{} exited {} in {} ms",
            result.meta.tool,
            result
                .data
                .exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| format!("by signal {}", result.data.signal.unwrap_or(0))),
            result.meta.duration_ms
        ));
    } else {
        ctx.out.json(&result)?;
    }
    Ok(result.exit_code())
}

/// The arguments of one named call: `--args`, `--args-file`, `--args-stdin`, or none.
fn call_arguments(args: &Args) -> Result<serde_json::Map<String, Value>, AtipError> {
    Ok(if let Some(text) = &args.args {
        args::parse_text(text)?
    } else if let Some(path) = &args.args_file {
        args::parse_text(&read_input(path, "arguments file")?)?
    } else if args.args_stdin {
        args::parse_text(&read_input(std::path::Path::new("-"), "arguments")?)?
    } else {
        serde_json::Map::new()
    })
}

/// `atip exec mcp__SERVER__TOOL`: an MCP server's tool, under the same policy.
fn run_mcp(name: &str, args: &Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    // The call's server is killed with its group on SIGINT, SIGTERM or SIGHUP.
    super::signals::install(super::signals::Mode::Now);
    let raw = call_arguments(args)?;
    super::mcp::exec_flat(
        name,
        raw,
        args.yes,
        args.dry_run,
        args.run.policy.as_deref(),
        ctx,
    )
}
