//! The PiBenchmarks test set (DESIGN.md §4), each test keeping the
//! definition and unit of the tool PiBenchmarks ran for it.
//!
//! | key | reference | how |
//! |---|---|---|
//! | `seq_read_mib_s` | `hdparm -t --direct` | O_DIRECT 2 MiB reads from byte 0 for ≥ 3 s (hdparm's `time_device`: `TIMING_BUF_MB` = 2, at most 1024 reads) |
//! | `cached_read_mib_s` | `hdparm -T --direct` | one priming read, then O_DIRECT re-reads of the first 2 MiB for 2 s (hdparm's `time_cache`) |
//! | `seq_write_mb_s` | `dd bs=4k count=130k conv=fsync` | 133 120 buffered 4 KiB writes of zeros to a new file, the final `fsync` inside the timing |
//! | `rand_{write,read}_4k_qd64_iops` | `fio --direct=1 --bs=4k --iodepth=64 --size=80M --randrepeat=1` | every 4 KiB block of the 80 MiB file once, in a fixed pseudo-random order, 64 in flight |
//! | `{seq,rand}_{write,read}_4k_qd1_kib_s` | `iozone -a -e -I -s 80M -r 4k -i 0 -i 1 -i 2` | O_DIRECT, one 4 KiB request at a time; with `-e` the `fsync` is timed |
//!
//! Read tests read the raw device and never write it. Write tests use one
//! nameless scratch file (see [`crate::scratch`]) or, with `--destructive`,
//! the raw unmounted device. The 80 MiB file is laid out once and shared by
//! the fio-like and iozone-like tests.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use storage_scoring::schema::{MEASUREMENT_KEYS, Measurements, Skipped, TestDetail};

use crate::buffer::AlignedBuf;
use crate::engine::{self, Completed, Data, EngineChoice, EngineError, Workload};
use crate::recorder::{INTERVAL, Recorder};
use crate::scratch::{self, ScratchError};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
/// fio's `--randrepeat=1`: the same pseudo-random order on every run.
const RANDOM_ORDER_SEED: u64 = 0x5eed_0001;

/// How long or large each test is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The reference tools' own sizes: comparable with PiBenchmarks.
    #[default]
    Compat,
    /// Shortened tests for a fast look; the score is not comparable.
    Quick,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Compat => "compat",
            Profile::Quick => "quick",
        }
    }

    /// The sizes this profile uses.
    pub fn sizes(self) -> Sizes {
        match self {
            Profile::Compat => Sizes {
                seq_read_time: Duration::from_secs(3),
                cached_read_time: Duration::from_secs(2),
                dd_bytes: 130 * KIB * 4096,
                test_file_bytes: 80 * MIB,
            },
            Profile::Quick => Sizes {
                seq_read_time: Duration::from_secs(1),
                cached_read_time: Duration::from_millis(500),
                dd_bytes: 64 * MIB,
                test_file_bytes: 16 * MIB,
            },
        }
    }
}

/// Test lengths and sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    pub seq_read_time: Duration,
    pub cached_read_time: Duration,
    pub dd_bytes: u64,
    pub test_file_bytes: u64,
}

/// hdparm's `TIMING_BUF_MB`: 2 MiB per read.
const HDPARM_CHUNK: usize = 2 * MIB as usize;
/// hdparm stops `-t` after this many reads even if 3 s have not passed.
const HDPARM_MAX_READS: u64 = 1024;
const BLOCK: usize = 4096;
const QUEUE_DEPTH: usize = 64;

/// Where the write tests write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteTarget {
    /// A directory on a mounted, writable filesystem of the device.
    Scratch(PathBuf),
    /// The raw, unmounted device (`--destructive --yes`); its data is lost.
    Raw(PathBuf),
    /// No write tests can run; the reason goes into the report.
    Unavailable(String),
}

/// What to run, and where.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The raw device for the read tests, or why they cannot run.
    pub read_device: Result<PathBuf, String>,
    pub write_target: WriteTarget,
    pub profile: Profile,
    /// Measurement keys to run, in any order; they run in [`MEASUREMENT_KEYS`] order.
    pub keys: Vec<String>,
    pub engine: EngineChoice,
}

