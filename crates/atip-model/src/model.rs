//! Typed ATIP metadata, protocol versions 0.1–0.6.
//!
//! Owns the serde model of a tool's `--agent` document (and of shims, which are the
//! same document plus `binary`), the walk over nested commands, the effect-inheritance
//! rule and partial discovery. Every struct keeps the keys it does not know in `extra`,
//! so reading then writing a document gives back the same JSON value: `x-` vendor
//! extensions and fields from future protocol versions survive a round trip.
//!
//! Must not do I/O: callers hand it bytes or values.

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Extension key marking a command (or a whole tool) that runs a program named in its
/// own arguments; see `spec/policy.md`, runners.
pub const RUNNER_KEY: &str = "x-atip-runner";

/// Keys this model does not know, kept verbatim (vendor `x-` extensions included).
pub type Extra = Map<String, Value>;

/// Named subcommands, in document order.
pub type Commands = IndexMap<String, Command>;

/// Lists parsed to exactly their length. A JSON array's length is not known before its
/// end, so its buffer grows by doubling from four: a command's two options held room
/// for four (~600 unused bytes a command, 1 MB for a document of 1,700 commands, which
/// a scan parses three times). Shrinking in place costs no copy.
mod tight {
    use serde::{Deserialize, Deserializer};

    /// An optional list (`null` is `None`, as without this).
    pub(super) fn list<'de, D, T>(d: D) -> Result<Option<Vec<T>>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        let mut list = Option::<Vec<T>>::deserialize(d)?;
        if let Some(l) = &mut list {
            l.shrink_to_fit();
        }
        Ok(list)
    }

    /// An option's flags.
    pub(super) fn flags<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        let mut flags = Vec::<String>::deserialize(d)?;
        flags.shrink_to_fit();
        Ok(flags)
    }
}

/// A protocol version `0.N`, the only form the protocol defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion {
    /// The minor number: 0.6 → 6.
    pub minor: u32,
}

impl ProtocolVersion {
    /// The oldest version atip reads.
    pub const OLDEST: ProtocolVersion = ProtocolVersion { minor: 1 };
    /// The newest version atip reads, and the one it writes.
    pub const LATEST: ProtocolVersion = ProtocolVersion { minor: 6 };

    /// Parses `"0.N"`; returns `None` for anything else.
    pub fn parse(text: &str) -> Option<Self> {
        let minor = text.strip_prefix("0.")?;
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) || minor.len() > 3 {
            return None;
        }
        minor.parse().ok().map(|minor| ProtocolVersion { minor })
    }

    /// Whether atip knows this version (0.1 to 0.6).
    pub fn is_supported(self) -> bool {
        (Self::OLDEST..=Self::LATEST).contains(&self)
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0.{}", self.minor)
    }
}

/// The `atip` field: a bare version string (0.1–0.3) or an object (0.4+).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AtipField {
    /// Legacy form: `"atip": "0.3"`.
    Legacy(String),
    /// Current form: `"atip": {"version": "0.6", "features": [...]}`.
    Current(AtipObject),
}

/// The object form of the `atip` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AtipObject {
    /// Protocol version, `0.N`.
    pub version: String,
    /// Feature ids the document relies on (`trust-v1`, `content-addressable`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
    /// Oldest agent-side protocol version that can read this document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_agent_version: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl AtipField {
    /// The declared version text, whichever form is used.
    pub fn version_text(&self) -> &str {
        match self {
            AtipField::Legacy(v) => v,
            AtipField::Current(o) => &o.version,
        }
    }

    /// The declared version, if it is of the form `0.N`.
    pub fn version(&self) -> Option<ProtocolVersion> {
        ProtocolVersion::parse(self.version_text())
    }

    /// Declared feature ids (none for the legacy form).
    pub fn features(&self) -> &[String] {
        match self {
            AtipField::Legacy(_) => &[],
            AtipField::Current(o) => o.features.as_deref().unwrap_or(&[]),
        }
    }
}

/// One tool's ATIP metadata: a native `--agent` answer or a shim file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    /// Protocol version (string or object form).
    pub atip: AtipField,
    /// Command name. A shim may leave it out and take `binary.name` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Tool version. A shim may leave it out and take `binary.version` instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// One-line description.
    pub description: String,
    /// Documentation URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub homepage: Option<String>,
    /// The exact binary a content-addressed shim describes (0.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<Binary>,
    /// True when this is a partial-discovery answer (0.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// The filter a partial answer was produced with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Filter>,
    /// Number of commands in the full document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_commands: Option<u64>,
    /// Number of commands in this (partial) document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_commands: Option<u64>,
    /// What a partial answer left out, and how safe to assume it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted: Option<Omitted>,
    /// Where the metadata comes from and how it is verified (0.4–0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<Trust>,
    /// Subcommands; the key `""` is the tool run with no subcommand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Commands>,
    /// Options every command accepts.
    #[serde(
        default,
        deserialize_with = "tight::list",
        skip_serializing_if = "Option::is_none"
    )]
    pub global_options: Option<Vec<Opt>>,
    /// Credentials the tool needs (agent-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<Authentication>,
    /// Tool-level effects, inherited by every command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<Effects>,
    /// Common multi-step usages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patterns: Option<Vec<Pattern>>,
    /// Unknown keys and `x-` extensions, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `binary`: the exact executable a content-addressed shim describes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Binary {
    /// `sha256:<64 lowercase hex>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// Executable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Executable version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Platform such as `linux-amd64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Binary {
    /// The hex digest of `hash` when it has the `sha256:` form.
    pub fn sha256_hex(&self) -> Option<&str> {
        self.hash.as_deref()?.strip_prefix("sha256:")
    }
}

