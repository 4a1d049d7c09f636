//! storage-session: what a command does between its arguments and what it
//! prints, where that is not a crate's own job (bench, identify, capacity,
//! …): the workflows, over plain option structs rather than the command
//! line's types, told how to speak and ask (a function, a trait), so that
//! they and their unit tests need no binary.
//!
//! - [`plan`]: a resolved target and `run`'s options → a bench `Plan`, and
//!   the `--destructive` refusals (docs/safety.md#what-is-written-and-where).
//! - [`watch`]: the machine around a measurement (health, advice,
//!   temperature and throttling), a `Session`; [`measure`]: the whole
//!   measurement of `run` and of each card of `batch`.
//! - [`batch`]: `batch`'s and `station`'s cards tested, their report
//!   written and judged; `station`'s wait for cards.
//! - [`endurance`]: `endurance`'s cards, cleared and run side by side.
//! - [`profile`]: `profile`'s studies, configured and run.
//! - [`powerloss`]: `power-loss`'s cycles, report and verdict.
//! - [`capacity`]: `verify-capacity`'s whole-device probe, and its failures.
//! - [`outputs`]: the files a user names for results, written safely.
//! - [`saved`]: the one reading of a saved report, and of any document
//!   `show` takes.
//! - [`document`]: the `schema` and `created` every JSON document carries.
//! - [`doctor`]: `doctor`'s examination of its targets, and `--log`.
//! - [`doctor_status`]: `doctor`'s exit bit mask and one-line findings.
//! - [`scan`]: every block device, identified, for `scan` and `batch`.
//! - [`compare`]: `compare`'s inputs and comparisons; [`score`]: `score`'s.
//! - [`export`], [`export_sheets`]: `--export-csv` and `--export-markdown`,
//!   made harmless for where they land ([`visible`]: the escaping the
//!   terminal uses too).
//! - [`submit`]: `submit` and `run --submit`, but what is said and asked.
//! - [`import`]: `import storage-sh`, a Storage.sh summary into a report.
//! - [`roots`]: `--sysfs-root` and `--machine-root`, checked;
//!   [`typo`]: a mistyped subcommand named.
//! - [`witness`]: `power-loss witness`, `write` and `check`.
//! - [`failure`]: [`Failure`], the one error a workflow gives the command
//!   line, with its exit code.

pub mod batch;
pub mod capacity;
pub mod compare;
pub mod doctor;
pub mod doctor_status;
pub mod document;
pub mod endurance;
pub mod export;
pub mod export_sheets;
pub mod failure;
pub mod import;
pub mod measure;
pub mod outputs;
pub mod plan;
pub mod powerloss;
pub mod profile;
pub mod roots;
pub mod saved;
pub mod scan;
pub mod score;
pub mod submit;
pub mod typo;
pub mod visible;
pub mod watch;
pub mod witness;

pub use failure::Failure;
