//! The verdict's unit tests: boundaries, claims, margins, host limits.

use std::collections::BTreeSet;

use super::wording::{fmt_clock, fmt_measured, fmt_plain};
use super::*;
use crate::schema::{Check, DeviceKind, Figure, HostIos, SdInfo, SdSsr, UsbInfo};

fn meas(seq: Option<f64>, rr: Option<f64>, rw: Option<f64>) -> Measurements {
    let mut m = Measurements::default();
    m[Figure::SeqWrite] = seq;
    m[Figure::RandReadQd64] = rr;
    m[Figure::RandWriteQd64] = rw;
    m
}

fn ssr(app: u8, speed: u8, video: u8, uhs: u8) -> SdSsr {
    SdSsr { app_class: app, speed_class: speed, video_class: video, uhs_grade: uhs, ..SdSsr::default() }
}

fn sd_card(ssr: SdSsr, host: Option<HostIos>) -> Device {
    let class_label = Some(class_label(ssr.app_class, ssr.speed_class, ssr.video_class, ssr.uhs_grade));
    Device {
        kind: DeviceKind::SD,
        sd: Some(SdInfo { ssr: Some(ssr), class_label, host, ..SdInfo::default() }),
        ..Device::default()
    }
}

fn host(clock_hz: u64, timing: &str) -> HostIos {
    HostIos { clock_hz: Some(clock_hz), bus_width_bits: Some(4), timing: Some(timing.to_owned()), ..HostIos::default() }
}

/// Every requirement of every defined mark, on both sides of its boundary.
#[test]
fn every_boundary_both_sides() {
    for family in Family::ALL {
        for &mark in family.marks() {
            for r in mark.requirements() {
                // Start from figures that meet every mark, then move one.
                let mut m = meas(Some(1000.0), Some(1e6), Some(1e6));
                let below = if r.unit == "IOPS" { r.required - 1.0 } else { r.required - 0.01 };
                m.set(r.key, below);
                assert_eq!(mark.met_by(&m), Some(false), "{mark} {} at {below}", r.key);
                m.set(r.key, r.required);
                assert_eq!(mark.met_by(&m), Some(true), "{mark} {} at {}", r.key, r.required);
            }
        }
    }
}

#[test]
fn named_boundaries() {
    use ClassMark::*;
    let seq = |v| meas(Some(v), Some(1e6), Some(1e6));
    let cases: &[(ClassMark, f64, f64)] = &[
        (Speed(2), 1.99, 2.0),
        (Speed(4), 3.99, 4.0),
        (Speed(6), 5.99, 6.0),
        (Speed(10), 9.99, 10.0),
        (Uhs(1), 9.99, 10.0),
        (Uhs(3), 29.99, 30.0),
        (Video(6), 5.99, 6.0),
        (Video(10), 9.99, 10.0),
        (Video(30), 29.99, 30.0),
        (Video(60), 59.99, 60.0),
        (Video(90), 89.99, 90.0),
        (App(1), 9.99, 10.0),
        (App(2), 9.99, 10.0),
    ];
    for &(mark, fail, pass) in cases {
        assert_eq!(mark.met_by(&seq(fail)), Some(false), "{mark} at {fail} MB/s");
        assert_eq!(mark.met_by(&seq(pass)), Some(true), "{mark} at {pass} MB/s");
    }
    // A1: 1500 read / 500 write IOPS; A2: 4000 / 2000.
    let iops = |rr, rw| meas(Some(10.0), Some(rr), Some(rw));
    assert_eq!(App(1).met_by(&iops(1499.0, 500.0)), Some(false));
    assert_eq!(App(1).met_by(&iops(1500.0, 499.0)), Some(false));
    assert_eq!(App(1).met_by(&iops(1500.0, 500.0)), Some(true));
    assert_eq!(App(2).met_by(&iops(3999.0, 2000.0)), Some(false));
    assert_eq!(App(2).met_by(&iops(4000.0, 1999.0)), Some(false));
    assert_eq!(App(2).met_by(&iops(4000.0, 2000.0)), Some(true));
    // Missing figures: unknown unless a measured one already fails.
    assert_eq!(App(1).met_by(&meas(Some(10.0), Some(1500.0), None)), None);
    assert_eq!(App(1).met_by(&meas(Some(10.0), Some(1499.0), None)), Some(false));
    assert_eq!(Speed(10).met_by(&meas(Some(f64::NAN), None, None)), None);
}

