//! Converts a `clap::Command` tree into ATIP metadata (protocol 0.6, object form).
//!
//! Owns the mapping from clap's builder model to [`crate::model::Metadata`]: subcommands
//! become nested `commands`, positionals become `arguments` (in index order), flags and
//! options become `options`, root-level global arguments become `globalOptions`, help
//! text becomes descriptions. The caller supplies what clap cannot know, the effects of
//! each subcommand, as a table keyed by command path; a path that names no real
//! subcommand is an error, so the table cannot silently drift from the real tree.
//!
//! The rules (which clap settings map to which ATIP fields, what is skipped) are written
//! down in `spec/agent.md`. Must not do I/O or print: it returns a value and the caller
//! decides what to do with it.
//!
//! # Giving a clap CLI an `--agent` answer
//!
//! 1. Add `--agent` (and, for partial discovery, `--commands` and `--depth`) to the root
//!    command, and tell the converter to leave the last two out of the answer with
//!    [`FromClap::skip_root_arg`].
//! 2. Write the effects of each command in a table keyed by command path: the one thing
//!    clap cannot know. A path that names no subcommand fails [`FromClap::build`], so the
//!    table cannot drift from the CLI.
//! 3. On `--agent`, build the metadata, narrow it with [`crate::model::Metadata::partial`] when
//!    `--commands`/`--depth` were given (declare the `partial-discovery` feature with
//!    [`FromClap::feature`]), print it as JSON and exit.
//! 4. Test the answer as agents' hosts will: [`crate::validate::check_bytes`] (what `atip
//!    validate` runs) and [`crate::lint::lint_bytes`] (what `atip lint` runs).
//!
//! `examples/clap_agent.rs` is a complete CLI doing exactly this, with those tests; they
//! run with `cargo test`.
//!
//! ```
//! // In a tool's own crate these are `atip::from_clap::FromClap` and `atip::model::Effects`.
//! use atip_lint::from_clap::FromClap;
//! use atip_model::model::Effects;
//! let cmd = clap::Command::new("greet")
//!     .version("1.2.0")
//!     .about("Say hello")
//!     .arg(clap::Arg::new("name").help("Who to greet"));
//! let read_only = Effects { network: Some(false), destructive: Some(false), ..Effects::default() };
//! let meta = FromClap::new(&cmd).tool_effects(read_only).build().unwrap();
//! assert_eq!(meta.name.as_deref(), Some("greet"));
//! assert_eq!(meta.find(&[""]).unwrap().command.args()[0].name, "name");
//! ```

use crate::model::{
    AtipField, AtipObject, Command, Commands, Effects, Extra, Metadata, Opt, ParamType,
    ProtocolVersion,
};
use clap::builder::ValueHint;
use clap::{Arg, ArgAction};
use serde_json::Value;
use std::any::TypeId;
use std::collections::BTreeSet;

/// Longest root `description` the protocol allows (one line).
const MAX_TOOL_DESCRIPTION: usize = 200;

/// Why a clap tree could not be converted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FromClapError {
    /// The effects table names a command path the clap tree does not have.
    #[error("effects given for `{path}`, but the command tree has no such (visible) subcommand")]
    UnknownEffectsPath {
        /// The path, space-separated.
        path: String,
    },
    /// The same command path appears twice in the effects table.
    #[error("effects given twice for `{path}`")]
    DuplicateEffectsPath {
        /// The path, space-separated.
        path: String,
    },
    /// Neither the builder nor the clap command supplies a version.
    #[error(
        "the command `{name}` has no version: set one on the clap command or with `.version(..)`"
    )]
    MissingVersion {
        /// The command's name.
        name: String,
    },
}

/// Builder that converts a clap command tree into ATIP [`Metadata`].
///
/// Start with [`FromClap::new`], add effects per subcommand path, then [`FromClap::build`].
/// The clap command is cloned and built internally (so globals, default actions and value
/// parsers are resolved the way clap resolves them at parse time); the original is untouched.
#[derive(Debug, Clone)]
pub struct FromClap<'a> {
    cmd: &'a clap::Command,
    name: Option<String>,
    version: Option<String>,
    description: Option<String>,
    homepage: Option<String>,
    tool_effects: Option<Effects>,
    effects: Vec<(Vec<String>, Effects)>,
    skip_root_args: Vec<String>,
    features: Vec<String>,
}

