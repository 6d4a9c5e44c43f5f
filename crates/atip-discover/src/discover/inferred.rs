//! The man-page inference source (`inferred`, the lowest precedence): a document read
//! from the name's installed manual page by [`crate::infer`], for executables no other
//! source describes. Its documents state no effects, so the policy asks before running
//! any inferred command.
//!
//! The work (finding pages, reading and parsing them, validating the documents) happens
//! before the offers, in parallel, in `crate::infer::source::InferSource::look_up` and `infer_pending`;
//! `offer` only hands out what was prepared.

use super::source::{Candidate, Doc, MetadataSource, Subject};
use crate::infer::source::InferSource;
use crate::registry::Source;

/// The inference source for one scan.
pub struct Inferred {
    /// Prepared documents and the cache.
    pub src: InferSource,
}

impl MetadataSource for Inferred {
    fn id(&self) -> &'static str {
        "inferred"
    }

    fn needs_hash(&self, _: &Subject<'_>) -> bool {
        false // a man page describes a name, not bytes
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(crate::infer::source::Offered { sha, doc, page }) = self.src.offer(subject.name)
        else {
            return;
        };
        out.push(Candidate {
            source: Source::Inferred,
            by_hash: false,
            doc: match doc {
                Ok(path) => Doc::Checked {
                    path: path.to_owned(),
                    sha: sha.to_owned(),
                },
                Err(bytes) => Doc::Bytes(bytes),
            },
            identity: format!("inferred:{sha}"),
            trust: "inferred".to_owned(),
            origin: Some(page.to_owned()),
            shim_registry: None,
            warnings: Vec::new(),
            vouch: None,
        });
    }
}
