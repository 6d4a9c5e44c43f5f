//! Trust for project configuration: a `.mcp.json` found above the working directory is
//! content someone else may have written (a cloned repository, another account), so
//! atip uses it only once the user has trusted that exact file.
//!
//! A trust record is the file's canonical path, the SHA-256 of its bytes and the
//! environment variables the user lets it read; records live in
//! `<config-dir>/trusted-projects.json` (written atomically, mode 0600). The bytes that
//! are hashed are the bytes that are parsed: the file is read once. Any change of
//! content makes the file untrusted again.
//!
//! Whatever the records say, a file is refused when someone other than the user (or
//! root) could have written it or could replace it: see [`location_problem`] for the
//! rule, spec/project-trust.md for why.
//!
//! Must not print or prompt; the CLI asks and reports.

use crate::output::{AtipError, ErrorCode};
use serde::{Deserialize, Serialize};
use std::ffi::CStr;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// File name of the trust records inside the config directory.
pub const STORE_FILE: &str = "trusted-projects.json";

/// Largest project config read (a config is a few kilobytes).
const MAX_PROJECT_FILE: u64 = 1 << 20;

/// One project config as read from disk: what is hashed is what gets parsed.
#[derive(Debug, Clone)]
pub struct ProjectFile {
    /// The path as found (for messages).
    pub path: PathBuf,
    /// Symlinks resolved: the path trust records are keyed by.
    pub canonical: PathBuf,
    /// The content.
    pub bytes: Vec<u8>,
    /// SHA-256 of `bytes`, lowercase hex.
    pub sha256: String,
    /// Why the file must not be used whatever the records say, when it must not.
    pub problem: Option<String>,
}

impl ProjectFile {
    /// Reads `path` once, hashes the bytes and checks who could have written it (for
    /// the effective user of this process).
    pub fn read(path: &Path) -> std::io::Result<ProjectFile> {
        let canonical = std::fs::canonicalize(path)?;
        let file = std::fs::File::open(&canonical)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "not a regular file",
            ));
        }
        let mut bytes = Vec::new();
        file.take(MAX_PROJECT_FILE + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_PROJECT_FILE {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("larger than {MAX_PROJECT_FILE} bytes"),
            ));
        }
        let users = Users::current();
        let problem = location_problem(&canonical, &meta, &users);
        Ok(ProjectFile {
            path: path.to_path_buf(),
            sha256: crate::digest::sha256_hex(&bytes),
            canonical,
            bytes,
            problem,
        })
    }
}

/// Who counts as "the user" for the location rule.
#[derive(Debug, Clone)]
pub struct Users {
    /// Effective user id of this process.
    pub uid: u32,
    /// Group ids whose write bit is harmless: the user's private group (named like the
    /// user, the user's primary group, with no listed members), if there is one.
    pub private_gids: Vec<u32>,
}

impl Users {
    /// The effective user of this process.
    pub fn current() -> Users {
        // SAFETY: geteuid has no preconditions and cannot fail.
        let uid = unsafe { libc::geteuid() };
        Users {
            uid,
            private_gids: private_group(uid).into_iter().collect(),
        }
    }

    fn owner_ok(&self, owner: u32) -> bool {
        owner == self.uid || owner == 0
    }
}

