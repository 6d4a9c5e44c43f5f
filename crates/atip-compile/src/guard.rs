//! Per-parameter guard annotations: the `x-atip-` keys an argument or option carries to
//! tell `exec` that its value makes the call run a program, names a host, or names a
//! file to read. They travel with the flattened parameter (and the compiled catalog) so
//! that exec can check a call without the metadata document. Normative text:
//! `spec/shims.md` ("Guard annotations") and `spec/policy.md`.
//!
//! Parsing only: a malformed annotation is kept as `invalid` and exec refuses any call
//! that gives the parameter (unknown is never safe). Must not do I/O.

use crate::model::{Effects, Extra};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `x-atip-runner` on a parameter: giving it makes the call run a program.
pub const RUNNER: &str = "x-atip-runner";
/// `x-atip-runner-unless`: the call runs a program unless every value matches one of
/// these globs (case-insensitive): an allowlist of known-safe values.
pub const RUNNER_UNLESS: &str = "x-atip-runner-unless";
/// `x-atip-runner-if`: the call runs a program when a value matches one of these globs.
pub const RUNNER_IF: &str = "x-atip-runner-if";
/// `x-atip-url`: the value names a host to connect to, in one of [`URL_SHAPES`].
pub const URL: &str = "x-atip-url";
/// `x-atip-reads`: the value may name a file the program reads, in one of [`READ_SHAPES`].
pub const READS: &str = "x-atip-reads";

/// `x-atip-effects`: an effects object (the command-level shape) the call has when the
/// parameter is given: fields it states replace the command's; see `Effects::under`.
pub const EFFECTS: &str = "x-atip-effects";
/// `x-atip-effects-if`: `x-atip-effects` applies only when a value matches one of these
/// globs (case-insensitive), e.g. `chmod` modes or `--force-with-lease=*`.
pub const EFFECTS_IF: &str = "x-atip-effects-if";
/// `x-atip-writes`: the value names a file the call writes, in one of [`WRITE_SHAPES`]:
/// a new file is created, an existing one is modified (destructive: it asks).
pub const WRITES: &str = "x-atip-writes";
/// `x-atip-sandbox`: a boolean option that switches the program into a mode that runs no
/// programs and writes no files (GNU sed and gawk `--sandbox`); atip gives it itself when
/// the policy does not allow the program as a runner.
pub const SANDBOX: &str = "x-atip-sandbox";
/// `x-atip-leading`: an argument whose values go right after the command path, before
/// every option (find's starting points must precede its expression).
pub const LEADING: &str = "x-atip-leading";
/// `x-atip-terminator`: an array option whose items follow its flag as one command line
/// closed by this word (find `-exec PROGRAM ARG… ;`), instead of the flag once per item.
pub const TERMINATOR: &str = "x-atip-terminator";

/// Shapes of written files (`x-atip-writes`).
pub const WRITE_SHAPES: &[&str] = &[
    // The whole value is a path (`-` is standard output).
    "path",
];

/// Shapes of host-bearing values (`x-atip-url`).
pub const URL_SHAPES: &[&str] = &[
    // An absolute URL: the same rules as an argument of type `url`.
    "url",
    // `[scheme://][user@]host[:port][/…]`: a proxy; the scheme is not checked.
    "url-or-host",
    // `[+]host:port:address[,address…]` (curl `--resolve`).
    "host-port-addresses",
    // `host:port:host:port` (curl `--connect-to`).
    "host-port-host-port",
];

/// Shapes of file references (`x-atip-reads`).
pub const READ_SHAPES: &[&str] = &[
    // The whole value is a path (`-` is standard input).
    "path",
    // A value starting with `@` names a file (`@-` is standard input).
    "@path",
    // `name@path` or `@path` names a file; `name=…` and `=…` are content (curl
    // `--data-urlencode`: the first `=` or `@` decides).
    "name@path",
    // `name=@path[;…]` or `name=<path[;…]`, and `;headers=@path` (curl `-F`).
    "form",
    // A value without `=` is a path (curl `-b`: `name=value` pairs, else a cookie file).
    "path-unless-pair",
];

/// What the annotations of one parameter say. Empty for almost every parameter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParamGuard {
    /// Giving the parameter (any value; `true` for a boolean) makes the call a runner.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runner: bool,
    /// Globs of known-safe values; any other value makes the call a runner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_unless: Option<Vec<String>>,
    /// Globs of values that make the call a runner.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runner_if: Vec<String>,
    /// The shape of the host-bearing value, one of [`URL_SHAPES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The shape of the file reference, one of [`READ_SHAPES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reads: Option<String>,
    /// The effects a call giving the parameter has (`x-atip-effects`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<Effects>,
    /// Globs of values for which `effects` applies; empty: any value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub effects_if: Vec<String>,
    /// The shape of the written file, one of [`WRITE_SHAPES`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writes: Option<String>,
    /// The option is the program's sandbox switch (`x-atip-sandbox`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sandbox: bool,
    /// The argument's values come right after the command path (`x-atip-leading`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub leading: bool,
    /// The word that closes the option's items (`x-atip-terminator`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminator: Option<String>,
    /// What is wrong with a malformed annotation: a call giving the parameter is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid: Option<String>,
}

