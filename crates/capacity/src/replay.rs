//! Replaying a journal found at start-up: only what the crashed run wrote
//! is put back (docs/verify-capacity.md#after-a-crash).
//!
//! The card in the slot now may not be the one the journal was made for: a
//! USB reader tells cards apart by nothing but their size, and a card may
//! have been reformatted since. Every block the probe wrote carries the
//! run's stamp (magic, nonce, offset; [`crate::stamp`]), so before a single
//! byte is written, each saved sector is compared with what the device
//! holds now:
//! - the crashed run's stamp for that very sector: restore it (a torn
//!   write of a block is judged sector by sector, so its new sectors are
//!   restored and its old ones left);
//! - exactly the saved content, or what another record saved for that very
//!   sector: already in place (the crash came before the write, or during
//!   an undo or an earlier replay);
//! - a saved sector that is itself the run's data (read through an alias of
//!   a block written earlier): left, unless the device holds the stamp for
//!   this sector, when the saved stamp goes back so that the older record
//!   of that storage finds its own;
//! - the run's stamp for another address (an alias, on a card that wraps:
//!   what the run wrote reached this sector through that address): restore
//!   it, since it is the run's data all the same;
//! - anything else: this is not the card as the run left it, and nothing is
//!   written at all.
//!
//! A sector is restored only when it holds the run's own data. Data equal
//! to something saved elsewhere in the journal proves nothing (a card
//! rewritten with copies of its old blocks holds such data): it is never
//! restored over, and stops the replay as any foreign data does.
//!
//! Only then are the sectors restored, newest record first (as the probe's
//! own undo), each record checked again just before it is written.

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::io;
use std::os::unix::fs::FileExt;

use crate::disk::{AlignedBuf, Disk};
use crate::journal::{self, Entry, Pending, Undone};
use crate::probe::BLOCK;
use crate::stamp::{Foreign, MAGIC, Seen, Stamp};

/// The unit of the check: the smallest sector, which a torn write changes
/// whole, and the probe's smallest stamp.
const SECTOR: usize = 512;

/// Why a journal was not replayed, or not to the end. The journal is kept.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// The device holds, at `offset`, data that the crashed run never
    /// wrote there: another card, or this one rewritten since.
    #[error("byte {offset} holds {seen}, not what that run wrote there")]
    Foreign { offset: u64, seen: &'static str },
    /// The device is not the size the journal was made for.
    #[error("the device is {now} bytes now, and the journal was made for {then}")]
    Size { now: u64, then: u64 },
    /// A block could not be read to check it.
    #[error("byte {offset} cannot be read to check it ({source})")]
    Unreadable { offset: u64, source: io::Error },
    /// The journal itself cannot be read, or is not the probe's.
    #[error("the journal cannot be used: {0}")]
    Journal(io::Error),
    #[error("restoring {bytes} bytes at byte {offset} failed: {source}")]
    Device { offset: u64, bytes: usize, source: io::Error },
    #[error("flushing the device after the restore failed: {0}")]
    Sync(io::Error),
}

/// What a replay found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replayed {
    /// Every block is back: the journal can go.
    Done(Undone),
    /// Nothing needed restoring, and nothing shows that this is the card
    /// the journal was made for (no stamp of the run, every saved block
    /// blank, a card that cannot be told from another): the journal is
    /// kept, in case its own card comes back.
    Unsure,
}

/// What one block of a record needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Block {
    /// The run's stamp for this very sector is there: put the saved one back.
    Restore,
    /// The saved content (or another record's for this sector) is there already.
    InPlace,
    /// The saved content is the run's own block, seen through an alias.
    OwnBackup,
    /// Something the run never wrote.
    Foreign(&'static str),
}

