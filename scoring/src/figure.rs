//! The ten figures of a report (docs/measurements.md#the-ten-figures), as
//! one closed type declared as one table ([`figures!`]): each row owns its
//! JSON key, its unit, the words every surface labels it with, the
//! reference tool it stands in for, whether its test writes, its term in
//! the score and how the leaderboard keeps it; the largest value any device
//! could measure in it follows from its unit. No other module spells a
//! figure's key, unit, label, weight or column: a new figure is a new row
//! here and a place in [`REPORT_ORDER`] (and the test that measures it).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares the figures, once each, in the order every table prints them:
/// the enum and every fact about a figure come from its row here.
macro_rules! figures {
    ($(
        $(#[$doc:meta])*
        $variant:ident {
            key: $key:literal,
            unit: $unit:ident,
            tool: $tool:ident,
            writes: $writes:literal,
            short: $short:literal,
            label: $label:literal,
            reference: $reference:literal,
            score: $score:tt,
            board: $board:tt,
            storage_sh: $storage_sh:tt $(,)?
        }
    )*) => {
        /// One of the figures, in the order every table prints them (the
        /// tests run in Storage.sh's order, which differs only in that
        /// `hdparm -Tt` times the cached read before the disk read).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Figure {
            $($(#[$doc])* $variant,)*
        }

        impl Figure {
            /// How many figures there are.
            pub const COUNT: usize = [$(stringify!($variant)),*].len();

            /// Every figure, in table order.
            pub const ALL: [Figure; Figure::COUNT] = [$(Figure::$variant),*];

            /// The key in a report's `measurements` (and its `details`, `samples`).
            pub const fn key(self) -> &'static str {
                match self { $(Figure::$variant => $key,)* }
            }

            pub const fn unit(self) -> Unit {
                match self { $(Figure::$variant => Unit::$unit,)* }
            }

            /// The reference tool alone.
            pub const fn tool(self) -> Tool {
                match self { $(Figure::$variant => Tool::$tool,)* }
            }

            /// Whether the test behind it writes to the device (or its scratch file).
            pub const fn writes(self) -> bool {
                match self { $(Figure::$variant => $writes,)* }
            }

            /// A few words, for narrow tables (`compare`'s).
            pub const fn short_label(self) -> &'static str {
                match self { $(Figure::$variant => $short,)* }
            }

            /// What the figure is, with the tool it comes from (the
            /// leaderboard's result page).
            pub const fn label(self) -> &'static str {
                match self { $(Figure::$variant => $label,)* }
            }

            /// The PiBenchmarks command this figure reproduces (the results
            /// table's "as" column).
            pub const fn reference(self) -> &'static str {
                match self { $(Figure::$variant => $reference,)* }
            }

            /// Its term in the score, if it has one.
            pub const fn score_term(self) -> Option<ScoreTerm> {
                match self { $(Figure::$variant => figures!(@score $score),)* }
            }

            /// How the leaderboard keeps it, if it does.
            pub const fn board(self) -> Option<BoardColumn> {
                match self { $(Figure::$variant => figures!(@board $board),)* }
            }

            /// Its row in Storage.sh's summary table, if Storage.sh prints it.
            pub const fn storage_sh(self) -> Option<StorageShRow> {
                match self { $(Figure::$variant => figures!(@storage_sh $storage_sh),)* }
            }
        }
    };
    (@score -) => { None };
    (@score ($place:literal, $weight:literal)) => { Some(ScoreTerm { place: $place, weight: $weight }) };
    (@board -) => { None };
    (@board ($column:literal, $place:literal, $title:literal)) => {
        Some(BoardColumn { column: $column, place: $place, title: $title })
    };
    (@storage_sh -) => { None };
    (@storage_sh ($name:literal, $place:literal)) => { Some(StorageShRow { name: $name, place: $place }) };
}

/// A figure's row in the summary table PiBenchmarks' Storage.sh prints
/// (what `storage-score import` reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageShRow {
    /// Its Category and Test columns, as Storage.sh prints them.
    pub name: &'static str,
    /// Its place in the table (1-based, top down).
    pub place: usize,
}

/// A figure's term in the score: `weight × figure`, added as the
/// `place`-th term (1-based; PiBenchmarks' order, which the sum's last
/// digit depends on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScoreTerm {
    pub place: usize,
    pub weight: u32,
}

/// A figure the leaderboard keeps: a column of its own in every table that
/// holds figures, shown on its pages, and a key the leaderboard can be
/// sorted and ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BoardColumn {
    /// The database column (`DOUBLE PRECISION`, NULL when not measured).
    pub column: &'static str,
    /// Its place among the leaderboard's figure columns (1-based, left to
    /// right).
    pub place: usize,
    /// The column's title on the pages; a `|` splits off the words shown
    /// only on wide screens.
    pub title: &'static str,
}

