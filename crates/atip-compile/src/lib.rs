//! Compiles ATIP metadata into what model providers read: flattened tools (one per
//! command an agent can run) with plain JSON Schema inputs, then per-provider tool lists
//! (OpenAI, OpenAI strict, Anthropic, Gemini, MCP), SKILL.md files and prompt fragments.
//!
//! Owns flattening, naming, parameter mapping, safety tunnelling, the per-format schema
//! rules and the strict-mode checker. The [`Catalog`] is the reverse map (name → tool and
//! command path) that `exec` and `mcp` use to turn a model's call back into a command line.
//!
//! Must not run anything, and does no I/O outside `source` (which reads the registry or a
//! file): callers hand it parsed metadata and print the result.
//! Agent-only fields (`interactive`, `duration`, `authentication`) never reach a
//! model-facing schema.

// The layers below, under the module names this code was written with (`crate::output`, …).
#[allow(unused_imports)]
pub(crate) use atip_base::{digest, dirs, output, similar};
#[allow(unused_imports)]
pub(crate) use atip_model::model;
#[allow(unused_imports)]
pub(crate) use atip_registry as registry;

mod emit;
mod flatten;
pub mod formats;
pub mod guard;
pub mod names;
pub mod prompt;

pub mod safety;
pub mod skill;
pub mod source;
pub mod strict;

use crate::model::{CommandEntry, Effects, Metadata, ParamType};
pub use crate::similar::edit_distance;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::io::Write;

pub use flatten::{flatten, flatten_params_only};

/// The input schema of a flattened tool with these parameters (what flattening puts in
/// [`FlatTool::input_schema`]): the compiled catalog stores the parameters only.
pub fn input_schema(params: &[Param]) -> Value {
    flatten::object_schema(params)
}
pub use formats::{Format, Strategy, render};

/// One command an agent can run, as one provider tool. Deserializable so the compiled
/// catalog (the `atip-catalog` layer above) can store it and give it back unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlatTool {
    /// Unique provider-safe name, `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$` (e.g. `gh_pr_create`).
    pub name: String,
    /// The ATIP tool (executable) name, e.g. `gh`.
    pub tool: String,
    /// Subcommand path, e.g. `["pr", "create"]`; `[""]` for the tool run with no subcommand.
    pub command: Vec<String>,
    /// Human title: `gh pr create`.
    pub title: String,
    /// Command description alone (never empty; a fallback is written when the metadata has none).
    pub summary: String,
    /// Safety suffix from the effective effects (`[⚠️ DESTRUCTIVE]`, `[READ-ONLY]`, or empty).
    pub safety: String,
    /// `summary` + `safety`, at most 1024 characters, the suffix always whole.
    pub description: String,
    /// Parameters in schema order: arguments, then options in scope (global, ancestors, own).
    pub params: Vec<Param>,
    /// The command's effective effects (command, then ancestors, then tool level).
    pub effects: Effects,
    /// Plain JSON Schema 2020-12: `type: object`, no `$ref`, `additionalProperties: false`.
    pub input_schema: Value,
    /// The metadata marks it (or an ancestor, or the tool) `x-atip-runner`: it runs a
    /// program named in its own arguments.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub runner: bool,
    /// What the command belongs to: the tool's description, then its parent commands'
    /// (outermost first), for search to rank by ("Kubernetes" finds `kubectl get`). Empty
    /// for a tool without subcommands (its summary already is that text) and MCP tools.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub about: String,
}

impl FlatTool {
    /// The command's effects in the worst case over the conditions its parameters can
    /// bring (`guard::worst_case`): what export's hints and safety suffix describe.
    pub fn worst_effects(&self) -> Effects {
        guard::worst_case(
            &self.effects,
            self.params.iter().map(|p| (p.shown_flag(), &p.guard)),
        )
        .0
    }
}

