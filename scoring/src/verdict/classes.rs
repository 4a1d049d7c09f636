//! The SD class table: the marks (A, Class, V, U), what each promises, and
//! the claim read from an SSR or a label.
//!
//! Requirements per the SD Physical Layer Simplified Specification (its
//! Speed Class, UHS Speed Grade, Video Speed Class and Application
//! Performance Class sections, and the SSR field tables; MB = 10^6 bytes):
//!
//! | mark | requirement |
//! |---|---|
//! | Class 2 / 4 / 6 / 10 | sequential write ≥ 2 / 4 / 6 / 10 MB/s |
//! | U1 / U3 | sequential write ≥ 10 / 30 MB/s |
//! | V6 / V10 / V30 / V60 / V90 | sequential write ≥ 6 / 10 / 30 / 60 / 90 MB/s |
//! | A1 | 4 KiB random read ≥ 1500 IOPS, random write ≥ 500 IOPS, sustained sequential write ≥ 10 MB/s |
//! | A2 | 4 KiB random read ≥ 4000 IOPS, random write ≥ 2000 IOPS, sustained sequential write ≥ 10 MB/s |
//!
//! The A marks' sequential requirement is "minimum sustained sequential
//! performance" (sdcard.org, Application Performance Class): it is judged
//! on the sustained write's figure when the run measured it, and on dd's
//! mean otherwise, as before that figure existed.

use std::collections::BTreeSet;
use std::fmt;

use crate::figure::Figure;
use crate::schema::{Measurements, SdSsr};

/// Measurement key of the sequential write figure (dd, MB/s).
pub const SEQ_WRITE: &str = Figure::SeqWrite.key();
/// Measurement key of the sustained sequential write (its slowest second, MB/s).
pub const SUSTAINED_WRITE: &str = Figure::SustainedSeqWrite.key();
/// Measurement key of the 4 KiB random read figure (fio, QD64, IOPS).
pub const RAND_READ: &str = Figure::RandReadQd64.key();
/// Measurement key of the 4 KiB random write figure (fio, QD64, IOPS).
pub const RAND_WRITE: &str = Figure::RandWriteQd64.key();

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

    pub(super) fn describe(self) -> &'static str {
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
    /// The requirement judged instead when `key`'s figure was not measured.
    instead: Option<&'static Requirement>,
}

impl Requirement {
    const fn seq_write(mb_s: f64) -> Self {
        Requirement { key: SEQ_WRITE, what: "sequential write", required: mb_s, unit: "MB/s", instead: None }
    }
    /// The A marks' sustained write, judged on dd's mean (`instead`) when
    /// the sustained write was not measured.
    const fn sustained_write(instead: &'static Requirement) -> Self {
        Requirement {
            key: SUSTAINED_WRITE,
            what: "sustained sequential write",
            required: instead.required,
            unit: instead.unit,
            instead: Some(instead),
        }
    }
    const fn rand_read(iops: f64) -> Self {
        Requirement { key: RAND_READ, what: "random read", required: iops, unit: "IOPS", instead: None }
    }
    const fn rand_write(iops: f64) -> Self {
        Requirement { key: RAND_WRITE, what: "random write", required: iops, unit: "IOPS", instead: None }
    }

    /// The requirement `m` is judged on, with its figure: this one, or the
    /// one it falls back on when this figure was not measured (or is not
    /// finite).
    pub fn judged_on(&self, m: &Measurements) -> (Requirement, Option<f64>) {
        match (super::figure(m, self.key), self.instead) {
            (Some(v), _) => (*self, Some(v)),
            (None, Some(instead)) => instead.judged_on(m),
            (None, None) => (*self, None),
        }
    }

    /// Whether it asks for a sequential write rate: what a bus caps.
    pub fn is_sequential_write(&self) -> bool {
        is_sequential_write(self.key)
    }
}

/// Whether `key` names a sequential write figure (dd's mean or the
/// sustained write's slowest second).
pub fn is_sequential_write(key: &str) -> bool {
    key == SEQ_WRITE || key == SUSTAINED_WRITE
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
            [Requirement::rand_read(1500.0), Requirement::rand_write(500.0), Requirement::sustained_write(&SEQ[3])];
        const A2: [Requirement; 3] =
            [Requirement::rand_read(4000.0), Requirement::rand_write(2000.0), Requirement::sustained_write(&SEQ[3])];
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
    /// missing (or not finite). This is the plain comparison behind the
    /// measured label; the checks add the margin and the host's limits.
    pub fn met_by(self, m: &Measurements) -> Option<bool> {
        let mut all_measured = true;
        for r in self.requirements() {
            let (r, measured) = r.judged_on(m);
            match measured {
                Some(v) if v < r.required => return Some(false),
                Some(_) => {}
                None => all_measured = false,
            }
        }
        all_measured.then_some(true)
    }

    /// The sequential write this mark requires, if it has such a requirement.
    pub(super) fn seq_write_required(self) -> Option<f64> {
        self.requirements().iter().find(|r| r.is_sequential_write()).map(|r| r.required)
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

/// The class label as PiBenchmarks builds it (docs/report.md#devicesd): `A<n> ` if the app
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
