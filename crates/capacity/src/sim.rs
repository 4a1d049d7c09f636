//! Counterfeit cards in memory, for the unit and property tests (a fault
//! model, not the main test: the end-to-end tests run the same kinds of fake
//! as real block devices through FUSE, `tests/support/fake_flash.py`).
//!
//! A [`Card`] maps every announced address range anywhere: onto flash
//! (linearly, or modulo a period, as wrapping controllers do), into limbo
//! (writes vanish; reads give zeros, 0xFF, stale junk, or the last block
//! written anywhere in limbo), or onto I/O errors. Flash is sparse: only
//! sectors that were written are stored, the others hold a reproducible
//! pattern (the user's data), so a card may announce 512 GiB. A FIFO write
//! cache in front answers reads of recently written sectors, even where the
//! write itself vanished. The families follow f3's taxonomy (`libdevs.c`)
//! and the fakes the issue describes: real sizes that are not powers of two,
//! not multiples of 4 KiB, wraps that land at an offset.

use std::collections::{HashMap, VecDeque};
use std::io;

use crate::disk::Disk;
use crate::stamp::hash64;

/// How a simulated card's user data differs from what it held before a
/// probe ([`SimDisk::intact`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Damage {
    #[error("{count} flash sectors changed, the first at byte {first_byte}")]
    Sectors { count: usize, first_byte: u64 },
    #[error("the limbo's last-write buffer changed")]
    LastWrite,
}

/// The simulated logical sector: every read and write is aligned to it.
pub const SECTOR: u64 = 512;
const WORDS: usize = SECTOR as usize / 8;
/// The limbo that answers with the last write remembers a block this big.
const LAST_WRITE_BLOCK: u64 = 4096;

/// What reads in limbo give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limbo {
    Zeros,
    Ones,
    /// The same old junk at each address, whatever was written.
    Stale,
    /// The last block written anywhere in limbo (one buffer for all of it).
    LastWrite,
}

/// Where an extent of announced addresses goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Address `a` of the extent reaches flash byte
    /// `base + ((a - start + phase) mod period)`, or `base + (a - start)`
    /// when `period` is 0.
    Flash {
        base: u64,
        period: u64,
        phase: u64,
    },
    Limbo(Limbo),
    Eio,
}

/// Announced addresses `[start, end)` and where they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    pub start: u64,
    pub end: u64,
    pub target: Target,
}

/// A card: its announced size and the map of its addresses (sorted,
/// without gaps, covering `[0, announced)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    pub announced: u64,
    pub extents: Vec<Extent>,
}

const IDENTITY: Target = Target::Flash { base: 0, period: 0, phase: 0 };

impl Card {
    /// An honest card.
    pub fn genuine(announced: u64) -> Card {
        Card { announced, extents: vec![Extent { start: 0, end: announced, target: IDENTITY }] }
    }

    /// `real` bytes of flash; every address `a` past it reaches `a mod real`.
    pub fn wrap(announced: u64, real: u64) -> Card {
        Card::wrap_rotated(announced, real, 0)
    }

    /// An offset wrap: address `a >= real` reaches `(a + shift) mod real`.
    pub fn wrap_rotated(announced: u64, real: u64, shift: u64) -> Card {
        let tail = Target::Flash { base: 0, period: real, phase: shift % real };
        Card::with_tail(announced, real, tail)
    }

    /// A wrap that spares the first `skip` bytes: address `a >= real`
    /// reaches `skip + (a - real) mod (real - skip)`.
    pub fn wrap_skipping(announced: u64, real: u64, skip: u64) -> Card {
        let tail = Target::Flash { base: skip, period: real - skip, phase: 0 };
        Card::with_tail(announced, real, tail)
    }

    /// Writes past `real` vanish.
    pub fn limbo(announced: u64, real: u64, kind: Limbo) -> Card {
        Card::with_tail(announced, real, Target::Limbo(kind))
    }

    /// Reads and writes past `real` fail.
    pub fn eio(announced: u64, real: u64) -> Card {
        Card::with_tail(announced, real, Target::Eio)
    }

    /// Addresses wrap every `period` bytes (`real < period < announced`);
    /// between `real` and the next wrap, limbo of `kind`.
    pub fn chain(announced: u64, real: u64, period: u64, kind: Limbo) -> Card {
        assert!(real < period && period < announced, "chain wants real < period < announced");
        let mut extents = Vec::new();
        let mut base = 0;
        while base < announced {
            let flash_end = (base + real).min(announced);
            extents.push(Extent {
                start: base,
                end: flash_end,
                target: Target::Flash { base: 0, period: 0, phase: 0 },
            });
            let limbo_end = (base + period).min(announced);
            if limbo_end > flash_end {
                extents.push(Extent { start: flash_end, end: limbo_end, target: Target::Limbo(kind) });
            }
            base += period;
        }
        Card { announced, extents }
    }

