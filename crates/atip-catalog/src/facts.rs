//! What the machine says about each registered program, for search to rank by
//! ([`crate::search::Facts`]): computed once, when the catalog is compiled (that is, at
//! scan time), never at search time.
//!
//! Two things (normative description: `spec/search.md`, Families and Priors):
//! - **Families**: registry entries that are one program under several names — links to
//!   the same file, scripts that only `exec` another registered program (`egrep` →
//!   `grep -E`), versioned names (`llvm-cov-14`) and target-prefixed copies
//!   (`x86_64-linux-gnu-ld`) — share a family, named by its best name (the one the others
//!   point to: the shortest, then the first in order).
//! - **Priors**: a factor on each program's score from evidence on the machine: curated
//!   metadata over inferred, manual section 1 over 8, the distribution's own package
//!   priority (Debian's `Priority:` of the package owning the file, from dpkg's status and
//!   file lists), programs in `bin` directories over helpers elsewhere. No list of
//!   programs made by hand.
//!
//! Reads the file system (stat, small scripts' first bytes, dpkg's database); decides no
//! ranking itself beyond these factors.

use crate::registry::{Entry, Source};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Curated or native metadata (a shim, the tool's own answer, an installed or converted
/// document) against metadata inferred from a manual page.
pub const PRIOR_INFERRED: f32 = 0.85;
/// A command documented in manual section 8 (system administration) rather than 1.
pub const PRIOR_SECTION_8: f32 = 0.9;
/// The owning package's priority: `required`, `important`, `standard`.
pub const PRIOR_REQUIRED: f32 = 1.15;
/// See [`PRIOR_REQUIRED`].
pub const PRIOR_IMPORTANT: f32 = 1.1;
/// See [`PRIOR_REQUIRED`].
pub const PRIOR_STANDARD: f32 = 1.05;
/// A program outside any `bin`/`sbin` directory (`libexec`-like places).
pub const PRIOR_NOT_IN_BIN: f32 = 0.8;

/// The largest script read to see whether it only runs another program.
const MAX_WRAPPER: u64 = 4096;

/// Where dpkg keeps its database on Debian-like systems.
pub const DPKG_ROOT: &str = "/var/lib/dpkg";

/// Per registry name: its family's name and its prior before the manual section (which
/// only the document knows; see [`section_prior`]).
#[derive(Debug, Clone, PartialEq)]
pub struct EntryFacts {
    /// The family's name.
    pub family: String,
    /// Factor from the source, the package priority and the directory.
    pub prior: f32,
}

/// The facts of every entry. `dpkg_root` is dpkg's database (`DPKG_ROOT`; a missing one
/// means no package priorities).
pub fn of_entries(entries: &[(&String, &Entry)], dpkg_root: &Path) -> HashMap<String, EntryFacts> {
    use rayon::prelude::*;
    let names: HashSet<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    // Per entry: its file's identity and, for a small script, the program it execs.
    // Per entry: (device, inode), the resolved path, the program a wrapper execs.
    type Seen = (Option<(u64, u64)>, Option<PathBuf>, Option<String>);
    let seen: Vec<Seen> = entries
        .par_iter()
        .map(|(_, e)| {
            let meta = std::fs::metadata(&e.path).ok();
            let id = meta.as_ref().map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino())
            });
            let real = std::fs::canonicalize(&e.path).ok();
            let execs = meta
                .filter(|m| m.len() <= MAX_WRAPPER)
                .and_then(|_| std::fs::read(&e.path).ok())
                .and_then(|bytes| exec_target(&bytes));
            (id, real, execs)
        })
        .collect();
    let mut uf = Families::new(entries.iter().map(|(n, _)| n.as_str()));
    let mut by_file: HashMap<(u64, u64), Vec<(&str, Described)>> = HashMap::new();
    for ((name, entry), (id, _, execs)) in entries.iter().zip(&seen) {
        if let Some(id) = id {
            let same = by_file.entry(*id).or_default();
            // A multi-call program (`pg_wrapper`, `systemctl` as `reboot`) is one file
            // under names that each do something else: only the names whose
            // documents describe the same program are one family. Each description's
            // words are taken once, and names already of one family are not compared
            // again: a file with n names costs n word sets, not n² (a busybox has
            // hundreds of names).
            let this = Described::of(entry);
            for (other, d) in same.iter() {
                if uf.name_of(name) != uf.name_of(other) && this.one_program(d) {
                    uf.join(name, other);
                }
            }
            same.push((name.as_str(), this));
        }
        if let Some(target) = execs
            && target != name.as_str()
            && names.contains(target.as_str())
        {
            uf.join(name, target);
        }
        if let Some(plain) = plain_name(name, &names) {
            uf.join(name, plain);
        }
    }
    let paths = entries
        .iter()
        .zip(&seen)
        .flat_map(|((_, e), (_, real, _))| {
            std::iter::once(e.path.as_path()).chain(real.as_deref())
        });
    let dpkg = Dpkg::read_for(dpkg_root, paths);
    entries
        .iter()
        .zip(&seen)
        .map(|((name, e), (_, real, _))| {
            let mut prior = if e.source == Source::Inferred {
                PRIOR_INFERRED
            } else {
                1.0
            };
            prior *= dpkg.prior(&e.path, real.as_deref());
            if !in_bin(&e.path) {
                prior *= PRIOR_NOT_IN_BIN;
            }
            let facts = EntryFacts {
                family: uf.name_of(name).to_string(),
                prior,
            };
            ((*name).clone(), facts)
        })
        .collect()
}

