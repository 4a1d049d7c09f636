//! ATA SMART through SCSI: the ATA PASS-THROUGH command blocks (SAT), and
//! pure decoders for what comes back: IDENTIFY DEVICE, the SMART attribute
//! and threshold tables, and the sense data that carries SMART RETURN
//! STATUS.
//!
//! Sources:
//! - T10 SAT-3, "ATA PASS-THROUGH (16)" and "(12)" command layouts, and the
//!   "ATA Status Return sense data descriptor" (code 09h); Linux
//!   `drivers/ata/libata-scsi.c` (`ata_scsi_set_passthru_sense_fields`)
//!   fills the descriptor and the fixed format the same way.
//! - T13 ATA/ATAPI-8 ACS, SMART feature set: SMART READ DATA (B0h/D0h),
//!   READ THRESHOLDS (D1h), RETURN STATUS (DAh), each with the key
//!   4Fh/C2h in LBA mid/high; IDENTIFY DEVICE words 82/85 bit 0 (SMART
//!   supported / enabled, valid when words 83/87 read 01b in bits 15:14);
//!   the ATA strings, two characters a word, first character in the high
//!   byte: serial number (words 10-19), firmware revision (23-26), model
//!   (27-46); word 255, when its low byte is the signature A5h, carries a
//!   checksum that makes the 512 bytes sum to 0 mod 256. The strings are
//!   made printable as smartmontools' `ata_format_id_string` and
//!   `format_char_array` do: swap the bytes, stop at a NUL, trim spaces at
//!   both ends, `?` for any other byte outside ' '..='~'.
//! - The 512-byte SMART data structure: revision in bytes 0-1, 30
//!   12-byte attribute entries from byte 2 (id, flags, value, worst, six raw
//!   bytes, reserved), checksum in byte 511 (all bytes sum to 0 mod 256);
//!   thresholds have the same entries (id, threshold). Attribute names are
//!   smartmontools' default names for the IDs whose meaning most drives
//!   share; vendor-specific IDs are left unnamed.

use storage_scoring::health::{AtaAttribute, Health, HealthSource, HealthStatus};

/// Bytes of IDENTIFY DEVICE, SMART data and SMART thresholds.
pub const SECTOR: usize = 512;

/// The ATA registers a command is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AtaCommand {
    pub feature: u8,
    pub count: u8,
    pub lba_low: u8,
    pub lba_mid: u8,
    pub lba_high: u8,
    pub command: u8,
    /// Reads 512 bytes (PIO data-in); otherwise no data.
    pub reads_sector: bool,
}

/// The key SMART commands carry in LBA mid/high.
const SMART_MID: u8 = 0x4f;
const SMART_HIGH: u8 = 0xc2;

const fn smart(feature: u8, reads_sector: bool) -> AtaCommand {
    AtaCommand {
        feature,
        count: if reads_sector { 1 } else { 0 },
        lba_low: 0,
        lba_mid: SMART_MID,
        lba_high: SMART_HIGH,
        command: 0xb0,
        reads_sector,
    }
}

pub const IDENTIFY_DEVICE: AtaCommand =
    AtaCommand { feature: 0, count: 1, lba_low: 0, lba_mid: 0, lba_high: 0, command: 0xec, reads_sector: true };
pub const SMART_READ_DATA: AtaCommand = smart(0xd0, true);
pub const SMART_READ_THRESHOLDS: AtaCommand = smart(0xd1, true);
pub const SMART_RETURN_STATUS: AtaCommand = smart(0xda, false);

/// SAT protocol field: 3 non-data, 4 PIO data-in.
fn protocol(cmd: &AtaCommand) -> u8 {
    if cmd.reads_sector { 4 } else { 3 }
}

/// SAT byte 2: for a data-in command, T_DIR (from the device), BYTE_BLOCK
/// (count is in blocks) and T_LENGTH = 2 (the length is in COUNT); for a
/// non-data command, CK_COND so that the registers come back in the sense.
fn flags(cmd: &AtaCommand) -> u8 {
    if cmd.reads_sector { 0x0e } else { 0x20 }
}

