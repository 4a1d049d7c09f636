//! The embedded SQLite backend: one file in WAL mode.
//!
//! Writes go through one thread that owns the only writing connection. It
//! takes every job queued so far (up to [`BATCH`]), runs each in its own
//! savepoint inside one transaction, recomputes the touched leaderboard
//! rows once, commits with `synchronous=FULL` (the WAL is on disk), and only
//! then answers each job: an acknowledged result survives `kill -9` and a
//! power cut, and one fsync serves a whole batch (group commit). Reads use a
//! small pool of read-only connections, which WAL lets run beside the writer.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags, OptionalExtension, Row as SqlRow, params};
use tokio::sync::{Semaphore, oneshot};

use super::sql;
use super::{
    CARD_POINTS, CardData, CardPoint, Deleted, FilterChoices, LeaderboardQuery, Moderation, ModerationNote, NewResult,
    Receipt, Row, Status, Storage, StoreError, StoreResult, StoredResult, Submitted, date_of, rank_of, status_of,
};
use crate::card::Card;

/// The most jobs committed together.
const BATCH: usize = 256;
/// Read-only connections.
const READERS: usize = 4;

enum Job {
    Submit(Box<NewResult>, oneshot::Sender<StoreResult<Submitted>>),
    Delete(i64, String, oneshot::Sender<StoreResult<Deleted>>),
    Moderate(i64, Moderation, oneshot::Sender<StoreResult<Option<Receipt>>>),
}

/// The SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Arc<Mutex<Vec<Connection>>>,
    reader_slots: Arc<Semaphore>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

