//! The `atip` binary: parses the command line and dispatches to one subcommand.

use atip::dirs::Dirs;
use atip::env::Env;
use atip::output::{AtipError, ColorChoice, ExitStatus, OutputFormat, Printer, Verbosity};
use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

mod cli;

/// Find, validate, export and run ATIP command-line tools for AI agents.
#[derive(Debug, Parser)]
#[command(name = "atip", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    flags: Flags,
    #[command(subcommand)]
    command: Option<Command>,
}

// `Cli` as the command line is parsed: the same flags and commands, but each command's
// arguments are built only when it is the one invoked (clap's `defer`). Building all
// sixteen commands' arguments and copying the global flags into each was most of a
// millisecond and most of the heap of every `atip exec`, the one command agents start
// per tool call. The matches are read back into `Cli` (same argument ids); help without
// a command, completions, man pages and `--agent` use the full `Cli` tree as before, and
// a test checks that both trees render the same help. (Plain comments: clap turns doc
// comments on these items into help text.)
/// Find, validate, export and run ATIP command-line tools for AI agents.
#[derive(Parser)]
#[command(name = "atip", version, about, propagate_version = true)]
#[allow(dead_code)] // only its clap tree is used
struct Invocation {
    #[command(flatten)]
    flags: Flags,
    #[command(subcommand)]
    command: Option<Deferred>,
}

// atip's own flags, before or after the command.
#[derive(Debug, clap::Args)]
struct Flags {
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
    #[arg(long, short = 'v', global = true)]
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
}

