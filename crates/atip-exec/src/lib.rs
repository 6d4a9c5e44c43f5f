//! `exec`: turns a model's tool call into a checked, policy-gated run of the real
//! command-line tool, and the run into a result a model can read.
//!
//! The pipeline, each step with its own structured error ([`AtipError`], codes listed in
//! `spec/exec.md`): resolve the flattened tool name against the registry's
//! [`crate::compile::Catalog`] → parse the arguments → coerce ([`args`]) →
//! size limits → schema validation → path guardrails → argv ([`argv`]) → policy
//! ([`policy`]) → confirmation (the caller's job: a flag, a prompt, or MCP elicitation)
//! → run through [`crate::process`] → redaction ([`redact`]) → result, with an audit
//! record ([`audit`]) for every side-effecting call. [`calls`] adapts provider responses.
//!
//! `atip exec` and `atip mcp` both go through [`Engine`], so a call behaves the same
//! whichever way it arrives. Must not print (callers render) or spawn anything except
//! through `process`.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{digest, dirs, env, output, similar, timestamp, units};
#[allow(unused_imports)]
pub(crate) use atip_catalog as catalog;
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_model::model;
#[allow(unused_imports)]
pub(crate) use atip_process as process;
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;
#[allow(unused_imports)]
pub(crate) use atip_search as search;

pub mod args;
pub mod argv;
pub mod audit;
pub mod calls;
mod guards;
mod lazy;
pub mod policy;
pub mod redact;
pub mod repair;
pub mod runners;
pub mod trust;

use crate::compile::{Catalog, FlatTool, FlattenOptions, names};
use crate::dirs::Dirs;
use crate::env::Env;
use crate::model::Metadata;
use crate::output::{Applicability, AtipError, ErrorCode, SuggestedAction, Suggestion};
use crate::process::{Cancel, Exit, Spawn};
use crate::registry::{FileStamp, Index};
use audit::{AuditLog, AuditRecord};
use policy::{Action, CallFacts, Decision, Policy};
use redact::Redactor;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Rule id of a refusal because the executable changed since the scan.
pub const INTEGRITY_RULE: &str = "integrity.changed";

/// Why an executable is not the one the scan registered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Integrity {
    /// It is gone (nothing can run; reported as `tool_unavailable`).
    Missing(String),
    /// Its contents (or readability) changed: rule `integrity.changed`.
    Changed(String),
}

/// Timeout when neither `--timeout` nor the command's `duration.timeout` says.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default cap on each of stdout and stderr.
pub const DEFAULT_OUTPUT_CAP: usize = 256 * 1024;

/// Run-wide settings from flags.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Overrides every command's own timeout.
    pub timeout: Option<Duration>,
    /// Bytes of stdout kept.
    pub stdout_cap: usize,
    /// Bytes of stderr kept.
    pub stderr_cap: usize,
    /// Let commands that need a terminal or stdin run.
    pub allow_interactive: bool,
    /// Serve tools inferred from man pages even when no tool was named (they are left
    /// out by default so that a model is never handed a thousand schemas at once).
    pub include_inferred: bool,
    /// The run's environment: what a tool's child inherits (the allowlist, the
    /// variables its metadata authenticates with, those the policy passes) and the
    /// secret values redacted from its output. Empty by default: a library user hands
    /// in the environment the tools are meant to see.
    pub env: Env,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            timeout: None,
            stdout_cap: DEFAULT_OUTPUT_CAP,
            stderr_cap: DEFAULT_OUTPUT_CAP,
            allow_interactive: false,
            include_inferred: false,
            env: Env::default(),
        }
    }
}

/// What [`Engine::search_offered`] found.
#[derive(Debug)]
pub struct Offered<'a> {
    /// The commands offered, best first, each with its hit.
    pub hits: Vec<(&'a FlatTool, crate::search::Hit)>,
    /// Why tools that ranked were left out because their metadata no longer reads or
    /// verifies (as `atip exec` would refuse them); `atip scan` writes them again.
    pub unreadable: Vec<String>,
    /// Commands that ranked but that the policy denies outright, by tool-call name: not
    /// offered (a model could not call them), counted for `--verbose`.
    pub withheld: Vec<String>,
}

/// What `exec` knows about one registered tool beyond its flattened commands.
#[derive(Debug, Clone)]
pub struct ToolInfo {
    /// Absolute path of the executable, from the registry.
    pub program: PathBuf,
    /// `sha256:<hex>` of the executable when it was scanned, when the scan pinned it
    /// (else `fingerprint` alone pins it).
    pub hash: Option<String>,
    /// Its `stat` then, when the scan recorded it.
    pub fingerprint: Option<FileStamp>,
    /// Trust as atip derives it (never the document's claim).
    pub trust: trust::TrustFacts,
    /// Environment variables named by `authentication.methods[].envVar`: passed to the
    /// child when set, and their values redacted.
    pub auth_env: Vec<String>,
    /// The metadata is partial and says omitted commands have unknown safety.
    pub partial_unknown: bool,
    /// Inferred from a man page and not vouched for as curated: whatever effects the
    /// document states are a guess, so every call's effects are unknown.
    pub effects_unvouched: bool,
}

impl ToolInfo {
    /// What `exec` needs of a registry entry and its (hash-checked) document.
    fn of(meta: &Metadata, entry: &crate::registry::Entry) -> ToolInfo {
        ToolInfo {
            program: entry.path.clone(),
            hash: entry.hash.clone(),
            fingerprint: entry.fingerprint,
            trust: trust::derive(meta, entry, entry.vouch()),
            auth_env: meta
                .authentication
                .iter()
                .flat_map(|a| a.methods.iter().flatten())
                .filter_map(|m| m.env_var.clone())
                .collect(),
            effects_unvouched: entry.source == crate::registry::Source::Inferred
                && entry.vouch() != crate::registry::Vouch::Curated,
            partial_unknown: meta.partial == Some(true)
                && meta
                    .omitted
                    .as_ref()
                    .and_then(|o| o.safety_assumption.as_deref())
                    .is_none_or(|s| s == "unknown"),
        }
    }
}

/// The compiled catalog (`crate::catalog::load`). The notes of a catalog that was
/// refused go to `notes`; those of a missing one compiled afresh, worth telling only
/// with `--verbose`, to `compiled`.
fn open_catalog(
    dirs: &Dirs,
    notes: &mut Vec<String>,
    compiled: &mut Vec<String>,
) -> Result<Option<crate::catalog::Compiled>, AtipError> {
    crate::catalog::load(dirs, &mut |n| match n {
        crate::catalog::Note::Rejected(m) => notes.push(m),
        crate::catalog::Note::Compiled(m) => compiled.push(m),
    })
}

/// A catalog of the one tool a call names, and its tool's facts.
type Focused = (Catalog, HashMap<String, ToolInfo>);

/// The one tool a call by name needs, from the compiled catalog (`crate::catalog`): its
/// flattened command and its document's facts. `None` sends the caller to the JSON path:
/// no registry, a name the catalog does not hold (the JSON path suggests close names), a
/// registry whose names the JSON path would assign otherwise (an unreadable document, two
/// documents naming the same tool), or anything that does not read back as compiled.
/// Only the catalog's parts this name needs are read and checked
/// (`crate::catalog::load_named`): at a thousand tools, checking whole tables was most
/// of what `atip exec` spent before the tool started.
fn focused_from_catalog(
    dirs: &Dirs,
    want: &str,
    notes: &mut Vec<String>,
) -> Result<Option<Focused>, AtipError> {
    let lookup = crate::catalog::load_named(dirs, want, &mut |n| {
        if let crate::catalog::Note::Rejected(m) = n {
            notes.push(m);
        }
    })?;
    let Some(crate::catalog::Named { doc, tool, .. }) = lookup.and_then(|l| l.named) else {
        return Ok(None);
    };
    // The catalog was opened against registry.json's bytes as they are now: its copy of
    // the entry is the current one.
    let Ok(entry) = doc.entry() else {
        return Ok(None);
    };
    // The document is read (and its hash checked) for the facts exec derives from it.
    let Ok(mut meta) = Index::read_metadata(dirs, &entry) else {
        return Ok(None);
    };
    if meta.tool_name().is_none() {
        meta.name = Some(doc.name.clone());
    }
    let info = ToolInfo::of(&meta, &entry);
    let tool_name = meta.tool_name().unwrap_or(&doc.name).to_string();
    Ok(Some((
        Catalog::from_tools(vec![tool]),
        HashMap::from([(tool_name, info)]),
    )))
}

