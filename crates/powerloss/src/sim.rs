//! A fault model for the engine's unit tests: an in-memory card with a
//! volatile write cache that a power cut empties (honest, or one that
//! ignores flushes), behind a [`Host`] whose power switch is a flag. The
//! end-to-end tests use a real loop device over a FUSE card instead
//! (tests/cli/power_loss.rs).

use std::io;
use std::sync::{Arc, Mutex};

use storage_capacity::Disk;

use crate::engine::{Device, Host};

#[derive(Debug)]
struct State {
    medium: Vec<u8>,
    /// Cached writes in order: offset, bytes, whether a flush returned
    /// while it was cached.
    cache: Vec<(u64, Vec<u8>, bool)>,
    honours_flush: bool,
    powered: bool,
    /// Bumped at each cut: a handle from before it answers nothing.
    epoch: u32,
    returns: bool,
    /// Acknowledged writes a cut dropped (the card's own count).
    dropped_acknowledged: u64,
}

#[derive(Debug, Clone)]
pub struct Card(Arc<Mutex<State>>);

impl Card {
    pub fn new(bytes: usize, honours_flush: bool) -> Card {
        Card(Arc::new(Mutex::new(State {
            medium: vec![0; bytes],
            cache: Vec::new(),
            honours_flush,
            powered: true,
            epoch: 0,
            returns: true,
            dropped_acknowledged: 0,
        })))
    }

    pub fn disk(&self) -> Device {
        let epoch = self.0.lock().unwrap().epoch;
        Box::new(SimDisk { card: self.clone(), epoch })
    }

    pub fn never_return(&self) {
        self.0.lock().unwrap().returns = false;
    }

    pub fn dropped_acknowledged(&self) -> u64 {
        self.0.lock().unwrap().dropped_acknowledged
    }
}

#[derive(Debug)]
struct SimDisk {
    card: Card,
    epoch: u32,
}

impl SimDisk {
    fn live(&self) -> io::Result<std::sync::MutexGuard<'_, State>> {
        let state = self.card.0.lock().unwrap();
        if state.powered && state.epoch == self.epoch { Ok(state) } else { Err(io::Error::from_raw_os_error(5)) }
    }
}

impl Disk for SimDisk {
    fn size(&self) -> u64 {
        self.card.0.lock().unwrap().medium.len() as u64
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        let state = self.live()?;
        let at = offset as usize;
        buf.copy_from_slice(&state.medium[at..at + buf.len()]);
        for (o, bytes, _) in &state.cache {
            for (i, b) in bytes.iter().enumerate() {
                let pos = *o as usize + i;
                if (at..at + buf.len()).contains(&pos) {
                    buf[pos - at] = *b;
                }
            }
        }
        Ok(())
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        let mut state = self.live()?;
        state.cache.push((offset, buf.to_vec(), false));
        // A small cache: the oldest write goes to the medium when full.
        if state.cache.len() > 64 {
            let (o, bytes, _) = state.cache.remove(0);
            state.medium[o as usize..o as usize + bytes.len()].copy_from_slice(&bytes);
        }
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        let mut state = self.live()?;
        if state.honours_flush {
            for (o, bytes, _) in std::mem::take(&mut state.cache) {
                state.medium[o as usize..o as usize + bytes.len()].copy_from_slice(&bytes);
            }
        } else {
            state.cache.iter_mut().for_each(|e| e.2 = true);
        }
        Ok(())
    }
}

/// The power switch.
#[derive(Debug)]
pub struct SimHost(pub Card);

impl Host for SimHost {
    fn power_off(&mut self) -> Result<(), crate::Error> {
        let mut state = self.0.0.lock().unwrap();
        let dropped: u64 = state.cache.iter().filter(|e| e.2).map(|e| e.1.len() as u64 / 4096).sum();
        state.dropped_acknowledged += dropped;
        state.cache.clear();
        state.powered = false;
        state.epoch += 1;
        Ok(())
    }

    fn power_on(&mut self) -> Result<(), crate::Error> {
        let mut state = self.0.0.lock().unwrap();
        state.powered = state.returns;
        Ok(())
    }

    fn find(&mut self) -> Result<Option<Device>, crate::Error> {
        Ok(if self.0.0.lock().unwrap().powered { Some(self.0.disk()) } else { None })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use storage_capacity::Quiet;
    use storage_scoring::power_loss::{PowerLossVerdict, Totals};

    use super::*;
    use crate::engine::{Options, run};

    fn options(cycles: u32) -> Options {
        Options { cycles, cut_within: Duration::from_millis(40), wait: Duration::from_millis(300), run: [3; 16] }
    }

    #[test]
    fn an_honest_card_keeps_everything_over_many_cuts() {
        let card = Card::new(4 << 20, true);
        let cycles = run(card.disk(), &mut SimHost(card.clone()), &options(12), &Quiet).expect("run");
        let totals = Totals::of(&cycles);
        assert_eq!(totals.verdict(), PowerLossVerdict::Kept, "{cycles:?}");
        assert_eq!((totals.cycles, totals.returned), (12, 12));
        assert!(totals.acknowledged > 100, "{totals:?}");
        assert!(cycles.iter().all(|c| c.written >= c.acknowledged && c.back_after_s.is_some()));
    }

    #[test]
    fn a_card_that_ignores_flushes_loses_exactly_what_it_dropped() {
        let card = Card::new(4 << 20, false);
        let cycles = run(card.disk(), &mut SimHost(card.clone()), &options(6), &Quiet).expect("run");
        let totals = Totals::of(&cycles);
        assert_eq!(totals.verdict(), PowerLossVerdict::Lost, "{cycles:?}");
        assert_eq!(totals.lost + totals.torn, card.dropped_acknowledged(), "{cycles:?}");
        assert_eq!(totals.damaged + totals.misplaced, 0);
    }

    #[test]
    fn a_card_that_never_returns_ends_the_run() {
        let card = Card::new(1 << 20, true);
        card.never_return();
        let cycles = run(card.disk(), &mut SimHost(card.clone()), &options(5), &Quiet).expect("run");
        assert_eq!(cycles.len(), 1);
        assert_eq!((cycles[0].returned, cycles[0].back_after_s), (0, None));
        assert_eq!(Totals::of(&cycles).verdict(), PowerLossVerdict::DidNotReturn);
    }
}
