//! SD card registers: CID, CSD, SCR, SD Status (SSR) and OCR, decoded from
//! the text Linux shows in `/sys/block/mmcblkN/device/`.
//!
//! Field positions follow the SD Physical Layer Simplified Specification
//! (CID 5.2, CSD 5.3, SCR 5.6, SD Status 4.10.2, OCR 5.1) and agree with
//! Linux `drivers/mmc/core/sd.c` (`mmc_decode_cid`, `mmc_decode_csd`,
//! `mmc_decode_scr`, `mmc_read_ssr`). Every decoder is pure and total: any
//! input gives a value or a [`DecodeError`], never a panic.

use storage_scoring::schema::{Ocr, SdCid, SdCsd, SdScr, SdSsr};

pub use crate::hex::DecodeError;
use crate::hex::{ascii_field, bit, bits, parse_register};
use crate::manufacturers::sd_maker;

/// Decodes the 128-bit CID as sysfs prints it (32 hex digits).
pub fn decode_cid(hex: &str) -> Result<SdCid, DecodeError> {
    let r = parse_register(hex, 16)?;
    let mid = bits(&r, 127, 120) as u8;
    let oid = bits(&r, 119, 104) as u16;
    let [oid_hi, oid_lo] = oid.to_be_bytes();
    let oem_id = if oid_hi.is_ascii_graphic() && oid_lo.is_ascii_graphic() {
        format!("{}{}", char::from(oid_hi), char::from(oid_lo))
    } else {
        format!("0x{oid:04x}")
    };
    let pnm: Vec<u8> = (0..5).map(|i| bits(&r, 103 - 8 * i, 96 - 8 * i) as u8).collect();
    let year = 2000 + bits(&r, 19, 12);
    let month = bits(&r, 11, 8);
    let maker = sd_maker(mid);
    Ok(SdCid {
        manufacturer_id: mid,
        manufacturer: maker.map(|m| m.name.to_owned()),
        manufacturer_contested: maker.is_some_and(|m| m.contested),
        oem_id,
        oem_id_raw: oid,
        product_name: ascii_field(&pnm),
        product_revision: format!("{}.{}", bits(&r, 63, 60), bits(&r, 59, 56)),
        serial: Some(bits(&r, 55, 24) as u32),
        manufactured: format!("{year:04}-{month:02}"),
    })
}

/// TRAN_SPEED time values, in tenths (0 is reserved).
const TRAN_TIME_TENTHS: [u64; 16] = [0, 10, 12, 13, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 70, 80];

/// TRAN_SPEED (CSD bits 103:96) in bits per second; 0 when the field holds a
/// reserved rate unit (4..=7) or time value (0).
pub fn tran_speed_bps(tran_speed: u8) -> u64 {
    let unit = u32::from(tran_speed & 0x7);
    if unit > 3 {
        return 0;
    }
    let base = 100_000 * 10u64.pow(unit);
    let tenths = TRAN_TIME_TENTHS[usize::from((tran_speed >> 3) & 0xf)];
    base * tenths / 10
}

