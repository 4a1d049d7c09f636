//! Where results live: one [`Storage`] interface, two backends.
//!
//! - [`sqlite`]: one file, WAL, one writer thread that commits queued
//!   submissions together (group commit) before any of them is answered.
//! - [`postgres`]: for a community that outgrows one box; any number of
//!   server replicas can share it, as every write is one transaction and
//!   idempotency is a unique key.
//!
//! Both keep a `groups` table of leaderboard rows (median, p10, p90,
//! samples, latest per card × board × bus × formula) up to date in the same
//! transaction as each insert, delete or moderation, so reading the
//! leaderboard never scans the results. The SQL is shared ([`sql`]).

pub mod postgres;
pub mod sql;
pub mod sqlite;

use std::future::Future;

use serde::Serialize;

use crate::card::Card;

/// A result's state (docs/leaderboard.md#flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Shown and ranked.
    Public,
    /// Shown with its reasons, never ranked.
    Flagged,
    /// Hidden by a moderator: only the moderator sees it.
    Hidden,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Public => "public",
            Status::Flagged => "flagged",
            Status::Hidden => "hidden",
        }
    }

    pub fn parse(text: &str) -> Status {
        match text {
            "public" => Status::Public,
            "hidden" => Status::Hidden,
            _ => Status::Flagged,
        }
    }
}

/// A moderator's decision on a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct ModerationNote {
    /// `flag` or `hide`.
    pub action: String,
    pub reason: String,
}

/// A result ready to store.
#[derive(Debug, Clone)]
pub struct NewResult {
    pub idempotency_key: String,
    /// SHA-256 of the body as received, hex.
    pub body_hash: String,
    /// SHA-256 of the delete token, hex: the token itself is never stored.
    pub delete_hash: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Why it is flagged (empty: public).
    pub reasons: Vec<String>,
    pub card: Card,
    pub card_key: String,
    pub group_key: String,
    pub board: String,
    pub bus: String,
    pub formula: String,
    pub verdict_version: String,
    pub score: Option<i64>,
    pub claimed: Option<String>,
    pub measured: Option<String>,
    pub report_json: String,
    pub verdict_json: String,
}

impl NewResult {
    pub fn status(&self) -> Status {
        if self.reasons.is_empty() { Status::Public } else { Status::Flagged }
    }
}

/// What the submitter is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub id: i64,
    pub status: Status,
    pub reasons: Vec<String>,
    pub score: Option<i64>,
    pub formula: String,
}

/// The outcome of a submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Submitted {
    /// Stored now.
    Created(Receipt),
    /// The same key and body were stored before: nothing new.
    Replayed(Receipt),
    /// The key was used for another body.
    KeyReused,
}

/// A stored result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredResult {
    pub id: i64,
    pub created_at: i64,
    pub status: Status,
    /// The automatic reasons, then the moderator's.
    pub reasons: Vec<String>,
    pub card: Card,
    pub card_key: String,
    pub group_key: String,
    pub board: String,
    pub bus: String,
    pub formula: String,
    pub verdict_version: String,
    pub score: Option<i64>,
    pub claimed: Option<String>,
    pub measured: Option<String>,
    pub report_json: String,
    pub verdict_json: String,
}

/// One leaderboard row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    #[serde(skip)]
    pub group_key: String,
    pub card: Card,
    pub card_key: String,
    pub board: String,
    pub bus: String,
    pub formula: String,
    pub samples: i64,
    pub median_score: i64,
    pub p10_score: i64,
    pub p90_score: i64,
    /// Unix seconds of the newest result.
    #[serde(skip)]
    pub latest_unix: i64,
    /// `YYYY-MM-DD` of the newest result.
    pub latest: String,
    /// Rank by median within the query; none below [`MIN_RANKED_SAMPLES`].
    pub rank: Option<i64>,
}

/// A row with fewer samples is listed without a rank (docs/leaderboard.md#grouping-and-ranking).
pub const MIN_RANKED_SAMPLES: i64 = 3;

/// What the leaderboard is sorted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    Median,
    P10,
    P90,
    Samples,
    Latest,
    Card,
    Board,
}

impl SortKey {
    pub const ALL: [SortKey; 7] =
        [SortKey::Median, SortKey::P10, SortKey::P90, SortKey::Samples, SortKey::Latest, SortKey::Card, SortKey::Board];

    pub fn parse(text: &str) -> Option<SortKey> {
        SortKey::ALL.into_iter().find(|k| k.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SortKey::Median => "median",
            SortKey::P10 => "p10",
            SortKey::P90 => "p90",
            SortKey::Samples => "samples",
            SortKey::Latest => "latest",
            SortKey::Card => "card",
            SortKey::Board => "board",
        }
    }

    /// Numbers read best from the top down; names from A.
    pub fn default_descending(self) -> bool {
        !matches!(self, SortKey::Card | SortKey::Board)
    }

    fn order_by(self) -> &'static str {
        match self {
            SortKey::Median => "median",
            SortKey::P10 => "p10",
            SortKey::P90 => "p90",
            SortKey::Samples => "samples",
            SortKey::Latest => "latest",
            SortKey::Card => "product_name",
            SortKey::Board => "board",
        }
    }
}

