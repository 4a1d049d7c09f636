//! The I/O engine: runs a list of block-sized reads or writes at a given
//! queue depth and records each one.
//!
//! Three ways to keep requests in flight:
//! - **io_uring** ([`uring`]): one ring per job, `depth` requests in it,
//!   registered buffers where the kernel allows; the closest thing to fio's
//!   io_uring/libaio engines.
//! - **threads** ([`threads`]): `depth` threads per job, each doing
//!   `pread`/`pwrite`, for kernels or sandboxes that refuse io_uring (ENOSYS,
//!   EPERM under seccomp).
//! - **sync** (queue depth 1): `pread`/`pwrite` on the calling thread, as
//!   iozone and hdparm do.
//!
//! The workload API is general on purpose (block size, queue depth, jobs, a
//! time box, the data pattern), so deeper studies can reuse it.
//!
//! Runtime is measured from the moment every worker is set up (threads
//! spawned, buffers allocated and registered) to the last completion, as fio
//! does, and every completion feeds the latency histogram. A transfer that
//! moves fewer bytes than asked, or comes back with EAGAIN/EINTR, is issued
//! again for the remainder, as fio's `io_u` requeue does; only a transfer of
//! zero bytes (the end of the device) is an error.

mod threads;
mod uring;

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Barrier, OnceLock};
use std::time::{Duration, Instant};
pub use storage_scoring::kinds::Engine;

use crate::buffer::AlignedBuf;
use crate::interrupt;
use crate::recorder::Recorder;

/// Which queue-depth engine to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EngineChoice {
    /// io_uring, falling back to threads where the kernel refuses it.
    #[default]
    Auto,
    IoUring,
    Threads,
}

/// A list of same-sized I/Os against one open file or device.
#[derive(Debug, Clone, Copy)]
pub struct Workload<'a> {
    pub fd: BorrowedFd<'a>,
    /// Byte offsets, in the order they are issued. Each is block-aligned.
    pub offsets: &'a [u64],
    pub block_size: usize,
    pub write: bool,
    /// What write buffers hold (ignored for reads).
    pub data: Data,
    /// No new I/O is issued from this instant on; the result is then
    /// [`Completed::partial`]. I/O already in flight still completes.
    pub deadline: Option<Instant>,
    /// Keep every I/O's completion time and latency ([`Recorder::trace`]).
    pub trace: bool,
    /// No new I/O is issued once this says so (the progress callback sets
    /// it when the figure has settled); the result is whole, not partial.
    pub enough: Option<&'a Enough>,
    /// I/Os that complete this soon after the start are done but not
    /// counted (fio's `ramp_time`): the clock starts after it.
    pub ramp: Duration,
}

/// When a workload has done enough: a time after which no new I/O is
/// issued. The first completion after that time ends the run, as in a
/// time-based fio job or hdparm's timed loop, so a device that completes
/// requests in bursts (a rate limiter) is not caught in the middle of one.
#[derive(Debug, Default)]
pub struct Enough {
    set: AtomicBool,
    at: OnceLock<Instant>,
}

impl Enough {
    /// No new I/O from `at` on (the first call wins).
    pub fn after(&self, at: Instant) {
        let _ = self.at.set(at);
        self.set.store(true, Ordering::Release);
    }

    fn reached(&self) -> bool {
        self.at().is_some_and(|at| Instant::now() >= at)
    }

    /// The time set by [`Enough::after`], once it is.
    pub fn at(&self) -> Option<Instant> {
        if self.set.load(Ordering::Acquire) { self.at.get().copied() } else { None }
    }
}

impl<'a> Workload<'a> {
    /// A workload with no deadline.
    pub fn new(fd: BorrowedFd<'a>, offsets: &'a [u64], block_size: usize, write: bool, data: Data) -> Self {
        Workload {
            fd,
            offsets,
            block_size,
            write,
            data,
            deadline: None,
            trace: false,
            enough: None,
            ramp: Duration::ZERO,
        }
    }