/// One schema property and where its value goes on the command line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// Property name in the schema (`dry_run`), unique within the tool.
    pub property: String,
    /// The argument or option it comes from.
    pub origin: ParamOrigin,
    /// ATIP type.
    pub kind: ParamType,
    /// Whether the schema lists it in `required`.
    pub required: bool,
    /// Whether the schema makes it an array (a variadic argument or repeatable option).
    pub variadic: bool,
    /// Property description as exported (never empty).
    pub description: String,
    /// Property schema, plain JSON Schema.
    pub schema: Value,
    /// What its `x-atip-` guard annotations say (runner, host, file reference): checked
    /// by exec, never exported.
    #[serde(default, skip_serializing_if = "guard::ParamGuard::is_empty")]
    pub guard: guard::ParamGuard,
}

impl Param {
    /// How a person names the parameter: its flag (`--output`), else its name.
    pub fn shown_flag(&self) -> &str {
        match &self.origin {
            ParamOrigin::Option { flag, .. } if !flag.is_empty() => flag,
            ParamOrigin::Option { name, .. } | ParamOrigin::Argument { name, .. } => name,
        }
    }
}

/// Where a parameter came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ParamOrigin {
    /// The `index`-th positional argument of the command.
    Argument {
        /// Position among the command's arguments, from 0.
        index: usize,
        /// ATIP argument name.
        name: String,
    },
    /// An option (own, an ancestor's, or global).
    Option {
        /// ATIP option name.
        name: String,
        /// The flag to pass, long form preferred (`--repo`).
        flag: String,
    },
}

/// What to flatten.
#[derive(Debug, Clone, Default)]
pub struct FlattenOptions {
    /// Keep commands that need a human (TTY, prompts, password or required stdin).
    pub include_interactive: bool,
    /// Command filters such as `gh pr` or `git log`: the first word names the tool, the
    /// rest a command path prefix. `None` keeps everything.
    pub commands: Option<Vec<String>>,
}

impl FlattenOptions {
    /// Whether `tool` + `path` passes the command filter.
    pub fn wants(&self, tool: &str, path: &[String]) -> bool {
        let Some(filters) = &self.commands else {
            return true;
        };
        let path: Vec<&str> = path
            .iter()
            .map(String::as_str)
            .filter(|s| !s.is_empty())
            .collect();
        filters.iter().any(|f| {
            let mut words = f.split_whitespace();
            words.next() == Some(tool) && {
                let rest: Vec<&str> = words.collect();
                rest.len() <= path.len() && rest[..] == path[..rest.len()]
            }
        })
    }
}

/// The command entry a flattened path names: `[""]` is the root command (the `""` key),
/// or the tool itself when it declares no commands.
pub fn resolve<'a, S: AsRef<str>>(meta: &'a Metadata, path: &[S]) -> Option<ResolvedCommand<'a>> {
    if path.len() == 1
        && path[0].as_ref().is_empty()
        && meta.commands.as_ref().is_none_or(|c| c.is_empty())
    {
        return Some(ResolvedCommand::Bare);
    }
    meta.find(path).map(ResolvedCommand::Entry)
}

/// What [`resolve`] found.
#[derive(Debug, Clone)]
pub enum ResolvedCommand<'a> {
    /// A command in the tree.
    Entry(CommandEntry<'a>),
    /// The tool itself: it declares no commands, only global options.
    Bare,
}

/// Flattened tools of many metadata documents, names unique across the whole set: the
/// reverse map from a tool-call name back to a tool and command path.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    tools: Vec<FlatTool>,
    skipped: Vec<FlatTool>,
    by_name: HashMap<String, usize>,
    /// Tools from outside the registry (MCP servers'), by position: their server.
    external: HashMap<usize, String>,
}

