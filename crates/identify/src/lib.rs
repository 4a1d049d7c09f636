//! storage-identify: what is the device under test, really?
//!
//! Device identification from sysfs/debugfs, health, advice, and pure
//! decoders for the SD and eMMC registers. How a TARGET resolves to a disk,
//! and every path this reads, come from `storage-platform`.

pub mod advice;
pub mod ata_name;
pub mod checkup;
pub mod counterfeit;
pub mod device;
pub mod health;
pub mod hex;
pub mod host;
pub mod manufacturers;
pub mod mmc;
pub mod sd;
pub mod system;
pub mod thermal;
pub mod usb;

use storage_platform::{Resolved, Roots, TargetError, resolve};

use storage_scoring::schema::Device;

/// Resolves TARGET and identifies the disk under it: the `target` and
/// `device` blocks of a report. `device` is `None` when nothing block-backed
/// lies under the target (tmpfs, overlayfs); the target's notes say so.
/// A live SATA disk, alone or behind a USB bridge, is named by its own ATA
/// IDENTIFY where it answers ([`ata_name`]); `scan`, which asks no device,
/// calls [`device::identify`] alone.
pub fn identify(input: &str, roots: &Roots) -> Result<(Resolved, Option<Device>), TargetError> {
    let resolved = resolve(input, roots)?;
    let device = resolved.disk.as_ref().map(|disk| {
        let mut device = device::identify(disk, roots);
        ata_name::apply(disk, roots, &mut device);
        device
    });
    Ok((resolved, device))
}
