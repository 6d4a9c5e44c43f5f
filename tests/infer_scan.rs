//! Man-page inference end to end: `atip scan` registers executables that only have a
//! man page as `inferred` (lowest precedence), `get`/`search`/`list` show them, `export`
//! leaves them out unless selected, `mcp serve` serves them (a call of unknown effects
//! asks), and a warm rescan reads no man page.

use crate::common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};

const TOOLS: [(&str, &str); 4] = [
    ("strings", "man1"),
    ("lsblk", "man8"),
    ("loginctl", "man1"),
    ("ssh-keyscan", "man1"),
];

fn fixture(section: &str, name: &str) -> PathBuf {
    let sec = section.trim_start_matches("man");
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/man")
        .join(section)
        .join(format!("{name}.{sec}.gz"))
}

/// A sandbox with four script tools that only have man pages, plus `ls`, which also
/// has a shim (the shim must win).
fn setup() -> Sandbox {
    let sb = Sandbox::new();
    for (name, section) in TOOLS {
        sb.script(
            &format!("bin/{name}"),
            "#!/bin/sh\necho ran >> \"$0.ran\"\n",
        );
        let dest = sb.path().join("man").join(section);
        std::fs::create_dir_all(&dest).unwrap();
        std::fs::copy(
            fixture(section, name),
            dest.join(fixture(section, name).file_name().unwrap()),
        )
        .unwrap();
    }
    sb.script("bin/ls", "#!/bin/sh\necho ran >> \"$0.ran\"\n");
    let dest = sb.path().join("man/man1");
    std::fs::copy(fixture("man1", "ls"), dest.join("ls.1.gz")).unwrap();
    // A page that is only a `.so` redirect to another page.
    sb.script("bin/strings-alias", "#!/bin/sh\nexit 0\n");
    sb.write("man/man1/strings-alias.1", ".so man1/strings.1.gz\n");
    sb
}

fn scan(sb: &Sandbox, extra: &[&str]) -> Value {
    let out = sb
        .atip()
        .args(["scan", "--output", "json", "--path"])
        .arg(sb.path().join("bin"))
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tool<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("{name} not in report: {report}"))
}