figures! {
    SeqRead {
        key: "seq_read_mib_s",
        unit: MibPerS,
        tool: Hdparm,
        writes: false,
        short: "seq read",
        label: "Sequential read (hdparm -t --direct)",
        reference: "hdparm -t --direct",
        score: -,
        board: ("seq_read", 4, "Seq. read"),
        storage_sh: ("HDParm Disk Read", 1),
    }
    CachedRead {
        key: "cached_read_mib_s",
        unit: MibPerS,
        tool: Hdparm,
        writes: false,
        short: "cached read",
        label: "Cached read (hdparm -T --direct)",
        reference: "hdparm -T --direct",
        score: -,
        board: -,
        storage_sh: ("HDParm Cached Disk Read", 2),
    }
    SeqWrite {
        key: "seq_write_mb_s",
        unit: MbPerS,
        tool: Dd,
        writes: true,
        short: "seq write",
        label: "Sequential write (dd, 4 KiB, fsync)",
        reference: "dd bs=4k count=130k conv=fsync",
        score: (1, 1024),
        board: ("seq_write", 3, "Seq. write"),
        storage_sh: ("DD Disk Write", 3),
    }
    RandWriteQd64 {
        key: "rand_write_4k_qd64_iops",
        unit: Iops,
        tool: Fio,
        writes: true,
        short: "rand write QD64",
        label: "Random write 4 KiB, QD64 (fio)",
        reference: "fio randwrite 4k QD64",
        score: (3, 10),
        board: ("rand_write", 1, "Random|write"),
        storage_sh: ("FIO 4k random write", 5),
    }
    RandReadQd64 {
        key: "rand_read_4k_qd64_iops",
        unit: Iops,
        tool: Fio,
        writes: false,
        short: "rand read QD64",
        label: "Random read 4 KiB, QD64 (fio)",
        reference: "fio randread 4k QD64",
        score: (2, 4),
        board: ("rand_read", 2, "Random read"),
        storage_sh: ("FIO 4k random read", 4),
    }
    SeqWrite4kQd1 {
        key: "seq_write_4k_qd1_kib_s",
        unit: KibPerS,
        tool: Iozone,
        writes: true,
        short: "seq write QD1",
        label: "Sequential write 4 KiB, QD1 (iozone)",
        reference: "iozone write 4k",
        score: (5, 1),
        board: -,
        storage_sh: ("IOZone 4k write", 7),
    }
    SeqRead4kQd1 {
        key: "seq_read_4k_qd1_kib_s",
        unit: KibPerS,
        tool: Iozone,
        writes: false,
        short: "seq read QD1",
        label: "Sequential read 4 KiB, QD1 (iozone)",
        reference: "iozone read 4k",
        score: (4, 1),
        board: -,
        storage_sh: ("IOZone 4k read", 6),
    }
    RandRead4kQd1 {
        key: "rand_read_4k_qd1_kib_s",
        unit: KibPerS,
        tool: Iozone,
        writes: false,
        short: "rand read QD1",
        label: "Random read 4 KiB, QD1 (iozone)",
        reference: "iozone random read 4k",
        score: (6, 4),
        board: -,
        storage_sh: ("IOZone 4k random read", 8),
    }
    RandWrite4kQd1 {
        key: "rand_write_4k_qd1_kib_s",
        unit: KibPerS,
        tool: Iozone,
        writes: true,
        short: "rand write QD1",
        label: "Random write 4 KiB, QD1 (iozone)",
        reference: "iozone random write 4k",
        score: (7, 10),
        board: -,
        storage_sh: ("IOZone 4k random write", 9),
    }
    /// The SD Application Performance Class's "minimum sustained sequential
    /// performance" (10 MB/s for A1 and A2, SD 5.1 and 6.0 Part 1; sdcard.org's
    /// Application Performance Class page): the slowest half second of a long
    /// O_DIRECT sequential write, run after Storage.sh's set so that none of
    /// the nine meets the state it leaves.
    SustainedSeqWrite {
        key: "sustained_seq_write_mb_s",
        unit: MbPerS,
        tool: Fio,
        writes: true,
        short: "sustained write",
        label: "Sustained sequential write, slowest 0.5 s (fio bw min)",
        reference: "fio write 512k, bw min",
        score: -,
        board: -,
        storage_sh: -,
    }
}

