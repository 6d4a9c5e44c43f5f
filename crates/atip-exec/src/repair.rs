//! Corrected arguments for a call that failed schema validation: the object atip would
//! send instead, when it can tell what was meant. It becomes the `suggestion` of the
//! `args_invalid` error (`example` + `applicability`), so a model can retry at once.
//!
//! The repairs (spec/exec.md, "Corrected arguments"): an unknown key is renamed to the
//! property it differs from only in case or separators (`dryRun` → `dry_run`) or, failing
//! that, to the one closest by edit distance, else dropped; the lossless coercions of
//! `super::args::coerce` (`"3"` → 3); a number where a string is expected becomes its
//! text; a one-item array where one value is expected becomes that value; an enum value
//! that differs in case or by a small typo becomes the allowed value; a missing required
//! property is added only when the schema gives a default (that value) or an enum (a
//! placeholder naming the allowed values). Anything else (a missing property the schema
//! says nothing about, a value of the wrong kind) cannot be repaired: no example. Every
//! example is validated again before it is offered. Must not run anything or print.

use super::args::{Checker, coerce};
use super::redact::Redactor;
use crate::output::{Applicability, SuggestedAction, Suggestion};
use crate::similar::closest;
use serde_json::{Map, Value};

/// A corrected arguments object and what was changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Repair {
    /// The arguments to send instead.
    pub args: Map<String, Value>,
    /// What changed, one phrase per change (property names only, never values).
    pub changes: Vec<String>,
    /// How far the result can be trusted.
    pub applicability: Applicability,
}

impl Repair {
    /// The suggestion for the error, its example's strings passed through `redactor`.
    pub fn suggestion(&self, redactor: &Redactor) -> Suggestion {
        let mut example = Value::Object(self.args.clone());
        redactor.redact_json(&mut example);
        Suggestion::new(
            SuggestedAction::RetryWithModifiedInput,
            format!("call again with: {}", self.changes.join("; ")),
        )
        .example(example, self.applicability)
    }
}

/// Trust levels, least certain last, so the repair's applicability is the maximum.
fn rank(a: Applicability) -> u8 {
    match a {
        Applicability::MachineApplicable => 0,
        Applicability::MaybeIncorrect => 1,
        Applicability::HasPlaceholders => 2,
    }
}

struct Fixer {
    changes: Vec<String>,
    applicability: Applicability,
    /// Placeholders put in, with the value used to validate in their place.
    placeholders: Vec<(String, Value)>,
}

impl Fixer {
    fn note(&mut self, change: String, how: Applicability) {
        self.changes.push(change);
        if rank(how) > rank(self.applicability) {
            self.applicability = how;
        }
    }
}

/// The corrected arguments for `args`, which `checker` (compiled from `schema`) rejected;
/// `None` when atip cannot tell what was meant.
pub fn repair(schema: &Value, args: &Map<String, Value>, checker: &Checker) -> Option<Repair> {
    let props = schema.get("properties").and_then(Value::as_object)?;
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    let mut f = Fixer {
        changes: Vec::new(),
        applicability: Applicability::MachineApplicable,
        placeholders: Vec::new(),
    };
    let mut out = Map::new();
    // Known keys first, so a renamed key never overwrites a value given under its name.
    for (k, v) in args.iter().filter(|(k, _)| props.contains_key(*k)) {
        out.insert(k.clone(), v.clone());
    }
    for (k, v) in args.iter().filter(|(k, _)| !props.contains_key(*k)) {
        if !closed {
            out.insert(k.clone(), v.clone());
            continue;
        }
        match rename_target(k, props, &out) {
            Some((to, how)) => {
                f.note(format!("{k:?} renamed to {to:?}"), how);
                out.insert(to, v.clone());
            }
            None => f.note(
                format!("unknown {k:?} dropped"),
                Applicability::MaybeIncorrect,
            ),
        }
    }
    for note in coerce(schema, &mut out) {
        let property = note.split([':', '[']).next().unwrap_or_default();
        f.note(
            format!("{property:?} given its schema type"),
            Applicability::MachineApplicable,
        );
    }
    let keys: Vec<String> = out.keys().cloned().collect();
    for k in keys {
        let Some(prop) = props.get(&k) else {
            continue; // an extra key an open schema allows
        };
        let value = out.get_mut(&k).expect("key exists");
        fix_value(&k, prop, value, &mut f);
    }
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str);
    for r in required {
        if !out.contains_key(r) {
            let value = missing_value(r, props.get(r)?, &mut f)?;
            out.insert(r.to_string(), value);
        }
    }
    if f.changes.is_empty() {
        return None;
    }
    let mut check = out.clone();
    for (k, v) in &f.placeholders {
        check.insert(k.clone(), v.clone());
    }
    checker.check(&check).is_empty().then_some(Repair {
        args: out,
        changes: f.changes,
        applicability: f.applicability,
    })
}

