//! Parameter sweeps: lists (`1,2,4,8`), ranges (`1K..1M:x2`, `1..8`,
//! `0..100:+10`) and their cartesian product, validated against a
//! benchmark's [`ParamSpec`]s before anything runs.

use std::collections::BTreeMap;

use crate::bench::Meta;
use crate::error::ConfigError;
use crate::param::{ParamKind, ParamSpec, Point, Value};

/// Most values one range may expand to.
pub const MAX_RANGE_VALUES: usize = 4096;
/// Most points one benchmark's sweep may expand to.
pub const MAX_POINTS: usize = 10_000;

/// Expands the text of one parameter (`1,2,4..16:x2`) into its values.
///
/// Grammar: a comma-separated list of items; an item is a scalar value or,
/// for counts and sizes, a range `START..END[:xFACTOR|:+STEP]` including both
/// ends when reached. Count ranges step `+1` by default, size ranges `x2`.
/// A count with a [unit](crate::param::CountUnit) also takes its multiples
/// (`sm`, `2sm`, `1..2sm:x2`). A value listed twice (`1..sm:x2,sm` where
/// the SM count is a power of two) runs once, where it first appears.
pub fn parse_values(spec: &ParamSpec, text: &str) -> Result<Vec<Value>, ConfigError> {
    let name = &spec.name;
    let bad = |value: &str, reason: String| ConfigError::InvalidValue {
        param: name.to_string(),
        value: value.to_string(),
        reason,
    };
    let mut out = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(bad(text, "empty item in list".into()));
        }
        let Some((start, rest)) = item.split_once("..") else {
            out.push(spec.parse_scalar(item)?);
            continue;
        };
        let numeric = matches!(
            spec.kind,
            ParamKind::Count { .. } | ParamKind::Size { .. } | ParamKind::Rate { .. }
        );
        if !numeric {
            return Err(bad(
                item,
                "ranges apply to numbers, sizes and rates only; list choices with commas".into(),
            ));
        }
        let (end, step) = match rest.split_once(':') {
            Some((e, s)) => (e, Some(s.trim())),
            None => (rest, None),
        };
        let bound = |text: &str| -> Result<u64, ConfigError> {
            spec.parse_scalar(text)?.as_u64().ok_or_else(|| {
                bad(
                    item,
                    format!("a range runs between numbers, not `{}`", text.trim()),
                )
            })
        };
        let lo = bound(start)?;
        let hi = bound(end)?;
        if hi < lo {
            return Err(bad(item, "the range end is below its start".into()));
        }
        enum Step {
            Add(u64),
            Mul(f64),
        }
        let rate = matches!(spec.kind, ParamKind::Rate { .. });
        let step = match step {
            None if matches!(spec.kind, ParamKind::Size { .. }) || rate => Step::Mul(2.0),
            None => Step::Add(1),
            Some(s) => {
                let never = || bad(item, format!("range step `{s}` would never advance"));
                if let Some(d) = s.strip_prefix(['x', '*']) {
                    // Rates may grow by a fraction (x1.5); counts and sizes
                    // by whole factors.
                    let f: f64 = if rate {
                        d.parse().ok().filter(|f: &f64| f.is_finite())
                    } else {
                        d.parse::<u64>().ok().map(|n| n as f64)
                    }
                    .ok_or_else(|| {
                        bad(
                            item,
                            format!("bad range step `{s}` (use :x2 to multiply or :+4 to add)"),
                        )
                    })?;
                    if f < if rate { 1.01 } else { 2.0 } {
                        return Err(never());
                    }
                    Step::Mul(f)
                } else {
                    let digits = s.strip_prefix('+').unwrap_or(s);
                    let n = match spec.kind {
                        ParamKind::Size { .. } => crate::units::parse_size(digits)
                            .map_err(|e| bad(item, format!("bad range step `{s}`: {e}")))?,
                        ParamKind::Rate { .. } => crate::param::parse_rate(digits)
                            .map_err(|e| bad(item, format!("bad range step `{s}`: {e}")))?
                            as u64,
                        _ => digits.parse::<u64>().map_err(|_| {
                            bad(
                                item,
                                format!("bad range step `{s}` (use :x2 to multiply or :+4 to add)"),
                            )
                        })?,
                    };
                    if n < 1 {
                        return Err(never());
                    }
                    Step::Add(n)
                }
            }
        };
        if lo == 0 && matches!(step, Step::Mul(_)) {
            return Err(bad(item, "a multiplying range cannot start at 0".into()));
        }
        // A fractional factor is applied to the exact value and each point
        // rounded, so 1k..10k:x1.5 does not drift by its roundings.
        let mut exact = lo as f64;
        let mut v = lo;
        let mut count = 0;
        while v <= hi {
            out.push(Value::Int(v));
            count += 1;
            if count > MAX_RANGE_VALUES {
                return Err(bad(
                    item,
                    format!("range expands to more than {MAX_RANGE_VALUES} values"),
                ));
            }
            let next = match step {
                Step::Add(n) => v.checked_add(n),
                Step::Mul(f) => {
                    exact *= f;
                    let r = exact.round();
                    (r < u64::MAX as f64).then_some((r as u64).max(v + 1))
                }
            };
            match next {
                Some(n) if n != u64::MAX => v = n,
                _ => break,
            }
        }
    }
    let mut seen = Vec::with_capacity(out.len());
    out.retain(|v| {
        let new = !seen.contains(v);
        if new {
            seen.push(v.clone());
        }
        new
    });
    Ok(out)
}

