//! The I/O engine: runs a list of block-sized reads or writes at a given
//! queue depth and records each one.
//!
//! Three ways to keep requests in flight:
//! - **io_uring** (queue depth N): one thread, N requests in the ring, fixed
//!   (registered) buffers; the closest thing to fio's io_uring/libaio engines.
//! - **threads** (queue depth N): N threads each doing `pread`/`pwrite`, for
//!   kernels or sandboxes that refuse io_uring (ENOSYS, EPERM under seccomp).
//! - **sync** (queue depth 1): `pread`/`pwrite` on the calling thread, as
//!   iozone does.
//!
//! Runtime is measured from the first submission to the last completion, as
//! fio does, and every completion feeds the latency histogram.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use io_uring::{IoUring, opcode, types};

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
}

/// Contents of the write buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Incompressible pseudo-random bytes from this seed, so a device that
    /// compresses or deduplicates cannot flatter itself.
    Random(u64),
    /// Zeros, as dd reads them from /dev/zero.
    Zeros,
}

impl Data {
    /// A buffer of `len` bytes; worker `n` of a thread pool gets its own stream.
    fn buffer(self, len: usize, n: u64) -> AlignedBuf {
        match self {
            Data::Random(seed) => AlignedBuf::random(len, seed.wrapping_add(n)),
            Data::Zeros => AlignedBuf::zeroed(len),
        }
    }
}

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
    #[error("could not set up io_uring: {0}")]
    Setup(io::Error),
}

/// A finished workload.
#[derive(Debug)]
pub struct Completed {
    pub recorder: Recorder,
    /// First submission to last completion.
    pub elapsed: Duration,
    /// `io_uring`, `threads` or `sync`.
    pub engine: &'static str,
}

/// Called now and then with the number of I/Os completed so far.
pub type Progress<'a> = &'a (dyn Fn(u64) + Sync);

/// Runs `work` at queue depth `depth`.
pub fn run_queued(
    work: &Workload<'_>,
    depth: usize,
    choice: EngineChoice,
    progress: Progress<'_>,
) -> Result<Completed, EngineError> {
    let depth = depth.clamp(1, 4096);
    match choice {
        EngineChoice::Threads => run_threads(work, depth, progress),
        EngineChoice::IoUring => run_uring(work, depth, progress),
        EngineChoice::Auto => match run_uring(work, depth, progress) {
            Err(EngineError::Setup(e)) if uring_refused(&e) => run_threads(work, depth, progress),
            other => other,
        },
    }
}

/// True for the errors a kernel or sandbox gives when io_uring is not allowed.
fn uring_refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM | libc::EACCES | libc::ENOMEM | libc::EINVAL))
}

/// Runs `work` one I/O at a time on the calling thread.
pub fn run_sync(work: &Workload<'_>, progress: Progress<'_>) -> Result<Completed, EngineError> {
    let mut buf = buffer_for(work, 1);
    let start = Instant::now();
    let mut recorder = Recorder::new(start);
    for (i, &offset) in work.offsets.iter().enumerate() {
        check_interrupt()?;
        let issued = Instant::now();
        transfer(work.fd.as_raw_fd(), &mut buf, work.block_size, offset, work.write)?;
        let done = Instant::now();
        recorder.record(done, done - issued, work.block_size as u64);
        if i % 64 == 63 {
            progress(i as u64 + 1);
        }
    }
    let elapsed = start.elapsed();
    progress(work.offsets.len() as u64);
    Ok(Completed { recorder, elapsed, engine: "sync" })
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

/// One positioned read or write of exactly `len` bytes into/from `buf`.
fn transfer(fd: RawFd, buf: &mut AlignedBuf, len: usize, offset: u64, write: bool) -> Result<(), EngineError> {
    let op = if write { "write" } else { "read" };
    let offset_arg = libc::off64_t::try_from(offset).map_err(|_| EngineError::Io {
        op,
        offset,
        source: io::Error::from_raw_os_error(libc::EOVERFLOW),
    })?;
    loop {
        // SAFETY: buf is valid for `len` bytes (len <= buf.len(), checked by the
        // callers' construction) and outlives the call.
        let n = unsafe {
            if write {
                libc::pwrite64(fd, buf.as_slice().as_ptr().cast(), len, offset_arg)
            } else {
                libc::pread64(fd, buf.as_mut_slice().as_mut_ptr().cast(), len, offset_arg)
            }
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                check_interrupt()?;
                continue;
            }
            return Err(EngineError::Io { op, offset, source: err });
        }
        let n = n as usize;
        if n != len {
            return Err(EngineError::Short { op, offset, got: n, want: len });
        }
        return Ok(());
    }
}

