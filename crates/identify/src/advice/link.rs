//! The links between host and storage: a USB 3 device on a USB 2 link
//! (`usb-link-slower-than-device`), a UAS bridge on the old Bulk-Only
//! driver (`usb-storage-not-uas`), a PCIe link below what both ends can do
//! (`pcie-link-downgraded`) and an SD bus slower than the card
//! (`sd-bus-below-card`).

use std::path::{Path, PathBuf};

use storage_scoring::health::{Advice, AdviceCode, Severity};
use storage_scoring::schema::DeviceKind;

use super::{Context, advice};
use crate::usb;
use storage_platform::sysfs::{self, read_attr};

/// The disk's device directory, resolved, and the USB device above it.
fn usb_device(ctx: &Context<'_>) -> Option<PathBuf> {
    let resolved = sysfs::resolve_dir(&ctx.disk.sys_dir.join("device"));
    resolved.ancestors().find(|p| p.join("idVendor").exists()).map(Path::to_path_buf)
}

fn ids(usb_dev: &Path) -> Option<(u16, u16)> {
    let vid = u16::from_str_radix(&read_attr(&usb_dev.join("idVendor"))?, 16).ok()?;
    let pid = u16::from_str_radix(&read_attr(&usb_dev.join("idProduct"))?, 16).ok()?;
    Some((vid, pid))
}

/// The device's name in evidence: `JMicron JMS578 SATA bridge (152d:0578)`.
fn usb_name(vid: u16, pid: u16) -> String {
    match usb::bridge_name(vid, pid) {
        Some(name) => format!("the {name} ({vid:04x}:{pid:04x})"),
        None => format!("the USB device {vid:04x}:{pid:04x}"),
    }
}

pub fn usb_link_slower_than_device(ctx: &Context<'_>) -> Option<Advice> {
    let usb_dev = usb_device(ctx)?;
    let (vid, pid) = ids(&usb_dev)?;
    let speed = read_attr(&usb_dev.join("speed")).and_then(|s| usb::parse_speed_mbps(&s))?;
    if speed > 480 || !usb::usb3_bridge(vid, pid) {
        return None;
    }
    // A USB 3 port shows as two ports, one per root hub; the USB 2 half
    // links to its SuperSpeed twin as `peer`.
    let port = sysfs::resolve_dir(&usb_dev.join("port"));
    let usb3_port = port.join("peer").exists();
    let version = read_attr(&usb_dev.join("version")).unwrap_or_default();
    let evidence = format!(
        "{} is a USB 3 part, linked at {speed} Mb/s (bcdUSB {}, as a USB 3 device reports itself at USB 2 speed){}",
        usb_name(vid, pid),
        version.trim(),
        if usb3_port {
            "; the port it sits in is a USB 3 port (it has a SuperSpeed peer)"
        } else {
            "; the kernel knows no SuperSpeed peer for its port: a USB 2 port or hub, or a link that fell back to USB 2"
        }
    );
    let fix = if usb3_port {
        "the port is USB 3 but the link trained at USB 2: use the short USB 3 cable of the enclosure, leave out \
         extension cables and USB 2 hubs, and plug it in again firmly; `lsusb -t` should then show 5000M"
    } else {
        "plug the drive straight into a USB 3 port (blue on a Raspberry Pi 4 and 5), with the enclosure's own USB 3 \
         cable and no USB 2 hub in between; `lsusb -t` should then show 5000M. On a Pi 3 and older every port is USB \
         2, which caps any drive near 35-40 MB/s"
    };
    Some(advice(
        AdviceCode::UsbLinkSlowerThanDevice,
        Severity::Warn,
        evidence,
        fix,
        "Universal Serial Bus 3.2 Specification 9.6.1 (bcdUSB 0210h at high speed); Linux \
         Documentation/ABI/testing/sysfs-bus-usb (speed, port/peer)",
    ))
}

/// `usb-storage.quirks` (`VID:PID:FLAGS,…`): the flags given for this device.
fn quirk_flags(quirks: &str, vid: u16, pid: u16) -> Option<String> {
    quirks.split(',').find_map(|entry| {
        let mut parts = entry.trim().splitn(3, ':');
        let (v, p, flags) = (parts.next()?, parts.next()?, parts.next()?);
        let same = u16::from_str_radix(v, 16).ok()? == vid && u16::from_str_radix(p, 16).ok()? == pid;
        same.then(|| flags.to_owned())
    })
}

