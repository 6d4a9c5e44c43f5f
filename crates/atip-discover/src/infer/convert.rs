//! From a parsed manual page to an ATIP document.
//!
//! What is read, and from where (spec/infer.md has the normative list):
//! - description: the NAME line after its dash (mdoc `.Nd`);
//! - positional arguments: the first SYNOPSIS form that starts with the command's name;
//! - options: every tagged item whose tag starts with a flag, in any section but those
//!   that never hold options (SEE ALSO, EXAMPLES, FILES, ENVIRONMENT…). Aliases are the
//!   flags of one tag and the tags of one item; a value is what follows a flag (`=SIZE`,
//!   `<file>`, `{a,b}`), and names its type;
//! - subcommands: the items of a COMMANDS section when the SYNOPSIS takes a command.
//!
//! Effects are never stated: a page cannot prove what a program does. A few words in the
//! page's own summary add warnings (see [`warnings`]).

use super::roff::{Block, MacroSet, Page, Section};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Longest description kept (characters); the validator warns past 200.
const MAX_DESCRIPTION: usize = 200;

/// One option read from a page.
#[derive(Debug, Clone, PartialEq)]
pub struct InferredOption {
    /// Property name (first long flag without dashes, else the short flag).
    pub name: String,
    /// Flags and aliases, as typed.
    pub flags: Vec<String>,
    /// The value's name as the page writes it, if the option takes one.
    pub value: Option<String>,
    /// ATIP type: boolean, string, file, directory, integer or enum.
    pub kind: &'static str,
    /// Values of an enum.
    pub values: Vec<String>,
    /// First sentence of the description.
    pub description: String,
}

/// One positional argument.
#[derive(Debug, Clone, PartialEq)]
pub struct InferredArgument {
    /// Name, lower case.
    pub name: String,
    /// ATIP type: string, file or directory.
    pub kind: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// Whether it repeats.
    pub variadic: bool,
}

/// One subcommand.
#[derive(Debug, Clone, PartialEq)]
pub struct InferredCommand {
    /// The word typed after the tool's name.
    pub name: String,
    /// First sentence of its description.
    pub description: String,
    /// Its positional arguments.
    pub arguments: Vec<InferredArgument>,
    /// Its own options.
    pub options: Vec<InferredOption>,
}

/// Everything read from one page.
#[derive(Debug, Clone, PartialEq)]
pub struct Inferred {
    /// One-line description (empty when the page has none).
    pub description: String,
    /// Positional arguments of the tool itself.
    pub arguments: Vec<InferredArgument>,
    /// The tool's options.
    pub options: Vec<InferredOption>,
    /// Subcommands (COMMANDS section or per-command pages).
    pub commands: Vec<InferredCommand>,
    /// Warnings from the page's own words.
    pub warnings: Vec<String>,
    /// The first paragraph of the DESCRIPTION section, on one line (empty when there is
    /// none): what the program does in more words than the NAME line, for search.
    pub details: String,
}

/// Sections that never list the program's options.
fn not_options(name: &str) -> bool {
    matches!(
        name,
        "NAME"
            | "SYNOPSIS"
            | "SEE ALSO"
            | "EXAMPLES"
            | "EXAMPLE"
            | "FILES"
            | "ENVIRONMENT"
            | "ENVIRONMENT VARIABLES"
            | "EXIT STATUS"
            | "EXIT CODES"
            | "RETURN VALUE"
            | "DIAGNOSTICS"
            | "BUGS"
            | "AUTHOR"
            | "AUTHORS"
            | "HISTORY"
            | "COPYRIGHT"
            | "REPORTING BUGS"
            | "STANDARDS"
            | "CONFORMING TO"
            | "AVAILABILITY"
            | "COLOPHON"
    ) || is_commands_section(name)
        // A shell's builtins: their options are theirs, not the shell's.
        || name.contains("BUILTIN")
}

/// Whether a section lists subcommands.
fn is_commands_section(name: &str) -> bool {
    matches!(
        name,
        "COMMANDS" | "SUBCOMMANDS" | "COMMAND" | "SUB-COMMANDS"
    ) || (name.ends_with(" COMMANDS") && !name.contains("BUILTIN") && !name.contains("SHELL"))
}

/// Reads a page into [`Inferred`]. `tool` is the command's name as typed.
pub(crate) fn infer(page: &Page, tool: &str) -> Inferred {
    let description = name_description(page);
    let synopsis = synopsis_forms(page, tool);
    let arguments = synopsis
        .first()
        .map(|form| positional(form, tool))
        .unwrap_or_default();
    let mut options = Vec::new();
    let mut seen = Seen::default();
    let own = OwnNames::of(page, tool, &synopsis);
    for section in &page.sections {
        if not_options(&section.name) || (!own.expressions && is_expressions(&section.name)) {
            continue;
        }
        collect_options(
            section,
            page.macro_set == MacroSet::Mdoc,
            &own,
            &mut options,
            &mut seen,
        );
    }
    let takes_command = synopsis
        .iter()
        .any(|f| f.to_ascii_lowercase().contains("command"));
    let mut commands = Vec::new();
    if takes_command {
        let mut names = HashSet::new();
        for section in page
            .sections
            .iter()
            .filter(|s| is_commands_section(&s.name))
        {
            collect_commands(section, &mut commands, &mut names);
        }
    }
    let warnings = warnings(page, &description);
    Inferred {
        details: details(page),
        description,
        arguments,
        options,
        commands,
        warnings,
    }
}

/// The NAME line's description: what follows the first dash.
fn name_description(page: &Page) -> String {
    if let Some(nd) = &page.name_description {
        return one_line(nd);
    }
    let Some(sec) = page.section(&["NAME"]) else {
        return String::new();
    };
    let text: Vec<&str> = sec
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    let text = text.join(" ");
    let desc = [" - ", " \u{2014} ", " \u{2013} ", " -- ", "- ", " -"]
        .iter()
        .find_map(|d| text.split_once(d).map(|(_, r)| r))
        .unwrap_or("");
    one_line(desc)
}

