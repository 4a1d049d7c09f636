//! The batch's summary (docs/batch.md#summary), pure: counts; per figure
//! the median and the median absolute deviation; the outliers by robust
//! z-score; cards whose CIDs are identical (cloned registers); and products
//! whose cards differ in maker, OEM or date (mixed stock).
//!
//! It reads the cards before their serials are hashed: a clone is two
//! cards whose whole CID, serial included, is the same.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::{Card, Status};
use crate::schema::Device;
use crate::stats;

/// A robust z-score beyond this is an outlier (Iglewicz and Hoaglin's cut).
pub const OUTLIER_Z: f64 = 3.5;

/// The summary block of a batch report.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Summary {
    pub counts: Counts,
    /// Per measurement key: how many cards have it, their median and MAD.
    pub figures: BTreeMap<String, Spread>,
    pub outliers: Vec<Outlier>,
    /// Groups of cards with one and the same CID.
    pub clones: Vec<Clones>,
    pub mixed_stock: Vec<MixedStock>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Counts {
    pub cards: usize,
    pub pass: usize,
    pub fail: usize,
    pub fake: usize,
    pub refused: usize,
    pub error: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Outlier {
    pub target: String,
    pub figure: String,
    pub value: f64,
    /// The robust z-score: negative is slower (or fewer) than the batch.
    pub z: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Clones {
    /// The CID's product name.
    pub product: String,
    pub targets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MixedStock {
    pub product: String,
    pub targets: Vec<String>,
    /// Which fields differ: `manufacturer_id`, `oem_id`, `manufactured`.
    pub differs: Vec<String>,
    /// The values seen, per field that differs (`"manufacturer_id": ["0x03", "0x1b"]`).
    pub values: BTreeMap<String, Vec<String>>,
}

/// The summary of `cards`.
pub fn summarize(cards: &[Card]) -> Summary {
    let mut counts = Counts { cards: cards.len(), ..Counts::default() };
    for card in cards {
        match card.status {
            Status::Pass => counts.pass += 1,
            Status::Fail => counts.fail += 1,
            Status::Fake => counts.fake += 1,
            Status::Refused => counts.refused += 1,
            Status::Error => counts.error += 1,
        }
    }
    let (figures, outliers) = spreads(cards);
    Summary { counts, figures, outliers, clones: clones(cards), mixed_stock: mixed_stock(cards) }
}

fn spreads(cards: &[Card]) -> (BTreeMap<String, Spread>, Vec<Outlier>) {
    let keys: BTreeSet<&String> = cards.iter().flat_map(|c| c.figures.keys()).collect();
    let mut figures = BTreeMap::new();
    let mut outliers = Vec::new();
    for key in keys {
        let measured: Vec<(&str, f64)> = cards
            .iter()
            .filter_map(|c| c.figures.get(key).filter(|v| v.is_finite()).map(|v| (c.target.as_str(), *v)))
            .collect();
        let values: Vec<f64> = measured.iter().map(|(_, v)| *v).collect();
        let (Some(median), Some(mad)) = (stats::median(&values), stats::mad(&values)) else { continue };
        figures.insert(key.clone(), Spread { n: values.len(), median, mad });
        for (z, (target, value)) in stats::robust_z(&values).unwrap_or_default().into_iter().zip(&measured) {
            if z.abs() > OUTLIER_Z {
                outliers.push(Outlier { target: (*target).to_owned(), figure: key.clone(), value: *value, z });
            }
        }
    }
    (figures, outliers)
}

/// The card's CID fields: product, MID, OID, date, and the raw register.
struct Cid {
    product: String,
    mid: u8,
    oid: String,
    date: String,
    raw: Option<String>,
}

fn cid(device: &Device) -> Option<Cid> {
    if let Some(sd) = device.sd.as_ref() {
        let c = sd.cid.as_ref()?;
        let raw = sd.registers.get("cid").map(|r| r.trim().to_ascii_lowercase());
        return Some(Cid {
            product: c.product_name.clone(),
            mid: c.manufacturer_id,
            oid: c.oem_id.clone(),
            date: c.manufactured.clone(),
            raw,
        });
    }
    let emmc = device.emmc.as_ref()?;
    let c = emmc.cid.as_ref()?;
    Some(Cid {
        product: c.product_name.clone(),
        mid: c.manufacturer_id,
        oid: c.oem_id.clone(),
        date: c.manufactured.clone(),
        raw: emmc.registers.get("cid").map(|r| r.trim().to_ascii_lowercase()),
    })
}

/// Cards whose raw CIDs are equal: the CID holds a serial number, so two
/// real cards never share one; a copied register does.
fn clones(cards: &[Card]) -> Vec<Clones> {
    let mut by_raw: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for card in cards {
        let Some(c) = card.device.as_ref().and_then(cid) else { continue };
        let Some(raw) = c.raw.filter(|r| !r.is_empty()) else { continue };
        by_raw.entry(raw).or_insert_with(|| (c.product.clone(), Vec::new())).1.push(card.target.clone());
    }
    by_raw
        .into_values()
        .filter(|(_, targets)| targets.len() > 1)
        .map(|(product, targets)| Clones { product, targets })
        .collect()
}

/// A CID field as text.
type Field = fn(&Cid) -> String;

/// The fields one lot of one product shares.
const STOCK_FIELDS: [(&str, Field); 3] = [
    ("manufacturer_id", |c| format!("0x{:02x}", c.mid)),
    ("oem_id", |c| c.oid.clone()),
    ("manufactured", |c| c.date.clone()),
];

/// Products (by CID name) whose cards differ in MID, OID or date: one
/// order, several sources or lots.
fn mixed_stock(cards: &[Card]) -> Vec<MixedStock> {
    let mut by_product: BTreeMap<String, Vec<(String, Cid)>> = BTreeMap::new();
    for card in cards {
        if let Some(c) = card.device.as_ref().and_then(cid) {
            by_product.entry(c.product.clone()).or_default().push((card.target.clone(), c));
        }
    }
    let mut found = Vec::new();
    for (product, group) in by_product {
        if group.len() < 2 {
            continue;
        }
        let mut mixed = MixedStock { product, ..MixedStock::default() };
        for (name, value) in STOCK_FIELDS {
            let seen: BTreeSet<String> = group.iter().map(|(_, c)| value(c)).collect();
            if seen.len() > 1 {
                mixed.differs.push(name.to_owned());
                mixed.values.insert(name.to_owned(), seen.into_iter().collect());
            }
        }
        if !mixed.differs.is_empty() {
            mixed.targets = group.into_iter().map(|(t, _)| t).collect();
            found.push(mixed);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{SdCid, SdInfo};

    fn card(target: &str, figures: &[(&str, f64)]) -> Card {
        Card {
            target: target.to_owned(),
            figures: figures.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
            ..Card::default()
        }
    }

    fn sd_card(target: &str, mid: u8, oid: &str, date: &str, raw: &str) -> Card {
        let mut info = SdInfo {
            cid: Some(SdCid {
                manufacturer_id: mid,
                oem_id: oid.to_owned(),
                product_name: "SR32G".to_owned(),
                manufactured: date.to_owned(),
                ..SdCid::default()
            }),
            ..SdInfo::default()
        };
        info.registers.insert("cid".to_owned(), raw.to_owned());
        Card {
            target: target.to_owned(),
            device: Some(Device { sd: Some(info), ..Device::default() }),
            ..card(target, &[])
        }
    }

    #[test]
    fn the_slow_card_is_the_outlier_on_its_figure() {
        let cards = [
            card("/dev/a", &[("seq_read_mib_s", 400.0), ("rand_read_4k_qd64_iops", 9000.0)]),
            card("/dev/b", &[("seq_read_mib_s", 410.0), ("rand_read_4k_qd64_iops", 9100.0)]),
            card("/dev/c", &[("seq_read_mib_s", 395.0), ("rand_read_4k_qd64_iops", 8800.0)]),
            card("/dev/slow", &[("seq_read_mib_s", 20.0), ("rand_read_4k_qd64_iops", 9050.0)]),
        ];
        let s = summarize(&cards);
        assert_eq!(s.outliers.len(), 1, "{:?}", s.outliers);
        assert_eq!((s.outliers[0].target.as_str(), s.outliers[0].figure.as_str()), ("/dev/slow", "seq_read_mib_s"));
        assert!(s.outliers[0].z < -3.5);
        let spread = s.figures["seq_read_mib_s"];
        assert_eq!((spread.n, spread.median, spread.mad), (4, 397.5, 7.5));
        assert_eq!(s.counts.pass, 4);
    }

    #[test]
    fn robust_z_matches_its_definition_and_survives_ties() {
        let z = stats::robust_z(&[10.0, 12.0, 11.0, 50.0, 11.0]).unwrap();
        // median 11, MAD median(|1,1,0,39,0|) = 1
        assert!((z[3] - 0.6745 * 39.0).abs() < 1e-9, "{z:?}");
        // More than half equal: the MAD is 0, the mean deviation stands in.
        let tied = stats::robust_z(&[5.0, 5.0, 5.0, 9.0]).unwrap();
        assert!((tied[3] - 4.0 / (1.253314 * 1.0)).abs() < 1e-9, "{tied:?}");
        assert!(stats::robust_z(&[5.0, 5.0, 5.0]).is_none() && stats::robust_z(&[1.0, 2.0]).is_none());
    }

    #[test]
    fn identical_cids_are_clones_and_differing_fields_are_mixed_stock() {
        let cids = "035344535233324780a1b2c3d4014500";
        let cards = [
            sd_card("/dev/sdb", 0x03, "SD", "2023-04", cids),
            sd_card("/dev/sdc", 0x03, "SD", "2023-04", cids),
            sd_card("/dev/sdd", 0x03, "SD", "2023-04", "035344535233324780ffffffff014500"),
            sd_card("/dev/sde", 0x1b, "SM", "2021-11", "1b534d535233324710000000010b5b00"),
        ];
        let s = summarize(&cards);
        assert_eq!(s.clones, [Clones { product: "SR32G".into(), targets: vec!["/dev/sdb".into(), "/dev/sdc".into()] }]);
        assert_eq!(s.mixed_stock.len(), 1);
        let m = &s.mixed_stock[0];
        assert_eq!(m.differs, ["manufacturer_id", "oem_id", "manufactured"]);
        assert_eq!(m.values["manufacturer_id"], ["0x03", "0x1b"]);
        assert_eq!(m.targets.len(), 4);
        // One lot of one product: neither.
        let same = summarize(&cards[..1].iter().chain(&cards[2..3]).cloned().collect::<Vec<_>>());
        assert!(same.clones.is_empty() && same.mixed_stock.is_empty());
    }

    #[test]
    fn a_batch_compares_as_samples_of_its_measured_cards() {
        use super::super::BatchReport;
        let mut cards = vec![
            card("/dev/a", &[("seq_read_mib_s", 40.0)]),
            card("/dev/b", &[("seq_read_mib_s", 44.0)]),
            card("/dev/c", &[("seq_read_mib_s", 48.0), ("seq_write_mb_s", 12.0)]),
            card("/dev/gone", &[("seq_read_mib_s", 1.0)]),
        ];
        cards[3].status = Status::Error;
        let report = BatchReport { cards, profile: "quick".into(), ..BatchReport::default() }.as_samples();
        assert_eq!(report.samples["seq_read_mib_s"].values, [40.0, 44.0, 48.0]);
        let m = report.measurements.expect("measurements");
        assert_eq!((m.get("seq_read_mib_s"), m.get("seq_write_mb_s")), (Some(44.0), Some(12.0)));
        assert_eq!(report.profile.as_deref(), Some("quick"));
    }

    #[test]
    fn exit_status_follows_the_worst_card() {
        use super::super::BatchReport;
        let with = |statuses: &[Status]| BatchReport {
            cards: statuses.iter().map(|s| Card { status: *s, ..Card::default() }).collect(),
            ..BatchReport::default()
        };
        assert_eq!(with(&[Status::Pass, Status::Pass]).exit_code(), 0);
        assert_eq!(with(&[Status::Pass, Status::Fail, Status::Fake]).exit_code(), 4);
        assert_eq!(with(&[Status::Fail, Status::Refused, Status::Error]).exit_code(), 5);
        assert_eq!(with(&[Status::Pass, Status::Error, Status::Refused]).exit_code(), 1);
        assert_eq!(with(&[Status::Pass, Status::Refused]).exit_code(), 3);
    }
}
