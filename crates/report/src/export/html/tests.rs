use super::*;
use benchsuite_core::param::{Point, Value};
use benchsuite_core::results::{Metric, Peak, Record};
use benchsuite_core::stats::{LatencySummary, Summary};

fn base() -> Report {
    let text = include_str!("../testdata/quick-pass.json");
    Report::from_json(text, "quick-pass.json").unwrap()
}

fn record(id: &str, params: &[(&str, Value)], median: f64, unit: &str) -> Record {
    let samples = vec![
        median * 0.97,
        median,
        median * 1.02,
        median * 1.01,
        median * 0.99,
    ];
    Record::ok(
        id,
        Point(
            params
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        ),
        vec![
            Metric::from_samples(
                "bandwidth",
                unit,
                benchsuite_core::bench::Direction::Higher,
                &samples,
            )
            .unwrap(),
        ],
    )
}

/// Three sweeps (block with a series per thread count, threads with a
/// series per block, threads of a cpu benchmark with a peak), a latency
/// record and a time series, with hostile text in host and notes.
fn synthetic() -> Report {
    let mut rep = base();
    rep.records.clear();
    rep.host.hostname = Some("<b>evil</b> & \"host\" </script>".into());
    rep.host.extra.insert(
        "disk".into(),
        serde_json::json!({"fs": "ext4 </script><!--"}),
    );
    for t in [1u64, 2] {
        for b in [1024u64, 65536, 1 << 20] {
            let mut r = record(
                "mem.read",
                &[
                    ("block", Value::Int(b)),
                    ("threads", Value::Int(t)),
                    ("op", Value::Str("seq".into())),
                ],
                1e9 * t as f64 * (b as f64).log2(),
                "B/s",
            );
            r.notes.push("note with <tags> & </script>".into());
            rep.records.push(r);
        }
    }
    for t in [1u64, 2, 4] {
        let mut r = record(
            "cpu.flops",
            &[
                ("threads", Value::Int(t)),
                ("dtype", Value::Str("f32".into())),
            ],
            1e10 * t as f64,
            "flop/s",
        );
        r.metrics[0].name = "flops".into();
        r.peak = Some(Peak {
            metric: "flops".into(),
            value: 3e10 * t as f64,
            unit: "flop/s".into(),
            formula: "cores × GHz × lanes".into(),
            inputs: Default::default(),
            efficiency: Some(1.0 / 3.0),
        });
        rep.records.push(r);
    }
    let mut lat = record(
        "net.ping",
        &[("message", Value::Str("small".into()))],
        1e-5,
        "s",
    );
    lat.metrics[0].latency = Some(LatencySummary {
        count: 1000,
        mean: 1.1e-5,
        min: 8e-6,
        p50: 1e-5,
        p90: 1.3e-5,
        p99: 2e-5,
        p99_9: 5e-5,
        p99_99: 9e-5,
        max: 2e-4,
    });
    rep.records.push(lat);
    let mut ts = record("cpu.trace", &[], 5e9, "flop/s");
    ts.metrics[0].timestamps = Some(vec![1.0, 2.0, 3.0, 4.0, 5.0]);
    rep.records.push(ts);
    rep.records.push(Record::failed(
        "disk.write",
        Point::default(),
        "no space <left>",
    ));
    rep
}

fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        let end = i + rest[i..].find("</svg>").expect("closed") + "</svg>".len();
        out.push(&rest[i..end]);
        rest = &rest[end..];
    }
    out
}

