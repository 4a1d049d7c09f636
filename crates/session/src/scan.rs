//! `scan`'s findings: every block device of the machine (or of a captured
//! `--sysfs-root` tree), one entry each. Read-only and quick: it identifies
//! each disk the way `identify` does (`device::identify`), names the health
//! source `doctor` would ask without asking it, and reads the mount table
//! once per disk.

use std::path::Path;

use storage_platform::Roots;
use storage_platform::target::{self, BlockDev};
use storage_scoring::schema::{Device, DeviceKind};

use crate::Failure;

/// One line of `scan`.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub name: String,
    pub node: String,
    pub kind: DeviceKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maker: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// The class printed in the card's own status register (SD only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Mount points of the disk's partitions (or of the disk itself).
    pub mounts: Vec<String>,
    /// One of them is `/`.
    pub holds_root: bool,
    /// The health source `doctor` reads, `null` when there is none.
    pub health_source: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_why: Option<String>,
}

/// Every whole disk under the root's `block/`, by name, without the empty
/// ones (an unattached loop device, a card reader with no card).
pub fn entries(roots: &Roots) -> Result<Vec<Entry>, Failure> {
    let dir = roots.sys.join("block");
    let listing = std::fs::read_dir(&dir)
        .map_err(|e| Failure::Usage(format!("cannot list {}: {e}; is this a sysfs tree?", dir.display())))?;
    let mut names: Vec<String> = listing.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort_by_key(|name| natural(name));
    Ok(names
        .iter()
        .filter_map(|name| target::block_by_name(roots, name))
        .map(|disk| entry(&disk, roots))
        .filter(|e| e.size_bytes != Some(0))
        .collect())
}

/// `loop10` after `loop9`: the name's letters, then its number.
fn natural(name: &str) -> (String, u64, String) {
    let digits_at = name.find(|c: char| c.is_ascii_digit()).unwrap_or(name.len());
    let (head, tail) = name.split_at(digits_at);
    let number_len = tail.find(|c: char| !c.is_ascii_digit()).unwrap_or(tail.len());
    (head.to_owned(), tail[..number_len].parse().unwrap_or(0), tail[number_len..].to_owned())
}

fn entry(disk: &BlockDev, roots: &Roots) -> Entry {
    let device = storage_identify::device::identify(disk, roots);
    let mounts: Vec<String> =
        target::mounts_on_disk(disk, roots).iter().map(|m| m.mount_point.to_string_lossy().into_owned()).collect();
    let (health_source, health_why) = match storage_identify::health::source_of(&device) {
        Ok(source) => (Some(source.as_str()), None),
        Err(why) => (None, Some(why.to_string())),
    };
    Entry {
        name: disk.name.clone(),
        node: disk.node().to_string_lossy().into_owned(),
        kind: device.kind,
        maker: maker(&device),
        model: model(&device),
        size_bytes: device.capacity_bytes,
        class: device.sd.as_ref().and_then(|sd| sd.class_label.clone()),
        holds_root: mounts.iter().any(|m| Path::new(m) == Path::new("/")),
        mounts,
        health_source: health_source.map(str::to_owned),
        health_why,
    }
}

/// The maker from the card's own CID, else what the disk or its USB bridge says.
pub fn maker(device: &Device) -> Option<String> {
    let sd = device.sd.as_ref().and_then(|sd| sd.cid.as_ref()).and_then(|c| c.manufacturer.clone());
    let emmc = device.emmc.as_ref().and_then(|e| e.cid.as_ref()).and_then(|c| c.manufacturer.clone());
    let usb = device.usb.as_ref().and_then(|u| u.manufacturer.clone().or_else(|| u.scsi_vendor.clone()));
    sd.or(emmc).or_else(|| device.vendor.clone()).or(usb).filter(|s| !s.trim().is_empty())
}

/// The CID's product name, else the disk's model.
pub fn model(device: &Device) -> Option<String> {
    let sd = device.sd.as_ref().and_then(|sd| sd.cid.as_ref()).map(|c| c.product_name.clone());
    let emmc = device.emmc.as_ref().and_then(|e| e.cid.as_ref()).map(|c| c.product_name.clone());
    let looped = (device.kind == DeviceKind::LOOP)
        .then(|| device.loop_device.as_ref().and_then(|l| l.backing_file.clone()))
        .flatten();
    sd.or(emmc).or_else(|| device.model.clone()).or(looped).filter(|s| !s.trim().is_empty())
}

/// Sizes in decimal units, as card labels print them.
pub fn size_words(bytes: u64) -> String {
    let b = bytes as f64;
    match bytes {
        n if n >= 1_000_000_000_000 => format!("{:.1} TB", b / 1e12),
        n if n >= 1_000_000_000 => format!("{:.1} GB", b / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", b / 1e6),
        n => format!("{n} B"),
    }
}

/// `scan --json` (and `show --json` of a scan): the devices as one document.
pub fn json(entries: &[Entry]) -> Result<String, Failure> {
    #[derive(serde::Serialize)]
    struct Scan<'a> {
        devices: &'a [Entry],
    }
    crate::document::encode(crate::document::SCAN, &Scan { devices: entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_sort_by_their_number() {
        let mut names = vec!["loop10", "sda", "loop9", "mmcblk0", "loop1"];
        names.sort_by_key(|name| natural(name));
        assert_eq!(names, ["loop1", "loop9", "loop10", "mmcblk0", "sda"]);
    }

    #[test]
    fn sizes_are_decimal() {
        assert_eq!(size_words(31_914_983_424), "31.9 GB");
        assert_eq!(size_words(64 << 20), "67.1 MB");
    }
}
