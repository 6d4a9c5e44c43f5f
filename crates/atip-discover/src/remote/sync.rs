//! Fetching, verifying and caching what remote registries publish
//! (`spec/registries.md` "Sync").
//!
//! A scan (and `atip sync`) opens the configured registries ([`Remote::open`]): each
//! registry's catalog is taken from the cache while it is younger than
//! [`RECHECK`], else re-checked with a conditional request; with `--refresh`
//! everything is re-checked now. Once the scan knows which binaries here are listed
//! in some catalog and have no better source, `Remote::fetch_shims` fetches only
//! those shims (in parallel, bounded), verifies each before it is cached (hash in file =
//! file name = the binary's hash; validation; signatures), and the scan's source
//! ([`crate::discover::remote`]) offers them.
//!
//! What could not be fetched or verified never replaces what the cache holds: the
//! previous verified copy is used (and the failure reported). Offline (`ATIP_OFFLINE`,
//! `--offline`) nothing is requested and the cache is used as it is.
//!
//! Registries move forward only: the generation of the last catalog accepted from each
//! registry is kept in the state dir (`Floor`, not the cache, which may be wiped), and
//! a catalog of an older generation, of the same generation with other bytes, without a
//! generation, or past its expiry is refused (`Reg::admit`); a shim is used only when
//! its bytes are the ones the accepted catalog names (`digests`), so old shims cannot be
//! served beside a current catalog either.
//!
//! Writes only under `<cache dir>/remote/<registry name>/` and
//! `<state dir>/remote/<registry name>.json`.

use super::build::MAX_SHIM_BYTES;
use super::config::{RegistriesError, RegistriesFile, RemoteRegistry};
use super::fetch::{FetchError, Http, Response, Validators};
use super::sign::{TrustedKey, Verdict, verify};
use super::{INDEX_PATH, SHIMS_PATH, SIG_SUFFIX, is_hex64};
use crate::env::Env;
use crate::validate::{Kind, check_bytes};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How long a cached catalog or shim is used without asking the server again.
pub const RECHECK: Duration = Duration::from_secs(24 * 60 * 60);
/// The largest catalog atip reads (bytes).
pub const MAX_CATALOG_BYTES: u64 = 32 << 20;
/// The largest signature file atip reads (bytes).
pub const MAX_SIG_BYTES: u64 = 4096;
/// Subdirectory of the cache dir holding one directory per registry (and of the state
/// dir holding each registry's `Floor`).
pub const CACHE_SUBDIR: &str = "remote";

/// How a run talks to remote registries.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Re-check every catalog and shim now (conditional requests), whatever their age.
    pub refresh: bool,
    /// Request nothing: use the cache as it is.
    pub offline: bool,
    /// Time limit of one request.
    pub timeout: Duration,
    /// Time limit of all the requests of a run.
    pub deadline: Duration,
    /// Requests in flight at once.
    pub jobs: usize,
}

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            refresh: false,
            offline: false,
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            jobs: 8,
        }
    }
}

/// The cache dir's directory of one registry.
pub(crate) fn registry_cache(cache: &Path, name: &str) -> PathBuf {
    cache.join(CACHE_SUBDIR).join(name)
}

/// Where the state dir keeps the `Floor` of one registry.
pub fn floor_path(state: &Path, name: &str) -> PathBuf {
    state.join(CACHE_SUBDIR).join(format!("{name}.json"))
}

/// The last catalog accepted from a registry: later catalogs must not be older, nor
/// the same generation with other bytes, nor another registry's.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Floor {
    /// The `registry` the catalog names.
    registry: String,
    /// Its generation.
    generation: u64,
    /// sha256 hex of its bytes.
    sha256: String,
    /// When it was accepted (RFC 3339).
    accepted: String,
}

/// What the cache remembers of one fetched file.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stamp {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    etag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_modified: Option<String>,
    /// When the server was last asked (seconds since the epoch).
    checked: u64,
    /// sha256 hex of the cached bytes (a changed cache file is not used).
    sha256: String,
    /// Key id of the trusted signer verified when it was fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    signer: Option<String>,
    /// Freshness the server gave (`Cache-Control`), in seconds; capped at [`RECHECK`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_age: Option<u64>,
}

impl Stamp {
    fn validators(&self) -> Validators {
        Validators {
            etag: self.etag.clone(),
            last_modified: self.last_modified.clone(),
        }
    }

    fn fresh(&self, now: u64) -> bool {
        let limit = self
            .max_age
            .map_or(RECHECK.as_secs(), |m| m.min(RECHECK.as_secs()));
        now.saturating_sub(self.checked) < limit
    }
}

/// `state.json` of a registry's cache directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct State {
    /// The URL the cache was filled from: a different URL starts afresh.
    url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    catalog: Option<Stamp>,
    #[serde(default)]
    shims: BTreeMap<String, Stamp>,
}

/// What became of a registry's catalog this run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatalogStatus {
    /// Downloaded (new or changed).
    Fetched,
    /// Re-checked: the server answered 304.
    NotModified,
    /// Taken from the cache, younger than the re-check interval.
    Fresh,
    /// Taken from the cache because the server could not be used (or offline).
    Cached,
    /// No usable catalog: the registry offers nothing this run.
    Failed,
}

/// A shim a registry published that was not used, and why.
#[derive(Debug, Clone, Serialize)]
pub struct RefusedShim {
    /// `sha256:<hex>` of the binary.
    pub hash: String,
    /// Why.
    pub reason: String,
}

