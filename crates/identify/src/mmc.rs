//! eMMC registers: the JEDEC CID and the parts of EXT_CSD that say how worn
//! and how capable the device is.
//!
//! Layouts follow JEDEC JESD84 (eMMC 4.x/5.x) and Linux
//! `drivers/mmc/core/mmc.c`. The CID comes from sysfs (`device/cid`, 32 hex
//! digits), EXT_CSD from debugfs (`mmcN/mmcN:RCA/ext_csd`), which prints the
//! 512 bytes in index order as 1024 hex digits.

use storage_scoring::schema::{ExtCsd, MmcCid};

pub use crate::hex::DecodeError;
use crate::hex::{ascii_field, bits, parse_register};
use crate::manufacturers::mmc_maker;

/// Decodes an eMMC CID (JEDEC layout of MMC 4.0 and later), as bit
/// ranges: MID 127:120, CBX 113:112, OID 111:104, PNM 103:56, PRV 55:48,
/// PSN 47:16, MDT 15:8.
///
/// The year nibble of MDT counts from 1997, but from EXT_CSD_REV 5 (eMMC
/// 4.41) on, JESD84-B451 remaps it to cover 2013..=2025 and 2010..=2012, and
/// from EXT_CSD_REV 9, JESD84-B51B (September 2025) rolls it over again to
/// 2026..=2038 and 2023..=2025. Pass the device's EXT_CSD_REV when known;
/// like Linux (`mmc_decode_ext_csd`: 16 is added to years before 2010 from
/// revision 5, and again to years before 2023 from revision 9, mainline
/// commit 3e487a634bc0 "mmc: core: Adjust MDT beyond 2025"), `None` keeps the
/// 1997 base. Without root EXT_CSD is unreadable, so identification prefers
/// the kernel's own `device/date`, which applies the revision and the
/// kernel's quirks (see [`parse_sysfs_date`]).
pub fn decode_cid(hex: &str, ext_csd_rev: Option<u8>) -> Result<MmcCid, DecodeError> {
    let r = parse_register(hex, 16)?;
    let mid = bits(&r, 127, 120) as u8;
    let pnm: Vec<u8> = (0..6).map(|i| bits(&r, 103 - 8 * i, 96 - 8 * i) as u8).collect();
    let month = bits(&r, 15, 12);
    let mut year = 1997 + bits(&r, 11, 8);
    if ext_csd_rev.is_some_and(|rev| rev > 4) && year < 2010 {
        year += 16;
    }
    if ext_csd_rev.is_some_and(|rev| rev >= 9) && year < 2023 {
        year += 16;
    }
    let maker = mmc_maker(mid);
    Ok(MmcCid {
        manufacturer_id: mid,
        manufacturer: maker.map(|m| m.name.to_owned()),
        manufacturer_contested: maker.is_some_and(|m| m.contested),
        device_type: bits(&r, 113, 112) as u8,
        oem_id: format!("0x{:02x}", bits(&r, 111, 104)),
        product_name: ascii_field(&pnm),
        product_revision: format!("{}.{}", bits(&r, 55, 52), bits(&r, 51, 48)),
        serial: Some(bits(&r, 47, 16) as u32),
        manufactured: format!("{year:04}-{month:02}"),
    })
}

/// The kernel's `date` attribute (`MM/YYYY`, drivers/mmc/core/bus.c prints
/// `card->cid.month` and `year` after every date fix-up) as `YYYY-MM`.
pub fn parse_sysfs_date(text: &str) -> Option<String> {
    let (month, year) = text.trim().split_once('/')?;
    let month: u8 = month.parse().ok()?;
    let year: u16 = year.parse().ok()?;
    (1..=12).contains(&month).then(|| format!("{year:04}-{month:02}"))
}

/// EXT_CSD byte offsets (JESD84-B51 section 7.4).
const EXT_CSD_REV: usize = 192;
const CACHE_SIZE: usize = 249; // 4 bytes, little-endian
const FIRMWARE_VERSION: usize = 254; // 8 bytes
const PRE_EOL_INFO: usize = 267;
const DEVICE_LIFE_TIME_EST_TYP_A: usize = 268;
const DEVICE_LIFE_TIME_EST_TYP_B: usize = 269;
const CMDQ_DEPTH: usize = 307;
const CMDQ_SUPPORT: usize = 308;

