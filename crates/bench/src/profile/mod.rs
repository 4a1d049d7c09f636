//! The deep studies of `storage-score profile` (docs/profile.md), on the engine's
//! workload API:
//!
//! - [`sustained`]: a long sequential write in 4 MiB chunks, speed against
//!   progress, the cache-exhaustion step ([`curve`]); optionally random
//!   writes and the same write again;
//! - [`sweep`]: block size {4 KiB, 1 MiB, 256 MiB} × jobs {1, 4, 8}, reading
//!   and writing, each cell time-boxed;
//! - [`transfer`]: random O_DIRECT reads and writes of 512 B to 8 MiB, one
//!   in flight, every I/O traced.
//!
//! **Where.** A nameless scratch file in a mounted filesystem of the target
//! ([`crate::scratch`]), or with `--raw --destructive` the unmounted device
//! from [`RAW_OFFSET`] on. Free space is checked before anything is written.
//!
//! **How long.** The whole command has one time box (`--max-time`, ten
//! minutes by default), shared among the studies asked for by weight
//! ([`Weights`]); what one study leaves unused goes to the next. Every
//! study says in the report what its box was and whether it ran out.
//!
//! **Where reads read.** The sweep and the transfer-size scan work in one
//! region: the sustained write's first [`WORK_BYTES`] when it ran, or a
//! region written in sequence first. Reading never-written blocks would
//! measure a filesystem's (or a flash translation layer's) shortcut for
//! holes, not the device.

pub mod curve;
mod stats;
pub mod sustained;
pub mod sweep;
pub mod transfer;

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use storage_scoring::kinds::Study;

use storage_scoring::profile::{SkippedStudy, Studies};

use crate::devstat::DevStat;
use crate::engine::{self, Data, EngineChoice, EngineError, Workload};
use crate::scratch::{self, ScratchDir, ScratchError};
use crate::suite::{Observer, RAW_OFFSET};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// The sustained write's chunk: one O_DIRECT write each, one in flight.
pub const CHUNK: u64 = 4 * MIB;
/// The sustained write's default size: a quarter of the free space, at most this.
pub const DEFAULT_SUSTAINED_MAX: u64 = 8 * GIB;
/// The region the sweep and the transfer-size scan read and write.
pub const WORK_BYTES: u64 = 512 * MIB;
/// The default time box of the whole command.
pub const DEFAULT_MAX_TIME: Duration = Duration::from_secs(600);

/// Where the studies write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A directory on a mounted, writable filesystem of the device.
    Scratch(PathBuf),
    /// The raw, unmounted device (`--raw --destructive --yes`): its data
    /// from [`RAW_OFFSET`] on is lost. Opened only through its opener.
    Raw(crate::raw::RawDevice),
}

/// The sustained write, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SustainedPlan {
    /// Bytes to write; `None` for the default (a quarter of the free space,
    /// at most [`DEFAULT_SUSTAINED_MAX`]).
    pub size: Option<u64>,
    /// Random 4 KiB writes for this long, then the same write again.
    pub after_random: Option<Duration>,
}

/// What the card says of itself, for the note that relates the sustained
/// curve to the SD speed classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SdFacts {
    /// The allocation unit (SSR `AU_SIZE`, or the video class's `VSC_AU_SIZE`).
    pub au_bytes: Option<u64>,
    /// The video speed class the card claims (6, 10, 30, 60, 90), if any.
    pub video_class: Option<u8>,
}

/// What to run, where, and for how long.
#[derive(Debug, Clone)]
pub struct Config {
    pub place: Place,
    pub sustained: Option<SustainedPlan>,
    pub sweep: bool,
    pub transfer: bool,
    pub max_time: Duration,
    pub engine: EngineChoice,
    /// Bytes of memory the I/O buffers may take (half of what the system has
    /// available, say); sweep cells that need more are skipped.
    pub memory_budget: Option<u64>,
    /// The card's facts when the device is an SD card: the sustained
    /// write then says how it relates to the SD speed classes.
    pub sd: Option<SdFacts>,
    /// The live sysfs, for the device's I/O counters.
    pub live_sysfs: PathBuf,
    /// The block device under the filesystem, when it has no counters of its own.
    pub write_device: Option<PathBuf>,
}

impl Config {
    /// All three studies at their defaults in `place`.
    pub fn new(place: Place) -> Self {
        Config {
            place,
            sustained: Some(SustainedPlan::default()),
            sweep: true,
            transfer: true,
            max_time: DEFAULT_MAX_TIME,
            engine: EngineChoice::Auto,
            memory_budget: None,
            sd: None,
            live_sysfs: PathBuf::from("/sys"),
            write_device: None,
        }
    }
}

