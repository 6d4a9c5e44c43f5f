//! The installed source: ATIP metadata a package ships as a file beside its executable,
//! so the tool is known without running anything.
//!
//! For each scanned directory named `bin` or `sbin`, its prefix's
//! `<prefix>/share/agent-tools/tools/NAME.json` (a metadata document) and
//! `<prefix>/share/agent-tools/shims/NAME.json` (a shim) describe the executable `NAME`
//! of that directory (`/usr/local/bin/gh` → `/usr/local/share/agent-tools/tools/gh.json`).
//! `$XDG_DATA_DIRS/agent-tools/tools/NAME.json` describe `NAME` wherever it is (the first
//! `XDG_DATA_DIRS` entry wins; their `shims/` are the system shim layer, not this source).
//! A prefix's own file wins over an XDG one, `tools/` over `shims/`. Every file is
//! validated (its verdict cached by fingerprint like a shim's); a refused one is listed,
//! never silently dropped. Trust: the document's `trust.source`, else `vendor`.
//!
//! Must not run anything or write anything.

use super::cache::{Cache, ShimRecord, ShimVerdict};
use super::paths::{Fingerprint, is_valid_name};
use super::report::{RejectedFile, ReportDiagnostic};
use super::source::{Candidate, Doc, MetadataSource, SourceFailure, Subject, trust_or};
use crate::registry::Source;
use crate::validate::{Kind, Severity, check_bytes};
use serde_json::Value;
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The directory, under a prefix's `share/` or an XDG data dir, that holds installed metadata.
pub const DIR: &str = "agent-tools";

/// One valid installed file.
#[derive(Debug, Clone)]
struct InstalledFile {
    path: PathBuf,
    /// The `agent-tools` directory it is in (recorded as `shimRegistry`).
    dir: PathBuf,
    tool: Option<String>,
    trust: Option<String>,
    doc: String,
}

/// Installed metadata, as a [`MetadataSource`].
#[derive(Debug, Default)]
pub struct Installed {
    /// Scanned directory (canonical) → its prefix's files by tool name.
    by_dir: HashMap<PathBuf, HashMap<String, InstalledFile>>,
    /// Files of the XDG data dirs, by tool name.
    anywhere: HashMap<String, InstalledFile>,
    /// `agent-tools` directories looked at.
    pub dirs: Vec<PathBuf>,
    /// Files refused by validation.
    pub rejected: Vec<RejectedFile>,
    failures: Vec<SourceFailure>,
}

/// The `share/agent-tools` directory of a `bin`/`sbin` directory's prefix.
pub(crate) fn prefix_dir(bin: &Path) -> Option<PathBuf> {
    let leaf = bin.file_name()?;
    (leaf == "bin" || leaf == "sbin").then(|| bin.parent().map(|p| p.join("share").join(DIR)))?
}

impl Installed {
    /// Lists and validates the installed files for these scanned (canonical) directories
    /// and system data dirs (each already ending in `agent-tools`). `skip_shims` are shim directories that are already a shim
    /// layer (not read twice).
    pub fn load(
        scan_dirs: &[PathBuf],
        system_data: &[PathBuf],
        skip_shims: &[PathBuf],
        old: &Cache,
        new: &mut Cache,
    ) -> Installed {
        let mut me = Installed::default();
        let mut seen: HashMap<PathBuf, HashMap<String, InstalledFile>> = HashMap::new();
        for bin in scan_dirs {
            let Some(at) = prefix_dir(bin) else { continue };
            if !seen.contains_key(&at) {
                let mut files = HashMap::new();
                for (sub, kind) in [("tools", Kind::Metadata), ("shims", Kind::Shim)] {
                    let d = at.join(sub);
                    if kind == Kind::Shim && skip_shims.contains(&d) {
                        continue;
                    }
                    me.read_dir(&at, &d, kind, old, new, &mut files);
                }
                seen.insert(at.clone(), files);
            }
            // A prefix without files is left out: `file` then skips every name.
            if !seen[&at].is_empty() {
                me.by_dir.insert(bin.clone(), seen[&at].clone());
            }
        }
        // Lowest precedence first, so the first XDG entry's file replaces later ones.
        for at in system_data.iter().rev() {
            let mut files = HashMap::new();
            me.read_dir(at, &at.join("tools"), Kind::Metadata, old, new, &mut files);
            me.anywhere.extend(files);
        }
        me
    }

