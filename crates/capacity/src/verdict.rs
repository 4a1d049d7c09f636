//! From what the probe saw to what the user needs: the kind of fake (f3's
//! names, `libdevs.c`: genuine, wraparound, limbo, chain, plus I/O errors),
//! the usable size, the first bad byte, a partition that is safe to use with
//! the `sfdisk` line that makes it, and the write cache when one was seen.
//! The JSON shape is docs/verify-capacity.md's; [`Report::text`] is the human one.

use std::fmt::Write;

use serde::Serialize;

use storage_scoring::kinds::CapacityMode;

use crate::probe::{Bad, Probed};
use crate::stamp::Foreign;

/// The kinds of answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every probed address kept its own data.
    Genuine,
    /// Addresses past the real size reach lower storage (modulo the real
    /// size, maybe at an offset).
    Wraparound,
    /// Writes past the real size vanish; reads give a fixed byte, stale
    /// data, or the last block written there.
    Limbo,
    /// Writes past the real size vanish, and further up addresses reach
    /// the real storage again.
    Chain,
    /// The device fails reads or writes past an offset.
    IoErrors,
}

impl Verdict {
    pub fn is_fake(self) -> bool {
        self != Verdict::Genuine
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Genuine => "genuine",
            Verdict::Wraparound => "wraparound",
            Verdict::Limbo => "limbo",
            Verdict::Chain => "chain",
            Verdict::IoErrors => "io-errors",
        }
    }
}

/// What reads past the real size give, on limbo and chain cards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimboReads {
    Zeros,
    Ones,
    /// Intact blocks of an earlier run.
    OtherRun,
    /// Damaged copies of what was written.
    Damaged,
    /// Old or random data that does not change.
    Other,
    /// The last block written anywhere past the real size.
    LastWrite,
}

impl LimboReads {
    fn of(foreign: Foreign) -> LimboReads {
        match foreign {
            Foreign::Zeros => LimboReads::Zeros,
            Foreign::Ones => LimboReads::Ones,
            Foreign::OtherRun => LimboReads::OtherRun,
            Foreign::Damaged => LimboReads::Damaged,
            Foreign::Other => LimboReads::Other,
        }
    }

    /// In words, for the report.
    pub fn describe(self) -> &'static str {
        match self {
            LimboReads::LastWrite => "the last block written there",
            LimboReads::Zeros => Foreign::Zeros.describe(),
            LimboReads::Ones => Foreign::Ones.describe(),
            LimboReads::OtherRun => Foreign::OtherRun.describe(),
            LimboReads::Damaged => Foreign::Damaged.describe(),
            LimboReads::Other => Foreign::Other.describe(),
        }
    }
}

/// A partition that stays inside the real storage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SafePartition {
    pub start_bytes: u64,
    pub size_bytes: u64,
    /// The shell line that writes a DOS label with that one partition.
    pub sfdisk: String,
}

/// A write cache that answered for recent writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Cache {
    /// About this many bytes (the middle of what the markers allow).
    pub bytes: u64,
    pub at_least_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at_most_bytes: Option<u64>,
}

/// The answer of `verify-capacity DEVICE`, as printed with `--json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub device: String,
    pub verdict: Verdict,
    pub announced_bytes: u64,
    pub usable_bytes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_bad_byte: Option<u64>,
    /// The probe's resolution: the real size lies within
    /// `[usable_bytes, first_bad_byte]`, which are at most this far apart
    /// (one sector when the boundary was found exactly).
    pub granule_bytes: u64,
    /// Wraparound: the first address that reaches lower storage (the first
    /// bad byte). Chain: how far up addresses reach the real storage again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wraps_at_bytes: Option<u64>,
    /// Wraparound: the address whose storage `wraps_at_bytes` reaches; 0
    /// for a plain wrap, more for an offset wrap.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wraps_onto_bytes: Option<u64>,
    /// What reads past the real size give, for limbo and chain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limbo_reads: Option<LimboReads>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<Cache>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub safe_partition: Option<SafePartition>,
    /// `non-destructive` (every byte restored) or `destructive`.
    pub mode: CapacityMode,
    pub rounds: u32,
    /// Bytes written to the device, restores included.
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Bytes written between each probe block and its read-back.
    pub flush_bytes: u64,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

const MIB: u64 = 1 << 20;

