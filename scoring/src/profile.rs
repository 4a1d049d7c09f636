//! The `profile` section of a `storage-score/1` report (docs/profile.md): what
//! `storage-score profile` measured in its deep studies.
//!
//! The keys docs/profile.md fixes are here under their names: `sustained`
//! (`bytes_written`, `cache_bytes`, `before_mb_s`, `after_mb_s`,
//! `steady_mb_s`, `min_1s_mb_s`, `points`), `sweep` (`target`, `rw`, `bs`,
//! `jobs`, `mb_s`, `iops`) and `transfer_sizes` (`rw`, `bytes`, `mb_s`).
//! The rest (levels, latency histograms, samples for the scatter, notes) is
//! this project's own, and carries everything the plots need, so that a
//! saved report can be drawn again without the device.
//!
//! Rates are MB/s (10^6 bytes per second), as docs/profile.md fixes them;
//! latencies are µs.
//!
//! A profile report is a [`Report`] with no measurements, score or verdict
//! and a `profile` object ([`ProfileReport`]). `Report`'s own `profile` key
//! (the run profile, `compat` or `quick`) is a string, so a profile report
//! loads as a [`ProfileReport`], not as a bare `Report`.

use serde::{Deserialize, Serialize};

use crate::schema::{DeviceIo, Latency, Report};

/// A whole `storage-score profile --json` document.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ProfileReport {
    /// `schema`, `tool`, `target`, `device`, `notes`: as in every report.
    /// Its `profile` (the run profile name) stays empty here.
    #[serde(flatten)]
    pub report: Report,
    pub profile: Studies,
}

/// The studies that ran, and what the reader must know about them.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Studies {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustained: Option<Sustained>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep: Vec<SweepCell>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transfer_sizes: Vec<TransferPoint>,
    /// `file` (a nameless scratch file in a mounted filesystem) or `raw`
    /// (the unmounted device, from [`Studies::raw_offset`] on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<String>,
    /// Where the studies' region starts on the raw device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_offset: Option<u64>,
    /// The region the sweep and the transfer-size scan read and write:
    /// bytes from the start of the file (or from `raw_offset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_bytes: Option<u64>,
    /// The time box of the whole command, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_time_s: Option<f64>,
    /// Studies that were asked for and did not run, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<SkippedStudy>,
    /// One sentence each: time boxes, sizes chosen, what limits a figure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A study that did not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedStudy {
    /// `sustained`, `sweep` or `transfer_sizes`.
    pub study: crate::kinds::Study,
    pub reason: String,
}

/// The sustained sequential write (fresh), and the same again after random
/// writes when `--after-random` asked for it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Sustained {
    #[serde(flatten)]
    pub fresh: Curve,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_random: Option<AfterRandom>,
}

/// The second pass: random 4 KiB writes for a while, then the same region
/// written in sequence again.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct AfterRandom {
    /// How long the random writes ran, and how many there were.
    pub random_seconds: f64,
    pub random_writes: u64,
    pub random_iops: f64,
    #[serde(flatten)]
    pub curve: Curve,
}

/// One sequential write pass, chunk by chunk, and what its curve shows.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Curve {
    pub bytes_written: u64,
    /// Where the write rate drops and stays down (the cache's size);
    /// absent when it never does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_bytes: Option<u64>,
    /// The rates of the long levels before and after that step (absent
    /// with it), not of a transition of a few chunks (docs/profile.md#the-sustained-write).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_mb_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_mb_s: Option<f64>,
    /// The rate the write settled to: its last long level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_mb_s: Option<f64>,
    /// The slowest stretch of at least one second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_1s_mb_s: Option<f64>,
    /// `[offset in bytes, MB/s]` per chunk.
    #[serde(default)]
    pub points: Vec<(u64, f64)>,
    /// Bytes per chunk (one O_DIRECT write each, one in flight).
    #[serde(default)]
    pub chunk_bytes: u64,
    /// What the pass meant to write; less was written when its time box ran out.
    #[serde(default)]
    pub planned_bytes: u64,
    /// From the first write to the end of the final fsync.
    #[serde(default)]
    pub seconds: f64,
    /// `bytes_written` over `seconds`.
    #[serde(default)]
    pub mean_mb_s: f64,
    /// The levels the curve splits into, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<Level>,
    /// The time box stopped the pass before `planned_bytes`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub time_boxed: bool,
    /// Per-chunk write latency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<LatencyHistogram>,
    /// The device's own counters over the pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_io: Option<DeviceIo>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A stretch of a curve at one rate.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Level {
    pub from_bytes: u64,
    pub to_bytes: u64,
    pub mb_s: f64,
}

