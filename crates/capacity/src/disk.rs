//! The device under test, as the probe sees it: a size, reads and writes at
//! byte offsets, and a cache flush. [`RawDisk`] is the real block device,
//! opened `O_DIRECT | O_EXCL` so that no page cache answers for the card and
//! nobody else can open it exclusively (mount it, say) while we work.
//!
//! The [`Disk`] trait is also the seam for the in-memory fault models the
//! unit tests use (`sim.rs`); the end-to-end tests use real loop devices.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use storage_platform::usage::{self, OpenRefusal};

/// Byte-addressed block storage.
pub trait Disk {
    /// The size the device announces, in bytes.
    fn size(&self) -> u64;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&mut self, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// Writes all of `buf` at `offset`.
    fn write_at(&mut self, offset: u64, buf: &[u8]) -> io::Result<()>;
    /// Asks the device to make what it was given durable.
    fn sync(&mut self) -> io::Result<()>;
    /// The smallest unit it reads and writes (its logical sector).
    fn sector(&self) -> u64 {
        512
    }
}

/// A whole block device, opened for direct, exclusive I/O.
#[derive(Debug)]
pub struct RawDisk {
    file: File,
    size: u64,
    sector: u64,
}

impl RawDisk {
    /// Opens the block device `path`, checked as device number `checked`,
    /// read-write with `O_DIRECT | O_EXCL` through
    /// [`usage::open_for_writing`]: the usage check runs again just before
    /// the open, and the device opened must be the one checked. On a block
    /// device, `O_EXCL` fails with EBUSY while it (or a partition of it) is
    /// mounted or held by another exclusive user.
    pub fn open(path: &Path, checked: u64) -> Result<RawDisk, OpenRefusal> {
        let (mut file, _) = usage::open_for_writing(path, libc::O_DIRECT)?;
        let opened = file.metadata().map_err(OpenRefusal::Open)?.rdev();
        if opened != checked {
            return Err(OpenRefusal::Replaced { checked, opened });
        }
        // lseek(SEEK_END) on a block device gives its size in bytes.
        let size = file.seek(SeekFrom::End(0)).map_err(OpenRefusal::Open)?;
        let sector = logical_sector(&file).unwrap_or(512);
        Ok(RawDisk { file, size, sector })
    }
}

/// The device's logical block size, from sysfs (no ioctl, so no `unsafe`).
fn logical_sector(file: &File) -> Option<u64> {
    let rdev = file.metadata().ok()?.rdev();
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let text = std::fs::read_to_string(format!("/sys/dev/block/{major}:{minor}/queue/logical_block_size")).ok()?;
    text.trim().parse().ok().filter(|s: &u64| s.is_power_of_two() && (512..=4096).contains(s))
}

impl Disk for RawDisk {
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
        self.file.sync_all()
    }

    fn sector(&self) -> u64 {
        self.sector
    }
}

/// Alignment that O_DIRECT accepts on every Linux block device we meet
/// (logical blocks are 512 or 4096 bytes).
pub const ALIGN: usize = 4096;

/// A zeroed buffer whose start is aligned for O_DIRECT, without `unsafe`:
/// a slightly larger `Vec` and an aligned window into it.
#[derive(Debug, Clone)]
pub struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn new(len: usize) -> AlignedBuf {
        let storage = vec![0u8; len + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN).min(ALIGN);
        AlignedBuf { storage, start, len }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned() {
        for len in [512, 4096, 1 << 20] {
            let mut buf = AlignedBuf::new(len);
            assert_eq!(buf.as_slice().as_ptr() as usize % ALIGN, 0);
            assert_eq!(buf.as_mut_slice().len(), len);
        }
    }
}
