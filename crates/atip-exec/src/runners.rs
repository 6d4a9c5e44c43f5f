//! Command runners: programs whose job is to run another program named in their own
//! arguments (shells, interpreters, `env`, `sudo`, `xargs`, `ssh HOST CMD`, `find -exec`,
//! `git -c`). Through one of them a model could run anything, whatever the policy says
//! about the runner itself, so policy denies them unless it allows that program by name.
//!
//! This module only finds out *whether* a call runs another program and why; the policy
//! ([`super::policy`]) decides what happens. It also recognises atip itself (by file
//! identity or contents, whatever its name), which is never run. The built-in table is
//! written out in `spec/policy.md`; the policy file extends it (`runners.programs`,
//! `runners.commands`, `runners.options`). Must not run anything.

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Programs that run whatever their arguments name, matched on the executable's
/// basename with a trailing version stripped (`python3.12` → `python`).
pub const PROGRAMS: &[&str] = &[
    // shells
    "sh",
    "bash",
    "dash",
    "zsh",
    "ksh",
    "mksh",
    "ash",
    "yash",
    "fish",
    "csh",
    "tcsh",
    "rc",
    "busybox",
    "toybox",
    // interpreters
    "python",
    "pypy",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "irb",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "expect",
    "Rscript",
    "R",
    "julia",
    "pwsh",
    "powershell",
    "osascript",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "gdb",
    "lldb",
    // wrappers that run their arguments
    "env",
    "sudo",
    "doas",
    "su",
    "runuser",
    "pkexec",
    "xargs",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "setsid",
    "chroot",
    "unshare",
    "nsenter",
    "flock",
    "watch",
    "script",
    "ssh",
    "time",
    "taskset",
    "chrt",
    "stdbuf",
    "parallel",
    "strace",
    "ltrace",
    "valgrind",
    "systemd-run",
    "at",
    "batch",
    "firejail",
    "bwrap",
    "fakeroot",
    "proot",
    "npx",
    "pipx",
    "uvx",
    "atip",
];

/// Commands of otherwise ordinary programs that run a program named in their arguments:
/// (program, command path).
pub const COMMANDS: &[(&str, &str)] = &[
    ("git", "submodule foreach"),
    ("git", "bisect run"),
    ("docker", "run"),
    ("docker", "exec"),
    ("docker", "container run"),
    ("docker", "container exec"),
    ("podman", "run"),
    ("podman", "exec"),
    ("kubectl", "exec"),
    ("kubectl", "run"),
    ("kubectl", "debug"),
    ("npm", "exec"),
    ("npm", "run-script"),
    ("uv", "run"),
    ("poetry", "run"),
    ("cargo", "run"),
    ("make", ""),
    // Package managers' configuration names programs they run later (npm
    // `script-shell`, `git`, `node-gyp`; pip `index-url` plus build backends): storing
    // it is a runner call whatever the key.
    ("npm", "config set"),
    ("npm", "set"),
    ("pnpm", "config set"),
    ("yarn", "config set"),
    ("pip", "config set"),
    ("pip", "config edit"),
];

/// Options that make a call of a program run another program: (program, command path or
/// `*` for any command, flags). A flag matches an argv element equal to it, or starting
/// with it plus `=`, or (for a two-character flag) with its value attached (`-cx`).
pub const OPTIONS: &[(&str, &str, &[&str])] = &[
    ("find", "*", &["-exec", "-execdir", "-ok", "-okdir"]),
    ("git", "", &["-c", "--config-env", "--exec-path"]),
    (
        "git",
        "clone",
        &["-c", "--config", "-u", "--upload-pack", "--template"],
    ),
    // A template directory's hooks become the new repository's hooks.
    ("git", "init", &["--template"]),
    ("git", "fetch", &["--upload-pack"]),
    ("git", "pull", &["--upload-pack"]),
    ("git", "ls-remote", &["--upload-pack"]),
    ("git", "archive", &["--exec"]),
    ("git", "push", &["--receive-pack", "--exec"]),
    ("git", "rebase", &["-x", "--exec"]),
    (
        "tar",
        "*",
        &[
            "--to-command",
            "-I",
            "--use-compress-program",
            "--checkpoint-action",
            "-F",
            "--info-script",
            "--new-volume-script",
            "--rsh-command",
        ],
    ),
    ("rsync", "*", &["-e", "--rsh", "--rsync-path"]),
    // `-S` names the ssh program; `-F` a config file (ProxyCommand, LocalCommand, Match
    // exec); `-D` (sftp) a local sftp-server to run.
    ("scp", "*", &["-S", "-F"]),
    ("sftp", "*", &["-S", "-F", "-D"]),
    ("sort", "*", &["--compress-program"]),
    ("zip", "*", &["-TT", "--unzip-command"]),
    ("man", "*", &["-P", "--pager", "-H", "--html"]),
    ("less", "*", &[]),
];

