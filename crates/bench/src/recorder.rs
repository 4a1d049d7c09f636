//! Per-test recording: every I/O's latency into an HDR histogram, and bytes
//! completed per fixed interval for throughput-over-time plots. A traced
//! recorder also keeps each I/O's completion time and latency, for studies
//! that plot single I/Os (the `profile` command's speed curves and scatter).
//!
//! A recorder counts from its start. A *windowed* one (the quick profile's
//! steady windows) counts from its first completion after the start to the
//! first completion at or after the time it is told to close, that first
//! one included and the last one not, and its window lasts between those
//! two completions. Measuring between two events of the same kind is what
//! a reciprocal frequency counter does: for a device that completes
//! requests in bursts (a rate limiter's time slices, a queue of 64 draining
//! at once) a window cut at two arbitrary times would gain or lose a
//! burst, one cut at two burst starts holds whole ones.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use storage_scoring::schema::Latency;

/// Throughput is bucketed in intervals of this length.
pub const INTERVAL: Duration = Duration::from_millis(500);

/// Records one test.
#[derive(Debug)]
pub struct Recorder {
    histogram: Histogram<u32>,
    start: Instant,
    interval_bytes: Vec<u64>,
    last: Option<Instant>,
    /// Every I/O, when traced.
    trace: Option<Vec<Traced>>,
    pub ios: u64,
    pub bytes: u64,
    /// The interval of the last completion time recorded.
    slot_of: Option<(Instant, usize)>,
    /// For a windowed recorder: its first counted completion, the time it
    /// closes from, and the completion that closed it.
    window: Option<Window>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Window {
    first: Option<Instant>,
    close_from: Option<Instant>,
    closed: Option<Instant>,
}

/// One I/O of a traced run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traced {
    /// When it completed, from the start of the run.
    pub done: Duration,
    pub latency: Duration,
}

impl Recorder {
    pub fn new(start: Instant) -> Self {
        // 1 ns .. 1 h at 3 significant figures, u32 counters: about 130 KiB,
        // which matters with one recorder per worker thread (64 at QD64).
        let histogram = Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
            .unwrap_or_else(|_| unreachable!("the bounds above are valid"));
        Recorder {
            histogram,
            start,
            interval_bytes: Vec::new(),
            last: None,
            trace: None,
            ios: 0,
            bytes: 0,
            slot_of: None,
            window: None,
        }
    }

    /// Counts between completions, as the module says, when `on`.
    pub fn windowed(mut self, on: bool) -> Self {
        self.window = on.then(Window::default);
        self
    }

    /// A windowed recorder closes with its first completion at or after
    /// `at` (the first call wins); others ignore this.
    pub fn close_from(&mut self, at: Instant) {
        if let Some(w) = &mut self.window {
            w.close_from.get_or_insert(at);
        }
    }

    /// How long the counted I/Os took: from the start to the last
    /// completion, or for a windowed recorder, between the completions that
    /// opened and closed its window (the last counted one, if none closed it).
    pub fn elapsed(&self) -> Duration {
        let end = match self.window {
            Some(Window { first: Some(first), closed, .. }) => {
                return closed.or(self.last).map_or(Duration::ZERO, |end| end.saturating_duration_since(first));
            }
            _ => self.last,
        };
        end.map_or(Duration::ZERO, |end| end.saturating_duration_since(self.start))
    }

    /// Also keeps every I/O (16 bytes each) when `on`.
    pub fn traced(mut self, on: bool) -> Self {
        if on {
            self.trace = Some(Vec::new());
        }
        self
    }

    /// Records one completed I/O of `bytes` that took `latency`, finishing
    /// at `now`; one that finished before the recorder's start (in a ramp)
    /// is not counted.
    pub fn record(&mut self, now: Instant, latency: Duration, bytes: u64) {
        if now < self.start {
            return;
        }
        if let Some(w) = &mut self.window {
            if w.close_from.is_some_and(|at| now >= at) {
                w.closed.get_or_insert(now);
            }
            if w.closed.is_some_and(|closed| now >= closed) {
                return;
            }
            w.first.get_or_insert(now);
        }
        let nanos = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.histogram.saturating_record(nanos);
        self.ios += 1;
        self.bytes += bytes;
        self.last = self.last.max(Some(now));
        // The io_uring engine reads the clock once per batch of completions:
        // the batch shares its interval, found once.
        let slot = match self.slot_of {
            Some((at, slot)) if at == now => slot,
            _ => {
                let slot = (now.saturating_duration_since(self.start).as_nanos() / INTERVAL.as_nanos()) as usize;
                self.slot_of = Some((now, slot));
                slot
            }
        };
        if slot >= self.interval_bytes.len() {
            // Bounded by the test's length: one slot per half second.
            self.interval_bytes.resize(slot + 1, 0);
        }
        self.interval_bytes[slot] += bytes;
        if let Some(trace) = &mut self.trace {
            trace.push(Traced { done: now.saturating_duration_since(self.start), latency });
        }
    }

