//! `--require EXPR` (docs/batch.md#--require): words separated by spaces, all
//! of which a card must meet.
//!
//! - a class mark (`A1`, `A2`, `C10`, `Class10`, `U3`, `V30`, …): the
//!   card's measured figures meet what the SD specification asks of that
//!   mark (the same table as the class verdict, without its margin);
//! - `genuine`: verify-capacity found the card genuine (so it needs `--verify`);
//! - `KEY>=N`, `KEY<=N`, `KEY>N`, `KEY<N`: a measured figure (a measurement
//!   key of the report, or `score`) compared with a number.
//!
//! A figure that was not measured fails its term: a requirement nobody
//! checked is not met.

use serde::{Deserialize, Serialize};

use crate::schema::{MEASUREMENT_KEYS, Measurements};
use crate::verdict::classes::ClassMark;

/// A comparison of a figure with a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    AtLeast,
    AtMost,
    Above,
    Below,
}

impl Op {
    fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Op::AtLeast => value >= bound,
            Op::AtMost => value <= bound,
            Op::Above => value > bound,
            Op::Below => value < bound,
        }
    }
}

/// One word of the expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    Mark(ClassMark),
    Genuine,
    Figure { key: String, op: Op, bound: f64 },
}

/// A parsed expression: its terms, each with the word it was written as.
#[derive(Debug, Clone, PartialEq)]
pub struct Require {
    pub terms: Vec<(String, Term)>,
}

/// A card's verdict on the expression.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RequireResult {
    pub pass: bool,
    /// The terms it failed, as written.
    pub failed: Vec<String>,
    /// Why each failed, in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
}

/// What a card offers to be judged on.
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    pub measurements: &'a Measurements,
    pub score: Option<u64>,
    /// `None` when the capacity was not verified.
    pub genuine: Option<bool>,
}

impl Require {
    /// Reads an expression; the error names the word it could not read
    /// and what would do instead.
    pub fn parse(text: &str) -> Result<Require, RequireError> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            terms.push((word.to_owned(), term(word)?));
        }
        if terms.is_empty() {
            return Err(RequireError::Empty { example: crate::figure::Figure::SeqRead.key() });
        }
        Ok(Require { terms })
    }

    /// Whether it needs verify-capacity's finding.
    pub fn needs_verify(&self) -> bool {
        self.terms.iter().any(|(_, t)| *t == Term::Genuine)
    }

    /// Judges a card.
    pub fn judge(&self, facts: &Facts<'_>) -> RequireResult {
        let mut result = RequireResult { pass: true, ..RequireResult::default() };
        for (word, term) in &self.terms {
            if let Some(why) = failure(term, facts) {
                result.pass = false;
                result.failed.push(word.clone());
                result.why.push(why);
            }
        }
        result
    }
}

fn term(word: &str) -> Result<Term, RequireError> {
    if word.eq_ignore_ascii_case("genuine") {
        return Ok(Term::Genuine);
    }
    for (sign, op) in [(">=", Op::AtLeast), ("<=", Op::AtMost), (">", Op::Above), ("<", Op::Below)] {
        if let Some((key, number)) = word.split_once(sign) {
            if key != "score" && !MEASUREMENT_KEYS.contains(&key) {
                return Err(RequireError::NoSuchFigure { word: word.to_owned() });
            }
            let bound = number
                .parse::<f64>()
                .ok()
                .filter(|b| b.is_finite())
                .ok_or_else(|| RequireError::NotANumber { word: word.to_owned(), number: number.to_owned() })?;
            return Ok(Term::Figure { key: key.to_owned(), op, bound });
        }
    }
    ClassMark::parse(word).map(Term::Mark).ok_or_else(|| RequireError::NotATerm { word: word.to_owned() })
}

/// Why an expression could not be read: the word, and what would do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequireError {
    #[error("--require is empty; give terms such as \"A1 genuine {example}>=20\"")]
    Empty { example: &'static str },
    #[error("--require: {word:?} names no figure; use one of {keys} or score", keys = MEASUREMENT_KEYS.join(", "))]
    NoSuchFigure { word: String },
    #[error("--require: {word:?} compares with {number:?}, which is not a number")]
    NotANumber { word: String, number: String },
    #[error(
        "--require: {word:?} is not a term; write a class mark (A1 A2 C10 U3 V30 …), genuine, or KEY>=N with a measurement key"
    )]
    NotATerm { word: String },
}

