//! The power-loss report, `storage-score-power-loss/1` (docs/power-loss.md):
//! what each power cut cost a card, counted per cycle and in total, and the
//! verdict. The types only, and the pure rules that sum and judge them; the
//! cuts themselves are `storage-powerloss`'s.

use serde::{Deserialize, Serialize};

/// The report's `"schema"`.
pub const SCHEMA: &str = "storage-score-power-loss/1";
/// The size of one record, `"record_bytes"`.
pub const RECORD_BYTES: u64 = 4096;

/// A whole run: every cycle, the totals, the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PowerLossReport {
    pub schema: String,
    pub created: String,
    /// The device as the user named it when the run started.
    pub device: String,
    pub record_bytes: u64,
    pub cycles: Vec<Cycle>,
    pub totals: Totals,
    pub verdict: PowerLossVerdict,
    /// The card as `identify` saw it (the `device` section of a
    /// `storage-score/1` report): what the leaderboard keys the result by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::schema::Device>,
}

/// One cycle: writes, a cut while they were in flight, power back on, and
/// the check of what the card kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Cycle {
    /// Numbered from 1.
    pub cycle: u32,
    /// Records whose write returned before the cut.
    pub written: u64,
    /// Records a flush returned after (a card without power answers none).
    pub acknowledged: u64,
    /// Acknowledged this cycle, but older content reads back.
    pub lost: u64,
    /// Acknowledged this cycle, and its head is new but its tail old (or the
    /// other way round): a shorn write.
    pub torn: u64,
    /// A record of this run read at an address that is not its own.
    pub misplaced: u64,
    /// Data the card had kept until now (acknowledged or verified earlier)
    /// that no longer reads back right, or this cycle's acknowledged record
    /// replaced by bytes that are neither it nor what was there before.
    pub damaged: u64,
    /// 1 when the device came back after the power-on command, else 0.
    pub returned: u64,
    /// Seconds from the power-on command to the device opened again; null
    /// when it did not return.
    pub back_after_s: Option<f64>,
}

/// The sums over all cycles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub cycles: u64,
    pub acknowledged: u64,
    pub lost: u64,
    pub torn: u64,
    pub misplaced: u64,
    pub damaged: u64,
    pub returned: u64,
}

/// What the run says of the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PowerLossVerdict {
    /// Every acknowledged record and everything verified earlier read back
    /// right after every cut.
    Kept,
    /// Acknowledged records were lost or torn, and nothing older was hurt.
    Lost,
    /// Data the card had already kept changed, or a record landed at an
    /// address not its own (which overwrote what was there).
    Damaged,
    /// After a power-on, the device did not come back within the wait.
    DidNotReturn,
}

impl PowerLossVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            PowerLossVerdict::Kept => "kept",
            PowerLossVerdict::Lost => "lost",
            PowerLossVerdict::Damaged => "damaged",
            PowerLossVerdict::DidNotReturn => "did-not-return",
        }
    }
}

impl Totals {
    /// The sums of `cycles`.
    pub fn of(cycles: &[Cycle]) -> Totals {
        let mut t = Totals { cycles: cycles.len() as u64, ..Totals::default() };
        for c in cycles {
            t.acknowledged += c.acknowledged;
            t.lost += c.lost;
            t.torn += c.torn;
            t.misplaced += c.misplaced;
            t.damaged += c.damaged;
            t.returned += c.returned;
        }
        t
    }

    /// The verdict these totals give: a device that did not come back after
    /// a power-on first (nothing after it was measured), then harm to kept
    /// data, then lost acknowledged writes.
    pub fn verdict(&self) -> PowerLossVerdict {
        if self.returned < self.cycles {
            PowerLossVerdict::DidNotReturn
        } else if self.damaged + self.misplaced > 0 {
            PowerLossVerdict::Damaged
        } else if self.lost + self.torn > 0 {
            PowerLossVerdict::Lost
        } else {
            PowerLossVerdict::Kept
        }
    }
}

impl PowerLossReport {
    /// A report over `cycles`, its totals and verdict computed from them.
    pub fn new(created: String, device: String, cycles: Vec<Cycle>) -> PowerLossReport {
        let totals = Totals::of(&cycles);
        let verdict = totals.verdict();
        PowerLossReport {
            schema: SCHEMA.to_owned(),
            created,
            device,
            record_bytes: RECORD_BYTES,
            cycles,
            totals,
            verdict,
            identity: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(n: u32, f: impl FnOnce(&mut Cycle)) -> Cycle {
        let mut c =
            Cycle { cycle: n, written: 10, acknowledged: 8, returned: 1, back_after_s: Some(0.5), ..Cycle::default() };
        f(&mut c);
        c
    }

    #[test]
    fn the_verdict_names_the_worst_thing_seen() {
        let kept = vec![cycle(1, |_| ()), cycle(2, |_| ())];
        assert_eq!(Totals::of(&kept).verdict(), PowerLossVerdict::Kept);
        let lost = vec![cycle(1, |c| c.torn = 1), cycle(2, |_| ())];
        assert_eq!(Totals::of(&lost).verdict(), PowerLossVerdict::Lost);
        let damaged = vec![cycle(1, |c| c.lost = 3), cycle(2, |c| c.misplaced = 1)];
        assert_eq!(Totals::of(&damaged).verdict(), PowerLossVerdict::Damaged);
        let gone = vec![cycle(1, |c| c.damaged = 1), cycle(2, |c| c.returned = 0)];
        assert_eq!(Totals::of(&gone).verdict(), PowerLossVerdict::DidNotReturn);
    }

    #[test]
    fn the_report_starts_with_schema_and_created() {
        let report =
            PowerLossReport::new("2026-12-06T18:00:00Z".into(), "/dev/sdb".into(), vec![cycle(1, |c| c.lost = 2)]);
        let text = serde_json::to_string(&report).expect("json");
        assert!(
            text.starts_with(r#"{"schema":"storage-score-power-loss/1","created":"2026-12-06T18:00:00Z""#),
            "{text}"
        );
        assert!(text.contains(r#""verdict":"lost""#), "{text}");
        assert!(text.contains(r#""totals":{"cycles":1,"acknowledged":8,"lost":2"#), "{text}");
        let back: PowerLossReport = serde_json::from_str(&text).expect("read back");
        assert_eq!(back, report);
        let gone = serde_json::to_string(&PowerLossVerdict::DidNotReturn).expect("json");
        assert_eq!(gone, r#""did-not-return""#);
    }
}
