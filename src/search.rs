//! Ranked search over flattened commands: which few tools does an agent need for a task?
//!
//! Owns the index (BM25 over weighted fields: tool name, command path, description,
//! parameter names and descriptions), query correction (exact, prefix and edit-distance
//! matches, the abbreviation table in `text`), name boosts and the capped result report.
//! Must not read files; callers hand it a [`Catalog`].

pub mod mode;
#[cfg(test)]
mod quality;
mod text;

pub use text::ABBREVIATIONS;

use crate::archive::Owned;
use crate::compile::formats::{self, Format};
use crate::compile::{Catalog, FlatTool, ParamOrigin, edit_distance};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

const K1: f32 = 2.0;
const B: f32 = 0.75;
const W_NAME: f32 = 3.0;
const W_PATH: f32 = 6.0;
const W_DESCRIPTION: f32 = 1.0;
const W_ABOUT: f32 = 0.75;
const W_PARAM_NAME: f32 = 0.5;
const W_PARAM_DESCRIPTION: f32 = 0.4;
const W_VARIANT: f32 = 0.9;
const W_SYNONYM: f32 = 0.75;
const BOOST_EXACT: f32 = 8.0;
const BOOST_PREFIX: f32 = 3.0;
const BOOST_ALL_IN_NAME: f32 = 2.0;

/// A fast non-cryptographic hasher for index terms (the registry is local and trusted,
/// so hash flooding is not a concern).
#[derive(Debug, Default, Clone, Copy)]
struct Fx(u64);

impl std::hash::Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut v = 0u64;
            for (i, b) in chunk.iter().enumerate() {
                v |= u64::from(*b) << (i * 8);
            }
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn write_u8(&mut self, b: u8) {
        self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type FxBuild = std::hash::BuildHasherDefault<Fx>;

/// An inverted index over a catalog's tools (by position in `Catalog::tools`), held as an
/// rkyv archive ([`crate::archive`]): the compiled catalog stores its bytes and a reader
/// searches them in place, without decoding the vocabulary and postings first.
#[derive(Clone)]
pub struct SearchIndex {
    tables: Owned<Tables>,
    /// Terms by root (`text::root`), built on the first query that needs it.
    roots: OnceLock<HashMap<String, Vec<u32>, FxBuild>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SearchIndex({} tools, {:?})", self.len(), self.tables)
    }
}

/// What the index holds.
#[derive(Debug, Default, rkyv::Archive, rkyv::Serialize)]
struct Tables {
    /// Terms by id.
    vocab: Vec<String>,
    /// Term ids in term order: a word's id by binary search.
    sorted: Vec<u32>,
    /// Per term id, the tools that have it, in tool order.
    postings: Vec<Vec<Posting>>,
    doc_len: Vec<f32>,
    avg_len: f32,
    title_words: Vec<Vec<String>>,
    /// Title words joined by one space, for the exact and prefix boosts.
    titles: Vec<String>,
}

/// One tool that has a term, and the term's weighted frequency in it.
#[derive(Debug, Clone, Copy, rkyv::Archive, rkyv::Serialize)]
struct Posting {
    doc: u32,
    tf: f32,
}

/// The index while it is built: terms are interned through a map the archive does not keep.
#[derive(Default)]
struct Builder {
    ids: HashMap<String, u32, FxBuild>,
    tables: Tables,
}

impl Builder {
    fn intern(&mut self, term: String) -> u32 {
        if let Some(&id) = self.ids.get(&term) {
            return id;
        }
        let id = self.tables.vocab.len() as u32;
        self.ids.insert(term.clone(), id);
        self.tables.vocab.push(term);
        self.tables.postings.push(Vec::new());
        id
    }
}

/// Adds the terms of `text` with weight `w` to `pairs`, tokenizing each distinct text once.
fn add_text<'t>(
    ix: &mut Builder,
    cache: &mut HashMap<&'t str, Vec<u32>, FxBuild>,
    pairs: &mut Vec<(u32, f32)>,
    text: &'t str,
    w: f32,
) {
    let ids = cache.entry(text).or_insert_with(|| {
        text::terms(text)
            .into_iter()
            .map(|term| ix.intern(term))
            .collect()
    });
    pairs.extend(ids.iter().map(|&id| (id, w)));
}

