//! "Certainly valid" under atip's schemas, decided over the light [`View`].
//!
//! jsonschema only validates `serde_json::Value`, whose construction is most of the cost
//! of validating a clean document. This is a small interpreter of the schema JSON for
//! the keywords atip's schemas use (type, properties, patternProperties,
//! additionalProperties, required, items, enum, pattern, minLength, minItems,
//! minimum, maximum, format, `$ref`, allOf, and if/then/else whose `if` is only
//! `required`), compiled once per kind. It answers `true` only when jsonschema would
//! certainly accept the document; anything it cannot decide — another keyword, a
//! non-ASCII string under a pattern, a float where an integer or bound is asked, a
//! format value outside a strict plain form — answers `false`, "not sure", and the
//! caller runs jsonschema. It never answers "invalid".
//!
//! Must not produce diagnostics: jsonschema's errors are the only schema diagnostics.

#[cfg(test)]
mod agree;
mod anchored;

use super::json::Json;
use super::view::{Items, Key, Type, View, key_tag, same_tagged_bytes, tail_word};
use crate::schema::{METADATA_SCHEMA_ID, SchemaName};
use anchored::Anchored;
use regex::Regex;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::LazyLock;

/// Whether jsonschema certainly accepts `value` under the schema `name`.
pub fn certainly_valid(name: SchemaName, value: View<'_>) -> bool {
    let index = SchemaName::ALL
        .iter()
        .position(|n| *n == name)
        .unwrap_or_default();
    COMPILED[index]
        .as_ref()
        .is_some_and(|s| s.check(s.root, value))
}

/// Each schema compiled on first use only: a run over tool metadata never pays for the
/// other three (compiling one is worth a few documents' checks, and `atip validate` of
/// one file is mostly start-up).
static COMPILED: [LazyLock<Option<Compiled>>; 4] = [
    LazyLock::new(|| compile(SchemaName::ALL[0])),
    LazyLock::new(|| compile(SchemaName::ALL[1])),
    LazyLock::new(|| compile(SchemaName::ALL[2])),
    LazyLock::new(|| compile(SchemaName::ALL[3])),
];

/// The metadata schema's JSON, which the others `$ref`.
static METADATA: LazyLock<Option<Value>> =
    LazyLock::new(|| serde_json::from_str(SchemaName::Metadata.text()).ok());

fn compile(name: SchemaName) -> Option<Compiled> {
    let metadata = METADATA.as_ref()?;
    if name == SchemaName::Metadata {
        return Some(Compiled::new(metadata, metadata));
    }
    let own: Value = serde_json::from_str(name.text()).ok()?;
    Some(Compiled::new(&own, metadata))
}

const TYPE_NULL: u8 = 1;
const TYPE_BOOLEAN: u8 = 2;
const TYPE_INTEGER: u8 = 4;
const TYPE_NUMBER: u8 = 8;
const TYPE_STRING: u8 = 16;
const TYPE_ARRAY: u8 = 32;
const TYPE_OBJECT: u8 = 64;
const TYPE_ANY: u8 = 127;

#[derive(Debug, Clone, Copy)]
enum Format {
    Uri,
    DateTime,
}

/// One schema, its keywords resolved; `Unsure` for anything outside the subset.
#[derive(Debug, Default)]
enum Node {
    True,
    False,
    #[default]
    Unsure,
    Keywords(Box<Keywords>),
}

#[derive(Debug, Default)]
struct Keywords {
    types: Option<u8>,
    all_of: Vec<usize>,
    required: Vec<String>,
    /// Name, its [`key_tag`], schema.
    properties: Vec<(String, u64, usize)>,
    pattern_properties: Vec<(Pattern, usize)>,
    additional: Option<usize>,
    items: Option<usize>,
    /// Allowed strings (every atip enum lists strings only), with their [`key_tag`]s.
    enumeration: Option<Vec<(String, u64)>>,
    pattern: Option<Pattern>,
    min_length: Option<usize>,
    min_items: Option<usize>,
    minimum: Option<i64>,
    maximum: Option<i64>,
    format: Option<Format>,
    /// `if` made only of `required` or only of `type`: (that test, then, else).
    condition: Option<(Test, Option<usize>, Option<usize>)>,
    /// `properties` by key tag, and `required` as bits of them.
    lookup: Lookup,
    /// No property name matches a `patternProperties` pattern (or there are none): a
    /// member found among the properties needs no pattern tried.
    disjoint: bool,
    /// Which short path [`Compiled::sure`] may take.
    shape: Shape,
}

