//! Which record of a report pairs with a baseline's record, found through
//! an index: by id and requested point, by id and the point that ran, and
//! (for a parameter one build has and the other lacks) by id and the
//! values of the parameters both records have. Each lookup costs the
//! records that share its key, not the whole report: pairing had scanned
//! every record for every record (issue 37 L4: 10k records took 5.9 s,
//! 20k over 40 s).
//!
//! The index only narrows the search: every candidate is checked with the
//! rule itself (equal points, `==` on their values), so a hash collision,
//! `-0.0` against `0.0` or a NaN pairs exactly as the rule says.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use benchsuite_core::param::{Point, Value};
use benchsuite_core::results::{Record, Report};

/// The records of one report, indexed for [`RecordIndex::pair`].
pub(super) struct RecordIndex<'a> {
    records: &'a [Record],
    /// By id and requested point.
    requested: HashMap<u64, Bucket>,
    /// By id and the point that ran.
    ran: HashMap<u64, Bucket>,
    /// By id: the records grouped by the names of their requested
    /// parameters.
    shapes: HashMap<&'a str, Vec<Shape<'a>>>,
}

/// The records under one key, in report order; those before `skip` are
/// all used.
#[derive(Default)]
struct Bucket {
    skip: usize,
    members: Vec<usize>,
}

/// The records of one id whose requested parameters have these names.
struct Shape<'a> {
    names: Vec<&'a str>,
    members: Vec<usize>,
    /// Built when first needed: for the names this shape shares with a
    /// record of another shape (by their hash), the members by their
    /// values of those names.
    by_common: HashMap<u64, HashMap<u64, Vec<usize>>>,
}

