//! USB storage: which bridge chip sits between the USB port and the
//! SATA/NVMe drive or the card, and the link speed sysfs reports.
//!
//! The bridge decides much of what a USB drive can do (UAS, TRIM pass-through,
//! SMART), so naming it helps a reader judge a result. IDs come from:
//! - the USB ID Repository, `usb.ids` (linux-usb.org; github.com/usbids/usbids,
//!   snapshot of 2026-06);
//! - Linux `drivers/usb/storage/unusual_uas.h`;
//! - smartmontools `drivedb.h` (USB bridge section), for IDs `usb.ids` lacks.
//!
//! Where the sources name a chip differently, the entry says so. Products
//! made of a bridge plus a drive (portable SSDs) report their own IDs and are
//! not listed.

/// The bridge chip behind a USB vendor:product ID, when known.
pub fn bridge_name(vid: u16, pid: u16) -> Option<&'static str> {
    Some(match (vid, pid) {
        // JMicron.
        (0x152d, 0x0539) => "JMicron JMS539 SATA bridge",
        (0x152d, 0x0551 | 0x2551) => "JMicron JMS551 SATA bridge",
        (0x152d, 0x0561) => "JMicron JMS551 SATA bridge (dual port)",
        (0x152d, 0x0562 | 0x0567 | 0x2590 | 0x3562) => "JMicron JMS567 SATA bridge",
        (0x152d, 0x1561) => "JMicron JMS561U SATA bridge (dual port)",
        (0x152d, 0x2566 | 0x3569) => "JMicron JMS566 SATA bridge",
        // usb.ids: JMS578; Linux unusual_uas.h files 0578 under "JMS567".
        (0x152d, 0x0578 | 0x578e) => "JMicron JMS578 SATA bridge",
        (0x152d, 0x0583) => "JMicron JMS583 NVMe bridge",
        (0x152d, 0x2329) => "JMicron JM20329 SATA bridge",
        (0x152d, 0x2338) => "JMicron JM20337 SATA/PATA bridge",
        (0x152d, 0x2339) => "JMicron JM20339 SATA bridge",
        // usb.ids: "JMS578 based SATA bridge" left with its blank vendor ID.
        (0x0080, 0xa001) => "JMicron JMS578 SATA bridge (unprogrammed ID)",
        // usb.ids: Sharkoon-branded JMS567; unusual_uas.h says JMS566.
        (0x357d, 0x7788) => "JMicron JMS567 SATA bridge (Sharkoon)",
        // ASMedia.
        (0x174c, 0x5106) => "ASMedia ASM1051 SATA bridge",
        (0x174c, 0x51d6) => "ASMedia ASM1051W SATA bridge",
        (0x174c, 0x5136) => "ASMedia ASM1053 SATA bridge",
        (0x174c, 0x1153) => "ASMedia ASM1153 SATA bridge",
        // usb.ids: shared by ASM1051E, ASM1053E, ASM1153 and ASM1153E.
        (0x174c, 0x55aa) => "ASMedia ASM1051E/ASM1053E/ASM1153E SATA bridge",
        // smartmontools drivedb.h: "USB: ; ASMedia ASM2362", USB to NVMe.
        (0x174c, 0x2362) => "ASMedia ASM2362 NVMe bridge",
        // Realtek.
        (0x0bda, 0x9210) => "Realtek RTL9210 NVMe bridge",
        (0x0bda, 0x0111) => "Realtek RTS5111 card reader",
        (0x0bda, 0x0116) => "Realtek RTS5116 card reader",
        (0x0bda, 0x0129) => "Realtek RTS5129 card reader",
        (0x0bda, 0x0138) => "Realtek RTS5138 card reader",
        (0x0bda, 0x0139) => "Realtek RTS5139 card reader",
        (0x0bda, 0x0159) => "Realtek RTS5159 card reader",
        (0x0bda, 0x0184) => "Realtek RTS5182 card reader",
        (0x0bda, 0x0153) => "Realtek SD/SDHC/SDXC card reader",
        (0x0bda, 0x0307 | 0x0316 | 0x0326) => "Realtek card reader",
        // VIA Labs.
        (0x2109, 0x0700) => "VIA VL700 SATA bridge",
        (0x2109, 0x0701) => "VIA VL701 SATA bridge",
        (0x2109, 0x0711) => "VIA VL711 SATA bridge",
        (0x2109, 0x0715) => "VIA Labs VL817 SATA adaptor",
        // Genesys Logic.
        (0x05e3, 0x0731) => "Genesys Logic GL3310 SATA bridge",
        (0x05e3, 0x0718 | 0x0719) => "Genesys Logic SATA bridge",
        (0x05e3, 0x0723) => "Genesys Logic GL827L card reader",
        (0x05e3, 0x0743) => "Genesys Logic SDXC card reader",
        (0x05e3, 0x0749) => "Genesys Logic SD card reader",
        (0x05e3, 0x0715 | 0x0727 | 0x0741 | 0x0751) => "Genesys Logic microSD card reader",
        // Super Top.
        (0x14cd, 0x1212 | 0x121c | 0x121f) => "Super Top microSD card reader",
        (0x14cd, 0x125c | 0x127b | 0x8123 | 0x8125) => "Super Top SD card reader",
        (0x14cd, 0x6116) => "Super Top M6116 SATA bridge",
        // Other bridges and readers.
        (0x067b, 0x2773) => "Prolific PL2773 SATA bridge",
        (0x13fd, 0x1840) => "Initio INIC-1608 SATA bridge",
        (0x13fd, 0x3940) => "Initio INIC-3069 SATA bridge",
        (0x2537, 0x1066) => "Norelsys NS1066 SATA bridge",
        (0x2537, 0x1068) => "Norelsys NS1068 SATA bridge",
        (0x1f75, 0x0621) => "Innostor IS621 SATA bridge",
        (0x1f75, 0x0888) => "Innostor IS888 SATA bridge",
        (0x1e3d, 0x4082) => "Chipsbank CBM4082 SD card reader",
        (0x090c, 0x6000) => "Silicon Motion SG365 SD card reader",
        (0x090c, 0x6200) => "Silicon Motion microSD card reader",
        (0x13fe, 0x2240) => "Phison microSD card reader",
        (0x8564, 0x4000) => "Transcend RDF8/RDF9 UHS-II card reader",
        _ => return None,
    })
}

