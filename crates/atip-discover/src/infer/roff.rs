//! A small roff reader for manual pages: man(7) and mdoc(7) in, a flat outline out.
//!
//! It does not typeset. It resolves what decides *meaning* — escapes, strings (`.ds`),
//! conditionals (`.if`/`.ie`/`.el`, taken as nroff on groff), continuation lines, macro
//! definitions (skipped) — and turns the page into sections of paragraphs and tagged
//! items (`.TP`, `.IP`, `.TQ`, the `.PP`/`.sp` + `.RS` style of DocBook and Asciidoctor,
//! mdoc `.Bl`/`.It`). Consecutive tags without a body between them (`.PD 0` pairs in
//! pod2man pages, `.TQ`) are one item with several tags, which is how aliases are listed.
//!
//! In tags and in the SYNOPSIS, text set in italics (`\fI`, `.I`, mdoc `Ar`) is written
//! `<like this>`: the converter needs to tell a placeholder (`-n <min-len>`) from a flag.

use std::collections::HashMap;

/// Which macro package a page uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MacroSet {
    /// man(7): `.TH`, `.SH`, `.TP`…
    Man,
    /// mdoc(7): `.Dd`, `.Sh`, `.Bl`/`.It`…
    Mdoc,
}

/// A parsed page: the sections in document order.
#[derive(Debug, Clone)]
pub struct Page {
    /// The macro package detected.
    pub macro_set: MacroSet,
    /// The page's sections.
    pub sections: Vec<Section>,
    /// mdoc `.Nm` (the first one), the page's own name.
    pub name: Option<String>,
    /// mdoc `.Nd`, the one-line description.
    pub name_description: Option<String>,
}

/// One `.SH`/`.Sh` section.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Heading, upper-cased as written (`OPTIONS`).
    pub name: String,
    /// Paragraphs, items and sub-headings in order.
    pub blocks: Vec<Block>,
}

/// A unit of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// A plain paragraph (lines joined by spaces; a `.br` is a newline).
    Text(String),
    /// A tagged paragraph: one or more tags (aliases) and the text under them.
    Item {
        /// The tag lines, italics marked `<…>`.
        tags: Vec<String>,
        /// The body text.
        body: String,
        /// Nesting depth (0 = top level of the section).
        depth: usize,
    },
    /// A `.SS`/`.Ss` sub-heading.
    Sub(String),
}

impl Page {
    /// The first section whose name is one of `names` (upper case).
    pub(crate) fn section(&self, names: &[&str]) -> Option<&Section> {
        self.sections
            .iter()
            .find(|s| names.iter().any(|n| s.name.eq_ignore_ascii_case(n)))
    }
}

/// Start of italic text inside the parser (a private-use character).
const OPEN: char = '\u{E000}';
/// End of italic text inside the parser.
const CLOSE: char = '\u{E001}';

/// Writes italics as `<…>` (tags, SYNOPSIS).
fn marked(s: &str) -> String {
    s.replace(OPEN, "<").replace(CLOSE, ">")
}

/// Drops italics marks (running text).
fn plain(s: &str) -> String {
    s.replace([OPEN, CLOSE], "")
}

/// Longest input accepted (bytes); bigger pages are cut here.
pub const MAX_PAGE: usize = 4 << 20;

/// Parses a page. Never fails: unknown requests are ignored and broken markup yields
/// whatever text could be read.
pub fn parse(src: &str) -> Page {
    let src = if src.len() > MAX_PAGE {
        let mut end = MAX_PAGE;
        while !src.is_char_boundary(end) {
            end -= 1;
        }
        &src[..end]
    } else {
        src
    };
    let mut p = Parser::new(src);
    p.run(src);
    p.finish()
}

/// What the next text line becomes.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pending {
    /// Body text of the current block.
    None,
    /// The tag of a `.TP` (or `.TQ`) item.
    TpTag,
}

struct Parser {
    set: MacroSet,
    sections: Vec<Section>,
    strings: HashMap<String, String>,
    /// Open `\{` blocks: `true` if their lines are taken.
    cond_stack: Vec<bool>,
    /// Result of the last `.ie`, for `.el`.
    last_ie: Vec<bool>,
    /// Inside `.de … ..`: the terminator.
    skip_until: Option<String>,
    pending: Pending,
    /// The open item: index into the current section's blocks, and the `.RS` depth it
    /// belongs to.
    item: Option<(usize, usize)>,
    /// Open paragraph: index of a `Block::Text` still taking lines, and the number of
    /// source lines it holds.
    para: Option<(usize, usize)>,
    rs_depth: usize,
    /// mdoc list stack: (list takes tags, item index of the enclosing item).
    lists: Vec<bool>,
    /// mdoc `.Xo`: extending the current item's tag.
    xo: bool,
    /// No-fill (`.nf`, `.EX`, mdoc `.Bd -literal`): lines kept apart.
    nofill: bool,
    name: Option<String>,
    name_description: Option<String>,
    /// SYNOPSIS / NAME text is rendered with italics marked.
    mark_all: bool,
}

/// Tokens of roff's argument syntax: blanks separate, `"…"` quotes, `""` is a quote.
pub(crate) fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ' ' || *c == '\t') {
            chars.next();
        }
        let Some(&c) = chars.peek() else { break };
        let mut arg = String::new();
        if c == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        arg.push('"');
                    } else {
                        break;
                    }
                } else if c == '\\' {
                    // Macro arguments are read in copy mode: `\\` is one backslash.
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    arg.push(c);
                    if let Some(n) = chars.next() {
                        arg.push(n);
                    }
                } else {
                    arg.push(c);
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ' ' || c == '\t' {
                    break;
                }
                chars.next();
                arg.push(c);
                if c == '\\' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    if let Some(n) = chars.next() {
                        arg.push(n);
                    }
                }
            }
        }
        out.push(arg);
    }
    out
}

/// Font state while rendering.
#[derive(Clone, Copy, PartialEq)]
enum Font {
    Roman,
    Bold,
    Italic,
}

/// Renders roff text: resolves escapes and strings, drops font changes; italics become
/// `<…>` when `mark` is set.
pub fn render(s: &str, strings: &HashMap<String, String>, mark: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut font = Font::Roman;
    let mut prev = Font::Roman;
    render_into(s, strings, mark, &mut out, &mut font, &mut prev, 0);
    if mark && font == Font::Italic {
        close_italic(&mut out);
    }
    out
}

fn close_italic(out: &mut String) {
    if out.ends_with(OPEN) {
        out.pop();
    } else {
        out.push(CLOSE);
    }
}

fn set_font(out: &mut String, font: &mut Font, prev: &mut Font, new: Font, mark: bool) {
    if mark && new != *font {
        if *font == Font::Italic {
            close_italic(out);
        }
        if new == Font::Italic {
            out.push(OPEN);
        }
    }
    *prev = *font;
    *font = new;
}

fn font_named(name: &str, prev: Font) -> Font {
    match name {
        "I" | "2" | "BI" | "4" | "CI" | "IT" => Font::Italic,
        "B" | "3" | "CB" | "BD" => Font::Bold,
        "P" | "" => prev,
        _ => Font::Roman,
    }
}

/// Reads an escape's name argument: `x`, `(xx` or `[name]`. Returns the name and the
/// rest of the input.
fn escape_name(rest: &str) -> (&str, &str) {
    let mut it = rest.char_indices();
    match it.next() {
        None => ("", ""),
        Some((_, '(')) => {
            let body = &rest[1..];
            let end = body
                .char_indices()
                .nth(2)
                .map(|(i, _)| i)
                .unwrap_or(body.len());
            (&body[..end], &body[end..])
        }
        Some((_, '[')) => match rest.find(']') {
            Some(e) => (&rest[1..e], &rest[e + 1..]),
            None => (&rest[1..], ""),
        },
        Some((_, c)) => (&rest[..c.len_utf8()], &rest[c.len_utf8()..]),
    }
}

