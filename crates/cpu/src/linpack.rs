//! `cpu.linpack`: solve a dense random system Ax = b in f64 by LU with
//! partial pivoting, HPL-style GFLOPS and residual check.
//!
//! `solver` picks the LU. `faer`: faer's blocked, recursive LU
//! (`faer::linalg::lu::partial_pivoting`) and its triangular solves on a
//! rayon pool of `threads` threads, pinned as `pin` says. `lapack`:
//! `dgetrf`/`dgetrs` of the system's optimised LAPACK (OpenBLAS, else
//! MKL), loaded at run time (`lapack.rs`; the generic `liblapack.so.3` is
//! never used, as it may be the netlib reference), told to use `threads`
//! threads; those threads are the library's own, so `pin=on` cannot place
//! them and the record says so in a caveat. Without such a library a
//! `solver=lapack` point is skipped with what was tried and
//! `apt install libopenblas0-pthread`. `auto` (default) is `lapack` where
//! such a library loads, else `faer`; a note says which ran and why, and
//! names the library file and its version (`openblas_get_config()`).
//! Both solvers share everything else: the matrix, the timing boundary
//! (factor + solve timed; restoring A from a pristine copy and the residual
//! check not) and HPL's residual check (computed with faer), so their
//! records compare directly. For both, the working matrix's 2 MiB-aligned
//! interior is advised as transparent huge pages (`MADV_HUGEPAGE`) before
//! its first touch; a note says so, with the system's THP mode.

use std::ffi::c_int;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchsuite_core::team::{Placement, pin_current_thread};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Choice, ConfigError, Context, Direction, Finished, Meta,
    MetricSource, MetricSpec, ParamSpec, Peak, Point, Value, Work, error_chain,
};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::{factor, solve};
use faer::{Accum, Mat, Par};

pub use crate::hpcc::hpl_flops;
use crate::lapack::Lapack;
use crate::peak::{Overrides, cpus_used, kernel_peak};
use crate::throughput::{cpu_count, pin_param, placement_caveats, threads_param};

/// HPL's acceptance threshold for the scaled residual.
pub const RESIDUAL_THRESHOLD: f64 = 16.0;

/// Largest accepted N (a 100000² f64 matrix is 80 GB; the memory check
/// decides what fits).
const MAX_N: u64 = 200_000;

/// Dense LU solve; see the crate docs.
#[derive(Debug, Default)]
pub struct Linpack;

benchsuite_core::choice_enum! {
    /// Values of the `solver` parameter.
    pub(crate) enum Solver {
        /// [`Solver::Lapack`] where an optimised LAPACK loads, else
        /// [`Solver::Faer`].
        Auto = "auto",
        /// faer's LU on a rayon pool.
        Faer = "faer",
        /// `dgetrf`/`dgetrs` of the system's optimised LAPACK.
        Lapack = "lapack",
    }
}

/// The LU a case runs, with what it needs.
enum Lu {
    /// faer: its permutations and scratch.
    Faer {
        perm: Vec<usize>,
        perm_inv: Vec<usize>,
        buf: MemBuffer,
    },
    /// The system's LAPACK: its pivots, and the one unpinned thread with
    /// a large stack that calls it ([`crate::lapack::CALLER_STACK`]).
    Lapack {
        lib: &'static Lapack,
        ipiv: Vec<c_int>,
        caller: rayon::ThreadPool,
    },
}

