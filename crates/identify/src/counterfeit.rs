//! Counterfeit evidence in SD registers: rules with a weight and a public
//! source, checked against every fixture (see `tests/fixtures/README.md`).

use storage_scoring::schema::{Hint, SdCid, SdCsd};

use crate::sd::{CSD2_MAX_C_SIZE, CSD2_MIN_C_SIZE, SDXC_MIN_C_SIZE};
use storage_platform::clock::ClockReading;

/// OEM IDs that name one brand's own cards, with that brand's MID. A CID
/// that carries the OID under another MID imitates the brand: SanDisk ships
/// "SD" under 0x03, Samsung "SM" under 0x1b, Kingston "42" under 0x41.
const BRAND_OIDS: [(&str, u8, &str); 3] = [("SD", 0x03, "SanDisk"), ("SM", 0x1b, "Samsung"), ("42", 0x41, "Kingston")];

/// Months of slack before a manufacturing date counts as in the future: a
/// card made this month may carry next month's date, and a clock synced by
/// NTP can still be a few weeks off after a long offline stretch.
const FUTURE_SLACK_MONTHS: u64 = 12;

/// Weight of a hint that no card made to the specification by a licensed
/// maker shows.
pub const STRONG: &str = "strong";
/// Weight of a hint that fakes show and a genuine card could show too.
pub const WEAK: &str = "weak";

/// One counterfeit rule: its code, weight and public source. The table in
/// the closing note of issue 9 and `tests/fixtures/README.md` list them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    pub code: &'static str,
    pub weight: &'static str,
    pub source: &'static str,
}

pub const UNASSIGNED_MID: Rule = Rule {
    code: "unassigned-mid",
    weight: STRONG,
    source: "SD Physical Layer Simplified Specification 5.2 (MID is assigned by SD-3C); no table of assigned MIDs \
             (Linux card.h, mmc-utils lsmmc.c, sdinfo) lists 0x00",
};
pub const OID_MID_MISMATCH: Rule = Rule {
    code: "oid-mid-mismatch",
    weight: STRONG,
    source: "SD spec 5.2 (OID is assigned by SD-3C with the MID); SanDisk \"SD\"/0x03, Samsung \"SM\"/0x1b, \
             Kingston \"42\"/0x41 in sdinfo's table and in the fixtures' genuine cards",
};
pub const INVALID_DATE: Rule =
    Rule { code: "invalid-date", weight: STRONG, source: "SD spec 5.2, MDT: the month field is 1 to 12" };
pub const FUTURE_DATE: Rule = Rule {
    code: "future-date",
    weight: WEAK,
    source: "SD spec 5.2, MDT; only with a clock adjtimex reports synchronised, and a year of slack",
};
pub const DATE_BEFORE_FORMAT: Rule = Rule {
    code: "date-before-format",
    weight: STRONG,
    source: "SD Physical Layer spec history: SDHC (CSD 2.0) from version 2.00 (2006), SDXC from 3.00 (2009), \
             SDUC from 7.0 (2018)",
};
pub const CSD_INVALID: Rule = Rule {
    code: "csd-invalid",
    weight: STRONG,
    source: "SD spec 5.3: CSD 1.0 READ_BL_LEN is 9, 10 or 11; CSD 2.0 C_SIZE lies in 0x001010..=0x3FFEFF",
};

/// Every counterfeit rule, in the order they are checked.
pub const RULES: [Rule; 6] =
    [UNASSIGNED_MID, OID_MID_MISMATCH, INVALID_DATE, FUTURE_DATE, DATE_BEFORE_FORMAT, CSD_INVALID];

/// Whether a CID carries the placeholder product name of white-label
/// firmware (`00000` or blank). Not a hint: Samsung's own OEM cards carry
/// 0x1b/"SM"/"00000" (the Raspberry Pi-branded card among them, CIDs in
/// sdinfo's table), and store brands such as Gigastone ship it too.
pub fn placeholder_name(cid: &SdCid) -> bool {
    let name = cid.product_name.trim();
    name.is_empty() || name == "00000"
}

