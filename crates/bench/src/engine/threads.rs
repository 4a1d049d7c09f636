//! The thread engine: `depth` threads per job, each doing one `pread` or
//! `pwrite` at a time, for kernels or sandboxes that refuse io_uring.
//!
//! Every thread spawns, allocates its buffer and its recorder, and then
//! waits at a [`StartGate`]: the clock starts when all are ready. While
//! running, the threads share only atomics (the next offset, the count done,
//! a stop flag); a lock is taken once, by a thread that fails.

use std::os::fd::AsRawFd;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use storage_scoring::kinds::Engine;

use super::{
    Completed, EngineError, IoCounter, Part, Progress, REPORT_EVERY, Shape, StartGate, Workload, check_interrupt,
    merge, next_serial, panic_message, report, share, stamp, transfer,
};
use crate::buffer::AlignedBuf;

/// Runs `work` on `shape.jobs × shape.depth` threads. `why` says why this
/// engine runs instead of io_uring, when it is a fallback.
pub(super) fn run(
    work: &Workload<'_>,
    shape: Shape,
    progress: Progress<'_>,
    why: Option<String>,
) -> Result<Completed, EngineError> {
    let threads = shape.jobs * shape.depth;
    let gate = StartGate::new(threads + 1);
    let done = IoCounter::new(0);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<EngineError>> = Mutex::new(None);
    let cursors: Vec<AtomicUsize> = (0..shape.jobs).map(|_| AtomicUsize::new(0)).collect();
    let (start, results) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|n| {
                let job = n / shape.depth;
                let offsets = share(work.offsets, job, shape.jobs);
                let shared = Shared { cursor: &cursors[job], done: &done, stop: &stop, failure: &failure };
                let gate = &gate;
                scope.spawn(move || worker(work, offsets, n as u64, gate, shared, progress))
            })
            .collect();
        let start = gate.wait() + work.ramp;
        let results: Vec<Result<Part, EngineError>> = workers
            .into_iter()
            .map(|w| w.join().map_err(|panic| EngineError::Panicked(panic_message(&*panic))))
            .collect();
        (start, results)
    });
    let mut parts = Vec::with_capacity(results.len());
    for result in results {
        parts.push(result?);
    }
    if let Some(e) = failure.into_inner().unwrap_or_else(|poisoned| poisoned.into_inner()) {
        return Err(e);
    }
    let super::Merged { recorder, elapsed, partial, cpu } = merge(start, parts);
    // Every I/O done, the ramp's included, as the workers' reports counted.
    report(progress, done.load(Ordering::Relaxed) as u64)?;
    let fell_back = why.is_some();
    let detail = match why {
        Some(why) => format!("{threads} threads of pread/pwrite: {why}"),
        None => format!("{threads} threads of pread/pwrite"),
    };
    Ok(Completed { recorder, elapsed, engine: Engine::Threads, engine_detail: Some(detail), fell_back, partial, cpu })
}

/// What the workers of one run share: atomics, and a slot for the first error.
#[derive(Clone, Copy)]
struct Shared<'s> {
    /// Index of the next offset of this worker's job.
    cursor: &'s AtomicUsize,
    done: &'s IoCounter,
    stop: &'s AtomicBool,
    failure: &'s Mutex<Option<EngineError>>,
}

impl Shared<'_> {
    fn fail(&self, e: EngineError) {
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = self.failure.lock() {
            slot.get_or_insert(e);
        }
    }
}

fn worker(
    work: &Workload<'_>,
    offsets: &[u64],
    n: u64,
    gate: &StartGate,
    shared: Shared<'_>,
    progress: Progress<'_>,
) -> Part {
    let mut buf = if work.write { work.data.buffer(work.block_size, n) } else { AlignedBuf::zeroed(work.block_size) };
    let stamped = work.write && matches!(work.data, super::Data::Random(_));
    let start = gate.wait() + work.ramp;
    let cpu_at_start = super::thread_cpu();
    let mut recorder = work.recorder(start);
    let mut partial = false;
    let mut last_report = start;
    let fd = work.fd.as_raw_fd();
    // A panic inside the loop (a bug, or the progress callback) must stop
    // the others and surface as an error: catch it here and say so.
    let body = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        loop {
            if shared.stop.load(Ordering::Relaxed) || work.has_enough() {
                break;
            }
            if work.past_deadline() {
                partial = shared.cursor.load(Ordering::Relaxed) < offsets.len();
                break;
            }
            let i = shared.cursor.fetch_add(1, Ordering::Relaxed);
            let Some(&offset) = offsets.get(i) else { break };
            if let Err(e) = check_interrupt() {
                shared.fail(e);
                break;
            }
            if stamped {
                stamp(&mut buf.as_mut_slice()[..work.block_size], offset, next_serial());
            }
            let issued = std::time::Instant::now();
            if let Err(e) = transfer(fd, &mut buf, work.block_size, offset, work.write) {
                shared.fail(e);
                break;
            }
            let now = std::time::Instant::now();
            work.close_window(&mut recorder);
            recorder.record(now, now - issued, work.block_size as u64);
            let finished = shared.done.fetch_add(1, Ordering::Relaxed) as u64 + 1;
            if finished % 256 == 0 || now - last_report >= REPORT_EVERY {
                last_report = now;
                if let Err(e) = report(progress, finished) {
                    shared.fail(e);
                    break;
                }
            }
        }
    }));
    if let Err(panic) = body {
        shared.fail(EngineError::Panicked(panic_message(&*panic)));
    }
    Part { recorder, partial, cpu: super::thread_cpu().saturating_sub(cpu_at_start) }
}