    fn op(&self) -> &'static str {
        if self.write { "write" } else { "read" }
    }

    fn past_deadline(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn has_enough(&self) -> bool {
        self.enough.is_some_and(Enough::reached)
    }

    /// A recorder for one of this workload's jobs or workers, counting
    /// from `start`: windowed when the workload may be told it has enough.
    fn recorder(&self, start: Instant) -> Recorder {
        Recorder::new(start).traced(self.trace).windowed(self.enough.is_some())
    }

    /// Tells `recorder` when its window closes, once that is known.
    fn close_window(&self, recorder: &mut Recorder) {
        if let Some(at) = self.enough.and_then(Enough::at) {
            recorder.close_from(at);
        }
    }
}

/// How many requests to keep in flight: `jobs` independent workers (each
/// with its own share of the offsets, in order) of `depth` requests each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub depth: usize,
    pub jobs: usize,
}

impl Shape {
    /// One job at queue depth `depth`.
    pub fn depth(depth: usize) -> Self {
        Shape { depth, jobs: 1 }
    }

    fn clamped(self) -> Self {
        Shape { depth: self.depth.clamp(1, 4096), jobs: self.jobs.clamp(1, 256) }
    }
}

/// Contents of the write buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Incompressible pseudo-random bytes from this seed, changed for every
    /// I/O (see [`stamp`]), so that a device that compresses or deduplicates
    /// cannot flatter itself.
    Random(u64),
    /// Zeros, as dd reads them from /dev/zero.
    Zeros,
}

impl Data {
    /// A buffer of `len` bytes; worker `n` of a pool gets its own stream.
    fn buffer(self, len: usize, n: u64) -> AlignedBuf {
        match self {
            Data::Random(seed) => AlignedBuf::random(len, seed.wrapping_add(n)),
            Data::Zeros => AlignedBuf::zeroed(len),
        }
    }
}

/// Makes a write buffer unique before it is sent: the first 16 bytes of
/// every 512-byte sector get that sector's byte offset and a number that
/// differs for every I/O. fio does the same by default (`scramble_buffers=1`
/// puts the offset and the issue time into each 512-byte block, io_u.c
/// `small_content_scramble`), so a drive that deduplicates or compresses
/// sees no repeated block, even when the same block is written twice.
pub fn stamp(buf: &mut [u8], offset: u64, serial: u64) {
    for (i, sector) in buf.chunks_exact_mut(512).enumerate() {
        let sector_offset = offset.wrapping_add(i as u64 * 512);
        sector[..8].copy_from_slice(&sector_offset.to_le_bytes());
        sector[8..16].copy_from_slice(&serial.to_le_bytes());
    }
}

/// A process-wide counter for [`stamp`], so that no two writes of a run,
/// in any engine or job, carry the same stamp.
fn next_serial() -> u64 {
    static SERIAL: IoCounter = IoCounter::new(1);
    SERIAL.fetch_add(1, Ordering::Relaxed) as u64
}

/// A count of I/Os shared between workers. Not `AtomicU64`: ARMv5 (the
/// armv5te build for the Pi Zero and 1) has no 64-bit atomics, and a usize
/// holds more I/Os than any run makes (4 billion at 100k IOPS is 11 hours).
pub(crate) type IoCounter = AtomicUsize;

