//! A small SVG chart writer: line charts with bands, dashed lines and
//! vertical markers, bar charts and a horizontal change chart. No fonts,
//! no scripts: tooltips are SVG `<title>` elements.

use std::fmt::Write as _;

/// Escapes text for HTML and XML (element text and quoted attributes).
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&#39;"),
            // Controls, C1, bidi overrides and zero-width marks: shown as
            // Rust writes them (`\u{202e}`), never acting on the page.
            c if benchsuite_core::text::is_unsafe(c) => s.extend(c.escape_default()),
            c => s.push(c),
        }
    }
    s
}

/// Series colours (colour-blind friendly, Okabe–Ito).
pub const PALETTE: [&str; 10] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
    "#882255", "#999999",
];

/// A colour for series `i`.
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// One axis: its label, whether it is logarithmic, how ticks are written.
pub struct Axis {
    pub label: String,
    pub log: bool,
    /// Ticks at whole numbers only (counts such as threads).
    pub integer: bool,
    pub format: Box<dyn Fn(f64) -> String>,
}

/// One point of a line.
pub struct Pt {
    pub x: f64,
    pub y: f64,
    /// The spread drawn as a band (p5–p95).
    pub band: Option<(f64, f64)>,
    /// Tooltip text.
    pub title: String,
}

/// One line of a chart.
pub struct Line {
    pub name: String,
    pub color: &'static str,
    pub points: Vec<Pt>,
    pub dashed: bool,
    pub markers: bool,
    /// Whether a line joins the points (false: the markers alone).
    pub joined: bool,
    /// Opacity of the stroke (a baseline is drawn lighter).
    pub opacity: f64,
}

/// A line chart.
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    /// Vertical markers (cache sizes): x and label.
    pub marks: Vec<(f64, String)>,
}

const W: f64 = 940.0;
const H: f64 = 360.0;
const L: f64 = 110.0;
const R: f64 = 590.0;
const T: f64 = 44.0;
const B: f64 = 300.0;

struct Scale {
    lo: f64,
    hi: f64,
    log: bool,
    a: f64,
    b: f64,
}

impl Scale {
    fn new(lo: f64, hi: f64, log: bool, a: f64, b: f64) -> Scale {
        let (mut lo, mut hi) = if log {
            (lo.log10(), hi.log10())
        } else {
            (lo, hi)
        };
        if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
            let d = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
            lo -= d;
            hi += d;
        }
        Scale { lo, hi, log, a, b }
    }
    fn map(&self, v: f64) -> f64 {
        let v = if self.log { v.max(1e-300).log10() } else { v };
        self.a + (v - self.lo) / (self.hi - self.lo) * (self.b - self.a)
    }
    fn ticks(&self, base2: bool, integer: bool) -> Vec<f64> {
        if self.log {
            let (lo, hi) = (10f64.powf(self.lo), 10f64.powf(self.hi));
            let base: f64 = if base2 { 2.0 } else { 10.0 };
            let (e0, e1) = (
                (lo.log(base) - 1e-9).ceil() as i64,
                (hi.log(base) + 1e-9).floor() as i64,
            );
            let n = (e1 - e0 + 1).max(1);
            let step = ((n + 9) / 10).max(1);
            let mut t: Vec<f64> = (e0..=e1)
                .step_by(step as usize)
                .map(|e| base.powi(e as i32))
                .collect();
            if t.is_empty() {
                t = vec![lo, hi];
            }
            t
        } else {
            let range = self.hi - self.lo;
            let raw = range / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| range / s <= 6.0)
                .unwrap_or(10.0 * mag);
            let step = if integer { step.max(1.0).round() } else { step };
            let mut t = Vec::new();
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + step * 1e-9 && t.len() < 20 {
                t.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
                v += step;
            }
            t
        }
    }
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

