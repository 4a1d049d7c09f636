//! Who is held back from an established row (docs/leaderboard.md#held-results).
//! Pure: a row's submitter samples, with the time each network joined the
//! row, in; which are held out, and why.
//!
//! The rule is **a burst is judged as one group, against the row without
//! it**. Networks that join a row within a day of each other are one burst.
//! A newcomer counts when its score lies in the band of the row *without
//! its burst* and counting it keeps the row's median within 5% of the
//! median of the row *without its burst*. So a burst of any size, at any
//! score, moves an established median by at most 5% when it arrives, and
//! waiting does not help it: a held network is judged again at every later
//! arrival by the same rule, against the row without its burst, which only
//! networks from other days can move. Honest change arrives over days, so
//! it moves the row a step at a time; a shift that needs a jump (a row
//! flipping between two levels) counts once time corroborates it: held
//! networks agreeing with one another seen on [`WITNESS_DAYS`] days across
//! a week, or more of them than one burst brings, over more than a day.
//!
//! That bounds a burst when it arrives. Later, as networks from other days
//! arrive, the burst's counted part can take the nearest-rank median a step
//! further (up to 10% in small rows). So the **published** median is
//! bounded too ([`published_median`]): it stays within 5% of the median of
//! the row without each day of newcomers, every day at once. That holds
//! nobody more (holding more held a fifth of honest networks), is a bound
//! by construction rather than a measured one, relaxes as other days'
//! networks move the row without the burst, and costs a sort of the row and
//! a pass over it per day of newcomers. A weighted median (a burst's
//! networks weighing one network together) would change every row's median,
//! bound a burst to one network's step, which in a small row is more than
//! 5%, and weigh a busy day of honest networks as one.
//!
//! Why not the alternatives: a band alone (the last rule) lets a burst just
//! inside it move a row by a quarter; a cap on the move per day against the
//! row of the day before is walked by a burst that waits (5% a day, every
//! day); counting results once they have merely aged lets a burst that
//! waits a week count in full; weighing networks by their age or history
//! holds back every honest first-time submitter, who is most of them.

use std::collections::BTreeMap;

use super::aggregate::{GroupStats, SubmitterEntry, group_stats, quantile, rank_of};

/// Networks with counted results that make a row established: from then
/// on a newcomer is judged.
pub const ESTABLISHED: usize = 5;

/// How far outside its p10–p90 band a newcomer may be and still agree
/// with an established row, as a factor on the band's ends: down to the
/// p10 divided by it, up to the p90 times it.
pub const BAND_FACTOR: f64 = 1.5;

/// Networks that join a row less than this apart (seconds) are one burst.
pub const BURST_WINDOW: i64 = 86_400;

/// A day of at least this many counted newcomers bounds the row's
/// published median ([`published_median`]).
pub const BOUND_FROM: usize = 1;

/// A burst moves an established median by at most 1/`MOVE_DIVISOR` (5%).
pub const MOVE_DIVISOR: i64 = 20;

/// The most networks one burst is taken to bring: more held networks that
/// agree, arriving over more than a day, are more than a burst.
pub const BURST: usize = 10;

/// Held networks that agree, seen on this many different days (each a day
/// after the one before) …
pub const WITNESS_DAYS: usize = 3;
/// … across at least this many seconds (a week), are a shift, not a burst.
pub const WITNESS_SPAN: i64 = 7 * 86_400;

/// Held networks agree with one another when their scores are within
/// 1/`AGREE_DIVISOR` (10%) of each other.
pub const AGREE_DIVISOR: i64 = 10;

/// Why a network is held (stored as the `held` column's code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Hold {
    /// Its score is outside the row's band.
    #[default]
    Contradicts,
    /// Counting it would move the row's median by more than 5% of what the
    /// row is without its burst.
    Burst,
}

impl Hold {
    /// The stored code: 0 is counted.
    pub fn code(self) -> i64 {
        match self {
            Hold::Contradicts => 1,
            Hold::Burst => 2,
        }
    }

