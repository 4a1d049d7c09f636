//! What a sequential write's speed curve shows: the levels it splits into,
//! the cache-exhaustion step (where the rate drops and stays down), the
//! steady rate, and the slowest one-second stretch. Pure: chunks in,
//! figures out.
//!
//! The levels come from binary segmentation (split where two flat levels fit
//! the speeds best, by least squares, then split each side again) with two
//! guards against splitting noise: a split must lower the squared error by
//! more than a penalty that grows with the noise and the number of chunks
//! (a BIC-like `4 σ² ln n`, σ from the median absolute difference of
//! neighbouring chunks), and the two sides must differ by at least
//! [`MIN_LEVEL_CHANGE`]. The step is then the first boundary after which
//! every level stays at least [`MIN_DROP`] below the level before it: a
//! short dip that recovers (a garbage-collection pause) is not the cache
//! running out.

/// One chunk of a sequential pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Chunk {
    pub offset: u64,
    pub bytes: u64,
    /// How long its write took.
    pub secs: f64,
}

impl Chunk {
    /// MB/s (10^6 bytes per second).
    pub fn mb_s(&self) -> f64 {
        self.bytes as f64 / self.secs.max(1e-9) / 1e6
    }
}

/// A run of chunks at one rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Segment {
    /// Chunk indices `[from, to)`.
    pub from: usize,
    pub to: usize,
    /// Bytes over time across the segment's chunks.
    pub mb_s: f64,
}

/// Where the cache ran out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// Bytes written when the rate dropped: the cache's size.
    pub at_bytes: u64,
    pub before_mb_s: f64,
    pub after_mb_s: f64,
}

/// Everything read off one curve.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Analysis {
    pub segments: Vec<Segment>,
    pub step: Option<Step>,
    /// The last level's rate.
    pub steady_mb_s: Option<f64>,
    /// The slowest stretch of whole chunks lasting at least one second.
    pub min_1s_mb_s: Option<f64>,
}

/// Neighbouring levels closer than this share (of the faster) are one level.
pub const MIN_LEVEL_CHANGE: f64 = 0.08;
/// The step is a drop to at most this share below the level before it.
pub const MIN_DROP: f64 = 0.15;
/// At most this many levels: the seed study saw three.
const MAX_SEGMENTS: usize = 8;
/// Fewer chunks than this say nothing about levels.
const MIN_CHUNKS: usize = 6;

/// Reads the curve of `chunks`, in write order.
pub fn analyse(chunks: &[Chunk]) -> Analysis {
    let mut analysis = Analysis { min_1s_mb_s: slowest_window(chunks, 1.0), ..Analysis::default() };
    if chunks.is_empty() {
        return analysis;
    }
    let speeds: Vec<f64> = chunks.iter().map(Chunk::mb_s).collect();
    let bounds = if chunks.len() < MIN_CHUNKS { Vec::new() } else { boundaries(&speeds) };
    let mut from = 0;
    for &to in bounds.iter().chain(std::iter::once(&chunks.len())) {
        analysis.segments.push(Segment { from, to, mb_s: rate(&chunks[from..to]) });
        from = to;
    }
    analysis.step = find_step(chunks, &analysis.segments);
    analysis.steady_mb_s = analysis.segments.last().map(|s| s.mb_s);
    // With two levels, the steady one is the step's after-level, which
    // leaves out the chunk that straddles the step.
    if let (Some(step), 2) = (analysis.step, analysis.segments.len()) {
        analysis.steady_mb_s = Some(step.after_mb_s);
    }
    analysis
}

/// Bytes over time of `chunks`.
fn rate(chunks: &[Chunk]) -> f64 {
    let bytes: u64 = chunks.iter().map(|c| c.bytes).sum();
    let secs: f64 = chunks.iter().map(|c| c.secs).sum();
    if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 }
}

