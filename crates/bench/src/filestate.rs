//! What state a test file is in, as the kernel reports it: its inode and
//! generation (`fstat`, `FS_IOC_GETVERSION`), its size, and its extents
//! (`FS_IOC_FIEMAP`, the ioctl behind `filefrag -v`; the layout of
//! `struct fiemap` and the extent flags are the kernel's
//! include/uapi/linux/fiemap.h).
//!
//! PiBenchmarks' file states (docs/measurements.md) are facts of this kind: fio's
//! randwrite meets a file of unwritten extents, its randread a file written
//! end to end, iozone's write an empty file that grows. Each test records
//! the state it met in its detail, so a report shows it.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;

use storage_scoring::schema::FileState;

/// `FIEMAP_EXTENT_LAST`: the last extent of the file.
const EXTENT_LAST: u32 = 0x0001;
/// `FIEMAP_EXTENT_UNWRITTEN`: space allocated but never written (reads as zeros).
const EXTENT_UNWRITTEN: u32 = 0x0800;
/// Extents asked for per ioctl.
const BATCH: usize = 256;
/// `struct fiemap` without its extents: 32 bytes.
const HEADER: usize = 32;
/// `struct fiemap_extent`: 56 bytes.
const EXTENT: usize = 56;

nix::ioctl_read!(get_version, b'v', 1, libc::c_long);

/// Extents of a file, summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extents {
    pub count: u64,
    pub allocated_bytes: u64,
    pub unwritten_bytes: u64,
}

/// Maps the extents of `file` (without syncing it first). `None` when the
/// filesystem has no FIEMAP (tmpfs, FUSE, most network filesystems).
pub fn extents(file: &File) -> Option<Extents> {
    // FS_IOC_FIEMAP is _IOWR('f', 11, struct fiemap): the size in the
    // request number is the header's; the extents follow it in memory.
    let request = nix::request_code_readwrite!(b'f', 11, HEADER);
    let mut sum = Extents::default();
    let mut start = 0u64;
    // Bounded: a file of more than 256 × 4096 extents is summed in part.
    for _ in 0..4096 {
        // u64 words keep the buffer 8-byte aligned, as the struct needs.
        let mut words = vec![0u64; (HEADER + BATCH * EXTENT) / 8];
        words[0] = start; // fm_start
        words[1] = u64::MAX - start; // fm_length
        // fm_flags (u32) = 0, fm_mapped_extents (u32) = 0 (out),
        // fm_extent_count (u32) = BATCH, fm_reserved (u32).
        words[3] = BATCH as u64;
        // SAFETY: `words` holds a fiemap header asking for at most BATCH
        // extents and room for them; the kernel writes only inside it.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), request as _, words.as_mut_ptr()) };
        if rc < 0 {
            return None;
        }
        let mapped = (words[2] >> 32) as usize;
        if mapped == 0 {
            break;
        }
        let mut last = false;
        for e in 0..mapped.min(BATCH) {
            let base = (HEADER + e * EXTENT) / 8;
            // fe_logical, fe_physical, fe_length, fe_reserved64[2], fe_flags (u32).
            let (logical, length) = (words[base], words[base + 2]);
            let flags = (words[base + 5] & 0xffff_ffff) as u32;
            sum.count += 1;
            sum.allocated_bytes += length;
            if flags & EXTENT_UNWRITTEN != 0 {
                sum.unwritten_bytes += length;
            }
            start = logical + length;
            last |= flags & EXTENT_LAST != 0;
        }
        if last {
            break;
        }
    }
    Some(sum)
}

/// The inode generation, where the filesystem keeps one (ext2/3/4, btrfs, xfs).
pub fn generation(file: &File) -> Option<u32> {
    let mut value: libc::c_long = 0;
    // SAFETY: FS_IOC_GETVERSION writes one long into `value`.
    unsafe { get_version(file.as_raw_fd(), &mut value) }.ok()?;
    Some(value as u32)
}

/// The state of `file` now; `size_after_bytes` is filled in at the end of
/// the test with [`finish`].
pub fn observe(file: &File, new_file: bool) -> Option<FileState> {
    let meta = file.metadata().ok()?;
    let extents = extents(file).unwrap_or_default();
    Some(FileState {
        new_file,
        inode: meta.ino(),
        generation: generation(file),
        size_bytes: meta.len(),
        size_after_bytes: meta.len(),
        allocated_bytes: extents.allocated_bytes,
        unwritten_bytes: extents.unwritten_bytes,
        extents: extents.count,
    })
}

/// Records the file's size at the end of the test.
pub fn finish(state: &mut Option<FileState>, file: &File) {
    if let (Some(state), Ok(meta)) = (state.as_mut(), file.metadata()) {
        state.size_after_bytes = meta.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn sees_unwritten_and_written_extents_where_the_filesystem_maps_them() {
        let dir = tempfile::tempdir_in("/var/tmp").expect("tempdir");
        let mut file = tempfile::tempfile_in(dir.path()).expect("tempfile");
        let Some(empty) = extents(&file) else { return }; // no FIEMAP here
        assert_eq!(empty, Extents::default());
        if nix::fcntl::fallocate(file.as_raw_fd(), nix::fcntl::FallocateFlags::empty(), 0, 1 << 20).is_err() {
            return;
        }
        let allocated = extents(&file).expect("fiemap");
        assert_eq!(allocated.allocated_bytes, 1 << 20, "{allocated:?}");
        assert_eq!(allocated.unwritten_bytes, 1 << 20, "{allocated:?}");
        file.write_all(&vec![1u8; 1 << 20]).expect("write");
        file.sync_all().expect("fsync");
        let written = extents(&file).expect("fiemap");
        assert_eq!(written.unwritten_bytes, 0, "{written:?}");
        let state = observe(&file, true).expect("state");
        assert_eq!(state.size_bytes, 1 << 20);
    }
}
