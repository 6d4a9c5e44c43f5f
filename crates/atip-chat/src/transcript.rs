//! `--transcript FILE`: every message of the conversation as it happens, one JSON object
//! per line, secrets redacted, so a run can be read back or replayed after the fact.
//!
//! Lines: first `{"transcript":"atip-chat/1", provider, model, url, tools}`, then
//! `{"turn": N, "message": …}` for each message in the API's own shape (turn 0 is the
//! prompt), last `{"end": {stopReason, answer?}}`. Each line is flushed when written, so
//! a run cut short leaves a readable file. Must not decide anything about the loop.

use crate::exec::redact::Redactor;
use crate::output::{AtipError, ErrorCode};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An open transcript file.
pub struct Transcript {
    file: std::fs::File,
    path: PathBuf,
    redactor: Redactor,
    failed: bool,
}

impl Transcript {
    /// Creates (or truncates) the file, readable by its owner only: it holds tool output.
    pub fn create(path: &Path, redactor: Redactor) -> Result<Transcript, AtipError> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                AtipError::new(
                    ErrorCode::FileWriteFailed,
                    format!("failed to create transcript {}: {e}", path.display()),
                )
            })?;
        Ok(Transcript {
            file,
            path: path.to_path_buf(),
            redactor,
            failed: false,
        })
    }

    /// Writes the header line.
    pub(crate) fn header(&mut self, provider: &str, model: &str, url: &str, tools: &[String]) {
        self.line(json!({"transcript": "atip-chat/1", "provider": provider, "model": model, "url": url, "tools": tools}));
    }

    /// Writes the messages added in `turn`.
    pub(crate) fn messages(&mut self, turn: u32, messages: &[Value]) {
        for m in messages {
            self.line(json!({"turn": turn, "message": m}));
        }
    }

    /// Writes the closing line.
    pub(crate) fn end(&mut self, stop_reason: &str, answer: Option<&str>) {
        let mut end = json!({"stopReason": stop_reason});
        if let Some(a) = answer {
            end["answer"] = a.into();
        }
        self.line(json!({ "end": end }));
    }

    fn line(&mut self, mut v: Value) {
        if self.failed {
            return;
        }
        self.redactor.redact_json(&mut v);
        let mut text = serde_json::to_string(&v).unwrap_or_default();
        text.push('\n');
        if let Err(e) = self
            .file
            .write_all(text.as_bytes())
            .and_then(|_| self.file.flush())
        {
            // One warning, then the chat goes on without its transcript.
            self.failed = true;
            log::warn!(
                "failed to write transcript {}: {e}; not writing it further",
                self.path.display()
            );
        }
    }
}
