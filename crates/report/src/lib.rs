//! storage-report: the SVG plots and HTML pieces that the CLI's reports and
//! the leaderboard server's pages share (ARCHITECTURE.md, docs/profile.md).
//!
//! - [`html`]: escaping for text and attributes; everything a user wrote
//!   goes through it before it reaches a page.
//! - [`svg`]: a small SVG writer (shapes, text, groups) that escapes what it
//!   is given.
//! - [`plot`]: plots built on it, each a pure function from data to an SVG
//!   string, on the same scales ([`plot::axis`], [`plot::log`]) and
//!   [`plot::Frame`]: the strip plot of a card's scores, and the `profile`
//!   plots (speed against progress, latency histogram, heatmap, scatter).
//! - [`profile_page`]: the `profile` command's self-contained HTML report,
//!   and [`csv`] its tables; [`sparkline`] its terminal curve.
//! - [`power_loss_page`]: the `power-loss --html` page.
//!
//! Pure: no I/O. Its one dependency is `storage-scoring`, for the report
//! types the pages are drawn from.

pub mod batch_page;
pub mod csv;
pub mod endurance_page;
pub mod html;
pub mod plot;
pub mod power_loss_page;
pub mod profile_page;
pub mod sparkline;
pub mod svg;
