//! The probe: where does the real storage end, and what lies past it?
//!
//! A fake card is good from byte 0 up to its real size R, whatever R is
//! (7.40 GiB, 200,000,000 bytes…), and bad above it: writes there land on
//! lower storage (a wraparound, maybe at an offset), vanish (limbo, whose
//! reads give a fixed byte, stale data or the last block written), do both
//! (a chain), or fail. The probe finds R to the sector without assuming a
//! power of two, in phases:
//!
//! 1. **Top** ([`top`]): stamped blocks at the very top, read back at once.
//!    Blocks that vanish already say "limbo" and size any cache in front
//!    (the youngest ones it still answers for).
//! 2. **Holds**: when the top keeps its blocks, a stamped *run* is written
//!    there and every `len / 2` bytes of the card are read: wherever the
//!    run's storage really is, one of those reads lands in it and names the
//!    run block it holds (the stamp's offset), which gives the alias and its
//!    shift exactly. A write cache is then measured by a marker read after
//!    growing amounts of rewriting, and held to at least the cache bound
//!    (256 MiB by default) before any card is called genuine. In front of
//!    a wrap whose writes reach the storage at once, the measurement waits
//!    for the certificate's rewriting and is done with it (aliases show
//!    through such a cache; only vanished writes need it).
//! 3. **Search** ([`search`]): rounds of probe blocks between the highest
//!    block seen good and the lowest seen bad, each read back after a
//!    rewrite at least as large as the measured cache; a block is bad when
//!    it does not read its own stamp, or when the lower address at a known
//!    shift reads it.
//! 4. **Certificate** ([`certificate`]): a run just below the boundary,
//!    and reads below it: if any read lands in the run, the boundary was an
//!    illusion (an island of a chain) and the search goes on, with every
//!    block seen good read against the shift just found. Above a limbo
//!    boundary, blocks every half-boundary look for islands that alias the
//!    real storage.
//! 5. **Sectors**: the first bad block is tested sector by sector.
//! 6. **The alias named**: a first bad block that reads like a vanished
//!    write, below which a known shift reaches usable storage, is read
//!    once more after a stamp is written there: a wrap, not a chain, when
//!    it shows through.
//!
//! Every write of a stamp is journaled first ([`crate::journal`]); the
//! flushes rewrite bytes with their own content ([`io`]).

mod certificate;
mod evidence;
mod geometry;
mod io;
mod search;
mod top;

use std::io as stdio;

use evidence::Evidence;
pub use evidence::{Access, Bad};
use geometry::run_len;
pub use geometry::{BLOCK, FLOOR};
use io::Io;

use crate::journal::Journal;

/// How the probe should behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// The largest write cache looked through: at most this many bytes are
    /// rewritten before a read-back that must not be answered by a cache.
    pub cache_bound: u64,
    /// What a read is worth in written bytes, for the length of scan runs
    /// (see [`geometry::run_len`]).
    pub scan_balance: u64,
    /// The longest scan run.
    pub max_run: u64,
}

impl Default for Options {
    fn default() -> Options {
        Options { cache_bound: 256 << 20, scan_balance: 16 << 10, max_run: 64 << 20 }
    }
}

impl Options {
    /// `--thorough`: caches up to 1 GiB (f3probe's largest, MAX_CACHE_SIZE_BYTE).
    pub fn thorough() -> Options {
        Options { cache_bound: 1 << 30, ..Options::default() }
    }
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

/// A write cache that answered for recent writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSeen {
    pub at_least: u64,
    /// `None` when it answered for everything written up to the cache
    /// bound: it may hide bad blocks.
    pub at_most: Option<u64>,
}

/// Where addresses start to reach lower storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrap {
    /// The lowest address seen to share the storage of a lower one.
    pub at: u64,
    /// That lower address, when verified.
    pub onto: Option<u64>,
}

/// What the probe found.
#[derive(Debug, Clone, PartialEq)]
pub struct Probed {
    pub announced: u64,
    /// Bytes from the start up to the end of the last sector seen good.
    pub usable: u64,
    /// The first byte seen bad; `None` when nothing was.
    pub first_bad: Option<u64>,
    /// Why the storage at `first_bad` is bad.
    pub bad_kind: Option<Bad>,
    pub wrap: Option<Wrap>,
    pub cache: Option<CacheSeen>,
    /// The resolution: the real size lies in `[usable, first_bad]`.
    pub granule: u64,
    pub rounds: u32,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Bytes rewritten before each read-back (the measured cache, or the bound).
    pub flush_bytes: u64,
    pub notes: Vec<String>,
}