    fn with_tail(announced: u64, real: u64, tail: Target) -> Card {
        assert!(real <= announced && real % SECTOR == 0 && announced % SECTOR == 0, "sizes in whole sectors");
        let mut extents = vec![Extent { start: 0, end: real, target: IDENTITY }];
        if announced > real {
            extents.push(Extent { start: real, end: announced, target: tail });
        }
        Card { announced, extents }
    }

    /// The truth the probe must not exceed: the longest prefix whose every
    /// sector keeps its own data (flash, no two addresses on one byte), as
    /// long as nothing past it is written.
    pub fn usable(&self) -> u64 {
        let mut claimed: Vec<(u64, u64)> = Vec::new();
        for extent in &self.extents {
            let Target::Flash { base, period, phase } = extent.target else { return extent.start };
            let len = extent.end - extent.start;
            // A rotated extent may reach any byte of its period.
            let reach = match (period, phase) {
                (0, _) => len,
                (_, 0) => len.min(period),
                _ => period,
            };
            if claimed.iter().any(|&(s, e)| base < e && s < base + reach) {
                return extent.start;
            }
            if period != 0 && len > period {
                return extent.start + period;
            }
            claimed.push((base, base + reach));
        }
        self.announced
    }

    fn extent(&self, addr: u64) -> &Extent {
        let i = self.extents.partition_point(|e| e.end <= addr);
        &self.extents[i]
    }

    fn place(&self, addr: u64) -> Place {
        let extent = self.extent(addr);
        match extent.target {
            Target::Flash { base, period: 0, .. } => Place::Flash((base + addr - extent.start) / SECTOR),
            Target::Flash { base, period, phase } => {
                Place::Flash((base + (addr - extent.start + phase) % period) / SECTOR)
            }
            Target::Limbo(kind) => Place::Limbo(kind),
            Target::Eio => Place::Error,
        }
    }
}

enum Place {
    /// A flash sector number.
    Flash(u64),
    Limbo(Limbo),
    Error,
}

/// The kinds the older tests name (kept for them and for the journal's tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(dead_code)] // not every kind is named by a test today
pub enum Mode {
    Genuine,
    Wrap,
    /// Reads past the real size give this byte.
    Limbo(u8),
    LimboStale,
    /// Addresses wrap at this many bytes; past the real size below it, limbo (zeros).
    Chain(u64),
    Eio,
}

/// A FIFO write cache over sectors, by announced address.
#[derive(Debug, Default)]
struct Cache {
    capacity: usize,
    /// Sector → (generation of its latest write, data).
    live: HashMap<u64, (u64, Box<[u8]>)>,
    /// Writes in order; stale generations are skipped on eviction.
    order: VecDeque<(u64, u64)>,
    generation: u64,
}

impl Cache {
    fn put(&mut self, sector: u64, data: &[u8]) {
        if self.capacity == 0 {
            return;
        }
        self.generation += 1;
        self.live.insert(sector, (self.generation, data.into()));
        self.order.push_back((sector, self.generation));
        while self.live.len() > self.capacity {
            let Some((old, generation)) = self.order.pop_front() else { break };
            if self.live.get(&old).is_some_and(|(g, _)| *g == generation) {
                self.live.remove(&old);
            }
        }
        // Stale entries could pile up under rewrites of the same sectors.
        if self.order.len() > 4 * self.capacity + 64 {
            let live = &self.live;
            self.order.retain(|(s, g)| live.get(s).is_some_and(|(lg, _)| lg == g));
        }
    }

    fn get(&self, sector: u64) -> Option<&[u8]> {
        self.live.get(&sector).map(|(_, d)| &d[..])
    }
}

/// A [`Card`] as a [`Disk`].
#[derive(Debug)]
pub struct SimDisk {
    card: Card,
    /// Flash sectors that were written; the others hold `seed`'s pattern.
    flash: HashMap<u64, Box<[u8]>>,
    seed: u64,
    last_write: Vec<u8>,
    cache: Cache,
    pub writes: u64,
    pub bytes_written: u64,
    pub reads: u64,
    pub bytes_read: u64,
    /// Panic (a simulated `kill -9`) at this write number.
    pub die_at_write: Option<u64>,
}

