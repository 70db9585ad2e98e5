//! Typed caveats: what makes a record's number mean less than it seems.
//!
//! A [`Caveat`] is data for machines (`{"kind": "noisy", "metric":
//! "bandwidth", "cv": 0.14, "n": 5, "message": "..."}` in JSON) and a
//! sentence for people ([`fmt::Display`], also stored as `message` so a
//! reader that does not know a kind can still show it). The runner merges
//! rounds by kind, never by matching text.
//!
//! Reports before schema 1.4 stored caveats as plain strings; they read as
//! [`Caveat::Text`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One caveat attached to a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Caveat {
    /// A metric's samples spread more than [`crate::runner::NOISY_CV`].
    Noisy {
        /// Metric name.
        metric: String,
        /// Coefficient of variation of its samples (0.14 = 14%).
        cv: f64,
        /// Number of samples.
        n: usize,
    },
    /// A metric's median is above its theoretical peak.
    OverPeak {
        /// Metric name.
        metric: String,
        /// Median / peak (1.07 = 107%).
        efficiency: f64,
    },
    /// A metric's rounds sat in two machine states (a VM's loopback at 1.7
    /// or 2.9 GB/s for minutes at a time): the pooled median depends on
    /// how many rounds each state got.
    States {
        /// Metric name.
        metric: String,
        /// The median of the lower state, in the metric's unit.
        low: f64,
        /// The median of the upper state.
        high: f64,
        /// The metric's unit.
        unit: String,
        /// How many rounds sat in the lower state.
        low_rounds: usize,
        /// Rounds in all.
        rounds: usize,
    },
    /// The hypervisor stole CPU time while the record ran.
    Steal {
        /// Fraction of CPU time stolen (0.08 = 8%).
        fraction: f64,
    },
    /// Built without optimisations.
    DebugBuild,
    /// I/O went through the page cache.
    PageCache {
        /// Why (`direct=off`, `O_DIRECT refused`).
        why: String,
    },
    /// Two records measured the same thing once `auto` values resolved.
    SameParams {
        /// 1-based index of the earlier record in the report.
        record: usize,
    },
    /// Ctrl-C cut a time series short.
    Interrupted {
        /// Seconds measured before the interrupt.
        after_s: f64,
    },
    /// An open-loop point whose achieved rate fell more than
    /// [`crate::openloop::SATURATION_TOLERANCE`] short of the offered one.
    Saturated {
        /// Operations per second asked for.
        offered: f64,
        /// Operations per second completed.
        achieved: f64,
    },
    /// A module-specific caveat, or one read from a report older than 1.4.
    Text {
        /// The sentence.
        text: String,
    },
}

impl Caveat {
    /// A module-specific caveat.
    pub fn text(text: impl Into<String>) -> Self {
        Caveat::Text { text: text.into() }
    }

    /// Whether the caveat is about the record's samples (noise, efficiency)
    /// and so must be recomputed when rounds are pooled.
    pub fn is_about_samples(&self) -> bool {
        matches!(
            self,
            Caveat::Noisy { .. }
                | Caveat::OverPeak { .. }
                | Caveat::States { .. }
                | Caveat::Saturated { .. }
        )
    }
}

impl fmt::Display for Caveat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caveat::Noisy { metric, cv, n } => write!(
                f,
                "{metric} is noisy: CV {:.1}% over {n} samples; consider more `RunConfig::runs` or a quieter machine",
                cv * 100.0
            ),
            Caveat::OverPeak { metric, efficiency } => write!(
                f,
                "measured {metric} is {:.1}% of the theoretical peak: above 100% means a bug or a cache effect, not a faster machine",
                efficiency * 100.0
            ),
            Caveat::States {
                metric,
                low,
                high,
                unit,
                low_rounds,
                rounds,
            } => write!(
                f,
                "{metric}: two states, {} and {} ({low_rounds} of {rounds} rounds in the lower): the machine switched between them (a state that lasts minutes); the median depends on the mix, so compare against a history that holds both",
                crate::units::format_value(*low, unit),
                crate::units::format_value(*high, unit),
            ),
            Caveat::Steal { fraction } => write!(
                f,
                "the hypervisor stole {:.1}% of CPU time while this record ran: other guests were competing for the host, expect run-to-run variation",
                fraction * 100.0
            ),
            Caveat::DebugBuild => f.write_str(
                "debug build: numbers are not representative; install with `cargo install --path cli`",
            ),
            Caveat::PageCache { why } => write!(
                f,
                "{why}: I/O goes through the page cache, so these numbers mix cache hits and deferred writeback with device work; use direct=on to measure the device"
            ),
            Caveat::SameParams { record } => write!(
                f,
                "same parameters as record {record} of this report once `auto` values were resolved: both measured the same thing"
            ),
            Caveat::Interrupted { after_s } => {
                write!(f, "interrupted: time series cut short after {after_s:.1} s")
            }
            Caveat::Saturated { offered, achieved } => write!(
                f,
                "saturated: offered {} but carried {} ({:.1}% short): the system did not keep up with this rate, so the latencies describe a queue that grew throughout the run, not a load it sustains",
                crate::units::format_value(*offered, "/s"),
                crate::units::format_value(*achieved, "/s"),
                (1.0 - achieved / offered) * 100.0
            ),
            Caveat::Text { text } => f.write_str(text),
        }
    }
}

