//! Tooli manifest → ATIP metadata: the mapping of spec/convert.md, in one pure function.
//!
//! The input is what `super::framework::convert` prints: `{"manifest": <Tooli's
//! generate_agent_manifest(app)>, "cli": {command: [parameter, …]}}`. The output is an
//! ATIP 0.6 document, marked as converted (`x-converted`), with `trust.source: vendor`
//! (the app's author wrote the annotations; atip wrote the document). Only what the
//! manifest states becomes an effect: a command without annotations has unknown effects.
//!
//! Must not run anything and must not read files.

use super::framework::TooliApp;
use serde_json::{Map, Value, json};

/// Longest one-line description ATIP allows.
const DESCRIPTION_MAX: usize = 200;

/// Why a Tooli app's printed manifest gives no document.
#[derive(Debug, thiserror::Error)]
pub enum TooliError {
    /// No `manifest` object in what the app printed.
    #[error("the output holds no Tooli manifest object")]
    NoManifest,
    /// A `manifest_version` other than 3.x.
    #[error("Tooli manifest version {0:?} is not supported (3.x is)")]
    Version(String),
    /// No `commands` list.
    #[error("the Tooli manifest has no commands list")]
    NoCommands,
}

/// Converts the printed manifest into ATIP metadata bytes registered as `name`.
pub fn to_atip(printed: &Value, name: &str, app: &TooliApp) -> Result<Vec<u8>, TooliError> {
    let manifest = printed
        .get("manifest")
        .and_then(Value::as_object)
        .ok_or(TooliError::NoManifest)?;
    let manifest_version = manifest
        .get("manifest_version")
        .and_then(Value::as_str)
        .unwrap_or("");
    if manifest_version.split('.').next() != Some("3") {
        return Err(TooliError::Version(manifest_version.to_owned()));
    }
    let tool = manifest.get("tool").and_then(Value::as_object);
    let text = |k: &str| tool.and_then(|t| t.get(k)).and_then(Value::as_str);
    let version = text("version")
        .filter(|v| !v.is_empty())
        .unwrap_or(if app.version.is_empty() {
            "unknown"
        } else {
            &app.version
        });
    let description = one_line(text("description").unwrap_or(""))
        .unwrap_or_else(|| format!("{name}: a Tooli app"));
    let cli = printed.get("cli").and_then(Value::as_object);
    let mut commands = Map::new();
    for c in manifest
        .get("commands")
        .and_then(Value::as_array)
        .ok_or(TooliError::NoCommands)?
    {
        let Some(cname) = c
            .get("name")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty())
        else {
            continue;
        };
        let params = cli.and_then(|m| m.get(cname)).and_then(Value::as_array);
        commands.insert(cname.to_owned(), command(name, cname, c, params));
    }
    let doc = json!({
        "atip": {"version": "0.6", "features": ["trust-v1"]},
        "name": name,
        "version": version,
        "description": description,
        "trust": {"source": "vendor", "verified": false},
        "commands": commands,
        "x-converted": {
            "from": "tooli",
            "manifestVersion": manifest_version,
            "package": app.package,
            "packageVersion": app.version,
        },
    });
    Ok(serde_json::to_vec_pretty(&doc).expect("a JSON value serializes"))
}

/// The first line of a text, trimmed and cut to [`DESCRIPTION_MAX`] characters.
fn one_line(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    if line.chars().count() <= DESCRIPTION_MAX {
        return Some(line.to_owned());
    }
    let cut: String = line.chars().take(DESCRIPTION_MAX - 1).collect();
    Some(format!("{}…", cut.trim_end()))
}

