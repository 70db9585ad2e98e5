//! The reference tools of the OS benchmarks, for `benchsuite reference`:
//! `perf bench syscall basic` for `os.syscall call=getppid`, `perf bench
//! sched pipe` for `os.context_switch`.

use benchsuite_core::Point;
use benchsuite_core::reference::{Reference, argv};

/// Debian's package for `perf`.
const PERF_PACKAGE: &str = "linux-perf";

/// `taskset -c CPU perf bench syscall basic -l LOOPS` for `call=getppid`
/// (its getppid() loop), with ours pinned to the same CPU (`same_cpu`, the
/// first of `allowed`): the two vCPUs of a virtual machine can differ in
/// speed for minutes at a time (measured: 202–210 ns on one, 280–288 ns on
/// the other), and an unpinned pair compares where each side landed. None
/// for `call=write_devnull`, which perf has no bench for.
pub fn syscall(point: &Point, allowed: &[usize]) -> Option<Reference> {
    if point.get("call")?.as_str()? != "getppid" {
        return None;
    }
    let cpu = *allowed.first()?;
    let mut a = argv(["taskset", "-c", &cpu.to_string()]);
    a.extend(argv([
        "perf", "bench", "syscall", "basic", "-l", "10000000",
    ]));
    let mut r = Reference::new("perf", PERF_PACKAGE, a, "time_per_op", |out| {
        usecs_per_op(out).map(|us| us * 1e-6)
    });
    r.version_argv = argv(["perf", "--version"]);
    r.same_cpu = Some(cpu);
    r.note = Some(format!(
        "both sides on CPU {cpu}: perf under taskset, ours pinned there for its rounds"
    ));
    Some(r)
}

/// `[taskset -c CPUS] perf bench sched pipe [-T] -l LOOPS`: `-T` for
/// `mode=thread`; `cpus=same` → `taskset -c A`, `cpus=different` →
/// `taskset -c A,B` (perf cannot pin each end to its own CPU, so the two
/// ends may share one: the record says so). `allowed` are the CPUs this
/// process may use, lowest first. perf reports a round trip, which is two
/// switches: its number is halved.
pub fn context_switch(point: &Point, allowed: &[usize]) -> Option<Reference> {
    let mut a = Vec::new();
    let mut note = None;
    let mut sample_time = None;
    match (point.get("cpus")?.as_str()?, allowed) {
        ("any", _) => {
            // The scheduler keeps both ends on one CPU or on two for
            // stretches (2.6 against 20 µs per switch on a 2-vCPU guest):
            // perf reports the average over its whole run, so ours
            // samples a second at a time rather than 10 ms.
            sample_time = Some(std::time::Duration::from_secs(1));
            note = Some("cpus=any: the scheduler keeps both ends on one CPU or on two for stretches, and a short sample catches one of them; perf reports one average over its whole run, so benchsuite's samples last 1 s here to average the same way. The split between the two states is the host's: on one 2-vCPU KVM guest, runs hours apart gave perf 19.8-28.9 µs per switch and benchsuite 20.7-29.1 µs, ratios 0.86 to 1.19, each tool spreading more between runs than the two differed within one (sched_switch traces of three pairs: perf's two processes handed a CPU straight to each other in 5.4-19.5% of their switches, benchsuite's in 7.0-7.2%, the rest went through an idle vCPU and a cross-CPU wake-up). A third task waking now and then moves the split: a 50 Hz sleeper made both tools 6-16% faster, and while benchsuite polled for the tool's exit every 20 ms perf had one beside it (ratios 0.84-0.93); the wait now sleeps until the tool exits (ratios 0.97 and 1.03). Compare cpus=same or cpus=different for code".to_string());
        }
        ("same", [c, ..]) => a.extend(argv(["taskset", "-c", &c.to_string()])),
        ("different", [c, d, ..]) => {
            a.extend(argv(["taskset", "-c", &format!("{c},{d}")]));
            note = Some(format!(
                "perf bench sched pipe cannot pin each end to its own CPU: taskset -c {c},{d} lets the scheduler put both on one"
            ));
        }
        _ => return None,
    }
    a.extend(argv(["perf", "bench", "sched", "pipe"]));
    if point.get("mode")?.as_str()? == "thread" {
        a.push("-T".into());
    }
    a.extend(argv(["-l", "1000000"]));
    let mut r = Reference::new("perf", PERF_PACKAGE, a, "time_per_op", |out| {
        usecs_per_op(out).map(|us| us * 1e-6 / 2.0)
    });
    r.version_argv = argv(["perf", "--version"]);
    r.note = note;
    r.sample_time = sample_time;
    Some(r)
}

