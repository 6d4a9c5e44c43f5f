//! The man-page inference source (`inferred`, the lowest precedence): a document read
//! from the name's installed manual page by [`crate::infer`], for executables no other
//! source describes. Its documents state no effects, so the policy asks before running
//! any inferred command — except where atip's effects table names the program and the
//! program is root's: then the entry is vouched for as `curated` (spec/infer.md).
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
    /// Directories already judged by `curated::root_owned_in` this scan.
    pub root_dirs: std::sync::Mutex<crate::infer::curated::RootDirs>,
}

impl MetadataSource for Inferred {
    fn id(&self) -> &'static str {
        "inferred"
    }

    fn needs_hash(&self, _: &Subject<'_>) -> bool {
        false // a man page describes a name, not bytes
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(crate::infer::source::Offered {
            sha,
            doc,
            page,
            curated,
            warnings,
        }) = self.src.offer(subject.name)
        else {
            return;
        };
        let mut warnings = warnings;
        // The table knows programs by name: its effects are vouched for only where
        // nobody but root can have put a program of that name.
        let vouch = if !curated {
            None
        } else if crate::infer::curated::root_owned_in(
            subject.canonical,
            Some(subject.owner_mode),
            &mut self.root_dirs.lock().unwrap_or_else(|e| e.into_inner()),
        ) {
            Some(crate::registry::Vouch::Curated)
        } else {
            warnings.push(format!(
                "the effects atip's table gives {} are not vouched for: {} is not in a directory only root can change, so the policy treats them as unknown",
                subject.name,
                subject.canonical.display()
            ));
            None
        };
        out.push(Candidate {
            source: Source::Inferred,
            by_hash: false,
            doc: match doc {
                Ok(path) => Doc::Checked {
                    path,
                    sha: sha.to_owned(),
                },
                Err(bytes) => Doc::Bytes(bytes),
            },
            // Concatenated, not formatted: made for every inferred name on each rescan.
            identity: ["inferred:", sha].concat(),
            trust: "inferred".to_owned(),
            origin: Some(page.to_owned()),
            shim_registry: None,
            warnings,
            vouch,
        });
    }
}