/// A tiny XML well-formedness check: balanced, properly nested elements,
/// quoted attributes, valid entity references, one root.
fn well_formed(xml: &str) -> Result<(), String> {
    fn entity(s: &str) -> Result<usize, String> {
        let end = s.find(';').ok_or("unterminated entity")?;
        let name = &s[1..end];
        let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
            || (name.starts_with("#x") && u32::from_str_radix(&name[2..], 16).is_ok())
            || (name.starts_with('#') && name[1..].parse::<u32>().is_ok());
        if ok {
            Ok(end + 1)
        } else {
            Err(format!("bad entity &{name};"))
        }
    }
    let b = xml;
    let mut i = 0;
    let mut stack: Vec<&str> = Vec::new();
    let mut roots = 0;
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with("<!--") {
            i += rest.find("-->").ok_or("open comment")? + 3;
        } else if let Some(r) = rest.strip_prefix("</") {
            let end = r.find('>').ok_or("open end tag")?;
            let name = r[..end].trim();
            if stack.pop() != Some(name) {
                return Err(format!("mismatched </{name}>"));
            }
            i += 2 + end + 1;
        } else if let Some(r) = rest.strip_prefix('<') {
            let name_end = r
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .ok_or("open tag")?;
            let name = &r[..name_end];
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_:.".contains(c))
            {
                return Err(format!("bad tag name {name:?}"));
            }
            let mut j = name_end;
            let chars: Vec<char> = r.chars().collect();
            let _ = chars;
            let bytes = r.as_bytes();
            let mut closed_self = false;
            loop {
                while j < bytes.len() && (bytes[j] as char).is_whitespace() {
                    j += 1;
                }
                if j >= bytes.len() {
                    return Err("open tag".into());
                }
                if r[j..].starts_with("/>") {
                    closed_self = true;
                    j += 2;
                    break;
                }
                if bytes[j] == b'>' {
                    j += 1;
                    break;
                }
                let eq = r[j..].find('=').ok_or("attribute without value")? + j;
                let attr = r[j..eq].trim();
                if attr.is_empty() || attr.contains(char::is_whitespace) {
                    return Err(format!("bad attribute in <{name}>"));
                }
                let q = bytes[eq + 1];
                if q != b'"' && q != b'\'' {
                    return Err(format!("unquoted attribute {attr}"));
                }
                let close = r[eq + 2..].find(q as char).ok_or("open attribute")? + eq + 2;
                let val = &r[eq + 2..close];
                if val.contains('<') {
                    return Err(format!("< in attribute {attr}"));
                }
                let mut k = 0;
                while let Some(a) = val[k..].find('&') {
                    k += a;
                    k += entity(&val[k..])?;
                }
                j = close + 1;
            }
            if stack.is_empty() {
                roots += 1;
            }
            if !closed_self {
                stack.push(name);
            }
            i += 1 + j;
        } else if rest.starts_with('&') {
            i += entity(rest)?;
        } else {
            let c = rest.chars().next().unwrap();
            if stack.is_empty() && !c.is_whitespace() {
                return Err("text outside the root".into());
            }
            i += c.len_utf8();
        }
    }
    if !stack.is_empty() {
        return Err(format!("unclosed {stack:?}"));
    }
    if roots != 1 {
        return Err(format!("{roots} roots"));
    }
    Ok(())
}

#[test]
fn the_checker_rejects_broken_xml() {
    assert!(well_formed("<svg><g></svg>").is_err());
    assert!(well_formed("<svg a=1/>").is_err());
    assert!(well_formed("<svg>a & b</svg>").is_err());
    assert!(well_formed("<svg a=\"<\"/>").is_err());
    assert!(well_formed("<svg/><svg/>").is_err());
    assert!(well_formed("<svg x=\"1 &amp; 2\"><title>a &lt; b µ</title><g/></svg>").is_ok());
}

#[test]
fn every_svg_is_well_formed_xml() {
    let rep = synthetic();
    let mut new = rep.clone();
    for r in &mut new.records {
        for m in &mut r.metrics {
            m.summary.median *= 0.8;
            for s in &mut m.samples {
                *s *= 0.8;
            }
        }
    }
    for reports in [
        vec![("one.json".to_string(), rep.clone())],
        vec![
            ("base.json".to_string(), rep),
            ("new <b>.json".to_string(), new),
        ],
    ] {
        let html = render(&reports);
        let all = svgs(&html);
        assert!(all.len() >= 5, "{} svgs", all.len());
        for s in all {
            if let Err(e) = well_formed(s) {
                panic!("{e}\n{s}");
            }
        }
    }
}

