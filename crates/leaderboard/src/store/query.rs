//! What the leaderboard and card pages ask the store, and what they get:
//! the filters, search words and order of a request ([`LeaderboardQuery`],
//! [`SortKey`]), a page of rows with the true total ([`Page`], [`Row`]),
//! and a card's data ([`CardData`]).

use serde::Serialize;
use storage_scoring::figure::{BOARD, Figure};

use super::Figures;
use super::held::{Hold, WITNESS_DAYS};
use crate::card::Card;

/// A row with fewer submitters is listed without a rank, after the ranked
/// ones (docs/leaderboard.md).
pub const MIN_RANKED_SUBMITTERS: i64 = 3;

/// The most points a card's strip plot draws (the newest).
pub const CARD_POINTS: i64 = 2000;

/// One leaderboard row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    #[serde(skip)]
    pub group_key: String,
    pub card: Card,
    /// The agreed label, else the CID's name.
    pub name: String,
    /// The label submitters agreed on, if any.
    pub label: Option<String>,
    pub card_key: String,
    /// The canonical model (`Raspberry Pi 4 Model B`) and its family.
    pub board: String,
    pub family: String,
    pub bus: String,
    pub formula: String,
    /// Counted results (a repeated report counts once).
    pub samples: i64,
    /// Distinct submitters (client networks) counted: a row is ranked from
    /// [`MIN_RANKED_SUBMITTERS`].
    pub submitters: i64,
    /// Networks held back from the row's figures: they contradict an
    /// established row (docs/leaderboard.md#held-results).
    pub held: i64,
    pub median_score: i64,
    pub p10_score: i64,
    pub p90_score: i64,
    /// Medians over submitters of the four figures people pick cards by.
    pub median_figures: Figures,
    /// Unix seconds of the newest result.
    #[serde(skip)]
    pub latest_unix: i64,
    /// `YYYY-MM-DD` of the newest result.
    pub latest: String,
    /// Rank within the query by its sort figure; none below
    /// [`MIN_RANKED_SUBMITTERS`].
    pub rank: Option<i64>,
}

/// A page of rows and how many rows the filters leave in all.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Page {
    pub total: i64,
    pub rows: Vec<Row>,
}

/// What the leaderboard is sorted by: the median score, one of the four
/// figures, or a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Score,
    /// A figure the leaderboard keeps (one with a column): built only by
    /// [`SortKey::parse`] and [`SortKey::all`].
    Figure(Figure),
    P10,
    P90,
    Samples,
    Submitters,
    Latest,
    Card,
    Board,
}

impl SortKey {
    /// Every key: the score, each kept figure in the leaderboard's order,
    /// then the rest.
    pub fn all() -> impl Iterator<Item = SortKey> {
        let rest = [
            SortKey::P10,
            SortKey::P90,
            SortKey::Samples,
            SortKey::Submitters,
            SortKey::Latest,
            SortKey::Card,
            SortKey::Board,
        ];
        std::iter::once(SortKey::Score).chain(BOARD.into_iter().map(SortKey::Figure)).chain(rest)
    }

    /// The key named in a URL; `median` is the score, as before.
    pub fn parse(text: &str) -> Option<SortKey> {
        if text == "median" {
            return Some(SortKey::Score);
        }
        SortKey::all().find(|k| k.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Score => "score",
            SortKey::Figure(figure) => figure.key(),
            SortKey::P10 => "p10",
            SortKey::P90 => "p90",
            SortKey::Samples => "samples",
            SortKey::Submitters => "submitters",
            SortKey::Latest => "latest",
            SortKey::Card => "card",
            SortKey::Board => "board",
        }
    }

    /// Numbers read best from the top down; names from A.
    pub fn default_descending(self) -> bool {
        !matches!(self, SortKey::Card | SortKey::Board)
    }

    /// The `groups` column ordered by.
    pub fn column(self) -> &'static str {
        match self {
            SortKey::Score => "median",
            // Only kept figures are built (`parse`, `all`); the score stands
            // in for any other.
            SortKey::Figure(figure) => super::sql::figure_column(figure).unwrap_or("median"),
            SortKey::P10 => "p10",
            SortKey::P90 => "p90",
            SortKey::Samples => "samples",
            SortKey::Submitters => "submitters",
            SortKey::Latest => "latest",
            SortKey::Card => "name",
            SortKey::Board => "board",
        }
    }

    /// The column rows are ranked by: the figure sorted by, else the score.
    pub fn rank_column(self) -> &'static str {
        match self {
            SortKey::Figure(_) => self.column(),
            SortKey::Score
            | SortKey::P10
            | SortKey::P90
            | SortKey::Samples
            | SortKey::Submitters
            | SortKey::Latest
            | SortKey::Card
            | SortKey::Board => "median",
        }
    }
}

/// The most words a search takes.
pub const MAX_SEARCH_WORDS: usize = 4;
/// The longest search, in characters.
pub const MAX_SEARCH_CHARS: usize = 100;

/// Filters, search and order of a leaderboard request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderboardQuery {
    /// The search as typed (for the page's box).
    pub q: Option<String>,
    /// Its words, lower case, at most [`MAX_SEARCH_WORDS`].
    pub words: Vec<String>,
    pub kind: Option<String>,
    /// A board or a family, as given (for the page's form).
    pub board: Option<String>,
    /// The same, folded (`filter_key`), as the store compares it.
    pub board_key: Option<String>,
    /// A class mark (`A2`, `U3`, `Class 10`) the card claims, or a whole label.
    pub class: Option<String>,
    pub bus: Option<String>,
    pub sort: SortKey,
    pub descending: bool,
    pub limit: i64,
    pub offset: i64,
}