/// The property an unknown key was meant to be, if it is not given already: the same
/// name up to case and `-`/`_` (certain), else the one closest by edit distance
/// ([`closest`]: near enough and unambiguous).
fn rename_target(
    key: &str,
    props: &Map<String, Value>,
    given: &Map<String, Value>,
) -> Option<(String, Applicability)> {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let free = || props.keys().filter(|p| !given.contains_key(*p));
    if let Some(p) = free().find(|p| norm(p) == norm(key)) {
        return Some((p.clone(), Applicability::MachineApplicable));
    }
    let normalised: Vec<(String, &String)> = free().map(|p| (norm(p), p)).collect();
    let to = closest(&norm(key), normalised.iter().map(|(n, _)| n.as_str()))?;
    let (_, p) = normalised.iter().find(|(n, _)| n == to)?;
    Some(((*p).clone(), Applicability::MaybeIncorrect))
}

/// Fixes one value in place where the intent is clear.
fn fix_value(key: &str, prop: &Value, value: &mut Value, f: &mut Fixer) {
    let types = types_of(prop);
    if types.contains(&"array") {
        if let (Value::Array(items), Some(item_schema)) = (&mut *value, prop.get("items")) {
            for item in items.iter_mut() {
                fix_scalar(key, item_schema, item, f);
            }
        }
        return;
    }
    if let Value::Array(items) = value
        && items.len() == 1
        && !types.is_empty()
    {
        *value = items.pop().expect("one item");
        f.note(
            format!("{key:?} given one value, not a list"),
            Applicability::MaybeIncorrect,
        );
    }
    fix_scalar(key, prop, value, f);
}

fn fix_scalar(key: &str, schema: &Value, value: &mut Value, f: &mut Fixer) {
    let types = types_of(schema);
    if let Value::Number(n) = value
        && types.contains(&"string")
        && !types.contains(&"number")
        && !types.contains(&"integer")
    {
        *value = Value::String(n.to_string());
        f.note(
            format!("{key:?} given as a string"),
            Applicability::MachineApplicable,
        );
    }
    let (Some(allowed), Value::String(s)) = (schema.get("enum").and_then(Value::as_array), &*value)
    else {
        return;
    };
    if allowed.contains(value) {
        return;
    }
    let strings: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
    let same_case: Vec<&&str> = strings
        .iter()
        .filter(|a| a.eq_ignore_ascii_case(s))
        .collect();
    let (to, how) = match same_case.as_slice() {
        [one] => ((**one).to_string(), Applicability::MachineApplicable),
        _ => match closest(s, strings.iter().copied()) {
            Some(a) => (a.to_string(), Applicability::MaybeIncorrect),
            None => return,
        },
    };
    f.note(format!("{key:?} set to the allowed value {to:?}"), how);
    *value = Value::String(to);
}

