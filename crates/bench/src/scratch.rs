//! Scratch files that can never be left behind.
//!
//! A scratch file is created with `O_TMPFILE | O_EXCL`: it has no name at any
//! moment, cannot be linked into the tree later, and its space returns to the
//! filesystem when the last descriptor closes, which includes `kill -9`.
//! Filesystems without `O_TMPFILE` (vfat boot partitions, some FUSE) get a
//! uniquely named file created with `O_CREAT | O_EXCL` and unlinked at once,
//! before any data is written.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why scratch space cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum ScratchError {
    #[error(
        "{dir} is on a read-only filesystem; remount it read-write, or give a writable directory on the same device"
    )]
    ReadOnly { dir: PathBuf },
    #[error(
        "not enough free space in {dir}: the write tests need {need_mib} MiB (with a safety margin) and {free_mib} MiB is free; free some space or give another directory"
    )]
    NoSpace { dir: PathBuf, need_mib: u64, free_mib: u64 },
    #[error("cannot create a scratch file in {dir}: {source}; run as root (sudo) or give a directory you can write to")]
    Create { dir: PathBuf, source: io::Error },
}

/// Room kept free beyond what the tests write, so a run never fills a disk.
/// It is counted in what an ordinary user can write (`f_bavail`, which
/// already leaves ext4's root reserve out), so it need not grow with the
/// disk: a 1 TB disk with 5 GB free runs the 520 MiB dd-like test.
pub const MARGIN: u64 = 64 << 20;

/// Refuses unless `need` bytes fit in `dir` with [`MARGIN`] to spare.
pub fn check_space(dir: &Path, need: u64) -> Result<(), ScratchError> {
    let st =
        nix::sys::statvfs::statvfs(dir).map_err(|e| ScratchError::Create { dir: dir.to_owned(), source: e.into() })?;
    if st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY) {
        return Err(ScratchError::ReadOnly { dir: dir.to_owned() });
    }
    // A filesystem that reports no size at all (ramfs) has no free-space
    // figure to check against; it grows until memory runs out.
    if st.blocks() == 0 {
        return Ok(());
    }
    // The casts widen: statvfs's fields are u32 on 32-bit ARM.
    #[allow(clippy::unnecessary_cast)]
    let free = (st.blocks_available() as u64).saturating_mul(st.fragment_size() as u64);
    let want = need.saturating_add(MARGIN);
    if free < want {
        return Err(ScratchError::NoSpace { dir: dir.to_owned(), need_mib: want >> 20, free_mib: free >> 20 });
    }
    Ok(())
}

/// Creates a nameless scratch file in `dir`, open for reading and writing.
pub fn create(dir: &Path) -> Result<File, ScratchError> {
    let c_dir = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| ScratchError::Create { dir: dir.to_owned(), source: io::ErrorKind::InvalidInput.into() })?;
    let flags = libc::O_TMPFILE | libc::O_EXCL | libc::O_RDWR | libc::O_CLOEXEC;
    // SAFETY: c_dir is a valid NUL-terminated string; open has no other preconditions.
    let fd = unsafe { libc::open(c_dir.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd >= 0 {
        // SAFETY: fd was just returned by open and is owned by nobody else.
        return Ok(unsafe { File::from_raw_fd(fd) });
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL) => create_named_then_unlink(dir),
        _ => Err(classify(dir, err)),
    }
}

fn create_named_then_unlink(dir: &Path) -> Result<File, ScratchError> {
    use std::os::unix::fs::OpenOptionsExt;
    for attempt in 0..100u32 {
        let path = dir.join(format!(".storage-score-{}-{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&path) {
            Ok(file) => {
                // Unlink before writing a byte: a crash from here on leaves nothing.
                std::fs::remove_file(&path).map_err(|e| classify(dir, e))?;
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(classify(dir, e)),
        }
    }
    Err(ScratchError::Create { dir: dir.to_owned(), source: io::ErrorKind::AlreadyExists.into() })
}

fn classify(dir: &Path, err: io::Error) -> ScratchError {
    match err.raw_os_error() {
        Some(libc::EROFS) => ScratchError::ReadOnly { dir: dir.to_owned() },
        Some(libc::ENOSPC) => ScratchError::NoSpace { dir: dir.to_owned(), need_mib: 0, free_mib: 0 },
        _ => ScratchError::Create { dir: dir.to_owned(), source: err },
    }
}

/// Turns O_DIRECT on or off for an open file (Linux allows this via F_SETFL).
pub fn set_direct(file: &File, on: bool) -> io::Result<()> {
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own, with integer arguments only.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if on { flags | libc::O_DIRECT } else { flags & !libc::O_DIRECT };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Allocates `len` bytes for `file` without writing them, as fio does for
/// a new file (`fallocate=native`: `fallocate(fd, 0, 0, size)`, filesetup.c):
/// on ext4 and xfs the space becomes unwritten extents, and every later
/// write converts one. Filesystems without fallocate get the size alone
/// (`ftruncate`), which fio's `fallocate=truncate` does too.
pub fn allocate(file: &File, len: u64) -> io::Result<()> {
    let len_arg = libc::off_t::try_from(len).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
    match nix::fcntl::fallocate(file.as_raw_fd(), nix::fcntl::FallocateFlags::empty(), 0, len_arg) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EOPNOTSUPP | nix::errno::Errno::ENOSYS) => file.set_len(len),
        Err(e) => Err(e.into()),
    }
}

/// Drops the file's clean pages from the page cache, as fio does before a
/// job (`invalidate=1`: `posix_fadvise(POSIX_FADV_DONTNEED)`).
pub fn drop_cache(file: &File) {
    let _ = nix::fcntl::posix_fadvise(file.as_raw_fd(), 0, 0, nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED);
}

/// Trims the free space of the filesystem holding `dir` (FITRIM, what
/// `fstrim` does), as PiBenchmarks' Storage.sh does before its tests with
/// `fstrim -av`: on flash, trimmed free space is part of the state the
/// write tests meet. Returns the bytes the filesystem says it trimmed.
pub fn trim(dir: &Path) -> io::Result<u64> {
    #[repr(C)]
    struct FstrimRange {
        start: u64,
        len: u64,
        minlen: u64,
    }
    nix::ioctl_readwrite!(fitrim, b'X', 121, FstrimRange);
    let handle = File::open(dir)?;
    let mut range = FstrimRange { start: 0, len: u64::MAX, minlen: 0 };
    // SAFETY: FITRIM reads and updates one fstrim_range, which we own.
    unsafe { fitrim(handle.as_raw_fd(), &mut range) }.map_err(io::Error::from)?;
    Ok(range.len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn scratch_file_has_no_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f = create(dir.path()).expect("scratch");
        f.write_all(b"data").expect("write");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn named_fallback_unlinks_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _f = create_named_then_unlink(dir.path()).expect("scratch");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn allocation_is_not_writing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = create(dir.path()).expect("scratch");
        allocate(&f, 1 << 20).expect("allocate");
        assert_eq!(f.metadata().expect("stat").len(), 1 << 20);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = check_space(dir.path(), u64::MAX / 2).expect_err("cannot fit");
        assert!(matches!(err, ScratchError::NoSpace { .. }), "{err}");
    }
}
