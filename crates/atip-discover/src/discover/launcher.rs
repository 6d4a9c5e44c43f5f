//! Launchers are followed, not run: when an executable is a small wrapper that starts
//! code kept elsewhere, the files it launches are read for a sign instead.
//!
//! Followed (spec/scan.md §2 "Launchers"):
//! - **Python console scripts** as pip, pipx and uv write them: a `#!` line naming a
//!   python interpreter (or pip's `#!/bin/sh` + `'''exec' PYTHON "$0" "$@"` trampoline
//!   for long paths). Two routes, in `lib/python*/{site,dist}-packages/` under the
//!   interpreter's prefix (a venv's, for pipx and uv) and the wrapper's own prefix:
//!   the import line (`from PKG.MOD import main` → `PKG/MOD.py`), and the package's
//!   metadata — the `*.dist-info` whose `entry_points.txt` declares the wrapper's name as
//!   a console script, whose `RECORD` lists the files read (the entry module first, then
//!   the package's modules most likely to hold metadata).
//! - **npm bins**: symlinks to the JS file need no rule (it is read through the link);
//!   `#!/usr/bin/env node` stubs that `require(…)` or `import` a relative file are
//!   followed to it inside the package (the nearest directory holding `package.json`).
//! - **Shell scripts that `exec` another file of their package**: absolute paths and
//!   paths built from the script's own directory (`$(dirname "$0")`, `${0%/*}`, or a
//!   variable set from them, `/..` steps included), inside the wrapper's prefix (the
//!   directory above its `bin`).
//!
//! The launched files together show a sign when one of them does, or when one holds
//! the flag and another the key (a CLI module and a metadata module).
//!
//! Bounded: only wrappers of at most [`WRAPPER_MAX`] bytes, at most [`MAX_TARGETS`]
//! files read per wrapper, never a file outside the package's prefix. Reads only.

use super::sign::{self, Halves, Sign};
use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The largest file treated as a wrapper.
pub const WRAPPER_MAX: u64 = 8 << 10;

/// Files read at most per wrapper.
pub const MAX_TARGETS: usize = 6;

/// Largest `entry_points.txt` or `RECORD` read.
const PACKAGE_FILE_MAX: u64 = 1 << 20;

/// Console-script name → its entry points, of one site dir.
type Scripts = HashMap<String, Vec<EntryPoint>>;

/// A console script's entry point (`name = module:attr` in `entry_points.txt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryPoint {
    /// The module imported (`pkg.cli`).
    pub module: String,
    /// The object called (`main`, `app`); empty when the entry names a module only.
    pub attr: String,
    /// The package's `*.dist-info` directory.
    pub dist: PathBuf,
}

/// Follows launchers during one scan; remembers each site directory's console scripts
/// so that a PATH of many Python wrappers lists each `site-packages` once.
#[derive(Default)]
pub struct Follower {
    sites: Mutex<HashMap<PathBuf, Arc<Scripts>>>,
    /// The scanned PATH's directories, in order: where `#!/usr/bin/env python3` finds
    /// its interpreter.
    path: Vec<PathBuf>,
}

/// What a wrapper's `#!` line (or pip's trampoline) says it runs.
#[derive(Debug, PartialEq, Eq)]
enum Kind<'a> {
    /// A python interpreter: its path (or bare name under `env`).
    Python(&'a str),
    /// node.
    Node,
    /// A POSIX-style shell.
    Shell,
}

impl Follower {
    /// A follower with nothing remembered.
    pub fn new() -> Follower {
        Follower::default()
    }

    /// A follower that resolves interpreters named through `env` in `path` (the PATH
    /// the scanned tools run with), as `env` would: the first directory holding an
    /// executable file of that name.
    pub fn with_path(path: Vec<PathBuf>) -> Follower {
        Follower {
            path,
            ..Follower::default()
        }
    }

