//! Where the probe writes and reads: lattices of probe blocks, the length
//! of scan runs and the lattice that finds their image, samples, flush
//! plans. Pure arithmetic on byte offsets (u64 everywhere, for 32-bit ARM).

/// Probe granule: blocks are written, read and located in these units.
pub const BLOCK: u64 = 4096;
/// Nothing below this is written: the partition table lives there, and a
/// card with less than a MiB of real storage is not one anybody can use.
pub const FLOOR: u64 = 1 << 20;
/// Backup, run and flush I/O size.
pub const CHUNK: u64 = 1 << 20;
/// The shortest scan run.
pub const MIN_RUN: u64 = 256 << 10;

/// Power-of-two lattice points strictly inside (lo, hi), at or above
/// FLOOR: at least `per_round` of them when there is room, fewer than twice.
pub fn lattice(lo: u64, hi: u64, per_round: u64) -> Vec<u64> {
    if hi <= lo + BLOCK {
        return Vec::new();
    }
    let span = hi - lo;
    let step = prev_power_of_two((span / (per_round + 1)).max(BLOCK)).max(BLOCK);
    let mut points = Vec::new();
    let mut p = (lo / step + 1) * step;
    while p < hi {
        if p >= FLOOR {
            points.push(p);
        }
        p += step;
    }
    points
}

/// How long a scan run over `span` bytes is. A run of `len` stamped bytes
/// lands somewhere as one window of `len` bytes (two, if it straddles a
/// wrap), so reads every `len / 2` find it: writing it twice (stamp, then
/// restore) costs `2 len`, reading costs `2 span / len` reads; the product
/// `balance` says what a read is worth in written bytes (16 KiB: a 1 ms
/// read on a 20 MB/s card is worth about 20 KB of writing).
pub fn run_len(span: u64, balance: u64, max: u64) -> u64 {
    let ideal = isqrt(span.saturating_mul(balance.max(1)));
    let len = ideal.clamp(MIN_RUN.min(max), max.max(BLOCK)).min((span / 4).max(BLOCK));
    (len / BLOCK * BLOCK).max(BLOCK)
}

/// Read points every `step` from `from` up to `to` (exclusive), aligned to
/// the step.
pub fn read_points(from: u64, to: u64, step: u64) -> Vec<u64> {
    let step = step.max(BLOCK) / BLOCK * BLOCK;
    let mut points = Vec::new();
    let mut p = from.div_ceil(step) * step;
    while p < to {
        points.push(p);
        p += step;
    }
    points
}

/// About `n` blocks spread evenly over `[start, end)`, the last block
/// always among them.
pub fn sample(start: u64, end: u64, n: u64) -> Vec<u64> {
    if end < start + BLOCK {
        return Vec::new();
    }
    let blocks = (end - start) / BLOCK;
    let every = (blocks / n.max(1)).max(1);
    let last = start + (blocks - 1) * BLOCK;
    let mut points: Vec<u64> = (0..blocks).step_by(every as usize).map(|b| start + b * BLOCK).collect();
    if points.last() != Some(&last) {
        points.push(last);
    }
    points
}

/// The amounts a cache measurement reads its marker after: from `first`,
/// a quarter more each time, up to `bound`, which is always the last. The
/// cache is then known to within a quarter, and a flush of the upper end
/// costs little more than the cache itself.
pub fn ladder(first: u64, bound: u64) -> Vec<u64> {
    let mut ages = Vec::new();
    let mut age = first.max(BLOCK);
    while age < bound {
        ages.push(age);
        age = (age + (age / 4).max(BLOCK)).div_ceil(BLOCK) * BLOCK;
    }
    ages.push(bound);
    ages
}

/// Probe blocks per search round: few when a round costs little (no cache
/// to flush), more when each round pays for a flush.
pub fn round_size(flush: u64) -> u64 {
    if flush == 0 { 16 } else { (flush / (64 << 10)).clamp(32, 1024) }
}

/// Cuts single blocks (sorted offsets) out of sorted extents.
pub fn carve(extents: &[(u64, u64)], holes: &[u64]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    for &(start, end) in extents {
        let mut s = start;
        let first = holes.partition_point(|&h| h + BLOCK <= start);
        for &h in holes[first..].iter().take_while(|&&h| h < end) {
            if h > s {
                out.push((s, h));
            }
            s = s.max(h + BLOCK);
        }
        if end > s {
            out.push((s, end));
        }
    }
    out
}

