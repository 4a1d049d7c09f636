//! What xtask's chores share with the lab (`lab/`, the test orchestrator,
//! benchmarks and VM runs): the host helpers, a check's verdict, the trixie
//! chroot for ARM builds, and tidy, which `cargo xtask test` runs first.
//! Nothing here links the product, so `cargo xtask tidy`, `dist`, `msrv` and
//! `fuzz` build in seconds from a clean target.

pub mod check;
pub mod cross;
pub mod host;
pub mod tidy;
