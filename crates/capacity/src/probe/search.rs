//! The search for the boundary and the last block tested sector by
//! sector; with the read-back every phase shares (decoy, reads, partner
//! reads, suspects), the scan and the flush. The certificate is in
//! [`super::certificate`].

use std::collections::HashSet;

use super::evidence::{Access, Bad, Hit, block_of, within};
use super::geometry::{BLOCK, CHUNK, FLOOR, carve, lattice, read_points, round_size, shuffle};
use super::{MAX_ROUNDS, Probe, ProbeError};
use crate::stamp::{Foreign, Seen};

/// How many blocks above a suspect's reader a decoy is looked for.
const DECOY_REACH: u64 = 1024;
/// A scan's reads between two looks at whether to stop.
const SCAN_BATCH: usize = 64;

impl Probe<'_> {
    /// Rounds of probe blocks between the highest block seen good and the
    /// lowest seen bad, until they are one block apart.
    pub(super) fn search(&mut self) -> Result<(), ProbeError> {
        while self.rounds < MAX_ROUNDS {
            if !self.gap_open() {
                return Ok(());
            }
            let lo = block_of(self.ev.lo_end() - 1);
            let hi = block_of(self.ev.hi());
            let before = (self.ev.lo_end(), self.ev.hi());
            // Behind a large cache each round costs a cache's worth of
            // rewriting: when every block left costs less than a quarter of
            // that, one round takes them all.
            let blocks_left = (hi - lo) / BLOCK;
            let per_round = if self.flush > 0 && 4 * blocks_left * BLOCK <= self.flush {
                blocks_left
            } else {
                round_size(self.flush)
            };
            let mut probes = lattice(lo, hi, per_round);
            if hi - BLOCK > lo && hi - BLOCK >= FLOOR && !probes.contains(&(hi - BLOCK)) {
                probes.push(hi - BLOCK);
            }
            self.io.stage(&format!(
                "round {}: {} probe blocks between byte {} and {}",
                self.rounds + 1,
                probes.len(),
                lo + BLOCK,
                hi
            ));
            let written = self.write_probes(&probes)?;
            let (flush, now) = self.read_back_plan(&written);
            self.flush_now(flush, &written)?;
            self.read_phase(&now, &[])?;
            if (self.ev.lo_end(), self.ev.hi()) == before {
                self.notes.push(format!(
                    "round {} learned nothing new; the boundary is known to {} bytes",
                    self.rounds,
                    before.1 - before.0
                ));
                return Ok(());
            }
        }
        Ok(())
    }

    /// What a round rewrites before reading `units` back: nothing on a wrap
    /// whose writes reach the storage at once and where nothing vanished
    /// (every bad block is found by its alias), as long as no partner read
    /// is of an address written lately (a cache would answer it with what
    /// was written there); else the measured cache. The certificate always
    /// flushes, so limbo missed here is found there.
    pub(super) fn round_flush(&self, units: &[(u64, u64)]) -> u64 {
        if !self.aliases_show_at_once() {
            return self.flush;
        }
        if units.iter().any(|&unit| self.partner_written_lately(unit)) { self.flush } else { 0 }
    }

    /// Like [`Probe::round_flush`] for `blocks`, but while the sizing of
    /// the cache is owed (it comes with the certificate's flush), a block
    /// whose partner read a cache could answer is not flushed for: it is
    /// left unread, no evidence either way. Returns the flush and the
    /// blocks to read now.
    pub(super) fn read_back_plan(&mut self, blocks: &[u64]) -> (u64, Vec<u64>) {
        if self.sizing_owed.is_none() || !self.aliases_show_at_once() {
            let units: Vec<(u64, u64)> = blocks.iter().map(|&b| (b, BLOCK)).collect();
            return (self.round_flush(&units), blocks.to_vec());
        }
        let now = blocks.iter().copied().filter(|&b| !self.partner_written_lately((b, BLOCK))).collect();
        (0, now)
    }

    /// Whether every bad block shows by its alias without a flush: writes
    /// reach the storage at once, an alias was verified, nothing vanished.
    fn aliases_show_at_once(&self) -> bool {
        self.write_through && self.ev.any_alias() && !self.ev.any_vanished()
    }

    /// Whether a partner read of `unit`, at a verified shift, would be of
    /// an address written lately: a cache may answer it with what was
    /// written there.
    fn partner_written_lately(&self, (at, len): (u64, u64)) -> bool {
        self.ev.shifts_near(at + len - 1).into_iter().any(|shift| {
            let from = at.max(shift);
            self.io.written_lately(from - shift, at + len - shift, self.flush)
        })
    }

    /// The read-back of blocks and sectors written earlier (and flushed):
    /// the decoy first, then each in shuffled order, then the partner at
    /// the known shift of each that held, then the suspects in the way.
    pub(super) fn read_phase(&mut self, blocks: &[u64], sectors: &[u64]) -> Result<(), ProbeError> {
        self.rounds += 1;
        if let Some(decoy) = self.decoy {
            let _ = self.io.write_block(decoy);
        }
        let sector = self.io.sector;
        let mut units: Vec<(u64, u64)> = blocks.iter().map(|&b| (b, BLOCK)).collect();
        units.extend(sectors.iter().map(|&s| (s, sector)));
        if self.sizing_owed.is_some() {
            self.provisional.extend(&units);
        }
        let mut order: Vec<u64> = (0..units.len() as u64).collect();
        shuffle(&mut order, self.io.stamp.nonce ^ u64::from(self.rounds));
        let mut held = Vec::new();
        for i in order {
            self.io.check_stop()?;
            let (at, len) = units[i as usize];
            let seen = self.read_unit(at, len);
            if seen == Ok(Seen::Own) {
                held.push((at, len));
            }
            let spoilt = matches!(seen, Ok(Seen::Foreign(Foreign::Damaged | Foreign::Other)));
            if len == BLOCK && spoilt && self.overlapped(at) {
                continue;
            }
            self.ev.absorb(at, len, seen, self.decoy);
        }
        self.partner_reads(&held)?;
        self.settle_suspects()
    }

    /// Reads back a unit written by this run: a block, or a sector (which
    /// may read as the decoy's matching sector).
    pub(super) fn read_unit(&mut self, at: u64, len: u64) -> Result<Seen, ()> {
        if len == BLOCK { self.io.read_block(at) } else { self.io.read_sector(at, self.decoy) }
    }

    /// Reads the partner of each unit that held its stamp, at each verified
    /// shift near it: where the lower address holds the unit's stamp, the
    /// unit is an alias (from the first sector that shares storage).
    pub(super) fn partner_reads(&mut self, held: &[(u64, u64)]) -> Result<(), ProbeError> {
        for &(at, len) in held {
            for shift in self.ev.shifts_near(at + len - 1) {
                self.io.check_stop()?;
                if let Some(from) = self.io.alias_from(at, len, at.max(shift), shift) {
                    self.ev.alias(from, shift);
                    break;
                }
            }
        }
        Ok(())
    }

    /// Whether a block that came back damaged or foreign shares storage,
    /// at a sector offset (a size off the 4 KiB grid), with another block
    /// of this run, which was written later and overwrote part of it: a
    /// stamp that starts inside the block (its own header survived), or
    /// one that starts in the 4 KiB before it (its header was overwritten).
    /// That is an alias, not a write that vanished: the higher of the two
    /// is bad. When it is the other block, this one is left unjudged, for a
    /// later round to look at again.
    pub(super) fn overlapped(&mut self, at: u64) -> bool {
        let inside = match self.io.read_window(at) {
            Ok(Some(hit)) if hit.at < at + BLOCK => Some(hit),
            _ => None,
        };
        let before = || (at >= FLOOR + BLOCK).then_some(at - BLOCK);
        let hit = match inside {
            Some(hit) => hit,
            None => match before().map(|from| self.io.read_window(from)) {
                Some(Ok(Some(hit))) if hit.at > at - BLOCK && hit.at < at => hit,
                _ => return self.overlapped_at_an_image(at),
            },
        };
        if hit.of > hit.at {
            self.ev.alias(hit.of, hit.of - hit.at);
        } else {
            self.ev.alias(at, hit.at - hit.of);
        }
        true
    }

    /// The last block of the card has no room after it for a window: a
    /// stamp that starts inside it is looked for where its storage is
    /// also read, at the verified shifts below it. A stamp found there is
    /// evidence like a scan's (the higher of the two addresses is bad);
    /// the block itself is left unjudged.
    fn overlapped_at_an_image(&mut self, at: u64) -> bool {
        if at + 2 * BLOCK <= self.io.size() {
            return false;
        }
        for shift in self.ev.shifts_near(at).into_iter().take(2) {
            let low = at - shift;
            if low < FLOOR {
                continue;
            }
            if let Ok(Some(hit)) = self.io.read_window(low) {
                if hit.at < low + BLOCK {
                    self.ev.seen_elsewhere(hit.at, hit.of);
                    return true;
                }
            }
        }
        false
    }

    /// A block that held while a higher address read its stamp is good only
    /// if the two share storage; limbo that answers every read with the
    /// last write looks the same until something else is written there.
    fn settle_suspects(&mut self) -> Result<(), ProbeError> {
        for _ in 0..8 {
            let Some((start, end, readers)) = self.ev.suspect_in_the_way() else { return Ok(()) };
            // Next to the reader, clear of the 4 KiB it read (if it aliases
            // the suspect, a decoy must not land on the suspect), and on no
            // block holding a stamp (its alias might be another suspect).
            // One decoy lies above the reader, where limbo would be: two
            // below it may both land on good storage, which no limbo hears,
            // and the suspect would pass for good (a chain whose lowest
            // limbo block was written last, with every block above it
            // stamped by a round, once gave a usable size a block too big).
            let reader = readers[0];
            let usable = |d: u64| {
                d >= FLOOR
                    && d + BLOCK <= self.top
                    && d != block_of(start)
                    && self.io.stamped_within(d, d + BLOCK).is_empty()
            };
            let above = (2..DECOY_REACH).map(|k| block_of(reader) + k * BLOCK).find(|&d| usable(d));
            let below = (1..16u64).filter_map(|k| block_of(reader).checked_sub(k * BLOCK)).find(|&d| usable(d));
            let Some(above) = above else {
                self.ev.settle(start, None);
                continue;
            };
            let decoys: Vec<u64> = [Some(above), below].into_iter().flatten().collect();
            let unreadable = self.io.backup_blocks(&decoys)?;
            for &d in decoys.iter().filter(|d| !unreadable.contains(d)) {
                let _ = self.io.write_block(d);
            }
            let seen = self.read_unit(start, end - start);
            match seen {
                Ok(Seen::Own) => {
                    self.ev.settle(start, Some(true));
                    if reader > start {
                        // They share storage: one more verified shift.
                        self.ev.alias(reader, reader - start);
                    }
                }
                Ok(Seen::Alias(of)) if decoys.contains(&of) => {
                    self.decoy = Some(of);
                    self.ev.settle(start, Some(false));
                }
                // Something else wrote there since: neither good nor bad.
                _ => self.ev.settle(start, None),
            }
        }
        Ok(())
    }

    /// The first bad block, sector by sector, with the good block below it:
    /// the real size need not be a multiple of 4 KiB. When the first bad
    /// block vanished, the block above it is written last: a block that
    /// straddles the real size and was the last write into limbo that
    /// answers with the last write would otherwise read as its own.
    pub(super) fn refine(&mut self) -> Result<(), ProbeError> {
        let sector = self.io.sector;
        let Some((first, why)) = self.ev.first_bad() else { return Ok(()) };
        if sector < BLOCK && first % BLOCK != 0 && first > FLOOR {
            return self.refine_below(first);
        }
        if sector >= BLOCK || first % BLOCK != 0 || first < FLOOR {
            return Ok(());
        }
        // A block whose first sector holds nothing of this run (blank, old
        // data, another run's block) is bad from its first byte, and the
        // good block below it is good to its last (no limbo here answers
        // with the last write, which could have passed it for good): the
        // size is already known to the sector, without another flush.
        let blank = matches!(why, Bad::Vanished(Foreign::Zeros | Foreign::Ones | Foreign::Other | Foreign::OtherRun));
        if blank && self.decoy.is_none() && !self.ev.any_last_write() && self.ev.lo_end() == first {
            return Ok(());
        }
        let below = first - BLOCK;
        let from = if below >= FLOOR && self.ev.lo_end() == first { below } else { first };
        let sectors: Vec<u64> = (from..(first + BLOCK).min(self.io.size())).step_by(sector as usize).collect();
        self.io.stage(&format!("the {} sectors from byte {from}", sectors.len()));
        let (unreadable, written) = self.write_sectors_down(&sectors)?;
        let vanished = matches!(why, Bad::Vanished(_) | Bad::LastWrite);
        let above = first + BLOCK;
        let decoy = self.decoy.or_else(|| (vanished && above + BLOCK <= self.top).then_some(above));
        if decoy == Some(above) && !self.io.backup_blocks(&[above])?.is_empty() {
            return Ok(());
        }
        let units: Vec<(u64, u64)> = written.iter().map(|&s| (s, sector)).collect();
        let flush = if vanished { self.flush } else { self.round_flush(&units) };
        self.flush_now(flush, &[from, first])?;
        self.ev.clear_bad(first);
        self.ev.unmark_good(from, first + BLOCK);
        for &s in &sectors {
            if unreadable.contains(&s) {
                self.ev.mark_bad(s, Bad::Io(Access::Read));
            } else if !written.contains(&s) {
                self.ev.mark_bad(s, Bad::Io(Access::Write));
            }
        }
        let kept = std::mem::replace(&mut self.decoy, decoy);
        self.read_phase(&[], &written)?;
        self.decoy = kept.or(self.decoy.filter(|&d| d != above));
        if self.ev.hi() >= first + BLOCK {
            // No sector of it failed on its own: keep what the block showed.
            self.ev.mark_bad(first, why);
        }
        Ok(())
    }

    /// The first bad block read back foreign, yet a verified shift takes it
    /// onto a lower block of the storage found usable: on a wrap whose period is off the 4 KiB
    /// grid, blocks of several aliases overlap that storage at sector
    /// offsets and leave it a mixture, which reads like a write that
    /// vanished, and the card would be called a chain. One more sector tells
    /// them apart: this run's stamp for the lower one, read back through
    /// the first bad one. Limbo cannot return it (the lower sector is real
    /// storage, and limbo that answers with the last write answers with
    /// what was written past the real size), so seeing it is proof of an
    /// alias; not seeing it (a cache still answering, a write held back)
    /// leaves the verdict as it was.
    pub(super) fn name_the_alias(&mut self) -> Result<(), ProbeError> {
        let Some((first, Bad::Vanished(_))) = self.ev.first_bad() else { return Ok(()) };
        let sector = self.io.sector;
        if first % sector != 0 || first + sector > self.io.size() {
            return Ok(());
        }
        for shift in self.ev.shifts_near(first) {
            // A sector: the period of such a wrap is off the block grid.
            let low = first - shift;
            if low < FLOOR || low % sector != 0 || low + sector > self.ev.lo_end() {
                continue;
            }
            self.io.check_stop()?;
            if !self.io.backup_sectors(&[low])?.is_empty() || self.io.write_sector(low).is_err() {
                continue;
            }
            if self.io.read_sector(first, None) == Ok(Seen::Alias(low)) {
                self.ev.clear_bad(first);
                self.ev.mark_bad(first, Bad::Alias(low));
                return Ok(());
            }
        }
        Ok(())
    }

    /// Backs up and writes `sectors`, the highest first; returns those that
    /// could not be read (and were not written) and those written.
    fn write_sectors_down(&mut self, sectors: &[u64]) -> Result<(HashSet<u64>, Vec<u64>), ProbeError> {
        let unreadable = self.io.backup_sectors(sectors)?;
        let mut written = Vec::new();
        for &s in sectors.iter().rev() {
            if !unreadable.contains(&s) && self.io.write_sector(s).is_ok() {
                written.push(s);
            }
        }
        Ok((unreadable, written))
    }

    /// A first bad address off the 4 KiB grid (an alias found to the
    /// sector): the sectors between the last block seen good and it are
    /// tested one by one.
    fn refine_below(&mut self, first: u64) -> Result<(), ProbeError> {
        let sector = self.io.sector;
        let from = self.ev.lo_end();
        if from >= first || from < FLOOR || block_of(first) != from {
            return Ok(());
        }
        let sectors: Vec<u64> = (from..first).step_by(sector as usize).collect();
        self.io.stage(&format!("the {} sectors from byte {from}", sectors.len()));
        let (_, written) = self.write_sectors_down(&sectors)?;
        let units: Vec<(u64, u64)> = written.iter().map(|&s| (s, sector)).collect();
        self.flush_now(self.round_flush(&units), &[from])?;
        self.read_phase(&[], &written)
    }

    /// Reads a block every `step` bytes of `[from, to)`, outside `run`, a
    /// few in flight at once, and returns every stamp of this run found
    /// where it was not written (one that starts in a block read is seen
    /// by the bytes of it the block holds). A read that fails marks its
    /// block bad.
    pub(super) fn scan(&mut self, from: u64, to: u64, step: u64, run: (u64, u64)) -> Result<Vec<Hit>, ProbeError> {
        let points: Vec<u64> = read_points(from, to, step).into_iter().filter(|&at| !within(at, run)).collect();
        let mut hits = Vec::new();
        for batch in points.chunks(SCAN_BATCH) {
            self.io.check_stop()?;
            for (&at, seen) in batch.iter().zip(self.io.read_probes(batch)) {
                match seen {
                    Ok(Some(hit)) => hits.push(hit),
                    Ok(None) => {}
                    Err(()) => self.ev.mark_bad(at, Bad::Io(Access::Read)),
                }
            }
        }
        Ok(hits)
    }

    /// Rewrites `bytes` of the card with their own content, from where the
    /// last flush stopped, skipping the blocks in `keep` and every block
    /// holding a stamp: no write cache of that size still answers for what
    /// was written before. Stamps found on the way are evidence like any
    /// other read.
    ///
    /// It rewrites past the first bad byte when there is room: the reads
    /// that follow (partners, scans) are below it, and a cache must not
    /// answer them with what a flush rewrote there before a write through
    /// an alias changed the storage behind it.
    pub(super) fn flush_now(&mut self, bytes: u64, keep: &[u64]) -> Result<(), ProbeError> {
        if bytes == 0 {
            return Ok(());
        }
        let mut holes: Vec<u64> = keep.iter().map(|&b| block_of(b)).collect();
        holes.sort_unstable();
        holes.dedup();
        let bytes = self.stamped_flush_now(bytes, &holes)?;
        if bytes == 0 {
            return Ok(());
        }
        // Room for twice the cache that is flushed out (one flush after
        // another must keep finding addresses it did not rewrite lately).
        let past = (block_of(self.ev.hi()) + BLOCK).min(self.top);
        let stamped = self.io.stamped_within(past, self.top).len() as u64 * BLOCK;
        let room = (self.top - past).saturating_sub(stamped);
        let floor = if room >= 2 * bytes.max(self.flush) { past } else { FLOOR };
        if self.cursor < floor {
            self.cursor = floor;
        }
        let mut plan = Vec::new();
        let mut need = bytes;
        let mut laps = 0;
        while need > 0 && laps < 8 {
            if self.cursor + BLOCK > self.top {
                self.cursor = floor;
                laps += 1;
            }
            let end = (self.cursor + need).min(self.top);
            let mut holes = holes.clone();
            holes.extend(self.io.stamped_within(self.cursor, end));
            holes.sort_unstable();
            holes.dedup();
            for piece in carve(&[(self.cursor, end)], &holes) {
                need = need.saturating_sub(piece.1 - piece.0);
                plan.push(piece);
            }
            self.cursor = end;
        }
        let (_, hits) = self.io.rewrite(&plan)?;
        for hit in hits {
            self.ev.seen_elsewhere(hit.at, hit.of);
        }
        Ok(())
    }

    /// `--destructive`, while the top's cache is measured: nothing needs
    /// keeping, so the flush need not read what it writes. It writes this
    /// run's stamps between the top run and the top blocks, from the top
    /// down, skipping `holes`, then the block written last before it once
    /// more (where limbo answers with the last write, it still answers
    /// with that one). The run and these stamps are then one stretch whose
    /// image, on a wrap, the reads across the card find (a read that finds
    /// a stamp where it was not written is evidence whichever block it
    /// names), and nothing below the run is overwritten. Returns the bytes
    /// still to flush (all of them when this flush is not on, the rest
    /// when its room ran out).
    fn stamped_flush_now(&mut self, bytes: u64, holes: &[u64]) -> Result<u64, ProbeError> {
        let Some((low, mut end, last)) = self.stamped_flush else { return Ok(bytes) };
        let mut need = bytes;
        let mut pieces = Vec::new();
        while need > 0 && end > low {
            let start = (end.saturating_sub(need) / BLOCK * BLOCK).max(low);
            for piece in carve(&[(start, end)], holes).into_iter().rev() {
                need = need.saturating_sub(piece.1 - piece.0);
                pieces.push(piece);
            }
            end = start;
        }
        self.stamped_flush = Some((low, end, last));
        let none = HashSet::new();
        for (start, end) in pieces {
            self.io.write_extent_down(start, end, CHUNK, &none)?;
        }
        let _ = self.io.write_block(last);
        Ok(need)
    }
}