/// `filter` of a partial answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Filter {
    /// Command paths that were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<String>>,
    /// Nesting depth that was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `omitted` of a partial answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Omitted {
    /// `filtered`, `depth-limited`, `size-limited` or `deprecated`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `unknown`, `known-safe`, `known-unsafe` or `same-as-included`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub safety_assumption: Option<String>,
    /// Unknown keys (atip writes `commands`, the omitted paths), kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `trust`: provenance and verification of the metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trust {
    /// `native`, `vendor`, `org`, `community`, `user` or `inferred`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Whether the publisher verified it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    /// Checksum and signature of the binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrity: Option<Value>,
    /// Build provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Value>,
    /// Signature over the shim itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shim_integrity: Option<Value>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A command (or subcommand group).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Command {
    /// What it does.
    pub description: String,
    /// Positional arguments, in order.
    #[serde(
        default,
        deserialize_with = "tight::list",
        skip_serializing_if = "Option::is_none"
    )]
    pub arguments: Option<Vec<Argument>>,
    /// Options of this command (inherited by its subcommands).
    #[serde(
        default,
        deserialize_with = "tight::list",
        skip_serializing_if = "Option::is_none"
    )]
    pub options: Option<Vec<Opt>>,
    /// Nested subcommands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Commands>,
    /// Effects; what is unsaid comes from the nearest ancestor that says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effects: Option<Effects>,
    /// Example command lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<Vec<Value>>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Command {
    /// The nested subcommands, empty when there are none.
    pub fn subcommands(&self) -> impl Iterator<Item = (&String, &Command)> {
        self.commands.iter().flat_map(|c| c.iter())
    }

    /// The positional arguments, empty when there are none.
    pub fn args(&self) -> &[Argument] {
        self.arguments.as_deref().unwrap_or(&[])
    }

    /// The options, empty when there are none.
    pub fn opts(&self) -> &[Opt] {
        self.options.as_deref().unwrap_or(&[])
    }

    /// Whether the command can be run itself: a leaf, or a group that takes its own
    /// arguments or options.
    pub fn is_runnable(&self) -> bool {
        self.commands.as_ref().is_none_or(|c| c.is_empty())
            || !self.args().is_empty()
            || !self.opts().is_empty()
    }
}

/// The value types of arguments and options.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// Free text.
    String,
    /// Whole number.
    Integer,
    /// Any number.
    Number,
    /// Flag with no value.
    Boolean,
    /// A path to a file.
    File,
    /// A path to a directory.
    Directory,
    /// A URL.
    Url,
    /// One of `enum`.
    Enum,
    /// A list.
    Array,
    /// A type this version of atip does not know, kept as written.
    Unknown(String),
}

impl ParamType {
    /// The name as written in ATIP.
    pub fn as_str(&self) -> &str {
        match self {
            ParamType::String => "string",
            ParamType::Integer => "integer",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
            ParamType::File => "file",
            ParamType::Directory => "directory",
            ParamType::Url => "url",
            ParamType::Enum => "enum",
            ParamType::Array => "array",
            ParamType::Unknown(s) => s,
        }
    }

    /// Parses an ATIP type name; unknown names are kept.
    pub fn parse(s: &str) -> Self {
        match s {
            "string" => ParamType::String,
            "integer" => ParamType::Integer,
            "number" => ParamType::Number,
            "boolean" => ParamType::Boolean,
            "file" => ParamType::File,
            "directory" => ParamType::Directory,
            "url" => ParamType::Url,
            "enum" => ParamType::Enum,
            "array" => ParamType::Array,
            other => ParamType::Unknown(other.to_string()),
        }
    }

    /// Whether a JSON value is of this type (enum membership is checked elsewhere).
    pub fn accepts<'a, J: crate::validate::json::Json<'a>>(&self, value: J) -> bool {
        match self {
            ParamType::String
            | ParamType::File
            | ParamType::Directory
            | ParamType::Url
            | ParamType::Enum => value.is_string(),
            ParamType::Integer => value.is_integer(),
            ParamType::Number => value.is_number(),
            ParamType::Boolean => value.is_boolean(),
            ParamType::Array => value.is_array(),
            ParamType::Unknown(_) => true,
        }
    }
}

impl Serialize for ParamType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ParamType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(ParamType::parse(&s))
    }
}

/// A positional argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Argument {
    /// Name, unique within the command.
    pub name: String,
    /// Value type.
    #[serde(rename = "type")]
    pub kind: ParamType,
    /// What it is for (0.1 documents may leave it out: empty then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Required unless said otherwise (protocol default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Value used when it is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Takes the rest of the positionals (protocol default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variadic: Option<bool>,
    /// Allowed values.
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Argument {
    /// Whether the argument must be given (default true).
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(true)
    }

    /// Whether it takes all remaining positionals (default false).
    pub fn is_variadic(&self) -> bool {
        self.variadic.unwrap_or(false)
    }
}

/// An option (`--flag`), local or global.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Opt {
    /// Name, unique within the command.
    pub name: String,
    /// Spellings, each starting with `-`.
    #[serde(deserialize_with = "tight::flags")]
    pub flags: Vec<String>,
    /// Value type; `boolean` takes no value.
    #[serde(rename = "type")]
    pub kind: ParamType,
    /// What it is for (0.1 documents may leave it out: empty then).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Optional unless said otherwise (protocol default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Value used when it is left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Allowed values.
    #[serde(default, rename = "enum", skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<Value>>,
    /// Environment variable that supplies it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_var: Option<String>,
    /// May be repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variadic: Option<bool>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Opt {
    /// Whether the option must be given (default false).
    pub fn is_required(&self) -> bool {
        self.required.unwrap_or(false)
    }

    /// Whether it may be repeated (default false).
    pub fn is_variadic(&self) -> bool {
        self.variadic.unwrap_or(false)
    }

    /// The preferred spelling: the first `--long` flag, else the first flag.
    pub fn long_flag(&self) -> Option<&str> {
        self.flags
            .iter()
            .find(|f| f.starts_with("--"))
            .or_else(|| self.flags.first())
            .map(String::as_str)
    }
}

/// Side effects and safety properties.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Effects {
    /// File system access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<FilesystemEffects>,
    /// Makes network requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// Starts other processes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subprocess: Option<bool>,
    /// Safe to retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// Can be undone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reversible: Option<bool>,
    /// Permanently destroys data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Resource kinds created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creates: Option<Vec<String>>,
    /// Resource kinds modified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modifies: Option<Vec<String>>,
    /// Resource kinds deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletes: Option<Vec<String>>,
    /// Terminal and stdin needs (agent-only).
    ///
    /// `interactive`, `cost` and `duration` are boxed: few commands state them, and
    /// inline (each with its map of unknown keys) they were ~300 of the 584 bytes every
    /// command's effects took, stated or not — ~0.5 MB of a 1,719-command document's
    /// model, held at each of the scan's parses of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interactive: Option<Box<Interactive>>,
    /// Money.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Box<Cost>>,
    /// Time (agent-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<Box<DurationHint>>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `effects.filesystem`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FilesystemEffects {
    /// Reads files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<bool>,
    /// Writes files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<bool>,
    /// Deletes files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delete: Option<bool>,
    /// Paths touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `effects.interactive`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Interactive {
    /// `none`, `optional`, `required` or `password`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<String>,
    /// Asks questions on the terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<bool>,
    /// Needs a terminal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<bool>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

impl Interactive {
    /// Whether an agent without a terminal cannot drive the command.
    pub fn needs_human(&self) -> bool {
        self.tty == Some(true)
            || self.prompts == Some(true)
            || matches!(self.stdin.as_deref(), Some("required" | "password"))
    }
}

