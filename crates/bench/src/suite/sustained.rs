//! The sustained sequential write: what the SD Application Performance
//! Class calls "minimum sustained sequential performance" (10 MB/s for A1
//! and A2, SD 5.1 and 6.0 Part 1, as sdcard.org's Application Performance
//! Class page lists it), which Storage.sh's dd figure cannot tell: dd's is
//! a mean over 520 MiB, so a card that writes fast into its cache and then
//! stalls for seconds at a time can still average above 10 MB/s.
//!
//! A new file (allocated first, as fio's write job does) is written end to
//! end with O_DIRECT 512 KiB writes of random data, one at a time. The
//! figure is the slowest of its back-to-back windows of [`SPAN`], as `fio
//! --rw=write --bs=512k --direct=1 --bwavgtime=1000` reports the lowest of
//! its bandwidth samples ("bw min"), but with each write's bytes spread
//! over the time it took rather than counted at its completion
//! ([`curve::slowest_window`], which `profile`'s slowest second uses too). Windows starting in the first [`RAMP`] are left
//! out: a queue filling, not the card. The test runs last,
//! after Storage.sh's set, so that none of the nine figures meets the state
//! (a full cache, pending garbage collection) that a long write leaves.
//! MB/s (10^6 B), rounded as dd prints it ([`super::dd::like_dd`]).

use std::fs::File;
use std::os::fd::AsFd;
use std::time::Duration;

use storage_scoring::figure::Figure;

use super::{Ctx, Eta, Measured, Window, detail};
use crate::devstat::{DevStat, Direction};
use crate::engine::{self, Data, EngineError, Workload};
use crate::profile::curve::{self, Chunk, Slowest, Windows};
use crate::recorder::Traced;
use crate::{filestate, scratch};

/// Each write: large enough that a card's sequential path, not the cost of
/// a command, sets the rate.
const BLOCK: u64 = 512 * 1024;

/// The window a rate is taken over (fio's `--bwavgtime=1000`).
pub const SPAN: Duration = Duration::from_secs(1);

/// Windows that start this soon are left out (the quick profile's ramp).
pub const RAMP: Duration = Duration::from_millis(150);

pub(super) fn run(ctx: &Ctx<'_>, file: &File, base: u64, stat: Option<&DevStat>) -> Result<Measured, EngineError> {
    let key = Figure::SustainedSeqWrite.key();
    let bytes = ctx.sizes.sustained_bytes;
    let raw = base > 0;
    if !raw {
        scratch::allocate(file, bytes).map_err(|source| EngineError::Call { op: "fallocate", source })?;
    }
    scratch::set_direct(file, true).map_err(|source| EngineError::Call { op: "fcntl(O_DIRECT)", source })?;
    let count = bytes / BLOCK;
    let offsets: Vec<u64> = (0..count).map(|i| base + i * BLOCK).collect();
    ctx.observer.started(key, count);
    let mut work = Workload::new(file.as_fd(), &offsets, BLOCK as usize, true, Data::Random(0x5eed_0004));
    work.deadline = ctx.deadline;
    work.trace = true;
    let eta = Eta::new(key, ctx.observer, count, "512 KiB writes");
    let mut state = if raw { None } else { filestate::observe(file, true) };
    let window = Window::open(stat);
    let done = engine::run_sync(&work, &|n| {
        ctx.observer.progress(n);
        eta.update(n);
    })?;
    let mut detail = detail(&done, done.elapsed);
    window.close(&mut detail, Direction::Write);
    filestate::finish(&mut state, file);
    detail.file_state = state;
    let exact = match slowest_second(done.recorder.trace(), BLOCK) {
        Some(slowest) => {
            detail.notes.push(format!(
                "the slowest second: {:.1} MB/s, from {:.2} s in; the whole write averaged {:.1} MB/s",
                slowest.mb_s,
                slowest.from,
                mean_mb_s(done.recorder.bytes, done.elapsed)
            ));
            slowest.mb_s
        }
        None => {
            detail.low_confidence = true;
            detail.notes.push(format!(
                "the whole write took {:.2} s, too short for a {} s window after the first {} ms: the figure is its mean rate",
                done.elapsed.as_secs_f64(),
                SPAN.as_secs(),
                RAMP.as_millis()
            ));
            mean_mb_s(done.recorder.bytes, done.elapsed)
        }
    };
    Ok(Measured { value: super::dd::like_dd(exact), detail })
}

