//! `atip registry build`: a directory of shims → a static registry tree any web server
//! can serve (`spec/registries.md` "The tree").
//!
//! Every shim is validated first and the build writes nothing if one is refused. The
//! catalog carries a generation (one more than the tree's previous catalog, or
//! `--generation`) and an expiry, both covered by its signature, and the sha256 of every
//! shim it lists: a reader accepts only newer generations, unexpired, and only the shim
//! bytes the catalog names, so an old tree cannot be served again as current.
//! The output is deterministic: the same shims give the same bytes (sorted catalog, the
//! source bytes of content-addressed shims kept as they are, and the previous
//! generation and expiry kept while the shims are unchanged and the expiry is not near).
//! Minisign signatures carry a random nonce, so a signature already in the tree that is
//! still valid for the same bytes and key is kept rather than made again: rebuilding an
//! unchanged tree changes no file.
//!
//! Must not write outside the output directory, and there only the files of the tree.

use super::sign::{KeyError, SigningKey, TrustedKey};
use super::{FORMAT, INDEX_PATH, MANIFEST_PATH, SHIMS_PATH, SIG_SUFFIX, is_hex64};
use crate::discover::report::ReportDiagnostic;
use crate::discover::shims::errors_of;
use crate::output::{AtipError, ErrorCode};
use crate::validate::{Kind, check_bytes};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The largest shim file atip publishes or fetches (bytes).
pub const MAX_SHIM_BYTES: u64 = 8 << 20;
/// How long a catalog stays valid when `--expires` does not say.
pub const DEFAULT_VALIDITY: std::time::Duration = std::time::Duration::from_secs(30 * 86_400);

/// When the catalog expires (`--expires`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// This long after the build. An unchanged tree keeps its expiry until less than half
    /// of this is left.
    In(std::time::Duration),
    /// At this time (one in the past publishes a catalog every reader refuses: a way to
    /// retire a registry).
    At(std::time::SystemTime),
}

impl Default for Expiry {
    fn default() -> Self {
        Expiry::In(DEFAULT_VALIDITY)
    }
}

/// What `atip registry build` was asked to do.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// Directory of shims (searched recursively for `*.json`).
    pub src: PathBuf,
    /// The tree is written here.
    pub out: PathBuf,
    /// Secret key to sign every shim and the catalog with.
    pub sign: Option<PathBuf>,
    /// The registry's name (default: the source directory's name).
    pub name: Option<String>,
    /// The URL the tree will be served at, recorded in the manifest.
    pub url: Option<String>,
    /// Binaries that name-keyed shims describe: each is hashed, and the shim of its
    /// file name is published under that hash.
    pub binaries: Vec<PathBuf>,
    /// The catalog's generation; default: one more than the tree's current catalog
    /// (kept when nothing changed), 1 for a new tree. Never below the tree's current one.
    pub generation: Option<u64>,
    /// The catalog's expiry.
    pub expires: Expiry,
}

/// One shim in the built tree.
#[derive(Debug, Clone, Serialize)]
pub struct BuiltShim {
    /// `sha256:<hex>` of the binary it describes (= its file name).
    pub hash: String,
    /// Tool name.
    pub name: String,
    /// Tool version (`*` when the shim does not say).
    pub version: String,
    /// Platform (`any` when the shim does not say).
    pub platform: String,
    /// The source file.
    pub from: PathBuf,
    /// A cosign bundle was found beside the source and copied (not verified).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bundle: bool,
}

/// A source file that was not published, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

/// What a build did.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildReport {
    /// The output directory.
    pub out: PathBuf,
    /// Registry name.
    pub name: String,
    /// Registry URL, when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Key id of the signer, when signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<String>,
    /// The catalog's generation.
    pub generation: u64,
    /// When the catalog expires (RFC 3339).
    pub expires: String,
    /// Things the publisher should know (an expiry already past).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// The shims published, sorted by hash.
    pub shims: Vec<BuiltShim>,
    /// Name-keyed shims without a binary to hash.
    pub skipped: Vec<Skipped>,
    /// Files written (new or changed).
    pub written: usize,
    /// Files already as they should be.
    pub unchanged: usize,
    /// Stale shim files removed from the tree.
    pub removed: usize,
}

