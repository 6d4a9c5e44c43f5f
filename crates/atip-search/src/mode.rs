//! Search mode: when a selection holds more tools than a model should see at once, offer
//! two tools instead — [`SEARCH_TOOL`] (a query → the best matching commands, with input
//! schemas for the top few) and [`CALL_TOOL`] (a command name + its arguments) — so the
//! model finds what it needs without every schema in its context.
//!
//! Shared by `atip chat` and the MCP server: the definitions are [`ExportTool`]s, so every
//! provider format renders them exactly as it renders any other tool. This module only
//! answers searches and unwraps calls; running the unwrapped call (validation, policy,
//! confirmation, audit) stays the caller's job, through the exec engine. Must not run
//! anything or print.

use super::SearchIndex;
use crate::compile::formats::{Annotations, ExportTool};
use crate::compile::{FlatTool, edit_distance};
use crate::model::Effects;
use crate::output::{Applicability, AtipError, ErrorCode, SuggestedAction, Suggestion};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

/// Name of the search tool.
pub const SEARCH_TOOL: &str = "atip_search";
/// Name of the call tool.
pub const CALL_TOOL: &str = "atip_call";
/// Above this many selected tools, search mode is used by default.
pub const DEFAULT_THRESHOLD: usize = 64;
/// Results of a search when the model does not say.
pub const DEFAULT_LIMIT: usize = 8;
/// Most results one search returns.
pub const MAX_LIMIT: usize = 25;
/// Results that carry their full input schema.
pub const SCHEMAS: usize = 3;

/// The selected tools, indexed for search, plus their names for unwrapping calls.
#[derive(Debug, Clone)]
pub struct SearchMode {
    tools: Vec<FlatTool>,
    index: SearchIndex,
    by_name: HashMap<String, usize>,
}

impl SearchMode {
    /// Indexes the selection (in the order given: ties rank in that order).
    pub fn new(tools: Vec<FlatTool>) -> SearchMode {
        SearchMode::with_facts(tools, &HashMap::new())
    }

