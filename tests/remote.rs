//! Remote registries end to end: `atip registry keygen/build/add`, then `atip sync`
//! against a real static HTTP server on 127.0.0.1 (tests/common/static_server.rs).
use crate::common::static_server::{Mode, StaticServer};
use crate::common::{Sandbox, show};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;

/// A sandbox with two tools, their name-keyed shims and a built tree served locally.
struct Fixture {
    sb: Sandbox,
    server: StaticServer,
}

const ALPHA: &str = r#"{"atip": {"version": "0.6"}, "name": "alpha", "version": "1.0", "description": "Alpha tool", "trust": {"source": "org"},
 "commands": {"run": {"description": "Run alpha", "effects": {"network": false, "idempotent": true}}}}"#;
const BETA: &str = r#"{"atip": {"version": "0.6"}, "name": "beta", "version": "2.0", "description": "Beta tool",
 "commands": {"go": {"description": "Go beta", "effects": {"filesystem": {"write": true}}}}}"#;

impl Fixture {
    fn new(sign: bool) -> Fixture {
        let sb = Sandbox::new();
        sb.script("bin/alpha", "#!/bin/sh\necho alpha\n");
        sb.script("bin/beta", "#!/bin/sh\necho beta\n");
        sb.script("bin/other", "#!/bin/sh\necho other\n");
        sb.write("src/alpha.json", ALPHA);
        sb.write("src/beta.json", BETA);
        let out = sb
            .atip()
            .args(["registry", "keygen"])
            .arg(sb.path().join("key"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", show(&out));
        let me = Fixture {
            server: StaticServer::start(&sb.path().join("out")),
            sb,
        };
        me.build(sign);
        me
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.sb.path().join(rel)
    }

    fn build(&self, sign: bool) -> Output {
        let mut cmd = self.sb.atip();
        cmd.args(["registry", "build"])
            .arg(self.p("src"))
            .arg(self.p("out"))
            .args(["--name", "team", "--binary"])
            .arg(self.p("bin/alpha"))
            .arg("--binary")
            .arg(self.p("bin/beta"));
        if sign {
            cmd.arg("--sign").arg(self.p("key"));
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{}", show(&out));
        out
    }

    fn add(&self, extra: &[&str]) {
        let out = self
            .sb
            .atip()
            .args(["registry", "add", "team", &self.server.url])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", show(&out));
        // The manifest request is add's own; tests count what sync asks for.
        self.server.take_log();
    }

    fn sync(&self, extra: &[&str]) -> (Output, Value) {
        let out = self
            .sb
            .atip()
            .args(["sync", "--output", "json", "--path"])
            .arg(self.p("bin"))
            .args(extra)
            .output()
            .unwrap();
        let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (out, v)
    }

    fn registry(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.sb.data_dir().join("registry.json")).unwrap())
            .unwrap()
    }

    fn hash_of(&self, tool: &str) -> String {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(
            std::fs::read(self.p(&format!("bin/{tool}"))).unwrap(),
        ))
    }