/// A [`SearchIndex`] fed tools in catalog order, a slice at a time: the catalog compile
/// indexes each batch of documents on a thread of its own while it writes the next
/// batch's records, and drops the batch once indexed. Tools are numbered in the order
/// they arrive, so the index is the one [`SearchIndex::build`] makes of them all at once.
#[derive(Default)]
pub struct IndexBuilder {
    ix: Builder,
    pairs: Vec<(u32, f32)>,
}

impl IndexBuilder {
    /// Indexes `tools` after those added before. Texts repeat within a document (global
    /// and parent options): each distinct text of the slice is tokenized once.
    pub fn add(&mut self, tools: &[FlatTool]) {
        let ix = &mut self.ix;
        let pairs = &mut self.pairs;
        let mut cache: HashMap<&str, Vec<u32>, FxBuild> = HashMap::default();
        for t in tools {
            let doc = ix.tables.doc_len.len() as u32;
            pairs.clear();
            // A tool without subcommands is run by its name: the name is its command too.
            let bare = t.command.iter().all(|c| c.is_empty());
            let w_name = if bare { W_NAME + W_PATH } else { W_NAME };
            add_text(ix, &mut cache, pairs, &t.tool, w_name);
            let path = t.command.join(" ");
            for term in text::terms(&path) {
                let id = ix.intern(term);
                pairs.push((id, W_PATH));
            }
            add_text(ix, &mut cache, pairs, &t.summary, W_DESCRIPTION);
            add_text(ix, &mut cache, pairs, &t.about, W_ABOUT);
            // Length normalisation counts the command's own text only: a command with many
            // options is not a longer answer to a task than one with few.
            let len: f32 = pairs.iter().map(|(_, w)| w).sum();
            for p in &t.params {
                let name = match &p.origin {
                    ParamOrigin::Argument { name, .. } | ParamOrigin::Option { name, .. } => name,
                };
                add_text(ix, &mut cache, pairs, name, W_PARAM_NAME);
                add_text(ix, &mut cache, pairs, &p.description, W_PARAM_DESCRIPTION);
            }
            pairs.sort_unstable_by_key(|(id, _)| *id);
            let mut i = 0;
            while i < pairs.len() {
                let id = pairs[i].0;
                let mut f = 0.0;
                while i < pairs.len() && pairs[i].0 == id {
                    f += pairs[i].1;
                    i += 1;
                }
                ix.tables.postings[id as usize].push(Posting { doc, tf: f });
            }
            ix.tables.doc_len.push(len);
            ix.tables.title_words.push(text::terms(&t.title));
            ix.tables.titles.push(text::words(&t.title).join(" "));
        }
    }

    /// The index of every tool added.
    pub fn finish(self) -> SearchIndex {
        let mut tables = self.ix.tables;
        let n = tables.doc_len.len().max(1) as f32;
        tables.avg_len = tables.doc_len.iter().sum::<f32>() / n;
        let mut sorted: Vec<u32> = (0..tables.vocab.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| tables.vocab[a as usize].cmp(&tables.vocab[b as usize]));
        tables.sorted = sorted;
        SearchIndex {
            tables: Owned::from_value(&tables),
            roots: OnceLock::new(),
        }
    }
}

/// One query word and the index terms it stands for.
#[derive(Debug, Clone)]
struct Group {
    word: String,
    terms: Vec<(u32, f32, &'static str)>,
    /// The idf of the word as typed, when it is a term: no other reading of the word
    /// (variant, synonym, abbreviation) may count for more just because it is rarer.
    idf_cap: f32,
}

/// A ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position in `Catalog::tools`.
    pub doc: usize,
    /// Relevance, higher is better.
    pub score: f32,
    /// Why it scored (only with `explain`).
    pub why: Vec<String>,
}

impl SearchIndex {
    /// Indexes every tool of the catalog.
    pub fn build(tools: &[FlatTool]) -> SearchIndex {
        let mut builder = IndexBuilder::default();
        builder.add(tools);
        builder.finish()
    }

