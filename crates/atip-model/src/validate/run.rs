//! Where documents come from: files, directories, stdin and `TOOL --agent`.
//!
//! Owns expanding inputs (directories walked recursively for `*.json`, in a sorted,
//! deterministic order), the size cap checked from file metadata before anything is
//! read, reading with a hard limit, running `TOOL --agent` through `atip::process`
//! and checking its contract (exit 0, one JSON document on stdout), and checking files
//! in parallel (rayon) in bounded chunks so results stream out in input order and
//! memory stays flat however many files there are.
//!
//! Must not print: results go to the caller's `emit` callback.

use super::layout::{self, Role, Root};
use super::{Checked, Diagnostic, Kind, Severity};
use crate::process::{self, Exit, Spawn};
use rayon::prelude::*;
use serde::Serialize;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Default size cap: 16 MiB, far above the largest real `--agent` document.
pub const DEFAULT_MAX_SIZE: u64 = 16 << 20;
/// Default timeout of `--exec`.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(5);
/// Files checked per parallel chunk: bounds memory while keeping both cores busy.
const CHUNK: usize = 256;

/// One input named on the command line.
#[derive(Debug, Clone)]
pub enum Input {
    /// A file, or a directory searched recursively for `*.json`.
    Path(PathBuf),
    /// Standard input (`-`).
    Stdin,
    /// `PROGRAM ARGS... --agent`.
    Exec {
        /// Program (path or name on PATH).
        program: OsString,
        /// Arguments placed before `--agent`.
        args: Vec<OsString>,
    },
}

/// How to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// Force a kind instead of detecting it.
    pub kind: Option<Kind>,
    /// Inputs larger than this many bytes are refused unread.
    pub max_size: u64,
    /// Timeout of `--exec`.
    pub timeout: Duration,
    /// Only decode and parse (benchmark floor); no schema, no rules.
    pub parse_only: bool,
    /// Render text output for documents with diagnostics while their source is at hand
    /// (`Some(colour)`), so the source never outlives the check.
    pub render_text: Option<bool>,
    /// The run's environment, what `--exec`'s child inherits (empty by default).
    pub env: atip_process::Env,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            kind: None,
            max_size: DEFAULT_MAX_SIZE,
            timeout: DEFAULT_EXEC_TIMEOUT,
            parse_only: false,
            render_text: None,
            env: atip_process::Env::default(),
        }
    }
}

/// The result for one document, in the shape `--output json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct FileReport {
    /// The path as given or found; `-` for stdin; `TOOL --agent` for `--exec`.
    pub path: String,
    /// Forced or detected kind; null when the input never parsed.
    pub kind: Option<Kind>,
    /// No errors (warnings allowed).
    pub valid: bool,
    /// Findings, in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// The input was missing or unreadable (exit code 66).
    #[serde(skip)]
    pub missing: bool,
    /// Source bytes, for rendering; `check_inputs` drops them once rendered.
    #[serde(skip)]
    pub source: Option<Vec<u8>>,
    /// Text output, rendered by the worker that checked the document (see
    /// [`Options::render_text`]).
    #[serde(skip)]
    pub rendered: Option<String>,
}

impl FileReport {
    fn from_checked(path: String, checked: Checked) -> Self {
        FileReport {
            valid: checked.is_valid(),
            path,
            kind: checked.kind,
            diagnostics: checked.diagnostics,
            missing: false,
            source: None,
            rendered: None,
        }
    }

    fn failed(path: String, rule: &str, message: String, missing: bool) -> Self {
        FileReport {
            path,
            kind: None,
            valid: false,
            diagnostics: vec![Diagnostic::new(rule, "", message)],
            missing,
            source: None,
            rendered: None,
        }
    }

    /// Number of diagnostics of a severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// One of atip's own directories among the inputs (see [`super::layout`]).
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AtipDir {
    /// The directory.
    pub dir: String,
    /// What it is (`an atip data dir`, `a remote registry tree`).
    pub what: &'static str,
    /// Documents checked in it.
    pub checked: usize,
    /// Of those, documents stored under the sha256 of their bytes (name checked too).
    pub stored: usize,
    /// Files of atip's bookkeeping left unchecked (not ATIP documents).
    pub skipped: usize,
    /// The first skipped files, relative to `dir`, with what they are.
    pub skipped_files: Vec<(String, &'static str)>,
}

/// Skipped files named in [`AtipDir::skipped_files`].
const SKIPPED_SHOWN: usize = 5;

/// Totals over a run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Documents checked (inputs that could not be read included).
    pub files: usize,
    /// Documents without errors.
    pub valid: usize,
    /// Documents with errors.
    pub invalid: usize,
    /// Errors over all documents.
    pub errors: usize,
    /// Warnings over all documents.
    pub warnings: usize,
    /// Inputs that were missing or unreadable.
    pub missing: usize,
    /// atip's own directories found among the inputs, in input order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub atip_dirs: Vec<AtipDir>,
}

impl Summary {
    /// The totals in words, as every text form of a run ends (or, for a person, starts).
    pub fn line(&self) -> String {
        let s = |n: usize| if n == 1 { "" } else { "s" };
        format!(
            "checked {} document{}: {} valid, {} invalid ({} error{}, {} warning{})",
            self.files,
            s(self.files),
            self.valid,
            self.invalid,
            self.errors,
            s(self.errors),
            self.warnings,
            s(self.warnings)
        )
    }

