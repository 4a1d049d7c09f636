//! storage-powerloss: does a card keep what it acknowledged when its power
//! is cut? (docs/power-loss.md)
//!
//! - [`record`]: the 4 KiB record (run, cycle, sequence, its own address,
//!   a checksum over it all), pure encode and decode.
//! - [`judge`]: what a block read back is (intact, old, torn, misplaced,
//!   foreign) and what that costs the card, pure.
//! - [`writer`]: one cycle's writes and flushes, and which were
//!   acknowledged.
//! - [`engine`]: the cycles: the writer thread, the cut at a random
//!   moment, the power-on, the wait, the check.
//! - [`file`]: the file mode, a test file on a mounted filesystem.
//! - [`host`]: the real [`engine::Host`]: `sh -c` for the power commands,
//!   the card found again by its fingerprint, checked and opened as
//!   verify-capacity opens it.
//! - [`witness`] and [`remote`]: whole-machine cuts, where another machine
//!   keeps the account of what was acknowledged.
//!
//! The report it fills is `storage_scoring::power_loss`.

pub mod engine;
pub mod file;
pub mod host;
pub mod judge;
pub mod record;
pub mod remote;
#[cfg(test)]
mod sim;
pub mod witness;
pub mod writer;

pub use engine::{Device, Host, Options};

/// Why a run stopped without a verdict.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A power command failed (exit 1).
    #[error("{0}")]
    Command(String),
    /// The device came back but may not be written (exit 3).
    #[error("{0}")]
    Refused(String),
    /// An I/O failure outside the cut (exit 1).
    #[error("{0}")]
    Io(String),
    #[error("the device is {0} bytes, too small for two 4 KiB records")]
    TooSmall(u64),
    #[error("interrupted by {0}; the card was left powered on")]
    Interrupted(&'static str),
    /// The witness cannot be reached, went away or refused (exit 1).
    #[error("{0}")]
    Witness(String),
    /// Asked for something that cannot be done as asked (exit 2).
    #[error("{0}")]
    Usage(String),
}

/// A fresh run id from the kernel's random source.
pub fn fresh_run_id() -> [u8; 16] {
    let (a, b) = (storage_capacity::stamp::fresh_nonce(), storage_capacity::stamp::fresh_nonce());
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&a.to_le_bytes());
    id[8..].copy_from_slice(&b.to_le_bytes());
    id
}
