//! The lint rule catalogue and the checks: what makes valid metadata better for agents.
//!
//! Owns [`LINT_RULES`] (stable ids, default severities, summaries, hints — documented in
//! `spec/lint.md`) and one check per rule over a document that already passed
//! `atip validate`. Every finding carries the JSON pointer of what it is about (so the
//! validate renderer shows line, column and caret) and, where the fix is mechanical,
//! a [`Fix`].
//!
//! Must not read files, run processes (the runner does that for `binary-missing` and
//! `agent-contract`), or print.

use super::config::Config;
use super::fix::Fix;
use crate::compile::names::{MAX_NAME, is_valid_tool_name};
use crate::compile::safety;
use crate::model::{Argument, Command, CommandEntry, Effects, Metadata, Opt, ParamType};
use crate::validate::locate::escape_token;
use crate::validate::rules::RuleInfo;
use crate::validate::{Diagnostic, Kind, Severity};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};

const fn rule(
    id: &'static str,
    severity: Severity,
    summary: &'static str,
    hint: &'static str,
) -> RuleInfo {
    RuleInfo {
        id,
        severity,
        summary,
        hint,
        help_uri: "https://atip.dev/spec/lint#rules",
    }
}

use Severity::{Error as E, Warning as W};

/// Every lint rule, in the order `spec/lint.md` lists them.
pub static LINT_RULES: &[RuleInfo] = &[
    rule(
        "empty-effects",
        W,
        "an `effects` object states nothing",
        "state what the command does (filesystem, network, destructive, idempotent…) or remove the empty object",
    ),
    rule(
        "effects-unstated",
        W,
        "a runnable command's effects leave `destructive` unknown, so agents must confirm every call",
        "state `destructive` (and filesystem/network) on the command, a parent, or the tool",
    ),
    rule(
        "description-quality",
        W,
        "a description is empty, a placeholder, the name again, too short, or padded with spaces",
        "say in a short sentence what it does or what the value is for",
    ),
    rule(
        "required-by-context",
        W,
        "a field that the context makes necessary is missing",
        "add the field the message names",
    ),
    rule(
        "effects-contradiction",
        E,
        "effects contradict each other",
        "make the effects agree; agents cannot tell which one is meant",
    ),
    rule(
        "naming-inconsistent",
        W,
        "a command or option name uses a different case style from the rest of the tool, or an option's name differs from its long flag",
        "use one style (kebab-case, snake_case or camelCase) for all command names and one for all option names, and name each option after its long flag",
    ),
    rule(
        "duplicate-flag-meaning",
        W,
        "the same flag means different options in different commands",
        "use one meaning per flag across the tool, or rename one of the options",
    ),
    rule(
        "destructive-without-reversible",
        W,
        "a destructive command does not say whether it can be undone",
        "state `reversible` beside `destructive`",
    ),
    rule(
        "billable-without-idempotent",
        W,
        "a billable command does not say it is not idempotent, so a retry may charge twice",
        "state `idempotent: false` beside `cost.billable`",
    ),
    rule(
        "trust-source",
        W,
        "`trust` claims more than the document can back",
        "make `trust.source` and `trust.verified` match what the document carries",
    ),
    rule(
        "binary-missing",
        W,
        "the binary the metadata describes is not on PATH (with --check-binary)",
        "install the tool, or check `name` / `binary.name`",
    ),
    rule(
        "agent-contract",
        E,
        "`TOOL --agent` broke the --agent contract (with --exec)",
        "exit 0 within the timeout and print exactly one JSON document on stdout",
    ),
    rule(
        "type-could-be-narrower",
        W,
        "a string option or argument looks like a file, directory, URL or number",
        "use the narrower type (file, directory, url, integer) so agents and exporters know the shape",
    ),
    rule(
        "enum-values-undescribed",
        W,
        "an enum's description does not name its values",
        "list the values in the description",
    ),
    rule(
        "examples-missing",
        W,
        "a command with many options has no examples and no pattern uses it",
        "add `examples` (typical command lines) or a pattern that uses the command",
    ),
    rule(
        "description-truncated",
        W,
        "a description plus its safety suffix is longer than the 1,024-character provider limit",
        "shorten the description; exporters cut it and agents lose the end",
    ),
    rule(
        "name-flattens-badly",
        W,
        "a tool or command name does not survive flattening to a provider tool name",
        "use letters, digits, `_` and `-` and keep tool + command path within 64 characters",
    ),
];

