//! The PostgreSQL backend, for a community that outgrows one box.
//!
//! Every write is one transaction on a pooled connection, committed before
//! the answer. Several server replicas may share the database: idempotency
//! is the unique `idem_key` (`INSERT … ON CONFLICT DO NOTHING` waits for a
//! concurrent insert of the same key and then sees it), and a leaderboard
//! row is recomputed under a transaction-scoped advisory lock on its group,
//! so the last writer to a group always sees every committed result.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Semaphore;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, NoTls, Row as PgRow, Statement};

use super::sql;
use super::sqlite::{moderation_note, reasons_of};
use super::{
    CARD_POINTS, CardData, CardPoint, Deleted, FilterChoices, LeaderboardQuery, Moderation, NewResult, Receipt, Row,
    Status, Storage, StoreError, StoreResult, StoredResult, Submitted, date_of,
};
use crate::card::Card;

/// Connections in the pool. A commit waits for the WAL flush; with several
/// transactions in flight, one flush serves them all (PostgreSQL's own group
/// commit). On the 2-core bench machine 8 and 16 gave the same rate: CPU
/// and the round trips of a transaction bound it (`cargo xtask lb-bench`).
const POOL: usize = 16;

/// A connection and its prepared statements.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Conn {
    async fn statement(&mut self, text: &str) -> StoreResult<Statement> {
        if let Some(s) = self.statements.get(text) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(text).await?;
        self.statements.insert(text.to_owned(), s.clone());
        Ok(s)
    }
}

/// The PostgreSQL store.
pub struct PgStore {
    url: String,
    idle: Mutex<Vec<Conn>>,
    slots: Semaphore,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

async fn connect(url: &str) -> StoreResult<Conn> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| StoreError(format!("cannot connect to PostgreSQL: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("postgres connection closed: {e}");
        }
    });
    Ok(Conn { client, statements: HashMap::new() })
}

/// A pooled connection, returned to the pool on drop unless broken.
struct Lease<'a> {
    store: &'a PgStore,
    conn: Option<Conn>,
    _slot: tokio::sync::SemaphorePermit<'a>,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if !conn.client.is_closed() {
                self.store.idle.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            }
        }
    }
}

impl Lease<'_> {
    fn conn(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("a lease holds a connection until dropped")
    }
}

impl PgStore {
    /// Connects and creates the tables if they are missing.
    pub async fn open(url: &str) -> StoreResult<PgStore> {
        let store = PgStore { url: url.to_owned(), idle: Mutex::new(Vec::new()), slots: Semaphore::new(POOL) };
        {
            let mut lease = store.lease().await?;
            lease.conn().client.batch_execute(&sql::SCHEMA.replace("{id}", "BIGSERIAL PRIMARY KEY")).await?;
        }
        Ok(store)
    }

    async fn lease(&self) -> StoreResult<Lease<'_>> {
        let slot = self.slots.acquire().await.map_err(|_| StoreError("closed".into()))?;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => connect(&self.url).await?,
        };
        Ok(Lease { store: self, conn: Some(conn), _slot: slot })
    }

    async fn query(&self, text: &str, params: &[&(dyn ToSql + Sync)]) -> StoreResult<Vec<PgRow>> {
        let mut lease = self.lease().await?;
        let conn = lease.conn();
        let statement = conn.statement(text).await?;
        Ok(conn.client.query(&statement, params).await?)
    }
}

