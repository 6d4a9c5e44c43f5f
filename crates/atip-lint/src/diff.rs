//! `atip diff`: what changed between two versions of a tool's metadata, and what it breaks.
//!
//! Owns the comparison of two [`Metadata`] documents, command by command: commands,
//! options, flags and arguments removed, renamed or added; options and arguments that
//! became required; narrowed types; removed enum values; changed defaults; and effects
//! that became less safe (their own class, since they change what an agent may do
//! unasked). Every [`Change`] names the command by its full path (`gh pr create`).
//! Submodules: `load` (files, stdin, `TOOL --agent`), `render` (text, Markdown),
//! `semver` (version advice).
//!
//! Must not print or choose exit codes.

pub mod load;
pub mod render;
pub mod semver;

use crate::model::{Argument, CommandEntry, Effects, Metadata, Opt, ParamType};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};

/// How much a change matters to agents that rely on the old metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Class {
    /// A call that worked before may fail now (or mean something else).
    Breaking,
    /// The command may now do something less safe: agents may run it unasked.
    Effects,
    /// Additions and relaxations: old calls keep working.
    NonBreaking,
}

/// One difference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Breaking, effects or non-breaking.
    pub class: Class,
    /// Stable kind id, e.g. `option-removed` (see `spec/diff.md`).
    pub kind: &'static str,
    /// The command's full path, tool name first (`gh pr create`); the tool name alone
    /// for tool-level changes and global options.
    pub command: String,
    /// What in the command: `option --state`, `argument <id>`, `effects.destructive`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// One sentence, naming the command and the target.
    pub message: String,
    /// The old value, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old: Option<Value>,
    /// The new value, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Value>,
}

struct Differ<'a> {
    tool: &'a str,
    out: Vec<Change>,
}

fn full(tool: &str, path: &[&str]) -> String {
    let segs: Vec<&str> = path.iter().copied().filter(|s| !s.is_empty()).collect();
    if segs.is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {}", segs.join(" "))
    }
}

fn opt_label(o: &Opt) -> String {
    format!("option {}", o.long_flag().unwrap_or(&o.name))
}

fn arg_label(a: &Argument) -> String {
    format!("argument <{}>", a.name)
}

impl Differ<'_> {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        class: Class,
        kind: &'static str,
        command: &str,
        target: Option<String>,
        message: String,
        old: Option<Value>,
        new: Option<Value>,
    ) {
        let message = match &target {
            Some(t) => format!("{command}: {t} {message}"),
            None => format!("{command}: {message}"),
        };
        self.out.push(Change {
            class,
            kind,
            command: command.to_string(),
            target,
            message,
            old,
            new,
        });
    }
}

/// Command signature for rename detection: option and argument names, subcommand names.
fn signature(entry: &CommandEntry<'_>) -> Option<Vec<String>> {
    let c = entry.command;
    let mut sig: Vec<String> = c.opts().iter().map(|o| format!("o:{}", o.name)).collect();
    sig.extend(c.args().iter().map(|a| format!("a:{}", a.name)));
    sig.extend(c.subcommands().map(|(n, _)| format!("c:{n}")));
    sig.sort();
    (!sig.is_empty()).then_some(sig)
}