/// One registry's part of a scan or sync report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistrySync {
    /// Registry name.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// Nothing was requested (offline mode).
    pub offline: bool,
    /// What became of the catalog.
    pub catalog: CatalogStatus,
    /// The generation of the catalog in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// When the catalog in use expires (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    /// Why the catalog the server served was refused (older generation, same generation
    /// with other bytes, no generation, expired); the accepted one stays in use.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub catalog_refused: Option<String>,
    /// Tools its catalog lists.
    pub listed: usize,
    /// Requests sent to it.
    pub requests: u64,
    /// Of those, answered 304.
    pub not_modified: u64,
    /// Bytes downloaded.
    pub bytes: u64,
    /// Shims wanted from it (binaries here it lists, with no better source).
    pub wanted: usize,
    /// Shims it provided this run (from the network or the cache).
    pub used: usize,
    /// Of those, signed by a key in `publicKeys`.
    pub verified: usize,
    /// Shims refused (bad signature, wrong hash, invalid, …).
    pub refused: Vec<RefusedShim>,
    /// The failure of this run (with the cache used instead, when it could be).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A verified shim ready to offer.
#[derive(Debug, Clone)]
pub struct Ready {
    /// The cached file.
    pub path: PathBuf,
    /// sha256 hex of its bytes.
    pub doc: String,
    /// Key id of the trusted signer, when signed by one.
    pub signer: Option<String>,
    /// Its `trust.source`.
    pub trust: Option<String>,
    /// The tool it describes (`binary.name`, else `name`).
    pub tool: Option<String>,
}

/// One registry during a run.
struct Reg {
    cfg: RemoteRegistry,
    keys: Vec<TrustedKey>,
    token: Option<String>,
    dir: PathBuf,
    state: State,
    /// The last accepted catalog, and where it is kept.
    floor: Option<Floor>,
    floor_path: PathBuf,
    /// Tool names its catalog lists.
    names: HashSet<String>,
    /// Binary hashes (hex) its catalog lists.
    hashes: HashSet<String>,
    /// sha256 hex of the shim file the catalog publishes, by binary hash (hex).
    digests: HashMap<String, String>,
    ready: HashMap<String, Ready>,
    report: RegistrySync,
    /// Its entries must be kept: it failed (network, no catalog) this run.
    failed: Option<String>,
    state_dirty: bool,
}

/// The remote registries of one run. See the module documentation.
pub struct Remote {
    regs: Vec<Reg>,
    opts: RemoteOptions,
    http: Option<Http>,
    now: u64,
    /// Warnings about the remote registries as a whole (offline mode, cache used).
    pub warnings: Vec<String>,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn sha_hex(b: &[u8]) -> String {
    crate::digest::sha256_hex(b)
}

/// Reads a cached file if its bytes still hash to what the stamp recorded.
fn read_cached(path: &Path, stamp: &Stamp) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    (sha_hex(&bytes) == stamp.sha256).then_some(bytes)
}

/// What a catalog says.
#[derive(Debug, Default)]
struct Catalog {
    names: HashSet<String>,
    hashes: HashSet<String>,
    digests: HashMap<String, String>,
    registry: Option<String>,
    generation: Option<u64>,
    expires: Option<String>,
}

impl Catalog {
    /// The trusted comment its signature must carry.
    fn comment(&self) -> String {
        super::sign::catalog_comment(
            self.registry.as_deref().unwrap_or(""),
            self.generation.unwrap_or(0),
            self.expires.as_deref().unwrap_or(""),
        )
    }
}

/// Hex after `sha256:`, when it is 64 lowercase hex digits.
fn sha256_hex_of(v: &Value) -> Option<&str> {
    v.as_str()
        .and_then(|s| s.strip_prefix("sha256:"))
        .filter(|h| is_hex64(h))
}

/// Why the registries could not be opened: a configuration error, not a registry that
/// cannot be reached (that one is reported in [`RegistrySync::error`]).
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// `registries.json` (or a token variable it names) is not usable.
    #[error(transparent)]
    Registries(#[from] RegistriesError),
    /// The generation last accepted from a registry is recorded in a file that does not
    /// parse.
    #[error("registry {name:?}: {} (the generation last accepted from it) is unreadable: {source}; remove it to accept the registry's current generation", path.display())]
    Floor {
        /// The registry.
        name: String,
        /// The state file.
        path: PathBuf,
        /// Why it does not parse.
        #[source]
        source: serde_json::Error,
    },
    /// That file exists but cannot be read.
    #[error("failed to read {}: {source}", path.display())]
    FloorRead {
        /// The state file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// No HTTP client.
    #[error(transparent)]
    Client(#[from] super::fetch::ClientError),
}

impl From<OpenError> for crate::output::AtipError {
    /// Every way opening fails is `registries_invalid` (exit 78): the fix is in
    /// `registries.json`, the environment, or atip's state dir.
    fn from(e: OpenError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        match e {
            OpenError::Registries(e) => AtipError::from(e),
            _ => AtipError::new(ErrorCode::RegistriesInvalid, e.to_string()),
        }
    }
}

/// Why a catalog, a shim or a signature from a registry was not used. The text goes
/// into the sync report (`error`, `catalogRefused`, `refused[].reason`).
#[derive(Debug, thiserror::Error)]
enum Refusal {
    #[error("the catalog is not JSON: {0}")]
    CatalogNotJson(#[source] serde_json::Error),
    #[error("the catalog has no \"tools\" object")]
    CatalogNoTools,
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error("{0}: unexpected 304")]
    NotModified(String),
    #[error("{0}: 304 to an unconditional request")]
    Unconditional304(String),
    #[error("bad signature: {0}")]
    BadSignature(String),
    #[error("signed by key {0}, which is not in this registry's publicKeys")]
    UnknownSigner(String),
    #[error("unsigned, and the registry requires signatures")]
    Unsigned,
    #[error(
        "the catalog has no generation, expiry or registry name (an older atip built it): its publisher must rebuild it with `atip registry build`"
    )]
    NoGeneration,
    #[error("the catalog's expiry {0:?} is not a time (YYYY-MM-DDTHH:MM:SSZ)")]
    BadExpiry(String),
    #[error(
        "the catalog (generation {generation}) expired at {expires}: its publisher must rebuild it"
    )]
    Expired { generation: u64, expires: String },
    #[error(
        "the catalog is registry {registry:?}'s, but the one accepted at {accepted} was {was:?}'s"
    )]
    OtherRegistry {
        registry: String,
        accepted: String,
        was: String,
    },
    #[error(
        "generation {generation} is older than generation {floor} accepted at {accepted}: a rollback, refused"
    )]
    Rollback {
        generation: u64,
        floor: u64,
        accepted: String,
    },
    #[error(
        "generation {generation} differs from the generation {generation} accepted at {accepted}: a catalog is never changed without a new generation"
    )]
    Changed { generation: u64, accepted: String },
    #[error("failed to record the accepted generation in {}: {source}", path.display())]
    Record {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the catalog (generation {generation}) gives no digest for it")]
    NoDigest { generation: u64 },
    #[error(
        "not the shim the catalog (generation {generation}) publishes for it: its sha256 is {doc}, the catalog's {want} (an older or altered copy)"
    )]
    WrongDigest {
        generation: u64,
        doc: String,
        want: String,
    },
    #[error("not JSON")]
    ShimNotJson,
    #[error("wrong hash: binary.hash is {declared} but it was published as {name}")]
    WrongHash { declared: String, name: String },
    #[error("not a valid shim: {0}")]
    InvalidShim(String),
}