/// Filters and order of a leaderboard request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderboardQuery {
    pub kind: Option<String>,
    pub board: Option<String>,
    /// A class mark (`A2`, `U3`, `Class 10`) the card claims, or a whole label.
    pub class: Option<String>,
    pub bus: Option<String>,
    pub sort: SortKey,
    pub descending: bool,
    pub limit: i64,
    pub offset: i64,
}

impl Default for LeaderboardQuery {
    fn default() -> Self {
        LeaderboardQuery {
            kind: None,
            board: None,
            class: None,
            bus: None,
            sort: SortKey::Median,
            descending: true,
            limit: 200,
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
}

/// Everything the card page shows.
#[derive(Debug, Clone, PartialEq)]
pub struct CardData {
    pub card: Card,
    pub rows: Vec<Row>,
    /// The newest public results, at most [`CARD_POINTS`].
    pub points: Vec<CardPoint>,
    /// (claimed label, measured label, how many public results).
    pub classes: Vec<(String, String, i64)>,
    /// Flagged results of the card (not ranked), newest first, at most 50.
    pub flagged: Vec<(i64, Vec<String>)>,
}

/// The most points a card's strip plot draws (the newest).
pub const CARD_POINTS: i64 = 2000;

/// The choices the leaderboard's filter form offers.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterChoices {
    pub kinds: Vec<String>,
    pub boards: Vec<String>,
    pub buses: Vec<String>,
}

/// What a moderator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moderation {
    Flag(String),
    Hide(String),
    Restore,
}

/// The outcome of a delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    Deleted,
    NotFound,
    WrongToken,
}

/// A database failure, in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError(format!("sqlite: {e}"))
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => StoreError(format!("postgres: {}: {}", db.code().code(), db.message())),
            None => StoreError(format!("postgres: {e}")),
        }
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// The storage interface both backends implement; the HTTP layer sees only this.
pub trait Storage: Send + Sync + 'static {
    /// Stores a result unless its idempotency key is known (then replays or refuses).
    /// The answer comes only once the result is committed.
    fn submit(&self, new: NewResult) -> impl Future<Output = StoreResult<Submitted>> + Send;
    fn get(&self, id: i64) -> impl Future<Output = StoreResult<Option<StoredResult>>> + Send;
    /// Deletes a result if `delete_hash` matches the stored one.
    fn delete(&self, id: i64, delete_hash: String) -> impl Future<Output = StoreResult<Deleted>> + Send;
    fn moderate(&self, id: i64, action: Moderation) -> impl Future<Output = StoreResult<Option<Receipt>>> + Send;
    fn leaderboard(&self, query: LeaderboardQuery) -> impl Future<Output = StoreResult<Vec<Row>>> + Send;
    fn card(&self, card_key: String) -> impl Future<Output = StoreResult<Option<CardData>>> + Send;
    /// Public results with an id above `after`, oldest first.
    fn export_page(&self, after: i64, limit: i64) -> impl Future<Output = StoreResult<Vec<StoredResult>>> + Send;
    fn filter_choices(&self) -> impl Future<Output = StoreResult<FilterChoices>> + Send;
    /// Waits for queued writes to finish (on shutdown).
    fn close(&self) -> impl Future<Output = ()> + Send;
}

/// The effective status and the reasons shown, from the automatic reasons
/// and a moderator's note.
pub fn status_of(auto_reasons: &[String], moderation: Option<&ModerationNote>) -> (Status, Vec<String>) {
    let mut reasons = auto_reasons.to_vec();
    match moderation {
        Some(note) if note.action == "hide" => {
            reasons.push(format!("hidden by a moderator: {}", note.reason));
            (Status::Hidden, reasons)
        }
        Some(note) => {
            reasons.push(format!("flagged by a moderator: {}", note.reason));
            (Status::Flagged, reasons)
        }
        None if reasons.is_empty() => (Status::Public, reasons),
        None => (Status::Flagged, reasons),
    }
}

/// Nearest-rank percentile position (1-based) of `q` in `n` sorted values:
/// every reported figure is a real result, never an interpolation or a mean.
pub fn rank_of(q: f64, n: i64) -> i64 {
    ((q * n as f64).ceil() as i64).clamp(1, n.max(1))
}

/// `YYYY-MM-DD` of a Unix time (UTC), from the civil-from-days algorithm
/// (Howard Hinnant's public-domain date algorithms).
pub fn date_of(unix: i64) -> String {
    let days = unix.div_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// `YYYY-MM-DD HH:MM UTC`.
pub fn datetime_of(unix: i64) -> String {
    let secs = unix.rem_euclid(86_400);
    format!("{} {:02}:{:02} UTC", date_of(unix), secs / 3600, secs % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        assert_eq!(rank_of(0.5, 1), 1);
        assert_eq!(rank_of(0.5, 4), 2);
        assert_eq!(rank_of(0.1, 10), 1);
        assert_eq!(rank_of(0.9, 10), 9);
        assert_eq!(rank_of(0.9, 3), 3);
    }

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(datetime_of(1_795_000_000), "2026-11-18 11:06 UTC");
    }

    #[test]
    fn moderation_overrides_the_automatic_status() {
        let note = ModerationNote { action: "hide".into(), reason: "spam".into() };
        assert_eq!(status_of(&[], Some(&note)).0, Status::Hidden);
        assert_eq!(status_of(&["quick profile".into()], None).0, Status::Flagged);
        assert_eq!(status_of(&[], None), (Status::Public, vec![]));
    }
}
