//! Read-side look-ups for `list` and `get`: filtering entries by glob and source, and
//! loading one tool's stored document with suggestions when the name is unknown.
//!
//! Must not lock or write: these run while scans replace the registry.
