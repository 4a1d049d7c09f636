//! `run --repeat N` (docs/compare.md): the whole test set N times over, each
//! run from its own `fstrim` and new files as the first, so that every run
//! meets the same file states. Each figure becomes the median of its runs,
//! kept with every sample, min and max; the median is what is scored.
//!
//! `--max-time` bounds all the runs together. A figure cut short by it is
//! no sample (it covers less than the test); a run that stops on an error
//! or a signal ends the repeats, and the figures it finished still count.

use std::time::Instant;

use storage_scoring::schema::{MEASUREMENT_KEYS, Samples, Skipped};

use super::{Observer, Outcome, Plan, RunError, run};

/// Runs `plan` `runs` times (at least once) and merges the outcomes.
pub fn run_repeated(plan: &Plan, runs: usize, observer: &dyn Observer) -> (Outcome, Option<RunError>) {
    let runs = runs.max(1);
    let deadline = plan.max_time.map(|t| Instant::now() + t);
    let mut outcomes = Vec::with_capacity(runs);
    let mut error = None;
    for n in 1..=runs {
        let mut this = plan.clone();
        // The first run has the whole budget, and its notes quote the
        // --max-time the user gave; later runs have what is left of it.
        if let (Some(deadline), true) = (deadline, n > 1) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            this.max_time = Some(left);
        }
        if runs > 1 {
            observer.note(&format!("run {n} of {runs}"));
        }
        let (outcome, stopped) = run(&this, observer);
        let cut_short = outcome.details.values().any(|d| d.partial);
        outcomes.push(outcome);
        if stopped.is_some() || cut_short {
            error = stopped;
            break;
        }
    }
    if outcomes.len() == 1 {
        return (outcomes.pop().unwrap_or_default(), error);
    }
    (merge(outcomes, runs), error)
}

/// One outcome from several runs: per figure the median of the runs' whole
/// figures, with the detail of the run nearest it.
fn merge(outcomes: Vec<Outcome>, planned: usize) -> Outcome {
    let mut merged = Outcome::default();
    for key in MEASUREMENT_KEYS {
        let figures: Vec<(usize, f64)> = outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((i, o.measurements.get(key)?)))
            .filter(|(i, _)| !outcomes[*i].details.get(key).is_some_and(|d| d.partial))
            .collect();
        let Some(samples) = Samples::of(figures.iter().map(|(_, v)| *v).collect()) else {
            // No whole figure: keep the first run's (partial) one, if any.
            if let Some((o, value)) = outcomes.iter().find_map(|o| Some((o, o.measurements.get(key)?))) {
                merged.measurements.set(key, value);
                if let Some(detail) = o.details.get(key) {
                    merged.details.insert(key.to_owned(), detail.clone());
                }
            }
            continue;
        };
        let nearest = nearest(&figures, samples.median);
        if let Some(detail) = outcomes[nearest].details.get(key) {
            merged.details.insert(key.to_owned(), detail.clone());
        }
        merged.measurements.set(key, samples.median);
        merged.samples.insert(key.to_owned(), samples);
    }
    for outcome in &outcomes {
        for skipped in &outcome.skipped {
            let measured = merged.measurements.get(&skipped.key).is_some();
            if !measured && !merged.skipped.iter().any(|s| s.key == skipped.key) {
                merged.skipped.push(Skipped { key: skipped.key.clone(), reason: skipped.reason.clone() });
            }
        }
        for note in &outcome.notes {
            if !merged.notes.contains(note) {
                merged.notes.push(note.clone());
            }
        }
    }
    let ran = outcomes.len();
    let of = if ran < planned { format!("{ran} of {planned} runs") } else { format!("{ran} runs") };
    merged.notes.push(format!(
        "{of}: each figure is the median of its runs (every sample is kept in the report); its latency and other details are those of the run nearest the median"
    ));
    merged
}

/// The run whose figure is nearest `median` (the first of equals).
fn nearest(figures: &[(usize, f64)], median: f64) -> usize {
    figures.iter().min_by(|a, b| (a.1 - median).abs().total_cmp(&(b.1 - median).abs())).map_or(0, |(i, _)| *i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::schema::TestDetail;

    fn outcome(values: &[(&str, f64)], partial: bool, note: &str) -> Outcome {
        let mut o = Outcome::default();
        for (key, value) in values {
            o.measurements.set(key, *value);
            o.details.insert((*key).to_owned(), TestDetail { ios: *value as u64, partial, ..TestDetail::default() });
        }
        o.notes.push(note.to_owned());
        o
    }

    #[test]
    fn figures_become_medians_with_the_nearest_runs_detail() {
        let runs = vec![
            outcome(&[("seq_write_mb_s", 20.0), ("rand_read_4k_qd64_iops", 2000.0)], false, "trimmed"),
            outcome(&[("seq_write_mb_s", 19.0), ("rand_read_4k_qd64_iops", 1990.0)], false, "trimmed"),
            outcome(&[("seq_write_mb_s", 21.0), ("rand_read_4k_qd64_iops", 2004.0)], false, "trimmed again"),
        ];
        let m = merge(runs, 3);
        assert_eq!(m.measurements.get("seq_write_mb_s"), Some(20.0));
        let s = &m.samples["seq_write_mb_s"];
        assert_eq!((s.values.clone(), s.min, s.max), (vec![20.0, 19.0, 21.0], 19.0, 21.0));
        assert_eq!(m.details["rand_read_4k_qd64_iops"].ios, 2000, "run 1 is nearest 2000");
        assert_eq!(m.notes[..2], ["trimmed".to_owned(), "trimmed again".to_owned()], "each note once");
        assert!(m.notes[2].starts_with("3 runs: each figure is the median"), "{:?}", m.notes);
    }

    #[test]
    fn an_even_count_scores_the_mean_of_the_middle_two() {
        let runs =
            vec![outcome(&[("seq_write_mb_s", 20.0)], false, ""), outcome(&[("seq_write_mb_s", 21.0)], false, "")];
        let m = merge(runs, 5);
        assert_eq!(m.measurements.get("seq_write_mb_s"), Some(20.5));
        assert!(m.notes.iter().any(|n| n.starts_with("2 of 5 runs")), "{:?}", m.notes);
    }

    #[test]
    fn a_figure_cut_short_is_no_sample() {
        let runs = vec![
            outcome(&[("seq_write_mb_s", 20.0)], false, ""),
            outcome(&[("seq_write_mb_s", 22.0)], false, ""),
            outcome(&[("seq_write_mb_s", 5.0)], true, ""),
        ];
        let m = merge(runs, 3);
        assert_eq!(m.samples["seq_write_mb_s"].values, vec![20.0, 22.0]);
        assert_eq!(m.measurements.get("seq_write_mb_s"), Some(21.0));
        assert!(!m.details["seq_write_mb_s"].partial);
    }

    #[test]
    fn a_figure_only_some_runs_skipped_is_not_skipped() {
        let mut first = outcome(&[], false, "");
        first.skipped.push(Skipped { key: "seq_read_mib_s".into(), reason: "not run".into() });
        first.skipped.push(Skipped { key: "cached_read_mib_s".into(), reason: "no device".into() });
        let mut second = outcome(&[("seq_read_mib_s", 50.0)], false, "");
        second.skipped.push(Skipped { key: "cached_read_mib_s".into(), reason: "no device".into() });
        let m = merge(vec![first, second], 2);
        assert_eq!(m.skipped.len(), 1);
        assert_eq!(m.skipped[0].key, "cached_read_mib_s");
        assert_eq!(m.samples["seq_read_mib_s"].values, vec![50.0]);
    }
}