/// The user's private group (the user-private-group convention of Debian, Ubuntu and
/// Fedora: primary group named like the user, with no other listed member), where a
/// group-writable bit gives nobody else anything.
fn private_group(uid: u32) -> Option<u32> {
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0u8; 16 * 1024];
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer points at live, correctly sized storage; the result is
    // read only when `out` is non-null, and its strings live in `buf`.
    let rc =
        unsafe { libc::getpwuid_r(uid, &mut pw, buf.as_mut_ptr().cast(), buf.len(), &mut out) };
    if rc != 0 || out.is_null() || pw.pw_name.is_null() {
        return None;
    }
    // SAFETY: pw_name is a NUL-terminated string inside `buf`.
    let user = unsafe { CStr::from_ptr(pw.pw_name) }.to_bytes().to_vec();
    let gid = pw.pw_gid;
    let mut gr: libc::group = unsafe { std::mem::zeroed() };
    let mut gbuf = vec![0u8; 64 * 1024];
    let mut gout: *mut libc::group = std::ptr::null_mut();
    // SAFETY: as above, for the group entry.
    let rc = unsafe {
        libc::getgrgid_r(
            gid,
            &mut gr,
            gbuf.as_mut_ptr().cast(),
            gbuf.len(),
            &mut gout,
        )
    };
    if rc != 0 || gout.is_null() || gr.gr_name.is_null() {
        return None;
    }
    // SAFETY: gr_name is a NUL-terminated string inside `gbuf`; gr_mem is a
    // NULL-terminated array of such strings (or NULL).
    let (name, no_members) = unsafe {
        (
            CStr::from_ptr(gr.gr_name).to_bytes().to_vec(),
            gr.gr_mem.is_null() || (*gr.gr_mem).is_null(),
        )
    };
    (name == user && no_members).then_some(gid)
}

/// Why a project config at `canonical` (a resolved path, its metadata `meta`) must not
/// be used, or `None`. The rule, strict on purpose:
///
/// - the file is owned by the user or root, and nobody else may write it (no world
///   write bit; a group write bit only for the user's private group);
/// - every directory above it, up to `/`, is owned by the user or root, with no world
///   write bit and no group write bit except for the user's private group — except
///   that a root-owned directory with the sticky bit (`/tmp`) is accepted *above* the
///   project directory (others cannot rename or delete the user's entries in it), never
///   as the directory that holds the file (anyone could have created the file there
///   first, or the directory beside it).
pub fn location_problem(
    canonical: &Path,
    meta: &std::fs::Metadata,
    users: &Users,
) -> Option<String> {
    let mode = meta.mode();
    if !users.owner_ok(meta.uid()) {
        return Some(format!(
            "{} is owned by uid {}, not by you (uid {}) or root",
            canonical.display(),
            meta.uid(),
            users.uid
        ));
    }
    if let Some(w) = writable_by_others(mode, meta.gid(), users) {
        return Some(format!("{} is {w}", canonical.display()));
    }
    let mut first = true;
    for dir in canonical.ancestors().skip(1) {
        let m = match std::fs::metadata(dir) {
            Ok(m) => m,
            Err(e) => return Some(format!("cannot check {}: {e}", dir.display())),
        };
        if !users.owner_ok(m.uid()) {
            return Some(format!(
                "directory {} is owned by uid {}, not by you (uid {}) or root",
                dir.display(),
                m.uid(),
                users.uid
            ));
        }
        let sticky_root = m.mode() & 0o1000 != 0 && m.uid() == 0;
        if let Some(w) = writable_by_others(m.mode(), m.gid(), users)
            && (first || !sticky_root)
        {
            let why = if first && sticky_root {
                " (the sticky bit does not help: anyone could have put the file there)"
            } else {
                ""
            };
            return Some(format!("directory {} is {w}{why}", dir.display()));
        }
        first = false;
    }
    None
}

fn writable_by_others(mode: u32, gid: u32, users: &Users) -> Option<&'static str> {
    if mode & 0o002 != 0 {
        Some("writable by every user")
    } else if mode & 0o020 != 0 && !users.private_gids.contains(&gid) {
        Some("writable by its group")
    } else {
        None
    }
}

/// One trusted file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TrustRecord {
    /// Canonical path of the file.
    pub path: PathBuf,
    /// SHA-256 of the content trusted.
    pub sha256: String,
    /// Environment variables `${NAME}` in this file may expand.
    #[serde(default)]
    pub allow_env: Vec<String>,
    /// When (RFC 3339).
    pub trusted_at: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoreDoc {
    version: u32,
    trusted: Vec<TrustRecord>,
}

/// What the records say about one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustStatus {
    /// Trusted with this exact content.
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, with other content.
    Changed,
    /// Not usable whatever the records say (owner or directory permissions).
    Refused,
}

impl TrustStatus {
    /// The word used in messages and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustStatus::Trusted => "trusted",
            TrustStatus::Untrusted => "untrusted",
            TrustStatus::Changed => "changed",
            TrustStatus::Refused => "refused",
        }
    }
}

