//! atip: the toolchain of the Agent Tool Introspection Protocol.
//!
//! A pipeline of library modules: `discover` finds tools, `validate` checks their
//! metadata, `registry` stores it atomically, `compile` turns it into model-provider tool
//! schemas, `search` ranks it, `exec` and `mcp` run tool calls under policy, `chat` runs
//! the whole tool loop against a model endpoint. The binary in `src/main.rs` is a thin
//! layer over these.
//!
//! # The public surface
//!
//! What a tool author or an agent host embeds; the rest of the crate is the `atip`
//! binary's and may change without notice.
//!
//! | module | for |
//! |---|---|
//! | [`model`] | ATIP metadata as Rust types ([`model::Metadata`]): parse, walk commands, effects |
//! | [`from_clap`] | a clap CLI's `--agent` answer, built from its `clap::Command` ([`from_clap::FromClap`]) |
//! | [`validate`] | check a document against the schemas and rules ([`validate::check_bytes`]) |
//! | [`lint`] | the quality rules beyond validity ([`lint::lint_bytes`]) |
//! | [`registry`] | read the registry a scan wrote ([`registry::Index::load`], [`registry::Index::read_metadata`], [`registry::query::get_tool`]) |
//! | [`dirs`] | where the registry, config and state live ([`dirs::Dirs::resolve`]) |
//! | [`compile`] | documents → flattened tools ([`compile::Catalog::build`]) → provider schemas ([`compile::Exporter`]) |
//! | [`search`] | rank a catalog's tools for a query ([`search::search`], [`search::SearchIndex`]) |
//! | [`exec`] | run model tool calls under policy: [`exec::Engine::load`], [`exec::Engine::prepare`], [`exec::Engine::run`], batches with [`exec::run_batch`] |
//! | [`output`] | errors ([`output::AtipError`], [`output::ErrorCode`]) with their exit codes |
//!
//! ```no_run
//! // Validate a tool's `--agent` answer, then offer its commands as OpenAI tools.
//! let bytes = std::fs::read("gh.json").unwrap();
//! let checked = atip::validate::check_bytes(&bytes, None, None);
//! assert!(checked.is_valid());
//! let meta = atip::model::Metadata::from_value(serde_json::from_slice(&bytes).unwrap()).unwrap();
//! let catalog = atip::compile::Catalog::build(&[meta], &Default::default());
//! let tools = atip::compile::formats::flat(catalog.tools());
//! let schemas = atip::compile::formats::render(&tools, atip::compile::Format::Openai);
//! println!("{schemas}");
//! ```
//!
//! The modules marked hidden (`discover`, `mcp`, `chat`, `remote`, `infer`, `diff`,
//! `catalog`, `process`, `atomic`, `digest`, …) are public only because the binary is a
//! separate crate that uses them.
//!
//! Each module lives in the crate of its layer (`crates/atip-*`, see `spec/architecture.md`);
//! this crate re-exports them under the names users import.
#![warn(missing_docs)]

#[doc(hidden)]
pub use atip_base::archive;
#[doc(hidden)]
pub use atip_base::atomic;
#[doc(hidden)]
pub use atip_base::digest;
pub use atip_base::dirs;
/// The run's environment snapshot: library code reads variables only from it.
pub use atip_base::env;
#[doc(hidden)]
pub use atip_base::fileio;
pub use atip_base::output;
#[doc(hidden)]
pub use atip_base::similar;
#[doc(hidden)]
pub use atip_base::statat;
#[doc(hidden)]
pub use atip_base::timestamp;
#[doc(hidden)]
pub use atip_base::units;
#[doc(hidden)]
pub use atip_catalog as catalog;
#[doc(hidden)]
pub use atip_chat as chat;
pub use atip_compile as compile;
#[doc(hidden)]
pub use atip_discover::discover;
#[doc(hidden)]
pub use atip_discover::infer;
#[doc(hidden)]
pub use atip_discover::remote;
pub use atip_exec as exec;
#[doc(hidden)]
pub use atip_lint::diff;
pub use atip_lint::from_clap;
pub use atip_lint::lint;
#[doc(hidden)]
pub use atip_mcp as mcp;
pub use atip_model::model;
#[doc(hidden)]
pub use atip_model::schema;
pub use atip_model::validate;
/// The one async runtime and HTTP client factory.
pub use atip_net as net;
#[doc(hidden)]
pub use atip_process as process;
pub use atip_registry as registry;
pub use atip_search as search;
