//! The ATIP RFC's own policy documents (§8.2 `delegation`, §9.2 `autoApprove` /
//! `requireConfirmation`), translated into atip's policy. A lead agent writes the RFC's
//! shape; atip enforces it with its own rules and says how it read each field. A field
//! atip cannot honour is an error naming it: a restriction silently dropped would let a
//! sub-agent do what its lead forbade.

use super::{Action, EFFECT_FIELDS, PolicyFile, WhenRule, show_fields};
use serde_json::Value;
use std::collections::BTreeMap;

/// The RFC's top-level keys.
const RFC_KEYS: [&str; 3] = ["delegation", "autoApprove", "requireConfirmation"];

/// Keys of `delegation` atip honours.
const DELEGATION_KEYS: [&str; 3] = ["allowedTools", "deniedCommands", "effectRestrictions"];

/// Effects a delegation can take away: those a call can be refused for having.
/// `idempotent` and `reversible` are qualities, not capabilities, and are refused.
const RESTRICTABLE: [&str; 7] = [
    "destructive",
    "network",
    "subprocess",
    "billable",
    "filesystem.read",
    "filesystem.write",
    "filesystem.delete",
];

/// What in an RFC-shaped policy atip cannot translate; every message names the field.
#[derive(Debug, thiserror::Error)]
pub(super) enum RfcError {
    #[error("a policy must be a JSON object")]
    NotObject,
    #[error(transparent)]
    Format(serde_json::Error),
    #[error("autoApprove is empty: it would approve every call")]
    EmptyApprove,
    #[error("delegation must be an object")]
    DelegationNotObject,
    #[error("delegation.{0} is not something atip can honour (it knows {list})", list = DELEGATION_KEYS.join(", "))]
    DelegationKey(String),
    #[error(
        "delegation.allowedTools and tools.allow are both set: write one, so the allowed set is not the union of two lists"
    )]
    TwoAllowLists,
    #[error("delegation.deniedCommands holds an empty command")]
    EmptyCommand,
    #[error("delegation.effectRestrictions.{0}: atip cannot restrict a call by {0} (it restricts {list})", list = RESTRICTABLE.join(", "))]
    Unrestrictable(String),
    #[error("{0} must be an object of effect fields")]
    NotEffects(&'static str),
    #[error("{what}.{key}: atip cannot honour this effect field (it knows {list})", list = EFFECT_FIELDS.map(|f| format!("effects.{f}")).join(", "))]
    UnknownEffect { what: &'static str, key: String },
    #[error("{what}.{key} must be true or false, not {value}")]
    NotBool {
        what: &'static str,
        key: String,
        value: Value,
    },
    #[error("{what} names {name} twice")]
    Twice { what: &'static str, name: String },
    #[error("{0} must be a list of strings")]
    NotStrings(&'static str),
}

/// Whether the document uses one of the RFC's shapes.
pub(super) fn is_rfc(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| RFC_KEYS.iter().any(|k| o.contains_key(*k)))
}

/// Translates the RFC keys of `doc` (the rest is atip's own format and parsed as such)
/// into one policy, with a line per translated field. Errors name the field.
pub(super) fn translate(doc: Value) -> Result<(PolicyFile, Vec<String>), RfcError> {
    let Value::Object(mut obj) = doc else {
        return Err(RfcError::NotObject);
    };
    let delegation = obj.remove("delegation");
    let approve = obj.remove("autoApprove");
    let confirm = obj.remove("requireConfirmation");
    let mut file: PolicyFile =
        serde_json::from_value(Value::Object(obj)).map_err(RfcError::Format)?;
    let mut lines = Vec::new();
    if let Some(d) = delegation {
        delegate(&mut file, &mut lines, d)?;
    }
    if let Some(a) = approve {
        let fields = effect_map("autoApprove", a)?;
        if fields.is_empty() {
            return Err(RfcError::EmptyApprove);
        }
        lines.push(format!(
            "autoApprove {} → when {{effects: {}, action: allow}}: a call whose effects state all of these runs without asking (lifts the confirm of effects.destructive when stated, effects.billable, effects.filesystemDelete, effects.network; never a deny, never requireConfirmation)",
            show_fields(&fields),
            show_fields(&fields)
        ));
        file.when.push(WhenRule {
            effects: fields,
            action: Action::Allow,
            origin: Some("autoApprove".into()),
        });
    }
    if let Some(c) = confirm {
        // Each field on its own: a call matching any of them asks (the reading that
        // asks more often, where the RFC does not say whether the fields combine).
        for (k, v) in effect_map("requireConfirmation", c)? {
            lines.push(format!(
                "requireConfirmation.effects.{k}: {v} → when {{effects: {{{k}: {v}}}, action: confirm}} (also when {k} is not stated)"
            ));
            file.when.push(WhenRule {
                effects: BTreeMap::from([(k.clone(), v)]),
                action: Action::Confirm,
                origin: Some(format!("requireConfirmation.effects.{k}")),
            });
        }
    }
    Ok((file, lines))
}

/// §8.2: tools allowed, commands denied, effects taken away.
fn delegate(file: &mut PolicyFile, lines: &mut Vec<String>, d: Value) -> Result<(), RfcError> {
    let Value::Object(d) = d else {
        return Err(RfcError::DelegationNotObject);
    };
    if let Some(bad) = d.keys().find(|k| !DELEGATION_KEYS.contains(&k.as_str())) {
        return Err(RfcError::DelegationKey(bad.clone()));
    }
    if let Some(tools) = d.get("allowedTools") {
        let tools = strings("delegation.allowedTools", tools)?;
        if !file.tools.allow.is_empty() {
            return Err(RfcError::TwoAllowLists);
        }
        if tools.is_empty() {
            // An empty allow list means "no restriction" in atip's format; here it
            // means nothing is allowed.
            lines.push("delegation.allowedTools [] → tools.deny [\"*\"] (no tool allowed)".into());
            file.tools.deny.push("*".into());
        } else {
            lines.push(format!(
                "delegation.allowedTools {tools:?} → tools.allow {tools:?}"
            ));
            file.tools.allow = tools;
        }
    }
    if let Some(cmds) = d.get("deniedCommands") {
        for c in strings("delegation.deniedCommands", cmds)? {
            let c = c.split_whitespace().collect::<Vec<_>>().join(" ");
            if c.is_empty() {
                return Err(RfcError::EmptyCommand);
            }
            let below = format!("{c} *");
            lines.push(format!(
                "delegation.deniedCommands {c:?} → commands.deny [{c:?}, {below:?}] (the command and every command below it)"
            ));
            file.commands.deny.push(c);
            file.commands.deny.push(below);
        }
    }
    if let Some(r) = d.get("effectRestrictions") {
        for (k, permitted) in effect_map("delegation.effectRestrictions", r.clone())? {
            if !RESTRICTABLE.contains(&k.as_str()) {
                return Err(RfcError::Unrestrictable(k));
            }
            if permitted {
                lines.push(format!(
                    "delegation.effectRestrictions.{k}: true → no rule ({k} stays as the rest of the policy says; a delegation only restricts)"
                ));
            } else {
                lines.push(format!(
                    "delegation.effectRestrictions.{k}: false → when {{effects: {{{k}: true}}, action: deny}} (also when {k} is not stated)"
                ));
                file.when.push(WhenRule {
                    effects: BTreeMap::from([(k.clone(), true)]),
                    action: Action::Deny,
                    origin: Some(format!("delegation.effectRestrictions.{k}")),
                });
            }
        }
    }
    Ok(())
}

/// `{"effects.idempotent": true, …}` → `{idempotent: true, …}`; the `effects.` prefix
/// is optional, `cost.billable` is `billable`. Every value must be a boolean.
fn effect_map(what: &'static str, v: Value) -> Result<BTreeMap<String, bool>, RfcError> {
    let Value::Object(m) = v else {
        return Err(RfcError::NotEffects(what));
    };
    let mut out = BTreeMap::new();
    for (k, v) in m {
        let name = k.strip_prefix("effects.").unwrap_or(&k);
        let name = if name == "cost.billable" {
            "billable"
        } else {
            name
        };
        if !EFFECT_FIELDS.contains(&name) {
            return Err(RfcError::UnknownEffect { what, key: k });
        }
        let Value::Bool(b) = v else {
            return Err(RfcError::NotBool {
                what,
                key: k,
                value: v,
            });
        };
        if out.insert(name.to_string(), b).is_some() {
            return Err(RfcError::Twice {
                what,
                name: name.to_string(),
            });
        }
    }
    Ok(out)
}

/// A list of strings, or an error naming `what`.
fn strings(what: &'static str, v: &Value) -> Result<Vec<String>, RfcError> {
    let err = || RfcError::NotStrings(what);
    v.as_array()
        .ok_or_else(err)?
        .iter()
        .map(|s| s.as_str().map(str::to_string).ok_or_else(err))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delegation_translates_and_unknown_fields_are_named() {
        let (f, lines) = translate(json!({"delegation": {
            "allowedTools": ["gh", "git"],
            "deniedCommands": ["gh repo delete"],
            "effectRestrictions": {"destructive": false, "network": true}
        }}))
        .unwrap();
        assert_eq!(f.tools.allow, ["gh", "git"]);
        assert_eq!(f.commands.deny, ["gh repo delete", "gh repo delete *"]);
        assert_eq!(f.when.len(), 1);
        assert_eq!(f.when[0].action, Action::Deny);
        assert_eq!(lines.len(), 4, "{lines:?}");
        for (doc, named) in [
            (
                json!({"delegation": {"allowedCommands": []}}),
                "delegation.allowedCommands",
            ),
            (
                json!({"delegation": {"effectRestrictions": {"idempotent": false}}}),
                "effectRestrictions.idempotent",
            ),
            (
                json!({"autoApprove": {"effects.color": true}}),
                "autoApprove.effects.color",
            ),
            (
                json!({"autoApprove": {"effects.network": "no"}}),
                "autoApprove.effects.network",
            ),
            (json!({"autoApprove": {}}), "autoApprove is empty"),
            (
                json!({"requireConfirmation": [1]}),
                "requireConfirmation must be",
            ),
            (
                json!({"autoApprove": {"network": false}, "bogus": 1}),
                "bogus",
            ),
        ] {
            let e = translate(doc).unwrap_err().to_string();
            assert!(e.contains(named), "{e}");
        }
        // An empty allow list allows nothing (atip's empty list would allow all).
        let (f, _) = translate(json!({"delegation": {"allowedTools": []}})).unwrap();
        assert!(f.tools.allow.is_empty());
        assert_eq!(f.tools.deny, ["*"]);
    }

    #[test]
    fn approval_and_confirmation_mix_with_atip_keys() {
        let (f, lines) = translate(json!({
            "autoApprove": {"effects.idempotent": true, "effects.network": false},
            "requireConfirmation": {"effects.destructive": true, "effects.cost.billable": true},
            "effects": {"network": "deny"}
        }))
        .unwrap();
        assert_eq!(f.effects.network, Action::Deny);
        assert_eq!(f.when.len(), 3);
        assert_eq!(f.when[0].action, Action::Allow);
        assert_eq!(f.when[0].effects.len(), 2);
        assert!(f.when[1..].iter().all(|w| w.action == Action::Confirm));
        assert_eq!(lines.len(), 3);
    }
}