    /// The index archived by [`SearchIndex::bytes`] at `range` of `shared` (a catalog
    /// section), checked first (rkyv's check, then that its tables agree in length and its
    /// term order is a permutation's worth of ids): the error says what is wrong. Postings
    /// are not walked here; a posting naming a tool past the end is skipped by the search.
    pub fn from_shared(
        shared: crate::archive::Shared,
        range: std::ops::Range<usize>,
    ) -> Result<SearchIndex, String> {
        let tables = Owned::<Tables>::in_shared(shared, range)?;
        let t = tables.get();
        let terms = t.vocab.len();
        let docs = t.doc_len.len();
        let sound = t.sorted.len() == terms
            && t.postings.len() == terms
            && t.title_words.len() == docs
            && t.titles.len() == docs
            && t.sorted.iter().all(|i| (i.to_native() as usize) < terms);
        if !sound {
            return Err("its tables disagree".into());
        }
        Ok(SearchIndex {
            tables,
            roots: OnceLock::new(),
        })
    }

    /// The archived index, for storing.
    pub fn bytes(&self) -> &[u8] {
        self.tables.bytes()
    }

    fn t(&self) -> &ArchivedTables {
        self.tables.get()
    }

    /// The term `word`, if indexed.
    fn id(&self, word: &str) -> Option<u32> {
        let t = self.t();
        t.sorted
            .binary_search_by(|i| t.vocab[i.to_native() as usize].as_str().cmp(word))
            .ok()
            .map(|at| t.sorted[at].to_native())
    }

    fn term(&self, id: u32) -> &str {
        self.t().vocab[id as usize].as_str()
    }

    fn postings(&self, id: u32) -> &[ArchivedPosting] {
        &self.t().postings[id as usize]
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.t().doc_len.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.t().doc_len.is_empty()
    }