#[test]
fn one_chart_per_sweep() {
    let rep = synthetic();
    let reports = vec![("r.json".to_string(), rep)];
    let found = sweeps(&reports);
    let names: Vec<(String, String, usize)> = found
        .iter()
        .map(|s| (s.id.clone(), s.param.clone(), s.series.len()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("cpu.flops".into(), "threads".into(), 1),
            ("mem.read".into(), "block".into(), 2),
            ("mem.read".into(), "threads".into(), 3),
        ]
    );
    let html = render(&reports);
    // One chart per sweep, each titled `ID: METRIC vs PARAM`.
    let charts = svgs(&html)
        .into_iter()
        .filter(|s| s.contains(" vs block") || s.contains(" vs threads"))
        .count();
    assert_eq!(charts, 3);
    assert!(html.contains("<h2>Sweeps (3)</h2>"));
    // The peak is dashed and its efficiency readable.
    assert!(html.contains("stroke-dasharray=\"6 4\""));
    assert!(html.contains("33.3% of peak"));
    // Latency ladder and the trace.
    assert!(html.contains("p99.99"));
    assert!(html.contains("per interval"));
    // A log2 axis for the 1 KiB … 1 MiB blocks, a linear one for 1, 2, 4
    // threads.
    assert!(html.contains("block (bytes), log2 scale"));
    assert!(!html.contains("threads, log2 scale"));
    // A block size is not a working set: no cache marks on its sweep.
    assert!(!html.contains("L2 512KiB"));
}

#[test]
fn text_is_escaped_and_the_json_round_trips() {
    let rep = synthetic();
    let reports = vec![
        ("a.json".to_string(), rep.clone()),
        ("b.json".to_string(), rep.clone()),
    ];
    let html = render(&reports);
    let page = &html[..html.find("<script").unwrap()];
    assert!(!page.contains("<b>evil"));
    assert!(html.contains("&lt;b&gt;evil&lt;/b&gt; &amp; &quot;host&quot;"));
    assert!(html.contains("no space &lt;left&gt;"));
    // Exactly one `</script>`: the data block's own end.
    assert_eq!(html.matches("</script>").count(), 1);
    assert_eq!(html.matches("<!--").count(), 0);
    let back = read_embedded(&html).unwrap().unwrap();
    assert_eq!(back, vec![rep.clone(), rep]);
}

#[test]
fn two_reports_show_compare_verdicts_with_regressions_in_red() {
    let rep = synthetic();
    let mut new = rep.clone();
    for r in &mut new.records {
        if r.id == "mem.read" {
            for m in &mut r.metrics {
                for s in &mut m.samples {
                    *s *= 0.5;
                }
                m.summary = Summary::new(&m.samples).unwrap();
            }
        }
    }
    let html = render(&[("base.json".into(), rep), ("new.json".into(), new)]);
    assert!(
        html.contains("<tr class=\"regressed\">"),
        "no regressed row"
    );
    assert!(html.contains("#D00000"), "no red bar");
    assert!(html.contains("Changes: new.json vs base.json"));
    // Base and new on the same axes.
    assert!(html.contains("base.json: threads=1"));
    assert!(html.contains("new.json: threads=1"));
}

/// An `auto` parameter that resolves differently along a sweep (nt=auto
/// becomes nt=on above the last-level cache) keeps the point in its
/// series: series are the requested parameters, as `compare` pairs them.
#[test]
fn a_sweep_keeps_points_whose_auto_values_resolved_differently() {
    let mut rep = base();
    rep.records = [4096u64, 65536, 67108864]
        .iter()
        .map(|&size| {
            let nt = if size > 1 << 25 { "on" } else { "off" };
            let mut r = record(
                "mem.bw",
                &[("size", Value::Int(size)), ("nt", Value::Str(nt.into()))],
                1e10,
                "B/s",
            );
            let mut asked = r.params.clone();
            asked.set("nt", Value::Str("auto".into()));
            r.requested = Some(asked);
            r
        })
        .collect();
    let reports = vec![("r.json".to_string(), rep)];
    let found = sweeps(&reports);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].param, "size");
    assert_eq!(found[0].series.len(), 1);
    assert_eq!(found[0].series[0].2.len(), 3, "the 64 MiB point stays");
}

