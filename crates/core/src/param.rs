//! Typed parameters: what a benchmark accepts and the values of one sweep point.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::units::{format_size, parse_size};

/// The value of one parameter at one sweep point.
///
/// In JSON a value is a plain number, string or boolean (untagged).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Value {
    /// A boolean (`on`/`off`).
    Bool(bool),
    /// A count or a size in bytes.
    Int(u64),
    /// A real number.
    Float(f64),
    /// One of a fixed set of choices, or free text.
    Str(String),
}

impl Value {
    /// The integer, if this is one.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The boolean, if this is one.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number as a float, for ints and floats.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(v) => Some(*v as f64),
            Value::Float(v) => Some(*v),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(true) => f.write_str("on"),
            Value::Bool(false) => f.write_str("off"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}

/// The type and bounds of a parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamKind {
    /// A whole number (threads, iterations, arguments) within `min..=max`.
    Count {
        /// Smallest accepted value.
        min: u64,
        /// Largest accepted value.
        max: u64,
    },
    /// A size in bytes within `min..=max`; accepts `4K`, `1MiB`, ...
    Size {
        /// Smallest accepted size.
        min: u64,
        /// Largest accepted size.
        max: u64,
    },
    /// One of a fixed list of names. The list stays `'static` (a
    /// [`Choice`] enum's [`Choice::NAMES`], or a literal slice) even where
    /// the parameter's name and help are made at run time: the choices
    /// are a benchmark's code paths, which are known when it is compiled.
    Choice(&'static [&'static str]),
    /// `on|off` (also `true|false`, `yes|no`, `1|0`).
    Bool,
    /// Free text (a path, a bit rate, `every:100`); the benchmark checks it
    /// in [`crate::Benchmark::validate`]. `hint` describes what is accepted.
    Text {
        /// What the text may be, for `benchsuite list` (`PATH`, `max|RATE`);
        /// `'static`, like a choice list: it describes what the code accepts.
        hint: &'static str,
    },
    /// An offered load in operations per second, or `off` (closed loop:
    /// the next operation starts when one completes) or `auto` (a ladder
    /// of rates up to saturation, see [`crate::capacity`]). Numbers take
    /// SI suffixes (`50k`, `1.5M`); ranges may multiply by a fraction
    /// (`1k..200k:x1.5`).
    Rate {
        /// Largest accepted rate.
        max: u64,
    },
}

/// What `rate=off` stores: closed loop.
pub const RATE_OFF: &str = "off";
/// What `rate=auto` stores: a ladder up to saturation.
pub const RATE_AUTO: &str = "auto";

/// Parses a rate in operations per second: a number with an optional SI
/// suffix (`k`, `M`, `G`) and an optional `/s` (`2500`, `50k`, `1.5M/s`),
/// rounded to a whole number.
pub fn parse_rate(text: &str) -> Result<f64, crate::error::ValueError> {
    parse_rate_text(text).map_err(Into::into)
}

fn parse_rate_text(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let (digits, mult) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'M')) => (&t[..i], 1e6),
        Some((i, 'G')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    let v: f64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a rate (operations per second: 2500, 50k, 1.5M)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!(
            "`{text}` is not a rate (operations per second: 2500, 50k, 1.5M)"
        ));
    }
    Ok((v * mult).round())
}