    fn idf(&self, id: u32) -> f32 {
        let n = self.len() as f32;
        let df = self.postings(id).len() as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// The index terms a query word stands for: itself, longer words it is a prefix of,
    /// and, when it is not a known word, the nearest words by edit distance (1 for words
    /// up to four letters, 2 for longer ones).
    fn resolve_word(&self, word: &str) -> Vec<(u32, f32, &'static str)> {
        let mut out = Vec::new();
        let exact = self.id(word);
        if let Some(id) = exact {
            out.push((id, 1.0, "exact"));
        }
        let chars = word.chars().count();
        if exact.is_none() && chars >= 3 {
            let mut prefixed: Vec<u32> = self
                .t()
                .vocab
                .iter()
                .map(|v| v.as_str())
                .enumerate()
                .filter(|(_, v)| v.len() > word.len() && v.starts_with(word))
                .map(|(i, _)| i as u32)
                .collect();
            prefixed.sort_by_key(|&i| std::cmp::Reverse(self.postings(i).len()));
            out.extend(prefixed.into_iter().take(8).map(|i| (i, 0.6, "prefix")));
        }
        let variants = self.variants(word);
        out.extend(
            variants
                .iter()
                .filter(|&&i| Some(i) != exact)
                .map(|&i| (i, W_VARIANT, "variant")),
        );
        if exact.is_none() && variants.is_empty() && chars >= 3 {
            let max = if chars <= 4 { 1 } else { 2 };
            let mut near: Vec<(usize, u32)> = self
                .t()
                .vocab
                .iter()
                .map(|v| v.as_str())
                .enumerate()
                .filter(|(_, v)| v.len().abs_diff(word.len()) <= max)
                .filter_map(|(i, v)| {
                    let d = edit_distance(word, v);
                    (d <= max).then_some((d, i as u32))
                })
                .collect();
            near.sort_by_key(|&(d, i)| (d, std::cmp::Reverse(self.postings(i).len())));
            if let Some(&(best, _)) = near.first() {
                out.extend(
                    near.into_iter()
                        .filter(|&(d, _)| d == best)
                        .take(3)
                        .map(|(d, i)| (i, if d == 1 { 0.7 } else { 0.45 }, "typo")),
                );
            }
        }
        for synonym in text::synonyms(word) {
            for &i in self.variants(synonym) {
                if !out.iter().any(|t| t.0 == i) {
                    out.push((i, W_SYNONYM, "synonym"));
                }
            }
        }
        out
    }

    /// The terms that share `word`'s root: its inflections, and the word itself.
    fn variants(&self, word: &str) -> &[u32] {
        let roots = self.roots.get_or_init(|| {
            let mut m: HashMap<String, Vec<u32>, FxBuild> = HashMap::default();
            for (i, v) in self.t().vocab.iter().enumerate() {
                m.entry(text::root(v.as_str())).or_default().push(i as u32);
            }
            m
        });
        roots.get(&text::root(word)).map_or(&[], Vec::as_slice)
    }

    /// The query's word groups, and each word's best reading (typos corrected). An
    /// abbreviation whose long form the readings contain joins the group of every word it
    /// stands for (`pull request` → `pr` in both), so a document scores the concept once
    /// per word whichever way it writes it.
    fn groups(&self, query: &str) -> (Vec<Group>, Vec<String>) {
        let raw = text::query_words(query);
        let mut groups: Vec<Group> = raw
            .iter()
            .map(|w| Group {
                word: w.clone(),
                terms: self.resolve_word(w),
                idf_cap: self.id(w).map_or(f32::INFINITY, |id| self.idf(id)),
            })
            .collect();
        let corrected: Vec<String> = groups
            .iter()
            .map(|g| {
                match g
                    .terms
                    .iter()
                    .find(|t| matches!(t.2, "exact" | "typo" | "variant"))
                {
                    Some((id, _, _)) => self.term(*id).to_string(),
                    None => g.word.clone(),
                }
            })
            .collect();
        for (short, span) in text::abbreviations_in(&corrected) {
            let Some(id) = self.id(short) else {
                continue;
            };
            for g in &mut groups[span] {
                if !g.terms.iter().any(|t| t.0 == id) {
                    g.terms.push((id, 1.0, "abbreviation"));
                }
            }
        }
        (groups, corrected)
    }

    /// The `limit` best tools for `query`, best first (ties by position, so stable).
    pub fn search(&self, query: &str, limit: usize, explain: bool) -> Vec<Hit> {
        let (groups, corrected) = self.groups(query);
        let n = self.len();
        let mut scores = vec![0f32; n];
        let mut best = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        for g in &groups {
            for &(id, w, _) in &g.terms {
                let idf = self.idf(id).min(g.idf_cap);
                for p in self.postings(id) {
                    let (doc, tf) = (p.doc.to_native(), p.tf.to_native());
                    if doc as usize >= n {
                        continue;
                    }
                    let s = w * idf * self.saturate(doc, tf);
                    let e = &mut best[doc as usize];
                    if *e == 0.0 {
                        touched.push(doc);
                    }
                    *e = e.max(s);
                }
            }
            for doc in touched.drain(..) {
                scores[doc as usize] += best[doc as usize];
                best[doc as usize] = 0.0;
            }
        }
        let q = corrected.join(" ");
        let raw_q = text::query_words(query).join(" ");
        let (q_prefix, raw_prefix) = (format!("{q} "), format!("{raw_q} "));
        let mut boosts = vec![0f32; n];
        if !q.is_empty() {
            for doc in 0..n {
                if scores[doc] > 0.0 {
                    boosts[doc] = self.boost(
                        doc,
                        [&q, &raw_q],
                        [&q_prefix, &raw_prefix],
                        &groups,
                        &corrected,
                    );
                    scores[doc] += boosts[doc];
                }
            }
        }
        let mut ranked: Vec<(usize, f32)> = scores
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        let order = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if ranked.len() > limit && limit > 0 {
            ranked.select_nth_unstable_by(limit - 1, order);
        }
        ranked.truncate(limit);
        ranked.sort_by(order);
        ranked
            .into_iter()
            .map(|(doc, score)| Hit {
                doc,
                score,
                why: if explain {
                    self.explain(doc, &groups, boosts[doc])
                } else {
                    Vec::new()
                },
            })
            .collect()
    }

    fn saturate(&self, doc: u32, tf: f32) -> f32 {
        let t = self.t();
        let dl = t.doc_len[doc as usize].to_native();
        let avg = t.avg_len.to_native();
        tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * dl / avg.max(f32::EPSILON)))
    }

    fn boost(
        &self,
        doc: usize,
        queries: [&str; 2],
        prefixes: [&str; 2],
        groups: &[Group],
        corrected: &[String],
    ) -> f32 {
        let title = self.t().titles[doc].as_str();
        if queries.contains(&title) {
            BOOST_EXACT
        } else if prefixes.iter().any(|p| title.starts_with(p)) {
            BOOST_PREFIX
        } else if groups.iter().zip(corrected).all(|(g, w)| {
            let title = &self.t().title_words[doc];
            let has = |w: &str| title.iter().any(|t| t.as_str() == w);
            has(w)
                || g.terms
                    .iter()
                    .any(|t| t.2 == "abbreviation" && has(self.term(t.0)))
        }) {
            BOOST_ALL_IN_NAME
        } else {
            0.0
        }
    }

    fn explain(&self, doc: usize, groups: &[Group], boost: f32) -> Vec<String> {
        let mut why = Vec::new();
        for g in groups {
            let mut best: Option<(f32, &str, &str)> = None;
            for &(id, w, how) in &g.terms {
                if let Ok(i) = self
                    .postings(id)
                    .binary_search_by_key(&(doc as u32), |p| p.doc.to_native())
                {
                    let tf = self.postings(id)[i].tf.to_native();
                    let s = w * self.idf(id).min(g.idf_cap) * self.saturate(doc as u32, tf);
                    if best.is_none_or(|b| s > b.0) {
                        best = Some((s, self.term(id), how));
                    }
                }
            }
            if let Some((s, term, how)) = best {
                if how == "exact" {
                    why.push(format!("{term}: +{s:.2}"));
                } else {
                    why.push(format!("{term} ({how} of {:?}): +{s:.2}", g.word));
                }
            }
        }
        if boost > 0.0 {
            let kind = if boost == BOOST_EXACT {
                "exact name"
            } else if boost == BOOST_PREFIX {
                "name prefix"
            } else {
                "every word in the name"
            };
            why.push(format!("{kind}: +{boost:.2}"));
        }
        why
    }
}

