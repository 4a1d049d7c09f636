//! One cycle's writes (docs/power-loss.md#a-cycle): 4 KiB records at
//! sequential and random addresses, a flush after a random number of them,
//! until the cutter says the power is off. What was there before a block's
//! first write in the run is read first, so that a read back of old content
//! can be told from garbage, and a tear from damage.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use storage_capacity::Disk;
use storage_capacity::disk::AlignedBuf;

use crate::record::{self, Header, Prints, RECORD_BYTES};

/// Most records a sequential burst holds.
const BURST: u64 = 64;
/// Most records one write carries (64 KiB).
const PER_WRITE: usize = 16;
/// Most records between two flushes.
const FLUSH_EVERY: u32 = 48;

/// What the writer is told.
#[derive(Debug, Clone)]
pub struct Plan {
    pub run: [u8; 16],
    pub cycle: u32,
    pub first_sequence: u64,
    /// Blocks of [`RECORD_BYTES`] on the device.
    pub blocks: u64,
    /// Seeds this cycle's addresses and flush points.
    pub seed: u64,
    /// Most records this cycle (no address is written twice in a cycle).
    pub cap: usize,
}

/// One record written (its write returned).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Written {
    pub block: u64,
    pub header: Header,
    /// A flush returned after it.
    pub acknowledged: bool,
    /// What the block held before, when it was read first (its first write
    /// in the run).
    pub before: Option<Prints>,
}

/// Who hears of each write before it is issued and of each flush that
/// returned: nobody in a run this host survives, the witness across the
/// network when the whole machine loses its power.
pub trait Journal {
    /// `writes` are about to be issued (not acknowledged yet).
    fn about_to_write(&mut self, writes: &[Written]) -> std::io::Result<()>;
    /// A flush returned: every record with a sequence below `through` is
    /// acknowledged.
    fn acknowledged(&mut self, through: u64) -> std::io::Result<()>;
}

/// The journal of a run whose host keeps its memory across the cut.
#[derive(Debug, Default)]
pub struct InMemory;

impl Journal for InMemory {
    fn about_to_write(&mut self, _: &[Written]) -> std::io::Result<()> {
        Ok(())
    }

    fn acknowledged(&mut self, _: u64) -> std::io::Result<()> {
        Ok(())
    }
}

/// What the writer did.
#[derive(Debug, Default)]
pub struct Log {
    pub writes: Vec<Written>,
    /// The error that stopped it, if one did (after a cut, the expected end).
    pub error: Option<String>,
}

/// Writes until `stop`, an error, or `plan.cap` records. A flush that
/// returns acknowledges every record written since the one before (a card
/// whose power is off cannot answer a flush, so one that returned came
/// before the cut); `known(block)` says whether the old content of a block
/// is already known (no read first). `journal` hears of every write before
/// it is issued and of every flush after it returned; when it fails, the
/// writer stops (an unrecorded write could not be judged).
pub fn write(
    disk: &mut dyn Disk,
    plan: &Plan,
    known: &dyn Fn(u64) -> bool,
    stop: &AtomicBool,
    journal: &mut dyn Journal,
) -> Log {
    let mut log = Log::default();
    let mut rng = SmallRng::seed_from_u64(plan.seed);
    let mut used: HashSet<u64> = HashSet::new();
    let mut pending: Vec<usize> = Vec::new();
    let mut until_flush = rng.gen_range(1..=FLUSH_EVERY);
    let mut sequence = plan.first_sequence;
    let mut buf = AlignedBuf::new(RECORD_BYTES * BURST as usize);
    while !stop.load(Ordering::SeqCst) && log.writes.len() < plan.cap {
        let burst = pick(&mut rng, plan.blocks, &mut used);
        if burst.is_empty() {
            continue;
        }
        // The old content of blocks first written in this run.
        let first = burst[0];
        let mut before: Vec<Option<Prints>> = vec![None; burst.len()];
        if burst.iter().any(|&b| !known(b)) {
            let bytes = &mut buf.as_mut_slice()[..burst.len() * RECORD_BYTES];
            if let Err(e) = disk.read_at(first * RECORD_BYTES as u64, bytes) {
                log.error = Some(format!("read at {}: {e}", first * RECORD_BYTES as u64));
                return log;
            }
            for (i, &b) in burst.iter().enumerate() {
                if !known(b) {
                    before[i] = Some(record::prints(&bytes[i * RECORD_BYTES..(i + 1) * RECORD_BYTES]));
                }
            }
        }
        for (chunk_no, chunk) in burst.chunks(PER_WRITE).enumerate() {
            let bytes = &mut buf.as_mut_slice()[..chunk.len() * RECORD_BYTES];
            let mut headers = Vec::with_capacity(chunk.len());
            for (i, &block) in chunk.iter().enumerate() {
                let header =
                    Header { run: plan.run, cycle: plan.cycle, sequence, address: block * RECORD_BYTES as u64 };
                sequence += 1;
                record::encode_into(&header, &mut bytes[i * RECORD_BYTES..(i + 1) * RECORD_BYTES]);
                headers.push(header);
            }
            let issued: Vec<Written> = headers
                .into_iter()
                .enumerate()
                .map(|(i, header)| Written {
                    block: chunk[i],
                    header,
                    acknowledged: false,
                    before: before[chunk_no * PER_WRITE + i],
                })
                .collect();
            if let Err(e) = journal.about_to_write(&issued) {
                log.error = Some(format!("witness: {e}"));
                return log;
            }
            if let Err(e) = disk.write_at(chunk[0] * RECORD_BYTES as u64, bytes) {
                log.error = Some(format!("write at {}: {e}", chunk[0] * RECORD_BYTES as u64));
                return log;
            }
            for written in issued {
                pending.push(log.writes.len());
                log.writes.push(written);
            }
            until_flush = until_flush.saturating_sub(chunk.len() as u32);
            if until_flush == 0 {
                if let Err(e) = disk.sync() {
                    log.error = Some(format!("flush: {e}"));
                    return log;
                }
                for &i in &pending {
                    log.writes[i].acknowledged = true;
                }
                pending.clear();
                if let Err(e) = journal.acknowledged(sequence) {
                    log.error = Some(format!("witness: {e}"));
                    return log;
                }
                until_flush = rng.gen_range(1..=FLUSH_EVERY);
            }
        }
    }
    log
}

/// The next burst: a run of unused consecutive blocks from a random start,
/// or one unused block anywhere; empty when the draw hit used blocks.
fn pick(rng: &mut SmallRng, blocks: u64, used: &mut HashSet<u64>) -> Vec<u64> {
    let start = rng.gen_range(0..blocks);
    let len = if rng.gen_bool(0.5) { rng.gen_range(1..=BURST) } else { 1 };
    let burst: Vec<u64> = (start..(start + len).min(blocks)).take_while(|b| !used.contains(b)).collect();
    used.extend(&burst);
    burst
}
