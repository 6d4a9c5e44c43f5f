//! Secret redaction for everything `exec` hands back or writes down: tool output,
//! argv in results and the audit log, error messages.
//!
//! Two sources of secrets: the values of the environment variables a tool names in its
//! `authentication.methods[].envVar` (known exactly), and common token shapes found by
//! scanning (GitHub tokens, AWS access key ids, `Authorization: Bearer` values, PEM
//! private-key blocks). Must not decide policy or touch files.

use std::borrow::Cow;

/// Replaces known secret values and token shapes with `[REDACTED:<kind>]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Exact secret values (from the environment), longest first.
    values: Vec<(String, String)>,
}

/// Secret values shorter than this are not redacted by value: replacing every `1` or
/// `yes` in an output would destroy it and hide nothing.
pub const MIN_SECRET_LEN: usize = 6;

impl Redactor {
    /// A redactor for the token shapes only.
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Adds the value each named variable has in `env` (the run's environment) as a
    /// secret.
    pub fn with_env_vars<'a>(
        mut self,
        env: &crate::env::Env,
        names: impl IntoIterator<Item = &'a str>,
    ) -> Redactor {
        for name in names {
            if let Some(value) = env.var(name) {
                self.add_value(name, value.to_owned());
            }
        }
        self
    }

    /// Adds one exact secret value, labelled with the variable it came from.
    pub fn add_value(&mut self, label: &str, value: String) {
        if value.len() >= MIN_SECRET_LEN && !self.values.iter().any(|(_, v)| *v == value) {
            self.values.push((label.to_string(), value));
            self.values.sort_by_key(|v| std::cmp::Reverse(v.1.len()));
        }
    }

    /// Number of exact values known.
    #[cfg(test)]
    pub(crate) fn value_count(&self) -> usize {
        self.values.len()
    }

    /// Redacts a string; borrows when nothing was found.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for (label, value) in &self.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), &format!("[REDACTED:env:{label}]")));
            }
        }
        match scan_shapes(&out) {
            Some(s) => Cow::Owned(s),
            None => out,
        }
    }

    /// Redacts every string inside a JSON value, keys included.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(s) => {
                if let Cow::Owned(r) = self.redact(s) {
                    *s = r;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            Value::Object(map) => {
                let old = std::mem::take(map);
                for (k, mut v) in old {
                    self.redact_json(&mut v);
                    map.insert(self.redact(&k).into_owned(), v);
                }
            }
            _ => {}
        }
    }
}

fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// A match: byte range and kind.
type Hit = (usize, usize, &'static str);

/// Finds token shapes; returns the redacted text, or `None` when there was none.
fn scan_shapes(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut hits: Vec<Hit> = Vec::new();
    pem_blocks(text, &mut hits);
    let mut i = 0;
    while i < bytes.len() {
        if let Some(hit) = hits.iter().find(|h| h.0 <= i && i < h.1) {
            i = hit.1;
            continue;
        }
        let at_boundary = i == 0 || !is_token_char(bytes[i - 1]);
        if at_boundary {
            if let Some(end) = github_token(bytes, i) {
                hits.push((i, end, "github-token"));
                i = end;
                continue;
            }
            if let Some(end) = aws_key_id(bytes, i) {
                hits.push((i, end, "aws-access-key-id"));
                i = end;
                continue;
            }
            if let Some((start, end)) = bearer(bytes, i) {
                hits.push((start, end, "bearer-token"));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    if hits.is_empty() {
        return None;
    }
    hits.sort_by_key(|h| h.0);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (start, end, kind) in hits {
        if start < last {
            continue;
        }
        out.push_str(&text[last..start]);
        out.push_str("[REDACTED:");
        out.push_str(kind);
        out.push(']');
        last = end;
    }
    out.push_str(&text[last..]);
    Some(out)
}

/// `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_` + ≥ 30 alphanumerics; `github_pat_` + ≥ 22 of `[A-Za-z0-9_]`.
fn github_token(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i..];
    let (prefix_len, min, allow_underscore) = if rest.starts_with(b"github_pat_") {
        (11, 22, true)
    } else if rest.len() > 4
        && rest.starts_with(b"gh")
        && matches!(rest[2], b'p' | b'o' | b'u' | b's' | b'r')
        && rest[3] == b'_'
    {
        (4, 30, false)
    } else {
        return None;
    };
    let body = rest[prefix_len..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || (allow_underscore && **c == b'_'))
        .count();
    (body >= min).then_some(i + prefix_len + body)
}

/// `AKIA`/`ASIA` + 16 of `[A-Z0-9]`, not followed by another token character.
fn aws_key_id(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i..];
    if !(rest.starts_with(b"AKIA") || rest.starts_with(b"ASIA")) || rest.len() < 20 {
        return None;
    }
    let body = &rest[4..20];
    if !body
        .iter()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return None;
    }
    if rest.len() > 20 && is_token_char(rest[20]) {
        return None;
    }
    Some(i + 20)
}

/// `Bearer <token>` (case-insensitive keyword): redacts the token after it.
fn bearer(b: &[u8], i: usize) -> Option<(usize, usize)> {
    let rest = &b[i..];
    if rest.len() < 8 || !rest[..6].eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let spaces = rest[6..].iter().take_while(|c| **c == b' ').count();
    if spaces == 0 {
        return None;
    }
    let start = i + 6 + spaces;
    let len = b[start..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || b"-._~+/=".contains(c))
        .count();
    (len >= 8).then_some((start, start + len))
}

/// `-----BEGIN … PRIVATE KEY-----` through the matching END line (or the end of text).
fn pem_blocks(text: &str, hits: &mut Vec<Hit>) {
    let mut from = 0;
    while let Some(pos) = text[from..].find("-----BEGIN ") {
        let start = from + pos;
        let header_end = match text[start + 11..].find("-----") {
            Some(p) => start + 11 + p,
            None => break,
        };
        let label = &text[start + 11..header_end];
        if !label.ends_with("PRIVATE KEY") || label.len() > 64 {
            from = header_end;
            continue;
        }
        let footer = format!("-----END {label}-----");
        let end = match text[header_end..].find(&footer) {
            Some(p) => header_end + p + footer.len(),
            None => text.len(),
        };
        hits.push((start, end, "private-key"));
        from = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_redacted() {
        let r = Redactor::new();
        let gh = format!("token ghp_{} end", "a1B2".repeat(9));
        assert_eq!(r.redact(&gh), "token [REDACTED:github-token] end");
        let pat = format!("x=github_pat_{}", "Ab_9".repeat(10));
        assert_eq!(r.redact(&pat), "x=[REDACTED:github-token]");
        assert_eq!(
            r.redact("key AKIAIOSFODNN7EXAMPLE."),
            "key [REDACTED:aws-access-key-id]."
        );
        assert_eq!(
            r.redact("Authorization: Bearer abc.DEF-123_xyz=="),
            "Authorization: Bearer [REDACTED:bearer-token]"
        );
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nxyz\n-----END RSA PRIVATE KEY-----\nb";
        assert_eq!(r.redact(pem), "a\n[REDACTED:private-key]\nb");
        let unterminated = "-----BEGIN PRIVATE KEY-----\nMIIE";
        assert_eq!(r.redact(unterminated), "[REDACTED:private-key]");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        let r = Redactor::new();
        for s in [
            "ghp_short",
            "AKIA lower",
            "XAKIAIOSFODNN7EXAMPLE1",
            "bearer of bad news",
            "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----",
            "héllo wörld ✓",
        ] {
            assert!(matches!(r.redact(s), Cow::Borrowed(_)), "{s}");
        }
    }

    #[test]
    fn env_values_are_redacted_longest_first() {
        let mut r = Redactor::new();
        r.add_value("SHORT", "123".into());
        r.add_value("TOKEN", "s3cr3t-value".into());
        r.add_value("LONG", "s3cr3t-value-longer".into());
        assert_eq!(r.value_count(), 2);
        assert_eq!(
            r.redact("a s3cr3t-value-longer b s3cr3t-value 123"),
            "a [REDACTED:env:LONG] b [REDACTED:env:TOKEN] 123"
        );
        let mut v = serde_json::json!({"k": ["s3cr3t-value"], "s3cr3t-value": 1});
        r.redact_json(&mut v);
        assert_eq!(
            v,
            serde_json::json!({"k": ["[REDACTED:env:TOKEN]"], "[REDACTED:env:TOKEN]": 1})
        );
    }
}
