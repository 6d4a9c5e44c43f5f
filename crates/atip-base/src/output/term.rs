//! Text for a person reading a terminal: the width to fit, cutting with `…` (never
//! wrapping), tables whose widest column gives way, colour only when wanted, and the
//! colour of effects (`spec/cli.md`, terminal output). The words for sources are the
//! binary's (`cli::words`): sources live in a higher layer.
//!
//! Must not decide what is shown; it only says how it fits and looks.

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// The width text on stdout must fit: the terminal's columns when stdout is a terminal,
/// else `COLUMNS` when set (a pipe read by a person, tests), else no limit: text piped
/// into another program keeps whole lines. `COLUMNS` is read from the run's `env`.
pub fn stdout_width(env: &crate::env::Env) -> Option<usize> {
    terminal_columns(libc::STDOUT_FILENO).or_else(|| {
        env.var("COLUMNS")
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&c| c > 0)
    })
}

/// The width diagnostics on stderr must fit: the terminal's columns when stderr is a
/// terminal, else none. `COLUMNS` is not read here: stderr captured into a file or a pipe
/// keeps whole lines, whatever width stdout was given.
pub fn stderr_width() -> Option<usize> {
    terminal_columns(libc::STDERR_FILENO)
}

/// The columns of the terminal `fd` is, when it is one and says so.
fn terminal_columns(fd: libc::c_int) -> Option<usize> {
    // SAFETY: winsize is plain data, zero is a valid value; TIOCGWINSZ only fills it,
    // and fails harmlessly on a descriptor that is not a terminal.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
    (ok && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// The columns `s` takes on a terminal (wide characters count two, combining marks none).
pub fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// One line cut to the terminal's width, or whole when there is none (piped output).
pub fn fit(s: &str, width: Option<usize>) -> String {
    width.map_or_else(|| s.to_string(), |w| cut(s, w))
}

/// `s` cut to at most `max` columns, ending in `…` when anything was cut off.
pub fn cut(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `s` padded with spaces to `cols` columns (never cut).
pub fn pad(s: &str, cols: usize) -> String {
    let mut out = s.to_string();
    out.extend(std::iter::repeat_n(' ', cols.saturating_sub(width(s))));
    out
}

/// `s` as one line a terminal shows as text: its first line, control characters
/// (escape sequences, carriage returns) and bidirectional overrides as visible escapes,
/// runs of blanks as one space.
pub fn one_line(s: &str) -> String {
    let first = s.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let shown = super::text::escape_controls(first.trim());
    shown.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How text is coloured: on only for a terminal and without `NO_COLOR` (the printer
/// decides, [`crate::output::Printer::stdout_color`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Style {
    on: bool,
}

/// A colour or weight, as its SGR parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// Headings and names.
    Bold,
    /// Secondary text: paths, counts that need no action.
    Dim,
    /// Destructive, failed, refused.
    Red,
    /// Read-only.
    Green,
    /// Unknown, needs attention.
    Yellow,
    /// Commands to type.
    Cyan,
}

impl Paint {
    fn sgr(self) -> &'static str {
        match self {
            Paint::Bold => "1",
            Paint::Dim => "2",
            Paint::Red => "31",
            Paint::Green => "32",
            Paint::Yellow => "33",
            Paint::Cyan => "36",
        }
    }
}

impl Style {
    /// Colour when `on`.
    pub fn new(on: bool) -> Style {
        Style { on }
    }

    /// No colour at all.
    pub fn plain() -> Style {
        Style { on: false }
    }

    /// `s` in `paint`, or `s` itself when colour is off.
    pub fn paint(self, paint: Option<Paint>, s: &str) -> String {
        match paint {
            Some(p) if self.on && !s.is_empty() => format!("\x1b[{}m{s}\x1b[0m", p.sgr()),
            _ => s.to_string(),
        }
    }
}

/// The colour an effects summary (as `list` and `get` write it) is shown in: red when
/// something is destroyed or deleted, green when read-only, yellow when unknown.
pub fn effects_paint(summary: &str) -> Option<Paint> {
    if summary.contains("destructive") || summary.contains("deletes") {
        Some(Paint::Red)
    } else if summary == "read-only" {
        Some(Paint::Green)
    } else if summary == "unknown" || summary.starts_with("mixed") {
        Some(Paint::Yellow)
    } else {
        None
    }
}

/// One cell of a [`Table`]: its text and how it is painted.
#[derive(Debug, Clone)]
pub struct Cell {
    text: String,
    paint: Option<Paint>,
}

impl Cell {
    /// Plain text.
    pub fn new(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            paint: None,
        }
    }

    /// Text in a colour.
    pub fn painted(text: impl Into<String>, paint: Option<Paint>) -> Cell {
        Cell {
            text: text.into(),
            paint,
        }
    }
}

/// Rows in aligned columns, two spaces apart. When the rows do not fit the width, the
/// columns named by [`Table::flex`] and [`Table::shrink`] give way in turn (usually a
/// description first), each down to a floor, then every line is cut with `…`: a table
/// never wraps.
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Option<Vec<String>>,
    rows: Vec<Vec<Cell>>,
    shrink: Vec<(usize, usize)>,
    indent: usize,
}