/// The basename without a trailing version: `python3.12` → `python`, `perl5.36` → `perl`.
pub(crate) fn base_name(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stripped = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    if stripped.is_empty() {
        name
    } else {
        stripped.to_string()
    }
}

/// Programs with a sandbox mode that runs no programs and writes no files
/// (`x-atip-sandbox` options): GNU sed and GNU awk, matched on the resolved file's name.
pub const SANDBOXED: &[&str] = &["sed", "gawk"];

/// Names a sandbox-capable program may be called by (the table entries it lifts).
pub const SANDBOX_NAMES: &[&str] = &["sed", "gawk", "awk"];

/// Whether `program` is a GNU sed or gawk whose sandbox switch atip can rely on: the file
/// it resolves to is named as in [`SANDBOXED`] and its contents carry `--sandbox` (the
/// GNU usage text; mawk, BSD sed and busybox have neither). Reads the file, runs nothing.
/// A program without the switch would stop on the unknown option anyway, running no
/// script; this check keeps atip from counting on that.
pub fn sandbox_capable(program: &Path) -> bool {
    let Ok(real) = std::fs::canonicalize(program) else {
        return false;
    };
    if !SANDBOXED.contains(&base_name(&real).as_str()) {
        return false;
    }
    std::fs::read(&real).is_ok_and(|b| b.windows(9).any(|w| w == b"--sandbox"))
}

/// The names a program answers to: the registered path's basename, and its resolved
/// target's (a `/usr/local/bin/tool` symlink to `bash` is bash) unless that target is a
/// multi-call binary, which picks its behaviour from the name it was called by.
pub fn program_names(program: &Path) -> Vec<String> {
    let mut out = vec![base_name(program)];
    if let Ok(real) = std::fs::canonicalize(program) {
        let target = base_name(&real);
        if !out.contains(&target) && !matches!(target.as_str(), "busybox" | "toybox") {
            out.push(target);
        }
    }
    out
}

/// Directories whose files name programs that later calls run: git's config, hooks and
/// info under `.git`, a hook manager's `.husky`, ssh's `.ssh/config`.
pub const PLANTED_DIRS: &[&str] = &[".git", ".husky", ".ssh"];

/// Files that name programs, or options, a later call reads and acts on: git's and the
/// shells' start-up files, package managers' and downloaders' configuration (`.wgetrc`
/// can name a program), direnv's `.envrc`, and a project's `.mcp.json`.
pub const PLANTED_FILES: &[&str] = &[
    ".gitconfig",
    ".gitmodules",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".envrc",
    ".curlrc",
    ".wgetrc",
    ".mcp.json",
];

/// Why a call that may write plants configuration that runs programs, or `None`. A call
/// that writes `.git/config` or `.git/hooks/pre-commit` (with `cp`, `tee`, `sed -i`…)
/// stores a command for a later read-only `git status` exactly as `git config
/// core.fsmonitor` does, so it is a runner call too. `paths` are the call's path values
/// (relative to `cwd`); each is judged as written and as it resolves (a link into
/// `.git` counts). Only asked of calls whose effects are not read-only.
pub(crate) fn why_planting<'a>(paths: impl Iterator<Item = &'a str>, cwd: &Path) -> Option<String> {
    for value in paths {
        let joined = cwd.join(value);
        let resolved = super::policy::resolve_path(&joined);
        for candidate in [&joined, &resolved] {
            let dir = candidate.components().find_map(|c| match c {
                std::path::Component::Normal(n) => {
                    let n = n.to_str()?;
                    PLANTED_DIRS.contains(&n).then_some(n)
                }
                _ => None,
            });
            let file = candidate
                .file_name()
                .and_then(|n| n.to_str())
                .filter(|n| PLANTED_FILES.contains(n));
            if let Some(what) = dir.or(file) {
                return Some(format!(
                    "it may write {value:?}, inside {what}: a file that names programs a later call runs"
                ));
            }
        }
    }
    None
}

