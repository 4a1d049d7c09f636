//! What a sequential write's speed curve shows: the levels it splits into,
//! the cache-exhaustion step (where the rate drops and stays down), the
//! steady rate, and the slowest one-second stretch. Pure: chunks in,
//! figures out.
//!
//! Flash is noisy: a garbage-collection pause or a journal commit makes one
//! chunk slow, a write absorbed by a DRAM buffer makes one fast. Such a
//! chunk is noise, not a level, so the levels are sought on the speeds with
//! it quietened: a run of one or two chunks whose neighbours on both sides
//! agree with each other, and not with it, takes their speed
//! ([`quiet_spikes`]), and so does a run slower than both neighbours where
//! they differ (a pause at the step); a chunk between two levels (the one
//! the step falls in) is left as it is. Odd chunks only decide where the
//! levels are. A level's rate is its *typical* rate ([`typical_rate`]):
//! bytes over time of its chunks without those a robust z-score marks as
//! odd, the rate the card writes at outside its pauses and bursts, which a
//! few of them do not pull down or lift. What the pauses cost is still
//! shown, by the slowest second and the slowest AU-sized stretch.
//!
//! The levels come from binary segmentation (split where two flat levels fit
//! the speeds best, by least squares, then split each side again) with two
//! guards against splitting noise: a split must lower the squared error by
//! more than a penalty that grows with the noise and the number of chunks
//! (a BIC-like `4 σ² ln n`, on log speeds, for a card's noise is a share of
//! its rate; σ from the median absolute difference of neighbouring raw
//! chunks in the run being split, for a cache can be far noisier than the
//! floor), and the *medians* of the two sides must differ
//! by at least [`MIN_LEVEL_CHANGE`]. Least squares alone would split off a
//! lone odd chunk (on a quiet card σ is tiny) with a few ordinary chunks
//! around it as a "level"; their median is the ordinary rate, so the guard
//! refuses it. A short level inside a run (a pause of three chunks or more)
//! is sought whole when no single split passes, as two boundaries at once.
//!
//! The step is the first boundary after which every level stays at least
//! [`MIN_DROP`] below the long level before it: a dip that recovers is not
//! the cache running out. Levels are compared by their median chunk's
//! speed, which a pause inside one does not move. Its rates are those of the *long* levels on
//! either side ([`long_level`]), each running on across short interruptions
//! to the levels that continue it ([`same_level`]): a transition of a few
//! chunks between the cache and the floor (the card folding its cache, say)
//! places the step where the drop begins, but is not the rate the card
//! stays at.

use std::ops::Range;

mod levels;

use levels::{boundaries, median, median_of_3, noise, quiet_spikes};

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
    /// The level's typical rate: bytes over time of its chunks without
    /// its pauses and bursts (see [`typical_rate`]).
    pub mb_s: f64,
    /// The median chunk's speed: the level's speed without its pauses.
    /// Levels are compared by it, so that a pause inside one does not make
    /// it look like another.
    pub median_mb_s: f64,
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
    /// The rate of the last long level (see [`long_level`]): where the
    /// pass settled, not a few chunks at its end.
    pub steady_mb_s: Option<f64>,
    /// The slowest second ([`slowest_window`]).
    pub min_1s_mb_s: Option<f64>,
}

/// Neighbouring levels closer than this share (of the faster) are one level.
pub const MIN_LEVEL_CHANGE: f64 = 0.08;
/// The step is a drop to at most this share below the level before it.
pub const MIN_DROP: f64 = 0.15;
/// At most this many levels: the seed study saw three.
const MAX_SEGMENTS: usize = 8;
/// The longest run of odd chunks that is noise rather than a level.
const MAX_SPIKE: usize = 2;
/// A level is long when it holds at least this many chunks and at least
/// [`LONG_SHARE`] of the chunks on its side of the step.
const MIN_LONG_CHUNKS: usize = 4;
const LONG_SHARE: f64 = 0.125;
/// A chunk further than this many robust standard deviations (the median
/// absolute deviation × 1.4826, of log speeds) from its level's median
/// chunk is odd, and left out of the level's rate: the usual cut of a
/// robust z-score (Iglewicz and Hoaglin's 3.5).
const ODD_Z: f64 = 3.5;
/// Fewer chunks than this say nothing about levels.
const MIN_CHUNKS: usize = 6;

