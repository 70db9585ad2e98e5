//! x86_64 kernels in inline assembly: registers only, no memory traffic in
//! the timed loop, a fixed number of independent dependency chains.
//!
//! Every kernel has the same shape and the same ABI:
//!
//! ```text
//! unsafe fn(iters: u64 /* rdi, > 0 */, consts: *const u8 /* rsi, 128 B */, out: *mut u8 /* rdx, 64 B */)
//!   load two constant vectors (or one multiplier) from `consts`
//!   initialise the accumulators
//! 2: BODY × 4 (each BODY: one instruction per accumulator)
//!   dec rdi; jnz 2b
//!   add the accumulators together, store the sum to `out`, vzeroupper
//! ```
//!
//! Writing the loop in assembly pins down exactly what is measured: the
//! compiler can neither drop, fuse, vectorise nor reorder the arithmetic,
//! and the instruction count per iteration is known. The body is unrolled
//! four times so the loop's own `dec`/`jnz` (one fused µop) is at most 1 in
//! 57 µops and cannot steal a meaningful share of an FMA port.
//!
//! Accumulators per kernel: 24 for 512-bit kernels (zmm0–23, sources in
//! zmm30/31), 14 for 256/128-bit and scalar SSE kernels (xmm/ymm0–13,
//! sources in 14/15), 10 general-purpose registers for scalar integer
//! kernels. Enough chains to cover latency × ports of every kernel here on
//! current cores: e.g. FMA 4 cycles × 2 ports = 8 in flight, `vpmullq` 15
//! cycles at one per 1.5 cycles = 10.

/// The signature every kernel has; see the module docs.
pub(crate) type RawKernel = unsafe fn(u64, *const u8, *mut u8);

/// `op pN, a, b` for each register N: accumulate `a ⊗ b` into pN.
macro_rules! acc3 {
    ($op:literal, $p:literal, $a:literal, $b:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, $i, ", ", $a, ", ", $b, "\n",)*)
    };
}

/// `op pN, pN, pN`: zeroes pN (xor idiom).
macro_rules! zero3 {
    ($op:literal, $p:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, $i, ", ", $p, $i, ", ", $p, $i, "\n",)*)
    };
}

/// `op pN, pN`: zeroes pN (two-operand xor idiom).
macro_rules! zero2 {
    ($op:literal, $p:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, $i, ", ", $p, $i, "\n",)*)
    };
}

/// `op pN, pN, s`: a chain pN ← pN ⊗ s.
macro_rules! self3 {
    ($op:literal, $p:literal, $s:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, $i, ", ", $p, $i, ", ", $s, "\n",)*)
    };
}

/// `op pN, s` (two-operand SSE and integer forms, and register copies).
macro_rules! two {
    ($op:literal, $p:literal, $s:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, $i, ", ", $s, "\n",)*)
    };
}

/// `op p0, p0, pN` for each N: sums the accumulators into p0.
macro_rules! reduce3 {
    ($op:literal, $p:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, "0, ", $p, "0, ", $p, $i, "\n",)*)
    };
}

/// `op p0, pN` (two-operand reduction).
macro_rules! reduce2 {
    ($op:literal, $p:literal; $($i:literal)*) => {
        concat!($($op, " ", $p, "0, ", $p, $i, "\n",)*)
    };
}

