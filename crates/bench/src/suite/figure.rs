//! How a figure is made and judged: its detail (engine, latency,
//! throughput over time), the device counters around its timed window, the
//! rounding of its reference tool, and what a reader must be told: a window
//! too short to trust, a test cut short, a test so slow the card may be dying.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use storage_scoring::schema::TestDetail;

use super::Observer;
use super::steady::{Steady, Watch};
use crate::devstat::{self, DevStat, Direction, Snapshot};
use crate::engine::{Completed, Enough, REPORT_EVERY};
use crate::recorder::INTERVAL;

/// A timed window shorter than this gives a low-confidence figure: timer
/// resolution, setup and a single slow request weigh on it.
pub const MIN_WINDOW: Duration = Duration::from_secs(1);

/// A test that would run longer than this at the rate seen so far says so.
pub const SLOW_TEST: Duration = Duration::from_secs(600);

/// Adds what a reader must know about a figure: a short window, a test cut
/// short, bytes that never reached the device.
pub(crate) fn judge(detail: &mut TestDetail, max_time: Option<Duration>) {
    if detail.seconds < MIN_WINDOW.as_secs_f64() && !detail.partial {
        detail.low_confidence = true;
        detail.notes.push(format!(
            "the timed window lasted only {:.3} s (under {} s): timer resolution and setup weigh on the figure, so treat it as approximate",
            detail.seconds,
            MIN_WINDOW.as_secs()
        ));
    }
    if detail.partial {
        detail.notes.push(format!(
            "cut short by --max-time ({} s) after {} I/Os: the figure covers only those, and the score is not comparable",
            max_time.map_or(0, |t| t.as_secs()),
            detail.ios
        ));
    }
}

/// The detail of a finished workload timed over `elapsed`. An engine that
/// fell back says so in a note, so that the table a user reads tells it too.
pub(crate) fn detail(done: &Completed, elapsed: Duration) -> TestDetail {
    let notes = match (&done.engine_detail, done.fell_back) {
        (Some(how), true) => vec![format!("ran on {how}")],
        _ => Vec::new(),
    };
    TestDetail {
        engine: done.engine.to_owned(),
        engine_detail: done.engine_detail.clone(),
        bytes: done.recorder.bytes,
        ios: done.recorder.ios,
        seconds: round_to(elapsed.as_secs_f64(), 4),
        latency: done.recorder.latency(),
        intervals_mib_s: done.recorder.intervals_mib_s(elapsed),
        interval_ms: INTERVAL.as_millis() as u64,
        partial: done.partial,
        notes,
        cpu_s: Some(round_to(done.cpu.as_secs_f64(), 4)),
        ..TestDetail::default()
    }
}

/// The device counters around a timed window.
pub(crate) struct Window<'s> {
    stat: Option<&'s DevStat>,
    before: Option<Snapshot>,
}

impl<'s> Window<'s> {
    /// Opens the window: reads the counters now.
    pub fn open(stat: Option<&'s DevStat>) -> Self {
        Window { stat, before: stat.and_then(DevStat::snapshot) }
    }

    /// Closes it, filing the evidence (and a note if the bytes went elsewhere).
    pub fn close(self, detail: &mut TestDetail, direction: Direction) {
        let (Some(stat), Some(before)) = (self.stat, self.before) else { return };
        let Some(after) = stat.snapshot() else { return };
        let io = devstat::evidence(stat, before, after, direction, detail.bytes);
        if !io.reached {
            detail.notes.push(devstat::missed(&io, direction));
        }
        detail.device_io = Some(io);
    }
}

/// A quick window watched as it runs: the engine's progress reports feed
/// the [`Watch`], which sets `enough` (the workload's stop) once the figure
/// has settled or the window is as long as it may be.
pub(crate) struct Watched {
    watch: Mutex<Watch>,
    start: Instant,
    pub enough: Enough,
}