/// The trust records, loaded from (and saved to) one file.
#[derive(Debug, Clone, Default)]
pub struct TrustStore {
    /// Where the records live (`None`: in memory only, for tests and explicit mode).
    pub path: Option<PathBuf>,
    /// The records, one per canonical path.
    pub records: Vec<TrustRecord>,
}

fn store_error(path: &Path, msg: impl std::fmt::Display) -> AtipError {
    AtipError::new(
        ErrorCode::McpConfigInvalid,
        format!("{}: {msg}", path.display()),
    )
    .hint("fix or delete the file; `atip mcp trust` rewrites it")
    .details(serde_json::json!({"path": path}))
}

impl TrustStore {
    /// The records of `<config_dir>/trusted-projects.json`; none when it does not exist.
    pub fn load(config_dir: &Path) -> Result<TrustStore, AtipError> {
        let path = config_dir.join(STORE_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(TrustStore {
                    path: Some(path),
                    records: Vec::new(),
                });
            }
            Err(e) => return Err(store_error(&path, format!("failed to read: {e}"))),
        };
        let doc: StoreDoc = serde_json::from_slice(&bytes)
            .map_err(|e| store_error(&path, format!("not a trust record file: {e}")))?;
        if doc.version != 1 {
            return Err(store_error(
                &path,
                format!("version {} is not one this atip reads (1)", doc.version),
            ));
        }
        Ok(TrustStore {
            path: Some(path),
            records: doc.trusted,
        })
    }

    /// Writes the records back (atomically, mode 0600: the list says which projects
    /// the user works in).
    pub fn save(&self) -> Result<(), AtipError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                AtipError::new(
                    ErrorCode::FileWriteFailed,
                    format!("failed to create {}: {e}", dir.display()),
                )
            })?;
        }
        let doc = StoreDoc {
            version: 1,
            trusted: self.records.clone(),
        };
        let mut text = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        text.push(b'\n');
        crate::atomic::write_atomic(path, &text, crate::atomic::Options::PRIVATE)?;
        Ok(())
    }

    /// The record for this canonical path, if any.
    pub fn record(&self, canonical: &Path) -> Option<&TrustRecord> {
        self.records.iter().find(|r| r.path == canonical)
    }

    /// What the records (and the file's location) say about `file`.
    pub fn status(&self, file: &ProjectFile) -> TrustStatus {
        if file.problem.is_some() {
            return TrustStatus::Refused;
        }
        match self.record(&file.canonical) {
            Some(r) if r.sha256 == file.sha256 => TrustStatus::Trusted,
            Some(_) => TrustStatus::Changed,
            None => TrustStatus::Untrusted,
        }
    }

    /// Records `file` as trusted with exactly its current content, replacing an older
    /// record of the same path. A file in a place others can write is refused.
    pub fn trust(&mut self, file: &ProjectFile, allow_env: Vec<String>) -> Result<(), AtipError> {
        if let Some(p) = &file.problem {
            return Err(refused(file, p));
        }
        for name in &allow_env {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(AtipError::new(
                    ErrorCode::Usage,
                    format!("--allow-env {name:?}: a variable name is letters, digits and '_'"),
                ));
            }
        }
        self.records.retain(|r| r.path != file.canonical);
        self.records.push(TrustRecord {
            path: file.canonical.clone(),
            sha256: file.sha256.clone(),
            allow_env,
            trusted_at: crate::timestamp::rfc3339_now(),
        });
        Ok(())
    }

    /// Drops the record of `canonical`; whether there was one.
    pub fn untrust(&mut self, canonical: &Path) -> bool {
        let before = self.records.len();
        self.records.retain(|r| r.path != canonical);
        before != self.records.len()
    }
}

/// The error for a file that must not be used: `mcp_config_untrusted` (exit 77).
pub fn refused(file: &ProjectFile, problem: &str) -> AtipError {
    AtipError::new(
        ErrorCode::McpConfigUntrusted,
        format!(
            "{} is not used: {problem}",
            file.path.display()
        ),
    )
    .hint("only a file that nobody but you (or root) can write is used: move the project, or fix the owner and permissions")
    .details(serde_json::json!({"path": file.canonical, "status": "refused", "reason": problem}))
}