/// One finding with its optional mechanical fix.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The diagnostic (lint rule id, pointer, message, hint).
    pub diagnostic: Diagnostic,
    /// The edit `--fix` makes.
    pub fix: Option<Fix>,
}

fn info(id: &str) -> &'static RuleInfo {
    LINT_RULES
        .iter()
        .find(|r| r.id == id)
        .unwrap_or_else(|| panic!("lint rule {id} is not in LINT_RULES"))
}

/// A finding of `rule` with the catalogue severity and hint.
pub(crate) fn finding(
    rule: &str,
    pointer: impl Into<String>,
    message: impl Into<String>,
) -> Finding {
    let info = info(rule);
    Finding {
        diagnostic: Diagnostic {
            severity: info.severity,
            rule: rule.to_string(),
            pointer: pointer.into(),
            line: None,
            column: None,
            message: message.into(),
            hint: Some(info.hint.to_string()),
            span: None,
        },
        fix: None,
    }
}

impl Finding {
    fn fix(mut self, fix: Fix) -> Self {
        if let Some(hint) = &mut self.diagnostic.hint {
            hint.push_str(&format!("; --fix will {}", fix.describe()));
        }
        self.fix = Some(fix);
        self
    }

    fn hint(mut self, hint: impl Into<String>) -> Self {
        self.diagnostic.hint = Some(hint.into());
        self
    }
}

/// The JSON pointer of a command path (`["pr", "create"]` → `/commands/pr/commands/create`).
pub(crate) fn command_pointer(path: &[&str]) -> String {
    let mut out = String::new();
    for seg in path {
        out.push_str("/commands/");
        out.push_str(&escape_token(seg));
    }
    out
}

/// How a command is named in messages: the tool name and the path.
fn shown(tool: &str, path: &[&str]) -> String {
    let segs: Vec<&str> = path.iter().copied().filter(|s| !s.is_empty()).collect();
    if segs.is_empty() {
        format!("`{tool}`")
    } else {
        format!("`{tool} {}`", segs.join(" "))
    }
}

/// Something with a description: the tool, a command, an option, an argument.
struct Described<'a> {
    pointer: String,
    name: &'a str,
    what: String,
    description: &'a str,
}

/// A parameter (option or argument) with where it sits.
struct Param<'a> {
    pointer: String,
    what: String,
    name: &'a str,
    kind: &'a ParamType,
    description: &'a str,
    values: Option<&'a Vec<Value>>,
}

fn opt_param<'a>(o: &'a Opt, pointer: String, owner: &str) -> Param<'a> {
    Param {
        what: format!("option `{}` of {owner}", o.long_flag().unwrap_or(&o.name)),
        pointer,
        name: &o.name,
        kind: &o.kind,
        description: &o.description,
        values: o.values.as_ref(),
    }
}

fn arg_param<'a>(a: &'a Argument, pointer: String, owner: &str) -> Param<'a> {
    Param {
        what: format!("argument `{}` of {owner}", a.name),
        pointer,
        name: &a.name,
        kind: &a.kind,
        description: &a.description,
        values: a.values.as_ref(),
    }
}

/// Runs every lint rule over a valid metadata or shim document.
pub fn check(meta: &Metadata, kind: Kind, config: &Config) -> Vec<Finding> {
    let tool = meta.tool_name().unwrap_or("tool");
    let entries = meta.walk();
    let mut out = Vec::new();

    let mut params: Vec<Param<'_>> = Vec::new();
    for (i, o) in meta.global_opts().iter().enumerate() {
        params.push(opt_param(
            o,
            format!("/globalOptions/{i}"),
            &format!("`{tool}` (global)"),
        ));
    }
    for e in &entries {
        let ptr = command_pointer(&e.path);
        let owner = shown(tool, &e.path);
        for (i, o) in e.command.opts().iter().enumerate() {
            params.push(opt_param(o, format!("{ptr}/options/{i}"), &owner));
        }
        for (i, a) in e.command.args().iter().enumerate() {
            params.push(arg_param(a, format!("{ptr}/arguments/{i}"), &owner));
        }
    }

    effects_rules(meta, tool, &entries, &mut out);
    description_quality(meta, tool, &entries, &params, config, &mut out);
    required_by_context(meta, &mut out);
    naming_inconsistent(meta, tool, &entries, &mut out);
    duplicate_flag_meaning(meta, tool, &entries, &mut out);
    trust_source(meta, kind, &mut out);
    type_could_be_narrower(&params, &mut out);
    enum_values_undescribed(&params, &mut out);
    examples_missing(meta, tool, &entries, config, &mut out);
    description_truncated(meta, tool, &entries, &mut out);
    name_flattens_badly(tool, &entries, &mut out);
    out
}