/// The LU `solver` asks for, and the note saying which and why; a skip
/// when `lapack` is asked for and none loads.
fn resolve(
    solver: Solver,
    threads: usize,
) -> Result<(Option<&'static Lapack>, String), BenchError> {
    let faer = format!(
        "solver: faer's recursive LU on a rayon pool of {threads} thread{}",
        plural(threads)
    );
    let lapack = |lib: &Lapack, why: &str| {
        let mut s = format!("solver: {}", lib.describe());
        if let Some(v) = &lib.version {
            s.push_str(&format!(", \"{v}\""));
        }
        s.push_str(&format!(
            " ({why}); its {threads} thread{} are the library's own",
            plural(threads)
        ));
        s
    };
    Ok(match (solver, crate::lapack::load()) {
        (Solver::Faer, _) => (None, format!("{faer} (asked for)")),
        (Solver::Lapack, Ok(lib)) => (Some(lib), lapack(lib, "asked for")),
        (Solver::Lapack, Err(why)) => {
            return Err(BenchError::Skip(format!("solver=lapack: {why}")));
        }
        // OpenBLAS on kernels narrower than the CPU (AVX2 ones on an
        // AVX-512 CPU) is slower than faer: auto takes faer, saying why
        // and what to set.
        (Solver::Auto, Ok(lib)) => match lib.narrow_kernels() {
            Some(why) => (None, format!("{faer} (auto: {why})")),
            None => (
                Some(lib),
                lapack(lib, "auto: an optimised LAPACK was found"),
            ),
        },
        (Solver::Auto, Err(why)) => (None, format!("{faer} (auto: {why})")),
    })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Bytes the case allocates for order `n`: the pristine matrix and its
/// working copy (2·n²·8), plus vectors.
pub fn bytes_needed(n: u64) -> u64 {
    n.saturating_mul(n)
        .saturating_mul(16)
        .saturating_add(n.saturating_mul(64))
}

fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

impl Benchmark for Linpack {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::peak::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "cpu.linpack".into(),
            description: "dense f64 solve Ax=b by LU with partial pivoting (the system's optimised LAPACK, or faer): HPL GFLOPS (2/3·N³ + 2·N²)/t, residual checked".into(),
            params: vec![
                ParamSpec::count(
                    "n",
                    "order N of the random system (memory: 16·N² bytes; HPL runs use N = 10000 and up)",
                    2,
                    MAX_N,
                    2000,
                )
                .with_smoke(Value::Int(96)),
                ParamSpec::choice_of(
                    "solver",
                    "LU to run: lapack = dgetrf/dgetrs of the system's optimised LAPACK (OpenBLAS or MKL, loaded at run time; skipped where none is installed: apt install libopenblas0-pthread); faer = faer's pure-Rust LU; auto = lapack where one loads, else faer",
                    Solver::Auto,
                ),
                threads_param(
                    cpu_count(),
                    "threads of faer's rayon pool, or of the LAPACK library (default: every allowed CPU)",
                ),
                pin_param(true),
            ],
            metrics: vec![
                MetricSpec::ops_per_sec("flops", "flop/s"),
                MetricSpec {
                    name: "residual".into(),
                    unit: "".into(),
                    direction: Direction::Lower,
                    source: MetricSource::ReportedMax("residual".into()),
                    // Checked against a bound (a wrong solve fails the
                    // record); its size is not a speed.
                    role: benchsuite_core::MetricRole::Derived,
                },
            ],
        }
    }

    fn validate(&self, _ctx: &Context, point: &Point) -> Result<(), ConfigError> {
        let Some(n) = point.get("n").and_then(Value::as_u64) else {
            return Ok(());
        };
        let need = bytes_needed(n);
        if let Some(avail) = mem_available()
            && need > avail
        {
            return Err(ConfigError::InvalidValue {
                param: "n".into(),
                value: n.to_string(),
                reason: format!(
                    "needs {:.2} GiB (two {n}×{n} f64 matrices) but only {:.2} GiB of memory is available; the largest N that fits is about {}",
                    need as f64 / (1u64 << 30) as f64,
                    avail as f64 / (1u64 << 30) as f64,
                    ((avail as f64 / 16.0).sqrt() * 0.95) as u64
                ),
            });
        }
        Ok(())
    }

    /// hpcc's HPL on the system's BLAS, one MPI process with `threads`
    /// BLAS threads, at the same N (see `hpcc.rs`); its note says which
    /// solver ours ran (`auto` resolved as `prepare` resolves it).
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        let mut point = point.clone();
        if let Ok(Solver::Auto) = point.choice::<Solver>("solver") {
            let ran = match crate::lapack::load() {
                Ok(lib) if lib.narrow_kernels().is_none() => Solver::Lapack,
                _ => Solver::Faer,
            };
            point.set("solver", Value::Str(ran.name().into()));
        }
        crate::hpcc::hpcc(&point, crate::hpcc::active_blas().as_deref())
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let n = point.u64("n")? as usize;
        let threads = point.u64("threads")? as usize;
        let pin = point.bool("pin")?;
        let (lapack, solver_note) = resolve(point.choice("solver")?, threads)?;
        let placement = if pin {
            Placement::Pinned
        } else {
            Placement::Unpinned
        };
        // Check again at prepare time: memory may have been taken since.
        if let Some(avail) = mem_available()
            && bytes_needed(n as u64) > avail
        {
            return Err(BenchError::Failed(format!(
                "N={n} needs {} bytes, only {avail} available now",
                bytes_needed(n as u64)
            )));
        }
        let overrides = Overrides::from_options(&ctx.options)?;
        let mut about = About::default();
        about.note(format!(
            "one operation = one flop of HPL's count 2/3·N³ + 2·N² per solve; time = LU factorisation + triangular solves only (restoring A from a pristine copy and the residual check are outside the timing); scaled residual ‖Ax−b‖∞ / (ε·(‖A‖∞·‖x‖∞ + ‖b‖∞)·N) must be below {RESIDUAL_THRESHOLD}, as HPL"
        ));
        about.note(solver_note);
        placement_caveats(threads, pin, &mut about);

        let pin_errors = Arc::new(Mutex::new(Vec::<BenchError>::new()));
        let cpus = benchsuite_core::team::allowed_cpus();
        let errs = pin_errors.clone();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("benchsuite-linpack-{i}"))
            .start_handler(move |i| {
                if pin && let Err(e) = pin_current_thread(cpus[i % cpus.len()]) {
                    errs.lock().unwrap_or_else(|p| p.into_inner()).push(e);
                }
            })
            .build()
            .map_err(|e| BenchError::caused(format!("building a pool of {threads} threads"), e))?;

        // Random entries uniform in [-0.5, 0.5), as HPL's generator.
        let mut rng = SplitMix(0x5EED_0000 ^ n as u64);
        let a = Mat::<f64>::from_fn(n, n, |_, _| rng.uniform());
        let b = Mat::<f64>::from_fn(n, 1, |_, _| rng.uniform());
        // ‖A‖∞ = the largest row sum of |a_ij|, summed column by column
        // (faer stores columns contiguously).
        let mut row_sums = vec![0.0f64; n];
        for j in 0..n {
            for (i, s) in row_sums.iter_mut().enumerate() {
                *s += a[(i, j)].abs();
            }
        }
        let a_norm = row_sums.into_iter().fold(0.0, f64::max);
        let b_norm = (0..n).map(|i| b[(i, 0)].abs()).fold(0.0, f64::max);
        let par = if threads > 1 {
            Par::rayon(threads)
        } else {
            Par::Seq
        };
        let (work, pages) = working_matrix(n);
        about.note(pages);
        let lu = match lapack {
            Some(lib) => {
                // Unpinned: threads the library creates (an OpenMP team,
                // or OpenBLAS's when the count grows) inherit the
                // creator's CPU mask, which a pinned thread would narrow
                // to one CPU.
                let caller = rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .stack_size(crate::lapack::CALLER_STACK)
                    .thread_name(|_| "benchsuite-lapack".into())
                    .build()
                    .map_err(|e| BenchError::caused("starting the LAPACK caller thread", e))?;
                let got = caller.install(|| lib.set_threads(threads));
                lapack_caveats(lib, threads, pin, got, &mut about);
                Lu::Lapack {
                    lib,
                    ipiv: vec![0; n],
                    caller,
                }
            }
            None => Lu::Faer {
                perm: vec![0; n],
                perm_inv: vec![0; n],
                buf: MemBuffer::new(
                    factor::lu_in_place_scratch::<usize, f64>(n, n, par, Default::default())
                        .or(solve::solve_in_place_scratch::<usize, f64>(n, 1, par)),
                ),
            },
        };

        about.peak = match select_peak(threads, placement, &overrides) {
            Ok(p) => Some(p),
            Err(why) => {
                about.caveat(format!("no theoretical peak: {}", error_chain(&why)));
                None
            }
        };
        if let Some(e) = pin_errors.lock().unwrap_or_else(|p| p.into_inner()).first() {
            about.caveat(format!(
                "pinning the pool's threads failed: {}",
                error_chain(e)
            ));
        }
        Ok(Box::new(LinpackCase {
            n,
            a,
            b,
            a_norm,
            b_norm,
            work,
            x: Mat::zeros(n, 1),
            r: Mat::zeros(n, 1),
            lu,
            threads,
            par,
            pool,
            about,
        }))
    }
}

