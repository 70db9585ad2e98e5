//! Facts about the running machine that the memory benchmarks need beyond
//! [`Host`]: free memory, transparent huge pages, which cache a working set
//! fits in, and a small deterministic random number generator.

use benchsuite_core::Host;
use benchsuite_core::units::format_size;

/// `MemAvailable` from `/proc/meminfo` in bytes: the kernel's estimate of
/// memory that can be allocated without swapping. `None` where unreadable.
pub fn mem_available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    parse_meminfo(&text, "MemAvailable:")
}

fn parse_meminfo(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Share of `MemAvailable` a benchmark may allocate: the rest is left to the
/// system and to other processes, so a large working set never ends in the
/// OOM killer.
pub const MEM_SHARE: f64 = 0.9;

/// Checks that `bytes` can be allocated now. The error text names the
/// amount asked for and what is available, and ends with `hint` (what to
/// change), for a `ConfigError` or a `BenchError`.
pub fn check_fits_in_memory(
    bytes: u64,
    what: &str,
    hint: &str,
) -> Result<(), benchsuite_core::ValueError> {
    check_fits_in_memory_text(bytes, what, hint).map_err(Into::into)
}

fn check_fits_in_memory_text(bytes: u64, what: &str, hint: &str) -> Result<(), String> {
    let Some(avail) = mem_available() else {
        return Ok(());
    };
    let limit = (avail as f64 * MEM_SHARE) as u64;
    if bytes > limit {
        return Err(format!(
            "{what} needs {} but only {} is available now (MemAvailable {} in /proc/meminfo, of which benchsuite uses at most {:.0}%); {hint}",
            format_size(bytes),
            format_size(limit),
            format_size(avail),
            MEM_SHARE * 100.0
        ));
    }
    Ok(())
}

/// The transparent-huge-page mode (`always`, `madvise` or `never`: the word
/// in brackets in `/sys/kernel/mm/transparent_hugepage/enabled`).
pub fn thp_mode() -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    let start = text.find('[')?;
    let end = text[start..].find(']')? + start;
    Some(text[start + 1..end].to_string())
}

/// How much of the mapping that contains `addr` is backed by transparent
/// huge pages: `(AnonHugePages, Rss)` in bytes from `/proc/self/smaps`.
/// The kernel may merge neighbouring mappings with the same flags, so this
/// describes the whole mapping `addr` lies in.
pub fn huge_backing(addr: usize) -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    parse_smaps(&text, addr)
}

fn parse_smaps(text: &str, addr: usize) -> Option<(u64, u64)> {
    let mut inside = false;
    let (mut huge, mut rss) = (None, None);
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-')
            && let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
        {
            if inside {
                break;
            }
            inside = (lo..hi).contains(&addr);
            continue;
        }
        if !inside {
            continue;
        }
        let kib = || {
            line.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .map(|k| k * 1024)
        };
        if line.starts_with("AnonHugePages:") {
            huge = kib();
        } else if line.starts_with("Rss:") {
            rss = kib();
        }
    }
    Some((huge?, rss?))
}

/// Where a working set lives: the smallest data cache it fits in, as the
/// host reports its caches, or DRAM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fit {
    /// Cache level (1, 2, 3...) or `None` for DRAM.
    pub level: Option<u32>,
    /// A sentence for the record: which level and why.
    pub note: String,
}

impl Fit {
    /// True when the working set is larger than every reported cache.
    pub fn is_dram(&self) -> bool {
        self.level.is_none()
    }
}