impl Catalog {
    /// Flattens every document (in the order given; give them sorted by tool name for
    /// stable output) and makes names unique across all of them. A later tool whose name
    /// is taken gets `_2`, `_3`, …; names are assigned before filtering, so a filter never
    /// changes the name of a command it keeps.
    pub fn build(metas: &[Metadata], opts: &FlattenOptions) -> Catalog {
        let mut taken = HashSet::new();
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        use rayon::prelude::*;
        let flat: Vec<Vec<FlatTool>> = metas
            .par_iter()
            .map(|m| flatten(m, &everything()))
            .collect();
        for doc in flat {
            let (kept, left_out) = assign_names(doc, opts, &mut taken);
            tools.extend(kept);
            skipped.extend(left_out);
        }
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Catalog {
            tools,
            skipped,
            by_name,
            external: HashMap::new(),
        }
    }

    /// A catalog of tools already flattened and named (as the compiled catalog stores
    /// them), in the order given.
    pub fn from_tools(tools: Vec<FlatTool>) -> Catalog {
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        Catalog {
            tools,
            skipped: Vec::new(),
            by_name,
            external: HashMap::new(),
        }
    }

    /// Adds a tool that is not a registered command (an MCP server's tool, already
    /// named `mcp__SERVER__TOOL`), so search ranks it with the commands. Returns false,
    /// adding nothing, when the name is taken.
    pub fn push_external(&mut self, tool: FlatTool, server: &str) -> bool {
        if self.by_name.contains_key(&tool.name) {
            return false;
        }
        let i = self.tools.len();
        self.by_name.insert(tool.name.clone(), i);
        self.external.insert(i, server.to_string());
        self.tools.push(tool);
        true
    }

    /// The MCP server of the tool at position `i`, when it is an MCP tool.
    pub fn external_server(&self, i: usize) -> Option<&str> {
        self.external.get(&i).map(String::as_str)
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<&FlatTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// Every tool, in order (document order within a tool, tools in the order given).
    pub fn tools(&self) -> &[FlatTool] {
        &self.tools
    }

    /// Commands left out because they need a human (empty with `include_interactive`).
    pub fn skipped(&self) -> &[FlatTool] {
        &self.skipped
    }

    /// Up to `n` names closest to `name`, for "unknown tool, did you mean …" errors: names
    /// within an edit distance of a third of its length (at least 2), or starting with it;
    /// nearest first, then longest shared prefix, then name.
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        closest_names(name, self.tools.iter().map(|t| t.name.as_str()), n)
    }
}

/// The `n` names of `names` closest to `name` (edit distance, then shared prefix), best
/// first: the suggestions of an unknown tool name.
pub fn closest_names<'a>(
    name: &str,
    names: impl Iterator<Item = &'a str>,
    n: usize,
) -> Vec<&'a str> {
    let limit = (name.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, std::cmp::Reverse<usize>, &str)> = names
        .filter_map(|t| {
            let d = edit_distance(name, t);
            let prefix = name
                .chars()
                .zip(t.chars())
                .take_while(|(a, b)| a == b)
                .count();
            let close = d <= limit || (prefix >= 3 && t.starts_with(name));
            close.then_some((d, std::cmp::Reverse(prefix), t))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(n).map(|(_, _, n)| n).collect()
}

/// Flatten options that keep every command (names are assigned before filtering).
fn everything() -> FlattenOptions {
    FlattenOptions {
        include_interactive: true,
        commands: None,
    }
}

/// Makes the names of one document's flattened tools unique against `taken`, then splits
/// what `opts` keeps from the commands left out because they need a human.
fn assign_names(
    tools: Vec<FlatTool>,
    opts: &FlattenOptions,
    taken: &mut HashSet<String>,
) -> (Vec<FlatTool>, Vec<FlatTool>) {
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for mut tool in tools {
        tool.name = claim_name(tool.name, taken);
        if !opts.wants(&tool.tool, &tool.command) {
            continue;
        }
        if tool.effects.needs_human() && !opts.include_interactive {
            skipped.push(tool);
        } else {
            kept.push(tool);
        }
    }
    (kept, skipped)
}

/// The name a flattened tool gets in a set where `taken` are already used: its own when
/// free, else the first free `_2`, `_3`, … form. Every way of building a set of tools
/// (here and in the compiled catalog) names them through this one function.
pub fn claim_name(name: String, taken: &mut HashSet<String>) -> String {
    if taken.contains(&name) {
        names::unique(name, taken, names::MAX_NAME)
    } else {
        taken.insert(name.clone());
        name
    }
}

/// One document's part of a flat JSON export, rendered: kept per document
/// (`catalog::rendered`, a layer above) so that the first export after a registry change renders
/// only the documents that changed. Made only where every name the document's commands
/// claimed was their own, so it is the same output in any export where those names are
/// free (see [`Exporter::add_rendered`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RenderedDoc {
    /// Every name the document's commands claim, the interactive ones included.
    pub names: Vec<String>,
    /// Titles of the interactive commands left out.
    pub skipped: Vec<String>,
    /// The elements, each as `emit::write_element` wrote it (before the list's padding).
    pub elements: Vec<Vec<u8>>,
}