/// Decodes the 128-bit CSD, structures 1.0 (SDSC), 2.0 (SDHC/SDXC) and 3.0
/// (SDUC). CSD_STRUCTURE 3 is reserved and rejected.
///
/// `max_transfer_rate_bps` is 0 when TRAN_SPEED holds a reserved value.
pub fn decode_csd(hex: &str) -> Result<SdCsd, DecodeError> {
    let r = parse_register(hex, 16)?;
    let structure = bits(&r, 127, 126);
    let read_bl_len = bits(&r, 83, 80);
    let capacity_bytes = match structure {
        0 => {
            let c_size = bits(&r, 73, 62);
            let c_size_mult = bits(&r, 49, 47);
            // (C_SIZE+1) * 2^(C_SIZE_MULT+2) blocks of 2^READ_BL_LEN bytes;
            // at most 2^12 * 2^9 * 2^15 = 2^36, so no overflow.
            (c_size + 1) << (c_size_mult + 2 + read_bl_len)
        }
        1 => (bits(&r, 69, 48) + 1) * 512 * 1024,
        2 => (bits(&r, 75, 48) + 1) * 512 * 1024,
        other => {
            return Err(DecodeError::Reserved { register: "CSD", field: "CSD_STRUCTURE", value: other });
        }
    };
    let ccc = bits(&r, 95, 84) as u16;
    // SD spec 5.3: CSD 1.0 is SDSC; CSD 2.0 is SDHC up to 32 GB and SDXC from
    // C_SIZE 0x00FFFF on; CSD 3.0 is SDUC. The sysfs OCR cannot say this
    // (Linux keeps only the selected voltage bits there).
    let capacity_type = match structure {
        0 => "SDSC",
        1 if bits(&r, 69, 48) >= SDXC_MIN_C_SIZE => "SDXC",
        1 => "SDHC",
        _ => "SDUC",
    };
    Ok(SdCsd {
        csd_version: structure as u8 + 1,
        capacity_type: capacity_type.to_owned(),
        capacity_bytes,
        max_transfer_rate_bps: tran_speed_bps(bits(&r, 103, 96) as u8),
        ccc,
        command_classes: (0..12u8).filter(|class| ccc >> class & 1 == 1).collect(),
        read_block_len: 1u32 << read_bl_len,
        erase_block_enable: bit(&r, 46),
        perm_write_protect: bit(&r, 13),
        tmp_write_protect: bit(&r, 12),
    })
}

/// The physical layer version from SD_SPEC, SD_SPEC3, SD_SPEC4 and
/// SD_SPECX, as in the spec's table "Physical Layer Specification Version".
///
/// Versions 1.0x and 1.10 predate SD_SPEC3 and later fields; like Linux,
/// those bits are ignored there. From 5.xx on SD_SPECX decides and SD_SPEC4
/// does not matter.
fn spec_version(spec: u64, spec3: bool, spec4: bool, specx: u64) -> Option<&'static str> {
    Some(match (spec, spec3, spec4, specx) {
        (0, ..) => "1.0x",
        (1, ..) => "1.10",
        (2, false, false, 0) => "2.00",
        (2, true, false, 0) => "3.0x",
        (2, true, true, 0) => "4.xx",
        (2, true, _, 1) => "5.xx",
        (2, true, _, 2) => "6.xx",
        (2, true, _, 3) => "7.xx",
        (2, true, _, 4) => "8.xx",
        (2, true, _, 5) => "9.xx",
        _ => return None,
    })
}

/// Decodes the 64-bit SCR (16 hex digits).
///
/// A reserved or future combination of SD_SPEC, SD_SPEC3, SD_SPEC4 and
/// SD_SPECX gives `spec_version` "unknown" with every other field decoded:
/// Linux (`mmc_decode_scr`) keeps such cards working. Only SCR_STRUCTURE
/// other than 0 is an error, as it is for Linux, which then refuses the card.
pub fn decode_scr(hex: &str) -> Result<SdScr, DecodeError> {
    let r = parse_register(hex, 8)?;
    let structure = bits(&r, 63, 60);
    if structure != 0 {
        return Err(DecodeError::Reserved { register: "SCR", field: "SCR_STRUCTURE", value: structure });
    }
    let spec = bits(&r, 59, 56);
    let (spec3, spec4, specx) = (bit(&r, 47), bit(&r, 42), bits(&r, 41, 38));
    let spec_version = spec_version(spec, spec3, spec4, specx).unwrap_or("unknown");
    let widths = bits(&r, 51, 48);
    let bus_widths = [(0, 1u8), (2, 4u8)].into_iter().filter(|&(b, _)| widths >> b & 1 == 1).map(|(_, w)| w).collect();
    // CMD_SUPPORT, bits 35:32: CMD58/59, CMD48/49, CMD23, CMD20.
    let cmd_support = [(32, 20u8), (33, 23), (34, 48), (35, 58)]
        .into_iter()
        .filter(|&(b, _)| bit(&r, b))
        .map(|(_, cmd)| cmd)
        .collect();
    Ok(SdScr {
        spec_version: spec_version.to_owned(),
        bus_widths,
        cmd_support,
        sd_security: bits(&r, 54, 52) as u8,
        data_stat_after_erase: bits(&r, 55, 55) as u8,
        ex_security: bits(&r, 46, 43) as u8,
    })
}

