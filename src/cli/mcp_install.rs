//! `atip mcp install|uninstall --host H`: flags, file I/O, backup and rendering. The
//! edit itself (which bytes change) is `atip::mcp::install`.

use crate::Ctx;
use atip::atomic::{Options, write_atomic};
use atip::mcp::install::{Env, Host, Scope};
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode};
use serde_json::json;
use std::path::{Path, PathBuf};

/// `atip mcp install` / `atip mcp uninstall`.
#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The agent host whose config file gets atip's server entry.
    #[arg(long, value_enum)]
    host: Host,
    /// The user's config file or the project's (working directory).
    #[arg(long, value_enum, default_value = "user")]
    scope: Scope,
    /// Edit this file instead of the host's documented location.
    #[arg(long, value_name = "FILE")]
    config_file: Option<PathBuf>,
    /// Show the change as a diff; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// The program the host starts (install; default: this atip's own path).
    #[arg(long, value_name = "PATH")]
    program: Option<PathBuf>,
}

/// The backup beside the edited file: the file as it was before atip's last change.
fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".atip.bak");
    path.with_file_name(name)
}

fn read(path: &Path) -> Result<Option<String>, AtipError> {
    match std::fs::read(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AtipError::new(
            ErrorCode::InputUnreadable,
            format!("failed to read {}: {e}", path.display()),
        )),
        Ok(b) => String::from_utf8(b).map(Some).map_err(|_| {
            AtipError::new(
                ErrorCode::McpHostConfigInvalid,
                format!("{} is not UTF-8 text; it was not changed", path.display()),
            )
        }),
    }
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), AtipError> {
    write_atomic(
        path,
        text.as_bytes(),
        Options {
            mode,
            durable: true,
        },
    )
    .map_err(|e| AtipError::new(ErrorCode::FileWriteFailed, e.to_string()))
}

/// Runs install (`add`) or uninstall.
pub fn run(a: InstallArgs, add: bool, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let usage = |m: String| AtipError::new(ErrorCode::Usage, m);
    let env = Env {
        home: ctx
            .env
            .var_os("HOME")
            .map(PathBuf::from)
            .ok_or_else(|| usage("HOME is not set; give --config-file".into()))?,
        xdg_config: ctx.env.absolute_path("XDG_CONFIG_HOME"),
        codex_home: ctx.env.var_os("CODEX_HOME").map(PathBuf::from),
        cwd: std::env::current_dir().map_err(|e| usage(e.to_string()))?,
    };
    let path = match &a.config_file {
        Some(p) => p.clone(),
        None => a.host.location(a.scope, &env).map_err(usage)?,
    };
    // A config kept as a link (dotfiles) is edited where it lives, the link kept.
    let path = std::fs::canonicalize(&path).unwrap_or(path);
    let old = read(&path)?;
    let invalid = |m: String| {
        AtipError::new(
            ErrorCode::McpHostConfigInvalid,
            format!("{}: {m}; it was not changed", path.display()),
        )
    };
    let backup = backup_path(&path);
    let new = if add {
        let program = match &a.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()
                .and_then(std::fs::canonicalize)
                .map_err(|e| usage(format!("cannot find atip's own path ({e}); give --program")))?,
        };
        if !program.is_absolute() {
            return Err(usage("--program must be an absolute path".into()));
        }
        let entry = a.host.entry(&program.to_string_lossy());
        a.host.install(old.as_deref(), &entry).map_err(invalid)?
    } else {
        match &old {
            None => None,
            Some(text) => {
                let before = read(&backup).ok().flatten();
                a.host.uninstall(text, before.as_deref()).map_err(invalid)?
            }
        }
    };
    let diff = new
        .as_deref()
        .map(|n| atip::mcp::install::diff(&path, old.as_deref().unwrap_or(""), n));
    let wrote_backup = if let (Some(n), false) = (&new, a.dry_run) {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or(0o600);
        if let Some(o) = &old {
            write(&backup, o, mode)?;
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| {
                AtipError::new(
                    ErrorCode::FileWriteFailed,
                    format!("{}: {e}", dir.display()),
                )
            })?;
        }
        write(&path, n, mode)?;
        old.is_some()
    } else {
        false
    };
    if ctx.output.is_json() {
        ctx.out.json(&json!({
            "host": a.host,
            "scope": a.scope,
            "file": path,
            "action": if add { "install" } else { "uninstall" },
            "changed": new.is_some(),
            "dryRun": a.dry_run,
            "backup": wrote_backup.then_some(&backup),
            "diff": diff,
        }))?;
    } else if let Some(d) = &diff {
        if a.dry_run {
            ctx.out.text(d)?;
        } else {
            let what = if add {
                "installed atip into"
            } else {
                "removed atip from"
            };
            ctx.out.text(&format!("{what} {}\n", path.display()))?;
            if wrote_backup {
                ctx.out
                    .note(format_args!("the file as it was: {}", backup.display()));
            }
        }
    } else {
        let why = if add {
            "already has atip's entry"
        } else {
            "has no atip entry"
        };
        ctx.out
            .note(format_args!("{} {why}; nothing changed", path.display()));
    }
    Ok(ExitStatus::Success)
}
