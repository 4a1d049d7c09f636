//! Whole runs on simulated cards that wear out: the milestones at the
//! card's own passes, each way of dying named, resumes, refusals.

use std::collections::BTreeMap;
use std::time::Duration;

use storage_scoring::endurance::{BLOCK_BYTES, Milestone, Stopped};

use crate::sim::{Death, SimSlot, WearCard, Worn};
use crate::start::{Began, Card};
use crate::state::test_dir;
use crate::{EnduranceError, Options, Quiet, State, begin, run};

const BLOCKS: u64 = 2048;

fn card(fingerprint: &str) -> Card {
    Card {
        node: "/dev/sim0".to_owned(),
        fingerprint: fingerprint.to_owned(),
        tool: "test".to_owned(),
        now: "now".to_owned(),
    }
}

fn options(until: Option<Milestone>, passes: Option<u32>) -> Options {
    Options { until, passes, hours: None, wait: Duration::from_secs(1) }
}

/// Begins and runs on `sim` in a fresh state directory; returns the state
/// and how often each block was written before the first pass.
fn wear(sim: &WearCard, options: &Options, gives_back: bool) -> (State, Vec<u32>) {
    let (_tmp, dir) = test_dir("wear");
    let mut disk = sim.clone();
    let (mut state, began) = begin(&dir, &card("sim"), &mut disk, false, &Quiet).expect("begin");
    assert_eq!(began, Began::New);
    // Deaths are set in bytes written from the first pass on.
    let before = {
        let mut inner = sim.0.lock().expect("card");
        inner.written = 0;
        inner.armed = true;
        inner.writes.clone()
    };
    let mut slot = SimSlot { card: sim.clone(), gives_back };
    run(&dir, &mut state, Box::new(sim.clone()), &mut slot, options, &Quiet).expect("run");
    (state, before)
}

/// The passes at which the card's own wear reaches each milestone.
fn truth(sim: &WearCard, before: &[u32], last_pass: u32) -> BTreeMap<Milestone, u32> {
    let failing = sim.failing_pass(before);
    let total = failing.len() as u64;
    let mut out = BTreeMap::new();
    for pass in 1..=last_pass {
        let bad = failing.iter().filter(|&&p| p <= pass).count() as u64;
        for m in Milestone::ALL {
            if m.reached(bad, total) {
                out.entry(m).or_insert(pass);
            }
        }
    }
    out
}

#[test]
fn each_way_a_block_wears_reaches_the_milestones_at_the_cards_own_passes() {
    for (worn, kind) in
        [(Worn::Fails, "write"), (Worn::KeepsOld, "old"), (Worn::OtherBlock, "other"), (Worn::Garbage, "garbage")]
    {
        let sim = WearCard::new(BLOCKS, 24, worn, 42);
        let (state, before) = wear(&sim, &options(Some(Milestone::Percent50), None), false);
        let report = &state.report;
        assert_eq!(report.stopped, Some(Stopped::Until), "{worn:?}: {:?}", report.notes);
        let last = report.stopped_at_pass.expect("pass");
        assert_eq!(report.milestones, truth(&sim, &before, last), "{worn:?}");
        assert_eq!(report.passes.len() as u32, last);
        let p = report.passes.iter().fold(storage_scoring::endurance::Pass::default(), |mut acc, p| {
            acc.write_errors += p.write_errors;
            acc.mismatch_kinds.old_data += p.mismatch_kinds.old_data;
            acc.mismatch_kinds.other_block += p.mismatch_kinds.other_block;
            acc.mismatch_kinds.garbage += p.mismatch_kinds.garbage;
            acc
        });
        let counted = match kind {
            "write" => p.write_errors,
            // A block that wears in the first pass keeps what was there
            // before the run: not this run's data, so garbage.
            "old" => p.mismatch_kinds.old_data + p.mismatch_kinds.garbage,
            "other" => p.mismatch_kinds.other_block,
            _ => p.mismatch_kinds.garbage,
        };
        assert_eq!(counted, report.bad_blocks, "{worn:?}: every failed block counted as its own kind");
        assert_eq!(report.bad_blocks, state.bad.count());
        assert!(report.bad_blocks * 2 >= BLOCKS, "{worn:?}");
        let csv = storage_scoring::endurance::passes_csv(report);
        assert_eq!(csv.lines().count() as u32, last + 1);
    }
}