/// AU_SIZE and UHS_AU_SIZE codes in bytes (0 = not defined). UHS_AU_SIZE
/// reserves codes 1 to 6 (spec 4.10.2.4), so those are never read as sizes.
const AU_BYTES: [u64; 16] = {
    const K: u64 = 1024;
    const M: u64 = 1024 * 1024;
    [
        0,
        16 * K,
        32 * K,
        64 * K,
        128 * K,
        256 * K,
        512 * K,
        M,
        2 * M,
        4 * M,
        8 * M,
        12 * M,
        16 * M,
        24 * M,
        32 * M,
        64 * M,
    ]
};

/// Decodes the 512-bit SD Status (128 hex digits).
///
/// Linux reads the 64 bytes of ACMD13 as sixteen big-endian words
/// (`mmc_read_ssr`: `raw_ssr[i] = be32_to_cpu(...)`, so `raw_ssr[0]` holds
/// bits 511:480) and the `ssr` attribute prints them in order with `%08x`.
/// The sysfs text is therefore the register most significant bit first,
/// the same layout as `cid` and `csd`. Bit positions below are those of the
/// SD spec's SD Status table; Linux uses the same ones (AU_SIZE at 428,
/// ERASE_SIZE at 408, ERASE_TIMEOUT at 402, ERASE_OFFSET at 400, DISCARD
/// support at 313).
///
/// Values the spec reserves are kept as 0: a reserved DAT_BUS_WIDTH gives
/// `bus_width` 0 and a reserved SPEED_CLASS gives `speed_class` 0.
/// SIZE_OF_PROTECTED_AREA is stored as read: it is a byte count on SDHC and
/// SDXC cards, while on SDSC cards it counts units of
/// MULT * BLOCK_LEN from the CSD.
pub fn decode_ssr(hex: &str) -> Result<SdSsr, DecodeError> {
    let r = parse_register(hex, 64)?;
    let bus_width = match bits(&r, 511, 510) {
        0 => 1,
        2 => 4,
        _ => 0,
    };
    let mut reserved = Vec::new();
    let speed_code = bits(&r, 447, 440);
    let speed_class = match speed_code {
        0 => 0,
        1 => 2,
        2 => 4,
        3 => 6,
        4 => 10,
        code => {
            reserved.push(format!("SPEED_CLASS 0x{code:02x}"));
            0
        }
    };
    let au_size_bytes = AU_BYTES[bits(&r, 431, 428) as usize & 0xf];
    let uhs_au_code = bits(&r, 395, 392);
    let uhs_au_size_bytes = if (1..=6).contains(&uhs_au_code) {
        reserved.push(format!("UHS_AU_SIZE 0x{uhs_au_code:x}"));
        0
    } else {
        AU_BYTES[uhs_au_code as usize & 0xf]
    };
    // Grades and classes the spec does not define stay as read (the verdict
    // says they were not checked) and are listed as reserved.
    let uhs_grade = bits(&r, 399, 396) as u8;
    if !matches!(uhs_grade, 0 | 1 | 3) {
        reserved.push(format!("UHS_SPEED_GRADE 0x{uhs_grade:x}"));
    }
    let video_class = bits(&r, 391, 384) as u8;
    if !matches!(video_class, 0 | 6 | 10 | 30 | 60 | 90) {
        reserved.push(format!("VIDEO_SPEED_CLASS 0x{video_class:02x}"));
    }
    let app_class = bits(&r, 339, 336) as u8;
    if app_class > 2 {
        reserved.push(format!("APP_PERF_CLASS 0x{app_class:x}"));
    }
    // PERFORMANCE_ENHANCE: bit 0 card-initiated maintenance, bit 1
    // host-initiated maintenance, bit 2 cache, bits 7:3 command queue
    // (0 = none, n = depth n + 1).
    let perf = bits(&r, 335, 328) as u8;
    let queue = perf >> 3;
    Ok(SdSsr {
        bus_width,
        secured_mode: bit(&r, 509),
        card_type: bits(&r, 495, 480) as u16,
        protected_area_bytes: bits(&r, 479, 448),
        speed_class,
        performance_move_mb_s: bits(&r, 439, 432) as u8,
        au_size_bytes,
        erase_size_au: bits(&r, 423, 408) as u16,
        erase_timeout_s: bits(&r, 407, 402) as u8,
        erase_offset_s: bits(&r, 401, 400) as u8,
        uhs_grade,
        uhs_au_size_bytes,
        video_class,
        vsc_au_size_mib: bits(&r, 377, 368) as u16,
        sus_addr: bits(&r, 367, 346) as u32,
        app_class,
        command_queue_depth: if queue == 0 { 0 } else { queue + 1 },
        cache: perf & 0b100 != 0,
        host_maintenance: perf & 0b010 != 0,
        card_maintenance: perf & 0b001 != 0,
        discard: bit(&r, 313),
        fule: bit(&r, 312),
        reserved,
    })
}

