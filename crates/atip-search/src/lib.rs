//! Ranked search over flattened commands: which few tools does an agent need for a task?
//!
//! Owns the index (BM25 over weighted fields: tool name, command path, description,
//! parameter names and descriptions), query correction (exact, prefix and edit-distance
//! matches, the abbreviation table in `text`), name boosts and the capped result report.
//! Must not read files; callers hand it a [`Catalog`].

// The layers below, under the module names this code was written with (`crate::output`, …).
/// This crate is the `search` layer: `crate::search::…` paths name its own items.
#[allow(unused_imports)]
pub(crate) use crate as search;
#[allow(unused_imports)]
pub(crate) use atip_base::{archive, output};
#[allow(unused_imports)]
pub(crate) use atip_compile as compile;
#[allow(unused_imports)]
pub(crate) use atip_model::model;

pub mod mode;
#[cfg(test)]
mod quality;
mod text;
mod uses;

pub use text::{ABBREVIATIONS, STOPWORDS};

use crate::archive::Owned;
use crate::compile::formats::{self, Format};
use crate::compile::{Catalog, FlatTool, ParamOrigin, edit_distance};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::OnceLock;

const K1: f32 = 1.6;
/// Fields of a document, scored BM25F-style: each field's term frequency is normalised by
/// that field's own length against its average over the index, then weighted.
const FIELDS: usize = 5;
/// The tool's name and the command path: what the command is called.
const F_NAME: usize = 0;
/// The command's own description (a man page's NAME line for an inferred tool).
const F_DESCRIPTION: usize = 1;
/// What the command belongs to: the tool's and parent commands' descriptions.
const F_ABOUT: usize = 2;
/// Parameter names and descriptions: last, and a term counts once however many options
/// use it, so that a page with two hundred options cannot win a task on the volume of
/// its option text.
const F_PARAMS: usize = 3;
/// The command's curated task lines (`uses.txt`): what people use it for, in their words.
/// Weighed above a description (4; tuned on the tuning part: 1.5, 2.5, 3, 4, 6 gave top-1
/// 85.2, 85.7, 85.7, 87.0, 85.7%); its length is normalised against the commands that
/// have such lines only, so that a program with three phrases is not judged long beside
/// the many that have none.
const F_USES: usize = 4;
const FIELD_WEIGHT: [f32; FIELDS] = [6.0, 2.5, 1.0, 0.5, 4.0];
const FIELD_B: [f32; FIELDS] = [0.5, 0.6, 0.75, 0.3, 0.6];
/// Within the name field: the tool's name when the command is a subcommand (`gh` of
/// `gh pr create`) counts for less than the command's own path.
const W_TOOL_OF_SUBCOMMAND: f32 = 0.5;
/// A subcommand found for a task that shares no word with its tool (the tool's name and
/// description, the parent commands' descriptions): its score is multiplied by this.
/// `docker top` lists a container's processes; `list running processes` says nothing of
/// containers, so the standalone `ps` and `top` come first.
const OUT_OF_CONTEXT: f32 = 0.8;
const W_PARAM_NAME: f32 = 1.0;
const W_PARAM_DESCRIPTION: f32 = 0.8;
const W_VARIANT: f32 = 0.9;
const W_SYNONYM: f32 = 0.75;
const BOOST_EXACT: f32 = 8.0;
const BOOST_PREFIX: f32 = 3.0;
const BOOST_ALL_IN_NAME: f32 = 2.0;
/// A task that names the program (`compress with bzip2`): its own command, over the
/// commands whose descriptions mention it.
const BOOST_PROGRAM: f32 = 2.5;
/// How much of a score rides on covering the task's words: a tool's score is multiplied
/// by `1 - COVERAGE + COVERAGE * covered / words` (Lucene's coordination factor, softened).
const COVERAGE: f32 = 0.7;
/// The score of one query word in a tool at which the word counts as covered (a
/// description match); below it, in proportion.
const COVERED: f32 = 2.0;

/// Results that get their aliases named (a caller that asks for every hit, to filter
/// them, reads the first few).
const ALIASED: usize = 64;

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
    /// The posting lists, apart from the archive: a reader checks only the lists a query
    /// reads (their CRC-32s are in [`Tables::lists`]), not every term's.
    postings: Postings,
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
    /// Per term id, where its posting list lies in [`SearchIndex::postings_bytes`]: the
    /// tools that have the term, in tool order.
    lists: Vec<ListAt>,
    /// Per tool, the factor its score is multiplied by: what the machine says about the
    /// program beside its text ([`Facts::prior`]).
    prior: Vec<f32>,
    /// Per tool, the tool that stands for its family (itself when it leads it): the same
    /// command of the same program under other names is one result.
    family: Vec<u32>,
    /// Per tool, its program (in `programs`), to name a family's aliases.
    program: Vec<u32>,
    /// Program names, each once: a program's twenty commands share one string, and a
    /// reader checks one string per program rather than per command.
    programs: Vec<String>,
    /// Per program (as `programs`), the registry name its task lines were looked up by
    /// ([`Facts::uses`]); empty for none.
    uses: Vec<String>,
    title_words: Vec<Vec<String>>,
    /// Title words joined by one space, for the exact and prefix boosts.
    titles: Vec<String>,
    /// Per subcommand, the sorted term ids of its context: the tool's name and what the
    /// command belongs to (`about`); empty for a tool without subcommands.
    context: Vec<Vec<u32>>,
}

/// A term's posting list in the postings bytes: `count` postings of [`POSTING`] bytes from
/// byte `at`, whose CRC-32 is `crc`. Each posting is a tool that has the term (`u32`,
/// little-endian) and the term's frequency in it (`f32`): per field, normalised by the
/// field's length and weighted, summed (BM25F).
#[derive(Debug, Clone, Copy, rkyv::Archive, rkyv::Serialize)]
struct ListAt {
    at: u64,
    count: u32,
    crc: u32,
}

/// Bytes of one posting: tool (`u32`), frequency (`f32`), little-endian.
const POSTING: usize = 8;

/// The posting lists' bytes (see [`ListAt`]), built here or a part of a shared buffer (a
/// section of a mapped catalog), and which lists were found sound.
#[derive(Clone)]
struct Postings {
    bytes: PostingBytes,
    /// Per term: 0 not checked yet, 1 sound, 2 damaged.
    checked: std::sync::Arc<[std::sync::atomic::AtomicU8]>,
}

#[derive(Clone)]
enum PostingBytes {
    Own(std::sync::Arc<[u8]>),
    Part(crate::archive::Shared, std::ops::Range<usize>),
}

impl Postings {
    fn new(bytes: PostingBytes, terms: usize) -> Postings {
        Postings {
            bytes,
            checked: (0..terms)
                .map(|_| std::sync::atomic::AtomicU8::new(0))
                .collect(),
        }
    }

    fn all(&self) -> &[u8] {
        match &self.bytes {
            PostingBytes::Own(b) => b,
            PostingBytes::Part(s, r) => (**s).as_ref().get(r.clone()).unwrap_or_default(),
        }
    }