#[test]
fn a_card_that_turns_read_only_is_named_and_not_counted_as_wear() {
    let dies_at = 5 * BLOCKS * BLOCK_BYTES + BLOCKS * BLOCK_BYTES / 3;
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 1).dies(dies_at, Death::ReadOnly);
    let (state, _) = wear(&sim, &options(None, None), false);
    let report = &state.report;
    assert_eq!(report.stopped, Some(Stopped::ReadOnly), "{:?}", report.notes);
    assert_eq!(report.stopped_at_pass, Some(6));
    assert_eq!(report.bad_blocks, 0, "a card turning read-only is not worn blocks");
}

#[test]
fn a_card_that_silently_ignores_writes_is_named() {
    let dies_at = 3 * BLOCKS * BLOCK_BYTES + BLOCKS * BLOCK_BYTES / 2;
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 2).dies(dies_at, Death::IgnoresWrites);
    let (state, _) = wear(&sim, &options(None, None), false);
    assert_eq!(state.report.stopped, Some(Stopped::IgnoresWrites), "{:?}", state.report.notes);
    assert_eq!(state.report.stopped_at_pass, Some(4));
    assert_eq!(state.report.bad_blocks, 0);
}

#[test]
fn a_card_that_dies_silently_at_the_end_of_a_pass_is_named_in_the_next_and_not_counted() {
    // It stops taking writes with one segment of the pass's writes to go.
    let dies_at = 3 * BLOCKS * BLOCK_BYTES - BLOCKS * BLOCK_BYTES / 16;
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 3).dies(dies_at, Death::IgnoresWrites);
    let (state, _) = wear(&sim, &options(None, None), false);
    assert_eq!(state.report.stopped, Some(Stopped::IgnoresWrites), "{:?}", state.report.notes);
    assert_eq!(state.report.stopped_at_pass, Some(4));
    assert_eq!(state.report.bad_blocks, 0, "{:?}", state.report.passes);
}

#[test]
fn a_card_that_vanishes_is_named() {
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 4)
        .dies(2 * BLOCKS * BLOCK_BYTES + 12345 * 4096 % (BLOCKS * BLOCK_BYTES), Death::Vanishes);
    let (state, _) = wear(&sim, &options(None, None), false);
    assert_eq!(state.report.stopped, Some(Stopped::Vanished), "{:?}", state.report.notes);
    assert_eq!(state.report.stopped_at_pass, Some(3));
    assert_eq!(state.report.bad_blocks, 0);
}

#[test]
fn a_card_pulled_and_put_back_goes_on_where_it_was() {
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 5).dies(BLOCKS * BLOCK_BYTES + 7 * 4096, Death::Pulled);
    let (state, _) = wear(&sim, &options(None, Some(3)), true);
    let report = &state.report;
    assert_eq!(report.stopped, Some(Stopped::Passes), "{:?}", report.notes);
    assert_eq!(report.passes.iter().map(|p| p.pass).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(report.bad_blocks, 0);
    assert!(report.notes.iter().any(|n| n.contains("went away and came back")), "{:?}", report.notes);
    // Every pass wrote the whole surface once; the pull cost at most the
    // one segment that was redone.
    let surface = BLOCKS * BLOCK_BYTES;
    assert!(report.passes.iter().all(|p| p.bytes_read == surface), "{:?}", report.passes);
    let written = sim.0.lock().expect("card").written;
    assert!(written <= 3 * surface + surface / 16 + (1 << 20) * 2, "{written}");
}

#[test]
fn a_counterfeit_is_named_as_verify_capacity_names_it_and_its_missing_half_is_not_wear() {
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 6).wrapping(2);
    let (state, _) = wear(&sim, &options(None, Some(2)), false);
    let report = &state.report;
    let found = report.capacity.as_ref().expect("capacity");
    assert_eq!(found.verdict, "wraparound");
    assert_eq!(report.surface_bytes, BLOCKS * BLOCK_BYTES);
    assert_eq!(report.bad_blocks, 0, "{:?}", report.passes);
    assert_eq!(report.stopped, Some(Stopped::Passes));
}