/// What went wrong inside a workload.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("{op} at byte {offset} failed: {source}")]
    Io { op: &'static str, offset: u64, source: io::Error },
    /// A call that has no file offset (fsync, fcntl, dup).
    #[error("{op} failed: {source}")]
    Call { op: &'static str, source: io::Error },
    #[error("{op} at byte {offset} moved {got} of {want} bytes (the device ended early or lied about its size)")]
    Short { op: &'static str, offset: u64, got: usize, want: usize },
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
    /// `--max-time` ran out before the test could start timing.
    #[error("--max-time ran out {0}")]
    TimeUp(&'static str),
    #[error("could not set up io_uring: {0}")]
    Setup(io::Error),
    /// A worker died: its I/Os would be missing from the figure, so there is none.
    #[error(
        "an I/O worker failed unexpectedly ({0}); no figure is kept rather than an undercount (please report this)"
    )]
    Panicked(String),
}

/// A finished workload.
#[derive(Debug)]
pub struct Completed {
    pub recorder: Recorder,
    /// From the moment every worker was set up to the last completion.
    pub elapsed: Duration,
    /// `io_uring`, `threads` or `sync`.
    pub engine: Engine,
    /// How the engine ran, when there is more to say than its name: the
    /// io_uring opcodes used, or why it fell back to threads.
    pub engine_detail: Option<String>,
    /// The engine asked for was refused something (a ring, registered
    /// buffers) and this ran another way, which `engine_detail` names.
    pub fell_back: bool,
    /// The deadline stopped it before every offset was issued.
    pub partial: bool,
    /// CPU time (user + system) the engine's own threads used from the
    /// start of the clock to their last completion, as fio counts a job's
    /// (`getrusage(RUSAGE_THREAD)` around the job, lib/getrusage.c).
    pub cpu: Duration,
}

/// Called now and then with the number of I/Os completed so far: every few
/// hundred I/Os, and at least every [`REPORT_EVERY`] while I/Os complete, so
/// that a slow device is noticed (and its ETA told) early.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// The longest wait between two progress reports while I/Os complete
/// (short enough for the quick profile to watch a figure settle).
pub const REPORT_EVERY: Duration = Duration::from_millis(50);

/// Runs `work` with `shape.jobs` jobs of `shape.depth` requests in flight each.
pub fn run_queued(
    work: &Workload<'_>,
    shape: Shape,
    choice: EngineChoice,
    progress: Progress<'_>,
) -> Result<Completed, EngineError> {
    let shape = shape.clamped();
    match choice {
        EngineChoice::Threads => threads::run(work, shape, progress, None),
        EngineChoice::IoUring => uring::run(work, shape, progress),
        EngineChoice::Auto => match uring::run(work, shape, progress) {
            Err(EngineError::Setup(e)) if uring_refused(&e) => {
                threads::run(work, shape, progress, Some(format!("io_uring refused ({})", memlock_hint(&e))))
            }
            other => other,
        },
    }
}

/// An io_uring setup or registration error, with the likely cause named:
/// rings and registered buffers are charged to RLIMIT_MEMLOCK for a user
/// without CAP_IPC_LOCK.
fn memlock_hint(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ENOMEM) => format!("{e}: the memlock limit (ulimit -l) is too small for pinned buffers"),
        _ => e.to_string(),
    }
}

/// True for the errors a kernel or sandbox gives when io_uring is not allowed.
fn uring_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM | libc::EACCES | libc::ENOMEM | libc::EINVAL))
}

/// Runs `work` one I/O at a time on the calling thread.
pub fn run_sync(work: &Workload<'_>, progress: Progress<'_>) -> Result<Completed, EngineError> {
    let mut buf = buffer_for(work, 1);
    let cpu_at_start = thread_cpu();
    let began = Instant::now();
    let start = began + work.ramp;
    let mut recorder = work.recorder(start);
    let mut partial = false;
    let mut last_report = began;
    let mut completed = 0u64;
    for (i, &offset) in work.offsets.iter().enumerate() {
        check_interrupt()?;
        if work.has_enough() {
            break;
        }
        if work.past_deadline() {
            partial = true;
            break;
        }
        if work.write && matches!(work.data, Data::Random(_)) {
            stamp(&mut buf.as_mut_slice()[..work.block_size], offset, next_serial());
        }
        let issued = Instant::now();
        transfer(work.fd.as_raw_fd(), &mut buf, work.block_size, offset, work.write)?;
        let done = Instant::now();
        work.close_window(&mut recorder);
        recorder.record(done, done - issued, work.block_size as u64);
        completed = i as u64 + 1;
        if i % 64 == 63 || done - last_report >= REPORT_EVERY {
            last_report = done;
            report(progress, completed)?;
        }
    }
    let elapsed = recorder.elapsed();
    let cpu = thread_cpu().saturating_sub(cpu_at_start);
    // Every I/O done, the ramp's included, as the reports above counted.
    report(progress, completed)?;
    Ok(Completed { recorder, elapsed, engine: Engine::Sync, engine_detail: None, fell_back: false, partial, cpu })
}

fn buffer_for(work: &Workload<'_>, slots: usize) -> AlignedBuf {
    let len = work.block_size * slots;
    if work.write { work.data.buffer(len, 0) } else { AlignedBuf::zeroed(len) }
}

fn check_interrupt() -> Result<(), EngineError> {
    match interrupt::requested() {
        Some(signal) => Err(EngineError::Interrupted(signal)),
        None => Ok(()),
    }
}

