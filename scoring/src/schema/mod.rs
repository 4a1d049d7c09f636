//! The `storage-score/1` report: the serde types behind the JSON contract of
//! docs/report.md.
//!
//! Every crate that reads or writes a report uses these types: `identify`
//! fills `target` and `device`, `bench` fills `measurements` and `details`,
//! this crate adds `score` and `verdict`, and the leaderboard server reads the
//! lot. Keys that carry no value are omitted (`Option` + `skip_serializing_if`),
//! and unknown keys are accepted on input so that newer reports still load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use crate::figure::{Figure, REPORT_ORDER, Unit};

pub use crate::health::{Advice, Health, Thermal};

mod device;
mod kind;
pub use device::*;
pub use kind::*;

/// The value of the report's `schema` key.
pub const SCHEMA: &str = "storage-score/1";

/// The profiles a run can have: `compat` (comparable with PiBenchmarks) and
/// `quick` (shortened, not comparable).
pub const PROFILES: [&str; 2] = [crate::run_profile::COMPAT, crate::run_profile::QUICK];

/// The longest `label` a report may carry, in characters.
pub const MAX_LABEL_CHARS: usize = 80;

/// A whole report, as `storage-score run --json` prints it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub tool: Tool,
    /// When the report was made, RFC 3339 in UTC (`2026-12-04T03:45:10Z`);
    /// absent from reports made before it was added (docs/report.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<Device>,
    /// The machine the run was made on, for grouping by board (docs/report.md#system).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<System>,
    /// The device's wear and error counters (docs/doctor.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<Health>,
    /// How this machine uses the storage: findings with a fix (docs/doctor.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub advice: Vec<Advice>,
    /// Temperature and throttling before, during and after the measurement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<Thermal>,
    /// `compat` (the default, comparable with PiBenchmarks) or `quick` ([`PROFILES`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    /// The name printed on the card's label (`SanDisk Extreme 64GB`), as
    /// the submitter typed it (`submit --label`); at most 80 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measurements: Option<Measurements>,
    /// Per-test detail: latency percentiles, per-interval throughput, engine used.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, TestDetail>,
    /// Tests that did not run, each with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    /// Every sample of each figure when the test set ran more than once
    /// (`run --repeat N`); the figure in `measurements` is their median.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub samples: BTreeMap<String, Samples>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<Score>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// Run-level notes (interrupted run, quick profile, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Set when the figures were not measured by this tool but read from
    /// another's printed result (`import storage-sh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported_from: Option<ImportedFrom>,
}

/// Where an imported report's figures were read from (docs/report.md#top-level).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImportedFrom {
    /// The printed result's kind: `storage-sh` (PiBenchmarks' summary table).
    pub format: String,
    /// The file it was read from, a URL, or `-` for standard input.
    pub source: String,
}

impl Report {
    /// An empty report carrying this tool's name and version.
    pub fn new(tool_version: &str) -> Self {
        Report {
            schema: SCHEMA.to_owned(),
            tool: Tool { name: "storage-score".to_owned(), version: tool_version.to_owned() },
            ..Report::default()
        }
    }
}

/// The machine a run was made on. No hostname, no user name.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct System {
    /// The device tree's `model` (`Raspberry Pi 4 Model B Rev 1.4`), or DMI's
    /// vendor and product name on a PC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub board: Option<String>,
    /// The kernel release, e.g. `6.6.51`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    /// The machine architecture as uname reports it: `aarch64`, `armv7l`, `x86_64`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The distribution's name and version, e.g. `Debian 12`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub version: String,
}

/// What the user named and what it resolved to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Target {
    /// The TARGET argument as given.
    pub input: String,
    /// The whole disk, e.g. `/dev/mmcblk0`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    /// The partition, e.g. `/dev/mmcblk0p2`, when the target lies on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_point: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filesystem: Option<String>,
    /// The mount source as mountinfo names it (may be a dm or loop device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mount_source: Option<String>,
    /// Devices stacked between the filesystem and the disk, top first
    /// (e.g. `["/dev/dm-0", "/dev/sda2"]` for LVM).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// For a loop device: the file behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backing_file: Option<String>,
    /// `MAJ:MIN` of the whole disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dev: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// The figures of docs/measurements.md#the-ten-figures, indexed by
/// [`Figure`], each in its reference tool's unit. In JSON, an object keyed
/// by [`Figure::key`] in [`REPORT_ORDER`], a figure not measured left out;
/// any other key is refused.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Measurements([Option<f64>; Figure::COUNT]);

impl std::ops::Index<Figure> for Measurements {
    type Output = Option<f64>;

    fn index(&self, figure: Figure) -> &Option<f64> {
        &self.0[figure as usize]
    }
}

