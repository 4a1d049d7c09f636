//! storage-identify: what is the device under test, really?
//!
//! Target resolution (path → filesystem → partition → disk), device
//! identification from sysfs/debugfs, and pure decoders for the SD and eMMC
//! registers.

pub mod advice;
pub mod checkup;
pub mod clock;
pub mod counterfeit;
pub mod device;
pub mod health;
pub mod hex;
pub mod host;
pub mod loopdev;
pub mod manufacturers;
pub mod mmc;
pub mod safe_fs;
pub mod sd;
pub mod sysfs;
pub mod system;
pub mod target;
pub mod thermal;
pub mod uevent;
pub mod usage;
pub mod usb;

pub use sysfs::Roots;
pub use target::{Resolved, TargetError, resolve};

use storage_scoring::schema::Device;

/// Resolves TARGET and identifies the disk under it: the `target` and
/// `device` blocks of a report. `device` is `None` when nothing block-backed
/// lies under the target (tmpfs, overlayfs); the target's notes say so.
pub fn identify(input: &str, roots: &Roots) -> Result<(Resolved, Option<Device>), TargetError> {
    let resolved = resolve(input, roots)?;
    let device = resolved.disk.as_ref().map(|disk| device::identify(disk, roots));
    Ok((resolved, device))
}
