//! Replaying a journal found at start-up: only what the crashed run wrote
//! is put back (docs/verify-capacity.md#after-a-crash).
//!
//! The card in the slot now may not be the one the journal was made for: a
//! USB reader tells cards apart by nothing but their size, and a card may
//! have been reformatted since. Every block the probe wrote carries the
//! run's stamp (magic, nonce, offset; [`crate::stamp`]), so before a single
//! byte is written, each saved block is compared with what the device holds
//! now:
//! - the crashed run's stamp (its own offset's, or an alias's): restore it;
//! - a torn write of that stamp (some sectors new, the rest as saved):
//!   restore it;
//! - exactly the saved content: already in place (the crash came before
//!   the write, or during an earlier replay);
//! - a saved block that is itself the run's stamp (read through an alias of
//!   a block written earlier): nothing to do, the older record of that
//!   storage restores it;
//! - anything else: this is not the card as the run left it, and nothing is
//!   written at all.
//!
//! Only then are the blocks restored, newest record first (as the probe's
//! own undo), each checked again just before it is written.

use std::io;
use std::os::unix::fs::FileExt;

use crate::disk::{AlignedBuf, Disk};
use crate::journal::{self, Entry, Pending, Undone};
use crate::probe::BLOCK;
use crate::stamp::{Seen, Stamp};