/// What a catalog lists.
fn parse_catalog(bytes: &[u8]) -> Result<Catalog, Refusal> {
    let v: Value = serde_json::from_slice(bytes).map_err(Refusal::CatalogNotJson)?;
    let tools = v
        .get("tools")
        .and_then(Value::as_object)
        .ok_or(Refusal::CatalogNoTools)?;
    let mut names = HashSet::new();
    let mut hashes = HashSet::new();
    for (name, versions) in tools {
        names.insert(name.clone());
        for platforms in versions.as_object().into_iter().flat_map(|m| m.values()) {
            for h in platforms.as_object().into_iter().flat_map(|m| m.values()) {
                let hex = h
                    .as_str()
                    .and_then(|s| s.strip_prefix("sha256:"))
                    .unwrap_or("");
                if is_hex64(hex) {
                    hashes.insert(hex.to_owned());
                }
            }
        }
    }
    let digests = v
        .get("digests")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, d)| {
            let k = sha256_hex_of(&Value::from(k.as_str()))?.to_owned();
            Some((k, sha256_hex_of(d)?.to_owned()))
        })
        .collect();
    Ok(Catalog {
        names,
        hashes,
        digests,
        registry: v.get("registry").and_then(Value::as_str).map(str::to_owned),
        generation: v.get("generation").and_then(Value::as_u64),
        expires: v.get("expires").and_then(Value::as_str).map(str::to_owned),
    })
}

/// The outcome of checking a signature file for some bytes.
enum Signed {
    By(String),
    Unsigned,
}

/// Why a catalog was not used.
#[derive(Debug, thiserror::Error)]
enum CatalogError {
    /// Refused by the forward-only rules ([`Reg::admit`]).
    #[error("{url}: {reason}")]
    Refused { url: String, reason: Refusal },
    /// Anything else from the server: network, not JSON, signature.
    #[error("{url}: {reason}")]
    Failed { url: String, reason: Refusal },
    /// The request itself failed, or the accepted generation could not be recorded.
    #[error(transparent)]
    Other(Refusal),
}

