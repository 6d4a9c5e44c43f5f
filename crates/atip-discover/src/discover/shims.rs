//! Shim, pattern and scan-config loading, and their precedence.
//!
//! Shim layers, lowest precedence first: the shims built into atip (from memory, see
//! [`super::builtin`]), every system data dir (`$XDG_DATA_DIRS/agent-tools/shims`,
//! walked in reverse so the first `XDG_DATA_DIRS` entry wins), the user data dir's
//! `shims/`, each `--shims DIR` (the first given wins), then the user overrides in
//! `<config-dir>/overrides/`. Each layer holds name-keyed `NAME.json` and content-addressed
//! `sha256/<hex>.json` files. Every file is validated (kind `shim`); a refused file is
//! reported with its diagnostics, never silently dropped.
//!
//! Pattern files (`*.json` in each `patterns/` dir of the system data dirs and the user
//! data dir, same order) are validated (kind `pattern`) and merged into the metadata of
//! the tools they are about (see `spec/scan.md`).
//!
//! [`Shims`] is the scan's shim source ([`MetadataSource`]): it offers the override and
//! shim candidates of a name; a layer directory that exists but cannot be listed, or a
//! shim file that cannot be read, is a [`SourceFailure`] (the tools it provided stay).
//!
//! Must not run anything or write anything.

use super::builtin;
use super::cache::{Cache, ShimRecord, ShimVerdict};
use super::paths::{Fingerprint, is_valid_name};
use super::report::{RejectedFile, ReportDiagnostic};
use super::source::{Candidate, Doc, MetadataSource, SourceFailure, Subject, trust_or};
use crate::digest::sha256_hex;
use crate::registry::Source;
use crate::validate::{Kind, Severity, check_bytes};
use atip_base::fileio::ReadError;
use foldhash::{HashMap, HashSet};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// Which layer a shim comes from; later variants win.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    /// The shims built into atip (in memory).
    Builtin,
    /// `$XDG_DATA_DIRS/agent-tools/shims`.
    System,
    /// `<data-dir>/shims`.
    User,
    /// `--shims DIR`.
    Cli,
    /// `<config-dir>/overrides`.
    Override,
}

/// A valid shim file.
#[derive(Debug, Clone)]
pub struct ShimFile {
    /// The file.
    pub path: PathBuf,
    /// Its layer.
    pub layer: Layer,
    /// The shim directory (recorded as the registry's `shimRegistry`).
    pub dir: PathBuf,
    /// `binary.name` or root `name`.
    pub tool: Option<String>,
    /// `trust.source`.
    pub trust: Option<String>,
    /// sha256 hex of the file's bytes.
    pub doc: String,
    /// Where its bytes are.
    pub body: Doc,
}

/// Every usable shim, by key, already reduced to the winner of each key. (foldhash
/// maps: each name on PATH is looked up in them, and std's SipHash showed in a warm
/// rescan's profile.)
#[derive(Debug, Default)]
pub struct Shims {
    /// Name-keyed shims (system, user, `--shims`).
    pub by_name: HashMap<String, ShimFile>,
    /// Content-addressed shims (system, user, `--shims`), by hex digest.
    pub by_hash: HashMap<String, ShimFile>,
    /// Name-keyed overrides.
    pub override_by_name: HashMap<String, ShimFile>,
    /// Content-addressed overrides, by hex digest.
    pub override_by_hash: HashMap<String, ShimFile>,
    /// Executable names a content-addressed shim is about (their `binary.name`): only
    /// these are hashed to look for one.
    pub hash_names: HashSet<String>,
    /// Shim directories looked at, lowest precedence first.
    pub dirs: Vec<PathBuf>,
    /// Number of valid shim files.
    pub valid: usize,
    /// Refused shim files.
    pub rejected: Vec<RejectedFile>,
    /// Whether the built-in shims are the lowest layer.
    pub builtin: bool,
    /// Layers (or files) that could not be read.
    pub failures: Vec<SourceFailure>,
}

/// A valid pattern file.
#[derive(Debug, Clone)]
pub struct PatternFile {
    /// The file.
    pub path: PathBuf,
    /// The tool it names (`tool`), if any.
    pub tool: Option<String>,
    /// Its file name without `.json`.
    pub stem: String,
    /// The patterns, in file order.
    pub patterns: Vec<Value>,
    /// sha256 hex of the bytes.
    pub doc: String,
}

