//! The probe: where does the real storage end?
//!
//! A fake card is good from byte 0 up to its real size R and bad above it
//! (f3's model of fake flash: writes past R vanish, alias lower addresses,
//! or fail). The probe narrows the interval (lo, hi) that holds R, where
//! `lo` is the last block seen good and `hi` the first seen bad, in rounds:
//!
//! 1. **Probe blocks** on a power-of-two lattice inside (lo, hi), about 128
//!    of them, plus the block just below `hi` (so a genuine card, or a fake
//!    whose boundary sits on the lattice, is settled a round early). A
//!    power-of-two lattice puts both ends of a wraparound (address modulo
//!    2^k, as fakes that drop address lines do) on probe blocks, so the
//!    alias shows up as one probe reading back another's block.
//! 2. Each block is **backed up** to the journal (durable) before it is
//!    written; a block that cannot even be read is bad already (I/O error)
//!    and is not written. Probes are written from the top down, so that on a
//!    wraparound the low address keeps its own block and the high one reads
//!    the low one's: the alias is seen from the high side, where it belongs.
//! 3. A **flush**: at least the cache bound of other stamped writes, outside
//!    (lo, hi), so that no write cache can answer for a probe block. When a
//!    *sentinel* (the top block in round 1, later a block known to drop
//!    writes), written before the probes and read right after them, has
//!    already vanished, no cache holds even that much, and a flush of twice
//!    the probe bytes is enough.
//! 4. Probe blocks are **read back** one at a time in shuffled order (f3
//!    notes fakes whose sequential reads are cached, libprobe.c) and
//!    classified: own block (good), another address's block (alias: the
//!    higher address is bad, and their distance is a multiple of the wrap),
//!    foreign data (writes vanish: limbo), or an I/O error.
//!
//! Rounds stop when `hi - lo` is one block. Every probe block names its own
//! offset ([`crate::stamp`]), so nothing read back is ever ambiguous, and a
//! flush that lands on a probe through an alias is evidence, not damage.
//!
//! Once a part of the card is known to drop writes, each later flush is cut
//! into segments with a *marker* block written in that limbo before each
//! one: markers a FIFO cache still holds read back right, the others not,
//! and the number that survive sizes the cache.

use std::collections::{BTreeMap, HashSet};
use std::io;

use crate::disk::{AlignedBuf, Disk};
use crate::journal::Journal;
use crate::stamp::{Foreign, Seen, Stamp};

/// Probe granule: blocks are written, read and located in these units.
pub const BLOCK: u64 = 4096;
/// Nothing below this is written: the partition table lives there, and a
/// card with less than a MiB of real storage is not one anybody can use.
pub const FLOOR: u64 = 1 << 20;
/// Lattice points per round (at least this many, fewer than twice it).
const LATTICE: u64 = 128;
/// Lattice points per round once a sentinel showed that no cache needs a
/// large flush: rounds are cheap then, so more of them with fewer blocks.
const LATTICE_CHEAP: u64 = 16;
/// Flush and backup I/O size.
const CHUNK: u64 = 1 << 20;
const MAX_ROUNDS: u32 = 16;
/// Marker blocks per flush when a cache is sized.
const MARKERS: u64 = 64;

/// How the probe should behave.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Bytes of other writes between a probe block and its read-back: more
    /// than any write cache that could answer for it.
    pub cache_bound: u64,
}

/// Hears about stages, and may ask the probe to stop.
pub trait Watch {
    /// A new stage begins ("round 2: 129 probe blocks").
    fn stage(&self, _what: &str) {}
    /// The signal that asks us to stop, if one came.
    fn stop(&self) -> Option<&'static str> {
        None
    }
}

/// A watcher that says nothing and never stops.
#[derive(Debug, Default)]
pub struct Quiet;
impl Watch for Quiet {}

/// Why a block is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// The device refused it: `"read"` or `"write"`.
    Io(&'static str),
    /// The write vanished: reading gives this instead.
    Vanished(Foreign),
    /// It shares its storage with this lower address.
    Alias(u64),
}

