//! One file per subcommand: its clap arguments and a `run` that calls the library.
pub mod agent;
pub mod chat;
pub mod diff;
pub mod doctor;
pub mod exec;
pub mod export;
pub mod get;
pub mod lint;
pub mod list;
pub mod mcp;
pub mod registry;
pub mod scan;
pub mod search;
pub mod sync;
pub mod usage;
pub mod validate;
