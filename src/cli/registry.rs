//! `atip registry`: publish shims as a static remote registry (`keygen`, `build`) and
//! choose the remote registries this machine reads (`add`, `list`, `remove`, editing
//! `registries.json`). The work is in `atip::remote`; see `spec/registries.md`.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::Verbosity;
use atip::output::term::{self, Cell, Paint, Style, Table};
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::remote::build::{self, BuildOptions};
use atip::remote::config::{self, Auth, RegistriesFile, RemoteRegistry};
use atip::remote::manifest;
use atip::remote::sign::{self, TrustedKey};
use serde_json::{Map, json};
use std::path::{Path, PathBuf};

// Not a doc comment: help text is the `Command` variant's (main.rs), which this would override.
// Publish shims as a static remote registry, or choose the registries this machine reads.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(Debug, clap::Subcommand)]
enum Sub {
    /// Write a new minisign key pair: KEYFILE (secret, mode 0600) and KEYFILE.pub.
    #[command(after_help = super::examples::REGISTRY_KEYGEN)]
    Keygen {
        /// Where the secret key goes; the public key goes to KEYFILE.pub.
        keyfile: PathBuf,
    },
    /// Build the static registry tree from a directory of shims.
    #[command(after_help = super::examples::REGISTRY_BUILD)]
    Build {
        /// Directory of shims (content-addressed, or name-keyed with --binary).
        src: PathBuf,
        /// Output directory: the tree a web server serves.
        out: PathBuf,
        /// Sign every shim and the catalog with this secret key (from `atip registry keygen`).
        #[arg(long, value_name = "KEYFILE")]
        sign: Option<PathBuf>,
        /// The registry's name [default: SRC's directory name].
        #[arg(long)]
        name: Option<String>,
        /// The URL the tree will be served at (recorded in the manifest).
        #[arg(long)]
        url: Option<String>,
        /// A binary a name-keyed shim (the one of its file name) describes: the shim is
        /// published under its hash (repeatable).
        #[arg(long = "binary", value_name = "PATH")]
        binaries: Vec<PathBuf>,
        /// The catalog's generation [default: one more than OUT's catalog, kept when
        /// nothing changed; 1 for a new tree]. Machines refuse a generation not newer
        /// than theirs: building from a fresh OUT, give one above the published tree's.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        generation: Option<u64>,
        /// When the catalog expires: a duration from now (e.g. 30d, 12h) or an RFC 3339
        /// UTC time (2027-01-31T00:00:00Z). Machines refuse an expired catalog, so
        /// rebuild before then; an unchanged tree keeps its expiry until half is left.
        #[arg(long, default_value = "30d", value_name = "DURATION|TIME", value_parser = parse_expires)]
        expires: build::Expiry,
    },
    /// Add a remote registry to registries.json.
    #[command(after_help = super::examples::REGISTRY_ADD)]
    Add {
        /// Its name (letters, digits, '.', '_', '-').
        name: String,
        /// Base URL of its tree.
        url: String,
        /// A minisign public key to trust for its shims: the key itself or a .pub file
        /// (repeatable).
        #[arg(long = "public-key", value_name = "KEY|FILE")]
        public_keys: Vec<String>,
        /// Refuse its shims unless signed by one of the public keys.
        #[arg(long)]
        require_signatures: bool,
        /// Lower numbers are consulted first.
        #[arg(long, default_value_t = config::DEFAULT_PRIORITY, allow_negative_numbers = true)]
        priority: i64,
        /// Send a bearer token read from this environment variable.
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        /// Add it disabled.
        #[arg(long)]
        disabled: bool,
        /// Do not fetch its manifest first (add a registry that is not reachable now).
        #[arg(long)]
        no_check: bool,
    },
    /// List the remote registries in registries.json.
    #[command(after_help = super::examples::REGISTRY_LIST)]
    List,
    /// Remove a remote registry from registries.json (its tools go at the next scan).
    #[command(after_help = super::examples::REGISTRY_REMOVE)]
    Remove {
        /// Its name.
        name: String,
    },
}

