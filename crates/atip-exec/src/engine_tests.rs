//! Unit tests of the engine (lib.rs): loading a real registry from a temp dir, building
//! a call's arguments, the policy's effect decisions, the refusal paths of a batch, and
//! running a real program. The program is a small shell script that logs each run, so a
//! refused call is seen not to have run.

use super::*;
use crate::registry::{CommitOptions, Found as FoundTool, FoundMeta, MetaSummary, Update, commit};
use crate::registry::{FileStamp, Source};
use std::os::unix::fs::PermissionsExt;

/// A registry under a temp dir with the tool `greet` (and whatever else a test adds).
struct Fixture {
    tmp: tempfile::TempDir,
    dirs: Dirs,
}

/// `greet`'s metadata: `hello` reads only, `wipe` is destructive, `mystery` states no
/// effects, `slow` states its own timeout.
fn greet_doc(name: &str) -> Value {
    json!({
        "atip": {"version": "0.6"},
        "name": name,
        "version": "1.0",
        "description": "Greets.",
        "commands": {
            "hello": {
                "description": "Say hello.",
                "options": [
                    {"name": "name", "flags": ["--name"], "type": "string", "description": "Who."},
                    {"name": "loud", "flags": ["-l", "--loud"], "type": "boolean", "description": "Shout."},
                    {"name": "style", "flags": ["-s"], "type": "string", "description": "Short only."}
                ],
                "arguments": [
                    {"name": "word", "type": "string", "description": "A word.", "required": false}
                ],
                "effects": {"destructive": false, "filesystem": {"read": true, "write": false}, "network": false}
            },
            "wipe": {
                "description": "Wipe everything.",
                "effects": {"destructive": true, "filesystem": {"write": true, "delete": true}}
            },
            "mystery": {"description": "Unknown effects."},
            "slow": {
                "description": "Takes its time.",
                "effects": {"destructive": false, "filesystem": {"read": true}, "duration": {"timeout": "5s"}}
            }
        }
    })
}

impl Fixture {
    /// Registers each `(registry name, document)` as a native tool whose executable is a
    /// script logging its arguments to `<bin>/ran.log`.
    fn new(tools: &[(&str, Value)]) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = Dirs::under(tmp.path());
        let bin = tmp.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let found = tools
            .iter()
            .map(|(name, doc)| {
                let exe = bin.join(name);
                // The log's path is written in: the script may run as /dev/fd/N.
                let log = bin.join("ran.log");
                let script = format!(
                    "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nprintf '{{\"args\": \"%s\"}}\\n' \"$*\"\n",
                    log.display()
                );
                std::fs::write(&exe, script).unwrap();
                std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
                let document = serde_json::to_vec(doc).unwrap();
                let meta = Metadata::from_slice(&document).unwrap();
                FoundTool {
                    name: name.to_string(),
                    path: exe.clone(),
                    hash: Some(crate::digest::sha256_file(&exe).unwrap()),
                    source: Source::Native,
                    shim_registry: None,
                    trust: "native".into(),
                    fingerprint: Some(FileStamp::of(&std::fs::metadata(&exe).unwrap())),
                    vouched_by: None,
                    meta: FoundMeta::Fresh {
                        document: document.into(),
                        summary: MetaSummary::of(&meta),
                        checked_at: "2026-01-01T00:00:00Z".into(),
                    },
                }
            })
            .collect();
        let opts = CommitOptions {
            lock_timeout: Duration::from_secs(5),
            now: "2026-01-01T00:00:00Z".into(),
            announce: false,
            after: None,
        };
        let update = Update {
            found,
            scanned_dirs: vec![bin],
        };
        let report = commit(&dirs, &update, &opts).unwrap();
        assert!(report.rejected.is_empty(), "{:?}", report.rejected);
        Fixture { tmp, dirs }
    }

    fn engine(&self, policy: Value) -> Engine {
        let file: policy::PolicyFile = serde_json::from_value(policy).unwrap();
        let policy = Policy::new(file, None, self.tmp.path()).unwrap();
        Engine::load(&self.dirs, policy, Settings::default(), None, None).unwrap()
    }

    /// What the script logged: one line per run.
    fn ran(&self) -> Vec<String> {
        std::fs::read_to_string(self.tmp.path().join("bin/ran.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn entries(&self) -> Vec<(String, crate::registry::Entry)> {
        crate::compile::source::registry_entries(&self.dirs, None).unwrap()
    }
}

fn args(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

fn call(name: &str, arguments: Value) -> calls::ToolCall {
    calls::ToolCall {
        id: None,
        name: name.into(),
        arguments: calls::RawArgs::Value(arguments),
    }
}

fn error_code(outcome: &CallOutcome) -> &str {
    assert!(outcome.failed, "{}", outcome.envelope);
    outcome.envelope["error"]["code"].as_str().unwrap()
}

#[test]
fn a_call_becomes_argv_with_options_in_order_and_dashed_values_protected() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1}));
    let p = engine
        .prepare(
            "greet_hello",
            args(json!({"word": "-w", "loud": true, "name": "-x"})),
        )
        .unwrap();
    assert_eq!(p.argv, ["hello", "--name=-x", "--loud", "--", "-w"]);
    assert_eq!(p.command_path(), "greet hello");
    assert!(p.read_only());
    assert_eq!(p.decision.action, Action::Allow, "{:?}", p.decision);
    // A dashed value for an option with only a short flag has nothing to attach to.
    let e = engine
        .prepare("greet_hello", args(json!({"style": "-bold"})))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ArgsUnusable);
    assert!(e.message.contains("-s has no long form"), "{}", e.message);
}

