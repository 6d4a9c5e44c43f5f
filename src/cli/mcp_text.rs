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

/// What `mcp describe` shows of one tool, besides the tool itself.
pub struct Described<'a> {
    /// The server's name.
    pub server: &'a str,
    /// The name atip's tools call it by (`mcp__SERVER__TOOL`).
    pub call_as: String,
    /// The policy's action for a call, in words (`allow`, `confirm`, `deny`).
    pub action: String,
    /// Why, when a rule applied.
    pub why: String,
    /// Whether the server's annotations are believed.
    pub trust_hints: bool,
}

/// One tool of a server as a page: name, title, how to call it, effects and the
/// policy's verdict, the description, the parameters as a table; the schemas and
/// annotations as JSON with `verbose`.
pub fn describe(
    tool: &rmcp::model::Tool,
    d: &Described<'_>,
    verbose: bool,
    width: Option<usize>,
    style: Style,
) -> String {
    let mut t = String::new();
    let fit = |s: &str| term::fit(s, width);
    let head = format!(
        "{} ({})",
        term::one_line(&tool.name),
        term::one_line(d.server)
    );
    let _ = writeln!(t, "{}", style.paint(Some(Paint::Bold), &fit(&head)));
    if let Some(title) = &tool.title {
        t.push_str(&term::wrap("title: ", title, width, 7));
    }
    let _ = writeln!(
        t,
        "{}",
        fit(&format!("call as: {}", term::one_line(&d.call_as)))
    );
    let effects = tools::to_flat(d.server, tool, d.trust_hints)
        .effects
        .summary();
    let _ = writeln!(
        t,
        "effects: {}",
        style.paint(term::effects_paint(&effects), &fit(&effects))
    );
    let policy = if d.why.is_empty() {
        d.action.clone()
    } else {
        format!("{} ({})", d.action, d.why)
    };
    t.push_str(&term::wrap("policy: ", &policy, width, 8));
    if let Some(desc) = tool.description.as_deref().filter(|s| !s.trim().is_empty()) {
        t.push('\n');
        for para in desc.lines().filter(|l| !l.trim().is_empty()) {
            t.push_str(&term::wrap("", para, width, 0));
        }
    }
    let schema = tools::input_schema(tool);
    t.push('\n');
    let table = parameters(&schema);
    if table.is_empty() {
        let _ = writeln!(t, "No parameters.");
    } else {
        let _ = writeln!(t, "{}", style.paint(Some(Paint::Bold), "Parameters"));
        t.push_str(&table.render(width, style));
    }
    if verbose {
        t.push_str(&as_json(tool, &schema));
    } else if tool.output_schema.is_some() || tool.annotations.is_some() {
        t.push('\n');
        t.push_str(&term::wrap(
            "",
            "The input and output schemas and the annotations as JSON: run again with --verbose",
            width,
            0,
        ));
    }
    t
}

/// A tool's parameters from its input schema: name, type, whether required, description.
fn parameters(schema: &serde_json::Value) -> Table {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(serde_json::Value::as_str).collect())
        .unwrap_or_default();
    let mut table = Table::new(Some(&["PARAMETER", "TYPE", "REQUIRED", "DESCRIPTION"]))
        .indent(2)
        .flex(3)
        .shrink(1, 12);
    for (name, p) in schema["properties"].as_object().into_iter().flatten() {
        table.row(vec![
            Cell::painted(term::one_line(name), Some(Paint::Bold)),
            Cell::new(type_of(p)),
            Cell::new(if required.contains(&name.as_str()) {
                "yes"
            } else {
                "no"
            }),
            Cell::new(term::one_line(p["description"].as_str().unwrap_or(""))),
        ]);
    }
    table
}

/// `--verbose`: the input and output schemas, pretty-printed with control characters
/// escaped, and the annotations on one line.
fn as_json(tool: &rmcp::model::Tool, schema: &serde_json::Value) -> String {
    let mut t = String::new();
    let pretty = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default();
    let _ = writeln!(
        t,
        "\ninput schema: {}",
        atip::output::text::escape_controls_keep_lines(&pretty(schema))
    );
    if let Some(o) = &tool.output_schema {
        let v = serde_json::Value::Object((**o).clone());
        let _ = writeln!(
            t,
            "output schema: {}",
            atip::output::text::escape_controls_keep_lines(&pretty(&v))
        );
    }
    if let Some(a) = &tool.annotations {
        let v = serde_json::to_value(a).unwrap_or_default();
        let _ = writeln!(t, "annotations: {}", term::one_line(&v.to_string()));
    }
    t
}

