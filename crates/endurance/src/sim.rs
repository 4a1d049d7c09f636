//! Cards that wear out, in memory, for the unit tests: each block has an
//! endurance drawn from a distribution (how many writes it takes before
//! it wears), worn blocks misbehave in one of the ways real flash does,
//! and the card as a whole can die, be pulled, or be a counterfeit.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use storage_capacity::Disk;

use crate::pattern::splitmix;
use crate::{Slot, Watch};

const BLOCK: usize = 4096;

/// What a worn block does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worn {
    /// Its writes fail.
    Fails,
    /// Its writes are acknowledged and dropped: the old data stays.
    KeepsOld,
    /// It reads back another block's data.
    OtherBlock,
    /// It reads back damaged data.
    Garbage,
}

/// How the card as a whole dies, once this many bytes were written to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Death {
    /// Every write fails with EIO; reads work.
    ReadOnly,
    /// Every write is acknowledged and dropped.
    IgnoresWrites,
    /// Every request fails with ENODEV, and it never comes back.
    Vanishes,
    /// Pulled: ENODEV until the slot gives it back.
    Pulled,
}

#[derive(Debug)]
pub struct Inner {
    data: Vec<u8>,
    /// The storage behind the announced size (less for a counterfeit).
    real_blocks: u64,
    announced: u64,
    pub endurance: Vec<u32>,
    pub writes: Vec<u32>,
    worn: Worn,
    death: Option<(u64, Death)>,
    /// Deaths count from when the test arms them (after the capacity check).
    pub armed: bool,
    pub written: u64,
    gone: bool,
}

/// A handle on a card; clones share it.
#[derive(Debug, Clone)]
pub struct WearCard(pub Arc<Mutex<Inner>>);

impl WearCard {
    /// A card of `blocks` 4 KiB blocks whose blocks wear after a number of
    /// writes drawn evenly from [mean/2, 3·mean/2), one in a hundred of
    /// them (weak blocks) after a quarter of the mean; `seed` draws them.
    pub fn new(blocks: u64, mean: u32, worn: Worn, seed: u64) -> WearCard {
        let mut state = seed;
        let endurance = (0..blocks)
            .map(|_| {
                let r = splitmix(&mut state);
                if r % 100 == 0 { mean / 4 } else { mean / 2 + (r >> 8) as u32 % mean.max(1) }
            })
            .collect();
        let inner = Inner {
            data: vec![0; (blocks as usize) * BLOCK],
            real_blocks: blocks,
            announced: blocks * BLOCK as u64,
            endurance,
            writes: vec![0; blocks as usize],
            worn,
            death: None,
            armed: false,
            written: 0,
            gone: false,
        };
        WearCard(Arc::new(Mutex::new(inner)))
    }

    /// The card dies so after `bytes` written.
    pub fn dies(self, bytes: u64, death: Death) -> WearCard {
        self.0.lock().expect("card").death = Some((bytes, death));
        self
    }

    /// A counterfeit: it announces `factor` times its storage, and
    /// addresses past it wrap around onto it.
    pub fn wrapping(self, factor: u64) -> WearCard {
        self.0.lock().expect("card").announced *= factor;
        self
    }

    /// The pass in which each block fails, given how often each was
    /// written before the first pass (`before`): the card's own truth.
    pub fn failing_pass(&self, before: &[u32]) -> Vec<u32> {
        let inner = self.0.lock().expect("card");
        inner.endurance.iter().zip(before).map(|(&e, &b)| (e + 1).saturating_sub(b).max(1)).collect()
    }
}

/// `len` bytes at `offset` cut at block boundaries: (device offset, range
/// of the buffer).
fn pieces(offset: u64, len: usize) -> Vec<(u64, std::ops::Range<usize>)> {
    let mut out = Vec::new();
    let mut done = 0;
    while done < len {
        let at = offset + done as u64;
        let n = (BLOCK - (at % BLOCK as u64) as usize).min(len - done);
        out.push((at, done..done + n));
        done += n;
    }
    out
}

