//! The endurance report, `storage-score-endurance/1` (docs/endurance.md):
//! what wearing a card pass after pass did to it. Pure data and the few
//! rules every reader of it shares (milestones, the CSV row); the run that
//! fills it is `storage-endurance`'s.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The report's `"schema"`.
pub const SCHEMA: &str = "storage-score-endurance/1";
/// Several cards' reports in one document (`endurance A B --json`).
pub const SET_SCHEMA: &str = "storage-score-endurance-set/1";
/// Blocks are judged, counted and retired 4 KiB at a time.
pub const BLOCK_BYTES: u64 = 4096;

/// One card's endurance run, so far or to its end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnduranceReport {
    pub schema: String,
    pub created: String,
    /// `storage-score x.y.z`.
    pub tool: String,
    /// The device as the user named it.
    pub device: String,
    /// The card's identity (CID or serial, and size) the run is bound to.
    pub fingerprint: String,
    pub block_bytes: u64,
    /// The bytes worn each pass (the card's size, or its usable part when
    /// the first pass found a counterfeit).
    pub surface_bytes: u64,
    /// How many segments a pass is shuffled in.
    pub segments: u32,
    pub passes: Vec<Pass>,
    /// The pass at which each milestone was first reached.
    pub milestones: BTreeMap<Milestone, u32>,
    /// Why the run ended; `None` while it goes on.
    pub stopped: Option<Stopped>,
    /// The pass it ended in.
    pub stopped_at_pass: Option<u32>,
    pub total_written_bytes: u64,
    pub total_read_bytes: u64,
    /// Blocks failed so far, all passes.
    pub bad_blocks: u64,
    /// Seconds spent writing and reading, over every session of the run.
    pub seconds: f64,
    /// What the capacity probe before the first pass found.
    pub capacity: Option<CapacityFinding>,
    /// How many times the run was resumed (after kill -9, a reboot, the
    /// card pulled and put back).
    pub resumes: u32,
    /// Plain sentences: what the run saw that the numbers do not say.
    pub notes: Vec<String>,
    /// The card as `identify` saw it when the run began (the `device`
    /// section of a `storage-score/1` report): what the leaderboard keys
    /// the result by, so that it lands on the card's page beside its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::schema::Device>,
}

/// One whole-surface pass: everything written, then everything read back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pass {
    /// From 1.
    pub pass: u32,
    pub bytes_written: u64,
    pub bytes_read: u64,
    pub write_mb_s: f64,
    pub read_mb_s: f64,
    /// 99th percentile of a 1 MiB request, in milliseconds.
    pub write_p99_ms: f64,
    pub read_p99_ms: f64,
    /// Blocks that failed in this pass.
    pub new_bad_blocks: u64,
    /// Blocks failed in this pass and every one before it.
    pub bad_blocks: u64,
    pub write_errors: u64,
    pub read_errors: u64,
    /// Blocks that read back other data than was written, all kinds.
    pub mismatches: u64,
    /// The mismatches by kind.
    pub mismatch_kinds: MismatchKinds,
}

/// What a mismatched block held instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MismatchKinds {
    /// What this run wrote there in an earlier pass.
    pub old_data: u64,
    /// What this run wrote to another block.
    pub other_block: u64,
    /// Anything else: zeros, ones, damaged or foreign data.
    pub garbage: u64,
}

/// How a block failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BadKind {
    WriteError,
    ReadError,
    OldData,
    OtherBlock,
    Garbage,
}

impl Pass {
    /// Counts one newly failed block.
    pub fn count(&mut self, kind: BadKind) {
        self.new_bad_blocks += 1;
        match kind {
            BadKind::WriteError => self.write_errors += 1,
            BadKind::ReadError => self.read_errors += 1,
            BadKind::OldData => self.mismatch_kinds.old_data += 1,
            BadKind::OtherBlock => self.mismatch_kinds.other_block += 1,
            BadKind::Garbage => self.mismatch_kinds.garbage += 1,
        }
        if matches!(kind, BadKind::OldData | BadKind::OtherBlock | BadKind::Garbage) {
            self.mismatches += 1;
        }
    }
}

