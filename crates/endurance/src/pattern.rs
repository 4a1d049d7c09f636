//! What a block holds: 4 KiB derived from (run, pass, block), so that
//! nothing is stored to check it, and whatever reads back can be named.
//!
//! A block starts with a 32-byte header (magic, run, pass, block number)
//! and goes on with a SplitMix64 stream seeded from the same three. The
//! header lets a wrong block say whose it is: this run's older pass (the
//! card kept old data), another block of this run (the card mixed up its
//! addresses), or neither (garbage). Pure functions over bytes.

use storage_scoring::endurance::BLOCK_BYTES;

const MAGIC: [u8; 8] = *b"SSEND01\0";
const HEADER: usize = 32;
const BLOCK: usize = BLOCK_BYTES as usize;

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014): one add and a mix per word.
pub(crate) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn seed(run: u64, pass: u32, block: u64) -> u64 {
    let mut s = run ^ (u64::from(pass) << 48) ^ block.rotate_left(17);
    splitmix(&mut s) ^ block
}

/// Fills `buf` (a whole number of blocks) with what `pass` of `run` writes
/// to the blocks from `first` on.
pub fn fill(buf: &mut [u8], run: u64, pass: u32, first: u64) {
    for (i, block) in buf.chunks_exact_mut(BLOCK).enumerate() {
        fill_block(block, run, pass, first + i as u64);
    }
}

fn fill_block(block: &mut [u8], run: u64, pass: u32, number: u64) {
    block[..8].copy_from_slice(&MAGIC);
    block[8..16].copy_from_slice(&run.to_le_bytes());
    block[16..20].copy_from_slice(&pass.to_le_bytes());
    block[20..24].fill(0);
    block[24..32].copy_from_slice(&number.to_le_bytes());
    let mut state = seed(run, pass, number);
    for word in block[HEADER..].chunks_exact_mut(8) {
        word.copy_from_slice(&splitmix(&mut state).to_le_bytes());
    }
}

/// What a block read back as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// What this pass wrote there.
    Expected,
    /// What this run wrote there in an earlier pass.
    OldData { pass: u32 },
    /// What this run wrote to another block (in some pass).
    OtherBlock { block: u64 },
    /// All zeros, all ones, damaged data or another run's.
    Garbage,
}

/// Names what `got` (one block) holds, against what `pass` of `run` wrote
/// to block `block`.
pub fn judge(got: &[u8], run: u64, pass: u32, block: u64) -> Found {
    let mut expected = [0u8; BLOCK];
    fill_block(&mut expected, run, pass, block);
    if got == expected.as_slice() {
        return Found::Expected;
    }
    let Some((their_run, their_pass, their_block)) = header(got) else { return Found::Garbage };
    if their_run != run {
        return Found::Garbage;
    }
    // The header alone could be a torn write's; the whole block must be
    // what that pass wrote to that block.
    fill_block(&mut expected, run, their_pass, their_block);
    if got != expected.as_slice() {
        return Found::Garbage;
    }
    if their_block != block {
        Found::OtherBlock { block: their_block }
    } else if their_pass < pass {
        Found::OldData { pass: their_pass }
    } else {
        Found::Garbage
    }
}

/// The block's (run, pass, block) if it starts with this tool's magic.
pub fn header(got: &[u8]) -> Option<(u64, u32, u64)> {
    if got.len() < HEADER || got[..8] != MAGIC {
        return None;
    }
    let run = u64::from_le_bytes(got[8..16].try_into().ok()?);
    let pass = u32::from_le_bytes(got[16..20].try_into().ok()?);
    let block = u64::from_le_bytes(got[24..32].try_into().ok()?);
    Some((run, pass, block))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(run: u64, pass: u32, block: u64) -> Vec<u8> {
        let mut buf = vec![0u8; BLOCK];
        fill(&mut buf, run, pass, block);
        buf
    }

    #[test]
    fn every_kind_of_wrong_block_is_named() {
        let (run, pass, block) = (0xFEED, 5, 77);
        assert_eq!(judge(&written(run, pass, block), run, pass, block), Found::Expected);
        assert_eq!(judge(&written(run, 3, block), run, pass, block), Found::OldData { pass: 3 });
        assert_eq!(judge(&written(run, pass, 12), run, pass, block), Found::OtherBlock { block: 12 });
        assert_eq!(judge(&written(run, 2, 12), run, pass, block), Found::OtherBlock { block: 12 });
        assert_eq!(judge(&written(run + 1, pass, block), run, pass, block), Found::Garbage);
        assert_eq!(judge(&[0u8; BLOCK], run, pass, block), Found::Garbage);
        assert_eq!(judge(&[0xFFu8; BLOCK], run, pass, block), Found::Garbage);
        let mut torn = written(run, pass, block);
        torn[2048..].copy_from_slice(&written(run, 4, block)[2048..]);
        assert_eq!(judge(&torn, run, pass, block), Found::Garbage);
        let mut flipped = written(run, 4, block);
        flipped[4000] ^= 1;
        assert_eq!(judge(&flipped, run, pass, block), Found::Garbage);
    }

    #[test]
    fn blocks_differ_by_run_pass_and_address() {
        let a = written(1, 1, 1);
        for other in [written(2, 1, 1), written(1, 2, 1), written(1, 1, 2)] {
            let same = a[HEADER..].iter().zip(&other[HEADER..]).filter(|(x, y)| x == y).count();
            assert!(same < 64, "bodies share {same} bytes");
        }
    }

    #[test]
    fn short_or_hostile_bytes_are_garbage_not_a_panic() {
        assert_eq!(header(&[0u8; 3]), None);
        assert_eq!(judge(&[], 1, 1, 1), Found::Garbage);
        let mut forged = vec![0u8; BLOCK];
        forged[..8].copy_from_slice(&MAGIC);
        forged[8..16].copy_from_slice(&9u64.to_le_bytes());
        assert_eq!(judge(&forged, 9, 2, 0), Found::Garbage);
    }
}
