//! Self-identifying blocks: every block the probe writes says which offset
//! it was written to, in which run, and carries a checksum over all of its
//! bytes. Reading a block back therefore tells more than "right or wrong":
//! it names the address whose data came back (an alias), or says what kind
//! of foreign data did (zeros, 0xFF, a previous run's block, anything else).
//!
//! Layout of a block of `len` bytes (a multiple of 8, at least 32):
//!
//! | bytes | content |
//! |---|---|
//! | 0..8 | magic `SSCAP01\0` |
//! | 8..16 | the run's nonce (little-endian) |
//! | 16..24 | the byte offset the block was written to |
//! | 24..32 | checksum of every other byte of the block |
//! | 32..len | filler derived from nonce and offset |
//!
//! Pure functions over bytes, but for [`fresh_nonce`], which asks the
//! kernel's random source (the crate's one `unsafe`, `getrandom(2)`).

/// The first eight bytes of every stamped block.
pub const MAGIC: [u8; 8] = *b"SSCAP01\0";
const HEADER: usize = 32;

/// What a block read back turned out to hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// This run's block for this very offset.
    Own,
    /// This run's intact block, but the one written to another offset: both
    /// addresses reach the same storage.
    Alias(u64),
    /// Not this run's block at all.
    Foreign(Foreign),
}

/// The kind of foreign content, which names the kind of limbo a fake has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Foreign {
    /// Every byte 0x00.
    Zeros,
    /// Every byte 0xFF.
    Ones,
    /// An intact block of another run: old data that the write never replaced.
    OtherRun,
    /// This run's header with a wrong checksum: the block came back damaged.
    Damaged,
    /// Anything else: old contents, or garbage.
    Other,
}

impl Foreign {
    /// In words, for the report: "zeros", "0xFF bytes", …
    pub fn describe(self) -> &'static str {
        match self {
            Foreign::Zeros => "zeros",
            Foreign::Ones => "0xFF bytes",
            Foreign::OtherRun => "a block of an earlier run",
            Foreign::Damaged => "damaged copies of the written block",
            Foreign::Other => "old or random data",
        }
    }
}

/// The stamp of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub nonce: u64,
}

impl Stamp {
    pub fn new(nonce: u64) -> Stamp {
        Stamp { nonce }
    }

    /// The offset named by a header of this run at the start of `data`
    /// (magic and nonce), whether or not the rest is intact.
    pub fn header_offset(&self, data: &[u8]) -> Option<u64> {
        if data.len() < HEADER || data[0..8] != MAGIC || data[8..16] != self.nonce.to_le_bytes() {
            return None;
        }
        Some(u64::from_le_bytes(data[16..24].try_into().ok()?))
    }

    /// Fills `block` with this run's block for `offset`.
    pub fn fill(&self, offset: u64, block: &mut [u8]) {
        debug_assert!(block.len() >= HEADER && block.len() % 8 == 0);
        block[0..8].copy_from_slice(&MAGIC);
        block[8..16].copy_from_slice(&self.nonce.to_le_bytes());
        block[16..24].copy_from_slice(&offset.to_le_bytes());
        let mut state = seed(self.nonce, offset);
        for word in block[HEADER..].chunks_exact_mut(8) {
            word.copy_from_slice(&next(&mut state).to_le_bytes());
        }
        let sum = checksum(block);
        block[24..32].copy_from_slice(&sum.to_le_bytes());
    }

    /// Fills consecutive blocks of `block_len` bytes, the first at `offset`.
    pub fn fill_run(&self, offset: u64, block_len: usize, buf: &mut [u8]) {
        for (i, block) in buf.chunks_exact_mut(block_len).enumerate() {
            self.fill(offset + (i * block_len) as u64, block);
        }
    }

    /// Classifies a block read back from `expected` offset.
    pub fn check(&self, expected: u64, block: &[u8]) -> Seen {
        if block.len() < HEADER || block[0..8] != MAGIC {
            return Seen::Foreign(plain_kind(block));
        }
        let word = |at: usize| u64::from_le_bytes(block[at..at + 8].try_into().unwrap_or([0; 8]));
        let intact = word(24) == checksum(block);
        match (intact, word(8) == self.nonce) {
            (true, true) if word(16) == expected => Seen::Own,
            (true, true) => Seen::Alias(word(16)),
            (true, false) => Seen::Foreign(Foreign::OtherRun),
            (false, _) => Seen::Foreign(Foreign::Damaged),
        }
    }
}

