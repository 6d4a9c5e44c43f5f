//! Mechanical fixes: edits a lint rule can make without guessing.
//!
//! Owns the edit operations (set a member, remove a member) and applying them, addressed
//! by JSON pointer, either to a parsed document (`apply`) or to the text itself
//! (`apply_to_text`), which keeps the author's layout: a fixed file differs from the
//! original only in the members the fixes touch.
//!
//! Must not decide what to fix; rules attach a [`Fix`] to a finding.

use crate::validate::locate;
use serde_json::Value;
use std::ops::Range;

/// One edit.
#[derive(Debug, Clone, PartialEq)]
pub enum Fix {
    /// Sets the member at `pointer` (its parent object must exist) to `value`.
    Set {
        /// JSON pointer of the member.
        pointer: String,
        /// The new value.
        value: Value,
    },
    /// Removes the member at `pointer`.
    Remove {
        /// JSON pointer of the member.
        pointer: String,
    },
}

impl Fix {
    /// What the fix does, for the hint.
    pub(crate) fn describe(&self) -> String {
        match self {
            Fix::Set { pointer, value } => format!("set {pointer} to {value}"),
            Fix::Remove { pointer } => format!("remove {pointer}"),
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The parent object of `pointer` and the last (unescaped) token.
fn parent<'v>(doc: &'v mut Value, pointer: &str) -> Option<(&'v mut Value, String)> {
    let cut = pointer.rfind('/')?;
    let parent = doc.pointer_mut(&pointer[..cut])?;
    parent
        .is_object()
        .then(|| (parent, unescape(&pointer[cut + 1..])))
}

/// Applies the fixes in order; returns how many changed the document. A fix whose
/// place no longer exists (an earlier fix removed it) is skipped.
pub(crate) fn apply(doc: &mut Value, fixes: &[Fix]) -> usize {
    let mut applied = 0;
    for fix in fixes {
        match fix {
            Fix::Set { pointer, value } => {
                if let Some((obj, key)) = parent(doc, pointer) {
                    let map = obj.as_object_mut().expect("checked object");
                    if map.get(&key) != Some(value) {
                        map.insert(key, value.clone());
                        applied += 1;
                    }
                }
            }
            Fix::Remove { pointer } => {
                if let Some((obj, key)) = parent(doc, pointer)
                    && obj
                        .as_object_mut()
                        .expect("checked object")
                        .shift_remove(&key)
                        .is_some()
                {
                    applied += 1;
                }
            }
        }
    }
    applied
}

/// Applies the fixes to JSON text in order, editing only the members they touch (indent,
/// key order and spacing of everything else stay as written). Returns the new text and
/// how many fixes changed it, or `None` when an edit could not be placed in the text
/// (the caller then falls back to [`apply`] and re-serialising).
pub(crate) fn apply_to_text(text: &str, fixes: &[Fix]) -> Option<(String, usize)> {
    let mut text = text.to_string();
    let mut applied = 0;
    for fix in fixes {
        if let Some(new) = edit(&text, fix)? {
            text = new;
            applied += 1;
        }
    }
    Some((text, applied))
}

/// Where one member sits in the text.
struct Member {
    key: Range<usize>,
    value: Range<usize>,
}

/// An object's span and its members (decoded key, place) in text order.
type ObjectText = (Range<usize>, Vec<(String, Member)>);

/// The members of the object at `parent` (in text order) and the span of the object.
fn object_at(text: &str, parent: &str) -> Option<ObjectText> {
    let b = text.as_bytes();
    let mut open = None;
    let mut members = Vec::new();
    locate::scan(
        text,
        |v| {
            if v.pointer == parent {
                open = Some(v.value.start);
            } else if let Some(token) = v
                .pointer
                .strip_prefix(parent)
                .and_then(|rest| rest.strip_prefix('/'))
                && !token.contains('/')
                && let Some(key) = v.key
            {
                let end = value_end(b, v.value.clone());
                members.push((
                    unescape(token),
                    Member {
                        key,
                        value: v.value.start..end,
                    },
                ));
            }
        },
        None,
    );
    let open = open?;
    if b.get(open) != Some(&b'{') {
        return None;
    }
    let close = value_end(b, open..open + 1);
    Some((open..close, members))
}

/// End of a value whose start [`locate::scan`] reported: scalars are whole already;
/// for objects and arrays, the position after the matching bracket.
fn value_end(b: &[u8], span: Range<usize>) -> usize {
    if !matches!(b.get(span.start), Some(b'{' | b'[')) {
        return span.end;
    }
    let mut depth = 0usize;
    let mut i = span.start;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// The white space that starts the line holding `at`, if only white space precedes it.
fn line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[line_start..at];
    lead.chars().all(|c| c == ' ' || c == '\t').then_some(lead)
}

/// `value` as it should appear at `at`: scalars compact, containers pretty and indented
/// like the line they start on.
fn render(text: &str, at: usize, value: &Value) -> String {
    if !(value.is_object() || value.is_array()) || !text.contains('\n') {
        return value.to_string();
    }
    let indent = line_indent(text, at).unwrap_or("");
    let pretty = serde_json::to_string_pretty(value).expect("a value serializes");
    pretty.replace('\n', &format!("\n{indent}"))
}

/// One fix on the text: `Some(Some(new))` changed, `Some(None)` nothing to do (same value,
/// or its place is gone), `None` could not be placed.
fn edit(text: &str, fix: &Fix) -> Option<Option<String>> {
    let (Fix::Set { pointer, .. } | Fix::Remove { pointer }) = fix;
    let cut = pointer.rfind('/')?;
    let (parent, key) = (&pointer[..cut], unescape(&pointer[cut + 1..]));
    let Some((object, members)) = object_at(text, parent) else {
        // No parent object: like `apply`, the fix has nothing to act on.
        return Some(None);
    };
    let found = members.iter().position(|(k, _)| *k == key);
    let mut out = text.to_string();
    match (fix, found) {
        (Fix::Set { value, .. }, Some(i)) => {
            let span = members[i].1.value.clone();
            let old: Value = serde_json::from_str(&text[span.clone()]).ok()?;
            if old == *value {
                return Some(None);
            }
            out.replace_range(span.clone(), &render(text, span.start, value));
        }
        (Fix::Set { value, .. }, None) => {
            let key_json = Value::String(key).to_string();
            match members.last() {
                None => {
                    let inner = object.start + 1..object.end - 1;
                    out.replace_range(inner, &format!("{key_json}: {value}"));
                }
                Some((_, last)) => {
                    let colon = &text[last.key.end..last.value.start];
                    let sep = match line_indent(text, last.key.start) {
                        Some(indent) => format!(",\n{indent}"),
                        None => ", ".to_string(),
                    };
                    let at = last.value.end;
                    let shown = render(text, last.key.start, value);
                    out.insert_str(at, &format!("{sep}{key_json}{colon}{shown}"));
                }
            }
        }
        (Fix::Remove { .. }, Some(i)) => {
            let this = &members[i].1;
            let range = if i > 0 {
                // From the end of the previous member: its comma goes with this one.
                members[i - 1].1.value.end..this.value.end
            } else if let Some((_, next)) = members.get(1) {
                this.key.start..next.key.start
            } else {
                object.start + 1..object.end - 1
            };
            out.replace_range(range, "");
        }
        (Fix::Remove { .. }, None) => return Some(None),
    }
    Some(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_and_remove_keep_order() {
        let mut doc = json!({"a": {"x/y": 1, "b": {}}, "z": 2});
        let n = apply(
            &mut doc,
            &[
                Fix::Set {
                    pointer: "/a/c".into(),
                    value: json!(false),
                },
                Fix::Remove {
                    pointer: "/a/b".into(),
                },
                Fix::Set {
                    pointer: "/a/x~1y".into(),
                    value: json!(3),
                },
                Fix::Remove {
                    pointer: "/a/b/gone".into(),
                },
            ],
        );
        assert_eq!(n, 3);
        assert_eq!(
            serde_json::to_string(&doc).unwrap(),
            r#"{"a":{"x/y":3,"c":false},"z":2}"#
        );
    }

    #[test]
    fn text_edits_keep_layout() {
        let text =
            "{\n    \"a\":   1,\n    \"e\": {\"destructive\": true},\n    \"z\": [1, 2]\n}\n";
        let fixes = [
            Fix::Set {
                pointer: "/e/reversible".into(),
                value: json!(false),
            },
            Fix::Set {
                pointer: "/a".into(),
                value: json!(2),
            },
            Fix::Set {
                pointer: "/n".into(),
                value: json!({"k": "v"}),
            },
            Fix::Remove {
                pointer: "/z".into(),
            },
            Fix::Set {
                pointer: "/missing/x".into(),
                value: json!(1),
            },
        ];
        let (out, n) = apply_to_text(text, &fixes).unwrap();
        assert_eq!(n, 4);
        assert_eq!(
            out,
            "{\n    \"a\":   2,\n    \"e\": {\"destructive\": true, \"reversible\": false},\n    \"n\": {\n      \"k\": \"v\"\n    }\n}\n"
        );
        // The text path and the value path agree.
        let mut doc: Value = serde_json::from_str(text).unwrap();
        assert_eq!(apply(&mut doc, &fixes), 4);
        assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), doc);
    }

    #[test]
    fn text_removal_of_first_and_only_members() {
        let (out, n) = apply_to_text(
            "{\"a\": {}, \"b\": 1, \"c\": {\"x\": true}}",
            &[
                Fix::Remove {
                    pointer: "/a".into(),
                },
                Fix::Remove {
                    pointer: "/c/x".into(),
                },
                Fix::Set {
                    pointer: "/c/y".into(),
                    value: json!("s"),
                },
                Fix::Set {
                    pointer: "/b".into(),
                    value: json!(1),
                },
            ],
        )
        .unwrap();
        assert_eq!((out.as_str(), n), ("{\"b\": 1, \"c\": {\"y\": \"s\"}}", 3));
    }
}
