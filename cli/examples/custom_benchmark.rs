//! An embedder's benchmark binary: a custom benchmark (hashing a buffer,
//! `size` × `algo`, a bandwidth headline) behind benchsuite's ready `main`,
//! with the built-in modules beside it.
//!
//! ```text
//! cargo run --example custom_benchmark -- list myapp
//! cargo run --example custom_benchmark -- run myapp.hash --param size=4K,64K
//! cargo run --release --example custom_benchmark -- run myapp.hash --param algo=fnv1a,sip -o new.json
//! cargo run --example custom_benchmark -- compare base.json new.json
//! ```
//!
//! In your own crate this is `src/main.rs` (or a `[[bench]]` target with
//! `harness = false`, so `cargo bench -- run myapp.hash` works); see
//! docs/embedding.md.

use std::hash::Hasher;
use std::hint::black_box;
use std::process::ExitCode;

use benchsuite::{
    About, BenchError, Benchmark, Case, Context, Finished, Meta, MetricSpec, ParamSpec, Point,
    Value, Work, choice_enum,
};

choice_enum! {
    /// The hash function.
    pub enum Algo {
        /// FNV-1a, 64-bit: one xor and one multiply per byte.
        Fnv1a = "fnv1a",
        /// The standard library's SipHash-1-3 (`DefaultHasher`).
        Sip = "sip",
    }
}

impl Algo {
    fn hash(self, data: &[u8]) -> u64 {
        match self {
            Algo::Fnv1a => data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
                (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
            }),
            Algo::Sip => {
                let mut h = std::hash::DefaultHasher::new();
                h.write(data);
                h.finish()
            }
        }
    }
}

/// `myapp.hash`: the descriptor. It holds nothing; a sweep point's buffer
/// is its case's.
struct Hash;

/// One sweep point: the buffer (made untimed in `prepare`) and the function.
struct HashCase {
    data: Vec<u8>,
    algo: Algo,
}

impl Case for HashCase {
    /// The timed verb: hash the buffer `iters` times; the runner turns the
    /// bytes into the bandwidth and the operations into a time per hash.
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut acc = 0u64;
        for _ in 0..iters {
            acc ^= self.algo.hash(black_box(&self.data));
        }
        black_box(acc);
        Ok(Work::ops_bytes(iters, iters * self.data.len() as u64))
    }

    fn finish(self: Box<Self>) -> Finished {
        let mut about = About::default();
        about.note(format!(
            "one op = one {} hash of {} bytes",
            self.algo,
            self.data.len()
        ));
        about.into()
    }
}

impl Benchmark for Hash {
    fn meta(&self) -> Meta {
        Meta {
            id: "myapp.hash".into(),
            description: "hash a buffer in memory (FNV-1a or SipHash)".into(),
            params: vec![
                ParamSpec::size("size", "bytes hashed per operation", 1, 1 << 30, 64 << 10)
                    .with_smoke(Value::Int(4 << 10)),
                ParamSpec::choice_of("algo", "the hash function: fnv1a or sip", Algo::Fnv1a),
            ],
            // Exactly one headline, first; the registry refuses anything else.
            metrics: vec![
                MetricSpec::bytes_per_sec("bandwidth"),
                MetricSpec::time_per_op("time_per_hash").secondary(),
            ],
        }
    }

    fn prepare(&self, _: &Context, point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let size = point.u64("size")? as usize;
        let algo = point.choice::<Algo>("algo")?;
        let data = (0..size).map(|i| (i % 251) as u8).collect();
        Ok(Box::new(HashCase { data, algo }))
    }
}

fn main() -> ExitCode {
    // The built-in modules this build has (its features), and ours. For
    // ours alone: `benchsuite::Registry::new()`.
    let mut registry = benchsuite::registry();
    if let Err(e) = registry.register(Box::new(Hash)) {
        eprintln!("error: {e}");
        return ExitCode::from(2);
    }
    benchsuite::main_with(registry)
}
