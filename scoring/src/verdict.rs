//! SD class verdicts (DESIGN.md §5): does the card meet the class it claims?
//!
//! The card's claim comes from its SD Status register (SSR: SPEED_CLASS,
//! UHS_SPEED_GRADE, VIDEO_SPEED_CLASS, APP_PERF_CLASS), or from the
//! PiBenchmarks-style label built from it. Each mark promises a minimum
//! performance, per the SD Physical Layer Simplified Specification (its
//! Speed Class, UHS Speed Grade, Video Speed Class and Application
//! Performance Class sections, and the SSR field tables; MB = 10^6 bytes):
//!
//! | mark | requirement |
//! |---|---|
//! | Class 2 / 4 / 6 / 10 | sequential write ≥ 2 / 4 / 6 / 10 MB/s |
//! | U1 / U3 | sequential write ≥ 10 / 30 MB/s |
//! | V6 / V10 / V30 / V60 / V90 | sequential write ≥ 6 / 10 / 30 / 60 / 90 MB/s |
//! | A1 | 4 KiB random read ≥ 1500 IOPS, random write ≥ 500 IOPS, sequential write ≥ 10 MB/s |
//! | A2 | 4 KiB random read ≥ 4000 IOPS, random write ≥ 2000 IOPS, sequential write ≥ 10 MB/s |
//!
//! The measured side is the highest mark each figure earns, in the same label
//! form. The checks show every requirement of every claimed mark, with the
//! measured value, plus the marks between what was measured and what was
//! claimed and the next mark up, so that a user sees, for a card claiming A2
//! and delivering A1, the A2 checks failing and the A1 checks passing.
//!
//! Notes say where the host rather than the card caps a result. They are
//! worked out from the device facts alone (debugfs `ios`, the USB link
//! speed); when a fact is absent, no note is made.

use std::collections::BTreeSet;
use std::fmt;

use crate::schema::{Check, Device, DeviceKind, HostIos, Measurements, SdSsr, Verdict};

/// Measurement key of the sequential write figure (dd, MB/s).
pub const SEQ_WRITE: &str = "seq_write_mb_s";
/// Measurement key of the 4 KiB random read figure (fio, QD64, IOPS).
pub const RAND_READ: &str = "rand_read_4k_qd64_iops";
/// Measurement key of the 4 KiB random write figure (fio, QD64, IOPS).
pub const RAND_WRITE: &str = "rand_write_4k_qd64_iops";

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
/// a failure there may be the link's.
pub const USB2_TIGHT_FROM_MB_S: f64 = 30.0;

/// The USB 1.1 full-speed bulk limit: 19 × 64 B per 1 ms frame (USB 2.0
/// spec 5.8.4), 1.216 MB/s.
pub const USB1_BULK_MB_S: f64 = 1.216;

/// One mark of the SD speed classes.
///
/// Ordered by family in label order (A, Class, V, U) and then by level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ClassMark {
    /// Application performance class: A1, A2.
    App(u8),
    /// Speed class: Class 2, 4, 6, 10.
    Speed(u8),
    /// Video speed class: V6, V10, V30, V60, V90.
    Video(u8),
    /// UHS speed grade: U1, U3.
    Uhs(u8),
}

/// The four families of marks, in label order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    App,
    Speed,
    Video,
    Uhs,
}

impl Family {
    pub const ALL: [Family; 4] = [Family::App, Family::Speed, Family::Video, Family::Uhs];

    /// The marks the SD spec defines in this family, lowest first.
    pub fn marks(self) -> &'static [ClassMark] {
        use ClassMark::*;
        match self {
            Family::App => &[App(1), App(2)],
            Family::Speed => &[Speed(2), Speed(4), Speed(6), Speed(10)],
            Family::Video => &[Video(6), Video(10), Video(30), Video(60), Video(90)],
            Family::Uhs => &[Uhs(1), Uhs(3)],
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Family::App => "the A mark",
            Family::Speed => "the speed class",
            Family::Video => "the V mark",
            Family::Uhs => "the U mark",
        }
    }
}

/// One minimum-performance requirement of a mark.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Requirement {
    /// The measurement key compared.
    pub key: &'static str,
    /// The figure in words: `sequential write`, `random read`, `random write`.
    pub what: &'static str,
    pub required: f64,
    pub unit: &'static str,
}

