//! NVMe health: the SMART / Health Information log page (Get Log Page,
//! log identifier 02h) and the temperature thresholds of the Identify
//! Controller data structure, decoded from the bytes the controller returns.
//!
//! Layouts: NVM Express Base Specification 2.0, "SMART / Health Information
//! Log Page" (unchanged in its first 224 bytes since NVMe 1.0) and "Identify
//! Controller Data Structure" (WCTEMP at bytes 267:266, CCTEMP at 269:268).
//! Every multi-byte field is little-endian; temperatures are in kelvins, 0
//! meaning "not reported"; data units are thousands of 512-byte units,
//! rounded up by the controller.

use storage_scoring::health::{CriticalWarning, Health, HealthSource, HealthStatus};

/// Bytes of the SMART / Health log page.
pub const SMART_LOG_LEN: usize = 512;
/// Bytes of the Identify Controller data structure.
pub const IDENTIFY_LEN: usize = 4096;
/// A data unit is 1000 units of 512 bytes.
const DATA_UNIT_BYTES: u128 = 512_000;

/// The log page, field by field.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SmartLog {
    pub critical_warning: u8,
    pub composite_temperature_k: u16,
    pub available_spare: u8,
    pub available_spare_threshold: u8,
    pub percentage_used: u8,
    pub data_units_read: u128,
    pub data_units_written: u128,
    pub host_read_commands: u128,
    pub host_write_commands: u128,
    pub controller_busy_minutes: u128,
    pub power_cycles: u128,
    pub power_on_hours: u128,
    pub unsafe_shutdowns: u128,
    pub media_errors: u128,
    pub error_log_entries: u128,
    pub warning_temperature_minutes: u32,
    pub critical_temperature_minutes: u32,
    /// Temperature sensors 1-8 in kelvins (0: not implemented).
    pub sensors_k: [u16; 8],
}

/// The controller's own temperature thresholds, in kelvins (0: not reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Thresholds {
    pub warning_k: u16,
    pub critical_k: u16,
}

/// Why a buffer is not a log page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    #[error("the SMART / Health log is {got} bytes, not {expected}")]
    Short { expected: usize, got: usize },
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u128_at(b: &[u8], at: usize) -> u128 {
    let mut le = [0u8; 16];
    le.copy_from_slice(&b[at..at + 16]);
    u128::from_le_bytes(le)
}

/// Decodes the 512-byte log page. Longer buffers are read up to 512 bytes.
pub fn decode_smart_log(b: &[u8]) -> Result<SmartLog, LogError> {
    if b.len() < SMART_LOG_LEN {
        return Err(LogError::Short { expected: SMART_LOG_LEN, got: b.len() });
    }
    let mut sensors_k = [0u16; 8];
    for (i, sensor) in sensors_k.iter_mut().enumerate() {
        *sensor = u16_at(b, 200 + 2 * i);
    }
    Ok(SmartLog {
        critical_warning: b[0],
        composite_temperature_k: u16_at(b, 1),
        available_spare: b[3],
        available_spare_threshold: b[4],
        percentage_used: b[5],
        data_units_read: u128_at(b, 32),
        data_units_written: u128_at(b, 48),
        host_read_commands: u128_at(b, 64),
        host_write_commands: u128_at(b, 80),
        controller_busy_minutes: u128_at(b, 96),
        power_cycles: u128_at(b, 112),
        power_on_hours: u128_at(b, 128),
        unsafe_shutdowns: u128_at(b, 144),
        media_errors: u128_at(b, 160),
        error_log_entries: u128_at(b, 176),
        warning_temperature_minutes: u32_at(b, 192),
        critical_temperature_minutes: u32_at(b, 196),
        sensors_k,
    })
}

/// WCTEMP and CCTEMP from Identify Controller; zeros when the buffer is short.
pub fn decode_thresholds(identify: &[u8]) -> Thresholds {
    if identify.len() < 270 {
        return Thresholds::default();
    }
    Thresholds { warning_k: u16_at(identify, 266), critical_k: u16_at(identify, 268) }
}