/// `effects.cost`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// `free`, `low`, `medium` or `high`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<String>,
    /// May incur a charge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub billable: Option<bool>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `effects.duration`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DurationHint {
    /// Typical run time, e.g. `1-5s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub typical: Option<String>,
    /// Suggested timeout, e.g. `60s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// `authentication`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authentication {
    /// Whether any command needs credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Ways to authenticate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<Vec<AuthMethod>>,
    /// Command that tells whether credentials work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_command: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One way to authenticate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthMethod {
    /// `token`, `oauth`, `api-key`, `password` or `certificate`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Environment variable holding the secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_var: Option<String>,
    /// Human description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Command that sets it up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup_command: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// A usage pattern: named steps an agent can follow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pattern {
    /// Pattern name.
    pub name: String,
    /// What it achieves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Steps in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<PatternStep>>,
    /// Placeholders used in the steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variables: Option<IndexMap<String, Value>>,
    /// Search tags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    /// Whether an agent may run it as a whole (default false: advisory only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<bool>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One step of a pattern.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PatternStep {
    /// Command line, possibly with `{{variables}}`.
    pub command: String,
    /// What the step does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Unknown keys, kept.
    #[serde(flatten)]
    pub extra: Extra,
}

/// One command reached by [`Metadata::walk`], with where it sits.
#[derive(Debug, Clone)]
pub struct CommandEntry<'a> {
    /// Full path from the tool, e.g. `["pr", "create"]`; `[""]` for the root command.
    pub path: Vec<&'a str>,
    /// The command itself.
    pub command: &'a Command,
    /// Its ancestors, outermost first (not including itself).
    pub ancestors: Vec<&'a Command>,
}

impl CommandEntry<'_> {
    /// The path joined with spaces, as a user would type it after the tool name.
    pub fn path_string(&self) -> String {
        self.path.join(" ")
    }

    /// Nesting depth: 1 for a top-level command.
    pub fn depth(&self) -> usize {
        self.path.len()
    }
}

/// Errors turning bytes or values into [`Metadata`].
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The JSON does not have the shape of ATIP metadata.
    #[error("not ATIP metadata: {0}")]
    Shape(#[from] serde_json::Error),
}

impl Metadata {
    /// Reads metadata from a JSON value.
    pub fn from_value(value: Value) -> Result<Self, ModelError> {
        Ok(serde_json::from_value(value)?)
    }

