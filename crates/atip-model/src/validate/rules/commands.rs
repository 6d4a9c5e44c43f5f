//! Rules over the command tree: flags and names in scope, positional order, enums and
//! defaults, flattened tool names.
//!
//! One depth-first walk with an explicit stack (never recursion) that keeps the path
//! and the options in scope (global, then each ancestor's, then the command's own) as
//! borrowed slices: a valid document costs no allocation per command. Pointers are
//! built only when a diagnostic is emitted.
//!
//! Must not check anything outside `globalOptions` and `commands`.

use super::super::Diagnostic;
use super::super::json::Json;
use super::super::locate::escape_token;
use super::super::view::key_tag;
use super::{short, short_list};
use crate::model::ParamType;
use std::collections::{HashMap, HashSet};

/// An option in scope: where it was declared and its flags (looked up once: every flag
/// of every later option in scope is compared with them).
#[derive(Clone)]
struct Entry<'a, J: Json<'a>> {
    name: &'a str,
    flags: J::Items,
    /// 0 for `globalOptions`, else the depth of the declaring command.
    depth: usize,
    index: usize,
    /// [`key_tag`] of the first flags ([`NOT_A_FLAG`] for a non-string): every later
    /// flag in scope is compared with them, mostly without reading a string.
    tags: [u64; TAGGED],
    /// The flags of this entry and of every entry before it in scope, as a
    /// [`FlagFilter`]: most flags are new, and this settles so without a scan.
    in_scope: FlagFilter,
}

/// A 256-bit Bloom filter of flag tags: a clear bit means "certainly no such flag".
#[derive(Clone, Copy, Default)]
struct FlagFilter([u64; 4]);

impl FlagFilter {
    #[inline]
    fn bit(tag: u64) -> (usize, u64) {
        let h = tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56;
        ((h >> 6) as usize, 1 << (h & 63))
    }
    #[inline]
    fn insert(&mut self, tag: u64) {
        let (word, bit) = Self::bit(tag);
        self.0[word] |= bit;
    }
    #[inline]
    fn may_contain(&self, tag: u64) -> bool {
        let (word, bit) = Self::bit(tag);
        self.0[word] & bit != 0
    }
}

/// Flags per option whose tags are kept (options rarely have more than two).
const TAGGED: usize = 4;

/// No string's [`key_tag`]: its length byte says 255 and its bytes are not UTF-8.
const NOT_A_FLAG: u64 = u64::MAX;

impl<'a, J: Json<'a>> Entry<'a, J> {
    /// `before`: the filter of the scope this entry joins.
    fn new(name: &'a str, flags: J::Items, depth: usize, index: usize, before: FlagFilter) -> Self {
        let mut tags = [NOT_A_FLAG; TAGGED];
        let mut in_scope = before;
        for (i, f) in flags.clone().enumerate() {
            if let Some(f) = f.as_str() {
                let tag = key_tag(f);
                in_scope.insert(tag);
                if let Some(slot) = tags.get_mut(i) {
                    *slot = tag;
                }
            }
        }
        Entry {
            name,
            flags,
            depth,
            index,
            tags,
            in_scope,
        }
    }

    fn flags(&self) -> J::Items {
        self.flags.clone()
    }

    /// Whether `flag` (whose [`key_tag`] is `tag`) is one of the flags.
    fn has_flag(&self, flag: &str, tag: u64) -> bool {
        if self.flags.len() > TAGGED {
            return self.flags().any(|f| f.as_str() == Some(flag));
        }
        self.tags
            .iter()
            .zip(self.flags())
            .any(|(&t, f)| t == tag && (flag.len() < 8 || f.as_str() == Some(flag)))
    }

    fn pointer(&self, path: &[&str]) -> String {
        if self.depth == 0 {
            format!("/globalOptions/{}", self.index)
        } else {
            format!(
                "{}/options/{}",
                command_pointer(&path[..self.depth]),
                self.index
            )
        }
    }
}

/// `/commands/a/commands/b` for the path `[a, b]`.
fn command_pointer(path: &[&str]) -> String {
    let mut out = String::new();
    for segment in path {
        out.push_str("/commands/");
        out.push_str(&escape_token(segment));
    }
    out
}

