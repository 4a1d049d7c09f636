//! Who counts, worked out the same way for both backends (pure: rows in,
//! figures out).
//!
//! - A **submitter**'s sample in a group is their own median over their
//!   counted results (a repeated report counts once: the backends pass only
//!   the first public result of each content).
//! - A **group**'s figures are nearest-rank medians (and p10, p90) over its
//!   submitters' samples: twenty results from one address move a median
//!   as far as one result does.
//! - A **card**'s display fields come only from the fields of its key and
//!   the majority of its submitters (never from the newest result). A
//!   row's marketing name is a label that at least [`LABEL_AGREEMENT`]
//!   networks with counted results in that same row typed alike, and a
//!   majority of that row's networks: votes from another row of the card
//!   (another board, no board at all) name nothing here.
//!
//! Which networks of a row count at all is [`super::held`]'s rule.
//!
//! Every reported figure is a real sample (nearest rank, never an
//! interpolation or a mean).

use std::collections::BTreeMap;
use storage_scoring::figure::{BOARD, Figure};

use super::held::counted;
use super::{Figures, Standing};
use crate::card::Card;

/// Distinct networks of a row that must agree on a label before it names
/// the row's card (and they must be a majority of the row's networks).
pub const LABEL_AGREEMENT: usize = 3;

/// One counted result, as [`super::sql::COUNTED`] reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CountedRow {
    pub id: i64,
    pub created_at: i64,
    pub score: i64,
    pub figures: Figures,
    pub class_label: Option<String>,
    pub label: Option<String>,
    pub label_key: Option<String>,
    pub board: String,
    pub card_key: String,
    /// A moderator accepted it: its network counts even if it contradicts
    /// an established row.
    pub accepted: bool,
}

/// A submitter's sample in a group (a row of `submitters`).
#[derive(Debug, Clone, PartialEq)]
pub struct SubmitterEntry {
    pub group_key: String,
    pub submitter: String,
    pub card_key: String,
    /// Their counted results.
    pub results: i64,
    pub score: i64,
    pub figures: Figures,
    /// The class label most of their results carry.
    pub class_label: Option<String>,
    /// The label of their newest result that has one.
    pub label: Option<String>,
    pub label_key: Option<String>,
    /// The board's spelling most of their results carry.
    pub board: String,
    pub latest: i64,
    /// The id of their first counted result: the order networks joined the row in.
    pub first_id: i64,
    /// When their first counted result arrived (Unix seconds): when they joined the row.
    pub joined_at: i64,
    /// A moderator accepted one of their results.
    pub accepted: bool,
    /// Held back from the row's figures ([`super::held::split_held`]); set by the
    /// group's recompute, not by the submitter's.
    pub held: bool,
    /// Why, when held.
    pub hold: super::held::Hold,
}

/// A group's figures (a row of `groups`, without the card's display).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupStats {
    pub samples: i64,
    pub submitters: i64,
    pub median: i64,
    pub p10: i64,
    pub p90: i64,
    pub figures: Figures,
    pub latest: i64,
    /// The board's spelling most submitters use.
    pub board: String,
    /// Networks held back ([`super::held::split_held`]).
    pub held: i64,
}

/// What every row of a card shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CardDisplay {
    pub class_label: Option<String>,
    /// The agreed label, if any.
    pub label: Option<String>,
    /// The agreed label, else the CID's name.
    pub name: String,
    /// Lower-case text a search matches: maker, product name, agreed labels.
    pub search: String,
}

/// Nearest-rank percentile position (1-based) of `q` in `n` sorted values.
pub fn rank_of(q: f64, n: usize) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n.max(1))
}

/// The nearest-rank `q` quantile of `values` (sorted here), if any.
pub(super) fn quantile<T: Copy + PartialOrd>(values: &mut [T], q: f64) -> Option<T> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    Some(values[rank_of(q, values.len()) - 1])
}

fn median_figures<'a>(all: impl Iterator<Item = &'a Figures> + Clone) -> Figures {
    let pick = |figure: Figure| {
        let mut values: Vec<f64> = all.clone().filter_map(|f| f[figure]).filter(|v| v.is_finite()).collect();
        quantile(&mut values, 0.5)
    };
    let mut figures = Figures::default();
    for figure in BOARD {
        figures.set(figure, pick(figure));
    }
    figures
}

/// The value most often given, ties to the one given last (`values` in the
/// order given).
fn most_common<'a>(values: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: Vec<(&str, usize, usize)> = Vec::new();
    for (order, value) in values.enumerate() {
        match counts.iter_mut().find(|(v, _, _)| *v == value) {
            Some(entry) => {
                entry.1 += 1;
                entry.2 = order;
            }
            None => counts.push((value, 1, order)),
        }
    }
    counts.into_iter().max_by_key(|(_, n, last)| (*n, *last)).map(|(v, _, _)| v.to_owned())
}