impl ParamKind {
    /// Parses one scalar value (no lists or ranges) and checks its bounds.
    pub fn parse(&self, param: &str, text: &str) -> Result<Value, ConfigError> {
        let bad = |reason: String| ConfigError::InvalidValue {
            param: param.to_string(),
            value: text.to_string(),
            reason,
        };
        let t = text.trim();
        match self {
            ParamKind::Count { min, max } => {
                let v: u64 = t
                    .parse()
                    .map_err(|_| bad("expected a whole number".into()))?;
                if v < *min || v > *max {
                    return Err(bad(if *max == u64::MAX {
                        format!("must be at least {min}")
                    } else {
                        format!("must be between {min} and {max}")
                    }));
                }
                Ok(Value::Int(v))
            }
            ParamKind::Size { min, max } => {
                let v = parse_size(t).map_err(|e| bad(e.into()))?;
                if v < *min || v > *max {
                    return Err(bad(if *max == u64::MAX {
                        format!("must be at least {}", format_size(*min))
                    } else {
                        format!(
                            "must be between {} and {}",
                            format_size(*min),
                            format_size(*max)
                        )
                    }));
                }
                Ok(Value::Int(v))
            }
            ParamKind::Choice(names) => {
                if names.contains(&t) {
                    Ok(Value::Str(t.to_string()))
                } else {
                    Err(bad(format!("expected one of {}", names.join(", "))))
                }
            }
            ParamKind::Bool => match t.to_ascii_lowercase().as_str() {
                "on" | "true" | "yes" | "1" => Ok(Value::Bool(true)),
                "off" | "false" | "no" | "0" => Ok(Value::Bool(false)),
                _ => Err(bad("expected on or off".into())),
            },
            ParamKind::Text { .. } => {
                if t.is_empty() {
                    Err(bad("empty value".into()))
                } else {
                    Ok(Value::Str(t.to_string()))
                }
            }
            ParamKind::Rate { max } => match t {
                RATE_OFF | RATE_AUTO => Ok(Value::Str(t.to_string())),
                _ => {
                    let v = parse_rate(t).map_err(|e| bad(e.into()))?;
                    if v < 1.0 {
                        return Err(bad(format!(
                            "must be at least 1 operation per second (rate={RATE_OFF} is the closed loop, rate={RATE_AUTO} a ladder up to saturation)"
                        )));
                    }
                    if v > *max as f64 {
                        return Err(bad(format!("must be at most {max} per second")));
                    }
                    Ok(Value::Int(v as u64))
                }
            },
        }
    }

    /// Checks that an already-typed value fits this kind and its bounds.
    pub fn check(&self, param: &str, value: &Value) -> Result<(), ConfigError> {
        let ok = match (self, value) {
            (ParamKind::Count { min, max }, Value::Int(v))
            | (ParamKind::Size { min, max }, Value::Int(v)) => v >= min && v <= max,
            (ParamKind::Choice(names), Value::Str(s)) => names.contains(&s.as_str()),
            (ParamKind::Bool, Value::Bool(_)) => true,
            (ParamKind::Text { .. }, Value::Str(_)) => true,
            (ParamKind::Rate { max }, Value::Int(v)) => *v >= 1 && v <= max,
            (ParamKind::Rate { .. }, Value::Str(s)) => s == RATE_OFF || s == RATE_AUTO,
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(ConfigError::InvalidValue {
                param: param.to_string(),
                value: value.to_string(),
                reason: format!("does not fit {}", self.describe()),
            })
        }
    }

    /// A short human description (`1..128`, `512B..100MiB`, `read|write`).
    pub fn describe(&self) -> String {
        match self {
            ParamKind::Count { min, max } => format!("{min}..{max}"),
            ParamKind::Size { min, max } => format!("{}..{}", format_size(*min), format_size(*max)),
            ParamKind::Choice(names) => names.join("|"),
            ParamKind::Bool => "on|off".into(),
            ParamKind::Text { hint } => hint.to_string(),
            ParamKind::Rate { .. } => {
                format!("{RATE_OFF}|{RATE_AUTO}|N/s (50k, 1.5M)")
            }
        }
    }

    /// Formats a value of this kind the way a user would type it.
    pub fn display(&self, value: &Value) -> String {
        match (self, value) {
            (ParamKind::Size { .. }, Value::Int(v)) => format_size(*v),
            _ => value.to_string(),
        }
    }
}

/// A choice parameter's enum: one table of `(name, variant)` pairs, so the
/// names `benchsuite list` shows and the variants `prepare` matches on
/// cannot drift apart. Declare one with [`crate::choice_enum!`]; declare the
/// parameter with [`ParamSpec::choice_of`], read it with [`Point::choice`].
pub trait Choice: Copy + PartialEq + 'static {
    /// The names, in the order they are listed (and swept by conformance).
    const NAMES: &'static [&'static str];
    /// The variants, in the same order as [`Choice::NAMES`].
    const ALL: &'static [Self];

    /// This variant's name.
    fn name(self) -> &'static str {
        let i = Self::ALL.iter().position(|c| *c == self).unwrap_or(0);
        Self::NAMES[i]
    }

    /// The variant called `name`.
    fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| Self::ALL[i])
    }
}

/// Declares a [`Choice`] enum from one table of variants and names:
///
/// ```
/// benchsuite_core::choice_enum! {
///     /// What each I/O does.
///     pub enum Op {
///         /// Sequential reads.
///         Read = "read",
///         /// Random reads.
///         RandRead = "randread",
///     }
/// }
/// use benchsuite_core::Choice;
/// assert_eq!(Op::RandRead.name(), "randread");
/// assert_eq!(Op::from_name("read"), Some(Op::Read));
/// assert_eq!(Op::NAMES, &["read", "randread"]);
/// ```
///
/// The enum derives `Debug, Clone, Copy, PartialEq, Eq` and displays as
/// its name.
#[macro_export]
macro_rules! choice_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $crate::param::Choice for $name {
            const NAMES: &'static [&'static str] = &[$($text),+];
            const ALL: &'static [Self] = &[$($name::$variant),+];
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str($crate::param::Choice::name(*self))
            }
        }
    };
}