fn header(out: &mut String, title: &str, w: f64, h: f64) {
    // A long title puts its parenthesised part on a second, smaller line;
    // both are cut to the width (the full title is the SVG's `<title>`).
    let (main_max, sub_max) = ((w / 8.0) as usize, (w / 6.0) as usize);
    let (main, sub) = match title.split_once(" (") {
        Some((m, s)) if title.chars().count() > main_max => {
            (m, Some(s.strip_suffix(')').unwrap_or(s)))
        }
        _ => (title, None),
    };
    let _ = write!(
        out,
        r##"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" font-family="sans-serif" font-size="12"><title>{t}</title><rect x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/><text x="{cx}" y="20" text-anchor="middle" font-size="14" font-weight="bold">{m}</text>"##,
        t = escape(title),
        m = escape(&truncate(main, main_max)),
        cx = f(w / 2.0),
    );
    if let Some(sub) = sub {
        let _ = write!(
            out,
            r##"<text x="{}" y="35" text-anchor="middle" font-size="11" fill="#555555">{}</text>"##,
            f(w / 2.0),
            escape(&truncate(sub, sub_max))
        );
    }
}

impl Chart {
    /// The chart as one `<svg>` element.
    pub fn render(&self) -> String {
        let pts = || self.lines.iter().flat_map(|l| l.points.iter());
        let xs: Vec<f64> = pts()
            .map(|p| p.x)
            .filter(|v| v.is_finite() && (!self.x.log || *v > 0.0))
            .collect();
        let mut ys: Vec<f64> = Vec::new();
        for p in pts() {
            ys.push(p.y);
            if let Some((a, b)) = p.band {
                ys.push(a);
                ys.push(b);
            }
        }
        ys.retain(|v| v.is_finite() && (!self.y.log || *v > 0.0));
        let mut out = String::new();
        header(&mut out, &self.title, W, H);
        if xs.is_empty() || ys.is_empty() {
            out.push_str(r#"<text x="300" y="180">no data</text></svg>"#);
            return out;
        }
        let (x0, x1) = min_max(&xs);
        let (mut y0, y1) = min_max(&ys);
        if !self.y.log {
            y0 = y0.min(0.0);
        }
        let y1 = if self.y.log { y1 } else { y1 * 1.05 };
        let sx = Scale::new(x0, x1, self.x.log, L, R);
        let sy = Scale::new(y0, y1, self.y.log, B, T);
        // Grid and ticks.
        out.push_str(r##"<g stroke="#dddddd" stroke-width="1">"##);
        let xt = sx.ticks(true, self.x.integer);
        let yt = sy.ticks(false, false);
        for &t in &xt {
            let _ = write!(
                out,
                r#"<line x1="{0}" y1="{T}" x2="{0}" y2="{B}"/>"#,
                f(sx.map(t))
            );
        }
        for &t in &yt {
            let _ = write!(
                out,
                r#"<line x1="{L}" y1="{0}" x2="{R}" y2="{0}"/>"#,
                f(sy.map(t))
            );
        }
        out.push_str("</g>");
        let _ = write!(
            out,
            r##"<rect x="{L}" y="{T}" width="{}" height="{}" fill="none" stroke="#333333"/>"##,
            R - L,
            B - T
        );
        for &t in &xt {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
                f(sx.map(t)),
                B + 16.0,
                escape(&(self.x.format)(t))
            );
        }
        for &t in &yt {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                L - 6.0,
                f(sy.map(t) + 4.0),
                escape(&(self.y.format)(t))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            f((L + R) / 2.0),
            B + 36.0,
            escape(&self.x.label)
        );
        let _ = write!(
            out,
            r#"<text x="16" y="{0}" text-anchor="middle" transform="rotate(-90 16 {0})">{1}</text>"#,
            f((T + B) / 2.0),
            escape(&self.y.label)
        );
        // Markers (cache sizes).
        // A label closer than its width to the last one drops a line, so
        // neighbouring marks (a knee beside an answer) stay readable.
        let mut last: Option<(f64, f64, f64)> = None; // (x, half width, y)
        for (x, label) in &self.marks {
            if *x < x0 || *x > x1 {
                continue;
            }
            let pxv = sx.map(*x);
            let half = label.chars().count() as f64 * 2.8;
            let y = match last {
                Some((lx, lh, ly)) if (pxv - lx).abs() < lh + half + 4.0 => ly + 12.0,
                _ => T + 12.0,
            };
            last = Some((pxv, half, y));
            let px = f(pxv);
            let _ = write!(
                out,
                r##"<line x1="{px}" y1="{T}" x2="{px}" y2="{B}" stroke="#888888" stroke-dasharray="2 3"/><text x="{px}" y="{}" font-size="10" fill="#555555" text-anchor="middle">{}</text>"##,
                f(y),
                escape(label)
            );
        }
        // Bands first, then lines on top.
        for l in &self.lines {
            let band: Vec<(f64, f64, f64)> = l
                .points
                .iter()
                .filter_map(|p| p.band.map(|(a, b)| (p.x, a, b)))
                .filter(|(x, a, b)| {
                    x.is_finite()
                        && a.is_finite()
                        && b.is_finite()
                        && (!self.y.log || (*a > 0.0 && *b > 0.0))
                })
                .collect();
            if band.len() >= 2 {
                let mut d = String::new();
                for (x, _, hi) in &band {
                    let _ = write!(d, "{},{} ", f(sx.map(*x)), f(sy.map(*hi)));
                }
                for (x, lo, _) in band.iter().rev() {
                    let _ = write!(d, "{},{} ", f(sx.map(*x)), f(sy.map(*lo)));
                }
                let _ = write!(
                    out,
                    r#"<polygon points="{}" fill="{}" fill-opacity="{}" stroke="none"/>"#,
                    d.trim_end(),
                    l.color,
                    0.15 * l.opacity
                );
            } else if band.len() == 1 {
                let (x, lo, hi) = band[0];
                let px = f(sx.map(x));
                let _ = write!(
                    out,
                    r#"<line x1="{px}" y1="{}" x2="{px}" y2="{}" stroke="{}" stroke-width="2"/>"#,
                    f(sy.map(lo)),
                    f(sy.map(hi)),
                    l.color
                );
            }
        }
        for l in &self.lines {
            let ok: Vec<&Pt> = l
                .points
                .iter()
                .filter(|p| p.x.is_finite() && p.y.is_finite() && (!self.y.log || p.y > 0.0))
                .collect();
            let d: Vec<String> = ok
                .iter()
                .map(|p| format!("{},{}", f(sx.map(p.x)), f(sy.map(p.y))))
                .collect();
            if l.joined {
                let _ = write!(
                    out,
                    r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2" stroke-opacity="{}"{}><title>{}</title></polyline>"#,
                    d.join(" "),
                    l.color,
                    l.opacity,
                    if l.dashed {
                        r#" stroke-dasharray="6 4""#
                    } else {
                        ""
                    },
                    escape(&l.name)
                );
            }
            if l.markers {
                for p in &ok {
                    let _ = write!(
                        out,
                        r#"<circle cx="{}" cy="{}" r="3.5" fill="{}" fill-opacity="{}"><title>{}</title></circle>"#,
                        f(sx.map(p.x)),
                        f(sy.map(p.y)),
                        l.color,
                        l.opacity,
                        escape(&p.title)
                    );
                }
            }
        }
        // Legend.
        // Lines without a name (a second segment's level) share the legend
        // entry of the first.
        let named: Vec<&Line> = self.lines.iter().filter(|l| !l.name.is_empty()).collect();
        for (i, l) in named.iter().take(18).enumerate() {
            let y = T + 8.0 + i as f64 * 16.0;
            let _ = write!(
                out,
                r#"<line x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{}" stroke-width="2" stroke-opacity="{}"{}/><text x="{}" y="{}">{}</text>"#,
                R + 14.0,
                R + 38.0,
                l.color,
                l.opacity,
                if l.dashed {
                    r#" stroke-dasharray="6 4""#
                } else {
                    ""
                },
                R + 44.0,
                y + 4.0,
                escape(&truncate(&l.name, LEGEND_CHARS))
            );
        }
        if named.len() > 18 {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}">… {} more</text>"#,
                R + 14.0,
                T + 8.0 + 18.0 * 16.0 + 4.0,
                named.len() - 18
            );
        }
        out.push_str("</svg>");
        out
    }
}

