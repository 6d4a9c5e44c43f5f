//! Anchored patterns that are a plain sequence of character classes
//! (`^-[^\s=]*[^\s=-][^\s=]*$`, `^sha256:[0-9a-f]{64}$`), matched over ASCII subjects by
//! a small DFA (one table look-up per byte), built once from a bit-parallel automaton.
//!
//! Most of atip's schema patterns have this form and run on every flag, version and
//! hash of a document; the regex crate's general engine costs several times more per
//! call. Owns only this subset: [`Anchored::new`] answers `None` for anything else
//! (groups, alternation, `.`, anchors missing, escapes it does not know, class set
//! operations), and the caller keeps the regex for it. Tested against the regex crate.

use std::collections::HashMap;

/// A set of ASCII bytes, bit `b` for byte `b`.
type Class = u128;

/// One compiled pattern: a DFA over ASCII bytes.
pub struct Anchored {
    /// `next[state * 128 + byte]`; state 0 is dead (no match possible), 1 the start.
    next: Vec<u8>,
    /// Whether each state matches the whole subject read so far.
    accepting: Vec<bool>,
}

/// Most DFA states kept (they are numbered in a `u8`); a pattern needing more is left
/// to the regex.
const MAX_STATES: usize = 255;

/// The bit-parallel automaton the DFA is built from: element `i` of the sequence is bit
/// `i` of every mask, a state is the set of elements that may come next.
struct Nfa {
    /// For each ASCII byte, the elements whose class holds it.
    accepts: Box<[u128; 128]>,
    /// Elements that may repeat (`*`, the tail of `+` and `{n,}`).
    many: u128,
    /// Elements that may be skipped (`?`, `*`, the optional part of `{n,m}`).
    skippable: u128,
    /// The state past the last element: the whole subject matched.
    done: u128,
}

impl std::fmt::Debug for Anchored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Anchored")
            .field("states", &self.accepting.len())
            .finish()
    }
}

/// Longest sequence: one bit per element and one for "done" in a `u128`.
const MAX_ELEMENTS: usize = 127;

/// The characters whose escape is the character itself.
const META: &[u8] = b"\\.+*?()|[]{}^$-/";

const fn bit(b: u8) -> Class {
    1 << b
}

fn range(from: u8, to: u8) -> Class {
    (from..=to).fold(0, |c, b| c | bit(b))
}

/// Everything below 128.
const ASCII: Class = u128::MAX >> 1;

/// `\s`, `\d`, `\w` and their negations, as ECMA and Rust agree on them over ASCII.
fn escape_class(e: u8) -> Option<Class> {
    let space = range(b'\t', b'\r') | bit(b' ');
    let digit = range(b'0', b'9');
    let word = range(b'a', b'z') | range(b'A', b'Z') | digit | bit(b'_');
    Some(match e {
        b's' => space,
        b'S' => ASCII & !space,
        b'd' => digit,
        b'D' => ASCII & !digit,
        b'w' => word,
        b'W' => ASCII & !word,
        // An escaped metacharacter is itself (both dialects; `\<` is not one in Rust).
        c if META.contains(&c) => bit(c),
        _ => return None,
    })
}

/// How often an element of the pattern occurs: once, at most once, any number of times.
const ONE: u8 = 0;
const OPTIONAL: u8 = 1;
const MANY: u8 = 2;

/// The class of the atom at `i` (a set, an escape, a plain character), moving `i` past it.
fn atom(b: &[u8], i: &mut usize) -> Option<Class> {
    Some(match b[*i] {
        b'[' => {
            let (class, end) = set(b, *i + 1)?;
            *i = end + 1;
            class
        }
        b'\\' => {
            let class = escape_class(*b.get(*i + 1)?)?;
            *i += 2;
            class
        }
        c if c.is_ascii_alphanumeric() || b"-_:/=@#%&,;'\"<>~`!".contains(&c) => {
            *i += 1;
            bit(c)
        }
        _ => return None,
    })
}

/// The bounds of the quantifier at `i` (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`; none is
/// exactly once), moving `i` past it.
fn quantifier(b: &[u8], i: &mut usize) -> Option<(usize, Option<usize>)> {
    let quantifier = b.get(*i).copied();
    if matches!(quantifier, Some(b'*' | b'+' | b'?')) {
        *i += 1;
    }
    Some(match quantifier {
        Some(b'*') => (0, None),
        Some(b'+') => (1, None),
        Some(b'?') => (0, Some(1)),
        Some(b'{') => {
            let close = *i + b[*i..].iter().position(|&c| c == b'}')?;
            let inside = std::str::from_utf8(&b[*i + 1..close]).ok()?;
            let number = |s: &str| -> Option<usize> {
                (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())).then(|| s.parse().ok())?
            };
            let bounds = match inside.split_once(',') {
                None => (number(inside)?, Some(number(inside)?)),
                Some((lo, "")) => (number(lo)?, None),
                Some((lo, hi)) => (number(lo)?, Some(number(hi)?)),
            };
            *i = close + 1;
            bounds
        }
        _ => (1, Some(1)),
    })
}