pub fn usb_storage_not_uas(ctx: &Context<'_>) -> Option<Advice> {
    let driver = ctx.device.usb.as_ref()?.driver.as_deref()?;
    if driver != "usb-storage" {
        return None;
    }
    let usb_dev = usb_device(ctx)?;
    let (vid, pid) = ids(&usb_dev)?;
    let descriptors = sysfs::read_bytes(&usb_dev.join("descriptors"), sysfs::ATTR_LIMIT).ok()?;
    if usb::offers_uas(&descriptors) != Some(true) {
        return None;
    }
    let quirks = read_attr(&ctx.roots.sys.join("module/usb_storage/parameters/quirks")).unwrap_or_default();
    // `u` is US_FL_IGNORE_UAS: someone turned UAS off for this device on purpose.
    if quirk_flags(&quirks, vid, pid).is_some_and(|f| f.contains('u')) {
        return None;
    }
    let evidence = format!(
        "{} offers UAS (an alternate setting of its mass-storage interface has protocol 62h) but is driven by \
         usb-storage (Bulk-Only Transport): one command at a time, no queueing",
        usb_name(vid, pid)
    );
    Some(advice(
        AdviceCode::UsbStorageNotUas,
        Severity::Warn,
        evidence,
        "look at `dmesg | grep -i uas`: if the kernel says UAS is ignored for this device, it turns UAS off on purpose \
         for a bridge known to misbehave with it; leave it so. Otherwise load the driver (`sudo modprobe uas`), \
         remove any `usb-storage.quirks=…:u` for this device from /boot/firmware/cmdline.txt, and plug the drive in \
         again",
        "USB Mass Storage Class Specification Overview 1.4 (protocol 62h = UAS, 50h = Bulk-Only); Linux \
         drivers/usb/storage/uas-detect.h and unusual_uas.h; Linux Documentation/admin-guide/kernel-parameters.txt \
         (usb-storage.quirks, flag u)",
    ))
}

/// `8.0 GT/s PCIe` → 8.0; `Unknown` → None.
pub fn parse_link_speed(text: &str) -> Option<f64> {
    let v: f64 = text.split_whitespace().next()?.parse().ok()?;
    (v.is_finite() && v > 0.0).then_some(v)
}

/// One end of a PCIe link as sysfs shows it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LinkEnd {
    current_gt_s: Option<f64>,
    max_gt_s: Option<f64>,
    current_width: Option<u32>,
    max_width: Option<u32>,
}

fn link_end(dir: &Path) -> LinkEnd {
    let width = |name: &str| read_attr(&dir.join(name)).and_then(|w| w.trim().parse().ok()).filter(|&w: &u32| w > 0);
    LinkEnd {
        current_gt_s: read_attr(&dir.join("current_link_speed")).and_then(|s| parse_link_speed(&s)),
        max_gt_s: read_attr(&dir.join("max_link_speed")).and_then(|s| parse_link_speed(&s)),
        current_width: width("current_link_width"),
        max_width: width("max_link_width"),
    }
}

fn pcie_gen(gt_s: f64) -> &'static str {
    match gt_s {
        s if s < 3.0 => "Gen 1",
        s if s < 6.0 => "Gen 2",
        s if s < 10.0 => "Gen 3",
        s if s < 20.0 => "Gen 4",
        _ => "Gen 5",
    }
}

pub fn pcie_link_downgraded(ctx: &Context<'_>) -> Option<Advice> {
    // An NVMe drive's own link, or the link of a SATA drive's AHCI controller.
    let kind = ctx.device.kind;
    if kind != DeviceKind::NVME && kind != DeviceKind::SATA {
        return None;
    }
    let resolved = sysfs::resolve_dir(&ctx.disk.sys_dir.join("device"));
    let pci = resolved.ancestors().find(|p| p.join("current_link_speed").exists())?;
    let dev = link_end(pci);
    let port = pci.parent().map(link_end).filter(|p| p.max_gt_s.is_some());
    let (current, dev_max) = (dev.current_gt_s?, dev.max_gt_s?);
    let port_max = port.and_then(|p| p.max_gt_s);
    let best = port_max.map_or(dev_max, |p| p.min(dev_max));
    let name = pci.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let pi5 = ctx.pi_generation() == Some(5);
    // The Pi 5's port is set to Gen 2 in its device tree unless told otherwise.
    if pi5 && current < 6.0 && dev_max > current && port_max.is_some_and(|p| p <= current) {
        let evidence = format!(
            "the drive's link ({name}) runs at {current} GT/s ({}); the drive can do {dev_max} GT/s ({}), and the Raspberry \
             Pi 5's PCIe port is set to {} by default",
            pcie_gen(current),
            pcie_gen(dev_max),
            pcie_gen(current)
        );
        return Some(advice(
            AdviceCode::PcieLinkDowngraded,
            Severity::Info,
            evidence,
            "add `dtparam=pciex1_gen=3` to /boot/firmware/config.txt and reboot for 8 GT/s (Raspberry Pi does not \
             certify Gen 3: remove the line again if the drive shows errors)",
            "Raspberry Pi documentation, Raspberry Pi 5 PCIe (\"PCIe Gen 3.0\", dtparam=pciex1_gen=3); Linux \
             Documentation/ABI/testing/sysfs-bus-pci (current_link_speed, max_link_speed)",
        ));
    }
    let slow = current + 0.01 < best;
    let best_width = match (dev.max_width, port.and_then(|p| p.max_width)) {
        (Some(d), Some(p)) => Some(d.min(p)),
        (d, _) => d,
    };
    let narrow = matches!((dev.current_width, best_width), (Some(c), Some(b)) if c < b);
    if !slow && !narrow {
        return None;
    }
    let mut what = Vec::new();
    if slow {
        what.push(format!(
            "runs at {current} GT/s ({}) where both ends can do {best} GT/s ({})",
            pcie_gen(current),
            pcie_gen(best)
        ));
    }
    if narrow {
        what.push(format!(
            "uses {} lane(s) of the {} both ends have",
            dev.current_width.unwrap_or(0),
            best_width.unwrap_or(0)
        ));
    }
    Some(advice(
        AdviceCode::PcieLinkDowngraded,
        Severity::Warn,
        format!("the drive's PCIe link ({name}) {}", what.join(" and ")),
        "a link that trains below both ends is a contact or signal problem: power off, reseat the drive (and on a \
         Pi 5 the flat cable of the HAT, both ends, contacts facing the right way), and check that no adapter or \
         riser in between is a slower one",
        "Linux Documentation/ABI/testing/sysfs-bus-pci (current_link_speed, current_link_width, max_link_speed, \
         max_link_width); PCI Express Base Specification, Link Capabilities and Link Status registers",
    ))
}

