//! Before anything is written: is this a whole device that nothing uses?
//!
//! Each refusal names the problem and the one command that makes the run
//! possible. The checks read sysfs and procfs through [`Roots`], so the same
//! code runs on fixtures and on a live system:
//! - a directory is not a device (`--files` checks a mounted card in place);
//! - a partition is part of a device (give the whole disk);
//! - the disk that holds `/` runs this system;
//! - a mounted partition, a swap area or a device-mapper holder on it;
//! - another process that has it open.
//!
//! The exclusive open (`O_EXCL`) that follows catches anything these miss.

use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use storage_identify::sysfs::read_attr;
use storage_identify::target::{self, BlockDev};
use storage_identify::{Resolved, Roots};

/// Why the device cannot be probed.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// Bad usage or target (exit 2).
    #[error("{0}")]
    Usage(String),
    /// Refused for safety (exit 3).
    #[error("{0}")]
    Unsafe(String),
}

/// A whole device that may be probed.
#[derive(Debug, Clone)]
pub struct Cleared {
    /// The device node to open.
    pub node: PathBuf,
    pub disk: BlockDev,
    /// What identifies this card (see [`fingerprint`]).
    pub fingerprint: String,
}

/// Checks that `input` is a whole, unused block device.
pub fn check(input: &str, roots: &Roots) -> Result<Cleared, Refusal> {
    let path = Path::new(input);
    let meta = fs::metadata(path).map_err(|e| {
        Refusal::Usage(format!("{input}: {e}; give the card's whole device, e.g. /dev/sdb or /dev/mmcblk0"))
    })?;
    if meta.is_dir() {
        return Err(Refusal::Usage(format!(
            "{input} is a directory; give the card's whole device (e.g. /dev/sdb), or check the free space of this mounted filesystem in place: storage-score verify-capacity {input} --files"
        )));
    }
    if !meta.file_type().is_block_device() {
        return Err(Refusal::Usage(format!(
            "{input} is not a block device; give the card's whole device, e.g. /dev/sdb or /dev/mmcblk0"
        )));
    }
    let resolved = storage_identify::resolve(input, roots).map_err(|e| Refusal::Usage(e.to_string()))?;
    let Some(disk) = resolved.disk.clone() else {
        return Err(Refusal::Usage(format!("{input}: no disk found behind it in sysfs")));
    };
    if let Some(part) = &resolved.partition {
        return Err(Refusal::Unsafe(format!(
            "{input} is a partition ({}); verify-capacity checks a whole device: storage-score verify-capacity {}",
            part.name,
            disk.node().display()
        )));
    }
    if !resolved.target.stack.is_empty() {
        return Err(Refusal::Unsafe(format!(
            "{input} is stacked on {} (device-mapper, LVM or RAID); give the card itself: storage-score verify-capacity {}",
            disk.node().display(),
            disk.node().display()
        )));
    }
    refuse_root_disk(input, &disk, roots)?;
    refuse_mounted(input, &disk, roots)?;
    refuse_swap(input, &disk, roots)?;
    refuse_holders(input, &disk)?;
    refuse_open_elsewhere(input, &disk, &resolved, roots)?;
    Ok(Cleared { node: path.to_path_buf(), fingerprint: fingerprint(&disk), disk })
}

fn refuse_root_disk(input: &str, disk: &BlockDev, roots: &Roots) -> Result<(), Refusal> {
    let root = storage_identify::resolve("/", roots).ok().and_then(|r| r.disk);
    if root.is_some_and(|r| r.name == disk.name) {
        return Err(Refusal::Unsafe(format!(
            "{input} holds the running system (/); it cannot be probed while in use, but its free space can be checked in place: storage-score verify-capacity / --files"
        )));
    }
    Ok(())
}

fn refuse_mounted(input: &str, disk: &BlockDev, roots: &Roots) -> Result<(), Refusal> {
    let mounts = target::mounts_on_disk(disk, roots);
    if mounts.is_empty() {
        return Ok(());
    }
    let points: Vec<String> = mounts.iter().map(|m| shell_word(&m.mount_point.display().to_string())).collect();
    Err(Refusal::Unsafe(format!(
        "{input} is mounted ({} at {}); unmount it first: sudo umount {}",
        mounts[0].source,
        points.join(", "),
        points.join(" ")
    )))
}

