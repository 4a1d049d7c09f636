//! When to try again, and how long to wait: pure, so the schedule is tested
//! without a network.
//!
//! Retried: connection errors and timeouts, 429 and 5xx (but 501 and 505,
//! which no retry changes). Waits grow exponentially from [`Policy::base`]
//! up to [`Policy::cap`], with "equal jitter" (half the wait fixed, half
//! random), so that clients that failed together do not come back together.
//! A `Retry-After` from the server is honoured as given, up to
//! [`Policy::longest_wait`]; a longer one ends the attempts, since a user at
//! a terminal should rather be told to send later. Every retry reuses the
//! same Idempotency-Key, so none can store a second copy.

use std::time::{Duration, SystemTime};

/// How many attempts, and how long between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// Attempts in all, the first included.
    pub attempts: u32,
    /// The wait before the first retry (before jitter).
    pub base: Duration,
    /// No computed wait exceeds this.
    pub cap: Duration,
    /// The longest `Retry-After` waited out.
    pub longest_wait: Duration,
}

impl Default for Policy {
    fn default() -> Self {
        // 5 attempts, about 0.4 + 0.8 + 1.5 + 3 s of waiting between them.
        Policy {
            attempts: 5,
            base: Duration::from_millis(500),
            cap: Duration::from_secs(8),
            longest_wait: Duration::from_secs(60),
        }
    }
}

/// What an HTTP status means for the upload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 2xx: accepted (or accepted before: an idempotent replay).
    Success,
    /// 429 or a 5xx that may pass: try again.
    Transient,
    /// Anything else: the answer will not change by asking again.
    Final,
}

pub fn classify(status: u16) -> StatusClass {
    match status {
        200..=299 => StatusClass::Success,
        429 => StatusClass::Transient,
        501 | 505 => StatusClass::Final,
        500..=599 => StatusClass::Transient,
        _ => StatusClass::Final,
    }
}

impl Policy {
    /// The wait before retry number `retry` (1 for the first retry), with
    /// `jitter` drawn uniformly from [0, 1): between half and all of
    /// `min(cap, base * 2^(retry-1))`.
    pub fn backoff(&self, retry: u32, jitter: f64) -> Duration {
        let doubling = 2u32.saturating_pow(retry.saturating_sub(1));
        let full = self.base.saturating_mul(doubling).min(self.cap);
        let jitter = if jitter.is_finite() { jitter.clamp(0.0, 1.0) } else { 0.0 };
        full / 2 + full.mul_f64(jitter / 2.0)
    }

    /// The wait before retry number `retry` after a transient failure, or
    /// `Err(asked)` when the server asked for a longer wait than we keep a
    /// user waiting.
    pub fn wait(&self, retry: u32, retry_after: Option<Duration>, jitter: f64) -> Result<Duration, Duration> {
        match retry_after {
            Some(asked) if asked > self.longest_wait => Err(asked),
            // The server knows its own load: wait what it says, not less.
            Some(asked) => Ok(asked.max(Duration::from_millis(50))),
            None => Ok(self.backoff(retry, jitter)),
        }
    }
}

/// A `Retry-After` value (RFC 9110 §10.2.3): delay-seconds, or an
/// HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`, or the two obsolete forms
/// a recipient must still read). A date in the past means now. `None` for
/// anything else.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_that_may_pass_are_retried_and_no_others() {
        assert_eq!(classify(201), StatusClass::Success);
        assert_eq!(classify(200), StatusClass::Success);
        for transient in [429, 500, 502, 503, 504, 599] {
            assert_eq!(classify(transient), StatusClass::Transient, "{transient}");
        }
        for last in [301, 400, 401, 404, 413, 422, 501, 505] {
            assert_eq!(classify(last), StatusClass::Final, "{last}");
        }
    }

    #[test]
    fn backoff_doubles_with_equal_jitter_up_to_the_cap() {
        let p = Policy::default();
        assert_eq!(p.backoff(1, 0.0), Duration::from_millis(250));
        assert!(p.backoff(1, 0.999) > Duration::from_millis(499) && p.backoff(1, 0.999) <= Duration::from_millis(500));
        assert_eq!(p.backoff(2, 0.0), Duration::from_millis(500));
        assert_eq!(p.backoff(3, 0.5), Duration::from_millis(1500));
        assert_eq!(p.backoff(5, 0.0), Duration::from_secs(4));
        // Capped at 8 s however many retries, and never more than the cap.
        assert_eq!(p.backoff(60, 1.0), Duration::from_secs(8));
        assert_eq!(p.backoff(u32::MAX, f64::NAN), Duration::from_secs(4));
        // Across the attempts the default policy makes, the waits add up to
        // at most 7.5 s: a dead server is reported within seconds.
        let worst: Duration = (1..p.attempts).map(|r| p.backoff(r, 1.0)).sum();
        assert!(worst <= Duration::from_millis(7500), "{worst:?}");
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_longest_wait() {
        let p = Policy::default();
        assert_eq!(p.wait(1, Some(Duration::from_secs(2)), 0.0), Ok(Duration::from_secs(2)));
        assert_eq!(p.wait(4, Some(Duration::ZERO), 0.7), Ok(Duration::from_millis(50)));
        assert_eq!(p.wait(1, Some(Duration::from_secs(3600)), 0.0), Err(Duration::from_secs(3600)));
        assert_eq!(p.wait(2, None, 0.0), Ok(Duration::from_millis(500)));
    }

    #[test]
    fn retry_after_takes_seconds_or_an_http_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now), Some(Duration::ZERO));
        // The obsolete RFC 850 and asctime forms.
        assert_eq!(parse_retry_after("Sunday, 06-Nov-94 08:51:37 GMT", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("Sun Nov  6 08:51:37 1994", now), Some(Duration::from_secs(120)));
        assert_eq!(parse_retry_after("99999999999999999999999", now), Some(Duration::from_secs(u64::MAX)));
        for junk in ["", "-1", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 PST", "Sun, 32 Nov 1994 08:49:37 GMT"] {
            assert_eq!(parse_retry_after(junk, now), None, "{junk:?}");
        }
    }
}
