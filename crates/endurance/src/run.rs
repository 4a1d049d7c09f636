//! The passes: write every segment, read every segment, close the pass,
//! and stop when a limit is reached or the card as a whole changes.
//!
//! How the card as a whole is told from worn blocks:
//! - **read-only**: a write refused with EROFS/EPERM, or [`STREAK`]
//!   segments in a row whose every write failed while reads still work.
//!   Those segments are held, not counted: if a later segment writes, they
//!   were worn blocks after all and are counted then.
//! - **ignores-writes**: [`STREAK`] segments in a row whose check blocks,
//!   read right after the segment was written and flushed, all hold
//!   something else. Segments that end a write phase in such a streak are
//!   not judged for old data in that pass (the next pass tells).
//! - **vanished**: the device gone (ENODEV, ENXIO, ...), or a segment
//!   with failed requests while no read anywhere on the card works,
//!   and not back within the wait. A card that comes back redoes the
//!   segment; nothing of it is counted as wear.

use std::time::Instant;

use storage_capacity::Disk;
use storage_scoring::endurance::{BLOCK_BYTES, BadKind, Milestone, Pass, Stopped};

use crate::engine::{self, ErrorKind};
use crate::layout::Layout;
use crate::state::{Phase, Progress, State};
use crate::{EnduranceError, Options, Slot, Watch, start};

/// Segments in a row that make a whole-card judgement.
pub const STREAK: usize = 3;

/// Goes on with `state` on `disk` until a stop; the state is saved after
/// every segment and at the end. Returns with `state.report.stopped` set.
pub fn run(
    dir: &storage_capacity::JournalDir,
    state: &mut State,
    mut disk: Box<dyn Disk + Send>,
    slot: &mut dyn Slot,
    options: &Options,
    watch: &dyn Watch,
) -> Result<(), EnduranceError> {
    let layout = Layout::new(state.report.surface_bytes / BLOCK_BYTES, BLOCK_BYTES);
    let session = Instant::now();
    let seconds_before = state.report.seconds;
    let run = state.run;
    loop {
        state.report.seconds = seconds_before + session.elapsed().as_secs_f64();
        if let Some(signal) = watch.stop() {
            state.report.stopped = Some(Stopped::Interrupted);
            state.save(dir)?;
            watch.stage(&format!("stopped by {signal} in pass {}; the same command resumes", state.progress.pass));
            return Ok(());
        }
        if let Some(hours) = options.hours {
            if state.report.seconds >= hours * 3600.0 {
                return finish(dir, state, Stopped::Hours, true);
            }
        }
        let pass = state.progress.pass;
        match state.progress.phase {
            Phase::Write => {
                let order = layout.write_order(run, pass);
                let Some(&segment) = order.get(state.progress.done as usize) else {
                    let p = &mut state.progress;
                    p.unjudged = std::mem::take(&mut p.not_taken);
                    p.phase = Phase::Read;
                    p.done = 0;
                    watch.stage(&format!("pass {pass}: reading back"));
                    continue;
                };
                let blocks = layout.segment(segment);
                let written = engine::write_segment(
                    disk.as_mut(),
                    blocks.clone(),
                    &state.bad,
                    run,
                    pass,
                    &mut state.progress.write_latency,
                );
                let every_write_failed = written.tried > 0 && written.failed.len() as u64 == written.tried;
                // Failures while nothing on the card can be read are the card
                // gone (mid-segment, too), not worn blocks.
                let gone = written.stopped_by == Some(ErrorKind::Gone)
                    || (!written.failed.is_empty() && !reads_work(disk.as_mut(), state));
                if gone {
                    // Redo the segment on the card when it is back.
                    match reattach(state, disk, slot, options, watch)? {
                        Some(again) => disk = again,
                        None => return gave_up(dir, state, watch),
                    }
                    continue;
                }
                if written.stopped_by == Some(ErrorKind::ReadOnly) {
                    return finish(dir, state, Stopped::ReadOnly, true);
                }
                let p = &mut state.progress;
                p.counts.bytes_written += written.bytes;
                p.write_seconds += written.seconds;
                if every_write_failed {
                    p.refused.push(segment);
                    if p.refused.len() >= STREAK {
                        return finish(dir, state, Stopped::ReadOnly, true);
                    }
                } else {
                    for held in std::mem::take(&mut p.refused) {
                        for block in layout.segment(held) {
                            fail(state, block, BadKind::WriteError);
                        }
                    }
                    for &block in &written.failed {
                        fail(state, block, BadKind::WriteError);
                    }
                }
                let p = &mut state.progress;
                if written.not_taken {
                    p.not_taken.push(segment);
                    if p.not_taken.len() >= STREAK {
                        return finish(dir, state, Stopped::IgnoresWrites, true);
                    }
                } else if written.tried > 0 {
                    p.not_taken.clear();
                }
                state.progress.done += 1;
            }
            Phase::Read => {
                let order = layout.read_order(run, pass);
                let Some(&segment) = order.get(state.progress.done as usize) else {
                    if let Some(stop) = close_pass(state, options) {
                        return finish(dir, state, stop, false);
                    }
                    state.save(dir)?;
                    watch.stage(&format!("pass {}: writing", state.progress.pass));
                    continue;
                };
                let blocks = layout.segment(segment);
                let read = engine::read_segment(
                    disk.as_mut(),
                    blocks,
                    &state.bad,
                    run,
                    pass,
                    &mut state.progress.read_latency,
                );
                let some_read_failed = read.wrong.iter().any(|(_, k)| *k == BadKind::ReadError);
                if read.stopped_by == Some(ErrorKind::Gone) || (some_read_failed && !reads_work(disk.as_mut(), state)) {
                    match reattach(state, disk, slot, options, watch)? {
                        Some(again) => disk = again,
                        None => return gave_up(dir, state, watch),
                    }
                    continue;
                }
                let unjudged = state.progress.unjudged.contains(&segment);
                for (block, kind) in read.wrong {
                    if !(unjudged && kind == BadKind::OldData) {
                        fail(state, block, kind);
                    }
                }
                let p = &mut state.progress;
                p.counts.bytes_read += read.bytes;
                p.read_seconds += read.seconds;
                p.done += 1;
            }
        }
        state.report.seconds = seconds_before + session.elapsed().as_secs_f64();
        state.save(dir)?;
    }
}