/// Fetches the manifest a new registry's URL must serve, and says what the keys given
/// (or not given) mean for it. Nothing is saved when this fails.
fn check_manifest(
    url: &str,
    token: Option<&str>,
    keys: &[String],
    require_signatures: bool,
    ctx: &Ctx,
) -> Result<manifest::Manifest, AtipError> {
    let m = manifest::fetch(url, token, std::time::Duration::from_secs(10))?;
    let given: Vec<String> = keys
        .iter()
        .filter_map(|k| TrustedKey::parse(k).ok().map(|t| t.id))
        .collect();
    if m.signatures == "minisign" && given.is_empty() {
        ctx.out.note(format!(
            "registry {:?} signs its shims with minisign key {}; its signatures are checked only for keys you trust (--public-key), never for a key its manifest names",
            m.name,
            m.signers.join(", ")
        ));
    } else if !given.is_empty()
        && !m.signers.is_empty()
        && !given.iter().any(|g| m.signers.contains(g))
    {
        ctx.out.warn(format!(
            "none of the keys given ({}) is a signer the manifest names ({}): its shims may all be refused",
            given.join(", "),
            m.signers.join(", ")
        ));
    } else if require_signatures && m.signatures != "minisign" {
        ctx.out.warn(format!(
            "--require-signatures, but registry {:?} says it is not signed: its shims will all be refused",
            m.name
        ));
    }
    Ok(m)
}

/// `--expires`: a duration from now, or an RFC 3339 UTC time as atip writes them.
fn parse_expires(s: &str) -> Result<build::Expiry, String> {
    if s.contains('T') {
        return atip::timestamp::parse_rfc3339_utc(s)
            .map(build::Expiry::At)
            .ok_or_else(|| format!("{s:?}: give a time as YYYY-MM-DDTHH:MM:SSZ (UTC)"));
    }
    let d = atip::units::parse_duration(s).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err("a catalog valid for 0 s expires as it is built".into());
    }
    Ok(build::Expiry::In(d))
}

/// Runs `atip registry …`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("registry", &[OutputFormat::Text, OutputFormat::Json])?;
    let path = config::path(&ctx.dirs.config, &ctx.env);
    match args.command {
        Sub::Keygen { keyfile } => keygen(&keyfile, ctx),
        Sub::Build {
            src,
            out,
            sign,
            name,
            url,
            binaries,
            generation,
            expires,
        } => build_tree(
            BuildOptions {
                src,
                out,
                sign,
                name,
                url,
                binaries,
                generation,
                expires,
            },
            ctx,
        ),
        Sub::Add {
            name,
            url,
            public_keys,
            require_signatures,
            priority,
            token_env,
            disabled,
            no_check,
        } => {
            let keys = read_keys(&public_keys)?;
            if require_signatures && keys.is_empty() {
                return Err(AtipError::usage(
                    "--require-signatures needs at least one --public-key to check them with",
                ));
            }
            let reg = RemoteRegistry {
                name,
                url,
                enabled: !disabled,
                priority,
                require_signatures,
                auth: token_env.map(|v| Auth {
                    kind: "bearer".into(),
                    token_env_var: v,
                }),
                public_keys: keys,
                extra: Map::new(),
            };
            add(reg, no_check, &path, ctx)
        }
        Sub::List => list(&path, ctx),
        Sub::Remove { name } => remove(&name, &path, ctx),
    }
}

/// The paint of text for a person on stdout.
fn style(ctx: &Ctx) -> Style {
    Style::new(ctx.out.stdout_color())
}

