//! The 4 KiB record (docs/power-loss.md#the-record): pure encode and decode.
//!
//! | Bytes | Field |
//! |---|---|
//! | 0..8 | magic `SSPWRLS1` |
//! | 8..24 | run id (16 random bytes, one per run) |
//! | 24..28 | cycle, little-endian |
//! | 28..36 | sequence number, little-endian, one per record of the run |
//! | 36..44 | the record's own byte address on the device, little-endian |
//! | 44..76 | SHA-256 of the whole record with these 32 bytes zeroed |
//! | 76..4096 | filler drawn from the fields above |
//!
//! The filler differs in every 512-byte sector of every record, so a read
//! back can be compared sector by sector: a torn write shows as some
//! sectors of the new record and some of what was there before.

use sha2::{Digest, Sha256};

/// The size of a record, and of the block it fills.
pub const RECORD_BYTES: usize = 4096;
/// The grain a write can tear at: the smallest sector a card announces.
pub const SECTOR: usize = 512;
/// Sectors in a record.
pub const SECTORS: usize = RECORD_BYTES / SECTOR;

const MAGIC: &[u8; 8] = b"SSPWRLS1";
const SUM: std::ops::Range<usize> = 44..76;

/// Which record: everything its bytes are drawn from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Header {
    pub run: [u8; 16],
    pub cycle: u32,
    pub sequence: u64,
    /// Byte offset on the device; a multiple of [`RECORD_BYTES`].
    pub address: u64,
}

/// Why bytes are not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("{0} bytes, not {RECORD_BYTES}")]
    Length(usize),
    #[error("no record magic")]
    Magic,
    #[error("checksum mismatch")]
    Checksum,
}

/// The record `header` names, as the bytes written.
pub fn encode(header: &Header) -> Vec<u8> {
    let mut out = vec![0u8; RECORD_BYTES];
    encode_into(header, &mut out);
    out
}

/// [`encode`] into `out` (exactly [`RECORD_BYTES`] long, e.g. an aligned
/// buffer for O_DIRECT).
pub fn encode_into(header: &Header, out: &mut [u8]) {
    assert_eq!(out.len(), RECORD_BYTES, "a record is {RECORD_BYTES} bytes");
    out[0..8].copy_from_slice(MAGIC);
    out[8..24].copy_from_slice(&header.run);
    out[24..28].copy_from_slice(&header.cycle.to_le_bytes());
    out[28..36].copy_from_slice(&header.sequence.to_le_bytes());
    out[36..44].copy_from_slice(&header.address.to_le_bytes());
    out[SUM].fill(0);
    // splitmix64 seeded by a hash of the fields: fast, and no two records
    // (nor two sectors) alike.
    let seed = Sha256::digest(&out[..SUM.start]);
    let mut state = u64::from_le_bytes(seed[..8].try_into().unwrap_or_default());
    for chunk in out[SUM.end..].chunks_mut(8) {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
    let sum = Sha256::digest(&*out);
    out[SUM].copy_from_slice(&sum);
}

/// The header of a whole, intact record; any other bytes are refused.
pub fn decode(bytes: &[u8]) -> Result<Header, DecodeError> {
    if bytes.len() != RECORD_BYTES {
        return Err(DecodeError::Length(bytes.len()));
    }
    if &bytes[0..8] != MAGIC {
        return Err(DecodeError::Magic);
    }
    let mut hasher = Sha256::new();
    hasher.update(&bytes[..SUM.start]);
    hasher.update([0u8; 32]);
    hasher.update(&bytes[SUM.end..]);
    if hasher.finalize().as_slice() != &bytes[SUM] {
        return Err(DecodeError::Checksum);
    }
    let word = |r: std::ops::Range<usize>| {
        let mut b = [0u8; 8];
        b[..r.len()].copy_from_slice(&bytes[r]);
        u64::from_le_bytes(b)
    };
    let mut run = [0u8; 16];
    run.copy_from_slice(&bytes[8..24]);
    Ok(Header { run, cycle: word(24..28) as u32, sequence: word(28..36), address: word(36..44) })
}

/// One fingerprint per sector: what the judge compares. Two blocks agree
/// in a sector when their prints there are equal.
pub type Prints = [u64; SECTORS];

/// The sector prints of `block` (a [`RECORD_BYTES`] block).
pub fn prints(block: &[u8]) -> Prints {
    use std::hash::{Hash, Hasher};
    let mut out = [0u64; SECTORS];
    for (i, sector) in block.chunks(SECTOR).take(SECTORS).enumerate() {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        sector.hash(&mut h);
        out[i] = h.finish();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> impl Strategy<Value = Header> {
        (any::<[u8; 16]>(), any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(run, cycle, sequence, block)| Header {
            run,
            cycle,
            sequence,
            address: (block >> 12) << 12,
        })
    }

    proptest! {
        #[test]
        fn a_record_decodes_to_its_header(h in header()) {
            prop_assert_eq!(decode(&encode(&h)), Ok(h));
        }

        #[test]
        fn any_changed_byte_is_refused(h in header(), at in 0usize..RECORD_BYTES, flip in 1u8..=255) {
            let mut bytes = encode(&h);
            bytes[at] ^= flip;
            prop_assert!(decode(&bytes).is_err());
        }

        #[test]
        fn every_sector_differs_between_records(a in header(), b in header()) {
            prop_assume!(a != b);
            let (pa, pb) = (prints(&encode(&a)), prints(&encode(&b)));
            for i in 0..SECTORS {
                prop_assert_ne!(pa[i], pb[i], "sector {}", i);
            }
        }

        #[test]
        fn a_block_of_anything_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..5000)) {
            let _ = decode(&bytes);
        }
    }

    #[test]
    fn the_header_sits_where_the_layout_says() {
        let h = Header { run: [7; 16], cycle: 3, sequence: 0x0102, address: 0x5000 };
        let bytes = encode(&h);
        assert_eq!(&bytes[0..8], b"SSPWRLS1");
        assert_eq!(&bytes[8..24], &[7u8; 16]);
        assert_eq!(bytes[24], 3);
        assert_eq!(&bytes[28..30], &[2, 1]);
        assert_eq!(&bytes[36..38], &[0, 0x50]);
        assert_eq!(decode(&bytes[..100]), Err(DecodeError::Length(100)));
        assert_eq!(decode(&[0u8; RECORD_BYTES]), Err(DecodeError::Magic));
    }
}
