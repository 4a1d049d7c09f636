//! The report's other closed words: how verify-capacity wrote, which I/O
//! engine ran a test, which `profile` study a note is about. Each reads an
//! older or newer report's unfamiliar word as `Unknown` rather than
//! failing, as the health enums do.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Whether verify-capacity put back what it wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CapacityMode {
    /// Every byte restored from the undo journal.
    #[default]
    NonDestructive,
    /// `--destructive`: nothing restored.
    Destructive,
    #[serde(other)]
    Unknown,
}

/// The I/O engine a test ran on (docs/measurements.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Engine {
    /// One request at a time, `pread`/`pwrite` (QD1 tests, hdparm, dd).
    Sync,
    /// Queued requests from a pool of threads (io_uring refused).
    Threads,
    /// Queued requests through io_uring.
    IoUring,
    /// A word this version does not know (and a detail made without one).
    #[default]
    #[serde(other)]
    Unknown,
}

/// A study of `storage-score profile` (docs/profile.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Study {
    Sustained,
    Sweep,
    TransferSizes,
    #[serde(other)]
    Unknown,
}

impl CapacityMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            CapacityMode::NonDestructive => "non-destructive",
            CapacityMode::Destructive => "destructive",
            CapacityMode::Unknown => "unknown",
        }
    }
}

impl Engine {
    pub const fn as_str(self) -> &'static str {
        match self {
            Engine::Sync => "sync",
            Engine::Threads => "threads",
            Engine::IoUring => "io_uring",
            Engine::Unknown => "unknown",
        }
    }
}

impl Study {
    pub const fn as_str(self) -> &'static str {
        match self {
            Study::Sustained => "sustained",
            Study::Sweep => "sweep",
            Study::TransferSizes => "transfer_sizes",
            Study::Unknown => "unknown",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(CapacityMode, Engine, Study);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_words_are_as_printed_and_unknown_ones_still_read() {
        for mode in [CapacityMode::NonDestructive, CapacityMode::Destructive] {
            assert_eq!(serde_json::to_value(mode).expect("json"), mode.as_str());
        }
        for engine in [Engine::Sync, Engine::Threads, Engine::IoUring] {
            assert_eq!(serde_json::to_value(engine).expect("json"), engine.as_str());
        }
        for study in [Study::Sustained, Study::Sweep, Study::TransferSizes] {
            assert_eq!(serde_json::to_value(study).expect("json"), study.as_str());
        }
        assert_eq!(serde_json::from_str::<Engine>("\"libaio\"").expect("reads"), Engine::Unknown);
        assert_eq!(serde_json::from_str::<CapacityMode>("\"gentle\"").expect("reads"), CapacityMode::Unknown);
        assert_eq!(serde_json::from_str::<Study>("\"soak\"").expect("reads"), Study::Unknown);
    }
}