/// Replays `pending` onto `disk` (see the module notes). `identified` says
/// whether the card's fingerprint names the card itself (a CID or serial).
pub fn replay(pending: &Pending, disk: &mut dyn Disk, identified: bool) -> Result<Replayed, ReplayError> {
    let header = &pending.header;
    if disk.size() != header.size {
        return Err(ReplayError::Size { now: disk.size(), then: header.size });
    }
    let list = journal::entries(&pending.file, header.size, &pending.key).map_err(ReplayError::Journal)?;
    let stamp = Stamp::new(header.nonce);
    let held = Held::of(pending, &stamp, &list)?;

    // Look first, write nothing: one foreign sector refuses the whole journal.
    let (mut restore, mut stamped, mut blank) = (0u64, false, true);
    for entry in list.iter().rev() {
        let examined = examine(pending, disk, &stamp, &held, entry)?;
        for (i, sector) in examined.sectors.iter().enumerate() {
            match *sector {
                Block::Foreign(seen) => return Err(ReplayError::Foreign { offset: entry.offset + at(i), seen }),
                Block::Restore => restore += 1,
                Block::OwnBackup => stamped = true,
                Block::InPlace => {}
            }
            blank &= is_blank(sector_of(examined.saved.as_slice(), i));
        }
    }
    if restore == 0 && !stamped && !identified && blank && !list.is_empty() {
        return Ok(Replayed::Unsure);
    }

    let mut done = Undone::default();
    for entry in list.iter().rev() {
        let Examined { saved, sectors } = examine(pending, disk, &stamp, &held, entry)?;
        if let Some((i, Block::Foreign(seen))) =
            sectors.iter().enumerate().find(|(_, b)| matches!(b, Block::Foreign(_)))
        {
            return Err(ReplayError::Foreign { offset: entry.offset + at(i), seen });
        }
        let device_error = |offset, bytes, source| ReplayError::Device { offset, bytes, source };
        let written = sectors.iter().filter(|b| **b == Block::Restore).count() as u64 * SECTOR as u64;
        if written == u64::from(entry.len) {
            disk.write_at(entry.offset, saved.as_slice()).map_err(|e| device_error(entry.offset, saved.len(), e))?;
        } else {
            // Each run of sectors to restore, in one write.
            let mut i = 0;
            while i < sectors.len() {
                if sectors[i] != Block::Restore {
                    i += 1;
                    continue;
                }
                let first = i;
                while i < sectors.len() && sectors[i] == Block::Restore {
                    i += 1;
                }
                let mut run = AlignedBuf::new((i - first) * SECTOR);
                run.as_mut_slice().copy_from_slice(&saved.as_slice()[at(first) as usize..at(i) as usize]);
                let offset = entry.offset + at(first);
                disk.write_at(offset, run.as_slice()).map_err(|e| device_error(offset, run.len(), e))?;
            }
        }
        if written > 0 {
            done.records += 1;
            done.bytes += written;
        }
    }
    disk.sync().map_err(ReplayError::Sync)?;
    Ok(Replayed::Done(done))
}

/// The byte offset of sector `i` in a record.
fn at(i: usize) -> u64 {
    (i * SECTOR) as u64
}

/// A record's saved data, and what each of its sectors needs now.
struct Examined {
    saved: AlignedBuf,
    sectors: Vec<Block>,
}

/// How far before a record the device is read: a 4 KiB stamp whose first
/// sectors lie before the record still names its later ones.
const CONTEXT: u64 = BLOCK;

fn examine(
    pending: &Pending,
    disk: &mut dyn Disk,
    stamp: &Stamp,
    held: &Held,
    entry: &Entry,
) -> Result<Examined, ReplayError> {
    let len = entry.len as usize;
    let mut saved = AlignedBuf::new(len);
    pending.file.read_exact_at(saved.as_mut_slice(), entry.at).map_err(ReplayError::Journal)?;
    let before = CONTEXT.min(entry.offset) as usize;
    let mut now = AlignedBuf::new(before + len);
    if disk.read_at(entry.offset - before as u64, now.as_mut_slice()).is_err() {
        // Find the block that fails, to name it; the context is not needed.
        now.as_mut_slice()[..before].fill(0);
        let mut one = AlignedBuf::new(SECTOR);
        for i in 0..len / SECTOR {
            let offset = entry.offset + at(i);
            disk.read_at(offset, one.as_mut_slice()).map_err(|source| ReplayError::Unreadable { offset, source })?;
            now.as_mut_slice()[before + i * SECTOR..before + (i + 1) * SECTOR].copy_from_slice(one.as_slice());
        }
    }
    let sectors = classify(stamp, held, entry.offset, saved.as_slice(), now.as_slice(), before);
    Ok(Examined { saved, sectors })
}