/// Calls the progress callback; a panic in it is an error, not an unwind
/// through I/O that may still be in flight.
fn report(progress: Progress<'_>, done: u64) -> Result<(), EngineError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| progress(done)))
        .map_err(|panic| EngineError::Panicked(panic_message(&*panic)))
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_owned())
}

/// Consecutive EAGAIN/EINTR answers for one request before giving up.
const MAX_RETRIES: u32 = 10_000;

/// One request that may need several transfers to finish.
#[derive(Debug, Clone, Copy)]
struct Pending {
    offset: u64,
    len: usize,
    /// Bytes already moved.
    done: usize,
    retries: u32,
}

/// What to do after a transfer of a [`Pending`] request returned `result`
/// (bytes moved, or a negative errno).
#[derive(Debug)]
enum Next {
    Complete,
    /// Issue the rest: `len - done` bytes at `offset + done`.
    Resubmit,
    Fail(EngineError),
}

impl Pending {
    fn new(offset: u64, len: usize) -> Self {
        Pending { offset, len, done: 0, retries: 0 }
    }

    fn on_result(&mut self, result: i64, op: &'static str) -> Next {
        if result == -i64::from(libc::EAGAIN) || result == -i64::from(libc::EINTR) {
            self.retries += 1;
            return if self.retries > MAX_RETRIES {
                Next::Fail(EngineError::Io {
                    op,
                    offset: self.offset + self.done as u64,
                    source: io::Error::from_raw_os_error(-result as i32),
                })
            } else {
                Next::Resubmit
            };
        }
        if result < 0 {
            let source = io::Error::from_raw_os_error(i32::try_from(-result).unwrap_or(libc::EIO));
            return Next::Fail(EngineError::Io { op, offset: self.offset + self.done as u64, source });
        }
        if result == 0 {
            return Next::Fail(EngineError::Short { op, offset: self.offset, got: self.done, want: self.len });
        }
        self.retries = 0;
        self.done = (self.done + result as usize).min(self.len);
        if self.done == self.len { Next::Complete } else { Next::Resubmit }
    }

    fn remaining(&self) -> (u64, usize, usize) {
        (self.offset + self.done as u64, self.done, self.len - self.done)
    }
}

/// One positioned read or write of exactly `len` bytes into/from `buf`,
/// resubmitting the remainder of a short transfer.
fn transfer(fd: RawFd, buf: &mut AlignedBuf, len: usize, offset: u64, write: bool) -> Result<(), EngineError> {
    let op = if write { "write" } else { "read" };
    assert!(len <= buf.len(), "transfer longer than its buffer");
    let mut pending = Pending::new(offset, len);
    loop {
        let (at, skip, want) = pending.remaining();
        let at = libc::off64_t::try_from(at).map_err(|_| EngineError::Io {
            op,
            offset: at,
            source: io::Error::from_raw_os_error(libc::EOVERFLOW),
        })?;
        // SAFETY: `skip + want <= len <= buf.len()` (checked above), so the
        // pointer range lies inside `buf`, which outlives the call.
        let n = unsafe {
            let ptr = buf.ptr_at(skip);
            if write { libc::pwrite64(fd, ptr.cast(), want, at) } else { libc::pread64(fd, ptr.cast(), want, at) }
        };
        let result =
            if n < 0 { -i64::from(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)) } else { n as i64 };
        match pending.on_result(result, op) {
            Next::Complete => return Ok(()),
            Next::Resubmit => {
                if result == -i64::from(libc::EINTR) {
                    check_interrupt()?;
                }
            }
            Next::Fail(e) => return Err(e),
        }
    }
}

/// Holds every worker until all are set up, then gives them one common
/// start time, so that thread creation and buffer setup stay off the clock.
struct StartGate {
    barrier: Barrier,
    start: OnceLock<Instant>,
}

impl StartGate {
    fn new(parties: usize) -> Self {
        StartGate { barrier: Barrier::new(parties), start: OnceLock::new() }
    }

    /// Waits for every party; all return the same instant.
    fn wait(&self) -> Instant {
        if self.barrier.wait().is_leader() {
            let _ = self.start.set(Instant::now());
        }
        self.barrier.wait();
        *self.start.get_or_init(Instant::now)
    }
}