// Declares atip's commands once, as the full tree (`Command`) and as the tree parsing uses
// (`Deferred`), so that the two cannot drift apart.
macro_rules! commands {
    ($($(#[$meta:meta])* $name:ident($args:ty),)*) => {
        #[derive(Debug, Subcommand)]
        enum Command {
            $($(#[$meta])* $name($args),)*
        }

        // `Command` with each command's arguments built when it is invoked. Only its
        // clap tree is used (the matches are read into `Command`).
        #[derive(Subcommand)]
        #[command(defer = true)]
        #[allow(dead_code)]
        enum Deferred {
            $($(#[$meta])* $name($args),)*
        }
    };
}

// Each command's `--help` ends with real invocations (a test parses every one with the
// real command tree): what a person copies first.
const VALIDATE_EXAMPLES: &str = "\
Examples:
  atip validate shims/                          # every metadata file under a directory
  atip validate --exec gh                       # a tool's own --agent answer
  atip --output sarif validate --deny-warnings shims/   # for code scanning in CI";
const DIFF_EXAMPLES: &str = "\
Examples:
  atip diff old.json new.json                   # breaking changes and less-safe effects
  atip diff --semver old.json new.json          # also check the version bump
  atip --output markdown diff old.json new.json   # for a pull-request comment";
const LINT_EXAMPLES: &str = "\
Examples:
  atip lint shims/                              # advice beyond validity
  atip lint --registry                          # every tool the last scan registered
  atip lint --list-rules                        # what is checked";
const SCAN_EXAMPLES: &str = "\
Examples:
  atip scan                                     # find tools on PATH, print a summary
  atip scan --dry-run                           # what would be run; run and write nothing
  atip scan --verbose                           # the summary and every tool
  atip scan --explain git                       # which source described git, and why";
const SYNC_EXAMPLES: &str = "\
Examples:
  atip sync                                     # fetch remote registries' shims
  atip sync --offline                           # use only what is cached";
const REGISTRY_EXAMPLES: &str = "\
Examples:
  atip registry keygen team.key                 # a signing key pair
  atip registry build shims/ site/ --sign team.key     # a static registry to publish
  atip registry list                            # the registries this machine reads";
const LIST_EXAMPLES: &str = "\
Examples:
  atip list                                     # every registered tool
  atip list --effects destructive               # tools with a command that destroys data
  atip list --source shim --trust community 'git*'   # filters combine";
const GET_EXAMPLES: &str = "\
Examples:
  atip get wc                                   # a page on a terminal, JSON when piped
  atip get git --commands 'stash push'          # one command in full
  atip --output json get gh --depth 1           # top-level commands only, as JSON";
const DOCTOR_EXAMPLES: &str = "\
Examples:
  atip doctor                                   # is every registry entry still valid?
  atip --output json doctor                     # the findings for a script";
const EXPORT_EXAMPLES: &str = "\
Examples:
  atip export --format openai-strict --tools gh # OpenAI tool definitions
  atip export --format anthropic --tools git,curl -o tools.json
  atip export --format skill --tools git -o skills/    # one skill directory per tool";
const SEARCH_EXAMPLES: &str = "\
Examples:
  atip search create pull request               # ranked commands, one line each
  atip search --limit 3 --schemas 1 'count lines'   # with the best one's schema
  atip search --explain 'delete branch'         # why each result ranked";
const EXEC_EXAMPLES: &str = "\
Examples:
  atip exec wc --args '{\"lines\": true, \"file\": [\"README.md\"]}'
  atip exec gh_pr_list --args '{\"state\": \"open\"}' --dry-run   # the command line only
  atip exec --calls response.json --provider openai   # every call of a model's response";
const MCP_EXAMPLES: &str = "\
Examples:
  atip mcp                                      # serve every registered tool (stdio)
  atip mcp serve --http 127.0.0.1:8765          # the same over Streamable HTTP
  atip mcp tools                                # tools of the configured MCP servers";
const CHAT_EXAMPLES: &str = "\
Examples:
  atip chat --provider openai --model gpt-5-mini 'what changed in this repo today?'
  atip chat --provider openai --base-url http://127.0.0.1:8080/v1 --model local 'list big files'";
const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  atip completions bash    # install: > ~/.local/share/bash-completion/completions/atip
  atip completions zsh     # install: > ~/.zfunc/_atip (fpath+=~/.zfunc before compinit)
  atip completions fish    # install: > ~/.config/fish/completions/atip.fish";
const MAN_EXAMPLES: &str = "\
Examples:
  atip man                                      # atip(1)
  atip man export                               # atip-export(1)";

commands! {
    /// Check ATIP metadata, shims, registries and pattern files.
    #[command(after_help = VALIDATE_EXAMPLES)]
    Validate(cli::validate::Args),
    /// Compare two versions of a tool's metadata: breaking changes, less-safe effects.
    #[command(after_help = DIFF_EXAMPLES)]
    Diff(cli::diff::Args),
    /// Lint ATIP metadata: what makes it better for agents, beyond validity.
    #[command(after_help = LINT_EXAMPLES)]
    Lint(cli::lint::Args),
    /// Find ATIP tools on PATH and record them in the registry.
    #[command(after_help = SCAN_EXAMPLES)]
    Scan(cli::scan::Args),
    /// Fetch remote registries' shims for the binaries here, verify and register them.
    #[command(after_help = SYNC_EXAMPLES)]
    Sync(cli::sync::Args),
    /// Publish shims as a static remote registry; choose the registries this machine reads.
    #[command(after_help = REGISTRY_EXAMPLES)]
    Registry(cli::registry::Args),
    /// List the tools in the registry.
    #[command(after_help = LIST_EXAMPLES)]
    List(cli::list::Args),
    /// Print a registered tool's metadata, whole or partial.
    #[command(after_help = GET_EXAMPLES)]
    Get(cli::get::Args),
    /// Check every registry entry and say what to fix.
    #[command(after_help = DOCTOR_EXAMPLES)]
    Doctor(cli::doctor::Args),
    /// Export registry tools as provider tool definitions.
    #[command(after_help = EXPORT_EXAMPLES)]
    Export(cli::export::Args),
    /// Find the registered commands that best match a query.
    #[command(after_help = SEARCH_EXAMPLES)]
    Search(cli::search::Args),
    /// Run a model's tool call under policy.
    #[command(after_help = EXEC_EXAMPLES)]
    Exec(cli::exec::Args),
    /// Serve registered tools over MCP, or use MCP servers (tools, call, ping…).
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(Box<cli::mcp::Args>),
    /// Run the tool loop against a model endpoint until the model answers.
    #[command(after_help = CHAT_EXAMPLES)]
    Chat(cli::chat::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish).
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(cli::completions::Args),
    /// Print the manual page (roff) of atip or of one of its commands.
    #[command(after_help = MAN_EXAMPLES)]
    Man(cli::man::Args),
}

/// Parses the command line with the [`Invocation`] tree into a [`Cli`].
fn parse() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let mut matches = Invocation::command().try_get_matches()?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut Invocation::command()))
}

/// The run context every subcommand gets: settings resolved once from the command line
/// and the environment, handed down (library code reads no environment variable).
#[derive(Debug)]
pub struct Ctx {
    /// Output format, `auto` already resolved.
    pub output: OutputFormat,
    /// The one printer: data to stdout, diagnostics to stderr.
    pub out: Printer,
    /// Directories.
    pub dirs: Dirs,
    /// The environment atip started with, read once: what the library layers consult
    /// (`PATH`, `ATIP_*` knobs, credentials named by metadata) and what children inherit.
    pub env: Env,
    /// Columns text on stdout must fit (`None`: no limit), [`term::stdout_width`].
    ///
    /// [`term::stdout_width`]: atip::output::term::stdout_width
    pub width: Option<usize>,
}

/// glibc's heap grows by 16 MiB at a time instead of 128 KiB and keeps that much when it
/// shrinks: a warm rescan allocates and frees ~20 MB in small steps, and every trim and
/// regrowth was a system call plus freshly zeroed pages (~5 % of its time). Padding that
/// is never touched costs no memory.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of glibc's allocator; called before any thread
    // starts.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 16 << 20);
    }
}

fn main() -> ExitCode {
    tune_allocator();
    // The one read of atip's environment; everything below gets this snapshot.
    let env = Env::capture();
    // Started as `mcp` (a link to atip): the mcp-cli document's command.
    if cli::mcp_cli::invoked_as_mcp() {
        return cli::mcp_cli::main(env);
    }
    let cli = match parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    let ctx = context(&cli.flags, env);
    let status = match dispatch(cli, &ctx) {
        Ok(status) => status,
        Err(e) => {
            ctx.out.error(&e);
            ExitStatus::from(&e)
        }
    };
    // Ended by SIGINT, SIGTERM or SIGHUP: nothing atip started outlives it, and the
    // status says which signal (128 + its number).
    ExitCode::from(cli::signals::finish().unwrap_or(status))
}

/// The run context from the global flags and the environment: the printer (and the
/// library's log through the same style), the directories and the terminal's width.
fn context(flags: &Flags, env: Env) -> Ctx {
    let verbosity = if flags.quiet {
        Verbosity::Quiet
    } else if flags.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    };
    let color = flags.color.with_env(&env);
    let out = Printer::new(flags.output, verbosity, color);
    // What the library says while it works reaches stderr through the same printer style.
    if log::set_boxed_logger(Box::new(atip::output::PrinterLog(Printer::new(
        flags.output,
        verbosity,
        color,
    ))))
    .is_ok()
    {
        log::set_max_level(log::LevelFilter::Debug);
    }
    Ctx {
        output: out.format(),
        out,
        dirs: Dirs::resolve(
            flags.data_dir.as_deref(),
            flags.config_dir.as_deref(),
            flags.state_dir.as_deref(),
            &env,
        ),
        width: atip::output::term::stdout_width(&env),
        env,
    }
}