/// ATA PASS-THROUGH (16), opcode 85h.
pub fn pass_through_16(cmd: &AtaCommand) -> [u8; 16] {
    let mut cdb = [0u8; 16];
    cdb[0] = 0x85;
    cdb[1] = protocol(cmd) << 1;
    cdb[2] = flags(cmd);
    cdb[4] = cmd.feature;
    cdb[6] = cmd.count;
    cdb[8] = cmd.lba_low;
    cdb[10] = cmd.lba_mid;
    cdb[12] = cmd.lba_high;
    cdb[14] = cmd.command;
    cdb
}

/// ATA PASS-THROUGH (12), opcode A1h, for bridges that know only this one.
pub fn pass_through_12(cmd: &AtaCommand) -> [u8; 12] {
    let mut cdb = [0u8; 12];
    cdb[0] = 0xa1;
    cdb[1] = protocol(cmd) << 1;
    cdb[2] = flags(cmd);
    cdb[3] = cmd.feature;
    cdb[4] = cmd.count;
    cdb[5] = cmd.lba_low;
    cdb[6] = cmd.lba_mid;
    cdb[7] = cmd.lba_high;
    cdb[9] = cmd.command;
    cdb
}

/// What IDENTIFY DEVICE says about SMART and the drive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IdentifyInfo {
    /// `None` when the words that say are not marked valid.
    pub smart_supported: Option<bool>,
    pub smart_enabled: Option<bool>,
    /// Words 27-46; `None` when blank.
    pub model: Option<String>,
    /// Words 10-19; `None` when blank.
    pub serial: Option<String>,
    /// Words 23-26; `None` when blank.
    pub firmware: Option<String>,
    /// Word 255's checksum: `None` when the word carries no signature (A5h),
    /// which ATA allows; `Some(false)` when the 512 bytes do not sum to 0.
    pub checksum_ok: Option<bool>,
}

impl IdentifyInfo {
    /// A drive's own name to show: a model, from a block whose checksum,
    /// where it has one, holds.
    pub fn names_the_drive(&self) -> bool {
        self.model.is_some() && self.checksum_ok != Some(false)
    }
}

fn word(b: &[u8], n: usize) -> u16 {
    u16::from_le_bytes([b[2 * n], b[2 * n + 1]])
}

/// Decodes IDENTIFY DEVICE; `None` for a short buffer or one that is not
/// an ATA device's (word 0 bit 15 set: ATAPI; all zeros or all ones: no
/// answer at all).
pub fn decode_identify(b: &[u8]) -> Option<IdentifyInfo> {
    if b.len() < SECTOR || b[..SECTOR].iter().all(|&x| x == 0) || b[..SECTOR].iter().all(|&x| x == 0xff) {
        return None;
    }
    if word(b, 0) & 0x8000 != 0 {
        return None;
    }
    let valid = |w: u16| w & 0xc000 == 0x4000;
    let supported = valid(word(b, 83)).then(|| word(b, 82) & 1 == 1);
    let enabled = valid(word(b, 87)).then(|| word(b, 85) & 1 == 1);
    let checksum_ok = (word(b, 255) & 0xff == 0xa5).then(|| checksum_ok(b));
    Some(IdentifyInfo {
        smart_supported: supported,
        smart_enabled: enabled,
        model: ata_string(b, 27, 20),
        serial: ata_string(b, 10, 10),
        firmware: ata_string(b, 23, 4),
        checksum_ok,
    })
}

/// An ATA string of `words` words from word `first`: two characters a word,
/// the first in the high byte; cut at a NUL, trimmed of spaces, any byte
/// outside printable ASCII shown as `?` (smartctl's rendering). `None` when
/// nothing is left.
pub fn ata_string(b: &[u8], first: usize, words: usize) -> Option<String> {
    if b.len() < 2 * (first + words) {
        return None;
    }
    let swapped = (first..first + words).flat_map(|n| {
        let [lo, hi] = word(b, n).to_le_bytes();
        [hi, lo]
    });
    let text: String =
        swapped.take_while(|&c| c != 0).map(|c| if (b' '..=b'~').contains(&c) { c as char } else { '?' }).collect();
    let text = text.trim_matches(' ');
    (!text.is_empty()).then(|| text.to_owned())
}