/// Decodes the OCR as sysfs prints it (`0x%08x`).
///
/// On Linux this is `card->ocr`, the result of `mmc_select_voltage`
/// (drivers/mmc/core/core.c): the card's voltage bits masked to the host's
/// and then to the two lowest in common, e.g. `0x00300000` (3.2-3.4 V). CCS,
/// S18A and the busy bit never survive that, so only the window is decoded;
/// whether a card is SDHC comes from its CSD.
pub fn decode_ocr(text: &str) -> Result<Ocr, DecodeError> {
    let r = parse_register(text, 4)?;
    let raw = r.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b));
    Ok(Ocr { raw, voltage_window: voltage_window(raw) })
}

/// The VDD window of OCR bits 15..=23 (2.7-2.8 V … 3.5-3.6 V), from the
/// lowest to the highest bit set, plus bit 7 (1.70-1.95 V) when set.
fn voltage_window(raw: u32) -> String {
    let mut parts = Vec::new();
    if raw >> 7 & 1 == 1 {
        parts.push("1.70-1.95 V".to_owned());
    }
    let set: Vec<u32> = (15..=23).filter(|b| raw >> b & 1 == 1).collect();
    if let (Some(first), Some(last)) = (set.first(), set.last()) {
        // In tenths of a volt: bit 15 is 2.7-2.8 V.
        let (lo, hi) = (27 + first - 15, 28 + last - 15);
        parts.push(format!("{}.{}-{}.{} V", lo / 10, lo % 10, hi / 10, hi % 10));
    }
    if parts.is_empty() { "none".to_owned() } else { parts.join(", ") }
}

/// The class label as PiBenchmarks builds it: `A<n> ` when the application
/// class is above 0, then `Class <c>`, then ` V<n>` and ` U<n>` when the
/// video class and UHS grade are above 0. E.g. `A2 Class 10 V30 U3`.
///
/// `None` when the SSR claims no class at all (every class field 0, as in an
/// all-zero SSR): the card reports no class, which is not "Class 0".
pub fn class_label(ssr: &SdSsr) -> Option<String> {
    if ssr.app_class == 0 && ssr.speed_class == 0 && ssr.video_class == 0 && ssr.uhs_grade == 0 {
        return None;
    }
    let mut label = String::new();
    if ssr.app_class > 0 {
        label.push_str(&format!("A{} ", ssr.app_class));
    }
    label.push_str(&format!("Class {}", ssr.speed_class));
    if ssr.video_class > 0 {
        label.push_str(&format!(" V{}", ssr.video_class));
    }
    if ssr.uhs_grade > 0 {
        label.push_str(&format!(" U{}", ssr.uhs_grade));
    }
    Some(label)
}

/// CSD 2.0 C_SIZE bounds of the spec: SDHC starts at 0x001010 (just over
/// 2 GB), SDXC ends at 0x3FFEFF (just under 2 TB).
pub(crate) const CSD2_MIN_C_SIZE: u64 = 0x00_1010;
pub(crate) const CSD2_MAX_C_SIZE: u64 = 0x3F_FEFF;
/// SDXC starts at C_SIZE 0x00FFFF (32 GB).
pub(crate) const SDXC_MIN_C_SIZE: u64 = 0x00_FFFF;

