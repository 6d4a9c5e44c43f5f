//! atip's integration tests, as one binary (`autotests = false` in Cargo.toml): one
//! module per area, each running the real `atip` binary or the library against real
//! files and real child processes in temp dirs. Shared helpers live in `common`.
//!
//! A new test file `tests/NAME.rs` needs a `mod NAME;` line here.

mod common;

mod agent;
mod at_run;
mod calls;
mod catalog;
mod chat;
mod contract;
mod damaged;
mod diff;
mod effects;
mod effects_table;
mod errors;
mod exec;
mod export;
mod export_props;
mod functions;
mod infer_quality;
mod infer_scan;
mod layers;
mod lifetime;
mod lint;
mod mcp;
mod mcp_bounds;
mod mcp_cli;
mod mcp_client;
mod mcp_http;
mod mcp_install;
mod mcp_scale;
mod policy_rfc;
mod process;
mod registry;
mod remote;
mod runners;
mod safety;
mod scan;
mod scan_sources;
mod scan_tooli;
mod search;
mod shell;
mod shims;
mod terminal;
mod trust;
mod validate;
mod validate_fuzz;
mod withheld;