/// Transparent huge pages are 2 MiB on x86-64 (and on arm64 with 4 KiB
/// base pages).
const HUGE_PAGE: usize = 2 << 20;

/// The n×n working matrix (zeros), its 2 MiB-aligned interior advised as
/// transparent huge pages (`MADV_HUGEPAGE`) before the zeros first touch
/// it, so the kernel can back it with 2 MiB pages; and the note saying so.
fn working_matrix(n: usize) -> (Mat<f64>, String) {
    // Allocated, not yet written: the advice applies from the first touch.
    let mut work = Mat::<f64>::with_capacity(n, n);
    let start = work.as_ptr() as usize;
    let bytes = (work.col_stride().max(0) as usize)
        .saturating_mul(n)
        .saturating_mul(size_of::<f64>());
    let lo = start.next_multiple_of(HUGE_PAGE);
    let hi = (start.saturating_add(bytes)) / HUGE_PAGE * HUGE_PAGE;
    let advised = if hi > lo {
        // SAFETY: [lo, hi) lies inside the matrix's allocation (capacity
        // n × col_stride f64s from `start`), which `work` owns; the advice
        // only changes which page size backs it, not its contents.
        let rc = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE) };
        Some(if rc == 0 {
            Ok(hi - lo)
        } else {
            Err(std::io::Error::last_os_error())
        })
    } else {
        None
    };
    work.resize_with(n, n, |_, _| 0.0);
    let thp = thp_mode().unwrap_or_else(|| "unknown".into());
    let note = match advised {
        Some(Ok(len)) => format!(
            "working matrix: transparent huge pages requested (MADV_HUGEPAGE on its 2 MiB-aligned interior, {:.1} MiB, before first touch; THP `{thp}`); the pristine copy has default pages",
            len as f64 / (1u64 << 20) as f64
        ),
        Some(Err(e)) => {
            format!("working matrix: default pages (MADV_HUGEPAGE refused: {e}; THP `{thp}`)")
        }
        None => "working matrix: default pages (smaller than one 2 MiB huge page)".into(),
    };
    (work, note)
}

