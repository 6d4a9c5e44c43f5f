//! The audit log: one JSON object per line, appended to `<state>/audit.jsonl`
//! (`$XDG_STATE_HOME/agent-tools/audit.jsonl`, or `ATIP_STATE_DIR`), for every call
//! that may have side effects, whether it ran, was refused or failed.
//!
//! Records are redacted before they reach this module; it only serializes and appends.
//! Each record is written with a single `write` on a file opened in append mode, so
//! records from concurrent atip processes do not interleave. Must not decide policy.

use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// File name of the log inside the state directory.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AuditRecord {
    /// When the call finished (RFC 3339, UTC, milliseconds).
    pub time: String,
    /// `exec`, `mcp` or `chat`.
    pub via: &'static str,
    /// The MCP client's `name/version`, when it told; `provider/model` for `chat`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// Process id of the atip process that ran the call.
    pub pid: u32,
    /// User id it ran as.
    pub uid: u32,
    /// Provider call id, when the call came from a provider response or MCP request.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// Flattened tool name, e.g. `gh_pr_create`.
    pub tool: String,
    /// Command path as typed, e.g. `gh pr create`.
    pub command: String,
    /// Absolute path of the executable.
    pub program: String,
    /// Arguments after the program, redacted.
    pub argv: Vec<String>,
    /// Policy decision: `allow`, `confirmed`, `deny`, `needs-confirmation`, `dry-run`.
    pub decision: String,
    /// The policy rules that applied (`effects.destructive`, `tools.deny`, ...).
    pub rules: Vec<String>,
    /// The call conditions that set this call's effects (`--force: destructive`, a
    /// sandbox atip added), as the decision names them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<String>,
    /// `exited`, `signal`, `timeout`, `cancelled`, `refused`, `failed`, `dry-run`.
    pub outcome: String,
    /// The tool's exit code, when it exited.
    pub exit_code: Option<i32>,
    /// Wall time of the child in milliseconds (0 when nothing ran).
    pub duration_ms: u64,
    /// atip error code when the call failed before or around the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Appends records to the log file.
#[derive(Debug, Clone)]
pub struct AuditLog {
    path: PathBuf,
}

impl AuditLog {
    /// The log inside a state directory.
    pub fn in_dir(state: &Path) -> AuditLog {
        AuditLog {
            path: state.join(AUDIT_FILE),
        }
    }

    /// Path of the log file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record (creating the directory and a 0600 file on first use).
    pub fn append(&self, record: &AuditRecord) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut line = serde_json::to_vec(record).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)?;
        file.write_all(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        use crate::timestamp::rfc3339_millis;
        use std::time::{Duration, UNIX_EPOCH};
        let at = |secs: u64, ms: u64| UNIX_EPOCH + Duration::from_millis(secs * 1000 + ms);
        assert_eq!(rfc3339_millis(at(0, 0)), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            rfc3339_millis(at(951_782_400, 5)),
            "2000-02-29T00:00:00.005Z"
        );
        assert_eq!(
            rfc3339_millis(at(1_795_734_604, 123)),
            "2026-11-26T23:10:04.123Z"
        );
    }

    #[test]
    fn appends_lines() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::in_dir(&dir.path().join("state"));
        let rec = AuditRecord {
            time: crate::timestamp::rfc3339_millis_now(),
            via: "exec",
            client: None,
            pid: 1,
            uid: 0,
            call_id: None,
            tool: "t_x".into(),
            command: "t x".into(),
            program: "/bin/t".into(),
            argv: vec!["x".into()],
            decision: "allow".into(),
            rules: vec![],
            conditions: vec![],
            outcome: "exited".into(),
            exit_code: Some(0),
            duration_ms: 3,
            error: None,
        };
        log.append(&rec).unwrap();
        log.append(&rec).unwrap();
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert_eq!(text.lines().count(), 2);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["exitCode"], 0);
        assert_eq!(v["tool"], "t_x");
    }
}