/// The DESCRIPTION section's first paragraph, on one line and cut like a description.
/// A NAME line says what a program is in a few words of its own (`The GNU linker`); the
/// paragraph says it in the words a task uses (`combines a number of object and archive
/// files`).
fn details(page: &Page) -> String {
    page.section(&["DESCRIPTION"])
        .and_then(|sec| {
            sec.blocks.iter().find_map(|b| match b {
                Block::Text(t) => Some(one_line(t.split('\n').next().unwrap_or(t))),
                _ => None,
            })
        })
        .unwrap_or_default()
}

/// Whitespace collapsed, cut to [`MAX_DESCRIPTION`] at a word boundary.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len().min(MAX_DESCRIPTION + 8));
    let mut chars = 0;
    for w in s.split_whitespace() {
        let len = w.chars().count();
        if chars + len + 1 > MAX_DESCRIPTION {
            if out.is_empty() {
                out.extend(w.chars().take(MAX_DESCRIPTION - 1));
            }
            out.push('\u{2026}');
            return out;
        }
        if !out.is_empty() {
            out.push(' ');
            chars += 1;
        }
        out.push_str(w);
        chars += len;
    }
    out
}

/// The first sentence of a description.
pub(crate) fn first_sentence(body: &str) -> String {
    let para = body.split('\n').next().unwrap_or(body);
    // The paragraph's words, one space apart, up to the first that ends a sentence: a
    // period that ends a word, unless the word is an abbreviation or one letter.
    let mut sentence = String::with_capacity(para.len().min(2 * MAX_DESCRIPTION));
    for word in para.split_whitespace() {
        let first = sentence.is_empty();
        if !first {
            sentence.push(' ');
        }
        sentence.push_str(word);
        if let Some(stem) = word.strip_suffix('.')
            && !(first && stem.is_empty())
            && !abbreviation(stem)
        {
            break;
        }
    }
    one_line(&sentence)
}

/// A word whose period does not end the sentence (`e.g.`, `etc.`, `A.`).
fn abbreviation(stem: &str) -> bool {
    stem.len() == 1
        || [
            "e.g", "i.e", "etc", "vs", "cf", "approx", "resp", "no", "incl",
        ]
        .iter()
        .any(|a| stem.eq_ignore_ascii_case(a))
}

/// Whether some SYNOPSIS form starts with `invocation` (`git commit`).
pub(crate) fn synopsis_starts_with(page: &Page, invocation: &str) -> bool {
    !synopsis_lines(page, invocation).is_empty()
}

/// SYNOPSIS forms that start with the words of `invocation`.
pub(crate) fn synopsis_lines(page: &Page, invocation: &str) -> Vec<String> {
    let Some(sec) = page.section(&["SYNOPSIS", "SYNTAX", "USAGE"]) else {
        return Vec::new();
    };
    let want: Vec<&str> = invocation.split_whitespace().collect();
    let mut forms = Vec::new();
    for b in &sec.blocks {
        let text = match b {
            Block::Text(t) => t.as_str(),
            Block::Item { tags, .. } => tags.first().map(String::as_str).unwrap_or(""),
            Block::Sub(_) => continue,
        };
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().take(want.len()).collect();
            if words == want {
                forms.push(line.trim().to_owned());
            }
        }
    }
    forms
}

/// SYNOPSIS forms (one per paragraph or line) that start with the tool's name.
fn synopsis_forms(page: &Page, tool: &str) -> Vec<String> {
    if tool.contains(' ') {
        return synopsis_lines(page, tool);
    }
    let Some(sec) = page.section(&["SYNOPSIS", "SYNTAX", "USAGE"]) else {
        return Vec::new();
    };
    let page_name = page.name.as_deref().unwrap_or(tool);
    let mut forms = Vec::new();
    for b in &sec.blocks {
        let text = match b {
            Block::Text(t) => t.as_str(),
            Block::Item { tags, .. } => tags.first().map(String::as_str).unwrap_or(""),
            Block::Sub(_) => continue,
        };
        for line in text.lines() {
            let line = line.trim();
            let first = line.split_whitespace().next().unwrap_or("");
            let first = first.trim_matches(|c| c == '<' || c == '>');
            let base = first.rsplit('/').next().unwrap_or(first);
            if base == tool || base == page_name {
                forms.push(line.to_owned());
            }
        }
    }
    forms
}

/// Words in SYNOPSIS that stand for options, not operands.
fn is_options_placeholder(word: &str) -> bool {
    let w = word.to_ascii_lowercase();
    let w = w.trim_end_matches("...").trim_end_matches('s');
    matches!(
        w,
        "option"
            | "flag"
            | "switche"
            | "global-option"
            | "global_option"
            | "common-option"
            | "generic-option"
            | "long-option"
            | "short-option"
    )
}

/// Positional arguments of a synopsis form (the tool or command name first).
pub(crate) fn positional(form: &str, skip_words: &str) -> Vec<InferredArgument> {
    let mut args: Vec<InferredArgument> = Vec::new();
    let skip = skip_words.split_whitespace().count();
    let mut words = 0;
    let mut form = SynopsisForm::new(form);
    while let Some(token) = form.next_word() {
        words += 1;
        if words <= skip || form.option_group.is_some() || form.after_flag {
            continue;
        }
        let Some(raw) = placeholder(&token) else {
            // A literal word (a fixed keyword): not an argument.
            continue;
        };
        let variadic =
            token.text.ends_with("...") || raw.ends_with("...") || form.ellipsis_follows();
        if is_options_placeholder(&raw) {
            continue;
        }
        let name = sanitize(&raw.trim_end_matches("...").to_ascii_lowercase());
        if name.is_empty() || args.iter().any(|a| same_name(&a.name, &name)) {
            continue;
        }
        // Once one operand is optional, those after it are too.
        let required = form.depth == 0 && args.iter().all(|a| a.required);
        let kind = match value_kind(&name) {
            "file" => "file",
            "directory" => "directory",
            _ => "string",
        };
        args.push(InferredArgument {
            name,
            kind,
            required,
            variadic,
        });
        if variadic {
            break;
        }
    }
    args
}

/// One word of a synopsis form: as written, and the name inside `<…>` when it is one.
struct SynopsisWord {
    text: String,
    angled: Option<String>,
}