/// A shim source file that is not valid.
#[derive(Debug, Clone, Serialize)]
pub struct Refused {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub message: String,
    /// The validator's errors.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<ReportDiagnostic>,
}

/// Why a build wrote nothing (or stopped part-way while writing).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A flag value is wrong (the message names the flag and its value).
    #[error("{0}")]
    Usage(String),
    /// The source directory, a binary or the tree's catalog cannot be read.
    #[error("failed to {what} {}: {source}", path.display())]
    Read {
        /// `read`, `hash --binary`.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The source is not a directory.
    #[error("{} is not a directory of shims", .0.display())]
    NotADirectory(PathBuf),
    /// Walking the source directory failed.
    #[error("failed to list shims: {0}")]
    List(#[source] walkdir::Error),
    /// The tree's current catalog is not JSON, so the next generation is unknown.
    #[error("{}: not a catalog ({source}); its generation cannot be read (remove it, and give --generation above the one machines have)", path.display())]
    OldCatalog {
        /// The catalog.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The signing key cannot be used.
    #[error(transparent)]
    Key(#[from] KeyError),
    /// Shims were refused; nothing was written.
    #[error("{} shim file(s) refused; nothing was written (first: {}: {})", .0.len(), .0[0].path.display(), .0[0].message)]
    Invalid(Vec<Refused>),
    /// The tree could not be written.
    #[error("failed to {what} {}: {source}", path.display())]
    Output {
        /// `write`, `remove`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl From<BuildError> for AtipError {
    fn from(e: BuildError) -> AtipError {
        let code = match &e {
            BuildError::Usage(_) => ErrorCode::Usage,
            BuildError::Read { .. }
            | BuildError::NotADirectory(_)
            | BuildError::List(_)
            | BuildError::OldCatalog { .. } => ErrorCode::InputUnreadable,
            BuildError::Key(_) => ErrorCode::SigningKeyInvalid,
            BuildError::Invalid(_) => ErrorCode::MetadataInvalid,
            BuildError::Output { .. } => ErrorCode::FileWriteFailed,
        };
        let err = AtipError::new(code, e.to_string());
        match e {
            BuildError::Key(k) => AtipError::from(k),
            BuildError::Invalid(list) => err
                .hint("fix the shims (`atip validate` shows every finding) and build again")
                .details(serde_json::json!({ "refused": list })),
            _ => err,
        }
    }
}

/// Why a shim source file was not read (said in its [`Refused`] entry).
#[derive(Debug, thiserror::Error)]
enum ShimFileError {
    #[error("failed to read: {0}")]
    Read(#[from] std::io::Error),
    #[error("{size} bytes, over the {cap} byte limit of a shim")]
    TooLarge { size: u64, cap: u64 },
}

/// One shim ready to publish.
struct Planned {
    hex: String,
    bytes: Vec<u8>,
    shim: BuiltShim,
    bundle: Option<Vec<u8>>,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

/// Every `*.json` file under `src`, sorted, leaving out hidden directories and a
/// previous tree's catalog.
fn source_files(src: &Path) -> Result<Vec<PathBuf>, BuildError> {
    let md = fs::metadata(src).map_err(|source| BuildError::Read {
        what: "read",
        path: src.to_owned(),
        source,
    })?;
    if !md.is_dir() {
        return Err(BuildError::NotADirectory(src.to_owned()));
    }
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(src)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walk {
        let entry = entry.map_err(BuildError::List)?;
        let p = entry.path();
        if entry.file_type().is_file()
            && p.extension().is_some_and(|x| x == "json")
            && !p.ends_with(INDEX_PATH)
        {
            out.push(p.to_path_buf());
        }
    }
    Ok(out)
}

fn read_capped(path: &Path) -> Result<Vec<u8>, ShimFileError> {
    let md = fs::metadata(path)?;
    if md.len() > MAX_SHIM_BYTES {
        return Err(ShimFileError::TooLarge {
            size: md.len(),
            cap: MAX_SHIM_BYTES,
        });
    }
    Ok(fs::read(path)?)
}

/// The catalog entry of a shim document.
fn describe(value: &Value, hex: &str, from: &Path, bundle: bool) -> BuiltShim {
    let name = str_at(value, "/binary/name")
        .or_else(|| str_at(value, "/name"))
        .unwrap_or("")
        .to_owned();
    BuiltShim {
        hash: format!("sha256:{hex}"),
        name,
        version: str_at(value, "/binary/version")
            .or_else(|| str_at(value, "/version"))
            .unwrap_or("*")
            .to_owned(),
        platform: str_at(value, "/binary/platform")
            .unwrap_or("any")
            .to_owned(),
        from: from.to_path_buf(),
        bundle,
    }
}

/// Validates the shims and works out the tree (nothing written).
fn plan(
    opts: &BuildOptions,
    refused: &mut Vec<Refused>,
    skipped: &mut Vec<Skipped>,
) -> Result<Vec<Planned>, BuildError> {
    let mut plan = Plan {
        binaries: given_binaries(opts)?,
        used_binaries: Default::default(),
        planned: BTreeMap::new(),
        refused,
        skipped,
    };
    for path in source_files(&opts.src)? {
        plan.file(path);
    }
    for (name, bins) in &plan.binaries {
        if !plan.used_binaries.contains(name) {
            return Err(BuildError::Usage(format!(
                "--binary {}: no name-keyed shim for {name:?} in {}",
                bins[0].0.display(),
                opts.src.display()
            )));
        }
    }
    Ok(plan.planned.into_values().collect())
}

/// The binaries given for name-keyed shims (`--binary`), by file name, each with its
/// `sha256:` hash.
fn given_binaries(
    opts: &BuildOptions,
) -> Result<BTreeMap<String, Vec<(PathBuf, String)>>, BuildError> {
    let mut binaries: BTreeMap<String, Vec<(PathBuf, String)>> = BTreeMap::new();
    for b in &opts.binaries {
        let name = b
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| BuildError::Usage(format!("--binary {} has no file name", b.display())))?
            .to_owned();
        let hash = crate::digest::sha256_file(b).map_err(|source| BuildError::Read {
            what: "hash --binary",
            path: b.clone(),
            source,
        })?;
        binaries.entry(name).or_default().push((b.clone(), hash));
    }
    Ok(binaries)
}

/// The tree being planned: the shims to publish by binary hash, and what was refused
/// or skipped on the way.
struct Plan<'a> {
    binaries: BTreeMap<String, Vec<(PathBuf, String)>>,
    /// The names of `binaries` some name-keyed shim used.
    used_binaries: std::collections::BTreeSet<String>,
    planned: BTreeMap<String, Planned>,
    refused: &'a mut Vec<Refused>,
    skipped: &'a mut Vec<Skipped>,
}

impl Plan<'_> {
    fn refuse(&mut self, path: PathBuf, message: String) {
        self.refused.push(Refused {
            path,
            message,
            diagnostics: Vec::new(),
        });
    }

    /// Adds a shim; another one for the same binary must have the same bytes.
    fn add(&mut self, p: Planned) {
        match self.planned.get(&p.hex) {
            Some(prev) if prev.bytes != p.bytes => {
                let message = format!(
                    "describes the same binary (sha256:{}) as {}, differently",
                    p.hex,
                    prev.shim.from.display()
                );
                self.refuse(p.shim.from.clone(), message);
            }
            Some(_) => {}
            None => {
                self.planned.insert(p.hex.clone(), p);
            }
        }
    }

    /// One source file: read (capped), validated, then published under its own
    /// `binary.hash`, or once per binary given for its name.
    fn file(&mut self, path: PathBuf) {
        let file_name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let bytes = match read_capped(&path) {
            Ok(b) => b,
            Err(e) => return self.refuse(path, e.to_string()),
        };
        let checked = check_bytes(&bytes, Some(Kind::Shim), Some(&file_name));
        if !checked.is_valid() {
            let diagnostics = errors_of(&checked);
            self.refused.push(Refused {
                path,
                message: diagnostics
                    .first()
                    .map(|d| d.message.clone())
                    .unwrap_or_else(|| "not a valid shim".into()),
                diagnostics,
            });
            return;
        }
        let Some(value) = checked.value else { return };
        let Some(h) = str_at(&value, "/binary/hash") else {
            return self.name_keyed(path, &value, &file_name);
        };
        let hex = h.strip_prefix("sha256:").unwrap_or("").to_owned();
        if !is_hex64(&hex) {
            let message = format!("binary.hash {h:?} is not sha256:<64 lowercase hex>");
            return self.refuse(path, message);
        }
        let bundle_path = {
            let mut s = path.as_os_str().to_owned();
            s.push(".bundle");
            PathBuf::from(s)
        };
        let bundle = fs::read(&bundle_path).ok();
        let shim = describe(&value, &hex, &path, bundle.is_some());
        self.add(Planned {
            hex,
            bytes,
            shim,
            bundle,
        });
    }

    /// A name-keyed shim: published once per binary given for its name, with that
    /// binary's hash (and name, version and platform where it does not say).
    fn name_keyed(&mut self, path: PathBuf, value: &Value, file_name: &str) {
        let tool = str_at(value, "/binary/name")
            .or_else(|| str_at(value, "/name"))
            .map(str::to_owned)
            .unwrap_or_else(|| file_name.trim_end_matches(".json").to_owned());
        let Some(bins) = self.binaries.get(&tool).cloned() else {
            self.skipped.push(Skipped {
                path,
                why: format!(
                    "a name-keyed shim for {tool:?} without binary.hash: give the binary it describes with --binary PATH"
                ),
            });
            return;
        };
        self.used_binaries.insert(tool.clone());
        for (bin, hash) in &bins {
            let hex = hash.trim_start_matches("sha256:").to_owned();
            let Some(doc) = with_binary(value, &tool, hash) else {
                continue;
            };
            let mut out = serde_json::to_vec_pretty(&doc).expect("a JSON value serializes");
            out.push(b'\n');
            let again = check_bytes(&out, Some(Kind::Shim), Some(&format!("{hex}.json")));
            if !again.is_valid() {
                let diagnostics = errors_of(&again);
                self.refused.push(Refused {
                    path: path.clone(),
                    message: format!(
                        "with the hash of {}: {}",
                        bin.display(),
                        diagnostics
                            .first()
                            .map(|d| d.message.as_str())
                            .unwrap_or("not a valid shim")
                    ),
                    diagnostics,
                });
                continue;
            }
            let shim = describe(&doc, &hex, &path, false);
            self.add(Planned {
                hex,
                bytes: out,
                shim,
                bundle: None,
            });
        }
    }
}

/// A name-keyed shim document with `binary.hash` set, and `binary.name`, `version` and
/// `platform` filled in where it does not say; `None` when it is not an object.
fn with_binary(value: &Value, tool: &str, hash: &str) -> Option<Value> {
    let mut doc = value.clone();
    let root_version = doc.get("version").cloned();
    let root = doc.as_object_mut()?;
    let binary = root
        .entry("binary")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(b) = binary.as_object_mut() {
        b.insert("hash".into(), json!(hash));
        b.entry("name").or_insert_with(|| json!(tool));
        if let Some(v) = root_version {
            b.entry("version").or_insert(v);
        }
        b.entry("platform")
            .or_insert_with(|| json!(super::local_platform()));
    }
    Some(doc)
}

/// The catalog without its generation and expiry: name → version → platform → hash,
/// every level sorted, and `digests`: binary hash → sha256 of the shim file published
/// for it.
fn catalog(name: &str, shims: &[Planned], refused: &mut Vec<Refused>) -> Value {
    let mut tools: BTreeMap<&str, BTreeMap<&str, BTreeMap<&str, &str>>> = BTreeMap::new();
    for p in shims {
        let s = &p.shim;
        let slot = tools
            .entry(&s.name)
            .or_default()
            .entry(&s.version)
            .or_default();
        if let Some(prev) = slot.insert(&s.platform, &s.hash)
            && prev != s.hash
        {
            refused.push(Refused {
                path: s.from.clone(),
                message: format!(
                    "{} {} for platform {} is published twice ({prev} and {}): give each binary.platform or binary.version",
                    s.name, s.version, s.platform, s.hash
                ),
                diagnostics: Vec::new(),
            });
        }
    }
    let digests: BTreeMap<&str, String> = shims
        .iter()
        .map(|p| {
            (
                p.shim.hash.as_str(),
                format!("sha256:{}", crate::digest::sha256_hex(&p.bytes)),
            )
        })
        .collect();
    json!({"version": FORMAT, "registry": name, "tools": tools, "digests": digests})
}

/// The generation and expiry of the new catalog `index` (no `generation`/`expires` in
/// it yet), given the catalog the tree holds now. See [`BuildOptions::generation`].
fn next_generation(
    opts: &BuildOptions,
    index: &Value,
    out: &Path,
    now: std::time::SystemTime,
) -> Result<(u64, String), BuildError> {
    let path = out.join(INDEX_PATH);
    let prev: Option<Value> = match fs::read(&path) {
        Ok(b) => Some(
            serde_json::from_slice(&b).map_err(|source| BuildError::OldCatalog {
                path: path.clone(),
                source,
            })?,
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(BuildError::Read {
                what: "read",
                path,
                source,
            });
        }
    };
    let prev_gen = prev
        .as_ref()
        .and_then(|v| v.get("generation"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let prev_expires = prev
        .as_ref()
        .and_then(|v| v.get("expires"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let same = prev.as_ref().is_some_and(|v| {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("generation");
            m.remove("expires");
        }
        &v == index
    });
    let prev_until = prev_expires
        .as_deref()
        .and_then(crate::timestamp::parse_rfc3339_utc);
    let keep = same
        && prev_gen > 0
        && opts.generation.is_none_or(|g| g == prev_gen)
        && match opts.expires {
            Expiry::In(d) => prev_until.is_some_and(|t| t > now + d / 2),
            Expiry::At(t) => prev_until == Some(t),
        };
    if keep && let Some(e) = prev_expires {
        return Ok((prev_gen, e));
    }
    let generation = opts.generation.unwrap_or(prev_gen + 1);
    if generation <= prev_gen {
        return Err(BuildError::Usage(format!(
            "--generation {generation}: the tree in {} is at generation {prev_gen}, and machines refuse a catalog that is not newer than the one they have; give a higher one",
            out.display()
        )));
    }
    let until = match opts.expires {
        Expiry::In(d) => now + d,
        Expiry::At(t) => t,
    };
    Ok((generation, crate::timestamp::rfc3339(until)))
}

fn pretty(v: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("a JSON value serializes");
    out.push(b'\n');
    out
}

/// A signature for `bytes`: the one already at `sig_path` when it is still valid for
/// these bytes, this key and this file, else a new one.
/// `comment` is the trusted comment it must carry.
fn signature(
    key: &SigningKey,
    bytes: &[u8],
    comment: &str,
    sig_path: &Path,
) -> Result<String, KeyError> {
    if let Ok(old) = fs::read_to_string(sig_path)
        && super::sign::verify(std::slice::from_ref(&key.public), bytes, &old, comment)
            == super::sign::Verdict::Signed(key.public.id.clone())
    {
        return Ok(old);
    }
    key.sign(bytes, comment)
}

/// Builds the tree. See the module documentation.
pub fn build(opts: &BuildOptions) -> Result<BuildReport, BuildError> {
    let key = opts.sign.as_deref().map(SigningKey::read).transpose()?;
    if let Some(u) = &opts.url {
        let parsed = reqwest::Url::parse(u)
            .map_err(|e| BuildError::Usage(format!("--url {u:?} is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(BuildError::Usage(format!("--url {u:?} is not http(s)")));
        }
    }
    let name = registry_name(opts)?;
    let mut refused = Vec::new();
    let mut skipped = Vec::new();
    let shims = plan(opts, &mut refused, &mut skipped)?;
    let mut index = catalog(&name, &shims, &mut refused);
    if !refused.is_empty() {
        return Err(BuildError::Invalid(refused));
    }
    let now = std::time::SystemTime::now();
    let (generation, expires) = next_generation(opts, &index, &opts.out, now)?;
    let mut warnings = Vec::new();
    if let Expiry::At(t) = opts.expires
        && t <= now
    {
        warnings.push(format!(
            "the catalog expires at {expires}, which has passed: every machine will refuse it"
        ));
    }
    if let Some(m) = index.as_object_mut() {
        m.insert("generation".into(), json!(generation));
        m.insert("expires".into(), json!(expires));
    }
    let tree = Tree {
        out: &opts.out,
        key: key.as_ref(),
        files: Vec::new(),
    };
    let index_comment = super::sign::catalog_comment(&name, generation, &expires);
    let manifest = manifest(&name, opts, key.as_ref(), shims.len());
    let files = tree.files(&shims, &index, &index_comment, &manifest)?;
    let (written, unchanged) = write_tree(&opts.out, &files)?;
    let removed = remove_stale(&opts.out, &files)?;
    Ok(BuildReport {
        out: opts.out.clone(),
        name,
        url: opts.url.clone(),
        signed_by: key.map(|k| k.public.id.clone()),
        generation,
        expires,
        warnings,
        shims: shims.into_iter().map(|p| p.shim).collect(),
        skipped,
        written,
        unchanged,
        removed,
    })
}

/// The registry's name: `--name`, else the source directory's; it must be a valid
/// registry name.
fn registry_name(opts: &BuildOptions) -> Result<String, BuildError> {
    let name = match &opts.name {
        Some(n) => n.clone(),
        None => fs::canonicalize(&opts.src)
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "atip-registry".into()),
    };
    if !super::config::is_valid_registry_name(&name) {
        return Err(BuildError::Usage(format!(
            "registry name {name:?}: use letters, digits, '.', '_' and '-' (at most 64, not starting with '.' or '-')"
        )));
    }
    Ok(name)
}

/// The tree's manifest: its name, URL, endpoints, and who signs it.
fn manifest(name: &str, opts: &BuildOptions, key: Option<&SigningKey>, shims: usize) -> Value {
    let signers: Vec<&TrustedKey> = key.iter().map(|k| &k.public).collect();
    let mut manifest = Map::new();
    manifest.insert("atipRegistry".into(), json!(FORMAT));
    manifest.insert("name".into(), json!(name));
    if let Some(u) = &opts.url {
        manifest.insert("url".into(), json!(u));
    }
    manifest.insert("protocol".into(), json!("0.6"));
    manifest.insert(
        "endpoints".into(),
        json!({
            "index": format!("/{INDEX_PATH}"),
            "shims": format!("/{SHIMS_PATH}/{{hash}}.json"),
            "signatures": format!("/{SHIMS_PATH}/{{hash}}.json{SIG_SUFFIX}"),
        }),
    );
    manifest.insert(
        "trust".into(),
        json!({
            "signatures": if key.is_some() { "minisign" } else { "none" },
            "signers": signers.iter().map(|k| json!({"type": "minisign", "keyId": k.id, "publicKey": k.base64})).collect::<Vec<_>>(),
        }),
    );
    manifest.insert("shims".into(), json!(shims));
    Value::Object(manifest)
}

/// Every file of the tree being made (relative path, bytes), each signed file followed
/// by its signature when a key is given.
struct Tree<'a> {
    out: &'a Path,
    key: Option<&'a SigningKey>,
    files: Vec<(PathBuf, Vec<u8>)>,
}

impl Tree<'_> {
    /// The shims (with their bundles), the catalog and the manifest.
    fn files(
        mut self,
        shims: &[Planned],
        index: &Value,
        index_comment: &str,
        manifest: &Value,
    ) -> Result<Vec<(PathBuf, Vec<u8>)>, BuildError> {
        for p in shims {
            let rel = format!("{SHIMS_PATH}/{}.json", p.hex);
            self.sign(&rel, &super::sign::file_comment(&rel), &p.bytes)?;
            if let Some(b) = &p.bundle {
                self.files
                    .push((PathBuf::from(format!("{rel}.bundle")), b.clone()));
            }
            self.files.push((PathBuf::from(rel), p.bytes.clone()));
        }
        let index_bytes = pretty(index);
        self.sign(INDEX_PATH, index_comment, &index_bytes)?;
        self.files.push((PathBuf::from(INDEX_PATH), index_bytes));
        self.files
            .push((PathBuf::from(MANIFEST_PATH), pretty(manifest)));
        Ok(self.files)
    }

    /// The signature of the file at `rel`, when a key is given.
    fn sign(&mut self, rel: &str, comment: &str, bytes: &[u8]) -> Result<(), BuildError> {
        if let Some(k) = self.key {
            let sig_rel = format!("{rel}{SIG_SUFFIX}");
            let text = signature(k, bytes, comment, &self.out.join(&sig_rel))?;
            self.files.push((PathBuf::from(sig_rel), text.into_bytes()));
        }
        Ok(())
    }
}

/// Writes the files of the tree that differ from what is there. Returns how many were
/// written and how many were already as they should be.
fn write_tree(out: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<(usize, usize), BuildError> {
    let mut written = 0;
    let mut unchanged = 0;
    for (rel, bytes) in files {
        let target = out.join(rel);
        if fs::read(&target).is_ok_and(|old| &old == bytes) {
            unchanged += 1;
            continue;
        }
        super::write_replace(&target, bytes).map_err(|source| BuildError::Output {
            what: "write",
            path: target.clone(),
            source,
        })?;
        written += 1;
    }
    Ok((written, unchanged))
}

/// Removes the shims, signatures and bundles of an earlier build that this tree no
/// longer has. Returns how many.
fn remove_stale(out: &Path, files: &[(PathBuf, Vec<u8>)]) -> Result<usize, BuildError> {
    let keep: std::collections::HashSet<PathBuf> = files.iter().map(|(r, _)| out.join(r)).collect();
    let mut removed = 0;
    let mut stale: Vec<PathBuf> = Vec::new();
    if let Ok(rd) = fs::read_dir(out.join(SHIMS_PATH)) {
        stale.extend(rd.filter_map(Result::ok).map(|e| e.path()).filter(|p| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            is_hex64(n.get(..64).unwrap_or(""))
                && [".json", ".json.minisig", ".json.bundle"].contains(&&n[64..])
        }));
    }
    stale.push(out.join(format!("{INDEX_PATH}{SIG_SUFFIX}")));
    for p in stale {
        if !keep.contains(&p) && p.is_file() {
            fs::remove_file(&p).map_err(|source| BuildError::Output {
                what: "remove",
                path: p.clone(),
                source,
            })?;
            removed += 1;
        }
    }
    Ok(removed)
}
