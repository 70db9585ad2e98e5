//! `os.call`: the overhead of a procedure call with 0 to 7 integer arguments.

use std::hint::black_box;

use benchsuite_core::{
    BenchError, Benchmark, Case, Context, Meta, MetricSpec, ParamSpec, Point, Work,
};

/// Most arguments a callee takes. On x86_64 System V the first six integer
/// arguments travel in registers, the seventh on the stack.
pub const MAX_ARGS: u64 = 7;

/// Procedure-call overhead; see the crate docs.
#[derive(Debug, Default)]
pub struct Call;

impl Benchmark for Call {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.call".into(),
            description:
                "procedure call and return through a function pointer, with N integer arguments"
                    .into(),
            params: vec![ParamSpec::count(
                "args",
                "number of u64 arguments passed (0..7; on x86_64 the 7th goes on the stack)",
                0,
                MAX_ARGS,
                0,
            )],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let args = point.u64("args")?;
        if args > MAX_ARGS {
            return Err(BenchError::Failed(format!(
                "args={args}: at most {MAX_ARGS} arguments"
            )));
        }
        Ok(Box::new(CallCase { args, sink: 0 }))
    }
}

// The callees: never inlined, C calling convention (so the argument passing
// is the platform's documented one), and each one uses every argument so none
// can be dropped. `callN(a, b, ...)` returns `1 + a + 2b + 3c + ...`
// (wrapping), which the tests check.
macro_rules! callees {
    ($($name:ident ( $($arg:ident * $w:literal),* );)*) => {$(
        #[inline(never)]
        extern "C" fn $name($($arg: u64),*) -> u64 {
            1u64 $(.wrapping_add($arg.wrapping_mul($w)))*
        }
    )*};
}

callees! {
    call0();
    call1(a * 1);
    call2(a * 1, b * 2);
    call3(a * 1, b * 2, c * 3);
    call4(a * 1, b * 2, c * 3, d * 4);
    call5(a * 1, b * 2, c * 3, d * 4, e * 5);
    call6(a * 1, b * 2, c * 3, d * 4, e * 5, f * 6);
    call7(a * 1, b * 2, c * 3, d * 4, e * 5, f * 6, g * 7);
}

// One monomorphic loop per arity. The function pointer goes through
// `black_box`, so the compiler cannot see which function it calls and must
// emit a real indirect call; the loop counter is every argument, and the
// results are summed and the sum black-boxed, so no call can be skipped.
macro_rules! call_loop {
    ($f:expr, $iters:expr, $($i:ident)*) => {{
        let f = black_box($f);
        let mut sum = 0u64;
        for i in 0..$iters {
            let _ = i;
            $(let $i = i;)*
            sum = sum.wrapping_add(f($($i),*));
        }
        black_box(sum)
    }};
}

/// Makes `iters` calls with `args` arguments; returns the sum of the results.
fn calls(args: u64, iters: u64) -> u64 {
    match args {
        0 => call_loop!(call0 as extern "C" fn() -> u64, iters,),
        1 => call_loop!(call1 as extern "C" fn(u64) -> u64, iters, a),
        2 => call_loop!(call2 as extern "C" fn(u64, u64) -> u64, iters, a b),
        3 => call_loop!(call3 as extern "C" fn(u64, u64, u64) -> u64, iters, a b c),
        4 => call_loop!(call4 as extern "C" fn(u64, u64, u64, u64) -> u64, iters, a b c d),
        5 => call_loop!(
            call5 as extern "C" fn(u64, u64, u64, u64, u64) -> u64,
            iters,
            a b c d e
        ),
        6 => call_loop!(
            call6 as extern "C" fn(u64, u64, u64, u64, u64, u64) -> u64,
            iters,
            a b c d e f
        ),
        _ => call_loop!(
            call7 as extern "C" fn(u64, u64, u64, u64, u64, u64, u64) -> u64,
            iters,
            a b c d e f g
        ),
    }
}

struct CallCase {
    args: u64,
    sink: u64,
}

impl Case for CallCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.sink = self.sink.wrapping_add(calls(self.args, iters));
        black_box(self.sink);
        Ok(Work::ops(iters))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `calls(args, iters)` must return: sum over i of
    /// `1 + i * (1 + 2 + ... + args)`.
    fn expected(args: u64, iters: u64) -> u64 {
        let weight = args * (args + 1) / 2;
        (0..iters).fold(0u64, |s, i| s.wrapping_add(1 + i * weight))
    }

    #[test]
    fn every_arity_calls_its_callee_with_every_argument() {
        for args in 0..=MAX_ARGS {
            assert_eq!(calls(args, 1000), expected(args, 1000), "args={args}");
        }
    }

    #[test]
    fn callees_weigh_each_argument() {
        assert_eq!(call0(), 1);
        assert_eq!(call3(1, 10, 100), 1 + 1 + 20 + 300);
        assert_eq!(call7(1, 1, 1, 1, 1, 1, 1), 1 + 28);
    }
}
