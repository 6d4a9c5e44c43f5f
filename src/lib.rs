//! atip: the toolchain of the Agent Tool Introspection Protocol.
//!
//! A pipeline of library modules (see ARCHITECTURE in the README): `discover` finds tools,
//! `validate` checks their metadata, `registry` stores it atomically, `compile` turns it
//! into model-provider tool schemas, `search` ranks it, `exec` and `mcp` run tool calls
//! under policy. The binary in `src/main.rs` is a thin layer over these.
#![warn(missing_docs)]

pub mod dirs;
pub mod model;
pub mod output;
pub mod process;
pub mod units;
