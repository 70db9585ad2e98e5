//! `compare`'s report loader on arbitrary bytes: an error, never a panic;
//! a report that loads compares with itself without panicking.
#![no_main]

use benchsuite_report::compare::compare;
use benchsuite_core::Report;
use benchsuite_report::CompareOptions;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = Report::from_json(&text, "fuzz.json") {
        let _ = compare(&r, &r, &CompareOptions::default());
    }
});