/// The lazy view of the compiled catalog (see [`lazy::Lazy::new`] for when there is none).
fn lazy_from_catalog(
    dirs: &Dirs,
    include_inferred: bool,
    notes: &mut Vec<String>,
    compiled: &mut Vec<String>,
) -> Result<Option<lazy::Lazy>, AtipError> {
    Ok(open_catalog(dirs, notes, compiled)?
        .and_then(|compiled| lazy::Lazy::new(dirs, compiled, include_inferred)))
}

/// The tools a load found: read at start-up (`catalog`, `tools`) or left to the lazy
/// view, and what could not be used.
#[derive(Default)]
struct Found {
    catalog: Catalog,
    tools: HashMap<String, ToolInfo>,
    unreadable: Vec<(String, AtipError)>,
    lazy: Option<lazy::Lazy>,
    warnings: Vec<String>,
}

/// The registry's tools, compiled for execution, plus policy and audit log.
#[derive(Debug)]
pub struct Engine {
    catalog: Catalog,
    tools: HashMap<String, ToolInfo>,
    checkers: Mutex<HashMap<String, Arc<args::Checker>>>,
    /// Grouped tools as `atip export --strategy grouped` names them: group name → its
    /// actions. Built on first use.
    groups: std::sync::OnceLock<HashMap<String, Vec<crate::compile::formats::GroupAction>>>,
    /// Registry entries whose metadata could not be used (tampered, unreadable), with
    /// the error a call naming one of their tools gets.
    unreadable: Vec<(String, AtipError)>,
    /// Set when the tools are read from the compiled catalog as calls name them, instead
    /// of all at start-up (then `catalog` and `tools` start empty).
    lazy: Option<lazy::Lazy>,
    /// Stamps of executables whose contents were re-hashed and found unchanged.
    rehashed: Mutex<HashMap<PathBuf, FileStamp>>,
    /// The policy in force.
    pub policy: Policy,
    /// Run-wide settings.
    pub settings: Settings,
    audit: AuditLog,
    cwd: PathBuf,
    /// Warnings collected while loading (unreadable metadata files).
    pub warnings: Vec<String>,
    /// Notes from loading (a compiled catalog that had to be compiled again).
    pub notes: Vec<String>,
    /// Notes worth a `--verbose` line: a missing catalog compiled afresh.
    pub compiled_notes: Vec<String>,
}

/// Where a call came from, for the audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Via {
    /// `atip exec`.
    Exec,
    /// `atip mcp`, with the client's `clientInfo` (`name/version`) when it sent one.
    Mcp {
        /// `name/version` of the MCP client.
        client: Option<String>,
    },
    /// `atip chat`, with the model endpoint (`provider/model`).
    Chat {
        /// `provider/model` the calls came from.
        model: String,
    },
}

impl Via {
    fn as_str(&self) -> &'static str {
        match self {
            Via::Exec => "exec",
            Via::Mcp { .. } => "mcp",
            Via::Chat { .. } => "chat",
        }
    }

    fn client(&self) -> Option<String> {
        match self {
            Via::Exec => None,
            Via::Mcp { client } => client.clone(),
            Via::Chat { model } => Some(model.clone()),
        }
    }
}

/// A call that passed every check up to the policy, ready to be confirmed and run.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The flattened tool.
    pub tool: FlatTool,
    /// The registered tool it belongs to.
    pub info: ToolInfo,
    /// Validated, coerced arguments.
    pub args: Map<String, Value>,
    /// Coercions applied (`count: "5" → 5`).
    pub coerced: Vec<String>,
    /// Arguments after the program.
    pub argv: Vec<String>,
    /// The effects of this call (the command's under the conditions that hold).
    pub effects: crate::model::Effects,
    /// The policy's verdict.
    pub decision: Decision,
    /// The timeout that applies.
    pub timeout: Duration,
    /// Redactor for this tool's secrets.
    pub redactor: Redactor,
}

impl Prepared {
    /// Command path as typed: `gh pr create`.
    pub fn command_path(&self) -> String {
        command_path(&self.tool)
    }

    /// Program plus arguments, redacted, for results and logs.
    pub fn shown_argv(&self) -> Vec<String> {
        std::iter::once(self.info.program.display().to_string())
            .chain(self.argv.iter().cloned())
            .map(|a| self.redactor.redact(&a).into_owned())
            .collect()
    }

    /// Whether the call changes nothing (no audit record, may run in parallel).
    pub fn read_only(&self) -> bool {
        self.effects.is_read_only()
    }

    /// Whether an argument names a file or directory (checked against the roots),
    /// including the file references of `x-atip-reads` parameters.
    pub fn has_path_args(&self) -> bool {
        !guards::paths(&self.tool, &self.args).is_empty()
    }

    /// Whether running it twice is harmless (read-only or declared idempotent).
    pub fn parallel_safe(&self) -> bool {
        self.read_only() || self.effects.idempotent == Some(true)
    }

    /// The dry-run report: argv and the policy decision, nothing run.
    pub fn dry_run_report(&self) -> Value {
        json!({
            "status": "dry-run",
            "tool": self.tool.name,
            "command": self.command_path(),
            "argv": self.shown_argv(),
            "decision": self.decision,
            "effects": self.effects.summary(),
            "timeoutMs": self.timeout.as_millis() as u64,
            "coerced": self.coerced,
        })
    }
}

/// Every string value of a `url` parameter, with its property name.
fn command_path(tool: &FlatTool) -> String {
    std::iter::once(tool.tool.as_str())
        .chain(
            tool.command
                .iter()
                .map(String::as_str)
                .filter(|s| !s.is_empty()),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// A finished run: the `ok` result, shape fixed by `spec/exec.md`.
#[derive(Debug, Clone, Serialize)]
pub struct ExecResult {
    /// Always `ok`: atip ran the tool (whatever its exit code).
    pub status: &'static str,
    /// What the tool produced.
    pub data: ResultData,
    /// About the run.
    pub meta: ResultMeta,
}

/// `data` of a result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultData {
    /// The tool's exit code; `null` when a signal ended it.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Standard output (UTF-8, lossy), redacted, with a marker when truncated.
    pub stdout: String,
    /// Standard error, likewise.
    pub stderr: String,
    /// Standard output parsed, when it is whole and is JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub json: Option<Value>,
}

/// `meta` of a result.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultMeta {
    /// Flattened tool name.
    pub tool: String,
    /// Program and arguments, redacted.
    pub argv: Vec<String>,
    /// Wall time of the run.
    pub duration_ms: u64,
    /// Whether stdout or stderr went past its cap.
    pub truncated: bool,
    /// Coercions applied to the arguments.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub coerced: Vec<String>,
}

impl ExecResult {
    /// Whether the tool itself reported failure (non-zero exit or a signal).
    pub fn tool_failed(&self) -> bool {
        self.data.exit_code != Some(0)
    }

    /// The exit code `atip exec` passes on: the tool's, or 128 + signal.
    pub fn exit_code(&self) -> crate::output::ExitStatus {
        use crate::output::ExitStatus;
        match (self.data.exit_code, self.data.signal) {
            (Some(c), _) => ExitStatus::Tool((c & 0xff) as u8),
            (None, Some(s)) => ExitStatus::Signal(s),
            _ => ExitStatus::Failure,
        }
    }
}

/// The envelope of a failed call: `{"status":"error","error":{…},"meta":{"tool"}}`.
pub fn error_envelope(tool: Option<&str>, err: &AtipError) -> Value {
    let mut v = json!({"status": "error", "error": err});
    if let Some(t) = tool {
        v["meta"] = json!({"tool": t});
    }
    v
}

