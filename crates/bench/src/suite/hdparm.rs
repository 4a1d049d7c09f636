//! The hdparm-like read tests, as `hdparm -Tt --direct` runs them (hdparm.c
//! `time_cache` and `time_device`; the sequence below was also read off
//! Debian's hdparm 9.65 with strace on this project's machine):
//!
//! - **`-T` (`cached_read_mib_s`)**: `sync`, a 3 s pause ("give time for I/O
//!   to settle"), one untimed read of the first 2 MiB, a flush of the
//!   device's buffers (`sync`, `BLKFLSBUF`, `sync`) and a 1 s pause, then
//!   re-reads of those 2 MiB until 2 s have passed; then flush and pause again.
//! - **`-t` (`seq_read_mib_s`)**: a 3 s pause after `sync`, then 2 MiB
//!   reads from byte 0 onwards until 3 s have passed, but never more than
//!   the device holds: hdparm caps the count at size ÷ 2 MiB, so a small
//!   device is read once, to its end, and never wraps around.
//!
//! Before `-t` an untimed priming read of the first 2 MiB wakes the device,
//! so that a spun-down USB disk does not put its spin-up into the timed
//! window (in `hdparm -Tt` the `-T` test's reads do this). Both report MiB/s
//! with two decimals, as hdparm prints `%6.2f MB/sec` with MB = 2^20 bytes.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};
use storage_scoring::figure::Figure;
use storage_scoring::kinds::Engine;

use storage_scoring::schema::TestDetail;

use super::steady::{Steady, Watch};
use super::{Ctx, Measured, Window, detail, round_to, sync, unsettled};
use crate::buffer::AlignedBuf;
use crate::devstat::{DevStat, Direction};
use crate::engine::{self, Completed, Data, EngineError, REPORT_EVERY, Workload};
use crate::recorder::Recorder;

const MIB: u64 = 1 << 20;
/// hdparm's `TIMING_BUF_MB`: 2 MiB per read.
const CHUNK: usize = 2 * MIB as usize;

/// `hdparm -T --direct`.
pub(super) fn cached(ctx: &Ctx<'_>, file: &File, stat: Option<&DevStat>) -> Result<Measured, EngineError> {
    let key = Figure::CachedRead.key();
    ctx.observer.started(key, ctx.sizes.cached_read_time.as_millis() as u64);
    sync();
    pause(ctx.sizes.settle)?;
    let mut buf = AlignedBuf::zeroed(CHUNK);
    read_at(file, &mut buf, 0)?;
    flush(file);
    pause(ctx.sizes.flush_pause)?;
    let window = Window::open(stat);
    let (value, mut detail, _) = timed_reads(ctx, file, ctx.sizes.cached_read_time, u64::MAX, |_| 0)?;
    window.close(&mut detail, Direction::Read);
    flush(file);
    pause(ctx.sizes.flush_pause)?;
    Ok(Measured { value, detail })
}

/// `hdparm -t --direct`.
pub(super) fn device(ctx: &Ctx<'_>, file: &File, size: u64, stat: Option<&DevStat>) -> Result<Measured, EngineError> {
    let key = Figure::SeqRead.key();
    let min_time = ctx.sizes.seq_read_time;
    ctx.observer.started(key, min_time.as_millis() as u64);
    let cap = size / CHUNK as u64;
    if cap == 0 {
        return Err(EngineError::Short { op: "read", offset: 0, got: size as usize, want: CHUNK });
    }
    let mut buf = AlignedBuf::zeroed(CHUNK);
    read_at(file, &mut buf, 0)?;
    sync();
    pause(ctx.sizes.settle)?;
    let window = Window::open(stat);
    let (value, mut detail, ended) = timed_reads(ctx, file, min_time, cap, |i| i * CHUNK as u64)?;
    window.close(&mut detail, Direction::Read);
    if ended {
        detail.notes.push(format!(
            "the device ended after {} MiB, before hdparm's {} s were up: hdparm reads at most size ÷ 2 MiB blocks and stops there too",
            cap * CHUNK as u64 / MIB,
            min_time.as_secs_f64()
        ));
        detail.low_confidence = true;
    }
    Ok(Measured { value, detail })
}

