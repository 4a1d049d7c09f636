//! The dd-like write, `dd if=/dev/zero of=test bs=4k count=130k conv=fsync`
//! on a new file: buffered 4 KiB writes of zeros, then `fsync`, all timed.
//! MB/s (10^6 B), rounded as coreutils dd prints its rate ([`like_dd`]).
//!
//! The `fsync` runs on a helper thread while this one watches: the kernel
//! cannot abandon writes it has started, so Ctrl-C during the fsync says
//! "finishing N MiB of pending writes to the card…" within a second and the
//! run ends as soon as the fsync returns. The watch also gives the ETA of a
//! fsync that will take very long, from the device's own write counter.

use std::fs::File;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};
use storage_scoring::figure::Figure;

use super::{Ctx, Eta, Measured, Window, detail, round_to};
use crate::devstat::{DevStat, Direction};
use crate::engine::{self, Data, EngineError, Workload};
use crate::filestate;

const BLOCK: u64 = 4096;

pub(super) fn run(ctx: &Ctx<'_>, file: &File, base: u64, stat: Option<&DevStat>) -> Result<Measured, EngineError> {
    let key = Figure::SeqWrite.key();
    let bytes = ctx.sizes.dd_bytes;
    let count = bytes / BLOCK;
    ctx.observer.started(key, count);
    let offsets: Vec<u64> = (0..count).map(|i| base + i * BLOCK).collect();
    let mut work = Workload::new(file.as_fd(), &offsets, BLOCK as usize, true, Data::Zeros);
    work.deadline = ctx.deadline;
    let eta = Eta::new(key, ctx.observer, count, "4 KiB writes");
    let mut state = if base == 0 { filestate::observe(file, true) } else { None };
    let window = Window::open(stat);
    let done = engine::run_sync(&work, &|n| {
        ctx.observer.progress(n);
        eta.update(n);
    })?;
    let fsync_took = watched_fsync(ctx, file, stat, done.recorder.bytes, &eta)?;
    let elapsed = done.elapsed + fsync_took;
    let exact = done.recorder.bytes as f64 / 1e6 / elapsed.as_secs_f64();
    let mb_s = like_dd(exact);
    let mut detail = detail(&done, elapsed);
    window.close(&mut detail, Direction::Write);
    filestate::finish(&mut state, file);
    detail.file_state = state;
    detail.notes.extend(scored_as_printed(exact));
    Ok(Measured { value: mb_s, detail })
}

/// From 1000 MB/s dd prints GB/s, and PiBenchmarks scores the number it
/// prints (storage_scoring::score::dd_printed_number): say so beside the figure.
fn scored_as_printed(exact_mb_s: f64) -> Option<String> {
    let mb_s = like_dd(exact_mb_s);
    (mb_s >= 1000.0).then(|| {
        let printed = mb_s / 1000.0;
        format!(
            "dd prints {exact_mb_s:.1} MB/s as \"{printed} GB/s\", and PiBenchmarks' Storage.sh scores the number it prints ({printed}) as if it were MB/s: the score does the same, while this figure stays in MB/s"
        )
    })
}

/// Runs `fsync` on a helper thread and watches it: a signal gets one line
/// saying what is being waited for; a very slow flush gets its ETA.
fn watched_fsync(
    ctx: &Ctx<'_>,
    file: &File,
    stat: Option<&DevStat>,
    written: u64,
    eta: &Eta<'_>,
) -> Result<Duration, EngineError> {
    let start = Instant::now();
    let at_start = stat.and_then(DevStat::snapshot);
    let reached = || -> Option<u64> {
        let (before, now) = (at_start?, stat?.snapshot()?);
        Some(now.write_sectors.saturating_sub(before.write_sectors) * 512)
    };
    let result = std::thread::scope(|scope| {
        let flusher = scope.spawn(|| file.sync_all());
        let mut told = false;
        while !flusher.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            let device_bytes = reached();
            if let Some(done) = device_bytes {
                // The ETA of the whole test, in blocks the device has taken.
                eta.update((done.min(written) / BLOCK).max(1));
            }
            if !told && crate::interrupt::requested().is_some() {
                told = true;
                let pending = device_bytes.map(|d| written.saturating_sub(d));
                ctx.observer.note(&match pending {
                    Some(p) => format!(
                        "finishing {} MiB of pending writes to the card… (the kernel cannot abandon them; the run ends when they are written)",
                        p.div_ceil(1 << 20)
                    ),
                    None => "finishing the pending writes to the card… (the kernel cannot abandon them; the run ends when they are written)".to_owned(),
                });
            }
        }
        flusher.join()
    });
    match result {
        Ok(Ok(())) => Ok(start.elapsed()),
        Ok(Err(source)) => Err(EngineError::Call { op: "fsync", source }),
        Err(_) => Err(EngineError::Panicked("the fsync thread".to_owned())),
    }
}

/// Rounds a MB/s rate the way coreutils dd prints it, since PiBenchmarks
/// scored dd's printed figure. dd's human-readable SI output keeps one
/// decimal below 100 (`5.8 MB/s`, `33.4 MB/s`), none from 100 to 999
/// (`370 MB/s`), and switches to GB/s from 1000 (`1.2 GB/s` = 1200 MB/s);
/// these outputs were read off Debian's dd on this machine.
pub fn like_dd(mb_s: f64) -> f64 {
    if !mb_s.is_finite() || mb_s <= 0.0 {
        return mb_s;
    }
    if mb_s < 100.0 {
        round_to(mb_s, 1)
    } else if mb_s < 1000.0 {
        mb_s.round()
    } else {
        like_dd(mb_s / 1000.0) * 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_round_like_dd() {
        assert_eq!(like_dd(5.83), 5.8);
        assert_eq!(like_dd(33.44), 33.4);
        assert_eq!(like_dd(370.3), 370.0);
        assert_eq!(like_dd(1234.5), 1200.0);
    }

    #[test]
    fn from_1000_mb_s_the_figure_says_how_it_is_scored() {
        assert_eq!(scored_as_printed(999.4), None);
        let note = scored_as_printed(1234.5).expect("a note");
        assert!(note.contains("1234.5 MB/s as \"1.2 GB/s\"") && note.contains("(1.2)"), "{note}");
    }
}