/// A share of the card's blocks failed, in the order a card reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Milestone {
    #[serde(rename = "first")]
    First,
    #[serde(rename = "1%")]
    Percent1,
    #[serde(rename = "10%")]
    Percent10,
    #[serde(rename = "25%")]
    Percent25,
    #[serde(rename = "50%")]
    Percent50,
}

impl Milestone {
    pub const ALL: [Milestone; 5] =
        [Milestone::First, Milestone::Percent1, Milestone::Percent10, Milestone::Percent25, Milestone::Percent50];

    /// As `--until` and the report spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Milestone::First => "first",
            Milestone::Percent1 => "1%",
            Milestone::Percent10 => "10%",
            Milestone::Percent25 => "25%",
            Milestone::Percent50 => "50%",
        }
    }

    pub fn parse(text: &str) -> Option<Milestone> {
        Milestone::ALL.into_iter().find(|m| m.as_str() == text)
    }

    /// Whether `bad` failed blocks of `total` reach it (whole numbers, so
    /// that 1% of 1,000 blocks is reached at 10, not at 9.999…).
    pub fn reached(self, bad: u64, total: u64) -> bool {
        let percent = match self {
            Milestone::First => return bad > 0,
            Milestone::Percent1 => 1,
            Milestone::Percent10 => 10,
            Milestone::Percent25 => 25,
            Milestone::Percent50 => 50,
        };
        total > 0 && u128::from(bad) * 100 >= u128::from(total) * percent
    }
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stopped {
    /// The `--until` milestone was reached.
    Until,
    /// `--passes` passes were made.
    Passes,
    /// `--hours` hours went by.
    Hours,
    /// Writes fail and reads work: the card protects itself, or died so.
    ReadOnly,
    /// Writes are acknowledged and the old data reads back.
    IgnoresWrites,
    /// Gone, or answers nothing, and not back within the wait.
    Vanished,
    /// Stopped by a signal; the same command resumes it.
    Interrupted,
}

impl Stopped {
    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Until => "until",
            Stopped::Passes => "passes",
            Stopped::Hours => "hours",
            Stopped::ReadOnly => "read-only",
            Stopped::IgnoresWrites => "ignores-writes",
            Stopped::Vanished => "vanished",
            Stopped::Interrupted => "interrupted",
        }
    }

    /// The card as a whole died, in one of the ways a card dies.
    pub fn card_died(self) -> bool {
        matches!(self, Stopped::ReadOnly | Stopped::IgnoresWrites | Stopped::Vanished)
    }
}

/// What the capacity probe before the first pass found (as verify-capacity
/// names it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFinding {
    /// `genuine`, `wraparound`, `limbo`, `chain` or `io-errors`.
    pub verdict: String,
    pub announced_bytes: u64,
    pub usable_bytes: u64,
}

/// Several cards' reports (`"schema": "storage-score-endurance-set/1"`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnduranceSet {
    pub schema: String,
    pub created: String,
    pub cards: Vec<EnduranceReport>,
}

impl EnduranceReport {
    /// A run's report before its first pass.
    pub fn new(created: &str, tool: &str, device: &str, fingerprint: &str, surface_bytes: u64, segments: u32) -> Self {
        EnduranceReport {
            schema: SCHEMA.to_owned(),
            created: created.to_owned(),
            tool: tool.to_owned(),
            device: device.to_owned(),
            fingerprint: fingerprint.to_owned(),
            block_bytes: BLOCK_BYTES,
            surface_bytes,
            segments,
            passes: Vec::new(),
            milestones: BTreeMap::new(),
            stopped: None,
            stopped_at_pass: None,
            total_written_bytes: 0,
            total_read_bytes: 0,
            bad_blocks: 0,
            seconds: 0.0,
            capacity: None,
            resumes: 0,
            notes: Vec::new(),
            identity: None,
        }
    }