/// Reads a delimited escape argument `'…'`, returning the rest after it.
fn delimited(rest: &str) -> (&str, &str) {
    let mut chars = rest.chars();
    let Some(d) = chars.next() else {
        return ("", "");
    };
    let body = &rest[d.len_utf8()..];
    match body.find(d) {
        Some(e) => (&body[..e], &body[e + d.len_utf8()..]),
        None => (body, ""),
    }
}

/// The text of a named glyph (`\(em`, `\[aq]`); empty when unknown.
fn glyph(name: &str) -> &'static str {
    match name {
        "em" => "\u{2014}",
        "en" => "\u{2013}",
        "hy" | "mi" | "-" | "\u{2010}" => "-",
        "aq" | "fm" | "cq" | "oq" | "'" => "'",
        "dq" | "lq" | "rq" | "Lq" | "Rq" | "\"" => "\"",
        "ga" | "`" => "`",
        "bu" => "\u{2022}",
        "co" => "\u{a9}",
        "rg" => "\u{ae}",
        "tm" => "\u{2122}",
        "pl" => "+",
        "ti" | "ap" | "~" => "~",
        "ha" | "a^" | "^" => "^",
        "sl" => "/",
        "rs" | "\\" => "\\",
        "bv" | "or" | "ba" | "br" | "|" => "|",
        "ul" | "ru" | "_" => "_",
        "de" => "\u{b0}",
        "mu" => "\u{d7}",
        "di" => "\u{f7}",
        "<=" => "<=",
        ">=" => ">=",
        "!=" => "!=",
        "==" => "==",
        "eq" => "=",
        "->" | "ra" => "->",
        "<-" | "la" => "<-",
        "lB" => "[",
        "rB" => "]",
        "lC" => "{",
        "rC" => "}",
        "fo" => "<",
        "fc" => ">",
        "at" => "@",
        "sh" => "#",
        "Do" => "$",
        "dd" => "\u{2021}",
        "dg" => "\u{2020}",
        "sc" => "\u{a7}",
        "ss" => "ß",
        "char92" => "\\",
        "char46" => ".",
        "char39" => "'",
        "char45" => "-",
        "char34" => "\"",
        "char96" => "`",
        _ => "",
    }
}

/// Renders `s` into `out`, escapes replaced by their text (fonts marked when `mark`);
/// `depth` counts the string interpolations (`\*`) this call is inside of.
fn render_into(
    s: &str,
    strings: &HashMap<String, String>,
    mark: bool,
    out: &mut String,
    font: &mut Font,
    prev: &mut Font,
    depth: usize,
) {
    let mut rest = s;
    while let Some(pos) = rest.find('\\') {
        out.push_str(&rest[..pos]);
        let esc = &rest[pos + 1..];
        let Some(c) = esc.chars().next() else {
            rest = esc;
            break;
        };
        let after = &esc[c.len_utf8()..];
        rest = after;
        if let Some(text) = plain_escape(c) {
            out.push_str(text);
            continue;
        }
        if let Some(r) = skip_argument(c, after) {
            rest = r;
            continue;
        }
        match c {
            // A comment runs to the end of the line: nothing after it is text.
            '"' | '#' => {
                rest = "";
                break;
            }
            '(' | '[' | 'C' | 'N' => rest = push_char(c, esc, out),
            'f' => {
                let (name, r) = escape_name(after);
                let new = font_named(name, *prev);
                set_font(out, font, prev, new, mark);
                rest = r;
            }
            '*' => {
                let (name, r) = escape_name(after);
                rest = r;
                if let Some(v) = strings.get(name)
                    && depth < 8
                {
                    render_into(v, strings, mark, out, font, prev, depth + 1);
                } else {
                    out.push_str(builtin_string(name));
                }
            }
            'h' => {
                let (_, r) = delimited(after);
                out.push(' ');
                rest = r;
            }
            other => out.push(other),
        }
    }
    out.push_str(rest);
}

/// A named or numbered character (`\(xx`, `\[name]`, `\[u00e9]`, `\C'name'`,
/// `\N'233'`; `esc` starts at the escape's letter): pushes it, returns what follows.
fn push_char<'a>(c: char, esc: &'a str, out: &mut String) -> &'a str {
    let after = &esc[c.len_utf8()..];
    match c {
        'C' => {
            let (name, r) = delimited(after);
            out.push_str(glyph(name));
            r
        }
        'N' => {
            let (num, r) = delimited(after);
            if let Some(ch) = num.parse::<u32>().ok().and_then(char::from_u32) {
                out.push(ch);
            }
            r
        }
        _ => {
            let (name, r) = escape_name(esc);
            if let Some(hex) = name.strip_prefix('u')
                && let Some(ch) = u32::from_str_radix(hex, 16).ok().and_then(char::from_u32)
            {
                out.push(ch);
            } else {
                out.push_str(glyph(name));
            }
            r
        }
    }
}

/// The text of an escape that takes no argument (empty for those that only affect
/// layout); `None` when `c` is not one.
fn plain_escape(c: char) -> Option<&'static str> {
    Some(match c {
        '-' => "-",
        'e' | 'E' | '\\' => "\\",
        '&' | ')' | '%' | ':' | '/' | ',' | '|' | '^' | 'a' | 'c' | 'd' | 'u' | 'p' | 'r' | 'z'
        | '{' | '}' => "",
        ' ' | '~' | '0' => " ",
        't' => "\t",
        '\'' => "'",
        '`' => "`",
        '_' => "_",
        '.' => ".",
        _ => return None,
    })
}

/// For an escape whose argument gives no text (registers, sizes, motions, marks), what
/// follows its argument; `None` when `c` is not one.
fn skip_argument(c: char, after: &str) -> Option<&str> {
    match c {
        'n' | 'g' | 'k' | 'm' | 'M' | 'V' | 'Y' | 'F' => {
            let after = after.strip_prefix(['+', '-']).unwrap_or(after);
            Some(escape_name(after).1)
        }
        's' => {
            let a = after.strip_prefix(['+', '-']).unwrap_or(after);
            Some(if a.starts_with(['(', '[']) {
                escape_name(a).1
            } else if a.starts_with('\'') {
                delimited(a).1
            } else {
                let digits = a
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .count()
                    .clamp(0, 2);
                &a[digits..]
            })
        }
        'w' | 'o' | 'v' | 'l' | 'L' | 'D' | 'X' | 'Z' | 'b' | 'R' | 'A' | 'B' | 'H' | 'S' | 'x' => {
            Some(delimited(after).1)
        }
        '$' => Some(escape_name(after).1),
        _ => None,
    }
}

/// Strings groff and the macro packages predefine.
fn builtin_string(name: &str) -> &'static str {
    match name {
        "lq" | "rq" | "Lq" | "Rq" | "L\"" | "R\"" => "\"",
        "oq" | "cq" | "Aq" => "'",
        "R" | "rg" => "\u{ae}",
        "Tm" | "tm" => "\u{2122}",
        "Ba" => "|",
        "Le" => "<=",
        "Ge" => ">=",
        "Pi" => "pi",
        "Na" => "NaN",
        "If" => "infinity",
        "Am" => "&",
        "Gt" => ">",
        "Lt" => "<",
        "Ne" => "!=",
        "q" => "\"",
        _ => "",
    }
}

