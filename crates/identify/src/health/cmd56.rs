//! SD card vendor health: the 512-byte block some cards return to CMD56
//! (GEN_CMD) in read mode, decoded for the vendor layouts that are public.
//!
//! The SD specification reserves CMD56 for vendors and defines no content,
//! so each layout is the vendor's. The layouts, the arguments that ask for
//! them and the two signature bytes that identify them are those sdmon
//! documents (github.com/Ognian/sdmon, `src/sdmon.c`), itself taken from the
//! vendors' application notes:
//!
//! | layout | argument | signature | life field |
//! |---|---|---|---|
//! | SanDisk / WD (industrial, WD Purple) | `0x00000001` | `DS`, `DW` | byte 8: % used, 1% steps (0x01 = 0-0.99%) |
//! | Longsys | `0x00000001` | `pX` | bytes 44-47 LE: % of life remaining |
//! | Swissbit | `0x53420001` | `Sw` | byte 80: % of life remaining |
//! | Transcend | `0x110005F9` | `Tr` | byte 70: % of life remaining |
//! | ADATA (Silicon Motion SM27xx) | `0x110005F1` | `0x09 A` | byte 70: % of life remaining |
//!
//! A card that does not implement the command may still answer it with
//! something else (a no-name card answered with its first sector, a boot
//! sector, in sdmon's issue 18), so a block counts only when its signature
//! and its fields are both plausible.
//!
//! Apacer and Kingston industrial cards need a CMD56 *write* of a command
//! block first (sdmon's "2step"); `doctor` writes nothing to a card, so
//! that layout is not read.

use storage_scoring::health::{Cmd56Format, Health, HealthSource, HealthStatus};

/// Bytes of the block.
pub const BLOCK: usize = 512;

/// One CMD56 read to send: the argument and the layout it asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Query {
    pub arg: u32,
    pub asks_for: Cmd56Format,
}

const SANDISK_OR_LONGSYS: Query = Query { arg: 0x0000_0001, asks_for: Cmd56Format::Sandisk };
const SWISSBIT: Query = Query { arg: 0x5342_0001, asks_for: Cmd56Format::Swissbit };
const TRANSCEND: Query = Query { arg: 0x1100_05f9, asks_for: Cmd56Format::Transcend };
const ADATA: Query = Query { arg: 0x1100_05f1, asks_for: Cmd56Format::Adata };

/// The queries worth sending to a card with manufacturer ID `mid`: only the
/// vendor's own. A card that does not know a vendor command may take a
/// timeout over it, so no card is sent another vendor's.
pub fn queries_for(mid: u8) -> &'static [Query] {
    match mid {
        // SanDisk (WD Purple cards carry SanDisk's MID too).
        0x03 => &[SANDISK_OR_LONGSYS],
        // Longsys (Lexar), whose layout answers the same argument.
        0xad => &[SANDISK_OR_LONGSYS],
        0x5d => &[SWISSBIT],
        0x1c | 0x1e | 0x74 => &[TRANSCEND],
        0x1d => &[ADATA],
        _ => &[],
    }
}

/// A decoded block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    pub format: Cmd56Format,
    /// Percent of the rated life used, as a band [low, high].
    pub used_range: Option<[u16; 2]>,
    /// Percent of life used, from a "remaining" field (100 − remaining).
    pub used: Option<u16>,
    pub power_cycles: Option<u64>,
    pub unsafe_shutdowns: Option<u64>,
    pub grown_bad_blocks: Option<u64>,
    pub spare_blocks: Option<u64>,
    pub average_erase_count: Option<u64>,
    pub data_written_bytes: Option<u64>,
    /// SanDisk: the manufacturing date the block carries, `20YY-MM-DD`.
    pub manufactured: Option<String>,
}