#[test]
fn measured_label_is_the_highest_mark_per_figure() {
    let label = |m: Measurements| verdict(None, &m).measured;
    assert_eq!(label(meas(Some(20.0), Some(3000.0), Some(800.0))).as_deref(), Some("A1 Class 10 V10 U1"));
    assert_eq!(label(meas(Some(95.0), Some(5000.0), Some(2500.0))).as_deref(), Some("A2 Class 10 V90 U3"));
    assert_eq!(label(meas(Some(7.0), Some(5000.0), Some(2500.0))).as_deref(), Some("Class 6 V6"));
    assert_eq!(label(meas(Some(1.5), Some(100.0), Some(10.0))).as_deref(), Some("Class 0"));
    // IOPS not measured: the A part is left out.
    assert_eq!(label(meas(Some(30.0), None, None)).as_deref(), Some("Class 10 V30 U3"));
    assert_eq!(label(meas(None, None, None)), None);
}

/// An SD card whose host is shown running its command queue.
fn sd_card_with_cq(ssr: SdSsr) -> Device {
    let host = HostIos { card_command_queue: Some(true), ..HostIos::default() };
    sd_card(ssr, Some(host))
}

#[test]
fn claims_a2_measures_a1() {
    let device = sd_card_with_cq(ssr(2, 10, 30, 3));
    let m = meas(Some(20.0), Some(3000.0), Some(1480.0));
    let v = verdict(Some(&device), &m);
    assert_eq!(v.claimed.as_deref(), Some("A2 Class 10 V30 U3"));
    assert_eq!(v.measured.as_deref(), Some("A1 Class 10 V10 U1"));
    // A1 shown passing (not claimed), A2 failing (claimed).
    let a1: Vec<&Check> = v.checks.iter().filter(|c| c.mark == "A1").collect();
    assert_eq!(a1.len(), 3);
    assert!(a1.iter().all(|c| c.pass == Some(true) && !c.claimed));
    let a2: Vec<&Check> = v.checks.iter().filter(|c| c.mark == "A2").collect();
    assert_eq!(a2.len(), 3);
    assert!(a2.iter().all(|c| c.claimed));
    let a2_write = a2.iter().find(|c| c.key == RAND_WRITE).unwrap();
    assert_eq!(a2_write.requirement, "random write ≥ 2000 IOPS");
    assert_eq!((a2_write.required, a2_write.measured, a2_write.pass), (2000.0, Some(1480.0), Some(false)));
    assert_eq!(a2.iter().find(|c| c.key == SEQ_WRITE).unwrap().pass, Some(true));
    // V: V10 (measured), V30 (claimed) and nothing above the claim.
    let v_marks: Vec<&str> = v.checks.iter().filter(|c| c.mark.starts_with('V')).map(|c| c.mark.as_str()).collect();
    assert_eq!(v_marks, ["V10", "V30"]);
    let marks: BTreeSet<&str> = v.checks.iter().map(|c| c.mark.as_str()).collect();
    assert_eq!(marks, BTreeSet::from(["A1", "A2", "Class 10", "V10", "V30", "U1", "U3"]));
    assert_eq!(
        v.summary.as_deref(),
        Some(
            "claims A2 Class 10 V30 U3; measures A1 Class 10 V10 U1; below its class under this workload: random read \
             3000 IOPS < 4000 required for A2, random write 1480 IOPS < 2000 required for A2, sequential write 20 MB/s \
             < 30 required for V30 and U3"
        )
    );
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

#[test]
fn meets_its_claim() {
    let device = sd_card(ssr(1, 10, 0, 1), None);
    let v = verdict(Some(&device), &meas(Some(12.0), Some(2000.0), Some(600.0)));
    assert_eq!(v.claimed.as_deref(), Some("A1 Class 10 U1"));
    assert_eq!(v.summary.as_deref(), Some("meets its claimed class A1 Class 10 U1; measures A1 Class 10 V10 U1"));
    // The next marks up are shown, failing, unclaimed.
    let a2 = v.checks.iter().filter(|c| c.mark == "A2").collect::<Vec<_>>();
    assert!(!a2.is_empty() && a2.iter().all(|c| !c.claimed));
    assert!(v.checks.iter().any(|c| c.mark == "U3" && c.pass == Some(false)));
    assert!(v.checks.iter().filter(|c| c.claimed).all(|c| c.pass == Some(true)));

    // Exactly as claimed: no second clause.
    let device = sd_card(ssr(0, 10, 10, 1), None);
    let v = verdict(Some(&device), &meas(Some(12.0), Some(100.0), Some(10.0)));
    assert_eq!(v.summary.as_deref(), Some("meets its claimed class Class 10 V10 U1"));
}

#[test]
fn no_claim() {
    let m = meas(Some(20.0), Some(3000.0), Some(800.0));
    let device = sd_card(ssr(0, 0, 0, 0), None);
    let v = verdict(Some(&device), &m);
    // An all-zero SSR is "no class", never "Class 0".
    assert_eq!(v.claimed, None);
    assert_eq!(v.summary.as_deref(), Some("the card reports no class; measures A1 Class 10 V10 U1"));
    assert!(v.checks.iter().all(|c| !c.claimed));
    // SD card whose SSR could not be read.
    let unread = Device { kind: DeviceKind::SD, sd: Some(SdInfo::default()), ..Device::default() };
    let v = verdict(Some(&unread), &m);
    assert_eq!(v.claimed, None);
    assert!(
        v.summary.unwrap().starts_with("the card's claimed class is unknown (its SD Status was not read); measures")
    );
    let v = verdict(None, &m);
    assert!(v.summary.unwrap().starts_with("no identification was given"));
    let nvme = Device { kind: DeviceKind::NVME, ..Device::default() };
    let v = verdict(Some(&nvme), &m);
    assert_eq!(
        v.summary.as_deref(),
        Some("this nvme device carries no SD class to check; measures A1 Class 10 V10 U1")
    );
}

#[test]
fn claim_from_label_when_no_ssr() {
    let device = Device {
        kind: DeviceKind::SD,
        sd: Some(SdInfo { class_label: Some("A2 Class 10 V30 U3".into()), ..SdInfo::default() }),
        ..Device::default()
    };
    let v = verdict(Some(&device), &meas(Some(35.0), Some(5000.0), Some(2500.0)));
    assert_eq!(v.summary.as_deref(), Some("meets its claimed class A2 Class 10 V30 U3"));
}

#[test]
fn undefined_ssr_values_are_noted_not_checked() {
    let device = sd_card(ssr(0, 10, 45, 2), None);
    let v = verdict(Some(&device), &meas(Some(12.0), None, None));
    assert!(v.notes.iter().any(|n| n.contains("video speed class 45 is not one the SD specification defines")));
    assert!(v.notes.iter().any(|n| n.contains("UHS speed grade 2")));
    assert!(!v.checks.iter().any(|c| c.claimed && c.mark != "Class 10"));
}

#[test]
fn missing_figures_read_only_run() {
    let device = sd_card(ssr(1, 10, 0, 1), None);
    let v = verdict(Some(&device), &meas(None, Some(3000.0), None));
    assert_eq!(v.measured, None);
    let note = v.notes.iter().find(|n| n.starts_with("not measured:")).expect("a note on missing figures");
    assert_eq!(
        note,
        "not measured: seq_write_mb_s, rand_write_4k_qd64_iops: the checks for A1, Class 10 and U1 could not be made, \
         and the measured class leaves out the A mark, the speed class, the V mark and the U mark"
    );
    let seq_checks: Vec<&Check> = v.checks.iter().filter(|c| c.key == SEQ_WRITE).collect();
    assert!(!seq_checks.is_empty());
    assert!(seq_checks.iter().all(|c| c.pass.is_none() && c.measured.is_none()));
    assert_eq!(
        v.summary.as_deref(),
        Some(
            "claims A1 Class 10 U1; the figures a class needs were not measured; A1, Class 10 and U1 could not be \
             checked (rand_write_4k_qd64_iops and seq_write_mb_s not measured); every claimed requirement that could \
             be judged is met"
        )
    );
}

#[test]
fn high_speed_bus_caps_u3_v30() {
    let mut h = host(50_000_000, "sd high-speed");
    h.card_command_queue = Some(true);
    let device = sd_card(ssr(2, 10, 30, 3), Some(h));
    let v = verdict(Some(&device), &meas(Some(21.5), Some(4800.0), Some(2400.0)));
    assert!(
        v.notes.contains(
            &"the host's 50 MHz High Speed bus (4-bit) caps sequential speed near 23 MB/s: V30/U3 (30 MB/s) cannot be reached on this host"
                .to_owned()
        ),
        "{:?}",
        v.notes
    );
    // The host, not the card, is short of V30/U3: no fail, a reason.
    let v30 = v.checks.iter().find(|c| c.mark == "V30").unwrap();
    assert_eq!(v30.pass, None);
    assert!(v30.why.as_deref().unwrap().contains("cannot carry the requirement"), "{:?}", v30.why);
    let summary = v.summary.unwrap();
    assert_eq!(
        summary,
        "claims A2 Class 10 V30 U3; measures A2 Class 10 V10 U1; not decided: sequential write for V30 and U3 (21.5 \
         MB/s against 30: the host's 50 MHz High Speed bus (4-bit) caps sequential speed near 23 MB/s); every \
         claimed requirement that could be judged is met"
    );
}

#[test]
fn fast_bus_with_queue_makes_no_note() {
    let mut h = host(208_000_000, "sd uhs SDR104");
    h.card_command_queue = Some(true);
    let device = sd_card(ssr(2, 10, 30, 3), Some(h));
    let v = verdict(Some(&device), &meas(Some(20.0), Some(4800.0), Some(2400.0)));
    assert!(v.notes.is_empty(), "{:?}", v.notes);
    let s = v.summary.unwrap();
    assert!(!s.contains("host"), "{s}");
    assert!(s.contains("below its class under this workload: sequential write 20 MB/s < 30 required for V30 and U3"));
}

#[test]
fn at_the_ceiling_without_claim() {
    let device = sd_card(ssr(0, 0, 0, 0), Some(host(50_000_000, "sd high-speed")));
    let v = verdict(Some(&device), &meas(Some(22.0), None, None));
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "the measured sequential write (22 MB/s) is at the ceiling of the host's 50 MHz High Speed bus"
        )),
        "{:?}",
        v.notes
    );
}

