//! `disk.io`'s reference: the fio command line that runs the same point
//! (`benchsuite reference disk.io`).

use benchsuite_core::reference::{REFERENCE_SECS, Reference};
use benchsuite_core::{Context, Point};

use crate::settings::{EngineKind, Fsync, Op, Settings};
use crate::target::{self, Phase, Target};

/// The fio command for a point, or None where fio has no equivalent
/// (`verify=on`, `fsync=end`, a write to an existing file or device in
/// place: the reference never overwrites what it did not create).
pub fn reference(ctx: &Context, point: &Point) -> Option<Reference> {
    let s = Settings::from_point(point).ok()?;
    if s.verify || s.fsync == Fsync::End {
        return None;
    }
    let target = target::examine(ctx, &s, Phase::Plan).ok()?;
    if matches!(&target, Target::InPlace(t) if t.writes) {
        return None;
    }
    Some(command(&s, &target))
}

/// The scratch file fio lays out for job `job`, in the private directory
/// it runs in ([`Reference::scratch_in`]).
const SCRATCH_FILE: &str = "benchsuite-reference-fio";

fn command(s: &Settings, target: &Target) -> Reference {
    let rw = match s.op {
        Op::Read => "read",
        Op::Write => "write",
        Op::RandRead => "randread",
        Op::RandWrite => "randwrite",
        Op::RandRw => "randrw",
    };
    let (engine, depth) = match s.engine {
        EngineKind::IoUring => ("io_uring", s.qd),
        EngineKind::Sync => ("psync", 1),
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
    if s.op.random() {
        // Ours draws offsets uniformly, with repeats; fio's default random
        // map visits every block once per pass.
        a.push("--norandommap".into());
    }
    if let Fsync::Every(n) = s.fsync {
        a.push(format!("--fsync={n}"));
    }
    let mut scratch_in = None;
    match target {
        Target::Dir(dir) => {
            // fio runs in a private directory made in `dir` (the disk
            // under test), its files named relative to it.
            a.push(format!("--size={}", s.size));
            if s.threads == 1 {
                a.push(format!("--filename={SCRATCH_FILE}.0"));
            } else {
                // One file per job, as ours has one per thread.
                a.push(format!("--filename_format={SCRATCH_FILE}.$jobnum"));
            }
            scratch_in = Some(dir.clone());
        }
        Target::InPlace(t) => {
            // Reads only (a writing point in place has no reference): the
            // same regions of the same file or device as ours.
            a.push(format!("--filename={}", t.path.display()));
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
    let (metric, parse): (&'static str, benchsuite_core::reference::ParseFn) = if s.op.random() {
        ("iops", parse_iops)
    } else {
        ("bandwidth", parse_bandwidth)
    };
    let mut r = Reference::new("fio", "fio", a, metric, parse);
    r.scratch_in = scratch_in;
    r
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
pub fn parse_bandwidth(out: &str) -> Result<f64, String> {
    sum(out, "bw_bytes")
}

/// I/Os per second, read and written together.
pub fn parse_iops(out: &str) -> Result<f64, String> {
    sum(out, "iops")
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
            p.set(s.name, s.default.clone());
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
                "--size=1073741824".into(),
                "--filename=benchsuite-reference-fio.0".into(),
                "--group_reporting".into(),
                "--time_based".into(),
                format!("--runtime={REFERENCE_SECS}"),
                "--output-format=json".into(),
            ]
        );
        assert_eq!(r.metric, "bandwidth");
        // In a private directory made in the one given, never a name
        // of the shared directory itself.
        assert_eq!(r.scratch_in.as_deref(), Some(dir.path()));
        assert_eq!(r.server_argv, None);
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
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        assert!(!a.contains("--directory"), "{a}");
        assert!(a.contains("--filename_format=benchsuite-reference-fio.$jobnum"));
        assert!(
            a.ends_with(".$jobnum --group_reporting --time_based --runtime=4 --output-format=json")
        );
        assert_eq!(r.metric, "iops");
        assert_eq!(r.scratch_in.as_deref(), Some(dir.path()));
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
    fn parses_fio_json() {
        let out = r#"fio: a warning
{"jobs": [{"jobname": "x", "read": {"bw_bytes": 1000, "iops": 10.5},
                             "write": {"bw_bytes": 500, "iops": 4.5}}]}"#;
        assert_eq!(parse_bandwidth(out), Ok(1500.0));
        assert_eq!(parse_iops(out), Ok(15.0));
        assert!(parse_iops("fio: error").is_err());
    }
}