/// Retires `block`, counting it once.
fn fail(state: &mut State, block: u64, kind: BadKind) {
    if state.bad.mark(block) {
        state.progress.counts.count(kind);
        state.report.bad_blocks += 1;
    }
}

/// Whether any block outside the failed ones can still be read.
fn reads_work(disk: &mut dyn Disk, state: &State) -> bool {
    let mut buf = storage_capacity::disk::AlignedBuf::new(BLOCK_BYTES as usize);
    let blocks = state.report.surface_bytes / BLOCK_BYTES;
    let step = (blocks / 16).max(1);
    (0..blocks).step_by(step as usize).any(|b| disk.read_at(b * BLOCK_BYTES, buf.as_mut_slice()).is_ok())
}

/// The card went away: wait for it in its slot, and check it is the card.
fn reattach(
    state: &mut State,
    gone: Box<dyn Disk + Send>,
    slot: &mut dyn Slot,
    options: &Options,
    watch: &dyn Watch,
) -> Result<Option<Box<dyn Disk + Send>>, EnduranceError> {
    watch.stage(&format!(
        "the card went away in pass {}; waiting up to {} s for it",
        state.progress.pass,
        options.wait.as_secs()
    ));
    let deadline = Instant::now() + options.wait;
    let mut gone = gone;
    let mut disk = loop {
        let wait = deadline.saturating_duration_since(Instant::now());
        let Some(mut disk) = slot.reattach(gone, wait, watch) else { return Ok(None) };
        // A device that is there but answers nothing (a reader whose card
        // is half in, a card still resetting) is not back yet.
        if reads_work(disk.as_mut(), state) {
            break disk;
        }
        if Instant::now() >= deadline || watch.stop().is_some() {
            return Ok(None);
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
        gone = disk;
    };
    if disk.size() != state.size || !start::holds_run(disk.as_mut(), state) {
        return Err(EnduranceError::NotThisCard { node: state.node.clone() });
    }
    state.report.notes.push(format!("pass {}: the card went away and came back", state.progress.pass));
    watch.stage("the card is back; going on");
    Ok(Some(disk))
}

/// The card did not come back: it vanished, unless the wait was cut
/// short by a signal (then the run is only interrupted).
fn gave_up(dir: &storage_capacity::JournalDir, state: &mut State, watch: &dyn Watch) -> Result<(), EnduranceError> {
    if watch.stop().is_some() {
        state.report.stopped = Some(Stopped::Interrupted);
        state.save(dir)?;
        return Ok(());
    }
    finish(dir, state, Stopped::Vanished, true)
}

/// Ends the pass under way: its figures into the report, the milestones,
/// and the stop a limit asks for.
fn close_pass(state: &mut State, options: &Options) -> Option<Stopped> {
    let p = std::mem::take(&mut state.progress);
    let pass = p.pass;
    push_pass(state, &p);
    state.report.mark_milestones(pass);
    state.progress = Progress { pass: pass + 1, ..Progress::default() };
    let reached = |m: Milestone| state.report.milestones.contains_key(&m);
    if options.until.is_some_and(reached) {
        return Some(Stopped::Until);
    }
    if options.passes.is_some_and(|n| pass >= n) {
        return Some(Stopped::Passes);
    }
    None
}

fn push_pass(state: &mut State, p: &Progress) {
    let rate = |bytes: u64, seconds: f64| if seconds > 0.0 { bytes as f64 / seconds / 1e6 } else { 0.0 };
    let row = Pass {
        pass: p.pass,
        write_mb_s: rate(p.counts.bytes_written, p.write_seconds),
        read_mb_s: rate(p.counts.bytes_read, p.read_seconds),
        write_p99_ms: p.write_latency.quantile_ms(0.99),
        read_p99_ms: p.read_latency.quantile_ms(0.99),
        bad_blocks: state.report.bad_blocks,
        ..p.counts.clone()
    };
    state.report.total_written_bytes += row.bytes_written;
    state.report.total_read_bytes += row.bytes_read;
    state.report.passes.push(row);
}

/// Stops the run for good: a pass cut short is reported as far as it
/// went, and the held segments of a whole-card change are not counted.
fn finish(
    dir: &storage_capacity::JournalDir,
    state: &mut State,
    stop: Stopped,
    partial: bool,
) -> Result<(), EnduranceError> {
    // `--hours` met between two passes cuts nothing short.
    let p = &state.progress;
    let partial = partial && (stop != Stopped::Hours || p.done > 0 || p.phase == Phase::Read);
    let pass = if partial { state.progress.pass } else { state.progress.pass - 1 };
    if partial {
        let p = std::mem::take(&mut state.progress);
        let held = p.refused.len() + p.not_taken.len();
        let phase = match p.phase {
            Phase::Write => "writing",
            Phase::Read => "reading back",
        };
        state.report.notes.push(format!(
            "pass {pass} was cut short while {phase} (segment {} of its order){}",
            p.done + 1,
            if held > 0 {
                format!("; the last {held} segments, where the card changed, are not counted as wear")
            } else {
                String::new()
            }
        ));
        if p.counts.bytes_written + p.counts.bytes_read > 0 {
            push_pass(state, &p);
            state.report.mark_milestones(pass);
        }
        state.progress = Progress { pass, ..p };
    }
    state.report.stopped = Some(stop);
    state.report.stopped_at_pass = Some(pass);
    state.finished = true;
    state.save(dir)?;
    Ok(())
}
