//! storage-bench: the native I/O engine and the PiBenchmarks test set.
//!
//! - [`engine`] keeps N requests in flight (io_uring, or threads) or one
//!   (sync), and records each completion.
//! - [`suite`] defines the nine figures of docs/measurements.md on top of it.
//! - [`profile`] runs the deep studies of `storage-score profile` (docs/profile.md).
//! - [`scratch`] makes scratch files that cannot outlive the process;
//!   [`raw`] is the raw device of `--destructive`, opened only through the
//!   caller's checked opener.
//! - [`devstat`] proves that a test's bytes reached the device, and
//!   [`filestate`] records the file state each test met.
//! - [`interrupt`] turns Ctrl-C and SIGTERM into a clean stop.
//!
//! `unsafe` lives in [`buffer`] (aligned allocation), [`engine`] (io_uring
//! submissions, pread/pwrite), [`scratch`] (open/fcntl/ioctl), [`filestate`]
//! (FIEMAP), the suite's hdparm module (block-device ioctls), [`interrupt`]
//! and [`suite`] (`sync(2)`).

pub mod buffer;
pub mod devstat;
pub mod engine;
pub mod filestate;
pub mod interrupt;
pub mod profile;
pub mod raw;
pub mod recorder;
pub mod scratch;
pub mod suite;

pub use engine::EngineChoice;
pub use suite::dd::like_dd;
pub use suite::{Observer, Outcome, Plan, Profile, ReadTarget, RunError, Silent, WriteTarget, run, run_repeated};
