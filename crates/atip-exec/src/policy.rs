//! The execution policy: which tool calls may run, which need a human's confirmation,
//! which are refused, and the guardrails on their arguments (path roots, size limits).
//!
//! The policy is a JSON file (format in `spec/policy.md`), by default
//! `<config-dir>/policy.json`; without one the built-in defaults apply. Evaluation is
//! pure: it looks at facts about one call and returns a decision naming every rule that
//! applied. Must not run anything, prompt, or print.

use super::trust::{TrustFacts, TrustLevel};
use crate::model::Effects;
use crate::output::{AtipError, ErrorCode};
use crate::registry::Vouch;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

mod rfc;

/// File name of the default policy inside the config directory.
pub const POLICY_FILE: &str = "policy.json";

/// What a rule does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Runs without asking.
    Allow,
    /// Runs only after confirmation (`--yes`, a terminal prompt, MCP elicitation).
    Confirm,
    /// Never runs.
    Deny,
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Action::Allow => "allow",
            Action::Confirm => "confirm",
            Action::Deny => "deny",
        })
    }
}

/// Allow and deny glob lists.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    /// When non-empty, only matching calls may run.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Matching calls never run; deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Actions for effect classes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EffectRules {
    /// `effects.destructive: true`.
    #[serde(default = "confirm")]
    pub destructive: Action,
    /// `effects.cost.billable: true`.
    #[serde(default = "confirm")]
    pub billable: Action,
    /// `effects.filesystem.delete: true`.
    #[serde(default = "confirm")]
    pub filesystem_delete: Action,
    /// `effects.network: true`.
    #[serde(default = "allow")]
    pub network: Action,
    /// Commands whose safety is unknown: no effects stated anywhere, or metadata from a
    /// partial answer whose omitted commands have `safetyAssumption: unknown`.
    #[serde(default = "confirm")]
    pub unknown: Action,
}

impl Default for EffectRules {
    fn default() -> Self {
        EffectRules {
            destructive: Action::Confirm,
            billable: Action::Confirm,
            filesystem_delete: Action::Confirm,
            network: Action::Allow,
            unknown: Action::Confirm,
        }
    }
}

fn confirm() -> Action {
    Action::Confirm
}
fn allow() -> Action {
    Action::Allow
}

/// Trust floor, on what atip derives (see [`super::trust`]), never on a tool's claim.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustRule {
    /// Lowest derived trust level that runs under the other rules: `unsigned`,
    /// `unverified` or `verified`. (`compromised` never runs.)
    #[serde(default = "default_minimum")]
    pub minimum: String,
    /// Lowest vouching class that runs under the other rules: `inferred` < `tool` < `curated` <
    /// `user` < `admin` < `builtin`.
    #[serde(default = "default_vouch")]
    pub vouch: String,
    /// What happens to tools below either floor.
    #[serde(default = "confirm")]
    pub below: Action,
}

fn default_minimum() -> String {
    "unsigned".into()
}

fn default_vouch() -> String {
    "tool".into()
}

impl Default for TrustRule {
    fn default() -> Self {
        TrustRule {
            minimum: default_minimum(),
            vouch: default_vouch(),
            below: Action::Confirm,
        }
    }
}

/// Command runners the policy lets run, and more of them than the built-in table.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerRules {
    /// Globs on the program's basename, its absolute path, the registered tool name or
    /// the command path: matching runners run under the other rules instead of being
    /// denied.
    #[serde(default)]
    pub allow: Vec<String>,
    /// More program basenames that are runners, on top of the built-in list.
    #[serde(default)]
    pub programs: Vec<String>,
    /// More command paths that are runners (globs such as `mytool exec*`).
    #[serde(default)]
    pub commands: Vec<String>,
    /// More flags that make a program a runner: program basename → flags.
    #[serde(default)]
    pub options: std::collections::BTreeMap<String, Vec<String>>,
}

/// Path guardrails.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRules {
    /// Directories file and directory arguments must resolve inside (symlinks
    /// followed). Relative entries are relative to the working directory. Empty means
    /// the working directory only.
    #[serde(default)]
    pub roots: Vec<PathBuf>,
}

/// Guardrails for `url` arguments.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UrlRules {
    /// Schemes a URL argument may use.
    #[serde(default = "default_schemes")]
    pub schemes: Vec<String>,
    /// When non-empty, the host must match one of these globs (`*.github.com`).
    #[serde(default)]
    pub allow: Vec<String>,
    /// Hosts never allowed (globs).
    #[serde(default)]
    pub deny: Vec<String>,
    /// Loopback, private, link-local and unspecified addresses and `localhost`.
    #[serde(default = "confirm")]
    pub private: Action,
}

fn default_schemes() -> Vec<String> {
    vec!["http".into(), "https".into()]
}

impl Default for UrlRules {
    fn default() -> Self {
        UrlRules {
            schemes: default_schemes(),
            allow: Vec::new(),
            deny: Vec::new(),
            private: Action::Confirm,
        }
    }
}

/// Environment passed to tools.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvRules {
    /// Variables passed through to every tool when set (on top of the `process`
    /// allowlist and the tool's own authentication variables), e.g. `KUBECONFIG`.
    #[serde(default)]
    pub pass: Vec<String>,
}

/// Size limits on arguments and batches.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Limits {
    /// Longest string argument, in bytes.
    #[serde(default = "default_max_string")]
    pub max_string_bytes: usize,
    /// Most items in one array argument.
    #[serde(default = "default_max_items")]
    pub max_array_items: usize,
    /// Most tool calls taken from one provider response.
    #[serde(default = "default_max_calls")]
    pub max_calls: usize,
    /// Most tool calls one `atip mcp` session runs (0: no limit).
    #[serde(default = "default_session_calls")]
    pub max_session_calls: usize,
    /// Most tool calls one `atip mcp` session starts per minute (0: no limit).
    #[serde(default = "default_per_minute")]
    pub calls_per_minute: usize,
    /// What a call does when `--jobs` calls already run: `wait` for a slot, or be
    /// refused at once with a retryable `busy` error.
    #[serde(default)]
    pub overflow: Overflow,
}

/// What a call finds when every slot is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Overflow {
    /// Wait for a running call to finish.
    #[default]
    Wait,
    /// Refuse with a retryable error.
    Refuse,
}

fn default_session_calls() -> usize {
    1000
}
fn default_per_minute() -> usize {
    120
}

fn default_max_string() -> usize {
    64 * 1024
}
fn default_max_items() -> usize {
    256
}
fn default_max_calls() -> usize {
    64
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_string_bytes: default_max_string(),
            max_array_items: default_max_items(),
            max_calls: default_max_calls(),
            max_session_calls: default_session_calls(),
            calls_per_minute: default_per_minute(),
            overflow: Overflow::Wait,
        }
    }
}