/// A plan's phases are drawn apart, and a sweep with more than
/// `MAX_SERIES` combinations of other parameters is split into one chart
/// per value of the parameter with the fewest values.
#[test]
fn phases_apart_and_crowded_sweeps_faceted() {
    let mut rep = base();
    rep.records.clear();
    // Phase `grid`: block × op (2) × pattern (2) × threads (4): 16
    // combinations → split on op (2 values; pattern also has 2, op sorts
    // first), then on pattern: 4 charts of 4 series (threads).
    for op in ["read", "copy"] {
        for pattern in ["seq", "random"] {
            for t in [1u64, 2, 4, 8] {
                for b in [64u64, 1024, 1 << 20] {
                    let mut r = record(
                        "mem.bandwidth",
                        &[
                            ("op", Value::Str(op.into())),
                            ("pattern", Value::Str(pattern.into())),
                            ("threads", Value::Int(t)),
                            ("block", Value::Int(b)),
                        ],
                        1e9 * t as f64,
                        "B/s",
                    );
                    r.phase = Some("grid".into());
                    rep.records.push(r);
                }
            }
        }
    }
    // Phase `dense`: the same benchmark and parameter names, one series.
    for b in [1u64, 2, 4, 8] {
        let mut r = record(
            "mem.bandwidth",
            &[
                ("op", Value::Str("read".into())),
                ("pattern", Value::Str("seq".into())),
                ("threads", Value::Int(1)),
                ("block", Value::Int(b)),
            ],
            1e8 * b as f64,
            "B/s",
        );
        r.phase = Some("dense".into());
        rep.records.push(r);
    }
    // Phase `ws`: a working-set sweep, which gets the cache sizes marked.
    for kib in [4u64, 64, 1024, 4096] {
        let mut r = record(
            "mem.bandwidth",
            &[("size", Value::Int(kib << 10))],
            1e10 / kib as f64,
            "B/s",
        );
        r.phase = Some("ws".into());
        rep.records.push(r);
    }
    let reports = vec![("p.json".to_string(), rep)];
    let html = render(&reports);
    let ws = svgs(&html)
        .into_iter()
        .find(|s| s.contains("[ws]"))
        .expect("the ws phase's chart");
    assert!(ws.contains("L2 512KiB"), "{ws}");
    let found = sweeps(&reports);
    let by_block: Vec<(&str, &str, usize)> = found
        .iter()
        .filter(|s| s.param == "block")
        .map(|s| (s.id.as_str(), s.fixed.as_str(), s.series.len()))
        .collect();
    assert_eq!(
        by_block,
        vec![
            ("mem.bandwidth [dense]", "op=read pattern=seq threads=1", 1),
            ("mem.bandwidth [grid]", "op=copy pattern=random", 4),
            ("mem.bandwidth [grid]", "op=copy pattern=seq", 4),
            ("mem.bandwidth [grid]", "op=read pattern=random", 4),
            ("mem.bandwidth [grid]", "op=read pattern=seq", 4),
        ],
        "{by_block:?}"
    );
    // Threads 1, 2, 4, 8 in numeric order, named by what varies.
    let grid = found
        .iter()
        .find(|s| s.param == "block" && s.id.ends_with("[grid]"))
        .unwrap();
    let labels: Vec<&str> = grid.series.iter().map(|(l, _, _)| l.as_str()).collect();
    assert_eq!(labels, ["threads=1", "threads=2", "threads=4", "threads=8"]);
    // Over threads: op × pattern × block = 12 combinations → faceted on
    // op, 6 series each; no chart holds more than MAX_SERIES series of
    // several parameters.
    assert!(found.iter().all(|s| s.series.len() <= MAX_SERIES));
    assert_eq!(found.iter().filter(|s| s.param == "threads").count(), 2);
    // One varying parameter keeps its series together, up to a palette's
    // worth: 9 block sizes in one chart, not 9 charts.
    let mut rep = base();
    rep.records.clear();
    for b in 0..9u64 {
        for t in [1u64, 2, 4] {
            rep.records.push(record(
                "disk.io",
                &[("block", Value::Int(1024 << b)), ("threads", Value::Int(t))],
                1e8 * t as f64,
                "B/s",
            ));
        }
    }
    let reports = vec![("d.json".to_string(), rep)];
    let found = sweeps(&reports);
    let by_threads: Vec<usize> = found
        .iter()
        .filter(|s| s.param == "threads")
        .map(|s| s.series.len())
        .collect();
    assert_eq!(by_threads, [9]);
    // 17 values (1 B … 64 KiB): two charts of 9 and 8 consecutive values,
    // not 17 charts of one.
    let mut rep = base();
    rep.records.clear();
    for b in 0..17u64 {
        for t in [1u64, 2] {
            rep.records.push(record(
                "net.tcp_throughput",
                &[("block", Value::Int(1 << b)), ("threads", Value::Int(t))],
                1e8 * t as f64,
                "B/s",
            ));
        }
    }
    let reports = vec![("n.json".to_string(), rep)];
    let found = sweeps(&reports);
    let by_threads: Vec<Vec<&str>> = found
        .iter()
        .filter(|s| s.param == "threads")
        .map(|s| s.series.iter().map(|(l, _, _)| l.as_str()).collect())
        .collect();
    assert_eq!(by_threads.len(), 2, "{by_threads:?}");
    assert_eq!((by_threads[0].len(), by_threads[1].len()), (9, 8));
    assert_eq!(by_threads[0][0], "block=1B");
    assert_eq!(by_threads[1][0], "block=512B");
}

