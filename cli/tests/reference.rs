//! `benchsuite reference` end to end, against stand-in tools (shell
//! scripts on PATH), so it runs where no reference tool is installed.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

#[path = "../../tests/schema.rs"]
mod schema;
use schema::assert_valid_report;

/// Two rounds of short samples, no progress lines.
const QUICK: [&str; 9] = [
    "--rounds",
    "2",
    "--runs",
    "3",
    "--min-sample-time",
    "1ms",
    "--warmup",
    "1ms",
    "--no-progress",
];

/// `benchsuite reference cpu.prime` (small, fast) with PATH = `path`.
fn reference(path: &Path, dir: &Path) -> serde_json::Value {
    let out = dir.join("ref.json");
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .args(["reference", "cpu.prime", "--param", "max_prime=200"])
        .args(QUICK)
        .arg("-o")
        .arg(&out)
        .env("PATH", path)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(stdout.contains("benchsuite vs reference tools"), "{stdout}");
    let text = std::fs::read_to_string(&out).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    // With a ratio, the rounds' lowest and highest beside it: `566.50
    // (564.42-568.57)`.
    let r = &v["records"][0]["reference"];
    if let Some(ratio) = r["ratio"].as_f64() {
        let per: Vec<f64> = r["round_ratios"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        let lo = per.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = per.iter().copied().fold(0.0, f64::max);
        let shown = format!("{ratio:.2} ({lo:.2}-{hi:.2})");
        assert!(stdout.contains(&shown), "{shown} not in {stdout}");
    }
    assert_valid_report(&v);
    v
}

#[test]
fn a_stand_in_sysbench_is_run_each_round_and_compared() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("sysbench");
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sysbench 9.9'; exit 0; fi\n\
         echo \"args: $*\" >> \"${0%/*}/calls\"\n\
         printf 'CPU speed:\\n    events per second:  1000.50\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let v = reference(dir.path(), dir.path());
    let rec = &v["records"][0];
    assert_eq!(rec["status"], "ok");
    let r = &rec["reference"];
    assert_eq!(r["tool"], "sysbench");
    assert_eq!(r["version"], "sysbench 9.9");
    assert_eq!(
        r["command"],
        "sysbench cpu --cpu-max-prime=200 --threads=1 --time=4 run"
    );
    assert_eq!(r["rounds"], serde_json::json!([1000.5, 1000.5]));
    assert_eq!(r["median"], 1000.5);
    assert_eq!(r["unit"], "event/s");
    let ratio = r["ratio"].as_f64().unwrap();
    // Each round's own ratio: our round's median against the tool's round
    // beside it; the ratio is their median (of two: their mean).
    let per: Vec<f64> = r["round_ratios"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(per.len(), 2, "{r}");
    assert!(
        (ratio - (per[0] + per[1]) / 2.0).abs() < 1e-9 * ratio,
        "{per:?} {ratio}"
    );
    let samples: Vec<f64> = rec["metrics"][0]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for (round, want) in samples.chunks(3).zip(&per) {
        let mut round = round.to_vec();
        round.sort_by(f64::total_cmp);
        let got = round[1] / 1000.5;
        assert!((got - want).abs() < 1e-9 * want, "{got} vs {want}");
    }
    // Ours ran as many rounds as the tool: pooled, 3 samples each.
    assert_eq!(rec["metrics"][0]["rounds"], serde_json::json!([3, 3]));
    let calls = std::fs::read_to_string(dir.path().join("calls")).unwrap();
    assert_eq!(calls.lines().count(), 2, "{calls}");
    assert_eq!(v["config"]["rounds"], 2);
}

#[test]
fn a_missing_tool_names_its_package() {
    let dir = tempfile::tempdir().unwrap();
    let v = reference(dir.path(), dir.path());
    let r = &v["records"][0]["reference"];
    assert_eq!(r["median"], serde_json::Value::Null);
    assert_eq!(r["ratio"], serde_json::Value::Null);
    let note = r["note"].as_str().unwrap();
    assert!(
        note.starts_with("not installed: apt install sysbench"),
        "{note}"
    );
}

/// A disk point: both sides use one file the reference runner lays out
/// (ours in place, the stand-in fio by its path), and nothing is left in
/// the scratch directory afterwards. A writing point writes over that file
/// (ours is allowed to overwrite it and nothing else). `sub`: the scratch
/// directory is one of that name in a temporary directory (made first).
/// Returns the `--filename` values the stand-in fio was given, as given.
fn one_file_on_both_sides(op: &str, sub: Option<&str>) -> Vec<String> {
    let bin = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let scratch = match sub {
        Some(s) => tmp.path().join(s),
        None => tmp.path().to_path_buf(),
    };
    std::fs::create_dir_all(&scratch).unwrap();
    let tool = bin.path().join("fio");
    // Records, for each run, the `--filename` value as given (`given`)
    // and the file it names to fio (`\:` is a `:`) with that file's size
    // (`calls`).
    std::fs::write(
        &tool,
        r#"#!/bin/sh
if [ "$1" = --version ]; then echo 'fio-9.9'; exit 0; fi
for a in "$@"; do case "$a" in --filename=*) raw="${a#--filename=}";; esac; done
printf '%s\n' "$raw" >> "${0%/*}/given"
f=$(printf '%s' "$raw" | sed 's/\\:/:/g')
echo "$f $(wc -c < "$f")" >> "${0%/*}/calls"
echo '{"jobs":[{"read":{"bw_bytes":1000000,"iops":15.0},"write":{"bw_bytes":0,"iops":0}}]}'
"#,
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = bin.path().join("ref.json");
    let path = format!("{}:/usr/bin:/bin", bin.path().display());
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .args([
            "reference",
            "disk.io",
            "--param",
            &format!("op={op}"),
            "--param",
            "block=64K",
            "--param",
            "size=4M",
            "--param",
            "engine=sync",
        ])
        .args(QUICK)
        .arg("--scratch-dir")
        .arg(&scratch)
        .arg("-o")
        .arg(&out)
        .env("PATH", &path)
        .output()
        .expect("the binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_valid_report(&v);
    let rec = &v["records"][0];
    assert_eq!(rec["status"], "ok", "{rec}");
    // The record keeps the point as asked.
    assert_eq!(rec["params"]["dir"], "auto");
    assert_eq!(rec["params"]["op"], op);
    let calls = std::fs::read_to_string(bin.path().join("calls")).unwrap();
    let runs: Vec<(&str, &str)> = calls.lines().map(|l| l.rsplit_once(' ').unwrap()).collect();
    assert_eq!(runs.len(), 2, "{calls}");
    let file = runs[0].0;
    // One file for both rounds, 4 MiB of data, in a private directory of
    // the scratch directory.
    assert!(runs.iter().all(|r| r == &(file, "4194304")), "{calls}");
    assert!(
        file.starts_with(&scratch.display().to_string()) && file.contains("benchsuite-ref-"),
        "{file}"
    );
    // Ours used that file in place: its notes name it.
    let notes = rec["notes"].to_string();
    assert!(notes.contains(file), "{file} not in {notes}");
    let note = rec["reference"]["note"].as_str().unwrap();
    assert!(note.contains("both sides use one file of 4MiB"), "{note}");
    // Random points compare IOPS, sequential ones bandwidth.
    let each = if op.starts_with("rand") { 15.0 } else { 1e6 };
    assert_eq!(rec["reference"]["rounds"], serde_json::json!([each, each]));
    // The grant was for the reference's own rounds: the report's options
    // do not carry it.
    assert!(
        !v["config"].to_string().contains("allow-overwrite"),
        "{}",
        v["config"]
    );
    let left: Vec<_> = std::fs::read_dir(&scratch).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    std::fs::read_to_string(bin.path().join("given"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_disk_read_point_reads_one_file_on_both_sides_and_leaves_nothing() {
    one_file_on_both_sides("read", None);
}

#[test]
fn a_disk_write_point_writes_over_one_file_on_both_sides_and_leaves_nothing() {
    one_file_on_both_sides("randwrite", None);
}

/// fio splits `--filename` at a `:`: in a scratch directory named with
/// one (`runs/2025-01-01T10:00`), fio is given the shared file's path with
/// the `:` escaped, the name it reads is that file, and nothing is made
/// beside the scratch directory.
#[test]
fn a_colon_in_the_scratch_directory_reaches_fio_escaped() {
    let given = one_file_on_both_sides("write", Some("runs/2025-01-01T10:00"));
    assert_eq!(given.len(), 2, "{given:?}");
    for g in &given {
        assert!(
            g.contains(r"/runs/2025-01-01T10\:00/benchsuite-ref-"),
            "{g}"
        );
        assert_eq!(g.matches(':').count(), g.matches(r"\:").count(), "{g}");
    }
}

/// The real fio, end to end, writing in a scratch directory whose name
/// holds a colon, given relative to the working directory as a user types
/// it: fio writes the shared file inside it and nothing anywhere else
/// (unescaped, it was aimed at `runs/2025-01-01T10` and a relative
/// `00/...`).
#[test]
fn fio_writes_only_inside_a_scratch_directory_named_with_a_colon() {
    if Command::new("fio").arg("--version").output().is_err() {
        benchsuite_core::testing::skip(
            benchsuite_core::testing::Capability::Fio,
            "fio is not on PATH",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(work.path().join("runs/2025-01-01T10:00")).unwrap();
    let report = out.path().join("ref.json");
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .current_dir(work.path())
        .args([
            "reference",
            "disk.io",
            "--param",
            "op=write",
            "--param",
            "block=64K",
            "--param",
            "size=4M",
            "--param",
            "engine=sync",
            "--param",
            "direct=false",
            "--rounds",
            "1",
            "--runs",
            "3",
            "--warmup",
            "1ms",
            "--no-progress",
            "--scratch-dir",
            "runs/2025-01-01T10:00",
            "-o",
        ])
        .arg(&report)
        .output()
        .expect("the binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let r = &v["records"][0]["reference"];
    assert_eq!(
        r["rounds"].as_array().map(Vec::len),
        Some(1),
        "fio failed: {r}"
    );
    assert!(r["command"].as_str().unwrap().contains(r"10\:00/"), "{r}");
    // Nothing but the scratch directory, empty, in the working directory.
    let mut all = Vec::new();
    let mut stack = vec![work.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            all.push(p.strip_prefix(work.path()).unwrap().display().to_string());
        }
    }
    all.sort();
    assert_eq!(all, ["runs", "runs/2025-01-01T10:00"], "{all:?}");
}

/// A run that fails (here killed while the tool runs) before it wrote its
/// report leaves no file at `-o`: the check before measuring creates none.
#[test]
fn a_run_killed_before_its_report_leaves_no_file_at_o() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("sysbench");
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sysbench 9.9'; exit 0; fi\n\
         echo $$ > \"${0%/*}/pid.tmp\" && mv \"${0%/*}/pid.tmp\" \"${0%/*}/pid\"\nexec sleep 60\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.path().join("new.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .args(["reference", "cpu.prime", "--param", "max_prime=200"])
        .args(QUICK)
        .arg("-o")
        .arg(&out)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.path().display()))
        // The tool's private directory, which a SIGKILL leaves, goes with
        // the test's.
        .env("TMPDIR", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The tool runs after our first round, long after the check of `-o`.
    let pid_file = dir.path().join("pid");
    let t0 = std::time::Instant::now();
    while !pid_file.exists() {
        assert!(t0.elapsed().as_secs() < 60, "the stand-in tool never ran");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no report written
    child.wait().unwrap();
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let _ = Command::new("kill").arg(pid.trim()).status();
    assert!(
        !out.exists(),
        "{} was left behind ({:?})",
        out.display(),
        std::fs::read_to_string(&out)
    );
}

/// `python3 -c` puts its working directory first on `sys.path`: run from a
/// directory holding `torch.py` and `cupy.py`, the GPU references imported
/// those (twice each: the version probe and the round; the report said
/// `"version": "torch hijack"`), and a relative `PATH` entry could name
/// another `python3`. Python now runs isolated (`-I`) in a private
/// directory, found in `PATH`'s absolute directories only: none of the
/// planted files runs, with or without a GPU, torch or CuPy here.
#[test]
fn a_torch_py_in_the_working_directory_is_never_imported() {
    if Command::new("python3").arg("--version").output().is_err() {
        benchsuite_core::testing::skip(
            benchsuite_core::testing::Capability::Python3,
            "python3 is not on PATH",
        );
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let marker = work.path().join("marker");
    for m in ["torch", "cupy"] {
        std::fs::write(
            work.path().join(format!("{m}.py")),
            format!(
                "open({:?}, 'a').write('{m} imported\\n')\n__version__ = 'hijack'\n",
                marker.to_str().unwrap()
            ),
        )
        .unwrap();
    }
    // A python3 in a directory named relative to the working directory,
    // first on PATH.
    std::fs::create_dir(work.path().join("bin")).unwrap();
    let fake = work.path().join("bin/python3");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\necho 'python3 from a relative PATH entry' >> {:?}\nexit 1\n",
            marker.to_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("bin:{}", std::env::var("PATH").unwrap_or_default());
    let out = tempfile::tempdir().unwrap();
    let report = out.path().join("ref.json");
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .current_dir(work.path())
        .env("PATH", path)
        .env("PYTHONPATH", work.path())
        .args([
            "reference",
            "gpu.matmul",
            "gpu.latency",
            "--param",
            "n=64",
            "--param",
            "op=launch",
            "--rounds",
            "1",
            "--runs",
            "3",
            "--warmup",
            "1ms",
            "--min-sample-time",
            "1ms",
            "--no-progress",
            "-o",
        ])
        .arg(&report)
        .output()
        .expect("the binary runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !marker.exists(),
        "a planted file ran: {}",
        std::fs::read_to_string(&marker).unwrap_or_default()
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let records = v["records"].as_array().unwrap();
    assert_eq!(records.len(), 2, "{v}");
    for r in records {
        let r = &r["reference"];
        assert_eq!(r["tool"], "python3", "{r}");
        assert!(!r.to_string().contains("hijack"), "{r}");
        assert!(
            r["command"].as_str().unwrap().starts_with("python3 -I -c "),
            "{r}"
        );
    }
    // Nothing left in the working directory but what the test made.
    let mut left: Vec<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["bin", "cupy.py", "torch.py"]);
}

/// `--until`: past `--rounds` while the round ratios' interval is wider
/// than asked, at most `--max-rounds`; the note says how narrow it got.
#[test]
fn until_goes_on_past_the_rounds_until_the_ratio_is_known_or_the_most_rounds() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("sysbench");
    // A tool whose every round differs a lot (1000, 2000, 1000, 2000...):
    // the interval cannot narrow to 0.1%.
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sysbench 9.9'; exit 0; fi\n\
         n=$(cat \"${0%/*}/n\" 2>/dev/null || echo 0); n=$((n+1)); echo $n > \"${0%/*}/n\"\n\
         printf 'CPU speed:\\n    events per second:  %d\\n' $(( (n % 2 + 1) * 1000 ))\n",
    )
    .unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    let run = |until: &str, most: &str| -> serde_json::Value {
        let _ = std::fs::remove_file(dir.path().join("n"));
        let out = dir.path().join("until.json");
        let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
            .args(["reference", "cpu.prime", "--param", "max_prime=200"])
            .args(QUICK)
            .args(["--until", until, "--max-rounds", most, "-o"])
            .arg(&out)
            .env("PATH", dir.path())
            .output()
            .expect("the binary runs");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap()
    };
    let v = run("0.1%", "5");
    let r = &v["records"][0]["reference"];
    assert_eq!(r["rounds"].as_array().unwrap().len(), 5, "{r}");
    let note = r["note"].as_str().unwrap();
    assert!(
        note.contains("still ±") && note.contains("after 5 rounds"),
        "{note}"
    );
    // A steady tool and a loose target: it stops as soon as the interval
    // is narrow enough (our own rounds' noise decides when), and the note
    // says after how many.
    std::fs::write(
        &tool,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'sysbench 9.9'; exit 0; fi\n\
         printf 'CPU speed:\\n    events per second:  1000\\n'\n",
    )
    .unwrap();
    let v = run("±95%", "5");
    let r = &v["records"][0]["reference"];
    let n = r["rounds"].as_array().unwrap().len();
    let note = r["note"].as_str().unwrap();
    assert!((3..=5).contains(&n), "{r}");
    assert!(
        note.starts_with(&format!("{n} rounds, until"))
            || (n == 5 && note.contains("after 5 rounds")),
        "{r}"
    );
    // Bad values name the flag.
    let o = Command::new(env!("CARGO_BIN_EXE_benchsuite"))
        .args(["reference", "cpu.prime", "--until", "150%"])
        .env("PATH", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--until"));
}
