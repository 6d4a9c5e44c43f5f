//! Read-only access to a parsed JSON document, whatever holds it.
//!
//! Owns [`Json`], the few questions the rules and [`super::Kind::detect`] ask of a
//! document (member by key, string, bool, type tests, arrays and objects in document
//! order), implemented for `&serde_json::Value` and for the light [`super::view`]: the
//! rules are written once and say the same about either.
//!
//! Must not parse or judge anything.

use serde_json::Value;

/// A JSON value borrowed for `'a`; cheap to copy.
pub trait Json<'a>: Copy + 'a {
    /// Array elements, in document order.
    type Items: DoubleEndedIterator<Item = Self> + ExactSizeIterator + Clone;
    /// Object members, in document order.
    type Members: DoubleEndedIterator<Item = (&'a str, Self)> + ExactSizeIterator + Clone;

    /// The member `key` of an object; `None` for anything else.
    fn get(self, key: &str) -> Option<Self>;
    /// The members, when this is an object.
    fn members(self) -> Option<Self::Members>;
    /// The elements, when this is an array.
    fn items(self) -> Option<Self::Items>;
    /// No elements, from the document this value belongs to (for a missing array).
    fn no_items(self) -> Self::Items;
    /// The string, when this is one.
    fn as_str(self) -> Option<&'a str>;
    /// The boolean, when this is one.
    fn as_bool(self) -> Option<bool>;
    /// Whether this is `null`.
    fn is_null(self) -> bool;
    /// Whether this is a number.
    fn is_number(self) -> bool;
    /// Whether this is a number serde_json holds as an integer (`i64` or `u64`).
    fn is_integer(self) -> bool;
    /// The same value as a `serde_json::Value` (for messages that print it).
    fn to_value(self) -> Value;
    /// Equality as `serde_json::Value` compares (numbers by representation, objects
    /// regardless of member order).
    fn same(self, other: Self) -> bool;

    /// Whether this is an object.
    fn is_object(self) -> bool {
        self.members().is_some()
    }
    /// Whether this is an array.
    fn is_array(self) -> bool {
        self.items().is_some()
    }
    /// Whether this is a string.
    fn is_string(self) -> bool {
        self.as_str().is_some()
    }
    /// Whether this is `true` or `false`.
    fn is_boolean(self) -> bool {
        self.as_bool().is_some()
    }
    /// Whether an object has the member `key`.
    fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

/// A serde_json map's members as `(&str, &Value)`.
pub type ValueMembers<'a> =
    std::iter::Map<serde_json::map::Iter<'a>, fn((&'a String, &'a Value)) -> (&'a str, &'a Value)>;

fn member<'a>((k, v): (&'a String, &'a Value)) -> (&'a str, &'a Value) {
    (k.as_str(), v)
}

impl<'a> Json<'a> for &'a Value {
    type Items = std::slice::Iter<'a, Value>;
    type Members = ValueMembers<'a>;

    fn get(self, key: &str) -> Option<Self> {
        self.as_object()?.get(key)
    }
    fn members(self) -> Option<Self::Members> {
        Some(self.as_object()?.iter().map(member as fn(_) -> _))
    }
    fn items(self) -> Option<Self::Items> {
        Some(self.as_array()?.iter())
    }
    fn no_items(self) -> Self::Items {
        [].iter()
    }
    fn as_str(self) -> Option<&'a str> {
        Value::as_str(self)
    }
    fn as_bool(self) -> Option<bool> {
        Value::as_bool(self)
    }
    fn is_null(self) -> bool {
        Value::is_null(self)
    }
    fn is_number(self) -> bool {
        Value::is_number(self)
    }
    fn is_integer(self) -> bool {
        self.is_i64() || self.is_u64()
    }
    fn to_value(self) -> Value {
        self.clone()
    }
    fn same(self, other: Self) -> bool {
        self == other
    }
}
