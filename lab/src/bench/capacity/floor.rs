//! The floor of a genuine card: what any probe that looks through a write
//! cache of C bytes must spend on the slow card before its first read-back
//! means anything, measured on the same kind of card, in the same run, with
//! `dd` (direct I/O, 1 MiB requests):
//!
//! - **write only:** C bytes written (`--destructive`, which may lose what
//!   the card held, needs no more);
//! - **non-destructive:** the same C bytes read first and written back as
//!   they were. A probe that must give every byte back has to know each
//!   byte before it overwrites it, and a cache that keeps the newest copy
//!   of each address is only pushed out by C bytes of *different*
//!   addresses, so those C bytes must all be read: on a card that serves
//!   one request at a time, reading C plus writing C is the least any
//!   default-mode run can take.
//!
//! Our time on the genuine slow card is printed as a ratio of both.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use serde_json::{Value, json};

use super::super::sys;
use super::card::FakeCard;
use super::{Case, DeviceLock, MIB, size};

/// The two floors, as measured.
#[derive(Debug, Clone)]
pub struct Floor {
    pub bytes: u64,
    pub read: Duration,
    pub write: Duration,
    pub card: String,
}

impl Floor {
    /// Reading C and writing it back: the default mode's floor.
    pub fn non_destructive(&self) -> Duration {
        self.read + self.write
    }

    /// The line under the table: both floors, and `ours` as a multiple of each.
    pub fn line(&self, ours: Option<Duration>) -> String {
        let mut text = format!(
            "floor on {} (dd, direct I/O, 1 MiB requests): read {} {:.1} s + write it back {:.1} s = {:.1} s \
             (non-destructive); write only {:.1} s (--destructive)",
            self.card,
            size(Some(self.bytes)),
            self.read.as_secs_f64(),
            self.write.as_secs_f64(),
            self.non_destructive().as_secs_f64(),
            self.write.as_secs_f64()
        );
        if let Some(ours) = ours {
            text += &format!(
                "\nours on that card: {:.1} s = {:.2}× the non-destructive floor, {:.2}× the write-only one",
                ours.as_secs_f64(),
                ratio(ours, self.non_destructive()),
                ratio(ours, self.write)
            );
        }
        text
    }

    pub fn to_json(&self, ours: Option<Duration>) -> Value {
        json!({"card": self.card, "bytes": self.bytes, "read_s": self.read.as_secs_f64(),
               "write_s": self.write.as_secs_f64(), "non_destructive_s": self.non_destructive().as_secs_f64(),
               "ours_s": ours.map(|d| d.as_secs_f64()),
               "ours_to_non_destructive": ours.map(|d| ratio(d, self.non_destructive())),
               "ours_to_write_only": ours.map(|d| ratio(d, self.write))})
    }
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64().max(1e-9)
}

/// Measures both floors for `bytes` on a fresh `case` card, from its second
/// MiB on (where the probe's rewriting starts too).
pub fn measure(script: &Path, case: &Case, bytes: u64, scratch: &Path) -> Result<Floor> {
    let _lock = DeviceLock::take()?;
    let card = FakeCard::start(script, case)?;
    let (dev, copy) = (card.dev.dev_str(), scratch.join("floor.bin"));
    let (from_dev, to_dev) = (format!("if={dev}"), format!("of={dev}"));
    let (from_copy, to_copy) = (format!("if={}", copy.display()), format!("of={}", copy.display()));
    let count = format!("count={}", bytes / MIB);
    let dd = |args: &[&str]| sys::run("dd", &[args, &["bs=1M", &count, "status=none"]].concat());
    let read = dd(&[&from_dev, &to_copy, "iflag=direct", "skip=1"])?.wall;
    let write = dd(&[&from_copy, &to_dev, "oflag=direct", "seek=1", "conv=notrunc"])?.wall;
    let _ = std::fs::remove_file(&copy);
    let (changed, _) = card.intact()?;
    if changed != 0 {
        bail!("the floor's copy changed {changed} sectors of the card: it is not a faithful rewrite");
    }
    Ok(Floor { bytes, read, write, card: case.name.clone() })
}
