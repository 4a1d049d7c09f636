//! The sustained write: SIZE written in sequence in 4 MiB O_DIRECT chunks,
//! one in flight, every chunk timed, then `fsync`; the curve of speed
//! against progress and what it shows ([`super::curve`]).
//!
//! With `--after-random SECS`, the seed study's second half follows: random
//! 4 KiB writes over the region just written for SECS seconds (32 in
//! flight), then the same region written in sequence again, so that the two
//! curves can be set side by side. On flash, the random writes leave the
//! translation layer fragmented and the second pass pays for cleaning it.
//!
//! A pass is issued in slices of [`SLICE`] chunks, each one engine
//! workload, so that progress and the time box are checked often on slow
//! cards; the time between slices (a few microseconds of setup) is off the
//! clock, and no chunk's time includes it.

use std::fs::File;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use storage_scoring::figure::Unit;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use storage_scoring::profile::{AfterRandom, Curve, Level, Sustained};

use super::curve::{self, Chunk};
use super::stats::{self, round_rate, round_to};
use super::{CHUNK, Ctx, SdFacts};
use crate::devstat::{self, Direction};
use crate::engine::{self, Data, EngineError, Shape, Workload};

/// Chunks per engine workload.
const SLICE: u64 = 8;
/// Random writes of the after-random phase: 4 KiB, 32 in flight.
const RANDOM_BLOCK: u64 = 4096;
const RANDOM_DEPTH: usize = 32;

/// Runs the fresh pass (and the after-random one when asked) on `file`
/// from `base`, within `time_box`. Returns the study and the bytes the
/// fresh pass wrote.
pub(crate) fn run(
    ctx: &Ctx<'_>,
    file: &File,
    base: u64,
    size: u64,
    after_random: Option<Duration>,
    time_box: Duration,
) -> Result<(Sustained, u64), EngineError> {
    let start = Instant::now();
    // With a second pass, the fresh one gets half of what the random
    // writes leave, so that the two curves can be of equal length.
    let fresh_box = match after_random {
        Some(random) => time_box.saturating_sub(random) / 2,
        None => time_box,
    }
    .max(Duration::from_secs(1));
    let mut fresh = pass(ctx, file, base, size, start + fresh_box, "sustained write")?;
    fresh.notes.insert(0, box_note(&fresh, fresh_box));
    if let Some(note) = ctx.config.sd.and_then(|sd| sd_note(&fresh, sd)) {
        fresh.notes.push(note);
    }
    let written = fresh.bytes_written;
    let mut sustained = Sustained { fresh, after_random: None };
    if let (Some(random), true) = (after_random, written > 0) {
        let (random_writes, random_seconds) = random_writes(ctx, file, base, written, random)?;
        let begun = Instant::now();
        let end = (start + time_box).max(begun + Duration::from_secs(1));
        let mut curve = pass(ctx, file, base, written, end, "sustained write after random writes")?;
        curve.notes.insert(0, box_note(&curve, end.saturating_duration_since(begun)));
        sustained.after_random = Some(AfterRandom {
            random_seconds: round_to(random_seconds, 3),
            random_writes,
            random_iops: (random_writes as f64 / random_seconds.max(1e-9)).round(),
            curve,
        });
    }
    Ok((sustained, written))
}

