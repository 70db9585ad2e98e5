//! `disk.io`'s reference: the fio command line that runs the same point
//! (`benchsuite reference disk.io`).

use benchsuite_core::reference::{
    FILE_PLACEHOLDER, REFERENCE_SECS, Reference, SharedFile, WINDOW_SAMPLE,
};
use benchsuite_core::{Context, Point};

use crate::settings::{EngineKind, Fsync, Op, Settings};
use crate::target::{self, Phase, Target};

/// The fio command for a point, or None where fio has no equivalent
/// (`verify=on`, `fsync=end`, `rate=auto`, a write to an existing file or
/// device in place: the reference never overwrites what it did not
/// create).
pub fn reference(ctx: &Context, point: &Point) -> Option<Reference> {
    let s = Settings::from_point(point).ok()?;
    if s.verify || s.fsync == Fsync::End || s.rate_auto {
        return None;
    }
    let target = target::examine(ctx, &s, Phase::Plan).ok()?;
    if matches!(&target, Target::InPlace(t) if t.writes) {
        return None;
    }
    Some(command(&s, &target))
}

/// fio's queue depth at an open-loop point with io_uring: deep enough that
/// fio's own queue is not what limits the rate.
pub const OPEN_LOOP_FIO_DEPTH: usize = 64;

fn command(s: &Settings, target: &Target) -> Reference {
    let rw = match s.op {
        Op::Read => "read",
        Op::Write => "write",
        Op::RandRead => "randread",
        Op::RandWrite => "randwrite",
        Op::RandRw => "randrw",
    };
    let (engine, depth) = match (s.engine, s.rate) {
        (EngineKind::IoUring, None) => ("io_uring", s.qd),
        (EngineKind::IoUring, Some(_)) => ("io_uring", OPEN_LOOP_FIO_DEPTH),
        (EngineKind::Sync, _) => ("psync", 1),
    };
    let mut a: Vec<String> = vec![
        "fio".into(),
        "--name=benchsuite-reference".into(),
        format!("--rw={rw}"),
    ];
    if s.op == Op::RandRw {
        a.push(format!("--rwmixread={}", s.rwmix));
    }
    a.extend([
        format!("--bs={}", s.block),
        format!("--direct={}", u8::from(s.direct)),
        format!("--ioengine={engine}"),
        format!("--iodepth={depth}"),
        format!("--numjobs={}", s.threads),
    ]);
    // Ours registers its buffers with io_uring (READ_FIXED/WRITE_FIXED:
    // pinned once, not on every I/O) where the kernel lets it; fio does
    // that only with --fixedbufs, which fails outright where it may not
    // pin them all.
    let fixed = engine == "io_uring" && crate::sys::may_lock((depth * s.threads) as u64 * s.block);
    if fixed {
        a.push("--fixedbufs".into());
    }
    if s.op.random() {
        // Ours draws offsets uniformly, with repeats; fio's default random
        // map visits every block once per pass.
        a.push("--norandommap".into());
    }
    if let Fsync::Every(n) = s.fsync {
        a.push(format!("--fsync={n}"));
    }
    let open = s.rate.map(|rate| open_loop_args(s, rate));
    if let Some((args, _)) = &open {
        a.extend(args.iter().cloned());
    }
    let mut scratch_in = None;
    let mut shared_file = None;
    let mut unusable = None;
    match target {
        Target::Dir(dir) => {
            // Both sides use one file the reference runner lays out with
            // data in `dir` (the disk under test) before the first round:
            // ours in place as with dir=FILE, each thread its own region
            // (a writing point with `allow-overwrite` granted for that file
            // alone), fio by its path with a region per job. A file each
            // would compare two layouts of different age, which a virtual
            // disk serves at different speeds (reads: 1.3 against 2.0 GB/s;
            // 4 KiB writes: 28k IOPS on a fresh layout, 34-51k on one laid
            // out minutes earlier), and fio's own fresh file would take its
            // first writes into unwritten extents.
            a.push(format!("--filename={FILE_PLACEHOLDER}"));
            a.push(format!("--size={}", s.file_len()));
            if s.threads > 1 {
                a.push(format!("--offset_increment={}", s.file_len()));
            }
            shared_file = Some(SharedFile {
                param: "dir",
                len: s.file_len() * s.threads as u64,
                grants: if s.op.writes() {
                    vec![(
                        crate::target::ALLOW_OVERWRITE_OPTION,
                        FILE_PLACEHOLDER.to_string(),
                    )]
                } else {
                    Vec::new()
                },
            });
            scratch_in = Some(dir.clone());
        }
        Target::InPlace(t) => {
            // Reads only (a writing point in place has no reference): the
            // same regions of the same file or device as ours.
            match t.path.to_str().map(filename_arg) {
                Some(Ok(name)) => a.push(format!("--filename={name}")),
                Some(Err(e)) => {
                    unusable = Some(format!("dir={:?}: {e}", t.path));
                    a.push(format!("--filename={}", t.path.display()));
                }
                None => {
                    unusable = Some(format!(
                        "dir={:?}: fio's command line takes a UTF-8 path",
                        t.path
                    ));
                    a.push(format!("--filename={}", t.path.display()));
                }
            }
            a.push(format!("--size={}", t.region));
            if s.threads > 1 {
                a.push(format!("--offset_increment={}", t.region));
            }
        }
    }
    a.extend([
        "--group_reporting".into(),
        "--time_based".into(),
        format!("--runtime={REFERENCE_SECS}"),
        "--output-format=json".into(),
    ]);
    let (metric, parse): (&'static str, benchsuite_core::reference::ParseFn) = if open.is_some() {
        // Open loop: both sides run at the same rate; the latency
        // percentile is what differs (ours: the median of each round's
        // own p99).
        ("latency.p99", parse_latency_p99)
    } else if s.op.random() {
        ("iops", parse_iops)
    } else {
        ("bandwidth", parse_bandwidth)
    };
    let mut notes: Vec<String> = open.map(|(_, note)| note).into_iter().collect();
    if fixed {
        notes.push(FIXEDBUFS_NOTE.into());
    }
    notes.push(WINDOW_NOTE.into());
    let mut r = Reference::new("fio", "fio", a, metric, parse);
    r.sample_time = Some(WINDOW_SAMPLE);
    r.scratch_in = scratch_in;
    r.shared_file = shared_file;
    r.file_arg = filename_arg;
    r.unusable = unusable;
    r.note = (!notes.is_empty()).then(|| notes.join("; "));
    r
}