    /// Reads metadata from JSON bytes.
    pub fn from_slice(bytes: &[u8]) -> Result<Self, ModelError> {
        // One UTF-8 check over the whole document is much cheaper than serde_json's check
        // of every string read from a slice (parsing ~1.3x faster). Bytes that are not
        // UTF-8 take the slice path, so the error (and its position) stays what it was.
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(serde_json::from_str(text)?),
            Err(_) => Ok(serde_json::from_slice(bytes)?),
        }
    }

    /// Writes the metadata back as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("metadata always serializes")
    }

    /// The tool's name: `name`, else a shim's `binary.name`.
    pub fn tool_name(&self) -> Option<&str> {
        self.name
            .as_deref()
            .or_else(|| self.binary.as_ref()?.name.as_deref())
    }

    /// The tool's version: `version`, else a shim's `binary.version`.
    pub fn tool_version(&self) -> Option<&str> {
        self.version
            .as_deref()
            .or_else(|| self.binary.as_ref()?.version.as_deref())
    }

    /// Drops every stated effect (the tool's and each command's at every depth), so
    /// what the document says they do becomes unknown: for a document whose effects
    /// nobody vouches for. Conditions on options only add to a command's effects, so
    /// they stay.
    pub fn forget_effects(&mut self) {
        fn forget(commands: &mut Option<Commands>) {
            for c in commands.iter_mut().flat_map(|c| c.values_mut()) {
                c.effects = None;
                forget(&mut c.commands);
            }
        }
        self.effects = None;
        forget(&mut self.commands);
    }

    /// Top-level commands, empty when there are none.
    pub fn top_commands(&self) -> impl Iterator<Item = (&String, &Command)> {
        self.commands.iter().flat_map(|c| c.iter())
    }

    /// Global options, empty when there are none.
    pub fn global_opts(&self) -> &[Opt] {
        self.global_options.as_deref().unwrap_or(&[])
    }

    /// Every command at every depth, parents before children, in document order.
    pub fn walk(&self) -> Vec<CommandEntry<'_>> {
        let mut out = Vec::new();
        let mut stack: Vec<(Vec<&str>, &Command, Vec<&Command>)> = self
            .top_commands()
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .map(|(name, cmd)| (vec![name.as_str()], cmd, Vec::new()))
            .collect();
        while let Some((path, command, ancestors)) = stack.pop() {
            for (name, child) in command.subcommands().collect::<Vec<_>>().into_iter().rev() {
                let mut child_path = path.clone();
                child_path.push(name.as_str());
                let mut child_anc = ancestors.clone();
                child_anc.push(command);
                stack.push((child_path, child, child_anc));
            }
            out.push(CommandEntry {
                path,
                command,
                ancestors,
            });
        }
        out
    }

    /// Finds the command at `path`, with its ancestors.
    pub fn find<S: AsRef<str>>(&self, path: &[S]) -> Option<CommandEntry<'_>> {
        let (first, rest) = path.split_first()?;
        let (name, mut command) = self.commands.as_ref()?.get_key_value(first.as_ref())?;
        let mut names = vec![name.as_str()];
        let mut ancestors = Vec::new();
        for segment in rest {
            let (name, child) = command.commands.as_ref()?.get_key_value(segment.as_ref())?;
            ancestors.push(command);
            names.push(name.as_str());
            command = child;
        }
        Some(CommandEntry {
            path: names,
            command,
            ancestors,
        })
    }

    /// The effects in force for a command: see [`Effects::inherit`].
    pub fn effective_effects(&self, entry: &CommandEntry<'_>) -> Effects {
        let mut layers: Vec<&Effects> = Vec::new();
        layers.extend(entry.command.effects.as_ref());
        layers.extend(
            entry
                .ancestors
                .iter()
                .rev()
                .filter_map(|c| c.effects.as_ref()),
        );
        layers.extend(self.effects.as_ref());
        let mut out = Effects::default();
        for layer in layers {
            out.inherit(layer);
        }
        out
    }

    /// Whether a command runs a program named in its own arguments (a shell's `-c`,
    /// `xargs`, `ssh HOST CMD`): the extension key [`RUNNER_KEY`] set to `true` on the
    /// command, else on the nearest ancestor that sets it, else on the tool root.
    pub fn is_runner(&self, entry: &CommandEntry<'_>) -> bool {
        std::iter::once(&entry.command.extra)
            .chain(entry.ancestors.iter().rev().map(|c| &c.extra))
            .chain(std::iter::once(&self.extra))
            .find_map(|extra| extra.get(RUNNER_KEY).and_then(Value::as_bool))
            .unwrap_or(false)
    }

    /// Options a command accepts: the tool's global options, then each ancestor's
    /// options outermost first, then its own. A later option with the same name
    /// replaces an earlier one.
    pub fn options_in_scope<'a>(&'a self, entry: &CommandEntry<'a>) -> Vec<&'a Opt> {
        let mut out: Vec<&Opt> = Vec::new();
        let sources = std::iter::once(self.global_opts())
            .chain(entry.ancestors.iter().map(|c| c.opts()))
            .chain(std::iter::once(entry.command.opts()));
        for opts in sources {
            for opt in opts {
                if let Some(i) = out.iter().position(|o| o.name == opt.name) {
                    out.remove(i);
                }
                out.push(opt);
            }
        }
        out
    }

    /// One line summarising what the tool's commands may do, for the registry and `list`.
    ///
    /// With no commands it is the tool-level [`Effects::summary`]. Otherwise it is built from
    /// the effective effects of every runnable command: their common summary when they all
    /// agree, else counts such as `mixed: 3/38 destructive, 12/38 network, 20/38 read-only`,
    /// so a destructive subcommand is never hidden behind a harmless tool-level line.
    pub fn effects_summary(&self) -> String {
        let all: Vec<Effects> = self
            .walk()
            .iter()
            .filter(|e| e.command.is_runnable())
            .map(|e| self.effective_effects(e))
            .collect();
        let Some(first) = all.first() else {
            return self.effects.clone().unwrap_or_default().summary();
        };
        let first = first.summary();
        if all.iter().all(|e| e.summary() == first) {
            return first;
        }
        let n = all.len();
        let count = |f: &dyn Fn(&Effects) -> bool| all.iter().filter(|e| f(e)).count();
        let counts = [
            (count(&|e| e.destructive == Some(true)), "destructive"),
            (count(&|e| e.is_billable()), "billable"),
            (count(&|e| e.network == Some(true)), "network"),
            (count(&|e| e.needs_human()), "interactive"),
            (count(&|e| e.is_read_only()), "read-only"),
        ];
        let parts: Vec<String> = counts
            .iter()
            .filter(|(c, _)| *c > 0)
            .map(|(c, what)| format!("{c}/{n} {what}"))
            .collect();
        if parts.is_empty() {
            return "mixed".into();
        }
        format!("mixed: {}", parts.join(", "))
    }

    /// Number of commands at every depth.
    pub fn command_count(&self) -> usize {
        fn count(cmds: &Commands) -> usize {
            cmds.values()
                .map(|c| 1 + c.commands.as_ref().map_or(0, count))
                .sum()
        }
        self.commands.as_ref().map_or(0, count)
    }

    /// Produces the partial document of partial discovery (protocol 0.3).
    ///
    /// `commands` keeps only the named command paths (`"pr"` or `"pr create"`) with their
    /// subtrees and the ancestors needed to reach them; `depth` then cuts every command
    /// nested deeper than `depth` levels (1 = top-level commands only). The result carries
    /// `partial`, `filter`, `totalCommands`, `includedCommands` and, when anything was
    /// left out, `omitted` with the paths left out and `safetyAssumption: "unknown"`:
    /// nothing is known about what was not sent, so agents must confirm before using it.
    pub fn partial(&self, commands: Option<&[String]>, depth: Option<usize>) -> Metadata {
        let mut out = self.clone();
        let total = self.command_count();
        let mut omitted_paths = Vec::new();
        let mut reason = None;
        if let (Some(wanted), Some(cmds)) = (commands, out.commands.as_mut()) {
            let wanted: Vec<Vec<&str>> = wanted
                .iter()
                .map(|w| w.split_whitespace().collect())
                .filter(|p: &Vec<&str>| !p.is_empty())
                .collect();
            keep_wanted(cmds, &[], &wanted, &mut omitted_paths);
            if !omitted_paths.is_empty() {
                reason = Some("filtered");
            }
        }
        if let (Some(depth), Some(cmds)) = (depth, out.commands.as_mut()) {
            let before = omitted_paths.len();
            cut_depth(cmds, &mut Vec::new(), depth.max(1), &mut omitted_paths);
            if omitted_paths.len() > before && reason.is_none() {
                reason = Some("depth-limited");
            }
        }
        let included = out.command_count();
        // Partial-discovery fields exist from 0.3: an older document is declared 0.3.
        if out.atip.version().is_none_or(|v| v.minor < 3) {
            match &mut out.atip {
                AtipField::Legacy(v) => *v = "0.3".into(),
                AtipField::Current(o) => o.version = "0.4".into(),
            }
        }
        out.partial = Some(true);
        out.filter = Some(Filter {
            commands: commands.map(|c| c.to_vec()),
            depth: depth.map(|d| d as u64),
            extra: Extra::new(),
        });
        out.total_commands = Some(total as u64);
        out.included_commands = Some(included as u64);
        out.omitted = reason.map(|reason| {
            let mut extra = Extra::new();
            extra.insert("commands".into(), Value::from(omitted_paths.clone()));
            Omitted {
                reason: Some(reason.into()),
                safety_assumption: Some("unknown".into()),
                extra,
            }
        });
        out
    }
}

/// Keeps the commands on a wanted path (and whole subtrees below one); records the rest.
fn keep_wanted(
    cmds: &mut Commands,
    prefix: &[&str],
    wanted: &[Vec<&str>],
    omitted: &mut Vec<String>,
) {
    let names: Vec<String> = cmds.keys().cloned().collect();
    for name in names {
        let mut path: Vec<&str> = prefix.to_vec();
        path.push(&name);
        let whole = wanted.iter().any(|w| w.as_slice() == path.as_slice());
        let on_the_way = wanted
            .iter()
            .any(|w| w.len() > path.len() && w[..path.len()] == path[..]);
        if whole {
            continue;
        }
        if on_the_way {
            if let Some(children) = cmds.get_mut(&name).and_then(|c| c.commands.as_mut()) {
                keep_wanted(children, &path, wanted, omitted);
            }
            continue;
        }
        omitted.push(path.join(" "));
        cmds.shift_remove(&name);
    }
}

/// Removes commands nested deeper than `depth`; records the removed subtree roots.
fn cut_depth(
    cmds: &mut Commands,
    prefix: &mut Vec<String>,
    depth: usize,
    omitted: &mut Vec<String>,
) {
    for (name, cmd) in cmds.iter_mut() {
        prefix.push(name.clone());
        if prefix.len() >= depth {
            if let Some(children) = cmd.commands.take() {
                for child in children.keys() {
                    omitted.push(format!("{} {}", prefix.join(" "), child));
                }
            }
        } else if let Some(children) = cmd.commands.as_mut() {
            cut_depth(children, prefix, depth, omitted);
        }
        prefix.pop();
    }
}

