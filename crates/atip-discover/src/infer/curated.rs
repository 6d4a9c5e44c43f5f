//! Curated effects: atip's reviewed table of what common programs do (`effects.json`
//! beside this file, built into the binary), applied over a document inferred from a
//! man page. The page gives the interface (commands, options, arguments); the table gives
//! the effects of each command and the options that change them (spec/infer.md,
//! "Curated effects"). A program the table does not name keeps unknown effects.
//!
//! A table condition names option flags; it applies only to options of the inferred page
//! that spell one of them. When the page documents none of a condition's flags, the page
//! and the table disagree about the program, so the command gets the worst case of its
//! effects and every condition, and the document says why (`x-inferred.effectsWarnings`).

use crate::model::Effects;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The table's bytes, as shipped.
pub const TABLE: &str = include_str!("effects.json");

/// The table's format version this code reads.
const FORMAT: u32 = 1;

/// `effects.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    format: u32,
    #[allow(dead_code)] // documentation for readers of the file
    about: String,
    /// Named effects an entry or condition refers to with `is`.
    pub classes: BTreeMap<String, Class>,
    /// Program name → its entry.
    pub programs: BTreeMap<String, Program>,
}

/// A named set of effects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Class {
    /// What the class means, in words.
    pub why: String,
    /// The effects (the command-level shape of the protocol).
    pub effects: Effects,
    /// The command runs a program its arguments name (`x-atip-runner`).
    #[serde(default)]
    pub runner: bool,
}

/// One program's entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// The Debian package it was checked in.
    pub pkg: String,
    /// The class of its commands (of those `commands` does not name).
    pub is: String,
    /// What it does, in words: the reason for the class.
    pub why: String,
    /// Options that change a call's effects.
    #[serde(default)]
    pub when: Vec<Condition>,
    /// Subcommand name → its class, where it differs from `is`.
    #[serde(default)]
    pub commands: BTreeMap<String, String>,
}

/// Options that change the effects of a call that gives one of them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Condition {
    /// The flags (every spelling the page uses).
    pub flags: Vec<String>,
    /// The call then has this class's effects.
    #[serde(default)]
    pub is: Option<String>,
    /// The option's value names a file the program writes (`x-atip-writes: path`).
    #[serde(default)]
    pub writes: bool,
    /// The option makes the call run a program (`x-atip-runner`).
    #[serde(default)]
    pub runner: bool,
}

/// The shipped table, parsed once. Its validity is a unit test's job
/// ([`Table::problems`]); a table that does not parse is a build defect.
pub fn table() -> &'static Table {
    static T: OnceLock<Table> = OnceLock::new();
    T.get_or_init(|| {
        serde_json::from_str(TABLE).expect("crates/atip-discover/src/infer/effects.json parses")
    })
}

/// The sha256 hex of [`TABLE`], computed by build.rs: every scan compares the digest,
/// and hashing the table at run time was a cost of every warm rescan.
const TABLE_SHA256: &str = include!(concat!(env!("OUT_DIR"), "/effects_digest.rs"));

/// A short digest of the shipped table: documents inferred with another table are
/// inferred again (the inference cache records it).
pub fn digest() -> &'static str {
    &TABLE_SHA256[..16]
}

/// Whether `flag` is an option form: one or two dashes, then a letter, digit or `?`,
/// then letters, digits and `-_.+#`.
fn option_form(flag: &str) -> bool {
    let body = flag
        .strip_prefix("--")
        .or_else(|| flag.strip_prefix('-'))
        .unwrap_or("");
    let mut chars = body.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric() || c == '?')
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_.+#".contains(c))
}

