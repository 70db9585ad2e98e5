//! `os.thread_create`: creating and joining an OS thread.

use benchsuite_core::{BenchError, Benchmark, Case, Context, Meta, MetricSpec, Point, Work};

/// Thread create + join; see the crate docs.
#[derive(Debug, Default)]
pub struct ThreadCreate;

impl Benchmark for ThreadCreate {
    fn meta(&self) -> Meta {
        Meta {
            id: "os.thread_create".into(),
            description:
                "std::thread::spawn of an empty thread, then join (pthread_create + pthread_join)"
                    .into(),
            params: vec![],
            metrics: vec![MetricSpec::time_per_op("time_per_op")],
        }
    }

    fn prepare(&self, _ctx: &Context, _point: &Point) -> Result<Box<dyn Case>, BenchError> {
        Ok(Box::new(ThreadCase))
    }
}

#[derive(Debug)]
struct ThreadCase;

impl Case for ThreadCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        for i in 0..iters {
            let handle = std::thread::Builder::new()
                .spawn(move || std::hint::black_box(i))
                .map_err(|e| BenchError::io("spawn thread", e))?;
            let back = handle
                .join()
                .map_err(|_| BenchError::Other("the spawned thread panicked".into()))?;
            if back != i {
                return Err(BenchError::Verify(format!(
                    "thread returned {back}, expected {i}"
                )));
            }
        }
        Ok(Work::ops(iters))
    }
}
