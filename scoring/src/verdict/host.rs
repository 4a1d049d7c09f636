//! What the host, not the card, puts out of reach: the SD bus's sequential
//! ceiling, the per-command IOPS ceiling of known SD hosts, command queueing
//! that is not shown running, and USB links between host and card.
//!
//! Every limit is worked out from device facts alone (debugfs `ios`, the
//! host controller's device-tree name, the USB link speed); when a fact is
//! absent, no limit is claimed. A check that a limit explains and that the
//! card did not clear gets `"pass": null` with the limit's `why`.

use super::classes::{ClassMark, RAND_READ, RAND_WRITE, SEQ_WRITE, is_sequential_write};
use super::figure;
use super::wording::{fmt_clock, fmt_plain, fmt_round, join_and};
use crate::schema::{Check, Device, HostIos, Measurements};

/// The share of the raw SD bus rate that sequential transfers reach.
///
/// Raspberry Pi 3-generation boards run SD cards at 50 MHz High Speed over a
/// 4-bit bus: 25 MB/s raw, and PiBenchmarks results and the Pi community
/// measure about 23 MB/s at best (23 / 25 = 0.92). Commands, CRC16 and the
/// gaps between blocks take the rest; the same share is applied to the other
/// bus modes, which carry the same per-block framing.
pub const BUS_EFFICIENCY: f64 = 0.92;

/// The sequential rate (MB/s) that USB 2.0 mass storage carries in practice.
///
/// The USB 2.0 high-speed bulk limit is 13 × 512 B per 125 µs microframe,
/// 53.2 MB/s; USB card readers deliver about 35-40 MB/s in practice
/// (Bulk-Only Transport about 35, UAS about 40). Requirements above the top
/// of that range cannot be reached through the link; from its bottom end up
/// the link leaves the card little headroom.
pub const USB2_PRACTICAL_MB_S: (f64, f64) = (35.0, 40.0);

/// From this sequential requirement up (U3, V30), a USB 2.0 link leaves the
/// card little headroom (30 MB/s is within 15-25% of the practical rate), so
/// a shortfall there may be the link's.
pub const USB2_TIGHT_FROM_MB_S: f64 = 30.0;

/// The USB 1.1 full-speed bulk limit: 19 × 64 B per 1 ms frame (USB 2.0
/// spec 5.8.4), 1.216 MB/s.
pub const USB1_BULK_MB_S: f64 = 1.216;

/// The ceiling an SD host bus puts on sequential transfers.
#[derive(Debug, Clone, PartialEq)]
pub struct BusCeiling {
    /// The bus mode in words, e.g. `High Speed`, `UHS-I SDR104`.
    pub mode: &'static str,
    pub clock_hz: u64,
    pub bus_width_bits: u8,
    /// Data on both clock edges (DDR50, DDR52, HS400).
    pub ddr: bool,
    /// clock × width / 8 (× 2 for DDR), in MB/s.
    pub raw_mb_s: f64,
    /// `raw_mb_s` × [`BUS_EFFICIENCY`].
    pub practical_mb_s: f64,
}

/// The bus ceiling from debugfs `mmc*/ios`, or `None` when the timing mode
/// is absent or unknown (then nothing is claimed about the bus).
///
/// - The clock is `actual clock` when the host reports it, else `clock`; a
///   clock of 0 (gated while idle) or an absent one falls back to the top
///   clock the timing mode allows, which is still a true ceiling.
/// - An absent bus width counts as the widest the mode allows (4 bits for
///   SD, 8 for MMC), again so that the result stays a ceiling, never a guess
///   that could be too low.
pub fn sd_bus_ceiling(host: &HostIos) -> Option<BusCeiling> {
    let timing = host.timing.as_deref()?.trim().to_ascii_lowercase();
    // (mode, top clock of the mode, ddr, widest bus) per the SD and eMMC specs,
    // keyed by the kernel's names (drivers/mmc/core/debugfs.c).
    let (mode, top_clock, ddr, widest): (&'static str, u64, bool, u8) = match timing.as_str() {
        "legacy" => ("default speed", 25_000_000, false, 4),
        "sd high-speed" => ("High Speed", 50_000_000, false, 4),
        "sd uhs sdr12" => ("UHS-I SDR12", 25_000_000, false, 4),
        "sd uhs sdr25" => ("UHS-I SDR25", 50_000_000, false, 4),
        "sd uhs sdr50" => ("UHS-I SDR50", 100_000_000, false, 4),
        "sd uhs sdr104" => ("UHS-I SDR104", 208_000_000, false, 4),
        "sd uhs ddr50" => ("UHS-I DDR50", 50_000_000, true, 4),
        "mmc high-speed" => ("MMC High Speed", 52_000_000, false, 8),
        "mmc ddr52" => ("MMC DDR52", 52_000_000, true, 8),
        "mmc hs200" => ("HS200", 200_000_000, false, 8),
        "mmc hs400" | "mmc hs400 enhanced strobe" => ("HS400", 200_000_000, true, 8),
        _ => return None,
    };
    let clock_hz = [host.actual_clock_hz, host.clock_hz].into_iter().flatten().find(|&c| c > 0).unwrap_or(top_clock);
    let bus_width_bits = match host.bus_width_bits {
        Some(w @ (1 | 4 | 8)) => w,
        _ => widest,
    };
    let raw_mb_s = clock_hz as f64 * f64::from(bus_width_bits) / 8.0 * if ddr { 2.0 } else { 1.0 } / 1e6;
    Some(BusCeiling { mode, clock_hz, bus_width_bits, ddr, raw_mb_s, practical_mb_s: raw_mb_s * BUS_EFFICIENCY })
}