#[test]
fn wrong_arguments_and_unknown_tools_are_refused_before_anything_runs() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1}));
    let e = engine
        .prepare("greet_hello", args(json!({"loud": [1, 2]})))
        .unwrap_err();
    assert_eq!(e.code, ErrorCode::ArgsInvalid, "{e:?}");
    let e = engine.prepare("greet_helo", Map::new()).unwrap_err();
    assert_eq!(e.code, ErrorCode::ToolNotFound, "{e:?}");
    assert!(fx.ran().is_empty());
}

#[test]
fn effects_decide_allow_confirm_or_deny() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1}));
    let decide = |name: &str| engine.prepare(name, Map::new()).unwrap().decision;
    assert_eq!(decide("greet_hello").action, Action::Allow);
    let wipe = decide("greet_wipe");
    assert_eq!(wipe.action, Action::Confirm);
    assert_eq!(
        wipe.rule_ids(Action::Confirm),
        ["effects.destructive", "effects.filesystemDelete"]
    );
    // Unstated effects are unknown, never safe.
    let mystery = decide("greet_mystery");
    assert_eq!(mystery.action, Action::Confirm);
    assert_eq!(
        mystery.rule_ids(Action::Confirm),
        ["effects.destructive", "effects.unknown"]
    );
    // A policy can make any of them a denial.
    let strict = fx.engine(json!({"version": 1, "effects": {"destructive": "deny"}}));
    let p = strict.prepare("greet_wipe", Map::new()).unwrap();
    assert_eq!(p.decision.action, Action::Deny);
}

#[test]
fn the_timeout_is_the_flag_else_the_command_else_the_default() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let mut engine = fx.engine(json!({"version": 1}));
    let timeout = |e: &Engine, name: &str| e.prepare(name, Map::new()).unwrap().timeout;
    assert_eq!(timeout(&engine, "greet_slow"), Duration::from_secs(5));
    assert_eq!(timeout(&engine, "greet_hello"), DEFAULT_TIMEOUT);
    engine.settings.timeout = Some(Duration::from_millis(1500));
    assert_eq!(timeout(&engine, "greet_slow"), Duration::from_millis(1500));
}

#[test]
fn a_batch_runs_what_is_allowed_and_refuses_the_rest_without_running_it() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1, "tools": {"deny": ["greet_mystery"]}}));
    let list = [
        call("greet_hello", json!({"word": "one"})),
        call("greet_wipe", json!({})),
        call("greet_mystery", json!({})),
        call("greet_wipe", json!({})),
        call("greet_hello", json!({"word": "two"})),
    ];
    // The first confirmation is declined, the second cannot be asked.
    let mut answers = vec![Confirmation::Unavailable, Confirmation::No];
    let mut asked = Vec::new();
    let out = run_batch(&engine, &list, &BatchOptions::exec(2), &mut |p| {
        asked.push(p.command_path());
        answers.pop().unwrap()
    });
    assert_eq!(asked, ["greet wipe", "greet wipe"]);
    assert!(!out[0].failed, "{}", out[0].envelope);
    assert_eq!(out[0].envelope["data"]["json"]["args"], "hello one");
    assert_eq!(error_code(&out[1]), "confirmation_declined");
    assert_eq!(error_code(&out[2]), "policy_denied");
    assert_eq!(error_code(&out[3]), "confirmation_required");
    assert!(!out[4].failed, "{}", out[4].envelope);
    let mut ran = fx.ran();
    ran.sort();
    assert_eq!(ran, ["hello one", "hello two"]);
}

