//! Where the levels are: the speeds with odd chunks quietened, then binary
//! segmentation with the noise penalty and the median guard (see the
//! parent module's documentation).

use super::{MAX_SEGMENTS, MAX_SPIKE, MIN_DROP, MIN_LEVEL_CHANGE};

/// `speeds` with each run of up to [`MAX_SPIKE`] odd chunks given its
/// neighbours' speed. A run is odd when the chunks just before and just
/// after it agree (within [`MIN_LEVEL_CHANGE`], or 3σ of noise) and every
/// chunk of it is off their mean by more than [`MIN_DROP`] (and 4σ), on the
/// same side; or, when they do not agree, when it is that far below both (a
/// pause; it then takes the slower one's speed). At either end of the pass,
/// where a run has neighbours on one side only, the two chunks on that side
/// stand in for both.
pub(super) fn quiet_spikes(speeds: &[f64], sigma: f64) -> Vec<f64> {
    let mut out = speeds.to_vec();
    let n = out.len();
    // `sigma` is relative (the noise of log speeds): margins scale with the level.
    let margin = |level: f64| level * MIN_DROP.max(4.0 * sigma);
    // Single chunks first, over the whole pass, then pairs: a lone burst
    // just after the step is read as that, before the two floor chunks
    // ahead of it could be read as a pause between it and the cache.
    for width in 1..=MAX_SPIKE.min(n) {
        let mut i = 0;
        while i + width <= n {
            // The run's neighbours: one each side, or the two beyond it at
            // an end of the pass.
            let neighbours = match (i.checked_sub(1), i + width < n) {
                (Some(before), true) => Some((out[before], out[i + width])),
                (None, true) => out.get(i + width + 1).map(|&b| (out[i + width], b)),
                (Some(before), false) => before.checked_sub(1).map(|a| (out[a], out[before])),
                (None, false) => None,
            };
            let Some((a, b)) = neighbours else { break };
            let run = &out[i..i + width];
            let level = (a + b) / 2.0;
            let low = a.min(b);
            let agree = (a - b).abs() <= a.max(b) * MIN_LEVEL_CHANGE.max(3.0 * sigma);
            let quiet = if agree
                && (run.iter().all(|&x| x < level - margin(level)) || run.iter().all(|&x| x > level + margin(level)))
            {
                // Inside a level, off it to one side.
                Some(level)
            } else if run.iter().all(|&x| x < low - margin(low)) {
                // Between two levels (at the step), only a run slower than
                // the slower is odd: a pause. A chunk between them is the
                // one the step falls in, and a fast one may be the faster
                // level's last.
                Some(low)
            } else {
                None
            };
            match quiet {
                Some(level) => {
                    out[i..i + width].fill(level);
                    i += width;
                }
                None => i += 1,
            }
        }
    }
    out
}

/// Each value replaced by the median of it and its two neighbours: a lone
/// chunk above or below both (one [`quiet_spikes`] leaves, between a pause
/// and the floor, say) takes the nearer neighbour's value; runs of two or
/// more, and the chunk a step falls in, keep theirs. Least squares would
/// otherwise give such a chunk, which is no level, the weight of one.
pub(super) fn median_of_3(values: &[f64]) -> Vec<f64> {
    (0..values.len())
        .map(|i| match (i.checked_sub(1), values.get(i + 1)) {
            (Some(before), Some(&after)) => {
                let (a, b, c) = (values[before], values[i], after);
                a.max(b).min(a.min(b).max(c))
            }
            _ => values[i],
        })
        .collect()
}

