//! Is the difference real? Two reports' figures side by side, the ratio of
//! each, and whether it is beyond the noise (docs/compare.md).
//!
//! - **Samples on both sides** (`run --repeat N`, N ≥ 2): a 95% interval of
//!   the ratio from Welch's interval for the difference of the mean
//!   logarithms ([`crate::stats::welch_interval`]), in Yuen's form: from
//!   five samples on, of 20%-trimmed means, so that one wild run does not
//!   widen it ([`crate::stats::Group::trimmed`]). The interval is of the
//!   ratio of (trimmed) geometric means and is symmetric on a log scale. Each
//!   side's mean also carries two errors that its spread cannot show and
//!   more runs do not shrink: the rounding of the printed figure (a uniform
//!   error of up to half a unit of its last digit, variance h²/12), and
//!   [`SESSION_NOISE`], how far two sessions on one device may differ when
//!   every run within each agrees. `real` when the interval excludes 1,
//!   `noise` when it holds 1.
//! - **One run on either side**: no spread to judge by, so a difference
//!   under [`ONE_RUN_LIMIT`] is `cannot-tell`; a larger one is called
//!   `real`, with no interval.
//!
//! The ratio shown is of the scored figures (the medians). Pure: reports in,
//! comparisons out.

use serde::Serialize;

use crate::schema::{MEASUREMENT_KEYS, Report};
use crate::stats::{Group, welch_interval};

/// The confidence of the interval.
pub const CONFIDENCE: f64 = 0.95;

/// The relative standard deviation (1%) of a session's mean figure around
/// what another session on the same device would give, beyond what the
/// session's own runs show: the machine's other work, the device's state
/// and temperature, where the files landed. Without it, five runs that
/// agree to 0.1% would call a 0.5% change between two sessions of one card
/// real. docs/compare.md shows the measurements it rests on.
pub const SESSION_NOISE: f64 = 0.01;

/// With one run on a side, differences below this fraction (10%) cannot be
/// told from run-to-run noise.
pub const ONE_RUN_LIMIT: f64 = 0.10;

/// Is a difference beyond the noise?
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Difference {
    /// The 95% interval of the ratio excludes 1 (or, one run each, the
    /// difference is at least [`ONE_RUN_LIMIT`]).
    Real,
    /// The 95% interval of the ratio holds 1.
    Noise,
    /// Too few samples to say: one run on a side and a difference under
    /// [`ONE_RUN_LIMIT`], or the figure is missing on a side.
    CannotTell,
}

impl Difference {
    pub fn as_str(self) -> &'static str {
        match self {
            Difference::Real => "real",
            Difference::Noise => "noise",
            Difference::CannotTell => "cannot-tell",
        }
    }
}

/// One figure of two reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub key: String,
    /// The scored figures (medians of the samples).
    #[serde(serialize_with = "crate::schema::ser_number")]
    pub base: Option<f64>,
    #[serde(serialize_with = "crate::schema::ser_number")]
    pub other: Option<f64>,
    /// `other / base`.
    pub ratio: Option<f64>,
    /// The 95% interval of the ratio, when both sides have samples.
    pub ci95: Option<[f64; 2]>,
    pub difference: Difference,
    /// How many runs stand behind each side: `[base, other]`.
    pub runs: [usize; 2],
}

/// Every figure of `base` and `other`, in the table's order; figures that
/// neither report has are left out.
pub fn reports(base: &Report, other: &Report) -> Vec<Figure> {
    MEASUREMENT_KEYS
        .iter()
        .filter_map(|key| {
            let (a, b) = (Side::of(base, key), Side::of(other, key));
            (a.value.is_some() || b.value.is_some()).then(|| figure(key, &a, &b))
        })
        .collect()
}

/// One side of a figure: the scored value and the samples behind it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Side {
    pub value: Option<f64>,
    pub samples: Vec<f64>,
}

