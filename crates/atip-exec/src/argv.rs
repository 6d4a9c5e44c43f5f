//! Building the command line of a validated tool call: the executable, then the
//! subcommand path, then options, then positionals. Never a shell: every value is one
//! argv element, passed to `execve` as is.
//!
//! Rules (normative text in `spec/exec.md`):
//! - options by their long flag, in the order the tool's parameters are listed; a value
//!   that starts with `-` is joined as `--flag=value`, so no parser can mistake it for a
//!   flag (an option with only a short flag cannot take such a value safely: refused);
//! - booleans: the bare flag when `true`, nothing when `false`;
//! - arrays and variadic options: the flag repeated once per item;
//! - positionals in argument order, array items each their own element; `--` before the
//!   first positional when any positional starts with `-`;
//! - numbers in their JSON spelling;
//! - an argument marked `x-atip-leading` goes right after the command path, before the
//!   options (a value starting with `-` is refused there: no `--` can protect it);
//! - an array option marked `x-atip-terminator` is its flag, its items, then the
//!   terminator (`-exec PROGRAM ARG… ;`); an item that is the terminator or `+` is refused,
//!   since it would close the command early and the items after it would be read as options.
//!
//! Must not validate types (the schema did) or decide policy.

use crate::compile::{Param, ParamOrigin};
use crate::model::ParamType;
use crate::output::{AtipError, ErrorCode};
use serde_json::{Map, Value};

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn unusable(property: &str, why: &str) -> AtipError {
    AtipError::new(
        ErrorCode::ArgsUnusable,
        format!("argument {property:?} cannot be put on the command line: {why}"),
    )
}

/// An `x-atip-terminator` option: its flag, its items, then the terminator
/// (`-exec PROGRAM ARG… ;`); nothing when there are no items. An item that is the
/// terminator or `+` would end the command early: refused.
fn push_terminated(
    argv: &mut Vec<String>,
    p: &Param,
    flag: &str,
    end: &str,
    items: &[&Value],
) -> Result<(), AtipError> {
    if items.is_empty() {
        return Ok(());
    }
    argv.push(flag.to_owned());
    for item in items {
        let text = scalar_text(item)
            .ok_or_else(|| unusable(&p.property, "nested values are not supported"))?;
        if text == end || text == "+" {
            return Err(unusable(
                &p.property,
                &format!(
                    "an item {text:?} would end {flag}'s command early and the items after it would be read as options"
                ),
            ));
        }
        argv.push(text);
    }
    argv.push(end.to_owned());
    Ok(())
}

/// An option, once per item: a boolean is its bare flag when true; a value starting with
/// `-` is joined as `--flag=value` (refused for an option with only a short flag), any
/// other is the flag then the value.
fn push_option(
    argv: &mut Vec<String>,
    p: &Param,
    flag: &str,
    items: &[&Value],
) -> Result<(), AtipError> {
    for item in items {
        if p.kind == ParamType::Boolean {
            match item {
                Value::Bool(true) => argv.push(flag.to_owned()),
                Value::Bool(false) => {}
                _ => return Err(unusable(&p.property, "expected true or false")),
            }
            continue;
        }
        let text = scalar_text(item)
            .ok_or_else(|| unusable(&p.property, "nested values are not supported"))?;
        if text.starts_with('-') {
            if !flag.starts_with("--") {
                return Err(unusable(
                    &p.property,
                    &format!(
                        "the value starts with '-' and {flag} has no long form to attach it to"
                    ),
                ));
            }
            argv.push(format!("{flag}={text}"));
        } else {
            argv.push(flag.to_owned());
            argv.push(text);
        }
    }
    Ok(())
}