/// The score's terms, in the order they are added: each figure with a
/// [`ScoreTerm`], by its place.
pub const SCORE_TERMS: [(Figure, u32); count(Column::ScoreTerm)] = score_terms();

/// The figures the leaderboard keeps, by their place on its pages.
pub const BOARD: [Figure; count(Column::Board)] = by_place(Column::Board);

/// The figures Storage.sh prints, in the order it prints them.
pub const STORAGE_SH: [Figure; count(Column::StorageSh)] = by_place(Column::StorageSh);

/// The table's columns that give some figures a place in an ordered list.
#[derive(Clone, Copy)]
enum Column {
    ScoreTerm,
    Board,
    StorageSh,
}

/// A figure's place in `column`'s list, if it has one.
const fn place(figure: Figure, column: Column) -> Option<usize> {
    match column {
        Column::ScoreTerm => match figure.score_term() {
            Some(term) => Some(term.place),
            None => None,
        },
        Column::Board => match figure.board() {
            Some(board) => Some(board.place),
            None => None,
        },
        Column::StorageSh => match figure.storage_sh() {
            Some(row) => Some(row.place),
            None => None,
        },
    }
}

/// How many figures have a place in `column` (a `const` array's length).
const fn count(column: Column) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < Figure::COUNT {
        if place(Figure::ALL[i], column).is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The figures with a place in `column`, by place; a place missing or
/// given twice fails the build.
const fn by_place<const N: usize>(column: Column) -> [Figure; N] {
    let mut figures = [Figure::SeqRead; N];
    let mut at = 1;
    while at <= N {
        let mut found = 0;
        let mut i = 0;
        while i < Figure::COUNT {
            if let Some(p) = place(Figure::ALL[i], column) {
                if p == at {
                    figures[at - 1] = Figure::ALL[i];
                    found += 1;
                }
            }
            i += 1;
        }
        assert!(found == 1, "each place in a column of the figures' table is given once, from 1 up");
        at += 1;
    }
    figures
}

/// [`SCORE_TERMS`]: the figures by their term's place, with its weight.
const fn score_terms<const N: usize>() -> [(Figure, u32); N] {
    let figures: [Figure; N] = by_place(Column::ScoreTerm);
    let mut terms = [(Figure::SeqRead, 0); N];
    let mut i = 0;
    while i < N {
        terms[i] = match figures[i].score_term() {
            Some(term) => (figures[i], term.weight),
            None => (figures[i], 0),
        };
        i += 1;
    }
    terms
}

/// The figures in the order a report's `measurements` object lists them
/// (older than the table order: the QD64 pair is read first there). Every
/// figure once; a new figure goes last.
pub const REPORT_ORDER: [Figure; Figure::COUNT] = [
    Figure::SeqRead,
    Figure::CachedRead,
    Figure::SeqWrite,
    Figure::RandReadQd64,
    Figure::RandWriteQd64,
    Figure::SeqWrite4kQd1,
    Figure::SeqRead4kQd1,
    Figure::RandRead4kQd1,
    Figure::RandWrite4kQd1,
    Figure::SustainedSeqWrite,
];

/// A figure's unit: each keeps its reference tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Unit {
    /// 2^20 bytes a second (hdparm).
    MibPerS,
    /// 10^6 bytes a second (dd).
    MbPerS,
    /// 2^10 bytes a second (iozone).
    KibPerS,
    /// 4 KiB operations a second (fio).
    Iops,
}

/// The fastest sequential rate any storage device reaches, in MB/s (10^6
/// B/s): 100 GB/s. PCIe 5.0 x16, the widest link a drive sits on, carries
/// 63 GB/s.
pub const MAX_MB_S: f64 = 100_000.0;
/// The most 4 KiB operations per second any device does: 100 million (the
/// fastest SSDs do a few million).
pub const MAX_IOPS: f64 = 100_000_000.0;

impl Unit {
    /// As printed after a number.
    pub const fn symbol(self) -> &'static str {
        match self {
            Unit::MibPerS => "MiB/s",
            Unit::MbPerS => "MB/s",
            Unit::KibPerS => "KiB/s",
            Unit::Iops => "IOPS",
        }
    }

    /// A value in this unit as MB/s of data moved (an operation moves 4 KiB).
    pub fn as_mb_s(self, value: f64) -> f64 {
        match self {
            Unit::MibPerS => value * 1.048576,
            Unit::MbPerS => value,
            Unit::KibPerS => value * 1024.0 / 1e6,
            Unit::Iops => value * 4096.0 / 1e6,
        }
    }

    /// The largest plausible value in this unit: [`MAX_MB_S`] or
    /// [`MAX_IOPS`], converted.
    pub fn limit(self) -> f64 {
        match self {
            Unit::MibPerS => MAX_MB_S / 1.048576,
            Unit::MbPerS => MAX_MB_S,
            Unit::KibPerS => MAX_MB_S * 1e6 / 1024.0,
            Unit::Iops => MAX_IOPS,
        }
    }
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