/// Which cache level a working set of `per_thread` bytes on each of
/// `threads` threads fits in. A cache shared by `k` logical CPUs holds the
/// working sets of up to `k` of the threads (threads are pinned to distinct
/// CPUs first), so it must hold `per_thread × min(threads, k)` bytes.
pub fn cache_fit(host: &Host, per_thread: u64, threads: usize) -> Fit {
    let mut caches: Vec<_> = host
        .cpu
        .caches
        .iter()
        .filter(|c| c.kind != "Instruction")
        .collect();
    caches.sort_by_key(|c| c.level);
    let per = if threads > 1 {
        format!("{} per thread", format_size(per_thread))
    } else {
        format_size(per_thread)
    };
    if caches.is_empty() {
        return Fit {
            level: None,
            note: format!(
                "working set {per}: the host reports no cache sizes, so it is assumed to be DRAM-bound"
            ),
        };
    }
    for c in &caches {
        let sharers = c.shared_by.unwrap_or(1).max(1).min(threads.max(1)) as u64;
        let need = per_thread.saturating_mul(sharers);
        if need <= c.size_bytes {
            let scope = match c.shared_by {
                Some(1) | None => "per CPU".to_string(),
                Some(k) => format!("shared by {k} CPUs"),
            };
            let shared = if sharers > 1 {
                format!(" ({sharers} threads share it: {})", format_size(need))
            } else {
                String::new()
            };
            return Fit {
                level: Some(c.level),
                note: format!(
                    "working set {per}{shared} fits in L{} ({}, {scope}) as the host reports its caches; a virtual machine may report caches that do not behave like that",
                    c.level,
                    format_size(c.size_bytes)
                ),
            };
        }
    }
    let llc = caches.last().map(|c| c.size_bytes).unwrap_or(0);
    Fit {
        level: None,
        note: format!(
            "working set {per} is larger than every cache the host reports (last level {}): DRAM-bound",
            format_size(llc)
        ),
    }
}

/// SplitMix64: a small, fast, well-mixed generator. Deterministic from its
/// seed so permutations are reproducible run to run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; the bias is below
    /// `n / 2^64`, negligible here). `n` must be positive.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchsuite_core::host::CacheInfo;

    fn host(caches: &[(u32, &str, u64, usize)]) -> Host {
        let mut h = Host::default();
        h.cpu.caches = caches
            .iter()
            .map(|&(level, kind, size_bytes, shared)| CacheInfo {
                level,
                kind: kind.into(),
                size_bytes,
                shared_by: Some(shared),
            })
            .collect();
        h
    }

    #[test]
    fn working_sets_land_in_the_right_level() {
        let h = host(&[
            (1, "Data", 48 << 10, 1),
            (1, "Instruction", 32 << 10, 1),
            (2, "Unified", 2 << 20, 1),
            (3, "Unified", 300 << 20, 2),
        ]);
        assert_eq!(cache_fit(&h, 4 << 10, 1).level, Some(1));
        assert_eq!(cache_fit(&h, 48 << 10, 1).level, Some(1));
        assert_eq!(cache_fit(&h, 64 << 10, 1).level, Some(2));
        let l3 = cache_fit(&h, 200 << 20, 1);
        assert_eq!(l3.level, Some(3));
        assert!(
            l3.note.contains("L3") && l3.note.contains("300MiB"),
            "{}",
            l3.note
        );
        // Two threads of 200 MiB share the 300 MiB L3: DRAM.
        let two = cache_fit(&h, 200 << 20, 2);
        assert!(two.is_dram(), "{two:?}");
        assert!(cache_fit(&h, 1 << 30, 1).is_dram());
        assert!(cache_fit(&Host::default(), 4096, 1).is_dram());
    }

    #[test]
    fn meminfo_and_smaps_parse() {
        let m = "MemTotal:       24731708 kB\nMemAvailable:   24292448 kB\n";
        assert_eq!(parse_meminfo(m, "MemAvailable:"), Some(24292448 * 1024));
        assert_eq!(parse_meminfo(m, "Nope:"), None);
        let s = "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\nRss:                4096 kB\nAnonHugePages:      2048 kB\n7f0000400000-7f0000500000 rw-p 00000000 00:00 0\nRss:                   4 kB\nAnonHugePages:         0 kB\n";
        assert_eq!(
            parse_smaps(s, 0x7f00_0000_1000),
            Some((2048 * 1024, 4096 * 1024))
        );
        assert_eq!(parse_smaps(s, 0x7f00_0040_0000), Some((0, 4096)));
        assert_eq!(parse_smaps(s, 0x10), None);
    }

    #[test]
    fn rng_below_stays_in_range_and_covers_it() {
        let mut r = Rng::new(7);
        let mut seen = [false; 10];
        for _ in 0..1000 {
            let v = r.below(10);
            assert!(v < 10);
            seen[v as usize] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
