//! What a block read back after a cut is (docs/power-loss.md#what-is-counted),
//! pure: the bytes read, where they were read, what was written there and
//! what was there before, in; a [`Finding`] out. [`count`] then says what
//! that finding costs the card, given the block's [`Role`] in the cycle.

use crate::record::{self, Prints, SECTORS};

/// What the bytes at an address turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finding {
    /// Exactly the newest record written there.
    Intact,
    /// What was there before the newest write: the older content, or an
    /// older record of this run at its own address.
    Old,
    /// Each sector either the new record's or the old content's, with some
    /// of each: a write cut short (head new, tail old, or the reverse).
    Torn,
    /// A whole record of this run whose own address is another: a write
    /// that landed in the wrong place.
    Misplaced { its_address: u64 },
    /// Anything else: bytes that are neither the new record nor what was
    /// there, in at least one sector.
    Foreign,
}

/// Judges `block`, read at byte address `address`, against `new` (the
/// prints of the newest record written there) and `old` (what was there
/// before it, if known; when not, every sector that is not new counts as
/// old, so a tear cannot be told from damage to the tail).
pub fn judge(block: &[u8], address: u64, run: &[u8; 16], new: &Prints, old: Option<&Prints>) -> Finding {
    let seen = record::prints(block);
    if seen == *new {
        return Finding::Intact;
    }
    if let Ok(header) = record::decode(block) {
        if header.run == *run {
            return if header.address == address {
                Finding::Old
            } else {
                Finding::Misplaced { its_address: header.address }
            };
        }
    }
    if old == Some(&seen) {
        return Finding::Old;
    }
    let is_new = |i: usize| seen[i] == new[i];
    let is_old = |i: usize| old.is_none_or(|o| seen[i] == o[i]);
    let news = (0..SECTORS).filter(|&i| is_new(i)).count();
    if news > 0 && (0..SECTORS).all(|i| is_new(i) || is_old(i)) {
        return Finding::Torn;
    }
    Finding::Foreign
}

/// The block's part in the cycle just cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Written this cycle, and a flush returned after the write, before the
    /// power-off command started.
    Acknowledged,
    /// Written this cycle, never acknowledged: anything but a misplaced
    /// record is allowed.
    Unacknowledged,
    /// Not written this cycle; it held this record when last verified.
    Kept,
}

/// What a finding adds to the cycle's counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cost {
    None,
    Lost,
    Torn,
    Misplaced,
    Damaged,
}

/// The cost of `finding` for a block of `role`. A misplaced record counts
/// wherever it is found: it overwrote what was there.
pub fn count(role: Role, finding: Finding) -> Cost {
    match (role, finding) {
        (_, Finding::Misplaced { .. }) => Cost::Misplaced,
        (_, Finding::Intact) | (Role::Unacknowledged, _) => Cost::None,
        (Role::Acknowledged, Finding::Old) => Cost::Lost,
        (Role::Acknowledged, Finding::Torn) => Cost::Torn,
        (Role::Acknowledged, Finding::Foreign) | (Role::Kept, _) => Cost::Damaged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Header, RECORD_BYTES, SECTOR, encode, prints};
    use proptest::prelude::*;

    const RUN: [u8; 16] = [9; 16];

    fn rec(sequence: u64, address: u64) -> Vec<u8> {
        encode(&Header { run: RUN, cycle: 1, sequence, address })
    }

    proptest! {
        #[test]
        fn every_kind_of_block_is_named(seq in 1u64..1_000_000, block in 0u64..1 << 20, cut in 1usize..SECTORS, at in 0usize..RECORD_BYTES, other in 1u64..1 << 20) {
            let address = block * 4096;
            let new = rec(seq, address);
            let (pn, old_bytes) = (prints(&new), rec(seq - 1, address));
            let po = prints(&old_bytes);
            prop_assert_eq!(judge(&new, address, &RUN, &pn, Some(&po)), Finding::Intact);
            prop_assert_eq!(judge(&old_bytes, address, &RUN, &pn, Some(&po)), Finding::Old);
            // Foreign old content (zeros, someone's files) read back: lost.
            let zeros = vec![0u8; RECORD_BYTES];
            prop_assert_eq!(judge(&zeros, address, &RUN, &pn, Some(&prints(&zeros))), Finding::Old);
            // Head new, tail old; and the reverse.
            let mut torn = new.clone();
            torn[cut * SECTOR..].copy_from_slice(&old_bytes[cut * SECTOR..]);
            prop_assert_eq!(judge(&torn, address, &RUN, &pn, Some(&po)), Finding::Torn);
            let mut reverse = old_bytes.clone();
            reverse[cut * SECTOR..].copy_from_slice(&new[cut * SECTOR..]);
            prop_assert_eq!(judge(&reverse, address, &RUN, &pn, Some(&po)), Finding::Torn);
            // A record of another address here.
            let elsewhere = (block + other) * 4096;
            let stray = rec(seq + 1, elsewhere);
            prop_assert_eq!(judge(&stray, address, &RUN, &pn, Some(&po)), Finding::Misplaced { its_address: elsewhere });
            // One flipped byte: neither new nor old in that sector.
            let mut flipped = new.clone();
            flipped[at] ^= 0x40;
            prop_assert_eq!(judge(&flipped, address, &RUN, &pn, Some(&po)), Finding::Foreign);
            // Another run's record at this very address is not ours: foreign.
            let theirs = encode(&Header { run: [1; 16], cycle: 1, sequence: seq, address });
            prop_assert_eq!(judge(&theirs, address, &RUN, &pn, Some(&po)), Finding::Foreign);
        }
    }

    #[test]
    fn what_each_finding_costs() {
        use Role::*;
        let misplaced = Finding::Misplaced { its_address: 0 };
        for role in [Acknowledged, Unacknowledged, Kept] {
            assert_eq!(count(role, misplaced), Cost::Misplaced);
            assert_eq!(count(role, Finding::Intact), Cost::None);
        }
        assert_eq!(count(Acknowledged, Finding::Old), Cost::Lost);
        assert_eq!(count(Acknowledged, Finding::Torn), Cost::Torn);
        assert_eq!(count(Acknowledged, Finding::Foreign), Cost::Damaged);
        for f in [Finding::Old, Finding::Torn, Finding::Foreign] {
            assert_eq!(count(Unacknowledged, f), Cost::None);
            assert_eq!(count(Kept, f), Cost::Damaged);
        }
    }

    #[test]
    fn without_the_old_content_a_new_head_is_a_tear() {
        let new = rec(5, 8192);
        let mut torn = new.clone();
        torn[SECTOR..].fill(0xEE);
        assert_eq!(judge(&torn, 8192, &RUN, &prints(&new), None), Finding::Torn);
        assert_eq!(judge(&[0xEE; RECORD_BYTES], 8192, &RUN, &prints(&new), None), Finding::Foreign);
    }
}