/// One manifest command → one ATIP command.
fn command(tool: &str, cname: &str, c: &Value, params: Option<&Vec<Value>>) -> Value {
    let schema = c.get("inputSchema");
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut arguments = Vec::new();
    let mut options = Vec::new();
    for (pname, p) in props.into_iter().flatten() {
        let hint = params.and_then(|ps| {
            ps.iter()
                .find(|h| h.get("name").and_then(Value::as_str) == Some(pname))
        });
        let is_required = required.contains(&pname.as_str());
        match parameter(pname, p, hint, is_required) {
            Param::Argument(a) => arguments.push(a),
            Param::Option(o) => options.push(o),
        }
    }
    let mut out = Map::new();
    out.insert(
        "description".into(),
        json!(
            c.get("description")
                .and_then(Value::as_str)
                .and_then(one_line)
                .unwrap_or_else(|| format!("Run `{tool} {cname}`."))
        ),
    );
    if !arguments.is_empty() {
        out.insert("arguments".into(), Value::Array(arguments));
    }
    if !options.is_empty() {
        out.insert("options".into(), Value::Array(options));
    }
    if let Some(e) = effects(c.get("annotations")) {
        out.insert("effects".into(), e);
    }
    let examples: Vec<&str> = c
        .get("examples")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if !examples.is_empty() {
        out.insert("examples".into(), json!(examples));
    }
    if let Some(extra) = tooli_extra(c) {
        out.insert("x-tooli".into(), extra);
    }
    Value::Object(out)
}

/// One parameter of a command, as ATIP writes it.
enum Param {
    Argument(Value),
    Option(Value),
}

/// One manifest parameter (with the CLI hint of its name, if any) → an ATIP argument
/// or option.
fn parameter(pname: &str, p: &Value, hint: Option<&Value>, is_required: bool) -> Param {
    let kind = hint.and_then(|h| h.get("kind")).and_then(Value::as_str);
    let has_default = hint
        .and_then(|h| h.get("hasDefault"))
        .and_then(Value::as_bool)
        .unwrap_or(!is_required);
    // Tooli's rule: a parameter marked Argument is positional, one marked Option is
    // a flag; unmarked, a parameter without a default is positional.
    let positional = match kind {
        Some("argument") => true,
        Some("option") => false,
        _ => !has_default,
    };
    let (ty, values) = value_type(p);
    let mut entry = Map::new();
    entry.insert("name".into(), json!(pname));
    entry.insert("type".into(), json!(ty));
    entry.insert("description".into(), json!(describe(pname, p)));
    if let Some(v) = values {
        entry.insert("enum".into(), Value::Array(v));
    }
    if let Some(d) = p.get("default").filter(|d| !d.is_null()) {
        entry.insert("default".into(), d.clone());
    }
    if positional {
        entry.insert("required".into(), json!(is_required));
        return Param::Argument(Value::Object(entry));
    }
    let flags: Vec<String> = hint
        .and_then(|h| h.get("flags"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .filter(|f| f.starts_with('-') && f.len() > 1)
                .map(str::to_owned)
                .collect()
        })
        .filter(|f: &Vec<String>| !f.is_empty())
        .unwrap_or_else(|| vec![format!("--{}", pname.replace('_', "-"))]);
    entry.insert("flags".into(), json!(flags));
    if is_required {
        entry.insert("required".into(), json!(true));
    }
    Param::Option(Value::Object(entry))
}

/// What Tooli says of a command that ATIP has no field for (`x-tooli`).
fn tooli_extra(c: &Value) -> Option<Value> {
    let mut extra = Map::new();
    for (from, to) in [
        ("outputSchema", "outputSchema"),
        ("supports_dry_run", "supportsDryRun"),
    ] {
        if let Some(v) = c.get(from).filter(|v| !v.is_null()) {
            extra.insert(to.into(), v.clone());
        }
    }
    (!extra.is_empty()).then_some(Value::Object(extra))
}

/// The description of a parameter: its schema `description`, else its `title`, else
/// its name.
fn describe(pname: &str, p: &Value) -> String {
    ["description", "title"]
        .iter()
        .filter_map(|k| p.get(*k).and_then(Value::as_str))
        .find_map(one_line)
        .unwrap_or_else(|| pname.to_owned())
}

