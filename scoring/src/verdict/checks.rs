//! The checks: every requirement of the claimed marks, of the marks between
//! what was measured and what was claimed, and of the next mark up, each
//! judged with a margin and the host's limits.
//!
//! Why a margin: Speed, UHS and Video classes are defined on AU-aligned
//! writes into erased allocation units, sustained (SD Physical Layer
//! Simplified Specification, "Speed Class Specification" and "Video Speed
//! Class"), and the A classes on a preconditioned test area; the figures
//! here come from a 520 MiB buffered dd through ext4 and fio on an 80 MiB
//! file. They are evidence, not the spec's own test, so a figure within
//! [`MARGIN`] of a requirement decides nothing.

use std::collections::BTreeSet;

use super::classes::{ClassMark, Family};
use super::host::HostLimit;
use super::wording::fmt_plain;
use crate::schema::{Check, Measurements};

/// A figure within this share of a requirement, either side, is
/// inconclusive: pass needs `required × (1 + MARGIN)`, fail needs less than
/// `required × (1 − MARGIN)`.
pub const MARGIN: f64 = 0.15;

/// What a figure earned in one family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Earned {
    /// The highest mark met, or none met.
    Known(Option<ClassMark>),
    /// A figure the family needs was not measured.
    Unknown,
}

/// The checks, judged.
#[derive(Debug, Default)]
pub(super) struct Judged {
    pub checks: Vec<Check>,
}

/// The highest mark of `family` that every figure earns (plain comparison).
pub(super) fn earned(family: Family, m: &Measurements) -> Earned {
    let mut best = None;
    for &mark in family.marks() {
        match mark.met_by(m) {
            Some(true) => best = Some(mark),
            // Higher marks of a family ask at least as much of every figure.
            Some(false) => break,
            None => return Earned::Unknown,
        }
    }
    Earned::Known(best)
}

/// The measured label in PiBenchmarks form; families that could not be
/// measured are left out, and `None` when nothing could be.
pub(super) fn measured_label(earned: &[(Family, Earned)]) -> Option<String> {
    let mut parts = Vec::new();
    for &(family, got) in earned {
        match (family, got) {
            (_, Earned::Unknown) => {}
            // PiBenchmarks always prints the speed class, `Class 0` included.
            (Family::Speed, Earned::Known(None)) => parts.push("Class 0".to_owned()),
            (_, Earned::Known(None)) => {}
            (_, Earned::Known(Some(mark))) => parts.push(mark.to_string()),
        }
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// One measured figure against one requirement, before host limits.
pub fn judge(measured: f64, required: f64) -> Option<bool> {
    if measured >= required * (1.0 + MARGIN) {
        Some(true)
    } else if measured < required * (1.0 - MARGIN) {
        Some(false)
    } else {
        None
    }
}

/// Builds and judges the checks.
pub(super) fn build(
    earned: &[(Family, Earned)],
    claimed_marks: &[ClassMark],
    m: &Measurements,
    limits: &[HostLimit],
) -> Judged {
    let mut checks = Vec::new();
    for &(family, got) in earned {
        let marks = family.marks();
        let pos = |mark: ClassMark| marks.iter().position(|&x| x == mark);
        let claimed_idx = claimed_marks.iter().filter(|c| c.family() == family).filter_map(|&c| pos(c)).max();
        let mut include = BTreeSet::new();
        include.extend(claimed_idx);
        if let Earned::Known(best) = got {
            let best_idx = best.and_then(pos);
            include.extend(best_idx);
            // The next mark up shows what the card misses; when the claim is
            // higher still, every mark up to it is shown.
            let next = best_idx.map_or(0, |b| b + 1);
            let upper = claimed_idx.map_or(next, |c| c.max(next)).min(marks.len().saturating_sub(1));
            include.extend(next..=upper);
        }
        for idx in include {
            let Some(&mark) = marks.get(idx) else {
                continue;
            };
            let claimed = claimed_marks.contains(&mark);
            for r in mark.requirements() {
                let (r, measured) = r.judged_on(m);
                let mut check = Check {
                    mark: mark.to_string(),
                    requirement: format!("{} ≥ {} {}", r.what, fmt_plain(r.required), r.unit),
                    key: r.key.to_owned(),
                    required: r.required,
                    measured,
                    unit: r.unit.to_owned(),
                    pass: None,
                    claimed,
                    why: None,
                };
                if let Some(v) = measured {
                    check.pass = judge(v, r.required);
                    if check.pass != Some(true) {
                        if let Some(limit) = limits.iter().find(|l| l.explains(&check)) {
                            check.pass = None;
                            check.why = Some(limit.why.clone());
                        } else if check.pass.is_none() {
                            check.why = Some(format!(
                                "within {}% of the requirement: inconclusive under this workload",
                                fmt_plain(MARGIN * 100.0)
                            ));
                        }
                    }
                }
                checks.push(check);
            }
        }
    }
    Judged { checks }
}
