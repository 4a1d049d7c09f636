//! The transfer-size scan: random O_DIRECT reads, then writes, of 512 B to
//! 8 MiB (every power of two), one in flight, each size time-boxed, every
//! I/O traced.
//!
//! A point is what `fio --rw=randread|randwrite --direct=1 --bs=SIZE
//! --iodepth=1 --time_based --runtime=BOX` measures over the work region:
//! offsets aligned to the size, drawn at random (each at most once per pass
//! of up to [`BATCH`] I/Os, as fio's random map does), MB/s as bytes over
//! time. Each I/O's own rate (size over its latency) is kept too: the
//! scatter plot shows those, with their median.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use storage_scoring::figure::Unit;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use rand::seq::{IteratorRandom, SliceRandom};
use storage_scoring::profile::TransferPoint;

use super::stats::{self, round_rate, round_to};
use super::{Ctx, Work, size_label};
use crate::engine::{self, Data, EngineError, Workload};

/// 512 B, 1 KiB, … 8 MiB.
pub const SIZES: [u64; 15] = {
    let mut sizes = [0u64; 15];
    let mut i = 0;
    while i < 15 {
        sizes[i] = 512 << i;
        i += 1;
    }
    sizes
};
/// Offsets drawn per engine workload.
pub const BATCH: usize = 65_536;
/// Per-I/O rates kept for the scatter plot, per point.
pub const SAMPLES: usize = 200;
pub const MIN_POINT: Duration = Duration::from_millis(250);
pub const MAX_POINT: Duration = Duration::from_secs(20);

/// Runs every point within `time_box`.
pub(crate) fn run(
    ctx: &Ctx<'_>,
    work: &Work,
    time_box: Duration,
    notes: &mut Vec<String>,
) -> Result<Vec<TransferPoint>, EngineError> {
    let count = SIZES.len() * 2;
    let point_box = (time_box / count as u32).clamp(MIN_POINT, MAX_POINT);
    notes.push(format!(
        "transfer sizes: random O_DIRECT I/O over a {} MiB region, one in flight; each size time-boxed at {:.1} s",
        work.len >> 20,
        point_box.as_secs_f64()
    ));
    let mut points = Vec::with_capacity(count);
    for write in [false, true] {
        for (i, &bytes) in SIZES.iter().enumerate() {
            let mut point = TransferPoint {
                rw: if write { "write" } else { "read" }.to_owned(),
                bytes,
                ..TransferPoint::default()
            };
            if bytes > work.len {
                point.skipped = Some(format!("larger than the {} MiB work region", work.len >> 20));
            } else {
                measure(ctx, work, &mut point, write, point_box, i as u64)?;
            }
            points.push(point);
        }
    }
    Ok(points)
}

fn measure(
    ctx: &Ctx<'_>,
    work: &Work,
    point: &mut TransferPoint,
    write: bool,
    point_box: Duration,
    seed: u64,
) -> Result<(), EngineError> {
    let label = format!("random {} {}", point.rw, size_label(point.bytes));
    ctx.observer.started(&label, point_box.as_millis() as u64);
    let slots = work.len / point.bytes;
    let mut rng = SmallRng::seed_from_u64(0x5eed_7000 + seed + if write { 100 } else { 0 });
    let deadline = Instant::now() + point_box;
    let started = Instant::now();
    let (mut ios, mut bytes, mut elapsed) = (0u64, 0u64, Duration::ZERO);
    let mut latencies = Vec::new();
    let mut rates = Vec::new();
    while Instant::now() < deadline {
        let offsets = draw(&mut rng, slots, work.base, point.bytes);
        let mut w =
            Workload::new(work.file.as_fd(), &offsets, point.bytes as usize, write, Data::Random(0x5eed_7100 + ios));
        w.deadline = Some(deadline);
        w.trace = true;
        let done = match engine::run_sync(&w, &|_| ctx.observer.progress(started.elapsed().as_millis() as u64)) {
            Ok(done) => done,
            Err(EngineError::Io { source, .. }) if source.raw_os_error() == Some(libc::EINVAL) && ios == 0 => {
                let why = format!(
                    "O_DIRECT transfers of {} were refused (EINVAL): the device's logical block size is larger",
                    size_label(point.bytes)
                );
                ctx.observer.note(&format!("{label}: skipped: {why}"));
                point.skipped = Some(why);
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        ios += done.recorder.ios;
        bytes += done.recorder.bytes;
        elapsed += done.elapsed;
        latencies.extend(done.recorder.trace().iter().map(|t| t.latency));
        rates.extend(stats::rates(done.recorder.trace(), point.bytes));
        if done.partial {
            break;
        }
    }
    if write {
        work.file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
    }
    let secs = elapsed.as_secs_f64().max(1e-9);
    let mb_s = bytes as f64 / secs / 1e6;
    point.mb_s = Some(round_rate(mb_s));
    point.iops = Some((ios as f64 / secs).round());
    point.ios = ios;
    point.seconds = round_to(secs, 3);
    point.time_box_s = Some(round_to(point_box.as_secs_f64(), 3));
    point.samples_mb_s = stats::spread(&rates, SAMPLES).into_iter().map(round_rate).collect();
    rates.sort_by(f64::total_cmp);
    if !rates.is_empty() {
        point.median_mb_s = Some(round_rate(stats::quantile(&rates, 0.5)));
        point.p10_mb_s = Some(round_rate(stats::quantile(&rates, 0.1)));
        point.p90_mb_s = Some(round_rate(stats::quantile(&rates, 0.9)));
    }
    point.latency = stats::latency(&latencies);
    point.histogram = stats::histogram(&latencies);
    ctx.observer.finished(&label, round_rate(mb_s), Unit::MbPerS);
    Ok(())
}

/// Up to [`BATCH`] distinct size-aligned offsets among `slots`, in random order.
fn draw(rng: &mut SmallRng, slots: u64, base: u64, size: u64) -> Vec<u64> {
    let mut picked: Vec<u64> =
        if slots as usize <= BATCH { (0..slots).collect() } else { (0..slots).choose_multiple(rng, BATCH) };
    picked.shuffle(rng);
    picked.into_iter().map(|slot| base + slot * size).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_run_from_512_bytes_to_8_mib() {
        assert_eq!(SIZES[0], 512);
        assert_eq!(SIZES[3], 4096);
        assert_eq!(SIZES[14], 8 << 20);
    }

    #[test]
    fn offsets_are_distinct_aligned_and_inside() {
        let mut rng = SmallRng::seed_from_u64(1);
        let small = draw(&mut rng, 100, 1 << 30, 8192);
        assert_eq!(small.len(), 100);
        let mut sorted = small.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 100);
        assert!(small.iter().all(|o| (o - (1 << 30)) % 8192 == 0 && *o < (1 << 30) + 100 * 8192));
        let large = draw(&mut rng, 1 << 20, 0, 512);
        assert_eq!(large.len(), BATCH);
    }
}
