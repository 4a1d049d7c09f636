//! storage-scoring: the report schema (`storage-score/1`), the PiBenchmarks
//! score and the SD class verdict.
//!
//! This crate depends on neither `storage-identify` nor `storage-bench`, so
//! the leaderboard server and any other consumer of reports can use it alone.

pub mod health;
pub mod input;
pub mod privacy;
pub mod profile;
pub mod schema;
pub mod score;
pub mod verdict;