/// Stops after a number of segments, as a signal would.
struct StopAfter(std::sync::atomic::AtomicU32);
impl crate::Watch for StopAfter {
    fn stop(&self) -> Option<&'static str> {
        (self.0.fetch_sub(1, std::sync::atomic::Ordering::Relaxed) == 0).then_some("SIGTERM")
    }
}

#[test]
fn an_interrupted_run_resumes_to_the_same_milestones_and_other_cards_are_refused() {
    let worn = WearCard::new(BLOCKS, 24, Worn::KeepsOld, 7);
    let (uninterrupted, _) = wear(&worn, &options(Some(Milestone::Percent25), None), false);

    let sim = WearCard::new(BLOCKS, 24, Worn::KeepsOld, 7);
    let (_tmp, dir) = test_dir("resume");
    let opts = options(Some(Milestone::Percent25), None);
    let mut stops = 0;
    let state = loop {
        let mut disk = sim.clone();
        let (mut state, began) = begin(&dir, &card("sim"), &mut disk, false, &Quiet).expect("begin");
        assert_eq!(began == Began::New, stops == 0);
        let mut slot = SimSlot { card: sim.clone(), gives_back: false };
        run(&dir, &mut state, Box::new(sim.clone()), &mut slot, &opts, &StopAfter(97.into())).expect("run");
        if state.report.stopped != Some(Stopped::Interrupted) {
            break state;
        }
        stops += 1;
        // Another card in the slot meanwhile is refused; this one is not.
        let mut other = WearCard::new(BLOCKS, 24, Worn::KeepsOld, 8);
        let refused = begin(&dir, &card("other"), &mut other, false, &Quiet);
        assert!(matches!(refused, Err(EnduranceError::OtherCardInSlot { .. })), "{refused:?}");
        // A card with this one's identity but not its data is refused too.
        let mut twin = WearCard::new(BLOCKS, 24, Worn::KeepsOld, 7);
        let refused = begin(&dir, &card("sim"), &mut twin, false, &Quiet);
        assert!(matches!(refused, Err(EnduranceError::NotThisCard { .. })), "{refused:?}");
    };
    assert!(stops >= 3, "{stops}: {:?} {:?}", state.report.stopped, state.report.notes);
    assert_eq!(state.report.resumes, stops);
    assert_eq!(state.report.milestones, uninterrupted.report.milestones);
    assert_eq!(state.report.bad_blocks, uninterrupted.report.bad_blocks);
    let numbers: Vec<u32> = state.report.passes.iter().map(|p| p.pass).collect();
    assert_eq!(numbers, (1..=numbers.len() as u32).collect::<Vec<_>>());
    // A finished run is given back as it is, and --new starts over.
    let mut disk = sim.clone();
    let (_, began) = begin(&dir, &card("sim"), &mut disk, false, &Quiet).expect("begin");
    assert_eq!(began, Began::Finished);
    let (_, began) = begin(&dir, &card("sim"), &mut disk, true, &Quiet).expect("begin");
    assert_eq!(began, Began::New);
}

#[test]
fn a_state_file_changed_by_someone_else_is_refused() {
    let sim = WearCard::new(BLOCKS, 1000, Worn::Fails, 9);
    let (tmp, dir) = test_dir("forged");
    let mut disk = sim.clone();
    begin(&dir, &card("sim"), &mut disk, false, &Quiet).expect("begin");
    let path = tmp.path().join("state").join(crate::state::file_name("sim"));
    let mut bytes = std::fs::read(&path).expect("state");
    let at = bytes.len() - 40;
    bytes[at] ^= 1;
    std::fs::write(&path, bytes).expect("write");
    let refused = begin(&dir, &card("sim"), &mut disk, false, &Quiet);
    assert!(matches!(refused, Err(EnduranceError::State(crate::StateError::Forged { .. }))), "{refused:?}");
}