    /// The bytes of list `at`, or empty when they lie past the end (a damaged table:
    /// [`SearchIndex::check_lists`] reports it before any search reads them).
    fn list(&self, at: &ArchivedListAt) -> &[u8] {
        let start = at.at.to_native();
        let len = u64::from(at.count.to_native()) * POSTING as u64;
        usize::try_from(start)
            .ok()
            .zip(usize::try_from(len).ok())
            .and_then(|(s, l)| self.all().get(s..s.checked_add(l)?))
            .unwrap_or_default()
    }
}

/// The postings of one list, in tool order: (tool, frequency).
fn postings_of(list: &[u8]) -> impl Iterator<Item = (u32, f32)> + '_ {
    list.chunks_exact(POSTING).map(|p| {
        let (doc, tf) = p.split_at(4);
        (
            u32::from_le_bytes(doc.try_into().expect("4 bytes")),
            f32::from_le_bytes(tf.try_into().expect("4 bytes")),
        )
    })
}

/// What the registry says about a tool's program, beside its text: computed when the
/// catalog is compiled (the `atip-catalog` layer above), from the registry entry and the machine.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Factor on the score (1 when nothing is known; see `search::prior`).
    pub prior: f32,
    /// Names the program's family: tools whose family and command path are equal are one
    /// result. The tool's own name when nothing else is known.
    pub family: String,
    /// The registry name whose curated task lines (`uses.txt`) the tool's commands get:
    /// whatever program the registry holds under that name. `None` for a tool the registry
    /// does not hold (an MCP server's, a file's): its text alone ranks it.
    pub uses: Option<String>,
}

impl Facts {
    /// What is known of a tool from itself alone: nothing.
    pub fn of(tool: &FlatTool) -> Facts {
        Facts {
            prior: 1.0,
            family: tool.tool.clone(),
            uses: None,
        }
    }
}

/// The index while it is built: terms are interned through a map the archive does not
/// keep, and term frequencies are kept per field until every field's average length is
/// known.
#[derive(Default)]
struct Builder {
    ids: HashMap<String, u32, FxBuild>,
    tables: Tables,
    /// Each term's postings: a tool's frequency of it per field, one entry per field
    /// it occurs in (not a whole `[f32; FIELDS]` per tool: the terms every tool of a
    /// 1,700-command document has were a megabyte of zeros while it was indexed).
    raw: Vec<Vec<RawTf>>,
    lengths: Vec<[f32; FIELDS]>,
    families: HashMap<String, u32, FxBuild>,
    family_of: Vec<u32>,
    program_ids: HashMap<String, u32, FxBuild>,
}

/// A term's frequency in one field of tool `doc`, summed; [`Builder::post`] writes a
/// tool's fields one after the other.
#[derive(Clone, Copy)]
struct RawTf {
    doc: u32,
    field: u8,
    tf: f32,
}

impl Builder {
    /// Adds tool `doc`'s terms (`pairs`: term, field, weight) to the posting lists, as a
    /// term frequency per field, and its fields' lengths.
    fn post(&mut self, doc: u32, pairs: &mut [(u32, usize, f32)]) {
        let mut len = [0f32; FIELDS];
        for &(_, field, w) in pairs.iter() {
            len[field] += w;
        }
        pairs.sort_unstable_by_key(|(id, _, _)| *id);
        let mut i = 0;
        while i < pairs.len() {
            let id = pairs[i].0;
            let mut tf = [0f32; FIELDS];
            while i < pairs.len() && pairs[i].0 == id {
                tf[pairs[i].1] += pairs[i].2;
                i += 1;
            }
            let list = &mut self.raw[id as usize];
            let before = list.len();
            for (field, &tf) in tf.iter().enumerate() {
                if tf != 0.0 {
                    list.push(RawTf {
                        doc,
                        field: field as u8,
                        tf,
                    });
                }
            }
            // The tool is in the list whatever its frequencies sum to.
            if list.len() == before {
                list.push(RawTf {
                    doc,
                    field: 0,
                    tf: 0.0,
                });
            }
        }
        self.lengths.push(len);
    }

    fn intern(&mut self, term: String) -> u32 {
        if let Some(&id) = self.ids.get(&term) {
            return id;
        }
        let id = self.tables.vocab.len() as u32;
        self.ids.insert(term.clone(), id);
        self.tables.vocab.push(term);
        self.raw.push(Vec::new());
        id
    }
}

/// Adds the terms of `text` to field `field` with weight `w`, tokenizing each distinct
/// text once.
fn add_text<'t>(
    ix: &mut Builder,
    cache: &mut HashMap<&'t str, Vec<u32>, FxBuild>,
    pairs: &mut Vec<(u32, usize, f32)>,
    text: &'t str,
    field: usize,
    w: f32,
) {
    let ids = cache.entry(text).or_insert_with(|| {
        text::terms(text)
            .into_iter()
            .map(|term| ix.intern(term))
            .collect()
    });
    pairs.extend(ids.iter().map(|&id| (id, field, w)));
}

/// A [`SearchIndex`] fed tools in catalog order, a slice at a time: the catalog compile
/// indexes each batch of documents on a thread of its own while it writes the next
/// batch's records, and drops the batch once indexed. Tools are numbered in the order
/// they arrive, so the index is the one [`SearchIndex::build`] makes of them all at once.
#[derive(Default)]
pub struct IndexBuilder {
    ix: Builder,
    pairs: Vec<(u32, usize, f32)>,
}

impl IndexBuilder {
    /// Indexes `tools` after those added before, knowing nothing of them but their text.
    pub fn add(&mut self, tools: &[FlatTool]) {
        let facts: Vec<Facts> = tools.iter().map(Facts::of).collect();
        self.add_ranked(tools, &facts);
    }