impl Plan {
    fn wants(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// Bytes of scratch space the planned write tests need at most at once.
    pub fn scratch_bytes(&self) -> u64 {
        let sizes = self.profile.sizes();
        let dd = if self.wants("seq_write_mb_s") { sizes.dd_bytes } else { 0 };
        let file = if FILE_TESTS.iter().any(|k| self.wants(k)) { sizes.test_file_bytes } else { 0 };
        // The dd file is gone before the test file is laid out.
        dd.max(file)
    }
}

/// The tests that share the 80 MiB test file, in run order: every key after
/// the hdparm-like and dd-like ones.
const FILE_TESTS: &[&str] = MEASUREMENT_KEYS.split_at(3).1;

/// Hears about progress, for progress bars.
pub trait Observer: Sync {
    /// A test starts; `total` is in I/Os, or in milliseconds for timed tests.
    fn started(&self, key: &str, total: u64);
    fn progress(&self, done: u64);
    fn finished(&self, key: &str, value: f64);
}

/// An observer that ignores everything.
#[derive(Debug, Default)]
pub struct Silent;

impl Observer for Silent {
    fn started(&self, _: &str, _: u64) {}
    fn progress(&self, _: u64) {}
    fn finished(&self, _: &str, _: f64) {}
}

/// What a run produced, complete or not.
#[derive(Debug, Default, Clone)]
pub struct Outcome {
    pub measurements: Measurements,
    pub details: BTreeMap<String, TestDetail>,
    pub skipped: Vec<Skipped>,
    pub notes: Vec<String>,
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
    #[error("{path} is too small for the write tests: it has {have_mib} MiB, they need {need_mib} MiB")]
    TooSmall { path: PathBuf, have_mib: u64, need_mib: u64 },
}

impl RunError {
    /// True when the user stopped the run (Ctrl-C, SIGTERM).
    pub fn is_interrupt(&self) -> bool {
        matches!(self, RunError::Engine { source: EngineError::Interrupted(_), .. })
    }

