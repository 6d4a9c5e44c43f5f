//! Apps of agent-CLI frameworks: recognised from their package metadata alone, and
//! converted — only where the user allows it — by running the app's own interpreter to
//! print the framework's manifest (spec/scan.md §4, the mapping in spec/convert.md).
//!
//! Tooli (PyPI `tooli`) apps do not answer `--agent`, but Tooli builds a manifest of
//! every command (input schema, read-only/destructive/idempotent annotations) from the
//! app's code. Such an app is a pip/pipx/uv console script whose package's
//! `*.dist-info/METADATA` says `Requires-Dist: tooli`: recognised by reading files only
//! (`recognise`). Getting the manifest means importing the app's module, which runs
//! its code, so `convert` runs only for apps the user allowed (the probe allowlist,
//! `--convert`, or `--probe all`), through [`crate::process::run`] like every probe:
//! timeout, output caps, process-group kill, scrubbed environment, temp working dir.

use super::launcher::{EntryPoint, Follower};
use super::probe::{self, ProbeAnswer, ProbeFailure};
use super::report::FailReason;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The shortest time a conversion gets: a Python interpreter importing the app and its
/// framework (pydantic, rich, click) takes far longer than a native `--agent` answer.
pub const CONVERT_TIMEOUT_MIN: Duration = Duration::from_secs(10);

/// What an executable's package metadata says about frameworks, cached with the
/// executable's fingerprint.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[rkyv(compare(PartialEq))]
#[serde(tag = "framework", rename_all = "kebab-case")]
pub enum AppRecord {
    /// Not an app of a framework atip converts (or not looked at: its bytes show an ATIP
    /// sign, so it is probed as a native tool).
    None,
    /// A Tooli app (boxed: every executable's record holds an `AppRecord`, and almost
    /// none is an app; inline, the app made each record 128 bytes bigger).
    Tooli(Box<TooliApp>),
}

impl AppRecord {
    /// The Tooli app, if this is one.
    pub(crate) fn tooli(&self) -> Option<&TooliApp> {
        match self {
            AppRecord::Tooli(a) => Some(a.as_ref()),
            AppRecord::None => None,
        }
    }
}

/// A Tooli app as its package metadata describes it.
#[derive(
    Debug,
    Clone,
    PartialEq,
    Serialize,
    Deserialize,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(rename_all = "camelCase")]
pub struct TooliApp {
    /// The app's own interpreter: the absolute path its wrapper names, or where `env`
    /// finds it on the scanned PATH.
    #[rkyv(with = rkyv::with::AsString)]
    pub interpreter: PathBuf,
    /// The entry point's module (`notes.cli`).
    pub module: String,
    /// The entry point's object (`main`, `app`; may be empty).
    pub attr: String,
    /// The distribution's `*.dist-info` directory.
    #[rkyv(with = rkyv::with::AsString)]
    pub dist: PathBuf,
    /// The distribution's `Name`.
    pub package: String,
    /// The distribution's `Version`.
    pub version: String,
}

/// A stored app compared in place with a rescan's (the scan cache's `OldCache::holds`):
/// written out because its paths are stored as strings, which rkyv's derive does not
/// compare with a `PathBuf`. The pattern names every field, so a new one cannot be missed.
impl PartialEq<TooliApp> for ArchivedTooliApp {
    fn eq(&self, other: &TooliApp) -> bool {
        let TooliApp {
            interpreter,
            module,
            attr,
            dist,
            package,
            version,
        } = other;
        interpreter.to_str() == Some(self.interpreter.as_str())
            && self.module == *module
            && self.attr == *attr
            && dist.to_str() == Some(self.dist.as_str())
            && self.package == *package
            && self.version == *version
    }
}

/// Whether `canonical` (whose whole bytes are `head`, a small wrapper) is the console
/// script of a package that requires Tooli. Reads package metadata only.
pub(crate) fn recognise(follower: &Follower, canonical: &Path, head: &[u8]) -> AppRecord {
    let Some((interpreter, entries)) = follower.app_entry_points(canonical, head) else {
        return AppRecord::None;
    };
    for EntryPoint { module, attr, dist } in entries {
        let Some(meta) = read_metadata(&dist.join("METADATA")) else {
            continue;
        };
        let fields = Metadata::parse(&meta);
        if fields.requires.iter().any(|r| requires_tooli(r)) {
            return AppRecord::Tooli(Box::new(TooliApp {
                interpreter: interpreter.clone(),
                module,
                attr,
                dist,
                package: fields.name.unwrap_or_default(),
                version: fields.version.unwrap_or_default(),
            }));
        }
    }
    AppRecord::None
}

/// Largest `METADATA` read (its header comes first; the long description follows).
const METADATA_MAX: u64 = 1 << 20;

fn read_metadata(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.len() > METADATA_MAX {
        return None;
    }
    let bytes = std::fs::read(path).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// The fields of a core-metadata header that matter here.
#[derive(Debug, Default)]
struct Metadata<'a> {
    name: Option<String>,
    version: Option<String>,
    requires: Vec<&'a str>,
}