    /// Indexes the selection with what the machine says of its programs
    /// ([`SearchIndex::build_with`]): the ranking of `atip search`.
    pub fn with_facts(tools: Vec<FlatTool>, facts: &HashMap<String, super::Facts>) -> SearchMode {
        let index = SearchIndex::build_with(&tools, facts);
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name.clone(), i))
            .collect();
        SearchMode {
            tools,
            index,
            by_name,
        }
    }

    /// Number of tools reachable through the call tool.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the selection is empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether `name` is one of the selected tools.
    pub fn offers(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The two tool definitions, in the order search, call.
    pub fn export_tools(&self) -> Vec<ExportTool> {
        let search_schema = json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What you want to do, in a few words, e.g. \"list open pull requests\""},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("Most results (default {DEFAULT_LIMIT})")}
            },
            "required": ["query"],
            "additionalProperties": false
        });
        let call_schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": format!("Tool name exactly as {SEARCH_TOOL} returned it")},
                "arguments": {"type": "object", "description": "The tool's arguments, matching the inputSchema the search returned"}
            },
            "required": ["name", "arguments"],
            "additionalProperties": false
        });
        let read_only = Effects {
            destructive: Some(false),
            filesystem: Some(crate::model::FilesystemEffects {
                write: Some(false),
                delete: Some(false),
                ..Default::default()
            }),
            network: Some(false),
            idempotent: Some(true),
            ..Effects::default()
        };
        vec![
            ExportTool {
                name: SEARCH_TOOL.into(),
                title: "Search tools".into(),
                description: format!(
                    "Search the {} available command-line tools. Returns the best matches: name, description (with safety notes) and, for the top {SCHEMAS}, the input schema. Then run one with {CALL_TOOL}.",
                    self.tools.len()
                ),
                input_schema: search_schema,
                annotations: Annotations::from_effects(&read_only),
                actions: Vec::new(),
            },
            ExportTool {
                name: CALL_TOOL.into(),
                title: "Call a tool".into(),
                description: format!(
                    "Run one tool found with {SEARCH_TOOL}, by name, with arguments matching its input schema. Calls are validated and checked against policy; destructive ones may need the user's confirmation."
                ),
                input_schema: call_schema,
                // Whatever the called tool does: unknown, so never claimed harmless.
                annotations: Annotations::from_effects(&Effects::default()),
                actions: Vec::new(),
            },
        ]
    }

    /// Answers a search call: `{query, limit?}` → `{query, results: [{name, title,
    /// description, inputSchema?}], total}`, best first, ranked by this selection's own
    /// index. A caller that holds the engine's search ranks through that instead
    /// ([`SearchMode::query`], then [`SearchMode::answer`]).
    pub fn search(&self, args: &Map<String, Value>) -> Result<Value, AtipError> {
        let (query, limit) = self.query(args)?;
        let found: Vec<&FlatTool> = self
            .index
            .search(query, limit, false)
            .into_iter()
            .map(|hit| &self.tools[hit.doc])
            .collect();
        Ok(self.answer(query, &found))
    }

    /// The query and result limit of a search call, checked.
    pub fn query<'a>(&self, args: &'a Map<String, Value>) -> Result<(&'a str, usize), AtipError> {
        let query = match args.get("query") {
            Some(Value::String(q)) if !q.trim().is_empty() => q.trim(),
            _ => {
                return Err(invalid(
                    SEARCH_TOOL,
                    "\"query\" must be a non-empty string",
                    "pass {\"query\": \"what you want to do\"}",
                ));
            }
        };
        let limit = match args.get("limit") {
            None | Some(Value::Null) => DEFAULT_LIMIT,
            Some(v) => match v.as_f64() {
                Some(n) if n >= 1.0 && n.fract() == 0.0 => (n as usize).min(MAX_LIMIT),
                _ => {
                    return Err(invalid(
                        SEARCH_TOOL,
                        "\"limit\" must be a positive integer",
                        "leave \"limit\" out, or pass a whole number from 1",
                    ));
                }
            },
        };
        if let Some(k) = args.keys().find(|k| *k != "query" && *k != "limit") {
            let shown: String = k.chars().take(64).collect();
            return Err(invalid(
                SEARCH_TOOL,
                &format!("unknown property {shown:?}"),
                "the properties are \"query\" and \"limit\"",
            ));
        }
        Ok((query, limit))
    }

    /// The search call's answer for `found`, best first: the first [`SCHEMAS`] with their
    /// input schemas.
    pub fn answer(&self, query: &str, found: &[&FlatTool]) -> Value {
        let results: Vec<Value> = found
            .iter()
            .enumerate()
            .map(|(rank, t)| {
                let mut r = json!({"name": t.name, "title": t.title, "description": t.description});
                if rank < SCHEMAS {
                    r["inputSchema"] = t.input_schema.clone();
                }
                r
            })
            .collect();
        let mut out = json!({"query": query, "results": results, "total": self.tools.len()});
        if out["results"].as_array().is_some_and(Vec::is_empty) {
            out["hint"] =
                "nothing matched; try other words (a verb and an object work best)".into();
        }
        out
    }

    /// Unwraps a call-tool call: `{name, arguments}` → the tool's name and its arguments.
    /// `arguments` may also be a JSON object as text (some models double-encode); a name
    /// outside the selection is `tool_not_found` with the closest names.
    pub fn unwrap_call(&self, args: &Map<String, Value>) -> Result<(String, Value), AtipError> {
        let name = match args.get("name") {
            Some(Value::String(n)) => n.as_str(),
            _ => {
                return Err(invalid(
                    CALL_TOOL,
                    "\"name\" must be a string",
                    &format!(
                        "pass {{\"name\": \"<a name from {SEARCH_TOOL}>\", \"arguments\": {{…}}}}"
                    ),
                ));
            }
        };
        if let Some(k) = args.keys().find(|k| *k != "name" && *k != "arguments") {
            let shown: String = k.chars().take(64).collect();
            return Err(invalid(
                CALL_TOOL,
                &format!("unknown property {shown:?}"),
                "the properties are \"name\" and \"arguments\"",
            ));
        }
        if !self.offers(name) {
            return Err(self.unknown(name));
        }
        let arguments = match args.get("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(Value::String(s)) if s.trim().is_empty() => Value::Object(Map::new()),
            Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                Ok(v @ Value::Object(_)) => v,
                _ => {
                    return Err(invalid(
                        CALL_TOOL,
                        "\"arguments\" must be a JSON object",
                        "pass the arguments as an object, not as text",
                    ));
                }
            },
            Some(v) => v.clone(),
        };
        Ok((name.to_string(), arguments))
    }

    /// `tool_not_found` for a name outside the selection, with up to five close names.
    pub fn unknown(&self, name: &str) -> AtipError {
        unknown_tool(&self.tools, name, true)
    }
}

/// `tool_not_found` for a name that is not among `offered`, with up to five close names;
/// `searchable` says the search tool is there to find the right one.
pub fn unknown_tool(offered: &[FlatTool], name: &str, searchable: bool) -> AtipError {
    let limit = (name.chars().count() / 3).max(2);
    let mut close: Vec<(usize, &str)> = offered
        .iter()
        .map(|t| (edit_distance(name, &t.name), t.name.as_str()))
        .filter(|(d, _)| *d <= limit)
        .collect();
    close.sort();
    let close: Vec<&str> = close.into_iter().take(5).map(|(_, n)| n).collect();
    let shown: String = name.chars().take(80).collect();
    let hint = match (close.is_empty(), searchable) {
        (true, true) => format!("find the tool's name with {SEARCH_TOOL} first"),
        (true, false) => "call only the tools you were given".to_string(),
        (false, true) => format!(
            "did you mean: {}? (or search with {SEARCH_TOOL})",
            close.join(", ")
        ),
        (false, false) => format!("did you mean: {}?", close.join(", ")),
    };
    let suggestion = match close.first() {
        Some(best) => Suggestion::new(SuggestedAction::UseDifferentTool, hint.clone())
            .example(*best, Applicability::MaybeIncorrect),
        None if searchable => Suggestion::new(SuggestedAction::UseDifferentTool, hint.clone())
            .example(SEARCH_TOOL, Applicability::MachineApplicable),
        None => Suggestion::new(SuggestedAction::UseDifferentTool, hint.clone()),
    };
    AtipError::new(
        ErrorCode::ToolNotFound,
        format!("no tool named {shown:?} is offered in this session"),
    )
    .hint(hint)
    .suggest(suggestion)
    .details(json!({"closest": close}))
}