impl Watched {
    /// Starts watching now; `None` when the profile has no steady windows.
    pub fn start(rule: Option<Steady>) -> Option<Self> {
        rule.map(|rule| Watched {
            watch: Mutex::new(Watch::new(rule)),
            start: Instant::now(),
            enough: Enough::default(),
        })
    }

    /// `done` I/Os (or bytes) are complete.
    pub fn progress(&self, done: u64) {
        let close = self.watch.lock().map(|mut w| w.observe(self.start.elapsed(), done as f64)).unwrap_or(true);
        if close {
            // The window ends at a time, a reporting interval ahead, not at
            // this I/O: see [`Enough`].
            self.enough.after(Instant::now() + REPORT_EVERY);
        }
    }

    /// The ramp the engine leaves out of the figure.
    pub fn ramp(&self) -> Duration {
        self.watch.lock().map(|w| w.rule().ramp).unwrap_or_default()
    }

    /// Tells the reader of `detail` when the figure had not settled.
    pub fn judge(&self, detail: &mut TestDetail) {
        if let Ok(watch) = self.watch.lock() {
            if !watch.settled() {
                unsettled(detail, &watch);
            }
        }
    }
}

/// Marks `detail` approximate: its window closed before the figure settled.
pub(crate) fn unsettled(detail: &mut TestDetail, watch: &Watch) {
    let rule = watch.rule();
    detail.low_confidence = true;
    detail.notes.push(match watch.spread() {
        Some(spread) => format!(
            "the figure had not settled when its window closed after {:.1} s: the rate over the window's last third was {:.1}% from the whole window's (the quick profile waits for {:.0}%), so treat it as approximate",
            detail.seconds,
            spread * 100.0,
            rule.tolerance * 100.0
        ),
        None => format!(
            "the window closed after {:.2} s, too soon to see whether the figure had settled (the quick profile waits at least {} s), so treat it as approximate",
            detail.seconds,
            rule.min.as_secs_f64()
        ),
    });
}

/// The most offsets a steady window's list holds (8 MiB of them): more
/// than any device completes in a quick window but the fastest NVMe, whose
/// figure has long settled by then.
const MAX_CYCLED: usize = 1 << 20;

/// `offsets` once, or, for a steady window, over and over (up to
/// [`MAX_CYCLED`]) so that the window, not the file, decides when to stop.
pub(crate) fn cycled(offsets: Vec<u64>, steady: bool) -> Vec<u64> {
    if !steady || offsets.is_empty() {
        return offsets;
    }
    let rounds = (MAX_CYCLED / offsets.len()).max(1);
    let mut all = Vec::with_capacity(rounds * offsets.len());
    for _ in 0..rounds {
        all.extend_from_slice(&offsets);
    }
    all
}

/// Says once, in one line, that a test will take very long at the rate
/// seen so far (a dying card), with its ETA.
pub(crate) struct Eta<'a> {
    key: &'a str,
    observer: &'a dyn Observer,
    start: Instant,
    total: u64,
    unit: &'static str,
    told: AtomicBool,
}

impl<'a> Eta<'a> {
    pub fn new(key: &'a str, observer: &'a dyn Observer, total: u64, unit: &'static str) -> Self {
        Eta { key, observer, start: Instant::now(), total, unit, told: AtomicBool::new(false) }
    }

    /// `done` of `total` units are done.
    pub fn update(&self, done: u64) {
        let elapsed = self.start.elapsed();
        if done == 0 || done >= self.total || elapsed < Duration::from_secs(3) || self.told.load(Ordering::Relaxed) {
            return;
        }
        let rate = done as f64 / elapsed.as_secs_f64();
        let left = Duration::from_secs_f64((self.total - done) as f64 / rate);
        if elapsed + left > SLOW_TEST && !self.told.swap(true, Ordering::Relaxed) {
            self.observer.note(&format!(
                "{} is very slow: {done} of {} {} in {:.0} s, so about {} more at this rate (ETA {}); a card this slow may be failing, and --max-time SECS caps a run",
                self.key,
                self.total,
                self.unit,
                elapsed.as_secs_f64(),
                minutes(left),
                minutes(elapsed + left),
            ));
        }
    }
}

