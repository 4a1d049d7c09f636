//! Bringing an older database up to this version's schema, on start,
//! keeping every stored result ([`sql::SCHEMA_VERSION`]).
//!
//! Version 1 (before submitters were counted) to 2: every stored report is
//! judged again by today's rules ([`intake::reassess`]): its card, board
//! and bus are worked out anew (the maker from the MID, canonical boards),
//! and its automatic flags too, so a result that today's ceilings call
//! impossible leaves the ranking, flagged with the reason; a result that
//! today's rules would refuse is kept, flagged. A moderator's decision
//! stays. Then every submitter sample and leaderboard row is rebuilt.
//!
//! No address was kept before version 2, so an old result's submitter is
//! its card's salted serial hash when the report carries one (repeat runs
//! of one card from one installation count once), else the result alone.
//!
//! Version 2 to 3: card keys compare case-folded and by confusable
//! skeleton ([`crate::card::key_text`]), so every result's card and row
//! key is worked out again from its stored fields (`TransMemory` and
//! `TRANSMEMORY` become one card); the `submitters` and `groups` tables,
//! which gain the columns of held networks, are rebuilt from the results.
//!
//! The backends run the SQL ([`super::sqlite`], [`super::postgres`]); this
//! module says what each old row becomes.

use rand::RngCore;

use super::{NewResult, Status, reasons_json, reasons_of, sql};
use crate::card::{Card, group_key};
use crate::intake::{self, Submission};

/// The `meta` key of the schema version.
pub const VERSION_KEY: &str = "schema_version";
/// The `meta` key of the submitter salt.
pub const SALT_KEY: &str = "submitter_salt";

/// What a version-1 row holds that the upgrade needs.
#[derive(Debug, Clone)]
pub struct LegacyRow {
    pub id: i64,
    pub created_at: i64,
    pub moderation: Option<String>,
    pub idem_key: String,
    pub body_hash: String,
    pub delete_hash: String,
    pub report: String,
}

/// The columns [`LegacyRow`] is read from, in its order.
pub const LEGACY_COLUMNS: &str = "id, created_at, moderation, idem_key, body_hash, delete_hash, report";

/// A version-1 row as a version-2 result: what to insert under the same
/// id, and the status its moderation gives it.
pub fn upgrade(row: LegacyRow) -> (NewResult, super::Status) {
    let accepted = intake::reassess(&row.report);
    let submitter = match accepted.report.device.as_ref().and_then(|d| d.serial_hash.as_deref()) {
        Some(hash) => format!("legacy:{hash}"),
        None => format!("legacy:result-{}", row.id),
    };
    let new = accepted.into_new(Submission {
        idempotency_key: row.idem_key,
        body_hash: row.body_hash,
        delete_hash: row.delete_hash,
        submitter,
        created_at: row.created_at,
    });
    let (status, _) = reasons_of(&reasons_json(&new.reasons), row.moderation.as_deref());
    (new, status)
}

/// The columns a version-2 row is re-keyed from, in [`Rekeyed::of`]'s order.
pub const REKEY_COLUMNS: &str = "id, status, submitter, kind, manufacturer_id, manufacturer, oem_id, product_name, \
    product_revision, capacity_bytes, class_label, board_key, bus, formula, card_key, group_key";

/// A version-2 row's keys under today's rules.
#[derive(Debug, Clone)]
pub struct Rekeyed {
    pub id: i64,
    pub public: bool,
    pub submitter: String,
    pub card: Card,
    pub card_key: String,
    pub group_key: String,
    /// Whether either key differs from the stored one.
    pub changed: bool,
}

impl Rekeyed {
    /// From the row's stored fields (`id`, `status`, `submitter`, the card's
    /// fields, `board_key`, `bus`, `formula`) and its stored keys.
    pub fn of(id: i64, status: &str, submitter: String, card: Card, row: [String; 3], stored: [String; 2]) -> Rekeyed {
        let [board_key, bus, formula] = row;
        let card_key = card.key();
        let group_key = group_key(&card_key, &board_key, &bus, &formula);
        let changed = stored != [card_key.clone(), group_key.clone()];
        Rekeyed { id, public: status == Status::Public.as_str(), submitter, card, card_key, group_key, changed }
    }
}

/// A new secret salt for submitter ids, as hex.
pub fn new_salt() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    crate::auth::hex(&bytes)
}

/// The salt's bytes from its stored hex.
pub fn salt_bytes(hex: &str) -> Vec<u8> {
    hex.as_bytes().to_vec()
}

/// What a start found, for its one line on stderr.
pub fn announce(from: i64, results: usize) {
    let what = if from < 2 { "judged again by today's rules" } else { "keyed again (card names compared case-folded)" };
    eprintln!(
        "migrated the database from schema {from} to {}: {results} results {what}, every leaderboard row rebuilt",
        sql::SCHEMA_VERSION
    );
}

/// The statement that sets a re-keyed result's keys.
pub const SET_KEYS: &str = "UPDATE results SET card_key = $1, group_key = $2 WHERE id = $3";