/// What each sector of a record at `offset` needs, from its saved bytes and
/// the device's now (`now` starts `before` bytes ahead of the record).
fn classify(stamp: &Stamp, held: &Held, offset: u64, saved: &[u8], now: &[u8], before: usize) -> Vec<Block> {
    let mut known = Known::default();
    let base = offset - before as u64;
    (0..saved.len() / SECTOR)
        .map(|i| {
            let saved_sector = sector_of(saved, i);
            let j = before / SECTOR + i;
            let now_sector = sector_of(now, j);
            if now_sector == saved_sector {
                Block::InPlace
            } else if known.ours(stamp, now, j, Some(base)) {
                Block::Restore
            } else if known.ours(stamp, saved, i, None) || held.written(saved_sector) {
                Block::OwnBackup
            } else if held.saved_at(offset + at(i), now_sector) {
                Block::InPlace
            } else if known.ours(stamp, now, j, None) || held.written(now_sector) {
                // The run's stamp for an aliased address: on a card that
                // wraps, what the run wrote here came through its alias. It
                // is the run's data all the same, never the user's.
                Block::Restore
            } else if now_sector[..MAGIC.len()] == MAGIC && stamp.header_offset(now_sector).is_none() {
                Block::Foreign(Foreign::OtherRun.describe())
            } else {
                match stamp.check(offset + at(i), now_sector) {
                    Seen::Foreign(kind) => Block::Foreign(kind.describe()),
                    _ => Block::Foreign(Foreign::Damaged.describe()),
                }
            }
        })
        .collect()
}

/// What the journal says the card may hold, by sector hashes.
///
/// - `saved`: for each sector some record saved, the hashes of what was
///   saved there. A crash during the probe's own undo leaves an older
///   record's data under a newer record of the same sector. Only the same
///   sector counts: data that some other sector held proves nothing.
/// - `written`: every sector of every stamp the run may have written (the
///   probe backs up each block and sector before it stamps it, so the
///   records name them all). Through a wrap, a block may reach the storage
///   split in two far apart, where no header is near its tail.
#[derive(Default)]
struct Held {
    saved: HashMap<u64, HashSet<u64>>,
    written: HashSet<u64>,
}

impl Held {
    fn of(pending: &Pending, stamp: &Stamp, list: &[Entry]) -> Result<Held, ReplayError> {
        let mut held = Held::default();
        let mut buf = Vec::new();
        let mut unit = vec![0u8; BLOCK as usize];
        let mut single = [0u8; SECTOR];
        let mut count: HashMap<u64, u32> = HashMap::new();
        for entry in list {
            for sector in (entry.offset..entry.offset + u64::from(entry.len)).step_by(SECTOR) {
                *count.entry(sector).or_default() += 1;
            }
        }
        for entry in list {
            buf.resize(entry.len as usize, 0);
            pending.file.read_exact_at(&mut buf, entry.at).map_err(ReplayError::Journal)?;
            // Only sectors saved more than once can hold another record's data.
            for (i, data) in buf.chunks_exact(SECTOR).enumerate() {
                let sector = entry.offset + at(i);
                if count.get(&sector).is_some_and(|&n| n > 1) {
                    held.saved.entry(sector).or_default().insert(sector_hash(data));
                }
            }
            let end = entry.offset + u64::from(entry.len);
            let mut block = entry.offset.next_multiple_of(BLOCK);
            while block + BLOCK <= end {
                stamp.fill(block, &mut unit);
                held.written.extend(unit.chunks_exact(SECTOR).map(sector_hash));
                block += BLOCK;
            }
            for sector in (entry.offset..end).step_by(SECTOR) {
                stamp.fill(sector, &mut single);
                held.written.insert(sector_hash(&single));
            }
        }
        Ok(held)
    }

