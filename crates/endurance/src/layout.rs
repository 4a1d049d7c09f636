//! How a pass cuts the surface into segments and in what order it visits
//! them: shuffled for writing, shuffled again (differently) for reading,
//! so that what is read was written long before and no cache holds it.

use crate::pattern::splitmix;

/// A segment is about this big, so a segment's work (and what a resume
/// may redo) is seconds on a slow card.
pub const SEGMENT_TARGET: u64 = 64 << 20;
/// At least this many segments, so a small card is still shuffled.
pub const MIN_SEGMENTS: u64 = 16;
/// At most this many, so the state file stays small on a large disk.
pub const MAX_SEGMENTS: u64 = 4096;

/// The surface in blocks and its segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub blocks: u64,
    pub segment_blocks: u64,
    pub segments: u64,
}

impl Layout {
    /// The layout of `blocks` blocks of `block_bytes`.
    pub fn new(blocks: u64, block_bytes: u64) -> Layout {
        let wanted = (blocks * block_bytes / SEGMENT_TARGET).clamp(MIN_SEGMENTS, MAX_SEGMENTS).min(blocks.max(1));
        let segment_blocks = blocks.div_ceil(wanted).max(1);
        Layout { blocks, segment_blocks, segments: blocks.div_ceil(segment_blocks) }
    }

    /// Segment `index`'s blocks.
    pub fn segment(&self, index: u64) -> std::ops::Range<u64> {
        let start = index * self.segment_blocks;
        start..(start + self.segment_blocks).min(self.blocks)
    }

    /// The order `pass` of `run` writes the segments in.
    pub fn write_order(&self, run: u64, pass: u32) -> Vec<u64> {
        shuffled(self.segments, run ^ u64::from(pass).wrapping_mul(0x5157))
    }

    /// The order it reads them back in: another shuffle, never the same.
    pub fn read_order(&self, run: u64, pass: u32) -> Vec<u64> {
        let mut order = shuffled(self.segments, !run ^ u64::from(pass).wrapping_mul(0x7EAD));
        if order.len() > 1 && order == self.write_order(run, pass) {
            order.rotate_left(1);
        }
        order
    }
}

/// 0..n in a Fisher-Yates order drawn from `seed`.
fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let mut order: Vec<u64> = (0..n).collect();
    let mut state = seed;
    for i in (1..order.len()).rev() {
        let j = (splitmix(&mut state) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_cover_the_surface_once() {
        for blocks in [1u64, 15, 16, 17, 1000, 16_384, 16 << 20] {
            // A segment is at least a block: tiny surfaces have fewer.
            let least = if blocks >= 256 { MIN_SEGMENTS } else { 1 };
            let layout = Layout::new(blocks, 4096);
            assert!(layout.segments >= least && layout.segments <= MAX_SEGMENTS, "{layout:?}");
            let covered: u64 = (0..layout.segments).map(|s| layout.segment(s).count() as u64).sum();
            assert_eq!(covered, blocks, "{layout:?}");
        }
    }

    #[test]
    fn orders_are_permutations_that_differ() {
        let layout = Layout::new(1 << 20, 4096);
        let (w, r) = (layout.write_order(7, 1), layout.read_order(7, 1));
        let mut sorted = w.clone();
        sorted.sort();
        assert_eq!(sorted, (0..layout.segments).collect::<Vec<_>>());
        assert_ne!(w, r);
        assert_ne!(w, layout.write_order(7, 2));
        assert_eq!(w, layout.write_order(7, 1), "the order is a function of run and pass");
    }
}