fn current_dir() -> Result<PathBuf, AtipError> {
    std::env::current_dir().map_err(|e| {
        AtipError::new(
            ErrorCode::CwdUnavailable,
            format!("failed to read the working directory: {e}"),
        )
    })
}

/// One registry document read, or why it could not be.
type ReadDocument = (String, Result<Metadata, crate::registry::RegistryError>);

/// Reads the entries' documents, in the entries' order.
fn read_documents(dirs: &Dirs, entries: &[(String, crate::registry::Entry)]) -> Vec<ReadDocument> {
    use rayon::prelude::*;
    let read_one = |(name, entry): &(String, crate::registry::Entry)| -> ReadDocument {
        (name.clone(), Index::read_metadata(dirs, entry))
    };
    // Threads pay off only for many documents; rayon's idle workers spin, which costs
    // more than reading a handful of files.
    if entries.len() > 8 {
        entries.par_iter().map(read_one).collect()
    } else {
        entries.iter().map(read_one).collect()
    }
}

/// The documents an engine offers and what it knows of each tool: an unreadable document
/// is skipped with a warning (and named, so a call to it says why), and a second document
/// naming an already offered tool is skipped, since running the wrong executable is worse
/// than not offering it. The catalog is left empty for the caller to build.
fn collect_tools(
    read: Vec<ReadDocument>,
    entries: &[(String, crate::registry::Entry)],
) -> (Vec<Metadata>, Found) {
    let mut metas: Vec<Metadata> = Vec::new();
    let mut found = Found::default();
    for ((name, r), (_, entry)) in read.into_iter().zip(entries) {
        let mut meta = match r {
            Ok(m) => m,
            Err(e) => {
                found.warnings.push(format!("skipped {name}: {e}"));
                found.unreadable.push((name.clone(), e.to_atip()));
                continue;
            }
        };
        if meta.tool_name().is_none() {
            meta.name = Some(name.clone());
        }
        let tool_name = meta.tool_name().unwrap_or(&name).to_string();
        if found.tools.contains_key(&tool_name) {
            found.warnings.push(format!(
                "skipped {name}: its metadata names tool {tool_name:?}, already provided by another registry entry"
            ));
            continue;
        }
        found.tools.insert(tool_name, ToolInfo::of(&meta, entry));
        metas.push(meta);
    }
    (metas, found)
}

/// For one call by name, the catalog of only the documents that can produce that name, or
/// None when the name is not among them (the full catalog then gives the closest-name
/// suggestions). Every flattened name starts with its tool's own root name (then `_`), and
/// `_N` suffixes only append, so any document whose names could collide with the wanted
/// one is among these, in the same relative order: the name means the same command as in
/// the full catalog.
fn focused_catalog(metas: &[Metadata], want: &str, opts: &FlattenOptions) -> Option<Catalog> {
    let subset: Vec<Metadata> = metas
        .iter()
        .filter(|m| {
            let root = names::tool_name(m.tool_name().unwrap_or(""), &[String::new()]);
            want == root
                || want
                    .strip_prefix(root.as_str())
                    .is_some_and(|rest| rest.starts_with('_'))
        })
        .cloned()
        .collect();
    // A handful of documents: flatten them on this thread. `Catalog::build` uses rayon,
    // whose global pool would start a spinning thread per core for one call.
    let build = || Catalog::build(&subset, opts);
    let c = match rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .use_current_thread()
        .build()
    {
        Ok(pool) if subset.len() <= 8 => pool.install(build),
        _ => build(),
    };
    c.get(want).is_some().then_some(c)
}

/// How a confirmation request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Confirmed (`--yes`, a prompt, elicitation).
    Yes,
    /// A human said no.
    No,
    /// Nobody could be asked.
    Unavailable,
}

impl Engine {
    /// Loads the registry's tools. `only` keeps the named tools (registry names), as
    /// `atip mcp --tools gh,git` does; unknown names are an error. `focus` names the one
    /// flattened tool about to be called, so only the documents that can produce that
    /// name are flattened (the catalog then holds just those).
    pub fn load(
        dirs: &Dirs,
        policy: Policy,
        settings: Settings,
        only: Option<&[String]>,
        focus: Option<&str>,
    ) -> Result<Engine, AtipError> {
        // One call by name: the compiled catalog has it, without reading every document.
        let mut notes = Vec::new();
        if only.is_none()
            && let Some(want) = focus
            && let Some((catalog, tools)) = focused_from_catalog(dirs, want, &mut notes)?
        {
            let found = Found {
                catalog,
                tools,
                ..Found::default()
            };
            return Engine::assemble(dirs, policy, settings, found, notes);
        }
        // Every tool, for a server or a batch: from the compiled catalog, each tool read
        // when a call first names it.
        let mut compiled = Vec::new();
        if only.is_none()
            && focus.is_none()
            && let Some(lazy) =
                lazy_from_catalog(dirs, settings.include_inferred, &mut notes, &mut compiled)?
        {
            let found = Found {
                lazy: Some(lazy),
                ..Found::default()
            };
            let mut engine = Engine::assemble(dirs, policy, settings, found, notes)?;
            engine.compiled_notes = compiled;
            return Ok(engine);
        }
        // The same selection (sorted by name, unknown names an error) as `atip export`,
        // so flattened names match what export printed.
        let mut entries = match only {
            // Nothing asked for (a batch of MCP calls only): the registry is not read.
            Some([]) => Vec::new(),
            _ => crate::compile::source::registry_entries(dirs, only)?,
        };
        if only.is_none() && focus.is_none() && !settings.include_inferred {
            crate::compile::source::drop_inferred(&mut entries);
        }
        let read = read_documents(dirs, &entries);
        let (metas, mut found) = collect_tools(read, &entries);
        let opts = FlattenOptions {
            include_interactive: true,
            commands: None,
        };
        found.catalog = match focus.and_then(|want| focused_catalog(&metas, want, &opts)) {
            Some(c) => c,
            None => Catalog::build(&metas, &opts),
        };
        Engine::assemble(dirs, policy, settings, found, notes)
    }

    /// The engine over what a load found, with empty caches, the state directory's
    /// audit log and the working directory calls run in.
    fn assemble(
        dirs: &Dirs,
        policy: Policy,
        settings: Settings,
        found: Found,
        notes: Vec<String>,
    ) -> Result<Engine, AtipError> {
        Ok(Engine {
            catalog: found.catalog,
            tools: found.tools,
            checkers: Mutex::new(HashMap::new()),
            rehashed: Mutex::new(HashMap::new()),
            unreadable: found.unreadable,
            groups: std::sync::OnceLock::new(),
            lazy: found.lazy,
            audit: AuditLog::in_dir(&dirs.state),
            policy,
            settings,
            cwd: current_dir()?,
            warnings: found.warnings,
            notes,
            compiled_notes: Vec::new(),
        })
    }

    /// Every tool a client may see: all flattened commands, minus those needing a human
    /// unless interactive commands are allowed.
    pub fn visible_tools(&self) -> Vec<&FlatTool> {
        let mut all: Vec<&FlatTool> = self
            .catalog
            .tools()
            .iter()
            .filter(|t| self.settings.allow_interactive || !t.effects.needs_human())
            .collect();
        if let Some(l) = &self.lazy {
            all.extend(l.all(self.settings.allow_interactive));
        }
        all
    }

    /// How many tools [`Engine::visible_tools`] gives, without reading any.
    pub fn visible_count(&self) -> usize {
        match &self.lazy {
            Some(l) => l.count(self.settings.allow_interactive),
            None => self.visible_tools().len(),
        }
    }

    /// Every tool, interactive ones too (read now when they come from the catalog).
    pub fn all_tools(&self) -> Vec<&FlatTool> {
        let mut all: Vec<&FlatTool> = self.catalog.tools().iter().collect();
        if let Some(l) = &self.lazy {
            all.extend(l.all(true));
        }
        all
    }