impl Side {
    /// `key` in `report`: its samples when it has them, else its one figure.
    pub fn of(report: &Report, key: &str) -> Side {
        let measured = report.measurements.as_ref().and_then(|m| m.get(key));
        match report.samples.get(key) {
            Some(s) if !s.values.is_empty() => Side { value: measured.or(Some(s.median)), samples: s.values.clone() },
            _ => Side { value: measured, samples: measured.into_iter().collect() },
        }
    }
}

/// Compares one figure.
pub fn figure(key: &str, base: &Side, other: &Side) -> Figure {
    let runs = [base.samples.len(), other.samples.len()];
    let mut out = Figure {
        key: key.to_owned(),
        base: base.value,
        other: other.value,
        ratio: None,
        ci95: None,
        difference: Difference::CannotTell,
        runs,
    };
    let (Some(a), Some(b)) = (base.value, other.value) else { return out };
    if !(a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite()) {
        return out;
    }
    let ratio = b / a;
    out.ratio = Some(round4(ratio));
    match ratio_interval(key, &base.samples, &other.samples) {
        Some((lo, hi)) => {
            out.ci95 = Some([round4(lo), round4(hi)]);
            out.difference = if lo <= 1.0 && 1.0 <= hi { Difference::Noise } else { Difference::Real };
        }
        None if (ratio - 1.0).abs() >= ONE_RUN_LIMIT => out.difference = Difference::Real,
        None => {}
    }
    out
}

/// The 95% interval of the ratio of geometric means of `b` to `a`, when
/// both have two or more positive samples.
pub fn ratio_interval(key: &str, a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let group = |values: &[f64]| -> Option<Group> {
        if values.iter().any(|v| v.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater)) {
            return None;
        }
        let logs: Vec<f64> = values.iter().map(|v| v.ln()).collect();
        let typical = crate::stats::mean(&logs).exp();
        // Rounding to a step h is a uniform error of ±h/2: variance h²/12,
        // which on a log scale is (h / x)² / 12. It is the same error in
        // every run of a steady device, so it is the mean's, not a sample's.
        let h = resolution(key, typical) / typical;
        Group::trimmed(&logs, h * h / 12.0 + SESSION_NOISE * SESSION_NOISE)
    };
    let (ga, gb) = (group(a)?, group(b)?);
    let (lo, hi) = welch_interval(&ga, &gb, CONFIDENCE)?;
    Some((lo.exp(), hi.exp()))
}

/// The step a figure is printed in, as its reference tool prints it
/// (docs/measurements.md): hdparm's two decimals of MiB/s, dd's MB/s (one
/// decimal below 100, none to 999, then tenths of GB/s), whole IOPS and
/// whole KiB/s.
pub fn resolution(key: &str, value: f64) -> f64 {
    crate::figure::Figure::from_key(key).map_or(1.0, |f| f.printed_step(value))
}

/// Notes a reader of the comparison needs: figures not made the same way.
pub fn notes(base: &Report, other: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    let profile = |r: &Report| crate::run_profile::RunProfile::of(r.profile.as_deref());
    if profile(base) != profile(other) {
        notes.push(format!(
            "the profiles differ ({} and {}): the tests ran for different lengths, so a difference may be the profile's",
            profile(base),
            profile(other)
        ));
    }
    notes
}

fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{Measurements, Samples};

    fn side(values: &[f64]) -> Side {
        let s = Samples::of(values.to_vec()).expect("samples");
        Side { value: Some(s.median), samples: values.to_vec() }
    }

    #[test]
    fn a_clear_difference_with_samples_is_real() {
        let a = side(&[20.0, 20.1, 19.9, 20.0, 20.2]);
        let b = side(&[21.0, 21.1, 20.9, 21.0, 21.2]);
        let f = figure("seq_write_mb_s", &a, &b);
        assert_eq!(f.difference, Difference::Real, "{f:?}");
        let [lo, hi] = f.ci95.expect("interval");
        assert!(lo > 1.01 && hi < 1.09 && lo < 1.05 && 1.05 < hi, "{f:?}");
        assert_eq!(f.ratio, Some(1.05));
        assert_eq!(f.runs, [5, 5]);
    }

    #[test]
    fn overlapping_samples_are_noise() {
        let a = side(&[2000.0, 1985.0, 2010.0, 1998.0, 2004.0]);
        let b = side(&[1995.0, 2008.0, 1990.0, 2001.0, 2012.0]);
        let f = figure("rand_read_4k_qd64_iops", &a, &b);
        assert_eq!(f.difference, Difference::Noise, "{f:?}");
        let [lo, hi] = f.ci95.expect("interval");
        assert!(lo < 1.0 && hi > 1.0);
    }

    #[test]
    fn runs_that_agree_exactly_still_meet_the_session_noise() {
        // Five identical figures on each side: the interval is the session
        // noise and the rounding alone, ±1.96 × √2 × 1% ≈ ±2.8%.
        let a = side(&[800.0; 5]);
        let f = figure("rand_write_4k_qd64_iops", &a, &side(&[816.0; 5]));
        assert_eq!(f.difference, Difference::Noise, "2% apart: {f:?}");
        let [lo, hi] = f.ci95.expect("interval");
        assert!((hi / lo).ln() / 2.0 > 0.0277 && (hi / lo).ln() / 2.0 < 0.0280, "{f:?}");
        let f = figure("rand_write_4k_qd64_iops", &a, &side(&[832.0; 5]));
        assert_eq!(f.difference, Difference::Real, "4% apart: {f:?}");
    }

    #[test]
    fn one_run_each_cannot_tell_under_ten_percent() {
        let f = figure("seq_write_mb_s", &side(&[20.0]), &side(&[21.0]));
        assert_eq!((f.difference, f.ci95, f.ratio), (Difference::CannotTell, None, Some(1.05)));
        let f = figure("seq_write_mb_s", &side(&[20.0]), &side(&[23.0]));
        assert_eq!((f.difference, f.ci95), (Difference::Real, None));
        // Samples on one side only: still one run against it.
        let f = figure("seq_write_mb_s", &side(&[20.0, 20.1, 19.9]), &side(&[21.0]));
        assert_eq!(f.difference, Difference::CannotTell);
    }

    #[test]
    fn missing_or_zero_figures_cannot_be_told() {
        let f = figure("seq_write_mb_s", &side(&[20.0]), &Side::default());
        assert_eq!((f.difference, f.ratio, f.other), (Difference::CannotTell, None, None));
        let f = figure("seq_write_mb_s", &side(&[0.0, 0.0]), &side(&[1.0, 1.0]));
        assert_eq!((f.difference, f.ratio), (Difference::CannotTell, None));
    }

    #[test]
    fn reports_compare_by_samples_or_by_their_one_figure() {
        let mut a = Report::new("0.1.0");
        let mut m = Measurements::default();
        m.set("seq_write_mb_s", 20.0);
        m.set("rand_read_4k_qd64_iops", 2000.0);
        a.measurements = Some(m);
        a.samples.insert("seq_write_mb_s".into(), Samples::of(vec![19.9, 20.0, 20.1]).expect("samples"));
        let mut b = a.clone();
        b.profile = Some("quick".into());
        let figures = reports(&a, &b);
        assert_eq!(figures.len(), 2, "only the figures the reports have");
        assert_eq!(figures[0].key, "seq_write_mb_s");
        assert_eq!((figures[0].runs, figures[0].difference), ([3, 3], Difference::Noise));
        assert_eq!((figures[1].runs, figures[1].difference), ([1, 1], Difference::CannotTell));
        assert!(notes(&a, &b)[0].contains("compat and quick"), "{:?}", notes(&a, &b));
    }

    #[test]
    fn resolutions_follow_the_printed_figures() {
        assert_eq!(resolution("seq_read_mib_s", 45.0), 0.01);
        assert_eq!(resolution("seq_write_mb_s", 45.0), 0.1);
        assert_eq!(resolution("seq_write_mb_s", 450.0), 1.0);
        assert_eq!(resolution("seq_write_mb_s", 1200.0), 100.0);
        assert_eq!(resolution("rand_read_4k_qd1_kib_s", 4000.0), 1.0);
    }
}