/// Reads the curve of `chunks`, in write order.
pub fn analyse(chunks: &[Chunk]) -> Analysis {
    let min_1s_mb_s = slowest_window(chunks, 1.0, 0.0, Windows::Sliding).map(|s| s.mb_s);
    let mut analysis = Analysis { min_1s_mb_s, ..Analysis::default() };
    if chunks.is_empty() {
        return analysis;
    }
    let speeds: Vec<f64> = chunks.iter().map(Chunk::mb_s).collect();
    let bounds = if chunks.len() < MIN_CHUNKS {
        Vec::new()
    } else {
        let sigma = noise(&speeds);
        boundaries(&median_of_3(&quiet_spikes(&speeds, sigma)), &speeds)
    };
    let mut from = 0;
    for &to in bounds.iter().chain(std::iter::once(&chunks.len())) {
        let median_mb_s = median(&speeds[from..to]).unwrap_or(0.0);
        analysis.segments.push(Segment { from, to, mb_s: typical_rate(chunks, from..to, None), median_mb_s });
        from = to;
    }
    let segments = &analysis.segments;
    let found = find_step(chunks, segments);
    let steady = same_level(segments, 0..segments.len(), long_level(segments, Side::Before));
    analysis.steady_mb_s = (!segments.is_empty()).then(|| typical_rate(chunks, steady.clone(), None));
    if let Some((step, after)) = found {
        // When the steady level is the step's after-level, its rate is the
        // one without the chunk that straddles the step.
        if after.end == steady.end {
            analysis.steady_mb_s = Some(step.after_mb_s);
        }
        analysis.step = Some(step);
    }
    analysis
}

/// Bytes over time of `chunks`.
fn rate(chunks: &[Chunk]) -> f64 {
    let bytes: u64 = chunks.iter().map(|c| c.bytes).sum();
    let secs: f64 = chunks.iter().map(|c| c.secs).sum();
    if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 }
}

/// The typical rate of chunks `range` without chunk `except` (of all of
/// them when that would leave none): bytes over time of those whose speed
/// lies within [`ODD_Z`] robust standard deviations of the run's median
/// chunk, or within [`MIN_LEVEL_CHANGE`] of it on a quiet run. What is left
/// out is a pause (garbage collection, a journal commit) or a burst (a DRAM
/// buffer): the rate the card writes at outside them, which a few of them
/// do not move. Bytes over time, not the median chunk's speed, for that is
/// what a throttle or a card's rate is (a chunk's speed is a rate per chunk,
/// and jitter makes the two differ).
fn typical_rate(chunks: &[Chunk], range: Range<usize>, except: Option<usize>) -> f64 {
    let except = except.filter(|t| range.contains(t) && range.len() > 1);
    let run: Vec<&Chunk> = range.filter(|&i| Some(i) != except).map(|i| &chunks[i]).collect();
    let logs: Vec<f64> = run.iter().map(|c| c.mb_s().max(1e-9).ln()).collect();
    let Some(centre) = median(&logs) else { return 0.0 };
    let deviations: Vec<f64> = logs.iter().map(|l| (l - centre).abs()).collect();
    let sigma = median(&deviations).unwrap_or(0.0) * 1.4826;
    let limit = (ODD_Z * sigma).max(-(1.0 - MIN_LEVEL_CHANGE).ln());
    let (bytes, secs) = run
        .iter()
        .zip(&logs)
        .filter(|(_, l)| (*l - centre).abs() <= limit)
        .fold((0u64, 0.0f64), |(b, s), (c, _)| (b + c.bytes, s + c.secs));
    if secs > 0.0 { bytes as f64 / secs / 1e6 } else { 0.0 }
}

