//! What the runner tells as it goes: the [`Observer`] a caller passes to
//! [`run_plan`](super::run_plan) (the CLI draws its progress bar from it),
//! and [`Silent`], which ignores everything.

use crate::param::Point;
use crate::results::{Record, Report};

/// Receives progress events; the CLI draws a progress bar from them.
pub trait Observer {
    /// The run is about to start `total` records.
    fn start(&mut self, total: usize) {
        let _ = total;
    }
    /// A record is starting.
    fn record_start(&mut self, id: &str, point: &Point) {
        let _ = (id, point);
    }
    /// A record is done.
    fn record_done(&mut self, record: &Record) {
        let _ = record;
    }
    /// One step of a capacity search is done (`rate=auto`, `--slo`; see
    /// [`crate::capacity`]): a record of its own, within the one planned
    /// record of the search, whose summary then comes to
    /// [`Observer::record_done`]. Its last note says what the step found.
    fn step_done(&mut self, record: &Record) {
        let _ = record;
    }
    /// Whether [`Observer::checkpoint`] should be called (building the
    /// report costs a copy of every record so far). Default: no.
    fn wants_checkpoints(&self) -> bool {
        false
    }
    /// The report so far, after each record but the last (its
    /// [`Report::progress`] says how far the run got): write it somewhere
    /// safe, so a crash or `kill -9` loses only the record in flight.
    fn checkpoint(&mut self, report: &Report) {
        let _ = report;
    }
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;
impl Observer for Silent {}
