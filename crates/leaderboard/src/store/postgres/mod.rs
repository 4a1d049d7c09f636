//! The PostgreSQL backend, for a community that outgrows one box.
//!
//! Every write is one transaction on a pooled connection, committed before
//! the answer. Several server replicas may share the database: idempotency
//! is the unique `idem_key` (`INSERT … ON CONFLICT DO NOTHING` waits for a
//! concurrent insert of the same key and then sees it), a row's samples are
//! recomputed under a transaction-scoped advisory lock on the row, and a
//! card's display under one on the card ([`write`]). On open, the schema is
//! made or upgraded ([`migrate`]), one replica at a time.

mod migrate;
mod rows;
mod wear;
mod write;

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Semaphore;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row as PgRow, Statement};

use self::rows::{all, borrowed, entry_from_row, group_from_row, result_from_row};
use self::write::{GroupIdentity, Prepared, insert_params, recompute, refresh_card, standing};
use crate::card::Card;
use crate::store::held;

use super::{
    CARD_POINTS, CardData, CardPoint, Deleted, FilterChoices, LeaderboardQuery, MIN_RANKED_SUBMITTERS, Moderation,
    NewResult, Page, Receipt, Status, Storage, StoreError, StoreResult, StoredResult, Submitted, held_reason,
    note_json, one_per_network, reasons_of, sql,
};

/// Connections in the pool. A commit waits for the WAL flush; with several
/// transactions in flight, one flush serves them all (PostgreSQL's own group
/// commit). On the 2-core bench machine 8 and 16 gave the same rate: CPU
/// and the round trips of a transaction bound it (`cargo xtask lb-bench`).
const POOL: usize = 16;

/// A connection, its write statements and the read statements used so far.
struct Conn {
    client: Client,
    prepared: Prepared,
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
    salt: Vec<u8>,
    idle: Mutex<Vec<Conn>>,
    slots: Semaphore,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").finish_non_exhaustive()
    }
}

async fn connect_client(url: &str) -> StoreResult<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| StoreError(format!("cannot connect to PostgreSQL: {e}")))?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("postgres connection closed: {e}");
        }
    });
    Ok(client)
}

async fn connect(url: &str) -> StoreResult<Conn> {
    let client = connect_client(url).await?;
    // The statements are prepared once per connection, but planned at each
    // use: a generic plan made while the tables were small (a new
    // leaderboard) would keep scanning them whole as they grow. Planning a
    // few small queries costs far less. (PostgreSQL 12 and later; older
    // servers plan as they always did.)
    let _ = client.batch_execute("SET plan_cache_mode = force_custom_plan").await;
    let prepared = Prepared::new(&client).await?;
    Ok(Conn { client, prepared, statements: HashMap::new() })
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
    fn conn(&mut self) -> StoreResult<&mut Conn> {
        self.conn.as_mut().ok_or_else(|| StoreError("the connection was handed back".into()))
    }
}

impl PgStore {
    /// Connects, and makes or upgrades the tables.
    pub async fn open(url: &str) -> StoreResult<PgStore> {
        let salt = {
            let mut client = connect_client(url).await?;
            migrate::prepare(&mut client).await?
        };
        Ok(PgStore {
            url: url.to_owned(),
            salt: salt.into_bytes(),
            idle: Mutex::new(Vec::new()),
            slots: Semaphore::new(POOL),
        })
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
        let conn = lease.conn()?;
        let statement = conn.statement(text).await?;
        Ok(conn.client.query(&statement, params).await?)
    }
}

/// What a delete or a moderation reads of a result first.
struct Found {
    delete_hash: String,
    group: String,
    card_key: String,
    submitter: String,
    content_hash: String,
    auto: String,
    score: Option<i64>,
    formula: String,
}

/// The result, locked for the change.
async fn find(tx: &tokio_postgres::Transaction<'_>, p: &Prepared, id: i64) -> StoreResult<Option<Found>> {
    let Some(row) = tx.query_opt(&p.find_for_change, &[&id]).await? else { return Ok(None) };
    Ok(Some(Found {
        delete_hash: row.try_get(0)?,
        group: row.try_get(1)?,
        card_key: row.try_get(2)?,
        submitter: row.try_get(3)?,
        content_hash: row.try_get(4)?,
        auto: row.try_get(5)?,
        score: row.try_get(6)?,
        formula: row.try_get(7)?,
    }))
}

