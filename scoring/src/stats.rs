//! Small-sample statistics for `compare` (docs/compare.md): means and
//! variances, Student's t distribution, and Welch's interval for the
//! difference of two means. Pure functions over slices; no I/O.
//!
//! The t quantile is computed, not looked up: the distribution function is
//! written with the regularized incomplete beta function (DLMF 8.17.1 and
//! the t distribution's relation to it, DLMF 8.17 / NIST/SEMATECH
//! e-Handbook 1.3.6.6.4), evaluated by its continued fraction (DLMF
//! 8.17.22), and inverted by bisection. Welch's degrees of freedom are not
//! whole numbers, so a table would not do.

/// The arithmetic mean; NaN for no values.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The median (the mean of the middle two for an even count); `None` for
/// no values. NaNs sort last (`total_cmp`), so give finite values.
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mid = sorted.len() / 2;
    Some(if sorted.len() % 2 == 1 { sorted[mid] } else { (sorted[mid - 1] + sorted[mid]) / 2.0 })
}

/// The median absolute deviation from the median (unscaled); `None` for no
/// values.
pub fn mad(values: &[f64]) -> Option<f64> {
    let centre = median(values)?;
    median(&values.iter().map(|v| (v - centre).abs()).collect::<Vec<_>>())
}

/// Iglewicz and Hoaglin's modified z-score of each value, 0.6745 (x −
/// median) / MAD (Iglewicz & Hoaglin, "How to Detect and Handle Outliers",
/// ASQC 1993; NIST/SEMATECH e-Handbook 1.3.5.17). When more than half the
/// values are equal the MAD is 0, and the mean absolute deviation stands in
/// for it, scaled by 1.253314 (so both estimate the same spread). `None`
/// when all the values are equal or there are fewer than three.
pub fn robust_z(values: &[f64]) -> Option<Vec<f64>> {
    if values.len() < 3 {
        return None;
    }
    let centre = median(values)?;
    let mad = mad(values)?;
    let scale = if mad > 0.0 {
        mad / 0.6745
    } else {
        1.253314 * mean(&values.iter().map(|v| (v - centre).abs()).collect::<Vec<_>>())
    };
    (scale > 0.0).then(|| values.iter().map(|v| (v - centre) / scale).collect())
}

/// The sample variance (divisor n − 1); NaN for fewer than two values.
pub fn variance(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return f64::NAN;
    }
    let m = mean(values);
    values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (values.len() - 1) as f64
}

/// The fraction trimmed from each end of a sample by [`Group::trimmed`]:
/// 20%, the usual choice for Yuen's method (Wilcox, "Introduction to Robust
/// Estimation and Hypothesis Testing", 4th ed., 2017, 4.5 and 5.3).
pub const TRIM: f64 = 0.2;

/// One group of samples, as Welch's interval needs it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Group {
    pub mean: f64,
    /// The variance of one sample (not of the mean), from their spread.
    pub variance: f64,
    pub n: usize,
    /// A variance of the mean that the spread cannot show and more samples
    /// do not shrink (an error shared by every sample), taken as known.
    pub known: f64,
}

impl Group {
    /// The group of `values` (two or more, all finite), with `known` added
    /// to the variance of their mean.
    pub fn of(values: &[f64], known: f64) -> Option<Group> {
        (values.len() >= 2 && values.iter().all(|v| v.is_finite())).then(|| Group {
            mean: mean(values),
            variance: variance(values),
            n: values.len(),
            known: known.max(0.0),
        })
    }

