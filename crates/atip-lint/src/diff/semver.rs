//! Version advice: which semantic-version bump the changes call for, and whether the
//! versions the two documents declare make that bump.
//!
//! Owns the rule: breaking changes and less-safe effects need a major bump (before 1.0,
//! a minor one), other changes a minor bump (before 1.0, a patch), none a patch. Tool
//! versions are read leniently (`v2.3`, `3.8`, `1.2.3-rc1`: up to three numbers, the
//! rest ignored) because real tools do not all use semver.
//!
//! Must not compare documents.

use super::Counts;
use serde::Serialize;

/// A version bump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Bump {
    /// No change.
    None,
    /// x.y.Z
    Patch,
    /// x.Y.0
    Minor,
    /// X.0.0
    Major,
}

impl Bump {
    /// `none`, `patch`, `minor`, `major`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Bump::None => "none",
            Bump::Patch => "patch",
            Bump::Minor => "minor",
            Bump::Major => "major",
        }
    }
}

/// What `--semver` reports.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Advice {
    /// The bump the changes need (in semver terms, before the 0.x shift).
    pub required: Bump,
    /// Why, in one line.
    pub reason: String,
    /// The bump between the declared versions, when both parse.
    pub actual: Option<Bump>,
    /// Whether the declared versions make at least the required bump (null when unknown;
    /// false for a downgrade).
    pub sufficient: Option<bool>,
}

/// Up to three leading numbers of a version (`v1.2.3-rc1` → [1, 2, 3]).
pub fn parse(version: &str) -> Option<[u64; 3]> {
    let v = version.trim().trim_start_matches(['v', 'V']);
    let core = v.split(['-', '+', ' ']).next()?;
    let mut out = [0u64; 3];
    let mut n = 0;
    for part in core.split('.') {
        if n == 3 {
            break;
        }
        out[n] = part.parse().ok()?;
        n += 1;
    }
    (n > 0).then_some(out)
}

/// The bump from `old` to `new`, in semver terms (a 0.x minor bump counts as major,
/// a 0.x patch bump as minor); `None` for a downgrade.
fn bump(old: [u64; 3], new: [u64; 3]) -> Option<Bump> {
    if new < old {
        return None;
    }
    let raw = if new[0] > old[0] {
        Bump::Major
    } else if new[1] > old[1] {
        Bump::Minor
    } else if new[2] > old[2] {
        Bump::Patch
    } else {
        Bump::None
    };
    Some(if old[0] == 0 && new[0] == 0 {
        match raw {
            Bump::Minor => Bump::Major,
            Bump::Patch => Bump::Minor,
            other => other,
        }
    } else {
        raw
    })
}

impl Advice {
    /// Advice for these counts and declared versions.
    pub fn new(counts: &Counts, old: Option<&str>, new: Option<&str>) -> Advice {
        let (required, reason) = if counts.breaking > 0 || counts.effects > 0 {
            (
                Bump::Major,
                format!(
                    "{} breaking change{} and {} less-safe effect{}",
                    counts.breaking,
                    if counts.breaking == 1 { "" } else { "s" },
                    counts.effects,
                    if counts.effects == 1 { "" } else { "s" }
                ),
            )
        } else if counts.non_breaking > 0 {
            (
                Bump::Minor,
                format!(
                    "{} backward-compatible change{}",
                    counts.non_breaking,
                    if counts.non_breaking == 1 { "" } else { "s" }
                ),
            )
        } else {
            (Bump::Patch, "no interface change".to_string())
        };
        let (actual, sufficient) = match (old.and_then(parse), new.and_then(parse)) {
            (Some(o), Some(n)) => match bump(o, n) {
                Some(b) => (Some(b), Some(b >= required || required == Bump::Patch)),
                None => (None, Some(false)),
            },
            _ => (None, None),
        };
        Advice {
            required,
            reason,
            actual,
            sufficient,
        }
    }

    /// One line for text and Markdown output.
    pub(crate) fn line(&self, old: Option<&str>, new: Option<&str>) -> String {
        let mut s = format!("semver: {} ({})", self.required.as_str(), self.reason);
        match (old, new, self.actual, self.sufficient) {
            (Some(o), Some(n), Some(b), Some(ok)) => s.push_str(&format!(
                "; {o} → {n} is a {} bump: {}",
                b.as_str(),
                if ok { "enough" } else { "NOT enough" }
            )),
            (Some(o), Some(n), None, Some(false)) => {
                s.push_str(&format!("; {o} → {n} goes backwards"))
            }
            _ => {}
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_leniently() {
        assert_eq!(parse("v1.2.3-rc1"), Some([1, 2, 3]));
        assert_eq!(parse("3.8"), Some([3, 8, 0]));
        assert_eq!(parse("2.40.0"), Some([2, 40, 0]));
        assert_eq!(parse("abc"), None);
    }

    #[test]
    fn advice_and_bumps() {
        let breaking = Counts {
            breaking: 1,
            ..Counts::default()
        };
        let a = Advice::new(&breaking, Some("1.2.0"), Some("1.3.0"));
        assert_eq!(
            (a.required, a.actual, a.sufficient),
            (Bump::Major, Some(Bump::Minor), Some(false))
        );
        let a = Advice::new(&breaking, Some("0.2.0"), Some("0.3.0"));
        assert_eq!(a.sufficient, Some(true), "0.x: minor is major");
        let added = Counts {
            non_breaking: 2,
            ..Counts::default()
        };
        let a = Advice::new(&added, Some("1.0.0"), Some("1.0.1"));
        assert_eq!((a.required, a.sufficient), (Bump::Minor, Some(false)));
        let a = Advice::new(&Counts::default(), Some("2.0.0"), Some("1.0.0"));
        assert_eq!(a.sufficient, Some(false));
        let a = Advice::new(&Counts::default(), None, Some("1.0.0"));
        assert_eq!((a.required, a.sufficient), (Bump::Patch, None));
    }
}
