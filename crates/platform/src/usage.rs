//! Who is using a block device: the one check before every raw write
//! (`run --destructive`, `profile --raw`, `verify-capacity`;
//! docs/safety.md#before-a-raw-write).
//!
//! It always reads the live `/sys` and `/proc`, never a `--sysfs-root`
//! tree: a captured tree says nothing about what this machine has mounted
//! or open. It finds, on the device or anything stacked on it:
//! - the running system's root filesystem;
//! - a device-mapper, RAID or other holder (`holders/`);
//! - a loop device whose backing file is the device, or a file on it
//!   (loop devices are not holders, so a filesystem mounted on one would be
//!   missed otherwise); asked of the kernel by device and inode
//!   ([`crate::loopdev`]), so a deleted, renamed or namespaced backing path
//!   hides nothing;
//! - a mounted filesystem, directly or through any of those stacks;
//! - a swap area;
//! - another process with the device open, by any node name (each open
//!   descriptor is `stat`ed, so a private device node is seen too), or
//!   with it mapped into memory (`/proc/PID/maps`; the descriptor may be
//!   closed long since).
//!
//! [`open_for_writing`] is the one way to open a device for a raw write: it
//! runs the check immediately before the open, opens `O_EXCL` (which then
//! keeps a mount out) and compares the opened device's number with the one
//! checked, so a node swapped in between is refused. Each finding is one
//! [`InUse`], which says what to run to release the device.

use std::collections::BTreeSet;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::loopdev;
use crate::sysfs::{self, Roots};
use crate::target::{self, Mount};

/// Why a device cannot be written raw now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InUse {
    /// The root filesystem lives on it.
    RootDisk,
    /// A filesystem on it (or stacked on it) is mounted.
    Mounted { source: String, mount_point: PathBuf, through: Option<String> },
    /// It (or something stacked on it) is a swap area.
    Swap { device: String },
    /// Device-mapper, RAID or another driver holds it.
    Holder { holder: String, dm_name: Option<String> },
    /// A loop device reads and writes it as its backing file.
    Loop { device: String, mount_point: Option<PathBuf> },
    /// Another process has it open.
    Open { pid: u32, command: String },
}

impl InUse {
    /// What is wrong and the command that releases the device, for `input`
    /// (the device as the user gave it). [`InUse::RootDisk`] has no such
    /// command: the caller says what to do instead.
    pub fn message(&self, input: &str) -> String {
        match self {
            InUse::RootDisk => format!("{input} holds the running system (/)"),
            InUse::Mounted { source, mount_point, through } => {
                let point = shell_word(&mount_point.display().to_string());
                let via = through.as_ref().map(|t| format!(" through {t}")).unwrap_or_default();
                format!("{input} is mounted ({source} at {point}{via}); unmount it first: sudo umount {point}")
            }
            InUse::Swap { device } => {
                let device = shell_word(device);
                format!("{input} is in use as swap ({device}); turn it off first: sudo swapoff {device}")
            }
            InUse::Holder { holder, dm_name } => {
                let command = match dm_name {
                    Some(dm) => format!("sudo dmsetup remove {}", shell_word(dm)),
                    None if holder.starts_with("md") => format!("sudo mdadm --stop /dev/{holder}"),
                    None => format!("stop whatever uses /dev/{holder}"),
                };
                format!("{input} is held by /dev/{holder}; release it first: {command}")
            }
            InUse::Loop { device, mount_point } => match mount_point {
                Some(point) => {
                    let point = shell_word(&point.display().to_string());
                    format!(
                        "{input} is the backing device of {device}, which is mounted at {point}; unmount and detach it first: sudo umount {point} && sudo losetup -d {device}"
                    )
                }
                None => format!("{input} is the backing device of {device}; detach it first: sudo losetup -d {device}"),
            },
            InUse::Open { pid, command } => format!(
                "{input} is open in another program ({command}, pid {pid}); close it, or stop it: sudo kill {pid}"
            ),
        }
    }
}

impl fmt::Display for InUse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message("the device"))
    }
}