/// `path` as fio's `--filename` takes it. fio reads that option as a list
/// of names separated by `:` (`/dev/sda:/dev/sdb`), a `\:` standing for a
/// `:` within a name, with blanks stripped at both ends: an unescaped
/// `dir=runs/2025-01-01T10:00` aimed fio at `runs/2025-01-01T10` and a
/// relative `00/...`. Every `:` is escaped (a `\` elsewhere is literal to
/// fio, and one before a `:` comes out whole: fio removes only the
/// escaping one). A path fio would still read as another name is refused:
/// one with a control character (a newline), one that starts or ends with
/// a blank.
pub fn filename_arg(path: &str) -> Result<String, benchsuite_core::ValueError> {
    filename_arg_text(path).map_err(Into::into)
}

fn filename_arg_text(path: &str) -> Result<String, String> {
    if let Some(c) = path.chars().find(|c| c.is_control()) {
        return Err(format!(
            "fio's command line cannot take a file name holding the control character {c:?}"
        ));
    }
    if path.starts_with(' ') || path.ends_with(' ') {
        return Err(
            "fio strips the blanks at either end of a file name, so it would use another file"
                .into(),
        );
    }
    if path.is_empty() || path == "-" {
        return Err(format!(
            "fio reads the file name {path:?} as no file or as its standard input or output"
        ));
    }
    Ok(path.replace(':', "\\:"))
}

/// Why ours samples longer at a fio point.
const WINDOW_NOTE: &str = "benchsuite's samples last 0.8 s here, so that a round of five spans fio's 4 s and each side moves as much data as the other: with 10 ms samples ours wrote a twentieth of fio's data per round and always right after fio's burst (1 MiB writes at qd4 on a virtio disk, 4 interleaved rounds: ours fell from 3.3 to 1.8 GB/s while fio held 2.4-2.9, ratio 1.02 (0.65-1.34); with 0.8 s samples, minutes later, ours 2.66-2.96 and fio 2.74-3.25, 0.99 (0.82-1.08))";

