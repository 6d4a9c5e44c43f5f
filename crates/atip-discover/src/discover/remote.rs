//! The remote-registry source: shims that registries listed in `registries.json`
//! publish by binary hash, fetched and verified by [`crate::remote::sync`].
//!
//! It wants the hash of every executable whose name some catalog lists, and offers the
//! verified shim filed under that executable's hash. Its candidates rank below every
//! local shim layer ([`super::resolve::PRECEDENCE`]): an admin's or user's own shim
//! wins. Who vouches is recorded by the source, not derived from a directory: a shim
//! signed by a key in the registry's `publicKeys` is vouched for by the user who
//! listed the key; an unsigned one by nobody (`inferred`).
//!
//! Must not run anything or write anything (the fetching happened before).

use super::source::{Candidate, Doc, MetadataSource, SourceFailure, Subject, trust_or};
use crate::registry::{Source, Vouch};
use crate::remote::sync::Remote;

/// What a scan records as the `shimRegistry` of an entry from the registry `name`.
pub(crate) fn registry_label(name: &str) -> String {
    format!("remote:{name}")
}

impl MetadataSource for Remote {
    fn id(&self) -> &'static str {
        "remote"
    }

    fn needs_hash(&self, subject: &Subject<'_>) -> bool {
        self.lists_name(subject.name)
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(hex) = subject.hex() else { return };
        let Some((name, shim)) = self.ready(hex) else {
            return;
        };
        let mut warnings = Vec::new();
        if let Some(t) = &shim.tool
            && t != subject.name
        {
            warnings.push(format!(
                "the remote shim {} describes {t:?}; it is registered under the executable name {:?}",
                shim.path.display(),
                subject.name
            ));
        }
        let vouch = if shim.signer.is_some() {
            Vouch::User
        } else {
            Vouch::Inferred
        };
        out.push(Candidate {
            source: Source::Remote,
            by_hash: true,
            doc: Doc::File(shim.path.clone()),
            identity: format!(
                "remote:{name}:{hex}:{}:{}",
                shim.doc,
                shim.signer.as_deref().unwrap_or("unsigned")
            ),
            trust: trust_or(shim.trust.as_deref(), "community"),
            origin: Some(shim.path.clone()),
            shim_registry: Some(registry_label(name)),
            warnings,
            vouch: Some(vouch),
        });
    }

    fn failures(&self) -> Vec<SourceFailure> {
        self.failed()
            .into_iter()
            .map(|(name, message)| SourceFailure {
                source: "remote",
                message: format!("remote registry {name}: {message}"),
                class: vec![Source::Remote],
                registry: Some(registry_label(&name)),
            })
            .collect()
    }
}