/// The declaration of one parameter a benchmark accepts.
#[derive(Debug, Clone)]
pub struct ParamSpec {
    /// Name used on the command line (`--param name=...`) and in results;
    /// borrowed for a literal, owned for a name made at run time.
    pub name: Cow<'static, str>,
    /// One-line description.
    pub help: Cow<'static, str>,
    /// Type and bounds.
    pub kind: ParamKind,
    /// Value used when the user gives none.
    pub default: Value,
    /// Small value used by conformance tests and `--quick`; `None` means the
    /// default is already small.
    pub smoke: Option<Value>,
    /// A named multiple a count also accepts (`sm`, `2sm`, `1..2sm`);
    /// `None` for plain numbers only.
    pub unit: Option<CountUnit>,
}

/// A machine-dependent quantity a count parameter may be written in: `sm`
/// for the SM count of a GPU, so a sweep `1..sm:x2,sm,2sm` has its knee on
/// every device. Resolved once, when the sweep is expanded.
#[derive(Debug, Clone, Copy)]
pub struct CountUnit {
    /// What the user writes after an optional whole-number multiple: `sm`.
    pub suffix: &'static str,
    /// What it stands for, for messages: `the SM count of CUDA device 0`.
    pub meaning: &'static str,
    /// Its value here, or why it is unknown.
    pub resolve: fn() -> Result<u64, crate::error::ValueError>,
}

impl ParamSpec {
    /// A count parameter.
    pub fn count(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        min: u64,
        max: u64,
        default: u64,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Count { min, max },
            default: Value::Int(default),
            smoke: None,
            unit: None,
        }
    }

    /// A size parameter (bytes).
    pub fn size(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        min: u64,
        max: u64,
        default: u64,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Size { min, max },
            default: Value::Int(default),
            smoke: None,
            unit: None,
        }
    }

    /// A choice parameter; `default` must be one of `choices`.
    pub fn choice(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        choices: &'static [&'static str],
        default: &'static str,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Choice(choices),
            default: Value::Str(default.to_string()),
            smoke: None,
            unit: None,
        }
    }

    /// A choice parameter over a [`Choice`] enum.
    pub fn choice_of<C: Choice>(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        default: C,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Choice(C::NAMES),
            default: Value::Str(default.name().to_string()),
            smoke: None,
            unit: None,
        }
    }

    /// A free-text parameter, checked by the benchmark's `validate`.
    pub fn text(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        hint: &'static str,
        default: &str,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Text { hint },
            default: Value::Str(default.to_string()),
            smoke: None,
            unit: None,
        }
    }

    /// The offered-load parameter `rate` (see [`ParamKind::Rate`]):
    /// default `off`, today's closed loop.
    pub fn rate(name: impl Into<Cow<'static, str>>, help: impl Into<Cow<'static, str>>) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Rate { max: 1_000_000_000 },
            default: Value::Str(RATE_OFF.to_string()),
            smoke: None,
            unit: None,
        }
    }

    /// A boolean parameter.
    pub fn flag(
        name: impl Into<Cow<'static, str>>,
        help: impl Into<Cow<'static, str>>,
        default: bool,
    ) -> Self {
        ParamSpec {
            name: name.into(),
            help: help.into(),
            kind: ParamKind::Bool,
            default: Value::Bool(default),
            smoke: None,
            unit: None,
        }
    }

    /// Sets the smoke value (used by tests and `--quick`).
    pub fn with_smoke(mut self, smoke: Value) -> Self {
        self.smoke = Some(smoke);
        self
    }

    /// Lets a count be written as a multiple of `unit` (`sm`, `2sm`).
    pub fn with_unit(mut self, unit: CountUnit) -> Self {
        debug_assert!(matches!(self.kind, ParamKind::Count { .. }));
        self.unit = Some(unit);
        self
    }

    /// Parses one scalar value like [`ParamKind::parse`], first resolving
    /// a multiple of this parameter's unit (`2sm` → 264 on a 132-SM GPU).
    pub fn parse_scalar(&self, text: &str) -> Result<Value, ConfigError> {
        let t = text.trim();
        let Some(unit) = self.unit else {
            return self.kind.parse(&self.name, t);
        };
        let Some(times) = t.strip_suffix(unit.suffix) else {
            return self.kind.parse(&self.name, t);
        };
        let bad = |reason: String| ConfigError::InvalidValue {
            param: self.name.to_string(),
            value: t.to_string(),
            reason,
        };
        let times: u64 = match times.trim() {
            "" => 1,
            n => n.parse().map_err(|_| {
                bad(format!(
                    "expected a whole number or a multiple of `{}` ({}), such as `2{}`",
                    unit.suffix, unit.meaning, unit.suffix
                ))
            })?,
        };
        let each = (unit.resolve)().map_err(|why| {
            bad(format!(
                "`{}` is {}, which is unknown here: {why}",
                unit.suffix, unit.meaning
            ))
        })?;
        let v = times
            .checked_mul(each)
            .ok_or_else(|| bad("too large".into()))?;
        self.kind.parse(&self.name, &v.to_string())
    }

    /// The smoke value, or the default when none is set.
    pub fn smoke_value(&self) -> &Value {
        self.smoke.as_ref().unwrap_or(&self.default)
    }
}