/// The offsets of job `job` of `jobs`: contiguous, in order.
fn share(offsets: &[u64], job: usize, jobs: usize) -> &[u64] {
    let per = offsets.len().div_ceil(jobs.max(1));
    let from = (job * per).min(offsets.len());
    let to = ((job + 1) * per).min(offsets.len());
    &offsets[from..to]
}

/// What one job or worker hands back.
struct Part {
    recorder: Recorder,
    partial: bool,
    /// The CPU time its thread used while timed.
    cpu: Duration,
}

/// The parts of a run merged.
struct Merged {
    recorder: Recorder,
    elapsed: Duration,
    partial: bool,
    cpu: Duration,
}

/// Merges the parts of a run that started at `start`.
fn merge(start: Instant, parts: Vec<Part>) -> Merged {
    let mut recorder = Recorder::new(start);
    let (mut partial, mut cpu) = (false, Duration::ZERO);
    for part in &parts {
        recorder.merge(&part.recorder);
        partial |= part.partial;
        cpu += part.cpu;
    }
    let elapsed = recorder.elapsed();
    Merged { recorder, elapsed, partial, cpu }
}

/// The user + system CPU time the calling thread has used so far (zero if
/// the kernel will not say).
pub(crate) fn thread_cpu() -> Duration {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes one rusage into `usage`, which outlives the call.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let time = |t: libc::timeval| {
        Duration::from_secs(u64::try_from(t.tv_sec).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec).unwrap_or(0))
    };
    time(usage.ru_utime) + time(usage.ru_stime)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::fs::FileExt;

    fn file_with(len: usize) -> std::fs::File {
        let mut f = tempfile::tempfile().expect("tempfile");
        f.write_all(&vec![7u8; len]).expect("fill");
        f
    }

    fn offsets(n: u64) -> Vec<u64> {
        (0..n).map(|i| ((i * 7) % n) * 4096).collect()
    }

    fn engines(work: &Workload<'_>, depth: usize) -> Vec<Completed> {
        vec![
            run_sync(work, &|_| {}).expect("sync"),
            run_queued(work, Shape::depth(depth), EngineChoice::Threads, &|_| {}).expect("threads"),
            run_queued(work, Shape::depth(depth), EngineChoice::Auto, &|_| {}).expect("auto"),
            run_queued(work, Shape { depth, jobs: 3 }, EngineChoice::Auto, &|_| {}).expect("auto, 3 jobs"),
            run_queued(work, Shape { depth: 2, jobs: 3 }, EngineChoice::Threads, &|_| {}).expect("threads, 3 jobs"),
        ]
    }

    #[test]
    fn every_engine_completes_every_io() {
        let f = file_with(256 * 4096);
        let offs = offsets(256);
        for write in [false, true] {
            let work = Workload::new(f.as_fd(), &offs, 4096, write, Data::Random(1));
            for done in engines(&work, 8) {
                assert_eq!(done.recorder.ios, 256, "{}", done.engine);
                assert_eq!(done.recorder.bytes, 256 * 4096);
                assert!(!done.partial);
            }
        }
    }

    #[test]
    fn a_traced_workload_keeps_every_io_in_every_engine() {
        let f = file_with(64 * 4096);
        let offs = offsets(64);
        let mut work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Zeros);
        work.trace = true;
        for done in engines(&work, 4) {
            let trace = done.recorder.trace();
            assert_eq!(trace.len(), 64, "{}", done.engine);
            assert!(trace.windows(2).all(|w| w[0].done <= w[1].done), "{}: completion order", done.engine);
            assert!(trace.iter().all(|t| t.latency <= t.done + Duration::from_millis(1)), "{}", done.engine);
        }
    }

    #[test]
    fn reading_past_the_end_is_a_short_io_error() {
        let f = file_with(4096);
        let offs = [0u64, 4096];
        let work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Random(1));
        for choice in [EngineChoice::Auto, EngineChoice::Threads] {
            let err = run_queued(&work, Shape::depth(2), choice, &|_| {}).expect_err("short read");
            assert!(matches!(err, EngineError::Short { offset: 4096, got: 0, .. }), "{err}");
        }
        assert!(matches!(run_sync(&work, &|_| {}), Err(EngineError::Short { .. })));
    }

    #[test]
    fn a_half_transfer_is_resubmitted_for_the_rest() {
        // 1.5 blocks: the read at 4096 gets 2048 bytes, then 0 (the end).
        // Resubmitting the rest is what reports got=2048 rather than giving
        // up at the first short answer.
        let f = file_with(4096 + 2048);
        let offs = [4096u64];
        let work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Random(1));
        for result in [
            run_sync(&work, &|_| {}),
            run_queued(&work, Shape::depth(1), EngineChoice::Threads, &|_| {}),
            run_queued(&work, Shape::depth(1), EngineChoice::IoUring, &|_| {}),
        ] {
            let err = result.expect_err("past the end");
            assert!(matches!(err, EngineError::Short { offset: 4096, got: 2048, want: 4096, .. }), "{err}");
        }
    }

    #[test]
    fn a_pipe_that_delivers_in_pieces_completes_through_io_uring() {
        // A pipe hands a read whatever has arrived: the first answer is
        // short, and the engine must ask again for the remainder.
        let (reader, writer) = nix::unistd::pipe().expect("pipe");
        let feeder = std::thread::spawn(move || {
            let mut writer = std::fs::File::from(writer);
            writer.write_all(&[1u8; 1000]).expect("first piece");
            std::thread::sleep(Duration::from_millis(50));
            writer.write_all(&[2u8; 4096 - 1000]).expect("second piece");
        });
        let offs = [0u64];
        let work = Workload::new(reader.as_fd(), &offs, 4096, false, Data::Zeros);
        let done = run_queued(&work, Shape::depth(1), EngineChoice::IoUring, &|_| {}).expect("read in two pieces");
        feeder.join().expect("feeder");
        assert_eq!(done.recorder.bytes, 4096);
        assert_eq!(done.recorder.ios, 1, "one request, however many transfers");
    }

    #[test]
    fn eagain_and_short_answers_are_retried_and_zero_is_the_end() {
        let mut p = Pending::new(8192, 4096);
        assert!(matches!(p.on_result(-i64::from(libc::EAGAIN), "read"), Next::Resubmit));
        assert_eq!(p.remaining(), (8192, 0, 4096), "EAGAIN resubmits the whole request");
        assert!(matches!(p.on_result(1024, "read"), Next::Resubmit));
        assert_eq!(p.remaining(), (8192 + 1024, 1024, 3072));
        assert!(matches!(p.on_result(-i64::from(libc::EINTR), "read"), Next::Resubmit));
        assert!(matches!(p.on_result(3072, "read"), Next::Complete));
        let mut end = Pending::new(0, 4096);
        assert!(matches!(end.on_result(512, "read"), Next::Resubmit));
        assert!(matches!(end.on_result(0, "read"), Next::Fail(EngineError::Short { got: 512, .. })));
        let mut eio = Pending::new(4096, 4096);
        assert!(matches!(
            eio.on_result(-i64::from(libc::EIO), "write"),
            Next::Fail(EngineError::Io { offset: 4096, .. })
        ));
        let mut stuck = Pending::new(0, 4096);
        let gave_up = (0..=MAX_RETRIES).map(|_| stuck.on_result(-i64::from(libc::EAGAIN), "read")).last();
        assert!(matches!(gave_up, Some(Next::Fail(EngineError::Io { .. }))));
    }

    #[test]
    fn every_write_carries_different_data() {
        // The same 64 blocks written twice over: no two 4 KiB blocks the
        // device saw may be equal, within a pass or between the passes.
        for (name, run) in [
            (
                "sync",
                &(|w: &Workload<'_>| run_sync(w, &|_| {})) as &dyn Fn(&Workload<'_>) -> Result<Completed, EngineError>,
            ),
            ("threads", &|w: &Workload<'_>| run_queued(w, Shape::depth(8), EngineChoice::Threads, &|_| {})),
            ("io_uring", &|w: &Workload<'_>| run_queued(w, Shape::depth(8), EngineChoice::IoUring, &|_| {})),
        ] {
            let f = file_with(64 * 4096);
            let offs = offsets(64);
            let mut seen = HashSet::new();
            for _ in 0..2 {
                run(&Workload::new(f.as_fd(), &offs, 4096, true, Data::Random(9))).expect(name);
                let mut block = vec![0u8; 4096];
                for b in 0..64u64 {
                    f.read_exact_at(&mut block, b * 4096).expect("read back");
                    assert!(seen.insert(block.clone()), "{name}: block {b} repeats data already written");
                }
            }
        }
    }

    #[test]
    fn setup_is_off_the_clock() {
        // 64 threads are spawned and 64 buffers allocated, but no I/O is
        // done: the clock starts when they are ready, so nothing elapses.
        let f = file_with(4096);
        let work = Workload::new(f.as_fd(), &[], 4096, true, Data::Random(1));
        for choice in [EngineChoice::Threads, EngineChoice::IoUring] {
            let done = run_queued(&work, Shape::depth(64), choice, &|_| {}).expect("empty");
            assert_eq!(done.elapsed, Duration::ZERO, "{}", done.engine);
        }
    }

    #[test]
    fn a_worker_that_panics_is_an_error_not_an_undercount() {
        let f = file_with(1024 * 4096);
        let offs = offsets(1024);
        let work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Zeros);
        let explode = |done: u64| {
            if done >= 256 {
                panic!("progress callback failed");
            }
        };
        for choice in [EngineChoice::Threads, EngineChoice::IoUring] {
            let err = run_queued(&work, Shape::depth(4), choice, &explode).expect_err("a panic is an error");
            assert!(matches!(err, EngineError::Panicked(_)), "{err}");
        }
        assert!(matches!(run_sync(&work, &explode), Err(EngineError::Panicked(_))));
    }

    #[test]
    fn a_deadline_stops_issuing_and_marks_the_result_partial() {
        let f = file_with(256 * 4096);
        let offs = offsets(256);
        let mut work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Zeros);
        work.deadline = Some(Instant::now());
        for done in engines(&work, 4) {
            assert!(done.partial, "{}", done.engine);
            assert!(done.recorder.ios < 256, "{}: {} I/Os", done.engine, done.recorder.ios);
        }
    }

    #[test]
    fn enough_stops_issuing_and_the_result_is_whole() {
        // The progress callback says "enough" after 256 I/Os: every engine
        // stops issuing soon after, and the figure is not partial.
        let f = file_with(256 * 4096);
        let offs: Vec<u64> = (0..64 * 256).map(|i| (i % 256) * 4096).collect();
        for engine in [None, Some(EngineChoice::Threads), Some(EngineChoice::IoUring)] {
            let enough = Enough::default();
            let mut work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Zeros);
            work.enough = Some(&enough);
            let say_enough = |done: u64| {
                if done >= 256 {
                    enough.after(Instant::now());
                }
            };
            let done = match engine {
                None => run_sync(&work, &say_enough),
                Some(choice) => run_queued(&work, Shape::depth(8), choice, &say_enough),
            }
            .expect("run");
            assert!(!done.partial, "{}", done.engine);
            assert!(
                done.recorder.ios >= 256 && done.recorder.ios < 2048,
                "{}: {} I/Os",
                done.engine,
                done.recorder.ios
            );
        }
    }

    #[test]
    fn a_ramp_is_done_but_not_counted() {
        // Every I/O completes inside an hour's ramp: all are done, none is
        // counted, in every engine.
        let f = file_with(64 * 4096);
        let offs = offsets(64);
        let mut work = Workload::new(f.as_fd(), &offs, 4096, false, Data::Zeros);
        work.ramp = Duration::from_secs(3600);
        let done = std::sync::atomic::AtomicUsize::new(0);
        let progress = |n: u64| {
            done.fetch_max(n as usize, Ordering::Relaxed);
        };
        for result in [
            run_sync(&work, &progress),
            run_queued(&work, Shape::depth(8), EngineChoice::Threads, &progress),
            run_queued(&work, Shape::depth(8), EngineChoice::IoUring, &progress),
        ] {
            let result = result.expect("run");
            assert_eq!((result.recorder.ios, result.elapsed), (0, Duration::ZERO), "{}", result.engine);
            assert!(!result.partial, "{}", result.engine);
        }
        assert_eq!(done.load(Ordering::Relaxed), 64, "every I/O was done");
    }

    #[test]
    fn jobs_share_the_offsets_without_overlap() {
        let offs: Vec<u64> = (0..10).collect();
        let parts: Vec<&[u64]> = (0..3).map(|j| share(&offs, j, 3)).collect();
        assert_eq!(parts.concat(), offs);
        assert_eq!(share(&offs, 5, 6).len(), 0);
    }
}