impl Requirement {
    const fn seq_write(mb_s: f64) -> Self {
        Requirement { key: SEQ_WRITE, what: "sequential write", required: mb_s, unit: "MB/s" }
    }
    const fn rand_read(iops: f64) -> Self {
        Requirement { key: RAND_READ, what: "random read", required: iops, unit: "IOPS" }
    }
    const fn rand_write(iops: f64) -> Self {
        Requirement { key: RAND_WRITE, what: "random write", required: iops, unit: "IOPS" }
    }
}

impl ClassMark {
    pub fn family(self) -> Family {
        match self {
            ClassMark::App(_) => Family::App,
            ClassMark::Speed(_) => Family::Speed,
            ClassMark::Video(_) => Family::Video,
            ClassMark::Uhs(_) => Family::Uhs,
        }
    }

    /// Whether the SD spec defines this mark (`Uhs(2)` or `Video(45)` it does not).
    pub fn is_defined(self) -> bool {
        self.family().marks().contains(&self)
    }

    /// What the mark promises (SD Physical Layer Simplified Specification);
    /// empty for a mark the spec does not define.
    pub fn requirements(self) -> &'static [Requirement] {
        use ClassMark::*;
        const SEQ: [Requirement; 8] = [
            Requirement::seq_write(2.0),
            Requirement::seq_write(4.0),
            Requirement::seq_write(6.0),
            Requirement::seq_write(10.0),
            Requirement::seq_write(30.0),
            Requirement::seq_write(60.0),
            Requirement::seq_write(90.0),
            Requirement::seq_write(0.0),
        ];
        const A1: [Requirement; 3] =
            [Requirement::rand_read(1500.0), Requirement::rand_write(500.0), Requirement::seq_write(10.0)];
        const A2: [Requirement; 3] =
            [Requirement::rand_read(4000.0), Requirement::rand_write(2000.0), Requirement::seq_write(10.0)];
        match self {
            App(1) => &A1,
            App(2) => &A2,
            Speed(2) => &SEQ[0..1],
            Speed(4) => &SEQ[1..2],
            Speed(6) | Video(6) => &SEQ[2..3],
            Speed(10) | Video(10) | Uhs(1) => &SEQ[3..4],
            Video(30) | Uhs(3) => &SEQ[4..5],
            Video(60) => &SEQ[5..6],
            Video(90) => &SEQ[6..7],
            _ => &[],
        }
    }

    /// Whether `m` meets every requirement: `Some(false)` as soon as one
    /// measured figure falls short, `None` when none does but a figure is
    /// missing (or not finite).
    pub fn met_by(self, m: &Measurements) -> Option<bool> {
        let mut all_measured = true;
        for r in self.requirements() {
            match figure(m, r.key) {
                Some(v) if v < r.required => return Some(false),
                Some(_) => {}
                None => all_measured = false,
            }
        }
        all_measured.then_some(true)
    }

    /// The sequential write this mark requires, if it has such a requirement.
    fn seq_write_required(self) -> Option<f64> {
        self.requirements().iter().find(|r| r.key == SEQ_WRITE).map(|r| r.required)
    }

    /// Reads one mark: `A2`, `V30`, `U3`, `C10`, `Class 10` or `Class10`.
    /// `None` for anything else, including marks the spec does not define.
    pub fn parse(text: &str) -> Option<ClassMark> {
        let t = text.trim();
        let number = |s: &str| s.trim().parse::<u8>().ok();
        let mark = if let Some(rest) = t.strip_prefix("Class").or_else(|| t.strip_prefix("class")) {
            ClassMark::Speed(number(rest)?)
        } else {
            let mut chars = t.chars();
            let first = chars.next()?;
            let n = number(chars.as_str())?;
            match first.to_ascii_uppercase() {
                'A' => ClassMark::App(n),
                'C' => ClassMark::Speed(n),
                'V' => ClassMark::Video(n),
                'U' => ClassMark::Uhs(n),
                _ => return None,
            }
        };
        mark.is_defined().then_some(mark)
    }

    /// The marks in a label such as `A2 Class 10 V30 U3`, in label order.
    /// Unknown words are skipped.
    pub fn parse_label(label: &str) -> Vec<ClassMark> {
        let words: Vec<&str> = label.split_whitespace().collect();
        let mut marks = BTreeSet::new();
        let mut i = 0;
        while i < words.len() {
            let w = words[i];
            if w.eq_ignore_ascii_case("class") {
                if let Some(m) = words.get(i + 1).and_then(|n| ClassMark::parse(&format!("Class {n}"))) {
                    marks.insert(m);
                    i += 1;
                }
            } else if let Some(m) = ClassMark::parse(w) {
                marks.insert(m);
            }
            i += 1;
        }
        marks.into_iter().collect()
    }
}