/// Postings are appended in document order, so each list is sorted by document; `explain`
/// relies on that for its binary search.
#[cfg(test)]
fn postings_sorted(ix: &SearchIndex) -> bool {
    ix.t().postings.iter().all(|p| {
        p.windows(2)
            .all(|w| w[0].doc.to_native() < w[1].doc.to_native())
    })
}

/// What `atip search` asks for.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// Most results.
    pub limit: usize,
    /// Full schemas for this many of the best results.
    pub schemas: usize,
    /// Schema form: `None` for the plain JSON Schema, or a JSON export format for that
    /// provider's whole tool definition.
    pub format: Option<Format>,
    /// Include scores' reasons.
    pub explain: bool,
    /// Cap on the serialized report, in bytes.
    pub max_bytes: usize,
}

/// `atip search --output json`: `{"query", "results": [...], "truncated"}`.
#[derive(Debug, Clone, Serialize)]
pub struct SearchReport {
    /// The query as given.
    pub query: String,
    /// Best first.
    pub results: Vec<SearchResult>,
    /// Whether results or schemas were dropped to stay under the byte cap.
    pub truncated: bool,
}

/// One result.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    /// Tool-call name (`gh_pr_create`), as `atip exec` and `atip mcp` take it.
    pub name: String,
    /// `command` (a registered command-line tool's command) or `mcp` (an MCP server's tool).
    pub kind: &'static str,
    /// The MCP server, for `mcp` results.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The ATIP tool.
    pub tool: String,
    /// Command path (`["pr", "create"]`; `[""]` for the root command).
    pub command: Vec<String>,
    /// Relevance, rounded to 3 decimals.
    pub score: f64,
    /// Description with safety suffix.
    pub description: String,
    /// Full schema (top `--schemas` results only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Why it ranked (with `--explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

/// Searches and builds the capped report. Schemas of later results go first, then whole
/// results from the end, until the JSON fits `max_bytes`; `truncated` says so.
pub fn search(
    catalog: &Catalog,
    index: &SearchIndex,
    query: &str,
    opts: &SearchOptions,
) -> SearchReport {
    let hits = index.search(query, opts.limit, opts.explain);
    report(query, hits, opts, |doc| {
        (&catalog.tools()[doc], catalog.external_server(doc))
    })
}

