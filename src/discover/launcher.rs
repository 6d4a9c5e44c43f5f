//! Launchers are followed, not run: when an executable is a small wrapper that starts
//! code kept elsewhere, the files it launches are read for a sign instead.
//!
//! Followed today: Python console-script wrappers as pip, pipx and uv write them (a `#!`
//! line naming a python interpreter, then `from PKG.MOD import main` or `import PKG.MOD`):
//! the module is looked up as `PKG/MOD.py`, `PKG/MOD/__init__.py` or `PKG/__main__.py` in
//! `lib/python*/{site,dist}-packages/` under the interpreter's prefix (a venv's, for pipx
//! and uv) and under the wrapper's own prefix. npm bins need no rule: they are symlinks to
//! the JS file, which is read through the link.
//!
//! Bounded: only wrappers of at most [`WRAPPER_MAX`] bytes, at most [`MAX_TARGETS`]
//! files read per wrapper, never a file outside those two prefixes. Reads only.

use super::sign::{self, Sign};
use std::path::{Path, PathBuf};

/// [`Sign::Launcher`] when `canonical` is a wrapper whose launched files show a sign.
pub fn follow(canonical: &Path) -> Sign {
    let small = std::fs::metadata(canonical).is_ok_and(|m| m.len() <= WRAPPER_MAX);
    let Some(head) = small.then(|| std::fs::read(canonical).ok()).flatten() else {
        return Sign::None;
    };
    let shown = targets(canonical, &head)
        .iter()
        .any(|t| sign::detect(t).is_ok_and(|s| s.shown()));
    if shown { Sign::Launcher } else { Sign::None }
}

/// The largest file treated as a wrapper.
pub const WRAPPER_MAX: u64 = 8 << 10;

/// Files read at most per wrapper.
pub const MAX_TARGETS: usize = 4;

/// The files a wrapper launches, if it is a launcher atip knows; `head` is the whole
/// wrapper (at most [`WRAPPER_MAX`] bytes), `canonical` its resolved path.
pub fn targets(canonical: &Path, head: &[u8]) -> Vec<PathBuf> {
    let Ok(text) = std::str::from_utf8(head) else {
        return Vec::new();
    };
    let mut lines = text.lines();
    let Some(shebang) = lines.next().and_then(|l| l.strip_prefix("#!")) else {
        return Vec::new();
    };
    let mut words = shebang.split_whitespace();
    let first = words.next().unwrap_or("");
    let interpreter = if first.ends_with("/env") {
        words.next().unwrap_or("")
    } else {
        first
    };
    let base = interpreter.rsplit('/').next().unwrap_or("");
    if !base.starts_with("python") {
        return Vec::new();
    }
    let Some(module) = text.lines().find_map(import_line) else {
        return Vec::new();
    };
    // Prefixes: the interpreter's (when given as a path) and the wrapper's own.
    let mut prefixes: Vec<PathBuf> = Vec::new();
    if interpreter.starts_with('/')
        && let Some(p) = Path::new(interpreter).parent().and_then(Path::parent)
    {
        prefixes.push(p.to_path_buf());
    }
    if let Some(p) = canonical.parent().and_then(Path::parent)
        && !prefixes.iter().any(|q| q == p)
    {
        prefixes.push(p.to_path_buf());
    }
    let parts: Vec<&str> = module.split('.').collect();
    let rel = parts.join("/");
    let mut out = Vec::new();
    for prefix in &prefixes {
        for site in site_dirs(prefix) {
            for candidate in [
                site.join(format!("{rel}.py")),
                site.join(&rel).join("__init__.py"),
                site.join(parts[0]).join("__main__.py"),
            ] {
                if out.len() >= MAX_TARGETS {
                    return out;
                }
                if candidate.is_file() && !out.contains(&candidate) {
                    out.push(candidate);
                }
            }
        }
    }
    out
}

/// `from a.b import c` → `a.b`; `import a.b` → `a.b`.
fn import_line(line: &str) -> Option<&str> {
    let line = line.trim();
    let module = if let Some(rest) = line.strip_prefix("from ") {
        let (m, tail) = rest.split_once(' ')?;
        tail.trim_start().starts_with("import ").then_some(m)?
    } else {
        line.strip_prefix("import ")?.split([' ', ',']).next()?
    };
    let ok = !module.is_empty()
        && module
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && !module.starts_with('.')
        && !module.contains("..");
    // `import sys`, `import re`: the standard library is no launcher target.
    (ok && !matches!(module, "sys" | "re" | "os")).then_some(module)
}

/// `<prefix>/lib/python*/{site,dist}-packages`, sorted.
fn site_dirs(prefix: &Path) -> Vec<PathBuf> {
    let lib = prefix.join("lib");
    let Ok(rd) = std::fs::read_dir(&lib) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("python"))
        .flat_map(|e| {
            let p = e.path();
            [p.join("site-packages"), p.join("dist-packages")]
        })
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn import_lines() {
        assert_eq!(
            import_line("from mytool.cli import main"),
            Some("mytool.cli")
        );
        assert_eq!(
            import_line("import mytool.__main__"),
            Some("mytool.__main__")
        );
        assert_eq!(import_line("import sys"), None);
        assert_eq!(import_line("from ..x import y"), None);
        assert_eq!(import_line("from a/b import c"), None);
        assert_eq!(import_line("print('x')"), None);
    }

    #[test]
    fn console_script_wrappers_lead_to_their_module() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let site = venv.join("lib/python3.11/site-packages/mytool");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(site.join("cli.py"), "def main(): pass").unwrap();
        let wrapper = format!(
            "#!{}/bin/python\nimport re\nimport sys\nfrom mytool.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n",
            venv.display()
        );
        let got = targets(&t.path().join("other/bin/mytool"), wrapper.as_bytes());
        assert_eq!(got, [site.join("cli.py")]);
        // Not a python wrapper, or an import of nothing installed: nothing to follow.
        assert!(
            targets(
                &venv.join("bin/x"),
                b"#!/bin/sh\nfrom mytool.cli import main\n"
            )
            .is_empty()
        );
        let missing = format!(
            "#!{}/bin/python3\nfrom other.cli import main\n",
            venv.display()
        );
        assert!(targets(&venv.join("bin/x"), missing.as_bytes()).is_empty());
    }
}