impl Table {
    /// An empty table; `header` is printed bold above the rows when given.
    pub fn new(header: Option<&[&str]>) -> Table {
        Table {
            header: header.map(|h| h.iter().map(|s| s.to_string()).collect()),
            ..Table::default()
        }
    }

    /// Which column gives way first when the table is too wide (down to 12 columns).
    pub fn flex(self, column: usize) -> Table {
        self.shrink(column, 12)
    }

    /// A column that gives way, after those named before it, down to `floor` columns.
    pub fn shrink(mut self, column: usize, floor: usize) -> Table {
        self.shrink.push((column, floor));
        self
    }

    /// Spaces before every line.
    pub fn indent(mut self, cols: usize) -> Table {
        self.indent = cols;
        self
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table's lines, each fitting `max` columns when given.
    pub fn render(&self, max: Option<usize>, style: Style) -> String {
        let widths = self.column_widths(max);
        let mut out = String::new();
        if let Some(h) = &self.header {
            let cells = h.iter().map(|s| (s.clone(), Some(Paint::Bold))).collect();
            out.push_str(&self.line(&widths, cells, max, style));
        }
        for row in &self.rows {
            let cells = row.iter().map(|c| (c.text.clone(), c.paint)).collect();
            out.push_str(&self.line(&widths, cells, max, style));
        }
        out
    }

    /// Each column's width: its widest cell, then, when the table is wider than `max`,
    /// the shrinking columns give way in the order given, each down to its floor.
    fn column_widths(&self, max: Option<usize>) -> Vec<usize> {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain(self.header.iter().map(Vec::len))
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; ncols];
        for (i, h) in self.header.iter().flatten().enumerate() {
            widths[i] = widths[i].max(width(h));
        }
        for row in &self.rows {
            for (i, c) in row.iter().enumerate() {
                widths[i] = widths[i].max(width(&c.text));
            }
        }
        let Some(max) = max else {
            return widths;
        };
        for &(col, floor) in self.shrink.iter().filter(|(c, _)| *c < ncols) {
            let total = self.indent + widths.iter().sum::<usize>() + 2 * ncols.saturating_sub(1);
            if total <= max {
                break;
            }
            let floor = floor.min(widths[col]);
            widths[col] = widths[col].saturating_sub(total - max).max(floor);
        }
        widths
    }

    /// One row as a line: laid out plain first (the cut must count columns, not
    /// escapes), cut to `max`, then each cell painted that survived the cut whole.
    fn line(
        &self,
        widths: &[usize],
        cells: Vec<(String, Option<Paint>)>,
        max: Option<usize>,
        style: Style,
    ) -> String {
        let mut plain = " ".repeat(self.indent);
        let mut spans: Vec<(usize, usize, Option<Paint>)> = Vec::new();
        let last = cells.len().saturating_sub(1);
        for (i, (text, paint)) in cells.into_iter().enumerate() {
            let text = cut(&text, widths[i]);
            let start = plain.len();
            plain.push_str(&text);
            spans.push((start, plain.len(), paint));
            if i < last {
                plain = pad(&plain, width(&plain) + widths[i] - width(&text) + 2);
            }
        }
        let plain = plain.trim_end().to_string();
        let (fitted, whole) = match max {
            Some(m) if width(&plain) > m => {
                let c = cut(&plain, m);
                let kept = c.len() - '…'.len_utf8();
                (c, kept)
            }
            _ => {
                let n = plain.len();
                (plain, n)
            }
        };
        let mut painted = String::new();
        let mut at = 0;
        for (start, end, paint) in spans {
            if end > whole {
                break;
            }
            if start >= end {
                continue;
            }
            painted.push_str(&fitted[at..start]);
            painted.push_str(&style.paint(paint, &fitted[start..end]));
            at = end;
        }
        painted.push_str(&fitted[at..]);
        painted.push('\n');
        painted
    }
}

