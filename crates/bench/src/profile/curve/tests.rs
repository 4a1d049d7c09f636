//! The curve's reading on synthetic curves: clean, noisy, with pauses,
//! bursts and transitions next to the step and away from it.

use super::*;

const MIB: u64 = 1 << 20;

/// Chunks of 4 MiB written at `rates` (MB/s), one rate per chunk.
fn curve(rates: &[f64]) -> Vec<Chunk> {
    rates
        .iter()
        .enumerate()
        .map(|(i, &r)| Chunk { offset: i as u64 * 4 * MIB, bytes: 4 * MIB, secs: (4 * MIB) as f64 / (r * 1e6) })
        .collect()
}

/// A little deterministic noise: ±`share` around `rate`.
fn noisy(rate: f64, share: f64, i: usize) -> f64 {
    let wobble = ((i * 7919 + 13) % 101) as f64 / 100.0 * 2.0 - 1.0;
    rate * (1.0 + share * wobble)
}

#[test]
fn a_clean_step_is_found_where_it_is() {
    let rates: Vec<f64> = (0..64).map(|i| if i < 16 { 40.0 } else { 10.0 }).collect();
    let a = analyse(&curve(&rates));
    let step = a.step.expect("a step");
    assert_eq!(step.at_bytes, 64 * MIB);
    assert!((step.before_mb_s - 40.0).abs() < 1e-6 && (step.after_mb_s - 10.0).abs() < 1e-6, "{step:?}");
    assert_eq!(a.segments.len(), 2);
    assert!((a.steady_mb_s.expect("steady") - 10.0).abs() < 1e-6);
}

#[test]
fn a_step_inside_a_chunk_is_placed_inside_it() {
    // 62 MiB at 40 MB/s, then slow: chunk 15 (60-64 MiB) is half fast.
    let mut chunks = curve(&(0..64).map(|i| if i < 16 { 40.0 } else { 10.0 }).collect::<Vec<_>>());
    let (f, s) = (40e6, 10e6);
    chunks[15].secs = (2 * MIB) as f64 / f + (2 * MIB) as f64 / s;
    let a = analyse(&chunks);
    let step = a.step.expect("a step");
    assert!((step.at_bytes as f64 - (62 * MIB) as f64).abs() < 0.05 * MIB as f64, "{step:?}");
    assert_eq!(a.segments.len(), 2, "the straddling chunk is no level of its own: {:?}", a.segments);
    assert!((step.before_mb_s - 40.0).abs() < 1e-6 && (step.after_mb_s - 10.0).abs() < 1e-6, "{step:?}");
}

#[test]
fn noise_is_not_a_step() {
    let rates: Vec<f64> = (0..200).map(|i| noisy(25.0, 0.05, i)).collect();
    let a = analyse(&curve(&rates));
    assert_eq!(a.step, None, "{:?}", a.segments);
    assert_eq!(a.segments.len(), 1);
}

#[test]
fn a_noisy_step_is_found_within_a_chunk() {
    let rates: Vec<f64> = (0..120).map(|i| noisy(if i < 40 { 60.0 } else { 14.0 }, 0.04, i)).collect();
    let step = analyse(&curve(&rates)).step.expect("a step");
    assert!((step.at_bytes as i64 - (160 * MIB) as i64).abs() <= (4 * MIB) as i64, "{step:?}");
    assert!((step.before_mb_s / 60.0 - 1.0).abs() < 0.02 && (step.after_mb_s / 14.0 - 1.0).abs() < 0.02);
}

#[test]
fn a_pause_that_recovers_is_not_the_step() {
    // Fast, a garbage-collection dip, fast again, then the real drop.
    let rates: Vec<f64> = (0..100)
        .map(|i| {
            if (20..24).contains(&i) {
                5.0
            } else if i < 60 {
                40.0
            } else {
                12.0
            }
        })
        .collect();
    let step = analyse(&curve(&rates)).step.expect("a step");
    assert_eq!(step.at_bytes, 60 * 4 * MIB);
}

