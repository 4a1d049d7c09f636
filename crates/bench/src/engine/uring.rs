//! The io_uring engine: one ring per job, `depth` requests in flight.
//!
//! Opcodes, best first, as the kernel allows:
//! - `READ_FIXED`/`WRITE_FIXED` on one registered buffer region (Linux 5.1),
//!   the cheapest path and the one fio's io_uring engine takes with
//!   `fixedbufs`;
//! - plain `READ`/`WRITE` (5.6) when registration is refused: registered
//!   buffers are pinned and counted against `RLIMIT_MEMLOCK`, which is often
//!   64 KiB for a user without CAP_IPC_LOCK;
//! - `READV`/`WRITEV` (5.1) when the kernel has no plain `READ`.
//!
//! The report says which ran ([`Completed::engine_detail`]).
//!
//! What a request costs here, beyond the kernel's own work: the file is
//! registered with the ring (no descriptor lookup per request), the clock
//! is read once per submission and once per batch of completions (the
//! requests of one `io_uring_enter` share their issue time, which is when
//! the kernel saw them), and one `io_uring_enter` both submits and waits,
//! reaping every completion that is ready. `cargo xtask bench`'s efficiency
//! step compares the CPU time per request with fio's.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;
use storage_scoring::kinds::Engine;

use io_uring::{IoUring, Probe, opcode, squeue, types};

use super::{
    Completed, EngineError, IoCounter, Part, Pending, Progress, REPORT_EVERY, Shape, StartGate, Workload, buffer_for,
    check_interrupt, memlock_hint, merge, next_serial, panic_message, report, share, stamp,
};
use crate::recorder::Recorder;

/// How requests are written into the ring.
#[derive(Debug, Clone)]
enum Mode {
    Fixed,
    /// Registration was refused, for this reason.
    Plain(String),
    Vectored(String),
}

impl Mode {
    fn describe(&self) -> String {
        match self {
            Mode::Fixed => "io_uring with registered buffers".to_owned(),
            Mode::Plain(why) => format!("io_uring with plain read/write: buffer registration refused ({why})"),
            Mode::Vectored(why) => format!(
                "io_uring with readv/writev: buffer registration refused ({why}) and this kernel has no plain read/write opcode"
            ),
        }
    }
}

/// Runs `work` on io_uring; an error from setting up the first ring comes
/// back as [`EngineError::Setup`], so the caller may fall back to threads.
pub(super) fn run(work: &Workload<'_>, shape: Shape, progress: Progress<'_>) -> Result<Completed, EngineError> {
    let plain_ok = probe_plain_opcodes()?;
    let gate = StartGate::new(shape.jobs);
    let counter = IoCounter::new(0);
    let halt = AtomicBool::new(false);
    let job = |j: usize| {
        let result =
            run_job(work, share(work.offsets, j, shape.jobs), shape.depth, plain_ok, &gate, &counter, &halt, progress);
        if result.is_err() {
            halt.store(true, Ordering::Relaxed);
        }
        result
    };
    let results: Vec<Result<(Part, Mode, Instant), EngineError>> = if shape.jobs == 1 {
        vec![job(0)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..shape.jobs).map(|j| scope.spawn(move || job(j))).collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|panic| Err(EngineError::Panicked(panic_message(&*panic)))))
                .collect()
        })
    };
    let mut parts = Vec::with_capacity(results.len());
    let mut first: Option<(Mode, Instant)> = None;
    let mut failure = None;
    for result in results {
        match result {
            Ok((part, mode, start)) => {
                first.get_or_insert((mode, start));
                parts.push(part);
            }
            // The first real error wins over the setup error of a job that
            // was only waiting for the others.
            Err(e) => match (&failure, &e) {
                (None, _) | (Some(EngineError::Setup(_)), _) => failure = Some(e),
                _ => {}
            },
        }
    }
    if let Some(e) = failure {
        return Err(e);
    }
    let Some((mode, start)) = first else { return Err(EngineError::Panicked("no io_uring job ran".to_owned())) };
    let super::Merged { recorder, elapsed, partial, cpu } = merge(start, parts);
    // Every I/O done, the ramp's included, as the jobs' reports counted.
    report(progress, counter.load(Ordering::Relaxed) as u64)?;
    let fell_back = !matches!(mode, Mode::Fixed);
    let engine_detail = Some(mode.describe());
    Ok(Completed { recorder, elapsed, engine: Engine::IoUring, engine_detail, fell_back, partial, cpu })
}