#[test]
fn a_confirmed_call_runs_and_is_audited() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1}));
    let out = run_batch(
        &engine,
        &[call("greet_wipe", json!({}))],
        &BatchOptions::exec(1),
        &mut |_| Confirmation::Yes,
    );
    assert!(!out[0].failed, "{}", out[0].envelope);
    assert_eq!(fx.ran(), ["wipe"]);
    let log = std::fs::read_to_string(engine.audit_log().path()).unwrap();
    assert!(log.contains("\"confirmed\""), "{log}");
}

#[test]
fn calls_past_the_budget_are_refused_and_do_not_run() {
    let fx = Fixture::new(&[("greet", greet_doc("greet"))]);
    let engine = fx.engine(json!({"version": 1, "limits": {"maxCalls": 1}}));
    let list = [
        call("greet_hello", json!({"word": "a"})),
        call("greet_hello", json!({"word": "b"})),
    ];
    let out = run_batch(&engine, &list, &BatchOptions::exec(1), &mut |_| {
        Confirmation::Yes
    });
    assert!(!out[0].failed);
    assert_eq!(error_code(&out[1]), "call_budget_exceeded");
    assert_eq!(fx.ran(), ["hello a"]);
}

#[test]
fn load_skips_a_tampered_document_and_a_second_document_for_the_same_tool() {
    let fx = Fixture::new(&[
        ("greet", greet_doc("greet")),
        ("greet2", greet_doc("greet")),
        ("other", greet_doc("other")),
    ]);
    // Tamper with `other`'s stored document: its hash no longer matches.
    let entries = fx.entries();
    let other = &entries.iter().find(|(n, _)| n == "other").unwrap().1;
    let file = other.metadata_file(&fx.dirs).unwrap();
    std::fs::write(&file, b"{\"atip\": {\"version\": \"0.6\"}}").unwrap();
    let read = read_documents(&fx.dirs, &entries);
    assert_eq!(
        read.iter()
            .map(|(n, r)| (n.as_str(), r.is_ok()))
            .collect::<Vec<_>>(),
        [("greet", true), ("greet2", true), ("other", false)]
    );
    let (metas, found) = collect_tools(read, &entries);
    assert_eq!(metas.len(), 1);
    assert_eq!(found.tools.keys().collect::<Vec<_>>(), ["greet"]);
    assert_eq!(found.unreadable.len(), 1);
    assert_eq!(found.unreadable[0].0, "other");
    assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
    assert!(found.warnings[0].starts_with("skipped greet2: its metadata names tool \"greet\""));
    assert!(found.warnings[1].starts_with("skipped other: "));
    // The engine says the same, and a call to the tampered tool says why it cannot run.
    let file: policy::PolicyFile = serde_json::from_value(json!({"version": 1})).unwrap();
    let policy = Policy::new(file, None, fx.tmp.path()).unwrap();
    let only = ["greet".to_string(), "other".to_string()];
    let engine = Engine::load(&fx.dirs, policy, Settings::default(), Some(&only), None).unwrap();
    assert_eq!(engine.warnings.len(), 1, "{:?}", engine.warnings);
    assert!(engine.knows("greet_hello"));
    assert!(engine.prepare("other_hello", Map::new()).is_err());
}

#[test]
fn a_focused_catalog_holds_only_the_documents_that_can_make_the_name() {
    let metas: Vec<Metadata> = ["greet", "greetings", "other"]
        .iter()
        .map(|n| Metadata::from_slice(&serde_json::to_vec(&greet_doc(n)).unwrap()).unwrap())
        .collect();
    let opts = FlattenOptions {
        include_interactive: true,
        commands: None,
    };
    let c = focused_catalog(&metas, "greet_wipe", &opts).unwrap();
    let mut tools: Vec<&str> = c.tools().iter().map(|t| t.tool.as_str()).collect();
    tools.dedup();
    assert_eq!(tools, ["greet"]);
    assert!(c.get("greet_wipe").is_some());
    // A name no document makes: the caller falls back to the full catalog.
    assert!(focused_catalog(&metas, "greet_nothing", &opts).is_none());
}

#[test]
fn stdout_becomes_json_only_when_it_is_a_whole_object_or_array() {
    assert_eq!(stdout_json(" {\"a\": 1}\n"), Some(json!({"a": 1})));
    assert_eq!(stdout_json("[1, 2]"), Some(json!([1, 2])));
    assert_eq!(stdout_json("{\"a\": "), None);
    assert_eq!(stdout_json("42"), None);
    assert_eq!(stdout_json("\"text\""), None);
}
