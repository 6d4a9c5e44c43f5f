//! `.atip-lint.json`: which lint rules run, at which severity, with which thresholds.
//!
//! Owns reading and checking the config file and finding it (an explicit path, else the
//! nearest `.atip-lint.json` in the working directory or one of its ancestors). A config
//! that names an unknown rule or severity is refused with a message naming the key:
//! a typo must not silently leave a rule on.
//!
//! Must not run rules.

use super::rules::LINT_RULES;
use crate::validate::Severity;
use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The file name searched for.
pub const FILE_NAME: &str = ".atip-lint.json";

/// Largest config file read (a config is a few hundred bytes).
const MAX_CONFIG: u64 = 1 << 20;

/// What a rule is set to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Not run.
    Off,
    /// Reported with this severity.
    On(Severity),
}

/// A resolved lint configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Per-rule overrides; rules not named keep their catalogue severity.
    pub levels: HashMap<String, Level>,
    /// Descriptions shorter than this many characters are `description-quality` findings.
    pub min_description_length: usize,
    /// Commands with at least this many own options and arguments want `examples`.
    pub examples_threshold: usize,
    /// Where the config came from, if from a file.
    pub source: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            levels: HashMap::new(),
            min_description_length: 8,
            examples_threshold: 6,
            source: None,
        }
    }
}

/// Why a config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Unreadable file.
    #[error("failed to read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Malformed or unknown content.
    #[error("{path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

impl From<ConfigError> for crate::output::AtipError {
    /// `config_invalid` (exit 78), whether the file cannot be read or says something wrong.
    fn from(e: ConfigError) -> Self {
        use crate::output::{AtipError, ErrorCode};
        AtipError::new(ErrorCode::ConfigInvalid, e.to_string())
            .hint("see spec/lint.md for the .atip-lint.json format")
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    #[serde(default)]
    rules: HashMap<String, String>,
    #[serde(default)]
    min_description_length: Option<usize>,
    #[serde(default)]
    examples_threshold: Option<usize>,
    #[serde(rename = "$schema", default)]
    _schema: Option<String>,
}

impl Config {
    /// The level of `rule`: the override, else the catalogue severity.
    pub(crate) fn level(&self, rule: &str, default: Severity) -> Level {
        self.levels.get(rule).copied().unwrap_or(Level::On(default))
    }

    /// Parses config text; `path` is only used in messages.
    pub fn parse(text: &[u8], path: &Path) -> Result<Config, ConfigError> {
        let invalid = |message: String| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let file: File = serde_json::from_slice(text).map_err(|e| invalid(e.to_string()))?;
        let mut config = Config {
            source: Some(path.to_path_buf()),
            ..Config::default()
        };
        let mut names: Vec<&String> = file.rules.keys().collect();
        names.sort();
        for rule in names {
            if !LINT_RULES.iter().any(|r| r.id == rule) {
                return Err(invalid(format!(
                    "rules.{rule}: no lint rule has this id (see `atip lint --list-rules`)"
                )));
            }
            let level = match file.rules[rule].as_str() {
                "off" => Level::Off,
                "warning" | "warn" => Level::On(Severity::Warning),
                "error" => Level::On(Severity::Error),
                other => {
                    return Err(invalid(format!(
                        "rules.{rule}: severity \"{other}\" is not one of off, warning, error"
                    )));
                }
            };
            config.levels.insert(rule.clone(), level);
        }
        if let Some(n) = file.min_description_length {
            config.min_description_length = n;
        }
        if let Some(n) = file.examples_threshold {
            config.examples_threshold = n.max(1);
        }
        Ok(config)
    }

    /// Reads the config at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        use std::io::Read;
        let read = |source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .map_err(read)?
            .take(MAX_CONFIG + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        if bytes.len() as u64 > MAX_CONFIG {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                message: format!("larger than {MAX_CONFIG} bytes"),
            });
        }
        Config::parse(&bytes, path)
    }

    /// The nearest `.atip-lint.json` in `start` or an ancestor, loaded; the default
    /// config when there is none.
    pub fn discover(start: &Path) -> Result<Config, ConfigError> {
        for dir in start.ancestors() {
            let candidate = dir.join(FILE_NAME);
            if candidate.is_file() {
                return Config::load(&candidate);
            }
        }
        Ok(Config::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_and_thresholds() {
        let c = Config::parse(
            br#"{"rules": {"examples-missing": "off", "effects-unstated": "error"}, "minDescriptionLength": 3}"#,
            Path::new("c.json"),
        )
        .unwrap();
        assert_eq!(c.level("examples-missing", Severity::Warning), Level::Off);
        assert_eq!(
            c.level("effects-unstated", Severity::Warning),
            Level::On(Severity::Error)
        );
        assert_eq!(
            c.level("empty-effects", Severity::Warning),
            Level::On(Severity::Warning)
        );
        assert_eq!(c.min_description_length, 3);
    }

    #[test]
    fn unknown_rule_severity_or_key_is_refused() {
        for bad in [
            r#"{"rules": {"no-such-rule": "off"}}"#,
            r#"{"rules": {"empty-effects": "loud"}}"#,
            r#"{"rulez": {}}"#,
            r#"{"rules": "#,
        ] {
            assert!(
                Config::parse(bad.as_bytes(), Path::new("c.json")).is_err(),
                "{bad}"
            );
        }
    }
}