/// [`Described::one_program`] of two entries.
#[cfg(test)]
fn one_program(a: &Entry, b: &Entry) -> bool {
    Described::of(a).one_program(&Described::of(b))
}

/// What [`Described::one_program`] compares of an entry: its description's words and whether a
/// manual page or a person wrote them.
struct Described {
    words: std::collections::BTreeSet<String>,
    inferred: bool,
}

impl Described {
    fn of(e: &Entry) -> Self {
        Described {
            words: description_words(&e.description),
            inferred: e.source == Source::Inferred,
        }
    }

    /// Whether two registry entries for the same file describe one program, not two programs
    /// of one multi-call binary (`pg_wrapper` is `psql`, `dropdb`, `pg_dump` …; `systemctl`
    /// is also `reboot`): two descriptions inferred from manual pages are one program only
    /// when they are the same words (a page's NAME line names what it documents, so two
    /// pages that say different things are two programs); a description written by hand
    /// (a shim, the tool's own) and another are one program when more than half the
    /// shorter's words (stopwords aside) are in the other (`awk` "Pattern scanning and text
    /// processing language", `gawk` "pattern scanning and processing language"). A missing
    /// description is no evidence against.
    fn one_program(&self, other: &Described) -> bool {
        let (wa, wb) = (&self.words, &other.words);
        if wa.is_empty() || wb.is_empty() {
            return true;
        }
        if self.inferred && other.inferred {
            return wa == wb;
        }
        let (short, long) = if wa.len() <= wb.len() {
            (wa, wb)
        } else {
            (wb, wa)
        };
        2 * short.intersection(long).count() > short.len()
    }
}

/// The words of a description, lower-case, stopwords aside.
fn description_words(text: &str) -> std::collections::BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !crate::search::STOPWORDS.contains(&w.as_str()))
        .collect()
}

/// The factor for the manual section an inferred document was read from
/// (`x-inferred.manPage`, e.g. `/usr/share/man/man8/useradd.8.gz`): [`PRIOR_SECTION_8`]
/// for section 8, else 1.
pub fn section_prior(meta: &crate::model::Metadata) -> f32 {
    let page = meta
        .extra
        .get("x-inferred")
        .and_then(|x| x.get("manPage"))
        .and_then(|p| p.as_str());
    match page.and_then(|p| Path::new(p).parent()?.file_name()?.to_str()) {
        Some(dir) if dir.starts_with("man8") => PRIOR_SECTION_8,
        _ => 1.0,
    }
}

/// Whether `path` is in a `bin` or `sbin` directory (`/usr/bin`, `~/.cargo/bin`).
fn in_bin(path: &Path) -> bool {
    path.parent()
        .and_then(Path::file_name)
        .and_then(|d| d.to_str())
        .is_some_and(|d| d == "bin" || d == "sbin")
}