/// A write cache that answered for recent writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSeen {
    pub at_least: u64,
    /// `None` when even the oldest marker survived: the cache may be larger
    /// than everything written, and may have hidden bad blocks.
    pub at_most: Option<u64>,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    pub announced: u64,
    /// Bytes from the start up to the end of the last block seen good.
    pub usable: u64,
    /// The first byte seen bad; `None` when nothing was.
    pub first_bad: Option<u64>,
    /// The period of an address wraparound, when aliases were seen.
    pub wrap: Option<u64>,
    /// Why the block at `first_bad` is bad.
    pub bad_kind: Option<Bad>,
    pub cache: Option<CacheSeen>,
    pub rounds: u32,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Bytes written between the probe blocks and their read-back.
    pub flush_bytes: u64,
    pub notes: Vec<String>,
}

/// Why the probe stopped without a finding.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
    #[error("cannot write the journal: {0}")]
    Journal(#[source] io::Error),
    #[error("the device has {0} bytes, too few to probe (it needs at least 2 MiB)")]
    TooSmall(u64),
}

/// Runs the probe. With a journal, every block is backed up before it is
/// first written; undoing the writes is the caller's job (it must happen
/// whatever this returns).
pub fn probe(
    disk: &mut dyn Disk,
    journal: Option<&mut Journal>,
    nonce: u64,
    options: Options,
    watch: &dyn Watch,
) -> Result<Probed, ProbeError> {
    let size = disk.size() / BLOCK * BLOCK;
    if size < 2 * FLOOR {
        return Err(ProbeError::TooSmall(disk.size()));
    }
    let flush_bytes = options.cache_bound.min(size / 4) / CHUNK * CHUNK;
    let mut io = Io {
        disk,
        journal,
        stamp: Stamp::new(nonce),
        backed_up: HashSet::new(),
        written: 0,
        read: 0,
        watch,
        block: AlignedBuf::new(BLOCK as usize),
        chunk: AlignedBuf::new(CHUNK as usize),
    };
    let mut search = Search {
        size,
        lo: FLOOR - BLOCK,
        hi: size,
        wrap: None,
        bad: BTreeMap::new(),
        cache: None,
        flush_bytes,
        flushed: u64::MAX,
        cheap_rounds: false,
        notes: Vec::new(),
    };
    let mut rounds = 0;
    while search.hi > search.lo + BLOCK && search.lo < search.hi && rounds < MAX_ROUNDS {
        rounds += 1;
        let before = (search.lo, search.hi, search.wrap);
        search.round(&mut io, rounds)?;
        if (search.lo, search.hi, search.wrap) == before {
            search.notes.push(format!(
                "round {rounds} learned nothing new; the boundary is known to {} bytes",
                search.hi - search.lo - BLOCK
            ));
            break;
        }
    }
    Ok(search.finish(rounds, io.written, io.read))
}

/// The device I/O of a probe, with the backup rule built in.
struct Io<'a> {
    disk: &'a mut dyn Disk,
    journal: Option<&'a mut Journal>,
    stamp: Stamp,
    /// Blocks (by index) whose original content is in the journal.
    backed_up: HashSet<u64>,
    written: u64,
    read: u64,
    watch: &'a dyn Watch,
    block: AlignedBuf,
    chunk: AlignedBuf,
}

