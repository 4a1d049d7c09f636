//! The machine around a measurement (`run`, `profile`): the device's health
//! and the advice read before it starts, the temperature and throttling
//! before, during (sampled, and read at the edges of every figure's window)
//! and after, so that a figure measured while the machine was throttled is
//! known as such (docs/doctor.md#thermal).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use storage_bench::Observer;
use storage_identify::checkup::{Checkup, checkup};
use storage_identify::thermal::{self, Watcher};
use storage_platform::{Resolved, Roots};
use storage_scoring::health::{Thermal, ThermalSnapshot};
use storage_scoring::schema::{Device, Report};

/// How often the sampler reads the machine while a measurement runs.
const INTERVAL: Duration = Duration::from_millis(500);

/// One measurement's watch, from before its first I/O to after its last.
#[derive(Debug)]
pub struct Session {
    checkup: Option<Checkup>,
    watcher: Watcher,
    /// `(key, start, end)` of each figure's (or study's) window.
    windows: Mutex<Vec<(String, Instant, Option<Instant>)>>,
}

impl Session {
    /// Reads health, advice and the machine now, and starts the sampler.
    pub fn start(resolved: &Resolved, device: Option<&Device>, roots: &Roots) -> Session {
        let board = storage_identify::system::system(roots).board;
        let checkup =
            resolved.disk.as_ref().zip(device).map(|(disk, device)| checkup(disk, device, roots, board.as_deref()));
        let drive_dir = resolved.disk.as_ref().map(|d| d.sys_dir.join("device"));
        Session {
            checkup,
            watcher: Watcher::start(roots.clone(), drive_dir, INTERVAL),
            windows: Mutex::new(Vec::new()),
        }
    }

    /// Wraps `inner` so that each test's start and end are read too.
    pub fn observer<'a>(&'a self, inner: &'a dyn Observer) -> Watched<'a> {
        Watched { session: self, inner }
    }

    /// Stops the sampler and writes `health`, `advice` and `thermal` into
    /// the report, with a note on each figure measured while throttled.
    pub fn finish(self, report: &mut Report) {
        let end = self.watcher.sample_now();
        let (interval, samples) = self.watcher.stop();
        let windows = self.windows.into_inner().unwrap_or_default();
        // A machine with no sensor at all has nothing to show before or after.
        let known = |s: &ThermalSnapshot| *s != ThermalSnapshot::default();
        let mut t = Thermal {
            before: self.checkup.as_ref().map(|c| c.thermal.clone()).filter(known),
            after: samples.last().map(|s| s.snapshot.clone()).filter(known),
            during: Some(thermal::summarize(interval, &samples)),
            figures: windows
                .iter()
                .map(|(key, from, to)| thermal::window(key, &samples, *from, to.unwrap_or(end)))
                .collect(),
            ..Thermal::default()
        };
        t.assess();
        if t.throttled_during == Some(true) {
            let flags: Vec<&str> = t.flags().iter().map(|f| f.as_str()).collect();
            let note = format!(
                "measured while this machine was throttled ({}): the figure says more about the power supply or \
                 cooling than about the device; see `storage-score doctor`",
                flags.join(", ")
            );
            let mut keys = Vec::new();
            for figure in t.figures.iter().filter(|f| f.throttled) {
                if let Some(detail) = report.details.get_mut(&figure.key) {
                    detail.notes.push(note.clone());
                }
                keys.push(figure.key.clone());
            }
            if !keys.is_empty() {
                report.notes.push(format!("{}: {note}", keys.join(", ")));
            }
            t.notes.push(note);
        } else if t.throttled_during.is_none() {
            t.notes.push(
                "this machine shows no throttling source (no Raspberry Pi firmware get_throttled, no rpi_volt \
                 sensor): whether it slowed down while measuring is unknown"
                    .to_owned(),
            );
        }
        if let Some(c) = self.checkup {
            report.health = Some(c.health);
            report.advice = c.advice;
        }
        report.thermal = Some(t);
    }
}

/// An observer that reads the machine at each test's start and end.
pub struct Watched<'a> {
    session: &'a Session,
    inner: &'a dyn Observer,
}

impl std::fmt::Debug for Watched<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watched").field("session", self.session).finish_non_exhaustive()
    }
}

impl Observer for Watched<'_> {
    fn started(&self, key: &str, total: u64) {
        let at = self.session.watcher.sample_now();
        if let Ok(mut windows) = self.session.windows.lock() {
            windows.push((key.to_owned(), at, None));
        }
        self.inner.started(key, total);
    }

    fn progress(&self, done: u64) {
        self.inner.progress(done);
    }

    fn finished(&self, key: &str, value: f64, unit: storage_scoring::figure::Unit) {
        let at = self.session.watcher.sample_now();
        if let Ok(mut windows) = self.session.windows.lock() {
            if let Some(open) = windows.iter_mut().rev().find(|(k, _, end)| k == key && end.is_none()) {
                open.2 = Some(at);
            }
        }
        self.inner.finished(key, value, unit);
    }

    fn note(&self, message: &str) {
        self.inner.note(message);
    }
}
