//! storage-capacity: is this card as big as it says? (docs/verify-capacity.md)
//!
//! - [`stamp`]: self-identifying blocks (offset, run nonce from the
//!   kernel's random source, checksum).
//! - [`probe`]: the search for the real end of the storage, in rounds of
//!   probe blocks, a cache flush and shuffled read-back.
//! - [`journal`]: the crash-safe undo journal (fsync before overwrite,
//!   newest-first restore), in a checked, keyed [`journal_dir`];
//!   [`replay`] puts back, on the next start, only what a crashed run wrote.
//! - [`verdict`]: genuine / wraparound / limbo / chain / io-errors, usable
//!   size, first bad byte, a safe partition with its `sfdisk` line.
//! - [`preflight`]: the refusals (a partition, a stack, and every user of
//!   the device that `storage_platform::usage` finds) and the fingerprint.
//! - [`files`]: `--files`, for a mounted card: fill free space with
//!   self-identifying nameless files, read them back, and let them go.
//! - [`disk`]: the device as byte-addressed storage, `O_DIRECT | O_EXCL`.
//!
//! [`verify`] ties probe, journal and undo together so that no path out of
//! it, an error or an interruption included, leaves a byte changed.

pub mod disk;
pub mod files;
pub mod journal;
pub mod journal_dir;
pub mod preflight;
pub mod probe;
pub mod replay;
#[cfg(test)]
mod sim;
pub mod stamp;
pub mod verdict;

use std::path::PathBuf;
use std::time::Instant;

pub use disk::{Disk, RawDisk};
pub use journal_dir::{DirError, JournalDir};
pub use probe::{Options, ProbeError, Quiet, Watch};
pub use verdict::{Report, Verdict};

/// The default cache bound: the largest write cache the probe looks
/// through (it measures the cache, and rewrites this much only when none is
/// seen). Fake cards' caches are a few MiB (f3 cites 4 MiB for sequential
/// writes, libprobe.c); 256 MiB leaves a wide margin.
pub const DEFAULT_CACHE_BOUND: u64 = 256 << 20;
/// `--thorough`: as large as f3probe's largest cache (MAX_CACHE_SIZE_BYTE).
pub const THOROUGH_CACHE_BOUND: u64 = 1 << 30;

/// Where the undo journal goes, or that there is none.
#[derive(Debug)]
pub enum Safety<'a> {
    /// Back up to a journal in this (checked) directory, restore at the end.
    Journal { dir: &'a JournalDir, fingerprint: String },
    /// `--destructive`: write without backups; the card's data is lost.
    Destructive,
}

/// Why `verify` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("cannot keep the undo journal in {dir}: {source}")]
    NoJournal { dir: PathBuf, source: std::io::Error },
    /// The probe stopped; every byte it wrote was put back.
    #[error("{0}")]
    Probe(#[from] ProbeError),
    #[error(
        "restoring the card failed: {source}; its original data is kept in {journal}: run the same command again to restore it"
    )]
    Undo { journal: PathBuf, source: journal::UndoError },
    #[error(
        "restoring the card from an earlier run's journal failed: {source}; its original data is kept in {journal}: run the same command again to restore it"
    )]
    Replay { journal: PathBuf, source: replay::ReplayError },
}