/// One cell of the block size × jobs sweep.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SweepCell {
    /// `file` or `raw`.
    pub target: String,
    /// `read` or `write` (sequential, as fio's `rw=read`/`rw=write`).
    pub rw: String,
    pub bs: u64,
    pub jobs: u32,
    /// Absent when the cell was skipped (see `skipped`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "ser_whole")]
    pub iops: Option<f64>,
    #[serde(default)]
    pub ios: u64,
    #[serde(default)]
    pub bytes: u64,
    #[serde(default)]
    pub seconds: f64,
    /// The cell's time box: no I/O starts after it (I/O in flight finishes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_box_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<crate::kinds::Engine>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Random O_DIRECT I/O of one transfer size, one in flight.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct TransferPoint {
    pub rw: String,
    pub bytes: u64,
    /// Bytes moved over the time taken, as fio's bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mb_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none", serialize_with = "ser_whole")]
    pub iops: Option<f64>,
    /// Per-I/O rates (`bytes` over each I/O's latency): median, p10, p90.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_mb_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p10_mb_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_mb_s: Option<f64>,
    #[serde(default)]
    pub ios: u64,
    #[serde(default)]
    pub seconds: f64,
    /// The point's time box.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_box_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latency>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub histogram: Option<LatencyHistogram>,
    /// Per-I/O rates of up to a few hundred I/Os spread over the run, for
    /// the scatter plot.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples_mb_s: Vec<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Latencies counted in logarithmic buckets: `per_decade` buckets per power
/// of ten, bucket `k` holding latencies from 10^(k/per_decade) µs up to the
/// next bucket's start. Only buckets with a count are listed.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LatencyHistogram {
    pub per_decade: u32,
    /// `[lower bound in µs, count]`.
    pub buckets: Vec<(f64, u64)>,
}

impl LatencyHistogram {
    /// The upper bound of the bucket starting at `lower_us`.
    pub fn upper_us(&self, lower_us: f64) -> f64 {
        lower_us * 10f64.powf(1.0 / f64::from(self.per_decade.max(1)))
    }

    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Whole numbers as JSON integers (`1977`, not `1977.0`), as fio prints IOPS.
fn ser_whole<S: serde::Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) if v.fract() == 0.0 && v.abs() < 9.0e15 => s.serialize_i64(*v as i64),
        Some(v) => s.serialize_f64(*v),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of docs/profile.md, with the keys it fixes.
    const DOCS_EXAMPLE: &str = r#"{
      "schema": "storage-score/1",
      "tool": {"name": "storage-score", "version": "0.1.0"},
      "profile": {
        "sustained": {"bytes_written": 805306368, "cache_bytes": 268435456, "before_mb_s": 40.0, "after_mb_s": 10.0,
                      "steady_mb_s": 10.0, "min_1s_mb_s": 9.6, "points": [[0, 40.1], [4194304, 39.8]]},
        "sweep": [{"target": "file", "rw": "read", "bs": 4096, "jobs": 1, "mb_s": 8.1, "iops": 1977}],
        "transfer_sizes": [{"rw": "read", "bytes": 512, "mb_s": 0.9}]
      }
    }"#;

    #[test]
    fn reads_the_design_example() {
        let doc: ProfileReport = serde_json::from_str(DOCS_EXAMPLE).expect("parse");
        let sustained = doc.profile.sustained.as_ref().expect("sustained");
        assert_eq!(sustained.fresh.cache_bytes, Some(268_435_456));
        assert_eq!(sustained.fresh.points[1], (4_194_304, 39.8));
        assert_eq!(doc.profile.sweep[0].iops, Some(1977.0));
        assert_eq!(doc.profile.transfer_sizes[0].mb_s, Some(0.9));
        assert_eq!(doc.report.schema, "storage-score/1");
    }

    #[test]
    fn writes_the_fixed_keys_where_design_puts_them() {
        let doc: ProfileReport = serde_json::from_str(DOCS_EXAMPLE).expect("parse");
        let value = serde_json::to_value(&doc).expect("serialize");
        let profile = &value["profile"];
        for key in ["bytes_written", "cache_bytes", "before_mb_s", "after_mb_s", "steady_mb_s", "min_1s_mb_s"] {
            assert!(profile["sustained"][key].is_number(), "{key}: {}", profile["sustained"]);
        }
        assert_eq!(profile["sustained"]["points"][0], serde_json::json!([0, 40.1]));
        assert_eq!(profile["sweep"][0]["iops"], serde_json::json!(1977));
        assert_eq!(profile["sweep"][0]["target"], "file");
        assert_eq!(profile["transfer_sizes"][0]["bytes"], 512);
        assert!(value.get("measurements").is_none(), "no measurements in a profile report");
        // The report's own `profile` (the run profile name) is not written.
        assert!(value["profile"].is_object());
    }

    #[test]
    fn no_step_means_no_cache_keys() {
        let curve = Curve { bytes_written: 8 << 20, steady_mb_s: Some(20.0), ..Curve::default() };
        let value = serde_json::to_value(Sustained { fresh: curve, after_random: None }).expect("serialize");
        assert!(value.get("cache_bytes").is_none() && value.get("before_mb_s").is_none(), "{value}");
        assert_eq!(value["steady_mb_s"], 20.0);
    }

    #[test]
    fn histogram_bounds() {
        let h = LatencyHistogram { per_decade: 5, buckets: vec![(100.0, 3), (158.489, 2)] };
        assert!((h.upper_us(100.0) - 158.489).abs() < 0.01);
        assert_eq!(h.total(), 5);
    }
}