impl Storage for PgStore {
    async fn submit(&self, new: NewResult) -> StoreResult<Submitted> {
        let mut lease = self.lease().await?;
        let conn = lease.conn();
        let insert =
            conn.statement(&format!("{} ON CONFLICT (idem_key) DO NOTHING RETURNING id", sql::INSERT_RESULT)).await?;
        let find = conn.statement(sql::FIND_KEY).await?;
        let status = new.status();
        let auto = serde_json::to_string(&new.reasons).expect("strings serialize");
        let card = &new.card;
        let manufacturer_id = card.manufacturer_id.map(i64::from);
        let capacity = card.capacity_bytes.map(|c| c as i64);
        let tx = conn.client.transaction().await?;
        let inserted = tx
            .query_opt(
                &insert,
                &[
                    &new.created_at,
                    &status.as_str(),
                    &auto,
                    &new.idempotency_key,
                    &new.body_hash,
                    &new.delete_hash,
                    &new.group_key,
                    &new.card_key,
                    &card.kind,
                    &manufacturer_id,
                    &card.manufacturer,
                    &card.oem_id,
                    &card.product_name,
                    &card.product_revision,
                    &capacity,
                    &card.class_label,
                    &new.board,
                    &new.bus,
                    &new.formula,
                    &new.verdict_version,
                    &new.score,
                    &new.claimed,
                    &new.measured,
                    &new.report_json,
                    &new.verdict_json,
                ],
            )
            .await?;
        let Some(row) = inserted else {
            // The key is taken (perhaps by a concurrent request that has now committed).
            let known = tx.query_one(&find, &[&new.idempotency_key]).await?;
            tx.rollback().await?;
            let body_hash: String = known.get(1);
            if body_hash != new.body_hash {
                return Ok(Submitted::KeyReused);
            }
            let auto: String = known.get(3);
            let moderation: Option<String> = known.get(4);
            let (status, reasons) = reasons_of(&auto, moderation.as_deref());
            return Ok(Submitted::Replayed(Receipt {
                id: known.get(0),
                status,
                reasons,
                score: known.get(5),
                formula: known.get(6),
            }));
        };
        let id: i64 = row.get(0);
        if status == Status::Public {
            recompute_group(&tx, &new.group_key).await?;
        }
        tx.commit().await?;
        Ok(Submitted::Created(Receipt {
            id,
            status,
            reasons: new.reasons.clone(),
            score: new.score,
            formula: new.formula.clone(),
        }))
    }

    async fn get(&self, id: i64) -> StoreResult<Option<StoredResult>> {
        Ok(self.query(&sql::get_result(), &[&id]).await?.first().map(result_from_row))
    }

    async fn delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        let mut lease = self.lease().await?;
        let tx = lease.conn().client.transaction().await?;
        let Some(row) =
            tx.query_opt("SELECT delete_hash, group_key FROM results WHERE id = $1 FOR UPDATE", &[&id]).await?
        else {
            return Ok(Deleted::NotFound);
        };
        let stored: String = row.get(0);
        if !crate::auth::same_secret(&stored, &delete_hash) {
            return Ok(Deleted::WrongToken);
        }
        let group: String = row.get(1);
        tx.execute(sql::DELETE_RESULT, &[&id]).await?;
        recompute_group(&tx, &group).await?;
        tx.commit().await?;
        Ok(Deleted::Deleted)
    }

    async fn moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<Receipt>> {
        let mut lease = self.lease().await?;
        let tx = lease.conn().client.transaction().await?;
        let Some(row) = tx
            .query_opt("SELECT auto_reasons, group_key, score, formula FROM results WHERE id = $1 FOR UPDATE", &[&id])
            .await?
        else {
            return Ok(None);
        };
        let auto: String = row.get(0);
        let group: String = row.get(1);
        let note = moderation_note(&action).map(|n| serde_json::to_string(&n).expect("serializes"));
        let (status, reasons) = reasons_of(&auto, note.as_deref());
        tx.execute(sql::SET_STATUS, &[&status.as_str(), &note, &id]).await?;
        recompute_group(&tx, &group).await?;
        tx.commit().await?;
        Ok(Some(Receipt { id, status, reasons, score: row.get(2), formula: row.get(3) }))
    }

    async fn leaderboard(&self, q: LeaderboardQuery) -> StoreResult<Vec<Row>> {
        let text = sql::leaderboard(q.sort.order_by(), q.descending);
        let rows = self.query(&text, &[&q.kind, &q.board, &q.class, &q.bus, &q.limit, &q.offset]).await?;
        Ok(rows.iter().map(group_from_row).collect())
    }

    async fn card(&self, card_key: String) -> StoreResult<Option<CardData>> {
        let Some(any) = self.query(&sql::card_any(), &[&card_key]).await?.first().map(result_from_row) else {
            return Ok(None);
        };
        let rows = self.query(sql::CARD_GROUPS, &[&card_key]).await?.iter().map(group_from_row).collect();
        let points = self
            .query(sql::CARD_POINTS, &[&card_key, &CARD_POINTS])
            .await?
            .iter()
            .map(|r| CardPoint { id: r.get(0), score: r.get(1), group_key: r.get(2), created_at: r.get(3) })
            .collect();
        let classes =
            self.query(sql::CARD_CLASSES, &[&card_key]).await?.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect();
        let flagged = self
            .query(sql::CARD_FLAGGED, &[&card_key])
            .await?
            .iter()
            .map(|r| {
                let auto: String = r.get(1);
                let moderation: Option<String> = r.get(2);
                (r.get(0), reasons_of(&auto, moderation.as_deref()).1)
            })
            .collect();
        Ok(Some(CardData { card: any.card, rows, points, classes, flagged }))
    }

    async fn export_page(&self, after: i64, limit: i64) -> StoreResult<Vec<StoredResult>> {
        Ok(self.query(&sql::export_page(), &[&after, &limit]).await?.iter().map(result_from_row).collect())
    }

    async fn filter_choices(&self) -> StoreResult<FilterChoices> {
        let list = |rows: Vec<PgRow>| rows.iter().map(|r| r.get::<_, String>(0)).collect();
        Ok(FilterChoices {
            kinds: list(self.query(sql::DISTINCT_KINDS, &[]).await?),
            boards: list(self.query(sql::DISTINCT_BOARDS, &[]).await?),
            buses: list(self.query(sql::DISTINCT_BUSES, &[]).await?),
        })
    }

    async fn close(&self) {
        self.slots.close();
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// Re-derives one leaderboard row, under a lock on the group that is held
/// until the transaction ends. Three round trips: the lock, the figures
/// (`percentile_disc` is the nearest rank, ceil(q·n), as
/// [`super::rank_of`] computes it for SQLite), and the upsert.
async fn recompute_group(tx: &impl GenericClient, group_key: &str) -> StoreResult<()> {
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1)::bigint)", &[&group_key]).await?;
    let stats = tx
        .query_one(
            "SELECT COUNT(*), MAX(created_at), \
             percentile_disc(0.1) WITHIN GROUP (ORDER BY score), \
             percentile_disc(0.5) WITHIN GROUP (ORDER BY score), \
             percentile_disc(0.9) WITHIN GROUP (ORDER BY score) \
             FROM results WHERE group_key = $1 AND status = 'public' AND score IS NOT NULL",
            &[&group_key],
        )
        .await?;
    let count: i64 = stats.get(0);
    if count == 0 {
        tx.execute(sql::DELETE_GROUP, &[&group_key]).await?;
        return Ok(());
    }
    let latest: Option<i64> = stats.get(1);
    let (p10, median, p90): (i64, i64, i64) = (stats.get(2), stats.get(3), stats.get(4));
    // The card fields come from the group's newest public result.
    tx.execute(
        "INSERT INTO groups (group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
         product_revision, capacity_bytes, class_label, board, bus, formula, samples, median, p10, p90, latest) \
         SELECT group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, product_revision, \
         capacity_bytes, class_label, board, bus, formula, $2, $3, $4, $5, $6 FROM results \
         WHERE group_key = $1 AND status = 'public' ORDER BY id DESC LIMIT 1 \
         ON CONFLICT (group_key) DO UPDATE SET samples = excluded.samples, median = excluded.median, \
         p10 = excluded.p10, p90 = excluded.p90, latest = excluded.latest, class_label = excluded.class_label",
        &[&group_key, &count, &median, &p10, &p90, &latest.unwrap_or(0)],
    )
    .await?;
    Ok(())
}