impl Io<'_> {
    fn check_stop(&self) -> Result<(), ProbeError> {
        match self.watch.stop() {
            Some(signal) => Err(ProbeError::Interrupted(signal)),
            None => Ok(()),
        }
    }

    /// Backs up single blocks; returns those that could not be read.
    fn backup_blocks(&mut self, offsets: &[u64]) -> Result<HashSet<u64>, ProbeError> {
        let mut unreadable = HashSet::new();
        let Some(journal) = self.journal.as_deref_mut() else { return Ok(unreadable) };
        for &offset in offsets {
            if self.backed_up.contains(&(offset / BLOCK)) {
                continue;
            }
            if let Some(signal) = self.watch.stop() {
                return Err(ProbeError::Interrupted(signal));
            }
            self.read += BLOCK;
            match self.disk.read_at(offset, self.block.as_mut_slice()) {
                Ok(()) => {
                    journal.append(offset, self.block.as_slice()).map_err(ProbeError::Journal)?;
                    self.backed_up.insert(offset / BLOCK);
                }
                Err(_) => {
                    unreadable.insert(offset);
                }
            }
        }
        journal.commit().map_err(ProbeError::Journal)?;
        Ok(unreadable)
    }

    /// Backs up whole extents, a chunk at a time; returns unreadable blocks.
    fn backup_extents(&mut self, extents: &[(u64, u64)]) -> Result<HashSet<u64>, ProbeError> {
        let mut unreadable = HashSet::new();
        if self.journal.is_none() {
            return Ok(unreadable);
        }
        for &(start, end) in extents {
            let mut at = start;
            while at < end {
                self.check_stop()?;
                let len = (end - at).min(CHUNK);
                let missing: Vec<u64> =
                    (at / BLOCK..(at + len) / BLOCK).filter(|b| !self.backed_up.contains(b)).collect();
                if missing.len() as u64 == len / BLOCK {
                    let buf = &mut self.chunk.as_mut_slice()[..len as usize];
                    self.read += len;
                    if self.disk.read_at(at, buf).is_ok() {
                        let journal = self
                            .journal
                            .as_deref_mut()
                            .ok_or_else(|| ProbeError::Journal(io::Error::other("no journal")))?;
                        journal.append(at, buf).map_err(ProbeError::Journal)?;
                        self.backed_up.extend(missing);
                    } else {
                        // Find the bad blocks one by one.
                        let offsets: Vec<u64> = missing.iter().map(|b| b * BLOCK).collect();
                        unreadable.extend(self.backup_blocks(&offsets)?);
                    }
                } else if !missing.is_empty() {
                    let offsets: Vec<u64> = missing.iter().map(|b| b * BLOCK).collect();
                    unreadable.extend(self.backup_blocks(&offsets)?);
                }
                at += len;
            }
        }
        if let Some(journal) = self.journal.as_deref_mut() {
            journal.commit().map_err(ProbeError::Journal)?;
        }
        Ok(unreadable)
    }

    /// Writes this run's block for `offset`.
    fn write_block(&mut self, offset: u64) -> io::Result<()> {
        debug_assert!(self.journal.is_none() || self.backed_up.contains(&(offset / BLOCK)));
        self.stamp.fill(offset, self.block.as_mut_slice());
        self.written += BLOCK;
        self.disk.write_at(offset, self.block.as_slice())
    }

    /// Writes stamped blocks over `[start, end)`, skipping `unreadable` ones.
    /// Returns the bytes the device accepted.
    fn write_extent(&mut self, start: u64, end: u64, unreadable: &HashSet<u64>) -> Result<u64, ProbeError> {
        let mut accepted = 0;
        let mut at = start;
        while at < end {
            self.check_stop()?;
            let len = (end - at).min(CHUNK);
            let clean =
                unreadable.is_empty() || (at..at + len).step_by(BLOCK as usize).all(|b| !unreadable.contains(&b));
            if clean {
                let buf = &mut self.chunk.as_mut_slice()[..len as usize];
                self.stamp.fill_run(at, BLOCK as usize, buf);
                self.written += len;
                if self.disk.write_at(at, buf).is_ok() {
                    accepted += len;
                }
            } else {
                for b in (at..at + len).step_by(BLOCK as usize).filter(|b| !unreadable.contains(b)) {
                    if self.write_block(b).is_ok() {
                        accepted += BLOCK;
                    }
                }
            }
            at += len;
        }
        Ok(accepted)
    }

    fn read_block(&mut self, offset: u64) -> io::Result<Seen> {
        self.read += BLOCK;
        self.disk.read_at(offset, self.block.as_mut_slice())?;
        Ok(self.stamp.check(offset, self.block.as_slice()))
    }
}

/// The state of the search.
struct Search {
    size: u64,
    /// Offset of the last block seen good (below `FLOOR` when none was).
    lo: u64,
    /// The first offset seen bad (`size` when none was).
    hi: u64,
    /// The greatest common divisor of alias distances.
    wrap: Option<u64>,
    /// Every bad offset seen, and why.
    bad: BTreeMap<u64, Bad>,
    cache: Option<CacheSeen>,
    flush_bytes: u64,
    /// The smallest flush actually written in a round.
    flushed: u64,
    /// The last round's sentinel allowed a small flush.
    cheap_rounds: bool,
    notes: Vec<String>,
}

