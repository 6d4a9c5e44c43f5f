//! The per-server `tools/list` cache: `$XDG_CACHE_HOME/agent-tools/mcp/NAME-ID.json`
//! (`ATIP_CACHE_DIR` replaces `$XDG_CACHE_HOME/agent-tools`), one file per server, valid
//! for a TTL.
//!
//! `ID` hashes what the server is (transport, command, args, env, URL, headers; each
//! secret value stands as its label), so an edited config never reads another server's
//! list, and a rotated token still reads its server's. Files are written to a temporary
//! file in the same directory and renamed, so readers see a whole file or none; a file
//! that does not parse is ignored (and rewritten on the next fetch). Must not connect.

use super::config::ServerSpec;
use rmcp::model::Tool;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Format version of a cache file.
const VERSION: u32 = 1;

/// One server's cached list.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedTools {
    /// Format version.
    pub version: u32,
    /// Server name.
    pub server: String,
    /// When the list was fetched, milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// `serverInfo` and capabilities from initialization.
    #[serde(default)]
    pub server_info: Value,
    /// The tools, as the server listed them.
    pub tools: Vec<Tool>,
}

impl CachedTools {
    /// Age of the list.
    pub fn age(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.fetched_at_ms))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The cache directory.
#[derive(Debug, Clone)]
pub struct ToolCache {
    dir: PathBuf,
}

impl ToolCache {
    /// `mcp/` in the run's cache dir ([`Dirs::cache`](crate::dirs::Dirs::cache): the one
    /// resolver: `ATIP_CACHE_DIR`, else `$XDG_CACHE_HOME/agent-tools`, else
    /// `~/.cache/agent-tools`).
    pub fn of(dirs: &crate::dirs::Dirs) -> ToolCache {
        ToolCache {
            dir: dirs.cache.join("mcp"),
        }
    }

    /// A cache in `dir`.
    pub fn in_dir(dir: &Path) -> ToolCache {
        ToolCache {
            dir: dir.to_path_buf(),
        }
    }

    /// Directory of the cache files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self, spec: &ServerSpec) -> PathBuf {
        self.dir
            .join(format!("{}-{}.json", spec.name, spec.identity()))
    }

    /// The cached list of `spec`, whatever its age; `None` when missing or unreadable.
    pub fn read(&self, spec: &ServerSpec) -> Option<CachedTools> {
        let bytes = std::fs::read(self.file(spec)).ok()?;
        let c: CachedTools = serde_json::from_slice(&bytes).ok()?;
        (c.version == VERSION && c.server == spec.name).then_some(c)
    }

    /// The cached list when younger than `ttl`.
    pub(crate) fn fresh(&self, spec: &ServerSpec, ttl: Duration) -> Option<CachedTools> {
        self.read(spec).filter(|c| c.age() <= ttl)
    }

    /// Stores a freshly fetched list (atomically); returns what was stored.
    pub fn write(
        &self,
        spec: &ServerSpec,
        server_info: Value,
        tools: Vec<Tool>,
    ) -> std::io::Result<CachedTools> {
        let c = CachedTools {
            version: VERSION,
            server: spec.name.clone(),
            fetched_at_ms: now_ms(),
            server_info,
            tools,
        };
        std::fs::create_dir_all(&self.dir)?;
        let bytes = serde_json::to_vec(&c).map_err(std::io::Error::other)?;
        // Owner-only like the config it comes from; atomic so a reader never sees half.
        crate::atomic::write_atomic(&self.file(spec), &bytes, crate::atomic::Options::PRIVATE)
            .map_err(|e| e.source)?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Transport;

    fn spec(cmd: &str) -> ServerSpec {
        ServerSpec {
            name: "s".into(),
            transport: Transport::Stdio {
                command: cmd.into(),
                args: vec![],
                env: vec![],
                cwd: None,
            },
            timeout: None,
            origin: "test".into(),
            trust_hints: true,
            secrets: vec![],
            protocol: None,
        }
    }

    #[test]
    fn round_trip_ttl_and_identity() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ToolCache::in_dir(dir.path());
        let tool: Tool = serde_json::from_value(
            serde_json::json!({"name": "t", "inputSchema": {"type": "object"}}),
        )
        .unwrap();
        cache.write(&spec("a"), Value::Null, vec![tool]).unwrap();
        assert_eq!(cache.read(&spec("a")).unwrap().tools[0].name, "t");
        assert!(cache.fresh(&spec("a"), Duration::from_secs(60)).is_some());
        // A different command is a different server: no stale list.
        assert!(cache.read(&spec("b")).is_none());
        // Rotating a secret is the same server; its value is nowhere in the file name.
        let mut a = spec("a");
        a.transport = Transport::Stdio {
            command: "a".into(),
            args: vec![],
            env: vec![("API_TOKEN".into(), "tok-one".into())],
            cwd: None,
        };
        a.secrets = vec![("API_TOKEN".into(), "tok-one".into())];
        let mut b = a.clone();
        b.transport = Transport::Stdio {
            command: "a".into(),
            args: vec![],
            env: vec![("API_TOKEN".into(), "tok-two".into())],
            cwd: None,
        };
        b.secrets = vec![("API_TOKEN".into(), "tok-two".into())];
        assert_eq!(a.identity(), b.identity());
        assert!(!cache.file(&a).to_string_lossy().contains("tok-"));
        let mut other = a.clone();
        other.transport = Transport::Stdio {
            command: "other".into(),
            args: vec![],
            env: vec![("API_TOKEN".into(), "tok-one".into())],
            cwd: None,
        };
        assert_ne!(a.identity(), other.identity());
        std::fs::write(cache.file(&spec("a")), b"{not json").unwrap();
        assert!(cache.read(&spec("a")).is_none());
    }
}