    /// Where `env` would find `name` on the scanned PATH (a bare name; `None` when no
    /// directory holds an executable file of that name). Stats only, never runs it.
    fn on_path(&self, name: &str) -> Option<PathBuf> {
        use std::os::unix::fs::PermissionsExt;
        if name.is_empty() || name.contains('/') {
            return None;
        }
        self.path.iter().map(|d| d.join(name)).find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    }

    /// [`Sign::Launcher`] when `canonical` is a wrapper whose launched files show a sign.
    #[cfg(test)]
    pub(crate) fn follow(&self, canonical: &Path) -> Sign {
        match read_wrapper(canonical) {
            Some(head) => self.follow_bytes(canonical, &head),
            None => Sign::None,
        }
    }

    /// [`Self::follow`] for a wrapper already read ([`read_wrapper`]).
    pub(crate) fn follow_bytes(&self, canonical: &Path, head: &[u8]) -> Sign {
        let mut halves = Halves::default();
        for t in self.targets(canonical, head) {
            match sign::evidence(&t) {
                Ok((s, _)) if s.shown() => return Sign::Launcher,
                Ok((_, h)) => halves = halves.with(h),
                Err(_) => {}
            }
        }
        if halves.whole() {
            Sign::Launcher
        } else {
            Sign::None
        }
    }

    /// The files a wrapper launches, if it is a launcher atip knows; `head` is the whole
    /// wrapper (at most [`WRAPPER_MAX`] bytes), `canonical` its resolved path.
    pub(crate) fn targets(&self, canonical: &Path, head: &[u8]) -> Vec<PathBuf> {
        let Ok(text) = std::str::from_utf8(head) else {
            return Vec::new();
        };
        let mut out = match kind(text) {
            Some(Kind::Python(interp)) => self.python(canonical, text, interp),
            Some(Kind::Node) => node(canonical, text),
            Some(Kind::Shell) => shell(canonical, text),
            None => Vec::new(),
        };
        out.retain(|p| p != canonical);
        out.truncate(MAX_TARGETS);
        out
    }

    /// A Python console-script wrapper's interpreter, as the wrapper runs it, and the
    /// entry points its package metadata declares for the wrapper's file name. The
    /// interpreter is named by path (`#!` line or pip's trampoline), or found on the
    /// scanned PATH when the wrapper starts it through `env`. An
    /// interpreter found through `env` is taken only where it can be the package's:
    /// the entry points come from its own prefix's site directories, or from the
    /// wrapper's prefix in a `lib/pythonX.Y` of the interpreter's own version (read from
    /// the file name the interpreter's path resolves to, e.g. `python3` →
    /// `python3.11`). `None` when `head` is not a Python wrapper or its `env`
    /// interpreter is not on the PATH.
    pub(crate) fn app_entry_points(
        &self,
        canonical: &Path,
        head: &[u8],
    ) -> Option<(PathBuf, Vec<EntryPoint>)> {
        let text = std::str::from_utf8(head).ok()?;
        let Some(Kind::Python(named)) = kind(text) else {
            return None;
        };
        let name = canonical.file_name()?.to_str()?;
        let declared = |sites: Vec<PathBuf>| -> Vec<EntryPoint> {
            sites
                .iter()
                .flat_map(|site| self.scripts(site).get(name).cloned().unwrap_or_default())
                .collect()
        };
        if named.starts_with('/') {
            return Some((
                PathBuf::from(named),
                declared(python_sites(canonical, named)),
            ));
        }
        let interpreter = self.on_path(named)?;
        let version = std::fs::canonicalize(&interpreter).ok().and_then(|p| {
            let base = p.file_name()?.to_str()?.to_owned();
            let v = base.strip_prefix("python")?;
            (v.contains('.') && v.bytes().all(|b| b.is_ascii_digit() || b == b'.')).then_some(base)
        });
        let prefix_sites = |p: &Path| p.parent().and_then(Path::parent).map(site_dirs);
        let mut sites = prefix_sites(&interpreter).unwrap_or_default();
        for site in prefix_sites(canonical).unwrap_or_default() {
            let site_version = site
                .parent()
                .and_then(Path::file_name)
                .and_then(|v| v.to_str());
            // `lib/python3` (Debian's version-independent dir) fits any python3.
            let fits = version.is_none()
                || site_version.is_some_and(|v| !v.contains('.') || Some(v) == version.as_deref());
            if fits && !sites.contains(&site) {
                sites.push(site);
            }
        }
        Some((interpreter, declared(sites)))
    }

