//! Endurance and power-loss reports as a leaderboard takes them: one type
//! over both schemas ([`WearReport`]), the privacy filter they pass on the
//! way out and on the way in (the same rules as a run's report:
//! docs/safety.md#what-never-leaves-the-machine), and the few figures a
//! card page shows of each ([`EnduranceSummary`], [`PowerLossSummary`]).
//! Pure: the checks of what may be taken are [`crate::input::wear`]'s.

use serde::Serialize;

use crate::endurance::{self, EnduranceReport, Milestone};
use crate::power_loss::{self, PowerLossReport};
use crate::privacy::{self, PrivacyError, Redaction};
use crate::schema::{Device, Report};

/// An endurance or a power-loss report.
#[derive(Debug, Clone, PartialEq)]
pub enum WearReport {
    Endurance(Box<EnduranceReport>),
    PowerLoss(Box<PowerLossReport>),
}

/// Whether `schema` names an endurance or a power-loss report.
pub fn is_wear_schema(schema: &str) -> bool {
    schema == endurance::SCHEMA || schema == power_loss::SCHEMA
}

impl WearReport {
    /// The report's `"schema"`.
    pub fn schema(&self) -> &'static str {
        match self {
            WearReport::Endurance(_) => endurance::SCHEMA,
            WearReport::PowerLoss(_) => power_loss::SCHEMA,
        }
    }

    /// The card as `identify` saw it, when the report carries it.
    pub fn identity(&self) -> Option<&Device> {
        match self {
            WearReport::Endurance(r) => r.identity.as_ref(),
            WearReport::PowerLoss(r) => r.identity.as_ref(),
        }
    }

    /// The same, mutable (the leaderboard settles names in place).
    pub fn identity_mut(&mut self) -> &mut Option<Device> {
        match self {
            WearReport::Endurance(r) => &mut r.identity,
            WearReport::PowerLoss(r) => &mut r.identity,
        }
    }

    /// The report as JSON.
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        match self {
            WearReport::Endurance(r) => serde_json::to_string(r),
            WearReport::PowerLoss(r) => serde_json::to_string(r),
        }
    }

    /// The report as it may leave the machine (and as the server keeps it):
    /// the identity's serials dropped or salted-hashed as a run report's
    /// device's are, the raw CID's PSN zeroed; the endurance run's
    /// `fingerprint` (the card's CID or serial) replaced by its salted hash
    /// or, without a salt, kept only if it already is one; paths below a
    /// mount point and personal names removed from `device` and the notes.
    pub fn redact(&self, how: &Redaction<'_>) -> Result<WearReport, PrivacyError> {
        let mut out = self.clone();
        let personal = privacy::personal_names(how);
        let identity = {
            let shell = Report { device: self.identity().cloned(), ..Report::default() };
            privacy::redact(&shell, how)?.device
        };
        *out.identity_mut() = identity;
        match &mut out {
            WearReport::Endurance(r) => {
                r.device = privacy::scrub_text(&r.device, &personal);
                r.notes = r.notes.iter().map(|n| privacy::scrub_text(n, &personal)).collect();
                if !how.include_serials {
                    r.fingerprint = match how.salt {
                        Some(salt) => privacy::salted_hash(salt, &format!("endurance:{}", r.fingerprint)),
                        None if privacy::is_well_formed_hash(&r.fingerprint) => r.fingerprint.clone(),
                        None => String::new(),
                    };
                }
            }
            WearReport::PowerLoss(r) => r.device = privacy::scrub_text(&r.device, &personal),
        }
        Ok(out)
    }
}

/// A milestone and what it took to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MilestoneAt {
    /// `first`, `1%`, `10%`, `25%`, `50%`.
    pub milestone: &'static str,
    /// The pass it was first reached in.
    pub pass: u32,
    /// Bytes written by the end of that pass (the passes' `bytes_written`, summed).
    pub bytes_written: u64,
}

/// What a card page shows of an endurance run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnduranceSummary {
    /// The bytes worn each pass.
    pub surface_bytes: u64,
    pub passes: u32,
    /// Those reached, in order; the first is the first failed block.
    pub milestones: Vec<MilestoneAt>,
    /// How the run ended (`until`, `passes`, `hours`, `read-only`,
    /// `ignores-writes`, `vanished`, `interrupted`); `None` while it goes on.
    pub stopped: Option<&'static str>,
    pub stopped_at_pass: Option<u32>,
    pub total_written_bytes: u64,
    pub bad_blocks: u64,
}

impl EnduranceSummary {
    pub fn of(r: &EnduranceReport) -> EnduranceSummary {
        let milestones = Milestone::ALL
            .into_iter()
            .filter_map(|m| {
                let pass = *r.milestones.get(&m)?;
                Some(MilestoneAt { milestone: m.as_str(), pass, bytes_written: r.written_by(m).unwrap_or(0) })
            })
            .collect();
        EnduranceSummary {
            surface_bytes: r.surface_bytes,
            passes: r.passes.len() as u32,
            milestones,
            stopped: r.stopped.map(|s| s.as_str()),
            stopped_at_pass: r.stopped_at_pass,
            total_written_bytes: r.total_written_bytes,
            bad_blocks: r.bad_blocks,
        }
    }
}