/// Why a block is not a health block.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Cmd56Error {
    #[error("the card returned {got} bytes, not 512")]
    Short { got: usize },
    #[error("the card returned a block of {0:#04x} bytes only: no health data")]
    Blank(u8),
    #[error(
        "the card answered with a data sector (it ends in the boot signature 55 AA), not a health block: it does not implement a health query"
    )]
    DataSector,
    #[error("the block's signature {0:02x} {1:02x} is not a health layout this tool knows")]
    Unrecognised(u8, u8),
    #[error("the block carries the {format} signature but its fields are not plausible ({1})", format = .0.as_str())]
    Implausible(Cmd56Format, &'static str),
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(x)
}

fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([b[at], b[at + 1]])
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn empty(format: Cmd56Format) -> Decoded {
    Decoded {
        format,
        used_range: None,
        used: None,
        power_cycles: None,
        unsafe_shutdowns: None,
        grown_bad_blocks: None,
        spare_blocks: None,
        average_erase_count: None,
        data_written_bytes: None,
        manufactured: None,
    }
}

/// A "remaining life" percentage as percent used; past 100 is not a percentage.
fn used_from_remaining(remaining: u32, format: Cmd56Format) -> Result<Option<u16>, Cmd56Error> {
    if remaining > 100 {
        return Err(Cmd56Error::Implausible(format, "remaining life above 100%"));
    }
    Ok(Some(100 - remaining as u16))
}

/// Decodes a block whatever query it answered, by its signature.
pub fn decode(b: &[u8]) -> Result<Decoded, Cmd56Error> {
    if b.len() < BLOCK {
        return Err(Cmd56Error::Short { got: b.len() });
    }
    let b = &b[..BLOCK];
    for blank in [0x00, 0xff] {
        if b.iter().all(|&x| x == blank) {
            return Err(Cmd56Error::Blank(blank));
        }
    }
    match (b[0], b[1]) {
        (0x44, 0x53 | 0x57) => sandisk(b),
        (0x70, 0x58) => longsys(b),
        (0x53, 0x77) => {
            let mut d = empty(Cmd56Format::Swissbit);
            d.used = used_from_remaining(u32::from(b[80]), Cmd56Format::Swissbit)?;
            Ok(d)
        }
        (0x54, 0x72) => {
            let mut d = empty(Cmd56Format::Transcend);
            d.used = used_from_remaining(u32::from(b[70]), Cmd56Format::Transcend)?;
            d.grown_bad_blocks = Some(u64::from(b[26]));
            d.spare_blocks = Some(u64::from(b[27]));
            d.unsafe_shutdowns = Some(u64::from(le32(b, 28)));
            d.average_erase_count = Some(u64::from(le32(b, 44)));
            d.power_cycles = Some(u64::from(be16(b, 76)));
            Ok(d)
        }
        (0x09, 0x41) => {
            let mut d = empty(Cmd56Format::Adata);
            d.used = used_from_remaining(u32::from(b[70]), Cmd56Format::Adata)?;
            d.grown_bad_blocks = Some(u64::from(b[26]));
            d.spare_blocks = Some(u64::from(be16(b, 30)));
            d.average_erase_count = Some(u64::from(be32(b, 44)));
            d.power_cycles = Some(u64::from(be32(b, 76)));
            Ok(d)
        }
        _ if b[510] == 0x55 && b[511] == 0xaa => Err(Cmd56Error::DataSector),
        (x, y) => Err(Cmd56Error::Unrecognised(x, y)),
    }
}

fn sandisk(b: &[u8]) -> Result<Decoded, Cmd56Error> {
    let date = &b[2..8];
    if !date.iter().all(u8::is_ascii_digit) {
        return Err(Cmd56Error::Implausible(Cmd56Format::Sandisk, "the manufacturing date is not YYMMDD"));
    }
    let digits = |r: std::ops::Range<usize>| date[r].iter().fold(0u32, |v, d| v * 10 + u32::from(d - b'0'));
    let (month, day) = (digits(2..4), digits(4..6));
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(Cmd56Error::Implausible(Cmd56Format::Sandisk, "the manufacturing date is not a date"));
    }
    let mut d = empty(Cmd56Format::Sandisk);
    d.manufactured = Some(format!("20{:02}-{month:02}-{day:02}", digits(0..2)));
    // 0x01 stands for 0-0.99% used, 0x64 for 99-99.99%, and on past 100%.
    d.used_range = match b[8] {
        0 => None,
        v => Some([u16::from(v) - 1, u16::from(v)]),
    };
    let power_on = u32::from_be_bytes([0, b[24], b[25], b[26]]);
    d.power_cycles = (power_on > 0).then_some(u64::from(power_on));
    Ok(d)
}