/// The placeholder a synopsis word names: `<name>`, or an upper-case word (`FILE...`);
/// `None` for a literal keyword.
fn placeholder(word: &SynopsisWord) -> Option<String> {
    if let Some(name) = word.angled.as_ref().filter(|n| !n.is_empty()) {
        return Some(name.clone());
    }
    let token = &word.text;
    let upper = token
        .trim_end_matches("...")
        .chars()
        .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-' || c.is_ascii_digit());
    (token.len() >= 2 && upper && token.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
        .then(|| token.trim_end_matches("...").to_owned())
}

/// A synopsis form read word by word, keeping track of the brackets around each word.
struct SynopsisForm {
    chars: Vec<char>,
    i: usize,
    /// Bracket depth (`[` and `{`) at the current word.
    depth: usize,
    /// Bracket depth at which an option group started (skipped until it closes).
    option_group: Option<usize>,
    /// Inside a word that began with a flag: `-m[-]<module>`, `-l[<octal>]` name the
    /// flag's value (written against it, no blank between), never an operand.
    after_flag: bool,
}

impl SynopsisForm {
    fn new(form: &str) -> SynopsisForm {
        // A no-break space (pod2man writes `[\u{a0}-x\u{a0}]`) separates words like a
        // blank.
        let chars = form
            .chars()
            .map(|c| if c == '\u{a0}' { ' ' } else { c })
            .collect();
        SynopsisForm {
            chars,
            i: 0,
            depth: 0,
            option_group: None,
            after_flag: false,
        }
    }

    /// The next word, past blanks, `|` and brackets (which update the depth).
    fn next_word(&mut self) -> Option<SynopsisWord> {
        while let Some(&c) = self.chars.get(self.i) {
            if matches!(c, ' ' | '\t' | '|') {
                self.after_flag = false;
            }
            match c {
                '[' | '{' => self.open(),
                ']' | '}' => {
                    if self.option_group == Some(self.depth) {
                        self.option_group = None;
                    }
                    self.depth = self.depth.saturating_sub(1);
                    self.i += 1;
                }
                ' ' | '\t' | '|' => self.i += 1,
                _ => return Some(self.word()),
            }
        }
        None
    }

    /// An opening bracket. `[-x …]` opens an option group; so does `[[-e|-E] <code>]`,
    /// whose first word is a group of flags.
    fn open(&mut self) {
        self.depth += 1;
        let chars = &self.chars;
        let mut j = self.i + 1;
        while j < chars.len() && matches!(chars[j], ' ' | '[' | '{') {
            j += 1;
        }
        if self.option_group.is_none() && chars.get(j) == Some(&'-') {
            self.option_group = Some(self.depth);
        }
        self.i += 1;
    }

    /// The word starting here: `<…>` whole, else up to a blank, bracket or `|`.
    fn word(&mut self) -> SynopsisWord {
        let chars = &self.chars;
        let start = self.i;
        let mut angled = None;
        if chars[start] == '<' {
            let mut j = start + 1;
            while j < chars.len() && chars[j] != '>' {
                j += 1;
            }
            angled = Some(chars[start + 1..j.min(chars.len())].iter().collect());
            self.i = (j + 1).min(chars.len());
        } else {
            while self.i < chars.len()
                && !matches!(chars[self.i], ' ' | '\t' | '[' | ']' | '{' | '}' | '|')
            {
                self.i += 1;
            }
        }
        let text: String = self.chars[start..self.i].iter().collect();
        if text.starts_with('-') {
            self.after_flag = true;
        }
        SynopsisWord { text, angled }
    }

    /// `...` comes right after the word just read (possibly after closing brackets,
    /// blanks before them included: `[ <argument> ]...`).
    fn ellipsis_follows(&self) -> bool {
        let chars = &self.chars;
        let mut j = self.i;
        while j < chars.len() && matches!(chars[j], ']' | '}' | ' ') {
            let next = chars[j..]
                .iter()
                .collect::<String>()
                .trim_start()
                .chars()
                .take(3)
                .collect::<String>();
            if chars[j] == ' ' && !(next == "..." || next.starts_with([']', '}'])) {
                break;
            }
            j += 1;
        }
        let rest: String = chars[j.min(chars.len())..].iter().take(4).collect();
        rest.trim_start().starts_with("...")
    }
}

/// Flags and names already taken in one command.
#[derive(Default)]
struct Seen {
    flags: HashSet<String>,
    names: HashSet<String>,
}

fn same_name(a: &str, b: &str) -> bool {
    a.replace('_', "-") == b.replace('_', "-")
}

/// What the page calls its own program, to tell its options from those of the other
/// commands it documents (a shell's builtins).
pub(crate) struct OwnNames {
    /// The tool's words and the page's own name.
    names: Vec<String>,
    /// The SYNOPSIS takes an expression (`find … [expression]`): an EXPRESSION section
    /// then lists the program's own arguments, not another command's operators.
    expressions: bool,
}

impl OwnNames {
    fn of(page: &Page, tool: &str, synopsis: &[String]) -> OwnNames {
        let mut names: Vec<String> = tool.split_whitespace().map(str::to_owned).collect();
        names.extend(page.name.clone());
        let expressions = synopsis.iter().any(|f| {
            let f = f.to_ascii_lowercase();
            f.split_whitespace().skip(1).any(|w| w.contains("expr"))
        });
        OwnNames { names, expressions }
    }

    /// Whether `heading` (an item's tag or a sub-heading) is the synopsis of another
    /// command: a plain word, not this program's name, followed by options or operands
    /// (`set [-abefhkmnptuvxBCEHPT] [-o option-name]`, `bind [-m keymap]`). A heading in
    /// words (`General options`) is not one.
    fn other_command(&self, heading: &str) -> bool {
        let mut words = heading.split_whitespace();
        let Some(first) = words.next() else {
            return false;
        };
        let is_word = first
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric())
            && first
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        let then_args = words
            .next()
            .is_some_and(|w| w.starts_with(['[', '-', '<', '{']));
        is_word && then_args && !self.names.iter().any(|n| n == first)
    }
}