impl Report {
    /// Turns a probe's findings into the report for `device`.
    pub fn new(device: &str, probed: &Probed, destructive: bool) -> Report {
        let verdict = classify(probed);
        let limbo_reads = match probed.bad_kind {
            _ if !matches!(verdict, Verdict::Limbo | Verdict::Chain) => None,
            Some(Bad::Vanished(kind)) => Some(LimboReads::of(kind)),
            Some(Bad::LastWrite | Bad::Alias(_)) => Some(LimboReads::LastWrite),
            _ => None,
        };
        let cache = probed.cache.map(|c| Cache {
            bytes: c.at_most.map_or(c.at_least, |most| (c.at_least + most) / 2),
            at_least_bytes: c.at_least,
            at_most_bytes: c.at_most,
        });
        let usable = probed.usable;
        let wraps = probed.wrap.filter(|_| matches!(verdict, Verdict::Wraparound | Verdict::Chain));
        Report {
            device: device.to_owned(),
            verdict,
            announced_bytes: probed.announced,
            usable_bytes: usable,
            first_bad_byte: probed.first_bad,
            granule_bytes: probed.granule,
            wraps_at_bytes: wraps.map(|w| w.at),
            wraps_onto_bytes: wraps.and_then(|w| w.onto).filter(|_| verdict == Verdict::Wraparound),
            limbo_reads,
            cache,
            safe_partition: if verdict.is_fake() { safe_partition(device, usable) } else { None },
            mode: if destructive { CapacityMode::Destructive } else { CapacityMode::NonDestructive },
            rounds: probed.rounds,
            bytes_written: probed.bytes_written,
            bytes_read: probed.bytes_read,
            flush_bytes: probed.flush_bytes,
            seconds: 0.0,
            notes: probed.notes.clone(),
        }
    }

    /// The human answer, several lines, for stdout.
    pub fn text(&self) -> String {
        let mut out = String::new();
        let claimed = size(self.announced_bytes);
        if self.verdict == Verdict::Genuine {
            let _ = writeln!(out, "{}: genuine: all {claimed} hold their data", self.device);
        } else {
            let _ = writeln!(
                out,
                "{}: FAKE ({}): {} usable of the {claimed} it claims",
                self.device,
                self.verdict.as_str(),
                size(self.usable_bytes)
            );
            let _ = writeln!(out, "  {}", self.explain());
            if let Some(bad) = self.first_bad_byte {
                let _ = writeln!(out, "  first bad byte: {bad} ({})", size(bad));
            }
            match &self.safe_partition {
                Some(p) => {
                    let _ = writeln!(
                        out,
                        "  safe partition: {} starting at 1 MiB; to make it (ERASES the card):\n    {}",
                        size(p.size_bytes),
                        p.sfdisk
                    );
                }
                None => {
                    let _ = writeln!(out, "  no part of it is safe to use");
                }
            }
        }
        if let Some(cache) = &self.cache {
            let _ = writeln!(out, "  a write cache of about {} masks recent writes", size(cache.bytes));
        }
        for note in &self.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        let restored = if self.mode == CapacityMode::Destructive {
            "nothing restored (--destructive)"
        } else {
            "every byte restored"
        };
        let _ = writeln!(
            out,
            "  checked in {:.1} s, {} written, {} read, {restored}",
            self.seconds,
            size(self.bytes_written),
            size(self.bytes_read)
        );
        out
    }

    /// One line for stderr when the exit code says "fake".
    pub fn summary(&self) -> String {
        self.summary_with(" (see the sfdisk line above)")
    }

    /// [`Self::summary`] where no sfdisk line was printed (a batch's card):
    /// it names the command that prints one.
    pub fn summary_alone(&self) -> String {
        self.summary_with(&format!(" (storage-score verify-capacity {} prints the sfdisk line)", self.device))
    }

    fn summary_with(&self, where_sfdisk: &str) -> String {
        format!(
            "{} is fake ({}): {} usable of the {} it claims{}",
            self.device,
            self.verdict.as_str(),
            size(self.usable_bytes),
            size(self.announced_bytes),
            match &self.safe_partition {
                Some(p) => format!("; use at most {}{where_sfdisk}", size(p.size_bytes)),
                None => "; do not use it".to_owned(),
            }
        )
    }

    fn explain(&self) -> String {
        let bad = self.first_bad_byte.map(size).unwrap_or_default();
        match self.verdict {
            Verdict::Genuine => String::new(),
            Verdict::Wraparound => match self.wraps_onto_bytes {
                Some(onto) if onto > 0 => format!(
                    "from {bad} on, addresses wrap around onto byte {onto} ({}): writing there destroys data below",
                    size(onto)
                ),
                _ => format!(
                    "from {bad} on, addresses wrap around onto the start: writing there destroys data at the beginning"
                ),
            },
            Verdict::Limbo => format!(
                "writes from {bad} on vanish; reading there gives {}",
                self.limbo_reads.map(LimboReads::describe).unwrap_or("something else")
            ),
            Verdict::Chain => format!(
                "writes from {bad} on vanish, and from {} on addresses wrap around onto the start",
                self.wraps_at_bytes.map(size).unwrap_or_default()
            ),
            Verdict::IoErrors => format!("from {bad} on, the card fails reads or writes"),
        }
    }
}

