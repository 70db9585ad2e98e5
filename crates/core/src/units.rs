//! Parsing and printing of sizes, durations, percentages and rates.
//!
//! Sizes follow fio's convention: `K`, `M`, `G`, `T` and their `KB`/`KiB`
//! spellings are all *binary* multiples (1K = 1KB = 1KiB = 1024 bytes).
//! Printed rates use explicit SI units (MB/s = 10^6 B/s). Stored values are
//! always in base units (bytes, seconds, operations).

use std::time::Duration;

/// Parses a size such as `512`, `4K`, `4KiB`, `1M`, `1MB`, `1MiB`, `1G`.
///
/// Units are case-insensitive and binary (as fio does by default). Returns a
/// message suitable for embedding in an error naming the flag.
pub fn parse_size(text: &str) -> Result<u64, crate::error::ValueError> {
    parse_size_text(text).map_err(Into::into)
}

fn parse_size_text(text: &str) -> Result<u64, String> {
    let t = text.trim();
    if t.is_empty() {
        return Err("empty size".into());
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err("a size starts with a number, e.g. 4K or 1MiB".into());
    }
    let unit_l = unit.trim().to_ascii_lowercase();
    let mult: u64 = match unit_l.as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => {
            return Err(format!(
                "unknown size unit `{}` (use B, K, M, G, T, optionally followed by B or iB; all binary)",
                unit.trim()
            ));
        }
    };
    let bytes = if num.contains('.') {
        let v: f64 = num
            .parse()
            .map_err(|_| format!("`{num}` is not a number"))?;
        let b = v * mult as f64;
        if b.fract() != 0.0 {
            return Err(format!("{text} is not a whole number of bytes"));
        }
        if !(0.0..=u64::MAX as f64).contains(&b) {
            return Err("size out of range".into());
        }
        b as u64
    } else {
        let v: u64 = num
            .parse()
            .map_err(|_| format!("`{num}` is not a number"))?;
        v.checked_mul(mult)
            .ok_or_else(|| "size out of range".to_string())?
    };
    Ok(bytes)
}

/// Parses a duration such as `500ms`, `10s`, `2m`, `1h`, `250us`, `1.5s`.
/// A bare number means seconds.
pub fn parse_duration(text: &str) -> Result<Duration, crate::error::ValueError> {
    parse_duration_text(text).map_err(Into::into)
}