/// The policy file, as written.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyFile {
    /// Format version, `1`.
    #[serde(default = "one")]
    pub version: u32,
    /// Globs on tool names (`gh`) and flattened tool names (`gh_pr_create`).
    #[serde(default)]
    pub tools: Lists,
    /// Globs on command paths as typed (`gh pr create`, `git *`).
    #[serde(default)]
    pub commands: Lists,
    /// Globs on the absolute path of the executable (`/usr/bin/*`).
    #[serde(default)]
    pub programs: Lists,
    /// Effect rules.
    #[serde(default)]
    pub effects: EffectRules,
    /// Trust floor.
    #[serde(default)]
    pub trust: TrustRule,
    /// Path guardrails.
    #[serde(default)]
    pub paths: PathRules,
    /// Size limits.
    #[serde(default)]
    pub limits: Limits,
    /// Environment passed to tools.
    #[serde(default)]
    pub env: EnvRules,
    /// Guardrails for `url` arguments.
    #[serde(default)]
    pub urls: UrlRules,
    /// Command runners allowed, and more runners.
    #[serde(default)]
    pub runners: RunnerRules,
    /// Rules on the call's effects as a whole (what the RFC's `autoApprove`,
    /// `requireConfirmation` and `delegation.effectRestrictions` translate into).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub when: Vec<WhenRule>,
}

/// A rule on several effect fields at once: when the call's effects have the values
/// named, `action`. `allow` needs every field stated with its value and lifts the
/// `confirm` of the effect rules; `confirm` and `deny` also match a field left unstated
/// (unknown is never safe).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WhenRule {
    /// Effect field (one of [`EFFECT_FIELDS`]) → the value it must have.
    pub effects: BTreeMap<String, bool>,
    /// What a matching call gets.
    pub action: Action,
    /// Where the rule came from (`autoApprove`, …), named in reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// The effect fields a `when` rule can name.
pub const EFFECT_FIELDS: [&str; 9] = [
    "destructive",
    "idempotent",
    "reversible",
    "network",
    "subprocess",
    "billable",
    "filesystem.read",
    "filesystem.write",
    "filesystem.delete",
];

/// The value of one of [`EFFECT_FIELDS`] in `e`, `None` when unstated. `destructive` is
/// `Effects::possibly_destructive` where that is decided: deleting files is destructive.
pub fn effect_field(e: &Effects, name: &str) -> Option<bool> {
    let fs = |get: fn(&crate::model::FilesystemEffects) -> Option<bool>| {
        e.filesystem.as_ref().and_then(get)
    };
    match name {
        "destructive" if e.deletes_files() => Some(true),
        "destructive" => e.destructive,
        "idempotent" => e.idempotent,
        "reversible" => e.reversible,
        "network" => e.network,
        "subprocess" => e.subprocess,
        "billable" => e.cost.as_ref().and_then(|c| c.billable),
        "filesystem.read" => fs(|f| f.read),
        "filesystem.write" => fs(|f| f.write),
        "filesystem.delete" => fs(|f| f.delete),
        _ => None,
    }
}

/// `{idempotent: true, network: false}` for reasons and translations.
pub(crate) fn show_fields(fields: &BTreeMap<String, bool>) -> String {
    let inner: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", inner.join(", "))
}

fn one() -> u32 {
    1
}

impl Default for PolicyFile {
    fn default() -> Self {
        PolicyFile {
            version: 1,
            tools: Lists::default(),
            commands: Lists::default(),
            programs: Lists::default(),
            effects: EffectRules::default(),
            trust: TrustRule::default(),
            paths: PathRules::default(),
            limits: Limits::default(),
            env: EnvRules::default(),
            urls: UrlRules::default(),
            runners: RunnerRules::default(),
            when: Vec::new(),
        }
    }
}

/// A loaded, compiled policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The file as written (or the defaults).
    pub file: PolicyFile,
    /// Where it came from; `None` for the built-in defaults.
    pub source: Option<PathBuf>,
    /// How the RFC's policy documents in the file were translated, one line each
    /// (empty for atip's own format); shown by `--dry-run` and `--verbose`.
    pub translated: Vec<String>,
    tools: Compiled,
    commands: Compiled,
    programs: Compiled,
    url_hosts: Compiled,
    runners_allow: GlobSet,
    runner_commands: GlobSet,
    trust_floor: TrustLevel,
    vouch_floor: Vouch,
    roots: Vec<PathBuf>,
}

#[derive(Debug, Clone)]
struct Compiled {
    allow: Option<GlobSet>,
    deny: GlobSet,
}

impl Compiled {
    fn new(lists: &Lists, field: &str) -> Result<Compiled, AtipError> {
        let build = |pats: &[String], which: &str| -> Result<GlobSet, AtipError> {
            let mut b = GlobSetBuilder::new();
            for p in pats {
                let g = Glob::new(p).map_err(|e| {
                    AtipError::new(
                        ErrorCode::PolicyInvalid,
                        format!("invalid glob {p:?} in policy {field}.{which}: {e}"),
                    )
                })?;
                b.add(g);
            }
            b.build()
                .map_err(|e| AtipError::new(ErrorCode::PolicyInvalid, format!("{field}: {e}")))
        };
        Ok(Compiled {
            allow: if lists.allow.is_empty() {
                None
            } else {
                Some(build(&lists.allow, "allow")?)
            },
            deny: build(&lists.deny, "deny")?,
        })
    }
}

/// The rules that applied to a call so far; a rule whose action is allow is no hit.
#[derive(Default)]
struct Hits(Vec<RuleHit>);

impl Hits {
    fn hit(&mut self, rule: &str, action: Action, reason: String) {
        if action != Action::Allow {
            self.0.push(RuleHit {
                rule: rule.into(),
                action,
                reason,
            });
        }
    }
}

/// An approving `when` rule (`by`) lifts the confirm of the effect rules whose trigger
/// the metadata states; a destructiveness left unstated is unknown and still asks.
/// Returns what was lifted, for the decision's `approved`.
fn lift_approved(rules: &mut Vec<RuleHit>, by: &str, e: &Effects) -> Vec<String> {
    let mut approved = Vec::new();
    rules.retain(|r| {
        let liftable = r.action == Action::Confirm
            && match r.rule.as_str() {
                "effects.billable" | "effects.filesystemDelete" | "effects.network" => true,
                "effects.destructive" => e.destructive.is_some(),
                _ => false,
            };
        if liftable {
            approved.push(format!("{} (lifted by {by})", r.rule));
        }
        !liftable
    });
    approved
}

/// One rule that applied to a call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleHit {
    /// Rule id, e.g. `effects.destructive`, `tools.deny`, `trust.minimum`, `interactive`.
    pub rule: String,
    /// What it asks for.
    pub action: Action,
    /// Why, in words.
    pub reason: String,
}

/// The policy's verdict on one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Decision {
    /// The strictest action of all rules that applied (`allow` when none did).
    pub action: Action,
    /// Every rule that applied.
    pub rules: Vec<RuleHit>,
    /// The call conditions that made this call's effects differ from the command's
    /// (`--force: destructive`, a written file that exists, a sandbox atip added).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    /// The `confirm` rules an approving `when` rule (the RFC's `autoApprove`) lifted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub approved: Vec<String>,
}

impl Decision {
    /// Rule ids with the given action.
    pub fn rule_ids(&self, action: Action) -> Vec<String> {
        self.rules
            .iter()
            .filter(|r| r.action == action)
            .map(|r| r.rule.clone())
            .collect()
    }