/// Runs the command the line names (`--agent`: atip's own metadata; none: the help, a
/// usage error).
fn dispatch(cli: Cli, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    match cli.command {
        _ if cli.flags.agent => {
            cli::agent::run(cli.flags.commands.as_deref(), cli.flags.depth, &ctx.out)
        }
        Some(Command::Validate(args)) => cli::validate::run(args, ctx),
        Some(Command::Diff(args)) => cli::diff::run(args, ctx),
        Some(Command::Lint(args)) => cli::lint::run(args, ctx),
        Some(Command::Scan(args)) => cli::scan::run(args, ctx),
        Some(Command::Sync(args)) => cli::sync::run(args, ctx),
        Some(Command::Registry(args)) => cli::registry::run(args, ctx),
        Some(Command::List(args)) => cli::list::run(args, ctx),
        Some(Command::Get(args)) => cli::get::run(args, ctx),
        Some(Command::Doctor(args)) => cli::doctor::run(args, ctx),
        Some(Command::Export(args)) => cli::export::run(args, ctx),
        Some(Command::Search(args)) => cli::search::run(args, ctx),
        Some(Command::Exec(args)) => cli::exec::run(args, ctx),
        Some(Command::Mcp(args)) => cli::mcp::run(*args, ctx),
        Some(Command::Chat(args)) => cli::chat::run(args, ctx),
        Some(Command::Completions(args)) => {
            cli::completions::run(args, <Cli as clap::CommandFactory>::command(), ctx)
        }
        Some(Command::Man(args)) => {
            cli::man::run(args, <Cli as clap::CommandFactory>::command(), ctx)
        }
        None => {
            use clap::CommandFactory;
            ctx.out.stderr(&Cli::command().render_help().to_string());
            Ok(ExitStatus::Error(atip::output::Category::Usage))
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
    let err = cli::usage::to_atip(&e, &args, &<Cli as clap::CommandFactory>::command());
    let out = Printer::new(format, Verbosity::Normal, ColorChoice::Never);
    out.error(&err);
    ExitCode::from(err.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Help as each command renders it, depth first, in a built tree (building runs the
    /// deferred parts). The subcommands clap copies under its generated `help` command
    /// are left out: a build copies only those that exist when their parent is built (a
    /// deferred command's own subcommands come later), and parsing never uses the copies
    /// (`atip help mcp serve` walks the real commands).
    fn helps(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
        let mut c = cmd.clone();
        out.push((path.to_string(), c.render_long_help().to_string()));
        out.push((format!("{path} (short)"), c.render_help().to_string()));
        if path.ends_with(" help") {
            return;
        }
        for sub in cmd.get_subcommands() {
            helps(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    /// The tree parsing uses (commands built on invocation) gives every command the help
    /// the full tree gives it: same texts, flags, defaults and order.
    #[test]
    fn the_parsing_tree_renders_the_same_help_as_the_full_tree() {
        let (mut full, mut parsing) = (Cli::command(), Invocation::command());
        full.build();
        parsing.build();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        helps(&full, "atip", &mut a);
        helps(&parsing, "atip", &mut b);
        assert!(a.len() > 40, "every command and subcommand: {}", a.len());
        let names = |v: &Vec<(String, String)>| v.iter().map(|x| x.0.clone()).collect::<Vec<_>>();
        assert_eq!(names(&a), names(&b));
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y);
        }
    }

    /// Near misses of every flag and subcommand: a letter doubled, a `--no-` spelling,
    /// a subcommand's flag given before it.
    fn near_misses(cmd: &clap::Command, path: Vec<String>, cases: &mut Vec<Vec<String>>) {
        let with = |extra: &[&str]| {
            let mut v = path.clone();
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        for a in cmd.get_arguments() {
            if let Some(long) = a.get_long().filter(|l| !["help", "version"].contains(l)) {
                let last = long.chars().last().unwrap();
                cases.push(with(&[&format!("--{long}{last}")]));
                cases.push(with(&[&format!("--no-{long}")]));
            }
        }
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let name = sub.get_name();
            let last = name.chars().last().unwrap();
            cases.push(with(&[&format!("{name}{last}")]));
            for a in sub.get_arguments().filter(|a| !a.is_global_set()) {
                if let Some(long) = a.get_long().filter(|l| *l != "help") {
                    let flag = format!("--{long}");
                    if a.get_action().takes_values() {
                        cases.push(with(&[&flag, "x", name]));
                    } else {
                        cases.push(with(&[&flag, name]));
                    }
                }
            }
            near_misses(sub, with(&[name]), cases);
        }
    }

    fn accepted(cmd: &clap::Command, words: &[String]) -> bool {
        use clap::error::ErrorKind;
        match cmd.clone().try_get_matches_from(words) {
            Ok(_) => true,
            Err(e) => matches!(
                e.kind(),
                ErrorKind::MissingRequiredArgument
                    | ErrorKind::MissingSubcommand
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
                    | ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
            ),
        }
    }

    /// Every "did you mean" is a command line the parser accepts (short of arguments the
    /// near miss itself left out): each suggestion's example is parsed again.
    #[test]
    fn every_suggestion_parses() {
        let mut root = Cli::command();
        root.build();
        let mut cases = Vec::new();
        near_misses(&root, vec!["atip".into()], &mut cases);
        assert!(cases.len() > 500, "{}", cases.len());
        let mut offered = 0;
        let mut bad = Vec::new();
        for case in &cases {
            let Err(e) = root.clone().try_get_matches_from(case) else {
                continue;
            };
            let args: Vec<std::ffi::OsString> = case.iter().map(Into::into).collect();
            let err = cli::usage::to_atip(&e, &args, &root);
            let Some(example) = err.suggestion.as_ref().and_then(|s| s.example.clone()) else {
                continue;
            };
            offered += 1;
            let line = example.as_str().unwrap().to_string();
            let words: Vec<String> = line
                .split(' ')
                .map(|w| w.trim_matches('\'').to_string())
                .collect();
            if !accepted(&root, &words) {
                bad.push(format!("{} -> {line}", case.join(" ")));
            }
        }
        assert!(
            bad.is_empty(),
            "{} suggestions do not parse:\n{}",
            bad.len(),
            bad.join("\n")
        );
        assert!(offered > 300, "only {offered} suggestions offered");
        // The cases of issue 33.
        let example = |case: &[&str]| {
            let args: Vec<std::ffi::OsString> = case.iter().map(Into::into).collect();
            let e = root.clone().try_get_matches_from(&args).unwrap_err();
            let err = cli::usage::to_atip(&e, &args, &root);
            err.suggestion
                .and_then(|s| s.example)
                .map(|v| v.as_str().unwrap().to_string())
        };
        assert_eq!(
            example(&["atip", "--no-color", "list"]).as_deref(),
            Some("atip --color never list")
        );
        assert_eq!(
            example(&["atip", "mcp", "--server", "X", "call", "t"]).as_deref(),
            Some("atip mcp call --server X t")
        );
    }

    /// The example lines of a help text: those under `Examples:`, without the comment.
    fn examples_in(help: &str) -> Vec<String> {
        help.lines()
            .skip_while(|l| l.trim() != "Examples:")
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.split(" # ").next().unwrap_or("").trim().to_string())
            .collect()
    }

    /// Words as a POSIX shell splits them: blanks separate, single quotes keep
    /// everything, double quotes keep all but `\"` and `\\`.
    fn shell_words(line: &str) -> Vec<String> {
        let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
        let mut chars = line.chars();
        while let Some(c) = chars.next() {
            match c {
                ' ' | '\t' if in_word => {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                ' ' | '\t' => {}
                '\'' => {
                    in_word = true;
                    word.extend(chars.by_ref().take_while(|&c| c != '\''));
                }
                '"' => {
                    in_word = true;
                    while let Some(c) = chars.next() {
                        match c {
                            '"' => break,
                            '\\' => word.extend(chars.next()),
                            c => word.push(c),
                        }
                    }
                }
                c => {
                    in_word = true;
                    word.push(c);
                }
            }
        }
        if in_word {
            words.push(word);
        }
        words
    }

    #[test]
    fn shell_words_split_like_a_shell() {
        assert_eq!(
            shell_words(r#"atip exec wc --args '{"a": 1}' "x \"y\"" z"#),
            [
                "atip",
                "exec",
                "wc",
                "--args",
                r#"{"a": 1}"#,
                r#"x "y""#,
                "z"
            ]
        );
    }

    /// Every command's and every nested subcommand's `--help` ends with at least two
    /// examples, and each one parses with the real command tree as an invocation of that
    /// very command (`atip mcp serve …` reaches `mcp serve`, not `mcp`).
    #[test]
    fn every_command_help_has_examples_that_parse() {
        /// Each command below `cmd` with its path of names, depth first.
        fn commands(
            cmd: &clap::Command,
            path: Vec<String>,
            out: &mut Vec<(Vec<String>, clap::Command)>,
        ) {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let mut p = path.clone();
                p.push(sub.get_name().to_string());
                out.push((p.clone(), sub.clone()));
                commands(sub, p, out);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut all = Vec::new();
        commands(&cmd, Vec::new(), &mut all);
        let mut checked = 0;
        for (path, sub) in &all {
            let help = sub.clone().render_long_help().to_string();
            let examples = examples_in(&help);
            assert!(
                examples.len() >= 2,
                "`atip {} --help` has {} example(s):\n{help}",
                path.join(" "),
                examples.len()
            );
            // The short help shows them too.
            assert!(sub.clone().render_help().to_string().contains("Examples:"));
            for e in &examples {
                let words = shell_words(e);
                assert_eq!(words[0], "atip", "{e}");
                let parsed = Cli::try_parse_from(&words)
                    .unwrap_or_else(|err| panic!("example `{e}` does not parse:\n{err}"));
                let name = format!("{:?}", parsed.command);
                assert!(
                    name.to_lowercase()
                        .starts_with(&format!("some({}", path[0])),
                    "`{e}` parsed as {name}"
                );
                // The parse went through the command's path (`atip mcp`'s examples may
                // go on to one of its subcommands).
                let matches = Cli::command().try_get_matches_from(&words).unwrap();
                let mut reached = Vec::new();
                let mut m = &matches;
                while let Some((name, next)) = m.subcommand() {
                    reached.push(name.to_string());
                    m = next;
                }
                assert!(
                    reached.starts_with(path),
                    "`{e}` is not an example of `atip {}`",
                    path.join(" ")
                );
                checked += 1;
            }
        }
        assert!(all.len() >= 33, "{} commands", all.len());
        assert!(checked >= 70, "{checked}");
    }

    /// A command line reads back into the same `Cli` whichever tree parsed it.
    #[test]
    fn both_trees_parse_a_command_line_alike() {
        let line = [
            "atip",
            "--output",
            "json",
            "exec",
            "gh_pr_list",
            "--args",
            "{}",
            "--timeout",
            "5s",
            "-q",
        ];
        let full = Cli::try_parse_from(line).unwrap();
        let mut matches = Invocation::command().try_get_matches_from(line).unwrap();
        let parsed = <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches).unwrap();
        assert_eq!(format!("{full:?}"), format!("{parsed:?}"));
    }
}