/// Compares two documents; changes come in command order (old document's order, then
/// additions), breaking and effects first within a command.
pub(crate) fn diff(old: &Metadata, new: &Metadata) -> Vec<Change> {
    let tool = new.tool_name().or(old.tool_name()).unwrap_or("tool");
    let mut d = Differ {
        tool,
        out: Vec::new(),
    };
    let old_entries = old.walk();
    let new_entries = new.walk();
    let key = |e: &CommandEntry<'_>| e.path.join("\u{1f}");
    let old_by: BTreeMap<String, &CommandEntry<'_>> =
        old_entries.iter().map(|e| (key(e), e)).collect();
    let new_by: BTreeMap<String, &CommandEntry<'_>> =
        new_entries.iter().map(|e| (key(e), e)).collect();

    // Renames: a removed and an added command under the same parent with the same
    // (non-empty) signature, or the same description.
    let removed: Vec<&CommandEntry<'_>> = old_entries
        .iter()
        .filter(|e| !new_by.contains_key(&key(e)))
        .collect();
    let added: Vec<&CommandEntry<'_>> = new_entries
        .iter()
        .filter(|e| !old_by.contains_key(&key(e)))
        .collect();
    let (renamed, used) = renames(&removed, &added);
    let renamed_old: HashSet<String> = renamed.iter().map(|(o, _)| key(o)).collect();

    globals(&mut d, old, new);
    if old_entries.is_empty() && new_entries.is_empty() {
        effects(
            &mut d,
            tool,
            &old.effects.clone().unwrap_or_default(),
            &new.effects.clone().unwrap_or_default(),
        );
    }
    for o in &old_entries {
        let k = key(o);
        let command = full(tool, &o.path);
        if let Some(n) = new_by.get(&k) {
            command_pair(&mut d, old, new, o, n, &command);
        } else if let Some((_, n)) = renamed.iter().find(|(r, _)| key(r) == k) {
            let new_command = full(tool, &n.path);
            d.renamed(&command, &new_command);
            command_pair(&mut d, old, new, o, n, &new_command);
        } else if !under_changed(&o.path, &new_by, &renamed_old) {
            d.push(
                Class::Breaking,
                "command-removed",
                &command,
                None,
                removed_message(o),
                None,
                None,
            );
        }
    }
    for n in &added {
        if used.contains(&key(n)) || under_changed(&n.path, &old_by, &used) {
            continue;
        }
        d.push(
            Class::NonBreaking,
            "command-added",
            &full(tool, &n.path),
            None,
            "was added".into(),
            None,
            None,
        );
    }
    d.out
}

/// Whether an ancestor of `path` is missing from `other` (the other document's commands)
/// or in `moved` (renamed): the command is then reported with its ancestor, not alone.
fn under_changed<V>(path: &[&str], other: &BTreeMap<String, V>, moved: &HashSet<String>) -> bool {
    (1..path.len()).any(|n| {
        let k = path[..n].join("\u{1f}");
        !other.contains_key(&k) || moved.contains(&k)
    })
}

/// `was removed`, with how many subcommands went with it.
fn removed_message(o: &CommandEntry<'_>) -> String {
    match o.command.subcommands().count() {
        0 => "was removed".to_owned(),
        1 => "was removed (with its 1 subcommand)".to_owned(),
        n => format!("was removed (with its {n} subcommands)"),
    }
}

impl Differ<'_> {
    /// `command-renamed`: breaking, old and new command path as values.
    fn renamed(&mut self, command: &str, new_command: &str) {
        self.push(
            Class::Breaking,
            "command-renamed",
            command,
            None,
            format!("was renamed to `{new_command}`"),
            Some(Value::from(command)),
            Some(Value::from(new_command)),
        );
    }
}

/// A command pair (removed, added) and the keys of the added ones taken: the renames. A
/// removed command is renamed to an added one under the same parent when exactly one
/// such command has its (non-empty) signature or its description.
#[allow(clippy::type_complexity)]
fn renames<'e, 'm>(
    removed: &[&'e CommandEntry<'m>],
    added: &[&'e CommandEntry<'m>],
) -> (
    Vec<(&'e CommandEntry<'m>, &'e CommandEntry<'m>)>,
    HashSet<String>,
) {
    let key = |e: &CommandEntry<'_>| e.path.join("\u{1f}");
    let mut renamed = Vec::new();
    let mut used: HashSet<String> = HashSet::new();
    for r in removed {
        let parent = &r.path[..r.path.len() - 1];
        let candidates: Vec<&&CommandEntry<'m>> = added
            .iter()
            .filter(|a| &a.path[..a.path.len() - 1] == parent && !used.contains(&key(a)))
            .filter(|a| {
                signature(a).is_some_and(|s| Some(s) == signature(r))
                    || a.command.description.trim() == r.command.description.trim()
            })
            .collect();
        if let [only] = candidates.as_slice() {
            used.insert(key(only));
            renamed.push((*r, **only));
        }
    }
    (renamed, used)
}

fn globals(d: &mut Differ<'_>, old: &Metadata, new: &Metadata) {
    let tool = d.tool.to_string();
    let command = format!("{tool} (global)");
    options(d, &command, old.global_opts(), new.global_opts(), &[], &[]);
}

