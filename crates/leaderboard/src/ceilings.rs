//! What cannot be: the most a result's bus, host and kind of device can
//! carry, and what happens to a figure beyond it.
//!
//! - Beyond every bus its kind of device has (an SD card at 10 GB/s, a SATA
//!   disk at 2 GB/s): **422**, refused. No host could have measured it.
//! - Beyond what its own host and bus carry, by 10% (the rates are worked
//!   out from clocks, and MiB/MB rounding): stored, **flagged**, never
//!   ranked. That is
//!   - the bus of the report's timing mode and clock (debugfs `ios`), a USB
//!     link's speed, a PCIe link's width and rate;
//!   - the published 4 KiB IOPS ceilings of the Raspberry Pi SD slots (the
//!     host's controller, or else the board's family when the card sits in
//!     the board's own slot), with half as much again as headroom: these
//!     are the best any card reached in published measurements, not limits
//!     of the silicon, and a new card may beat them a little;
//!   - on a board the server knows ([`crate::board::Buses`]), never more
//!     than that board's own bus of the device's kind carries, whatever
//!     link speed the report declares above it: a Pi 4's USB 3 port is
//!     5 Gb/s and it has no PCIe slot, a Pi 3 has USB 2 only, and an SD
//!     card's registers never lift a ceiling beyond what the board's slot
//!     runs. A device behind a USB bridge meets the board's USB port;
//!     a kind without link facts (NVMe without `pcie_link_*`, `other`)
//!     meets the board's fastest bus for that kind;
//!   - on a board it does not know, when the report carries no host facts,
//!     the fastest bus its kind has: UHS-I SDR104 (104 MB/s) for an SD card
//!     unless its registers claim more (V60/V90 need UHS-II; an SD 7 or 8
//!     card may be SD Express), HS400 (400 MB/s) for eMMC, the link speed
//!     or USB4 for USB, SATA's 6 Gb/s, PCIe 5.0 x4 for NVMe, PCIe 5.0 x16
//!     for any other kind.
//!
//! IOPS and KiB/s figures are compared as 4 KiB transfers.

use storage_scoring::figure::Figure;
use storage_scoring::input::as_mb_s;
use storage_scoring::schema::{
    BoardSlot, Device, DeviceKind, HostIos, MEASUREMENT_KEYS, Measurements, Medium, Transport,
};
use storage_scoring::verdict::{host_iops_ceiling, sd_bus_ceiling};

use crate::board::{Board, Buses, SdHost};
use crate::error::ApiError;

/// Over a bus ceiling by more than this share is impossible, not noise.
pub const BUS_MARGIN: f64 = 1.10;

/// Headroom over a published per-host IOPS figure before a result is
/// flagged: the figures are the best cards measured, not the host's limit.
pub const HOST_IOPS_HEADROOM: f64 = 1.5;

/// The bus a device sits on: its mode in words, and the most it can carry.
#[derive(Debug, Clone, PartialEq)]
pub struct Bus {
    /// `High Speed`, `UHS-I SDR104`, `USB 480 Mb/s`, `PCIe 8.0 GT/s x4`, or the kind.
    pub label: String,
    /// The raw rate of the link in MB/s (10^6 B/s), when the report tells.
    pub ceiling_mb_s: Option<f64>,
    /// How the ceiling was worked out, for the flag's reason.
    pub how: String,
}

impl Bus {
    pub fn of(device: Option<&Device>) -> Bus {
        let unknown = |label: &str| Bus { label: label.to_owned(), ceiling_mb_s: None, how: String::new() };
        let Some(device) = device else { return unknown("unknown bus") };
        if let Some(ceiling) = host_of(device).and_then(sd_bus_ceiling) {
            return Bus {
                label: ceiling.mode.to_owned(),
                ceiling_mb_s: Some(ceiling.raw_mb_s),
                how: format!(
                    "the {} bus at {} MHz, {}-bit{}",
                    ceiling.mode,
                    trim_number(ceiling.clock_hz as f64 / 1e6),
                    ceiling.bus_width_bits,
                    if ceiling.ddr { " DDR" } else { "" }
                ),
            };
        }
        if let Some(mbps) = device.usb.as_ref().and_then(|u| u.speed_mbps) {
            return Bus {
                label: format!("USB {mbps} Mb/s"),
                ceiling_mb_s: Some(f64::from(mbps) / 8.0),
                how: format!("a USB link at {mbps} Mb/s"),
            };
        }
        if let Some(nvme) = device.nvme.as_ref() {
            let speed = nvme.pcie_link_speed.as_deref().unwrap_or("").trim();
            let gts = speed.split_whitespace().next().and_then(|t| t.parse::<f64>().ok());
            let width = nvme.pcie_link_width.unwrap_or(0);
            if let (Some(gts), true) = (gts.filter(|g| g.is_finite() && *g > 0.0), width > 0) {
                // 8b/10b up to 5 GT/s (PCIe 1–2), 128b/130b from 8 GT/s (PCIe 3+).
                let encoding = if gts < 8.0 { 0.8 } else { 128.0 / 130.0 };
                return Bus {
                    label: format!("PCIe {} GT/s x{width}", trim_number(gts)),
                    ceiling_mb_s: Some(gts * 1e9 * encoding * f64::from(width) / 8.0 / 1e6),
                    how: format!("a PCIe link at {} GT/s x{width}", trim_number(gts)),
                };
            }
        }
        unknown(device.kind.as_str())
    }
}