/// The device numbers a raw write to one node reaches or overlaps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Family {
    /// The node itself and, for a whole disk, its partitions: anything on
    /// these is in the way.
    pub written: BTreeSet<u64>,
    /// For a partition, its whole disk: a user of the whole disk (a loop
    /// device over it, a process with it open) overlaps the partition, a
    /// user of a sibling partition does not.
    pub around: BTreeSet<u64>,
}

impl Family {
    /// The family of the block device number `dev`, from the live sysfs.
    pub fn of(dev: u64) -> Family {
        let roots = Roots::live();
        let mut family = Family::default();
        family.written.insert(dev);
        let (major, minor) = target::split_dev(dev);
        let Some(block) = target::block_by_devnum(&roots, major, minor) else { return family };
        if block.sys_dir.join("partition").exists() {
            let disk = block.sys_dir.parent().and_then(|d| sysfs::read_attr(&d.join("dev")));
            family.around.extend(disk.as_deref().and_then(parse_devnum));
        } else if let Ok(entries) = fs::read_dir(&block.sys_dir) {
            for entry in entries.flatten() {
                if entry.path().join("partition").exists() {
                    family
                        .written
                        .extend(sysfs::read_attr(&entry.path().join("dev")).as_deref().and_then(parse_devnum));
                }
            }
        }
        family
    }

    fn all(&self) -> impl Iterator<Item = &u64> {
        self.written.iter().chain(&self.around)
    }

    /// True when a write to the family reaches `dev` or anything it is
    /// stacked on: a filesystem or loop device there would be overwritten.
    pub fn reaches(&self, dev: u64) -> bool {
        lower_devices(dev).iter().any(|d| self.written.contains(d) || self.around.contains(d))
    }
}

/// Checks that nothing uses the block device `node` (see the module notes).
/// Reads the live system whatever `--sysfs-root` says.
pub fn check(node: &Path) -> Result<Family, InUse> {
    match fs::metadata(node) {
        Ok(meta) if meta.file_type().is_block_device() => check_dev(meta.rdev()),
        // Not a block device: the callers refuse that with their own words.
        _ => Ok(Family::default()),
    }
}

/// Why a device was not opened for a raw write.
#[derive(Debug)]
pub enum OpenRefusal {
    /// The node is not a block device (any more).
    NotBlock,
    /// Something uses it (the check, run again just before the open).
    InUse(InUse),
    /// The device opened is not the one checked: the node was replaced.
    Replaced { checked: u64, opened: u64 },
    /// The open itself failed (EBUSY: another exclusive user, a mount).
    Open(io::Error),
}

impl OpenRefusal {
    /// True when the refusal protects data (exit 3) rather than reports a
    /// bad target or an I/O failure.
    pub fn is_safety(&self) -> bool {
        match self {
            OpenRefusal::InUse(_) | OpenRefusal::Replaced { .. } => true,
            OpenRefusal::Open(e) => e.raw_os_error() == Some(libc::EBUSY),
            OpenRefusal::NotBlock => false,
        }
    }

    /// One line for `input` (the device as the user gave it).
    pub fn message(&self, input: &str) -> String {
        match self {
            OpenRefusal::NotBlock => format!("{input} is not a block device"),
            OpenRefusal::InUse(InUse::RootDisk) => {
                format!("refusing to write the raw device {input}: it holds the running system (/)")
            }
            OpenRefusal::InUse(found) => format!(
                "refusing to write the raw device {input} (its data would be destroyed): {}",
                found.message(input)
            ),
            OpenRefusal::Replaced { checked, opened } => {
                let (cm, cn) = target::split_dev(*checked);
                let (om, on) = target::split_dev(*opened);
                format!(
                    "refusing to write the raw device {input}: the node changed between the check and the open (device {cm}:{cn} was checked, {om}:{on} opened); run again"
                )
            }
            OpenRefusal::Open(e) if e.raw_os_error() == Some(libc::EBUSY) => format!(
                "refusing to write the raw device {input}: it is busy (mounted or claimed by another program); unmount or release it first"
            ),
            OpenRefusal::Open(e) => format!("cannot open {input} for writing: {e}"),
        }
    }
}