/// `MMC_CAP_UHS_*` of include/linux/mmc/host.h (debugfs `mmcN/caps`).
const MMC_CAP_UHS: u64 = 0x1f << 16;

pub fn sd_bus_below_card(ctx: &Context<'_>) -> Option<Advice> {
    if ctx.device.kind != DeviceKind::SD || ctx.device.usb.is_some() {
        return None;
    }
    let sd = ctx.device.sd.as_ref()?;
    let ssr = sd.ssr.as_ref()?;
    let timing = sd.host.as_ref()?.timing.as_deref()?;
    // A U mark, or V30 and up (more than High Speed's 25 MB/s bus carries),
    // is only made on UHS-I cards, which all run SDR50 (50 MB/s) at least.
    let uhs_card = ssr.uhs_grade > 0 || ssr.video_class >= 30;
    let below = matches!(timing, "legacy" | "sd high-speed");
    if !uhs_card || !below {
        return None;
    }
    let resolved = sysfs::resolve_dir(&ctx.disk.sys_dir.join("device"));
    let host = resolved.file_name()?.to_string_lossy().split(':').next().map(str::to_owned)?;
    let caps = read_attr(&ctx.roots.debugfs.join(&host).join("caps")).and_then(|c| sysfs::parse_u64(&c));
    let host_uhs = caps.map(|c| c & MMC_CAP_UHS != 0);
    let claim = sd.class_label.clone().unwrap_or_else(|| format!("U{}", ssr.uhs_grade));
    let pi = ctx.pi_generation();
    let host_can = host_uhs == Some(true) || matches!(pi, Some(4 | 5));
    let evidence = format!(
        "the card claims {claim}, a UHS-I card (SDR50, 50 MB/s or faster), but the host runs it in {timing} mode \
         (25 MB/s at most){}",
        match host_uhs {
            Some(true) => "; the host controller offers UHS-I modes (debugfs caps)",
            Some(false) => "; the host controller offers no UHS-I mode (debugfs caps)",
            None => "",
        }
    );
    let (severity, fix) = if host_can {
        (
            Severity::Warn,
            "the host can run UHS-I but the card fell back to High Speed: the switch to 1.8 V signalling failed or \
             the card sits in an adapter. Take it out of any adapter, reinsert it, reboot, and look for \"1.8V\" or \
             \"UHS\" in `dmesg | grep mmc`; a Raspberry Pi 4 then runs DDR50, a Pi 5 SDR104",
        )
    } else {
        (
            Severity::Info,
            "nothing to set on this board: its SD host has no 1.8 V signalling, so it runs High Speed at most (about \
             23 MB/s sequential); a Raspberry Pi 4 runs such a card in DDR50 and a Pi 5 in SDR104",
        )
    };
    Some(advice(
        AdviceCode::SdBusBelowCard,
        severity,
        evidence,
        fix,
        "SD Physical Layer Simplified Specification 9.10 (bus speed modes; UHS Speed Grade and Video Speed Class \
         V30+ need a UHS bus); Linux drivers/mmc/core/debugfs.c (ios, caps) and include/linux/mmc/host.h \
         (MMC_CAP_UHS_*); Raspberry Pi documentation (SD card speeds of the Pi 4 and Pi 5)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_quirks_and_link_speeds() {
        assert_eq!(quirk_flags("152d:0578:u,0bc2:2312:ku", 0x152d, 0x0578).as_deref(), Some("u"));
        assert_eq!(quirk_flags("0BC2:2312:ku", 0x0bc2, 0x2312).as_deref(), Some("ku"));
        assert_eq!(quirk_flags("", 1, 2), None);
        assert_eq!(quirk_flags("zz:yy:u", 1, 2), None);
        assert_eq!(parse_link_speed("8.0 GT/s PCIe"), Some(8.0));
        assert_eq!(parse_link_speed("5.0 GT/s"), Some(5.0));
        assert_eq!(parse_link_speed("Unknown"), None);
        assert_eq!(parse_link_speed("-1 GT/s"), None);
        assert_eq!(pcie_gen(2.5), "Gen 1");
        assert_eq!(pcie_gen(16.0), "Gen 4");
    }
}