/// Can this kernel take plain `READ`/`WRITE`? Also the first test of
/// whether io_uring is allowed at all (ENOSYS, EPERM under seccomp).
fn probe_plain_opcodes() -> Result<bool, EngineError> {
    let ring = IoUring::new(2).map_err(EngineError::Setup)?;
    let mut probe = Probe::new();
    // Kernels before 5.6 have no probe, and no plain READ either.
    Ok(ring.submitter().register_probe(&mut probe).is_ok()
        && probe.is_supported(opcode::Read::CODE)
        && probe.is_supported(opcode::Write::CODE))
}

#[allow(clippy::too_many_arguments)]
fn run_job(
    work: &Workload<'_>,
    offsets: &[u64],
    depth: usize,
    plain_ok: bool,
    gate: &StartGate,
    counter: &IoCounter,
    halt: &AtomicBool,
    progress: Progress<'_>,
) -> Result<(Part, Mode, Instant), EngineError> {
    let entries = u32::try_from(depth.next_power_of_two()).unwrap_or(4096);
    let ring = new_ring(entries);
    let mut buf = buffer_for(work, depth);
    // Every job reaches the gate, even one whose ring failed, or the others
    // would wait for it for ever.
    let ring = match ring {
        Ok(ring) => ring,
        Err(e) => {
            gate.wait();
            return Err(EngineError::Setup(e));
        }
    };
    let region = libc::iovec { iov_base: buf.ptr_at(0).cast(), iov_len: buf.len() };
    // SAFETY: the registered region is `buf`, which outlives the ring: the
    // ring is dropped (unregistering it) before `buf` on every path below,
    // and `buf` is leaked rather than freed if requests could still be in
    // flight.
    let mode = match unsafe { ring.submitter().register_buffers(std::slice::from_ref(&region)) } {
        Ok(()) => Mode::Fixed,
        Err(e) if plain_ok => Mode::Plain(memlock_hint(&e)),
        Err(e) => Mode::Vectored(memlock_hint(&e)),
    };
    // A registered file spares the kernel looking the descriptor up and
    // taking a reference to it for every request; without it (a kernel or
    // limit that refuses), the plain descriptor does the same job.
    let raw = work.fd.as_raw_fd();
    let file = if ring.submitter().register_files(&[raw]).is_ok() {
        Target::Fixed(types::Fixed(0))
    } else {
        Target::Fd(types::Fd(raw))
    };
    let start = gate.wait() + work.ramp;
    let cpu_at_start = super::thread_cpu();
    let mut job = Job::new(work, depth, start);
    let outcome = job.drive(ring, &mut buf, offsets, &mode, file, counter, halt, progress);
    let cpu = super::thread_cpu().saturating_sub(cpu_at_start);
    match outcome {
        Ok(()) => Ok((Part { recorder: job.recorder, partial: job.partial, cpu }, mode, start)),
        Err(Leak(e)) => {
            // Requests may still be in flight: leak the buffer rather than
            // let the kernel write into freed memory.
            std::mem::forget(buf);
            Err(e)
        }
    }
}

/// A ring whose completions do not interrupt this thread: with
/// `COOP_TASKRUN` (Linux 5.19) the kernel leaves a finished request's
/// completion work for the thread's next system call, which is the wait
/// for completions anyway, rather than forcing it off whatever it is doing.
/// Older kernels refuse the flag, and get a plain ring.
fn new_ring(entries: u32) -> std::io::Result<IoUring> {
    IoUring::builder().setup_coop_taskrun().build(entries).or_else(|_| IoUring::new(entries))
}

