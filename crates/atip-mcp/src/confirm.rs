//! Confirmation tokens (`requestState` of an `input_required` result).
//!
//! On 2026-07-28 sessions the server cannot ask the client's user itself: it answers a
//! call that needs confirmation with `input_required` and a `requestState`, and the
//! client retries the call with the user's answer (`inputResponses`) and that state.
//! The state is therefore the only thing that proves the question was asked. It must
//! not be computable by the client (else a client forges "the user said yes" for any
//! call without ever showing a question), nor usable for another call, another session
//! or twice.
//!
//! A token is `atip-confirm-v2:NONCE.MAC`: a fresh random nonce, and an HMAC-SHA256
//! under a key drawn at start-up (never stored, never sent) over the session scope,
//! the nonce and the exact call (tool name and canonical arguments). The server also
//! remembers the nonces it issued (bounded, each for [`TTL`]); redeeming one removes it.

use crate::output::{AtipError, ErrorCode};
use serde_json::{Map, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Prefix of every confirmation token.
pub(crate) const PREFIX: &str = "atip-confirm-v2:";
/// How long an issued token may be redeemed: the time a human has to answer.
pub(crate) const TTL: Duration = Duration::from_secs(600);
/// Issued, unredeemed tokens remembered at most; past it the oldest is forgotten (its
/// retry is then declined and asks again), so a client cannot grow the server's memory.
pub(crate) const MAX_ISSUED: usize = 4096;
const NONCE: usize = 16;

/// The server's confirmation tokens: the secret key and the tokens issued, shared by
/// every session of one server process.
pub(crate) struct Tokens {
    key: ring::hmac::Key,
    issued: Mutex<Issued>,
}

#[derive(Default)]
struct Issued {
    order: VecDeque<[u8; NONCE]>,
    expires: HashMap<[u8; NONCE], Instant>,
}

/// One exact call: what a token is bound to besides the session.
pub(crate) struct Call {
    bytes: Vec<u8>,
}

impl Call {
    /// `name` called with `args`; arguments in canonical form (object keys sorted at
    /// every depth), so the same call is the same call whatever order its keys came in.
    pub(crate) fn new(name: &str, args: &Map<String, Value>) -> Call {
        let args = serde_json::to_vec(&canonical_map(args)).unwrap_or_default();
        let mut bytes = Vec::with_capacity(name.len() + args.len() + 16);
        put(&mut bytes, name.as_bytes());
        put(&mut bytes, &args);
        Call { bytes }
    }
}

/// Length-prefixed, so no two different (scope, call) pairs give the same MAC input.
fn put(out: &mut Vec<u8>, part: &[u8]) {
    out.extend_from_slice(&(part.len() as u64).to_be_bytes());
    out.extend_from_slice(part);
}

fn canonical_map(m: &Map<String, Value>) -> Value {
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    Value::Object(
        keys.into_iter()
            .map(|k| (k.clone(), canonical(&m[k])))
            .collect(),
    )
}

fn canonical(v: &Value) -> Value {
    match v {
        Value::Object(m) => canonical_map(m),
        Value::Array(a) => Value::Array(a.iter().map(canonical).collect()),
        v => v.clone(),
    }
}

/// The operating system gave no random bytes for the confirmation key.
#[derive(Debug, thiserror::Error)]
#[error("no random bytes for the confirmation key: {0}")]
pub(crate) struct NoRandom(#[source] std::io::Error);

impl From<NoRandom> for AtipError {
    /// Internal (exit 70): every supported system has a random source.
    fn from(e: NoRandom) -> Self {
        AtipError::new(ErrorCode::Internal, e.to_string())
    }
}

impl Tokens {
    /// A fresh key from the operating system's random source.
    pub(crate) fn new() -> Result<Tokens, NoRandom> {
        let mut key = [0u8; 32];
        atip_base::tls::random_bytes(&mut key).map_err(NoRandom)?;
        Ok(Tokens {
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key),
            issued: Mutex::new(Issued::default()),
        })
    }

    fn mac_input(scope: &str, nonce: &[u8], call: &Call) -> Vec<u8> {
        let mut data = Vec::with_capacity(scope.len() + nonce.len() + call.bytes.len() + 24);
        put(&mut data, scope.as_bytes());
        put(&mut data, nonce);
        data.extend_from_slice(&call.bytes);
        data
    }

    /// A new token for `call` in session `scope`, remembered for [`TTL`].
    pub(crate) fn mint(&self, scope: &str, call: &Call) -> Option<String> {
        let mut nonce = [0u8; NONCE];
        atip_base::tls::random_bytes(&mut nonce).ok()?;
        let tag = ring::hmac::sign(&self.key, &Self::mac_input(scope, &nonce, call));
        let now = Instant::now();
        let mut issued = self.issued.lock().unwrap_or_else(|p| p.into_inner());
        // Expired ones first, then the oldest past the cap.
        while let Some(old) = issued.order.front().copied() {
            let expired = issued.expires.get(&old).is_none_or(|t| *t <= now);
            if !expired && issued.order.len() < MAX_ISSUED {
                break;
            }
            issued.order.pop_front();
            issued.expires.remove(&old);
        }
        issued.order.push_back(nonce);
        issued.expires.insert(nonce, now + TTL);
        Some(format!(
            "{PREFIX}{}.{}",
            hex::encode(nonce),
            hex::encode(tag.as_ref())
        ))
    }

    /// Whether `token` was minted by this server for `call` in session `scope`, has not
    /// expired and was not redeemed before; a token that passes is spent.
    pub(crate) fn redeem(&self, token: &str, scope: &str, call: &Call) -> bool {
        let Some((nonce, tag)) = token
            .strip_prefix(PREFIX)
            .and_then(|t| t.split_once('.'))
            .and_then(|(n, t)| Some((hex::decode(n).ok()?, hex::decode(t).ok()?)))
        else {
            return false;
        };
        let Ok(nonce) = <[u8; NONCE]>::try_from(nonce.as_slice()) else {
            return false;
        };
        // Constant-time comparison inside `verify`.
        if ring::hmac::verify(&self.key, &Self::mac_input(scope, &nonce, call), &tag).is_err() {
            return false;
        }
        let mut issued = self.issued.lock().unwrap_or_else(|p| p.into_inner());
        let Some(expires) = issued.expires.remove(&nonce) else {
            return false;
        };
        issued.order.retain(|n| *n != nonce);
        Instant::now() < expires
    }

    #[cfg(test)]
    fn issued(&self) -> usize {
        self.issued.lock().unwrap().expires.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_token_is_good_once_for_its_session_and_call() {
        let t = Tokens::new().unwrap();
        let call = Call::new("t_delete", &args(json!({"target": "a"})));
        let tok = t.mint("s1", &call).unwrap();
        assert!(tok.starts_with(PREFIX));
        // Another call, another tool, another session: refused, and not spent.
        let other = Call::new("t_delete", &args(json!({"target": "b"})));
        assert!(!t.redeem(&tok, "s1", &other));
        assert!(!t.redeem(
            &tok,
            "s1",
            &Call::new("t_other", &args(json!({"target": "a"})))
        ));
        assert!(!t.redeem(&tok, "s2", &call));
        assert!(t.redeem(&tok, "s1", &call));
        // Single use.
        assert!(!t.redeem(&tok, "s1", &call));
    }

    #[test]
    fn key_order_does_not_change_the_call_but_values_do() {
        let t = Tokens::new().unwrap();
        let a = Call::new(
            "x",
            &args(json!({"a": 1, "b": {"d": 2, "c": [1, {"z": 0, "y": 1}]}})),
        );
        let b = Call::new(
            "x",
            &args(json!({"b": {"c": [1, {"y": 1, "z": 0}], "d": 2}, "a": 1})),
        );
        let tok = t.mint("s", &a).unwrap();
        assert!(t.redeem(&tok, "s", &b));
        let tok = t.mint("s", &a).unwrap();
        let c = Call::new(
            "x",
            &args(json!({"a": 1, "b": {"d": 2, "c": [{"z": 0, "y": 1}, 1]}})),
        );
        assert!(!t.redeem(&tok, "s", &c));
    }

    #[test]
    fn forged_and_foreign_tokens_are_refused() {
        let t = Tokens::new().unwrap();
        let call = Call::new("t_delete", &args(json!({"target": "a"})));
        // The old scheme: a public hash of name and arguments.
        let old = format!(
            "atip-confirm-v1:{}",
            crate::digest::sha256_hex_parts(&[b"t_delete", b"\0", br#"{"target":"a"}"#])
        );
        assert!(!t.redeem(&old, "s", &call));
        // Right shape, made-up MAC; a truncated MAC; garbage.
        let tok = t.mint("s", &call).unwrap();
        let (head, mac) = tok.rsplit_once('.').unwrap();
        let flipped = format!(
            "{head}.{}{}",
            if mac.starts_with('0') { '1' } else { '0' },
            &mac[1..]
        );
        assert!(!t.redeem(&flipped, "s", &call));
        assert!(!t.redeem(&format!("{head}.{}", &mac[..32]), "s", &call));
        assert!(!t.redeem("atip-confirm-v2:zz.zz", "s", &call));
        // Minted by another server (another key): refused.
        let other = Tokens::new().unwrap();
        let foreign = other.mint("s", &call).unwrap();
        assert!(!t.redeem(&foreign, "s", &call));
        // The genuine one still works: failed attempts do not spend it.
        assert!(t.redeem(&tok, "s", &call));
    }

    #[test]
    fn issued_tokens_are_bounded_oldest_forgotten() {
        let t = Tokens::new().unwrap();
        let call = Call::new("x", &Map::new());
        let first = t.mint("s", &call).unwrap();
        for _ in 0..MAX_ISSUED + 10 {
            t.mint("s", &call).unwrap();
        }
        assert_eq!(t.issued(), MAX_ISSUED);
        assert!(!t.redeem(&first, "s", &call));
        let last = t.mint("s", &call).unwrap();
        assert!(t.redeem(&last, "s", &call));
    }
}