pub use crate::counterfeit::{
    CSD_INVALID, DATE_BEFORE_FORMAT, FUTURE_DATE, INVALID_DATE, OID_MID_MISMATCH, RULES, Rule, STRONG, UNASSIGNED_MID,
    WEAK, counterfeit_hints, placeholder_name,
};

#[cfg(test)]
mod tests {
    use super::*;

    const SYNCED_2026: storage_platform::clock::ClockReading =
        storage_platform::clock::ClockReading { year: 2026, month: 11, synchronized: Some(true) };

    /// Fixture 23, Kingston Canvas Go! Plus 64 GB.
    const KINGSTON_SSR: &str = concat!(
        "000000000800000004009000010f391e000800000002ff000300000000000000",
        "0000000000000000000000000000000000000000000000000000000000000000",
    );

    #[test]
    fn decodes_kingston_cid() {
        let cid = decode_cid("9f54495344363447614890060a017500\n").unwrap();
        assert_eq!(cid.manufacturer_id, 0x9f);
        // 0x9f is Kingston's, and no-name cards' too: marked contested.
        assert_eq!(cid.manufacturer.as_deref(), Some("Kingston, also no-name cards"));
        assert!(cid.manufacturer_contested);
        assert_eq!(cid.oem_id, "TI");
        assert_eq!(cid.oem_id_raw, 0x5449);
        assert_eq!(cid.product_name, "SD64G");
        assert_eq!(cid.product_revision, "6.1");
        assert_eq!(cid.serial, Some(1217398282));
        assert_eq!(cid.manufactured, "2023-05");
    }

    #[test]
    fn cid_with_reserved_bits_set() {
        // Bits 23:20 are reserved; some cards set them (fixture 01: 0xa).
        let cid = decode_cid("ad4c5355534430302035841e2ea19727").unwrap();
        assert_eq!(cid.manufactured, "2025-07");
        assert_eq!(cid.oem_id, "LS");
    }

    #[test]
    fn cid_unprintable_fields() {
        let cid = decode_cid("00010241420053000000000000000000").unwrap();
        assert_eq!(cid.oem_id, "0x0102");
        assert_eq!(cid.product_name, "AB?S");
        assert_eq!(cid.manufactured, "2000-00");
    }

    /// QEMU's emulated card (hw/sd/sd.c, `sd_set_cid`): MID 0xaa, OID "XY",
    /// PNM "QEMU!", PRV 0x01, PSN 0xdeadbeef, MDT 2006-02. Behind sdhci the
    /// CRC byte reads as 00.
    #[test]
    fn decodes_qemu_card() {
        let cid = decode_cid("aa585951454d552101deadbeef006200").unwrap();
        assert_eq!(cid.manufacturer_id, 0xaa);
        assert_eq!(cid.manufacturer, None);
        assert_eq!(cid.oem_id, "XY");
        assert_eq!(cid.product_name, "QEMU!");
        assert_eq!(cid.product_revision, "0.1");
        assert_eq!(cid.serial, Some(0xdeadbeef));
        assert_eq!(cid.manufactured, "2006-02");
        // `sd_set_csd` for a 64 MiB image: CSD 1.0, C_SIZE 255, C_SIZE_MULT 7,
        // READ_BL_LEN 9, TRAN_SPEED 0x5a.
        let csd = decode_csd("0026005a5f59e03fffffdfff92600000").unwrap();
        assert_eq!(csd.csd_version, 1);
        assert_eq!(csd.capacity_bytes, 64 << 20);
        assert_eq!(csd.max_transfer_rate_bps, 50_000_000);
        assert_eq!(csd.read_block_len, 512);
        assert!(counterfeit_hints(Some(&cid), Some(&csd), &SYNCED_2026).is_empty());
    }

    #[test]
    fn decodes_csd_v2() {
        let csd = decode_csd("400e00325b590001cf9f7f800a400000").unwrap();
        assert_eq!(csd.csd_version, 2);
        assert_eq!(csd.capacity_bytes, 62226694144);
        assert_eq!(csd.max_transfer_rate_bps, 25_000_000);
        assert_eq!(csd.ccc, 0x5b5);
        assert_eq!(csd.command_classes, [0, 2, 4, 5, 7, 8, 10]);
        assert_eq!(csd.read_block_len, 512);
        assert!(csd.erase_block_enable);
        assert!(!csd.perm_write_protect && !csd.tmp_write_protect);
    }