#[test]
fn scan_registers_inferred_tools_and_shims_win() {
    let sb = setup();
    let report = scan(&sb, &[]);
    for (name, _) in TOOLS {
        let t = tool(&report, name);
        assert_eq!(t["source"], "inferred", "{t}");
        assert_eq!(t["trust"], "inferred");
    }
    assert_eq!(tool(&report, "strings-alias")["source"], "inferred");
    assert_eq!(
        tool(&report, "ls")["source"],
        "shim",
        "the built-in shim beats inference"
    );
    assert_eq!(
        report["summary"]["sources"]["inferred"], 5,
        "{}",
        report["summary"]
    );
    assert_eq!(report["summary"]["sources"]["shim"], 1);
    // Nothing was run.
    for (name, _) in TOOLS {
        assert!(
            !sb.path().join(format!("bin/{name}.ran")).exists(),
            "{name} was executed"
        );
    }

    // get: the document, no effects stated, options from the page.
    let out = sb
        .atip()
        .args(["get", "strings", "--output", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--print-file-name"), "{text}");
    assert!(text.contains("\"inferred\""), "{text}");
    // The page states no effects; `strings` is in atip's effects table, so the document
    // carries the table's, but this `strings` is a script in a directory of the user's
    // own: the entry is not vouched for as curated (exec treats its effects as unknown).
    assert!(text.contains("\"curated\""), "{text}");
    let reg: Value =
        serde_json::from_slice(&std::fs::read(sb.data_dir().join("registry.json")).unwrap())
            .unwrap();
    assert_eq!(reg["tools"]["strings"]["vouchedBy"], "inferred");
    let out = sb
        .atip()
        .args(["get", "loginctl", "--output", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("terminate-session"),
        "subcommands from COMMANDS: {text}"
    );

    // search finds them.
    let out = sb
        .atip()
        .args(["search", "block devices", "--output", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("lsblk"),
        "{}",
        show(&out)
    );

    // export leaves them out unless selected.
    let out = sb
        .atip()
        .args(["export", "--format", "openai"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let all = String::from_utf8_lossy(&out.stdout);
    assert!(
        !all.contains("lsblk"),
        "inferred tools exported without selection: {all}"
    );
    assert!(all.contains("\"ls"), "{all}");
    for args in [
        vec!["export", "--format", "openai", "--tools", "lsblk"],
        vec!["export", "--format", "openai", "--include-inferred"],
    ] {
        let out = sb.atip().args(&args).output().unwrap();
        assert!(out.status.success(), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("lsblk"),
            "{args:?}: {}",
            show(&out)
        );
    }
    // Every export format's check passes on every inferred tool.
    let names = "strings,lsblk,loginctl,ssh-keyscan,strings-alias";
    for format in ["openai", "openai-strict", "anthropic", "gemini", "mcp"] {
        let out = sb
            .atip()
            .args(["export", "--format", format, "--check", "--tools", names])
            .output()
            .unwrap();
        assert!(out.status.success(), "{format}: {}", show(&out));
    }
    // Every stored inferred document validates without a warning. Documents that won
    // are kept once, by the registry (`tools/`), not again in the inference cache.
    let reg: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.path().join("data/registry.json")).unwrap())
            .unwrap();
    let docs: Vec<std::path::PathBuf> = reg["tools"]
        .as_object()
        .unwrap()
        .values()
        .filter(|e| e["source"] == "inferred")
        .map(|e| sb.path().join("data").join(e["metadata"].as_str().unwrap()))
        .collect();
    assert!(docs.len() >= 4, "{docs:?}");
    let out = sb
        .atip()
        .args(["validate", "--deny-warnings"])
        .args(&docs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let cache = sb.path().join("data/cache/inferred");
    for d in &docs {
        assert!(
            !cache.join(d.file_name().unwrap()).exists(),
            "{} is stored twice",
            d.display()
        );
    }
}

#[test]
fn warm_rescan_reads_no_man_page_and_notices_changes() {
    let sb = setup();
    scan(&sb, &[]);
    // Overwrite the page in place with garbage of the same size and restore its
    // modification time: a scan that read it would now find no options.
    let page = sb.path().join("man/man1/strings.1.gz");
    let meta = std::fs::metadata(&page).unwrap();
    let mtime = meta.modified().unwrap();
    std::fs::write(&page, vec![b'x'; meta.len() as usize]).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&page)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let report = scan(&sb, &[]);
    assert_eq!(report["summary"]["new"], 0, "{}", report["summary"]);
    assert_eq!(report["summary"]["updated"], 0, "{}", report["summary"]);
    assert_eq!(tool(&report, "strings")["status"], "unchanged");

    // A real change (new mtime) is noticed: the page is read again.
    std::fs::copy(fixture("man1", "size"), &page).unwrap();
    let report = scan(&sb, &[]);
    assert_eq!(tool(&report, "strings")["status"], "updated", "{report}");
    let out = sb
        .atip()
        .args(["get", "strings", "--output", "json"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--radix") && text.contains("--format"),
        "{text}"
    );

    // --no-infer registers none of them.
    let report = scan(&sb, &["--no-infer"]);
    assert!(
        report["summary"]["sources"].get("inferred").is_none(),
        "{}",
        report["summary"]
    );
}

/// `atip scan --verbose`'s report and its stderr.
fn scan_verbose(sb: &Sandbox) -> (Value, String) {
    let out = sb
        .atip()
        .args(["scan", "--verbose", "--output", "json", "--path"])
        .arg(sb.path().join("bin"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let report = serde_json::from_slice(&out.stdout).unwrap();
    (report, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A warm rescan where nothing changed only looks at `stat`s: it hashes no registry
/// metadata file (not even the first rescan after the cold scan that wrote them) and
/// writes none of `registry.json`, the catalog and the scan's caches (each keeps its
/// inode and mtime). A metadata file edited in place, its mtime set back, is still
/// hashed (its ctime changed) and written again.
#[test]
fn warm_rescan_hashes_no_metadata_file_and_writes_nothing() {
    use std::os::unix::fs::MetadataExt;
    let sb = setup();
    scan(&sb, &[]);
    let data = sb.data_dir();
    let files = [
        "registry.json",
        "catalog.bin",
        "cache/scan-cache.bin",
        "cache/infer-cache.bin",
        "cache/man-dirs.json",
    ]
    .map(|f| data.join(f));
    let stamps = || {
        files
            .iter()
            .map(|p| {
                let m = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                (m.ino(), m.mtime(), m.mtime_nsec())
            })
            .collect::<Vec<_>>()
    };
    let before = stamps();
    let hashed = |log: &str| -> usize {
        let line = log
            .lines()
            .find(|l| l.contains("registry metadata file(s) hashed"))
            .unwrap_or_else(|| panic!("no count of hashed files in:\n{log}"));
        let n = line
            .split("scan: ")
            .nth(1)
            .and_then(|r| r.split(' ').next());
        n.and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    let (report, log) = scan_verbose(&sb);
    assert_eq!(report["summary"]["new"], 0, "{}", report["summary"]);
    assert_eq!(report["summary"]["updated"], 0, "{}", report["summary"]);
    assert_eq!(hashed(&log), 0, "{log}");
    assert_eq!(stamps(), before, "a warm rescan wrote a file");

    // Damage a metadata file in place (the shim's: its document is not read from the
    // file), same size, mtime set back.
    let reg: Value =
        serde_json::from_slice(&std::fs::read(data.join("registry.json")).unwrap()).unwrap();
    assert_eq!(reg["tools"]["ls"]["source"], "shim", "{reg}");
    let file = data.join(reg["tools"]["ls"]["metadata"].as_str().unwrap());
    let good = std::fs::read(&file).unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    assert!(text.contains("\"ls\""), "{text}");
    std::fs::write(&file, text.replacen("\"ls\"", "\"lz\"", 1)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (_, log) = scan_verbose(&sb);
    assert_eq!(hashed(&log), 1, "{log}");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        good,
        "the damaged file was kept"
    );
    // What the commit wrote is known intact: the next rescan hashes nothing again.
    let (_, log) = scan_verbose(&sb);
    assert_eq!(hashed(&log), 0, "{log}");
}

/// A warm rescan does not parse `registry.json` while it keeps the stamp the scan cache
/// recorded (not even the first rescan after the cold scan that wrote it). An entry
/// removed from the file in place, its mtime set back, is noticed (the ctime changed):
/// the index is read, the entry written again, and the rescan after that reads it no more.
#[test]
fn warm_rescan_reads_the_registry_index_only_when_its_stamp_changed() {
    let sb = setup();
    scan(&sb, &[]);
    let index = sb.data_dir().join("registry.json");
    let read = |log: &str| -> bool {
        let line = log
            .lines()
            .find(|l| l.contains("scan: registry.json "))
            .unwrap_or_else(|| panic!("no registry.json line in:\n{log}"));
        !line.contains("not read")
    };
    let (report, log) = scan_verbose(&sb);
    assert_eq!(report["summary"]["new"], 0, "{}", report["summary"]);
    assert!(!read(&log), "{log}");

    let mut reg: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert!(reg["tools"]["ls"].is_object(), "{reg}");
    reg["tools"].as_object_mut().unwrap().remove("ls");
    let mtime = std::fs::metadata(&index).unwrap().modified().unwrap();
    std::fs::write(&index, serde_json::to_vec_pretty(&reg).unwrap()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&index)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let (report, log) = scan_verbose(&sb);
    assert!(read(&log), "{log}");
    assert_eq!(tool(&report, "ls")["status"], "new", "{report}");
    let reg: Value = serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    assert_eq!(reg["tools"]["ls"]["source"], "shim", "{reg}");
    let (report, log) = scan_verbose(&sb);
    assert_eq!(report["summary"]["new"], 0, "{}", report["summary"]);
    assert!(!read(&log), "{log}");

    // The scan cache is written when a record changes (a new executable), and not by
    // the rescan after that.
    use std::os::unix::fs::MetadataExt;
    let cache = sb.data_dir().join("cache/scan-cache.bin");
    let stamp = || {
        let m = std::fs::metadata(&cache).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let before = stamp();
    sb.script("bin/newtool", "#!/bin/sh\nexit 0\n");
    let (report, _) = scan_verbose(&sb);
    let after = stamp();
    assert_ne!(
        after, before,
        "the new executable's record was not saved: {report}"
    );
    scan_verbose(&sb);
    assert_eq!(stamp(), after, "an unchanged scan cache was written again");
}

/// A registry copy of an inferred document damaged in place is made again from its man
/// page by a plain scan (the man-page source offers the registry's copy only while it
/// still hashes to its name), not refused scan after scan until `--refresh`.
#[test]
fn a_damaged_inferred_document_is_made_again_by_a_plain_scan() {
    let sb = setup();
    scan(&sb, &[]);
    let data = sb.data_dir();
    let registry = || -> Value {
        serde_json::from_slice(&std::fs::read(data.join("registry.json")).unwrap()).unwrap()
    };
    let reg = registry();
    assert_eq!(reg["tools"]["strings"]["source"], "inferred", "{reg}");
    let file = data.join(reg["tools"]["strings"]["metadata"].as_str().unwrap());
    let good = std::fs::read(&file).unwrap();
    let text = String::from_utf8(good.clone()).unwrap();
    assert!(text.contains("\"strings\""), "{text}");
    std::fs::write(&file, text.replacen("\"strings\"", "\"strongs\"", 1)).unwrap();

    let report = scan(&sb, &[]);
    let entry = tool(&report, "strings");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        good,
        "the damaged document was kept: {entry}"
    );
    assert_eq!(registry()["tools"]["strings"]["source"], "inferred");
    let out = sb
        .atip()
        .args(["--output", "json", "get", "strings"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
}

/// `atip mcp serve` offers inferred tools, in search mode too (they are not hidden), and
/// a call of one, whose effects nothing states, needs a confirmation a client without
/// elicitation cannot give: the program does not run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_serve_offers_inferred_tools_and_their_calls_ask() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use serde_json::json;
    let sb = setup();
    scan(&sb, &[]);
    let call = |name: &str, a: Value| {
        CallToolRequestParams::new(name.to_string()).with_arguments(a.as_object().unwrap().clone())
    };
    for threshold in ["2", "1000"] {
        let mut cmd = sb.atip();
        cmd.args(["mcp", "serve", "--no-mcp", "--search-threshold", threshold]);
        let (proc, _) =
            rmcp::transport::TokioChildProcess::builder(tokio::process::Command::from(cmd))
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
        let c = ().serve(proc).await.unwrap();
        let listed: Vec<String> = c
            .list_all_tools()
            .await
            .unwrap()
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        let name = if threshold == "2" {
            assert_eq!(listed, ["atip_search_tools", "atip_call_tool"]);
            let r = c
                .call_tool(call(
                    "atip_search_tools",
                    json!({"query": "list block devices"}),
                ))
                .await
                .unwrap();
            let s = r.structured_content.unwrap();
            assert_eq!(s["results"][0]["name"], "lsblk", "{s}");
            "atip_call_tool"
        } else {
            assert!(listed.iter().any(|n| n == "lsblk"), "{listed:?}");
            "lsblk"
        };
        let a = if name == "lsblk" {
            json!({})
        } else {
            json!({"name": "lsblk", "arguments": {}})
        };
        let r = c.call_tool(call(name, a)).await.unwrap();
        assert_eq!(
            r.structured_content.unwrap()["error"]["code"],
            "confirmation_required",
            "{threshold}"
        );
        c.cancel().await.unwrap();
        assert!(
            !sb.path().join("bin/lsblk.ran").exists(),
            "lsblk ran unconfirmed"
        );
    }
}

/// The system's own bash and perl pages (Debian's `bash` and `perl-base`), inferred
/// through a real scan: bash's options are its invocation options, not the `set`
/// builtin's letters nor the `-a file` operators of its conditional expressions; perl's
/// `-m[-]module`, `-l[octal]`, `-x[dir]` values are not operands.
#[test]
fn system_bash_and_perl_pages_keep_other_commands_options_out() {
    let sb = Sandbox::new();
    let bin = sb.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["bash", "perl"] {
        let exe = Path::new("/usr/bin").join(name);
        let page = Path::new("/usr/share/man/man1").join(format!("{name}.1.gz"));
        if !(exe.exists() && page.exists()) {
            crate::common::skip(&format!("{name} or its manual page is not installed"));
            return;
        }
        std::os::unix::fs::symlink(&exe, bin.join(name)).unwrap();
    }
    let out = sb
        .atip()
        .env("MANPATH", "/usr/share/man")
        .args(["scan", "--output", "json", "--path"])
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let get = |name: &str| -> Value {
        let out = sb
            .atip()
            .env("MANPATH", "/usr/share/man")
            .args(["get", name, "--output", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let bash = get("bash");
    assert_eq!(bash["trust"]["source"], "inferred", "{bash}");
    let root = &bash["commands"][""];
    let flags: Vec<String> = root["options"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|o| o["flags"].as_array().unwrap().clone())
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    // Every one-letter flag is one of bash's invocation options (OPTIONS section)…
    for f in &flags {
        if f.len() == 2 {
            assert!("cilrsvxDO".contains(&f[1..]), "bash {f}: {flags:?}");
        }
    }
    // …and they are there.
    for f in [
        "-c", "-i", "-l", "-r", "-s", "--norc", "--login", "--posix", "--rcfile",
    ] {
        assert!(flags.iter().any(|x| x == f), "bash lacks {f}: {flags:?}");
    }
    let perl = get("perl");
    let args: Vec<&str> = perl["commands"][""]["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(args, ["programfile", "argument"], "{perl}");
}