impl<'a> Metadata<'a> {
    /// The header: `Key: value` lines up to the first blank line.
    fn parse(text: &'a str) -> Metadata<'a> {
        let mut m = Metadata::default();
        for line in text.lines() {
            if line.trim().is_empty() {
                break;
            }
            let Some((key, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.trim();
            match key.to_ascii_lowercase().as_str() {
                "name" => m.name = Some(value.to_owned()),
                "version" => m.version = Some(value.to_owned()),
                "requires-dist" => m.requires.push(value),
                _ => {}
            }
        }
        m
    }
}

/// Whether one `Requires-Dist` value is an unconditional requirement of Tooli: the
/// project name, normalised as PyPI does (case, `-`/`_`/`.` runs), is `tooli`, and no
/// environment marker limits it to an extra (`; extra == "dev"`).
fn requires_tooli(value: &str) -> bool {
    let (req, marker) = value.split_once(';').unwrap_or((value, ""));
    let name: String = req
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        .collect();
    let normalised = name
        .to_ascii_lowercase()
        .split(['-', '_', '.'])
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    normalised == "tooli" && !marker.contains("extra")
}

/// The program the interpreter runs: imports the entry module, finds the Tooli app,
/// prints `{"manifest": …, "cli": …}`. `cli` says, per command, which parameters are
/// options or positional arguments and their flags — what the command line accepts,
/// which the manifest's JSON schema does not say.
const SCRIPT: &str = r#"
import importlib, inspect, json, site, sys
site_dir, module, attr = sys.argv[1:4]
site.addsitedir(site_dir)
from tooli import Tooli
from tooli.manifest import generate_agent_manifest
mod = importlib.import_module(module)
obj = getattr(mod, attr, None) if attr else None
if isinstance(obj, Tooli):
    app = obj
else:
    found = [(k, v) for k, v in vars(mod).items() if isinstance(v, Tooli)]
    named = [v for k, v in found if k == "app"]
    if not found:
        sys.stderr.write("no Tooli app in module %s\n" % module)
        sys.exit(3)
    app = named[0] if named else found[0][1]
cli = {}
for tool in app.get_tools():
    if tool.hidden:
        continue
    params = []
    try:
        hints = getattr(tool.callback, "__annotations__", {})
        for p in inspect.signature(tool.callback).parameters.values():
            if p.name in ("ctx", "context") or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            kind, flags = None, []
            for m in getattr(hints.get(p.name), "__metadata__", ()):
                if type(m).__name__ in ("Option", "Argument"):
                    kind = type(m).__name__.lower()
                    flags = [str(a) for a in getattr(m, "args", ()) if str(a).startswith("-")]
                    break
            params.append({"name": p.name, "kind": kind, "flags": flags,
                           "hasDefault": p.default is not p.empty})
    except (TypeError, ValueError):
        params = None
    cli[tool.name] = params
sys.stdout.write(json.dumps({"manifest": generate_agent_manifest(app), "cli": cli}, default=str))
"#;

/// Runs the app's interpreter to print its manifest and converts it to ATIP metadata
/// named `name` ([`super::tooli::to_atip`]). The answer's trust source is `vendor`.
pub(crate) fn convert(
    app: &TooliApp,
    name: &str,
    timeout: Duration,
    child: probe::Child<'_>,
) -> Result<ProbeAnswer, ProbeFailure> {
    let site = app.dist.parent().unwrap_or(Path::new("/"));
    let site = site.to_string_lossy();
    let args = ["-I", "-c", SCRIPT, &site, &app.module, &app.attr];
    let out = probe::run_to_success(
        &app.interpreter,
        &args,
        timeout.max(CONVERT_TIMEOUT_MIN),
        "printing the Tooli manifest",
        child,
    )?;
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        ProbeFailure::new(
            FailReason::NotJson,
            format!("the Tooli manifest is not JSON: {e}"),
        )
    })?;
    let document = super::tooli::to_atip(&printed, name, app)
        .map_err(|e| ProbeFailure::new(FailReason::Invalid, e.to_string()))?;
    probe::judge(document, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requirements_of_tooli_are_recognised_as_pypi_names() {
        for yes in [
            "tooli",
            "tooli>=6.0",
            "Tooli (>=6)",
            "TOOLI[mcp]>=6; python_version >= \"3.10\"",
        ] {
            assert!(requires_tooli(yes), "{yes}");
        }
        for no in [
            "tooli-extra",
            "tooling",
            "pytooli",
            "tooli>=6; extra == \"cli\"",
            "",
        ] {
            assert!(!requires_tooli(no), "{no}");
        }
    }

    #[test]
    fn the_metadata_header_ends_at_the_first_blank_line() {
        let m = Metadata::parse(
            "Metadata-Version: 2.4\nName: notes-app\nVersion: 1.2\nRequires-Dist: click\nRequires-Dist: tooli>=6\n\nRequires-Dist: not-a-header\n",
        );
        assert_eq!(m.name.as_deref(), Some("notes-app"));
        assert_eq!(m.version.as_deref(), Some("1.2"));
        assert_eq!(m.requires, ["click", "tooli>=6"]);
    }

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_console_script_of_a_package_requiring_tooli_is_a_tooli_app() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let site = venv.join("lib/python3.11/site-packages");
        write(
            &site.join("notes-1.0.dist-info/entry_points.txt"),
            "[console_scripts]\nnotes = notes.cli:main\n",
        );
        write(
            &site.join("notes-1.0.dist-info/METADATA"),
            "Name: notes\nVersion: 1.0\nRequires-Dist: tooli>=6\n",
        );
        write(
            &site.join("plain-1.0.dist-info/entry_points.txt"),
            "[console_scripts]\nplain = plain.cli:main\n",
        );
        write(
            &site.join("plain-1.0.dist-info/METADATA"),
            "Name: plain\nVersion: 1.0\nRequires-Dist: click\n\nRequires-Dist: tooli\n",
        );
        let wrapper = format!(
            "#!{}/bin/python\nfrom notes.cli import main\nmain()\n",
            venv.display()
        );
        let f = Follower::new();
        let got = recognise(&f, &venv.join("bin/notes"), wrapper.as_bytes());
        assert_eq!(
            got,
            AppRecord::Tooli(Box::new(TooliApp {
                interpreter: venv.join("bin/python"),
                module: "notes.cli".into(),
                attr: "main".into(),
                dist: site.join("notes-1.0.dist-info"),
                package: "notes".into(),
                version: "1.0".into(),
            }))
        );
        // A package without the requirement in its header, an interpreter found through
        // env, and a file that is no Python wrapper: not apps.
        assert_eq!(
            recognise(&f, &venv.join("bin/plain"), wrapper.as_bytes()),
            AppRecord::None
        );
        assert_eq!(
            recognise(
                &f,
                &venv.join("bin/notes"),
                b"#!/usr/bin/env python3\nfrom notes.cli import main\n"
            ),
            AppRecord::None
        );
        assert_eq!(
            recognise(&f, &venv.join("bin/notes"), b"#!/bin/sh\nexec true\n"),
            AppRecord::None
        );
    }

    fn executable(p: &Path) {
        use std::os::unix::fs::PermissionsExt;
        write(p, "#!/bin/false\n");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn an_interpreter_found_through_env_is_resolved_on_the_scanned_path() {
        let t = tempfile::tempdir().unwrap();
        // A venv whose python3 is a link to python3.11, and a user prefix (like
        // `pip install --user`) with a 3.11 and a 3.9 site dir.
        let venv = t.path().join("venv");
        executable(&venv.join("bin/python3.11"));
        std::os::unix::fs::symlink("python3.11", venv.join("bin/python3")).unwrap();
        let tooli_app = |site: &Path, name: &str| {
            write(
                &site.join(format!("{name}-1.0.dist-info/entry_points.txt")),
                &format!("[console_scripts]\n{name} = {name}.cli:main\n"),
            );
            write(
                &site.join(format!("{name}-1.0.dist-info/METADATA")),
                &format!("Name: {name}\nVersion: 1.0\nRequires-Dist: tooli\n"),
            );
        };
        tooli_app(&venv.join("lib/python3.11/site-packages"), "notes");
        let user = t.path().join("user");
        tooli_app(&user.join("lib/python3.11/site-packages"), "mine");
        tooli_app(&user.join("lib/python3.9/site-packages"), "old");
        let env = b"#!/usr/bin/env python3\nimport sys\nfrom x.cli import main\n";

        let f = Follower::with_path(vec![t.path().join("nowhere"), venv.join("bin")]);
        // The venv's own wrapper: the venv's interpreter, as env finds it (not resolved
        // further: the link is what makes it the venv's).
        let got = recognise(&f, &venv.join("bin/notes"), env);
        assert_eq!(
            got.tooli().map(|a| a.interpreter.clone()),
            Some(venv.join("bin/python3"))
        );
        assert_eq!(got.tooli().unwrap().module, "notes.cli");
        // A wrapper in another prefix: its site dir of the interpreter's version only.
        assert_eq!(
            recognise(&f, &user.join("bin/mine"), env)
                .tooli()
                .map(|a| a.dist.clone()),
            Some(user.join("lib/python3.11/site-packages/mine-1.0.dist-info"))
        );
        assert_eq!(recognise(&f, &user.join("bin/old"), env), AppRecord::None);
        // Not on the scanned PATH, or not executable there: not recognised.
        assert_eq!(
            recognise(&Follower::new(), &venv.join("bin/notes"), env),
            AppRecord::None
        );
        write(&t.path().join("plain/python3"), "");
        let f = Follower::with_path(vec![t.path().join("plain")]);
        assert_eq!(recognise(&f, &venv.join("bin/notes"), env), AppRecord::None);
    }
}