/// How the time box is shared: the sustained write is the longest study.
#[derive(Debug, Clone, Copy)]
pub struct Weights;

impl Weights {
    pub const SUSTAINED: f64 = 0.45;
    pub const SWEEP: f64 = 0.30;
    pub const TRANSFER: f64 = 0.25;
}

/// Why the studies stopped early.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{0}")]
    Scratch(#[from] ScratchError),
    #[error("{study}: {source}")]
    Engine { study: &'static str, source: EngineError },
    #[error("cannot open {path}: {source}; {hint}")]
    Open { path: PathBuf, source: std::io::Error, hint: &'static str },
    /// The raw device was refused by its opener.
    #[error("{0}")]
    Raw(crate::raw::RawRefusal),
    #[error(
        "{path} is too small for the studies: it has {have_mib} MiB from its first GiB on, and they need {need_mib} MiB; give a smaller --sustained SIZE or a larger device"
    )]
    TooSmall { path: PathBuf, have_mib: u64, need_mib: u64 },
    #[error(
        "{dir} is on a filesystem that refuses O_DIRECT ({source}): the studies need it to time the device rather than the page cache; give a directory on another filesystem, or --raw --destructive on the unmounted device"
    )]
    NoDirectIo { dir: PathBuf, source: std::io::Error },
}

impl ProfileError {
    /// True when the user stopped the run (Ctrl-C, SIGTERM).
    pub fn is_interrupt(&self) -> bool {
        matches!(self, ProfileError::Engine { source: EngineError::Interrupted(_), .. })
    }

    /// True when the run was refused to protect data (no room, a busy device).
    pub fn is_refusal(&self) -> bool {
        match self {
            ProfileError::Scratch(ScratchError::NoSpace { .. } | ScratchError::Link { .. })
            | ProfileError::Raw(crate::raw::RawRefusal::Unsafe(_)) => true,
            ProfileError::Open { source, .. } => source.raw_os_error() == Some(libc::EBUSY),
            _ => false,
        }
    }

    /// True when the target cannot hold the studies (bad target, exit 2).
    pub fn is_bad_target(&self) -> bool {
        matches!(
            self,
            ProfileError::TooSmall { .. }
                | ProfileError::NoDirectIo { .. }
                | ProfileError::Raw(crate::raw::RawRefusal::Bad(_))
                | ProfileError::Scratch(ScratchError::ReadOnly { .. })
        )
    }

    fn engine(study: &'static str) -> impl Fn(EngineError) -> ProfileError {
        move |source| ProfileError::Engine { study, source }
    }
}

/// Runs the studies. Always returns what was measured, with the error that
/// stopped the run early, if any.
pub fn run(config: &Config, observer: &dyn Observer) -> (Studies, Option<ProfileError>) {
    let start = Instant::now();
    let mut runner = Runner {
        config,
        observer,
        end: start + config.max_time,
        left: Vec::new(),
        out: Studies { max_time_s: Some(config.max_time.as_secs_f64()), ..Studies::default() },
    };
    if config.sustained.is_some() {
        runner.left.push((Study::Sustained, Weights::SUSTAINED));
    }
    if config.sweep {
        runner.left.push((Study::Sweep, Weights::SWEEP));
    }
    if config.transfer {
        runner.left.push((Study::TransferSizes, Weights::TRANSFER));
    }
    let error = runner.run_all().err();
    let Runner { mut out, left, .. } = runner;
    if let Some(e) = &error {
        for (study, _) in left {
            out.skipped.push(SkippedStudy { study, reason: format!("not run: {e}") });
        }
    }
    (out, error)
}

/// The open place: a directory, opened once (docs/safety.md#scratch-files),
/// and its free space then; or the raw device.
pub(crate) enum Opened {
    Scratch { dir: ScratchDir, free: u64 },
    Raw { device: File, path: PathBuf, size: u64 },
}

impl Opened {
    /// Bytes the studies may use: free space less the safety margin, or the
    /// device past [`RAW_OFFSET`].
    fn usable(&self) -> u64 {
        match self {
            Opened::Scratch { free, .. } => free.saturating_sub(scratch::MARGIN),
            Opened::Raw { size, .. } => size.saturating_sub(RAW_OFFSET),
        }
    }

