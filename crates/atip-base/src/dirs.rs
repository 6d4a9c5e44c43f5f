//! Where atip reads and writes: the ATIP XDG layout on every Unix, macOS included.
//!
//! `--data-dir` / `ATIP_DATA_DIR`, `--config-dir` / `ATIP_CONFIG_DIR` and `--state-dir` /
//! `ATIP_STATE_DIR` replace the data, config and state directories outright (tests always
//! use them), and `ATIP_CACHE_DIR` the cache directory; otherwise
//! `$XDG_DATA_HOME/agent-tools`, `$XDG_CONFIG_HOME/agent-tools`, `$XDG_STATE_HOME/agent-tools`,
//! `$XDG_CACHE_HOME/agent-tools`
//! with the XDG defaults under `$HOME`. Relative XDG values are ignored, as the XDG spec says.
//! The system data dirs (`$XDG_DATA_DIRS`, default `/usr/local/share:/usr/share`) hold
//! shims and patterns shipped by admins.

use std::path::{Path, PathBuf};

/// The directories atip uses, resolved once per run.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// User data dir: `registry.json`, `tools/`, `shims/`, `patterns/`.
    pub data: PathBuf,
    /// User config dir: `config.json`, `overrides/`, policy.
    pub config: PathBuf,
    /// User state dir: the audit log.
    pub state: PathBuf,
    /// Cache dir: what remote registries published (`remote/<name>/`); everything in it
    /// can be fetched again.
    pub cache: PathBuf,
    /// System data dirs, highest precedence first, each already ending in `agent-tools`.
    pub system_data: Vec<PathBuf>,
}

/// Subdirectory name the protocol reserves inside each XDG base dir.
pub const APP_DIR: &str = "agent-tools";

fn absolute_env(name: &str) -> Option<PathBuf> {
    let v = std::env::var_os(name)?;
    let p = PathBuf::from(v);
    p.is_absolute().then_some(p)
}

fn home() -> PathBuf {
    absolute_env("HOME")
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Dirs {
    /// Resolves the layout from explicit overrides (flag or env, already merged by clap)
    /// and the XDG environment.
    pub fn resolve(data: Option<&Path>, config: Option<&Path>, state: Option<&Path>) -> Dirs {
        let data = data.map(Path::to_path_buf).unwrap_or_else(|| {
            absolute_env("XDG_DATA_HOME")
                .unwrap_or_else(|| home().join(".local/share"))
                .join(APP_DIR)
        });
        let config = config.map(Path::to_path_buf).unwrap_or_else(|| {
            absolute_env("XDG_CONFIG_HOME")
                .unwrap_or_else(|| home().join(".config"))
                .join(APP_DIR)
        });
        let state = state.map(Path::to_path_buf).unwrap_or_else(|| {
            absolute_env("XDG_STATE_HOME")
                .unwrap_or_else(|| home().join(".local/state"))
                .join(APP_DIR)
        });
        let cache = absolute_env("ATIP_CACHE_DIR").unwrap_or_else(|| {
            absolute_env("XDG_CACHE_HOME")
                .unwrap_or_else(|| home().join(".cache"))
                .join(APP_DIR)
        });
        let system = std::env::var("XDG_DATA_DIRS")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "/usr/local/share:/usr/share".into());
        let system_data = system
            .split(':')
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|p| p.join(APP_DIR))
            .collect();
        Dirs {
            data,
            config,
            state,
            cache,
            system_data,
        }
    }

    /// The layout under one directory (`data/`, `config/`, `state/`): for tests, here
    /// and in the layers above.
    pub fn under(root: &Path) -> Dirs {
        Dirs::resolve(
            Some(&root.join("data")),
            Some(&root.join("config")),
            Some(&root.join("state")),
        )
    }

    /// `registry.json` inside the data dir.
    pub fn registry_file(&self) -> PathBuf {
        self.data.join("registry.json")
    }
}