/// A node that asks for exactly one type and nothing that applies to every type
/// (`allOf`, `if`, `enum`): checked by that type's keywords alone, without the general
/// path's tests. Every object, array and flag string of a document comes through here.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Shape {
    #[default]
    General,
    Object,
    Array,
    String,
    /// Strings from an `enum` (and the string keywords): every parameter's `type`.
    Enum,
}

/// `properties` found by key tag in about one probe, and `required` checked as bits of
/// the properties met (no look-up per required name): every object of a document goes
/// through here.
#[derive(Debug, Default)]
struct Lookup {
    /// Open addressing on a hash of the tag; each slot holds what checking a member
    /// needs, so a member costs one load.
    slots: Vec<Slot>,
    /// 64 minus log2 of `slots.len()`.
    shift: u32,
    /// Bit i for `properties[i]`, set for the required ones; `None` when a required
    /// name is not a property (or there are too many properties): then looked up.
    required: Option<u64>,
}

/// One property in [`Lookup`]: its tag, its name's [`tail_word`], its schema node, its
/// index in `properties` (`EMPTY` for a free slot) and that node's
/// [`Keywords::plain_types`].
#[derive(Debug, Clone, Copy)]
struct Slot {
    tag: u64,
    /// With the tag, settles a name of up to 15 bytes without reading `properties`.
    tail: u64,
    node: u32,
    index: u8,
    plain: u8,
}

const EMPTY: u8 = u8::MAX;

impl Lookup {
    /// Built once nodes are retargeted: `plain` is each node's plain types.
    fn new(properties: &[(String, u64, usize)], required: &[String], plain: &[u8]) -> Lookup {
        if properties.is_empty() || properties.len() > 64 {
            return Lookup::default();
        }
        let size = (properties.len() * 2).next_power_of_two().max(2);
        let shift = 64 - size.trailing_zeros();
        let free = Slot {
            tag: 0,
            tail: 0,
            node: 0,
            index: EMPTY,
            plain: 0,
        };
        let mut slots = vec![free; size];
        for (i, (name, tag, node)) in properties.iter().enumerate() {
            let mut at = slot(*tag, shift);
            while slots[at].index != EMPTY {
                at = (at + 1) & (size - 1);
            }
            slots[at] = Slot {
                tag: *tag,
                tail: tail_word(name.as_bytes()),
                node: *node as u32,
                index: i as u8,
                plain: plain[*node],
            };
        }
        let required = required.iter().try_fold(0u64, |mask, name| {
            let i = properties.iter().position(|(n, _, _)| n == name)?;
            Some(mask | 1 << i)
        });
        Lookup {
            slots,
            shift,
            required,
        }
    }

    /// The slot of the property named `key` (tag `tag`).
    #[inline]
    fn find(&self, properties: &[(String, u64, usize)], tag: u64, key: Key<'_>) -> Option<Slot> {
        if self.slots.is_empty() {
            return None;
        }
        let mut at = slot(tag, self.shift);
        loop {
            let found = self.slots[at];
            if found.index == EMPTY {
                return None;
            }
            if found.tag == tag
                && match key.len() {
                    0..8 => true,
                    8..16 => found.tail == tail_word(key.bytes()),
                    _ => same_tagged_bytes(
                        properties[usize::from(found.index)].0.as_bytes(),
                        key.bytes(),
                    ),
                }
            {
                return Some(found);
            }
            at = (at + 1) & (self.slots.len() - 1);
        }
    }
}

