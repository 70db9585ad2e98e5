//! `benchsuite report`: the HTML page renders in a real browser.
//!
//! The render test needs Debian's `chromium` (or `chromium-browser`) on
//! PATH; without one it prints why and passes.

use std::path::{Path, PathBuf};
use std::process::Command;

use benchsuite_core::testing::{Capability, skip};
use serde_json::{Value, json};

mod common;
use common::{chromium, screenshot};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_benchsuite"))
}

/// The quick-pass fixture plus two sweeps: `cpu.flops` over threads 1, 2
/// (with its peak) and `mem.bandwidth` over blocks 64 B … 16 KiB at
/// threads 1 and 2; and hostile text in the host name and a note.
fn report(scale: f64) -> Value {
    let text = include_str!("../../crates/report/src/export/testdata/quick-pass.json");
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
    // The change chart shows the changes: the first row is a regressed
    // metric (red), its -40% bar a good part of the axis's half (230 px).
    let chart = &page2[page2
        .find("change of each metric</title>")
        .expect("a change chart")..];
    let bar = &chart[chart.find(r#"class="bar""#).unwrap()..];
    let width: f64 = {
        let i = bar.find(r#" width=""#).unwrap() + 8;
        bar[i..i + bar[i..].find('"').unwrap()].parse().unwrap()
    };
    assert!(width > 100.0, "the first bar is {width} px");
    assert!(
        bar[..bar.find("</rect>").unwrap()].contains("#D00000"),
        "{bar}"
    );

    // A missing input is a usage error.
    let out = bin()
        .args(["report", "/nonexistent.json", "-o"])
        .arg(dir.path().join("x.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));

    let Some(browser) = chromium() else {
        skip(
            Capability::Chromium,
            "the browser render: neither `chromium` nor `chromium-browser` is on PATH (apt-get install chromium)",
        );
        return;
    };
    // Pixels, not file sizes: an empty page has no ink at all; this one
    // has text, tables and coloured chart series.
    let empty = dir.path().join("empty.html");
    std::fs::write(&empty, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank = screenshot(browser, &empty, &dir.path().join("empty.png"), 2000);
    assert!(blank.inked < 0.001, "{blank:?}");
    for (html, png) in [(&one, "one.png"), (&two, "two.png")] {
        let ink = screenshot(browser, html, &dir.path().join(png), 2000);
        assert!(
            ink.inked > 0.02 && ink.coloured > 0.002,
            "{} renders (nearly) blank: {ink:?}",
            html.display()
        );
    }
}

/// `benchsuite report fleet.json`: the fleet page names the planted slow
/// host as the outlier, draws each host against its group, embeds the
/// hosts' reports, and renders in headless Chromium.
#[test]
fn report_of_a_fleet_shows_the_slow_host() {
    let dir = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for (i, scale) in [1.0, 1.01, 0.99, 1.02, 0.5].into_iter().enumerate() {
        let mut r = report(scale);
        r["host"]["hostname"] = json!(format!("node{i}"));
        inputs.push(write(dir.path(), &format!("node{i}.json"), &r));
    }
    let fleet = dir.path().join("fleet.json");
    let out = bin()
        .arg("merge")
        .args(&inputs)
        .arg("-o")
        .arg(&fleet)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page_path = dir.path().join("fleet.html");
    let out = bin()
        .args(["report"])
        .arg(&fleet)
        .arg("-o")
        .arg(&page_path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&page_path).unwrap();
    assert!(page.contains("<h2>Outlier hosts (1)</h2>"), "one outlier");
    let outlier_rows: Vec<&str> = page.split("<tr class=\"regressed\">").skip(1).collect();
    assert!(!outlier_rows.is_empty());
    assert!(
        outlier_rows.iter().all(|r| r.starts_with("<td>node4</td>")),
        "only the slow host is flagged"
    );
    assert!(page.contains("median vs the group median"));
    assert!(page.contains("node4: "), "a dot per host with its tooltip");
    let open = r#"<script type="application/json" id="benchsuite-reports">"#;
    let json = &page[page.find(open).unwrap() + open.len()..];
    let hosts: Value = serde_json::from_str(&json[..json.find("</script>").unwrap()]).unwrap();
    assert_eq!(
        hosts.as_array().unwrap().len(),
        5,
        "the hosts' reports embedded"
    );

    // A fleet page stands alone.
    let out = bin()
        .args(["report"])
        .arg(&fleet)
        .arg(&inputs[0])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("fleet report"));

    let Some(browser) = chromium() else {
        skip(
            Capability::Chromium,
            "the browser render: neither `chromium` nor `chromium-browser` is on PATH (apt-get install chromium)",
        );
        return;
    };
    let ink = screenshot(browser, &page_path, &dir.path().join("fleet.png"), 2000);
    assert!(
        ink.inked > 0.01 && ink.coloured > 0.0005,
        "the fleet page renders (nearly) blank: {ink:?}"
    );
}
