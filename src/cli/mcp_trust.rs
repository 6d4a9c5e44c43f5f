//! `atip mcp trust` / `atip mcp untrust`, the terminal prompt for an untrusted project
//! `.mcp.json`, and the one place the CLI loads the MCP config (with trust applied).
//! The rules live in `atip::mcp::trust`; here are only flags, prompts and rendering.

use crate::Ctx;
use atip::mcp::config::{ConfigPaths, Loader, McpConfig};
use atip::mcp::trust::{ProjectFile, TrustStatus, TrustStore};
use atip::output::ExitStatus;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, ErrorCode};
use serde_json::{Value, json};
use std::fmt::Write as _;

use std::path::{Path, PathBuf};

/// `atip mcp trust`.
#[derive(Debug, clap::Args)]
pub struct TrustArgs {
    /// The project config to trust (default: the nearest .mcp.json from the working
    /// directory upwards).
    #[arg(value_name = "PATH", conflicts_with = "list")]
    path: Option<PathBuf>,
    /// Let `${NAME}` in this file expand from the environment (repeatable; no other
    /// variable is expanded in a project file).
    #[arg(long = "allow-env", value_name = "NAME", conflicts_with = "list")]
    allow_env: Vec<String>,
    /// List the trusted files instead, with whether each still matches.
    #[arg(long)]
    list: bool,
}

/// `atip mcp untrust`.
#[derive(Debug, clap::Args)]
pub struct UntrustArgs {
    /// The project config to forget (default: the nearest .mcp.json from the working
    /// directory upwards).
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
}

fn cwd() -> Result<PathBuf, AtipError> {
    std::env::current_dir().map_err(|e| AtipError::new(ErrorCode::CwdUnavailable, e.to_string()))
}

/// The file named, else the nearest `.mcp.json`, else `./mcp-cli/config.*` (`mcp`'s).
fn target(path: Option<PathBuf>, ctx: &Ctx) -> Result<PathBuf, AtipError> {
    match path {
        Some(p) => Ok(p),
        None => {
            let found = ConfigPaths::locate(&ctx.dirs.config, &cwd()?, &ctx.env);
            found.project.or(found.cli_project).ok_or_else(|| {
                AtipError::new(
                    ErrorCode::InputNotFound,
                    "no .mcp.json in the working directory or above, and no mcp-cli/config.json|yaml|yml here",
                )
                .hint("name the file: atip mcp trust PATH")
            })
        }
    }
}

fn read_file(path: &Path) -> Result<ProjectFile, AtipError> {
    ProjectFile::read(path).map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound {
            ErrorCode::InputNotFound
        } else {
            ErrorCode::InputUnreadable
        };
        AtipError::new(code, format!("failed to read {}: {e}", path.display()))
    })
}

/// Text from a file someone else wrote, made safe for a terminal: control characters
/// and bidirectional overrides become `\u{…}` escapes, so a name cannot redraw the
/// prompt.
pub fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control()
            || ('\u{202a}'..='\u{202e}').contains(&c)
            || ('\u{2066}'..='\u{2069}').contains(&c)
        {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    out
}

/// What a project file declares, as written (nothing expanded), one server a line.
fn describe_servers(file: &ProjectFile) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(Value::Object(doc)) = atip::mcp::config::parse_document(&file.path, &file.bytes) else {
        return vec!["(not valid JSON or YAML)".into()];
    };
    for key in ["mcpServers", "servers"] {
        for (name, entry) in doc
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let what = if let Some(url) = entry.get("url").and_then(Value::as_str) {
                format!("http {url}")
            } else {
                let mut words = vec![
                    entry
                        .get("command")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                        .to_string(),
                ];
                for a in entry
                    .get("args")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    words.push(
                        a.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| a.to_string()),
                    );
                }
                format!("runs {}", words.join(" "))
            };
            out.push(printable(&format!("{name}: {what}")));
        }
    }
    out
}

/// Reads the merged config with trust applied; no printing.
pub fn read_config(ctx: &Ctx) -> Result<McpConfig, AtipError> {
    let paths = ConfigPaths::locate(&ctx.dirs.config, &cwd()?, &ctx.env);
    let store = TrustStore::load(&ctx.dirs.config)?;
    let lookup = |n: &str| ctx.env.var(n).map(str::to_owned);
    Loader { lookup: &lookup }.load(&paths, &store)
}

/// The merged config for a command; prints its warnings and, when the project file is
/// not used, why. With `ask`, an untrusted or changed project file is offered for trust
/// on the terminal first (never when stdin or stderr is not a terminal).
pub fn load(ctx: &Ctx, ask: bool) -> Result<McpConfig, AtipError> {
    load_with(ctx, ask, &|| read_config(ctx))
}

