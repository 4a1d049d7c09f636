//! The `health`, `advice` and `thermal` sections of a report (docs/doctor.md):
//! is the storage wearing out, is this machine using it well, and was the
//! machine throttled while the figures were measured?
//!
//! `identify` fills them (it reads the devices); this module holds only the
//! types and the pure rules over them ([`Thermal::throttled_during`]), so that
//! the leaderboard server reads them with `scoring` alone. Closed choices
//! (sources, severities, advice codes, warning bits) are enums; each has an
//! `Unknown` variant that a newer report's value loads as, so an old server
//! still accepts a report from a newer client.

use serde::{Deserialize, Serialize};

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
}

/// How much a piece of advice matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    /// Worth knowing; nothing is lost by leaving it.
    Info,
    /// Costs speed or card life; worth fixing.
    Warn,
    /// Data or results are at risk now.
    Critical,
    #[serde(other)]
    Unknown,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
            Severity::Unknown => "unknown",
        }
    }
}

/// The advice codes of docs/doctor.md. Stable: scripts match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AdviceCode {
    PartitionMisaligned,
    TrimUnavailable,
    TrimNotScheduled,
    UsbLinkSlowerThanDevice,
    UsbStorageNotUas,
    PcieLinkDowngraded,
    SdBusBelowCard,
    UnderVoltage,
    Throttled,
    Hot,
    SwapOnCard,
    #[serde(other)]
    Unknown,
}

impl AdviceCode {
    /// Every code, in the order docs/doctor.md lists them.
    pub const ALL: [AdviceCode; 11] = [
        AdviceCode::PartitionMisaligned,
        AdviceCode::TrimUnavailable,
        AdviceCode::TrimNotScheduled,
        AdviceCode::UsbLinkSlowerThanDevice,
        AdviceCode::UsbStorageNotUas,
        AdviceCode::PcieLinkDowngraded,
        AdviceCode::SdBusBelowCard,
        AdviceCode::UnderVoltage,
        AdviceCode::Throttled,
        AdviceCode::Hot,
        AdviceCode::SwapOnCard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AdviceCode::PartitionMisaligned => "partition-misaligned",
            AdviceCode::TrimUnavailable => "trim-unavailable",
            AdviceCode::TrimNotScheduled => "trim-not-scheduled",
            AdviceCode::UsbLinkSlowerThanDevice => "usb-link-slower-than-device",
            AdviceCode::UsbStorageNotUas => "usb-storage-not-uas",
            AdviceCode::PcieLinkDowngraded => "pcie-link-downgraded",
            AdviceCode::SdBusBelowCard => "sd-bus-below-card",
            AdviceCode::UnderVoltage => "under-voltage",
            AdviceCode::Throttled => "throttled",
            AdviceCode::Hot => "hot",
            AdviceCode::SwapOnCard => "swap-on-card",
            AdviceCode::Unknown => "unknown",
        }
    }

    /// The finding in plain words, as a heading.
    pub fn title(self) -> &'static str {
        match self {
            AdviceCode::PartitionMisaligned => "a partition does not start on the card's erase unit",
            AdviceCode::TrimUnavailable => "TRIM (discard) does not reach the device",
            AdviceCode::TrimNotScheduled => "TRIM is possible but nothing runs it",
            AdviceCode::UsbLinkSlowerThanDevice => "a USB 3 device runs on a USB 2 link",
            AdviceCode::UsbStorageNotUas => "the USB drive runs on usb-storage, not UAS",
            AdviceCode::PcieLinkDowngraded => "the PCIe link runs below what both ends can do",
            AdviceCode::SdBusBelowCard => "the SD bus runs slower than the card can",
            AdviceCode::UnderVoltage => "the power supply sags (under-voltage)",
            AdviceCode::Throttled => "the CPU is or was throttled",
            AdviceCode::Hot => "running hot, near the temperature limit",
            AdviceCode::SwapOnCard => "swap lives on the SD card or eMMC",
            AdviceCode::Unknown => "advice this version does not know",
        }
    }
}