    /// The compiled catalog's own warnings (documents skipped when it was compiled), when
    /// tools are read from it lazily.
    pub fn catalog_warnings(&self) -> Vec<String> {
        self.lazy
            .as_ref()
            .map(|l| l.compiled_warnings())
            .unwrap_or_default()
    }

    /// Whether tools are read from the compiled catalog as calls name them.
    pub fn is_lazy(&self) -> bool {
        self.lazy.is_some()
    }

    /// Search over the compiled catalog's index, for tools read as calls name them:
    /// the visible tools that need no human and that the policy does not deny outright,
    /// best first, at most `limit`. `None` when the engine is not lazy.
    pub fn search_compiled(
        &self,
        query: &str,
        limit: usize,
    ) -> Option<Result<Vec<crate::search::Found<'_>>, AtipError>> {
        Some(self.search_offered(query, limit, false)?.map(|o| {
            o.hits
                .into_iter()
                .map(|(t, h)| (t, h.score, h.aliases))
                .collect()
        }))
    }

    /// The `limit` best commands for `query` that this engine offers (selected, needing
    /// no human, not denied outright by the policy), each with its hit (score, aliases,
    /// reasons with `explain`): `atip search` and `atip mcp serve`'s search tool both
    /// answer through here, so they answer alike. `None` when the engine does not read
    /// the compiled catalog lazily.
    pub fn search_offered(
        &self,
        query: &str,
        limit: usize,
        explain: bool,
    ) -> Option<Result<Offered<'_>, AtipError>> {
        let lazy = self.lazy.as_ref()?;
        let (mut unreadable, mut withheld) = (Vec::new(), Vec::new());
        let hits = lazy.search(query, limit, explain, |t| match self.info(&t.tool) {
            Some(Err(e)) => {
                if !unreadable.contains(&e.message) {
                    unreadable.push(e.message.clone());
                }
                false
            }
            _ if self.denied_outright(t) => {
                withheld.push(t.name.clone());
                false
            }
            _ => true,
        });
        Some(hits.map(|hits| Offered {
            hits,
            unreadable,
            withheld,
        }))
    }

    /// The flattened tool `name`, wherever it is held.
    fn flat(&self, name: &str) -> Option<&FlatTool> {
        self.catalog
            .get(name)
            .or_else(|| self.lazy.as_ref()?.get(name)?.ok())
    }

    /// Registered tool names closest to `name`, best first, leaving out the tools the
    /// policy denies outright (a suggestion must not offer what cannot run).
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        let wider = n.saturating_mul(4).max(n);
        let names = match &self.lazy {
            Some(l) => crate::compile::closest_names(name, l.names(), wider),
            None => self.catalog.closest(name, wider),
        };
        names
            .into_iter()
            .filter(|c| self.flat(c).is_some_and(|t| !self.denied_outright(t)))
            .take(n)
            .collect()
    }

    /// The facts of tool `tool`: `None` when no entry provides it.
    fn info(&self, tool: &str) -> Option<Result<&ToolInfo, AtipError>> {
        match self.tools.get(tool) {
            Some(info) => Some(Ok(info)),
            None => self.lazy.as_ref()?.info(tool),
        }
    }

    /// The catalog.
    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    /// The audit log.
    pub fn audit_log(&self) -> &AuditLog {
        &self.audit
    }

    /// Resolves a flattened tool name.
    pub fn resolve(&self, name: &str) -> Result<&FlatTool, AtipError> {
        if let Some(found) = self.lazy.as_ref().and_then(|l| l.get(name)) {
            return found;
        }
        self.catalog.get(name).ok_or_else(|| {
            // A tool whose metadata file was refused: say so, not "unknown".
            if let Some((tool, e)) = self.unreadable.iter().find(|(tool, _)| {
                name == tool
                    || name
                        .strip_prefix(tool.as_str())
                        .is_some_and(|rest| rest.starts_with('_'))
            }) {
                let mut e = e.clone();
                e.message = format!("tool {tool}: {}", e.message);
                return e;
            }
            let close = self.closest(name, 5);
            let shown: String = name.chars().take(80).collect();
            let e = AtipError::new(
                ErrorCode::ToolNotFound,
                format!("no tool named {shown:?} in the registry"),
            )
            .details(json!({"closest": close}));
            match close.first() {
                None => e.hint("list tools with `atip export --format mcp` or `atip list`"),
                Some(best) => e
                    .hint(format!("did you mean: {}", close.join(", ")))
                    .suggest(
                        Suggestion::new(
                            SuggestedAction::UseDifferentTool,
                            format!("call {best}, the closest registered tool name"),
                        )
                        .example(*best, Applicability::MaybeIncorrect),
                    ),
            }
        })
    }

    fn groups(&self) -> &HashMap<String, Vec<crate::compile::formats::GroupAction>> {
        self.groups.get_or_init(|| {
            let visible: Vec<FlatTool> = self.visible_tools().into_iter().cloned().collect();
            crate::compile::formats::grouped(&visible, &[])
                .into_iter()
                .map(|g| (g.name, g.actions))
                .collect()
        })
    }

    /// Whether `name` is a tool a call may name: a flattened command, or a group of them
    /// as `atip export --strategy grouped` writes it.
    pub fn knows(&self, name: &str) -> bool {
        self.flat_known(name) || self.groups().contains_key(name)
    }

    /// Whether `name` is a flattened command (not a group), without reading it.
    pub fn flat_known(&self, name: &str) -> bool {
        self.catalog.get(name).is_some() || self.lazy.as_ref().is_some_and(|l| l.has(name))
    }

    /// A call of a grouped tool (`gh_pr` + `action: "create"`) as the call of the flat
    /// tool it stands for (`gh_pr_create`), with renamed properties given back their
    /// flat names and the nulls of other actions' properties (OpenAI strict mode sends
    /// every property) dropped. Other calls pass through unchanged.
    fn ungroup(
        &self,
        name: &str,
        mut raw: Map<String, Value>,
    ) -> Result<(String, Map<String, Value>), AtipError> {
        let flat = self.flat(name);
        let grouped = raw.contains_key("action")
            && flat.is_none_or(|t| !t.params.iter().any(|p| p.property == "action"));
        let actions = match self.groups().get(name) {
            Some(a) if grouped || flat.is_none() => a,
            _ => return Ok((name.to_string(), raw)),
        };
        let values: Vec<&str> = actions.iter().map(|a| a.action.as_str()).collect();
        let wanted = raw.remove("action");
        let Some(action) = wanted
            .as_ref()
            .and_then(Value::as_str)
            .and_then(|w| actions.iter().find(|a| a.action == w))
        else {
            // The example: the closest action when one was given, else a placeholder.
            let closest = wanted
                .as_ref()
                .and_then(Value::as_str)
                .and_then(|w| crate::similar::closest(w, values.iter().copied()));
            let mut example = raw.clone();
            let suggestion = match closest {
                Some(c) => {
                    example.insert("action".into(), c.into());
                    Suggestion::new(
                        SuggestedAction::RetryWithModifiedInput,
                        format!("call again with \"action\": {c:?}"),
                    )
                    .example(Value::Object(example), Applicability::MaybeIncorrect)
                }
                None => {
                    example.insert("action".into(), format!("<{}>", values.join("|")).into());
                    Suggestion::new(
                        SuggestedAction::RetryWithModifiedInput,
                        format!("call again with \"action\": one of {}", values.join(", ")),
                    )
                    .example(Value::Object(example), Applicability::HasPlaceholders)
                }
            };
            return Err(AtipError::new(
                ErrorCode::ArgsInvalid,
                format!(
                    "{name} is a grouped tool: \"action\" must be one of {}, got {}",
                    values.join(", "),
                    wanted.map_or("nothing".to_string(), |v| v.to_string())
                ),
            )
            .hint(format!("pass \"action\": one of {}", values.join(", ")))
            .suggest(suggestion)
            .details(json!({"violations": [{"path": "/action", "message": "not one of the enum values"}], "enum": values})));
        };
        for (group_prop, flat_prop) in &action.properties {
            if let Some(v) = raw.remove(group_prop) {
                raw.insert(flat_prop.clone(), v);
            }
        }
        if let Some(target) = self.flat(&action.tool) {
            raw.retain(|k, v| !v.is_null() || target.params.iter().any(|p| &p.property == k));
        }
        Ok((action.tool.clone(), raw))
    }

    fn checker(&self, tool: &FlatTool) -> Result<Arc<args::Checker>, AtipError> {
        let mut map = self.checkers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = map.get(&tool.name) {
            return Ok(c.clone());
        }
        let c = Arc::new(args::Checker::new(&tool.input_schema)?);
        map.insert(tool.name.clone(), c.clone());
        Ok(c)
    }

    /// Runs every check up to and including the policy. `raw` is the parsed argument
    /// object (see [`args::parse_text`]).
    pub fn prepare(&self, name: &str, raw: Map<String, Value>) -> Result<Prepared, AtipError> {
        let (name, raw) = self.ungroup(name, raw)?;
        let name = name.as_str();
        let tool = self.resolve(name)?.clone();
        let info = self
            .info(&tool.tool)
            .ok_or_else(|| {
                AtipError::new(
                    ErrorCode::Internal,
                    format!("tool {} has no registry entry", tool.tool),
                )
            })??
            .clone();
        let redactor = Redactor::new()
            .with_env_vars(&self.settings.env, info.auth_env.iter().map(String::as_str));
        let mut a = raw;
        let coerced = args::coerce(&tool.input_schema, &mut a);
        let limits = self.policy.limits();
        let over = args::check_limits(&a, limits.max_string_bytes, limits.max_array_items);
        if !over.is_empty() {
            return Err(args::invalid(&tool.name, over, &tool.input_schema)
                .hint("raise limits.maxStringBytes / limits.maxArrayItems in the policy if this is intended"));
        }
        // Arguments that certainly fit need no compiled validator; any doubt, and every
        // diagnostic, is jsonschema's.
        if !args::certainly_valid(&tool.input_schema, &a) {
            let checker = self.checker(&tool)?;
            let violations = checker.check(&a);
            if !violations.is_empty() {
                let e = args::invalid(&tool.name, violations, &tool.input_schema);
                return Err(match repair::repair(&tool.input_schema, &a, &checker) {
                    Some(r) => e.suggest(r.suggestion(&redactor)),
                    None => e,
                });
            }
        }
        self.check_paths(&tool, &a)?;
        let sandbox = self.add_sandbox(&tool, &info, &mut a);
        let argv = argv::build(&tool.command, &tool.params, &a)?;
        let mut call = guards::call_effects(&tool, &a, &self.cwd);
        if info.effects_unvouched {
            call.effects = crate::model::Effects::default();
        }
        let mut decision = self.decide(&tool, &info, &argv, &a, &call.effects);
        decision.conditions.extend(sandbox);
        decision.conditions.extend(call.conditions);
        if let Err(Integrity::Changed(why)) = self.check_integrity(&info) {
            decision.rules.push(policy::RuleHit {
                rule: INTEGRITY_RULE.into(),
                action: Action::Deny,
                reason: why,
            });
        }
        decision
            .rules
            .extend(guards::url_hits(&self.policy, &tool, &a));
        decision.action = decision
            .rules
            .iter()
            .map(|r| r.action)
            .max()
            .unwrap_or(Action::Allow);
        let timeout = self.timeout_for(&tool);
        Ok(Prepared {
            tool,
            info,
            effects: call.effects,
            args: a,
            coerced,
            argv,
            decision,
            timeout,
            redactor,
        })
    }

    /// The timeout of a call of `tool`: `--timeout`, else the command's own
    /// `duration.timeout` (zero or unreadable means unstated), else [`DEFAULT_TIMEOUT`].
    fn timeout_for(&self, tool: &FlatTool) -> Duration {
        self.settings.timeout.unwrap_or_else(|| {
            tool.effects
                .duration
                .as_ref()
                .and_then(|d| d.timeout.as_deref())
                .and_then(|t| crate::units::parse_duration(t).ok())
                .filter(|d| !d.is_zero())
                .unwrap_or(DEFAULT_TIMEOUT)
        })
    }

    /// Whether the call runs `tool` in its sandbox: its `x-atip-sandbox` option is given
    /// and the program is one whose sandbox atip relies on ([`runners::sandbox_capable`]).
    fn sandboxed(&self, tool: &FlatTool, info: &ToolInfo, a: &Map<String, Value>) -> bool {
        tool.params
            .iter()
            .any(|p| p.guard.sandbox && a.get(&p.property) == Some(&Value::Bool(true)))
            && runners::sandbox_capable(&info.program)
    }

    /// Gives the tool's `x-atip-sandbox` option when the program is a command runner only
    /// by being sed or awk (the built-in table or its metadata's `x-atip-runner`), the
    /// policy does not allow it as one, and its sandbox can be relied on: the call then
    /// runs sandboxed instead of being refused. Returns the condition, for the decision.
    fn add_sandbox(
        &self,
        tool: &FlatTool,
        info: &ToolInfo,
        a: &mut Map<String, Value>,
    ) -> Option<String> {
        let p = tool.params.iter().find(|p| p.guard.sandbox)?;
        if a.get(&p.property) == Some(&Value::Bool(true)) {
            return None;
        }
        let names = runners::program_names(&info.program);
        let table = names
            .iter()
            .any(|n| runners::SANDBOX_NAMES.contains(&n.as_str()));
        if !(table || tool.runner)
            || self
                .policy
                .runner_allowed(&names, &info.program, &tool.tool, &command_path(tool))
            || !runners::sandbox_capable(&info.program)
        {
            return None;
        }
        a.insert(p.property.clone(), Value::Bool(true));
        let flag = match &p.origin {
            crate::compile::ParamOrigin::Option { flag, .. } => flag.clone(),
            crate::compile::ParamOrigin::Argument { name, .. } => name.clone(),
        };
        Some(format!(
            "sandbox: atip added {flag} ({} runs no programs and writes no files with it; the policy does not allow it as a command runner)",
            names.last().map(String::as_str).unwrap_or(&tool.tool)
        ))
    }

    /// The policy's decision on running `tool` with `argv` (arguments after the program)
    /// and the call's `effects`, before argument-value rules (URLs) and the integrity
    /// check. A sandboxed sed or gawk is no longer a runner by its name or its metadata's
    /// `x-atip-runner`; runner options and values still count.
    fn decide(
        &self,
        tool: &FlatTool,
        info: &ToolInfo,
        argv: &[String],
        a: &Map<String, Value>,
        effects: &crate::model::Effects,
    ) -> Decision {
        let names = runners::program_names(&info.program);
        let sandboxed = self.sandboxed(tool, info, a);
        let table_names: Vec<String> = names
            .iter()
            .filter(|n| !(sandboxed && runners::SANDBOX_NAMES.contains(&n.as_str())))
            .cloned()
            .collect();
        let runner = runners::why_runner(
            &table_names,
            &tool.command,
            argv,
            tool.runner && !sandboxed,
            &self.policy.file.runners.programs,
            &self.policy.file.runners.options,
        )
        .or_else(|| guards::runner_reason(tool, a))
        .or_else(|| {
            if effects.is_read_only() {
                return None; // reading git's files plants nothing
            }
            let paths = guards::paths(tool, a);
            runners::why_planting(paths.iter().map(|(_, v)| v.as_str()), &self.cwd)
        });
        let resolved = std::fs::canonicalize(&info.program)
            .ok()
            .filter(|r| *r != info.program);
        self.policy.evaluate(&CallFacts {
            tool: &tool.tool,
            flat_name: &tool.name,
            command_path: &command_path(tool),
            program: &info.program,
            program_resolved: resolved.as_deref(),
            effects,
            effects_unstated: tool.effects == crate::model::Effects::default()
                || info.effects_unvouched,
            trust: &info.trust,
            partial_unknown: info.partial_unknown,
            allow_interactive: self.settings.allow_interactive,
            is_self: runners::is_self(&info.program),
            program_names: &names,
            runner,
        })
    }

    /// Whether the policy denies `tool` whatever its arguments (lists, runners, atip
    /// itself, compromised trust): such a tool is not offered to a client at all.
    pub fn denied_outright(&self, tool: &FlatTool) -> bool {
        let Some(Ok(info)) = self.info(&tool.tool) else {
            return true;
        };
        let bare: Vec<String> = tool
            .command
            .iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect();
        // Offered when its sandbox would let it run (the sandbox atip adds itself).
        let mut a = Map::new();
        if let Some(p) = tool.params.iter().find(|p| p.guard.sandbox) {
            a.insert(p.property.clone(), Value::Bool(true));
        }
        self.decide(tool, info, &bare, &a, &tool.effects).action == Action::Deny
    }

    /// Checks that the executable is still the one the scan hashed: its `stat` against
    /// the recorded fingerprint (one `stat`, no reading), and only on a difference its
    /// sha256 against the recorded hash. Returns why not, when it is not.
    pub fn check_integrity(&self, info: &ToolInfo) -> Result<(), Integrity> {
        self.open_verified(info).map(drop)
    }

    /// Opens the executable and checks that the open file is the one the scan hashed
    /// (as [`Engine::check_integrity`] says), reading the bytes it hashes through the
    /// same descriptor. The run then executes this open file, not the path again
    /// (`process::Opened`): a file swapped in at the path after this check never runs.
    pub fn open_verified(&self, info: &ToolInfo) -> Result<process::Opened, Integrity> {
        let shown = info.program.display();
        let opened = open_executable(&info.program)
            .and_then(process::Opened::new)
            .map_err(|e| {
                let why = format!("{shown} cannot be checked: {e}");
                if e.kind() == std::io::ErrorKind::NotFound {
                    Integrity::Missing(why)
                } else {
                    Integrity::Changed(why)
                }
            })?;
        let md = opened
            .file()
            .metadata()
            .map_err(|e| Integrity::Changed(format!("{shown} cannot be checked: {e}")))?;
        if !md.is_file() {
            return Err(Integrity::Changed(format!("{shown} is not a regular file")));
        }
        let now = FileStamp::of(&md);
        if info.fingerprint == Some(now) {
            return Ok(opened);
        }
        let Some(pinned) = &info.hash else {
            // Pinned by its stat alone: nothing else to compare it with.
            return Err(Integrity::Changed(format!(
                "{shown} changed since the scan: its size, times or inode differ from what the scan recorded"
            )));
        };
        let mut known = self.rehashed.lock().unwrap_or_else(|p| p.into_inner());
        if known.get(&info.program) == Some(&now) {
            return Ok(opened);
        }
        let hash = crate::digest::sha256_raw_reader(&mut opened.file())
            .map(|raw| format!("sha256:{}", hex::encode(raw)))
            .map_err(|e| Integrity::Changed(format!("{shown} cannot be read: {e}")))?;
        if hash != *pinned {
            return Err(Integrity::Changed(format!(
                "{shown} changed since the scan: its sha256 is {hash}, the registry recorded {pinned}",
            )));
        }
        if !opened.unchanged() {
            return Err(Integrity::Changed(format!(
                "{shown} changed while it was being checked"
            )));
        }
        // Same contents, new stamp (touched, or a registry without fingerprints).
        // Re-checked if it changes again.
        known.insert(info.program.clone(), now);
        Ok(opened)
    }

    /// Every path the call names (file and directory arguments, and the file
    /// references `x-atip-reads` marks) must resolve inside the roots.
    fn check_paths(&self, tool: &FlatTool, a: &Map<String, Value>) -> Result<(), AtipError> {
        for (property, value) in guards::paths(tool, a) {
            if let Err(why) = self.policy.check_path(&value, &self.cwd) {
                return Err(AtipError::new(ErrorCode::PathOutsideRoots, format!("argument {property:?} is refused: {why}"),
                )
                .hint("use a path inside the working directory, or add a root under paths.roots in the policy")
                .details(json!({"property": property, "roots": self.policy.roots()})));
            }
        }
        Ok(())
    }

    /// The error for a call the policy (or a human) did not let run; also audited.
    pub fn refuse(
        &self,
        p: &Prepared,
        answer: Option<Confirmation>,
        via: &Via,
        call_id: Option<&str>,
    ) -> AtipError {
        let integrity = p.decision.rules.iter().find(|r| r.rule == INTEGRITY_RULE);
        let (code, message, hint, decision) = match (p.decision.action, answer) {
            (Action::Deny, _) if integrity.is_some() => (
                ErrorCode::IntegrityChanged,
                format!(
                    "refusing to run {}: {}",
                    p.command_path(),
                    p.decision.explain(Action::Deny)
                ),
                "run `atip scan` to register the executable as it is now, if the change is expected"
                    .to_string(),
                "deny",
            ),
            (Action::Deny, _) => (
                ErrorCode::PolicyDenied,
                format!(
                    "policy refuses {}: {}",
                    p.command_path(),
                    p.decision.explain(Action::Deny)
                ),
                "change the policy file if this call should be allowed (see spec/policy.md)"
                    .to_string(),
                "deny",
            ),
            (_, Some(Confirmation::No)) => (
                ErrorCode::ConfirmationDeclined,
                format!(
                    "{} was not confirmed: {}",
                    p.command_path(),
                    p.decision.explain(Action::Confirm)
                ),
                "the call was declined; do not retry it without asking the user".to_string(),
                "declined",
            ),
            _ => (
                ErrorCode::ConfirmationRequired,
                format!(
                    "{} needs confirmation: {}",
                    p.command_path(),
                    p.decision.explain(Action::Confirm)
                ),
                format!(
                    "pass --yes, confirm on a terminal, or allow it in the policy ({})",
                    p.decision.rule_ids(Action::Confirm).join(", ")
                ),
                "needs-confirmation",
            ),
        };
        let err = AtipError::new(code, message)
            .hint(hint)
            .details(json!({"rules": p.decision.rules, "argv": p.shown_argv()}));
        if !p.read_only() || p.decision.action == Action::Deny {
            self.record(
                p,
                via,
                call_id,
                decision,
                "refused",
                None,
                0,
                Some(code.as_str()),
            );
        }
        err
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &self,
        p: &Prepared,
        via: &Via,
        call_id: Option<&str>,
        decision: &str,
        outcome: &str,
        exit_code: Option<i32>,
        duration_ms: u64,
        error: Option<&str>,
    ) {
        let rec = AuditRecord {
            time: crate::timestamp::rfc3339_millis_now(),
            via: via.as_str(),
            client: via.client().map(|c| p.redactor.redact(&c).into_owned()),
            pid: std::process::id(),
            uid: unsafe { libc::getuid() },
            call_id: call_id.map(|c| p.redactor.redact(c).into_owned()),
            tool: p.tool.name.clone(),
            command: p.command_path(),
            program: p.info.program.display().to_string(),
            argv: p.shown_argv().into_iter().skip(1).collect(),
            decision: decision.into(),
            rules: p.decision.rules.iter().map(|r| r.rule.clone()).collect(),
            conditions: p
                .decision
                .conditions
                .iter()
                .map(|c| p.redactor.redact(c).into_owned())
                .collect(),
            outcome: outcome.into(),
            exit_code,
            duration_ms,
            error: error.map(str::to_string),
        };
        if let Err(e) = self.audit.append(&rec) {
            log::warn!(
                "failed to write audit log {}: {e}",
                self.audit.path().display()
            );
        }
    }

    /// Runs a prepared call that policy allowed (or a human confirmed). `confirmed`
    /// says how it was allowed, for the audit log.
    pub fn run(
        &self,
        p: &Prepared,
        confirmed: bool,
        cancel: Option<Cancel>,
        via: &Via,
        call_id: Option<&str>,
    ) -> Result<ExecResult, AtipError> {
        debug_assert!(p.decision.action != Action::Deny);
        let decision = if confirmed { "confirmed" } else { "allow" };
        let audited = !p.read_only();
        let record = |outcome: &str, exit_code: Option<i32>, ms: u64, error: Option<&str>| {
            if audited {
                self.record(p, via, call_id, decision, outcome, exit_code, ms, error);
            }
        };
        // Paths are checked again now, not only when the batch was checked: an earlier
        // call may have planted a symlink since.
        if let Err(e) = self.check_paths(&p.tool, &p.args) {
            record("refused", None, 0, Some(e.code.as_str()));
            return Err(e);
        }
        let opened = self.recheck_integrity(p, via, call_id, decision)?;
        let mut spawn = self.spawn_for(p, cancel);
        spawn.opened = Some(opened);
        let outcome = process::run(&spawn).map_err(|e| {
            if let process::ProcessError::Changed { .. } = e {
                return self.refuse_changed(p, e.to_string(), via, call_id);
            }
            record("failed", None, 0, Some("tool_unavailable"));
            AtipError::new(
                ErrorCode::ToolUnavailable,
                format!("failed to start {}: {}", p.info.program.display(), e),
            )
            .hint("the registered executable is missing or not executable; run `atip scan`")
        })?;
        let ms = outcome.elapsed.as_millis() as u64;
        let (stdout, stderr) = shown_streams(p, &outcome, &spawn);
        let (exit_code, signal) = match outcome.exit {
            Exit::Code(c) => (Some(c), None),
            Exit::Signal(s) => (None, Some(s)),
            Exit::TimedOut | Exit::Cancelled => {
                let e = stopped_error(p, outcome.exit == Exit::TimedOut, ms, stdout, stderr);
                let name = if e.code == ErrorCode::Timeout {
                    "timeout"
                } else {
                    "cancelled"
                };
                record(name, None, ms, Some(e.code.as_str()));
                return Err(e);
            }
        };
        let json = (!outcome.stdout_truncated)
            .then(|| stdout_json(&stdout))
            .flatten();
        record(
            if signal.is_some() { "signal" } else { "exited" },
            exit_code,
            ms,
            None,
        );
        Ok(ExecResult {
            status: "ok",
            data: ResultData {
                exit_code,
                signal,
                stdout,
                stderr,
                json,
            },
            meta: ResultMeta {
                tool: p.tool.name.clone(),
                argv: p.shown_argv(),
                duration_ms: ms,
                truncated: outcome.stdout_truncated || outcome.stderr_truncated,
                coerced: p.coerced.clone(),
            },
        })
    }

    /// The integrity check again, right before the run: the file may have changed since
    /// `prepare`. A missing executable fails the call; a changed one is refused. Returns
    /// the opened, checked file the run executes.
    fn recheck_integrity(
        &self,
        p: &Prepared,
        via: &Via,
        call_id: Option<&str>,
        decision: &str,
    ) -> Result<process::Opened, AtipError> {
        let why = match self.open_verified(&p.info) {
            Ok(opened) => return Ok(opened),
            Err(Integrity::Missing(why)) => {
                if !p.read_only() {
                    let code = Some("tool_unavailable");
                    self.record(p, via, call_id, decision, "failed", None, 0, code);
                }
                return Err(AtipError::new(ErrorCode::ToolUnavailable, why)
                    .hint("the registered executable is missing; run `atip scan`"));
            }
            Err(Integrity::Changed(why)) => why,
        };
        Err(self.refuse_changed(p, why, via, call_id))
    }

    /// The refusal (rule `integrity.changed`, audited) of a call whose executable changed.
    fn refuse_changed(
        &self,
        p: &Prepared,
        why: String,
        via: &Via,
        call_id: Option<&str>,
    ) -> AtipError {
        let mut refused = p.clone();
        refused.decision.rules.push(policy::RuleHit {
            rule: INTEGRITY_RULE.into(),
            action: Action::Deny,
            reason: why,
        });
        refused.decision.action = Action::Deny;
        self.refuse(&refused, None, via, call_id)
    }

    /// The child process to start: program, argv, caps, working directory, and the
    /// environment variables the tool authenticates with or the policy passes.
    fn spawn_for(&self, p: &Prepared, cancel: Option<Cancel>) -> Spawn {
        let mut spawn = Spawn::new(&p.info.program, p.argv.clone(), p.timeout);
        spawn.stdout_cap = self.settings.stdout_cap;
        spawn.stderr_cap = self.settings.stderr_cap;
        spawn.cwd = Some(self.cwd.clone());
        spawn.cancel = cancel;
        spawn.inherit = self.settings.env.clone();
        for name in p.info.auth_env.iter().chain(&self.policy.file.env.pass) {
            if let Some(v) = self.settings.env.var_os(name)
                && !spawn.env.iter().any(|(k, _)| k == name.as_str())
            {
                spawn.env.push((name.into(), v.to_owned()));
            }
        }
        spawn
    }

    /// Working directory calls run in and relative paths resolve against.
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }
}

