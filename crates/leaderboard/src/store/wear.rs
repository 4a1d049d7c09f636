//! Endurance and power-loss results: their own table, `wear_results`, on
//! both backends, under the trust rules of run results
//! (docs/leaderboard.md#endurance-and-power-loss-results).
//!
//! - **One id space.** A wear result takes its id from the same counter as
//!   run results (PostgreSQL: the `results` id sequence; SQLite: the
//!   `results` row of `sqlite_sequence`, raised in the writer's
//!   transaction), so `/results/{id}`, `DELETE /api/v1/results/{id}` and
//!   moderation address either kind, and no id is ever handed out twice.
//! - **Keyed as run results are:** `card_key` is [`crate::card::Card::key`]
//!   of the report's `identity`, so these results land on the card's page.
//! - **One entry per network:** a card page lists, per schema, the newest
//!   shown result of each network (a network is a submitter, as for runs),
//!   with the count of its other distinct reports.
//! - The table is made on every start (`CREATE … IF NOT EXISTS`): an older
//!   database gains it empty, and nothing else changes.

use std::future::Future;

use serde::Serialize;

use super::{Deleted, Moderation, Status, StoreResult};
use crate::card::Card;

/// The table and its indexes, for both backends.
pub const TABLE: &str = "
CREATE TABLE IF NOT EXISTS wear_results (
    id BIGINT PRIMARY KEY,
    created_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    moderation TEXT,
    idem_key TEXT NOT NULL UNIQUE,
    body_hash TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    delete_hash TEXT NOT NULL,
    submitter TEXT NOT NULL,
    card_key TEXT NOT NULL,
    card TEXT NOT NULL,
    schema TEXT NOT NULL,
    report TEXT NOT NULL,
    summary TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS wear_card_network ON wear_results (card_key, schema, submitter, status, id);
CREATE INDEX IF NOT EXISTS wear_submitter_time ON wear_results (submitter, created_at);
";

/// Inserts a wear result; `$1` is its id.
pub const INSERT: &str = "INSERT INTO wear_results (id, created_at, status, moderation, idem_key, body_hash, \
    content_hash, delete_hash, submitter, card_key, card, schema, report, summary) \
    VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// A key already used: by a wear result (its id, body hash, status,
/// moderation note), or by a run result (its id and body hash).
pub const FIND_KEY: &str = "SELECT id, body_hash, status, moderation FROM wear_results WHERE idem_key = $1";
pub const FIND_RUN_KEY: &str = "SELECT id, body_hash FROM results WHERE idem_key = $1";

/// The columns of a stored wear result, in [`StoredWear`]'s order.
pub const GET: &str = "SELECT id, created_at, status, moderation, card_key, card, schema, submitter, report, \
    summary, content_hash FROM wear_results WHERE id = $1";

pub const DELETE_HASH: &str = "SELECT delete_hash FROM wear_results WHERE id = $1";
pub const DELETE: &str = "DELETE FROM wear_results WHERE id = $1";
pub const SET_STATUS: &str = "UPDATE wear_results SET status = $1, moderation = $2 WHERE id = $3";

/// Every wear result of the network that sent one, and of a network.
pub const NETWORK_OF: &str = "SELECT submitter FROM wear_results WHERE id = $1";
pub const OF_NETWORK: &str = "SELECT id FROM wear_results WHERE submitter = $1 ORDER BY id";

/// The newest shown (public or flagged) result of each network for a card
/// and schema, with how many distinct reports that network sent of it.
pub const CARD_ENTRIES: &str = "SELECT w.id, w.created_at, w.schema, w.status, w.moderation, w.summary, \
    (SELECT COUNT(DISTINCT o.content_hash) FROM wear_results o WHERE o.card_key = w.card_key \
        AND o.schema = w.schema AND o.submitter = w.submitter AND o.status <> 'hidden') \
    FROM wear_results w WHERE w.card_key = $1 AND w.schema = $2 AND w.status <> 'hidden' AND w.id = (SELECT MAX(x.id) \
        FROM wear_results x WHERE x.card_key = w.card_key AND x.schema = w.schema \
        AND x.submitter = w.submitter AND x.status <> 'hidden') \
    ORDER BY w.id DESC LIMIT $3";

/// The schemas a card page lists, each with its own [`LISTED`] entries.
pub const SCHEMAS: [&str; 2] = [storage_scoring::endurance::SCHEMA, storage_scoring::power_loss::SCHEMA];

/// The card's identity as its first wear result spelled it.
pub const CARD_FIRST: &str =
    "SELECT card FROM wear_results WHERE card_key = $1 AND status <> 'hidden' ORDER BY id LIMIT 1";

/// The most networks listed per schema on a card page.
pub const LISTED: i64 = 100;

/// A wear result ready to store.
#[derive(Debug, Clone)]
pub struct NewWear {
    pub idempotency_key: String,
    pub body_hash: String,
    pub content_hash: String,
    pub delete_hash: String,
    pub submitter: String,
    pub created_at: i64,
    pub card_key: String,
    pub card: Card,
    /// `storage-score-endurance/1` or `storage-score-power-loss/1`.
    pub schema: String,
    pub report_json: String,
    /// What the card page shows ([`storage_scoring::wear`]'s summaries), as JSON.
    pub summary_json: String,
}

impl NewWear {
    /// Its values for [`INSERT`] from `$2` on, in order.
    pub fn values(&self) -> (i64, [String; 11]) {
        (
            self.created_at,
            [
                Status::Public.as_str().to_owned(),
                self.idempotency_key.clone(),
                self.body_hash.clone(),
                self.content_hash.clone(),
                self.delete_hash.clone(),
                self.submitter.clone(),
                self.card_key.clone(),
                serde_json::to_string(&self.card).unwrap_or_default(),
                self.schema.clone(),
                self.report_json.clone(),
                self.summary_json.clone(),
            ],
        )
    }
}

/// What the submitter is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WearReceipt {
    pub id: i64,
    pub status: Status,
    pub reasons: Vec<String>,
}