/// Pattern files, lowest precedence first.
#[derive(Debug, Default)]
pub struct Patterns {
    /// Valid files.
    pub files: Vec<PatternFile>,
    /// Refused files.
    pub rejected: Vec<RejectedFile>,
}

/// The `*.json` files of a directory, sorted; a missing directory has none, one that
/// exists but cannot be listed is an error.
fn json_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let rd = match fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Vec::new());
        }
        Err(e) => return Err(e),
    };
    let mut files: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    Ok(files)
}

fn diag(rule: &str, pointer: &str, message: String) -> ReportDiagnostic {
    ReportDiagnostic {
        severity: "error".into(),
        rule: rule.into(),
        pointer: pointer.into(),
        line: None,
        column: None,
        message,
    }
}

/// Validates one shim file (or takes the cached verdict while its fingerprint holds).
/// `Err` when the file exists but cannot be read (never cached).
fn shim_verdict(
    path: &Path,
    hash_keyed: bool,
    old: &Cache,
    new: &mut Cache,
) -> Result<Option<(ShimVerdict, Fingerprint)>, ReadError> {
    let Ok(md) = fs::metadata(path) else {
        return Ok(None);
    };
    if !md.is_file() {
        return Ok(None);
    }
    let fp = Fingerprint::of(&md);
    if let Some(rec) = old.shim(path, &fp) {
        new.put_shim(path, rec.clone());
        return Ok(Some((rec.verdict.clone(), fp)));
    }
    let bytes = fs::read(path).map_err(ReadError::at(path))?;
    let verdict = judge_shim(path, &bytes, hash_keyed);
    new.put_shim(
        path,
        ShimRecord {
            fp,
            verdict: verdict.clone(),
        },
    );
    Ok(Some((verdict, fp)))
}

/// Validates a shim file's bytes, and its name: `NAME.json` names a tool, a
/// content-addressed one is named after its `binary.hash`.
fn judge_shim(path: &Path, bytes: &[u8], hash_keyed: bool) -> ShimVerdict {
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let checked = check_bytes(bytes, Some(Kind::Shim), Some(&file_name));
    let mut errors = errors_of(&checked);
    let value = checked.value.as_ref().unwrap_or(&Value::Null);
    errors.extend(file_name_error(
        &file_name,
        value,
        hash_keyed,
        errors.is_empty(),
    ));
    if !errors.is_empty() {
        return rejected(errors);
    }
    let tool = value
        .pointer("/binary/name")
        .or_else(|| value.get("name"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    ShimVerdict::Valid {
        tool,
        trust: value
            .pointer("/trust/source")
            .and_then(Value::as_str)
            .map(str::to_owned),
        doc: sha256_hex(bytes),
        warnings: checked
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Warning)
            .map(ReportDiagnostic::from)
            .collect(),
    }
}

/// What is wrong with a shim's file name, if anything. The hash of a content-addressed
/// shim is compared only when the document is otherwise `valid`.
fn file_name_error(
    file_name: &str,
    value: &Value,
    hash_keyed: bool,
    valid: bool,
) -> Option<ReportDiagnostic> {
    let stem = file_name.strip_suffix(".json").unwrap_or(file_name);
    if !hash_keyed {
        return (!is_valid_name(stem)).then(|| {
            diag(
                "shim-file-name",
                "",
                format!("{file_name} does not name a tool (NAME.json)"),
            )
        });
    }
    if !crate::digest::is_hex64(stem) {
        return Some(diag(
            "shim-file-name",
            "",
            format!(
                "a content-addressed shim must be named <64 lowercase hex>.json, not {file_name}"
            ),
        ));
    }
    let bin_hash = value.pointer("/binary/hash").and_then(Value::as_str);
    (bin_hash != Some(&format!("sha256:{stem}")) && valid).then(|| {
        diag(
            "shim-hash-mismatch",
            "/binary/hash",
            format!(
                "binary.hash {} does not equal the file name sha256:{stem}",
                bin_hash.unwrap_or("(missing)")
            ),
        )
    })
}

/// The validator's errors (its warnings left out), as a report lists them.
pub(crate) fn errors_of(checked: &crate::validate::Checked) -> Vec<ReportDiagnostic> {
    checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ReportDiagnostic::from)
        .collect()
}

