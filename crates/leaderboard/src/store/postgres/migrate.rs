//! The PostgreSQL side of [`crate::store::migrate`]: the schema made or
//! brought up to date on start, in one transaction, under a session
//! advisory lock so that replicas starting together upgrade it once.
//!
//! A `BIGSERIAL` never hands out an id twice, so version 1's `results`
//! table is upgraded in place: the new columns are added, every row is
//! judged again and rewritten under its id, and the aggregates rebuilt.

use std::collections::{BTreeMap, BTreeSet};

use tokio_postgres::Client;

use super::rows::{borrowed, result_from_row};
use super::write::{GroupIdentity, Prepared, insert_params, recompute, update_card_display};
use crate::card::Card;
use crate::store::migrate::{
    LEGACY_COLUMNS, LegacyRow, REKEY_COLUMNS, Rekeyed, SALT_KEY, SET_KEYS, VERSION_KEY, announce, new_salt, upgrade,
};
use crate::store::{Status, StoreResult, note_json, sql};

/// The id type of PostgreSQL's `results`.
pub const ID: &str = "BIGSERIAL PRIMARY KEY";

/// The advisory lock key replicas take while they prepare the schema.
const MIGRATION_LOCK: i64 = 0x5353_4c42; // "SSLB"

/// Columns version 2 adds to `results`, with their types.
const NEW_COLUMNS: [(&str, &str); 12] = [
    ("content_hash", "TEXT"),
    ("submitter", "TEXT"),
    ("label", "TEXT"),
    ("label_key", "TEXT"),
    ("board_key", "TEXT"),
    ("board_revision", "TEXT"),
    ("family", "TEXT"),
    ("family_key", "TEXT"),
    ("seq_read", "DOUBLE PRECISION"),
    ("seq_write", "DOUBLE PRECISION"),
    ("rand_read", "DOUBLE PRECISION"),
    ("rand_write", "DOUBLE PRECISION"),
];

/// Makes or upgrades the schema; returns the submitter salt.
pub async fn prepare(client: &mut Client) -> StoreResult<String> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK]).await?;
    let result = prepare_locked(client).await;
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]).await;
    let salt = result?;
    unlocked?;
    Ok(salt)
}

async fn prepare_locked(client: &mut Client) -> StoreResult<String> {
    let tx = client.transaction().await?;
    tx.batch_execute(sql::META).await?;
    let version: Option<i64> = tx
        .query_opt("SELECT value FROM meta WHERE key = $1", &[&VERSION_KEY])
        .await?
        .map(|r| r.try_get::<_, String>(0))
        .transpose()?
        .and_then(|v| v.parse().ok());
    let has_results: bool = tx.query_one("SELECT to_regclass('results') IS NOT NULL", &[]).await?.try_get(0)?;
    let added = has_results && add_figure_columns(&tx).await?;
    if version.is_none() && has_results {
        let count = from_v1(&tx).await?;
        announce(1, count);
    } else if version == Some(2) && has_results {
        let count = from_v2(&tx).await?;
        announce(2, count);
    } else {
        tx.batch_execute(&sql::schema(ID)).await?;
        if added {
            rebuild_aggregates(&tx).await?;
        }
    }
    tx.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&VERSION_KEY, &sql::SCHEMA_VERSION.to_string()],
    )
    .await?;
    tx.execute("INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING", &[&SALT_KEY, &new_salt()])
        .await?;
    let salt: String = tx.query_one("SELECT value FROM meta WHERE key = $1", &[&SALT_KEY]).await?.try_get(0)?;
    // Endurance and power-loss results: made here, under the lock, so that
    // replicas starting together do not race to make it.
    tx.batch_execute(crate::store::wear::TABLE).await?;
    tx.commit().await?;
    Ok(salt)
}