/// [`load`] with another reader (`mcp`'s files): each project file it finds that is
/// untrusted or changed is offered for trust on the terminal, then `read` runs again.
pub fn load_with(
    ctx: &Ctx,
    ask: bool,
    read: &dyn Fn() -> Result<McpConfig, AtipError>,
) -> Result<McpConfig, AtipError> {
    let mut cfg = read()?;
    if ask {
        let offered: Vec<PathBuf> = cfg
            .projects()
            .filter(|p| matches!(p.status, TrustStatus::Untrusted | TrustStatus::Changed))
            .map(|p| p.path.clone())
            .collect();
        let mut any = false;
        for path in offered {
            any |= prompt_trust(&path, ctx)?;
        }
        if any {
            cfg = read()?;
        }
    }
    ctx.out.warnings(&cfg.warnings);
    note_untrusted(&cfg, ctx);
    Ok(cfg)
}

/// The stderr note for a project file that is not used.
pub fn note_untrusted(cfg: &McpConfig, ctx: &Ctx) {
    for p in cfg.projects() {
        let Some(note) = p.note() else { continue };
        if p.status == TrustStatus::Refused {
            ctx.out.warn(printable(&note));
        } else {
            ctx.out.note(format_args!(
                "{} ({})",
                printable(&note),
                printable(&p.trust_hint())
            ));
        }
    }
}

/// Asks on /dev/tty whether to trust `path`; records the answer `y`. `false` when there
/// is no terminal to ask on.
fn prompt_trust(path: &Path, ctx: &Ctx) -> Result<bool, AtipError> {
    use super::ask::{Needs, can_ask, confirm};
    if !can_ask(Needs::StdinAndStderr) {
        return Ok(false);
    }
    let file = read_file(path)?;
    if file.problem.is_some() {
        return Ok(false);
    }
    let mut q = format!(
        "atip: {} (sha256 {}) declares MCP servers that atip would start:\n",
        printable(&file.path.display().to_string()),
        &file.sha256[..16]
    );
    for line in describe_servers(&file) {
        let _ = writeln!(q, "  {line}");
    }
    let vars = atip::mcp::trust::referenced_vars(&String::from_utf8_lossy(&file.bytes));
    if !vars.is_empty() {
        let _ = writeln!(
            q,
            "  it references {}; none is expanded unless you run `atip mcp trust --allow-env NAME`",
            printable(&vars.join(", "))
        );
    }
    q.push_str("Trust this exact file (any change asks again)? [y/N]: ");
    if confirm(&q, Needs::StdinAndStderr) != Some(true) {
        return Ok(false);
    }
    let mut store = TrustStore::load(&ctx.dirs.config)?;
    store.trust(&file, Vec::new())?;
    store.save()?;
    Ok(true)
}

