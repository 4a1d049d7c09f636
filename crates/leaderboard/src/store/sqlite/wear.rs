//! Wear results on SQLite ([`crate::store::wear`]): writes go through the
//! one writer thread as any other job (in its batch's transaction, answered
//! once committed), reads through the read-only pool.

use rusqlite::{Connection, OptionalExtension, params};
use tokio::sync::oneshot;

use super::SqliteStore;
use super::write::Job;
use crate::store::wear::{
    self, NewWear, StoredWear, WearCard, WearEntry, WearReceipt, WearStore, WearSubmitted, card_of, moderated,
};
use crate::store::{Deleted, Moderation, Status, StoreError, StoreResult, reasons_of};

/// A job for the writer thread: run in the batch's transaction (in its own
/// savepoint), answered with the batch's commit.
pub(crate) trait WearJob: Send {
    /// Runs the work; false rolls its savepoint back.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answers, once the batch is committed (or failed).
    fn finish(self: Box<Self>, committed: StoreResult<()>);
}

struct Pending<T, F> {
    work: Option<F>,
    result: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T: Send, F: FnOnce(&Connection) -> StoreResult<T> + Send> WearJob for Pending<T, F> {
    fn run(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn),
            None => Err(StoreError("a wear job ran twice".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, committed: StoreResult<()>) {
        let result = match (committed, self.result) {
            (Ok(()), Some(result)) => result,
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err(StoreError("a wear job never ran".into())),
        };
        let _ = self.reply.send(result);
    }
}

impl SqliteStore {
    async fn wear_write<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        self.write(|reply| Job::Wear(Box::new(Pending { work: Some(work), result: None, reply }))).await
    }
}

/// The next id of the one id space of run and wear results: `results`'
/// AUTOINCREMENT counter, raised past every id either table holds, so that
/// the next run result too is given a later one.
fn next_id(conn: &Connection) -> StoreResult<i64> {
    conn.execute(
        "INSERT INTO sqlite_sequence (name, seq) SELECT 'results', 0 \
         WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'results')",
        [],
    )?;
    Ok(conn.query_row(
        "UPDATE sqlite_sequence SET seq = MAX(seq, COALESCE((SELECT MAX(id) FROM results), 0), \
         COALESCE((SELECT MAX(id) FROM wear_results), 0)) + 1 WHERE name = 'results' RETURNING seq",
        [],
        |r| r.get(0),
    )?)
}

fn submit_in(conn: &Connection, new: &NewWear) -> StoreResult<WearSubmitted> {
    let known = conn
        .prepare_cached(wear::FIND_KEY)?
        .query_row([&new.idempotency_key], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, Option<String>>(3)?))
        })
        .optional()?;
    if let Some((id, body_hash, _, moderation)) = known {
        if body_hash != new.body_hash {
            return Ok(WearSubmitted::KeyReused);
        }
        let (status, reasons) = reasons_of("[]", moderation.as_deref());
        return Ok(WearSubmitted::Replayed(WearReceipt { id, status, reasons }));
    }
    let run = conn
        .prepare_cached(wear::FIND_RUN_KEY)?
        .query_row([&new.idempotency_key], |r| r.get::<_, i64>(0))
        .optional()?;
    if run.is_some() {
        return Ok(WearSubmitted::KeyReused);
    }
    let id = next_id(conn)?;
    let (created_at, v) = new.values();
    conn.prepare_cached(wear::INSERT)?
        .execute(params![id, created_at, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10]])?;
    Ok(WearSubmitted::Created(WearReceipt { id, status: Status::Public, reasons: Vec::new() }))
}

fn get_in(conn: &Connection, id: i64) -> StoreResult<Option<StoredWear>> {
    Ok(conn
        .prepare_cached(wear::GET)?
        .query_row([id], |r| {
            Ok(StoredWear::of(
                r.get(0)?,
                r.get(1)?,
                &r.get::<_, String>(2)?,
                r.get::<_, Option<String>>(3)?.as_deref(),
                r.get(4)?,
                &r.get::<_, String>(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
            ))
        })
        .optional()?)
}

impl WearStore for SqliteStore {
    async fn wear_submit(&self, new: NewWear) -> StoreResult<WearSubmitted> {
        self.wear_write(move |c| submit_in(c, &new)).await
    }

    async fn wear_get(&self, id: i64) -> StoreResult<Option<StoredWear>> {
        self.read(move |c| get_in(c, id)).await
    }

    async fn wear_delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        self.wear_write(move |c| {
            let Some(stored) =
                c.prepare_cached(wear::DELETE_HASH)?.query_row([id], |r| r.get::<_, String>(0)).optional()?
            else {
                return Ok(Deleted::NotFound);
            };
            if !crate::auth::same_secret(&stored, &delete_hash) {
                return Ok(Deleted::WrongToken);
            }
            c.prepare_cached(wear::DELETE)?.execute([id])?;
            Ok(Deleted::Deleted)
        })
        .await
    }

    async fn wear_moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<WearReceipt>> {
        self.wear_write(move |c| {
            let (status, note) = moderated(&action);
            if c.prepare_cached(wear::SET_STATUS)?.execute(params![status.as_str(), note, id])? == 0 {
                return Ok(None);
            }
            let (status, reasons) = reasons_of("[]", note.as_deref());
            Ok(Some(WearReceipt { id, status, reasons }))
        })
        .await
    }

    async fn wear_network(&self, id: i64) -> StoreResult<Option<String>> {
        self.read(move |c| Ok(c.prepare_cached(wear::NETWORK_OF)?.query_row([id], |r| r.get(0)).optional()?)).await
    }

    async fn wear_of_network(&self, submitter: String) -> StoreResult<Vec<i64>> {
        self.read(move |c| {
            Ok(c.prepare_cached(wear::OF_NETWORK)?
                .query_map([submitter], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<i64>>>()?)
        })
        .await
    }

    async fn wear_card(&self, card_key: String) -> StoreResult<WearCard> {
        self.read(move |c| {
            let card: Option<String> =
                c.prepare_cached(wear::CARD_FIRST)?.query_row([&card_key], |r| r.get(0)).optional()?;
            let mut entries = Vec::new();
            for schema in wear::SCHEMAS {
                let found = c
                    .prepare_cached(wear::CARD_ENTRIES)?
                    .query_map(params![card_key, schema, wear::LISTED], |r| {
                        Ok(WearEntry::of((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?)))
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                entries.extend(found);
            }
            Ok(WearCard { card: card.as_deref().map(card_of), entries })
        })
        .await
    }
}