/// One finding about how this machine uses its storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advice {
    pub code: AdviceCode,
    pub severity: Severity,
    /// What was seen on this machine, with the values read.
    pub evidence: String,
    /// What to do, as commands or settings a user can type.
    pub fix: String,
    /// The public source the rule rests on.
    pub source: String,
}

/// Raspberry Pi firmware `get_throttled` flags (each is a "now" bit 0-3
/// and a "since boot" bit 16-19).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThrottleFlag {
    UnderVoltage,
    ArmFrequencyCapped,
    Throttled,
    SoftTemperatureLimit,
    #[serde(other)]
    Unknown,
}

impl ThrottleFlag {
    pub const ALL: [ThrottleFlag; 4] = [
        ThrottleFlag::UnderVoltage,
        ThrottleFlag::ArmFrequencyCapped,
        ThrottleFlag::Throttled,
        ThrottleFlag::SoftTemperatureLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ThrottleFlag::UnderVoltage => "under-voltage",
            ThrottleFlag::ArmFrequencyCapped => "arm-frequency-capped",
            ThrottleFlag::Throttled => "throttled",
            ThrottleFlag::SoftTemperatureLimit => "soft-temperature-limit",
            ThrottleFlag::Unknown => "unknown",
        }
    }
}

/// The machine's temperature and throttling at one moment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThermalSnapshot {
    /// The SoC (CPU) temperature, from the thermal zone of the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_temperature_c: Option<f64>,
    /// The lowest passive trip point of that zone: where the kernel
    /// starts to slow the CPU down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soc_limit_c: Option<f64>,
    /// The firmware's `get_throttled` word, as `vcgencmd` prints it (`0x50005`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub get_throttled: Option<String>,
    /// Its bits 0-3: what holds now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_now: Vec<ThrottleFlag>,
    /// Its bits 16-19: what has happened since boot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled_since_boot: Vec<ThrottleFlag>,
    /// The `rpi_volt` hwmon's under-voltage alarm (`in0_lcrit_alarm`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub under_voltage_alarm: Option<bool>,
    /// The drive's own temperature sensor (hwmon), where it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drive_temperature_c: Option<f64>,
}

impl ThermalSnapshot {
    /// Something says the machine is slowed down now.
    pub fn throttled_now(&self) -> bool {
        !self.throttled_now.is_empty() || self.under_voltage_alarm == Some(true)
    }

    /// There is any throttling source to read at all.
    pub fn has_throttle_source(&self) -> bool {
        self.get_throttled.is_some() || self.under_voltage_alarm.is_some()
    }
}

/// What a sampler saw while the figures were measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ThermalWatch {
    pub samples: u32,
    pub interval_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_soc_temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_drive_temperature_c: Option<f64>,
    /// Samples in which something said the machine was slowed down.
    #[serde(default)]
    pub throttled_samples: u32,
    /// Every flag seen "now" in any sample (and the under-voltage alarm as
    /// `under-voltage`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags_seen: Vec<ThrottleFlag>,
}

/// The machine while one figure (or study) was measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FigureThermal {
    /// The measurement key, or the study's name for `profile`.
    pub key: String,
    pub samples: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_soc_temperature_c: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_drive_temperature_c: Option<f64>,
    /// Slowed down at some reading in the window, or a since-boot flag
    /// appeared within it.
    pub throttled: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<ThrottleFlag>,
}