/// Opens the block device `node` read-write for a raw write, the only way
/// this program does: [`check`] runs immediately before the open, the open
/// is `O_EXCL` (plus `extra_flags`, say `O_DIRECT`), and the opened
/// device's number (`fstat`) must be the one checked.
pub fn open_for_writing(node: &Path, extra_flags: i32) -> Result<(File, Family), OpenRefusal> {
    let meta = fs::metadata(node).map_err(OpenRefusal::Open)?;
    if !meta.file_type().is_block_device() {
        return Err(OpenRefusal::NotBlock);
    }
    let checked = meta.rdev();
    let family = check_dev(checked).map_err(OpenRefusal::InUse)?;
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_EXCL | libc::O_CLOEXEC | extra_flags)
        .open(node)
        .map_err(OpenRefusal::Open)?;
    let opened = file.metadata().map_err(OpenRefusal::Open)?;
    if !opened.file_type().is_block_device() {
        return Err(OpenRefusal::NotBlock);
    }
    if opened.rdev() != checked {
        return Err(OpenRefusal::Replaced { checked, opened: opened.rdev() });
    }
    Ok((file, family))
}

/// [`check`] for the device number `dev`.
pub fn check_dev(dev: u64) -> Result<Family, InUse> {
    let family = Family::of(dev);
    let roots = Roots::live();
    refuse_root(&family, &roots)?;
    refuse_loops(&family, &roots)?;
    refuse_holders(&family, &roots)?;
    refuse_mounts(&family, &roots)?;
    refuse_swap(&family, &roots)?;
    refuse_open(&family, &roots)?;
    Ok(family)
}

fn refuse_root(family: &Family, roots: &Roots) -> Result<(), InUse> {
    match fs::metadata("/").ok().and_then(|root| filesystem_device(root.dev(), roots)) {
        Some(dev) if family.reaches(dev) => Err(InUse::RootDisk),
        _ => Ok(()),
    }
}

/// The block device behind a filesystem's `st_dev`. btrfs and others give
/// an anonymous number (major 0): their mount source is asked then.
pub fn filesystem_device(st_dev: u64, roots: &Roots) -> Option<u64> {
    if nix::sys::stat::major(st_dev) != 0 {
        return Some(st_dev);
    }
    let (major, minor) = target::split_dev(st_dev);
    let mounts = target::read_mounts(roots);
    let mount = mounts.iter().find(|m| (m.major, m.minor) == (major, minor))?;
    mount_devnum(mount)
}

fn refuse_loops(family: &Family, roots: &Roots) -> Result<(), InUse> {
    let Ok(entries) = fs::read_dir(roots.sys.join("block")) else { return Ok(()) };
    let mounts = target::read_mounts(roots);
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let loop_dev = sysfs::read_attr(&entry.path().join("dev")).as_deref().and_then(parse_devnum);
        let Some(lower) = loop_lower(&entry.path(), loop_dev, roots) else { continue };
        if !family.reaches(lower) {
            continue;
        }
        let mount_point = mounts
            .iter()
            .find(|m| mount_devnum(m).is_some_and(|d| loop_dev.is_some_and(|l| lower_devices(d).contains(&l))))
            .map(|m| m.mount_point.clone());
        return Err(InUse::Loop { device: format!("/dev/{name}"), mount_point });
    }
    Ok(())
}

fn refuse_holders(family: &Family, roots: &Roots) -> Result<(), InUse> {
    for &dev in family.all() {
        let (major, minor) = target::split_dev(dev);
        let Some(block) = target::block_by_devnum(roots, major, minor) else { continue };
        let Ok(entries) = fs::read_dir(block.sys_dir.join("holders")) else { continue };
        if let Some(holder) = entries.flatten().next() {
            let holder_name = holder.file_name().to_string_lossy().into_owned();
            let dm_name = sysfs::read_attr(&holder.path().join("dm/name"));
            return Err(InUse::Holder { holder: holder_name, dm_name });
        }
    }
    Ok(())
}

