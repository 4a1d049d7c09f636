//! Where results live: one [`Storage`] interface, two backends.
//!
//! - [`sqlite`]: one file, WAL, one writer thread that commits queued
//!   submissions together (group commit) before any of them is answered.
//! - [`postgres`]: for a community that outgrows one box; any number of
//!   server replicas can share it, as every write is one transaction and
//!   idempotency is a unique key.
//!
//! Both keep the `submitters` (one sample per submitter and group) and
//! `groups` (leaderboard rows: medians over submitters, the card's display
//! by majority) tables up to date in the same transaction as each insert,
//! delete or moderation, so reading the leaderboard never scans the
//! results. The SQL is shared ([`sql`]), and so is the arithmetic
//! ([`aggregate`]) and the upgrade of older databases ([`migrate`]).

pub mod aggregate;
mod columns;
pub mod held;
pub mod migrate;
pub mod postgres;
mod query;
pub mod sql;
pub mod sqlite;
pub mod wear;

use std::future::Future;
use storage_scoring::figure::{BOARD, Figure, REPORT_ORDER};

use serde::{Deserialize, Serialize};

pub use query::{
    CARD_POINTS, CardData, CardPoint, FilterChoices, LISTED, LeaderboardQuery, Listed, MAX_SEARCH_CHARS,
    MAX_SEARCH_WORDS, MIN_RANKED_SUBMITTERS, Page, Row, SortKey, held_reason, one_per_network,
};

use crate::board::Board;
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

/// What a moderator did to a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModerationAction {
    Flag,
    Hide,
    /// Counted although its network contradicts an established row.
    Accept,
}

/// A moderator's decision on a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModerationNote {
    pub action: ModerationAction,
    pub reason: String,
}

/// The figures the leaderboard keeps, shows and sorts by besides the score
/// (those with a [`storage_scoring::figure::BoardColumn`] in the figures'
/// table); any other reads as `None`. Serialized as an object of the kept
/// figures' keys, in the order a report lists them.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Figures([Option<f64>; BOARD.len()]);

impl Figures {
    pub fn of(m: &storage_scoring::schema::Measurements) -> Figures {
        let mut figures = Figures::default();
        for figure in BOARD {
            figures.set(figure, m[figure]);
        }
        figures
    }

    /// Sets a kept figure; one the leaderboard does not keep stays `None`.
    pub fn set(&mut self, figure: Figure, value: Option<f64>) {
        if let Some(slot) = Figures::slot(figure) {
            self.0[slot] = value;
        }
    }

    fn slot(figure: Figure) -> Option<usize> {
        figure.board().map(|b| b.place - 1)
    }
}

impl std::ops::Index<Figure> for Figures {
    type Output = Option<f64>;

    fn index(&self, figure: Figure) -> &Option<f64> {
        const NOT_KEPT: Option<f64> = None;
        Figures::slot(figure).map_or(&NOT_KEPT, |slot| &self.0[slot])
    }
}

impl Serialize for Figures {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let kept = REPORT_ORDER.iter().filter(|f| f.board().is_some());
        let mut map = serializer.serialize_map(Some(BOARD.len()))?;
        for &figure in kept {
            map.serialize_entry(figure.key(), &self[figure])?;
        }
        map.end()
    }
}

/// A result ready to store.
#[derive(Debug, Clone)]
pub struct NewResult {
    pub idempotency_key: String,
    /// SHA-256 of the body as received, hex.
    pub body_hash: String,
    /// SHA-256 of the report as accepted (the same report in other
    /// whitespace or key order has the same), hex: a repeat counts once.
    pub content_hash: String,
    /// SHA-256 of the delete token, hex: the token itself is never stored.
    pub delete_hash: String,
    /// Who sent it: a keyed hash of the client's network ([`crate::peer`]).
    pub submitter: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Why it is flagged (empty: public).
    pub reasons: Vec<String>,
    pub card: Card,
    pub card_key: String,
    pub group_key: String,
    pub board: Board,
    pub bus: String,
    pub formula: String,
    pub verdict_version: String,
    pub score: Option<i64>,
    pub figures: Figures,
    /// The name on the card's label, as sent and normalised, and folded.
    pub label: Option<String>,
    pub label_key: Option<String>,
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

/// Where a public result stands among the submitters of its group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// Submitters in the group, the result's own included.
    pub group_submitters: i64,
    /// Of them, the share (0 to 100) whose own median is below this score.
    pub percentile: i64,
    /// The group's median over submitters.
    pub median_score: i64,
    pub board: String,
    pub family: String,
}

