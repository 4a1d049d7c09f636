//! The probe's device I/O, with the backup rule built in: a block is
//! written with this run's stamp only after its current content is durable
//! in the journal. The other writes are *rewrites*: a cache flush that
//! reads a stretch and writes the very same bytes back, so it changes
//! nothing and needs no backup (a `kill -9` mid-write leaves the same bytes
//! either way), yet a write cache must take it like any other write.
//!
//! Every read of data the card may have moved is decoded with the stamp
//! ([`crate::stamp`]): it names its own address, another one, or foreign
//! data. Reads in scans look for a stamp at every sector offset, because a
//! card whose real size is not a multiple of 4 KiB shifts blocks by sectors.

use std::collections::{HashSet, VecDeque};
use std::io;

use super::evidence::Hit;
use super::geometry::{BLOCK, CHUNK};
use super::{ProbeError, Watch};
use crate::disk::{AlignedBuf, Disk};
use crate::journal::Journal;
use crate::stamp::{MAGIC, Seen, Stamp};

/// The device, the journal and the counters of one probe.
pub struct Io<'a> {
    disk: &'a mut dyn Disk,
    journal: Option<&'a mut Journal>,
    pub stamp: Stamp,
    /// The device's logical sector: the smallest unit written.
    pub sector: u64,
    /// Blocks (by index) and sectors (by index) whose content is journaled.
    backed_blocks: HashSet<u64>,
    backed_sectors: HashSet<u64>,
    pub written: u64,
    pub read: u64,
    /// The latest writes, as (start, end, `written` after it), so that a
    /// read can be known to be of an address a cache may still answer for.
    recent: VecDeque<(u64, u64, u64)>,
    watch: &'a dyn Watch,
    block: AlignedBuf,
    window: AlignedBuf,
    small: AlignedBuf,
    chunk: AlignedBuf,
    /// The next chunk of stamps, made while the last one is written.
    spare: AlignedBuf,
    /// The blocks of a scan's reads.
    probes: AlignedBuf,
    pub notes: Vec<String>,
}

