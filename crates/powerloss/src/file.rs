//! The file mode (docs/power-loss.md#the-file-mode): the records go into a
//! test file on a mounted filesystem, as diskchecker.pl does, so the card's
//! data stays and the filesystem's own flush (its journal, the file's
//! blocks allocated on first write) is checked with the card's. The power
//! commands must unmount and mount it again; the file is found again by
//! its path and inode.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use storage_capacity::Disk;

use crate::Error;
use crate::engine::{Device, Host};
use crate::host::run_command;

/// The test file, opened for direct I/O when the filesystem allows it.
#[derive(Debug)]
pub struct FileDisk {
    file: File,
    size: u64,
}

impl FileDisk {
    fn open(path: &Path) -> io::Result<FileDisk> {
        let direct =
            OpenOptions::new().read(true).write(true).custom_flags(libc::O_DIRECT | libc::O_NOFOLLOW).open(path);
        // tmpfs and some FUSE filesystems refuse O_DIRECT; fdatasync still
        // says what the filesystem promises.
        let file = match direct {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                OpenOptions::new().read(true).write(true).custom_flags(libc::O_NOFOLLOW).open(path)?
            }
            other => other?,
        };
        let size = file.metadata()?.len();
        Ok(FileDisk { file, size })
    }
}

impl Disk for FileDisk {
    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }
}

/// A new test file of `bytes` (a multiple of 4 KiB) in `dir`, made with
/// `O_EXCL` and left sparse, its name made durable in the directory before
/// the first cut.
pub fn create(dir: &Path, bytes: u64, run: &[u8; 16]) -> Result<(PathBuf, Device), Error> {
    let hex: String = run[..6].iter().map(|b| format!("{b:02x}")).collect();
    let path = dir.join(format!("storage-score-power-loss-{hex}.dat"));
    let said = |e: io::Error| Error::Io(format!("cannot make the test file {}: {e}", path.display()));
    let free = nix::sys::statvfs::statvfs(dir).map_err(|e| said(e.into()))?;
    let available = free.blocks_available() as u64 * free.fragment_size() as u64;
    if available < bytes + bytes / 10 {
        return Err(Error::Refused(format!(
            "{} has {} MiB free, too little for a {} MiB test file and a margin; free some space or give a smaller --file-mib",
            dir.display(),
            available >> 20,
            bytes >> 20
        )));
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&path)
        .map_err(said)?;
    file.set_len(bytes).map_err(said)?;
    file.sync_all().map_err(said)?;
    File::open(dir).and_then(|d| d.sync_all()).map_err(said)?;
    drop(file);
    let disk = FileDisk::open(&path).map_err(said)?;
    Ok((path, Box::new(disk)))
}

/// Power by command, the file found again by path and inode.
#[derive(Debug, Clone)]
pub struct FileHost {
    pub power_off: String,
    pub power_on: String,
    pub path: PathBuf,
    pub inode: u64,
    pub size: u64,
}

impl Host for FileHost {
    fn power_off(&mut self) -> Result<(), Error> {
        run_command("--power-off", &self.power_off)
    }

    fn power_on(&mut self) -> Result<(), Error> {
        run_command("--power-on", &self.power_on)
    }

    fn find(&mut self) -> Result<Option<Device>, Error> {
        match std::fs::symlink_metadata(&self.path) {
            Ok(m) if m.is_file() && m.ino() == self.inode && m.len() == self.size => {
                Ok(FileDisk::open(&self.path).ok().map(|d| Box::new(d) as Device))
            }
            // Not mounted again yet (or another file in its place).
            _ => Ok(None),
        }
    }
}