/// The effects of writing onto a file that already exists: a modification, destructive
/// (the old content is gone). What `exec` judges for an `x-atip-writes` value naming an
/// existing path, and what the worst case assumes for every such parameter.
pub fn overwrite_effects() -> Effects {
    Effects {
        destructive: Some(true),
        filesystem: Some(crate::model::FilesystemEffects {
            write: Some(true),
            ..Default::default()
        }),
        modifies: Some(vec!["file".into()]),
        ..Default::default()
    }
}

/// The worst case of a command over every condition its parameters can bring
/// (`x-atip-effects` of each, an overwrite for each `x-atip-writes`), and the flags that
/// bring one. Export's hints and safety suffix describe this, because MCP's hints and a
/// description are per tool while atip decides per call (`spec/export.md`).
pub fn worst_case<'a>(
    base: &Effects,
    guards: impl Iterator<Item = (&'a str, &'a ParamGuard)>,
) -> (Effects, Vec<String>) {
    let overwrite = overwrite_effects();
    let mut conditions: Vec<&Effects> = Vec::new();
    let mut flags = Vec::new();
    for (flag, g) in guards {
        let mut hit = false;
        // A condition that only lowers effects (`--sandbox`, a safe `chmod` mode) is no
        // worst case: leaving it out keeps the plain call's effects in the join.
        if let Some(e) = g.effects.as_ref().filter(|e| raises(e)) {
            conditions.push(e);
            hit = true;
        }
        if g.writes.is_some() {
            conditions.push(&overwrite);
            hit = true;
        }
        if hit {
            flags.push(flag.to_string());
        }
    }
    (base.under(&conditions), flags)
}

/// Whether a condition states some effect worse than none: destructive, network,
/// subprocess, a filesystem write or delete, not reversible or idempotent, billable, or
/// resources it creates, modifies or deletes.
fn raises(e: &Effects) -> bool {
    let fs = e.filesystem.as_ref();
    e.destructive == Some(true)
        || e.network == Some(true)
        || e.subprocess == Some(true)
        || e.reversible == Some(false)
        || e.idempotent == Some(false)
        || fs.is_some_and(|f| f.write == Some(true) || f.delete == Some(true))
        || e.cost.as_ref().is_some_and(|c| c.billable == Some(true))
        || [&e.creates, &e.modifies, &e.deletes]
            .iter()
            .any(|l| l.as_ref().is_some_and(|l| !l.is_empty()))
}

impl ParamGuard {
    /// Whether no annotation applies (skipped when serialized).
    pub fn is_empty(&self) -> bool {
        *self == ParamGuard::default()
    }