    /// Reads one directory's `NAME.json` files into `files` (earlier entries win).
    fn read_dir(
        &mut self,
        at: &Path,
        dir: &Path,
        kind: Kind,
        old: &Cache,
        new: &mut Cache,
        files: &mut HashMap<String, InstalledFile>,
    ) {
        let rd = match fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                return;
            }
            Err(e) => {
                self.fail(at, format!("failed to list {}: {e}", dir.display()));
                return;
            }
        };
        self.dirs.push(dir.to_path_buf());
        let mut paths: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else {
                continue;
            };
            if files.contains_key(&stem) {
                continue;
            }
            match verdict(&path, kind, old, new) {
                Err(e) => self.fail(at, e.to_string()),
                Ok(None) => {}
                Ok(Some(ShimVerdict::Rejected {
                    message,
                    diagnostics,
                })) => self.rejected.push(RejectedFile {
                    path,
                    message,
                    diagnostics,
                }),
                Ok(Some(ShimVerdict::Valid {
                    tool, trust, doc, ..
                })) => {
                    files.insert(
                        stem,
                        InstalledFile {
                            path,
                            dir: at.to_path_buf(),
                            tool,
                            trust,
                            doc,
                        },
                    );
                }
            }
        }
    }

    fn fail(&mut self, at: &Path, message: String) {
        self.failures.push(SourceFailure {
            source: "installed",
            message,
            class: vec![Source::Installed],
            registry: Some(at.display().to_string()),
        });
    }

    fn file(&self, subject: &Subject<'_>) -> Option<&InstalledFile> {
        // Most machines have none: no path is parsed and hashed per name then.
        if self.by_dir.is_empty() && self.anywhere.is_empty() {
            return None;
        }
        let dir = subject.path.parent()?;
        self.by_dir
            .get(dir)
            .and_then(|m| m.get(subject.name))
            .or_else(|| self.anywhere.get(subject.name))
    }
}

/// Validates one installed file, or takes the cached verdict while its fingerprint
/// holds. `Err` when it exists but cannot be read.
fn verdict(
    path: &Path,
    kind: Kind,
    old: &Cache,
    new: &mut Cache,
) -> Result<Option<ShimVerdict>, atip_base::fileio::ReadError> {
    let Ok(md) = fs::metadata(path) else {
        return Ok(None);
    };
    if !md.is_file() {
        return Ok(None);
    }
    let fp = Fingerprint::of(&md);
    if let Some(rec) = old.shim(path, &fp) {
        new.put_shim(path, rec.clone());
        return Ok(Some(rec.verdict.clone()));
    }
    let bytes = fs::read(path).map_err(atip_base::fileio::ReadError::at(path))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file_name.strip_suffix(".json").unwrap_or(&file_name);
    let checked = check_bytes(&bytes, Some(kind), Some(&file_name));
    let mut errors: Vec<ReportDiagnostic> = checked
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(ReportDiagnostic::from)
        .collect();
    if !is_valid_name(stem) {
        errors.push(ReportDiagnostic {
            severity: "error".into(),
            rule: "installed-file-name".into(),
            pointer: String::new(),
            line: None,
            column: None,
            message: format!("{file_name} does not name a tool (NAME.json)"),
        });
    }
    let value = checked.value.unwrap_or(Value::Null);
    let v = if errors.is_empty() {
        ShimVerdict::Valid {
            tool: value
                .pointer("/binary/name")
                .or_else(|| value.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            trust: value
                .pointer("/trust/source")
                .and_then(Value::as_str)
                .map(str::to_owned),
            doc: crate::digest::sha256_hex(&bytes)
                .trim_start_matches("sha256:")
                .to_owned(),
            warnings: Vec::new(),
        }
    } else {
        ShimVerdict::Rejected {
            message: errors[0].message.clone(),
            diagnostics: errors,
        }
    };
    new.put_shim(
        path,
        ShimRecord {
            fp,
            verdict: v.clone(),
        },
    );
    Ok(Some(v))
}

impl MetadataSource for Installed {
    fn id(&self) -> &'static str {
        "installed"
    }

    fn needs_hash(&self, _: &Subject<'_>) -> bool {
        false // found by the executable's name and prefix
    }

    fn offer(&self, subject: &Subject<'_>, out: &mut Vec<Candidate>) {
        let Some(f) = self.file(subject) else {
            return;
        };
        let mut warnings = Vec::new();
        if let Some(t) = &f.tool
            && t != subject.name
        {
            warnings.push(format!(
                "the installed file {} describes {t:?}; it is registered under the executable name {:?}",
                f.path.display(),
                subject.name
            ));
        }
        out.push(Candidate {
            source: Source::Installed,
            by_hash: false,
            doc: Doc::File(f.path.clone()),
            identity: format!("installed:{}:{}", f.path.display(), f.doc),
            trust: trust_or(f.trust.as_deref(), "vendor"),
            origin: Some(f.path.clone()),
            shim_registry: Some(f.dir.display().to_string()),
            warnings,
            vouch: None,
        });
    }

    fn failures(&self) -> Vec<SourceFailure> {
        self.failures.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_of_bin_dirs_only() {
        assert_eq!(
            prefix_dir(Path::new("/usr/local/bin")),
            Some(PathBuf::from("/usr/local/share/agent-tools"))
        );
        assert_eq!(
            prefix_dir(Path::new("/opt/x/sbin")),
            Some(PathBuf::from("/opt/x/share/agent-tools"))
        );
        assert_eq!(prefix_dir(Path::new("/opt/tools")), None);
        assert_eq!(prefix_dir(Path::new("/")), None);
    }
}