impl SqliteStore {
    /// Opens (or creates) the database file and starts the writer.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        let mut writer = Connection::open(path)
            .map_err(|e| StoreError(format!("cannot open the SQLite database {}: {e}", path.display())))?;
        writer.pragma_update(None, "journal_mode", "WAL")?;
        writer.pragma_update(None, "synchronous", "FULL")?;
        writer.busy_timeout(std::time::Duration::from_secs(10))?;
        writer.execute_batch(&sql::SCHEMA.replace("{id}", "INTEGER PRIMARY KEY"))?;
        let mut readers = Vec::new();
        for _ in 0..READERS {
            let reader = Connection::open_with_flags(
                path,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI,
            )?;
            reader.busy_timeout(std::time::Duration::from_secs(10))?;
            readers.push(reader);
        }
        let (sender, receiver) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || write_loop(&mut writer, &receiver))
            .map_err(|e| StoreError(format!("cannot start the writer thread: {e}")))?;
        Ok(SqliteStore {
            path: path.to_owned(),
            jobs: Mutex::new(Some(sender)),
            writer: Mutex::new(Some(thread)),
            readers: Arc::new(Mutex::new(readers)),
            reader_slots: Arc::new(Semaphore::new(READERS)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    async fn write<T>(&self, make: impl FnOnce(oneshot::Sender<StoreResult<T>>) -> Job) -> StoreResult<T> {
        let (tx, rx) = oneshot::channel();
        {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            let Some(jobs) = jobs.as_ref() else {
                return Err(StoreError("the server is shutting down".into()));
            };
            jobs.send(make(tx)).map_err(|_| StoreError("the writer thread stopped".into()))?;
        }
        rx.await.map_err(|_| StoreError("the writer thread stopped before answering".into()))?
    }

    async fn read<T: Send + 'static>(
        &self,
        query: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> StoreResult<T> {
        let _slot = self.reader_slots.acquire().await.map_err(|_| StoreError("closed".into()))?;
        let readers = Arc::clone(&self.readers);
        tokio::task::spawn_blocking(move || {
            let conn = readers.lock().unwrap_or_else(|p| p.into_inner()).pop().expect("a slot means a connection");
            let result = query(&conn);
            readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            result.map_err(StoreError::from)
        })
        .await
        .map_err(|e| StoreError(format!("read task failed: {e}")))?
    }
}

impl Storage for SqliteStore {
    async fn submit(&self, new: NewResult) -> StoreResult<Submitted> {
        self.write(|tx| Job::Submit(Box::new(new), tx)).await
    }

    async fn get(&self, id: i64) -> StoreResult<Option<StoredResult>> {
        self.read(move |c| c.query_row(&sql::get_result(), [id], result_from_row).optional()).await
    }

    async fn delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        self.write(|tx| Job::Delete(id, delete_hash, tx)).await
    }

    async fn moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<Receipt>> {
        self.write(|tx| Job::Moderate(id, action, tx)).await
    }

    async fn leaderboard(&self, q: LeaderboardQuery) -> StoreResult<Vec<Row>> {
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&sql::leaderboard(q.sort.order_by(), q.descending))?;
            let rows = stmt
                .query_map(params![q.kind, q.board, q.class, q.bus, q.limit, q.offset], group_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
        .await
    }

    async fn card(&self, card_key: String) -> StoreResult<Option<CardData>> {
        self.read(move |c| {
            let Some(any) = c.query_row(&sql::card_any(), [&card_key], result_from_row).optional()? else {
                return Ok(None);
            };
            let rows = c
                .prepare_cached(sql::CARD_GROUPS)?
                .query_map([&card_key], group_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let points = c
                .prepare_cached(sql::CARD_POINTS)?
                .query_map(params![card_key, CARD_POINTS], |r| {
                    Ok(CardPoint { id: r.get(0)?, score: r.get(1)?, group_key: r.get(2)?, created_at: r.get(3)? })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let classes = c
                .prepare_cached(sql::CARD_CLASSES)?
                .query_map([&card_key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let flagged = c
                .prepare_cached(sql::CARD_FLAGGED)?
                .query_map([&card_key], |r| {
                    let auto: String = r.get(1)?;
                    let moderation: Option<String> = r.get(2)?;
                    Ok((r.get(0)?, reasons_of(&auto, moderation.as_deref()).1))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Some(CardData { card: any.card, rows, points, classes, flagged }))
        })
        .await
    }

    async fn export_page(&self, after: i64, limit: i64) -> StoreResult<Vec<StoredResult>> {
        self.read(move |c| {
            c.prepare_cached(&sql::export_page())?
                .query_map([after, limit], result_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()
        })
        .await
    }

    async fn filter_choices(&self) -> StoreResult<FilterChoices> {
        self.read(|c| {
            let list = |q: &str| -> rusqlite::Result<Vec<String>> {
                c.prepare_cached(q)?.query_map([], |r| r.get(0))?.collect()
            };
            Ok(FilterChoices {
                kinds: list(sql::DISTINCT_KINDS)?,
                boards: list(sql::DISTINCT_BOARDS)?,
                buses: list(sql::DISTINCT_BUSES)?,
            })
        })
        .await
    }

    async fn close(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
        let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}

/// The writer thread: batches, savepoints, one commit per batch.
fn write_loop(conn: &mut Connection, jobs: &mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let mut batch = vec![first];
        while batch.len() < BATCH {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        run_batch(conn, batch);
    }
}

/// An answer held back until the batch is committed.
enum Reply {
    Submit(oneshot::Sender<StoreResult<Submitted>>, StoreResult<Submitted>),
    Delete(oneshot::Sender<StoreResult<Deleted>>, StoreResult<Deleted>),
    Moderate(oneshot::Sender<StoreResult<Option<Receipt>>>, StoreResult<Option<Receipt>>),
}

fn run_batch(conn: &mut Connection, batch: Vec<Job>) {
    let mut replies = Vec::with_capacity(batch.len());
    let mut touched = BTreeSet::new();
    let tx = match conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            let e = StoreError::from(e);
            for job in batch {
                fail(job, &e);
            }
            return;
        }
    };
    for job in batch {
        // Each job in a savepoint, so that one failing job leaves the others.
        let sp = "SAVEPOINT job";
        if let Err(e) = tx.execute_batch(sp) {
            fail(job, &e.into());
            continue;
        }
        let reply = match job {
            Job::Submit(new, reply) => Reply::Submit(reply, submit_in(&tx, &new, &mut touched)),
            Job::Delete(id, hash, reply) => Reply::Delete(reply, delete_in(&tx, id, &hash, &mut touched)),
            Job::Moderate(id, action, reply) => Reply::Moderate(reply, moderate_in(&tx, id, &action, &mut touched)),
        };
        let ok = match &reply {
            Reply::Submit(_, r) => r.is_ok(),
            Reply::Delete(_, r) => r.is_ok(),
            Reply::Moderate(_, r) => r.is_ok(),
        };
        let end = if ok { "RELEASE job" } else { "ROLLBACK TO job; RELEASE job" };
        let _ = tx.execute_batch(end);
        replies.push(reply);
    }
    let mut result: StoreResult<()> = Ok(());
    for group in &touched {
        if let Err(e) = recompute_group(&tx, group) {
            result = Err(e);
            break;
        }
    }
    let result = result.and_then(|()| tx.commit().map_err(StoreError::from));
    for reply in replies {
        match reply {
            Reply::Submit(tx, r) => {
                let _ = tx.send(result.clone().and(r));
            }
            Reply::Delete(tx, r) => {
                let _ = tx.send(result.clone().and(r));
            }
            Reply::Moderate(tx, r) => {
                let _ = tx.send(result.clone().and(r));
            }
        }
    }
}

fn fail(job: Job, e: &StoreError) {
    match job {
        Job::Submit(_, tx) => drop(tx.send(Err(e.clone()))),
        Job::Delete(_, _, tx) => drop(tx.send(Err(e.clone()))),
        Job::Moderate(_, _, tx) => drop(tx.send(Err(e.clone()))),
    }
}

fn submit_in(conn: &Connection, new: &NewResult, touched: &mut BTreeSet<String>) -> StoreResult<Submitted> {
    let known = conn
        .prepare_cached(sql::FIND_KEY)?
        .query_row([&new.idempotency_key], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<i64>>(5)?,
                r.get::<_, String>(6)?,
            ))
        })
        .optional()?;
    if let Some((id, body_hash, auto, moderation, score, formula)) = known {
        if body_hash != new.body_hash {
            return Ok(Submitted::KeyReused);
        }
        let (status, reasons) = reasons_of(&auto, moderation.as_deref());
        return Ok(Submitted::Replayed(Receipt { id, status, reasons, score, formula }));
    }
    let status = new.status();
    let auto = serde_json::to_string(&new.reasons).expect("strings serialize");
    let card = &new.card;
    conn.prepare_cached(sql::INSERT_RESULT)?.execute(params![
        new.created_at,
        status.as_str(),
        auto,
        new.idempotency_key,
        new.body_hash,
        new.delete_hash,
        new.group_key,
        new.card_key,
        card.kind,
        card.manufacturer_id.map(i64::from),
        card.manufacturer,
        card.oem_id,
        card.product_name,
        card.product_revision,
        card.capacity_bytes.map(|c| c as i64),
        card.class_label,
        new.board,
        new.bus,
        new.formula,
        new.verdict_version,
        new.score,
        new.claimed,
        new.measured,
        new.report_json,
        new.verdict_json,
    ])?;
    let id = conn.last_insert_rowid();
    if status == Status::Public {
        touched.insert(new.group_key.clone());
    }
    Ok(Submitted::Created(Receipt {
        id,
        status,
        reasons: new.reasons.clone(),
        score: new.score,
        formula: new.formula.clone(),
    }))
}

fn delete_in(conn: &Connection, id: i64, hash: &str, touched: &mut BTreeSet<String>) -> StoreResult<Deleted> {
    let Some(stored) = conn.query_row(sql::FIND_DELETE_HASH, [id], |r| r.get::<_, String>(0)).optional()? else {
        return Ok(Deleted::NotFound);
    };
    if !crate::auth::same_secret(&stored, hash) {
        return Ok(Deleted::WrongToken);
    }
    let group: String = conn.query_row("SELECT group_key FROM results WHERE id = $1", [id], |r| r.get(0))?;
    conn.execute(sql::DELETE_RESULT, [id])?;
    touched.insert(group);
    Ok(Deleted::Deleted)
}

fn moderate_in(
    conn: &Connection,
    id: i64,
    action: &Moderation,
    touched: &mut BTreeSet<String>,
) -> StoreResult<Option<Receipt>> {
    let Some(stored) = conn.query_row(&sql::get_result(), [id], result_from_row).optional()? else {
        return Ok(None);
    };
    let auto: String = conn.query_row("SELECT auto_reasons FROM results WHERE id = $1", [id], |r| r.get(0))?;
    let note = moderation_note(action);
    let note_json = note.as_ref().map(|n| serde_json::to_string(n).expect("serializes"));
    let (status, reasons) = reasons_of(&auto, note_json.as_deref());
    conn.execute(sql::SET_STATUS, params![status.as_str(), note_json, id])?;
    touched.insert(stored.group_key.clone());
    Ok(Some(Receipt { id, status, reasons, score: stored.score, formula: stored.formula }))
}

pub(crate) fn moderation_note(action: &Moderation) -> Option<ModerationNote> {
    match action {
        Moderation::Flag(reason) => Some(ModerationNote { action: "flag".into(), reason: reason.clone() }),
        Moderation::Hide(reason) => Some(ModerationNote { action: "hide".into(), reason: reason.clone() }),
        Moderation::Restore => None,
    }
}

/// Re-derives one leaderboard row from its public results.
fn recompute_group(conn: &Connection, group_key: &str) -> StoreResult<()> {
    let (count, latest): (i64, Option<i64>) =
        conn.prepare_cached(sql::GROUP_COUNT)?.query_row([group_key], |r| Ok((r.get(0)?, r.get(1)?)))?;
    if count == 0 {
        conn.prepare_cached(sql::DELETE_GROUP)?.execute([group_key])?;
        return Ok(());
    }
    let nth = |q: f64| -> StoreResult<i64> {
        let offset = rank_of(q, count) - 1;
        Ok(conn.prepare_cached(sql::GROUP_NTH)?.query_row(params![group_key, offset], |r| r.get(0))?)
    };
    let (p10, median, p90) = (nth(0.1)?, nth(0.5)?, nth(0.9)?);
    // The card fields come from the group's newest public result.
    let sample = conn
        .prepare_cached(&format!(
            "SELECT {} FROM results WHERE group_key = $1 AND status = 'public' ORDER BY id DESC LIMIT 1",
            sql::RESULT_COLUMNS
        ))?
        .query_row([group_key], result_from_row)?;
    let card = &sample.card;
    conn.prepare_cached(sql::UPSERT_GROUP)?.execute(params![
        group_key,
        sample.card_key,
        card.kind,
        card.manufacturer_id.map(i64::from),
        card.manufacturer,
        card.oem_id,
        card.product_name,
        card.product_revision,
        card.capacity_bytes.map(|c| c as i64),
        card.class_label,
        sample.board,
        sample.bus,
        sample.formula,
        count,
        median,
        p10,
        p90,
        latest.unwrap_or(0),
    ])?;
    Ok(())
}

/// The status and reasons from the stored automatic reasons and moderation note.
pub(crate) fn reasons_of(auto: &str, moderation: Option<&str>) -> (Status, Vec<String>) {
    let auto: Vec<String> = serde_json::from_str(auto).unwrap_or_default();
    let note: Option<ModerationNote> = moderation.and_then(|m| serde_json::from_str(m).ok());
    status_of(&auto, note.as_ref())
}

fn card_from(r: &SqlRow<'_>, first: usize) -> rusqlite::Result<Card> {
    Ok(Card {
        kind: r.get(first)?,
        manufacturer_id: r.get::<_, Option<i64>>(first + 1)?.and_then(|m| u8::try_from(m).ok()),
        manufacturer: r.get(first + 2)?,
        oem_id: r.get(first + 3)?,
        product_name: r.get(first + 4)?,
        product_revision: r.get(first + 5)?,
        capacity_bytes: r.get::<_, Option<i64>>(first + 6)?.and_then(|c| u64::try_from(c).ok()),
        class_label: r.get(first + 7)?,
    })
}

fn result_from_row(r: &SqlRow<'_>) -> rusqlite::Result<StoredResult> {
    let auto: String = r.get(3)?;
    let moderation: Option<String> = r.get(4)?;
    let (_, reasons) = reasons_of(&auto, moderation.as_deref());
    Ok(StoredResult {
        id: r.get(0)?,
        created_at: r.get(1)?,
        status: Status::parse(&r.get::<_, String>(2)?),
        reasons,
        group_key: r.get(5)?,
        card_key: r.get(6)?,
        card: card_from(r, 7)?,
        board: r.get(15)?,
        bus: r.get(16)?,
        formula: r.get(17)?,
        verdict_version: r.get(18)?,
        score: r.get(19)?,
        claimed: r.get(20)?,
        measured: r.get(21)?,
        report_json: r.get(22)?,
        verdict_json: r.get(23)?,
    })
}

fn group_from_row(r: &SqlRow<'_>) -> rusqlite::Result<Row> {
    let latest: i64 = r.get(17)?;
    Ok(Row {
        group_key: r.get(0)?,
        card_key: r.get(1)?,
        card: card_from(r, 2)?,
        board: r.get(10)?,
        bus: r.get(11)?,
        formula: r.get(12)?,
        samples: r.get(13)?,
        median_score: r.get(14)?,
        p10_score: r.get(15)?,
        p90_score: r.get(16)?,
        latest_unix: latest,
        latest: date_of(latest),
        rank: r.get(18)?,
    })
}
