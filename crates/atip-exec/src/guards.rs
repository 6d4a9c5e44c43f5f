//! Argument guards the metadata asks for, per parameter: values that make a call run a
//! program (`x-atip-runner`, `-unless`, `-if`), values that name a host to connect to
//! (`x-atip-url`, and every argument of type `url`), and values that name a file to read
//! (`x-atip-reads`, and every argument of type `file` or `directory`).
//!
//! This module only extracts what each value names and why; the policy
//! ([`super::policy`]) judges hosts and paths, and exec turns the answers into refusals.
//! Shapes and their parsing are written out in `spec/shims.md` ("Guard annotations").
//! Must not run anything or touch the disk.

use super::policy::{Policy, RuleHit, url_host};
use crate::compile::guard::ParamGuard;
use crate::compile::{FlatTool, Param, ParamOrigin};
use crate::model::{Effects, FilesystemEffects, ParamType};
use serde_json::{Map, Value};
use std::path::Path;

/// The values given for `p`, as text: array items one by one, a boolean only when
/// `true` (as `"true"`), nothing for `null` or `false`.
fn given(p: &Param, a: &Map<String, Value>) -> Vec<String> {
    let items: Vec<&Value> = match a.get(&p.property) {
        None | Some(Value::Null) => return Vec::new(),
        Some(Value::Array(items)) => items.iter().collect(),
        Some(v) => vec![v],
    };
    items
        .into_iter()
        .filter_map(|v| match v {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(true) => Some("true".into()),
            _ => None,
        })
        .collect()
}

/// How a parameter is shown in a reason: its flag, or the argument's name.
fn shown(p: &Param) -> String {
    match &p.origin {
        ParamOrigin::Option { flag, .. } if !flag.is_empty() => flag.clone(),
        ParamOrigin::Option { name, .. } => name.clone(),
        ParamOrigin::Argument { name, .. } => format!("argument {name}"),
    }
}

fn glob_matches(patterns: &[String], value: &str) -> bool {
    patterns.iter().any(|p| {
        globset::GlobBuilder::new(p)
            .case_insensitive(true)
            .build()
            .is_ok_and(|g| g.compile_matcher().is_match(value))
    })
}

/// Why the call runs a program because of a guarded parameter's value, when it does.
/// A malformed annotation on a given parameter counts as running one (unknown is never
/// safe).
pub(crate) fn runner_reason(tool: &FlatTool, a: &Map<String, Value>) -> Option<String> {
    for p in tool.params.iter().filter(|p| !p.guard.is_empty()) {
        let values = given(p, a);
        if values.is_empty() {
            continue;
        }
        let g: &ParamGuard = &p.guard;
        let flag = shown(p);
        if let Some(why) = &g.invalid {
            return Some(format!(
                "the metadata's guard annotation on {flag} is malformed ({why}), so giving it is treated as running a program"
            ));
        }
        if g.runner {
            return Some(format!(
                "{} with {flag} can run a program ({} on {flag})",
                tool.title,
                crate::compile::guard::RUNNER
            ));
        }
        for v in &values {
            if let Some(safe) = &g.runner_unless
                && !glob_matches(safe, v)
            {
                return Some(format!(
                    "{} with {flag} {v:?} can store or run a command: {v:?} is not a known-safe value ({})",
                    tool.title,
                    crate::compile::guard::RUNNER_UNLESS
                ));
            }
            if glob_matches(&g.runner_if, v) {
                return Some(format!(
                    "{} with {flag} {v:?} can run a program ({})",
                    tool.title,
                    crate::compile::guard::RUNNER_IF
                ));
            }
        }
    }
    None
}

/// The effects of one concrete call and the conditions that made them differ from the
/// command's: what the policy judges, `--dry-run` shows and the audit record names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallEffects {
    /// The command's effects under the conditions that hold (`Effects::under`).
    pub effects: Effects,
    /// One line per condition that applied, e.g. `--force: destructive`.
    pub conditions: Vec<String>,
}

/// Whether `v` is standard input or output rather than a file.
fn is_stdio(v: &str) -> bool {
    v == "-"
}