impl<'a> FromClap<'a> {
    /// A converter for `cmd`. By default the root argument whose id or long name is
    /// `agent` is left out: it is the introspection flag itself, not something to call.
    pub fn new(cmd: &'a clap::Command) -> Self {
        FromClap {
            cmd,
            name: None,
            version: None,
            description: None,
            homepage: None,
            tool_effects: None,
            effects: Vec::new(),
            skip_root_args: vec!["agent".into()],
            features: Vec::new(),
        }
    }

    /// Overrides the tool name (default: the clap command's name).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Overrides the tool version (default: the clap command's version).
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// Overrides the one-line tool description (default: the first line of `about`).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets `homepage`.
    pub fn homepage(mut self, url: impl Into<String>) -> Self {
        self.homepage = Some(url.into());
        self
    }

    /// Sets tool-level effects, which every command inherits where it says nothing.
    pub fn tool_effects(mut self, effects: Effects) -> Self {
        self.tool_effects = Some(effects);
        self
    }

    /// Sets the effects of the subcommand at `path` (e.g. `&["pr", "create"]`;
    /// `&[""]` for the tool run with no subcommand).
    pub fn effects(mut self, path: &[&str], effects: Effects) -> Self {
        self.effects
            .push((path.iter().map(|s| s.to_string()).collect(), effects));
        self
    }

    /// Adds a whole table of per-path effects, as [`FromClap::effects`] does one by one.
    pub fn effects_table(mut self, table: &[(&[&str], Effects)]) -> Self {
        for (path, effects) in table {
            self = self.effects(path, effects.clone());
        }
        self
    }

    /// Leaves out one more root-level argument (by id or long name), e.g. the
    /// partial-discovery flags `commands` and `depth` that only make sense with `--agent`.
    pub fn skip_root_arg(mut self, id: impl Into<String>) -> Self {
        self.skip_root_args.push(id.into());
        self
    }

    /// Declares a protocol feature id in `atip.features` (e.g. `partial-discovery` when
    /// the tool answers `--agent --commands/--depth`). `interactive-effects` is added
    /// automatically when an effects entry uses `interactive`.
    pub fn feature(mut self, id: impl Into<String>) -> Self {
        self.features.push(id.into());
        self
    }

    /// Converts the tree.
    pub fn build(&self) -> Result<Metadata, FromClapError> {
        let mut cmd = self.cmd.clone();
        cmd.build();
        let name = self
            .name
            .clone()
            .unwrap_or_else(|| cmd.get_name().to_string());
        let version = self
            .version
            .clone()
            .or_else(|| cmd.get_version().map(str::to_string))
            .ok_or_else(|| FromClapError::MissingVersion { name: name.clone() })?;
        let description = match &self.description {
            Some(d) => one_line(d),
            None => tool_description(&cmd, &name),
        };

        let root_globals: Vec<&Arg> = cmd
            .get_arguments()
            .filter(|a| a.is_global_set() && is_visible(a))
            .collect();
        let global_ids: BTreeSet<String> = cmd
            .get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().to_string())
            .collect();
        let global_options: Vec<Opt> = root_globals.iter().map(|a| option(a)).collect();

        let mut commands = self.commands(&cmd, &name, &global_ids);
        let features = self.apply_effects(&mut commands)?;