fn plain_kind(block: &[u8]) -> Foreign {
    if block.iter().all(|&b| b == 0) {
        Foreign::Zeros
    } else if block.iter().all(|&b| b == 0xFF) {
        Foreign::Ones
    } else {
        Foreign::Other
    }
}

/// A 64-bit hash of the block with the checksum field left out.
fn checksum(block: &[u8]) -> u64 {
    let mut h: u64 = 0x9E37_79B9_7F4A_7C15;
    for (i, word) in block.chunks_exact(8).enumerate() {
        if i == 3 {
            continue;
        }
        let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
        h = (h ^ w).wrapping_mul(0x100_0000_01B3).rotate_left(29) ^ (i as u64);
    }
    mix(h)
}

fn seed(nonce: u64, offset: u64) -> u64 {
    mix(nonce ^ mix(offset.wrapping_add(0x632B_E59B_D9B4_E019)))
}

/// splitmix64's step: a fast, well-spread sequence from any seed.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    mix(*state)
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A fresh nonce from the kernel's random source (`getrandom(2)`, then
/// `/dev/urandom`): nobody can guess it and plant blocks that pass for the
/// run's own, which a replay would overwrite. Only a system with neither
/// (no Linux since 3.17) falls back to time and process id through the
/// mixer, which still tells two runs apart.
pub fn fresh_nonce() -> u64 {
    let mut bytes = [0u8; 8];
    if kernel_random(&mut bytes) || urandom(&mut bytes) {
        return u64::from_le_bytes(bytes);
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    mix(now as u64 ^ ((std::process::id() as u64) << 32) ^ (now >> 64) as u64)
}

/// Fills `buf` from `getrandom(2)` (blocking only until the kernel's pool
/// is first seeded, at boot).
fn kernel_random(buf: &mut [u8; 8]) -> bool {
    loop {
        // SAFETY: the pointer and length describe `buf`, a live, writable
        // array of exactly that many bytes, which the call fills at most.
        let got = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
        match got {
            8 => return true,
            -1 if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => continue,
            // Requests of up to 256 bytes are never cut short once the pool
            // is ready; anything else is a kernel without the call.
            _ => return false,
        }
    }
}

fn urandom(buf: &mut [u8; 8]) -> bool {
    use std::io::Read;
    std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(buf)).is_ok()
}

/// The same mixer, for callers that need a reproducible shuffle.
pub fn hash64(x: u64) -> u64 {
    mix(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_knows_itself() {
        let stamp = Stamp::new(42);
        let mut block = vec![0u8; 4096];
        stamp.fill(1 << 20, &mut block);
        assert_eq!(stamp.check(1 << 20, &block), Seen::Own);
        assert_eq!(stamp.check(2 << 20, &block), Seen::Alias(1 << 20));
        assert_eq!(Stamp::new(43).check(1 << 20, &block), Seen::Foreign(Foreign::OtherRun));
        block[100] ^= 1;
        assert_eq!(stamp.check(1 << 20, &block), Seen::Foreign(Foreign::Damaged));
    }

    #[test]
    fn foreign_content_is_named() {
        let stamp = Stamp::new(7);
        assert_eq!(stamp.check(0, &[0u8; 512]), Seen::Foreign(Foreign::Zeros));
        assert_eq!(stamp.check(0, &[0xFFu8; 512]), Seen::Foreign(Foreign::Ones));
        assert_eq!(stamp.check(0, &[0x5Au8; 512]), Seen::Foreign(Foreign::Other));
    }

    #[test]
    fn blocks_differ_by_offset_and_run() {
        let mut a = vec![0u8; 512];
        let mut b = vec![0u8; 512];
        Stamp::new(1).fill(0, &mut a);
        Stamp::new(1).fill(512, &mut b);
        assert_ne!(a[HEADER..], b[HEADER..]);
        Stamp::new(2).fill(0, &mut b);
        assert_ne!(a[HEADER..], b[HEADER..]);
    }

    #[test]
    fn runs_fill_consecutive_offsets() {
        let stamp = Stamp::new(9);
        let mut buf = vec![0u8; 4 * 4096];
        stamp.fill_run(8192, 4096, &mut buf);
        for (i, block) in buf.chunks_exact(4096).enumerate() {
            assert_eq!(stamp.check(8192 + i as u64 * 4096, block), Seen::Own);
        }
    }
}
