//! What the probe has seen, and what follows from it: which addresses are
//! bad and why, which held their own stamp, the alias shifts that were
//! verified, where the real storage ends so far. Pure: the phases feed it
//! reads, it answers questions.
//!
//! The rules, for every family of fake (and why they never call a bad
//! address good):
//! - A block written by this run that reads back anything but its own
//!   stamp is bad (f3's "first block that does not hold its own stamp").
//! - When two addresses read the same stamp, they share storage (or the
//!   card answers all of limbo with its last write): the higher one is bad.
//!   Real storage sits at the low addresses on every fake we know of.
//! - A block that reads its own stamp while a *higher* address read it too
//!   is a suspect: its partner aliases it (it is good) or both are limbo
//!   that answers with the last write (it is bad). It counts as good only
//!   once a decoy write has told the two apart.

use std::collections::{BTreeMap, BTreeSet};

use super::geometry::{BLOCK, FLOOR};
use crate::stamp::{Foreign, Seen};

/// Verified shifts tried at most for one block's partner reads.
const MAX_SHIFTS_TRIED: usize = 8;

/// An access to the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Why an address is bad.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bad {
    /// The device refused this access to it.
    Io(Access),
    /// The write vanished: reading gives this instead.
    Vanished(Foreign),
    /// The write vanished: reading gives the last block written anywhere
    /// past the real size.
    LastWrite,
    /// It shares its storage with this address (a lower one, on every
    /// fake but those whose limbo answers with the last write).
    Alias(u64),
}

/// Everything learned so far.
#[derive(Debug, Clone)]
pub struct Evidence {
    size: u64,
    bad: BTreeMap<u64, Bad>,
    /// Units (blocks or sectors) that held their own stamp: start → end.
    good: BTreeMap<u64, u64>,
    /// Verified shifts: a bad address → the distance down to the address
    /// whose storage it reaches.
    shifts: BTreeMap<u64, u64>,
    /// Units that held their stamp while higher addresses read it too:
    /// start → (end, those addresses).
    suspects: BTreeMap<u64, (u64, BTreeSet<u64>)>,
}

impl Evidence {
    pub fn new(size: u64) -> Evidence {
        Evidence {
            size,
            bad: BTreeMap::new(),
            good: BTreeMap::new(),
            shifts: BTreeMap::new(),
            suspects: BTreeMap::new(),
        }
    }

    /// The first byte seen bad (the announced size when none was).
    pub fn hi(&self) -> u64 {
        self.bad.keys().next().copied().unwrap_or(self.size)
    }

    pub fn first_bad(&self) -> Option<(u64, Bad)> {
        self.bad.iter().next().map(|(&at, &why)| (at, why))
    }

    pub fn bad_at(&self, at: u64) -> Option<Bad> {
        self.bad.get(&at).copied()
    }

    pub fn any_bad(&self) -> bool {
        !self.bad.is_empty()
    }

    /// The end of the highest unit seen good below the first bad byte;
    /// `FLOOR` when none was (the first MiB is never written, and is taken
    /// on trust only as the start of the search).
    pub fn lo_end(&self) -> u64 {
        let hi = self.hi();
        self.good.range(..hi).next_back().map_or(FLOOR, |(_, &end)| end.min(hi)).max(FLOOR)
    }

    /// Whether any unit at or above FLOOR was seen good below the first bad byte.
    pub fn any_good(&self) -> bool {
        self.good.range(FLOOR..self.hi()).next().is_some()
    }

    /// The start of the highest suspect that would be the search's lower
    /// end if it were good, with the addresses that read its stamp.
    pub fn suspect_in_the_way(&self) -> Option<(u64, u64, Vec<u64>)> {
        let hi = self.hi();
        let (&start, (end, readers)) = self.suspects.range(..hi).next_back()?;
        (*end > self.lo_end()).then(|| (start, *end, readers.iter().copied().collect()))
    }

    /// Forgets why `at` was bad (to look at it more closely).
    pub fn clear_bad(&mut self, at: u64) -> Option<Bad> {
        self.bad.remove(&at)
    }

    pub fn mark_bad(&mut self, at: u64, why: Bad) {
        self.suspects.remove(&at);
        self.bad.entry(at).or_insert(why);
    }

    /// Marks `[start, end)` good, unless a higher address read its stamp.
    pub fn mark_good(&mut self, start: u64, end: u64) {
        if let Some((_, readers)) = self.suspects.get(&start) {
            if !readers.is_empty() {
                return;
            }
        }
        self.good.insert(start, end);
    }

    /// The units seen good that end above `from` and start below `to`.
    pub fn good_within(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        self.good.range(..to).filter(|&(_, &end)| end > from).map(|(&start, &end)| (start, end - start)).collect()
    }

