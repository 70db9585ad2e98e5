//! Plan files as `benchsuite run -f` reads them (`benchsuite::phase`): a
//! mangled plan never panics the parser or the planner.

use benchsuite::RunConfig;
use benchsuite::phase::{Given, read_plan};
use proptest::prelude::*;

/// The shipped plans, the seeds the fuzzer mutates.
const SEEDS: [&str; 8] = [
    include_str!("../../plans/os.toml"),
    include_str!("../../plans/cpu.toml"),
    include_str!("../../plans/cpu-trace.toml"),
    include_str!("../../plans/memory.toml"),
    include_str!("../../plans/disk.toml"),
    include_str!("../../plans/network.toml"),
    include_str!("../../plans/gpu.toml"),
    include_str!("../../plans/sysbench.toml"),
];

/// Fragments a mutation inserts: TOML syntax, plan keys, parameter
/// values good and bad, multi-byte text.
const BITS: [&str; 24] = [
    "[[phase]]\n",
    "name = \"x\"\n",
    "select = [\"os.syscall\"]\n",
    "select = []\n",
    "params = { threads = \"1..1G:x2\" }\n",
    "params = { nope = 1 }\n",
    "quick_params = { block = [1, 2.5, true] }\n",
    "runs = -1\n",
    "runs = 99999999999999999999\n",
    "rounds = 0\n",
    "duration = \"-3s\"\n",
    "interval = \"0s\"\n",
    "min_sample_time = \"1e400s\"\n",
    "=",
    "\"",
    "{",
    "}",
    "[",
    "\n",
    "#",
    "é",
    "💥",
    "\u{0}",
    "x = { y = { z = [[[]]] } }\n",
];

fn mutated() -> impl Strategy<Value = String> {
    (
        0..SEEDS.len(),
        prop::collection::vec((any::<prop::sample::Index>(), 0..BITS.len(), 0..3u8), 1..6),
    )
        .prop_map(|(seed, edits)| {
            let mut s = SEEDS[seed].to_string();
            for (at, bit, kind) in edits {
                let mut i = at.index(s.len() + 1);
                while !s.is_char_boundary(i) {
                    i -= 1;
                }
                match kind {
                    // Delete up to 12 bytes.
                    0 => {
                        let mut j = (i + 12).min(s.len());
                        while !s.is_char_boundary(j) {
                            j -= 1;
                        }
                        s.replace_range(i..j, "");
                    }
                    _ => s.insert_str(i, BITS[bit]),
                }
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A mangled plan never panics the parser or the planner: it plans,
    /// or the error names the file (and a line).
    #[test]
    fn mangled_plans_plan_or_name_the_file(text in mutated()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("plan.toml");
        std::fs::write(&path, &text).unwrap();
        let file = path.display().to_string();
        let given = Given { quick: true, ..Given::default() };
        let base = RunConfig::default();
        match read_plan(&path, &given, &base) {
            Err(e) => {
                let m = format!("{e:#}");
                prop_assert!(
                    m.starts_with(&format!("{file}:")) || m.starts_with(&format!("-f {file}")),
                    "{m}"
                );
            }
            Ok(planned) => {
                let registry = benchsuite::registry();
                for p in planned {
                    if let Err(e) = benchsuite::runner::plan(&registry, &p.config) {
                        let m = format!("{:#}", p.explain(e));
                        prop_assert!(m.starts_with(&format!("{file}:")), "{m}");
                    }
                }
            }
        }
    }
}