/// Why fio runs with `--fixedbufs`.
const FIXEDBUFS_NOTE: &str = "fio --fixedbufs: both sides register their buffers with io_uring, so neither pins its pages on every I/O (measured twice, 80 minutes apart, on a virtio disk, 1 MiB reads at qd1 from one file, 3 interleaved rounds each: fio 1.02-1.06 and 1.16-1.22 GB/s without it, 1.09-1.15 and 1.19-1.26 with it; benchsuite 1.06-1.22 and 1.26-1.32)";

/// fio's options for an open-loop point (`rate=N`), and the reference's
/// note. fio's `rate_iops` is per job (= per thread, `numjobs`) and per
/// direction, so `rate` is split across the jobs and, for `randrw`, by
/// `rwmix`; `rate_process=linear` (fio's default) spaces the I/Os evenly,
/// as our schedule does; `lat_percentiles=1` makes fio report percentiles
/// of the total latency (`lat_ns`: submission to completion).
fn open_loop_args(s: &Settings, rate: f64) -> (Vec<String>, String) {
    let per_job = rate / s.threads as f64;
    let whole = |v: f64| (v.round() as u64).max(1);
    let (rate_iops, fio_total) = if s.op == Op::RandRw && s.rwmix > 0 && s.rwmix < 100 {
        let r = whole(per_job * f64::from(s.rwmix) / 100.0);
        let w = whole(per_job * f64::from(100 - s.rwmix) / 100.0);
        (format!("{r},{w}"), (r + w) * s.threads as u64)
    } else {
        let n = whole(per_job);
        (n.to_string(), n * s.threads as u64)
    };
    let args = vec![
        format!("--rate_iops={rate_iops}"),
        "--rate_process=linear".into(),
        "--lat_percentiles=1".into(),
    ];
    let rounded = if fio_total as f64 == rate {
        String::new()
    } else {
        format!(
            " (fio takes whole I/Os per second per job and direction: it ran {fio_total} I/O/s in all)"
        )
    };
    let depth = match s.engine {
        EngineKind::IoUring => {
            format!("fio's iodepth={OPEN_LOOP_FIO_DEPTH} so that its queue is not the limit")
        }
        EngineKind::Sync => "psync has one I/O in flight per job, as ours per thread".to_string(),
    };
    let note = format!(
        "open loop at {rate} I/O/s: fio paces with rate_iops={rate_iops} per job{rounded} and rate_process=linear, {depth}; the comparison is of p99 (fio's total latency, lat_ns, with lat_percentiles=1; ours: the median of our rounds' own p99). fio measures each I/O from its actual submission, benchsuite from its intended start on the schedule, so an I/O that waits (behind a stall, a full queue or a late wake-up) counts that wait here and not in fio: expect ours to be higher, the more so the nearer the rate is to saturation. fio's thread sleeps between I/Os; ours spins the last 1 ms before each start, so above about 1k I/O/s per thread it never sleeps: in a virtual machine whose idle vCPU halts (cpuidle haltpoll), fio's completions then wait for the vCPU to wake and its p99 can read higher than ours (measured on a 2-vCPU KVM guest at 20k/s with an 80 µs margin: ours 2.07x better; with /dev/cpu_dma_latency held at 0, so neither vCPU halts, 0.94x); the record's notes give how late our I/Os were submitted"
    );
    (args, note)
}

/// fio's JSON, which may follow a few lines of warnings.
fn json(out: &str) -> Result<serde_json::Value, String> {
    let start = out.find('{').ok_or("no JSON in fio's output")?;
    serde_json::from_str(&out[start..]).map_err(|e| format!("fio's JSON: {e}"))
}

/// Sums a field of the read and write parts of every job.
fn sum(out: &str, field: &str) -> Result<f64, String> {
    let v = json(out)?;
    let jobs = v["jobs"].as_array().ok_or("no `jobs` in fio's JSON")?;
    let mut total = 0.0;
    for job in jobs {
        for dir in ["read", "write"] {
            total += job[dir][field].as_f64().unwrap_or(0.0);
        }
    }
    if total > 0.0 {
        Ok(total)
    } else {
        Err(format!("fio reported no {field}"))
    }
}