    fn add(&mut self, r: &FileReport) {
        self.files += 1;
        if r.valid {
            self.valid += 1;
        } else {
            self.invalid += 1;
        }
        self.errors += r.count(Severity::Error);
        self.warnings += r.count(Severity::Warning);
        if r.missing {
            self.missing += 1;
        }
    }
}

enum Item {
    /// A file, with its role when it lies in one of atip's directories.
    File(PathBuf, Role),
    Failed(FileReport),
    Stdin,
    Exec(OsString, Vec<OsString>),
}

fn display(path: &Path) -> String {
    path.display().to_string()
}

/// Where `expand` notes atip's directories (`None`: roles are not looked at).
type Dirs<'a> = Option<&'a mut Vec<AtipDir>>;

/// Adds `file` to `out` under its role in `root`: atip's bookkeeping is counted in
/// `dirs` instead of checked.
fn push_file(file: PathBuf, root: Option<&Root>, dirs: &mut Dirs<'_>, out: &mut Vec<Item>) {
    let (Some(root), Some(dirs)) = (root, dirs.as_deref_mut()) else {
        out.push(Item::File(file, Role::Plain));
        return;
    };
    let role = layout::role(root, &file);
    let shown = root.dir.display().to_string();
    if dirs.last().is_none_or(|d| d.dir != shown) {
        dirs.push(AtipDir {
            dir: shown,
            what: root.what,
            ..AtipDir::default()
        });
    }
    let Some(dir) = dirs.last_mut() else { return };
    match role {
        Role::Internal(what) => {
            dir.skipped += 1;
            if dir.skipped_files.len() < SKIPPED_SHOWN {
                let rel = file.strip_prefix(&root.dir).unwrap_or(&file);
                dir.skipped_files.push((rel.display().to_string(), what));
            }
        }
        role => {
            dir.checked += 1;
            dir.stored += usize::from(role == Role::Stored);
            out.push(Item::File(file, role));
        }
    }
}

fn expand(input: &Input, out: &mut Vec<Item>, mut dirs: Dirs<'_>) {
    match input {
        Input::Stdin => out.push(Item::Stdin),
        Input::Exec { program, args } => out.push(Item::Exec(program.clone(), args.clone())),
        Input::Path(path) => match std::fs::metadata(path) {
            Ok(meta) if meta.is_dir() => {
                let root = dirs.is_some().then(|| layout::root_of(path)).flatten();
                for entry in walkdir::WalkDir::new(path).sort_by_file_name() {
                    match entry {
                        Ok(e) => {
                            let p = e.path();
                            if p.extension().is_some_and(|x| x == "json")
                                && (e.file_type().is_file()
                                    || (e.file_type().is_symlink() && p.is_file()))
                            {
                                push_file(e.into_path(), root.as_ref(), &mut dirs, out);
                            }
                        }
                        Err(err) => {
                            let where_ = err.path().map_or_else(|| display(path), display);
                            out.push(Item::Failed(FileReport::failed(
                                where_.clone(),
                                "input-unreadable",
                                format!("cannot read {where_}: {err}"),
                                true,
                            )));
                        }
                    }
                }
            }
            Ok(_) => {
                let root = dirs.is_some().then(|| layout::root_of(path)).flatten();
                push_file(path.clone(), root.as_ref(), &mut dirs, out);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                out.push(Item::Failed(FileReport::failed(
                    display(path),
                    "input-missing",
                    format!("{} does not exist", display(path)),
                    true,
                )))
            }
            Err(e) => out.push(Item::Failed(FileReport::failed(
                display(path),
                "input-unreadable",
                format!("cannot read {}: {e}", display(path)),
                true,
            ))),
        },
    }
}

/// Refused from its metadata, before reading.
fn too_large(path: String, size: u64, cap: u64) -> FileReport {
    FileReport::failed(
        path,
        "file-too-large",
        format!("the input is {size} bytes, over the {cap}-byte cap (--max-size); it was not read"),
        false,
    )
}

/// Refused while reading (stdin, a file that grew): reading stopped one byte past the cap.
fn too_long(path: String, cap: u64) -> FileReport {
    FileReport::failed(
        path,
        "file-too-large",
        format!("the input is longer than the {cap}-byte cap (--max-size); reading stopped there"),
        false,
    )
}

fn check_source(path: String, bytes: &[u8], name: Option<&str>, opts: &Options) -> FileReport {
    check_as(path, bytes, name, Role::Plain, opts)
}

/// Checks one document read from a file of `role` (see [`layout::role`]).
fn check_as(
    path: String,
    bytes: &[u8],
    name: Option<&str>,
    role: Role,
    opts: &Options,
) -> FileReport {
    let file_name = name;
    let (kind, name) = match role {
        Role::Plain => (opts.kind, name),
        Role::As { kind, named } => (opts.kind.or(Some(kind)), name.filter(|_| named)),
        Role::Stored | Role::Internal(_) => (opts.kind, None),
    };
    let mut checked = if opts.parse_only {
        super::parse_only(bytes)
    } else {
        super::check_with(bytes, kind, name, false)
    };
    if role == Role::Stored
        && !opts.parse_only
        && let Some(stem) = file_name.and_then(|f| f.strip_suffix(".json"))
    {
        let actual = atip_base::digest::sha256_hex(bytes);
        if actual != stem {
            checked.diagnostics.insert(
                0,
                Diagnostic::new(
                    "stored-hash-mismatch",
                    "",
                    format!(
                        "atip stored this document under the sha256 of its bytes ({stem}), but its bytes now hash to {actual}: it was changed or damaged after atip wrote it"
                    ),
                ),
            );
        }
    }
    let mut report = FileReport::from_checked(path, checked);
    if let Some(color) = opts.render_text
        && !report.diagnostics.is_empty()
    {
        report.rendered = Some(super::render::text_with(&report, Some(bytes), color));
    }
    report
}

/// Reads at most `cap + 1` bytes into `buf`, so an input over the cap is noticed without
/// reading it all.
fn read_capped_into(
    reader: impl Read,
    cap: u64,
    hint: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    buf.clear();
    buf.reserve(hint.min(cap) as usize + 1);
    reader.take(cap.saturating_add(1)).read_to_end(buf)?;
    Ok(())
}

fn read_capped(reader: impl Read, cap: u64, hint: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    read_capped_into(reader, cap, hint, &mut buf)?;
    Ok(buf)
}

thread_local! {
    /// Each worker reads every file into the same buffer: no large allocation per file.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Buffers larger than this are released after use rather than kept per thread.
const KEEP_BUFFER: usize = 1 << 20;

/// Opens a regular file for reading under the size cap, or says why not.
fn open_regular(
    path: &Path,
    opts: &Options,
) -> Result<(std::fs::File, std::fs::Metadata), Box<FileReport>> {
    let shown = display(path);
    let unreadable = |e: std::io::Error| {
        let missing = e.kind() == std::io::ErrorKind::NotFound;
        Box::new(FileReport::failed(
            shown.clone(),
            if missing {
                "input-missing"
            } else {
                "input-unreadable"
            },
            format!("cannot read {shown}: {e}"),
            true,
        ))
    };
    // Non-blocking open: a FIFO or a device named on the command line must not hang
    // the run (it is refused below as not a regular file).
    let opened = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
    };
    let file = opened.map_err(unreadable)?;
    let meta = file.metadata().map_err(unreadable)?;
    if !meta.is_file() {
        return Err(Box::new(FileReport::failed(
            shown.clone(),
            "input-unreadable",
            format!("{shown} is not a regular file"),
            true,
        )));
    }
    if meta.len() > opts.max_size {
        return Err(Box::new(too_large(shown, meta.len(), opts.max_size)));
    }
    Ok((file, meta))
}

fn check_file(path: &Path, role: Role, opts: &Options) -> FileReport {
    let shown = display(path);
    let unreadable = |e: std::io::Error| {
        let missing = e.kind() == std::io::ErrorKind::NotFound;
        FileReport::failed(
            shown.clone(),
            if missing {
                "input-missing"
            } else {
                "input-unreadable"
            },
            format!("cannot read {shown}: {e}"),
            true,
        )
    };
    let (file, meta) = match open_regular(path, opts) {
        Ok(opened) => opened,
        Err(report) => return *report,
    };
    let name = path.file_name().and_then(|n| n.to_str());
    READ_BUFFER.with_borrow_mut(|buf| {
        let report = match read_capped_into(file, opts.max_size, meta.len(), buf) {
            Err(e) => unreadable(e),
            Ok(()) if buf.len() as u64 > opts.max_size => too_long(shown.clone(), opts.max_size),
            Ok(()) => check_as(shown.clone(), buf, name, role, opts),
        };
        if buf.capacity() > KEEP_BUFFER {
            *buf = Vec::new();
        }
        report
    })
}

fn check_stdin(opts: &Options) -> FileReport {
    match read_capped(std::io::stdin().lock(), opts.max_size, 64 << 10) {
        Ok(bytes) if bytes.len() as u64 > opts.max_size => too_long("-".into(), opts.max_size),
        Ok(bytes) => check_source("-".into(), &bytes, None, opts),
        Err(e) => FileReport::failed(
            "-".into(),
            "input-unreadable",
            format!("cannot read standard input: {e}"),
            true,
        ),
    }
}

/// What `TOOL ARGS... --agent` did: its stdout and how it broke the `--agent` contract.
#[derive(Debug)]
pub struct AgentRun {
    /// `TOOL ARGS... --agent`, as shown in reports.
    pub shown: String,
    /// What it printed on stdout (at most the size cap).
    pub stdout: Vec<u8>,
    /// Broken contract: `agent-exit-status`, `agent-timeout`, `agent-output-too-large`,
    /// `agent-spawn` (empty when the run kept the contract).
    pub contract: Vec<Diagnostic>,
    /// The stdout may hold a document worth checking (it exited, and was not cut).
    pub output_usable: bool,
    /// The tool could not be started at all.
    pub not_started: bool,
}

/// Runs `program args... --agent` through the process runner under `opts`' timeout and
/// size cap, and reports which parts of the `--agent` contract it broke.
pub(crate) fn run_agent(program: &OsString, args: &[OsString], opts: &Options) -> AgentRun {
    let mut argv: Vec<OsString> = args.to_vec();
    argv.push("--agent".into());
    let shown = format!(
        "{} --agent",
        std::iter::once(program)
            .chain(args.iter())
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut spawn = Spawn::new(PathBuf::from(program), argv, opts.timeout);
    spawn.stdout_cap = usize::try_from(opts.max_size).unwrap_or(usize::MAX);
    spawn.inherit = opts.env.clone();
    let outcome = match process::run(&spawn) {
        Ok(o) => o,
        Err(e) => {
            return AgentRun {
                shown,
                stdout: Vec::new(),
                contract: vec![Diagnostic::new("agent-spawn", "", e.to_string())],
                output_usable: false,
                not_started: true,
            };
        }
    };
    let stderr_line = String::from_utf8_lossy(&outcome.stderr)
        .lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| format!("; stderr: {}", l.chars().take(200).collect::<String>()))
        .unwrap_or_default();
    let mut contract = Vec::new();
    if outcome.stdout_truncated {
        contract.push(Diagnostic::new(
            "agent-output-too-large",
            "",
            format!(
                "`{shown}` printed more than {} bytes on stdout (--max-size)",
                opts.max_size
            ),
        ));
    }
    match outcome.exit {
        Exit::Code(0) => {}
        Exit::Code(code) => contract.push(Diagnostic::new(
            "agent-exit-status",
            "",
            format!("`{shown}` exited with status {code}{stderr_line}"),
        )),
        Exit::Signal(sig) => contract.push(Diagnostic::new(
            "agent-exit-status",
            "",
            format!("`{shown}` was killed by signal {sig}{stderr_line}"),
        )),
        Exit::TimedOut | Exit::Cancelled => contract.push(Diagnostic::new(
            "agent-timeout",
            "",
            format!(
                "`{shown}` did not finish within {}; its process group was killed",
                crate::units::format_duration(opts.timeout)
            ),
        )),
    }
    AgentRun {
        shown,
        output_usable: !outcome.stdout_truncated
            && matches!(outcome.exit, Exit::Code(_))
            && !outcome.stdout.is_empty(),
        stdout: outcome.stdout,
        contract,
        not_started: false,
    }
}

/// Runs `program args... --agent` and checks both its contract and its output.
pub(crate) fn check_exec(program: &OsString, args: &[OsString], opts: &Options) -> FileReport {
    let run = run_agent(program, args, opts);
    if run.contract.is_empty() {
        return check_source(run.shown, &run.stdout, None, opts);
    }
    let mut r = FileReport {
        path: run.shown,
        kind: None,
        valid: false,
        diagnostics: run.contract,
        missing: run.not_started,
        source: None,
        rendered: None,
    };
    if run.output_usable {
        // Still say what is wrong with the output, if anything.
        let checked = super::check_with(&run.stdout, opts.kind, None, false);
        r.diagnostics.extend(checked.diagnostics);
        r.kind = checked.kind;
        if let Some(color) = opts.render_text {
            r.rendered = Some(super::render::text_with(&r, Some(&run.stdout), color));
        }
    }
    r
}

/// One input's bytes, read under validate's rules (size cap, regular files only,
/// `--agent` contract), for commands that check documents their own way (`atip lint`).
#[derive(Debug)]
pub struct Source {
    /// The path as given or found; `-` for stdin; `TOOL ARGS… --agent` for `--exec`.
    pub path: String,
    /// The file it came from, when it came from a file (what `--fix` may rewrite).
    pub file: Option<PathBuf>,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// For `--exec`: how the run broke the `--agent` contract (empty otherwise).
    pub contract: Vec<Diagnostic>,
}

/// Reads every input in input order (directories expanded as `check_inputs` does) and
/// hands each to `each`: its bytes, or the report saying why it could not be read.
pub fn read_inputs(
    inputs: &[Input],
    opts: &Options,
    mut each: impl FnMut(Result<Source, FileReport>),
) {
    let mut items = Vec::new();
    for input in inputs {
        expand(input, &mut items, None);
    }
    for item in items {
        each(read_item(item, opts));
    }
}

fn read_item(item: Item, opts: &Options) -> Result<Source, FileReport> {
    match item {
        Item::Failed(r) => Err(r),
        Item::File(path, _) => {
            let shown = display(&path);
            let (file, meta) = open_regular(&path, opts).map_err(|r| *r)?;
            let bytes = read_capped(file, opts.max_size, meta.len()).map_err(|e| {
                FileReport::failed(
                    shown.clone(),
                    "input-unreadable",
                    format!("cannot read {shown}: {e}"),
                    true,
                )
            })?;
            if bytes.len() as u64 > opts.max_size {
                return Err(too_long(shown, opts.max_size));
            }
            Ok(Source {
                path: shown,
                file: Some(path),
                bytes,
                contract: Vec::new(),
            })
        }
        Item::Stdin => match read_capped(std::io::stdin().lock(), opts.max_size, 64 << 10) {
            Ok(bytes) if bytes.len() as u64 > opts.max_size => {
                Err(too_long("-".into(), opts.max_size))
            }
            Ok(bytes) => Ok(Source {
                path: "-".into(),
                file: None,
                bytes,
                contract: Vec::new(),
            }),
            Err(e) => Err(FileReport::failed(
                "-".into(),
                "input-unreadable",
                format!("cannot read standard input: {e}"),
                true,
            )),
        },
        Item::Exec(program, args) => {
            let run = run_agent(&program, &args, opts);
            if run.not_started || !(run.contract.is_empty() || run.output_usable) {
                return Err(FileReport {
                    path: run.shown,
                    kind: None,
                    valid: false,
                    diagnostics: run.contract,
                    missing: run.not_started,
                    source: None,
                    rendered: None,
                });
            }
            Ok(Source {
                path: run.shown,
                file: None,
                bytes: run.stdout,
                contract: run.contract,
            })
        }
    }
}

fn check_item(item: Item, opts: &Options) -> FileReport {
    let mut report = match item {
        Item::File(p, role) => check_file(&p, role, opts),
        Item::Failed(r) => r,
        Item::Stdin => check_stdin(opts),
        Item::Exec(program, args) => check_exec(&program, &args, opts),
    };
    if let Some(color) = opts.render_text
        && report.rendered.is_none()
        && !report.diagnostics.is_empty()
    {
        report.rendered = Some(super::render::text(&report, color));
    }
    report
}

/// Checks every input, calling `emit` for each document in input order (directory
/// entries sorted by name), and returns the totals.
pub fn check_inputs(inputs: &[Input], opts: &Options, mut emit: impl FnMut(FileReport)) -> Summary {
    let mut summary = Summary::default();
    let mut items = Vec::new();
    for input in inputs {
        expand(input, &mut items, Some(&mut summary.atip_dirs));
    }
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        let chunk: Vec<Item> = items.by_ref().take(CHUNK).collect();
        let reports: Vec<FileReport> = if chunk.len() == 1 {
            chunk.into_iter().map(|i| check_item(i, opts)).collect()
        } else {
            chunk.into_par_iter().map(|i| check_item(i, opts)).collect()
        };
        for r in reports {
            summary.add(&r);
            emit(r);
        }
    }
    summary
}
