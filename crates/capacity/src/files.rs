//! `verify-capacity DIR --files`: for a card that is mounted and cannot be
//! unmounted (the boot card, say). Like f3write + f3read, it fills the free
//! space with self-identifying data and reads it back, but its files have
//! no name from the start (`O_TMPFILE`), or lose it at once (`O_EXCL`, then
//! unlink, where the filesystem has no `O_TMPFILE`, as vfat): the space
//! comes back when the process ends, however it ends, `kill -9` included.
//!
//! The directory is opened once, following no link on its path, and every
//! file is made relative to that handle, the free space read on it: a
//! directory renamed, or replaced by a link to another filesystem, while
//! the files are written sends no write elsewhere (docs/safety.md#scratch-files).
//!
//! A reserve of free space is left alone so the system keeps working; the
//! report says how much. Slow (it writes all the free space), but it
//! touches no byte that a file holds.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use storage_platform::safe_fs::Dir;

use crate::disk::AlignedBuf;
use crate::probe::{ProbeError, Watch};
use crate::stamp::{Seen, Stamp};
use crate::verdict::Verdict;

const CHUNK: usize = 1 << 20;
const BLOCK: usize = 4096;
/// One scratch file holds at most this (vfat's limit is 4 GiB - 1).
const FILE_BYTES: u64 = 1 << 30;

/// The answer of `verify-capacity DIR --files`.
#[derive(Debug, Clone, Serialize)]
pub struct FilesReport {
    pub dir: String,
    pub verdict: Verdict,
    /// The filesystem's size.
    pub announced_bytes: u64,
    /// Free space that was filled and read back.
    pub tested_bytes: u64,
    /// Of those, the bytes that held their data.
    pub usable_bytes: u64,
    pub bad_bytes: u64,
    /// Free space left alone so the system keeps working.
    pub reserve_bytes: u64,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Why the check could not run.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("{dir}: {source}; give a directory of the mounted card that you can write in")]
    Dir { dir: PathBuf, source: io::Error },
    #[error(
        "{dir} has only {free} bytes free, and {reserve} stay free for the system; free some space, or unmount the card and give its device instead"
    )]
    NoRoom { dir: PathBuf, free: u64, reserve: u64 },
    #[error("{0}")]
    Stopped(#[from] ProbeError),
}

/// Fills the free space of `dir`'s filesystem, reads it back, lets it go.
pub fn verify_files(dir: &Path, watch: &dyn Watch) -> Result<FilesReport, FilesError> {
    let started = Instant::now();
    let dir_error = |source| FilesError::Dir { dir: dir.to_path_buf(), source };
    let handle = Dir::open_no_links(dir).map_err(dir_error)?;
    let st = handle.statvfs().map_err(dir_error)?;
    // The casts widen: statvfs's fields are u32 on 32-bit ARM.
    #[allow(clippy::unnecessary_cast)]
    let (size, free) =
        (st.blocks() as u64 * st.fragment_size() as u64, st.blocks_available() as u64 * st.fragment_size() as u64);
    let reserve = (size / 100).clamp(16 << 20, 256 << 20);
    if free <= reserve + (CHUNK as u64) {
        return Err(FilesError::NoRoom { dir: dir.to_path_buf(), free, reserve });
    }
    let target = (free - reserve) / CHUNK as u64 * CHUNK as u64;
    let stamp = Stamp::new(crate::stamp::fresh_nonce());
    let mut buf = AlignedBuf::new(CHUNK);
    let mut notes = Vec::new();

    // Fill. Every file is nameless before a byte goes into it.
    watch.stage(&format!("writing {} MiB of self-identifying data into {}", target >> 20, dir.display()));
    let mut files: Vec<(File, u64, u64)> = Vec::new(); // file, first fill byte, bytes in it
    let mut written = 0u64;
    let mut full = false;
    while written < target && !full {
        let file = handle.nameless_file(0o600).map_err(dir_error)?;
        let first = written;
        let mut in_file = 0u64;
        while in_file < FILE_BYTES && written < target {
            if let Some(signal) = watch.stop() {
                return Err(ProbeError::Interrupted(signal).into());
            }
            stamp.fill_run(written, BLOCK, buf.as_mut_slice());
            match file.write_all_at(buf.as_slice(), in_file) {
                Ok(()) => {
                    in_file += CHUNK as u64;
                    written += CHUNK as u64;
                }
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                    full = true;
                    break;
                }
                Err(e) => {
                    notes.push(format!("writing at fill byte {written} failed: {e}"));
                    full = true;
                    break;
                }
            }
        }
        files.push((file, first, in_file));
    }

    // Make it durable and drop it from the page cache, so reads reach the card.
    watch.stage("flushing, then reading everything back");
    for (file, _, _) in &files {
        if let Err(e) = file.sync_data() {
            notes.push(format!("flushing the data to the card failed: {e}"));
        }
        let _ = nix::fcntl::posix_fadvise(file.as_raw_fd(), 0, 0, nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED);
    }

    let (mut good, mut bad, mut aliases, mut errors) = (0u64, 0u64, 0u64, 0u64);
    for (file, first, len) in &files {
        let direct = direct_reader(file);
        let reader = direct.as_ref().unwrap_or(file);
        let mut at = 0;
        while at < *len {
            if let Some(signal) = watch.stop() {
                return Err(ProbeError::Interrupted(signal).into());
            }
            match reader.read_exact_at(buf.as_mut_slice(), at) {
                Ok(()) => {
                    for (i, block) in buf.as_slice().chunks_exact(BLOCK).enumerate() {
                        match stamp.check(first + at + (i * BLOCK) as u64, block) {
                            Seen::Own => good += BLOCK as u64,
                            Seen::Alias(_) => {
                                aliases += 1;
                                bad += BLOCK as u64;
                            }
                            Seen::Foreign(_) => bad += BLOCK as u64,
                        }
                    }
                }
                Err(_) => {
                    errors += 1;
                    bad += CHUNK as u64;
                }
            }
            at += CHUNK as u64;
        }
    }
    drop(files);

    let verdict = if bad == 0 {
        Verdict::Genuine
    } else if aliases > 0 {
        Verdict::Wraparound
    } else if errors > 0 {
        Verdict::IoErrors
    } else {
        Verdict::Limbo
    };
    Ok(FilesReport {
        dir: dir.display().to_string(),
        verdict,
        announced_bytes: size,
        tested_bytes: good + bad,
        usable_bytes: good,
        bad_bytes: bad,
        reserve_bytes: reserve,
        seconds: started.elapsed().as_secs_f64(),
        notes,
    })
}

/// The same nameless file opened again with O_DIRECT, where the filesystem allows it.
fn direct_reader(file: &File) -> Option<File> {
    let link = format!("/proc/self/fd/{}", file.as_raw_fd());
    OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(link).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::Quiet;

    #[test]
    fn nameless_files_leave_no_name() {
        let dir = tempfile::tempdir().expect("dir");
        let file = Dir::open_no_links(dir.path()).expect("open").nameless_file(0o600).expect("file");
        file.write_all_at(b"data", 0).expect("write");
        assert!(std::fs::read_dir(dir.path()).expect("list").next().is_none());
    }

    #[test]
    fn a_missing_directory_is_one_clear_error() {
        let err = verify_files(Path::new("/nonexistent/dir"), &Quiet).expect_err("error");
        assert!(err.to_string().contains("/nonexistent/dir"), "{err}");
    }
}
