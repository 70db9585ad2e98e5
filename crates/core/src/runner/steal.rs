//! CPU time stolen by the hypervisor while a record ran, from `/proc/stat`.

/// Share of CPU time stolen by the hypervisor above which a record gets a
/// warning.
pub const STEAL_WARN: f64 = 0.02;

/// Aggregate CPU time counters from `/proc/stat` (Linux), in ticks.
#[derive(Debug, Clone, Copy)]
pub(super) struct CpuTimes {
    total: u64,
    steal: u64,
}

impl CpuTimes {
    pub(super) fn read() -> Option<CpuTimes> {
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let line = text.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|x| x.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal [guest guest_nice]:
        // guest time is already counted in user/nice, so sum the first eight.
        (v.len() >= 8).then(|| CpuTimes {
            total: v[..8].iter().sum(),
            steal: v[7],
        })
    }

    pub(super) fn steal_fraction_since(&self, before: &CpuTimes) -> Option<f64> {
        let total = self.total.checked_sub(before.total)?;
        let steal = self.steal.checked_sub(before.steal)?;
        (total > 0).then(|| steal as f64 / total as f64)
    }
}