/// What the submitter is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Receipt {
    pub id: i64,
    pub status: Status,
    pub reasons: Vec<String>,
    pub score: Option<i64>,
    pub formula: String,
    /// For a public result.
    pub standing: Option<Standing>,
    /// Public, but its network is held back from its row.
    pub held: bool,
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
    pub submitter: String,
    pub content_hash: String,
    /// The canonical model, its revision and family, and their folded keys.
    pub board: String,
    pub board_revision: Option<String>,
    pub family: String,
    pub board_key: String,
    pub family_key: String,
    pub bus: String,
    pub formula: String,
    pub verdict_version: String,
    pub score: Option<i64>,
    pub figures: Figures,
    pub label: Option<String>,
    pub claimed: Option<String>,
    pub measured: Option<String>,
    pub report_json: String,
    pub verdict_json: String,
    /// Where it stands in its group, for a public result (filled by `get`).
    pub standing: Option<Standing>,
    /// Public, but its network is held back from its row (filled by `get`).
    pub held: bool,
}

/// What a moderator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Moderation {
    Flag(String),
    Hide(String),
    /// Count a held result: the moderator vouches for it.
    Accept(String),
    Restore,
}

impl Moderation {
    /// The note kept beside the result; none after a restore.
    pub fn note(&self) -> Option<ModerationNote> {
        match self {
            Moderation::Flag(reason) => Some(ModerationNote { action: ModerationAction::Flag, reason: reason.clone() }),
            Moderation::Hide(reason) => Some(ModerationNote { action: ModerationAction::Hide, reason: reason.clone() }),
            Moderation::Accept(reason) => {
                Some(ModerationNote { action: ModerationAction::Accept, reason: reason.clone() })
            }
            Moderation::Restore => None,
        }
    }
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
///
/// Endurance and power-loss results are kept beside run results, through
/// [`wear::WearStore`].
pub trait Storage: wear::WearStore + Send + Sync + 'static {
    /// Stores a result unless its idempotency key is known (then replays or refuses).
    /// The answer comes only once the result is committed.
    fn submit(&self, new: NewResult) -> impl Future<Output = StoreResult<Submitted>> + Send;
    /// A result, with its standing when it is public.
    fn get(&self, id: i64) -> impl Future<Output = StoreResult<Option<StoredResult>>> + Send;
    /// Deletes a result if `delete_hash` matches the stored one.
    fn delete(&self, id: i64, delete_hash: String) -> impl Future<Output = StoreResult<Deleted>> + Send;
    fn moderate(&self, id: i64, action: Moderation) -> impl Future<Output = StoreResult<Option<Receipt>>> + Send;
    fn leaderboard(&self, query: LeaderboardQuery) -> impl Future<Output = StoreResult<Page>> + Send;
    fn card(&self, card_key: String) -> impl Future<Output = StoreResult<Option<CardData>>> + Send;
    /// Public results with an id above `after`, oldest first.
    fn export_page(&self, after: i64, limit: i64) -> impl Future<Output = StoreResult<Vec<StoredResult>>> + Send;
    fn filter_choices(&self) -> impl Future<Output = StoreResult<FilterChoices>> + Send;
    /// The network (submitter id) that sent result `id`, and every result
    /// it sent, oldest first.
    fn network_results(&self, id: i64) -> impl Future<Output = StoreResult<Option<(String, Vec<i64>)>>> + Send;
    /// Bans a network from submitting (`Some(reason)`), or lifts its ban.
    fn ban(&self, submitter: String, reason: Option<String>, at: i64) -> impl Future<Output = StoreResult<()>> + Send;
    /// Why a network is banned, if it is.
    fn banned(&self, submitter: String) -> impl Future<Output = StoreResult<Option<String>>> + Send;
    /// Bytes of reports a submitter (network) stored after `since` (Unix
    /// seconds), and the time of the oldest of them.
    fn stored_since(
        &self,
        submitter: String,
        since: i64,
    ) -> impl Future<Output = StoreResult<(i64, Option<i64>)>> + Send;
    /// The secret salt of submitter ids, made on first start and shared by
    /// every replica of a database.
    fn submitter_salt(&self) -> &[u8];
    /// Waits for queued writes to finish (on shutdown).
    fn close(&self) -> impl Future<Output = ()> + Send;
}