/// The device and its partitions, by kernel name.
fn names_on_disk(disk: &BlockDev) -> Vec<String> {
    let mut names = vec![disk.name.clone()];
    if let Ok(entries) = fs::read_dir(&disk.sys_dir) {
        for entry in entries.flatten() {
            if entry.path().join("partition").exists() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    names
}

fn refuse_swap(input: &str, disk: &BlockDev, roots: &Roots) -> Result<(), Refusal> {
    let swaps = fs::read_to_string(roots.proc.join("swaps")).unwrap_or_default();
    let names = names_on_disk(disk);
    for line in swaps.lines().skip(1) {
        let Some(device) = line.split_whitespace().next() else { continue };
        let name = device.rsplit('/').next().unwrap_or(device);
        if names.iter().any(|n| n == name) {
            return Err(Refusal::Unsafe(format!(
                "{input} is in use as swap ({device}); turn it off first: sudo swapoff {device}"
            )));
        }
    }
    Ok(())
}

fn refuse_holders(input: &str, disk: &BlockDev) -> Result<(), Refusal> {
    let mut dirs = vec![disk.sys_dir.clone()];
    dirs.extend(names_on_disk(disk).iter().skip(1).map(|n| disk.sys_dir.join(n)));
    for dir in dirs {
        let Ok(entries) = fs::read_dir(dir.join("holders")) else { continue };
        if let Some(holder) = entries.flatten().next() {
            let name = holder.file_name().to_string_lossy().into_owned();
            let command = match read_attr(&holder.path().join("dm/name")) {
                Some(dm) => format!("sudo dmsetup remove {dm}"),
                None if name.starts_with("md") => format!("sudo mdadm --stop /dev/{name}"),
                None => format!("stop whatever uses /dev/{name}"),
            };
            return Err(Refusal::Unsafe(format!("{input} is held by /dev/{name}; release it first: {command}")));
        }
    }
    Ok(())
}

/// Another process with the device or one of its partitions open. A tool
/// that only peeks (udev's blkid after a new device appears) closes it
/// within moments, so the check looks a few times before it refuses.
fn refuse_open_elsewhere(input: &str, disk: &BlockDev, resolved: &Resolved, roots: &Roots) -> Result<(), Refusal> {
    let mut nodes: Vec<PathBuf> = names_on_disk(disk).iter().map(|n| Path::new("/dev").join(n)).collect();
    nodes.push(PathBuf::from(&resolved.target.input));
    let mut holder = None;
    for _ in 0..10 {
        holder = process_holding(&nodes, roots);
        if holder.is_none() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let Some((pid, name)) = holder else { return Ok(()) };
    Err(Refusal::Unsafe(format!(
        "{input} is open in another program ({name}, pid {pid}); close it, or stop it: sudo kill {pid}"
    )))
}

fn process_holding(nodes: &[PathBuf], roots: &Roots) -> Option<(u32, String)> {
    let me = std::process::id();
    let canonical: Vec<PathBuf> = nodes.iter().map(|n| fs::canonicalize(n).unwrap_or_else(|_| n.clone())).collect();
    for entry in fs::read_dir(&roots.proc).ok()?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else { continue };
        for fd in fds.flatten() {
            let Ok(link) = fs::read_link(fd.path()) else { continue };
            if canonical.contains(&link) || nodes.contains(&link) {
                let name = read_attr(&entry.path().join("comm")).unwrap_or_else(|| "?".into());
                return Some((pid, name));
            }
        }
    }
    None
}

/// What tells this card from another in the same slot: its size and the
/// identity attributes sysfs has for it (SD/eMMC CID and serial, SCSI/NVMe
/// WWID and serial, model, or a loop device's backing file).
pub fn fingerprint(disk: &BlockDev) -> String {
    const ATTRS: [&str; 9] = [
        "size",
        "device/cid",
        "device/serial",
        "device/wwid",
        "wwid",
        "serial",
        "device/vendor",
        "device/model",
        "loop/backing_file",
    ];
    ATTRS
        .iter()
        .filter_map(|attr| read_attr(&disk.sys_dir.join(attr)).map(|v| format!("{attr}={v}")))
        .collect::<Vec<_>>()
        .join(";")
}

/// True when the fingerprint names the card itself, not just its size.
pub fn fingerprint_is_strong(fingerprint: &str) -> bool {
    ["device/cid=", "device/serial=", "device/wwid=", "wwid=", "serial="].iter().any(|k| fingerprint.contains(k))
}

/// Quotes a path for a shell command line when it needs it.
fn shell_word(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
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
    }

    #[test]
    fn strong_fingerprints_carry_a_serial() {
        assert!(fingerprint_is_strong("size=100;device/cid=0123"));
        assert!(!fingerprint_is_strong("size=100;loop/backing_file=/x"));
    }
}