impl Figure {
    /// The figure a key names; `None` for any other string.
    pub fn from_key(key: &str) -> Option<Figure> {
        Figure::ALL.into_iter().find(|f| f.key() == key)
    }

    /// The step this figure is printed in near `value`
    /// (docs/measurements.md), which its unit decides: hdparm's two decimals
    /// of MiB/s, dd's MB/s (one decimal below 100, none to 999, then tenths
    /// of GB/s; the sustained write is rounded as dd rounds), whole IOPS and
    /// whole KiB/s.
    pub fn printed_step(self, value: f64) -> f64 {
        match self.unit() {
            Unit::MibPerS => 0.01,
            Unit::MbPerS if value < 100.0 => 0.1,
            Unit::MbPerS if value < 1000.0 => 1.0,
            Unit::MbPerS => 100.0,
            Unit::Iops | Unit::KibPerS => 1.0,
        }
    }

    /// The largest value any storage device could measure in its unit.
    pub fn limit(self) -> f64 {
        self.unit().limit()
    }
}

/// The tools PiBenchmarks' Storage.sh runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    Hdparm,
    Dd,
    Fio,
    Iozone,
}

impl Tool {
    pub const fn name(self) -> &'static str {
        match self {
            Tool::Hdparm => "hdparm",
            Tool::Dd => "dd",
            Tool::Fio => "fio",
            Tool::Iozone => "iozone",
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

impl Serialize for Figure {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.key())
    }
}

impl<'de> Deserialize<'de> for Figure {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let key = String::deserialize(deserializer)?;
        Figure::from_key(&key)
            .ok_or_else(|| serde::de::Error::custom(format!("`{key}` is not one of the ten measurement keys")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_round_trip_and_name_their_unit() {
        for figure in Figure::ALL {
            assert_eq!(Figure::from_key(figure.key()), Some(figure));
            let suffix = match figure.unit() {
                Unit::MibPerS => "_mib_s",
                Unit::MbPerS => "_mb_s",
                Unit::KibPerS => "_kib_s",
                Unit::Iops => "_iops",
            };
            assert!(figure.key().ends_with(suffix), "{figure}");
            assert!(figure.reference().starts_with(figure.tool().name()), "{figure}");
            let json = serde_json::to_string(&figure).expect("json");
            assert_eq!(serde_json::from_str::<Figure>(&json).expect("back"), figure);
        }
        assert_eq!(Figure::from_key("seq_write_mib_s"), None);
        assert!(serde_json::from_str::<Figure>("\"bogus\"").is_err());
    }

    #[test]
    fn the_score_and_the_board_are_read_from_the_table() {
        use Figure::*;
        let terms = [
            (SeqWrite, 1024),
            (RandReadQd64, 4),
            (RandWriteQd64, 10),
            (SeqRead4kQd1, 1),
            (SeqWrite4kQd1, 1),
            (RandRead4kQd1, 4),
            (RandWrite4kQd1, 10),
        ];
        assert_eq!(SCORE_TERMS, terms);
        assert_eq!(BOARD, [RandWriteQd64, RandReadQd64, SeqWrite, SeqRead]);
        let printed = [
            SeqRead,
            CachedRead,
            SeqWrite,
            RandReadQd64,
            RandWriteQd64,
            SeqRead4kQd1,
            SeqWrite4kQd1,
            RandRead4kQd1,
            RandWrite4kQd1,
        ];
        assert_eq!(STORAGE_SH, printed);
        let columns: std::collections::BTreeSet<_> = BOARD.iter().filter_map(|f| f.board()).map(|b| b.column).collect();
        assert_eq!(columns.len(), BOARD.len(), "one column each");
        assert!(columns.iter().all(|c| c.chars().all(|c| c.is_ascii_lowercase() || c == '_')), "{columns:?}");
    }

    #[test]
    fn limits_are_one_rate_in_four_units() {
        assert_eq!(Unit::MbPerS.limit(), MAX_MB_S);
        for unit in [Unit::MibPerS, Unit::KibPerS] {
            assert!((unit.as_mb_s(unit.limit()) - MAX_MB_S).abs() < 1e-6);
        }
        assert_eq!(Unit::Iops.as_mb_s(1000.0), 4.096);
    }
}
