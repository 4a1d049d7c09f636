//! When a quick figure has settled (docs/measurements.md, the quick
//! profile): its window ends when the figure stops moving, not after a
//! fixed number of bytes, so a steady device is measured briefly and an
//! unsteady one for longer.
//!
//! The first moments of a test are done but not counted ([`Steady::ramp`],
//! fio's `ramp_time`): a queue filling, a rate limiter's first allowance, a
//! cache taking the first writes. The reference tools' long windows make
//! them weigh little; a short window has to leave them out to agree.
//!
//! As the test goes, the work done is observed against time, and two rates
//! are fitted to it by least squares: over the whole window, and over its
//! last third. The window may close once it is at least [`Steady::min`]
//! long, holds enough requests to resolve the tolerance, and the two agree
//! within ±[`Steady::tolerance`]: the device is doing now what it did on
//! average, and the average rests on enough requests that a third of them
//! says the same. This is fio's steady-state
//! test (`steadystate=iops_slope:…`: the slope of a trailing window's
//! samples within a bound) turned to the question a short window asks.
//! Fitted rates see through a device that completes requests in bursts (a
//! rate limiter's time slices), whose running figure saws by a burst over
//! the time so far. At [`Steady::max`] the window closes anyway, and the
//! figure is marked approximate with the difference it still had. Pure:
//! times and counts in, a decision out.

use std::time::Duration;

/// How a window decides it has seen enough.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steady {
    /// Done but not counted, before the window opens.
    pub ramp: Duration,
    /// No window is shorter (setup, timer resolution and the device's first
    /// requests weigh on a shorter one).
    pub min: Duration,
    /// No window is longer; a figure still moving then is approximate.
    pub max: Duration,
    /// The half-width of the band the figure must stay in, as a fraction.
    pub tolerance: f64,
}

/// A window of N requests cannot tell its figure better than one request in
/// N: it closes only once it holds at least `1 / tolerance` of them (50 for
/// ±2%), which matters for large requests on a slow device (hdparm's 2 MiB
/// reads at 25 a second).
fn min_requests(rule: &Steady) -> f64 {
    (1.0 / rule.tolerance).ceil()
}

/// Fewest observations in the last third to judge it by.
const MIN_POINTS: usize = 5;

/// One window being watched.
#[derive(Debug, Clone)]
pub struct Watch {
    rule: Steady,
    /// The first observation after the ramp: (seconds, units done).
    origin: Option<(f64, f64)>,
    /// (seconds since the window opened, units done since).
    points: Vec<(f64, f64)>,
    /// Set once the window has been told to close: the judgement stands on
    /// what was seen until then (the requests still in flight, and any
    /// issued until the window's end, are not what it was judged by).
    closed: bool,
}

impl Watch {
    pub fn new(rule: Steady) -> Self {
        Watch { rule, origin: None, points: Vec::new(), closed: false }
    }

    /// `done` requests are complete `elapsed` after the test started, ramp
    /// included. True when the window should close now.
    pub fn observe(&mut self, elapsed: Duration, done: f64) -> bool {
        if self.closed {
            return true;
        }
        if elapsed < self.rule.ramp {
            return false;
        }
        let (t0, d0) = *self.origin.get_or_insert((elapsed.as_secs_f64(), done));
        let t = elapsed.as_secs_f64() - t0;
        let d = done - d0;
        if t <= 0.0 {
            return false;
        }
        self.points.push((t, d));
        let window = Duration::from_secs_f64(t);
        self.closed = window >= self.rule.max || (window >= self.rule.min && self.settled());
        self.closed
    }

    /// Did the figure settle within the tolerance?
    pub fn settled(&self) -> bool {
        let (last, done) = self.points.last().copied().unwrap_or_default();
        last >= self.rule.min.as_secs_f64()
            && done >= min_requests(&self.rule)
            && self.spread().is_some_and(|s| s <= self.rule.tolerance)
    }

    /// How far the rate over the window's last third is from the rate over
    /// the whole window, as a fraction of the latter. `None` before there
    /// are enough observations to say.
    pub fn spread(&self) -> Option<f64> {
        let &(end, _) = self.points.last()?;
        let recent: Vec<(f64, f64)> = self.points.iter().copied().filter(|p| p.0 >= end * 2.0 / 3.0).collect();
        if recent.len() < MIN_POINTS {
            return None;
        }
        let all = slope(&self.points)?;
        let now = slope(&recent)?;
        (all > 0.0).then(|| (now / all - 1.0).abs())
    }

    pub fn rule(&self) -> Steady {
        self.rule
    }
}