impl Reg {
    fn new(
        cfg: &RemoteRegistry,
        cache: &Path,
        state_dir: &Path,
        env: &Env,
    ) -> Result<Reg, OpenError> {
        let keys = cfg.keys()?;
        let token = match &cfg.auth {
            Some(a) => Some(
                env.var(&a.token_env_var)
                    .map(str::to_owned)
                    .ok_or_else(|| RegistriesError::TokenUnset {
                        name: cfg.name.clone(),
                        var: a.token_env_var.clone(),
                    })?,
            ),
            None => None,
        };
        let dir = registry_cache(cache, &cfg.name);
        let state = std::fs::read(dir.join("state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<State>(&b).ok())
            .filter(|s| s.url == cfg.url)
            .unwrap_or_else(|| State {
                url: cfg.url.clone(),
                ..State::default()
            });
        let floor_path = floor_path(state_dir, &cfg.name);
        let floor =
            match std::fs::read(&floor_path) {
                Ok(b) => Some(serde_json::from_slice::<Floor>(&b).map_err(|source| {
                    OpenError::Floor {
                        name: cfg.name.clone(),
                        path: floor_path.clone(),
                        source,
                    }
                })?),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(source) => {
                    return Err(OpenError::FloorRead {
                        path: floor_path,
                        source,
                    });
                }
            };
        Ok(Reg {
            keys,
            token,
            dir,
            state,
            floor,
            floor_path,
            names: HashSet::new(),
            hashes: HashSet::new(),
            digests: HashMap::new(),
            ready: HashMap::new(),
            report: RegistrySync {
                name: cfg.name.clone(),
                url: cfg.url.clone(),
                offline: false,
                catalog: CatalogStatus::Failed,
                generation: None,
                expires: None,
                catalog_refused: None,
                listed: 0,
                requests: 0,
                not_modified: 0,
                bytes: 0,
                wanted: 0,
                used: 0,
                verified: 0,
                refused: Vec::new(),
                error: None,
            },
            failed: None,
            state_dirty: false,
            cfg: cfg.clone(),
        })
    }

    /// Whether signatures are checked at all: required, or keys to check them with.
    fn checks_signatures(&self) -> bool {
        self.cfg.require_signatures || !self.keys.is_empty()
    }

    /// Checks the signature at `rel + .minisig` over `bytes`, fetching it; `comment` is
    /// the trusted comment a valid signature must carry.
    fn signature(
        &self,
        http: &Http,
        rel: &str,
        bytes: &[u8],
        comment: &str,
    ) -> Result<(Signed, Option<String>), Refusal> {
        let url = self.cfg.url_of(&format!("{rel}{SIG_SUFFIX}"));
        let text = match http.get(&url, None, self.token.as_deref(), MAX_SIG_BYTES) {
            Ok(Response::Body { bytes, .. }) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(Response::NotModified { .. }) => return Err(Refusal::NotModified(url)),
            Err(FetchError::NotFound { .. }) => {
                return self.judge(None, bytes, comment).map(|s| (s, None));
            }
            Err(e) => return Err(e.into()),
        };
        let s = self.judge(Some(&text), bytes, comment)?;
        Ok((s, Some(text)))
    }

    /// Applies the signature rules to a signature text (or its absence).
    fn judge(&self, sig: Option<&str>, bytes: &[u8], comment: &str) -> Result<Signed, Refusal> {
        match sig.map(|t| verify(&self.keys, bytes, t, comment)) {
            Some(Verdict::Signed(id)) => Ok(Signed::By(id)),
            Some(Verdict::Bad(m)) => Err(Refusal::BadSignature(m)),
            Some(Verdict::UnknownSigner(id)) if self.cfg.require_signatures => {
                Err(Refusal::UnknownSigner(id))
            }
            Some(Verdict::UnknownSigner(_)) => Ok(Signed::Unsigned),
            None if self.cfg.require_signatures => Err(Refusal::Unsigned),
            None => Ok(Signed::Unsigned),
        }
    }

    /// The forward-only rules: a catalog is used only with a generation and an expiry,
    /// before its expiry, naming the registry its predecessors named, and with a
    /// generation above the last accepted one (or equal to it with the same bytes).
    fn admit(&self, cat: &Catalog, sha256: &str, now: u64) -> Result<(), Refusal> {
        let (Some(generation), Some(expires), Some(registry)) = (
            cat.generation,
            cat.expires.as_deref(),
            cat.registry.as_deref(),
        ) else {
            return Err(Refusal::NoGeneration);
        };
        let Some(until) = crate::timestamp::parse_rfc3339_utc(expires) else {
            return Err(Refusal::BadExpiry(expires.to_owned()));
        };
        if until <= UNIX_EPOCH + Duration::from_secs(now) {
            return Err(Refusal::Expired {
                generation,
                expires: expires.to_owned(),
            });
        }
        let Some(f) = &self.floor else { return Ok(()) };
        if f.registry != registry {
            return Err(Refusal::OtherRegistry {
                registry: registry.to_owned(),
                accepted: f.accepted.clone(),
                was: f.registry.clone(),
            });
        }
        if generation < f.generation {
            return Err(Refusal::Rollback {
                generation,
                floor: f.generation,
                accepted: f.accepted.clone(),
            });
        }
        if generation == f.generation && sha256 != f.sha256 {
            return Err(Refusal::Changed {
                generation,
                accepted: f.accepted.clone(),
            });
        }
        Ok(())
    }

    /// Records `cat` as the last accepted catalog (the state dir's [`Floor`]).
    fn accept(&mut self, cat: &Catalog, sha256: &str, now: u64) -> Result<(), Refusal> {
        let floor = Floor {
            registry: cat.registry.clone().unwrap_or_default(),
            generation: cat.generation.unwrap_or(0),
            sha256: sha256.to_owned(),
            accepted: crate::registry::rfc3339(UNIX_EPOCH + Duration::from_secs(now)),
        };
        let unchanged = self
            .floor
            .as_ref()
            .is_some_and(|f| f.generation == floor.generation && f.sha256 == floor.sha256);
        if !unchanged {
            let bytes = serde_json::to_vec_pretty(&floor).unwrap_or_default();
            std::fs::create_dir_all(crate::atomic::parent_dir(&self.floor_path))
                .and_then(|()| {
                    crate::atomic::write_atomic(
                        &self.floor_path,
                        &bytes,
                        crate::atomic::Options::SHARED,
                    )
                    .map_err(|e| e.source)
                })
                .map_err(|source| Refusal::Record {
                    path: self.floor_path.clone(),
                    source,
                })?;
            self.floor = Some(floor);
        }
        Ok(())
    }

    /// Takes in an accepted catalog's lists.
    fn adopt(&mut self, cat: Catalog, status: CatalogStatus) {
        self.report.generation = cat.generation;
        self.report.expires = cat.expires;
        self.names = cat.names;
        self.hashes = cat.hashes;
        self.digests = cat.digests;
        self.report.catalog = status;
    }
}

/// A cached catalog that passes today's rules: its bytes, its stamp and what it says.
type CachedCatalog = (Vec<u8>, Stamp, Catalog);

/// A signature's verdict, with its text when there is one.
type Signature = (Signed, Option<String>);

/// What [`Remote`] does for one registry: its catalog ([`Remote::catalog`]) and the
/// shims fetched for it ([`Remote::fetch_shims`]).
impl Reg {
    /// The cached catalog, used only while it passes today's rules: the bytes last
    /// accepted, still the accepted generation, unexpired, and its signature. With it,
    /// why the rules refused the cached copy, when they did.
    fn cached_catalog(&self, now: u64) -> (Option<CachedCatalog>, Option<String>) {
        let path = self.dir.join("index.json");
        let cached_sig =
            std::fs::read_to_string(self.dir.join(format!("index.json{SIG_SUFFIX}"))).ok();
        let mut refusal = None;
        let cached = self
            .state
            .catalog
            .as_ref()
            .and_then(|s| read_cached(&path, s).map(|b| (b, s.clone())))
            .and_then(|(b, s)| {
                let cat = parse_catalog(&b).ok()?;
                let sha = sha_hex(&b);
                if self.floor.as_ref().is_some_and(|f| f.sha256 != sha) {
                    return None;
                }
                if let Err(e) = self.admit(&cat, &sha, now) {
                    refusal = Some(format!("cached catalog: {e}"));
                    return None;
                }
                if self.checks_signatures()
                    && self
                        .judge(cached_sig.as_deref(), &b, &cat.comment())
                        .is_err()
                {
                    return None;
                }
                Some((b, s, cat))
            });
        (cached, refusal)
    }

    /// Takes in one shim attempt: its counts, the files to cache, its stamp, why it was
    /// refused or the registry failed, and the shim itself when it verified.
    fn take_shim(&mut self, o: ShimOutcome) {
        self.report.requests += o.requests;
        self.report.not_modified += o.not_modified;
        self.report.bytes += o.bytes;
        if let Some((bytes, sig)) = &o.write {
            let dir = self.dir.join("sha256");
            let res =
                super::write_replace(&dir.join(format!("{}.json", o.hex)), bytes).and_then(|_| {
                    write_or_remove(
                        &dir.join(format!("{}.json{SIG_SUFFIX}", o.hex)),
                        sig.as_deref(),
                    )
                });
            if let Err(e) = res {
                self.report.error.get_or_insert(format!(
                    "failed to cache shims in {}: {e}",
                    self.dir.display()
                ));
            }
        }
        if let Some(st) = o.stamp {
            self.state.shims.insert(o.hex.clone(), st);
            self.state_dirty = true;
        }
        if let Some(m) = o.refused {
            self.report.refused.push(RefusedShim {
                hash: format!("sha256:{}", o.hex),
                reason: m,
            });
        }
        if let Some(m) = o.network {
            self.report.error.get_or_insert(m.clone());
            self.failed.get_or_insert(m);
        }
        if let Some(r) = o.ready {
            self.report.used += 1;
            if r.signer.is_some() {
                self.report.verified += 1;
            }
            self.ready.insert(o.hex, r);
        }
    }

    /// Offline: the cached catalog, or the registry failed this run.
    fn offline_catalog(&mut self, cached: Option<CachedCatalog>, refusal: Option<String>) {
        match cached {
            Some((_, _, cat)) => self.adopt(cat, CatalogStatus::Cached),
            None => {
                let m =
                    refusal.unwrap_or_else(|| "offline, and no catalog of it in the cache".into());
                self.report.error = Some(m.clone());
                self.failed = Some(m);
            }
        }
    }

    /// Asks the server for the catalog (a conditional request when one is cached) and
    /// adopts what it answers once it passes the rules: the cached one on a 304 (taken
    /// out of `cached`), else the new one, verified, accepted and cached.
    fn fetch_catalog(
        &mut self,
        http: &Http,
        cached: &mut Option<CachedCatalog>,
        now: u64,
    ) -> Result<(), CatalogError> {
        let url = self.cfg.url_of(INDEX_PATH);
        let got = http.get(
            &url,
            cached.as_ref().map(|(_, s, _)| s.validators()).as_ref(),
            self.token.as_deref(),
            MAX_CATALOG_BYTES,
        );
        match got {
            Ok(Response::NotModified { fresh_for }) => {
                self.report.not_modified += 1;
                let Some((_, mut s, cat)) = cached.take() else {
                    return Err(CatalogError::Other(Refusal::Unconditional304(url)));
                };
                s.checked = now;
                s.max_age = fresh_for;
                self.state.catalog = Some(s);
                self.state_dirty = true;
                self.adopt(cat, CatalogStatus::NotModified);
                Ok(())
            }
            Ok(Response::Body {
                bytes,
                validators,
                fresh_for,
            }) => {
                self.report.bytes += bytes.len() as u64;
                let sha = sha_hex(&bytes);
                let (cat, signed) = self.check_catalog(http, &url, &bytes, &sha, now)?;
                let sig_text = signed.as_ref().and_then(|(_, t)| t.clone());
                let signer = match signed {
                    Some((Signed::By(id), _)) => Some(id),
                    _ => None,
                };
                self.store_catalog(&bytes, sig_text.as_deref());
                self.state.catalog = Some(Stamp {
                    etag: validators.etag,
                    last_modified: validators.last_modified,
                    checked: now,
                    sha256: sha,
                    signer,
                    max_age: fresh_for,
                });
                self.state_dirty = true;
                self.adopt(cat, CatalogStatus::Fetched);
                Ok(())
            }
            Err(e) => Err(CatalogError::Other(e.into())),
        }
    }

    /// A fetched catalog through the rules: it parses, moves forward ([`Reg::admit`]),
    /// carries a good signature where signatures are checked, and is recorded as the
    /// last accepted one.
    fn check_catalog(
        &mut self,
        http: &Http,
        url: &str,
        bytes: &[u8],
        sha: &str,
        now: u64,
    ) -> Result<(Catalog, Option<Signature>), CatalogError> {
        let failed = |reason: Refusal| CatalogError::Failed {
            url: url.to_owned(),
            reason,
        };
        let cat = parse_catalog(bytes).map_err(failed)?;
        self.admit(&cat, sha, now)
            .map_err(|reason| CatalogError::Refused {
                url: url.to_owned(),
                reason,
            })?;
        let signed = if self.checks_signatures() {
            Some(
                self.signature(http, INDEX_PATH, bytes, &cat.comment())
                    .map_err(failed)?,
            )
        } else {
            None
        };
        self.accept(&cat, sha, now).map_err(CatalogError::Other)?;
        Ok((cat, signed))
    }

    /// Caches an accepted catalog with its signature (a stale one removed); a failure is
    /// reported, and the catalog is still used.
    fn store_catalog(&mut self, bytes: &[u8], sig_text: Option<&str>) {
        let sig = self.dir.join(format!("index.json{SIG_SUFFIX}"));
        let written = super::write_replace(&self.dir.join("index.json"), bytes)
            .and_then(|_| write_or_remove(&sig, sig_text));
        if let Err(e) = written {
            self.report.error = Some(format!(
                "failed to cache the catalog in {}: {e}",
                self.dir.display()
            ));
        }
    }

    /// The server's catalog could not be used: the cached one is (reported), or the
    /// registry failed this run. Either way its entries are kept: this run could not see
    /// the registry.
    fn catalog_failed(
        &mut self,
        e: CatalogError,
        cached: Option<CachedCatalog>,
        cached_refusal: Option<String>,
    ) {
        let m = e.to_string();
        if let CatalogError::Refused { .. } = e {
            self.report.catalog_refused = Some(m.clone());
        }
        let refused = self.report.catalog_refused.is_some();
        let told = match cached {
            Some((_, s, cat)) => {
                self.adopt(cat, CatalogStatus::Cached);
                let checked = UNIX_EPOCH + Duration::from_secs(s.checked);
                format!(
                    "{m}; using the cached catalog checked at {}",
                    crate::registry::rfc3339(checked)
                )
            }
            None => {
                self.report.catalog = CatalogStatus::Failed;
                match cached_refusal {
                    Some(c) => format!("{m}; {c}"),
                    None => m.clone(),
                }
            }
        };
        if refused {
            self.report.catalog_refused = Some(told);
        } else {
            self.report.error = Some(told);
        }
        self.failed = Some(self.report.catalog_refused.clone().unwrap_or(m));
    }
}

/// Writes `text` at `path`, or removes the file when there is none: a signature of an
/// older copy must not stay beside a new one.
fn write_or_remove(path: &Path, text: Option<&str>) -> std::io::Result<()> {
    match text {
        Some(t) => super::write_replace(path, t.as_bytes()),
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        },
    }
}

/// What one shim task produced.
struct ShimOutcome {
    reg: usize,
    hex: String,
    ready: Option<Ready>,
    stamp: Option<Stamp>,
    write: Option<(Vec<u8>, Option<String>)>,
    refused: Option<String>,
    network: Option<String>,
    requests: u64,
    not_modified: u64,
    bytes: u64,
}

impl ShimOutcome {
    /// Nothing done yet for `hex` from registry `reg`.
    fn new(reg: usize, hex: &str) -> ShimOutcome {
        ShimOutcome {
            reg,
            hex: hex.to_owned(),
            ready: None,
            stamp: None,
            write: None,
            refused: None,
            network: None,
            requests: 0,
            not_modified: 0,
            bytes: 0,
        }
    }
}

impl Remote {
    /// No registries.
    pub(crate) fn none() -> Remote {
        Remote {
            regs: Vec::new(),
            opts: RemoteOptions::default(),
            http: None,
            now: now_secs(),
            warnings: Vec::new(),
        }
    }