    /// A file to work in, O_DIRECT, and where its region starts.
    fn file(&self, need: u64) -> Result<(File, u64), ProfileError> {
        match self {
            Opened::Scratch { dir, .. } => {
                dir.check_space(need)?;
                let file = dir.create()?;
                scratch::set_direct(&file, true)
                    .map_err(|source| ProfileError::NoDirectIo { dir: dir.path().to_owned(), source })?;
                scratch::allocate(&file, need).map_err(|source| ProfileError::Engine {
                    study: "setup",
                    source: EngineError::Call { op: "fallocate", source },
                })?;
                Ok((file, 0))
            }
            Opened::Raw { device, path, size } => {
                if RAW_OFFSET + need > *size {
                    return Err(ProfileError::TooSmall {
                        path: path.clone(),
                        have_mib: size.saturating_sub(RAW_OFFSET) >> 20,
                        need_mib: need >> 20,
                    });
                }
                let file = device.try_clone().map_err(|source| ProfileError::Engine {
                    study: "setup",
                    source: EngineError::Call { op: "dup", source },
                })?;
                Ok((file, RAW_OFFSET))
            }
        }
    }

    fn label(&self) -> &'static str {
        match self {
            Opened::Scratch { .. } => "file",
            Opened::Raw { .. } => "raw",
        }
    }
}

/// The region the sweep and the transfer-size scan use: written in full.
pub(crate) struct Work {
    pub file: File,
    pub base: u64,
    pub len: u64,
}

/// What every study needs to know.
pub(crate) struct Ctx<'a> {
    pub config: &'a Config,
    pub observer: &'a dyn Observer,
    /// `file` or `raw`.
    pub target: &'static str,
    pub stat: Option<DevStat>,
}

struct Runner<'a> {
    config: &'a Config,
    observer: &'a dyn Observer,
    end: Instant,
    /// The studies not yet run, with their weights.
    left: Vec<(Study, f64)>,
    out: Studies,
}

impl<'a> Runner<'a> {
    /// The time box of `study`, which starts now: its weight's share of
    /// what is left of the command's box.
    fn time_box(&mut self, study: Study) -> Duration {
        let total: f64 = self.left.iter().map(|s| s.1).sum();
        let weight = self.left.iter().find(|s| s.0 == study).map_or(0.0, |s| s.1);
        self.left.retain(|s| s.0 != study);
        let remaining = self.end.saturating_duration_since(Instant::now());
        if total > 0.0 { remaining.mul_f64(weight / total) } else { remaining }
    }

    fn run_all(&mut self) -> Result<(), ProfileError> {
        let opened = self.open()?;
        self.out.place = Some(opened.label().to_owned());
        if let Opened::Raw { .. } = opened {
            self.out.raw_offset = Some(RAW_OFFSET);
        }
        let usable = opened.usable();
        let mut work = None;
        if let Some(plan) = self.config.sustained {
            let size = match plan.size {
                Some(size) => size.div_ceil(CHUNK).max(1) * CHUNK,
                None => {
                    let size = (usable / 4).min(DEFAULT_SUSTAINED_MAX) / CHUNK * CHUNK;
                    self.out.notes.push(format!(
                        "the sustained write's size is a quarter of the {} MiB free, at most {} GiB: {} MiB (--sustained SIZE sets it)",
                        usable >> 20,
                        DEFAULT_SUSTAINED_MAX >> 30,
                        size >> 20
                    ));
                    size.max(CHUNK)
                }
            };
            let (file, base) = opened.file(size)?;
            let ctx = self.ctx(&opened, &file);
            let time_box = self.time_box(Study::Sustained);
            let (sustained, written) = sustained::run(&ctx, &file, base, size, plan.after_random, time_box)
                .map_err(ProfileError::engine(Study::Sustained.as_str()))?;
            self.out.sustained = Some(sustained);
            let len = written.min(WORK_BYTES) / CHUNK * CHUNK;
            if len > 0 {
                work = Some(Work { file, base, len });
            }
        }
        if !(self.config.sweep || self.config.transfer) {
            return Ok(());
        }
        let work = match work {
            Some(work) => work,
            None => {
                let len = (usable / 4).min(WORK_BYTES) / CHUNK * CHUNK;
                let len = len.max(16 * MIB);
                let (file, base) = opened.file(len)?;
                let first = if self.config.sweep { Study::Sweep } else { Study::TransferSizes };
                let budget = self.time_box_peek(first) / 2;
                let written =
                    lay_out(self.observer, &file, base, len, budget).map_err(ProfileError::engine("setup"))?;
                self.out.notes.push(format!(
                    "the sweep and transfer-size scan work in a region of {} MiB, written in sequence first so that reads reach the device",
                    written >> 20
                ));
                Work { file, base, len: written }
            }
        };
        self.out.work_bytes = Some(work.len);
        let ctx = self.ctx(&opened, &work.file);
        if self.config.sweep {
            let time_box = self.time_box(Study::Sweep);
            let cells = sweep::run(&ctx, &work, time_box, &mut self.out.notes)
                .map_err(ProfileError::engine(Study::Sweep.as_str()))?;
            self.out.sweep = cells;
        }
        if self.config.transfer {
            let time_box = self.time_box(Study::TransferSizes);
            let points = transfer::run(&ctx, &work, time_box, &mut self.out.notes)
                .map_err(ProfileError::engine(Study::TransferSizes.as_str()))?;
            self.out.transfer_sizes = points;
        }
        Ok(())
    }