/// The file requests go to: registered with the ring, or a plain descriptor.
#[derive(Debug, Clone, Copy)]
enum Target {
    Fixed(types::Fixed),
    Fd(types::Fd),
}

/// Builds an opcode for either kind of [`Target`] (the crate takes both
/// through a trait it does not export, so this picks the arm).
macro_rules! on_target {
    ($target:expr, |$f:ident| $build:expr) => {
        match $target {
            Target::Fixed($f) => $build,
            Target::Fd($f) => $build,
        }
    };
}

/// An error after which in-flight requests may still touch the buffer.
struct Leak(EngineError);

struct Job<'w, 'a> {
    work: &'w Workload<'a>,
    bs: usize,
    /// Per slot: the request in it and when it was first issued.
    slots: Vec<Option<(Pending, Instant)>>,
    /// Slots filled since the last submission, whose issue time is that
    /// submission's.
    fresh: Vec<usize>,
    iovecs: Vec<libc::iovec>,
    free: Vec<usize>,
    resubmit: Vec<usize>,
    in_flight: usize,
    recorder: Recorder,
    failure: Option<EngineError>,
    partial: bool,
    last_report: Instant,
}

impl<'w, 'a> Job<'w, 'a> {
    fn new(work: &'w Workload<'a>, depth: usize, start: Instant) -> Self {
        Job {
            work,
            bs: work.block_size,
            slots: vec![None; depth],
            fresh: Vec::with_capacity(depth),
            iovecs: vec![libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 }; depth],
            free: (0..depth).rev().collect(),
            resubmit: Vec::new(),
            in_flight: 0,
            recorder: work.recorder(start),
            failure: None,
            partial: false,
            last_report: start,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn drive(
        &mut self,
        mut ring: IoUring,
        buf: &mut crate::buffer::AlignedBuf,
        offsets: &[u64],
        mode: &Mode,
        fd: Target,
        counter: &IoCounter,
        halt: &AtomicBool,
        progress: Progress<'_>,
    ) -> Result<(), Leak> {
        let op = self.work.op();
        let stamped = self.work.write && matches!(self.work.data, super::Data::Random(_));
        let mut next = 0usize;
        loop {
            if self.failure.is_none() {
                self.failure = check_interrupt().err();
            }
            let halted = self.failure.is_some() || halt.load(Ordering::Relaxed);
            // The rest of short transfers first: they are already counted in flight.
            while let Some(slot) = self.resubmit.pop() {
                if halted {
                    self.release(slot);
                    continue;
                }
                let Some((pending, _)) = self.slots[slot] else { continue };
                let (at, skip, len) = pending.remaining();
                let entry = self.entry(fd, buf, mode, slot, at, skip, len);
                // SAFETY: the entry points into `buf` slot `slot`, untouched
                // until its completion is reaped below.
                if unsafe { ring.submission().push(&entry) }.is_err() {
                    self.resubmit.push(slot);
                    break;
                }
            }
            while !halted && next < offsets.len() {
                if self.work.has_enough() {
                    break;
                }
                if self.work.past_deadline() {
                    self.partial = true;
                    break;
                }
                let Some(slot) = self.free.pop() else { break };
                let offset = offsets[next];
                if stamped {
                    let range = slot * self.bs..(slot + 1) * self.bs;
                    stamp(&mut buf.as_mut_slice()[range], offset, next_serial());
                }
                let entry = self.entry(fd, buf, mode, slot, offset, 0, self.bs);
                // SAFETY: as above.
                if unsafe { ring.submission().push(&entry) }.is_err() {
                    self.free.push(slot);
                    break;
                }
                // Stamped with its submission's time below.
                self.slots[slot] = Some((Pending::new(offset, self.bs), self.last_report));
                self.fresh.push(slot);
                next += 1;
                self.in_flight += 1;
            }
            if self.in_flight == 0 {
                break;
            }
            // One clock read stamps every request of this submission: they
            // reach the kernel together, in the call below.
            if !self.fresh.is_empty() {
                let issued = Instant::now();
                for slot in self.fresh.drain(..) {
                    if let Some((_, at)) = &mut self.slots[slot] {
                        *at = issued;
                    }
                }
            }
            match ring.submit_and_wait(1) {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EBUSY | libc::EAGAIN)) => {}
                Err(e) => {
                    return Err(Leak(
                        self.failure.take().unwrap_or(EngineError::Call { op: "io_uring_enter", source: e }),
                    ));
                }
            }
            let now = Instant::now();
            self.work.close_window(&mut self.recorder);
            let mut completed = 0u64;
            for cqe in ring.completion() {
                let slot = cqe.user_data() as usize;
                let Some(Some((pending, issued))) = self.slots.get_mut(slot) else { continue };
                let issued = *issued;
                match pending.on_result(i64::from(cqe.result()), op) {
                    super::Next::Complete => {
                        self.recorder.record(now, now - issued, self.bs as u64);
                        completed += 1;
                        self.release(slot);
                    }
                    super::Next::Resubmit => self.resubmit.push(slot),
                    super::Next::Fail(e) => {
                        self.failure.get_or_insert(e);
                        self.release(slot);
                    }
                }
            }
            if completed > 0 {
                let total = counter.fetch_add(completed as usize, Ordering::Relaxed) as u64 + completed;
                if total / 256 != (total - completed) / 256 || now - self.last_report >= REPORT_EVERY {
                    self.last_report = now;
                    if let Err(e) = report(progress, total) {
                        self.failure.get_or_insert(e);
                    }
                }
            }
        }
        if next < offsets.len() && self.failure.is_none() && !halt.load(Ordering::Relaxed) && !self.work.has_enough() {
            self.partial = true;
        }
        // Nothing is in flight here. The ring's last reference to the file
        // goes when it is unregistered, now; left to the ring's teardown,
        // which the kernel runs later on a worker, a scratch file's blocks
        // could outlive the process (81 MiB still held when the next run
        // checked for free space, on a loaded CI machine).
        if matches!(fd, Target::Fixed(_)) {
            let _ = ring.submitter().unregister_files();
        }
        drop(ring);
        match self.failure.take() {
            Some(e) => Err(Leak(e)),
            None => Ok(()),
        }
    }

    fn release(&mut self, slot: usize) {
        self.slots[slot] = None;
        self.free.push(slot);
        self.in_flight -= 1;
    }

    /// The submission entry for `len` bytes at file offset `at`, into or
    /// from slot `slot` of `buf` starting `skip` bytes in.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &mut self,
        fd: Target,
        buf: &mut crate::buffer::AlignedBuf,
        mode: &Mode,
        slot: usize,
        at: u64,
        skip: usize,
        len: usize,
    ) -> squeue::Entry {
        let ptr = buf.ptr_at(slot * self.bs + skip);
        let len32 = len as u32;
        let write = self.work.write;
        let entry = match mode {
            Mode::Fixed if write => on_target!(fd, |f| opcode::WriteFixed::new(f, ptr, len32, 0).offset(at).build()),
            Mode::Fixed => on_target!(fd, |f| opcode::ReadFixed::new(f, ptr, len32, 0).offset(at).build()),
            Mode::Plain(_) if write => on_target!(fd, |f| opcode::Write::new(f, ptr, len32).offset(at).build()),
            Mode::Plain(_) => on_target!(fd, |f| opcode::Read::new(f, ptr, len32).offset(at).build()),
            Mode::Vectored(_) => {
                self.iovecs[slot] = libc::iovec { iov_base: ptr.cast(), iov_len: len };
                let iov = &self.iovecs[slot] as *const libc::iovec;
                if write {
                    on_target!(fd, |f| opcode::Writev::new(f, iov, 1).offset(at).build())
                } else {
                    on_target!(fd, |f| opcode::Readv::new(f, iov, 1).offset(at).build())
                }
            }
        };
        entry.user_data(slot as u64)
    }
}