fn parse_duration_text(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("`{t}` is not a duration (e.g. 500ms, 10s, 2m)"))?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        u => {
            return Err(format!(
                "unknown duration unit `{u}` (use ns, us, ms, s, m, h)"
            ));
        }
    };
    let secs = v * scale;
    if !secs.is_finite() || !(0.0..=1e9).contains(&secs) {
        return Err(format!("duration `{t}` out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a percentage such as `5%`, `5` or `0.5%` into a fraction (0.05).
pub fn parse_percent(text: &str) -> Result<f64, crate::error::ValueError> {
    parse_percent_text(text).map_err(Into::into)
}

fn parse_percent_text(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%');
    let v: f64 = t
        .parse()
        .map_err(|_| format!("`{text}` is not a percentage (e.g. 5%)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("`{text}` must be a non-negative percentage"));
    }
    Ok(v / 100.0)
}

/// Formats a byte count with binary units (`4KiB`, `1MiB`, `1.5GiB`).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < UNITS.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes}B")
    } else if v.fract() == 0.0 {
        format!("{v}{}", UNITS[i])
    } else {
        format!("{v:.2}{}", UNITS[i])
    }
}

/// Formats a value in seconds with a readable unit (`ns`, `µs`, `ms`, `s`).
pub fn format_seconds(s: f64) -> String {
    let a = s.abs();
    if !s.is_finite() {
        format!("{s}")
    } else if a < 1e-6 {
        format!("{:.2} ns", s * 1e9)
    } else if a < 1e-3 {
        format!("{:.2} µs", s * 1e6)
    } else if a < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else if a < 1e6 {
        format!("{s:.3} s")
    } else {
        // Past a million seconds, scientific: `1e308` is not 309 digits.
        format!("{s:.3e} s")
    }
}

/// Formats a value with an SI prefix and the given base unit (`1.23 GB/s`).
pub fn format_si(v: f64, unit: &str) -> String {
    let a = v.abs();
    if a >= 1e15 {
        // Past the largest prefix, scientific: never hundreds of digits.
        return format!("{v:.3e} {unit}");
    }
    let (scale, prefix) = si_prefix(a);
    format!("{:.3} {prefix}{unit}", v / scale)
}

/// The SI prefix a magnitude `a` (≥ 0) is written with, up to tera, and
/// its scale: `(1e9, "G")` for 3.2e9.
pub fn si_prefix(a: f64) -> (f64, &'static str) {
    if a >= 1e12 {
        (1e12, "T")
    } else if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e3 {
        (1e3, "k")
    } else {
        (1.0, "")
    }
}

/// Formats a value in its unit for humans: seconds get a time unit, rates
/// an SI prefix, percentages a `%` sign.
pub fn format_value(v: f64, unit: &str) -> String {
    match unit {
        "s" => format_seconds(v),
        "%" if v.abs() >= 1e6 => format!("{v:.3e} %"),
        "%" => format!("{v:.3} %"),
        "B" => format_size(v as u64),
        "" if v.abs() >= 1e6 => format!("{v:.3e}"),
        "" => format!("{v:.4}"),
        u => format_si(v, u),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_values_are_written_in_scientific_notation_never_hundreds_of_digits() {
        for (v, unit, want) in [
            (1e308, "s", "1.000e308 s"),
            (-2.5e7, "s", "-2.500e7 s"),
            (1e300, "B/s", "1.000e300 B/s"),
            (3e15, "flop/s", "3.000e15 flop/s"),
            (1e200, "%", "1.000e200 %"),
            (1e9, "", "1.000e9"),
        ] {
            assert_eq!(format_value(v, unit), want);
        }
        // Ordinary values keep their readable units.
        assert_eq!(format_value(999_999.0, "s"), "999999.000 s");
        assert_eq!(format_value(2.5e12, "B/s"), "2.500 TB/s");
        assert_eq!(format_value(42.0, "%"), "42.000 %");
        assert_eq!(format_value(f64::INFINITY, "s"), "inf");
    }

    #[test]
    fn sizes_are_binary() {
        assert_eq!(parse_size("512").unwrap(), 512);
        assert_eq!(parse_size("4K").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("4kb").unwrap(), 4096);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1MiB").unwrap(), 1 << 20);
        assert_eq!(parse_size("1G").unwrap(), 1 << 30);
        assert_eq!(parse_size("1.5K").unwrap(), 1536);
        assert_eq!(parse_size("100B").unwrap(), 100);
    }

    #[test]
    fn bad_sizes_are_rejected_with_a_reason() {
        let e = parse_size("1XB").unwrap_err();
        assert!(e.0.contains("XB"), "{e}");
        assert!(parse_size("").is_err());
        assert!(parse_size("K").is_err());
        assert!(parse_size("0.3").is_err());
        assert!(parse_size("99999999999T").is_err());
    }

    #[test]
    fn durations_and_percents() {
        assert_eq!(parse_duration("10ms").unwrap(), Duration::from_millis(10));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("10 parsecs").is_err());
        assert!((parse_percent("5%").unwrap() - 0.05).abs() < 1e-12);
        assert!(parse_percent("-1").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(format_size(4096), "4KiB");
        assert_eq!(format_size(1 << 20), "1MiB");
        assert_eq!(format_seconds(42e-9), "42.00 ns");
        assert_eq!(format_si(2.5e9, "B/s"), "2.500 GB/s");
    }
}
