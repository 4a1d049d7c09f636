//! storage-history: `doctor --log` and `doctor --history`
//! (docs/doctor.md#history), one snapshot per device and run, appended to
//! `DIR/DEVICE-ID.jsonl`, and the trend read back from them; and what
//! serves monitoring besides, `doctor --prometheus`'s metrics.
//!
//! The bytes this host wrote to a device come from the kernel's counter
//! (`/sys/block/DISK/stat`, sectors written × 512), which starts again at
//! every boot and whenever the device reappears. A snapshot keeps both that
//! counter (`boot_written_bytes`) and the running total
//! (`host_written_bytes`); a new snapshot adds the counter's growth since
//! the last one of the same boot, or the whole counter after a reboot (the
//! boot id changed) or a reset (the counter went down).
//!
//! [`dir`] checks and opens the directory and appends; [`trend`] holds
//! the arithmetic of `--history`, pure (the command line prints it);
//! [`time`] the RFC 3339 times history lines and documents carry;
//! [`prometheus`] the text exposition format.

pub mod dir;
pub mod prometheus;
pub mod time;
pub mod trend;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use storage_platform::Roots;
use storage_platform::sysfs::read_attr;
use storage_scoring::health::{Health, ThermalSnapshot};
use storage_scoring::schema::{Device, Report};

/// Why a history cannot be kept or read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// The directory cannot be used: the option is named, with its
    /// variable, since either may have set it.
    #[error("--history-dir (STORAGE_SCORE_HISTORY_DIR) {}: {what}", path.display())]
    Dir { path: PathBuf, what: String },
    /// `--log` on a target with no block device under it.
    #[error("--log: nothing block-backed lies under this target, so there is no device to keep a history of")]
    NoDevice,
    /// The directory's salt cannot be read or made.
    #[error("cannot use the history salt {}: {why}", path.display())]
    Salt { path: PathBuf, why: String },
    /// A snapshot cannot be appended.
    #[error("cannot append to the history {}: {why}", path.display())]
    Append { path: PathBuf, why: String },
    /// A history file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
}

impl HistoryError {
    /// Whether the command line is at fault (bad usage), not the run.
    pub fn is_usage(&self) -> bool {
        matches!(self, HistoryError::Dir { .. } | HistoryError::NoDevice)
    }
}

/// The schema of one history line.
pub const SCHEMA: &str = "storage-score-history/1";

/// One line of a history file.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Snapshot {
    pub schema: String,
    /// RFC 3339, UTC, to the second.
    pub time: String,
    /// The kernel's boot id (`/proc/sys/kernel/random/boot_id`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_id: Option<String>,
    /// The salted device ID that names the file.
    pub device_id: String,
    /// The kernel name it had in this snapshot (`mmcblk0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// What this host has written to the device over every logged boot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_written_bytes: Option<u64>,
    /// The kernel's counter at this snapshot: written since boot (or since
    /// the device appeared).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_written_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<ThermalSnapshot>,
    /// The advice codes raised, most severe first.
    #[serde(default)]
    pub advice: Vec<String>,
}

/// The examined disk's kernel name (`mmcblk0`, not `/dev/mmcblk0`).
pub fn disk_name(report: &Report) -> Option<String> {
    let disk = report.target.as_ref()?.disk.as_deref()?;
    Some(disk.strip_prefix("/dev/").unwrap_or(disk).to_owned())
}

/// This boot's counter of bytes written to `disk` (`stat` field 7 × 512).
pub fn boot_written(roots: &Roots, disk: &str) -> Option<u64> {
    let stat = read_attr(&roots.sys.join("block").join(disk).join("stat"))?;
    stat.split_whitespace().nth(6)?.parse::<u64>().ok()?.checked_mul(512)
}

/// The boot id, through the roots (so a captured machine has its own).
fn boot_id(roots: &Roots) -> Option<String> {
    read_attr(&roots.proc.join("sys/kernel/random/boot_id")).filter(|b| !b.is_empty() && b.len() <= 64)
}

/// The running total after `last`, given this boot's counter now.
pub fn carried_total(last: Option<&Snapshot>, boot: Option<&str>, counter: u64) -> u64 {
    let Some(last) = last else { return counter };
    let (Some(total), Some(before)) = (last.host_written_bytes, last.boot_written_bytes) else { return counter };
    let same_boot = match (last.boot_id.as_deref(), boot) {
        (Some(a), Some(b)) => a == b,
        // Without a boot id only a counter that went down says "restarted".
        _ => true,
    };
    if same_boot && counter >= before { total + (counter - before) } else { total + counter }
}