/// mdoc macros that may be called from another macro's line.
fn mdoc_callable(name: &str) -> bool {
    matches!(
        name,
        "Ac" | "Ad"
            | "An"
            | "Ao"
            | "Aq"
            | "Ar"
            | "At"
            | "Bc"
            | "Bo"
            | "Bq"
            | "Brc"
            | "Bro"
            | "Brq"
            | "Bsx"
            | "Bx"
            | "Cd"
            | "Cm"
            | "Dc"
            | "Do"
            | "Dq"
            | "Dv"
            | "Dx"
            | "Ec"
            | "Em"
            | "En"
            | "Eo"
            | "Er"
            | "Es"
            | "Ev"
            | "Fa"
            | "Fc"
            | "Fl"
            | "Fn"
            | "Fo"
            | "Fx"
            | "Ic"
            | "Li"
            | "Lk"
            | "Ms"
            | "Mt"
            | "Nm"
            | "No"
            | "Ns"
            | "Nx"
            | "Oc"
            | "Oo"
            | "Op"
            | "Ox"
            | "Pa"
            | "Pc"
            | "Pf"
            | "Po"
            | "Pq"
            | "Qc"
            | "Ql"
            | "Qo"
            | "Qq"
            | "Sc"
            | "So"
            | "Sq"
            | "Sx"
            | "Sy"
            | "Ta"
            | "Tn"
            | "Ux"
            | "Va"
            | "Vt"
            | "Xc"
            | "Xo"
            | "Xr"
    )
}

/// Punctuation that mdoc writes without a space before it.
fn closing_punct(s: &str) -> bool {
    matches!(s, "." | "," | ":" | ";" | ")" | "]" | "?" | "!")
}

/// Punctuation that mdoc writes without a space after it.
fn opening_punct(s: &str) -> bool {
    matches!(s, "(" | "[")
}

/// The text of an mdoc line as it is rendered: words joined by spaces, except after
/// opening punctuation or `Ns` (`glue`) and before closing punctuation.
struct MdocText {
    out: String,
    glue: bool,
}

impl MdocText {
    fn push(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if !self.glue && !closing_punct(text) && !self.out.is_empty() && !self.out.ends_with(' ') {
            self.out.push(' ');
        }
        self.out.push_str(text);
        self.glue = opening_punct(text);
    }

    fn push_all(&mut self, words: &[&String]) {
        for w in words {
            self.push(w);
        }
    }

    /// An opening delimiter: the next word follows it without a space.
    fn open(&mut self, o: &str) {
        self.push(o);
        self.glue = true;
    }

    /// A closing delimiter, right after the last word.
    fn close(&mut self, c: &str) {
        self.out.push_str(c);
        self.glue = false;
    }
}

/// Renders an mdoc macro line's arguments (the macro name first) to text.
fn mdoc_inline(args: &[String], strings: &HashMap<String, String>, mark: bool, nm: &str) -> String {
    let mut t = MdocText {
        out: String::new(),
        glue: true,
    };
    let mut i = 0;
    // Closers to emit at the end of the line (for `Op`, `Dq`… enclosing the rest).
    let mut closers: Vec<&'static str> = Vec::new();
    while i < args.len() {
        let a = args[i].as_str();
        i += 1;
        if !(mdoc_callable(a) || (i == 1 && a.len() == 2)) {
            t.push(&render(a, strings, false));
            continue;
        }
        // The words this macro takes: up to the next callable macro.
        let start = i;
        while i < args.len() && !mdoc_callable(&args[i]) {
            i += 1;
        }
        let words: Vec<String> = args[start..i]
            .iter()
            .map(|w| render(w, strings, false))
            .collect();
        // Trailing punctuation is printed after the macro's formatting.
        let mut n = words.len();
        while n > 0 && closing_punct(&words[n - 1]) {
            n -= 1;
        }
        let lead: Vec<&String> = words[..n].iter().collect();
        let trail: Vec<&String> = words[n..].iter().collect();
        let next = args.get(i).map(String::as_str);
        let m = MdocMacro {
            name: a,
            lead: &lead,
            next,
            mark,
            nm,
        };
        if let Some(closer) = m.render(&mut t, trail.is_empty()) {
            closers.push(closer);
            continue;
        }
        t.push_all(&trail);
    }
    while let Some(c) = closers.pop() {
        t.out.push_str(c);
    }
    t.out
}

/// One callable mdoc macro of a line and the words it takes.
struct MdocMacro<'a> {
    name: &'a str,
    /// Its words before any trailing punctuation.
    lead: &'a [&'a String],
    /// The line's next argument (a macro), if any.
    next: Option<&'a str>,
    /// Mark placeholders (`Ar`, `Va`…) for the option parser.
    mark: bool,
    /// The page's name, for a bare `Nm`.
    nm: &'a str,
}

impl MdocMacro<'_> {
    /// Renders the macro into `t`. An enclosure with no words of its own (`Op`, `Dq`…)
    /// encloses the rest of the line: its closer is returned, for the line's end.
    fn render(&self, t: &mut MdocText, no_trail: bool) -> Option<&'static str> {
        let lead = self.lead;
        match self.name {
            "Fl" => self.flags(t),
            "Ar" => self.placeholders(t),
            "Nm" if lead.is_empty() => t.push(self.nm),
            "Nm" => t.push(&join(lead)),
            "Ns" => t.glue = true,
            "Ta" => t.push("\t"),
            "Xr" => t.push(&match lead {
                [n, s, ..] => format!("{n}({s})"),
                [n] => n.to_string(),
                [] => String::new(),
            }),
            "Op" | "Dq" | "Qq" | "Sq" | "Pq" | "Aq" | "Bq" | "Brq" | "Ql" => {
                let (o, c) = match self.name {
                    "Op" | "Bq" => ("[", "]"),
                    "Dq" | "Qq" => ("\"", "\""),
                    "Sq" | "Ql" => ("'", "'"),
                    "Pq" => ("(", ")"),
                    "Aq" => ("<", ">"),
                    _ => ("{", "}"),
                };
                t.open(o);
                if lead.is_empty() && no_trail && self.next.is_some() {
                    return Some(c);
                }
                t.push_all(lead);
                t.close(c);
            }
            "Oo" | "Bo" => {
                t.open("[");
                t.push_all(lead);
            }
            "Oc" | "Bc" => t.close("]"),
            "Do" | "Qo" => t.open("\""),
            "Dc" | "Qc" => t.close("\""),
            "Po" => t.open("("),
            "Pc" => t.close(")"),
            "So" => t.open("'"),
            "Sc" => t.close("'"),
            "Ao" => t.open("<"),
            "Ac" => t.close(">"),
            "Pf" => {
                if let Some((first, others)) = lead.split_first() {
                    t.open(first);
                    t.push_all(others);
                }
            }
            "Ux" => t.push("UNIX"),
            "Bx" | "Bsx" | "Nx" | "Fx" | "Ox" | "Dx" => {
                t.push(match self.name {
                    "Bx" => "BSD",
                    "Bsx" => "BSD/OS",
                    "Nx" => "NetBSD",
                    "Fx" => "FreeBSD",
                    "Ox" => "OpenBSD",
                    _ => "DragonFly",
                });
                t.push_all(lead);
            }
            "Xo" | "Xc" | "Fo" | "Fc" | "Eo" | "Ec" | "Es" | "En" => t.push_all(lead),
            _ => {
                let text = join(lead);
                let italic = matches!(self.name, "Va" | "Fa" | "Em") && self.mark;
                if italic && !text.is_empty() {
                    t.push(&format!("{OPEN}{text}{CLOSE}"));
                } else {
                    t.push(&text);
                }
            }
        }
        None
    }

    /// `Fl`: each word a flag (`-word`); bare, a lone `-` glued to what follows.
    fn flags(&self, t: &mut MdocText) {
        if self.lead.is_empty() {
            t.push("-");
            if self.next.is_some_and(|n| !closing_punct(n)) {
                t.glue = true;
            }
        }
        for w in self.lead {
            if closing_punct(w) || w.as_str() == "|" {
                t.push(w);
            } else {
                t.push(&format!("-{w}"));
            }
        }
    }

    /// `Ar`: each word a placeholder (marked for the option parser); bare, `file ...`.
    fn placeholders(&self, t: &mut MdocText) {
        if self.lead.is_empty() {
            t.push(if self.mark {
                "\u{E000}file\u{E001} ..."
            } else {
                "file ..."
            });
        }
        for w in self.lead {
            if self.mark && !closing_punct(w) && w.as_str() != "|" && w.as_str() != "..." {
                t.push(&format!("{OPEN}{w}{CLOSE}"));
            } else {
                t.push(w);
            }
        }
    }
}

