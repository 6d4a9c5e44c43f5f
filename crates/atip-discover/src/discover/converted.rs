//! The converted source: ATIP metadata atip made from an agent-CLI framework's own
//! manifest (a Tooli app's, see [`super::framework`]), as the conversion left it in the
//! executable's cache record ([`super::cache::FileRecord::convert`]).
//!
//! Ranked below native answers and installed metadata and above shims
//! ([`super::resolve::PRECEDENCE`]): the app's author stated it, atip translated it.
//!
//! Must not run anything: conversion happens before, in the probe phase.

use super::cache::{self, ProbeRecord};
use super::source::{Candidate, Doc, MetadataSource, Subject, trust_or};
use crate::registry::Source;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Converted documents, as a [`MetadataSource`].
pub struct Converted<'a> {
    /// The data dir holding `cache/native/`.
    pub data: &'a Path,
    /// Documents of this scan that could not be stored, by sha256 hex.
    pub unstored: &'a HashMap<String, Arc<[u8]>>,
}

impl MetadataSource for Converted<'_> {
    fn id(&self) -> &'static str {
        "convert"
    }

    fn needs_hash(&self, subject: &Subject<'_>) -> bool {
        matches!(
            subject.record.convert.as_deref(),
            Some(ProbeRecord::Native { .. })
        )
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(ProbeRecord::Native {
            doc,
            warnings,
            trust,
        }) = subject.record.convert.as_deref()
        else {
            return;
        };
        let framework = subject
            .record
            .app
            .as_ref()
            .and_then(|a| a.tooli())
            .map(|a| a.dist.clone());
        out.push(Candidate {
            source: Source::Converted,
            by_hash: false,
            doc: match self.unstored.get(doc) {
                Some(bytes) => Doc::Bytes(bytes.clone()),
                None => Doc::File(cache::native_doc_file(self.data, doc)),
            },
            identity: format!("converted:{doc}"),
            trust: trust_or(trust.as_deref(), "vendor"),
            origin: framework,
            shim_registry: None,
            warnings: warnings.clone(),
            vouch: None,
        });
    }
}
