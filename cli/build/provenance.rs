//! Which source revision a build is made from (`git describe --always
//! --dirty --abbrev=12`), and what the build script watches so that the
//! answer stays true. Shared by `build.rs` and `tests/provenance.rs`.
//!
//! - Only this project's checkout counts: the git top level must hold this
//!   very manifest as `cli/Cargo.toml`. A package from crates.io unpacked
//!   (or vendored) inside another repository gets no revision rather than
//!   that repository's.
//! - A git worktree (where `.git` is a file) is read through git itself
//!   (`--absolute-git-dir`, `--git-common-dir`), so its `HEAD` and index
//!   are watched where they are.
//! - The workspace's sources are watched too: an edit reruns the script,
//!   and the revision says `-dirty`; so does a new source file git does
//!   not ignore (`git describe --dirty` sees tracked files only).

use std::path::{Path, PathBuf};
use std::process::Command;

/// What [`provenance`] found.
#[derive(Debug, Default)]
pub struct Provenance {
    /// The revision (`0123456789ab`, `v0.1.0-3-g0123456789ab-dirty`), or
    /// `None` where the sources are not this project's git checkout.
    pub commit: Option<String>,
    /// Files and directories whose change gives another answer: the
    /// checkout's `HEAD`, index, refs and packed refs, and the workspace's
    /// sources (`Cargo.toml`, `Cargo.lock`, `cli`, `crates`).
    pub watch: Vec<PathBuf>,
}

/// `git ARGS` run in `dir`: its trimmed output, if it succeeded. Git's
/// variables that would point it elsewhere are removed, and it takes no
/// optional lock (`git describe --dirty` would otherwise rewrite the
/// index it is watched for, and the script would run on every build).
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!text.is_empty()).then_some(text)
}

/// The provenance of the package whose manifest is in `manifest_dir`.
pub fn provenance(manifest_dir: &Path) -> Provenance {
    let Some(top) = git(manifest_dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from) else {
        return Provenance::default();
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(
        &top.join("cli/Cargo.toml"),
        &manifest_dir.join("Cargo.toml"),
    ) {
        return Provenance::default();
    }
    let mut commit = git(
        manifest_dir,
        &["describe", "--always", "--dirty", "--abbrev=12"],
    );
    // `--dirty` sees tracked files only: a new source file git does not
    // ignore (a module added but not committed) is built in too.
    let untracked = git(
        &top,
        &[
            "ls-files",
            "--others",
            "--exclude-standard",
            "--",
            "Cargo.toml",
            "Cargo.lock",
            "cli",
            "crates",
        ],
    );
    if let Some(c) = &mut commit
        && !c.ends_with("-dirty")
        && untracked.is_some()
    {
        c.push_str("-dirty");
    }
    let mut watch = Vec::new();
    if let Some(dir) = git(manifest_dir, &["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) {
        watch.extend([dir.join("HEAD"), dir.join("index")]);
    }
    // Relative to `manifest_dir` where git is too old for
    // `--path-format=absolute` (before 2.31).
    if let Some(common) = git(manifest_dir, &["rev-parse", "--git-common-dir"]) {
        let common = manifest_dir.join(common);
        watch.extend([common.join("refs"), common.join("packed-refs")]);
    }
    watch.extend(["Cargo.toml", "Cargo.lock", "cli", "crates"].map(|p| top.join(p)));
    watch.retain(|p| p.exists());
    Provenance { commit, watch }
}
