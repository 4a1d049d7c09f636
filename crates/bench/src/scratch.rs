//! Scratch files that can never be left behind, in a directory that is
//! looked up once.
//!
//! The directory is opened once ([`ScratchDir::open`]), every component
//! `O_DIRECTORY | O_NOFOLLOW`, and everything after that works on the open
//! handle: the free space is read with `fstatvfs` on it and each scratch
//! file is made with `openat` relative to it. Whoever can write in the
//! directory's parent may rename it, or leave a link to another filesystem
//! in its place, mid-run: the handle still names the directory that was
//! checked, so no write goes elsewhere (docs/safety.md#scratch-files).
//!
//! A scratch file is created with `O_TMPFILE | O_EXCL`: it has no name at any
//! moment, cannot be linked into the tree later, and its space returns to the
//! filesystem when the last descriptor closes, which includes `kill -9`.
//! Filesystems without `O_TMPFILE` (vfat boot partitions, some FUSE) get a
//! uniquely named file created with `O_CREAT | O_EXCL | O_NOFOLLOW` and
//! unlinked at once, before any data is written.

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::Mode;
use nix::unistd::{UnlinkatFlags, unlinkat};

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
    #[error(
        "{dir}: {link} is a symbolic link now, which is not followed for scratch files (was the directory replaced?); give the real directory"
    )]
    Link { dir: PathBuf, link: PathBuf },
    #[error("cannot create a scratch file in {dir}: {source}; run as root (sudo) or give a directory you can write to")]
    Create { dir: PathBuf, source: io::Error },
}

/// Room kept free beyond what the tests write, so a run never fills a disk.
/// It is counted in what an ordinary user can write (`f_bavail`, which
/// already leaves ext4's root reserve out), so it need not grow with the
/// disk: a 1 TB disk with 5 GB free runs the 520 MiB dd-like test.
pub const MARGIN: u64 = 64 << 20;

/// The directory the scratch files go in, open: see the module notes.
#[derive(Debug)]
pub struct ScratchDir {
    fd: OwnedFd,
    path: PathBuf,
}

/// The size and free space of a filesystem, in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Space {
    pub size: u64,
    /// What an ordinary user may still write (`f_bavail`).
    pub free: u64,
    pub read_only: bool,
}

impl ScratchDir {
    /// Opens `path`, no component of which may be a link (a path from the
    /// plan has its links resolved already: a link found now was planted
    /// since). `..` is taken as the kernel finds it.
    pub fn open(path: &Path) -> Result<ScratchDir, ScratchError> {
        let dir_flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
        let create = |source: io::Error| ScratchError::Create { dir: path.to_owned(), source };
        let mut walked = PathBuf::new();
        let mut at: Option<OwnedFd> = None;
        for component in path.components() {
            let (name, flags): (&Path, OFlag) = match component {
                Component::RootDir => (Path::new("/"), dir_flags),
                Component::CurDir => continue,
                Component::ParentDir => (Path::new(".."), dir_flags & !OFlag::O_NOFOLLOW),
                Component::Normal(name) => (Path::new(name), dir_flags),
                Component::Prefix(_) => return Err(create(io::ErrorKind::InvalidInput.into())),
            };
            walked.push(component);
            let raw = at.as_ref().map(AsRawFd::as_raw_fd);
            match openat(raw, name, flags, Mode::empty()) {
                Ok(fd) => at = Some(own(fd)),
                Err(Errno::ELOOP) => return Err(ScratchError::Link { dir: path.to_owned(), link: walked }),
                Err(Errno::ENOTDIR) if is_symlink(raw, name) => {
                    return Err(ScratchError::Link { dir: path.to_owned(), link: walked });
                }
                Err(e) => return Err(create(e.into())),
            }
        }
        let fd = match at {
            Some(fd) => fd,
            None => own(openat(None, ".", dir_flags, Mode::empty()).map_err(|e| create(e.into()))?),
        };
        Ok(ScratchDir { fd, path: path.to_owned() })
    }

    /// The path it was opened by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A second handle on the same open directory.
    pub fn try_clone(&self) -> io::Result<ScratchDir> {
        Ok(ScratchDir { fd: self.fd.try_clone()?, path: self.path.clone() })
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The filesystem's size and free space, read on the open directory.
    pub fn space(&self) -> io::Result<Space> {
        let st = nix::sys::statvfs::fstatvfs(&self.fd)?;
        // The casts widen: statvfs's fields are u32 on 32-bit ARM.
        #[allow(clippy::unnecessary_cast)]
        let (blocks, avail, frag) = (st.blocks() as u64, st.blocks_available() as u64, st.fragment_size() as u64);
        Ok(Space {
            size: blocks.saturating_mul(frag),
            free: avail.saturating_mul(frag),
            read_only: st.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY),
        })
    }

    /// Refuses unless `need` bytes fit with [`MARGIN`] to spare.
    pub fn check_space(&self, need: u64) -> Result<(), ScratchError> {
        let dir = || self.path.clone();
        let space = self.space().map_err(|source| ScratchError::Create { dir: dir(), source })?;
        if space.read_only {
            return Err(ScratchError::ReadOnly { dir: dir() });
        }
        // A filesystem that reports no size at all (ramfs) has no free-space
        // figure to check against; it grows until memory runs out.
        if space.size == 0 {
            return Ok(());
        }
        let want = need.saturating_add(MARGIN);
        if space.free < want {
            return Err(ScratchError::NoSpace { dir: dir(), need_mib: want >> 20, free_mib: space.free >> 20 });
        }
        Ok(())
    }