#[test]
fn three_levels_step_at_the_first_drop_and_settle_at_the_last() {
    // As the seed study saw: the cache, a middle level, the floor.
    let rates: Vec<f64> = (0..150)
        .map(|i| {
            noisy(
                if i < 15 {
                    40.0
                } else if i < 60 {
                    20.0
                } else {
                    10.0
                },
                0.02,
                i,
            )
        })
        .collect();
    let a = analyse(&curve(&rates));
    let step = a.step.expect("a step");
    assert_eq!(step.at_bytes, 15 * 4 * MIB, "{:?}", a.segments);
    assert!((step.after_mb_s / 20.0 - 1.0).abs() < 0.03, "{step:?}");
    assert_eq!(a.segments.len(), 3, "{:?}", a.segments);
    assert!((a.steady_mb_s.expect("steady") / 10.0 - 1.0).abs() < 0.03);
}

/// Noisy flash: ±`share` of uniform noise around each rate, from a
/// fixed seed (a 64-bit LCG, Knuth's constants).
fn jitter(rates: &mut [f64], share: f64, seed: u64) {
    let mut state = seed;
    for r in rates.iter_mut() {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let unit = (state >> 11) as f64 / (1u64 << 53) as f64;
        *r *= 1.0 + share * (2.0 * unit - 1.0);
    }
}

/// 40 MB/s for 256 MiB (64 chunks), then 10 MB/s for 512 MiB.
fn tiered() -> Vec<f64> {
    (0..192).map(|i| if i < 64 { 40.0 } else { 10.0 }).collect()
}

fn assert_near(what: &str, got: f64, truth: f64, share: f64) {
    assert!((got / truth - 1.0).abs() <= share, "{what}: {got}, truth {truth}");
}

#[test]
fn one_slow_chunk_before_the_step_does_not_pull_it_early() {
    // Issue 18's curve: an ext4 journal commit at 244 MiB wrote its
    // chunk at 22 MB/s, which made a 12 MiB level of 32 MB/s and gave
    // "40 -> 32 MB/s" with the step 12 MiB early.
    let mut rates = tiered();
    jitter(&mut rates, 0.03, 1);
    rates[61] = 22.0;
    let a = analyse(&curve(&rates));
    let step = a.step.unwrap_or_else(|| panic!("no step: {:?}", a.segments));
    assert_near("cache bytes", step.at_bytes as f64, (256 * MIB) as f64, 0.02);
    assert_near("after", step.after_mb_s, 10.0, 0.02);
    assert_near("before", step.before_mb_s, 40.0, 0.03);
    assert_eq!(a.segments.len(), 2, "{:?}", a.segments);
}

#[test]
fn single_chunk_stalls_on_both_sides_are_noise() {
    // Garbage-collection pauses: one chunk in the cache as slow as the
    // floor, one just before the step, a two-chunk pause and a single
    // one in the floor, and one fast chunk there (a DRAM buffer).
    let mut rates = tiered();
    jitter(&mut rates, 0.05, 2);
    rates[20] = 9.0;
    rates[62] = 10.0;
    rates[100] = 3.0;
    rates[140] = 4.0;
    rates[141] = 4.0;
    rates[170] = 40.0;
    let chunks = curve(&rates);
    let a = analyse(&chunks);
    let step = a.step.unwrap_or_else(|| panic!("no step: {:?}", a.segments));
    // The pause at chunk 62 is as slow as the floor, one chunk before it.
    assert!(step.at_bytes.abs_diff(256 * MIB) <= 4 * MIB, "{step:?}");
    // Each level's rate is the card's own, outside its pauses and bursts.
    let odd = [20, 62, 100, 140, 141, 170];
    assert_near("before", step.before_mb_s, rate_outside(&chunks, 0..64, &odd), 0.01);
    assert_near("after", step.after_mb_s, rate_outside(&chunks, 64..192, &odd), 0.01);
    assert_near("after", step.after_mb_s, 10.0, 0.05);
    assert_eq!(a.segments.len(), 2, "{:?}", a.segments);
    assert_near("steady", a.steady_mb_s.expect("steady"), step.after_mb_s, 1e-9);
}