        Ok(Metadata {
            atip: AtipField::Current(AtipObject {
                version: ProtocolVersion::LATEST.to_string(),
                features: Some(features),
                min_agent_version: None,
                extra: Extra::new(),
            }),
            name: Some(name),
            version: Some(version),
            description,
            homepage: self.homepage.clone(),
            binary: None,
            partial: None,
            filter: None,
            total_commands: None,
            included_commands: None,
            omitted: None,
            trust: None,
            commands: (!commands.is_empty()).then_some(commands),
            global_options: (!global_options.is_empty()).then_some(global_options),
            authentication: None,
            effects: self.tool_effects.clone(),
            patterns: None,
            extra: Extra::new(),
        })
    }

    /// The commands: the root's own arguments as the command `""` (also when there are no
    /// subcommands), then each visible subcommand, converted with its own.
    fn commands(&self, cmd: &clap::Command, name: &str, global_ids: &BTreeSet<String>) -> Commands {
        let mut commands = Commands::new();
        let own_root_args: Vec<&Arg> = cmd
            .get_arguments()
            .filter(|a| !a.is_global_set() && is_visible(a))
            .filter(|a| !self.is_skipped_root_arg(a))
            .collect();
        if !own_root_args.is_empty() || visible_subcommands(cmd).next().is_none() {
            let mut root = command_from_args(cmd, &own_root_args, &[name]);
            root.description = command_description(cmd, &[name]);
            commands.insert(String::new(), root);
        }
        let mut path = vec![name.to_string()];
        for sub in visible_subcommands(cmd) {
            let key = sub.get_name().to_string();
            let converted = convert_command(sub, global_ids, &mut path);
            commands.insert(key, converted);
        }
        commands
    }

    /// Sets each command's effects from the table (a path named twice, or naming no
    /// command, is an error); returns the features, with `interactive-effects` when any
    /// effects (or the tool's) state interaction.
    fn apply_effects(&self, commands: &mut Commands) -> Result<Vec<String>, FromClapError> {
        let mut seen: BTreeSet<&[String]> = BTreeSet::new();
        let mut features = self.features.clone();
        for (path, effects) in &self.effects {
            let shown = path.join(" ");
            if !seen.insert(path.as_slice()) {
                return Err(FromClapError::DuplicateEffectsPath { path: shown });
            }
            let target = lookup_mut(commands, path)
                .ok_or(FromClapError::UnknownEffectsPath { path: shown })?;
            target.effects = Some(effects.clone());
            if effects.interactive.is_some() {
                push_unique(&mut features, "interactive-effects");
            }
        }
        if self
            .tool_effects
            .as_ref()
            .is_some_and(|e| e.interactive.is_some())
        {
            push_unique(&mut features, "interactive-effects");
        }
        Ok(features)
    }

    fn is_skipped_root_arg(&self, arg: &Arg) -> bool {
        self.skip_root_args
            .iter()
            .any(|s| s == arg.get_id().as_str() || arg.get_long() == Some(s.as_str()))
    }
}

/// Converts `cmd` with a per-path effects table; see [`FromClap`] for the details and
/// for the other settings.
pub fn from_clap(
    cmd: &clap::Command,
    effects: &[(&[&str], Effects)],
) -> Result<Metadata, FromClapError> {
    FromClap::new(cmd).effects_table(effects).build()
}

fn push_unique(list: &mut Vec<String>, id: &str) {
    if !list.iter().any(|f| f == id) {
        list.push(id.to_string());
    }
}

fn lookup_mut<'c>(commands: &'c mut Commands, path: &[String]) -> Option<&'c mut Command> {
    let (first, rest) = path.split_first()?;
    let mut cmd = commands.get_mut(first)?;
    for seg in rest {
        cmd = cmd.commands.as_mut()?.get_mut(seg)?;
    }
    Some(cmd)
}

/// Subcommands an agent may call: not hidden, and not clap's generated `help`.
fn visible_subcommands(cmd: &clap::Command) -> impl Iterator<Item = &clap::Command> {
    let generated_help = !cmd.is_disable_help_subcommand_set();
    cmd.get_subcommands()
        .filter(move |s| !(s.is_hide_set() || (generated_help && s.get_name() == "help")))
}

/// Not hidden, and not one of clap's help/version actions.
fn is_visible(arg: &Arg) -> bool {
    !arg.is_hide_set()
        && !matches!(
            arg.get_action(),
            ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
        )
}