/// True for the bridges above that are USB 3 parts (5 Gb/s or faster), so
/// that a 480 Mb/s link means a slower link than the bridge can do. From
/// the chip makers' product pages: JMicron JMS539/551/561U/566/567/578
/// (USB 3.0/3.1 Gen 1) and JMS583 (3.1 Gen 2); ASMedia ASM1051(W)/1053/1153
/// (USB 3.0) and ASM2362 (3.2 Gen 2); Realtek RTL9210 (3.2 Gen 2); VIA VL700,
/// VL701, VL711 and VL817 (USB 3.0/3.1); Genesys GL3310 (USB 3.0); Prolific
/// PL2773, Initio INIC-3069, Norelsys NS1066/NS1068, Innostor IS621/IS888
/// (USB 3.0); Transcend RDF8/RDF9 (USB 3.0 reader). The JM2033x parts, the
/// Initio INIC-1608, the Super Top bridges and most card readers are USB 2.
pub fn usb3_bridge(vid: u16, pid: u16) -> bool {
    matches!(
        (vid, pid),
        (0x152d, 0x0539 | 0x0551 | 0x2551 | 0x0561 | 0x0562 | 0x0567 | 0x2590 | 0x3562 | 0x1561 | 0x2566 | 0x3569)
            | (0x152d, 0x0578 | 0x578e | 0x0583)
            | (0x0080, 0xa001)
            | (0x357d, 0x7788)
            | (0x174c, 0x5106 | 0x51d6 | 0x5136 | 0x1153 | 0x55aa | 0x2362)
            | (0x0bda, 0x9210)
            | (0x2109, 0x0700 | 0x0701 | 0x0711 | 0x0715)
            | (0x05e3, 0x0731)
            | (0x067b, 0x2773)
            | (0x13fd, 0x3940)
            | (0x2537, 0x1066 | 0x1068)
            | (0x1f75, 0x0621 | 0x0888)
            | (0x8564, 0x4000)
    )
}

/// The USB Attached SCSI protocol code of a mass-storage interface
/// (USB Mass Storage Class Specification Overview 1.4, table 3: class 08h,
/// SCSI subclass 06h, protocol 62h; Bulk-Only Transport is 50h).
const UAS_PROTOCOL: u8 = 0x62;

/// Whether a USB device offers UAS, from its sysfs `descriptors` file: the
/// 18-byte device descriptor, then every configuration descriptor in full,
/// alternate interface settings included (Documentation/ABI/testing/
/// sysfs-bus-usb). A UAS-capable bridge has an alternate setting of its
/// mass-storage interface with protocol 62h. `None` when the bytes are not
/// a descriptor chain.
pub fn offers_uas(descriptors: &[u8]) -> Option<bool> {
    // The device descriptor: bLength 18, bDescriptorType 1.
    if descriptors.len() < 18 || descriptors[0] != 18 || descriptors[1] != 1 {
        return None;
    }
    let mut at = 18;
    let mut uas = false;
    while at < descriptors.len() {
        let len = usize::from(descriptors[at]);
        if len < 2 || at + len > descriptors.len() {
            return None;
        }
        let kind = descriptors[at + 1];
        // An interface descriptor (04h) is 9 bytes: class, subclass and
        // protocol at offsets 5, 6 and 7.
        if kind == 4 && len >= 9 {
            let (class, subclass, protocol) = (descriptors[at + 5], descriptors[at + 6], descriptors[at + 7]);
            uas |= class == 0x08 && subclass == 0x06 && protocol == UAS_PROTOCOL;
        }
        at += len;
    }
    Some(uas)
}

