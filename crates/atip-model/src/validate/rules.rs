//! The rule catalogue and the checks no JSON Schema can express.
//!
//! Owns [`RULES`] (every stable rule id with its severity, summary and hint — the list
//! `spec/validate.md` documents and SARIF output publishes), the mapping of schema
//! errors to rule ids, and the semantic checks on a parsed document: flags, names,
//! enums and defaults, positional order, version features, shim hashes, flattened
//! tool names. Checks work on the raw JSON value (so they run even on documents the
//! schema rejects, and every finding has a pointer) and walk commands with an explicit
//! stack.
//!
//! Must not parse bytes or compute source positions.

mod commands;

use super::json::Json;
use super::locate::escape_token;
use super::{Diagnostic, Kind, Severity};
use crate::model::ProtocolVersion;
use commands::check_commands;
pub use commands::flatten_name;
use serde_json::Value;

/// One rule of the catalogue.
#[derive(Debug, Clone, Copy)]
pub struct RuleInfo {
    /// Stable id, e.g. `duplicate-key`.
    pub id: &'static str,
    /// Default severity.
    pub severity: Severity,
    /// One line: what the rule finds.
    pub summary: &'static str,
    /// How to fix it.
    pub hint: &'static str,
    /// Where the rule is documented (SARIF `helpUri`).
    pub help_uri: &'static str,
}

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
        help_uri: "https://atip.dev/spec/validate#rules",
    }
}

use Severity::{Error as E, Warning as W};