impl<'a> Io<'a> {
    pub fn new(disk: &'a mut dyn Disk, journal: Option<&'a mut Journal>, nonce: u64, watch: &'a dyn Watch) -> Io<'a> {
        let sector = disk.sector().clamp(512, BLOCK);
        Io {
            disk,
            journal,
            stamp: Stamp::new(nonce),
            sector,
            backed_blocks: HashSet::new(),
            backed_sectors: HashSet::new(),
            written: 0,
            read: 0,
            recent: VecDeque::new(),
            watch,
            block: AlignedBuf::new(BLOCK as usize),
            window: AlignedBuf::new(2 * BLOCK as usize),
            small: AlignedBuf::new(sector as usize),
            chunk: AlignedBuf::new(CHUNK as usize),
            spare: AlignedBuf::new(CHUNK as usize),
            probes: AlignedBuf::new(0),
            notes: Vec::new(),
        }
    }

    pub fn size(&self) -> u64 {
        self.disk.size()
    }

    /// Whether what is written is backed up first (no `--destructive`).
    pub fn journaled(&self) -> bool {
        self.journal.is_some()
    }

    pub fn check_stop(&self) -> Result<(), ProbeError> {
        match self.watch.stop() {
            Some(signal) => Err(ProbeError::Interrupted(signal)),
            None => Ok(()),
        }
    }

    pub fn stage(&self, what: &str) {
        self.watch.stage(what);
    }

    /// Backs up single blocks; returns those that could not be read (bad
    /// already, and never written).
    pub fn backup_blocks(&mut self, offsets: &[u64]) -> Result<HashSet<u64>, ProbeError> {
        self.backup_units(offsets, BLOCK)
    }

    /// Backs up single sectors, like [`Io::backup_blocks`].
    pub fn backup_sectors(&mut self, offsets: &[u64]) -> Result<HashSet<u64>, ProbeError> {
        self.backup_units(offsets, self.sector)
    }

    fn backup_units(&mut self, offsets: &[u64], len: u64) -> Result<HashSet<u64>, ProbeError> {
        let mut unreadable = HashSet::new();
        if self.journal.is_none() {
            return Ok(unreadable);
        }
        for &offset in offsets {
            if self.is_backed(offset, len) {
                continue;
            }
            self.check_stop()?;
            self.read += len;
            let buf = if len == BLOCK { self.block.as_mut_slice() } else { self.small.as_mut_slice() };
            match self.disk.read_at(offset, buf) {
                Ok(()) => {
                    let data = if len == BLOCK { self.block.as_slice() } else { self.small.as_slice() };
                    if let Some(journal) = self.journal.as_deref_mut() {
                        journal.append(offset, data).map_err(ProbeError::Journal)?;
                    }
                    self.mark_backed(offset, len);
                }
                Err(_) => {
                    unreadable.insert(offset);
                }
            }
        }
        self.commit()?;
        Ok(unreadable)
    }

    fn note_write(&mut self, at: u64, len: u64) {
        self.written += len;
        self.recent.push_back((at, at + len, self.written));
        // A cache of more than this is not looked through anyway.
        const HORIZON: u64 = 2 << 30;
        while self.recent.front().is_some_and(|&(_, _, w)| w + HORIZON < self.written) {
            self.recent.pop_front();
        }
    }

    /// Whether any of `[start, end)` was written within the last `bytes`
    /// written: a write cache that large may still answer for it with what
    /// was written there, even if a write through an alias has since
    /// changed the storage behind it.
    pub fn written_lately(&self, start: u64, end: u64, bytes: u64) -> bool {
        let since = self.written.saturating_sub(bytes);
        self.recent.iter().rev().take_while(|&&(_, _, w)| w > since).any(|&(s, e, _)| s < end && start < e)
    }

    /// Blocks holding (or about to hold) this run's stamps, within
    /// `[start, end)`, sorted: a flush leaves them alone, because a cache
    /// may still answer for them with a stamp their storage no longer
    /// holds, and rewriting that would damage another probe's stamp.
    pub fn stamped_within(&self, start: u64, end: u64) -> Vec<u64> {
        let mut blocks: Vec<u64> = self
            .backed_blocks
            .iter()
            .map(|b| b * BLOCK)
            .chain(self.backed_sectors.iter().map(|s| s * self.sector / BLOCK * BLOCK))
            .filter(|&b| b + BLOCK > start && b < end)
            .collect();
        blocks.sort_unstable();
        blocks.dedup();
        blocks
    }

    fn is_backed(&self, offset: u64, len: u64) -> bool {
        if self.backed_blocks.contains(&(offset / BLOCK)) {
            return true;
        }
        len < BLOCK && self.backed_sectors.contains(&(offset / self.sector))
    }

    fn mark_backed(&mut self, offset: u64, len: u64) {
        if len >= BLOCK {
            self.backed_blocks.extend(offset / BLOCK..(offset + len) / BLOCK);
        } else {
            self.backed_sectors.insert(offset / self.sector);
        }
    }

    fn commit(&mut self) -> Result<(), ProbeError> {
        match self.journal.as_deref_mut() {
            Some(journal) => journal.commit().map_err(ProbeError::Journal),
            None => Ok(()),
        }
    }

    /// Backs up whole extents, a chunk at a time; returns unreadable blocks.
    pub fn backup_extents(&mut self, extents: &[(u64, u64)]) -> Result<HashSet<u64>, ProbeError> {
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
                    (at / BLOCK..(at + len) / BLOCK).filter(|b| !self.backed_blocks.contains(b)).collect();
                if missing.len() as u64 == len / BLOCK {
                    let buf = &mut self.chunk.as_mut_slice()[..len as usize];
                    self.read += len;
                    if self.disk.read_at(at, buf).is_ok() {
                        if let Some(journal) = self.journal.as_deref_mut() {
                            journal.append(at, &self.chunk.as_slice()[..len as usize]).map_err(ProbeError::Journal)?;
                        }
                        self.backed_blocks.extend(missing);
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
        self.commit()?;
        Ok(unreadable)
    }

    /// Writes this run's block for `offset`.
    pub fn write_block(&mut self, offset: u64) -> io::Result<()> {
        debug_assert!(self.journal.is_none() || self.backed_blocks.contains(&(offset / BLOCK)));
        self.stamp.fill(offset, self.block.as_mut_slice());
        self.note_write(offset, BLOCK);
        self.disk.write_at(offset, self.block.as_slice())
    }

    /// Writes this run's sector-sized stamp for `offset`.
    pub fn write_sector(&mut self, offset: u64) -> io::Result<()> {
        debug_assert!(self.journal.is_none() || self.is_backed(offset, self.sector));
        self.stamp.fill(offset, self.small.as_mut_slice());
        self.note_write(offset, self.sector);
        self.disk.write_at(offset, self.small.as_slice())
    }

    /// Writes stamped blocks over `[start, end)` in ascending order,
    /// skipping `unreadable` ones. Returns the bytes the device accepted.
    pub fn write_extent(&mut self, start: u64, end: u64, unreadable: &HashSet<u64>) -> Result<u64, ProbeError> {
        self.write_chunks(&chunks(start, end), unreadable)
    }

    /// Writes stamped blocks over `[start, end)` from the top down, `step`
    /// bytes at a time: where two of them share storage, the lower one is
    /// written last and keeps its stamp (as probe blocks do).
    pub fn write_extent_down(
        &mut self,
        start: u64,
        end: u64,
        step: u64,
        unreadable: &HashSet<u64>,
    ) -> Result<u64, ProbeError> {
        let step = step.max(BLOCK) / BLOCK * BLOCK;
        let mut pieces = Vec::new();
        let mut top = end;
        while top > start {
            let from = top.saturating_sub(step).max(start);
            pieces.extend(chunks(from, top));
            top = from;
        }
        self.write_chunks(&pieces, unreadable)
    }

    /// Writes stamped blocks over each chunk (at most [`CHUNK`] bytes, on
    /// the block grid), in the order given, skipping `unreadable` blocks.
    /// The next chunk's stamps are made while the device takes this one.
    fn write_chunks(&mut self, pieces: &[(u64, u64)], unreadable: &HashSet<u64>) -> Result<u64, ProbeError> {
        let clean = |&(at, end): &(u64, u64)| {
            unreadable.is_empty() || (at..end).step_by(BLOCK as usize).all(|b| !unreadable.contains(&b))
        };
        let stamp = self.stamp;
        let mut accepted = 0;
        // Whether `self.chunk` holds the stamps of the piece about to be written.
        let mut ready = false;
        for (i, &(at, end)) in pieces.iter().enumerate() {
            self.check_stop()?;
            let len = (end - at) as usize;
            if !clean(&(at, end)) {
                for b in (at..end).step_by(BLOCK as usize).filter(|b| !unreadable.contains(b)) {
                    if self.write_block(b).is_ok() {
                        accepted += BLOCK;
                    }
                }
                ready = false;
                continue;
            }
            if !ready {
                stamp.fill_run(at, BLOCK as usize, &mut self.chunk.as_mut_slice()[..len]);
            }
            let next = pieces.get(i + 1).filter(|p| clean(p)).copied();
            self.note_write(at, len as u64);
            let disk = &mut *self.disk;
            let (now, spare) = (&self.chunk, &mut self.spare);
            let wrote = std::thread::scope(|scope| {
                if let Some((next_at, next_end)) = next {
                    let buf = &mut spare.as_mut_slice()[..(next_end - next_at) as usize];
                    scope.spawn(move || stamp.fill_run(next_at, BLOCK as usize, buf));
                }
                disk.write_at(at, &now.as_slice()[..len])
            });
            if wrote.is_ok() {
                accepted += len as u64;
            }
            ready = next.is_some();
            std::mem::swap(&mut self.chunk, &mut self.spare);
        }
        Ok(accepted)
    }

    /// Reads the block at `offset` and says what it holds.
    pub fn read_block(&mut self, offset: u64) -> Result<Seen, ()> {
        self.read += BLOCK;
        self.disk.read_at(offset, self.block.as_mut_slice()).map_err(|_| ())?;
        Ok(self.stamp.check(offset, self.block.as_slice()))
    }

    /// Reads the sector at `offset` and says what it holds. A sector of a
    /// block stamp is no stamp by itself: one that is the matching sector
    /// of `decoy`'s block reads as the decoy (limbo answering with the last
    /// block written).
    pub fn read_sector(&mut self, offset: u64, decoy: Option<u64>) -> Result<Seen, ()> {
        self.read += self.sector;
        self.disk.read_at(offset, self.small.as_mut_slice()).map_err(|_| ())?;
        let seen = self.stamp.check(offset, self.small.as_slice());
        if let (Seen::Foreign(_), Some(decoy)) = (seen, decoy) {
            let mut block = vec![0u8; BLOCK as usize];
            self.stamp.fill(decoy, &mut block);
            let at = (offset % BLOCK) as usize;
            if block[at..at + self.sector as usize] == *self.small.as_slice() {
                return Ok(Seen::Alias(decoy));
            }
        }
        Ok(seen)
    }

    /// The lowest address from which the sectors of `unit` (`len` bytes,
    /// read back as its own) share storage with the addresses `shift`
    /// below: their content there is this run's stamp for `unit`. Only
    /// sectors at `from` or above are looked at (below, `shift` reaches
    /// under byte 0). A unit that straddles the start of a wrapping piece
    /// shares only its upper sectors.
    pub fn alias_from(&mut self, unit: u64, len: u64, from: u64, shift: u64) -> Option<u64> {
        let end = unit + len;
        if from >= end || from < unit || from < shift {
            return None;
        }
        let bytes = (end - from) as usize;
        let mut expected = vec![0u8; len as usize];
        self.stamp.fill(unit, &mut expected);
        self.read += bytes as u64;
        let buf = &mut self.window.as_mut_slice()[..bytes];
        self.disk.read_at(from - shift, buf).ok()?;
        let got = &self.window.as_slice()[..bytes];
        let want = &expected[(from - unit) as usize..];
        let sector = self.sector as usize;
        let same = |i: usize| got[i * sector..(i + 1) * sector] == want[i * sector..(i + 1) * sector];
        let sectors = bytes / sector;
        let matching = (0..sectors).rev().take_while(|&i| same(i)).count();
        (matching > 0).then(|| end - (matching * sector) as u64)
    }

    /// Reads two blocks at `offset` and looks for a stamp of this run that
    /// was written elsewhere, at any sector offset.
    pub fn read_window(&mut self, offset: u64) -> Result<Option<Hit>, ()> {
        let len = (2 * BLOCK).min(self.size().saturating_sub(offset) / BLOCK * BLOCK);
        if len < BLOCK {
            return Ok(None);
        }
        self.read += len;
        let buf = &mut self.window.as_mut_slice()[..len as usize];
        self.disk.read_at(offset, buf).map_err(|_| ())?;
        Ok(find_stamp(&self.stamp, offset, &self.window.as_slice()[..len as usize], self.sector))
    }

    /// Reads one block at each of `points` (a scan's), a few in flight at
    /// once, and says for each what stamp of this run it holds that was
    /// written elsewhere ([`prefix_stamp`]): `Err` for a read that failed,
    /// `None` past the last whole block.
    pub fn read_probes(&mut self, points: &[u64]) -> Vec<Result<Option<Hit>, ()>> {
        let size = self.size();
        let inside: Vec<u64> = points.iter().copied().filter(|&at| at + BLOCK <= size).collect();
        let len = (inside.len() as u64 * BLOCK) as usize;
        if self.probes.len() < len {
            self.probes = AlignedBuf::new(len);
        }
        let buf = &mut self.probes.as_mut_slice()[..len];
        let results = self.disk.read_each(&inside, buf);
        self.read += len as u64;
        let mut seen = inside.iter().zip(results).zip(self.probes.as_slice()[..len].chunks(BLOCK as usize));
        points
            .iter()
            .map(|&at| {
                if at + BLOCK > size {
                    return Ok(None);
                }
                match seen.next() {
                    Some(((_, Ok(())), data)) => Ok(prefix_stamp(&self.stamp, at, data, self.sector)),
                    _ => Err(()),
                }
            })
            .collect()
    }

    /// Rewrites `extents` with what they hold, a chunk at a time: the cache
    /// flush. Returns the bytes rewritten and every stamp of this run found
    /// at an address it was not written to.
    pub fn rewrite(&mut self, extents: &[(u64, u64)]) -> Result<(u64, Vec<Hit>), ProbeError> {
        let mut done = 0;
        let mut hits = Vec::new();
        for &(start, end) in extents {
            let mut at = start;
            while at < end {
                self.check_stop()?;
                let len = (end - at).min(CHUNK);
                done += self.rewrite_chunk(at, len, &mut hits)?;
                at += len;
            }
        }
        Ok((done, hits))
    }

    fn rewrite_chunk(&mut self, at: u64, len: u64, hits: &mut Vec<Hit>) -> Result<u64, ProbeError> {
        self.read += len;
        if self.disk.read_at(at, &mut self.chunk.as_mut_slice()[..len as usize]).is_err() {
            // Block by block: the ones that read are rewritten.
            let mut done = 0;
            for b in (at..at + len).step_by(BLOCK as usize) {
                done += self.rewrite_chunk_block(b, hits)?;
            }
            return Ok(done);
        }
        collect_stamps(&self.stamp, at, &self.chunk.as_slice()[..len as usize], self.sector, hits);
        self.note_write(at, len);
        if self.disk.write_at(at, &self.chunk.as_slice()[..len as usize]).is_err() {
            self.journal_after_failed_rewrite(at, len)?;
        }
        Ok(len)
    }

    fn rewrite_chunk_block(&mut self, at: u64, hits: &mut Vec<Hit>) -> Result<u64, ProbeError> {
        self.read += BLOCK;
        if self.disk.read_at(at, self.block.as_mut_slice()).is_err() {
            return Ok(0);
        }
        collect_stamps(&self.stamp, at, self.block.as_slice(), self.sector, hits);
        self.note_write(at, BLOCK);
        if self.disk.write_at(at, self.block.as_slice()).is_err() {
            let data = self.block.as_slice().to_vec();
            self.journal_data(at, &data)?;
        }
        Ok(BLOCK)
    }

    /// A rewrite the card refused may have left its bytes damaged: the
    /// bytes read just before go to the journal, so that the restore (or
    /// the next start) writes them back.
    fn journal_after_failed_rewrite(&mut self, at: u64, len: u64) -> Result<(), ProbeError> {
        let data = self.chunk.as_slice()[..len as usize].to_vec();
        self.journal_data(at, &data)
    }

    fn journal_data(&mut self, at: u64, data: &[u8]) -> Result<(), ProbeError> {
        self.notes.push(format!(
            "the card refused to rewrite {} bytes at byte {at} with their own content; they are in the journal and were restored",
            data.len()
        ));
        if let Some(journal) = self.journal.as_deref_mut() {
            journal.append(at, data).map_err(ProbeError::Journal)?;
            journal.commit().map_err(ProbeError::Journal)?;
        }
        Ok(())
    }
}

/// `[start, end)` in pieces of at most [`CHUNK`] bytes, ascending, on the
/// block grid (stamps come in whole blocks: a partial one would write what
/// the buffer held before, over bytes that were never backed up).
fn chunks(start: u64, end: u64) -> Vec<(u64, u64)> {
    debug_assert!(start % BLOCK == 0 && end % BLOCK == 0, "run {start}..{end} off the block grid");
    let end = start + end.saturating_sub(start) / BLOCK * BLOCK;
    (start..end).step_by(CHUNK as usize).map(|at| (at, (at + CHUNK).min(end))).collect()
}

/// The first stamp of this run in `data` (read at `at`) that names another
/// address, looking at every sector offset.
pub fn find_stamp(stamp: &Stamp, at: u64, data: &[u8], sector: u64) -> Option<Hit> {
    stamps_in(stamp, at, data, sector).next()
}

/// The stamp of this run, written to another address, whose first sector
/// starts in `data` (one block read at `at`) at a sector offset, with
/// every byte of it that `data` holds as written: at least its first
/// sector, header and checksum field included, and the whole block when
/// it starts at `at`. A block's worth of reads finds the stamp of any
/// block whose storage it lies in, at whatever sector offset.
pub fn prefix_stamp(stamp: &Stamp, at: u64, data: &[u8], sector: u64) -> Option<Hit> {
    let mut expected = Vec::new();
    (0..data.len()).step_by(sector as usize).find_map(|o| {
        let of = stamp.header_offset(&data[o..])?;
        if of == at + o as u64 {
            return None;
        }
        expected.resize(BLOCK as usize, 0);
        stamp.fill(of, &mut expected);
        let seen = &data[o..];
        (seen.len() <= expected.len() && *seen == expected[..seen.len()]).then_some(Hit { at: at + o as u64, of })
    })
}

fn collect_stamps(stamp: &Stamp, at: u64, data: &[u8], sector: u64, hits: &mut Vec<Hit>) {
    hits.extend(stamps_in(stamp, at, data, sector));
}

fn stamps_in<'s>(stamp: &'s Stamp, at: u64, data: &'s [u8], sector: u64) -> impl Iterator<Item = Hit> + 's {
    let block = BLOCK as usize;
    (0..data.len().saturating_sub(block - 1)).step_by(sector as usize).filter_map(move |o| {
        if data[o..o + 8] != MAGIC {
            return None;
        }
        match stamp.check(at + o as u64, &data[o..o + block]) {
            Seen::Alias(of) => Some(Hit { at: at + o as u64, of }),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_found_at_a_sector_offset() {
        let stamp = Stamp::new(5);
        let mut data = vec![0u8; 8192];
        stamp.fill(1 << 30, &mut data[1536..1536 + 4096]);
        assert_eq!(find_stamp(&stamp, 4096, &data, 512), Some(Hit { at: 4096 + 1536, of: 1 << 30 }));
        // Its own stamp is no hit; another run's neither.
        assert_eq!(find_stamp(&stamp, (1 << 30) - 1536, &data, 512), None);
        assert_eq!(find_stamp(&Stamp::new(6), 4096, &data, 512), None);
    }

    #[test]
    fn a_block_read_finds_the_stamp_that_starts_in_it() {
        let stamp = Stamp::new(5);
        // Two stamps side by side, read a block at a time from every sector.
        let mut data = vec![0u8; 3 * 4096];
        stamp.fill(1 << 30, &mut data[..4096]);
        stamp.fill((1 << 30) + 4096, &mut data[4096..8192]);
        let at = 1 << 20;
        for o in (0..=4096).step_by(512) {
            let seen = prefix_stamp(&stamp, at + o as u64, &data[o..o + 4096], 512);
            let next = o.div_ceil(4096) * 4096;
            assert_eq!(seen, Some(Hit { at: at + next as u64, of: (1 << 30) + next as u64 }), "{o}");
        }
        // After the second stamp, zeros: a stamp cut short is no stamp.
        assert_eq!(prefix_stamp(&stamp, at + 4608, &data[4608 + 4096..], 512), None);
        assert_eq!(prefix_stamp(&stamp, at + 8192, &data[8192..], 512), None);
        // One byte changed anywhere that was read: none (but for bytes
        // that were not read).
        for byte in [0, 24, 100, 4095] {
            let mut bad = data.clone();
            bad[1024 + byte % 3072] ^= 1;
            assert_eq!(prefix_stamp(&stamp, at + 4096, &bad[4096..8192], 512).map(|h| h.of), Some((1 << 30) + 4096));
            bad[4096 + byte] ^= 1;
            assert_eq!(prefix_stamp(&stamp, at + 4096, &bad[4096..8192], 512), None);
        }
        // Its own stamp is no hit; another run's neither.
        assert_eq!(prefix_stamp(&stamp, 1 << 30, &data[..4096], 512), None);
        assert_eq!(prefix_stamp(&Stamp::new(6), at, &data[..4096], 512), None);
        // A sector's stamp is not a block's.
        let mut small = vec![0u8; 4096];
        stamp.fill(1 << 30, &mut small[..512]);
        assert_eq!(prefix_stamp(&stamp, at, &small, 512), None);
    }
}