#[test]
fn a_short_transition_places_the_step_but_is_not_the_rate_after() {
    // 40 MB/s, three chunks at 25 (the card folding its cache), then 10.
    let mut rates: Vec<f64> = (0..192)
        .map(|i| match i {
            0..64 => 40.0,
            64..67 => 25.0,
            _ => 10.0,
        })
        .collect();
    jitter(&mut rates, 0.02, 3);
    let a = analyse(&curve(&rates));
    let step = a.step.unwrap_or_else(|| panic!("no step: {:?}", a.segments));
    assert!(step.at_bytes.abs_diff(256 * MIB) <= 4 * MIB, "where the drop begins: {step:?}");
    assert_near("after", step.after_mb_s, 10.0, 0.02);
    assert_near("before", step.before_mb_s, 40.0, 0.02);
    assert_near("steady", a.steady_mb_s.expect("steady"), 10.0, 0.02);
}

#[test]
fn many_noisy_cards_with_pauses_give_the_truth() {
    // Caches of 24 to 151 chunks, floors of a fifth to a half of the
    // cache's rate, 6% noise; pauses (chunks at a third to a tenth of
    // their level's rate) anywhere but next to the step or at an end:
    // three in a row (a level of its own), two in a row, two single
    // ones; and a burst (a chunk at twice its level's rate). The tests
    // above put pauses next to the step.
    let mut state = 7u64;
    let mut next = |range: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % range
    };
    for seed in 0..500 {
        let cache = 24 + next(128) as usize;
        let n = cache + 64 + next(128) as usize;
        let fast = 20.0 + next(60) as f64;
        let slow = fast * (0.2 + next(30) as f64 / 100.0);
        let mut rates: Vec<f64> = (0..n).map(|i| if i < cache { fast } else { slow }).collect();
        jitter(&mut rates, 0.06, seed);
        // Separate events, three ordinary chunks apart at least, and
        // four from the step and the ends.
        let mut events: Vec<usize> = Vec::new();
        for (k, width) in [3, 2, 1, 1, 1].into_iter().enumerate() {
            let at = loop {
                let at = 4 + next((n - width - 8) as u64) as usize;
                let clear = |p: usize| p + 3 < at || at + width + 3 <= p;
                if events.iter().all(|&p| clear(p)) && clear(cache - 1) && clear(cache) {
                    break at;
                }
            };
            events.extend(at..at + width);
            for r in &mut rates[at..at + width] {
                // The last one is a burst.
                *r = if k == 4 { *r * 2.0 } else { *r / (3.0 + next(8) as f64) };
            }
        }
        let chunks = curve(&rates);
        let a = analyse(&chunks);
        let step = a.step.unwrap_or_else(|| panic!("seed {seed}: no step; events {events:?}: {:?}", a.segments));
        let truth = cache as u64 * 4 * MIB;
        assert!(
            step.at_bytes.abs_diff(truth) <= 4 * MIB,
            "seed {seed}: step at {} MiB, truth {} MiB; events {events:?}: {:?}",
            step.at_bytes / MIB,
            truth / MIB,
            a.segments
        );
        // Each level's rate, outside its pauses and its burst.
        let (cached, floor) = (rate_outside(&chunks, 0..cache, &events), rate_outside(&chunks, cache..n, &events));
        let close = |x: f64, truth: f64| (x / truth - 1.0).abs() < 0.03;
        assert!(close(step.before_mb_s, cached), "seed {seed}: {step:?}, cache {cached}: {:?}", a.segments);
        assert!(close(step.after_mb_s, floor), "seed {seed}: {step:?}, floor {floor}: {:?}", a.segments);
        let steady = a.steady_mb_s.expect("steady");
        assert!(close(steady, floor), "seed {seed}: steady {steady}, floor {floor}");
    }
}

#[test]
fn a_pass_of_2048_chunks_finds_its_step() {
    // 2048 chunks, the most `profile` writes: the search for a short
    // level inside a run is quadratic in its length.
    let mut rates: Vec<f64> = (0..2048).map(|i| if i < 300 { 40.0 } else { 12.0 }).collect();
    jitter(&mut rates, 0.10, 9);
    let started = std::time::Instant::now();
    let a = analyse(&curve(&rates));
    eprintln!("{:?} for 2048 chunks", started.elapsed());
    assert!(a.step.is_some_and(|s| s.at_bytes.abs_diff(1200 * MIB) <= 4 * MIB), "{:?}", a.step);
}

