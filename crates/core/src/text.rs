//! Text from outside benchsuite (a peer's reply, a foreign report, a
//! tool's output, an OS or parser error that quotes them) made fit to
//! show on a terminal or in a file: nothing in it can steer the terminal
//! (escape sequences, C1 controls) or reorder what a line shows (bidi
//! overrides). Every exporter and every message that carries such text
//! goes through [`is_unsafe`]: the table and CSV show `?`, messages
//! escape ([`printable`], [`printable_line`]), Markdown escapes its markup
//! too, JSON escapes by its own rules.

use std::borrow::Cow;

/// Whether `c` would steer a terminal or hide or reorder what a line
/// shows: the C0 controls other than line feed and tab, DEL, the C1
/// controls (U+0080–U+009F: U+009B is an 8-bit CSI to some terminals),
/// zero-width characters and marks (U+200B–U+200F), and the bidirectional
/// embeddings, overrides (U+202A–U+202E) and isolates (U+2066–U+2069).
pub fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with each [`is_unsafe`] character escaped as Rust writes it
/// (`\u{1b}`, `\r`, `\u{202e}`); line feeds and tabs kept (an error's
/// cause chain has lines). Borrowed when nothing needs escaping.
pub fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, is_unsafe)
}

/// [`printable`] for one line: line feeds and tabs escaped too (`\n`).
pub fn printable_line(text: &str) -> Cow<'_, str> {
    escaped(text, |c| c == '\n' || c == '\t' || is_unsafe(c))
}

fn escaped(text: &str, bad: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if bad(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hostile string: an OSC title sequence ending in BEL, an 8-bit
    /// CSI, a right-to-left override, a carriage return.
    const HOSTILE: &str = "a\x1b]0;X\x07b\u{9b}2Jc\u{202e}d\u{2066}e\rf\x7fg";

    #[test]
    fn every_control_and_direction_change_is_escaped() {
        let p = printable(HOSTILE);
        assert!(!p.chars().any(is_unsafe), "{p:?}");
        assert_eq!(
            p,
            "a\\u{1b}]0;X\\u{7}b\\u{9b}2Jc\\u{202e}d\\u{2066}e\\rf\\u{7f}g"
        );
        assert_eq!(printable("line 1\n\tline 2"), "line 1\n\tline 2");
        assert_eq!(printable_line("line 1\n\tline 2"), "line 1\\n\\tline 2");
        assert!(matches!(printable("plain ünïcode ✓"), Cow::Borrowed(_)));
        for c in ['\u{80}', '\u{9f}', '\u{200b}', '\u{202a}', '\u{2069}', '\0'] {
            assert!(is_unsafe(c), "{c:?}");
        }
        for c in ['\n', '\t', ' ', 'é', '\u{a0}', '\u{2070}'] {
            assert!(!is_unsafe(c), "{c:?}");
        }
    }
}
