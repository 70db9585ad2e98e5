//! Untrusted text end to end (issue 37, L2): a report, a fleet and a
//! server's reply whose every string holds an OSC title sequence, an 8-bit
//! CSI (C1), a right-to-left override, a Markdown link and a mention. No
//! format but JSON (which escapes by its own rules) and no line on stderr
//! carries a raw control or direction-changing character; Markdown shows
//! the link and the mention as text.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::OnceLock;

use serde_json::Value;

mod common;

/// The hostile text: OSC 0 (set the window title) ended by BEL, a C1 CSI
/// clearing the screen, a bidi override, a link and a mention.
const HOSTILE: &str = "\u{1b}]0;X\u{7}\u{9b}2J\u{202e}evil[x](u) @everyone";

fn bench(args: &[&str]) -> Output {
    common::benchsuite(&[])
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The characters that may not reach a terminal: controls other than
/// line feed and tab, C1, bidi overrides and isolates.
fn raw(s: &str) -> Vec<char> {
    s.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
        .collect()
}

/// Neither stdout nor stderr of `o` holds a raw control character.
fn assert_clean(what: &str, o: &Output) {
    for (name, s) in [("stdout", text(&o.stdout)), ("stderr", text(&o.stderr))] {
        assert!(raw(&s).is_empty(), "{what}: {name} has {:?}:\n{s}", raw(&s));
    }
}

/// One real `os.syscall` report, made once for all tests.
fn one_report() -> &'static Value {
    static REPORT: OnceLock<Value> = OnceLock::new();
    REPORT.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let o = bench(&[
            "run",
            "os.syscall",
            "--runs",
            "3",
            "--min-sample-time",
            "1ms",
            "--warmup",
            "1ms",
            "--no-progress",
            "-o",
            path.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", text(&o.stderr));
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
    })
}

/// The report as host `name` (with [`HOSTILE`] in it), with the hostile
/// text in a note, a failed record's reason and a reference section.
fn hostile_report(name: &str) -> Value {
    let mut r = one_report().clone();
    r["host"]["hostname"] = Value::from(name);
    r["host"]["cpu_model"] = Value::from(HOSTILE);
    let records = r["records"].as_array_mut().unwrap();
    let mut failed = records[0].clone();
    records[0]["notes"] = serde_json::json!([HOSTILE]);
    records[0]["reference"] = serde_json::json!({
        "tool": "perf", "version": HOSTILE, "command": HOSTILE, "metric": "time_per_op",
        "median": null, "unit": "s", "ratio": null, "rounds": [], "note": HOSTILE,
    });
    failed["status"] = Value::from("failed");
    failed["reason"] = Value::from(HOSTILE);
    failed["metrics"] = serde_json::json!([]);
    failed["params"]["n"] = Value::from(HOSTILE);
    records.push(failed);
    r
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

#[test]
fn a_hostile_report_reaches_no_terminal_or_file_raw() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(dir.path(), "r.json", &hostile_report(HOSTILE));
    let p = p.to_str().unwrap();
    for format in ["table", "csv", "md"] {
        let o = bench(&["convert", p, "--format", format, "--verbose"]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", text(&o.stderr));
        assert_clean(format, &o);
        let out = text(&o.stdout);
        assert!(out.contains("evil"), "{format}: the text is gone:\n{out}");
        if format == "md" {
            assert!(
                !out.contains("[x](u)") && !out.contains(" @everyone"),
                "{out}"
            );
        }
    }
    // JSON escapes every control, C1 and bidi character (`\u009b`,
    // `\u202e`), and the report reads back as it was.
    let o = bench(&["convert", p, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_clean("json", &o);
    let back: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(back["records"][0]["notes"][0], HOSTILE);
    // The HTML page: its text and its embedded JSON.
    let page = dir.path().join("r.html");
    let o = bench(&["report", p, "-o", page.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_clean("report", &o);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(raw(&html).is_empty(), "html has {:?}", raw(&html));
    assert!(html.contains("evil"), "the text is gone from the page");

    // A report whose text does not parse: serde's error quotes it, and
    // `main` prints the chain with it escaped.
    let mut bad = one_report().clone();
    bad["records"][0]["status"] = Value::from(HOSTILE);
    let bad = write(dir.path(), "bad.json", &bad);
    let o = bench(&["convert", bad.to_str().unwrap(), "--format", "table"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_clean("the error chain", &o);
    assert!(
        text(&o.stderr).contains("unknown variant"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn hostile_host_names_in_merge_and_a_fleet_comparison_are_shown_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let merged = |name: &str| {
        let mut args = vec!["merge".to_string()];
        for h in ["1", "2", "3"] {
            let p = write(
                dir.path(),
                &format!("{name}-{h}.json"),
                &hostile_report(&format!("{HOSTILE}{h}")),
            );
            args.push(p.to_string_lossy().into_owned());
        }
        let out = dir.path().join(format!("{name}.json"));
        args.extend(["-o".into(), out.to_string_lossy().into_owned()]);
        let o = bench(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        assert_clean("merge", &o);
        assert!(text(&o.stdout).contains("evil"), "{}", text(&o.stdout));
        out
    };
    let (base, new) = (merged("base"), merged("new"));
    for format in ["table", "md"] {
        let o = bench(&[
            "compare",
            base.to_str().unwrap(),
            new.to_str().unwrap(),
            "--between-run-cv",
            "0%",
            "--format",
            format,
        ]);
        assert!(
            matches!(o.status.code(), Some(0 | 1 | 3)),
            "{format}: {}",
            text(&o.stderr)
        );
        assert_clean(format, &o);
        let out = text(&o.stdout);
        assert!(out.contains("evil"), "{format}: no host named:\n{out}");
        if format == "md" {
            assert!(
                !out.contains("[x](u)") && !out.contains(" @everyone"),
                "{out}"
            );
        }
    }
}

/// A hostile server answers every connection with a frame that does not
/// decode, quoting the hostile text: `reference`'s progress lines, its
/// summary and its CSV show serde's error escaped.
#[test]
fn a_hostile_servers_malformed_frame_reaches_reference_output_escaped() {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut buf = [0u8; 512];
            let _ = s.read(&mut buf);
            let body = serde_json::to_vec(&serde_json::json!({ "type": HOSTILE })).unwrap();
            let mut f = b"BSNT".to_vec();
            f.extend((body.len() as u32).to_be_bytes());
            f.extend(body);
            let _ = s.write_all(&f);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("ref.csv");
    let o = bench(&[
        "reference",
        "net.connect",
        "--peer",
        &addr,
        "--rounds",
        "1",
        "--runs",
        "1",
        "--min-sample-time",
        "1ms",
        "--warmup",
        "1ms",
        "-o",
        csv.to_str().unwrap(),
    ]);
    assert_clean("reference", &o);
    let err = text(&o.stderr);
    assert!(err.contains("unknown variant"), "{err}");
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert!(raw(&csv).is_empty(), "{:?}", raw(&csv));
    assert!(csv.contains("unknown variant"), "{csv}");
}