/// Every rule atip reports, in the order `spec/validate.md` lists them.
pub static RULES: &[RuleInfo] = &[
    // Input and parsing.
    rule(
        "input-missing",
        E,
        "an input path does not exist",
        "check the path; directories are searched for *.json recursively",
    ),
    rule(
        "input-unreadable",
        E,
        "an input could not be read (permissions, I/O error, not a regular file)",
        "make the file readable by the user running atip",
    ),
    rule(
        "file-too-large",
        E,
        "the input is larger than the size cap (--max-size, default 16 MiB)",
        "split the document or raise --max-size",
    ),
    rule(
        "empty-input",
        E,
        "the input is empty or only whitespace",
        "a document is one JSON object (or, for pattern files, an array)",
    ),
    rule(
        "invalid-utf8",
        E,
        "the input is not valid UTF-8",
        "save the file as UTF-8; JSON text must be UTF-8",
    ),
    rule(
        "bom",
        W,
        "the input starts with a UTF-8 byte-order mark",
        "save the file as UTF-8 without BOM; some JSON readers reject it",
    ),
    rule(
        "json-syntax",
        E,
        "the input is not valid JSON",
        "fix the JSON syntax at the position shown",
    ),
    rule(
        "truncated-json",
        E,
        "the JSON document ends before it is complete",
        "the document was cut off: close every open string, array and object",
    ),
    rule(
        "trailing-characters",
        E,
        "there is more text after the JSON document",
        "remove what follows the document; --agent output must be exactly one JSON document",
    ),
    rule(
        "nesting-too-deep",
        E,
        "arrays and objects are nested deeper than 128 levels",
        "flatten the document; no ATIP document needs this depth",
    ),
    rule(
        "duplicate-key",
        E,
        "a key appears twice in one JSON object",
        "remove or rename one of them; readers disagree on which value wins",
    ),
    // Schema.
    rule(
        "schema-required",
        E,
        "a required field is missing",
        "add the field (see schemas/ and spec/validate.md)",
    ),
    rule(
        "schema-type",
        E,
        "a value has the wrong JSON type",
        "change the value to the type the schema expects",
    ),
    rule(
        "schema-enum",
        E,
        "a value is not one of the allowed values",
        "use one of the values listed in the message",
    ),
    rule(
        "schema-pattern",
        E,
        "a string does not match its required pattern",
        "change the string to match the pattern in the message",
    ),
    rule(
        "schema-format",
        E,
        "a string is not in its required format (uri, date-time)",
        "write the value in the named format",
    ),
    rule(
        "schema-size",
        E,
        "a string, array or number is outside its allowed size or range",
        "respect the bound named in the message",
    ),
    rule(
        "schema",
        E,
        "another schema constraint failed",
        "see the message and the schema in schemas/",
    ),
    rule(
        "unknown-field",
        W,
        "a field the protocol does not define",
        "fix the spelling, or prefix vendor extensions with x-",
    ),
    rule(
        "invalid-name",
        E,
        "a tool name is not made of letters, digits, _ and -",
        "use the executable's name, e.g. gh or git-lfs",
    ),
    // Versions.
    rule(
        "unknown-version",
        E,
        "the declared protocol version is not one atip knows (0.1 to 0.6)",
        "declare a version from 0.1 to 0.6",
    ),
    rule(
        "field-not-in-version",
        E,
        "a field is used that the declared protocol version does not have",
        "raise the declared version (and list the feature), or remove the field",
    ),
    rule(
        "feature-not-in-version",
        E,
        "a feature id is declared that is newer than the declared version",
        "raise the declared version or drop the feature id",
    ),
    rule(
        "unknown-feature",
        W,
        "a feature id atip does not know",
        "use one of the feature ids of ATIP 0.3 to 0.6",
    ),
    rule(
        "min-agent-version",
        E,
        "minAgentVersion is newer than the document's own version",
        "set minAgentVersion to at most the declared version",
    ),
    rule(
        "legacy-version-form",
        W,
        "a 0.4+ document uses the legacy string form of atip",
        "write \"atip\": {\"version\": \"0.N\"}",
    ),
    // Descriptions.
    rule(
        "description-too-long",
        W,
        "the tool description is longer than 200 characters",
        "keep the one-line description under 200 characters; put detail in commands",
    ),
    rule(
        "description-multiline",
        W,
        "the tool description spans several lines",
        "write the description on one line",
    ),
    // Commands, arguments, options.
    rule(
        "duplicate-flag",
        E,
        "a flag is spelled by two options in the same command (own, ancestors' or global options)",
        "give each option its own flags; an option that overrides an inherited one must use the same name",
    ),
    rule(
        "duplicate-name",
        E,
        "two arguments or options of one command have the same name (after - → _)",
        "rename one: names become the properties of exported tool schemas",
    ),
    rule(
        "enum-without-values",
        E,
        "a parameter of type enum lists no values",
        "add a non-empty \"enum\" array, or change the type",
    ),
    rule(
        "enum-value-type",
        E,
        "an enum value does not have the parameter's type",
        "make every enum value of the declared type",
    ),
    rule(
        "default-type",
        E,
        "a default value does not have the parameter's type",
        "make the default of the declared type",
    ),
    rule(
        "default-not-in-enum",
        E,
        "a default value is not one of the enum values",
        "use one of the enum values as default",
    ),
    rule(
        "required-after-optional",
        E,
        "a required positional argument follows an optional one",
        "put required arguments first, or make this one optional",
    ),
    rule(
        "argument-after-variadic",
        E,
        "a positional argument follows a variadic one",
        "make the variadic argument the last one",
    ),
    rule(
        "multiple-variadic",
        E,
        "more than one positional argument is variadic",
        "keep one variadic argument, the last",
    ),
    rule(
        "flattened-name-collision",
        E,
        "two command paths flatten to the same tool name (a_b vs a b)",
        "rename one command: exported tools would collide",
    ),
    // Shims.
    rule(
        "undeclared-variable",
        W,
        "a pattern step uses a {placeholder} its variables do not declare",
        "declare it under the pattern's variables, or write ${NAME} for a shell variable",
    ),
    rule(
        "unused-variable",
        W,
        "a pattern declares a variable no step uses",
        "use it in a step as {NAME}, or remove it",
    ),
    rule(
        "shim-hash-mismatch",
        E,
        "a content-addressed shim's binary.hash differs from its file name",
        "name the file <hex>.json after binary.hash (sha256:<hex>), lowercase",
    ),
    rule(
        "shim-without-binary",
        W,
        "a name-keyed shim written as a plain 0.1-style document, without binary: its root name and file name name the tool",
        "add binary {name, version} (required for content-addressed shims)",
    ),
    rule(
        "description-missing-0.1",
        W,
        "a 0.1 document leaves out an option's or argument's description (0.1 does not require it)",
        "add a description: agents choose arguments by it",
    ),
    rule(
        "shim-name-mismatch",
        W,
        "a shim's root name differs from binary.name",
        "leave name out (binary.name supplies it) or make them equal",
    ),
    rule(
        "stored-hash-mismatch",
        E,
        "a document atip stored under the sha256 of its bytes (tools/<hex>.json, cache/) no longer has that hash",
        "the file was changed or damaged after atip wrote it; run `atip scan` to store it again",
    ),
    // --exec.
    rule(
        "agent-exit-status",
        E,
        "`TOOL --agent` did not exit with status 0",
        "exit 0 after printing the metadata",
    ),
    rule(
        "agent-timeout",
        E,
        "`TOOL --agent` did not finish within the timeout",
        "answer --agent without network, prompts or waiting; raise --timeout if it is just slow",
    ),
    rule(
        "agent-output-too-large",
        E,
        "`TOOL --agent` printed more than the output cap",
        "print only the metadata; use partial discovery for very large tools",
    ),
    rule(
        "agent-spawn",
        E,
        "`TOOL --agent` could not be started",
        "check the tool path and that it is executable",
    ),
];

/// Looks up a rule in the catalogue.
pub fn rule_info(id: &str) -> Option<&'static RuleInfo> {
    RULES.iter().find(|r| r.id == id)
}

/// Feature ids and the version that introduced each.
pub const FEATURES: &[(&str, u32)] = &[
    ("partial-discovery", 3),
    ("interactive-effects", 3),
    ("trust-v1", 4),
    ("patterns-v1", 4),
    ("trust-integrity", 5),
    ("trust-provenance", 5),
    ("content-addressable", 6),
];

fn short<'a, J: Json<'a>>(value: J) -> String {
    match value {
        v if v.is_object() => "an object".into(),
        v if v.is_array() => "an array".into(),
        other => {
            let text = other.to_value().to_string();
            if text.chars().count() > 60 {
                let cut: String = text.chars().take(57).collect();
                format!("{cut}...")
            } else {
                text
            }
        }
    }
}