/// The THP mode: the bracketed word of
/// `/sys/kernel/mm/transparent_hugepage/enabled` (`always`, `madvise`,
/// `never`).
fn thp_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let open = text.find('[')?;
    let close = text[open..].find(']')? + open;
    Some(text[open + 1..close].to_string())
}

/// What the record must say about the library's threads: pinning does not
/// reach them, and `got` (what it says it runs) may not be `threads`.
fn lapack_caveats(lib: &Lapack, threads: usize, pin: bool, got: Option<usize>, about: &mut About) {
    let name = lib.vendor.name();
    if pin {
        about.caveat(format!(
            "pin=on cannot pin {name}'s threads: they are the library's own, placed by the scheduler (the pinned pool only computes the untimed residual)"
        ));
    }
    match got {
        Some(got) if got != threads => about.caveat(format!(
            "{name} runs {got} thread{}, not the {threads} asked for (a serial build, or more than its MAX_THREADS)",
            plural(got)
        )),
        Some(_) => {}
        None => about.caveat(format!(
            "{name} does not say how many threads it runs; {threads} were asked for"
        )),
    }
}

fn select_peak(
    threads: usize,
    placement: Placement,
    overrides: &Overrides,
) -> Result<Peak, BenchError> {
    let kernel = crate::kernel::flops_kernel(crate::kernel::FloatPrecision::F64, None)?;
    let cpus = cpus_used(threads, placement);
    let mut p = kernel_peak(&kernel, "flops", "flop/s", threads, &cpus, overrides)?;
    p.formula = format!(
        "{} (the widest f64 FMA this CPU has, {})",
        p.formula, kernel.instruction
    );
    Ok(p)
}