/// The warning bits that are set, in bit order; bits 6-7 are reserved.
pub fn critical_warnings(byte: u8) -> Vec<CriticalWarning> {
    const BITS: [CriticalWarning; 6] = [
        CriticalWarning::SpareBelowThreshold,
        CriticalWarning::Temperature,
        CriticalWarning::ReliabilityDegraded,
        CriticalWarning::ReadOnly,
        CriticalWarning::VolatileBackupFailed,
        CriticalWarning::PersistentMemoryReadOnly,
    ];
    let mut out: Vec<CriticalWarning> =
        BITS.iter().enumerate().filter(|(bit, _)| byte >> bit & 1 == 1).map(|(_, w)| *w).collect();
    if byte & 0xc0 != 0 {
        out.push(CriticalWarning::Unknown);
    }
    out
}

/// Kelvins to whole degrees Celsius; 0 K means "not reported".
fn celsius(kelvin: u16) -> Option<i32> {
    (kelvin != 0).then(|| i32::from(kelvin) - 273)
}

/// A 128-bit counter as u64; `None` (with a note) past u64's range.
fn counter(value: u128, what: &str, notes: &mut Vec<String>) -> Option<u64> {
    match u64::try_from(value) {
        Ok(v) => Some(v),
        Err(_) => {
            notes.push(format!("the {what} counter ({value}) is beyond what this report holds; it is left out"));
            None
        }
    }
}

fn bytes_of(units: u128, what: &str, notes: &mut Vec<String>) -> Option<u64> {
    match units.checked_mul(DATA_UNIT_BYTES).map(u64::try_from) {
        Some(Ok(bytes)) => Some(bytes),
        _ => {
            notes.push(format!("the {what} counter ({units} units) is beyond what this report holds; it is left out"));
            None
        }
    }
}

/// The report's `health` from the log page and, when read, the thresholds.
pub fn health(log: &SmartLog, thresholds: Option<Thresholds>) -> Health {
    let mut notes = Vec::new();
    let warnings = critical_warnings(log.critical_warning);
    let t = thresholds.unwrap_or_default();
    let mut h = Health {
        source: Some(HealthSource::NvmeSmartLog),
        percentage_used: Some(u16::from(log.percentage_used)),
        available_spare_percent: Some(log.available_spare),
        available_spare_threshold_percent: Some(log.available_spare_threshold),
        temperature_c: celsius(log.composite_temperature_k),
        temperature_warning_c: celsius(t.warning_k),
        temperature_critical_c: celsius(t.critical_k),
        power_on_hours: counter(log.power_on_hours, "power-on hours", &mut notes),
        power_cycles: counter(log.power_cycles, "power cycles", &mut notes),
        unsafe_shutdowns: counter(log.unsafe_shutdowns, "unsafe shutdowns", &mut notes),
        data_written_bytes: bytes_of(log.data_units_written, "data written", &mut notes),
        data_read_bytes: bytes_of(log.data_units_read, "data read", &mut notes),
        media_errors: counter(log.media_errors, "media errors", &mut notes),
        error_log_entries: counter(log.error_log_entries, "error log entries", &mut notes),
        critical_warning: Some(warnings.clone()),
        ..Health::default()
    };
    // Spare and its threshold are percentages; anything above 100 is not one.
    for (value, what) in [(log.available_spare, "available spare"), (log.available_spare_threshold, "spare threshold")]
    {
        if value > 100 {
            notes.push(format!("the drive reports its {what} as {value}%, which is not a percentage"));
        }
    }
    if h.available_spare_percent.is_some_and(|v| v > 100) {
        h.available_spare_percent = None;
    }
    if h.available_spare_threshold_percent.is_some_and(|v| v > 100) {
        h.available_spare_threshold_percent = None;
    }
    if log.percentage_used == 255 {
        notes.push("percentage used reads 255, which the specification uses for 255% or more".to_owned());
    }
    let status = status(&h, &warnings, &mut notes);
    h.status = Some(status);
    h.notes = notes;
    h
}

