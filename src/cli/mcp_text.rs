//! What `atip mcp servers` and `atip mcp tools` print for a person (spec/cli.md,
//! terminal output): tables fitting the terminal, the effects of each tool in the words
//! `list` uses, a count line. Text from servers and config files is shown with its
//! control characters escaped. JSON output is `cli::mcp`'s, unchanged.

use atip::mcp::config::{McpConfig, ServerSpec};
use atip::mcp::tools;
use atip::output::term::{self, Cell, Paint, Style, Table};
use std::fmt::Write as _;

/// The configured servers: name, transport, whether it is the default or why it is not
/// used, what runs (command or URL, secrets redacted) and the file it comes from.
pub fn servers(cfg: &McpConfig, width: Option<usize>, style: Style) -> String {
    let mut table = Table::new(Some(&["NAME", "TRANSPORT", "STATUS", "SERVER", "FROM"]))
        .shrink(4, 16)
        .flex(3)
        .shrink(0, 12);
    for s in cfg.servers.values() {
        let default = cfg.default_server.as_deref() == Some(s.name.as_str());
        table.row(vec![
            Cell::painted(term::one_line(&s.name), Some(Paint::Bold)),
            Cell::new(s.transport.kind()),
            Cell::new(if default { "default" } else { "" }),
            Cell::new(term::one_line(&s.summary())),
            Cell::painted(term::one_line(&s.origin), Some(Paint::Dim)),
        ]);
    }
    for u in &cfg.untrusted {
        table.row(vec![
            Cell::new(term::one_line(&u.name)),
            Cell::new(term::one_line(&u.transport)),
            Cell::painted(u.status.as_str(), Some(Paint::Yellow)),
            Cell::new("(not started: the file is not trusted)"),
            Cell::painted(term::one_line(&u.origin), Some(Paint::Dim)),
        ]);
    }
    let mut t = table.render(width, style);
    let mut count = term::plural(cfg.servers.len(), "server", "servers");
    if !cfg.untrusted.is_empty() {
        let _ = write!(
            count,
            " ({} in a project file not trusted: `atip mcp trust` to use them)",
            term::count(cfg.untrusted.len())
        );
    }
    let count = width.map_or(count.clone(), |w| term::cut(&count, w));
    let _ = writeln!(t, "{}", style.paint(Some(Paint::Dim), &count));
    t
}

/// One server's tool listing, as `mcp tools` prints it.
pub struct Listed<'a> {
    /// The server.
    pub spec: &'a ServerSpec,
    /// Its tools.
    pub tools: &'a [rmcp::model::Tool],
    /// Whether the list came from the cache.
    pub cached: bool,
}

/// The tools of one or more servers: server, tool, effects in words, description.
pub fn tools(listed: &[Listed<'_>], failed: usize, width: Option<usize>, style: Style) -> String {
    let several = listed.len() + failed > 1;
    let mut header = vec!["TOOL", "EFFECTS", "DESCRIPTION"];
    if several {
        header.insert(0, "SERVER");
    }
    let desc = header.len() - 1;
    let mut table = Table::new(Some(&header))
        .flex(desc)
        .shrink(desc - 2, 16)
        .shrink(desc - 1, 12);
    let mut total = 0;
    for l in listed {
        for tool in l.tools {
            let effects = tools::to_flat(&l.spec.name, tool, l.spec.trust_hints)
                .effects
                .summary();
            let mut row = vec![
                Cell::painted(term::one_line(&tool.name), Some(Paint::Bold)),
                Cell::painted(effects.clone(), term::effects_paint(&effects)),
                Cell::new(term::one_line(tool.description.as_deref().unwrap_or(""))),
            ];
            if several {
                row.insert(0, Cell::new(term::one_line(&l.spec.name)));
            }
            table.row(row);
            total += 1;
        }
    }
    let mut t = if table.is_empty() {
        String::new()
    } else {
        table.render(width, style)
    };
    let servers = listed.len() + failed;
    let mut count = format!(
        "{} from {}",
        term::plural(total, "tool", "tools"),
        term::plural(servers, "server", "servers")
    );
    if failed > 0 {
        let _ = write!(count, " ({} failed, see above)", term::count(failed));
    }
    let cached = listed.iter().filter(|l| l.cached).count();
    if cached > 0 {
        let _ = write!(
            count,
            "; {} from the cache (--refresh to ask again)",
            if cached == listed.len() {
                "listed".to_string()
            } else {
                format!("{} listed", term::count(cached))
            }
        );
    }
    let count = width.map_or(count.clone(), |w| term::cut(&count, w));
    let _ = writeln!(t, "{}", style.paint(Some(Paint::Dim), &count));
    t
}
