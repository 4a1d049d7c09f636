//! The whole verify (probe, journal, undo) against the in-memory fault
//! models of `sim.rs`: every kind of fake, a cache, interruptions and
//! simulated `kill -9` at many moments.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::*;
use crate::sim::{Mode, SimDisk};
use crate::stamp::Foreign;

const MIB: u64 = 1 << 20;

fn safety(dir: &tempfile::TempDir) -> Safety {
    Safety::Journal { dir: dir.path().to_path_buf(), fingerprint: "sim".into() }
}

fn options() -> Options {
    Options { cache_bound: DEFAULT_CACHE_BOUND }
}

/// Verifies a fresh model, checks that every byte is as before, and returns the report.
fn check(mut disk: SimDisk) -> Report {
    let dir = tempfile::tempdir().expect("dir");
    disk.fill_pattern(11);
    let before = disk.snapshot();
    let report = verify(&mut disk, "/dev/sim", &safety(&dir), options(), &Quiet).expect("verify");
    assert_eq!(disk.snapshot(), before, "the device changed: {report:?}");
    assert!(journal::pending(dir.path()).expect("list").is_empty(), "a journal was left");
    report
}

fn assert_fake(report: &Report, verdict: Verdict, real: u64) {
    assert_eq!(report.verdict, verdict, "{report:#?}");
    assert!(
        report.usable_bytes <= real && real - report.usable_bytes <= probe::BLOCK,
        "usable {} for a real size of {real}: {report:#?}",
        report.usable_bytes
    );
    let bad = report.first_bad_byte.expect("a first bad byte");
    assert!(bad >= real && bad - real < probe::BLOCK, "first bad byte {bad} for a real size of {real}");
}

#[test]
fn a_genuine_card_is_genuine_in_one_round() {
    let report = check(SimDisk::new(256 * MIB, 256 * MIB, Mode::Genuine));
    assert_eq!(report.verdict, Verdict::Genuine);
    assert_eq!(report.usable_bytes, 256 * MIB);
    assert_eq!(report.first_bad_byte, None);
    assert_eq!(report.rounds, 1);
    assert!(report.safe_partition.is_none());
}

#[test]
fn wraparound_is_found_with_its_size() {
    let report = check(SimDisk::new(256 * MIB, 64 * MIB, Mode::Wrap));
    assert_fake(&report, Verdict::Wraparound, 64 * MIB);
    assert_eq!(report.wraps_at_bytes, Some(64 * MIB));
}

#[test]
fn a_4_gib_card_with_1_gib_inside_is_a_wraparound_of_1_gib() {
    // f3probe called this one "damaged, usable 0 B".
    let mut disk = SimDisk::new(4 << 30, 1 << 30, Mode::Wrap);
    let dir = tempfile::tempdir().expect("dir");
    let report = verify(&mut disk, "/dev/sim", &safety(&dir), options(), &Quiet).expect("verify");
    assert_fake(&report, Verdict::Wraparound, 1 << 30);
    assert!(report.rounds <= 3, "{report:#?}");
}

#[test]
fn limbo_of_every_flavour() {
    for (mode, reads) in
        [(Mode::Limbo(0), Foreign::Zeros), (Mode::Limbo(0xFF), Foreign::Ones), (Mode::LimboStale, Foreign::Other)]
    {
        let report = check(SimDisk::new(256 * MIB, 64 * MIB, mode));
        assert_fake(&report, Verdict::Limbo, 64 * MIB);
        assert_eq!(report.limbo_reads, Some(reads));
        let partition = report.safe_partition.expect("partition");
        assert_eq!(partition.start_bytes + partition.size_bytes, 64 * MIB);
    }
}

#[test]
fn a_boundary_off_the_lattice_is_found_to_the_block() {
    let real = 100 * MIB + 12 * 4096;
    let report = check(SimDisk::new(256 * MIB, real, Mode::Limbo(0)));
    assert_fake(&report, Verdict::Limbo, real);
}

#[test]
fn chain_wraps_above_its_real_size() {
    let report = check(SimDisk::new(256 * MIB, 48 * MIB, Mode::Chain(128 * MIB)));
    assert_fake(&report, Verdict::Chain, 48 * MIB);
    assert_eq!(report.wraps_at_bytes, Some(128 * MIB));
}

#[test]
fn io_errors_past_an_offset() {
    let report = check(SimDisk::new(256 * MIB, 64 * MIB, Mode::Eio));
    assert_fake(&report, Verdict::IoErrors, 64 * MIB);
}

#[test]
fn a_masking_cache_is_seen_through_and_sized() {
    let report = check(SimDisk::new(512 * MIB, 64 * MIB, Mode::Limbo(0)).with_cache(8 * MIB));
    assert_fake(&report, Verdict::Limbo, 64 * MIB);
    let cache = report.cache.expect("cache seen");
    assert!(cache.at_least_bytes <= 8 * MIB && cache.at_most_bytes.is_some_and(|m| m >= 8 * MIB), "{cache:?}");
}