/// What identifies the device across boots and slots, before hashing: the
/// card's CID, else the disk's serial, else a loop device's backing file,
/// else (documented as unstable) the kernel name.
fn identity(device: &Device, disk: &str) -> String {
    if let Some(c) = device.sd.as_ref().and_then(|s| s.cid.as_ref()) {
        return format!(
            "sd-cid:{:02x}:{}:{}:{}:{:?}:{}",
            c.manufacturer_id, c.oem_id_raw, c.product_name, c.product_revision, c.serial, c.manufactured
        );
    }
    if let Some(c) = device.emmc.as_ref().and_then(|e| e.cid.as_ref()) {
        return format!("emmc-cid:{}", serde_json::to_string(c).unwrap_or_default());
    }
    if let Some(serial) = device.serial.as_deref().filter(|s| !s.trim().is_empty()) {
        return format!("serial:{}:{}:{}", device.kind.as_str(), device.model.as_deref().unwrap_or(""), serial.trim());
    }
    if let Some(file) = device.loop_device.as_ref().and_then(|l| l.backing_file.as_deref()) {
        return format!("loop:{file}");
    }
    format!("name:{disk}")
}

/// `KIND-` and 16 hex digits of SHA-256(salt ‖ identity).
pub fn device_id(salt: &[u8], device: &Device, disk: &str) -> String {
    let mut hash = Sha256::new();
    hash.update(salt);
    hash.update(identity(device, disk).as_bytes());
    let digest = hash.finalize();
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{}-{hex}", device.kind.as_str())
}

/// `doctor --log`: appends this run's snapshot to the device's history.
pub fn log(dir: &Path, report: &Report, roots: &Roots, counter: Option<u64>) -> Result<PathBuf, HistoryError> {
    let (Some(device), Some(disk)) = (&report.device, disk_name(report)) else {
        return Err(HistoryError::NoDevice);
    };
    let history = dir::History::open(dir, true)?;
    let salt = history.salt()?;
    let id = device_id(&salt, device, &disk);
    let boot = boot_id(roots);
    let time = time::rfc3339(std::time::SystemTime::now());
    history.append(&id, |last| {
        let snapshot = Snapshot {
            schema: SCHEMA.to_owned(),
            time,
            boot_id: boot.clone(),
            device_id: id.clone(),
            disk: Some(disk.clone()),
            kind: Some(device.kind.as_str().to_owned()),
            model: device.model.clone(),
            host_written_bytes: counter.map(|c| carried_total(last, boot.as_deref(), c)),
            boot_written_bytes: counter,
            health: report.health.clone(),
            thermal: report.thermal.as_ref().and_then(|t| t.now.clone()),
            advice: report.advice.iter().map(|a| a.code.as_str().to_owned()).collect(),
        };
        serde_json::to_string(&snapshot)
    })?;
    Ok(dir.join(format!("{id}.jsonl")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(boot: &str, total: u64, counter: u64) -> Snapshot {
        Snapshot {
            boot_id: Some(boot.to_owned()),
            host_written_bytes: Some(total),
            boot_written_bytes: Some(counter),
            ..Snapshot::default()
        }
    }

    #[test]
    fn the_total_carries_across_reboots_and_resets() {
        assert_eq!(carried_total(None, Some("a"), 100), 100, "the first snapshot starts from the counter");
        let last = snap("a", 1000, 300);
        assert_eq!(carried_total(Some(&last), Some("a"), 450), 1150, "same boot: only the growth");
        assert_eq!(carried_total(Some(&last), Some("b"), 40), 1040, "new boot: the whole counter");
        assert_eq!(carried_total(Some(&last), Some("a"), 10), 1010, "same boot, counter went down: re-attached");
        assert_eq!(carried_total(Some(&last), None, 450), 1150, "no boot id: the counter decides");
        let no_counter = Snapshot { boot_id: Some("a".to_owned()), ..Snapshot::default() };
        assert_eq!(carried_total(Some(&no_counter), Some("a"), 7), 7);
    }

    #[test]
    fn ids_are_salted_and_stable() {
        let mut d = Device { serial: Some("S1".to_owned()), ..Device::default() };
        let a = device_id(b"salt-1", &d, "sda");
        assert_eq!(a, device_id(b"salt-1", &d, "sdb"), "the kernel name does not matter when there is a serial");
        assert_ne!(a, device_id(b"salt-2", &d, "sda"));
        assert_eq!(a.len(), d.kind.as_str().len() + 17);
        d.serial = None;
        assert_ne!(device_id(b"salt-1", &d, "sda"), device_id(b"salt-1", &d, "sdb"));
    }
}