    /// A one-line explanation of the rules with the given action.
    pub fn explain(&self, action: Action) -> String {
        self.rules
            .iter()
            .filter(|r| r.action == action)
            .map(|r| format!("{} ({})", r.rule, r.reason))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// What the policy looks at: every fact about one call, gathered by the caller. Build it
/// and pass it to `Policy::evaluate`, the one function that decides.
#[derive(Debug, Clone)]
pub struct CallFacts<'a> {
    /// Registered tool name, e.g. `gh`.
    pub tool: &'a str,
    /// Flattened tool name, e.g. `gh_pr_create`.
    pub flat_name: &'a str,
    /// Command path as typed, e.g. `gh pr create`.
    pub command_path: &'a str,
    /// Executable, as registered (possibly a symlink).
    pub program: &'a Path,
    /// The file `program` resolves to (symlinks followed), when it differs: `programs`
    /// globs judge both, and an `allow` must match the file that runs.
    pub program_resolved: Option<&'a Path>,
    /// Effects of this call: the command's under the conditions that hold.
    pub effects: &'a Effects,
    /// The metadata states no effects for the command itself (before call conditions):
    /// unknown, whatever a condition adds.
    pub effects_unstated: bool,
    /// Trust as atip derived it (level and who vouches).
    pub trust: &'a TrustFacts,
    /// The metadata is a partial answer whose omitted commands have unknown safety.
    pub partial_unknown: bool,
    /// Whether `--allow-interactive` was given.
    pub allow_interactive: bool,
    /// The program is atip itself (same file, or a copy): never run.
    pub is_self: bool,
    /// Names the program answers to (basename, and its resolved target's), for the
    /// runner table and `runners.allow`.
    pub program_names: &'a [String],
    /// Why the call runs another program (built-in table, `x-atip-runner` or an option
    /// such as `find -exec`), when it does, before the policy's own runner lists.
    pub runner: Option<String>,
}

/// The checks of a policy file that need nothing compiled, in the order its errors are
/// reported: its version, the names in `env.pass`, the two trust floors (returned), the
/// effect fields `when` rules name, and no `when` allow without fields.
fn check_fields(file: &PolicyFile) -> Result<(TrustLevel, Vouch), AtipError> {
    if file.version != 1 {
        return Err(AtipError::new(
            ErrorCode::PolicyInvalid,
            format!("unsupported policy version {} (expected 1)", file.version),
        ));
    }
    if let Some(bad) = file
        .env
        .pass
        .iter()
        .find(|n| n.is_empty() || n.contains(['=', '\0']))
    {
        return Err(AtipError::new(
            ErrorCode::PolicyInvalid,
            format!("invalid environment variable name {bad:?} in env.pass"),
        ));
    }
    let trust_floor = TrustLevel::parse_floor(&file.trust.minimum).ok_or_else(|| {
        AtipError::new(
            ErrorCode::PolicyInvalid,
            format!(
                "unknown trust.minimum {:?}: expected a derived trust level, {}",
                file.trust.minimum,
                TrustLevel::FLOORS.join(", ")
            ),
        )
        .hint("trust.minimum acts on the level atip derives, not on the tool's own trust.source; use trust.vouch to require who vouches (see spec/policy.md)")
    })?;
    let vouch_floor = Vouch::parse(&file.trust.vouch).ok_or_else(|| {
        AtipError::new(
            ErrorCode::PolicyInvalid,
            format!(
                "unknown trust.vouch {:?}: expected {}",
                file.trust.vouch,
                Vouch::ALL.join(", ")
            ),
        )
    })?;
    for (i, w) in file.when.iter().enumerate() {
        if let Some(bad) = w
            .effects
            .keys()
            .find(|k| !EFFECT_FIELDS.contains(&k.as_str()))
        {
            return Err(AtipError::new(
                ErrorCode::PolicyInvalid,
                format!(
                    "unknown effect field {bad:?} in when[{i}].effects: expected {}",
                    EFFECT_FIELDS.join(", ")
                ),
            ));
        }
        if w.effects.is_empty() && w.action == Action::Allow {
            return Err(AtipError::new(
                ErrorCode::PolicyInvalid,
                format!("when[{i}] allows with no effects named: it would approve every call"),
            ));
        }
    }
    Ok((trust_floor, vouch_floor))
}

impl Policy {
    /// Compiles a policy file; `base` resolves relative path roots.
    pub fn new(
        file: PolicyFile,
        source: Option<PathBuf>,
        base: &Path,
    ) -> Result<Policy, AtipError> {
        let (trust_floor, vouch_floor) = check_fields(&file)?;
        let globs = |pats: &[String], field: &str| -> Result<GlobSet, AtipError> {
            Compiled::new(
                &Lists {
                    allow: Vec::new(),
                    deny: pats.to_vec(),
                },
                field,
            )
            .map(|c| c.deny)
        };
        let runners_allow = globs(&file.runners.allow, "runners.allow")?;
        let runner_commands = globs(&file.runners.commands, "runners.commands")?;
        // No roots named: the working directory is the one root.
        let roots = match file.paths.roots.as_slice() {
            [] => vec![resolve_path(&base.join("."))],
            named => named.iter().map(|r| resolve_path(&base.join(r))).collect(),
        };
        Ok(Policy {
            tools: Compiled::new(&file.tools, "tools")?,
            commands: Compiled::new(&file.commands, "commands")?,
            programs: Compiled::new(&file.programs, "programs")?,
            url_hosts: Compiled::new(
                &Lists {
                    allow: file.urls.allow.clone(),
                    deny: file.urls.deny.clone(),
                },
                "urls",
            )?,
            runners_allow,
            runner_commands,
            trust_floor,
            vouch_floor,
            roots,
            file,
            source,
            translated: Vec::new(),
        })
    }

    /// The built-in defaults, path roots relative to `cwd`.
    pub fn defaults(cwd: &Path) -> Policy {
        Policy::new(PolicyFile::default(), None, cwd).expect("defaults are valid")
    }

