//! `cpu.linpack`: solve a dense random system Ax = b in f64 by LU with
//! partial pivoting (faer), HPL-style GFLOPS and residual check.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchsuite_core::team::{Placement, pin_current_thread};
use benchsuite_core::{
    About, BenchError, Benchmark, Case, ConfigError, Context, Direction, Finished, Meta,
    MetricSource, MetricSpec, ParamSpec, Peak, Point, Value, Work, error_chain,
};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::{factor, solve};
use faer::{Accum, Mat, Par};

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

/// HPL's operation count for one solve of order `n`: 2/3·n³ + 2·n².
pub fn hpl_flops(n: u64) -> f64 {
    let n = n as f64;
    2.0 / 3.0 * n * n * n + 2.0 * n * n
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
            id: "cpu.linpack",
            description: "dense f64 solve Ax=b by LU with partial pivoting (faer): HPL GFLOPS (2/3·N³ + 2·N²)/t, residual checked",
            params: vec![
                ParamSpec::count(
                    "n",
                    "order N of the random system (memory: 16·N² bytes; HPL runs use N = 10000 and up)",
                    2,
                    MAX_N,
                    2000,
                )
                .with_smoke(Value::Int(96)),
                threads_param(
                    cpu_count(),
                    "threads of faer's rayon pool (default: every allowed CPU)",
                ),
                pin_param(true),
            ],
            metrics: vec![
                MetricSpec::ops_per_sec("flops", "flop/s"),
                MetricSpec {
                    name: "residual",
                    unit: "",
                    direction: Direction::Lower,
                    source: MetricSource::ReportedMax("residual"),
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
    /// BLAS threads, at the same N (see `hpcc.rs`).
    fn reference(&self, _ctx: &Context, point: &Point) -> Option<benchsuite_core::Reference> {
        crate::hpcc::hpcc(point, crate::hpcc::active_blas().as_deref())
    }

    fn prepare(&self, ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let n = point.u64("n")? as usize;
        let threads = point.u64("threads")? as usize;
        let pin = point.bool("pin")?;
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
        let scratch = factor::lu_in_place_scratch::<usize, f64>(n, n, par, Default::default())
            .or(solve::solve_in_place_scratch::<usize, f64>(n, 1, par));

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
            work: Mat::zeros(n, n),
            x: Mat::zeros(n, 1),
            r: Mat::zeros(n, 1),
            perm: vec![0; n],
            perm_inv: vec![0; n],
            buf: MemBuffer::new(scratch),
            par,
            pool,
            about,
        }))
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
    perm: Vec<usize>,
    perm_inv: Vec<usize>,
    buf: MemBuffer,
    par: Par,
    pool: rayon::ThreadPool,
    about: About,
}

impl LinpackCase {
    /// One untimed restore, one timed factor + solve, one untimed check.
    fn solve_once(&mut self) -> Result<(Duration, f64), BenchError> {
        self.work.copy_from(&self.a);
        self.x.copy_from(&self.b);
        let (work, x, perm, perm_inv, buf, par) = (
            &mut self.work,
            &mut self.x,
            &mut self.perm,
            &mut self.perm_inv,
            &mut self.buf,
            self.par,
        );
        let elapsed = self.pool.install(|| {
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
        });
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
        w.values.insert("residual", worst);
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

    #[test]
    fn small_solve_passes_the_residual_check() {
        let ctx = Context::new(std::sync::Arc::new(benchsuite_core::Host::default()));
        let mut p = Point::default();
        p.set("n", Value::Int(40));
        p.set("threads", Value::Int(2));
        p.set("pin", Value::Bool(false));
        let mut case = Linpack.prepare(&ctx, &p).unwrap();
        let w = case.run(2).unwrap();
        assert_eq!(w.ops, (2.0 * hpl_flops(40)).round() as u64);
        let res = w.values["residual"];
        assert!(res.is_finite() && res < RESIDUAL_THRESHOLD, "{res}");
        assert!(w.elapsed.unwrap() > Duration::ZERO);
        let finished = case.finish();
        assert!(finished.error.is_none(), "{:?}", finished.error);
        assert!(finished.about.notes[0].starts_with("one operation = "));
    }
}
