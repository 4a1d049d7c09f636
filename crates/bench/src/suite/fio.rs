//! The fio-like tests, as Storage.sh runs them: `fio --randrepeat=1
//! --ioengine=libaio --direct=1 --gtod_reduce=1 --name=test --filename=test
//! --bs=4k --iodepth=64 --size=80M --readwrite=randwrite` (then `randread`),
//! each on a new file (`rm -f test` before and after).
//!
//! What fio does to a new file before the timed job (filesetup.c
//! `extend_file`, fio 3.33; defaults `fallocate=native`, `overwrite=0`,
//! `create_fsync=1`, `invalidate=1`):
//! - **randwrite** only allocates it: `fallocate(fd, 0, 0, size)`, which on
//!   ext4 makes unwritten extents, so every random write also converts one.
//! - **randread** lays it out: allocate, `ftruncate`, then buffered
//!   sequential writes of the block size, `fsync`, and the page cache
//!   dropped. The random reads then meet a file written end to end in order,
//!   not one whose blocks the random writes just placed in their own order.
//!
//! Every 4 KiB block is touched once, in a fixed pseudo-random order
//! (`randrepeat=1`), 64 in flight; IOPS as fio prints them ([`super::fio_iops`]).

use std::fs::File;
use std::os::fd::AsFd;
use storage_scoring::figure::Figure;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;

use super::{Ctx, Eta, Measured, Watched, Window, cycled, detail, fio_iops};
use crate::devstat::{DevStat, Direction};
use crate::engine::{self, Data, EngineError, Shape, Workload};
use crate::{filestate, scratch};

const BLOCK: usize = 4096;
const QUEUE_DEPTH: usize = 64;
/// fio's `--randrepeat=1`: the same pseudo-random order on every run.
pub(super) const RANDOM_ORDER_SEED: u64 = 0x5eed_0001;

/// Every block of a `bytes`-long region at `base`, in a fixed random order.
pub(super) fn shuffled(base: u64, bytes: u64) -> Vec<u64> {
    let mut offsets: Vec<u64> = (0..bytes / BLOCK as u64).map(|b| base + b * BLOCK as u64).collect();
    offsets.shuffle(&mut SmallRng::seed_from_u64(RANDOM_ORDER_SEED));
    offsets
}

/// [`Figure::RandWriteQd64`] or [`Figure::RandReadQd64`] on `file`, which
/// is new (or, on a raw device, the region at `base`).
pub(super) fn run(
    ctx: &Ctx<'_>,
    figure: Figure,
    file: &File,
    base: u64,
    stat: Option<&DevStat>,
) -> Result<Measured, EngineError> {
    let key = figure.key();
    let write = figure == Figure::RandWriteQd64;
    // The write job's file is only allocated, so a large one costs nothing;
    // the read job's is written out first, so a quick run keeps it small
    // and goes round it.
    let bytes = if write { ctx.sizes.test_file_bytes } else { ctx.sizes.laid_out_bytes };
    let raw = base > 0;
    if write {
        if !raw {
            scratch::allocate(file, bytes).map_err(|source| EngineError::Call { op: "fallocate", source })?;
        }
    } else {
        lay_out(file, base, bytes, ctx)?;
    }
    scratch::set_direct(file, true).map_err(|source| EngineError::Call { op: "fcntl(O_DIRECT)", source })?;
    let offsets = cycled(shuffled(base, bytes), ctx.sizes.steady.is_some());
    ctx.observer.started(key, offsets.len() as u64);
    let mut work = Workload::new(file.as_fd(), &offsets, BLOCK, write, Data::Random(0x5eed_0002));
    work.deadline = ctx.deadline;
    let eta = Eta::new(key, ctx.observer, offsets.len() as u64, "I/Os");
    let mut state = if raw { None } else { filestate::observe(file, true) };
    let window = Window::open(stat);
    let watched = Watched::start(ctx.sizes.steady);
    work.enough = watched.as_ref().map(|w| &w.enough);
    work.ramp = watched.as_ref().map_or(std::time::Duration::ZERO, Watched::ramp);
    // fio: IOPS = I/Os / runtime; no fsync (end_fsync=0).
    let done = engine::run_queued(&work, Shape::depth(QUEUE_DEPTH), ctx.plan.engine, &|n| {
        ctx.observer.progress(n);
        match &watched {
            Some(watched) => watched.progress(n),
            None => eta.update(n),
        }
    })?;
    let mut detail = detail(&done, done.elapsed);
    window.close(&mut detail, if write { Direction::Write } else { Direction::Read });
    if let Some(watched) = &watched {
        watched.judge(&mut detail);
    }
    filestate::finish(&mut state, file);
    detail.file_state = state;
    Ok(Measured { value: fio_iops(done.recorder.ios, done.elapsed), detail })
}

/// fio's layout of a new file for a read job: allocate, set the size, write
/// it sequentially in buffered blocks of the job's block size, `fsync`,
/// and drop it from the page cache. Untimed.
fn lay_out(file: &File, base: u64, bytes: u64, ctx: &Ctx<'_>) -> Result<(), EngineError> {
    scratch::set_direct(file, false).map_err(|source| EngineError::Call { op: "fcntl(O_DIRECT)", source })?;
    if base == 0 {
        scratch::allocate(file, bytes).map_err(|source| EngineError::Call { op: "fallocate", source })?;
    }
    let offsets: Vec<u64> = (0..bytes / BLOCK as u64).map(|b| base + b * BLOCK as u64).collect();
    let mut work = Workload::new(file.as_fd(), &offsets, BLOCK, true, Data::Random(0x1a70));
    work.deadline = ctx.deadline;
    let done = engine::run_sync(&work, &|_| {})?;
    if done.partial {
        return Err(EngineError::TimeUp("while its file was being laid out"));
    }
    file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
    scratch::drop_cache(file);
    Ok(())
}
