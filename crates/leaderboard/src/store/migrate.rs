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
//! The backends run the SQL ([`super::sqlite`], [`super::postgres`]); this
//! module says what each old row becomes.

use rand::RngCore;

use super::{NewResult, reasons_json, reasons_of, sql};
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
    eprintln!(
        "migrated the database from schema {from} to {}: {results} results judged again by today's rules, every leaderboard row rebuilt",
        sql::SCHEMA_VERSION
    );
}