impl Table {
    /// Everything wrong with the table, each naming where: format, unknown keys in an
    /// effects object, classes that do not exist, conditions that state nothing or more
    /// than one thing, flags that are not option forms.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.format != FORMAT {
            out.push(format!("format is {}, expected {FORMAT}", self.format));
        }
        for (name, c) in &self.classes {
            let e = &c.effects;
            let fs_extra = e.filesystem.as_ref().is_some_and(|f| !f.extra.is_empty());
            if !e.extra.is_empty() || fs_extra {
                out.push(format!(
                    "classes.{name}.effects has keys atip does not know"
                ));
            }
            if c.why.trim().is_empty() {
                out.push(format!("classes.{name}.why is empty"));
            }
        }
        let known = |class: &str| self.classes.contains_key(class);
        for (name, p) in &self.programs {
            let at = format!("programs.{name}");
            if !crate::registry::is_valid_name(name) {
                out.push(format!("{at}: not a name the registry can hold"));
            }
            if !known(&p.is) {
                out.push(format!("{at}.is: no class {:?}", p.is));
            }
            if p.why.trim().is_empty() || p.pkg.trim().is_empty() {
                out.push(format!("{at}: why and pkg must be stated"));
            }
            for (cmd, class) in &p.commands {
                if !known(class) {
                    out.push(format!("{at}.commands.{cmd}: no class {class:?}"));
                }
            }
            for (i, c) in p.when.iter().enumerate() {
                let at = format!("{at}.when[{i}]");
                let stated =
                    usize::from(c.is.is_some()) + usize::from(c.writes) + usize::from(c.runner);
                if stated != 1 {
                    out.push(format!(
                        "{at}: states {stated} of is, writes, runner (exactly one)"
                    ));
                }
                if let Some(class) = &c.is
                    && !known(class)
                {
                    out.push(format!("{at}.is: no class {class:?}"));
                }
                if c.flags.is_empty() {
                    out.push(format!("{at}.flags is empty"));
                }
                for f in &c.flags {
                    if !option_form(f) {
                        out.push(format!("{at}.flags: {f:?} is not an option form"));
                    }
                }
            }
        }
        out
    }

    fn class(&self, name: &str) -> &Class {
        // Names are checked by `problems` (a unit test); an unknown one is a table defect.
        &self.classes[name]
    }

    /// The worst case a condition can bring, for a command whose page lacks its flags.
    fn worst(&self, c: &Condition) -> (Effects, bool) {
        if let Some(class) = &c.is {
            let k = self.class(class);
            (k.effects.clone(), k.runner)
        } else if c.writes {
            (self.class("destructive").effects.clone(), false)
        } else {
            (self.class("runner").effects.clone(), true)
        }
    }
}

/// What applying the table to one document did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Applied {
    /// Conditions that fell back to the worst case, in words.
    pub warnings: Vec<String>,
}