/// Which value each parameter takes when the user gives none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Defaults {
    /// The declared default.
    #[default]
    Default,
    /// The small smoke value (tests).
    Smoke,
}

/// Expands the sweep for one benchmark: each declared parameter takes the
/// values given in `given` (by name) or its default, and the points are the
/// cartesian product, in declaration order (last parameter varies fastest).
/// Entries in `given` the benchmark does not declare are ignored here (the
/// caller checks that each is accepted by at least one selected benchmark).
/// A sweep key (`RunConfig::sweep`) is a parameter name, for every
/// selected benchmark that declares it (`size`), or `SELECTOR:NAME` for
/// the benchmarks the selector names only (`os.syscall:call`, `os:*`
/// never: the selector is a benchmark id, a module or a glob such as
/// `mem.*`). Returns (selector, parameter name).
pub fn scope_of(key: &str) -> (Option<&str>, &str) {
    match key.split_once(':') {
        Some((sel, name)) => (Some(sel.trim()), name.trim()),
        None => (None, key),
    }
}

/// Whether `selector` names benchmark `id`: the id, its module, or a glob.
pub fn selects(selector: &str, id: &str) -> bool {
    let module = id.split('.').next().unwrap_or(id);
    selector == id || selector == module || crate::registry::glob(selector, id)
}

/// Whether sweep key `key` gives values to the benchmark of `meta`.
pub fn key_applies(key: &str, meta: &Meta) -> bool {
    let (sel, name) = scope_of(key);
    sel.is_none_or(|s| selects(s, &meta.id)) && meta.param(name).is_some()
}

/// The sweep of one benchmark: the keys that apply to it, by parameter
/// name; a scoped key (`os.syscall:call`) wins over a plain one (`call`).
pub fn sweep_for(sweep: &BTreeMap<String, String>, meta: &Meta) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for scoped in [false, true] {
        for (key, values) in sweep {
            let (sel, name) = scope_of(key);
            if sel.is_some() == scoped && key_applies(key, meta) {
                out.insert(name.to_string(), values.clone());
            }
        }
    }
    out
}