/// Why a SMART data structure was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmartError {
    #[error("the SMART data is {got} bytes, not 512")]
    Short { got: usize },
    #[error("the SMART data is all {0:#04x}: the drive sent no table")]
    Blank(u8),
}

/// True when the 512 bytes sum to 0 modulo 256, as the drive must make them.
pub fn checksum_ok(b: &[u8]) -> bool {
    b.len() >= SECTOR && b[..SECTOR].iter().fold(0u8, |sum, &x| sum.wrapping_add(x)) == 0
}

/// Decodes the attribute table and, when given, the thresholds. Entries with
/// ID 0 are empty; a repeated ID keeps its first entry.
pub fn decode_attributes(data: &[u8], thresholds: Option<&[u8]>) -> Result<Vec<AtaAttribute>, SmartError> {
    if data.len() < SECTOR {
        return Err(SmartError::Short { got: data.len() });
    }
    for blank in [0x00, 0xff] {
        if data[..SECTOR].iter().all(|&x| x == blank) {
            return Err(SmartError::Blank(blank));
        }
    }
    let thresholds = thresholds.filter(|t| t.len() >= SECTOR);
    let mut out: Vec<AtaAttribute> = Vec::new();
    for entry in data[2..2 + 30 * 12].chunks_exact(12) {
        let id = entry[0];
        if id == 0 || out.iter().any(|a| a.id == id) {
            continue;
        }
        let flags = u16::from_le_bytes([entry[1], entry[2]]);
        let mut raw = [0u8; 8];
        raw[..6].copy_from_slice(&entry[5..11]);
        let threshold = thresholds.and_then(|t| t[2..2 + 30 * 12].chunks_exact(12).find(|e| e[0] == id).map(|e| e[1]));
        let (value, worst) = (entry[3], entry[4]);
        // Threshold 0 means "never fails"; 0xFE and above are reserved.
        let live = threshold.filter(|&t| t > 0 && t < 0xfe);
        out.push(AtaAttribute {
            id,
            name: attribute_name(id).map(str::to_owned),
            value,
            worst,
            threshold,
            raw: u64::from_le_bytes(raw),
            prefailure: flags & 1 == 1,
            failing_now: live.is_some_and(|t| value <= t),
            failed_in_past: live.is_some_and(|t| worst <= t),
        });
    }
    Ok(out)
}

/// smartmontools' default names for IDs whose meaning most drives share.
pub fn attribute_name(id: u8) -> Option<&'static str> {
    Some(match id {
        1 => "Raw_Read_Error_Rate",
        2 => "Throughput_Performance",
        3 => "Spin_Up_Time",
        4 => "Start_Stop_Count",
        5 => "Reallocated_Sector_Ct",
        7 => "Seek_Error_Rate",
        8 => "Seek_Time_Performance",
        9 => "Power_On_Hours",
        10 => "Spin_Retry_Count",
        11 => "Calibration_Retry_Count",
        12 => "Power_Cycle_Count",
        183 => "Runtime_Bad_Block",
        184 => "End-to-End_Error",
        187 => "Reported_Uncorrect",
        188 => "Command_Timeout",
        189 => "High_Fly_Writes",
        190 => "Airflow_Temperature_Cel",
        191 => "G-Sense_Error_Rate",
        192 => "Power-Off_Retract_Count",
        193 => "Load_Cycle_Count",
        194 => "Temperature_Celsius",
        195 => "Hardware_ECC_Recovered",
        196 => "Reallocated_Event_Count",
        197 => "Current_Pending_Sector",
        198 => "Offline_Uncorrectable",
        199 => "UDMA_CRC_Error_Count",
        200 => "Multi_Zone_Error_Rate",
        240 => "Head_Flying_Hours",
        241 => "Total_LBAs_Written",
        242 => "Total_LBAs_Read",
        _ => return None,
    })
}