#[test]
fn thorough_sees_through_a_cache_larger_than_the_default_bound() {
    let real = 128 * MIB;
    let fresh = || SimDisk::new(1024 * MIB, real, Mode::Limbo(0)).with_cache(80 * MIB);
    let dir = tempfile::tempdir().expect("dir");
    let fooled = verify(&mut fresh(), "/dev/sim", &safety(&dir), options(), &Quiet).expect("verify");
    assert_ne!(fooled.usable_bytes, real, "the default bound should not see through an 80 MiB cache: {fooled:#?}");
    let thorough = Options { cache_bound: THOROUGH_CACHE_BOUND };
    let report = verify(&mut fresh(), "/dev/sim", &safety(&dir), thorough, &Quiet).expect("verify");
    assert_fake(&report, Verdict::Limbo, real);
}

#[test]
fn destructive_keeps_no_journal_and_still_finds_the_fake() {
    let dir = tempfile::tempdir().expect("dir");
    let mut disk = SimDisk::new(256 * MIB, 64 * MIB, Mode::Wrap);
    let report = verify(&mut disk, "/dev/sim", &Safety::Destructive, options(), &Quiet).expect("verify");
    assert_fake(&report, Verdict::Wraparound, 64 * MIB);
    assert_eq!(report.mode, "destructive");
    assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none());
}

/// Stops at the n-th stage.
struct StopAt {
    n: usize,
    seen: Cell<usize>,
}

impl Watch for StopAt {
    fn stage(&self, _: &str) {
        self.seen.set(self.seen.get() + 1);
    }
    fn stop(&self) -> Option<&'static str> {
        (self.seen.get() >= self.n).then_some("SIGINT (Ctrl-C)")
    }
}

#[test]
fn an_interruption_restores_every_byte() {
    for n in [1, 2] {
        let dir = tempfile::tempdir().expect("dir");
        let mut disk = SimDisk::new(256 * MIB, 64 * MIB, Mode::Wrap);
        disk.fill_pattern(3);
        let before = disk.snapshot();
        let err = verify(&mut disk, "/dev/sim", &safety(&dir), options(), &StopAt { n, seen: Cell::new(0) });
        assert!(matches!(err, Err(VerifyError::Probe(ProbeError::Interrupted(_)))), "{err:?}");
        assert_eq!(disk.snapshot(), before);
    }
}

#[test]
fn kill_at_any_write_then_replay_restores_every_byte() {
    for mode in [Mode::Wrap, Mode::Limbo(0), Mode::Chain(128 * MIB)] {
        // How many writes a whole run makes, to kill at spread-out moments.
        let mut counting = SimDisk::new(256 * MIB, 64 * MIB, mode);
        let dir = tempfile::tempdir().expect("dir");
        verify(&mut counting, "/dev/sim", &safety(&dir), options(), &Quiet).expect("verify");
        let total = counting.writes;
        let mut moments: Vec<u64> = (1..=8).map(|i| total * i / 9).collect();
        moments.extend([1, total - 1]);
        for &die_at in &moments {
            let dir = tempfile::tempdir().expect("dir");
            let mut disk = SimDisk::new(256 * MIB, 64 * MIB, mode);
            disk.fill_pattern(die_at);
            let before = disk.snapshot();
            disk.die_at_write = Some(die_at);
            let died =
                catch_unwind(AssertUnwindSafe(|| verify(&mut disk, "/dev/sim", &safety(&dir), options(), &Quiet)));
            assert!(died.is_err(), "{mode:?}: no write number {die_at}");
            disk.die_at_write = None;
            let left = replay_unfinished(dir.path(), "/dev/sim", "sim", &mut disk).expect("replay");
            assert!(matches!(left.as_slice(), [Leftover::Replayed { .. }]), "{left:?}");
            assert_eq!(disk.snapshot(), before, "{mode:?}, killed at write {die_at} of {total}");
        }
    }
}

#[test]
fn a_journal_of_another_card_in_the_same_slot_is_not_replayed() {
    let dir = tempfile::tempdir().expect("dir");
    let mut disk = SimDisk::new(256 * MIB, 64 * MIB, Mode::Wrap);
    disk.die_at_write = Some(20);
    let _ = catch_unwind(AssertUnwindSafe(|| verify(&mut disk, "/dev/sim", &safety(&dir), options(), &Quiet)));
    let mut other = SimDisk::new(256 * MIB, 256 * MIB, Mode::Genuine);
    let before = other.snapshot();
    let left = replay_unfinished(dir.path(), "/dev/sim", "another card", &mut other).expect("replay");
    assert!(matches!(left.as_slice(), [Leftover::Mismatch(_)]), "{left:?}");
    assert_eq!(other.snapshot(), before);
    let left = replay_unfinished(dir.path(), "/dev/other", "another card", &mut other).expect("replay");
    assert!(matches!(left.as_slice(), [Leftover::OtherDevice(_)]), "{left:?}");
}
