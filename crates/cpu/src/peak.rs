//! Theoretical peaks: `cores × GHz × operations per cycle per core`, with
//! every input and its source recorded.
//!
//! - **cores**: distinct physical cores among the CPUs the threads run on
//!   (sysfs topology; SMT siblings share one core's FMA units).
//! - **GHz**: the user's `--opt cpu-ghz=…`, else *measured* (see
//!   [`measured_ghz`]): a VM usually hides the real clock, so it is timed.
//! - **operations per cycle per core**: lanes × ops per lane × instructions
//!   per cycle, where instructions per cycle (FMA units of the width, or an
//!   integer instruction's throughput) come from a small table keyed by the
//!   CPUID family/model (`source: table`), or `--opt fma-ports=N`
//!   (`source: user`). An unknown CPU gets **no peak** and a caveat, never
//!   a guess.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use benchsuite_core::team::Placement;
use benchsuite_core::{BenchError, Peak, PeakInput};
#[cfg(target_arch = "x86_64")]
use benchsuite_core::{Work, team::Team};

use crate::kernel::{Kernel, PeakModel};

/// Family/model of an x86 CPU, from CPUID leaf 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuId {
    /// `GenuineIntel`, `AuthenticAMD`.
    pub vendor: String,
    /// Display family.
    pub family: u32,
    /// Display model.
    pub model: u32,
}

/// Reads the vendor, family and model with CPUID.
#[cfg(target_arch = "x86_64")]
pub fn cpuid() -> Option<CpuId> {
    use std::arch::x86_64::__cpuid;
    let l0 = __cpuid(0);
    let vendor: Vec<u8> = [l0.ebx, l0.edx, l0.ecx]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let l1 = __cpuid(1);
    let base_family = (l1.eax >> 8) & 0xF;
    let family = if base_family == 0xF {
        base_family + ((l1.eax >> 20) & 0xFF)
    } else {
        base_family
    };
    let mut model = (l1.eax >> 4) & 0xF;
    if base_family == 6 || base_family == 0xF {
        model |= ((l1.eax >> 16) & 0xF) << 4;
    }
    Some(CpuId {
        vendor: String::from_utf8(vendor).ok()?,
        family,
        model,
    })
}

/// Not x86_64: no CPUID.
#[cfg(not(target_arch = "x86_64"))]
pub fn cpuid() -> Option<CpuId> {
    None
}

/// What the table knows about one microarchitecture.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Uarch {
    /// Name, for the record.
    pub name: &'static str,
    /// FMA (or FP multiply/add) instructions per cycle per core at each
    /// width: scalar, 128, 256, 512 bits (0 = width not supported).
    pub fma_per_cycle: [u32; 4],
    /// FP operations per cycle per core for an even mix of separate
    /// multiplies and adds (the SSE2 and scalar kernels) at each width:
    /// scalar, 128, 256, 512 bits. Cores with extra FP adders exceed the
    /// FMA unit count here.
    pub muladd_per_cycle: [u32; 4],
    /// Integer instruction throughput (register-to-register instructions per
    /// cycle per core, the reciprocal of the reciprocal throughput) by
    /// `cpu.iops` kernel key; an instruction not listed gets no peak.
    pub int_per_cycle: &'static [(&'static str, f64)],
}

