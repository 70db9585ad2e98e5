//! Values a person reads and writes in a baseline file: `55.20 GB/s`,
//! `34.30 µs`, `1.25 Gop/s`, `0.50 %`, in the metric's own base unit
//! (`B/s`, `s`, `op/s`, `%`) with an SI prefix or a time unit.

/// Formats `v` (in base unit `unit`) with four significant digits and a
/// prefix a person reads: `55.20 GB/s`, `34.30 µs`, `12.00 %`.
pub fn format_quantity(v: f64, unit: &str) -> String {
    if !v.is_finite() {
        return format!("{v} {unit}").trim_end().to_string();
    }
    let a = v.abs();
    let (scale, prefix): (f64, &str) = match unit {
        "s" => {
            if a == 0.0 || a >= 1.0 {
                (1.0, "")
            } else if a >= 1e-3 {
                (1e-3, "m")
            } else if a >= 1e-6 {
                (1e-6, "µ")
            } else {
                (1e-9, "n")
            }
        }
        "%" | "" => (1.0, ""),
        _ if a >= 1e15 => (1.0, ""),
        _ => benchsuite_core::units::si_prefix(a),
    };
    let x = v / scale;
    let text = if x != 0.0 && (x.abs() >= 1e6 || x.abs() < 1e-3) {
        format!("{x:.3e}")
    } else {
        let digits = if x == 0.0 {
            0
        } else {
            (3 - x.abs().log10().floor() as i32).clamp(0, 6) as usize
        };
        format!("{x:.digits$}")
    };
    match (prefix, unit) {
        ("", "") => text,
        _ => format!("{text} {prefix}{unit}"),
    }
}

/// Parses a value of a metric in base unit `unit`: a number followed by
/// the unit with an optional SI prefix (`3.8 TB/s`, `120 Gflop/s`,
/// `950k op/s`), a time for metrics in seconds (`35us`, `35 µs`, `1.5 ms`),
/// `%` for metrics in percent. A bare number is accepted only for a
/// unitless metric, since `3.8` could mean B/s or TB/s.
pub fn parse_quantity(text: &str, unit: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_quantity_text(text, unit).map_err(Into::into)
}

fn parse_quantity_text(text: &str, unit: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .char_indices()
        .find(|&(i, c)| {
            !(c.is_ascii_digit()
                || c == '.'
                || ((c == '-' || c == '+') && (i == 0 || t[..i].ends_with(['e', 'E'])))
                || ((c == 'e' || c == 'E')
                    && t[i + 1..]
                        .starts_with(|d: char| d.is_ascii_digit() || d == '-' || d == '+')))
        })
        .map_or(t.len(), |(i, _)| i);
    let (num, suffix) = t.split_at(split);
    let x: f64 = num
        .parse()
        .map_err(|_| format!("`{t}` does not start with a number"))?;
    if !x.is_finite() {
        return Err(format!("`{t}` is not a finite number"));
    }
    let suffix = suffix.trim();
    let want = if unit.is_empty() {
        "no unit".to_string()
    } else {
        format!("a value in {unit} (`{}`)", example(unit))
    };
    if suffix.is_empty() {
        return if unit.is_empty() {
            Ok(x)
        } else {
            Err(format!("`{t}` has no unit: give {want}"))
        };
    }
    if unit == "s" {
        let scale = match suffix {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "min" => 60.0,
            "h" => 3600.0,
            _ => return Err(format!("`{t}`: unknown time unit `{suffix}`; give {want}")),
        };
        return Ok(x * scale);
    }
    if unit == "%" {
        return if suffix == "%" {
            Ok(x)
        } else {
            Err(format!("`{t}`: give {want}"))
        };
    }
    let Some(prefix) = suffix.strip_suffix(unit).filter(|_| !unit.is_empty()) else {
        return Err(format!("`{t}`: the unit is not {unit}; give {want}"));
    };
    let scale = match prefix {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        _ => return Err(format!("`{t}`: unknown prefix `{prefix}` (k, M, G, T, P)")),
    };
    Ok(x * scale)
}

fn example(unit: &str) -> String {
    match unit {
        "s" => "35us, 1.5 ms".into(),
        "%" => "0.5 %".into(),
        u => format!("3.8 T{u}, 950 M{u}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_values_read_back_within_their_four_digits() {
        for (v, unit) in [
            (5.52e10, "B/s"),
            (3.43e-5, "s"),
            (1.234e-9, "s"),
            (2.5, "s"),
            (0.0, "s"),
            (1.25e9, "op/s"),
            (42.0, "%"),
            (0.37, "%"),
            (12.5, ""),
            (7.0e17, "flop/s"),
            (-3.0e6, "B/s"),
        ] {
            let text = format_quantity(v, unit);
            let back = parse_quantity(&text, unit).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert!(
                (back - v).abs() <= 5e-4 * v.abs(),
                "{v} {unit} → {text} → {back}"
            );
        }
        assert_eq!(format_quantity(5.52e10, "B/s"), "55.20 GB/s");
        assert_eq!(format_quantity(3.43e-5, "s"), "34.30 µs");
    }

    #[test]
    fn a_value_without_its_unit_or_with_another_is_refused_naming_the_unit() {
        assert_eq!(parse_quantity("3.8 TB/s", "B/s"), Ok(3.8e12));
        assert_eq!(parse_quantity("35us", "s"), Ok(35e-6));
        assert_eq!(parse_quantity("1e3 op/s", "op/s"), Ok(1e3));
        let e = parse_quantity("3.8", "B/s").unwrap_err();
        assert!(e.contains("no unit") && e.contains("B/s"), "{e}");
        let e = parse_quantity("3.8 Tflop/s", "B/s").unwrap_err();
        assert!(e.contains("not B/s"), "{e}");
        let e = parse_quantity("fast", "s").unwrap_err();
        assert!(e.contains("number"), "{e}");
        assert!(parse_quantity("3 parsecs", "s").is_err());
        assert!(parse_quantity("inf B/s", "B/s").is_err());
    }
}