#[test]
fn a_noisy_cache_over_a_quiet_floor_is_two_levels() {
    // A throttle's slices make the cache's chunks bursty (±25% here), while
    // the slow floor is nearly flat (±2%): one noise figure in MB/s would
    // split the cache into pieces; a share of the rate does not.
    let mut rates = tiered();
    let (cache, floor) = rates.split_at_mut(64);
    jitter(cache, 0.25, 10);
    jitter(floor, 0.02, 11);
    let chunks = curve(&rates);
    let a = analyse(&chunks);
    assert_eq!(a.segments.len(), 2, "{:?}", a.segments);
    let step = a.step.expect("a step");
    assert!(step.at_bytes.abs_diff(256 * MIB) <= 4 * MIB, "{step:?}");
    assert_near("before", step.before_mb_s, rate(&chunks[..63]), 0.02);
    assert_near("after", step.after_mb_s, 10.0, 0.02);
}

#[test]
fn noisy_flash_with_stalls_and_no_drop_has_no_step() {
    let mut rates = vec![25.0; 200];
    jitter(&mut rates, 0.10, 4);
    for i in (7..200).step_by(23) {
        rates[i] /= 3.0;
    }
    let a = analyse(&curve(&rates));
    assert_eq!(a.step, None, "{:?}", a.segments);
    assert_eq!(a.segments.len(), 1, "{:?}", a.segments);
}

#[test]
fn a_rate_that_rises_has_no_step() {
    let rates: Vec<f64> = (0..40).map(|i| if i < 20 { 10.0 } else { 30.0 }).collect();
    let a = analyse(&curve(&rates));
    assert_eq!(a.step, None);
    assert_eq!(a.segments.len(), 2);
}

#[test]
fn few_chunks_give_one_level() {
    let a = analyse(&curve(&[40.0, 10.0, 10.0]));
    assert_eq!(a.segments.len(), 1);
    assert_eq!(a.step, None);
    assert!(analyse(&[]).steady_mb_s.is_none());
}

#[test]
fn slowest_second_spans_whole_chunks() {
    // 4 MiB chunks: at 40 MB/s each takes 0.105 s; at 4 MB/s 1.05 s.
    let a = curve(&[40.0; 20]);
    assert!((slowest_window(&a, 1.0, 0.0, Windows::Sliding).expect("window").mb_s - 40.0).abs() < 1e-6);
    let mut rates = vec![40.0; 20];
    rates[10] = 4.0;
    let b = curve(&rates);
    let slowest = slowest_window(&b, 1.0, 0.0, Windows::Sliding).expect("window");
    assert!((slowest.mb_s - 4.0).abs() < 1e-6, "one chunk spans the second: {slowest:?}");
    assert_eq!(slowest_window(&curve(&[40.0; 5]), 1.0, 0.0, Windows::Sliding), None, "shorter than a second");
}

#[test]
fn slowest_span_groups_by_alignment() {
    let mut rates = vec![40.0; 16];
    rates[5] = 10.0;
    let chunks = curve(&rates);
    // 16 MiB spans: chunks 4..8 hold the slow one.
    let slowest = slowest_span(&chunks, 16 * MIB).expect("span");
    let expected = (16 * MIB) as f64 / (3.0 * (4 * MIB) as f64 / 40e6 + (4 * MIB) as f64 / 10e6) / 1e6;
    assert!((slowest - expected).abs() < 1e-6, "{slowest} vs {expected}");
    assert_eq!(slowest_span(&chunks[..3], 16 * MIB), None);
}

// Issue 32: each level's rate is the card's own, the rate it writes at
// outside its pauses and bursts, within 5% on noisy flash.

/// 40 MB/s for 256 MiB (64 chunks), then 10 MB/s to 768 MiB, with ±`share`
/// of seeded jitter.
fn issue_card(share: f64, seed: u64) -> Vec<f64> {
    let mut rates = tiered();
    jitter(&mut rates, share, seed);
    rates
}