/// Turns one schema failure (a leaf of `boon`'s error tree, see [`crate::schema::leaves`])
/// into diagnostics: one per unknown or missing field, else one.
// Long because: one flat match with an arm per kind of failure, each with its own rule
// id and message.
pub(crate) fn from_schema_error(
    root: &Value,
    error: &boon::ValidationError<'_, '_>,
) -> Vec<Diagnostic> {
    use boon::ErrorKind as K;
    let pointer = error.instance_location.to_string();
    let instance = instance_at(root, &pointer, &error.kind);
    let at = display_ptr(&pointer);
    let field = pointer.rsplit('/').next().unwrap_or("");
    let one = |rule: &str, message: String| vec![Diagnostic::new(rule, pointer.clone(), message)];
    match &error.kind {
        K::AdditionalProperties { got } => got
            .iter()
            .map(|key| {
                Diagnostic::new(
                    "unknown-field",
                    format!("{pointer}/{}", escape_token(key)),
                    format!("unknown field \"{key}\" (kept, but no ATIP reader will use it)"),
                )
            })
            .collect(),
        K::Required { want } => want
            .iter()
            .map(|property| {
                Diagnostic::new(
                    "schema-required",
                    pointer.clone(),
                    format!(
                        "missing required field \"{property}\"{}",
                        if pointer.is_empty() {
                            String::new()
                        } else {
                            format!(" in {pointer}")
                        }
                    ),
                )
            })
            .collect(),
        K::Type { want, .. } => one(
            "schema-type",
            format!(
                "{instance} at {at} is not of type {}",
                crate::schema::types(*want)
            ),
        ),
        K::Enum { want } => one(
            "schema-enum",
            format!("{instance} at {at} is not one of {}", short_list(want)),
        ),
        K::Const { want } => one("schema-enum", format!("{instance} at {at} must be {want}")),
        K::Pattern { want, .. }
            if field == "name"
                && !pointer.contains("/commands/")
                && !pointer.contains("/arguments/")
                && !pointer.contains("/options/")
                && !pointer.contains("globalOptions") =>
        {
            one(
                "invalid-name",
                format!("tool name {instance} does not match {want} (letters, digits, _ and -)"),
            )
        }
        K::Pattern { .. } if pointer.contains("/flags/") => one(
            "schema-pattern",
            format!("flag {instance} at {pointer} must start with - and hold no spaces or ="),
        ),
        K::Pattern { want, .. } => one(
            "schema-pattern",
            format!("{instance} at {at} does not match {want}"),
        ),
        K::Format { want, .. } => one(
            "schema-format",
            format!("{instance} at {at} is not a valid {want}"),
        ),
        K::MinItems { got, .. }
        | K::MaxItems { got, .. }
        | K::MinLength { got, .. }
        | K::MaxLength { got, .. }
        | K::MinProperties { got, .. }
        | K::MaxProperties { got, .. } => {
            let (unit, units) = match &error.kind {
                K::MinItems { .. } | K::MaxItems { .. } => ("item", "items"),
                K::MinLength { .. } | K::MaxLength { .. } => ("character", "characters"),
                _ => ("property", "properties"),
            };
            let n = if *got == 1 {
                format!("1 {unit}")
            } else {
                format!("{got} {units}")
            };
            one(
                "schema-size",
                format!("{instance} at {at} has {n}: {}", masked_text(&error.kind)),
            )
        }
        K::Minimum { .. }
        | K::Maximum { .. }
        | K::ExclusiveMinimum { .. }
        | K::ExclusiveMaximum { .. } => one(
            "schema-size",
            format!("{instance} at {at} is {}", masked_text(&error.kind)),
        ),
        kind => one(
            "schema",
            format!("{instance} at {at}: {}", masked_text(kind)),
        ),
    }
}

/// The value that failed, shortened ([`short`]).
fn instance_at(root: &Value, pointer: &str, kind: &boon::ErrorKind<'_, '_>) -> String {
    match kind {
        // The failing thing is a key, not the value at the location.
        boon::ErrorKind::PropertyName { prop } => short(&Value::String(prop.clone())),
        _ => short(root.pointer(pointer).unwrap_or(&Value::Null)),
    }
}

/// The schema's side of a failure, in atip's words (shared with `exec`'s violations).
fn masked_text(kind: &boon::ErrorKind<'_, '_>) -> String {
    crate::schema::masked(kind)
        .into_iter()
        .map(|(_, m)| m)
        .collect::<Vec<_>>()
        .join("; ")
}

fn display_ptr(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the top level"
    } else {
        pointer
    }
}

fn short_list(items: &[Value]) -> String {
    if items.len() <= 12 {
        items
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    } else {
        format!("{} allowed values", items.len())
    }
}

/// Runs every semantic rule that applies to `kind`.
pub fn check<'a, J: Json<'a>>(
    kind: Kind,
    value: J,
    file_name: Option<&str>,
    out: &mut Vec<Diagnostic>,
) {
    let root = value;
    if !root.is_object() {
        if let (Kind::Pattern, Some(list)) = (kind, value.items()) {
            check_patterns::<J>(list, "", out);
        }
        return;
    }
    match kind {
        Kind::Metadata | Kind::Shim => {
            check_metadata(root, out);
            if kind == Kind::Shim || root.contains_key("binary") {
                check_shim(root, file_name, out);
            }
        }
        Kind::Pattern => {
            if let Some(v) = root.get("atip") {
                check_version_value(v, "/atip", out);
            }
            match root.get("patterns").and_then(J::items) {
                Some(list) => check_patterns::<J>(list, "/patterns", out),
                None => check_pattern(root, "", out),
            }
        }
        Kind::Registry => {}
    }
}