/// The legend's room in characters (12 px sans-serif, ~6.7 px a
/// character): what fits between the plot and the right edge. A longer
/// name is cut with `…`; the line's `<title>` has it whole.
const LEGEND_CHARS: usize = ((W - R - 48.0) / 6.7) as usize;

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

fn min_max(v: &[f64]) -> (f64, f64) {
    v.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| {
            (a.min(x), b.max(x))
        })
}

/// A small bar chart of named values (the latency ladder), log scale
/// when they span more than 50×.
pub fn bar_chart(title: &str, bars: &[(String, f64)], format: &dyn Fn(f64) -> String) -> String {
    let (w, h) = (420.0, 250.0);
    let (l, r, t, b) = (80.0, 410.0, 48.0, 210.0);
    let mut out = String::new();
    header(&mut out, title, w, h);
    let vals: Vec<f64> = bars
        .iter()
        .map(|(_, v)| *v)
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if vals.is_empty() {
        out.push_str(r#"<text x="150" y="120">no data</text></svg>"#);
        return out;
    }
    let (lo, hi) = min_max(&vals);
    let log = hi / lo > 50.0;
    let sy = if log {
        Scale::new(lo / 2.0, hi * 1.2, true, b, t)
    } else {
        Scale::new(0.0, hi * 1.1, false, b, t)
    };
    for tk in sy.ticks(false, false) {
        let y = f(sy.map(tk));
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#dddddd"/><text x="{}" y="{}" text-anchor="end" font-size="10">{}</text>"##,
            l - 4.0,
            f(sy.map(tk) + 3.0),
            escape(&format(tk))
        );
    }
    let slot = (r - l) / bars.len().max(1) as f64;
    for (i, (name, v)) in bars.iter().enumerate() {
        let x = l + slot * i as f64;
        let bw = slot * 0.7;
        if v.is_finite() && *v > 0.0 {
            let y = sy.map(*v);
            let _ = write!(
                out,
                r##"<rect x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}: {}</title></rect>"##,
                f(x + slot * 0.15),
                f(y),
                f(bw),
                f((b - y).max(0.0)),
                color(0),
                escape(name),
                escape(&format(*v))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text>"#,
            f(x + slot / 2.0),
            b + 14.0,
            escape(name)
        );
    }
    let _ = write!(
        out,
        r##"<line x1="{l}" y1="{b}" x2="{r}" y2="{b}" stroke="#333333"/><text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text></svg>"##,
        f((l + r) / 2.0),
        b + 32.0,
        if log { "log scale" } else { "" }
    );
    out
}

/// Vertical grid lines at `sx`'s ticks from `t` to `b`, labelled in signed
/// percent below (the zero line darker): the change and strip charts' axis.
fn percent_grid(out: &mut String, sx: &Scale, t: f64, b: f64) {
    for tk in sx.ticks(false, false) {
        let x = f(sx.map(tk));
        let _ = write!(
            out,
            r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}" stroke="{}"/><text x="{x}" y="{}" text-anchor="middle" font-size="10">{:+.0}%</text>"##,
            if tk == 0.0 { "#333333" } else { "#dddddd" },
            b + 14.0,
            tk * 100.0
        );
    }
}