/// A file refused for these errors (the first one is its message).
fn rejected(diagnostics: Vec<ReportDiagnostic>) -> ShimVerdict {
    ShimVerdict::Rejected {
        message: diagnostics
            .first()
            .map(|d| d.message.clone())
            .unwrap_or_default(),
        diagnostics,
    }
}

/// The shim directories, lowest precedence first: (layer, directory). The built-in
/// layer has no directory (see [`load_shims`]).
pub(crate) fn shim_layers(
    system_data: &[PathBuf],
    data: &Path,
    cli: &[PathBuf],
    config: &Path,
) -> Vec<(Layer, PathBuf)> {
    let mut layers: Vec<(Layer, PathBuf)> = Vec::new();
    layers.extend(
        system_data
            .iter()
            .rev()
            .map(|d| (Layer::System, d.join("shims"))),
    );
    layers.push((Layer::User, data.join("shims")));
    layers.extend(cli.iter().rev().map(|d| (Layer::Cli, d.clone())));
    layers.push((Layer::Override, config.join("overrides")));
    layers
}

/// Loads every shim layer; later layers replace earlier ones key by key. With
/// `builtin`, the shims built into atip are the lowest layer (looked up by name when a
/// name has no other name-keyed shim).
pub(crate) fn load_shims(
    layers: &[(Layer, PathBuf)],
    builtin: bool,
    old: &Cache,
    new: &mut Cache,
) -> Shims {
    let mut shims = Shims {
        builtin,
        ..Shims::default()
    };
    if builtin {
        shims.dirs.push(PathBuf::from(builtin::REGISTRY));
    }
    for (layer, dir) in layers {
        shims.dirs.push(dir.clone());
        let fail = |message: String| SourceFailure {
            source: "shims",
            message,
            class: if *layer == Layer::Override {
                vec![Source::Override]
            } else {
                vec![Source::Shim, Source::ShimHash]
            },
            registry: Some(dir.display().to_string()),
        };
        for (hash_keyed, sub) in [(false, dir.clone()), (true, dir.join("sha256"))] {
            let files = match json_files(&sub) {
                Ok(f) => f,
                Err(e) => {
                    shims.failures.push(fail(format!(
                        "failed to list shim directory {}: {e}",
                        sub.display()
                    )));
                    continue;
                }
            };
            for path in files {
                match shim_verdict(&path, hash_keyed, old, new) {
                    Ok(Some((v, _))) => shims.add(path, v, (*layer, dir), hash_keyed),
                    Ok(None) => {}
                    Err(e) => shims.failures.push(fail(e.to_string())),
                }
            }
        }
    }
    shims
}

impl Shims {
    /// Adds one shim file of `layer` (in `dir`) by its verdict: refused, or in the map
    /// of its kind (by name or hash, override or not), replacing an earlier layer's.
    fn add(
        &mut self,
        path: PathBuf,
        verdict: ShimVerdict,
        (layer, dir): (Layer, &PathBuf),
        hash_keyed: bool,
    ) {
        let (tool, trust, doc) = match verdict {
            ShimVerdict::Rejected {
                message,
                diagnostics,
            } => {
                self.rejected.push(RejectedFile {
                    path,
                    message,
                    diagnostics,
                });
                return;
            }
            ShimVerdict::Valid {
                tool, trust, doc, ..
            } => (tool, trust, doc),
        };
        self.valid += 1;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let file = ShimFile {
            body: Doc::File(path.clone()),
            path,
            layer,
            dir: dir.clone(),
            tool: tool.clone(),
            trust,
            doc,
        };
        let map = match (hash_keyed, layer == Layer::Override) {
            (false, false) => &mut self.by_name,
            (true, false) => &mut self.by_hash,
            (false, true) => &mut self.override_by_name,
            (true, true) => &mut self.override_by_hash,
        };
        map.insert(stem, file);
        if hash_keyed && let Some(t) = tool {
            self.hash_names.insert(t);
        }
    }
}

/// The pattern dirs, lowest precedence first.
pub(crate) fn pattern_dirs(system_data: &[PathBuf], data: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = system_data
        .iter()
        .rev()
        .map(|d| d.join("patterns"))
        .collect();
    dirs.push(data.join("patterns"));
    dirs
}