#[inline]
fn slot(tag: u64, shift: u32) -> usize {
    (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
}

/// An `if` decided either way.
#[derive(Debug)]
enum Test {
    Required(Vec<String>),
    /// Not for `integer` alone: 2.0 is one to JSON Schema, not to [`type_of`].
    Type(u8),
}

impl Keywords {
    /// The one schema this node only refers to (`$ref` or a one-entry `allOf`, nothing
    /// else).
    fn bare_ref(&self) -> Option<usize> {
        let Keywords {
            types: None,
            all_of,
            required,
            properties,
            pattern_properties,
            additional: None,
            items: None,
            enumeration: None,
            pattern: None,
            min_length: None,
            min_items: None,
            minimum: None,
            maximum: None,
            format: None,
            condition: None,
            lookup: _,
            disjoint: _,
            shape: _,
        } = self
        else {
            return None;
        };
        match all_of[..] {
            [only]
                if required.is_empty()
                    && properties.is_empty()
                    && pattern_properties.is_empty() =>
            {
                Some(only)
            }
            _ => None,
        }
    }
}

impl Keywords {
    /// Points every sub-schema index at the node it stands for.
    fn retarget(&mut self, target: &[usize]) {
        let at = |i: &mut usize| *i = target[*i];
        self.all_of.iter_mut().for_each(at);
        self.properties.iter_mut().for_each(|(_, _, i)| at(i));
        self.pattern_properties.iter_mut().for_each(|(_, i)| at(i));
        for i in [&mut self.additional, &mut self.items]
            .into_iter()
            .flatten()
        {
            at(i);
        }
        if let Some((_, then, otherwise)) = &mut self.condition {
            for i in [then, otherwise].into_iter().flatten() {
                at(i);
            }
        }
    }

    /// The types, when a schema says nothing else (0 otherwise): then a value is checked
    /// by its type alone.
    fn plain_types(&self) -> u8 {
        match self {
            Keywords {
                types: Some(types),
                all_of,
                required,
                properties,
                pattern_properties,
                additional: None,
                items: None,
                enumeration: None,
                pattern: None,
                min_length: None,
                min_items: None,
                minimum: None,
                maximum: None,
                format: None,
                condition: None,
                lookup: _,
                disjoint: _,
                shape: _,
            } if all_of.is_empty()
                && required.is_empty()
                && properties.is_empty()
                && pattern_properties.is_empty() =>
            {
                *types
            }
            _ => 0,
        }
    }
}

#[derive(Debug)]
struct Compiled {
    /// Every index in here is already that of the node it stands for: a node that is
    /// only a `$ref` is skipped at compile time.
    nodes: Vec<Node>,
    /// For each node, [`Keywords::plain_types`] (all types for `true`).
    plain: Vec<u8>,
    root: usize,
}

/// Which schema document a pointer is in.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Doc {
    Own,
    Metadata,
}

struct Compiler<'s> {
    own: &'s Value,
    metadata: &'s Value,
    nodes: Vec<Node>,
    seen: HashMap<(Doc, String), usize>,
}

impl Compiled {
    fn new(own: &Value, metadata: &Value) -> Compiled {
        let mut c = Compiler {
            own,
            metadata,
            nodes: Vec::new(),
            seen: HashMap::new(),
        };
        let root = c.node(Doc::Own, String::new());
        let nodes = c.nodes;
        let only_ref = |i: usize| match &nodes[i] {
            Node::Keywords(k) => k.bare_ref(),
            _ => None,
        };
        let target: Vec<usize> = (0..nodes.len())
            .map(|i| {
                let mut j = i;
                // Bounded: a loop of bare refs keeps its first node.
                for _ in 0..nodes.len() {
                    match only_ref(j) {
                        Some(next) => j = next,
                        None => return j,
                    }
                }
                i
            })
            .collect();
        let mut nodes = nodes;
        for node in &mut nodes {
            if let Node::Keywords(k) = node {
                k.retarget(&target);
            }
        }
        let plain: Vec<u8> = nodes
            .iter()
            .map(|node| match node {
                Node::True => TYPE_ANY,
                Node::Keywords(k) => k.plain_types(),
                Node::False | Node::Unsure => 0,
            })
            .collect();
        for node in &mut nodes {
            if let Node::Keywords(k) = node {
                k.lookup = Lookup::new(&k.properties, &k.required, &plain);
            }
        }
        Compiled {
            nodes,
            plain,
            root: target[root],
        }
    }