/// Decodes the 512-byte EXT_CSD (1024 hex digits).
///
/// Fields are reported only from the revision that defines them: cache
/// size from EXT_CSD_REV 6 (eMMC 4.5), firmware version, life-time
/// estimates and pre-EOL from 7 (eMMC 5.0), command queue from 8 (eMMC 5.1).
/// CACHE_SIZE counts units of 1 Kb; like mmc-utils this reads them as KiB.
/// The firmware version is shown as ASCII when all of it is printable, else
/// as 16 hex digits like Linux's `fwrev` attribute.
pub fn decode_ext_csd(hex: &str) -> Result<ExtCsd, DecodeError> {
    let r = parse_register(hex, 512)?;
    let byte = |i: usize| r.get(i).copied().unwrap_or(0);
    let rev = byte(EXT_CSD_REV);
    let mut ext = ExtCsd { ext_csd_rev: rev, ..ExtCsd::default() };
    if rev >= 6 {
        let kib =
            u32::from_le_bytes([byte(CACHE_SIZE), byte(CACHE_SIZE + 1), byte(CACHE_SIZE + 2), byte(CACHE_SIZE + 3)]);
        ext.cache_size_bytes = Some(u64::from(kib) * 1024);
    }
    if rev >= 7 {
        ext.life_time_est_a = Some(byte(DEVICE_LIFE_TIME_EST_TYP_A));
        ext.life_time_est_b = Some(byte(DEVICE_LIFE_TIME_EST_TYP_B));
        ext.pre_eol_info = Some(byte(PRE_EOL_INFO));
        let fw: Vec<u8> = (FIRMWARE_VERSION..FIRMWARE_VERSION + 8).map(byte).collect();
        ext.firmware_version = Some(firmware_text(&fw));
    }
    if rev >= 8 {
        let depth = if byte(CMDQ_SUPPORT) & 1 == 1 { (byte(CMDQ_DEPTH) & 0x1f) + 1 } else { 0 };
        ext.command_queue_depth = Some(depth);
    }
    Ok(ext)
}