/// Every `effects` object in the document: (pointer, effects, the effects in force there).
fn effects_objects<'a>(
    meta: &'a Metadata,
    entries: &'a [CommandEntry<'a>],
) -> Vec<(String, &'a Effects, Effects, String)> {
    let tool = meta.tool_name().unwrap_or("tool");
    let mut out = Vec::new();
    if let Some(e) = &meta.effects {
        out.push(("/effects".to_string(), e, e.clone(), format!("`{tool}`")));
    }
    for entry in entries {
        if let Some(e) = &entry.command.effects {
            out.push((
                format!("{}/effects", command_pointer(&entry.path)),
                e,
                meta.effective_effects(entry),
                shown(tool, &entry.path),
            ));
        }
    }
    out
}

fn effects_rules(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    out: &mut Vec<Finding>,
) {
    for (ptr, own, effective, who) in effects_objects(meta, entries) {
        effects_object(&ptr, own, &effective, &who, out);
    }
    effects_unstated(meta, tool, entries, out);
}

/// One effects object (`own`, of `who` at `ptr`; `effective` with what it inherits):
/// empty, destructive without saying whether it can be undone, billable without saying
/// it is not idempotent, contradicting itself.
fn effects_object(
    ptr: &str,
    own: &Effects,
    effective: &Effects,
    who: &str,
    out: &mut Vec<Finding>,
) {
    if *own == Effects::default() {
        out.push(
            finding(
                "empty-effects",
                ptr,
                format!("the effects of {who} are an empty object: they state nothing"),
            )
            .fix(Fix::Remove {
                pointer: ptr.to_string(),
            }),
        );
    }
    if own.destructive == Some(true) && effective.reversible.is_none() {
        out.push(
            finding(
                "destructive-without-reversible",
                format!("{ptr}/destructive"),
                format!("{who} is destructive but does not say whether it can be undone"),
            )
            .fix(Fix::Set {
                pointer: format!("{ptr}/reversible"),
                value: json!(false),
            }),
        );
    }
    if own.cost.as_ref().and_then(|c| c.billable) == Some(true) {
        match effective.idempotent {
            None => out.push(
                finding(
                    "billable-without-idempotent",
                    format!("{ptr}/cost/billable"),
                    format!("{who} is billable but does not say it is not idempotent"),
                )
                .fix(Fix::Set {
                    pointer: format!("{ptr}/idempotent"),
                    value: json!(false),
                }),
            ),
            Some(true) => out.push(
                finding(
                    "billable-without-idempotent",
                    format!("{ptr}/cost/billable"),
                    format!(
                        "{who} is billable and claims to be idempotent: an agent would retry it and may be charged again"
                    ),
                )
                .hint("set `idempotent: false` unless a retry is really free of charge"),
            ),
            Some(false) => {}
        }
    }
    contradictions(ptr, own, effective, who, out);
}

/// Runnable commands (or the tool itself, when it has no commands) whose
/// destructiveness is unknown.
fn effects_unstated(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    out: &mut Vec<Finding>,
) {
    let unstated = |effects: &Effects| effects.destructive.is_none();
    if entries.is_empty() {
        let effects = meta.effects.clone().unwrap_or_default();
        if unstated(&effects) {
            let ptr = if meta.effects.is_some() {
                "/effects"
            } else {
                ""
            };
            out.push(finding(
                "effects-unstated",
                ptr,
                format!(
                    "`{tool}` does not say whether it is destructive: agents must confirm every call"
                ),
            ));
        }
    }
    for entry in entries.iter().filter(|e| e.command.is_runnable()) {
        let effective = meta.effective_effects(entry);
        if unstated(&effective) {
            let base = command_pointer(&entry.path);
            let ptr = if entry.command.effects.is_some() {
                format!("{base}/effects")
            } else {
                base
            };
            let what = if effective == Effects::default() {
                "states no effects at all (not on the command, a parent or the tool)"
            } else {
                "does not say whether it is destructive"
            };
            out.push(finding(
                "effects-unstated",
                ptr,
                format!(
                    "{} {what}: agents must confirm every call",
                    shown(tool, &entry.path)
                ),
            ));
        }
    }
}