impl SimDisk {
    /// A card of one of the older kinds: `real` bytes, then `mode`.
    pub fn new(announced: u64, real: u64, mode: Mode) -> SimDisk {
        let card = match mode {
            Mode::Genuine => Card::genuine(announced),
            Mode::Wrap => Card::wrap(announced, real),
            Mode::Limbo(0xFF) => Card::limbo(announced, real, Limbo::Ones),
            Mode::Limbo(_) => Card::limbo(announced, real, Limbo::Zeros),
            Mode::LimboStale => Card::limbo(announced, real, Limbo::Stale),
            Mode::Chain(period) => Card::chain(announced, real, period, Limbo::Zeros),
            Mode::Eio => Card::eio(announced, real),
        };
        SimDisk::of(card)
    }

    pub fn of(card: Card) -> SimDisk {
        let mut disk = SimDisk {
            card,
            flash: HashMap::new(),
            seed: 0,
            last_write: Vec::new(),
            cache: Cache::default(),
            writes: 0,
            bytes_written: 0,
            reads: 0,
            bytes_read: 0,
            die_at_write: None,
        };
        disk.last_write = disk.initial_last_write();
        disk
    }

    /// A FIFO write cache of `bytes` in front of the card.
    pub fn with_cache(mut self, bytes: u64) -> SimDisk {
        self.cache.capacity = (bytes / SECTOR) as usize;
        self
    }

    /// Gives the untouched flash a reproducible pattern (the user's data).
    pub fn fill_pattern(&mut self, seed: u64) {
        self.seed = seed;
        self.flash.clear();
        self.last_write = self.initial_last_write();
    }

    /// Whether the user's data is as it was: every flash sector ever
    /// written holds its original pattern again, and the limbo that answers
    /// with the last write answers as before. `Err` names the first
    /// difference.
    pub fn intact(&self) -> Result<(), Damage> {
        let mut original = [0u8; SECTOR as usize];
        let mut changed: Vec<u64> = self
            .flash
            .iter()
            .filter(|(sector, data)| {
                self.pattern(**sector, &mut original);
                data[..] != original[..]
            })
            .map(|(sector, _)| *sector)
            .collect();
        changed.sort_unstable();
        if let Some(first) = changed.first() {
            return Err(Damage::Sectors { count: changed.len(), first_byte: first * SECTOR });
        }
        if self.last_write != self.initial_last_write() {
            return Err(Damage::LastWrite);
        }
        Ok(())
    }

