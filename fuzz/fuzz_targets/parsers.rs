//! The parsers user text reaches: sizes, durations, percentages, compare
//! thresholds and sweep lists. Errors, never panics; a size list stays
//! within its parameter's bounds.
#![no_main]

use benchsuite_core::ParamSpec;
use benchsuite_report::compare::{ThresholdRule, Tolerance};
use benchsuite_core::sweep::parse_values;
use benchsuite_core::units::{parse_duration, parse_percent, parse_size};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(t) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_size(t);
    let _ = parse_duration(t);
    let _ = parse_percent(t);
    let _ = Tolerance::parse(t);
    let _ = ThresholdRule::parse(t);
    let size = ParamSpec::size("block", "bytes", 512, 1 << 30, 4096);
    if let Ok(vs) = parse_values(&size, t) {
        for v in vs {
            let b = v.as_u64().unwrap();
            assert!((512..=1 << 30).contains(&b));
        }
    }
    let _ = parse_values(&ParamSpec::count("threads", "n", 1, 1024, 1), t);
});
