//! Logarithmic scales, for data that spans decades: latencies (µs to s),
//! transfer sizes (512 B to 8 MiB) and per-I/O rates.

/// Maps a positive data interval onto a pixel interval, logarithmically.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Log {
    pub domain: (f64, f64),
    pub range: (f64, f64),
}

impl Log {
    /// A scale over the positive `values`, widened to whole powers of `base`.
    pub fn covering(values: impl IntoIterator<Item = f64>, base: f64, range: (f64, f64)) -> Log {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.into_iter().filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, base);
        }
        let lo = base.powf(lo.log(base).floor());
        let mut hi = base.powf(hi.log(base).ceil());
        if hi <= lo {
            hi = lo * base;
        }
        Log { domain: (lo, hi), range }
    }

    pub fn map(&self, v: f64) -> f64 {
        let (d0, d1) = (self.domain.0.ln(), self.domain.1.ln());
        let (r0, r1) = self.range;
        if d1 == d0 || v.is_nan() || v <= 0.0 {
            return r0;
        }
        r0 + (v.ln() - d0) / (d1 - d0) * (r1 - r0)
    }

    /// Powers of ten inside the domain, with 2× and 5× between them when
    /// the domain spans few decades.
    pub fn decade_ticks(&self) -> Vec<f64> {
        let (lo, hi) = self.domain;
        let decades = (hi / lo).log10();
        let steps: &[f64] = if decades <= 2.5 { &[1.0, 2.0, 5.0] } else { &[1.0] };
        let mut ticks = Vec::new();
        let mut power = 10f64.powf(lo.log10().floor());
        while power <= hi * 1.000_001 && ticks.len() < 60 {
            for step in steps {
                let t = power * step;
                if t >= lo * 0.999_999 && t <= hi * 1.000_001 {
                    ticks.push(t);
                }
            }
            power *= 10.0;
        }
        ticks
    }

    /// Powers of two inside the domain, every `every`-th one.
    pub fn binary_ticks(&self, every: u32) -> Vec<f64> {
        let (lo, hi) = self.domain;
        let first = lo.log2().ceil() as i32;
        let last = hi.log2().floor() as i32;
        (first..=last).filter(|e| (e - first) % every.max(1) as i32 == 0).map(|e| 2f64.powi(e)).collect()
    }
}

/// `512 B`, `4 KiB`, `1 MiB`: a byte count as a tick label.
pub fn bytes_label(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    let text = if value.fract() == 0.0 { format!("{value:.0}") } else { format!("{value:.1}") };
    format!("{text} {}", UNITS[unit])
}

/// A duration in µs as a tick label: `50 µs`, `2 ms`, `1.5 s`.
pub fn micros_label(us: f64) -> String {
    let trim = |v: f64| {
        let text = format!("{v:.1}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    };
    if us >= 1e6 {
        format!("{} s", trim(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", trim(us / 1e3))
    } else {
        format!("{} µs", trim(us))
    }
}

/// A rate or other plain number on a log axis: `0.5`, `20`, `1000`.
pub fn plain_label(v: f64) -> String {
    if v >= 1.0 {
        format!("{v:.0}")
    } else {
        let text = format!("{v:.3}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_whole_decades_and_maps_logarithmically() {
        let s = Log::covering([3.0, 700.0], 10.0, (0.0, 300.0));
        assert_eq!(s.domain, (1.0, 1000.0));
        assert!((s.map(10.0) - 100.0).abs() < 1e-9);
        assert!((s.map(100.0) - 200.0).abs() < 1e-9);
        assert_eq!(s.decade_ticks(), vec![1.0, 10.0, 100.0, 1000.0]);
        let narrow = Log::covering([2.0, 40.0], 10.0, (0.0, 1.0));
        assert_eq!(narrow.decade_ticks(), vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]);
    }

    #[test]
    fn binary_scales_for_sizes() {
        let s = Log::covering([512.0, 8.0 * 1024.0 * 1024.0], 2.0, (0.0, 1.0));
        assert_eq!(s.domain, (512.0, 8_388_608.0));
        let ticks = s.binary_ticks(2);
        assert_eq!(ticks.first(), Some(&512.0));
        assert_eq!(ticks.len(), 8);
    }

    #[test]
    fn labels_carry_units() {
        assert_eq!(bytes_label(512.0), "512 B");
        assert_eq!(bytes_label(4096.0), "4 KiB");
        assert_eq!(bytes_label(8.0 * 1024.0 * 1024.0), "8 MiB");
        assert_eq!(micros_label(50.0), "50 µs");
        assert_eq!(micros_label(2500.0), "2.5 ms");
        assert_eq!(micros_label(1.5e6), "1.5 s");
        assert_eq!(plain_label(0.05), "0.05");
        assert_eq!(plain_label(200.0), "200");
    }
}