fn mean_mb_s(bytes: u64, elapsed: Duration) -> f64 {
    bytes as f64 / 1e6 / elapsed.as_secs_f64()
}

/// The slowest of the back-to-back seconds of a write of `block`-byte
/// requests done one at a time, from the end of its first [`RAMP`], each
/// request's bytes spread over the time it took (see
/// [`curve::slowest_window`]): fio's `bw min` at `--bwavgtime=1000`.
pub(crate) fn slowest_second(trace: &[Traced], block: u64) -> Option<Slowest> {
    let chunks: Vec<Chunk> = trace
        .iter()
        .zip(0u64..)
        .map(|(t, i)| Chunk { offset: i * block, bytes: block, secs: t.latency.as_secs_f64() })
        .collect();
    curve::slowest_window(&chunks, SPAN.as_secs_f64(), RAMP.as_secs_f64(), Windows::Ticks)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests done one after another, each taking the given ms.
    fn trace(took_ms: &[f64]) -> Vec<Traced> {
        let mut done = Duration::ZERO;
        took_ms
            .iter()
            .map(|&ms| {
                let latency = Duration::from_secs_f64(ms / 1000.0);
                done += latency;
                Traced { done, latency }
            })
            .collect()
    }

    #[test]
    fn a_steady_write_is_its_rate_whatever_the_phase() {
        // 1 MB every 87 ms (11.49 MB/s): a 1 s window counting whole
        // completions would hold 11 or 12 of them.
        let s = slowest_second(&trace(&[87.0; 60]), 1_000_000).expect("a window");
        assert!((s.mb_s - 1000.0 / 87.0).abs() < 1e-6, "{s:?}");
    }

    #[test]
    fn a_rate_limiter_s_bursts_give_the_rate_of_its_slices() {
        // Every 100 ms, one request waits the slice out, then seven go
        // at once (a microsecond each): 8 MB per 100 ms, 80 MB/s, however
        // a window meets the slices.
        let slices: Vec<f64> =
            (0..40).flat_map(|_| [99.993, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001, 0.001]).collect();
        let s = slowest_second(&trace(&slices), 1_000_000).expect("a window");
        assert!((s.mb_s - 80.0).abs() < 1e-6, "{s:?}");
    }

    #[test]
    fn a_stall_is_found_where_the_mean_hides_it() {
        // Fast (1 MB per 20 ms) for 2 s, one request that takes 1.5 s, then
        // fast again.
        let mut took = vec![20.0; 100];
        took.push(1500.0);
        took.extend([20.0; 100]);
        let s = slowest_second(&trace(&took), 1_000_000).expect("a window");
        let mean = 201.0 / 5.5;
        assert!(mean > 30.0, "the mean alone would pass any sequential mark: {mean}");
        // A window inside the stall holds two thirds of its one request.
        assert!((s.mb_s - 1.0 / 1.5).abs() < 1e-6, "{s:?}");
        assert!((s.from - 2.15).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn the_ramp_is_left_out_and_short_writes_have_no_window() {
        // A slow first request (140 ms, in the ramp) then 10 MB/s.
        let mut took = vec![140.0];
        took.extend([100.0; 30]);
        let s = slowest_second(&trace(&took), 1_000_000).expect("a window");
        assert!((s.mb_s - 10.0).abs() < 1e-6, "{s:?}");
        assert!(s.from >= RAMP.as_secs_f64(), "{s:?}");
        assert_eq!(slowest_second(&trace(&[100.0; 11]), 1_000_000), None);
        assert_eq!(slowest_second(&[], 1_000_000), None);
    }
}
