//! Where atip reads and writes: the ATIP XDG layout on every Unix, macOS included.
//!
//! `--data-dir` / `ATIP_DATA_DIR`, `--config-dir` / `ATIP_CONFIG_DIR` and `--state-dir` /
//! `ATIP_STATE_DIR` replace the data, config and state directories outright (tests always
//! use them), and `ATIP_CACHE_DIR` the cache directory; otherwise
//! `$XDG_DATA_HOME/agent-tools`, `$XDG_CONFIG_HOME/agent-tools`, `$XDG_STATE_HOME/agent-tools`,
//! `$XDG_CACHE_HOME/agent-tools`
//! with the XDG defaults under `$HOME`. Relative XDG values are ignored, as the XDG spec says.
//! The system data dirs (`$XDG_DATA_DIRS`, default `/usr/local/share:/usr/share`) hold
//! shims and patterns shipped by admins. The variables come from the run's [`Env`]
//! snapshot, never from the process environment directly.

use crate::env::Env;
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

/// The home directory: `$HOME` when absolute, else the user database's, else `/`.
pub fn home(env: &Env) -> PathBuf {
    env.absolute_path("HOME")
        .or_else(|| directories::BaseDirs::new().map(|b| b.home_dir().to_path_buf()))
        .unwrap_or_else(|| PathBuf::from("/"))
}

impl Dirs {
    /// Resolves the layout from explicit overrides (flag or env, already merged by clap)
    /// and the XDG variables of `env`.
    pub fn resolve(
        data: Option<&Path>,
        config: Option<&Path>,
        state: Option<&Path>,
        env: &Env,
    ) -> Dirs {
        let home = || home(env);
        let data = data.map(Path::to_path_buf).unwrap_or_else(|| {
            env.absolute_path("XDG_DATA_HOME")
                .unwrap_or_else(|| home().join(".local/share"))
                .join(APP_DIR)
        });
        let config = config.map(Path::to_path_buf).unwrap_or_else(|| {
            env.absolute_path("XDG_CONFIG_HOME")
                .unwrap_or_else(|| home().join(".config"))
                .join(APP_DIR)
        });
        let state = state.map(Path::to_path_buf).unwrap_or_else(|| {
            env.absolute_path("XDG_STATE_HOME")
                .unwrap_or_else(|| home().join(".local/state"))
                .join(APP_DIR)
        });
        let cache = env.absolute_path("ATIP_CACHE_DIR").unwrap_or_else(|| {
            env.absolute_path("XDG_CACHE_HOME")
                .unwrap_or_else(|| home().join(".cache"))
                .join(APP_DIR)
        });
        let system = env
            .var("XDG_DATA_DIRS")
            .filter(|s| !s.is_empty())
            .unwrap_or("/usr/local/share:/usr/share");
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

    /// The layout under one directory (`data/`, `config/`, `state/`, `cache/`, no
    /// system dirs): for tests, here and in the layers above.
    pub fn under(root: &Path) -> Dirs {
        Dirs {
            data: root.join("data"),
            config: root.join("config"),
            state: root.join("state"),
            cache: root.join("cache"),
            system_data: Vec::new(),
        }
    }

    /// `registry.json` inside the data dir.
    pub fn registry_file(&self) -> PathBuf {
        self.data.join("registry.json")
    }
}
