//! Request latencies as a log-bucketed histogram: small, mergeable across
//! the sessions of a resumed run, and saved in the state file.

use serde::{Deserialize, Serialize};

/// Eight buckets per doubling: a percentile is within 9% of the truth.
const PER_OCTAVE: f64 = 8.0;
const BUCKETS: usize = 8 * 40;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Sparse: (bucket, count), bucket = floor(log2(µs) × 8).
    buckets: Vec<(u16, u64)>,
}

impl Latency {
    pub fn add(&mut self, seconds: f64) {
        let micros = (seconds * 1e6).max(1.0);
        let bucket = ((micros.log2() * PER_OCTAVE) as usize).min(BUCKETS - 1) as u16;
        match self.buckets.binary_search_by_key(&bucket, |&(b, _)| b) {
            Ok(i) => self.buckets[i].1 += 1,
            Err(i) => self.buckets.insert(i, (bucket, 1)),
        }
    }

    /// The `q` quantile (0..=1) in milliseconds, the bucket's upper edge;
    /// 0 with no samples.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        let total: u64 = self.buckets.iter().map(|&(_, n)| n).sum();
        if total == 0 {
            return 0.0;
        }
        let rank = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for &(bucket, n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return 2f64.powf(f64::from(bucket + 1) / PER_OCTAVE) / 1000.0;
            }
        }
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_sees_the_stall_and_not_the_crowd() {
        let mut l = Latency::default();
        for _ in 0..98 {
            l.add(0.010);
        }
        l.add(0.5);
        l.add(0.5);
        let p50 = l.quantile_ms(0.5);
        let p99 = l.quantile_ms(0.99);
        assert!((10.0..11.0).contains(&p50), "{p50}");
        assert!((500.0..550.0).contains(&p99), "{p99}");
        assert_eq!(Latency::default().quantile_ms(0.99), 0.0);
    }
}
