//! The leaderboard server's end-to-end tests, as one test binary
//! (`cargo test -p storage-score-leaderboard --test leaderboard`): each
//! module drives the built server binary (`CARGO_BIN_EXE_storage-score-leaderboard`,
//! which cargo sets when it runs them) on a temporary SQLite file and on a
//! throwaway PostgreSQL cluster, one cluster for the whole binary
//! (`lb_backends::cluster`), and some pages in headless Chromium
//! (docs/testing.md#postgresql-and-chromium). A test's name is its module
//! and its function (`spam::…`), which `cargo xtask test` prints as
//! `leaderboard::spam::…`.
//!
//! The modules share one process: the one change any makes to it is
//! `fair`'s higher soft limit of open files (for its 1000 idle sockets),
//! which only lifts a limit the others stay under anyway.

/// The API of docs/leaderboard.md.
mod api;
/// The pages in a real browser.
mod browser;
/// One person cannot bend the board.
mod fair;
/// The held rule against bursts, with the server's clock moved.
mod held;
/// No page lets a hostile string through as markup.
mod pages_escape;
/// A determined spammer's networks.
mod spam;
/// Endurance and power-loss results on the API and pages.
mod wear_api;
