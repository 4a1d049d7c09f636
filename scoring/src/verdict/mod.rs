//! SD class verdicts (docs/score.md#the-verdict): does the card meet the class it claims,
//! as far as this host and this workload can tell?
//!
//! The card's claim comes from its SD Status register (SSR: SPEED_CLASS,
//! UHS_SPEED_GRADE, VIDEO_SPEED_CLASS, APP_PERF_CLASS), or from the
//! PiBenchmarks-style label built from it ([`classes`]). The measured side
//! is the highest mark each figure earns, in the same label form. The checks
//! ([`checks`]) show every requirement of every claimed mark with the
//! measured value, plus the marks between what was measured and what was
//! claimed and the next mark up. A check passes or fails only outside a
//! ±15% margin; inside it, or where the host caps the figure ([`host`]), or
//! where A2's command queue is not shown running, `pass` is null and `why`
//! says which: inconclusive is an answer, a false verdict is a defect.
//!
//! The entry points are pure: device facts and measurements in, a verdict
//! out, so the leaderboard server recomputes exactly what the client shows.

pub mod checks;
pub mod classes;
pub mod host;
mod wording;

#[cfg(test)]
mod tests;

pub use checks::MARGIN;
pub use classes::{
    ClassMark, Family, RAND_READ, RAND_WRITE, Requirement, SEQ_WRITE, SUSTAINED_WRITE, claimed_marks, class_label,
};
pub use host::{
    BUS_EFFICIENCY, BusCeiling, HostIopsCeiling, USB1_BULK_MB_S, USB2_PRACTICAL_MB_S, USB2_TIGHT_FROM_MB_S,
    host_iops_ceiling, sd_bus_ceiling,
};

use checks::Earned;
use wording::{SummaryFacts, join_and, to_strings};

use crate::run_profile::RunProfile;
use crate::schema::{Device, Measurements, Report, Thermal, Verdict};

/// The verdict for a full-length (`compat`) run.
///
/// Never panics; figures that are not finite count as not measured.
pub fn verdict(device: Option<&Device>, m: &Measurements) -> Verdict {
    verdict_for(device, m, &RunProfile::Compat)
}

/// The verdict for a saved report: its device, measurements, profile and
/// the machine's throttling while it ran.
pub fn report_verdict(report: &Report) -> Verdict {
    verdict_under(
        report.device.as_ref(),
        &report.measurements.unwrap_or_default(),
        &RunProfile::of(report.profile.as_deref()),
        report.thermal.as_ref(),
    )
}

/// The verdict for a run of `profile`. The `quick` profile shortens the
/// tests (and a profile this version does not know may too), so its
/// verdict is marked indicative.
pub fn verdict_for(device: Option<&Device>, m: &Measurements, profile: &RunProfile) -> Verdict {
    verdict_under(device, m, profile, None)
}

/// [`verdict_for`], knowing how the machine fared while the figures were
/// measured: a figure measured while the machine was throttled or
/// under-volted says more about its power supply or cooling than about the
/// card, so no check is judged on it (`"pass": null` with the reason).
pub fn verdict_under(
    device: Option<&Device>,
    m: &Measurements,
    profile: &RunProfile,
    thermal: Option<&Thermal>,
) -> Verdict {
    let mut verdict = judge_verdict(device, m, profile);
    if let Some(thermal) = thermal.filter(|t| t.throttled_during == Some(true)) {
        not_judged_while_throttled(&mut verdict, thermal);
    }
    verdict
}