/// A value for a missing required property: its default, its only allowed value, or a
/// placeholder naming the allowed values. `None` when the schema says neither.
fn missing_value(key: &str, prop: &Value, f: &mut Fixer) -> Option<Value> {
    if let Some(d) = prop.get("default") {
        f.note(
            format!("required {key:?} added with its default"),
            Applicability::MaybeIncorrect,
        );
        return Some(d.clone());
    }
    let allowed = prop.get("enum").and_then(Value::as_array)?;
    match allowed.as_slice() {
        [] => None,
        [only] => {
            f.note(
                format!("required {key:?} added with its only allowed value"),
                Applicability::MaybeIncorrect,
            );
            Some(only.clone())
        }
        [first, ..] => {
            let names: Vec<String> = allowed
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
                .collect();
            f.note(
                format!("required {key:?} added: choose one of {}", names.join(", ")),
                Applicability::HasPlaceholders,
            );
            f.placeholders.push((key.to_string(), first.clone()));
            Some(Value::String(format!("<{}>", names.join("|"))))
        }
    }
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(s)) => vec![s.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "additionalProperties": false,
            "properties": {
                "title": {"type": "string"},
                "dry_run": {"type": "boolean"},
                "count": {"type": "integer"},
                "number": {"type": "string"},
                "state": {"type": "string", "enum": ["open", "closed", "merged"]},
                "labels": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["title"]})
    }

    fn fix(schema: &Value, args: Value) -> Option<Repair> {
        let checker = Checker::new(schema).unwrap();
        let args = args.as_object().unwrap().clone();
        assert!(
            !checker.check(&args).is_empty(),
            "the input must be invalid"
        );
        repair(schema, &args, &checker)
    }

    #[test]
    fn renames_coerces_and_drops() {
        let r = fix(
            &schema(),
            json!({"title": "x", "dryRun": true, "count": "3", "number": 42, "state": "Open", "bogus": 1}),
        )
        .unwrap();
        assert_eq!(
            Value::Object(r.args.clone()),
            json!({"title": "x", "dry_run": true, "count": 3, "number": "42", "state": "open"})
        );
        // Dropping "bogus" is a guess.
        assert_eq!(r.applicability, Applicability::MaybeIncorrect);
        assert!(
            r.changes.iter().any(|c| c == "unknown \"bogus\" dropped"),
            "{:?}",
            r.changes
        );
    }

    #[test]
    fn certain_fixes_are_machine_applicable() {
        let r = fix(&schema(), json!({"Title": "x", "state": "CLOSED"})).unwrap();
        assert_eq!(
            Value::Object(r.args),
            json!({"title": "x", "state": "closed"})
        );
        assert_eq!(r.applicability, Applicability::MachineApplicable);
    }

    #[test]
    fn closest_name_and_enum_typo() {
        let r = fix(&schema(), json!({"titel": "x", "state": "mergd"})).unwrap();
        assert_eq!(
            Value::Object(r.args),
            json!({"title": "x", "state": "merged"})
        );
        assert_eq!(r.applicability, Applicability::MaybeIncorrect);
    }

    #[test]
    fn missing_required_only_with_default_or_enum() {
        // Nothing says what a title should be: no example.
        assert_eq!(fix(&schema(), json!({"count": 1})), None);
        let s = json!({"type": "object", "additionalProperties": false,
            "properties": {"method": {"type": "string", "enum": ["merge", "squash"]},
                           "limit": {"type": "integer", "default": 30}},
            "required": ["method", "limit"]});
        let r = fix(&s, json!({})).unwrap();
        assert_eq!(
            Value::Object(r.args),
            json!({"method": "<merge|squash>", "limit": 30})
        );
        assert_eq!(r.applicability, Applicability::HasPlaceholders);
    }

    #[test]
    fn unrepairable_values_give_nothing() {
        assert_eq!(fix(&schema(), json!({"title": "x", "count": "many"})), None);
        assert_eq!(
            fix(&schema(), json!({"title": "x", "state": "whatever"})),
            None
        );
    }

    #[test]
    fn example_strings_are_redacted() {
        let r = fix(
            &schema(),
            json!({"title": "ghp_0123456789abcdefghijABCDEFGHIJ012345", "Count": 1}),
        )
        .unwrap();
        let s = r.suggestion(&Redactor::new());
        assert_eq!(s.action, SuggestedAction::RetryWithModifiedInput);
        let text = s.example.unwrap().to_string();
        assert!(!text.contains("ghp_0123456789"), "{text}");
    }
}