    /// [`Compiled::sure`], settled here for a schema that only names types (most
    /// members: descriptions, names, flags' booleans).
    #[inline(always)]
    fn check(&self, index: usize, v: View<'_>) -> bool {
        self.check_typed(self.plain[index], index, v)
    }

    /// [`Compiled::check`] with the node's plain types at hand (a property's slot
    /// carries them).
    #[inline(always)]
    fn check_typed(&self, plain: u8, index: usize, v: View<'_>) -> bool {
        match plain {
            0 => self.sure(index, v),
            types => types & type_of(v) != 0,
        }
    }

    /// Inlined into each caller (the member loop above all), so that a container or a
    /// pattern-checked string costs one call, to the shape's own check, not two.
    #[inline(always)]
    fn sure(&self, index: usize, v: View<'_>) -> bool {
        let k = match &self.nodes[index] {
            Node::True => return true,
            Node::False | Node::Unsure => return false,
            Node::Keywords(k) => k,
        };
        match k.shape {
            Shape::Object => self.object_sure(k, v),
            Shape::Array => v.items().is_some_and(|items| self.array_sure(k, items)),
            Shape::String => v.as_str().is_some_and(|s| string_sure(k, s)),
            Shape::Enum => v
                .as_str()
                .is_some_and(|s| enum_sure(k, s) && string_sure(k, s)),
            Shape::General => self.general_sure(k, v),
        }
    }

    /// A node with several types or keywords for every type (`allOf`, `if`, `enum`).
    #[inline(never)]
    fn general_sure(&self, k: &Keywords, v: View<'_>) -> bool {
        let ty = type_of(v);
        if let Some(types) = k.types
            && types & ty == 0
        {
            return false;
        }
        if !k.all_of.iter().all(|&s| self.check(s, v)) {
            return false;
        }
        if let Some((test, then, otherwise)) = &k.condition {
            let holds = match test {
                Test::Required(names) => !v.is_object() || names.iter().all(|n| v.contains_key(n)),
                Test::Type(mask) => ty & mask != 0,
            };
            let branch = if holds { then } else { otherwise };
            if branch.is_some_and(|s| !self.check(s, v)) {
                return false;
            }
        }
        if k.enumeration.is_some() && !v.as_str().is_some_and(|s| enum_sure(k, s)) {
            return false;
        }
        if ty == TYPE_STRING
            && let Some(s) = v.as_str()
        {
            return string_sure(k, s);
        }
        if ty & TYPE_NUMBER != 0 {
            return number_sure(k, v);
        }
        if ty == TYPE_ARRAY
            && let Some(items) = v.items()
        {
            return self.array_sure(k, items);
        }
        if ty == TYPE_OBJECT {
            return self.object_sure(k, v);
        }
        true
    }

    /// `minItems` and `items` over an array's elements.
    #[inline(never)]
    fn array_sure(&self, k: &Keywords, items: Items<'_>) -> bool {
        k.min_items.is_none_or(|n| items.len() >= n)
            && k.items
                .is_none_or(|s| items.clone().all(|x| self.check(s, x)))
    }

    /// The object keywords over `v`'s members (`false` when `v` is no object).
    #[inline(never)]
    fn object_sure(&self, k: &Keywords, v: View<'_>) -> bool {
        let Some(members) = v.tagged_members() else {
            return false;
        };
        let mut met = 0u64;
        for (tag, key, x) in members {
            if !self.member_sure(k, tag, key, x, &mut met) {
                return false;
            }
        }
        match k.lookup.required {
            Some(mask) => met & mask == mask,
            None => k.required.iter().all(|n| v.contains_key(n)),
        }
    }