fn classify(probed: &Probed) -> Verdict {
    let Some(first_bad) = probed.first_bad else { return Verdict::Genuine };
    match probed.bad_kind {
        Some(Bad::Io(_)) => Verdict::IoErrors,
        Some(Bad::Alias(onto)) if onto < first_bad => Verdict::Wraparound,
        _ if probed.wrap.is_some() => Verdict::Chain,
        _ => Verdict::Limbo,
    }
}

/// One partition from 1 MiB to the last whole MiB of usable storage.
fn safe_partition(device: &str, usable: u64) -> Option<SafePartition> {
    let end = usable / MIB * MIB;
    if end < 2 * MIB {
        return None;
    }
    let size_bytes = end - MIB;
    Some(SafePartition {
        start_bytes: MIB,
        size_bytes,
        sfdisk: format!(
            "printf 'label: dos\\nstart=2048, size={}, type=c\\n' | sudo sfdisk {device}",
            size_bytes / 512
        ),
    })
}

/// Bytes in binary units with two decimals: "1.00 GiB".
pub fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 { format!("{bytes} bytes") } else { format!("{value:.2} {}", UNITS[unit]) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::{Access, CacheSeen, Wrap};

    fn probed(first_bad: Option<u64>, usable: u64, wrap: Option<Wrap>, bad: Option<Bad>) -> Probed {
        Probed {
            announced: 4 << 30,
            usable,
            first_bad,
            bad_kind: bad,
            wrap,
            cache: None,
            granule: 512,
            rounds: 2,
            bytes_written: 0,
            bytes_read: 0,
            flush_bytes: 0,
            notes: Vec::new(),
        }
    }

    #[test]
    fn kinds() {
        let g = 1 << 30;
        let at = |at: u64, onto: Option<u64>| Some(Wrap { at, onto });
        assert_eq!(classify(&probed(None, 4 << 30, None, None)), Verdict::Genuine);
        assert_eq!(classify(&probed(Some(g), g, at(g, Some(0)), Some(Bad::Alias(0)))), Verdict::Wraparound);
        assert_eq!(classify(&probed(Some(g), g, at(g, Some(5 << 20)), Some(Bad::Alias(5 << 20)))), Verdict::Wraparound);
        assert_eq!(
            classify(&probed(Some(g / 2), g / 2, at(g, None), Some(Bad::Vanished(Foreign::Zeros)))),
            Verdict::Chain
        );
        assert_eq!(classify(&probed(Some(g), g, None, Some(Bad::Vanished(Foreign::Ones)))), Verdict::Limbo);
        assert_eq!(classify(&probed(Some(g), g, None, Some(Bad::LastWrite))), Verdict::Limbo);
        assert_eq!(classify(&probed(Some(g), g, None, Some(Bad::Io(Access::Read)))), Verdict::IoErrors);
    }

    #[test]
    fn the_safe_partition_ends_inside_the_real_storage() {
        let p = safe_partition("/dev/sdb", (1 << 30) + 12345).expect("partition");
        assert_eq!(p.start_bytes + p.size_bytes, 1 << 30);
        assert_eq!(p.sfdisk, "printf 'label: dos\\nstart=2048, size=2095104, type=c\\n' | sudo sfdisk /dev/sdb");
        assert_eq!(safe_partition("/dev/sdb", MIB + 5), None);
    }

    #[test]
    fn json_has_the_contract_keys() {
        let mut p = probed(Some(1 << 30), 1 << 30, Some(Wrap { at: 1 << 30, onto: Some(0) }), Some(Bad::Alias(0)));
        p.cache = Some(CacheSeen { at_least: 4 << 20, at_most: Some(6 << 20) });
        let json = serde_json::to_value(Report::new("/dev/sdb", &p, false)).expect("json");
        assert_eq!(json["verdict"], "wraparound");
        assert_eq!(json["announced_bytes"], 4u64 << 30);
        assert_eq!(json["usable_bytes"], 1u64 << 30);
        assert_eq!(json["first_bad_byte"], 1u64 << 30);
        assert_eq!(json["wraps_at_bytes"], 1u64 << 30);
        assert_eq!(json["wraps_onto_bytes"], 0);
        assert_eq!(json["granule_bytes"], 512);
        assert_eq!(json["cache"]["bytes"], 5u64 << 20);
        let genuine = serde_json::to_value(Report::new("/dev/sdb", &probed(None, 4 << 30, None, None), false));
        assert!(genuine.expect("json").get("first_bad_byte").is_none());
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(size(1 << 30), "1.00 GiB");
        assert_eq!(size(1536), "1.50 KiB");
        assert_eq!(size(12), "12 bytes");
    }
}
