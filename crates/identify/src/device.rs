//! Device identification: reads sysfs (and debugfs, where the kernel and our
//! privileges allow) for a whole disk and fills the report's `device` block.
//!
//! Everything read here is optional. A missing or garbled attribute becomes
//! an absent field or a note, never an error: a user with a half-readable
//! device still gets everything else.

use std::fs;
use std::path::{Path, PathBuf};

use storage_scoring::schema::{
    Device, DeviceKind, EmmcInfo, HostIos, LoopInfo, Medium, NvmeInfo, RegisterError, SdInfo, Transport, UsbInfo,
};

use crate::{host, mmc, sd, usb};

pub mod ufs;
use storage_platform::sysfs::{self, Roots, read_attr, read_bool, read_u64};
use storage_platform::target::BlockDev;

/// Identifies the whole disk `disk`.
pub fn identify(disk: &BlockDev, roots: &Roots) -> Device {
    let dir = &disk.sys_dir;
    let queue = dir.join("queue");
    let mut notes = Vec::new();
    let mut device = Device {
        name: Some(disk.name.clone()),
        // `size` counts 512-byte sectors whatever the logical block size.
        capacity_bytes: read_number(&dir.join("size"), "the capacity", &mut notes)
            .map(|sectors| sectors.saturating_mul(512)),
        logical_block_size: read_number(&queue.join("logical_block_size"), "the logical block size", &mut notes)
            .and_then(|v| u32::try_from(v).ok()),
        physical_block_size: read_number(&queue.join("physical_block_size"), "the physical block size", &mut notes)
            .and_then(|v| u32::try_from(v).ok()),
        rotational: read_bool(&queue.join("rotational")),
        discard: read_u64(&queue.join("discard_max_bytes")).map(|v| v > 0),
        write_cache: read_attr(&queue.join("write_cache")).filter(|s| !s.is_empty()),
        read_only: read_bool(&dir.join("ro")),
        removable: read_bool(&dir.join("removable")),
        notes,
        ..Device::default()
    };

    let dev_dir = dir.join("device");
    let mmc_type = read_attr(&dev_dir.join("type"));
    let resolved_dev_dir = sysfs::resolve_dir(&dev_dir);
    device.kind = classify(&disk.name, mmc_type.as_deref(), &resolved_dev_dir);
    let mmc_type = mmc_type.filter(|_| disk.name.starts_with("mmcblk"));
    if let Some(other) = mmc_type.as_deref().filter(|t| !is_known_mmc_type(t)) {
        device.notes.push(format!(
            "the MMC card type is {other:?}, neither an SD memory card nor an eMMC: its registers are not decoded"
        ));
    }

    match device.kind.medium {
        Medium::Sd => identify_sd(&dev_dir, &resolved_dev_dir, roots, &mut device),
        Medium::Emmc => identify_emmc(&dev_dir, &resolved_dev_dir, roots, &mut device),
        Medium::Nvme => identify_nvme(&dev_dir, &mut device),
        Medium::Sata => identify_scsi(&dev_dir, &mut device),
        Medium::Ufs => ufs::identify(&dev_dir, &resolved_dev_dir, &mut device),
        Medium::Other => match device.kind.transport {
            Transport::Usb => identify_usb_disk(&dev_dir, &resolved_dev_dir, &mut device),
            Transport::Native | Transport::Pcie => identify_scsi(&dev_dir, &mut device),
            Transport::Virtio => {
                device.vendor = read_attr(&dev_dir.join("vendor")).map(|v| virtio_vendor(&v));
                device.serial = read_attr(&dir.join("serial")).filter(|s| !s.is_empty());
            }
            Transport::Loop => {
                device.loop_device = Some(LoopInfo {
                    backing_file: read_attr(&dir.join("loop/backing_file")),
                    direct_io: read_bool(&dir.join("loop/dio")),
                    offset: read_u64(&dir.join("loop/offset")),
                });
            }
        },
    }
    device
}

