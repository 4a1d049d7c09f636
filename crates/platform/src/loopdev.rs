//! What a loop device reads and writes, asked of the kernel by number
//! rather than by path: `LOOP_GET_STATUS64` gives the backing file's
//! device and inode (and, for a block device node, the device it stands
//! for). The `backing_file` text in sysfs is only a name: it no longer
//! resolves once the backing node is deleted or renamed, or when it lives
//! in another mount namespace, and a loop device found only by it can be
//! missed (docs/safety.md#before-a-raw-write).

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::Path;

/// `struct loop_info64` of `<linux/loop.h>`, field for field.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

// LOOP_GET_STATUS64 is 0x4C05, an old-style request number without the
// size and direction bits (hence the "bad" macro).
nix::ioctl_read_bad!(loop_get_status64, 0x4C05, LoopInfo64);

/// What backs a bound loop device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backing {
    /// The `st_dev` of the backing file: the filesystem that holds it (for
    /// a device node, the filesystem of `/dev`).
    pub dev: u64,
    /// Its inode number there.
    pub inode: u64,
    /// For a block device node, the device it stands for (its `st_rdev`);
    /// 0 for a regular file.
    pub rdev: u64,
}

/// The backing of the loop device with number `loop_dev`, opened through
/// `node` (checked to be that device). `None` when the node is not that
/// loop device, cannot be opened, or the loop device is not bound.
pub fn backing(node: &Path, loop_dev: u64) -> Option<Backing> {
    // Read-only and non-blocking: asking is all this does.
    let file =
        std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC).open(node).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.file_type().is_block_device() || meta.rdev() != loop_dev {
        return None;
    }
    status(&file)
}

fn status(file: &File) -> Option<Backing> {
    // SAFETY: LoopInfo64 is plain integers and byte arrays, for which all
    // zeroes is a valid value.
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the call's whole length and is a
    // block device (checked by the caller's fstat); LOOP_GET_STATUS64 writes
    // exactly one struct loop_info64, which `info` is, laid out by
    // #[repr(C)] as the kernel's. A device that is not a loop device, or an
    // unbound one, fails with an error and writes nothing.
    unsafe { loop_get_status64(file.as_raw_fd(), &mut info) }.ok()?;
    // The kernel encodes device numbers as huge_encode_dev, which equals
    // the C library's makedev for every real device number.
    Some(Backing { dev: info.lo_device, inode: info.lo_inode, rdev: info.lo_rdevice })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_struct_has_the_kernels_size() {
        // 5 u64, 4 u32, 64 + 64 + 32 bytes, 2 u64 (<linux/loop.h>).
        assert_eq!(std::mem::size_of::<LoopInfo64>(), 232);
    }

    #[test]
    fn a_file_that_is_not_a_loop_device_has_no_backing() {
        assert_eq!(backing(Path::new("/dev/null"), 0), None);
        assert_eq!(backing(Path::new("/nonexistent"), 0), None);
    }
}
