//! The PiBenchmarks test set (docs/measurements.md), each test keeping the
//! definition and unit of the tool PiBenchmarks ran for it, and meeting the
//! same file state in the same order as in PiBenchmarks' `Storage.sh`
//! (TheRemote/PiBenchmarks): `fstrim -av` and `sync` first, then
//!
//! | step | Storage.sh | here |
//! |---|---|---|
//! | 1 | `hdparm -Tt --direct` | [`hdparm`]: `cached_read_mib_s`, then `seq_read_mib_s` |
//! | 2 | `dd if=/dev/zero of=test bs=4k count=130k conv=fsync`; `rm -f test` | [`dd`]: `seq_write_mb_s` on a new file |
//! | 3 | `fio … --readwrite=randwrite`; `rm -f test` | [`fio`]: `rand_write_4k_qd64_iops` on a new, only allocated file |
//! | 4 | `fio … --readwrite=randread`; `rm -f test` | [`fio`]: `rand_read_4k_qd64_iops` on a new file laid out first |
//! | 5 | `iozone -a -e -I -i 0 -i 1 -i 2 -s 80M -r 4k` | [`iozone`]: the four QD1 figures on one new file |
//! | 6 | (none) | [`sustained`]: `sustained_seq_write_mb_s`, the SD A1/A2 sustained write, on a new file |
//!
//! with `sync` before each tool. Read tests read the raw device and never
//! write it. Write tests use nameless scratch files (see [`crate::scratch`])
//! or, with `--destructive`, the raw unmounted device from 1 GiB on.
//!
//! Every figure's detail carries its latency, the engine that ran it, the
//! device's own counters over the timed window ([`crate::devstat`]), the
//! file state it met ([`crate::filestate`]), and says when the figure is
//! low-confidence (a window under [`MIN_WINDOW`]) or partial (`--max-time`).

pub mod dd;
mod figure;
mod fio;
mod hdparm;
mod iozone;
mod plan;
mod repeat;
pub mod steady;
mod sustained;

pub(crate) use figure::{Eta, Watched, Window, cycled, detail, judge, round_to, unsettled};
pub use figure::{MIN_WINDOW, SLOW_TEST, fio_iops, iozone_kib_s};
pub use plan::{Plan, Profile, QUICK_WINDOW, RAW_OFFSET, ReadTarget, Sizes, WriteTarget};
use plan::{file_tests, tool_tests};
pub use repeat::run_repeated;
use storage_scoring::figure::Figure;
use storage_scoring::figure::{Tool, Unit};

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use storage_scoring::schema::{MEASUREMENT_KEYS, Measurements, Samples, Skipped, TestDetail};

use crate::devstat::DevStat;
use crate::engine::EngineError;
use crate::raw::{RawDevice, RawRefusal};
use crate::scratch::{self, ScratchDir, ScratchError};

/// Hears about progress, for progress bars.
pub trait Observer: Sync {
    /// A test starts; `total` is in I/Os, or in milliseconds for timed tests.
    fn started(&self, key: &str, total: u64);
    fn progress(&self, done: u64);
    fn finished(&self, key: &str, value: f64, unit: Unit);
    /// Something the user should hear now, in one line: a test that will
    /// take very long, or why stopping takes a moment.
    fn note(&self, _message: &str) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;

impl Observer for Silent {
    fn started(&self, _: &str, _: u64) {}
    fn progress(&self, _: u64) {}
    fn finished(&self, _: &str, _: f64, _: Unit) {}
}

/// What a run produced, complete or not.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub measurements: Measurements,
    pub details: BTreeMap<String, TestDetail>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<String>,
    /// Every run's figure, when the test set ran more than once.
    pub samples: BTreeMap<String, Samples>,
}

impl Outcome {
    /// True when every figure is whole and was seen reaching the device
    /// (or the device kept no counters to tell): the score may then be
    /// compared with PiBenchmarks results, profile permitting.
    pub fn trustworthy(&self) -> bool {
        self.details.values().all(|d| !d.partial && d.device_io.as_ref().is_none_or(|io| io.reached))
    }