/// Accepts documents as their declared protocol version wrote them (`spec/validate.md`,
/// "Protocol 0.1 as written"), one rule for `validate` and `scan`: a 0.1 document may
/// leave out option and argument descriptions (a warning), and a name-keyed shim may be
/// a plain document without `binary` when its root `name` names the tool (a warning).
/// Runs after the schema and the other rules, on their diagnostics.
pub(crate) fn as_written<'a, J: Json<'a>>(
    kind: Kind,
    root: J,
    file_name: Option<&str>,
    out: &mut Vec<Diagnostic>,
) {
    if !root.is_object() {
        return;
    }
    let declared = root
        .get("atip")
        .and_then(|a| a.as_str().or_else(|| a.get("version")?.as_str()));
    let required = |d: &Diagnostic, field: &str| {
        d.rule == "schema-required" && d.message.contains(&format!("field \"{field}\""))
    };
    if declared == Some("0.1") {
        for d in out.iter_mut() {
            let in_list = d.pointer.contains("/options/") || d.pointer.contains("/arguments/");
            if in_list && required(d, "description") && d.severity == Severity::Error {
                *d = Diagnostic::new(
                    "description-missing-0.1",
                    &d.pointer,
                    format!("{} (0.1 does not require it)", d.message),
                );
            }
        }
    }
    let content_addressed = file_name
        .and_then(|f| f.strip_suffix(".json"))
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    if kind == Kind::Shim
        && !content_addressed
        && !root.contains_key("binary")
        && root.get("name").and_then(J::as_str).is_some()
        && out
            .iter()
            .any(|d| d.pointer.is_empty() && required(d, "binary"))
    {
        out.retain(|d| !(d.pointer.is_empty() && required(d, "binary")));
        out.push(Diagnostic::new(
            "shim-without-binary",
            "",
            "a name-keyed shim without binary: the tool is the one its name and file name say",
        ));
    }
}

fn check_version_value<'a, J: Json<'a>>(
    atip: J,
    pointer: &str,
    out: &mut Vec<Diagnostic>,
) -> Option<u32> {
    let text = match atip.as_str() {
        Some(s) => s,
        None => atip.get("version")?.as_str()?,
    };
    let ptr = if atip.is_object() {
        format!("{pointer}/version")
    } else {
        pointer.to_string()
    };
    match ProtocolVersion::parse(text) {
        Some(v) if v.is_supported() => Some(v.minor),
        _ => {
            out.push(Diagnostic::new(
                "unknown-version",
                ptr,
                format!("protocol version \"{text}\" is not one atip knows (0.1 to 0.6)"),
            ));
            None
        }
    }
}

fn check_metadata<'a, J: Json<'a>>(root: J, out: &mut Vec<Diagnostic>) {
    let version = root
        .get("atip")
        .and_then(|a| check_version_value(a, "/atip", out));
    if let Some(minor) = version {
        check_version_features(root, minor, out);
    }
    if let Some(desc) = root.get("description").and_then(J::as_str) {
        let chars = desc.chars().count();
        if chars > 200 {
            out.push(Diagnostic::new(
                "description-too-long",
                "/description",
                format!("the tool description has {chars} characters (at most 200)"),
            ));
        }
        if desc.contains('\n') {
            out.push(Diagnostic::new(
                "description-multiline",
                "/description",
                "the tool description spans several lines",
            ));
        }
    }
    check_commands(root, out);
    if let Some(list) = root.get("patterns").and_then(J::items) {
        check_patterns::<J>(list, "/patterns", out);
    }
}

fn check_patterns<'a, J: Json<'a>>(list: J::Items, base: &str, out: &mut Vec<Diagnostic>) {
    for (i, p) in list.enumerate() {
        if p.is_object() {
            check_pattern(p, &format!("{base}/{i}"), out);
        }
    }
}

/// `{name}` placeholders of a step command (also `{{name}}`); `${name}` is the shell's.
fn placeholders(command: &str) -> impl Iterator<Item = &str> {
    let bytes = command.as_bytes();
    command.match_indices('{').filter_map(move |(i, _)| {
        if i > 0 && matches!(bytes[i - 1], b'$' | b'{') {
            return None;
        }
        let rest = command[i + 1..].trim_start_matches('{');
        let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))?;
        let name = &rest[..end];
        let first_ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
        (first_ok && rest[end..].starts_with('}')).then_some(name)
    })
}

/// Placeholders against declared variables.
fn check_pattern<'a, J: Json<'a>>(p: J, ptr: &str, out: &mut Vec<Diagnostic>) {
    let vars = p.get("variables").filter(|v| v.is_object());
    let mut used: Vec<&str> = Vec::new();
    let steps = p.get("steps").and_then(J::items).into_iter().flatten();
    for (j, step) in steps.enumerate() {
        let Some(command) = step.get("command").and_then(J::as_str) else {
            continue;
        };
        for name in placeholders(command) {
            if !vars.is_some_and(|v| v.contains_key(name)) && !used.contains(&name) {
                out.push(Diagnostic::new(
                    "undeclared-variable",
                    format!("{ptr}/steps/{j}/command"),
                    format!("step uses {{{name}}}, which the pattern's variables do not declare"),
                ));
            }
            used.push(name);
        }
    }
    for name in vars
        .and_then(J::members)
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if !used.contains(&name) {
            out.push(Diagnostic::new(
                "unused-variable",
                format!("{ptr}/variables/{}", escape_token(name)),
                format!("variable \"{name}\" is declared but no step uses {{{name}}}"),
            ));
        }
    }
}

