//! The one place a scan chooses which metadata a name gets.
//!
//! Every [`super::source::MetadataSource`] offers candidates; `choose` orders them by
//! [`PRECEDENCE`] (then a content-hash look-up before a name look-up of the same class,
//! then offer order) and takes the first. Every other candidate is kept with the reason
//! it lost, for the report and `atip scan --explain`.
//!
//! A stored registry entry whose source failed this scan (I/O error, unreadable
//! directory) is kept as it is unless a candidate of strictly higher precedence exists:
//! a source that could not be read never makes a tool vanish.
//!
//! Must not read or run anything.

use super::source::{Candidate, SourceFailure};
use crate::registry::{Entry, Source};

/// Source classes, highest precedence first (`spec/scan.md` §3 "Precedence"):
/// the tool's own answer, then the user's override, then metadata its package installed
/// beside it, then a document converted from the tool's framework manifest, then shims
/// (content-addressed before name-keyed), then shims fetched from remote registries
/// (below every local shim layer: an admin's or user's own shim wins), and last what
/// atip inferred from the man page.
pub const PRECEDENCE: [Source; 8] = [
    Source::Native,
    Source::Override,
    Source::Installed,
    Source::Converted,
    Source::ShimHash,
    Source::Shim,
    Source::Remote,
    Source::Inferred,
];

/// Position of a source class in [`PRECEDENCE`] (lower wins).
pub(crate) fn rank(s: Source) -> usize {
    PRECEDENCE
        .iter()
        .position(|p| *p == s)
        .unwrap_or(PRECEDENCE.len())
}

/// What a name gets.
#[derive(Debug)]
pub enum Outcome {
    /// Nothing offers metadata: the name is not registered.
    Nothing,
    /// This candidate wins.
    Winner(Candidate),
    /// The stored entry is kept because the source that provided it failed this scan.
    Kept {
        /// The stored entry.
        entry: Entry,
        /// Why (the failure's message).
        why: String,
    },
}

/// The decision for one name, with the candidates that lost and why.
#[derive(Debug)]
pub struct Resolution {
    /// What the name gets.
    pub outcome: Outcome,
    /// Candidates that lost, with the reason.
    pub losers: Vec<(Candidate, String)>,
}

fn order(c: &Candidate) -> (usize, bool) {
    (rank(c.source), !c.by_hash)
}

fn label(c: &Candidate) -> String {
    let how = if c.by_hash { " (by content hash)" } else { "" };
    format!("{}{how}", source_name(c.source))
}

/// The registry spelling of a source class.
pub(crate) fn source_name(s: Source) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// Chooses one name's metadata. `stored` is the name's registry entry before this scan;
/// `failures` the sources that failed this scan. `candidates` is left empty (a scan
/// passes one list for every name, allocated once).
pub(crate) fn choose(
    candidates: &mut Vec<Candidate>,
    stored: Option<&Entry>,
    failures: &[SourceFailure],
) -> Resolution {
    // Stable: equal keys keep offer order.
    candidates.sort_by_key(order);
    let kept = stored.and_then(|e| {
        let failure = failures.iter().find(|f| f.provided(e))?;
        let beaten = candidates
            .first()
            .is_some_and(|c| rank(c.source) < rank(e.source));
        (!beaten).then(|| (e.clone(), failure.message.clone()))
    });
    if let Some((entry, why)) = kept {
        let losers = candidates
            .drain(..)
            .map(|c| {
                let r = format!(
                    "the stored {} entry is kept: its source failed this scan",
                    source_name(entry.source)
                );
                (c, r)
            })
            .collect();
        return Resolution {
            outcome: Outcome::Kept { entry, why },
            losers,
        };
    }
    let mut it = candidates.drain(..);
    let Some(winner) = it.next() else {
        return Resolution {
            outcome: Outcome::Nothing,
            losers: Vec::new(),
        };
    };
    let losers = it
        .map(|c| {
            let r = if order(&c) == order(&winner) {
                format!("a higher layer's {} wins", label(&winner))
            } else {
                format!("{} outranks {}", label(&winner), label(&c))
            };
            (c, r)
        })
        .collect();
    Resolution {
        outcome: Outcome::Winner(winner),
        losers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::source::Doc;
    use std::sync::Arc;

    fn cand(source: Source, by_hash: bool, id: &str) -> Candidate {
        Candidate {
            source,
            by_hash,
            doc: Doc::Bytes(Arc::from(&b"{}"[..])),
            identity: id.into(),
            trust: "community".into(),
            origin: None,
            shim_registry: Some("/shims".into()),
            warnings: Vec::new(),
            vouch: None,
        }
    }

    fn entry(source: Source, reg: &str) -> Entry {
        serde_json::from_value(serde_json::json!({
            "path": "/bin/x", "hash": format!("sha256:{}", "0".repeat(64)),
            "source": source, "shimRegistry": reg, "lastChecked": "2026-01-01T00:00:00Z",
            "description": "x", "atip": "0.6", "trust": "community",
            "effects": "unknown", "commands": 1,
            "metadata": format!("tools/{}.json", "0".repeat(64)),
        }))
        .unwrap()
    }

    #[test]
    fn precedence_decides_in_one_order() {
        let r = choose(
            &mut vec![
                cand(Source::Shim, false, "shim"),
                cand(Source::Installed, false, "installed"),
                cand(Source::Override, false, "ov-name"),
                cand(Source::Override, true, "ov-hash"),
                cand(Source::ShimHash, true, "shim-hash"),
            ],
            None,
            &[],
        );
        let Outcome::Winner(w) = r.outcome else {
            panic!("no winner")
        };
        assert_eq!(w.identity, "ov-hash");
        let losers: Vec<&str> = r.losers.iter().map(|(c, _)| c.identity.as_str()).collect();
        assert_eq!(losers, ["ov-name", "installed", "shim-hash", "shim"]);
        assert!(r.losers[1].1.contains("outranks"), "{:?}", r.losers);
        // Native beats everything.
        let r = choose(
            &mut vec![
                cand(Source::Override, true, "o"),
                cand(Source::Native, false, "n"),
            ],
            None,
            &[],
        );
        assert!(matches!(r.outcome, Outcome::Winner(ref c) if c.identity == "n"));
        assert!(matches!(
            choose(&mut vec![], None, &[]).outcome,
            Outcome::Nothing
        ));
    }

    #[test]
    fn a_failed_source_keeps_its_entry_unless_outranked() {
        let failed = SourceFailure {
            source: "shims",
            message: "cannot read /shims".into(),
            class: vec![Source::Shim, Source::ShimHash],
            registry: Some("/shims".into()),
        };
        let stored = entry(Source::Shim, "/shims");
        let r = choose(&mut vec![], Some(&stored), std::slice::from_ref(&failed));
        assert!(matches!(r.outcome, Outcome::Kept { .. }));
        // A lower or equal candidate does not replace it…
        let r = choose(
            &mut vec![cand(Source::Shim, false, "other")],
            Some(&stored),
            std::slice::from_ref(&failed),
        );
        assert!(matches!(r.outcome, Outcome::Kept { .. }));
        assert_eq!(r.losers.len(), 1);
        // …a native answer does.
        let r = choose(
            &mut vec![cand(Source::Native, false, "n")],
            Some(&stored),
            std::slice::from_ref(&failed),
        );
        assert!(matches!(r.outcome, Outcome::Winner(_)));
        // An entry from another shim dir is not the failed source's.
        let other = entry(Source::Shim, "/elsewhere");
        let r = choose(&mut vec![], Some(&other), &[failed]);
        assert!(matches!(r.outcome, Outcome::Nothing));
    }
}