/// Names equal once `-` and `_` are taken as the same character (both become `_` in
/// exported property names).
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .all(|(x, y)| x == y || (matches!(x, b'-' | b'_') && matches!(y, b'-' | b'_')))
}

#[inline]
fn name_of<'a, J: Json<'a>>(v: J) -> &'a str {
    v.get("name").and_then(J::as_str).unwrap_or("")
}

#[inline]
fn list<'a, J: Json<'a>>(parent: J, key: &str) -> J::Items {
    match parent.get(key).and_then(J::items) {
        Some(items) => items,
        None => parent.no_items(),
    }
}

/// Above this many pairwise comparisons a command is checked through hash indexes
/// instead of linear scans, so hostile documents (60,000 options) stay linear.
const LINEAR_BUDGET: usize = 4096;

/// Hash indexes of a large command's options.
struct Index<'a> {
    /// Normalized name → scope index, for the command's own options.
    names: HashMap<String, usize>,
    /// Flag → scope index of the option in effect that spells it.
    flags: HashMap<&'a str, usize>,
}

impl<'a> Index<'a> {
    fn new<J: Json<'a>>(scope: &[Entry<'a, J>], own: J::Items) -> Self {
        let own_names: HashSet<&str> = own.filter(|o| o.is_object()).map(name_of).collect();
        let mut last: HashMap<&str, usize> = HashMap::new();
        for (i, e) in scope.iter().enumerate() {
            last.insert(e.name, i);
        }
        let mut flags = HashMap::new();
        for (i, e) in scope.iter().enumerate() {
            if last.get(e.name) != Some(&i) || own_names.contains(e.name) {
                continue;
            }
            for f in e.flags().filter_map(J::as_str) {
                flags.entry(f).or_insert(i);
            }
        }
        Index {
            names: HashMap::new(),
            flags,
        }
    }
}

fn normalized(name: &str) -> String {
    name.replace('-', "_")
}