/// Sections describing an expression language (`CONDITIONAL EXPRESSIONS`): their
/// `-a file` items are operators.
fn is_expressions(name: &str) -> bool {
    name.contains("EXPRESSION")
}

fn collect_options(
    section: &Section,
    mdoc: bool,
    own: &OwnNames,
    out: &mut Vec<InferredOption>,
    seen: &mut Seen,
) {
    // Open items by depth, and whether each is another command's (`set [-abe…]`): the
    // items nested in it are that command's options.
    let mut open: Vec<(usize, bool)> = Vec::new();
    // Under a sub-heading that is another command's synopsis.
    let mut other_sub = false;
    for block in &section.blocks {
        let (tags, body, depth) = match block {
            Block::Sub(heading) => {
                other_sub = own.other_command(heading);
                open.clear();
                continue;
            }
            Block::Text(_) => continue,
            Block::Item { tags, body, depth } => (tags, body, *depth),
        };
        while open.last().is_some_and(|(d, _)| *d >= depth) {
            open.pop();
        }
        let in_other = other_sub || open.iter().any(|(_, other)| *other);
        open.push((depth, tags.first().is_some_and(|t| own.other_command(t))));
        // mdoc nests value lists inside an option's item; options are at the top.
        if in_other || (depth > 0 && mdoc) {
            continue;
        }
        if let Some(opt) = option_from_item(tags, body, seen) {
            out.push(opt);
        }
    }
}

/// The option an item documents, if its tag starts with a flag.
fn option_from_item(tags: &[String], body: &str, seen: &mut Seen) -> Option<InferredOption> {
    let mut specs = Vec::new();
    for tag in tags {
        specs.extend(parse_tag(tag));
    }
    let mut flags: Vec<String> = Vec::new();
    let mut value: Option<String> = None;
    for s in &specs {
        if !seen.flags.contains(&s.flag) && !flags.contains(&s.flag) {
            flags.push(s.flag.clone());
        }
        if value.is_none() {
            value.clone_from(&s.value);
        }
    }
    if flags.is_empty() {
        return None;
    }
    let long = flags.iter().find(|f| f.starts_with("--"));
    let base = long
        .or_else(|| flags.iter().find(|f| f.len() > 2))
        .unwrap_or(&flags[0]);
    let mut name = sanitize(base.trim_start_matches('-'));
    if name.is_empty() {
        name = "option".to_owned();
    }
    if seen.names.iter().any(|n| same_name(n, &name)) {
        let mut k = 2;
        while seen
            .names
            .iter()
            .any(|n| same_name(n, &format!("{name}-{k}")))
        {
            k += 1;
        }
        name = format!("{name}-{k}");
    }
    for f in &flags {
        seen.flags.insert(f.clone());
    }
    seen.names.insert(name.clone());
    let (kind, values) = match &value {
        None => ("boolean", Vec::new()),
        Some(v) => match enum_values(v).or_else(|| super::values::prose_enum(body, v)) {
            Some(vals) => ("enum", vals),
            None => (value_kind(v), Vec::new()),
        },
    };
    let mut description = first_sentence(body);
    if description.is_empty() {
        description = format!(
            "The {} option (undocumented on its man page).",
            flags.join(", ")
        );
    }
    Some(InferredOption {
        name,
        flags,
        value,
        kind,
        values,
        description,
    })
}

/// A flag as written in a tag, with its value's name.
#[derive(Debug, Clone, PartialEq)]
struct FlagSpec {
    flag: String,
    value: Option<String>,
}

fn flag_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '?' | '#' | '@' | '+')
}

/// Reads the flags of a tag such as `-a, --all`, `-n <min-len>`, `--block-size=SIZE`,
/// `-o file, --output=file`, `--[no-]color`. Stops at the first word that is neither a
/// flag, a separator nor a value.
fn parse_tag(tag: &str) -> Vec<FlagSpec> {
    let chars: Vec<char> = tag.chars().collect();
    let mut out: Vec<FlagSpec> = Vec::new();
    let mut i = 0;
    loop {
        skip_separators(&chars, &mut i, !out.is_empty());
        if i >= chars.len() || chars[i] != '-' {
            break;
        }
        let Some((dashes, name, negatable)) = read_flag(&chars, &mut i) else {
            break;
        };
        if name.is_empty() {
            // `-<NUM>`: a number typed as the flag; not a flag name. Skip it and its
            // separator.
            while i < chars.len() && chars[i] != '>' {
                i += 1;
            }
            i = (i + 1).min(chars.len());
            continue;
        }
        let value = read_value(&chars, &mut i);
        let flag = format!("{dashes}{name}");
        if negatable {
            out.push(FlagSpec {
                flag: flag.clone(),
                value: value.clone(),
            });
            out.push(FlagSpec {
                flag: format!("{dashes}no-{name}"),
                value: None,
            });
        } else {
            out.push(FlagSpec { flag, value });
        }
        if !more_flags(&chars, i) {
            break;
        }
    }
    out
}

/// Moves `i` past blanks.
fn skip_blank(chars: &[char], i: &mut usize) {
    while *i < chars.len() && matches!(chars[*i], ' ' | '\t') {
        *i += 1;
    }
}

/// Moves `i` past blanks and the separators between flags (`,` `|` `/` `;`, and `or`
/// after the first flag).
fn skip_separators(chars: &[char], i: &mut usize, after_a_flag: bool) {
    skip_blank(chars, i);
    while *i < chars.len() && matches!(chars[*i], ',' | '|' | '/' | ';') {
        *i += 1;
        skip_blank(chars, i);
    }
    if chars[*i..].starts_with(&['o', 'r', ' ']) && after_a_flag {
        *i += 3;
        skip_blank(chars, i);
    }
}