    #[test]
    fn decodes_csd_v1() {
        let csd = decode_csd("002600325f5983ae7efbcfff924040d6").unwrap();
        assert_eq!(csd.csd_version, 1);
        assert_eq!(csd.capacity_bytes, 988282880);
        let csd = decode_csd("002600325f5a83aefefbcfff928040de").unwrap();
        assert_eq!(csd.capacity_bytes, 1977614336);
        assert_eq!(csd.read_block_len, 1024);
    }

    #[test]
    fn decodes_csd_v3_and_rejects_reserved() {
        // C_SIZE 0x0400000 (28 bits at 75:48) = 2 TiB + 512 KiB.
        let csd = decode_csd("800e00325b59004000007f800a400000").unwrap();
        assert_eq!(csd.csd_version, 3);
        assert_eq!(csd.capacity_bytes, (0x40_0000 + 1) * 512 * 1024);
        let e = decode_csd("c00e00325b590001cf9f7f800a400000").unwrap_err();
        assert_eq!(e.to_string(), "CSD CSD_STRUCTURE = 3 is reserved or invalid");
    }

    #[test]
    fn tran_speed_table() {
        assert_eq!(tran_speed_bps(0x32), 25_000_000);
        assert_eq!(tran_speed_bps(0x5a), 50_000_000);
        assert_eq!(tran_speed_bps(0x0b), 100_000_000);
        assert_eq!(tran_speed_bps(0x2b), 200_000_000);
        assert_eq!(tran_speed_bps(0x48), 400_000);
        assert_eq!(tran_speed_bps(0x02), 0);
        assert_eq!(tran_speed_bps(0x36), 0);
    }

    #[test]
    fn decodes_scr_versions() {
        let scr = decode_scr("0205848701006432").unwrap();
        assert_eq!(scr.spec_version, "6.xx");
        assert_eq!(scr.bus_widths, [1, 4]);
        assert_eq!(scr.cmd_support, [20, 23, 48]);
        assert_eq!(scr.sd_security, 0);
        let cases = [
            ("0225000000000000", "2.00"),
            ("0235800000000000", "3.0x"),
            ("02b5804300000000", "5.xx"),
            ("0245848700000000", "6.xx"),
            ("0235840000000000", "4.xx"),
            ("023580c000000000", "7.xx"),
            ("0235810000000000", "8.xx"),
            ("0235814000000000", "9.xx"),
            ("0115000000000000", "1.10"),
            ("0005000000000000", "1.0x"),
        ];
        for (hex, version) in cases {
            assert_eq!(decode_scr(hex).unwrap().spec_version, version, "{hex}");
        }
        let scr = decode_scr("02b5800f00000000").unwrap();
        assert_eq!(scr.cmd_support, [20, 23, 48, 58]);
        assert_eq!(scr.sd_security, 3);
        assert_eq!(scr.data_stat_after_erase, 1);
    }

    #[test]
    fn reserved_scr_versions_are_kept() {
        // SCR_STRUCTURE 1: Linux refuses the card, and so does the decoder.
        assert!(decode_scr("1235800000000000").is_err());
        // SD_SPEC 3 (reserved) and SD_SPECX 6 (no version yet): kept, as
        // Linux keeps them, with the other fields decoded.
        let scr = decode_scr("0335800000000000").unwrap();
        assert_eq!(scr.spec_version, "unknown");
        assert_eq!(scr.bus_widths, [1, 4]);
        let scr = decode_scr("0235818300000000").unwrap();
        assert_eq!(scr.spec_version, "unknown");
        assert_eq!(scr.cmd_support, [20, 23]);
    }

    #[test]
    fn capacity_type_from_the_csd() {
        assert_eq!(decode_csd("002600325f5983ae7efbcfff924040d6").unwrap().capacity_type, "SDSC");
        assert_eq!(decode_csd("400e00325b5900003a0d7f800a40008d").unwrap().capacity_type, "SDHC");
        assert_eq!(decode_csd("400e00325b590001cf9f7f800a400000").unwrap().capacity_type, "SDXC");
        assert_eq!(decode_csd("800e00325b59004000007f800a400000").unwrap().capacity_type, "SDUC");
    }