    /// True when some record saved exactly `data` for the sector at `offset`.
    fn saved_at(&self, offset: u64, data: &[u8]) -> bool {
        self.saved.get(&offset).is_some_and(|hashes| hashes.contains(&sector_hash(data)))
    }

    fn written(&self, sector: &[u8]) -> bool {
        self.written.contains(&sector_hash(sector))
    }
}

fn sector_hash(sector: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    sector.hash(&mut hasher);
    hasher.finish()
}

fn sector_of(buf: &[u8], i: usize) -> &[u8] {
    &buf[i * SECTOR..(i + 1) * SECTOR]
}

/// Recognises the run's own data one sector at a time. The probe stamps
/// 4 KiB blocks and single sectors; through an alias whose period is no
/// multiple of 4 KiB a block may start at any sector, so a sector is the
/// run's when a header of the run up to 7 sectors before it names a unit
/// whose bytes at that distance are exactly this sector's. With `base`
/// (the device offset of `buf`), the unit must also be the one written for
/// that very place: the run's stamp for this sector, not an alias's.
#[derive(Default)]
struct Known {
    /// The last 4 KiB unit made, by its offset.
    block: Option<(u64, Vec<u8>)>,
}

impl Known {
    fn ours(&mut self, stamp: &Stamp, buf: &[u8], j: usize, base: Option<u64>) -> bool {
        let sector = sector_of(buf, j);
        (0..=j.min(BLOCK as usize / SECTOR - 1)).any(|k| {
            let Some(offset) = stamp.header_offset(&buf[(j - k) * SECTOR..]) else { return false };
            if base.is_some_and(|base| base + at(j - k) != offset) {
                return false;
            }
            if k == 0 {
                let mut single = [0u8; SECTOR];
                stamp.fill(offset, &mut single);
                if single[..] == *sector {
                    return true;
                }
            }
            if self.block.as_ref().is_none_or(|(o, _)| *o != offset) {
                let mut unit = vec![0u8; BLOCK as usize];
                stamp.fill(offset, &mut unit);
                self.block = Some((offset, unit));
            }
            self.block.as_ref().is_some_and(|(_, unit)| unit[k * SECTOR..(k + 1) * SECTOR] == *sector)
        })
    }
}

fn is_blank(block: &[u8]) -> bool {
    block.iter().all(|&b| b == 0) || block.iter().all(|&b| b == 0xFF)
}