/// The effects of calling `tool` with `a` from `cwd`: the command's effects under the
/// `x-atip-effects` of every given parameter (for `x-atip-effects-if`, of every value
/// matching), and under each file an `x-atip-writes` value names: a new file is a write
/// that creates it; a path that already exists (anything `lstat` finds, a link too) is
/// a write that modifies it, destructive, so the policy asks. Looks at the disk (one
/// `lstat` per written path), runs nothing.
pub(crate) fn call_effects(tool: &FlatTool, a: &Map<String, Value>, cwd: &Path) -> CallEffects {
    let mut owned: Vec<Effects> = Vec::new();
    let mut conditions = Vec::new();
    let mut picked: Vec<&Effects> = Vec::new();
    let mut picked_idx: Vec<usize> = Vec::new();
    for p in &tool.params {
        let g = &p.guard;
        if g.effects.is_none() && g.writes.is_none() {
            continue;
        }
        let values = given(p, a);
        if values.is_empty() {
            continue;
        }
        let flag = shown(p);
        if let Some(e) = &g.effects {
            let hit = if g.effects_if.is_empty() {
                Some(String::new())
            } else {
                values
                    .iter()
                    .find(|v| glob_matches(&g.effects_if, v))
                    .map(|v| format!(" {v:?}"))
            };
            if let Some(which) = hit {
                conditions.push(format!("{flag}{which}: {}", e.summary()));
                picked.push(e);
            }
        }
        if g.writes.is_some() {
            for v in values.iter().filter(|v| !is_stdio(v)) {
                let exists = std::fs::symlink_metadata(cwd.join(v)).is_ok();
                let (e, why) = if exists {
                    (
                        crate::compile::guard::overwrite_effects(),
                        format!(
                            "{flag} writes {v:?}, which exists: it is overwritten (destructive)"
                        ),
                    )
                } else {
                    (
                        Effects {
                            filesystem: Some(FilesystemEffects {
                                write: Some(true),
                                ..Default::default()
                            }),
                            creates: Some(vec!["file".into()]),
                            ..Default::default()
                        },
                        format!("{flag} writes {v:?}, a new file"),
                    )
                };
                picked_idx.push(owned.len());
                owned.push(e);
                conditions.push(why);
            }
        }
    }
    picked.extend(picked_idx.iter().map(|i| &owned[*i]));
    CallEffects {
        effects: tool.effects.under(&picked),
        conditions,
    }
}

/// Splits on `:` outside `[…]` (IPv6 addresses in host fields).
fn split_colons(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            ':' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The hosts a value of an `x-atip-url` shape names (for `url`, the value itself).
fn hosts_of(shape: &str, value: &str) -> Vec<String> {
    let bare = |h: &str| url_host(h);
    match shape {
        "url-or-host" => {
            let rest = value.split_once("://").map_or(value, |(_, r)| r);
            vec![bare(rest)]
        }
        "host-port-addresses" => {
            let v = value.trim_start_matches(['+', '-']);
            let fields = split_colons(v);
            let mut out = vec![bare(fields[0])];
            if fields.len() > 2 {
                // Everything after `host:port:` is the address list; IPv6 addresses may
                // come bare, so rejoin before splitting on commas.
                let addrs = fields[2..].join(":");
                out.extend(addrs.split(',').map(|a| {
                    let a = a.trim();
                    a.strip_prefix('[')
                        .and_then(|x| x.strip_suffix(']'))
                        .map_or_else(|| a.to_ascii_lowercase(), crate::policy::host_text)
                }));
            }
            out
        }
        "host-port-host-port" => {
            let fields = split_colons(value);
            let mut out = vec![bare(fields[0])];
            if let Some(h) = fields.get(2) {
                out.push(bare(h));
            }
            out
        }
        _ => vec![bare(value)],
    }
}

/// The rules triggered by host-bearing values: arguments of type `url` (each item) and
/// parameters annotated `x-atip-url`.
pub(crate) fn url_hits(policy: &Policy, tool: &FlatTool, a: &Map<String, Value>) -> Vec<RuleHit> {
    let mut hits = Vec::new();
    for p in &tool.params {
        let shape = match (&p.guard.url, &p.kind) {
            (Some(s), _) => s.as_str(),
            (None, ParamType::Url) => "url",
            _ => continue,
        };
        for v in given(p, a) {
            if shape == "url" {
                hits.extend(policy.check_url(&p.property, &v));
                continue;
            }
            for host in hosts_of(shape, &v) {
                if host.is_empty() || host == "*" {
                    continue;
                }
                hits.extend(policy.check_host(&p.property, &host));
            }
        }
    }
    hits
}

/// The part of a `form` value naming a file: `"quoted"` (with `\"` escapes) or up to
/// the next `;`. Returns it and what follows.
fn form_file(s: &str) -> (String, &str) {
    if let Some(q) = s.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = q.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, n)) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => return (out, &q[i + 1..]),
                c => out.push(c),
            }
        }
        (out, "")
    } else {
        match s.split_once(';') {
            Some((f, rest)) => (f.to_string(), rest),
            None => (s.to_string(), ""),
        }
    }
}

/// The files a curl-style form field reads: `name=@file`, `name=<file` (a comma-separated
/// list for `@`), and `;headers=@file` / `;headers=<file`.
fn form_files(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let Some((_, content)) = value.split_once('=') else {
        return out;
    };
    let mut rest = content;
    if let Some(r) = rest.strip_prefix('@').or_else(|| rest.strip_prefix('<')) {
        let (file, after) = form_file(r);
        out.extend(file.split(',').map(str::to_string));
        if file.contains(',') {
            out.push(file);
        }
        rest = after;
    } else {
        rest = rest.split_once(';').map_or("", |(_, r)| r);
    }
    // The field's parameters: only `headers=` reads a file.
    while !rest.is_empty() {
        let r = rest.trim_start_matches([';', ' ']);
        if let Some(h) = r
            .strip_prefix("headers=@")
            .or_else(|| r.strip_prefix("headers=<"))
        {
            let (file, after) = form_file(h);
            out.push(file);
            rest = after;
        } else if let Some(q) = r.find('"').filter(|q| r.find(';').is_none_or(|s| *q < s)) {
            // A quoted parameter value: skip it whole.
            let (_, after) = form_file(&r[q..]);
            rest = after;
        } else {
            rest = r.split_once(';').map_or("", |(_, x)| x);
        }
    }
    out
}