/// The arguments after the program, for a call of `command` with `args`.
pub fn build(
    command: &[String],
    params: &[Param],
    args: &Map<String, Value>,
) -> Result<Vec<String>, AtipError> {
    let mut argv: Vec<String> = command.iter().filter(|s| !s.is_empty()).cloned().collect();
    let path_len = argv.len();
    let mut positionals: Vec<(usize, Vec<String>)> = Vec::new();
    let mut leading: Vec<(usize, Vec<String>)> = Vec::new();
    for p in params {
        let Some(value) = args.get(&p.property) else {
            continue;
        };
        if value.is_null() {
            continue;
        }
        let items: Vec<&Value> = match value {
            Value::Array(a) => a.iter().collect(),
            v => vec![v],
        };
        match &p.origin {
            ParamOrigin::Option { flag, .. } => match p.guard.terminator.as_deref() {
                Some(end) => push_terminated(&mut argv, p, flag, end, &items)?,
                None => push_option(&mut argv, p, flag, &items)?,
            },
            ParamOrigin::Argument { index, .. } => {
                let texts = items
                    .into_iter()
                    .map(|item| {
                        scalar_text(item)
                            .ok_or_else(|| unusable(&p.property, "nested values are not supported"))
                    })
                    .collect::<Result<Vec<String>, AtipError>>()?;
                if p.guard.leading {
                    if let Some(t) = texts.iter().find(|t| t.starts_with('-')) {
                        return Err(unusable(
                            &p.property,
                            &format!(
                                "{t:?} goes before the options, where a leading '-' reads as one; give it as ./{t}"
                            ),
                        ));
                    }
                    leading.push((*index, texts));
                } else {
                    positionals.push((*index, texts));
                }
            }
        }
    }
    leading.sort_by_key(|(i, _)| *i);
    argv.splice(path_len..path_len, leading.into_iter().flat_map(|(_, v)| v));
    positionals.sort_by_key(|(i, _)| *i);
    let values: Vec<String> = positionals.into_iter().flat_map(|(_, v)| v).collect();
    if values.iter().any(|v| v.starts_with('-')) {
        argv.push("--".into());
    }
    argv.extend(values);
    Ok(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn opt(property: &str, flag: &str, kind: ParamType) -> Param {
        Param {
            property: property.into(),
            origin: ParamOrigin::Option {
                name: property.into(),
                flag: flag.into(),
            },
            kind,
            required: false,
            variadic: false,
            description: String::new(),
            schema: json!({}),
            guard: Default::default(),
        }
    }

    fn arg(property: &str, index: usize, kind: ParamType) -> Param {
        Param {
            property: property.into(),
            origin: ParamOrigin::Argument {
                index,
                name: property.into(),
            },
            kind,
            required: true,
            variadic: false,
            description: String::new(),
            schema: json!({}),
            guard: Default::default(),
        }
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn layout() {
        let params = vec![
            arg("title", 0, ParamType::String),
            arg("files", 1, ParamType::Array),
            opt("draft", "--draft", ParamType::Boolean),
            opt("quiet", "--quiet", ParamType::Boolean),
            opt("label", "--label", ParamType::Array),
            opt("count", "-n", ParamType::Integer),
        ];
        let cmd = vec!["pr".to_string(), "create".to_string()];
        let a = args(
            json!({"files": ["a", "b"], "title": "; rm -rf ~", "draft": true,
            "quiet": false, "label": ["x", "y"], "count": 3}),
        );
        assert_eq!(
            build(&cmd, &params, &a).unwrap(),
            [
                "pr",
                "create",
                "--draft",
                "--label",
                "x",
                "--label",
                "y",
                "-n",
                "3",
                "; rm -rf ~",
                "a",
                "b"
            ]
        );
    }

    #[test]
    fn dashes() {
        let params = vec![
            arg("path", 0, ParamType::String),
            opt("msg", "--message", ParamType::String),
            opt("short", "-s", ParamType::String),
        ];
        let root = vec![String::new()];
        let a = args(json!({"path": "--help", "msg": "--force"}));
        assert_eq!(
            build(&root, &params, &a).unwrap(),
            ["--message=--force", "--", "--help"]
        );
        let a = args(json!({"short": "-x"}));
        assert_eq!(build(&root, &params, &a).unwrap_err().code, "args_unusable");
        let a = args(json!({"path": "x\ny", "msg": "$(id) `id`"}));
        assert_eq!(
            build(&root, &params, &a).unwrap(),
            ["--message", "$(id) `id`", "x\ny"]
        );
    }

    /// find's layout: starting points before the expression, `-exec … ;` as one run.
    #[test]
    fn leading_arguments_and_terminated_options() {
        let mut start = arg("start", 0, ParamType::Array);
        start.guard.leading = true;
        let mut exec = opt("exec", "-exec", ParamType::Array);
        exec.guard.terminator = Some(";".into());
        let params = vec![
            start,
            opt("name", "-name", ParamType::String),
            exec,
            opt("print0", "-print0", ParamType::Boolean),
        ];
        let root = vec![String::new()];
        let a = args(json!({"start": ["src", "tests"], "name": "*.rs",
            "exec": ["grep", "-l", "x", "{}"], "print0": true}));
        assert_eq!(
            build(&root, &params, &a).unwrap(),
            [
                "src", "tests", "-name", "*.rs", "-exec", "grep", "-l", "x", "{}", ";", "-print0"
            ]
        );
        let a = args(json!({"name": "a"}));
        assert_eq!(build(&root, &params, &a).unwrap(), ["-name", "a"]);
        // An empty list gives nothing (no bare `-exec ;`).
        let a = args(json!({"exec": []}));
        assert!(build(&root, &params, &a).unwrap().is_empty());
        // Closing the command early would let later items become find expressions
        // (`-delete`); a leading value that looks like an option is refused.
        for bad in [
            json!({"exec": ["true", ";", "-delete"]}),
            json!({"exec": ["true", "{}", "+", "-delete"]}),
            json!({"start": ["-delete"]}),
            json!({"start": [".", "-fprint"]}),
        ] {
            let e = build(&root, &params, &args(bad.clone())).unwrap_err();
            assert_eq!(e.code, "args_unusable", "{bad}");
        }
    }
}