    /// Loads `explicit` (must exist), else `<config>/policy.json` when present, else the
    /// defaults. Relative roots resolve against `cwd`.
    pub fn load(
        explicit: Option<&Path>,
        config_dir: &Path,
        cwd: &Path,
    ) -> Result<Policy, AtipError> {
        let (path, required) = match explicit {
            Some(p) => (p.to_path_buf(), true),
            None => (config_dir.join(POLICY_FILE), false),
        };
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(Policy::defaults(cwd));
            }
            Err(e) => {
                return Err(AtipError::new(
                    ErrorCode::PolicyUnreadable,
                    format!("failed to read policy {}: {e}", path.display()),
                ));
            }
        };
        let invalid = |e: serde_json::Error| {
            AtipError::new(
                ErrorCode::PolicyInvalid,
                format!(
                    "invalid policy {} at line {} column {}: {e}",
                    path.display(),
                    e.line(),
                    e.column()
                ),
            )
            .hint("see spec/policy.md for the format")
        };
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(invalid)?;
        let (file, translated) = if rfc::is_rfc(&value) {
            rfc::translate(value).map_err(|e| {
                AtipError::new(
                    ErrorCode::PolicyInvalid,
                    format!("invalid policy {}: {e}", path.display()),
                )
                .hint("spec/policy.md \"The RFC's policy documents\" lists what atip honours")
            })?
        } else {
            (serde_json::from_slice(&bytes).map_err(invalid)?, Vec::new())
        };
        let mut policy = Policy::new(file, Some(path), cwd)?;
        policy.translated = translated;
        Ok(policy)
    }

    /// Canonical allowed roots for file and directory arguments.
    pub(crate) fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Size limits.
    pub fn limits(&self) -> &Limits {
        &self.file.limits
    }

    /// The rules that deny every call of this command whatever its arguments — the
    /// `tools`, `commands` and `programs` lists — or none. What these rules deny is not
    /// offered to a model (search results, exports, suggestions): readers ask here, and
    /// the answer is the one `evaluate` gives, so the lists are matched one way.
    pub fn withholds(
        &self,
        tool: &str,
        flat_name: &str,
        command_path: &str,
        program: &Path,
    ) -> Vec<String> {
        let effects = crate::model::Effects::default();
        let trust = super::trust::TrustFacts {
            level: super::trust::TrustLevel::Verified,
            vouch: crate::registry::Vouch::User,
            why: String::new(),
        };
        let names = super::runners::program_names(program);
        let resolved = std::fs::canonicalize(program).ok().filter(|r| r != program);
        let facts = CallFacts {
            tool,
            flat_name,
            command_path,
            program,
            program_resolved: resolved.as_deref(),
            effects: &effects,
            effects_unstated: true,
            trust: &trust,
            partial_unknown: false,
            allow_interactive: true,
            is_self: false,
            program_names: &names,
            runner: None,
        };
        self.evaluate(&facts)
            .rules
            .into_iter()
            .filter(|r| {
                r.action == Action::Deny
                    && ["tools.", "commands.", "programs."]
                        .iter()
                        .any(|p| r.rule.starts_with(p))
            })
            .map(|r| r.rule)
            .collect()
    }

    /// Whether `runners.allow` lets this program run as a command runner (by a name it
    /// answers to, its path, the tool or the command path).
    pub(crate) fn runner_allowed(
        &self,
        names: &[String],
        program: &Path,
        tool: &str,
        command_path: &str,
    ) -> bool {
        let program = program.to_str().unwrap_or("");
        names
            .iter()
            .map(String::as_str)
            .chain([program, tool, command_path])
            .any(|s| self.runners_allow.is_match(s))
    }

    /// Decides on one call: every rule that asks for more than allow, in a fixed order
    /// (lists, effects, `when`, trust, runners, interactive), then the strictest action.
    pub fn evaluate(&self, f: &CallFacts<'_>) -> Decision {
        let mut hits = Hits::default();
        self.list_hits(f, &mut hits);
        self.effect_hits(f, &mut hits);
        let approving = self.when_hits(f.effects, &mut hits);
        self.trust_hits(f, &mut hits);
        self.runner_hits(f, &mut hits);
        if f.effects.needs_human() && !f.allow_interactive {
            hits.hit(
                "interactive",
                Action::Deny,
                "the command needs a terminal, prompts, or required/password stdin; pass --allow-interactive".into(),
            );
        }
        let mut rules = hits.0;
        let approved = match approving {
            Some(by) => lift_approved(&mut rules, &by, f.effects),
            None => Vec::new(),
        };
        let action = rules
            .iter()
            .map(|r| r.action)
            .max()
            .unwrap_or(Action::Allow);
        Decision {
            action,
            rules,
            conditions: Vec::new(),
            approved,
        }
    }

    /// The `tools`, `commands` and `programs` lists: a deny pattern that matches, or an
    /// allow list that does not.
    fn list_hits(&self, f: &CallFacts<'_>, hits: &mut Hits) {
        let registered = f.program.to_str().unwrap_or("");
        let resolved = f.program_resolved.map(|p| p.to_str().unwrap_or(""));
        // For `programs`, an allow must match what runs: the resolved file when the
        // registered path is a link (a link named like an allowed program is not it).
        let program_subjects: Vec<&str> = std::iter::once(registered).chain(resolved).collect();
        let program_allowed: Vec<&str> = vec![resolved.unwrap_or(registered)];
        let lists: [(&Compiled, &str, Vec<&str>, Vec<&str>); 3] = [
            (
                &self.tools,
                "tools",
                vec![f.tool, f.flat_name],
                vec![f.tool, f.flat_name],
            ),
            (
                &self.commands,
                "commands",
                vec![f.command_path],
                vec![f.command_path],
            ),
            (
                &self.programs,
                "programs",
                program_subjects,
                program_allowed,
            ),
        ];
        for (c, field, subjects, allow_subjects) in lists {
            if subjects.iter().any(|s| c.deny.is_match(s)) {
                hits.hit(
                    &format!("{field}.deny"),
                    Action::Deny,
                    format!("{} matches a deny pattern", subjects.join(" / ")),
                );
            }
            if let Some(allow) = &c.allow
                && !allow_subjects.iter().any(|s| allow.is_match(s))
            {
                hits.hit(
                    &format!("{field}.allow"),
                    Action::Deny,
                    format!("{} matches no allow pattern", allow_subjects.join(" / ")),
                );
            }
        }
    }

    /// The `effects` rules: destructive (stated or not stated), billable, deletes files,
    /// network, and effects that are unknown.
    fn effect_hits(&self, f: &CallFacts<'_>, hits: &mut Hits) {
        let e = f.effects;
        let rules_cfg = &self.file.effects;
        if e.possibly_destructive() {
            let why = match e.destructive {
                Some(true) => "the command is destructive",
                Some(false) => "the command deletes files",
                None => {
                    "the metadata does not state destructive: false, so the command may be destructive"
                }
            };
            hits.hit("effects.destructive", rules_cfg.destructive, why.into());
        }
        if e.is_billable() {
            hits.hit(
                "effects.billable",
                rules_cfg.billable,
                "the command may incur charges".into(),
            );
        }
        if e.deletes_files() {
            hits.hit(
                "effects.filesystemDelete",
                rules_cfg.filesystem_delete,
                "the command deletes files".into(),
            );
        }
        if e.network == Some(true) {
            hits.hit(
                "effects.network",
                rules_cfg.network,
                "the command uses the network".into(),
            );
        }
        if f.partial_unknown || f.effects_unstated || *e == Effects::default() {
            let why = if f.partial_unknown {
                "the metadata is partial and omitted commands have unknown safety"
            } else {
                "the metadata states no effects for the command"
            };
            hits.hit("effects.unknown", rules_cfg.unknown, why.into());
        }
    }

    /// The `when` rules. A deny or confirm rule applies when every field it names matches
    /// or is not stated (unknown is never safe); an allow rule only when every field is
    /// stated and matches. Returns the first applying allow rule, which approves.
    fn when_hits(&self, e: &Effects, hits: &mut Hits) -> Option<String> {
        let mut approving = None;
        for (i, w) in self.file.when.iter().enumerate() {
            let label = w.origin.clone().unwrap_or_else(|| format!("when[{i}]"));
            let fields = show_fields(&w.effects);
            if w.action == Action::Allow {
                if w.effects
                    .iter()
                    .all(|(k, v)| effect_field(e, k) == Some(*v))
                {
                    approving.get_or_insert(format!("{label} {fields}"));
                }
            } else if w
                .effects
                .iter()
                .all(|(k, v)| effect_field(e, k).is_none_or(|x| x == *v))
            {
                let rule = match w.action {
                    Action::Deny => "when.deny",
                    _ => "when.confirm",
                };
                hits.hit(
                    rule,
                    w.action,
                    format!(
                        "{label}: the call's effects match {fields} (a field not stated counts as matching)"
                    ),
                );
            }
        }
        approving
    }

    /// The `trust` floors: compromised is always denied; a derived level or a voucher
    /// below the policy's minimum gets `trust.below`.
    fn trust_hits(&self, f: &CallFacts<'_>, hits: &mut Hits) {
        if f.trust.level == TrustLevel::Compromised {
            hits.hit("trust.compromised", Action::Deny, f.trust.why.clone());
        } else if f.trust.level < self.trust_floor {
            hits.hit(
                "trust.minimum",
                self.file.trust.below,
                format!(
                    "derived trust level {} is below {} ({})",
                    f.trust.level.as_str(),
                    self.trust_floor.as_str(),
                    f.trust.why
                ),
            );
        }
        if f.trust.vouch < self.vouch_floor {
            hits.hit(
                "trust.vouch",
                self.file.trust.below,
                format!(
                    "the metadata is vouched for by {}, below {}",
                    f.trust.vouch.as_str(),
                    self.vouch_floor.as_str()
                ),
            );
        }
    }

    /// atip itself is never run; a command runner (as the caller found it, by
    /// `runners.programs`, or by `runners.commands`) is denied unless `runners.allow`
    /// names it.
    fn runner_hits(&self, f: &CallFacts<'_>, hits: &mut Hits) {
        if f.is_self {
            hits.hit(
                "runners.self",
                Action::Deny,
                "the program is atip itself; atip never runs atip".into(),
            );
            return;
        }
        let runner = f.runner.clone().or_else(|| {
            if let Some(n) = f
                .program_names
                .iter()
                .find(|n| self.file.runners.programs.contains(n))
            {
                Some(format!("{n} is listed in runners.programs"))
            } else if self.runner_commands.is_match(f.command_path) {
                Some(format!("{} matches runners.commands", f.command_path))
            } else {
                None
            }
        });
        if let Some(why) = runner
            && !self.runner_allowed(f.program_names, f.program, f.tool, f.command_path)
        {
            hits.hit(
                "runners",
                Action::Deny,
                format!(
                    "{why}; a command runner is denied unless the policy allows it (runners.allow: [{:?}])",
                    f.program_names
                        .first()
                        .map(String::as_str)
                        .unwrap_or(f.tool)
                ),
            );
        }
    }

    /// Checks a file or directory argument: resolved against `cwd` with symlinks
    /// followed, it must lie inside one of the roots. Returns the resolved path.
    pub(crate) fn check_path(&self, value: &str, cwd: &Path) -> Result<PathBuf, PathRefused> {
        if value.is_empty() {
            return Err(PathRefused::Empty);
        }
        let resolved = resolve_path(&cwd.join(value));
        if self.roots.iter().any(|r| resolved.starts_with(r)) {
            Ok(resolved)
        } else {
            Err(PathRefused::Outside {
                value: value.to_owned(),
                resolved,
                roots: self.roots.clone(),
            })
        }
    }
}