impl fmt::Display for ClassMark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClassMark::App(n) => write!(f, "A{n}"),
            ClassMark::Speed(n) => write!(f, "Class {n}"),
            ClassMark::Video(n) => write!(f, "V{n}"),
            ClassMark::Uhs(n) => write!(f, "U{n}"),
        }
    }
}

/// The class label as PiBenchmarks builds it (DESIGN §3): `A<n> ` if the app
/// class is above 0, then `Class <c>`, then ` V<n>` if the video class is
/// above 0, then ` U<n>` if the UHS grade is above 0.
pub fn class_label(app_class: u8, speed_class: u8, video_class: u8, uhs_grade: u8) -> String {
    let mut label = String::new();
    if app_class > 0 {
        label.push_str(&format!("A{app_class} "));
    }
    label.push_str(&format!("Class {speed_class}"));
    if video_class > 0 {
        label.push_str(&format!(" V{video_class}"));
    }
    if uhs_grade > 0 {
        label.push_str(&format!(" U{uhs_grade}"));
    }
    label
}

/// The marks an SSR claims, and a note for each value the spec does not define.
pub fn claimed_marks(ssr: &SdSsr) -> (Vec<ClassMark>, Vec<String>) {
    let mut marks = Vec::new();
    let mut notes = Vec::new();
    let fields = [
        (ssr.app_class, ClassMark::App(ssr.app_class), "application performance class"),
        (ssr.speed_class, ClassMark::Speed(ssr.speed_class), "speed class"),
        (ssr.video_class, ClassMark::Video(ssr.video_class), "video speed class"),
        (ssr.uhs_grade, ClassMark::Uhs(ssr.uhs_grade), "UHS speed grade"),
    ];
    for (value, mark, name) in fields {
        if value == 0 {
            continue;
        }
        if mark.is_defined() {
            marks.push(mark);
        } else {
            notes.push(format!(
                "the SSR's {name} {value} is not one the SD specification defines, so it was not checked"
            ));
        }
    }
    (marks, notes)
}

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

/// Which failing checks a host limit can explain.
#[derive(Debug, Clone, Copy)]
enum Scope {
    /// Requirements on `key` from this value up.
    AtLeast(&'static str, f64),
    /// A2's random-I/O requirements.
    A2Iops,
}

/// A limit of the host, not the card, with the note that explains it.
#[derive(Debug)]
struct HostLimit {
    note: String,
    /// The cause in a few words, for the summary.
    blame: String,
    scopes: Vec<Scope>,
}

impl HostLimit {
    fn explains(&self, check: &Check) -> bool {
        self.scopes.iter().any(|s| match *s {
            Scope::AtLeast(key, value) => check.key == key && check.required >= value,
            Scope::A2Iops => check.mark == "A2" && (check.key == RAND_READ || check.key == RAND_WRITE),
        })
    }
}

/// What a figure earned in one family.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Earned {
    /// The highest mark met, or none met.
    Known(Option<ClassMark>),
    /// A figure the family needs was not measured.
    Unknown,
}

