//! `storage-score scan`: every block device of the machine (or of a
//! captured `--sysfs-root` tree), one line each. Read-only and quick: it
//! identifies each disk the way `identify` does (`device::identify`), names
//! the health source `doctor` would ask without asking it, and reads the
//! mount table once per disk.

use std::path::Path;

use storage_platform::Roots;
use storage_platform::target::{self, BlockDev};
use storage_scoring::schema::{Device, DeviceKind};

use crate::Failure;
use crate::terminal::{json_outln, out};

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

/// `storage-score scan [--json]`.
pub fn scan(json: bool, roots: &Roots) -> Result<(), Failure> {
    let entries = entries(roots)?;
    if json {
        #[derive(serde::Serialize)]
        struct Scan<'a> {
            devices: &'a [Entry],
        }
        json_outln(&crate::document::encode(crate::document::SCAN, &Scan { devices: &entries })?);
    } else {
        out(&table(&entries));
    }
    Ok(())
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

/// `cell` within `width` columns: cut, with an ellipsis (`~` in ASCII,
/// where `…` would print as three dots), when it is wider.
fn shorten(cell: &str, width: usize) -> String {
    if cell.chars().count() <= width {
        return cell.to_owned();
    }
    let mark = if crate::plain::ascii() { '~' } else { '…' };
    cell.chars().take(width.saturating_sub(1)).chain([mark]).collect()
}

pub(crate) fn table(entries: &[Entry]) -> String {
    let mut rows = vec![["NAME", "KIND", "MAKER", "MODEL", "SIZE", "CLASS", "MOUNTED", "HEALTH"].map(str::to_owned)];
    for e in entries {
        let mounted = match (e.holds_root, e.mounts.len()) {
            (true, _) => "holds /".to_owned(),
            (false, 0) => "-".to_owned(),
            (false, _) => e.mounts.join(","),
        };
        rows.push([
            e.name.clone(),
            e.kind.as_str().to_owned(),
            e.maker.clone().unwrap_or_else(|| "-".to_owned()),
            e.model.clone().unwrap_or_else(|| "-".to_owned()),
            e.size_bytes.map(size_words).unwrap_or_else(|| "-".to_owned()),
            e.class.clone().unwrap_or_else(|| "-".to_owned()),
            mounted,
            e.health_source.clone().unwrap_or_else(|| "none".to_owned()),
        ]);
    }
    let mut widths: Vec<usize> = (0..8).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    // One line per device, so that a script can read it: where the line
    // is wider than the terminal, the widest of the free-text columns
    // (maker, model, class, mounted, health) gives up a column at a time,
    // and a cell that no longer fits ends in an ellipsis (`--json` has it
    // whole).
    const SHRINKABLE: [usize; 5] = [2, 3, 5, 6, 7];
    let width = crate::plain::width();
    while widths.iter().sum::<usize>() + 2 * (widths.len() - 1) > width {
        let Some(&widest) = SHRINKABLE.iter().filter(|&&c| widths[c] > 6).max_by_key(|&&c| widths[c]) else { break };
        widths[widest] -= 1;
    }
    let mut text = String::new();
    for row in &rows {
        let cells: Vec<String> = row.iter().zip(&widths).map(|(c, &w)| format!("{:<w$}", shorten(c, w))).collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
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