/// The program a small shell script only hands over to: the first word after `exec` on
/// its last command line (`exec grep -E "$@"` → `grep`), by base name. `None` for
/// anything else (binaries, scripts that do more than hand over at the end).
fn exec_target(bytes: &[u8]) -> Option<String> {
    if !bytes.starts_with(b"#!") {
        return None;
    }
    let text = std::str::from_utf8(bytes).ok()?;
    let last = text
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))?;
    let rest = last.strip_prefix("exec ")?;
    if !last.contains("\"$@\"") {
        return None;
    }
    let prog = rest.split_whitespace().next()?;
    let base = prog.rsplit('/').next()?;
    let plain = base
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "._+-".contains(c));
    (plain && !base.is_empty()).then(|| base.to_string())
}

/// Architectures that lead a target triple (`x86_64-linux-gnu-ld`).
const ARCHES: &[&str] = &[
    "x86_64",
    "i386",
    "i486",
    "i586",
    "i686",
    "aarch64",
    "arm",
    "armv7",
    "riscv64",
    "powerpc64le",
    "powerpc64",
    "s390x",
    "mips",
    "mipsel",
    "mips64el",
    "loongarch64",
];

/// The registered name `name` is a target-prefixed or versioned copy of, if any:
/// `x86_64-linux-gnu-gcc-12` → `gcc-12` or `gcc`, `llvm-cov-14` → `llvm-cov`,
/// `python3.11` → `python3`, `tclsh8.6` → `tclsh` (the first registered name on the way).
fn plain_name<'a>(name: &str, names: &HashSet<&'a str>) -> Option<&'a str> {
    let mut n = name;
    if let Some((arch, rest)) = name.split_once('-')
        && ARCHES.contains(&arch)
    {
        // The triple's vendor and system parts: `linux-gnu-`, `pc-linux-gnu-`, `w64-mingw32-`.
        let parts: Vec<&str> = rest.splitn(4, '-').collect();
        for take in [2, 3] {
            if parts.len() > take {
                let tail = &rest[parts[..take].iter().map(|p| p.len() + 1).sum::<usize>()..];
                if parts[..take]
                    .iter()
                    .any(|p| p.starts_with("linux") || p.starts_with("mingw"))
                    && let Some(found) = names.get(tail)
                {
                    return Some(found);
                }
            }
        }
        if let Some(at) = rest.find("linux-gnu-") {
            n = &rest[at + "linux-gnu-".len()..];
        }
    }
    // Versions: strip a trailing `-N` or `.N` group, one at a time; a bare `N` only after
    // one of those (`tclsh8.6` → `tclsh8` → `tclsh`), since a digit glued to a name is
    // often part of it (`killall5` is not a version of `killall`).
    let mut cur = n;
    let mut first = true;
    loop {
        let trimmed = cur.trim_end_matches(|c: char| c.is_ascii_digit());
        if trimmed.len() == cur.len() || trimmed.is_empty() {
            return None;
        }
        let next = match trimmed
            .strip_suffix('-')
            .or_else(|| trimmed.strip_suffix('.'))
        {
            Some(n) => n,
            None if first => return None,
            None => trimmed,
        };
        first = false;
        if next.is_empty() || !next.chars().any(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        if next != name
            && let Some(found) = names.get(next)
        {
            return Some(found);
        }
        cur = next;
    }
}

/// Union-find over registry names; a family is named by its shortest name (then the
/// first in order).
struct Families<'a> {
    parent: HashMap<&'a str, &'a str>,
}

impl<'a> Families<'a> {
    fn new(names: impl Iterator<Item = &'a str>) -> Self {
        Families {
            parent: names.map(|n| (n, n)).collect(),
        }
    }

