//! atip: the toolchain of the Agent Tool Introspection Protocol.
//!
//! A pipeline of library modules: `discover` finds tools, `validate` checks their
//! metadata, `registry` stores it atomically, `compile` turns it into model-provider tool
//! schemas, `search` ranks it, `exec` and `mcp` run tool calls under policy, `chat` runs the whole tool loop against a
//! model endpoint. The binary in
//! `src/main.rs` is a thin layer over these.
#![warn(missing_docs)]

pub mod archive;
pub mod atomic;
pub mod catalog;
pub mod chat;
pub mod compile;
pub mod diff;
pub mod digest;
pub mod dirs;
pub mod discover;
pub mod exec;
pub mod from_clap;
pub mod infer;
pub mod lint;
pub mod mcp;
pub mod model;
pub mod output;
pub mod process;
pub mod registry;
pub mod remote;
pub mod schema;
pub mod search;
pub mod similar;
pub mod timestamp;
pub mod units;
pub mod validate;