    #[test]
    fn decodes_kingston_ssr() {
        let ssr = decode_ssr(KINGSTON_SSR).unwrap();
        assert_eq!(ssr.bus_width, 1);
        assert!(!ssr.secured_mode);
        assert_eq!(ssr.card_type, 0);
        assert_eq!(ssr.protected_area_bytes, 0x0800_0000);
        assert_eq!(ssr.speed_class, 10);
        assert_eq!(ssr.performance_move_mb_s, 0);
        assert_eq!(ssr.au_size_bytes, 4 << 20);
        assert_eq!(ssr.erase_size_au, 1);
        assert_eq!(ssr.erase_timeout_s, 3);
        assert_eq!(ssr.erase_offset_s, 3);
        assert_eq!(ssr.uhs_grade, 3);
        assert_eq!(ssr.uhs_au_size_bytes, 4 << 20);
        assert_eq!(ssr.video_class, 30);
        assert_eq!(ssr.vsc_au_size_mib, 8);
        assert_eq!(ssr.sus_addr, 0);
        assert_eq!(ssr.app_class, 2);
        assert_eq!(ssr.command_queue_depth, 32);
        assert!(ssr.cache && ssr.host_maintenance && ssr.card_maintenance);
        assert!(ssr.discard && ssr.fule);
        assert_eq!(class_label(&ssr).as_deref(), Some("A2 Class 10 V30 U3"));
        assert!(ssr.reserved.is_empty());
    }

    #[test]
    fn ssr_edge_values() {
        let mut hex = String::from("8000");
        hex.push_str(&"0".repeat(124));
        let ssr = decode_ssr(&hex).unwrap();
        assert_eq!(ssr.bus_width, 4);
        assert_eq!(ssr.command_queue_depth, 0);
        // All zero: the card reports no class, which is not "Class 0".
        assert_eq!(class_label(&ssr), None);
        // SPEED_CLASS 0x05 and UHS_AU_SIZE 0x3 are reserved: shown as such.
        let mut bytes = [0u8; 64];
        bytes[8] = 0x05; // SPEED_CLASS, bits 447:440
        bytes[14] = 0x13; // UHS_SPEED_GRADE 1, UHS_AU_SIZE 3 (bits 399:392)
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let ssr = decode_ssr(&hex).unwrap();
        assert_eq!((ssr.speed_class, ssr.uhs_grade, ssr.uhs_au_size_bytes), (0, 1, 0));
        assert_eq!(ssr.reserved, ["SPEED_CLASS 0x05", "UHS_AU_SIZE 0x3"]);
        assert_eq!(class_label(&ssr).as_deref(), Some("Class 0 U1"));
        let ssr = decode_ssr(&format!("4000{}", "0".repeat(124))).unwrap();
        assert_eq!(ssr.bus_width, 0);
    }

    #[test]
    fn class_labels() {
        let ssr = SdSsr { speed_class: 10, uhs_grade: 1, ..SdSsr::default() };
        assert_eq!(class_label(&ssr).as_deref(), Some("Class 10 U1"));
        let ssr = SdSsr { speed_class: 10, app_class: 1, video_class: 10, ..SdSsr::default() };
        assert_eq!(class_label(&ssr).as_deref(), Some("A1 Class 10 V10"));
    }

    #[test]
    fn decodes_ocr() {
        // What Linux shows for a real card: the two selected voltage bits.
        let ocr = decode_ocr("0x00300000\n").unwrap();
        assert_eq!(ocr, Ocr { raw: 0x0030_0000, voltage_window: "3.2-3.4 V".into() });
        assert_eq!(decode_ocr("0x00200000").unwrap().voltage_window, "3.3-3.4 V");
        assert_eq!(decode_ocr("0xc1ff8000").unwrap().voltage_window, "2.7-3.6 V");
        assert_eq!(decode_ocr("0x00000080").unwrap().voltage_window, "1.70-1.95 V");
        assert_eq!(decode_ocr("0x00000000").unwrap().voltage_window, "none");
        assert!(decode_ocr("0x4030000").is_err());
    }
}
