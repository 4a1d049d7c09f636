//! Who is held back from an established row: a network that contradicts
//! what five or more networks established is kept and shown, but in no
//! median, standing or plot, until the row moves to it or a moderator
//! accepts it (docs/leaderboard.md#held-results). Pure: a row's submitter
//! samples in, which are held out.

use std::collections::BTreeMap;

use super::aggregate::{GroupStats, SubmitterEntry, group_stats, quantile};

/// Networks with counted results that make a row established: from then
/// on a newcomer that contradicts the row is held.
pub const ESTABLISHED: usize = 5;

/// How far outside its p10–p90 band a newcomer may be and still agree
/// with an established row, as a factor on the band's ends: down to the
/// p10 divided by it, up to the p90 times it. Honest results of one card on
/// one board and bus spread by about ±10–15%, and a firmware update may
/// move a card by a fifth; 1.5 leaves room for both, even over a row whose
/// first networks happen to agree closely, while half or double the truth
/// (and anything a spammer gains from) lies outside.
pub const BAND_FACTOR: f64 = 1.5;

/// The most recent newcomers left out of the band a newcomer is judged
/// against: a burst of up to this many networks is judged, all of it,
/// against the row as it stood before the burst, so that it cannot widen
/// the band for its own later members.
pub const BURST: usize = 10;

/// The band a newcomer must fall in to agree with `counted` (scores of
/// the networks counted before it, in the order they joined), or `None`
/// when the row is not established.
pub fn agreement_band(counted: &[i64]) -> Option<(f64, f64)> {
    if counted.len() < ESTABLISHED {
        return None;
    }
    // The row as it stood before the latest burst (never fewer than the
    // networks that established it).
    let core = counted.len().saturating_sub(BURST).max(ESTABLISHED);
    let mut scores = counted[..core].to_vec();
    let p10 = quantile(&mut scores, 0.1)? as f64;
    let p90 = quantile(&mut scores, 0.9)? as f64;
    Some((p10 / BAND_FACTOR, p90 * BAND_FACTOR))
}

/// Marks which networks of a row are held (`entries[i].held`): walking
/// the networks in the order they joined, the first [`ESTABLISHED`] count;
/// after that a newcomer counts when its score lies in the
/// [`agreement_band`] of those counted before it, or a moderator accepted
/// it, and is held otherwise. A held network counts again as soon as the
/// row's counted results move to include it (the walk is repeated with the
/// final band until nothing changes). Returns how many are held.
pub fn split_held(entries: &mut [SubmitterEntry]) -> usize {
    entries.sort_by(|a, b| (a.first_id, &a.submitter).cmp(&(b.first_id, &b.submitter)));
    let mut counted: Vec<i64> = Vec::with_capacity(entries.len());
    for entry in entries.iter_mut() {
        let agrees = match agreement_band(&counted) {
            None => true,
            Some((lo, hi)) => (lo..=hi).contains(&(entry.score as f64)),
        };
        entry.held = !(agrees || entry.accepted);
        if !entry.held {
            counted.push(entry.score);
        }
    }
    // Corroboration: the row as it now stands may agree with a held one.
    while let Some((lo, hi)) = agreement_band(&counted) {
        let mut moved = false;
        for entry in entries.iter_mut().filter(|e| e.held && (lo..=hi).contains(&(e.score as f64))) {
            entry.held = false;
            counted.push(entry.score);
            moved = true;
        }
        if !moved {
            break;
        }
    }
    entries.iter().filter(|e| e.held).count()
}

/// Whether `submitter` is held back in a row whose networks are `entries`.
pub fn is_held(entries: &[SubmitterEntry], submitter: &str) -> bool {
    entries.iter().any(|e| e.submitter == submitter && e.held)
}

/// The networks of a row that count.
pub fn counted(entries: &[SubmitterEntry]) -> Vec<SubmitterEntry> {
    entries.iter().filter(|e| !e.held).cloned().collect()
}

/// A row's networks settled: which are held (`entries[i].held` set), the
/// row's figures over the others, and the networks whose held state
/// changed from what was stored, to write back.
pub fn settle_group(entries: &mut [SubmitterEntry]) -> (Option<GroupStats>, Vec<(String, bool)>) {
    let stored: BTreeMap<String, bool> = entries.iter().map(|e| (e.submitter.clone(), e.held)).collect();
    let held = split_held(entries) as i64;
    let changed = entries
        .iter()
        .filter(|e| stored.get(&e.submitter) != Some(&e.held))
        .map(|e| (e.submitter.clone(), e.held))
        .collect();
    let stats = group_stats(&counted(entries)).map(|stats| GroupStats { held, ..stats });
    (stats, changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::aggregate::tests::entry;

    /// Networks joining a row in order, each with one result.
    fn row_of(scores: &[i64]) -> Vec<SubmitterEntry> {
        scores
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut e = entry(&format!("n{i:03}"), &[*s]);
                e.first_id = i as i64 + 1;
                e
            })
            .collect()
    }

    fn median_of(entries: &[SubmitterEntry]) -> i64 {
        group_stats(&counted(entries)).unwrap().median
    }

    #[test]
    fn a_burst_that_contradicts_an_established_row_is_held() {
        let honest = [1180, 1246, 1300, 1210, 1275, 1230, 1260];
        let before = median_of(&row_of(&honest));
        // Nine networks at a hundredth of the truth, then ten at half of it.
        for fake in [12, 623] {
            for burst in [9usize, 10] {
                let mut scores = honest.to_vec();
                scores.extend(std::iter::repeat_n(fake, burst));
                let mut row = row_of(&scores);
                assert_eq!(split_held(&mut row), burst, "{fake} x{burst}");
                let after = median_of(&row);
                assert!((after - before).abs() * 20 <= before, "{before} -> {after}");
            }
        }
        // A moderator's acceptance counts one of them.
        let mut scores = honest.to_vec();
        scores.push(12);
        let mut row = row_of(&scores);
        row[7].accepted = true;
        assert_eq!(split_held(&mut row), 0);
    }

    #[test]
    fn honest_rows_are_never_held() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..500 {
            // A card whose results spread by 20% (±10% around its level) …
            let n = rng.gen_range(5..40);
            let scores: Vec<i64> = (0..n).map(|_| (1246.0 * rng.gen_range(0.9..1.1)) as i64).collect();
            let mut row = row_of(&scores);
            assert_eq!(split_held(&mut row), 0, "{scores:?}");
            // … then a firmware update that makes it 20% faster for everyone after.
            let mut updated = scores.clone();
            updated.extend((0..rng.gen_range(1..20)).map(|_| (1495.0 * rng.gen_range(0.9..1.1)) as i64));
            let mut row = row_of(&updated);
            assert_eq!(split_held(&mut row), 0, "{updated:?}");
        }
    }

    #[test]
    fn a_held_network_counts_once_the_row_moves_to_it() {
        // Established at ~1000; a newcomer at 2000 is held …
        let mut scores = vec![1000, 990, 1010, 1005, 995, 2000];
        let mut row = row_of(&scores);
        assert_eq!(split_held(&mut row), 1);
        // … and a few networks between do not move the band (a burst is
        // judged against the row before it) …
        scores.extend([1380; 5]);
        let mut row = row_of(&scores);
        assert_eq!(split_held(&mut row), 1);
        // … but once more networks have settled the row higher, it counts.
        scores.extend([1380; 7]);
        let mut row = row_of(&scores);
        assert_eq!(split_held(&mut row), 0);
    }
}