/// A network peak is drawn as the link's line rate, named so.
#[test]
fn a_link_speed_peak_is_named_with_its_rate() {
    let mut rep = base();
    rep.records.clear();
    for b in [1024u64, 65536] {
        let mut r = record(
            "net.tcp_throughput",
            &[("block", Value::Int(b))],
            9e8,
            "B/s",
        );
        let mut inputs = std::collections::BTreeMap::new();
        inputs.insert(
            "link_speed".to_string(),
            benchsuite_core::results::PeakInput {
                value: 10000.0,
                unit: "Mb/s".into(),
                source: "sysfs /sys/class/net/eth0/speed".into(),
            },
        );
        r.peak = Some(Peak {
            metric: "bandwidth".into(),
            value: 1.25e9,
            unit: "B/s".into(),
            formula: "link speed × 10^6 / 8".into(),
            inputs,
            efficiency: Some(0.72),
        });
        rep.records.push(r);
    }
    let html = render(&[("n.json".to_string(), rep)]);
    assert!(
        html.contains("link 10000 Mb/s bandwidth (best 72%)"),
        "{html}"
    );
}

/// The fleet page of odd fleets (one host; every median zero; a host
/// whose headline metric is another) renders well-formed charts.
#[test]
fn fleet_pages_of_odd_fleets_are_well_formed() {
    let host = |name: &str, median: f64, metric: &str| {
        let mut rep = base();
        rep.records.clear();
        rep.host.hostname = Some(name.into());
        let mut r = record("mem.read", &[("block", Value::Int(64))], median, "B/s");
        r.metrics[0].name = metric.into();
        rep.records.push(r);
        rep
    };
    let fleets = [
        vec![host("a", 1e9, "bandwidth")],
        vec![
            host("a", 0.0, "bandwidth"),
            host("b", 0.0, "bandwidth"),
            host("c", 0.0, "bandwidth"),
        ],
        vec![
            host("a", 1e9, "bandwidth"),
            host("b", 1e9, "bandwidth"),
            host("c", 5e8, "other"),
        ],
    ];
    for hosts in fleets {
        let n = hosts.len();
        let fleet = crate::fleet::Fleet {
            schema_version: benchsuite_core::results::SCHEMA_VERSION.into(),
            tool_version: "test".into(),
            hosts,
        };
        let page = render_fleet("f.json", &fleet);
        assert!(page.contains(&format!("<p>{n} hosts")), "{page}");
        for s in svgs(&page) {
            if let Err(e) = well_formed(s) {
                panic!("{e}\n{s}");
            }
            assert!(!s.contains("NaN") && !s.contains("inf"), "{s}");
        }
    }
}

#[test]
fn a_capacity_search_draws_its_curve_with_knee_answer_and_target() {
    let r = crate::export::fixtures::capacity_report();
    let html = render(&[("cap.json".to_string(), r)]);
    assert!(
        html.contains("Latency against throughput"),
        "no curve section"
    );
    let curve = svgs(&html)
        .into_iter()
        .find(|s| s.contains("latency against the rate carried"))
        .expect("a curve");
    well_formed(curve).unwrap();
    for want in [
        "knee 3.450 k/s",
        "capacity 3.000 k/s",
        "target p99&lt;=1ms",
        "p99.9",
    ] {
        assert!(curve.contains(want), "{want} missing");
    }
    assert!(html.contains("capacity for p99&lt;=1ms: 3.000 k/s"));
    // The steps are not each drawn as a latency ladder of their own.
    assert!(!html.contains("disk.io latency (rate=1000)"));
}

