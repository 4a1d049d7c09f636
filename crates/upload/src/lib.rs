//! storage-upload: the leaderboard client of storage-score
//! (docs/leaderboard.md), everything of an upload but the asking and the
//! printing, which are the command line's.
//!
//! - [`installation`]: where this installation keeps its salt, receipts
//!   and reports (the invoking user's, under sudo), and the salt itself.
//! - [`payload`]: the privacy filter applied to a report, the exact bytes
//!   sent, the label, the receipt and the summary shown before consent;
//!   [`wear`] the same for endurance and power-loss reports.
//! - [`place`]: where a report's payload and receipt are written.
//! - [`client`]: the HTTP side (reqwest, rustls) with the retries of
//!   [`retry`].
//! - [`url`]: a leaderboard's address, checked and reduced to its base.

pub mod client;
pub mod installation;
pub mod payload;
pub mod place;
pub mod retry;
pub mod url;
pub mod wear;
