//! The SQLite side of [`crate::store::migrate`]: the schema made or
//! brought up to date in one transaction on start, before anything is
//! served.
//!
//! Version 1's `results` table reused the id of a deleted newest result
//! (a plain `INTEGER PRIMARY KEY`); version 2's is `AUTOINCREMENT`, which
//! never does. SQLite cannot add that to a table, so the upgrade builds
//! the new table beside the old one, copies every row under its id, and
//! swaps them.

use rusqlite::{Connection, OptionalExtension, ToSql, TransactionBehavior};

use super::rows::result_from_row;
use super::write::{Touched, insert_params, recompute};
use crate::card::Card;

use crate::store::migrate::{
    LEGACY_COLUMNS, LegacyRow, REKEY_COLUMNS, Rekeyed, SALT_KEY, SET_KEYS, VERSION_KEY, announce, new_salt, upgrade,
};
use crate::store::{StoreResult, note_json, sql};

/// The id type of SQLite's `results`.
pub const ID: &str = "INTEGER PRIMARY KEY AUTOINCREMENT";

/// Makes or upgrades the schema; returns the submitter salt.
pub fn prepare(conn: &mut Connection) -> StoreResult<String> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(sql::META)?;
    let version: Option<i64> = tx
        .query_row("SELECT value FROM meta WHERE key = $1", [VERSION_KEY], |r| r.get::<_, String>(0))
        .optional()?
        .and_then(|v| v.parse().ok());
    let has_results: bool =
        tx.query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'results'", [], |r| {
            r.get::<_, i64>(0)
        })? > 0;
    let added = has_results && add_figure_columns(&tx)?;
    match (version, has_results) {
        (None, true) => {
            let count = from_v1(&tx)?;
            announce(1, count);
        }
        (Some(2), true) => {
            let count = from_v2(&tx)?;
            announce(2, count);
        }
        _ => {
            tx.execute_batch(&sql::schema(ID))?;
            if added {
                rebuild_aggregates(&tx)?;
            }
        }
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [VERSION_KEY, &sql::SCHEMA_VERSION.to_string()],
    )?;
    tx.execute("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", [SALT_KEY, &new_salt()])?;
    let salt: String = tx.query_row("SELECT value FROM meta WHERE key = $1", [SALT_KEY], |r| r.get(0))?;
    tx.commit()?;
    Ok(salt)
}