/// The first boundary after which the rate stays down, and the chunks of
/// the level whose rate is the step's after-rate.
fn find_step(chunks: &[Chunk], segments: &[Segment]) -> Option<(Step, Range<usize>)> {
    for i in 1..segments.len() {
        // The drop is measured from the long level before the boundary,
        // not from a short one (a burst) that may sit just before it.
        let anchor = long_level(&segments[..i], Side::Before);
        let ceiling = segments[anchor].median_mb_s * (1.0 - MIN_DROP);
        if segments[i..].iter().all(|s| s.median_mb_s <= ceiling) {
            let before = same_level(segments, 0..i, anchor);
            let after = same_level(segments, i..segments.len(), i + long_level(&segments[i..], Side::After));
            return Some((refine(chunks, segments, i, before, after.clone()), after));
        }
    }
    None
}

/// Which side of the step a run of levels lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Before,
    After,
}

/// The long level nearest the step among `levels` (all on one `side`):
/// the last long one before it, the first long one after it. A level is
/// long with [`MIN_LONG_CHUNKS`] chunks and [`LONG_SHARE`] of its side's
/// chunks; when none is, the longest (the earliest of equals).
fn long_level(levels: &[Segment], side: Side) -> usize {
    let need = long_enough(levels);
    let is_long = |s: &Segment| s.to - s.from >= need;
    let nearest = match side {
        Side::Before => levels.iter().rposition(is_long),
        Side::After => levels.iter().position(is_long),
    };
    nearest.unwrap_or_else(|| {
        let longest = levels.iter().map(|s| s.to - s.from).max().unwrap_or(0);
        levels.iter().position(|s| s.to - s.from == longest).unwrap_or(0)
    })
}

/// The chunks a long level holds among `levels`.
fn long_enough(levels: &[Segment]) -> usize {
    let total: usize = levels.iter().map(|s| s.to - s.from).sum();
    MIN_LONG_CHUNKS.max((total as f64 * LONG_SHARE).ceil() as usize)
}

/// The chunks of level `anchor` and of the levels of `within` that
/// continue it across short interruptions (a pause of a few chunks splits
/// one level in two), the interruptions included: outward from it, a level
/// within [`MIN_LEVEL_CHANGE`] of its median speed joins, a short one that differs
/// is passed over, and a long one that differs ends the search.
fn same_level(segments: &[Segment], within: Range<usize>, anchor: usize) -> Range<usize> {
    let need = long_enough(&segments[within.clone()]);
    let speed = segments[anchor].median_mb_s;
    let similar = |s: &Segment| (s.median_mb_s - speed).abs() <= MIN_LEVEL_CHANGE * s.median_mb_s.max(speed);
    // The farthest similar level before a long one that differs.
    let reach = |levels: &mut dyn Iterator<Item = &Segment>| {
        levels.take_while(|s| similar(s) || s.to - s.from < need).filter(|s| similar(s)).last().copied()
    };
    let first = reach(&mut segments[within.start..anchor].iter().rev()).unwrap_or(segments[anchor]);
    let last = reach(&mut segments[anchor + 1..within.end].iter()).unwrap_or(segments[anchor]);
    first.from..last.to
}