    /// Indexes `tools` after those added before, with what is known of each (`facts[i]`
    /// of `tools[i]`). Texts repeat within a document (global and parent options): each
    /// distinct text of the slice is tokenized once.
    pub fn add_ranked(&mut self, tools: &[FlatTool], facts: &[Facts]) {
        let ix = &mut self.ix;
        let pairs = &mut self.pairs;
        let mut cache: HashMap<&str, Vec<u32>, FxBuild> = HashMap::default();
        for (t, f) in tools.iter().zip(facts) {
            let doc = ix.lengths.len() as u32;
            pairs.clear();
            // A tool without subcommands is run by its name: the name is its command.
            let bare = t.command.iter().all(|c| c.is_empty());
            let w_tool = if bare { 1.0 } else { W_TOOL_OF_SUBCOMMAND };
            add_text(ix, &mut cache, pairs, &t.tool, F_NAME, w_tool);
            let path = t.command.join(" ");
            for term in text::terms(&path) {
                let id = ix.intern(term);
                pairs.push((id, F_NAME, 1.0));
            }
            add_text(ix, &mut cache, pairs, &t.summary, F_DESCRIPTION, 1.0);
            add_text(ix, &mut cache, pairs, &t.about, F_ABOUT, 1.0);
            let context = if bare {
                Vec::new()
            } else {
                let mut c: Vec<u32> = pairs
                    .iter()
                    .filter(|&&(_, field, w)| {
                        field == F_ABOUT || (field == F_NAME && w == W_TOOL_OF_SUBCOMMAND)
                    })
                    .map(|&(id, _, _)| id)
                    .collect();
                c.sort_unstable();
                c.dedup();
                c
            };
            // The task lines come after the context: they are what people say, not what
            // the tool says it is for, so they never put a subcommand in a task's domain.
            if let Some(program) = &f.uses {
                let (own, above) = uses::of(program, &t.command);
                if let Some(own) = own {
                    add_text(ix, &mut cache, pairs, own, F_USES, 1.0);
                }
                for line in above {
                    add_text(ix, &mut cache, pairs, line, F_ABOUT, 1.0);
                }
            }
            for p in &t.params {
                let name = match &p.origin {
                    ParamOrigin::Argument { name, .. } | ParamOrigin::Option { name, .. } => name,
                };
                add_text(ix, &mut cache, pairs, name, F_PARAMS, W_PARAM_NAME);
                add_text(
                    ix,
                    &mut cache,
                    pairs,
                    &p.description,
                    F_PARAMS,
                    W_PARAM_DESCRIPTION,
                );
            }
            ix.post(doc, pairs);
            let key = format!("{}\u{1f}{path}", f.family);
            let next = ix.families.len() as u32;
            let family = *ix.families.entry(key).or_insert(next);
            ix.family_of.push(family);
            ix.tables.prior.push(f.prior);
            let next = ix.tables.programs.len() as u32;
            let program = *ix.program_ids.entry(t.tool.clone()).or_insert(next);
            if program == next {
                ix.tables.programs.push(t.tool.clone());
                ix.tables.uses.push(f.uses.clone().unwrap_or_default());
            }
            ix.tables.program.push(program);
            ix.tables.title_words.push(text::terms(&t.title));
            ix.tables.titles.push(text::words(&t.title).join(" "));
            ix.tables.context.push(context);
        }
    }

    /// The index of every tool added: term frequencies normalised per field (BM25F), and
    /// each family led by its member with the highest prior, then the shortest name, then
    /// the first.
    pub fn finish(self) -> SearchIndex {
        let Builder {
            mut tables,
            raw,
            lengths,
            family_of,
            families,
            ..
        } = self.ix;
        let n = lengths.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for l in &lengths {
            for f in 0..FIELDS {
                avg[f] += l[f] / n;
            }
        }
        // Task lines: the average over the commands that have them.
        let with_uses = lengths.iter().filter(|l| l[F_USES] > 0.0).count();
        if with_uses > 0 {
            avg[F_USES] *= n / with_uses as f32;
        }
        // A tool's frequency of a term: per field, normalised by the field's length and
        // weighted, summed (BM25F).
        let weighted = |doc: u32, tf: [f32; FIELDS]| {
            let len = &lengths[doc as usize];
            let mut sum = 0.0;
            for f in 0..FIELDS {
                if tf[f] > 0.0 {
                    let norm = if avg[f] > 0.0 {
                        1.0 - FIELD_B[f] + FIELD_B[f] * len[f] / avg[f]
                    } else {
                        1.0
                    };
                    // Parameters count a term once: fifty options that
                    // mention it are not fifty times the answer.
                    let tf = if f == F_PARAMS { tf[f].min(1.0) } else { tf[f] };
                    sum += FIELD_WEIGHT[f] * tf / norm.max(f32::EPSILON);
                }
            }
            sum
        };
        let mut bytes = Vec::new();
        tables.lists = raw
            .into_iter()
            .map(|list| {
                let at = bytes.len();
                let mut entries = list.iter().peekable();
                while let Some(first) = entries.next() {
                    let mut tf = [0f32; FIELDS];
                    tf[first.field as usize] = first.tf;
                    while let Some(e) = entries.next_if(|e| e.doc == first.doc) {
                        tf[e.field as usize] = e.tf;
                    }
                    bytes.extend_from_slice(&first.doc.to_le_bytes());
                    bytes.extend_from_slice(&weighted(first.doc, tf).to_le_bytes());
                }
                ListAt {
                    at: at as u64,
                    count: ((bytes.len() - at) / POSTING) as u32,
                    crc: crc32fast::hash(&bytes[at..]),
                }
            })
            .collect();
        tables.family = family_leaders(&tables, &family_of, families.len());
        let mut sorted: Vec<u32> = (0..tables.vocab.len() as u32).collect();
        sorted.sort_unstable_by(|&a, &b| tables.vocab[a as usize].cmp(&tables.vocab[b as usize]));
        tables.sorted = sorted;
        let terms = tables.vocab.len();
        SearchIndex {
            tables: Owned::from_value(&tables),
            postings: Postings::new(PostingBytes::Own(bytes.into()), terms),
            roots: OnceLock::new(),
        }
    }
}

/// Each tool's family leader (the tool a family's hits are shown as): the member with the
/// highest prior, then the shortest program name, then the first.
fn family_leaders(tables: &Tables, family_of: &[u32], families: usize) -> Vec<u32> {
    let mut leader: Vec<Option<u32>> = vec![None; families];
    let better = |a: u32, b: u32| {
        let (pa, pb) = (tables.prior[a as usize], tables.prior[b as usize]);
        let name = |doc: u32| &tables.programs[tables.program[doc as usize] as usize];
        let (la, lb) = (name(a).len(), name(b).len());
        pa > pb || (pa == pb && la < lb)
    };
    for (doc, &fam) in family_of.iter().enumerate() {
        let doc = doc as u32;
        let slot = &mut leader[fam as usize];
        match *slot {
            Some(cur) if !better(doc, cur) => {}
            _ => *slot = Some(doc),
        }
    }
    family_of
        .iter()
        .map(|&fam| leader[fam as usize].unwrap_or(0))
        .collect()
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

/// A tool found by a search: the tool, its score and its aliases ([`Hit::aliases`]).
pub type Found<'a> = (&'a FlatTool, f32, Vec<String>);

/// A ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position in `Catalog::tools`.
    pub doc: usize,
    /// Relevance, higher is better.
    pub score: f32,
    /// Why it scored (only with `explain`).
    pub why: Vec<String>,
    /// Other names of the same program that the result stands for (`egrep` for `grep`):
    /// its family's other members, by program name.
    pub aliases: Vec<String>,
}

/// Why a stored search index cannot be used (the catalog then counts as corrupt).
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Not a valid archive of the index.
    #[error(transparent)]
    Archive(#[from] crate::archive::ArchiveError),
    /// Its tables do not agree in length, or an id points past a table.
    #[error("its tables disagree")]
    Disagree,
    /// A term's posting list lies past the end or fails its CRC-32.
    #[error("the posting list of term {0} is damaged")]
    Postings(u32),
}

impl SearchIndex {
    /// Indexes every tool of the catalog.
    pub fn build(tools: &[FlatTool]) -> SearchIndex {
        let mut builder = IndexBuilder::default();
        builder.add(tools);
        builder.finish()
    }

