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

mod flatten;
pub mod formats;
pub mod names;
pub mod prompt;

pub mod safety;
pub mod skill;
pub mod source;
pub mod strict;

use crate::model::{CommandEntry, Effects, Metadata, ParamType};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;

pub use flatten::flatten;
pub use formats::{Format, Strategy, render};

/// One command an agent can run, as one provider tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// One schema property and where its value goes on the command line.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// Where a parameter came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
}

impl Catalog {
    /// Flattens every document (in the order given; give them sorted by tool name for
    /// stable output) and makes names unique across all of them. A later tool whose name
    /// is taken gets `_2`, `_3`, …; names are assigned before filtering, so a filter never
    /// changes the name of a command it keeps.
    pub fn build(metas: &[Metadata], opts: &FlattenOptions) -> Catalog {
        let mut taken = std::collections::HashSet::new();
        let mut tools = Vec::new();
        let mut skipped = Vec::new();
        let everything = FlattenOptions {
            include_interactive: true,
            commands: None,
        };
        for meta in metas {
            for mut tool in flatten(meta, &everything) {
                tool.name = names::unique(tool.name, &mut taken, names::MAX_NAME);
                if !opts.wants(&tool.tool, &tool.command) {
                    continue;
                }
                if tool.effects.needs_human() && !opts.include_interactive {
                    skipped.push(tool);
                } else {
                    tools.push(tool);
                }
            }
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
        }
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

    /// Up to `n` names closest to `name` (edit distance, then shared prefix), for
    /// "unknown tool, did you mean …" errors.
    pub fn closest(&self, name: &str, n: usize) -> Vec<&str> {
        let mut scored: Vec<(usize, &str)> = self
            .tools
            .iter()
            .map(|t| {
                let d = edit_distance(name, &t.name);
                let prefix = name
                    .chars()
                    .zip(t.name.chars())
                    .take_while(|(a, b)| a == b)
                    .count();
                (d.saturating_sub(prefix.min(d)), t.name.as_str())
            })
            .collect();
        scored.sort();
        let limit = name.chars().count().max(3);
        scored
            .into_iter()
            .filter(|(d, _)| *d <= limit)
            .take(n)
            .map(|(_, n)| n)
            .collect()
    }
}

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
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

/// A rendered export.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// A JSON tool list (OpenAI, Anthropic, Gemini, MCP).
    Json(Value),
    /// A Markdown prompt fragment.
    Text(String),
    /// SKILL.md texts: (skill directory name, text), one per tool.
    Skills(Vec<(String, String)>),
}

/// The result of [`export`].
#[derive(Debug, Clone)]
pub struct Export {
    /// The output.
    pub rendered: Rendered,
    /// How many provider tools it holds (groups count once with `grouped`).
    pub tools: usize,
    /// Commands left out because they need a human.
    pub skipped: Vec<FlatTool>,
    /// Command filters that matched no command.
    pub unmatched_filters: Vec<String>,
}

/// Compiles documents (sorted by tool name for stable output) into one export.
pub fn export(metas: &[Metadata], opts: &ExportOptions) -> Export {
    let catalog = Catalog::build(metas, &opts.flatten);
    let unmatched_filters = opts
        .flatten
        .commands
        .iter()
        .flatten()
        .filter(|f| {
            let one = FlattenOptions {
                include_interactive: true,
                commands: Some(vec![(*f).clone()]),
            };
            !catalog
                .tools()
                .iter()
                .chain(catalog.skipped())
                .any(|t| one.wants(&t.tool, &t.command))
        })
        .cloned()
        .collect();
    let (rendered, tools) = match opts.format {
        Format::Skill => {
            let skills: Vec<(String, String)> = metas
                .iter()
                .filter_map(|m| {
                    let name = m.tool_name().unwrap_or("tool");
                    let mine: Vec<FlatTool> = catalog
                        .tools()
                        .iter()
                        .filter(|t| t.tool == name)
                        .cloned()
                        .collect();
                    (!mine.is_empty()).then(|| (skill::skill_name(m), skill::render(m, &mine)))
                })
                .collect();
            let n = skills.len();
            (Rendered::Skills(skills), n)
        }
        Format::Prompt => {
            let items: Vec<(&Metadata, Vec<&FlatTool>)> = metas
                .iter()
                .map(|m| {
                    let name = m.tool_name().unwrap_or("tool");
                    (
                        m,
                        catalog
                            .tools()
                            .iter()
                            .filter(|t| t.tool == name)
                            .collect::<Vec<_>>(),
                    )
                })
                .filter(|(_, t)| !t.is_empty())
                .collect();
            let n = items.iter().map(|(_, t)| t.len()).sum();
            (Rendered::Text(prompt::render(&items)), n)
        }
        format => {
            let list = match opts.strategy {
                Strategy::Flat => formats::flat(catalog.tools()),
                Strategy::Grouped => formats::grouped(catalog.tools(), metas),
            };
            (Rendered::Json(render(&list, format)), list.len())
        }
    };
    Export {
        rendered,
        tools,
        skipped: catalog.skipped().to_vec(),
        unmatched_filters,
    }
}