/// Opens an executable to check and run it: for reading, or (`EACCES`: execute-only, as
/// some setuid binaries are) as `O_PATH`, which still pins the file and can be executed;
/// its bytes then cannot be hashed, so only a matching `stat` lets it run.
fn open_executable(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::File::open(path).or_else(|e| match e.raw_os_error() {
        Some(libc::EACCES) => std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH)
            .open(path),
        _ => Err(e),
    })
}

/// A captured stream as the result shows it: UTF-8 (lossy), redacted, with a marker when
/// it was cut at its cap.
/// Standard output as JSON when it is a whole JSON object or array (a result's
/// `data.json`, so a model need not parse text).
fn stdout_json(stdout: &str) -> Option<Value> {
    let t = stdout.trim();
    (t.starts_with('{') || t.starts_with('['))
        .then(|| serde_json::from_str::<Value>(t).ok())
        .flatten()
}

/// Both streams of a run as a result shows them ([`shown_stream`]).
fn shown_streams(p: &Prepared, outcome: &process::Outcome, spawn: &Spawn) -> (String, String) {
    (
        shown_stream(
            p,
            &outcome.stdout,
            outcome.stdout_truncated,
            "stdout",
            spawn.stdout_cap,
        ),
        shown_stream(
            p,
            &outcome.stderr,
            outcome.stderr_truncated,
            "stderr",
            spawn.stderr_cap,
        ),
    )
}

