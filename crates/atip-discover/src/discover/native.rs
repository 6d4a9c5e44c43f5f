//! The native source: a tool's own valid `--agent` answer, as the probe phase left it in
//! the executable's cache record ([`super::cache::ProbeRecord::Native`]).
//!
//! The answer's bytes are read from `<data-dir>/cache/native/<hex>.json`, or from memory
//! when this scan could not store them (a full disk must not cost a tool its entry).
//!
//! Must not run anything: probing happens before, in `super::probe`.

use super::cache::{self, ProbeRecord};
use super::source::{Candidate, Doc, MetadataSource, Subject, trust_or};
use crate::registry::Source;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Native answers, as a [`MetadataSource`].
pub struct Native<'a> {
    /// The data dir holding `cache/native/`.
    pub data: &'a Path,
    /// Answers of this scan that could not be stored, by sha256 hex.
    pub unstored: &'a HashMap<String, Arc<[u8]>>,
}

impl MetadataSource for Native<'_> {
    fn id(&self) -> &'static str {
        "probe"
    }

    fn needs_hash(&self, subject: &Subject<'_>) -> bool {
        matches!(
            subject.record.probe.as_deref(),
            Some(ProbeRecord::Native { .. })
        )
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(ProbeRecord::Native {
            doc,
            warnings,
            trust,
        }) = subject.record.probe.as_deref()
        else {
            return;
        };
        let body = match self.unstored.get(doc) {
            Some(bytes) => Doc::Bytes(bytes.clone()),
            None => Doc::File(cache::native_doc_file(self.data, doc)),
        };
        out.push(Candidate {
            source: Source::Native,
            by_hash: false,
            doc: body,
            identity: format!("native:{doc}"),
            trust: trust_or(trust.as_deref(), "native"),
            origin: None,
            shim_registry: None,
            warnings: warnings.clone(),
            vouch: None,
        });
    }
}