/// Defines one kernel: `setup` before the loop, `body` (repeated four times)
/// inside it, `finish` after it. All vector and caller-saved registers are
/// declared clobbered (`clobber_abi("C")`); r12–r15 as well, for the scalar
/// integer kernels that use them.
macro_rules! kernel {
    ($(#[$m:meta])* $name:ident, $feat:literal, setup = [$($pre:expr),* $(,)?], body = $body:expr, finish = [$($post:expr),* $(,)?]) => {
        $(#[$m])*
        #[target_feature(enable = $feat)]
        pub(crate) unsafe fn $name(iters: u64, consts: *const u8, out: *mut u8) {
            // SAFETY: the caller guarantees `iters > 0` (the loop counts down
            // to zero), `consts` points to 128 readable bytes and `out` to 64
            // writable bytes, and that the CPU has the features this function
            // is compiled for. The assembly touches no other memory and no
            // stack, and every register it writes is declared clobbered.
            unsafe {
                core::arch::asm!(
                    $($pre,)*
                    "2:",
                    $body, $body, $body, $body,
                    "dec rdi",
                    "jnz 2b",
                    $($post,)*
                    inout("rdi") iters => _,
                    in("rsi") consts,
                    in("rdx") out,
                    out("r12") _, out("r13") _, out("r14") _, out("r15") _,
                    clobber_abi("C"),
                    options(nostack),
                )
            }
        }
    };
}

// ---------------------------------------------------------------- 512-bit

macro_rules! z_setup {
    () => {
        concat!(
            "vmovups zmm30, [rsi]\n",
            "vmovups zmm31, [rsi + 64]\n",
            zero3!("vpxord", "zmm"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
        )
    };
}
macro_rules! z_acc {
    ($op:literal) => {
        acc3!($op, "zmm", "zmm30", "zmm31"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23)
    };
}
macro_rules! z_chain {
    ($op:literal) => {
        self3!($op, "zmm", "zmm31"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23)
    };
}
macro_rules! z_finish {
    ($add:literal) => {
        concat!(
            reduce3!($add, "zmm"; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
            "vmovups [rdx], zmm0\n",
            "vzeroupper\n",
        )
    };
}
/// Integer chains start from the (odd) multiplier so they never collapse to 0.
macro_rules! z_chain_setup {
    () => {
        concat!(
            "vmovups zmm31, [rsi + 64]\n",
            two!("vmovdqa64", "zmm", "zmm31"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23),
        )
    };
}

kernel!(
    /// 24 × `vfmadd231pd zmm`: acc += a·b, 8 f64 lanes.
    fma_pd_zmm, "avx512f", setup = [z_setup!()], body = z_acc!("vfmadd231pd"), finish = [z_finish!("vaddpd")]
);
kernel!(
    /// 12 × `vfmadd231pd zmm` (acc += a·b) and 12 × `vaddpd zmm` (acc += a)
    /// on separate accumulators, 8 f64 lanes: the FMA units and the FP
    /// adders beside them at once.
    fma_add_pd_zmm, "avx512f", setup = [z_setup!()],
    body = concat!(
        acc3!("vfmadd231pd", "zmm", "zmm30", "zmm31"; 0 1 2 3 4 5 6 7 8 9 10 11),
        self3!("vaddpd", "zmm", "zmm30"; 12 13 14 15 16 17 18 19 20 21 22 23),
    ),
    finish = [z_finish!("vaddpd")]
);
kernel!(
    /// 12 × `vfmadd231ps zmm` and 12 × `vaddps zmm`, 16 f32 lanes.
    fma_add_ps_zmm, "avx512f", setup = [z_setup!()],
    body = concat!(
        acc3!("vfmadd231ps", "zmm", "zmm30", "zmm31"; 0 1 2 3 4 5 6 7 8 9 10 11),
        self3!("vaddps", "zmm", "zmm30"; 12 13 14 15 16 17 18 19 20 21 22 23),
    ),
    finish = [z_finish!("vaddps")]
);
kernel!(
    /// 24 × `vfmadd231ps zmm`: acc += a·b, 16 f32 lanes.
    fma_ps_zmm, "avx512f", setup = [z_setup!()], body = z_acc!("vfmadd231ps"), finish = [z_finish!("vaddps")]
);
kernel!(
    /// 24 × `vfmadd231ph zmm` (AVX512-FP16): acc += a·b, 32 f16 lanes.
    fma_ph_zmm, "avx512f,avx512bw,avx512fp16", setup = [z_setup!()], body = z_acc!("vfmadd231ph"), finish = [z_finish!("vaddph")]
);
kernel!(
    /// 24 × `vdpbf16ps zmm` (AVX512-BF16): per f32 lane, acc += a₀b₀ + a₁b₁
    /// over a pair of bf16 values.
    dp_bf16_zmm, "avx512f,avx512bf16", setup = [z_setup!()], body = z_acc!("vdpbf16ps"), finish = [z_finish!("vaddps")]
);
kernel!(
    /// 24 × `vpdpbusd zmm` (AVX512-VNNI): per i32 lane, acc += Σ₄ u8·i8.
    vnni_i8_zmm, "avx512f,avx512vnni", setup = [z_setup!()], body = z_acc!("vpdpbusd"), finish = [z_finish!("vpaddd")]
);
kernel!(
    /// 24 × `vpdpwssd zmm` (AVX512-VNNI): per i32 lane, acc += Σ₂ i16·i16.
    vnni_i16_zmm, "avx512f,avx512vnni", setup = [z_setup!()], body = z_acc!("vpdpwssd"), finish = [z_finish!("vpaddd")]
);
kernel!(
    /// 24 chains of `vpmaddubsw zmm` (AVX512BW): 64 u8·i8 products summed in pairs to i16.
    maddubs_zmm, "avx512f,avx512bw", setup = [z_chain_setup!()], body = z_chain!("vpmaddubsw"), finish = [z_finish!("vpaddw")]
);
kernel!(
    /// 24 chains of `vpmaddwd zmm` (AVX512BW): 32 i16·i16 products summed in pairs to i32.
    maddwd_zmm, "avx512f,avx512bw", setup = [z_chain_setup!()], body = z_chain!("vpmaddwd"), finish = [z_finish!("vpaddd")]
);
kernel!(
    /// 24 chains of `vpmulld zmm`: 16 i32 multiplies (low half kept).
    mulld_zmm, "avx512f", setup = [z_chain_setup!()], body = z_chain!("vpmulld"), finish = [z_finish!("vpaddd")]
);
kernel!(
    /// 24 chains of `vpmullq zmm` (AVX512DQ): 8 i64 multiplies (low half kept).
    mullq_zmm, "avx512f,avx512dq", setup = [z_chain_setup!()], body = z_chain!("vpmullq"), finish = [z_finish!("vpaddq")]
);

// ---------------------------------------------------------------- 256-bit

macro_rules! y_setup {
    () => {
        concat!(
            "vmovups ymm14, [rsi]\n",
            "vmovups ymm15, [rsi + 64]\n",
            zero3!("vpxor", "ymm"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        )
    };
}
macro_rules! y_acc {
    ($op:literal) => {
        acc3!($op, "ymm", "ymm14", "ymm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13)
    };
}
macro_rules! y_chain {
    ($op:literal) => {
        self3!($op, "ymm", "ymm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13)
    };
}
macro_rules! y_chain_setup {
    () => {
        concat!(
            "vmovups ymm15, [rsi + 64]\n",
            two!("vmovdqa", "ymm", "ymm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        )
    };
}
macro_rules! y_finish {
    ($add:literal) => {
        concat!(
            reduce3!($add, "ymm"; 1 2 3 4 5 6 7 8 9 10 11 12 13),
            "vmovups [rdx], ymm0\n",
            "vzeroupper\n",
        )
    };
}

kernel!(
    /// 14 × `vfmadd231pd ymm` (FMA3): acc += a·b, 4 f64 lanes.
    fma_pd_ymm, "avx2,fma", setup = [y_setup!()], body = y_acc!("vfmadd231pd"), finish = [y_finish!("vaddpd")]
);
kernel!(
    /// 14 × `vfmadd231ps ymm` (FMA3): acc += a·b, 8 f32 lanes.
    fma_ps_ymm, "avx2,fma", setup = [y_setup!()], body = y_acc!("vfmadd231ps"), finish = [y_finish!("vaddps")]
);
kernel!(
    /// 14 × VEX `vpdpbusd ymm` (AVX-VNNI): per i32 lane, acc += Σ₄ u8·i8.
    vnni_i8_ymm, "avx2,avxvnni", setup = [y_setup!()], body = y_acc!("{{vex}} vpdpbusd"), finish = [y_finish!("vpaddd")]
);
kernel!(
    /// 14 × VEX `vpdpwssd ymm` (AVX-VNNI): per i32 lane, acc += Σ₂ i16·i16.
    vnni_i16_ymm, "avx2,avxvnni", setup = [y_setup!()], body = y_acc!("{{vex}} vpdpwssd"), finish = [y_finish!("vpaddd")]
);
kernel!(
    /// 14 chains of `vpmaddubsw ymm` (AVX2): 32 u8·i8 products summed in pairs.
    maddubs_ymm, "avx2", setup = [y_chain_setup!()], body = y_chain!("vpmaddubsw"), finish = [y_finish!("vpaddw")]
);
kernel!(
    /// 14 chains of `vpmaddwd ymm` (AVX2): 16 i16·i16 products summed in pairs.
    maddwd_ymm, "avx2", setup = [y_chain_setup!()], body = y_chain!("vpmaddwd"), finish = [y_finish!("vpaddd")]
);
kernel!(
    /// 14 chains of `vpmulld ymm` (AVX2): 8 i32 multiplies.
    mulld_ymm, "avx2", setup = [y_chain_setup!()], body = y_chain!("vpmulld"), finish = [y_finish!("vpaddd")]
);

// ---------------------------------------------------------------- 128-bit and scalar SSE

/// SSE2 has no FMA: each chain is acc ← acc·m (mul) then acc ← acc + c
/// (add), which converges to c/(1−m) and so never overflows or goes
/// subnormal. Muls of all chains first, then adds, for the widest overlap.
macro_rules! x_setup {
    () => {
        concat!(
            "movups xmm14, [rsi]\n",
            "movups xmm15, [rsi + 64]\n",
            zero2!("xorps", "xmm"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        )
    };
}
macro_rules! x_muladd {
    ($mul:literal, $add:literal) => {
        concat!(
            two!($mul, "xmm", "xmm14"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
            two!($add, "xmm", "xmm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        )
    };
}
macro_rules! x_finish {
    ($add:literal) => {
        concat!(
            reduce2!($add, "xmm"; 1 2 3 4 5 6 7 8 9 10 11 12 13),
            "movups [rdx], xmm0\n",
        )
    };
}

kernel!(
    /// 14 chains of `mulpd` + `addpd` (SSE2): 2 f64 lanes.
    muladd_pd_xmm, "sse2", setup = [x_setup!()], body = x_muladd!("mulpd", "addpd"), finish = [x_finish!("addpd")]
);
kernel!(
    /// 14 chains of `mulps` + `addps` (SSE2): 4 f32 lanes.
    muladd_ps_xmm, "sse2", setup = [x_setup!()], body = x_muladd!("mulps", "addps"), finish = [x_finish!("addps")]
);
kernel!(
    /// 14 chains of `mulsd` + `addsd`: scalar f64.
    muladd_sd, "sse2", setup = [x_setup!()], body = x_muladd!("mulsd", "addsd"), finish = [x_finish!("addsd")]
);
kernel!(
    /// 14 chains of `mulss` + `addss`: scalar f32.
    muladd_ss, "sse2", setup = [x_setup!()], body = x_muladd!("mulss", "addss"), finish = [x_finish!("addss")]
);
kernel!(
    /// 14 chains of `pmaddwd xmm` (SSE2): 8 i16·i16 products summed in pairs.
    maddwd_xmm, "sse2",
    setup = ["movups xmm15, [rsi + 64]", two!("movdqa", "xmm", "xmm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13)],
    body = two!("pmaddwd", "xmm", "xmm15"; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
    finish = [x_finish!("paddd")]
);

// ---------------------------------------------------------------- scalar integer

/// Ten general-purpose accumulators (rax, rcx, r8–r15), multiplier in rsi.
macro_rules! gpr_setup {
    () => {
        concat!(
            "mov rsi, [rsi + 64]\n",
            two!("mov", "", "rsi"; "rax" "rcx" "r8" "r9" "r10" "r11" "r12" "r13" "r14" "r15"),
        )
    };
}
macro_rules! gpr_finish {
    () => {
        concat!(
            "add rax, rcx\nadd rax, r8\nadd rax, r9\nadd rax, r10\nadd rax, r11\n",
            "add rax, r12\nadd rax, r13\nadd rax, r14\nadd rax, r15\n",
            "mov [rdx], rax\n",
        )
    };
}

kernel!(
    /// 10 chains of `imul r64, r64`.
    imul64, "sse2", setup = [gpr_setup!()],
    body = two!("imul", "", "rsi"; "rax" "rcx" "r8" "r9" "r10" "r11" "r12" "r13" "r14" "r15"),
    finish = [gpr_finish!()]
);
kernel!(
    /// 10 chains of `imul r32, r32`.
    imul32, "sse2", setup = [gpr_setup!()],
    body = two!("imul", "", "esi"; "eax" "ecx" "r8d" "r9d" "r10d" "r11d" "r12d" "r13d" "r14d" "r15d"),
    finish = [gpr_finish!()]
);

// ---------------------------------------------------------------- clock

/// `iters` × 100 dependent `add rax, rcx`: one cycle each on every x86_64
/// core (a register operand, so no rename-time immediate folding applies).
pub(crate) fn add_chain(iters: u64) -> u64 {
    if iters == 0 {
        return 0;
    }
    let out: u64;
    // SAFETY: registers only; `rdi` counts down from iters > 0 to zero.
    unsafe {
        core::arch::asm!(
            "xor eax, eax",
            "mov ecx, 1",
            "2:",
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            two!("add", "", "rcx"; "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax" "rax"),
            "dec rdi",
            "jnz 2b",
            inout("rdi") iters => _,
            out("rax") out,
            out("rcx") _,
            options(nostack, nomem),
        );
    }
    out
}

/// Dependent adds per [`add_chain`] iteration.
pub(crate) const ADDS_PER_ITER: u64 = 100;