/// Works out the medium and its transport from the kernel name, the MMC
/// card type and the device's place in the sysfs tree.
fn classify(name: &str, mmc_type: Option<&str>, dev_dir: &Path) -> DeviceKind {
    let path = dev_dir.to_string_lossy();
    let on_usb = path.contains("/usb");
    if name.starts_with("mmcblk") {
        // drivers/mmc/core/bus.c `type`: "MMC", "SD", "SDIO" or "SDcombo".
        // A captured tree without the file is read as SD, as before; any
        // other type is not an SD memory card and is not decoded as one.
        let medium = match mmc_type {
            Some("MMC") => Medium::Emmc,
            None | Some("SD" | "SDcombo") => Medium::Sd,
            Some(_) => Medium::Other,
        };
        // A card on a USB host (Realtek's rtsx_usb_sdmmc) is still read
        // through the MMC core.
        return DeviceKind { medium, transport: if on_usb { Transport::Usb } else { Transport::Native } };
    }
    if name.starts_with("loop") {
        DeviceKind::LOOP
    } else if name.starts_with("nvme") {
        DeviceKind::NVME
    } else if name.starts_with("vd") || path.contains("/virtio") {
        DeviceKind::VIRTIO
    } else if on_usb {
        DeviceKind::USB
    } else if ufs::host_dir(dev_dir).is_some() {
        DeviceKind::UFS
    } else if path.contains("/ata") {
        DeviceKind::SATA
    } else {
        DeviceKind::OTHER
    }
}

fn is_known_mmc_type(mmc_type: &str) -> bool {
    matches!(mmc_type, "MMC" | "SD" | "SDcombo")
}

/// Reads one register file; records a note when absent, an error when garbled.
fn register<T>(
    dev_dir: &Path,
    name: &str,
    registers: &mut std::collections::BTreeMap<String, String>,
    errors: &mut Vec<RegisterError>,
    decode: impl Fn(&str) -> Result<T, crate::hex::DecodeError>,
) -> Option<T> {
    let raw = read_attr(&dev_dir.join(name))?;
    registers.insert(name.to_owned(), raw.clone());
    match decode(&raw) {
        Ok(value) => Some(value),
        Err(e) => {
            errors.push(RegisterError { register: name.to_owned(), message: e.to_string() });
            None
        }
    }
}

/// Reads a numeric attribute. A file that is there but does not hold a
/// number leaves the field out with a note saying so.
fn read_number(path: &Path, what: &str, notes: &mut Vec<String>) -> Option<u64> {
    let raw = read_attr(path)?;
    let value = sysfs::parse_u64(&raw);
    if value.is_none() {
        notes.push(format!("{what} is unknown: {} holds {raw:?}, not a number", path.display()));
    }
    value
}

fn identify_sd(dev_dir: &Path, resolved: &Path, roots: &Roots, device: &mut Device) {
    let mut info = SdInfo::default();
    let (regs, errs) = (&mut info.registers, &mut info.errors);
    info.cid = register(dev_dir, "cid", regs, errs, sd::decode_cid);
    info.csd = register(dev_dir, "csd", regs, errs, sd::decode_csd);
    info.scr = register(dev_dir, "scr", regs, errs, sd::decode_scr);
    info.ssr = register(dev_dir, "ssr", regs, errs, sd::decode_ssr);
    info.ocr = register(dev_dir, "ocr", regs, errs, sd::decode_ocr);
    for name in ["cid", "csd", "scr"] {
        if !info.registers.contains_key(name) {
            device.notes.push(format!("the card's {} register is not in sysfs", name.to_uppercase()));
        }
    }
    if !info.registers.contains_key("ssr") {
        device.notes.push(
            "the card's SD Status (ssr) is not in sysfs (kernels before 4.10 do not show it): its claimed class is unknown"
                .to_owned(),
        );
    }
    info.class_label = info.ssr.as_ref().and_then(sd::class_label);
    if info.ssr.is_some() && info.class_label.is_none() {
        device.notes.push("the card reports no class: its SD Status holds no speed, UHS, video or A class".to_owned());
    }
    if let Some(ssr) = info.ssr.as_ref().filter(|ssr| !ssr.reserved.is_empty()) {
        device.notes.push(format!(
            "the SD Status holds codes the specification reserves ({}): they are shown as reserved, not decoded",
            ssr.reserved.join(", ")
        ));
    }
    if let Some(cid) = &info.cid {
        device.model = Some(cid.product_name.clone());
        device.vendor = Some(vendor(cid.manufacturer.as_deref(), cid.manufacturer_contested, cid.manufacturer_id));
        device.firmware = Some(cid.product_revision.clone());
        if sd::placeholder_name(cid) {
            device.notes.push(format!(
                "the product name {:?} is the placeholder of white-label firmware: the card's maker sells it under \
                 other brands' labels (Samsung's own OEM cards carry it too), so the name says nothing about the brand",
                cid.product_name
            ));
        }
    }
    if let Some(csd) = &info.csd {
        device.capacity_bytes.get_or_insert(csd.capacity_bytes);
    }
    device.hints = sd::counterfeit_hints(info.cid.as_ref(), info.csd.as_ref(), &roots.clock.read());
    info.host = host_ios(resolved, roots, &mut device.notes);
    // A Realtek USB reader (rtsx_usb) shows the card as mmcblk with its own
    // registers, but every byte still crosses the reader's USB link.
    if let Some(usb) = usb_above(resolved, &mut device.notes) {
        device.notes.push(format!(
            "the card is read through a USB card reader ({}): the reader's USB link, not the card, may cap the speeds",
            usb.bridge.clone().unwrap_or_else(|| format!("USB ID {}", usb.id))
        ));
        device.usb = Some(usb);
    }
    device.sd = Some(info);
}