/// What a delete or a moderation does to a found result.
enum Change {
    Delete,
    SetStatus(Status, Option<String>),
}

/// Applies `change` under the group's lock and recomputes what it moves:
/// every submitter of the group who sent the same content (the first copy
/// counts) and the group's row. Returns the card, whose display the caller
/// refreshes once this is committed.
async fn apply(
    tx: &tokio_postgres::Transaction<'_>,
    p: &Prepared,
    id: i64,
    found: &Found,
    change: Change,
) -> StoreResult<Card> {
    tx.query_one(&p.lock_group, &[&found.group]).await?;
    let card = result_from_row(&tx.query_one(&p.get_result, &[&id]).await?)?.card;
    let mut submitters: Vec<String> = tx
        .query(&p.submitters_of_content, &[&found.group, &found.content_hash])
        .await?
        .iter()
        .map(|r| r.try_get(0))
        .collect::<Result<_, _>>()?;
    if !submitters.contains(&found.submitter) {
        submitters.push(found.submitter.clone());
    }
    match change {
        Change::Delete => tx.execute(&p.delete_result, &[&id]).await?,
        Change::SetStatus(status, note) => tx.execute(&p.set_status, &[&status.as_str(), &note, &id]).await?,
    };
    recompute(tx, p, &found.group, &card, &submitters, None).await?;
    Ok(card)
}

/// [`refresh_card`] after a committed change; a failure leaves the card's
/// display as it was until the next write, and says so.
async fn refresh(conn: &mut Conn, card_key: &str, card: &Card) {
    if let Err(e) = refresh_card(&mut conn.client, &conn.prepared, card_key, card).await {
        eprintln!("cannot refresh the display of card {card_key}: {e}; the next result of it will");
    }
}

impl Storage for PgStore {
    async fn submit(&self, new: NewResult) -> StoreResult<Submitted> {
        let mut lease = self.lease().await?;
        let conn = lease.conn()?;
        let p = &conn.prepared;
        let status = new.status();
        let params = insert_params(&new);
        let refs = borrowed(&params);
        let tx = conn.client.transaction().await?;
        let Some(row) = tx.query_opt(&p.insert, &refs).await? else {
            // The key is taken (perhaps by a concurrent request that has now committed).
            let known = tx.query_one(&p.find_key, &[&new.idempotency_key]).await?;
            let body_hash: String = known.try_get(1)?;
            if body_hash != new.body_hash {
                tx.rollback().await?;
                return Ok(Submitted::KeyReused);
            }
            let auto: String = known.try_get(3)?;
            let moderation: Option<String> = known.try_get(4)?;
            let (status, reasons) = reasons_of(&auto, moderation.as_deref());
            let score: Option<i64> = known.try_get(5)?;
            let mut receipt = Receipt {
                id: known.try_get(0)?,
                status,
                reasons,
                score,
                formula: known.try_get(6)?,
                standing: None,
                held: false,
            };
            if let (Status::Public, Some(score)) = (status, score) {
                let group: String = known.try_get(7)?;
                let submitter: String = known.try_get(8)?;
                let entries = all(&tx.query(&p.group_submitters, &[&group]).await?, entry_from_row)?;
                let (board, family): (String, String) = (known.try_get(9)?, known.try_get(10)?);
                receipt.standing = standing(&entries, &submitter, score, &board, &family);
                receipt.held = held::is_held(&entries, &submitter);
            }
            tx.rollback().await?;
            return Ok(Submitted::Replayed(receipt));
        };
        let id: i64 = row.try_get(0)?;
        let mut receipt = Receipt {
            id,
            status,
            reasons: new.reasons.clone(),
            score: new.score,
            formula: new.formula.clone(),
            standing: None,
            held: false,
        };
        if status == Status::Public {
            let entries = recompute(
                &tx,
                p,
                &new.group_key,
                &new.card,
                std::slice::from_ref(&new.submitter),
                Some(GroupIdentity::of_new(&new)),
            )
            .await?;
            if let Some(score) = new.score {
                receipt.standing = standing(&entries, &new.submitter, score, &new.board.model, &new.board.family);
            }
            receipt.held = held::is_held(&entries, &new.submitter);
        }
        tx.commit().await?;
        if status == Status::Public {
            refresh(conn, &new.card_key, &new.card).await;
        }
        Ok(Submitted::Created(receipt))
    }