/// Checks the options declared at `depth` against the scope and each other, then adds
/// them to the scope.
fn check_options<'a, J: Json<'a>>(
    own: J::Items,
    depth: usize,
    path: &[&'a str],
    scope: &mut Vec<Entry<'a, J>>,
    out: &mut Vec<Diagnostic>,
) {
    let inherited = scope.len();
    let mut index = (own.len().saturating_mul(inherited + own.len()) > LINEAR_BUDGET)
        .then(|| Index::new(scope, own.clone()));
    for (position, opt) in own.clone().enumerate() {
        if !opt.is_object() {
            continue;
        }
        let before = scope.last().map(|e| e.in_scope).unwrap_or_default();
        let entry = Entry::new(name_of(opt), list(opt, "flags"), depth, position, before);
        let here = || entry.pointer(path);
        if !entry.name.is_empty()
            && let Some(first) = first_named(index.as_mut(), scope, inherited, entry.name)
        {
            out.push(Diagnostic::new(
                "duplicate-name",
                format!("{}/name", here()),
                format!(
                    "option name \"{}\" is already used by {}",
                    entry.name,
                    scope[first].pointer(path)
                ),
            ));
        }
        let flags: J::Items = entry.flags();
        // Only for a long list: building a HashSet costs a RandomState per option.
        let mut seen_here: Option<HashSet<&str>> = (flags.len() > 16).then(HashSet::new);
        for (k, flag) in flags.clone().enumerate() {
            let Some(flag) = flag.as_str() else { continue };
            let tag = entry.tags.get(k).copied().unwrap_or_else(|| key_tag(flag));
            if listed_before(&entry, seen_here.as_mut(), k, flag, tag) {
                out.push(Diagnostic::new(
                    "duplicate-flag",
                    format!("{}/flags/{k}", here()),
                    format!("flag {flag} is listed twice in option \"{}\"", entry.name),
                ));
                continue;
            }
            let clash = match index.as_ref() {
                Some(ix) => ix.flags.get(flag).copied(),
                None if !before.may_contain(tag) => None,
                None => (0..scope.len()).find(|&i| {
                    scope[i].has_flag(flag, tag)
                        && (i >= inherited || !shadowed(scope, i, inherited, own.clone()))
                }),
            };
            if let Some(i) = clash {
                let other = &scope[i];
                out.push(Diagnostic::new(
                    "duplicate-flag",
                    format!("{}/flags/{k}", here()),
                    format!(
                        "flag {flag} of option \"{}\" is also a flag of {}option \"{}\" ({})",
                        entry.name,
                        if i < inherited { "inherited " } else { "" },
                        other.name,
                        other.pointer(path)
                    ),
                ));
            }
        }
        if let Some(ix) = index.as_mut() {
            for f in flags.filter_map(J::as_str) {
                ix.flags.entry(f).or_insert(scope.len());
            }
        }
        check_param(opt, entry.name, &here, out);
        scope.push(entry);
    }
}

/// Where the option named `name` (about to join the scope) was first declared among the
/// command's own options: the index's answer (which learns the name), or a search from
/// `inherited` on.
fn first_named<'a, J: Json<'a>>(
    index: Option<&mut Index<'a>>,
    scope: &[Entry<'a, J>],
    inherited: usize,
    name: &'a str,
) -> Option<usize> {
    match index {
        Some(ix) => match ix.names.entry(normalized(name)) {
            std::collections::hash_map::Entry::Occupied(o) => Some(*o.get()),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(scope.len());
                None
            }
        },
        None => (inherited..scope.len()).find(|&i| same_name(scope[i].name, name)),
    }
}

/// Whether flag `k` of the option (`flag`, its `tag`) is listed before in the same
/// option: by the set `seen` for a long list, else by tags (whole strings compared only
/// for short flags whose tags may collide), else by strings.
fn listed_before<'a, J: Json<'a>>(
    entry: &Entry<'a, J>,
    seen: Option<&mut HashSet<&'a str>>,
    k: usize,
    flag: &'a str,
    tag: u64,
) -> bool {
    let flags = entry.flags();
    match seen {
        Some(seen) => !seen.insert(flag),
        None if flags.len() <= TAGGED => entry.tags[..k]
            .iter()
            .zip(flags)
            .any(|(&t, f)| t == tag && (flag.len() < 8 || f.as_str() == Some(flag))),
        None => flags.take(k).any(|f| f.as_str() == Some(flag)),
    }
}

/// Whether inherited scope entry `i` is overridden: a later inherited option, or one of
/// the command's own options, has the same name.
fn shadowed<'a, J: Json<'a>>(
    scope: &[Entry<'a, J>],
    i: usize,
    inherited: usize,
    mut own: J::Items,
) -> bool {
    let name = scope[i].name;
    scope[i + 1..inherited].iter().any(|e| e.name == name)
        || own.any(|o| o.is_object() && name_of(o) == name)
}

/// Checks a command's positional arguments: each one's enum and default, names unique
/// among the arguments and the options in scope, and their order (required before
/// optional, nothing after a variadic one).
fn check_arguments<'a, J: Json<'a>>(
    args: J::Items,
    path: &[&str],
    scope: &[Entry<'a, J>],
    out: &mut Vec<Diagnostic>,
) {
    let mut seen_optional: Option<usize> = None;
    let mut seen_variadic: Option<usize> = None;
    let arg_ptr = |i: usize| format!("{}/arguments/{i}", command_pointer(path));
    let mut names = ArgNames::new(args.clone(), scope);
    for (i, a) in args.clone().enumerate() {
        if !a.is_object() {
            continue;
        }
        let here = || arg_ptr(i);
        let name = name_of(a);
        check_param(a, name, &here, out);
        if !name.is_empty() {
            match names.clash(i, name) {
                Some(Clash::Argument(j)) => out.push(Diagnostic::new(
                    "duplicate-name",
                    format!("{}/name", here()),
                    format!(
                        "argument name \"{name}\" is already used by {}/name",
                        arg_ptr(j)
                    ),
                )),
                Some(Clash::Option(opt)) => out.push(Diagnostic::new(
                    "duplicate-name",
                    format!("{}/name", here()),
                    format!(
                        "argument name \"{name}\" is also the name of option {}",
                        opt.pointer(path)
                    ),
                )),
                None => {}
            }
        }
        let required = a.get("required").and_then(J::as_bool).unwrap_or(true);
        let variadic = a.get("variadic").and_then(J::as_bool).unwrap_or(false);
        if let Some(v) = seen_variadic {
            out.push(if variadic {
                Diagnostic::new(
                    "multiple-variadic",
                    here(),
                    format!("argument \"{name}\" is variadic, but so is {}", arg_ptr(v)),
                )
            } else {
                Diagnostic::new(
                    "argument-after-variadic",
                    here(),
                    format!(
                        "argument \"{name}\" follows variadic argument {}, which takes every remaining value",
                        arg_ptr(v)
                    ),
                )
            });
        } else if required && let Some(o) = seen_optional {
            out.push(Diagnostic::new(
                "required-after-optional",
                here(),
                format!(
                    "required argument \"{name}\" follows optional argument {}",
                    arg_ptr(o)
                ),
            ));
        }
        if variadic && seen_variadic.is_none() {
            seen_variadic = Some(i);
        }
        if !required && seen_optional.is_none() {
            seen_optional = Some(i);
        }
    }
}

/// What an argument's name clashes with.
enum Clash<'s, 'a, J: Json<'a>> {
    /// An earlier argument, by index.
    Argument(usize),
    /// An option in scope.
    Option(&'s Entry<'a, J>),
}

/// The names an argument's may clash with: the earlier arguments' and the options' in
/// scope, hash-indexed for a large command only (each HashMap costs a RandomState).
struct ArgNames<'s, 'a, J: Json<'a>> {
    args: J::Items,
    scope: &'s [Entry<'a, J>],
    arg_names: Option<HashMap<String, usize>>,
    scope_names: Option<HashMap<String, usize>>,
}

