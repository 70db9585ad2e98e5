//! Theoretical DRAM bandwidth: from the SMBIOS memory-device records (type
//! 17) when the firmware tables are readable, or from `--peak-mem-bw`.
//!
//! SMBIOS gives each populated DIMM's configured speed (MT/s) and data width
//! (bits), but not how DIMMs map to memory channels. The peak is computed as
//! `Σ DIMMs × configured MT/s × data width / 8`, which is `channels × MT/s ×
//! 8 B` when each channel holds one DIMM (the common server and desktop
//! layout). With two DIMMs per channel the real peak is half: the formula
//! says so, and `--peak-mem-bw` overrides it.

use std::collections::BTreeMap;

use benchsuite_core::units::format_si;
use benchsuite_core::{BenchError, Peak, PeakInput};

/// Where the firmware's SMBIOS table is exposed (root-readable on most
/// systems).
const DMI_TABLE: &str = "/sys/firmware/dmi/tables/DMI";
/// One file per SMBIOS structure; type 17 entries are `17-N/raw`.
const DMI_ENTRIES: &str = "/sys/firmware/dmi/entries";

/// The option key the CLI's `--peak-mem-bw` sets.
pub const OPTION: &str = "peak-mem-bw";

/// A populated memory device from SMBIOS type 17.
#[derive(Debug, Clone, PartialEq)]
pub struct Dimm {
    /// Configured (running) speed, MT/s; the rated speed when the configured
    /// one is not given.
    pub mts: u32,
    /// Data width in bits (64 for a DDR4/DDR5 DIMM; ECC bits excluded).
    pub data_bits: u16,
    /// Device locator string index resolved (`DIMM_A1`), when present.
    pub locator: Option<String>,
}

/// The machine's theoretical DRAM bandwidth and how it was found.
#[derive(Debug, Clone, PartialEq)]
pub struct DramPeak {
    /// Bytes per second.
    pub bytes_per_sec: f64,
    /// Formula shown in the record.
    pub formula: String,
    /// Formula inputs.
    pub inputs: BTreeMap<String, PeakInput>,
}

impl DramPeak {
    /// The record's peak for metric `metric`.
    pub fn to_peak(&self, metric: &str) -> Peak {
        Peak {
            metric: metric.to_string(),
            value: self.bytes_per_sec,
            unit: "B/s".into(),
            formula: self.formula.clone(),
            inputs: self.inputs.clone(),
            efficiency: None,
        }
    }
}

/// The peak to use and a note for the record: the user's `--peak-mem-bw`
/// when given (it can correct what SMBIOS cannot know), else SMBIOS, else
/// `None` with a note saying why it is unknown. A malformed `--peak-mem-bw`
/// is an `Err` naming the flag, caused by what [`parse_rate`] refused.
pub fn dram_peak(option: Option<&str>) -> Result<(Option<DramPeak>, String), BenchError> {
    if let Some(text) = option {
        let bps = parse_rate(text).map_err(|e| {
            BenchError::caused(format!("invalid value `{text}` for --peak-mem-bw"), e)
        })?;
        let mut inputs = BTreeMap::new();
        inputs.insert(
            "peak_mem_bw".to_string(),
            PeakInput {
                value: bps,
                unit: "B/s".into(),
                source: "user (--peak-mem-bw)".into(),
            },
        );
        return Ok((
            Some(DramPeak {
                bytes_per_sec: bps,
                formula: "given by the user (--peak-mem-bw)".into(),
                inputs,
            }),
            format!(
                "peak DRAM bandwidth {} from --peak-mem-bw",
                format_si(bps, "B/s")
            ),
        ));
    }
    match smbios_dimms() {
        Ok(dimms) => match from_dimms(&dimms) {
            Some(p) => {
                let note = format!("peak DRAM bandwidth {} from SMBIOS: {}", format_si(p.bytes_per_sec, "B/s"), p.formula);
                Ok((Some(p), note))
            }
            None => Ok((
                None,
                "theoretical DRAM bandwidth unknown: SMBIOS lists no populated memory device with a known speed (common in virtual machines); give it with --peak-mem-bw (e.g. 68.3GB/s) for an efficiency".into(),
            )),
        },
        Err(why) => Ok((
            None,
            format!("theoretical DRAM bandwidth unknown: {why}, and --peak-mem-bw was not given (e.g. --peak-mem-bw 68.3GB/s); no efficiency")
        )),
    }
}