/// A parameter's type in a few words: `string`, `array of string`, `one of: a, b`.
fn type_of(p: &serde_json::Value) -> String {
    if let Some(values) = p["enum"].as_array() {
        let words: Vec<String> = values
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string))
            .collect();
        return term::one_line(&format!("one of: {}", words.join(", ")));
    }
    match p["type"].as_str() {
        Some("array") => match p["items"]["type"].as_str() {
            Some(item) => format!("array of {item}"),
            None => "array".into(),
        },
        Some(t) => t.to_string(),
        None => p["type"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter_map(serde_json::Value::as_str)
                    .collect::<Vec<_>>()
                    .join(" or ")
            })
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "any".into()),
    }
}

/// What `atip mcp ping` learnt, for [`ping`].
pub struct Ping<'a> {
    /// The server's name in the config.
    pub server: &'a str,
    /// stdio or http.
    pub transport: &'a str,
    /// The server's `initialize` answer.
    pub info: &'a serde_json::Value,
    /// Time to connect and initialize.
    pub connect_ms: u128,
    /// Round trip of the ping, in milliseconds.
    pub rtt_ms: f64,
}

/// `atip mcp ping` for a person: who answered first, then how fast, what it offers and
/// (the first line of; whole with `verbose`) its instructions.
pub fn ping(p: &Ping<'_>, verbose: bool, width: Option<usize>, style: Style) -> String {
    let field = |ptr: &str| {
        p.info
            .pointer(ptr)
            .and_then(serde_json::Value::as_str)
            .map(term::one_line)
    };
    let who = [field("/serverInfo/name"), field("/serverInfo/version")]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let mut t = style.paint(
        Some(Paint::Bold),
        &format!(
            "✓ {} answered: {}",
            term::one_line(p.server),
            if who.is_empty() { "(no name)" } else { &who }
        ),
    );
    t.push('\n');
    let mut d = format!(
        "  protocol      {}\n",
        field("/protocolVersion").unwrap_or_else(|| "?".into())
    );
    let _ = writeln!(d, "  transport     {}", p.transport);
    let _ = writeln!(
        d,
        "  connected in  {} ms; ping {:.2} ms",
        p.connect_ms, p.rtt_ms
    );
    let caps: Vec<String> = p
        .info
        .get("capabilities")
        .and_then(serde_json::Value::as_object)
        .map(|m| m.keys().map(|k| term::one_line(k)).collect())
        .unwrap_or_default();
    let _ = writeln!(
        d,
        "  capabilities  {}",
        if caps.is_empty() {
            "none".to_string()
        } else {
            caps.join(", ")
        }
    );
    t.push_str(&term::wrap_long_lines(&d, width));
    if let Some(i) = p
        .info
        .get("instructions")
        .and_then(serde_json::Value::as_str)
        && !i.trim().is_empty()
    {
        if verbose {
            t.push_str("  instructions\n");
            for line in atip::output::text::escape_controls_keep_lines(i).lines() {
                t.push_str(&term::wrap_whole("    ", line, width, 4));
            }
        } else {
            let first = format!("  instructions  {}", term::one_line(i));
            t.push_str(&term::fit(&first, width));
            t.push('\n');
        }
    }
    t
}

/// `atip mcp import` for a person: how many servers came (or would come) from which
/// file into which, their names, then those left out and why.
pub fn import(r: &atip::mcp::import::ImportReport, width: Option<usize>, style: Style) -> String {
    let verb = if r.dry_run {
        "Would import"
    } else {
        "Imported"
    };
    let mut t = style.paint(
        Some(Paint::Bold),
        &format!(
            "{} {verb} {}",
            if r.imported.is_empty() { "!" } else { "✓" },
            term::plural(r.imported.len(), "MCP server", "MCP servers")
        ),
    );
    t.push('\n');
    let mut d = String::new();
    if !r.imported.is_empty() {
        let _ = writeln!(d, "  servers  {}", term::some_names(&r.imported, 12));
    }
    let _ = writeln!(d, "  from     {}", r.source.display());
    let _ = writeln!(
        d,
        "  into     {}{}",
        r.target.display(),
        if r.dry_run { " (nothing written)" } else { "" }
    );
    t.push_str(&term::wrap_long_lines(&d, width));
    if !r.skipped.is_empty() {
        t.push('\n');
        t.push_str(&style.paint(
            Some(Paint::Bold),
            &format!("Left out ({})", term::count(r.skipped.len())),
        ));
        t.push('\n');
        let mut table = Table::new(None).indent(2).flex(1).shrink(0, 12);
        for (name, why) in &r.skipped {
            table.row(vec![
                Cell::painted(term::one_line(name), Some(Paint::Bold)),
                Cell::new(term::one_line(why)),
            ]);
        }
        t.push_str(&table.render(width, style));
    }
    t
}