/// Reads the flag at `i` (on its first dash): its dashes, its name and whether it is
/// written `--[no-]name`. An empty name means `-<NUM>` (then `i` is on the `<`); `None`
/// means no flag name follows the dashes.
fn read_flag(chars: &[char], i: &mut usize) -> Option<(String, String, bool)> {
    let start = *i;
    while *i < chars.len() && chars[*i] == '-' && *i - start < 2 {
        *i += 1;
    }
    let mut negatable = false;
    if chars[*i..].starts_with(&['[', 'n', 'o', '-', ']']) {
        negatable = true;
        *i += 5;
    } else if chars[*i..].starts_with(&['[', 'n', 'o', ']']) {
        negatable = true;
        *i += 4;
    }
    let name_start = *i;
    while *i < chars.len() && flag_char(chars[*i]) {
        *i += 1;
    }
    // Trailing punctuation belongs to the sentence, not the flag.
    while *i > name_start
        && matches!(chars[*i - 1], '.' | ':' | '?')
        && !(*i - name_start == 1 && chars[*i - 1] == '?')
    {
        *i -= 1;
    }
    let dashes: String = chars[start..name_start.min(start + 2)]
        .iter()
        .filter(|c| **c == '-')
        .collect();
    let name: String = chars[name_start..*i].iter().collect();
    if name.is_empty() && *i < chars.len() && chars[*i] == '<' && !negatable {
        return Some((dashes, name, false));
    }
    if name.is_empty() || name.chars().all(|c| c == '-') || name.starts_with('-') {
        return None;
    }
    Some((dashes, name, negatable))
}

/// After a flag and its value comes a separator, another flag, or the end; anything
/// else ends the tag.
fn more_flags(chars: &[char], i: usize) -> bool {
    let mut j = i;
    skip_blank(chars, &mut j);
    j >= chars.len()
        || matches!(chars[j], ',' | '|' | '/' | ';' | '-')
        || chars[j..].starts_with(&['o', 'r', ' '])
}

/// Reads the value after a flag: `=V`, `[=V]`, `<V>`, ` <V>`, ` V`, ` {a,b}`, ` [V]`.
fn read_value(chars: &[char], i: &mut usize) -> Option<String> {
    if *i >= chars.len() {
        return None;
    }
    match chars[*i] {
        '=' => {
            *i += 1;
            if *i < chars.len() && chars[*i] == '{' {
                return clean_value(take_group(chars, i, '{', '}'));
            }
            clean_value(take_word(chars, i))
        }
        // `[=V]` or `[V]` attached.
        '[' => clean_value(take_group(chars, i, '[', ']')),
        '<' => clean_value(take_group(chars, i, '<', '>')),
        ' ' | '\t' => spaced_value(chars, i),
        _ => None,
    }
}

/// The bracketed group at `i` (nested brackets of the same kind included), `i` moved
/// past its close.
fn take_group(chars: &[char], i: &mut usize, open: char, close: char) -> String {
    let start = *i;
    let mut depth = 0;
    while *i < chars.len() {
        if chars[*i] == open {
            depth += 1;
        } else if chars[*i] == close {
            depth -= 1;
            if depth == 0 {
                *i += 1;
                break;
            }
        }
        *i += 1;
    }
    chars[start..*i].iter().collect()
}

/// The word at `i` up to a blank or separator (a `<…>` inside it whole).
fn take_word(chars: &[char], i: &mut usize) -> String {
    let n = chars.len();
    let start = *i;
    while *i < n && !matches!(chars[*i], ' ' | '\t' | ',' | '|' | ';') {
        if chars[*i] == '<' {
            while *i < n && chars[*i] != '>' {
                *i += 1;
            }
        }
        *i += 1;
    }
    chars[start..(*i).min(n)].iter().collect()
}

/// A value without its brackets, `=` and blanks; `None` when nothing is left.
fn clean_value(s: String) -> Option<String> {
    let s = s
        .trim_matches(|c: char| c == '[' || c == ']' || c == '=' || c == ' ')
        .to_owned();
    if s.is_empty() { None } else { Some(s) }
}

/// A value after blanks: ` <V>`, ` {a,b}`, ` [V]` (not ` [-x]`, another flag), or a
/// bare word that names a value.
fn spaced_value(chars: &[char], i: &mut usize) -> Option<String> {
    let mut j = *i;
    skip_blank(chars, &mut j);
    match *chars.get(j)? {
        c @ ('<' | '{') => {
            *i = j;
            let close = if c == '<' { '>' } else { '}' };
            clean_value(take_group(chars, i, c, close))
        }
        '[' if chars.get(j + 1).is_some_and(|c| *c != '-') => {
            *i = j;
            clean_value(take_group(chars, i, '[', ']'))
        }
        c if c.is_ascii_alphabetic()
            || (c == '.' && chars.get(j + 1).is_some_and(|c| c.is_ascii_alphanumeric())) =>
        {
            bare_value(chars, j, i)
        }
        _ => None,
    }
}

/// The bare word at `j` as a flag's value: one in upper case (`SIZE`, `FILE.EXT`), or a
/// short plain word that ends the flag (`-o file, …`). `i` moves past it when it is one.
fn bare_value(chars: &[char], j: usize, i: &mut usize) -> Option<String> {
    let n = chars.len();
    let mut k = j;
    while k < n && !matches!(chars[k], ' ' | '\t' | ',' | '|' | ';') {
        k += 1;
    }
    let word: String = chars[j..k].iter().collect();
    let upper = word
        .chars()
        .all(|c| c.is_ascii_uppercase() || c == '_' || c == '-' || c.is_ascii_digit() || c == '.');
    let mut m = k;
    skip_blank(chars, &mut m);
    let last = m >= n || matches!(chars[m], ',' | '|' | ';' | '-');
    let plain = word.len() <= 20
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if upper || (last && plain) {
        *i = k;
        Some(word)
    } else {
        None
    }
}

/// Enum values written in the value itself: `{bsd,sysv,posix}`, `a|b|c`.
fn enum_values(value: &str) -> Option<Vec<String>> {
    let inner = value
        .trim_matches(|c| c == '<' || c == '>' || c == '[' || c == ']' || c == '{' || c == '}');
    let parts: Vec<&str> = if value.contains('{') || value.contains(',') && !value.contains(' ') {
        inner.split(',').collect()
    } else if inner.contains('|') {
        inner.split('|').collect()
    } else {
        return None;
    };
    let vals: Vec<String> = parts.iter().map(|p| p.trim().to_owned()).collect();
    let ok = vals.len() >= 2
        && vals.iter().all(|v| {
            !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        });
    if !ok {
        return None;
    }
    let mut uniq: Vec<String> = Vec::new();
    for v in vals {
        if !uniq.contains(&v) {
            uniq.push(v);
        }
    }
    Some(uniq)
}