    /// `properties`, `patternProperties` and `additionalProperties` for one member;
    /// sets the bit of the property it is in `met`. Inlined in the member loop; the
    /// patterns are [`Compiled::member_rest`]'s, out of line so that the loop keeps
    /// its few values in registers.
    #[inline(always)]
    fn member_sure(
        &self,
        k: &Keywords,
        tag: u64,
        key: Key<'_>,
        x: View<'_>,
        met: &mut u64,
    ) -> bool {
        let Some(found) = k.lookup.find(&k.properties, tag, key) else {
            return self.member_rest(k, tag, key, x, false);
        };
        *met |= 1 << (found.index & 63);
        self.check_typed(found.plain, found.node as usize, x)
            && (k.disjoint || self.member_rest(k, tag, key, x, true))
    }

    /// `patternProperties`, then `additionalProperties` unless a property or a pattern
    /// (`matched`) took the member.
    #[inline(never)]
    fn member_rest(
        &self,
        k: &Keywords,
        tag: u64,
        key: Key<'_>,
        x: View<'_>,
        mut matched: bool,
    ) -> bool {
        for (pattern, s) in &k.pattern_properties {
            let Some(found) = pattern.matches_key(tag, key) else {
                return false;
            };
            if found {
                matched = true;
                if !self.check(*s, x) {
                    return false;
                }
            }
        }
        matched || k.additional.is_none_or(|s| self.check(s, x))
    }
}

#[inline]
fn type_of(v: View<'_>) -> u8 {
    match v.json_type() {
        Type::Null => TYPE_NULL,
        Type::Boolean => TYPE_BOOLEAN,
        Type::Integer => TYPE_INTEGER | TYPE_NUMBER,
        // 2.0 is an integer to JSON Schema, but not certainly one here.
        Type::Float => TYPE_NUMBER,
        Type::String => TYPE_STRING,
        Type::Array => TYPE_ARRAY,
        Type::Object => TYPE_OBJECT,
    }
}

/// `enum` (strings only) holds `s`; true when there is no `enum`.
#[inline]
fn enum_sure(k: &Keywords, s: &str) -> bool {
    k.enumeration.as_ref().is_none_or(|allowed| {
        let tag = key_tag(s);
        allowed
            .iter()
            .any(|(a, t)| *t == tag && (s.len() < 8 || a == s))
    })
}

#[inline]
fn string_sure(k: &Keywords, s: &str) -> bool {
    // A character is at most four bytes: long enough strings need no count.
    k.min_length.is_none_or(|n| {
        s.len() >= n.saturating_mul(4) || (s.len() >= n && s.chars().take(n).count() == n)
    }) && k
        .pattern
        .as_ref()
        .is_none_or(|p| p.matches(s) == Some(true))
        && k.format.is_none_or(|f| match f {
            Format::Uri => plain_uri(s),
            Format::DateTime => plain_date_time(s),
        })
}

fn number_sure(k: &Keywords, v: View<'_>) -> bool {
    if k.minimum.is_none() && k.maximum.is_none() {
        return true;
    }
    // Bounds are decided for integers only; floats are jsonschema's.
    let Some(n) = v
        .number_text()
        .filter(|_| v.is_integer())
        .and_then(|t| t.parse::<i128>().ok())
    else {
        return false;
    };
    k.minimum.is_none_or(|m| n >= i128::from(m)) && k.maximum.is_none_or(|m| n <= i128::from(m))
}

/// `http(s)://host[/path]` with only unreserved characters: a URI to any reading of
/// RFC 3986.
fn plain_uri(s: &str) -> bool {
    let Some(rest) = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
    else {
        return false;
    };
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && path
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'.' | b'_' | b'~'))
}

/// `YYYY-MM-DDTHH:MM:SSZ` with a day no month lacks (01–28): an RFC 3339 date-time to
/// any checker.
fn plain_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |from: usize, to: usize| -> Option<u32> {
        let part = s.get(from..to)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    b.len() == 20
        && (b[4], b[7], b[10], b[13], b[16], b[19]) == (b'-', b'-', b'T', b':', b':', b'Z')
        && num(0, 4).is_some()
        && num(5, 7).is_some_and(|m| (1..=12).contains(&m))
        && num(8, 10).is_some_and(|d| (1..=28).contains(&d))
        && num(11, 13).is_some_and(|h| h < 24)
        && num(14, 16).is_some_and(|m| m < 60)
        && num(17, 19).is_some_and(|s| s < 60)
}