    /// Whether any registry is configured and enabled.
    pub(crate) fn is_empty(&self) -> bool {
        self.regs.is_empty()
    }

    /// Reads `registries.json` and brings every enabled registry's catalog up to date
    /// (or takes it from the cache). An `Err` is a configuration error; a registry that
    /// cannot be reached is reported, not an error. `state` holds each registry's last
    /// accepted generation. `env` is the run's environment (`ATIP_REGISTRIES`, the
    /// registries' token variables).
    pub fn open(
        config_dir: &Path,
        cache: &Path,
        state: &Path,
        opts: &RemoteOptions,
        env: &Env,
    ) -> Result<Remote, OpenError> {
        let file = RegistriesFile::load(&super::config::path(config_dir, env))?;
        let mut me = Remote::none();
        me.opts = opts.clone();
        for cfg in file.active() {
            me.regs.push(Reg::new(cfg, cache, state, env)?);
        }
        if me.regs.is_empty() {
            return Ok(me);
        }
        if opts.offline {
            me.warnings.push(
                "offline (ATIP_OFFLINE or --offline): remote registries are read from the cache only"
                    .into(),
            );
        } else {
            me.http = Some(Http::new(opts.timeout, opts.deadline)?);
        }
        for i in 0..me.regs.len() {
            me.catalog(i);
        }
        Ok(me)
    }

