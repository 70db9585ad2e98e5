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

/// Library text names a setting by its type and field, in backticks
/// (`` `RunConfig::runs` ``, `` `CompareOptions::threshold` ``), never by a
/// command line's flag; the type makes it unlike any other quoted name
/// (serde's `` missing field `runs` `` stays as it is). A program
/// that shows such text to its users rewrites each name it knows into its
/// own word for it (the CLI: `` `runs` `` → `--runs`); names `name` does
/// not know, and other backticked text, stay as they are.
pub fn rename_settings<'a>(
    text: &'a str,
    name: &dyn Fn(&str) -> Option<&'static str>,
) -> Cow<'a, str> {
    let mut out = String::new();
    let mut rest = text;
    let mut changed = false;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let inner = &after[..close];
        let is_name = !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.:".contains(&b));
        match name(inner).filter(|_| is_name) {
            Some(word) => {
                out.push_str(&rest[..open]);
                out.push_str(word);
                rest = &after[close + 1..];
                changed = true;
            }
            None => {
                // Not a setting: keep it, and look on after its closing
                // backtick (which may open the next one).
                out.push_str(&rest[..open + 1 + close]);
                rest = &after[close..];
            }
        }
    }
    if !changed {
        return Cow::Borrowed(text);
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// JSON text whose strings hold no character [`is_unsafe`] calls unsafe:
/// serde_json escapes the C0 controls, quotes and backslashes only, so a
/// C1 control (U+009B is an 8-bit CSI to some terminals), DEL, a bidi
/// override or a zero-width mark would reach a terminal that shows the
/// file raw; here each is written `\uXXXX`, which every JSON reader reads
/// back as the same character. Pretty (two-space indent) like
/// `serde_json::to_string_pretty`.
pub fn to_json_pretty<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(1024);
    write_json_pretty(&mut out, value)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// [`to_json_pretty`] into a writer.
pub fn write_json_pretty<W: std::io::Write, T: serde::Serialize + ?Sized>(
    out: W,
    value: &T,
) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(
        out,
        SafeFormatter(serde_json::ser::PrettyFormatter::new()),
    );
    value.serialize(&mut ser)
}

/// [`to_json_pretty`] without the whitespace (`serde_json::to_string`).
pub fn to_json_compact<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(1024);
    let mut ser = serde_json::Serializer::with_formatter(
        &mut out,
        SafeFormatter(serde_json::ser::CompactFormatter),
    );
    value.serialize(&mut ser)?;
    Ok(String::from_utf8(out).expect("serde_json writes UTF-8"))
}

/// A serde_json formatter that escapes [`is_unsafe`] characters in
/// strings and leaves the rest to the one it wraps.
struct SafeFormatter<F>(F);

macro_rules! delegate {
    ($($name:ident($($arg:ident: $ty:ty),*));* $(;)?) => {
        $(
            fn $name<W: ?Sized + std::io::Write>(&mut self, w: &mut W $(, $arg: $ty)*) -> std::io::Result<()> {
                self.0.$name(w $(, $arg)*)
            }
        )*
    };
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for SafeFormatter<F> {
    delegate! {
        begin_array();
        end_array();
        begin_array_value(first: bool);
        end_array_value();
        begin_object();
        end_object();
        begin_object_key(first: bool);
        end_object_key();
        begin_object_value();
        end_object_value();
    }

    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        let mut start = 0;
        for (i, c) in fragment.char_indices() {
            if is_unsafe(c) {
                w.write_all(&fragment.as_bytes()[start..i])?;
                write!(w, "\\u{:04x}", c as u32)?;
                start = i + c.len_utf8();
            }
        }
        w.write_all(&fragment.as_bytes()[start..])
    }
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

    #[test]
    fn json_escapes_what_would_steer_a_terminal_and_reads_back_the_same() {
        let text = "a\u{1b}]0;X\u{7}\u{9b}2J\u{202e}evil\u{200b}\u{7f} é ✓";
        let v = serde_json::json!({ "k": [text] });
        for json in [to_json_pretty(&v).unwrap(), to_json_compact(&v).unwrap()] {
            assert!(!json.chars().any(is_unsafe), "{json:?}");
            assert!(
                json.contains("\\u009b2J\\u202eevil\\u200b\\u007f é ✓"),
                "{json}"
            );
            let back: serde_json::Value = serde_json::from_str(&json).unwrap();
            assert_eq!(back, v);
        }
        assert_eq!(
            to_json_pretty(&v).unwrap().lines().count(),
            serde_json::to_string_pretty(&v).unwrap().lines().count()
        );
    }
    #[test]
    fn settings_are_renamed_and_nothing_else() {
        let name = |f: &str| match f {
            "RunConfig::runs" => Some("--runs"),
            "RunConfig::min_sample_time" => Some("--min-sample-time"),
            _ => None,
        };
        assert_eq!(
            rename_settings(
                "consider more `RunConfig::runs`; `rate` stays, `RunConfig::min_sample_time` too; missing field `runs`",
                &name
            ),
            "consider more --runs; `rate` stays, --min-sample-time too; missing field `runs`"
        );
        assert_eq!(
            rename_settings("`a``RunConfig::runs` and `", &name),
            "`a`--runs and `"
        );
        assert_eq!(rename_settings("`runs x` `RUNS`", &name), "`runs x` `RUNS`");
        assert!(matches!(rename_settings("plain", &name), Cow::Borrowed(_)));
    }
}