/// The automaton of a sequence of elements (a class and how often it occurs): element
/// `e` is bit `e` of the state, which bytes it accepts, whether it repeats or may be
/// skipped.
fn nfa(elements: &[(Class, u8)]) -> Nfa {
    let mut accepts = Box::new([0u128; 128]);
    let (mut many, mut skippable) = (0, 0);
    for (e, &(class, times)) in elements.iter().enumerate() {
        for (byte, mask) in accepts.iter_mut().enumerate() {
            if class & (1 << byte) != 0 {
                *mask |= 1 << e;
            }
        }
        if times == MANY {
            many |= 1 << e;
        }
        if times != ONE {
            skippable |= 1 << e;
        }
    }
    Nfa {
        accepts,
        many,
        skippable,
        done: 1 << elements.len(),
    }
}

impl Anchored {
    /// The automaton for `pattern`, or `None` when it is outside the subset.
    pub fn new(pattern: &str) -> Option<Anchored> {
        let body = pattern.strip_prefix('^')?.strip_suffix('$')?;
        let b = body.as_bytes();
        // `\$` at the end is a literal dollar, not an anchor.
        let trailing_backslashes = b.iter().rev().take_while(|&&c| c == b'\\').count();
        if trailing_backslashes % 2 == 1 {
            return None;
        }
        let mut elements: Vec<(Class, u8)> = Vec::new();
        let mut i = 0;
        while i < b.len() {
            let class = atom(b, &mut i)?;
            let (min, max) = quantifier(b, &mut i)?;
            // A second quantifier (lazy `*?`, possessive forms) is left to the regex.
            if matches!(b.get(i), Some(b'*' | b'+' | b'?' | b'{')) {
                return None;
            }
            if max.is_some_and(|m| m < min) || min > MAX_ELEMENTS {
                return None;
            }
            elements.extend(std::iter::repeat_n((class, ONE), min));
            match max {
                None => elements.push((class, MANY)),
                Some(m) if m - min > MAX_ELEMENTS => return None,
                Some(m) => elements.extend(std::iter::repeat_n((class, OPTIONAL), m - min)),
            }
            if elements.len() > MAX_ELEMENTS {
                return None;
            }
        }
        nfa(&elements).determinize()
    }

    /// Whether the whole of `s` matches; `None` for a non-ASCII subject (where ECMA's
    /// and Rust's classes may differ).
    pub fn matches(&self, s: &[u8]) -> Option<bool> {
        let mut state = 1;
        for &c in s {
            if c >= 128 {
                return None;
            }
            state = usize::from(self.next[state * 128 + usize::from(c)]);
            if state == 0 {
                // Still answer `None` for a non-ASCII subject, whatever its prefix.
                return if s.is_ascii() { Some(false) } else { None };
            }
        }
        Some(self.accepting[state])
    }
}

impl Nfa {
    /// The NFA's states after reading `c` from `state` (0 when none).
    fn step(&self, state: u128, c: usize) -> u128 {
        let moved = state & self.accepts[c];
        if moved == 0 {
            return 0;
        }
        self.close(((moved & !self.many) << 1) | (moved & self.many))
    }

    /// Subset construction: one DFA state per set of NFA states reachable; `None` past
    /// [`MAX_STATES`].
    fn determinize(&self) -> Option<Anchored> {
        let mut sets: Vec<u128> = vec![0, self.close(1)];
        let mut ids: HashMap<u128, u8> = sets.iter().zip(0..).map(|(&s, i)| (s, i)).collect();
        let mut next = vec![0u8; 2 * 128];
        let mut at = 1;
        while at < sets.len() {
            for c in 0..128 {
                let target = self.step(sets[at], c);
                // Most bytes lead nowhere: the dead state needs no look-up.
                if target == 0 {
                    continue;
                }
                let id = match ids.get(&target) {
                    Some(&id) => id,
                    None if sets.len() < MAX_STATES => {
                        let id = sets.len() as u8;
                        sets.push(target);
                        ids.insert(target, id);
                        next.extend([0u8; 128]);
                        id
                    }
                    None => return None,
                };
                next[at * 128 + c] = id;
            }
            at += 1;
        }
        Some(Anchored {
            next,
            accepting: sets.iter().map(|&s| s & self.done != 0).collect(),
        })
    }

    /// Adds the states reached by skipping skippable elements.
    #[inline]
    fn close(&self, mut state: u128) -> u128 {
        loop {
            let next = state | ((state & self.skippable) << 1);
            if next == state {
                return state;
            }
            state = next;
        }
    }
}