/// Why a call runs another program, in words, or `None` when nothing says it does.
/// `extra_programs`, `extra_commands` and `extra_options` come from the policy file.
pub(crate) fn why_runner(
    names: &[String],
    command: &[String],
    argv: &[String],
    marked: bool,
    extra_programs: &[String],
    extra_options: &std::collections::BTreeMap<String, Vec<String>>,
) -> Option<String> {
    let path = command
        .iter()
        .filter(|s| !s.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(n) = names.iter().find(|n| PROGRAMS.contains(&n.as_str())) {
        return Some(format!("{n} runs programs named in its arguments"));
    }
    if let Some(n) = names.iter().find(|n| extra_programs.contains(n)) {
        return Some(format!("{n} is listed in runners.programs"));
    }
    if marked {
        return Some(format!(
            "its metadata marks it {} (it runs programs named in its arguments)",
            crate::model::RUNNER_KEY
        ));
    }
    for n in names {
        if let Some((_, c)) = COMMANDS.iter().find(|(p, c)| {
            p == n && (*c == path || (!c.is_empty() && path.starts_with(&format!("{c} "))))
        }) {
            let shown = if c.is_empty() {
                n.clone()
            } else {
                format!("{n} {c}")
            };
            return Some(format!("{shown} runs programs named in its arguments"));
        }
        if matches!(n.as_str(), "scp" | "sftp")
            && let Some(o) = unsafe_ssh_option(argv)
        {
            return Some(format!(
                "{n} with -o {o:?} can run a program (only known-safe ssh options are allowed)"
            ));
        }
        let built_in = OPTIONS
            .iter()
            .filter(|(p, c, _)| p == n && (*c == "*" || *c == path))
            .flat_map(|(_, _, flags)| flags.iter().map(|f| f.to_string()));
        let from_policy = extra_options.get(n).into_iter().flatten().cloned();
        for flag in built_in.chain(from_policy) {
            if let Some(a) = argv.iter().find(|a| flag_matches(a, &flag)) {
                return Some(format!(
                    "{n} with {a:?} runs a program named in its arguments"
                ));
            }
        }
    }
    None
}

/// ssh options (`-o Key=Value` or `-o "Key Value"`) that neither run a program nor
/// load a file or library: the only ones a `scp`/`sftp` call may pass without being a
/// runner call. Anything else (`ProxyCommand`, `LocalCommand`, `PermitLocalCommand`,
/// `KnownHostsCommand`, `Match exec`, `PKCS11Provider`, `Include`, …) is. Globs,
/// case-insensitive; the built-in `scp` shim carries the same list as its `-o` option's
/// `x-atip-runner-unless` (a test keeps them equal).
pub const SSH_SAFE_OPTIONS: &[&str] = &[
    "AddressFamily[= ]*",
    "BatchMode[= ]*",
    "CheckHostIP[= ]*",
    "Ciphers[= ]*",
    "Compression[= ]*",
    "ConnectionAttempts[= ]*",
    "ConnectTimeout[= ]*",
    "HashKnownHosts[= ]*",
    "HostKeyAlgorithms[= ]*",
    "IdentitiesOnly[= ]*",
    "IPQoS[= ]*",
    "KbdInteractiveAuthentication[= ]*",
    "KexAlgorithms[= ]*",
    "LogLevel[= ]*",
    "MACs[= ]*",
    "NumberOfPasswordPrompts[= ]*",
    "PasswordAuthentication[= ]*",
    "Port[= ]*",
    "PreferredAuthentications[= ]*",
    "PubkeyAuthentication[= ]*",
    "RekeyLimit[= ]*",
    "ServerAliveCountMax[= ]*",
    "ServerAliveInterval[= ]*",
    "StrictHostKeyChecking[= ]*",
    "TCPKeepAlive[= ]*",
    "UpdateHostKeys[= ]*",
    "User[= ]*",
];

/// The first `-o` value in `argv` that is not a known-safe ssh option.
fn unsafe_ssh_option(argv: &[String]) -> Option<String> {
    let safe = {
        let mut b = globset::GlobSetBuilder::new();
        for p in SSH_SAFE_OPTIONS {
            b.add(
                globset::GlobBuilder::new(p)
                    .case_insensitive(true)
                    .build()
                    .expect("valid glob"),
            );
        }
        b.build().expect("valid glob set")
    };
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let value = if a == "-o" {
            it.next().cloned().unwrap_or_default()
        } else if let Some(v) = a.strip_prefix("-o") {
            v.to_string()
        } else if a == "--" {
            break;
        } else {
            continue;
        };
        if !safe.is_match(value.trim_start()) {
            return Some(value);
        }
    }
    None
}