/// The verdict: what the card claims beside what it measures, every check,
/// notes on host limits and missing figures, and a one-sentence summary.
///
/// Never panics; figures that are not finite count as not measured.
pub fn verdict(device: Option<&Device>, m: &Measurements) -> Verdict {
    let mut notes = Vec::new();

    // What the card claims: SSR fields first, the stored label otherwise.
    let sd = device.and_then(|d| d.sd.as_ref());
    let ssr = sd.and_then(|s| s.ssr.as_ref());
    let (claimed_marks, claim_notes) = match (ssr, sd.and_then(|s| s.class_label.as_deref())) {
        (Some(ssr), _) => claimed_marks(ssr),
        (None, Some(label)) => (ClassMark::parse_label(label), Vec::new()),
        (None, None) => (Vec::new(), Vec::new()),
    };
    notes.extend(claim_notes);
    let claimed_label = sd
        .and_then(|s| s.class_label.clone())
        .or_else(|| ssr.map(|s| class_label(s.app_class, s.speed_class, s.video_class, s.uhs_grade)));

    // What the figures earn, family by family.
    let earned: Vec<(Family, Earned)> = Family::ALL.iter().map(|&f| (f, earned(f, m))).collect();
    let measured = measured_label(&earned);

    // The checks.
    let mut checks = Vec::new();
    for &(family, got) in &earned {
        let marks = family.marks();
        let pos = |mark: ClassMark| marks.iter().position(|&x| x == mark);
        let claimed_idx = claimed_marks.iter().filter(|c| c.family() == family).filter_map(|&c| pos(c)).max();
        let mut include = BTreeSet::new();
        include.extend(claimed_idx);
        if let Earned::Known(best) = got {
            let best_idx = best.and_then(pos);
            include.extend(best_idx);
            // The next mark up shows what the card misses; when the claim is
            // higher still, every mark up to it is shown.
            let next = best_idx.map_or(0, |b| b + 1);
            let upper = claimed_idx.map_or(next, |c| c.max(next)).min(marks.len().saturating_sub(1));
            include.extend(next..=upper);
        }
        for idx in include {
            let Some(&mark) = marks.get(idx) else {
                continue;
            };
            let claimed = claimed_marks.contains(&mark);
            for r in mark.requirements() {
                let measured = figure(m, r.key);
                checks.push(Check {
                    mark: mark.to_string(),
                    requirement: format!("{} ≥ {} {}", r.what, fmt_plain(r.required), r.unit),
                    key: r.key.to_owned(),
                    required: r.required,
                    measured,
                    unit: r.unit.to_owned(),
                    pass: measured.map(|v| v >= r.required),
                    claimed,
                });
            }
        }
    }

    // Host limits.
    let limits = host_limits(device, &claimed_marks, m);
    notes.extend(limits.iter().map(|l| l.note.clone()));

    // Missing figures.
    let missing: Vec<&str> =
        [SEQ_WRITE, RAND_READ, RAND_WRITE].into_iter().filter(|k| figure(m, k).is_none()).collect();
    let unchecked: Vec<ClassMark> =
        claimed_marks.iter().copied().filter(|c| c.requirements().iter().any(|r| missing.contains(&r.key))).collect();
    if !missing.is_empty() {
        let mut note = format!("not measured: {}", missing.join(", "));
        let mut clauses = Vec::new();
        if !unchecked.is_empty() {
            clauses.push(format!("the checks for {} could not be made", join_and(&to_strings(&unchecked))));
        }
        let left_out: Vec<String> =
            earned.iter().filter(|(_, e)| *e == Earned::Unknown).map(|(f, _)| f.describe().to_owned()).collect();
        if !left_out.is_empty() {
            clauses.push(format!("the measured class leaves out {}", join_and(&left_out)));
        }
        if !clauses.is_empty() {
            note.push_str(": ");
            note.push_str(&clauses.join(", and "));
        }
        notes.push(note);
    }

    let summary = summarize(
        device,
        claimed_label.as_deref(),
        &claimed_marks,
        measured.as_deref(),
        &checks,
        &unchecked,
        &missing,
        &limits,
    );

    Verdict { claimed: claimed_label, measured, checks, notes, summary: Some(summary) }
}

/// A figure, if it was measured and is a real number.
fn figure(m: &Measurements, key: &str) -> Option<f64> {
    m.get(key).filter(|v| v.is_finite())
}

/// The highest mark of `family` that every figure earns.
fn earned(family: Family, m: &Measurements) -> Earned {
    let mut best = None;
    for &mark in family.marks() {
        match mark.met_by(m) {
            Some(true) => best = Some(mark),
            // Higher marks of a family ask at least as much of every figure.
            Some(false) => break,
            None => return Earned::Unknown,
        }
    }
    Earned::Known(best)
}