/// Why a path argument is refused (rule `path.outside_roots`).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PathRefused {
    /// An empty string.
    #[error("empty path")]
    Empty,
    /// Resolved (symlinks followed) outside every root.
    #[error("{value:?} resolves to {} which is outside the allowed roots ({})", resolved.display(), roots.iter().map(|r| r.display().to_string()).collect::<Vec<_>>().join(", "))]
    Outside {
        /// The argument.
        value: String,
        /// Where it leads.
        resolved: PathBuf,
        /// The policy's roots.
        roots: Vec<PathBuf>,
    },
}

impl Policy {
    /// Checks one `url` argument; returns the rules it triggers (none when it is fine).
    pub(crate) fn check_url(&self, property: &str, value: &str) -> Vec<RuleHit> {
        let mut hits = Vec::new();
        let rules = &self.file.urls;
        let Some((scheme, rest)) = value.split_once("://") else {
            hits.push(RuleHit {
                rule: "urls.schemes".into(),
                action: Action::Deny,
                reason: format!("argument {property:?} is not an absolute URL (scheme://host/…)"),
            });
            return hits;
        };
        let scheme = scheme.to_ascii_lowercase();
        if !rules
            .schemes
            .iter()
            .any(|s| s.eq_ignore_ascii_case(&scheme))
        {
            hits.push(RuleHit {
                rule: "urls.schemes".into(),
                action: Action::Deny,
                reason: format!(
                    "argument {property:?} uses scheme {scheme:?}; allowed: {}",
                    rules.schemes.join(", ")
                ),
            });
        }
        // A backslash ends the authority for some URL parsers and not for others: judge
        // the host both ways.
        let mut hosts = vec![url_host(rest)];
        if rest.contains('\\') {
            let other = url_host(&rest.replace('\\', "/"));
            if !hosts.contains(&other) {
                hosts.push(other);
            }
        }
        for host in hosts {
            hits.extend(self.check_host(property, &host));
        }
        hits
    }

    /// Checks one host a call connects to (a URL's, a proxy's, an address a name is
    /// pinned to): the `urls` deny and allow globs and the private-address action.
    /// `host` is as [`url_host`] gives it (decoded, lowercase, no brackets or port).
    pub(crate) fn check_host(&self, property: &str, host: &str) -> Vec<RuleHit> {
        let mut hits = Vec::new();
        let rules = &self.file.urls;
        if self.url_hosts.deny.is_match(host) {
            hits.push(RuleHit {
                rule: "urls.deny".into(),
                action: Action::Deny,
                reason: format!("host {host:?} of argument {property:?} matches a deny pattern"),
            });
        }
        if let Some(allow) = &self.url_hosts.allow
            && !allow.is_match(host)
        {
            hits.push(RuleHit {
                rule: "urls.allow".into(),
                action: Action::Deny,
                reason: format!("host {host:?} of argument {property:?} matches no allow pattern"),
            });
        }
        if rules.private != Action::Allow && is_private_host(host) {
            hits.push(RuleHit {
                rule: "urls.private".into(),
                action: rules.private,
                reason: format!(
                    "argument {property:?} points at a local or private address ({host})"
                ),
            });
        }
        hits
    }
}

/// The host of the part after `scheme://` (or of a bare `host[:port]`): no userinfo,
/// port or brackets; percent-decoded, lowercase, without trailing dots ([`host_text`]).
pub(crate) fn url_host(rest: &str) -> String {
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(inner) = hostport.strip_prefix('[') {
        inner.split(']').next().unwrap_or("")
    } else {
        hostport.split(':').next().unwrap_or("")
    };
    host_text(host)
}

/// A host as a connecting program sees it: percent-decoded (curl decodes the host of a
/// URL), brackets removed, lowercase, trailing dots dropped (`localhost.` is `localhost`).
pub(crate) fn host_text(host: &str) -> String {
    let decoded = percent_decode(host);
    let h = decoded.trim();
    let h = h
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .unwrap_or(h);
    h.trim_end_matches('.').to_ascii_lowercase()
}