impl<'s, 'a, J: Json<'a>> ArgNames<'s, 'a, J> {
    fn new(args: J::Items, scope: &'s [Entry<'a, J>]) -> Self {
        let large = args.len().saturating_mul(args.len() + scope.len()) > LINEAR_BUDGET;
        let scope_names = large.then(|| {
            scope
                .iter()
                .enumerate()
                .rev()
                .map(|(i, e)| (normalized(e.name), i))
                .collect()
        });
        ArgNames {
            args,
            scope,
            arg_names: large.then(HashMap::new),
            scope_names,
        }
    }

    /// The clash of argument `i` named `name`: an earlier argument first, else an option.
    fn clash(&mut self, i: usize, name: &str) -> Option<Clash<'s, 'a, J>> {
        let earlier = match self.arg_names.as_mut() {
            Some(arg_names) => {
                let key = normalized(name);
                match arg_names.get(&key) {
                    Some(&j) => Some(j),
                    None => {
                        arg_names.insert(key, i);
                        None
                    }
                }
            }
            None => self
                .args
                .clone()
                .take(i)
                .position(|b| b.is_object() && same_name(name_of(b), name)),
        };
        if let Some(j) = earlier {
            return Some(Clash::Argument(j));
        }
        let scope = self.scope;
        let in_scope = match self.scope_names.as_ref() {
            Some(names) => names.get(&normalized(name)).map(|&k| &scope[k]),
            None => scope.iter().find(|o| same_name(o.name, name)),
        };
        in_scope.map(Clash::Option)
    }
}

/// Enum and default checks for one argument or option (`name`: its [`name_of`]).
fn check_param<'a, J: Json<'a>>(
    p: J,
    name: &str,
    ptr: &dyn Fn() -> String,
    out: &mut Vec<Diagnostic>,
) {
    let Some(type_name) = p.get("type").and_then(J::as_str) else {
        return;
    };
    let kind = ParamType::parse(type_name);
    if matches!(kind, ParamType::Unknown(_)) {
        return;
    }
    let values = p.get("enum").and_then(J::items);
    if kind == ParamType::Enum && values.as_ref().is_none_or(|v| v.len() == 0) {
        out.push(Diagnostic::new(
            "enum-without-values",
            if values.is_some() {
                format!("{}/enum", ptr())
            } else {
                ptr()
            },
            format!("\"{name}\" has type enum but lists no values"),
        ));
    }
    // The values of an array parameter are its elements.
    let element =
        |v: J| kind.accepts(v) || (kind == ParamType::Array && !v.is_array() && !v.is_object());
    let values = values.unwrap_or_else(|| p.no_items());
    for (i, v) in values.clone().enumerate() {
        if !element(v) {
            out.push(Diagnostic::new(
                "enum-value-type",
                format!("{}/enum/{i}", ptr()),
                format!(
                    "enum value {} of \"{name}\" is not of type {type_name}",
                    short(v)
                ),
            ));
        }
    }
    if let Some(default) = p.get("default").filter(|d| !d.is_null()) {
        let param = Param {
            name,
            kind: &kind,
            type_name,
            ptr,
        };
        param.check_default(p, default, values, out);
    }
}