impl Effects {
    /// Fills what `self` leaves unsaid from `outer` (a parent's or the tool's effects).
    ///
    /// The rule, field by field and recursively into `filesystem`, `interactive`, `cost`
    /// and `duration`: the nearest level that states a field wins; a field stated nowhere
    /// stays unknown (`None`), and consumers treat unknown conservatively.
    pub fn inherit(&mut self, outer: &Effects) {
        fn fill<T: Clone>(mine: &mut Option<T>, theirs: &Option<T>) {
            if mine.is_none() {
                mine.clone_from(theirs);
            }
        }
        fill(&mut self.network, &outer.network);
        fill(&mut self.subprocess, &outer.subprocess);
        fill(&mut self.idempotent, &outer.idempotent);
        fill(&mut self.reversible, &outer.reversible);
        fill(&mut self.destructive, &outer.destructive);
        fill(&mut self.creates, &outer.creates);
        fill(&mut self.modifies, &outer.modifies);
        fill(&mut self.deletes, &outer.deletes);
        match (&mut self.filesystem, &outer.filesystem) {
            (Some(m), Some(t)) => {
                fill(&mut m.read, &t.read);
                fill(&mut m.write, &t.write);
                fill(&mut m.delete, &t.delete);
                fill(&mut m.paths, &t.paths);
            }
            (m, t) => fill(m, t),
        }
        match (&mut self.interactive, &outer.interactive) {
            (Some(m), Some(t)) => {
                fill(&mut m.stdin, &t.stdin);
                fill(&mut m.prompts, &t.prompts);
                fill(&mut m.tty, &t.tty);
            }
            (m, t) => fill(m, t),
        }
        match (&mut self.cost, &outer.cost) {
            (Some(m), Some(t)) => {
                fill(&mut m.estimate, &t.estimate);
                fill(&mut m.billable, &t.billable);
            }
            (m, t) => fill(m, t),
        }
        match (&mut self.duration, &outer.duration) {
            (Some(m), Some(t)) => {
                fill(&mut m.typical, &t.typical);
                fill(&mut m.timeout, &t.timeout);
            }
            (m, t) => fill(m, t),
        }
        for (k, v) in &outer.extra {
            self.extra.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }

    /// The effects of one concrete call: `self` (the command's effects) under the
    /// conditions that hold for it (`x-atip-effects` of given parameters, written files).
    ///
    /// The conditions are first joined, worst first: a boolean is `true` (`false` for
    /// `idempotent` and `reversible`) if any condition says so, lists are united. Every
    /// field the joined condition states then replaces the command's (a `--dry-run` may
    /// state `destructive: false`); resource lists are united with the command's. Fields
    /// no condition states stay as the command states them, unknown stays unknown.
    pub fn under(&self, conditions: &[&Effects]) -> Effects {
        if conditions.is_empty() {
            return self.clone();
        }
        fn join(a: Option<bool>, b: Option<bool>, bad: bool) -> Option<bool> {
            match (a, b) {
                (Some(x), Some(y)) => Some(if x == bad || y == bad { bad } else { !bad }),
                (x, None) => x,
                (None, y) => y,
            }
        }
        fn union(a: &Option<Vec<String>>, b: &Option<Vec<String>>) -> Option<Vec<String>> {
            match (a, b) {
                (None, None) => None,
                _ => {
                    let mut out: Vec<String> =
                        a.iter().chain(b.iter()).flatten().cloned().collect();
                    out.sort();
                    out.dedup();
                    Some(out)
                }
            }
        }
        let mut c = Effects::default();
        for e in conditions {
            c.network = join(c.network, e.network, true);
            c.subprocess = join(c.subprocess, e.subprocess, true);
            c.destructive = join(c.destructive, e.destructive, true);
            c.idempotent = join(c.idempotent, e.idempotent, false);
            c.reversible = join(c.reversible, e.reversible, false);
            c.creates = union(&c.creates, &e.creates);
            c.modifies = union(&c.modifies, &e.modifies);
            c.deletes = union(&c.deletes, &e.deletes);
            if let Some(f) = &e.filesystem {
                let m = c.filesystem.get_or_insert_with(FilesystemEffects::default);
                m.read = join(m.read, f.read, true);
                m.write = join(m.write, f.write, true);
                m.delete = join(m.delete, f.delete, true);
                m.paths = union(&m.paths, &f.paths);
            }
            if let Some(cost) = &e.cost {
                let m = c.cost.get_or_insert_with(Box::default);
                m.billable = join(m.billable, cost.billable, true);
                if m.estimate.is_none() {
                    m.estimate.clone_from(&cost.estimate);
                }
            }
            if c.interactive.is_none() {
                c.interactive.clone_from(&e.interactive);
            }
        }
        let lists = (
            union(&c.creates, &self.creates),
            union(&c.modifies, &self.modifies),
            union(&c.deletes, &self.deletes),
        );
        c.inherit(self);
        (c.creates, c.modifies, c.deletes) = lists;
        c
    }

    /// Read-only: stated to destroy nothing and write no files (`filesystem.write: false`),
    /// with no file deletes and no created, modified or deleted resources. Unknown is not
    /// read-only: `destructive: false` alone says nothing about writes (`mkdir` destroys
    /// nothing, yet changes the disk), so a command that leaves `filesystem.write` unsaid
    /// is audited and asked about like any other.
    pub fn is_read_only(&self) -> bool {
        let fs_quiet = self
            .filesystem
            .as_ref()
            .is_some_and(|f| f.write == Some(false) && f.delete != Some(true));
        let no_resources = [&self.creates, &self.modifies, &self.deletes]
            .iter()
            .all(|l| l.as_ref().is_none_or(|v| v.is_empty()));
        self.destructive == Some(false) && fs_quiet && no_resources
    }

    /// Possibly destructive: everything but a command whose effective effects state
    /// `destructive: false` and delete no files. Unstated means unknown, and unknown is
    /// read the way MCP reads a missing `destructiveHint`: as destructive. The one
    /// definition behind exec's and mcp's confirmation (`effects.destructive` in
    /// `spec/policy.md`) and export's `destructiveHint`, so they cannot disagree.
    pub fn possibly_destructive(&self) -> bool {
        self.destructive != Some(false) || self.deletes_files()
    }

    /// Billable: `cost.billable` is true.
    pub fn is_billable(&self) -> bool {
        self.cost.as_ref().and_then(|c| c.billable) == Some(true)
    }

    /// Deletes files: `filesystem.delete` is true.
    pub fn deletes_files(&self) -> bool {
        self.filesystem.as_ref().and_then(|f| f.delete) == Some(true)
    }

    /// Whether a human must drive it (TTY, prompts, required or password stdin).
    pub fn needs_human(&self) -> bool {
        self.interactive
            .as_deref()
            .is_some_and(Interactive::needs_human)
    }

    /// One line for people and agents, e.g. `destructive, network, not idempotent`;
    /// `read-only` when nothing is changed; `unknown` when nothing is said.
    pub fn summary(&self) -> String {
        let mut parts: Vec<&str> = Vec::new();
        if self.destructive == Some(true) {
            parts.push("destructive");
        }
        if self.reversible == Some(false) {
            parts.push("not reversible");
        }
        if self.idempotent == Some(false) {
            parts.push("not idempotent");
        }
        if self.is_billable() {
            parts.push("billable");
        }
        if self.deletes_files() {
            parts.push("deletes files");
        } else if self.filesystem.as_ref().and_then(|f| f.write) == Some(true) {
            parts.push("writes files");
        }
        if self.network == Some(true) {
            parts.push("network");
        }
        if self.needs_human() {
            parts.push("interactive");
        }
        if parts.is_empty() {
            if self.is_read_only() {
                return "read-only".into();
            }
            if *self == Effects::default() {
                return "unknown".into();
            }
            return "no declared hazards".into();
        }
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "atip": {"version": "0.6", "features": ["trust-v1"], "x-future": 1},
            "name": "gh",
            "version": "2.45.0",
            "description": "GitHub CLI",
            "x-vendor": {"anything": [1, 2, 3]},
            "effects": {"network": true, "destructive": false, "filesystem": {"read": true, "write": false}},
            "globalOptions": [{"name": "repo", "flags": ["-R", "--repo"], "type": "string", "description": "Repository"}],
            "commands": {
                "pr": {
                    "description": "Pull requests",
                    "options": [{"name": "verbose", "flags": ["-v"], "type": "boolean", "description": "More"}],
                    "commands": {
                        "create": {"description": "Create", "effects": {"idempotent": false},
                                   "arguments": [{"name": "title", "type": "string", "description": "T", "x-a": true}]},
                        "close": {"description": "Close", "effects": {"destructive": true, "filesystem": {"write": true}}}
                    }
                },
                "": {"description": "Run with no subcommand"}
            }
        })
    }

    #[test]
    fn forgotten_effects_are_gone_at_every_depth() {
        let mut m = Metadata::from_value(sample()).unwrap();
        assert!(m.effects.is_some());
        m.forget_effects();
        assert!(m.effects.is_none());
        assert!(m.walk().iter().all(|c| c.command.effects.is_none()));
        let pr = &m.commands.as_ref().unwrap()["pr"];
        assert!(pr.commands.as_ref().unwrap()["close"].effects.is_none());
    }

    #[test]
    fn lists_parsed_from_bytes_hold_no_spare_room() {
        let bytes = serde_json::to_vec(&sample()).unwrap();
        let m = Metadata::from_slice(&bytes).unwrap();
        let tight = |what: &str, len: usize, capacity: usize| {
            assert_eq!(capacity, len, "{what}: room for {capacity}, {len} parsed");
        };
        let global = m.global_options.as_ref().unwrap();
        tight("global options", global.len(), global.capacity());
        let mut lists = 0;
        for e in m.walk() {
            for opt in e.command.options.iter().flatten().chain(global) {
                tight("flags", opt.flags.len(), opt.flags.capacity());
            }
            if let Some(o) = &e.command.options {
                tight("options", o.len(), o.capacity());
                lists += 1;
            }
            if let Some(a) = &e.command.arguments {
                tight("arguments", a.len(), a.capacity());
                lists += 1;
            }
        }
        assert_eq!(lists, 2, "the sample's command lists were all looked at");
        assert_eq!(m.to_value(), sample(), "nothing lost");
    }

    #[test]
    fn effects_keep_their_rarely_stated_parts_out_of_line() {
        // Every command holds an `Effects`: the parts few commands state are boxed.
        assert!(
            std::mem::size_of::<Effects>() <= 320,
            "Effects takes {} bytes",
            std::mem::size_of::<Effects>()
        );
        let v = json!({"interactive": {"stdin": "required", "tty": true},
            "cost": {"billable": true}, "duration": {"typical": "1s"}, "network": true});
        let e: Effects = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(e.interactive.as_ref().unwrap().tty, Some(true));
        assert_eq!(serde_json::to_value(&e).unwrap(), v, "nothing lost");
    }

    #[test]
    fn round_trip_keeps_unknown_keys() {
        let v = sample();
        let m = Metadata::from_value(v.clone()).unwrap();
        assert_eq!(m.to_value(), v);
        assert_eq!(m.atip.version(), Some(ProtocolVersion { minor: 6 }));
    }

    #[test]
    fn legacy_version_string() {
        let m = Metadata::from_value(
            json!({"atip": "0.3", "name": "x", "version": "1", "description": "d"}),
        )
        .unwrap();
        assert_eq!(m.atip.version().unwrap().to_string(), "0.3");
        assert!(m.atip.features().is_empty());
    }

    #[test]
    fn walk_gives_full_paths_in_order() {
        let m = Metadata::from_value(sample()).unwrap();
        let paths: Vec<String> = m.walk().iter().map(|e| e.path.join("/")).collect();
        assert_eq!(paths, ["pr", "pr/create", "pr/close", ""]);
        assert_eq!(m.command_count(), 4);
    }

    #[test]
    fn effects_nearest_level_wins() {
        let m = Metadata::from_value(sample()).unwrap();
        let close = m.find(&["pr", "close"]).unwrap();
        let e = m.effective_effects(&close);
        assert_eq!(e.destructive, Some(true));
        assert_eq!(e.network, Some(true));
        let fs = e.filesystem.unwrap();
        assert_eq!((fs.read, fs.write), (Some(true), Some(true)));
        let create = m.find(&["pr", "create"]).unwrap();
        let e = m.effective_effects(&create);
        assert_eq!((e.destructive, e.idempotent), (Some(false), Some(false)));
    }

    #[test]
    fn options_in_scope_inherit_globals_and_parents() {
        let m = Metadata::from_value(sample()).unwrap();
        let create = m.find(&["pr", "create"]).unwrap();
        let names: Vec<&str> = m
            .options_in_scope(&create)
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(names, ["repo", "verbose"]);
    }

    #[test]
    fn partial_by_commands_and_depth() {
        let m = Metadata::from_value(sample()).unwrap();
        let p = m.partial(Some(&["pr create".to_string()]), None);
        assert_eq!(p.total_commands, Some(4));
        assert_eq!(p.included_commands, Some(2));
        let om = p.omitted.as_ref().unwrap();
        assert_eq!(om.reason.as_deref(), Some("filtered"));
        assert_eq!(om.safety_assumption.as_deref(), Some("unknown"));
        assert_eq!(om.extra["commands"], json!(["pr close", ""]));
        let d = m.partial(None, Some(1));
        assert_eq!(d.included_commands, Some(2));
        assert_eq!(d.omitted.unwrap().reason.as_deref(), Some("depth-limited"));
        let old = Metadata::from_value(
            json!({"atip": "0.1", "name": "x", "version": "1", "description": "d"}),
        )
        .unwrap();
        assert_eq!(
            old.partial(None, Some(1)).atip,
            AtipField::Legacy("0.3".into())
        );
        let all = m.partial(None, Some(5));
        assert!(all.omitted.is_none());
        assert_eq!(all.included_commands, Some(4));
    }

    #[test]
    fn summary_lines() {
        let m = Metadata::from_value(sample()).unwrap();
        let close = m.find(&["pr", "close"]).unwrap();
        assert_eq!(
            m.effective_effects(&close).summary(),
            "destructive, writes files, network"
        );
        assert_eq!(Effects::default().summary(), "unknown");
        assert_eq!(
            m.effects_summary(),
            "mixed: 1/4 destructive, 4/4 network, 3/4 read-only"
        );
        let single = Metadata::from_value(
            json!({"atip": "0.4", "name": "rm", "version": "1", "description": "d",
            "commands": {"": {"description": "rm", "effects": {"destructive": true}}}}),
        )
        .unwrap();
        assert_eq!(single.effects_summary(), "destructive");
    }

    #[test]
    fn read_only_needs_a_stated_filesystem_write_false() {
        let effects = |v: Value| serde_json::from_value::<Effects>(v).unwrap();
        // Destroys nothing, but may write: unknown, so not read-only.
        assert!(!effects(json!({"destructive": false})).is_read_only());
        assert!(
            !effects(json!({"destructive": false, "filesystem": {"read": true}})).is_read_only()
        );
        assert!(
            !effects(json!({"destructive": false, "filesystem": {"write": true}})).is_read_only()
        );
        assert!(
            !effects(json!({"destructive": false, "filesystem": {"write": false, "delete": true}}))
                .is_read_only()
        );
        assert!(
            !effects(
                json!({"destructive": false, "filesystem": {"write": false}, "creates": ["x"]})
            )
            .is_read_only()
        );
        assert!(!effects(json!({"filesystem": {"write": false}})).is_read_only());
        assert!(
            effects(json!({"destructive": false, "filesystem": {"write": false}})).is_read_only()
        );
        assert_eq!(
            effects(json!({"destructive": false})).summary(),
            "no declared hazards"
        );
    }

    /// A document that sets every known field at every level, with an unknown key next to
    /// each, so a round trip checks both typed fields and `extra` everywhere.
    fn rich() -> Value {
        json!({
            "atip": {"version": "0.6", "features": ["trust-v1"], "minAgentVersion": "0.4", "x-a": 1},
            "name": "tool", "version": "1.2.3", "description": "A tool", "homepage": "https://x",
            "binary": {"hash": "sha256:00", "name": "tool", "version": "1", "platform": "linux-amd64", "x-b": [1]},
            "partial": true,
            "filter": {"commands": ["a"], "depth": 2, "x-c": null},
            "totalCommands": 3, "includedCommands": 2,
            "omitted": {"reason": "filtered", "safetyAssumption": "unknown", "commands": ["b"]},
            "trust": {"source": "vendor", "verified": true, "integrity": {"checksum": "c"},
                      "provenance": {"url": "u"}, "shimIntegrity": {"sig": "s"}, "x-d": "d"},
            "globalOptions": [{"name": "g", "flags": ["-g"], "type": "boolean", "description": "G", "x-e": {}}],
            "authentication": {"required": true, "checkCommand": "tool auth status", "x-f": 2,
                "methods": [{"type": "token", "envVar": "TOKEN", "description": "t", "setupCommand": "tool login", "x-g": 3}]},
            "effects": {
                "filesystem": {"read": true, "write": false, "delete": false, "paths": ["~"], "x-h": 4},
                "network": true, "subprocess": false, "idempotent": true, "reversible": true,
                "destructive": false, "creates": ["a"], "modifies": ["b"], "deletes": ["c"],
                "interactive": {"stdin": "none", "prompts": false, "tty": false, "x-i": 5},
                "cost": {"estimate": "free", "billable": false, "x-j": 6},
                "duration": {"typical": "1s", "timeout": "60s", "x-k": 7},
                "x-l": 8
            },
            "commands": {
                "a": {
                    "description": "A",
                    "arguments": [{"name": "p", "type": "file", "description": "P", "required": false,
                                   "default": "x", "variadic": true, "enum": ["x", "y"], "x-m": 9}],
                    "options": [{"name": "o", "flags": ["-o", "--out"], "type": "weird", "description": "O",
                                 "required": true, "default": 1, "enum": [1, 2], "envVar": "O",
                                 "variadic": false, "x-n": 10}],
                    "commands": {"b": {"description": "B", "x-o": 11}},
                    "effects": {"destructive": true},
                    "examples": ["tool a p", {"cmd": "tool a"}],
                    "x-p": 12
                }
            },
            "patterns": [{"name": "pt", "description": "D", "tags": ["t"], "executable": false,
                          "variables": {"v": {"default": 1}},
                          "steps": [{"command": "tool a {{v}}", "description": "s", "x-q": 13}], "x-r": 14}],
            "x-s": {"deep": [1, {"k": "v"}]},
            "futureField": "kept"
        })
    }

    #[test]
    fn rich_document_round_trips_from_value_and_bytes() {
        let v = rich();
        let m = Metadata::from_value(v.clone()).unwrap();
        assert_eq!(m.to_value(), v);
        let bytes = serde_json::to_vec(&v).unwrap();
        let from_bytes = Metadata::from_slice(&bytes).unwrap();
        assert_eq!(from_bytes, m);
        assert_eq!(from_bytes.to_value(), v);
    }

    #[test]
    fn unknown_keys_are_kept_at_every_level() {
        let m = Metadata::from_slice(&serde_json::to_vec(&rich()).unwrap()).unwrap();
        let AtipField::Current(atip) = &m.atip else {
            panic!("object form expected")
        };
        assert_eq!(atip.extra["x-a"], json!(1));
        assert_eq!(atip.min_agent_version.as_deref(), Some("0.4"));
        assert_eq!(m.binary.as_ref().unwrap().extra["x-b"], json!([1]));
        assert_eq!(m.filter.as_ref().unwrap().extra["x-c"], Value::Null);
        assert_eq!(m.omitted.as_ref().unwrap().extra["commands"], json!(["b"]));
        assert_eq!(m.trust.as_ref().unwrap().extra["x-d"], json!("d"));
        assert_eq!(m.global_opts()[0].extra["x-e"], json!({}));
        let auth = m.authentication.as_ref().unwrap();
        assert_eq!(auth.extra["x-f"], json!(2));
        assert_eq!(auth.methods.as_ref().unwrap()[0].extra["x-g"], json!(3));
        let e = m.effects.as_ref().unwrap();
        assert_eq!(e.filesystem.as_ref().unwrap().extra["x-h"], json!(4));
        assert_eq!(e.interactive.as_ref().unwrap().extra["x-i"], json!(5));
        assert_eq!(e.cost.as_ref().unwrap().extra["x-j"], json!(6));
        assert_eq!(e.duration.as_ref().unwrap().extra["x-k"], json!(7));
        assert_eq!(e.extra["x-l"], json!(8));
        let a = &m.commands.as_ref().unwrap()["a"];
        assert_eq!(a.args()[0].extra["x-m"], json!(9));
        assert_eq!(a.opts()[0].extra["x-n"], json!(10));
        assert_eq!(a.opts()[0].kind, ParamType::Unknown("weird".into()));
        assert_eq!(a.commands.as_ref().unwrap()["b"].extra["x-o"], json!(11));
        assert_eq!(a.extra["x-p"], json!(12));
        let p = &m.patterns.as_ref().unwrap()[0];
        assert_eq!(p.steps.as_ref().unwrap()[0].extra["x-q"], json!(13));
        assert_eq!(p.extra["x-r"], json!(14));
        assert_eq!(m.extra["x-s"], json!({"deep": [1, {"k": "v"}]}));
        assert_eq!(m.extra["futureField"], json!("kept"));
        assert_eq!(
            m.extra.keys().collect::<Vec<_>>(),
            ["x-s", "futureField"],
            "document order"
        );
    }

    #[test]
    fn repeated_keys_known_is_an_error_unknown_last_wins() {
        let e = Metadata::from_slice(br#"{"atip":"0.1","description":"a","description":"b"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("duplicate field `description`"), "{e}");
        let m =
            Metadata::from_slice(br#"{"atip":"0.1","description":"a","x":1,"y":0,"x":2}"#).unwrap();
        assert_eq!(
            m.to_value(),
            json!({"atip": "0.1", "description": "a", "x": 2, "y": 0})
        );
    }

    #[test]
    fn missing_required_field_is_named() {
        let e = Metadata::from_slice(br#"{"atip":"0.1"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `description`"), "{e}");
        let e = Metadata::from_value(json!({"description": "d"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `atip`"), "{e}");
        let doc = json!({"atip": "0.1", "description": "d",
            "commands": {"x": {"description": "d", "arguments": [{"type": "string", "description": "a"}]}}});
        let e = Metadata::from_value(doc.clone()).unwrap_err().to_string();
        assert!(e.contains("missing field `name`"), "{e}");
        let e = Metadata::from_slice(&serde_json::to_vec(&doc).unwrap())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("missing field `name`") && e.contains("line 1"),
            "{e}"
        );
        let e = Metadata::from_value(json!({"atip": "0.1", "description": "d",
            "globalOptions": [{"name": "n", "type": "string", "description": "a"}]}))
        .unwrap_err()
        .to_string();
        assert!(e.contains("missing field `flags`"), "{e}");
    }

    #[test]
    fn wrong_types_are_reported() {
        let e = Metadata::from_slice(br#"{"atip":"0.1","description":5}"#)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid type: integer `5`, expected a string at line 1 column 29"),
            "{e}"
        );
        let e = Metadata::from_value(
            json!({"atip": "0.1", "description": "d", "effects": {"network": "yes"}}),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("invalid type: string \"yes\", expected a boolean"),
            "{e}"
        );
        let e = Metadata::from_value(json!({"atip": "0.1", "description": "d", "effects": []}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected struct Effects"), "{e}");
        let e = Metadata::from_slice(b"[]").unwrap_err().to_string();
        assert!(
            e.contains("invalid type: sequence, expected struct Metadata"),
            "{e}"
        );
        for atip in [
            json!(3),
            json!(null),
            json!([]),
            json!({"x": 1}),
            json!(true),
        ] {
            let e = Metadata::from_value(json!({"atip": atip, "description": "d"}))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("data did not match any variant of untagged enum AtipField"),
                "{e}"
            );
        }
        let e = Metadata::from_slice(b"{\"atip\":\"0.1\",\"description\":\"\xff\"}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("invalid unicode code point"), "{e}");
    }

    #[test]
    fn version_parsing() {
        assert!(ProtocolVersion::parse("0.6").unwrap().is_supported());
        assert!(!ProtocolVersion::parse("0.7").unwrap().is_supported());
        assert!(ProtocolVersion::parse("1.0").is_none());
        assert!(ProtocolVersion::parse("0.").is_none());
    }
}

#[cfg(test)]
mod call_effects_tests {
    use super::*;

    fn fx(v: serde_json::Value) -> Effects {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn conditions_replace_what_they_state_and_join_worst_first() {
        let base = fx(serde_json::json!({"destructive": false, "network": true,
            "filesystem": {"read": true, "write": false}, "modifies": ["remote"]}));
        assert_eq!(base.under(&[]), base);
        let force = fx(serde_json::json!({"destructive": true, "reversible": false}));
        let e = base.under(&[&force]);
        assert_eq!(e.destructive, Some(true));
        assert_eq!(e.network, Some(true));
        assert!(!e.is_read_only());
        let dry = fx(serde_json::json!({"destructive": false}));
        // Two conditions disagreeing: the worse wins.
        assert_eq!(base.under(&[&dry, &force]).destructive, Some(true));
        assert_eq!(base.under(&[&force, &dry]).destructive, Some(true));
        let write = fx(serde_json::json!({"filesystem": {"write": true}, "creates": ["file"]}));
        let e = base.under(&[&write]);
        assert_eq!(e.filesystem.as_ref().unwrap().write, Some(true));
        assert_eq!(e.filesystem.as_ref().unwrap().read, Some(true));
        assert_eq!(e.creates.as_deref(), Some(&["file".to_string()][..]));
        assert_eq!(e.modifies.as_deref(), Some(&["remote".to_string()][..]));
        // Unknown stays unknown: a condition that says nothing of destructive leaves it.
        let unknown = Effects::default().under(&[&write]);
        assert_eq!(unknown.destructive, None);
        assert!(unknown.possibly_destructive());
    }
}