/// Why `term` fails, or `None` when it holds.
fn failure(term: &Term, facts: &Facts<'_>) -> Option<String> {
    let figure = |key: &str| {
        if key == "score" {
            facts.score.map(|s| s as f64)
        } else {
            facts.measurements.get(key).filter(|v| v.is_finite())
        }
    };
    match term {
        Term::Genuine => match facts.genuine {
            Some(true) => None,
            Some(false) => Some("verify-capacity found it fake".to_owned()),
            None => Some("its capacity was not verified (add --verify)".to_owned()),
        },
        Term::Figure { key, op, bound } => match figure(key) {
            Some(value) if op.holds(value, *bound) => None,
            Some(value) => Some(format!("{key} was {}", round(value))),
            None => Some(format!("{key} was not measured")),
        },
        Term::Mark(mark) => {
            let mut short = Vec::new();
            for r in mark.requirements() {
                // The A marks' sustained write falls back on dd's figure
                // when it was not measured, as the verdict judges it.
                let (r, measured) = r.judged_on(facts.measurements);
                match measured {
                    Some(v) if v >= r.required => {}
                    Some(v) => short.push(format!("{} was {} (needs {})", r.key, round(v), r.required)),
                    None => short.push(format!("{} was not measured", r.key)),
                }
            }
            (!short.is_empty()).then(|| format!("{mark}: {}", short.join(", ")))
        }
    }
}

fn round(v: f64) -> String {
    if v.abs() >= 100.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measurements(pairs: &[(&str, f64)]) -> Measurements {
        let mut m = Measurements::default();
        for (k, v) in pairs {
            assert!(m.set(k, *v));
        }
        m
    }

    #[test]
    fn the_documented_example_parses() {
        let r = Require::parse("A1 V30 rand_write_4k_qd64_iops>=500 seq_write_mb_s>=10 genuine").unwrap();
        assert_eq!(r.terms.len(), 5);
        assert_eq!(r.terms[0].1, Term::Mark(ClassMark::App(1)));
        assert_eq!(r.terms[1].1, Term::Mark(ClassMark::Video(30)));
        assert_eq!(r.terms[2].1, Term::Figure { key: "rand_write_4k_qd64_iops".into(), op: Op::AtLeast, bound: 500.0 });
        assert!(r.needs_verify());
        assert_eq!(Require::parse("C10 Class10 U3 score>100 seq_read_mib_s<5").unwrap().terms.len(), 5);
    }

    #[test]
    fn bad_words_are_named() {
        for (text, word) in [("A7", "A7"), ("speed>=5", "speed"), ("seq_read_mib_s>=fast", "fast"), ("", "empty")] {
            let e = Require::parse(text).unwrap_err().to_string();
            assert!(e.contains(word), "{e}");
        }
    }

    #[test]
    fn each_failed_term_is_named_with_the_figure() {
        let r = Require::parse("A1 seq_read_mib_s>=20 seq_write_mb_s>=10 genuine score>0").unwrap();
        let m = measurements(&[
            ("seq_read_mib_s", 12.5),
            ("rand_read_4k_qd64_iops", 2000.0),
            ("rand_write_4k_qd64_iops", 600.0),
            ("seq_write_mb_s", 11.0),
        ]);
        let result = r.judge(&Facts { measurements: &m, score: None, genuine: Some(true) });
        assert!(!result.pass);
        assert_eq!(result.failed, ["seq_read_mib_s>=20", "score>0"]);
        assert_eq!(result.why[0], "seq_read_mib_s was 12.50");
        assert_eq!(result.why[1], "score was not measured");
        let unverified = r.judge(&Facts { measurements: &m, score: Some(900), genuine: None });
        assert_eq!(unverified.failed, ["seq_read_mib_s>=20", "genuine"]);
    }

    #[test]
    fn a_mark_fails_on_a_short_or_missing_figure() {
        let r = Require::parse("A1").unwrap();
        let slow = measurements(&[("rand_read_4k_qd64_iops", 1000.0), ("seq_write_mb_s", 20.0)]);
        let result = r.judge(&Facts { measurements: &slow, score: None, genuine: None });
        assert_eq!(result.failed, ["A1"]);
        assert!(result.why[0].contains("rand_read_4k_qd64_iops was 1000") && result.why[0].contains("not measured"));
        let fast = measurements(&[
            ("rand_read_4k_qd64_iops", 1500.0),
            ("rand_write_4k_qd64_iops", 500.0),
            ("seq_write_mb_s", 10.0),
        ]);
        assert!(r.judge(&Facts { measurements: &fast, score: None, genuine: None }).pass);
        // A sustained write, when measured, is what A1's 10 MB/s is held to.
        let stalling = measurements(&[
            ("rand_read_4k_qd64_iops", 1500.0),
            ("rand_write_4k_qd64_iops", 500.0),
            ("seq_write_mb_s", 20.0),
            ("sustained_seq_write_mb_s", 6.0),
        ]);
        let result = r.judge(&Facts { measurements: &stalling, score: None, genuine: None });
        assert_eq!(result.why, ["A1: sustained_seq_write_mb_s was 6.00 (needs 10)"]);
    }

    #[test]
    fn bounds_are_strict_or_not_as_written() {
        let m = measurements(&[("seq_read_mib_s", 20.0)]);
        let facts = Facts { measurements: &m, score: None, genuine: None };
        assert!(Require::parse("seq_read_mib_s>=20").unwrap().judge(&facts).pass);
        assert!(!Require::parse("seq_read_mib_s>20").unwrap().judge(&facts).pass);
        assert!(Require::parse("seq_read_mib_s<=20").unwrap().judge(&facts).pass);
        assert!(!Require::parse("seq_read_mib_s<20").unwrap().judge(&facts).pass);
    }
}
