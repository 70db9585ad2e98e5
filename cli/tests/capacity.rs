//! Capacity searches from the command line: bad input is one line naming
//! the flag and exit 2, before anything runs (nothing is measured, no
//! scratch file is made).

mod common;

#[test]
fn bad_rates_and_targets_are_one_line_naming_the_flag_exit_2() {
    let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let dir = scratch.path().to_str().unwrap();
    // (arguments, what the message must name)
    let cases: [(&[&str], &[&str]); 8] = [
        (&["disk.io", "--param", "rate=0"], &["rate", "at least 1"]),
        (
            &["disk.io", "--param", "rate=5k", "--param", "qd=4"],
            &["rate", "qd=4"],
        ),
        (
            &["disk.io", "--slo", "p99.9x<=1ms"],
            &["--slo", "percentile"],
        ),
        (&["disk.io", "--slo", "p99<=soon"], &["--slo", "soon"]),
        (&["disk.io", "--slo", "rtt.p99<=1ms"], &["--slo", "rtt"]),
        (
            &["disk.io", "--slo", "p99<=1ms", "--param", "rate=5k"],
            &["--slo", "rate=5000"],
        ),
        (
            &["os.syscall", "--slo", "p99<=1ms"],
            &["--slo", "os.syscall"],
        ),
        // The library names the setting by its field; the CLI shows the
        // flags (`duration` → --duration, `slo` → --slo).
        (
            &["net.latency", "--param", "rate=auto", "--duration", "5s"],
            &["--duration", "capacity search", "--slo"],
        ),
    ];
    for (args, names) in cases {
        let o = common::benchsuite(&[])
            .arg("run")
            .args(args)
            .args(["--scratch-dir", dir, "--no-progress"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        for n in names {
            assert!(err.contains(n), "{args:?}: `{n}` missing from {err}");
        }
        assert!(o.stdout.is_empty(), "{args:?}: nothing measured");
    }
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
}