impl<'a> RecordIndex<'a> {
    /// Indexes `report`'s records: linear in their number.
    pub(super) fn new(report: &'a Report) -> RecordIndex<'a> {
        let mut index = RecordIndex {
            records: &report.records,
            requested: HashMap::new(),
            ran: HashMap::new(),
            shapes: HashMap::new(),
        };
        for (i, r) in report.records.iter().enumerate() {
            let req = r.requested_params();
            index
                .requested
                .entry(key(&r.id, req))
                .or_default()
                .members
                .push(i);
            index
                .ran
                .entry(key(&r.id, &r.params))
                .or_default()
                .members
                .push(i);
            let shapes = index.shapes.entry(r.id.as_str()).or_default();
            let names: Vec<&str> = req.0.keys().map(String::as_str).collect();
            match shapes.iter_mut().find(|s| s.names == names) {
                Some(s) => s.members.push(i),
                None => shapes.push(Shape {
                    names,
                    members: vec![i],
                    by_common: HashMap::new(),
                }),
            }
        }
        index
    }

    /// The record that pairs with `b`, among those `used` does not mark
    /// (an index past its end is free): the first with the same id and
    /// requested point; failing that, the first with the same id and point
    /// that ran; failing that, the one record (if exactly one) of the same
    /// id with another number of requested parameters that agrees on
    /// every parameter both have (a report from before `rate` existed).
    pub(super) fn pair(&mut self, b: &Record, used: &[bool]) -> Option<(usize, &'a Record)> {
        let records = self.records;
        let free = |i: usize| used.get(i).is_none_or(|u| !u);
        let first = |bucket: Option<&mut Bucket>, same: &dyn Fn(&Record) -> bool| {
            let bucket = bucket?;
            while bucket.skip < bucket.members.len() && !free(bucket.members[bucket.skip]) {
                bucket.skip += 1;
            }
            bucket.members[bucket.skip..]
                .iter()
                .copied()
                .find(|&i| free(i) && same(&records[i]))
        };
        let breq = b.requested_params();
        let found = first(self.requested.get_mut(&key(&b.id, breq)), &|n| {
            n.id == b.id && n.requested_params() == breq
        })
        .or_else(|| {
            first(self.ran.get_mut(&key(&b.id, &b.params)), &|n| {
                n.id == b.id && n.params == b.params
            })
        });
        if let Some(i) = found {
            return Some((i, &records[i]));
        }
        let shapes = self.shapes.get_mut(b.id.as_str())?;
        let names: Vec<&str> = breq.0.keys().map(String::as_str).collect();
        let mut agreeing = Vec::new();
        for shape in shapes.iter_mut().filter(|s| s.names.len() != names.len()) {
            let common: Vec<&str> = names
                .iter()
                .copied()
                .filter(|n| shape.names.binary_search(n).is_ok())
                .collect();
            let by_values = shape
                .by_common
                .entry(hash_names(&common))
                .or_insert_with(|| {
                    let mut m: HashMap<u64, Vec<usize>> = HashMap::new();
                    for &i in &shape.members {
                        let p = records[i].requested_params();
                        m.entry(values_hash(p, &common)).or_default().push(i);
                    }
                    m
                });
            let candidates = by_values.get(&values_hash(breq, &common));
            for &i in candidates.into_iter().flatten() {
                let n = &records[i];
                if free(i)
                    && n.id == b.id
                    && n.requested_params().0.len() != breq.0.len()
                    && agree(n.requested_params(), breq)
                {
                    agreeing.push(i);
                    if agreeing.len() > 1 {
                        return None;
                    }
                }
            }
        }
        match agreeing[..] {
            [i] => Some((i, &records[i])),
            _ => None,
        }
    }
}

/// Whether every parameter of `x` that `y` also has has the same value.
fn agree(x: &Point, y: &Point) -> bool {
    x.0.iter().all(|(k, v)| y.0.get(k).is_none_or(|w| w == v))
}

/// The hash of an id and a point: equal points hash alike (`-0.0` as
/// `0.0`, since they are equal).
fn key(id: &str, p: &Point) -> u64 {
    let mut h = DefaultHasher::new();
    id.hash(&mut h);
    for (k, v) in &p.0 {
        k.hash(&mut h);
        hash_value(v, &mut h);
    }
    h.finish()
}

fn hash_names(names: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    names.hash(&mut h);
    h.finish()
}

/// The hash of `p`'s values of `names` (a missing one hashes as absent).
fn values_hash(p: &Point, names: &[&str]) -> u64 {
    let mut h = DefaultHasher::new();
    for n in names {
        match p.0.get(*n) {
            Some(v) => hash_value(v, &mut h),
            None => h.write_u8(0xff),
        }
    }
    h.finish()
}

fn hash_value(v: &Value, h: &mut DefaultHasher) {
    match v {
        Value::Bool(b) => (0u8, *b).hash(h),
        Value::Int(i) => (1u8, *i).hash(h),
        Value::Float(f) => (2u8, if *f == 0.0 { 0u64 } else { f.to_bits() }).hash(h),
        Value::Str(s) => (3u8, s).hash(h),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::host::Host;
    use benchsuite_core::results::{RunConfigRecord, Status};

    fn record(id: &str, params: &[(&str, Value)]) -> Record {
        let mut p = Point::default();
        for (k, v) in params {
            p.set(k, v.clone());
        }
        // An ok record with no metrics: the index pairs on id and params.
        let mut r = Record::skipped(id, p, "");
        r.status = Status::Ok;
        r.reason = None;
        r
    }

    fn report(records: Vec<Record>) -> Report {
        Report {
            schema_version: "1.8".into(),
            tool_version: "0.1.0".into(),
            started_at: String::new(),
            host: Host::default(),
            cluster: None,
            config: RunConfigRecord::default(),
            progress: None,
            records,
        }
    }

    /// The rule as a scan over every record (what the index replaced).
    fn scan(report: &Report, b: &Record, used: &[bool]) -> Option<usize> {
        let free = |i: &usize| used.get(*i).is_none_or(|u| !u);
        let rs = &report.records;
        (0..rs.len())
            .find(|i| {
                free(i) && rs[*i].id == b.id && rs[*i].requested_params() == b.requested_params()
            })
            .or_else(|| {
                (0..rs.len()).find(|i| free(i) && rs[*i].id == b.id && rs[*i].params == b.params)
            })
            .or_else(|| {
                let mut f = (0..rs.len()).filter(|i| {
                    free(i)
                        && rs[*i].id == b.id
                        && rs[*i].requested_params().0.len() != b.requested_params().0.len()
                        && agree(rs[*i].requested_params(), b.requested_params())
                });
                match (f.next(), f.next()) {
                    (Some(one), None) => Some(one),
                    _ => None,
                }
            })
    }

    #[test]
    fn the_index_pairs_exactly_as_a_scan_of_every_record() {
        use Value::{Float, Int, Str};
        let mut records = Vec::new();
        // Duplicates, floats equal as -0/0 and unequal as NaN, another id,
        // a parameter only some records have, auto values that resolved.
        for i in 0..40u64 {
            let mut r = record(
                if i % 7 == 0 { "b.x" } else { "a.x" },
                &[("threads", Int(i % 5)), ("size", Int(i % 3))],
            );
            if i % 4 == 0 {
                r.params
                    .set("rate", Float(if i % 8 == 0 { -0.0 } else { 0.0 }));
            }
            if i % 6 == 0 {
                let mut req = r.params.clone();
                req.set("size", Str("auto".into()));
                r.requested = Some(req);
            }
            if i == 13 {
                r.params.set("rate", Float(f64::NAN));
            }
            records.push(r);
        }
        let new = report(records.clone());
        let base = report(records.into_iter().rev().collect());
        for mark_used in [false, true] {
            let mut index = RecordIndex::new(&new);
            let mut used = vec![false; new.records.len()];
            for b in &base.records {
                let want = scan(&new, b, &used);
                let got = index.pair(b, &used).map(|(i, _)| i);
                assert_eq!(got, want, "{}", b.key());
                if let (Some(i), true) = (got, mark_used) {
                    used[i] = true;
                }
            }
        }
        // A record without `rate` pairs the one record with it that agrees
        // on the rest, and none where two agree.
        let with_rate = report(vec![
            record("a.x", &[("threads", Int(1)), ("rate", Int(5))]),
            record("a.x", &[("threads", Int(2)), ("rate", Int(5))]),
            record("a.x", &[("threads", Int(2)), ("rate", Int(6))]),
        ]);
        let mut index = RecordIndex::new(&with_rate);
        let one = record("a.x", &[("threads", Int(1))]);
        let two = record("a.x", &[("threads", Int(2))]);
        assert_eq!(index.pair(&one, &[]).map(|(i, _)| i), Some(0));
        assert_eq!(index.pair(&two, &[]).map(|(i, _)| i), None);
        assert_eq!(index.pair(&two, &[false, true]).map(|(i, _)| i), Some(2));
    }
}
