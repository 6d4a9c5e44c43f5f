//! `exec`: runs a model's tool call under policy (being built).
#![allow(clippy::result_large_err)] // AtipError is the crate-wide error; boxing it everywhere buys nothing here.

pub mod args;
pub mod audit;
pub mod calls;
pub mod policy;
pub mod redact;
