//! Per-client-address token buckets for submissions (`--rate-limit N`: N
//! per minute, bursts of up to N). A refused request learns from
//! `Retry-After` when the next token arrives.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct RateLimiter {
    per_minute: f64,
    buckets: Mutex<HashMap<IpAddr, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Buckets idle this long are full again and can be forgotten.
const FORGET_AFTER: Duration = Duration::from_secs(120);

impl RateLimiter {
    pub fn new(per_minute: u32) -> Self {
        RateLimiter { per_minute: f64::from(per_minute), buckets: Mutex::new(HashMap::new()) }
    }

    /// Whether `client` has no token left now: the seconds until one is
    /// due, without taking any.
    pub fn exhausted(&self, client: IpAddr, now: Instant) -> Option<u64> {
        let buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        let bucket = buckets.get(&client)?;
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        let tokens = (bucket.tokens + elapsed * self.per_minute / 60.0).min(self.per_minute);
        (tokens < 1.0).then(|| ((1.0 - tokens) * 60.0 / self.per_minute).ceil().max(1.0) as u64)
    }

    /// Takes a token for `client`, or says how many seconds until one is due.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), u64> {
        let mut buckets = self.buckets.lock().unwrap_or_else(|p| p.into_inner());
        if buckets.len() > 10_000 {
            buckets.retain(|_, b| now.saturating_duration_since(b.updated) < FORGET_AFTER);
        }
        let bucket = buckets.entry(client).or_insert(Bucket { tokens: self.per_minute, updated: now });
        let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
        bucket.tokens = (bucket.tokens + elapsed * self.per_minute / 60.0).min(self.per_minute);
        bucket.updated = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = (1.0 - bucket.tokens) * 60.0 / self.per_minute;
            Err(wait.ceil().max(1.0) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_one_token_per_interval() {
        let limiter = RateLimiter::new(3);
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let t0 = Instant::now();
        assert!(limiter.take(ip, t0).is_ok());
        assert!(limiter.take(ip, t0).is_ok());
        assert!(limiter.take(ip, t0).is_ok());
        assert_eq!(limiter.take(ip, t0), Err(20));
        assert!(limiter.take(ip, t0 + Duration::from_secs(20)).is_ok());
        let other: IpAddr = "127.0.0.2".parse().unwrap();
        assert!(limiter.take(other, t0).is_ok(), "buckets are per address");
    }
}