/// A pause of `bytes` at `rate` MB/s starting `at` bytes into the pass,
/// added to the chunks of `chunks` it falls in (each chunk's time grows by
/// the time its share of the pause took over what it would have taken).
fn pause(chunks: &mut [Chunk], at: u64, bytes: u64, rate: f64) {
    for c in chunks.iter_mut() {
        let (from, to) = (at.max(c.offset), (at + bytes).min(c.offset + c.bytes));
        if from < to {
            let share = (to - from) as f64;
            let own = c.mb_s();
            c.secs += share / (rate * 1e6) - share / (own * 1e6);
        }
    }
}

/// Bytes over time of `chunks[range]` but those at `skip`: the truth a
/// level's rate must give, the card's own rate outside its odd chunks.
fn rate_outside(chunks: &[Chunk], range: Range<usize>, skip: &[usize]) -> f64 {
    let kept: Vec<Chunk> = range.filter(|i| !skip.contains(i)).map(|i| chunks[i]).collect();
    rate(&kept)
}

fn step_of(a: &Analysis) -> Step {
    a.step.unwrap_or_else(|| panic!("no step: {:?}", a.segments))
}

#[test]
fn the_issue_32_card_gives_forty_and_ten() {
    // The issue's card: 4 MiB pauses at 3 MB/s at 96 MiB (one chunk) and
    // at 512 MiB; and the same with each pause across two chunks.
    for offset in [0, 2 * MIB] {
        let mut chunks = curve(&issue_card(0.03, 32));
        let truth_before = rate_outside(&chunks, 0..64, &[]);
        let truth_after = rate_outside(&chunks, 64..192, &[]);
        pause(&mut chunks, 96 * MIB + offset, 4 * MIB, 3.0);
        pause(&mut chunks, 512 * MIB + offset, 4 * MIB, 3.0);
        let a = analyse(&chunks);
        let step = step_of(&a);
        assert_near("cache bytes", step.at_bytes as f64, (256 * MIB) as f64, 0.05);
        assert_near("before", step.before_mb_s, truth_before, 0.01);
        assert_near("after", step.after_mb_s, truth_after, 0.01);
        assert_near("before", step.before_mb_s, 40.0, 0.05);
        assert_near("after", step.after_mb_s, 10.0, 0.05);
        assert_near("steady", a.steady_mb_s.expect("steady"), 10.0, 0.05);
    }
}

#[test]
fn stalls_of_one_and_several_chunks_anywhere_leave_the_rates_true() {
    // Each case: the chunks stalled and their rate. 64 chunks of cache at
    // 40 MB/s, 128 of floor at 10, ±10% jitter.
    let cases: [(&str, Vec<usize>, f64); 8] = [
        ("one at the start of the cache", vec![0], 4.0),
        ("three at the start of the cache", vec![0, 1, 2], 5.0),
        ("one in the middle of the cache", vec![30], 3.0),
        ("four in the middle of the cache", vec![30, 31, 32, 33], 6.0),
        ("two just before the step", vec![62, 63], 3.0),
        ("two at the start of the floor", vec![64, 65], 2.0),
        ("three in the middle of the floor", vec![120, 121, 122], 2.5),
        ("one at each end of the floor and one in the cache", vec![20, 64, 191], 1.0),
    ];
    for (seed, (what, stalled, slow)) in cases.into_iter().enumerate() {
        let mut rates = issue_card(0.10, 100 + seed as u64);
        for &i in &stalled {
            rates[i] = slow;
        }
        let chunks = curve(&rates);
        let a = analyse(&chunks);
        let step = a.step.unwrap_or_else(|| panic!("{what}: no step: {:?}", a.segments));
        let (before, after) = (rate_outside(&chunks, 0..64, &stalled), rate_outside(&chunks, 64..192, &stalled));
        let near = |got: f64, truth: f64, share: f64| (got / truth - 1.0).abs() <= share;
        assert!(near(step.at_bytes as f64, (256 * MIB) as f64, 0.05), "{what}: {step:?}: {:?}", a.segments);
        assert!(near(step.before_mb_s, before, 0.02), "{what}: before {step:?}, truth {before}: {:?}", a.segments);
        assert!(near(step.after_mb_s, after, 0.02), "{what}: after {step:?}, truth {after}: {:?}", a.segments);
        assert!(near(step.before_mb_s, 40.0, 0.05) && near(step.after_mb_s, 10.0, 0.05), "{what}: {step:?}");
    }
}