fn command_pair(
    d: &mut Differ<'_>,
    old_meta: &Metadata,
    new_meta: &Metadata,
    o: &CommandEntry<'_>,
    n: &CommandEntry<'_>,
    command: &str,
) {
    // Options inherited in the other version are not removed or added, only moved.
    let old_scope: Vec<&Opt> = old_meta.options_in_scope(o);
    let new_scope: Vec<&Opt> = new_meta.options_in_scope(n);
    options(
        d,
        command,
        o.command.opts(),
        n.command.opts(),
        &old_scope,
        &new_scope,
    );
    arguments(d, command, o.command.args(), n.command.args());
    if o.command.is_runnable() || n.command.is_runnable() {
        let oe = old_meta.effective_effects(o);
        let ne = new_meta.effective_effects(n);
        effects(d, command, &oe, &ne);
    }
}

fn options(
    d: &mut Differ<'_>,
    command: &str,
    old: &[Opt],
    new: &[Opt],
    old_scope: &[&Opt],
    new_scope: &[&Opt],
) {
    let gone: Vec<&Opt> = old
        .iter()
        .filter(|o| !new.iter().any(|n| n.name == o.name))
        .filter(|o| !new_scope.iter().any(|n| n.name == o.name))
        .collect();
    let fresh: Vec<&Opt> = new
        .iter()
        .filter(|n| !old.iter().any(|o| o.name == n.name))
        .filter(|n| !old_scope.iter().any(|o| o.name == n.name))
        .collect();
    let (renamed, removed) = renamed(&gone, &fresh);
    for o in removed {
        d.push(
            Class::Breaking,
            "option-removed",
            command,
            Some(opt_label(o)),
            "was removed".into(),
            None,
            None,
        );
    }
    for (o, n) in &renamed {
        d.push(
            Class::Breaking,
            "option-renamed",
            command,
            Some(opt_label(o)),
            format!("was renamed from `{}` to `{}`", o.name, n.name),
            Some(Value::from(o.name.clone())),
            Some(Value::from(n.name.clone())),
        );
        option_pair(d, command, o, n);
    }
    for n in &fresh {
        if !renamed.iter().any(|(_, r)| r.name == n.name) {
            option_added(d, command, n);
        }
    }
    for o in old {
        if let Some(n) = new.iter().find(|n| n.name == o.name) {
            option_pair(d, command, o, n);
        }
    }
}

/// Which of the `gone` options were renamed: each whose flags are shared by exactly one
/// `fresh` option not yet taken by a rename; the others were removed.
fn renamed<'o>(gone: &[&'o Opt], fresh: &[&'o Opt]) -> (Vec<(&'o Opt, &'o Opt)>, Vec<&'o Opt>) {
    let (mut renamed, mut removed): (Vec<(&Opt, &Opt)>, Vec<&Opt>) = (Vec::new(), Vec::new());
    for &o in gone {
        let shared: Vec<&&Opt> = fresh
            .iter()
            .filter(|n| !renamed.iter().any(|(_, r)| r.name == n.name))
            .filter(|n| n.flags.iter().any(|f| o.flags.contains(f)))
            .collect();
        match shared.as_slice() {
            [only] => renamed.push((o, only)),
            _ => removed.push(o),
        }
    }
    (renamed, removed)
}

/// A new option: breaking when required (calls without it now fail).
fn option_added(d: &mut Differ<'_>, command: &str, n: &Opt) {
    let kinds = ("option-added-required", "option-added");
    added(d, command, opt_label(n), n.is_required(), kinds);
}

/// A new option or argument named `label`: breaking when required (calls without it now
/// fail); `kinds` are the change's kinds when required and when not.
fn added(
    d: &mut Differ<'_>,
    command: &str,
    label: String,
    required: bool,
    kinds: (&'static str, &'static str),
) {
    let (class, kind, message) = if required {
        let message = "was added as required: calls without it now fail";
        (Class::Breaking, kinds.0, message)
    } else {
        (Class::NonBreaking, kinds.1, "was added")
    };
    d.push(
        class,
        kind,
        command,
        Some(label),
        message.into(),
        None,
        None,
    );
}