/// The device's state in one word, from what it reported, with the reasons.
fn status(h: &Health, warnings: &[CriticalWarning], notes: &mut Vec<String>) -> HealthStatus {
    let failing = warnings.iter().any(|w| !matches!(w, CriticalWarning::Temperature));
    if failing {
        notes.push(
            "the drive raises a critical warning: copy off what matters and replace it (NVMe Base Specification, \
             Critical Warning)"
                .to_owned(),
        );
        return HealthStatus::Failing;
    }
    if let (Some(spare), Some(threshold)) = (h.available_spare_percent, h.available_spare_threshold_percent) {
        if spare < threshold {
            notes.push(format!("available spare {spare}% is below the drive's threshold of {threshold}%"));
            return HealthStatus::Failing;
        }
    }
    let mut status = HealthStatus::Ok;
    if warnings.contains(&CriticalWarning::Temperature) {
        notes.push("the drive is outside its temperature thresholds: cool it (a heatsink, airflow)".to_owned());
        status = HealthStatus::Warn;
    }
    if let Some(used) = h.percentage_used.filter(|&u| u >= 90) {
        notes.push(if used >= 100 {
            format!("{used}% of the rated write endurance is used: the drive is past it; keep backups and plan a replacement")
        } else {
            format!("{used}% of the rated write endurance is used: plan a replacement")
        });
        status = HealthStatus::Warn;
    }
    if let Some(errors) = h.media_errors.filter(|&e| e > 0) {
        notes.push(format!("{errors} unrecovered media or data-integrity errors"));
        status = HealthStatus::Warn;
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log page as a healthy drive returns it (values of a public
    /// `nvme smart-log` output: 41 °C, 3% used, 9437184000000 bytes written).
    fn page() -> Vec<u8> {
        let mut b = vec![0u8; SMART_LOG_LEN];
        b[1..3].copy_from_slice(&314u16.to_le_bytes()); // 41 °C
        b[3] = 100;
        b[4] = 10;
        b[5] = 3;
        b[48..64].copy_from_slice(&18_432_000u128.to_le_bytes());
        b[112..128].copy_from_slice(&57u128.to_le_bytes());
        b[128..144].copy_from_slice(&1210u128.to_le_bytes());
        b
    }

    #[test]
    fn decodes_a_healthy_page() {
        let log = decode_smart_log(&page()).expect("decodes");
        let h = health(&log, Some(Thresholds { warning_k: 343, critical_k: 373 }));
        assert_eq!(h.source, Some(HealthSource::NvmeSmartLog));
        assert_eq!(h.temperature_c, Some(41));
        assert_eq!((h.temperature_warning_c, h.temperature_critical_c), (Some(70), Some(100)));
        assert_eq!(h.percentage_used, Some(3));
        assert_eq!(h.available_spare_percent, Some(100));
        assert_eq!(h.power_on_hours, Some(1210));
        assert_eq!(h.power_cycles, Some(57));
        assert_eq!(h.data_written_bytes, Some(9_437_184_000_000));
        assert_eq!(h.media_errors, Some(0));
        assert_eq!(h.critical_warning, Some(vec![]));
        assert_eq!(h.status, Some(HealthStatus::Ok));
    }

    #[test]
    fn decodes_warnings() {
        assert_eq!(critical_warnings(0), []);
        assert_eq!(
            critical_warnings(0x07),
            [CriticalWarning::SpareBelowThreshold, CriticalWarning::Temperature, CriticalWarning::ReliabilityDegraded]
        );
        assert_eq!(critical_warnings(0x80), [CriticalWarning::Unknown]);
        let mut b = page();
        b[0] = 0x02;
        let h = health(&decode_smart_log(&b).expect("decodes"), None);
        assert_eq!(h.status, Some(HealthStatus::Warn));
        b[0] = 0x08;
        let h = health(&decode_smart_log(&b).expect("decodes"), None);
        assert_eq!(h.status, Some(HealthStatus::Failing));
        assert_eq!(h.critical_warning, Some(vec![CriticalWarning::ReadOnly]));
    }

    #[test]
    fn garbage_pages_never_panic_and_say_what_they_drop() {
        assert_eq!(decode_smart_log(&[0u8; 100]), Err(LogError::Short { expected: 512, got: 100 }));
        let all_ff = decode_smart_log(&[0xffu8; 512]).expect("decodes");
        let h = health(&all_ff, Some(decode_thresholds(&[0xffu8; 4096])));
        assert_eq!(h.data_written_bytes, None);
        assert_eq!(h.power_on_hours, None);
        assert_eq!(h.available_spare_percent, None);
        assert_eq!(h.status, Some(HealthStatus::Failing));
        assert!(h.notes.iter().any(|n| n.contains("beyond what this report holds")));
        assert_eq!(decode_thresholds(&[1, 2, 3]), Thresholds::default());
    }
}