/// Fisher–Yates with the stamp's mixer as the random source.
pub fn shuffle(items: &mut [u64], seed: u64) {
    for i in (1..items.len()).rev() {
        let j = (crate::stamp::hash64(seed ^ i as u64) % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

fn prev_power_of_two(x: u64) -> u64 {
    if x == 0 { 0 } else { 1 << (63 - x.leading_zeros()) }
}

fn isqrt(x: u64) -> u64 {
    let mut r = (x as f64).sqrt() as u64;
    while r.saturating_mul(r) > x {
        r -= 1;
    }
    while (r + 1).saturating_mul(r + 1) <= x {
        r += 1;
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn the_lattice_is_bounded_and_inside() {
        let points = lattice(FLOOR - BLOCK, 256 * MIB, 128);
        assert!(points.len() >= 128 && points.len() < 2 * 128 + 2, "{}", points.len());
        assert!(points.iter().all(|&p| (FLOOR..256 * MIB).contains(&p) && p % BLOCK == 0));
        let fine = lattice(63 * MIB, 64 * MIB, 128);
        assert_eq!(fine.first(), Some(&(63 * MIB + BLOCK)));
        assert_eq!(fine.len() as u64, MIB / BLOCK - 1);
        assert!(lattice(5 * MIB, 5 * MIB + BLOCK, 16).is_empty());
    }

    #[test]
    fn runs_balance_writes_and_reads() {
        assert_eq!(run_len(64 << 30, 16 << 10, 64 * MIB), 32 * MIB);
        assert_eq!(run_len(512 << 30, 16 << 10, 64 * MIB), 64 * MIB);
        assert_eq!(run_len(1 << 30, 16 << 10, 64 * MIB), 4 * MIB);
        assert_eq!(run_len(2 * MIB, 16 << 10, 64 * MIB), 256 << 10);
        assert_eq!(run_len(16 * MIB, 16, MIB), 256 << 10);
        let odd = run_len(7_400_000_000, 16 << 10, 64 * MIB);
        assert!(odd % BLOCK == 0 && odd > 8 * MIB && odd < 16 * MIB, "{odd}");
    }

    #[test]
    fn read_points_are_aligned_and_inside() {
        assert_eq!(read_points(0, 3 * MIB, MIB), vec![0, MIB, 2 * MIB]);
        assert_eq!(read_points(MIB + 1, 3 * MIB + 1, MIB), vec![2 * MIB, 3 * MIB]);
    }

    #[test]
    fn samples_spread_and_keep_the_last() {
        let s = sample(MIB, 2 * MIB, 8);
        assert_eq!(s.len(), 9);
        assert_eq!(s.first(), Some(&MIB));
        assert_eq!(s.last(), Some(&(2 * MIB - BLOCK)));
        assert_eq!(sample(0, BLOCK, 64), vec![0]);
        assert!(sample(0, 100, 64).is_empty());
    }

    #[test]
    fn the_ladder_climbs_by_quarters_to_the_bound() {
        assert_eq!(ladder(512 << 10, MIB), vec![512 << 10, 640 << 10, 800 << 10, 1000 << 10, MIB]);
        assert_eq!(ladder(MIB, MIB), vec![MIB]);
        assert_eq!(ladder(2 * MIB, MIB), vec![MIB]);
        let steps = ladder(128 << 10, 256 * MIB);
        assert!(steps.len() < 40 && steps.windows(2).all(|w| w[1] > w[0]), "{}", steps.len());
    }

    #[test]
    fn carving_leaves_the_holes_out() {
        let carved = carve(&[(0, 10 * BLOCK), (20 * BLOCK, 30 * BLOCK)], &[0, 5 * BLOCK, 29 * BLOCK, 40 * BLOCK]);
        assert_eq!(carved, vec![(BLOCK, 5 * BLOCK), (6 * BLOCK, 10 * BLOCK), (20 * BLOCK, 29 * BLOCK)]);
    }

    #[test]
    fn shuffling_keeps_every_item() {
        let mut items: Vec<u64> = (0..100).collect();
        shuffle(&mut items, 7);
        assert_ne!(items, (0..100).collect::<Vec<_>>());
        items.sort_unstable();
        assert_eq!(items, (0..100).collect::<Vec<_>>());
    }
}