/// One row of the change chart: a metric's relative change, its interval
/// and the threshold it was judged against.
pub struct ChangeRow {
    /// What the row is (short key and metric).
    pub label: String,
    /// Relative change of the median (`0.07` = +7%).
    pub change: f64,
    /// Its interval, relative.
    pub interval: Option<[f64; 2]>,
    /// The relative threshold (`0.05`), drawn as a band about zero.
    pub threshold: Option<f64>,
    /// The change as text, printed right of the plot (`+7.2% [+3%, +11%]`).
    pub text: String,
    pub color: &'static str,
    /// The tooltip (full key, verdict, change).
    pub title: String,
}

/// Relative changes the change chart's axis may mark, in percent.
const CHANGE_TICKS: [f64; 19] = [
    -90.0, -75.0, -50.0, -33.0, -20.0, -10.0, -5.0, -2.0, -1.0, 0.0, 1.0, 2.0, 5.0, 10.0, 25.0,
    50.0, 100.0, 200.0, 400.0,
];

/// The change chart: a row per metric, a bar from zero to the change of
/// its median, its interval as a whisker and its threshold as a grey band,
/// on a log-ratio axis (`ln(new/base)`: +100% and −50% sit at the same
/// distance from zero) sized to the medians and the bands, never to the
/// widest whisker, and at most ×2 either way. What lies beyond the axis ends
/// in an arrow, its value printed outside the plot; every row's change and
/// interval are printed right of the plot. Rows come in the order given.
pub fn change_chart(title: &str, rows: &[ChangeRow]) -> String {
    let row_h = 20.0;
    // Label | left overflow | plot | right overflow | the change as text.
    let (label_x, l, r, text_x, w) = (326.0, 430.0, 890.0, 1000.0, 1200.0);
    let t = 44.0;
    let b = t + rows.len() as f64 * row_h;
    let h = b + 48.0;
    let mut out = String::new();
    header(&mut out, title, w, h);
    let ln = |v: f64| (1.0 + v).max(1e-300).ln();
    let mut span: f64 = 0.1f64.ln_1p();
    for row in rows {
        if row.change.is_finite() {
            span = span.max(ln(row.change).abs() * 1.15);
        }
        if let Some(th) = row.threshold {
            span = span.max(ln(-th.min(0.99)).abs() * 1.5);
        }
    }
    let span = span.min(2f64.ln());
    // Beyond the axis, not merely on its end (a -50% change on a ×2 axis).
    let beyond = |u: f64| u.abs() > span * (1.0 + 1e-9);
    let sx = Scale::new(-span, span, false, l, r);
    // Ticks at round percentages, at least 30 px apart.
    let mut last = f64::NEG_INFINITY;
    for p in CHANGE_TICKS {
        let u = ln(p / 100.0);
        if u.abs() > span {
            continue;
        }
        let x = sx.map(u);
        if x - last < 30.0 && p != 0.0 {
            continue;
        }
        last = x;
        let _ = write!(
            out,
            r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}" stroke="{}"/><text x="{x}" y="{}" text-anchor="middle" font-size="10">{}</text>"##,
            if p == 0.0 { "#333333" } else { "#dddddd" },
            b + 14.0,
            if p == 0.0 {
                "0".to_string()
            } else {
                format!("{p:+}%")
            },
            x = f(x),
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" font-size="11" font-weight="bold">change [interval]</text>"#,
        text_x,
        t - 6.0
    );
    // An arrowhead at the plot's edge, pointing out, and the value beside it.
    let arrow = |out: &mut String, right: bool, y: f64, value: &str| {
        let (x, d, anchor, tx) = if right {
            (r, 1.0, "start", r + 9.0)
        } else {
            (l, -1.0, "end", l - 9.0)
        };
        let _ = write!(
            out,
            r##"<polygon class="arrow" points="{},{} {},{} {},{}" fill="#222222"/><text x="{}" y="{}" text-anchor="{anchor}" font-size="10">{}</text>"##,
            f(x + 6.0 * d),
            f(y),
            f(x),
            f(y - 4.0),
            f(x),
            f(y + 4.0),
            f(tx),
            f(y + 3.5),
            escape(value)
        );
    };
    let pct = |v: f64| crate::compare::percent_text(v);
    for (i, row) in rows.iter().enumerate() {
        let y = t + i as f64 * row_h;
        let mid = y + row_h / 2.0;
        if i % 2 == 1 {
            let _ = write!(
                out,
                r##"<rect x="0" y="{}" width="{w}" height="{row_h}" fill="#f8f8f8"/>"##,
                f(y)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{label_x}" y="{}" text-anchor="end" font-size="11">{}<title>{}</title></text>"#,
            f(mid + 4.0),
            escape(&truncate(&row.label, 46)),
            escape(&row.title)
        );
        if let Some(th) = row.threshold.filter(|th| *th > 0.0) {
            let (a, bb) = (
                sx.map(ln(-th.min(0.99)).max(-span)),
                sx.map(ln(th).min(span)),
            );
            let _ = write!(
                out,
                r##"<rect class="band" x="{}" y="{}" width="{}" height="{}" fill="#e4e4e4"><title>threshold ±{:.1}%</title></rect>"##,
                f(a),
                f(y + 2.0),
                f(bb - a),
                row_h - 4.0,
                th * 100.0
            );
        }
        let u = ln(row.change);
        let (x0, x1) = (sx.map(0.0), sx.map(u.clamp(-span, span)));
        let _ = write!(
            out,
            r#"<rect class="bar" data-change="{}" x="{}" y="{}" width="{}" height="{}" fill="{}"><title>{}</title></rect>"#,
            row.change,
            f(x0.min(x1)),
            f(y + 5.0),
            f((x1 - x0).abs().max(1.0)),
            row_h - 10.0,
            row.color,
            escape(&row.title)
        );
        let mut outside: [Vec<String>; 2] = [Vec::new(), Vec::new()];
        if beyond(u) {
            outside[usize::from(u > 0.0)].push(pct(row.change));
        }
        if let Some([a, bb]) = row.interval {
            let (ua, ub) = (ln(a), ln(bb));
            let _ = write!(
                out,
                r##"<line class="whisker" x1="{}" y1="{mid}" x2="{}" y2="{mid}" stroke="#222222" stroke-width="1.5"/>"##,
                f(sx.map(ua.clamp(-span, span))),
                f(sx.map(ub.clamp(-span, span))),
            );
            for (v, uv) in [(a, ua), (bb, ub)] {
                if beyond(uv) {
                    let side = &mut outside[usize::from(uv > 0.0)];
                    if side.is_empty() {
                        side.push(pct(v));
                    } else {
                        // The median is beyond too: its whisker's end after it.
                        side.push(format!("(…{})", pct(v)));
                    }
                }
            }
        }
        for (side, values) in outside.iter().enumerate() {
            if !values.is_empty() {
                arrow(&mut out, side == 1, mid, &values.join(" "));
            }
        }
        let _ = write!(
            out,
            r#"<text x="{text_x}" y="{}" font-size="11">{}</text>"#,
            f(mid + 4.0),
            escape(&row.text)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">change of the median, new vs base (bar; log scale, so +100% and −50% are as far from 0), its interval (whisker), the threshold (grey band); ▸ beyond the axis</text></svg>"#,
        f((l + r) / 2.0 + 100.0),
        b + 32.0
    );
    out
}

/// One row of a strip chart: a record's hosts as dots on a shared axis.
pub struct StripRow {
    pub label: String,
    /// (x, colour, tooltip) per host.
    pub dots: Vec<(f64, &'static str, String)>,
    /// Where the outlier threshold lies on the axis, if judged.
    pub threshold: Option<f64>,
}

/// A strip chart: one row per record, one dot per host at its value
/// relative to its group's median (x = 0), better to the right; the
/// outlier threshold as a red tick. `x_label` names the axis.
pub fn strip_chart(title: &str, x_label: &str, rows: &[StripRow]) -> String {
    let row_h = 22.0;
    let (l, r, t) = (330.0, 900.0, 44.0);
    let h = t + rows.len() as f64 * row_h + 44.0;
    let mut out = String::new();
    header(&mut out, title, W, h);
    let mut span: f64 = 0.05;
    for row in rows {
        for (x, _, _) in &row.dots {
            if x.is_finite() {
                span = span.max(x.abs());
            }
        }
        if let Some(x) = row.threshold {
            span = span.max(x.abs());
        }
    }
    let span = span.min(2.0) * 1.1;
    let sx = Scale::new(-span, span, false, l, r);
    let b = t + rows.len() as f64 * row_h;
    percent_grid(&mut out, &sx, t, b);
    let clamp = |v: f64| v.clamp(-span, span);
    for (i, row) in rows.iter().enumerate() {
        let y = t + i as f64 * row_h + row_h / 2.0;
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" text-anchor="end" font-size="11">{}<title>{}</title></text><line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#f0f0f0"/>"##,
            l - 6.0,
            f(y + 4.0),
            escape(&truncate(&row.label, 48)),
            escape(&row.label)
        );
        if let Some(th) = row.threshold {
            let x = f(sx.map(clamp(th)));
            let _ = write!(
                out,
                r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#c00000" stroke-width="2"><title>outlier threshold</title></line>"##,
                f(y - row_h / 2.0 + 2.0),
                f(y + row_h / 2.0 - 2.0)
            );
        }
        for (x, c, tip) in &row.dots {
            if !x.is_finite() {
                continue;
            }
            let _ = write!(
                out,
                r#"<circle cx="{}" cy="{}" r="4" fill="{c}" fill-opacity="0.75"><title>{}</title></circle>"#,
                f(sx.map(clamp(*x))),
                f(y),
                escape(tip)
            );
        }
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="11">{}</text></svg>"#,
        f((l + r) / 2.0),
        b + 32.0,
        escape(x_label)
    );
    out
}