fn card_from(r: &PgRow, first: usize) -> Card {
    Card {
        kind: r.get(first),
        manufacturer_id: r.get::<_, Option<i64>>(first + 1).and_then(|m| u8::try_from(m).ok()),
        manufacturer: r.get(first + 2),
        oem_id: r.get(first + 3),
        product_name: r.get(first + 4),
        product_revision: r.get(first + 5),
        capacity_bytes: r.get::<_, Option<i64>>(first + 6).and_then(|c| u64::try_from(c).ok()),
        class_label: r.get(first + 7),
    }
}

fn result_from_row(r: &PgRow) -> StoredResult {
    let auto: String = r.get(3);
    let moderation: Option<String> = r.get(4);
    let (_, reasons) = reasons_of(&auto, moderation.as_deref());
    StoredResult {
        id: r.get(0),
        created_at: r.get(1),
        status: Status::parse(r.get(2)),
        reasons,
        group_key: r.get(5),
        card_key: r.get(6),
        card: card_from(r, 7),
        board: r.get(15),
        bus: r.get(16),
        formula: r.get(17),
        verdict_version: r.get(18),
        score: r.get(19),
        claimed: r.get(20),
        measured: r.get(21),
        report_json: r.get(22),
        verdict_json: r.get(23),
    }
}

fn group_from_row(r: &PgRow) -> Row {
    let latest: i64 = r.get(17);
    Row {
        group_key: r.get(0),
        card_key: r.get(1),
        card: card_from(r, 2),
        board: r.get(10),
        bus: r.get(11),
        formula: r.get(12),
        samples: r.get(13),
        median_score: r.get(14),
        p10_score: r.get(15),
        p90_score: r.get(16),
        latest_unix: latest,
        latest: date_of(latest),
        rank: r.get(18),
    }
}
