//! The sweep: block size {4 KiB, 1 MiB, 256 MiB} × jobs {1, 4, 8}, reading
//! and writing in sequence with O_DIRECT, each cell time-boxed.
//!
//! A cell is what `fio --rw=read|write --direct=1 --bs=BS --numjobs=JOBS
//! --iodepth=1 --time_based --runtime=BOX` does with one job section per job:
//! job `j` reads or writes its own stretch of the work region in order
//! ([`regions`]), starting over at its end until the box runs out. When the
//! region is too small for every job to have a stretch of one block, the
//! stretches overlap. MB/s is bytes over the time the I/O took (from when
//! every job was ready to the last completion), as fio's bandwidth.
//!
//! A cell is skipped, with the reason, when its buffers (one block per job)
//! would not fit in the memory budget, when one block does not fit in the
//! work region, or when one block per job would take more than three times
//! the box at the rate the 1 MiB cell of the same kind measured (a 256 MiB
//! write by 8 jobs is 2 GiB: minutes on a card).

use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use storage_scoring::figure::Unit;

use storage_scoring::profile::SweepCell;

use super::stats::{round_rate, round_to};
use super::{Ctx, Work, size_label};
use crate::engine::{self, Completed, Data, EngineError, Shape, Workload};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

pub const BLOCK_SIZES: [u64; 3] = [4 * KIB, MIB, 256 * MIB];
pub const JOBS: [u32; 3] = [1, 4, 8];
/// No cell runs shorter than this, whatever the box.
pub const MIN_CELL: Duration = Duration::from_millis(500);
/// Nor longer (a long box goes to the other studies instead).
pub const MAX_CELL: Duration = Duration::from_secs(30);

/// Runs every cell within `time_box`; notes what the reader must know.
pub(crate) fn run(
    ctx: &Ctx<'_>,
    work: &Work,
    time_box: Duration,
    notes: &mut Vec<String>,
) -> Result<Vec<SweepCell>, EngineError> {
    let count = BLOCK_SIZES.len() * JOBS.len() * 2;
    let cell_box = (time_box / count as u32).clamp(MIN_CELL, MAX_CELL);
    notes.push(format!(
        "sweep: {count} cells on the {} ({} MiB region), sequential O_DIRECT, one I/O in flight per job; each cell time-boxed at {:.1} s",
        if ctx.target == "raw" { "raw device" } else { "file" },
        work.len >> 20,
        cell_box.as_secs_f64()
    ));
    let mut cells: Vec<SweepCell> = Vec::with_capacity(count);
    for bs in BLOCK_SIZES {
        for jobs in JOBS {
            for write in [false, true] {
                let mut cell = SweepCell {
                    target: ctx.target.to_owned(),
                    rw: if write { "write" } else { "read" }.to_owned(),
                    bs,
                    jobs,
                    ..SweepCell::default()
                };
                let reference = cells.iter().find(|c| c.bs == MIB && c.jobs == jobs && c.rw == cell.rw);
                match skip_reason(ctx, work, bs, jobs, reference, cell_box) {
                    Some(reason) => cell.skipped = Some(reason),
                    None => measure(ctx, work, &mut cell, write, cell_box)?,
                }
                cells.push(cell);
            }
        }
    }
    Ok(cells)
}

/// Why a cell cannot run, if it cannot.
fn skip_reason(
    ctx: &Ctx<'_>,
    work: &Work,
    bs: u64,
    jobs: u32,
    reference: Option<&SweepCell>,
    cell_box: Duration,
) -> Option<String> {
    let buffers = bs * u64::from(jobs);
    if bs > work.len {
        return Some(format!("one {} block does not fit in the {} MiB work region", size_label(bs), work.len >> 20));
    }
    if let Some(budget) = ctx.config.memory_budget {
        if buffers > budget {
            return Some(format!(
                "its buffers ({} MiB, one block per job) would not fit in the {} MiB of memory the I/O may use",
                buffers >> 20,
                budget >> 20
            ));
        }
    }
    let rate = reference.and_then(|c| c.mb_s)?;
    let least = buffers as f64 / (rate * 1e6);
    (least > 3.0 * cell_box.as_secs_f64()).then(|| {
        format!(
            "one block per job ({} MiB) would take about {least:.0} s at the {rate} MB/s of the 1 MiB cell, over three times its {:.1} s box",
            buffers >> 20,
            cell_box.as_secs_f64()
        )
    })
}