impl Search {
    fn round(&mut self, io: &mut Io<'_>, number: u32) -> Result<(), ProbeError> {
        let (lo, hi) = (self.lo, self.hi);
        let mut probes = lattice(lo, hi, if self.cheap_rounds { LATTICE_CHEAP } else { LATTICE });
        if hi - BLOCK > lo && hi - BLOCK >= FLOOR && !probes.contains(&(hi - BLOCK)) {
            probes.push(hi - BLOCK);
        }
        // A block known to drop writes (or, in round 1, the top block) is
        // written first and read back right after the probes: if it has
        // vanished already, no write cache holds as much as was written
        // after it, and a flush of twice that is enough (f3probe sizes its
        // cache the same way, libprobe.c find_cache_size).
        let sentinel = self.sentinel(number, hi);
        let mut wanted = probes.clone();
        wanted.extend(sentinel.filter(|s| !probes.contains(s)));
        let mut failed = io.backup_blocks(&wanted)?;
        for &p in &failed {
            self.mark_bad(p, Bad::Io("read"));
        }
        let mut order: Vec<u64> = probes.clone();
        order.sort_unstable_by(|a, b| b.cmp(a));
        if let Some(s) = sentinel.filter(|s| !probes.contains(s)) {
            order.insert(0, s);
        }
        let mut after_sentinel = 0;
        for &p in &order {
            io.check_stop()?;
            if failed.contains(&p) {
                continue;
            }
            if io.write_block(p).is_err() {
                self.mark_bad(p, Bad::Io("write"));
                failed.insert(p);
            } else if Some(p) != sentinel {
                after_sentinel += BLOCK;
            }
        }
        let mut flush_bytes = self.flush_bytes;
        if let Some(s) = sentinel.filter(|s| !failed.contains(s)) {
            if let Ok(Seen::Foreign(kind)) = io.read_block(s) {
                self.mark_bad(s, Bad::Vanished(kind));
                flush_bytes = flush_bytes.min(2 * after_sentinel + (1 << 20));
            }
        }
        self.cheap_rounds = flush_bytes < self.flush_bytes;

        // A full flush sizes a cache, when there is limbo to put markers in.
        let markers = if flush_bytes == self.flush_bytes { self.markers() } else { Vec::new() };
        for &m in &io.backup_blocks(&markers)? {
            failed.insert(m);
        }
        let marker_floor = markers.iter().copied().min().unwrap_or(self.size);
        let mut holes: Vec<u64> = probes.iter().chain(&markers).chain(&sentinel).copied().collect();
        holes.sort_unstable();
        holes.dedup();
        let flush = carve(&self.flush_plan(marker_floor, flush_bytes, holes.len() as u64), &holes);
        io.watch.stage(&format!(
            "round {number}: {} probe blocks between byte {} and {}, then {} MiB of flush",
            probes.len(),
            lo + BLOCK,
            hi,
            flush.iter().map(|(s, e)| e - s).sum::<u64>() >> 20
        ));

        // Flush, with a marker in limbo before each segment when sizing a cache.
        let unreadable = io.backup_extents(&flush)?;
        let segments = split(&flush, markers.len().max(1));
        let mut accepted = 0;
        for (i, segment) in segments.iter().enumerate() {
            if let Some(&marker) = markers.get(i) {
                if failed.contains(&marker) || io.write_block(marker).is_err() {
                    failed.insert(marker);
                }
            }
            for &(s, e) in segment {
                accepted += io.write_extent(s, e, &unreadable)?;
            }
        }
        self.flushed = self.flushed.min(accepted);

        // Read back, in shuffled order.
        let mut order: Vec<u64> = probes.iter().copied().filter(|p| !failed.contains(p)).collect();
        shuffle(&mut order, io.stamp.nonce ^ u64::from(number));
        let mut good = Vec::new();
        for p in order {
            io.check_stop()?;
            match io.read_block(p) {
                Err(_) => self.mark_bad(p, Bad::Io("read")),
                Ok(Seen::Own) => good.push(p),
                Ok(Seen::Alias(q)) => self.alias(p, q),
                Ok(Seen::Foreign(kind)) => self.mark_bad(p, Bad::Vanished(kind)),
            }
        }
        if !markers.is_empty() {
            self.size_cache(io, &markers, &failed, &segments)?;
        }

        // Narrow the interval.
        let first_bad = self.bad.keys().next().copied().unwrap_or(self.size);
        self.hi = self.hi.min(first_bad).min(self.wrap.unwrap_or(u64::MAX));
        if let Some(&best) = good.iter().filter(|&&g| g < self.hi).max() {
            self.lo = self.lo.max(best);
        }
        Ok(())
    }

    fn mark_bad(&mut self, offset: u64, why: Bad) {
        self.bad.entry(offset).or_insert(why);
    }

    /// Two addresses showed the same storage: the higher one is the alias.
    fn alias(&mut self, a: u64, b: u64) {
        let (low, high) = (a.min(b), a.max(b));
        self.mark_bad(high, Bad::Alias(low));
        self.wrap = Some(gcd(self.wrap.unwrap_or(0), high - low));
    }