/// The file references of one value in an `x-atip-reads` shape (standard input, `-`,
/// is not a file).
fn reads_of(shape: &str, value: &str) -> Vec<String> {
    let files = match shape {
        "path" => vec![value.to_string()],
        "@path" => value
            .strip_prefix('@')
            .map(|p| vec![p.to_string()])
            .unwrap_or_default(),
        "name@path" => match value.find(['=', '@']) {
            Some(i) if value.as_bytes()[i] == b'@' => vec![value[i + 1..].to_string()],
            _ => Vec::new(),
        },
        "form" => form_files(value),
        "path-unless-pair" if !value.contains('=') && !value.is_empty() => {
            vec![value.to_string()]
        }
        _ => Vec::new(),
    };
    files.into_iter().filter(|f| f != "-").collect()
}

/// Every path a call names that must lie inside the roots: values of `file` and
/// `directory` parameters, files `x-atip-writes` parameters write, and the file
/// references of `x-atip-reads` parameters, with
/// the property each came from.
pub(crate) fn paths<'a>(tool: &'a FlatTool, a: &Map<String, Value>) -> Vec<(&'a str, String)> {
    let mut out = Vec::new();
    for p in &tool.params {
        let whole =
            matches!(p.kind, ParamType::File | ParamType::Directory) || p.guard.writes.is_some();
        if !whole && p.guard.reads.is_none() {
            continue;
        }
        for v in given(p, a) {
            if whole && !(p.guard.writes.is_some() && is_stdio(&v)) {
                out.push((p.property.as_str(), v.clone()));
            }
            if let Some(shape) = &p.guard.reads {
                out.extend(
                    reads_of(shape, &v)
                        .into_iter()
                        .map(|f| (p.property.as_str(), f)),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_references_of_each_shape() {
        assert_eq!(reads_of("@path", "@/etc/passwd"), ["/etc/passwd"]);
        assert!(reads_of("@path", "a=b").is_empty());
        assert!(reads_of("@path", "@-").is_empty());
        assert_eq!(reads_of("name@path", "x@/etc/passwd"), ["/etc/passwd"]);
        assert_eq!(reads_of("name@path", "@../secret"), ["../secret"]);
        assert!(reads_of("name@path", "x=a@b").is_empty());
        assert!(reads_of("name@path", "=@x").is_empty());
        assert_eq!(reads_of("form", "f=@/etc/passwd"), ["/etc/passwd"]);
        assert_eq!(
            reads_of("form", "f=</etc/passwd;type=text/plain"),
            ["/etc/passwd"]
        );
        assert_eq!(
            reads_of("form", r#"f=@"/etc/pa;ss\"wd";filename=x"#),
            [r#"/etc/pa;ss"wd"#]
        );
        assert_eq!(
            reads_of("form", "f=ok;type=text/plain;headers=@/etc/hosts"),
            ["/etc/hosts"]
        );
        assert_eq!(
            reads_of(
                "form",
                r#"f=ok;filename="a;headers=@x";headers=</etc/hosts"#
            ),
            ["/etc/hosts"]
        );
        let many = reads_of("form", "f=@ok.txt,/etc/passwd");
        assert!(many.contains(&"/etc/passwd".to_string()), "{many:?}");
        assert!(reads_of("form", "f=plain").is_empty());
        assert_eq!(reads_of("path-unless-pair", "jar.txt"), ["jar.txt"]);
        assert!(reads_of("path-unless-pair", "a=b; c=d").is_empty());
        assert!(reads_of("path", "-").is_empty());
    }

    #[test]
    fn hosts_of_each_shape() {
        assert_eq!(hosts_of("url-or-host", "0x7f000001:8080"), ["0x7f000001"]);
        assert_eq!(hosts_of("url-or-host", "socks5h://u:p@[::1]:1080"), ["::1"]);
        assert_eq!(
            hosts_of("host-port-addresses", "+example.com:443:127.0.0.1,[::1]"),
            ["example.com", "127.0.0.1", "::1"]
        );
        assert_eq!(
            hosts_of("host-port-addresses", "example.com:443:::1"),
            ["example.com", "::1"]
        );
        assert_eq!(
            hosts_of("host-port-host-port", "example.com:443:[::1]:80"),
            ["example.com", "::1"]
        );
        assert_eq!(
            hosts_of("host-port-host-port", "::%31%32%37.0.0.1:80"),
            ["", "127.0.0.1"]
        );
    }
}
