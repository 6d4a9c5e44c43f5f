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
//! Writes only under `<cache dir>/remote/<registry name>/`.

use super::build::MAX_SHIM_BYTES;
use super::config::{RegistriesFile, RemoteRegistry};
use super::fetch::{FetchError, Http, Response, Validators};
use super::sign::{TrustedKey, Verdict, verify};
use super::{INDEX_PATH, SHIMS_PATH, SIG_SUFFIX, is_hex64};
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
/// Subdirectory of the cache dir holding one directory per registry.
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
            offline: env_flag("ATIP_OFFLINE"),
            timeout: Duration::from_secs(10),
            deadline: Duration::from_secs(120),
            jobs: 8,
        }
    }
}

/// Whether a boolean environment variable is set to a true value (`1`, `true`, `yes`, `on`).
pub fn env_flag(name: &str) -> bool {
    std::env::var(name)
        .map(|v| {
            matches!(
                v.trim().to_ascii_lowercase().as_str(),
                "1" | "true" | "yes" | "on"
            )
        })
        .unwrap_or(false)
}

/// The cache dir's directory of one registry.
pub(crate) fn registry_cache(cache: &Path, name: &str) -> PathBuf {
    cache.join(CACHE_SUBDIR).join(name)
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
    /// Tool names its catalog lists.
    names: HashSet<String>,
    /// Binary hashes (hex) its catalog lists.
    hashes: HashSet<String>,
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

/// The names and hashes a catalog lists.
fn parse_catalog(bytes: &[u8]) -> Result<(HashSet<String>, HashSet<String>), String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the catalog is not JSON: {e}"))?;
    let tools = v
        .get("tools")
        .and_then(Value::as_object)
        .ok_or("the catalog has no \"tools\" object")?;
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
    Ok((names, hashes))
}

/// The outcome of checking a signature file for some bytes.
enum Signed {
    By(String),
    Unsigned,
}

