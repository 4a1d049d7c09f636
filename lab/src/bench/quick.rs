//! Step 6: `run --profile quick` beside the compat run, on the calibrated
//! slow card of docs/measurements.md's quick profile: a 1 GiB sparse file
//! in `/dev/shm` behind `losetup --direct-io=on`, ext4, throttled in the
//! root blkio group to read 2000 IOPS and 50 MiB/s, write 800 IOPS and
//! 20 MB/s. In memory, so that the throttle is its only limit: over a file
//! on a disk that other work shares, that work's flushes stall the loop
//! device's reads now and then, and its QD1 read figures scattered by 25%
//! from run to run in both profiles. The two profiles run in turn, `--rounds` times each (quick,
//! compat, quick, compat, …), so a machine that slows down mid-step slows
//! both; the medians of each side's wall times and figures are
//! compared. The quick profile should take 20 s or less, and each figure
//! should lie within ±3% of compat's ([`BAND`]).
//!
//! The spread of each side's samples is printed beside the medians, so that
//! a ratio outside the band can be told from noise.

use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::efficiency::median;
use super::guard::{Loop, Mount, Throttle, WorkDir};
use super::{parse, sys};

const GIB: u64 = 1 << 30;

/// The calibrated slow card.
const LIMITS: [(&str, u64); 4] = [
    ("read_iops_device", 2000),
    ("write_iops_device", 800),
    ("read_bps_device", 52_428_800),
    ("write_bps_device", 20_000_000),
];

/// Each quick figure should lie within this of compat's.
pub const BAND: (f64, f64) = (0.97, 1.03);

/// The quick profile's target time on this card.
pub const TARGET: Duration = Duration::from_secs(20);

const KEYS: [&str; storage_scoring::figure::Figure::COUNT] = storage_scoring::schema::MEASUREMENT_KEYS;

/// One run of one profile.
#[derive(Debug, Clone)]
pub struct Run {
    pub wall: Duration,
    /// The figures, in [`KEYS`] order (NaN for a missing one).
    pub figures: Vec<f64>,
    /// How many figures the run marked approximate.
    pub approximate: usize,
}

/// Everything step 6 measured.
#[derive(Debug, Clone)]
pub struct Quick {
    pub quick: Vec<Run>,
    pub compat: Vec<Run>,
}

impl Quick {
    fn wall(runs: &[Run]) -> f64 {
        median(runs.iter().map(|r| r.wall.as_secs_f64()).collect())
    }

    fn figure(runs: &[Run], i: usize) -> f64 {
        median(runs.iter().map(|r| r.figures[i]).collect())
    }

    /// quick / compat for figure `i`.
    pub fn ratio(&self, i: usize) -> f64 {
        Self::figure(&self.quick, i) / Self::figure(&self.compat, i)
    }
}

pub fn in_band(ratio: f64) -> bool {
    ratio.is_finite() && ratio >= BAND.0 && ratio <= BAND.1
}

/// Sets up the card, runs both profiles `rounds` times in turn, tears down.
pub fn run(binary: &Path, rounds: usize) -> Result<Quick> {
    eprintln!("bench: quick: 1 GiB loop device in /dev/shm, ext4, read 2000 IOPS / 50 MiB/s, write 800 IOPS / 20 MB/s");
    let work = WorkDir::create(Path::new("/dev/shm"), "quick")?;
    let image = work.sparse_file("disk.img", GIB)?;
    let device = Loop::attach(&image, true)?;
    let mount = Mount::ext4(&device, &work.path.join("mnt"))?;
    let _throttle = Throttle::apply(&device, &LIMITS)?;
    let target = mount.dir.to_str().context("mount point is not UTF-8")?;
    let binary = binary.to_str().context("binary path is not UTF-8")?;

    sys::wait_for_quiet(Duration::from_secs(3), Duration::from_secs(900))?;
    let (mut quick, mut compat) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        eprintln!("bench: quick: round {round}/{rounds}");
        quick.push(one(binary, &["run", "--json", "--profile", "quick", target])?);
        compat.push(one(binary, &["run", "--json", target])?);
    }
    Ok(Quick { quick, compat })
}