impl std::ops::IndexMut<Figure> for Measurements {
    fn index_mut(&mut self, figure: Figure) -> &mut Option<f64> {
        &mut self.0[figure as usize]
    }
}

/// The keys in [`REPORT_ORDER`], as serde names the expected fields.
const REPORT_KEYS: [&str; Figure::COUNT] = {
    let mut keys = [""; Figure::COUNT];
    let mut i = 0;
    while i < Figure::COUNT {
        keys[i] = REPORT_ORDER[i].key();
        i += 1;
    }
    keys
};

impl Serialize for Measurements {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let measured: Vec<(Figure, f64)> = REPORT_ORDER.iter().filter_map(|&f| self[f].map(|v| (f, v))).collect();
        let mut map = s.serialize_map(Some(measured.len()))?;
        for (figure, value) in measured {
            map.serialize_entry(figure.key(), &Number(value))?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Measurements {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Measurements;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of measurements")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Measurements, A::Error> {
                use serde::de::Error;
                let mut out = Measurements::default();
                let mut seen = [false; Figure::COUNT];
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    let figure = Figure::from_key(&key).ok_or_else(|| A::Error::unknown_field(&key, &REPORT_KEYS))?;
                    if std::mem::replace(&mut seen[figure as usize], true) {
                        return Err(A::Error::duplicate_field(figure.key()));
                    }
                    out[figure] = map.next_value()?;
                }
                Ok(out)
            }
        }
        d.deserialize_map(Visitor)
    }
}

/// The measurement keys, in the order the table prints them ([`Figure::ALL`]).
pub const MEASUREMENT_KEYS: [&str; Figure::COUNT] = {
    let mut keys = [""; Figure::COUNT];
    let mut i = 0;
    while i < Figure::COUNT {
        keys[i] = Figure::ALL[i].key();
        i += 1;
    }
    keys
};

impl Measurements {
    /// The figure under `key`, or `None` when it is missing or the key is unknown.
    pub fn get(&self, key: &str) -> Option<f64> {
        self.figure(Figure::from_key(key)?)
    }

    /// Sets the figure under `key`; returns false for an unknown key.
    pub fn set(&mut self, key: &str, value: f64) -> bool {
        match Figure::from_key(key) {
            Some(figure) => {
                self.set_figure(figure, value);
                true
            }
            None => false,
        }
    }

    /// One figure, when it was measured.
    pub fn figure(&self, figure: Figure) -> Option<f64> {
        self[figure]
    }

    pub fn set_figure(&mut self, figure: Figure, value: f64) {
        self[figure] = Some(value);
    }

    /// The measured figures, in table order.
    pub fn iter(&self) -> impl Iterator<Item = (Figure, f64)> + '_ {
        Figure::ALL.into_iter().filter_map(|f| self[f].map(|v| (f, v)))
    }

    /// Measurements of the given figures, the others not measured.
    pub fn of(figures: impl IntoIterator<Item = (Figure, f64)>) -> Measurements {
        let mut out = Measurements::default();
        for (figure, value) in figures {
            out[figure] = Some(value);
        }
        out
    }
}

/// The values one figure took over repeated runs of the test set, in run
/// order, with their median (the scored figure), min and max.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Samples {
    #[serde(serialize_with = "ser_numbers")]
    pub values: Vec<f64>,
    #[serde(serialize_with = "ser_required")]
    pub median: f64,
    #[serde(serialize_with = "ser_required")]
    pub min: f64,
    #[serde(serialize_with = "ser_required")]
    pub max: f64,
}

impl Samples {
    /// The samples `values`, or `None` when there are none (or one is not a
    /// finite number). An even count's median is the mean of the middle two.
    pub fn of(values: Vec<f64>) -> Option<Samples> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        // The mean of two figures has at most one decimal more than they
        // do; rounding to six keeps 19.95 from printing as 19.950000000000003.
        let median =
            if n % 2 == 1 { sorted[n / 2] } else { ((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0 * 1e6).round() / 1e6 };
        Some(Samples { median, min: sorted[0], max: sorted[n - 1], values })
    }
}

fn ser_numbers<S: serde::Serializer>(values: &[f64], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq;
    let mut seq = s.serialize_seq(Some(values.len()))?;
    for v in values {
        seq.serialize_element(&Number(*v))?;
    }
    seq.end()
}

/// A figure written as [`ser_number`] writes it.
struct Number(f64);

impl Serialize for Number {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ser_number(&Some(self.0), s)
    }
}