impl LeaderboardQuery {
    /// The search words as LIKE patterns (`%word%`, wildcards escaped), one
    /// per slot of the SQL.
    pub fn patterns(&self) -> [Option<String>; MAX_SEARCH_WORDS] {
        let mut slots: [Option<String>; MAX_SEARCH_WORDS] = Default::default();
        for (slot, word) in slots.iter_mut().zip(&self.words) {
            let escaped = word.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
            *slot = Some(format!("%{escaped}%"));
        }
        slots
    }
}

impl Default for LeaderboardQuery {
    fn default() -> Self {
        LeaderboardQuery {
            q: None,
            words: Vec::new(),
            kind: None,
            board: None,
            board_key: None,
            class: None,
            bus: None,
            sort: SortKey::Score,
            descending: true,
            limit: 100,
            offset: 0,
        }
    }
}

/// One public result of a card, for its strip plot.
#[derive(Debug, Clone, PartialEq)]
pub struct CardPoint {
    pub id: i64,
    pub score: i64,
    pub group_key: String,
    pub created_at: i64,
    /// The network's other counted results in the row, not drawn.
    pub more: i64,
}

/// A result listed on a card page, the newest of its network, with why it
/// is not counted and how many more its network sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub id: i64,
    pub reasons: Vec<String>,
    pub more: i64,
}

/// The most results listed under "flagged" or "held" on a card page (one
/// per network).
pub const LISTED: usize = 50;

/// Results (id, network, reasons), newest first, as one entry per network:
/// its newest, with a count of the rest.
pub fn one_per_network(results: Vec<(i64, String, Vec<String>)>) -> Vec<Listed> {
    let mut listed: Vec<(String, Listed)> = Vec::new();
    for (id, network, reasons) in results {
        match listed.iter_mut().find(|(n, _)| *n == network) {
            Some((_, entry)) => entry.more += 1,
            None => listed.push((network, Listed { id, reasons, more: 0 })),
        }
    }
    listed.into_iter().map(|(_, l)| l).take(LISTED).collect()
}

/// Why a result is held (`why`, when known), from its row's counted figures.
pub fn held_reason(score: Option<i64>, row: Option<&Row>, why: Option<Hold>) -> String {
    let score = score.map_or_else(|| "none".to_owned(), |s| s.to_string());
    let then = "it counts once the row's counted results move to it, or a moderator accepts it";
    match (row, why) {
        (Some(row), Some(Hold::Burst)) => format!(
            "held: its score {score} came with a burst of new networks that would move this row's median ({}, from {} networks) by more than 5%; it counts once networks from other days move the row to it, or the same shift is seen on {WITNESS_DAYS} days across a week, or a moderator accepts it",
            row.median_score, row.submitters
        ),
        (Some(row), _) => format!(
            "held: its score {score} contradicts this row, established by {} networks (median {}, p10-p90 {}-{}); {then}",
            row.submitters, row.median_score, row.p10_score, row.p90_score
        ),
        (None, _) => format!(
            "held: its score {score} would move an established row further than a burst of new networks may (docs: held results); {then}"
        ),
    }
}

/// Everything the card page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CardData {
    pub card: Card,
    /// The card's name (agreed label, else the CID's) and label.
    pub name: String,
    pub label: Option<String>,
    pub rows: Vec<Row>,
    /// The newest public results, at most [`CARD_POINTS`].
    pub points: Vec<CardPoint>,
    /// (claimed label, measured label, how many public results).
    pub classes: Vec<(String, String, i64)>,
    /// Flagged results of the card (not ranked), newest first, one per network.
    pub flagged: Vec<Listed>,
    /// Held results (public, from networks that contradict an established
    /// row), newest first, one per network.
    pub held: Vec<Listed>,
}

impl CardData {
    /// A card with endurance or power-loss results and no run yet.
    pub fn without_runs(card: Card) -> CardData {
        CardData {
            name: card.display_name(),
            card,
            label: None,
            rows: Vec::new(),
            points: Vec::new(),
            classes: Vec::new(),
            flagged: Vec::new(),
            held: Vec::new(),
        }
    }
}

/// The choices the leaderboard's filter form offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterChoices {
    pub kinds: Vec<String>,
    /// (family, its models).
    pub boards: Vec<(String, Vec<String>)>,
    pub buses: Vec<String>,
}

/// (family, model) pairs in order as families with their models.
pub(super) fn by_family(pairs: Vec<(String, String)>) -> Vec<(String, Vec<String>)> {
    let mut families: Vec<(String, Vec<String>)> = Vec::new();
    for (family, model) in pairs {
        match families.last_mut() {
            Some((last, models)) if *last == family => models.push(model),
            _ => families.push((family, vec![model])),
        }
    }
    families
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_words_cannot_be_wildcards() {
        let q = LeaderboardQuery { words: vec!["100%".into(), "a_b".into()], ..LeaderboardQuery::default() };
        let p = q.patterns();
        assert_eq!(p[0].as_deref(), Some("%100\\%%"));
        assert_eq!(p[1].as_deref(), Some("%a\\_b%"));
        assert_eq!(p[2], None);
    }

    #[test]
    fn sort_keys_round_trip() {
        for key in SortKey::all() {
            assert_eq!(SortKey::parse(key.as_str()), Some(key));
        }
        assert_eq!(SortKey::parse("median"), Some(SortKey::Score));
        assert_eq!(SortKey::parse("rand_write_4k_qd64_iops"), Some(SortKey::Figure(Figure::RandWriteQd64)));
        // A figure the leaderboard does not keep is not a key.
        assert_eq!(SortKey::parse("cached_read_mib_s"), None);
        assert_eq!(SortKey::Figure(Figure::RandWriteQd64).rank_column(), "rand_write");
        assert_eq!(SortKey::Card.rank_column(), "median");
    }
}