    /// A Python wrapper's module files: the import line's, then the entry point's and its
    /// package's from `entry_points.txt` + `RECORD`.
    fn python(&self, canonical: &Path, text: &str, interpreter: &str) -> Vec<PathBuf> {
        let sites = python_sites(canonical, interpreter);
        let mut out: Vec<PathBuf> = Vec::new();
        let push = |out: &mut Vec<PathBuf>, p: PathBuf| {
            if out.len() < MAX_TARGETS && !out.contains(&p) {
                out.push(p);
            }
        };
        if let Some(module) = text.lines().find_map(import_line) {
            for site in &sites {
                for f in module_files(site, module) {
                    push(&mut out, f);
                }
            }
        }
        let Some(name) = canonical.file_name().and_then(|n| n.to_str()) else {
            return out;
        };
        for site in &sites {
            let scripts = self.scripts(site);
            for ep in scripts.get(name).into_iter().flatten() {
                for f in package_files(site, &ep.dist, &ep.module) {
                    push(&mut out, f);
                }
            }
        }
        out
    }

    /// The console scripts declared in `site`'s `*.dist-info/entry_points.txt`.
    fn scripts(&self, site: &Path) -> Arc<Scripts> {
        let mut sites = self.sites.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = sites.get(site) {
            return s.clone();
        }
        let mut scripts = Scripts::new();
        if let Ok(rd) = std::fs::read_dir(site) {
            for e in rd.flatten() {
                if !e.file_name().to_string_lossy().ends_with(".dist-info") {
                    continue;
                }
                let dist = e.path();
                let Some(text) = read_small(&dist.join("entry_points.txt")) else {
                    continue;
                };
                for (script, module, attr) in console_scripts(&text) {
                    scripts
                        .entry(script.to_owned())
                        .or_default()
                        .push(EntryPoint {
                            module: module.to_owned(),
                            attr: attr.to_owned(),
                            dist: dist.clone(),
                        });
                }
            }
        }
        let scripts = Arc::new(scripts);
        sites.insert(site.to_owned(), scripts.clone());
        scripts
    }
}

/// The whole file when it is small enough to be a wrapper ([`WRAPPER_MAX`]).
pub(crate) fn read_wrapper(canonical: &Path) -> Option<Vec<u8>> {
    let small = std::fs::metadata(canonical).is_ok_and(|m| m.len() <= WRAPPER_MAX);
    small.then(|| std::fs::read(canonical).ok()).flatten()
}

/// The site directories a Python wrapper's code may live in: under the interpreter's
/// prefix (when given as a path: a venv's) and the wrapper's own prefix.
fn python_sites(canonical: &Path, interpreter: &str) -> Vec<PathBuf> {
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
    prefixes.iter().flat_map(|p| site_dirs(p)).collect()
}

/// The launcher kind of a script, from its `#!` line (and pip's `/bin/sh` trampoline).
fn kind(text: &str) -> Option<Kind<'_>> {
    let mut lines = text.lines();
    let shebang = lines.next()?.strip_prefix("#!")?;
    let mut words = shebang.split_whitespace();
    let first = words.next().unwrap_or("");
    let interpreter = if first.ends_with("/env") {
        words
            .find(|w| !w.starts_with('-') && !w.contains('='))
            .unwrap_or("")
    } else {
        first
    };
    let base = interpreter.rsplit('/').next().unwrap_or("");
    if base.starts_with("python") {
        return Some(Kind::Python(interpreter));
    }
    if base == "node" || base == "nodejs" {
        return Some(Kind::Node);
    }
    if matches!(base, "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh") {
        // pip, for an interpreter path too long for `#!`:
        //   #!/bin/sh
        //   '''exec' "/very/long/venv/bin/python" "$0" "$@"
        if let Some(rest) = lines.next().and_then(|l| l.strip_prefix("'''exec' "))
            && let Some(py) = rest.split_whitespace().next().map(|w| w.trim_matches('"'))
            && py
                .rsplit('/')
                .next()
                .is_some_and(|b| b.starts_with("python"))
        {
            return Some(Kind::Python(py));
        }
        return Some(Kind::Shell);
    }
    None
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
    // `import sys`, `import re`: the standard library is no launcher target.
    (module_name_ok(module) && !matches!(module, "sys" | "re" | "os")).then_some(module)
}