fn identify_emmc(dev_dir: &Path, resolved: &Path, roots: &Roots, device: &mut Device) {
    let mut info = EmmcInfo::default();
    // EXT_CSD comes first: the CID's date encoding depends on its revision.
    let ext_csd_path = mmc_debugfs_dir(resolved, roots).map(|d| d.join("ext_csd"));
    let raw_ext_csd = ext_csd_path.as_deref().and_then(read_attr);
    info.ext_csd = raw_ext_csd.as_deref().and_then(|raw| match mmc::decode_ext_csd(raw) {
        Ok(ext) => Some(ext),
        Err(e) => {
            info.errors.push(RegisterError { register: "ext_csd".to_owned(), message: e.to_string() });
            None
        }
    });
    // A garbled EXT_CSD is reported in `errors`; the note is for one not read.
    if raw_ext_csd.is_none() {
        device.notes.push("EXT_CSD is not readable (debugfs needs root); life-time estimates are unknown".to_owned());
    }
    let rev = info.ext_csd.as_ref().map(|e| e.ext_csd_rev);
    let (regs, errs) = (&mut info.registers, &mut info.errors);
    info.cid = register(dev_dir, "cid", regs, errs, |hex| mmc::decode_cid(hex, rev));
    // The kernel's `date` carries the EXT_CSD revision's year mapping and its
    // own quirks, and is world-readable where EXT_CSD is not: it wins.
    let kernel_date = read_attr(&dev_dir.join("date")).and_then(|d| mmc::parse_sysfs_date(&d));
    if let Some(cid) = &mut info.cid {
        if let Some(date) = kernel_date {
            cid.manufactured = date;
        } else if rev.is_none() {
            device.notes.push(
                "the manufacturing year assumes the 1997 base: neither the kernel's date nor EXT_CSD was readable"
                    .to_owned(),
            );
        }
        device.model = Some(cid.product_name.clone());
        device.vendor = Some(vendor(cid.manufacturer.as_deref(), cid.manufacturer_contested, cid.manufacturer_id));
        device.firmware = Some(cid.product_revision.clone());
    }
    if let Some(fw) = info.ext_csd.as_ref().and_then(|e| e.firmware_version.clone()) {
        device.firmware = Some(fw);
    }
    info.host = host_ios(resolved, roots, &mut device.notes);
    device.emmc = Some(info);
}

/// The vendor line: the maker, the candidates of a contested MID, or the MID.
fn vendor(manufacturer: Option<&str>, contested: bool, mid: u8) -> String {
    match manufacturer {
        Some(name) if contested => format!("MID 0x{mid:02x}, shared: {name}"),
        Some(name) => name.to_owned(),
        None => format!("MID 0x{mid:02x}"),
    }
}

/// The MMC host (`mmc0`) a card hangs off, from its device name `mmc0:aaaa`.
fn mmc_host_name(resolved_dev_dir: &Path) -> Option<String> {
    let card = resolved_dev_dir.file_name()?.to_string_lossy().into_owned();
    let (host, _) = card.split_once(':')?;
    host.starts_with("mmc").then(|| host.to_owned())
}