/// SplitMix64: a small, fast, well-distributed generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    }
}

struct LinpackCase {
    n: usize,
    a: Mat<f64>,
    b: Mat<f64>,
    a_norm: f64,
    b_norm: f64,
    work: Mat<f64>,
    x: Mat<f64>,
    r: Mat<f64>,
    lu: Lu,
    threads: usize,
    par: Par,
    pool: rayon::ThreadPool,
    about: About,
}

impl LinpackCase {
    /// One untimed restore, one timed factor + solve, one untimed check.
    fn solve_once(&mut self) -> Result<(Duration, f64), BenchError> {
        self.work.copy_from(&self.a);
        self.x.copy_from(&self.b);
        let (work, x, par) = (&mut self.work, &mut self.x, self.par);
        let elapsed = match &mut self.lu {
            Lu::Faer {
                perm,
                perm_inv,
                buf,
            } => self.pool.install(|| {
                let t0 = Instant::now();
                let stack = MemStack::new(buf);
                let (_, p) = factor::lu_in_place(
                    work.as_mut(),
                    perm,
                    perm_inv,
                    par,
                    stack,
                    Default::default(),
                );
                solve::solve_in_place(work.as_ref(), work.as_ref(), p, x.as_mut(), par, stack);
                t0.elapsed()
            }),
            Lu::Lapack { lib, ipiv, caller } => {
                let threads = self.threads;
                caller.install(|| {
                    // Untimed; again each time, in case another case
                    // changed it.
                    lib.set_threads(threads);
                    let t0 = Instant::now();
                    lib.factor(work.as_mut(), ipiv)
                        .and_then(|()| lib.solve(work.as_ref(), ipiv, x.as_mut()))
                        .map_err(|e| BenchError::Failed(format!("{}: {e}", lib.vendor.name())))?;
                    Ok::<_, BenchError>(t0.elapsed())
                })?
            }
        };
        // r = A·x with the pristine A, then ‖r − b‖∞.
        let (r, a, x, par) = (&mut self.r, &self.a, &self.x, self.par);
        self.pool.install(|| {
            faer::linalg::matmul::matmul(
                r.as_mut(),
                Accum::Replace,
                a.as_ref(),
                x.as_ref(),
                1.0,
                par,
            );
        });
        let n = self.n;
        let r_norm = (0..n)
            .map(|i| (self.r[(i, 0)] - self.b[(i, 0)]).abs())
            .fold(0.0, f64::max);
        let x_norm = (0..n).map(|i| self.x[(i, 0)].abs()).fold(0.0, f64::max);
        let scaled = r_norm / (f64::EPSILON * (self.a_norm * x_norm + self.b_norm) * n as f64);
        if scaled.is_nan() || scaled >= RESIDUAL_THRESHOLD {
            return Err(BenchError::Verify(format!(
                "scaled residual {scaled:.3e} is not below {RESIDUAL_THRESHOLD} (‖Ax−b‖∞ = {r_norm:.3e}): the solve is wrong"
            )));
        }
        Ok((elapsed, scaled))
    }
}