/// What one batch of documents collects on its way out: skills, the tools waiting for
/// the JSON list, and each document's part of that list.
#[derive(Default)]
struct Batch {
    skills: Vec<(String, String)>,
    pending: Vec<formats::ExportTool>,
    parts: Vec<DocPart>,
}

/// One document's part of a batch, while [`Exporter::add_batch_rendered`] renders it.
struct DocPart {
    /// The names its commands claimed, when all were their own.
    names: Option<Vec<String>>,
    /// Titles of the interactive commands left out.
    skipped: Vec<String>,
    /// Its elements' positions among the batch's.
    elements: std::ops::Range<usize>,
}

/// What `atip export` asks for.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Output format.
    pub format: Format,
    /// One tool per command, or per command group.
    pub strategy: Strategy,
    /// Which commands.
    pub flatten: FlattenOptions,
}

/// What an export produced, besides its output.
#[derive(Debug, Clone, Default)]
pub struct ExportSummary {
    /// Provider tools written (a group counts once; a skill or prompt counts its commands).
    pub tools: usize,
    /// Titles of commands left out because they need a human.
    pub skipped: Vec<String>,
    /// Command filters that matched no command.
    pub unmatched_filters: Vec<String>,
    /// Rule violations, when checking was asked for.
    pub violations: Vec<strict::Violation>,
}

/// Builds an export one document at a time, writing as it goes, so memory stays that of
/// one document whatever the registry's size. Names are unique across every document
/// added, in the order added (add them sorted by tool name for stable output).
pub struct Exporter<W: Write> {
    opts: ExportOptions,
    taken: HashSet<String>,
    group_taken: HashSet<String>,
    list: Option<formats::ListWriter<W>>,
    text: Option<W>,
    checker: Option<strict::StreamChecker>,
    matched: Vec<bool>,
    summary: ExportSummary,
}

impl<W: Write> Exporter<W> {
    /// Starts an export into `out` (unused for `skill`, whose texts [`Exporter::add`]
    /// returns); `check` runs the format's checker on every element.
    pub fn new(opts: ExportOptions, mut out: W, check: bool) -> std::io::Result<Exporter<W>> {
        let (list, text) = match opts.format {
            Format::Prompt => {
                out.write_all(prompt::header().as_bytes())?;
                (None, Some(out))
            }
            Format::Skill => (None, Some(out)),
            f => (Some(formats::ListWriter::new(out, f)), None),
        };
        let filters = opts.flatten.commands.as_ref().map_or(0, Vec::len);
        Ok(Exporter {
            checker: check.then(|| strict::StreamChecker::new(opts.format)),
            opts,
            taken: HashSet::new(),
            group_taken: HashSet::new(),
            list,
            text,
            matched: vec![false; filters],
            summary: ExportSummary::default(),
        })
    }