/// `n` with thousands separated by commas, as people read counts.
pub fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n thing` or `n things` (the plural is `thing` + `s` unless given).
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

/// Names listed when there are few, counted when many: `a, b, c` or `a, b, c and 12 more`.
pub fn some_names<S: AsRef<str>>(names: &[S], shown: usize) -> String {
    let list: Vec<String> = names
        .iter()
        .take(shown)
        .map(|n| one_line(n.as_ref()))
        .collect();
    let rest = names.len().saturating_sub(shown);
    if rest == 0 {
        list.join(", ")
    } else {
        format!("{} and {} more", list.join(", "), count(rest))
    }
}

/// Every line of `text` cut to `max` columns (when given), for prose that must not wrap.
pub fn fit_lines(text: &str, max: Option<usize>) -> String {
    let Some(max) = max else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for l in text.lines() {
        out.push_str(&cut(l, max));
        out.push('\n');
    }
    out
}

/// Prose wrapped at word boundaries to `max` columns (when given): the first line after
/// `first` (already on the line, e.g. `fix: `, counted but not repeated), the others
/// indented by `indent` spaces. A word longer than a line is cut with `…`; control
/// characters are escaped and runs of blanks become one space.
pub fn wrap(first: &str, text: &str, max: Option<usize>, indent: usize) -> String {
    wrap_words(first, text, max, indent, true)
}

/// [`wrap`] for details asked for in full: a word longer than a line (a path, a hash)
/// is kept whole on a line of its own rather than cut.
pub fn wrap_whole(first: &str, text: &str, max: Option<usize>, indent: usize) -> String {
    wrap_words(first, text, max, indent, false)
}

fn wrap_words(
    first: &str,
    text: &str,
    max: Option<usize>,
    indent: usize,
    cut_long: bool,
) -> String {
    let fit = |line: &str| {
        if cut_long {
            cut(line, max.unwrap_or(usize::MAX))
        } else {
            line.to_string()
        }
    };
    let text = one_line(&text.lines().collect::<Vec<_>>().join(" "));
    let Some(max) = max else {
        return format!("{first}{text}\n");
    };
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !empty && width(&line) + 1 + width(word) > max {
            out.push_str(&fit(&line));
            out.push('\n');
            line = " ".repeat(indent);
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(word);
        empty = false;
    }
    out.push_str(&fit(&line));
    out.push('\n');
    out
}

/// A diagnostic (`warning: …`, `  hint: …`) fitted to `max` columns (when given): each of
/// its lines wrapped at words after `label` (on the first line) or as many spaces (on the
/// others), continuation lines indented under the text. A word longer than a line (a
/// path, a URL) stays whole on a line of its own, so that it can be copied. With no
/// width the text is `label` + `text` as it is.
pub fn wrap_diagnostic(label: &str, text: &str, max: Option<usize>) -> String {
    let indent = width(label);
    let Some(max) = max else {
        let mut out = format!("{label}{text}");
        if !out.ends_with('\n') {
            out.push('\n');
        }
        return out;
    };
    let mut out = String::new();
    for (i, line) in text.lines().enumerate() {
        let lead = if i == 0 {
            label.to_string()
        } else {
            " ".repeat(indent)
        };
        if line.trim().is_empty() {
            out.push('\n');
            continue;
        }
        out.push_str(&wrap_whole(&lead, line, Some(max), indent));
    }
    if out.is_empty() {
        out = format!("{label}\n");
    }
    out
}

/// Every line of `text` wider than `max` (when given) wrapped at words, its continuation
/// lines indented two more than it: for prose reports whose lines are details that must
/// stay whole (a long path stays on a line of its own).
pub fn wrap_long_lines(text: &str, max: Option<usize>) -> String {
    each_long_line(text, max, |l, max| {
        let body = l.trim_start();
        let lead = &l[..l.len() - body.len()];
        wrap_whole(lead, body, Some(max), width(lead) + 2)
    })
}

/// `text` with every line wider than `max` replaced by what `fit` makes of it (lines
/// ending in a newline); the lines that fit, and all of it without a width, unchanged.
fn each_long_line(text: &str, max: Option<usize>, fit: impl Fn(&str, usize) -> String) -> String {
    let Some(max) = max else {
        return text.to_string();
    };
    let mut out = String::with_capacity(text.len());
    for l in text.lines() {
        if width(l) <= max {
            out.push_str(l);
            out.push('\n');
        } else {
            out.push_str(&fit(l, max));
        }
    }
    out
}

/// `s` without its SGR colour sequences (`ESC [ … m`), as a person sees it.
pub fn without_colour(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match after.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(end) if after[end..].starts_with('m') => rest = &after[end + 1..],
            _ => {
                out.push('\x1b');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// rustc-style diagnostics (`validate --verbose`) fitted to `max` columns: a quoted
/// source line or the marks under it (`12 | …`, `   | ^^^`) is cut with `…`, since
/// wrapping would break its columns; a message or help line wraps under itself. A line
/// that does not fit loses its colour; one that fits keeps it. No width: unchanged.
pub fn fit_snippets(text: &str, max: Option<usize>) -> String {
    each_long_line(text, max, |l, max| {
        let plain = without_colour(l);
        if width(&plain) <= max {
            format!("{l}\n")
        } else if is_gutter_line(&plain) {
            format!("{}\n", cut(&plain, max))
        } else {
            wrap_long_lines(&plain, Some(max))
        }
    })
}

/// A snippet line: a line number or nothing, then the `|` gutter.
fn is_gutter_line(l: &str) -> bool {
    let t = l.trim_start();
    let t = t.trim_start_matches(|c: char| c.is_ascii_digit());
    t.trim_start().starts_with('|')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snippets_fit_with_source_lines_cut_and_messages_wrapped() {
        let src = format!("12 |   \"description\": \"{}\"", "x".repeat(120));
        let marks = format!("   |   {}", "^".repeat(100));
        let title = format!(
            "\x1b[1;31merror[too-long]\x1b[0m: {}",
            "the description is longer than a model reads ".repeat(3)
        );
        let text = format!("{title}\n{src}\n{marks}\n  = help: short\n");
        let fitted = fit_snippets(&text, Some(60));
        for l in fitted.lines() {
            assert!(width(l) <= 60, "{l:?}");
        }
        assert!(fitted.contains("12 |   \"description\""), "{fitted}");
        assert!(
            fitted
                .lines()
                .any(|l| l.ends_with('…') && l.starts_with("12 |"))
        );
        // The message wrapped: every word kept, colour dropped on that line only.
        let words: Vec<&str> = fitted.split_whitespace().take(4).collect();
        assert_eq!(words, ["error[too-long]:", "the", "description", "is"]);
        assert!(!fitted.contains('\x1b'), "{fitted:?}");
        assert!(fitted.ends_with("  = help: short\n"));
        // A line that fits keeps its colour; no width: unchanged.
        let short = "\x1b[31merror\x1b[0m: x\n";
        assert_eq!(fit_snippets(short, Some(60)), short);
        assert_eq!(fit_snippets(&text, None), text);
        assert_eq!(without_colour("a\x1b[1;31mb\x1b[0mc\x1b"), "abc\x1b");
    }

    #[test]
    fn diagnostics_wrap_under_their_text_and_keep_long_words_whole() {
        let msg = "registry \"team\" signs its shims with minisign key ABCDEF; its signatures are checked only for keys you trust";
        let text = wrap_diagnostic("note: ", msg, Some(40));
        for l in text.lines() {
            assert!(width(l) <= 40, "{l:?}");
        }
        assert!(text.starts_with("note: registry"), "{text}");
        assert!(
            text.lines().skip(1).all(|l| l.starts_with("      ")),
            "{text}"
        );
        // Every word is still there, in order.
        let words: Vec<&str> = text.split_whitespace().skip(1).collect();
        assert_eq!(words.join(" "), msg);
        // A path longer than the line is not cut.
        let long = format!("failed to remove /{}", "x".repeat(60));
        let text = wrap_diagnostic("warning: ", &long, Some(40));
        assert!(text.contains(&"x".repeat(60)), "{text}");
        // Lines of the message stay lines; no width: unchanged.
        let text = wrap_diagnostic("error: ", "one\ntwo", Some(40));
        assert_eq!(text, "error: one\n       two\n");
        assert_eq!(wrap_diagnostic("note: ", "a  b", None), "note: a  b\n");
    }

    #[test]
    fn cut_counts_columns_and_marks_the_cut() {
        assert_eq!(cut("hello", 5), "hello");
        assert_eq!(cut("hello world", 8), "hello w…");
        assert_eq!(width(&cut("hello world", 8)), 8);
        // Wide characters take two columns each.
        assert_eq!(cut("日本語テキスト", 7), "日本語…");
        assert!(width(&cut("日本語テキスト", 7)) <= 7);
        assert_eq!(cut("abc", 0), "");
    }

    #[test]
    fn tables_give_way_in_the_flexible_column_then_cut() {
        let mut t = Table::new(Some(&["NAME", "DESCRIPTION"])).flex(1);
        t.row(vec![
            Cell::new("git"),
            Cell::new("the stupid content tracker, a long line"),
        ]);
        t.row(vec![Cell::new("wc"), Cell::new("count words")]);
        let text = t.render(Some(24), Style::plain());
        for l in text.lines() {
            assert!(width(l) <= 24, "{l:?}");
        }
        assert!(text.contains("git   the stupid conten…"), "{text}");
        assert!(text.contains("wc    count words"), "{text}");
        // No limit: nothing is cut.
        let whole = t.render(None, Style::plain());
        assert!(whole.contains("a long line"), "{whole}");
    }

    #[test]
    fn colour_only_when_on_and_never_counted_as_width() {
        let mut t = Table::new(None);
        t.row(vec![
            Cell::new("rm"),
            Cell::painted("destructive", effects_paint("destructive")),
        ]);
        let plain = t.render(Some(40), Style::plain());
        assert!(!plain.contains('\x1b'), "{plain:?}");
        let coloured = t.render(Some(40), Style::new(true));
        assert!(
            coloured.contains("\x1b[31mdestructive\x1b[0m"),
            "{coloured:?}"
        );
        // A painted cell that is cut stays plain: no colour runs past the line's end.
        let narrow = t.render(Some(8), Style::new(true));
        assert!(!narrow.contains('\x1b'), "{narrow:?}");
    }

    #[test]
    fn counts_and_names_read_as_prose() {
        assert_eq!(count(1106), "1,106");
        assert_eq!(count(12), "12");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(plural(1, "tool", "tools"), "1 tool");
        assert_eq!(plural(2, "tool", "tools"), "2 tools");
        assert_eq!(some_names(&["a", "b"], 3), "a, b");
        assert_eq!(some_names(&["a", "b", "c", "d"], 2), "a, b and 2 more");
    }

    #[test]
    fn wrap_breaks_at_words_and_never_passes_the_width() {
        let text = wrap(
            "fix: ",
            "run `atip scan` to update the registry, or reinstall",
            Some(24),
            5,
        );
        assert_eq!(
            text,
            "fix: run `atip scan` to\n     update the\n     registry, or\n     reinstall\n"
        );
        for l in text.lines() {
            assert!(width(l) <= 24, "{l:?}");
        }
        // A word longer than the line is cut; no width, one line.
        assert_eq!(wrap("", "a 0123456789abcdef", Some(8), 0), "a\n0123456…\n");
        assert_eq!(wrap("- ", "x\ny  z", None, 2), "- x y z\n");
        // In full: the long word is whole, on its own line.
        assert_eq!(
            wrap_whole("", "a 0123456789abcdef b", Some(8), 0),
            "a\n0123456789abcdef\nb\n"
        );
    }

    #[test]
    fn long_lines_wrap_under_themselves() {
        let text = "title\n  [rule] a change that is rather long\nend\n";
        assert_eq!(
            wrap_long_lines(text, Some(20)),
            "title\n  [rule] a change\n    that is rather\n    long\nend\n"
        );
        assert_eq!(wrap_long_lines(text, None), text);
    }

    #[test]
    fn one_line_escapes_controls_and_keeps_the_first_line() {
        assert_eq!(one_line("\n  first  line \nsecond"), "first line");
        assert_eq!(one_line("x\x1b[2Jy"), "x\\e[2Jy");
    }
}
