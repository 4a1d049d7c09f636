//! storage-capacity: is this card as big as it says? (docs/verify-capacity.md)
//!
//! - [`stamp`]: self-identifying blocks (offset, run nonce, checksum).
//! - [`probe`]: the search for the real end of the storage, in rounds of
//!   probe blocks, a cache flush and shuffled read-back.
//! - [`journal`]: the crash-safe undo journal (fsync before overwrite,
//!   newest-first restore, replay on the next start).
//! - [`verdict`]: genuine / wraparound / limbo / chain / io-errors, usable
//!   size, first bad byte, a safe partition with its `sfdisk` line.
//! - [`preflight`]: the refusals (mounted, root disk, partition, swap, held).
//! - [`files`]: `--files`, for a mounted card: fill free space with
//!   self-identifying nameless files, read them back, and let them go.
//! - [`disk`]: the device as byte-addressed storage, `O_DIRECT | O_EXCL`.
//!
//! [`verify`] ties probe, journal and undo together so that no path out of
//! it, an error or an interruption included, leaves a byte changed.

pub mod disk;
pub mod files;
pub mod journal;
pub mod preflight;
pub mod probe;
#[cfg(test)]
mod sim;
pub mod stamp;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::time::Instant;

pub use disk::{Disk, RawDisk};
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
#[derive(Debug, Clone)]
pub enum Safety {
    /// Back up to a journal in this directory, restore at the end.
    Journal { dir: PathBuf, fingerprint: String },
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
            let no_journal = |source| VerifyError::NoJournal { dir: dir.clone(), source };
            journal::check_room(dir, probe::journal_room(disk.size(), &options)).map_err(no_journal)?;
            let journal = journal::Journal::create(dir, &header).map_err(no_journal)?;
            Some(journal)
        }
    };
    let result = probe::probe(disk, journal.as_mut(), nonce, options, watch);
    let mut restored = 0;
    if let Some(mut journal) = journal {
        watch.stage("restoring every block that was written");
        match journal.undo(disk) {
            Ok(done) => restored = done.bytes,
            Err(source) => return Err(VerifyError::Undo { journal: journal.path().to_path_buf(), source }),
        }
        let path = journal.path().to_path_buf();
        journal.remove().map_err(|e| VerifyError::Undo { journal: path, source: journal::UndoError::Sync(e) })?;
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
    /// It was this device's: the device is restored and the journal gone.
    Replayed { journal: PathBuf, bytes: u64 },
    /// It belongs to a device that is not the one given.
    OtherDevice(journal::Pending),
    /// It names this device node, but another card is in it now.
    Mismatch(journal::Pending),
}

/// Replays every unfinished journal of this device (matched by fingerprint
/// and size, and by node name unless the fingerprint carries a serial), and
/// lists the others.
pub fn replay_unfinished(
    dir: &Path,
    device: &str,
    fingerprint: &str,
    disk: &mut dyn Disk,
) -> Result<Vec<Leftover>, VerifyError> {
    let found = journal::pending(dir).map_err(|source| VerifyError::NoJournal { dir: dir.to_path_buf(), source })?;
    let mut out = Vec::new();
    for pending in found {
        let same_card = pending.header.fingerprint == fingerprint && pending.header.size == disk.size();
        let same_node = pending.header.device == device;
        if same_card && (same_node || preflight::fingerprint_is_strong(fingerprint)) {
            let journal = pending.path.clone();
            match pending.replay(disk) {
                Ok(done) => out.push(Leftover::Replayed { journal, bytes: done.bytes }),
                Err(source) => return Err(VerifyError::Undo { journal, source }),
            }
        } else if same_node {
            out.push(Leftover::Mismatch(pending));
        } else {
            out.push(Leftover::OtherDevice(pending));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