/// A schema pattern: literal prefixes (`^(x-|_)`, on every member of every object)
/// checked directly, anything else through Rust's regex.
#[derive(Debug)]
enum Pattern {
    /// The prefixes, and which first bytes any of them has.
    Prefixes(Vec<String>, Box<[bool; 256]>),
    /// A sequence of classes, matched without the regex engine.
    Anchored(Anchored),
    Regex(Regex),
}

impl Pattern {
    /// `None` when Rust's regex does not compile it (then its keyword is "not sure").
    /// Only ASCII subjects are ever matched: on those, Unicode and ASCII classes (`\d`,
    /// `\w`, `\s`, negated sets) agree, as ECMA's and Rust's do.
    fn new(pattern: &str) -> Option<Pattern> {
        let literal = |a: &str| {
            !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        };
        if let Some(body) = pattern.strip_prefix('^') {
            let group = body.strip_prefix('(').and_then(|b| b.strip_suffix(')'));
            let alternatives: Vec<&str> = group.unwrap_or(body).split('|').collect();
            if (group.is_some() || alternatives.len() == 1)
                && alternatives.iter().all(|a| literal(a))
            {
                let mut first = Box::new([false; 256]);
                for a in &alternatives {
                    first[usize::from(a.as_bytes()[0])] = true;
                }
                return Some(Pattern::Prefixes(
                    alternatives.into_iter().map(str::to_owned).collect(),
                    first,
                ));
            }
        }
        // A class sequence is matched by our automaton; Rust's regex (dear to build: it
        // was most of compiling a schema) only for anything else.
        Some(match Anchored::new(pattern) {
            Some(a) => Pattern::Anchored(a),
            None => Pattern::Regex(Regex::new(pattern).ok()?),
        })
    }

    /// [`Pattern::matches`] for a member's key, whose first byte is the low byte of its
    /// tag: a key no prefix can start is settled without reading it.
    #[inline]
    fn matches_key(&self, tag: u64, key: Key<'_>) -> Option<bool> {
        match self {
            Pattern::Prefixes(_, first) if key.is_empty() || !first[(tag & 0xff) as usize] => {
                Some(false)
            }
            _ => self.matches(key.text()),
        }
    }

    /// Whether `s` matches; `None` when not sure (a regex over a non-ASCII string, where
    /// ECMA and Rust classes may differ). A literal prefix is exact on any string.
    #[inline]
    fn matches(&self, s: &str) -> Option<bool> {
        match self {
            Pattern::Prefixes(p, first) => Some(
                s.as_bytes().first().is_some_and(|&b| first[usize::from(b)])
                    && p.iter().any(|p| s.starts_with(p.as_str())),
            ),
            Pattern::Anchored(a) => a.matches(s.as_bytes()),
            Pattern::Regex(re) => s.is_ascii().then(|| re.is_match(s)),
        }
    }
}

