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
    /// Reads `buf.len() / offsets.len()` bytes at each of `offsets` into
    /// the matching slice of `buf`, and says for each whether it read. The
    /// order they are served in is the device's: one after another here,
    /// a few at once on a [`RawDisk`], which hides the time between two
    /// requests (the card still serves them one at a time).
    fn read_each(&mut self, offsets: &[u64], buf: &mut [u8]) -> Vec<io::Result<()>> {
        let len = buf.len() / offsets.len().max(1);
        offsets.iter().zip(buf.chunks_mut(len.max(1))).map(|(&at, out)| self.read_at(at, out)).collect()
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

    fn read_each(&mut self, offsets: &[u64], buf: &mut [u8]) -> Vec<io::Result<()>> {
        read_each_at(&self.file, offsets, buf, IN_FLIGHT)
    }
}

/// Reads a [`Disk::read_each`] keeps in flight on a real device: while the
/// card serves one, the next is on its way to it.
const IN_FLIGHT: usize = 2;

/// [`Disk::read_each`] on a file with `threads` reads in flight, each
/// thread taking the next offset as it is free.
fn read_each_at(file: &File, offsets: &[u64], buf: &mut [u8], threads: usize) -> Vec<io::Result<()>> {
    let len = buf.len() / offsets.len().max(1);
    if len == 0 {
        return offsets.iter().map(|_| Ok(())).collect();
    }
    let work = std::sync::Mutex::new(offsets.iter().copied().zip(buf.chunks_mut(len)).enumerate());
    let mut done: Vec<(usize, io::Result<()>)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, offsets.len().max(1)))
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let next = work.lock().map(|mut w| w.next()).unwrap_or(None);
                        let Some((i, (at, out))) = next else { break };
                        done.push((i, file.read_exact_at(out, at)));
                    }
                    done
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    let mut results: Vec<io::Result<()>> = Vec::with_capacity(offsets.len());
    let mut it = done.into_iter().peekable();
    for i in 0..offsets.len() {
        match it.peek() {
            Some((j, _)) if *j == i => results.push(it.next().map_or(Ok(()), |(_, r)| r)),
            _ => results.push(Err(io::Error::other("a reader thread failed"))),
        }
    }
    results
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
    fn reads_in_flight_land_where_they_belong() {
        use std::io::Write;
        let mut file = tempfile::tempfile().expect("file");
        let data: Vec<u8> = (0..64 * 4096u32).map(|i| (i / 4096) as u8 ^ (i % 251) as u8).collect();
        file.write_all(&data).expect("write");
        let offsets: Vec<u64> = (0..40).map(|i| (i * 7 % 64) * 4096 + 512).filter(|&o| o + 4096 <= 64 * 4096).collect();
        for threads in [1, 2, 4] {
            let mut buf = vec![0u8; offsets.len() * 4096];
            let results = read_each_at(&file, &offsets, &mut buf, threads);
            assert!(results.iter().all(|r| r.is_ok()));
            for (&at, got) in offsets.iter().zip(buf.chunks(4096)) {
                assert_eq!(got, &data[at as usize..at as usize + 4096]);
            }
        }
        // Past the end: that one fails, the others still read.
        let mut buf = vec![0u8; 2 * 4096];
        let results = read_each_at(&file, &[0, 64 * 4096], &mut buf, 2);
        assert!(results[0].is_ok() && results[1].is_err());
    }

    #[test]
    fn buffers_are_aligned() {
        for len in [512, 4096, 1 << 20] {
            let mut buf = AlignedBuf::new(len);
            assert_eq!(buf.as_slice().as_ptr() as usize % ALIGN, 0);
            assert_eq!(buf.as_mut_slice().len(), len);
        }
    }
}
