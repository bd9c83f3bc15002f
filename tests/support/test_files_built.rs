//! Shared by the `tests/scenarios.rs` of the engine, broker and mirror crates (included with
//! `#[path]`; a file in a subdirectory of `tests/` is not a test target of its own).

/// The `tests/*.rs` files of the crate at `crate_dir` that nothing builds: neither a `mod` line
/// of `scenarios` (that crate's `tests/scenarios.rs`) nor a `[[test]]` path of `manifest` (its
/// `Cargo.toml`). Those crates set `autotests = false`, so such a file would silently never run.
pub fn unbuilt(crate_dir: &str, scenarios: &str, manifest: &str) -> Vec<String> {
    let dir = std::path::Path::new(crate_dir).join("tests");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        let module = format!("\nmod {stem};\n");
        let binary = format!("path = \"tests/{name}\"");
        if stem != "scenarios" && !scenarios.contains(&module) && !manifest.contains(&binary) {
            missing.push(name);
        }
    }
    missing.sort();
    missing
}