    /// Whether the unit starting at `at` was seen good.
    pub fn is_good(&self, at: u64) -> bool {
        self.good.contains_key(&at)
    }

    /// Forgets what was seen good in `[start, end)` (to look at it more closely).
    pub fn unmark_good(&mut self, start: u64, end: u64) {
        self.good.retain(|&s, _| s < start || s >= end);
    }

    /// A suspect was told apart: good (its reader aliases it), or bad.
    /// `Some(false)`: last-write limbo; `None`: not known either way (it
    /// stays neither good nor bad).
    pub fn settle(&mut self, start: u64, good: Option<bool>) {
        if let Some((end, _)) = self.suspects.remove(&start) {
            match good {
                Some(true) => {
                    self.good.insert(start, end);
                }
                Some(false) => {
                    self.bad.entry(start).or_insert(Bad::LastWrite);
                }
                None => {}
            }
        }
    }

    /// `reader` read the stamp written to `of` (`of` spans `len` bytes):
    /// they share storage, or both are last-write limbo. The higher one is
    /// bad; a lower `of` becomes a suspect.
    pub fn shared(&mut self, reader: u64, of: u64, len: u64) {
        if reader == of {
            return;
        }
        if of > reader {
            self.mark_bad(of, Bad::Alias(reader));
            return;
        }
        self.bad.entry(reader).or_insert(Bad::Alias(of));
        // At a shift already verified, it is one more alias of a good block.
        let known = self.shifts.values().any(|&s| s == reader - of);
        if !known && !self.bad.contains_key(&of) {
            self.good.remove(&of);
            self.suspects.entry(of).or_insert_with(|| (of + len, BTreeSet::new())).1.insert(reader);
        }
    }

    /// A read at `reader` (of storage nobody wrote there this run) found
    /// the stamp written to `of`: the higher of the two is bad. Unlike
    /// [`Evidence::shared`], a lower `of` stays good: such reads come from
    /// flushes and scans, which read aliases of good storage all the time.
    pub fn seen_elsewhere(&mut self, reader: u64, of: u64) {
        match reader.cmp(&of) {
            std::cmp::Ordering::Less => self.mark_bad(of, Bad::Alias(reader)),
            std::cmp::Ordering::Greater => {
                self.bad.entry(reader).or_insert(Bad::Alias(of));
            }
            std::cmp::Ordering::Equal => {}
        }
    }

    /// `at` was found to reach the storage of `at - shift`, verified. A
    /// shift not seen before voids what was seen good at or above it: those
    /// blocks were never checked against it.
    pub fn alias(&mut self, at: u64, shift: u64) {
        if shift > 0 && !self.shifts.values().any(|&s| s == shift) {
            self.good.retain(|_, end| *end <= shift);
        }
        self.mark_bad(at, Bad::Alias(at - shift));
        self.shifts.insert(at, shift);
    }

    /// The verified shifts worth trying at `at`, each at most `at`: those
    /// verified nearest below and above it (most likely its own piece of
    /// the card's map) and the smallest first, then every other one, up to
    /// [`MAX_SHIFTS_TRIED`]. Trying only the near ones missed the pieces of
    /// an offset wrap on a small card: blocks of one piece read their own
    /// stamp, no partner read looked at the right shift, and the search
    /// walked down half a run per certificate until it ran out of them,
    /// with a usable size above the truth.
    pub fn shifts_near(&self, at: u64) -> Vec<u64> {
        let below = self.shifts.range(..=at).next_back().map(|(_, &s)| s);
        let above = self.shifts.range(at..).next().map(|(_, &s)| s);
        let fits = |s: &u64| *s > 0 && *s <= at;
        let mut near: Vec<u64> = [below, above, self.min_shift()].into_iter().flatten().filter(fits).collect();
        near.sort_unstable();
        near.dedup();
        let others: BTreeSet<u64> = self.shifts.values().copied().filter(fits).collect();
        let rest: Vec<u64> = others.into_iter().filter(|s| !near.contains(s)).collect();
        near.extend(rest);
        near.truncate(MAX_SHIFTS_TRIED);
        near
    }

    /// The smallest verified shift.
    pub fn min_shift(&self) -> Option<u64> {
        self.shifts.values().copied().filter(|&s| s > 0).min()
    }