/// `registry keygen`: a new key pair; never replaces a file.
fn keygen(keyfile: &Path, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let public = sign::keygen(keyfile)?;
    let pub_path = sign::public_path(keyfile);
    if ctx.output.is_json() {
        ctx.out.json(&json!({
            "secretKey": keyfile, "publicKeyFile": pub_path,
            "keyId": public.id, "publicKey": public.base64,
        }))?;
    } else {
        ctx.out.text(&keygen_text(
            keyfile,
            &pub_path,
            &public,
            ctx.width,
            style(ctx),
        ))?;
    }
    Ok(ExitStatus::Success)
}

/// What `registry keygen` says: the key id first, the two files, the public key whole
/// (it is copied), what to do next.
fn keygen_text(
    keyfile: &Path,
    pub_path: &Path,
    public: &TrustedKey,
    width: Option<usize>,
    style: Style,
) -> String {
    let mut t = style.paint(
        Some(Paint::Bold),
        &format!("✓ New signing key pair, key id {}", public.id),
    );
    t.push('\n');
    t.push_str(&format!("  secret key  {}\n", keyfile.display()));
    t.push_str("              mode 0600: keep it secret, it signs your registry\n");
    t.push_str(&format!("  public key  {}\n", pub_path.display()));
    t.push_str(&format!("              {}\n", public.base64));
    t.push('\n');
    t.push_str("Sign a registry with it:\n");
    t.push_str(&format!(
        "  atip registry build SHIMS OUT --sign {}\n",
        keyfile.display()
    ));
    t.push_str("Trust it on each machine that reads the registry:\n");
    t.push_str(&format!(
        "  atip registry add NAME URL --public-key {}\n",
        pub_path.display()
    ));
    term::wrap_long_lines(&t, width)
}

/// `registry build`: the static tree from a directory of shims.
fn build_tree(opts: BuildOptions, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let report = build::build(&opts)?;
    ctx.out.warnings(&report.warnings);
    if ctx.output.is_json() {
        ctx.out.json(&report)?;
    } else {
        let verbose = ctx.out.verbosity() >= Verbosity::Verbose;
        ctx.out
            .text(&build_text(&report, verbose, ctx.width, style(ctx)))?;
    }
    Ok(ExitStatus::Success)
}

/// What `registry build` says: the registry, its shims and signature first; where it
/// went and what changed on disk; shims left out (a few, or all with --verbose).
fn build_text(
    report: &build::BuildReport,
    verbose: bool,
    width: Option<usize>,
    style: Style,
) -> String {
    let signed = match &report.signed_by {
        Some(k) => format!("signed by key {k}"),
        None => "unsigned".into(),
    };
    let mut t = style.paint(
        Some(Paint::Bold),
        &format!(
            "✓ Registry {}: {}, {signed}",
            term::one_line(&report.name),
            term::plural(report.shims.len(), "shim", "shims")
        ),
    );
    t.push('\n');
    t.push_str(&format!(
        "  generation {}, expires {}\n",
        report.generation, report.expires
    ));
    t.push_str(&format!("  tree  {}\n", report.out.display()));
    if let Some(url) = &report.url {
        t.push_str(&format!("  url   {}\n", term::one_line(url)));
    }
    t.push_str(&format!(
        "  files {} written, {} unchanged, {} removed\n",
        term::count(report.written),
        term::count(report.unchanged),
        term::count(report.removed)
    ));
    let mut t = term::wrap_long_lines(&t, width);
    if !report.skipped.is_empty() {
        let shown = if verbose { usize::MAX } else { 6 };
        t.push('\n');
        t.push_str(&format!(
            "Left out ({})\n",
            term::plural(report.skipped.len(), "shim", "shims")
        ));
        for s in report.skipped.iter().take(shown) {
            t.push_str(&term::wrap_long_lines(
                &format!("  {}\n", s.path.display()),
                width,
            ));
            t.push_str(&term::wrap("    ", &s.why, width, 4));
        }
        if report.skipped.len() > shown {
            t.push_str(&format!(
                "  and {} more: run again with --verbose\n",
                term::count(report.skipped.len() - shown)
            ));
        }
    }
    t
}