/// The ATIP type of a JSON-schema property (and its enum values). `Optional[X]`
/// (`anyOf` of X and null) is X.
fn value_type(p: &Value) -> (&'static str, Option<Vec<Value>>) {
    let p = match p.get("anyOf").and_then(Value::as_array) {
        Some(variants) => {
            let real: Vec<&Value> = variants
                .iter()
                .filter(|v| v.get("type").and_then(Value::as_str) != Some("null"))
                .collect();
            match real.as_slice() {
                [one] => *one,
                _ => return ("string", None),
            }
        }
        None => p,
    };
    if let Some(values) = p.get("enum").and_then(Value::as_array)
        && !values.is_empty()
        && values.iter().all(Value::is_string)
    {
        return ("enum", Some(values.clone()));
    }
    let format = p.get("format").and_then(Value::as_str);
    match (p.get("type").and_then(Value::as_str), format) {
        (Some("boolean"), _) => ("boolean", None),
        (Some("integer"), _) => ("integer", None),
        (Some("number"), _) => ("number", None),
        (Some("array"), _) => ("array", None),
        (Some("string"), Some("path" | "file-path")) => ("file", None),
        (Some("string"), Some("directory-path")) => ("directory", None),
        (Some("string"), Some("uri")) => ("url", None),
        _ => ("string", None),
    }
}

