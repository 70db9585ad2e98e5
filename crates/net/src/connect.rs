//! `net.connect`: TCP connect + the control hello (and the challenge and
//! response, when the server has a token) + close.

use std::time::Instant;

use benchsuite_core::runner::new_latency_histogram;
use benchsuite_core::{
    About, BenchError, Benchmark, Case, Context, Direction, Finished, Meta, MetricSource,
    MetricSpec, Point, Work,
};

use crate::client::Target;
use crate::route::Route;

/// Connection setup latency; see the crate docs.
#[derive(Debug, Default)]
pub struct Connect;

impl Benchmark for Connect {
    fn options(&self) -> Vec<benchsuite_core::OptionSpec> {
        crate::client::Target::option_specs()
    }

    fn meta(&self) -> Meta {
        Meta {
            id: "net.connect".into(),
            description: "one trial = TCP connect + hello + challenge-response (if the server has a token) + the server's welcome + close; latency per trial".into(),
            params: Vec::new(),
            metrics: vec![
                MetricSpec::latency("connect"),
                MetricSpec {
                    name: "trial_stddev".into(),
                    unit: "s".into(),
                    direction: Direction::Lower,
                    source: MetricSource::Reported("trial_stddev".into()),
                    role: benchsuite_core::MetricRole::Spread,
                },
            ],
        }
    }

    fn host_facts(&self, ctx: &Context) -> Option<serde_json::Value> {
        Some(crate::facts::host_facts(ctx))
    }

    fn prepare(&self, ctx: &Context, _point: &Point) -> Result<Box<dyn Case>, BenchError> {
        let target = Target::from_ctx(ctx)?;
        // One trial up front: a wrong token or an unreachable peer fails
        // here, with its own message, rather than inside a timed batch.
        target.control()?.bye();
        let route = target.route();
        let mut notes = vec![target.path_note(&route)];
        if route == Route::Loopback {
            notes.push(
                "loopback: no wire, so this is the kernel's TCP handshake, two accepts/wake-ups and the server's hello handling".into(),
            );
        }
        Ok(Box::new(ConnectCase {
            target,
            about: About {
                notes,
                ..About::default()
            },
        }))
    }
}

struct ConnectCase {
    target: Target,
    /// Its notes give the path to the server.
    about: About,
}

impl Case for ConnectCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        let mut hist = new_latency_histogram();
        for _ in 0..iters {
            let t0 = Instant::now();
            // connect, hello → welcome, bye, close (drop).
            self.target.control()?.bye();
            let ns = t0.elapsed().as_nanos() as u64;
            hist.record(ns.max(1))
                .map_err(|e| BenchError::caused("histogram", e))?;
        }
        let mut w = Work::ops(iters);
        w.values.insert("trial_stddev".into(), hist.stdev() * 1e-9);
        w.latency = Some(hist);
        Ok(w)
    }

    fn finish(self: Box<Self>) -> Finished {
        let ConnectCase { target, about } = *self;
        target.shutdown();
        about.into()
    }
}