/// The keys given to `registry add --public-key`: each a key or a .pub file.
fn read_keys(given: &[String]) -> Result<Vec<String>, AtipError> {
    let mut keys = Vec::new();
    for k in given {
        let p = PathBuf::from(k);
        let key = if p.is_file() {
            TrustedKey::read(&p)
        } else {
            TrustedKey::parse(k)
        }
        .map_err(|e| AtipError::usage(format!("--public-key {k:?}: {e}")))?;
        keys.push(key.base64);
    }
    Ok(keys)
}

/// `registry add`: checks the entry (and, unless told not to, the manifest its URL
/// serves), then saves it.
fn add(
    reg: RemoteRegistry,
    no_check: bool,
    path: &Path,
    ctx: &Ctx,
) -> Result<ExitStatus, AtipError> {
    let mut file = RegistriesFile::load(path)?;
    let name = reg.name.clone();
    if file.registries.iter().any(|r| r.name == name) {
        return Err(AtipError::new(
            ErrorCode::RemoteRegistryExists,
            format!("registry {name:?} is already in {}", path.display()),
        )
        .hint(format!("`atip registry remove {name}` first to replace it")));
    }
    // Here the entry comes from the flags, so what is wrong with it is a usage error,
    // not a broken registries.json.
    reg.check().map_err(|e| AtipError::usage(e.to_string()))?;
    let token = reg.auth.as_ref().map(|a| {
        (
            a.token_env_var.as_str(),
            ctx.env.var(&a.token_env_var).map(str::to_owned),
        )
    });
    let manifest = if no_check {
        None
    } else if let Some((var, None)) = &token {
        ctx.out.note(format!(
            "manifest not checked: {var} is not set here (it is read at each sync)"
        ));
        None
    } else {
        let token = token.and_then(|(_, t)| t);
        Some(check_manifest(
            &reg.url,
            token.as_deref(),
            &reg.public_keys,
            reg.require_signatures,
            ctx,
        )?)
    };
    let text = add_text(&reg, manifest.as_ref(), path, ctx.width, style(ctx));
    file.registries.push(reg);
    file.save(path)?;
    if ctx.output.is_json() {
        ctx.out
            .json(&json!({"added": name, "file": path, "manifest": manifest}))?;
    } else {
        ctx.out.text(&text)?;
    }
    Ok(ExitStatus::Success)
}

/// What `registry add` says: the registry added, what its manifest said (or that it
/// was not asked), how its shims are trusted, the file, what to do next.
fn add_text(
    reg: &RemoteRegistry,
    manifest: Option<&manifest::Manifest>,
    path: &Path,
    width: Option<usize>,
    style: Style,
) -> String {
    let mut t = style.paint(
        Some(Paint::Bold),
        &format!(
            "✓ Added registry {}{}",
            term::one_line(&reg.name),
            if reg.enabled { "" } else { " (disabled)" }
        ),
    );
    t.push('\n');
    t.push_str(&format!("  url         {}\n", term::one_line(&reg.url)));
    let served = match manifest {
        Some(m) => format!(
            "{} ({}, signatures {})",
            term::one_line(&m.name),
            m.shims.map_or("shims not counted".into(), |n| {
                term::plural(usize::try_from(n).unwrap_or(usize::MAX), "shim", "shims")
            }),
            term::one_line(&m.signatures)
        ),
        None => "not checked".into(),
    };
    t.push_str(&format!("  manifest    {served}\n"));
    let keys = reg.keys().map(|k| k.len()).unwrap_or(0);
    let signatures = match (reg.require_signatures, keys) {
        (true, n) => format!(
            "required, by {}",
            term::plural(n, "trusted key", "trusted keys")
        ),
        (false, 0) => "not checked (no --public-key)".into(),
        (false, n) => format!(
            "checked when present, {}",
            term::plural(n, "trusted key", "trusted keys")
        ),
    };
    t.push_str(&format!("  signatures  {signatures}\n"));
    t.push_str(&format!("  saved in    {}\n", path.display()));
    t.push('\n');
    t.push_str("Next: atip sync (fetches its shims for the programs here)\n");
    term::wrap_long_lines(&t, width)
}

