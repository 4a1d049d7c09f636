//! The first phases: the top blocks, read back at once; when they hold, the
//! top run and the scan that finds where its storage really is; and the
//! measurement of a write cache.
//!
//! The scan is what makes a wraparound of any real size visible: a run of
//! `len` stamped bytes at the top reaches `len` contiguous bytes of the real
//! storage (in two pieces if it straddles the wrap), so one read every
//! `len / 2` bytes lands in it, and the stamp read there names the run
//! block: the distance between the two is the alias's shift, to the sector.
//! Reads that land in the images of several pieces of the card's map give
//! several distances; the largest is the real storage itself, the others
//! are the higher pieces, each verified by one more read.

use std::collections::HashSet;

use super::evidence::{Access, Bad, Hit, Top, block_of, by_distance, classify_top, within};
use super::geometry::{BLOCK, FLOOR, ladder, lattice, run_len, sample, shuffle};
use super::{CacheSeen, Probe, ProbeError};
use crate::stamp::{Foreign, Seen};

/// Blocks written at the top first.
const TOP_BLOCKS: u64 = 32;
/// Probe blocks of the first lattice over the whole card.
const FIRST_LATTICE: u64 = 128;
/// Blocks of a run read back to see whether it held.
pub(super) const RUN_SAMPLE: u64 = 64;
/// A cache measurement first looks after this much rewriting (the top
/// blocks already told that the cache, if any, holds more than they do).
const FIRST_AGE: u64 = 128 << 10;
/// The partner's images looked for at most, below it.
const MAX_IMAGES: usize = 64;

/// What comes after the first phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    Genuine,
    Search,
}

/// What a cache measurement's marker did.
enum Measured {
    /// It stopped reading its own stamp: this is what it read.
    Evicted(Result<Seen, ()>),
    Held,
}

