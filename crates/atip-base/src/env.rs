//! The environment of one run, read once.
//!
//! Library code never reads a process environment variable itself: the binary takes
//! one [`Env`] snapshot at start ([`Env::capture`], the only read of the process
//! environment in atip's library crates) and passes it down, so what a run saw is fixed
//! when it starts, tests hand in exactly the environment they mean, and what a child
//! process gets (the allowlisted variables, a tool's credentials) is data handed to the
//! process layer, not a read at spawn time.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::Arc;

/// A snapshot of environment variables; cheap to clone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    vars: Arc<BTreeMap<OsString, OsString>>,
}

impl Env {
    /// The process environment, now. The one boundary: `main` calls it once (and tests
    /// that mean the real environment); everything else gets the snapshot.
    pub fn capture() -> Env {
        Env::from_pairs(std::env::vars_os())
    }

    /// An environment holding exactly these variables (tests, library users).
    pub fn from_pairs<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Env
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Env {
            vars: Arc::new(
                pairs
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            ),
        }
    }

    /// The variable's value, as the OS gave it.
    pub fn var_os(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        self.vars.get(name.as_ref()).map(OsString::as_os_str)
    }

    /// The variable's value when it is set and valid UTF-8 (as `std::env::var` reads it).
    pub fn var(&self, name: impl AsRef<OsStr>) -> Option<&str> {
        self.var_os(name).and_then(OsStr::to_str)
    }

    /// The variable's value when it is set and not empty.
    pub fn non_empty(&self, name: impl AsRef<OsStr>) -> Option<&OsStr> {
        self.var_os(name).filter(|v| !v.is_empty())
    }

    /// The variable as a path, when it is set and absolute (relative XDG values are
    /// ignored, as the XDG spec says).
    pub fn absolute_path(&self, name: impl AsRef<OsStr>) -> Option<PathBuf> {
        self.var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    }

    /// Whether a boolean variable is set to a true value (`1`, `true`, `yes`, `on`).
    pub fn flag(&self, name: impl AsRef<OsStr>) -> bool {
        self.var(name).is_some_and(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
    }

    /// `(name, value)` of each of `names` that is set, in the order given.
    pub fn pick<'a>(
        &'a self,
        names: impl IntoIterator<Item = &'a str> + 'a,
    ) -> impl Iterator<Item = (&'a str, &'a OsStr)> + 'a {
        names
            .into_iter()
            .filter_map(|n| self.var_os(n).map(|v| (n, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_the_snapshot_holds_and_nothing_else() {
        let env = Env::from_pairs([("A", "1"), ("EMPTY", ""), ("REL", "x/y"), ("ABS", "/x")]);
        assert_eq!(env.var("A"), Some("1"));
        assert_eq!(env.var("PATH"), None, "not the process environment");
        assert_eq!(env.non_empty("EMPTY"), None);
        assert_eq!(env.absolute_path("REL"), None);
        assert_eq!(env.absolute_path("ABS"), Some(PathBuf::from("/x")));
        assert!(env.flag("A"));
        assert!(!env.flag("EMPTY"));
        let picked: Vec<_> = env.pick(["ABS", "NONE", "A"]).map(|(n, _)| n).collect();
        assert_eq!(picked, ["ABS", "A"]);
    }
}