fn shown_stream(p: &Prepared, bytes: &[u8], truncated: bool, stream: &str, cap: usize) -> String {
    let s = String::from_utf8_lossy(bytes);
    let mut s = p.redactor.redact(&s).into_owned();
    if truncated {
        if !s.ends_with('\n') && !s.is_empty() {
            s.push('\n');
        }
        s.push_str(&format!("[atip: {stream} truncated at {cap} bytes]"));
    }
    s
}

/// The error for a run that was stopped (timed out, or cancelled), with what it printed.
fn stopped_error(
    p: &Prepared,
    timed_out: bool,
    ms: u64,
    stdout: String,
    stderr: String,
) -> AtipError {
    let (code, what, hint) = if timed_out {
        (
            ErrorCode::Timeout,
            format!(
                "{} ran past its timeout of {} and was killed with its process group",
                p.command_path(),
                crate::units::format_duration(p.timeout)
            ),
            "retry with a larger --timeout, or narrow the request",
        )
    } else {
        (
            ErrorCode::Cancelled,
            format!(
                "{} was cancelled and killed with its process group",
                p.command_path()
            ),
            "retry the call if it is still wanted",
        )
    };
    AtipError::new(code, what).hint(hint).details(json!({
        "timeoutMs": p.timeout.as_millis() as u64,
        "durationMs": ms,
        "argv": p.shown_argv(),
        "stdout": stdout,
        "stderr": stderr,
    }))
}