/// The peak from a list of DIMMs, or `None` when no DIMM has a speed.
pub fn from_dimms(dimms: &[Dimm]) -> Option<DramPeak> {
    let known: Vec<&Dimm> = dimms
        .iter()
        .filter(|d| d.mts > 0 && d.data_bits > 0)
        .collect();
    if known.is_empty() {
        return None;
    }
    let bps: f64 = known
        .iter()
        .map(|d| d.mts as f64 * 1e6 * d.data_bits as f64 / 8.0)
        .sum();
    let mts_min = known.iter().map(|d| d.mts).min().unwrap_or(0);
    let mts_max = known.iter().map(|d| d.mts).max().unwrap_or(0);
    let bits = known[0].data_bits;
    let mut inputs = BTreeMap::new();
    let smbios = |v: f64, unit: &str| PeakInput {
        value: v,
        unit: unit.into(),
        source: "smbios type 17".into(),
    };
    inputs.insert("dimms".into(), smbios(known.len() as f64, "DIMMs"));
    inputs.insert("configured_speed".into(), smbios(mts_min as f64, "MT/s"));
    inputs.insert("data_width".into(), smbios(bits as f64, "bit"));
    let speed = if mts_min == mts_max {
        format!("{mts_min} MT/s")
    } else {
        format!("{mts_min}..{mts_max} MT/s")
    };
    Some(DramPeak {
        bytes_per_sec: bps,
        formula: format!(
            "{} DIMMs × {speed} × {} B, assuming one DIMM per channel (SMBIOS does not say; with two per channel the peak is half — correct it with --peak-mem-bw)",
            known.len(),
            bits / 8
        ),
        inputs,
    })
}

/// Populated DIMMs from the firmware tables, or why they cannot be read.
pub fn smbios_dimms() -> Result<Vec<Dimm>, benchsuite_core::ValueError> {
    smbios_dimms_text().map_err(Into::into)
}

fn smbios_dimms_text() -> Result<Vec<Dimm>, String> {
    match std::fs::read(DMI_TABLE) {
        Ok(table) => return Ok(parse_table(&table)),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            return Err(format!("{DMI_TABLE} is readable by root only"));
        }
        Err(_) => {}
    }
    let dir = std::fs::read_dir(DMI_ENTRIES)
        .map_err(|_| format!("the firmware exposes no SMBIOS tables ({DMI_TABLE} is missing)"))?;
    let mut dimms = Vec::new();
    let mut denied = false;
    for entry in dir.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with("17-") {
            continue;
        }
        match std::fs::read(entry.path().join("raw")) {
            Ok(raw) => dimms.extend(parse_table(&raw)),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => denied = true,
            Err(_) => {}
        }
    }
    if dimms.is_empty() && denied {
        return Err(format!("{DMI_ENTRIES}/17-*/raw are readable by root only"));
    }
    Ok(dimms)
}

/// Walks SMBIOS structures (formatted area + string set, ended by a double
/// NUL) and returns every populated type-17 device.
pub fn parse_table(table: &[u8]) -> Vec<Dimm> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 4 <= table.len() {
        let kind = table[pos];
        let len = table[pos + 1] as usize;
        if len < 4 || pos + len > table.len() {
            break;
        }
        let formatted = &table[pos..pos + len];
        // The string set follows the formatted area and ends with "\0\0".
        let mut end = pos + len;
        while end + 1 < table.len() && !(table[end] == 0 && table[end + 1] == 0) {
            end += 1;
        }
        let strings = &table[pos + len..end.min(table.len())];
        if kind == 17
            && let Some(d) = parse_type17(formatted, strings)
        {
            out.push(d);
        }
        if kind == 127 {
            break;
        }
        pos = end + 2;
    }
    out
}