    /// Brings one registry's catalog up to date: the server's, when it verifies and
    /// moves forward ([`Reg::admit`]), else the cached accepted one.
    fn catalog(&mut self, i: usize) {
        let now = self.now;
        let refresh = self.opts.refresh;
        let http = self.http.as_ref();
        let reg = &mut self.regs[i];
        reg.report.offline = http.is_none();
        let (mut cached, cached_refusal) = reg.cached_catalog(now);
        match http {
            None => reg.offline_catalog(cached, cached_refusal),
            Some(_) if !refresh && cached.as_ref().is_some_and(|(_, s, _)| s.fresh(now)) => {
                if let Some((_, _, cat)) = cached {
                    reg.adopt(cat, CatalogStatus::Fresh);
                }
            }
            Some(http) => {
                let before = http.requests.load(Ordering::Relaxed);
                let outcome = reg.fetch_catalog(http, &mut cached, now);
                reg.report.requests += http.requests.load(Ordering::Relaxed) - before;
                if let Err(e) = outcome {
                    reg.catalog_failed(e, cached, cached_refusal);
                }
            }
        }
        reg.report.listed = reg.names.len();
    }

    /// Whether some registry's catalog lists this tool name.
    pub(crate) fn lists_name(&self, name: &str) -> bool {
        self.regs.iter().any(|r| r.names.contains(name))
    }