#[test]
fn legacy_one_bit_bus_caps_iops() {
    let mut h = host(25_000_000, "legacy");
    h.bus_width_bits = Some(1);
    let device = sd_card(ssr(1, 10, 0, 1), Some(h));
    let v = verdict(Some(&device), &meas(Some(2.8), Some(700.0), Some(400.0)));
    // 25 MHz × 1 bit / 8 = 3.125 MB/s raw, × 0.92 = 2.875 → "2.9"; /4096 B → 702 IOPS.
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "the host's 25 MHz default speed bus (1-bit) caps sequential speed near 2.9 MB/s: A1/Class 10/U1 (10 MB/s)"
        )),
        "{:?}",
        v.notes
    );
    assert!(
        v.notes.iter().any(|n| n.starts_with(
            "4 KiB transfers over the host's 25 MHz default speed bus top out near 702 IOPS: A1 (1500 random read IOPS)"
        )),
        "{:?}",
        v.notes
    );
    // Random write 400 against A1's 500 is within reach of the bus and fails.
    let a1_write = v.checks.iter().find(|c| c.mark == "A1" && c.key == RAND_WRITE).unwrap();
    assert_eq!(a1_write.pass, Some(false));
    let a1_read = v.checks.iter().find(|c| c.mark == "A1" && c.key == RAND_READ).unwrap();
    assert_eq!(a1_read.pass, None);
}