fn option_pair(d: &mut Differ<'_>, command: &str, o: &Opt, n: &Opt) {
    let label = opt_label(n);
    for f in &o.flags {
        if !n.flags.contains(f) {
            d.push(
                Class::Breaking,
                "flag-removed",
                command,
                Some(label.clone()),
                format!("lost the flag {f}"),
                Some(Value::from(f.clone())),
                None,
            );
        }
    }
    for f in &n.flags {
        if !o.flags.contains(f) {
            d.push(
                Class::NonBreaking,
                "flag-added",
                command,
                Some(label.clone()),
                format!("gained the flag {f}"),
                None,
                Some(Value::from(f.clone())),
            );
        }
    }
    required(
        d,
        command,
        &label,
        o.is_required(),
        n.is_required(),
        "option",
    );
    param(
        d,
        command,
        &label,
        (&o.kind, o.values.as_deref(), o.default.as_ref()),
        (&n.kind, n.values.as_deref(), n.default.as_ref()),
    );
    if o.is_variadic() && !n.is_variadic() {
        d.push(
            Class::Breaking,
            "option-no-longer-repeatable",
            command,
            Some(label),
            "can no longer be repeated".into(),
            None,
            None,
        );
    } else if !o.is_variadic() && n.is_variadic() {
        d.push(
            Class::NonBreaking,
            "option-now-repeatable",
            command,
            Some(label),
            "can now be repeated".into(),
            None,
            None,
        );
    }
}

fn required(d: &mut Differ<'_>, command: &str, label: &str, old: bool, new: bool, what: &str) {
    if !old && new {
        d.push(
            Class::Breaking,
            if what == "option" {
                "option-now-required"
            } else {
                "argument-now-required"
            },
            command,
            Some(label.to_string()),
            "is now required: calls without it now fail".into(),
            Some(Value::Bool(false)),
            Some(Value::Bool(true)),
        );
    } else if old && !new {
        d.push(
            Class::NonBreaking,
            if what == "option" {
                "option-now-optional"
            } else {
                "argument-now-optional"
            },
            command,
            Some(label.to_string()),
            "is now optional".into(),
            Some(Value::Bool(true)),
            Some(Value::Bool(false)),
        );
    }
}

/// Whether every value of type `new` is also a value of type `old` (a narrowing when
/// the types differ), and whether every value of `old` is one of `new` (a widening).
fn type_relation(old: &ParamType, new: &ParamType) -> (&'static str, Class) {
    use ParamType::*;
    let stringy = |t: &ParamType| matches!(t, File | Directory | Url | Enum);
    match (old, new) {
        (Integer, Number) => ("type-widened", Class::NonBreaking),
        (o, String) if stringy(o) => ("type-widened", Class::NonBreaking),
        (String, n) if stringy(n) || matches!(n, Integer | Number | Boolean) => {
            ("type-narrowed", Class::Breaking)
        }
        (Number, Integer) => ("type-narrowed", Class::Breaking),
        _ => ("type-changed", Class::Breaking),
    }
}

type ParamFacts<'a> = (&'a ParamType, Option<&'a [Value]>, Option<&'a Value>);

fn param(d: &mut Differ<'_>, command: &str, label: &str, old: ParamFacts<'_>, new: ParamFacts<'_>) {
    let (ot, ov, od) = old;
    let (nt, nv, nd) = new;
    if ot != nt {
        let (kind, class) = type_relation(ot, nt);
        let how = match kind {
            "type-widened" => "was widened",
            "type-narrowed" => "was narrowed",
            _ => "changed",
        };
        d.push(
            class,
            kind,
            command,
            Some(label.to_string()),
            format!("type {how} from {} to {}", ot.as_str(), nt.as_str()),
            Some(Value::from(ot.as_str())),
            Some(Value::from(nt.as_str())),
        );
    }
    enum_values(d, command, label, (ov, nv), ot == nt);
    if od != nd {
        let show = |v: Option<&Value>| v.map_or("none".to_string(), Value::to_string);
        d.push(
            Class::Breaking,
            "default-changed",
            command,
            Some(label.to_string()),
            format!(
                "default changed from {} to {}: calls that leave it out now do something else",
                show(od),
                show(nd)
            ),
            od.cloned(),
            nd.cloned(),
        );
    }
}