/// `registry list`.
fn list(path: &Path, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let file = RegistriesFile::load(path)?;
    if ctx.output.is_json() {
        ctx.out
            .json(&json!({"file": path, "registries": file.registries}))?;
    } else if file.registries.is_empty() {
        ctx.out.text(&term::wrap_long_lines(
            &format!(
                "no remote registries in {}; add one with `atip registry add NAME URL`\n",
                path.display()
            ),
            ctx.width,
        ))?;
    } else {
        ctx.out
            .text(&list_text(&file.registries, ctx.width, style(ctx)))?;
    }
    Ok(ExitStatus::Success)
}

/// `registry remove`: the entry and its last accepted generation.
fn remove(name: &str, path: &Path, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    let mut file = RegistriesFile::load(path)?;
    let before = file.registries.len();
    file.registries.retain(|r| r.name != name);
    if file.registries.len() == before {
        let known: Vec<&str> = file.registries.iter().map(|r| r.name.as_str()).collect();
        return Err(AtipError::new(
            ErrorCode::RemoteRegistryNotFound,
            format!("no registry {name:?} in {}", path.display()),
        )
        .details(json!({"known": known})));
    }
    file.save(path)?;
    // Its last accepted generation goes too: a registry added again under this
    // name starts afresh.
    let floor = atip::remote::sync::floor_path(&ctx.dirs.state, name);
    if let Err(e) = std::fs::remove_file(&floor)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        ctx.out
            .warn(format_args!("failed to remove {}: {e}", floor.display()));
    }
    if ctx.output.is_json() {
        ctx.out.json(&json!({"removed": name, "file": path}))?;
    } else {
        let mut t = style(ctx).paint(
            Some(Paint::Bold),
            &format!("✓ Removed registry {}", term::one_line(name)),
        );
        t.push('\n');
        t.push_str(&format!("  from {}\n", path.display()));
        t.push_str("  its tools leave the registry at the next `atip sync` or `atip scan`\n");
        ctx.out.text(&term::wrap_long_lines(&t, ctx.width))?;
    }
    Ok(ExitStatus::Success)
}

/// `registry list` for a person: one row per registry, fitting the terminal (spec/cli.md,
/// terminal output).
fn list_text(registries: &[RemoteRegistry], width: Option<usize>, style: Style) -> String {
    let mut table = Table::new(Some(&[
        "NAME",
        "URL",
        "PRIORITY",
        "STATE",
        "SIGNATURES",
        "KEYS",
        "TOKEN",
    ]))
    .flex(1)
    .shrink(5, 12);
    for r in registries {
        let keys = r
            .keys()
            .map(|k| k.iter().map(|k| k.id.clone()).collect::<Vec<_>>().join(","))
            .unwrap_or_default();
        table.row(vec![
            Cell::painted(term::one_line(&r.name), Some(Paint::Bold)),
            Cell::new(term::one_line(&r.url)),
            Cell::new(r.priority.to_string()),
            if r.enabled {
                Cell::new("enabled")
            } else {
                Cell::painted("disabled", Some(Paint::Dim))
            },
            Cell::new(if r.require_signatures {
                "required"
            } else {
                "optional"
            }),
            Cell::new(if keys.is_empty() {
                "none".into()
            } else {
                term::one_line(&keys)
            }),
            Cell::new(
                r.auth
                    .as_ref()
                    .map(|a| format!("${}", a.token_env_var))
                    .unwrap_or_default(),
            ),
        ]);
    }
    let mut t = table.render(width, style);
    let count = term::plural(registries.len(), "registry", "registries");
    t.push_str(&style.paint(Some(Paint::Dim), &count));
    t.push('\n');
    t
}