/// The number before `usecs/op` in `perf bench` output.
fn usecs_per_op(out: &str) -> Result<f64, benchsuite_core::ValueError> {
    out.lines()
        .find(|l| l.contains("usecs/op"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|w| w.parse::<f64>().ok())
        .ok_or_else(|| "no `usecs/op` in perf bench's output".into())
}

/// A point's parameters from their defaults, some overridden.
#[cfg(test)]
fn point(b: &dyn benchsuite_core::Benchmark, over: &[(&str, &str)]) -> Point {
    let mut p = Point::default();
    for s in b.meta().params {
        p.set(&s.name, s.default.clone());
    }
    for (k, v) in over {
        p.set(k, benchsuite_core::Value::Str((*v).into()));
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_bench_syscall_for_getppid_only() {
        let b = crate::syscall::Syscall;
        let r = syscall(&point(&b, &[]), &[2, 5]).unwrap();
        assert_eq!(
            r.command(),
            "taskset -c 2 perf bench syscall basic -l 10000000"
        );
        // Ours runs pinned to the same CPU.
        assert_eq!(r.same_cpu, Some(2));
        assert_eq!(
            (r.tool, r.package, r.metric),
            ("perf", "linux-perf", "time_per_op")
        );
        assert!(syscall(&point(&b, &[("call", "write_devnull")]), &[0]).is_none());
        assert!(syscall(&point(&b, &[]), &[]).is_none(), "no CPU to pin to");
        let out = "# Executed 10000000 getppid() calls\n     Total time: 2.639 [sec]\n\n       0.263922 usecs/op\n        3788992 ops/sec\n";
        assert!(((r.parse)(out).unwrap() - 0.263922e-6).abs() < 1e-15);
    }

    #[test]
    fn perf_bench_sched_pipe_with_placement() {
        let b = crate::ctx::ContextSwitch;
        let r = context_switch(&point(&b, &[]), &[1, 3]).unwrap();
        assert_eq!(r.command(), "taskset -c 1 perf bench sched pipe -l 1000000");
        assert_eq!(r.note, None);
        assert_eq!(r.sample_time, None);
        let p = point(&b, &[("mode", "thread"), ("cpus", "different")]);
        let r = context_switch(&p, &[1, 3]).unwrap();
        assert_eq!(
            r.command(),
            "taskset -c 1,3 perf bench sched pipe -T -l 1000000"
        );
        assert!(r.note.is_some());
        let p = point(&b, &[("mode", "thread"), ("cpus", "any")]);
        let r = context_switch(&p, &[0]).unwrap();
        assert_eq!(r.command(), "perf bench sched pipe -T -l 1000000");
        // Unpinned: ours samples as long as perf averages.
        assert_eq!(r.sample_time, Some(std::time::Duration::from_secs(1)));
        assert!(context_switch(&point(&b, &[("cpus", "different")]), &[0]).is_none());
        // A round trip is two switches.
        let out = "     Total time: 0.758 [sec]\n\n       7.580530 usecs/op\n";
        assert!(((r.parse)(out).unwrap() - 3.790265e-6).abs() < 1e-15);
    }
}