fn convert_command(
    cmd: &clap::Command,
    inherited_globals: &BTreeSet<String>,
    path: &mut Vec<String>,
) -> Command {
    path.push(cmd.get_name().to_string());
    let args: Vec<&Arg> = cmd
        .get_arguments()
        .filter(|a| is_visible(a) && !inherited_globals.contains(a.get_id().as_str()))
        .collect();
    let shown: Vec<&str> = path.iter().map(String::as_str).collect();
    let mut out = command_from_args(cmd, &args, &shown);
    let mut globals = inherited_globals.clone();
    globals.extend(
        cmd.get_arguments()
            .filter(|a| a.is_global_set())
            .map(|a| a.get_id().to_string()),
    );
    let mut children = Commands::new();
    for sub in visible_subcommands(cmd) {
        children.insert(
            sub.get_name().to_string(),
            convert_command(sub, &globals, path),
        );
    }
    out.commands = (!children.is_empty()).then_some(children);
    path.pop();
    out
}

/// A command with its positionals and options; `commands` left empty.
fn command_from_args(cmd: &clap::Command, args: &[&Arg], path: &[&str]) -> Command {
    let mut positionals: Vec<&Arg> = args.iter().copied().filter(|a| a.is_positional()).collect();
    positionals.sort_by_key(|a| a.get_index().unwrap_or(usize::MAX));
    let arguments: Vec<crate::model::Argument> = positionals.iter().map(|a| argument(a)).collect();
    let options: Vec<Opt> = args
        .iter()
        .filter(|a| !a.is_positional())
        .map(|a| option(a))
        .collect();
    Command {
        description: command_description(cmd, path),
        arguments: (!arguments.is_empty()).then_some(arguments),
        options: (!options.is_empty()).then_some(options),
        commands: None,
        effects: None,
        examples: None,
        extra: Extra::new(),
    }
}

fn tool_description(cmd: &clap::Command, name: &str) -> String {
    let text = cmd
        .get_about()
        .or(cmd.get_long_about())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let line = one_line(&text);
    if line.is_empty() {
        format!("The {name} command-line tool")
    } else {
        line
    }
}

/// First non-empty line, trimmed, cut to the protocol's 200 characters.
fn one_line(text: &str) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.chars().count() <= MAX_TOOL_DESCRIPTION {
        return line.to_string();
    }
    let mut cut: String = line.chars().take(MAX_TOOL_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

fn command_description(cmd: &clap::Command, path: &[&str]) -> String {
    let text = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string().trim().to_string())
        .unwrap_or_default();
    if text.is_empty() {
        format!("Runs `{}`.", path.join(" "))
    } else {
        text
    }
}

fn help_text(arg: &Arg) -> String {
    arg.get_long_help()
        .or(arg.get_help())
        .map(|s| s.to_string().trim().to_string())
        .unwrap_or_default()
}

