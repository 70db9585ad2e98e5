//! Short record keys for the human-readable formats: a benchmark id and
//! only the parameters that tell its records apart.

use std::collections::{BTreeMap, BTreeSet};

use benchsuite_core::param::{Point, Value};

/// Each item's key, showing only what distinguishes it: a parameter whose
/// value differs between the items of the same benchmark (or that some of
/// them lack), or one named in `given` (set on the command line). Sizes
/// (`block`, `size`, `stride`, `*_size`, `*bytes`) read `1MiB`.
///
/// Items may repeat (one per metric of a record): a repeat changes nothing.
/// `O(n log n)` in the number of items.
pub(super) fn short_keys(items: &[(&str, &Point)], given: &BTreeSet<&str>) -> Vec<String> {
    // Per benchmark: its number of items, and per parameter the items that
    // have it and its distinct values.
    type Seen<'a> = (usize, BTreeMap<&'a str, (usize, BTreeSet<String>)>);
    let mut seen: BTreeMap<&str, Seen<'_>> = BTreeMap::new();
    for (id, params) in items {
        let e = seen.entry(id).or_default();
        e.0 += 1;
        for (name, v) in &params.0 {
            let p = e.1.entry(name.as_str()).or_default();
            p.0 += 1;
            p.1.insert(v.to_string());
        }
    }
    items
        .iter()
        .map(|(id, params)| {
            let (n, by_name) = &seen[id];
            let shown: Vec<String> = params
                .0
                .iter()
                .filter(|(name, _)| {
                    let (has, values) = &by_name[name.as_str()];
                    given.contains(name.as_str()) || values.len() > 1 || has < n
                })
                .map(|(name, v)| format!("{name}={}", param_text(name, v)))
                .collect();
            if shown.is_empty() {
                id.to_string()
            } else {
                format!("{id} {}", shown.join(" "))
            }
        })
        .collect()
}

/// A parameter's value for a key: a byte size in binary units.
pub(super) fn param_text(name: &str, value: &Value) -> String {
    let size = matches!(name, "block" | "size" | "stride")
        || name.ends_with("_size")
        || name.ends_with("bytes");
    match value {
        Value::Int(v) if size => benchsuite_core::units::format_size(*v),
        v => v.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(p: &[(&str, Value)]) -> Point {
        Point(p.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    #[test]
    fn a_key_shows_what_differs_within_its_benchmark_in_human_sizes() {
        let a = point(&[
            ("block", Value::Int(4096)),
            ("op", Value::Str("read".into())),
        ]);
        let b = point(&[
            ("block", Value::Int(1 << 20)),
            ("op", Value::Str("read".into())),
        ]);
        let c = point(&[("threads", Value::Int(2))]);
        let d = point(&[("threads", Value::Int(2)), ("pin", Value::Str("on".into()))]);
        let items = [
            ("disk.io", &a),
            ("disk.io", &a),
            ("disk.io", &b),
            ("cpu.flops", &c),
            ("cpu.flops", &d),
            ("os.timer", &c),
        ];
        let keys = short_keys(&items, &BTreeSet::new());
        assert_eq!(
            keys,
            [
                "disk.io block=4KiB",
                "disk.io block=4KiB",
                "disk.io block=1MiB",
                "cpu.flops",
                "cpu.flops pin=on",
                "os.timer",
            ]
        );
        let keys = short_keys(&items, &BTreeSet::from(["threads"]));
        assert_eq!(keys[5], "os.timer threads=2");
    }
}