#[test]
fn a2_iops_need_the_queue_shown_running() {
    // The host has a CQ engine (caps2), but nothing shows the card using it.
    let mut h = host(208_000_000, "sd uhs SDR104");
    h.command_queue = Some(true);
    let device = sd_card(ssr(2, 10, 30, 3), Some(h));
    let v = verdict(Some(&device), &meas(Some(60.0), Some(3000.0), Some(1200.0)));
    assert!(v.notes.iter().any(|n| n.starts_with("the card claims A2, whose random IOPS need the card's command queue and cache, but command queueing is not shown active")), "{:?}", v.notes);
    for c in v.checks.iter().filter(|c| c.mark == "A2" && c.key != SEQ_WRITE) {
        assert_eq!(c.pass, None, "{c:?}");
        assert!(c.why.as_deref().unwrap().ends_with("not verifiable on this host"), "{c:?}");
    }
    let s = v.summary.unwrap();
    assert!(s.contains("not decided: random read for A2 (3000 IOPS against 4000"), "{s}");
    assert!(!s.contains("below its class"), "{s}");
    // A figure that clears A2 passes whatever the queue.
    let v = verdict(Some(&device), &meas(Some(60.0), Some(5000.0), Some(2400.0)));
    assert!(v.checks.iter().filter(|c| c.mark == "A2").all(|c| c.pass == Some(true)), "{:?}", v.checks);
    // Without root there is no debugfs: the reason says so.
    let v = verdict(Some(&sd_card(ssr(2, 10, 30, 3), None)), &meas(Some(60.0), Some(3000.0), Some(1200.0)));
    assert!(v.notes.iter().any(|n| n.contains("unknown without root")), "{:?}", v.notes);
}