    fn shim_path(&self, tool: &str) -> PathBuf {
        self.p(&format!("out/shims/sha256/{}.json", self.hash_of(tool)))
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn statuses(log: &[(String, u16)]) -> Vec<u16> {
    log.iter().map(|(_, s)| *s).collect()
}

fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<(PathBuf, Vec<u8>)> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect();
    v.sort();
    v
}

#[test]
fn build_is_deterministic_validated_and_signed() {
    let f = Fixture::new(true);
    let before = tree(&f.p("out"));
    let names: Vec<String> = before
        .iter()
        .map(|(p, _)| p.strip_prefix(f.p("out")).unwrap().display().to_string())
        .collect();
    let a = f.hash_of("alpha");
    let b = f.hash_of("beta");
    let mut expected = vec![
        ".well-known/atip-registry.json".to_string(),
        "shims/index.json".into(),
        "shims/index.json.minisig".into(),
        format!("shims/sha256/{a}.json"),
        format!("shims/sha256/{a}.json.minisig"),
        format!("shims/sha256/{b}.json"),
        format!("shims/sha256/{b}.json.minisig"),
    ];
    expected.sort();
    assert_eq!(names, expected);
    // Rebuilding changes no byte.
    let again: Value = serde_json::from_slice(&f.build(true).stdout).unwrap();
    assert_eq!(again["written"], 0, "{again}");
    assert_eq!(tree(&f.p("out")), before);
    // Catalog and manifest.
    let index: Value =
        serde_json::from_slice(&std::fs::read(f.p("out/shims/index.json")).unwrap()).unwrap();
    let platform = index["tools"]["alpha"]["1.0"].as_object().unwrap();
    assert_eq!(platform.values().next().unwrap(), &format!("sha256:{a}"));
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(f.p("out/.well-known/atip-registry.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["name"], "team");
    assert_eq!(manifest["trust"]["signatures"], "minisign");
    let pubkey = std::fs::read_to_string(f.p("key.pub")).unwrap();
    assert!(
        pubkey.contains(
            manifest["trust"]["signers"][0]["publicKey"]
                .as_str()
                .unwrap()
        )
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(f.p("key")).unwrap().permissions().mode() & 0o777,
        0o600
    );
    // Unsigned rebuild: the signatures go, the shims stay byte for byte.
    f.build(false);
    assert!(!f.p("out/shims/index.json.minisig").exists());
    assert_eq!(std::fs::read(f.shim_path("alpha")).unwrap(), before[3].1);

    // One invalid shim: refused with the file named, and nothing written.
    f.sb.write(
        "src/broken.json",
        r#"{"atip": {"version": "0.6"}, "name": "broken"}"#,
    );
    let snapshot = tree(&f.p("out"));
    let out =
        f.sb.atip()
            .args(["registry", "build", "--output", "json"])
            .arg(f.p("src"))
            .arg(f.p("out"))
            .output()
            .unwrap();
    assert_eq!(code(&out), 65, "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("broken.json") && err.contains("metadata_invalid"),
        "{err}"
    );
    assert_eq!(tree(&f.p("out")), snapshot);
    // keygen never replaces a key.
    let out =
        f.sb.atip()
            .args(["registry", "keygen"])
            .arg(f.p("key"))
            .output()
            .unwrap();
    assert_eq!(code(&out), 73, "{}", show(&out));
}

#[test]
fn sync_fetches_caches_revalidates_and_picks_up_changes() {
    let f = Fixture::new(true);
    let key = f.p("key.pub").display().to_string();
    f.add(&["--public-key", &key, "--require-signatures"]);
    // Fresh: catalog, its signature, then only the two shims that match binaries here.
    let (out, report) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let log = f.server.take_log();
    assert_eq!(log.len(), 6, "{log:?}");
    assert!(statuses(&log).iter().all(|s| *s == 200), "{log:?}");
    assert!(!log.iter().any(|(p, _)| p.contains("other")));
    let r = &report["remote"][0];
    assert_eq!(
        (r["used"].as_u64(), r["verified"].as_u64()),
        (Some(2), Some(2)),
        "{r}"
    );
    let reg = f.registry();
    for t in ["alpha", "beta"] {
        assert_eq!(reg["tools"][t]["source"], "remote", "{reg}");
        assert_eq!(reg["tools"][t]["shimRegistry"], "remote:team");
        assert_eq!(reg["tools"][t]["vouchedBy"], "user");
    }
    assert!(reg["tools"].get("other").is_none());
    // Within 24 h: no request at all.
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(f.server.take_log(), vec![]);
    // --refresh: one conditional request each, all answered 304.
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let log = f.server.take_log();
    assert_eq!(statuses(&log), vec![304, 304, 304], "{log:?}");
    assert_eq!(report["remote"][0]["catalog"], "not-modified");
    // A changed shim is picked up after --refresh.
    f.sb.write(
        "src/alpha.json",
        ALPHA.replace("Alpha tool", "Alpha tool, improved"),
    );
    f.build(true);
    let (out, _) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(
        f.registry()["tools"]["alpha"]["description"],
        "Alpha tool, improved"
    );
    // Nothing was written outside the cache, data and config dirs (and the fixture's own).
    let mut top: Vec<String> = std::fs::read_dir(f.sb.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        [
            "bin",
            "config",
            "data",
            "key",
            "key.pub",
            "out",
            "src",
            "state",
            "xdg-cache"
        ]
    );
    // The state dir holds only the generation last accepted from the registry.
    let state: Vec<_> = tree(&f.p("state")).into_iter().map(|(p, _)| p).collect();
    assert_eq!(state, [f.p("state/remote/team.json")]);
    let cache: Vec<_> = tree(&f.p("xdg-cache"))
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert!(
        cache
            .iter()
            .all(|p| p.starts_with(f.p("xdg-cache/agent-tools/remote/team"))),
        "{cache:?}"
    );
}

#[test]
fn cache_control_shortens_the_recheck_but_never_stretches_it() {
    let f = Fixture::new(false);
    f.add(&[]);
    f.server.set_cache_control("no-cache");
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(statuses(&f.server.take_log()), vec![200, 200, 200]);
    // `no-cache`: asked again on the next run (conditionally), not after 24 h.
    f.server.set_cache_control("public, max-age=3600");
    let (out, report) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(statuses(&f.server.take_log()), vec![304, 304, 304]);
    assert_eq!(report["remote"][0]["catalog"], "not-modified");
    // The 304s carried max-age=3600: fresh now, nothing asked.
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(f.server.take_log(), vec![]);
    // A max-age beyond 24 h is cut to 24 h: a state checked 25 h ago is asked again.
    f.server.set_cache_control("max-age=31536000");
    let (out, _) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    f.server.take_log();
    let state_path = f.p("xdg-cache/agent-tools/remote/team/state.json");
    let mut state: Value =
        serde_json::from_str(&std::fs::read_to_string(&state_path).unwrap()).unwrap();
    assert_eq!(state["catalog"]["maxAge"], 31536000, "{state}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    state["catalog"]["checked"] = json!(now - 25 * 3600);
    std::fs::write(&state_path, state.to_string()).unwrap();
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(statuses(&f.server.take_log()), vec![304]);
}

#[test]
fn tampered_wrong_hash_bad_signature_and_unknown_signer_are_refused() {
    // Tampered after signing: the signature no longer matches.
    let f = Fixture::new(true);
    let key = f.p("key.pub").display().to_string();
    f.add(&["--public-key", &key]);
    let shim = f.shim_path("alpha");
    let text = std::fs::read_to_string(&shim).unwrap();
    std::fs::write(&shim, text.replace("Alpha tool", "Alpha tool (evil)")).unwrap();
    let (out, report) = f.sync(&[]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    let refused = report["remote"][0]["refused"].to_string();
    assert!(
        refused.contains("bad signature") && refused.contains(&f.hash_of("alpha")),
        "{refused}"
    );
    let reg = f.registry();
    assert!(reg["tools"].get("alpha").is_none(), "{reg}");
    assert_eq!(reg["tools"]["beta"]["source"], "remote");

    // Wrong hash: the file for alpha's hash describes beta's binary.
    let f = Fixture::new(false);
    f.add(&[]);
    std::fs::copy(f.shim_path("beta"), f.shim_path("alpha")).unwrap();
    let (out, report) = f.sync(&[]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        report["remote"][0]["refused"]
            .to_string()
            .contains("wrong hash"),
        "{report}"
    );
    let reg = f.registry();
    assert!(reg["tools"].get("alpha").is_none());
    // Unsigned registry: the shim that verifies is registered, unsigned.
    assert_eq!(reg["tools"]["beta"]["vouchedBy"], "inferred");

    // Unknown signer: signed with a key this machine does not list.
    let f = Fixture::new(true);
    let other =
        f.sb.atip()
            .args(["registry", "keygen"])
            .arg(f.p("other-key"))
            .output()
            .unwrap();
    assert!(other.status.success());
    let other_pub = f.p("other-key.pub").display().to_string();
    f.add(&["--public-key", &other_pub]);
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    // Not required: used, but nobody this machine trusts vouches for it.
    assert_eq!(f.registry()["tools"]["alpha"]["vouchedBy"], "inferred");
    // Required: the signed catalog itself is refused, the registry fails, entries stay.
    let cfg_path = f.sb.config_dir().join("registries.json");
    let cfg = std::fs::read_to_string(&cfg_path).unwrap();
    std::fs::write(
        &cfg_path,
        cfg.replace(
            "\"requireSignatures\": false",
            "\"requireSignatures\": true",
        ),
    )
    .unwrap();
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 75, "{}", show(&out));
    assert!(
        report["remote"][0]["error"]
            .to_string()
            .contains("not in this registry's publicKeys"),
        "{report}"
    );
    assert_eq!(f.registry()["tools"]["alpha"]["source"], "remote");
}

#[test]
fn hang_500_and_50mb_fail_the_sync_but_lose_nothing() {
    let f = Fixture::new(false);
    f.add(&[]);
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let before = f.registry()["tools"].clone();
    // The 50 MB answer gets time to be read up to the cap even on a loaded machine:
    // what is tested there is the cap, not the timeout.
    for (mode, expect, timeout) in [
        (Mode::Hang, "within", "1s"),
        (Mode::Error500, "HTTP 500", "1s"),
        (Mode::Huge, "larger than", "15s"),
    ] {
        f.server.set_mode(mode);
        let start = std::time::Instant::now();
        let (out, report) = f.sync(&["--refresh", "--timeout", timeout]);
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "{mode:?} took {:?}",
            start.elapsed()
        );
        assert_eq!(code(&out), 75, "{mode:?}: {}", show(&out));
        let err = report["remote"][0]["error"].to_string();
        assert!(
            err.contains(expect) && err.contains("cached catalog"),
            "{mode:?}: {err}"
        );
        let tools = f.registry()["tools"].clone();
        for t in ["alpha", "beta"] {
            assert_eq!(tools[t]["source"], before[t]["source"], "{mode:?}: {tools}");
            assert_eq!(tools[t]["metadata"], before[t]["metadata"]);
        }
    }
    // A fresh machine against a failing server: nothing registered, exit 75, no crash.
    let g = Fixture::new(false);
    g.add(&[]);
    g.server.set_mode(Mode::Error500);
    let (out, report) = g.sync(&[]);
    assert_eq!(code(&out), 75, "{}", show(&out));
    assert_eq!(report["remote"][0]["catalog"], "failed");
}

#[test]
fn offline_uses_the_cache_and_says_so() {
    let f = Fixture::new(true);
    let key = f.p("key.pub").display().to_string();
    f.add(&["--public-key", &key]);
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    f.server.take_log();
    f.server.set_mode(Mode::Error500);
    let out =
        f.sb.atip()
            .args(["sync", "--refresh", "--output", "json", "--path"])
            .arg(f.p("bin"))
            .env("ATIP_OFFLINE", "1")
            .output()
            .unwrap();
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(f.server.take_log(), vec![], "offline requested something");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["remote"][0]["offline"], true);
    assert_eq!(report["remote"][0]["catalog"], "cached");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("offline"),
        "{}",
        show(&out)
    );
    assert_eq!(f.registry()["tools"]["alpha"]["vouchedBy"], "user");
    // `atip scan` reads the same cache offline.
    let out =
        f.sb.atip()
            .args(["scan", "--offline", "--output", "json", "--path"])
            .arg(f.p("bin"))
            .output()
            .unwrap();
    assert_eq!(code(&out), 0, "{}", show(&out));
    // Offline with an empty cache: said so, nothing registered.
    let g = Fixture::new(false);
    g.add(&[]);
    let (out, report) = g.sync(&["--offline"]);
    assert_eq!(code(&out), 75, "{}", show(&out));
    assert!(
        report["remote"][0]["error"].to_string().contains("offline"),
        "{report}"
    );
    assert_eq!(g.server.take_log(), vec![]);
}

#[test]
fn bearer_auth() {
    let f = Fixture::new(false);
    f.server.require_token("s3cret");
    f.add(&["--token-env", "TEAM_TOKEN"]);
    // Added with the variable set: the manifest is fetched with the token.
    let out =
        f.sb.atip()
            .args([
                "registry",
                "add",
                "again",
                &f.server.url,
                "--token-env",
                "TEAM_TOKEN",
                "--disabled",
            ])
            .env("TEAM_TOKEN", "s3cret")
            .output()
            .unwrap();
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(
        f.server.take_log(),
        vec![("/.well-known/atip-registry.json".to_string(), 200)]
    );
    // Variable unset: a configuration error, nothing requested.
    let (out, _) = f.sync(&[]);
    assert_eq!(code(&out), 78, "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("TEAM_TOKEN"));
    assert_eq!(f.server.take_log(), vec![]);
    let run = |token: &str| {
        f.sb.atip()
            .args(["sync", "--refresh", "--output", "json", "--path"])
            .arg(f.p("bin"))
            .env("TEAM_TOKEN", token)
            .output()
            .unwrap()
    };
    let out = run("wrong");
    assert_eq!(code(&out), 75, "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("access refused"));
    let out = run("s3cret");
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(f.server.take_log().iter().any(|(_, s)| *s == 200));
    assert_eq!(f.registry()["tools"]["alpha"]["source"], "remote");
    // The token is never written anywhere.
    for (p, bytes) in tree(f.sb.path()) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("s3cret"),
            "{}",
            p.display()
        );
    }
}

/// `atip registry list --output json`.
fn list_registries(sb: &Sandbox) -> Value {
    let out = sb
        .atip()
        .args(["registry", "list", "--output", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn add_reads_the_manifest_and_names_its_signers() {
    let f = Fixture::new(true);
    let add = |args: &[&str]| {
        f.sb.atip()
            .args(["--output", "json", "registry", "add"])
            .args(args)
            .output()
            .unwrap()
    };
    // Signed tree, no key given: added, with a note naming the signer (not trusted).
    let out = add(&["team", &f.server.url]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["manifest"]["name"], "team", "{v}");
    assert_eq!(v["manifest"]["signatures"], "minisign");
    assert_eq!(v["manifest"]["shims"], 2);
    let signer = v["manifest"]["signers"][0].as_str().unwrap().to_string();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("note") && stderr.contains(&signer),
        "{stderr}"
    );
    let l = list_registries(&f.sb);
    assert!(l["registries"][0].get("publicKeys").is_none(), "{l}");
    // A key that is not the tree's signer: added, with a warning.
    let other = f.p("other-key");
    let k =
        f.sb.atip()
            .args(["registry", "keygen"])
            .arg(&other)
            .output()
            .unwrap();
    assert!(k.status.success(), "{}", show(&k));
    let other_pub = format!("{}.pub", other.display());
    let out = add(&["team2", &f.server.url, "--public-key", &other_pub]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("warning"),
        "{}",
        show(&out)
    );
    // A URL that serves files but no registry: 65, nothing saved.
    let out = add(&["nope", &format!("{}/shims", f.server.url)]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("registry_manifest_invalid"));
    // A file there that is not a manifest: 65 as well.
    f.sb.write(
        "out/bad/.well-known/atip-registry.json",
        "{\"name\": \"x\"}",
    );
    let out = add(&["bad", &format!("{}/bad", f.server.url)]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("atipRegistry"),
        "{}",
        show(&out)
    );
    let l = list_registries(&f.sb);
    let names: Vec<&str> = l["registries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team", "team2"]);
}

#[test]
fn registries_json_add_list_remove() {
    let sb = Sandbox::new();
    let add = |args: &[&str]| {
        sb.atip()
            .args(["registry", "add"])
            .args(args)
            .output()
            .unwrap()
    };
    // a.example is not reachable from a test: checking its manifest fails, and nothing is
    // saved; --no-check adds it anyway.
    let out = add(&["a", "http://127.0.0.1:9/atip", "--priority", "5"]);
    assert_eq!(code(&out), 69, "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-check"));
    assert!(!sb.path().join("config/registries.json").exists());
    assert!(
        add(&[
            "a",
            "https://a.example/atip",
            "--priority",
            "5",
            "--no-check"
        ])
        .status
        .success()
    );
    let out = add(&["a", "https://b.example"]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    let out = add(&["b", "http://b.example", "--token-env", "T"]);
    assert_eq!(code(&out), 2, "plain http with a token: {}", show(&out));
    let out = add(&["c", "https://c.example", "--require-signatures"]);
    assert_eq!(code(&out), 2, "{}", show(&out));
    let v = list_registries(&sb);
    assert_eq!(v["registries"][0]["name"], "a");
    assert_eq!(v["registries"][0]["priority"], 5);
    let out = sb
        .atip()
        .args(["registry", "remove", "zzz"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 2, "{}", show(&out));
    let out = sb
        .atip()
        .args(["registry", "remove", "a"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let out = sb.atip().args(["sync"]).output().unwrap();
    assert_eq!(code(&out), 78, "{}", show(&out));
    // A malformed file: a config error naming it, for sync and scan alike.
    sb.write("config/registries.json", "{\"registries\": [");
    let out = sb
        .atip()
        .args(["scan", "--output", "json", "--path", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(code(&out), 78, "{}", show(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("registries_invalid"));
}

/// Replaces the served tree with `files` (a [`tree`] snapshot of it).
fn serve(f: &Fixture, files: &[(PathBuf, Vec<u8>)]) {
    std::fs::remove_dir_all(f.p("out")).unwrap();
    for (p, b) in files {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, b).unwrap();
    }
}

/// Whether the registered metadata of `tool` says its `run` command is destructive.
fn destructive(f: &Fixture, tool: &str) -> Value {
    let reg = f.registry();
    let rel = reg["tools"][tool]["metadata"].as_str().unwrap().to_owned();
    let meta: Value =
        serde_json::from_slice(&std::fs::read(f.sb.data_dir().join(rel)).unwrap()).unwrap();
    meta["commands"]["run"]["effects"]["destructive"].clone()
}

fn alpha(destructive: bool, description: &str) -> String {
    ALPHA
        .replace(
            "\"network\": false",
            &format!("\"network\": false, \"destructive\": {destructive}"),
        )
        .replace("Alpha tool", description)
}

#[test]
fn a_registry_moves_forward_only() {
    let f = Fixture::new(true);
    let key = f.p("key.pub").display().to_string();
    // Generation 2 says alpha's `run` is not destructive; generation 3 corrects it.
    f.sb.write("src/alpha.json", alpha(false, "Alpha tool"));
    let built: Value = serde_json::from_slice(&f.build(true).stdout).unwrap();
    assert_eq!(built["generation"], 2, "{built}");
    let old = tree(&f.p("out"));
    f.sb.write("src/alpha.json", alpha(true, "Alpha tool"));
    let built: Value = serde_json::from_slice(&f.build(true).stdout).unwrap();
    assert_eq!(built["generation"], 3, "{built}");
    let current = tree(&f.p("out"));
    // Rebuilding the unchanged tree keeps its generation and every byte.
    let again: Value = serde_json::from_slice(&f.build(true).stdout).unwrap();
    assert_eq!(
        (again["generation"].as_u64(), again["written"].as_u64()),
        (Some(3), Some(0))
    );
    // A lower or equal --generation with other content is refused by the build itself.
    f.sb.write("src/alpha.json", alpha(true, "Alpha tool, renamed"));
    let out =
        f.sb.atip()
            .args([
                "registry",
                "build",
                "--generation",
                "3",
                "--name",
                "team",
                "--binary",
            ])
            .arg(f.p("bin/alpha"))
            .arg("--binary")
            .arg(f.p("bin/beta"))
            .arg(f.p("src"))
            .arg(f.p("out"))
            .output()
            .unwrap();
    assert_eq!(code(&out), 2, "{}", show(&out));
    assert!(show(&out).contains("generation 3"), "{}", show(&out));
    assert_eq!(tree(&f.p("out")), current);
    f.sb.write("src/alpha.json", alpha(true, "Alpha tool"));

    f.add(&["--public-key", &key, "--require-signatures"]);
    let (out, report) = f.sync(&[]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(report["remote"][0]["generation"], 3, "{report}");
    assert_eq!(destructive(&f, "alpha"), true);

    // The attack: generation 2, validly signed by the trusted key, served again.
    serve(&f, &old);
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("catalog_refused") && err.contains("generation 2 is older than generation 3"),
        "{err}"
    );
    let r = &report["remote"][0];
    assert!(
        r["catalogRefused"].as_str().unwrap().contains("rollback"),
        "{r}"
    );
    assert_eq!(
        (r["catalog"].as_str(), r["generation"].as_u64()),
        (Some("cached"), Some(3))
    );
    // The old shim was served too (same path, valid old signature): not the one
    // generation 3 names, so refused, and the accepted copy stays.
    assert!(
        r["refused"]
            .to_string()
            .contains("an older or altered copy"),
        "{r}"
    );
    assert_eq!(destructive(&f, "alpha"), true, "rolled back");
    // Offline and plain runs keep it too.
    let (_, _) = f.sync(&[]);
    assert_eq!(destructive(&f, "alpha"), true, "rolled back");

    // Generation 3's catalog with generation 2's shim beside it (a mirror that mixes
    // trees): the shim is refused, the catalog is fine.
    serve(&f, &current);
    let shim = f.shim_path("alpha");
    let old_shim = old.iter().find(|(p, _)| *p == shim).unwrap().1.clone();
    let sig = PathBuf::from(format!("{}.minisig", shim.display()));
    let old_sig = old.iter().find(|(p, _)| *p == sig).unwrap().1.clone();
    std::fs::write(&shim, old_shim).unwrap();
    std::fs::write(&sig, old_sig).unwrap();
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("shims_refused"),
        "{}",
        show(&out)
    );
    assert!(report["remote"][0]["catalogRefused"].is_null(), "{report}");
    assert_eq!(destructive(&f, "alpha"), true, "rolled back");

    // Another tree at the same generation (a fork, validly signed): refused.
    f.sb.write("src/alpha.json", alpha(false, "Alpha tool"));
    let fork = |dir: &str, extra: &[&str]| {
        let out =
            f.sb.atip()
                .args(["registry", "build", "--name", "team", "--sign"])
                .arg(f.p("key"))
                .args(extra)
                .arg("--binary")
                .arg(f.p("bin/alpha"))
                .arg("--binary")
                .arg(f.p("bin/beta"))
                .arg(f.p("src"))
                .arg(f.p(dir))
                .output()
                .unwrap();
        assert!(out.status.success(), "{}", show(&out));
        (tree(&f.p(dir)), out)
    };
    let (same_gen, _) = fork("fork", &["--generation", "3"]);
    let relocated: Vec<(PathBuf, Vec<u8>)> = same_gen
        .into_iter()
        .map(|(p, b)| (f.p("out").join(p.strip_prefix(f.p("fork")).unwrap()), b))
        .collect();
    serve(&f, &relocated);
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        report["remote"][0]["catalogRefused"]
            .as_str()
            .unwrap()
            .contains("differs from the generation 3 accepted"),
        "{report}"
    );
    assert_eq!(destructive(&f, "alpha"), true, "rolled back");

    // A newer generation that has expired (the build warns): refused.
    let (expired, built) = fork(
        "expired",
        &["--generation", "9", "--expires", "2020-01-01T00:00:00Z"],
    );
    assert!(
        String::from_utf8_lossy(&built.stderr).contains("has passed"),
        "{}",
        show(&built)
    );
    let relocated: Vec<(PathBuf, Vec<u8>)> = expired
        .into_iter()
        .map(|(p, b)| (f.p("out").join(p.strip_prefix(f.p("expired")).unwrap()), b))
        .collect();
    serve(&f, &relocated);
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        report["remote"][0]["catalogRefused"]
            .as_str()
            .unwrap()
            .contains("expired at 2020-01-01T00:00:00Z"),
        "{report}"
    );
    assert_eq!(destructive(&f, "alpha"), true, "rolled back");
    // Text output names the refusal too.
    let out =
        f.sb.atip()
            .args(["sync", "--refresh", "--output", "text", "--path"])
            .arg(f.p("bin"))
            .output()
            .unwrap();
    assert_eq!(code(&out), 65, "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("refused its catalog"),
        "{}",
        show(&out)
    );

    // A real new generation moves forward; removing the registry forgets its floor.
    serve(&f, &current);
    f.sb.write("src/alpha.json", alpha(true, "Alpha tool, v4"));
    let built: Value = serde_json::from_slice(&f.build(true).stdout).unwrap();
    assert_eq!(built["generation"], 4, "{built}");
    let (out, report) = f.sync(&["--refresh"]);
    assert_eq!(code(&out), 0, "{}", show(&out));
    assert_eq!(report["remote"][0]["generation"], 4, "{report}");
    assert!(f.p("state/remote/team.json").exists());
    let out =
        f.sb.atip()
            .args(["registry", "remove", "team"])
            .output()
            .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(!f.p("state/remote/team.json").exists());
}