/// The flags of an option object.
fn flags(o: &Value) -> impl Iterator<Item = &str> {
    o.get("flags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// Annotates the options of `opts` that spell one of `c`'s flags; returns how many.
fn annotate(table: &Table, opts: Option<&mut Value>, c: &Condition) -> usize {
    let Some(Value::Array(opts)) = opts else {
        return 0;
    };
    let mut n = 0;
    for o in opts.iter_mut() {
        if !flags(o).any(|f| c.flags.iter().any(|x| x == f)) {
            continue;
        }
        n += 1;
        let boolean = o.get("type").and_then(Value::as_str) == Some("boolean");
        let Some(m) = o.as_object_mut() else { continue };
        if let Some(class) = &c.is {
            let k = table.class(class);
            m.insert(
                "x-atip-effects".into(),
                serde_json::to_value(&k.effects).unwrap_or_default(),
            );
            if k.runner {
                m.insert("x-atip-runner".into(), Value::Bool(true));
            }
        } else if c.writes && !boolean {
            m.insert("x-atip-writes".into(), json!("path"));
        } else if c.writes {
            // The page reads it as a switch: no value names the file, so the worst
            // case of writing is what the call has.
            m.insert(
                "x-atip-effects".into(),
                serde_json::to_value(&table.class("destructive").effects).unwrap_or_default(),
            );
        } else {
            m.insert("x-atip-runner".into(), Value::Bool(true));
            m.insert("x-atip-effects".into(), json!({"subprocess": true}));
        }
    }
    n
}

/// Applies the table's entry for `tool` to its inferred `doc`: every command gets its
/// class's effects, options its conditions. `None` (and `doc` untouched) when the table
/// has no entry.
pub fn apply(doc: &mut Value, tool: &str) -> Option<Applied> {
    let table = table();
    let p = table.programs.get(tool)?;
    let mut applied = Applied::default();
    let root = doc.as_object_mut()?;
    let mut globals = root.remove("globalOptions");
    let mut global_done = vec![false; p.when.len()];
    if let Some(Value::Object(cmds)) = root.get_mut("commands") {
        for (name, cmd) in cmds.iter_mut() {
            let Some(m) = cmd.as_object_mut() else {
                continue;
            };
            let class = table.class(p.commands.get(name).unwrap_or(&p.is));
            let mut worst: Vec<Effects> = Vec::new();
            let mut runner = class.runner;
            for (i, c) in p.when.iter().enumerate() {
                let own = annotate(table, m.get_mut("options"), c);
                let global = if global_done[i] {
                    1
                } else {
                    let n = annotate(table, globals.as_mut(), c);
                    global_done[i] = n > 0;
                    n
                };
                if own + global == 0 {
                    let (e, r) = table.worst(c);
                    worst.push(e);
                    runner |= r;
                    let shown = if name.is_empty() {
                        tool.to_owned()
                    } else {
                        format!("{tool} {name}")
                    };
                    applied.warnings.push(format!(
                        "{shown}: the man page documents none of {} that atip's effects table names, so the command has the worst case of its effects",
                        c.flags.join(", ")
                    ));
                }
            }
            let effects = if worst.is_empty() {
                class.effects.clone()
            } else {
                let mut all: Vec<&Effects> = vec![&class.effects];
                all.extend(worst.iter());
                Effects::default().under(&all)
            };
            m.insert(
                "effects".into(),
                serde_json::to_value(&effects).unwrap_or_default(),
            );
            if runner {
                m.insert("x-atip-runner".into(), Value::Bool(true));
            }
        }
    }
    if let Some(g) = globals {
        root.insert("globalOptions".into(), g);
    }
    let x = root
        .entry("x-inferred")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(x) = x.as_object_mut() {
        x.insert(
            "effects".into(),
            json!({"source": "curated", "table": digest(), "package": p.pkg, "why": p.why}),
        );
        if !applied.warnings.is_empty() {
            x.insert("effectsWarnings".into(), json!(applied.warnings));
        }
    }
    Some(applied)
}

/// Whether the curated table's effects may be believed for the program at `canonical`
/// (every link resolved): it and every directory above it belong to root and nobody else
/// may write to them. The table knows programs by name; any user can put a program named
/// `nl` in a directory of their own, so there the name proves nothing.
pub fn root_owned(canonical: &std::path::Path) -> bool {
    root_owned_in(canonical, None, &mut RootDirs::default())
}

/// Directories judged by [`root_owned_in`], by their path's bytes: hashing a `Path`
/// walks its components, a cost every name of a scan paid for the same few directories.
/// (Canonical paths are spelled one way; another spelling would only be judged again.)
pub type RootDirs = foldhash::HashMap<std::ffi::OsString, bool>;

/// [`root_owned`], with the verdicts on directories kept in `dirs` across calls: a scan
/// asks for ~1,000 programs in a handful of directories, and every ancestor was an
/// `lstat` of its own (4 path walks per program). `file` is the program's owner and mode
/// when the caller already has them (the scan stat'ed every executable, links followed,
/// which is the status of `canonical`): then the program itself is not stat'ed again.
pub fn root_owned_in(
    canonical: &std::path::Path,
    file: Option<(u32, u32)>,
    dirs: &mut RootDirs,
) -> bool {
    use std::os::unix::fs::MetadataExt;
    let owned = |(uid, mode): (u32, u32)| uid == 0 && mode & 0o022 == 0;
    let safe = |p: &std::path::Path| {
        std::fs::symlink_metadata(p).is_ok_and(|m| owned((m.uid(), m.mode())))
    };
    let file_safe = match file {
        Some(known) => owned(known),
        None => safe(canonical),
    };
    if !canonical.is_absolute() || !file_safe {
        return false;
    }
    let Some(parent) = canonical.parent() else {
        return true;
    };
    if let Some(known) = dirs.get(parent.as_os_str()) {
        return *known;
    }
    let verdict = parent.ancestors().all(|d| match dirs.get(d.as_os_str()) {
        Some(known) => *known,
        None => safe(d),
    });
    dirs.insert(parent.as_os_str().to_owned(), verdict);
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_table_is_valid_and_large_enough() {
        let t = table();
        assert_eq!(t.problems(), Vec::<String>::new());
        assert!(t.programs.len() >= 300, "{} programs", t.programs.len());
        for k in [
            "read",
            "read-helpers",
            "network-read",
            "write",
            "destructive",
            "delete",
            "system",
            "network-write",
            "runner",
        ] {
            assert!(t.classes.contains_key(k), "class {k}");
        }
        // Only `read`-like classes are read-only; the others are not.
        for (name, c) in &t.classes {
            let ro = c.effects.is_read_only();
            assert_eq!(ro, name.contains("read"), "class {name} read-only {ro}");
        }
    }

    #[test]
    fn the_digest_is_the_tables_sha256() {
        assert_eq!(TABLE_SHA256, crate::digest::sha256_hex(TABLE.as_bytes()));
        assert_eq!(digest().len(), 16);
    }

    #[test]
    fn problems_name_what_is_wrong() {
        let bad: Table = serde_json::from_value(json!({
            "format": 2, "about": "",
            "classes": {"read": {"why": "r", "effects": {"destructive": false, "x": 1}}},
            "programs": {
                "a b": {"pkg": "p", "is": "nope", "why": "w"},
                "ok": {"pkg": "p", "is": "read", "why": "w", "commands": {"c": "gone"},
                       "when": [{"flags": ["-o", "o", "--a b"], "is": "read", "writes": true},
                                {"flags": []}]}
            }
        }))
        .unwrap();
        let p = bad.problems().join("\n");
        for want in [
            "format is 2",
            "classes.read.effects has keys",
            "programs.a b: not a name",
            "programs.a b.is: no class \"nope\"",
            "programs.ok.commands.c: no class \"gone\"",
            "programs.ok.when[0]: states 2",
            "\"o\" is not an option form",
            "\"--a b\" is not an option form",
            "programs.ok.when[1]: states 0",
            "programs.ok.when[1].flags is empty",
        ] {
            assert!(p.contains(want), "{want} missing from:\n{p}");
        }
        // Unknown keys in an entry are refused when the table is read.
        assert!(
            serde_json::from_value::<Program>(
                json!({"pkg": "p", "is": "read", "why": "w", "effect": 1})
            )
            .is_err()
        );
    }

    fn doc(options: Value) -> Value {
        json!({"name": "t", "commands": {"": {"description": "d", "options": options}},
               "x-inferred": {"manPage": "/m"}})
    }

    #[test]
    fn conditions_land_on_the_options_that_spell_them() {
        let mut d = doc(json!([
            {"name": "output", "flags": ["-o", "--output"], "type": "file"},
            {"name": "echo", "flags": ["-e", "--echo"], "type": "boolean"}
        ]));
        let a = apply(&mut d, "shuf").unwrap();
        assert!(a.warnings.is_empty());
        let c = &d["commands"][""];
        assert_eq!(c["effects"]["destructive"], json!(false));
        assert_eq!(c["effects"]["filesystem"]["write"], json!(false));
        assert_eq!(c["options"][0]["x-atip-writes"], json!("path"));
        assert!(c["options"][1].get("x-atip-writes").is_none());
        assert_eq!(d["x-inferred"]["effects"]["source"], json!("curated"));
        assert_eq!(d["x-inferred"]["effects"]["table"], json!(digest()));
        // A name the table does not hold: untouched.
        let mut u = doc(json!([]));
        let before = u.clone();
        assert!(apply(&mut u, "no-such-program-xyz").is_none());
        assert_eq!(u, before);
    }

    #[test]
    fn a_condition_the_page_lacks_gives_the_worst_case_and_says_so() {
        // shuf's page always documents -o; one that does not disagrees with the table.
        let mut d = doc(json!([{"name": "echo", "flags": ["-e"], "type": "boolean"}]));
        let a = apply(&mut d, "shuf").unwrap();
        assert_eq!(a.warnings.len(), 1, "{a:?}");
        assert!(a.warnings[0].contains("-o, --output"), "{a:?}");
        let e: Effects = serde_json::from_value(d["commands"][""]["effects"].clone()).unwrap();
        assert!(e.possibly_destructive() && !e.is_read_only(), "{e:?}");
        assert_eq!(d["x-inferred"]["effectsWarnings"], json!(a.warnings));
        // A runner condition the page lacks makes the command a runner.
        let mut m = doc(json!([]));
        apply(&mut m, "grog").unwrap();
        assert_eq!(m["commands"][""]["x-atip-runner"], json!(true));
    }

    #[test]
    fn safer_conditions_and_commands_follow_the_table() {
        let mut d = doc(json!([
            {"name": "stdout", "flags": ["-c", "--stdout"], "type": "boolean"},
            {"name": "keep", "flags": ["-k", "--keep"], "type": "boolean"},
            {"name": "force", "flags": ["-f", "--force"], "type": "boolean"},
            {"name": "list", "flags": ["-l", "--list"], "type": "boolean"},
            {"name": "test", "flags": ["-t", "--test"], "type": "boolean"}
        ]));
        assert!(apply(&mut d, "gunzip").unwrap().warnings.is_empty());
        let c = &d["commands"][""];
        let base: Effects = serde_json::from_value(c["effects"].clone()).unwrap();
        assert!(base.deletes_files());
        let cond = |i: usize| -> Effects {
            serde_json::from_value(c["options"][i]["x-atip-effects"].clone()).unwrap()
        };
        assert!(base.under(&[&cond(0)]).is_read_only());
        let kept = base.under(&[&cond(1)]);
        assert!(!kept.possibly_destructive() && !kept.is_read_only());
        assert!(base.under(&[&cond(0), &cond(2)]).possibly_destructive());

        let mut t = json!({"name": "timedatectl", "commands": {
            "status": {"description": "s"}, "set-time": {"description": "t"}},
            "globalOptions": [{"name": "host", "flags": ["-H", "--host"], "type": "boolean"}]});
        apply(&mut t, "timedatectl").unwrap();
        let ro = |c: &str| {
            serde_json::from_value::<Effects>(t["commands"][c]["effects"].clone())
                .unwrap()
                .is_read_only()
        };
        assert!(ro("status") && !ro("set-time"));
        assert!(t.get("globalOptions").is_some());
    }

    #[test]
    fn only_root_owned_paths_are_vouched() {
        // A canonical path (no symlink: `/bin` often is one, and a link's own mode is 0777).
        let sh = std::fs::canonicalize("/bin/sh").unwrap();
        let mut memo = RootDirs::default();
        assert!(root_owned_in(&sh, None, &mut memo), "{}", sh.display());
        assert_eq!(memo.get(sh.parent().unwrap().as_os_str()), Some(&true));
        assert!(root_owned_in(&sh, None, &mut memo));
        // The owner and mode the caller passes are believed instead of a new `lstat`.
        assert!(root_owned_in(&sh, Some((0, 0o100755)), &mut memo));
        assert!(!root_owned_in(&sh, Some((1000, 0o100755)), &mut memo));
        assert!(!root_owned_in(&sh, Some((0, 0o100775)), &mut memo));
        assert!(root_owned(std::path::Path::new("/")));
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("nl");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        // A directory others may write to: never, whoever owns it (tests run as root in CI).
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(!root_owned(&f));
        assert!(!root_owned(std::path::Path::new("relative/nl")));
    }
}