    /// Indexes `tools` with what the machine says of their programs: `facts` by program
    /// name (from [`SearchIndex::program_facts`] of the compiled catalog), nothing for a
    /// tool it does not name (an MCP server's, a file's). So a selection compiled apart
    /// from the catalog (`atip search --tools`, MCP tools mixed in, `atip chat`, `atip mcp
    /// serve` with proxied servers) ranks as the catalog's own index does.
    pub fn build_with(tools: &[FlatTool], facts: &HashMap<String, Facts>) -> SearchIndex {
        let of: Vec<Facts> = tools
            .iter()
            .map(|t| facts.get(&t.tool).cloned().unwrap_or_else(|| Facts::of(t)))
            .collect();
        let mut builder = IndexBuilder::default();
        builder.add_ranked(tools, &of);
        builder.finish()
    }

    /// What this index knows of each program it holds: its prior and its family (named
    /// by the program that leads it), for [`SearchIndex::build_with`].
    pub fn program_facts(&self) -> HashMap<String, Facts> {
        let t = self.t();
        let mut out = HashMap::new();
        for doc in 0..self.len() {
            let program = self.program(doc);
            if out.contains_key(program) {
                continue;
            }
            let lead = t.family[doc].to_native() as usize;
            out.insert(
                program.to_string(),
                Facts {
                    prior: t.prior[doc].to_native(),
                    family: self.program(lead).to_string(),
                    uses: Some(t.uses[t.program[doc].to_native() as usize].as_str())
                        .filter(|u| !u.is_empty())
                        .map(str::to_string),
                },
            );
        }
        out
    }

    /// The index archived by [`SearchIndex::bytes`] at `range` of `shared` (a catalog
    /// section) with its posting lists ([`SearchIndex::postings_bytes`]) at `postings`,
    /// checked first (rkyv's check, then that its tables agree in length and its term
    /// order is a permutation's worth of ids): the error says what is wrong. Posting lists
    /// are checked (bounds, CRC-32) by the search that reads them, each once; a posting
    /// naming a tool past the end is skipped by the search.
    pub fn from_shared(
        shared: crate::archive::Shared,
        range: std::ops::Range<usize>,
        postings: std::ops::Range<usize>,
    ) -> Result<SearchIndex, IndexError> {
        if (*shared).as_ref().get(postings.clone()).is_none() {
            return Err(crate::archive::ArchiveError::OutOfBounds.into());
        }
        let tables = Owned::<Tables>::in_shared(shared.clone(), range)?;
        let t = tables.get();
        let terms = t.vocab.len();
        let docs = t.prior.len();
        let sound = t.sorted.len() == terms
            && t.lists.len() == terms
            && t.family.len() == docs
            && t.program.len() == docs
            && t.uses.len() == t.programs.len()
            && t.program
                .iter()
                .all(|p| (p.to_native() as usize) < t.programs.len())
            && t.family.iter().all(|f| (f.to_native() as usize) < docs)
            && t.title_words.len() == docs
            && t.titles.len() == docs
            && t.context.len() == docs
            && t.sorted.iter().all(|i| (i.to_native() as usize) < terms);
        if !sound {
            return Err(IndexError::Disagree);
        }
        Ok(SearchIndex {
            tables,
            postings: Postings::new(PostingBytes::Part(shared, postings), terms),
            roots: OnceLock::new(),
        })
    }

    /// The archived index without its posting lists, for storing.
    pub fn bytes(&self) -> &[u8] {
        self.tables.bytes()
    }

    /// The posting lists, for storing beside [`SearchIndex::bytes`].
    pub fn postings_bytes(&self) -> &[u8] {
        self.postings.all()
    }

    /// Checks (bounds, CRC-32) the posting lists of `ids` not checked yet: an index read
    /// from a file reads no list it has not checked.
    fn check_lists(&self, ids: impl IntoIterator<Item = u32>) -> Result<(), IndexError> {
        use std::sync::atomic::Ordering::Relaxed;
        if matches!(self.postings.bytes, PostingBytes::Own(_)) {
            return Ok(());
        }
        let t = self.t();
        for id in ids {
            let state = &self.postings.checked[id as usize];
            let sound = match state.load(Relaxed) {
                0 => {
                    let at = &t.lists[id as usize];
                    let list = self.postings.list(at);
                    let sound = list.len() == at.count.to_native() as usize * POSTING
                        && crc32fast::hash(list) == at.crc.to_native();
                    state.store(if sound { 1 } else { 2 }, Relaxed);
                    sound
                }
                s => s == 1,
            };
            if !sound {
                return Err(IndexError::Postings(id));
            }
        }
        Ok(())
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

    /// The program of tool `doc`.
    fn program(&self, doc: usize) -> &str {
        let t = self.t();
        t.programs[t.program[doc].to_native() as usize].as_str()
    }

    fn term(&self, id: u32) -> &str {
        self.t().vocab[id as usize].as_str()
    }

    /// The postings of term `id`: (tool, frequency), in tool order.
    fn postings(&self, id: u32) -> impl Iterator<Item = (u32, f32)> + '_ {
        postings_of(self.postings.list(&self.t().lists[id as usize]))
    }

    /// How many tools have term `id` (its document frequency).
    fn df(&self, id: u32) -> usize {
        self.t().lists[id as usize].count.to_native() as usize
    }