    fn name_of(&self, mut n: &'a str) -> &'a str {
        while let Some(&p) = self.parent.get(n) {
            if p == n {
                break;
            }
            n = p;
        }
        n
    }

    fn join(&mut self, a: &str, b: &str) {
        let (Some(&a), Some(&b)) = (
            self.parent.get_key_value(a).map(|(k, _)| k),
            self.parent.get_key_value(b).map(|(k, _)| k),
        ) else {
            return;
        };
        let (ra, rb) = (self.name_of(a), self.name_of(b));
        if ra == rb {
            return;
        }
        let better = |x: &str, y: &str| (x.len(), x) < (y.len(), y);
        if better(ra, rb) {
            self.parent.insert(rb, ra);
        } else {
            self.parent.insert(ra, rb);
        }
    }
}

/// Package priorities of the files dpkg installed, for packages of priority `required`,
/// `important` or `standard` only (the rest count as no evidence).
#[derive(Debug, Default)]
pub struct Dpkg {
    by_path: HashMap<PathBuf, f32>,
}

impl Dpkg {
    /// Reads `root/status` for priorities, then the file lists (`root/info/PKG.list` or
    /// `PKG:ARCH.list`) of the packages that have one that counts. Missing or unreadable
    /// files mean no evidence, never an error: the ranking then has no package prior.
    pub fn read(root: &Path) -> Dpkg {
        let mut dpkg = Dpkg::default();
        let Ok(status) = std::fs::read_to_string(root.join("status")) else {
            return dpkg;
        };
        let mut wanted: HashMap<String, f32> = HashMap::new();
        for stanza in status.split("\n\n") {
            let (mut pkg, mut prior, mut installed) = (None, None, false);
            for line in stanza.lines() {
                if let Some(v) = line.strip_prefix("Package: ") {
                    pkg = Some(v.trim());
                } else if let Some(v) = line.strip_prefix("Priority: ") {
                    prior = match v.trim() {
                        "required" => Some(PRIOR_REQUIRED),
                        "important" => Some(PRIOR_IMPORTANT),
                        "standard" => Some(PRIOR_STANDARD),
                        _ => None,
                    };
                } else if let Some(v) = line.strip_prefix("Status: ") {
                    installed = v.trim().ends_with(" installed");
                }
            }
            if let (Some(p), Some(f), true) = (pkg, prior, installed) {
                wanted.insert(p.to_string(), f);
            }
        }
        let Ok(dir) = std::fs::read_dir(root.join("info")) else {
            return dpkg;
        };
        for e in dir.flatten() {
            let file = e.file_name();
            let Some(stem) = file.to_str().and_then(|f| f.strip_suffix(".list")) else {
                continue;
            };
            let pkg = stem.split(':').next().unwrap_or(stem);
            let Some(&f) = wanted.get(pkg) else {
                continue;
            };
            if let Ok(list) = std::fs::read_to_string(e.path()) {
                for line in list.lines() {
                    if line.contains("/bin/") || line.contains("/sbin/") {
                        dpkg.by_path.insert(PathBuf::from(line), f);
                    }
                }
            }
        }
        dpkg
    }

    /// [`Dpkg::read`] when one of `paths` (the entries' paths and resolved paths) could be
    /// in its lists, else nothing: the lists name files in `bin`/`sbin` directories only,
    /// so for a tree of programs under /tmp or a home directory no lookup could find
    /// anything, and reading the status and hundreds of lists was for nothing.
    pub fn read_for<'p>(root: &Path, paths: impl IntoIterator<Item = &'p Path>) -> Dpkg {
        if Dpkg::may_name_any(paths) {
            Dpkg::read(root)
        } else {
            Dpkg::default()
        }
    }