/// Loads and validates every pattern file.
pub(crate) fn load_patterns(dirs: &[PathBuf], old: &Cache, new: &mut Cache) -> Patterns {
    let mut out = Patterns::default();
    for dir in dirs {
        let files = json_files(dir).unwrap_or_else(|e| {
            out.rejected.push(RejectedFile {
                path: dir.clone(),
                message: format!("failed to list pattern directory: {e}"),
                diagnostics: Vec::new(),
            });
            Vec::new()
        });
        for path in files {
            let Ok(md) = fs::metadata(&path) else {
                continue;
            };
            let fp = Fingerprint::of(&md);
            let bytes = match fs::read(&path) {
                Ok(b) => b,
                Err(e) => {
                    out.rejected.push(RejectedFile {
                        path,
                        message: format!("failed to read: {e}"),
                        diagnostics: Vec::new(),
                    });
                    continue;
                }
            };
            let verdict = match old.shim(&path, &fp) {
                Some(rec) => rec.verdict.clone(),
                None => pattern_verdict(&bytes),
            };
            new.put_shim(
                &path,
                ShimRecord {
                    fp,
                    verdict: verdict.clone(),
                },
            );
            match verdict {
                ShimVerdict::Rejected {
                    message,
                    diagnostics,
                } => out.rejected.push(RejectedFile {
                    path,
                    message,
                    diagnostics,
                }),
                ShimVerdict::Valid { .. } => out.files.extend(PatternFile::read(path, &bytes)),
            }
        }
    }
    out
}

/// Validates a pattern file's bytes.
fn pattern_verdict(bytes: &[u8]) -> ShimVerdict {
    let checked = check_bytes(bytes, Some(Kind::Pattern), None);
    if !checked.is_valid() {
        return rejected(errors_of(&checked));
    }
    ShimVerdict::Valid {
        tool: None,
        trust: None,
        doc: sha256_hex(bytes),
        warnings: Vec::new(),
    }
}

impl PatternFile {
    /// A valid pattern file's patterns: an array of them, an object with `patterns`
    /// (and the `tool` they belong to), or one pattern.
    fn read(path: PathBuf, bytes: &[u8]) -> Option<PatternFile> {
        let value = serde_json::from_slice::<Value>(bytes).ok()?;
        let (tool, patterns) = match value {
            Value::Array(items) => (None, items),
            Value::Object(mut obj) if obj.contains_key("patterns") => {
                let tool = obj.get("tool").and_then(Value::as_str).map(str::to_owned);
                match obj.remove("patterns") {
                    Some(Value::Array(items)) => (tool, items),
                    _ => (tool, Vec::new()),
                }
            }
            single @ Value::Object(_) => (None, vec![single]),
            _ => return None,
        };
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        Some(PatternFile {
            path,
            tool,
            stem,
            patterns,
            doc: sha256_hex(bytes),
        })
    }
}

impl PatternFile {
    /// Whether this file's patterns belong to `tool`: the file's `tool` key names it;
    /// without one, the file is named after it (`patterns/gh.json`); without either, a
    /// step of one of its patterns runs it (the step's first word).
    pub(crate) fn applies_to(&self, tool: &str, existing: &dyn Fn(&str) -> bool) -> bool {
        if let Some(t) = &self.tool {
            return t == tool;
        }
        if existing(&self.stem) {
            return self.stem == tool;
        }
        self.patterns.iter().any(|p| {
            p.get("steps")
                .and_then(Value::as_array)
                .is_some_and(|steps| {
                    steps.iter().any(|s| {
                        s.get("command")
                            .and_then(Value::as_str)
                            .and_then(|c| c.split_whitespace().next())
                            == Some(tool)
                    })
                })
        })
    }
}

/// Merges patterns into a metadata document: a pattern replaces an existing one of the
/// same `name`, otherwise it is appended. Files are applied in precedence order, so a
/// later file wins.
pub(crate) fn merge_patterns(doc: &mut Value, files: &[&PatternFile]) {
    let Some(obj) = doc.as_object_mut() else {
        return;
    };
    let list = obj
        .entry("patterns")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !list.is_array() {
        *list = Value::Array(Vec::new());
    }
    let list = list.as_array_mut().expect("just made an array");
    for file in files {
        for p in &file.patterns {
            let name = p.get("name").and_then(Value::as_str);
            match list
                .iter_mut()
                .find(|q| name.is_some() && q.get("name").and_then(Value::as_str) == name)
            {
                Some(slot) => *slot = p.clone(),
                None => list.push(p.clone()),
            }
        }
    }
}