#[test]
fn published_host_ceilings() {
    // A Pi 4 at DDR50: no published run passes 3200 read IOPS, so A2's 4000
    // is not verifiable there even with command queueing shown.
    let mut h = host(50_000_000, "sd uhs DDR50");
    h.controller = Some("brcm,bcm2711-emmc2".into());
    h.card_command_queue = Some(true);
    let device = sd_card(ssr(2, 10, 30, 3), Some(h.clone()));
    let v = verdict(Some(&device), &meas(Some(40.0), Some(3100.0), Some(1100.0)));
    let read = v.checks.iter().find(|c| c.mark == "A2" && c.key == RAND_READ).unwrap();
    assert_eq!(read.pass, None);
    assert!(read.why.as_deref().unwrap().contains("Raspberry Pi 4"), "{:?}", read.why);
    assert!(v.notes.iter().any(|n| n.contains("about.adoc")), "{:?}", v.notes);
    // A1 stays judged: 1500/500 lie under the Pi 4's ceiling.
    let a1 = v.checks.iter().filter(|c| c.mark == "A1").collect::<Vec<_>>();
    assert!(a1.iter().all(|c| c.pass == Some(true)), "{a1:?}");
    // A Pi 3's sdhost tops out near 1784 read IOPS: A1 is judged, A2 is not.
    h.controller = Some("brcm,bcm2835-sdhost".into());
    h.timing = Some("sd high-speed".into());
    let device = sd_card(ssr(1, 10, 0, 1), Some(h));
    let v = verdict(Some(&device), &meas(Some(20.0), Some(900.0), Some(300.0)));
    let a1_read = v.checks.iter().find(|c| c.mark == "A1" && c.key == RAND_READ).unwrap();
    assert_eq!(a1_read.pass, Some(false));
    assert_eq!(host_iops_ceiling(&HostIos { controller: Some("sdhci-pci".into()), ..HostIos::default() }), None);
}

#[test]
fn margin_makes_close_figures_inconclusive() {
    let device = sd_card(ssr(0, 10, 30, 3), None);
    // 27 MB/s against 30: within 15%, so neither pass nor fail.
    let v = verdict(Some(&device), &meas(Some(27.0), None, None));
    let u3 = v.checks.iter().find(|c| c.mark == "U3").unwrap();
    assert_eq!(u3.pass, None);
    assert_eq!(u3.why.as_deref(), Some("within 15% of the requirement: inconclusive under this workload"));
    // 25 MB/s is more than 15% short: a fail, worded for the workload.
    let v = verdict(Some(&device), &meas(Some(25.0), None, None));
    assert!(v.summary.unwrap().contains("below its class under this workload: sequential write 25 MB/s < 30"));
    // Exactly at the requirement is not yet a pass.
    assert_eq!(checks::judge(30.0, 30.0), None);
    assert_eq!(checks::judge(34.5, 30.0), Some(true));
    assert_eq!(checks::judge(25.4, 30.0), Some(false));
}

