//! Before anything is written: is this a whole device that nothing uses?
//!
//! Each refusal names the problem and the one command that makes the run
//! possible:
//! - a directory is not a device (`--files` checks a mounted card in place);
//! - a partition is part of a device (give the whole disk);
//! - a device-mapper or RAID device is stacked on another (give the card);
//! - then every user of the device that [`usage::check`] finds: the root
//!   filesystem, a holder, a loop device over it, a mount (direct or
//!   stacked), swap, another process with it open.
//!
//! All of it reads the live `/sys` and `/proc`, whatever `--sysfs-root`
//! says: a captured tree knows nothing of what this machine uses. The
//! open that follows ([`crate::RawDisk::open`]) runs the usage check once
//! more, opens `O_EXCL` (which keeps a mount out from then on) and checks
//! that the device opened is the one cleared here.

use std::fs;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use storage_platform::Roots;
use storage_platform::sysfs::read_attr;
use storage_platform::target::BlockDev;
use storage_platform::usage::{self, Family, InUse};

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
    /// Its device number, as checked: the device opened must have it.
    pub dev: u64,
    pub disk: BlockDev,
    /// What identifies this card (see [`fingerprint`]).
    pub fingerprint: String,
    /// The device numbers a write to it reaches (for the journal's place).
    pub family: Family,
}

/// Checks that `input` is a whole, unused block device.
pub fn check(input: &str) -> Result<Cleared, Refusal> {
    let roots = Roots::live();
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
    let resolved = storage_platform::resolve(input, &roots).map_err(|e| Refusal::Usage(e.to_string()))?;
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
    let family = usage::check(path).map_err(|found| Refusal::Unsafe(in_use(input, &found)))?;
    Ok(Cleared { node: path.to_path_buf(), dev: meta.rdev(), fingerprint: fingerprint(&disk), disk, family })
}

/// A refusal's line for verify-capacity: the root disk can still be
/// checked in place, through its free space.
pub fn in_use(input: &str, found: &InUse) -> String {
    match found {
        InUse::RootDisk => format!(
            "{input} holds the running system (/); it cannot be probed while in use, but its free space can be checked in place: storage-score verify-capacity / --files"
        ),
        other => other.message(input),
    }
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
    let mut parts: Vec<String> =
        ATTRS.iter().filter_map(|attr| read_attr(&disk.sys_dir.join(attr)).map(|v| format!("{attr}={v}"))).collect();
    // Behind USB, the SCSI serial and WWID are the reader's (or the
    // bridge's): they name the slot, not the card in it.
    if disk.sys_dir.components().any(|c| c.as_os_str().to_string_lossy().starts_with("usb")) {
        parts.push("bus=usb".to_owned());
    }
    parts.join(";")
}

/// The whole disk that now carries `wanted` (a [`fingerprint`]), whatever
/// its name: a card pulled and put back, a USB reader switched off and on,
/// or a loop device attached again comes back under another name. Disks
/// of size 0 (a reader with no card) are passed over; the first match in
/// name order is taken.
pub fn find_by_fingerprint(roots: &Roots, wanted: &str) -> Option<BlockDev> {
    let entries = fs::read_dir(roots.sys.join("block")).ok()?;
    let mut names: Vec<String> = entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names.iter().filter_map(|name| storage_platform::target::block_by_name(roots, name)).find(|disk| {
        read_attr(&disk.sys_dir.join("size")).is_some_and(|size| size != "0") && fingerprint(disk) == wanted
    })
}

/// True when the fingerprint names the card itself, not just its slot and
/// size: an SD/MMC CID or serial anywhere, a disk's serial or WWID when it
/// is not behind a USB reader or bridge.
pub fn fingerprint_is_strong(fingerprint: &str) -> bool {
    let fields: Vec<&str> = fingerprint.split(';').collect();
    let has = |key: &str| fields.iter().any(|f| f.strip_prefix(key).is_some_and(|v| v.starts_with('=')));
    if has("device/cid") {
        return true;
    }
    !has("bus") && ["device/serial", "device/wwid", "wwid", "serial"].iter().any(|k| has(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strong_fingerprints_carry_the_cards_own_identity() {
        assert!(fingerprint_is_strong("size=100;device/cid=0123"));
        assert!(fingerprint_is_strong("size=100;device/wwid=naa.5000"));
        assert!(!fingerprint_is_strong("size=100;loop/backing_file=/x"));
        // A USB reader's serial is the reader's.
        assert!(!fingerprint_is_strong("size=100;device/wwid=t10.Generic;device/vendor=Generic;bus=usb"));
        assert!(fingerprint_is_strong("size=100;device/cid=0123;bus=usb"));
        // A key that only ends like one is not it.
        assert!(!fingerprint_is_strong("size=100;loop/backing_file=/my-serial=x"));
    }

    #[test]
    fn a_card_is_found_again_under_another_name() {
        let sys = tempfile::tempdir().unwrap();
        let disk = |name: &str, size: &str, cid: &str| {
            let dir = sys.path().join("block").join(name);
            fs::create_dir_all(dir.join("device")).unwrap();
            fs::write(dir.join("size"), format!("{size}\n")).unwrap();
            fs::write(dir.join("device/cid"), format!("{cid}\n")).unwrap();
        };
        disk("sdb", "0", "aa");
        disk("sdc", "2048", "bb");
        disk("sdd", "2048", "aa");
        let roots = Roots::captured(sys.path());
        let wanted = "size=2048;device/cid=aa";
        assert_eq!(find_by_fingerprint(&roots, wanted).map(|d| d.name), Some("sdd".to_owned()));
        // A reader with no card is not the card, whatever it once held.
        assert_eq!(find_by_fingerprint(&roots, "size=0;device/cid=aa").map(|d| d.name), None);
        assert!(find_by_fingerprint(&roots, "size=2048;device/cid=cc").is_none());
    }
}