impl Shims {
    /// The candidate of one shim file.
    fn candidate(
        file: &ShimFile,
        subject: &Subject<'_>,
        source: Source,
        by_hash: bool,
    ) -> Candidate {
        let mut warnings = Vec::new();
        if let Some(t) = &file.tool
            && t != subject.name
        {
            warnings.push(format!(
                "the shim {} describes {t:?}; it is registered under the executable name {:?}",
                file.path.display(),
                subject.name
            ));
        }
        let fallback = if source == Source::Override {
            "user"
        } else {
            "community"
        };
        Candidate {
            source,
            by_hash,
            doc: file.body.clone(),
            identity: format!("shim:{}:{}", file.path.display(), file.doc),
            trust: trust_or(file.trust.as_deref(), fallback),
            origin: Some(file.path.clone()),
            shim_registry: Some(file.dir.display().to_string()),
            warnings,
            vouch: None,
        }
    }

    /// The built-in shim of a name. Its hash, tool and trust were tabulated at build
    /// time, and its bytes are used in place: a warm rescan asks for every one.
    fn builtin_file(name: &str) -> Option<ShimFile> {
        let shipped = builtin::get(name)?;
        Some(ShimFile {
            path: PathBuf::from(builtin::REGISTRY).join(shipped.file),
            layer: Layer::Builtin,
            dir: PathBuf::from(builtin::REGISTRY),
            tool: shipped.tool.map(str::to_owned),
            trust: shipped.trust.map(str::to_owned),
            doc: shipped.sha256.to_owned(),
            body: Doc::Static(shipped.body.as_bytes()),
        })
    }
}

impl MetadataSource for Shims {
    fn id(&self) -> &'static str {
        "shims"
    }

    fn needs_hash(&self, subject: &Subject<'_>) -> bool {
        // Name-keyed shims need no hash; a content-addressed one for this name does.
        let any_hash = !self.by_hash.is_empty() || !self.override_by_hash.is_empty();
        any_hash && self.hash_names.contains(subject.name)
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let hex = subject.hex();
        if let Some(f) = hex.and_then(|h| self.override_by_hash.get(h)) {
            out.push(Self::candidate(f, subject, Source::Override, true));
        }
        if let Some(f) = self.override_by_name.get(subject.name) {
            out.push(Self::candidate(f, subject, Source::Override, false));
        }
        if let Some(f) = hex.and_then(|h| self.by_hash.get(h)) {
            out.push(Self::candidate(f, subject, Source::ShimHash, true));
        }
        if let Some(f) = self.by_name.get(subject.name) {
            out.push(Self::candidate(f, subject, Source::Shim, false));
        }
        if self.builtin
            && let Some(f) = Self::builtin_file(subject.name)
        {
            out.push(Self::candidate(&f, subject, Source::Shim, false));
        }
    }

    fn failures(&self) -> Vec<SourceFailure> {
        self.failures.clone()
    }
}

/// `config.json`'s scan settings.
#[derive(Debug, Default)]
pub struct ScanConfig {
    /// `probe.allow`: names or globs always probed in `auto` and `help` mode.
    pub allow: Vec<String>,
}

