//! The examples at the end of each nested subcommand's `--help` (`atip mcp serve`,
//! `atip registry build`, …): real invocations a person copies first. A test in
//! `main.rs` parses every one with the real command tree as that subcommand. The
//! top-level commands' examples are in `main.rs`, beside the commands.

pub const MCP_SERVE: &str = "\
Examples:
  atip mcp serve                                # every registered tool, over stdio
  atip mcp serve --tools gh,git --jobs 4        # two tools, at most 4 calls at once
  atip mcp serve --http 127.0.0.1:8765          # Streamable HTTP on loopback";
pub const MCP_SERVERS: &str = "\
Examples:
  atip mcp servers                              # each server: transport, where set
  atip --output json mcp servers                # the same for a script";
pub const MCP_TOOLS: &str = "\
Examples:
  atip mcp tools                                # every configured server's tools
  atip mcp tools --server github                # one server's tools
  atip mcp tools --command npx --arg -y --arg @modelcontextprotocol/server-everything";
pub const MCP_DESCRIBE: &str = "\
Examples:
  atip mcp describe --server github create_issue
  atip --output json mcp describe --server github create_issue   # the schemas";
pub const MCP_CALL: &str = "\
Examples:
  atip mcp call --server github list_issues --args '{\"owner\": \"o\", \"repo\": \"r\"}'
  atip mcp call --url http://127.0.0.1:8765/mcp echo --args '{\"text\": \"hi\"}' --yes";
pub const MCP_PING: &str = "\
Examples:
  atip mcp ping --server github                 # capabilities and round-trip time
  atip mcp ping --url http://127.0.0.1:8765/mcp --trace   # every frame on stderr";
pub const MCP_IMPORT: &str = "\
Examples:
  atip mcp import claude-desktop --dry-run      # what would be copied
  atip mcp import vscode --force                # replace servers of the same name";
pub const MCP_INSTALL: &str = "\
Examples:
  atip mcp install --host claude-code --dry-run # the change as a diff
  atip mcp install --host codex                 # ~/.codex/config.toml
  atip mcp install --host vscode --scope project   # .vscode/mcp.json here";
pub const MCP_UNINSTALL: &str = "\
Examples:
  atip mcp uninstall --host claude-code
  atip mcp uninstall --host cursor --scope project --dry-run";
pub const MCP_TRUST: &str = "\
Examples:
  atip mcp trust                                # the nearest .mcp.json upwards
  atip mcp trust .mcp.json --allow-env GITHUB_TOKEN
  atip mcp trust --list                         # trusted files, still matching?";
pub const MCP_UNTRUST: &str = "\
Examples:
  atip mcp untrust                              # the nearest .mcp.json upwards
  atip mcp untrust ../other/.mcp.json";
pub const MCP_LINK_CLI: &str = "\
Examples:
  atip mcp link-cli                             # `mcp` beside atip
  atip mcp link-cli --dir ~/.local/bin";

pub const REGISTRY_KEYGEN: &str = "\
Examples:
  atip registry keygen team.key                 # team.key (secret) and team.key.pub
  atip registry keygen ~/.config/agent-tools/team.key";
pub const REGISTRY_BUILD: &str = "\
Examples:
  atip registry build shims/ site/ --sign team.key --url https://tools.example.org/atip
  atip registry build shims/ site/ --expires 90d   # unsigned, a longer expiry";
pub const REGISTRY_ADD: &str = "\
Examples:
  atip registry add team https://tools.example.org/atip --public-key team.key.pub --require-signatures
  atip registry add mirror https://mirror.example.org/atip --priority 50 --no-check";
pub const REGISTRY_LIST: &str = "\
Examples:
  atip registry list                            # name, URL, keys, enabled
  atip --output json registry list              # the same for a script";
pub const REGISTRY_REMOVE: &str = "\
Examples:
  atip registry remove mirror                   # its tools go at the next scan
  atip --quiet registry remove team";
