//! The server at registry scale: when more tools are selected than a threshold, `atip
//! mcp serve` lists a search tool and a call tool (plus any pinned tools) instead of
//! every tool, so a model's context holds three definitions rather than thousands.
//!
//! `atip_search_tools` ranks the served commands (the same index as `atip search`) and
//! returns names, descriptions and, for the best few, input schemas. `atip_call_tool`
//! takes a name and its arguments and goes through exactly the path a direct call
//! takes (validation, policy, confirmation, audit). Also owns the `outputSchema` atip
//! declares for served tools: the result envelope every call returns. Must not run
//! anything itself.

use crate::compile::FlatTool;
use crate::exec::Engine;
use crate::output::AtipError;
use crate::search::SearchIndex;
use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{Map, Value, json};
use std::sync::{Arc, OnceLock};

/// Tools listed one by one up to this many; above it, search mode.
pub const DEFAULT_THRESHOLD: usize = 64;
/// Name of the search tool.
pub const SEARCH_TOOL: &str = "atip_search_tools";
/// Name of the call tool.
pub const CALL_TOOL: &str = "atip_call_tool";
/// Most results one search returns.
const MAX_LIMIT: u64 = 25;

/// How the server lists tools at scale.
#[derive(Debug, Clone, Default)]
pub struct Scale {
    /// Search mode when more tools than this are served.
    pub threshold: usize,
    /// Flattened names listed in search mode too.
    pub pinned: Vec<String>,
    /// The search tool's defaults (`toolSearch` in mcp.json).
    pub defaults: SearchDefaults,
    /// What the machine says of the registered programs (`catalog::machine_facts`), for
    /// a served set indexed apart from the compiled catalog (proxied MCP tools,
    /// `--tools`, `--allow-interactive`): it ranks as `atip search` does.
    pub facts: std::collections::HashMap<String, crate::search::Facts>,
}

/// Results per search, and how many of them carry their input schema, when the call
/// does not say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchDefaults {
    /// Most results (`toolSearch.defaultLimit`, else 5).
    pub limit: usize,
    /// Results with a schema (`toolSearch.defaultSchemas`, else 3).
    pub schemas: usize,
}

impl Default for SearchDefaults {
    fn default() -> Self {
        SearchDefaults {
            limit: 5,
            schemas: 3,
        }
    }
}

fn object(v: Value) -> Arc<Map<String, Value>> {
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

/// The search tool's definition.
pub(crate) fn search_tool(total: usize, d: SearchDefaults) -> Tool {
    Tool::new(
        SEARCH_TOOL,
        format!(
            "Find the right tool among {total} command-line tools this server can run. \
             Describe the task in a few words; the answer lists matching tool names with \
             descriptions, and input schemas for the best matches. Then run one with {CALL_TOOL}. [READ-ONLY]"
        ),
        object(json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What you want to do, e.g. \"list pull requests\""},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": format!("Most results (default {})", d.limit)},
                "schemas": {"type": "integer", "minimum": 0, "maximum": MAX_LIMIT, "description": format!("How many of the best results include their input schema (default {})", d.schemas)}
            },
            "required": ["query"],
            "additionalProperties": false
        })),
    )
    .with_title("Search tools")
    .with_annotations(
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false),
    )
}

/// The call tool's definition.
pub(crate) fn call_tool() -> Tool {
    Tool::new(
        CALL_TOOL,
        format!(
            "Run one tool found with {SEARCH_TOOL}: give its exact name and its arguments \
             (an object matching its input schema). The call is checked and may need the \
             user's confirmation, exactly as if the tool were called directly."
        ),
        object(json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1, "description": "Tool name from the search results"},
                "arguments": {"type": "object", "description": "Arguments for that tool"}
            },
            "required": ["name"],
            "additionalProperties": false
        })),
    )
    .with_title("Call a tool")
    .with_raw_output_schema(envelope_schema())
    .with_annotations(
        ToolAnnotations::new()
            .read_only(false)
            .destructive(true)
            .idempotent(false)
            .open_world(true),
    )
}