/// One call of a batch, once settled.
#[derive(Debug, Clone)]
pub struct CallOutcome {
    /// The result envelope (`ok` result or `error`).
    pub envelope: Value,
    /// Whether it counts as a failure (atip error, or the tool's non-zero exit).
    pub failed: bool,
}

/// How a batch runs: parallelism, where it came from, and an end no call may run past.
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// Most read-only or idempotent calls running at once.
    pub jobs: usize,
    /// Where the calls came from, for the audit log.
    pub via: Via,
    /// No call runs past this instant: each call's timeout is cut to the time left.
    pub deadline: Option<std::time::Instant>,
    /// Set (e.g. by a SIGINT handler) to kill running calls with their process groups.
    pub cancel: Option<Cancel>,
}

impl BatchOptions {
    /// `jobs` parallel calls from `atip exec`, no deadline.
    pub fn exec(jobs: usize) -> BatchOptions {
        BatchOptions {
            jobs,
            via: Via::Exec,
            deadline: None,
            cancel: None,
        }
    }
}

/// Runs the calls of one provider response: checks and confirmations in input order,
/// then read-only or idempotent calls in parallel (at most `jobs` at a time) and the
/// others one by one, each side-effecting call a barrier, so their relative order is
/// kept. Results come back in input order.
pub fn run_batch(
    engine: &Engine,
    list: &[calls::ToolCall],
    opts: &BatchOptions,
    confirm: &mut dyn FnMut(&Prepared) -> Confirmation,
) -> Vec<CallOutcome> {
    run_batch_with(engine, list, opts, confirm, None)
}