/// The type a value's name suggests.
fn value_kind(value: &str) -> &'static str {
    let v = value
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_ascii_lowercase()
        .replace('_', "-");
    if matches!(v.as_str(), "dir" | "directory" | "dirname" | "folder")
        || v.ends_with("-dir")
        || v.ends_with("-directory")
        || v.ends_with("dir") && v.len() <= 8
    {
        return "directory";
    }
    if matches!(
        v.as_str(),
        "file" | "filename" | "path" | "pathname" | "archive" | "script"
    ) || v.ends_with("-file")
        || v.ends_with("file")
        || v.ends_with("-path")
        || v.ends_with("filename")
    {
        return "file";
    }
    if matches!(
        v.as_str(),
        "n" | "num"
            | "number"
            | "count"
            | "int"
            | "integer"
            | "lines"
            | "depth"
            | "cols"
            | "columns"
            | "width"
            | "port"
            | "pid"
            | "seconds"
            | "secs"
            | "level"
            | "min-len"
            | "max-depth"
            | "nlines"
            | "nbytes"
            | "jobs"
            | "retries"
            | "uid"
            | "gid"
    ) {
        return "integer";
    }
    "string"
}

/// A name safe as an ATIP option, argument or command name.
fn sanitize(raw: &str) -> String {
    let mut s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while s.ends_with('_') || s.ends_with('-') {
        s.pop();
    }
    while s.starts_with('_') || s.starts_with('-') {
        s.remove(0);
    }
    s
}

fn collect_commands(
    section: &Section,
    out: &mut Vec<InferredCommand>,
    names: &mut HashSet<String>,
) {
    for block in &section.blocks {
        let Block::Item { tags, body, depth } = block else {
            continue;
        };
        if *depth > 0 {
            continue;
        }
        let Some(tag) = tags.first() else { continue };
        // `lock-session [ID...], unlock-session [ID...]`: several commands, one text.
        for form in tag.split(", ") {
            let first = form.split_whitespace().next().unwrap_or("");
            let valid = first.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && first
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
            if !valid {
                break;
            }
            if !names.insert(first.to_owned()) {
                continue;
            }
            let description = first_sentence(body);
            out.push(InferredCommand {
                name: first.to_owned(),
                description: if description.is_empty() {
                    format!("The {first} command.")
                } else {
                    description
                },
                arguments: positional(form, first),
                options: Vec::new(),
            });
        }
    }
}

/// The page's own words that call for care, as warnings. The rules (spec/infer.md):
/// the NAME description or the first DESCRIPTION paragraph says the program removes,
/// deletes, erases, overwrites, wipes, shreds or destroys something, or shuts down,
/// reboots or halts the machine, or kills processes.
pub fn warnings(page: &Page, description: &str) -> Vec<String> {
    let mut text = description.to_ascii_lowercase();
    if let Some(sec) = page.section(&["DESCRIPTION"])
        && let Some(Block::Text(t)) = sec.blocks.iter().find(|b| matches!(b, Block::Text(_)))
    {
        text.push(' ');
        text.push_str(&first_sentence(t).to_ascii_lowercase());
    }
    let rules: [(&[&str], &str); 4] = [
        (
            &["remove", "delete", "erase", "unlink"],
            "the man page says this program removes or deletes things",
        ),
        (
            &["overwrite", "wipe", "shred", "destroy", "truncate"],
            "the man page says this program overwrites or destroys data",
        ),
        (
            &[
                "shut down",
                "shutdown",
                "reboot",
                "halt",
                "power off",
                "poweroff",
            ],
            "the man page says this program stops or restarts the machine",
        ),
        (
            &["kill", "terminate"],
            "the man page says this program kills processes",
        ),
    ];
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != ' ')
        .collect();
    let joined = words.join(" ");
    let mut out = Vec::new();
    for (stems, warning) in rules {
        let hit = stems.iter().any(|s| {
            joined
                .match_indices(s)
                .any(|(i, _)| i == 0 || joined.as_bytes()[i - 1] == b' ')
        });
        if hit {
            out.push(warning.to_owned());
        }
    }
    out
}

fn option_json(o: &InferredOption) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(o.name));
    m.insert("flags".into(), json!(o.flags));
    m.insert("type".into(), json!(o.kind));
    m.insert("description".into(), json!(o.description));
    if !o.values.is_empty() {
        m.insert("enum".into(), json!(o.values));
    }
    Value::Object(m)
}

fn argument_json(a: &InferredArgument) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), json!(a.name));
    m.insert("type".into(), json!(a.kind));
    m.insert(
        "description".into(),
        json!(format!("The {} operand.", a.name)),
    );
    m.insert("required".into(), json!(a.required));
    if a.variadic {
        m.insert("variadic".into(), json!(true));
    }
    Value::Object(m)
}

/// Drops arguments whose names clash with options in scope (the validator's
/// `duplicate-name`).
fn arguments_json(args: &[InferredArgument], options: &[&InferredOption]) -> Vec<Value> {
    args.iter()
        .filter(|a| !options.iter().any(|o| same_name(&o.name, &a.name)))
        .map(argument_json)
        .collect()
}

/// Where a document came from, for `x-inferred`.
#[derive(Debug, Clone)]
pub struct Origin<'a> {
    /// The man page read (after `.so` redirects).
    pub page: &'a str,
    /// The name the document is for.
    pub tool: &'a str,
}