/// ATIP effects from MCP-style annotations. Only stated hints become effects: a
/// command without any has no effects (unknown), and `destructive: false` is stated
/// only by `readOnlyHint` — a missing `destructiveHint` is not a "no".
fn effects(annotations: Option<&Value>) -> Option<Value> {
    let hint = |k: &str| annotations.and_then(|a| a.get(k)).and_then(Value::as_bool) == Some(true);
    let mut e = Map::new();
    if hint("readOnlyHint") {
        e.insert(
            "filesystem".into(),
            json!({"write": false, "delete": false}),
        );
        e.insert("destructive".into(), json!(false));
    } else if hint("destructiveHint") {
        e.insert("destructive".into(), json!(true));
    }
    if hint("idempotentHint") {
        e.insert("idempotent".into(), json!(true));
    }
    if hint("openWorldHint") {
        e.insert("network".into(), json!(true));
    }
    (!e.is_empty()).then_some(Value::Object(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn app() -> TooliApp {
        TooliApp {
            interpreter: PathBuf::from("/v/bin/python"),
            module: "notes.cli".into(),
            attr: "main".into(),
            dist: PathBuf::from("/v/lib/python3.11/site-packages/notes-1.0.dist-info"),
            package: "notes".into(),
            version: "1.0".into(),
        }
    }

    fn printed() -> Value {
        json!({
            "manifest": {
                "manifest_version": "3.0",
                "tool": {"name": "notes", "version": "1.2.0", "description": "Keep notes\nmore"},
                "commands": [
                    {"name": "list-notes", "description": "List notes.",
                     "annotations": {"readOnlyHint": true, "idempotentHint": true},
                     "inputSchema": {"type": "object", "required": ["folder"], "properties": {
                        "folder": {"type": "string", "format": "path", "title": "Folder", "description": ""},
                        "limit": {"type": "integer", "default": 10, "title": "Limit"},
                        "verbose": {"type": "boolean", "default": false, "description": "Show bodies"},
                        "sort": {"type": "string", "enum": ["name", "date"], "default": "name"},
                        "tag": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
                     }},
                     "outputSchema": {"type": "array"}, "examples": [], "supports_dry_run": false},
                    {"name": "purge", "description": "",
                     "annotations": {"destructiveHint": true},
                     "inputSchema": {"type": "object", "required": ["folder", "reason"], "properties": {
                        "folder": {"type": "string"}, "reason": {"type": "string"}
                     }}},
                    {"name": "sync", "description": "Sync.", "annotations": {},
                     "inputSchema": {"type": "object", "properties": {}}}
                ],
                "global_flags": {"--json": "JSON"}
            },
            "cli": {
                "list-notes": [
                    {"name": "folder", "kind": "argument", "flags": [], "hasDefault": false},
                    {"name": "limit", "kind": "option", "flags": ["-n", "--limit"], "hasDefault": true},
                    {"name": "verbose", "kind": null, "flags": [], "hasDefault": true}
                ],
                "purge": [
                    {"name": "folder", "kind": null, "flags": [], "hasDefault": false},
                    {"name": "reason", "kind": "option", "flags": [], "hasDefault": false}
                ]
            }
        })
    }

    #[test]
    fn a_manifest_becomes_valid_atip_marked_as_converted() {
        let bytes = to_atip(&printed(), "notes", &app()).unwrap();
        let checked =
            crate::validate::check_bytes(&bytes, Some(crate::validate::Kind::Metadata), None);
        assert!(checked.is_valid(), "{:?}", checked.diagnostics);
        let d: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(d["name"], "notes");
        assert_eq!(d["version"], "1.2.0");
        assert_eq!(d["description"], "Keep notes");
        assert_eq!(d["trust"]["source"], "vendor");
        assert_eq!(d["x-converted"]["from"], "tooli");
        let list = &d["commands"]["list-notes"];
        assert_eq!(list["arguments"][0]["name"], "folder");
        assert_eq!(list["arguments"][0]["type"], "file");
        assert_eq!(list["arguments"][0]["required"], true);
        assert_eq!(list["arguments"][0]["description"], "Folder");
        let opts = list["options"].as_array().unwrap();
        let flags: Vec<&Value> = opts.iter().map(|o| &o["flags"]).collect();
        assert_eq!(
            flags,
            [
                &json!(["-n", "--limit"]),
                &json!(["--verbose"]),
                &json!(["--sort"]),
                &json!(["--tag"])
            ]
        );
        assert_eq!(opts[0]["type"], "integer");
        assert_eq!(opts[0]["default"], 10);
        assert_eq!(opts[1]["type"], "boolean");
        assert_eq!(opts[1]["description"], "Show bodies");
        assert_eq!(opts[2]["type"], "enum");
        assert_eq!(opts[2]["enum"], json!(["name", "date"]));
        assert_eq!(opts[3]["type"], "string");
        assert!(opts[3].get("default").is_none());
        assert_eq!(
            list["effects"],
            json!({"filesystem": {"write": false, "delete": false}, "destructive": false, "idempotent": true})
        );
        assert_eq!(list["x-tooli"]["outputSchema"], json!({"type": "array"}));
        // A hint kind wins over the schema: `reason` is required but an option.
        let purge = &d["commands"]["purge"];
        assert_eq!(purge["description"], "Run `notes purge`.");
        assert_eq!(purge["arguments"].as_array().unwrap().len(), 1);
        assert_eq!(purge["options"][0]["flags"], json!(["--reason"]));
        assert_eq!(purge["options"][0]["required"], true);
        assert_eq!(purge["effects"], json!({"destructive": true}));
        // No annotations: no effects at all (unknown), never "safe".
        assert!(d["commands"]["sync"].get("effects").is_none());
        let meta = crate::model::Metadata::from_slice(&bytes).unwrap();
        let sync = &meta.commands.as_ref().unwrap()["sync"];
        assert!(!sync.effects.clone().unwrap_or_default().is_read_only());
    }

    #[test]
    fn without_cli_hints_required_parameters_are_positional() {
        let mut p = printed();
        p.as_object_mut().unwrap().remove("cli");
        let d: Value = serde_json::from_slice(&to_atip(&p, "notes", &app()).unwrap()).unwrap();
        let purge = &d["commands"]["purge"];
        assert_eq!(purge["arguments"].as_array().unwrap().len(), 2);
        assert!(purge.get("options").is_none());
        assert_eq!(
            d["commands"]["list-notes"]["options"][0]["flags"],
            json!(["--limit"])
        );
    }

    #[test]
    fn other_manifest_versions_and_shapes_are_refused() {
        let mut p = printed();
        p["manifest"]["manifest_version"] = json!("2.0");
        assert!(
            to_atip(&p, "notes", &app())
                .unwrap_err()
                .to_string()
                .contains("2.0")
        );
        assert!(to_atip(&json!({"x": 1}), "notes", &app()).is_err());
        let mut p = printed();
        p["manifest"].as_object_mut().unwrap().remove("commands");
        assert!(to_atip(&p, "notes", &app()).is_err());
    }

    #[test]
    fn long_descriptions_are_cut_to_one_line() {
        let long = "x".repeat(300);
        let got = one_line(&format!("\n  {long}\nsecond")).unwrap();
        assert_eq!(got.chars().count(), DESCRIPTION_MAX);
        assert!(one_line("  \n ").is_none());
    }
}