pub fn expand(
    meta: &Meta,
    given: &BTreeMap<String, String>,
    defaults: Defaults,
) -> Result<Vec<Point>, ConfigError> {
    let mut axes: Vec<(&str, Vec<Value>)> = Vec::new();
    for spec in &meta.params {
        let values = match given.get(spec.name.as_ref()) {
            Some(text) => parse_values(spec, text)?,
            None => vec![match defaults {
                Defaults::Default => spec.default.clone(),
                Defaults::Smoke => spec.smoke_value().clone(),
            }],
        };
        axes.push((&spec.name, values));
    }
    let total = axes
        .iter()
        .try_fold(1usize, |acc, (_, v)| acc.checked_mul(v.len()));
    match total {
        Some(t) if t <= MAX_POINTS => {}
        _ => {
            return Err(ConfigError::SweepTooLarge {
                bench: meta.id.to_string(),
                points: total.unwrap_or(usize::MAX),
                limit: MAX_POINTS,
            });
        }
    }
    let mut points = vec![Point::default()];
    for (name, values) in &axes {
        let mut next = Vec::with_capacity(points.len() * values.len());
        for p in &points {
            for v in values {
                let mut q = p.clone();
                q.set(name, v.clone());
                next.push(q);
            }
        }
        points = next;
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::MetricSpec;

    fn size_spec() -> ParamSpec {
        ParamSpec::size("block", "", 1, 1 << 30, 4096)
    }

    fn ints(v: &[Value]) -> Vec<u64> {
        v.iter().map(|x| x.as_u64().unwrap()).collect()
    }

    #[test]
    fn lists_and_ranges() {
        let t = ParamSpec::count("threads", "", 1, 128, 1);
        assert_eq!(ints(&parse_values(&t, "1,2,4,8").unwrap()), [1, 2, 4, 8]);
        assert_eq!(ints(&parse_values(&t, "1..4").unwrap()), [1, 2, 3, 4]);
        assert_eq!(
            ints(&parse_values(&t, "1..16:x2").unwrap()),
            [1, 2, 4, 8, 16]
        );
        assert_eq!(ints(&parse_values(&t, "2..9:+3").unwrap()), [2, 5, 8]);
        assert_eq!(ints(&parse_values(&t, "1,4..6").unwrap()), [1, 4, 5, 6]);
        let b = size_spec();
        assert_eq!(
            ints(&parse_values(&b, "1K..1M:x2").unwrap()),
            (10..=20).map(|s| 1u64 << s).collect::<Vec<_>>()
        );
        assert_eq!(
            ints(&parse_values(&b, "4K..16K:+4K").unwrap()),
            [4096, 8192, 12288, 16384]
        );
    }

    #[test]
    fn a_count_unit_resolves_its_multiples_and_says_when_it_cannot() {
        use crate::param::CountUnit;
        let sm = |resolve| {
            ParamSpec::count("blocks", "", 0, 1 << 20, 0).with_unit(CountUnit {
                suffix: "sm",
                meaning: "the SM count of device 0",
                resolve,
            })
        };
        let t = sm(|| Ok(132));
        assert_eq!(ints(&parse_values(&t, "sm").unwrap()), [132]);
        assert_eq!(ints(&parse_values(&t, "2sm, 0").unwrap()), [264, 0]);
        assert_eq!(
            ints(&parse_values(&t, "1..sm:x2,sm,2sm").unwrap()),
            [1, 2, 4, 8, 16, 32, 64, 128, 132, 264]
        );
        assert_eq!(
            ints(&parse_values(&t, "sm..2sm:+66").unwrap()),
            [132, 198, 264]
        );
        // A power-of-two SM count: the knee is listed once.
        let p = sm(|| Ok(128));
        assert_eq!(
            ints(&parse_values(&p, "32..sm:x2,sm,2sm").unwrap()),
            [32, 64, 128, 256]
        );
        for (bad, needle) in [
            ("xsm", "multiple of `sm`"),
            ("10000sm", "between 0 and"),
            ("sm2", "whole number"),
        ] {
            let e = parse_values(&t, bad).unwrap_err().to_string();
            assert!(e.contains(needle) && e.contains("`blocks`"), "{bad}: {e}");
        }
        let none = sm(|| Err("no CUDA driver".into()));
        let e = parse_values(&none, "1..sm:x2").unwrap_err().to_string();
        assert!(
            e.contains("the SM count of device 0") && e.contains("no CUDA driver"),
            "{e}"
        );
        // Plain numbers need no unit.
        assert_eq!(ints(&parse_values(&none, "1,2").unwrap()), [1, 2]);
        // Without a unit the suffix is just a bad number.
        let plain = ParamSpec::count("blocks", "", 0, 1 << 20, 0);
        assert!(parse_values(&plain, "sm").is_err());
    }

    #[test]
    fn bad_sweeps_name_the_parameter() {
        let b = size_spec();
        for bad in [
            "1XB",
            "4K..1K",
            "1K..1M:x1",
            "1K..1M:+0",
            "1K..1M:y2",
            "",
            "1K,,2K",
            "0..4K:x2",
        ] {
            let e = parse_values(&b, bad).unwrap_err().to_string();
            assert!(e.contains("`block`"), "{bad}: {e}");
        }
        let c = ParamSpec::choice("op", "", &["read", "write"], "read");
        assert!(parse_values(&c, "read..write").is_err());
        assert_eq!(parse_values(&c, "read,write").unwrap().len(), 2);
        let t = ParamSpec::count("threads", "", 1, 128, 1);
        assert!(
            parse_values(&t, "0")
                .unwrap_err()
                .to_string()
                .contains("between 1 and 128")
        );
        assert!(parse_values(&t, "1..1000000").is_err());
    }

    #[test]
    fn cartesian_product_in_declaration_order() {
        let meta = Meta {
            id: "x.y".into(),
            description: "".into(),
            params: vec![
                ParamSpec::count("threads", "", 1, 8, 1).with_smoke(Value::Int(2)),
                size_spec(),
                ParamSpec::choice("op", "", &["read", "write"], "read"),
            ],
            metrics: vec![MetricSpec::time_per_op("t")],
        };
        let mut given = BTreeMap::new();
        given.insert("threads".into(), "1,2".into());
        given.insert("block".into(), "4K..8K".into());
        let pts = expand(&meta, &given, Defaults::Default).unwrap();
        let labels: Vec<String> = pts.iter().map(Point::label).collect();
        assert_eq!(
            labels,
            [
                "block=4096 op=read threads=1",
                "block=8192 op=read threads=1",
                "block=4096 op=read threads=2",
                "block=8192 op=read threads=2"
            ]
        );
        let smoke = expand(&meta, &BTreeMap::new(), Defaults::Smoke).unwrap();
        assert_eq!(smoke.len(), 1);
        assert_eq!(smoke[0].u64("threads").unwrap(), 2);
        given.insert("threads".into(), "1..8".into());
        given.insert("block".into(), "1..1G:+1".into());
        assert!(expand(&meta, &given, Defaults::Default).is_err());
    }
}
