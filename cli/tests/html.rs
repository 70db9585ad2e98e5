//! `benchsuite report`: the HTML page renders in a real browser.
//!
//! The render test needs Debian's `chromium` (or `chromium-browser`) on
//! PATH; without one it prints why and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_benchsuite"))
}

/// The quick-pass fixture plus two sweeps: `cpu.flops` over threads 1, 2
/// (with its peak) and `mem.bandwidth` over blocks 64 B … 16 KiB at
/// threads 1 and 2; and hostile text in the host name and a note.
fn report(scale: f64) -> Value {
    let text = include_str!("../../crates/core/src/export/testdata/quick-pass.json");
    let mut r: Value = serde_json::from_str(text).unwrap();
    r["host"]["hostname"] = json!("<script>alert(1)</script>");
    let recs = r["records"].as_array().unwrap().clone();
    let mut out = Vec::new();
    for rec in recs {
        let id = rec["id"].as_str().unwrap().to_string();
        if id == "cpu.flops" {
            for t in [1u64, 2] {
                let mut x = rec.clone();
                x["params"]["threads"] = json!(t);
                x.as_object_mut().unwrap().remove("requested");
                scale_record(&mut x, scale * t as f64 / 2.0);
                out.push(x);
            }
        } else if id == "mem.bandwidth" {
            for t in [1u64, 2] {
                for (i, b) in [64u64, 256, 1024, 4096, 16384].into_iter().enumerate() {
                    let mut x = rec.clone();
                    x["params"]["threads"] = json!(t);
                    x["params"]["block"] = json!(b);
                    x.as_object_mut().unwrap().remove("requested");
                    x["notes"] = json!(["a note with </script> & <b>tags</b>"]);
                    scale_record(&mut x, scale * t as f64 * (1.0 + i as f64 / 4.0));
                    out.push(x);
                }
            }
        } else {
            out.push(rec);
        }
    }
    r["records"] = Value::Array(out);
    r
}

fn scale_record(rec: &mut Value, by: f64) {
    for m in rec["metrics"].as_array_mut().unwrap() {
        for s in m["samples"].as_array_mut().unwrap() {
            *s = json!(s.as_f64().unwrap() * by);
        }
        for k in [
            "mean",
            "median",
            "stddev",
            "min",
            "max",
            "p5",
            "p95",
            "trimmed_mean",
        ] {
            if let Some(v) = m["summary"][k].as_f64() {
                m["summary"][k] = json!(v * by);
            }
        }
        if let Some(ci) = m["summary"]["ci95"].as_array_mut() {
            for v in ci {
                *v = json!(v.as_f64().unwrap() * by);
            }
        }
    }
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    p
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Renders `html` headless; returns the screenshot's size in bytes.
fn screenshot(browser: &str, html: &Path, png: &Path) -> u64 {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--window-size=1280,2000",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.display()))
        .output()
        .expect("chromium runs");
    let log = String::from_utf8_lossy(&out.stderr);
    for line in log.lines() {
        let l = line.to_ascii_lowercase();
        assert!(
            !line.contains("Uncaught") && !l.contains("console error") && !l.contains(":console"),
            "console error rendering {}: {line}",
            html.display()
        );
    }
    assert!(out.status.success(), "chromium failed: {log}");
    std::fs::metadata(png).expect("a screenshot").len()
}

#[test]
fn report_writes_a_self_contained_page_for_one_and_two_reports() {
    let dir = tempfile::tempdir().unwrap();
    let base = write(dir.path(), "base.json", &report(1.0));
    let new = write(dir.path(), "new.json", &report(0.6));
    let one = dir.path().join("one.html");
    let two = dir.path().join("two.html");
    let st = bin()
        .args(["report"])
        .arg(&base)
        .arg("-o")
        .arg(&one)
        .status()
        .unwrap();
    assert!(st.success());
    let st = bin()
        .args(["report"])
        .arg(&base)
        .arg(&new)
        .arg("-o")
        .arg(&two)
        .status()
        .unwrap();
    assert!(st.success());
    let page = std::fs::read_to_string(&one).unwrap();
    assert!(page.contains("<h2>Sweeps (3)</h2>"), "three sweeps");
    let shown = &page[..page.find("<script").unwrap()];
    assert!(!shown.contains("<script>alert"), "the host name is escaped");
    assert!(
        !page.contains("http://") || !page.contains("<link"),
        "no external resources"
    );
    assert!(page.contains(r#"<script type="application/json" id="benchsuite-reports">"#));
    let page2 = std::fs::read_to_string(&two).unwrap();
    assert!(page2.contains("Changes: new.json vs base.json"));
    assert!(
        page2.contains("class=\"regressed\""),
        "the slower new run regressed"
    );

    // A missing input is a usage error.
    let out = bin()
        .args(["report", "/nonexistent.json", "-o"])
        .arg(dir.path().join("x.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    let Some(browser) = chromium() else {
        eprintln!(
            "skipped the browser render: neither `chromium` nor `chromium-browser` is on PATH (apt-get install chromium)"
        );
        return;
    };
    // An empty page's screenshot at this size is about 12 KB; charts and
    // tables make it many times that.
    let empty = dir.path().join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank = screenshot(browser, &empty, &dir.path().join("empty.png"));
    for (html, png) in [(&one, "one.png"), (&two, "two.png")] {
        let png = dir.path().join(png);
        let size = screenshot(browser, html, &png);
        assert!(
            size > blank * 3,
            "{} renders blank: {size} bytes against {blank} for an empty page",
            html.display()
        );
        if let Ok(keep) = std::env::var("BENCHSUITE_KEEP_SCREENSHOTS") {
            let _ = std::fs::copy(&png, Path::new(&keep).join(png.file_name().unwrap()));
        }
    }
}