impl Compiler<'_> {
    /// The node for the schema at `pointer` in `doc`, compiled once (refs may loop).
    fn node(&mut self, doc: Doc, pointer: String) -> usize {
        if let Some(&i) = self.seen.get(&(doc, pointer.clone())) {
            return i;
        }
        let index = self.nodes.len();
        self.nodes.push(Node::Unsure);
        self.seen.insert((doc, pointer.clone()), index);
        let root = match doc {
            Doc::Own => self.own,
            Doc::Metadata => self.metadata,
        };
        let node = match root.pointer(&pointer) {
            Some(Value::Bool(true)) => Node::True,
            Some(Value::Bool(false)) => Node::False,
            Some(Value::Object(_)) => self
                .keywords(doc, &pointer, root)
                .map_or(Node::Unsure, |k| Node::Keywords(Box::new(k))),
            _ => Node::Unsure,
        };
        self.nodes[index] = node;
        index
    }

    // Long because: one flat match with an arm per JSON Schema keyword the fast path
    // compiles; a keyword it does not know makes the node unsure (jsonschema decides).
    fn keywords(&mut self, doc: Doc, pointer: &str, root: &Value) -> Option<Keywords> {
        let schema = root.pointer(pointer)?.as_object()?;
        let sub = |c: &mut Self, key: &str| c.node(doc, format!("{pointer}/{}", escape(key)));
        let strings = |v: &Value| -> Option<Vec<String>> {
            v.as_array()?
                .iter()
                .map(|s| s.as_str().map(str::to_owned))
                .collect()
        };
        let mut k = Keywords::default();
        for (key, v) in schema {
            match key.as_str() {
                "$schema" | "$id" | "$defs" | "$comment" | "title" | "description" | "default"
                | "examples" => {}
                "type" => {
                    let names = match v {
                        Value::String(s) => vec![s.clone()],
                        other => strings(other)?,
                    };
                    k.types = Some(type_mask(&names)?);
                }
                "$ref" => {
                    let target = v.as_str()?;
                    let (doc, fragment) = if let Some(f) = target.strip_prefix('#') {
                        (doc, f)
                    } else {
                        let rest = target.strip_prefix(METADATA_SCHEMA_ID)?;
                        (Doc::Metadata, rest.strip_prefix('#').unwrap_or(rest))
                    };
                    if !(fragment.is_empty() || fragment.starts_with('/')) {
                        return None;
                    }
                    let fragment = fragment.to_string();
                    k.all_of.push(self.node(doc, fragment));
                }
                "allOf" => {
                    for i in 0..v.as_array()?.len() {
                        let s = self.node(doc, format!("{pointer}/allOf/{i}"));
                        k.all_of.push(s);
                    }
                }
                "required" => k.required = strings(v)?,
                "properties" => {
                    for name in v.as_object()?.keys() {
                        let s = self.node(doc, format!("{pointer}/properties/{}", escape(name)));
                        k.properties.push((name.clone(), key_tag(name), s));
                    }
                }
                "patternProperties" => {
                    for name in v.as_object()?.keys() {
                        let re = Pattern::new(name)?;
                        let s =
                            self.node(doc, format!("{pointer}/patternProperties/{}", escape(name)));
                        k.pattern_properties.push((re, s));
                    }
                }
                "additionalProperties" => k.additional = Some(sub(self, key)),
                "items" if !v.is_array() => k.items = Some(sub(self, key)),
                "enum" => {
                    let values = strings(v)?;
                    k.enumeration = Some(
                        values
                            .into_iter()
                            .map(|s| {
                                let t = key_tag(&s);
                                (s, t)
                            })
                            .collect(),
                    );
                }
                "pattern" => k.pattern = Some(Pattern::new(v.as_str()?)?),
                "minLength" => k.min_length = Some(usize::try_from(v.as_u64()?).ok()?),
                "minItems" => k.min_items = Some(usize::try_from(v.as_u64()?).ok()?),
                "minimum" => k.minimum = Some(v.as_i64()?),
                "maximum" => k.maximum = Some(v.as_i64()?),
                "format" => {
                    k.format = Some(match v.as_str()? {
                        "uri" => Format::Uri,
                        "date-time" => Format::DateTime,
                        _ => return None,
                    })
                }
                "if" => {
                    let test = match v.as_object()?.iter().collect::<Vec<_>>()[..] {
                        [(word, names)] if word == "required" => Test::Required(strings(names)?),
                        [(word, Value::String(t))] if word == "type" => {
                            let mask = type_mask(std::slice::from_ref(t))?;
                            if mask & TYPE_INTEGER != 0 && mask & TYPE_NUMBER == 0 {
                                return None;
                            }
                            Test::Type(mask)
                        }
                        _ => return None,
                    };
                    let then = schema.contains_key("then").then(|| sub(self, "then"));
                    let otherwise = schema.contains_key("else").then(|| sub(self, "else"));
                    k.condition = Some((test, then, otherwise));
                }
                "then" | "else" if schema.contains_key("if") => {}
                _ => return None,
            }
        }
        // `Lookup` holds up to 64 properties: a node with more is left to jsonschema
        // (a property it could not find would pass as an additional one).
        if k.properties.len() > 64 {
            return None;
        }
        k.disjoint = k.properties.iter().all(|(name, _, _)| {
            k.pattern_properties
                .iter()
                .all(|(p, _)| p.matches(name) == Some(false))
        });
        let only_typed = k.all_of.is_empty() && k.condition.is_none() && k.enumeration.is_none();
        // An `enum` of strings admits strings only, whatever else the node says of other
        // types; `type` may say string or nothing.
        let only_enum = k.all_of.is_empty() && k.condition.is_none() && k.enumeration.is_some();
        k.shape = match k.types {
            Some(TYPE_OBJECT) if only_typed => Shape::Object,
            Some(TYPE_ARRAY) if only_typed => Shape::Array,
            Some(TYPE_STRING) if only_typed => Shape::String,
            None | Some(TYPE_STRING) if only_enum => Shape::Enum,
            _ => Shape::General,
        };
        Some(k)
    }
}