    /// What one read of a block written by this run says about it;
    /// `decoy` is the block written last, into known limbo, when there is one.
    pub fn absorb(&mut self, at: u64, len: u64, seen: Result<Seen, ()>, decoy: Option<u64>) {
        match seen {
            Err(()) => self.mark_bad(at, Bad::Io(Access::Read)),
            Ok(Seen::Own) => self.mark_good(at, at + len),
            Ok(Seen::Foreign(kind)) => self.mark_bad(at, Bad::Vanished(kind)),
            Ok(Seen::Alias(of)) if Some(of) == decoy => self.mark_bad(at, Bad::LastWrite),
            Ok(Seen::Alias(of)) if of > at => {
                // A higher block written after it shares its storage: that
                // one is bad; this one may be its good partner, written
                // over in the same request (runs go up within a request).
                self.mark_bad(of, Bad::Alias(at));
            }
            Ok(Seen::Alias(of)) => {
                // It does not hold its own stamp: bad whatever `of` is.
                self.mark_bad(at, Bad::Alias(of));
                self.shared(at, of, len);
            }
        }
    }

    /// Whether any write was seen to vanish.
    pub fn any_vanished(&self) -> bool {
        self.bad.values().any(|b| matches!(b, Bad::Vanished(_) | Bad::LastWrite))
    }

    /// Whether limbo was seen answering with the last write.
    pub fn any_last_write(&self) -> bool {
        self.bad.values().any(|b| matches!(b, Bad::LastWrite))
    }

    /// Whether a verified alias was seen anywhere.
    pub fn any_alias(&self) -> bool {
        !self.shifts.is_empty()
    }
}

/// What the top blocks said when read right after they were written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Top {
    /// Every one held: the card keeps them, or a cache of at least their
    /// size answers for them.
    Holds,
    /// The older ones vanished; the youngest `cached` bytes were still answered.
    Vanish { kind: Foreign, cached: u64 },
    /// The older ones read the last one written.
    LastWrite { cached: u64 },
    /// The card refused them.
    Io,
}

/// Reads of the top units, oldest write first, as (offset, length, what
/// it held) → what the top of the card is. A FIFO cache answers for the
/// youngest; what the older ones read says what lies behind it.
pub fn classify_top(reads: &[(u64, u64, Result<Seen, ()>)]) -> Top {
    if reads.iter().any(|(_, _, r)| r.is_err()) {
        return Top::Io;
    }
    let own = |r: &Result<Seen, ()>| matches!(r, Ok(Seen::Own));
    let young = reads.iter().rev().take_while(|(_, _, r)| own(r)).count();
    let cached: u64 = reads.iter().rev().take(young).map(|(_, len, _)| len).sum();
    let older = &reads[..reads.len() - young];
    if older.is_empty() {
        return Top::Holds;
    }
    let last_written = reads.last().map(|(at, _, _)| *at);
    let last_write_reads =
        older.iter().filter(|(_, _, r)| matches!(r, Ok(Seen::Alias(of)) if Some(*of) == last_written)).count();
    if last_write_reads * 2 > older.len() {
        // The youngest reads its own stamp whether cached or not.
        let youngest = reads.last().map_or(0, |(_, len, _)| *len);
        return Top::LastWrite { cached: cached.saturating_sub(youngest) };
    }
    let mut kinds: Vec<Foreign> =
        older.iter().filter_map(|(_, _, r)| if let Ok(Seen::Foreign(k)) = r { Some(*k) } else { None }).collect();
    kinds.sort_unstable();
    let kind = kinds
        .chunk_by(|a, b| a == b)
        .max_by_key(|run| run.len())
        .and_then(|run| run.first().copied())
        .unwrap_or(Foreign::Other);
    Top::Vanish { kind, cached }
}

/// Hits of a scan: the data at `at` is the stamp written to `of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub at: u64,
    pub of: u64,
}

/// The hits of a run's stamps, grouped by distance `of - at`: within one
/// linear piece of the card's map the distance is the same for all.
/// Returns (distance, hits) with the largest distance first: the lowest
/// image of the run, on the real storage itself.
pub fn by_distance(hits: &[Hit]) -> Vec<(u64, Vec<Hit>)> {
    let mut groups: BTreeMap<u64, Vec<Hit>> = BTreeMap::new();
    for hit in hits.iter().filter(|h| h.of > h.at) {
        groups.entry(hit.of - hit.at).or_default().push(*hit);
    }
    groups.into_iter().rev().collect()
}

/// Whether `at` lies in `[start, end)`.
pub fn within(at: u64, (start, end): (u64, u64)) -> bool {
    (start..end).contains(&at)
}