/// One argument or option under [`check_param`]: what its findings name.
struct Param<'p> {
    name: &'p str,
    kind: &'p ParamType,
    type_name: &'p str,
    ptr: &'p dyn Fn() -> String,
}

impl Param<'_> {
    /// `p`'s default is of the type (item by item when variadic or an array) and, with an
    /// enum, one of its `values`.
    fn check_default<'a, J: Json<'a>>(
        &self,
        p: J,
        default: J,
        values: J::Items,
        out: &mut Vec<Diagnostic>,
    ) {
        let (kind, name, type_name) = (self.kind, self.name, self.type_name);
        let variadic = p.get("variadic").and_then(J::as_bool).unwrap_or(false);
        // A variadic or array default is checked item by item; anything else as one item.
        let items = default
            .items()
            .filter(|_| variadic || *kind == ParamType::Array);
        let typed = kind.accepts(default)
            || (variadic
                && default
                    .items()
                    .is_some_and(|mut all| all.all(|v| kind.accepts(v))));
        if !typed {
            out.push(Diagnostic::new(
                "default-type",
                format!("{}/default", (self.ptr)()),
                format!(
                    "default {} of \"{name}\" is not of type {type_name}",
                    short(default)
                ),
            ));
            return;
        }
        if values.len() == 0 {
            return;
        }
        let listed = |item: &J| values.clone().any(|v| v.same(*item));
        let stray = match items {
            Some(mut items) => items.find(|item| !listed(item)),
            None => Some(default).filter(|d| !listed(d)),
        };
        if let Some(item) = stray {
            out.push(Diagnostic::new(
                "default-not-in-enum",
                format!("{}/default", (self.ptr)()),
                format!(
                    "default {} of \"{name}\" is not one of {}",
                    short(item),
                    short_list(&values.map(J::to_value).collect::<Vec<_>>())
                ),
            ));
        }
    }
}

/// The provider tool name a command path flattens to: the tool name and the non-empty
/// path segments joined by `_`, every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn flatten_name(tool: &str, path: &[&str]) -> String {
    let mut name = tool.to_string();
    for segment in path.iter().filter(|s| !s.is_empty()) {
        name.push('_');
        name.push_str(segment);
    }
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Whether a command name can make two paths flatten alike: it holds `_` or a character
/// that becomes `_`, or it is empty below the top level.
fn risky(name: &str, depth: usize) -> bool {
    (name.is_empty() && depth > 1)
        || name
            .bytes()
            .any(|b| !(b.is_ascii_alphanumeric() || b == b'-'))
}

/// Runs every command-tree rule.
pub(super) fn check_commands<'a, J: Json<'a>>(root: J, out: &mut Vec<Diagnostic>) {
    let mut scope: Vec<Entry<'a, J>> = Vec::new();
    let mut path: Vec<&str> = Vec::new();
    check_options(list(root, "globalOptions"), 0, &path, &mut scope, out);
    let Some(top) = root.get("commands").filter(|c| c.is_object()) else {
        return;
    };
    let mut any_risky = false;
    // (children still to visit, scope length to restore when leaving the parent)
    let mut stack = vec![(top.members().unwrap_or_else(|| unreachable!()), scope.len())];
    while let Some((children, _)) = stack.last_mut() {
        let Some((name, child)) = children.next() else {
            let (_, restore) = stack.pop().unwrap_or_else(|| unreachable!());
            if !stack.is_empty() {
                scope.truncate(restore);
                path.pop();
            }
            continue;
        };
        let cmd = child;
        if !cmd.is_object() {
            continue;
        }
        path.push(name);
        any_risky |= risky(name, path.len());
        let before = scope.len();
        check_options(list(cmd, "options"), path.len(), &path, &mut scope, out);
        check_arguments(list(cmd, "arguments"), &path, &scope, out);
        match cmd.get("commands").and_then(J::members) {
            Some(grandchildren) if grandchildren.len() > 0 => {
                stack.push((grandchildren, before));
            }
            _ => {
                scope.truncate(before);
                path.pop();
            }
        }
    }
    if any_risky {
        check_flattened(root, top, out);
    }
}