/// The `(x, width)` of the bar drawn for a change of `change`.
fn bar(svg: &str, change: f64) -> (f64, f64) {
    let at = svg
        .find(&format!(r#"class="bar" data-change="{change}""#))
        .unwrap_or_else(|| panic!("no bar for {change}: {svg}"));
    let attr = |name: &str| -> f64 {
        let s = &svg[at..];
        let i = s.find(&format!(r#" {name}=""#)).unwrap() + name.len() + 3;
        s[i..i + s[i..].find('"').unwrap()].parse().unwrap()
    };
    (attr("x"), attr("width"))
}

#[test]
fn the_change_chart_shows_a_ten_percent_change_beside_a_seven_thousand_percent_interval() {
    let row = |label: &str, change: f64, interval: [f64; 2]| ChangeRow {
        label: label.into(),
        change,
        interval: Some(interval),
        threshold: Some(0.05),
        text: format!("{change}"),
        color: "#D00000",
        title: label.into(),
    };
    let rows = [
        row("mem.bandwidth bandwidth", 0.10, [0.06, 0.14]),
        row("os.process_create time_per_op", -0.16, [-0.988, 68.83]),
        row("os.timer time_per_op", 0.004, [-0.01, 0.02]),
    ];
    let svg = svg::change_chart("changes", &rows);
    well_formed(&svg).unwrap();
    // The +10% bar is far from zero: its width is a good part of the half
    // axis (230 px), not a dot on the zero line.
    let (x10, w10) = bar(&svg, 0.10);
    assert!(w10 > 60.0, "+10% is {w10} px wide: {svg}");
    // It lies right of zero, the -16% bar left of it, and further out.
    let (x16, w16) = bar(&svg, -0.16);
    assert!(x16 + w16 <= x10 + 0.5 && w16 > w10, "{svg}");
    // The whisker that leaves the axis on both sides ends in two arrows,
    // each with its value.
    assert_eq!(svg.matches(r#"class="arrow""#).count(), 2, "{svg}");
    assert!(svg.contains("+6883.0%") && svg.contains("-98.8%"), "{svg}");
    // The threshold is drawn on every row.
    assert_eq!(svg.matches(r#"class="band""#).count(), 3, "{svg}");
    // Log ratio: +100% and -50% would sit at the same distance from 0.
    let half = |c: f64| {
        let svg = svg::change_chart("c", &[row("a", c, [c, c]), row("b", 1.0, [0.9, 1.1])]);
        let (x, w) = bar(&svg, c);
        let (x0, _) = bar(&svg, 1.0);
        (x, w, x0)
    };
    let (x_lo, w_lo, zero) = half(-0.5);
    assert!((x_lo + w_lo - zero).abs() < 0.5, "-50% ends at zero");
    let (_, w_up, _) = half(1.0);
    assert!((w_lo - w_up).abs() < 1.0, "{w_lo} vs {w_up}");
}

#[test]
fn the_change_chart_lists_what_moved_first_and_a_page_has_no_empty_section() {
    let rep = base();
    let mut new = rep.clone();
    for r in &mut new.records {
        if r.id == "mem.bandwidth" {
            for m in &mut r.metrics {
                for s in &mut m.samples {
                    *s *= 0.5;
                }
                m.summary = Summary::new(&m.samples).unwrap();
            }
        }
    }
    let html = render(&[("base.json".into(), rep), ("new.json".into(), new)]);
    // The quick pass has no sweep: no sweep section.
    assert!(!html.contains("Sweeps ("), "an empty sweep section");
    let chart = svgs(&html)
        .into_iter()
        .find(|s| s.contains("change of each metric"))
        .expect("a change chart");
    // The first row is the regressed metric, labelled by what differs (the
    // quick pass runs each benchmark once: its id), not its full key.
    let first = chart.find(r#"text-anchor="end" font-size="11">"#).unwrap();
    let label = &chart[first..];
    let label = &label[label.find('>').unwrap() + 1..label.find('<').unwrap()];
    assert_eq!(label, "mem.bandwidth bandwidth", "{chart}");
    assert!(!chart.contains("\">mem.bandwidth block="), "{chart}");
}