fn longsys(b: &[u8]) -> Result<Decoded, Cmd56Error> {
    let mut d = empty(Cmd56Format::Longsys);
    d.used = used_from_remaining(le32(b, 44), Cmd56Format::Longsys)?;
    d.grown_bad_blocks = Some(u64::from(le32(b, 20)));
    d.spare_blocks = Some(u64::from(le32(b, 32)));
    d.data_written_bytes = le64(b, 24).checked_mul(512);
    Ok(d)
}

/// The report's `health` from a decoded block.
pub fn health(d: &Decoded) -> Health {
    let mut notes = vec![format!(
        "from the card's vendor health block ({} layout, CMD56); the vendor defines what its figures count",
        d.format.as_str()
    )];
    if let Some(date) = &d.manufactured {
        notes.push(format!("the block gives the card's manufacturing date as {date}"));
    }
    // A band counts as past the rated life only when all of it is.
    let least = d.used.or(d.used_range.map(|[lo, _]| lo));
    let most = d.used.or(d.used_range.map(|[_, hi]| hi));
    let status = if least.is_some_and(|u| u >= 100) {
        notes.push("the card reports its rated life used up: it may turn read-only on a coming write".to_owned());
        HealthStatus::Failing
    } else if let Some(u) = most.filter(|&u| u >= 90) {
        notes.push(format!("up to {u}% of the card's rated life is used: plan a replacement"));
        HealthStatus::Warn
    } else {
        HealthStatus::Ok
    };
    Health {
        source: Some(HealthSource::SdCmd56),
        format: Some(d.format),
        status: Some(status),
        percentage_used: d.used,
        percentage_used_range: d.used_range,
        power_cycles: d.power_cycles,
        unsafe_shutdowns: d.unsafe_shutdowns,
        grown_bad_blocks: d.grown_bad_blocks,
        spare_blocks: d.spare_blocks,
        average_erase_count: d.average_erase_count,
        data_written_bytes: d.data_written_bytes,
        notes,
        ..Health::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_vendors_own_query_goes_to_a_card() {
        assert_eq!(queries_for(0x03), [SANDISK_OR_LONGSYS]);
        assert_eq!(queries_for(0x74), [TRANSCEND]);
        assert!(queries_for(0x1b).is_empty(), "Samsung publishes no layout");
        assert!(queries_for(0x9f).is_empty(), "Kingston's needs a write first");
    }

    #[test]
    fn short_blank_and_unknown_blocks_are_refused() {
        assert_eq!(decode(&[0x44; 10]), Err(Cmd56Error::Short { got: 10 }));
        assert_eq!(decode(&[0u8; 512]), Err(Cmd56Error::Blank(0)));
        assert_eq!(decode(&[0xffu8; 512]), Err(Cmd56Error::Blank(0xff)));
        let mut b = [0x11u8; 512];
        assert_eq!(decode(&b), Err(Cmd56Error::Unrecognised(0x11, 0x11)));
        b[..2].copy_from_slice(b"DS");
        assert!(matches!(decode(&b), Err(Cmd56Error::Implausible(Cmd56Format::Sandisk, _))));
        b[..2].copy_from_slice(&[0x54, 0x72]);
        b[70] = 101;
        assert!(matches!(decode(&b), Err(Cmd56Error::Implausible(Cmd56Format::Transcend, _))));
    }
}
