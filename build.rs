//! Link-time settings of the `atip` binary only (libraries and tests are untouched).
//!
//! `-z pack-relative-relocs` stores the binary's ~48,000 relative relocations as a
//! compact bitmap (DT_RELR, glibc ≥ 2.36, binutils ≥ 2.38) instead of a 1.1 MB table the
//! dynamic loader reads on every start: `atip exec` is started once per tool call, so
//! its start-up is part of every call's overhead. The binary stays position-independent.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    if target.ends_with("-linux-gnu") {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