    /// The guard an argument's or option's extension keys describe.
    pub fn from_extra(extra: &Extra) -> ParamGuard {
        let mut g = ParamGuard::default();
        let mut bad = Vec::new();
        if let Some(v) = extra.get(RUNNER) {
            match v {
                Value::Bool(b) => g.runner = *b,
                _ => bad.push(format!("{RUNNER} must be true or false")),
            }
        }
        let globs = |key: &str, bad: &mut Vec<String>| -> Option<Vec<String>> {
            let v = extra.get(key)?;
            let list: Option<Vec<String>> = v
                .as_array()
                .and_then(|a| a.iter().map(|s| s.as_str().map(str::to_string)).collect());
            match list {
                Some(l) if l.iter().all(|p| globset::Glob::new(p).is_ok()) => Some(l),
                _ => {
                    bad.push(format!("{key} must be a list of glob strings"));
                    None
                }
            }
        };
        g.runner_unless = globs(RUNNER_UNLESS, &mut bad);
        g.runner_if = globs(RUNNER_IF, &mut bad).unwrap_or_default();
        g.effects_if = globs(EFFECTS_IF, &mut bad).unwrap_or_default();
        if let Some(v) = extra.get(EFFECTS) {
            match v {
                Value::Object(_) => match serde_json::from_value::<Effects>(v.clone()) {
                    Ok(e) => g.effects = Some(e),
                    Err(e) => bad.push(format!("{EFFECTS} is not an effects object: {e}")),
                },
                _ => bad.push(format!("{EFFECTS} must be an effects object")),
            }
        }
        if !g.effects_if.is_empty() && g.effects.is_none() {
            bad.push(format!("{EFFECTS_IF} without {EFFECTS}"));
        }
        if let Some(v) = extra.get(SANDBOX) {
            match v {
                Value::Bool(b) => g.sandbox = *b,
                _ => bad.push(format!("{SANDBOX} must be true or false")),
            }
        }
        if let Some(v) = extra.get(LEADING) {
            match v {
                Value::Bool(b) => g.leading = *b,
                _ => bad.push(format!("{LEADING} must be true or false")),
            }
        }
        if let Some(v) = extra.get(TERMINATOR) {
            match v.as_str() {
                Some(t) if !t.is_empty() && !t.starts_with('-') => g.terminator = Some(t.into()),
                _ => bad.push(format!(
                    "{TERMINATOR} must be a word that does not start with '-'"
                )),
            }
        }
        let shape = |key: &str, known: &[&str], bad: &mut Vec<String>| -> Option<String> {
            let v = extra.get(key)?;
            match v.as_str() {
                Some(s) if known.contains(&s) => Some(s.to_string()),
                _ => {
                    bad.push(format!("{key} must be one of {}", known.join(", ")));
                    None
                }
            }
        };
        g.url = shape(URL, URL_SHAPES, &mut bad);
        g.reads = shape(READS, READ_SHAPES, &mut bad);
        g.writes = shape(WRITES, WRITE_SHAPES, &mut bad);
        if !bad.is_empty() {
            g.invalid = Some(bad.join("; "));
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn guard(v: Value) -> ParamGuard {
        ParamGuard::from_extra(v.as_object().unwrap())
    }

    #[test]
    fn annotations_parse_and_malformed_ones_are_kept_as_invalid() {
        assert!(guard(json!({"x-other": 1})).is_empty());
        let g = guard(json!({"x-atip-runner-unless": ["user.*"], "x-atip-url": "url-or-host"}));
        assert_eq!(
            g.runner_unless.as_deref(),
            Some(&["user.*".to_string()][..])
        );
        assert_eq!(g.url.as_deref(), Some("url-or-host"));
        assert!(g.invalid.is_none());
        assert!(guard(json!({"x-atip-runner": true})).runner);
        for bad in [
            json!({"x-atip-runner": "yes"}),
            json!({"x-atip-runner-unless": "user.*"}),
            json!({"x-atip-runner-if": [1]}),
            json!({"x-atip-runner-if": ["["]}),
            json!({"x-atip-url": "hostname"}),
            json!({"x-atip-reads": true}),
            json!({"x-atip-effects": true}),
            json!({"x-atip-effects": {"destructive": "yes"}}),
            json!({"x-atip-effects-if": ["a"]}),
            json!({"x-atip-writes": "file"}),
            json!({"x-atip-sandbox": 1}),
            json!({"x-atip-leading": "yes"}),
            json!({"x-atip-terminator": ""}),
            json!({"x-atip-terminator": "--end"}),
        ] {
            assert!(guard(bad.clone()).invalid.is_some(), "{bad}");
        }
        let g = guard(
            json!({"x-atip-effects": {"destructive": true}, "x-atip-effects-if": ["0*"], "x-atip-writes": "path", "x-atip-sandbox": true}),
        );
        assert!(g.invalid.is_none(), "{g:?}");
        assert_eq!(g.effects.as_ref().and_then(|e| e.destructive), Some(true));
        assert_eq!(g.effects_if, ["0*"]);
        assert_eq!(g.writes.as_deref(), Some("path"));
        assert!(g.sandbox);
        let back: ParamGuard = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(back, g);
        let g = guard(json!({"x-atip-leading": true, "x-atip-terminator": ";"}));
        assert!(g.invalid.is_none() && g.leading, "{g:?}");
        assert_eq!(g.terminator.as_deref(), Some(";"));
        let back: ParamGuard = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(back, g);
        // Round trip through the catalog's JSON.
        let g = guard(json!({"x-atip-reads": "@path", "x-atip-runner-if": ["ext::*"]}));
        let back: ParamGuard = serde_json::from_value(serde_json::to_value(&g).unwrap()).unwrap();
        assert_eq!(back, g);
    }

    /// A condition that only lowers effects is no worst case: a destructive command
    /// with a safe-mode option stays destructive in the worst case, and the option is
    /// not named as bringing more effects.
    #[test]
    fn lowering_conditions_do_not_lower_the_worst_case() {
        let base: Effects =
            serde_json::from_value(json!({"destructive": true, "network": false})).unwrap();
        let safe = guard(json!({"x-atip-effects": {"destructive": false, "subprocess": false}}));
        let force = guard(json!({"x-atip-effects": {"destructive": true, "network": true}}));
        let (worst, flags) = worst_case(&base, [("--dry-run", &safe)].into_iter());
        assert_eq!(worst.destructive, Some(true));
        assert!(flags.is_empty(), "{flags:?}");
        let (worst, flags) = worst_case(
            &base,
            [("--dry-run", &safe), ("--force", &force)].into_iter(),
        );
        assert_eq!((worst.destructive, worst.network), (Some(true), Some(true)));
        assert_eq!(flags, ["--force"]);
    }
}