/// `args_invalid` for the search or call tool, with the shape it takes as an example.
fn invalid(tool: &str, what: &str, hint: &str) -> AtipError {
    let example = if tool == SEARCH_TOOL {
        json!({"query": "<what you want to do>"})
    } else {
        json!({"name": "<a name from atip_search>", "arguments": {}})
    };
    AtipError::new(
        ErrorCode::ArgsInvalid,
        format!("arguments of {tool} are invalid: {what}"),
    )
    .hint(hint)
    .suggest(
        Suggestion::new(SuggestedAction::RetryWithModifiedInput, hint)
            .example(example, Applicability::HasPlaceholders),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::formats::{self, Format};
    use crate::compile::{Catalog, FlattenOptions};
    use crate::model::Metadata;

    fn mode() -> SearchMode {
        let gh = Metadata::from_value(json!({"atip": "0.4", "name": "gh", "version": "1", "description": "GitHub CLI",
            "commands": {"pr": {"description": "Work with pull requests", "commands": {
                "create": {"description": "Create a pull request",
                           "options": [{"name": "title", "flags": ["--title"], "type": "string", "description": "Title"}]},
                "list": {"description": "List pull requests in a repository"}}}}}))
        .unwrap();
        let c = Catalog::build(&[gh], &FlattenOptions::default());
        SearchMode::new(c.tools().to_vec())
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn search_ranks_and_gives_schemas_to_the_top_results() {
        let m = mode();
        let r = m
            .search(&obj(json!({"query": "create pull request"})))
            .unwrap();
        assert_eq!(r["results"][0]["name"], "gh_pr_create");
        assert_eq!(
            r["results"][0]["inputSchema"]["properties"]["title"]["type"],
            "string"
        );
        assert_eq!(r["total"], 2);
        let one = m
            .search(&obj(json!({"query": "pull", "limit": 1})))
            .unwrap();
        assert_eq!(one["results"].as_array().unwrap().len(), 1);
        let none = m.search(&obj(json!({"query": "zzzzzz"}))).unwrap();
        assert!(none["hint"].is_string());
        for bad in [
            json!({}),
            json!({"query": ""}),
            json!({"query": "x", "limit": 0}),
            json!({"query": "x", "limit": "3"}),
            json!({"query": "x", "extra": 1}),
        ] {
            let e = m.search(&obj(bad.clone())).unwrap_err();
            assert_eq!(e.code, "args_invalid", "{bad}");
            assert!(e.hint.is_some());
        }
    }

    #[test]
    fn unwrap_checks_the_name_against_the_selection() {
        let m = mode();
        let (n, a) = m
            .unwrap_call(&obj(
                json!({"name": "gh_pr_create", "arguments": {"title": "x"}}),
            ))
            .unwrap();
        assert_eq!((n.as_str(), a), ("gh_pr_create", json!({"title": "x"})));
        let (_, a) = m
            .unwrap_call(&obj(
                json!({"name": "gh_pr_list", "arguments": "{\"a\":1}"}),
            ))
            .unwrap();
        assert_eq!(a, json!({"a": 1}));
        let e = m
            .unwrap_call(&obj(json!({"name": "gh_pr_creat", "arguments": {}})))
            .unwrap_err();
        assert_eq!(e.code, "tool_not_found");
        assert_eq!(e.details["closest"][0], "gh_pr_create");
        assert_eq!(
            e.suggestion.as_ref().unwrap().example,
            Some(json!("gh_pr_create"))
        );
        assert_eq!(
            m.unwrap_call(&obj(json!({"arguments": {}})))
                .unwrap_err()
                .code,
            "args_invalid"
        );
        assert_eq!(
            m.unwrap_call(&obj(json!({"name": "gh_pr_list", "arguments": "[1]"})))
                .unwrap_err()
                .code,
            "args_invalid"
        );
    }

    #[test]
    fn definitions_render_in_every_provider_format() {
        let m = mode();
        let tools = m.export_tools();
        let openai = formats::render(&tools, Format::Openai);
        assert_eq!(openai[0]["function"]["name"], SEARCH_TOOL);
        assert_eq!(openai[1]["function"]["name"], CALL_TOOL);
        let gemini = formats::render(&tools, Format::Gemini);
        assert_eq!(
            gemini[0]["functionDeclarations"][1]["parameters"]["properties"]["arguments"]["type"],
            "OBJECT"
        );
        assert!(tools[0].annotations.read_only_hint);
        assert!(tools[1].annotations.destructive_hint);
    }
}
