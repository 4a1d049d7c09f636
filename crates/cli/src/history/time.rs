//! RFC 3339 times in UTC, to the second, as history lines carry them
//! (`2026-12-03T22:30:00Z`), and back to Unix seconds.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::upload::retry::{civil_from_days, days_from_civil};

/// `2026-12-03T22:30:00Z`.
pub fn rfc3339(now: SystemTime) -> String {
    from_unix(now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0))
}

pub fn from_unix(secs: i64) -> String {
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let t = secs.rem_euclid(86_400);
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", t / 3600, t / 60 % 60, t % 60)
}

/// The date of Unix day `day`: `2026-12-03`.
pub fn date(day: i64) -> String {
    let (y, m, d) = civil_from_days(day);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Unix seconds of an RFC 3339 time: UTC (`Z`) or with an offset
/// (`+01:00`), fractions of a second dropped.
pub fn parse(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = rest[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    Some(days_from_civil(year, month as u32, day as u32) * 86_400 + h * 3600 + mi * 60 + s - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        assert_eq!(from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse("2026-12-03T22:30:05Z"), Some(1_796_337_005));
        assert_eq!(from_unix(1_796_337_005), "2026-12-03T22:30:05Z");
        assert_eq!(parse("2026-12-03T23:30:05.25+01:00"), Some(1_796_337_005));
        assert_eq!(date(1_796_337_005 / 86_400), "2026-12-03");
        for bad in ["", "2026-12-03", "2026-13-03T00:00:00Z", "2026-12-03T00:00:00", "2026-12-03T00:00:00+x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