fn contradictions(
    ptr: &str,
    own: &Effects,
    effective: &Effects,
    who: &str,
    out: &mut Vec<Finding>,
) {
    let mut say = |at: &str, message: String| {
        out.push(finding(
            "effects-contradiction",
            format!("{ptr}{at}"),
            format!("{who}: {message}"),
        ))
    };
    // Deleting is not destructive only when it can be undone (trash, git history):
    // deleting for good while claiming not to be destructive is a contradiction.
    let states_deletion = own.deletes.as_ref().is_some_and(|d| !d.is_empty())
        || own.filesystem.as_ref().and_then(|f| f.delete) == Some(true);
    if effective.destructive == Some(false)
        && effective.reversible == Some(false)
        && states_deletion
        && (own.destructive.is_some() || own.reversible.is_some() || effective.deletes_files())
    {
        say(
            if own.deletes.as_ref().is_some_and(|d| !d.is_empty()) {
                "/deletes"
            } else {
                "/filesystem/delete"
            },
            "deletes for good (not reversible) but says it is not destructive".into(),
        );
    }
    if own.destructive == Some(true) && effective.reversible == Some(true) {
        say(
            "/reversible",
            "is destructive (destroys data for good) and reversible at once".into(),
        );
    }
    if let Some(cost) = &own.cost
        && cost.billable == Some(true)
        && cost.estimate.as_deref() == Some("free")
    {
        say(
            "/cost",
            "is billable but its cost estimate is \"free\"".into(),
        );
    }
    if effective.is_read_only() && effective.filesystem.as_ref().and_then(|f| f.write) == Some(true)
    {
        say(
            "/filesystem/write",
            "writes files but its other effects say it changes nothing".into(),
        );
    }
}

const PLACEHOLDERS: &[&str] = &[
    "todo",
    "tbd",
    "fixme",
    "xxx",
    "description",
    "n/a",
    "na",
    "none",
    "...",
    "…",
    "-",
    "placeholder",
    "lorem ipsum",
];