    /// Term `id`'s frequency in tool `doc`, if it has the term.
    fn frequency(&self, id: u32, doc: u32) -> Option<f32> {
        let list = self.postings.list(&self.t().lists[id as usize]);
        let (mut lo, mut hi) = (0, list.len() / POSTING);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let (d, tf) = postings_of(&list[mid * POSTING..][..POSTING]).next()?;
            match d.cmp(&doc) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(tf),
            }
        }
        None
    }

    /// Number of indexed tools.
    pub fn len(&self) -> usize {
        self.t().prior.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.t().prior.is_empty()
    }

    fn idf(&self, id: u32) -> f32 {
        let n = self.len() as f32;
        let df = self.df(id) as f32;
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
            prefixed.sort_by_key(|&i| std::cmp::Reverse(self.df(i)));
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
            near.sort_by_key(|&(d, i)| (d, std::cmp::Reverse(self.df(i))));
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
        // Two query words an index term writes as one (`file name` → `filename`, `host
        // name` → `hostname`): the compound joins both words' groups.
        for i in 1..raw.len() {
            let Some(id) = self.id(&format!("{}{}", raw[i - 1], raw[i])) else {
                continue;
            };
            for g in &mut groups[i - 1..=i] {
                if !g.terms.iter().any(|t| t.0 == id) {
                    g.terms.push((id, 1.0, "compound"));
                }
            }
        }
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
    /// For an index built in memory, which has no stored lists to find damaged; a reader
    /// of a stored index uses [`SearchIndex::search_kept`], which reports damage.
    pub fn search(&self, query: &str, limit: usize, explain: bool) -> Vec<Hit> {
        self.search_kept(query, limit, explain, |_| true)
            .unwrap_or_default()
    }

    /// The `limit` best tools for `query` that `keep` admits (by position), best first:
    /// the ranking is made once over every tool and `keep` asked in rank order until
    /// `limit` are kept, so a withheld tool gives its place to the next one rather than
    /// shortening the answer. Every caller that withholds (the policy's outright denials,
    /// an unselected or damaged document) goes through here, so they all answer alike.
    /// A stored index's posting lists are checked before they are read: a damaged one is
    /// an error, never a different answer.
    pub fn search_kept(
        &self,
        query: &str,
        limit: usize,
        explain: bool,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Result<Vec<Hit>, IndexError> {
        let (groups, corrected) = self.groups(query);
        self.check_lists(groups.iter().flat_map(|g| g.terms.iter().map(|t| t.0)))?;
        let (mut scores, matched) = self.word_scores(&groups);
        let boosts = self.add_boosts(query, &mut scores, &groups, &corrected);
        // Coverage: a tool that answers every word of the task outranks one that answers
        // a single word very well (`edit a text file`: an editor, not every `… edit`
        // subcommand).
        if groups.len() > 1 {
            let all = groups.len() as f32;
            for (s, &m) in scores.iter_mut().zip(&matched) {
                if *s > 0.0 {
                    *s *= 1.0 - COVERAGE + COVERAGE * m / all;
                }
            }
        }
        self.out_of_context(&mut scores, &groups);
        let ranked: Vec<(usize, f32)> = self
            .by_family(&mut scores, &boosts)
            .into_iter()
            .filter(|&(doc, _)| keep(doc))
            .take(limit)
            .collect();
        let aliases = self.aliases(&ranked[..ranked.len().min(ALIASED)]);
        Ok(ranked
            .into_iter()
            .enumerate()
            .map(|(i, (doc, score))| Hit {
                doc,
                score,
                why: if explain {
                    self.explain(doc, &groups, boosts[doc])
                } else {
                    Vec::new()
                },
                aliases: aliases.get(i).cloned().unwrap_or_default(),
            })
            .collect())
    }

    /// Per tool, the sum over query words of the word's best reading's BM25 score, and
    /// how much of the task it covers: a word met only in an option's text, or through
    /// a loose synonym, covers it in part.
    fn word_scores(&self, groups: &[Group]) -> (Vec<f32>, Vec<f32>) {
        let n = self.len();
        let mut scores = vec![0f32; n];
        let mut best = vec![0f32; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut matched = vec![0f32; n];
        for g in groups {
            for &(id, w, _) in &g.terms {
                let idf = self.idf(id).min(g.idf_cap);
                for (doc, tf) in self.postings(id) {
                    if doc as usize >= n {
                        continue;
                    }
                    let s = w * idf * Self::saturate(tf);
                    let e = &mut best[doc as usize];
                    if *e == 0.0 {
                        touched.push(doc);
                    }
                    *e = e.max(s);
                }
            }
            for doc in touched.drain(..) {
                let b = best[doc as usize];
                scores[doc as usize] += b;
                best[doc as usize] = 0.0;
                matched[doc as usize] += (b / COVERED).min(1.0);
            }
        }
        (scores, matched)
    }

    /// Adds each found tool's name boost ([`SearchIndex::boost`]) to its score; returns
    /// the boosts, by tool.
    fn add_boosts(
        &self,
        query: &str,
        scores: &mut [f32],
        groups: &[Group],
        corrected: &[String],
    ) -> Vec<f32> {
        let q = corrected.join(" ");
        let raw_q = text::query_words(query).join(" ");
        let (q_prefix, raw_prefix) = (format!("{q} "), format!("{raw_q} "));
        let mut boosts = vec![0f32; scores.len()];
        if q.is_empty() {
            return boosts;
        }
        for (doc, s) in scores.iter_mut().enumerate() {
            if *s > 0.0 {
                boosts[doc] = self.boost(
                    doc,
                    [&q, &raw_q],
                    [&q_prefix, &raw_prefix],
                    groups,
                    corrected,
                );
                *s += boosts[doc];
            }
        }
        boosts
    }

    /// A subcommand is found in its tool's domain: one whose tool (its name, what the
    /// command belongs to) shares no word of the task, as typed or as its typo, prefix,
    /// compound or abbreviation, counts [`OUT_OF_CONTEXT`]. Its inflections and synonyms
    /// are too loose a tie (`running` processes are not about `run`ning containers).
    fn out_of_context(&self, scores: &mut [f32], groups: &[Group]) {
        let t = self.t();
        for (doc, s) in scores.iter_mut().enumerate() {
            let context = &t.context[doc];
            if *s > 0.0
                && !context.is_empty()
                && !groups.iter().flat_map(|g| &g.terms).any(|&(id, _, how)| {
                    !matches!(how, "variant" | "synonym")
                        && context.binary_search_by(|c| c.to_native().cmp(&id)).is_ok()
                })
            {
                *s *= OUT_OF_CONTEXT;
            }
        }
    }

    /// Priors, then families: each found tool's score times its prior; a family scores
    /// its best member and is shown as the member the query names exactly, else its
    /// leader. Best first, ties by position.
    fn by_family(&self, scores: &mut [f32], boosts: &[f32]) -> Vec<(usize, f32)> {
        let t = self.t();
        let mut by_family: HashMap<u32, (f32, usize), FxBuild> = HashMap::default();
        for (doc, s) in scores.iter_mut().enumerate() {
            if *s <= 0.0 {
                continue;
            }
            *s *= t.prior[doc].to_native();
            let lead = t.family[doc].to_native();
            let e = by_family.entry(lead).or_insert((0.0, lead as usize));
            if *s > e.0 {
                e.0 = *s;
            }
            if boosts[doc] == BOOST_EXACT || boosts[doc] == BOOST_PROGRAM {
                e.1 = doc;
            }
        }
        let mut ranked: Vec<(usize, f32)> = by_family.into_values().map(|(s, d)| (d, s)).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    /// For each ranked tool, the other program names of its family, in index order.
    fn aliases(&self, ranked: &[(usize, f32)]) -> Vec<Vec<String>> {
        let t = self.t();
        let mut out = vec![Vec::new(); ranked.len()];
        if ranked.is_empty() {
            return out;
        }
        let at: HashMap<u32, usize, FxBuild> = ranked
            .iter()
            .enumerate()
            .map(|(i, &(doc, _))| (t.family[doc].to_native(), i))
            .collect();
        for (doc, lead) in t.family.iter().enumerate() {
            if let Some(&i) = at.get(&lead.to_native()) {
                let name = self.program(doc);
                let own = self.program(ranked[i].0);
                if name != own && !out[i].iter().any(|n: &String| n == name) {
                    out[i].push(name.to_string());
                }
            }
        }
        out
    }

    /// BM25's saturation of a (field-normalised, weighted) term frequency.
    fn saturate(tf: f32) -> f32 {
        tf * (K1 + 1.0) / (tf + K1)
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
        } else if self.t().title_words[doc].len() == 1
            && (corrected
                .iter()
                .chain(groups.iter().map(|g| &g.word))
                .any(|w| *w == self.t().title_words[doc][0] && !text::is_plain(w))
                || groups.iter().flat_map(|g| &g.terms).any(|t| {
                    t.2 == "compound" && self.term(t.0) == self.t().title_words[doc][0].as_str()
                }))
        {
            // The task names the program (`compress with bzip2`).
            BOOST_PROGRAM
        } else if groups.iter().zip(corrected).all(|(g, w)| {
            let title = &self.t().title_words[doc];
            let has = |w: &str| title.iter().any(|t| t.as_str() == w);
            has(w)
                || g.terms
                    .iter()
                    .any(|t| matches!(t.2, "abbreviation" | "compound") && has(self.term(t.0)))
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
                if let Some(tf) = self.frequency(id, doc as u32) {
                    let s = w * self.idf(id).min(g.idf_cap) * Self::saturate(tf);
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
            } else if boost == BOOST_PROGRAM {
                "program named"
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
    (0..ix.t().vocab.len() as u32).all(|id| {
        let docs: Vec<u32> = ix.postings(id).map(|(d, _)| d).collect();
        docs.windows(2).all(|w| w[0] < w[1])
    })
}

/// The index of a catalog's tools as the compiled catalog ranks them: each program gets
/// its task lines (uses.txt) by its registry name, the rest of its facts from the tool.
#[cfg(test)]
fn ranked_as_compiled(catalog: &Catalog) -> SearchIndex {
    let facts: Vec<Facts> = catalog
        .tools()
        .iter()
        .map(|t| Facts {
            uses: Some(t.tool.clone()),
            ..Facts::of(t)
        })
        .collect();
    let mut builder = IndexBuilder::default();
    builder.add_ranked(catalog.tools(), &facts);
    builder.finish()
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
    /// What the answer may lack: configured MCP servers whose tools are not in it (no
    /// cached list, a stale one, an untrusted project file), each named with why, then
    /// the results the policy withheld.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    /// Other names of the same program this result stands for (`egrep`, `rgrep` for
    /// `grep`): the registry keeps them, search shows the program once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<String>,
    /// Schema (top `--schemas` results only); for a command with many options, only
    /// those an agent needs first ([`compact`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// Options left out of `schema` (`atip get` gives them all).
    #[serde(skip_serializing_if = "is_zero")]
    pub omitted_options: usize,
    /// Why it ranked (with `--explain`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Above this many parameters a result's schema is made compact.
pub const COMPACT_OVER: usize = 12;
/// Most options a compact schema keeps for matching the query.
const COMPACT_MATCHING: usize = 8;

/// The tool as a search result shows its schema: unchanged with up to [`COMPACT_OVER`]
/// parameters; else its arguments, its required options and the options whose name or
/// description shares a word (or a word's root) with the query, at most
/// `COMPACT_MATCHING` of those, in schema order. Returns the tool and how many
/// parameters were left out. Calls still take every option: only the answer is short.
pub fn compact<'t>(tool: &'t FlatTool, query: &str) -> (std::borrow::Cow<'t, FlatTool>, usize) {
    use std::borrow::Cow;
    if tool.params.len() <= COMPACT_OVER {
        return (Cow::Borrowed(tool), 0);
    }
    let wanted: Vec<String> = text::query_words(query)
        .iter()
        .map(|w| text::root(w))
        .collect();
    let mut matching = 0;
    let keep: Vec<bool> = tool
        .params
        .iter()
        .map(|p| {
            let (ParamOrigin::Argument { name, .. } | ParamOrigin::Option { name, .. }) = &p.origin;
            if matches!(p.origin, ParamOrigin::Argument { .. }) || p.required {
                return true;
            }
            let hit = text::words(name)
                .iter()
                .chain(text::words(&p.description).iter())
                .any(|w| wanted.contains(&text::root(w)));
            if hit && matching < COMPACT_MATCHING {
                matching += 1;
                return true;
            }
            false
        })
        .collect();
    let mut small = tool.clone();
    let mut kept = keep.iter();
    small.params.retain(|_| *kept.next().unwrap_or(&true));
    if let Some(props) = small
        .input_schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        let names: std::collections::HashSet<&str> =
            small.params.iter().map(|p| p.property.as_str()).collect();
        props.retain(|k, _| names.contains(k.as_str()));
    }
    let omitted = tool.params.len() - small.params.len();
    (Cow::Owned(small), omitted)
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
        notes: Vec::new(),
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
        let (schema, omitted_options) = if rank < opts.schemas {
            let (small, omitted) = compact(t, query);
            (Some(schema_for(&small, opts.format)), omitted)
        } else {
            (None, 0)
        };
        let mut r = SearchResult {
            name: t.name.clone(),
            kind: if server.is_some() { "mcp" } else { "command" },
            server,
            tool: t.tool.clone(),
            command: t.command.clone(),
            score: (f64::from(hit.score) * 1000.0).round() / 1000.0,
            description: t.description.clone(),
            aliases: hit.aliases,
            schema,
            omitted_options,
            why: hit.why,
        };
        let mut cost = cost_of(&r);
        if size + cost > opts.max_bytes && r.schema.is_some() {
            r.schema = None;
            r.omitted_options = 0;
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

    fn tool(name: &str, description: &str, options: &[(&str, &str)]) -> Metadata {
        let opts: Vec<Value> = options
            .iter()
            .map(|(n, d)| json!({"name": n, "flags": [format!("--{n}")], "type": "boolean", "description": d}))
            .collect();
        Metadata::from_value(json!({"atip": "0.4", "name": name, "version": "1",
            "description": description, "globalOptions": opts}))
        .unwrap()
    }

    #[test]
    fn task_lines_find_a_program_by_what_people_use_it_for() {
        // Descriptions as the manual pages put them: none says "executable file" the way
        // a person asks for it, two others say it better by their words alone.
        let metas = [
            tool("chmod", "change file mode bits", &[]),
            tool(
                "gzexe",
                "compress executable files in place",
                &[(
                    "decompress",
                    "make a compressed executable file plain again",
                )],
            ),
            tool("mknod", "make block or character special files", &[]),
            // The tool-call form of `c++filt`: its lines are the registry name's.
            tool("c__filt", "filter symbols", &[]),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let registry_name = |t: &FlatTool| {
            if t.tool == "c__filt" {
                "c++filt".to_string()
            } else {
                t.tool.clone()
            }
        };
        let index = |uses: bool| {
            let facts: Vec<Facts> = c
                .tools()
                .iter()
                .map(|t| Facts {
                    uses: uses.then(|| registry_name(t)),
                    ..Facts::of(t)
                })
                .collect();
            let mut b = IndexBuilder::default();
            b.add_ranked(c.tools(), &facts);
            b.finish()
        };
        let first = |ix: &SearchIndex, q: &str| {
            let hits = ix.search(q, 1, false);
            hits.first()
                .map_or(String::new(), |h| c.tools()[h.doc].tool.clone())
        };
        let (plain, curated) = (index(false), index(true));
        // Without task lines (an MCP server's tools, a file's) the text alone ranks.
        assert_ne!(first(&plain, "make a file executable"), "chmod");
        assert_eq!(first(&curated, "make a file executable"), "chmod");
        assert_ne!(first(&plain, "demangle names"), "c__filt");
        assert_eq!(first(&curated, "demangle names"), "c__filt");
        // Results show the tool's own description; the lines only rank.
        assert_eq!(
            c.tools()[curated.search("make a file executable", 1, false)[0].doc].summary,
            "change file mode bits"
        );
        // A selection indexed apart from the catalog gets the same lines through the
        // program facts, so it ranks alike.
        let facts = curated.program_facts();
        assert_eq!(facts["c__filt"].uses.as_deref(), Some("c++filt"));
        let apart = SearchIndex::build_with(c.tools(), &facts);
        assert_eq!(first(&apart, "make a file executable"), "chmod");
        assert_eq!(plain.program_facts()["chmod"].uses, None);
    }

    #[test]
    fn a_subcommand_gets_its_own_task_line_and_its_programs_lines_belong_to_it() {
        // `git` is keyed in uses.txt with its commands; `gitx` is not.
        let git = Metadata::from_value(json!({"atip": "0.4", "name": "git", "version": "1",
            "description": "the stupid content tracker",
            "commands": {"commit": {"description": "Record changes to the repository"},
                         "notes": {"description": "Add or inspect object notes"}}}))
        .unwrap();
        let c = Catalog::build(&[git], &FlattenOptions::default());
        let ix = ranked_as_compiled(&c);
        let hits = ix.search("save a snapshot of staged changes", 2, true);
        assert_eq!(c.tools()[hits[0].doc].name, "git_commit", "{hits:?}");
        // `notes` has no line of its own; git's own line ("version control …") is what
        // it belongs to, so it is found by it, below the command whose line it is.
        let hits = ix.search("version control clone a repository", 2, false);
        assert_eq!(hits.len(), 2);
        // The program's lines do not put a subcommand in a task's domain: its context
        // is still the tool's name and what the tool says of itself.
        let t = ix.t();
        let notes = c
            .tools()
            .iter()
            .position(|t| t.name == "git_notes")
            .unwrap();
        let clone = ix.id("clone").unwrap();
        assert!(!t.context[notes].iter().any(|i| i.to_native() == clone));
    }

    #[test]
    fn a_family_is_one_result_naming_its_aliases() {
        let metas = [
            tool("egrep", "print lines that match patterns", &[]),
            tool("grep", "print lines that match patterns", &[]),
            tool("wc", "print newline, word, and byte counts", &[]),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let facts: Vec<Facts> = c
            .tools()
            .iter()
            .map(|t| Facts {
                prior: 1.0,
                family: if t.tool == "wc" {
                    "wc".into()
                } else {
                    "grep".into()
                },
                uses: None,
            })
            .collect();
        let mut b = IndexBuilder::default();
        b.add_ranked(c.tools(), &facts);
        let ix = b.finish();
        let hits = ix.search("print lines matching patterns", 5, false);
        let names: Vec<&str> = hits
            .iter()
            .map(|h| c.tools()[h.doc].name.as_str())
            .collect();
        assert_eq!(names, ["grep", "wc"]);
        assert_eq!(hits[0].aliases, ["egrep"]);
        // A query naming an alias exactly shows that alias.
        let hits = ix.search("egrep", 5, false);
        assert_eq!(c.tools()[hits[0].doc].name, "egrep");
        assert_eq!(hits[0].aliases, ["grep"]);
        // A selection indexed apart, with the facts the catalog's index holds, ranks and
        // groups as it does (`atip search --tools`, chat, MCP tools mixed in).
        let apart = SearchIndex::build_with(c.tools(), &ix.program_facts());
        for q in ["print lines matching patterns", "egrep", "count"] {
            assert_eq!(apart.search(q, 5, false), ix.search(q, 5, false), "{q}");
        }
        // Without facts every program is its own result.
        let plain = SearchIndex::build(c.tools());
        assert_eq!(
            plain
                .search("print lines matching patterns", 5, false)
                .len(),
            3
        );
    }

    #[test]
    fn plain_words_do_not_name_programs_compounds_join_and_words_count_once() {
        let metas = [
            tool("last", "show a listing of last logged in users", &[]),
            tool("tail", "output the last part of files", &[]),
            tool("bzip2", "a block-sorting file compressor", &[]),
            tool("gzip", "compress or expand files", &[]),
            tool("hostname", "show or set the system's host name", &[]),
            tool("uname", "print system information", &[]),
            tool("sdiff", "side-by-side merge of file differences", &[]),
            tool("paste", "merge lines of files", &[]),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let ix = SearchIndex::build(c.tools());
        let first = |q: &str| c.tools()[ix.search(q, 1, false)[0].doc].name.clone();
        let named = |q: &str, program: &str| {
            ix.search(q, 10, true)
                .iter()
                .find(|h| c.tools()[h.doc].name == program)
                .is_some_and(|h| h.why.iter().any(|w| w.starts_with("program named")))
        };
        // `last` is an everyday word here, not the program; `bzip2` names its program.
        assert!(!named("show the last lines of a file", "last"));
        assert!(named("compress a file with bzip2", "bzip2"));
        assert_eq!(first("compress a file with bzip2"), "bzip2");
        // `host name` is the index's `hostname`, the program's name too.
        assert_eq!(first("show the host name"), "hostname");
        let why = ix.search("show the host name", 1, true)[0].why.join("; ");
        assert!(why.contains("compound"), "{why}");
        // `side by side` asks about sides once.
        assert_eq!(first("merge lines of files side by side"), "paste");
    }

    #[test]
    fn a_subcommand_outside_its_tools_domain_yields_to_standalone_programs() {
        // The same command text twice: `docker top` and a standalone program.
        let docker = Metadata::from_value(json!({"atip": "0.4", "name": "docker", "version": "1",
            "description": "Docker CLI: build and manage containers",
            "commands": {"top": {"description": "Display the running processes"},
                         "ps": {"description": "List containers"}}}))
        .unwrap();
        let metas = [
            docker,
            tool("dtop", "Display the running processes", &[]),
            tool("ls", "list directory contents", &[]),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let ix = SearchIndex::build(c.tools());
        let scores = |q: &str| {
            let hits = ix.search(q, 10, false);
            let of = |n: &str| {
                hits.iter()
                    .find(|h| c.tools()[h.doc].name == n)
                    .unwrap()
                    .score
            };
            (of("docker_top"), of("dtop"))
        };
        // Nothing of the task is docker's: the subcommand counts for less.
        let (sub, standalone) = scores("display running processes");
        assert!(sub < standalone * 0.9, "{sub} {standalone}");
        // A task in docker's domain (its name, or a word of its description) keeps it.
        let (sub, standalone) = scores("display running processes of a docker container");
        assert!(sub > standalone, "{sub} {standalone}");
        let (sub, standalone) = scores("display running processes in containers");
        assert!(sub > standalone, "{sub} {standalone}");
    }

    /// A stored index (tables, then posting lists, in one shared buffer as in a catalog
    /// file) with the posting list of each term in `damaged` flipped.
    fn stored(ix: &SearchIndex, damaged: &[&str]) -> SearchIndex {
        let tables = ix.bytes();
        let at = tables.len().next_multiple_of(crate::archive::ALIGN);
        let mut buf = crate::archive::Bytes::new();
        buf.extend_from_slice(tables);
        buf.resize(at, 0);
        buf.extend_from_slice(ix.postings_bytes());
        for word in damaged {
            let list = &ix.t().lists[ix.id(word).unwrap() as usize];
            buf[at + list.at.to_native() as usize] ^= 1;
        }
        let end = buf.len();
        SearchIndex::from_shared(std::sync::Arc::new(buf), 0..tables.len(), at..end).unwrap()
    }

    #[test]
    fn a_stored_index_checks_the_posting_lists_a_query_reads_and_only_those() {
        let c = catalog();
        let ix = SearchIndex::build(c.tools());
        let want = ix.search("merge pull request", 3, true);
        assert!(!want.is_empty());
        let sound = stored(&ix, &[]);
        assert_eq!(
            sound
                .search_kept("merge pull request", 3, true, |_| true)
                .unwrap(),
            want
        );
        // Damage in a list no query word reads does not stop the search.
        let elsewhere = stored(&ix, &["clone"]);
        assert_eq!(
            elsewhere
                .search_kept("merge pull request", 3, true, |_| true)
                .unwrap(),
            want
        );
        // Damage in a list it reads is an error, never another answer.
        let damaged = stored(&ix, &["merge"]);
        let e = damaged
            .search_kept("merge pull request", 3, true, |_| true)
            .unwrap_err();
        assert!(matches!(e, IndexError::Postings(_)), "{e}");
        // Found once, said again.
        assert!(damaged.search_kept("merge", 3, false, |_| true).is_err());
        assert!(elsewhere.search_kept("clone", 3, false, |_| true).is_err());
    }

    #[test]
    fn a_stored_index_whose_postings_lie_past_the_buffer_is_refused() {
        let ix = SearchIndex::build(catalog().tools());
        let tables = ix.bytes();
        let mut buf = crate::archive::Bytes::new();
        buf.extend_from_slice(tables);
        let end = buf.len();
        assert!(SearchIndex::from_shared(std::sync::Arc::new(buf), 0..end, end..end + 8).is_err());
    }

    #[test]
    fn search_kept_gives_a_withheld_tools_place_to_the_next() {
        let c = catalog();
        let ix = SearchIndex::build(c.tools());
        let all = ix.search("create a repository", 10, false);
        assert!(all.len() >= 3, "{all:?}");
        let first = all[0].doc;
        let kept = ix
            .search_kept("create a repository", 2, false, |d| d != first)
            .unwrap();
        assert_eq!(kept, all[1..3]);
    }

    #[test]
    fn priors_order_equal_texts_and_option_volume_does_not_win() {
        let many: Vec<(String, String)> = (0..150)
            .map(|i| {
                (
                    format!("opt{i}"),
                    format!("count lines of input number {i}"),
                )
            })
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let metas = [
            tool("bigtool", "the big tool that does everything", &many),
            tool(
                "wc",
                "count lines, words and bytes",
                &[("lines", "print the newline counts")],
            ),
            tool(
                "xc",
                "count lines, words and bytes",
                &[("lines", "print the newline counts")],
            ),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let facts: Vec<Facts> = c
            .tools()
            .iter()
            .map(|t| Facts {
                prior: if t.tool == "xc" { 1.15 } else { 1.0 },
                family: t.tool.clone(),
                uses: None,
            })
            .collect();
        let mut b = IndexBuilder::default();
        b.add_ranked(c.tools(), &facts);
        let ix = b.finish();
        let names: Vec<&str> = ix
            .search("count lines in a file", 3, false)
            .iter()
            .map(|h| c.tools()[h.doc].name.as_str())
            .collect();
        assert_eq!(names, ["xc", "wc", "bigtool"]);
    }

    #[test]
    fn covering_the_task_beats_one_word_in_a_name_and_a_named_program_leads() {
        let metas = [
            Metadata::from_value(json!({"atip": "0.4", "name": "gh", "version": "1",
                "description": "GitHub CLI", "commands": {"issue": {"description": "Issues",
                "commands": {"edit": {"description": "Edit an issue: title, body, labels."}}}}}))
            .unwrap(),
            tool("vim", "Vi IMproved, a programmer's text editor", &[]),
            tool("bzcmp", "compare bzip2 compressed files", &[]),
            tool("bzip2", "a block-sorting file compressor", &[]),
        ];
        let c = Catalog::build(&metas, &FlattenOptions::default());
        let ix = SearchIndex::build(c.tools());
        let first = |q: &str| c.tools()[ix.search(q, 1, false)[0].doc].name.clone();
        // `editor` shares `edit`'s root; `vim` covers "edit" and "text", `gh issue edit`
        // only "edit", in its name.
        assert_eq!(first("edit a text file"), "vim");
        assert_eq!(first("compress with bzip2"), "bzip2");
        // What an inferred page's DESCRIPTION says is searched with the NAME line.
        let ld = Metadata::from_value(json!({"atip": "0.6", "name": "ld", "version": "unknown",
            "description": "The GNU linker", "commands": {"": {"description": "The GNU linker"}},
            "x-inferred": {"manPage": "/m/ld.1", "details": "ld combines a number of object and archive files."}}))
        .unwrap();
        let ln = tool("ln", "make links between files", &[]);
        let c2 = Catalog::build(&[ld, ln], &FlattenOptions::default());
        let ix2 = SearchIndex::build(c2.tools());
        assert_eq!(
            c2.tools()[ix2.search("link object files", 1, false)[0].doc].name,
            "ld"
        );
        let why = &ix.search("compress with bzip2", 1, true)[0].why;
        assert!(
            why.iter().any(|w| w.starts_with("program named")),
            "{why:?}"
        );
    }

    #[test]
    fn compact_schemas_keep_arguments_and_matching_options() {
        let many: Vec<(String, String)> = (0..40)
            .map(|i| (format!("opt{i}"), format!("does thing {i}")))
            .chain([(
                "recursive".to_string(),
                "descend into directories".to_string(),
            )])
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let c = Catalog::build(&[tool("big", "a tool", &many)], &FlattenOptions::default());
        let t = &c.tools()[0];
        let (small, omitted) = compact(t, "search directories recursively");
        let props = small.input_schema["properties"].as_object().unwrap();
        assert!(props.contains_key("recursive"), "{props:?}");
        assert_eq!(props.len(), small.params.len());
        assert_eq!(omitted + small.params.len(), t.params.len());
        assert!(omitted >= 40);
        let (same, none) = compact(&c.tools()[0], "");
        assert_eq!(none + same.params.len(), t.params.len());
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