/// Sectors a torn write may have changed one by one.
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
    /// The run's block (or a torn write of it) is there: put the saved one back.
    Restore,
    /// The saved content is there already.
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
    let list = journal::entries(&pending.file, header.size).map_err(ReplayError::Journal)?;
    let stamp = Stamp::new(header.nonce);

    // Look first, write nothing: one foreign block refuses the whole journal.
    let (mut restore, mut stamped, mut blank) = (0u64, false, true);
    for entry in list.iter().rev() {
        let (saved, blocks) = examine(pending, disk, &stamp, entry)?;
        for (i, block) in blocks.iter().enumerate() {
            let at = entry.offset + (i as u64) * BLOCK;
            match *block {
                Block::Foreign(seen) => return Err(ReplayError::Foreign { offset: at, seen }),
                Block::Restore => restore += 1,
                Block::OwnBackup => stamped = true,
                Block::InPlace => {}
            }
            blank &= is_blank(block_of(saved.as_slice(), i));
        }
    }
    if restore == 0 && !stamped && !identified && blank && !list.is_empty() {
        return Ok(Replayed::Unsure);
    }

    let mut done = Undone::default();
    for entry in list.iter().rev() {
        let (saved, blocks) = examine(pending, disk, &stamp, entry)?;
        if let Some((i, Block::Foreign(seen))) = blocks.iter().enumerate().find(|(_, b)| matches!(b, Block::Foreign(_)))
        {
            return Err(ReplayError::Foreign { offset: entry.offset + (i as u64) * BLOCK, seen });
        }
        let device_error = |offset, bytes, source| ReplayError::Device { offset, bytes, source };
        let written = blocks.iter().filter(|b| **b == Block::Restore).count() as u64 * BLOCK;
        if written == u64::from(entry.len) {
            disk.write_at(entry.offset, saved.as_slice()).map_err(|e| device_error(entry.offset, saved.len(), e))?;
        } else {
            let mut one = AlignedBuf::new(BLOCK as usize);
            for (i, _) in blocks.iter().enumerate().filter(|(_, b)| **b == Block::Restore) {
                let at = entry.offset + (i as u64) * BLOCK;
                one.as_mut_slice().copy_from_slice(block_of(saved.as_slice(), i));
                disk.write_at(at, one.as_slice()).map_err(|e| device_error(at, BLOCK as usize, e))?;
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

/// The saved data of `entry` and what each of its blocks needs now.
fn examine(
    pending: &Pending,
    disk: &mut dyn Disk,
    stamp: &Stamp,
    entry: &Entry,
) -> Result<(AlignedBuf, Vec<Block>), ReplayError> {
    let len = entry.len as usize;
    let mut saved = AlignedBuf::new(len);
    pending.file.read_exact_at(saved.as_mut_slice(), entry.at).map_err(ReplayError::Journal)?;
    let mut now = AlignedBuf::new(len);
    if disk.read_at(entry.offset, now.as_mut_slice()).is_err() {
        // Find the block that fails, to name it.
        let mut one = AlignedBuf::new(BLOCK as usize);
        for i in 0..len / BLOCK as usize {
            let at = entry.offset + (i as u64) * BLOCK;
            disk.read_at(at, one.as_mut_slice()).map_err(|source| ReplayError::Unreadable { offset: at, source })?;
            now.as_mut_slice()[i * BLOCK as usize..(i + 1) * BLOCK as usize].copy_from_slice(one.as_slice());
        }
    }
    let blocks = (0..len / BLOCK as usize)
        .map(|i| {
            let at = entry.offset + (i as u64) * BLOCK;
            classify(stamp, at, block_of(saved.as_slice(), i), block_of(now.as_slice(), i))
        })
        .collect();
    Ok((saved, blocks))
}

fn block_of(buf: &[u8], i: usize) -> &[u8] {
    &buf[i * BLOCK as usize..(i + 1) * BLOCK as usize]
}

fn classify(stamp: &Stamp, offset: u64, saved: &[u8], now: &[u8]) -> Block {
    if matches!(stamp.check(offset, saved), Seen::Own | Seen::Alias(_)) {
        return Block::OwnBackup;
    }
    if now == saved {
        return Block::InPlace;
    }
    match stamp.check(offset, now) {
        Seen::Own | Seen::Alias(_) => Block::Restore,
        Seen::Foreign(kind) => {
            if torn(stamp, offset, saved, now) {
                Block::Restore
            } else {
                Block::Foreign(kind.describe())
            }
        }
    }
}

/// True when every sector of `now` is either the run's block for `offset`
/// or the saved one: a write of the stamp that the crash cut short.
fn torn(stamp: &Stamp, offset: u64, saved: &[u8], now: &[u8]) -> bool {
    let mut ours = vec![0u8; now.len()];
    stamp.fill(offset, &mut ours);
    now.chunks(SECTOR)
        .zip(ours.chunks(SECTOR))
        .zip(saved.chunks(SECTOR))
        .all(|((now, ours), saved)| now == ours || now == saved)
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
        let stamp = Stamp::new(77);
        let saved = vec![0x5Au8; 4096];
        let mut ours = vec![0u8; 4096];
        stamp.fill(1 << 20, &mut ours);
        assert_eq!(classify(&stamp, 1 << 20, &saved, &ours), Block::Restore);
        assert_eq!(classify(&stamp, 1 << 20, &saved, &saved), Block::InPlace);
        let mut half = saved.clone();
        half[..1024].copy_from_slice(&ours[..1024]);
        assert_eq!(classify(&stamp, 1 << 20, &saved, &half), Block::Restore);
        let mut changed = saved.clone();
        changed[3000] = 1;
        assert_eq!(classify(&stamp, 1 << 20, &saved, &changed), Block::Foreign("old or random data"));
        assert_eq!(classify(&stamp, 1 << 20, &saved, &[0u8; 4096]), Block::Foreign("zeros"));
        // Another run's stamp is not ours.
        let mut theirs = vec![0u8; 4096];
        Stamp::new(78).fill(1 << 20, &mut theirs);
        assert_eq!(classify(&stamp, 1 << 20, &saved, &theirs), Block::Foreign("a block of an earlier run"));
        // A backup of our own block (through an alias) needs nothing.
        assert_eq!(classify(&stamp, 2 << 20, &ours, &saved), Block::OwnBackup);
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
        let options = Options { cache_bound: crate::DEFAULT_CACHE_BOUND };
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
