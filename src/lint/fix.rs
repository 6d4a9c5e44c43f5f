//! Mechanical fixes: edits a lint rule can make without guessing.
//!
//! Owns the edit operations (set a member, remove a member) and applying them to a parsed
//! document addressed by JSON pointer. Key order is kept (serde_json's `preserve_order`),
//! so a fixed file differs from the original only where the fixes are and in layout.
//!
//! Must not decide what to fix; rules attach a [`Fix`] to a finding.

use serde_json::Value;

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
    pub fn describe(&self) -> String {
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
pub fn apply(doc: &mut Value, fixes: &[Fix]) -> usize {
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
}