/// A submitter's sample from their counted results; `None` when they have none.
pub fn submitter_entry(group_key: &str, submitter: &str, rows: &[CountedRow]) -> Option<SubmitterEntry> {
    let mut rows: Vec<&CountedRow> = rows.iter().collect();
    rows.sort_by_key(|r| r.id);
    let last = *rows.last()?;
    let mut scores: Vec<i64> = rows.iter().map(|r| r.score).collect();
    let labelled = rows.iter().rev().find(|r| r.label.is_some());
    Some(SubmitterEntry {
        group_key: group_key.to_owned(),
        submitter: submitter.to_owned(),
        card_key: last.card_key.clone(),
        results: rows.len() as i64,
        score: quantile(&mut scores, 0.5)?,
        figures: median_figures(rows.iter().map(|r| &r.figures)),
        class_label: most_common(rows.iter().filter_map(|r| r.class_label.as_deref())),
        label: labelled.and_then(|r| r.label.clone()),
        label_key: labelled.and_then(|r| r.label_key.clone()),
        board: most_common(rows.iter().map(|r| r.board.as_str())).unwrap_or_default(),
        latest: rows.iter().map(|r| r.created_at).max().unwrap_or(0),
        first_id: rows.first().map_or(0, |r| r.id),
        joined_at: rows.first().map_or(0, |r| r.created_at),
        accepted: rows.iter().any(|r| r.accepted),
        held: false,
        hold: super::held::Hold::default(),
    })
}

/// A group's figures over its submitters' samples; `None` for no submitter.
pub fn group_stats(entries: &[SubmitterEntry]) -> Option<GroupStats> {
    let mut scores: Vec<i64> = entries.iter().map(|e| e.score).collect();
    let median = quantile(&mut scores, 0.5)?;
    let mut by_latest: Vec<&SubmitterEntry> = entries.iter().collect();
    by_latest.sort_by_key(|e| (e.latest, e.submitter.clone()));
    Some(GroupStats {
        samples: entries.iter().map(|e| e.results).sum(),
        submitters: entries.len() as i64,
        p10: quantile(&mut scores, 0.1)?,
        median,
        p90: quantile(&mut scores, 0.9)?,
        figures: median_figures(entries.iter().map(|e| &e.figures)),
        latest: entries.iter().map(|e| e.latest).max().unwrap_or(0),
        board: most_common(by_latest.iter().map(|e| e.board.as_str())).unwrap_or_default(),
        held: 0,
    })
}

/// The display fields of each row of a card (by group key) from the
/// samples of all its rows: the class by the card's majority, the label
/// by each row's own networks.
/// The rows whose display differs from what they show now: a new result
/// rarely renames anything, and an unchanged row is not written again (on
/// PostgreSQL every update is a new row version).
pub fn displays_to_write(
    wanted: BTreeMap<String, CardDisplay>,
    now: &BTreeMap<String, CardDisplay>,
) -> Vec<(String, CardDisplay)> {
    wanted.into_iter().filter(|(group, display)| now.get(group) != Some(display)).collect()
}

pub fn card_display(card: &Card, entries: &[SubmitterEntry]) -> BTreeMap<String, CardDisplay> {
    // A held network has no say in a row's name or its card's class; its
    // row still gets a display (every row of the card has one).
    // Worked out once: a popular card has hundreds of entries.
    let (name, search) = (card.display_name(), card.search_text());
    let plain = CardDisplay { class_label: card.class_label.clone(), label: None, name, search };
    let mut display: BTreeMap<String, CardDisplay> = BTreeMap::new();
    for entry in entries {
        if !display.contains_key(&entry.group_key) {
            display.insert(entry.group_key.clone(), plain.clone());
        }
    }
    let entries = counted(entries);
    let entries = entries.as_slice();
    // Each submitter once per value, whatever the number of their groups.
    let mut classes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for entry in entries {
        if let Some(class) = entry.class_label.as_deref() {
            let who = classes.entry(class).or_default();
            if !who.contains(&entry.submitter.as_str()) {
                who.push(&entry.submitter);
            }
        }
    }
    let class_label = classes
        .iter()
        .max_by_key(|(class, who)| (who.len(), std::cmp::Reverse(*class)))
        .map(|(c, _)| (*c).to_owned())
        .or_else(|| card.class_label.clone());
    let mut groups: BTreeMap<&str, Vec<&SubmitterEntry>> = BTreeMap::new();
    for entry in entries {
        groups.entry(entry.group_key.as_str()).or_default().push(entry);
    }
    let counted: BTreeMap<String, CardDisplay> = groups
        .into_iter()
        .map(|(group, row)| {
            let label = row_label(&row);
            let mut search = plain.search.clone();
            if let Some(label) = &label {
                search.push(' ');
                search.push_str(&label.to_lowercase());
            }
            let display = CardDisplay {
                class_label: class_label.clone(),
                name: label.clone().unwrap_or_else(|| plain.name.clone()),
                label,
                search,
            };
            (group.to_owned(), display)
        })
        .collect();
    display.extend(counted);
    display
}

