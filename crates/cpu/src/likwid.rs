//! `cpu.flops`'s reference: `likwid-bench -t peakflops*` with the same
//! precision, instruction set and threads (`benchsuite reference
//! cpu.flops`).

use benchsuite_core::reference::{argv, number_after};
use benchsuite_core::{Point, Reference, Value};

/// The widest instruction set `isa=auto` picks here (as the kernels
/// dispatch: AVX-512 → AVX2+FMA → SSE2 → scalar).
pub fn auto_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2";
        }
        if std::arch::is_x86_feature_detected!("sse2") {
            return "sse2";
        }
    }
    "scalar"
}

/// `likwid-bench -t peakflops[_sp][_avx512_fma|_avx_fma|_sse] -W
/// N:16kB×T:T -s 2` for `precision` f64/f32; None for f16 and bf16
/// (likwid-bench has no such kernels). `isa` is resolved (`auto` → the
/// CPU's widest).
pub fn peakflops(point: &Point, auto: &str) -> Option<Reference> {
    // likwid-bench's peakflops kernels are FMA-only: no reference for the
    // FMA+ADD mix.
    if point.get("mix").and_then(|v| v.as_str()) == Some("fma_add") {
        return None;
    }
    let sp = match point.get("precision")?.as_str()? {
        "f64" => "",
        "f32" => "_sp",
        _ => return None,
    };
    let isa = match point.get("isa")?.as_str()? {
        "auto" => auto,
        i => i,
    };
    let suffix = match isa {
        "avx512" => "_avx512_fma",
        "avx2" => "_avx_fma",
        "sse2" => "_sse",
        "scalar" => "",
        _ => return None,
    };
    let threads = point.get("threads")?.as_u64()?;
    let mut r = Reference::new(
        "likwid-bench",
        "likwid",
        argv([
            "likwid-bench".to_string(),
            "-t".into(),
            format!("peakflops{sp}{suffix}"),
            "-W".into(),
            // An L1-resident array per thread: the kernel loads one operand.
            format!("N:{}kB:{threads}", 16 * threads),
            "-s".into(),
            "2".into(),
        ]),
        "flops",
        |out| number_after(out, "MFlops/s:").map(|m| m * 1e6),
    );
    r.version_argv = argv(["likwid-bench", "-h"]);
    let mut note = "likwid's peakflops kernel loads one operand per group of arithmetic from an L1-resident array; ours is register-only".to_string();
    if point.get("pin").and_then(Value::as_bool) == Some(false) {
        note.push_str("; likwid-bench pins its threads, ours did not (pin=off)");
    }
    r.note = Some(note);
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(precision: &str, isa: &str, threads: u64) -> Point {
        let mut p = Point::default();
        p.set("precision", Value::Str(precision.into()));
        p.set("isa", Value::Str(isa.into()));
        p.set("threads", Value::Int(threads));
        p.set("pin", Value::Bool(true));
        p
    }

    #[test]
    fn peakflops_kernels_follow_precision_and_isa() {
        let r = peakflops(&point("f64", "auto", 2), "avx2").unwrap();
        assert_eq!(
            r.command(),
            "likwid-bench -t peakflops_avx_fma -W N:32kB:2 -s 2"
        );
        assert_eq!(
            (r.tool, r.package, r.metric),
            ("likwid-bench", "likwid", "flops")
        );
        let r = peakflops(&point("f32", "avx512", 4), "avx2").unwrap();
        assert_eq!(
            r.command(),
            "likwid-bench -t peakflops_sp_avx512_fma -W N:64kB:4 -s 2"
        );
        let r = peakflops(&point("f64", "sse2", 1), "avx2").unwrap();
        assert!(r.command().contains("-t peakflops_sse "));
        let r = peakflops(&point("f32", "scalar", 1), "avx2").unwrap();
        assert!(r.command().contains("-t peakflops_sp "));
        assert!(peakflops(&point("f16", "avx512", 1), "avx512").is_none());
        assert!(peakflops(&point("bf16", "auto", 1), "avx512").is_none());
        let out = "Number of Flops:\t188743680000\nMFlops/s:\t\t101101.96\n";
        assert_eq!((r.parse)(out), Ok(101101.96e6));
    }
}