/// The effective status and the reasons shown, from the automatic reasons
/// and a moderator's note.
pub fn status_of(auto_reasons: &[String], moderation: Option<&ModerationNote>) -> (Status, Vec<String>) {
    let mut reasons = auto_reasons.to_vec();
    match moderation {
        Some(note) if note.action == ModerationAction::Hide => {
            reasons.push(format!("hidden by a moderator: {}", note.reason));
            (Status::Hidden, reasons)
        }
        // An acceptance vouches against holding, never against a flag.
        Some(note) if note.action == ModerationAction::Accept => {
            if reasons.is_empty() {
                (Status::Public, reasons)
            } else {
                (Status::Flagged, reasons)
            }
        }
        Some(note) => {
            reasons.push(format!("flagged by a moderator: {}", note.reason));
            (Status::Flagged, reasons)
        }
        None if reasons.is_empty() => (Status::Public, reasons),
        None => (Status::Flagged, reasons),
    }
}

/// The status and reasons from the stored automatic reasons and moderation note.
pub fn reasons_of(auto: &str, moderation: Option<&str>) -> (Status, Vec<String>) {
    let auto: Vec<String> = serde_json::from_str(auto).unwrap_or_default();
    let note: Option<ModerationNote> = moderation.and_then(|m| serde_json::from_str(m).ok());
    status_of(&auto, note.as_ref())
}

/// Whether a stored moderation note is a moderator's acceptance.
pub fn is_accepted(moderation: Option<&str>) -> bool {
    moderation
        .and_then(|m| serde_json::from_str::<ModerationNote>(m).ok())
        .is_some_and(|n| n.action == ModerationAction::Accept)
}

/// A list of reasons as stored.
pub fn reasons_json(reasons: &[String]) -> String {
    serde_json::Value::from(reasons.to_vec()).to_string()
}

/// A moderation note as stored.
pub fn note_json(note: Option<&ModerationNote>) -> Option<String> {
    note.map(|n| serde_json::json!({"action": n.action, "reason": n.reason}).to_string())
}

/// `YYYY-MM-DD` of a Unix time (UTC).
pub fn date_of(unix: i64) -> String {
    format_utc(unix, time::macros::format_description!("[year]-[month]-[day]"))
}

/// `YYYY-MM-DD HH:MM UTC`.
pub fn datetime_of(unix: i64) -> String {
    format_utc(unix, time::macros::format_description!("[year]-[month]-[day] [hour]:[minute] UTC"))
}

/// A Unix time in UTC as `format` lays it out; times past what a date can
/// hold (years beyond ±9999, only in a hostile row) show as the nearest.
fn format_utc(unix: i64, format: &[time::format_description::BorrowedFormatItem<'_>]) -> String {
    let bound = if unix < 0 { time::PrimitiveDateTime::MIN } else { time::PrimitiveDateTime::MAX };
    let at = time::OffsetDateTime::from_unix_timestamp(unix).unwrap_or(bound.assume_utc());
    at.format(format).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(datetime_of(1_795_000_000), "2026-11-18 11:06 UTC");
        assert_eq!(date_of(i64::MAX), "9999-12-31");
        assert_eq!(date_of(i64::MIN), "-9999-01-01");
    }

    #[test]
    fn moderation_overrides_the_automatic_status() {
        let note = ModerationNote { action: ModerationAction::Hide, reason: "spam".into() };
        assert_eq!(status_of(&[], Some(&note)).0, Status::Hidden);
        assert_eq!(status_of(&["quick profile".into()], None).0, Status::Flagged);
        assert_eq!(status_of(&[], None), (Status::Public, vec![]));
        // The note is stored as before: {"action": "hide", ...}.
        let stored = note_json(Some(&note)).unwrap();
        assert_eq!(stored, r#"{"action":"hide","reason":"spam"}"#);
        assert_eq!(reasons_of("[]", Some(&stored)).0, Status::Hidden);
    }
}
