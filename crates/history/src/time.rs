//! RFC 3339 times in UTC, to the second, as history lines carry them
//! (`2026-12-03T22:30:00Z`), and back to Unix seconds.

use std::time::{SystemTime, UNIX_EPOCH};

use ::time::format_description::well_known::Rfc3339;
use ::time::macros::format_description;
use ::time::{OffsetDateTime, PrimitiveDateTime};

/// `2026-12-03T22:30:00Z`.
pub fn rfc3339(now: SystemTime) -> String {
    from_unix(now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0))
}

pub fn from_unix(secs: i64) -> String {
    utc(secs).format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z")).unwrap_or_default()
}

/// The date of Unix day `day`: `2026-12-03`.
pub fn date(day: i64) -> String {
    utc(day.saturating_mul(86_400)).date().to_string()
}

/// `20261101-173605` (UTC), for names of files kept.
pub fn compact(now: SystemTime) -> String {
    let secs = now.duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    utc(secs).format(format_description!("[year][month][day]-[hour][minute][second]")).unwrap_or_default()
}

/// Unix seconds of an RFC 3339 time: UTC (`Z`) or with an offset
/// (`+01:00`), fractions of a second dropped.
pub fn parse(text: &str) -> Option<i64> {
    OffsetDateTime::parse(text, &Rfc3339).ok().map(OffsetDateTime::unix_timestamp)
}

/// The instant of Unix time `secs`, or the nearest a date can hold (years
/// beyond ±9999 come only from a damaged or hostile file).
fn utc(secs: i64) -> OffsetDateTime {
    let bound = if secs < 0 { PrimitiveDateTime::MIN } else { PrimitiveDateTime::MAX };
    OffsetDateTime::from_unix_timestamp(secs).unwrap_or(bound.assume_utc())
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
        assert_eq!(compact(UNIX_EPOCH + std::time::Duration::from_secs(1_796_337_005)), "20261203-223005");
        assert_eq!(from_unix(i64::MAX), "9999-12-31T23:59:59Z");
        for bad in ["", "2026-12-03", "2026-13-03T00:00:00Z", "2026-12-03T00:00:00", "2026-12-03T00:00:00+x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
