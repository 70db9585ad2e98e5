//! A UDP sink stream's per-batch receive accounting (`UdpAcc`: loss,
//! reordering, lateness, RFC 3550 jitter): plain arithmetic over what the
//! receiving thread (`udp.rs`) hands it.

use std::time::Instant;

use crate::proto::UdpBatchStats;

/// What a UDP sink stream has counted in the current batch.
#[derive(Debug, Default)]
pub(crate) struct UdpAcc {
    /// First sequence number of the current batch.
    batch_start: u64,
    /// One past the highest sequence number seen.
    pub(super) next_seq: u64,
    stats: UdpBatchStats,
    /// Transit time (arrival − send stamp) of the previous datagram, ns.
    last_transit: Option<i128>,
    jitter_ns: f64,
    pub(super) last_arrival: Option<Instant>,
}

impl UdpAcc {
    /// Counts one datagram: sequence number, payload length, the sender's
    /// timestamp and our arrival time (both in ns on their own clocks).
    pub(crate) fn record(
        &mut self,
        seq: u64,
        len: u64,
        sent_ns: u64,
        arrival_ns: u64,
        now: Instant,
    ) {
        self.last_arrival = Some(now);
        if seq < self.batch_start {
            self.stats.late += 1;
            return;
        }
        if self.stats.received == 0 {
            self.stats.first_ns = arrival_ns;
            self.stats.first_bytes = len;
        }
        self.stats.last_ns = arrival_ns;
        self.stats.received += 1;
        self.stats.bytes += len;
        if seq < self.next_seq {
            self.stats.out_of_order += 1;
        } else {
            // A forged u64::MAX must not overflow (a debug build would
            // panic and leak this data thread's slot).
            self.next_seq = seq.saturating_add(1);
        }
        // RFC 3550 §6.4.1: J += (|D(i-1, i)| - J) / 16, where D is the
        // difference of transit times; the clocks' offset cancels.
        let transit = i128::from(arrival_ns) - i128::from(sent_ns);
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    /// The batch's counts; the next batch starts at `end`.
    pub(crate) fn take_batch(&mut self, end: u64) -> UdpBatchStats {
        let mut out = std::mem::take(&mut self.stats);
        out.jitter_ns = self.jitter_ns;
        self.batch_start = end;
        self.next_seq = self.next_seq.max(end);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forged_maximal_sequence_number_does_not_overflow() {
        let mut a = UdpAcc::default();
        let t = Instant::now();
        a.record(u64::MAX, 100, 0, 10, t);
        a.record(u64::MAX, 100, 0, 20, t);
        a.record(3, 100, 0, 30, t);
        let b = a.take_batch(10);
        assert_eq!(b.received, 3);
        assert_eq!(b.out_of_order, 1);
    }

    #[test]
    fn udp_accounting_counts_loss_reordering_lateness_and_jitter() {
        let t = Instant::now();
        let mut a = UdpAcc::default();
        // Batch 1: seqs 0..5 sent; 2 is lost, 4 arrives before 3.
        for (seq, arrival) in [(0, 100), (1, 200), (4, 400), (3, 410)] {
            a.record(seq, 100, seq * 100, arrival, t);
        }
        let b = a.take_batch(5);
        assert_eq!(
            (b.received, b.bytes, b.out_of_order, b.late),
            (4, 400, 1, 0)
        );
        assert!(b.jitter_ns > 0.0);
        // Batch 2: a straggler from batch 1 arrives, then 5 and 6.
        a.record(2, 100, 200, 500, t);
        a.record(5, 100, 500, 600, t);
        a.record(6, 100, 600, 700, t);
        let b = a.take_batch(7);
        assert_eq!((b.received, b.out_of_order, b.late), (2, 0, 1));
        // Perfectly regular arrivals decay the jitter towards 0.
        let mut c = UdpAcc::default();
        for s in 0..200 {
            c.record(s, 1, s * 10, s * 10 + 5, t);
        }
        assert_eq!(c.take_batch(200).jitter_ns, 0.0);
    }
}