fn minutes(d: Duration) -> String {
    let m = d.as_secs().div_ceil(60);
    if m >= 120 { format!("{} h {} min", m / 60, m % 60) } else { format!("{m} min") }
}

pub(crate) fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// fio's IOPS, as its terse and JSON output print it: the runtime is kept
/// in whole milliseconds, rounded up (backend.c `update_runtime`), and
/// `1000 × I/Os / runtime` is an integer division (stat.c).
pub fn fio_iops(ios: u64, elapsed: Duration) -> f64 {
    let runtime_ms = u64::try_from(elapsed.as_micros().div_ceil(1000)).unwrap_or(u64::MAX).max(1);
    (ios.saturating_mul(1000) / runtime_ms) as f64
}

/// iozone's KiB/s: `(unsigned long long)(bytes / seconds) >> 10`
/// (iozone.c, write_perf_test and friends), so both steps truncate.
pub fn iozone_kib_s(bytes: u64, elapsed: Duration) -> f64 {
    let secs = elapsed.as_secs_f64().max(1e-9);
    (((bytes as f64 / secs) as u64) >> 10) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iops_truncate_as_fio_prints_them() {
        // 20480 I/Os in 10.2415 s: fio keeps 10242 ms and prints 1999, where
        // rounding the exact rate would say 2000.
        assert_eq!(fio_iops(20480, Duration::from_micros(10_241_500)), 1999.0);
        assert_eq!(fio_iops(20480, Duration::from_millis(10_240)), 2000.0);
        assert_eq!(fio_iops(5, Duration::ZERO), 5000.0);
    }

    #[test]
    fn iozone_rates_truncate() {
        // 80 MiB in 20.001 s = 4095.8 KiB/s: iozone prints 4095.
        assert_eq!(iozone_kib_s(80 << 20, Duration::from_secs_f64(20.001)), 4095.0);
    }

    #[test]
    fn short_and_cut_windows_are_flagged() {
        let mut short = TestDetail { seconds: 0.25, ..TestDetail::default() };
        judge(&mut short, None);
        assert!(short.low_confidence && short.notes[0].contains("0.250 s"), "{short:?}");
        let mut long = TestDetail { seconds: 4.0, ..TestDetail::default() };
        judge(&mut long, None);
        assert!(!long.low_confidence && long.notes.is_empty());
        let mut cut = TestDetail { seconds: 8.0, partial: true, ios: 512, ..TestDetail::default() };
        judge(&mut cut, Some(Duration::from_secs(8)));
        assert!(cut.notes[0].contains("--max-time (8 s) after 512 I/Os"), "{cut:?}");
    }

    #[test]
    fn eta_speaks_once_and_only_for_slow_tests() {
        #[derive(Default)]
        struct Heard(std::sync::Mutex<Vec<String>>);
        impl Observer for Heard {
            fn started(&self, _: &str, _: u64) {}
            fn progress(&self, _: u64) {}
            fn finished(&self, _: &str, _: f64, _: storage_scoring::figure::Unit) {}
            fn note(&self, m: &str) {
                self.0.lock().expect("lock").push(m.to_owned());
            }
        }
        let heard = Heard::default();
        let mut eta = Eta::new("rand_write_4k_qd64_iops", &heard, 20480, "I/Os");
        eta.start = Instant::now() - Duration::from_secs(10);
        eta.update(10_000); // 20 s in all: fast enough
        eta.update(100); // 2048 s in all: too slow
        eta.update(101);
        let heard = heard.0.into_inner().expect("lock");
        assert_eq!(heard.len(), 1, "{heard:?}");
        assert!(
            heard[0].contains("rand_write_4k_qd64_iops is very slow") && heard[0].contains("ETA 35 min"),
            "{heard:?}"
        );
    }
}