/// "3 hours", for a journal's age in a message.
pub fn age_words(seconds: u64) -> String {
    let (value, unit) = match seconds {
        s if s < 120 => (s, "second"),
        s if s < 2 * 3600 => (s / 60, "minute"),
        s if s < 2 * 86_400 => (s / 3600, "hour"),
        s => (s / 86_400, "day"),
    };
    format!("{value} {unit}{}", if value == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_stamp_is_ours_and_a_changed_block_is_not() {
        use Block::{Foreign as F, InPlace as P, OwnBackup, Restore as R};
        let stamp = Stamp::new(77);
        let saved = vec![0x5Au8; 4096];
        let mut ours = vec![0u8; 4096];
        stamp.fill(1 << 20, &mut ours);
        let held = Held::default();
        let at = |saved: &[u8], now: &[u8]| classify(&stamp, &held, 1 << 20, saved, now, 0);
        assert_eq!(at(&saved, &ours), [R; 8]);
        assert_eq!(at(&saved, &saved), [P; 8]);
        // A torn write: the first two sectors new, the rest as saved.
        let mut half = saved.clone();
        half[..1024].copy_from_slice(&ours[..1024]);
        assert_eq!(at(&saved, &half), [R, R, P, P, P, P, P, P]);
        let mut changed = saved.clone();
        changed[3000] = 1;
        assert_eq!(at(&saved, &changed)[5], F("old or random data"));
        assert_eq!(at(&saved, &[0u8; 4096])[0], F("zeros"));
        // Another run's stamp is not ours.
        let mut theirs = vec![0u8; 4096];
        Stamp::new(78).fill(1 << 20, &mut theirs);
        assert_eq!(at(&saved, &theirs)[0], F("a block of an earlier run"));
        // A backup of our own block (through an alias) needs nothing.
        assert_eq!(at(&ours, &saved), [OwnBackup; 8]);
    }

    #[test]
    fn a_block_through_an_alias_at_a_sector_offset_and_a_sector_stamp_are_ours() {
        let stamp = Stamp::new(77);
        let saved = vec![0x5Au8; 8192];
        // A 4 KiB block written for 3 GiB, seen 1536 bytes into the record,
        // and a single-sector stamp in the record's last sector.
        let mut now = saved.clone();
        stamp.fill(3 << 30, &mut now[1536..1536 + 4096]);
        stamp.fill((1 << 20) + 7680, &mut now[7680..]);
        let blocks = classify(&stamp, &Held::default(), 1 << 20, &saved, &now, 0);
        let restore: Vec<bool> = blocks.iter().map(|b| *b == Block::Restore).collect();
        assert_eq!(
            restore,
            [false, false, false, true, true, true, true, true, true, true, true, false, false, false, false, true]
        );
        assert!(blocks.iter().all(|b| matches!(b, Block::Restore | Block::InPlace)), "{blocks:?}");
        // The tail of a block whose head lies before the record: the context names it.
        let mut context = vec![0x5Au8; 4096 + 8192];
        stamp.fill(5 << 30, &mut context[4096 - 1024..4096 + 3072]);
        let blocks = classify(&stamp, &Held::default(), 1 << 20, &saved, &context, 4096);
        assert!(blocks[..6].iter().all(|b| *b == Block::Restore), "{blocks:?}");
        assert!(blocks[6..].iter().all(|b| *b == Block::InPlace), "{blocks:?}");
    }

    use crate::sim::{Mode, SimDisk};
    use crate::{JournalDir, Leftover, Options, Quiet, Safety, replay_unfinished, verify};
    use std::panic::{AssertUnwindSafe, catch_unwind};

    const MIB: u64 = 1 << 20;

    /// A verify of a card filled from `seed` that dies at its `die_at`-th
    /// write, leaving its journal in `dir`.
    /// `None` for a blank card (zeros).
    fn crashed(dir: &JournalDir, seed: Option<u64>, die_at: u64) -> SimDisk {
        let mut disk = card(seed);
        disk.die_at_write = Some(die_at);
        let safety = Safety::Journal { dir, fingerprint: "a reader that names no card".into() };
        let options = Options::default();
        let died = catch_unwind(AssertUnwindSafe(|| verify(&mut disk, "/dev/sim", &safety, options, &Quiet)));
        assert!(died.is_err(), "no write number {die_at}");
        disk.die_at_write = None;
        disk
    }

    fn card(seed: Option<u64>) -> SimDisk {
        let size = if seed.is_some() { 256 * MIB } else { 16 * MIB };
        let mut disk = SimDisk::new(size, size, Mode::Genuine);
        match seed {
            Some(seed) => disk.fill_pattern(seed),
            None => disk.write_at(0, &vec![0u8; size as usize]).expect("blank"),
        }
        disk.writes = 0;
        disk
    }

    fn replay_onto(dir: &JournalDir, disk: &mut SimDisk) -> Vec<Leftover> {
        replay_unfinished(dir, "/dev/sim", "a reader that names no card", disk).expect("replay")
    }

    #[test]
    fn another_card_in_the_same_slot_is_left_alone_and_the_journal_kept() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let mut first = crashed(&dir, Some(1), 300);
        let mut other = SimDisk::new(256 * MIB, 256 * MIB, Mode::Genuine);
        other.fill_pattern(2);
        let before = other.snapshot();
        let left = replay_onto(&dir, &mut other);
        assert!(matches!(left.as_slice(), [Leftover::Stale { why: ReplayError::Foreign { .. }, .. }]), "{left:?}");
        assert_eq!(other.snapshot(), before, "the other card was written");
        // Its own card, back in the slot, is restored from the kept journal.
        let mut original = SimDisk::new(256 * MIB, 256 * MIB, Mode::Genuine);
        original.fill_pattern(1);
        let want = original.snapshot();
        let left = replay_onto(&dir, &mut first);
        assert!(matches!(left.as_slice(), [Leftover::Replayed { .. }]), "{left:?}");
        assert_eq!(first.snapshot(), want);
        assert!(crate::journal::pending(&dir).expect("list").is_empty());
    }

    #[test]
    fn a_card_rewritten_since_the_crash_is_not_replayed_onto() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let mut card = crashed(&dir, Some(3), 300);
        // "Reformatted": new data over part of it, stamped blocks included.
        card.write_at(100 * MIB, &vec![0x42u8; 64 << 20]).expect("rewrite");
        let before = card.snapshot();
        let left = replay_onto(&dir, &mut card);
        assert!(matches!(left.as_slice(), [Leftover::Stale { .. }]), "{left:?}");
        assert_eq!(card.snapshot(), before, "nothing may be written");
        assert_eq!(crate::journal::pending(&dir).expect("list").len(), 1, "the journal is kept");
    }

    #[test]
    fn a_card_rewritten_with_copies_of_saved_blocks_keeps_its_new_data() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let mut card = crashed(&dir, Some(4), 300);
        let found = journal::pending(&dir).expect("pending");
        let [journal::Found::Pending(p)] = found.as_slice() else { panic!("{found:?}") };
        let list = journal::entries(&p.file, p.header.size, &p.key).expect("entries");
        assert!(list.len() >= 2, "{list:?}");
        // Every place the run wrote now holds data that another record
        // saved: old blocks the user copied back, not the run's.
        for (i, entry) in list.iter().enumerate() {
            let other = &list[(i + 1) % list.len()];
            let mut data = vec![0u8; other.len as usize];
            p.file.read_exact_at(&mut data, other.at).expect("read");
            let new: Vec<u8> = (0..entry.len as usize).map(|k| data[k % data.len()]).collect();
            card.write_at(entry.offset, &new).expect("rewrite");
        }
        drop(found);
        let before = card.snapshot();
        let left = replay_onto(&dir, &mut card);
        assert!(matches!(left.as_slice(), [Leftover::Stale { why: ReplayError::Foreign { .. }, .. }]), "{left:?}");
        assert_eq!(card.snapshot(), before, "the new data was restored over");
    }

    #[test]
    fn blank_blocks_on_a_card_that_names_no_one_are_not_proof_of_anything() {
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        // A blank card dies after its backups, before it wrote much.
        let _first = crashed(&dir, None, 2);
        let mut blank = card(None);
        let left = replay_onto(&dir, &mut blank);
        assert!(matches!(left.as_slice(), [Leftover::Kept { .. }]), "{left:?}");
        assert_eq!(crate::journal::pending(&dir).expect("list").len(), 1, "the journal is kept");
    }

    #[test]
    fn ages_read_as_words() {
        assert_eq!(age_words(5), "5 seconds");
        assert_eq!(age_words(3 * 3600 + 5), "3 hours");
        assert_eq!(age_words(86_400 * 3), "3 days");
        assert_eq!(age_words(60 * 61), "61 minutes");
    }
}
