//! Linear scales and "nice" tick values (1, 2 or 5 times a power of ten).

/// Maps a data interval onto a pixel interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Linear {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Linear {
    /// A scale over `values` widened to nice bounds, starting at 0 when
    /// `from_zero` (rates and scores, where the distance from 0 matters).
    pub fn covering(values: impl IntoIterator<Item = f64>, from_zero: bool, range: (f64, f64)) -> Linear {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite()) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (0.0, 1.0);
        }
        if from_zero {
            lo = lo.min(0.0);
        }
        if hi - lo < f64::EPSILON * hi.abs().max(1.0) {
            hi = lo + lo.abs().max(1.0);
        }
        let step = nice_step((hi - lo) / 8.0);
        Linear { domain: ((lo / step).floor() * step, (hi / step).ceil() * step), range }
    }

    pub fn map(&self, v: f64) -> f64 {
        let (d0, d1) = self.domain;
        let (r0, r1) = self.range;
        if d1 == d0 {
            return r0;
        }
        r0 + (v - d0) / (d1 - d0) * (r1 - r0)
    }

    /// About `count` nice values inside the domain.
    pub fn ticks(&self, count: usize) -> Vec<f64> {
        let (d0, d1) = self.domain;
        let step = nice_step((d1 - d0) / count.max(1) as f64);
        if step.is_nan() || step <= 0.0 || !step.is_finite() {
            return vec![d0];
        }
        let first = (d0 / step).ceil() as i64;
        let last = (d1 / step).floor() as i64;
        (first..=last).take(50).map(|i| i as f64 * step).collect()
    }
}

/// The nice step (1, 2 or 5 × 10^k) nearest above `raw`.
pub fn nice_step(raw: f64) -> f64 {
    if raw.is_nan() || raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(raw.log10().floor());
    let fraction = raw / power;
    let nice = if fraction <= 1.0 {
        1.0
    } else if fraction <= 2.0 {
        2.0
    } else if fraction <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// A tick label: whole numbers with thin grouping, else up to 3 decimals.
pub fn format_tick(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        let digits = (v.abs() as u64).to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push('\u{202f}');
            }
            out.push(c);
        }
        if v < 0.0 { format!("-{out}") } else { out }
    } else {
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(260.0), 500.0);
        assert_eq!(nice_step(0.0), 1.0);
    }

    #[test]
    fn scale_covers_and_maps() {
        let s = Linear::covering([812.0, 1164.0, 990.0], true, (0.0, 100.0));
        assert_eq!(s.domain, (0.0, 1200.0));
        assert_eq!(s.map(600.0), 50.0);
        assert_eq!(s.ticks(6), vec![0.0, 200.0, 400.0, 600.0, 800.0, 1000.0, 1200.0]);
        let one = Linear::covering([5.0], false, (0.0, 10.0));
        assert!(one.domain.0 <= 5.0 && one.domain.1 > 5.0);
        let none = Linear::covering([], true, (0.0, 10.0));
        assert_eq!(none.domain, (0.0, 1.0));
    }

    #[test]
    fn tick_labels() {
        assert_eq!(format_tick(1200.0), "1\u{202f}200");
        assert_eq!(format_tick(0.25), "0.25");
        assert_eq!(format_tick(-5.0), "-5");
    }
}