    /// True when the run was refused to protect data (busy device, no room).
    /// A read-only filesystem is a bad target instead (exit 2).
    pub fn is_refusal(&self) -> bool {
        match self {
            RunError::Scratch(ScratchError::NoSpace { .. }) => true,
            RunError::Open { source, .. } => source.raw_os_error() == Some(libc::EBUSY),
            _ => false,
        }
    }
}

/// Runs the plan. Always returns what was measured, plus the error that
/// stopped the run early, if any.
pub fn run(plan: &Plan, observer: &dyn Observer) -> (Outcome, Option<RunError>) {
    let mut out = Outcome::default();
    if plan.profile == Profile::Quick {
        out.notes.push("quick profile: shortened tests, so the score is not comparable with PiBenchmarks".to_owned());
    }
    let error = run_reads(plan, observer, &mut out).and_then(|()| run_writes(plan, observer, &mut out)).err();
    // Anything planned that has no figure and no reason yet was cut short.
    if let Some(e) = &error {
        for key in MEASUREMENT_KEYS {
            if plan.wants(key) && out.measurements.get(key).is_none() && !out.skipped.iter().any(|s| s.key == key) {
                out.skipped.push(Skipped { key: key.to_owned(), reason: format!("not run: {e}") });
            }
        }
    }
    for key in MEASUREMENT_KEYS {
        if !plan.wants(key) {
            out.skipped.push(Skipped { key: key.to_owned(), reason: "not selected (--only)".to_owned() });
        }
    }
    (out, error)
}

fn skip(out: &mut Outcome, plan: &Plan, keys: &[&str], reason: &str) {
    for key in keys.iter().filter(|k| plan.wants(k)) {
        out.skipped.push(Skipped { key: (*key).to_owned(), reason: reason.to_owned() });
    }
}

fn run_reads(plan: &Plan, observer: &dyn Observer, out: &mut Outcome) -> Result<(), RunError> {
    const READ_KEYS: [&str; 2] = ["seq_read_mib_s", "cached_read_mib_s"];
    if !READ_KEYS.iter().any(|k| plan.wants(k)) {
        return Ok(());
    }
    let device = match &plan.read_device {
        Ok(device) => device,
        Err(reason) => {
            skip(out, plan, &READ_KEYS, reason);
            return Ok(());
        }
    };
    let file = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(device).map_err(|source| {
        RunError::Open { path: device.clone(), source, hint: "the read tests need root (sudo) to read the raw device" }
    })?;
    let size = device_size(&file);
    let sizes = plan.profile.sizes();
    if plan.wants("seq_read_mib_s") {
        measure(out, observer, "seq_read_mib_s", || hdparm_t(&file, size, sizes.seq_read_time, observer))?;
    }
    if plan.wants("cached_read_mib_s") {
        measure(out, observer, "cached_read_mib_s", || hdparm_cached(&file, sizes.cached_read_time, observer))?;
    }
    Ok(())
}

fn run_writes(plan: &Plan, observer: &dyn Observer, out: &mut Outcome) -> Result<(), RunError> {
    let write_keys: Vec<&str> = std::iter::once("seq_write_mb_s").chain(FILE_TESTS.iter().copied()).collect();
    if !write_keys.iter().any(|k| plan.wants(k)) {
        return Ok(());
    }
    let sizes = plan.profile.sizes();
    match &plan.write_target {
        WriteTarget::Unavailable(reason) => {
            skip(out, plan, &write_keys, reason);
            Ok(())
        }
        WriteTarget::Scratch(dir) => {
            scratch::check_space(dir, plan.scratch_bytes())?;
            if plan.wants("seq_write_mb_s") {
                // A new file, as dd's of=FILE makes; dropped (and freed) after.
                let file = scratch::create(dir)?;
                measure(out, observer, "seq_write_mb_s", || dd_like(&file, sizes.dd_bytes, observer))?;
            }
            if FILE_TESTS.iter().any(|k| plan.wants(k)) {
                let file = scratch::create(dir)?;
                lay_out(&file, sizes.test_file_bytes)
                    .map_err(|source| RunError::Engine { key: "layout".to_owned(), source })?;
                file_tests(plan, &file, sizes.test_file_bytes, observer, out)?;
            }
            Ok(())
        }
        WriteTarget::Raw(device) => {
            // O_EXCL on a block device: the kernel refuses (EBUSY) while any
            // partition is mounted or the device is held by another claimer.
            let file = OpenOptions::new().read(true).write(true).custom_flags(libc::O_EXCL).open(device).map_err(
                |source| RunError::Open {
                    path: device.clone(),
                    source,
                    hint: "--destructive needs the whole device unmounted and unused",
                },
            )?;
            let need = plan.scratch_bytes();
            let have = device_size(&file);
            if have < need {
                return Err(RunError::TooSmall { path: device.clone(), have_mib: have >> 20, need_mib: need >> 20 });
            }
            if plan.wants("seq_write_mb_s") {
                measure(out, observer, "seq_write_mb_s", || dd_like(&file, sizes.dd_bytes, observer))?;
            }
            file_tests(plan, &file, sizes.test_file_bytes, observer, out)
        }
    }
}

fn file_tests(
    plan: &Plan,
    file: &File,
    bytes: u64,
    observer: &dyn Observer,
    out: &mut Outcome,
) -> Result<(), RunError> {
    let direct = |file: &File| {
        scratch::set_direct(file, true).map_err(|source| RunError::Engine {
            key: "O_DIRECT".to_owned(),
            source: EngineError::Call { op: "fcntl(O_DIRECT)", source },
        })
    };
    direct(file)?;
    let blocks = bytes / BLOCK as u64;
    let sequential: Vec<u64> = (0..blocks).map(|b| b * BLOCK as u64).collect();
    let mut shuffled = sequential.clone();
    shuffled.shuffle(&mut SmallRng::seed_from_u64(RANDOM_ORDER_SEED));

    for key in FILE_TESTS.iter().filter(|k| plan.wants(k)) {
        let (offsets, write, queued) = match *key {
            "rand_write_4k_qd64_iops" => (&shuffled, true, true),
            "rand_read_4k_qd64_iops" => (&shuffled, false, true),
            "seq_write_4k_qd1_kib_s" => (&sequential, true, false),
            "seq_read_4k_qd1_kib_s" => (&sequential, false, false),
            "rand_read_4k_qd1_kib_s" => (&shuffled, false, false),
            _ => (&shuffled, true, false),
        };
        let work = Workload { fd: file.as_fd(), offsets, block_size: BLOCK, write, data: Data::Random(0x5eed_0002) };
        measure(out, observer, key, || {
            observer.started(key, offsets.len() as u64);
            let progress = |done| observer.progress(done);
            if queued {
                // fio: IOPS = I/Os / runtime; no fsync (end_fsync=0).
                let done = engine::run_queued(&work, QUEUE_DEPTH, plan.engine, &progress)?;
                let iops = (done.recorder.ios as f64 / done.elapsed.as_secs_f64()).round();
                Ok((iops, detail(&done, done.elapsed)))
            } else {
                // iozone -e: the fsync after the writes is inside the timing.
                let done = engine::run_sync(&work, &progress)?;
                let mut elapsed = done.elapsed;
                if write {
                    let t = Instant::now();
                    fsync(file)?;
                    elapsed += t.elapsed();
                }
                let kib_s = (done.recorder.bytes as f64 / KIB as f64 / elapsed.as_secs_f64()).round();
                Ok((kib_s, detail(&done, elapsed)))
            }
        })?;
    }
    Ok(())
}

/// Runs one test and files its figure, or returns its error tagged with the key.
fn measure(
    out: &mut Outcome,
    observer: &dyn Observer,
    key: &str,
    test: impl FnOnce() -> Result<(f64, TestDetail), EngineError>,
) -> Result<(), RunError> {
    let (value, detail) = test().map_err(|source| RunError::Engine { key: key.to_owned(), source })?;
    out.measurements.set(key, value);
    out.details.insert(key.to_owned(), detail);
    observer.finished(key, value);
    // A signal during the test's last I/O was not seen by the engine: the
    // figure is complete, but the user asked to stop.
    match crate::interrupt::requested() {
        Some(signal) => Err(RunError::Engine { key: key.to_owned(), source: EngineError::Interrupted(signal) }),
        None => Ok(()),
    }
}

fn detail(done: &Completed, elapsed: Duration) -> TestDetail {
    TestDetail {
        engine: done.engine.to_owned(),
        bytes: done.recorder.bytes,
        ios: done.recorder.ios,
        seconds: round_to(elapsed.as_secs_f64(), 4),
        latency: done.recorder.latency(),
        intervals_mib_s: done.recorder.intervals_mib_s(elapsed),
        interval_ms: INTERVAL.as_millis() as u64,
    }
}

/// `hdparm -t --direct`: sequential 2 MiB O_DIRECT reads from byte 0 until
/// 3 s have passed (or 1024 reads). MiB/s, two decimals as hdparm prints.
fn hdparm_t(
    file: &File,
    size: u64,
    min_time: Duration,
    observer: &dyn Observer,
) -> Result<(f64, TestDetail), EngineError> {
    observer.started("seq_read_mib_s", min_time.as_millis() as u64);
    let chunk = HDPARM_CHUNK as u64;
    // A device smaller than the test is read again from the start.
    let span = (size / chunk).max(1) * chunk;
    let mut offset = 0u64;
    timed_reads(file, min_time, HDPARM_MAX_READS, observer, || {
        let this = offset;
        offset = (offset + chunk) % span;
        this
    })
}

/// `hdparm -T --direct`: one priming read of the first 2 MiB, then re-reads
/// of it for 2 s. With O_DIRECT this is the device and its own cache.
fn hdparm_cached(file: &File, time: Duration, observer: &dyn Observer) -> Result<(f64, TestDetail), EngineError> {
    observer.started("cached_read_mib_s", time.as_millis() as u64);
    let mut buf = AlignedBuf::zeroed(HDPARM_CHUNK);
    read_exact_at(file, &mut buf, 0)?;
    timed_reads(file, time, u64::MAX, observer, || 0)
}

fn timed_reads(
    file: &File,
    min_time: Duration,
    max_reads: u64,
    observer: &dyn Observer,
    mut next_offset: impl FnMut() -> u64,
) -> Result<(f64, TestDetail), EngineError> {
    let mut buf = AlignedBuf::zeroed(HDPARM_CHUNK);
    let start = Instant::now();
    let mut recorder = Recorder::new(start);
    let mut reads = 0u64;
    let elapsed = loop {
        let issued = Instant::now();
        read_exact_at(file, &mut buf, next_offset())?;
        let now = Instant::now();
        recorder.record(now, now - issued, HDPARM_CHUNK as u64);
        reads += 1;
        let elapsed = now - start;
        observer.progress(elapsed.as_millis() as u64);
        if elapsed >= min_time || reads >= max_reads {
            break elapsed;
        }
    };
    let mib_s = round_to(recorder.bytes as f64 / MIB as f64 / elapsed.as_secs_f64(), 2);
    let done = Completed { recorder, elapsed, engine: "sync" };
    Ok((mib_s, detail(&done, elapsed)))
}

fn read_exact_at(file: &File, buf: &mut AlignedBuf, offset: u64) -> Result<(), EngineError> {
    let offsets = [offset];
    let len = buf.len();
    let work = Workload { fd: file.as_fd(), offsets: &offsets, block_size: len, write: false, data: Data::Zeros };
    engine::run_sync(&work, &|_| {}).map(drop)
}

/// `dd if=/dev/zero of=FILE bs=4k count=130k conv=fsync`: buffered 4 KiB
/// writes of zeros, then fsync, all timed. MB/s (10^6 B), rounded as
/// coreutils dd prints its rate (see [`like_dd`]).
fn dd_like(file: &File, bytes: u64, observer: &dyn Observer) -> Result<(f64, TestDetail), EngineError> {
    let count = bytes / BLOCK as u64;
    observer.started("seq_write_mb_s", count);
    let offsets: Vec<u64> = (0..count).map(|i| i * BLOCK as u64).collect();
    let work = Workload { fd: file.as_fd(), offsets: &offsets, block_size: BLOCK, write: true, data: Data::Zeros };
    let done = engine::run_sync(&work, &|done| observer.progress(done))?;
    let t = Instant::now();
    fsync(file)?;
    let elapsed = done.elapsed + t.elapsed();
    let mb_s = like_dd(done.recorder.bytes as f64 / 1e6 / elapsed.as_secs_f64());
    Ok((mb_s, detail(&done, elapsed)))
}

/// Writes the test file once, in 1 MiB O_DIRECT chunks of random data, so
/// the fio-like and iozone-like tests find its blocks allocated.
fn lay_out(file: &File, bytes: u64) -> Result<(), EngineError> {
    scratch::set_direct(file, true).map_err(|source| EngineError::Call { op: "fcntl(O_DIRECT)", source })?;
    let chunk = MIB as usize;
    let offsets: Vec<u64> = (0..bytes / MIB).map(|i| i * MIB).collect();
    let work =
        Workload { fd: file.as_fd(), offsets: &offsets, block_size: chunk, write: true, data: Data::Random(0x1a70) };
    engine::run_sync(&work, &|_| {})?;
    fsync(file)
}

fn fsync(file: &File) -> Result<(), EngineError> {
    file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })
}