/// Evidence in the registers that a card is not what its label says: a
/// counterfeit, a relabelled generic card, or a forged CSD. Each hint says
/// why it was raised, how much it weighs and which public source it rests
/// on (see [`RULES`]); none fires on a genuine card of the fixture set.
///
/// `clock` bounds the manufacturing date: a date in the future is only
/// evidence when the clock is known to be synchronised (a Pi before the 5
/// has no RTC and an offline boot restores an old time), and then only more
/// than [`FUTURE_SLACK_MONTHS`] ahead.
///
/// MID 0x12 with OID "4V" is deliberately not flagged: Linux lists 0x12 as
/// Gigastone (`CID_MANFID_GIGASTONE`) from a genuine card. A placeholder
/// product name is not flagged either (see [`placeholder_name`]).
pub fn counterfeit_hints(cid: Option<&SdCid>, csd: Option<&SdCsd>, clock: &ClockReading) -> Vec<Hint> {
    let mut hints = Vec::new();
    let mut hint = |rule: Rule, message: String| {
        hints.push(Hint {
            code: rule.code.to_owned(),
            message,
            weight: rule.weight.to_owned(),
            source: rule.source.to_owned(),
        })
    };
    let date = cid.and_then(|c| parse_date(&c.manufactured));

    if let Some(cid) = cid {
        if cid.manufacturer_id == 0 {
            hint(
                UNASSIGNED_MID,
                "The card's manufacturer ID is 0x00, which the SD Association never assigns: its identity was not \
                 programmed by a licensed maker, as is usual for no-name and counterfeit cards."
                    .to_owned(),
            );
        }
        for (oid, mid, brand) in BRAND_OIDS {
            if cid.oem_id == oid && cid.manufacturer_id != mid {
                hint(
                    OID_MID_MISMATCH,
                    format!(
                        "The OEM ID \"{oid}\" is {brand}'s (manufacturer ID 0x{mid:02x}), but this card's manufacturer \
                         ID is 0x{:02x}: its identity imitates a {brand} card.",
                        cid.manufacturer_id
                    ),
                );
            }
        }
        match date {
            Some((_, month)) if month == 0 || month > 12 => hint(
                INVALID_DATE,
                format!(
                    "The manufacturing date {} has no valid month, so it was not set by a real production line.",
                    cid.manufactured
                ),
            ),
            Some((year, month)) if clock.synchronized == Some(true) && clock.year > 0 => {
                let made = year * 12 + month;
                let now = u64::from(clock.year) * 12 + u64::from(clock.month);
                if made > now + FUTURE_SLACK_MONTHS {
                    hint(
                        FUTURE_DATE,
                        format!(
                            "The manufacturing date {} lies more than a year after today ({:04}-{:02}, from a \
                             synchronised clock), so the card's identity was not set by a real production line.",
                            cid.manufactured, clock.year, clock.month
                        ),
                    );
                }
            }
            _ => {}
        }
    }

    if let Some(csd) = csd {
        let c_size = (csd.capacity_bytes / (512 * 1024)).saturating_sub(1);
        let format_since = match csd.csd_version {
            2 if c_size >= SDXC_MIN_C_SIZE => Some(("SDXC", 2009)),
            2 => Some(("SDHC", 2006)),
            3 => Some(("SDUC", 2018)),
            _ => None,
        };
        let too_early = match (format_since, date, cid) {
            (Some((format, since)), Some((year, _)), Some(cid)) if year < since => Some((format, since, cid)),
            _ => None,
        };
        if let Some((format, since, cid)) = too_early {
            hint(
                DATE_BEFORE_FORMAT,
                format!(
                    "The card says it was made in {}, but {format} cards only exist since {since}: its \
                     identity or its capacity is forged.",
                    cid.manufactured
                ),
            );
        }
        match csd.csd_version {
            1 if !matches!(csd.read_block_len, 512 | 1024 | 2048) => hint(
                CSD_INVALID,
                format!(
                    "The CSD 1.0 block length of {} bytes is not one an SD card may use, so its capacity of {} bytes is \
                     forged.",
                    csd.read_block_len, csd.capacity_bytes
                ),
            ),
            2 if !(CSD2_MIN_C_SIZE..=CSD2_MAX_C_SIZE).contains(&c_size) => hint(
                CSD_INVALID,
                format!(
                    "The CSD 2.0 capacity of {} bytes lies outside the SDHC/SDXC range (2 GB to 2 TB), so the CSD is \
                     forged or corrupt.",
                    csd.capacity_bytes
                ),
            ),
            _ => {}
        }
    }
    hints
}