/// Every check on a figure measured while throttled becomes undecided,
/// with why; the summary says so first.
fn not_judged_while_throttled(verdict: &mut Verdict, thermal: &Thermal) {
    let flags: Vec<String> = thermal.flags().iter().map(|f| f.as_str().to_owned()).collect();
    let what = if flags.is_empty() { "throttled".to_owned() } else { join_and(&flags) };
    let why = format!(
        "measured while this machine was throttled ({what}): the figure reflects the power supply or cooling, \
         not the card; not judged"
    );
    let mut keys: Vec<String> = Vec::new();
    for check in verdict.checks.iter_mut().filter(|c| c.measured.is_some() && thermal.figure_throttled(&c.key)) {
        check.pass = None;
        check.why = Some(why.clone());
        if !keys.contains(&check.key) {
            keys.push(check.key.clone());
        }
    }
    if keys.is_empty() {
        return;
    }
    verdict.notes.push(format!(
        "{} measured while this machine was throttled ({what}): the verdict does not judge {}; fix the power \
         supply or cooling (see `storage-score doctor`) and run again",
        join_and(&keys),
        if keys.len() == 1 { "it" } else { "them" }
    ));
    let all = verdict.checks.iter().filter(|c| c.measured.is_some()).all(|c| keys.contains(&c.key));
    let measured = verdict.measured.as_deref().map(|m| format!("; measures {m} as throttled")).unwrap_or_default();
    verdict.summary = Some(if all {
        format!(
            "not judged: every figure was measured while this machine was throttled ({what}){measured}; fix the \
             power supply or cooling and run again"
        )
    } else {
        format!(
            "partly judged: {} measured while this machine was throttled ({what}) and not judged; {}",
            join_and(&keys),
            verdict.summary.clone().unwrap_or_default()
        )
    });
}

fn judge_verdict(device: Option<&Device>, m: &Measurements, profile: &RunProfile) -> Verdict {
    let mut notes = Vec::new();
    let indicative = profile.indicative();
    if indicative {
        notes.push(format!(
            "the {profile} profile shortens every test: this verdict is indicative only; run the compat profile to \
             judge the class"
        ));
    }

    // What the card claims: SSR fields first, the stored label otherwise.
    let sd = device.and_then(|d| d.sd.as_ref());
    let ssr = sd.and_then(|s| s.ssr.as_ref());
    let (claimed_marks, claim_notes) = match (ssr, sd.and_then(|s| s.class_label.as_deref())) {
        (Some(ssr), _) => claimed_marks(ssr),
        (None, Some(label)) => (ClassMark::parse_label(label), Vec::new()),
        (None, None) => (Vec::new(), Vec::new()),
    };
    notes.extend(claim_notes);
    // An SSR that claims nothing has no label ("Class 0" in older reports).
    let claimed_label = if claimed_marks.is_empty() && ssr.is_some() {
        None
    } else {
        sd.and_then(|s| s.class_label.clone())
            .or_else(|| ssr.map(|s| class_label(s.app_class, s.speed_class, s.video_class, s.uhs_grade)))
    };

    // What the figures earn, family by family.
    let earned: Vec<(Family, Earned)> = Family::ALL.iter().map(|&f| (f, checks::earned(f, m))).collect();
    let measured = checks::measured_label(&earned);

    let limits = host::host_limits(device, &claimed_marks, m);
    notes.extend(limits.iter().filter(|l| !l.note.is_empty()).map(|l| l.note.clone()));
    let judged = checks::build(&earned, &claimed_marks, m, &limits);

    // Missing figures.
    let missing: Vec<&str> =
        [SEQ_WRITE, RAND_READ, RAND_WRITE].into_iter().filter(|k| figure(m, k).is_none()).collect();
    if !missing.is_empty() {
        let unchecked: Vec<ClassMark> = claimed_marks
            .iter()
            .copied()
            .filter(|c| c.requirements().iter().any(|r| r.judged_on(m).1.is_none()))
            .collect();
        let mut note = format!("not measured: {}", missing.join(", "));
        let mut clauses = Vec::new();
        if !unchecked.is_empty() {
            clauses.push(format!("the checks for {} could not be made", join_and(&to_strings(&unchecked))));
        }
        let left_out: Vec<String> =
            earned.iter().filter(|(_, e)| *e == Earned::Unknown).map(|(f, _)| f.describe().to_owned()).collect();
        if !left_out.is_empty() {
            clauses.push(format!("the measured class leaves out {}", join_and(&left_out)));
        }
        if !clauses.is_empty() {
            note.push_str(": ");
            note.push_str(&clauses.join(", and "));
        }
        notes.push(note);
    }

    let summary = wording::summarize(&SummaryFacts {
        device,
        claimed_label: claimed_label.as_deref(),
        claimed: &claimed_marks,
        measured: measured.as_deref(),
        judged: &judged,
        limits: &limits,
        indicative,
    });

    Verdict { claimed: claimed_label, measured, checks: judged.checks, notes, summary: Some(summary), indicative }
}

/// A figure, if it was measured and is a real number.
fn figure(m: &Measurements, key: &str) -> Option<f64> {
    m.get(key).filter(|v| v.is_finite())
}