fn flag_matches(arg: &str, flag: &str) -> bool {
    if arg == flag {
        return true;
    }
    if let Some(rest) = arg.strip_prefix(flag) {
        return rest.starts_with('=')
            || (flag.len() == 2 && flag.starts_with('-') && !flag.starts_with("--"));
    }
    false
}

/// How atip recognises itself on disk.
struct SelfId {
    dev: u64,
    ino: u64,
    size: u64,
    path: PathBuf,
    sample: OnceLock<Option<Vec<u8>>>,
}

fn me() -> Option<&'static SelfId> {
    static ME: OnceLock<Option<SelfId>> = OnceLock::new();
    ME.get_or_init(|| {
        let path = std::env::current_exe().ok()?;
        let md = std::fs::metadata(&path).ok()?;
        Some(SelfId {
            dev: md.dev(),
            ino: md.ino(),
            size: md.size(),
            path,
            sample: OnceLock::new(),
        })
    })
    .as_ref()
}

/// Bytes compared to tell a copy of atip: the first and the last MiB.
const SAMPLE: u64 = 1 << 20;

/// The first and last [`SAMPLE`] bytes of a file of `size` bytes.
fn sample(path: &Path, size: u64) -> Option<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut f = std::fs::File::open(path).ok()?;
    let mut out = Vec::with_capacity((2 * SAMPLE).min(size) as usize);
    (&mut f).take(SAMPLE).read_to_end(&mut out).ok()?;
    if size > SAMPLE {
        f.seek(SeekFrom::Start(size.saturating_sub(SAMPLE).max(SAMPLE)))
            .ok()?;
        f.take(SAMPLE).read_to_end(&mut out).ok()?;
    }
    Some(out)
}