#[test]
fn quick_profile_is_indicative() {
    let device = sd_card(ssr(0, 10, 10, 1), None);
    let v = verdict_for(Some(&device), &meas(Some(20.0), None, None), &RunProfile::Quick);
    assert!(v.indicative);
    assert!(
        v.summary.unwrap().starts_with("indicative only (quick profile, shortened tests): meets its claimed class")
    );
    assert!(v.notes.iter().any(|n| n.contains("indicative only")));
    assert!(!verdict(Some(&device), &meas(Some(20.0), None, None)).indicative);
}

#[test]
fn usb2_reader_under_u3_card() {
    let mut device = sd_card(ssr(1, 10, 60, 3), None);
    device.usb = Some(UsbInfo { id: "05e3:0751".into(), speed_mbps: Some(480), ..UsbInfo::default() });
    let v = verdict(Some(&device), &meas(Some(28.0), Some(2000.0), Some(600.0)));
    assert!(
        v.notes.contains(&"the USB 2.0 link (480 Mb/s) carries about 35-40 MB/s in practice: V60 (60 MB/s) cannot be reached through it, and U3 (30 MB/s) has little headroom".to_owned()),
        "{:?}",
        v.notes
    );
    // V60 is out of the link's reach: not a fail.
    let v60 = v.checks.iter().find(|c| c.mark == "V60").unwrap();
    assert_eq!(v60.pass, None);
    assert!(v60.why.as_deref().unwrap().starts_with("the USB 2.0 link"), "{:?}", v60.why);
    // USB 3 link: nothing to say.
    device.usb.as_mut().unwrap().speed_mbps = Some(5000);
    let v = verdict(Some(&device), &meas(Some(28.0), Some(2000.0), Some(600.0)));
    assert!(v.notes.is_empty(), "{:?}", v.notes);
}

#[test]
fn bus_ceilings() {
    let hs = sd_bus_ceiling(&host(50_000_000, "sd high-speed")).unwrap();
    assert_eq!((hs.raw_mb_s, hs.mode), (25.0, "High Speed"));
    assert!((hs.practical_mb_s - 23.0).abs() < 1e-9);
    let ddr = sd_bus_ceiling(&host(50_000_000, "sd uhs DDR50")).unwrap();
    assert_eq!(ddr.raw_mb_s, 50.0);
    let sdr104 = sd_bus_ceiling(&host(208_000_000, "sd uhs SDR104")).unwrap();
    assert_eq!(sdr104.raw_mb_s, 104.0);
    // Gated clock (0) or none: the mode's top clock; no width: the widest.
    let gated = HostIos { clock_hz: Some(0), timing: Some("sd uhs SDR50".into()), ..HostIos::default() };
    let c = sd_bus_ceiling(&gated).unwrap();
    assert_eq!((c.clock_hz, c.bus_width_bits, c.raw_mb_s), (100_000_000, 4, 50.0));
    // actual clock wins over the requested one.
    let mut h = host(50_000_000, "sd high-speed");
    h.actual_clock_hz = Some(41_666_667);
    assert_eq!(sd_bus_ceiling(&h).unwrap().clock_hz, 41_666_667);
    // Unknown or absent timing: no claim about the bus.
    assert_eq!(sd_bus_ceiling(&host(50_000_000, "invalid")), None);
    assert_eq!(sd_bus_ceiling(&HostIos { clock_hz: Some(50_000_000), ..HostIos::default() }), None);
}

#[test]
fn labels() {
    assert_eq!(class_label(2, 10, 30, 3), "A2 Class 10 V30 U3");
    assert_eq!(class_label(0, 10, 0, 1), "Class 10 U1");
    assert_eq!(class_label(0, 0, 0, 0), "Class 0");
    use ClassMark::*;
    assert_eq!(ClassMark::parse_label("A2 Class 10 V30 U3"), [App(2), Speed(10), Video(30), Uhs(3)]);
    assert_eq!(ClassMark::parse_label("U1 Class10 junk C4"), [Speed(4), Speed(10), Uhs(1)]);
    assert_eq!(ClassMark::parse_label("Class 0"), []);
    assert_eq!(ClassMark::parse("U2"), None);
    assert_eq!(ClassMark::parse("V90"), Some(Video(90)));
    assert_eq!(ClassMark::parse(""), None);
    assert_eq!(ClassMark::parse("é"), None);
    for family in Family::ALL {
        for &mark in family.marks() {
            assert_eq!(ClassMark::parse(&mark.to_string()), Some(mark));
        }
    }
}