    /// The group of `values` (two or more, all finite) for Yuen's form of
    /// Welch's interval (Yuen 1974): the mean of the values left when
    /// [`TRIM`] of them are cut from each end, and the winsorized variance
    /// (the cut values replaced by the nearest kept one) scaled so that
    /// `variance / n` is the trimmed mean's squared standard error,
    /// `(n − 1) s_w² / (h (h − 1))` with `h` values kept. With fewer than
    /// five values nothing is cut, and this is the plain group: one wild
    /// run among five then moves the interval little, where it would
    /// widen Welch's plain interval by half.
    pub fn trimmed(values: &[f64], known: f64) -> Option<Group> {
        if values.len() < 2 || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let n = values.len();
        let g = (TRIM * n as f64).floor() as usize;
        if g == 0 {
            return Group::of(values, known);
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let h = n - 2 * g;
        let kept = &sorted[g..n - g];
        let winsorized: Vec<f64> = sorted.iter().map(|v| v.clamp(kept[0], kept[h - 1])).collect();
        let sw2 = variance(&winsorized);
        // variance / n is the squared standard error; n − 1 stays the
        // degrees of freedom's count: Yuen's are h − 1.
        let se2 = (n - 1) as f64 * sw2 / (h * (h - 1)) as f64;
        Some(Group { mean: mean(kept), variance: se2 * h as f64, n: h, known: known.max(0.0) })
    }

    /// The part of the mean's variance estimated from the samples.
    fn sampled(&self) -> f64 {
        self.variance / self.n as f64
    }
}

/// Welch's two-sided interval for `b.mean − a.mean` at `confidence`
/// (e.g. 0.95): the difference ± t(ν) × its standard error, with the
/// Welch–Satterthwaite degrees of freedom ν (Welch 1947; Satterthwaite
/// 1946). Unequal variances and unequal counts are allowed. A known part of
/// the variance adds to the error but, being known, no uncertainty to ν
/// (with nothing estimated, t becomes the normal quantile). `None` when the
/// error is zero or not a number: there is no interval.
pub fn welch_interval(a: &Group, b: &Group, confidence: f64) -> Option<(f64, f64)> {
    let (va, vb) = (a.sampled(), b.sampled());
    let se2 = va + vb + a.known + b.known;
    if !(se2.is_finite() && se2 > 0.0) {
        return None;
    }
    let spread = va * va / (a.n - 1) as f64 + vb * vb / (b.n - 1) as f64;
    let df = if spread > 0.0 { (se2 * se2 / spread).min(MANY) } else { MANY };
    let t = t_quantile(0.5 + confidence / 2.0, df)?;
    let diff = b.mean - a.mean;
    let half = t * se2.sqrt();
    Some((diff - half, diff + half))
}

/// Degrees of freedom past which t is the normal distribution to 1e-6.
const MANY: f64 = 1e7;

/// The `p` quantile of Student's t distribution with `df` degrees of
/// freedom, for 0.5 ≤ p < 1 and df > 0 (bisection to full precision).
pub fn t_quantile(p: f64, df: f64) -> Option<f64> {
    if !((0.5..1.0).contains(&p) && df > 0.0 && df.is_finite()) {
        return None;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while t_cdf(hi, df) < p {
        hi *= 2.0;
        if hi > 1e12 {
            return None;
        }
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= 1e-12 * hi {
            break;
        }
    }
    Some((lo + hi) / 2.0)
}

/// Student's t distribution function: for t ≥ 0 it is
/// 1 − ½·I_x(ν/2, ½) with x = ν / (ν + t²), and symmetric about 0.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * regularized_beta(x, df / 2.0, 0.5);
    if t >= 0.0 { 1.0 - tail } else { tail }
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0,
/// 0 ≤ x ≤ 1, by its continued fraction (DLMF 8.17.22), which converges
/// fast for x < (a + 1)/(a + b + 2); above that the symmetry
/// I_x(a, b) = 1 − I_{1−x}(b, a) (DLMF 8.17.4) is used.
pub fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - regularized_beta(1.0 - x, b, a);
    }
    // The prefactor x^a (1−x)^b / (a B(a, b)), in logarithms.
    let ln_front = a * x.ln() + b * (1.0 - x).ln() - ln_gamma(a) - ln_gamma(b) + ln_gamma(a + b) - a.ln();
    ln_front.exp() * beta_fraction(x, a, b)
}

/// 1 / (1 + d₁/(1 + d₂/(1 + …))) with DLMF 8.17.22's coefficients,
/// evaluated front to back (the modified Lentz method: Lentz 1976,
/// Thompson & Barnett 1986), stopping when a step changes it by < 1e-15.
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let d = |m: usize| -> f64 {
        let k = (m / 2) as f64;
        if m % 2 == 0 {
            k * (b - k) * x / ((a + 2.0 * k - 1.0) * (a + 2.0 * k))
        } else {
            -(a + k) * (a + b + k) * x / ((a + 2.0 * k) * (a + 2.0 * k + 1.0))
        }
    };
    // f = b0 + a1/(b1 + a2/(b2 + …)) with b0 = 0, a1 = 1, and then
    // a_{m+1} = d_m, b_m = 1 for m ≥ 1.
    let mut f = TINY;
    let mut c = f;
    let mut dd = 0.0;
    // The zero b0 is seeded as TINY; the first step multiplies it back out.
    for m in 0..10_000 {
        let am = if m == 0 { 1.0 } else { d(m) };
        dd = 1.0 + am * dd;
        if dd.abs() < TINY {
            dd = TINY;
        }
        c = 1.0 + am / c;
        if c.abs() < TINY {
            c = TINY;
        }
        dd = 1.0 / dd;
        let step = c * dd;
        f *= step;
        if (step - 1.0).abs() < 1e-15 {
            break;
        }
    }
    f
}