    /// The block written first and checked first: the top block in round
    /// 1, later one that is known to drop writes (the top one, if it does).
    fn sentinel(&self, round: u32, hi: u64) -> Option<u64> {
        let top = self.size - BLOCK;
        if round == 1 {
            return Some(top);
        }
        if matches!(self.bad.get(&top), Some(Bad::Vanished(_))) {
            return Some(top);
        }
        self.bad.iter().rev().find(|(at, why)| **at >= hi && matches!(why, Bad::Vanished(_))).map(|(at, _)| *at)
    }

    /// Marker blocks at the very top of the card, when that part is known to
    /// drop writes (and nothing aliases, which would keep markers readable).
    fn markers(&self) -> Vec<u64> {
        let top = self.size - BLOCK;
        let limbo_on_top = matches!(self.bad.get(&top), Some(Bad::Vanished(_)));
        let start = self.size - MARKERS * BLOCK;
        if self.wrap.is_some() || !limbo_on_top || start < self.hi || self.flush_bytes < MARKERS * BLOCK {
            return Vec::new();
        }
        (0..MARKERS).map(|i| start + i * BLOCK).collect()
    }

    /// Where this round's flush goes: the known-good part below the
    /// interval first, then the known-bad part above it (on a wraparound,
    /// only addresses whose alias falls in the known-good part, so that no
    /// flush block lands on a probe block), then the interval itself. The
    /// probe blocks are cut out afterwards ([`carve`]), so `extra` blocks
    /// are added to make up for them.
    fn flush_plan(&self, top: u64, bytes: u64, extra: u64) -> Vec<(u64, u64)> {
        let mut need = bytes + extra * BLOCK;
        let mut plan = Vec::new();
        let good_end = (self.lo + BLOCK) / BLOCK * BLOCK;
        take(&mut need, &mut plan, FLOOR, good_end);
        match self.wrap {
            None => take(&mut need, &mut plan, self.hi, top),
            Some(period) => {
                let mut base = period;
                while need > 0 && base < top {
                    let (s, e) = (base + FLOOR, (base + good_end).min(top));
                    if s >= self.hi {
                        take(&mut need, &mut plan, s, e);
                    }
                    base += period;
                }
            }
        }
        take(&mut need, &mut plan, good_end.max(FLOOR), self.hi.min(top));
        plan.sort_unstable();
        plan
    }

    /// Reads the markers back and sizes the cache from the oldest survivor.
    fn size_cache(
        &mut self,
        io: &mut Io<'_>,
        markers: &[u64],
        failed: &HashSet<u64>,
        segments: &[Vec<(u64, u64)>],
    ) -> Result<(), ProbeError> {
        let mut oldest_survivor = None;
        for (i, &m) in markers.iter().enumerate() {
            io.check_stop()?;
            if failed.contains(&m) {
                continue;
            }
            if let Ok(Seen::Own) = io.read_block(m) {
                oldest_survivor = Some(i);
                break;
            }
        }
        let after = |i: usize| -> u64 { segments[i..].iter().flatten().map(|(s, e)| e - s).sum() };
        self.cache = match oldest_survivor {
            None => None,
            Some(0) => Some(CacheSeen { at_least: after(0), at_most: None }),
            Some(i) => Some(CacheSeen { at_least: after(i), at_most: Some(after(i - 1)) }),
        };
        Ok(())
    }

    fn finish(mut self, rounds: u32, written: u64, read: u64) -> Probed {
        let settled = self.hi <= self.lo + BLOCK;
        let genuine = self.hi == self.size && self.bad.is_empty() && settled;
        let first_bad = (!genuine).then_some(self.hi.min(self.size));
        let usable = if self.lo < FLOOR { 0 } else { (self.lo + BLOCK).min(self.hi) };
        if self.lo >= self.hi {
            self.notes.push(format!(
                "a block below one seen good failed (byte {}): the card is failing, not only smaller than it says",
                self.hi
            ));
        }
        if let Some(CacheSeen { at_most: None, at_least }) = self.cache {
            self.notes.push(format!(
                "a write cache held even the oldest of {at_least} bytes of writes; it may hide more bad blocks: rerun with --thorough"
            ));
        }
        let bad_kind = first_bad
            .and_then(|b| self.bad.get(&b).copied().or_else(|| (self.wrap == Some(b)).then_some(Bad::Alias(0))));
        Probed {
            announced: self.size,
            usable: if genuine { self.size } else { usable },
            first_bad,
            wrap: self.wrap,
            bad_kind,
            cache: self.cache,
            rounds,
            bytes_written: written,
            bytes_read: read,
            flush_bytes: if self.flushed == u64::MAX { 0 } else { self.flushed },
            notes: self.notes,
        }
    }
}