/// The help text, the visible possible values with their help, and a note for `last` args.
fn param_description(arg: &Arg, fallback: String) -> String {
    let mut text = help_text(arg);
    if text.is_empty() {
        text = fallback;
    }
    let values: Vec<clap::builder::PossibleValue> = arg
        .get_possible_values()
        .into_iter()
        .filter(|v| !v.is_hide_set())
        .collect();
    if values.iter().any(|v| v.get_help().is_some()) {
        let listed: Vec<String> = values
            .iter()
            .map(|v| match v.get_help() {
                Some(h) => format!("`{}`: {}", v.get_name(), h.to_string().trim()),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        text = format!("{} Values: {}.", end_sentence(&text), listed.join("; "));
    }
    if arg.is_last_set() {
        text = format!("{} Given after `--`.", end_sentence(&text));
    }
    if arg.is_require_equals_set()
        && let Some(long) = arg.get_long()
    {
        text = format!(
            "{} The value must be attached: `--{long}=VALUE`.",
            end_sentence(&text)
        );
    }
    text
}

fn end_sentence(text: &str) -> String {
    let t = text.trim_end();
    if t.ends_with(['.', '!', '?', ':']) {
        t.to_string()
    } else {
        format!("{t}.")
    }
}

fn value_name(arg: &Arg) -> String {
    arg.get_value_names()
        .and_then(|n| n.first())
        .map(|n| n.to_string())
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase())
}

fn argument(arg: &Arg) -> crate::model::Argument {
    let kind = param_type(arg);
    let values = enum_values(arg, &kind);
    crate::model::Argument {
        name: arg.get_id().to_string(),
        default: default_value(arg, &kind),
        description: param_description(arg, format!("The {} argument.", value_name(arg))),
        kind,
        required: Some(arg.is_required_set()),
        variadic: is_variadic(arg).then_some(true),
        values,
        extra: Extra::new(),
    }
}

fn option(arg: &Arg) -> Opt {
    let mut flags: Vec<String> = Vec::new();
    for c in arg.get_short_and_visible_aliases().unwrap_or_default() {
        flags.push(format!("-{c}"));
    }
    for l in arg.get_long_and_visible_aliases().unwrap_or_default() {
        flags.push(format!("--{l}"));
    }
    let name = arg
        .get_long()
        .map(str::to_string)
        .unwrap_or_else(|| arg.get_id().to_string());
    let kind = param_type(arg);
    let values = enum_values(arg, &kind);
    let fallback = match kind {
        ParamType::Boolean => format!("Sets {}.", flags.join(" / ")),
        _ => format!("Value of {} ({}).", flags.join(" / "), value_name(arg)),
    };
    Opt {
        name,
        description: param_description(arg, fallback),
        default: default_value(arg, &kind),
        flags,
        kind,
        required: arg.is_required_set().then_some(true),
        values,
        env_var: arg.get_env().map(|e| e.to_string_lossy().into_owned()),
        variadic: is_variadic(arg).then_some(true),
        extra: Extra::new(),
    }
}

/// Takes several values: appends on repetition, or accepts more than one value at once.
fn is_variadic(arg: &Arg) -> bool {
    matches!(arg.get_action(), ArgAction::Append)
        || arg.get_num_args().is_some_and(|r| r.max_values() > 1)
}

/// The ATIP type: from the action, then possible values, then the value parser's type,
/// then the value hint; `string` when nothing more precise is known.
fn param_type(arg: &Arg) -> ParamType {
    match arg.get_action() {
        ArgAction::SetTrue | ArgAction::SetFalse => return ParamType::Boolean,
        ArgAction::Count => return ParamType::Integer,
        _ => {}
    }
    if !arg.get_num_args().is_some_and(|r| r.takes_values()) && !arg.is_positional() {
        return ParamType::Boolean;
    }
    if arg.get_possible_values().iter().any(|v| !v.is_hide_set()) {
        return ParamType::Enum;
    }
    let id = arg.get_value_parser().type_id();
    let integers = [
        TypeId::of::<u8>(),
        TypeId::of::<u16>(),
        TypeId::of::<u32>(),
        TypeId::of::<u64>(),
        TypeId::of::<usize>(),
        TypeId::of::<i8>(),
        TypeId::of::<i16>(),
        TypeId::of::<i32>(),
        TypeId::of::<i64>(),
        TypeId::of::<isize>(),
        TypeId::of::<std::num::NonZeroU32>(),
        TypeId::of::<std::num::NonZeroU64>(),
        TypeId::of::<std::num::NonZeroUsize>(),
    ];
    // A custom parser may produce a number from other text (`16MiB` → bytes): when the
    // arg's own default is not a plain number, the accepted syntax is wider than the type.
    let defaults_parse = |ok: fn(&str) -> bool| {
        arg.get_default_values()
            .iter()
            .all(|d| d.to_str().is_some_and(ok))
    };
    if integers.iter().any(|t| id == *t) {
        return if defaults_parse(|d| d.parse::<i64>().is_ok()) {
            ParamType::Integer
        } else {
            ParamType::String
        };
    }
    if id == TypeId::of::<f64>() || id == TypeId::of::<f32>() {
        return if defaults_parse(|d| d.parse::<f64>().is_ok()) {
            ParamType::Number
        } else {
            ParamType::String
        };
    }
    match arg.get_value_hint() {
        ValueHint::DirPath => ParamType::Directory,
        ValueHint::FilePath | ValueHint::ExecutablePath => ParamType::File,
        ValueHint::Url => ParamType::Url,
        ValueHint::AnyPath => {
            let name = value_name(arg).to_ascii_uppercase();
            if name == "DIR" || name.ends_with("_DIR") || name.contains("DIRECTORY") {
                ParamType::Directory
            } else {
                ParamType::File
            }
        }
        _ => ParamType::String,
    }
}

fn enum_values(arg: &Arg, kind: &ParamType) -> Option<Vec<Value>> {
    if *kind != ParamType::Enum {
        return None;
    }
    Some(
        arg.get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| Value::from(v.get_name()))
            .collect(),
    )
}