    pub fn from_code(code: i64) -> Hold {
        if code == 2 { Hold::Burst } else { Hold::Contradicts }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// Not arrived yet in the walk.
    Waiting,
    /// One of the first [`ESTABLISHED`] networks: counts, never judged,
    /// never part of a burst.
    Fixed,
    /// Counts, never judged, but is part of its burst like any other: one a
    /// moderator accepted (who vouches for it, not for its burst), or one
    /// time corroborated.
    Vouched,
    Counted,
    Held(Hold),
}

fn counts(state: State) -> bool {
    matches!(state, State::Fixed | State::Vouched | State::Counted)
}

/// The band a score must fall in to agree with `scores` (p10 ÷ 1.5 to
/// p90 × 1.5), if there are any.
pub fn agreement_band(scores: &[i64]) -> Option<(f64, f64)> {
    let mut scores = scores.to_vec();
    let p10 = quantile(&mut scores, 0.1)? as f64;
    let p90 = quantile(&mut scores, 0.9)? as f64;
    Some((p10 / BAND_FACTOR, p90 * BAND_FACTOR))
}

fn median(mut scores: Vec<i64>) -> Option<i64> {
    quantile(&mut scores, 0.5)
}

/// Whether `b` is within 1/`divisor` of `a` (of `a`).
fn within(a: i64, b: i64, divisor: i64) -> bool {
    (b - a).abs().saturating_mul(divisor) <= a.abs()
}

/// The walk over one row's networks in the order they joined.
struct Walk<'a> {
    entries: &'a [SubmitterEntry],
    state: Vec<State>,
    /// When the network the walk has reached joined.
    now: i64,
    /// The row's median before the burst now arriving: (the last arrival
    /// before it, the median then).
    before_burst: Option<(i64, i64)>,
}

impl Walk<'_> {
    /// Judges network `i` as if it were not counted, with the row as it
    /// stood at `horizon` (networks that joined later are not there yet):
    /// `None` when it counts.
    fn judge(&self, i: usize, horizon: i64) -> Option<Hold> {
        let at = self.entries[i].joined_at;
        let mut row = Vec::with_capacity(self.entries.len());
        // The row without i's burst: fixed networks, and counted ones that
        // joined a day or more before or after it.
        let mut without = Vec::with_capacity(self.entries.len());
        for (j, (e, s)) in self.entries.iter().zip(&self.state).enumerate() {
            if j == i || !counts(*s) || e.joined_at > horizon {
                continue;
            }
            row.push(e.score);
            if *s == State::Fixed || (e.joined_at - at).abs() >= BURST_WINDOW {
                without.push(e.score);
            }
        }
        let score = self.entries[i].score;
        // Sorted once for its band and its median (a row is judged often).
        without.sort_unstable();
        let rank = |q: f64| without.get(rank_of(q, without.len()) - 1).copied();
        let (p10, before, p90) = (rank(0.1)?, rank(0.5)?, rank(0.9)?);
        if !(p10 as f64 / BAND_FACTOR..=p90 as f64 * BAND_FACTOR).contains(&(score as f64)) {
            return Some(Hold::Contradicts);
        }
        row.push(score);
        let after = median(row)?;
        (!within(before, after, MOVE_DIVISOR)).then_some(Hold::Burst)
    }

    /// The row a held network is judged again with, after an arrival: the
    /// whole row for a network of the burst now arriving; for an older
    /// one, the row as it stood before that burst (the last arrival a day
    /// or more before it), so that a burst never counts an older held
    /// network by moving the row to it, and its arrival is no occasion to
    /// judge an older one again: only arrivals from other days are.
    fn horizon_for(&self, i: usize) -> Option<i64> {
        if self.now - self.entries[i].joined_at < BURST_WINDOW {
            return Some(self.now);
        }
        self.entries.iter().map(|e| e.joined_at).filter(|t| self.now - t >= BURST_WINDOW).max()
    }

    /// For an older held network judged with the row before the burst now
    /// arriving: whether counting it, with that burst as it stands, would
    /// move the row more than 5% from before the burst (the burst and what
    /// it would count together are one move).
    fn moves_the_burst(&self, i: usize, horizon: i64) -> Option<Hold> {
        let (at, before) = self.before_burst?;
        if horizon >= self.now || at != horizon {
            return None;
        }
        let counted = self.entries.iter().zip(&self.state).enumerate().filter(|(j, (_, s))| *j != i && counts(**s));
        let after = median(counted.map(|(_, (e, _))| e.score).chain([self.entries[i].score]).collect())?;
        (!within(before, after, MOVE_DIVISOR)).then_some(Hold::Burst)
    }

    /// Notes the row's median before the burst now arriving (its counted
    /// networks that joined by `horizon`), the first time the walk judges
    /// with that horizon: before anything it counts.
    fn note_before_burst(&mut self, horizon: i64) {
        if self.before_burst.is_some_and(|(at, _)| at == horizon) {
            return;
        }
        let counted = self.entries.iter().zip(&self.state).filter(|(e, s)| counts(**s) && e.joined_at <= horizon);
        self.before_burst = median(counted.map(|(e, _)| e.score).collect()).map(|m| (horizon, m));
    }

    /// Held networks that time corroborates: on one side of the row's
    /// median and within 10% of one another, seen on [`WITNESS_DAYS`]
    /// days across a week, or more than a burst of them over more than a day.
    fn corroborated(&self) -> Vec<usize> {
        let counted = self.entries.iter().zip(&self.state).filter(|(_, s)| counts(**s)).map(|(e, _)| e.score);
        let Some(middle) = median(counted.collect()) else { return Vec::new() };
        let held: Vec<usize> = (0..self.entries.len()).filter(|i| matches!(self.state[*i], State::Held(_))).collect();
        let mut out = Vec::new();
        for &i in &held {
            let x = self.entries[i].score;
            let mut times: Vec<i64> = held
                .iter()
                .map(|j| &self.entries[*j])
                .filter(|e| (e.score < middle) == (x < middle) && within(x, e.score, AGREE_DIVISOR))
                .map(|e| e.joined_at)
                .collect();
            times.sort_unstable();
            // By day (each cluster a day or more after the last one began),
            // leaving out the busiest day: one burst is no witness for itself.
            let mut days: Vec<Vec<i64>> = Vec::new();
            for t in times {
                match days.last_mut() {
                    Some(day) if t - day[0] < BURST_WINDOW => day.push(t),
                    _ => days.push(vec![t]),
                }
            }
            if let Some(busiest) = (0..days.len()).max_by_key(|d| (days[*d].len(), *d)) {
                days.remove(busiest);
            }
            let rest: Vec<i64> = days.iter().flatten().copied().collect();
            let span = rest.iter().max().unwrap_or(&0) - rest.iter().min().unwrap_or(&0);
            if (rest.len() > BURST && span > BURST_WINDOW) || (days.len() >= WITNESS_DAYS && span >= WITNESS_SPAN) {
                out.push(i);
            }
        }
        self.without_outsized_bursts(out)
    }

    /// `group` (held networks to count together) less every burst in it
    /// whose own part would move the row by more than 5%: corroboration
    /// from other days must not carry a burst further than it goes alone.
    fn without_outsized_bursts(&self, mut group: Vec<usize>) -> Vec<usize> {
        let counted: Vec<i64> =
            self.entries.iter().zip(&self.state).filter(|(_, s)| counts(**s)).map(|(e, _)| e.score).collect();
        loop {
            let Some(all) =
                median(counted.iter().copied().chain(group.iter().map(|i| self.entries[*i].score)).collect())
            else {
                return group;
            };
            let outsized = group.iter().copied().find(|&b| {
                let at = self.entries[b].joined_at;
                let rest = group.iter().filter(|i| (self.entries[**i].joined_at - at).abs() >= BURST_WINDOW);
                let without = counted.iter().copied().chain(rest.map(|i| self.entries[*i].score)).collect();
                median(without).is_some_and(|m| !within(m, all, MOVE_DIVISOR))
            });
            match outsized {
                Some(b) => {
                    let at = self.entries[b].joined_at;
                    group.retain(|i| (self.entries[*i].joined_at - at).abs() >= BURST_WINDOW);
                }
                None => return group,
            }
        }
    }

    /// After an arrival: every held network judged again, and those time
    /// corroborates counted, until nothing changes.
    fn settle(&mut self) {
        if let Some(horizon) = self.entries.iter().map(|e| e.joined_at).filter(|t| self.now - t >= BURST_WINDOW).max() {
            self.note_before_burst(horizon);
        }
        loop {
            let mut moved = false;
            for i in 0..self.entries.len() {
                if let (State::Held(_), Some(horizon)) = (self.state[i], self.horizon_for(i)) {
                    self.state[i] = match self.judge(i, horizon).or_else(|| self.moves_the_burst(i, horizon)) {
                        None => {
                            moved = true;
                            State::Counted
                        }
                        Some(hold) => State::Held(hold),
                    };
                }
            }
            let corroborated = self.corroborated();
            for i in &corroborated {
                self.state[*i] = State::Vouched;
            }
            if !moved && corroborated.is_empty() {
                break;
            }
        }
    }
}

