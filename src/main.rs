//! The `atip` binary: parses the command line and dispatches to one subcommand.

use atip::dirs::Dirs;
use atip::output::{AtipError, ColorChoice, OutputFormat, Printer, Verbosity};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli;

/// Find, validate, export and run ATIP command-line tools for AI agents.
#[derive(Debug, Parser)]
#[command(name = "atip", version, about, propagate_version = true)]
pub struct Cli {
    /// Print atip's own ATIP metadata (JSON) and exit.
    #[arg(long, global = false)]
    agent: bool,
    /// With --agent: only these command paths, comma-separated (partial discovery).
    #[arg(long, requires = "agent", value_delimiter = ',', value_name = "PATHS")]
    commands: Option<Vec<String>>,
    /// With --agent: only commands nested at most N levels deep (partial discovery).
    #[arg(long, requires = "agent", value_name = "N")]
    depth: Option<usize>,
    /// Output format: text on a terminal, JSON when piped. Each command accepts the
    /// formats it can print (jsonl: list, search, validate, scan; sarif, github: validate).
    #[arg(long, global = true, value_enum, default_value = "auto")]
    output: OutputFormat,
    /// Print errors only: no warnings or notes on stderr.
    #[arg(long, short = 'q', global = true, conflicts_with = "verbose")]
    quiet: bool,
    /// Also say on stderr what atip is doing (which registry, how many tools).
    #[arg(long, global = true)]
    verbose: bool,
    /// Colour text output: auto (a terminal and NO_COLOR unset), always or never.
    #[arg(
        long,
        global = true,
        value_enum,
        default_value = "auto",
        value_name = "WHEN"
    )]
    color: ColorChoice,
    /// Data directory (registry.json, tools/, shims/); replaces $XDG_DATA_HOME/agent-tools.
    #[arg(long, global = true, env = "ATIP_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Config directory (config.json, overrides/); replaces $XDG_CONFIG_HOME/agent-tools.
    #[arg(long, global = true, env = "ATIP_CONFIG_DIR", value_name = "DIR")]
    config_dir: Option<PathBuf>,
    /// State directory (the audit log); replaces $XDG_STATE_HOME/agent-tools.
    #[arg(long, global = true, env = "ATIP_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check ATIP metadata, shims, registries and pattern files.
    Validate(cli::validate::Args),
    /// Compare two versions of a tool's metadata: breaking changes, less-safe effects.
    Diff(cli::diff::Args),
    /// Lint ATIP metadata: what makes it better for agents, beyond validity.
    Lint(cli::lint::Args),
    /// Find ATIP tools on PATH and record them in the registry.
    Scan(cli::scan::Args),
    /// Fetch remote registries' shims for the binaries here, verify and register them.
    Sync(cli::sync::Args),
    /// Publish shims as a static remote registry; choose the registries this machine reads.
    Registry(cli::registry::Args),
    /// List the tools in the registry.
    List(cli::list::Args),
    /// Print a registered tool's metadata, whole or partial.
    Get(cli::get::Args),
    /// Check every registry entry and say what to fix.
    Doctor(cli::doctor::Args),
    /// Export registry tools as provider tool definitions.
    Export(cli::export::Args),
    /// Find the registered commands that best match a query.
    Search(cli::search::Args),
    /// Run a model's tool call under policy.
    Exec(cli::exec::Args),
    /// Serve registered tools over MCP, or use MCP servers (tools, call, ping…).
    Mcp(Box<cli::mcp::Args>),
    /// Run the tool loop against a model endpoint until the model answers.
    Chat(cli::chat::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    Completions(cli::completions::Args),
    /// Print the manual page (roff) of atip or of one of its commands.
    Man(cli::man::Args),
}

/// What every subcommand gets: resolved output format, the printer and directories.
#[derive(Debug)]
pub struct Ctx {
    /// Output format, `auto` already resolved.
    pub output: OutputFormat,
    /// The one printer: data to stdout, diagnostics to stderr.
    pub out: Printer,
    /// Directories.
    pub dirs: Dirs,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let verbosity = if cli.quiet {
        Verbosity::Quiet
    } else if cli.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let out = Printer::new(cli.output, verbosity, cli.color);
    // What the library says while it works reaches stderr through the same printer style.
    if log::set_boxed_logger(Box::new(atip::output::PrinterLog(Printer::new(
        cli.output, verbosity, cli.color,
    ))))
    .is_ok()
    {
        log::set_max_level(log::LevelFilter::Debug);
    }
    let ctx = Ctx {
        output: out.format(),
        out,
        dirs: Dirs::resolve(
            cli.data_dir.as_deref(),
            cli.config_dir.as_deref(),
            cli.state_dir.as_deref(),
        ),
    };
    let result: Result<u8, AtipError> = match cli.command {
        _ if cli.agent => cli::agent::run(cli.commands.as_deref(), cli.depth, &ctx.out),
        Some(Command::Validate(args)) => cli::validate::run(args, &ctx),
        Some(Command::Diff(args)) => cli::diff::run(args, &ctx),
        Some(Command::Lint(args)) => cli::lint::run(args, &ctx),
        Some(Command::Scan(args)) => cli::scan::run(args, &ctx),
        Some(Command::Sync(args)) => cli::sync::run(args, &ctx),
        Some(Command::Registry(args)) => cli::registry::run(args, &ctx),
        Some(Command::List(args)) => cli::list::run(args, &ctx),
        Some(Command::Get(args)) => cli::get::run(args, &ctx),
        Some(Command::Doctor(args)) => cli::doctor::run(args, &ctx),
        Some(Command::Export(args)) => cli::export::run(args, &ctx),
        Some(Command::Search(args)) => cli::search::run(args, &ctx),
        Some(Command::Exec(args)) => cli::exec::run(args, &ctx),
        Some(Command::Mcp(args)) => cli::mcp::run(*args, &ctx),
        Some(Command::Chat(args)) => cli::chat::run(args, &ctx),
        Some(Command::Completions(args)) => {
            cli::completions::run(args, <Cli as clap::CommandFactory>::command(), &ctx)
        }
        Some(Command::Man(args)) => {
            cli::man::run(args, <Cli as clap::CommandFactory>::command(), &ctx)
        }
        None => {
            use clap::CommandFactory;
            ctx.out.stderr(&Cli::command().render_help().to_string());
            Ok(2)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            ctx.out.error(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

/// A command line clap rejected: `--help`/`--version` print as usual; anything else is a
/// usage error (exit 2), as JSON on stderr when the output would be JSON.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let format = cli::usage::requested_format(&args);
    if !format.is_json() {
        let _ = e.print();
        return ExitCode::from(atip::output::exit::USAGE);
    }
    let err = cli::usage::to_atip(&e, &args);
    let out = Printer::new(format, Verbosity::Normal, ColorChoice::Never);
    out.error(&err);
    ExitCode::from(err.exit_code())
}