fn join(words: &[&String]) -> String {
    let mut s = String::new();
    for w in words {
        if !s.is_empty() && !closing_punct(w) {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

/// Cuts a line at its `\"` comment.
fn strip_comment(line: &str) -> &str {
    let b = line.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\\' {
            if b[i + 1] == b'"' || b[i + 1] == b'#' {
                return line[..i].trim_end();
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    line
}

/// Splits `.XX args` into the request name and its argument text.
fn request(line: &str) -> (&str, &str) {
    let body = line[1..].trim_start_matches([' ', '\t']);
    let end = body.find([' ', '\t']).unwrap_or(body.len());
    let (name, rest) = body.split_at(end);
    // `.TP\fB` style (no blank): the name stops at a backslash.
    if let Some(b) = name.find('\\')
        && b > 0
    {
        return (&name[..b], &body[b..]);
    }
    (name, rest.trim_start_matches([' ', '\t']))
}

/// Evaluates a conditional's condition (as nroff output by groff) and returns the
/// remaining text.
fn condition<'a>(s: &'a str, strings: &HashMap<String, String>) -> (bool, &'a str) {
    let s = s.trim_start();
    let (neg, s) = match s.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (val, rest) = if let Some(r) = s.strip_prefix(['n', 'o']) {
        (s.starts_with('n'), r)
    } else if let Some(r) = s.strip_prefix(['t', 'e', 'v']) {
        (false, r)
    } else if let Some(r) = s.strip_prefix(['d', 'r', 'c', 'm', 'F', 'S']) {
        // `d name`, `r reg`: defined? Strings only.
        let r = r.trim_start();
        let end = r.find([' ', '\t']).unwrap_or(r.len());
        let name = &r[..end];
        (s.starts_with('d') && strings.contains_key(name), &r[end..])
    } else if s.starts_with(['\'', '"']) {
        let d = s.chars().next().unwrap_or('\'');
        let body = &s[1..];
        let mut parts = body.splitn(3, d);
        let a = parts.next().unwrap_or("");
        let b = parts.next().unwrap_or("");
        let rest = parts.next().unwrap_or("");
        (render(a, strings, false) == render(b, strings, false), rest)
    } else {
        // A numeric expression: `\n(.g` (groff: 1), other registers 0, literals.
        let end = s.find([' ', '\t']).unwrap_or(s.len());
        let expr = &s[..end];
        let v = if expr.contains("\\n(.g") || expr.contains("\\n[.g]") {
            true
        } else if expr.contains("\\n") {
            false
        } else {
            let digits: String = expr.chars().take_while(|c| c.is_ascii_digit()).collect();
            digits.parse::<i64>().map(|n| n > 0).unwrap_or(false)
        };
        (v, &s[end..])
    };
    (val != neg, rest.trim_start_matches([' ', '\t']))
}

impl Parser {
    fn new(src: &str) -> Parser {
        let set = if src
            .lines()
            .take(400)
            .any(|l| l.starts_with(".Dd") || l.starts_with(".Sh ") || l.starts_with(".Nm"))
        {
            MacroSet::Mdoc
        } else {
            MacroSet::Man
        };
        Parser {
            set,
            sections: Vec::new(),
            strings: HashMap::new(),
            cond_stack: Vec::new(),
            last_ie: Vec::new(),
            skip_until: None,
            pending: Pending::None,
            item: None,
            para: None,
            rs_depth: 0,
            lists: Vec::new(),
            xo: false,
            nofill: false,
            name: None,
            name_description: None,
            mark_all: false,
        }
    }

    fn finish(self) -> Page {
        let mut sections = self.sections;
        for s in &mut sections {
            let keep = s.name == "SYNOPSIS";
            for b in &mut s.blocks {
                match b {
                    Block::Text(t) if keep => *t = marked(t.trim()),
                    Block::Text(t) => *t = plain(t.trim()),
                    Block::Item { tags, body, .. } => {
                        for t in tags.iter_mut() {
                            *t = marked(t.trim());
                        }
                        *body = plain(body.trim());
                    }
                    Block::Sub(t) => *t = plain(t),
                }
            }
            s.name = plain(&s.name);
            s.blocks
                .retain(|b| !matches!(b, Block::Text(t) if t.is_empty()));
        }
        Page {
            macro_set: self.set,
            sections,
            name: self.name.map(|n| plain(&n)),
            name_description: self.name_description.map(|n| plain(&n)),
        }
    }

    fn run(&mut self, src: &str) {
        let mut lines = src.lines();
        let mut joined = String::new();
        while let Some(line) = lines.next() {
            // Continuation: a line ending in an unescaped backslash goes on.
            let mut line = line.trim_end_matches('\r');
            if line.ends_with('\\') && !line.ends_with("\\\\") {
                joined.clear();
                joined.push_str(&line[..line.len() - 1]);
                for next in lines.by_ref() {
                    let next = next.trim_end_matches('\r');
                    if next.ends_with('\\') && !next.ends_with("\\\\") {
                        joined.push_str(&next[..next.len() - 1]);
                    } else {
                        joined.push_str(next);
                        break;
                    }
                }
                let owned = std::mem::take(&mut joined);
                self.line(&owned);
                joined = owned;
                continue;
            }
            if line.len() > 64 * 1024 {
                line = &line[..line.floor_char_boundary(64 * 1024)];
            }
            self.line(line);
        }
    }

    /// Handles one input line, inside whatever conditional blocks are open.
    fn line(&mut self, line: &str) {
        if let Some(end) = &self.skip_until {
            if (line.starts_with('.') || line.starts_with('\''))
                && strip_comment(&line[1..]).trim() == end.as_str()
            {
                self.skip_until = None;
            }
            return;
        }
        if !self.cond_stack.is_empty() {
            let taken = self.cond_stack.iter().all(|t| *t);
            let opens = line.matches("\\{").count();
            let closes = line.matches("\\}").count();
            if !taken {
                for _ in 0..opens {
                    self.cond_stack.push(false);
                }
                for _ in 0..closes {
                    self.cond_stack.pop();
                }
                return;
            }
            if closes > 0 {
                let before = line.split("\\}").next().unwrap_or("");
                for _ in 0..closes {
                    self.cond_stack.pop();
                }
                let before = before.trim_end();
                if !before.is_empty() && before != "." && before != "'" {
                    self.dispatch(before);
                }
                return;
            }
        }
        self.dispatch(line);
    }

    fn dispatch(&mut self, line: &str) {
        if line.starts_with(".\\\"") || line.starts_with("'\\\"") || line.starts_with("\\\"") {
            return;
        }
        if line.starts_with('.') || line.starts_with('\'') {
            self.control(line);
        } else {
            self.text(line);
        }
    }

    /// Takes the rest of a conditional: a `\{` block or one line.
    fn conditional(&mut self, taken: bool, rest: &str) {
        if let Some(body) = rest.strip_prefix("\\{") {
            let body = body.trim_start();
            // A block that also closes on this line.
            if let Some(end) = body.find("\\}") {
                if taken && !body[..end].trim().is_empty() {
                    self.dispatch(body[..end].trim_end());
                }
                return;
            }
            self.cond_stack.push(taken);
            if taken && !body.is_empty() {
                self.dispatch(body);
            }
        } else if taken && !rest.is_empty() {
            self.dispatch(rest);
        }
    }

    fn section(&mut self) -> &mut Section {
        if self.sections.is_empty() {
            self.sections.push(Section::default());
        }
        let last = self.sections.len() - 1;
        &mut self.sections[last]
    }

    fn in_synopsis(&self) -> bool {
        self.sections
            .last()
            .is_some_and(|s| s.name == "SYNOPSIS" || s.name == "NAME")
    }

    /// Ends the open paragraph and item.
    fn break_all(&mut self) {
        self.para = None;
        self.item = None;
        self.pending = Pending::None;
    }

    /// Ends the open paragraph; the item goes on.
    fn break_para(&mut self) {
        self.para = None;
    }

    fn new_section(&mut self, name: String) {
        self.break_all();
        self.rs_depth = 0;
        self.lists.clear();
        self.nofill = false;
        self.xo = false;
        self.sections.push(Section {
            name: name.trim().to_uppercase(),
            blocks: Vec::new(),
        });
        self.mark_all = self.in_synopsis();
    }

    /// Starts an item with its first tag (or adds an alias tag to an item with no
    /// body yet).
    fn start_item(&mut self, tag: Option<String>, depth: usize) {
        self.para = None;
        if let Some((idx, _)) = self.item {
            let sec = self.section();
            if let Some(Block::Item { tags, body, .. }) = sec.blocks.get_mut(idx)
                && body.trim().is_empty()
            {
                if let Some(t) = tag {
                    tags.push(t);
                } else {
                    tags.push(String::new());
                }
                self.item = Some((idx, depth));
                return;
            }
        }
        let sec = self.section();
        sec.blocks.push(Block::Item {
            tags: vec![tag.unwrap_or_default()],
            body: String::new(),
            depth,
        });
        let idx = sec.blocks.len() - 1;
        self.item = Some((idx, depth));
    }

    /// Turns the open one-line paragraph into an item's tag (DocBook's `.PP` + `.RS`,
    /// `.HP` + `.IP`). Returns whether it did.
    fn para_to_item(&mut self) -> bool {
        if self.item.is_none()
            && let Some((idx, 1)) = self.para
            && let Some(Block::Text(t)) = self.section().blocks.get(idx).cloned()
        {
            let depth = self.rs_depth;
            self.section().blocks[idx] = Block::Item {
                tags: vec![t],
                body: String::new(),
                depth,
            };
            self.item = Some((idx, depth));
            self.para = None;
            return true;
        }
        false
    }

    /// Adds rendered text to the open tag, item body or paragraph.
    fn add_text(&mut self, text: &str) {
        if self.pending == Pending::TpTag {
            self.pending = Pending::None;
            if let Some((idx, _)) = self.item
                && let Some(Block::Item { tags, .. }) = self.section().blocks.get_mut(idx)
                && let Some(last) = tags.last_mut()
            {
                if !last.is_empty() {
                    last.push(' ');
                }
                last.push_str(text);
            }
            return;
        }
        if self.xo {
            if let Some((idx, _)) = self.item
                && let Some(Block::Item { tags, .. }) = self.section().blocks.get_mut(idx)
                && let Some(last) = tags.last_mut()
            {
                if !last.is_empty() && !text.starts_with(closing_punct_char) {
                    last.push(' ');
                }
                last.push_str(text);
            }
            return;
        }
        let sep = if self.nofill { '\n' } else { ' ' };
        if let Some((idx, _)) = self.item
            && self.para.is_none()
        {
            if let Some(Block::Item { body, .. }) = self.section().blocks.get_mut(idx) {
                if !body.is_empty() {
                    body.push(sep);
                }
                body.push_str(text);
            }
            return;
        }
        match self.para {
            Some((idx, n)) => {
                if let Some(Block::Text(t)) = self.section().blocks.get_mut(idx) {
                    if !t.is_empty() {
                        t.push(sep);
                    }
                    t.push_str(text);
                }
                self.para = Some((idx, n + 1));
            }
            None => {
                let sec = self.section();
                sec.blocks.push(Block::Text(text.to_owned()));
                let idx = sec.blocks.len() - 1;
                self.para = Some((idx, 1));
            }
        }
    }

    fn text(&mut self, line: &str) {
        if line.trim().is_empty() {
            // A blank line is a paragraph break in fill mode.
            if !self.nofill && self.item.is_none() {
                self.break_para();
            }
            return;
        }
        let mark = true;
        let text = render(line, &self.strings, mark);
        self.add_text(&text);
    }

    /// One control line: a request or macro, dispatched by name to the step that
    /// handles it. Requests with no effect on the text that matters are ignored.
    fn control(&mut self, line: &str) {
        let line = strip_comment(line);
        let (name, rest) = request(line);
        let name = name.to_owned();
        match name.as_str() {
            "" | "\\\"" | "TH" | "Dt" | "UR" => {}
            "if" | "ie" => {
                let (taken, r) = condition(rest, &self.strings);
                if name == "ie" {
                    self.last_ie.push(taken);
                }
                let r = r.to_owned();
                self.conditional(taken, &r);
            }
            "el" => {
                let taken = !self.last_ie.pop().unwrap_or(true);
                self.conditional(taken, rest);
            }
            "de" | "de1" | "am" | "am1" | "ig" => self.skip_definition(&name, rest),
            "ds" | "ds1" => self.define_string(rest),
            "SH" | "Sh" => self.section_heading(rest),
            "SS" | "Ss" => self.subsection(rest),
            "PP" | "P" | "LP" | "Pp" | "Lp" | "HP" => self.paragraph(),
            "sp" | "Sp" | "br" => self.line_break(),
            "TP" | "TQ" => self.tagged_paragraph(name == "TQ"),
            "IP" => self.indented_paragraph(rest),
            "RS" => {
                // DocBook/Asciidoctor: a one-line paragraph followed by an indented
                // block is a tag and its body.
                self.para_to_item();
                self.rs_depth += 1;
            }
            "RE" => self.relative_end(),
            "nf" | "EX" | "Vb" => self.nofill = true,
            "fi" | "EE" | "Ve" => self.nofill = false,
            "PD" | "ne" | "in" | "ti" | "ll" | "ad" | "na" | "hy" | "nh" | "nr" | "ft" | "ps"
            | "vs" | "ta" | "tr" | "cs" | "bp" | "so" | "mso" | "IX" | "UC" | "Dd" | "Os"
            | "do" | "rm" | "rr" | "als" | "ec" | "eo" | "lf" | "cc" | "c2" | "ev" | "hw"
            | "ns" | "rs" | "fam" | "mk" | "rt" | "ce" | "ul" | "cu" | "it" | "pc" | "ss"
            | "char" | "fcolor" | "gcolor" | "Ed" | "Ek" | "Bk" | "Bf" | "Ef" | "Db" | "ME"
            | "UE" | "MT" | "OP" | "SY" | "YS" | "blm" | "lsm" | "Rs" | "Re" | "%A" | "%T"
            | "%B" | "%D" | "%I" | "%J" | "%N" | "%O" | "%P" | "%Q" | "%R" | "%U" | "%V" | "em"
            | "wh" | "ch" | "tm" | "ab" | "ex" | "warn" | "troff" | "nroff" | "pl" | "lt"
            | "po" | "fp" | "ftr" | "pso" | "sy" | "output" | "nx" | "Ex" | "Rv" | "St" | "Lb"
            | "In" | "Fd" | "Ft" | "Fn" | "Bt" | "Ud" | "Hf" | "Sm" => {
                self.man_extra(&name, rest);
            }
            "Bd" => self.mdoc_display(rest),
            "Bl" => self.mdoc_list(rest),
            "El" => self.mdoc_list_end(),
            "It" => self.mdoc_item(rest),
            "Xc" => self.mdoc_extended_end(rest),
            "Nd" => self.mdoc_description(rest),
            "Nm" if self.name.is_none() => self.mdoc_first_name(rest),
            "D1" | "Dl" => {
                let text = mdoc_inline(&split_args(rest), &self.strings, false, self.page_name());
                self.add_text(&text);
            }
            _ if self.set == MacroSet::Mdoc && mdoc_callable(&name) => {
                let args: Vec<String> = std::iter::once(name.clone())
                    .chain(split_args(rest))
                    .collect();
                let text = mdoc_inline(&args, &self.strings, true, self.page_name());
                self.mdoc_line(&text, name == "Nm");
            }
            "B" | "I" | "SM" | "SB" | "BR" | "RB" | "BI" | "IB" | "RI" | "IR" | "CW" | "CR" => {
                let args = split_args(rest);
                // `.B` alone sets the next line's font; the next line is the text.
                if !args.is_empty() {
                    let text = man_font_line(&name, &args, &self.strings, true);
                    self.add_text(&text);
                }
            }
            _ => self.unknown_macro(&name, rest),
        }
    }

    /// The page's name (mdoc `.Nm`), or empty before it is known.
    fn page_name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// `.de`/`.am`/`.ig`: a macro definition or an ignored block; its lines are skipped
    /// up to the end marker (`..` unless named).
    fn skip_definition(&mut self, name: &str, rest: &str) {
        let args = split_args(rest);
        let end = if name == "ig" {
            args.first()
        } else {
            args.get(1)
        };
        self.skip_until = Some(end.cloned().unwrap_or_else(|| ".".to_owned()));
    }

    /// `.ds NAME VALUE`: a string for `\*(NAME` (a leading `"` keeps leading blanks).
    fn define_string(&mut self, rest: &str) {
        let r = rest.trim_start();
        let end = r.find([' ', '\t']).unwrap_or(r.len());
        let key = r[..end].to_owned();
        let value = r[end..].trim_start_matches([' ', '\t']);
        let value = value.strip_prefix('"').unwrap_or(value);
        self.strings.insert(key, value.to_owned());
    }

    /// `.SH`/`.Sh`: a new section.
    fn section_heading(&mut self, rest: &str) {
        let text = if self.set == MacroSet::Mdoc {
            mdoc_inline(&split_args(rest), &self.strings, false, "")
        } else {
            split_args(rest)
                .iter()
                .map(|a| render(a, &self.strings, false))
                .collect::<Vec<_>>()
                .join(" ")
        };
        self.new_section(text);
    }

    /// `.SS`/`.Ss`: a subsection heading, which ends any open item or indent.
    fn subsection(&mut self, rest: &str) {
        self.break_all();
        self.rs_depth = 0;
        let text = split_args(rest)
            .iter()
            .map(|a| render(a, &self.strings, false))
            .collect::<Vec<_>>()
            .join(" ");
        self.section()
            .blocks
            .push(Block::Sub(text.trim().to_owned()));
    }

    /// `.PP` and its kin: a paragraph of an item's indented body, else the end of the
    /// paragraph and of any item.
    fn paragraph(&mut self) {
        if self.item.is_some_and(|(_, d)| self.rs_depth > d)
            || (self.set == MacroSet::Mdoc && self.item.is_some())
        {
            self.add_text("\n");
            self.break_para();
        } else {
            self.break_all();
        }
    }

    /// `.sp`/`.br`: a line break inside an item, else the end of the paragraph.
    fn line_break(&mut self) {
        if self.item.is_some() {
            if self.pending == Pending::None && !self.xo {
                self.add_text("\n");
            }
        } else {
            self.break_para();
        }
    }

    /// `.TP` starts an item whose tag is the next line; `.TQ` adds another tag (an
    /// alias) to the open item.
    fn tagged_paragraph(&mut self, alias: bool) {
        if alias
            && let Some((idx, _)) = self.item
            && let Some(Block::Item { tags, .. }) = self.section().blocks.get_mut(idx)
        {
            tags.push(String::new());
            self.pending = Pending::TpTag;
            return;
        }
        let depth = self.rs_depth;
        self.start_item(None, depth);
        self.pending = Pending::TpTag;
    }

    /// `.IP TAG`: an item with that tag. Untagged, an indented paragraph: it goes on
    /// with the open item, or makes a one-line paragraph before it (`.HP` style) its tag.
    fn indented_paragraph(&mut self, rest: &str) {
        let args = split_args(rest);
        match args.first().map(|a| render(a, &self.strings, true)) {
            Some(t) if !t.trim().is_empty() => {
                let depth = self.rs_depth;
                self.start_item(Some(t), depth);
            }
            _ => {
                if self.para_to_item() {
                } else if self.item.is_some() {
                    self.add_text("\n");
                } else {
                    self.break_para();
                }
            }
        }
    }

    /// `.RE`: one indent less; back at or above the open item's depth, the item ends.
    fn relative_end(&mut self) {
        self.rs_depth = self.rs_depth.saturating_sub(1);
        if let Some((_, d)) = self.item
            && self.rs_depth <= d
        {
            self.break_all();
        }
    }

    /// mdoc `.Bd`: a display block; literal or unfilled ones are no-fill.
    fn mdoc_display(&mut self, rest: &str) {
        if rest.contains("-literal") || rest.contains("-unfilled") {
            self.nofill = true;
        }
        if self.item.is_none() {
            self.break_para();
        }
    }

    /// mdoc `.Bl`: a list; bullet, dash, enumerated and plain item lists take no tags.
    fn mdoc_list(&mut self, rest: &str) {
        let tags = !["-bullet", "-dash", "-hyphen", "-enum", "-item"]
            .iter()
            .any(|k| rest.contains(k));
        self.lists.push(tags);
        self.para = None;
    }

    /// mdoc `.El`: the end of a list and of its open item.
    fn mdoc_list_end(&mut self) {
        self.lists.pop();
        self.xo = false;
        self.pending = Pending::None;
        self.item = None;
        self.para = None;
    }

    /// mdoc `.It`: an item of the open list, its tag the line's macros (a tag ending in
    /// `Xo` goes on until `.Xc`). A new `.It` never merges into the previous item:
    /// `-compact` lists put each option on its own `.It`.
    fn mdoc_item(&mut self, rest: &str) {
        let depth = self.lists.len().saturating_sub(1);
        let takes_tag = self.lists.last().copied().unwrap_or(true);
        let args = split_args(rest);
        let ends_xo = args.last().is_some_and(|a| a == "Xo");
        let tag = if takes_tag {
            mdoc_inline(&args, &self.strings, true, self.page_name())
        } else {
            String::new()
        };
        self.item = None;
        self.start_item(Some(tag), depth);
        self.xo = ends_xo && takes_tag;
    }

    /// mdoc `.Xc`: the end of an extended tag, with the line's last words of it.
    fn mdoc_extended_end(&mut self, rest: &str) {
        if self.xo {
            let args = split_args(rest);
            if !args.is_empty() {
                let text = mdoc_inline(&args, &self.strings, true, self.page_name());
                self.add_text(&text);
            }
        }
        self.xo = false;
    }

    /// mdoc `.Nd`: the one-line description of NAME.
    fn mdoc_description(&mut self, rest: &str) {
        let text = mdoc_inline(&split_args(rest), &self.strings, false, "");
        self.name_description = Some(text.clone());
        self.add_text(&format!("- {text}"));
    }

    /// The first mdoc `.Nm` with an argument names the page; later bare `.Nm`s repeat it.
    fn mdoc_first_name(&mut self, rest: &str) {
        let args = split_args(rest);
        if let Some(n) = args.first() {
            self.name = Some(render(n, &self.strings, false));
        }
        let args: Vec<String> = std::iter::once("Nm".to_owned()).chain(args).collect();
        let text = mdoc_inline(&args, &self.strings, true, self.page_name());
        self.mdoc_line(&text, true);
    }

    /// A macro atip does not know (a page's own): in a man page, the arguments of a
    /// capitalised one are likely text.
    fn unknown_macro(&mut self, name: &str, rest: &str) {
        if self.set != MacroSet::Man {
            return;
        }
        let args = split_args(rest);
        if !args.is_empty()
            && name.chars().all(|c| c.is_ascii_alphabetic())
            && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        {
            let text = args
                .iter()
                .map(|a| render(a, &self.strings, true))
                .collect::<Vec<_>>()
                .join(" ");
            self.add_text(&text);
        }
    }

    /// Requests whose only effect that matters is on no-fill mode or SYNOPSIS text.
    fn man_extra(&mut self, name: &str, rest: &str) {
        match name {
            "SY" => {
                self.break_para();
                let args = split_args(rest);
                let text = args
                    .iter()
                    .map(|a| render(a, &self.strings, true))
                    .collect::<Vec<_>>()
                    .join(" ");
                self.add_text(&text);
            }
            "OP" => {
                let args = split_args(rest);
                let mut text = String::from("[");
                if let Some(f) = args.first() {
                    text.push_str(&render(f, &self.strings, false));
                }
                if let Some(v) = args.get(1) {
                    text.push_str(&format!(
                        " {OPEN}{}{CLOSE}",
                        render(v, &self.strings, false)
                    ));
                }
                text.push(']');
                self.add_text(&text);
            }
            "Fn" | "Ft" | "Fd" | "In" | "St" | "Lb" => {}
            _ => {}
        }
    }

    /// Adds an mdoc macro line's text; in SYNOPSIS a `.Nm` starts a new line.
    fn mdoc_line(&mut self, text: &str, is_nm: bool) {
        if text.is_empty() {
            return;
        }
        if is_nm && self.mark_all && self.sections.last().is_some_and(|s| s.name == "SYNOPSIS") {
            self.break_para();
        }
        self.add_text(text);
    }
}

fn closing_punct_char(c: char) -> bool {
    matches!(c, '.' | ',' | ':' | ';' | ')' | ']' | '?' | '!')
}

/// Renders a man(7) font macro line: `.B`/`.I` join their words with blanks, the
/// alternating ones (`.BR`…) without.
fn man_font_line(
    name: &str,
    args: &[String],
    strings: &HashMap<String, String>,
    mark: bool,
) -> String {
    let fonts: Vec<char> = match name {
        "B" | "SB" => vec!['B'],
        "I" => vec!['I'],
        "SM" | "CW" | "CR" => vec!['R'],
        _ => name.chars().collect(),
    };
    let alternate = fonts.len() > 1;
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        let f = fonts[i % fonts.len()];
        let text = render(a, strings, mark);
        if !alternate && i > 0 {
            out.push(' ');
        }
        if f == 'I' && mark && !text.is_empty() && !text.starts_with(OPEN) {
            out.push(OPEN);
            out.push_str(&text);
            out.push(CLOSE);
        } else {
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_strings() -> HashMap<String, String> {
        HashMap::new()
    }

    fn blocks(page: &Page, section: &str) -> Vec<Block> {
        page.section(&[section])
            .map(|s| s.blocks.clone())
            .unwrap_or_default()
    }

    fn item(tags: &[&str], body: &str, depth: usize) -> Block {
        Block::Item {
            tags: tags.iter().map(|t| t.to_string()).collect(),
            body: body.to_string(),
            depth,
        }
    }

    #[test]
    fn arguments_split_on_blanks_and_quotes() {
        assert_eq!(
            split_args(r#"a  "b c" "say ""hi""" d\ e"#),
            ["a", "b c", r#"say "hi""#, r"d\ e"]
        );
        // Copy mode: `\\` in an argument is one backslash.
        assert_eq!(split_args(r"\\fBx"), [r"\fBx"]);
        assert_eq!(split_args("   "), Vec::<String>::new());
        assert_eq!(split_args(r#""unterminated"#), ["unterminated"]);
    }

    #[test]
    fn escapes_resolve_to_their_text() {
        let s = no_strings();
        assert_eq!(render(r"\-\-all", &s, false), "--all");
        assert_eq!(render(r"a\(emb\[en]c", &s, false), "a\u{2014}b\u{2013}c");
        assert_eq!(render(r"\[u00E9]t\[char46]", &s, false), "ét.");
        assert_eq!(render(r"\C'bu'\N'65'", &s, false), "\u{2022}A");
        assert_eq!(render(r"x\&y\e\\z", &s, false), r"xy\\z");
        assert_eq!(render(r"a\ b\~c", &s, false), "a b c");
        assert_eq!(render(r"\s-1SMALL\s0 \s+2big", &s, false), "SMALL big");
        assert_eq!(render(r"w\w'abc'x\h'1n'y", &s, false), "wx y");
        assert_eq!(render(r#"keep\" a comment"#, &s, false), "keep");
        // Unknown glyphs vanish; a trailing backslash is dropped.
        assert_eq!(render("\\[nope]x\\", &s, false), "x");
    }

    #[test]
    fn fonts_mark_italics_only_when_asked() {
        let s = no_strings();
        assert_eq!(render(r"\fB\-n\fR \fIcount\fP", &s, false), "-n count");
        let marked_text = marked(&render(r"\fB\-n\fR \fIcount\fP", &s, true));
        assert_eq!(marked_text, "-n <count>");
        // An italic run left open is closed at the end; an empty one leaves no marks.
        assert_eq!(marked(&render(r"\fIfile", &s, true)), "<file>");
        assert_eq!(marked(&render(r"x\fI\fR", &s, true)), "x");
        assert_eq!(
            marked(&render(r"\f(BIbold-italic\f[]", &s, true)),
            "<bold-italic>"
        );
    }

    #[test]
    fn strings_are_defined_used_and_bounded() {
        let page = parse(
            ".TH T 1\n.ds Vr 2.5\n.SH NAME\nt \\- version \\*(Vr and \\*[Vr] \\*(lqq\\*(rq\n",
        );
        assert_eq!(
            blocks(&page, "NAME"),
            [Block::Text("t - version 2.5 and 2.5 \"q\"".into())]
        );
        // A string that names itself does not loop forever.
        let mut loops = HashMap::new();
        loops.insert("a".to_string(), r"x\*a".to_string());
        assert_eq!(render(r"\*a", &loops, false), "x".repeat(8));
    }

    #[test]
    fn man_sections_paragraphs_and_tagged_items() {
        let src = "\
.TH TOOL 1
.SH NAME
tool \\- does things
.SH OPTIONS
Intro line one
and two.
.PP
Second paragraph.
.TP
.B \\-v, \\-\\-verbose
Say more.
.TP
\\fB\\-o\\fR \\fIfile\\fR
Write to
.I file .
.SS Advanced
.IP \\-x 4
Expert mode.
";
        let page = parse(src);
        assert_eq!(page.macro_set, MacroSet::Man);
        assert_eq!(
            page.sections
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["NAME", "OPTIONS"]
        );
        assert_eq!(
            blocks(&page, "options"),
            [
                Block::Text("Intro line one and two.".into()),
                Block::Text("Second paragraph.".into()),
                item(&["-v, --verbose"], "Say more.", 0),
                item(&["-o <file>"], "Write to file .", 0),
                Block::Sub("Advanced".into()),
                item(&["-x"], "Expert mode.", 0),
            ]
        );
    }

    #[test]
    fn tq_and_pd0_pairs_are_aliases_of_one_item() {
        let src = ".TH T 1\n.SH OPTIONS\n.TP\n\\-a\n.TQ\n\\-\\-all\nEverything.\n.PD 0\n.TP\n\\-b\n.TP\n\\-\\-brief\n.PD\nShort.\n";
        assert_eq!(
            blocks(&parse(src), "OPTIONS"),
            [
                item(&["-a", "--all"], "Everything.", 0),
                item(&["-b", "--brief"], "Short.", 0),
            ]
        );
    }

    #[test]
    fn docbook_paragraph_then_indented_block_is_an_item() {
        let src = ".TH T 1\n.SH OPTIONS\n.PP\n\\fB\\-q\\fR\n.RS 4\nQuiet.\n.RE\n.PP\nAfter.\n";
        assert_eq!(
            blocks(&parse(src), "OPTIONS"),
            [item(&["-q"], "Quiet.", 0), Block::Text("After.".into()),]
        );
    }

    #[test]
    fn conditionals_take_the_nroff_branch_and_skip_definitions() {
        let src = "\
.TH T 1
.de XX
.SH NOT A SECTION
..
.ig
ignored text
..
.ie n .ds Q \"nroff
.el .ds Q troff
.if t \\{\\
.SH TROFF ONLY
\\}
.if !t \\{
.SH DESCRIPTION
Quote \\*Q here.
.\\}
.if '\\*Q'x' unequal
";
        let page = parse(src);
        assert_eq!(
            page.sections
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            ["DESCRIPTION"]
        );
        assert_eq!(
            blocks(&page, "DESCRIPTION"),
            [Block::Text("Quote nroff here.".into())]
        );
    }

    #[test]
    fn comments_and_continuations() {
        let src =
            ".TH T 1\n.\\\" a comment\n.SH DESCRIPTION\none\\\" trailing\ncontin\\\nued \\# gone\n";
        assert_eq!(
            blocks(&parse(src), "DESCRIPTION"),
            [Block::Text("one continued".into())]
        );
        assert_eq!(strip_comment(r#"a \\\" b"#), r"a \\");
        assert_eq!(request(".TP\\fBx"), ("TP", "\\fBx"));
        assert_eq!(request(".  SH  NAME  "), ("SH", "NAME  "));
    }

    #[test]
    fn synopsis_keeps_placeholders_marked() {
        let src = ".TH T 1\n.SH SYNOPSIS\n.B tool\n[\\fB\\-n\\fR \\fIcount\\fR]\n\\fIfile\\fR...\n";
        assert_eq!(
            blocks(&parse(src), "SYNOPSIS"),
            [Block::Text("tool [-n <count>] <file>...".into())]
        );
    }

    #[test]
    fn tables_leave_their_cells_as_text() {
        // tbl is not laid out: the cells survive as text, markup lines are dropped.
        let src = ".TH T 1\n.SH EXIT STATUS\n.TS\nl l.\n0\tsuccess\n1\tfailure\n.TE\n";
        let text = match blocks(&parse(src), "EXIT STATUS").first() {
            Some(Block::Text(t)) => t.clone(),
            other => panic!("{other:?}"),
        };
        assert!(
            text.contains("0\tsuccess") && text.contains("1\tfailure"),
            "{text}"
        );
        assert!(!text.contains(".TS") && !text.contains(".TE"), "{text}");
    }

    #[test]
    fn mdoc_names_lists_and_inline_macros() {
        let src = "\
.Dd January 1, 2026
.Dt TOOL 1
.Os
.Sh NAME
.Nm tool
.Nd does things
.Sh SYNOPSIS
.Nm
.Op Fl v
.Op Fl o Ar file
.Ar path ...
.Sh DESCRIPTION
The
.Nm
utility:
.Bl -tag -width Ds
.It Fl v
Verbose.
.It Fl o Ar file
Output to
.Ar file .
.It Xo
.Fl n
.Ar count
.Xc
Count.
.El
.Bl -bullet
.It
A bullet.
.El
";
        let page = parse(src);
        assert_eq!(page.macro_set, MacroSet::Mdoc);
        assert_eq!(page.name.as_deref(), Some("tool"));
        assert_eq!(page.name_description.as_deref(), Some("does things"));
        assert_eq!(
            blocks(&page, "SYNOPSIS"),
            [Block::Text("tool [-v] [-o <file>] <path> ...".into())]
        );
        let description = blocks(&page, "DESCRIPTION");
        assert_eq!(description[0], Block::Text("The tool utility:".into()));
        assert_eq!(description[1], item(&["-v"], "Verbose.", 0));
        assert_eq!(description[2], item(&["-o <file>"], "Output to file.", 0));
        let Block::Item { tags, body, .. } = &description[3] else {
            panic!("{:?}", description[3]);
        };
        let tag = tags.join(" ");
        assert!(tag.contains("-n") && tag.contains("<count>"), "{tag}");
        assert_eq!(body, "Count.");
        assert!(
            matches!(&description[4], Block::Item { body, .. } if body == "A bullet."),
            "{:?}",
            description[4]
        );
    }

    #[test]
    fn mdoc_delimiters_glue_and_enclose() {
        let line = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            mdoc_inline(&args, &no_strings(), false, "tool")
        };
        // An enclosure with no words of its own encloses the rest of the line.
        assert_eq!(line(&["Op", "Fl", "v", "Ar", "n"]), "[-v n]");
        assert_eq!(line(&["Dq", "quoted", "text"]), "\"quoted text\"");
        assert_eq!(line(&["Oo", "Fl", "a", "Oc"]), "[-a]");
        assert_eq!(line(&["Pf", "(", "Ar", "x", ")"]), "(x)");
        // Trailing punctuation follows the macro's text without a space.
        assert_eq!(line(&["Xr", "ls", "1", ","]), "ls(1),");
        assert_eq!(line(&["Fl", "o", "Ns", "Ar", "file"]), "-ofile");
        // A bare `Fl` is a dash glued to what follows; a bare `Ar` and `Nm` have defaults.
        assert_eq!(line(&["Fl", "Ar", "x"]), "-x");
        assert_eq!(line(&["Fl"]), "-");
        assert_eq!(line(&["Ar"]), "file ...");
        assert_eq!(line(&["Nm"]), "tool");
        assert_eq!(line(&["Bx", "4.4"]), "BSD 4.4");
        // Marked placeholders, for the option parser.
        let marked = mdoc_inline(
            &["Ar".to_string(), "n".to_string()],
            &no_strings(),
            true,
            "",
        );
        assert_eq!(marked, format!("{OPEN}n{CLOSE}"));
    }

    #[test]
    fn unknown_macros_and_ignored_blocks() {
        let src = "\
.TH T 1
.SH DESCRIPTION
.ig
.SH HIDDEN
..
.Custom shown words
.lower hidden words
.de XX
.SH ALSO HIDDEN
..
";
        let page = parse(src);
        assert_eq!(
            blocks(&page, "DESCRIPTION"),
            [Block::Text("shown words".into())]
        );
        assert!(page.section(&["HIDDEN"]).is_none());
        assert!(page.section(&["ALSO HIDDEN"]).is_none());
    }

    #[test]
    fn oversized_pages_are_cut_on_a_char_boundary() {
        let mut src = ".TH T 1\n.SH DESCRIPTION\n".to_string();
        while src.len() <= MAX_PAGE {
            src.push('é');
        }
        let page = parse(&src);
        let Some(Block::Text(text)) = blocks(&page, "DESCRIPTION").first().cloned() else {
            panic!("no text");
        };
        assert!(text.len() < MAX_PAGE && text.starts_with('é'));
    }

    #[test]
    fn malformed_input_never_panics() {
        let pieces = [
            ".", "'", "\\", "\\f", "\\f(", "\\f[", "\\*", "\\*(", "\\*[x", "\\[", "\\(", "\\s",
            "\\s+", "\\s'", "\\N'", "\\C", "\\h", "\\w'", "\\{", "\\}", ".if", ".ie", ".el",
            ".if '", ".if \\{", ".de", ".ig", ".ds", ".ds x", ".TP", ".TQ", ".IP", ".RS", ".RE",
            ".RE", ".Bl", ".El", ".El", ".It", ".It Xo", ".Xc", ".Nm", ".Nd", ".Sh", ".SH", ".SS",
            ".Op", ".Fl", ".Ar", ".Ns", ".B", ".BR", "é", "\u{E000}", "\u{E001}", "\t", "\"",
            "\"\"", ".Pf", ".Oo", ".Oc", ".Dd",
        ];
        for a in pieces {
            for b in pieces {
                for joiner in ["", " ", "\n", "\\\n"] {
                    let src = format!(".TH T 1\n.SH OPTIONS\n{a}{joiner}{b}\n{b}{a}");
                    let _ = parse(&src);
                    let _ = render(&src, &no_strings(), true);
                }
            }
        }
    }
}
