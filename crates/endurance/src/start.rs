//! Beginning a run, or resuming one: the card is found by its identity
//! (CID or serial, and size) and proven by its own data, a block the run
//! wrote that still carries the run's stamp. Another card in the slot,
//! while a run there is unfinished, is refused; so is a card with the
//! identity but not the data.

use std::io::Read;

use storage_capacity::disk::AlignedBuf;
use storage_capacity::{Disk, JournalDir, Safety};
use storage_scoring::endurance::{BLOCK_BYTES, CapacityFinding, EnduranceReport};

use crate::EnduranceError;
use crate::layout::Layout;
use crate::pattern;
use crate::state::{BadMap, Phase, Progress, State};

/// The card a run is for, as the caller found it.
#[derive(Debug, Clone)]
pub struct Card {
    /// The device node (`/dev/sdb`).
    pub node: String,
    /// Its identity (`storage_capacity::preflight::fingerprint`).
    pub fingerprint: String,
    /// `storage-score x.y.z`.
    pub tool: String,
    /// Now, RFC 3339.
    pub now: String,
}

/// How a run began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Began {
    New,
    Resumed,
    /// The run had already ended; its state is returned as it is.
    Finished,
}

/// The state to run on `disk` for `card`: a saved one (resumed), or a new
/// run, whose first step is the capacity check. `new` drops a saved run
/// of this card and the claim of an unfinished run on this slot.
pub fn begin(
    dir: &JournalDir,
    card: &Card,
    disk: &mut dyn Disk,
    new: bool,
    watch: &dyn crate::Watch,
) -> Result<(State, Began), EnduranceError> {
    if new {
        State::remove(dir, &card.fingerprint)
            .map_err(|source| crate::StateError::Save { dir: dir.path().display().to_string(), source })?;
    } else if let Some(saved) = State::load(dir, &card.fingerprint)? {
        if saved.finished {
            return Ok((saved, Began::Finished));
        }
        if saved.size != disk.size() || !holds_run(disk, &saved) {
            return Err(EnduranceError::NotThisCard { node: card.node.clone() });
        }
        let mut state = saved;
        state.node = card.node.clone();
        state.report.resumes += 1;
        state.report.stopped = None;
        state.report.notes.push(format!("resumed in pass {} on {}", state.progress.pass, card.now));
        state.save(dir)?;
        return Ok((state, Began::Resumed));
    } else if let Some(other) = State::unfinished(dir).into_iter().find(|s| s.node == card.node) {
        return Err(EnduranceError::OtherCardInSlot { node: card.node.clone(), other: other.report.fingerprint });
    }

    let run = random_u64().map_err(EnduranceError::Random)?;
    let announced = disk.size();
    watch.stage("checking the card's capacity before the first pass (a counterfeit's missing storage is not wear)");
    let found =
        storage_capacity::verify(disk, &card.node, &Safety::Destructive, storage_capacity::Options::default(), watch)
            .map_err(|e| EnduranceError::Capacity(e.to_string()))?;
    let usable = if found.verdict.is_fake() { found.usable_bytes } else { announced };
    let blocks = usable / BLOCK_BYTES;
    let layout = Layout::new(blocks, BLOCK_BYTES);
    let mut notes = Vec::new();
    if found.verdict.is_fake() {
        notes.push(format!(
            "the card is a counterfeit ({}): {} of the {} bytes it announces hold data; only those are worn",
            found.verdict.as_str(),
            usable,
            announced
        ));
    }
    let mut report = EnduranceReport::new(
        &card.now,
        &card.tool,
        &card.node,
        &card.fingerprint,
        blocks * BLOCK_BYTES,
        layout.segments as u32,
    );
    report.capacity = Some(CapacityFinding {
        verdict: found.verdict.as_str().to_owned(),
        announced_bytes: announced,
        usable_bytes: usable,
    });
    report.notes = notes;
    let state = State {
        run,
        node: card.node.clone(),
        size: announced,
        finished: false,
        report,
        progress: Progress { pass: 1, ..Progress::default() },
        bad: BadMap::new(blocks),
    };
    state.save(dir)?;
    Ok((state, Began::New))
}

/// Whether `disk` carries `state`'s run: some blocks the run has written
/// (in segments done in this pass, or anywhere after a whole pass) read
/// back with the run's stamp. A run that has written nothing yet has
/// nothing to prove.
pub fn holds_run(disk: &mut dyn Disk, state: &State) -> bool {
    let layout = Layout::new(state.report.surface_bytes / BLOCK_BYTES, BLOCK_BYTES);
    let p = &state.progress;
    let written: Vec<u64> = if p.pass > 1 || p.phase == Phase::Read {
        (0..layout.segments).collect()
    } else {
        layout.write_order(state.run, p.pass).into_iter().take(p.done as usize).collect()
    };
    if written.is_empty() {
        return true;
    }
    let mut buf = AlignedBuf::new(BLOCK_BYTES as usize);
    let mut seed = state.run;
    for _ in 0..32 {
        let segment = written[(pattern::splitmix(&mut seed) % written.len() as u64) as usize];
        let range = layout.segment(segment);
        let block = range.start + pattern::splitmix(&mut seed) % (range.end - range.start).max(1);
        if state.bad.is_bad(block) || disk.read_at(block * BLOCK_BYTES, buf.as_mut_slice()).is_err() {
            continue;
        }
        if pattern::header(buf.as_slice()).is_some_and(|(run, _, b)| run == state.run && b == block) {
            return true;
        }
    }
    false
}

/// A run number from the kernel's random source.
fn random_u64() -> std::io::Result<u64> {
    let mut bytes = [0u8; 8];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(u64::from_le_bytes(bytes))
}