/// The schema of the result envelope every served call returns in `structuredContent`.
pub(crate) fn envelope_schema() -> Arc<Map<String, Value>> {
    static SCHEMA: OnceLock<Arc<Map<String, Value>>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            object(json!({
                "type": "object",
                "properties": {
                    "status": {"type": "string", "enum": ["ok", "error"]},
                    "data": {
                        "type": "object",
                        "properties": {
                            "exitCode": {"type": ["integer", "null"]},
                            "signal": {"type": "integer"},
                            "stdout": {"type": "string"},
                            "stderr": {"type": "string"},
                            "json": {}
                        },
                        "required": ["exitCode", "stdout", "stderr"]
                    },
                    "error": {
                        "type": "object",
                        "properties": {
                            "code": {"type": "string"},
                            "category": {"type": "string"},
                            "message": {"type": "string"},
                            "hint": {"type": "string"},
                            "retryable": {"type": "boolean"},
                            "details": {}
                        },
                        "required": ["code", "category", "message", "retryable"]
                    },
                    "meta": {"type": "object"}
                },
                "required": ["status"]
            }))
        })
        .clone()
}

/// The served tools, searchable: the index is built on the first search, so start-up
/// and listing never pay for it.
#[derive(Debug, Default)]
pub struct Finder {
    ranked: Ranked,
    defaults: SearchDefaults,
}

/// What a search ranks.
#[derive(Debug)]
enum Ranked {
    /// The served tools, indexed here.
    Tools {
        tools: Vec<FlatTool>,
        index: OnceLock<SearchIndex>,
        /// What the machine says of the programs, by name (`catalog::machine_facts`).
        facts: std::collections::HashMap<String, crate::search::Facts>,
    },
    /// An engine that reads tools from the compiled catalog as they are named: its
    /// index is the catalog's, and only the hits are read.
    Engine { engine: Arc<Engine>, total: usize },
}

impl Default for Ranked {
    fn default() -> Self {
        Ranked::Tools {
            tools: Vec::new(),
            index: OnceLock::new(),
            facts: Default::default(),
        }
    }
}

/// Why a search-tool call gave no results.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SearchError {
    /// No query.
    #[error("\"query\" must be a non-empty string")]
    Query,
    /// `limit` or `schemas` out of range.
    #[error("\"{0}\" must be a whole number from 0 to {MAX_LIMIT}")]
    Number(&'static str),
    /// The compiled catalog could not be searched.
    #[error(transparent)]
    Catalog(AtipError),
}

impl From<SearchError> for AtipError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Catalog(e) => e,
            _ => AtipError::new(crate::output::ErrorCode::ArgsInvalid, e.to_string()),
        }
    }
}

impl Finder {
    /// A finder over the served tools.
    pub fn new(tools: Vec<FlatTool>, defaults: SearchDefaults) -> Finder {
        Finder::with_facts(tools, Default::default(), defaults)
    }

    /// A finder over the served tools that ranks them with what the machine says of
    /// their programs ([`SearchIndex::build_with`]), as `atip search` does.
    pub fn with_facts(
        tools: Vec<FlatTool>,
        facts: std::collections::HashMap<String, crate::search::Facts>,
        defaults: SearchDefaults,
    ) -> Finder {
        Finder {
            ranked: Ranked::Tools {
                tools,
                index: OnceLock::new(),
                facts,
            },
            defaults,
        }
    }

    /// A finder over a lazy engine's tools (see [`Engine::search_compiled`]): `total`
    /// of them are served.
    pub fn over_engine(engine: Arc<Engine>, total: usize, defaults: SearchDefaults) -> Finder {
        Finder {
            ranked: Ranked::Engine { engine, total },
            defaults,
        }
    }

