//! The `atip` binary: parses the command line and dispatches to one subcommand.

use atip::dirs::Dirs;
use atip::output::{AtipError, OutputFormat};
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
    /// Output format: text on a terminal, JSON when piped.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    output: OutputFormat,
    /// Data directory (registry.json, tools/, shims/); replaces $XDG_DATA_HOME/agent-tools.
    #[arg(long, global = true, env = "ATIP_DATA_DIR", value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Config directory (config.json, overrides/); replaces $XDG_CONFIG_HOME/agent-tools.
    #[arg(long, global = true, env = "ATIP_CONFIG_DIR", value_name = "DIR")]
    config_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {}

/// What every subcommand gets: resolved output format and directories.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// Output format, `auto` already resolved.
    pub output: OutputFormat,
    /// Directories.
    pub dirs: Dirs,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let ctx = Ctx {
        output: cli.output.resolve(),
        dirs: Dirs::resolve(cli.data_dir.as_deref(), cli.config_dir.as_deref()),
    };
    let result: Result<u8, AtipError> = match cli.command {
        None => {
            use clap::CommandFactory;
            Cli::command().print_help().ok();
            Ok(2)
        }
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            e.report(ctx.output == OutputFormat::Json);
            ExitCode::from(e.exit_code())
        }
    }
}