/// The ATIP document (0.6) for an inference. No effects are stated.
pub fn document(inf: &Inferred, origin: &Origin<'_>) -> Value {
    let tool_name = {
        let s = sanitize(origin.tool);
        if s.is_empty() { "tool".to_owned() } else { s }
    };
    let description = if inf.description.is_empty() {
        format!(
            "{} (described by its man page, which gives no summary)",
            origin.tool
        )
    } else {
        inf.description.clone()
    };
    let mut doc = Map::new();
    doc.insert(
        "atip".into(),
        json!({"version": "0.6", "features": ["trust-v1"]}),
    );
    doc.insert("name".into(), json!(tool_name));
    doc.insert("version".into(), json!("unknown"));
    doc.insert("description".into(), json!(description));
    doc.insert(
        "trust".into(),
        json!({"source": "inferred", "verified": false}),
    );
    let mut commands = Map::new();
    if inf.commands.is_empty() {
        let opts: Vec<&InferredOption> = inf.options.iter().collect();
        let mut root = Map::new();
        root.insert("description".into(), json!(description));
        let args = arguments_json(&inf.arguments, &opts);
        if !args.is_empty() {
            root.insert("arguments".into(), Value::Array(args));
        }
        if !inf.options.is_empty() {
            root.insert(
                "options".into(),
                Value::Array(inf.options.iter().map(option_json).collect()),
            );
        }
        commands.insert(String::new(), Value::Object(root));
    } else {
        if !inf.options.is_empty() {
            doc.insert(
                "globalOptions".into(),
                Value::Array(inf.options.iter().map(option_json).collect()),
            );
        }
        for c in &inf.commands {
            let options = scoped_options(&c.options, &inf.options);
            let mut in_scope: Vec<&InferredOption> = inf.options.iter().collect();
            in_scope.extend(options.iter());
            let mut m = Map::new();
            m.insert("description".into(), json!(c.description));
            let args = arguments_json(&c.arguments, &in_scope);
            if !args.is_empty() {
                m.insert("arguments".into(), Value::Array(args));
            }
            if !options.is_empty() {
                m.insert(
                    "options".into(),
                    Value::Array(options.iter().map(option_json).collect()),
                );
            }
            commands.insert(c.name.clone(), Value::Object(m));
        }
    }
    doc.insert("commands".into(), Value::Object(commands));
    let mut x = Map::new();
    x.insert("manPage".into(), json!(origin.page));
    if !inf.details.is_empty() {
        x.insert("details".into(), json!(inf.details));
    }
    if !inf.warnings.is_empty() {
        x.insert("warnings".into(), json!(inf.warnings));
    }
    doc.insert("x-inferred".into(), Value::Object(x));
    Value::Object(doc)
}