/// Cuts single blocks (sorted offsets) out of sorted extents.
fn carve(extents: &[(u64, u64)], holes: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(start, end) in extents {
        let mut s = start;
        let first = holes.partition_point(|&h| h < start);
        for &h in holes[first..].iter().take_while(|&&h| h < end) {
            if h > s {
                out.push((s, h));
            }
            s = s.max(h + BLOCK);
        }
        if end > s {
            out.push((s, end));
        }
    }
    out
}

/// Adds `[start, end)` to a flush plan, up to the bytes still needed.
fn take(need: &mut u64, plan: &mut Vec<(u64, u64)>, start: u64, end: u64) {
    let end = end.min(start.saturating_add(*need));
    if end > start {
        plan.push((start, end));
        *need -= end - start;
    }
}

/// Power-of-two lattice points strictly inside (lo, hi), at or above FLOOR.
fn lattice(lo: u64, hi: u64, per_round: u64) -> Vec<u64> {
    let span = hi - lo;
    let step = prev_power_of_two((span / (per_round + 1)).max(BLOCK)).max(BLOCK);
    let mut points = Vec::new();
    let mut p = (lo / step + 1) * step;
    while p < hi {
        if p >= FLOOR {
            points.push(p);
        }
        p += step;
    }
    points
}

fn prev_power_of_two(x: u64) -> u64 {
    if x == 0 { 0 } else { 1 << (63 - x.leading_zeros()) }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Splits extents into `parts` runs of nearly equal bytes, on block bounds.
fn split(extents: &[(u64, u64)], parts: usize) -> Vec<Vec<(u64, u64)>> {
    let total: u64 = extents.iter().map(|(s, e)| e - s).sum();
    let per = (total / parts as u64 / BLOCK * BLOCK).max(BLOCK);
    let mut out = vec![Vec::new(); parts];
    let mut part = 0;
    let mut room = per;
    for &(mut s, e) in extents {
        while s < e {
            if room == 0 && part + 1 < parts {
                part += 1;
                room = per;
            }
            let len = if part + 1 == parts { e - s } else { (e - s).min(room) };
            out[part].push((s, s + len));
            room = room.saturating_sub(len);
            s += len;
        }
    }
    out
}

/// Fisher–Yates with the stamp's mixer as the random source.
fn shuffle(items: &mut [u64], seed: u64) {
    for i in (1..items.len()).rev() {
        let j = (crate::stamp::hash64(seed ^ i as u64) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lattice_is_bounded_and_inside() {
        let points = lattice(FLOOR - BLOCK, 256 << 20, LATTICE);
        assert!(points.len() as u64 >= LATTICE && (points.len() as u64) < 2 * LATTICE + 2, "{}", points.len());
        assert!(points.iter().all(|&p| (FLOOR..256 << 20).contains(&p) && p % BLOCK == 0));
        let fine = lattice(63 << 20, 64 << 20, LATTICE);
        assert_eq!(fine.first(), Some(&((63 << 20) + BLOCK)));
        assert_eq!(fine.len() as u64, (1 << 20) / BLOCK - 1);
    }

    #[test]
    fn carving_leaves_the_holes_out() {
        let carved = carve(&[(0, 10 * BLOCK), (20 * BLOCK, 30 * BLOCK)], &[0, 5 * BLOCK, 29 * BLOCK, 40 * BLOCK]);
        assert_eq!(carved, vec![(BLOCK, 5 * BLOCK), (6 * BLOCK, 10 * BLOCK), (20 * BLOCK, 29 * BLOCK)]);
    }

    #[test]
    fn split_keeps_every_byte() {
        let extents = [(FLOOR, FLOOR + (3 << 20)), (100 << 20, (100 << 20) + (1 << 20))];
        let parts = split(&extents, 64);
        assert_eq!(parts.len(), 64);
        let total: u64 = parts.iter().flatten().map(|(s, e)| e - s).sum();
        assert_eq!(total, 4 << 20);
        assert!(parts.iter().all(|p| !p.is_empty()));
    }
}
