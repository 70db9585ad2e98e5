//! Outputs on a full file system: `report -o`, `compare -o` and `merge -o`
//! fail naming the flag and leave the previous file whole, with no
//! temporary file behind (every output is written beside it, synced, and
//! renamed over it). Needs a tmpfs mount (root); skips with the reason
//! otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

use benchsuite_core::testing::{Capability, skip};

mod common;

/// A 1 MiB tmpfs on a fresh directory, unmounted on drop.
struct Small {
    dir: tempfile::TempDir,
}

impl Small {
    fn mount() -> Result<Small, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "cannot mount a tmpfs (root needed): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Small { dir })
    }

    /// Fills the file system: a filler file grows until ENOSPC.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.dir.path().join("filler")).unwrap();
        let block = vec![7u8; 4096];
        while f.write_all(&block).and_then(|_| f.flush()).is_ok() {}
    }
}

impl Drop for Small {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/report/src/export/testdata/quick-pass.json")
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_full_disk_fails_naming_the_flag_and_keeps_the_old_output() {
    let fs = match Small::mount() {
        Ok(fs) => fs,
        Err(why) => {
            skip(Capability::Tmpfs, &why);
            return;
        }
    };
    let dir = fs.dir.path();
    let fixture = fixture();
    let fixture = fixture.to_str().unwrap();
    let cases: [(&str, Vec<&str>); 3] = [
        ("page.html", vec!["report", fixture, "-o"]),
        (
            "cmp.json",
            vec!["compare", fixture, fixture, "--format", "json", "-o"],
        ),
        ("fleet.json", vec!["merge", fixture, "-o"]),
    ];
    for (name, _) in &cases {
        std::fs::write(dir.join(name), "the old file").unwrap();
    }
    fs.fill();
    let before = names(dir);
    for (name, args) in &cases {
        let target = dir.join(name);
        let out = common::benchsuite(&[])
            .args(args)
            .arg(&target)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains("-o") && err.contains(name), "{name}: {err}");
        assert!(
            err.contains("No space left") || err.contains("write failed"),
            "{name}: {err}"
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "the old file",
            "{name} was touched"
        );
        assert_eq!(names(dir), before, "{name} left a file behind");
    }
}
