//! Progress bars on stderr, only when stderr is a terminal and no JSON is
//! asked for (docs/cli.md#json-output-and-progress); and the stage lines of
//! the commands that write a whole card ([`Stages`]).

use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use storage_bench::Observer;

/// The one bar on screen at a time, shared by `run`'s and `profile`'s
/// observers: a new bar replaces the last one.
#[derive(Debug, Default)]
pub struct BarSlot {
    current: Mutex<Option<ProgressBar>>,
}

impl BarSlot {
    /// Draws a new bar of `total` steps with `template`, labelled `key`.
    pub fn start(&self, template: &str, key: &str, total: u64) {
        self.finish();
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(key.to_owned());
        bar.enable_steady_tick(Duration::from_millis(200));
        if let Ok(mut current) = self.current.lock() {
            *current = Some(bar);
        }
    }

    pub fn set_position(&self, done: u64) {
        if let Ok(current) = self.current.lock() {
            if let Some(bar) = current.as_ref() {
                bar.set_position(done);
            }
        }
    }

    /// Prints `line` on stderr without tearing the bar.
    pub fn print(&self, line: &str) {
        match self.current.lock().ok().and_then(|current| current.clone()) {
            Some(bar) => bar.suspend(|| crate::terminal::errln(line)),
            None => crate::terminal::errln(line),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = self.current.lock().ok().and_then(|mut current| current.take()) {
            bar.finish_and_clear();
        }
    }
}

/// Stage lines on stderr, each after `prefix`, when `show`; Ctrl-C and
/// SIGTERM ask the work to stop (at its next segment, or between cycles).
pub struct Stages {
    pub prefix: String,
    pub show: bool,
}

impl storage_capacity::Watch for Stages {
    fn stage(&self, what: &str) {
        if self.show {
            crate::terminal::errln(&format!("{}{what}", self.prefix));
        }
    }

    fn stop(&self) -> Option<&'static str> {
        storage_bench::interrupt::requested()
    }
}

/// One bar per test, replaced as tests go by.
#[derive(Debug)]
pub struct Bars {
    enabled: bool,
    slot: BarSlot,
}

impl Bars {
    pub fn new(enabled: bool) -> Self {
        Bars { enabled, slot: BarSlot::default() }
    }

    pub fn finish(&self) {
        self.slot.finish();
    }
}

impl Observer for Bars {
    fn started(&self, key: &str, total: u64) {
        if self.enabled {
            self.slot.start("{prefix:>26} [{bar:30}] {percent:>3}%  ETA {eta}", key, total);
        }
    }

    fn progress(&self, done: u64) {
        self.slot.set_position(done);
    }

    fn note(&self, message: &str) {
        // Heard whether or not bars are drawn: with --json too, on stderr.
        self.slot.print(&format!("storage-score: {message}"));
    }

    fn finished(&self, key: &str, value: f64, _unit: storage_scoring::figure::Unit) {
        if !self.enabled {
            return;
        }
        self.finish();
        crate::terminal::errln(&format!("{key:>26}  {value}"));
    }
}