/// Adds the column of each figure the leaderboard keeps that an existing
/// database lacks (a figure kept since it was made), and fills it in
/// `results` from the stored reports; whether it added any.
async fn add_figure_columns(tx: &tokio_postgres::Transaction<'_>) -> StoreResult<bool> {
    let mut added = false;
    for table in sql::FIGURE_TABLES {
        let have: Vec<String> = tx
            .query("SELECT column_name::text FROM information_schema.columns WHERE table_name = $1", &[&table])
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        for (figure, column) in sql::missing_figure_columns(&have) {
            tx.batch_execute(&sql::add_figure_column(table, column)).await?;
            added = true;
            if table == "results" {
                let number = format!(
                    "CASE WHEN jsonb_typeof(CAST(report AS jsonb) -> 'measurements' -> '{key}') = 'number' \
                     THEN CAST(CAST(report AS jsonb) -> 'measurements' ->> '{key}' AS DOUBLE PRECISION) END",
                    key = figure.key()
                );
                tx.batch_execute(&sql::backfill_figure(column, &number)).await?;
            }
        }
    }
    Ok(added)
}

/// Every public result's sample, row and card computed again (a figure
/// column was added: its medians).
async fn rebuild_aggregates(tx: &tokio_postgres::Transaction<'_>) -> StoreResult<()> {
    let p = Prepared::new(tx.client()).await?;
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for row in tx.query(sql::PUBLIC_PAIRS, &[]).await? {
        groups.entry(row.try_get(0)?).or_default().push(row.try_get(1)?);
    }
    let mut cards = BTreeMap::new();
    for (group, submitters) in groups {
        let sample = result_from_row(&tx.query_one(&p.group_sample, &[&group]).await?)?;
        recompute(tx, &p, &group, &sample.card, &submitters, None).await?;
        cards.insert(sample.card_key, sample.card);
    }
    for (card_key, card) in cards {
        update_card_display(tx, &p, &card_key, &card).await?;
    }
    Ok(())
}

/// Version 2 to 3, in place: every result keyed again, the aggregates rebuilt.
async fn from_v2(tx: &tokio_postgres::Transaction<'_>) -> StoreResult<usize> {
    tx.batch_execute("DROP TABLE IF EXISTS submitters; DROP TABLE IF EXISTS groups;").await?;
    tx.batch_execute(sql::indexes_and_aggregates()).await?;
    let update = tx.prepare(SET_KEYS).await?;
    let read = tx.prepare(&format!("SELECT {REKEY_COLUMNS} FROM results ORDER BY id")).await?;
    let cursor = tx.bind(&read, &[]).await?;
    let mut touched: BTreeMap<String, (BTreeSet<String>, Card, String)> = BTreeMap::new();
    let mut count = 0;
    loop {
        let rows = tx.query_portal(&cursor, 500).await?;
        if rows.is_empty() {
            break;
        }
        for r in &rows {
            let card = Card {
                kind: r.try_get(3)?,
                manufacturer_id: r.try_get::<_, Option<i64>>(4)?.and_then(|m| u8::try_from(m).ok()),
                manufacturer: r.try_get(5)?,
                oem_id: r.try_get(6)?,
                product_name: r.try_get(7)?,
                product_revision: r.try_get(8)?,
                capacity_bytes: r.try_get::<_, Option<i64>>(9)?.and_then(|c| u64::try_from(c).ok()),
                class_label: r.try_get(10)?,
            };
            let status: String = r.try_get(1)?;
            let row = Rekeyed::of(
                r.try_get(0)?,
                &status,
                r.try_get(2)?,
                card,
                [r.try_get(11)?, r.try_get(12)?, r.try_get(13)?],
                [r.try_get(14)?, r.try_get(15)?],
            );
            if row.changed {
                tx.execute(&update, &[&row.card_key, &row.group_key, &row.id]).await?;
            }
            if row.public {
                let entry = touched
                    .entry(row.group_key.clone())
                    .or_insert_with(|| (BTreeSet::new(), row.card.clone(), row.card_key.clone()));
                entry.0.insert(row.submitter.clone());
            }
            count += 1;
        }
    }
    drop(cursor);
    let p = Prepared::new(tx.client()).await?;
    let mut cards = BTreeMap::new();
    for (group, (submitters, card, card_key)) in touched {
        let submitters: Vec<String> = submitters.into_iter().collect();
        recompute(tx, &p, &group, &card, &submitters, None).await?;
        cards.insert(card_key, card);
    }
    for (card_key, card) in cards {
        update_card_display(tx, &p, &card_key, &card).await?;
    }
    Ok(count)
}