/// Reads 2 MiB at `offset(i)` for the i-th read, until `min_time` has
/// passed (or, in a profile with steady windows, until the figure has
/// settled) or `max_reads` reads are done. MiB/s with two decimals, and
/// whether the reads ended at `max_reads` (the device's end) before their
/// time was up.
///
/// With steady windows, the ramp's reads are done but not counted; the ramp
/// ends after its time or once half of `max_reads` are done, whichever is
/// first, so that a small fast device (128 MiB read in under the ramp's
/// 0.15 s) still leaves reads to count. A window that the device's end
/// closes is closed by its last read, as a settled one is by the read that
/// ends it: the reads counted are those completed between the two. Fewer
/// than 4 reads leave no window to count (a device under 8 MiB): they are
/// timed from the start, as hdparm times them.
fn timed_reads(
    ctx: &Ctx<'_>,
    file: &File,
    min_time: Duration,
    max_reads: u64,
    offset: impl Fn(u64) -> u64,
) -> Result<(f64, TestDetail, bool), EngineError> {
    let mut buf = AlignedBuf::zeroed(CHUNK);
    let cpu_at_start = crate::engine::thread_cpu();
    let start = Instant::now();
    let rule = ctx.sizes.steady.filter(|_| max_reads >= 4);
    // The watch sees the reads from the ramp's end on, which is decided here.
    let mut watch = rule.map(|rule| Watch::new(Steady { ramp: Duration::ZERO, ..rule }));
    let ramp_time = rule.map_or(Duration::ZERO, |r| r.ramp);
    let ramp_reads = if rule.is_some() { max_reads / 2 } else { 0 };
    let mut ramp_over = rule.is_none();
    let mut recorder = Recorder::new(start).windowed(rule.is_some());
    let mut reads = 0u64;
    let mut partial = false;
    // Once settled, the window ends at a time a reporting interval ahead,
    // as the engine's windows do (`engine::Enough`).
    let mut end: Option<Instant> = None;
    let elapsed = loop {
        let issued = Instant::now();
        read_at(file, &mut buf, offset(reads))?;
        let now = Instant::now();
        if !ramp_over && (now - start >= ramp_time || reads >= ramp_reads) {
            // This read opens the window; the intervals count from it.
            ramp_over = true;
            recorder = Recorder::new(now).windowed(true);
        }
        if ramp_over {
            if watch.is_some() && reads + 1 >= max_reads {
                // The device's last read closes the window.
                recorder.close_from(now);
            }
            recorder.record(now, now - issued, CHUNK as u64);
        }
        reads += 1;
        let elapsed = if watch.is_some() { recorder.elapsed() } else { now - start };
        ctx.observer.progress((now - start).as_millis() as u64);
        let enough = match &mut watch {
            Some(watch) if ramp_over => {
                if end.is_none() && watch.observe(now - start, reads as f64) {
                    end = Some(now + REPORT_EVERY);
                    recorder.close_from(now + REPORT_EVERY);
                }
                end.is_some_and(|end| now >= end)
            }
            Some(_) => false,
            None => elapsed >= min_time,
        };
        if enough || reads >= max_reads {
            break elapsed;
        }
        if ctx.deadline.is_some_and(|d| now >= d) {
            partial = true;
            break elapsed;
        }
    };
    let ended = reads >= max_reads
        && !partial
        && match &watch {
            Some(watch) => !watch.settled(),
            None => elapsed < min_time,
        };
    let mib_s = round_to(recorder.bytes as f64 / MIB as f64 / elapsed.as_secs_f64(), 2);
    let cpu = crate::engine::thread_cpu().saturating_sub(cpu_at_start);
    let done =
        Completed { recorder, elapsed, engine: Engine::Sync, engine_detail: None, fell_back: false, partial, cpu };
    let mut detail = detail(&done, elapsed);
    if let Some(watch) = watch.filter(|w| !w.settled() && !partial && reads < max_reads) {
        unsettled(&mut detail, &watch);
    }
    Ok((mib_s, detail, ended))
}