    /// Adds one document. For `skill`, returns (skill directory name, SKILL.md text) when
    /// the document has commands to export.
    pub fn add(&mut self, meta: &Metadata) -> std::io::Result<Option<(String, String)>> {
        Ok(self
            .add_batch(std::slice::from_ref(meta))?
            .into_iter()
            .next())
    }

    /// Adds documents in order, flattening and rendering them in parallel; the output is
    /// the same as adding them one by one. For `skill`, returns the SKILL.md texts.
    pub fn add_batch(&mut self, metas: &[Metadata]) -> std::io::Result<Vec<(String, String)>> {
        self.add_docs(metas, None)
    }

    /// Whether rendered documents serve this export (flat JSON formats, every command,
    /// no `--check`): [`Exporter::add_rendered`] and [`Exporter::add_batch_rendered`].
    pub fn reuses_rendered(&self) -> bool {
        self.opts.format.is_json()
            && self.opts.strategy == Strategy::Flat
            && self.opts.flatten.commands.is_none()
            && self.checker.is_none()
    }

    /// Adds a document rendered by an earlier export ([`RenderedDoc`]): the same output
    /// as adding the document itself, when none of its names is taken yet. Returns
    /// `false`, having added nothing, when one is (then add the document).
    pub fn add_rendered(&mut self, doc: &RenderedDoc) -> std::io::Result<bool> {
        assert!(
            self.reuses_rendered(),
            "rendered documents serve flat JSON exports"
        );
        if doc.names.iter().any(|n| self.taken.contains(n)) {
            return Ok(false);
        }
        self.taken.extend(doc.names.iter().cloned());
        self.summary.skipped.extend(doc.skipped.iter().cloned());
        let list = self.list.as_mut().expect("JSON formats have a list writer");
        for e in &doc.elements {
            list.push_rendered(e)?;
        }
        self.summary.tools += doc.elements.len();
        Ok(true)
    }

    /// [`Exporter::add_batch`], also returning each document's [`RenderedDoc`] where one
    /// can be reused (`None` where a name it claimed was not its own).
    pub fn add_batch_rendered(
        &mut self,
        metas: &[Metadata],
    ) -> std::io::Result<Vec<Option<RenderedDoc>>> {
        assert!(
            self.reuses_rendered(),
            "rendered documents serve flat JSON exports"
        );
        let mut rendered = Vec::with_capacity(metas.len());
        self.add_docs(metas, Some(&mut rendered))?;
        Ok(rendered)
    }

    /// Flattens (in parallel), names, filters and renders documents; with `keep`, also
    /// collects each document's [`RenderedDoc`] (see [`Exporter::add_batch_rendered`]).
    fn add_docs(
        &mut self,
        metas: &[Metadata],
        keep: Option<&mut Vec<Option<RenderedDoc>>>,
    ) -> std::io::Result<Vec<(String, String)>> {
        use rayon::prelude::*;
        let flat: Vec<Vec<FlatTool>> = metas
            .par_iter()
            .map(|m| flatten(m, &everything()))
            .collect();
        let mut batch = Batch::default();
        for (meta, tools) in metas.iter().zip(flat) {
            self.add_doc(meta, tools, keep.is_some(), &mut batch)?;
        }
        if batch.pending.is_empty() && keep.is_none() {
            return Ok(batch.skills);
        }
        self.write_pending(&batch.pending, batch.parts, keep)?;
        self.summary.tools += batch.pending.len();
        Ok(batch.skills)
    }