/// Bytes per second, read and written together.
pub fn parse_bandwidth(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_bandwidth_text(out).map_err(Into::into)
}

fn parse_bandwidth_text(out: &str) -> Result<f64, String> {
    sum(out, "bw_bytes")
}

/// I/Os per second, read and written together.
pub fn parse_iops(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_iops_text(out).map_err(Into::into)
}

fn parse_iops_text(out: &str) -> Result<f64, String> {
    sum(out, "iops")
}

/// The `lat_ns` (total latency: submission to completion) of the read and
/// write parts of every job that did I/O, with their I/O counts.
fn total_latencies(out: &str) -> Result<Vec<(f64, serde_json::Value)>, String> {
    let v = json(out)?;
    let jobs = v["jobs"].as_array().ok_or("no `jobs` in fio's JSON")?;
    let mut parts = Vec::new();
    for job in jobs {
        for dir in ["read", "write"] {
            let lat = &job[dir]["lat_ns"];
            let n = lat["N"]
                .as_f64()
                .or_else(|| job[dir]["total_ios"].as_f64())
                .unwrap_or(0.0);
            if n > 0.0 {
                parts.push((n, lat.clone()));
            }
        }
    }
    if parts.is_empty() {
        return Err("fio reported no total latency (lat_ns)".into());
    }
    Ok(parts)
}

/// Mean total latency in seconds, reads and writes weighted by their
/// counts.
#[cfg_attr(not(test), allow(dead_code))]
pub fn parse_latency_mean(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_latency_mean_text(out).map_err(Into::into)
}

fn parse_latency_mean_text(out: &str) -> Result<f64, String> {
    let parts = total_latencies(out)?;
    let (mut n, mut sum) = (0.0, 0.0);
    for (count, lat) in &parts {
        let mean = lat["mean"].as_f64().ok_or("fio's lat_ns has no mean")?;
        n += count;
        sum += count * mean;
    }
    Ok(sum / n / 1e9)
}

/// The 99th percentile of the total latency in seconds (fio with
/// `--lat_percentiles=1`). With reads and writes both, the larger of the
/// two: the merged p99 lies between them, and fio does not merge them.
pub fn parse_latency_p99(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_latency_p99_text(out).map_err(Into::into)
}

