//! storage-platform: the Linux layer every other part of storage-score
//! stands on, and the only one that decides how a path is opened.
//!
//! - [`sysfs`]: [`Roots`] (the live machine, or a captured tree that runs
//!   the same code) and capped, non-blocking attribute reads.
//! - [`safe_fs`]: directories walked component by component without
//!   following links, files opened under a chosen identity.
//! - [`sudo`]: the user behind sudo, and who writes in a directory a user
//!   named.
//! - [`target`]: TARGET → mount → partition → disk, from mountinfo and
//!   sysfs.
//! - [`usage`]: who uses a block device (mounts, holders, swap, loop
//!   devices, other processes), and the one raw open for writing.
//! - [`loopdev`], [`uevent`], [`clock`]: a loop device's backing by
//!   number, the kernel's block uevents, today's date and clock sync.
//!
//! It knows nothing of cards or registers (that is `storage-identify`) nor
//! of measurement (`storage-bench`); `storage-capacity` needs only this.

pub mod clock;
pub mod loopdev;
pub mod safe_fs;
pub mod sudo;
pub mod sysfs;
pub mod target;
pub mod uevent;
pub mod usage;

pub use sysfs::Roots;
pub use target::{Resolved, TargetError, resolve};