#[test]
fn bursts_do_not_lift_the_rates() {
    // A DRAM buffer absorbs a chunk now and then: single chunks at 2 to 4
    // times their level's rate, and a run of two, on both sides.
    let mut rates = issue_card(0.05, 7);
    let bursts = [10, 40, 41, 80, 100, 101, 150, 170];
    for &i in &bursts {
        rates[i] *= if i < 64 { 2.0 } else { 4.0 };
    }
    let chunks = curve(&rates);
    let a = analyse(&chunks);
    let step = step_of(&a);
    assert_near("cache bytes", step.at_bytes as f64, (256 * MIB) as f64, 0.05);
    assert_near("before", step.before_mb_s, rate_outside(&chunks, 0..64, &bursts), 0.01);
    assert_near("after", step.after_mb_s, rate_outside(&chunks, 64..192, &bursts), 0.01);
    assert_near("steady", a.steady_mb_s.expect("steady"), rate_outside(&chunks, 64..192, &bursts), 0.01);
}

#[test]
fn many_jittery_cards_with_stalls_and_bursts_give_their_own_rates() {
    // ±10% jitter, from a seed; three stalls of one to three chunks at a
    // fifth of the level's rate on each side, a burst on each side; three
    // ordinary chunks apart and from the step at least (a stall with one
    // ordinary chunk between it and the step cannot be told from a burst
    // after it; stalls at the step are the cases above).
    for seed in 0..200u64 {
        let mut rates = issue_card(0.10, 1000 + seed);
        let mut state = seed;
        let mut next = |range: usize| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) % range as u64) as usize
        };
        let mut odd: Vec<usize> = Vec::new();
        for (from, to) in [(0usize, 64usize), (64, 192)] {
            for (k, width) in [1, 2, 3, 1].into_iter().enumerate() {
                let at = loop {
                    let at = from + next(to - from - width);
                    let clear = |p: usize| p + 3 < at || at + width + 3 <= p;
                    if odd.iter().all(|&p| clear(p)) && clear(63) && clear(64) {
                        break at;
                    }
                };
                odd.extend(at..at + width);
                for r in &mut rates[at..at + width] {
                    // The last is a burst.
                    *r = if k == 3 { *r * 2.5 } else { *r / 5.0 };
                }
            }
        }
        let chunks = curve(&rates);
        let a = analyse(&chunks);
        let step = a.step.unwrap_or_else(|| panic!("seed {seed}: no step, odd {odd:?}: {:?}", a.segments));
        let near = |got: f64, truth: f64, share: f64| (got / truth - 1.0).abs() <= share;
        let (before, after) = (rate_outside(&chunks, 0..64, &odd), rate_outside(&chunks, 64..192, &odd));
        assert!(near(step.at_bytes as f64, (256 * MIB) as f64, 0.05), "seed {seed}, odd {odd:?}: {step:?}");
        assert!(near(step.before_mb_s, before, 0.03), "seed {seed}, odd {odd:?}: {step:?}, truth {before}");
        assert!(near(step.after_mb_s, after, 0.03), "seed {seed}, odd {odd:?}: {step:?}, truth {after}");
        assert!(near(step.before_mb_s, 40.0, 0.05) && near(step.after_mb_s, 10.0, 0.05), "seed {seed}: {step:?}");
    }
}

#[test]
fn stalls_without_a_drop_leave_no_step_and_the_steady_rate_true() {
    let mut rates = vec![25.0; 200];
    jitter(&mut rates, 0.10, 5);
    let stalled: Vec<usize> = (7..200).step_by(23).chain([100, 101]).collect();
    for &i in &stalled {
        rates[i] /= 4.0;
    }
    let chunks = curve(&rates);
    let a = analyse(&chunks);
    assert_eq!(a.step, None, "{:?}", a.segments);
    let steady = a.steady_mb_s.expect("steady");
    assert_near("steady", steady, rate_outside(&chunks, 0..200, &stalled), 0.01);
    assert_near("steady", steady, 25.0, 0.05);
}