impl From<String> for Caveat {
    fn from(text: String) -> Self {
        Caveat::Text { text }
    }
}

impl From<&str> for Caveat {
    fn from(text: &str) -> Self {
        Caveat::text(text)
    }
}

/// The JSON form: the tagged fields plus the sentence.
#[derive(Serialize)]
struct WireOut<'a> {
    #[serde(flatten)]
    caveat: &'a Caveat,
    message: String,
}

/// What a reader accepts: a typed caveat, a 1.0–1.3 string, or a kind
/// from a newer minor version that this build does not know (kept as text).
#[derive(Deserialize)]
#[serde(untagged)]
enum WireIn {
    Typed(Caveat),
    Old(String),
    Unknown { message: String },
}

/// (De)serialises a record's caveats; see the module docs.
pub(crate) mod wire {
    use super::*;

    pub fn serialize<S: Serializer>(v: &[Caveat], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|c| WireOut {
            caveat: c,
            message: c.to_string(),
        }))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Caveat>, D::Error> {
        let v: Vec<WireIn> = Vec::deserialize(d)?;
        Ok(v.into_iter()
            .map(|w| match w {
                WireIn::Typed(c) => c,
                WireIn::Old(text) | WireIn::Unknown { message: text } => Caveat::Text { text },
            })
            .collect())
    }
}

/// The JSON Schema of one caveat as a reader accepts it (documentation
/// only): the kind's fields and the sentence, or a plain string (reports
/// before 1.4).
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum CaveatJson {
    /// Schema 1.4 and later.
    Typed(TypedJson),
    /// Before 1.4.
    Old(String),
}

/// A typed caveat as written.
#[derive(JsonSchema)]
#[allow(dead_code)]
pub(crate) struct TypedJson {
    #[serde(flatten)]
    caveat: Caveat,
    /// The caveat as a sentence.
    message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct R {
        #[serde(with = "wire")]
        w: Vec<Caveat>,
    }

    #[test]
    fn json_is_tagged_with_the_sentence_and_reads_back() {
        let r = R {
            w: vec![
                Caveat::Noisy {
                    metric: "bandwidth".into(),
                    cv: 0.14,
                    n: 5,
                },
                Caveat::DebugBuild,
                Caveat::text("f16 is emulated"),
            ],
        };
        let j = serde_json::to_value(&r).unwrap();
        assert_eq!(j["w"][0]["kind"], "noisy");
        assert_eq!(j["w"][0]["cv"], 0.14);
        assert_eq!(
            j["w"][0]["message"],
            "bandwidth is noisy: CV 14.0% over 5 samples; consider more `RunConfig::runs` or a quieter machine"
        );
        assert_eq!(j["w"][1]["kind"], "debug_build");
        assert_eq!(j["w"][2]["text"], "f16 is emulated");
        let back: R = serde_json::from_value(j).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn old_strings_and_unknown_kinds_read_as_text() {
        let back: R = serde_json::from_str(
            r#"{"w": ["vDSO, not a real syscall", {"kind": "from_the_future", "x": 1, "message": "new"}]}"#,
        )
        .unwrap();
        assert_eq!(
            back.w,
            [
                Caveat::text("vDSO, not a real syscall"),
                Caveat::text("new")
            ]
        );
    }
}