/// Adds the column of each figure the leaderboard keeps that an existing
/// database lacks (a figure kept since it was made), and fills it in
/// `results` from the stored reports; whether it added any.
fn add_figure_columns(conn: &Connection) -> StoreResult<bool> {
    let mut added = false;
    for table in sql::FIGURE_TABLES {
        let have: Vec<String> = conn
            .prepare("SELECT name FROM pragma_table_info($1)")?
            .query_map([table], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for (figure, column) in sql::missing_figure_columns(&have) {
            conn.execute_batch(&sql::add_figure_column(table, column))?;
            added = true;
            if table == "results" {
                let number = format!(
                    "CASE WHEN json_valid(report) AND json_type(report, '$.measurements.{key}') IN ('integer', 'real') \
                     THEN json_extract(report, '$.measurements.{key}') END",
                    key = figure.key()
                );
                conn.execute_batch(&sql::backfill_figure(column, &number))?;
            }
        }
    }
    Ok(added)
}

/// Every public result's sample, row and card computed again (a figure
/// column was added: its medians).
fn rebuild_aggregates(conn: &Connection) -> StoreResult<()> {
    let mut touched = Touched::default();
    let pairs: Vec<(String, String)> = conn
        .prepare(sql::PUBLIC_PAIRS)?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (group, submitter) in pairs {
        if !touched.groups.contains(&group) {
            let sample = conn.prepare_cached(sql::group_sample())?.query_row([&group], result_from_row)?;
            touched.cards.entry(sample.card_key).or_insert(sample.card);
        }
        touched.groups.insert(group.clone());
        touched.pairs.insert((group, submitter));
    }
    recompute(conn, &touched)
}

/// Version 1 to 2; returns how many results were carried over.
fn from_v1(conn: &Connection) -> StoreResult<usize> {
    conn.execute_batch("DROP TABLE IF EXISTS groups")?;
    conn.execute_batch(&sql::results_table("results_v2", ID))?;
    let mut touched = Touched::default();
    let mut count = 0;
    {
        let mut read = conn.prepare(&format!("SELECT {LEGACY_COLUMNS} FROM results ORDER BY id"))?;
        let mut insert = conn.prepare(&sql::insert_result("results_v2", true))?;
        let mut rows = read.query([])?;
        while let Some(r) = rows.next()? {
            let legacy = LegacyRow {
                id: r.get(0)?,
                created_at: r.get(1)?,
                moderation: r.get(2)?,
                idem_key: r.get(3)?,
                body_hash: r.get(4)?,
                delete_hash: r.get(5)?,
                report: r.get(6)?,
            };
            let (id, moderation) = (legacy.id, legacy.moderation.clone());
            let (new, status) = upgrade(legacy);
            let mut params = insert_params(&new);
            params[1] = Box::new(status.as_str());
            params[3] = Box::new(moderation.clone().map(|m| note_json_of(&m)));
            params.push(Box::new(id));
            let refs: Vec<&dyn ToSql> = params.iter().map(|p| p.as_ref()).collect();
            insert.execute(refs.as_slice())?;
            if status == crate::store::Status::Public {
                touched.pairs.insert((new.group_key.clone(), new.submitter.clone()));
                touched.groups.insert(new.group_key.clone());
                touched.cards.entry(new.card_key.clone()).or_insert_with(|| new.card.clone());
            }
            count += 1;
        }
    }
    conn.execute_batch("DROP TABLE results; ALTER TABLE results_v2 RENAME TO results;")?;
    for index in sql::V1_INDEXES {
        conn.execute_batch(&format!("DROP INDEX IF EXISTS {index}"))?;
    }
    conn.execute_batch(sql::indexes_and_aggregates())?;
    recompute(conn, &touched)?;
    Ok(count)
}

/// Version 2 to 3: every result keyed again, the aggregates rebuilt.
fn from_v2(conn: &Connection) -> StoreResult<usize> {
    conn.execute_batch("DROP TABLE IF EXISTS submitters; DROP TABLE IF EXISTS groups;")?;
    conn.execute_batch(sql::indexes_and_aggregates())?;
    let mut touched = Touched::default();
    let mut count = 0;
    {
        let mut read = conn.prepare(&format!("SELECT {REKEY_COLUMNS} FROM results ORDER BY id"))?;
        let mut update = conn.prepare(SET_KEYS)?;
        let mut rows = read.query([])?;
        while let Some(r) = rows.next()? {
            let card = Card {
                kind: r.get(3)?,
                manufacturer_id: r.get::<_, Option<i64>>(4)?.and_then(|m| u8::try_from(m).ok()),
                manufacturer: r.get(5)?,
                oem_id: r.get(6)?,
                product_name: r.get(7)?,
                product_revision: r.get(8)?,
                capacity_bytes: r.get::<_, Option<i64>>(9)?.and_then(|c| u64::try_from(c).ok()),
                class_label: r.get(10)?,
            };
            let status: String = r.get(1)?;
            let row = Rekeyed::of(
                r.get(0)?,
                &status,
                r.get(2)?,
                card,
                [r.get(11)?, r.get(12)?, r.get(13)?],
                [r.get(14)?, r.get(15)?],
            );
            if row.changed {
                update.execute(rusqlite::params![row.card_key, row.group_key, row.id])?;
            }
            if row.public {
                touched.pairs.insert((row.group_key.clone(), row.submitter.clone()));
                touched.groups.insert(row.group_key.clone());
                touched.cards.entry(row.card_key.clone()).or_insert_with(|| row.card.clone());
            }
            count += 1;
        }
    }
    recompute(conn, &touched)?;
    Ok(count)
}

/// A stored note, read and written again (so that a damaged one is dropped
/// rather than carried over).
fn note_json_of(stored: &str) -> String {
    let note = serde_json::from_str(stored).ok();
    note_json(note.as_ref()).unwrap_or_else(|| stored.to_owned())
}