fn module_name_ok(module: &str) -> bool {
    !module.is_empty()
        && module
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
        && !module.starts_with('.')
        && !module.contains("..")
}

/// The files of `module` in `site`: `a/b.py`, `a/b/__init__.py`, `a/__main__.py`.
fn module_files(site: &Path, module: &str) -> Vec<PathBuf> {
    let parts: Vec<&str> = module.split('.').collect();
    let rel = parts.join("/");
    [
        site.join(format!("{rel}.py")),
        site.join(&rel).join("__init__.py"),
        site.join(parts[0]).join("__main__.py"),
    ]
    .into_iter()
    .filter(|p| p.is_file())
    .collect()
}

/// `[console_scripts]` and `[gui_scripts]` entries of an `entry_points.txt`:
/// `name = module.path:attr [extras]` → (name, module.path, attr).
fn console_scripts(text: &str) -> Vec<(&str, &str, &str)> {
    let mut out = Vec::new();
    let mut in_scripts = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_scripts = matches!(line, "[console_scripts]" | "[gui_scripts]");
            continue;
        }
        if !in_scripts || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((name, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.split('[').next().unwrap_or("");
        let (module, attr) = value.split_once(':').unwrap_or((value, ""));
        let (module, attr) = (module.trim(), attr.trim());
        let name = name.trim();
        if !name.is_empty() && module_name_ok(module) {
            out.push((name, module, attr));
        }
    }
    out
}