fn firmware_text(fw: &[u8]) -> String {
    let text = ascii_field(fw);
    let printable = fw.iter().all(|&b| b == 0 || b == b' ' || b.is_ascii_graphic());
    if printable && !text.is_empty() {
        text
    } else {
        let digits: String = fw.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{digits}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An EXT_CSD with the given bytes set and the rest zero.
    fn ext_csd(set: &[(usize, u8)]) -> String {
        let mut bytes = [0u8; 512];
        for &(i, v) in set {
            bytes[i] = v;
        }
        bytes.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n"
    }

    #[test]
    fn decodes_samsung_emmc_cid() {
        // Samsung MID, BGA package, PRV 0x01, MDT 0x7d: July, year nibble
        // 0xd, which is 2010 under both date encodings.
        let hex = "15010041414732474101c4ce4a0f7d00";
        let cid = decode_cid(hex, Some(6)).unwrap();
        assert_eq!(cid.manufacturer_id, 0x15);
        assert_eq!(cid.manufacturer.as_deref(), Some("Samsung"));
        assert_eq!(cid.device_type, 1);
        assert_eq!(cid.oem_id, "0x00");
        assert_eq!(cid.product_name, "AAG2GA");
        assert_eq!(cid.product_revision, "0.1");
        assert_eq!(cid.serial, Some(0xc4ce4a0f));
        assert_eq!(cid.manufactured, "2010-07");
        assert_eq!(decode_cid(hex, None).unwrap().manufactured, "2010-07");
    }

    #[test]
    fn mdt_year_depends_on_revision() {
        // Year nibble 3: 2000 on old devices, 2016 from EXT_CSD_REV 5 on.
        let hex = "90014a48414732652011223344555300";
        assert_eq!(decode_cid(hex, None).unwrap().manufactured, "2000-05");
        assert_eq!(decode_cid(hex, Some(4)).unwrap().manufactured, "2000-05");
        assert_eq!(decode_cid(hex, Some(8)).unwrap().manufactured, "2016-05");
        let cid = decode_cid(hex, Some(8)).unwrap();
        assert_eq!(cid.manufacturer.as_deref(), Some("SK hynix"));
        assert_eq!(cid.product_name, "HAG2e");
        assert_eq!(cid.oem_id, "0x4a");
    }

    /// The mapping table of JESD84-B51B as the mainline commit gives it.
    #[test]
    fn mdt_year_from_revision_9() {
        // Year nibble 0: 1997 / 2013 / 2029; 12: 2009 / 2025 / 2025;
        // 13: 2010 / 2010 / 2026; 9: 2006 / 2022 / 2038.
        let year = |nibble: u8, rev: Option<u8>| {
            let hex = format!("90014a48414732652011223344555{nibble:x}00");
            decode_cid(&hex, rev).unwrap().manufactured[..4].to_owned()
        };
        assert_eq!([year(0, None), year(0, Some(8)), year(0, Some(9))], ["1997", "2013", "2029"]);
        assert_eq!([year(12, None), year(12, Some(8)), year(12, Some(9))], ["2009", "2025", "2025"]);
        assert_eq!([year(13, None), year(13, Some(8)), year(13, Some(9))], ["2010", "2010", "2026"]);
        assert_eq!([year(9, None), year(9, Some(8)), year(9, Some(9))], ["2006", "2022", "2038"]);
    }

    #[test]
    fn sysfs_dates() {
        assert_eq!(parse_sysfs_date("05/2013\n").as_deref(), Some("2013-05"));
        assert_eq!(parse_sysfs_date("13/2013"), None);
        assert_eq!(parse_sysfs_date("2013-05"), None);
        assert_eq!(parse_sysfs_date(""), None);
    }

    #[test]
    fn decodes_emmc51_ext_csd() {
        let text = ext_csd(&[
            (EXT_CSD_REV, 8),
            (CACHE_SIZE, 0x00),
            (CACHE_SIZE + 1, 0x04), // 1024 KiB
            (FIRMWARE_VERSION, 0x03),
            (PRE_EOL_INFO, 1),
            (DEVICE_LIFE_TIME_EST_TYP_A, 2),
            (DEVICE_LIFE_TIME_EST_TYP_B, 1),
            (CMDQ_DEPTH, 31),
            (CMDQ_SUPPORT, 1),
        ]);
        let ext = decode_ext_csd(&text).unwrap();
        assert_eq!(ext.ext_csd_rev, 8);
        assert_eq!(ext.cache_size_bytes, Some(1 << 20));
        assert_eq!(ext.firmware_version.as_deref(), Some("0x0300000000000000"));
        assert_eq!(ext.pre_eol_info, Some(1));
        assert_eq!(ext.life_time_est_a, Some(2));
        assert_eq!(ext.life_time_est_b, Some(1));
        assert_eq!(ext.command_queue_depth, Some(32));
    }

    #[test]
    fn ascii_firmware_and_no_cmdq() {
        let mut set = vec![(EXT_CSD_REV, 8), (CMDQ_DEPTH, 31)];
        set.extend(b"PRV1.0  ".iter().enumerate().map(|(i, &b)| (FIRMWARE_VERSION + i, b)));
        let ext = decode_ext_csd(&ext_csd(&set)).unwrap();
        assert_eq!(ext.firmware_version.as_deref(), Some("PRV1.0"));
        assert_eq!(ext.command_queue_depth, Some(0));
    }

    #[test]
    fn old_revisions_report_less() {
        let ext = decode_ext_csd(&ext_csd(&[(EXT_CSD_REV, 5), (DEVICE_LIFE_TIME_EST_TYP_A, 3)])).unwrap();
        assert_eq!(ext, ExtCsd { ext_csd_rev: 5, ..ExtCsd::default() });
        let ext = decode_ext_csd(&ext_csd(&[(EXT_CSD_REV, 6), (CACHE_SIZE, 0x40)])).unwrap();
        assert_eq!(ext.cache_size_bytes, Some(64 * 1024));
        assert_eq!(ext.life_time_est_a, None);
    }

    #[test]
    fn rejects_short_ext_csd() {
        let e = decode_ext_csd("00").unwrap_err();
        assert_eq!(e.to_string(), "expected 1024 hex digits, got 2");
    }
}
