//! The raw device the write tests may overwrite (`--destructive`), and the
//! one way to open it. The opener is the caller's: the CLI gives the one
//! that runs the usage check again immediately before the open, opens
//! `O_EXCL` and compares device numbers (docs/safety.md#before-a-raw-write),
//! so this crate opens no device for writing on its own say.

use std::fs::File;
use std::path::{Path, PathBuf};

/// Opens `path` read-write with `O_EXCL` and the extra open flags given
/// (`O_DIRECT`), or says in one line why not.
pub type RawOpener = fn(&Path, i32) -> Result<File, RawRefusal>;

/// Why the raw device was not opened.
#[derive(Debug, thiserror::Error)]
pub enum RawRefusal {
    /// In use, or changed since it was checked: refused for safety (exit 3).
    #[error("{0}")]
    Unsafe(String),
    /// Not a device that can be written (exit 2).
    #[error("{0}")]
    Bad(String),
}

/// A raw device and how to open it.
#[derive(Clone)]
pub struct RawDevice {
    pub path: PathBuf,
    pub open: RawOpener,
}

impl RawDevice {
    pub fn new(path: PathBuf, open: RawOpener) -> RawDevice {
        RawDevice { path, open }
    }

    /// Opens it for writing, through its opener.
    pub fn open(&self, extra_flags: i32) -> Result<File, RawRefusal> {
        (self.open)(&self.path, extra_flags)
    }
}

impl std::fmt::Debug for RawDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("RawDevice").field(&self.path).finish()
    }
}

// Two raw devices are the same device when their paths are: the opener is
// how, not what.
impl PartialEq for RawDevice {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Eq for RawDevice {}
