//! The sweep's counterfeits, drawn at random but reproducibly (a seed):
//! real sizes between 3.5 and 32 GiB, whole sectors, never a power of two,
//! announced as one of the sizes fakes are sold as (16 to 512 GiB, larger
//! than the real size). Most are plain wraps, the fake most often met; the
//! rest offset wraps (rotated, or sparing the first bytes), limbo of each
//! kind, and chains.

use super::{Case, GIB, MIB};

/// A reproducible stream of numbers (splitmix64).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo { lo } else { lo + self.next() % (hi - lo) }
    }
}

const SECTOR: u64 = 512;
const ANNOUNCED: [u64; 6] = [16 * GIB, 32 * GIB, 64 * GIB, 128 * GIB, 256 * GIB, 512 * GIB];

/// `count` counterfeits from `seed`.
pub fn draw(count: usize, seed: u64) -> Vec<Case> {
    let mut draw = Draw(seed);
    let mut cases = Vec::with_capacity(count);
    while cases.len() < count {
        // About log-uniform between 3.5 and 32 GiB, in whole sectors.
        let (lo, hi) = ((3.5 * GIB as f64).ln(), (32.0 * GIB as f64).ln());
        let x = lo + (hi - lo) * (draw.next() % 1_000_000) as f64 / 1_000_000.0;
        let real = (x.exp() as u64) / SECTOR * SECTOR;
        if real.is_power_of_two() {
            continue;
        }
        let bigger: Vec<u64> = ANNOUNCED.iter().copied().filter(|&a| a > real).collect();
        let announced = bigger[draw.range(0, bigger.len() as u64) as usize];
        let kind = draw.range(0, 100);
        let case = if kind < 70 {
            Case::new("wrap", announced, real, "wrap", &[], "wraparound")
        } else if kind < 78 {
            let shift = draw.range(MIB / SECTOR, (real - 64 * MIB) / SECTOR) * SECTOR;
            Case::new("offset", announced, real, &format!("wrap-rotate={shift}"), &[], "wraparound")
        } else if kind < 85 {
            let skip = draw.range(MIB / SECTOR, (real / 2) / SECTOR) * SECTOR;
            Case::new("offset", announced, real, &format!("wrap-skip={skip}"), &[], "wraparound")
        } else if kind < 95 {
            let limbo = ["limbo-00", "limbo-ff", "limbo-stale", "limbo-last"][draw.range(0, 4) as usize];
            Case::new("limbo", announced, real, limbo, &[], "limbo")
        } else {
            if announced < 2 * real + 128 * MIB {
                continue;
            }
            // At least one whole island above the wrap point.
            let wrap = draw.range((real + 64 * MIB) / SECTOR, (announced - real) / SECTOR) * SECTOR;
            let kind = ["", ":ff", ":stale", ":last"][draw.range(0, 4) as usize];
            Case::new("chain", announced, real, &format!("chain={wrap}{kind}"), &[], "chain")
        };
        cases.push(case);
    }
    cases
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_reproducible_and_in_range() {
        let cases = draw(300, 17);
        assert_eq!(cases.len(), 300);
        assert_eq!(
            draw(300, 17).iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
            cases.iter().map(|c| c.name.clone()).collect::<Vec<_>>()
        );
        for c in &cases {
            assert!(c.real >= 3 * GIB + GIB / 2 && c.real <= 32 * GIB && c.real % SECTOR == 0, "{}", c.name);
            assert!(c.announced > c.real && ANNOUNCED.contains(&c.announced), "{}", c.name);
        }
        let wraps = cases.iter().filter(|c| c.family == "wrap").count();
        assert!(wraps > 180 && cases.iter().any(|c| c.family == "chain"), "{wraps}");
    }
}