fn parse_latency_p99_text(out: &str) -> Result<f64, String> {
    let parts = total_latencies(out)?;
    let mut worst: Option<f64> = None;
    for (_, lat) in &parts {
        let p = lat["percentile"]["99.000000"]
            .as_f64()
            .ok_or("fio's lat_ns has no 99th percentile (run it with --lat_percentiles=1)")?;
        worst = Some(worst.map_or(p, |w: f64| w.max(p)));
    }
    worst
        .map(|ns| ns / 1e9)
        .ok_or_else(|| "fio reported no latency percentile".into())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use benchsuite_core::{Host, Value};

    use super::*;
    use crate::settings::declare;

    fn point(over: &[(&str, Value)]) -> Point {
        let mut p = Point::default();
        for s in declare() {
            p.set(&s.name, s.default.clone());
        }
        for (k, v) in over {
            p.set(k, v.clone());
        }
        p
    }

    fn ctx(dir: &std::path::Path) -> Context {
        let mut ctx = Context::new(Arc::new(Host::default()));
        ctx.scratch_dir = dir.to_path_buf();
        ctx
    }

    fn s(v: &str) -> Value {
        Value::Str(v.into())
    }

    #[test]
    fn sequential_read_in_the_scratch_dir() {
        let dir = tempfile::tempdir().unwrap();
        let r = reference(&ctx(dir.path()), &point(&[("qd", Value::Int(4))])).unwrap();
        assert_eq!(
            r.argv,
            [
                "fio".to_string(),
                "--name=benchsuite-reference".into(),
                "--rw=read".into(),
                "--bs=1048576".into(),
                "--direct=1".into(),
                "--ioengine=io_uring".into(),
                "--iodepth=4".into(),
                "--numjobs=1".into(),
            ]
            .into_iter()
            .chain(crate::sys::may_lock(4 << 20).then(|| "--fixedbufs".to_string()),)
            .chain([
                "--filename={file}".to_string(),
                "--size=1073741824".into(),
                "--group_reporting".into(),
                "--time_based".into(),
                format!("--runtime={REFERENCE_SECS}"),
                "--output-format=json".into(),
            ])
            .collect::<Vec<_>>()
        );
        assert_eq!(r.metric, "bandwidth");
        // Both sides read one file, laid out by the reference runner in a
        // private directory made in the one given, never a name of the
        // shared directory itself; ours reads it as dir=FILE.
        assert_eq!(r.scratch_in.as_deref(), Some(dir.path()));
        assert_eq!(
            r.shared_file,
            Some(SharedFile {
                param: "dir",
                len: 1 << 30,
                grants: Vec::new(),
            })
        );
        assert_eq!(r.server_argv, None);
        // Threads read their own regions of it, as ours do in place.
        let r = reference(
            &ctx(dir.path()),
            &point(&[
                ("op", s("randread")),
                ("threads", Value::Int(3)),
                ("size", Value::Int(64 << 20)),
            ]),
        )
        .unwrap();
        let a = r.argv.join(" ");
        assert!(
            a.contains(
                "--norandommap --filename={file} --size=67108864 --offset_increment=67108864"
            ),
            "{a}"
        );
        assert!(a.contains("--numjobs=3"), "{a}");
        // A round of ours spans fio's window, and the note says so.
        assert_eq!(
            r.sample_time.map(|t| t * 5),
            Some(std::time::Duration::from_secs(REFERENCE_SECS))
        );
        assert!(r.note.as_deref().unwrap().contains("0.8 s"));
        // Registered buffers on both sides where fio may pin them; a
        // synchronous engine has none.
        assert_eq!(
            a.contains("--fixedbufs"),
            crate::sys::may_lock(3 * 4096),
            "{a}"
        );
        assert_eq!(
            r.note.as_deref().is_some_and(|n| n.contains("--fixedbufs")),
            a.contains("--fixedbufs")
        );
        assert_eq!(r.shared_file.map(|f| f.len), Some(3 * (64 << 20)));
        let r = reference(&ctx(dir.path()), &point(&[("engine", s("sync"))])).unwrap();
        assert!(!r.argv.join(" ").contains("--fixedbufs"), "{:?}", r.argv);
        // A writing point writes over the shared file: ours is allowed to
        // overwrite that one file and nothing else.
        let r = reference(&ctx(dir.path()), &point(&[("op", s("write"))])).unwrap();
        assert_eq!(
            r.shared_file.map(|f| f.grants),
            Some(vec![("allow-overwrite", "{file}".to_string())])
        );
        assert!(r.argv.contains(&"--filename={file}".to_string()));
        assert!(!r.argv.iter().any(|a| a.starts_with("--overwrite")));
    }

    /// fio splits `--filename` at every `:` not escaped as `\:`: each
    /// path handed to it is escaped, in the shared file's form (the
    /// runner substitutes it through `file_arg`) and in place, and a path
    /// it would read as another name is refused naming `dir`. Where fio is
    /// installed, fio itself parses each escaped name back to the path.
    #[test]
    fn a_colon_in_a_path_reaches_fio_escaped() {
        for (path, want) in [
            ("runs/2025-01-01T10:00/f", r"runs/2025-01-01T10\:00/f"),
            (":lead/a::b", r"\:lead/a\:\:b"),
            (r"back\:slash\x", r"back\\:slash\x"),
            ("/plain/path", "/plain/path"),
        ] {
            assert_eq!(filename_arg(path).as_deref(), Ok(want), "{path}");
        }
        for bad in ["a\nb", "tab\there", " lead", "trail ", "-", ""] {
            assert!(filename_arg(bad).is_err(), "{bad:?} accepted");
        }
        // A point in a directory: the runner writes the shared file's
        // path with fio's own rule.
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("2025-01-01T10:00");
        std::fs::create_dir(&dir).unwrap();
        let r = reference(&ctx(&dir), &point(&[])).unwrap();
        assert!(r.argv.contains(&"--filename={file}".to_string()));
        assert_eq!((r.file_arg)("a:b").as_deref(), Ok(r"a\:b"));
        // A file read in place: its path escaped in the argv.
        let file = dir.join("data");
        std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
        let p = point(&[("dir", Value::Str(file.display().to_string()))]);
        let r = reference(&ctx(&dir), &p).unwrap();
        let canon = std::fs::canonicalize(&file).unwrap();
        let want = format!("--filename={}", canon.to_str().unwrap().replace(':', r"\:"));
        assert!(r.argv.contains(&want), "{want} not in {:?}", r.argv);
        assert!(r.unusable.is_none(), "{:?}", r.unusable);
        // One with a newline in its name: not run, saying which parameter.
        let odd = parent.path().join("new\nline");
        std::fs::write(&odd, vec![1u8; 1 << 20]).unwrap();
        let p = point(&[("dir", Value::Str(odd.display().to_string()))]);
        let why = reference(&ctx(&dir), &p).unwrap().unusable.unwrap();
        assert!(
            why.starts_with("dir=") && why.contains("control character"),
            "{why}"
        );
        assert!(!why.contains('\n'), "{why:?}");

        let Ok(out) = std::process::Command::new("fio").arg("--version").output() else {
            benchsuite_core::testing::skip(
                benchsuite_core::testing::Capability::Fio,
                "fio is not on PATH: how fio parses the escaped names is not checked",
            );
            return;
        };
        assert!(out.status.success());
        for path in [
            "runs/2025-01-01T10:00/f",
            ":lead/a::b",
            r"back\:slash\x",
            "/plain/path",
        ] {
            // --parse-only: fio reads its options and opens nothing.
            let o = std::process::Command::new("fio")
                .args(["--parse-only", "--debug=file", "--name=x", "--size=1M"])
                .arg(format!("--filename={}", filename_arg(path).unwrap()))
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&o.stdout);
            let added: Vec<&str> = text
                .lines()
                .filter_map(|l| l.split_once(" add file ").map(|(_, f)| f))
                .collect();
            assert_eq!(added, [path], "{text}");
        }
    }

    #[test]
    fn random_mixed_sync_buffered_with_threads_and_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let p = point(&[
            ("op", s("randrw")),
            ("block", Value::Int(16 << 10)),
            ("rwmix", Value::Int(70)),
            ("engine", s("sync")),
            ("direct", Value::Bool(false)),
            ("qd", Value::Int(16)),
            ("threads", Value::Int(2)),
            ("size", Value::Int(64 << 20)),
            ("fsync", s("every:40")),
        ]);
        let r = reference(&ctx(dir.path()), &p).unwrap();
        let a = r.argv.join(" ");
        for want in [
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=16384",
            "--direct=0",
            "--ioengine=psync",
            "--iodepth=1",
            "--numjobs=2",
            "--norandommap",
            "--fsync=40",
            "--size=67108864",
            // Two jobs over their regions of the one shared file.
            "--filename={file}",
            "--offset_increment=67108864",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        assert!(!a.contains("--directory"), "{a}");
        assert!(
            a.ends_with("--group_reporting --time_based --runtime=4 --output-format=json"),
            "{a}"
        );
        assert_eq!(r.metric, "iops");
        assert_eq!(r.scratch_in.as_deref(), Some(dir.path()));
        assert_eq!(r.shared_file.map(|f| f.len), Some(2 * (64 << 20)));
    }

    #[test]
    fn random_read_at_depth_and_preset() {
        let dir = tempfile::tempdir().unwrap();
        let r = reference(
            &ctx(dir.path()),
            &point(&[("op", s("randread")), ("qd", Value::Int(32))]),
        )
        .unwrap();
        let a = r.argv.join(" ");
        assert!(a.contains("--rw=randread --bs=4096 --direct=1 --ioengine=io_uring --iodepth=32"));
        assert!(!a.contains("rwmixread"));
        // A read lays nothing out beyond what fio does for reads.
        assert!(!a.contains("--overwrite"));
        let r = reference(&ctx(dir.path()), &point(&[("preset", s("sysbench-rndrw"))])).unwrap();
        let a = r.argv.join(" ");
        assert!(a.contains("--rw=randrw --rwmixread=60 --bs=16384"), "{a}");
        assert!(a.contains("--fsync=40"));
        // No equivalent: verify, fsync at the end of each batch.
        assert!(reference(&ctx(dir.path()), &point(&[("verify", Value::Bool(true))])).is_none());
        assert!(reference(&ctx(dir.path()), &point(&[("fsync", s("end"))])).is_none());
    }

    #[test]
    fn an_existing_file_is_read_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("data");
        std::fs::write(&file, vec![1u8; 1 << 20]).unwrap();
        let p = point(&[
            ("dir", Value::Str(file.display().to_string())),
            ("block", Value::Int(128 << 10)),
        ]);
        let r = reference(&ctx(dir.path()), &p).unwrap();
        let canon = std::fs::canonicalize(&file).unwrap();
        let a = r.argv.join(" ");
        assert!(
            a.contains(&format!("--filename={} --size=1048576", canon.display())),
            "{a}"
        );
        assert!(
            r.scratch_in.is_none(),
            "reads in place; no directory made, nothing removed"
        );
    }

    #[test]
    fn open_loop_paces_fio_per_job_and_compares_latency() {
        let dir = tempfile::tempdir().unwrap();
        let p = point(&[
            ("op", s("randread")),
            ("threads", Value::Int(4)),
            ("rate", Value::Int(10_000)),
        ]);
        let r = reference(&ctx(dir.path()), &p).unwrap();
        let a = r.argv.join(" ");
        for want in [
            "--ioengine=io_uring --iodepth=64 --numjobs=4",
            "--rate_iops=2500 --rate_process=linear --lat_percentiles=1",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        assert_eq!(r.metric, "latency.p99");
        let note = r.note.as_deref().unwrap();
        assert!(
            note.contains("intended start") && note.contains("actual submission"),
            "{note}"
        );
        assert!(!note.contains("in all)"), "10000 splits evenly: {note}");
        // randrw: per job and per direction, by rwmix; a rate that does
        // not split into whole I/Os says what fio ran.
        let p = point(&[
            ("op", s("randrw")),
            ("rwmix", Value::Int(70)),
            ("threads", Value::Int(3)),
            ("engine", s("sync")),
            ("rate", Value::Int(1000)),
        ]);
        let r = reference(&ctx(dir.path()), &p).unwrap();
        let a = r.argv.join(" ");
        assert!(a.contains("--ioengine=psync --iodepth=1"), "{a}");
        assert!(a.contains("--rate_iops=233,100 "), "{a}");
        assert!(r.note.as_deref().unwrap().contains("it ran 999 I/O/s"));
        // Closed loop has no rate options; rate=auto has no reference.
        let r = reference(&ctx(dir.path()), &point(&[])).unwrap();
        assert!(!r.argv.join(" ").contains("rate"), "{:?}", r.argv);
        assert!(
            r.note.as_deref().is_none_or(|n| !n.contains("open loop")),
            "{:?}",
            r.note
        );
        assert!(reference(&ctx(dir.path()), &point(&[("rate", s("auto"))])).is_none());
    }

    #[test]
    fn parses_fio_total_latency() {
        let out = r#"{"jobs": [{"read": {"iops": 700, "lat_ns": {"N": 700, "mean": 100000.0,
              "percentile": {"99.000000": 250000}}},
            "write": {"iops": 300, "lat_ns": {"N": 300, "mean": 200000.0,
              "percentile": {"99.000000": 400000}}}}]}"#;
        let mean = parse_latency_mean(out).unwrap();
        assert!((mean - 130e-6).abs() < 1e-12, "{mean}");
        assert_eq!(parse_latency_p99(out), Ok(400e-6));
        // A direction without I/O is left out.
        let out = r#"{"jobs": [{"read": {"lat_ns": {"N": 10, "mean": 5000.0,
              "percentile": {"99.000000": 9000}}},
            "write": {"lat_ns": {"N": 0, "mean": 0.0}}}]}"#;
        assert_eq!(parse_latency_mean(out), Ok(5e-6));
        assert_eq!(parse_latency_p99(out), Ok(9e-6));
        assert!(parse_latency_mean(r#"{"jobs": []}"#).is_err());
    }

    #[test]
    fn parses_fio_json() {
        let out = r#"fio: a warning
{"jobs": [{"jobname": "x", "read": {"bw_bytes": 1000, "iops": 10.5},
                             "write": {"bw_bytes": 500, "iops": 4.5}}]}"#;
        assert_eq!(parse_bandwidth(out), Ok(1500.0));
        assert_eq!(parse_iops(out), Ok(15.0));
        assert!(parse_iops("fio: error").is_err());
    }
}