/// The block that holds `at`.
pub fn block_of(at: u64) -> u64 {
    at / BLOCK * BLOCK
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_boundary_is_the_highest_good_below_the_first_bad() {
        let mut ev = Evidence::new(64 * MIB);
        assert_eq!((ev.lo_end(), ev.hi()), (FLOOR, 64 * MIB));
        ev.mark_good(8 * MIB, 8 * MIB + BLOCK);
        ev.mark_good(40 * MIB, 40 * MIB + BLOCK);
        ev.mark_bad(20 * MIB, Bad::Vanished(Foreign::Zeros));
        assert_eq!((ev.lo_end(), ev.hi()), (8 * MIB + BLOCK, 20 * MIB));
        assert!(ev.any_good());
    }

    #[test]
    fn a_block_read_through_a_higher_alias_is_a_suspect_until_settled() {
        let mut ev = Evidence::new(64 * MIB);
        ev.absorb(30 * MIB, BLOCK, Ok(Seen::Alias(10 * MIB)), None);
        ev.absorb(10 * MIB, BLOCK, Ok(Seen::Own), None);
        assert_eq!(ev.hi(), 30 * MIB);
        assert_eq!(ev.lo_end(), FLOOR, "a suspect is not good");
        assert_eq!(ev.suspect_in_the_way(), Some((10 * MIB, 10 * MIB + BLOCK, vec![30 * MIB])));
        ev.settle(10 * MIB, Some(false));
        assert_eq!(ev.hi(), 10 * MIB);
        assert_eq!(ev.bad_at(10 * MIB), Some(Bad::LastWrite));
    }

    #[test]
    fn a_lower_reader_makes_the_higher_stamp_bad() {
        let mut ev = Evidence::new(64 * MIB);
        ev.shared(5 * MIB, 50 * MIB, BLOCK);
        assert_eq!(ev.bad_at(50 * MIB), Some(Bad::Alias(5 * MIB)));
        assert_eq!(ev.bad_at(5 * MIB), None);
    }

    #[test]
    fn a_new_shift_voids_the_goods_it_could_reach() {
        let mut ev = Evidence::new(64 * MIB);
        ev.mark_good(5 * MIB, 5 * MIB + BLOCK);
        ev.mark_good(25 * MIB, 25 * MIB + BLOCK);
        ev.alias(40 * MIB, 20 * MIB);
        assert_eq!(ev.lo_end(), 5 * MIB + BLOCK);
        ev.mark_good(25 * MIB, 25 * MIB + BLOCK);
        ev.alias(45 * MIB, 20 * MIB);
        assert_eq!(ev.lo_end(), 25 * MIB + BLOCK, "a shift seen before voids nothing");
    }

    #[test]
    fn shifts_are_looked_up_below_an_address() {
        let mut ev = Evidence::new(64 * MIB);
        ev.alias(30 * MIB, 20 * MIB);
        ev.alias(50 * MIB, 40 * MIB);
        assert_eq!(ev.shifts_near(25 * MIB), vec![20 * MIB]);
        assert_eq!(ev.shifts_near(48 * MIB), vec![20 * MIB, 40 * MIB]);
        assert!(ev.shifts_near(10 * MIB).is_empty());
        assert_eq!(ev.min_shift(), Some(20 * MIB));
        assert_eq!(ev.bad_at(30 * MIB), Some(Bad::Alias(10 * MIB)));
    }

    #[test]
    fn the_top_says_what_lies_behind_a_cache() {
        let at = |i: u64| 60 * MIB + i * BLOCK;
        let holds: Vec<_> = (0..8).map(|i| (at(i), BLOCK, Ok(Seen::Own))).collect();
        assert_eq!(classify_top(&holds), Top::Holds);
        let limbo: Vec<_> = (0..8)
            .map(|i| (at(i), BLOCK, if i < 5 { Ok(Seen::Foreign(Foreign::Ones)) } else { Ok(Seen::Own) }))
            .collect();
        assert_eq!(classify_top(&limbo), Top::Vanish { kind: Foreign::Ones, cached: 3 * BLOCK });
        let last: Vec<_> =
            (0..8).map(|i| (at(i), BLOCK, if i < 7 { Ok(Seen::Alias(at(7))) } else { Ok(Seen::Own) })).collect();
        assert_eq!(classify_top(&last), Top::LastWrite { cached: 0 });
        let io: Vec<_> = (0..8).map(|i| (at(i), BLOCK, if i == 3 { Err(()) } else { Ok(Seen::Own) })).collect();
        assert_eq!(classify_top(&io), Top::Io);
    }

    #[test]
    fn hits_group_by_distance_largest_first() {
        let hits = [
            Hit { at: 3 * MIB, of: 60 * MIB },
            Hit { at: 4 * MIB, of: 61 * MIB },
            Hit { at: 23 * MIB, of: 60 * MIB + BLOCK },
        ];
        let groups = by_distance(&hits);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].0, 57 * MIB);
        assert_eq!(groups[0].1.len(), 2);
        assert_eq!(groups[1].0, 37 * MIB + BLOCK);
    }
}