/// A command's options made consistent with the global ones: an option that spells a
/// global flag takes the global option's name (so it overrides it, as the model
/// allows), unless that name is taken in the command; then the clashing flags go.
fn scoped_options(own: &[InferredOption], global: &[InferredOption]) -> Vec<InferredOption> {
    let mut out: Vec<InferredOption> = Vec::new();
    for o in own {
        let mut o = o.clone();
        let clash: Vec<&InferredOption> = global
            .iter()
            .filter(|g| g.flags.iter().any(|f| o.flags.contains(f)))
            .collect();
        if let [g] = clash.as_slice()
            && !own
                .iter()
                .any(|x| x.name != o.name && same_name(&x.name, &g.name))
            && !out.iter().any(|x| same_name(&x.name, &g.name))
        {
            o.name = g.name.clone();
            // Overriding replaces the global's flags; keep the command's own.
        } else if !clash.is_empty() {
            o.flags
                .retain(|f| !global.iter().any(|g| g.flags.contains(f)));
        }
        if o.flags.is_empty() {
            continue;
        }
        // A name equal to a global option's (without sharing its flag) would override
        // it: keep names apart.
        if !global
            .iter()
            .any(|g| g.flags.iter().any(|f| o.flags.contains(f)))
            && global.iter().any(|g| same_name(&g.name, &o.name))
        {
            o.name = format!("{}-opt", o.name);
        }
        if out.iter().any(|x| same_name(&x.name, &o.name)) {
            continue;
        }
        out.push(o);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tag_gives_its_flags_and_their_values() {
        let spec = |flag: &str, value: Option<&str>| FlagSpec {
            flag: flag.into(),
            value: value.map(Into::into),
        };
        let cases = [
            ("-a, --all", vec![spec("-a", None), spec("--all", None)]),
            ("-n <min-len>", vec![spec("-n", Some("<min-len>"))]),
            (
                "--block-size=SIZE",
                vec![spec("--block-size", Some("SIZE"))],
            ),
            (
                "-o file, --output=file",
                vec![spec("-o", Some("file")), spec("--output", Some("file"))],
            ),
            (
                "--[no-]color",
                vec![spec("--color", None), spec("--no-color", None)],
            ),
            (
                "-v, or --verbose",
                vec![spec("-v", None), spec("--verbose", None)],
            ),
            ("--format {a,b}", vec![spec("--format", Some("{a,b}"))]),
            ("-h. Prints help", vec![spec("-h", None)]),
            // `-<NUM>` is a number, not a flag; unclosed, it ends the tag (no panic).
            ("-<NUM>, -q", vec![spec("-q", None)]),
            ("-<NUM", vec![]),
            ("not a flag", vec![]),
        ];
        for (tag, want) in cases {
            assert_eq!(parse_tag(tag), want, "{tag:?}");
        }
    }

    #[test]
    fn the_description_paragraph_is_kept_for_search() {
        let page = ".TH LD 1\n.SH NAME\nld \\- The GNU linker\n.SH SYNOPSIS\nld [options] objfile\n\
            .SH DESCRIPTION\nld combines a number of object and archive files,\nrelocates their data.\n\
            .PP\nA second paragraph.\n";
        let inf = crate::infer::infer_text(page, "ld");
        assert_eq!(inf.description, "The GNU linker");
        assert_eq!(
            inf.details,
            "ld combines a number of object and archive files, relocates their data."
        );
        let doc = document(
            &inf,
            &Origin {
                page: "/m/ld.1",
                tool: "ld",
            },
        );
        assert_eq!(doc["x-inferred"]["details"], inf.details.as_str());
        assert_eq!(doc["description"], "The GNU linker");
        let bare = crate::infer::infer_text(".TH X 1\n.SH NAME\nx \\- a tool\n", "x");
        assert!(bare.details.is_empty());
        let doc = document(
            &bare,
            &Origin {
                page: "/m/x.1",
                tool: "x",
            },
        );
        assert!(doc["x-inferred"].get("details").is_none());
    }

    #[test]
    fn the_first_sentence_ends_at_a_period_that_ends_a_word() {
        let cases = [
            ("Print the  version.\n  More text.", "Print the version."),
            (
                "Use a file, e.g. a log. Then stop.",
                "Use a file, e.g. a log.",
            ),
            (
                "Size in KiB, etc. and more. Rest.",
                "Size in KiB, etc. and more.",
            ),
            // One letter (an initial) and a period inside a word do not end it.
            (
                "Set by J. Smith to v1.2 now. Rest.",
                "Set by J. Smith to v1.2 now.",
            ),
            // A lone period: the first word cannot end it, a later one does.
            (". starts here . Rest.", ". starts here ."),
            ("No period at all", "No period at all"),
            ("", ""),
        ];
        for (body, want) in cases {
            assert_eq!(first_sentence(body), want, "{body:?}");
        }
    }

    #[test]
    fn one_line_cuts_at_a_word_boundary() {
        let long = "word ".repeat(MAX_DESCRIPTION);
        let cut = one_line(&long);
        assert!(
            cut.ends_with('\u{2026}') && cut.chars().count() <= MAX_DESCRIPTION,
            "{cut}"
        );
        assert!(!cut.contains("  ") && cut.trim_end_matches('\u{2026}').ends_with("word"));
        let one = "x".repeat(MAX_DESCRIPTION + 5);
        assert_eq!(one_line(&one).chars().count(), MAX_DESCRIPTION);
    }

    fn flags(inf: &Inferred) -> Vec<String> {
        inf.options.iter().flat_map(|o| o.flags.clone()).collect()
    }

    /// A shell's page: its own options, then a builtin whose options are nested under its
    /// synopsis, a sub-heading that is another command's synopsis, and expression
    /// operators. Only the shell's own options are its options.
    #[test]
    fn options_of_other_commands_on_the_page_are_not_the_programs() {
        let page = ".TH XSH 1\n.SH NAME\nxsh \\- a shell\n.SH SYNOPSIS\n.B xsh\n[options] [file]\n\
            .SH OPTIONS\n.TP\n.B \\-c\nRead commands from a string.\n\
            .TP\n.B \\-\\-norc\nDo not read the startup file.\n\
            .SH \"CONDITIONAL EXPRESSIONS\"\n.TP\n.B \\-a \\fIfile\\fP\nTrue if file exists.\n\
            .TP\n.B \\-z \\fIstring\\fP\nTrue if the string is empty.\n\
            .SH PRIMITIVES\n.TP\n\\fBset\\fP [\\fB\\-eu\\fP] [\\fB\\-o\\fP \\fIname\\fP]\n\
            Set shell options.\n.RS\n.TP 8\n.B \\-e\nExit at once on error.\n\
            .TP 8\n.B \\-u\nTreat unset variables as an error.\n.RE\n\
            .TP\n\\fBecho\\fP [\\fB\\-n\\fP] [\\fIarg\\fP ...]\nPrint the arguments.\n\
            .SS \"trap [\\-lp] [arg]\"\n.TP\n.B \\-l\nList signal names.\n\
            .SS \"Startup options\"\n.TP\n.B \\-\\-login\nAct as a login shell.\n\
            .SS \"xsh [\\-q]\"\n.TP\n.B \\-q\nQuiet start.\n";
        let inf = crate::infer::infer_text(page, "xsh");
        assert_eq!(flags(&inf), ["-c", "--norc", "--login", "-q"]);
        // The same items at the top level, with no command's synopsis above them, are
        // the program's options (the rule is about the heading, not the section).
        let plain = page
            .replace(
                "\\fBset\\fP [\\fB\\-eu\\fP] [\\fB\\-o\\fP \\fIname\\fP]",
                "Shell settings",
            )
            .replace(".SS \"trap [\\-lp] [arg]\"", ".SS Signals");
        let inf = crate::infer::infer_text(&plain, "xsh");
        assert_eq!(
            flags(&inf),
            ["-c", "--norc", "-e", "-u", "-l", "--login", "-q"]
        );
        // A program whose SYNOPSIS takes an expression owns its operators.
        let find = page.replace("[options] [file]", "[path...] [expression]");
        let inf = crate::infer::infer_text(&find, "xsh");
        assert_eq!(flags(&inf), ["-c", "--norc", "-a", "-z", "--login", "-q"]);
    }

    /// perl's SYNOPSIS (pod2man: no-break spaces inside the brackets) names the values of
    /// `-m[-]module`, `-l[octal]`, `-x[dir]` against their flags: they are not operands.
    #[test]
    fn a_placeholder_written_against_a_flag_is_its_value() {
        let nb = '\u{a0}';
        let page = format!(
            ".TH PERL 1\n.SH NAME\nperl \\- interpreter\n.SH SYNOPSIS\n\\fBperl\\fR\t[{nb}\\fB\\-sT\\fR{nb}]\n\
             \t[{nb}\\fB\\-l\\fR[\\fIoctal\\fR]{nb}]{nb}[{nb}\\fB\\-I\\fR\\fIdir\\fR{nb}]\n\
             \t[{nb}\\fB\\-m\\fR[\\fB\\-\\fR]\\fImodule\\fR{nb}]{nb}[{nb}\\fB\\-x\\fR[\\fIdir\\fR]{nb}]\n\
             \t[{nb}[\\fB\\-e\\fR|\\fB\\-E\\fR]{nb}\\fI'command'\\fR{nb}]{nb}[{nb}\\fIprogramfile\\fR{nb}]{nb}[{nb}\\fIargument\\fR{nb}]...\n"
        );
        let inf = crate::infer::infer_text(&page, "perl");
        let names: Vec<&str> = inf.arguments.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["programfile", "argument"]);
        assert!(inf.arguments[1].variadic && !inf.arguments[0].required);
        // Outside any option group too: `-m[-]<module>` at the top level.
        let args = positional("tool -m[-]<module> -I<dir> <file>", "tool");
        let names: Vec<&str> = args.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(names, ["file"]);
    }
}