    /// One document's flat tools: named, counted against the `--commands` filters, then
    /// rendered as a skill, a prompt section, or kept in `batch` for the JSON list. With
    /// `keep`, the document's part of the list is noted when its names are its own.
    fn add_doc(
        &mut self,
        meta: &Metadata,
        tools: Vec<FlatTool>,
        keep: bool,
        batch: &mut Batch,
    ) -> std::io::Result<()> {
        // Its names are its own when they are distinct and none is taken yet (every
        // command is kept here): then `claim_name` leaves each as it is.
        let own = keep.then(|| {
            let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
            let distinct = names.iter().collect::<HashSet<_>>().len() == names.len();
            (distinct && !names.iter().any(|n| self.taken.contains(n))).then_some(names)
        });
        let (kept, skipped) = assign_names(tools, &self.opts.flatten, &mut self.taken);
        if let Some(names) = own {
            let at = batch.pending.len();
            batch.parts.push(DocPart {
                names,
                skipped: skipped.iter().map(|t| t.title.clone()).collect(),
                elements: at..at + kept.len(),
            });
        }
        self.note_matched(&kept, &skipped);
        self.summary
            .skipped
            .extend(skipped.into_iter().map(|t| t.title));
        if kept.is_empty() {
            return Ok(());
        }
        match self.opts.format {
            Format::Skill => {
                self.summary.tools += kept.len();
                batch
                    .skills
                    .push((skill::skill_name(meta), skill::render(meta, &kept)));
            }
            Format::Prompt => {
                self.summary.tools += kept.len();
                let refs: Vec<&FlatTool> = kept.iter().collect();
                if let Some(out) = self.text.as_mut() {
                    out.write_all(prompt::section(meta, &refs).as_bytes())?;
                }
            }
            _ => batch.pending.extend(match self.opts.strategy {
                Strategy::Flat => formats::flat_owned(kept),
                Strategy::Grouped => {
                    formats::grouped_with(&kept, std::slice::from_ref(meta), &mut self.group_taken)
                }
            }),
        }
        Ok(())
    }

    /// Marks each `--commands` filter that one of these tools (kept or skipped) matches,
    /// so a filter that matched nothing can be reported.
    fn note_matched(&mut self, kept: &[FlatTool], skipped: &[FlatTool]) {
        let Some(filters) = &self.opts.flatten.commands else {
            return;
        };
        for (i, f) in filters.iter().enumerate() {
            if !self.matched[i] {
                let one = FlattenOptions {
                    include_interactive: true,
                    commands: Some(vec![f.clone()]),
                };
                self.matched[i] = kept
                    .iter()
                    .chain(skipped)
                    .any(|t| one.wants(&t.tool, &t.command));
            }
        }
    }

    /// Writes the batch's tools to the JSON list: through the strict checker one by one,
    /// else rendered in parallel; with `keep`, each document's rendered elements too.
    fn write_pending(
        &mut self,
        pending: &[formats::ExportTool],
        parts: Vec<DocPart>,
        keep: Option<&mut Vec<Option<RenderedDoc>>>,
    ) -> std::io::Result<()> {
        use rayon::prelude::*;
        let format = self.opts.format;
        let list = self.list.as_mut().expect("JSON formats have a list writer");
        if let Some(c) = self.checker.as_mut() {
            for t in pending {
                let element = formats::element(t, format);
                c.tool(&list.next_pointer(), &element);
                list.push(&element)?;
            }
            return Ok(());
        }
        let pad = list.pad();
        let rendered = pending
            .par_iter()
            .map(|t| {
                let mut buf = Vec::with_capacity(4096);
                emit::write_element(&mut buf, t, format, pad)?;
                Ok(buf)
            })
            .collect::<std::io::Result<Vec<Vec<u8>>>>()?;
        for bytes in &rendered {
            list.push_rendered(bytes)?;
        }
        if let Some(keep) = keep {
            keep.extend(parts.into_iter().map(|p| {
                p.names.map(|names| RenderedDoc {
                    names,
                    skipped: p.skipped,
                    elements: rendered[p.elements].to_vec(),
                })
            }));
        }
        Ok(())
    }

