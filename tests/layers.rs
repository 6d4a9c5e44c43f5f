//! The workspace's layers (spec/architecture.md): every crate depends only on the crates
//! the spec lists before it, and the spec lists every crate there is.

use std::collections::BTreeSet;
use std::path::Path;

/// The crates in the order of spec/architecture.md's table (`| 1 | `atip-base` | …`).
fn spec_order(root: &Path) -> Vec<String> {
    let spec = std::fs::read_to_string(root.join("spec/architecture.md")).unwrap();
    spec.lines()
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            (cells.len() > 3 && cells[1].parse::<u32>().is_ok())
                .then(|| cells[2].trim_matches('`').to_owned())
        })
        .collect()
}

/// The `atip-*` crates a manifest's `[dependencies]` (and build-dependencies) name.
fn atip_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut section = "";
    let mut deps = BTreeSet::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line;
        } else if matches!(section, "[dependencies]" | "[build-dependencies]")
            && line.starts_with("atip-")
        {
            deps.insert(line.split(['=', ' ']).next().unwrap().to_owned());
        }
    }
    deps
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let order = spec_order(root);
    assert_eq!(order.last().map(String::as_str), Some("atip"), "{order:?}");
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    on_disk.insert("atip".into());
    let listed: BTreeSet<String> = order.iter().cloned().collect();
    assert_eq!(
        listed, on_disk,
        "spec/architecture.md must list every crate"
    );
    for (i, name) in order.iter().enumerate() {
        let manifest = if name == "atip" {
            root.join("Cargo.toml")
        } else {
            root.join("crates").join(name).join("Cargo.toml")
        };
        let deps = atip_dependencies(&std::fs::read_to_string(&manifest).unwrap());
        for dep in &deps {
            let at = order.iter().position(|o| o == dep).unwrap_or_else(|| {
                panic!("{name} depends on {dep}, which spec/architecture.md does not list")
            });
            assert!(
                at < i,
                "{name} (layer {}) depends on {dep} (layer {})",
                i + 1,
                at + 1
            );
        }
    }
}

#[test]
fn a_dependency_that_points_up_is_caught() {
    let deps = atip_dependencies(
        "[package]\nname = \"x\"\n\n[dependencies]\natip-exec = { path = \"../atip-exec\" }\nserde = \"1\"\n\n[dev-dependencies]\natip-mcp = { path = \"../atip-mcp\" }\n",
    );
    assert_eq!(
        deps.into_iter().collect::<Vec<_>>(),
        vec!["atip-exec".to_owned()]
    );
}
