//! `atip registry`: publish shims as a static remote registry (`keygen`, `build`) and
//! choose the remote registries this machine reads (`add`, `list`, `remove`, editing
//! `registries.json`). The work is in `atip::remote`; see `spec/registries.md`.

use crate::Ctx;
use atip::output::ExitStatus;
use atip::output::{AtipError, ErrorCode, OutputFormat};
use atip::remote::build::{self, BuildError, BuildOptions};
use atip::remote::config::{self, Auth, RegistriesFile, RemoteRegistry};
use atip::remote::fetch::FetchError;
use atip::remote::manifest;
use atip::remote::sign::{self, TrustedKey};
use serde_json::{Map, json};
use std::path::PathBuf;

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
    let skip = "`--no-check` adds it without asking the server";
    let m =
        manifest::fetch(url, token, std::time::Duration::from_secs(10)).map_err(|e| match e {
            manifest::ManifestError::Fetch(f @ FetchError::NotFound { .. }) => AtipError::new(
                ErrorCode::RegistryManifestInvalid,
                format!("{f}: no ATIP registry manifest there"),
            )
            .hint(format!(
                "give the base URL of a tree made by `atip registry build` (it serves {}); {skip}",
                atip::remote::MANIFEST_PATH
            )),
            manifest::ManifestError::Fetch(f) => {
                AtipError::new(ErrorCode::RemoteRegistryUnreachable, f.to_string())
                    .hint(format!("check the URL and the network; {skip}"))
            }
            manifest::ManifestError::Invalid(m) => {
                AtipError::new(ErrorCode::RegistryManifestInvalid, m).hint(format!(
                    "the URL must be the base of a tree made by `atip registry build`; {skip}"
                ))
            }
        })?;
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
    let d = atip::units::parse_duration(s)?;
    if d.is_zero() {
        return Err("a catalog valid for 0 s expires as it is built".into());
    }
    Ok(build::Expiry::In(d))
}

fn build_error(e: BuildError) -> AtipError {
    match &e {
        BuildError::Usage(m) => AtipError::usage(m.clone()),
        BuildError::Input(m) => AtipError::new(ErrorCode::InputUnreadable, m.clone()),
        BuildError::Key(m) => AtipError::new(ErrorCode::SigningKeyInvalid, m.clone())
            .hint("make a key with `atip registry keygen KEYFILE`"),
        BuildError::Invalid(list) => AtipError::new(ErrorCode::MetadataInvalid, e.to_string())
            .hint("fix the shims (`atip validate` shows every finding) and build again")
            .details(json!({"refused": list})),
        BuildError::Output(m) => AtipError::new(ErrorCode::FileWriteFailed, m.clone()),
    }
}

fn config_error(m: String) -> AtipError {
    AtipError::new(ErrorCode::RegistriesInvalid, m)
        .hint("fix registries.json, e.g. {\"registries\": [{\"name\": \"team\", \"url\": \"https://example.org/atip\"}]}")
}

