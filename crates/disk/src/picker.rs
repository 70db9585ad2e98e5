//! Which block each I/O of a thread goes to, and whether it writes
//! ([`Picker`]): sequential or random, the read/write mix, the blocks'
//! rewrite generations for verification. Used by both engines.

use crate::pattern::Rng;
use crate::settings::Op;

/// Chooses the next block and direction.
#[derive(Debug)]
pub(crate) struct Picker {
    pub(crate) rng: Rng,
    pub(crate) cursor: u64,
    pub(crate) nblocks: u64,
    pub(crate) op: Op,
    pub(crate) rwmix: u32,
    /// Per-block generation (verify=on only): the number of times this run
    /// rewrote the block.
    pub(crate) gens: Vec<u32>,
    /// A candidate that collided with an in-flight I/O, retried first.
    pub(crate) pending: Option<(u64, bool)>,
}

impl Picker {
    pub(crate) fn draw(&mut self) -> (u64, bool) {
        let write = match self.op {
            Op::Read | Op::RandRead => false,
            Op::Write | Op::RandWrite => true,
            Op::RandRw => self.rng.below(100) >= self.rwmix as u64,
        };
        let blk = if self.op.random() {
            self.rng.below(self.nblocks)
        } else {
            let b = self.cursor;
            self.cursor = (self.cursor + 1) % self.nblocks;
            b
        };
        (blk, write)
    }

    /// The next I/O whose block is not `busy`; `None` when the candidates
    /// collide (retry after a completion).
    pub(crate) fn next(&mut self, busy: impl Fn(u64) -> bool) -> Option<(u64, bool)> {
        let mut cand = self.pending.take().unwrap_or_else(|| self.draw());
        if !busy(cand.0) {
            return Some(cand);
        }
        if self.op.random() {
            for _ in 0..8 {
                cand = self.draw();
                if !busy(cand.0) {
                    return Some(cand);
                }
            }
        }
        self.pending = Some(cand);
        None
    }

    pub(crate) fn generation(&self, blk: u64) -> u64 {
        self.gens.get(blk as usize).copied().unwrap_or(0) as u64
    }

    /// Marks a rewrite of `blk` and returns its new generation.
    pub(crate) fn bump(&mut self, blk: u64) -> u64 {
        match self.gens.get_mut(blk as usize) {
            Some(g) => {
                *g = g.wrapping_add(1);
                *g as u64
            }
            None => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picker(op: Op, nblocks: u64) -> Picker {
        Picker {
            rng: Rng::new(7),
            cursor: 0,
            nblocks,
            op,
            rwmix: 70,
            gens: vec![0; nblocks as usize],
            pending: None,
        }
    }

    #[test]
    fn sequential_wraps_and_random_stays_in_range() {
        let mut p = picker(Op::Read, 3);
        let v: Vec<_> = (0..7).map(|_| p.draw()).collect();
        assert_eq!(
            v.iter().map(|x| x.0).collect::<Vec<_>>(),
            [0, 1, 2, 0, 1, 2, 0]
        );
        assert!(v.iter().all(|x| !x.1));
        let mut p = picker(Op::RandWrite, 1000);
        assert!((0..10_000).all(|_| {
            let (b, w) = p.draw();
            b < 1000 && w
        }));
    }

    #[test]
    fn randrw_follows_rwmix() {
        let mut p = picker(Op::RandRw, 1 << 20);
        let n = 100_000;
        let reads = (0..n).filter(|_| !p.draw().1).count();
        let share = reads as f64 / n as f64;
        assert!((share - 0.70).abs() < 0.01, "read share {share}");
    }

    #[test]
    fn busy_blocks_are_avoided_or_deferred() {
        let mut p = picker(Op::Read, 4);
        assert_eq!(p.next(|b| b == 0), None);
        assert_eq!(p.next(|_| false), Some((0, false)));
        let mut p = picker(Op::RandRead, 2);
        for _ in 0..100 {
            if let Some((b, _)) = p.next(|b| b == 0) {
                assert_eq!(b, 1);
            }
        }
    }
}