impl Probe<'_> {
    pub(super) fn top_phase(&mut self) -> Result<Next, ProbeError> {
        let n = TOP_BLOCKS.min((self.top - FLOOR) / BLOCK / 4).max(1);
        let blocks: Vec<u64> = (0..n).map(|i| self.top - (n - i) * BLOCK).collect();
        let sector = self.io.sector;
        let tail: Vec<u64> =
            if sector < BLOCK { (self.top..self.io.size()).step_by(sector as usize).collect() } else { Vec::new() };
        self.io.stage(&format!("the top {} blocks, read back at once", blocks.len()));
        let unreadable = self.io.backup_blocks(&blocks)?;
        let unreadable_tail = self.io.backup_sectors(&tail)?;
        let mut written = Vec::new();
        let mut refused = false;
        // The sectors of a partial last block first: the block written last
        // is a whole one, and serves as the decoy if the top is limbo that
        // answers with the last write.
        let tail_units = tail.iter().map(|&s| (s, sector, unreadable_tail.contains(&s)));
        for (at, len, unreadable) in tail_units.chain(blocks.iter().map(|&b| (b, BLOCK, unreadable.contains(&b)))) {
            let done = if unreadable {
                Err(Bad::Io(Access::Read))
            } else if len == BLOCK {
                self.io.write_block(at).map_err(|_| Bad::Io(Access::Write))
            } else {
                self.io.write_sector(at).map_err(|_| Bad::Io(Access::Write))
            };
            match done {
                Ok(()) => written.push((at, len)),
                Err(why) => {
                    self.ev.mark_bad(at, why);
                    refused = true;
                }
            }
        }
        let mut order: Vec<u64> = (0..written.len() as u64).collect();
        shuffle(&mut order, self.io.stamp.nonce);
        let mut reads: Vec<(u64, u64, Result<Seen, ()>)> =
            written.iter().map(|&(at, len)| (at, len, Err(()))).collect();
        for i in order {
            let (at, len) = written[i as usize];
            reads[i as usize].2 =
                if len == BLOCK { self.io.read_block(at) } else { self.io.read_sector(at, self.decoy) };
        }
        self.rounds += 1;
        let top = if refused { Top::Io } else { classify_top(&reads) };
        if top == Top::Holds {
            return self.holds_phase(&blocks, &tail);
        }
        let last = written.last().map(|&(at, _)| at);
        if let Top::LastWrite { .. } = top {
            self.decoy = last;
        }
        for (at, len, seen) in reads {
            if !matches!(seen, Ok(Seen::Own)) {
                self.ev.absorb(at, len, seen, self.decoy.filter(|_| Some(at) != last));
            }
        }
        match top {
            Top::Vanish { cached, .. } | Top::LastWrite { cached } if cached > 0 => {
                self.cache = Some(CacheSeen { at_least: cached, at_most: Some(cached + BLOCK) });
                self.flush = cached + BLOCK;
            }
            _ => {}
        }
        Ok(Next::Search)
    }

    /// The top held its blocks: a run at the top, a first lattice of probe
    /// blocks, the scan for the run's storage, the cache measurement.
    fn holds_phase(&mut self, top_blocks: &[u64], tail: &[u64]) -> Result<Next, ProbeError> {
        let first_top = top_blocks.first().copied().unwrap_or(self.top);
        // With `--destructive`, nothing needs reading before it is written,
        // so the rewriting that measures the cache writes stamps instead,
        // between the run and the top blocks (`room`, see
        // [`Probe::flush_now`]): run, those stamps and the top blocks are
        // one stretch, and the run, written first, is out of any cache
        // once they are written. The reads across the card then wait for
        // them, and are done once: they find a wrap whose writes reach the
        // storage at once as well as one behind a cache that holds them
        // back. The card must have room for that, and more below it. The
        // run is written once, not three times (backup, stamp, restore):
        // it is longer, and there are fewer reads.
        let room = self.bound().div_ceil(BLOCK) * BLOCK;
        let long = run_len(self.top, 2 * self.opts.scan_balance, self.opts.max_run);
        let stamped = !self.io.journaled() && first_top >= FLOOR + 8 * room + 4 * long;
        let (len, start, run_end) = if stamped {
            (long, first_top - room - long, first_top - room)
        } else {
            let len = run_len(self.top, self.opts.scan_balance, self.opts.max_run);
            (len, self.top.saturating_sub(len).max(FLOOR + BLOCK).min(first_top), first_top)
        };
        let run = (start, if stamped { run_end } else { self.top });
        let lattice = lattice(FLOOR - BLOCK, start, FIRST_LATTICE);
        let place =
            if stamped { format!("{} MiB below the top", (self.top - run_end) >> 20) } else { "at the top".into() };
        self.io.stage(&format!(
            "a {} KiB run {place}, then reads every {} KiB for where the run really is",
            (run.1 - start) >> 10,
            len >> 11
        ));
        let unreadable = self.io.backup_extents(&[(start, run_end)])?;
        for &b in &unreadable {
            self.ev.mark_bad(b, Bad::Io(Access::Read));
        }
        self.io.write_extent(start, run_end, &unreadable)?;
        // The block written last: where limbo answers with the last write,
        // every read there names this one.
        let decoy = top_blocks.last().copied().unwrap_or(self.top - BLOCK);
        if self.io.write_block(decoy).is_err() {
            self.ev.mark_bad(decoy, Bad::Io(Access::Write));
        }
        let mut check: Vec<u64> = sample(start, run.1, RUN_SAMPLE);

        let hits = if stamped { Vec::new() } else { self.scan(0, start, len / 2, run)? };
        if !last_write_answers(&hits, run, decoy) {
            if let Some(pair) = self.absorb_run_hits(&hits, run)? {
                // A wrap: the cache matters only to blocks that vanish.
                let (probes, flushed) = self.measure_pair(pair, &lattice)?;
                if flushed {
                    check.extend(&probes);
                } else {
                    let (flush, now) = self.read_back_plan(&probes);
                    self.flush_now(flush, &probes)?;
                    check.extend(&now);
                }
                self.read_phase(&check, tail)?;
                return Ok(Next::Search);
            }
        }
        check.extend(self.write_probes(&lattice)?);
        let marker = decoy;
        let second = top_blocks.iter().rev().nth(1).copied().unwrap_or(decoy.saturating_sub(BLOCK));
        if stamped {
            self.stamped_flush = Some((run_end, first_top, second));
        }
        let measured = self.measure_plain(marker, second, &check);
        self.stamped_flush = None;
        // The run, the stamps above it and the top blocks.
        let stretch = if stamped { (start, self.top) } else { run };
        match measured? {
            Measured::Evicted(seen) => {
                if seen == Ok(Seen::Alias(second)) {
                    self.decoy = Some(second);
                }
                self.ev.absorb(marker, BLOCK, seen, self.decoy);
                self.read_phase(&check, tail)?;
                Ok(Next::Search)
            }
            Measured::Held => {
                self.read_phase(&check, tail)?;
                // Again, now that no cache up to the bound holds the run:
                // one that keeps writes back from the storage (write-back)
                // hid its image from the first scan.
                let again = if stamped { "" } else { " again" };
                self.io.stage(&format!("reads every {} KiB{again}, past any write cache, for the run", len >> 11));
                // The stamps above the run are read too: a few reads more.
                let to = if stamped { first_top } else { start };
                let hits = self.scan(0, to, len / 2, run)?;
                if let Some(pair) = self.absorb_run_hits(&hits, stretch)? {
                    self.measure_pair(pair, &[])?;
                    return Ok(Next::Search);
                }
                if !self.ev.any_bad() {
                    return Ok(Next::Genuine);
                }
                // Bad storage below a top that holds: no cache was seen,
                // so every read-back waits for the whole bound.
                self.flush = self.bound();
                Ok(Next::Search)
            }
        }
    }

    /// Backs up and writes probe blocks from the top down (on a wrap, the
    /// lower of two aliases is written last and keeps its own stamp).
    /// Returns those written.
    pub(super) fn write_probes(&mut self, probes: &[u64]) -> Result<Vec<u64>, ProbeError> {
        let unreadable = self.io.backup_blocks(probes)?;
        let mut order = probes.to_vec();
        order.sort_unstable_by(|a, b| b.cmp(a));
        let mut written = Vec::new();
        for p in order {
            self.io.check_stop()?;
            if unreadable.contains(&p) {
                self.ev.mark_bad(p, Bad::Io(Access::Read));
            } else if self.io.write_block(p).is_err() {
                self.ev.mark_bad(p, Bad::Io(Access::Write));
            } else {
                written.push(p);
            }
        }
        Ok(written)
    }

    /// Takes the hits of a run's stamps into the evidence. The largest
    /// distance is the run's image on the real storage: those run blocks
    /// alias it. Each smaller distance is a higher piece of the map,
    /// verified by reading the run block's image. Returns a marker and its
    /// partner for the cache measurement when the run aliases anything.
    fn absorb_run_hits(&mut self, hits: &[Hit], run: (u64, u64)) -> Result<Option<(u64, u64)>, ProbeError> {
        let (mine, strays): (Vec<Hit>, Vec<Hit>) = hits.iter().partition(|h| within(h.of, run));
        for h in strays {
            self.ev.seen_elsewhere(h.at, h.of);
        }
        let groups = by_distance(&mine);
        let Some((identity, first)) = groups.first() else { return Ok(None) };
        let identity = *identity;
        for h in first {
            self.ev.alias(h.of, identity);
        }
        // A marker for the cache measurement: a run address whose image is
        // a whole block at or above FLOOR (the partner is written). When the
        // image of the run's start lies under FLOOR, the pair at FLOOR is
        // taken only if a read there sees the run at that very shift: a
        // wrap whose period is shorter than the run reaches elsewhere, and
        // a pair that shares no storage reads as a cache that holds
        // everything. Otherwise the pair starts at the lowest image seen.
        let at = |partner: u64| (partner + identity + BLOCK <= run.1).then_some((partner + identity, partner));
        let mut pair = match run.0.checked_sub(identity) {
            Some(image) if image >= FLOOR => at(image.div_ceil(BLOCK) * BLOCK),
            _ => {
                let seen_at_floor =
                    matches!(self.io.read_window(FLOOR), Ok(Some(h)) if h.of.checked_sub(h.at) == Some(identity));
                if seen_at_floor {
                    at(FLOOR)
                } else {
                    first
                        .iter()
                        .filter(|h| h.at >= FLOOR)
                        .map(|h| h.at)
                        .min()
                        .and_then(|seen| at(seen.div_ceil(BLOCK) * BLOCK))
                }
            }
        };
        for (i, (distance, group)) in groups.iter().enumerate().skip(1) {
            let h = group[0];
            // The run's image may straddle the end of the real storage (an
            // offset wrap): its two parts then have identities a real size
            // apart, and a piece seen through the lower part is verified
            // against that one: the three largest distances are tried.
            for (identity, _) in groups[..i].iter().take(3) {
                let shift = identity - distance;
                let Some(image) = h.of.checked_sub(*identity) else { continue };
                if self.io.read_block(image) == Ok(Seen::Alias(h.of)) {
                    for g in group {
                        self.ev.alias(g.at, shift);
                    }
                    if pair.is_none() && image >= FLOOR {
                        pair = Some((h.at, image));
                    }
                    break;
                }
            }
        }
        Ok(Some(pair.unwrap_or((first[0].of, first[0].at))))
    }

    /// Sizes a write cache in front of a wrap: `marker` reaches the storage
    /// of the lower `partner`; once the partner is written, the marker
    /// reads the partner's stamp as soon as no cache answers for it.
    ///
    /// The probe blocks of `lattice` are written on the way and returned,
    /// with whether they are out of any cache already. When a cache shows
    /// (the marker still reads its own stamp after the partner's write),
    /// they are written next and the partner once more after them (of two
    /// aliases the lower is written last), so that the rewriting that sizes
    /// the cache puts them out of it too: a first-in, first-out cache that
    /// let go of the marker let go of all but what was written after it,
    /// and a little more rewriting covers that.
    fn measure_pair(&mut self, (marker, partner): (u64, u64), lattice: &[u64]) -> Result<(Vec<u64>, bool), ProbeError> {
        let bound = self.bound();
        let span = pair_span(marker, partner);
        if partner < FLOOR || !self.io.backup_blocks(&span)?.is_empty() {
            return self.cache_not_sized(lattice);
        }
        self.io.stage("sizing the write cache in front of the wrap");
        if self.io.write_block(marker).is_err() {
            return self.cache_not_sized(lattice);
        }
        let marker_end = self.io.written;
        // Whether a write reaches the storage at once (a cache, if any,
        // only answers reads of the address written): then a partner read
        // needs no flush to see an alias.
        self.write_through = self.io.read_block(partner) == Ok(Seen::Alias(marker));
        if self.io.write_block(partner).is_err() {
            return self.cache_not_sized(lattice);
        }
        let seen = self.io.read_block(marker);
        if seen != Ok(Seen::Own) {
            // No cache answered even right after one more write.
            self.rounds += 1;
            self.cache = None;
            self.flush = 0;
            return Ok((self.write_probes(lattice)?, false));
        }
        if self.write_through {
            // A cache that answers only reads of the addresses written: the
            // search finds aliases through it without waiting for it, and
            // only the certificate's read-back must wait (for what vanished
            // into limbo, on a chain). Sizing the cache then serves that
            // wait as well, instead of one cache's rewriting of its own.
            self.sizing_owed = Some((marker, partner, marker_end));
            self.flush = bound;
            return Ok((self.write_probes(lattice)?, false));
        }
        // Not where the partner's storage is: its second write below would
        // leave such a block half overwritten (a size off the 4 KiB grid
        // puts the partner across two lattice blocks), and the block would
        // read as damaged, as if limbo. That storage is the partner's own
        // blocks, or lower ones at the shifts already verified when the
        // partner itself lies past the real size.
        let storage = self.partner_storage(partner);
        let lattice: Vec<u64> = lattice.iter().copied().filter(|p| !storage.contains(p)).collect();
        let probes = self.write_probes(&lattice)?;
        if self.io.write_block(partner).is_err() {
            self.flush = bound;
            return Ok((probes, false));
        }
        let after_marker = (probes.len() as u64 + 2) * BLOCK;
        let mut keep = span.clone();
        keep.extend(&probes);
        self.measure(marker, &keep, &ladder(FIRST_AGE, bound), bound, (after_marker, BLOCK))?;
        // What was written after the marker is the younger by this much.
        self.flush_now(after_marker, &keep)?;
        Ok((probes, true))
    }

    /// The blocks that may hold the partner's storage: its own, and those
    /// at each verified shift below it, and below those (a partner past
    /// the real size reaches the real storage after one or more shifts).
    fn partner_storage(&self, partner: u64) -> HashSet<u64> {
        let mut images = HashSet::new();
        let mut next = vec![partner];
        while let Some(at) = next.pop() {
            if images.len() < MAX_IMAGES && images.insert(at) {
                next.extend(self.ev.shifts_near(at).into_iter().map(|s| at - s).filter(|&low| low >= FLOOR));
            }
        }
        images.into_iter().flat_map(|at| [block_of(at), block_of(at + BLOCK - 1)]).collect()
    }

    /// The rewriting before a read-back that no cache may answer (`keep`
    /// is left alone). When the sizing of a cache in front of a wrap is
    /// still owed ([`Probe::measure_pair`]), it is done on the way: the
    /// marker and then its partner are written once more (when nothing of
    /// this run shares the partner's storage), and the marker read after
    /// growing rewrites; a first-in, first-out cache that let go of the
    /// marker let go of all that came before it. What was read back before
    /// is then read again: a cache may have answered for it.
    pub(super) fn flush_and_size(&mut self, keep: &[u64]) -> Result<(), ProbeError> {
        let Some((marker, partner, marker_end)) = self.sizing_owed.take() else {
            return self.flush_now(self.flush, keep);
        };
        let bound = self.bound();
        self.io.stage("sizing the write cache in front of the wrap");
        let span = pair_span(marker, partner);
        let mut keep = keep.to_vec();
        keep.extend(&span);
        // Writing the partner again would damage the stamps of blocks
        // written since that share its storage (at a sector offset too):
        // then the marker is read as it is, aged by all written since.
        // A partner off the 4 KiB grid shares blocks with its neighbours.
        let crowded = partner % BLOCK != 0
            || self
                .partner_storage(partner)
                .into_iter()
                .any(|b| b != partner && !self.io.stamped_within(b, b + BLOCK).is_empty());
        if crowded {
            let age = self.io.written - marker_end;
            self.measure(marker, &keep, &ladder(FIRST_AGE, bound), bound, (age, BLOCK))?;
            // What was written after the marker is younger by up to `age`.
            self.flush_now(age.min(self.flush), &keep)?;
        } else if self.io.write_block(marker).is_err() || self.io.write_block(partner).is_err() {
            self.flush = bound;
            self.flush_now(bound, &keep)?;
        } else {
            // It answered for the marker one block after the partner's
            // first write (`measure_pair`).
            self.measure(marker, &keep, &ladder(FIRST_AGE, bound), bound, (BLOCK, BLOCK))?;
        }
        self.reread_provisional()
    }

    /// Reads again what was seen good before the first flush no cache could
    /// answer for: limbo behind the cache shows now. Writes since may have
    /// reached part of such a unit's storage through an alias at a sector
    /// offset, so a unit that comes back damaged, or foreign but not
    /// blank, is only taken back (neither good nor bad) unless the stamp
    /// that overwrote it is found.
    fn reread_provisional(&mut self) -> Result<(), ProbeError> {
        let units = std::mem::take(&mut self.provisional);
        let mut held = Vec::new();
        for (at, len) in units {
            if !self.ev.is_good(at) {
                continue;
            }
            self.io.check_stop()?;
            let seen = self.read_unit(at, len);
            match seen {
                Ok(Seen::Own) => held.push((at, len)),
                Ok(Seen::Foreign(Foreign::Damaged | Foreign::Other)) => {
                    if len != BLOCK || !self.overlapped(at) {
                        self.ev.unmark_good(at, at + len);
                    }
                }
                seen => self.ev.absorb(at, len, seen, self.decoy),
            }
        }
        // The rewriting read stamps where they were not written: the
        // shifts verified since may reach these units too.
        self.partner_reads(&held)
    }

    /// When the cache in front of a wrap cannot be sized: `lattice` is
    /// written, and every read-back waits for the whole bound.
    fn cache_not_sized(&mut self, lattice: &[u64]) -> Result<(Vec<u64>, bool), ProbeError> {
        self.flush = self.bound();
        Ok((self.write_probes(lattice)?, false))
    }

    /// Sizes a write cache in front of a top that may be limbo: `marker`
    /// and then `decoy` are rewritten; the marker reads its own stamp for
    /// as long as a cache answers for it (or the top really holds).
    fn measure_plain(&mut self, marker: u64, decoy: u64, pending: &[u64]) -> Result<Measured, ProbeError> {
        let bound = self.bound();
        self.io.stage(&format!("rewriting up to {} MiB to see past any write cache", bound >> 20));
        if self.io.write_block(marker).is_err() || self.io.write_block(decoy).is_err() {
            return Ok(Measured::Evicted(Err(())));
        }
        // The blocks still to be read back are not rewritten: a rewrite of
        // a cached block would keep it cached.
        let mut keep = pending.to_vec();
        keep.extend([marker, decoy]);
        let measured = self.measure(marker, &keep, &ladder(FIRST_AGE, bound), bound, (BLOCK, 0))?;
        if let Measured::Held = measured {
            // The top holds: that says nothing of a cache, only that none
            // up to the bound hides anything here.
            self.cache = None;
            self.flush = 0;
        }
        Ok(measured)
    }

    /// Rewrites up to each of `ages` bytes (counted from the marker's
    /// write), reading the marker after each: the cache holds more than the
    /// last age it answered at, and no more than the first it did not.
    /// `(age, held)`: the bytes written since the marker, and the largest
    /// age it already answered at (0 for none).
    fn measure(
        &mut self,
        marker: u64,
        keep: &[u64],
        ages: &[u64],
        bound: u64,
        (mut age, mut held): (u64, u64),
    ) -> Result<Measured, ProbeError> {
        // The flushes below may add up to the bound: they need room for it.
        self.flush = bound;
        for &target in ages {
            if target > age {
                self.flush_now(target - age, keep)?;
                age = target;
            }
            match self.io.read_block(marker) {
                Ok(Seen::Own) => held = age,
                seen => {
                    self.rounds += 1;
                    if held == 0 {
                        self.cache = None;
                        self.flush = 0;
                    } else {
                        self.cache = Some(CacheSeen { at_least: held, at_most: Some(age) });
                        self.flush = age;
                    }
                    return Ok(Measured::Evicted(seen));
                }
            }
        }
        self.rounds += 1;
        self.cache = Some(CacheSeen { at_least: bound, at_most: None });
        self.flush = bound;
        Ok(Measured::Held)
    }

    /// The cache bound, within reason for the card (a flush may go round
    /// the card: what it rewrites again was written long enough before).
    pub(super) fn bound(&self) -> u64 {
        self.opts.cache_bound.min(4 * (self.top - FLOOR)).max(BLOCK)
    }
}

/// The blocks that hold the marker and its partner (each may straddle two).
fn pair_span(marker: u64, partner: u64) -> Vec<u64> {
    [marker, partner].iter().flat_map(|&a| [block_of(a), block_of(a + BLOCK - 1)]).collect()
}

/// Whether the scan's hits are limbo answering with the last write: more
/// than one read, all naming the block written last.
fn last_write_answers(hits: &[Hit], run: (u64, u64), last: u64) -> bool {
    let mine: Vec<&Hit> = hits.iter().filter(|h| within(h.of, run)).collect();
    mine.len() > 1 && mine.iter().all(|h| h.of == last)
}
