//! The report's other closed words: how verify-capacity wrote, which I/O
//! engine ran a test, which `profile` study a note is about. A word this
//! version does not know (a newer report's) reads as `Unknown`, which keeps
//! the word: it is written back as it came, and the validator still checks
//! it as the string it is.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Whether verify-capacity put back what it wrote.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CapacityMode {
    /// Every byte restored from the undo journal.
    #[default]
    NonDestructive,
    /// `--destructive`: nothing restored.
    Destructive,
    Unknown(String),
}

/// The I/O engine a test ran on (docs/measurements.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Engine {
    /// One request at a time, `pread`/`pwrite` (QD1 tests, hdparm, dd).
    Sync,
    /// Queued requests from a pool of threads (io_uring refused).
    Threads,
    /// Queued requests through io_uring.
    IoUring,
    /// A word this version does not know (empty in a detail made without
    /// one).
    Unknown(String),
}

impl Default for Engine {
    fn default() -> Engine {
        Engine::Unknown(String::new())
    }
}

/// A study of `storage-score profile` (docs/profile.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Study {
    Sustained,
    Sweep,
    TransferSizes,
    Unknown(String),
}

/// The words of a closed enum with an `Unknown(String)`: as written in a
/// report, both ways, and as displayed.
macro_rules! words {
    ($t:ident { $($variant:ident => $word:literal),* $(,)? }) => {
        impl $t {
            /// The word a report stores.
            pub fn as_str(&self) -> &str {
                match self {
                    $($t::$variant => $word,)*
                    $t::Unknown(word) => word,
                }
            }

            /// The variant a word names, `Unknown` keeping any other.
            pub fn from_word(word: &str) -> $t {
                match word {
                    $($word => $t::$variant,)*
                    other => $t::Unknown(other.to_owned()),
                }
            }
        }

        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                Ok($t::from_word(&String::deserialize(deserializer)?))
            }
        }
    };
}

words!(CapacityMode { NonDestructive => "non-destructive", Destructive => "destructive" });
words!(Engine { Sync => "sync", Threads => "threads", IoUring => "io_uring" });
words!(Study { Sustained => "sustained", Sweep => "sweep", TransferSizes => "transfer_sizes" });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_words_are_as_printed_and_unknown_ones_still_read() {
        for mode in [CapacityMode::NonDestructive, CapacityMode::Destructive] {
            assert_eq!(serde_json::to_value(&mode).expect("json"), mode.as_str());
        }
        for engine in [Engine::Sync, Engine::Threads, Engine::IoUring] {
            assert_eq!(serde_json::to_value(&engine).expect("json"), engine.as_str());
        }
        for study in [Study::Sustained, Study::Sweep, Study::TransferSizes] {
            assert_eq!(serde_json::to_value(&study).expect("json"), study.as_str());
        }
        let engine: Engine = serde_json::from_str("\"libaio\"").expect("reads");
        assert_eq!(engine, Engine::Unknown("libaio".to_owned()));
        assert_eq!(serde_json::to_string(&engine).expect("json"), "\"libaio\"", "written back as it came");
        assert_eq!(serde_json::from_str::<CapacityMode>("\"gentle\"").expect("reads").as_str(), "gentle");
        assert_eq!(serde_json::from_str::<Study>("\"soak\"").expect("reads"), Study::Unknown("soak".to_owned()));
    }
}
