//! Says what this binary is built from, for `benchsuite --version` and
//! every report's `host.build`: its Cargo features, its profile, and the
//! source revision where the sources are this project's git checkout
//! (`git describe --always --dirty`; nothing where git or the checkout is
//! absent, as in a crate downloaded from crates.io, also one unpacked
//! inside another repository): see `build/provenance.rs`.

#[path = "build/provenance.rs"]
mod provenance;

/// Features that only choose which modules and commands a build has (the
/// default set, `fleet` that `cli` brings, `testing`): they change no
/// number, and a report's records say which benchmarks ran. Not shown, so
/// the default build says `none`; the others are (`wgpu`: a GPU backend).
const CHOOSE_ONLY: &[&str] = &[
    "default", "cli", "os", "cpu", "mem", "disk", "net", "gpu", "fleet", "testing",
];

fn main() {
    let features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| k.strip_prefix("CARGO_FEATURE_").map(str::to_lowercase))
        .filter(|f| !CHOOSE_ONLY.contains(&f.as_str()))
        .map(|f| f.replace('_', "-"))
        .collect();
    let profile = std::env::var("PROFILE").unwrap_or_else(|_| "unknown".into());
    let found = provenance::provenance(std::path::Path::new(env!("CARGO_MANIFEST_DIR")));
    let commit = found.commit;
    println!("cargo:rustc-env=BENCHSUITE_FEATURES={}", features.join(","));
    println!(
        "cargo:rustc-env=BENCHSUITE_COMMIT={}",
        commit.clone().unwrap_or_default()
    );
    // One line each: `--version` joins them (cargo reads one per line).
    println!(
        "cargo:rustc-env=BENCHSUITE_FEATURES_SHOWN={}",
        if features.is_empty() {
            "none".to_string()
        } else {
            features.join(", ")
        }
    );
    println!("cargo:rustc-env=BENCHSUITE_PROFILE={profile}");
    println!(
        "cargo:rustc-env=BENCHSUITE_COMMIT_SHOWN={}",
        commit
            .as_deref()
            .unwrap_or("unknown (not built from a git checkout)")
    );
    // A new commit, a changed index or an edited source gives another
    // revision (or `-dirty`).
    for p in &found.watch {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=build/provenance.rs");
}