    /// Runs a search-tool call: `{query, limit?, schemas?}` → `{query, total, results}`.
    /// A bad argument is `args_invalid`; a catalog that cannot be searched keeps its own
    /// code.
    pub(crate) fn search(&self, args: &Map<String, Value>) -> Result<Value, SearchError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|q| !q.is_empty())
            .ok_or(SearchError::Query)?;
        let num = |k: &'static str, d: u64| -> Result<usize, SearchError> {
            match args.get(k) {
                None => Ok(d as usize),
                Some(v) => v
                    .as_u64()
                    .filter(|n| *n <= MAX_LIMIT)
                    .map(|n| n as usize)
                    .ok_or(SearchError::Number(k)),
            }
        };
        let limit = num("limit", self.defaults.limit.min(MAX_LIMIT as usize) as u64)?.max(1);
        let schemas = num(
            "schemas",
            self.defaults.schemas.min(MAX_LIMIT as usize) as u64,
        )?;
        let (hits, total): (Vec<crate::search::Found<'_>>, usize) = match &self.ranked {
            Ranked::Tools {
                tools,
                index,
                facts,
            } => {
                let index = index.get_or_init(|| SearchIndex::build_with(tools, facts));
                let hits = index.search(query, limit, false);
                (
                    hits.into_iter()
                        .map(|h| (&tools[h.doc], h.score, h.aliases))
                        .collect(),
                    tools.len(),
                )
            }
            Ranked::Engine { engine, total } => (
                engine
                    .search_compiled(query, limit)
                    .unwrap_or_else(|| Ok(Vec::new()))
                    .map_err(SearchError::Catalog)?,
                *total,
            ),
        };
        let results: Vec<Value> = hits
            .iter()
            .enumerate()
            .map(|(rank, (t, score, aliases))| {
                let mut r = json!({
                    "name": t.name,
                    "title": t.title,
                    "description": t.description,
                    "score": (f64::from(*score) * 1000.0).round() / 1000.0,
                });
                if !aliases.is_empty() {
                    r["aliases"] = json!(aliases);
                }
                if rank < schemas {
                    // As `atip search` shows it: a long option list cut to what the
                    // query needs, with a count of the rest.
                    let (small, omitted) = crate::search::compact(t, query);
                    r["inputSchema"] = small.input_schema.clone();
                    if omitted > 0 {
                        r["omittedOptions"] = json!(omitted);
                    }
                }
                r
            })
            .collect();
        Ok(json!({"query": query, "total": total, "results": results}))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_tools_have_object_schemas_and_honest_annotations() {
        let s = search_tool(10, SearchDefaults::default());
        assert_eq!(s.input_schema["type"], "object");
        assert_eq!(s.annotations.as_ref().unwrap().read_only_hint, Some(true));
        let c = call_tool();
        assert_eq!(c.annotations.as_ref().unwrap().read_only_hint, Some(false));
        assert!(c.output_schema.is_some());
    }

    #[test]
    fn defaults_come_from_tool_search_settings() {
        let tool = |n: &str| -> Tool {
            serde_json::from_value(json!({"name": n, "description": format!("Echo {n} back"),
                "inputSchema": {"type": "object"}}))
            .unwrap()
        };
        let flat = ["a", "b", "c"]
            .iter()
            .map(|n| crate::tools::to_flat("s", &tool(n), true))
            .collect();
        let f = Finder::new(
            flat,
            SearchDefaults {
                limit: 2,
                schemas: 1,
            },
        );
        let q: Map<String, Value> = serde_json::from_value(json!({"query": "echo back"})).unwrap();
        let r = f.search(&q).unwrap();
        let results = r["results"].as_array().unwrap();
        assert_eq!(results.len(), 2, "{r}");
        assert!(results[0].get("inputSchema").is_some());
        assert!(results[1].get("inputSchema").is_none());
        let q: Map<String, Value> =
            serde_json::from_value(json!({"query": "echo back", "limit": 3, "schemas": 0}))
                .unwrap();
        let r = f.search(&q).unwrap();
        assert_eq!(r["results"].as_array().unwrap().len(), 3);
        let d = search_tool(
            3,
            SearchDefaults {
                limit: 2,
                schemas: 1,
            },
        );
        assert!(
            d.input_schema["properties"]["limit"]["description"]
                .as_str()
                .unwrap()
                .contains("default 2")
        );
    }

    #[test]
    fn search_arguments_are_checked() {
        let f = Finder::new(Vec::new(), SearchDefaults::default());
        assert!(f.search(&Map::new()).is_err());
        let bad: Map<String, Value> =
            serde_json::from_value(json!({"query": "x", "limit": 1000})).unwrap();
        assert!(f.search(&bad).unwrap_err().to_string().contains("limit"));
        let ok: Map<String, Value> = serde_json::from_value(json!({"query": "x"})).unwrap();
        assert_eq!(f.search(&ok).unwrap()["results"], json!([]));
    }
}