#[test]
fn number_formats() {
    assert_eq!(fmt_measured(9.999, 10.0), "9.999");
    assert_eq!(fmt_measured(9.99, 10.0), "9.99");
    assert_eq!(fmt_measured(1480.0, 2000.0), "1480");
    assert_eq!(fmt_measured(21.54, 30.0), "21.5");
    assert_eq!(fmt_plain(23.0), "23");
    assert_eq!(fmt_clock(41_666_667), "41.7 MHz");
    assert_eq!(fmt_clock(400_000), "400 kHz");
}

#[test]
fn never_panics_on_odd_figures() {
    let device = sd_card(ssr(2, 10, 90, 3), Some(host(u64::MAX, "sd uhs SDR104")));
    for v in [f64::NAN, f64::INFINITY, -1.0, 0.0, f64::MAX, f64::MIN_POSITIVE] {
        let out = verdict(Some(&device), &meas(Some(v), Some(v), Some(v)));
        assert!(out.summary.is_some());
    }
}

/// A card that fails its claim outright is not judged when the machine was
/// throttled during the run: every measured check is null with why.
#[test]
fn figures_measured_while_throttled_are_not_judged() {
    use crate::health::{Thermal, ThermalSnapshot, ThrottleFlag};
    let device = sd_card(ssr(2, 10, 30, 3), None);
    let m = meas(Some(5.0), Some(900.0), Some(100.0));
    let judged = verdict_for(Some(&device), &m, &RunProfile::Compat);
    assert!(judged.checks.iter().any(|c| c.pass == Some(false)));

    let snapshot = |since: &[ThrottleFlag]| ThermalSnapshot {
        get_throttled: Some("0x0".to_owned()),
        throttled_since_boot: since.to_vec(),
        ..ThermalSnapshot::default()
    };
    let mut thermal = Thermal {
        before: Some(snapshot(&[])),
        after: Some(snapshot(&[ThrottleFlag::UnderVoltage])),
        ..Thermal::default()
    };
    thermal.assess();
    let v = verdict_under(Some(&device), &m, &RunProfile::Compat, Some(&thermal));
    let measured: Vec<&Check> = v.checks.iter().filter(|c| c.measured.is_some()).collect();
    assert!(!measured.is_empty());
    for c in measured {
        assert_eq!(c.pass, None, "{c:?}");
        assert!(c.why.as_deref().is_some_and(|w| w.contains("throttled (under-voltage)")), "{c:?}");
    }
    let summary = v.summary.expect("summary");
    assert!(summary.starts_with("not judged: every figure was measured while this machine was throttled"), "{summary}");

    // The same report, saved and scored again, gives the same verdict.
    let report = Report {
        device: Some(device.clone()),
        measurements: Some(m),
        thermal: Some(thermal.clone()),
        ..Report::new("0.1.0")
    };
    assert_eq!(report_verdict(&report).summary.as_deref(), Some(summary.as_str()));

    // Not throttled: judged as usual.
    thermal.after = Some(snapshot(&[]));
    thermal.assess();
    assert_eq!(verdict_under(Some(&device), &m, &RunProfile::Compat, Some(&thermal)), judged);
}