    /// Adds tools that are not registered commands (MCP servers' tools, already
    /// flattened and named `mcp__SERVER__TOOL`), one flat tool each, after the registry's.
    /// JSON formats only (nothing is added to `skill` or `prompt`). Returns the names left
    /// out because a command already has them.
    pub fn add_external(&mut self, tools: Vec<FlatTool>) -> std::io::Result<Vec<String>> {
        let format = self.opts.format;
        let Some(list) = self.list.as_mut() else {
            return Ok(Vec::new());
        };
        let mut left_out = Vec::new();
        let mut kept = Vec::new();
        for t in tools {
            if self.taken.insert(t.name.clone()) {
                kept.push(t);
            } else {
                left_out.push(t.name);
            }
        }
        for t in formats::flat_owned(kept) {
            let element = formats::element(&t, format);
            if let Some(c) = self.checker.as_mut() {
                c.tool(&list.next_pointer(), &element);
            }
            list.push(&element)?;
            self.summary.tools += 1;
        }
        Ok(left_out)
    }

    /// Closes the output and says what happened.
    pub fn finish(mut self) -> std::io::Result<ExportSummary> {
        if let Some(list) = self.list.take() {
            list.finish()?;
        }
        if let Some(mut out) = self.text.take() {
            out.flush()?;
        }
        if let Some(filters) = &self.opts.flatten.commands {
            self.summary.unmatched_filters = filters
                .iter()
                .zip(&self.matched)
                .filter(|(_, m)| !**m)
                .map(|(f, _)| f.clone())
                .collect();
        }
        if let Some(c) = self.checker.take() {
            self.summary.violations = c.finish();
        }
        Ok(self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(v: Value) -> Metadata {
        Metadata::from_value(v).unwrap()
    }

    #[test]
    fn catalog_names_are_unique_across_tools_and_stable_under_filters() {
        let gh = meta(
            json!({"atip": "0.4", "name": "gh", "version": "1", "description": "d",
            "commands": {"pr": {"description": "p", "commands": {"create": {"description": "c"}}},
                         "auth": {"description": "a", "commands": {"login": {"description": "l", "effects": {"interactive": {"tty": true}}}}}}}),
        );
        let ghpr = meta(
            json!({"atip": "0.4", "name": "gh_pr", "version": "1", "description": "d",
            "commands": {"create": {"description": "c2"}}}),
        );
        let all = Catalog::build(&[gh.clone(), ghpr.clone()], &FlattenOptions::default());
        let names: Vec<&str> = all.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["gh_pr_create", "gh_pr_create_2"]);
        assert_eq!(all.skipped().len(), 1);
        assert_eq!(all.get("gh_pr_create_2").unwrap().tool, "gh_pr");
        assert_eq!(all.get("gh_pr_create").unwrap().command, ["pr", "create"]);
        assert!(all.get("gh_auth_login").is_none());
        let only = Catalog::build(
            &[gh, ghpr],
            &FlattenOptions {
                include_interactive: false,
                commands: Some(vec!["gh_pr".into()]),
            },
        );
        let names: Vec<&str> = only.tools().iter().map(|t| t.name.as_str()).collect();
        assert_eq!(
            names,
            ["gh_pr_create_2"],
            "a filter never renames what it keeps"
        );
        assert_eq!(all.closest("gh_pr_creat", 1), ["gh_pr_create"]);
        assert!(all.closest("zzzzzzzzzzzzzzzzzzzzzzzz", 3).is_empty());
    }

    #[test]
    fn a_tool_without_commands_is_one_bare_tool() {
        let m = meta(
            json!({"atip": "0.3", "name": "ls", "version": "1", "description": "List",
            "globalOptions": [{"name": "all", "flags": ["-a"], "type": "boolean", "description": "All"}]}),
        );
        let tools = flatten(&m, &FlattenOptions::default());
        assert_eq!(tools.len(), 1);
        assert_eq!(
            (tools[0].name.as_str(), tools[0].command.clone()),
            ("ls", vec![String::new()])
        );
        assert!(matches!(
            resolve(&m, &tools[0].command),
            Some(ResolvedCommand::Bare)
        ));
        assert_eq!(
            tools[0].params[0].origin,
            ParamOrigin::Option {
                name: "all".into(),
                flag: "-a".into()
            }
        );
    }
}