/// ln Γ(x) for x > 0: the recurrence Γ(x + 1) = x Γ(x) lifts x to 15 or
/// more, where Stirling's series (DLMF 5.11.1) to the x⁻⁹ term is exact to
/// well under 1e-15.
pub fn ln_gamma(x: f64) -> f64 {
    let mut shift = 0.0;
    let mut x = x;
    while x < 15.0 {
        shift += x.ln();
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    let series =
        inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 * (1.0 / 1680.0 - inv2 / 1188.0))));
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series - shift
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tolerance: f64) -> bool {
        (a - b).abs() <= tolerance
    }

    #[test]
    fn ln_gamma_matches_factorials_and_half_integers() {
        // Γ(n) = (n−1)!, Γ(½) = √π.
        let mut factorial = 1.0f64;
        for n in 1..25 {
            assert!(close(ln_gamma(n as f64), factorial.ln(), 1e-12), "Γ({n})");
            factorial *= n as f64;
        }
        assert!(close(ln_gamma(0.5), std::f64::consts::PI.sqrt().ln(), 1e-13));
        assert!(close(ln_gamma(1.5), (std::f64::consts::PI.sqrt() / 2.0).ln(), 1e-13));
    }

    #[test]
    fn the_beta_function_at_known_points() {
        // I_x(1, 1) = x; I_x(a, 1) = x^a; I_x(1, b) = 1 − (1 − x)^b; I_½(a, a) = ½.
        for &x in &[0.01, 0.2, 0.5, 0.77, 0.99] {
            assert!(close(regularized_beta(x, 1.0, 1.0), x, 1e-13), "{x}");
            assert!(close(regularized_beta(x, 3.5, 1.0), x.powf(3.5), 1e-13), "{x}");
            assert!(close(regularized_beta(x, 1.0, 2.5), 1.0 - (1.0 - x).powf(2.5), 1e-13), "{x}");
        }
        for &a in &[0.5, 2.0, 7.3, 40.0] {
            assert!(close(regularized_beta(0.5, a, a), 0.5, 1e-13), "{a}");
        }
        assert_eq!(regularized_beta(0.0, 2.0, 3.0), 0.0);
        assert_eq!(regularized_beta(1.0, 2.0, 3.0), 1.0);
    }

    #[test]
    fn t_quantiles_match_the_published_table() {
        // Two-sided 95% critical values (NIST/SEMATECH e-Handbook, table
        // 1.3.6.7.2, upper 0.025 column).
        for (df, t) in [(1.0, 12.706), (2.0, 4.303), (3.0, 3.182), (4.0, 2.776), (8.0, 2.306), (30.0, 2.042)] {
            let q = t_quantile(0.975, df).expect("quantile");
            assert!(close(q, t, 5e-4), "df {df}: {q}");
        }
        // Many degrees of freedom: the normal distribution's 1.95996.
        assert!(close(t_quantile(0.975, 1e7).expect("quantile"), 1.959964, 1e-5));
        // df = 1 is the Cauchy distribution: F(t) = ½ + atan(t)/π, exactly.
        for &t in &[0.3, 1.0, 4.0, 40.0] {
            assert!(close(t_cdf(t, 1.0), 0.5 + t.atan() / std::f64::consts::PI, 1e-13), "{t}");
            assert!(close(t_cdf(-t, 1.0), 0.5 - t.atan() / std::f64::consts::PI, 1e-13), "{t}");
        }
        // A fractional df lies between its neighbours.
        let q = t_quantile(0.975, 4.5).expect("quantile");
        assert!(q < 2.776 && q > 2.571, "{q}");
        assert_eq!(t_quantile(0.4, 3.0), None);
        assert_eq!(t_quantile(0.975, 0.0), None);
    }

    #[test]
    fn welch_on_a_textbook_pair() {
        // Two groups of five with unequal spreads: mean difference 2,
        // standard error √(1/5 + 4/5) = 1, ν = 1 / ((0.2² + 0.8²)/4) = 5.88.
        let a = Group { mean: 10.0, variance: 1.0, n: 5, known: 0.0 };
        let b = Group { mean: 12.0, variance: 4.0, n: 5, known: 0.0 };
        let (lo, hi) = welch_interval(&a, &b, 0.95).expect("interval");
        let t = t_quantile(0.975, 1.0 / ((0.04 + 0.64) / 4.0)).expect("t");
        assert!(close(lo, 2.0 - t, 1e-12) && close(hi, 2.0 + t, 1e-12), "{lo} {hi}");
        assert!(t > 2.447 && t < 2.571, "ν between 6 and 5: {t}");
    }

    #[test]
    fn groups_need_two_finite_values() {
        assert_eq!(Group::of(&[1.0], 0.0), None);
        assert_eq!(Group::of(&[1.0, f64::NAN], 0.0), None);
        let g = Group::of(&[1.0, 2.0, 3.0], 0.5).expect("group");
        assert_eq!((g.mean, g.variance, g.n, g.known), (2.0, 1.0, 3, 0.5));
        // Identical samples and nothing added: no interval rather than a
        // zero-width one that would call any difference real.
        let same = Group::of(&[5.0, 5.0], 0.0).expect("group");
        assert_eq!(welch_interval(&same, &same, 0.95), None);
    }

    #[test]
    fn trimmed_groups_follow_yuen() {
        // Fewer than five values: nothing is cut.
        assert_eq!(Group::trimmed(&[1.0, 2.0, 4.0], 0.0), Group::of(&[1.0, 2.0, 4.0], 0.0));
        // Five values, one cut from each end: the mean of the middle three,
        // the winsorized sample [2, 2, 3, 4, 4] (variance 1), h = 3, and a
        // squared standard error of 4 × 1 / (3 × 2) = 2/3.
        let g = Group::trimmed(&[100.0, 3.0, -50.0, 2.0, 4.0], 0.0).expect("group");
        assert!(close(g.mean, 3.0, 1e-12), "{g:?}");
        assert_eq!(g.n, 3);
        assert!(close(g.variance / g.n as f64, 2.0 / 3.0, 1e-12), "{g:?}");
        // One wild value among five moves the interval little; it widens
        // the plain one several times over.
        let calm = [20.0, 20.2, 19.9, 20.1, 20.0];
        let wild = [20.0, 20.2, 19.9, 20.1, 17.0];
        let other = Group::of(&[21.0, 21.2, 20.9, 21.1, 21.0], 0.0).expect("group");
        let width = |g: &Group| {
            let (lo, hi) = welch_interval(g, &other, 0.95).expect("interval");
            hi - lo
        };
        let (t_calm, t_wild) = (Group::trimmed(&calm, 0.0).expect("g"), Group::trimmed(&wild, 0.0).expect("g"));
        assert!(width(&t_wild) < 2.0 * width(&t_calm), "{} {}", width(&t_wild), width(&t_calm));
        let plain = Group::of(&wild, 0.0).expect("g");
        assert!(width(&plain) > 3.0 * width(&t_wild), "{} {}", width(&plain), width(&t_wild));
    }

    #[test]
    fn a_known_variance_widens_the_interval_with_normal_quantiles() {
        // Nothing estimated: ±1.96 × √(known_a + known_b).
        let a = Group::of(&[1.0, 1.0, 1.0], 0.5).expect("group");
        let b = Group::of(&[3.0, 3.0, 3.0], 0.5).expect("group");
        let (lo, hi) = welch_interval(&a, &b, 0.95).expect("interval");
        assert!(close(lo, 2.0 - 1.959964, 1e-5) && close(hi, 2.0 + 1.959964, 1e-5), "{lo} {hi}");
        // Spread and a known part together: wider than either alone.
        let spread = Group::of(&[0.0, 2.0, 1.0], 0.0).expect("group");
        let both = Group { known: 0.5, ..spread };
        let width = |g: &Group| {
            let (lo, hi) = welch_interval(g, g, 0.95).expect("interval");
            hi - lo
        };
        assert!(width(&both) > width(&spread) && width(&both) > width(&a));
    }
}