/// Writes whole numbers as JSON integers (`3000`, not `3000.0`), as the
/// reference tools print IOPS and KiB/s.
pub(crate) fn ser_number<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => s.serialize_i64(*v as i64),
        Some(v) => s.serialize_f64(*v),
        None => s.serialize_none(),
    }
}

fn ser_required<S: serde::Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
    ser_number(&Some(*value), s)
}

/// Detail of one test: how it ran and its latency distribution.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TestDetail {
    /// `io_uring`, `threads` or `sync`.
    pub engine: crate::kinds::Engine,
    pub bytes: u64,
    pub ios: u64,
    pub seconds: f64,
    pub latency: Latency,
    /// Throughput per interval in MiB/s, for plots.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals_mib_s: Vec<f64>,
    #[serde(default)]
    pub interval_ms: u64,
    /// How the engine ran, when there is more to say than its name: the
    /// io_uring opcodes used, or why it fell back to threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine_detail: Option<String>,
    /// The figure is shaky: its timed window was short (under about 1 s),
    /// or the device ended before the reference tool's time was up.
    #[serde(default, skip_serializing_if = "is_false")]
    pub low_confidence: bool,
    /// The test was cut short (`--max-time`): the figure covers only the
    /// I/O done, and the score is not comparable.
    #[serde(default, skip_serializing_if = "is_false")]
    pub partial: bool,
    /// Why the figure is low-confidence or partial, and other facts about
    /// how the test ran, one sentence each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The device's own I/O counters over the timed window: proof that the
    /// test's bytes reached the device rather than a cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_io: Option<DeviceIo>,
    /// The state of the test file when the timed window began (and its size
    /// when it ended), as FIEMAP and fstat show it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_state: Option<FileState>,
    /// CPU seconds (user + system) the I/O engine's own threads used over
    /// the timed window: what the benchmark itself cost, so that a figure
    /// limited by the machine rather than the device shows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_s: Option<f64>,
}

/// A block device's I/O counters (`/sys/dev/block/MAJ:MIN/stat`) before and
/// after one test.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct DeviceIo {
    /// Kernel name of the device counted, e.g. `mmcblk0p2`.
    pub device: String,
    /// Bytes the test itself read or wrote.
    pub expected_bytes: u64,
    /// Bytes the device read and wrote in the window (sectors × 512).
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    /// Requests in flight on the device when the window opened and closed.
    pub in_flight_before: u64,
    pub in_flight_after: u64,
    /// At least nine tenths of the test's bytes were counted by the device.
    pub reached: bool,
}

/// The file a test met, as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct FileState {
    /// A file made for this test (a new inode), as the reference tool makes one.
    pub new_file: bool,
    pub inode: u64,
    /// The inode generation (FS_IOC_GETVERSION), which tells a new inode
    /// from an old one that reuses a freed inode number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u32>,
    /// Size when the timed window began, and when it ended.
    pub size_bytes: u64,
    pub size_after_bytes: u64,
    /// Bytes mapped by extents, and of those, bytes in unwritten
    /// (allocated but never written) extents.
    pub allocated_bytes: u64,
    pub unwritten_bytes: u64,
    pub extents: u64,
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Latency {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p99_9_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// A test that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    pub key: String,
    pub reason: String,
}

/// The score block.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Score {
    /// Absent when a figure the formula needs is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pibenchmarks: Option<u64>,
    /// The measurement keys the formula needed and did not get.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// False for the `quick` profile: not comparable with PiBenchmarks results.
    #[serde(default = "yes")]
    pub comparable: bool,
}

fn yes() -> bool {
    true
}

pub(crate) fn is_false(value: &bool) -> bool {
    !*value
}

/// Does the card meet the class it claims?
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Verdict {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub measured: Option<String>,
    #[serde(default)]
    pub checks: Vec<Check>,
    #[serde(default)]
    pub notes: Vec<String>,
    /// The verdict in one plain sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The run was too short to judge a class (the `quick` profile): the
    /// verdict is indicative only.
    #[serde(default, skip_serializing_if = "is_false")]
    pub indicative: bool,
}

/// One requirement of one class mark, against the measured figure.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Check {
    /// The mark, e.g. `A2`, `U3`, `V30`, `Class 10`.
    pub mark: String,
    /// What the mark requires, in words: `random write ≥ 2000 IOPS`.
    pub requirement: String,
    /// The measurement key compared.
    pub key: String,
    #[serde(serialize_with = "ser_required")]
    pub required: f64,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "ser_number")]
    pub measured: Option<f64>,
    pub unit: String,
    /// Absent when the figure was not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<bool>,
    /// Whether the card claims this mark.
    #[serde(default)]
    pub claimed: bool,
    /// Why `pass` is null although the figure was measured: the host caps it,
    /// command queueing is not shown active, or it lies within the margin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}