/// The least-squares slope of y on x; `None` when x does not vary.
fn slope(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    let (mx, my) = points.iter().fold((0.0, 0.0), |(sx, sy), p| (sx + p.0, sy + p.1));
    let (mx, my) = (mx / n, my / n);
    let (sxy, sxx) =
        points.iter().fold((0.0, 0.0), |(sxy, sxx), p| (sxy + (p.0 - mx) * (p.1 - my), sxx + (p.0 - mx) * (p.0 - mx)));
    (sxx > 0.0).then(|| sxy / sxx)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULE: Steady =
        Steady { ramp: Duration::ZERO, min: Duration::from_secs(1), max: Duration::from_secs(3), tolerance: 0.02 };

    /// Feeds `done(t)` every `step` seconds; returns when the window closed.
    fn close_time(rule: Steady, step: f64, done: impl Fn(f64) -> f64) -> (f64, Watch) {
        let mut watch = Watch::new(rule);
        let mut t = step;
        loop {
            if watch.observe(Duration::from_secs_f64(t), done(t)) {
                return (t, watch);
            }
            t += step;
        }
    }

    #[test]
    fn a_steady_rate_closes_at_the_minimum() {
        let (t, watch) = close_time(RULE, 0.05, |t| 1000.0 * t);
        assert!((t - 1.0).abs() < 0.051, "{t}");
        assert!(watch.settled() && watch.spread().is_some_and(|s| s < 1e-9), "{:?}", watch.spread());
    }

    #[test]
    fn a_rate_limiter_in_bursts_settles_at_the_minimum() {
        // 80 I/Os at the start of every 100 ms (a blkio throttle of 800
        // IOPS), seen every 33 ms: the running figure done/t saws by ±40
        // I/Os over t (±4% at 1 s), the fitted rates do not.
        let bursts = |t: f64| 80.0 * ((t / 0.1).floor() + 1.0);
        let (t, watch) = close_time(RULE, 0.033, bursts);
        assert!(watch.settled(), "{:?}", watch.spread());
        assert!(t < 1.1, "closed at {t}");
    }

    #[test]
    fn noise_needs_more_time_than_a_steady_rate() {
        // 1000 I/Os a second with a random walk on top (requests of varying
        // service time): settles, later than a clean rate does.
        let mut state = 12345u64;
        let mut walk = 0.0;
        let noisy: Vec<f64> = (0..200)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                walk += ((state >> 33) as f64 / (1u64 << 31) as f64 - 0.5) * 40.0;
                walk
            })
            .collect();
        let (t, watch) = close_time(RULE, 0.025, |t| 1000.0 * t + noisy[((t / 0.025) as usize).min(199)]);
        assert!(t > 1.0, "{t}: the noise is seen");
        assert!(watch.spread().is_some());
    }

    #[test]
    fn a_figure_still_moving_at_the_maximum_is_not_settled() {
        // Ever slower: done ∝ √t, so the rate over the last third is far
        // below the whole window's.
        let (t, watch) = close_time(RULE, 0.05, |t| 1000.0 * t.sqrt());
        assert!((t - 3.0).abs() < 0.051, "{t}");
        assert!(!watch.settled() && watch.spread().is_some_and(|s| s > 0.02), "{:?}", watch.spread());
    }

    #[test]
    fn the_ramp_is_left_out() {
        // A burst of 500 I/Os in the first 50 ms, then 1000 I/Os a second:
        // with a 0.25 s ramp the window sees only the steady rate.
        let rule = Steady { ramp: Duration::from_millis(250), ..RULE };
        let (t, watch) = close_time(rule, 0.05, |t| if t < 0.05 { 10_000.0 * t } else { 500.0 + 1000.0 * (t - 0.05) });
        assert!(t < 1.35, "closed at {t}");
        assert!(watch.settled());
        let rate = slope(&watch.points).expect("a rate");
        assert!((rate - 1000.0).abs() < 1e-6, "{rate}");
    }

    #[test]
    fn a_window_holds_enough_requests_to_resolve_its_tolerance() {
        // 25 large reads a second, perfectly regular: settled in rate at
        // once, but ±2% needs 50 of them, 2 s.
        let (t, watch) = close_time(RULE, 0.04, |t| (t * 25.0).floor());
        assert!(watch.settled());
        assert!((t - 2.0).abs() < 0.05, "closed at {t}");
    }

    #[test]
    fn the_judgement_is_the_one_made_when_the_window_closed() {
        let (t, mut watch) = close_time(RULE, 0.05, |t| 1000.0 * t);
        assert!(watch.settled());
        // A queue draining afterwards changes nothing.
        assert!(watch.observe(Duration::from_secs_f64(t + 0.05), 1000.0 * t + 500.0));
        assert!(watch.settled());
    }

    #[test]
    fn too_few_observations_say_nothing() {
        let mut watch = Watch::new(RULE);
        assert!(!watch.observe(Duration::from_millis(1500), 100.0));
        assert!(!watch.observe(Duration::from_millis(1600), 106.0));
        assert_eq!(watch.spread(), None);
        assert!(!watch.settled());
        assert!(!watch.observe(Duration::ZERO, 0.0), "nothing done yet is no observation");
    }
}