fn one(binary: &str, args: &[&str]) -> Result<Run> {
    let ran = sys::run(binary, args)?;
    let report = parse::report(&ran.stdout)?;
    let figures = KEYS.iter().map(|k| report["measurements"][k].as_f64().unwrap_or(f64::NAN)).collect();
    let approximate = KEYS.iter().filter(|k| report["details"][k]["low_confidence"] == true).count();
    Ok(Run { wall: ran.wall, figures, approximate })
}

/// The table: wall times, then each figure's medians, ratio and spreads.
pub fn table(q: &Quick) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nQuick against compat on the calibrated slow card (read 2000 IOPS / 50 MiB/s, write 800 IOPS / 20 MB/s); medians of {} runs each, in turn",
        q.quick.len()
    );
    let _ = writeln!(
        out,
        "{:<26} | {:>10} | {:>10} | {:>6} | {:<17} | {:<17}",
        "", "quick", "compat", "ratio", "quick min–max", "compat min–max"
    );
    let _ = writeln!(out, "{}", "-".repeat(26 + 10 + 10 + 6 + 17 + 17 + 5 * 3));
    let (qw, cw) = (Quick::wall(&q.quick), Quick::wall(&q.compat));
    let ok = if qw <= TARGET.as_secs_f64() { "OK" } else { "OUT" };
    let _ = writeln!(
        out,
        "{:<26} | {:>10.1} | {:>10.1} | {:>6.3} | {:<17} | {:<17} | ≤ {} s {ok}",
        "wall time (s)",
        qw,
        cw,
        qw / cw,
        range(&q.quick, |r| r.wall.as_secs_f64()),
        range(&q.compat, |r| r.wall.as_secs_f64()),
        TARGET.as_secs()
    );
    for (i, key) in KEYS.iter().enumerate() {
        let ratio = q.ratio(i);
        let _ = writeln!(
            out,
            "{:<26} | {:>10} | {:>10} | {:>6.3} | {:<17} | {:<17} | {}",
            key,
            number(Quick::figure(&q.quick, i)),
            number(Quick::figure(&q.compat, i)),
            ratio,
            range(&q.quick, |r| r.figures[i]),
            range(&q.compat, |r| r.figures[i]),
            if in_band(ratio) { "OK" } else { "OUT" }
        );
    }
    let approximate: usize = q.quick.iter().map(|r| r.approximate).sum();
    let _ = writeln!(out, "  quick figures marked ≈ (not settled): {approximate} of {}", 9 * q.quick.len());
    out
}

fn range(runs: &[Run], f: impl Fn(&Run) -> f64) -> String {
    let values: Vec<f64> = runs.iter().map(f).collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{}–{}", number(lo), number(hi))
}

fn number(v: f64) -> String {
    if v.abs() >= 1000.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

/// Step 6's part of `target/bench/latest.json`.
pub fn to_json(q: &Quick) -> Value {
    let runs = |runs: &[Run]| -> Vec<Value> {
        runs.iter()
            .map(|r| {
                let figures: serde_json::Map<String, Value> =
                    KEYS.iter().zip(&r.figures).map(|(k, v)| ((*k).to_owned(), json!(v))).collect();
                json!({"wall_s": r.wall.as_secs_f64(), "figures": figures, "approximate": r.approximate})
            })
            .collect()
    };
    let ratios: serde_json::Map<String, Value> =
        KEYS.iter().enumerate().map(|(i, k)| ((*k).to_owned(), json!(q.ratio(i)))).collect();
    json!({
        "limits": {"read_iops": 2000, "read_bps": 52_428_800u64, "write_iops": 800, "write_bps": 20_000_000u64},
        "band": [BAND.0, BAND.1], "target_s": TARGET.as_secs(),
        "median_wall_s": {"quick": Quick::wall(&q.quick), "compat": Quick::wall(&q.compat)},
        "ratios": ratios, "quick": runs(&q.quick), "compat": runs(&q.compat),
    })
}
