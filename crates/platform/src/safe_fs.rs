//! One safe way to read and write files at paths someone named: the
//! user's outputs (`--output`, `--html`, `--csv`, the upload's payload and
//! receipt), the files the user hands in (`score FILE`, `submit REPORT`),
//! verify-capacity's journal directory, and the attribute files of a
//! `--sysfs-root` tree that anyone may have made (docs/safety.md#files).
//!
//! storage-score runs as root, often on a directory that someone else can
//! write to, so:
//! - A directory is opened `O_DIRECTORY | O_NOFOLLOW`: a link planted in
//!   its place is refused, not followed, and everything after that works on
//!   the open directory, whatever is renamed in the meantime.
//! - A file is written under a fresh name made `O_CREAT | O_EXCL |
//!   O_NOFOLLOW`, synced, then renamed over the destination: a link (or a
//!   hard link) waiting there is replaced, never written through, and a
//!   crash leaves the old file or the new one, never half of one.
//! - A file is read only after `fstat` says it is a regular file (it is
//!   opened `O_NONBLOCK`, so a FIFO cannot hang even the open), and never
//!   more than a cap: `/dev/zero` or an endless file cannot eat the memory.
//! - Under sudo, the caller runs the work with the invoking user's
//!   filesystem identity and no supplementary groups ([`as_identity`]), so
//!   root's rights never reach a file the user could not touch.

use std::ffi::{OsStr, OsString};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, openat, renameat};
use nix::sys::stat::{FileStat, Mode, SFlag, fstat, mkdirat};
use nix::unistd::{Gid, Uid, UnlinkatFlags, unlinkat};

/// A user's filesystem identity: who a file is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