/// Chunk indices where a new level starts, in order.
fn boundaries(speeds: &[f64]) -> Vec<usize> {
    let n = speeds.len();
    let prefix = Prefix::new(speeds);
    let sigma = noise(speeds);
    let penalty = 4.0 * sigma * sigma * (n as f64).ln();
    let min_len = (n / 50).max(2);
    let mut found = Vec::new();
    let mut pending = vec![(0usize, n)];
    while let Some((a, b)) = pending.pop() {
        if found.len() + 1 >= MAX_SEGMENTS {
            break;
        }
        let Some(k) = best_split(&prefix, a, b, min_len) else { continue };
        let whole = prefix.sse(a, b);
        let split = prefix.sse(a, k) + prefix.sse(k, b);
        let (left, right) = (prefix.mean(a, k), prefix.mean(k, b));
        let change = (left - right).abs() / left.max(right).max(f64::MIN_POSITIVE);
        if whole - split > penalty && change >= MIN_LEVEL_CHANGE {
            found.push(k);
            pending.push((a, k));
            pending.push((k, b));
        }
    }
    found.sort_unstable();
    found
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

/// The chunk-to-chunk noise: the median absolute difference of neighbours,
/// scaled to a standard deviation (× 1.4826 / √2), with a floor of 1% of
/// the median speed so that a perfectly flat curve is not split on rounding.
fn noise(speeds: &[f64]) -> f64 {
    let mut diffs: Vec<f64> = speeds.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let mad = median(&mut diffs).unwrap_or(0.0) * 1.4826 / std::f64::consts::SQRT_2;
    let mut sorted = speeds.to_vec();
    let floor = median(&mut sorted).unwrap_or(0.0) * 0.01;
    mad.max(floor)
}

pub(crate) fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[mid] } else { (values[mid - 1] + values[mid]) / 2.0 })
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

    fn mean(&self, a: usize, b: usize) -> f64 {
        (self.sum[b] - self.sum[a]) / (b - a).max(1) as f64
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

/// The first boundary after which the rate stays down.
fn find_step(chunks: &[Chunk], segments: &[Segment]) -> Option<Step> {
    for i in 1..segments.len() {
        let before = segments[i - 1];
        let ceiling = before.mb_s * (1.0 - MIN_DROP);
        if segments[i..].iter().all(|s| s.mb_s <= ceiling) {
            return Some(refine(chunks, before, segments[i]));
        }
    }
    None
}

/// The step between `before` and `after`, placed inside the chunk that
/// straddles it. A chunk partly written at the fast rate F and partly at
/// the slow rate S took `a/F + (c − a)/S` for `a` fast bytes of `c`, so its
/// time gives `a`; that chunk is left out of both levels.
fn refine(chunks: &[Chunk], before: Segment, after: Segment) -> Step {
    let k = after.from;
    let straddles = |c: &Chunk, fast: f64, slow: f64| c.mb_s() < fast * 0.93 && c.mb_s() > slow * 1.07;
    let (fast, slow) = (before.mb_s, after.mb_s);
    // The straddling chunk is the last of `before` or the first of `after`.
    let candidate = if straddles(&chunks[k - 1], fast, slow) && k - 1 > before.from {
        Some(k - 1)
    } else if straddles(&chunks[k], fast, slow) && k + 1 < after.to {
        Some(k)
    } else {
        None
    };
    let Some(t) = candidate else {
        return Step { at_bytes: chunks[k].offset, before_mb_s: fast, after_mb_s: slow };
    };
    let fast_chunks = &chunks[before.from..t.min(k)];
    let slow_chunks = &chunks[(t + 1).max(k)..after.to];
    let (fast, slow) = (rate(fast_chunks), rate(slow_chunks));
    let c = &chunks[t];
    let (f, s) = (fast * 1e6, slow * 1e6);
    let fast_bytes = ((c.secs - c.bytes as f64 / s) / (1.0 / f - 1.0 / s)).clamp(0.0, c.bytes as f64);
    Step { at_bytes: c.offset + fast_bytes.round() as u64, before_mb_s: fast, after_mb_s: slow }
}

/// The slowest stretch of consecutive chunks lasting at least `window`
/// seconds (the shortest such stretch ending at each chunk), as bytes over
/// time. `None` when the whole pass was shorter.
pub fn slowest_window(chunks: &[Chunk], window: f64) -> Option<f64> {
    let mut slowest: Option<f64> = None;
    let (mut start, mut secs, mut bytes) = (0usize, 0.0f64, 0u64);
    for (end, c) in chunks.iter().enumerate() {
        secs += c.secs;
        bytes += c.bytes;
        // Drop chunks from the front while the rest still spans the window.
        while start < end && secs - chunks[start].secs >= window {
            secs -= chunks[start].secs;
            bytes -= chunks[start].bytes;
            start += 1;
        }
        if secs >= window {
            let mb_s = bytes as f64 / secs / 1e6;
            slowest = Some(slowest.map_or(mb_s, |s: f64| s.min(mb_s)));
        }
    }
    slowest
}

/// The slowest stretch of `span` bytes, starting at multiples of `span`
/// (an SD allocation unit's size, say). `None` when no whole span was written.
pub fn slowest_span(chunks: &[Chunk], span: u64) -> Option<f64> {
    let span = span.max(1);
    let mut slowest: Option<f64> = None;
    let mut i = 0;
    while i < chunks.len() {
        let unit = chunks[i].offset / span;
        let j = chunks[i..].iter().position(|c| c.offset / span != unit).map_or(chunks.len(), |p| i + p);
        let group = &chunks[i..j];
        let bytes: u64 = group.iter().map(|c| c.bytes).sum();
        if bytes >= span {
            let mb_s = rate(group);
            slowest = Some(slowest.map_or(mb_s, |s: f64| s.min(mb_s)));
        }
        i = j;
    }
    slowest
}

#[cfg(test)]
mod tests {
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
        let step = analyse(&chunks).step.expect("a step");
        assert!((step.at_bytes as f64 - (62 * MIB) as f64).abs() < 0.05 * MIB as f64, "{step:?}");
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
        assert!((slowest_window(&a, 1.0).expect("window") - 40.0).abs() < 1e-6);
        let mut rates = vec![40.0; 20];
        rates[10] = 4.0;
        let b = curve(&rates);
        assert!((slowest_window(&b, 1.0).expect("window") - 4.0).abs() < 1e-6, "one chunk spans the second");
        assert_eq!(slowest_window(&curve(&[40.0; 5]), 1.0), None, "shorter than a second");
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
}
