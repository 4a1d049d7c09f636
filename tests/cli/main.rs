//! The `storage-score` command's end-to-end tests, as one test binary
//! (`cargo test -p storage-score --test cli`): one module per area, each
//! driving the built binary on fixtures, real devices and real servers
//! (docs/testing.md). One binary links the tree once, where a binary per
//! file linked it 25 times; a test's name is its module and its function
//! (`profile_devices::sweep_…`), which `cargo xtask test` prints as
//! `cli::profile_devices::sweep_…`.
//!
//! The modules share one process, so none may change what the others see
//! of it: no `set_var`, no `set_current_dir`, no umask or signal handler of
//! the test process's own (a child's is fine), and machine-wide state (a
//! sysctl, a throttle) only under the device lock of the support crate,
//! which orders every device test of every module. Throwaway users
//! (`attack::TestUser`) are named by process and count, so two modules'
//! never share a name.

mod batch;
mod capacity;
mod cleanup;
mod compare;
/// The console examples of README.md and docs/, run (docs/testing.md#doc-examples).
mod doc_examples;
mod doctor;
mod doctor_history;
mod endurance;
mod faults;
mod flash;
mod identify_devices;
mod identify_fixtures;
/// Against the real leaderboard server, which the support crate's
/// `leaderboard.rs` builds first (cargo builds only this package's binaries
/// for its tests).
mod leaderboard_e2e;
mod leaderboard_wear;
/// The command line's manners: settings, typos, JSON documents,
/// completions, `show`, the terminal (docs/cli.md).
mod manners;
/// `power-loss` on a FUSE card with a volatile write cache whose power is cut.
mod power_loss;
mod profile_devices;
// Safe to run as root: each attack of a local user, end to end
// (docs/testing.md#as-an-attacker-would), in the `root_` modules.
mod root_as_user;
mod root_devices;
mod root_files;
mod root_journal;
mod root_scratch;
mod run_devices;
mod score_verdict;
/// `station`: cards put in while it waits, its numbers, labels and filters.
mod station;
mod submit;
/// Every command's text within 80 columns, in UTF-8 and ASCII.
mod width;