/// Runs `work` with the filesystem identity `who`, or as this process when
/// `None`: in a thread of its own whose fsuid and fsgid are switched and
/// whose supplementary groups are dropped. Credentials are per thread in
/// the kernel; the switch drops root's file capabilities for that thread
/// only, and ends with it.
pub fn as_identity<T: Send>(who: Option<Identity>, work: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
    let Some(who) = who else { return work() };
    std::thread::scope(|scope| {
        let worker = scope.spawn(move || {
            drop_supplementary_groups()?;
            let (uid, gid) = (Uid::from_raw(who.uid), Gid::from_raw(who.gid));
            nix::unistd::setfsgid(gid);
            nix::unistd::setfsuid(uid);
            // setfsuid and setfsgid report no error: check that both took.
            if nix::unistd::setfsuid(uid) != uid || nix::unistd::setfsgid(gid) != gid {
                return Err(io::Error::new(io::ErrorKind::PermissionDenied, "cannot act as the invoking user"));
            }
            work()
        });
        worker.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// setgroups(0, NULL) for the calling thread alone. The C library's
/// setgroups changes every thread of the process (it signals them all), so
/// the system call is made directly.
fn drop_supplementary_groups() -> io::Result<()> {
    // 32-bit ARM and x86 have two calls; the 32-bit-id one is the real one.
    #[cfg(any(target_arch = "arm", target_arch = "x86"))]
    const SETGROUPS: libc::c_long = libc::SYS_setgroups32;
    #[cfg(not(any(target_arch = "arm", target_arch = "x86")))]
    const SETGROUPS: libc::c_long = libc::SYS_setgroups;
    // SAFETY: setgroups with a size of 0 reads nothing through the (null)
    // list pointer; it only changes the calling thread's credentials.
    let result = unsafe { libc::syscall(SETGROUPS, 0 as libc::size_t, std::ptr::null::<libc::gid_t>()) };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    // getgroups is a plain system call: it answers for this thread.
    match nix::unistd::getgroups() {
        Ok(groups) if groups.is_empty() => Ok(()),
        _ => Err(io::Error::new(io::ErrorKind::PermissionDenied, "cannot drop the supplementary groups")),
    }
}

/// An open directory, reached without following a link in its last step.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Temporary names made by this process, so that two writes never meet.
static TEMP_NAMES: AtomicUsize = AtomicUsize::new(0);

impl Dir {
    /// Opens the directory `path`. Its last component is not followed if it
    /// is a link: "is a symbolic link" is the error then.
    pub fn open(path: &Path) -> io::Result<Dir> {
        let path = if path.as_os_str().is_empty() { Path::new(".") } else { path };
        let fd = open_dir_at(None, path)?;
        Ok(Dir { fd, path: path.to_path_buf() })
    }

    /// Opens `path` following no link on the way, in any component: for a
    /// path whose links were resolved already (`canonicalize`), so that a
    /// link found now was planted since. `..` is taken as the kernel finds it.
    pub fn open_no_links(path: &Path) -> io::Result<Dir> {
        let mut at: Option<OwnedFd> = None;
        for component in path.components() {
            let name = match component {
                Component::RootDir => Path::new("/"),
                Component::CurDir => continue,
                Component::ParentDir => Path::new(".."),
                Component::Normal(name) => Path::new(name),
                Component::Prefix(_) => return Err(io::ErrorKind::InvalidInput.into()),
            };
            at = Some(open_dir_at(at.as_ref().map(AsRawFd::as_raw_fd), name)?);
        }
        match at {
            Some(fd) => Ok(Dir { fd, path: path.to_path_buf() }),
            None => Dir::open(Path::new(".")),
        }
    }

    /// Opens `path`, making it and any missing parents first. New
    /// directories get `mode` (less the umask, which can only take bits
    /// away: 0o700 stays private whatever the umask).
    pub fn create(path: &Path, mode: u32) -> io::Result<Dir> {
        match Dir::open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            other => return other,
        }
        let (parent, name) = split(path)?;
        let parent = Dir::create(&parent, mode)?;
        match mkdirat(Some(parent.raw()), name.as_os_str(), Mode::from_bits_truncate(mode as libc::mode_t)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(e.into()),
        }
        parent.subdir(&name)
    }

    /// The directory `name` in this one, not followed if it is a link.
    pub fn subdir(&self, name: &OsStr) -> io::Result<Dir> {
        check_name(name)?;
        let fd = open_dir_at(Some(self.raw()), Path::new(name))?;
        Ok(Dir { fd, path: self.path.join(name) })
    }

    /// The directory above this one (the real one, not the path's).
    pub fn parent(&self) -> io::Result<Dir> {
        let fd =
            openat(Some(self.raw()), "..", OFlag::O_DIRECTORY | OFlag::O_RDONLY | OFlag::O_CLOEXEC, Mode::empty())?;
        let path = self.path.parent().map(Path::to_path_buf).unwrap_or_else(|| self.path.join(".."));
        Ok(Dir { fd: own(fd), path })
    }

    /// The path it was opened by, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn stat(&self) -> io::Result<FileStat> {
        Ok(fstat(self.raw())?)
    }

    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Writes `bytes` as `name` in this directory, whole or not at all: a
    /// fresh `O_EXCL | O_NOFOLLOW` name, fsync, rename over `name`, fsync of
    /// the directory. `mode` is less the umask, as for any new file.
    pub fn replace(&self, name: &OsStr, bytes: &[u8], mode: u32) -> io::Result<()> {
        check_name(name)?;
        if self.entry_is_dir(name) {
            return Err(io::Error::new(io::ErrorKind::IsADirectory, "it is a directory"));
        }
        let (temp, mut file) = self.create_temp(mode)?;
        let result = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| Ok(renameat(Some(self.raw()), temp.as_os_str(), Some(self.raw()), name)?));
        match result {
            Ok(()) => self.sync(),
            Err(e) => {
                let _ = unlinkat(Some(self.raw()), temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
                Err(e)
            }
        }
    }

    /// Creates `name` for reading and writing: `O_CREAT | O_EXCL | O_NOFOLLOW`, so it
    /// fails on anything already there, a link included.
    pub fn create_new(&self, name: &OsStr, mode: u32) -> io::Result<File> {
        check_name(name)?;
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(Some(self.raw()), name, flags, Mode::from_bits_truncate(mode as libc::mode_t))?;
        Ok(File::from(own(fd)))
    }

    /// A file with no name in this directory, open for reading and
    /// writing: `O_TMPFILE`, or where the filesystem has none (vfat) a fresh
    /// `O_CREAT | O_EXCL | O_NOFOLLOW` name unlinked before it is returned.
    /// Its space returns to the filesystem when it closes, `kill -9` included.
    pub fn nameless_file(&self, mode: u32) -> io::Result<File> {
        let flags = OFlag::O_TMPFILE | OFlag::O_EXCL | OFlag::O_RDWR | OFlag::O_CLOEXEC;
        match openat(Some(self.raw()), ".", flags, Mode::from_bits_truncate(mode as libc::mode_t)) {
            Ok(fd) => return Ok(File::from(own(fd))),
            Err(Errno::EOPNOTSUPP | Errno::EISDIR | Errno::EINVAL) => {}
            Err(e) => return Err(e.into()),
        }
        let (temp, file) = self.create_temp(mode)?;
        unlinkat(Some(self.raw()), temp.as_os_str(), UnlinkatFlags::NoRemoveDir)?;
        Ok(file)
    }

    /// `fstatvfs` on the open directory: its filesystem's sizes.
    pub fn statvfs(&self) -> io::Result<nix::sys::statvfs::Statvfs> {
        Ok(nix::sys::statvfs::fstatvfs(&self.fd)?)
    }

    /// Checks that this process (in its current identity) can make files
    /// here, by making one and removing it.
    pub fn check_writable(&self) -> io::Result<()> {
        let (temp, _file) = self.create_temp(0o600)?;
        unlinkat(Some(self.raw()), temp.as_os_str(), UnlinkatFlags::NoRemoveDir)?;
        Ok(())
    }

    fn create_temp(&self, mode: u32) -> io::Result<(OsString, File)> {
        loop {
            let n = TEMP_NAMES.fetch_add(1, Ordering::Relaxed);
            let temp = OsString::from(format!(".storage-score-{}-{n}.tmp", std::process::id()));
            match self.create_new(&temp, mode) {
                // Left by an earlier process of the same id: take another name.
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => return other.map(|file| (temp, file)),
            }
        }
    }

    fn entry_is_dir(&self, name: &OsStr) -> bool {
        nix::sys::stat::fstatat(Some(self.raw()), name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
            .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR)
    }

    /// Opens `name` for reading: not followed if it is a link, refused
    /// unless it is a regular file. Returns it with its `fstat`.
    pub fn open_regular(&self, name: &OsStr) -> io::Result<(File, FileStat)> {
        check_name(name)?;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd = openat(Some(self.raw()), name, flags, Mode::empty()).map_err(|e| match e {
            Errno::ELOOP => io::Error::new(io::ErrorKind::InvalidInput, "it is a symbolic link, which is not followed"),
            e => e.into(),
        })?;
        let file = File::from(own(fd));
        let stat = regular(&file)?;
        Ok((file, stat))
    }

    /// Reads `name` (see [`Dir::open_regular`]), at most `limit` bytes.
    pub fn read(&self, name: &OsStr, limit: u64) -> io::Result<Vec<u8>> {
        let (file, _) = self.open_regular(name)?;
        read_capped(file, limit)
    }

    /// Removes the file `name`.
    pub fn remove(&self, name: &OsStr) -> io::Result<()> {
        check_name(name)?;
        Ok(unlinkat(Some(self.raw()), name, UnlinkatFlags::NoRemoveDir)?)
    }

    /// The names in this directory (`.` and `..` left out).
    pub fn names(&self) -> io::Result<Vec<OsString>> {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let mut listing = nix::dir::Dir::openat(Some(self.raw()), ".", flags, Mode::empty())?;
        let mut names = Vec::new();
        for entry in listing.iter() {
            let name = OsStr::from_bytes(entry?.file_name().to_bytes()).to_owned();
            if name != "." && name != ".." {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// fsync on the directory, so that a new, renamed or removed name is durable.
    pub fn sync(&self) -> io::Result<()> {
        Ok(nix::unistd::fsync(self.raw())?)
    }
}

/// Reads the file at `path` (links followed, as for any path a user
/// gives): refused unless it is a regular file, at most `limit` bytes.
pub fn read_file(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(path)?;
    regular(&file)?;
    read_capped(file, limit)
}

/// At most `limit` bytes of `reader`; more is an error, not a silent cut.
pub fn read_capped(reader: impl Read, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("it is larger than {}", size_words(limit))));
    }
    Ok(bytes)
}

/// `fstat`, and an error unless the file is a regular one.
pub fn regular(file: &File) -> io::Result<FileStat> {
    let stat = fstat(file.as_raw_fd())?;
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    let what = match kind {
        k if k == SFlag::S_IFREG => return Ok(stat),
        k if k == SFlag::S_IFIFO => "a FIFO",
        k if k == SFlag::S_IFCHR => "a character device",
        k if k == SFlag::S_IFBLK => "a block device",
        k if k == SFlag::S_IFDIR => "a directory",
        k if k == SFlag::S_IFSOCK => "a socket",
        _ => "not a file",
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("it is {what}, not a regular file")))
}