/// Reports command paths whose flattened tool names collide (slow path: only when some
/// command name could collide at all).
fn check_flattened<'a, J: Json<'a>>(root: J, top: J, out: &mut Vec<Diagnostic>) {
    let tool = root
        .get("name")
        .and_then(J::as_str)
        .or_else(|| root.get("binary")?.get("name")?.as_str())
        .unwrap_or("tool");
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut stack: Vec<(Vec<&str>, J)> = top
        .members()
        .into_iter()
        .flatten()
        .rev()
        .filter(|(_, c)| c.is_object())
        .map(|(n, c)| (vec![n], c))
        .collect();
    while let Some((path, cmd)) = stack.pop() {
        let flat = flatten_name(tool, &path);
        let ptr = command_pointer(&path);
        match seen.get(&flat) {
            Some(first) => out.push(Diagnostic::new(
                "flattened-name-collision",
                ptr,
                format!(
                    "command \"{}\" flattens to tool name \"{flat}\", like {first}",
                    path.join(" ")
                ),
            )),
            None => {
                seen.insert(flat, ptr);
            }
        }
        if let Some(children) = cmd.get("commands").and_then(J::members) {
            for (n, c) in children.rev() {
                if c.is_object() {
                    let mut p = path.clone();
                    p.push(n);
                    stack.push((p, c));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn opt(name: &str, flags: &[&str]) -> Value {
        json!({"name": name, "flags": flags, "type": "boolean", "description": "x"})
    }

    /// The same clashes, found by linear scans (small command) and hash indexes (padded
    /// with hundreds of harmless options).
    fn clashes(padding: usize) -> Vec<(String, String)> {
        let mut own = vec![
            opt("version", &["-v"]), // clashes with global -v
            opt("quiet", &["-q"]),   // global quiet is overridden: -q free
            opt("dry-run", &["-n"]),
            opt("dry_run", &["-N", "-N"]), // same name; flag twice
            opt("force", &["-n"]),         // clashes with own dry-run
        ];
        for i in 0..padding {
            own.push(opt(&format!("pad{i}"), &[&format!("--pad{i}")]));
        }
        let root = json!({
            "globalOptions": [opt("verbose", &["-v"]), opt("quiet", &["-q"])],
            "commands": {"c": {"description": "c", "options": own,
                "arguments": [{"name": "force", "type": "string", "description": "x"},
                              {"name": "file", "type": "string", "description": "x"},
                              {"name": "file", "type": "string", "description": "x"}]}}
        });
        let mut out = Vec::new();
        check_commands(&root, &mut out);
        let mut got: Vec<(String, String)> = out.into_iter().map(|d| (d.rule, d.pointer)).collect();
        got.sort();
        got
    }

    #[test]
    fn large_commands_find_what_small_ones_find() {
        let small = clashes(0);
        assert_eq!(
            small,
            [
                (
                    "duplicate-flag".to_string(),
                    "/commands/c/options/0/flags/0".to_string()
                ),
                (
                    "duplicate-flag".into(),
                    "/commands/c/options/3/flags/1".into()
                ),
                (
                    "duplicate-flag".into(),
                    "/commands/c/options/4/flags/0".into()
                ),
                (
                    "duplicate-name".into(),
                    "/commands/c/arguments/0/name".into()
                ),
                (
                    "duplicate-name".into(),
                    "/commands/c/arguments/2/name".into()
                ),
                ("duplicate-name".into(), "/commands/c/options/3/name".into()),
            ]
        );
        assert_eq!(clashes(300), small);
    }

    /// The light view (the fast path's) finds exactly the clashes `Value` finds, in a
    /// crowded scope: its flag filter may only skip flags that are certainly new.
    #[test]
    fn the_view_finds_every_clash_the_value_finds() {
        let letter = |i: usize| (b'A' + (i % 26) as u8) as char;
        let globals: Vec<Value> = (0..40)
            .map(|i| {
                opt(
                    &format!("g{i}"),
                    &[&format!("--g{i}"), &format!("-{}", letter(i))],
                )
            })
            .collect();
        let level = |depth: usize, inner: Value| {
            json!({"description": "x", "options": [
                opt(&format!("own{depth}"), &[&format!("--own{depth}"), "-z"]),
                opt(&format!("re{depth}"), &[&format!("--g{}", depth * 7)]),
                opt(&format!("up{depth}"), &[&format!("--own{}", depth.saturating_sub(1))]),
            ], "commands": inner})
        };
        let mut tree = json!({});
        for depth in (1..=4).rev() {
            tree = json!({ format!("c{depth}"): level(depth, tree) });
        }
        let root = json!({"globalOptions": globals, "commands": tree});
        let pointers = |out: Vec<Diagnostic>| -> Vec<(String, String)> {
            out.into_iter().map(|d| (d.rule, d.pointer)).collect()
        };
        let (by_value, by_view) = by_value_and_by_view(&root);
        let (by_value, by_view) = (pointers(by_value), pointers(by_view));
        assert_eq!(by_view, by_value);
        // 14 globals repeat a letter; every level re-declares -z, a global's long flag and
        // its parent's --own flag (level 1 has no parent --own0).
        let flags = by_view
            .iter()
            .filter(|(r, _)| r == "duplicate-flag")
            .count();
        assert_eq!(flags, 14 + 3 + 4 + 3);
    }

    /// The command rules' diagnostics on `root` as a `Value`, then on its light view.
    fn by_value_and_by_view(root: &Value) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
        let mut by_value = Vec::new();
        check_commands(root, &mut by_value);
        let text = serde_json::to_vec(root).unwrap();
        let doc = crate::validate::view::Doc::parse(&text).unwrap();
        let mut by_view = Vec::new();
        check_commands(doc.root(), &mut by_view);
        (by_value, by_view)
    }

    #[test]
    fn a_flag_repeated_in_one_option_is_found_by_the_view_as_by_the_value() {
        let many: Vec<String> = (0..20).map(|i| format!("--f{i}")).collect();
        let mut twenty: Vec<Value> = many.iter().map(|f| json!(f)).collect();
        twenty.push(json!("--f3"));
        let options = json!([
            {"name": "a", "flags": ["-q", "-q"], "type": "boolean", "description": "x"},
            // Same tag (length and first seven bytes), different flags: no repeat.
            {"name": "b", "flags": ["--abcdefX", "--abcdefY"], "type": "boolean", "description": "x"},
            {"name": "c", "flags": ["--a-long-flag-name", "--a-long-flag-name"], "type": "boolean", "description": "x"},
            {"name": "d", "flags": ["-d", 1, "-d"], "type": "boolean", "description": "x"},
            // More flags than tags are kept, the repeat past them.
            {"name": "e", "flags": ["-e", "-E", "--e1", "--e2", "--e3", "-e"], "type": "boolean", "description": "x"},
            // A long list, checked through a set.
            {"name": "f", "flags": twenty, "type": "boolean", "description": "x"},
        ]);
        let root = json!({"commands": {"c": {"description": "x", "options": options}}});
        let (by_value, by_view) = by_value_and_by_view(&root);
        let repeats = |out: &[Diagnostic]| -> Vec<String> {
            out.iter()
                .filter(|d| d.message.contains("listed twice"))
                .map(|d| d.pointer.clone())
                .collect()
        };
        let expected = [
            "/commands/c/options/0/flags/1",
            "/commands/c/options/2/flags/1",
            "/commands/c/options/3/flags/2",
            "/commands/c/options/4/flags/5",
            "/commands/c/options/5/flags/20",
        ];
        assert_eq!(repeats(&by_view), expected);
        assert_eq!(repeats(&by_value), expected);
    }

    #[test]
    fn hostile_sizes_stay_linear() {
        let own: Vec<Value> = (0..50_000)
            .map(|i| opt(&format!("o{}", i % 3), &["-x"]))
            .collect();
        let args: Vec<Value> = (0..50_000)
            .map(|_| json!({"name": "a", "type": "string", "description": "x"}))
            .collect();
        let root =
            json!({"commands": {"c": {"description": "c", "options": own, "arguments": args}}});
        // Linear scans would make this quadratic (billions of comparisons).
        let mut out = Vec::new();
        check_commands(&root, &mut out);
        let flags = out.iter().filter(|d| d.rule == "duplicate-flag").count();
        let names = out.iter().filter(|d| d.rule == "duplicate-name").count();
        assert_eq!((flags, names), (49_999, 49_997 + 49_999));
    }
}