    /// A hash of everything a reader of the announced addresses sees (for
    /// small cards: it reads every sector).
    pub fn snapshot(&mut self) -> u64 {
        let mut buf = vec![0u8; SECTOR as usize];
        let mut h = 0u64;
        for sector in 0..self.card.announced / SECTOR {
            // An error reads as a marker, so that it still compares.
            if self.read_sector(sector * SECTOR, &mut buf).is_err() {
                buf.fill(0xEE);
            }
            for w in buf.chunks_exact(8) {
                h = hash64(h ^ u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
            }
        }
        h
    }

    fn pattern(&self, sector: u64, out: &mut [u8]) {
        for (i, word) in out.chunks_exact_mut(8).enumerate() {
            word.copy_from_slice(&hash64(self.seed ^ (sector * WORDS as u64 + i as u64)).to_le_bytes());
        }
    }

    fn initial_last_write(&self) -> Vec<u8> {
        let mut block = vec![0u8; LAST_WRITE_BLOCK as usize];
        for (i, word) in block.chunks_exact_mut(8).enumerate() {
            word.copy_from_slice(&hash64(self.seed ^ 0x4C57_0000 ^ i as u64).to_le_bytes());
        }
        block
    }

    fn read_sector(&mut self, addr: u64, out: &mut [u8]) -> io::Result<()> {
        let place = self.card.place(addr);
        if let Place::Error = place {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        if let Some(cached) = self.cache.get(addr / SECTOR) {
            out.copy_from_slice(cached);
            return Ok(());
        }
        match place {
            Place::Flash(sector) => match self.flash.get(&sector) {
                Some(stored) => out.copy_from_slice(stored),
                None => self.pattern(sector, out),
            },
            Place::Limbo(Limbo::Zeros) => out.fill(0),
            Place::Limbo(Limbo::Ones) => out.fill(0xFF),
            Place::Limbo(Limbo::Stale) => {
                for (i, word) in out.chunks_exact_mut(8).enumerate() {
                    word.copy_from_slice(
                        &hash64(0x57A1_E000 ^ (addr / SECTOR * WORDS as u64 + i as u64)).to_le_bytes(),
                    );
                }
            }
            Place::Limbo(Limbo::LastWrite) => {
                let at = (addr % LAST_WRITE_BLOCK) as usize;
                out.copy_from_slice(&self.last_write[at..at + SECTOR as usize]);
            }
            Place::Error => {}
        }
        Ok(())
    }
}

impl Disk for SimDisk {
    fn size(&self) -> u64 {
        self.card.announced
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        assert!(offset % SECTOR == 0 && buf.len() as u64 % SECTOR == 0, "unaligned read");
        if offset + buf.len() as u64 > self.card.announced {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        self.reads += 1;
        self.bytes_read += buf.len() as u64;
        for (i, chunk) in buf.chunks_mut(SECTOR as usize).enumerate() {
            self.read_sector(offset + i as u64 * SECTOR, chunk)?;
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        assert!(offset % SECTOR == 0 && buf.len() as u64 % SECTOR == 0, "unaligned write");
        if offset + buf.len() as u64 > self.card.announced {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        self.writes += 1;
        if self.die_at_write == Some(self.writes) {
            panic!("simulated kill -9 at write {}", self.writes);
        }
        self.bytes_written += buf.len() as u64;
        for (i, chunk) in buf.chunks(SECTOR as usize).enumerate() {
            let addr = offset + i as u64 * SECTOR;
            match self.card.place(addr) {
                Place::Error => return Err(io::Error::from_raw_os_error(libc::EIO)),
                Place::Flash(sector) => {
                    self.flash.insert(sector, chunk.into());
                }
                Place::Limbo(Limbo::LastWrite) => {
                    let at = (addr % LAST_WRITE_BLOCK) as usize;
                    self.last_write[at..at + SECTOR as usize].copy_from_slice(chunk);
                }
                Place::Limbo(_) => {}
            }
            self.cache.put(addr / SECTOR, chunk);
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    fn read(disk: &mut SimDisk, at: u64) -> Vec<u8> {
        let mut buf = vec![0u8; SECTOR as usize];
        disk.read_at(at, &mut buf).expect("read");
        buf
    }

    #[test]
    fn the_truth_of_each_family() {
        let real = 7 * MIB + 3 * SECTOR;
        assert_eq!(Card::genuine(64 * MIB).usable(), 64 * MIB);
        assert_eq!(Card::wrap(64 * MIB, real).usable(), real);
        assert_eq!(Card::wrap_rotated(64 * MIB, real, MIB).usable(), real);
        assert_eq!(Card::wrap_skipping(64 * MIB, real, MIB).usable(), real);
        assert_eq!(Card::limbo(64 * MIB, real, Limbo::LastWrite).usable(), real);
        assert_eq!(Card::chain(64 * MIB, real, 16 * MIB, Limbo::Zeros).usable(), real);
        assert_eq!(Card::eio(64 * MIB, real).usable(), real);
    }

    #[test]
    fn wraps_alias_where_they_say() {
        let mut disk = SimDisk::of(Card::wrap_rotated(64 * MIB, 10 * MIB, 3 * SECTOR));
        disk.write_at(10 * MIB, &[7u8; 512]).expect("write");
        assert_eq!(read(&mut disk, 3 * SECTOR), vec![7u8; 512]);
        let mut disk = SimDisk::of(Card::wrap_skipping(64 * MIB, 10 * MIB, MIB));
        disk.write_at(19 * MIB + 4 * SECTOR, &[9u8; 512]).expect("write");
        assert_eq!(read(&mut disk, MIB + 4 * SECTOR), vec![9u8; 512]);
    }

    #[test]
    fn last_write_limbo_answers_with_the_last_block() {
        let mut disk = SimDisk::of(Card::limbo(64 * MIB, 8 * MIB, Limbo::LastWrite));
        disk.write_at(20 * MIB, &[1u8; 4096]).expect("write");
        disk.write_at(30 * MIB + 4096, &[2u8; 4096]).expect("write");
        assert_eq!(read(&mut disk, 40 * MIB), vec![2u8; 512]);
        assert!(disk.intact().is_err());
    }

    #[test]
    fn a_fifo_cache_masks_then_forgets() {
        let mut disk = SimDisk::of(Card::limbo(64 * MIB, 8 * MIB, Limbo::Zeros)).with_cache(8 * SECTOR);
        disk.write_at(20 * MIB, &[5u8; 512]).expect("write");
        assert_eq!(read(&mut disk, 20 * MIB), vec![5u8; 512]);
        for i in 0..8 {
            disk.write_at(MIB + i * SECTOR, &[0u8; 512]).expect("write");
        }
        assert_eq!(read(&mut disk, 20 * MIB), vec![0u8; 512]);
    }

    #[test]
    fn intact_sees_a_changed_sector_and_its_repair() {
        let mut disk = SimDisk::of(Card::wrap(512 << 30, 15 << 30));
        disk.fill_pattern(4);
        let at = (400u64 << 30) + 12 * SECTOR;
        let before = read(&mut disk, at);
        disk.write_at(at, &[3u8; 512]).expect("write");
        assert!(disk.intact().is_err());
        disk.write_at(at, &before).expect("write");
        assert_eq!(disk.intact(), Ok(()));
    }
}