/// The measured label in PiBenchmarks form; families that could not be
/// measured are left out, and `None` when nothing could be.
fn measured_label(earned: &[(Family, Earned)]) -> Option<String> {
    let mut parts = Vec::new();
    for &(family, got) in earned {
        match (family, got) {
            (_, Earned::Unknown) => {}
            // PiBenchmarks always prints the speed class, `Class 0` included.
            (Family::Speed, Earned::Known(None)) => parts.push("Class 0".to_owned()),
            (_, Earned::Known(None)) => {}
            (_, Earned::Known(Some(mark))) => parts.push(mark.to_string()),
        }
    }
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The limits the host puts on the claimed marks, from device facts only.
fn host_limits(device: Option<&Device>, claimed: &[ClassMark], m: &Measurements) -> Vec<HostLimit> {
    let mut limits = Vec::new();
    let Some(device) = device else { return limits };
    let seq_write = figure(m, SEQ_WRITE);

    // The SD bus: timing mode and clock from debugfs ios.
    if let Some(bus) = device.sd.as_ref().and_then(|s| s.host.as_ref()).and_then(sd_bus_ceiling) {
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
        if !over.is_empty() {
            limits.push(HostLimit {
                note: format!("{blame}: {over} cannot be reached on this host"),
                blame,
                scopes: vec![Scope::AtLeast(SEQ_WRITE, cap)],
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
                scopes: vec![Scope::AtLeast(SEQ_WRITE, cap)],
            });
        }
        // 4 KiB random I/O over the same bus.
        let iops_cap = cap * 1e6 / 4096.0;
        let mut over_iops = Vec::new();
        for &mark in claimed {
            for r in mark.requirements() {
                if r.key != SEQ_WRITE && r.required > iops_cap {
                    over_iops.push(format!("{mark} ({} {} IOPS)", fmt_plain(r.required), r.what));
                }
            }
        }
        if !over_iops.is_empty() {
            let blame = format!("4 KiB transfers over {what} top out near {} IOPS", fmt_round(iops_cap));
            limits.push(HostLimit {
                note: format!("{blame}: {} cannot be reached on this host", join_and(&over_iops)),
                blame,
                scopes: vec![Scope::AtLeast(RAND_READ, iops_cap), Scope::AtLeast(RAND_WRITE, iops_cap)],
            });
        }
    }

    // A2 without a command queue on the host.
    let host_cq = device.sd.as_ref().and_then(|s| s.host.as_ref()).and_then(|h| h.command_queue);
    if claimed.contains(&ClassMark::App(2)) && host_cq == Some(false) {
        let blame = "the host runs no command queue for the card".to_owned();
        limits.push(HostLimit {
            note: "the card claims A2, whose random IOPS need the card's command queue and cache, but the host runs no command queue for it: the host, not the card, limits the random-I/O result".to_owned(),
            blame,
            scopes: vec![Scope::A2Iops],
        });
    }

    // A USB link between host and card.
    if let Some(usb) = device.usb.as_ref() {
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
                if !parts.is_empty() {
                    limits.push(HostLimit {
                        note: format!("{blame}: {}", parts.join(", and ")),
                        blame,
                        scopes: vec![Scope::AtLeast(SEQ_WRITE, USB2_TIGHT_FROM_MB_S)],
                    });
                } else if let Some(v) = seq_write.filter(|&v| v >= 0.75 * high) {
                    limits.push(HostLimit {
                        note: format!(
                            "the measured sequential write ({} MB/s) is near what a USB 2.0 link carries in practice (about {}-{} MB/s): the card may be faster than this link can show",
                            fmt_plain(v),
                            fmt_plain(low),
                            fmt_plain(high)
                        ),
                        blame,
                        scopes: vec![Scope::AtLeast(SEQ_WRITE, USB2_TIGHT_FROM_MB_S)],
                    });
                }
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
                    blame,
                    scopes: vec![
                        Scope::AtLeast(SEQ_WRITE, USB1_BULK_MB_S),
                        // 4 KiB transfers at that rate: about 297 IOPS.
                        Scope::AtLeast(RAND_READ, USB1_BULK_MB_S * 1e6 / 4096.0),
                        Scope::AtLeast(RAND_WRITE, USB1_BULK_MB_S * 1e6 / 4096.0),
                    ],
                });
            }
            _ => {}
        }
        // Bulk-Only Transport carries one command at a time (USB Mass Storage
        // Class BOT 1.0), so no queue reaches the card.
        if claimed.contains(&ClassMark::App(2)) && usb.driver.as_deref() == Some("usb-storage") {
            let blame = "the USB reader's Bulk-Only Transport carries one command at a time".to_owned();
            limits.push(HostLimit {
                note: format!(
                    "{blame}, so A2's random IOPS, which need the card's command queue, cannot show through it"
                ),
                blame,
                scopes: vec![Scope::A2Iops],
            });
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

#[allow(clippy::too_many_arguments)]
fn summarize(
    device: Option<&Device>,
    claimed_label: Option<&str>,
    claimed: &[ClassMark],
    measured: Option<&str>,
    checks: &[Check],
    unchecked: &[ClassMark],
    missing: &[&str],
    limits: &[HostLimit],
) -> String {
    let measures = match measured {
        Some(label) => format!("measures {label}"),
        None => "the figures a class needs were not measured".to_owned(),
    };
    if claimed.is_empty() {
        let why = match device {
            None => "no identification was given, so there is no claimed class to check".to_owned(),
            Some(d) if d.sd.is_some() || d.kind == DeviceKind::Sd => {
                "the card claims no class (its SSR is empty or unread)".to_owned()
            }
            Some(d) => format!("this {} device carries no SD class to check", d.kind.as_str()),
        };
        return format!("{why}; {measures}");
    }
    // A claim without a label cannot happen (a claim comes from the SSR or
    // the label), but build one rather than panic.
    let claimed_text = claimed_label.map(str::to_owned).unwrap_or_else(|| to_strings(claimed).join(" "));

    // Failing requirements of the claimed marks, merged when several marks
    // need the same figure: "sequential write 20 MB/s < 30 required for V30 and U3".
    let mut failures: Vec<(&Check, Vec<String>)> = Vec::new();
    for c in checks.iter().filter(|c| c.claimed && c.pass == Some(false)) {
        match failures.iter_mut().find(|(f, _)| f.key == c.key && f.required == c.required) {
            Some((_, marks)) => marks.push(c.mark.clone()),
            None => failures.push((c, vec![c.mark.clone()])),
        }
    }
    let unchecked_text = (!unchecked.is_empty()).then(|| {
        let keys: Vec<String> = missing
            .iter()
            .filter(|k| unchecked.iter().any(|m| m.requirements().iter().any(|r| r.key == **k)))
            .map(|k| (*k).to_owned())
            .collect();
        format!("{} could not be checked ({} not measured)", join_and(&to_strings(unchecked)), join_and(&keys))
    });

    if !failures.is_empty() {
        let what: Vec<String> = failures
            .iter()
            .map(|(c, marks)| {
                let v = c.measured.unwrap_or(f64::NAN);
                format!(
                    "{} {} {} < {} required for {}",
                    requirement_subject(c),
                    fmt_measured(v, c.required),
                    c.unit,
                    fmt_plain(c.required),
                    join_and(marks)
                )
            })
            .collect();
        let mut s = format!("claims {claimed_text}; {measures}: {}", what.join(", "));
        if let Some(u) = unchecked_text {
            s.push_str(&format!("; {u}"));
        }
        let blames: Vec<String> = limits
            .iter()
            .filter(|l| checks.iter().any(|c| c.claimed && c.pass == Some(false) && l.explains(c)))
            .map(|l| l.blame.clone())
            .collect();
        if !blames.is_empty() {
            s.push_str(&format!("; the host may be to blame: {}", join_and(&blames)));
        }
        return s;
    }
    if let Some(u) = unchecked_text {
        return format!(
            "claims {claimed_text}; {measures}; every claimed requirement that was measured is met, but {u}"
        );
    }
    let mut s = format!("meets its claimed class {claimed_text}");
    if measured.is_some_and(|label| ClassMark::parse_label(label) != ClassMark::parse_label(&claimed_text)) {
        s.push_str(&format!("; {measures}"));
    }
    s
}

/// "random write" from a check's requirement text "random write ≥ 2000 IOPS".
fn requirement_subject(c: &Check) -> &str {
    c.requirement.split(" ≥ ").next().unwrap_or(&c.requirement)
}

fn to_strings(marks: &[ClassMark]) -> Vec<String> {
    marks.iter().map(ToString::to_string).collect()
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A number as people write it: `20`, `20.1`, `1480`.
fn fmt_plain(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A rounded figure for a ceiling: `23`, `2807`; one decimal below 10.
fn fmt_round(v: f64) -> String {
    if v < 10.0 { fmt_plain((v * 10.0).round() / 10.0) } else { fmt_plain(v.round()) }
}

/// A measured value with enough decimals that it never looks equal to the
/// requirement it misses: 9.999 against 10 prints as `9.999`, not `10`.
fn fmt_measured(v: f64, required: f64) -> String {
    if !v.is_finite() {
        return "unknown".to_owned();
    }
    let start = if v.fract() == 0.0 { 0 } else { 1 };
    for precision in start..=6 {
        let s = format!("{v:.precision$}");
        let shown: f64 = s.parse().unwrap_or(v);
        if (shown >= required) == (v >= required) {
            return trim_decimals(s);
        }
    }
    format!("{v}")
}

fn trim_decimals(s: String) -> String {
    if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_owned() } else { s }
}

/// `50 MHz`, `41.7 MHz`, `400 kHz`.
fn fmt_clock(hz: u64) -> String {
    if hz >= 1_000_000 {
        format!("{} MHz", fmt_plain((hz as f64 / 1e5).round() / 10.0))
    } else {
        format!("{} kHz", fmt_plain((hz as f64 / 1e2).round() / 10.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{SdInfo, UsbInfo};

    fn meas(seq: Option<f64>, rr: Option<f64>, rw: Option<f64>) -> Measurements {
        Measurements {
            seq_write_mb_s: seq,
            rand_read_4k_qd64_iops: rr,
            rand_write_4k_qd64_iops: rw,
            ..Measurements::default()
        }
    }

    fn ssr(app: u8, speed: u8, video: u8, uhs: u8) -> SdSsr {
        SdSsr { app_class: app, speed_class: speed, video_class: video, uhs_grade: uhs, ..SdSsr::default() }
    }

    fn sd_card(ssr: SdSsr, host: Option<HostIos>) -> Device {
        let class_label = Some(class_label(ssr.app_class, ssr.speed_class, ssr.video_class, ssr.uhs_grade));
        Device {
            kind: DeviceKind::Sd,
            sd: Some(SdInfo { ssr: Some(ssr), class_label, host, ..SdInfo::default() }),
            ..Device::default()
        }
    }

    fn host(clock_hz: u64, timing: &str) -> HostIos {
        HostIos {
            clock_hz: Some(clock_hz),
            bus_width_bits: Some(4),
            timing: Some(timing.to_owned()),
            ..HostIos::default()
        }
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

    #[test]
    fn claims_a2_measures_a1() {
        let device = sd_card(ssr(2, 10, 30, 3), None);
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
                "claims A2 Class 10 V30 U3; measures A1 Class 10 V10 U1: random read 3000 IOPS < 4000 required for A2, \
                 random write 1480 IOPS < 2000 required for A2, sequential write 20 MB/s < 30 required for V30 and U3"
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
        assert_eq!(v.claimed.as_deref(), Some("Class 0"));
        assert_eq!(
            v.summary.as_deref(),
            Some("the card claims no class (its SSR is empty or unread); measures A1 Class 10 V10 U1")
        );
        assert!(v.checks.iter().all(|c| !c.claimed));
        // SD card whose SSR could not be read.
        let unread = Device { kind: DeviceKind::Sd, sd: Some(SdInfo::default()), ..Device::default() };
        let v = verdict(Some(&unread), &m);
        assert_eq!(v.claimed, None);
        assert!(v.summary.unwrap().starts_with("the card claims no class (its SSR is empty or unread); measures"));
        let v = verdict(None, &m);
        assert!(v.summary.unwrap().starts_with("no identification was given"));
        let nvme = Device { kind: DeviceKind::Nvme, ..Device::default() };
        let v = verdict(Some(&nvme), &m);
        assert_eq!(
            v.summary.as_deref(),
            Some("this nvme device carries no SD class to check; measures A1 Class 10 V10 U1")
        );
    }

    #[test]
    fn claim_from_label_when_no_ssr() {
        let device = Device {
            kind: DeviceKind::Sd,
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
                "claims A1 Class 10 U1; the figures a class needs were not measured; every claimed requirement that was \
                 measured is met, but A1, Class 10 and U1 could not be checked (seq_write_mb_s and rand_write_4k_qd64_iops not measured)"
            )
        );
    }

    #[test]
    fn high_speed_bus_caps_u3_v30() {
        let device = sd_card(ssr(2, 10, 30, 3), Some(host(50_000_000, "sd high-speed")));
        let v = verdict(Some(&device), &meas(Some(21.5), Some(4200.0), Some(2100.0)));
        assert!(
            v.notes.contains(
                &"the host's 50 MHz High Speed bus (4-bit) caps sequential speed near 23 MB/s: V30/U3 (30 MB/s) cannot be reached on this host"
                    .to_owned()
            ),
            "{:?}",
            v.notes
        );
        let summary = v.summary.unwrap();
        assert!(summary.starts_with("claims A2 Class 10 V30 U3; measures A2 Class 10 V10 U1: sequential write 21.5 MB/s < 30 required for V30 and U3"), "{summary}");
        assert!(summary.ends_with("; the host may be to blame: the host's 50 MHz High Speed bus (4-bit) caps sequential speed near 23 MB/s"), "{summary}");
    }

    #[test]
    fn fast_bus_makes_no_note() {
        let device = sd_card(ssr(2, 10, 30, 3), Some(host(208_000_000, "sd uhs SDR104")));
        let v = verdict(Some(&device), &meas(Some(20.0), Some(4200.0), Some(2100.0)));
        assert!(v.notes.is_empty(), "{:?}", v.notes);
        assert!(!v.summary.unwrap().contains("host"));
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
        assert!(v.notes.iter().any(|n| n.starts_with("the host's 25 MHz default speed bus (1-bit) caps sequential speed near 2.9 MB/s: A1/Class 10/U1 (10 MB/s)")), "{:?}", v.notes);
        assert!(v.notes.iter().any(|n| n.starts_with("4 KiB transfers over the host's 25 MHz default speed bus (1-bit) top out near 702 IOPS: A1 (1500 random read IOPS)")), "{:?}", v.notes);
        assert!(v.summary.unwrap().contains("the host may be to blame"));
    }

    #[test]
    fn a2_without_command_queue() {
        let mut h = host(208_000_000, "sd uhs SDR104");
        h.command_queue = Some(false);
        let device = sd_card(ssr(2, 10, 30, 3), Some(h));
        let v = verdict(Some(&device), &meas(Some(60.0), Some(3000.0), Some(1200.0)));
        assert!(v.notes.iter().any(|n| n.starts_with("the card claims A2, whose random IOPS need the card's command queue and cache, but the host runs no command queue")));
        let s = v.summary.unwrap();
        assert!(s.contains("random write 1200 IOPS < 2000 required for A2"), "{s}");
        assert!(s.ends_with("; the host may be to blame: the host runs no command queue for the card"), "{s}");
        // With a queue, or unknown, no note.
        let mut h = host(208_000_000, "sd uhs SDR104");
        h.command_queue = None;
        let device = sd_card(ssr(2, 10, 30, 3), Some(h));
        assert!(verdict(Some(&device), &meas(Some(60.0), Some(3000.0), Some(1200.0))).notes.is_empty());
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
        let s = v.summary.unwrap();
        assert!(
            s.ends_with("; the host may be to blame: the USB 2.0 link (480 Mb/s) carries about 35-40 MB/s in practice"),
            "{s}"
        );
        // USB 3 link: nothing to say.
        device.usb.as_mut().unwrap().speed_mbps = Some(5000);
        assert!(verdict(Some(&device), &meas(Some(28.0), Some(2000.0), Some(600.0))).notes.is_empty());
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
}