/// One sequential pass over `size` bytes at `base`, stopped at `deadline`.
fn pass(
    ctx: &Ctx<'_>,
    file: &File,
    base: u64,
    size: u64,
    deadline: Instant,
    label: &str,
) -> Result<Curve, EngineError> {
    let count = size / CHUNK;
    ctx.observer.started(label, count);
    let before = ctx.stat.as_ref().and_then(devstat::DevStat::snapshot);
    let mut chunks: Vec<Chunk> = Vec::with_capacity(count as usize);
    let mut latencies = Vec::with_capacity(count as usize);
    let mut elapsed = Duration::ZERO;
    let mut time_boxed = false;
    let mut next = 0u64;
    while next < count {
        let slice: Vec<u64> = (next..(next + SLICE).min(count)).map(|i| base + i * CHUNK).collect();
        let mut work = Workload::new(file.as_fd(), &slice, CHUNK as usize, true, Data::Random(0x5eed_5500 + next));
        work.deadline = Some(deadline);
        work.trace = true;
        let done = engine::run_sync(&work, &|_| {})?;
        for (i, traced) in done.recorder.trace().iter().enumerate() {
            let offset = (next + i as u64) * CHUNK;
            chunks.push(Chunk { offset, bytes: CHUNK, secs: traced.latency.as_secs_f64() });
            latencies.push(traced.latency);
        }
        elapsed += done.elapsed;
        next += done.recorder.ios;
        ctx.observer.progress(next);
        if done.partial {
            time_boxed = true;
            break;
        }
    }
    let flushed = Instant::now();
    file.sync_all().map_err(|source| EngineError::Call { op: "fsync", source })?;
    elapsed += flushed.elapsed();
    let written = chunks.len() as u64 * CHUNK;
    let analysis = curve::analyse(&chunks);
    let mean = written as f64 / elapsed.as_secs_f64().max(1e-9) / 1e6;
    ctx.observer.finished(label, round_rate(mean), Unit::MbPerS);
    let mut curve = Curve {
        bytes_written: written,
        cache_bytes: analysis.step.map(|s| s.at_bytes),
        before_mb_s: analysis.step.map(|s| round_rate(s.before_mb_s)),
        after_mb_s: analysis.step.map(|s| round_rate(s.after_mb_s)),
        steady_mb_s: analysis.steady_mb_s.map(round_rate),
        min_1s_mb_s: analysis.min_1s_mb_s.map(round_rate),
        points: chunks.iter().map(|c| (c.offset, round_rate(c.mb_s()))).collect(),
        chunk_bytes: CHUNK,
        planned_bytes: count * CHUNK,
        seconds: round_to(elapsed.as_secs_f64(), 3),
        mean_mb_s: round_rate(mean),
        levels: analysis
            .segments
            .iter()
            .map(|s| Level {
                from_bytes: chunks[s.from].offset,
                to_bytes: chunks[s.to - 1].offset + CHUNK,
                mb_s: round_rate(s.mb_s),
            })
            .collect(),
        time_boxed,
        latency: stats::latency(&latencies),
        histogram: stats::histogram(&latencies),
        device_io: None,
        notes: Vec::new(),
    };
    if let (Some(stat), Some(before)) = (ctx.stat.as_ref(), before) {
        if let Some(after) = stat.snapshot() {
            let io = devstat::evidence(stat, before, after, Direction::Write, written);
            if !io.reached {
                curve.notes.push(devstat::missed(&io, Direction::Write));
            }
            curve.device_io = Some(io);
        }
    }
    if analysis.min_1s_mb_s.is_none() && written > 0 {
        curve.notes.push("the pass lasted under a second, so it has no slowest one-second stretch".to_owned());
    }
    Ok(curve)
}

/// Random 4 KiB writes over `[base, base + len)` for `secs`, 32 in flight.
/// Returns the writes done and the time they took.
fn random_writes(ctx: &Ctx<'_>, file: &File, base: u64, len: u64, secs: Duration) -> Result<(u64, f64), EngineError> {
    let label = "random 4 KiB writes";
    ctx.observer.started(label, secs.as_millis() as u64);
    let deadline = Instant::now() + secs;
    let blocks = (len / RANDOM_BLOCK).max(1);
    let mut rng = SmallRng::seed_from_u64(0x5eed_4a4d);
    let (mut ios, mut elapsed) = (0u64, Duration::ZERO);
    let started = Instant::now();
    while Instant::now() < deadline {
        let batch: Vec<u64> = (0..65_536).map(|_| base + rng.gen_range(0..blocks) * RANDOM_BLOCK).collect();
        let mut work =
            Workload::new(file.as_fd(), &batch, RANDOM_BLOCK as usize, true, Data::Random(0x5eed_4a4e + ios));
        work.deadline = Some(deadline);
        let done = engine::run_queued(&work, Shape::depth(RANDOM_DEPTH), ctx.config.engine, &|_| {
            ctx.observer.progress(started.elapsed().as_millis() as u64);
        })?;
        ios += done.recorder.ios;
        elapsed += done.elapsed;
    }
    let iops = ios as f64 / elapsed.as_secs_f64().max(1e-9);
    ctx.observer.finished(label, iops.round(), Unit::Iops);
    Ok((ios, elapsed.as_secs_f64()))
}

