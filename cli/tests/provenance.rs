//! The build's source revision (`build/provenance.rs`, which `build.rs`
//! runs): read from this project's checkout also when it is a git
//! worktree, `-dirty` after a source is edited (the script is told to
//! watch the sources and the worktree's own `HEAD` and index), and never
//! another repository's revision for a package unpacked inside it.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../build/provenance.rs"]
mod provenance;
use provenance::provenance;

/// `git ARGS` in `dir`, which must succeed, with an identity of its own.
fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .output()
        .expect("git runs");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A repository at `dir` laid out as this project (`cli/Cargo.toml`,
/// `crates/core/src/lib.rs`), one commit in it.
fn project(dir: &Path) {
    write(
        &dir.join("cli/Cargo.toml"),
        "[package]\nname = \"benchsuite\"\n",
    );
    write(&dir.join("crates/core/src/lib.rs"), "pub fn f() {}\n");
    write(
        &dir.join("Cargo.toml"),
        "[workspace]\nmembers = [\"cli\"]\n",
    );
    git(dir, &["init", "-q"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "one"]);
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize().unwrap()
}

#[test]
fn a_worktree_gets_its_revision_and_watches_its_own_git_files_and_the_sources() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir(&repo).unwrap();
    project(&repo);
    let wt = tmp.path().join("wt");
    git(
        &repo,
        &["worktree", "add", "-q", "-b", "side", wt.to_str().unwrap()],
    );
    assert!(wt.join(".git").is_file(), "a worktree's .git is a file");

    let p = provenance(&wt.join("cli"));
    let commit = p.commit.clone().expect("a worktree has a revision");
    assert_eq!(commit.len(), 12, "{commit}");
    assert!(commit.chars().all(|c| c.is_ascii_hexdigit()), "{commit}");
    let watched: Vec<PathBuf> = p.watch.iter().map(|w| canonical(w)).collect();
    let gitdir = canonical(&repo.join(".git/worktrees/wt"));
    for want in [
        gitdir.join("HEAD"),
        gitdir.join("index"),
        canonical(&repo.join(".git/refs")),
        canonical(&wt.join("crates")),
        canonical(&wt.join("cli")),
        canonical(&wt.join("Cargo.toml")),
    ] {
        assert!(
            watched.contains(&want),
            "{} not in {watched:?}",
            want.display()
        );
    }

    // A new source file, not yet added: built in, so `-dirty` too (git
    // describe --dirty alone sees tracked files only). An ignored one is
    // not a source.
    write(&wt.join(".gitignore"), "target/\n");
    write(&wt.join("crates/core/target/x.rs"), "// built\n");
    assert_eq!(provenance(&wt.join("cli")).commit, Some(commit.clone()));
    write(&wt.join("crates/core/src/new.rs"), "pub fn h() {}\n");
    assert_eq!(
        provenance(&wt.join("cli")).commit,
        Some(format!("{commit}-dirty"))
    );
    std::fs::remove_file(wt.join("crates/core/src/new.rs")).unwrap();

    // An edited source: the script reruns (it watches `crates`) and says so.
    write(&wt.join("crates/core/src/lib.rs"), "pub fn g() {}\n");
    assert_eq!(
        provenance(&wt.join("cli")).commit,
        Some(format!("{commit}-dirty"))
    );
}

#[test]
fn a_package_inside_another_repository_has_no_revision() {
    let tmp = tempfile::tempdir().unwrap();
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    write(&other.join("README"), "someone else's project\n");
    // As `cargo vendor` or an unpacked crate would lay it out: the
    // package's own manifest at its root, tracked by their repository.
    let pkg = other.join("vendor/benchsuite-0.1.0");
    write(
        &pkg.join("Cargo.toml"),
        "[package]\nname = \"benchsuite\"\n",
    );
    write(&pkg.join("src/lib.rs"), "pub fn f() {}\n");
    git(&other, &["init", "-q"]);
    git(&other, &["add", "."]);
    git(&other, &["commit", "-q", "-m", "theirs"]);

    let p = provenance(&pkg);
    assert_eq!(p.commit, None, "their revision");
    assert!(p.watch.is_empty(), "{:?}", p.watch);

    // Their repository laid out with a `cli/Cargo.toml` of its own is
    // still not this package.
    write(
        &other.join("cli/Cargo.toml"),
        "[package]\nname = \"benchsuite\"\n",
    );
    assert_eq!(provenance(&pkg).commit, None);
    // And no repository at all: nothing.
    let bare = tmp.path().join("bare");
    write(
        &bare.join("Cargo.toml"),
        "[package]\nname = \"benchsuite\"\n",
    );
    assert_eq!(provenance(&bare).commit, None);
}