    /// Whether any of `paths` could be found in a [`Dpkg::read`]: one with a `bin` or `sbin`
    /// component. Only lines with `/bin/` or `/sbin/` are kept, and such a line has that
    /// component; paths are equal component by component, and the `/usr` that
    /// [`Dpkg::prior`] adds or strips is neither, so a path without one matches no line.
    fn may_name_any<'p>(paths: impl IntoIterator<Item = &'p Path>) -> bool {
        use std::path::Component;
        paths.into_iter().any(|p| {
            p.components().any(|c| {
                c == Component::Normal("bin".as_ref()) || c == Component::Normal("sbin".as_ref())
            })
        })
    }

    /// The factor for a program at `path` (and its resolved `real` path): its package's
    /// priority, else 1. A merged `/usr` is seen through: `/usr/bin/ls` is found as
    /// `/bin/ls` too.
    fn prior(&self, path: &Path, real: Option<&Path>) -> f32 {
        let mut tries: Vec<PathBuf> = vec![path.to_path_buf()];
        tries.extend(real.map(Path::to_path_buf));
        for p in tries {
            let alt = match p.strip_prefix("/usr") {
                Ok(rest) => Path::new("/").join(rest),
                Err(_) => Path::new("/usr").join(p.strip_prefix("/").unwrap_or(&p)),
            };
            for q in [&p, &alt] {
                if let Some(&f) = self.by_path.get(q) {
                    return f;
                }
            }
        }
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set<'a>(names: &[&'a str]) -> HashSet<&'a str> {
        names.iter().copied().collect()
    }

    #[test]
    fn plain_names_of_versioned_and_prefixed_copies() {
        let names = set(&[
            "gcc", "ld", "llvm-cov", "python3", "tclsh", "ld.gold", "count-14", "lz4", "base64",
            "gcc-12",
        ]);
        assert_eq!(plain_name("x86_64-linux-gnu-ld", &names), Some("ld"));
        assert_eq!(
            plain_name("x86_64-linux-gnu-ld.gold", &names),
            Some("ld.gold")
        );
        assert_eq!(
            plain_name("x86_64-linux-gnu-gcc-12", &names),
            Some("gcc-12")
        );
        assert_eq!(plain_name("gcc-12", &names), Some("gcc"));
        assert_eq!(plain_name("llvm-cov-14", &names), Some("llvm-cov"));
        assert_eq!(plain_name("python3.11", &names), Some("python3"));
        assert_eq!(plain_name("tclsh8.6", &names), Some("tclsh"));
        // Not copies: nothing registered without the digits, or digits are the name.
        assert_eq!(plain_name("lz4", &names), None);
        assert_eq!(plain_name("base64", &names), None);
        assert_eq!(plain_name("count-14", &names), None);
        assert_eq!(plain_name("x86_64", &names), None);
        let names = set(&["killall", "pip", "perl"]);
        assert_eq!(plain_name("killall5", &names), None);
        assert_eq!(plain_name("pip3", &names), None);
        assert_eq!(plain_name("perl5.36.0", &names), Some("perl"));
        assert_eq!(plain_name("gcc", &names), None);
    }

    #[test]
    fn wrapper_scripts_name_the_program_they_exec() {
        assert_eq!(
            exec_target(b"#!/bin/sh\ncmd=${0##*/}\nexec grep -E \"$@\"\n").as_deref(),
            Some("grep")
        );
        assert_eq!(
            exec_target(b"#!/bin/sh\n# comment\nexec /usr/bin/gzip -cd \"$@\"\n\n").as_deref(),
            Some("gzip")
        );
        // Does more than hand over, hands over without the arguments, or is no script.
        assert_eq!(
            exec_target(b"#!/bin/sh\nexec grep -E \"$@\"\necho done\n"),
            None
        );
        assert_eq!(exec_target(b"#!/bin/sh\nexec grep -E foo\n"), None);
        assert_eq!(exec_target(b"\x7fELF exec grep \"$@\""), None);
        assert_eq!(exec_target(b"#!/bin/sh\nexec $(x) \"$@\"\n"), None);
    }

    fn entry(source: &str, description: &str) -> Entry {
        serde_json::from_value(serde_json::json!({"path": "/usr/bin/x", "source": source,
            "lastChecked": "2026-01-01T00:00:00Z", "description": description, "atip": "0.6",
            "trust": "community", "effects": "", "commands": 1, "metadata": "tools/x.json"}))
        .unwrap()
    }

    #[test]
    fn names_of_one_file_are_one_program_only_when_described_alike() {
        let inferred = |d| entry("inferred", d);
        // `pg_wrapper` under two names: two manual pages, two programs.
        assert!(!one_program(
            &inferred("remove a PostgreSQL database"),
            &inferred("PostgreSQL interactive terminal")
        ));
        assert!(!one_program(
            &inferred("cluster a PostgreSQL database"),
            &inferred("create a new PostgreSQL database")
        ));
        // One page under several names (`halt`, `poweroff`, `reboot`).
        assert!(one_program(
            &inferred("Halt, power-off or reboot the machine"),
            &inferred("Halt, power off or reboot the machine")
        ));
        // A hand-written description against an inferred one: most words shared.
        assert!(one_program(
            &entry("shim", "Pattern scanning and text processing language"),
            &inferred("pattern scanning and processing language")
        ));
        assert!(!one_program(
            &entry(
                "shim",
                "Control systemd and its services: status, start, stop"
            ),
            &inferred("Halt, power-off or reboot the machine")
        ));
        assert!(!one_program(
            &entry("shim", "Cargo, Rust's package manager: build, test, run"),
            &entry("shim", "The Rust compiler: compile one crate")
        ));
        // No description: no evidence of two programs.
        assert!(one_program(&inferred(""), &inferred("anything")));
    }

    #[test]
    fn families_are_named_by_their_shortest_name() {
        let mut f = Families::new(["egrep", "grep", "rgrep", "zcat", "gzip"].into_iter());
        f.join("egrep", "grep");
        f.join("rgrep", "egrep");
        f.join("zcat", "gzip");
        assert_eq!(f.name_of("rgrep"), "grep");
        assert_eq!(f.name_of("egrep"), "grep");
        assert_eq!(f.name_of("zcat"), "gzip");
        assert_eq!(f.name_of("gzip"), "gzip");
        f.join("grep", "nope");
        assert_eq!(f.name_of("grep"), "grep");
    }

    #[test]
    fn dpkg_priorities_of_installed_packages_files() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("info")).unwrap();
        std::fs::write(
            d.path().join("status"),
            "Package: coreutils\nStatus: install ok installed\nPriority: required\n\n\
             Package: less\nStatus: install ok installed\nPriority: important\n\n\
             Package: gone\nStatus: deinstall ok config-files\nPriority: required\n\n\
             Package: llvm\nStatus: install ok installed\nPriority: optional\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("info/coreutils.list"),
            "/.\n/bin\n/bin/ls\n/usr/share/doc/x\n",
        )
        .unwrap();
        std::fs::write(d.path().join("info/less:amd64.list"), "/usr/bin/less\n").unwrap();
        std::fs::write(d.path().join("info/gone.list"), "/usr/bin/gone\n").unwrap();
        std::fs::write(d.path().join("info/llvm.list"), "/usr/bin/llvm-cov\n").unwrap();
        let dpkg = Dpkg::read(d.path());
        assert_eq!(dpkg.prior(Path::new("/usr/bin/ls"), None), PRIOR_REQUIRED);
        assert_eq!(dpkg.prior(Path::new("/bin/ls"), None), PRIOR_REQUIRED);
        assert_eq!(dpkg.prior(Path::new("/bin/less"), None), PRIOR_IMPORTANT);
        assert_eq!(
            dpkg.prior(
                Path::new("/usr/bin/pager"),
                Some(Path::new("/usr/bin/less"))
            ),
            PRIOR_IMPORTANT
        );
        assert_eq!(dpkg.prior(Path::new("/usr/bin/gone"), None), 1.0);
        assert_eq!(dpkg.prior(Path::new("/usr/bin/llvm-cov"), None), 1.0);
        // Read for entries that could be in its lists; not read for entries elsewhere,
        // where the whole database would have found nothing either.
        let tree = [Path::new("/tmp/t/bin1/ls"), Path::new("/tmp/t/bin2/less")];
        assert!(tree.iter().all(|p| dpkg.prior(p, None) == 1.0));
        assert!(Dpkg::read_for(d.path(), tree).by_path.is_empty());
        let read = Dpkg::read_for(d.path(), [tree[0], Path::new("/usr/bin/ls")]);
        assert_eq!(read.by_path, dpkg.by_path);
        assert_eq!(
            Dpkg::read(&d.path().join("missing")).prior(Path::new("/bin/ls"), None),
            1.0
        );
    }

    #[test]
    fn only_paths_with_a_bin_component_can_be_in_dpkg_lists() {
        let yes = |p: &str| Dpkg::may_name_any([Path::new(p)]);
        assert!(yes("/usr/bin/ls"));
        assert!(yes("/sbin/ldconfig"));
        assert!(yes("/usr//bin/./ls"));
        assert!(yes("/opt/x/bin"));
        assert!(!yes("/tmp/tree/bin1/atip-big"));
        assert!(!yes("/usr/libexec/git-core/git-add"));
        assert!(!yes("/home/u/.local/binaries/x"));
        assert!(!Dpkg::may_name_any([]));
        // Whatever a dpkg list could hold, a line kept is found only under such a path.
        for line in [
            "/usr/bin/ls",
            "/bin//x",
            "/usr/sbin/./y",
            "bin/z",
            "/a/bin/",
        ] {
            assert!(yes(line), "{line}");
        }
    }

    #[test]
    fn bin_directories() {
        assert!(in_bin(Path::new("/usr/bin/ls")));
        assert!(in_bin(Path::new("/root/.cargo/bin/cargo")));
        assert!(in_bin(Path::new("/usr/sbin/useradd")));
        assert!(!in_bin(Path::new("/usr/libexec/git-core/git-add")));
        assert!(!in_bin(Path::new("/usr/lib/x/helper")));
    }
}