/// Whether `program` is this very atip: the same file (device and inode, whatever name
/// or symlink leads to it) or a copy of it (same size, same first and last MiB — an
/// executable that shares atip's exact size and both ends is atip for this purpose; a
/// false match only refuses a call). The usual answer costs one `stat`.
pub fn is_self(program: &Path) -> bool {
    let Some(me) = me() else {
        // atip cannot tell where it is: every program might be atip.
        return true;
    };
    let Ok(md) = std::fs::metadata(program) else {
        return false;
    };
    if md.dev() == me.dev && md.ino() == me.ino {
        return true;
    }
    if md.size() != me.size {
        return false;
    }
    let mine = me.sample.get_or_init(|| sample(&me.path, me.size));
    match (mine, sample(program, md.size())) {
        (Some(a), Some(b)) => *a == b,
        // Unreadable either way: a file of atip's exact size that cannot be checked.
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_into_git_or_a_start_up_file_is_planting() {
        let dir = tempfile::tempdir().unwrap();
        let cwd = dir.path();
        std::fs::create_dir_all(cwd.join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(cwd.join(".git/hooks"), cwd.join("innocent")).unwrap();
        for planted in [
            ".git/config",
            ".git/hooks/pre-commit",
            "sub/.git/info/attributes",
            ".gitconfig",
            "home/.bashrc",
            ".mcp.json",
            "innocent/post-checkout",
        ] {
            assert!(
                why_planting([planted].into_iter(), cwd).is_some(),
                "{planted}"
            );
        }
        for plain in [
            "src/main.rs",
            "gitconfig.txt",
            ".gitignore",
            "notes/.git-notes",
        ] {
            assert!(why_planting([plain].into_iter(), cwd).is_none(), "{plain}");
        }
    }
    use std::collections::BTreeMap;

    fn why(name: &str, command: &[&str], argv: &[&str]) -> Option<String> {
        let command: Vec<String> = command.iter().map(|s| s.to_string()).collect();
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        why_runner(
            &[name.to_string()],
            &command,
            &argv,
            false,
            &[],
            &BTreeMap::new(),
        )
    }

    #[test]
    fn names_strip_versions() {
        assert_eq!(base_name(Path::new("/usr/bin/python3.12")), "python");
        assert_eq!(base_name(Path::new("/usr/bin/perl5.36")), "perl");
        assert_eq!(base_name(Path::new("/usr/bin/git")), "git");
        assert_eq!(base_name(Path::new("/x/7z")), "7z");
        assert_eq!(base_name(Path::new("/x/123")), "123");
    }

    #[test]
    fn whole_programs_commands_and_options() {
        assert!(why("bash", &[""], &["-c", "id"]).is_some());
        assert!(why("xargs", &[""], &[]).is_some());
        assert!(why("find", &[""], &[".", "-name", "x"]).is_none());
        assert!(why("find", &[""], &[".", "-exec", "rm", "{}", ";"]).is_some());
        assert!(why("find", &[""], &[".", "-executable"]).is_none());
        assert!(why("git", &["switch"], &["switch", "-c", "topic"]).is_none());
        assert!(why("git", &[""], &["-c", "core.pager=sh"]).is_some());
        assert!(why("git", &["rebase"], &["rebase", "--exec=make"]).is_some());
        assert!(why("git", &["submodule", "foreach"], &["submodule", "foreach"]).is_some());
        assert!(why("git", &["status"], &["status"]).is_none());
        assert!(
            why(
                "npm",
                &["config", "set"],
                &["config", "set", "script-shell=x"]
            )
            .is_some()
        );
        assert!(why("pip", &["config", "set"], &["config", "set"]).is_some());
        assert!(why("npm", &["config", "get"], &["config", "get"]).is_none());
        assert!(why("tar", &[""], &["-Ixz", "-cf", "a.tar"]).is_some());
        assert!(why("rsync", &[""], &["-av", "a", "b"]).is_none());
        assert!(why("git", &["clone"], &["clone", "--template=t", "u"]).is_some());
        assert!(why("git", &["init"], &["init", "--template", "t"]).is_some());
        assert!(why("scp", &[""], &["-S", "x", "a", "b:"]).is_some());
        assert!(why("scp", &[""], &["-F", "cfg", "a", "b:"]).is_some());
        assert!(why("scp", &[""], &["-o", "ProxyCommand=sh -c x", "a", "b:"]).is_some());
        assert!(why("scp", &[""], &["-oLocalCommand x", "a", "b:"]).is_some());
        assert!(why("sftp", &[""], &["-o", "proxycommand x", "h"]).is_some());
        assert!(
            why(
                "scp",
                &[""],
                &["-o", "BatchMode=yes", "-o", "connecttimeout 5", "a", "b:"]
            )
            .is_none()
        );
        assert!(why("scp", &[""], &["--", "-oProxyCommand=x"]).is_none());
        let extra = BTreeMap::from([("mytool".to_string(), vec!["--hook".to_string()])]);
        let argv = vec!["--hook=x".to_string()];
        assert!(why_runner(&["mytool".into()], &[], &argv, false, &[], &extra).is_some());
        assert!(why_runner(&["mytool".into()], &[], &[], true, &[], &extra).is_some());
        assert!(why_runner(&["mine".into()], &[], &[], false, &["mine".into()], &extra).is_some());
    }

    #[test]
    fn self_is_recognised_by_identity_and_contents() {
        let me = std::env::current_exe().unwrap();
        assert!(is_self(&me));
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("innocent");
        std::os::unix::fs::symlink(&me, &link).unwrap();
        assert!(is_self(&link));
        let copy = dir.path().join("copy");
        std::fs::copy(&me, &copy).unwrap();
        assert!(is_self(&copy));
        assert!(!is_self(Path::new("/bin/sh")));
    }
}