fn mmc_debugfs_dir(resolved_dev_dir: &Path, roots: &Roots) -> Option<PathBuf> {
    let host = mmc_host_name(resolved_dev_dir)?;
    let card = resolved_dev_dir.file_name()?;
    Some(roots.debugfs.join(host).join(card))
}

/// `MMC_CAP2_CQE` in the host's `caps2` (include/linux/mmc/host.h): the
/// controller has a command-queue engine. Without one the card's command
/// queue (needed for A2's IOPS) goes unused.
const MMC_CAP2_CQE: u64 = 1 << 23;

/// The host's bus settings, from debugfs `mmcN/ios` and `mmcN/caps2`.
fn host_ios(resolved_dev_dir: &Path, roots: &Roots, notes: &mut Vec<String>) -> Option<HostIos> {
    let Some(host) = mmc_host_name(resolved_dev_dir) else {
        notes.push("the MMC host of this card is unknown, so its bus clock and timing are not shown".to_owned());
        return None;
    };
    let path = roots.debugfs.join(&host).join("ios");
    match sysfs::read_text(&path, sysfs::ATTR_LIMIT) {
        Ok(text) => {
            let mut ios = host::parse_ios(&text);
            ios.command_queue = read_attr(&roots.debugfs.join(&host).join("caps2"))
                .and_then(|caps2| sysfs::parse_u64(&caps2))
                .map(|caps2| caps2 & MMC_CAP2_CQE != 0);
            ios.controller = host_controller(resolved_dev_dir);
            Some(ios)
        }
        Err(e) => {
            notes.push(format!(
                "the host's bus clock and timing are unknown: {} is not readable ({}); run as root with debugfs mounted",
                path.display(),
                e.kind()
            ));
            None
        }
    }
}

/// The host controller of a card directory `…/<controller>/mmc_host/mmcN/mmcN:RCA`:
/// its device-tree `compatible` (first entry), else its driver's name.
fn host_controller(resolved_dev_dir: &Path) -> Option<String> {
    let controller = resolved_dev_dir.ancestors().find(|p| p.file_name().is_some_and(|n| n == "mmc_host"))?.parent()?;
    let compatible =
        sysfs::read_bytes(&controller.join("of_node/compatible"), sysfs::ATTR_LIMIT).ok().and_then(|bytes| {
            let first = bytes.split(|&b| b == 0).next()?;
            let text = String::from_utf8_lossy(first).trim().to_owned();
            (!text.is_empty()).then_some(text)
        });
    compatible.or_else(|| {
        let link = fs::read_link(controller.join("driver")).ok()?;
        Some(link.file_name()?.to_string_lossy().into_owned())
    })
}

/// The USB device above a card directory, when the card's host sits on USB
/// (Realtek readers driven by `rtsx_usb_sdmmc`).
fn usb_above(resolved: &Path, notes: &mut Vec<String>) -> Option<UsbInfo> {
    let usb_dev = resolved.ancestors().find(|p| p.join("idVendor").exists())?;
    Some(usb_info(usb_dev, resolved, notes))
}

/// The USB facts of `usb_dev`: IDs, bridge name, link speed, driver.
fn usb_info(usb_dev: &Path, resolved: &Path, notes: &mut Vec<String>) -> UsbInfo {
    let vid = read_attr(&usb_dev.join("idVendor")).unwrap_or_default();
    let pid = read_attr(&usb_dev.join("idProduct")).unwrap_or_default();
    let bridge = match (u16::from_str_radix(&vid, 16), u16::from_str_radix(&pid, 16)) {
        (Ok(v), Ok(p)) => usb::bridge_name(v, p).map(str::to_owned),
        _ => None,
    };
    // The interface between the USB device and what hangs below it (`2-1:1.0`,
    // the USB device's child on the way down) carries the driver. The SCSI
    // device itself has a `driver` link too, to `sd`, so it must not be the one read.
    let driver = resolved
        .ancestors()
        .find(|p| p.parent() == Some(usb_dev))
        .and_then(|interface| fs::read_link(interface.join("driver")).ok())
        .and_then(|link| link.file_name().map(|n| n.to_string_lossy().into_owned()));
    let speed_path = usb_dev.join("speed");
    let speed_mbps = read_attr(&speed_path).and_then(|s| {
        let mbps = usb::parse_speed_mbps(&s);
        if mbps.is_none() {
            notes.push(format!("the USB link speed is unknown: {} holds {s:?}", speed_path.display()));
        }
        mbps
    });
    UsbInfo {
        id: format!("{vid}:{pid}"),
        bridge,
        manufacturer: read_attr(&usb_dev.join("manufacturer")),
        product: read_attr(&usb_dev.join("product")),
        speed_mbps,
        driver,
        ..UsbInfo::default()
    }
}

