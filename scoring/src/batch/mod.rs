//! The batch report (`"schema": "storage-score-batch/1"`, docs/batch.md):
//! one entry per card that `batch` or `station` tested, and a summary of the
//! batch. The shape is here, beside the single-card report's, so that any
//! reader of reports (`compare`) needs only this crate; `require.rs` is the
//! `--require` expression and `summary.rs` the statistics, both pure.

pub mod require;
pub mod summary;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::schema::{Device, MEASUREMENT_KEYS, Measurements, Report, Samples, Score};

pub use require::{Require, RequireError, RequireResult};
pub use summary::{Summary, summarize};

/// The schema word of a batch report.
pub const SCHEMA: &str = "storage-score-batch/1";

/// The whole batch report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BatchReport {
    pub schema: String,
    /// When the batch started, RFC 3339 in UTC.
    pub created: String,
    pub tool_version: String,
    /// The run profile each card ran: `quick`, `compat` or `none`.
    pub profile: String,
    /// Whether each card's capacity was verified first.
    pub verify: bool,
    /// The `--require` expression, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<String>,
    pub cards: Vec<Card>,
    pub summary: Summary,
}

/// What became of one card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Measured, genuine where verified, and meets `--require`.
    #[default]
    Pass,
    /// Fails `--require`.
    Fail,
    /// verify-capacity found it holds less than it claims.
    Fake,
    /// Not touched: mounted, holding `/`, or in use.
    Refused,
    /// A step failed (the card was pulled out, an I/O error).
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "fail",
            Status::Fake => "fake",
            Status::Refused => "refused",
            Status::Error => "error",
        }
    }

    /// The one word a person at the reader reads: PASS or FAIL.
    pub fn shout(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fake => "FAKE",
            Status::Refused => "REFUSED",
            Status::Fail | Status::Error => "FAIL",
        }
    }
}

/// One card of the batch.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Card {
    /// The device as named (`/dev/sdb`).
    pub target: String,
    /// `station`'s number for the card, from 1 in the order they went in:
    /// what matches a result to the card in the hand, when every card sat
    /// in the same reader and so has the same `target`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<u32>,
    /// What the person at the station typed for it (`station --ask-label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub status: Status,
    /// Why it is not a pass, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The USB port path of the reader it sat in (`1-1.3`), where sysfs gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<String>,
    /// Its identity (serials as salted hashes unless `--include-serials`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    /// The verify-capacity finding, with `--verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Capacity>,
    /// The measured figures by measurement key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub figures: BTreeMap<String, f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Score>,
    /// The verdict on `--require`, when one was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<RequireResult>,
    /// Seconds the card took, all steps.
    #[serde(default)]
    pub seconds: f64,
}

/// verify-capacity's finding, in short (docs/verify-capacity.md has the whole).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Capacity {
    /// `genuine`, `wraparound`, `dropped-writes`, …
    pub verdict: String,
    pub fake: bool,
    pub announced_bytes: u64,
    /// What it really holds.
    pub usable_bytes: u64,
    /// `non-destructive` or `destructive`.
    pub mode: crate::kinds::CapacityMode,
}

impl BatchReport {
    /// The batch as one report for `compare` (docs/compare.md#batch-reports):
    /// per figure, the measured cards' values as its samples and their
    /// median as the figure, so that two batches compare figure by figure
    /// under the same rules as two sets of runs. A fake card's figures
    /// (there are none) and a card that stopped with an error are left out.
    pub fn as_samples(&self) -> Report {
        let mut report = Report::new(&self.tool_version);
        report.profile = Some(self.profile.clone());
        let mut measurements = Measurements::default();
        for key in MEASUREMENT_KEYS {
            let values: Vec<f64> = self
                .cards
                .iter()
                .filter(|c| matches!(c.status, Status::Pass | Status::Fail))
                .filter_map(|c| c.figures.get(key).copied())
                .collect();
            if let Some(samples) = Samples::of(values) {
                measurements.set(key, samples.median);
                report.samples.insert(key.to_owned(), samples);
            }
        }
        report.measurements = Some(measurements);
        report
    }

    /// The exit status of docs/batch.md#exit-status: 4 a card is fake, 5 a
    /// card fails `--require`, 1 a card's test failed, 3 a card was
    /// refused, 0 every card passed. The first that applies wins.
    pub fn exit_code(&self) -> i32 {
        let any = |s: Status| self.cards.iter().any(|c| c.status == s);
        if any(Status::Fake) {
            4
        } else if any(Status::Fail) {
            5
        } else if any(Status::Error) {
            1
        } else if any(Status::Refused) {
            3
        } else {
            0
        }
    }
}