/// Size of a block device (BLKGETSIZE64) or regular file.
fn device_size(file: &File) -> u64 {
    use std::os::fd::AsRawFd;
    nix::ioctl_read!(blkgetsize64, 0x12, 114, u64);
    let mut size = 0u64;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`; on a non-block fd it fails harmlessly.
    if unsafe { blkgetsize64(file.as_raw_fd(), &mut size) }.is_ok() && size > 0 {
        return size;
    }
    file.metadata().map(|m| m.len()).unwrap_or(0)
}

fn round_to(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

/// Rounds a MB/s rate the way coreutils dd prints it, since PiBenchmarks
/// scored dd's printed figure. dd's human-readable SI output keeps one
/// decimal below 100 (`5.8 MB/s`, `33.4 MB/s`), none from 100 to 999
/// (`370 MB/s`), and switches to GB/s from 1000 (`1.2 GB/s` = 1200 MB/s);
/// these outputs were read off Debian's dd on this machine.
pub fn like_dd(mb_s: f64) -> f64 {
    if !mb_s.is_finite() || mb_s <= 0.0 {
        return mb_s;
    }
    if mb_s < 100.0 {
        round_to(mb_s, 1)
    } else if mb_s < 1000.0 {
        mb_s.round()
    } else {
        like_dd(mb_s / 1000.0) * 1000.0
    }
}

/// Is `path` a directory we could write a scratch file in?
pub fn writable_dir(path: &Path) -> bool {
    nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_like_dd() {
        assert_eq!(like_dd(5.83), 5.8);
        assert_eq!(like_dd(33.44), 33.4);
        assert_eq!(like_dd(370.3), 370.0);
        assert_eq!(like_dd(1234.5), 1200.0);
    }

    #[test]
    fn file_tests_are_the_six_4k_tests() {
        assert_eq!(FILE_TESTS.len(), 6);
        assert!(FILE_TESTS.iter().all(|k| k.contains("_4k_")));
    }

    #[test]
    fn scratch_need_is_the_larger_test() {
        let plan = Plan {
            read_device: Err(String::new()),
            write_target: WriteTarget::Unavailable(String::new()),
            profile: Profile::Compat,
            keys: MEASUREMENT_KEYS.iter().map(|k| k.to_string()).collect(),
            engine: EngineChoice::Auto,
        };
        assert_eq!(plan.scratch_bytes(), 520 * MIB);
        let only_file = Plan { keys: vec!["rand_read_4k_qd64_iops".into()], ..plan };
        assert_eq!(only_file.scratch_bytes(), 80 * MIB);
    }
}
