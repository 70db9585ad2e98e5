//! The benchmarks' parameter values that their reference commands read
//! too (`reference.rs`): where a TCP stream's ends run, and a UDP
//! bit rate. A leaf below both.

benchsuite_core::choice_enum! {
    /// Where a stream's two ends run (`cpus`).
    pub(crate) enum StreamCpus {
        /// `split` with the in-process server and one stream on a machine
        /// with two CPUs or more, else `any`.
        Auto = "auto",
        /// Where the scheduler puts them.
        Any = "any",
        /// This host's stream threads on the first allowed CPU, the
        /// in-process server's on the second.
        Split = "split",
    }
}

/// The CPUs of a stream's two ends (this host's, the in-process
/// server's) for `cpus` (None: unpinned), or why `cpus` cannot be had.
/// `allowed` is this process's CPUs, lowest first.
pub(crate) fn split_cpus(
    cpus: StreamCpus,
    in_process: bool,
    threads: u64,
    allowed: &[usize],
) -> Result<Option<(usize, usize)>, String> {
    let possible = in_process && threads == 1 && allowed.len() >= 2;
    match cpus {
        StreamCpus::Any => Ok(None),
        StreamCpus::Auto if !possible => Ok(None),
        _ if !in_process => Err(
            "with --peer the server is another process, not this one's to place: leave cpus=auto or any, and pin each end with taskset".into(),
        ),
        _ if threads != 1 => Err(format!(
            "cpus=split places one stream's two ends; with threads={threads} use cpus=any"
        )),
        _ if allowed.len() < 2 => Err(format!(
            "cpus=split needs two CPUs; this process may run on {allowed:?}"
        )),
        _ => Ok(Some((allowed[0], allowed[1]))),
    }
}

/// Parses `rate`: `max`, or a bit rate with an SI prefix (`500M`, `1.5G`,
/// `100Mbit`, `1Gbps`; k = 1000 as in iperf3 -b). `None` means `max`.
pub fn parse_rate(text: &str) -> Result<Option<f64>, benchsuite_core::ValueError> {
    parse_rate_text(text).map_err(Into::into)
}

fn parse_rate_text(text: &str) -> Result<Option<f64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("max") {
        return Ok(None);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num.parse().map_err(|_| {
        "expected `max` or a bit rate such as 500M or 1.5G (bits per second, k = 1000)".to_string()
    })?;
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit
        .strip_suffix("bps")
        .or_else(|| unit.strip_suffix("bit/s"))
        .or_else(|| unit.strip_suffix("bit"))
        .or_else(|| unit.strip_suffix("b"))
        .unwrap_or(&unit);
    let scale = match unit {
        "" => 1.0,
        "k" => 1e3,
        "m" => 1e6,
        "g" => 1e9,
        "t" => 1e12,
        u => {
            return Err(format!(
                "unknown rate unit `{u}` (use k, M, G or T; bits per second)"
            ));
        }
    };
    let r = v * scale;
    if !(r.is_finite() && r >= 1.0) {
        return Err("the rate must be at least 1 bit/s".into());
    }
    Ok(Some(r))
}
