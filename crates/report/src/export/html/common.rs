//! What the page and its charts share: the style, the embedded data's id,
//! a sweep and small helpers over records. A leaf below `html.rs` and the
//! chart files.

use benchsuite_core::results::{Metric, Record};

/// The `id` of the `<script>` element holding the embedded reports.
pub const DATA_ID: &str = "benchsuite-reports";

/// One sweep: a benchmark's headline metric against one numeric parameter.
/// Records of one series, by the swept value.
pub(super) type Points<'a> = Vec<(f64, &'a Record)>;
/// A series' key: the report's index and the other parameters' values.
pub(super) type SeriesKey = (usize, Vec<(String, String)>);

pub(crate) struct Sweep<'a> {
    pub id: String,
    pub param: String,
    pub metric: String,
    pub unit: String,
    /// Parameters the same in every series.
    pub fixed: String,
    /// (label, report index, points sorted by x).
    pub series: Vec<(String, usize, Points<'a>)>,
}

pub(super) fn numeric(v: &benchsuite_core::param::Value) -> Option<f64> {
    match v {
        benchsuite_core::param::Value::Int(_) | benchsuite_core::param::Value::Float(_) => {
            v.as_f64()
        }
        _ => None,
    }
}

pub(super) fn size_like(param: &str) -> bool {
    matches!(param, "block" | "size" | "stride")
        || param.contains("size")
        || param.contains("bytes")
}

pub(super) fn headline(r: &Record) -> Option<&Metric> {
    r.metrics.first()
}

pub(super) const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1240px}\
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}\
td,th{border:1px solid #ddd;padding:2px 6px;text-align:left;vertical-align:top}\
th{background:#f3f3f3}.regressed{background:#fde0e0;color:#a00000;font-weight:bold}\
.improved{background:#e2f5e2}.undecided{background:#fff6d6}.failed{color:#a00000}\
.skipped{color:#777}svg.chart{margin:.4em .4em .4em 0;border:1px solid #eee}\
.grid{display:flex;flex-wrap:wrap}ul{margin:0;padding-left:1.2em}pre{font-size:.8em;background:#f7f7f7;padding:.5em;overflow:auto}";