/// What a card page shows of a power-loss run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PowerLossSummary {
    pub cycles: u64,
    /// Cuts after which the card came back and nothing was lost, torn,
    /// misplaced or damaged.
    pub survived: u64,
    pub acknowledged: u64,
    pub lost: u64,
    pub torn: u64,
    pub misplaced: u64,
    pub damaged: u64,
    pub returned: u64,
    /// `kept`, `lost`, `damaged`, `did-not-return`.
    pub verdict: &'static str,
}

impl PowerLossSummary {
    pub fn of(r: &PowerLossReport) -> PowerLossSummary {
        let t = &r.totals;
        let survived =
            r.cycles.iter().filter(|c| c.returned == 1 && c.lost + c.torn + c.misplaced + c.damaged == 0).count()
                as u64;
        PowerLossSummary {
            cycles: t.cycles,
            survived,
            acknowledged: t.acknowledged,
            lost: t.lost,
            torn: t.torn,
            misplaced: t.misplaced,
            damaged: t.damaged,
            returned: t.returned,
            verdict: r.verdict.as_str(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endurance::{Pass, Stopped};
    use crate::power_loss::Cycle;

    fn worn() -> EnduranceReport {
        let mut r =
            EnduranceReport::new("2026-12-06T18:00:00Z", "storage-score 0.1.0", "/dev/sdb", "sd:9f:x", 4096 * 100, 16);
        for pass in 1..=3u32 {
            let new = u64::from(pass - 1) * 5;
            r.bad_blocks += new;
            r.passes.push(Pass {
                pass,
                bytes_written: 409_600,
                new_bad_blocks: new,
                bad_blocks: r.bad_blocks,
                ..Pass::default()
            });
            r.total_written_bytes += 409_600;
            r.mark_milestones(pass);
        }
        r.stopped = Some(Stopped::Passes);
        r.stopped_at_pass = Some(3);
        r
    }

    #[test]
    fn milestones_carry_the_bytes_written_by_their_pass() {
        let s = EnduranceSummary::of(&worn());
        assert_eq!(
            s.milestones,
            vec![
                MilestoneAt { milestone: "first", pass: 2, bytes_written: 819_200 },
                MilestoneAt { milestone: "1%", pass: 2, bytes_written: 819_200 },
                MilestoneAt { milestone: "10%", pass: 3, bytes_written: 1_228_800 },
            ]
        );
        assert_eq!((s.stopped, s.total_written_bytes, s.bad_blocks), (Some("passes"), 1_228_800, 15));
    }

    #[test]
    fn a_cut_survived_is_one_that_came_back_whole() {
        let ok = Cycle { cycle: 1, written: 9, acknowledged: 8, returned: 1, ..Cycle::default() };
        let torn = Cycle { cycle: 2, torn: 1, ..ok.clone() };
        let gone = Cycle { cycle: 3, returned: 0, ..ok.clone() };
        let r = PowerLossReport::new("t".into(), "/dev/sdc".into(), vec![ok, torn, gone]);
        let s = PowerLossSummary::of(&r);
        assert_eq!((s.cycles, s.survived, s.torn, s.returned, s.verdict), (3, 1, 1, 2, "did-not-return"));
    }

    #[test]
    fn serials_and_paths_do_not_leave() {
        let mut r = worn();
        r.device = "/media/alice/card".into();
        r.notes = vec!["resumed by alice from /home/alice/x".into()];
        let device: Device = serde_json::from_value(serde_json::json!({"kind": "sd", "serial": "ABC123",
            "sd": {"cid": {"manufacturer_id": 159, "oem_id": "TI", "product_name": "SD64G", "product_revision": "6.1",
                   "serial": 915931237, "manufactured": "2019-11"}}}))
        .expect("device");
        r.identity = Some(device);
        let report = WearReport::Endurance(Box::new(r));
        let salted = Redaction { salt: Some(b"salt"), personal: vec!["alice".into()], ..Redaction::default() };
        let WearReport::Endurance(out) = report.redact(&salted).expect("redact") else { panic!("kind") };
        let text = serde_json::to_string(&out).expect("json");
        assert!(!text.contains("915931237") && !text.contains("ABC123") && !text.contains("alice"), "{text}");
        assert!(privacy::is_well_formed_hash(&out.fingerprint), "{}", out.fingerprint);
        assert_eq!(out.device, "/media/…");
        // The server keeps a hash, and drops anything else in its place.
        let again = WearReport::Endurance(out.clone()).redact(&Redaction::server()).expect("redact");
        let WearReport::Endurance(kept) = again else { panic!("kind") };
        assert_eq!(kept.fingerprint, out.fingerprint);
        let raw = WearReport::Endurance(Box::new(worn())).redact(&Redaction::server()).expect("redact");
        let WearReport::Endurance(dropped) = raw else { panic!("kind") };
        assert_eq!(dropped.fingerprint, "");
    }
}