/// `%XX` sequences decoded; a `%` not followed by two hex digits is kept as is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// One part of an IPv4 address as `inet_aton` reads it: `0x` hex, a leading `0` octal,
/// else decimal.
fn aton_part(p: &str) -> Option<u64> {
    if p.is_empty() {
        return None;
    }
    let (digits, radix) = if let Some(h) = p.strip_prefix("0x").or_else(|| p.strip_prefix("0X")) {
        (h, 16)
    } else if p.len() > 1 && p.starts_with('0') {
        (&p[1..], 8)
    } else {
        (p, 10)
    };
    if digits.is_empty() {
        // `0x` alone is zero for glibc.
        return (radix == 16).then_some(0);
    }
    if digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// An IPv4 address in any form `inet_aton` (and so glibc's resolver and curl) accepts:
/// one to four parts, each decimal, octal (`0177`) or hex (`0x7f`), the last part
/// filling the remaining bytes (`127.1`, `2130706433`, `0x7f.0.0.1`, `017700000001`).
/// glibc stops at the first whitespace.
pub(crate) fn inet_aton(s: &str) -> Option<std::net::Ipv4Addr> {
    let s = s.split(|c: char| c.is_ascii_whitespace()).next()?;
    let parts: Vec<&str> = s.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let nums: Vec<u64> = parts.iter().map(|p| aton_part(p)).collect::<Option<_>>()?;
    let (last, head) = nums.split_last()?;
    if head.iter().any(|n| *n > 255) {
        return None;
    }
    let room = 8 * (4 - head.len() as u32);
    if room < 64 && *last >= 1u64 << room {
        return None;
    }
    let mut v: u64 = 0;
    for (i, n) in head.iter().enumerate() {
        v |= n << (24 - 8 * i as u32);
    }
    v |= last;
    Some(std::net::Ipv4Addr::from(v as u32))
}

fn private_v4(v4: std::net::Ipv4Addr) -> bool {
    let o = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_broadcast()
        // 0.0.0.0/8: "this network"; Linux connects 0.0.0.0 to the local host.
        || o[0] == 0
        // Carrier-grade NAT, 100.64.0.0/10.
        || o[0] == 100 && (64..128).contains(&o[1])
}

fn private_v6(v6: std::net::Ipv6Addr) -> bool {
    let s = v6.segments();
    let embedded = |hi: usize| {
        std::net::Ipv4Addr::new(
            (s[hi] >> 8) as u8,
            s[hi] as u8,
            (s[hi + 1] >> 8) as u8,
            s[hi + 1] as u8,
        )
    };
    v6.is_loopback()
        || v6.is_unspecified()
        // Unique local fc00::/7, link-local fe80::/10, old site-local fec0::/10.
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d.
        || v6.to_ipv4().is_some_and(private_v4)
        // NAT64 64:ff9b::/96 reaches the embedded IPv4 address; 64:ff9b:1::/48 is local.
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] && private_v4(embedded(6)))
        || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
        // 6to4 2002:AABB:CCDD::/48 carries an IPv4 address.
        || (s[0] == 0x2002 && private_v4(embedded(1)))
}

/// Loopback, private, link-local, unspecified, or a `localhost` name, in every spelling
/// a connecting program accepts: percent-encoded, trailing dot, bracketed, any IPv4
/// form `inet_aton` reads, IPv6 with a zone or an embedded IPv4 address. Names are not
/// resolved: a public name that resolves to a private address is not caught here.
pub(crate) fn is_private_host(host: &str) -> bool {
    let host = host_text(host);
    if host.is_empty() {
        return false;
    }
    if matches!(
        host.as_str(),
        "localhost" | "ip6-localhost" | "ip6-loopback" | "localhost.localdomain"
    ) || host.ends_with(".localhost")
    {
        return true;
    }
    if let Some(v4) = inet_aton(&host) {
        return private_v4(v4);
    }
    if host.contains(':') {
        // A zone (`fe80::1%eth0`) is not part of the address.
        let addr = host.split('%').next().unwrap_or("");
        return match addr.parse::<std::net::Ipv6Addr>() {
            Ok(v6) => private_v6(v6),
            // Not an address a resolver would take as one: unknown, so not public.
            Err(_) => true,
        };
    }
    // Numeric-looking but not an address `inet_aton` reads (`1.2.3.4.5`, `0x1g`):
    // some parser might still read it as one; not known to be public.
    host.bytes()
        .all(|b| b.is_ascii_hexdigit() || b == b'.' || b == b'x')
        && host.bytes().next().is_some_and(|b| b.is_ascii_digit())
}

/// Resolves a path as the kernel would: `..` and `.` applied component by component,
/// every existing prefix canonicalized (symlinks followed), the part that does not
/// exist yet appended lexically (a missing directory cannot be a symlink).
pub(crate) fn resolve_path(path: &Path) -> PathBuf {
    resolve_depth(path, 0)
}

