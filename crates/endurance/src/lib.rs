//! storage-endurance: will this card last? (docs/endurance.md)
//!
//! A run wears a card pass after pass: each pass writes the whole surface
//! with data derived from the run, the pass and the block ([`pattern`]), in
//! a shuffled order of segments ([`layout`]), and reads it back in another
//! order, naming every block that fails and how ([`engine`]). Failed 4 KiB
//! blocks are retired; the milestones (the first failed block, then 1, 10,
//! 25 and 50% of them) are the passes at which they were reached.
//!
//! - [`start`]: begin a run or resume one, bound to the card by its
//!   identity and by its own data; another card in the slot is refused.
//! - [`run`]: the passes, the stops (a limit reached, or the card as a
//!   whole turning read-only, ignoring writes, or vanishing), and the wait
//!   for a pulled card.
//! - [`state`]: everything a resume needs, outside the card, saved after
//!   every segment, sealed with the state directory's key.

pub mod engine;
pub mod latency;
pub mod layout;
pub mod pattern;
pub mod run;
#[cfg(test)]
mod sim;
pub mod start;
pub mod state;
#[cfg(test)]
mod tests;

use std::time::Duration;

use storage_capacity::Disk;
/// Progress lines and the signal that asks a run to stop: verify-capacity's,
/// so that the capacity check before the first pass reports through it too.
pub use storage_capacity::{Quiet, Watch};
use storage_scoring::endurance::Milestone;

pub use run::run;
pub use start::{Card, begin};
pub use state::{State, StateError};

/// When a run stops, besides the card dying.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Stop once this milestone is reached; `None`: go on (`forever`).
    pub until: Option<Milestone>,
    /// Stop after this many passes in all.
    pub passes: Option<u32>,
    /// Stop after this many hours of wear in all (sessions added up).
    pub hours: Option<f64>,
    /// How long to wait for a card that went away.
    pub wait: Duration,
}

impl Default for Options {
    fn default() -> Options {
        Options { until: Some(Milestone::Percent50), passes: None, hours: None, wait: Duration::from_secs(600) }
    }
}

/// The card's slot: where a card that went away comes back.
pub trait Slot {
    /// Waits up to `wait` for the card to come back (perhaps under another
    /// name) and opens it again; `None` if it did not, or a stop was asked
    /// for. `gone` is the handle that failed, closed first: its exclusive
    /// open would keep the card, back under the same name, from opening.
    fn reattach(
        &mut self,
        gone: Box<dyn Disk + Send>,
        wait: Duration,
        watch: &dyn Watch,
    ) -> Option<Box<dyn Disk + Send>>;
}

/// Why a run could not begin or go on.
#[derive(Debug, thiserror::Error)]
pub enum EnduranceError {
    #[error(transparent)]
    State(#[from] StateError),
    #[error(
        "{node} now holds another card than the one whose endurance run is unfinished there ({other}); put that card back to resume its run, or give --new to start a run on this one"
    )]
    OtherCardInSlot { node: String, other: String },
    #[error(
        "the card in {node} has the identity of this run's card, but none of the blocks checked holds the run's data: it was written over, or is another card; give --new to start again on it"
    )]
    NotThisCard { node: String },
    #[error("the capacity check before the first pass failed: {0}")]
    Capacity(String),
    #[error("cannot read the kernel's random source: {0}")]
    Random(std::io::Error),
}
