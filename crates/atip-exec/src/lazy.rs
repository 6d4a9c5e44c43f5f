//! The engine's tools read from the compiled catalog one at a time, when a call first
//! names them: at registry scale an MCP session or a batch of calls needs a handful of
//! tens of thousands of commands, so start-up reads no metadata document at all.
//!
//! Used only when the catalog names every command exactly as the JSON path would for
//! the engine's selection (see [`Lazy::new`]); otherwise the engine reads and flattens
//! the documents as before. A tool's document is still read and hash-checked before its
//! first run (its facts — trust, authentication variables — come from it), so an edited
//! document is refused here exactly as on the JSON path.

use super::ToolInfo;
use crate::catalog::Compiled;
use crate::compile::FlatTool;
use crate::dirs::Dirs;
use crate::output::AtipError;
use crate::registry::{Index, Source};
use std::collections::HashMap;
use std::sync::OnceLock;

/// Tools and facts from the catalog, each read on first use and kept.
#[derive(Debug)]
pub(super) struct Lazy {
    compiled: Compiled,
    data: Dirs,
    /// Boxed: a search reads a handful of the tens of thousands of rows, and an unboxed
    /// slot per row (~0.5 KB each) made start-up touch ~10 MB of memory at 20,000 rows.
    tools: Vec<OnceLock<Box<Result<FlatTool, AtipError>>>>,
    infos: Vec<OnceLock<Result<ToolInfo, AtipError>>>,
    /// Tool name → its document.
    by_tool: HashMap<String, usize>,
    /// Per document: the engine's selection includes it.
    selected: Vec<bool>,
    /// The catalog's search index and its rows, read on the first search.
    index: OnceLock<Result<(Vec<u32>, crate::search::SearchIndex), AtipError>>,
}

impl Lazy {
    /// The lazy view of `compiled`, or `None` when the JSON path would name or pick
    /// tools differently: a document that could not be read when compiled (the JSON
    /// path warns and leaves it out), two documents naming one tool, or a command whose
    /// name was made unique across documents (`_2`: leaving inferred documents out
    /// could change it).
    pub fn new(dirs: &Dirs, compiled: Compiled, include_inferred: bool) -> Option<Lazy> {
        let docs = compiled.docs();
        let mut by_tool = HashMap::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            if d.error.is_some() || by_tool.insert(d.tool.clone(), i).is_some() {
                return None;
            }
        }
        if compiled.rows().iter().any(|r| r.renamed) {
            return None;
        }
        let selected = docs
            .iter()
            .map(|d| include_inferred || d.source != Source::Inferred)
            .collect();
        let rows = compiled.rows().len();
        Some(Lazy {
            tools: (0..rows).map(|_| OnceLock::new()).collect(),
            infos: (0..docs.len()).map(|_| OnceLock::new()).collect(),
            by_tool,
            selected,
            index: OnceLock::new(),
            data: dirs.clone(),
            compiled,
        })
    }

    fn row_selected(&self, row: usize) -> bool {
        self.selected[self.compiled.rows()[row].doc.to_native() as usize]
    }

    fn at(&self, row: usize) -> Result<&FlatTool, AtipError> {
        self.tools[row]
            .get_or_init(|| Box::new(self.compiled.tool(row)))
            .as_ref()
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The selected tool named `name`: `None` when there is none, an error when its
    /// record cannot be read.
    pub(super) fn get(&self, name: &str) -> Option<Result<&FlatTool, AtipError>> {
        let row = self.compiled.find(name)?;
        self.row_selected(row).then(|| self.at(row))
    }

    /// Whether the selection has a tool named `name`, without reading it.
    pub(super) fn has(&self, name: &str) -> bool {
        self.compiled
            .find(name)
            .is_some_and(|r| self.row_selected(r))
    }

    /// Every selected tool (those needing a human only when `interactive`), read now.
    /// Records that cannot be read are left out.
    pub(super) fn all(&self, interactive: bool) -> Vec<&FlatTool> {
        (0..self.tools.len())
            .filter(|&r| {
                self.row_selected(r) && (interactive || !self.compiled.rows()[r].needs_human)
            })
            .filter_map(|r| self.at(r).ok())
            .collect()
    }

    /// How many selected tools there are (those needing a human only when
    /// `interactive`), without reading any.
    pub(super) fn count(&self, interactive: bool) -> usize {
        self.compiled
            .rows()
            .iter()
            .filter(|r| {
                self.selected[r.doc.to_native() as usize] && (interactive || !r.needs_human)
            })
            .count()
    }

    /// The compiled catalog's warnings (documents skipped when it was compiled).
    pub(super) fn compiled_warnings(&self) -> Vec<String> {
        self.compiled.warnings()
    }

    /// Names of the selected tools, for closest-name suggestions.
    pub(super) fn names(&self) -> impl Iterator<Item = &str> {
        self.compiled
            .rows()
            .iter()
            .filter(|r| self.selected[r.doc.to_native() as usize])
            .map(|r| r.name.as_str())
    }

    /// The facts of tool `tool` (its document read and hash-checked on first use).
    pub(super) fn info(&self, tool: &str) -> Option<Result<&ToolInfo, AtipError>> {
        let &d = self.by_tool.get(tool)?;
        if !self.selected[d] {
            return None;
        }
        Some(
            self.infos[d]
                .get_or_init(|| {
                    let doc = &self.compiled.docs()[d];
                    let entry = doc.entry()?;
                    let mut meta = Index::read_metadata(&self.data, &entry).map_err(|e| {
                        let mut e = e.to_atip();
                        e.message = format!("tool {}: {}", doc.name, e.message);
                        e
                    })?;
                    if meta.tool_name().is_none() {
                        meta.name = Some(doc.name.clone());
                    }
                    Ok(ToolInfo::of(&meta, &entry))
                })
                .as_ref()
                .map_err(Clone::clone),
        )
    }

    /// The selected tools that need no human, ranked for `query` by the catalog's
    /// search index (built over every readable document, so an unselected document's
    /// terms count in the weights), best first; `keep` drops tools the caller does not
    /// serve, and the next ones take their places. At most `limit`.
    pub(super) fn search(
        &self,
        query: &str,
        limit: usize,
        explain: bool,
        mut keep: impl FnMut(&FlatTool) -> bool,
    ) -> Result<Vec<(&FlatTool, crate::search::Hit)>, AtipError> {
        let (rows, index) = self
            .index
            .get_or_init(|| self.compiled.search_index())
            .as_ref()
            .map_err(Clone::clone)?;
        let mut failed = None;
        let hits = index
            .search_kept(query, limit, explain, |doc| {
                let row = rows[doc] as usize;
                if failed.is_some() || !self.row_selected(row) {
                    return false;
                }
                match self.at(row) {
                    Ok(tool) => keep(tool),
                    Err(e) => {
                        failed = Some(e);
                        false
                    }
                }
            })
            .map_err(|e| self.compiled.index_damaged(&e))?;
        if let Some(e) = failed {
            return Err(e);
        }
        hits.into_iter()
            .map(|h| Ok((self.at(rows[h.doc] as usize)?, h)))
            .collect()
    }
}