/// The `thermal` section: the machine before, during and after a
/// measurement.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Thermal {
    /// A single reading, when nothing was measured (`doctor`, `identify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub now: Option<ThermalSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<ThermalSnapshot>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub during: Option<ThermalWatch>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<ThermalSnapshot>,
    /// Each figure's own window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub figures: Vec<FigureThermal>,
    /// True when the figures were (at least partly) measured while the
    /// machine was throttled or under-volted; null when this machine has
    /// no source that could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throttled_during: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Thermal {
    /// Works out [`Thermal::throttled_during`] from the snapshots and the
    /// sampler: a flag set now at either end or in any sample, or a
    /// since-boot flag that appeared between the two ends. `None` when no
    /// snapshot had a throttling source.
    pub fn assess(&mut self) {
        if self.before.is_none() && self.after.is_none() && self.during.is_none() {
            // A single reading says nothing about a measurement.
            self.throttled_during = None;
            return;
        }
        let ends = [self.before.as_ref(), self.after.as_ref()];
        let any_source = ends.iter().flatten().any(|s| s.has_throttle_source());
        if !any_source {
            self.throttled_during = None;
            return;
        }
        let now = ends.iter().flatten().any(|s| s.throttled_now());
        let sampled =
            self.during.as_ref().is_some_and(|w| w.throttled_samples > 0) || self.figures.iter().any(|f| f.throttled);
        let appeared = match (self.before.as_ref(), self.after.as_ref()) {
            (Some(b), Some(a)) => a.throttled_since_boot.iter().any(|f| !b.throttled_since_boot.contains(f)),
            _ => false,
        };
        self.throttled_during = Some(now || sampled || appeared);
    }

    /// Whether the figure under `key` was measured while throttled: from its
    /// own window when the report has windows, else from the whole run.
    pub fn figure_throttled(&self, key: &str) -> bool {
        if self.figures.is_empty() {
            return self.throttled_during == Some(true);
        }
        self.figures.iter().any(|f| f.key == key && f.throttled)
    }

    /// The flags that make the run count as throttled, for the notes.
    pub fn flags(&self) -> Vec<ThrottleFlag> {
        let mut flags: Vec<ThrottleFlag> = Vec::new();
        let ends = [self.before.as_ref(), self.after.as_ref()];
        for snapshot in ends.into_iter().flatten() {
            flags.extend(&snapshot.throttled_now);
            if snapshot.under_voltage_alarm == Some(true) {
                flags.push(ThrottleFlag::UnderVoltage);
            }
        }
        if let (Some(b), Some(a)) = (self.before.as_ref(), self.after.as_ref()) {
            flags.extend(a.throttled_since_boot.iter().filter(|f| !b.throttled_since_boot.contains(f)));
        }
        if let Some(w) = &self.during {
            flags.extend(&w.flags_seen);
        }
        for f in &self.figures {
            flags.extend(&f.flags);
        }
        flags.sort();
        flags.dedup();
        flags
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(now: &[ThrottleFlag], since: &[ThrottleFlag]) -> ThermalSnapshot {
        ThermalSnapshot {
            get_throttled: Some("0x0".to_owned()),
            throttled_now: now.to_vec(),
            throttled_since_boot: since.to_vec(),
            ..ThermalSnapshot::default()
        }
    }

    #[test]
    fn throttled_during_needs_a_source() {
        let mut t = Thermal {
            before: Some(ThermalSnapshot { soc_temperature_c: Some(40.0), ..ThermalSnapshot::default() }),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, None);
    }

    #[test]
    fn a_since_boot_flag_that_appears_counts() {
        let mut t = Thermal {
            before: Some(snapshot(&[], &[])),
            after: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(true));
        assert_eq!(t.flags(), [ThrottleFlag::UnderVoltage]);
        // Already set before the run: says nothing about the run.
        let mut t = Thermal {
            before: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            after: Some(snapshot(&[], &[ThrottleFlag::UnderVoltage])),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(false));
    }

    #[test]
    fn a_sampled_flag_counts() {
        let mut t = Thermal {
            before: Some(snapshot(&[], &[])),
            after: Some(snapshot(&[], &[])),
            during: Some(ThermalWatch {
                samples: 10,
                throttled_samples: 2,
                flags_seen: vec![ThrottleFlag::SoftTemperatureLimit],
                ..ThermalWatch::default()
            }),
            ..Thermal::default()
        };
        t.assess();
        assert_eq!(t.throttled_during, Some(true));
    }

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