/// The step at boundary `i` of `segments`, placed inside the chunk that
/// straddles it, with the rates of the chunks `before` and `after` (each a
/// long level and what continues it, see [`same_level`]). A chunk partly
/// written at the fast rate F and partly at the slow rate S took
/// `a/F + (c − a)/S` for `a` fast bytes of `c`, so its time gives `a`; that
/// chunk is left out of every rate. F and S are the rates of the two levels
/// that meet at the boundary.
fn refine(chunks: &[Chunk], segments: &[Segment], i: usize, before: Range<usize>, after: Range<usize>) -> Step {
    let (prev, next) = (segments[i - 1], segments[i]);
    let k = next.from;
    let straddles = |c: &Chunk, fast: f64, slow: f64| c.mb_s() < fast * 0.93 && c.mb_s() > slow * 1.07;
    // The straddling chunk is the last of `prev` or the first of `next`.
    let t = if straddles(&chunks[k - 1], prev.mb_s, next.mb_s) && k - 1 > prev.from {
        Some(k - 1)
    } else if straddles(&chunks[k], prev.mb_s, next.mb_s) && k + 1 < next.to {
        Some(k)
    } else {
        None
    };
    let before_mb_s = typical_rate(chunks, before, t);
    let after_mb_s = typical_rate(chunks, after, t);
    let Some(t) = t else {
        return Step { at_bytes: chunks[k].offset, before_mb_s, after_mb_s };
    };
    let f = typical_rate(chunks, prev.from..prev.to, Some(t)) * 1e6;
    let s = typical_rate(chunks, next.from..next.to, Some(t)) * 1e6;
    let c = &chunks[t];
    let fast_bytes = ((c.secs - c.bytes as f64 / s) / (1.0 / f - 1.0 / s)).clamp(0.0, c.bytes as f64);
    Step { at_bytes: c.offset + fast_bytes.round() as u64, before_mb_s, after_mb_s }
}

/// The slowest window of a pass: where it began and its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slowest {
    /// Its start, in seconds of the pass (the chunks' times added up).
    pub from: f64,
    pub mb_s: f64,
}

/// Which windows of a pass [`slowest_window`] looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Windows {
    /// Every window: the slowest anywhere, pauses and all.
    Sliding,
    /// Windows back to back from the first allowed start, as fio samples
    /// its bandwidth once per `--bwavgtime`: fewer windows, so a single
    /// hiccup of the host weighs less on the slowest.
    Ticks,
}

/// The slowest rate over `window` seconds of a pass of chunks written one
/// after another, each chunk's bytes spread evenly over the time it took;
/// windows starting before `after` seconds are left out. `None` when the
/// pass holds no such window.
///
/// Spreading a chunk over its own time, rather than counting it whole at
/// one end as fio's bandwidth samples do, keeps a window from gaining or
/// losing a chunk at each edge (±5% at 10 MB/s in 512 KiB chunks), and a
/// device that completes requests in bursts (a rate limiter's time slices)
/// gets the rate of its slices, which a window holds whole. A chunk slower
/// than the window gives the window its own rate.
pub fn slowest_window(chunks: &[Chunk], window: f64, after: f64, windows: Windows) -> Option<Slowest> {
    // Chunk k runs from ends[k] - secs to ends[k]; bytes[k] were written before it.
    let (mut ends, mut before) = (Vec::with_capacity(chunks.len()), Vec::with_capacity(chunks.len()));
    let (mut t, mut b) = (0.0f64, 0u64);
    for c in chunks {
        before.push(b);
        t += c.secs.max(0.0);
        b += c.bytes;
        ends.push(t);
    }
    let total = t;
    let written = |t: f64| match ends.partition_point(|&e| e <= t) {
        k if k == chunks.len() => b as f64,
        k => {
            let c = &chunks[k];
            let share = if c.secs > 0.0 { ((t - (ends[k] - c.secs)) / c.secs).clamp(0.0, 1.0) } else { 0.0 };
            before[k] as f64 + share * c.bytes as f64
        }
    };
    // Sliding: the bytes in a window change slope only where an edge meets
    // a chunk's start or end, so the slowest window starts or ends at one.
    let froms: Vec<f64> = match windows {
        Windows::Sliding => {
            ends.iter().zip(chunks).flat_map(|(&e, c)| [e - c.secs, e, e - c.secs - window, e - window]).collect()
        }
        Windows::Ticks if window > 0.0 => {
            let count = ((total - after) / window + 1e-9).floor().max(0.0) as usize;
            (0..count).map(|k| after + k as f64 * window).collect()
        }
        Windows::Ticks => Vec::new(),
    };
    let mut slowest: Option<Slowest> = None;
    for from in froms.into_iter().filter(|&from| from >= after && from + window <= total + 1e-9) {
        let mb_s = (written(from + window) - written(from)) / window / 1e6;
        if slowest.is_none_or(|s| mb_s < s.mb_s) {
            slowest = Some(Slowest { from, mb_s });
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
mod tests;
