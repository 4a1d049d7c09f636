//! A UFS device (JEDEC JESD220): a SCSI disk behind a UFS host controller,
//! whose driver (`ufshcd`, Linux drivers/ufs/core/ufs-sysfs.c) shows the
//! device's own descriptors in sysfs on the controller's device directory
//! (Linux Documentation/ABI/testing/sysfs-driver-ufs):
//!
//! - `string_descriptors/`: `manufacturer_name`, `product_name`,
//!   `product_revision`, `serial_number`, as the device gives them;
//! - `health_descriptor/`: `life_time_estimation_a`/`_b` and `eol_info`,
//!   the same JEDEC codes as an eMMC's EXT_CSD (see `health::emmc`).
//!
//! Everything here is read from sysfs, world-readable, so it works on a
//! captured tree as on the machine; nothing is sent to the device.

use std::path::{Path, PathBuf};

use storage_platform::sysfs::read_attr;
use storage_scoring::health::{Health, HealthSource};
use storage_scoring::schema::Device;

use crate::health::emmc;

/// Wording of the health notes for a UFS device.
const WORDING: emmc::Wording = emmc::Wording {
    who: "UFS device",
    source: HealthSource::UfsHealthDescriptor,
    pre_eol_field: "bPreEOLInfo",
    undefined: "the UFS device defines no life-time estimate (its Health Descriptor's codes read 0x00, not defined)",
};

/// The UFS host controller's device directory above a SCSI device's
/// (resolved) directory: the first one that carries the driver's descriptor groups.
pub fn host_dir(resolved_dev_dir: &Path) -> Option<PathBuf> {
    resolved_dev_dir
        .ancestors()
        .find(|dir| dir.join("string_descriptors").is_dir() || dir.join("health_descriptor").is_dir())
        .map(Path::to_path_buf)
}

/// Names the device from its string descriptors; the SCSI INQUIRY strings
/// (the driver's own translation, cut to 8 and 16 bytes) stand where one is
/// missing.
pub fn identify(dev_dir: &Path, resolved: &Path, device: &mut Device) {
    super::identify_scsi(dev_dir, device);
    let Some(host) = host_dir(resolved) else {
        device.notes.push("the UFS host controller's descriptors were not found in sysfs".to_owned());
        return;
    };
    let strings = host.join("string_descriptors");
    // An empty descriptor reads `(null)`: the driver prints a NULL string.
    let string = |name: &str| read_attr(&strings.join(name)).filter(|s| !s.is_empty() && s != "(null)");
    if let Some(maker) = string("manufacturer_name") {
        device.vendor = Some(maker);
    }
    if let Some(product) = string("product_name") {
        device.model = Some(product);
    }
    if let Some(revision) = string("product_revision") {
        device.firmware = Some(revision);
    }
    device.serial = string("serial_number");
    if !strings.is_dir() {
        device.notes.push(format!(
            "{} is missing: the name shown is the SCSI INQUIRY's, cut to 8 and 16 bytes",
            strings.display()
        ));
    }
}

/// The device's own life-time estimates, from its Health Descriptor.
pub fn health(resolved_dev_dir: &Path) -> Health {
    let Some(host) = host_dir(resolved_dev_dir) else {
        return Health::unreadable("the UFS host controller's health_descriptor was not found in sysfs");
    };
    let dir = host.join("health_descriptor");
    let byte = |name: &str| read_attr(&dir.join(name)).and_then(|text| emmc::parse_byte(&text));
    let life = byte("life_time_estimation_a").zip(byte("life_time_estimation_b"));
    let eol = byte("eol_info");
    if life.is_none() && eol.is_none() {
        return Health::unreadable(format!("{} holds no readable life_time_estimation_a/b or eol_info", dir.display()));
    }
    emmc::estimates(&WORDING, life, eol, "sysfs health_descriptor")
}