/// Golden Cove / Raptor Cove server cores (Sapphire / Emerald Rapids) and
/// Sunny Cove server cores (Ice Lake-SP) have two 512-bit FMA units (ports 0
/// and 5; Intel documents two for every Xeon Scalable SKU since Ice Lake).
/// Integer throughputs are Intel's published reciprocal throughputs for these
/// cores (the Intrinsics Guide's CPI): multiplies and dot products on both
/// 512-bit pipes (CPI 0.5); `vpmulld` is 2 µops (CPI 1), `vpmullq` 3 µops
/// (CPI 1.5); scalar `imul` runs on port 1 only.
///
/// LLVM's models disagree in two places; Intel's figures are kept. The Ice
/// Lake model (llvm/lib/Target/X86/X86SchedIceLake.td, one model for client
/// and server Ice Lake) puts `vpmullq zmm` on port 0 only, reciprocal
/// throughput 3.00 (llvm/test/tools/llvm-mca/X86/IceLakeServer/
/// resources-avx512dq.s); the rest matches (`vpdpbusd zmm` 0.50 on ports 0
/// and 5, resources-avx512vnni.s). The Sapphire Rapids model
/// (X86SchedSapphireRapids.td, inferred from measurements) puts its 512-bit
/// FMA class (WriteFMAZ) and `vpdpbusd zmm` on port 0 only (1.00,
/// SapphireRapids/resources-avx512vnni.s), i.e. it describes one 512-bit unit,
/// not the two of a Xeon; its AVX-VNNI `vpdpbusd ymm` (0.50 on ports 0 and 1,
/// resources-avxvnni.s) matches. Ice Lake-SP has no AVX-VNNI, so its `ymm`
/// dot-product entries are never looked up.
const INTEL_SERVER_INT: &[(&str, f64)] = &[
    ("vpdpbusd zmm", 2.0),
    ("vpdpwssd zmm", 2.0),
    ("vpmaddubsw zmm", 2.0),
    ("vpmaddwd zmm", 2.0),
    ("vpmulld zmm", 1.0),
    ("vpmullq zmm", 2.0 / 3.0),
    ("vpdpbusd ymm", 2.0),
    ("vpdpwssd ymm", 2.0),
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("vpmulld ymm", 1.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Golden Cove and its successors add two fast FP adders (ports 1 and 5)
/// next to the FMA units (ports 0 and 1 up to 256 bits): a mix of separate
/// multiplies and adds issues 3 per cycle up to 256 bits.
const SPR: Uarch = Uarch {
    name: "Sapphire Rapids Xeon (Golden Cove): 2 × 512-bit FMA units",
    fma_per_cycle: [2, 2, 2, 2],
    muladd_per_cycle: [3, 3, 3, 2],
    int_per_cycle: INTEL_SERVER_INT,
};
const EMR: Uarch = Uarch {
    name: "Emerald Rapids Xeon (Raptor Cove): 2 × 512-bit FMA units",
    ..SPR
};
const GNR: Uarch = Uarch {
    name: "Granite Rapids Xeon (Redwood Cove): 2 × 512-bit FMA units",
    ..SPR
};
const ICX: Uarch = Uarch {
    name: "Ice Lake Xeon (Sunny Cove): 2 × 512-bit FMA units",
    muladd_per_cycle: [2, 2, 2, 2],
    ..SPR
};

/// Skylake-SP / Cascade Lake / Cooper Lake integer throughputs, from LLVM's
/// Skylake server scheduling model (llvm/lib/Target/X86/
/// X86SchedSkylakeServer.td): 512-bit multiplies and multiply-adds
/// (WriteVecIMulZ: `vpmaddwd`, `vpmaddubsw`, and the Cascade Lake VNNI dot
/// products, which LLVM's Ice Lake model, with the same ports, also runs
/// there) issue on ports 0 and 5, 2 per cycle; `vpmulld zmm` (WritePMULLDZ) is 2 µops on
/// them, 1 per cycle; `vpmullq zmm` is 3 µops, reciprocal throughput 1.50
/// (llvm/test/tools/llvm-mca/X86/SkylakeServer/resources-avx512dq.s); 256-
/// and 128-bit multiplies (WriteVecIMulX/Y) issue on ports 0 and 1, 2 per
/// cycle, `vpmulld ymm` 2 µops, 1 per cycle; `imul r32`/`imul r64`
/// (WriteIMul32Reg/WriteIMul64Reg) 1 per cycle on port 1. Skylake-SP has no
/// AVX512-VNNI, so its dot-product entries are looked up on Cascade and Cooper
/// Lake only. Port 5's 512-bit unit is the second FMA unit of the Gold 6000 and
/// Platinum SKUs; LLVM models those, and on the one-unit SKUs the `zmm` rates
/// here are too high (`--opt fma-ports` does not apply to this table).
const SKX_INT: &[(&str, f64)] = &[
    ("vpdpbusd zmm", 2.0),
    ("vpdpwssd zmm", 2.0),
    ("vpmaddubsw zmm", 2.0),
    ("vpmaddwd zmm", 2.0),
    ("vpmulld zmm", 1.0),
    ("vpmullq zmm", 2.0 / 3.0),
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("vpmulld ymm", 1.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Skylake-SP, Cascade Lake and Cooper Lake Xeon (family 6 model 0x55):
/// two 512-bit FMA units (port 0+1 fused, and port 5) on the Gold 6000 and
/// Platinum SKUs; Bronze, Silver and some Gold 5000 SKUs enable only one,
/// which CPUID does not tell apart, so `--opt fma-ports=1` states it there
/// (Intel 64 and IA-32 Architectures Optimization Reference Manual,
/// "Skylake Server Microarchitecture"). FP adds also run on the FMA units
/// only: a multiply/add mix issues 2 per cycle.
const SKX: Uarch = Uarch {
    name: "Skylake-SP/Cascade Lake/Cooper Lake Xeon: 2 × 512-bit FMA units (Gold 6000/Platinum; --opt fma-ports=1 for one-FMA SKUs)",
    fma_per_cycle: [2, 2, 2, 2],
    muladd_per_cycle: [2, 2, 2, 2],
    int_per_cycle: SKX_INT,
};

/// Haswell and Broadwell integer throughputs, from LLVM's scheduling models
/// (llvm/lib/Target/X86/X86SchedHaswell.td and X86SchedBroadwell.td, the
/// same figures): vector integer multiplies and multiply-adds (WriteVecIMulX/Y)
/// issue on port 0 only, 1 per cycle; `vpmulld` (WritePMULLD/Y) is 2 µops on
/// port 0, one every 2 cycles; `imul r32`/`imul r64` 1 per cycle on port 1.
/// OSACA's Haswell table (RRZE-HPC/OSACA osaca/data/hsw.yml) agrees.
const HSW_INT: &[(&str, f64)] = &[
    ("vpmaddubsw ymm", 1.0),
    ("vpmaddwd ymm", 1.0),
    ("vpmulld ymm", 0.5),
    ("pmaddwd xmm", 1.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Haswell and Broadwell cores (client, Haswell-E/EP, Broadwell-E/EP/DE):
/// 2 × 256-bit FMA units.
const HSW_CLIENT: Uarch = Uarch {
    name: "Haswell/Broadwell core: 2 × 256-bit FMA units",
    fma_per_cycle: [2, 2, 2, 0],
    muladd_per_cycle: [2, 2, 2, 0],
    int_per_cycle: HSW_INT,
};

/// Skylake to Comet Lake client integer throughputs, from LLVM's Skylake
/// client model (llvm/lib/Target/X86/X86SchedSkylakeClient.td): vector
/// integer multiplies and multiply-adds (WriteVecIMulX/Y) issue on ports 0
/// and 1, 2 per cycle; `vpmulld` (WritePMULLD/Y) is 2 µops on them, 1 per
/// cycle; `imul r32`/`imul r64` 1 per cycle on port 1. Twice Haswell's vector
/// rate, hence a separate entry.
const SKL_CLIENT_INT: &[(&str, f64)] = &[
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("vpmulld ymm", 1.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Skylake, Kaby Lake, Coffee Lake and Comet Lake client cores: 2 × 256-bit
/// FMA units, as Haswell.
const SKL_CLIENT: Uarch = Uarch {
    name: "Skylake..Comet Lake client core: 2 × 256-bit FMA units",
    int_per_cycle: SKL_CLIENT_INT,
    ..HSW_CLIENT
};

/// Zen 2 integer throughputs, from LLVM's Zen 2 scheduling model
/// (llvm/lib/Target/X86/X86ScheduleZnver2.td): vector integer multiplies and
/// multiply-adds (WriteVecIMulX/Y) issue on FP pipe 0 only, 1 per cycle;
/// `vpmulld` (WritePMULLD/Y) holds that pipe 2 cycles; `imul r32`/`imul r64`
/// 1 per cycle on the multiplier (ALU1). OSACA's measured Zen 2 table
/// (RRZE-HPC/OSACA osaca/data/zen2.yml) agrees for `pmaddwd`, `vpmaddwd` and
/// `vpmaddubsw` (pipe 0, reciprocal throughput 1.0) and has no `vpmulld` or
/// `imul` entry.
const ZEN2_INT: &[(&str, f64)] = &[
    ("vpmaddubsw ymm", 1.0),
    ("vpmaddwd ymm", 1.0),
    ("vpmulld ymm", 0.5),
    ("pmaddwd xmm", 1.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Zen 2: four 256-bit FP pipes, two of them FMA/multiply and two add
/// (AMD Software Optimization Guide for Family 17h Models 30h and Greater,
/// pub. 56305, "Floating-Point Unit"): 2 FMAs per cycle, and a
/// multiply/add mix issues 4.
const ZEN2: Uarch = Uarch {
    name: "AMD Zen 2: 2 × 256-bit FMA pipes",
    fma_per_cycle: [2, 2, 2, 0],
    muladd_per_cycle: [4, 4, 4, 0],
    int_per_cycle: ZEN2_INT,
};

/// Zen 3 integer throughputs, from LLVM's Zen 3 scheduling model
/// (llvm/lib/Target/X86/X86ScheduleZnver3.td, written from llvm-exegesis
/// measurements and pub. 56665, not contributed by AMD: reviews.llvm.org/
/// D94395): vector
/// integer multiplies, multiply-adds and `vpmulld` (WriteVecIMulX/Y,
/// WritePMULLD/Y) issue on FP pipes 0 and 3, 2 per cycle; `imul r32`/`imul
/// r64` (WriteIMul32Reg/WriteIMul64Reg) 1 per cycle on ALU1. OSACA's Zen 3
/// table (RRZE-HPC/OSACA osaca/data/zen3.yml) agrees for `vpmulld ymm` (pipes
/// 0 and 3, 0.5) and `imul` (1.0) and has no multiply-add entry.
const ZEN3_INT: &[(&str, f64)] = &[
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("vpmulld ymm", 2.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Zen 3: 2 × 256-bit FMA pipes, plus 2 FP add pipes (a multiply/add mix
/// issues 4 per cycle; Software Optimization Guide for Family 19h, pub.
/// 56665).
const ZEN3: Uarch = Uarch {
    name: "AMD Zen 3: 2 × 256-bit FMA pipes",
    fma_per_cycle: [2, 2, 2, 0],
    muladd_per_cycle: [4, 4, 4, 0],
    int_per_cycle: ZEN3_INT,
};

/// Zen 4 integer throughputs, from LLVM's Zen 4 scheduling model
/// (llvm/lib/Target/X86/X86ScheduleZnver4.td, based on pub. 57647 per its
/// header): vector integer multiplies, multiply-adds and `vpmulld` issue on FP
/// pipes 0 and 3, 2 per cycle up to 256 bits and 1 per cycle at 512 bits
/// (WriteVecIMulZ, WritePMULLDZ: both pipes for 2 cycles); `vpmullq zmm` 1 per
/// cycle (llvm/test/tools/llvm-mca/X86/Znver4/resources-avx512dq.s: 1.00);
/// `imul r32`/`imul r64` 1 per cycle on ALU1. No second source gives these.
///
/// Not listed: `vpdpbusd zmm` and `vpdpwssd zmm`. The model gives their
/// register form a reciprocal throughput of 2.00 (an override holding FP
/// pipes 0/1 for 4 cycles) but the memory form of the same instruction 1.00
/// (Znver4/resources-avx512vnni.s); both cannot hold, and without a vendor
/// figure there is no peak. Zen 4 has no AVX-VNNI (VEX) `ymm` form.
const ZEN4_INT: &[(&str, f64)] = &[
    ("vpmaddubsw zmm", 1.0),
    ("vpmaddwd zmm", 1.0),
    ("vpmulld zmm", 1.0),
    ("vpmullq zmm", 1.0),
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("vpmulld ymm", 2.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 1.0),
    ("imul r64", 1.0),
];

/// Zen 4: 2 × 256-bit FMA pipes; a 512-bit FMA occupies both (1 per cycle)
/// (Software Optimization Guide for Family 19h Models 10h and later, pub.
/// 57647).
const ZEN4: Uarch = Uarch {
    name: "AMD Zen 4: 2 × 256-bit FMA pipes (one 512-bit FMA per cycle)",
    fma_per_cycle: [2, 2, 2, 1],
    muladd_per_cycle: [4, 4, 4, 2],
    int_per_cycle: ZEN4_INT,
};

/// Zen 5 integer throughputs, from LLVM's Zen 5 scheduling model
/// (llvm/lib/Target/X86/X86ScheduleZnver5.td, based on pub. 58455 per its
/// header) and its llvm-mca tables (llvm/test/tools/llvm-mca/X86/Znver5/):
/// `pmaddwd`, `vpmaddwd`, `vpmaddubsw` at every width, `vpmullq zmm` and the
/// AVX-VNNI `vpdpbusd`/`vpdpwssd ymm` issue on FP pipes 0 and 1, 2 per cycle;
/// `imul r32`/`imul r64` 3 per cycle on ALU0-2. OSACA's Zen 5 table
/// (RRZE-HPC/OSACA osaca/data/zen5.yml) agrees.
///
/// Measured (a measurement is the source here; the published ones disagree):
/// `vpmulld` at both widths, `vpdpbusd zmm`, `vpdpwssd zmm` and the BF16
/// `vdpbf16ps zmm` (cpu.flops), 2 per cycle. LLVM puts `vpmulld` on pipes 0,
/// 1 and 3, 3 per cycle at 256 bits (resources-avx2.s: 0.33) but 1.5 at 512,
/// and gives `vpdpbusd`/`vpdpwssd zmm`'s register form 0.5 per cycle but
/// the memory form 1.5 (Znver5/resources-avx512vnni.s); OSACA gives 2 per
/// cycle for all of them. On an EPYC family 0x1a model 2 KVM guest
/// (`benchsuite run cpu.iops --param precision=i8,i16,i32,i64 --param
/// isa=avx512,avx2 --param threads=1`, 2026-11-29, CV ≤ 0.6%), each
/// instruction's rate divided by that of an instruction the table has from
/// the sources above (the clock cancels): `vpdpbusd zmm` 0.998 and
/// `vpdpwssd zmm` 1.001 of `vpdpbusd ymm` (2 per cycle); `vpmulld zmm`
/// 1.000 of `vpmullq zmm` (2 per cycle) and 0.97 of `vpdpbusd ymm`;
/// `vpmulld ymm` 0.99 of `vpdpbusd ymm`; `vdpbf16ps zmm` 0.999 of
/// `vfmadd231ps zmm` (2 per cycle, pub. 58455). Against the measured clock
/// (4.32–4.47 GHz) that is 1.93–1.99 per cycle each: 2, as OSACA has it, and
/// neither 1.5 nor 3.
const ZEN5_INT: &[(&str, f64)] = &[
    ("vpdpbusd zmm", 2.0),
    ("vpdpwssd zmm", 2.0),
    ("vpmulld zmm", 2.0),
    ("vpmulld ymm", 2.0),
    ("vdpbf16ps zmm", 2.0),
    ("vpmaddubsw zmm", 2.0),
    ("vpmaddwd zmm", 2.0),
    ("vpmullq zmm", 2.0),
    ("vpdpbusd ymm", 2.0),
    ("vpdpwssd ymm", 2.0),
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 3.0),
    ("imul r64", 3.0),
];

/// Zen 5 with the full 512-bit data path (EPYC 9005 "Turin", Ryzen 9000
/// "Granite Ridge"): 2 × 512-bit FMA pipes and 2 FP add pipes (Software
/// Optimization Guide for Family 1Ah, pub. 58455).
const ZEN5: Uarch = Uarch {
    name: "AMD Zen 5: 2 × 512-bit FMA pipes",
    fma_per_cycle: [2, 2, 2, 2],
    muladd_per_cycle: [4, 4, 4, 4],
    int_per_cycle: ZEN5_INT,
};

/// Zen 5 with the 256-bit data path: LLVM has one model for every Zen 5 part,
/// so the `ymm`, `xmm` and scalar figures are those of [`ZEN5_INT`]; it does
/// not model the halved 512-bit rate, so no `zmm` key is listed.
const ZEN5_256_INT: &[(&str, f64)] = &[
    ("vpdpbusd ymm", 2.0),
    ("vpdpwssd ymm", 2.0),
    ("vpmaddubsw ymm", 2.0),
    ("vpmaddwd ymm", 2.0),
    ("pmaddwd xmm", 2.0),
    ("imul r32", 3.0),
    ("imul r64", 3.0),
];

/// Zen 5 mobile ("Strix Point"): the 256-bit data path of Zen 4, a 512-bit
/// FMA taking both pipes.
const ZEN5_256: Uarch = Uarch {
    name: "AMD Zen 5 (Strix Point, 256-bit data path): 2 × 256-bit FMA pipes",
    int_per_cycle: ZEN5_256_INT,
    ..ZEN4
};

/// The table entry for this CPU, if known. Integer throughputs come from the
/// sources cited at each table; an instruction no source gives is left out,
/// and `cpu.iops` then says it has no peak rather than guess one.
pub fn uarch(id: &CpuId) -> Option<Uarch> {
    match (id.vendor.as_str(), id.family, id.model) {
        ("GenuineIntel", 6, 0x8F) => Some(SPR),
        ("GenuineIntel", 6, 0xCF) => Some(EMR),
        ("GenuineIntel", 6, 0xAD | 0xAE) => Some(GNR),
        ("GenuineIntel", 6, 0x6A | 0x6C) => Some(ICX),
        ("GenuineIntel", 6, 0x55) => Some(SKX),
        ("GenuineIntel", 6, 0x3C | 0x3F | 0x45 | 0x46 | 0x3D | 0x47 | 0x4F | 0x56) => {
            Some(HSW_CLIENT)
        }
        ("GenuineIntel", 6, 0x4E | 0x5E | 0x8E | 0x9E | 0xA5 | 0xA6) => Some(SKL_CLIENT),
        ("AuthenticAMD", 0x17, 0x30..=0x3F | 0x47 | 0x60..=0x7F | 0x90..=0xAF) => Some(ZEN2),
        ("AuthenticAMD", 0x19, m) if m <= 0x0F || (0x20..=0x5F).contains(&m) => Some(ZEN3),
        ("AuthenticAMD", 0x19, m)
            if (0x10..=0x1F).contains(&m)
                || (0x60..=0x7F).contains(&m)
                || (0xA0..=0xAF).contains(&m) =>
        {
            Some(ZEN4)
        }
        ("AuthenticAMD", 0x1A, 0x00..=0x1F | 0x40..=0x4F) => Some(ZEN5),
        ("AuthenticAMD", 0x1A, 0x20..=0x2F) => Some(ZEN5_256),
        _ => None,
    }
}

fn width_index(bits: u32) -> usize {
    match bits {
        512 => 3,
        256 => 2,
        128 => 1,
        _ => 0,
    }
}

/// Distinct physical cores among `cpus` (sysfs topology), or `None` when the
/// topology is not exposed.
pub fn distinct_cores(cpus: &[usize]) -> Option<usize> {
    let mut set = BTreeSet::new();
    for c in cpus {
        let base = format!("/sys/devices/system/cpu/cpu{c}/topology");
        let read = |f: &str| {
            std::fs::read_to_string(format!("{base}/{f}"))
                .ok()
                .map(|s| s.trim().to_string())
        };
        set.insert((read("physical_package_id")?, read("core_id")?));
    }
    (!set.is_empty()).then_some(set.len())
}

/// The CPUs a team of `threads` runs on: the first `threads` allowed CPUs
/// when pinned, all of them when not.
pub fn cpus_used(threads: usize, placement: Placement) -> Vec<usize> {
    let cpus = benchsuite_core::team::allowed_cpus();
    match placement {
        Placement::Pinned => cpus.iter().copied().take(threads.max(1)).collect(),
        Placement::Unpinned => cpus,
    }
}

/// How long a clock measurement is reused before it is taken again (the
/// clock of a shared host drifts over minutes).
pub const CLOCK_MAX_AGE: Duration = Duration::from_secs(60);

static CLOCK: Mutex<BTreeMap<usize, (f64, Instant)>> = Mutex::new(BTreeMap::new());

/// The sustained clock in GHz with `k` cores busy, measured once per
/// process and core count (re-measured after [`CLOCK_MAX_AGE`]): `k`
/// threads pinned to the first `k` allowed CPUs each run a chain of
/// dependent `add reg, reg` (exactly 1 cycle each on every x86_64 core),
/// first for 200 ms so the clock can ramp up from idle, then in 100
/// windows of ~1 ms; a thread's clock is its best window (preemption and
/// interrupts only ever slow a window down, and short windows make an
/// undisturbed one likely on a busy machine), and the result is the mean
/// over the threads.
///
/// It is the clock while running scalar integer code: a core that lowers its
/// clock for heavy 512-bit work ("AVX-512 licence") shows that as lower
/// efficiency, which is the truth about the machine.
pub fn measured_ghz(k: usize) -> Result<f64, BenchError> {
    let k = k.max(1);
    if let Some((g, at)) = CLOCK.lock().unwrap_or_else(|p| p.into_inner()).get(&k)
        && at.elapsed() < CLOCK_MAX_AGE
    {
        return Ok(*g);
    }
    let g = measure_clock(k)?;
    CLOCK
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(k, (g, Instant::now()));
    Ok(g)
}

#[cfg(target_arch = "x86_64")]
fn measure_clock(k: usize) -> Result<f64, BenchError> {
    use crate::x86::{ADDS_PER_ITER, add_chain};
    /// Length of one timed window: short, so that some windows run without
    /// being preempted even on a busy machine.
    const WINDOW: f64 = 1e-3;
    /// Windows per thread; the best one counts.
    const WINDOWS: u32 = 100;
    // Calibrate on this thread: iterations for one window.
    let mut iters = 1_000u64;
    let window_iters = loop {
        let t0 = Instant::now();
        std::hint::black_box(add_chain(iters));
        let s = t0.elapsed().as_secs_f64();
        if s > 2e-4 || iters > 1 << 34 {
            break (((iters as f64) * WINDOW / s.max(1e-9)).ceil() as u64).max(1);
        }
        iters *= 10;
    };
    let team = Team::new(
        k,
        Placement::Pinned,
        |_| Ok(()),
        move |_: &mut (), ramp_ms| {
            // Ramp-up: an idle core may take a while to reach its clock.
            let t0 = Instant::now();
            while t0.elapsed().as_secs_f64() * 1e3 < ramp_ms as f64 {
                std::hint::black_box(add_chain(window_iters));
            }
            let mut best: f64 = 0.0;
            for _ in 0..WINDOWS {
                let t0 = Instant::now();
                std::hint::black_box(add_chain(window_iters));
                let s = t0.elapsed().as_secs_f64();
                best = best.max((window_iters * ADDS_PER_ITER) as f64 / s / 1e9);
            }
            let mut w = Work::ops(1);
            w.values.insert("ghz".into(), best);
            Ok(w)
        },
    )?;
    let w = team.run(200)?;
    team.shutdown();
    let ghz = w.values.get("ghz").copied().unwrap_or(0.0) / k as f64;
    if !(0.1..=10.0).contains(&ghz) {
        return Err(BenchError::Other(format!(
            "the clock measurement gave {ghz:.3} GHz, which is not plausible; pass --opt cpu-ghz=N"
        )));
    }
    Ok(ghz)
}

#[cfg(not(target_arch = "x86_64"))]
fn measure_clock(_k: usize) -> Result<f64, BenchError> {
    Err(BenchError::Failed(
        "the clock is measured with an x86_64 add chain; pass --opt cpu-ghz=N".into(),
    ))
}

/// User overrides from `--opt`: `cpu-ghz`, `fma-ports`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--opt cpu-ghz=3.1`: clock in GHz.
    pub ghz: Option<f64>,
    /// `--opt fma-ports=2`: FMA units at the kernel's width.
    pub fma_ports: Option<u32>,
}

impl Overrides {
    /// Reads the options; a malformed value is an error naming the option.
    pub fn from_options(opts: &BTreeMap<String, String>) -> Result<Overrides, BenchError> {
        let ghz = match opts.get("cpu-ghz") {
            Some(s) => {
                let v: f64 = s.trim().parse().map_err(|_| {
                    BenchError::Other(format!(
                        "--opt cpu-ghz={s}: expected a clock in GHz such as 3.1"
                    ))
                })?;
                if !(0.01..=20.0).contains(&v) {
                    return Err(BenchError::Other(format!(
                        "--opt cpu-ghz={s}: must be between 0.01 and 20 GHz"
                    )));
                }
                Some(v)
            }
            None => None,
        };
        let fma_ports = match opts.get("fma-ports") {
            Some(s) => {
                let v: u32 = s.trim().parse().map_err(|_| {
                    BenchError::Other(format!("--opt fma-ports={s}: expected 1, 2, ..."))
                })?;
                if !(1..=16).contains(&v) {
                    return Err(BenchError::Other(format!(
                        "--opt fma-ports={s}: must be between 1 and 16"
                    )));
                }
                Some(v)
            }
            None => None,
        };
        Ok(Overrides { ghz, fma_ports })
    }
}

/// The declarations of the `--opt` keys [`Overrides`] reads, checked the
/// way it parses them.
pub fn option_specs() -> Vec<benchsuite_core::OptionSpec> {
    fn check(key: &str, value: &str) -> Result<(), String> {
        let opts = BTreeMap::from([(key.to_string(), value.to_string())]);
        // Overrides' messages start `--opt KEY=VALUE: `; the planner's
        // error names the option and value already.
        Overrides::from_options(&opts).map(|_| ()).map_err(|e| {
            let text = e.to_string();
            let prefix = format!("--opt {key}={value}: ");
            text.strip_prefix(&prefix)
                .map_or(text.clone(), str::to_string)
        })
    }
    vec![
        benchsuite_core::OptionSpec::with_check(
            "cpu-ghz",
            "the core clock in GHz for the peak (e.g. 3.1), instead of measuring it",
            |v| check("cpu-ghz", v).map_err(Into::into),
        ),
        benchsuite_core::OptionSpec::with_check(
            "fma-ports",
            "FMA units per core at the kernel's width, for the peak (1..16)",
            |v| check("fma-ports", v).map_err(Into::into),
        ),
    ]
}

fn input(value: f64, unit: &str, source: &str) -> PeakInput {
    PeakInput {
        value,
        unit: unit.to_string(),
        source: source.to_string(),
    }
}

/// The peak of `kernel` on `cpus` (the CPUs its `threads` threads use), for
/// metric `metric` in `unit`; `Err` says why there is none (a caveat of the
/// record, not a failure).
pub fn kernel_peak(
    kernel: &Kernel,
    metric: &str,
    unit: &str,
    threads: usize,
    cpus: &[usize],
    ov: &Overrides,
) -> Result<Peak, BenchError> {
    let mut inputs = BTreeMap::new();
    let cores = distinct_cores(cpus)
        .ok_or_else(|| {
            BenchError::Other(
                "the CPU topology (sysfs core_id) is not readable, so the core count is unknown"
                    .into(),
            )
        })?
        .min(threads);
    inputs.insert("cores".into(), input(cores as f64, "cores", "sysfs"));
    let id = cpuid();
    let table = id.as_ref().and_then(uarch);
    let w = width_index(kernel.width_bits);
    let (per_cycle, formula) = match kernel.peak_model {
        PeakModel::Fma => {
            let (units, src) = match (ov.fma_ports, table) {
                (Some(p), _) => (p, "user"),
                (None, Some(t)) if t.fma_per_cycle[w] > 0 => (t.fma_per_cycle[w], "table"),
                _ => {
                    return Err(BenchError::Other(format!(
                        "FMA units per core are not known for this CPU ({}); pass --opt fma-ports=N",
                        describe(id.as_ref())
                    )));
                }
            };
            inputs.insert(
                format!("{}-bit FMA units", kernel.width_bits),
                input(units as f64, "units", src),
            );
            inputs.insert(
                "flops per instruction".into(),
                input(kernel.ops_per_instr as f64, "flop", "isa"),
            );
            (
                kernel.ops_per_instr as f64 * units as f64,
                "cores × GHz × (lanes × 2 flops per FMA) × FMA units",
            )
        }
        PeakModel::MulAdd { lanes } => {
            let (ops, src) = match (ov.fma_ports, table) {
                (Some(p), _) => (p, "user"),
                (None, Some(t)) if t.muladd_per_cycle[w] > 0 => (t.muladd_per_cycle[w], "table"),
                _ => {
                    return Err(BenchError::Other(format!(
                        "FP pipes per core are not known for this CPU ({}); pass --opt fma-ports=N",
                        describe(id.as_ref())
                    )));
                }
            };
            inputs.insert("lanes".into(), input(lanes as f64, "lanes", "isa"));
            inputs.insert(
                format!(
                    "{}-bit multiply/add instructions per cycle",
                    kernel.width_bits
                ),
                input(ops as f64, "instructions/cycle", src),
            );
            (
                (lanes * ops) as f64,
                "cores × GHz × lanes × multiply/add instructions per cycle (1 flop per lane each)",
            )
        }
        PeakModel::FmaAdd { fma, add } => {
            let (units, pipes) = table.and_then(|t| mix_units(t, w)).ok_or_else(|| {
                BenchError::Other(format!(
                    "the FMA units and FP pipes at {} bits are not in the table for this CPU ({})",
                    kernel.width_bits,
                    describe(id.as_ref())
                ))
            })?;
            inputs.insert(
                format!("{}-bit FMA units", kernel.width_bits),
                input(f64::from(units), "units", "table"),
            );
            inputs.insert(
                format!("{}-bit FP pipes for a multiply/add mix", kernel.width_bits),
                input(f64::from(pipes), "instructions/cycle", "table"),
            );
            inputs.insert(
                "FMAs and adds per body".into(),
                input(
                    f64::from(fma + add),
                    &format!("{fma} FMA + {add} add"),
                    "isa",
                ),
            );
            (
                mix_per_cycle(kernel.ops_per_instr as f64, fma, add, units, pipes),
                "cores × GHz × a body's flops (FMA 2, add 1 per lane) ÷ its cycles, max(FMAs ÷ FMA units, instructions ÷ FP pipes)",
            )
        }
        PeakModel::Table(key) => {
            let ipc = table
                .and_then(|t| t.int_per_cycle.iter().find(|(k, _)| *k == key))
                .map(|(_, v)| *v)
                .ok_or_else(|| {
                    BenchError::Other(format!(
                        "the throughput of {key} is not in the table for this CPU ({})",
                        describe(id.as_ref())
                    ))
                })?;
            // The 512-bit integer multipliers are the FMA units' (ports 0
            // and 5 on Intel): a part with fewer of them, stated with
            // `--opt fma-ports=N`, runs the table's 512-bit rate scaled down.
            let table_units = table.map_or(0, |t| t.fma_per_cycle[3]);
            let (ipc, src) = match ov.fma_ports {
                Some(p) if kernel.width_bits == 512 && table_units > 0 => (
                    ipc * f64::from(p.min(table_units)) / f64::from(table_units),
                    "user",
                ),
                _ => (ipc, "table"),
            };
            inputs.insert(
                format!("{key} per cycle"),
                input(ipc, "instructions/cycle", src),
            );
            inputs.insert(
                "ops per instruction".into(),
                input(kernel.ops_per_instr as f64, "op", "isa"),
            );
            (
                ipc * kernel.ops_per_instr as f64,
                "cores × GHz × ops per instruction × instructions per cycle",
            )
        }
    };
    let formula = match (table, ov.fma_ports, &kernel.peak_model) {
        (Some(t), None, _) | (Some(t), Some(_), PeakModel::Table(_)) => {
            format!("{formula}; table entry: {}", t.name)
        }
        _ => formula.to_string(),
    };
    let (ghz, src) = match ov.ghz {
        Some(g) => (g, "user"),
        None => (measured_ghz(cpus.len().min(threads).max(1))?, "measured"),
    };
    inputs.insert("GHz".into(), input(ghz, "GHz", src));
    Ok(Peak {
        metric: metric.to_string(),
        value: cores as f64 * ghz * 1e9 * per_cycle,
        unit: unit.to_string(),
        formula,
        inputs,
        efficiency: None,
    })
}

/// The FMA units and the FP pipes a multiply/add mix uses at width index
/// `w`, where the table knows both.
fn mix_units(t: Uarch, w: usize) -> Option<(u32, u32)> {
    let (f, p) = (t.fma_per_cycle[w], t.muladd_per_cycle[w]);
    (f > 0 && p > 0).then_some((f, p.max(f)))
}

/// Flops per cycle per core of a body of `fma` FMAs and `add` adds
/// (`ops_per_instr` on average): its flops over its cycles, the larger of
/// FMAs over the FMA units and instructions over the pipes.
fn mix_per_cycle(ops_per_instr: f64, fma: u32, add: u32, units: u32, pipes: u32) -> f64 {
    let n = f64::from(fma + add);
    let cycles = (f64::from(fma) / f64::from(units)).max(n / f64::from(pipes));
    ops_per_instr * n / cycles
}

/// For an FMA-only kernel of `width_bits` and `ops_per_instr` flops: the
/// flops per cycle per core that FMAs and adds together reach where the
/// core has FP adders beside its FMA units (none where the mix is no
/// faster, or the table does not know the CPU), and the FMA units' own.
pub fn fma_add_bound(width_bits: u32, ops_per_instr: u64) -> Option<(f64, f64)> {
    let t = cpuid().as_ref().and_then(uarch)?;
    let w = width_index(width_bits);
    let (units, pipes) = mix_units(t, w)?;
    let fma_only = ops_per_instr as f64 * f64::from(units);
    // The mix kernel: 12 FMAs and 12 adds, 3/4 of an FMA's flops each.
    let mix = mix_per_cycle(ops_per_instr as f64 * 0.75, 12, 12, units, pipes);
    (mix > fma_only * 1.0001).then_some((mix, fma_only))
}

fn describe(id: Option<&CpuId>) -> String {
    match id {
        Some(c) => format!("{} family {:#x} model {:#x}", c.vendor, c.family, c.model),
        None => "CPUID not available".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_lookup() {
        let spr = CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 0x8F,
        };
        assert_eq!(uarch(&spr).unwrap().fma_per_cycle[3], 2);
        let unknown = CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 0x01,
        };
        assert!(uarch(&unknown).is_none());
        let id = |vendor: &str, family, model| CpuId {
            vendor: vendor.into(),
            family,
            model,
        };
        // (CPU, FMAs per cycle at 256 and 512 bits, mul/add mix at 256).
        for (cpu, f256, f512, mix) in [
            (id("AuthenticAMD", 0x17, 0x31), 2, 0, 4), // EPYC 7002 Rome
            (id("AuthenticAMD", 0x19, 0x01), 2, 0, 4), // EPYC 7003 Milan
            (id("AuthenticAMD", 0x19, 0x11), 2, 1, 4), // EPYC 9004 Genoa
            (id("AuthenticAMD", 0x1A, 0x02), 2, 2, 4), // EPYC 9005 Turin
            (id("AuthenticAMD", 0x1A, 0x24), 2, 1, 4), // Ryzen AI 300
            (id("GenuineIntel", 6, 0x55), 2, 2, 2),    // Xeon Scalable 1st-3rd
        ] {
            let u = uarch(&cpu).unwrap_or_else(|| panic!("{cpu:?} is in the table"));
            assert_eq!(
                (
                    u.fma_per_cycle[2],
                    u.fma_per_cycle[3],
                    u.muladd_per_cycle[2]
                ),
                (f256, f512, mix),
                "{}",
                u.name
            );
        }
        // Zen and Zen+ (128-bit units) are not: no peak rather than a wrong one.
        assert!(uarch(&id("AuthenticAMD", 0x17, 0x08)).is_none());
    }

    /// The `cpu.iops` kernel keys (`kernel::pick_iops`), by the ISA a core
    /// needs to run them.
    const BASE_KEYS: [&str; 3] = ["pmaddwd xmm", "imul r32", "imul r64"];
    const AVX2_KEYS: [&str; 3] = ["vpmaddubsw ymm", "vpmaddwd ymm", "vpmulld ymm"];
    const AVX_VNNI_KEYS: [&str; 2] = ["vpdpbusd ymm", "vpdpwssd ymm"];
    const AVX512_KEYS: [&str; 4] = [
        "vpmaddubsw zmm",
        "vpmaddwd zmm",
        "vpmulld zmm",
        "vpmullq zmm",
    ];
    const AVX512_VNNI_KEYS: [&str; 2] = ["vpdpbusd zmm", "vpdpwssd zmm"];
    /// cpu.flops' bf16 kernel looks its rate up in the same table; no
    /// table must have it (none but Zen 5's has a source).
    const BF16_KEYS: [&str; 1] = ["vdpbf16ps zmm"];

    /// What a table entry's cores can run, and the keys its table leaves
    /// out on purpose (each table's doc comment says why).
    struct IsaSpec {
        uarch: Uarch,
        avx512: bool,
        avx512_vnni: bool,
        avx_vnni: bool,
        unsourced: &'static [&'static str],
    }

    fn spec(
        uarch: Uarch,
        avx512: bool,
        avx512_vnni: bool,
        avx_vnni: bool,
        unsourced: &'static [&'static str],
    ) -> IsaSpec {
        IsaSpec {
            uarch,
            avx512,
            avx512_vnni,
            avx_vnni,
            unsourced,
        }
    }

    fn isa_specs() -> Vec<IsaSpec> {
        vec![
            spec(SPR, true, true, true, &[]),
            spec(EMR, true, true, true, &[]),
            spec(GNR, true, true, true, &[]),
            spec(ICX, true, true, false, &[]),
            // Cascade and Cooper Lake have AVX512-VNNI; Skylake-SP never
            // looks those keys up.
            spec(SKX, true, true, false, &[]),
            spec(HSW_CLIENT, false, false, false, &[]),
            spec(SKL_CLIENT, false, false, false, &[]),
            spec(ZEN2, false, false, false, &[]),
            spec(ZEN3, false, false, false, &[]),
            // LLVM's register and memory forms contradict each other.
            spec(ZEN4, true, true, false, &AVX512_VNNI_KEYS),
            // Where the sources disagree, measured (the table's comment).
            spec(ZEN5, true, true, true, &[]),
            // No source for the 256-bit data path's 512-bit rate.
            spec(
                ZEN5_256,
                true,
                true,
                true,
                &[
                    "vpdpbusd zmm",
                    "vpdpwssd zmm",
                    "vpmaddubsw zmm",
                    "vpmaddwd zmm",
                    "vpmulld zmm",
                    "vpmullq zmm",
                    "vpmulld ymm",
                ],
            ),
        ]
    }

    /// Every distinct entry `uarch` returns, over every model number of the
    /// families it knows.
    fn every_table_entry() -> Vec<Uarch> {
        let mut seen: Vec<Uarch> = Vec::new();
        for (vendor, family) in [
            ("GenuineIntel", 6),
            ("AuthenticAMD", 0x17),
            ("AuthenticAMD", 0x19),
            ("AuthenticAMD", 0x1A),
        ] {
            for model in 0..=0xFF {
                let id = CpuId {
                    vendor: vendor.into(),
                    family,
                    model,
                };
                if let Some(u) = uarch(&id)
                    && !seen.contains(&u)
                {
                    seen.push(u);
                }
            }
        }
        seen
    }

    #[test]
    fn int_tables_cover_every_kernel_key_the_core_runs() {
        let specs = isa_specs();
        let entries = every_table_entry();
        assert_eq!(entries.len(), specs.len(), "one ISA spec per table entry");
        let known: Vec<&str> = BASE_KEYS
            .iter()
            .chain(&AVX2_KEYS)
            .chain(&AVX_VNNI_KEYS)
            .chain(&AVX512_KEYS)
            .chain(&AVX512_VNNI_KEYS)
            .chain(&BF16_KEYS)
            .copied()
            .collect();
        for u in entries {
            let s = specs
                .iter()
                .find(|s| s.uarch == u)
                .unwrap_or_else(|| panic!("{}: no ISA spec in this test", u.name));
            let mut required: Vec<&str> = BASE_KEYS.iter().chain(&AVX2_KEYS).copied().collect();
            if s.avx_vnni {
                required.extend(AVX_VNNI_KEYS);
            }
            if s.avx512 {
                required.extend(AVX512_KEYS);
            }
            if s.avx512_vnni {
                required.extend(AVX512_VNNI_KEYS);
            }
            let has = |key: &str| u.int_per_cycle.iter().any(|(k, _)| *k == key);
            for key in required {
                if s.unsourced.contains(&key) {
                    assert!(!has(key), "{}: {key} is listed as unsourced", u.name);
                } else {
                    assert!(has(key), "{}: no throughput for {key}", u.name);
                }
            }
            for (i, (key, v)) in u.int_per_cycle.iter().enumerate() {
                assert!(known.contains(key), "{}: unknown key {key}", u.name);
                assert!(
                    v.is_finite() && *v > 0.0 && *v <= 4.0,
                    "{}: {key} = {v}",
                    u.name
                );
                assert!(
                    !u.int_per_cycle[..i].iter().any(|(k, _)| k == key),
                    "{}: {key} twice",
                    u.name
                );
            }
        }
    }

    #[test]
    fn int_throughputs_follow_their_sources() {
        let id = |vendor: &str, family, model| CpuId {
            vendor: vendor.into(),
            family,
            model,
        };
        let ipc = |cpu: &CpuId, key: &str| {
            let u = uarch(cpu).unwrap_or_else(|| panic!("{cpu:?} is in the table"));
            u.int_per_cycle
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        // (CPU, key, instructions per cycle; None = deliberately no peak).
        for (cpu, key, want) in [
            (id("AuthenticAMD", 0x17, 0x31), "vpmulld ymm", Some(0.5)), // Rome
            (id("AuthenticAMD", 0x17, 0x31), "vpmaddwd ymm", Some(1.0)),
            (id("AuthenticAMD", 0x19, 0x01), "vpmulld ymm", Some(2.0)), // Milan
            (id("AuthenticAMD", 0x19, 0x01), "pmaddwd xmm", Some(2.0)),
            (id("AuthenticAMD", 0x19, 0x01), "imul r64", Some(1.0)),
            (id("AuthenticAMD", 0x19, 0x11), "vpmulld zmm", Some(1.0)), // Genoa
            (id("AuthenticAMD", 0x19, 0x11), "vpdpbusd zmm", None),
            (id("AuthenticAMD", 0x1A, 0x02), "vpmulld ymm", Some(2.0)), // Turin, measured
            (id("AuthenticAMD", 0x1A, 0x02), "vpdpbusd zmm", Some(2.0)),
            (id("AuthenticAMD", 0x1A, 0x02), "vdpbf16ps zmm", Some(2.0)),
            (id("AuthenticAMD", 0x19, 0x11), "vdpbf16ps zmm", None), // Genoa: unmeasured
            (id("AuthenticAMD", 0x1A, 0x02), "vpmaddwd zmm", Some(2.0)),
            (id("AuthenticAMD", 0x1A, 0x02), "vpdpbusd ymm", Some(2.0)),
            (id("AuthenticAMD", 0x1A, 0x02), "imul r32", Some(3.0)),
            (id("AuthenticAMD", 0x1A, 0x24), "vpmaddwd zmm", None), // Strix
            (id("GenuineIntel", 6, 0x55), "vpmullq zmm", Some(2.0 / 3.0)),
            (id("GenuineIntel", 6, 0x55), "vpdpwssd zmm", Some(2.0)),
            (id("GenuineIntel", 6, 0x3F), "vpmulld ymm", Some(0.5)), // Haswell-EP
            (id("GenuineIntel", 6, 0x4F), "pmaddwd xmm", Some(1.0)), // Broadwell-EP
            (id("GenuineIntel", 6, 0x9E), "vpmulld ymm", Some(1.0)), // Coffee Lake
            (id("GenuineIntel", 6, 0x9E), "pmaddwd xmm", Some(2.0)),
        ] {
            assert_eq!(ipc(&cpu, key), want, "{cpu:?} {key}");
        }
    }

    #[test]
    fn clock_is_plausible_and_cached() {
        #[cfg(target_arch = "x86_64")]
        {
            let g = measured_ghz(1).unwrap();
            assert!((0.1..=10.0).contains(&g), "{g}");
            assert_eq!(measured_ghz(1).unwrap(), g, "cached per process");
        }
    }

    #[test]
    fn overrides_are_checked() {
        let mut o = BTreeMap::new();
        o.insert("cpu-ghz".to_string(), "fast".to_string());
        let e = Overrides::from_options(&o).unwrap_err().to_string();
        assert!(e.contains("cpu-ghz"), "{e}");
        o.insert("cpu-ghz".to_string(), "2.5".to_string());
        o.insert("fma-ports".to_string(), "2".to_string());
        let v = Overrides::from_options(&o).unwrap();
        assert_eq!((v.ghz, v.fma_ports), (Some(2.5), Some(2)));
    }

    #[test]
    fn topology_counts_cores() {
        let cpus = benchsuite_core::team::allowed_cpus();
        if let Some(n) = distinct_cores(&cpus) {
            assert!(n >= 1 && n <= cpus.len());
        }
    }

    #[test]
    fn fma_and_add_together_are_bounded_by_units_and_pipes() {
        // Zen 5, zmm f64 (2 FMA units, 4 FP pipes): 12 FMAs + 12 adds in 6
        // cycles, 288 flops: 48 per cycle, 1.5 × the FMA units' 32.
        assert_eq!(mix_per_cycle(12.0, 12, 12, 2, 4), 48.0);
        // Zen 4, zmm double-pumped (1 unit, 2 pipes): 24 vs the FMAs' 16.
        assert_eq!(mix_per_cycle(12.0, 12, 12, 1, 2), 24.0);
        // Adds on the FMA ports (Skylake-SP, 2 and 2): the mix is slower
        // than FMAs alone (24 < 32), so no second peak is claimed.
        assert_eq!(mix_per_cycle(12.0, 12, 12, 2, 2), 24.0);
        let skx = uarch(&CpuId {
            vendor: "GenuineIntel".into(),
            family: 6,
            model: 0x55,
        })
        .unwrap();
        assert_eq!(mix_units(skx, 3), Some((2, 2)));
        let zen5 = uarch(&CpuId {
            vendor: "AuthenticAMD".into(),
            family: 0x1a,
            model: 0x02,
        })
        .unwrap();
        assert_eq!(mix_units(zen5, 3), Some((2, 4)));
    }
}