/// The files of a console script's package, from its `RECORD`: the entry module's files
/// first, then the top-level package's other modules whose names suggest metadata or a
/// command line (`atip`, `agent`, `meta`, `cli`, `main`), then the rest in `RECORD`
/// order. Only paths inside `site` (no `..`, no absolute path, no symlink out). Without
/// a `RECORD`, only the entry module's files.
fn package_files(site: &Path, dist: &Path, module: &str) -> Vec<PathBuf> {
    let entry = module_files(site, module);
    let Some(record) = read_small(&dist.join("RECORD")) else {
        return entry;
    };
    let Ok(site_canon) = site.canonicalize() else {
        return Vec::new();
    };
    let top = module.split('.').next().unwrap_or(module);
    let mut listed: Vec<&str> = Vec::new();
    for line in record.lines() {
        // `path,hash,size`; a path holding a comma is quoted (csv) — such files are skipped.
        let path = line.split(',').next().unwrap_or("");
        if path.ends_with(".py")
            && !path.starts_with('"')
            && Path::new(path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)))
        {
            listed.push(path);
        }
    }
    let inside = |rel: &str| -> Option<PathBuf> {
        let p = site.join(rel);
        let c = p.canonicalize().ok()?;
        (c.starts_with(&site_canon) && c.is_file()).then_some(p)
    };
    let mut out: Vec<PathBuf> = entry
        .into_iter()
        .filter(|p| {
            p.strip_prefix(site)
                .ok()
                .and_then(|r| r.to_str())
                .is_some_and(|r| listed.contains(&r))
        })
        .collect();
    let in_package = |p: &&str| p.split('/').next() == Some(top) || *p == format!("{top}.py");
    let hinted = |p: &&str| {
        let stem = p.rsplit('/').next().unwrap_or(p);
        ["atip", "agent", "meta", "cli", "main"]
            .iter()
            .any(|h| stem.contains(h))
    };
    let mut rest: Vec<&str> = listed.iter().copied().filter(in_package).collect();
    rest.sort_by_key(|p| !hinted(p));
    for rel in rest {
        if out.len() >= MAX_TARGETS {
            break;
        }
        if let Some(p) = inside(rel)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// A file read whole when it is small (package metadata), else `None`.
fn read_small(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    if !m.is_file() || m.len() > PACKAGE_FILE_MAX {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// `<prefix>/lib/python*/{site,dist}-packages` and Debian's `<prefix>/lib/python3/…`,
/// sorted.
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

/// The package root of a node stub: the nearest directory above it (at most 4 levels)
/// holding `package.json`.
fn node_package_root(canonical: &Path) -> Option<PathBuf> {
    canonical
        .ancestors()
        .skip(1)
        .take(4)
        .find(|d| d.join("package.json").is_file())
        .map(Path::to_path_buf)
}

/// Relative module specifiers a node stub loads: `require('./x')`, `import('./x')`,
/// `import './x'`, `import … from './x'`.
fn node_specifiers(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("//") {
            continue;
        }
        for pat in ["require(", "import(", "import ", "from "] {
            let mut rest = line;
            while let Some(i) = rest.find(pat) {
                let after = rest[i + pat.len()..].trim_start();
                rest = &rest[i + pat.len()..];
                let Some(q) = after
                    .chars()
                    .next()
                    .filter(|c| matches!(c, '\'' | '"' | '`'))
                else {
                    continue;
                };
                let Some(end) = after[1..].find(q) else {
                    continue;
                };
                let spec = &after[1..1 + end];
                if (spec.starts_with("./") || spec.starts_with("../")) && !out.contains(&spec) {
                    out.push(spec);
                }
            }
        }
    }
    out
}

/// A node stub's loaded files, inside its package.
fn node(canonical: &Path, text: &str) -> Vec<PathBuf> {
    let Some(root) = node_package_root(canonical) else {
        return Vec::new();
    };
    let Ok(root_canon) = root.canonicalize() else {
        return Vec::new();
    };
    let dir = canonical.parent().unwrap_or(&root);
    let mut out = Vec::new();
    for spec in node_specifiers(text) {
        let base = dir.join(spec);
        let candidates = [
            base.clone(),
            PathBuf::from(format!("{}.js", base.display())),
            PathBuf::from(format!("{}.cjs", base.display())),
            PathBuf::from(format!("{}.mjs", base.display())),
            base.join("index.js"),
        ];
        if let Some(found) = candidates
            .into_iter()
            .find(|c| c.is_file() && c.canonicalize().is_ok_and(|cc| cc.starts_with(&root_canon)))
        {
            let found = lexical(&found);
            if !out.contains(&found) {
                out.push(found);
            }
        }
    }
    out
}

/// Shell words of a line up to an unquoted `;`, with their quote characters removed (no
/// expansion): quotes and `$( … )` nest, so `"$(dirname "$0")/x"` is one word.
fn words_of(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let (mut dq, mut sq, mut depth) = (false, false, 0usize);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' if !dq => sq = !sq,
            '"' if !sq => dq = !dq,
            '$' if !sq && chars.peek() == Some(&'(') => {
                depth += 1;
                word.push(c);
            }
            ')' if depth > 0 => {
                depth -= 1;
                word.push(c);
            }
            c if (c.is_whitespace() || c == ';') && !dq && !sq && depth == 0 => {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                if c == ';' {
                    return out;
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// The script's own directory written as the shell computes it, with the number of
/// `/..` steps that follow: `$(dirname "$0")`, `` `dirname $0` ``, `${0%/*}`,
/// `$(cd "$(dirname "$0")/.." && pwd)`, `${BASH_SOURCE[0]%/*}`.
fn dir_expression(value: &str) -> Option<usize> {
    let own = value.contains("dirname") && (value.contains("$0") || value.contains("BASH_SOURCE"))
        || value.contains("${0%/*}")
        || value.contains("${BASH_SOURCE[0]%/*}")
        || value.contains("${BASH_SOURCE%/*}");
    own.then(|| value.matches("/..").count())
}

/// Replaces the script-directory forms and the variables set from them in `word`; `None`
/// if anything else remains to expand.
fn expand(word: &str, vars: &HashMap<&str, PathBuf>, dir: &Path) -> Option<PathBuf> {
    let mut w = word.to_owned();
    for form in [
        "$(dirname \"$0\")",
        "$(dirname $0)",
        "$(dirname -- \"$0\")",
        "`dirname $0`",
        "`dirname \"$0\"`",
        "${0%/*}",
        "${BASH_SOURCE[0]%/*}",
        "${BASH_SOURCE%/*}",
    ] {
        w = w.replace(form, &dir.to_string_lossy());
    }
    for (name, value) in vars {
        for form in [format!("${{{name}}}"), format!("${name}")] {
            if let Some(rest) = w.strip_prefix(form.as_str())
                && !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            {
                w = format!("{}{rest}", value.to_string_lossy());
            }
        }
    }
    if w.contains('$') || w.contains('`') || !w.starts_with('/') {
        return None;
    }
    // `..` steps resolved lexically, as the shell's `cd dir/..` does.
    Some(lexical(Path::new(&w)))
}

/// `path` with `.` and `..` steps resolved without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut p = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                p.pop();
            }
            Component::CurDir => {}
            c => p.push(c),
        }
    }
    p
}

/// Commands that run a script given as an argument: `exec python3 "$DIR/x.py"` follows
/// `x.py`, not the interpreter.
const INTERPRETERS: [&str; 10] = [
    "sh", "bash", "dash", "env", "node", "nodejs", "perl", "ruby", "java", "python3",
];

/// The files a shell script `exec`s, inside the wrapper's prefix.
fn shell(canonical: &Path, text: &str) -> Vec<PathBuf> {
    let Some(dir) = canonical.parent() else {
        return Vec::new();
    };
    let Some(prefix) = dir.parent().and_then(|p| p.canonicalize().ok()) else {
        return Vec::new();
    };
    let mut vars: HashMap<&str, PathBuf> = HashMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        // NAME=<the script's directory …>
        if let Some((name, value)) = line.split_once('=')
            && !name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && let Some(ups) = dir_expression(value)
        {
            let mut d = dir.to_path_buf();
            for _ in 0..ups {
                d.pop();
            }
            vars.insert(name, d);
            continue;
        }
        let Some(i) = line.find("exec ") else {
            continue;
        };
        let before = line[..i].trim_end();
        if !(before.is_empty()
            || before.ends_with(';')
            || before.ends_with("&&")
            || before.ends_with("then")
            || before.ends_with("else")
            || before.ends_with(')'))
        {
            continue;
        }
        let words = words_of(&line[i + 5..]);
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        // exec's own options: `exec -a NAME cmd`, `exec -c`, `exec -l`.
        let mut k = 0;
        while k < words.len() && words[k].starts_with('-') {
            k += if words[k] == "-a" { 2 } else { 1 };
        }
        for w in words.iter().skip(k) {
            if w.starts_with('-') {
                continue;
            }
            let Some(p) = expand(w, &vars, dir) else {
                continue;
            };
            let base = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if INTERPRETERS.contains(&base) || base.starts_with("python") {
                continue;
            }
            if p.is_file()
                && p.canonicalize().is_ok_and(|c| c.starts_with(&prefix))
                && !out.contains(&p)
            {
                out.push(p);
            }
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

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
    fn kinds_from_the_shebang() {
        assert_eq!(
            kind("#!/v/bin/python3\n"),
            Some(Kind::Python("/v/bin/python3"))
        );
        assert_eq!(
            kind("#!/usr/bin/env -S python3 -u\n"),
            Some(Kind::Python("python3"))
        );
        assert_eq!(kind("#!/usr/bin/env node\n"), Some(Kind::Node));
        assert_eq!(kind("#!/bin/bash\nexec x\n"), Some(Kind::Shell));
        assert_eq!(
            kind("#!/bin/sh\n'''exec' \"/long/venv/bin/python\" \"$0\" \"$@\"\n' '''\n"),
            Some(Kind::Python("/long/venv/bin/python"))
        );
        assert_eq!(kind("#!/usr/bin/perl\n"), None);
        assert_eq!(kind("\x7fELF"), None);
    }

    #[test]
    fn console_script_wrappers_lead_to_their_module() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let site = venv.join("lib/python3.11/site-packages/mytool");
        write(&site.join("cli.py"), "def main(): pass");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        let wrapper = format!(
            "#!{}/bin/python\nimport re\nimport sys\nfrom mytool.cli import main\nif __name__ == '__main__':\n    sys.exit(main())\n",
            venv.display()
        );
        let f = Follower::new();
        let got = f.targets(&t.path().join("other/bin/mytool"), wrapper.as_bytes());
        assert_eq!(got, [site.join("cli.py")]);
        // Not a python wrapper, or an import of nothing installed: nothing to follow.
        assert!(
            f.targets(
                &venv.join("bin/x"),
                b"#!/bin/sh\nfrom mytool.cli import main\n"
            )
            .is_empty()
        );
        let missing = format!(
            "#!{}/bin/python3\nfrom other.cli import main\n",
            venv.display()
        );
        assert!(
            f.targets(&venv.join("bin/x"), missing.as_bytes())
                .is_empty()
        );
    }

    #[test]
    fn entry_points_and_record_name_the_package_files() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let site = venv.join("lib/python3.11/site-packages");
        write(&site.join("pkg/__init__.py"), "");
        write(&site.join("pkg/commands.py"), "def run(): pass");
        write(&site.join("pkg/agent_meta.py"), "M = dict(atip=1)");
        write(&site.join("pkg/zzz.py"), "");
        write(&site.join("unlisted/x.py"), "");
        write(&t.path().join("outside.py"), "--agent atip=1");
        write(
            &site.join("pkg-1.0.dist-info/entry_points.txt"),
            "[console_scripts]\ntool = pkg.commands:run\n\n[other]\nx = y:z\n",
        );
        write(
            &site.join("pkg-1.0.dist-info/RECORD"),
            "../../../bin/tool,sha256=x,10\npkg/__init__.py,,\npkg/commands.py,,\npkg/zzz.py,,\npkg/agent_meta.py,,\n../../../../outside.py,,\n/etc/passwd.py,,\n",
        );
        // pip's trampoline, no import line: the entry point alone leads to the package.
        let wrapper = format!(
            "#!/bin/sh\n'''exec' \"{}/bin/python\" \"$0\" \"$@\"\n' '''\nimport sys\nsys.exit(0)\n",
            venv.display()
        );
        let got = Follower::new().targets(&venv.join("bin/tool"), wrapper.as_bytes());
        assert_eq!(
            got,
            [
                site.join("pkg/commands.py"),
                site.join("pkg/agent_meta.py"),
                site.join("pkg/__init__.py"),
                site.join("pkg/zzz.py"),
            ]
        );
        // Another name: no entry point, nothing.
        assert!(
            Follower::new()
                .targets(&venv.join("bin/other"), wrapper.as_bytes())
                .is_empty()
        );
    }

    #[test]
    fn the_flag_and_the_key_in_two_modules_of_one_package_are_a_sign() {
        let t = tempfile::tempdir().unwrap();
        let venv = t.path().join("venv");
        let site = venv.join("lib/python3.11/site-packages");
        write(
            &site.join("pkg/cli.py"),
            "import sys\nfrom pkg.meta import M\nif '--agent' in sys.argv: print(M)\n",
        );
        write(
            &site.join("pkg/meta.py"),
            "M = dict(atip=dict(version='0.6'))\n",
        );
        write(
            &site.join("pkg-1.0.dist-info/entry_points.txt"),
            "[console_scripts]\ntool = pkg.cli:main\n",
        );
        write(
            &site.join("pkg-1.0.dist-info/RECORD"),
            "pkg/cli.py,,\npkg/meta.py,,\n",
        );
        let wrapper = venv.join("bin/tool");
        write(
            &wrapper,
            &format!(
                "#!{}/bin/python\nfrom pkg.cli import main\n",
                venv.display()
            ),
        );
        assert_eq!(Follower::new().follow(&wrapper), Sign::Launcher);
        // Without the metadata module, the flag alone is no sign.
        std::fs::write(site.join("pkg/meta.py"), "M = {}\n").unwrap();
        assert_eq!(Follower::new().follow(&wrapper), Sign::None);
    }

    #[test]
    fn node_stubs_lead_to_the_file_they_load_inside_their_package() {
        let t = tempfile::tempdir().unwrap();
        let pkg = t.path().join("lib/node_modules/tool");
        write(&pkg.join("package.json"), "{}");
        write(&pkg.join("dist/main.js"), "");
        write(&pkg.join("lib/index.js"), "");
        write(&t.path().join("lib/node_modules/evil.js"), "");
        let stub = pkg.join("bin/tool.js");
        write(&stub, "");
        let text = "#!/usr/bin/env node\n// require('./nope')\n'use strict';\nrequire('../dist/main.js');\nimport('../lib').then(() => 0);\nrequire('../../evil');\nrequire('fs');\n";
        assert_eq!(
            node(&stub, text),
            [pkg.join("dist/main.js"), pkg.join("lib/index.js")]
        );
        assert_eq!(
            node_specifiers("import { run } from \"../dist/cli.mjs\";\nimport './side.js';"),
            ["../dist/cli.mjs", "./side.js"]
        );
        // No package.json above: not an npm package, nothing followed.
        let loose = t.path().join("loose/bin/x.js");
        write(&loose, "");
        write(&t.path().join("loose/dist/main.js"), "");
        assert!(node(&loose, "require('../dist/main.js')").is_empty());
    }

    #[test]
    fn shell_scripts_lead_to_the_file_they_exec_inside_their_prefix() {
        let t = tempfile::tempdir().unwrap();
        let pre = t.path().join("opt/pkg");
        write(&pre.join("libexec/real"), "");
        write(&pre.join("lib/tool.py"), "");
        write(&t.path().join("elsewhere/real"), "");
        let script = pre.join("bin/tool");
        let cases = [
            "#!/bin/sh\nHERE=$(cd \"$(dirname \"$0\")/..\" && pwd)\nexec \"$HERE/libexec/real\" \"$@\"\n",
            "#!/bin/sh\nexec \"$(dirname \"$0\")/../libexec/real\" \"$@\"\n",
            "#!/bin/bash\n[ -n \"$X\" ] && exec -a tool \"${0%/*}/../libexec/real\" \"$@\"\n",
            &format!("#!/bin/sh\nexec {}/libexec/real \"$@\"\n", pre.display()),
        ];
        for c in cases {
            assert_eq!(shell(&script, c), [pre.join("libexec/real")], "{c}");
        }
        // An interpreter running a file of the package: the file.
        assert_eq!(
            shell(
                &script,
                "#!/bin/sh\nD=`dirname $0`\nexec python3 -u \"$D/../lib/tool.py\" \"$@\"\n"
            ),
            [pre.join("lib/tool.py")]
        );
        // Outside the prefix, unknown variables, or not an exec: nothing.
        for c in [
            format!("#!/bin/sh\nexec {}/elsewhere/real\n", t.path().display()),
            "#!/bin/sh\nexec \"$PREFIX/libexec/real\"\n".to_owned(),
            "#!/bin/sh\necho exec \"${0%/*}/../libexec/real\"\n".to_owned(),
            "#!/bin/sh\nexec \"${0%/*}/../../../elsewhere/real\"\n".to_owned(),
        ] {
            assert!(shell(&script, &c).is_empty(), "{c}");
        }
    }
}
