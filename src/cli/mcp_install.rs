//! `atip mcp install|uninstall --host H`: flags, file I/O, backup and rendering. The
//! edit itself (which bytes change) is `atip::mcp::install`.

use crate::Ctx;
use atip::atomic::{Options, write_atomic};
use atip::mcp::install::{Env, Host, Scope};
use atip::output::ExitStatus;
use atip::output::term::{self, Paint, Style};
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
        Err(e) => Err(atip::fileio::ReadError::at(path)(e).into()),
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
    .map_err(AtipError::from)
}

/// Runs install (`add`) or uninstall.
pub fn run(a: InstallArgs, add: bool, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let path = config_path(&a, ctx)?;
    let old = read(&path)?;
    let backup = backup_path(&path);
    let new = if add {
        installed(&a, &path, old.as_deref())?
    } else {
        uninstalled(&a, &path, old.as_deref(), &backup)?
    };
    let diff = new
        .as_deref()
        .map(|n| atip::mcp::install::diff(&path, old.as_deref().unwrap_or(""), n));
    let wrote_backup = match (&new, a.dry_run) {
        (Some(n), false) => apply(&path, &backup, old.as_deref(), n)?,
        _ => false,
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
        return Ok(ExitStatus::Success);
    }
    let done = Done {
        host: &a.host,
        scope: a.scope,
        add,
        path: &path,
        backup: wrote_backup.then_some(backup.as_path()),
    };
    match &diff {
        // The diff is the data of a dry run (a patch when piped); on a terminal its
        // long lines wrap under themselves.
        Some(d) if a.dry_run => {
            ctx.out.text(&term::wrap_long_lines(d, ctx.width))?;
            ctx.out.note(format_args!(
                "dry run: nothing written; without --dry-run atip {} this change",
                if add { "makes" } else { "undoes" }
            ));
        }
        Some(_) => ctx
            .out
            .text(&done.text(ctx.width, ctx.out.stdout_color()))?,
        None => {
            let why = if add {
                "already has atip's entry"
            } else {
                "has no atip entry"
            };
            ctx.out
                .note(format_args!("{} {why}; nothing changed", path.display()));
        }
    }
    Ok(ExitStatus::Success)
}

/// The host config file to edit: `--config-file`, else the host's documented location
/// for the scope, links followed (a config kept as a link is edited where it lives).
fn config_path(a: &InstallArgs, ctx: &Ctx) -> Result<PathBuf, AtipError> {
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
        None => a.host.location(a.scope, &env)?,
    };
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

fn usage(m: String) -> AtipError {
    AtipError::new(ErrorCode::Usage, m)
}

/// The file with atip's entry added (`None`: it is there already).
fn installed(a: &InstallArgs, path: &Path, old: Option<&str>) -> Result<Option<String>, AtipError> {
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
    Ok(a.host.install(old, &entry).map_err(|e| e.in_file(path))?)
}

/// The file with atip's entry taken out (`None`: there is none), restored as the backup
/// had it where the host allows.
fn uninstalled(
    a: &InstallArgs,
    path: &Path,
    old: Option<&str>,
    backup: &Path,
) -> Result<Option<String>, AtipError> {
    match old {
        None => Ok(None),
        Some(text) => {
            let before = read(backup).ok().flatten();
            a.host
                .uninstall(text, before.as_deref())
                .map_err(|e| e.in_file(path).into())
        }
    }
}

/// Writes the new file, after a backup of the old one with the same mode; returns
/// whether a backup was written.
fn apply(path: &Path, backup: &Path, old: Option<&str>, new: &str) -> Result<bool, AtipError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o600);
    if let Some(o) = old {
        write(backup, o, mode)?;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| atip::atomic::WriteError {
            path: dir.to_owned(),
            source,
        })?;
    }
    write(path, new, mode)?;
    Ok(old.is_some())
}

/// A change made, as a person reads it.
struct Done<'a> {
    host: &'a Host,
    scope: Scope,
    add: bool,
    path: &'a Path,
    backup: Option<&'a Path>,
}

impl Done<'_> {
    /// The verdict first, the file and its backup, what happens next.
    fn text(&self, width: Option<usize>, color: bool) -> String {
        let host = clap::ValueEnum::to_possible_value(self.host)
            .map(|v| v.get_name().to_string())
            .unwrap_or_default();
        let scope = match self.scope {
            Scope::User => "user",
            Scope::Project => "project",
        };
        let head = if self.add {
            format!("✓ Installed atip as an MCP server of {host} ({scope} config)")
        } else {
            format!("✓ Removed atip from {host} ({scope} config)")
        };
        let mut t = Style::new(color).paint(Some(Paint::Bold), &head);
        t.push('\n');
        t.push_str(&format!("  file    {}\n", self.path.display()));
        if let Some(b) = self.backup {
            t.push_str(&format!("  backup  {} (the file as it was)\n", b.display()));
        }
        t.push('\n');
        t.push_str(if self.add {
            "Next: restart the host (or reload its MCP servers) to see atip's tools\n"
        } else {
            "Next: restart the host (or reload its MCP servers)\n"
        });
        term::wrap_long_lines(&t, width)
    }
}