/// The [`type_of`] bits of JSON Schema type names; `None` for an unknown name.
fn type_mask(names: &[String]) -> Option<u8> {
    let mut mask = 0;
    for t in names {
        mask |= match t.as_str() {
            "null" => TYPE_NULL,
            "boolean" => TYPE_BOOLEAN,
            "integer" => TYPE_INTEGER,
            "number" => TYPE_NUMBER,
            "string" => TYPE_STRING,
            "array" => TYPE_ARRAY,
            "object" => TYPE_OBJECT,
            _ => return None,
        };
    }
    Some(mask)
}

/// A JSON-pointer reference token.
fn escape(key: &str) -> String {
    if key.contains(['~', '/']) {
        key.replace('~', "~0").replace('/', "~1")
    } else {
        key.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::view::Doc;
    use serde_json::json;

    #[test]
    fn an_object_of_more_than_64_properties_is_left_to_jsonschema() {
        for count in [64, 65] {
            let properties: serde_json::Map<String, Value> = (0..count)
                .map(|i| (format!("p{i}"), json!({"type": "string"})))
                .collect();
            let schema = json!({"type": "object", "properties": properties});
            let compiled = Compiled::new(&schema, &schema);
            let last = format!("p{}", count - 1);
            let good = json!({ &last: "s" }).to_string();
            let bad = json!({ &last: 1 }).to_string();
            let sure = |text: &str| {
                let doc = Doc::parse(text.as_bytes()).expect("clean JSON");
                compiled.check(compiled.root, doc.root())
            };
            assert!(!sure(&bad), "{count} properties: {bad}");
            // Up to 64, a valid document is still settled here.
            assert_eq!(sure(&good), count == 64, "{count} properties: {good}");
        }
    }

    #[test]
    fn an_enum_node_settles_listed_strings_only() {
        let long = "a-value-longer-than-fifteen-bytes";
        for node in [
            json!({"enum": ["string", "integer", "abcdefgh", long]}),
            json!({"type": "string", "enum": ["string", "integer", "abcdefgh", long]}),
            json!({"type": "string", "enum": ["string", "integer", "abcdefgh", long], "pattern": "^[a-z]+$"}),
        ] {
            let schema = json!({"type": "object", "properties": {"t": node}});
            let compiled = Compiled::new(&schema, &schema);
            let sure = |value: Value| {
                let text = json!({ "t": value }).to_string();
                let doc = Doc::parse(text.as_bytes()).expect("clean JSON");
                compiled.check(compiled.root, doc.root())
            };
            let patterned = node.get("pattern").is_some();
            assert!(sure(json!("string")) && sure(json!("abcdefgh")), "{node}");
            // Listed, but the pattern says no.
            assert_eq!(sure(json!(long)), !patterned, "{node}");
            // Same tag as "abcdefgh" (length and first seven bytes), another string.
            for bad in [
                json!("abcdefgX"),
                json!("strin"),
                json!(""),
                json!(1),
                json!(null),
                json!(["string"]),
            ] {
                assert!(!sure(bad.clone()), "{node}: {bad}");
            }
            assert!(!sure(json!("a-value-longer-than-fifteen-byteZ")), "{node}");
        }
    }
}