/// Where each of `jobs` jobs works in a region of `len` bytes: `(start,
/// length)`, block-aligned lengths, 4 KiB-aligned starts spread evenly so
/// that the stretches tile the region when it is large enough and overlap
/// when it is not.
pub fn regions(len: u64, bs: u64, jobs: u32) -> Vec<(u64, u64)> {
    let jobs = u64::from(jobs.max(1));
    let stretch = ((len / jobs) / bs * bs).max(bs).min(len / bs * bs);
    (0..jobs)
        .map(|j| {
            let start = if jobs == 1 { 0 } else { (len - stretch) * j / (jobs - 1) / (4 * KIB) * (4 * KIB) };
            (start, stretch)
        })
        .collect()
}

/// Runs one cell: passes over every job's stretch until the box runs out.
fn measure(
    ctx: &Ctx<'_>,
    work: &Work,
    cell: &mut SweepCell,
    write: bool,
    cell_box: Duration,
) -> Result<(), EngineError> {
    let label = format!("sweep {} {} {} ×{}", ctx.target, cell.rw, size_label(cell.bs), cell.jobs);
    ctx.observer.started(&label, cell_box.as_millis() as u64);
    let mut offsets = Vec::new();
    for (start, len) in regions(work.len, cell.bs, cell.jobs) {
        offsets.extend((0..len / cell.bs).map(|i| work.base + start + i * cell.bs));
    }
    let deadline = Instant::now() + cell_box;
    let started = Instant::now();
    let mut total: Option<Completed> = None;
    let mut elapsed = Duration::ZERO;
    let mut passes = 0u64;
    loop {
        let mut w =
            Workload::new(work.file.as_fd(), &offsets, cell.bs as usize, write, Data::Random(0x5eed_5000 + passes));
        w.deadline = Some(deadline);
        let shape = Shape { depth: 1, jobs: cell.jobs as usize };
        let done = engine::run_queued(&w, shape, ctx.config.engine, &|_| {
            ctx.observer.progress(started.elapsed().as_millis() as u64);
        })?;
        elapsed += done.elapsed;
        passes += 1;
        let partial = done.partial;
        match &mut total {
            None => total = Some(done),
            Some(t) => t.recorder.merge(&done.recorder),
        }
        if partial || Instant::now() >= deadline {
            break;
        }
    }
    if write {
        work.file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
    }
    let Some(total) = total else { return Ok(()) };
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mb_s = total.recorder.bytes as f64 / secs / 1e6;
    cell.mb_s = Some(round_rate(mb_s));
    cell.iops = Some((total.recorder.ios as f64 / secs).round());
    cell.ios = total.recorder.ios;
    cell.bytes = total.recorder.bytes;
    cell.seconds = round_to(secs, 3);
    cell.time_box_s = Some(round_to(cell_box.as_secs_f64(), 3));
    cell.latency = Some(total.recorder.latency());
    cell.engine = Some(total.engine.clone());
    ctx.observer.finished(&label, round_rate(mb_s), Unit::MbPerS);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stretches_tile_a_large_region() {
        assert_eq!(
            regions(512 * MIB, 4 * KIB, 4),
            vec![(0, 128 * MIB), (128 * MIB, 128 * MIB), (256 * MIB, 128 * MIB), (384 * MIB, 128 * MIB)]
        );
        assert_eq!(regions(512 * MIB, MIB, 1), vec![(0, 512 * MIB)]);
    }

    #[test]
    fn stretches_overlap_in_a_small_region() {
        let r = regions(512 * MIB, 256 * MIB, 8);
        assert_eq!(r.len(), 8);
        assert!(r.iter().all(|&(start, len)| len == 256 * MIB && start + len <= 512 * MIB), "{r:?}");
        assert_eq!(r[0].0, 0);
        assert_eq!(r[7].0, 256 * MIB);
        assert!(r.iter().all(|&(start, _)| start % (4 * KIB) == 0));
    }

    #[test]
    fn a_region_of_one_block_is_shared() {
        assert_eq!(regions(256 * MIB, 256 * MIB, 4), vec![(0, 256 * MIB); 4]);
    }
}