fn needs(minor: u32, since: u32, pointer: &str, what: &str, out: &mut Vec<Diagnostic>) {
    if minor < since {
        out.push(Diagnostic::new(
            "field-not-in-version",
            pointer,
            format!("{what} needs ATIP 0.{since}, but the document declares 0.{minor}"),
        ));
    }
}

/// What the document uses that its declared version `0.minor` does not have yet.
fn check_version_features<'a, J: Json<'a>>(root: J, minor: u32, out: &mut Vec<Diagnostic>) {
    match root.get("atip") {
        Some(atip) if atip.is_object() => {
            needs(minor, 4, "/atip", "the object form of \"atip\"", out);
            if let Some(features) = atip.get("features").and_then(J::items) {
                check_features(features, minor, out);
            }
            if let Some(min) = atip.get("minAgentVersion").and_then(J::as_str)
                && let Some(v) = ProtocolVersion::parse(min)
                && v.minor > minor
            {
                out.push(Diagnostic::new(
                    "min-agent-version",
                    "/atip/minAgentVersion",
                    format!("minAgentVersion {min} is newer than the declared version 0.{minor}"),
                ));
            }
        }
        Some(atip) if atip.is_string() && minor >= 4 => out.push(Diagnostic::new(
            "legacy-version-form",
            "/atip",
            format!("ATIP 0.{minor} documents write \"atip\" as an object"),
        )),
        _ => {}
    }
    check_field_versions(root, minor, out);
    if minor < 3 {
        check_interactive_effects(root, minor, out);
    }
}

/// `atip.features`: each one known (or `x-`) and not newer than the declared version.
fn check_features<'a, J: Json<'a>>(
    features: impl Iterator<Item = J>,
    minor: u32,
    out: &mut Vec<Diagnostic>,
) {
    for (i, f) in features.enumerate() {
        let Some(id) = f.as_str() else { continue };
        let ptr = format!("/atip/features/{i}");
        match FEATURES.iter().find(|(name, _)| *name == id) {
            Some((_, since)) if *since > minor => out.push(Diagnostic::new(
                "feature-not-in-version",
                ptr,
                format!(
                    "feature \"{id}\" is from ATIP 0.{since}, but the document declares 0.{minor}"
                ),
            )),
            Some(_) => {}
            None if id.starts_with("x-") => {}
            None => out.push(Diagnostic::new(
                "unknown-feature",
                ptr,
                format!("feature \"{id}\" is not one atip knows"),
            )),
        }
    }
}

/// The fields each version added: `binary` (0.6), `trust` (0.4) and its integrity and
/// provenance (0.5), partial discovery and pattern `executable` (0.3).
fn check_field_versions<'a, J: Json<'a>>(root: J, minor: u32, out: &mut Vec<Diagnostic>) {
    if root.contains_key("binary") {
        needs(
            minor,
            6,
            "/binary",
            "\"binary\" (content-addressable shims)",
            out,
        );
    }
    if let Some(trust) = root.get("trust") {
        needs(minor, 4, "/trust", "\"trust\"", out);
        if trust.is_object() {
            for key in ["integrity", "provenance", "shimIntegrity"] {
                if trust.contains_key(key) {
                    needs(
                        minor,
                        5,
                        &format!("/trust/{key}"),
                        &format!("\"trust.{key}\""),
                        out,
                    );
                }
            }
        }
    }
    for key in [
        "partial",
        "filter",
        "totalCommands",
        "includedCommands",
        "omitted",
    ] {
        if root.contains_key(key) {
            needs(
                minor,
                3,
                &format!("/{key}"),
                &format!("\"{key}\" (partial discovery)"),
                out,
            );
        }
    }
    if let Some(patterns) = root.get("patterns").and_then(J::items) {
        for (i, p) in patterns.enumerate() {
            if p.get("executable").is_some() {
                needs(
                    minor,
                    3,
                    &format!("/patterns/{i}/executable"),
                    "pattern \"executable\"",
                    out,
                );
            }
        }
    }
}

/// `effects.interactive` (0.3), at the root and in every command.
fn check_interactive_effects<'a, J: Json<'a>>(root: J, minor: u32, out: &mut Vec<Diagnostic>) {
    let mut effects: Vec<(String, J)> = Vec::new();
    if let Some(e) = root.get("effects") {
        effects.push(("/effects".into(), e));
    }
    for_each_command(root, |ptr, cmd| {
        if let Some(e) = cmd.get("effects") {
            effects.push((format!("{ptr}/effects"), e));
        }
    });
    for (ptr, e) in effects {
        if e.get("interactive").is_some() {
            needs(
                minor,
                3,
                &format!("{ptr}/interactive"),
                "\"effects.interactive\"",
                out,
            );
        }
    }
}