/// The parent directory and the last component of `path`, which must name
/// something (not `/`, `.` or `..`).
pub fn split(path: &Path) -> io::Result<(PathBuf, OsString)> {
    let Some(Component::Normal(name)) = path.components().next_back() else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "it names no file"));
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_owned()))
}

fn check_name(name: &OsStr) -> io::Result<()> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes == b"." || bytes == b".." || bytes.contains(&b'/') {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file name"));
    }
    Ok(())
}

fn open_dir_at(at: Option<RawFd>, path: &Path) -> io::Result<OwnedFd> {
    let flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC;
    match openat(at, path, flags, Mode::empty()) {
        Ok(fd) => Ok(own(fd)),
        // O_NOFOLLOW on a link: ELOOP (or ENOTDIR with O_DIRECTORY on some kernels).
        Err(Errno::ELOOP) => Err(symlink_error()),
        Err(Errno::ENOTDIR) if is_symlink(at, path) => Err(symlink_error()),
        Err(e) => Err(e.into()),
    }
}

fn is_symlink(at: Option<RawFd>, path: &Path) -> bool {
    nix::sys::stat::fstatat(at, path, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW)
        .is_ok_and(|st| SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT == SFlag::S_IFLNK)
}

fn symlink_error() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, "it is a symbolic link, which is not followed")
}

