//! Fault models of fake flash, in memory, for the unit tests (a seam, not
//! the main test: the end-to-end tests run the same kinds of fake as real
//! block devices through FUSE, `tests/support/fake_flash.py`).
//!
//! The models follow f3's taxonomy (f3 `libdevs.c`, `dev_param_to_type`):
//! genuine; wraparound (address modulo the real size); limbo (past the real
//! size writes vanish and reads give a fixed byte or stale data); chain
//! (address modulo a wrap point above the real size, limbo between the
//! two); and I/O errors past an offset. Any of them may sit behind a FIFO
//! write cache that answers reads of recently written sectors.

use std::collections::{HashMap, VecDeque};
use std::io;

use crate::disk::Disk;

const SECTOR: u64 = 4096;

/// What happens past the real size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Genuine,
    Wrap,
    /// Reads past the real size give this byte.
    Limbo(u8),
    /// Reads past the real size give what was there before (per-sector junk).
    LimboStale,
    /// Addresses wrap at this many bytes; past the real size below it, limbo (zeros).
    Chain(u64),
    Eio,
}

#[derive(Debug)]
pub struct SimDisk {
    announced: u64,
    real: u64,
    mode: Mode,
    /// Sectors of real storage that were written; the others hold `seed`'s pattern.
    data: HashMap<u64, Vec<u8>>,
    seed: u64,
    cache_sectors: usize,
    cache: HashMap<u64, Vec<u8>>,
    order: VecDeque<u64>,
    pub writes: u64,
    pub bytes_written: u64,
    /// Panic (a simulated `kill -9`) at this write number.
    pub die_at_write: Option<u64>,
}

enum Place {
    /// A physical sector number.
    Real(u64),
    Limbo,
    Error,
}

impl SimDisk {
    pub fn new(announced: u64, real: u64, mode: Mode) -> SimDisk {
        SimDisk {
            announced,
            real,
            mode,
            data: HashMap::new(),
            seed: 0,
            cache_sectors: 0,
            cache: HashMap::new(),
            order: VecDeque::new(),
            writes: 0,
            bytes_written: 0,
            die_at_write: None,
        }
    }

    /// A FIFO write cache of `bytes` in front of the storage.
    pub fn with_cache(mut self, bytes: u64) -> SimDisk {
        self.cache_sectors = (bytes / SECTOR) as usize;
        self
    }

    /// Gives the untouched real storage a reproducible pattern (user data).
    pub fn fill_pattern(&mut self, seed: u64) {
        self.seed = seed;
        self.data.clear();
    }

    /// A hash of everything a reader of the announced addresses sees.
    pub fn snapshot(&mut self) -> u64 {
        let mut sector_buf = vec![0u8; SECTOR as usize];
        let mut h = 0u64;
        for sector in 0..self.announced / SECTOR {
            // An error reads as a marker, so that it still compares.
            if self.read_sector(sector, &mut sector_buf).is_err() {
                sector_buf.fill(0xEE);
            }
            for w in sector_buf.chunks_exact(8) {
                h = crate::stamp::hash64(h ^ u64::from_le_bytes(w.try_into().unwrap_or([0; 8])));
            }
        }
        h
    }

    fn place(&self, sector: u64) -> Place {
        let addr = sector * SECTOR;
        let real = |a: u64| Place::Real(a / SECTOR);
        match self.mode {
            Mode::Genuine => real(addr),
            Mode::Wrap => real(addr % self.real),
            Mode::Limbo(_) | Mode::LimboStale if addr < self.real => real(addr),
            Mode::Limbo(_) | Mode::LimboStale => Place::Limbo,
            Mode::Chain(wrap) if addr % wrap < self.real => real(addr % wrap),
            Mode::Chain(_) => Place::Limbo,
            Mode::Eio if addr < self.real => real(addr),
            Mode::Eio => Place::Error,
        }
    }

    fn read_sector(&mut self, sector: u64, out: &mut [u8]) -> io::Result<()> {
        if let Some(cached) = self.cache.get(&sector) {
            out.copy_from_slice(cached);
            return Ok(());
        }
        match self.place(sector) {
            Place::Real(phys) => match self.data.get(&phys) {
                Some(stored) => out.copy_from_slice(stored),
                None => {
                    for (i, chunk) in out.chunks_mut(8).enumerate() {
                        let v = crate::stamp::hash64(self.seed ^ (phys * 512 + i as u64));
                        chunk.copy_from_slice(&v.to_le_bytes());
                    }
                }
            },
            Place::Error => return Err(io::Error::from_raw_os_error(libc::EIO)),
            Place::Limbo => match self.mode {
                Mode::Limbo(byte) => out.fill(byte),
                Mode::LimboStale => {
                    for (i, chunk) in out.chunks_mut(8).enumerate() {
                        chunk.copy_from_slice(&crate::stamp::hash64(sector * 512 + i as u64).to_le_bytes());
                    }
                }
                _ => out.fill(0),
            },
        }
        Ok(())
    }

    fn write_sector(&mut self, sector: u64, data: &[u8]) -> io::Result<()> {
        let place = self.place(sector);
        if let Place::Error = place {
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        if let Place::Real(phys) = place {
            self.data.insert(phys, data.to_vec());
        }
        if self.cache_sectors > 0 {
            if self.cache.insert(sector, data.to_vec()).is_some() {
                self.order.retain(|&s| s != sector);
            }
            self.order.push_back(sector);
            while self.order.len() > self.cache_sectors {
                if let Some(old) = self.order.pop_front() {
                    self.cache.remove(&old);
                }
            }
        }
        Ok(())
    }
}

impl Disk for SimDisk {
    fn size(&self) -> u64 {
        self.announced
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        assert!(offset % SECTOR == 0 && buf.len() as u64 % SECTOR == 0, "unaligned read");
        if offset + buf.len() as u64 > self.announced {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        for (i, chunk) in buf.chunks_mut(SECTOR as usize).enumerate() {
            self.read_sector(offset / SECTOR + i as u64, chunk)?;
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        assert!(offset % SECTOR == 0 && buf.len() as u64 % SECTOR == 0, "unaligned write");
        if offset + buf.len() as u64 > self.announced {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        self.writes += 1;
        if self.die_at_write == Some(self.writes) {
            panic!("simulated kill -9 at write {}", self.writes);
        }
        self.bytes_written += buf.len() as u64;
        for (i, chunk) in buf.chunks(SECTOR as usize).enumerate() {
            self.write_sector(offset / SECTOR + i as u64, chunk)?;
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }
}