/// Calls `f` with the pointer and object of every command, parents first.
fn for_each_command<'a, J: Json<'a>>(root: J, mut f: impl FnMut(&str, J)) {
    let mut stack: Vec<(String, J)> = Vec::new();
    push_children(root, "", &mut stack);
    while let Some((ptr, cmd)) = stack.pop() {
        f(&ptr, cmd);
        push_children(cmd, &ptr, &mut stack);
    }
}

fn push_children<'a, J: Json<'a>>(parent: J, ptr: &str, stack: &mut Vec<(String, J)>) {
    if let Some(children) = parent.get("commands").and_then(J::members) {
        for (name, child) in children.rev() {
            if child.is_object() {
                stack.push((format!("{ptr}/commands/{}", escape_token(name)), child));
            }
        }
    }
}

fn check_shim<'a, J: Json<'a>>(root: J, file_name: Option<&str>, out: &mut Vec<Diagnostic>) {
    let binary = root.get("binary").filter(|b| b.is_object());
    if let (Some(root_name), Some(bin_name)) = (
        root.get("name").and_then(J::as_str),
        binary.and_then(|b| b.get("name")).and_then(J::as_str),
    ) && root_name != bin_name
    {
        out.push(Diagnostic::new(
            "shim-name-mismatch",
            "/name",
            format!("name \"{root_name}\" differs from binary.name \"{bin_name}\""),
        ));
    }
    let Some(stem) = file_name.and_then(|f| f.strip_suffix(".json")) else {
        return;
    };
    if stem.len() != 64 || !stem.bytes().all(|b| b.is_ascii_hexdigit()) {
        return;
    }
    let hash = binary.and_then(|b| b.get("hash")).and_then(J::as_str);
    let expected = format!("sha256:{stem}");
    match hash {
        Some(h) if h == expected => {}
        Some(h) => out.push(Diagnostic::new(
            "shim-hash-mismatch",
            "/binary/hash",
            format!("binary.hash is {h}, but the file is named {stem}.json (content-addressed: expected {expected})"),
        )),
        None => out.push(Diagnostic::new(
            "shim-hash-mismatch",
            if binary.is_some() { "/binary" } else { "" },
            format!("the file is named after a hash ({stem}.json) but has no binary.hash"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(kind: Kind, v: Value, file: Option<&str>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        check(kind, &v, file, &mut out);
        out.into_iter().map(|d| (d.rule, d.pointer)).collect()
    }

    fn meta(extra: Value) -> Value {
        let mut base =
            json!({"atip": {"version": "0.6"}, "name": "t", "version": "1", "description": "d"});
        base.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        base
    }

    #[test]
    fn spec_documents_every_rule_and_no_other() {
        let spec = include_str!("../../../../spec/validate.md");
        let table = spec
            .split("## Rules")
            .nth(1)
            .and_then(|t| t.split("\n## ").next())
            .expect("spec/validate.md has a Rules section");
        let documented: Vec<&str> = table
            .lines()
            .filter_map(|l| l.strip_prefix("| `")?.split('`').next())
            .collect();
        let ids: Vec<&str> = RULES.iter().map(|r| r.id).collect();
        assert_eq!(documented, ids, "spec/validate.md rule table vs RULES");
        for r in RULES {
            let row = table
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", r.id)))
                .unwrap();
            assert!(row.contains(r.severity.as_str()), "{row}");
            assert!(row.contains(&r.hint.replace('|', "\\|")), "{row}");
        }
    }

    #[test]
    fn catalogue_ids_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for r in RULES {
            assert!(seen.insert(r.id), "duplicate rule id {}", r.id);
        }
    }

    #[test]
    fn flags_inherited_and_overridden() {
        let v = meta(json!({
            "globalOptions": [{"name": "verbose", "flags": ["-v"], "type": "boolean", "description": "x"}],
            "commands": {"a": {"description": "a", "options": [
                {"name": "version", "flags": ["-v"], "type": "boolean", "description": "x"},
                {"name": "verbose", "flags": ["-V"], "type": "boolean", "description": "override"}
            ]}}
        }));
        // "verbose" is overridden by the command's own "verbose", so -v is free.
        assert!(ids(Kind::Metadata, v, None).is_empty());
        let v = meta(json!({
            "globalOptions": [{"name": "verbose", "flags": ["-v"], "type": "boolean", "description": "x"}],
            "commands": {"a": {"description": "a", "commands": {"b": {"description": "b", "options": [
                {"name": "version", "flags": ["-v", "-v"], "type": "boolean", "description": "x"}]}}}}
        }));
        assert_eq!(
            ids(Kind::Metadata, v, None),
            [
                (
                    "duplicate-flag".into(),
                    "/commands/a/commands/b/options/0/flags/0".into()
                ),
                (
                    "duplicate-flag".into(),
                    "/commands/a/commands/b/options/0/flags/1".into()
                )
            ]
        );
    }

    #[test]
    fn positional_order() {
        let arg = |n: &str, req: bool, var: bool| json!({"name": n, "type": "string", "description": "x", "required": req, "variadic": var});
        let v = meta(json!({"commands": {"c": {"description": "c", "arguments": [
            arg("a", false, false), arg("b", true, false), arg("c", false, true), arg("d", false, true), arg("e", false, false)
        ]}}}));
        let got: Vec<String> = ids(Kind::Metadata, v, None)
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(
            got,
            [
                "required-after-optional",
                "multiple-variadic",
                "argument-after-variadic"
            ]
        );
    }

    #[test]
    fn enums_and_defaults() {
        let v = meta(json!({"commands": {"c": {"description": "c", "options": [
            {"name": "a", "flags": ["--a"], "type": "enum", "description": "x"},
            {"name": "b", "flags": ["--b"], "type": "enum", "enum": ["x", "y"], "default": "z", "description": "x"},
            {"name": "c", "flags": ["--c"], "type": "integer", "default": "3", "description": "x"},
            {"name": "d", "flags": ["--d"], "type": "integer", "enum": [1, "2"], "description": "x"},
            {"name": "e", "flags": ["--e"], "type": "string", "variadic": true, "default": ["p", "q"], "description": "x"}
        ]}}}));
        let got: Vec<String> = ids(Kind::Metadata, v, None)
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(
            got,
            [
                "enum-without-values",
                "default-not-in-enum",
                "default-type",
                "enum-value-type"
            ]
        );
    }

    #[test]
    fn versions_and_features() {
        let v = json!({"atip": {"version": "0.3", "features": ["trust-v1", "nope"], "minAgentVersion": "0.5"},
            "name": "t", "version": "1", "description": "d", "binary": {"name": "t", "version": "1"}, "trust": {"source": "native"}});
        let got: Vec<String> = ids(Kind::Metadata, v, None)
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(
            got,
            [
                "field-not-in-version",
                "feature-not-in-version",
                "unknown-feature",
                "min-agent-version",
                "field-not-in-version",
                "field-not-in-version"
            ]
        );
        let v = json!({"atip": "0.9", "name": "t", "version": "1", "description": "d"});
        assert_eq!(
            ids(Kind::Metadata, v, None),
            [("unknown-version".into(), "/atip".into())]
        );
    }

    #[test]
    fn flattened_collisions() {
        let v = meta(
            json!({"commands": {"a_b": {"description": "x"}, "a": {"description": "a", "commands": {"b": {"description": "b"}}}}}),
        );
        assert_eq!(
            ids(Kind::Metadata, v, None),
            [(
                "flattened-name-collision".into(),
                "/commands/a/commands/b".into()
            )]
        );
    }

    #[test]
    fn pattern_placeholders() {
        let got: Vec<&str> =
            placeholders("git checkout -b {branch} && echo ${HOME} {{tag}} {} {1x} {a b}")
                .collect();
        assert_eq!(got, ["branch", "tag"]);
        let v = json!([{"name": "p", "steps": [{"command": "git tag {version} {other}"}],
            "variables": {"version": {"type": "string"}, "unused": {}}}]);
        assert_eq!(
            ids(Kind::Pattern, v, None),
            [
                ("undeclared-variable".into(), "/0/steps/0/command".into()),
                ("unused-variable".into(), "/0/variables/unused".into())
            ]
        );
    }

    #[test]
    fn shim_hash_against_file_name() {
        let hex = "ab".repeat(32);
        let v = json!({"atip": {"version": "0.6"}, "description": "d", "binary": {"name": "t", "version": "1", "hash": format!("sha256:{}", "cd".repeat(32))}});
        assert_eq!(
            ids(Kind::Shim, v.clone(), Some(&format!("{hex}.json"))),
            [("shim-hash-mismatch".into(), "/binary/hash".into())]
        );
        assert!(ids(Kind::Shim, v, Some("curl.json")).is_empty());
    }

    /// Diagnostics for `doc` under an ad-hoc schema, as (rule, pointer, message).
    fn mapped(schema: Value, doc: Value) -> Vec<(String, String, String)> {
        let compiled = crate::schema::compile_value(&schema, crate::schema::Draft::V2020_12)
            .unwrap_or_else(|e| panic!("{e}"));
        let Some(error) = compiled.errors(&doc) else {
            return Vec::new();
        };
        crate::schema::leaves(&error)
            .into_iter()
            .flat_map(|leaf| from_schema_error(&doc, leaf))
            .map(|d| (d.rule, d.pointer, d.message))
            .collect()
    }

    fn one(rule: &str, pointer: &str, message: &str) -> Vec<(String, String, String)> {
        vec![(rule.into(), pointer.into(), message.into())]
    }

    // Long because: one table of cases, a schema and a document per failure kind, each
    // with the exact diagnostic it gives.
    #[test]
    fn each_schema_failure_kind_has_its_rule_and_message() {
        let obj = |props: Value| json!({"type": "object", "properties": props});
        // One diagnostic per unknown key, each at the key.
        assert_eq!(
            mapped(
                json!({"type": "object", "additionalProperties": false}),
                json!({"a": 1, "b/c": 2})
            ),
            vec![
                (
                    "unknown-field".into(),
                    "/a".into(),
                    "unknown field \"a\" (kept, but no ATIP reader will use it)".into()
                ),
                (
                    "unknown-field".into(),
                    "/b~1c".into(),
                    "unknown field \"b/c\" (kept, but no ATIP reader will use it)".into()
                )
            ]
        );
        // One per missing field.
        let missing = mapped(
            obj(json!({"x": {"type": "object", "required": ["p", "q"]}})),
            json!({"x": {}}),
        );
        assert_eq!(
            missing,
            vec![
                (
                    "schema-required".into(),
                    "/x".into(),
                    "missing required field \"p\" in /x".into()
                ),
                (
                    "schema-required".into(),
                    "/x".into(),
                    "missing required field \"q\" in /x".into()
                )
            ]
        );
        assert_eq!(
            mapped(json!({"required": ["name"]}), json!({}))[0].2,
            "missing required field \"name\""
        );
        assert_eq!(
            mapped(obj(json!({"v": {"type": "string"}})), json!({"v": 42})),
            one("schema-type", "/v", "42 at /v is not of type string")
        );
        assert_eq!(
            mapped(json!({"type": ["string", "null"]}), json!([1])),
            one(
                "schema-type",
                "",
                "an array at the top level is not of type null or string"
            )
        );
        assert_eq!(
            mapped(obj(json!({"e": {"enum": ["a", "b"]}})), json!({"e": "c"})),
            one(
                "schema-enum",
                "/e",
                "\"c\" at /e is not one of \"a\", \"b\""
            )
        );
        assert_eq!(
            mapped(obj(json!({"e": {"const": 1}})), json!({"e": 2})),
            one("schema-enum", "/e", "2 at /e must be 1")
        );
        // A tool name, a flag, any other pattern.
        assert_eq!(
            mapped(
                obj(json!({"name": {"pattern": "^[a-z]+$"}})),
                json!({"name": "A B"})
            ),
            one(
                "invalid-name",
                "/name",
                "tool name \"A B\" does not match ^[a-z]+$ (letters, digits, _ and -)"
            )
        );
        let flags = json!({"flags": {"items": {"pattern": "^-"}}});
        assert_eq!(
            mapped(obj(flags), json!({"flags": ["x"]})),
            one(
                "schema-pattern",
                "/flags/0",
                "flag \"x\" at /flags/0 must start with - and hold no spaces or ="
            )
        );
        assert_eq!(
            mapped(obj(json!({"p": {"pattern": "^/"}})), json!({"p": "rel"})),
            one("schema-pattern", "/p", "\"rel\" at /p does not match ^/")
        );
        // Sizes: items, length, properties, bounds.
        assert_eq!(
            mapped(obj(json!({"l": {"minItems": 1}})), json!({"l": []})),
            one(
                "schema-size",
                "/l",
                "an array at /l has 0 items: fewer than 1 item"
            )
        );
        assert_eq!(
            mapped(obj(json!({"s": {"maxLength": 2}})), json!({"s": "abc"})),
            one(
                "schema-size",
                "/s",
                "\"abc\" at /s has 3 characters: longer than 2 characters"
            )
        );
        assert_eq!(
            mapped(
                obj(json!({"o": {"minProperties": 2}})),
                json!({"o": {"a": 1}})
            ),
            one(
                "schema-size",
                "/o",
                "an object at /o has 1 property: fewer than 2 properties"
            )
        );
        assert_eq!(
            mapped(obj(json!({"n": {"minimum": 1}})), json!({"n": 0})),
            one("schema-size", "/n", "0 at /n is less than the minimum 1")
        );
        assert_eq!(
            mapped(obj(json!({"n": {"exclusiveMaximum": 1}})), json!({"n": 1})),
            one("schema-size", "/n", "1 at /n is not less than 1")
        );
        // Everything else is `schema`, in atip's words.
        assert_eq!(
            mapped(
                obj(json!({"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}})),
                json!({"a": true})
            ),
            one(
                "schema",
                "/a",
                "true at /a: matches none of the allowed forms"
            )
        );
        assert_eq!(
            mapped(obj(json!({"n": {"multipleOf": 2}})), json!({"n": 3})),
            one("schema", "/n", "3 at /n: not a multiple of 2")
        );
        assert_eq!(
            mapped(
                json!({"propertyNames": {"maxLength": 2}}),
                json!({"abc": 1})
            ),
            one(
                "schema",
                "",
                "\"abc\" at the top level: property name \"abc\" is not allowed"
            )
        );
        // allOf branches each count; a long value is shortened.
        let both = mapped(
            json!({"allOf": [{"required": ["a"]}, {"required": ["b"]}]}),
            json!({}),
        );
        assert_eq!(both.len(), 2, "{both:?}");
        let long = "x".repeat(100);
        let got = mapped(obj(json!({"s": {"enum": ["y"]}})), json!({"s": long}));
        assert!(
            got[0].2.starts_with(&format!("\"{}...", "x".repeat(56))),
            "{got:?}"
        );
    }

    #[test]
    fn a_format_failure_is_schema_format() {
        let doc = json!({"atip": {"version": "0.6"}, "name": "t", "version": "1",
            "description": "d", "homepage": "not a uri"});
        let error = crate::schema::validator(crate::schema::SchemaName::Metadata)
            .errors(&doc)
            .unwrap();
        let got: Vec<Diagnostic> = crate::schema::leaves(&error)
            .into_iter()
            .flat_map(|leaf| from_schema_error(&doc, leaf))
            .collect();
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].rule, "schema-format");
        assert_eq!(got[0].pointer, "/homepage");
        assert_eq!(
            got[0].message,
            "\"not a uri\" at /homepage is not a valid uri"
        );
    }
}