/// The bcdUSB a device reports, from sysfs `version` (` 3.20`, ` 2.10`).
/// A USB 3 device connected at high speed reports 2.10 (USB 3.2
/// specification, 9.6.1), so this cannot tell a USB 3 device on a USB 2
/// link from a USB 2 device.
pub fn parse_version(text: &str) -> Option<(u8, u8)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The link speed from sysfs `speed` (`1.5`, `12`, `480`, `5000`, `10000`,
/// `20000`), in whole Mbit/s. A fraction is dropped, so low speed (1.5)
/// reads as 1.
pub fn parse_speed_mbps(text: &str) -> Option<u32> {
    let text = text.trim();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    whole.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_common_bridges() {
        assert_eq!(bridge_name(0x152d, 0x0578), Some("JMicron JMS578 SATA bridge"));
        assert_eq!(bridge_name(0x152d, 0x0583), Some("JMicron JMS583 NVMe bridge"));
        assert_eq!(bridge_name(0x174c, 0x55aa), Some("ASMedia ASM1051E/ASM1053E/ASM1153E SATA bridge"));
        assert_eq!(bridge_name(0x174c, 0x2362), Some("ASMedia ASM2362 NVMe bridge"));
        assert_eq!(bridge_name(0x0bda, 0x9210), Some("Realtek RTL9210 NVMe bridge"));
        assert_eq!(bridge_name(0x0bda, 0x0129), Some("Realtek RTS5129 card reader"));
        assert_eq!(bridge_name(0x05e3, 0x0749), Some("Genesys Logic SD card reader"));
        assert_eq!(bridge_name(0x1d6b, 0x0003), None);
    }

    #[test]
    fn usb3_bridges_and_versions() {
        assert!(usb3_bridge(0x152d, 0x0578));
        assert!(usb3_bridge(0x0bda, 0x9210));
        assert!(!usb3_bridge(0x152d, 0x2338), "JM20337 is a USB 2 bridge");
        assert!(!usb3_bridge(0x05e3, 0x0749), "a USB 2 card reader");
        assert_eq!(parse_version(" 2.10\n"), Some((2, 10)));
        assert_eq!(parse_version("3"), None);
    }

    /// A JMS578's descriptors as `lsusb -v` shows them (usb.ids, Linux
    /// unusual_uas.h): interface 0 altsetting 0 Bulk-Only (50h), altsetting
    /// 1 UAS (62h).
    #[test]
    fn finds_the_uas_altsetting() {
        let mut d = vec![18, 1, 0x10, 0x03, 0, 0, 0, 9, 0x2d, 0x15, 0x78, 0x05, 0x04, 0x04, 1, 2, 3, 1];
        d.extend([9, 2, 0x79, 0, 1, 1, 0, 0x80, 0x70]);
        d.extend([9, 4, 0, 0, 2, 0x08, 0x06, 0x50, 0]);
        d.extend([7, 5, 0x81, 2, 0, 4, 0]);
        assert_eq!(offers_uas(&d), Some(false));
        d.extend([9, 4, 0, 1, 4, 0x08, 0x06, 0x62, 0]);
        assert_eq!(offers_uas(&d), Some(true));
        assert_eq!(offers_uas(&d[..20]), None, "a descriptor cut short");
        assert_eq!(offers_uas(&[]), None);
        assert_eq!(
            offers_uas(&[18, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            None,
            "bLength 0 loops nowhere"
        );
    }

    #[test]
    fn parses_speeds() {
        assert_eq!(parse_speed_mbps("480\n"), Some(480));
        assert_eq!(parse_speed_mbps("5000"), Some(5000));
        assert_eq!(parse_speed_mbps("10000"), Some(10000));
        assert_eq!(parse_speed_mbps("20000"), Some(20000));
        assert_eq!(parse_speed_mbps("12"), Some(12));
        assert_eq!(parse_speed_mbps("1.5"), Some(1));
        assert_eq!(parse_speed_mbps(""), None);
        assert_eq!(parse_speed_mbps("unknown"), None);
        assert_eq!(parse_speed_mbps("-480"), None);
        assert_eq!(parse_speed_mbps(".5"), None);
        assert_eq!(parse_speed_mbps("1.5.5"), None);
        assert_eq!(parse_speed_mbps("99999999999"), None);
    }
}