impl Case for LinpackCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut total = Duration::ZERO;
        let mut worst: f64 = 0.0;
        for _ in 0..iters {
            let (t, res) = self.solve_once()?;
            total += t;
            worst = worst.max(res);
        }
        let mut w = Work::ops((hpl_flops(self.n as u64) * iters as f64).round() as u64);
        w.elapsed = Some(total);
        w.values.insert("residual".into(), worst);
        Ok(w)
    }

    fn finish(self: Box<Self>) -> Finished {
        // The matrices, the scratch buffer and the pool are dropped here.
        self.about.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hpl_count() {
        assert_eq!(hpl_flops(3), 18.0 + 18.0);
        assert_eq!(bytes_needed(1000), 16_000_000 + 64_000);
    }

    #[test]
    fn a_matrix_too_big_is_refused_before_allocating() {
        let mut p = Point::default();
        p.set("n", Value::Int(MAX_N));
        p.set("threads", Value::Int(1));
        p.set("pin", Value::Bool(true));
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        if mem_available().is_some_and(|m| m < bytes_needed(MAX_N)) {
            let e = Linpack.validate(&ctx, &p).unwrap_err().to_string();
            assert!(e.contains("`n`") && e.contains("GiB"), "{e}");
        }
        p.set("n", Value::Int(8));
        Linpack.validate(&ctx, &p).unwrap();
    }

    fn point(n: u64, solver: &str, pin: bool) -> Point {
        let mut p = Point::default();
        p.set("n", Value::Int(n));
        p.set("solver", Value::Str(solver.into()));
        p.set("threads", Value::Int(2));
        p.set("pin", Value::Bool(pin));
        p
    }

    /// Runs two solves at `p`; the record's notes and caveats.
    fn solve(p: &Point) -> (Vec<String>, Vec<String>) {
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        let n = p.u64("n").unwrap();
        let mut case = Linpack.prepare(&ctx, p).unwrap();
        let w = case.run(2).unwrap();
        assert_eq!(w.ops, (2.0 * hpl_flops(n)).round() as u64);
        let res = w.values["residual"];
        assert!(res.is_finite() && res < RESIDUAL_THRESHOLD, "{res}");
        assert!(w.elapsed.unwrap() > Duration::ZERO);
        let finished = case.finish();
        assert!(finished.error.is_none(), "{:?}", finished.error);
        let about = finished.about;
        assert!(about.notes[0].starts_with("one operation = "));
        assert!(
            about
                .notes
                .iter()
                .any(|n| n.starts_with("working matrix: ")),
            "{:?}",
            about.notes
        );
        let caveats = about.caveats.iter().map(|c| c.to_string()).collect();
        (about.notes, caveats)
    }

    fn solver_note(notes: &[String]) -> &str {
        notes
            .iter()
            .find(|n| n.starts_with("solver: "))
            .expect("a note names the solver")
    }

    #[test]
    fn small_solve_passes_the_residual_check() {
        let (notes, _) = solve(&point(40, "faer", false));
        let note = solver_note(&notes);
        assert!(
            note.starts_with("solver: faer's recursive LU") && note.ends_with("(asked for)"),
            "{note}"
        );
    }

    #[test]
    fn the_working_matrix_is_zeros_with_huge_pages_asked_for() {
        let (work, note) = working_matrix(1000);
        assert_eq!((work.nrows(), work.ncols()), (1000, 1000));
        assert!(work.col_stride() >= 1000);
        assert!((0..1000).all(|j| (0..1000).all(|i| work[(i, j)] == 0.0)));
        // 8 MB holds at least one aligned 2 MiB page wherever it starts.
        assert!(
            note.starts_with("working matrix: transparent huge pages requested")
                || note.contains("MADV_HUGEPAGE refused"),
            "{note}"
        );
        let (_, note) = working_matrix(8);
        assert!(note.contains("smaller than one 2 MiB huge page"), "{note}");
    }

    #[test]
    fn the_solver_parameter_takes_auto_faer_or_lapack_only() {
        let meta = Linpack.meta();
        let spec = meta.params.iter().find(|p| p.name == "solver").unwrap();
        assert_eq!(spec.default, Value::Str("auto".into()));
        assert_eq!(spec.kind.describe(), "auto|faer|lapack");
        for good in ["auto", "faer", "lapack"] {
            assert_eq!(
                spec.kind.parse("solver", good).unwrap(),
                Value::Str(good.into())
            );
        }
        for bad in ["openblas", "LAPACK", ""] {
            let e = spec.kind.parse("solver", bad).unwrap_err().to_string();
            assert!(
                e.contains("`solver`") && e.contains("auto, faer, lapack"),
                "{e}"
            );
        }
    }

    #[test]
    fn the_system_lapack_solves_and_is_named() {
        let lib = match crate::lapack::load() {
            Ok(l) => l,
            Err(why) => {
                benchsuite_core::testing::skip(benchsuite_core::testing::Capability::Openblas, why);
                return;
            }
        };
        let (notes, caveats) = solve(&point(200, "lapack", true));
        let note = solver_note(&notes);
        assert!(
            note.contains(lib.vendor.name())
                && note.contains(&lib.opened)
                && note.contains("(asked for)"),
            "{note}"
        );
        if lib.vendor == crate::lapack::Vendor::OpenBlas {
            let v = lib.version.as_deref().unwrap_or_default();
            assert!(v.starts_with("OpenBLAS ") && note.contains(v), "{note}");
        }
        assert!(
            caveats.iter().any(|c| c.contains("pin=on cannot pin")),
            "{caveats:?}"
        );
        // Unpinned, nothing to say about pinning.
        let (_, caveats) = solve(&point(200, "lapack", false));
        assert!(!caveats.iter().any(|c| c.contains("pin=on")), "{caveats:?}");
    }

    /// `auto` takes the system's LAPACK where one loads, unless it is an
    /// OpenBLAS on kernels narrower than the CPU (AVX2 ones on an AVX-512
    /// CPU, as `OPENBLAS_CORETYPE=Haswell` pins on some images): then faer,
    /// the note saying which kernels and what to set.
    #[test]
    fn auto_picks_the_system_lapack_where_one_loads_on_kernels_that_fit_the_cpu() {
        let (notes, _) = solve(&point(64, "auto", false));
        let note = solver_note(&notes);
        match crate::lapack::load() {
            Ok(lib) if lib.narrow_kernels().is_some() => {
                let why = lib.narrow_kernels().unwrap();
                assert!(
                    note.starts_with("solver: faer") && note.contains(&why),
                    "{note}"
                );
                assert!(why.contains("kernels") && why.contains("SkylakeX"), "{why}");
                // Asked for, it runs, and its note names the kernels.
                let (notes, _) = solve(&point(64, "lapack", false));
                let lapack = solver_note(&notes);
                assert!(lapack.contains(", kernels "), "{lapack}");
            }
            Ok(lib) => assert!(
                note.contains(&lib.describe())
                    && note.contains("(auto: an optimised LAPACK was found)"),
                "{note}"
            ),
            Err(why) => {
                assert!(
                    note.starts_with("solver: faer") && note.contains(why),
                    "{note}"
                );
            }
        }
    }

    #[test]
    fn lapack_asked_for_without_a_library_is_skipped_with_what_to_install() {
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        match (
            crate::lapack::load(),
            Linpack.prepare(&ctx, &point(8, "lapack", false)),
        ) {
            (Ok(_), Ok(_)) => benchsuite_core::testing::skip(
                benchsuite_core::testing::Capability::NoOpenblas,
                "an optimised LAPACK is installed here",
            ),
            (Err(_), Err(BenchError::Skip(why))) => assert!(
                why.starts_with(
                    "solver=lapack: no optimised LAPACK found (tried libopenblasp.so.0"
                ) && why.contains("apt install libopenblas0-pthread"),
                "{why}"
            ),
            (loaded, prepared) => panic!("{:?} / {:?}", loaded.err(), prepared.err()),
        }
    }

    #[test]
    fn the_reference_note_says_which_solver_ours_ran() {
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        let note = |solver: &str, pin: bool| {
            Linpack
                .reference(&ctx, &point(2000, solver, pin))
                .unwrap()
                .note
                .unwrap()
        };
        let faer = note("faer", true);
        assert!(
            faer.contains("ours: solver=faer; ours pins its threads"),
            "{faer}"
        );
        assert!(note("lapack", true).contains("ours: solver=lapack"));
        let auto = note("auto", false);
        let want = match crate::lapack::load() {
            Ok(lib) if lib.narrow_kernels().is_none() => "lapack",
            _ => "faer",
        };
        assert!(auto.contains(&format!("ours: solver={want}")), "{auto}");
    }
}