/// Version 1 to 2, in place; returns how many results were carried over.
async fn from_v1(tx: &tokio_postgres::Transaction<'_>) -> StoreResult<usize> {
    tx.batch_execute("DROP TABLE IF EXISTS groups").await?;
    for (column, kind) in NEW_COLUMNS {
        tx.batch_execute(&format!("ALTER TABLE results ADD COLUMN IF NOT EXISTS {column} {kind}")).await?;
    }
    for index in sql::V1_INDEXES {
        tx.batch_execute(&format!("DROP INDEX IF EXISTS {index}")).await?;
    }
    // Every row rewritten under its id: read through a cursor whose
    // snapshot is taken before the rows are deleted, a page at a time, and
    // inserted again as version 2 has them.
    let insert = tx.prepare(&sql::insert_result("results", true)).await?;
    let read = tx.prepare(&format!("SELECT {LEGACY_COLUMNS} FROM results ORDER BY id")).await?;
    let cursor = tx.bind(&read, &[]).await?;
    tx.batch_execute("DELETE FROM results").await?;
    let mut touched: BTreeMap<String, (BTreeSet<String>, GroupIdentity)> = BTreeMap::new();
    let mut count = 0;
    loop {
        let rows = tx.query_portal(&cursor, 500).await?;
        if rows.is_empty() {
            break;
        }
        for r in &rows {
            let legacy = LegacyRow {
                id: r.try_get(0)?,
                created_at: r.try_get(1)?,
                moderation: r.try_get(2)?,
                idem_key: r.try_get(3)?,
                body_hash: r.try_get(4)?,
                delete_hash: r.try_get(5)?,
                report: r.try_get(6)?,
            };
            let (id, moderation) = (legacy.id, legacy.moderation.clone());
            let (new, status) = upgrade(legacy);
            let mut params = insert_params(&new);
            params.pop(); // the group key to lock, which only a live insert takes
            params[1] = Box::new(status.as_str().to_owned());
            params[3] = Box::new(moderation.map(|m| {
                let note = serde_json::from_str(&m).ok();
                note_json(note.as_ref()).unwrap_or(m)
            }));
            params.push(Box::new(id));
            let refs = borrowed(&params);
            tx.execute(&insert, &refs).await?;
            if status == Status::Public {
                let entry = touched
                    .entry(new.group_key.clone())
                    .or_insert_with(|| (BTreeSet::new(), GroupIdentity::of_new(&new)));
                entry.0.insert(new.submitter.clone());
            }
            count += 1;
        }
    }
    // Closed before the table is altered again (an open cursor holds it).
    drop(cursor);
    for (column, _) in NEW_COLUMNS {
        if !matches!(column, "label" | "label_key" | "board_revision")
            && !column.starts_with("seq_")
            && !column.starts_with("rand_")
        {
            tx.batch_execute(&format!("ALTER TABLE results ALTER COLUMN {column} SET NOT NULL")).await?;
        }
    }
    tx.batch_execute(sql::indexes_and_aggregates()).await?;
    // Every public result's sample, row and card.
    let p = Prepared::new(tx.client()).await?;
    let mut cards = BTreeMap::new();
    for (group, (submitters, identity)) in touched {
        let submitters: Vec<String> = submitters.into_iter().collect();
        cards.insert(identity.card_key.clone(), identity.card.clone());
        let card = identity.card.clone();
        recompute(tx, &p, &group, &card, &submitters, Some(identity)).await?;
    }
    for (card_key, card) in cards {
        update_card_display(tx, &p, &card_key, &card).await?;
    }
    Ok(count)
}
