//! storage-report: the SVG plots and HTML pieces that the CLI's reports and
//! the leaderboard server's pages share (DESIGN §1, §12).
//!
//! - [`html`]: escaping for text and attributes; everything a user wrote
//!   goes through it before it reaches a page.
//! - [`svg`]: a small SVG writer (shapes, text, groups) that escapes what it
//!   is given.
//! - [`plot`]: plots built on it, each a pure function from data to an SVG
//!   string: today the strip plot of a card's scores; the `profile` plots
//!   (speed against progress, heatmap, scatter, latency histogram) belong
//!   beside it, on the same [`plot::axis`] scales and [`plot::Frame`].
//!
//! Pure: no I/O, no dependencies.

pub mod html;
pub mod plot;
pub mod svg;