/// The label a row's networks agree on: typed alike (folded) by at least
/// [`LABEL_AGREEMENT`] of them, and by more than half of the row's networks.
fn row_label(row: &[&SubmitterEntry]) -> Option<String> {
    let mut votes: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for entry in row {
        if let (Some(key), Some(label)) = (entry.label_key.as_deref(), entry.label.as_deref()) {
            votes.entry(key).or_default().push(label);
        }
    }
    let (_, spellings) = votes.into_iter().max_by(|a, b| a.1.len().cmp(&b.1.len()).then(b.0.cmp(a.0)))?;
    (spellings.len() >= LABEL_AGREEMENT && spellings.len() * 2 > row.len())
        .then(|| most_common(spellings.iter().copied()).unwrap_or_default())
}

/// Where `score` stands in a group: of its submitters (`entries`, the
/// result's own `submitter` among them), the share whose sample is below
/// it; the result's own submitter never counts as below.
pub fn standing(
    entries: &[SubmitterEntry],
    submitter: &str,
    score: i64,
    board: &str,
    family: &str,
) -> Option<Standing> {
    // Held networks are in no standing; a held result has none.
    let all = entries;
    let entries = counted(entries);
    if !entries.iter().any(|e| e.submitter == submitter) {
        return None;
    }
    let stats = group_stats(&entries)?;
    let below = entries.iter().filter(|e| e.submitter != submitter && e.score < score).count() as i64;
    Some(Standing {
        group_submitters: stats.submitters,
        percentile: below * 100 / stats.submitters.max(1),
        median_score: super::held::published_median(all).unwrap_or(stats.median),
        board: board.to_owned(),
        family: family.to_owned(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn only_rows_whose_display_changes_are_written() {
        let display = |name: &str| CardDisplay {
            class_label: Some("A1".into()),
            label: None,
            name: name.into(),
            search: name.to_lowercase(),
        };
        let now: BTreeMap<String, CardDisplay> =
            [("a".to_owned(), display("SD64G")), ("b".to_owned(), display("SD64G"))].into();
        assert!(displays_to_write(now.clone(), &now).is_empty(), "nothing changed, nothing written");
        let wanted: BTreeMap<String, CardDisplay> = [
            ("a".to_owned(), display("SD64G")),
            ("b".to_owned(), display("Canvas Go")),
            ("c".to_owned(), display("SD64G")),
        ]
        .into();
        let written: Vec<String> = displays_to_write(wanted, &now).into_iter().map(|(group, _)| group).collect();
        assert_eq!(written, ["b", "c"], "a renamed row and a new one");
    }

    fn row(id: i64, score: i64) -> CountedRow {
        CountedRow {
            id,
            created_at: id,
            score,
            figures: {
                let mut figures = Figures::default();
                figures.set(Figure::RandWriteQd64, Some(score as f64));
                figures
            },
            class_label: Some("A2 Class 10 V30 U3".into()),
            label: None,
            label_key: None,
            board: "Raspberry Pi 4 Model B".into(),
            card_key: "c".into(),
            accepted: false,
        }
    }

    pub(crate) fn entry(submitter: &str, scores: &[i64]) -> SubmitterEntry {
        let rows: Vec<CountedRow> = scores.iter().enumerate().map(|(i, s)| row(i as i64 + 1, *s)).collect();
        submitter_entry("g", submitter, &rows).unwrap()
    }

    #[test]
    fn nearest_rank() {
        assert_eq!(rank_of(0.5, 1), 1);
        assert_eq!(rank_of(0.5, 4), 2);
        assert_eq!(rank_of(0.1, 10), 1);
        assert_eq!(rank_of(0.9, 10), 9);
        assert_eq!(rank_of(0.9, 3), 3);
    }

    #[test]
    fn twenty_results_from_one_submitter_weigh_one_sample() {
        let genuine: Vec<SubmitterEntry> =
            [1100, 1120, 1134, 1150, 1170].iter().enumerate().map(|(i, s)| entry(&format!("s{i}"), &[*s])).collect();
        assert_eq!(group_stats(&genuine).unwrap().median, 1134);
        let mut poisoned = genuine.clone();
        poisoned.push(entry("spammer", &[9000; 20]));
        let stats = group_stats(&poisoned).unwrap();
        assert_eq!((stats.submitters, stats.samples), (6, 25));
        // One sample above the median: the median is the old third value or,
        // at most, the next one up.
        assert!((1134..=1150).contains(&stats.median), "{}", stats.median);
        assert_eq!(stats.figures[Figure::RandWriteQd64], Some(1134.0));
    }

    #[test]
    fn a_row_is_named_only_by_its_own_networks() {
        let card = Card {
            kind: "sd".into(),
            manufacturer_id: Some(0x9f),
            manufacturer: Some("Kingston".into()),
            oem_id: "TI".into(),
            product_name: "SD64G".into(),
            product_revision: "6.1".into(),
            capacity_bytes: Some(62_277_025_792),
            class_label: None,
        };
        let labelled = |submitter: &str, group: &str, label: &str| {
            let mut e = entry(submitter, &[1000]);
            e.group_key = group.into();
            e.label = Some(label.into());
            e.label_key = Some(label.to_lowercase());
            e
        };
        // Five honest networks in the Pi 4 row, none labelling.
        let mut entries: Vec<SubmitterEntry> = (0..5)
            .map(|i| {
                let mut e = entry(&format!("s{i}"), &[1000]);
                e.group_key = "pi4".into();
                e
            })
            .collect();
        // A label war from another row of the card: four networks there.
        for i in 0..4 {
            entries.push(labelled(&format!("w{i}"), "no-board", "AVOID fake card scam example"));
        }
        let shown = card_display(&card, &entries);
        assert_eq!(shown["pi4"].name, "Kingston SD64G 6.1, 62.3 GB", "votes from another row name nothing");
        assert_eq!(shown["no-board"].label.as_deref(), Some("AVOID fake card scam example"));
        // Two of the Pi 4 row's networks labelling: too few, and no majority.
        entries.push(labelled("s5", "pi4", "Kingston Canvas Go"));
        entries.push(labelled("s6", "pi4", "Kingston Canvas Go"));
        assert_eq!(card_display(&card, &entries)["pi4"].label, None);
        // Three of eight: still no majority. Five of ten: not more than half.
        entries.push(labelled("s7", "pi4", "kingston canvas go"));
        assert_eq!(card_display(&card, &entries)["pi4"].label, None);
        entries.push(labelled("s8", "pi4", "Kingston Canvas Go"));
        entries.push(labelled("s9", "pi4", "Kingston Canvas Go"));
        assert_eq!(card_display(&card, &entries)["pi4"].label, None);
        entries.push(labelled("s10", "pi4", "Kingston Canvas Go"));
        let shown = card_display(&card, &entries);
        assert_eq!(shown["pi4"].label.as_deref(), Some("Kingston Canvas Go"));
        assert!(shown["pi4"].search.contains("kingston canvas go"));
    }

    #[test]
    fn a_card_is_named_by_its_majority_and_an_agreed_label() {
        let card = Card {
            kind: "sd".into(),
            manufacturer_id: Some(0x9f),
            manufacturer: Some("Kingston".into()),
            oem_id: "TI".into(),
            product_name: "SD64G".into(),
            product_revision: "6.1".into(),
            capacity_bytes: Some(62_277_025_792),
            class_label: None,
        };
        let mut entries: Vec<SubmitterEntry> = (0..3).map(|i| entry(&format!("s{i}"), &[1000])).collect();
        let mut renamer = entry("renamer", &[1000]);
        renamer.class_label = Some("Class 10".into());
        renamer.label = Some("SanDisk Extreme PRO".into());
        renamer.label_key = Some("sandisk extreme pro".into());
        entries.push(renamer);
        let display = &card_display(&card, &entries)["g"];
        assert_eq!(display.class_label.as_deref(), Some("A2 Class 10 V30 U3"), "one report moves nothing");
        assert_eq!(display.name, "Kingston SD64G 6.1, 62.3 GB", "one submitter names nothing");
        // Three of the row's four networks typing the same label (in any case) agree.
        for entry in &mut entries[..2] {
            entry.label = Some("sandisk EXTREME pro".into());
            entry.label_key = Some("sandisk extreme pro".into());
        }
        let display = &card_display(&card, &entries)["g"];
        assert!(display.name.eq_ignore_ascii_case("SanDisk Extreme PRO"), "{}", display.name);
        assert!(display.search.contains("sandisk extreme pro") && display.search.contains("sd64g"));
    }

    #[test]
    fn standing_counts_the_others_below() {
        let entries: Vec<SubmitterEntry> =
            [1000, 1100, 1200, 1300].iter().enumerate().map(|(i, s)| entry(&format!("s{i}"), &[*s])).collect();
        let s = standing(&entries, "s3", 1300, "Raspberry Pi 4 Model B", "Raspberry Pi 4").unwrap();
        assert_eq!((s.group_submitters, s.percentile, s.median_score), (4, 75, 1100));
        let alone = standing(&entries[..1], "s0", 1000, "b", "f").unwrap();
        assert_eq!((alone.group_submitters, alone.percentile), (1, 0));
    }
}