/// Why `config.json`'s scan settings cannot be used; the message names the file and,
/// for a wrong value, its JSON pointer.
#[derive(Debug, thiserror::Error)]
pub enum ScanConfigError {
    /// The file exists but cannot be read.
    #[error("failed to read {}: {source}", path.display())]
    Read {
        /// `config.json`.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// Not JSON.
    #[error("failed to parse {}: {source}", path.display())]
    Parse {
        /// `config.json`.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// JSON, but not an object.
    #[error("{} must hold a JSON object", .0.display())]
    NotObject(PathBuf),
    /// A member of the wrong type.
    #[error("{}: {pointer} must be {expected}", path.display())]
    Wrong {
        /// `config.json`.
        path: PathBuf,
        /// Where in it, e.g. `/probe/allow/0`.
        pointer: String,
        /// What it must be.
        expected: &'static str,
    },
}

/// Reads `<config-dir>/config.json`; a missing file is an empty config.
pub(crate) fn load_config(config_dir: &Path) -> Result<ScanConfig, ScanConfigError> {
    let path = config_dir.join("config.json");
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ScanConfig::default()),
        Err(source) => return Err(ScanConfigError::Read { path, source }),
    };
    let value: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(source) => return Err(ScanConfigError::Parse { path, source }),
    };
    let Some(obj) = value.as_object() else {
        return Err(ScanConfigError::NotObject(path));
    };
    let wrong = |pointer: String, expected| ScanConfigError::Wrong {
        path: path.clone(),
        pointer,
        expected,
    };
    let mut cfg = ScanConfig::default();
    match obj.get("probe") {
        None => {}
        Some(Value::Object(probe)) => match probe.get("allow") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) if !s.is_empty() => cfg.allow.push(s.to_owned()),
                        _ => {
                            return Err(wrong(
                                format!("/probe/allow/{i}"),
                                "a non-empty string (a tool name or glob)",
                            ));
                        }
                    }
                }
            }
            Some(_) => {
                return Err(wrong(
                    "/probe/allow".into(),
                    "an array of tool names or globs",
                ));
            }
        },
        Some(_) => return Err(wrong("/probe".into(), "an object")),
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_builtin_shim_names_its_tool_and_trust_as_its_json_says() {
        for builtin::Shipped { file, body, .. } in builtin::SHIPPED {
            let name = file.strip_suffix(".json").unwrap();
            let f = Shims::builtin_file(name).unwrap_or_else(|| panic!("{file}"));
            let value: Value = serde_json::from_str(body).unwrap();
            let tool = value
                .pointer("/binary/name")
                .or_else(|| value.get("name"))
                .and_then(Value::as_str);
            assert_eq!(f.tool.as_deref(), tool, "{file}");
            assert!(f.tool.is_some(), "{file}");
            let trust = value.pointer("/trust/source").and_then(Value::as_str);
            assert_eq!(f.trust.as_deref(), trust, "{file}");
            assert_eq!(f.doc, sha256_hex(body.as_bytes()));
        }
    }

    #[test]
    fn patterns_merge_by_name_later_wins() {
        let a = PatternFile {
            path: "a".into(),
            tool: Some("gh".into()),
            stem: "a".into(),
            patterns: vec![json!({"name": "p1", "steps": [{"command": "gh a"}]})],
            doc: String::new(),
        };
        let b = PatternFile {
            path: "b".into(),
            tool: None,
            stem: "org".into(),
            patterns: vec![
                json!({"name": "p1", "description": "new", "steps": [{"command": "gh b"}]}),
                json!({"name": "p2", "steps": [{"command": "kubectl apply"}]}),
            ],
            doc: String::new(),
        };
        let mut doc = json!({"name": "gh", "patterns": [{"name": "own"}]});
        merge_patterns(&mut doc, &[&a, &b]);
        let names: Vec<&str> = doc["patterns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["own", "p1", "p2"]);
        assert_eq!(doc["patterns"][1]["description"], "new");
        let exists = |n: &str| n == "gh" || n == "kubectl";
        assert!(a.applies_to("gh", &exists));
        assert!(!a.applies_to("kubectl", &exists));
        assert!(b.applies_to("kubectl", &exists));
        assert!(b.applies_to("gh", &exists));
        assert!(!b.applies_to("curl", &exists));
    }

    #[test]
    fn config_allowlist() {
        let t = tempfile::tempdir().unwrap();
        assert!(load_config(t.path()).unwrap().allow.is_empty());
        fs::write(
            t.path().join("config.json"),
            r#"{"probe": {"allow": ["mytool", "corp-*"]}, "other": 1}"#,
        )
        .unwrap();
        assert_eq!(load_config(t.path()).unwrap().allow, ["mytool", "corp-*"]);
        fs::write(
            t.path().join("config.json"),
            r#"{"probe": {"allow": "mytool"}}"#,
        )
        .unwrap();
        let e = load_config(t.path()).unwrap_err();
        assert!(
            matches!(&e, ScanConfigError::Wrong { pointer, .. } if pointer == "/probe/allow"),
            "{e:?}"
        );
        assert!(
            e.to_string()
                .ends_with("config.json: /probe/allow must be an array of tool names or globs")
        );
        fs::write(t.path().join("config.json"), "{").unwrap();
        let e = load_config(t.path()).unwrap_err();
        assert!(matches!(e, ScanConfigError::Parse { .. }), "{e:?}");
        assert!(e.to_string().starts_with("failed to parse "));
    }
}