/// A bracketed set from just after its `[`: its class and the index of its `]`.
fn set(b: &[u8], mut i: usize) -> Option<(Class, usize)> {
    let negated = b.get(i) == Some(&b'^');
    if negated {
        i += 1;
    }
    // `[]` and `[^]` differ between dialects.
    if b.get(i) == Some(&b']') {
        return None;
    }
    let start = i;
    let mut class: Class = 0;
    // One member: a single byte (may start a range) or an escape class.
    let member = |i: usize| -> Option<(Option<u8>, Class, usize)> {
        match *b.get(i)? {
            b'\\' => {
                let e = *b.get(i + 1)?;
                let class = escape_class(e)?;
                let single = META.contains(&e).then_some(e);
                Some((single, class, i + 2))
            }
            // Nested sets, POSIX classes and Rust's set operations are not in the subset.
            b'[' | b'&' | b'~' => None,
            b']' => None,
            c if c.is_ascii_graphic() || c == b' ' => Some((Some(c), bit(c), i + 1)),
            _ => None,
        }
    };
    loop {
        match b.get(i)? {
            b']' => break,
            b'-' if i > start && b.get(i + 1) != Some(&b']') => return None,
            _ => {}
        }
        let (single, c, next) = member(i)?;
        if b.get(next) == Some(&b'-') && b.get(next + 1).is_some_and(|&n| n != b']') {
            let lo = single?;
            let (hi, _, after) = member(next + 1)?;
            let hi = hi?;
            if hi < lo || b.get(next + 1) == Some(&b'\\') {
                return None;
            }
            class |= range(lo, hi);
            i = after;
        } else {
            class |= c;
            i = next;
        }
    }
    Some((if negated { ASCII & !class } else { class }, i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex::Regex;

    /// Every pattern atip's schemas use, and a few more of the subset and outside it.
    const PATTERNS: &[&str] = &[
        r"^-[^\s=]*[^\s=-][^\s=]*$",
        r"^0\.[0-9]{1,3}$",
        r"^[A-Z_][A-Z0-9_]*$",
        r"^[A-Za-z0-9_-]+$",
        r"^[a-z0-9-]+:[0-9a-fA-F]+$",
        r"^[a-z0-9]+-[a-z0-9_]+$",
        r"^sha256:[0-9a-f]{64}$",
        r"^0\.[0-9]+$",
        r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$",
        r"^tools/[0-9a-f]{64}\.json$",
        r"^a?b{2,}c{0,2}\d\w\S\D\W$",
        r"^[^a-c]x?$",
        r"^$",
    ];

    #[test]
    fn schema_patterns_are_in_the_subset_and_others_are_not() {
        for p in PATTERNS {
            assert!(Anchored::new(p).is_some(), "{p}");
        }
        for p in [
            "^/",
            "^(x-|_)",
            "^a|b$",
            "^a.b$",
            r"^a\$",
            "^a*?$",
            "^[[:alpha:]]$",
            "^[a&&b]$",
            "^[]a]$",
            r"^\bx$",
            "^é$",
            "^a{2,1}$",
        ] {
            assert!(Anchored::new(p).is_none(), "{p}");
        }
    }

    #[test]
    fn agrees_with_regex_on_chosen_subjects() {
        let subjects = [
            "",
            "-",
            "--",
            "-a",
            "--a-",
            "---",
            "-=",
            "-a=b",
            "- a",
            "--label",
            "-\u{b}x",
            "0.1",
            "0.1234",
            "0.",
            "1.0",
            "A_B9",
            "_",
            "a9B",
            "sha256:",
            "x-y",
            "ab-c_d",
            "GH_TOKEN",
            "gh-token",
            "é",
            "-é",
            "0.12é",
            "bbc9a_!",
            "abbbc1a!!",
            "d",
            "dx",
            "tools/0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.json",
        ];
        for p in PATTERNS {
            let ours = Anchored::new(p).unwrap_or_else(|| unreachable!());
            let theirs = Regex::new(p).unwrap_or_else(|_| unreachable!());
            for s in subjects {
                let expected = s.is_ascii().then(|| theirs.is_match(s));
                assert_eq!(ours.matches(s.as_bytes()), expected, "{p} on {s:?}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(crate::validate::proptest_cases(128)))]
        /// On any ASCII subject, the automaton says what the regex crate says.
        #[test]
        fn agrees_with_regex(
            p in 0..PATTERNS.len(),
            s in "[-a-fA-Z0-9_.:= \t\u{b}\\\\/!]{0,70}",
            hash in "[0-9a-f]{64}",
        ) {
            let theirs = Regex::new(PATTERNS[p]).unwrap_or_else(|_| unreachable!());
            let ours = Anchored::new(PATTERNS[p]).unwrap_or_else(|| unreachable!());
            for subject in [s.clone(), format!("sha256:{hash}"), format!("-{s}"), format!("0.{s}")] {
                proptest::prop_assert_eq!(
                    ours.matches(subject.as_bytes()),
                    Some(theirs.is_match(&subject)),
                    "{} on {:?}", PATTERNS[p], subject
                );
            }
        }
    }
}
