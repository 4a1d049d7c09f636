//! The `health`, `advice` and `thermal` sections of a report (docs/doctor.md):
//! is the storage wearing out, is this machine using it well, and was the
//! machine throttled while the figures were measured?
//!
//! `identify` fills them (it reads the devices); this module holds only the
//! types (`advice.rs`, `thermal.rs`) and the pure rules over them
//! ([`Thermal::assess`]), so that the leaderboard server reads them with
//! `scoring` alone. Closed choices
//! (sources, severities, advice codes, warning bits) are enums; each has an
//! `Unknown` variant that a newer report's value loads as, so an old server
//! still accepts a report from a newer client.

use serde::{Deserialize, Serialize};

mod advice;
mod thermal;

pub use advice::{Advice, AdviceCode, Severity};
pub use thermal::{FigureThermal, Thermal, ThermalSnapshot, ThermalWatch, ThrottleFlag};

/// Where a device's health figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealthSource {
    /// NVMe SMART / Health Information log (Get Log Page 02h).
    NvmeSmartLog,
    /// ATA SMART through the kernel's SCSI-to-ATA translation (libata).
    AtaSmart,
    /// ATA SMART through a USB bridge's SAT pass-through (`smartctl -d sat`).
    AtaSmartSat,
    /// eMMC life-time estimates and pre-EOL (JEDEC EXT_CSD).
    EmmcLifeTime,
    /// An SD card's vendor health block (CMD56, GEN_CMD in read mode).
    SdCmd56,
    /// A UFS device's Health Descriptor (JESD220, bPreEOLInfo and
    /// bDeviceLifeTimeEstA/B), which Linux shows in sysfs.
    UfsHealthDescriptor,
    #[serde(other)]
    Unknown,
}

impl HealthSource {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthSource::NvmeSmartLog => "nvme-smart-log",
            HealthSource::AtaSmart => "ata-smart",
            HealthSource::AtaSmartSat => "ata-smart-sat",
            HealthSource::EmmcLifeTime => "emmc-life-time",
            HealthSource::SdCmd56 => "sd-cmd56",
            HealthSource::UfsHealthDescriptor => "ufs-health-descriptor",
            HealthSource::Unknown => "unknown",
        }
    }
}

/// The device's own verdict on itself, where it gives one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HealthStatus {
    /// Nothing the device reports is past a limit.
    Ok,
    /// Worn or warning: plan a replacement, keep backups.
    Warn,
    /// The device says it is failing (or read-only, or past its life).
    Failing,
    #[serde(other)]
    Unknown,
}

impl HealthStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthStatus::Ok => "ok",
            HealthStatus::Warn => "warn",
            HealthStatus::Failing => "failing",
            HealthStatus::Unknown => "unknown",
        }
    }
}

/// NVMe Critical Warning bits (SMART / Health log byte 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CriticalWarning {
    /// Bit 0: available spare below its threshold.
    SpareBelowThreshold,
    /// Bit 1: a temperature is above its over-temperature or below its
    /// under-temperature threshold.
    Temperature,
    /// Bit 2: reliability degraded by media or internal errors.
    ReliabilityDegraded,
    /// Bit 3: the media is read-only.
    ReadOnly,
    /// Bit 4: the volatile memory backup device failed.
    VolatileBackupFailed,
    /// Bit 5: the persistent memory region is read-only.
    PersistentMemoryReadOnly,
    #[serde(other)]
    Unknown,
}

impl CriticalWarning {
    pub fn as_str(self) -> &'static str {
        match self {
            CriticalWarning::SpareBelowThreshold => "spare-below-threshold",
            CriticalWarning::Temperature => "temperature",
            CriticalWarning::ReliabilityDegraded => "reliability-degraded",
            CriticalWarning::ReadOnly => "read-only",
            CriticalWarning::VolatileBackupFailed => "volatile-backup-failed",
            CriticalWarning::PersistentMemoryReadOnly => "persistent-memory-read-only",
            CriticalWarning::Unknown => "unknown",
        }
    }
}

/// eMMC PRE_EOL_INFO: how much of the reserved blocks is consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PreEol {
    Normal,
    /// 80% of the reserved blocks consumed.
    Warning,
    /// 90% consumed.
    Urgent,
    #[serde(other)]
    Unknown,
}

impl PreEol {
    pub fn as_str(self) -> &'static str {
        match self {
            PreEol::Normal => "normal",
            PreEol::Warning => "warning",
            PreEol::Urgent => "urgent",
            PreEol::Unknown => "unknown",
        }
    }
}

/// The vendor layouts of the SD CMD56 health block that are public.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cmd56Format {
    /// SanDisk / Western Digital industrial and WD Purple (`DS`, `DW`).
    Sandisk,
    /// Longsys (`pX`).
    Longsys,
    /// Micron (`ME`).
    Micron,
    /// Swissbit (`Sw`).
    Swissbit,
    /// Transcend (`Tr`).
    Transcend,
    /// ADATA and other Silicon Motion SM27xx cards (`\x09A`).
    Adata,
    /// Innodisk (`LX`).
    Innodisk,
    #[serde(other)]
    Unknown,
}

