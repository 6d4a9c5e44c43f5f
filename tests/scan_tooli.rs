//! Tooli apps (issue 14 item 4): recognised from package metadata alone, converted only
//! when the user allows it, by running the app's own interpreter under the process
//! contract. The app is written here and installed the way pip lays a package out (a
//! venv, the package, its `*.dist-info`, a console-script wrapper); the real `tooli`
//! comes from `.ci/setup-test-deps` (PyPI), and the test skips visibly without it.

use crate::common::{Sandbox, show};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::scan::lock;

/// The venv `.ci/setup-test-deps` installs tooli into.
fn tooli_venv() -> Option<PathBuf> {
    let deps = std::env::var_os("ATIP_TEST_DEPS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-deps"));
    let venv = deps.join("tooli");
    let ok = Command::new(venv.join("bin/python"))
        .args(["-c", "import tooli.manifest"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(venv)
}

const APP: &str = r#"
import pathlib
from pathlib import Path
from typing import Annotated
from tooli import Argument, Option, Tooli
from tooli.annotations import Destructive, Idempotent, ReadOnly

pathlib.Path(MARKER).write_text("imported")

app = Tooli(name="notes", description="Keep short notes in a folder", version="1.2.0")


@app.command(annotations=ReadOnly | Idempotent)
def list_notes(
    folder: Annotated[Path, Argument(help="Folder of notes")],
    limit: Annotated[int, Option(help="Most notes shown")] = 10,
    verbose: Annotated[bool, Option(help="Show the bodies")] = False,
) -> list[str]:
    """List the notes of a folder."""
    return []


@app.command(annotations=Destructive)
def purge(folder: Annotated[Path, Argument(help="Folder")]) -> dict:
    """Delete every note."""
    return {}


@app.command()
def sync(remote: str = "origin") -> dict:
    """Sync notes with a remote."""
    return {}


def main():
    app()
"#;

struct App {
    sb: Sandbox,
    /// The scanned PATH.
    path: std::ffi::OsString,
    marker: PathBuf,
}

impl App {
    /// A venv holding the `notes` package (requiring tooli) and, when `broken`, a
    /// second Tooli app whose module fails on import; `bin/` holds links to their
    /// console scripts. With `env`, the wrappers start `#!/usr/bin/env python` and the
    /// venv's `bin` is on the scanned PATH after `bin/` (where env finds the venv's
    /// interpreter).
    fn install(tooli: &Path, env: bool) -> App {
        let sb = Sandbox::new();
        let venv = sb.path().join("venv");
        let made = Command::new(tooli.join("bin/python"))
            .args(["-m", "venv", "--without-pip"])
            .arg(&venv)
            .output()
            .unwrap();
        assert!(made.status.success(), "{}", show(&made));
        let ver = Command::new(venv.join("bin/python"))
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
            .unwrap();
        let ver = String::from_utf8_lossy(&ver.stdout).trim().to_owned();
        let site = venv.join(format!("lib/python{ver}/site-packages"));
        let tooli_site = tooli.join(format!("lib/python{ver}/site-packages"));
        let marker = sb.path().join("imported");
        let put = |rel: &str, text: &str| {
            let p = site.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // tooli and its dependencies, as if installed into this venv.
        put("deps.pth", &format!("{}\n", tooli_site.display()));
        put("notes/__init__.py", "");
        put(
            "notes/cli.py",
            &APP.replace("MARKER", &format!("{:?}", marker.display().to_string())),
        );
        put(
            "notes-1.2.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: notes\nVersion: 1.2.0\nRequires-Dist: tooli>=6\n\nNotes.\n",
        );
        put(
            "notes-1.2.0.dist-info/entry_points.txt",
            "[console_scripts]\nnotes = notes.cli:main\nbroken = broken.cli:main\n",
        );
        put(
            "notes-1.2.0.dist-info/RECORD",
            "notes/__init__.py,,\nnotes/cli.py,,\n../../../bin/notes,,\n",
        );
        put("broken/__init__.py", "");
        put("broken/cli.py", "raise RuntimeError('cannot start')\n");
        let bin = sb.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let _g = lock();
        let shebang = if env {
            "#!/usr/bin/env python".to_owned()
        } else {
            format!("#!{}/bin/python", venv.display())
        };
        for name in ["notes", "broken"] {
            let module = format!("{name}.cli");
            let w = sb.script(
                &format!("venv/bin/{name}"),
                &format!(
                    "{shebang}\nimport sys\nfrom {module} import main\nif __name__ == '__main__':\n    sys.exit(main())\n",
                ),
            );
            std::os::unix::fs::symlink(w, bin.join(name)).unwrap();
        }
        let path = if env {
            std::env::join_paths([bin, venv.join("bin")]).unwrap()
        } else {
            bin.into_os_string()
        };
        App { sb, path, marker }
    }

    fn scan(&self, args: &[&str]) -> Value {
        let out = {
            let _g = lock();
            self.sb
                .atip()
                .args(["scan", "--output", "json", "--no-builtin-shims", "--path"])
                .arg(&self.path)
                .args(args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        }
        .wait_with_output()
        .unwrap();
        // `broken` fails to convert when allowed: a failed tool, exit 0 (as a failed probe).
        assert!(out.status.code() == Some(0), "{}", show(&out));
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&out)))
    }

    fn atip(&self, args: &[&str]) -> (Value, String) {
        let out = self.sb.atip().args(args).output().unwrap();
        assert!(out.status.success(), "{}", show(&out));
        (
            serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }
}

fn entry<'a>(r: &'a Value, name: &str) -> Option<&'a Value> {
    r["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

#[test]
fn tooli_apps_are_recognised_without_running_and_converted_only_when_allowed() {
    let Some(tooli) = tooli_venv() else {
        crate::common::skip("tooli is not installed (.ci/setup-test-deps installs it from PyPI)");
        return;
    };
    let app = App::install(&tooli, false);

    // Default scan: both recognised from package metadata, nothing run or registered.
    let r = app.scan(&[]);
    assert_eq!(r["summary"]["evidence"]["framework-app"], 2, "{r:#}");
    assert_eq!(r["summary"]["converted"], 0);
    assert_eq!(r["summary"]["probed"], 0);
    assert!(entry(&r, "notes").is_none(), "{r:#}");
    assert!(r["failed"].as_array().unwrap().is_empty(), "{r:#}");
    assert!(
        !app.marker.exists(),
        "the app's code ran without permission"
    );
    let hints = r["hints"].to_string();
    assert!(hints.contains("Tooli app"), "{hints}");

    // A dry run with --convert plans the conversions and runs nothing.
    let r = app.scan(&["--dry-run", "--convert"]);
    let planned: Vec<&str> = r["wouldProbe"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["why"] == "convert")
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(planned.len(), 2, "{r:#}");
    assert!(!app.marker.exists());

    // Allowlisted: `notes` is converted by its own interpreter; `broken` is not allowed.
    app.sb
        .write("config/config.json", r#"{"probe": {"allow": ["notes"]}}"#);
    let r = app.scan(&[]);
    assert!(app.marker.exists(), "the conversion did not import the app");
    assert_eq!(r["summary"]["converted"], 1, "{r:#}");
    assert_eq!(
        r["summary"]["probed"], 0,
        "a Tooli app is never run with --agent"
    );
    let t = entry(&r, "notes").unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(t["source"], "converted");
    assert_eq!(t["trust"], "vendor");
    let reg = app.sb.data_dir().join("registry.json");
    let reg: Value = serde_json::from_slice(&std::fs::read(reg).unwrap()).unwrap();
    assert_eq!(reg["tools"]["notes"]["source"], "converted");
    assert!(reg["tools"].get("broken").is_none());

    // The document: commands, arguments vs options, effects only where annotated.
    let (doc, _) = app.atip(&["--output", "json", "get", "notes"]);
    let doc = if doc.get("metadata").is_some() {
        &doc["metadata"]
    } else {
        &doc
    };
    assert_eq!(doc["x-converted"]["from"], "tooli", "{doc:#}");
    assert_eq!(doc["description"], "Keep short notes in a folder");
    let list = &doc["commands"]["list-notes"];
    assert_eq!(list["arguments"][0]["name"], "folder");
    let flags: Vec<String> = list["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["flags"][0].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(flags, ["--limit", "--verbose"]);
    assert_eq!(list["effects"]["destructive"], false);
    assert_eq!(doc["commands"]["purge"]["effects"]["destructive"], true);
    assert!(doc["commands"]["sync"].get("effects").is_none(), "{doc:#}");
    assert_eq!(
        doc["commands"]["sync"]["options"][0]["flags"][0],
        "--remote"
    );
    // It passes the validator without warnings.
    let file = app
        .sb
        .data_dir()
        .join(reg["tools"]["notes"]["metadata"].as_str().unwrap());
    let out = app
        .sb
        .atip()
        .args(["validate", "--deny-warnings"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", show(&out));

    // Warm rescan: unchanged, nothing run again.
    std::fs::remove_file(&app.marker).unwrap();
    let r = app.scan(&[]);
    assert_eq!(entry(&r, "notes").unwrap()["status"], "unchanged", "{r:#}");
    assert_eq!(r["summary"]["converted"], 0);
    assert!(!app.marker.exists(), "a warm rescan ran the app again");

    // --explain says what was seen and done.
    let r = app.scan(&["--explain", "notes"]);
    let ev = r["evidence"].to_string();
    assert_eq!(r["candidates"][0]["source"], "converted", "{r:#}");
    assert!(
        ev.contains("a Tooli app") && ev.contains("converted"),
        "{ev}"
    );

    // --convert: the app that cannot start is a failed tool with the reason, and is
    // not registered; the other entries stay.
    let r = app.scan(&["--convert"]);
    let failed = r["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{r:#}");
    assert_eq!(failed[0]["name"], "broken");
    assert!(
        failed[0]["message"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{r:#}"
    );
    assert!(entry(&r, "notes").is_some());
}

#[test]
fn tooli_apps_started_through_env_find_their_interpreter_on_the_scanned_path() {
    let Some(tooli) = tooli_venv() else {
        crate::common::skip("tooli is not installed (.ci/setup-test-deps installs it from PyPI)");
        return;
    };
    let app = App::install(&tooli, true);

    // Recognised by reading (the venv's `python` found on the scanned PATH), not run.
    let r = app.scan(&[]);
    assert_eq!(r["summary"]["evidence"]["framework-app"], 2, "{r:#}");
    assert_eq!(r["summary"]["converted"], 0);
    assert!(
        !app.marker.exists(),
        "the app's code ran without permission"
    );

    // Allowed: converted by that interpreter.
    app.sb
        .write("config/config.json", r#"{"probe": {"allow": ["notes"]}}"#);
    let r = app.scan(&[]);
    assert!(app.marker.exists(), "the conversion did not import the app");
    assert_eq!(r["summary"]["converted"], 1, "{r:#}");
    let t = entry(&r, "notes").unwrap_or_else(|| panic!("{r:#}"));
    assert_eq!(t["source"], "converted");
    let r = app.scan(&["--explain", "notes"]);
    assert!(
        r["evidence"].to_string().contains("/venv/bin/python"),
        "{r:#}"
    );

    // Without the venv on the scanned PATH, `env python` may be any interpreter: the
    // app is not recognised (a fresh data dir, so nothing is cached).
    let out = {
        let _g = lock();
        app.sb
            .atip()
            .env("ATIP_DATA_DIR", app.sb.path().join("data2"))
            .args(["scan", "--output", "json", "--no-builtin-shims", "--path"])
            .arg(app.sb.path().join("bin"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }
    .wait_with_output()
    .unwrap();
    assert!(out.status.success(), "{}", show(&out));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        r["summary"]["evidence"].get("framework-app").is_none(),
        "{r:#}"
    );
}
