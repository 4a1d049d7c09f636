//! eMMC health: the life-time estimates and pre-EOL information of EXT_CSD
//! (JEDEC JESD84-B51, DEVICE_LIFE_TIME_EST_TYP_A/B, bytes 268/269, and
//! PRE_EOL_INFO, byte 267), from eMMC 5.0 on.
//!
//! Linux shows them world-readable in sysfs (`device/life_time` as
//! `0x%02x 0x%02x`, `device/pre_eol_info` as `0x%02x`, drivers/mmc/core/mmc.c),
//! so they are read there first; the debugfs EXT_CSD that identification
//! already decodes is the fallback.
//!
//! - Life time: 0x01 = 0-10% of the rated life used … 0x0A = 90-100%,
//!   0x0B = past it; 0x00 = not defined; the rest reserved. Type A and B are
//!   two kinds of memory in the device (e.g. SLC and MLC areas).
//! - Pre-EOL: 0x01 normal, 0x02 warning (80% of the reserved blocks used),
//!   0x03 urgent (90%).
//!
//! A UFS device's Health Descriptor (JESD220, bPreEOLInfo and
//! bDeviceLifeTimeEstA/B) uses the same codes, so [`estimates`] serves both
//! with each medium's own [`Wording`].

use storage_scoring::health::{Health, HealthSource, HealthStatus, PreEol};

/// `0x01 0x02` → (1, 2).
pub fn parse_life_time(text: &str) -> Option<(u8, u8)> {
    let mut words = text.split_whitespace();
    let a = parse_byte(words.next()?)?;
    let b = parse_byte(words.next()?)?;
    words.next().is_none().then_some((a, b))
}

/// `0x01` → 1 (a decimal byte is accepted too).
pub fn parse_byte(text: &str) -> Option<u8> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u8::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The band of life used that a life-time code stands for.
fn band(code: u8) -> Option<[u16; 2]> {
    match code {
        1..=10 => Some([u16::from(code - 1) * 10, u16::from(code) * 10]),
        // Past its estimated life: at least 100%.
        11 => Some([100, 100]),
        _ => None,
    }
}

fn pre_eol(code: u8) -> Option<PreEol> {
    match code {
        1 => Some(PreEol::Normal),
        2 => Some(PreEol::Warning),
        3 => Some(PreEol::Urgent),
        0 => None,
        _ => Some(PreEol::Unknown),
    }
}

/// How a medium with JEDEC life-time estimates is named in the notes.
#[derive(Debug, Clone, Copy)]
pub struct Wording {
    /// "eMMC", "UFS device".
    pub who: &'static str,
    pub source: HealthSource,
    /// The pre-EOL field's name in the medium's specification.
    pub pre_eol_field: &'static str,
    /// Why a device whose codes are all 0x00 has none.
    pub undefined: &'static str,
}

pub const EMMC: Wording = Wording {
    who: "eMMC",
    source: HealthSource::EmmcLifeTime,
    pre_eol_field: "PRE_EOL_INFO",
    undefined: "the eMMC defines no life-time estimate (they start with eMMC 5.0; the codes read 0x00, not defined)",
};

/// The report's `health` of an eMMC from the two estimates and pre-EOL, as
/// the device gives them; `where_from` names the file or register, for the notes.
pub fn health(life: Option<(u8, u8)>, pre_eol_code: Option<u8>, where_from: &str) -> Health {
    estimates(&EMMC, life, pre_eol_code, where_from)
}

/// [`health`] for any medium that gives JEDEC life-time estimates.
pub fn estimates(wording: &Wording, life: Option<(u8, u8)>, pre_eol_code: Option<u8>, where_from: &str) -> Health {
    let who = wording.who;
    let mut notes = vec![format!("from the {who}'s own estimates ({where_from})")];
    let (a, b) = life.map_or((None, None), |(a, b)| (Some(a), Some(b)));
    for (code, kind) in [(a, "A"), (b, "B")] {
        if let Some(c) = code.filter(|&c| c > 11) {
            notes.push(format!("life-time estimate type {kind} holds the reserved code {c:#04x}"));
        }
    }
    // The more worn of the two kinds of memory decides.
    let range = [a, b].into_iter().flatten().filter_map(band).max_by_key(|r| r[1]);
    let eol = pre_eol_code.and_then(pre_eol);
    if eol == Some(PreEol::Unknown) {
        notes.push(format!("{} holds the reserved code {:#04x}", wording.pre_eol_field, pre_eol_code.unwrap_or(0)));
    }
    if range.is_none() && matches!(eol, None | Some(PreEol::Unknown)) {
        let mut h = Health::none(wording.undefined);
        h.notes = notes;
        h.life_time_est_a = a;
        h.life_time_est_b = b;
        return h;
    }
    let worn = range.map_or(0, |r| r[1]);
    let status = if eol == Some(PreEol::Urgent) || worn > 100 || a == Some(11) || b == Some(11) {
        notes.push(format!("the {who} reports its life used up or its reserve nearly gone: copy off what matters"));
        HealthStatus::Failing
    } else if eol == Some(PreEol::Warning) || worn >= 90 {
        notes.push(format!("the {who} is near the end of its rated life: plan a replacement"));
        HealthStatus::Warn
    } else {
        HealthStatus::Ok
    };
    Health {
        source: Some(wording.source),
        status: Some(status),
        percentage_used_range: range,
        life_time_est_a: a,
        life_time_est_b: b,
        pre_eol: eol,
        notes,
        ..Health::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_text() {
        assert_eq!(parse_life_time("0x01 0x02\n"), Some((1, 2)));
        assert_eq!(parse_life_time("0x01"), None);
        assert_eq!(parse_life_time("0x01 0x02 0x03"), None);
        assert_eq!(parse_life_time("0xzz 0x01"), None);
        assert_eq!(parse_byte("0x03\n"), Some(3));
        assert_eq!(parse_byte("0x100"), None);
    }

    #[test]
    fn bands_and_status() {
        let h = health(Some((1, 2)), Some(1), "sysfs");
        assert_eq!(h.percentage_used_range, Some([10, 20]));
        assert_eq!((h.status, h.pre_eol), (Some(HealthStatus::Ok), Some(PreEol::Normal)));
        assert_eq!(health(Some((10, 1)), Some(1), "x").status, Some(HealthStatus::Warn));
        assert_eq!(health(Some((1, 1)), Some(2), "x").status, Some(HealthStatus::Warn));
        assert_eq!(health(Some((11, 1)), Some(1), "x").status, Some(HealthStatus::Failing));
        assert_eq!(health(Some((1, 1)), Some(3), "x").status, Some(HealthStatus::Failing));
    }

    #[test]
    fn undefined_codes_are_no_source() {
        let h = health(Some((0, 0)), Some(0), "x");
        assert_eq!(h.source, None);
        assert!(h.why.is_some());
        let h = health(Some((0xee, 0)), Some(0x7f), "x");
        assert_eq!(h.source, None);
        assert_eq!(h.notes.len(), 3);
    }
}