impl Reg {
    fn new(cfg: &RemoteRegistry, cache: &Path) -> Result<Reg, String> {
        let keys = cfg.keys()?;
        let token = match &cfg.auth {
            Some(a) => Some(std::env::var(&a.token_env_var).map_err(|_| {
                format!(
                    "registry {:?}: the token variable {} is not set",
                    cfg.name, a.token_env_var
                )
            })?),
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
        Ok(Reg {
            keys,
            token,
            dir,
            state,
            names: HashSet::new(),
            hashes: HashSet::new(),
            ready: HashMap::new(),
            report: RegistrySync {
                name: cfg.name.clone(),
                url: cfg.url.clone(),
                offline: false,
                catalog: CatalogStatus::Failed,
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

    /// Checks the signature at `rel + .minisig` over `bytes`, fetching it.
    fn signature(
        &self,
        http: &Http,
        rel: &str,
        bytes: &[u8],
    ) -> Result<(Signed, Option<String>), String> {
        let url = self.cfg.url_of(&format!("{rel}{SIG_SUFFIX}"));
        let text = match http.get(&url, None, self.token.as_deref(), MAX_SIG_BYTES) {
            Ok(Response::Body { bytes, .. }) => String::from_utf8_lossy(&bytes).into_owned(),
            Ok(Response::NotModified { .. }) => return Err(format!("{url}: unexpected 304")),
            Err(FetchError::NotFound { .. }) => {
                return self.judge(None, bytes).map(|s| (s, None));
            }
            Err(e) => return Err(e.to_string()),
        };
        let s = self.judge(Some(&text), bytes)?;
        Ok((s, Some(text)))
    }

    /// Applies the signature rules to a signature text (or its absence).
    fn judge(&self, sig: Option<&str>, bytes: &[u8]) -> Result<Signed, String> {
        match sig.map(|t| verify(&self.keys, bytes, t)) {
            Some(Verdict::Signed(id)) => Ok(Signed::By(id)),
            Some(Verdict::Bad(m)) => Err(format!("bad signature: {m}")),
            Some(Verdict::UnknownSigner(id)) if self.cfg.require_signatures => Err(format!(
                "signed by key {id}, which is not in this registry's publicKeys"
            )),
            Some(Verdict::UnknownSigner(_)) => Ok(Signed::Unsigned),
            None if self.cfg.require_signatures => {
                Err("unsigned, and the registry requires signatures".into())
            }
            None => Ok(Signed::Unsigned),
        }
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
    /// cannot be reached is reported, not an error.
    pub fn open(config_dir: &Path, cache: &Path, opts: &RemoteOptions) -> Result<Remote, String> {
        let file = RegistriesFile::load(&super::config::path(config_dir))?;
        let mut me = Remote::none();
        me.opts = opts.clone();
        for cfg in file.active() {
            me.regs.push(Reg::new(cfg, cache)?);
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

    /// Brings one registry's catalog up to date.
    fn catalog(&mut self, i: usize) {
        let now = self.now;
        let refresh = self.opts.refresh;
        let http = self.http.as_ref();
        let reg = &mut self.regs[i];
        reg.report.offline = http.is_none();
        let path = reg.dir.join("index.json");
        // A cached catalog is used only while it passes today's signature rules.
        let cached_sig =
            std::fs::read_to_string(reg.dir.join(format!("index.json{SIG_SUFFIX}"))).ok();
        let cached = reg
            .state
            .catalog
            .as_ref()
            .and_then(|s| read_cached(&path, s).map(|b| (b, s.clone())))
            .filter(|(b, _)| {
                !reg.checks_signatures() || reg.judge(cached_sig.as_deref(), b).is_ok()
            });
        let use_cached =
            |reg: &mut Reg, bytes: &[u8], status: CatalogStatus| match parse_catalog(bytes) {
                Ok((n, h)) => {
                    reg.names = n;
                    reg.hashes = h;
                    reg.report.catalog = status;
                }
                Err(m) => {
                    reg.failed = Some(format!("cached catalog: {m}"));
                    reg.report.catalog = CatalogStatus::Failed;
                }
            };
        let Some(http) = http else {
            match &cached {
                Some((b, _)) => use_cached(reg, b, CatalogStatus::Cached),
                None => {
                    let m = "offline, and no catalog of it in the cache".to_string();
                    reg.report.error = Some(m.clone());
                    reg.failed = Some(m);
                }
            }
            reg.report.listed = reg.names.len();
            return;
        };
        if let Some((b, s)) = &cached
            && !refresh
            && s.fresh(now)
        {
            use_cached(reg, b, CatalogStatus::Fresh);
            reg.report.listed = reg.names.len();
            return;
        }
        let url = reg.cfg.url_of(INDEX_PATH);
        let before = http.requests.load(Ordering::Relaxed);
        let got = http.get(
            &url,
            cached.as_ref().map(|(_, s)| s.validators()).as_ref(),
            reg.token.as_deref(),
            MAX_CATALOG_BYTES,
        );
        let outcome: Result<(), String> = match got {
            Ok(Response::NotModified { fresh_for }) => {
                reg.report.not_modified += 1;
                match &cached {
                    Some((b, s)) => {
                        let mut s = s.clone();
                        s.checked = now;
                        s.max_age = fresh_for;
                        reg.state.catalog = Some(s);
                        reg.state_dirty = true;
                        use_cached(reg, b, CatalogStatus::NotModified);
                        Ok(())
                    }
                    None => Err(format!("{url}: 304 to an unconditional request")),
                }
            }
            Ok(Response::Body {
                bytes,
                validators,
                fresh_for,
            }) => {
                reg.report.bytes += bytes.len() as u64;
                let checked = parse_catalog(&bytes)
                    .map_err(|m| format!("{url}: {m}"))
                    .and_then(|parsed| {
                        let signed = if reg.checks_signatures() {
                            Some(
                                reg.signature(http, INDEX_PATH, &bytes)
                                    .map_err(|m| format!("{url}: {m}"))?,
                            )
                        } else {
                            None
                        };
                        Ok((parsed, signed))
                    });
                match checked {
                    Ok(((n, h), signed)) => {
                        let sig_text = signed.as_ref().and_then(|(_, t)| t.clone());
                        let signer = match signed {
                            Some((Signed::By(id), _)) => Some(id),
                            _ => None,
                        };
                        let written = super::write_replace(&path, &bytes).and_then(|_| {
                            let sig = reg.dir.join(format!("index.json{SIG_SUFFIX}"));
                            match &sig_text {
                                Some(t) => super::write_replace(&sig, t.as_bytes()),
                                None => match std::fs::remove_file(&sig) {
                                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                                    _ => Ok(()),
                                },
                            }
                        });
                        if let Err(e) = written {
                            reg.report.error = Some(format!(
                                "failed to cache the catalog in {}: {e}",
                                reg.dir.display()
                            ));
                        }
                        reg.state.catalog = Some(Stamp {
                            etag: validators.etag,
                            last_modified: validators.last_modified,
                            checked: now,
                            sha256: sha_hex(&bytes),
                            signer,
                            max_age: fresh_for,
                        });
                        reg.state_dirty = true;
                        reg.names = n;
                        reg.hashes = h;
                        reg.report.catalog = CatalogStatus::Fetched;
                        Ok(())
                    }
                    Err(m) => Err(m),
                }
            }
            Err(e) => Err(e.to_string()),
        };
        reg.report.requests += http.requests.load(Ordering::Relaxed) - before;
        if let Err(m) = outcome {
            match &cached {
                Some((b, s)) => {
                    use_cached(reg, b, CatalogStatus::Cached);
                    reg.report.error = Some(format!(
                        "{m}; using the cached catalog checked at {}",
                        crate::registry::rfc3339(UNIX_EPOCH + Duration::from_secs(s.checked))
                    ));
                }
                None => {
                    reg.report.catalog = CatalogStatus::Failed;
                    reg.report.error = Some(m.clone());
                }
            }
            // Either way its entries are kept: this run could not see the registry.
            reg.failed = Some(m);
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
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<ShimOutcome>> = Mutex::new(Vec::new());
        let workers = self.opts.jobs.clamp(1, 64).min(tasks.len().max(1));
        let me = &*self;
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((hex, regs)) = tasks.get(i) else {
                            break;
                        };
                        let mut outs = Vec::new();
                        for &r in regs {
                            let o = me.shim(r, hex);
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
        let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        results.sort_by(|a, b| (a.reg, &a.hex).cmp(&(b.reg, &b.hex)));
        for o in results {
            let reg = &mut self.regs[o.reg];
            reg.report.requests += o.requests;
            reg.report.not_modified += o.not_modified;
            reg.report.bytes += o.bytes;
            if let Some((bytes, sig)) = &o.write {
                let path = reg.dir.join("sha256").join(format!("{}.json", o.hex));
                let sig_path = reg
                    .dir
                    .join("sha256")
                    .join(format!("{}.json{SIG_SUFFIX}", o.hex));
                let res = super::write_replace(&path, bytes).and_then(|_| match sig {
                    Some(t) => super::write_replace(&sig_path, t.as_bytes()),
                    None => match std::fs::remove_file(&sig_path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                        _ => Ok(()),
                    },
                });
                if let Err(e) = res {
                    reg.report.error.get_or_insert(format!(
                        "failed to cache shims in {}: {e}",
                        reg.dir.display()
                    ));
                }
            }
            if let Some(st) = o.stamp {
                reg.state.shims.insert(o.hex.clone(), st);
                reg.state_dirty = true;
            }
            if let Some(m) = o.refused {
                reg.report.refused.push(RefusedShim {
                    hash: format!("sha256:{}", o.hex),
                    reason: m,
                });
            }
            if let Some(m) = o.network {
                reg.report.error.get_or_insert(m.clone());
                reg.failed.get_or_insert(m);
            }
            if let Some(r) = o.ready {
                reg.report.used += 1;
                if r.signer.is_some() {
                    reg.report.verified += 1;
                }
                reg.ready.insert(o.hex, r);
            }
        }
        self.save_states();
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

    /// Verifies a shim's bytes for `hex`: valid shim, `binary.hash` = the name.
    fn check_shim(bytes: &[u8], hex: &str) -> Result<Ready, String> {
        let name = format!("{hex}.json");
        let checked = check_bytes(bytes, Some(Kind::Shim), Some(&name));
        let Some(v) = checked.value.as_ref() else {
            return Err("not JSON".into());
        };
        let declared = v.pointer("/binary/hash").and_then(Value::as_str);
        if declared != Some(format!("sha256:{hex}").as_str()) {
            return Err(format!(
                "wrong hash: binary.hash is {} but it was published as {name}",
                declared.unwrap_or("missing")
            ));
        }
        if !checked.is_valid() {
            let first = checked
                .diagnostics
                .iter()
                .find(|d| d.severity == crate::validate::Severity::Error)
                .map(|d| format!("{} at {}", d.message, d.pointer))
                .unwrap_or_default();
            return Err(format!("not a valid shim: {first}"));
        }
        Ok(Ready {
            path: PathBuf::new(),
            doc: sha_hex(bytes),
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
        let sig = std::fs::read_to_string(
            reg.dir
                .join("sha256")
                .join(format!("{hex}.json{SIG_SUFFIX}")),
        )
        .ok();
        ready.signer = match reg.judge(sig.as_deref(), &bytes).ok()? {
            Signed::By(id) => Some(id),
            Signed::Unsigned => None,
        };
        ready.path = path;
        Some((ready, stamp.clone()))
    }

    /// One shim from one registry: cache, conditional request, verification.
    fn shim(&self, r: usize, hex: &str) -> ShimOutcome {
        let reg = &self.regs[r];
        let mut out = ShimOutcome {
            reg: r,
            hex: hex.to_owned(),
            ready: None,
            stamp: None,
            write: None,
            refused: None,
            network: None,
            requests: 0,
            not_modified: 0,
            bytes: 0,
        };
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
        let url = reg.cfg.url_of(&rel);
        let before = http.requests.load(Ordering::Relaxed);
        let got = http.get(
            &url,
            cached.as_ref().map(|(_, s)| s.validators()).as_ref(),
            reg.token.as_deref(),
            MAX_SHIM_BYTES,
        );
        match got {
            Ok(Response::NotModified { fresh_for }) => {
                out.not_modified += 1;
                if let Some((ready, mut stamp)) = cached.clone() {
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
                let verdict = Self::check_shim(&bytes, hex).and_then(|ready| {
                    if reg.checks_signatures() {
                        let (signed, text) = reg.signature(http, &rel, &bytes)?;
                        Ok((ready, signed, text))
                    } else {
                        Ok((ready, Signed::Unsigned, None))
                    }
                });
                match verdict {
                    Ok((mut ready, signed, text)) => {
                        ready.signer = match signed {
                            Signed::By(id) => Some(id),
                            Signed::Unsigned => None,
                        };
                        ready.path = reg.dir.join("sha256").join(format!("{hex}.json"));
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
                    Err(m) => {
                        out.refused = Some(m);
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
        let (names, hashes) = parse_catalog(
            format!(r#"{{"version": "1", "tools": {{"gh": {{"2.0": {{"linux-amd64": "sha256:{h}", "x": "md5:00"}}}}}}}}"#)
                .as_bytes(),
        )
        .unwrap();
        assert!(names.contains("gh"));
        assert_eq!(hashes.into_iter().collect::<Vec<_>>(), [h]);
        assert!(parse_catalog(b"[]").is_err());
        assert!(parse_catalog(b"{").is_err());
    }
}