/// The ATA registers returned in sense data (CK_COND), as SAT lays them out:
/// the ATA Status Return descriptor (code 09h) of descriptor-format sense,
/// or the information and command-specific fields of fixed-format sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registers {
    pub error: u8,
    pub status: u8,
    pub lba_mid: u8,
    pub lba_high: u8,
}

pub fn registers_from_sense(sense: &[u8]) -> Option<Registers> {
    let code = sense.first()? & 0x7f;
    match code {
        0x72 | 0x73 => {
            let total = 8usize.saturating_add(usize::from(*sense.get(7)?)).min(sense.len());
            let mut at = 8;
            while at + 2 <= total {
                let (kind, len) = (sense[at], usize::from(sense[at + 1]));
                let desc = sense.get(at..(at + 2 + len).min(total))?;
                if kind == 0x09 && desc.len() >= 14 {
                    return Some(Registers { error: desc[3], status: desc[13], lba_mid: desc[9], lba_high: desc[11] });
                }
                at += 2 + len;
            }
            None
        }
        0x70 | 0x71 if sense.len() >= 12 => {
            Some(Registers { error: sense[3], status: sense[4], lba_mid: sense[10], lba_high: sense[11] })
        }
        _ => None,
    }
}

/// SMART RETURN STATUS: 4Fh/C2h in LBA mid/high is "no threshold exceeded",
/// F4h/2Ch is "threshold exceeded"; anything else says nothing.
pub fn return_status(regs: &Registers) -> Option<bool> {
    match (regs.lba_mid, regs.lba_high) {
        (0x4f, 0xc2) => Some(true),
        (0xf4, 0x2c) => Some(false),
        _ => None,
    }
}