fn refuse_mounts(family: &Family, roots: &Roots) -> Result<(), InUse> {
    for mount in target::read_mounts(roots) {
        let Some(dev) = mount_devnum(&mount) else { continue };
        if !family.reaches(dev) {
            continue;
        }
        let direct = family.written.contains(&dev) || family.around.contains(&dev);
        let through = (!direct).then(|| mount.source.clone());
        return Err(InUse::Mounted { source: mount.source, mount_point: mount.mount_point, through });
    }
    Ok(())
}

fn refuse_swap(family: &Family, roots: &Roots) -> Result<(), InUse> {
    let swaps = sysfs::read_text(&roots.proc.join("swaps"), sysfs::TABLE_LIMIT).unwrap_or_default();
    for line in swaps.lines().skip(1) {
        let Some(device) = line.split_whitespace().next() else { continue };
        // /proc/swaps escapes blanks in paths as \040, as mountinfo does.
        let path = target::parse_mountinfo(&format!("0 0 0:0 / {device} rw - swap x rw"))
            .first()
            .map(|m| m.mount_point.clone())
            .unwrap_or_else(|| PathBuf::from(device));
        let Ok(meta) = fs::metadata(&path) else { continue };
        let dev =
            if meta.file_type().is_block_device() { Some(meta.rdev()) } else { filesystem_device(meta.dev(), roots) };
        if dev.is_some_and(|dev| family.reaches(dev)) {
            return Err(InUse::Swap { device: path.display().to_string() });
        }
    }
    Ok(())
}

/// Another process with a descriptor on the device. A tool that only peeks
/// (udev's blkid after a new device appears) closes it within moments, so
/// the check looks a few times before it refuses.
fn refuse_open(family: &Family, roots: &Roots) -> Result<(), InUse> {
    let mut holder = None;
    for _ in 0..10 {
        holder = process_holding(family, roots);
        if holder.is_none() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    match holder {
        Some((pid, command)) => Err(InUse::Open { pid, command }),
        None => Ok(()),
    }
}

fn process_holding(family: &Family, roots: &Roots) -> Option<(u32, String)> {
    let me = std::process::id();
    for entry in fs::read_dir(&roots.proc).ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        if holds_open(&entry.path(), family) || maps(&entry.path(), family) {
            let command = sysfs::read_attr(&entry.path().join("comm")).unwrap_or_else(|| "?".into());
            return Some((pid, command));
        }
    }
    None
}

/// True when the process at `/proc/PID` has a descriptor on the family.
fn holds_open(proc_pid: &Path, family: &Family) -> bool {
    let Ok(fds) = fs::read_dir(proc_pid.join("fd")) else { return false };
    fds.flatten().any(|fd| {
        // stat follows the descriptor to its inode, whatever its name.
        fs::metadata(fd.path()).is_ok_and(|meta| meta.file_type().is_block_device() && family.reaches(meta.rdev()))
    })
}

/// True when the process at `/proc/PID` has the device mapped into memory:
/// a mapping outlives the descriptor it was made from, and writes through
/// it reach the device. Each mapped file is `stat`ed once (its `DEV INODE`
/// columns tell them apart) through `map_files/`, which follows the
/// mapping to its inode whatever its name; where that is not readable, its
/// path in `maps` is.
fn maps(proc_pid: &Path, family: &Family) -> bool {
    let Ok(text) = sysfs::read_text(&proc_pid.join("maps"), sysfs::TABLE_LIMIT) else { return false };
    let mut seen = BTreeSet::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(_), Some(_), Some(dev), Some(inode)) =
            (fields.next(), fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        // Anonymous memory has inode 0; a file mapped many times is asked once.
        if inode == "0" || !seen.insert((dev, inode)) {
            continue;
        }
        let meta = fs::metadata(proc_pid.join("map_files").join(range)).or_else(|_| {
            let path = fields.collect::<Vec<_>>().join(" ");
            if path.starts_with('/') { fs::metadata(path) } else { Err(io::ErrorKind::NotFound.into()) }
        });
        if meta.is_ok_and(|m| m.file_type().is_block_device() && family.reaches(m.rdev())) {
            return true;
        }
    }
    false
}

