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

/// Whether the document uses one of the RFC's shapes.
pub(super) fn is_rfc(v: &Value) -> bool {
    v.as_object()
        .is_some_and(|o| RFC_KEYS.iter().any(|k| o.contains_key(*k)))
}

/// Translates the RFC keys of `doc` (the rest is atip's own format and parsed as such)
/// into one policy, with a line per translated field. Errors name the field.
pub(super) fn translate(doc: Value) -> Result<(PolicyFile, Vec<String>), String> {
    let Value::Object(mut obj) = doc else {
        return Err("a policy must be a JSON object".into());
    };
    let delegation = obj.remove("delegation");
    let approve = obj.remove("autoApprove");
    let confirm = obj.remove("requireConfirmation");
    let mut file: PolicyFile =
        serde_json::from_value(Value::Object(obj)).map_err(|e| e.to_string())?;
    let mut lines = Vec::new();
    if let Some(d) = delegation {
        delegate(&mut file, &mut lines, d)?;
    }
    if let Some(a) = approve {
        let fields = effect_map("autoApprove", a)?;
        if fields.is_empty() {
            return Err("autoApprove is empty: it would approve every call".into());
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
fn delegate(file: &mut PolicyFile, lines: &mut Vec<String>, d: Value) -> Result<(), String> {
    let Value::Object(d) = d else {
        return Err("delegation must be an object".into());
    };
    if let Some(bad) = d.keys().find(|k| !DELEGATION_KEYS.contains(&k.as_str())) {
        return Err(format!(
            "delegation.{bad} is not something atip can honour (it knows {})",
            DELEGATION_KEYS.join(", ")
        ));
    }
    if let Some(tools) = d.get("allowedTools") {
        let tools = strings("delegation.allowedTools", tools)?;
        if !file.tools.allow.is_empty() {
            return Err(
                "delegation.allowedTools and tools.allow are both set: write one, so the allowed set is not the union of two lists".into(),
            );
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
                return Err("delegation.deniedCommands holds an empty command".into());
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
                return Err(format!(
                    "delegation.effectRestrictions.{k}: atip cannot restrict a call by {k} (it restricts {})",
                    RESTRICTABLE.join(", ")
                ));
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
fn effect_map(what: &str, v: Value) -> Result<BTreeMap<String, bool>, String> {
    let Value::Object(m) = v else {
        return Err(format!("{what} must be an object of effect fields"));
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
            return Err(format!(
                "{what}.{k}: atip cannot honour this effect field (it knows {})",
                EFFECT_FIELDS.map(|f| format!("effects.{f}")).join(", ")
            ));
        }
        let Value::Bool(b) = v else {
            return Err(format!("{what}.{k} must be true or false, not {v}"));
        };
        if out.insert(name.to_string(), b).is_some() {
            return Err(format!("{what} names {name} twice"));
        }
    }
    Ok(out)
}

/// A list of strings, or an error naming `what`.
fn strings(what: &str, v: &Value) -> Result<Vec<String>, String> {
    let err = || format!("{what} must be a list of strings");
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
            let e = translate(doc).unwrap_err();
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