fn read_at(file: &File, buf: &mut AlignedBuf, offset: u64) -> Result<(), EngineError> {
    let offsets = [offset];
    let work = Workload::new(file.as_fd(), &offsets, buf.len(), false, Data::Zeros);
    engine::run_sync(&work, &|_| {}).map(drop)
}

/// hdparm's `flush_buffer_cache`: `sync`, `BLKFLSBUF` (drop the device's
/// page cache), `sync`. BLKFLSBUF needs CAP_SYS_ADMIN; without it, as in
/// hdparm, the flush is just skipped.
fn flush(file: &File) {
    nix::ioctl_none!(blkflsbuf, 0x12, 97);
    sync();
    // SAFETY: BLKFLSBUF takes no argument; on a non-block fd it fails harmlessly.
    let _ = unsafe { blkflsbuf(file.as_raw_fd()) };
    sync();
}

/// Sleeps for `d`, but returns at once on Ctrl-C or SIGTERM.
pub(super) fn pause(d: Duration) -> Result<(), EngineError> {
    let until = Instant::now() + d;
    loop {
        if let Some(signal) = crate::interrupt::requested() {
            return Err(EngineError::Interrupted(signal));
        }
        let now = Instant::now();
        if now >= until {
            return Ok(());
        }
        std::thread::sleep((until - now).min(Duration::from_millis(50)));
    }
}

/// Size of a block device (BLKGETSIZE64) or regular file.
pub(super) fn device_size(file: &File) -> u64 {
    nix::ioctl_read!(blkgetsize64, 0x12, 114, u64);
    let mut size = 0u64;
    // SAFETY: BLKGETSIZE64 writes one u64 into `size`; on a non-block fd it fails harmlessly.
    if unsafe { blkgetsize64(file.as_raw_fd(), &mut size) }.is_ok() && size > 0 {
        return size;
    }
    file.metadata().map(|m| m.len()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::suite::{Plan, Profile, ReadTarget, Silent, WriteTarget};

    /// The quick profile's `-t` on a file of `mib` MiB, read from the page
    /// cache: far faster than the 0.15 s ramp.
    fn quick_read(mib: u64) -> (f64, TestDetail, bool) {
        let mut file = tempfile::tempfile().expect("tempfile");
        file.write_all(&vec![7u8; (mib * MIB) as usize]).expect("write");
        let mut plan = Plan::new(ReadTarget::Unavailable(String::new()), WriteTarget::Unavailable(String::new()));
        plan.profile = Profile::Quick;
        let ctx = Ctx { plan: &plan, observer: &Silent, sizes: plan.profile.sizes(), deadline: None };
        let cap = mib * MIB / CHUNK as u64;
        timed_reads(&ctx, &file, ctx.sizes.seq_read_time, cap, |i| i * CHUNK as u64).expect("read")
    }

    #[test]
    fn a_device_read_whole_inside_the_ramp_still_has_a_figure() {
        // 8 blocks, all read within the ramp's time: the ramp ends after 4,
        // the 5th opens the window, the 8th closes it, uncounted.
        let (mib_s, detail, ended) = quick_read(16);
        assert!(mib_s.is_finite() && mib_s > 0.0, "{mib_s}");
        assert_eq!((detail.ios, detail.bytes), (3, 3 * CHUNK as u64), "{detail:?}");
        assert!(ended);
    }

    #[test]
    fn a_device_under_four_blocks_is_timed_whole() {
        let (mib_s, detail, ended) = quick_read(6);
        assert!(mib_s.is_finite() && mib_s > 0.0, "{mib_s}");
        assert_eq!(detail.ios, 3, "{detail:?}");
        assert!(ended);
    }
}