/// Probes `disk` (the whole device `device`), restores what it wrote unless
/// destructive, and reports.
pub fn verify(
    disk: &mut dyn Disk,
    device: &str,
    safety: &Safety,
    options: Options,
    watch: &dyn Watch,
) -> Result<Report, VerifyError> {
    let started = Instant::now();
    let nonce = stamp::fresh_nonce();
    let mut journal = match safety {
        Safety::Destructive => None,
        Safety::Journal { dir, fingerprint } => {
            let header = journal::Header {
                device: device.to_owned(),
                size: disk.size(),
                fingerprint: fingerprint.clone(),
                nonce,
                created_unix: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_secs())
                    .unwrap_or(0),
            };
            let no_journal = |source| VerifyError::NoJournal { dir: dir.path().to_path_buf(), source };
            journal::check_room(dir, probe::journal_room(disk.size(), &options)).map_err(no_journal)?;
            let journal = journal::Journal::create(dir, &header).map_err(no_journal)?;
            Some((journal, *dir))
        }
    };
    let result = probe::probe(disk, journal.as_mut().map(|(j, _)| j), nonce, options, watch);
    let mut restored = 0;
    if let Some((mut journal, dir)) = journal {
        watch.stage("restoring every block that was written");
        match journal.undo(disk) {
            Ok(done) => restored = done.bytes,
            Err(source) => return Err(VerifyError::Undo { journal: journal.path().to_path_buf(), source }),
        }
        let path = journal.path().to_path_buf();
        journal.remove(dir).map_err(|e| VerifyError::Undo { journal: path, source: journal::UndoError::Sync(e) })?;
    }
    let probed = result?;
    let mut report = Report::new(device, &probed, matches!(safety, Safety::Destructive));
    report.bytes_written += restored;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// What became of a journal found at start-up.
#[derive(Debug)]
pub enum Leftover {
    /// It was this card's: the blocks the run wrote are restored and the
    /// journal is gone.
    Replayed { journal: PathBuf, bytes: u64 },
    /// Nothing needed restoring, but nothing showed that this is its card
    /// either ([`replay::Replayed::Unsure`]): it is kept.
    Kept { journal: PathBuf, header: journal::Header },
    /// It belongs to a device that is not the one given.
    OtherDevice { journal: PathBuf, header: journal::Header },
    /// It names this device node, but the card's identity says another
    /// card is in it now.
    Mismatch { journal: PathBuf, header: journal::Header },
    /// The card in the slot does not hold what the crashed run left (it was
    /// rewritten, or is another card that looks the same): nothing was
    /// written, and the journal is kept.
    Stale { journal: PathBuf, header: journal::Header, why: replay::ReplayError },
    /// A file named like a journal that this installation did not write.
    Untrusted { journal: PathBuf, why: String },
}

/// Replays every unfinished journal of this card and lists the others. A
/// journal is this card's candidate when its fingerprint and size match
/// (whatever node the card has now); [`replay`] then restores only blocks
/// that still hold the crashed run's stamps. A fingerprint without the
/// card's own identity (no CID, no serial: a USB reader's) cannot tell two
/// cards apart, so it is never the only evidence.
pub fn replay_unfinished(
    dir: &JournalDir,
    device: &str,
    fingerprint: &str,
    disk: &mut dyn Disk,
) -> Result<Vec<Leftover>, VerifyError> {
    let no_journal = |source| VerifyError::NoJournal { dir: dir.path().to_path_buf(), source };
    let found = journal::pending(dir).map_err(no_journal)?;
    let identified = preflight::fingerprint_is_strong(fingerprint);
    let mut out = Vec::new();
    for found in found {
        let pending = match found {
            journal::Found::Pending(pending) => pending,
            journal::Found::Untrusted { path, why } => {
                out.push(Leftover::Untrusted { journal: path, why });
                continue;
            }
        };
        let (journal, header) = (pending.path.clone(), pending.header.clone());
        let candidate = header.fingerprint == fingerprint && header.size == disk.size();
        if !candidate {
            out.push(if header.device == device {
                Leftover::Mismatch { journal, header }
            } else {
                Leftover::OtherDevice { journal, header }
            });
            continue;
        }
        match replay::replay(&pending, disk, identified) {
            Ok(replay::Replayed::Done(done)) => {
                // Fully applied: only now may it go.
                dir.dir().remove(pending.name()).map_err(|e| VerifyError::Undo {
                    journal: journal.clone(),
                    source: journal::UndoError::Journal(journal.clone(), e),
                })?;
                let _ = dir.dir().sync();
                out.push(Leftover::Replayed { journal, bytes: done.bytes });
            }
            Ok(replay::Replayed::Unsure) => out.push(Leftover::Kept { journal, header }),
            Err(why @ (replay::ReplayError::Device { .. } | replay::ReplayError::Sync(_))) => {
                return Err(VerifyError::Replay { journal, source: why });
            }
            Err(why) => out.push(Leftover::Stale { journal, header, why }),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