    /// The box `study` would get if it started now, without starting it.
    fn time_box_peek(&self, study: Study) -> Duration {
        let total: f64 = self.left.iter().map(|s| s.1).sum();
        let weight = self.left.iter().find(|s| s.0 == study).map_or(0.0, |s| s.1);
        let remaining = self.end.saturating_duration_since(Instant::now());
        if total > 0.0 { remaining.mul_f64(weight / total) } else { remaining }
    }

    fn open(&self) -> Result<Opened, ProfileError> {
        match &self.config.place {
            Place::Scratch(dir) => {
                // Refuses a read-only filesystem or one without room for the
                // smallest study first.
                let dir = ScratchDir::open(dir)?;
                dir.check_space(CHUNK)?;
                let free = dir.space().map_or(0, |space| space.free);
                Ok(Opened::Scratch { dir, free })
            }
            Place::Raw(raw) => {
                // The opener checks the device again just before it opens
                // it O_EXCL (refused, EBUSY, while any partition is mounted
                // or the device is claimed) and compares device numbers.
                let mut device = raw.open(libc::O_DIRECT).map_err(ProfileError::Raw)?;
                let path = &raw.path;
                let size = device.seek(SeekFrom::End(0)).unwrap_or(0);
                if size < RAW_OFFSET + 16 * MIB {
                    return Err(ProfileError::TooSmall {
                        path: path.clone(),
                        have_mib: size.saturating_sub(RAW_OFFSET) >> 20,
                        need_mib: 16,
                    });
                }
                Ok(Opened::Raw { device, path: path.clone(), size })
            }
        }
    }

    /// What a study working in `file` needs.
    fn ctx(&self, opened: &Opened, file: &File) -> Ctx<'a> {
        Ctx {
            config: self.config,
            observer: self.observer,
            target: opened.label(),
            stat: DevStat::for_file(file, &self.config.live_sysfs, self.config.write_device.as_deref()),
        }
    }
}

/// Writes `len` bytes at `base` in sequence (4 MiB O_DIRECT writes), untimed,
/// for `budget` at most; returns the bytes written, in whole chunks.
fn lay_out(observer: &dyn Observer, file: &File, base: u64, len: u64, budget: Duration) -> Result<u64, EngineError> {
    let offsets: Vec<u64> = (0..len / CHUNK).map(|i| base + i * CHUNK).collect();
    observer.started("laying out the work region", offsets.len() as u64);
    let mut work = Workload::new(file.as_fd(), &offsets, CHUNK as usize, true, Data::Random(0x1a70_0001));
    work.deadline = Some(Instant::now() + budget.max(Duration::from_secs(1)));
    let done = engine::run_sync(&work, &|n| observer.progress(n))?;
    file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
    Ok(done.recorder.ios * CHUNK)
}

/// `4 KiB`, `1 MiB`, `256 MiB`, `512 B`: sizes as the tables print them.
pub fn size_label(bytes: u64) -> String {
    if bytes >= GIB && bytes % GIB == 0 {
        format!("{} GiB", bytes / GIB)
    } else if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(size_label(512), "512 B");
        assert_eq!(size_label(4096), "4 KiB");
        assert_eq!(size_label(256 << 20), "256 MiB");
        assert_eq!(size_label(8 << 30), "8 GiB");
        assert_eq!(size_label(1536), "1536 B");
    }

    #[test]
    fn a_sustained_write_in_a_scratch_directory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut config = Config::new(Place::Scratch(dir.path().to_owned()));
        config.sustained = Some(SustainedPlan { size: Some(24 * MIB), after_random: Some(Duration::from_millis(300)) });
        config.sweep = false;
        config.transfer = false;
        config.max_time = Duration::from_secs(20);
        let (studies, error) = run(&config, &crate::Silent);
        assert!(error.is_none(), "{error:?}");
        let sustained = studies.sustained.expect("sustained");
        assert_eq!(sustained.fresh.bytes_written, 24 * MIB);
        assert_eq!(sustained.fresh.points.len(), 6);
        assert!(sustained.fresh.steady_mb_s.is_some_and(|r| r > 0.0));
        let again = sustained.after_random.expect("after random");
        assert_eq!(again.curve.bytes_written, 24 * MIB);
        assert!(again.random_writes > 0);
        assert_eq!(studies.place.as_deref(), Some("file"));
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0, "nothing left behind");
    }
}
