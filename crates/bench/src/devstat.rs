//! Proof that a test's I/O reached the device: the block layer's own
//! counters (`/sys/dev/block/MAJ:MIN/stat`, documented in the kernel's
//! Documentation/block/stat.rst: read I/Os, read merges, read sectors, read
//! ticks, write I/Os, write merges, write sectors, write ticks, in flight, …;
//! sectors are 512 bytes whatever the device's block size) before and after
//! each timed window.
//!
//! A filesystem that ignores O_DIRECT, a cache in front of the device (ZFS's
//! ARC, a page cache, a FUSE server keeping data in memory) or a device that
//! is not the one measured all show up as bytes the test moved that the
//! device never counted.
//!
//! These counters are read from the live sysfs even when identification
//! reads a captured tree (`--sysfs-root`): the I/O always goes to a live
//! device, and a captured `stat` would never move.

use std::fs::File;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use storage_scoring::schema::DeviceIo;

/// The counters of one block device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevStat {
    /// Kernel name, e.g. `loop3p1`.
    pub name: String,
    path: PathBuf,
}

/// One reading of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snapshot {
    pub read_ios: u64,
    pub read_sectors: u64,
    pub write_ios: u64,
    pub write_sectors: u64,
    pub in_flight: u64,
}

impl Snapshot {
    /// Parses a `stat` file's fields.
    pub fn parse(text: &str) -> Option<Snapshot> {
        let fields: Vec<u64> = text.split_whitespace().map(str::parse).collect::<Result<_, _>>().ok()?;
        Some(Snapshot {
            read_ios: *fields.first()?,
            read_sectors: *fields.get(2)?,
            write_ios: *fields.get(4)?,
            write_sectors: *fields.get(6)?,
            in_flight: *fields.get(8)?,
        })
    }
}

impl DevStat {
    /// The device behind `file`: the block device itself for a device node,
    /// else the device of the filesystem holding it. Filesystems with an
    /// anonymous device number (btrfs, overlayfs, FUSE: major 0) have no
    /// counters of their own; `fallback` names the block device the target
    /// resolved to, whose counters are used instead.
    pub fn for_file(file: &File, sysfs: &Path, fallback: Option<&Path>) -> Option<DevStat> {
        let meta = file.metadata().ok()?;
        let dev = if meta.file_type().is_block_device() { meta.rdev() } else { meta.dev() };
        let dev = if nix::sys::stat::major(dev) != 0 {
            dev
        } else {
            let node = std::fs::metadata(fallback?).ok()?;
            if !node.file_type().is_block_device() {
                return None;
            }
            node.rdev()
        };
        DevStat::for_devnum(sysfs, dev)
    }

    /// The counters of device number `dev`.
    pub fn for_devnum(sysfs: &Path, dev: u64) -> Option<DevStat> {
        let (major, minor) = (nix::sys::stat::major(dev), nix::sys::stat::minor(dev));
        let dir = sysfs.join("dev/block").join(format!("{major}:{minor}"));
        let name = std::fs::canonicalize(&dir).ok()?.file_name()?.to_string_lossy().into_owned();
        let stat = DevStat { name, path: dir.join("stat") };
        stat.snapshot().map(|_| stat)
    }

    pub fn snapshot(&self) -> Option<Snapshot> {
        Snapshot::parse(&std::fs::read_to_string(&self.path).ok()?)
    }
}

/// Which way the test moved its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// The share of a test's bytes the device must count for the test to have
/// reached it: filesystems add their own I/O, never take any away, but a
/// device shared with other work may be counted in whole requests.
const REACHED_SHARE: f64 = 0.9;

/// The evidence for one window: what the device counted against `expected`
/// bytes moved `direction`.
pub fn evidence(stat: &DevStat, before: Snapshot, after: Snapshot, direction: Direction, expected: u64) -> DeviceIo {
    let read_bytes = after.read_sectors.saturating_sub(before.read_sectors) * 512;
    let write_bytes = after.write_sectors.saturating_sub(before.write_sectors) * 512;
    let counted = match direction {
        Direction::Read => read_bytes,
        Direction::Write => write_bytes,
    };
    DeviceIo {
        device: stat.name.clone(),
        expected_bytes: expected,
        read_bytes,
        write_bytes,
        read_ios: after.read_ios.saturating_sub(before.read_ios),
        write_ios: after.write_ios.saturating_sub(before.write_ios),
        in_flight_before: before.in_flight,
        in_flight_after: after.in_flight,
        reached: counted as f64 >= expected as f64 * REACHED_SHARE,
    }
}

/// One sentence for a window whose bytes did not reach the device.
pub fn missed(io: &DeviceIo, direction: Direction) -> String {
    let counted = match direction {
        Direction::Read => io.read_bytes,
        Direction::Write => io.write_bytes,
    };
    let verb = match direction {
        Direction::Read => "read",
        Direction::Write => "wrote",
    };
    format!(
        "only {:.1} MiB of the {:.1} MiB this test {verb} reached {} (a cache or a filesystem that ignores O_DIRECT served the rest): the figure is not the device's",
        counted as f64 / 1_048_576.0,
        io.expected_bytes as f64 / 1_048_576.0,
        io.device
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        let text = "    1520      42   123456     987     300      12    65536    4321        2     1111     5308        0        0        0        0      17      53\n";
        let s = Snapshot::parse(text).expect("parse");
        assert_eq!(
            s,
            Snapshot { read_ios: 1520, read_sectors: 123456, write_ios: 300, write_sectors: 65536, in_flight: 2 }
        );
        assert!(Snapshot::parse("1 2 3").is_none());
    }

    #[test]
    fn reached_needs_nine_tenths_of_the_bytes() {
        let stat = DevStat { name: "loop9".into(), path: PathBuf::new() };
        let before = Snapshot { read_sectors: 100, write_sectors: 100, ..Snapshot::default() };
        let after = Snapshot { read_sectors: 100 + 2048, write_sectors: 100 + 10, ..Snapshot::default() };
        let read = evidence(&stat, before, after, Direction::Read, 1 << 20);
        assert!(read.reached, "{read:?}");
        let write = evidence(&stat, before, after, Direction::Write, 1 << 20);
        assert!(!write.reached, "{write:?}");
        assert!(
            missed(&write, Direction::Write).contains("only 0.0 MiB of the 1.0 MiB"),
            "{}",
            missed(&write, Direction::Write)
        );
    }

    #[test]
    fn a_real_device_has_counters() {
        // The filesystem of the temporary directory, when it has a device.
        let file = tempfile::tempfile().expect("tempfile");
        if let Some(stat) = DevStat::for_file(&file, Path::new("/sys"), None) {
            assert!(stat.snapshot().is_some());
        }
    }
}
