//! Progress on stderr: a bar on a terminal, nothing otherwise.

use std::time::Duration;

use benchsuite::runner::Observer;
use benchsuite::{Point, Record, Status};
use benchsuite_core::text::printable_line;
use indicatif::{ProgressBar, ProgressStyle};

/// Draws one bar for the whole run, naming the record in progress.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A bar when `enabled` (stderr is a terminal and not `--no-progress`).
    pub fn new(enabled: bool) -> Self {
        Progress {
            bar: enabled.then(ProgressBar::hidden),
        }
    }
}

impl Observer for Progress {
    fn start(&mut self, total: usize) {
        if let Some(bar) = &mut self.bar {
            *bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(200));
        }
    }

    fn record_start(&mut self, id: &str, point: &Point) {
        if let Some(bar) = &self.bar {
            bar.set_message(format!("{id} {}", point.label()));
        }
    }

    fn record_done(&mut self, record: &Record) {
        if let Some(bar) = &self.bar {
            match record.status {
                Status::Ok => {}
                Status::Skipped => bar.println(format!(
                    "skipped {}: {}",
                    record.key(),
                    printable_line(record.reason.as_deref().unwrap_or(""))
                )),
                Status::Failed => bar.println(format!(
                    "FAILED {}: {}",
                    record.key(),
                    printable_line(record.reason.as_deref().unwrap_or(""))
                )),
            }
            if let Some(c) = &record.capacity {
                bar.println(format!("{}: {}", record.id, c.sentence()));
            }
            bar.inc(1);
        }
    }

    fn step_done(&mut self, record: &Record) {
        if let Some(bar) = &self.bar {
            let what = record.notes.last().map(String::as_str).unwrap_or("");
            match record.status {
                Status::Ok => bar.println(format!("{}: {what}", record.id)),
                _ => bar.println(format!(
                    "{} {}: {}",
                    if record.status == Status::Failed {
                        "FAILED"
                    } else {
                        "skipped"
                    },
                    record.key(),
                    printable_line(record.reason.as_deref().unwrap_or(""))
                )),
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