/// What the pass's box was, and whether it ran out.
fn box_note(curve: &Curve, time_box: Duration) -> String {
    if curve.time_boxed {
        let rate = curve.mean_mb_s.max(0.01);
        let needed = curve.planned_bytes as f64 / (rate * 1e6);
        format!(
            "time-boxed at {:.0} s: wrote {} of the planned {} MiB; at {} MB/s the whole size needs about {:.0} s (give a longer --max-time, or a smaller --sustained SIZE)",
            time_box.as_secs_f64(),
            curve.bytes_written >> 20,
            curve.planned_bytes >> 20,
            curve.mean_mb_s,
            needed.ceil()
        )
    } else {
        format!("wrote all {} MiB within its time box of {:.0} s", curve.bytes_written >> 20, time_box.as_secs_f64())
    }
}

/// The SD Video Speed Class marks and their floors, MB/s (SD Physical
/// Layer Simplified Specification, "Video Speed Class").
const VIDEO_CLASSES: [u8; 5] = [6, 10, 30, 60, 90];

/// How the curve relates to the SD "sustained" definitions. The Video
/// Speed Class (V6–V90) promises its rate per allocation unit (AU): the
/// spec measures the card writing whole free AUs in sequence, its cache
/// and housekeeping included, and the floor holds for every AU. So the
/// number to compare is the steady rate after the cache, and the slowest
/// AU-sized stretch, not the cache's rate.
pub fn sd_note(curve: &Curve, sd: SdFacts) -> Option<String> {
    let steady = curve.steady_mb_s?;
    let mut note = format!(
        "SD Video Speed Class marks (V6 to V90) promise a minimum sequential write rate measured per allocation unit (AU), the card writing whole free AUs with its cache and housekeeping included, so compare the steady rate ({steady} MB/s) with the mark, not the cache's rate"
    );
    let meets = VIDEO_CLASSES.iter().rev().find(|&&v| steady >= f64::from(v));
    match meets {
        Some(v) => note.push_str(&format!("; by this curve the card would meet V{v}")),
        None => note.push_str("; by this curve the card meets no V mark (V6 needs 6 MB/s)"),
    }
    if let Some(au) = sd.au_bytes.filter(|&au| au > 0) {
        let chunks: Vec<Chunk> = curve
            .points
            .iter()
            .map(|&(offset, mb_s)| Chunk {
                offset,
                bytes: curve.chunk_bytes,
                secs: curve.chunk_bytes as f64 / (mb_s.max(1e-6) * 1e6),
            })
            .collect();
        let span = au.max(curve.chunk_bytes);
        if let Some(slowest) = curve::slowest_span(&chunks, span) {
            note.push_str(&format!(
                "; its AU is {} MiB, and the slowest AU-sized stretch of this write ran at {} MB/s",
                span >> 20,
                round_rate(slowest)
            ));
        }
    }
    if let Some(claimed) = sd.video_class.filter(|&v| v > 0) {
        let verdict = if steady >= f64::from(claimed) { "meets" } else { "falls short of" };
        note.push_str(&format!(
            "; it claims V{claimed} and its steady rate {verdict} {claimed} MB/s here, in a file through a filesystem (the spec's test writes free AUs of the raw card, so treat this as a hint, not a verdict)"
        ));
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sd_note_compares_the_steady_rate() {
        let curve = Curve {
            steady_mb_s: Some(12.0),
            chunk_bytes: CHUNK,
            points: (0..8).map(|i| (i * CHUNK, if i == 5 { 6.0 } else { 12.0 })).collect(),
            ..Curve::default()
        };
        let note = sd_note(&curve, SdFacts { au_bytes: Some(16 << 20), video_class: Some(30) }).expect("note");
        assert!(note.contains("would meet V10"), "{note}");
        assert!(note.contains("its AU is 16 MiB"), "{note}");
        assert!(note.contains("slowest AU-sized stretch of this write ran at 9.6 MB/s"), "{note}");
        assert!(note.contains("claims V30 and its steady rate falls short of 30 MB/s"), "{note}");
        let slow = Curve { steady_mb_s: Some(4.0), ..Curve::default() };
        assert!(sd_note(&slow, SdFacts::default()).expect("note").contains("meets no V mark"));
        assert!(sd_note(&Curve::default(), SdFacts::default()).is_none());
    }

    #[test]
    fn a_time_boxed_pass_says_how_long_the_whole_would_take() {
        let curve = Curve {
            bytes_written: 400 << 20,
            planned_bytes: 8 << 30,
            mean_mb_s: 10.0,
            time_boxed: true,
            ..Curve::default()
        };
        let note = box_note(&curve, Duration::from_secs(42));
        assert!(note.contains("time-boxed at 42 s: wrote 400 of the planned 8192 MiB"), "{note}");
        assert!(note.contains("about 859 s"), "{note}");
    }
}
