//! The case of `mem.bandwidth`: each worker thread's arrays (built on that
//! thread) and the team that runs, verifies and reports page backing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use benchsuite_core::team::Team;
use benchsuite_core::{About, BenchError, Case, Finished, Work};

use super::params::{Layout, Params, RANDOM_TABLE_CAP, SKEW};
use crate::buf::{Buf, Pages};
use crate::kernels::{self, Arrays, Isa, Order};
use crate::sys;

/// What the team's work function does on the next batch.
pub(super) const MODE_RUN: u8 = 0;
pub(super) const MODE_VERIFY: u8 = 1;
pub(super) const MODE_PAGES: u8 = 2;

/// Everything a worker needs to build its state.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    pub(super) p: Params,
    pub(super) layout: Layout,
    pub(super) isa: Isa,
    pub(super) nt: bool,
    pub(super) pages: Pages,
}

/// One thread's arrays and random order, owned by that thread.
pub(super) struct Worker {
    shape: Shape,
    buf: Buf,
    arr: Arrays,
    order: Vec<u32>,
    sink: f64,
}

impl Worker {
    /// Runs on the (pinned) worker thread: maps, first-touches and fills the
    /// arrays there, and draws this thread's random order.
    pub(super) fn new(shape: Shape, index: usize) -> Result<Worker, BenchError> {
        let Shape { p, layout, .. } = shape;
        let stride = layout.array.next_multiple_of(4096) as usize + SKEW;
        let n = p.op.arrays();
        let buf = Buf::new(stride * n, shape.pages)?;
        let at = |k: usize| {
            if k < n {
                // SAFETY: k < n, so k × stride + array <= n × stride = the
                // buffer's length; SKEW is a multiple of 64, so the array
                // starts 64-B aligned.
                unsafe { buf.as_ptr().add(k * stride) }
            } else {
                std::ptr::null_mut()
            }
        };
        let arr = Arrays {
            a: at(0),
            b: at(1),
            c: at(2),
            len: layout.array as usize,
        };
        // SAFETY: the arrays are disjoint, 64-B aligned ranges of `buf`,
        // which this worker owns.
        unsafe { kernels::fill(p.op, &arr) };
        let order = if p.random {
            kernels::random_order(layout.blocks, RANDOM_TABLE_CAP, 0x6d65_6d00 + index as u64)
        } else {
            Vec::new()
        };
        Ok(Worker {
            shape,
            buf,
            arr,
            order,
            sink: 0.0,
        })
    }

    fn order(&self) -> Order<'_> {
        if self.shape.p.random {
            Order::Random(&self.order)
        } else {
            Order::Seq
        }
    }

    /// One batch: `iters` passes.
    pub(super) fn run(&mut self, iters: u64) -> Work {
        let s = &self.shape;
        // SAFETY: the arrays, block, order and ISA were validated and built
        // together in `new`/`prepare` (block divides the array length,
        // indices are below the block count, nt only with a wide block on an
        // ISA that has it).
        let v = unsafe {
            kernels::pass(
                s.isa,
                s.p.op,
                s.nt,
                &self.arr,
                s.p.block as usize,
                self.order(),
                iters,
            )
        };
        self.sink = std::hint::black_box(self.sink + v);
        let (accesses, bytes) = s.layout.per_pass(&s.p);
        Work::ops_bytes(accesses * iters, bytes * iters)
    }

    /// Huge-page backing of this worker's buffer, as `values` `huge`/`rss`.
    pub(super) fn pages(&self) -> Work {
        let mut w = Work::default();
        if let Some((huge, rss)) = sys::huge_backing(self.buf.as_ptr() as usize) {
            w.values.insert("huge".into(), huge as f64);
            w.values.insert("rss".into(), rss as f64);
        }
        w
    }

    /// Checks the destination (after the timed region).
    pub(super) fn verify(&self) -> Result<(), BenchError> {
        // SAFETY: as in `run`.
        unsafe {
            kernels::verify(
                self.shape.p.op,
                &self.arr,
                self.shape.p.block as usize,
                self.order(),
            )
        }
    }
}

pub(super) struct BandwidthCase {
    pub(super) team: Team,
    pub(super) mode: Arc<AtomicU8>,
    pub(super) about: About,
}

impl Case for BandwidthCase {
    fn run(&mut self, iters: u64) -> Result<Work, BenchError> {
        self.team.run(iters)
    }

    /// Verifies every thread's destination (outside the timed region), then
    /// joins the workers, which unmaps their buffers.
    fn finish(self: Box<Self>) -> Finished {
        let BandwidthCase { team, mode, about } = *self;
        mode.store(MODE_VERIFY, Ordering::Relaxed);
        let r = team.run(0).map(|_| ());
        team.shutdown();
        Finished::with(about, r)
    }
}