fn word(s: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*s.get(off)?, *s.get(off + 1)?]))
}

fn dword(s: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *s.get(off)?,
        *s.get(off + 1)?,
        *s.get(off + 2)?,
        *s.get(off + 3)?,
    ]))
}

/// One type-17 structure: `None` when the slot is empty.
fn parse_type17(s: &[u8], strings: &[u8]) -> Option<Dimm> {
    // 0x0C Size: 0 = no device installed, 0xFFFF = unknown.
    let size = word(s, 0x0C)?;
    if size == 0 {
        return None;
    }
    let data_bits = word(s, 0x0A).filter(|&w| w != 0xFFFF).unwrap_or(0);
    // 0x15 Speed (rated), 0x20 Configured Memory Speed (SMBIOS 2.7+);
    // 0xFFFF means "see the 32-bit extended field" (0x54 / 0x58, 3.3+).
    let pick = |off: usize, ext: usize| -> u32 {
        match word(s, off) {
            Some(0xFFFF) => dword(s, ext).unwrap_or(0),
            Some(v) => v as u32,
            None => 0,
        }
    };
    let configured = pick(0x20, 0x58);
    let mts = if configured > 0 {
        configured
    } else {
        pick(0x15, 0x54)
    };
    let locator = s.get(0x10).and_then(|&i| string(strings, i));
    Some(Dimm {
        mts,
        data_bits,
        locator,
    })
}

/// The `index`-th (1-based) string of a structure's string set.
fn string(strings: &[u8], index: u8) -> Option<String> {
    if index == 0 {
        return None;
    }
    strings
        .split(|&b| b == 0)
        .nth(index as usize - 1)
        .map(|b| String::from_utf8_lossy(b).trim().to_string())
        .filter(|s| !s.is_empty())
}

/// Parses a bandwidth such as `68.3GB/s`, `68.3 GB/s`, `63.6GiB/s`,
/// `25600MB/s` or `68.3e9B/s`. SI prefixes are decimal (GB/s = 10^9 B/s,
/// as DRAM data sheets use); `KiB/s`, `MiB/s`, `GiB/s`, `TiB/s` are binary.
/// The `/s` may be left out; a bare number is refused (say the unit).
pub fn parse_rate(text: &str) -> Result<f64, benchsuite_core::ValueError> {
    parse_rate_text(text).map_err(Into::into)
}

