//! storage-scoring: the report schema (`storage-score/1`), the one validator
//! of reports, the PiBenchmarks score, the SD class verdict, the privacy
//! filter and the table of card makers by MID.
//!
//! This crate depends on neither `storage-identify` nor `storage-bench`, so
//! the leaderboard server and any other consumer of reports can use it alone.

pub mod batch;
pub mod compare;
pub mod endurance;
pub mod figure;
pub mod health;
pub mod input;
pub mod kinds;
pub mod manufacturers;
pub mod power_loss;
pub mod privacy;
pub mod profile;
pub mod reference;
pub mod run_profile;
pub mod schema;
pub mod score;
pub mod stats;
pub mod storage_sh;
pub mod verdict;
pub mod wear;
