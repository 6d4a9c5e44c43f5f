//! Flattening one metadata document: one [`FlatTool`] per runnable command, with its
//! parameters (arguments, then every option in scope) mapped to a plain JSON Schema.
//!
//! Owns the ATIP type → JSON Schema mapping. Must not apply any provider's restrictions;
//! `formats` derives those from the plain schema.

use super::names;
use super::safety;
use super::{FlatTool, FlattenOptions, Param, ParamOrigin};
use crate::model::{Argument, Effects, Metadata, Opt, ParamType};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Flattens one document. Names are unique within the document (`tool_sub_cmd`, a clash
/// gets `_2`); use [`super::Catalog`] for uniqueness across several documents. Commands
/// that need a human are dropped unless `opts.include_interactive`.
pub fn flatten(meta: &Metadata, opts: &FlattenOptions) -> Vec<FlatTool> {
    let mut out = Vec::new();
    flatten_with(meta, opts, true, &mut |t| out.push(t));
    out
}

/// [`flatten`] without the tools' [`FlatTool::input_schema`] (left `Null`), handing each
/// tool to `each` as it is made instead of collecting them: the compiled catalog stores
/// the parameters only and keeps a lighter copy of each tool, so a document of ~1,700
/// commands is never held whole as flattened tools while it is written (the peak of a
/// scan that registers one, benches/README.md).
pub fn flatten_params_only(meta: &Metadata, opts: &FlattenOptions, each: impl FnMut(FlatTool)) {
    let mut each = each;
    flatten_with(meta, opts, false, &mut each)
}

fn flatten_with(
    meta: &Metadata,
    opts: &FlattenOptions,
    input_schema: bool,
    out: &mut dyn FnMut(FlatTool),
) {
    let tool = meta.tool_name().unwrap_or("tool").to_string();
    let mut taken = HashSet::new();
    let has_commands = meta.commands.as_ref().is_some_and(|c| !c.is_empty());
    let mut push = |mut t: FlatTool| {
        t.name = names::unique(t.name, &mut taken, names::MAX_NAME);
        if opts.wants(&t.tool, &t.command) && (opts.include_interactive || !t.effects.needs_human())
        {
            out(t);
        }
    };
    if !has_commands {
        let effects = meta.effects.clone().unwrap_or_default();
        let options: Vec<&Opt> = meta.global_opts().iter().collect();
        let mut t = build(
            &tool,
            vec![String::new()],
            &meta.description,
            &[],
            &options,
            effects,
            input_schema,
        );
        t.runner = meta
            .extra
            .get(crate::model::RUNNER_KEY)
            .and_then(serde_json::Value::as_bool)
            .unwrap_or(false);
        push(t);
        return;
    }
    for entry in meta.walk() {
        if !exported(entry.command) {
            continue;
        }
        let path: Vec<String> = entry.path.iter().map(|s| s.to_string()).collect();
        let effects = meta.effective_effects(&entry);
        let options = meta.options_in_scope(&entry);
        let mut t = build(
            &tool,
            path,
            &entry.command.description,
            entry.command.args(),
            &options,
            effects,
            input_schema,
        );
        t.runner = meta.is_runner(&entry);
        t.about = about(meta, &entry);
        push(t);
    }
}

/// The tool's description and the command's ancestors' (outermost first): what the
/// command belongs to, for search (`git bisect start` is part of "binary search … for the
/// commit that introduced a bug").
/// A document inferred from a manual page adds the page's first DESCRIPTION paragraph
/// (`x-inferred.details`): its NAME line alone is often too terse to find it by task.
fn about(meta: &Metadata, entry: &crate::model::CommandEntry) -> String {
    let details = meta
        .extra
        .get("x-inferred")
        .and_then(|x| x.get("details"))
        .and_then(|d| d.as_str())
        .unwrap_or_default();
    std::iter::once(meta.description.as_str())
        .chain(std::iter::once(details))
        .chain(entry.ancestors.iter().map(|a| a.description.as_str()))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a command becomes a tool: a leaf, or a group that takes its own positional
/// arguments. Options on a group are inherited by its subcommands (`gh pr -R`), so they
/// alone do not make the group a tool an agent would call.
fn exported(command: &crate::model::Command) -> bool {
    command.commands.as_ref().is_none_or(|c| c.is_empty()) || !command.args().is_empty()
}

/// One command as a flat tool: its title and summary, a parameter per argument and
/// option, the input schema when asked for, and the description with the worst case of
/// its effects stated.
fn build(
    tool: &str,
    command: Vec<String>,
    description: &str,
    args: &[Argument],
    options: &[&Opt],
    effects: Effects,
    with_schema: bool,
) -> FlatTool {
    let title = if command.len() == 1 && command[0].is_empty() {
        tool.to_string()
    } else {
        format!("{tool} {}", command.join(" "))
    };
    let summary = match description.trim() {
        "" => format!("Run `{title}`."),
        d => d.to_string(),
    };
    let mut taken = HashSet::new();
    let mut params = Vec::with_capacity(args.len() + options.len());
    for (index, arg) in args.iter().enumerate() {
        params.push(argument_param(index, arg, &mut taken));
    }
    // `--help` only prints usage and a boolean `--version` only the version: the call
    // would not do the command's work, so no agent needs them as parameters. A
    // `--version` taking a value (`helm install --version 1.2.3`) is a real parameter.
    let prints_and_exits = |o: &&Opt| match o.long_flag() {
        Some("--help") => true,
        Some("--version") => o.kind == ParamType::Boolean,
        _ => false,
    };
    for opt in options.iter().filter(|o| !prints_and_exits(o)) {
        params.push(option_param(opt, &mut taken));
    }
    let input_schema = if with_schema {
        object_schema(&params)
    } else {
        Value::Null
    };
    let (safety, full) = described(&summary, &effects, &params);
    FlatTool {
        name: names::tool_name(tool, &command),
        tool: tool.to_string(),
        command,
        title,
        summary,
        safety,
        description: full,
        params,
        effects,
        input_schema,
        runner: false,
        about: String::new(),
    }
}

/// The parameter of positional argument `index`, under a property name not yet `taken`.
fn argument_param(index: usize, arg: &Argument, taken: &mut HashSet<String>) -> Param {
    let property = names::unique(names::property_name(&arg.name), taken, names::MAX_PROPERTY);
    let variadic = arg.is_variadic() && arg.kind != ParamType::Boolean;
    let fallback = || format!("The {} argument.", arg.name);
    let description = param_description(
        &arg.description,
        fallback,
        &arg.kind,
        None,
        arg.default.as_ref(),
    );
    let schema = property_schema(
        &arg.kind,
        arg.values.as_deref(),
        variadic,
        &description,
        arg.default.as_ref(),
    );
    Param {
        property,
        origin: ParamOrigin::Argument {
            index,
            name: arg.name.clone(),
        },
        kind: arg.kind.clone(),
        required: arg.is_required(),
        variadic,
        description,
        schema,
        guard: super::guard::ParamGuard::from_extra(&arg.extra),
    }
}

/// The parameter of an option, under a property name not yet `taken`.
fn option_param(opt: &Opt, taken: &mut HashSet<String>) -> Param {
    let property = names::unique(names::property_name(&opt.name), taken, names::MAX_PROPERTY);
    let flag = opt.long_flag().unwrap_or(&opt.name).to_string();
    let variadic = opt.is_variadic() && opt.kind != ParamType::Boolean;
    let fallback = || format!("The {flag} option.");
    let description = param_description(
        &opt.description,
        fallback,
        &opt.kind,
        opt.env_var.as_deref(),
        opt.default.as_ref(),
    );
    let schema = property_schema(
        &opt.kind,
        opt.values.as_deref(),
        variadic,
        &description,
        opt.default.as_ref(),
    );
    Param {
        property,
        origin: ParamOrigin::Option {
            name: opt.name.clone(),
            flag,
        },
        kind: opt.kind.clone(),
        required: opt.is_required(),
        variadic,
        description,
        schema,
        guard: super::guard::ParamGuard::from_extra(&opt.extra),
    }
}

/// The safety suffix and the full description. Both state the worst case over the call
/// conditions (a model reads them before it picks arguments), and name what brings it.
fn described(summary: &str, effects: &Effects, params: &[Param]) -> (String, String) {
    let (worst, flags) =
        super::guard::worst_case(effects, params.iter().map(|p| (p.shown_flag(), &p.guard)));
    let safety = safety::suffix(&worst);
    let summary_with = if flags.is_empty() || worst == *effects {
        summary.to_string()
    } else if effects.is_read_only() {
        safety::join_sentences(summary, &format!("Read-only unless {}.", flags.join(", ")))
    } else {
        safety::join_sentences(summary, &format!("More effects with {}.", flags.join(", ")))
    };
    let full = safety::with_suffix(&summary_with, &safety, safety::MAX_DESCRIPTION);
    (safety, full)
}

/// `{"type":"object","properties":…,"required":[…],"additionalProperties":false}`;
/// `required` is left out when empty.
pub(super) fn object_schema(params: &[Param]) -> Value {
    let mut props = Map::new();
    let mut required = Vec::new();
    for p in params {
        props.insert(p.property.clone(), p.schema.clone());
        if p.required {
            required.push(Value::String(p.property.clone()));
        }
    }
    let mut root = Map::new();
    root.insert("type".into(), "object".into());
    root.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    root.insert("additionalProperties".into(), false.into());
    Value::Object(root)
}

fn param_description(
    text: &str,
    fallback: impl FnOnce() -> String,
    kind: &ParamType,
    env_var: Option<&str>,
    default: Option<&Value>,
) -> String {
    let mut out = match text.trim() {
        "" => fallback(),
        t => t.to_string(),
    };
    let mut add = |s: &str| {
        if !out.ends_with(['.', '!', '?', ':', ')']) {
            out.push('.');
        }
        out.push(' ');
        out.push_str(s);
    };
    match kind {
        ParamType::File => add("A file path."),
        ParamType::Directory => add("A directory path."),
        ParamType::Url => add("A URL."),
        _ => {}
    }
    if let Some(v) = env_var {
        add(&format!("Environment variable: {v}."));
    }
    if let Some(d) = default.filter(|d| !d.is_null()) {
        let shown = match d {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        add(&format!("Default: {}.", safety::cut(&shown, 80)));
    }
    if out.len() > safety::MAX_DESCRIPTION {
        safety::cut(&out, safety::MAX_DESCRIPTION)
    } else {
        out
    }
}

/// JSON type and enum values for a parameter. Enum values keep their JSON type when they
/// all share one (numeric enums stay numeric); mixed values become strings.
fn value_schema(kind: &ParamType, values: Option<&[Value]>) -> Map<String, Value> {
    let mut m = Map::new();
    let values: Vec<&Value> = values
        .unwrap_or(&[])
        .iter()
        .filter(|v| !v.is_null())
        .collect();
    if !values.is_empty() {
        let (ty, vals): (&str, Vec<Value>) = if values.iter().all(|v| v.is_i64() || v.is_u64()) {
            ("integer", values.iter().map(|v| (*v).clone()).collect())
        } else if values.iter().all(|v| v.is_number()) {
            ("number", values.iter().map(|v| (*v).clone()).collect())
        } else if values.iter().all(|v| v.is_boolean()) {
            ("boolean", values.iter().map(|v| (*v).clone()).collect())
        } else {
            let strings = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => Value::String(s.clone()),
                    other => Value::String(other.to_string()),
                })
                .collect();
            ("string", strings)
        };
        let mut seen = HashSet::new();
        let vals: Vec<Value> = vals
            .into_iter()
            .filter(|v| seen.insert(v.to_string()))
            .collect();
        if *kind == ParamType::Array {
            let mut items = Map::new();
            items.insert("type".into(), ty.into());
            items.insert("enum".into(), Value::Array(vals));
            m.insert("type".into(), "array".into());
            m.insert("items".into(), Value::Object(items));
        } else {
            m.insert("type".into(), ty.into());
            m.insert("enum".into(), Value::Array(vals));
        }
        return m;
    }
    let ty = match kind {
        ParamType::Integer => "integer",
        ParamType::Number => "number",
        ParamType::Boolean => "boolean",
        ParamType::Array => {
            m.insert("type".into(), "array".into());
            m.insert("items".into(), json!({"type": "string"}));
            return m;
        }
        _ => "string",
    };
    m.insert("type".into(), ty.into());
    m
}

fn property_schema(
    kind: &ParamType,
    values: Option<&[Value]>,
    variadic: bool,
    description: &str,
    default: Option<&Value>,
) -> Value {
    let base = value_schema(kind, values);
    let mut m = if variadic && base.get("type").and_then(Value::as_str) != Some("array") {
        let mut m = Map::new();
        m.insert("type".into(), "array".into());
        m.insert("items".into(), Value::Object(base));
        m
    } else {
        base
    };
    m.insert("description".into(), description.into());
    if let Some(d) = default.filter(|d| default_fits(&m, d)) {
        m.insert("default".into(), d.clone());
    }
    Value::Object(m)
}

/// Whether a default value matches the property's type (and enum), so the schema never
/// carries a default that contradicts it.
fn default_fits(schema: &Map<String, Value>, value: &Value) -> bool {
    let ty_ok = match schema.get("type").and_then(Value::as_str) {
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("array") => value.as_array().is_some_and(|a| {
            let items = schema.get("items").and_then(Value::as_object);
            a.iter().all(|v| items.is_none_or(|i| default_fits(i, v)))
        }),
        _ => false,
    };
    ty_ok
        && schema
            .get("enum")
            .and_then(Value::as_array)
            .is_none_or(|e| e.contains(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Metadata;

    fn meta(v: Value) -> Metadata {
        Metadata::from_value(v).unwrap()
    }

    #[test]
    fn descriptions_and_hints_state_the_worst_case_over_call_conditions() {
        let read_only = json!({"destructive": false, "idempotent": true, "network": false,
            "filesystem": {"read": true, "write": false, "delete": false}});
        let m = meta(json!({
            "atip": "0.6", "name": "sorter", "version": "1", "description": "Sort",
            "commands": {
                "plain": {"description": "Sort lines", "effects": read_only.clone(),
                    "options": [{"name": "reverse", "flags": ["-r"], "type": "boolean", "description": "Reverse"}]},
                "out": {"description": "Sort lines", "effects": read_only.clone(),
                    "options": [{"name": "output", "flags": ["-o", "--output"], "type": "file",
                        "description": "Write here", "x-atip-writes": "path"}]},
                "push": {"description": "Push", "effects": read_only,
                    "options": [{"name": "force", "flags": ["--force"], "type": "boolean",
                        "description": "Force", "x-atip-effects": {"destructive": true}}]}}
        }));
        let tools = flatten(&m, &FlattenOptions::default());
        let by = |n: &str| tools.iter().find(|t| t.name == n).unwrap();
        // No condition: read-only as before, in the suffix and the hints.
        let plain = by("sorter_plain");
        assert_eq!(plain.description, "Sort lines [READ-ONLY]");
        assert!(crate::formats::Annotations::of_tool(plain).read_only_hint);
        // A written file: the worst case overwrites one, so neither read-only nor safe.
        let out = by("sorter_out");
        assert!(
            out.description.contains("Read-only unless --output."),
            "{}",
            out.description
        );
        assert!(
            out.description.ends_with("[⚠️ DESTRUCTIVE]"),
            "{}",
            out.description
        );
        let a = crate::formats::Annotations::of_tool(out);
        assert!(!a.read_only_hint && a.destructive_hint);
        // The base effects exec starts from stay the command's own.
        assert!(out.effects.is_read_only());
        let push = by("sorter_push");
        assert!(push.description.contains("Read-only unless --force."));
        assert!(crate::formats::Annotations::of_tool(push).destructive_hint);
    }

    #[test]
    fn params_only_is_flatten_without_the_input_schema() {
        let m = meta(json!({
            "atip": "0.6", "name": "gh", "version": "1", "description": "GitHub",
            "globalOptions": [{"name": "repo", "flags": ["-R", "--repo"], "type": "string", "description": "Repo"}],
            "commands": {
                "pr": {"description": "PRs", "commands": {
                    "list": {"description": "List", "arguments": [{"name": "state", "type": "enum",
                        "enum": ["open", "closed"], "description": "State", "required": true}]},
                    "view": {"description": "View", "options": [{"name": "web", "flags": ["--web"],
                        "type": "boolean", "description": "Open"}]}}},
                "status": {"description": "Status"}}
        }));
        let opts = FlattenOptions::default();
        let full = flatten(&m, &opts);
        let mut slim = Vec::new();
        flatten_params_only(&m, &opts, |t| slim.push(t));
        assert_eq!(full.len(), 3);
        assert!(full.iter().all(|t| t.input_schema.is_object()));
        assert!(slim.iter().all(|t| t.input_schema.is_null()));
        let nulled: Vec<FlatTool> = full
            .into_iter()
            .map(|mut t| {
                t.input_schema = Value::Null;
                t
            })
            .collect();
        assert_eq!(slim, nulled);
    }

    #[test]
    fn parent_options_and_inherited_effects_reach_leaves() {
        let m = meta(json!({
            "atip": "0.4", "name": "gh", "version": "1", "description": "GitHub",
            "globalOptions": [{"name": "help", "flags": ["--help"], "type": "boolean", "description": "Help"},
                              {"name": "version", "flags": ["--version"], "type": "boolean", "description": "Print the version"},
                              {"name": "verbose", "flags": ["--verbose"], "type": "boolean", "description": "Chatty"}],
            "commands": {"repo": {"description": "Repos", "effects": {"destructive": true},
                "options": [{"name": "repo", "flags": ["-R", "--repo"], "type": "string", "description": ""}],
                "commands": {"delete": {"description": "Delete a repo",
                    "arguments": [{"name": "name", "type": "string", "description": "Name"}],
                    "options": [{"name": "dry-run", "flags": ["--dry-run"], "type": "boolean", "description": "Dry"},
                                {"name": "version", "flags": ["--version"], "type": "string", "description": "Chart version"}]}}}}
        }));
        let tools = flatten(&m, &FlattenOptions::default());
        assert_eq!(tools.len(), 1);
        let t = &tools[0];
        assert_eq!(t.name, "gh_repo_delete");
        assert_eq!(t.description, "Delete a repo [⚠️ DESTRUCTIVE]");
        let props: Vec<&str> = t.params.iter().map(|p| p.property.as_str()).collect();
        // --help and the boolean --version are not parameters; a --version with a value is.
        assert_eq!(props, ["name", "verbose", "repo", "dry_run", "version"]);
        assert_eq!(
            t.input_schema["properties"]["repo"]["description"],
            "The --repo option."
        );
        assert_eq!(t.input_schema["required"], json!(["name"]));
    }

    #[test]
    fn enums_variadics_and_defaults() {
        let s = property_schema(
            &ParamType::Enum,
            Some(&[json!(1), json!(2)]),
            false,
            "d",
            Some(&json!(2)),
        );
        assert_eq!(
            s,
            json!({"type": "integer", "enum": [1, 2], "description": "d", "default": 2})
        );
        let s = property_schema(&ParamType::File, None, true, "d", Some(&json!(3)));
        assert_eq!(
            s,
            json!({"type": "array", "items": {"type": "string"}, "description": "d"})
        );
        let s = property_schema(
            &ParamType::Enum,
            Some(&[json!("a"), json!(1)]),
            false,
            "d",
            None,
        );
        assert_eq!(s["enum"], json!(["a", "1"]));
    }
}