fn identify_usb_disk(dev_dir: &Path, resolved: &Path, device: &mut Device) {
    identify_scsi(dev_dir, device);
    // Walk up from the SCSI device to the USB device that carries idVendor.
    match resolved.ancestors().find(|p| p.join("idVendor").exists()) {
        Some(usb_dev) => {
            let mut usb = usb_info(usb_dev, resolved, &mut device.notes);
            usb.scsi_vendor = device.vendor.clone();
            usb.scsi_model = device.model.clone();
            usb.scsi_revision = device.firmware.clone();
            device.usb = Some(usb);
        }
        None => device.notes.push("the USB device above this disk was not found in sysfs".to_owned()),
    }
    // A card reader sets the SCSI removable bit (RMB); drive enclosures do not.
    let bridge = device.usb.as_ref().and_then(|u| u.bridge.clone());
    if device.removable == Some(true) || bridge.as_deref().is_some_and(|b| b.contains("reader")) {
        device.notes.push(format!(
            "the USB card reader{} hides the card's own registers (CID, CSD, SSR): the card's maker, date and \
             claimed class cannot be read through it",
            bridge.map(|b| format!(" ({b})")).unwrap_or_default()
        ));
    }
}

pub(crate) fn identify_scsi(dev_dir: &Path, device: &mut Device) {
    device.vendor = read_attr(&dev_dir.join("vendor")).filter(|s| !s.is_empty());
    device.model = read_attr(&dev_dir.join("model")).filter(|s| !s.is_empty());
    device.firmware = read_attr(&dev_dir.join("rev")).filter(|s| !s.is_empty());
}

fn identify_nvme(dev_dir: &Path, device: &mut Device) {
    device.model = read_attr(&dev_dir.join("model"));
    device.firmware = read_attr(&dev_dir.join("firmware_rev"));
    device.serial = read_attr(&dev_dir.join("serial"));
    let pci = dev_dir.join("device");
    let width = read_number(&pci.join("current_link_width"), "the PCIe link width", &mut device.notes);
    device.nvme = Some(NvmeInfo {
        transport: read_attr(&dev_dir.join("transport")),
        pcie_link_speed: read_attr(&pci.join("current_link_speed")),
        pcie_link_width: width.and_then(|w| u8::try_from(w).ok()),
    });
}

/// virtio exposes the PCI vendor number; 0x1af4 is Red Hat's (virtio's own).
fn virtio_vendor(raw: &str) -> String {
    match sysfs::parse_u64(raw) {
        Some(0x1af4) => "virtio (Red Hat 0x1af4)".to_owned(),
        _ => raw.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_by_name_and_path() {
        let p = Path::new;
        assert_eq!(classify("mmcblk0", Some("SD"), p("/x")), DeviceKind::SD);
        assert_eq!(classify("mmcblk1", Some("MMC"), p("/x")), DeviceKind::EMMC);
        assert_eq!(classify("loop3", None, p("/x")), DeviceKind::LOOP);
        assert_eq!(classify("vda", None, p("/sys/devices/pci0000:00/0000:00:04.0/virtio1")), DeviceKind::VIRTIO);
        assert_eq!(
            classify("sda", None, p("/sys/devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host0/target0:0:0/0:0:0:0")),
            DeviceKind::USB
        );
        assert_eq!(
            classify("sda", None, p("/sys/devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0")),
            DeviceKind::SATA
        );
        assert_eq!(classify("nvme0n1", None, p("/x")), DeviceKind::NVME);
    }

    #[test]
    fn host_name_from_card_dir() {
        assert_eq!(mmc_host_name(Path::new("/sys/devices/x/mmc_host/mmc0/mmc0:aaaa")), Some("mmc0".to_owned()));
        assert_eq!(mmc_host_name(Path::new("/fixture/block/mmcblk0/device")), None);
    }
}