/// The capped report of ranked `hits` (from [`SearchIndex::search`] with `opts.limit` and
/// `opts.explain`); `tool_at` gives the tool at a hit's position and its MCP server.
pub fn report<'a>(
    query: &str,
    hits: Vec<Hit>,
    opts: &SearchOptions,
    tool_at: impl Fn(usize) -> (&'a FlatTool, Option<&'a str>),
) -> SearchReport {
    let mut report = SearchReport {
        query: query.to_string(),
        results: Vec::new(),
        truncated: false,
    };
    // Sizes are those of the pretty JSON `atip search` prints: a result nested in
    // `results` gains four spaces per line, plus `,\n` between results.
    let cost_of = |r: &SearchResult| {
        let s = serde_json::to_string_pretty(r).unwrap_or_default();
        s.len() + 4 * s.lines().count() + 2
    };
    let base = serde_json::to_string_pretty(&report)
        .map(|s| s.len() + 1)
        .unwrap_or(0);
    let mut size = base;
    for (rank, hit) in hits.into_iter().enumerate() {
        let (t, server) = tool_at(hit.doc);
        let server = server.map(str::to_string);
        let mut r = SearchResult {
            name: t.name.clone(),
            kind: if server.is_some() { "mcp" } else { "command" },
            server,
            tool: t.tool.clone(),
            command: t.command.clone(),
            score: (f64::from(hit.score) * 1000.0).round() / 1000.0,
            description: t.description.clone(),
            schema: (rank < opts.schemas).then(|| schema_for(t, opts.format)),
            why: hit.why,
        };
        let mut cost = cost_of(&r);
        if size + cost > opts.max_bytes && r.schema.is_some() {
            r.schema = None;
            report.truncated = true;
            cost = cost_of(&r);
        }
        if size + cost > opts.max_bytes {
            report.truncated = true;
            break;
        }
        size += cost;
        report.results.push(r);
    }
    report
}

/// The schema of one tool: plain JSON Schema, or the provider's whole tool definition.
pub fn schema_for(tool: &FlatTool, format: Option<Format>) -> Value {
    match format {
        Some(f) if f.is_json() => {
            let rendered = formats::render(&formats::flat(std::slice::from_ref(tool)), f);
            match f {
                Format::Gemini => rendered
                    .pointer("/0/functionDeclarations/0")
                    .cloned()
                    .unwrap_or(Value::Null),
                Format::Mcp => rendered.pointer("/tools/0").cloned().unwrap_or(Value::Null),
                _ => rendered.get(0).cloned().unwrap_or(Value::Null),
            }
        }
        _ => tool.input_schema.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compile::FlattenOptions;
    use crate::model::Metadata;
    use serde_json::json;

    fn catalog() -> Catalog {
        let gh = Metadata::from_value(
            json!({"atip": "0.4", "name": "gh", "version": "1", "description": "GitHub CLI",
            "commands": {"pr": {"description": "Work with pull requests", "commands": {
                "create": {"description": "Create a pull request"},
                "list": {"description": "List pull requests in a repository"},
                "merge": {"description": "Merge a pull request"}}},
              "repo": {"description": "Work with repositories", "commands": {
                "create": {"description": "Create a new repository"},
                "clone": {"description": "Clone a repository locally"}}}}}),
        )
        .unwrap();
        let git = Metadata::from_value(json!({"atip": "0.4", "name": "git", "version": "1", "description": "Version control",
            "commands": {"log": {"description": "Show commit logs"}, "commit": {"description": "Record changes to the repository"}}}))
        .unwrap();
        Catalog::build(&[gh, git], &FlattenOptions::default())
    }

    fn top(q: &str) -> Vec<String> {
        let c = catalog();
        let ix = SearchIndex::build(c.tools());
        assert!(postings_sorted(&ix));
        ix.search(q, 3, false)
            .iter()
            .map(|h| c.tools()[h.doc].name.clone())
            .collect()
    }

    #[test]
    fn typos_and_abbreviations() {
        assert_eq!(top("pul request")[..1], ["gh_pr_create"]);
        assert_eq!(top("create pull request")[0], "gh_pr_create");
        assert_eq!(top("pr list")[0], "gh_pr_list");
        assert_eq!(top("clone repository")[0], "gh_repo_clone");
        assert_eq!(top("comit")[0], "git_commit");
        assert_eq!(top("git log")[0], "git_log");
        assert!(top("zzzzzz").is_empty());
    }
}