fn run_threads(work: &Workload<'_>, depth: usize, progress: Progress<'_>) -> Result<Completed, EngineError> {
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let failure: Mutex<Option<EngineError>> = Mutex::new(None);
    let start = Instant::now();
    let fd = work.fd.as_raw_fd();
    let recorders: Vec<Recorder> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..depth)
            .map(|worker| {
                let (next, done, failure) = (&next, &done, &failure);
                scope.spawn(move || {
                    let mut buf = if work.write {
                        work.data.buffer(work.block_size, worker as u64)
                    } else {
                        AlignedBuf::zeroed(work.block_size)
                    };
                    let mut recorder = Recorder::new(start);
                    loop {
                        let stop = failure.lock().map(|f| f.is_some()).unwrap_or(true);
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if stop || i >= work.offsets.len() {
                            break;
                        }
                        let result = check_interrupt().and_then(|()| {
                            let issued = Instant::now();
                            transfer(fd, &mut buf, work.block_size, work.offsets[i], work.write)?;
                            Ok(issued)
                        });
                        match result {
                            Ok(issued) => {
                                let now = Instant::now();
                                recorder.record(now, now - issued, work.block_size as u64);
                                let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                                if finished % 256 == 0 {
                                    progress(finished as u64);
                                }
                            }
                            Err(e) => {
                                if let Ok(mut slot) = failure.lock() {
                                    slot.get_or_insert(e);
                                }
                                break;
                            }
                        }
                    }
                    recorder
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let elapsed = start.elapsed();
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut recorder = Recorder::new(start);
    for r in &recorders {
        recorder.merge(r);
    }
    progress(recorder.ios);
    Ok(Completed { recorder, elapsed, engine: "threads" })
}

fn run_uring(work: &Workload<'_>, depth: usize, progress: Progress<'_>) -> Result<Completed, EngineError> {
    let entries = u32::try_from(depth.next_power_of_two()).unwrap_or(4096);
    let mut ring = IoUring::new(entries).map_err(EngineError::Setup)?;
    let bs = work.block_size;
    let mut buf = buffer_for(work, depth);
    let region = libc::iovec { iov_base: buf.ptr_at(0).cast(), iov_len: buf.len() };
    // SAFETY: the registered region is `buf`, which outlives the ring: the ring
    // is dropped (unregistering it) before `buf` on every path below, and
    // buffers are leaked rather than freed if requests could still be in flight.
    let fixed = unsafe { ring.submitter().register_buffers(std::slice::from_ref(&region)) }.is_ok();

    let fd = types::Fd(work.fd.as_raw_fd());
    let op = if work.write { "write" } else { "read" };
    let mut issued_at = vec![Instant::now(); depth];
    let mut slot_offset = vec![0u64; depth];
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut next = 0usize;
    let mut in_flight = 0usize;
    let start = Instant::now();
    let mut recorder = Recorder::new(start);
    let mut failure: Option<EngineError> = None;

    loop {
        if failure.is_none() {
            failure = check_interrupt().err();
        }
        // Refill the ring up to the queue depth.
        let now = Instant::now();
        while failure.is_none() && next < work.offsets.len() {
            let Some(slot) = free.pop() else { break };
            let offset = work.offsets[next];
            let ptr = buf.ptr_at(slot * bs);
            let len = bs as u32;
            let entry = match (work.write, fixed) {
                (true, true) => opcode::WriteFixed::new(fd, ptr, len, 0).offset(offset).build(),
                (false, true) => opcode::ReadFixed::new(fd, ptr, len, 0).offset(offset).build(),
                (true, false) => opcode::Write::new(fd, ptr, len).offset(offset).build(),
                (false, false) => opcode::Read::new(fd, ptr, len).offset(offset).build(),
            };
            // SAFETY: the entry points into `buf` slot `slot`, which stays
            // untouched until its completion is reaped below.
            if unsafe { ring.submission().push(&entry.user_data(slot as u64)) }.is_err() {
                free.push(slot);
                break;
            }
            issued_at[slot] = now;
            slot_offset[slot] = offset;
            next += 1;
            in_flight += 1;
        }
        if in_flight == 0 {
            break;
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) || e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => {
                // Requests may still be in flight: leak their buffers rather
                // than let the kernel write into freed memory.
                std::mem::forget(buf);
                return Err(failure.unwrap_or(EngineError::Call { op: "io_uring_enter", source: e }));
            }
        }
        let now = Instant::now();
        for cqe in ring.completion() {
            let slot = cqe.user_data() as usize;
            let Some(&issued) = issued_at.get(slot) else { continue };
            in_flight -= 1;
            free.push(slot);
            let result = cqe.result();
            let offset = slot_offset[slot];
            if result < 0 {
                failure.get_or_insert(EngineError::Io { op, offset, source: io::Error::from_raw_os_error(-result) });
            } else if result as usize != bs {
                failure.get_or_insert(EngineError::Short { op, offset, got: result as usize, want: bs });
            } else {
                recorder.record(now, now - issued, bs as u64);
            }
        }
        if recorder.ios % 256 < 64 {
            progress(recorder.ios);
        }
    }
    let elapsed = start.elapsed();
    drop(ring);
    drop(buf);
    if let Some(e) = failure {
        return Err(e);
    }
    progress(recorder.ios);
    Ok(Completed { recorder, elapsed, engine: "io_uring" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;

    fn file_with(len: usize) -> std::fs::File {
        let mut f = tempfile::tempfile().expect("tempfile");
        f.write_all(&vec![7u8; len]).expect("fill");
        f
    }

    fn offsets(n: u64) -> Vec<u64> {
        (0..n).map(|i| ((i * 7) % n) * 4096).collect()
    }

    #[test]
    fn every_engine_completes_every_io() {
        let f = file_with(256 * 4096);
        let offs = offsets(256);
        for write in [false, true] {
            let work = Workload { fd: f.as_fd(), offsets: &offs, block_size: 4096, write, data: Data::Random(1) };
            for done in [
                run_sync(&work, &|_| {}).expect("sync"),
                run_queued(&work, 8, EngineChoice::Threads, &|_| {}).expect("threads"),
                run_queued(&work, 8, EngineChoice::Auto, &|_| {}).expect("auto"),
            ] {
                assert_eq!(done.recorder.ios, 256, "{}", done.engine);
                assert_eq!(done.recorder.bytes, 256 * 4096);
            }
        }
    }

    #[test]
    fn reading_past_the_end_is_a_short_io_error() {
        let f = file_with(4096);
        let offs = [0u64, 4096];
        let work = Workload { fd: f.as_fd(), offsets: &offs, block_size: 4096, write: false, data: Data::Random(1) };
        for choice in [EngineChoice::Auto, EngineChoice::Threads] {
            let err = run_queued(&work, 2, choice, &|_| {}).expect_err("short read");
            assert!(matches!(err, EngineError::Short { offset: 4096, got: 0, .. }), "{err}");
        }
        assert!(matches!(run_sync(&work, &|_| {}), Err(EngineError::Short { .. })));
    }
}
