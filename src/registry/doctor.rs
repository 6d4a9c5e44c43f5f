//! Health checks over the registry for `atip doctor`.
//!
//! Must not lock or write.