/// Runs `atip registry …`; returns the exit code.
pub fn run(args: Args, ctx: &Ctx) -> Result<ExitStatus, AtipError> {
    ctx.output
        .require("registry", &[OutputFormat::Text, OutputFormat::Json])?;
    let json = ctx.output.is_json();
    let path = config::path(&ctx.dirs.config, &ctx.env);
    match args.command {
        Sub::Keygen { keyfile } => {
            let public = sign::keygen(&keyfile).map_err(|m| {
                AtipError::new(ErrorCode::FileWriteFailed, m)
                    .hint("choose a new file name; atip never replaces a key")
            })?;
            let pub_path = sign::public_path(&keyfile);
            if json {
                ctx.out.json(&json!({
                    "secretKey": keyfile, "publicKeyFile": pub_path,
                    "keyId": public.id, "publicKey": public.base64,
                }))?;
            } else {
                ctx.out.text(&format!(
                    "secret key {} (keep it secret, mode 0600)\npublic key {} (key id {})\n  {}\ntrust it on a machine with: atip registry add NAME URL --public-key {}\n",
                    keyfile.display(),
                    pub_path.display(),
                    public.id,
                    public.base64,
                    public.base64
                ))?;
            }
            Ok(ExitStatus::Success)
        }
        Sub::Build {
            src,
            out,
            sign,
            name,
            url,
            binaries,
            generation,
            expires,
        } => {
            let report = build::build(&BuildOptions {
                src,
                out,
                sign,
                name,
                url,
                binaries,
                generation,
                expires,
            })
            .map_err(build_error)?;
            ctx.out.warnings(&report.warnings);
            if json {
                ctx.out.json(&report)?;
            } else {
                let mut t = String::new();
                for s in &report.skipped {
                    t.push_str(&format!("skipped {}: {}\n", s.path.display(), s.why));
                }
                t.push_str(&format!(
                    "registry {} in {}: generation {} (expires {}), {} shim(s){}; {} file(s) written, {} unchanged, {} removed\n",
                    report.name,
                    report.out.display(),
                    report.generation,
                    report.expires,
                    report.shims.len(),
                    report
                        .signed_by
                        .as_ref()
                        .map(|k| format!(", signed by key {k}"))
                        .unwrap_or_else(|| ", unsigned".into()),
                    report.written,
                    report.unchanged,
                    report.removed
                ));
                ctx.out.text(&t)?;
            }
            Ok(ExitStatus::Success)
        }
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
            let mut file = RegistriesFile::load(&path).map_err(config_error)?;
            if file.registries.iter().any(|r| r.name == name) {
                return Err(AtipError::new(
                    ErrorCode::RemoteRegistryExists,
                    format!("registry {name:?} is already in {}", path.display()),
                )
                .hint(format!("`atip registry remove {name}` first to replace it")));
            }
            let mut keys = Vec::new();
            for k in &public_keys {
                let p = PathBuf::from(k);
                let key = if p.is_file() {
                    TrustedKey::read(&p)
                } else {
                    TrustedKey::parse(k)
                }
                .map_err(|m| AtipError::usage(format!("--public-key {k:?}: {m}")))?;
                keys.push(key.base64);
            }
            if require_signatures && keys.is_empty() {
                return Err(AtipError::usage(
                    "--require-signatures needs at least one --public-key to check them with",
                ));
            }
            let reg = RemoteRegistry {
                name: name.clone(),
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
            reg.check().map_err(AtipError::usage)?;
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
                    require_signatures,
                    ctx,
                )?)
            };
            file.registries.push(reg);
            file.save(&path)
                .map_err(|m| AtipError::new(ErrorCode::FileWriteFailed, m))?;
            if json {
                ctx.out
                    .json(&json!({"added": name, "file": path, "manifest": manifest}))?;
            } else {
                let what = manifest.map_or(String::new(), |m| {
                    format!(
                        " ({}: {} shims, signatures {})",
                        m.name,
                        m.shims.map_or("?".into(), |n| n.to_string()),
                        m.signatures
                    )
                });
                ctx.out.text(&format!(
                    "added registry {name}{what} to {}; `atip sync` fetches its shims\n",
                    path.display()
                ))?;
            }
            Ok(ExitStatus::Success)
        }
        Sub::List => {
            let file = RegistriesFile::load(&path).map_err(config_error)?;
            if json {
                ctx.out
                    .json(&json!({"file": path, "registries": file.registries}))?;
            } else if file.registries.is_empty() {
                ctx.out.text(&format!(
                    "no remote registries in {}; add one with `atip registry add NAME URL`\n",
                    path.display()
                ))?;
            } else {
                ctx.out.text(&list_text(
                    &file.registries,
                    ctx.width,
                    atip::output::term::Style::new(ctx.out.stdout_color()),
                ))?;
            }
            Ok(ExitStatus::Success)
        }
        Sub::Remove { name } => {
            let mut file = RegistriesFile::load(&path).map_err(config_error)?;
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
            file.save(&path)
                .map_err(|m| AtipError::new(ErrorCode::FileWriteFailed, m))?;
            // Its last accepted generation goes too: a registry added again under this
            // name starts afresh.
            let floor = atip::remote::sync::floor_path(&ctx.dirs.state, &name);
            if let Err(e) = std::fs::remove_file(&floor)
                && e.kind() != std::io::ErrorKind::NotFound
            {
                ctx.out
                    .warn(format_args!("failed to remove {}: {e}", floor.display()));
            }
            if json {
                ctx.out.json(&json!({"removed": name, "file": path}))?;
            } else {
                ctx.out.text(&format!(
                    "removed registry {name} from {}; its tools leave the registry at the next scan\n",
                    path.display()
                ))?;
            }
            Ok(ExitStatus::Success)
        }
    }
}

/// The error of a registries.json that cannot be used.
pub fn registries_error(m: String) -> AtipError {
    config_error(m)
}

/// `registry list` for a person: one row per registry, fitting the terminal (spec/cli.md,
/// terminal output).
fn list_text(
    registries: &[RemoteRegistry],
    width: Option<usize>,
    style: atip::output::term::Style,
) -> String {
    use atip::output::term::{self, Cell, Paint, Table};
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