fn gone() -> io::Error {
    io::Error::from_raw_os_error(libc::ENODEV)
}

impl Inner {
    fn dead(&self) -> Option<Death> {
        self.death.filter(|&(at, _)| self.armed && self.written >= at).map(|(_, d)| d)
    }

    fn block_of(&self, offset: u64) -> usize {
        ((offset / BLOCK as u64) % self.real_blocks) as usize
    }

    fn is_worn(&self, block: usize) -> bool {
        self.writes[block] > self.endurance[block]
    }
}

impl Disk for WearCard {
    fn size(&self) -> u64 {
        self.0.lock().expect("card").announced
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let inner = self.0.lock().expect("card");
        if inner.gone || matches!(inner.dead(), Some(Death::Vanishes | Death::Pulled)) {
            return Err(gone());
        }
        for (at, out) in pieces(offset, buf.len()) {
            let block = inner.block_of(at);
            let from = if inner.worn == Worn::OtherBlock && inner.is_worn(block) {
                (block + 7) % inner.real_blocks as usize
            } else {
                block
            };
            let start = from * BLOCK + (at % BLOCK as u64) as usize;
            let dest = &mut buf[out.clone()];
            dest.copy_from_slice(&inner.data[start..start + dest.len()]);
            if inner.worn == Worn::Garbage && inner.is_worn(block) {
                dest[0] ^= 0x10;
            }
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut inner = self.0.lock().expect("card");
        if inner.gone {
            return Err(gone());
        }
        match inner.dead() {
            Some(Death::Vanishes | Death::Pulled) => {
                if inner.dead() == Some(Death::Pulled) {
                    inner.gone = true;
                    inner.death = None;
                }
                return Err(gone());
            }
            Some(Death::ReadOnly) => return Err(io::Error::from_raw_os_error(libc::EIO)),
            Some(Death::IgnoresWrites) => return Ok(()),
            None => {}
        }
        let pieces = pieces(offset, buf.len());
        let blocks: Vec<usize> = pieces.iter().map(|(at, _)| inner.block_of(*at)).collect();
        // A request that reaches a block failing its writes fails whole,
        // before anything is written (as a card's controller would).
        if inner.worn == Worn::Fails && blocks.iter().any(|&b| inner.writes[b] >= inner.endurance[b]) {
            for &b in &blocks {
                if inner.writes[b] >= inner.endurance[b] {
                    inner.writes[b] = inner.writes[b].max(inner.endurance[b] + 1);
                }
            }
            return Err(io::Error::from_raw_os_error(libc::EIO));
        }
        for ((at, src), &block) in pieces.iter().zip(&blocks) {
            inner.writes[block] = inner.writes[block].saturating_add(1);
            if inner.worn == Worn::KeepsOld && inner.is_worn(block) {
                continue;
            }
            let start = block * BLOCK + (at % BLOCK as u64) as usize;
            let src = &buf[src.clone()];
            inner.data[start..start + src.len()].copy_from_slice(src);
        }
        inner.written += buf.len() as u64;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let inner = self.0.lock().expect("card");
        if inner.gone || inner.dead() == Some(Death::Vanishes) { Err(gone()) } else { Ok(()) }
    }
}

/// A slot that gives the card back (after a pull) or not (it vanished).
#[derive(Debug)]
pub struct SimSlot {
    pub card: WearCard,
    pub gives_back: bool,
}

impl Slot for SimSlot {
    fn reattach(
        &mut self,
        _gone: Box<dyn Disk + Send>,
        _wait: Duration,
        _watch: &dyn Watch,
    ) -> Option<Box<dyn Disk + Send>> {
        if !self.gives_back {
            return None;
        }
        let mut inner = self.card.0.lock().expect("card");
        if inner.dead() == Some(Death::Vanishes) {
            return None;
        }
        inner.gone = false;
        drop(inner);
        Some(Box::new(self.card.clone()))
    }
}