/// The outcome of a wear submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WearSubmitted {
    Created(WearReceipt),
    Replayed(WearReceipt),
    /// The key was used for another body (of either kind).
    KeyReused,
}

/// A stored wear result.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredWear {
    pub id: i64,
    pub created_at: i64,
    pub status: Status,
    pub reasons: Vec<String>,
    pub card_key: String,
    pub card: Card,
    pub schema: String,
    pub submitter: String,
    pub report_json: String,
    pub summary_json: String,
}

impl StoredWear {
    /// From [`GET`]'s columns, as the backends read them.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        id: i64,
        created_at: i64,
        status: &str,
        moderation: Option<&str>,
        card_key: String,
        card: &str,
        schema: String,
        submitter: String,
        report_json: String,
        summary_json: String,
    ) -> StoredWear {
        let (_, reasons) = super::reasons_of("[]", moderation);
        StoredWear {
            id,
            created_at,
            status: Status::parse(status),
            reasons,
            card_key,
            card: card_of(card),
            schema,
            submitter,
            report_json,
            summary_json,
        }
    }
}

/// A card's identity as stored (an unnamed card if it no longer reads).
pub fn card_of(text: &str) -> Card {
    serde_json::from_str(text).unwrap_or_else(|_| Card::of(None))
}

/// One network's newest wear result of a card.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WearEntry {
    pub id: i64,
    pub created_at: i64,
    #[serde(skip)]
    pub schema: String,
    pub status: Status,
    pub reasons: Vec<String>,
    /// [`storage_scoring::wear`]'s summary of the report.
    pub summary: serde_json::Value,
    /// The network's other distinct reports of this card and schema.
    pub more: i64,
}

impl WearEntry {
    /// From [`CARD_ENTRIES`]'s columns.
    pub fn of(
        (id, created_at, schema, status, moderation, summary, distinct): (
            i64,
            i64,
            String,
            String,
            Option<String>,
            String,
            i64,
        ),
    ) -> WearEntry {
        let (_, reasons) = super::reasons_of("[]", moderation.as_deref());
        WearEntry {
            id,
            created_at,
            schema,
            status: Status::parse(&status),
            reasons,
            summary: serde_json::from_str(&summary).unwrap_or_default(),
            more: (distinct - 1).max(0),
        }
    }
}

/// A card's wear results: its identity (from the first), and the entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WearCard {
    pub card: Option<Card>,
    pub entries: Vec<WearEntry>,
}

impl WearCard {
    /// The entries of one schema, newest first.
    pub fn of_schema<'a>(&'a self, schema: &'a str) -> impl Iterator<Item = &'a WearEntry> + 'a {
        self.entries.iter().filter(move |e| e.schema == schema)
    }
}

/// The status a moderation leaves a wear result in, and its note.
pub fn moderated(action: &Moderation) -> (Status, Option<String>) {
    let note = action.note();
    let (status, _) = super::status_of(&[], note.as_ref());
    (status, super::note_json(note.as_ref()))
}

/// What both backends offer for wear results ([`super::Storage`] asks for it).
pub trait WearStore {
    /// Stores a wear result unless its key is known (then replays or refuses).
    fn wear_submit(&self, new: NewWear) -> impl Future<Output = StoreResult<WearSubmitted>> + Send;
    fn wear_get(&self, id: i64) -> impl Future<Output = StoreResult<Option<StoredWear>>> + Send;
    /// Deletes it if `delete_hash` is its own.
    fn wear_delete(&self, id: i64, delete_hash: String) -> impl Future<Output = StoreResult<Deleted>> + Send;
    /// Flags, hides, accepts (counts as public: nothing is held here) or
    /// restores it; `None` when there is no such wear result.
    fn wear_moderate(
        &self,
        id: i64,
        action: Moderation,
    ) -> impl Future<Output = StoreResult<Option<WearReceipt>>> + Send;
    /// The network that sent wear result `id`.
    fn wear_network(&self, id: i64) -> impl Future<Output = StoreResult<Option<String>>> + Send;
    /// Every wear result a network sent, oldest first.
    fn wear_of_network(&self, submitter: String) -> impl Future<Output = StoreResult<Vec<i64>>> + Send;
    fn wear_card(&self, card_key: String) -> impl Future<Output = StoreResult<WearCard>> + Send;
}