/// The report's `health` from the attributes and the overall status.
pub fn health(attributes: Vec<AtaAttribute>, passed: Option<bool>, sat: bool, checksum_ok: bool) -> Health {
    let raw48 = |id: u8| attributes.iter().find(|a| a.id == id).map(|a| a.raw & 0xffff_ffff_ffff);
    let low32 = |id: u8| attributes.iter().find(|a| a.id == id).map(|a| a.raw & 0xffff_ffff);
    // 194 first, as smartctl reads it; the current value is the low raw byte.
    let temperature = [194u8, 190]
        .iter()
        .find_map(|&id| attributes.iter().find(|a| a.id == id))
        .map(|a| (a.raw & 0xff) as i32)
        .filter(|&t| t > 0 && t < 128);
    let mut h = Health {
        source: Some(if sat { HealthSource::AtaSmartSat } else { HealthSource::AtaSmart }),
        smart_passed: passed,
        temperature_c: temperature,
        // Most drives count hours in the low 32 bits; some keep minutes or
        // milliseconds in the upper bytes, which are left out here.
        power_on_hours: low32(9),
        power_cycles: raw48(12),
        reallocated_sectors: raw48(5),
        pending_sectors: raw48(197),
        uncorrectable_sectors: raw48(198),
        interface_crc_errors: raw48(199),
        ..Health::default()
    };
    let mut notes = Vec::new();
    if !checksum_ok {
        notes.push("the SMART data's checksum is wrong: the table may be damaged in transit".to_owned());
    }
    if passed.is_none() {
        notes.push(
            "the drive's overall self-assessment (SMART RETURN STATUS) did not come back; the attributes are shown"
                .to_owned(),
        );
    }
    let mut status = HealthStatus::Ok;
    if passed == Some(false) {
        notes.push("the drive's own self-assessment is FAILED: copy off what matters and replace it".to_owned());
        status = HealthStatus::Failing;
    }
    for a in attributes.iter().filter(|a| a.failing_now) {
        let name = a.name.as_deref().unwrap_or("vendor-specific");
        notes.push(format!(
            "attribute {} ({name}) is at its failure threshold now ({} ≤ {})",
            a.id,
            a.value,
            a.threshold.unwrap_or(0)
        ));
        status = status.max(if a.prefailure { HealthStatus::Failing } else { HealthStatus::Warn });
    }
    for a in attributes.iter().filter(|a| a.failed_in_past && !a.failing_now) {
        notes.push(format!("attribute {} reached its failure threshold in the past (worst {})", a.id, a.worst));
        status = status.max(HealthStatus::Warn);
    }
    for (count, what) in [
        (h.reallocated_sectors, "reallocated sectors"),
        (h.pending_sectors, "sectors pending reallocation"),
        (h.uncorrectable_sectors, "uncorrectable sectors"),
    ] {
        if let Some(n) = count.filter(|&n| n > 0) {
            notes.push(format!("{n} {what}: the media is wearing; keep backups"));
            status = status.max(HealthStatus::Warn);
        }
    }
    if let Some(n) = h.interface_crc_errors.filter(|&n| n > 0) {
        notes.push(format!(
            "{n} interface CRC errors: a cable or bridge problem, not the media; reseat or replace the cable"
        ));
    }
    h.status = Some(status);
    h.attributes = attributes;
    h.notes = notes;
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_checksum(mut b: Vec<u8>) -> Vec<u8> {
        let sum = b[..511].iter().fold(0u8, |s, &x| s.wrapping_add(x));
        b[511] = 0u8.wrapping_sub(sum);
        b
    }

    /// QEMU's ide-hd table (hw/ide/core.c `smart_attributes`): id, flags,
    /// value, worst, raw; thresholds beside it.
    fn qemu_tables() -> (Vec<u8>, Vec<u8>) {
        let rows: [(u8, u8, u8, u8, [u8; 6], u8); 7] = [
            (0x01, 0x03, 0x64, 0x64, [0; 6], 0x06),
            (0x03, 0x03, 0x64, 0x64, [0x10, 0, 0, 0, 0, 0], 0),
            (0x04, 0x02, 0x64, 0x64, [0x64, 0, 0, 0, 0, 0], 0x14),
            (0x05, 0x03, 0x64, 0x64, [0; 6], 0x24),
            (0x09, 0x03, 0x64, 0x64, [0x01, 0, 0, 0, 0, 0], 0),
            (0x0c, 0x03, 0x64, 0x64, [0; 6], 0),
            (190, 0x03, 0x45, 0x45, [0x1f, 0x00, 0x1f, 0x1f, 0, 0], 0x32),
        ];
        let (mut data, mut thresh) = (vec![0u8; 512], vec![0u8; 512]);
        data[0] = 1;
        thresh[0] = 1;
        for (n, (id, flags, value, worst, raw, t)) in rows.iter().enumerate() {
            let at = 2 + 12 * n;
            data[at] = *id;
            data[at + 1] = *flags;
            data[at + 3] = *value;
            data[at + 4] = *worst;
            data[at + 5..at + 11].copy_from_slice(raw);
            thresh[at] = *id;
            thresh[at + 1] = *t;
        }
        (with_checksum(data), with_checksum(thresh))
    }

    #[test]
    fn builds_sat_command_blocks() {
        assert_eq!(
            pass_through_16(&SMART_READ_DATA),
            [0x85, 0x08, 0x0e, 0, 0xd0, 0, 1, 0, 0, 0, 0x4f, 0, 0xc2, 0, 0xb0, 0]
        );
        assert_eq!(pass_through_16(&SMART_RETURN_STATUS)[..3], [0x85, 0x06, 0x20]);
        assert_eq!(pass_through_12(&IDENTIFY_DEVICE), [0xa1, 0x08, 0x0e, 0, 1, 0, 0, 0, 0, 0xec, 0, 0]);
    }

    #[test]
    fn decodes_qemus_table() {
        let (data, thresh) = qemu_tables();
        assert!(checksum_ok(&data) && checksum_ok(&thresh));
        let attrs = decode_attributes(&data, Some(&thresh)).expect("decodes");
        assert_eq!(attrs.iter().map(|a| a.id).collect::<Vec<_>>(), [1, 3, 4, 5, 9, 12, 190]);
        let h = health(attrs, Some(true), false, true);
        assert_eq!(h.source, Some(HealthSource::AtaSmart));
        assert_eq!(h.temperature_c, Some(31));
        assert_eq!(h.power_on_hours, Some(1));
        assert_eq!(h.reallocated_sectors, Some(0));
        assert_eq!(h.status, Some(HealthStatus::Ok));
        let start_stop = h.attributes.iter().find(|a| a.id == 4).expect("4");
        assert_eq!((start_stop.raw, start_stop.threshold, start_stop.prefailure), (100, Some(20), false));
    }

    #[test]
    fn a_failing_prefail_attribute_fails_the_drive() {
        let (mut data, thresh) = qemu_tables();
        data[2 + 12 * 3 + 3] = 0x20; // Reallocated_Sector_Ct value 32 ≤ threshold 36
        let data = with_checksum(data);
        let h = health(decode_attributes(&data, Some(&thresh)).expect("decodes"), Some(true), true, true);
        assert_eq!(h.source, Some(HealthSource::AtaSmartSat));
        assert_eq!(h.status, Some(HealthStatus::Failing));
        assert!(h.attributes.iter().any(|a| a.id == 5 && a.failing_now && !a.failed_in_past));
    }

    #[test]
    fn reads_return_status_from_both_sense_formats() {
        let mut desc = vec![0x72, 0x01, 0x00, 0x1d, 0, 0, 0, 14];
        desc.extend([0x09, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0xf4, 0, 0x2c, 0, 0x50]);
        let regs = registers_from_sense(&desc).expect("descriptor");
        assert_eq!(return_status(&regs), Some(false));
        let fixed = [0x70, 0, 0x01, 0, 0x50, 0, 0, 10, 0, 0, 0x4f, 0xc2, 0, 0, 0, 0, 0, 0];
        assert_eq!(registers_from_sense(&fixed).and_then(|r| return_status(&r)), Some(true));
        assert_eq!(registers_from_sense(&[]), None);
        assert_eq!(registers_from_sense(&[0x72, 0, 0, 0, 0, 0, 0, 200, 0x09, 0xff]), None);
        assert_eq!(registers_from_sense(&[0x72, 0, 0, 0, 0, 0, 0, 4, 0x01, 0x02, 0, 0]), None);
    }

    #[test]
    fn identify_reads_smart_bits_and_model() {
        let mut b = vec![0u8; 512];
        b[2 * 82] = 1;
        b[2 * 83 + 1] = 0x40;
        b[2 * 85] = 1;
        b[2 * 87 + 1] = 0x40;
        for (i, pair) in b"QEMU HARDDISK                           ".chunks(2).enumerate() {
            b[2 * (27 + i)] = pair[1];
            b[2 * (27 + i) + 1] = pair[0];
        }
        let id = decode_identify(&b).expect("ata");
        assert_eq!((id.smart_supported, id.smart_enabled), (Some(true), Some(true)));
        assert_eq!(id.model.as_deref(), Some("QEMU HARDDISK"));
        b[2 * 83 + 1] = 0xff;
        assert_eq!(decode_identify(&b).expect("ata").smart_supported, None);
        assert_eq!(decode_identify(&[0u8; 512]), None);
        assert_eq!(decode_identify(&[0u8; 10]), None);
    }

    /// An IDENTIFY DEVICE block with `text` put in the words from `first`
    /// as a drive does: two characters a word, the first in the high byte.
    fn put_string(b: &mut [u8], first: usize, text: &[u8]) {
        for (i, pair) in text.chunks(2).enumerate() {
            b[2 * (first + i) + 1] = pair[0];
            b[2 * (first + i)] = pair.get(1).copied().unwrap_or(b' ');
        }
    }

    /// A Crucial BX500 as smartctl shows it behind a SAT bridge: `Device
    /// Model: CT240BX500SSD1`, the whole of what the bridge's INQUIRY cut
    /// into `CT240BX5` and `00SSD1`.
    fn bx500() -> Vec<u8> {
        let mut b = vec![0u8; 512];
        b[0] = 0x40; // word 0: fixed, an ATA device (bit 15 clear)
        put_string(&mut b, 10, b"        2025E8A1B2C3");
        put_string(&mut b, 23, b"M6CR061 ");
        put_string(&mut b, 27, format!("{:<40}", "CT240BX500SSD1").as_bytes());
        b
    }

    #[test]
    fn identify_reads_serial_firmware_and_model_as_smartctl_does() {
        let b = bx500();
        let id = decode_identify(&b).expect("ata");
        assert_eq!(id.model.as_deref(), Some("CT240BX500SSD1"));
        assert_eq!(id.serial.as_deref(), Some("2025E8A1B2C3"), "leading spaces trimmed");
        assert_eq!(id.firmware.as_deref(), Some("M6CR061"));
        assert_eq!(id.checksum_ok, None, "no A5h signature: no checksum to hold");
        assert!(id.names_the_drive());
        // The bytes are swapped within each word, not the whole field.
        assert_eq!(&b[2 * 27..2 * 27 + 4], b"TC42");
    }

    #[test]
    fn identify_checks_word_255_when_signed() {
        let mut b = bx500();
        b[510] = 0xa5;
        let b = with_checksum(b);
        assert_eq!(decode_identify(&b).expect("ata").checksum_ok, Some(true));
        let mut bad = b.clone();
        bad[2 * 27] ^= 0x01;
        let id = decode_identify(&bad).expect("still ATA");
        assert_eq!(id.checksum_ok, Some(false));
        assert!(!id.names_the_drive(), "a block garbled in transit names no drive");
    }

    #[test]
    fn identify_strings_survive_hostile_bytes() {
        let mut b = bx500();
        // Non-ASCII (UTF-8 é), control characters (ESC, tab, DEL), a bell.
        put_string(&mut b, 27, b"\x1b[2J\xc3\xa9vil\tDRIVE\x7f\x07                       ");
        let id = decode_identify(&b).expect("ata");
        assert_eq!(id.model.as_deref(), Some("?[2J??vil?DRIVE??"));
        assert!(id.model.as_deref().is_some_and(|m| m.chars().all(|c| (' '..='~').contains(&c))));
        // All spaces: blank, not an empty name.
        put_string(&mut b, 10, &[b' '; 20]);
        assert_eq!(decode_identify(&b).expect("ata").serial, None);
        // A NUL ends the string, as in smartctl; all NULs are blank.
        put_string(&mut b, 23, b"AB\0CDEFG");
        assert_eq!(decode_identify(&b).expect("ata").firmware.as_deref(), Some("AB"));
        put_string(&mut b, 27, &[0u8; 40]);
        let id = decode_identify(&b).expect("ata");
        assert_eq!(id.model, None);
        assert!(!id.names_the_drive());
        // All ones is no answer; an ATAPI device is not an ATA one.
        assert_eq!(decode_identify(&[0xffu8; 512]), None);
        let mut atapi = bx500();
        atapi[1] = 0x85;
        assert_eq!(decode_identify(&atapi), None);
        assert_eq!(ata_string(&[b'A'; 10], 27, 20), None, "a short buffer is read as nothing");
    }

    #[test]
    fn garbage_tables_are_refused_or_decoded_without_panics() {
        assert_eq!(decode_attributes(&[0u8; 512], None), Err(SmartError::Blank(0)));
        assert_eq!(decode_attributes(&[1u8; 100], None), Err(SmartError::Short { got: 100 }));
        let attrs = decode_attributes(&[0x7fu8; 512], Some(&[0x7fu8; 512])).expect("decodes");
        assert_eq!(attrs.len(), 1, "30 entries with one repeated ID are one attribute");
        let h = health(attrs, None, false, false);
        assert!(h.notes.iter().any(|n| n.contains("checksum")));
    }
}