/// `dev` and every block device under it: device-mapper and RAID members
/// (`slaves/`), and the backing device of a loop device (or the device of
/// the filesystem its backing file is on). A partition's whole disk is not
/// "under" it: a write to a sibling partition does not reach it.
pub fn lower_devices(dev: u64) -> BTreeSet<u64> {
    let roots = Roots::live();
    let mut seen = BTreeSet::new();
    let mut todo = vec![dev];
    while let Some(dev) = todo.pop() {
        // Bounded: stacks are a few levels deep; a cycle would be a broken sysfs.
        if seen.len() > 64 || !seen.insert(dev) {
            continue;
        }
        let (major, minor) = target::split_dev(dev);
        let Some(block) = target::block_by_devnum(&roots, major, minor) else { continue };
        if let Ok(entries) = fs::read_dir(block.sys_dir.join("slaves")) {
            for entry in entries.flatten() {
                todo.extend(sysfs::read_attr(&entry.path().join("dev")).as_deref().and_then(parse_devnum));
            }
        }
        todo.extend(loop_lower(&block.sys_dir, Some(dev), &roots));
    }
    seen
}

/// The device under the loop device whose sysfs directory is `sys_dir`
/// (number `loop_dev`): the block device its backing node stands for, or
/// the device of the filesystem that holds its backing file. Asked of the
/// kernel by number ([`loopdev::backing`]); the `backing_file` text is the
/// fallback when `/dev` has no node for it.
fn loop_lower(sys_dir: &Path, loop_dev: Option<u64>, roots: &Roots) -> Option<u64> {
    // Only a bound loop device has a backing file: nothing else is opened.
    let backing = sysfs::read_attr(&sys_dir.join("loop/backing_file"))?;
    let name = sys_dir.file_name()?;
    let asked = loop_dev.and_then(|dev| loopdev::backing(&Path::new("/dev").join(name), dev));
    match asked {
        Some(b) if b.rdev != 0 => Some(b.rdev),
        Some(b) => filesystem_device(b.dev, roots),
        None => backing_devnum(Path::new(&backing), roots),
    }
}

/// The device a loop device's backing file stands for: the block device
/// itself, or the device of the filesystem that holds the file.
fn backing_devnum(backing: &Path, roots: &Roots) -> Option<u64> {
    let meta = fs::metadata(backing).ok()?;
    if meta.file_type().is_block_device() { Some(meta.rdev()) } else { filesystem_device(meta.dev(), roots) }
}

/// A mount's block device number: its own, or its source node's for
/// filesystems with an anonymous one (btrfs).
fn mount_devnum(mount: &Mount) -> Option<u64> {
    if mount.major != 0 {
        return Some(nix::sys::stat::makedev(u64::from(mount.major), u64::from(mount.minor)));
    }
    let meta = fs::metadata(&mount.source).ok()?;
    meta.file_type().is_block_device().then(|| meta.rdev())
}

fn parse_devnum(text: &str) -> Option<u64> {
    let (major, minor) = text.trim().split_once(':')?;
    Some(nix::sys::stat::makedev(major.parse().ok()?, minor.parse().ok()?))
}

/// Quotes a path for a shell command line when it needs it.
pub fn shell_word(text: &str) -> String {
    if !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_when_needed() {
        assert_eq!(shell_word("/media/pi/CARD"), "/media/pi/CARD");
        assert_eq!(shell_word("/media/my card"), "'/media/my card'");
        assert_eq!(shell_word("/m/$(reboot)"), "'/m/$(reboot)'");
    }

    #[test]
    fn messages_name_the_command_that_helps() {
        let m = InUse::Loop { device: "/dev/loop7".into(), mount_point: Some("/mnt/x y".into()) }.message("/dev/sdb");
        assert!(m.contains("sudo umount '/mnt/x y' && sudo losetup -d /dev/loop7"), "{m}");
        let m = InUse::Holder { holder: "dm-0".into(), dm_name: Some("vg-lv".into()) }.message("/dev/sdb");
        assert!(m.ends_with("sudo dmsetup remove vg-lv"), "{m}");
    }

    #[test]
    fn the_family_of_a_missing_device_is_itself() {
        let family = Family::of(nix::sys::stat::makedev(4095, 4095));
        assert_eq!(family.written.len(), 1);
        assert!(family.around.is_empty());
    }
}