/// The parameter values of one sweep point, ordered by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Point(pub BTreeMap<String, Value>);

impl Point {
    /// The value of a parameter. Panics are avoided: a missing parameter is
    /// `None` (the runner fills every declared parameter, so benchmarks may
    /// treat `None` as a programming error and return a `BenchError`).
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// An integer parameter (count or size), or a [`crate::BenchError`] naming it.
    pub fn u64(&self, name: &str) -> Result<u64, crate::BenchError> {
        self.get(name).and_then(Value::as_u64).ok_or_else(|| {
            crate::BenchError::Other(format!("parameter `{name}` missing or not an integer"))
        })
    }

    /// A choice or string parameter, or a [`crate::BenchError`] naming it.
    pub fn str(&self, name: &str) -> Result<&str, crate::BenchError> {
        self.get(name).and_then(Value::as_str).ok_or_else(|| {
            crate::BenchError::Other(format!("parameter `{name}` missing or not a string"))
        })
    }

    /// A choice parameter as its enum, or a [`crate::BenchError`] naming it.
    pub fn choice<C: Choice>(&self, name: &str) -> Result<C, crate::BenchError> {
        let s = self.str(name)?;
        C::from_name(s).ok_or_else(|| {
            crate::BenchError::Other(format!(
                "parameter `{name}`: `{s}` is not one of {}",
                C::NAMES.join(", ")
            ))
        })
    }

    /// A boolean parameter, or a [`crate::BenchError`] naming it.
    pub fn bool(&self, name: &str) -> Result<bool, crate::BenchError> {
        self.get(name).and_then(Value::as_bool).ok_or_else(|| {
            crate::BenchError::Other(format!("parameter `{name}` missing or not on/off"))
        })
    }

    /// Sets a value.
    pub fn set(&mut self, name: &str, value: Value) {
        self.0.insert(name.to_string(), value);
    }

    /// `name=value` pairs, as a user would type them.
    pub fn label(&self) -> String {
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_and_bound() {
        let k = ParamKind::Count { min: 1, max: 128 };
        assert_eq!(k.parse("threads", "8").unwrap(), Value::Int(8));
        let e = k.parse("threads", "0").unwrap_err().to_string();
        assert!(
            e.contains("threads") && e.contains("between 1 and 128"),
            "{e}"
        );
        let s = ParamKind::Size {
            min: 1,
            max: 1 << 30,
        };
        assert_eq!(s.parse("block", "1MB").unwrap(), Value::Int(1 << 20));
        let e = s.parse("block", "1XB").unwrap_err().to_string();
        assert!(e.contains("block") && e.contains("1XB"), "{e}");
        let c = ParamKind::Choice(&["read", "write"]);
        assert!(
            c.parse("op", "copy")
                .unwrap_err()
                .to_string()
                .contains("read, write")
        );
        assert_eq!(
            ParamKind::Bool.parse("nt", "on").unwrap(),
            Value::Bool(true)
        );
    }

    #[test]
    fn values_serialize_untagged() {
        let mut p = Point::default();
        p.set("block", Value::Int(4096));
        p.set("op", Value::Str("read".into()));
        p.set("nt", Value::Bool(false));
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(j, r#"{"block":4096,"nt":false,"op":"read"}"#);
        let back: Point = serde_json::from_str(&j).unwrap();
        assert_eq!(back, p);
    }
}