fn resolve_depth(path: &Path, depth: u32) -> PathBuf {
    let mut out = PathBuf::from("/");
    let mut exists = true;
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
                if !exists {
                    exists = out.exists();
                }
            }
            Component::Normal(name) => {
                out.push(name);
                if exists {
                    match std::fs::canonicalize(&out) {
                        Ok(c) => out = c,
                        Err(_) => {
                            // A dangling symlink: follow its target lexically.
                            if let (Ok(target), true) = (std::fs::read_link(&out), depth < 40) {
                                out.pop();
                                let next = resolve_depth(&out.join(target), depth + 1);
                                out = next;
                            }
                            exists = false;
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn effects(v: serde_json::Value) -> Effects {
        serde_json::from_value(v).unwrap()
    }

    fn trust(level: TrustLevel, vouch: Vouch) -> &'static TrustFacts {
        Box::leak(Box::new(TrustFacts {
            level,
            vouch,
            why: "test".into(),
        }))
    }

    fn facts<'a>(e: &'a Effects, vouch: &str) -> CallFacts<'a> {
        let t = match vouch {
            "inferred" => trust(TrustLevel::Unsigned, Vouch::Inferred),
            _ => trust(TrustLevel::Unsigned, Vouch::Tool),
        };
        CallFacts {
            tool: "gh",
            flat_name: "gh_repo_delete",
            command_path: "gh repo delete",
            program: Path::new("/usr/bin/gh"),
            program_resolved: None,
            effects: e,
            effects_unstated: false,
            trust: t,
            partial_unknown: false,
            allow_interactive: false,
            is_self: false,
            program_names: &[],
            runner: None,
        }
    }

    #[test]
    fn defaults() {
        let p = Policy::defaults(Path::new("/"));
        let ro = effects(json!({"destructive": false, "filesystem": {"read": true}}));
        assert_eq!(p.evaluate(&facts(&ro, "native")).action, Action::Allow);
        let d = effects(json!({"destructive": true, "network": true}));
        let dec = p.evaluate(&facts(&d, "native"));
        assert_eq!(dec.action, Action::Confirm);
        assert_eq!(dec.rule_ids(Action::Confirm), ["effects.destructive"]);
        let unknown = Effects::default();
        assert_eq!(
            p.evaluate(&facts(&unknown, "native"))
                .rule_ids(Action::Confirm),
            ["effects.destructive", "effects.unknown"]
        );
        // Unstated destructive is possibly destructive, whatever else is stated.
        let partial = effects(json!({"network": false}));
        assert_eq!(
            p.evaluate(&facts(&partial, "native"))
                .rule_ids(Action::Confirm),
            ["effects.destructive"]
        );
        assert_eq!(
            p.evaluate(&facts(&ro, "inferred"))
                .rule_ids(Action::Confirm),
            ["trust.vouch"]
        );
        let tty = effects(json!({"destructive": false, "interactive": {"tty": true}}));
        assert_eq!(p.evaluate(&facts(&tty, "native")).action, Action::Deny);
        let mut f = facts(&tty, "native");
        f.allow_interactive = true;
        assert_eq!(p.evaluate(&f).action, Action::Allow);
    }

    #[test]
    fn lists_and_effect_rules() {
        let file: PolicyFile = serde_json::from_value(json!({
            "tools": {"allow": ["gh"], "deny": []},
            "commands": {"deny": ["gh repo delete"]},
            "effects": {"destructive": "allow", "network": "deny"}
        }))
        .unwrap();
        let p = Policy::new(file, None, Path::new("/")).unwrap();
        let d = effects(json!({"destructive": true}));
        let dec = p.evaluate(&facts(&d, "native"));
        assert_eq!(dec.action, Action::Deny);
        assert_eq!(dec.rule_ids(Action::Deny), ["commands.deny"]);
        let mut f = facts(&d, "native");
        f.tool = "git";
        f.flat_name = "git_push";
        f.command_path = "git push";
        assert_eq!(p.evaluate(&f).rule_ids(Action::Deny), ["tools.allow"]);
        let n = effects(json!({"destructive": false, "network": true}));
        let mut f = facts(&n, "native");
        f.command_path = "gh pr list";
        assert_eq!(p.evaluate(&f).rule_ids(Action::Deny), ["effects.network"]);
    }

    #[test]
    fn when_rules_approve_only_what_is_stated_and_ask_on_unknown() {
        let file: PolicyFile = serde_json::from_value(json!({"when": [
            {"effects": {"idempotent": true, "network": false}, "action": "allow", "origin": "autoApprove"},
            {"effects": {"destructive": true}, "action": "confirm"},
            {"effects": {"subprocess": true}, "action": "deny"}
        ]}))
        .unwrap();
        let p = Policy::new(file, None, Path::new("/")).unwrap();
        let run = |v| p.evaluate(&facts(&effects(v), "native"));
        // Billable, idempotent, offline, not destructive: approved.
        let d = run(
            json!({"destructive": false, "idempotent": true, "network": false, "subprocess": false, "cost": {"billable": true}}),
        );
        assert_eq!(d.action, Action::Allow, "{d:?}");
        assert_eq!(d.approved.len(), 1);
        // The same with network unstated: not approved (unknown), billable asks.
        let d = run(
            json!({"destructive": false, "idempotent": true, "subprocess": false, "cost": {"billable": true}}),
        );
        assert_eq!(d.rule_ids(Action::Confirm), ["effects.billable"]);
        // Destructive: approval lifts effects.destructive, the confirm rule asks anyway.
        let d = run(
            json!({"destructive": true, "idempotent": true, "network": false, "subprocess": false}),
        );
        assert_eq!(d.rule_ids(Action::Confirm), ["when.confirm"]);
        // Subprocess unstated: the deny matches the unknown.
        let d = run(json!({"destructive": false, "idempotent": true, "network": false}));
        assert_eq!(d.rule_ids(Action::Deny), ["when.deny"]);
        // Deleting files is destructive for `when` as for effects.destructive.
        let e = effects(json!({"destructive": false, "filesystem": {"delete": true}}));
        assert_eq!(effect_field(&e, "destructive"), Some(true));
        // Unknown fields and an approval of everything are refused.
        for bad in [
            json!({"when": [{"effects": {"color": true}, "action": "deny"}]}),
            json!({"when": [{"effects": {}, "action": "allow"}]}),
        ] {
            let f: PolicyFile = serde_json::from_value(bad).unwrap();
            assert!(Policy::new(f, None, Path::new("/")).is_err());
        }
    }

    #[test]
    fn trust_floor_acts_on_derived_level_and_compromised_never_runs() {
        let f: PolicyFile =
            serde_json::from_value(json!({"trust": {"minimum": "verified"}})).unwrap();
        let p = Policy::new(f, None, Path::new("/")).unwrap();
        let ro = effects(json!({"destructive": false}));
        let mut f = facts(&ro, "native");
        f.trust = trust(TrustLevel::Unverified, Vouch::Builtin);
        assert_eq!(p.evaluate(&f).rule_ids(Action::Confirm), ["trust.minimum"]);
        f.trust = trust(TrustLevel::Verified, Vouch::Admin);
        assert_eq!(p.evaluate(&f).action, Action::Allow);
        let open: PolicyFile =
            serde_json::from_value(json!({"trust": {"below": "allow"}})).unwrap();
        let p = Policy::new(open, None, Path::new("/")).unwrap();
        f.trust = trust(TrustLevel::Compromised, Vouch::Builtin);
        assert_eq!(p.evaluate(&f).rule_ids(Action::Deny), ["trust.compromised"]);
        // The old claim-based floors are refused, not silently read.
        let old: PolicyFile =
            serde_json::from_value(json!({"trust": {"minimum": "vendor"}})).unwrap();
        assert_eq!(
            Policy::new(old, None, Path::new("/")).unwrap_err().code,
            "policy_invalid"
        );
    }

    #[test]
    fn runners_denied_unless_allowed_and_self_always() {
        let p = Policy::defaults(Path::new("/"));
        let ro = effects(json!({"destructive": false}));
        let names = vec!["bash".to_string()];
        let mut f = facts(&ro, "native");
        f.program_names = &names;
        f.runner = Some("bash runs programs named in its arguments".into());
        let d = p.evaluate(&f);
        assert_eq!(d.rule_ids(Action::Deny), ["runners"]);
        assert!(d.explain(Action::Deny).contains("runners.allow"));
        let allow: PolicyFile =
            serde_json::from_value(json!({"runners": {"allow": ["bash"]}})).unwrap();
        let pa = Policy::new(allow, None, Path::new("/")).unwrap();
        assert_eq!(pa.evaluate(&f).action, Action::Allow);
        f.is_self = true;
        assert_eq!(pa.evaluate(&f).rule_ids(Action::Deny), ["runners.self"]);
        // Runners the policy adds.
        let more: PolicyFile = serde_json::from_value(
            json!({"runners": {"programs": ["mine"], "commands": ["gh repo *"]}}),
        )
        .unwrap();
        let pm = Policy::new(more, None, Path::new("/")).unwrap();
        let mine = vec!["mine".to_string()];
        let mut g = facts(&ro, "native");
        g.program_names = &mine;
        assert_eq!(pm.evaluate(&g).rule_ids(Action::Deny), ["runners"]);
        let mut h = facts(&ro, "native");
        h.command_path = "gh repo delete";
        assert_eq!(pm.evaluate(&h).rule_ids(Action::Deny), ["runners"]);
    }

    #[test]
    fn bad_policy_files() {
        let bad: Result<PolicyFile, _> = serde_json::from_value(json!({"tool": {}}));
        assert!(bad.is_err());
        let bad: Result<PolicyFile, _> =
            serde_json::from_value(json!({"effects": {"destructive": "maybe"}}));
        assert!(bad.is_err());
        let f: PolicyFile = serde_json::from_value(json!({"tools": {"deny": ["["]}})).unwrap();
        assert_eq!(
            Policy::new(f, None, Path::new("/")).unwrap_err().category,
            crate::output::Category::Config
        );
    }

    #[test]
    fn url_guardrails() {
        let p = Policy::defaults(Path::new("/"));
        let rules =
            |v: &str| -> Vec<String> { p.check_url("u", v).into_iter().map(|h| h.rule).collect() };
        assert!(rules("https://api.github.com/repos").is_empty());
        assert!(rules("http://user:pw@example.com:8080/x?y#z").is_empty());
        assert_eq!(rules("file:///etc/passwd"), ["urls.schemes"]);
        assert_eq!(rules("example.com/x"), ["urls.schemes"]);
        for private in [
            "http://localhost:3000/",
            "http://127.0.0.1/",
            "http://127.1/",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.8/",
            "http://192.168.1.1/",
            "http://[::1]:80/",
            "http://[fd00::1]/",
            "http://[::ffff:10.0.0.1]/",
            "http://api.localhost/",
        ] {
            assert_eq!(rules(private), ["urls.private"], "{private}");
        }
        let f: PolicyFile = serde_json::from_value(json!({"urls": {
            "allow": ["*.github.com"], "deny": ["evil.github.com"], "private": "allow"}}))
        .unwrap();
        let p = Policy::new(f, None, Path::new("/")).unwrap();
        let rules =
            |v: &str| -> Vec<String> { p.check_url("u", v).into_iter().map(|h| h.rule).collect() };
        assert!(rules("https://api.github.com/").is_empty());
        assert_eq!(rules("https://evil.github.com/"), ["urls.deny"]);
        assert_eq!(rules("https://example.com/"), ["urls.allow"]);
    }

    #[test]
    fn ipv4_is_read_as_inet_aton_reads_it() {
        let a = |s: &str| inet_aton(s).map(|ip| ip.to_string());
        for (spelling, addr) in [
            ("127.0.0.1", "127.0.0.1"),
            ("127.1", "127.0.0.1"),
            ("127.0.1", "127.0.0.1"),
            ("2130706433", "127.0.0.1"),
            ("0x7f000001", "127.0.0.1"),
            ("0X7F.0.0.1", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("017700000001", "127.0.0.1"),
            ("0177.0.0.01", "127.0.0.1"),
            ("10.0x10.0", "10.16.0.0"),
            ("169.254.43518", "169.254.169.254"),
            ("1.2.3.4 trailing", "1.2.3.4"),
            ("0", "0.0.0.0"),
        ] {
            assert_eq!(a(spelling).as_deref(), Some(addr), "{spelling}");
        }
        for bad in [
            "256.0.0.1",
            "1.2.3.4.5",
            "1..2",
            "08",
            "0x",
            "example.com",
            "4294967296",
            "1.16777216",
            "",
        ] {
            assert!(bad == "0x" || a(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn every_spelling_of_a_private_host_is_private() {
        for host in [
            "0x7f000001",
            "0x7f.0.0.1",
            "017700000001",
            "127.1",
            "2130706433",
            "%31%32%37.0.0.1",
            "%6c%6f%63%61%6c%68%6f%73%74",
            "127.0.0.1.",
            "localhost.",
            "LocalHost",
            "[::1]",
            "::ffff:127.0.0.1",
            "::ffff:7f00:1",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:a00:1::",
            "fe80::1%25eth0",
            "fec0::1",
            "0.0.0.0",
            "0",
            "0.1.2.3",
            "255.255.255.255",
            "100.64.0.1",
            "1.2.3.4.5",
            "ip6-localhost",
        ] {
            assert!(is_private_host(host), "{host}");
        }
        for host in [
            "example.com",
            "8.8.8.8",
            "134744072",
            "2001:4860:4860::8888",
            "64:ff9b::808:808",
            "github.com.",
            "1e100.net",
        ] {
            assert!(!is_private_host(host), "{host}");
        }
        let p = Policy::defaults(Path::new("/"));
        let rules =
            |v: &str| -> Vec<String> { p.check_url("u", v).into_iter().map(|h| h.rule).collect() };
        for url in [
            "http://0x7f000001:8080/",
            "http://u:p@%31%32%37.0.0.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://127.0.0.1.:80/",
            "http://evil.example\\@127.0.0.1/",
        ] {
            assert_eq!(rules(url), ["urls.private"], "{url}");
        }
        // Deny globs see the decoded host.
        let f: PolicyFile =
            serde_json::from_value(json!({"urls": {"deny": ["evil.com"]}})).unwrap();
        let p = Policy::new(f, None, Path::new("/")).unwrap();
        assert_eq!(
            p.check_url("u", "https://%65vil.com./x")
                .into_iter()
                .map(|h| h.rule)
                .collect::<Vec<_>>(),
            ["urls.deny"]
        );
    }

    #[test]
    fn programs_globs_judge_the_resolved_file() {
        let f: PolicyFile = serde_json::from_value(
            json!({"programs": {"allow": ["/usr/bin/*"], "deny": ["/tmp/*"]}}),
        )
        .unwrap();
        let p = Policy::new(f, None, Path::new("/")).unwrap();
        let ro = effects(json!({"destructive": false}));
        let mut f = facts(&ro, "native");
        assert_eq!(p.evaluate(&f).action, Action::Allow);
        // /usr/bin/gh is a link to /tmp/evil: the deny names the target.
        f.program_resolved = Some(Path::new("/tmp/evil"));
        let d = p.evaluate(&f);
        assert_eq!(
            d.rule_ids(Action::Deny),
            ["programs.deny", "programs.allow"]
        );
        // A link elsewhere to an allowed file is allowed; an allowed link to a file
        // elsewhere is not.
        f.program = Path::new("/opt/x/gh");
        f.program_resolved = Some(Path::new("/usr/bin/gh"));
        assert_eq!(p.evaluate(&f).action, Action::Allow);
        f.program = Path::new("/usr/bin/gh");
        f.program_resolved = Some(Path::new("/opt/x/gh"));
        assert_eq!(p.evaluate(&f).rule_ids(Action::Deny), ["programs.allow"]);
    }

    #[test]
    fn path_guardrails() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let work = root.join("work");
        std::fs::create_dir_all(work.join("sub")).unwrap();
        std::fs::write(work.join("a.txt"), "a").unwrap();
        std::os::unix::fs::symlink("/etc", work.join("escape")).unwrap();
        std::os::unix::fs::symlink("../outside/new", work.join("dangling")).unwrap();
        let p = Policy::defaults(&work);
        assert!(p.check_path("a.txt", &work).is_ok());
        assert!(p.check_path("sub/new-file", &work).is_ok());
        assert!(p.check_path("not/yet/../made", &work).is_ok());
        assert!(p.check_path("../../etc/passwd", &work).is_err());
        assert!(p.check_path("/etc/passwd", &work).is_err());
        assert!(p.check_path("escape/passwd", &work).is_err());
        assert!(p.check_path("dangling", &work).is_err());
        assert!(p.check_path("nope/../../x", &work).is_err());
        assert!(p.check_path("", &work).is_err());
        std::os::unix::fs::symlink("loop2", work.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", work.join("loop2")).unwrap();
        assert!(p.check_path("loop1/x", &work).is_ok());
        assert_eq!(p.check_path(".", &work).unwrap(), work);
    }
}