/// Marks which networks of a row are held (`entries[i].held`, and why in
/// `entries[i].hold`), walking them in the order they joined: the first
/// [`ESTABLISHED`], and any a moderator accepted, count; every other is
/// judged as it arrives (see the module), and after each arrival every
/// held one is judged again with the row as it then stands. A counted
/// network stays counted. Returns how many are held.
pub fn split_held(entries: &mut [SubmitterEntry]) -> usize {
    entries.sort_by(|a, b| (a.joined_at, a.first_id, &a.submitter).cmp(&(b.joined_at, b.first_id, &b.submitter)));
    let mut walk = Walk { entries, state: vec![State::Waiting; entries.len()], now: i64::MIN, before_burst: None };
    for i in 0..walk.entries.len() {
        walk.now = walk.entries[i].joined_at;
        walk.state[i] = if i < ESTABLISHED {
            State::Fixed
        } else if walk.entries[i].accepted {
            State::Vouched
        } else {
            match walk.judge(i, walk.now) {
                None => State::Counted,
                Some(hold) => State::Held(hold),
            }
        };
        if walk.state.iter().any(|s| matches!(s, State::Held(_))) {
            walk.settle();
        }
    }
    let state = walk.state;
    for (entry, state) in entries.iter_mut().zip(state) {
        (entry.held, entry.hold) = match state {
            State::Held(hold) => (true, hold),
            _ => (false, Hold::default()),
        };
    }
    entries.iter().filter(|e| e.held).count()
}

