//! The property test: counterfeits drawn at random (real size, announced
//! size, wrap offsets, limbo kinds, chain points, caches), each probed with
//! the journal and checked: the verdict is the card's kind, the usable size
//! is never larger than the truth, and the user's data is intact.
//!
//! Scaled down so that it runs in seconds inside `cargo test`: cards of 16
//! MiB to 8 GiB, caches up to 12 MiB against a 16 MiB bound, runs of at most
//! 2 MiB. The full-scale sweep (real sizes 3.5–32 GiB, announced up to 512
//! GiB) runs on FUSE fakes in `cargo xtask bench capacity --sweep`.
//! `STORAGE_SCORE_CAPACITY_CASES` and `STORAGE_SCORE_CAPACITY_SEED` change
//! the number of cases and the draw; `STORAGE_SCORE_CAPACITY_LIST_INEXACT`
//! lists the cards that came out right but short of the truth.

use super::*;
use crate::probe::BLOCK;
use crate::stamp::hash64;

const SECTOR: u64 = 512;

/// A reproducible stream of numbers.
struct Draw(u64, u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.1 += 1;
        hash64(self.0 ^ hash64(self.1))
    }

    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo { lo } else { lo + self.next() % (hi - lo) }
    }

    /// About log-uniform in `[lo, hi)`, in whole sectors.
    fn size(&mut self, lo: u64, hi: u64) -> u64 {
        let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
        let x = a + (b - a) * (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((x.exp() as u64) / SECTOR * SECTOR).clamp(lo, hi)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

fn limbo_kind(draw: &mut Draw) -> Limbo {
    draw.pick(&[Limbo::Zeros, Limbo::Ones, Limbo::Stale, Limbo::LastWrite])
}

/// One card at random, with the verdict it deserves.
fn draw_card(draw: &mut Draw) -> (Card, Verdict, String) {
    let announced = draw.size(16 * MIB, 8 * GIB);
    let real = draw.size(2 * MIB, announced);
    let family = draw.range(0, 7);
    // A wrap over less than a MiB past the real size reaches only a sliver
    // of the real storage: it is called fake with a safe size, but not
    // always a wraparound.
    let family = if announced - real < MIB && (1..=3).contains(&family) { 4 } else { family };
    if real == announced || family == 0 {
        return (Card::genuine(announced), Verdict::Genuine, format!("genuine {announced}"));
    }
    match family {
        1 => (Card::wrap(announced, real), Verdict::Wraparound, format!("wrap {real}/{announced}")),
        2 if real > 2 * MIB => {
            // Not within 64 KiB below the real size: an alias that lands
            // on the last few blocks of the real storage overlaps the very
            // stamps that would show it, and is often called a chain (with
            // a usable size a few KiB short, never larger).
            let shift = draw.range(1, (real - (64 << 10)) / SECTOR) * SECTOR;
            (
                Card::wrap_rotated(announced, real, shift),
                Verdict::Wraparound,
                format!("wrap {real}/{announced} +{shift}"),
            )
        }
        3 if real > 2 * MIB => {
            let skip = draw.range(1, (real - MIB) / SECTOR) * SECTOR;
            let card = Card::wrap_skipping(announced, real, skip);
            (card, Verdict::Wraparound, format!("wrap {real}/{announced} skipping {skip}"))
        }
        2..=4 => {
            let kind = limbo_kind(draw);
            (Card::limbo(announced, real, kind), Verdict::Limbo, format!("limbo {kind:?} {real}/{announced}"))
        }
        5 if announced >= 2 * real + SECTOR => {
            // At least one whole island above the wrap point.
            let period = draw.range(real / SECTOR + 1, (announced - real) / SECTOR + 1) * SECTOR;
            let kind = limbo_kind(draw);
            let card = Card::chain(announced, real, period, kind);
            (card, Verdict::Chain, format!("chain {kind:?} {real}/{period}/{announced}"))
        }
        _ => (Card::eio(announced, real), Verdict::IoErrors, format!("eio {real}/{announced}")),
    }
}

/// The probe's options at the property test's scale.
const SMALL: Options = Options { cache_bound: 16 * MIB, scan_balance: 4 << 10, max_run: 2 * MIB };

/// Probes `disk`, its data drawn from `fill`, at the property test's scale
/// and returns the report, after checking the user's data.
fn probe_small(mut disk: SimDisk, fill: u64) -> Report {
    disk.fill_pattern(fill);
    let tmp = tempfile::tempdir().expect("dir");
    let dir = JournalDir::for_tests(tmp.path());
    let report = verify(&mut disk, "/dev/sim", &safety(&dir), SMALL, &Quiet).expect("verify");
    assert!(disk.intact().is_ok());
    report
}

#[test]
fn random_counterfeits_are_called_right_and_never_larger() {
    counterfeits_called_right(false);
}

/// `--destructive`: the same cards, the same verdicts. Where the top
/// holds, on a card with room (about a third of these), its first cache
/// flush writes stamps between the run and the top blocks without reading
/// first; every later flush still reads each chunk and writes it back: a
/// flush that wrote filler anywhere without reading first got 14 of these
/// 200 wrong (seed 17), because on a wrap an address it may write reaches,
/// through its alias, a stamp the probe still needs. Stamps written from
/// the run down got 3 wrong, and above it on cards with less room than
/// eight times the bound, 1.
#[test]
fn random_counterfeits_are_called_right_when_destructive_too() {
    counterfeits_called_right(true);
}

fn counterfeits_called_right(destructive: bool) {
    let cases: u64 = std::env::var("STORAGE_SCORE_CAPACITY_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200);
    let seed: u64 = std::env::var("STORAGE_SCORE_CAPACITY_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(17);
    let mut draw = Draw(seed, 0);
    let (mut right, mut exact, mut worst, mut written) = (0, 0, 0u64, 0u64);
    let mut wrong = Vec::new();
    for case in 0..cases {
        let (card, verdict, name) = draw_card(&mut draw);
        let real = card.usable();
        let announced = card.announced;
        // A cache no larger than what the card has room to rewrite.
        let room = (announced - 2 * MIB).min(12 * MIB);
        let cache = if draw.range(0, 3) == 0 { draw.range(1, room / BLOCK) * BLOCK } else { 0 };
        let mut disk = SimDisk::of(card).with_cache(cache);
        disk.fill_pattern(case);
        let tmp = tempfile::tempdir().expect("dir");
        let dir = JournalDir::for_tests(tmp.path());
        let how = if destructive { Safety::Destructive } else { safety(&dir) };
        let report = match verify(&mut disk, "/dev/sim", &how, SMALL, &Quiet) {
            Ok(report) => report,
            Err(e) => {
                wrong.push(format!("{name} cache {cache} fill {case}: {e}"));
                continue;
            }
        };
        written = written.max(report.bytes_written);
        let intact = if destructive { Ok(()) } else { disk.intact() };
        let larger = report.usable_bytes > real;
        if report.verdict == verdict && !larger && intact.is_ok() {
            right += 1;
        } else {
            wrong.push(format!(
                "{name} cache {cache} fill {case}: {} usable {} (real {real}) {intact:?}",
                report.verdict.as_str(),
                report.usable_bytes
            ));
        }
        if report.usable_bytes == real {
            exact += 1;
        } else if !larger {
            if std::env::var_os("STORAGE_SCORE_CAPACITY_LIST_INEXACT").is_some() {
                eprintln!(
                    "not exact: {name} cache {cache} fill {case}: {} usable {} (real {real})",
                    report.verdict.as_str(),
                    report.usable_bytes
                );
            }
            worst = worst.max(real - report.usable_bytes);
        }
    }
    eprintln!(
        "property{}: {cases} cards drawn (seed {seed}), {right} right, {exact} exact to the byte, worst usable error {worst} bytes below the truth, at most {written} bytes written",
        if destructive { " (destructive)" } else { "" }
    );
    assert!(wrong.is_empty(), "{} of {cases} wrong:\n{}", wrong.len(), wrong.join("\n"));
}

#[test]
fn a_rotated_wrap_smaller_than_the_run_behind_a_cache() {
    // Drawn by the property test (seed 2026): 6.5 MiB of flash announced
    // as 1.6 GiB, addresses past it reaching 1.84 MiB in, a 3.6 MiB cache.
    let (announced, real, shift, cache) = (1_743_825_920, 6_867_968, 1_933_312, 3_821_568);
    let report = probe_small(SimDisk::of(Card::wrap_rotated(announced, real, shift)).with_cache(cache), 3);
    assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
}

#[test]
fn an_offset_wrap_whose_pieces_show_at_shifts_far_apart() {
    // Drawn by the property test (seed 99): 5.37 MiB of flash announced as
    // 1.5 GiB, addresses past it reaching 3.59 MiB in. Its two pieces alias
    // at shifts 1.77 and 5.37 MiB; partner reads tried only the shifts seen
    // nearest each block, and in about 3 runs of 10 (the nonce orders the
    // reads) the certificates ran out walking down, with 7,868,416 bytes
    // called usable.
    let real = 5_626_880;
    for fill in 0..20 {
        let report = probe_small(SimDisk::of(Card::wrap_rotated(1_613_010_432, real, 3_766_784)), fill);
        assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
    }
}

#[test]
fn a_chain_whose_last_write_limbo_starts_with_a_block_written_last() {
    // Drawn by the property test (seed 99): 3.6 MiB of flash, limbo that
    // answers with the last write, flash again from 31.8 MiB. The lowest
    // limbo block was written last and read its own stamp; both decoys
    // that were to tell it from an alias landed on good storage below it
    // (every block above was stamped), so it passed for good: 4 KiB too
    // many called usable, and a wraparound.
    let real = 3_780_608;
    let report = probe_small(SimDisk::of(Card::chain(67_569_152, real, 33_381_376, Limbo::LastWrite)), 3);
    assert_eq!((report.verdict, report.usable_bytes), (Verdict::Chain, real), "{report:#?}");
}

#[test]
fn wraps_off_the_4_kib_grid_whose_blocks_overlap_at_a_sector_offset() {
    // Drawn by the property test (seed 31), each called a chain with a
    // usable size short of the truth. With a real size off the 4 KiB grid,
    // two blocks can share storage part way: the later write overwrote
    // part of the earlier block, which read back as damaged, as if its
    // write had vanished into limbo. First, a lattice block on the blocks
    // of the cache marker's partner (a plain wrap, 7.05 MiB in 21.2 MiB),
    // or on the partner's storage at a verified shift (an offset wrap);
    // then one whose storage the partner shares at a sector offset with no
    // shift yet verified (its alias is now read inside the damaged block).
    let cards = [
        (Card::wrap(22_187_008, 7_390_208), 684_032),
        (Card::wrap_rotated(440_044_544, 2_626_048, 1_382_400), 7_073_792),
        (Card::wrap_rotated(75_234_304, 3_173_888, 1_452_544), 3_985_408),
    ];
    for (card, cache) in cards {
        let real = card.usable();
        for fill in 0..4 {
            let report = probe_small(SimDisk::of(card.clone()).with_cache(cache), fill);
            assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
        }
    }
}

#[test]
fn an_alias_found_to_the_sector_leaves_no_sector_below_it_untested() {
    // Drawn by the property test (seed 31), each behind a cache that
    // answers only reads of what was written: wraps whose first alias was
    // found to the sector, off the 4 KiB grid, while the last block seen
    // good ended below it. The sectors in between were never tested, and
    // the usable size came out up to 3 KiB short.
    let cards = [
        (Card::wrap_rotated(24_611_840, 5_444_608, 1_663_488), 10_866_688, 96),
        (Card::wrap_skipping(39_741_440, 23_356_416, 13_917_696), 10_633_216, 1504),
        (Card::wrap_rotated(30_999_552, 7_716_352, 6_234_112), 9_256_960, 880),
        (Card::wrap_rotated(19_104_256, 8_293_376, 4_730_368), 3_481_600, 909),
    ];
    for (card, cache, fill) in cards {
        let real = card.usable();
        let report = probe_small(SimDisk::of(card).with_cache(cache), fill);
        assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
    }
}

#[test]
fn an_offset_wrap_whose_lower_piece_shows_only_at_the_certificate() {
    // Drawn by the property test (seed 99): 8.07 MiB of flash announced as
    // 1.85 GiB, rotated, behind a 5 MiB cache. Addresses just past the real
    // size reach its top part at a shift no read had verified when they
    // were judged good; each certificate saw that shift below its own run
    // only, and walked the boundary down half a run at a time until the
    // certificates ran out: 9,555,968 usable for 8,462,336 real. Every unit
    // seen good above a shift the certificate finds is now read against it.
    let card = Card::wrap_rotated(1_987_741_184, 8_462_336, 6_112_768);
    let real = card.usable();
    let report = probe_small(SimDisk::of(card).with_cache(5_255_168), 0);
    assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
}

#[test]
fn a_wrap_whose_period_is_off_the_block_grid_is_named_a_wrap() {
    // Drawn by the property test (seed 17): addresses past a few MiB of
    // flash reach the storage from 1.6 MiB (1.25 MiB) on again, a period
    // that is no whole number of 4 KiB blocks; the first bad block read back
    // as a mixture of aliases, and the card was called a chain.
    for (announced, real, skip, fill) in
        [(7_825_132_032, 4_784_128, 1_673_728, 6802), (565_572_096, 3_670_016, 1_312_768, 12_507)]
    {
        let report = probe_small(SimDisk::of(Card::wrap_skipping(announced, real, skip)), fill);
        assert_eq!((report.verdict, report.usable_bytes), (Verdict::Wraparound, real), "{report:#?}");
        assert_eq!((report.wraps_at_bytes, report.wraps_onto_bytes), (Some(real), Some(skip)), "{report:#?}");
    }
}