/// The most 4 KiB random IOPS a known SD host has been published reaching,
/// with any card, without command queueing. Per-command latency, not bus
/// bandwidth, sets this ceiling: a Pi 4 at DDR50 moves 50 MB/s, or 12 000
/// 4 KiB transfers a second, yet no published run passes 3200 read IOPS.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostIopsCeiling {
    /// The host in words.
    pub host: &'static str,
    pub read_iops: f64,
    pub write_iops: f64,
    /// The published measurements behind the figures.
    pub source: &'static str,
}

/// Published ceilings per SD host (controller `compatible`) and bus mode.
/// Figures are the highest any card reached in the source; docs/score.md#host-ceilings
/// lists every source.
pub fn host_iops_ceiling(host: &HostIos) -> Option<HostIopsCeiling> {
    let controller = host.controller.as_deref()?;
    let timing = host.timing.as_deref().unwrap_or("").to_ascii_lowercase();
    if controller.contains("bcm2835-sdhost") {
        // Pi 1-3 and Zero: sdhost runs at most High Speed, 50 MHz.
        return Some(HostIopsCeiling {
            host: "Raspberry Pi 1-3/Zero SD slot (bcm2835-sdhost)",
            read_iops: 1784.0,
            write_iops: 742.0,
            source: "geerlingguy/turing-pi-cluster#11: CM3+ at 50 MHz, Samsung Evo+ 32 GB, iozone 4K, ≈1784 read / \
                     ≈742 write IOPS",
        });
    }
    if controller.contains("bcm2711-emmc2") && !timing.contains("sdr104") && !timing.contains("sdr50") {
        // Pi 4: DDR50 or High Speed (its SD slot runs no faster mode).
        return Some(HostIopsCeiling {
            host: "Raspberry Pi 4 SD slot (emmc2, 50 MHz)",
            read_iops: 3200.0,
            write_iops: 1203.0,
            source: "raspberrypi/documentation accessories/sd-cards/about.adoc (Pi 4 DDR50: 3,200 read / 1,200 write \
                     IOPS with Raspberry Pi's own card); pidramble.com microSD benchmarks (best of Evo+, SanDisk \
                     Extreme A2, Lexar A2: ≈2765 read / ≈1203 write)",
        });
    }
    None
}