    /// The figures whose bytes were not seen missing the device: what a
    /// verdict on the device may be judged from.
    pub fn proven(&self) -> Measurements {
        let mut proven = Measurements::default();
        for key in MEASUREMENT_KEYS {
            let missed = self.details.get(key).and_then(|d| d.device_io.as_ref()).is_some_and(|io| !io.reached);
            if let (Some(value), false) = (self.measurements.get(key), missed) {
                proven.set(key, value);
            }
        }
        proven
    }
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{0}")]
    Scratch(#[from] ScratchError),
    #[error("{key}: {source}")]
    Engine { key: String, source: EngineError },
    #[error("cannot open {path}: {source}; {hint}")]
    Open { path: PathBuf, source: std::io::Error, hint: &'static str },
    /// The raw device was refused by its opener.
    #[error("{0}")]
    Raw(RawRefusal),
    #[error(
        "{path} is too small for the write tests: it has {have_mib} MiB, they need {need_mib} MiB from its first GiB on"
    )]
    TooSmall { path: PathBuf, have_mib: u64, need_mib: u64 },
}

impl RunError {
    /// True when the user stopped the run (Ctrl-C, SIGTERM).
    pub fn is_interrupt(&self) -> bool {
        matches!(self, RunError::Engine { source: EngineError::Interrupted(_), .. })
    }

    /// True when the run was refused to protect data (busy device, no room,
    /// a scratch directory replaced by a link).
    /// A read-only filesystem is a bad target instead (exit 2).
    pub fn is_refusal(&self) -> bool {
        match self {
            RunError::Scratch(ScratchError::NoSpace { .. } | ScratchError::Link { .. })
            | RunError::Raw(RawRefusal::Unsafe(_)) => true,
            RunError::Open { source, .. } => source.raw_os_error() == Some(libc::EBUSY),
            _ => false,
        }
    }

    /// The byte offset of a failed I/O, when the failure had one, so that a
    /// caller can relate it to the device's size.
    pub fn offset(&self) -> Option<u64> {
        match self {
            RunError::Engine { source: EngineError::Io { offset, .. } | EngineError::Short { offset, .. }, .. } => {
                Some(*offset)
            }
            _ => None,
        }
    }
}

/// Runs the plan. Always returns what was measured, plus the error that
/// stopped the run early, if any.
pub fn run(plan: &Plan, observer: &dyn Observer) -> (Outcome, Option<RunError>) {
    let mut runner = Runner {
        plan,
        observer,
        sizes: plan.profile.sizes(),
        deadline: plan.max_time.map(|t| Instant::now() + t),
        out: Outcome::default(),
        stopped: None,
        scratch: None,
    };
    if plan.profile == Profile::Quick {
        runner
            .out
            .notes
            .push("quick profile: each test ran until its figure settled (within ±2% over the last third of a 1 to 3 s window) rather than for the reference tools' sizes, so the score is not comparable with PiBenchmarks".to_owned());
    }
    let error = runner.run_all().err();
    let Runner { mut out, stopped, .. } = runner;
    // Anything planned that has no figure and no reason yet was cut short.
    let reason = match (&error, &stopped) {
        (Some(e), _) => Some(format!("not run: {e}")),
        (None, Some(why)) => Some(why.clone()),
        (None, None) => None,
    };
    if let Some(reason) = reason {
        for figure in Figure::ALL {
            let key = figure.key();
            if plan.wants(figure)
                && out.measurements.figure(figure).is_none()
                && !out.skipped.iter().any(|s| s.key == key)
            {
                out.skipped.push(Skipped { key: key.to_owned(), reason: reason.clone() });
            }
        }
    }
    for figure in Figure::ALL.into_iter().filter(|&f| !plan.wants(f)) {
        out.skipped.push(Skipped { key: figure.key().to_owned(), reason: "not selected (--only)".to_owned() });
    }
    (out, error)
}