/// Chunk indices where a new level starts, in order.
/// `speeds` are the quietened speeds the levels are sought on, `raw` the
/// measured ones, whose noise sets the penalty.
///
/// The squared error is of log speeds, and the noise is measured in each
/// run being split: a card's noise is a share of its rate (±10% at 40 MB/s
/// is ±4 MB/s, at 10 MB/s ±1 MB/s), and a cache can be far noisier than the
/// floor (a throttle's time slices, a controller juggling its SLC), so one
/// figure for the whole pass would split the noisy part into pieces.
pub(super) fn boundaries(speeds: &[f64], raw: &[f64]) -> Vec<usize> {
    let n = speeds.len();
    let logs: Vec<f64> = speeds.iter().map(|s| s.max(1e-9).ln()).collect();
    let prefix = Prefix::new(&logs);
    let penalty = |a: usize, b: usize| {
        let sigma = noise(&raw[a..b]);
        4.0 * sigma * sigma * (n as f64).ln()
    };
    // Three chunks at least, so that a side's median is one of its chunks
    // (shorter runs are noise, see `quiet_spikes`).
    let min_len = 3;
    // Do the medians of two runs of chunks differ by a level's worth?
    let differ = |one: Vec<f64>, other: Vec<f64>| {
        let (x, y) = (median(&one).unwrap_or(0.0), median(&other).unwrap_or(0.0));
        (x - y).abs() / x.max(y).max(f64::MIN_POSITIVE) >= MIN_LEVEL_CHANGE
    };
    let mut found = Vec::new();
    let mut pending = vec![(0usize, n)];
    while let Some((a, b)) = pending.pop() {
        if found.len() + 1 >= MAX_SEGMENTS {
            break;
        }
        let whole = prefix.sse(a, b);
        let penalty = penalty(a, b);
        let single = best_split(&prefix, a, b, min_len).filter(|&k| {
            whole - (prefix.sse(a, k) + prefix.sse(k, b)) > penalty
                && differ(speeds[a..k].to_vec(), speeds[k..b].to_vec())
        });
        if let Some(k) = single {
            found.push(k);
            pending.push((a, k));
            pending.push((k, b));
            continue;
        }
        // A short level inside the run that ends where it began (a pause of
        // a few chunks): the best single split has the same median on both
        // sides, so look for the level whole, as two boundaries at once.
        if found.len() + 2 >= MAX_SEGMENTS {
            continue;
        }
        let inner = best_inner(&prefix, a, b, min_len).filter(|&(j, k)| {
            let outside: Vec<f64> = speeds[a..j].iter().chain(&speeds[k..b]).copied().collect();
            whole - (prefix.sse(a, j) + prefix.sse(j, k) + prefix.sse(k, b)) > 2.0 * penalty
                && differ(speeds[j..k].to_vec(), outside)
        });
        if let Some((j, k)) = inner {
            found.extend([j, k]);
            pending.extend([(a, j), (j, k), (k, b)]);
        }
    }
    found.sort_unstable();
    found
}

/// The level `[j, k)` inside `[a, b)` that leaves the least squared error
/// (three runs, each at least `min_len` long).
fn best_inner(prefix: &Prefix, a: usize, b: usize, min_len: usize) -> Option<(usize, usize)> {
    if b < a + 3 * min_len {
        return None;
    }
    let mut best: Option<((usize, usize), f64)> = None;
    for j in a + min_len..=b - 2 * min_len {
        let left = prefix.sse(a, j);
        for k in j + min_len..=b - min_len {
            let cost = left + prefix.sse(j, k) + prefix.sse(k, b);
            if best.is_none_or(|(_, c)| cost < c) {
                best = Some(((j, k), cost));
            }
        }
    }
    best.map(|(at, _)| at)
}

/// The split of `[a, b)` with the least squared error, each side at least `min_len` long.
fn best_split(prefix: &Prefix, a: usize, b: usize, min_len: usize) -> Option<usize> {
    if b < a + 2 * min_len {
        return None;
    }
    (a + min_len..=b - min_len)
        .map(|k| (k, prefix.sse(a, k) + prefix.sse(k, b)))
        .min_by(|x, y| x.1.total_cmp(&y.1))
        .map(|(k, _)| k)
}

/// The chunk-to-chunk noise, as a share of the rate: the median absolute
/// difference of neighbouring log speeds, scaled to a standard deviation
/// (× 1.4826 / √2), at least 1% so that a perfectly flat curve is not split
/// on rounding.
pub(super) fn noise(speeds: &[f64]) -> f64 {
    let diffs: Vec<f64> = speeds.windows(2).map(|w| (w[1].max(1e-9).ln() - w[0].max(1e-9).ln()).abs()).collect();
    let mad = median(&diffs).unwrap_or(0.0) * 1.4826 / std::f64::consts::SQRT_2;
    mad.max(0.01)
}

/// The one median of the project (`storage_scoring::stats`).
pub(super) fn median(values: &[f64]) -> Option<f64> {
    storage_scoring::stats::median(values)
}

/// Prefix sums for O(1) segment means and squared errors.
struct Prefix {
    sum: Vec<f64>,
    squares: Vec<f64>,
}

impl Prefix {
    fn new(values: &[f64]) -> Self {
        let mut sum = vec![0.0; values.len() + 1];
        let mut squares = vec![0.0; values.len() + 1];
        for (i, v) in values.iter().enumerate() {
            sum[i + 1] = sum[i] + v;
            squares[i + 1] = squares[i] + v * v;
        }
        Prefix { sum, squares }
    }

    fn sse(&self, a: usize, b: usize) -> f64 {
        if b <= a {
            return 0.0;
        }
        let n = (b - a) as f64;
        let s = self.sum[b] - self.sum[a];
        ((self.squares[b] - self.squares[a]) - s * s / n).max(0.0)
    }
}