/// `atip mcp trust [PATH] [--allow-env NAME]…` and `atip mcp trust --list`.
pub fn trust(a: TrustArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    if a.list {
        return list(ctx);
    }
    let path = target(a.path, ctx)?;
    let file = read_file(&path)?;
    let mut store = TrustStore::load(&ctx.dirs.config)?;
    store.trust(&file, a.allow_env.clone())?;
    // Refuse content that would not load: trusting it would only move the error.
    let lookup = |n: &str| ctx.env.var(n).map(str::to_owned);
    let mut probe = McpConfig::default();
    Loader { lookup: &lookup }.merge_project(&mut probe, &file, &store)?;
    store.save()?;
    let vars = atip::mcp::trust::referenced_vars(&String::from_utf8_lossy(&file.bytes));
    let not_allowed: Vec<&String> = vars.iter().filter(|v| !a.allow_env.contains(v)).collect();
    let servers: Vec<&String> = probe.servers.keys().collect();
    if ctx.output.is_json() {
        ctx.out.json(&json!({"trusted": {
            "path": file.canonical, "sha256": file.sha256, "allowEnv": a.allow_env,
            "servers": servers, "notExpanded": not_allowed}}))?;
    } else {
        let verbose = ctx.out.verbosity() >= atip::output::Verbosity::Verbose;
        ctx.out
            .text(&trusted_text(&file, servers.len(), verbose, ctx))?;
    }
    if !not_allowed.is_empty() {
        ctx.out.note(format_args!(
            "not expanded (stay literal): {}; allow one with --allow-env NAME",
            printable(
                &not_allowed
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        ));
    }
    ctx.out.warnings(&probe.warnings);
    Ok(ExitStatus::Success)
}

fn list(ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let store = TrustStore::load(&ctx.dirs.config)?;
    let rows: Vec<Value> = store
        .records
        .iter()
        .map(|r| {
            let status = match ProjectFile::read(&r.path) {
                Ok(f) => store.status(&f).as_str(),
                Err(_) => "missing",
            };
            json!({"path": r.path, "sha256": r.sha256, "allowEnv": r.allow_env,
                   "trustedAt": r.trusted_at, "status": status})
        })
        .collect();
    if ctx.output.is_json() {
        ctx.out.json(&json!({"trusted": rows}))?;
    } else if rows.is_empty() {
        ctx.out.note("no project config is trusted");
    } else {
        ctx.out.text(&list_text(&rows, ctx))?;
    }
    Ok(ExitStatus::Success)
}

/// The paint of stdout text.
fn style(ctx: &Ctx) -> Style {
    Style::new(ctx.out.stdout_color())
}

/// `mcp trust` for a person: the verdict, the file, its hash (short; whole with
/// `verbose`), then each server it declares as written (nothing expanded).
fn trusted_text(file: &ProjectFile, servers: usize, verbose: bool, ctx: &Ctx) -> String {
    let mut t = style(ctx).paint(
        Some(Paint::Bold),
        &format!(
            "✓ Trusted {} ({})",
            printable(&file.path.display().to_string()),
            term::plural(servers, "server", "servers")
        ),
    );
    t.push('\n');
    let sha = if verbose {
        file.sha256.clone()
    } else {
        format!("{}…", &file.sha256[..16.min(file.sha256.len())])
    };
    let mut d = format!(
        "  file    {}\n  sha256  {sha} (a change to the file needs trusting again)\n",
        printable(&file.canonical.display().to_string())
    );
    let mut t2 = String::new();
    for (i, line) in describe_servers(file).iter().enumerate() {
        let lead = if i == 0 { "  servers " } else { "          " };
        let line = format!("{lead}{line}");
        if verbose {
            t2.push_str(&term::wrap_long_lines(&format!("{line}\n"), ctx.width));
        } else {
            t2.push_str(&term::fit(&line, ctx.width));
            t2.push('\n');
        }
    }
    d = term::wrap_long_lines(&d, ctx.width);
    t.push_str(&d);
    t.push_str(&t2);
    t
}

/// `mcp trust --list` for a person: one row per trusted file with whether it is still
/// as trusted, and a count.
fn list_text(rows: &[Value], ctx: &Ctx) -> String {
    let mut table = Table::new(Some(&["FILE", "STATUS", "SHA256", "ALLOWED ENV"]))
        .flex(0)
        .shrink(3, 12);
    for r in rows {
        let sha = r["sha256"].as_str().unwrap_or("");
        let status = r["status"].as_str().unwrap_or("");
        table.row(vec![
            Cell::new(printable(r["path"].as_str().unwrap_or(""))),
            Cell::painted(status, (status != "trusted").then_some(Paint::Yellow)),
            Cell::new(&sha[..16.min(sha.len())]),
            Cell::new(printable(
                &r["allowEnv"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", ")
                    })
                    .unwrap_or_default(),
            )),
        ]);
    }
    let mut t = table.render(ctx.width, style(ctx));
    t.push_str(&style(ctx).paint(
        Some(Paint::Dim),
        &term::plural(
            rows.len(),
            "trusted project config",
            "trusted project configs",
        ),
    ));
    t.push('\n');
    t
}

/// `atip mcp untrust [PATH]`.
pub fn untrust(a: UntrustArgs, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let path = target(a.path, ctx)?;
    // A deleted file can still be forgotten: resolve its directory instead.
    let canonical =
        std::fs::canonicalize(&path).or_else(|e| match (path.parent(), path.file_name()) {
            (Some(dir), Some(name)) => {
                let dir = if dir.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    dir
                };
                std::fs::canonicalize(dir).map(|d| d.join(name))
            }
            _ => Err(e),
        });
    let canonical = canonical.map_err(|e| {
        AtipError::new(ErrorCode::InputNotFound, format!("{}: {e}", path.display()))
    })?;
    let mut store = TrustStore::load(&ctx.dirs.config)?;
    let removed = store.untrust(&canonical);
    if removed {
        store.save()?;
    }
    if ctx.output.is_json() {
        ctx.out
            .json(&json!({"untrusted": {"path": canonical, "removed": removed}}))?;
    } else if removed {
        let mut t = style(ctx).paint(
            Some(Paint::Bold),
            &format!(
                "✓ Untrusted {}",
                printable(&canonical.display().to_string())
            ),
        );
        t.push_str("\n  its servers are not started until it is trusted again\n");
        ctx.out.text(&term::wrap_long_lines(&t, ctx.width))?;
    } else {
        ctx.out.note(format_args!(
            "{} was not trusted",
            printable(&canonical.display().to_string())
        ));
    }
    Ok(ExitStatus::Success)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_cannot_redraw_the_prompt() {
        assert_eq!(
            printable("a\rb\u{1b}[2Kc\u{202e}d"),
            "a\\u{d}b\\u{1b}[2Kc\\u{202e}d"
        );
        assert_eq!(printable("plain /x y"), "plain /x y");
    }
}