/// The default, typed; none for the implied defaults of flag actions (`false`, `0`), and
/// none when clap's default would not be a valid value of the ATIP type.
fn default_value(arg: &Arg, kind: &ParamType) -> Option<Value> {
    if matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count
    ) {
        return None;
    }
    let [one] = arg.get_default_values() else {
        return None;
    };
    let text = one.to_str()?;
    match kind {
        ParamType::Integer => text.parse::<i64>().ok().map(Value::from),
        ParamType::Number => text
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number),
        ParamType::Boolean => None,
        _ => Some(Value::from(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction, Command as ClapCommand, value_parser};
    use serde_json::json;
    use std::path::PathBuf;

    /// The fixture's `copy`: every kind of argument and option the conversion reads.
    fn copy() -> ClapCommand {
        ClapCommand::new("copy")
            .about("Copy things")
            .long_about("Copy things from one place to another.")
            .arg(
                Arg::new("source")
                    .required(true)
                    .value_parser(value_parser!(PathBuf))
                    .help("Where from"),
            )
            .arg(
                Arg::new("dest")
                    .value_parser(value_parser!(PathBuf))
                    .value_hint(ValueHint::DirPath)
                    .num_args(1..)
                    .help("Where to"),
            )
            .arg(
                Arg::new("force")
                    .short('f')
                    .long("force")
                    .visible_alias("overwrite")
                    .action(ArgAction::SetTrue)
                    .help("Overwrite"),
            )
            .arg(
                Arg::new("no-sync")
                    .long("no-sync")
                    .action(ArgAction::SetFalse),
            )
            .arg(
                Arg::new("jobs")
                    .short('j')
                    .long("jobs")
                    .value_parser(value_parser!(u64))
                    .default_value("4")
                    .env("DEMO_JOBS")
                    .help("Parallel jobs"),
            )
            .arg(
                Arg::new("mode")
                    .long("mode")
                    .value_parser(["fast", "safe"])
                    .default_value("safe")
                    .required(true)
                    .help("How to copy"),
            )
            .arg(
                Arg::new("exclude")
                    .long("exclude")
                    .action(ArgAction::Append)
                    .help("Skip matching names"),
            )
            .arg(Arg::new("secret").long("secret").hide(true))
            .arg(
                Arg::new("ratio")
                    .long("ratio")
                    .value_parser(value_parser!(f64)),
            )
            .arg(Arg::new("url").long("url").value_hint(ValueHint::Url))
    }

    fn synthetic() -> ClapCommand {
        ClapCommand::new("demo")
            .version("3.1.4")
            .about("A demo tool\n\nWith a longer paragraph.")
            .arg(
                Arg::new("verbose")
                    .short('v')
                    .long("verbose")
                    .action(ArgAction::Count)
                    .global(true)
                    .help("More output"),
            )
            .arg(
                Arg::new("agent")
                    .long("agent")
                    .action(ArgAction::SetTrue)
                    .help("Print metadata"),
            )
            .subcommand(copy())
            .subcommand(
                ClapCommand::new("remote")
                    .about("Manage remotes")
                    .subcommand(
                        ClapCommand::new("add")
                            .about("Add a remote")
                            .arg(Arg::new("name").required(true).help("Remote name")),
                    )
                    .subcommand(ClapCommand::new("prune")),
            )
            .subcommand(ClapCommand::new("internal").hide(true))
    }

    #[test]
    fn synthetic_tree_converts_exactly() {
        let read_only = Effects {
            network: Some(false),
            destructive: Some(false),
            ..Effects::default()
        };
        let meta = FromClap::new(&synthetic())
            .effects(&["remote", "add"], read_only)
            .build()
            .unwrap();
        let expected = json!({
            "atip": {"version": "0.6", "features": []},
            "name": "demo",
            "version": "3.1.4",
            "description": "A demo tool",
            "commands": {
                "copy": {
                    "description": "Copy things from one place to another.",
                    "arguments": [
                        {"name": "source", "type": "file", "description": "Where from", "required": true},
                        {"name": "dest", "type": "directory", "description": "Where to", "required": false, "variadic": true}
                    ],
                    "options": [
                        {"name": "force", "flags": ["-f", "--force", "--overwrite"], "type": "boolean", "description": "Overwrite"},
                        {"name": "no-sync", "flags": ["--no-sync"], "type": "boolean", "description": "Sets --no-sync."},
                        {"name": "jobs", "flags": ["-j", "--jobs"], "type": "integer", "description": "Parallel jobs", "default": 4, "envVar": "DEMO_JOBS"},
                        {"name": "mode", "flags": ["--mode"], "type": "enum", "description": "How to copy", "required": true, "default": "safe", "enum": ["fast", "safe"]},
                        {"name": "exclude", "flags": ["--exclude"], "type": "string", "description": "Skip matching names", "variadic": true},
                        {"name": "ratio", "flags": ["--ratio"], "type": "number", "description": "Value of --ratio (RATIO)."},
                        {"name": "url", "flags": ["--url"], "type": "url", "description": "Value of --url (URL)."}
                    ]
                },
                "remote": {
                    "description": "Manage remotes",
                    "commands": {
                        "add": {
                            "description": "Add a remote",
                            "arguments": [{"name": "name", "type": "string", "description": "Remote name", "required": true}],
                            "effects": {"network": false, "destructive": false}
                        },
                        "prune": {"description": "Runs `demo remote prune`."}
                    }
                }
            },
            "globalOptions": [
                {"name": "verbose", "flags": ["-v", "--verbose"], "type": "integer", "description": "More output"}
            ]
        });
        assert_eq!(
            meta.to_value(),
            expected,
            "{}",
            serde_json::to_string_pretty(&meta.to_value()).unwrap()
        );
    }

    #[test]
    fn root_without_subcommands_becomes_the_empty_command() {
        let cmd = ClapCommand::new("cat2")
            .version("1")
            .arg(Arg::new("files").num_args(0..).help("Files to print"))
            .arg(Arg::new("number").short('n').action(ArgAction::SetTrue));
        let meta = FromClap::new(&cmd).build().unwrap();
        assert_eq!(meta.description, "The cat2 command-line tool");
        let root = meta.find(&[""]).unwrap().command;
        assert_eq!(root.description, "Runs `cat2`.");
        assert_eq!(root.args()[0].name, "files");
        assert!(root.args()[0].is_variadic());
        assert!(!root.args()[0].is_required());
        assert_eq!(root.opts()[0].flags, ["-n"]);
        assert_eq!(root.opts()[0].name, "number");
    }

    #[test]
    fn unknown_or_duplicate_effects_paths_are_errors() {
        let err = FromClap::new(&synthetic())
            .effects(&["remote", "nope"], Effects::default())
            .build()
            .unwrap_err();
        assert_eq!(
            err,
            FromClapError::UnknownEffectsPath {
                path: "remote nope".into()
            }
        );
        let err = FromClap::new(&synthetic())
            .effects(&["internal"], Effects::default())
            .build()
            .unwrap_err();
        assert!(matches!(err, FromClapError::UnknownEffectsPath { .. }));
        let err = FromClap::new(&synthetic())
            .effects(&["copy"], Effects::default())
            .effects(&["copy"], Effects::default())
            .build()
            .unwrap_err();
        assert!(matches!(err, FromClapError::DuplicateEffectsPath { .. }));
    }

    #[test]
    fn missing_version_is_an_error_unless_given() {
        let cmd = ClapCommand::new("x");
        assert!(matches!(
            FromClap::new(&cmd).build(),
            Err(FromClapError::MissingVersion { .. })
        ));
        let meta = FromClap::new(&cmd).version("9").build().unwrap();
        assert_eq!(meta.version.as_deref(), Some("9"));
    }

    #[test]
    fn interactive_effects_declare_the_feature() {
        let e = Effects {
            interactive: Some(Box::new(crate::model::Interactive {
                tty: Some(true),
                ..Default::default()
            })),
            ..Effects::default()
        };
        let meta = FromClap::new(&synthetic())
            .effects(&["copy"], e)
            .feature("partial-discovery")
            .build()
            .unwrap();
        assert_eq!(
            meta.atip.features(),
            ["partial-discovery", "interactive-effects"]
        );
    }

    #[test]
    fn custom_numeric_parser_with_textual_default_is_a_string() {
        fn size(s: &str) -> Result<u64, String> {
            s.trim_end_matches("MiB")
                .parse::<u64>()
                .map(|n| n << 20)
                .map_err(|e| e.to_string())
        }
        let cmd = ClapCommand::new("x")
            .version("1")
            .arg(
                Arg::new("max")
                    .long("max")
                    .value_parser(size)
                    .default_value("16MiB"),
            )
            .arg(
                Arg::new("n")
                    .long("n")
                    .value_parser(size)
                    .default_value("3"),
            );
        let meta = FromClap::new(&cmd).build().unwrap();
        let opts = meta.find(&[""]).unwrap().command.opts();
        assert_eq!(opts[0].kind, ParamType::String);
        assert_eq!(opts[0].default, Some(json!("16MiB")));
        assert_eq!(opts[1].kind, ParamType::Integer);
        assert_eq!(opts[1].default, Some(json!(3)));
    }

    #[test]
    fn subcommand_globals_stay_on_their_command() {
        let cmd = ClapCommand::new("x")
            .version("1")
            .arg(Arg::new("target").help("Run on this target"))
            .subcommand(
                ClapCommand::new("pr")
                    .about("Pull requests")
                    .arg(
                        Arg::new("repo")
                            .long("repo")
                            .global(true)
                            .help("Repository"),
                    )
                    .subcommand(ClapCommand::new("list").about("List them")),
            );
        let meta = FromClap::new(&cmd).build().unwrap();
        // The root's own positional makes a "" command; no global options at the root.
        assert_eq!(meta.find(&[""]).unwrap().command.args()[0].name, "target");
        assert!(meta.global_options.is_none());
        let pr = meta.find(&["pr"]).unwrap();
        assert_eq!(pr.command.opts()[0].flags, ["--repo"]);
        let list = meta.find(&["pr", "list"]).unwrap();
        assert!(
            list.command.options.is_none(),
            "propagated copy not repeated"
        );
        let in_scope: Vec<&str> = meta
            .options_in_scope(&list)
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(in_scope, ["repo"]);
    }

    #[test]
    fn require_equals_and_last_are_said_in_the_description() {
        let cmd = ClapCommand::new("x")
            .version("1")
            .arg(
                Arg::new("color")
                    .long("color")
                    .require_equals(true)
                    .help("When to colour"),
            )
            .arg(
                Arg::new("rest")
                    .last(true)
                    .num_args(0..)
                    .help("Passed through"),
            );
        let meta = FromClap::new(&cmd).build().unwrap();
        let root = meta.find(&[""]).unwrap().command;
        assert_eq!(
            root.opts()[0].description,
            "When to colour. The value must be attached: `--color=VALUE`."
        );
        assert_eq!(
            root.args()[0].description,
            "Passed through. Given after `--`."
        );
        assert!(root.args()[0].is_variadic());
    }

    #[test]
    fn long_tool_description_is_cut_to_one_line_of_200() {
        let cmd = ClapCommand::new("x").version("1").about("a".repeat(300));
        let meta = FromClap::new(&cmd).build().unwrap();
        assert_eq!(meta.description.chars().count(), 200);
    }

    #[test]
    fn possible_value_help_is_listed() {
        let cmd =
            ClapCommand::new("x")
                .version("1")
                .arg(Arg::new("color").long("color").value_parser([
                    clap::builder::PossibleValue::new("auto").help("On a terminal"),
                    clap::builder::PossibleValue::new("never"),
                    clap::builder::PossibleValue::new("legacy").hide(true),
                ]));
        let meta = FromClap::new(&cmd).build().unwrap();
        let opt = &meta.find(&[""]).unwrap().command.opts()[0];
        assert_eq!(opt.values, Some(vec![json!("auto"), json!("never")]));
        assert_eq!(
            opt.description,
            "Value of --color (COLOR). Values: `auto`: On a terminal; `never`."
        );
    }
}
