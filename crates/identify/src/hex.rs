//! Register text as the kernel prints it, turned into bytes, and the error
//! every register decoder returns.
//!
//! sysfs prints SD/MMC registers as plain lower-case hex with no separators
//! (`cid`, `csd`, `scr`, `ssr`), the OCR as `0x%08x`, and debugfs prints
//! EXT_CSD as 1024 hex digits. All of them end in a newline.

use thiserror::Error;

/// Why a register could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The text holds a character that is not a hex digit.
    #[error("'{ch}' at position {position} is not a hex digit")]
    NotHex { ch: char, position: usize },
    /// The text holds the wrong number of hex digits.
    #[error("expected {expected} hex digits, got {got}")]
    WrongLength { expected: usize, got: usize },
    /// A field holds a value the specification reserves or forbids.
    #[error("{register} {field} = {value} is reserved or invalid")]
    Reserved { register: &'static str, field: &'static str, value: u64 },
}

/// Parses a register printed as hex into exactly `bytes` bytes.
///
/// Leading and trailing whitespace (the newline sysfs appends) and an
/// optional `0x`/`0X` prefix are ignored. Anything else that is not a hex
/// digit, and any length other than `2 * bytes` digits, is an error.
pub fn parse_register(text: &str, bytes: usize) -> Result<Vec<u8>, DecodeError> {
    let trimmed = text.trim();
    let digits = trimmed.strip_prefix("0x").or_else(|| trimmed.strip_prefix("0X")).unwrap_or(trimmed);
    let expected = bytes.saturating_mul(2);
    let mut nibbles = Vec::with_capacity(expected);
    for (position, ch) in digits.chars().enumerate() {
        match ch.to_digit(16) {
            // A hex digit is below 16, so it fits a byte.
            Some(v) => nibbles.push(v as u8),
            None => return Err(DecodeError::NotHex { ch, position }),
        }
    }
    if nibbles.len() != expected {
        return Err(DecodeError::WrongLength { expected, got: nibbles.len() });
    }
    Ok(nibbles.chunks_exact(2).map(|pair| (pair[0] << 4) | pair[1]).collect())
}

/// Bits `hi..=lo` of a big-endian register, counted as the SD and JEDEC
/// specifications count them: bit 0 is the least significant bit of the last
/// byte. Fields wider than 64 bits are truncated; bits past the register's
/// end read as 0.
pub(crate) fn bits(reg: &[u8], hi: usize, lo: usize) -> u64 {
    let total = reg.len() * 8;
    let mut value = 0u64;
    for bit in (lo..=hi).rev() {
        let set = bit < total && reg.get(reg.len() - 1 - bit / 8).is_some_and(|byte| byte >> (bit % 8) & 1 == 1);
        value = (value << 1) | u64::from(set);
    }
    value
}

/// One bit of a big-endian register (see [`bits`]).
pub(crate) fn bit(reg: &[u8], n: usize) -> bool {
    bits(reg, n, n) == 1
}

/// Bytes as ASCII, each non-printable byte shown as `?`, with trailing NULs
/// and spaces dropped.
pub(crate) fn ascii_field(raw: &[u8]) -> String {
    let end = raw.iter().rposition(|&b| b != 0 && b != b' ').map_or(0, |i| i + 1);
    raw.iter().take(end).map(|&b| if b.is_ascii_graphic() || b == b' ' { char::from(b) } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_text() {
        assert_eq!(parse_register("0245848700000000\n", 8).unwrap(), [2, 0x45, 0x84, 0x87, 0, 0, 0, 0]);
        assert_eq!(parse_register("  0x40300000 ", 4).unwrap(), [0x40, 0x30, 0, 0]);
        assert_eq!(parse_register("0XABCDEF01", 4).unwrap(), [0xab, 0xcd, 0xef, 1]);
    }

    #[test]
    fn rejects_bad_text() {
        let e = parse_register("035344414747434580dd1c114401135", 16).unwrap_err();
        assert_eq!(e.to_string(), "expected 32 hex digits, got 31");
        assert_eq!(parse_register("", 4).unwrap_err(), DecodeError::WrongLength { expected: 8, got: 0 });
        assert_eq!(parse_register("0x", 1).unwrap_err(), DecodeError::WrongLength { expected: 2, got: 0 });
        assert_eq!(parse_register("12g4", 2).unwrap_err(), DecodeError::NotHex { ch: 'g', position: 2 });
        assert!(matches!(parse_register("12 34", 2), Err(DecodeError::NotHex { ch: ' ', .. })));
        assert!(matches!(parse_register("1é", 1), Err(DecodeError::NotHex { ch: 'é', .. })));
    }

    #[test]
    fn extracts_bit_fields() {
        let reg = [0x02, 0x45, 0x84, 0x87, 0, 0, 0, 0];
        assert_eq!(bits(&reg, 63, 60), 0);
        assert_eq!(bits(&reg, 59, 56), 2);
        assert_eq!(bits(&reg, 51, 48), 5);
        assert_eq!(bits(&reg, 41, 38), 2);
        assert!(bit(&reg, 47));
        assert_eq!(bits(&reg, 70, 60), 0);
        assert_eq!(bits(&[], 3, 0), 0);
    }

    #[test]
    fn ascii_fields() {
        assert_eq!(ascii_field(b"SD64G"), "SD64G");
        assert_eq!(ascii_field(b"ASTC\0"), "ASTC");
        assert_eq!(ascii_field(b"A\x01C  "), "A?C");
        assert_eq!(ascii_field(b"\0\0\0"), "");
    }
}