    /// Creates a nameless scratch file in the directory, open for reading and writing.
    pub fn create(&self) -> Result<File, ScratchError> {
        let flags = OFlag::O_TMPFILE | OFlag::O_EXCL | OFlag::O_RDWR | OFlag::O_CLOEXEC;
        match openat(Some(self.fd.as_raw_fd()), ".", flags, Mode::from_bits_truncate(0o600)) {
            Ok(fd) => Ok(File::from(own(fd))),
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL) => self.create_named_then_unlink(),
            Err(e) => Err(classify(&self.path, e.into())),
        }
    }

    fn create_named_then_unlink(&self) -> Result<File, ScratchError> {
        let at = Some(self.fd.as_raw_fd());
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        for attempt in 0..100u32 {
            let name = format!(".storage-score-{}-{attempt}.tmp", std::process::id());
            match openat(at, name.as_str(), flags, Mode::from_bits_truncate(0o600)) {
                Ok(fd) => {
                    let file = File::from(own(fd));
                    // Unlink before writing a byte: a crash from here on leaves nothing.
                    unlinkat(at, name.as_str(), UnlinkatFlags::NoRemoveDir)
                        .map_err(|e| classify(&self.path, e.into()))?;
                    return Ok(file);
                }
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(classify(&self.path, e.into())),
            }
        }
        Err(ScratchError::Create { dir: self.path.clone(), source: io::ErrorKind::AlreadyExists.into() })
    }

    /// Trims the free space of the directory's filesystem (FITRIM, what
    /// `fstrim` does), as PiBenchmarks' Storage.sh does before its tests with
    /// `fstrim -av`: on flash, trimmed free space is part of the state the
    /// write tests meet. Returns the bytes the filesystem says it trimmed.
    pub fn trim(&self) -> io::Result<u64> {
        #[repr(C)]
        struct FstrimRange {
            start: u64,
            len: u64,
            minlen: u64,
        }
        nix::ioctl_readwrite!(fitrim, b'X', 121, FstrimRange);
        let mut range = FstrimRange { start: 0, len: u64::MAX, minlen: 0 };
        // SAFETY: FITRIM reads and updates one fstrim_range, which we own,
        // on a descriptor we hold open.
        unsafe { fitrim(self.fd.as_raw_fd(), &mut range) }.map_err(io::Error::from)?;
        Ok(range.len)
    }
}

fn is_symlink(at: Option<RawFd>, name: &Path) -> bool {
    nix::sys::stat::fstatat(at, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW).is_ok_and(|st| {
        nix::sys::stat::SFlag::from_bits_truncate(st.st_mode) & nix::sys::stat::SFlag::S_IFMT
            == nix::sys::stat::SFlag::S_IFLNK
    })
}

/// Takes ownership of a descriptor that a system call just returned.
fn own(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was returned by a successful openat a moment ago and
    // nothing else holds it: this is its one owner, which closes it.
    unsafe { OwnedFd::from_raw_fd(fd) }
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::FileExt;

    #[test]
    fn scratch_file_has_no_name() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f = ScratchDir::open(dir.path()).expect("open").create().expect("scratch");
        f.write_all(b"data").expect("write");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn named_fallback_unlinks_at_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let _f = ScratchDir::open(dir.path()).expect("open").create_named_then_unlink().expect("scratch");
        assert_eq!(std::fs::read_dir(dir.path()).expect("list").count(), 0);
    }

    #[test]
    fn allocation_is_not_writing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = ScratchDir::open(dir.path()).expect("open").create().expect("scratch");
        allocate(&f, 1 << 20).expect("allocate");
        assert_eq!(f.metadata().expect("stat").len(), 1 << 20);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = ScratchDir::open(dir.path()).expect("open").check_space(u64::MAX / 2).expect_err("cannot fit");
        assert!(matches!(err, ScratchError::NoSpace { .. }), "{err}");
    }

    #[test]
    fn a_link_anywhere_on_the_path_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(tmp.path().join("real/sub")).expect("mkdir");
        std::os::unix::fs::symlink(tmp.path().join("real"), tmp.path().join("link")).expect("ln");
        for path in [tmp.path().join("link"), tmp.path().join("link/sub")] {
            let err = ScratchDir::open(&path).expect_err("a link");
            assert!(matches!(err, ScratchError::Link { .. }), "{err}");
        }
        ScratchDir::open(&tmp.path().join("real/sub/../sub")).expect("no link");
    }

    #[test]
    fn a_directory_renamed_and_replaced_by_a_link_still_gets_the_files() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (dir, elsewhere) = (tmp.path().join("dir"), tmp.path().join("elsewhere"));
        std::fs::create_dir(&dir).expect("mkdir");
        std::fs::create_dir(&elsewhere).expect("mkdir");
        let scratch = ScratchDir::open(&dir).expect("open");
        std::fs::rename(&dir, tmp.path().join("moved")).expect("rename");
        std::os::unix::fs::symlink(&elsewhere, &dir).expect("ln");
        for file in [scratch.create().expect("scratch"), scratch.create_named_then_unlink().expect("named")] {
            file.write_all_at(b"data", 0).expect("write");
            // A nameless file's link in /proc names the directory it was made in.
            let made_in = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).expect("fd link");
            assert!(made_in.starts_with(tmp.path().join("moved")), "{}", made_in.display());
        }
        assert_eq!(std::fs::read_dir(&elsewhere).expect("list").count(), 0);
    }
}