    /// Whether some registry's catalog lists this binary hash (hex).
    pub(crate) fn lists_hash(&self, hex: &str) -> bool {
        self.regs.iter().any(|r| r.hashes.contains(hex))
    }

    /// Fetches (or takes from the cache) the shims of these binary hashes (hex), each
    /// from the first registry, in priority order, that lists it and provides a shim
    /// that verifies.
    pub(crate) fn fetch_shims(&mut self, wanted: &BTreeSet<String>) {
        // One task per hash: the registries listing it, in priority order.
        let tasks: Vec<(String, Vec<usize>)> = wanted
            .iter()
            .filter_map(|hex| {
                let regs: Vec<usize> = (0..self.regs.len())
                    .filter(|&i| self.regs[i].hashes.contains(hex))
                    .collect();
                (!regs.is_empty()).then(|| (hex.clone(), regs))
            })
            .collect();
        for (_, regs) in &tasks {
            self.regs[regs[0]].report.wanted += 1;
        }
        let mut results = self.run_shim_tasks(&tasks);
        results.sort_by(|a, b| (a.reg, &a.hex).cmp(&(b.reg, &b.hex)));
        for o in results {
            self.regs[o.reg].take_shim(o);
        }
        self.save_states();
    }

    /// Runs the shim tasks on `--jobs` threads: each tries its registries in order
    /// until one gives a shim that verifies. Returns every attempt's outcome.
    fn run_shim_tasks(&self, tasks: &[(String, Vec<usize>)]) -> Vec<ShimOutcome> {
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<ShimOutcome>> = Mutex::new(Vec::new());
        let workers = self.opts.jobs.clamp(1, 64).min(tasks.len().max(1));
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    while let Some((hex, regs)) = tasks.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut outs = Vec::new();
                        for &r in regs {
                            let o = self.shim(r, hex);
                            let done = o.ready.is_some();
                            outs.push(o);
                            if done {
                                break;
                            }
                        }
                        results
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend(outs);
                    }
                });
            }
        });
        results.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Writes every changed `state.json`.
    fn save_states(&mut self) {
        for reg in self.regs.iter_mut().filter(|r| r.state_dirty) {
            let bytes = serde_json::to_vec_pretty(&reg.state).unwrap_or_default();
            if let Err(e) = super::write_replace(&reg.dir.join("state.json"), &bytes) {
                reg.report.error.get_or_insert(format!(
                    "failed to write {}: {e}",
                    reg.dir.join("state.json").display()
                ));
            }
            reg.state_dirty = false;
        }
    }

    /// Whether a shim (sha256 hex `doc`) for `hex` is the one the registry's accepted
    /// catalog names: a shim of another generation is refused like a forged one.
    fn check_digest(reg: &Reg, doc: &str, hex: &str) -> Result<(), Refusal> {
        let generation = reg.report.generation.unwrap_or(0);
        match reg.digests.get(hex) {
            None => Err(Refusal::NoDigest { generation }),
            Some(want) if want != doc => Err(Refusal::WrongDigest {
                generation,
                doc: doc.to_owned(),
                want: want.clone(),
            }),
            Some(_) => Ok(()),
        }
    }

    /// Verifies a shim's bytes for `hex`: valid shim, `binary.hash` = the name.
    fn check_shim(bytes: &[u8], hex: &str) -> Result<Ready, Refusal> {
        let doc = sha_hex(bytes);
        let name = format!("{hex}.json");
        let checked = check_bytes(bytes, Some(Kind::Shim), Some(&name));
        let Some(v) = checked.value.as_ref() else {
            return Err(Refusal::ShimNotJson);
        };
        let declared = v.pointer("/binary/hash").and_then(Value::as_str);
        if declared != Some(format!("sha256:{hex}").as_str()) {
            return Err(Refusal::WrongHash {
                declared: declared.unwrap_or("missing").to_owned(),
                name,
            });
        }
        if !checked.is_valid() {
            let first = checked
                .diagnostics
                .iter()
                .find(|d| d.severity == crate::validate::Severity::Error)
                .map(|d| format!("{} at {}", d.message, d.pointer))
                .unwrap_or_default();
            return Err(Refusal::InvalidShim(first));
        }
        Ok(Ready {
            path: PathBuf::new(),
            doc,
            signer: None,
            trust: v
                .pointer("/trust/source")
                .and_then(Value::as_str)
                .map(str::to_owned),
            tool: v
                .pointer("/binary/name")
                .or_else(|| v.get("name"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// The cached, verified copy of a shim, checked again against today's keys.
    fn cached_shim(&self, r: usize, hex: &str) -> Option<(Ready, Stamp)> {
        let reg = &self.regs[r];
        let stamp = reg.state.shims.get(hex)?;
        let path = reg.dir.join("sha256").join(format!("{hex}.json"));
        let bytes = read_cached(&path, stamp)?;
        let mut ready = Self::check_shim(&bytes, hex).ok()?;
        Self::check_digest(reg, &ready.doc, hex).ok()?;
        let sig = std::fs::read_to_string(
            reg.dir
                .join("sha256")
                .join(format!("{hex}.json{SIG_SUFFIX}")),
        )
        .ok();
        let comment = super::sign::file_comment(&format!("{SHIMS_PATH}/{hex}.json"));
        ready.signer = match reg.judge(sig.as_deref(), &bytes, &comment).ok()? {
            Signed::By(id) => Some(id),
            Signed::Unsigned => None,
        };
        ready.path = path;
        Some((ready, stamp.clone()))
    }

    /// One shim from one registry: cache, conditional request, verification.
    fn shim(&self, r: usize, hex: &str) -> ShimOutcome {
        let reg = &self.regs[r];
        let mut out = ShimOutcome::new(r, hex);
        let cached = self.cached_shim(r, hex);
        let Some(http) = self.http.as_ref() else {
            out.ready = cached.map(|(ready, _)| ready);
            return out;
        };
        if let Some((ready, stamp)) = &cached
            && !self.opts.refresh
            && stamp.fresh(self.now)
        {
            out.ready = Some(ready.clone());
            return out;
        }
        let rel = format!("{SHIMS_PATH}/{hex}.json");
        let before = http.requests.load(Ordering::Relaxed);
        let got = http.get(
            &reg.cfg.url_of(&rel),
            cached.as_ref().map(|(_, s)| s.validators()).as_ref(),
            reg.token.as_deref(),
            MAX_SHIM_BYTES,
        );
        match got {
            Ok(Response::NotModified { fresh_for }) => {
                out.not_modified += 1;
                if let Some((ready, mut stamp)) = cached {
                    stamp.checked = self.now;
                    stamp.max_age = fresh_for;
                    out.stamp = Some(stamp);
                    out.ready = Some(ready);
                }
            }
            Ok(Response::Body {
                bytes,
                validators,
                fresh_for,
            }) => {
                out.bytes += bytes.len() as u64;
                match Self::verify_shim(reg, http, &rel, hex, &bytes) {
                    Ok((ready, text)) => {
                        out.stamp = Some(Stamp {
                            etag: validators.etag,
                            last_modified: validators.last_modified,
                            checked: self.now,
                            sha256: ready.doc.clone(),
                            signer: ready.signer.clone(),
                            max_age: fresh_for,
                        });
                        out.write = Some((bytes, text));
                        out.ready = Some(ready);
                    }
                    Err(e) => {
                        out.refused = Some(e.to_string());
                        // The previously verified copy stays in use.
                        out.ready = cached.map(|(ready, _)| ready);
                    }
                }
            }
            Err(e) => {
                // Missing or oversized: the registry's fault, this shim only. Anything
                // else (5xx, auth, network, timeout) says the registry is not usable now.
                if matches!(e, FetchError::NotFound { .. } | FetchError::TooLarge { .. }) {
                    out.refused = Some(e.to_string());
                } else {
                    out.network = Some(e.to_string());
                }
                out.ready = cached.map(|(ready, _)| ready);
            }
        }
        out.requests = http.requests.load(Ordering::Relaxed) - before;
        out
    }

    /// Verifies a fetched shim (`rel` in the registry) for `hex`: a valid shim for that
    /// hash, with a good signature where signatures are checked, and the one the
    /// catalog publishes. Returns it with its signature's text.
    fn verify_shim(
        reg: &Reg,
        http: &Http,
        rel: &str,
        hex: &str,
        bytes: &[u8],
    ) -> Result<(Ready, Option<String>), Refusal> {
        let mut ready = Self::check_shim(bytes, hex)?;
        let (signed, text) = if reg.checks_signatures() {
            let comment = super::sign::file_comment(rel);
            reg.signature(http, rel, bytes, &comment)?
        } else {
            (Signed::Unsigned, None)
        };
        Self::check_digest(reg, &ready.doc, hex)?;
        ready.signer = match signed {
            Signed::By(id) => Some(id),
            Signed::Unsigned => None,
        };
        ready.path = reg.dir.join("sha256").join(format!("{hex}.json"));
        Ok((ready, text))
    }

    /// The verified shim for a binary hash (hex): from the first registry in priority
    /// order that has one. Returns the registry's name with it.
    pub(crate) fn ready(&self, hex: &str) -> Option<(&str, &Ready)> {
        self.regs
            .iter()
            .find_map(|r| r.ready.get(hex).map(|s| (r.cfg.name.as_str(), s)))
    }

    /// Registries that failed this run (name, message): their entries are kept.
    pub(crate) fn failed(&self) -> Vec<(String, String)> {
        self.regs
            .iter()
            .filter_map(|r| r.failed.as_ref().map(|m| (r.cfg.name.clone(), m.clone())))
            .collect()
    }

    /// The per-registry report.
    pub(crate) fn reports(&self) -> Vec<RegistrySync> {
        self.regs.iter().map(|r| r.report.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parsing_keeps_only_sha256_hashes() {
        let h = "a".repeat(64);
        let d = "b".repeat(64);
        let cat = parse_catalog(
            format!(r#"{{"version": "1", "generation": 3, "tools": {{"gh": {{"2.0": {{"linux-amd64": "sha256:{h}", "x": "md5:00"}}}}}},
              "digests": {{"sha256:{h}": "sha256:{d}", "md5:00": "sha256:{d}"}}}}"#)
                .as_bytes(),
        )
        .unwrap();
        assert!(cat.names.contains("gh"));
        assert_eq!(
            cat.hashes.into_iter().collect::<Vec<_>>(),
            std::slice::from_ref(&h)
        );
        assert_eq!(cat.digests.into_iter().collect::<Vec<_>>(), [(h, d)]);
        assert_eq!(cat.generation, Some(3));
        assert!(parse_catalog(b"[]").is_err());
        assert!(parse_catalog(b"{").is_err());
    }
}
