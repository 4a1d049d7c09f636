//! Where a score stands among comparable published results: the same kind
//! of storage on the same board family (docs/reference.md#a-result-in-context).
//! Pure: a score, a kind and a board in, a placement out.

use std::fmt;

use super::{Published, ReferenceSet};
use crate::schema::Report;

/// Boards whose storage buses are the same, so that results compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Pi 5, Compute Module 5, Pi 500 (BCM2712: SDR104, PCIe 2.0/3.0 x1).
    Pi5,
    /// Pi 4, Compute Module 4, Pi 400 (BCM2711: DDR50, USB 3.0 over VL805).
    Pi4,
    /// Pi 3, 3B+, Compute Module 3, Zero 2 (BCM2837: 50 MHz SD, USB 2.0).
    Pi3,
    /// Pi 1, 2, Zero (BCM2835/6).
    PiEarly,
    /// RK3588 boards: Orange Pi 5, Rock 5, Turing RK1.
    Rk3588,
    /// Anything else: compared with nothing, since nothing says its buses match.
    Other,
}

impl Family {
    pub fn name(self) -> &'static str {
        match self {
            Family::Pi5 => "a Raspberry Pi 5",
            Family::Pi4 => "a Raspberry Pi 4",
            Family::Pi3 => "a Raspberry Pi 3",
            Family::PiEarly => "a Raspberry Pi 1 or 2",
            Family::Rk3588 => "an RK3588 board",
            Family::Other => "this board",
        }
    }
}

/// The family of a board as a device tree, DMI or a person names it.
pub fn family(board: &str) -> Family {
    let b = board.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| b.contains(w));
    if has(&["rk3588", "orange pi 5", "orangepi 5", "rock 5", "rock5", "turing rk1"]) {
        Family::Rk3588
    } else if has(&["pi 5", "pi5", "compute module 5", "cm5", "pi 500"]) {
        Family::Pi5
    } else if has(&["pi 4", "pi4", "compute module 4", "cm4", "pi 400"]) {
        Family::Pi4
    } else if has(&["pi 3", "pi3", "compute module 3", "cm3", "zero 2"]) {
        Family::Pi3
    } else if b.contains("raspberry pi") {
        Family::PiEarly
    } else {
        Family::Other
    }
}

/// The reference kind of a report's device: its kind's from the medium
/// and transport tables, with USB drives told apart by their bridge (a SATA
/// or NVMe bridge is an SSD; no known bridge, or a card reader, is flash).
pub fn kind_of_report(report: &Report) -> Option<&'static str> {
    let device = report.device.as_ref()?;
    let kinds = device.kind.reference_kinds();
    if kinds.len() < 2 {
        return kinds.first().copied();
    }
    let bridge = device.usb.as_ref().and_then(|u| u.bridge.as_deref());
    let ssd = bridge.is_some_and(|b| !b.to_lowercase().contains("reader"));
    kinds.iter().copied().find(|k| *k == if ssd { "usb-ssd" } else { "usb-flash" })
}

/// Where a score stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Placement {
    Placed {
        /// Percent of the comparable results below it (ties count half).
        percentile: u32,
        count: usize,
        kind: String,
        family: Family,
        /// The nearest published result at or below, and above.
        below: Option<(String, u64)>,
        above: Option<(String, u64)>,
    },
    /// Nothing published is of the same kind on the same family.
    NoneComparable { kind: Option<String>, family: Family },
}

/// `score` of a `kind` result on `board` among `set`.
pub fn place(score: u64, kind: Option<&str>, board: Option<&str>, set: &ReferenceSet) -> Placement {
    let family = board.map_or(Family::Other, family);
    let comparable: Vec<&Published> = match kind {
        Some(kind) if family != Family::Other => {
            set.results.iter().filter(|r| r.kind == kind && self::family(&r.host) == family).collect()
        }
        _ => Vec::new(),
    };
    let Some(kind) = kind.filter(|_| !comparable.is_empty()) else {
        return Placement::NoneComparable { kind: kind.map(str::to_owned), family };
    };
    let below_count = comparable.iter().filter(|r| r.score < score).count();
    let ties = comparable.iter().filter(|r| r.score == score).count();
    let count = comparable.len();
    // Integer arithmetic: (2·below + ties) · 100 / (2·count), rounded.
    let percentile = u32::try_from(((2 * below_count + ties) * 100 + count) / (2 * count)).unwrap_or(100);
    let name = |r: &&Published| (r.device.clone(), r.score);
    let below = comparable.iter().filter(|r| r.score <= score).max_by_key(|r| r.score).map(name);
    let above = comparable.iter().filter(|r| r.score > score).min_by_key(|r| r.score).map(name);
    Placement::Placed { percentile, count, kind: kind.to_owned(), family, below, above }
}

/// 1st, 2nd, 3rd, 4th, 11th, 21st, …
fn ordinal(n: u32) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The kind in words, one.
fn kind_word(kind: &str) -> &str {
    match kind {
        "sd" => "SD card",
        "emmc" => "eMMC module",
        "nvme" => "NVMe drive",
        "sata" => "SATA drive",
        "usb-ssd" => "USB SSD",
        "usb-flash" => "USB flash drive",
        other => other,
    }
}

/// The kind in words, plural.
fn kind_words(kind: &str) -> &str {
    match kind {
        "sd" => "SD cards",
        "emmc" => "eMMC modules",
        "nvme" => "NVMe drives",
        "sata" => "SATA drives",
        "usb-ssd" => "USB SSDs",
        "usb-flash" => "USB flash drives",
        other => other,
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placement::Placed { percentile, count, kind, family, below, above } => {
                write!(
                    f,
                    "In context: {} percentile of {count} published {} on {}",
                    ordinal(*percentile),
                    if *count == 1 { kind_word(kind) } else { kind_words(kind) },
                    family.name()
                )?;
                let near: Vec<String> = [("at or below", below), ("above", above)]
                    .into_iter()
                    .filter_map(|(w, r)| r.as_ref().map(|(d, s)| format!("{d} ({s}) {w}")))
                    .collect();
                if !near.is_empty() {
                    write!(f, "; nearest: {}", near.join(", "))?;
                }
                write!(f, " (storage-score reference)")
            }
            Placement::NoneComparable { kind: Some(kind), family } => write!(
                f,
                "In context: no published result of {} on {} to compare with (storage-score reference lists them all)",
                kind_words(kind),
                family.name()
            ),
            Placement::NoneComparable { kind: None, .. } => write!(
                f,
                "In context: the storage's kind is not known, so no published result is comparable (storage-score reference lists them all)"
            ),
        }
    }
}
