//! `endurance`'s cards (docs/endurance.md): each cleared and its state
//! directory checked, then run side by side, one thread each, a card that
//! went away looked for by its fingerprint; the work is
//! `storage-endurance`'s, and this maps its answers onto one line and an
//! exit code each (docs/endurance.md#exit-codes).

use std::path::Path;
use std::time::{Duration, Instant};

use storage_capacity::preflight::{self, Refusal};
use storage_capacity::{Disk, JournalDir, RawDisk};
use storage_endurance::start::{Began, Card};
use storage_endurance::{EnduranceError, Options, Slot, Watch};
use storage_platform::Roots;
use storage_scoring::endurance::{EnduranceReport, Stopped};
use storage_scoring::schema::Device;

use crate::Failure;

/// A card cleared for the run, with its state directory and what identify
/// saw of it.
#[derive(Debug)]
pub struct Prepared {
    pub device: String,
    pub cleared: preflight::Cleared,
    pub dir: JournalDir,
    pub identity: Option<Device>,
}

/// Clears every card and checks its state directory (under `state_dir`),
/// before anything is asked or written.
pub fn prepare(devices: &[String], state_dir: &Path, roots: &Roots) -> Result<Vec<Prepared>, Failure> {
    let mut cards = Vec::new();
    for device in devices {
        let cleared = preflight::check(device).map_err(|r| match r {
            Refusal::Usage(m) => Failure::Usage(m.replace("verify-capacity", "endurance")),
            Refusal::Unsafe(m) => Failure::Refused(m.replace("verify-capacity", "endurance")),
        })?;
        let dir = JournalDir::open(state_dir, &cleared.family, device).map_err(|e| {
            Failure::Refused(format!(
                "{e}; give --state-dir DIR, a root-owned directory on another disk than the cards"
            ))
        })?;
        let identity = storage_identify::identify(device, roots).ok().and_then(|(_, device)| device);
        cards.push(Prepared { device: device.clone(), cleared, dir, identity });
    }
    Ok(cards)
}

/// Runs the cards side by side, one thread each (`new`: another run, not
/// the one begun before), each heard by the `watch` made for its device.
pub fn run_cards(
    cards: &[Prepared],
    new: bool,
    options: &Options,
    watch: &(dyn Fn(&str) -> Box<dyn Watch + Send> + Sync),
) -> Vec<Result<EnduranceReport, Failure>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = cards
            .iter()
            .map(|card| {
                let watch = watch(&card.device);
                scope.spawn(move || one_card(card, new, options, watch.as_ref()))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(Failure::Run("a card's thread failed".to_owned()))))
            .collect()
    })
}

/// The worst outcome of the cards decides the exit code, the first card's
/// line first.
pub fn verdict(results: Vec<Result<EnduranceReport, Failure>>, reports: &[EnduranceReport]) -> Result<(), Failure> {
    let mut failures: Vec<Failure> = results.into_iter().filter_map(Result::err).collect();
    failures.extend(reports.iter().filter_map(outcome));
    failures.sort_by_key(|f| std::cmp::Reverse(f.exit_code()));
    match failures.into_iter().next() {
        Some(f) => Err(f),
        None => Ok(()),
    }
}

/// The card's slot on this machine: a card that went away is looked for
/// by its fingerprint, under any name, once a second.
struct LiveSlot {
    fingerprint: String,
}

impl Slot for LiveSlot {
    fn reattach(
        &mut self,
        gone: Box<dyn Disk + Send>,
        wait: Duration,
        watch: &dyn Watch,
    ) -> Option<Box<dyn Disk + Send>> {
        drop(gone);
        let until = Instant::now() + wait;
        loop {
            if watch.stop().is_some() {
                return None;
            }
            if let Some(disk) = preflight::find_by_fingerprint(&Roots::live(), &self.fingerprint) {
                let node = disk.node().display().to_string();
                if let Ok(cleared) = preflight::check(&node) {
                    if let Ok(raw) = RawDisk::open(&cleared.node, cleared.dev) {
                        return Some(Box::new(raw));
                    }
                }
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

fn one_card(card: &Prepared, new: bool, options: &Options, watch: &dyn Watch) -> Result<EnduranceReport, Failure> {
    let Prepared { device, cleared, dir, identity } = card;
    let device = device.as_str();
    let mut disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| crate::capacity::open_failure(device, e))?;
    let card = Card {
        node: device.to_owned(),
        fingerprint: cleared.fingerprint.clone(),
        tool: format!("storage-score {}", env!("CARGO_PKG_VERSION")),
        now: crate::document::now(),
    };
    let (mut state, began) =
        storage_endurance::begin(dir, &card, &mut disk, new, watch).map_err(|e| failure(device, e))?;
    // The card as identify saw it, kept in the state from the first session
    // on: a leaderboard keys the result by it (docs/endurance.md#the-report).
    if state.report.identity.is_none() {
        state.report.identity = identity.clone();
    }
    match began {
        Began::Finished => {
            watch.stage("this card's run has ended; showing it (--new starts another)");
            return Ok(state.report);
        }
        Began::Resumed => watch.stage(&format!("resuming in pass {}", state.progress.pass)),
        Began::New => watch.stage(&format!("pass 1 over {} bytes", state.report.surface_bytes)),
    }
    let mut slot = LiveSlot { fingerprint: cleared.fingerprint.clone() };
    storage_endurance::run(dir, &mut state, Box::new(disk), &mut slot, options, watch)
        .map_err(|e| failure(device, e))?;
    Ok(state.report)
}

fn failure(device: &str, e: EnduranceError) -> Failure {
    match e {
        EnduranceError::OtherCardInSlot { .. } | EnduranceError::NotThisCard { .. } => Failure::Refused(e.to_string()),
        EnduranceError::State(storage_endurance::StateError::Forged { .. }) => Failure::Refused(e.to_string()),
        other => Failure::Run(format!("{device}: {other}")),
    }
}

/// What a finished report means for the exit code.
fn outcome(report: &EnduranceReport) -> Option<Failure> {
    let device = &report.device;
    let pass = report.stopped_at_pass.unwrap_or(0);
    match report.stopped {
        Some(stop) if stop.card_died() => {
            Some(Failure::Died(format!("{device} died in pass {pass}: it {}", died_words(stop))))
        }
        Some(Stopped::Interrupted) => Some(Failure::Run(format!(
            "{device}: interrupted in pass {}; the same command resumes where it stopped",
            pass.max(report.passes.len() as u32 + 1)
        ))),
        _ if report.capacity.as_ref().is_some_and(|c| c.verdict != "genuine") => Some(Failure::Fake(format!(
            "{device} is a counterfeit: only {} of the bytes it announces hold data",
            report.surface_bytes
        ))),
        _ => None,
    }
}

fn died_words(stop: Stopped) -> &'static str {
    match stop {
        Stopped::ReadOnly => "turned read-only (writes fail, reads work)",
        Stopped::IgnoresWrites => "ignores writes (they are acknowledged, and the old data reads back)",
        Stopped::Vanished => "vanished (gone, or answering nothing, and not back within --wait-s)",
        _ => "stopped",
    }
}
