//! A module's host facts (`host.extra`: the disk under the scratch
//! directory, the GPUs, the network path) as labelled lines, for `info`
//! and the HTML report's host section: nested objects become dotted
//! labels, byte counts human sizes, booleans yes/no; unknown (null) and
//! empty facts are left out.

use benchsuite_core::units::format_size;
use serde_json::Value;

/// `value` as (label, text) rows, labels relative to `prefix` (the
/// module's name).
pub fn flatten(prefix: &str, value: &Value) -> Vec<(String, String)> {
    let mut rows = Vec::new();
    walk(prefix, value, &mut rows);
    rows
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn walk(label: &str, v: &Value, rows: &mut Vec<(String, String)>) {
    match v {
        Value::Null => {}
        Value::Object(m) => {
            for (k, x) in m {
                // `size_bytes: 274877906944` reads `size 256GiB`.
                if let (Some(stem), Some(n)) = (k.strip_suffix("_bytes"), x.as_u64()) {
                    rows.push((join(label, stem), format_size(n)));
                } else {
                    walk(&join(label, k), x, rows);
                }
            }
        }
        Value::Array(a) if a.is_empty() => {}
        Value::Array(a) if a.iter().all(|x| !x.is_object() && !x.is_array()) => {
            let items: Vec<String> = a.iter().filter_map(scalar).collect();
            if !items.is_empty() {
                rows.push((label.to_string(), items.join(", ")));
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                walk(&format!("{label}[{i}]"), x, rows);
            }
        }
        x => {
            if let Some(s) = scalar(x) {
                rows.push((label.to_string(), s));
            }
        }
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Bool(b) => Some(if *b { "yes" } else { "no" }.into()),
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        other => Some(other.to_string()),
    }
}

/// `label` padded to `label_width`, then `text` wrapped at spaces so that
/// no line is longer than `width` characters (a word longer than the room
/// left is cut); continuation lines are indented under the text.
pub fn wrap(label: &str, text: &str, label_width: usize, width: usize) -> Vec<String> {
    let indent = label_width.max(label.chars().count() + 1);
    let room = width.saturating_sub(indent).max(16);
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut pieces: Vec<String> = Vec::new();
    for word in text.split(' ') {
        let mut w: Vec<char> = word.chars().collect();
        while w.len() > room {
            // Break after the last comma that fits, else cut.
            let at = w[..room]
                .iter()
                .rposition(|&c| c == ',')
                .map_or(room, |i| i + 1);
            pieces.push(w.drain(..at).collect());
        }
        pieces.push(w.into_iter().collect());
    }
    for p in pieces {
        let n = line.chars().count();
        if n > 0 && n + 1 + p.chars().count() > room {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&p);
    }
    lines.push(line);
    lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| {
            let head = if i == 0 { label } else { "" };
            format!("{head:<indent$}{l}")
        })
        .collect()
}

/// The width to fit text to: `COLUMNS` if set, else the terminal's width
/// when stdout is one, else 100 columns.
pub fn terminal_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n >= 40)
    {
        return n;
    }
    let mut ws = libc::winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCGWINSZ writes one `winsize` into the one passed, which
    // lives for the call; on a non-terminal it fails and writes nothing.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col >= 40 {
        usize::from(ws.ws_col)
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn facts_read_as_labelled_lines() {
        let v = json!({"device": {"disk": "vda", "size_bytes": 274877906944u64, "rotational": true,
                       "model": null, "slaves": []}, "gpus": [{"name": "H200"}], "simd": ["a", "b"]});
        let rows = flatten("disk", &v);
        assert!(rows.contains(&("disk.device.disk".into(), "vda".into())));
        assert!(
            rows.contains(&("disk.device.size".into(), "256GiB".into())),
            "{rows:?}"
        );
        assert!(rows.contains(&("disk.device.rotational".into(), "yes".into())));
        assert!(rows.contains(&("disk.gpus[0].name".into(), "H200".into())));
        assert!(rows.contains(&("disk.simd".into(), "a, b".into())));
        assert!(
            !rows
                .iter()
                .any(|(l, _)| l.contains("model") || l.contains("slaves"))
        );
    }

    #[test]
    fn wrapped_lines_fit_the_width() {
        let text = "word ".repeat(40) + &"x".repeat(120);
        for width in [40, 80, 100] {
            let lines = wrap("label", &text, 16, width);
            assert!(lines.len() > 1);
            assert!(
                lines.iter().all(|l| l.chars().count() <= width),
                "{lines:?}"
            );
            assert!(lines[0].starts_with("label           word"));
            assert!(lines[1].starts_with(&" ".repeat(16)));
        }
    }
}
