//! The `advice` section's types: findings with their code, severity,
//! evidence, fix and source (docs/doctor.md#advice).

use serde::{Deserialize, Serialize};

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
