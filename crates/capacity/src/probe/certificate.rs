//! The certificate of a boundary the search found: a run across it and
//! reads below it (is the boundary an island of a chain, or the top of a
//! piece whose shift was not seen?), the island probes above a limbo
//! boundary, and the scan that finds where an island's storage is.

use super::evidence::{Access, Bad, Hit, block_of, within};
use super::geometry::{BLOCK, FLOOR, run_len, sample};
use super::top::RUN_SAMPLE;
use super::{Probe, ProbeError};

/// Island probes at most, above a limbo boundary.
const MAX_ISLAND_PROBES: u64 = 4096;

impl Probe<'_> {
    /// The certificate of a boundary: a run across it, then reads every
    /// half run below the run. The run's upper half is past the boundary:
    /// where that part reaches lower storage, a read lands in its image and
    /// gives the shift of the piece the boundary opens, which the blocks
    /// just below must not share. A read that lands in the lower half's
    /// image means the storage below the boundary is lower down: it was an
    /// island of a chain, or the top of a piece with a shift not yet seen,
    /// and the search goes on. Above a limbo boundary, probe blocks every
    /// half boundary look for islands. Returns whether the boundary stands.
    pub(super) fn certify(&mut self) -> Result<bool, ProbeError> {
        let hi = self.ev.hi();
        let before = (self.ev.lo_end(), hi);
        if !self.ev.any_good() {
            return self.settled_without_a_run(before);
        }
        let below = block_of(self.ev.lo_end());
        let len = run_len(below, self.opts.scan_balance, self.opts.max_run);
        let half = (len / 2).max(BLOCK) / BLOCK * BLOCK;
        let start = below.saturating_sub(half).max(FLOOR);
        let end = (block_of(hi) + half).min(self.top);
        if below <= start || end <= start {
            return self.settled_without_a_run(before);
        }
        let run = (start, end);
        let islands = if self.ev.any_alias() { Vec::new() } else { self.island_probes(end) };
        self.io.stage(&format!(
            "checking byte {hi}: a {} KiB run across it, {} reads below the run{}",
            (end - start) >> 10,
            start / (half / 2).max(BLOCK),
            if islands.is_empty() { String::new() } else { format!(", {} blocks above", islands.len()) }
        ));
        // Island probes first, then the part past the boundary, then the
        // part below: where the others reach the storage below, the part
        // below is written after them and keeps its stamps (and they read
        // its stamps, which gives their shift).
        let islands = self.write_probes(&islands)?;
        let unreadable = self.io.backup_extents(&[run])?;
        for &b in &unreadable {
            self.ev.mark_bad(b, Bad::Io(Access::Read));
        }
        self.io.write_extent(below, end, &unreadable)?;
        self.io.write_extent_down(start, below, 16 * BLOCK, &unreadable)?;
        let mut check = sample(start, below, RUN_SAMPLE);
        check.retain(|b| !unreadable.contains(b));
        let mut past = sample(below, end, RUN_SAMPLE);
        past.retain(|b| !unreadable.contains(b));
        let mut keep = check.clone();
        keep.extend(&islands);
        keep.extend(&past);
        self.flush_and_size(&keep)?;
        let mut read = check.clone();
        read.extend(&islands);
        self.read_phase(&read, &[])?;
        let held: Vec<u64> = check.iter().copied().filter(|&b| self.ev.bad_at(b).is_none()).collect();
        let mut shifts = Vec::new();
        // Past the boundary, a block whose storage is just below was
        // written over by the part below: it names the block that did (at
        // some sector offset when the shift is off the 4 KiB grid).
        for &b in &past {
            self.io.check_stop()?;
            if let Ok(Some(hit)) = self.io.read_window(b) {
                if hit.of < hit.at && within(hit.of, (start, below)) {
                    shifts.push(hit.at - hit.of);
                    self.ev.alias(hit.at, hit.at - hit.of);
                }
            }
        }
        // The rest of the part past the boundary lands below the run: reads
        // every quarter run find any image of a quarter run or more.
        let hits = self.scan(0, start, half / 2, run)?;
        let hits = self.drop_last_write_answers(hits)?;
        for hit in hits {
            if within(hit.of, run) && hit.of > hit.at {
                shifts.push(hit.of - hit.at);
                self.ev.alias(hit.of, hit.of - hit.at);
            } else {
                if islands.contains(&hit.of) && hit.at < hi {
                    // A read below the boundary landed in an island's storage.
                    self.note_island(hit.of - hit.at);
                }
                self.ev.seen_elsewhere(hit.at, hit.of);
            }
        }
        // The blocks below the boundary against the shifts just seen, and
        // every unit seen good above each shift: a piece whose shift was
        // not seen before may reach further down than this run (a search
        // that only looks at the run walks down half a run per
        // certificate).
        shifts.sort_unstable();
        shifts.dedup();
        let mut units: Vec<(u64, u64)> = held.iter().map(|&b| (b, BLOCK)).collect();
        if let Some(&lowest) = shifts.first() {
            units.extend(self.ev.good_within(lowest, self.ev.hi()));
        }
        units.sort_unstable();
        units.dedup();
        for (at, len) in units {
            for &shift in &shifts {
                self.io.check_stop()?;
                if let Some(from) = self.io.alias_from(at, len, at.max(shift), shift) {
                    self.ev.alias(from, shift);
                }
            }
        }
        let hi = self.ev.hi();
        for &b in &islands {
            if let Some(Bad::Alias(low)) = self.ev.bad_at(b) {
                if low < hi {
                    self.note_island(b - low);
                }
            }
        }
        self.islands = islands
            .into_iter()
            .filter(|&b| b > hi && matches!(self.ev.bad_at(b), None | Some(Bad::Alias(_))))
            .filter(|&b| !matches!(self.ev.bad_at(b), Some(Bad::Alias(low)) if low >= hi))
            .collect();
        Ok((self.ev.lo_end(), self.ev.hi()) == before)
    }

    /// A boundary with nothing for a certificate to check stands, unless
    /// the first flush that no cache answers for, if still owed, changes it.
    fn settled_without_a_run(&mut self, before: (u64, u64)) -> Result<bool, ProbeError> {
        if self.sizing_owed.is_some() {
            self.flush_and_size(&[])?;
        }
        Ok((self.ev.lo_end(), self.ev.hi()) == before)
    }

    /// Reads of a scan that name the same block more than once: an alias
    /// lands on one address per copy of the storage, but limbo that answers
    /// with the last write names the last block written at every address.
    /// A decoy written next to one of those addresses tells the two apart;
    /// the reads of such limbo are taken out of the hits, their addresses
    /// marked bad, and the decoy kept.
    fn drop_last_write_answers(&mut self, hits: Vec<Hit>) -> Result<Vec<Hit>, ProbeError> {
        let mut by_of: std::collections::BTreeMap<u64, Vec<u64>> = std::collections::BTreeMap::new();
        for h in &hits {
            by_of.entry(h.of).or_default().push(h.at);
        }
        let mut limbo = Vec::new();
        for (of, readers) in by_of.into_iter().filter(|(_, r)| r.len() > 1) {
            if self.decoy.is_some_and(|d| d == of) {
                limbo.push(of);
                continue;
            }
            let reader = readers[readers.len() - 1];
            let decoys: Vec<u64> = [block_of(reader) + 2 * BLOCK, block_of(reader).saturating_sub(BLOCK)]
                .into_iter()
                .filter(|&d| d >= FLOOR && d + BLOCK <= self.top)
                .collect();
            let unreadable = self.io.backup_blocks(&decoys)?;
            let decoys: Vec<u64> = decoys.into_iter().filter(|d| !unreadable.contains(d)).collect();
            for &d in &decoys {
                let _ = self.io.write_block(d);
            }
            if let Ok(Some(hit)) = self.io.read_window(block_of(reader)) {
                if let Some(&d) = decoys.iter().find(|&&d| hit.of == d) {
                    self.decoy = Some(d);
                    limbo.push(of);
                }
            }
        }
        let (dropped, kept): (Vec<Hit>, Vec<Hit>) = hits.into_iter().partition(|h| limbo.contains(&h.of));
        for h in dropped {
            self.ev.mark_bad(block_of(h.at), Bad::LastWrite);
        }
        Ok(kept)
    }

    fn note_island(&mut self, shift: u64) {
        self.island_shift = Some(self.island_shift.map_or(shift, |s| s.min(shift)));
    }

    /// Probe blocks above a limbo boundary, every half boundary: an island
    /// of a chain is a copy of the real storage, as long as it.
    fn island_probes(&self, hi: u64) -> Vec<u64> {
        let from = block_of(hi);
        if from + BLOCK >= self.top {
            return Vec::new();
        }
        let every = (from / 2).max((self.top - from).div_ceil(MAX_ISLAND_PROBES)).max(BLOCK).div_ceil(BLOCK) * BLOCK;
        (1..).map(|i| from + i * every).take_while(|&p| p + BLOCK <= self.top).collect()
    }

    /// An island was seen above a limbo boundary: a run around it and reads
    /// below the boundary find the real storage it reaches.
    pub(super) fn island_scan(&mut self) -> Result<(), ProbeError> {
        let Some(&island) = self.islands.first() else { return Ok(()) };
        let hi = self.ev.hi();
        let len = run_len(hi.max(2 * FLOOR), self.opts.scan_balance, self.opts.max_run);
        let half = (len / 2).max(BLOCK) / BLOCK * BLOCK;
        let start = block_of(island.saturating_sub(half)).max(block_of(hi) + BLOCK);
        let end = (island + half).min(self.top);
        if end <= start {
            return Ok(());
        }
        self.io.stage(&format!("an island at byte {island}: where its storage is"));
        let unreadable = self.io.backup_extents(&[(start, end)])?;
        self.io.write_extent(start, end, &unreadable)?;
        self.flush_now(self.flush, &[])?;
        self.rounds += 1;
        if let Some(decoy) = self.decoy {
            let _ = self.io.write_block(decoy);
        }
        for hit in self.scan(0, hi, len / 4, (start, end))? {
            if within(hit.of, (start, end)) && hit.of > hit.at {
                self.note_island(hit.of - hit.at);
                self.ev.mark_bad(hit.of, Bad::Alias(hit.at));
            }
        }
        Ok(())
    }
}
