//! Manufacturer IDs (MID) of SD cards and eMMC devices: the table lives in
//! `storage-scoring` (its `manufacturers` module), so that the leaderboard
//! server names a card's maker from its MID with the same table as
//! `identify`, without linking this crate.

pub use storage_scoring::manufacturers::*;
