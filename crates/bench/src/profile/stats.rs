//! Figures from a traced run: latency percentiles and a logarithmic
//! histogram of single I/Os, per-I/O rates, and an even sample of them.

use std::time::Duration;

use storage_scoring::profile::LatencyHistogram;
use storage_scoring::schema::Latency;

use crate::recorder::Traced;

/// Buckets per power of ten: fine enough to show two humps a factor of
/// two apart, coarse enough for a few hundred I/Os.
pub const PER_DECADE: u32 = 10;

/// Percentiles of `latencies`, in µs rounded to 0.1, as [`Latency`] holds them.
pub fn latency(latencies: &[Duration]) -> Option<Latency> {
    if latencies.is_empty() {
        return None;
    }
    let mut us: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let round = |v: f64| (v * 10.0).round() / 10.0;
    let mean = us.iter().sum::<f64>() / us.len() as f64;
    Some(Latency {
        p50_us: round(quantile(&us, 0.50)),
        p99_us: round(quantile(&us, 0.99)),
        p99_9_us: round(quantile(&us, 0.999)),
        max_us: round(us[us.len() - 1]),
        mean_us: round(mean),
    })
}

/// The `q` quantile of sorted `values` (nearest rank, as HdrHistogram and
/// fio's percentiles take it).
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Counts `latencies` in [`PER_DECADE`] logarithmic buckets from 1 µs.
pub fn histogram(latencies: &[Duration]) -> Option<LatencyHistogram> {
    if latencies.is_empty() {
        return None;
    }
    let per = f64::from(PER_DECADE);
    let mut counts = std::collections::BTreeMap::<i64, u64>::new();
    for d in latencies {
        let us = (d.as_secs_f64() * 1e6).max(1.0);
        // A hair of slack so that exact bucket bounds (100 µs) land in
        // their own bucket despite rounding in log10.
        let k = (us.log10() * per + 1e-9).floor() as i64;
        *counts.entry(k).or_default() += 1;
    }
    let buckets = counts
        .into_iter()
        .map(|(k, n)| {
            let lower = 10f64.powf(k as f64 / per);
            ((lower * 1000.0).round() / 1000.0, n)
        })
        .collect();
    Some(LatencyHistogram { per_decade: PER_DECADE, buckets })
}

/// Per-I/O rates in MB/s: `bytes` over each I/O's latency.
pub fn rates(trace: &[Traced], bytes: u64) -> Vec<f64> {
    trace.iter().map(|t| bytes as f64 / t.latency.as_secs_f64().max(1e-9) / 1e6).collect()
}

/// Up to `count` values spread evenly over `values` (in run order), so that
/// a plot shows the whole run, not its beginning.
pub fn spread(values: &[f64], count: usize) -> Vec<f64> {
    if values.len() <= count {
        return values.to_vec();
    }
    (0..count).map(|i| values[i * values.len() / count]).collect()
}

/// `value` rounded to `decimals` places.
pub fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Rates as reports print them: three significant figures below 10, two
/// decimals above (0.0123, 4.56, 45.67, 456.78).
pub fn round_rate(mb_s: f64) -> f64 {
    if mb_s.abs() < 10.0 && mb_s != 0.0 {
        let digits = 2 - mb_s.abs().log10().floor() as i32;
        round_to(mb_s, digits.max(2))
    } else {
        round_to(mb_s, 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&u| Duration::from_micros(u)).collect()
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let lat = latency(&us(&(1..=1000).collect::<Vec<_>>())).expect("latency");
        assert_eq!(lat.p50_us, 500.0);
        assert_eq!(lat.p99_us, 990.0);
        assert_eq!(lat.max_us, 1000.0);
        assert!(latency(&[]).is_none());
    }

    #[test]
    fn histogram_buckets_by_decade() {
        let h = histogram(&us(&[100, 100, 105, 1000, 5000])).expect("histogram");
        assert_eq!(h.per_decade, PER_DECADE);
        assert_eq!(h.buckets[0], (100.0, 3), "{h:?}");
        assert_eq!(h.buckets[1], (1000.0, 1), "{h:?}");
        assert_eq!(h.total(), 5);
        let last = h.buckets[2].0;
        assert!(last <= 5000.0 && h.upper_us(last) > 5000.0, "{h:?}");
    }

    #[test]
    fn spread_covers_the_run() {
        let v: Vec<f64> = (0..1000).map(f64::from).collect();
        let s = spread(&v, 10);
        assert_eq!(s.len(), 10);
        assert_eq!(s[0], 0.0);
        assert_eq!(s[9], 900.0);
        assert_eq!(spread(&v[..3], 10).len(), 3);
    }

    #[test]
    fn rates_keep_three_figures() {
        assert_eq!(round_rate(0.012345), 0.0123);
        assert_eq!(round_rate(4.5678), 4.57);
        assert_eq!(round_rate(45.678), 45.68);
    }
}