/// A parameter's enum, old and new: each value removed (breaking) or added; with the
/// type unchanged, an enum imposed (breaking) or lifted.
fn enum_values(
    d: &mut Differ<'_>,
    command: &str,
    label: &str,
    (ov, nv): (Option<&[Value]>, Option<&[Value]>),
    same_type: bool,
) {
    match (ov, nv) {
        (Some(ov), Some(nv)) => {
            for v in ov.iter().filter(|v| !nv.contains(v)) {
                d.push(
                    Class::Breaking,
                    "enum-value-removed",
                    command,
                    Some(label.to_string()),
                    format!("no longer accepts the value {v}"),
                    Some(v.clone()),
                    None,
                );
            }
            for v in nv.iter().filter(|v| !ov.contains(v)) {
                d.push(
                    Class::NonBreaking,
                    "enum-value-added",
                    command,
                    Some(label.to_string()),
                    format!("accepts the new value {v}"),
                    None,
                    Some(v.clone()),
                );
            }
        }
        (None, Some(nv)) if same_type => d.push(
            Class::Breaking,
            "enum-values-restricted",
            command,
            Some(label.to_string()),
            format!(
                "now only accepts {}",
                nv.iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None,
            Some(Value::from(nv.to_vec())),
        ),
        (Some(ov), None) if same_type => d.push(
            Class::NonBreaking,
            "enum-values-lifted",
            command,
            Some(label.to_string()),
            "no longer restricts its values".into(),
            Some(Value::from(ov.to_vec())),
            None,
        ),
        _ => {}
    }
}

fn arguments(d: &mut Differ<'_>, command: &str, old: &[Argument], new: &[Argument]) {
    let mut matched: HashSet<usize> = HashSet::new();
    for (i, o) in old.iter().enumerate() {
        if let Some(j) = new.iter().position(|n| n.name == o.name) {
            matched.insert(j);
            let n = &new[j];
            let label = arg_label(n);
            if i != j {
                d.push(
                    Class::Breaking,
                    "argument-moved",
                    command,
                    Some(label.clone()),
                    format!("moved from position {} to {}", i + 1, j + 1),
                    Some(Value::from(i + 1)),
                    Some(Value::from(j + 1)),
                );
            }
            argument_pair(d, command, &label, o, n);
        } else if let Some(n) = new.get(i).filter(|n| {
            !old.iter().any(|x| x.name == n.name) && n.kind == o.kind && !matched.contains(&i)
        }) {
            matched.insert(i);
            d.push(
                Class::Breaking,
                "argument-renamed",
                command,
                Some(arg_label(o)),
                format!("was renamed to <{}>", n.name),
                Some(Value::from(o.name.clone())),
                Some(Value::from(n.name.clone())),
            );
            argument_pair(d, command, &arg_label(n), o, n);
        } else {
            d.push(
                Class::Breaking,
                "argument-removed",
                command,
                Some(arg_label(o)),
                "was removed".into(),
                None,
                None,
            );
        }
    }
    for (j, n) in new.iter().enumerate() {
        if matched.contains(&j) {
            continue;
        }
        let kinds = ("argument-added-required", "argument-added");
        added(d, command, arg_label(n), n.is_required(), kinds);
    }
}

fn argument_pair(d: &mut Differ<'_>, command: &str, label: &str, o: &Argument, n: &Argument) {
    required(
        d,
        command,
        label,
        o.is_required(),
        n.is_required(),
        "argument",
    );
    param(
        d,
        command,
        label,
        (&o.kind, o.values.as_deref(), o.default.as_ref()),
        (&n.kind, n.values.as_deref(), n.default.as_ref()),
    );
    if o.is_variadic() && !n.is_variadic() {
        d.push(
            Class::Breaking,
            "argument-no-longer-variadic",
            command,
            Some(label.to_string()),
            "no longer takes several values".into(),
            None,
            None,
        );
    } else if !o.is_variadic() && n.is_variadic() {
        d.push(
            Class::NonBreaking,
            "argument-now-variadic",
            command,
            Some(label.to_string()),
            "now takes several values".into(),
            None,
            None,
        );
    }
}

/// How hazardous a stated hazard is: stated absent < unknown < stated present.
fn hazard(v: Option<bool>) -> u8 {
    match v {
        Some(false) => 0,
        None => 1,
        Some(true) => 2,
    }
}

/// How hazardous a missing guarantee is: guaranteed < unknown < stated absent.
fn guarantee(v: Option<bool>) -> u8 {
    match v {
        Some(true) => 0,
        None => 1,
        Some(false) => 2,
    }
}

fn word(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "true",
        Some(false) => "false",
        None => "unknown",
    }
}

/// An effects field a diff compares: its rule, its name, how to read it, and whether
/// `true` is a hazard (`destructive`) rather than a guarantee (`idempotent`).
type Field = (
    &'static str,
    &'static str,
    fn(&Effects) -> Option<bool>,
    bool,
);

