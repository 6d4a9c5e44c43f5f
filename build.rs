//! Link-time settings of the `atip` binary.
//!
//! **Linking.** Settings of the `atip` binary only (libraries and tests are untouched):
//! `-z pack-relative-relocs` stores the binary's ~48,000 relative relocations as a
//! compact bitmap (DT_RELR) instead of a 1.1 MB table the dynamic loader reads on every
//! start: `atip exec` is started once per tool call, so its start-up is part of every
//! call's overhead. The binary stays position-independent. A DT_RELR binary needs
//! glibc ≥ 2.36 to run (older loaders refuse it: `GLIBC_ABI_DT_RELR not found`), so the
//! flag is used only for a native build on such a glibc; elsewhere the binary is linked
//! as usual.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target = std::env::var("TARGET").unwrap_or_default();
    let host = std::env::var("HOST").unwrap_or_default();
    if target.ends_with("-linux-gnu") && target == host && host_glibc_at_least(2, 36) {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the glibc this build script runs on (the one a native build runs on) is at
/// least `major.minor`.
fn host_glibc_at_least(major: u32, minor: u32) -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: returns a pointer to a static NUL-terminated string.
        let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
        let mut parts = version
            .to_str()
            .unwrap_or("")
            .split('.')
            .map(|p| p.parse::<u32>().unwrap_or(0));
        let found = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
        found >= (major, minor)
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        let _ = (major, minor);
        false
    }
}