/// Tools a batch holds that the engine does not run itself (an MCP server's tools,
/// `mcp__SERVER__TOOL`): checked (arguments, policy, confirmation) in input order with
/// the others, and run in order as barriers, since nothing says they are safe to overlap.
pub trait Foreign {
    /// Whether `name` is one of these tools.
    fn claims(&self, name: &str) -> bool;
    /// Checks call `index` of the batch: arguments, policy, confirmation; keeps what
    /// [`Foreign::run`] needs. An error settles the call.
    fn check(
        &mut self,
        index: usize,
        call: &calls::ToolCall,
        args: Map<String, Value>,
    ) -> Result<(), AtipError>;
    /// Runs a call that passed [`Foreign::check`].
    fn run(&mut self, index: usize, call: &calls::ToolCall) -> CallOutcome;
}

/// A call of a batch that passed its checks.
enum Job {
    Local(Box<Prepared>, bool),
    Foreign,
}

/// [`run_batch`], with `foreign` running the calls it claims.
pub fn run_batch_with(
    engine: &Engine,
    list: &[calls::ToolCall],
    opts: &BatchOptions,
    confirm: &mut dyn FnMut(&Prepared) -> Confirmation,
    mut foreign: Option<&mut dyn Foreign>,
) -> Vec<CallOutcome> {
    let max = engine.policy.limits().max_calls;
    let mut slots: Vec<Option<CallOutcome>> = vec![None; list.len()];
    let mut runnable: Vec<(usize, Job)> = Vec::new();
    // Every call is checked (and confirmed) before any runs, in input order.
    for (i, call) in list.iter().enumerate() {
        let checked = if i >= max {
            Err(AtipError::new(
                ErrorCode::CallBudgetExceeded,
                format!(
                    "only {max} tool calls are run per response; this is call {}",
                    i + 1
                ),
            )
            .hint("split the work over several turns, or raise limits.maxCalls in the policy"))
        } else {
            check_call(engine, i, call, &opts.via, confirm, foreign.as_deref_mut())
        };
        match checked {
            Ok(job) => runnable.push((i, job)),
            Err(e) => {
                slots[i] = Some(CallOutcome {
                    envelope: error_envelope(Some(&call.name), &e),
                    failed: true,
                })
            }
        }
    }
    // Then they run in groups: a run of parallel-safe calls together, every other call
    // alone, so side effects keep their order.
    let parallel = |j: &Job| matches!(j, Job::Local(p, _) if p.parallel_safe());
    let mut k = 0;
    while k < runnable.len() {
        let mut end = k + 1;
        if parallel(&runnable[k].1) {
            while end < runnable.len() && parallel(&runnable[end].1) {
                end += 1;
            }
        }
        let group = &runnable[k..end];
        for (i, r) in run_group(engine, list, opts, group, foreign.as_deref_mut()) {
            slots[i] = Some(r);
        }
        k = end;
    }
    slots
        .into_iter()
        .map(|s| s.expect("every call settled"))
        .collect()
}

/// Checks call `i` of a batch: its arguments, then (for the engine's own tools) the
/// policy's decision and, when the policy asks, a confirmation. The error settles the call.
fn check_call(
    engine: &Engine,
    i: usize,
    call: &calls::ToolCall,
    via: &Via,
    confirm: &mut dyn FnMut(&Prepared) -> Confirmation,
    foreign: Option<&mut (dyn Foreign + '_)>,
) -> Result<Job, AtipError> {
    let raw = match &call.arguments {
        calls::RawArgs::Text(t) => args::parse_text(t),
        calls::RawArgs::Value(v) => args::into_object(v.clone()),
    };
    if let Some(f) = foreign.filter(|f| f.claims(&call.name)) {
        return raw.and_then(|r| f.check(i, call, r)).map(|()| Job::Foreign);
    }
    let p = raw.and_then(|r| engine.prepare(&call.name, r))?;
    match p.decision.action {
        Action::Allow => Ok(Job::Local(Box::new(p), false)),
        Action::Deny => Err(engine.refuse(&p, None, via, call.id.as_deref())),
        Action::Confirm => match confirm(&p) {
            Confirmation::Yes => Ok(Job::Local(Box::new(p), true)),
            answer => Err(engine.refuse(&p, Some(answer), via, call.id.as_deref())),
        },
    }
}

/// Runs one group of checked calls: one by one, or on up to `opts.jobs` threads when the
/// group may overlap ([`overlap_safe`]). Foreign calls always form a group of their own.
fn run_group(
    engine: &Engine,
    list: &[calls::ToolCall],
    opts: &BatchOptions,
    group: &[(usize, Job)],
    mut foreign: Option<&mut (dyn Foreign + '_)>,
) -> Vec<(usize, CallOutcome)> {
    let jobs = opts.jobs.max(1);
    if group.len() == 1 || jobs == 1 || !overlap_safe(group) {
        return group
            .iter()
            .map(|(i, job)| {
                let out = match job {
                    Job::Local(p, c) => settle(engine, p, *c, list[*i].id.as_deref(), opts),
                    Job::Foreign => match foreign.as_deref_mut() {
                        Some(f) => f.run(*i, &list[*i]),
                        None => unreachable!("a foreign job needs its runner"),
                    },
                };
                (*i, out)
            })
            .collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let out = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(group.len()) {
            s.spawn(|| {
                loop {
                    let j = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((i, job)) = group.get(j) else { break };
                    let Job::Local(p, c) = job else {
                        unreachable!("foreign jobs run alone")
                    };
                    let r = settle(engine, p, *c, list[*i].id.as_deref(), opts);
                    out.lock().unwrap_or_else(|e| e.into_inner()).push((*i, r));
                }
            });
        }
    });
    out.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Whether the calls of a group may run at once: each call's paths are checked right
/// before it starts, which holds only if no call running beside it can change what those
/// paths resolve to. So: all read-only, or none with a path argument.
fn overlap_safe(group: &[(usize, Job)]) -> bool {
    let local = || {
        group.iter().filter_map(|(_, j)| match j {
            Job::Local(p, _) => Some(p),
            Job::Foreign => None,
        })
    };
    local().all(|p| p.read_only()) || !local().any(|p| p.has_path_args())
}

fn settle(
    engine: &Engine,
    p: &Prepared,
    confirmed: bool,
    id: Option<&str>,
    opts: &BatchOptions,
) -> CallOutcome {
    let cut;
    let p = match opts.deadline {
        Some(end) => {
            let left = end.saturating_duration_since(std::time::Instant::now());
            let mut q = p.clone();
            q.timeout = q.timeout.min(left.max(Duration::from_millis(1)));
            cut = q;
            &cut
        }
        None => p,
    };
    match engine.run(p, confirmed, opts.cancel.clone(), &opts.via, id) {
        Ok(r) => CallOutcome {
            failed: r.tool_failed(),
            envelope: serde_json::to_value(&r).unwrap_or(Value::Null),
        },
        Err(e) => CallOutcome {
            envelope: error_envelope(Some(&p.tool.name), &e),
            failed: true,
        },
    }
}

#[cfg(test)]
mod engine_tests;