/// `YYYY-MM` as (year, month).
fn parse_date(text: &str) -> Option<(u64, u64)> {
    let (year, month) = text.split_once('-')?;
    Some((year.parse().ok()?, month.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sd::{decode_cid, decode_csd};

    const SYNCED_2026: ClockReading = ClockReading { year: 2026, month: 11, synchronized: Some(true) };

    fn codes(hints: &[Hint]) -> Vec<&str> {
        hints.iter().map(|h| h.code.as_str()).collect()
    }

    #[test]
    fn hints_on_generic_cards() {
        // Fixture 05: MID 0x00 with Kingston's OID "42".
        let cid = decode_cid("003432534431364720000003fb0192d5").unwrap();
        let csd = decode_csd("400e00325b590000770b7f800a40004f").unwrap();
        assert_eq!(
            codes(&counterfeit_hints(Some(&cid), Some(&csd), &SYNCED_2026)),
            ["unassigned-mid", "oid-mid-mismatch"]
        );
        let hints = counterfeit_hints(Some(&cid), Some(&csd), &SYNCED_2026);
        assert!(hints.iter().all(|h| h.weight == STRONG && !h.source.is_empty()));
        // Samsung's own OEM cards: MID 0x1b, OID "SM", name "00000" (the
        // Raspberry Pi-branded card). A placeholder name is no hint.
        let cid = decode_cid("1b534d3030303030100337410200d13b").unwrap();
        assert!(placeholder_name(&cid));
        assert!(counterfeit_hints(Some(&cid), None, &SYNCED_2026).is_empty());
    }

    #[test]
    fn no_hints_on_genuine_cards() {
        let cid = decode_cid("035344414747434580dd1c1144011355").unwrap();
        let csd = decode_csd("400e00325b590001dbd37f800a4040df").unwrap();
        assert!(counterfeit_hints(Some(&cid), Some(&csd), &SYNCED_2026).is_empty());
        let cid = decode_cid("41343253443847423043f65dc900f4a1").unwrap();
        assert!(counterfeit_hints(Some(&cid), None, &SYNCED_2026).is_empty());
        assert!(counterfeit_hints(None, None, &SYNCED_2026).is_empty());
    }

    #[test]
    fn hints_on_impossible_dates_and_sizes() {
        // The Kingston CID made in 2023-05, checked in 2022.
        let cid = decode_cid("9f54495344363447614890060a017500").unwrap();
        let synced_2022 = ClockReading { year: 2022, month: 1, synchronized: Some(true) };
        assert_eq!(codes(&counterfeit_hints(Some(&cid), None, &synced_2022)), ["future-date"]);
        let unsynced = ClockReading { synchronized: Some(false), ..synced_2022 };
        assert!(counterfeit_hints(Some(&cid), None, &unsynced).is_empty());
        // Month 0, and an SDXC capacity (64 GB) dated 2005.
        let cid = decode_cid("9f54495344363447614890060a005000").unwrap();
        let csd = decode_csd("400e00325b590001cf9f7f800a400000").unwrap();
        assert_eq!(
            codes(&counterfeit_hints(Some(&cid), Some(&csd), &SYNCED_2026)),
            ["invalid-date", "date-before-format"]
        );
        // CSD 2.0 describing 1 GB.
        let csd = decode_csd("400e00325b59000007ff7f800a400000").unwrap();
        assert_eq!(codes(&counterfeit_hints(None, Some(&csd), &SYNCED_2026)), ["csd-invalid"]);
        // CSD 1.0 with a 32 KiB block length: 64 GB claimed.
        let csd = decode_csd("002600325f5f83aefefbcfff928040de").unwrap();
        assert_eq!(codes(&counterfeit_hints(None, Some(&csd), &SYNCED_2026)), ["csd-invalid"]);
    }
}