impl Cmd56Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Cmd56Format::Sandisk => "sandisk",
            Cmd56Format::Longsys => "longsys",
            Cmd56Format::Micron => "micron",
            Cmd56Format::Swissbit => "swissbit",
            Cmd56Format::Transcend => "transcend",
            Cmd56Format::Adata => "adata",
            Cmd56Format::Innodisk => "innodisk",
            Cmd56Format::Unknown => "unknown",
        }
    }
}

/// One ATA SMART attribute, as the drive reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AtaAttribute {
    pub id: u8,
    /// The name most drives give this ID (smartctl's default naming).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Normalised value (1-253, higher is better) and the worst it has been.
    pub value: u8,
    pub worst: u8,
    /// The threshold the drive fails the attribute at (0: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u8>,
    /// The six raw bytes, little-endian; their meaning is the vendor's.
    pub raw: u64,
    /// A pre-failure attribute (flag bit 0): below threshold predicts failure.
    #[serde(default)]
    pub prefailure: bool,
    /// The value is at or below its threshold now.
    #[serde(default, skip_serializing_if = "is_false")]
    pub failing_now: bool,
    /// The worst value was at or below the threshold at some time.
    #[serde(default, skip_serializing_if = "is_false")]
    pub failed_in_past: bool,
}

/// The `health` section: the device's wear and error counters, from its own
/// reports. Every figure is what the device said; none is estimated here.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Health {
    /// `null` when the device offers no health source this tool can read.
    pub source: Option<HealthSource>,
    /// Why there is no source, or why a source gave less than usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The device has a health source but it could not be read (not root,
    /// the node cannot be opened, the command failed): `why` says which.
    /// `doctor` sets its "device not readable" exit bit for it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unreadable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<HealthStatus>,
    /// The CMD56 vendor layout the block was decoded with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<Cmd56Format>,
    /// The device's estimate of its life used, in percent (may pass 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_used: Option<u16>,
    /// Where the device reports life used as a band (eMMC 10% steps,
    /// SanDisk's 1% steps): the band's lower and upper bound, in percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_used_range: Option<[u16; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_spare_percent: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_spare_threshold_percent: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_c: Option<i32>,
    /// The drive's own warning and critical temperatures (NVMe WCTEMP, CCTEMP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_warning_c: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature_critical_c: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_on_hours: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_cycles: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unsafe_shutdowns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_written_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_read_bytes: Option<u64>,
    /// NVMe: unrecovered data integrity errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_log_entries: Option<u64>,
    /// NVMe Critical Warning, decoded (`[]` when none is raised).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical_warning: Option<Vec<CriticalWarning>>,
    /// ATA SMART RETURN STATUS: the drive's overall self-assessment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smart_passed: Option<bool>,
    /// ATA attributes 5, 197, 198 and 199 (raw counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reallocated_sectors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_sectors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncorrectable_sectors: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_crc_errors: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<AtaAttribute>,
    /// eMMC DEVICE_LIFE_TIME_EST_TYP_A/B as the device gives them
    /// (1 = 0-10% used … 10 = 90-100%, 11 = past its estimated life).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life_time_est_a: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life_time_est_b: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pre_eol: Option<PreEol>,
    /// SD CMD56: blocks that went bad in use, and spare blocks left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grown_bad_blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spare_blocks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average_erase_count: Option<u64>,
    /// One sentence each: what a figure means, what could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Health {
    /// No source: `"source": null` with the reason.
    pub fn none(why: impl Into<String>) -> Health {
        Health { why: Some(why.into()), ..Health::default() }
    }

    /// A source this device has, that could not be read: the reason.
    pub fn unreadable(why: impl Into<String>) -> Health {
        Health { unreadable: true, ..Health::none(why) }
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_codes_from_newer_reports_load() {
        let advice: Advice = serde_json::from_str(
            r#"{"code": "something-new", "severity": "dire", "evidence": "e", "fix": "f", "source": "s"}"#,
        )
        .expect("loads");
        assert_eq!((advice.code, advice.severity), (AdviceCode::Unknown, Severity::Unknown));
        let health: Health =
            serde_json::from_str(r#"{"source": "quantum-log", "critical_warning": ["x"]}"#).expect("loads");
        assert_eq!(health.source, Some(HealthSource::Unknown));
        assert_eq!(health.critical_warning, Some(vec![CriticalWarning::Unknown]));
    }

    #[test]
    fn no_source_serializes_as_null_with_why() {
        let json = serde_json::to_value(Health::none("no health source")).expect("json");
        assert_eq!(json, serde_json::json!({"source": null, "why": "no health source"}));
        for code in AdviceCode::ALL {
            assert_eq!(serde_json::to_value(code).expect("json"), serde_json::json!(code.as_str()));
        }
    }
}