/// Takes ownership of a descriptor that a system call just returned.
fn own(fd: RawFd) -> OwnedFd {
    // SAFETY: `fd` was returned by a successful openat a moment ago and
    // nothing else holds it: this is its one owner, which closes it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// "64 MiB", for limits in messages.
fn size_words(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

    #[test]
    fn a_planted_link_is_replaced_not_written_through() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "keep").unwrap();
        symlink(&victim, tmp.path().join("card.json")).unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        dir.replace(OsStr::new("card.json"), b"{}", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
        let meta = std::fs::symlink_metadata(tmp.path().join("card.json")).unwrap();
        assert!(meta.is_file());
        assert_eq!(std::fs::read_to_string(tmp.path().join("card.json")).unwrap(), "{}");
        // Nothing but the two names is left.
        assert_eq!(dir.names().unwrap(), ["card.json", "victim"]);
    }

    #[test]
    fn a_directory_reached_through_a_link_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("real")).unwrap();
        symlink(tmp.path().join("real"), tmp.path().join("link")).unwrap();
        let err = Dir::open(&tmp.path().join("link")).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        let err = Dir::create(&tmp.path().join("link"), 0o700).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // A link to a file is no directory either.
        std::fs::write(tmp.path().join("f"), "").unwrap();
        symlink(tmp.path().join("f"), tmp.path().join("flink")).unwrap();
        assert!(Dir::open(&tmp.path().join("flink")).unwrap_err().to_string().contains("symbolic link"));
    }

    #[test]
    fn new_directories_are_private_whatever_the_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let old = nix::sys::stat::umask(Mode::empty());
        let made = Dir::create(&tmp.path().join("a/b/c"), 0o700);
        nix::sys::stat::umask(old);
        made.unwrap();
        for sub in ["a", "a/b", "a/b/c"] {
            let mode = std::fs::metadata(tmp.path().join(sub)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o700, "{sub}");
        }
    }

    #[test]
    fn reads_refuse_fifos_devices_links_and_endless_files() {
        let tmp = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&tmp.path().join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        // Returns at once: the open does not wait for a writer.
        let err = dir.read(OsStr::new("fifo"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("a FIFO, not a regular file"), "{err}");
        let err = read_file(&tmp.path().join("fifo"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("FIFO"), "{err}");
        let err = read_file(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("character device"), "{err}");
        std::fs::write(tmp.path().join("big"), vec![b'x'; 5000]).unwrap();
        let err = read_file(&tmp.path().join("big"), 4096).unwrap_err();
        assert!(err.to_string().contains("larger than 4 KiB"), "{err}");
        assert_eq!(read_file(&tmp.path().join("big"), 5000).unwrap().len(), 5000);
        symlink(tmp.path().join("big"), tmp.path().join("link")).unwrap();
        let err = dir.read(OsStr::new("link"), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        // A plain path read follows it: the user named it.
        assert_eq!(read_file(&tmp.path().join("link"), 5000).unwrap().len(), 5000);
    }

    #[test]
    fn a_directory_is_not_replaced_by_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir(tmp.path().join("card.html")).unwrap();
        let dir = Dir::open(tmp.path()).unwrap();
        let err = dir.replace(OsStr::new("card.html"), b"x", 0o644).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::IsADirectory);
        assert!(dir.replace(OsStr::new("../x"), b"x", 0o644).is_err());
    }

    #[test]
    fn work_as_a_user_has_their_identity_and_none_of_roots_groups() {
        if !nix::unistd::geteuid().is_root() {
            return; // switching identity needs root
        }
        let mine = nix::unistd::getgroups().unwrap();
        let root_only = tempfile::tempdir().unwrap();
        std::fs::set_permissions(root_only.path(), std::fs::Permissions::from_mode(0o770)).unwrap();
        let nobody = Identity { uid: 65534, gid: 65534 };
        let (fsuid, groups, denied) = as_identity(Some(nobody), || {
            let fsuid = nix::unistd::setfsuid(Uid::from_raw(65534)).as_raw();
            let denied = Dir::open(root_only.path()).and_then(|d| d.check_writable()).is_err();
            Ok((fsuid, nix::unistd::getgroups()?, denied))
        })
        .unwrap();
        assert_eq!((fsuid, groups.len(), denied), (65534, 0, true));
        // The rest of the process is as it was.
        assert_eq!(nix::unistd::getgroups().unwrap(), mine);
        assert!(Dir::open(root_only.path()).unwrap().check_writable().is_ok());
    }

    #[test]
    fn paths_split_into_directory_and_name() {
        assert_eq!(split(Path::new("card.json")).unwrap(), (PathBuf::from("."), OsString::from("card.json")));
        assert_eq!(split(Path::new("/a/b.json")).unwrap(), (PathBuf::from("/a"), OsString::from("b.json")));
        assert!(split(Path::new("/")).is_err());
        assert!(split(Path::new("a/..")).is_err());
    }

    #[test]
    fn the_parent_is_the_real_one() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("a/b")).unwrap();
        let b = Dir::open(&tmp.path().join("a/b")).unwrap();
        let a = b.parent().unwrap();
        let want = std::fs::metadata(tmp.path().join("a")).unwrap();
        assert_eq!((a.stat().unwrap().st_ino as u64, a.stat().unwrap().st_dev as u64), (want.ino(), want.dev()));
    }
}