/// With per-figure windows, only the figure measured while throttled is
/// left undecided; the others are judged as usual.
#[test]
fn only_the_throttled_figure_is_not_judged() {
    use crate::health::{FigureThermal, Thermal, ThrottleFlag};
    let device = sd_card(ssr(2, 10, 30, 3), None);
    let m = meas(Some(5.0), Some(900.0), Some(100.0));
    let window = |key: &str, throttled: bool| FigureThermal {
        key: key.to_owned(),
        samples: 3,
        throttled,
        flags: if throttled { vec![ThrottleFlag::SoftTemperatureLimit] } else { vec![] },
        ..FigureThermal::default()
    };
    let mut thermal = Thermal {
        figures: vec![window(SEQ_WRITE, true), window(RAND_READ, false), window(RAND_WRITE, false)],
        before: Some(crate::health::ThermalSnapshot { get_throttled: Some("0x0".into()), ..Default::default() }),
        ..Thermal::default()
    };
    thermal.assess();
    assert_eq!(thermal.throttled_during, Some(true));
    let v = verdict_under(Some(&device), &m, &RunProfile::Compat, Some(&thermal));
    for c in v.checks.iter().filter(|c| c.measured.is_some()) {
        if c.key == SEQ_WRITE {
            assert_eq!(c.pass, None, "{c:?}");
        } else {
            assert!(c.why.as_deref().is_none_or(|w| !w.contains("throttled")), "{c:?}");
        }
    }
    assert!(v.checks.iter().any(|c| c.key == RAND_WRITE && c.pass == Some(false)));
    assert!(v.summary.as_deref().is_some_and(|s| s.starts_with("partly judged: seq_write_mb_s measured while")));
}

/// A1's sequential requirement is a sustained rate: judged on the
/// sustained write's slowest second when it was measured, on dd's mean
/// otherwise (a report from before that figure), and the check says which.
#[test]
fn the_a_marks_judge_the_sustained_write_when_there_is_one() {
    let device = sd_card(ssr(1, 10, 0, 1), None);
    let mean_only = meas(Some(20.0), Some(3000.0), Some(900.0));
    let v = verdict(Some(&device), &mean_only);
    let a1_seq = v.checks.iter().find(|c| c.mark == "A1" && c.unit == "MB/s").expect("A1's sequential check");
    assert_eq!((a1_seq.key.as_str(), a1_seq.requirement.as_str()), (SEQ_WRITE, "sequential write ≥ 10 MB/s"));
    assert_eq!(a1_seq.pass, Some(true));
    assert_eq!(ClassMark::App(1).met_by(&mean_only), Some(true));

    // The same card with a slow floor past its cache: the mean still
    // passes Class 10 and U1, A1 fails on the sustained write.
    let mut sustained = mean_only;
    sustained[Figure::SustainedSeqWrite] = Some(6.0);
    let v = verdict(Some(&device), &sustained);
    let a1_seq = v.checks.iter().find(|c| c.mark == "A1" && c.unit == "MB/s").expect("A1's sequential check");
    assert_eq!(
        (a1_seq.key.as_str(), a1_seq.requirement.as_str(), a1_seq.measured, a1_seq.pass),
        (SUSTAINED_WRITE, "sustained sequential write ≥ 10 MB/s", Some(6.0), Some(false))
    );
    assert_eq!(ClassMark::App(1).met_by(&sustained), Some(false));
    assert_eq!(ClassMark::Speed(10).met_by(&sustained), Some(true));
    assert_eq!(v.measured.as_deref(), Some("Class 10 V10 U1"));
    // Neither figure: the check cannot be made, and says so.
    let neither = meas(None, Some(3000.0), Some(900.0));
    assert_eq!(ClassMark::App(1).met_by(&neither), None);
    let v = verdict(Some(&device), &neither);
    assert!(v.notes.iter().any(|n| n.contains("the checks for A1")), "{:?}", v.notes);
}

/// A bus that caps dd's sequential write caps the sustained write too: an
/// A mark's sustained check above the cap is the host's doing, not failed.
#[test]
fn a_host_cap_explains_a_slow_sustained_write() {
    // A host left at 400 kHz (the identification clock), 4 bits: 0.2 MB/s
    // on the wire.
    let device = sd_card(ssr(1, 10, 0, 1), Some(host(400_000, "legacy")));
    let mut m = meas(Some(0.19), Some(3000.0), Some(900.0));
    m[Figure::SustainedSeqWrite] = Some(0.18);
    let v = verdict(Some(&device), &m);
    let a1_seq = v.checks.iter().find(|c| c.mark == "A1" && c.unit == "MB/s").expect("A1's sequential check");
    assert_eq!(a1_seq.key, SUSTAINED_WRITE);
    assert_eq!(a1_seq.pass, None, "{a1_seq:?}");
    assert!(a1_seq.why.is_some(), "{a1_seq:?}");
}