fn parse_rate_text(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| {
            !(c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-')
        })
        .unwrap_or(t.len());
    // An exponent's `e` may swallow the start of a unit like `EB`; only
    // digits, '.', and an exponent belong to the number.
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| "expected a number followed by a unit, e.g. 68.3GB/s".to_string())?;
    let unit = unit.trim();
    let unit = unit
        .strip_suffix("/s")
        .or_else(|| unit.strip_suffix("ps"))
        .unwrap_or(unit);
    let mult = match unit {
        "" => return Err("give a unit, e.g. 68.3GB/s (GB/s = 10^9 B/s) or 63.6GiB/s".into()),
        "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        u => {
            return Err(format!(
                "unknown unit `{u}`: use B/s, kB/s, MB/s, GB/s, TB/s (decimal) or KiB/s, MiB/s, GiB/s, TiB/s (binary)"
            ));
        }
    };
    let bps = value * mult;
    if !bps.is_finite() || bps <= 0.0 {
        return Err("must be a positive rate".into());
    }
    if bps > 1e15 {
        return Err("above 1 PB/s: check the unit".into());
    }
    Ok(bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type-17 structure of SMBIOS 3.3 layout (0x5C bytes) with strings.
    fn type17(size: u16, data_bits: u16, speed: u16, configured: u16, locator: &str) -> Vec<u8> {
        let mut s = vec![0u8; 0x5C];
        s[0] = 17;
        s[1] = 0x5C;
        s[0x0A..0x0C].copy_from_slice(&data_bits.to_le_bytes());
        s[0x0C..0x0E].copy_from_slice(&size.to_le_bytes());
        s[0x10] = 1;
        s[0x15..0x17].copy_from_slice(&speed.to_le_bytes());
        s[0x20..0x22].copy_from_slice(&configured.to_le_bytes());
        s.extend_from_slice(locator.as_bytes());
        s.extend_from_slice(&[0, 0]);
        s
    }

    #[test]
    fn smbios_type17_gives_the_peak() {
        let mut t = Vec::new();
        // A type-0 BIOS record without strings, to be skipped.
        t.extend_from_slice(&[0, 4, 0, 0, 0, 0]);
        t.extend(type17(16384, 64, 5600, 4800, "DIMM_A1"));
        t.extend(type17(0, 64, 0, 0, "DIMM_A2")); // empty slot
        t.extend(type17(16384, 64, 5600, 4800, "DIMM_B1"));
        t.extend(type17(16384, 64, 3200, 0, "DIMM_C1")); // no configured speed: rated
        t.extend_from_slice(&[127, 4, 0, 0, 0, 0]);
        let d = parse_table(&t);
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(d[0].locator.as_deref(), Some("DIMM_A1"));
        assert_eq!(d[2].mts, 3200);
        let p = from_dimms(&d).unwrap();
        // (4800 + 4800 + 3200) MT/s × 8 B
        assert!(
            (p.bytes_per_sec - 12800e6 * 8.0).abs() < 1.0,
            "{}",
            p.bytes_per_sec
        );
        assert!(p.formula.contains("one DIMM per channel"), "{}", p.formula);
        assert_eq!(p.inputs["dimms"].value, 3.0);
    }

    #[test]
    fn unknown_speeds_and_truncated_tables_give_no_peak() {
        let d = parse_table(&type17(16384, 64, 0, 0, "DIMM 0"));
        assert_eq!(d.len(), 1);
        assert!(
            from_dimms(&d).is_none(),
            "a VM's DIMM with speed 0 gives no peak"
        );
        assert!(parse_table(&[17, 0x5C, 0]).is_empty());
        assert!(parse_table(&[]).is_empty());
    }

    #[test]
    fn rates_parse_with_si_and_binary_units() {
        assert_eq!(parse_rate("68.3GB/s").unwrap(), 68.3e9);
        assert_eq!(parse_rate(" 68.3 GB/s ").unwrap(), 68.3e9);
        assert_eq!(parse_rate("25600MB/s").unwrap(), 25.6e9);
        assert_eq!(parse_rate("1GiB/s").unwrap(), 1073741824.0);
        assert_eq!(parse_rate("100GB").unwrap(), 100e9);
        assert_eq!(parse_rate("6.83e10B/s").unwrap(), 6.83e10);
        for bad in [
            "fast",
            "68.3",
            "68.3 parsecs/s",
            "-5GB/s",
            "0GB/s",
            "",
            "GB/s",
            "1e30GB/s",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad} accepted");
        }
        assert!(parse_rate("68.3").unwrap_err().contains("unit"));
    }

    #[test]
    fn the_user_value_wins_and_garbage_is_named() {
        let (p, note) = dram_peak(Some("50GB/s")).unwrap();
        assert_eq!(p.unwrap().bytes_per_sec, 50e9);
        assert!(note.contains("--peak-mem-bw"));
        let e = dram_peak(Some("lots")).unwrap_err();
        assert!(
            e.to_string().contains("--peak-mem-bw") && e.to_string().contains("lots"),
            "{e}"
        );
        // The reason is the cause, not part of the message.
        let chain = benchsuite_core::error_chain(&e);
        assert!(
            chain.ends_with(": expected a number followed by a unit, e.g. 68.3GB/s"),
            "{chain}"
        );
    }
}