    /// Merges another recorder's figures (from a worker thread) into this
    /// one. Windows merge to the earliest opening and the earliest close.
    pub fn merge(&mut self, other: &Recorder) {
        if let Some(theirs) = other.window {
            let mine = self.window.get_or_insert_with(Window::default);
            let earliest = |a: Option<Instant>, b: Option<Instant>| match (a, b) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            mine.first = earliest(mine.first, theirs.first);
            mine.closed = earliest(mine.closed, theirs.closed);
            mine.close_from = earliest(mine.close_from, theirs.close_from);
        }
        let _ = self.histogram.add(&other.histogram);
        self.ios += other.ios;
        self.bytes += other.bytes;
        self.last = self.last.max(other.last);
        if other.interval_bytes.len() > self.interval_bytes.len() {
            self.interval_bytes.resize(other.interval_bytes.len(), 0);
        }
        for (mine, theirs) in self.interval_bytes.iter_mut().zip(&other.interval_bytes) {
            *mine += theirs;
        }
        if let Some(theirs) = &other.trace {
            let offset = other.start.saturating_duration_since(self.start);
            let mine = self.trace.get_or_insert_with(Vec::new);
            mine.extend(theirs.iter().map(|t| Traced { done: t.done + offset, ..*t }));
            mine.sort_by_key(|t| t.done);
        }
    }

    /// Every I/O in completion order, when the recorder was [`traced`](Self::traced).
    pub fn trace(&self) -> &[Traced] {
        self.trace.as_deref().unwrap_or_default()
    }

    /// When the last recorded I/O completed.
    pub fn last_completion(&self) -> Option<Instant> {
        self.last
    }

    /// Latency percentiles in microseconds.
    pub fn latency(&self) -> Latency {
        let us = |nanos: u64| (nanos as f64 / 1000.0 * 10.0).round() / 10.0;
        if self.histogram.is_empty() {
            return Latency::default();
        }
        Latency {
            p50_us: us(self.histogram.value_at_quantile(0.50)),
            p99_us: us(self.histogram.value_at_quantile(0.99)),
            p99_9_us: us(self.histogram.value_at_quantile(0.999)),
            max_us: us(self.histogram.max()),
            mean_us: (self.histogram.mean() / 1000.0 * 10.0).round() / 10.0,
        }
    }

    /// Throughput per interval in MiB/s, for a test that lasted `elapsed`.
    /// The last interval is usually partial and is divided by its own length.
    pub fn intervals_mib_s(&self, elapsed: Duration) -> Vec<f64> {
        let full = INTERVAL.as_secs_f64();
        let last = self.interval_bytes.len().saturating_sub(1);
        self.interval_bytes
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let secs = if i == last { (elapsed.as_secs_f64() - i as f64 * full).clamp(1e-6, full) } else { full };
                ((b as f64 / secs / 1_048_576.0) * 100.0).round() / 100.0
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_intervals() {
        let start = Instant::now();
        let mut r = Recorder::new(start);
        for i in 1..=1000u64 {
            r.record(start + Duration::from_millis(i), Duration::from_micros(i), 4096);
        }
        let lat = r.latency();
        assert!((lat.p50_us - 500.0).abs() < 1.0, "{lat:?}");
        assert!((lat.max_us - 1000.0).abs() < 1.0, "{lat:?}");
        assert_eq!(r.ios, 1000);
        let iv = r.intervals_mib_s(Duration::from_millis(1001));
        assert_eq!(iv.len(), 3);
        // 499 I/Os of 4 KiB in the first half second.
        assert!((iv[0] - 499.0 * 4096.0 / 0.5 / 1_048_576.0).abs() < 0.01);
        // The last interval (1000..1001 ms) holds one I/O: its rate is over
        // that 1 ms, not over a whole 500 ms.
        assert!((iv[2] - 4096.0 / 0.001 / 1_048_576.0).abs() < 0.1, "{iv:?}");
        assert!(r.trace().is_empty(), "not traced");
    }

    #[test]
    fn a_window_counts_from_one_burst_start_to_the_next() {
        // 80 I/Os at the start of every 100 ms, 1 ms apart (a throttle of
        // 800 IOPS), a 250 ms ramp, closed from 1.03 s: the window holds
        // the bursts of 0.3 s to 1.0 s and lasts from 0.3 s to 1.1 s.
        let start = Instant::now();
        let mut r = Recorder::new(start + Duration::from_millis(250)).windowed(true);
        for slice in 0..15u64 {
            if slice == 11 {
                r.close_from(start + Duration::from_millis(1030));
            }
            for i in 0..80 {
                let at = start + Duration::from_millis(slice * 100) + Duration::from_micros(i * 100);
                r.record(at, Duration::from_micros(50), 4096);
            }
        }
        assert_eq!(r.ios, 8 * 80);
        assert_eq!(r.elapsed(), Duration::from_millis(800));
        // The rate: exactly the throttle's, where 0.25 to 1.03 s cut at
        // arbitrary times would say 640 / 0.78 = 820.
        assert_eq!(r.ios as f64 / r.elapsed().as_secs_f64(), 800.0);
        // Not windowed: from the start to the last completion, all counted.
        let plain = Recorder::new(start);
        assert_eq!(plain.elapsed(), Duration::ZERO);
    }

    #[test]
    fn a_traced_merge_keeps_every_io_in_completion_order() {
        let start = Instant::now();
        let mut a = Recorder::new(start).traced(true);
        let mut b = Recorder::new(start).traced(true);
        a.record(start + Duration::from_millis(3), Duration::from_millis(3), 4096);
        b.record(start + Duration::from_millis(1), Duration::from_millis(1), 4096);
        a.record(start + Duration::from_millis(5), Duration::from_millis(2), 4096);
        let mut all = Recorder::new(start);
        all.merge(&a);
        all.merge(&b);
        let done: Vec<u128> = all.trace().iter().map(|t| t.done.as_millis()).collect();
        assert_eq!(done, vec![1, 3, 5]);
        assert_eq!(all.trace()[2].latency, Duration::from_millis(2));
    }
}