/// Variable names referenced as `${NAME}` in `text` (for showing what a file would read).
pub fn referenced_vars(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let (_, missing) = super::config::expand(text, &|_| None);
    for m in missing {
        if m != "workspaceFolder" && !out.contains(&m) {
            out.push(m);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn me() -> Users {
        Users {
            uid: unsafe { libc::geteuid() },
            private_gids: Vec::new(),
        }
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn records_follow_the_content() {
        let t = tempfile::tempdir().unwrap();
        chmod(t.path(), 0o700);
        let f = t.path().join(".mcp.json");
        std::fs::write(&f, "{}").unwrap();
        chmod(&f, 0o644);
        let mut store = TrustStore::load(&t.path().join("cfg")).unwrap();
        let pf = ProjectFile::read(&f).unwrap();
        assert_eq!(pf.problem, None);
        assert_eq!(store.status(&pf), TrustStatus::Untrusted);
        store.trust(&pf, vec!["A_B".into()]).unwrap();
        store.save().unwrap();
        let mut store = TrustStore::load(&t.path().join("cfg")).unwrap();
        assert_eq!(store.status(&pf), TrustStatus::Trusted);
        assert_eq!(store.record(&pf.canonical).unwrap().allow_env, ["A_B"]);
        let mode = std::fs::metadata(t.path().join("cfg").join(STORE_FILE))
            .unwrap()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&f, "{ }").unwrap();
        let pf2 = ProjectFile::read(&f).unwrap();
        assert_eq!(store.status(&pf2), TrustStatus::Changed);
        assert!(store.untrust(&pf.canonical));
        assert_eq!(store.status(&pf), TrustStatus::Untrusted);
        assert!(store.trust(&pf, vec!["BAD-NAME".into()]).is_err());
    }

    #[test]
    fn writable_places_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("proj");
        std::fs::create_dir(&dir).unwrap();
        chmod(t.path(), 0o700);
        chmod(&dir, 0o755);
        let f = dir.join(".mcp.json");
        std::fs::write(&f, "{}").unwrap();
        chmod(&f, 0o644);
        let check = |users: &Users| {
            let c = std::fs::canonicalize(&f).unwrap();
            location_problem(&c, &std::fs::metadata(&c).unwrap(), users)
        };
        assert_eq!(check(&me()), None);
        // The file itself writable by others.
        chmod(&f, 0o666);
        assert!(check(&me()).unwrap().contains("writable by every user"));
        chmod(&f, 0o664);
        assert!(check(&me()).unwrap().contains("writable by its group"));
        // ... unless the group is the user's private one.
        let gid = std::fs::metadata(&f).unwrap().gid();
        let upg = Users {
            private_gids: vec![gid],
            ..me()
        };
        assert_eq!(check(&upg), None);
        chmod(&f, 0o644);
        // Its directory world-writable, with or without the sticky bit.
        chmod(&dir, 0o777);
        assert!(check(&me()).unwrap().contains("directory"));
        chmod(&dir, 0o1777);
        let why = check(&me()).unwrap();
        assert!(why.contains("sticky"), "{why}");
        // A directory further up: world-writable refused.
        chmod(&dir, 0o755);
        chmod(t.path(), 0o777);
        assert!(check(&me()).unwrap().contains("writable by every user"));
        chmod(t.path(), 0o700);
        // Another owner: judged as a user who is neither the owner nor root.
        let other = Users {
            uid: me().uid.wrapping_add(12345),
            private_gids: Vec::new(),
        };
        if me().uid != 0 {
            assert!(check(&other).unwrap().contains("not by you"));
        }
    }

    #[test]
    fn variables_referenced_are_listed_once() {
        assert_eq!(
            referenced_vars(r#"{"a": "${X} ${workspaceFolder} ${X} ${Y_2}"}"#),
            ["X", "Y_2"]
        );
    }
}