/// Which checks a host limit can explain.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scope {
    /// Requirements on `key` above this value.
    Above(&'static str, f64),
    /// Requirements on `key` from this value up.
    AtLeast(&'static str, f64),
    /// A2's random-I/O requirements.
    A2Iops,
}

/// A limit of the host, not the card, with the note that explains it.
#[derive(Debug)]
pub(super) struct HostLimit {
    pub note: String,
    /// The cause in a few words, for the summary.
    pub blame: String,
    /// Why a check it explains has no pass or fail.
    pub why: String,
    pub scopes: Vec<Scope>,
}

impl HostLimit {
    pub fn explains(&self, check: &Check) -> bool {
        self.scopes.iter().any(|s| match *s {
            Scope::Above(key, value) => same_figure(&check.key, key) && check.required > value,
            Scope::AtLeast(key, value) => same_figure(&check.key, key) && check.required >= value,
            Scope::A2Iops => check.mark == "A2" && (check.key == RAND_READ || check.key == RAND_WRITE),
        })
    }
}

/// Whether a limit on `limited` also bounds the figure under `key`: a bus
/// that caps dd's sequential write caps the sustained write as well.
fn same_figure(key: &str, limited: &str) -> bool {
    key == limited || (is_sequential_write(key) && is_sequential_write(limited))
}

/// The host of an SD card: its debugfs `ios` and controller, if read.
fn sd_host(device: &Device) -> Option<&HostIos> {
    device.sd.as_ref().and_then(|s| s.host.as_ref())
}

/// The limits the host puts on the checks, from device facts only. Notes
/// are made for claimed marks; the limits apply to every check.
pub(super) fn host_limits(device: Option<&Device>, claimed: &[ClassMark], m: &Measurements) -> Vec<HostLimit> {
    let mut limits = Vec::new();
    let seq_write = figure(m, SEQ_WRITE);
    let host = device.and_then(sd_host);

    // The SD bus: timing mode and clock from debugfs ios.
    let bus = host.and_then(sd_bus_ceiling);
    if let Some(bus) = &bus {
        let what = format!(
            "the host's {} {} bus ({}-bit{})",
            fmt_clock(bus.clock_hz),
            bus.mode,
            bus.bus_width_bits,
            if bus.ddr { ", DDR" } else { "" }
        );
        let cap = bus.practical_mb_s;
        let blame = format!("{what} caps sequential speed near {} MB/s", fmt_round(cap));
        let over = marks_over(claimed, cap);
        let why = format!("{blame}: this host cannot carry the requirement");
        if !over.is_empty() {
            limits.push(HostLimit {
                note: format!("{blame}: {over} cannot be reached on this host"),
                blame,
                why,
                scopes: vec![Scope::Above(SEQ_WRITE, cap)],
            });
        } else if let Some(v) = seq_write.filter(|&v| v >= 0.9 * cap) {
            // Nothing claimed is out of reach, but the card already runs at
            // the bus ceiling: it may be faster than this host can show.
            limits.push(HostLimit {
                note: format!(
                    "the measured sequential write ({} MB/s) is at the ceiling of {what}, about {} MB/s: the card may be faster than this host can show",
                    fmt_plain(v),
                    fmt_round(cap)
                ),
                blame,
                why,
                scopes: vec![Scope::Above(SEQ_WRITE, cap)],
            });
        }
    }

    // 4 KiB random I/O: the published ceiling of a known host, else the bus
    // bandwidth over 4 KiB (a true upper bound, though a generous one).
    let published = host.and_then(host_iops_ceiling);
    let iops_cap = match (&published, &bus) {
        (Some(p), _) => Some((p.host.to_owned(), p.read_iops, p.write_iops, Some(p.source))),
        (None, Some(bus)) => {
            let cap = bus.practical_mb_s * 1e6 / 4096.0;
            let what = format!("4 KiB transfers over the host's {} {} bus", fmt_clock(bus.clock_hz), bus.mode);
            Some((what, cap, cap, None))
        }
        (None, None) => None,
    };
    if let Some((what, read_cap, write_cap, source)) = iops_cap {
        let mut over = Vec::new();
        for &mark in claimed {
            for r in mark.requirements() {
                let cap = if r.key == RAND_READ { read_cap } else { write_cap };
                if !r.is_sequential_write() && r.required > cap {
                    over.push(format!("{mark} ({} {} IOPS)", fmt_plain(r.required), r.what));
                }
            }
        }
        let blame = if source.is_some() {
            format!(
                "the {what} tops out near {} read / {} write IOPS in published measurements",
                fmt_round(read_cap),
                fmt_round(write_cap)
            )
        } else {
            format!("{what} top out near {} IOPS", fmt_round(read_cap))
        };
        let source_text = source.map(|s| format!(" (source: {s})")).unwrap_or_default();
        limits.push(HostLimit {
            note: if over.is_empty() {
                String::new()
            } else {
                format!("{blame}{source_text}: {} cannot be shown on this host", join_and(&over))
            },
            why: format!("{blame}: not verifiable on this host"),
            blame,
            scopes: vec![Scope::Above(RAND_READ, read_cap), Scope::Above(RAND_WRITE, write_cap)],
        });
    }

    // A2's IOPS need the card's command queue (SD spec, Application
    // Performance Class 2). Mainline Linux runs no SD command queueing (host
    // software queueing only) and the Raspberry Pi kernel enables it for
    // allow-listed cards only (raspberrypi/linux#6046, #6591), while the
    // host's MMC_CAP2_CQE only says it has an engine. Unless the card is
    // shown running CQ, A2's IOPS cannot be judged here.
    let card_cq = host.and_then(|h| h.card_command_queue);
    if card_cq != Some(true) {
        let usb_bot = device.and_then(|d| d.usb.as_ref()).is_some_and(|u| u.driver.as_deref() == Some("usb-storage"));
        let (blame, cause) = if usb_bot {
            // Bulk-Only Transport carries one command at a time (USB Mass
            // Storage Class BOT 1.0), so no queue reaches the card.
            let b = "the USB reader's Bulk-Only Transport carries one command at a time".to_owned();
            (b.clone(), b)
        } else if host.is_none() && device.is_some() {
            (
                "command queueing is not shown active (debugfs needs root)".to_owned(),
                "the host's bus and command queue are unknown without root (debugfs)".to_owned(),
            )
        } else {
            (
                "command queueing is not shown active for the card".to_owned(),
                "command queueing is not shown active for the card".to_owned(),
            )
        };
        limits.push(HostLimit {
            note: if claimed.contains(&ClassMark::App(2)) {
                format!(
                    "the card claims A2, whose random IOPS need the card's command queue and cache, but {cause}: A2's \
                     IOPS are not verifiable on this host"
                )
            } else {
                String::new()
            },
            why: format!("{cause}, which A2's IOPS need: not verifiable on this host"),
            blame,
            scopes: vec![Scope::A2Iops],
        });
    }

    // A USB link between host and card: a reader, or a Realtek reader that
    // shows the card as mmcblk.
    if let Some(usb) = device.and_then(|d| d.usb.as_ref()) {
        match usb.speed_mbps {
            Some(480) => {
                let (low, high) = USB2_PRACTICAL_MB_S;
                let out = marks_over(claimed, high);
                let tight: String = {
                    let t: Vec<ClassMark> = claimed
                        .iter()
                        .copied()
                        .filter(|c| c.seq_write_required().is_some_and(|r| r >= USB2_TIGHT_FROM_MB_S && r <= high))
                        .collect();
                    group_by_requirement(&t)
                };
                let mut parts = Vec::new();
                if !out.is_empty() {
                    parts.push(format!("{out} cannot be reached through it"));
                }
                if !tight.is_empty() {
                    parts.push(format!("{tight} has little headroom"));
                }
                let blame = format!(
                    "the USB 2.0 link (480 Mb/s) carries about {}-{} MB/s in practice",
                    fmt_plain(low),
                    fmt_plain(high)
                );
                let note = if !parts.is_empty() {
                    format!("{blame}: {}", parts.join(", and "))
                } else if let Some(v) = seq_write.filter(|&v| v >= 0.75 * high) {
                    format!(
                        "the measured sequential write ({} MB/s) is near what a USB 2.0 link carries in practice (about {}-{} MB/s): the card may be faster than this link can show",
                        fmt_plain(v),
                        fmt_plain(low),
                        fmt_plain(high)
                    )
                } else {
                    String::new()
                };
                limits.push(HostLimit {
                    note,
                    why: format!("{blame}: the link, not the card, may set this figure"),
                    blame,
                    scopes: vec![Scope::AtLeast(SEQ_WRITE, USB2_TIGHT_FROM_MB_S)],
                });
            }
            Some(12) => {
                let blame = format!("the USB 1.1 link (12 Mb/s) carries at most {} MB/s", fmt_plain(USB1_BULK_MB_S));
                let over = marks_over(claimed, USB1_BULK_MB_S);
                let note = if over.is_empty() {
                    format!("{blame}: every figure measured through it is capped by the link")
                } else {
                    format!("{blame}: {over} cannot be reached through it")
                };
                limits.push(HostLimit {
                    note,
                    why: format!("{blame}: the link cannot carry the requirement"),
                    blame,
                    scopes: vec![
                        Scope::Above(SEQ_WRITE, USB1_BULK_MB_S),
                        // 4 KiB transfers at that rate: about 297 IOPS.
                        Scope::Above(RAND_READ, USB1_BULK_MB_S * 1e6 / 4096.0),
                        Scope::Above(RAND_WRITE, USB1_BULK_MB_S * 1e6 / 4096.0),
                    ],
                });
            }
            _ => {}
        }
    }
    limits
}

/// Claimed marks whose sequential write requirement exceeds `cap`, grouped
/// by requirement: `U3/V30 (30 MB/s), V60 (60 MB/s)`.
fn marks_over(claimed: &[ClassMark], cap: f64) -> String {
    let over: Vec<ClassMark> =
        claimed.iter().copied().filter(|c| c.seq_write_required().is_some_and(|r| r > cap)).collect();
    group_by_requirement(&over)
}

fn group_by_requirement(marks: &[ClassMark]) -> String {
    let mut groups: Vec<(f64, Vec<String>)> = Vec::new();
    for &mark in marks {
        let Some(r) = mark.seq_write_required() else {
            continue;
        };
        match groups.iter_mut().find(|(req, _)| *req == r) {
            Some((_, names)) => names.push(mark.to_string()),
            None => groups.push((r, vec![mark.to_string()])),
        }
    }
    groups.sort_by(|a, b| a.0.total_cmp(&b.0));
    groups
        .iter()
        .map(|(r, names)| format!("{} ({} MB/s)", names.join("/"), fmt_plain(*r)))
        .collect::<Vec<_>>()
        .join(", ")
}