/// Why the probe stopped without a finding.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("interrupted by {0}")]
    Interrupted(&'static str),
    #[error("cannot write the journal: {0}")]
    Journal(#[source] stdio::Error),
    #[error("the device has {0} bytes, too few to probe (it needs at least 2 MiB)")]
    TooSmall(u64),
}

/// About how many bytes the journal may hold for a card of `size` bytes:
/// the stamped runs (each at most [`Options::max_run`]) and probe blocks.
pub fn journal_room(size: u64, options: &Options) -> u64 {
    4 * run_len(size, options.scan_balance, options.max_run) + (16 << 20)
}

/// Runs the probe. With a journal, every block is backed up before it is
/// first written; undoing the writes is the caller's job (it must happen
/// whatever this returns).
pub fn probe(
    disk: &mut dyn crate::disk::Disk,
    journal: Option<&mut Journal>,
    nonce: u64,
    options: Options,
    watch: &dyn Watch,
) -> Result<Probed, ProbeError> {
    let size = disk.size();
    if size < 2 * FLOOR {
        return Err(ProbeError::TooSmall(size));
    }
    let io = Io::new(disk, journal, nonce, watch);
    let mut probe = Probe::new(io, options);
    probe.run()?;
    Ok(probe.finish())
}

/// The state of one probe: its I/O, what it learned, what it knows of the
/// card's cache.
struct Probe<'a> {
    io: Io<'a>,
    ev: Evidence,
    opts: Options,
    /// The end of the whole blocks (the size may end in a partial one).
    top: u64,
    /// Bytes to rewrite before a read-back: the measured cache.
    flush: u64,
    /// Writes reach the storage at once (a cache only answers reads of the
    /// address written): reads of an alias need no flush.
    write_through: bool,
    cache: Option<CacheSeen>,
    /// A block in limbo that answers with the last write, rewritten last
    /// before every read-back, so that such limbo reads it.
    decoy: Option<u64>,
    /// Where the next flush starts.
    cursor: u64,
    /// `--destructive`, while the top's cache is measured: the flush
    /// writes stamped blocks downwards from the second number to the
    /// first instead of rewriting the card's data, then the block of the
    /// third once more (see [`Probe::flush_now`]).
    stamped_flush: Option<(u64, u64, u64)>,
    rounds: u32,
    /// Blocks above a limbo boundary that held their stamp: islands of a chain.
    islands: Vec<u64>,
    /// The smallest shift at which those islands reach the real storage.
    island_shift: Option<u64>,
    /// A cache in front of a wrap whose sizing waits for the first flush
    /// that must not be answered by it (the certificate's): the marker and
    /// its lower partner, and the bytes written when the marker was.
    sizing_owed: Option<(u64, u64, u64)>,
    /// Units read back before that flush: a cache may have answered for
    /// them, so what they showed is read again after it.
    provisional: Vec<(u64, u64)>,
    notes: Vec<String>,
}

/// Search rounds at most, and certificate passes at most.
const MAX_ROUNDS: u32 = 64;
const MAX_CERTIFICATES: u32 = 8;

impl<'a> Probe<'a> {
    fn new(io: Io<'a>, opts: Options) -> Probe<'a> {
        let size = io.size();
        Probe {
            io,
            ev: Evidence::new(size),
            opts,
            top: size / BLOCK * BLOCK,
            flush: 0,
            write_through: false,
            cache: None,
            decoy: None,
            cursor: FLOOR,
            stamped_flush: None,
            rounds: 0,
            islands: Vec::new(),
            island_shift: None,
            sizing_owed: None,
            provisional: Vec::new(),
            notes: Vec::new(),
        }
    }

    fn run(&mut self) -> Result<(), ProbeError> {
        if self.top_phase()? == top::Next::Genuine {
            return Ok(());
        }
        for _ in 0..MAX_CERTIFICATES {
            self.search()?;
            // A search before the cache was sized may have left blocks
            // unread: once sized, it goes on where it stopped.
            let owed = self.sizing_owed.is_some();
            if self.certify()? && !(owed && self.gap_open()) {
                break;
            }
        }
        if self.island_shift.is_none() && !self.islands.is_empty() {
            self.island_scan()?;
        }
        // A certificate that had nothing to check flushed nothing.
        if self.sizing_owed.is_some() {
            self.flush_and_size(&[])?;
            self.search()?;
        }
        self.refine()?;
        self.name_the_alias()
    }

    /// Whether more than a block lies between the highest block seen good
    /// and the lowest seen bad.
    pub(super) fn gap_open(&self) -> bool {
        let lo = evidence::block_of(self.ev.lo_end() - 1);
        evidence::block_of(self.ev.hi()) > lo + BLOCK
    }

    fn finish(mut self) -> Probed {
        let size = self.io.size();
        let first = self.ev.first_bad();
        let usable = match first {
            None => size,
            Some(_) if !self.ev.any_good() => 0,
            Some((at, _)) => self.ev.lo_end().min(at),
        };
        let wrap = match first {
            Some((at, Bad::Alias(onto))) if onto < at => Some(Wrap { at, onto: Some(onto) }),
            Some(_) => self.island_shift.or_else(|| self.ev.min_shift()).map(|at| Wrap { at, onto: None }),
            None => None,
        };
        if let Some(CacheSeen { at_most: None, at_least }) = self.cache {
            self.notes.push(format!(
                "a write cache answered for all of the last {at_least} bytes written; it may hide more bad blocks: rerun with --thorough"
            ));
        }
        let mut notes = self.notes;
        notes.append(&mut self.io.notes);
        Probed {
            announced: size,
            usable,
            first_bad: first.map(|(at, _)| at),
            bad_kind: first.map(|(_, why)| why),
            wrap,
            cache: self.cache,
            granule: first.map_or(self.io.sector, |(at, _)| at.saturating_sub(usable).max(self.io.sector)),
            rounds: self.rounds,
            bytes_written: self.io.written,
            bytes_read: self.io.read,
            flush_bytes: self.flush,
            notes,
        }
    }
}