fn normalized(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

fn description_quality(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    params: &[Param<'_>],
    config: &Config,
    out: &mut Vec<Finding>,
) {
    let mut items = vec![Described {
        pointer: String::new(),
        name: tool,
        what: format!("the description of `{tool}`"),
        description: &meta.description,
    }];
    for e in entries {
        items.push(Described {
            pointer: command_pointer(&e.path),
            name: e.path.last().copied().unwrap_or(""),
            what: format!("the description of {}", shown(tool, &e.path)),
            description: &e.command.description,
        });
    }
    for p in params {
        items.push(Described {
            pointer: p.pointer.clone(),
            name: p.name,
            what: format!("the description of {}", p.what),
            description: p.description,
        });
    }
    for item in items {
        let ptr = format!("{}/description", item.pointer);
        let text = item.description.trim();
        let lower = text.to_lowercase();
        let trimmed_lower = lower.trim_end_matches(['.', '!']);
        let problem = if text.is_empty() {
            Some("is empty".to_string())
        } else if PLACEHOLDERS.contains(&trimmed_lower) || lower.starts_with("todo") {
            Some(format!("is a placeholder (\"{text}\")"))
        } else if !item.name.is_empty() && normalized(text) == normalized(item.name) {
            Some(format!("only repeats the name (\"{text}\")"))
        } else if text.chars().count() < config.min_description_length {
            Some(format!(
                "is {} characters long (\"{text}\"), shorter than {}",
                text.chars().count(),
                config.min_description_length
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            out.push(finding(
                "description-quality",
                ptr,
                format!("{} {problem}", item.what),
            ));
        } else if text.len() != item.description.len() {
            out.push(
                finding(
                    "description-quality",
                    ptr.clone(),
                    format!("{} starts or ends with white space", item.what),
                )
                .fix(Fix::Set {
                    pointer: ptr,
                    value: json!(text),
                }),
            );
        }
    }
}

fn required_by_context(meta: &Metadata, out: &mut Vec<Finding>) {
    if meta.partial == Some(true) {
        for (field, have) in [
            ("totalCommands", meta.total_commands.is_some()),
            ("filter", meta.filter.is_some()),
        ] {
            if !have {
                out.push(finding(
                    "required-by-context",
                    "/partial",
                    format!(
                        "a partial document (`partial: true`) should say `{field}`, so agents know what they are missing"
                    ),
                ));
            }
        }
    }
    if let Some(omitted) = &meta.omitted
        && omitted.safety_assumption.is_none()
    {
        out.push(finding(
            "required-by-context",
            "/omitted",
            "`omitted` does not give a `safetyAssumption` for what was left out (agents must assume `unknown`)",
        ));
    }
    if let Some(auth) = &meta.authentication {
        if auth.required == Some(true) && auth.methods.as_ref().is_none_or(|m| m.is_empty()) {
            out.push(finding(
                "required-by-context",
                "/authentication/required",
                "authentication is required but no `methods` say how to authenticate",
            ));
        }
        for (i, m) in auth.methods.iter().flatten().enumerate() {
            if matches!(m.kind.as_str(), "token" | "api-key") && m.env_var.is_none() {
                out.push(finding(
                    "required-by-context",
                    format!("/authentication/methods/{i}"),
                    format!(
                        "authentication method `{}` does not name the `envVar` that holds the secret",
                        m.kind
                    ),
                ));
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Style {
    Kebab,
    Snake,
    Camel,
}

impl Style {
    fn of(name: &str) -> Option<Style> {
        let has_upper = name.chars().any(|c| c.is_ascii_uppercase());
        let has_lower = name.chars().any(|c| c.is_ascii_lowercase());
        match (
            name.contains('-'),
            name.contains('_'),
            has_upper && has_lower,
        ) {
            (true, false, false) => Some(Style::Kebab),
            (false, true, false) => Some(Style::Snake),
            (false, false, true) => Some(Style::Camel),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Style::Kebab => "kebab-case",
            Style::Snake => "snake_case",
            Style::Camel => "camelCase",
        }
    }
}

/// Reports names whose style is not the tool's majority style (among names that have
/// a style at all: one lowercase word fits every style).
fn report_minority(names: &[(String, String, String)], kind: &str, out: &mut Vec<Finding>) {
    let mut counts: BTreeMap<Style, usize> = BTreeMap::new();
    for (name, _, _) in names {
        if let Some(s) = Style::of(name) {
            *counts.entry(s).or_default() += 1;
        }
    }
    if counts.len() < 2 {
        return;
    }
    let (&major, &n) = counts
        .iter()
        .max_by_key(|(s, n)| (**n, std::cmp::Reverse(**s)))
        .expect("two styles");
    for (name, pointer, who) in names {
        if let Some(s) = Style::of(name)
            && s != major
        {
            out.push(finding(
                "naming-inconsistent",
                pointer.clone(),
                format!(
                    "{kind} name `{name}` ({who}) is {}, but {n} other {kind} names are {}",
                    s.as_str(),
                    major.as_str()
                ),
            ));
        }
    }
}

fn naming_inconsistent(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    out: &mut Vec<Finding>,
) {
    let commands: Vec<(String, String, String)> = entries
        .iter()
        .filter_map(|e| {
            let name = e.path.last()?;
            (!name.is_empty()).then(|| {
                (
                    name.to_string(),
                    command_pointer(&e.path),
                    shown(tool, &e.path),
                )
            })
        })
        .collect();
    report_minority(&commands, "command", out);
    let mut options: Vec<(String, String, String)> = meta
        .global_opts()
        .iter()
        .enumerate()
        .map(|(i, o)| {
            (
                o.name.clone(),
                format!("/globalOptions/{i}/name"),
                "global".into(),
            )
        })
        .collect();
    for e in entries {
        for (i, o) in e.command.opts().iter().enumerate() {
            options.push((
                o.name.clone(),
                format!("{}/options/{i}/name", command_pointer(&e.path)),
                format!("of {}", shown(tool, &e.path)),
            ));
        }
    }
    report_minority(&options, "option", out);
    for e in entries {
        for (i, o) in e.command.opts().iter().enumerate() {
            name_matches_long_flag(
                o,
                format!("{}/options/{i}/name", command_pointer(&e.path)),
                &format!("of {}", shown(tool, &e.path)),
                out,
            );
        }
    }
    for (i, o) in meta.global_opts().iter().enumerate() {
        name_matches_long_flag(o, format!("/globalOptions/{i}/name"), "global", out);
    }
}

/// Agents pass an option by its `name`, people and docs spell it by its long flag: when
/// the two name different things (`force` spelled `--yes`), one side is misled.
/// Compared without case and punctuation, and `--no-x` matches `x`.
fn name_matches_long_flag(o: &Opt, pointer: String, who: &str, out: &mut Vec<Finding>) {
    fn squash(s: &str) -> String {
        s.chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect()
    }
    let long: Vec<&str> = o
        .flags
        .iter()
        .filter_map(|f| f.strip_prefix("--"))
        .map(|f| f.split(['=', ' ', '[', '<']).next().unwrap_or(f))
        .filter(|f| !f.is_empty())
        .collect();
    if long.is_empty() {
        return;
    }
    let name = squash(&o.name);
    let fits = long.iter().any(|f| {
        let f = squash(f);
        f == name
            || f.strip_prefix("no") == Some(name.as_str())
            || name.strip_prefix("no") == Some(f.as_str())
    });
    if !fits {
        out.push(finding(
            "naming-inconsistent",
            pointer,
            format!(
                "option `{}` ({who}) is spelled `--{}` on the command line: agents see one name, people the other",
                o.name,
                long.join("`, `--")
            ),
        ));
    }
}

fn duplicate_flag_meaning(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    out: &mut Vec<Finding>,
) {
    // flag → first (option name, pointer, command shown)
    let mut first: BTreeMap<&str, (&str, String, String)> = BTreeMap::new();
    let globals: HashSet<&str> = meta
        .global_opts()
        .iter()
        .flat_map(|o| o.flags.iter().map(String::as_str))
        .collect();
    let mut reported: HashSet<(String, String)> = HashSet::new();
    for e in entries {
        for (i, o) in e.command.opts().iter().enumerate() {
            for (k, flag) in o.flags.iter().enumerate() {
                if globals.contains(flag.as_str()) || !flag.starts_with("--") {
                    // validate reports a clash with a global option; short flags are
                    // reused by convention (`-n`, `-f`), long ones should not be.
                    continue;
                }
                let ptr = format!("{}/options/{i}/flags/{k}", command_pointer(&e.path));
                match first.get(flag.as_str()) {
                    None => {
                        first.insert(flag, (&o.name, ptr, shown(tool, &e.path)));
                    }
                    Some((name, _, cmd)) if *name != o.name => {
                        if reported.insert((flag.clone(), o.name.clone())) {
                            out.push(finding(
                                "duplicate-flag-meaning",
                                ptr,
                                format!(
                                    "{flag} means `{}` in {} but `{name}` in {cmd}",
                                    o.name,
                                    shown(tool, &e.path)
                                ),
                            ));
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
}

fn trust_source(meta: &Metadata, kind: Kind, out: &mut Vec<Finding>) {
    let Some(trust) = &meta.trust else { return };
    match trust.source.as_deref() {
        None => out.push(finding(
            "trust-source",
            "/trust",
            "`trust` does not say its `source` (native, vendor, org, community, user, inferred)",
        )),
        Some("native") if kind == Kind::Shim || meta.binary.is_some() => out.push(finding(
            "trust-source",
            "/trust/source",
            "a shim claims `source: native`, but native metadata comes from the tool's own --agent",
        )),
        Some("inferred") if trust.verified == Some(true) => out.push(finding(
            "trust-source",
            "/trust/verified",
            "inferred metadata (guessed from --help) claims to be verified",
        )),
        _ => {}
    }
    if trust.verified == Some(true) && trust.integrity.is_none() && trust.shim_integrity.is_none() {
        out.push(finding(
            "trust-source",
            "/trust/verified",
            "`verified: true` without `integrity` or `shimIntegrity`: nothing lets an agent check the claim",
        ));
    }
}

/// The narrower type a parameter name suggests, if any.
fn suggested_type(name: &str, description: &str) -> Option<ParamType> {
    let n = name.to_ascii_lowercase().replace('-', "_");
    let last = n.rsplit('_').next().unwrap_or(&n);
    let integer_name = matches!(
        n.as_str(),
        "n" | "num" | "count" | "number" | "port" | "jobs" | "limit" | "depth" | "retries"
    ) || ["max_", "min_", "num_"].iter().any(|p| n.starts_with(p))
        && matches!(
            last,
            "count" | "depth" | "lines" | "size" | "jobs" | "retries"
        );
    if integer_name {
        return Some(ParamType::Integer);
    }
    let desc = description.trim_start();
    let metavar = desc
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .next()
        .filter(|w| w.len() > 1 && w.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .unwrap_or("");
    let word = if metavar.is_empty() {
        last.to_string()
    } else {
        metavar.to_ascii_lowercase()
    };
    match word.as_str() {
        "file" | "filename" | "filepath" | "path" if word != "path" || n.contains("file") => {
            Some(ParamType::File)
        }
        "dir" | "directory" | "folder" | "dirname" => Some(ParamType::Directory),
        "url" | "uri" | "endpoint" => Some(ParamType::Url),
        "n" | "num" | "count" | "number" | "port" => Some(ParamType::Integer),
        _ => None,
    }
}

fn type_could_be_narrower(params: &[Param<'_>], out: &mut Vec<Finding>) {
    for p in params {
        if *p.kind != ParamType::String || p.values.is_some() {
            continue;
        }
        if let Some(t) = suggested_type(p.name, p.description) {
            out.push(finding(
                "type-could-be-narrower",
                format!("{}/type", p.pointer),
                format!(
                    "{} is a string, but its name suggests type `{}`",
                    p.what,
                    t.as_str()
                ),
            ));
        }
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn enum_values_undescribed(params: &[Param<'_>], out: &mut Vec<Finding>) {
    for p in params {
        let Some(values) = p.values.filter(|v| !v.is_empty()) else {
            continue;
        };
        let texts: Vec<String> = values.iter().map(value_text).collect();
        let lower = p.description.to_lowercase();
        let missing: Vec<&String> = texts
            .iter()
            .filter(|t| !lower.contains(&t.to_lowercase()))
            .collect();
        if missing.is_empty() {
            continue;
        }
        let base = p.description.trim_end();
        let sep = if base.is_empty() || base.ends_with(['.', '!', '?', ':']) {
            " "
        } else {
            ". "
        };
        let fixed = format!("{base}{sep}One of: {}.", texts.join(", "))
            .trim_start()
            .to_string();
        out.push(
            finding(
                "enum-values-undescribed",
                format!("{}/description", p.pointer),
                format!(
                    "the description of {} does not mention {} of its values ({}); some providers drop the enum and only keep the description",
                    p.what,
                    missing.len(),
                    missing
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .fix(Fix::Set {
                pointer: format!("{}/description", p.pointer),
                value: json!(fixed),
            }),
        );
    }
}

fn examples_missing(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    config: &Config,
    out: &mut Vec<Finding>,
) {
    let steps: Vec<&str> = meta
        .patterns
        .iter()
        .flatten()
        .flat_map(|p| p.steps.iter().flatten())
        .map(|s| s.command.as_str())
        .collect();
    for e in entries {
        let c: &Command = e.command;
        let count = c.opts().len() + c.args().len();
        if count < config.examples_threshold || c.examples.as_ref().is_some_and(|x| !x.is_empty()) {
            continue;
        }
        let path = e.path_string();
        let line = format!("{tool} {path}");
        if steps
            .iter()
            .any(|s| s.trim_start().starts_with(line.trim()))
        {
            continue;
        }
        out.push(finding(
            "examples-missing",
            command_pointer(&e.path),
            format!(
                "{} takes {count} options and arguments but has no `examples` and no pattern uses it",
                shown(tool, &e.path)
            ),
        ));
    }
}

fn description_truncated(
    meta: &Metadata,
    tool: &str,
    entries: &[CommandEntry<'_>],
    out: &mut Vec<Finding>,
) {
    for e in entries {
        let suffix = safety::suffix(&meta.effective_effects(e));
        let text = e.command.description.trim();
        let sep = usize::from(!suffix.is_empty() && !text.is_empty());
        let total = text.chars().count() + sep + suffix.chars().count();
        if total > safety::MAX_DESCRIPTION {
            out.push(finding(
                "description-truncated",
                format!("{}/description", command_pointer(&e.path)),
                format!(
                    "the description of {} is {} characters{}; providers accept {}, so exporters cut {} characters from its end",
                    shown(tool, &e.path),
                    text.chars().count(),
                    if suffix.is_empty() {
                        String::new()
                    } else {
                        format!(" plus the safety suffix {suffix}")
                    },
                    safety::MAX_DESCRIPTION,
                    total - safety::MAX_DESCRIPTION
                ),
            ));
        }
    }
}

fn name_flattens_badly(tool: &str, entries: &[CommandEntry<'_>], out: &mut Vec<Finding>) {
    for e in entries.iter().filter(|e| e.command.is_runnable()) {
        let mut raw = tool.to_string();
        for seg in e.path.iter().filter(|s| !s.is_empty()) {
            raw.push('_');
            raw.push_str(seg);
        }
        let flat = crate::validate::rules::flatten_name(tool, &e.path);
        let problem = if raw.chars().count() > MAX_NAME {
            Some(format!(
                "flattens to `{flat}`, {} characters; providers accept {MAX_NAME}, so exporters shorten it to a hashed name",
                raw.chars().count()
            ))
        } else if flat != raw {
            Some(format!(
                "flattens to `{flat}`: characters outside letters, digits, `_` and `-` are replaced, so the name an agent sees differs from the command"
            ))
        } else if !is_valid_tool_name(&flat) {
            Some(format!(
                "flattens to `{flat}`, which providers reject (it must start with a letter or `_`)"
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            out.push(finding(
                "name-flattens-badly",
                command_pointer(&e.path),
                format!("{} {problem}", shown(tool, &e.path)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_ids_are_unique_and_disjoint_from_validate() {
        let mut seen = HashSet::new();
        for r in LINT_RULES {
            assert!(seen.insert(r.id), "{} twice", r.id);
            assert!(
                crate::validate::rules::rule_info(r.id).is_none(),
                "{} is also a validate rule",
                r.id
            );
        }
    }

    #[test]
    fn styles() {
        assert_eq!(Style::of("dry-run"), Some(Style::Kebab));
        assert_eq!(Style::of("dry_run"), Some(Style::Snake));
        assert_eq!(Style::of("dryRun"), Some(Style::Camel));
        assert_eq!(Style::of("run"), None);
    }

    #[test]
    fn suggested_types() {
        assert_eq!(suggested_type("output-file", ""), Some(ParamType::File));
        assert_eq!(suggested_type("x", "FILE to read"), Some(ParamType::File));
        assert_eq!(suggested_type("limit", ""), Some(ParamType::Integer));
        assert_eq!(suggested_type("max-count", ""), Some(ParamType::Integer));
        assert_eq!(suggested_type("ignore-matching-lines", ""), None);
        assert_eq!(suggested_type("base-url", ""), Some(ParamType::Url));
        assert_eq!(suggested_type("message", "Commit message"), None);
        assert_eq!(suggested_type("path", ""), None);
    }

    #[test]
    fn option_names_are_checked_against_their_long_flags() {
        let meta: Metadata = serde_json::from_value(json!({
            "atip": {"version": "0.6"}, "name": "t", "version": "1", "description": "A test tool",
            "globalOptions": [{"name": "verbose", "flags": ["-v", "--verbose"], "type": "boolean", "description": "More output"}],
            "commands": {"rm": {"description": "Remove items", "options": [
                {"name": "force", "flags": ["-y", "--yes"], "type": "boolean", "description": "Do not ask"},
                {"name": "dry_run", "flags": ["--dry-run"], "type": "boolean", "description": "Only show"},
                {"name": "color", "flags": ["--no-color"], "type": "boolean", "description": "No colours"},
                {"name": "n", "flags": ["-n"], "type": "integer", "description": "How many"},
                {"name": "out", "flags": ["--output=FILE"], "type": "string", "description": "Where to write"}
            ]}}
        }))
        .unwrap();
        let found: Vec<(String, String)> = check(&meta, Kind::Metadata, &Config::default())
            .into_iter()
            .filter(|f| f.diagnostic.rule == "naming-inconsistent")
            .map(|f| (f.diagnostic.pointer, f.diagnostic.message))
            .collect();
        assert_eq!(found.len(), 2, "{found:#?}");
        assert_eq!(found[0].0, "/commands/rm/options/0/name");
        assert!(
            found[0]
                .1
                .contains("`force` (of `t rm`) is spelled `--yes`"),
            "{}",
            found[0].1
        );
        assert_eq!(found[1].0, "/commands/rm/options/4/name");
        assert!(found[1].1.contains("spelled `--output`"), "{}", found[1].1);
    }

    #[test]
    fn command_pointers_escape() {
        assert_eq!(command_pointer(&["a/b", "c"]), "/commands/a~1b/commands/c");
        assert_eq!(command_pointer(&[""]), "/commands/");
    }
}