    async fn get(&self, id: i64) -> StoreResult<Option<StoredResult>> {
        let Some(row) = self.query(sql::get_result(), &[&id]).await?.into_iter().next() else { return Ok(None) };
        let mut stored = result_from_row(&row)?;
        if let (Status::Public, Some(score)) = (stored.status, stored.score) {
            let entries = all(&self.query(sql::group_submitters(), &[&stored.group_key]).await?, entry_from_row)?;
            stored.standing = standing(&entries, &stored.submitter, score, &stored.board, &stored.family);
            stored.held = held::is_held(&entries, &stored.submitter);
        }
        Ok(Some(stored))
    }

    async fn delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        let mut lease = self.lease().await?;
        let conn = lease.conn()?;
        let p = &conn.prepared;
        let tx = conn.client.transaction().await?;
        let Some(found) = find(&tx, p, id).await? else { return Ok(Deleted::NotFound) };
        if !crate::auth::same_secret(&found.delete_hash, &delete_hash) {
            return Ok(Deleted::WrongToken);
        }
        let card = apply(&tx, p, id, &found, Change::Delete).await?;
        tx.commit().await?;
        refresh(conn, &found.card_key, &card).await;
        Ok(Deleted::Deleted)
    }

    async fn moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<Receipt>> {
        let mut lease = self.lease().await?;
        let conn = lease.conn()?;
        let p = &conn.prepared;
        let tx = conn.client.transaction().await?;
        let Some(found) = find(&tx, p, id).await? else { return Ok(None) };
        let note = note_json(action.note().as_ref());
        let (status, reasons) = reasons_of(&found.auto, note.as_deref());
        let card = apply(&tx, p, id, &found, Change::SetStatus(status, note)).await?;
        tx.commit().await?;
        refresh(conn, &found.card_key, &card).await;
        Ok(Some(Receipt {
            id,
            status,
            reasons,
            score: found.score,
            formula: found.formula,
            standing: None,
            held: false,
        }))
    }

    async fn leaderboard(&self, q: LeaderboardQuery) -> StoreResult<Page> {
        let text = sql::leaderboard(q.sort.rank_column(), q.sort.column(), q.descending, MIN_RANKED_SUBMITTERS);
        let [w1, w2, w3, w4] = q.patterns();
        let rows = self
            .query(&text, &[&q.kind, &q.board_key, &q.class, &q.bus, &w1, &w2, &w3, &w4, &q.limit, &q.offset])
            .await?;
        let found = all(&rows, group_from_row)?;
        let total = match found.first() {
            Some((_, total)) => *total,
            // Past the end (or nothing found): count without a page.
            None => {
                let text = sql::leaderboard("median", "median", true, MIN_RANKED_SUBMITTERS);
                let rows = self
                    .query(&text, &[&q.kind, &q.board_key, &q.class, &q.bus, &w1, &w2, &w3, &w4, &1i64, &0i64])
                    .await?;
                all(&rows, group_from_row)?.first().map_or(0, |(_, total)| *total)
            }
        };
        Ok(Page { total, rows: found.into_iter().map(|(row, _)| row).collect() })
    }

    async fn card(&self, card_key: String) -> StoreResult<Option<CardData>> {
        let rows: Vec<_> = all(&self.query(sql::card_groups(), &[&card_key]).await?, group_from_row)?
            .into_iter()
            .map(|(row, _)| row)
            .collect();
        let (card, name, label) = match rows.first() {
            Some(row) => (row.card.clone(), row.name.clone(), row.label.clone()),
            None => match self.query(sql::card_any(), &[&card_key]).await?.first() {
                Some(any) => {
                    let card = result_from_row(any)?.card;
                    let name = card.display_name();
                    (card, name, None)
                }
                None => return Ok(None),
            },
        };
        let points = self
            .query(sql::card_points(), &[&card_key, &CARD_POINTS])
            .await?
            .iter()
            .map(|r| {
                Ok(CardPoint {
                    id: r.try_get(0)?,
                    score: r.try_get(1)?,
                    group_key: r.try_get(2)?,
                    created_at: r.try_get(3)?,
                    more: r.try_get::<_, i64>(4)? - 1,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let classes = self
            .query(sql::card_classes(), &[&card_key])
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?, r.try_get(2)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        let flagged = self
            .query(sql::CARD_FLAGGED, &[&card_key])
            .await?
            .iter()
            .map(|r| {
                let auto: String = r.try_get(2)?;
                let moderation: Option<String> = r.try_get(3)?;
                Ok((r.try_get(0)?, r.try_get(1)?, reasons_of(&auto, moderation.as_deref()).1))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let held = self
            .query(sql::CARD_HELD, &[&card_key])
            .await?
            .iter()
            .map(|r| {
                let group: String = r.try_get(3)?;
                let why = crate::store::held::Hold::from_code(r.try_get(4)?);
                let reason = held_reason(r.try_get(2)?, rows.iter().find(|row| row.group_key == group), Some(why));
                Ok((r.try_get(0)?, r.try_get(1)?, vec![reason]))
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let (flagged, held) = (one_per_network(flagged), one_per_network(held));
        Ok(Some(CardData { card, name, label, rows, points, classes, flagged, held }))
    }

    async fn export_page(&self, after: i64, limit: i64) -> StoreResult<Vec<StoredResult>> {
        all(&self.query(sql::export_page(), &[&after, &limit]).await?, result_from_row)
    }

    async fn network_results(&self, id: i64) -> StoreResult<Option<(String, Vec<i64>)>> {
        let rows = self.query(sql::NETWORK_RESULTS, &[&id]).await?;
        let pairs = rows
            .iter()
            .map(|r| Ok((r.try_get::<_, String>(0)?, r.try_get::<_, i64>(1)?)))
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(pairs.first().map(|(submitter, _)| submitter.clone()).map(|s| (s, pairs.iter().map(|r| r.1).collect())))
    }

    async fn ban(&self, submitter: String, reason: Option<String>, at: i64) -> StoreResult<()> {
        match reason {
            Some(reason) => self.query(&format!("{} RETURNING 1", sql::BAN), &[&submitter, &reason, &at]).await?,
            None => self.query(&format!("{} RETURNING 1", sql::UNBAN), &[&submitter]).await?,
        };
        Ok(())
    }

    async fn banned(&self, submitter: String) -> StoreResult<Option<String>> {
        let rows = self.query(sql::BANNED, &[&submitter]).await?;
        rows.first().map(|r| r.try_get(0)).transpose().map_err(Into::into)
    }

    async fn stored_since(&self, submitter: String, since: i64) -> StoreResult<(i64, Option<i64>)> {
        let rows = self.query(sql::STORED_SINCE, &[&submitter, &since]).await?;
        let row = rows.first().ok_or_else(|| StoreError("postgres: no row from a sum".to_owned()))?;
        Ok((row.try_get(0)?, row.try_get(1)?))
    }

    async fn filter_choices(&self) -> StoreResult<FilterChoices> {
        let list = |rows: Vec<PgRow>| -> StoreResult<Vec<String>> {
            rows.iter().map(|r| Ok(r.try_get::<_, String>(0)?)).collect()
        };
        let pairs = self
            .query(sql::DISTINCT_BOARDS, &[])
            .await?
            .iter()
            .map(|r| Ok((r.try_get(0)?, r.try_get(1)?)))
            .collect::<StoreResult<Vec<(String, String)>>>()?;
        Ok(FilterChoices {
            kinds: list(self.query(sql::DISTINCT_KINDS, &[]).await?)?,
            boards: super::query::by_family(pairs),
            buses: list(self.query(sql::DISTINCT_BUSES, &[]).await?)?,
        })
    }

    fn submitter_salt(&self) -> &[u8] {
        &self.salt
    }

    async fn close(&self) {
        self.slots.close();
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}
