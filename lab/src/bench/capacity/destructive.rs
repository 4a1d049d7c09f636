//! `--destructive` on the slow genuine 64 GiB card against its write
//! floor, alone and repeated (`cargo xtask bench capacity --destructive
//! [N]`): each of N trials times `dd` writing the cache bound with direct
//! I/O to a fresh card of that kind (the least a probe that looks through
//! a cache of that size must write), then `verify-capacity --destructive
//! --yes` on another fresh one, one right after the other, and takes the
//! ratio of the two. The machine is shared: a ratio of the same trial means
//! more than either time, and the median of the trials more than any one.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::super::sys;
use super::card::FakeCard;
use super::{CACHE_BOUND, Case, DeviceLock, MIB, run_for, size};

/// One trial: the floor, then ours, each on a fresh card.
#[derive(Debug, Clone)]
pub struct Trial {
    pub floor: Duration,
    pub ours: Duration,
    pub verdict: String,
    pub usable: Option<u64>,
    /// Bytes the card saw written by ours, and what ours says it read.
    pub written: u64,
    pub read: u64,
}

impl Trial {
    pub fn ratio(&self) -> f64 {
        self.ours.as_secs_f64() / self.floor.as_secs_f64().max(1e-9)
    }

    /// Genuine, every byte of it.
    pub fn right(&self, case: &Case) -> bool {
        self.verdict == "genuine" && self.usable == Some(case.announced)
    }
}

/// Runs `trials` trials on `case` (the slow genuine card).
pub fn run(binary: &Path, script: &Path, case: &Case, trials: usize) -> Result<Vec<Trial>> {
    let mut done = Vec::new();
    for i in 0..trials {
        sys::check_interrupt()?;
        eprintln!("bench: capacity --destructive, trial {} of {trials}: {}", i + 1, case.name);
        let _lock = DeviceLock::take()?;
        let floor = {
            let card = FakeCard::start(script, case)?;
            let of = format!("of={}", card.dev.dev_str());
            let count = format!("count={}", CACHE_BOUND / MIB);
            let args = ["if=/dev/zero", &of, "bs=1M", &count, "seek=1", "oflag=direct", "conv=notrunc", "status=none"];
            sys::run("dd", &args)?.wall
        };
        let card = FakeCard::start(script, case)?;
        let before = card.bytes_written()?;
        let mut cmd = Command::new(binary);
        cmd.args(["verify-capacity", card.dev.dev_str(), "--destructive", "--yes", "--json"]);
        let started = Instant::now();
        let out = run_for(cmd, Duration::from_secs(3600)).context("storage-score")?;
        let ours = started.elapsed();
        if !matches!(out.status.code(), Some(0 | 4)) {
            bail!("storage-score verify-capacity failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let doc: Value = serde_json::from_slice(&out.stdout).context("verify-capacity JSON")?;
        let trial = Trial {
            floor,
            ours,
            verdict: doc["verdict"].as_str().unwrap_or("?").to_owned(),
            usable: doc["usable_bytes"].as_u64(),
            written: card.bytes_written()? - before,
            read: doc["bytes_read"].as_u64().unwrap_or(0),
        };
        eprintln!("bench:   {}", line(&trial, case));
        done.push(trial);
    }
    Ok(done)
}

/// One trial in a line.
pub fn line(t: &Trial, case: &Case) -> String {
    format!(
        "{} {} {}: {:.1} s, {:.1} MiB written, {:.1} MiB read; floor {:.1} s; {:.3}× the floor",
        if t.right(case) { "✓" } else { "✗" },
        t.verdict,
        size(t.usable),
        t.ours.as_secs_f64(),
        t.written as f64 / MIB as f64,
        t.read as f64 / MIB as f64,
        t.floor.as_secs_f64(),
        t.ratio()
    )
}

/// The trials, and the median, least and largest ratio.
pub fn table(trials: &[Trial], case: &Case) -> String {
    let mut out = format!(
        "\nverify-capacity --destructive on {} against dd writing {} with direct I/O (same trial, fresh cards)\n",
        case.name,
        size(Some(CACHE_BOUND))
    );
    for (i, t) in trials.iter().enumerate() {
        out += &format!("trial {}: {}\n", i + 1, line(t, case));
    }
    let mut ratios: Vec<f64> = trials.iter().map(Trial::ratio).collect();
    ratios.sort_by(f64::total_cmp);
    if let (Some(least), Some(most)) = (ratios.first(), ratios.last()) {
        out += &format!(
            "times the floor: median {:.3} (least {least:.3}, largest {most:.3}, {} trials)\n",
            median(&ratios),
            ratios.len()
        );
    }
    out
}

pub fn to_json(trials: &[Trial], case: &Case) -> Value {
    let ratios: Vec<f64> = trials.iter().map(Trial::ratio).collect();
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    json!({
        "card": case.name,
        "floor_bytes": CACHE_BOUND,
        "trials": trials.iter().map(|t| json!({
            "floor_s": t.floor.as_secs_f64(), "ours_s": t.ours.as_secs_f64(), "times_the_floor": t.ratio(),
            "verdict": t.verdict, "usable_bytes": t.usable, "right": t.right(case),
            "bytes_written": t.written, "bytes_read": t.read,
        })).collect::<Vec<_>>(),
        "median_times_the_floor": (!sorted.is_empty()).then(|| median(&sorted)),
    })
}

/// The median of sorted numbers.
fn median(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle() {
        assert_eq!(median(&[1.0, 2.0, 9.0]), 2.0);
        assert_eq!(median(&[1.0, 2.0, 4.0, 9.0]), 3.0);
        assert_eq!(median(&[]), 0.0);
    }
}