    /// Records the milestones the cumulative count `bad` reaches in `pass`.
    pub fn mark_milestones(&mut self, pass: u32) {
        let total = self.surface_bytes / self.block_bytes.max(1);
        for milestone in Milestone::ALL {
            if milestone.reached(self.bad_blocks, total) {
                self.milestones.entry(milestone).or_insert(pass);
            }
        }
    }

    /// Bytes written up to the end of the pass a milestone was reached in.
    pub fn written_by(&self, milestone: Milestone) -> Option<u64> {
        let pass = *self.milestones.get(&milestone)?;
        Some(self.passes.iter().filter(|p| p.pass <= pass).map(|p| p.bytes_written).sum())
    }
}

/// `--stats-csv`'s header.
pub const CSV_HEADER: &str = "pass,bytes_written,bytes_read,write_mb_s,read_mb_s,write_p99_ms,read_p99_ms,new_bad_blocks,bad_blocks,write_errors,read_errors,mismatches,old_data,other_block,garbage";

/// `--stats-csv`: the header and one row per pass.
pub fn passes_csv(report: &EnduranceReport) -> String {
    let mut out = String::from(CSV_HEADER);
    out.push('\n');
    for p in &report.passes {
        let k = p.mismatch_kinds;
        out.push_str(&format!(
            "{},{},{},{:.2},{:.2},{:.2},{:.2},{},{},{},{},{},{},{},{}\n",
            p.pass,
            p.bytes_written,
            p.bytes_read,
            p.write_mb_s,
            p.read_mb_s,
            p.write_p99_ms,
            p.read_p99_ms,
            p.new_bad_blocks,
            p.bad_blocks,
            p.write_errors,
            p.read_errors,
            p.mismatches,
            k.old_data,
            k.other_block,
            k.garbage
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn milestones_are_reached_in_whole_numbers() {
        assert!(!Milestone::First.reached(0, 1000));
        assert!(Milestone::First.reached(1, 1000));
        assert!(!Milestone::Percent1.reached(9, 1000));
        assert!(Milestone::Percent1.reached(10, 1000));
        assert!(!Milestone::Percent50.reached(499, 1000));
        assert!(Milestone::Percent50.reached(500, 1000));
        assert!(!Milestone::Percent1.reached(5, 0));
        for m in Milestone::ALL {
            assert_eq!(Milestone::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn the_report_spells_milestones_and_stops_as_documented() {
        let mut milestones = BTreeMap::new();
        milestones.insert(Milestone::Percent10, 7);
        milestones.insert(Milestone::First, 2);
        let text = serde_json::to_string(&milestones).expect("json");
        assert_eq!(text, r#"{"first":2,"10%":7}"#);
        assert_eq!(serde_json::to_string(&Stopped::IgnoresWrites).expect("json"), r#""ignores-writes""#);
        assert_eq!(serde_json::to_string(&BadKind::OtherBlock).expect("json"), r#""other-block""#);
    }

    #[test]
    fn a_pass_counts_each_kind_once() {
        let mut pass = Pass::default();
        for kind in [BadKind::WriteError, BadKind::ReadError, BadKind::OldData, BadKind::OtherBlock, BadKind::Garbage] {
            pass.count(kind);
        }
        assert_eq!((pass.new_bad_blocks, pass.write_errors, pass.read_errors, pass.mismatches), (5, 1, 1, 3));
        let csv =
            passes_csv(&EnduranceReport { passes: vec![Pass { pass: 1, ..pass }], ..crate::endurance::tests::empty() });
        let row: Vec<&str> = csv.lines().nth(1).expect("row").split(',').collect();
        assert_eq!(row.len(), CSV_HEADER.split(',').count());
    }

    pub(super) fn empty() -> EnduranceReport {
        EnduranceReport::new("", "", "", "", 0, 0)
    }
}