/// The `k`th smallest (1-based) of sorted `all` without the values of
/// sorted `without` (a part of it).
fn kth_without(all: &[i64], without: &[i64], k: usize) -> Option<i64> {
    let (mut skip, mut seen) = (0, 0);
    for &x in all {
        if without.get(skip) == Some(&x) {
            skip += 1;
            continue;
        }
        seen += 1;
        if seen == k {
            return Some(x);
        }
    }
    None
}

/// The row's median as it is published (ranked, shown, in standings):
/// the median of its counted networks (`entries` with `held` set, in any
/// order), kept within 5% of the median of the row without each day of
/// its newcomers. For every network but the founders, the counted
/// networks that joined from then to a day later are a day (any burst
/// lies in the day from its first network); a day of at least
/// [`BOUND_FROM`] of them bounds the row's median to within 5% of the
/// median of the row without it. The bounds are kept together, the
/// larger days' first (then the later): one that excludes those already
/// kept is passed over (an honest day taken out of a small row leaves a
/// burst a larger part of what is left). When the median is outside them,
/// the counted score inside nearest the median is published, else the
/// bound. Holds nobody: which networks count, the row's p10 and p90 and
/// each network's standing among them are as they are.
pub fn published_median(entries: &[SubmitterEntry]) -> Option<i64> {
    let mut order: Vec<&SubmitterEntry> = entries.iter().collect();
    order.sort_by(|a, b| (a.joined_at, a.first_id, &a.submitter).cmp(&(b.joined_at, b.first_id, &b.submitter)));
    let mut all: Vec<i64> = order.iter().filter(|e| !e.held).map(|e| e.score).collect();
    all.sort_unstable();
    let median = *all.get(rank_of(0.5, all.len()) - 1)?;
    // Each day's (networks, first, bounds).
    let mut days: Vec<(usize, usize, i64, i64)> = Vec::new();
    let mut day = Vec::new();
    for (i, one) in order.iter().enumerate().skip(ESTABLISHED) {
        // The day from it, and the day to it.
        for forward in [true, false] {
            day.clear();
            let span = |e: &&&SubmitterEntry| (e.joined_at - one.joined_at).abs() < BURST_WINDOW;
            if forward {
                day.extend(order[i..].iter().take_while(span).filter(|e| !e.held).map(|e| e.score));
            } else {
                let before = order[ESTABLISHED..=i].iter().rev().take_while(span);
                day.extend(before.filter(|e| !e.held).map(|e| e.score));
            }
            if day.len() < BOUND_FROM {
                continue;
            }
            day.sort_unstable();
            if let Some(without) = kth_without(&all, &day, rank_of(0.5, all.len() - day.len())) {
                let slack = without.abs() / MOVE_DIVISOR;
                days.push((day.len(), i, without - slack, without + slack));
            }
        }
    }
    days.sort_unstable_by_key(|(n, i, _, _)| std::cmp::Reverse((*n, *i)));
    let (mut lo, mut hi) = (i64::MIN, i64::MAX);
    for (_, _, low, high) in days {
        if low <= hi && high >= lo {
            (lo, hi) = (lo.max(low), hi.min(high));
        }
    }
    Some(if (lo..=hi).contains(&median) {
        median
    } else {
        let inside = all.iter().copied().filter(|s| (lo..=hi).contains(s));
        inside.min_by_key(|s| (s - median).abs()).unwrap_or(if median > hi { hi } else { lo })
    })
}

/// The stored code of an entry's state: 0 counted, else its [`Hold`]'s.
pub fn code_of(entry: &SubmitterEntry) -> i64 {
    if entry.held { entry.hold.code() } else { 0 }
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
/// row's figures over the others, and the networks whose held code changed
/// from what was stored, to write back.
pub fn settle_group(entries: &mut [SubmitterEntry]) -> (Option<GroupStats>, Vec<(String, i64)>) {
    let stored: BTreeMap<String, i64> = entries.iter().map(|e| (e.submitter.clone(), code_of(e))).collect();
    let held = split_held(entries) as i64;
    let changed = entries
        .iter()
        .filter(|e| stored.get(&e.submitter) != Some(&code_of(e)))
        .map(|e| (e.submitter.clone(), code_of(e)))
        .collect();
    let median = published_median(entries);
    let stats = group_stats(&counted(entries)).map(|stats| GroupStats {
        held,
        median: median.unwrap_or(stats.median),
        ..stats
    });
    (stats, changed)
}

#[cfg(test)]
#[path = "held_tests.rs"]
mod tests;