/// The effects fields compared, hazards first.
const FIELDS: [Field; 9] = [
    (
        "effects-destructive",
        "destructive",
        |e| e.destructive,
        true,
    ),
    (
        "effects-writes",
        "filesystem.write",
        |e| e.filesystem.as_ref()?.write,
        true,
    ),
    (
        "effects-deletes",
        "filesystem.delete",
        |e| e.filesystem.as_ref()?.delete,
        true,
    ),
    ("effects-network", "network", |e| e.network, true),
    ("effects-subprocess", "subprocess", |e| e.subprocess, true),
    (
        "effects-billable",
        "cost.billable",
        |e| e.cost.as_ref()?.billable,
        true,
    ),
    (
        "effects-interactive",
        "interactive",
        |e| Some(e.interactive.as_ref()?.needs_human()),
        true,
    ),
    ("effects-idempotent", "idempotent", |e| e.idempotent, false),
    ("effects-reversible", "reversible", |e| e.reversible, false),
];

/// A command's effects, old and new: losing read-only, then each field that became less
/// safe (breaking) or safer.
fn effects(d: &mut Differ<'_>, command: &str, o: &Effects, n: &Effects) {
    if o.is_read_only() && !n.is_read_only() {
        d.push(
            Class::Effects,
            "effects-read-only",
            command,
            Some("effects".into()),
            "is no longer read-only".into(),
            Some(Value::from("read-only")),
            Some(Value::from(n.summary())),
        );
    }
    for (kind, field, read, is_hazard) in FIELDS {
        let (ov, nv) = (read(o), read(n));
        let (before, after) = if is_hazard {
            (hazard(ov), hazard(nv))
        } else {
            (guarantee(ov), guarantee(nv))
        };
        if before == after {
            continue;
        }
        let less_safe = after > before;
        let what = match nv {
            Some(v) => format!("is now {v}"),
            None => "is no longer stated (unknown)".to_string(),
        };
        d.push(
            if less_safe {
                Class::Effects
            } else {
                Class::NonBreaking
            },
            if less_safe { kind } else { "effects-safer" },
            command,
            Some(format!("effects.{field}")),
            format!("{what} (was {})", word(ov)),
            ov.map(Value::Bool),
            nv.map(Value::Bool),
        );
    }
}

/// Counts per class.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Breaking changes.
    pub breaking: usize,
    /// Effects that became less safe.
    pub effects: usize,
    /// Additions and relaxations.
    pub non_breaking: usize,
}

impl Counts {
    /// Counts the changes.
    pub(crate) fn of(changes: &[Change]) -> Counts {
        let mut c = Counts::default();
        for ch in changes {
            match ch.class {
                Class::Breaking => c.breaking += 1,
                Class::Effects => c.effects += 1,
                Class::NonBreaking => c.non_breaking += 1,
            }
        }
        c
    }
}

/// One side of the comparison, as reported.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// Where it came from (path, `-`, `TOOL --agent`).
    pub source: String,
    /// Tool name.
    pub name: Option<String>,
    /// Tool version.
    pub version: Option<String>,
    /// Whether it is a partial document (commands it leaves out count as removed).
    pub partial: bool,
}

/// The whole result, in the shape `--output json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The old document.
    pub old: Side,
    /// The new document.
    pub new: Side,
    /// Counts per class.
    pub summary: Counts,
    /// Version advice.
    pub semver: semver::Advice,
    /// Every change: breaking first, then effects, then non-breaking; document order
    /// within a class.
    pub changes: Vec<Change>,
}

impl Report {
    /// Compares `old` and `new` and builds the report.
    pub fn build(old: (&Metadata, String), new: (&Metadata, String)) -> Report {
        let mut changes = diff(old.0, new.0);
        changes.sort_by_key(|c| c.class);
        let summary = Counts::of(&changes);
        let side = |m: &Metadata, source: String| Side {
            source,
            name: m.tool_name().map(str::to_string),
            version: m.tool_version().map(str::to_string),
            partial: m.partial == Some(true),
        };
        Report {
            semver: semver::Advice::new(&summary, old.0.tool_version(), new.0.tool_version()),
            old: side(old.0, old.1),
            new: side(new.0, new.1),
            summary,
            changes,
        }
    }

    /// Whether a change of this class exists.
    pub fn has(&self, class: Class) -> bool {
        self.changes.iter().any(|c| c.class == class)
    }
}