/// A figure and how it was made.
#[derive(Debug)]
pub(crate) struct Measured {
    pub value: f64,
    pub detail: TestDetail,
}

/// What every test needs to know.
pub(crate) struct Ctx<'a> {
    pub plan: &'a Plan,
    pub observer: &'a dyn Observer,
    pub sizes: Sizes,
    pub deadline: Option<Instant>,
}

struct Runner<'a> {
    plan: &'a Plan,
    observer: &'a dyn Observer,
    sizes: Sizes,
    deadline: Option<Instant>,
    out: Outcome,
    /// Set once `--max-time` has run out: why the remaining tests are not run.
    stopped: Option<String>,
    /// The scratch directory, opened once before the first write
    /// (docs/safety.md#scratch-files).
    scratch: Option<ScratchDir>,
}

impl Runner<'_> {
    fn ctx(&self) -> Ctx<'_> {
        Ctx { plan: self.plan, observer: self.observer, sizes: self.sizes, deadline: self.deadline }
    }

    /// Should `key` run now? False once the time is up (and says why).
    fn wants(&mut self, figure: Figure) -> bool {
        self.plan.wants(figure) && !self.time_is_up()
    }

    /// True once `--max-time` has run out (noting why the rest is not run).
    fn time_is_up(&mut self) -> bool {
        if self.stopped.is_none() && self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.stopped = Some(format!("not run: --max-time ({} s) ran out before it", self.max_secs()));
        }
        self.stopped.is_some()
    }

    fn max_secs(&self) -> u64 {
        self.plan.max_time.map_or(0, |t| t.as_secs())
    }

    /// Skips `figures` with `reason`, listed in the table's order.
    fn skip(&mut self, figures: &[Figure], reason: &str) {
        for figure in Figure::ALL.into_iter().filter(|f| figures.contains(f) && self.plan.wants(*f)) {
            self.out.skipped.push(Skipped { key: figure.key().to_owned(), reason: reason.to_owned() });
        }
    }

    fn note(&mut self, note: String) {
        self.out.notes.push(note);
    }

    fn run_all(&mut self) -> Result<(), RunError> {
        if let WriteTarget::Scratch(dir) = &self.plan.write_target {
            let mut writes = write_tests();
            if writes.any(|f| self.plan.wants(f)) {
                let dir = ScratchDir::open(dir)?;
                dir.check_space(self.plan.scratch_bytes())?;
                self.trim(&dir);
                self.scratch = Some(dir);
            }
        }
        sync();
        self.run_reads()?;
        self.run_writes()
    }

    /// `fstrim -av` as Storage.sh begins, on the filesystem we write to.
    fn trim(&mut self, dir: &ScratchDir) {
        let note = match dir.trim() {
            Ok(bytes) => format!(
                "trimmed {} MiB of free space in {} first, as Storage.sh's `fstrim -av` does",
                bytes >> 20,
                dir.path().display()
            ),
            Err(e) => format!(
                "could not trim the free space of {} first ({e}), as Storage.sh's `fstrim -av` does: on flash that needs trimming, writes may measure slower than in PiBenchmarks",
                dir.path().display()
            ),
        };
        self.note(note);
    }

    fn run_reads(&mut self) -> Result<(), RunError> {
        const READ_TESTS: [Figure; 2] = [Figure::CachedRead, Figure::SeqRead];
        if !READ_TESTS.iter().any(|&f| self.plan.wants(f)) {
            return Ok(());
        }
        let device = match &self.plan.read_target {
            ReadTarget::Device(device) => device.clone(),
            ReadTarget::Unavailable(reason) => {
                let reason = reason.clone();
                self.skip(&READ_TESTS, &reason);
                return Ok(());
            }
        };
        let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&device).map_err(|source| {
            RunError::Open { path: device.clone(), source, hint: "the read tests need to read the raw device" }
        })?;
        let stat = DevStat::for_file(&file, &self.plan.live_sysfs, None);
        let size = hdparm::device_size(&file);
        // hdparm -Tt: -T first (time_cache), then -t (time_device).
        if self.wants(Figure::CachedRead) {
            let ctx = self.ctx();
            let m = hdparm::cached(&ctx, &file, stat.as_ref());
            self.record(Figure::CachedRead, m)?;
        }
        if self.wants(Figure::SeqRead) {
            let ctx = self.ctx();
            let m = hdparm::device(&ctx, &file, size, stat.as_ref());
            self.record(Figure::SeqRead, m)?;
        }
        Ok(())
    }

    fn run_writes(&mut self) -> Result<(), RunError> {
        let write_tests: Vec<Figure> = write_tests().collect();
        if !write_tests.iter().any(|&f| self.plan.wants(f)) {
            return Ok(());
        }
        let place = match &self.plan.write_target {
            WriteTarget::Unavailable(reason) => {
                let reason = reason.clone();
                self.skip(&write_tests, &reason);
                return Ok(());
            }
            // Opened in run_all, whenever a write test is wanted.
            WriteTarget::Scratch(dir) => match self.scratch.take() {
                Some(open) => Place::Scratch(open),
                None => Place::Scratch(ScratchDir::open(dir)?),
            },
            WriteTarget::Raw(device) => Place::Raw(self.open_raw(device)?),
        };
        if self.wants(Figure::SeqWrite) {
            self.on_new_file(&place, Figure::SeqWrite, dd::run)?;
        }
        let direct: Vec<Figure> = file_tests().chain([Figure::SustainedSeqWrite]).collect();
        if !direct.iter().any(|&f| self.plan.wants(f)) {
            return Ok(());
        }
        if let Place::Scratch(dir) = &place {
            if let Some(why) = self.direct_io_refusal(dir) {
                self.note(why.clone());
                self.skip(&direct, &why);
                return Ok(());
            }
        }
        for figure in tool_tests(Tool::Fio) {
            if self.wants(figure) {
                self.on_new_file(&place, figure, |ctx, file, base, stat| fio::run(ctx, figure, file, base, stat))?;
            }
        }
        if tool_tests(Tool::Iozone).any(|f| self.plan.wants(f)) && !self.time_is_up() {
            sync();
            let file = place.new_file()?;
            let stat = self.stat_of(&file);
            iozone::run(self, &file, place.base(), stat.as_ref())?;
        }
        // Beyond Storage.sh's set, last, so that none of its figures meets
        // the state a long write leaves.
        if self.wants(Figure::SustainedSeqWrite) {
            self.on_new_file(&place, Figure::SustainedSeqWrite, sustained::run)?;
        }
        Ok(())
    }

    /// `sync`, then `test` on a new file (on a raw device, its test region
    /// again), filed under `figure`. The file, and its blocks, go when it
    /// closes at the end of this (`rm -f test`).
    fn on_new_file(
        &mut self,
        place: &Place,
        figure: Figure,
        test: impl FnOnce(&Ctx<'_>, &File, u64, Option<&DevStat>) -> Result<Measured, EngineError>,
    ) -> Result<(), RunError> {
        sync();
        let file = place.new_file()?;
        let stat = self.stat_of(&file);
        let measured = test(&self.ctx(), &file, place.base(), stat.as_ref());
        self.record(figure, measured)
    }

    fn open_raw(&self, device: &RawDevice) -> Result<File, RunError> {
        // The opener checks the device again just before it opens it
        // O_EXCL (the kernel then refuses, EBUSY, while any partition is
        // mounted or the device is claimed) and compares device numbers.
        let file = device.open(0).map_err(RunError::Raw)?;
        let device = &device.path;
        let need = RAW_OFFSET + self.plan.scratch_bytes();
        let have = hdparm::device_size(&file);
        if have < need {
            return Err(RunError::TooSmall { path: device.to_owned(), have_mib: have >> 20, need_mib: need >> 20 });
        }
        Ok(file)
    }

    fn stat_of(&self, file: &File) -> Option<DevStat> {
        DevStat::for_file(file, &self.plan.live_sysfs, self.plan.write_device.as_deref())
    }

    /// Why the filesystem of `dir` refuses O_DIRECT, in one line; `None`
    /// when it takes it.
    fn direct_io_refusal(&self, dir: &ScratchDir) -> Option<String> {
        let probe = match dir.create() {
            Ok(probe) => probe,
            Err(e) => return Some(e.to_string()),
        };
        match scratch::set_direct(&probe, true) {
            Ok(()) => None,
            Err(e) => {
                let fs = self.plan.filesystem.clone().unwrap_or_else(|| "its filesystem".to_owned());
                Some(format!(
                    "{} is on {fs}, which refuses O_DIRECT ({e}): the fio-like and iozone-like tests need it to reach the device past the page cache, so they were not run",
                    dir.path().display()
                ))
            }
        }
    }

    /// Files a test's figure, or returns its error tagged with the figure's key.
    fn record(&mut self, figure: Figure, measured: Result<Measured, EngineError>) -> Result<(), RunError> {
        let key = figure.key();
        let Measured { value, mut detail } = match measured {
            Ok(measured) => measured,
            Err(EngineError::TimeUp(when)) => {
                self.stopped = Some(format!("not run: --max-time ({} s) ran out {when}", self.max_secs()));
                return Ok(());
            }
            Err(source) => return Err(RunError::Engine { key: key.to_owned(), source }),
        };
        if !value.is_finite() {
            // No figure (nothing was counted): said, never left out silently.
            let reason = format!("no figure: the test counted {} I/Os over {} s", detail.ios, detail.seconds);
            self.out.skipped.push(Skipped { key: key.to_owned(), reason });
        } else {
            judge(&mut detail, self.plan.max_time);
            if detail.partial && self.stopped.is_none() {
                self.stopped = Some(format!("not run: --max-time ({} s) ran out during {key}", self.max_secs()));
            }
            self.out.measurements.set_figure(figure, value);
            self.out.details.insert(key.to_owned(), detail);
            self.observer.finished(key, value, figure.unit());
        }
        // A signal during the test's last I/O was not seen by the engine: the
        // figure is complete, but the user asked to stop.
        match crate::interrupt::requested() {
            Some(signal) => Err(RunError::Engine { key: key.to_owned(), source: EngineError::Interrupted(signal) }),
            None => Ok(()),
        }
    }
}

/// Where the write tests' files live.
enum Place {
    Scratch(ScratchDir),
    Raw(File),
}

impl Place {
    /// A new file, as `rm -f test` followed by the next tool's create gives;
    /// on a raw device, the same device again (its region starts at [`Place::base`]).
    fn new_file(&self) -> Result<File, RunError> {
        match self {
            Place::Scratch(dir) => Ok(dir.create()?),
            Place::Raw(file) => file.try_clone().map_err(|source| RunError::Engine {
                key: "setup".to_owned(),
                source: EngineError::Call { op: "dup", source },
            }),
        }
    }

    /// Byte offset of the test region in the file.
    fn base(&self) -> u64 {
        match self {
            Place::Scratch(_) => 0,
            Place::Raw(_) => RAW_OFFSET,
        }
    }
}

/// Every test on the write target (its scratch files, or the raw device's
/// test region), reads of the files it lays out included, in run order.
fn write_tests() -> impl Iterator<Item = Figure> {
    std::iter::once(Figure::SeqWrite).chain(file_tests()).chain([Figure::SustainedSeqWrite])
}

/// `sync`, as Storage.sh runs it before each tool.
pub(crate) fn sync() {
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Is `path` a directory we could write a scratch file in?
pub fn writable_dir(path: &Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}