/// The host's view of an SD or eMMC bus, when the report read it.
fn host_of(device: &Device) -> Option<&HostIos> {
    device.sd.as_ref().and_then(|s| s.host.as_ref()).or(device.emmc.as_ref().and_then(|e| e.host.as_ref()))
}

fn trim_number(v: f64) -> String {
    let text = format!("{v:.1}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The fastest bus a device of this kind could have been on, for a report
/// without host facts: the kind's from the medium and transport tables,
/// narrowed for an SD card by what its registers claim.
fn fastest_bus(device: &Device) -> Option<(f64, String)> {
    if device.kind.medium == Medium::Sd {
        let sd = device.sd.as_ref();
        let spec = sd.and_then(|s| s.scr.as_ref()).map(|s| s.spec_version.as_str()).unwrap_or("");
        let major = spec.split('.').next().and_then(|m| m.parse::<u32>().ok()).unwrap_or(0);
        let video = sd.and_then(|s| s.ssr.as_ref()).map_or(0, |s| s.video_class);
        return Some(if major >= 8 {
            (3938.0, "SD Express with PCIe 4.0 x2, which an SD 8 card may have".to_owned())
        } else if major >= 7 {
            (985.0, "SD Express with PCIe 3.0 x1, which an SD 7 card may have".to_owned())
        } else if video >= 60 {
            (624.0, format!("UHS-III, the fastest bus a V{video} card may have"))
        } else {
            (104.0, "UHS-I SDR104, the fastest bus of an SD card that claims no UHS-II".to_owned())
        });
    }
    Some(match device.kind.fastest_bus() {
        Some(bus) => (bus.mb_s, bus.what.to_owned()),
        // PCIe 5.0 x16: no storage device of any kind is on a faster bus.
        None => (63_015.0, format!("PCIe 5.0 x16, the fastest bus any {} device could be on", device.kind.as_str())),
    })
}

/// The bus of a known board that a device of this kind sits on.
fn board_bus(device: &Device, buses: &Buses) -> (f64, &'static str) {
    if device.usb.is_some() {
        // Behind a USB bridge, whatever the kind of the drive in it.
        return buses.usb;
    }
    match device.kind.transport {
        Transport::Usb => buses.usb,
        Transport::Virtio | Transport::Loop => buses.fastest(),
        Transport::Native | Transport::Pcie => match device.kind.medium.facts().board_slot {
            BoardSlot::SdSlot => buses.sd,
            BoardSlot::EmmcElseSdSlot => buses.emmc.unwrap_or(buses.sd),
            BoardSlot::PcieElseUsb => buses.pcie.unwrap_or(buses.usb),
            BoardSlot::FasterOfPcieAndUsb => match buses.pcie {
                Some(pcie) if pcie.0 > buses.usb.0 => pcie,
                _ => buses.usb,
            },
            BoardSlot::Fastest => buses.fastest(),
        },
    }
}

/// The most a result's bus can carry, and how that was worked out: the
/// report's own link, never above its board's bus for the kind; the
/// board's bus when the report names none; else the fastest of the kind.
pub fn ceiling(device: &Device, bus: &Bus, board: &Board) -> Option<(f64, String)> {
    let declared = bus.ceiling_mb_s.map(|c| (c, bus.how.clone()));
    let boards = board.buses.as_ref().map(|buses| {
        let (mb_s, what) = board_bus(device, buses);
        (mb_s, format!("{what} on the {}", board.model))
    });
    match (declared, boards) {
        (Some(declared), Some(boards)) => Some(if boards.0 < declared.0 { boards } else { declared }),
        (Some(one), None) | (None, Some(one)) => Some(one),
        (None, None) => fastest_bus(device).map(|(c, what)| (c, format!("{what} (the report names no host bus)"))),
    }
}

/// 422 for a figure beyond every bus of its kind.
pub fn beyond_any_bus(device: Option<&Device>, m: &Measurements) -> Result<(), ApiError> {
    let Some(device) = device else { return Ok(()) };
    let Some(bus) = device.kind.fastest_bus().filter(|bus| bus.refuses_beyond) else { return Ok(()) };
    let (ceiling, what) = (bus.mb_s, bus.what);
    for key in MEASUREMENT_KEYS {
        let Some(v) = m.get(key) else { continue };
        let rate = as_mb_s(key, v);
        if rate > ceiling * BUS_MARGIN {
            return Err(ApiError::unprocessable(format!(
                "measurements.{key}: {} is {rate:.1} MB/s, beyond the {ceiling} MB/s of {what}, so no {} device measured it; correct the figure",
                number(v),
                device.kind.as_str()
            )));
        }
    }
    Ok(())
}

/// The flags of figures beyond what the result's own host and bus carry.
pub fn flags(device: Option<&Device>, bus: &Bus, board: &Board, m: &Measurements) -> Vec<String> {
    let Some(device) = device else { return Vec::new() };
    let mut reasons = Vec::new();
    if let Some((ceiling, how)) = ceiling(device, bus, board) {
        for key in MEASUREMENT_KEYS {
            let Some(v) = m.get(key) else { continue };
            let rate = as_mb_s(key, v);
            if rate > ceiling * BUS_MARGIN {
                reasons.push(format!(
                    "impossible figure: {key} {} is {rate:.1} MB/s, beyond the {ceiling:.1} MB/s that {how} carries",
                    number(v)
                ));
            }
        }
    }
    if let Some(host) = host_iops(device, board) {
        for (key, per_io, read) in [
            (Figure::RandReadQd64.key(), 1.0, true),
            (Figure::RandWriteQd64.key(), 1.0, false),
            (Figure::RandRead4kQd1.key(), 4.0, true),
            (Figure::RandWrite4kQd1.key(), 4.0, false),
        ] {
            let Some(v) = m.get(key) else { continue };
            let iops = v / per_io;
            let published = if read { host.read_iops } else { host.write_iops };
            let limit = published * HOST_IOPS_HEADROOM;
            if iops > limit {
                reasons.push(format!(
                    "impossible figure: {key} {} is {} IOPS, beyond what the {} reaches: at most {} {} IOPS in published measurements, flagged above {} (source: {})",
                    number(v),
                    number(iops.round()),
                    host.host,
                    number(published),
                    if read { "read" } else { "write" },
                    number(limit.round()),
                    host.source
                ));
            }
        }
    }
    reasons
}

/// A host's published 4 KiB IOPS ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct HostIops {
    pub host: String,
    pub read_iops: f64,
    pub write_iops: f64,
    pub source: &'static str,
}

/// The ceiling of the SD slot the card sat in: from the host's controller
/// when the report read it, else from the board's family when the card is
/// an SD card in the board's own slot (not behind a USB reader).
pub fn host_iops(device: &Device, board: &Board) -> Option<HostIops> {
    if device.kind != DeviceKind::SD || device.usb.is_some() {
        return None;
    }
    let host = device.sd.as_ref().and_then(|s| s.host.as_ref());
    let controller = host.and_then(|h| h.controller.as_deref());
    let timing = host.and_then(|h| h.timing.clone());
    let known = |ios: &HostIos| {
        host_iops_ceiling(ios).map(|c| HostIops {
            host: c.host.to_owned(),
            read_iops: c.read_iops,
            write_iops: c.write_iops,
            source: c.source,
        })
    };
    if controller.is_some() {
        if let Some(found) = host.and_then(known) {
            return Some(found);
        }
    }
    match (board.sd_host?, controller) {
        // A controller named but not one of the Pi's: nothing is known.
        (_, Some(c)) if !c.contains("bcm2712") && !c.contains("brcm,") => None,
        (SdHost::Sdhost, _) => {
            known(&HostIos { controller: Some("brcm,bcm2835-sdhost".into()), timing, ..HostIos::default() })
        }
        (SdHost::Emmc2, _) => {
            known(&HostIos { controller: Some("brcm,bcm2711-emmc2".into()), timing, ..HostIos::default() })
        }
        (SdHost::Pi5, _) => Some(HostIops {
            host: "Raspberry Pi 5 SD slot (SDR104, command queueing on or off)".to_owned(),
            read_iops: 7438.0,
            write_iops: 4119.0,
            source: "bretmlw/sbc-benchmarks, Raspberry Pi's official card review data: 7 cards at SDR104, the best \
                     4197-7438 read IOPS with command queueing and 767-4119 write IOPS without; \
                     raspberrypi/linux#6046 (command queueing on the Pi 5)",
        }),
    }
}

/// A figure as written in a reason: whole numbers without decimals.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::{SdInfo, SdScr, SdSsr, UsbInfo};

    fn sd(host: Option<HostIos>) -> Device {
        Device { kind: DeviceKind::SD, sd: Some(SdInfo { host, ..SdInfo::default() }), ..Device::default() }
    }

    fn figures(pairs: &[(&str, f64)]) -> Measurements {
        let mut m = Measurements::default();
        for (k, v) in pairs {
            m.set(k, *v);
        }
        m
    }

    #[test]
    fn the_pi4_slot_caps_iops_even_without_host_facts() {
        let pi4 = Board::of(Some("Raspberry Pi 4 Model B Rev 1.4"));
        let ddr50 = HostIos { clock_hz: Some(50_000_000), timing: Some("sd uhs DDR50".into()), ..HostIos::default() };
        let poisoned = figures(&[("rand_read_4k_qd64_iops", 12000.0), ("rand_write_4k_qd64_iops", 12000.0)]);
        for device in [sd(Some(ddr50.clone())), sd(None)] {
            let reasons = flags(Some(&device), &Bus::of(Some(&device)), &pi4, &poisoned);
            assert_eq!(reasons.len(), 2, "{reasons:?}");
            assert!(reasons[0].starts_with("impossible figure: rand_read_4k_qd64_iops 12000 is 12000 IOPS, beyond what the Raspberry Pi 4 SD slot"), "{}", reasons[0]);
            assert!(
                reasons[1].contains("at most 1203 write IOPS in published measurements, flagged above 1805"),
                "{}",
                reasons[1]
            );
        }
        let genuine = figures(&[("rand_read_4k_qd64_iops", 3000.0), ("rand_write_4k_qd64_iops", 1100.0)]);
        let device = sd(Some(ddr50));
        assert!(flags(Some(&device), &Bus::of(Some(&device)), &pi4, &genuine).is_empty());
        // Behind a USB reader, the Pi's slot says nothing.
        let mut reader = sd(None);
        reader.usb = Some(UsbInfo { speed_mbps: Some(5000), ..UsbInfo::default() });
        assert!(flags(Some(&reader), &Bus::of(Some(&reader)), &pi4, &poisoned).is_empty());
    }

    #[test]
    fn without_host_facts_the_fastest_bus_of_the_kind() {
        let other = Board::of(Some("Some PC"));
        let card = sd(None);
        let fast = figures(&[("seq_write_mb_s", 200.0)]);
        let reasons = flags(Some(&card), &Bus::of(Some(&card)), &other, &fast);
        assert!(reasons[0].contains("beyond the 104.0 MB/s that UHS-I SDR104"), "{reasons:?}");
        // A V90 card may be UHS-II: 200 MB/s is possible.
        let mut v90 = sd(None);
        v90.sd.as_mut().unwrap().ssr = Some(SdSsr { video_class: 90, ..SdSsr::default() });
        assert!(flags(Some(&v90), &Bus::of(Some(&v90)), &other, &fast).is_empty());
        let mut express = sd(None);
        express.sd.as_mut().unwrap().scr = Some(SdScr { spec_version: "8.xx".into(), ..SdScr::default() });
        assert!(
            flags(Some(&express), &Bus::of(Some(&express)), &other, &figures(&[("seq_read_mib_s", 1500.0)])).is_empty()
        );
    }

    /// The impossible cards: each is flagged, so none is ranked.
    #[test]
    fn a_known_board_caps_what_a_report_declares() {
        let pi4 = Board::of(Some("Raspberry Pi 4 Model B Rev 1.4"));
        let pi5 = Board::of(Some("Raspberry Pi 5 Model B Rev 1.0"));
        let usb = |mbps: u32| Device {
            kind: DeviceKind::USB,
            usb: Some(UsbInfo { speed_mbps: Some(mbps), ..UsbInfo::default() }),
            ..Device::default()
        };
        let fast = figures(&[("seq_read_mib_s", 1500.0)]);
        // A USB stick at 1500 MiB/s on a Pi 4, on a 20 Gb/s link it declares.
        let stick = usb(20_000);
        let reasons = flags(Some(&stick), &Bus::of(Some(&stick)), &pi4, &fast);
        assert!(reasons[0].contains("beyond the 625.0 MB/s that USB 3.0 at 5 Gb/s"), "{reasons:?}");
        // The same stick on a PC: its 20 Gb/s link carries it.
        assert!(flags(Some(&stick), &Bus::of(Some(&stick)), &Board::of(Some("Some PC")), &fast).is_empty());
        // NVMe without link facts: a Pi 4 has no PCIe slot, a Pi 5 one lane.
        let nvme = Device { kind: DeviceKind::NVME, ..Device::default() };
        let iops = figures(&[("rand_read_4k_qd64_iops", 99_000_000.0)]);
        for board in [&pi4, &pi5, &Board::of(None)] {
            assert_eq!(flags(Some(&nvme), &Bus::of(Some(&nvme)), board, &iops).len(), 1, "{}", board.model);
        }
        let ssd = figures(&[("seq_read_mib_s", 800.0)]);
        assert!(flags(Some(&nvme), &Bus::of(Some(&nvme)), &pi5, &ssd).is_empty(), "Gen 3 x1 carries 800 MiB/s");
        assert_eq!(flags(Some(&nvme), &Bus::of(Some(&nvme)), &pi4, &ssd).len(), 1);
        // `other`: the board's fastest bus, or PCIe 5.0 x16.
        let other = Device { kind: DeviceKind::OTHER, ..Device::default() };
        assert_eq!(flags(Some(&other), &Bus::of(Some(&other)), &Board::of(None), &iops).len(), 1);
        assert_eq!(flags(Some(&other), &Bus::of(Some(&other)), &pi4, &ssd).len(), 1);
        // An SD card that claims SD Express on an Orange Pi 5: the slot is UHS-I.
        let mut express = sd(None);
        express.sd.as_mut().unwrap().scr = Some(SdScr { spec_version: "8.xx".into(), ..SdScr::default() });
        let opi5 = Board::of(Some("Orange Pi 5"));
        let reasons = flags(Some(&express), &Bus::of(Some(&express)), &opi5, &figures(&[("seq_read_mib_s", 900.0)]));
        assert!(
            reasons[0].contains("104.0 MB/s that the board's SD slot at UHS-I SDR104 on the Orange Pi 5"),
            "{reasons:?}"
        );
    }

    #[test]
    fn beyond_any_bus_of_the_kind_is_refused() {
        let card = sd(None);
        let e = beyond_any_bus(Some(&card), &figures(&[("seq_write_mb_s", 10_000.0)])).unwrap_err();
        assert_eq!(e.status.as_u16(), 422);
        assert!(
            e.message
                .starts_with("measurements.seq_write_mb_s: 10000 is 10000.0 MB/s, beyond the 3938 MB/s of SD Express"),
            "{}",
            e.message
        );
        let sata = Device { kind: DeviceKind::SATA, ..Device::default() };
        assert!(beyond_any_bus(Some(&sata), &figures(&[("seq_read_mib_s", 540.0)])).is_ok());
        assert!(beyond_any_bus(Some(&sata), &figures(&[("seq_read_mib_s", 2000.0)])).is_err());
        let nvme = Device { kind: DeviceKind::NVME, ..Device::default() };
        assert!(beyond_any_bus(Some(&nvme), &figures(&[("seq_read_mib_s", 7000.0)])).is_ok());
        // NVMe is only flagged beyond PCIe 5.0 x4: add-in cards have wider links.
        assert!(beyond_any_bus(Some(&nvme), &figures(&[("seq_read_mib_s", 20_000.0)])).is_ok());
        let ufs = Device { kind: DeviceKind::UFS, ..Device::default() };
        assert!(beyond_any_bus(Some(&ufs), &figures(&[("seq_read_mib_s", 4000.0)])).is_ok());
        let e = beyond_any_bus(Some(&ufs), &figures(&[("seq_read_mib_s", 12_000.0)])).unwrap_err();
        assert!(e.message.contains("UFS 5.0") && e.message.contains("no ufs device"), "{}", e.message);
    }
}
