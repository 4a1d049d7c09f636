//! A SATA drive's own name (docs/report.md#device): ATA IDENTIFY DEVICE
//! through SCSI ATA PASS-THROUGH, libata's translation on a SATA port or a
//! USB bridge's SAT, the way smartctl reads `Device Model`.
//!
//! A USB bridge answers SCSI INQUIRY by cutting the drive's 40-character
//! ATA model into an 8-byte vendor and a 16-byte product (`CT240BX5` +
//! `00SSD1` for a `CT240BX500SSD1`), and that is what sysfs shows. Where the
//! drive answers IDENTIFY, its model, serial and firmware replace those
//! strings, and the vendor is left out: ATA has no vendor field (smartctl
//! shows none), and the bridge's "vendor" is the model's first 8
//! characters. The INQUIRY strings stay in `usb.scsi_*`.
//!
//! Only a live node is asked (never one under a captured sysfs tree), and
//! only what `health` would ask too: not a card reader, a flash drive or an
//! NVMe bridge. IDENTIFY only reads.

use storage_platform::sysfs::Roots;
use storage_platform::target::BlockDev;
use storage_scoring::health::HealthSource;
use storage_scoring::schema::{Device, Medium, ModelSource, Transport};

use crate::health::{self, IdentityError, OpenError, ata::IdentifyInfo};

/// Names `device` from the drive's ATA identity where it answers; otherwise
/// keeps the sysfs strings and, behind a USB bridge, says whose they are.
pub fn apply(disk: &BlockDev, roots: &Roots, device: &mut Device) {
    // The drives `health` would ask by ATA: a SATA drive, or a bridge that
    // is not a card reader or an NVMe bridge.
    let askable = matches!(health::source_of(device), Ok(HealthSource::AtaSmart | HealthSource::AtaSmartSat));
    if !askable {
        return;
    }
    let answer = if roots.captured { None } else { Some(health::ata_identity(&disk.node())) };
    match answer {
        Some(Ok(info)) if info.names_the_drive() => name(device, info),
        other => fall_back(device, other),
    }
}

fn name(device: &mut Device, info: IdentifyInfo) {
    device.model = info.model;
    device.vendor = None;
    device.firmware = info.firmware;
    // The serial goes where the sysfs serials go: `device.serial`, which the
    // privacy filter replaces with a salted hash before any upload.
    device.serial = info.serial;
    device.model_source = Some(ModelSource::AtaIdentify);
    // Behind a USB bridge the drive is now known to be an ATA drive; the
    // report's word stays `usb`, since the bridge still carries every byte.
    device.kind.medium = Medium::Sata;
}

fn fall_back(device: &mut Device, answer: Option<Result<IdentifyInfo, IdentityError>>) {
    device.model_source = Some(ModelSource::ScsiInquiry);
    if device.kind.transport != Transport::Usb {
        return;
    }
    let why = match answer {
        None => "not asked of a captured sysfs tree".to_owned(),
        Some(Err(IdentityError::Open(OpenError::NeedsRoot { .. }))) => "needs root".to_owned(),
        Some(Err(IdentityError::NoAnswer)) => "got no ATA answer".to_owned(),
        Some(Err(e)) => format!("failed: {e}"),
        Some(Ok(_)) => "gave no model".to_owned(),
    };
    device.notes.push(format!(
        "the name is the USB bridge's SCSI INQUIRY translation, which may cut the drive's ATA model in two (the \
         drive's own ATA IDENTIFY through the bridge's SAT: {why})"
    ));
}
