//! The embedded SQLite backend: one file in WAL mode.
//!
//! Writes go through one thread that owns the only writing connection
//! ([`write`]). It takes every job queued so far (up to a batch), runs each
//! in its own savepoint inside one transaction, recomputes the touched
//! submitter samples, leaderboard rows and cards once, commits with
//! `synchronous=FULL` (the WAL is on disk), and only then answers each job:
//! an acknowledged result survives `kill -9` and a power cut, and one fsync
//! serves a whole batch (group commit). Reads use a small pool of read-only
//! connections, which WAL lets run beside the writer. On open, the schema
//! is made or upgraded ([`migrate`]) before anything is served.

mod migrate;
mod rows;
mod wear;
pub(crate) mod write;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;

use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use tokio::sync::{Semaphore, oneshot};

use self::rows::{group_from_row, result_from_row};
use self::write::{Job, write_loop};
use super::{
    CARD_POINTS, CardData, CardPoint, Deleted, FilterChoices, LeaderboardQuery, MIN_RANKED_SUBMITTERS, Moderation,
    NewResult, Page, Receipt, Status, Storage, StoreError, StoreResult, StoredResult, Submitted, held_reason,
    one_per_network, reasons_of, sql,
};

/// Read-only connections.
const READERS: usize = 4;

/// The SQLite store.
#[derive(Debug)]
pub struct SqliteStore {
    path: PathBuf,
    salt: Vec<u8>,
    jobs: Mutex<Option<mpsc::Sender<Job>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    readers: Arc<Mutex<Vec<Connection>>>,
    reader_slots: Arc<Semaphore>,
}

impl SqliteStore {
    /// Opens (or creates, or upgrades) the database file and starts the writer.
    pub fn open(path: &Path) -> StoreResult<SqliteStore> {
        let mut writer = Connection::open(path)
            .map_err(|e| StoreError(format!("cannot open the SQLite database {}: {e}", path.display())))?;
        writer.pragma_update(None, "journal_mode", "WAL")?;
        writer.pragma_update(None, "synchronous", "FULL")?;
        writer.busy_timeout(std::time::Duration::from_secs(10))?;
        let salt = migrate::prepare(&mut writer)?;
        writer.execute_batch(crate::store::wear::TABLE)?;
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
            salt: salt.into_bytes(),
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
        query: impl FnOnce(&Connection) -> StoreResult<T> + Send + 'static,
    ) -> StoreResult<T> {
        let _slot = self.reader_slots.acquire().await.map_err(|_| StoreError("closed".into()))?;
        let readers = Arc::clone(&self.readers);
        tokio::task::spawn_blocking(move || {
            let Some(conn) = readers.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
                return Err(StoreError("no read connection is free".into()));
            };
            let result = query(&conn);
            readers.lock().unwrap_or_else(|p| p.into_inner()).push(conn);
            result
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
        self.read(move |c| {
            let Some(mut stored) = c.query_row(sql::get_result(), [id], result_from_row).optional()? else {
                return Ok(None);
            };
            if let (Status::Public, Some(score)) = (stored.status, stored.score) {
                (stored.standing, stored.held) =
                    write::standing(c, &stored.group_key, &stored.submitter, score, &stored.board, &stored.family)?;
            }
            Ok(Some(stored))
        })
        .await
    }

    async fn delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        self.write(|tx| Job::Delete(id, delete_hash, tx)).await
    }

    async fn moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<Receipt>> {
        self.write(|tx| Job::Moderate(id, action, tx)).await
    }

    async fn leaderboard(&self, q: LeaderboardQuery) -> StoreResult<Page> {
        self.read(move |c| {
            let text = sql::leaderboard(q.sort.rank_column(), q.sort.column(), q.descending, MIN_RANKED_SUBMITTERS);
            let [w1, w2, w3, w4] = q.patterns();
            let mut stmt = c.prepare_cached(&text)?;
            let found = stmt
                .query_map(
                    params![q.kind, q.board_key, q.class, q.bus, w1, w2, w3, w4, q.limit, q.offset],
                    group_from_row,
                )?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total = match found.first() {
                Some((_, total)) => *total,
                // Past the end (or nothing found): count without a page.
                None => {
                    let text = sql::leaderboard("median", "median", true, MIN_RANKED_SUBMITTERS);
                    let [w1, w2, w3, w4] = q.patterns();
                    c.prepare_cached(&text)?
                        .query_map(params![q.kind, q.board_key, q.class, q.bus, w1, w2, w3, w4, 1, 0], group_from_row)?
                        .next()
                        .transpose()?
                        .map_or(0, |(_, total)| total)
                }
            };
            Ok(Page { total, rows: found.into_iter().map(|(row, _)| row).collect() })
        })
        .await
    }

    async fn card(&self, card_key: String) -> StoreResult<Option<CardData>> {
        self.read(move |c| {
            let rows: Vec<_> = c
                .prepare_cached(sql::card_groups())?
                .query_map([&card_key], group_from_row)?
                .map(|r| r.map(|(row, _)| row))
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let (card, name, label) = match rows.first() {
                Some(row) => (row.card.clone(), row.name.clone(), row.label.clone()),
                None => match c.query_row(sql::card_any(), [&card_key], result_from_row).optional()? {
                    Some(any) => (any.card.clone(), any.card.display_name(), None),
                    None => return Ok(None),
                },
            };
            let points = c
                .prepare_cached(sql::card_points())?
                .query_map(params![card_key, CARD_POINTS], |r| {
                    Ok(CardPoint {
                        id: r.get(0)?,
                        score: r.get(1)?,
                        group_key: r.get(2)?,
                        created_at: r.get(3)?,
                        more: r.get::<_, i64>(4)? - 1,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let classes = c
                .prepare_cached(sql::card_classes())?
                .query_map([&card_key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let flagged = c
                .prepare_cached(sql::CARD_FLAGGED)?
                .query_map([&card_key], |r| {
                    let auto: String = r.get(2)?;
                    let moderation: Option<String> = r.get(3)?;
                    Ok((r.get(0)?, r.get(1)?, reasons_of(&auto, moderation.as_deref()).1))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let held = c
                .prepare_cached(sql::CARD_HELD)?
                .query_map([&card_key], |r| {
                    let group: String = r.get(3)?;
                    let why = crate::store::held::Hold::from_code(r.get(4)?);
                    let reason = held_reason(r.get(2)?, rows.iter().find(|row| row.group_key == group), Some(why));
                    Ok((r.get(0)?, r.get(1)?, vec![reason]))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let (flagged, held) = (one_per_network(flagged), one_per_network(held));
            Ok(Some(CardData { card, name, label, rows, points, classes, flagged, held }))
        })
        .await
    }

    async fn export_page(&self, after: i64, limit: i64) -> StoreResult<Vec<StoredResult>> {
        self.read(move |c| {
            Ok(c.prepare_cached(sql::export_page())?
                .query_map([after, limit], result_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
        .await
    }

    async fn network_results(&self, id: i64) -> StoreResult<Option<(String, Vec<i64>)>> {
        self.read(move |c| {
            let rows = c
                .prepare_cached(sql::NETWORK_RESULTS)?
                .query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows.first().map(|(submitter, _)| submitter.clone()).map(|s| (s, rows.iter().map(|r| r.1).collect())))
        })
        .await
    }

    async fn ban(&self, submitter: String, reason: Option<String>, at: i64) -> StoreResult<()> {
        self.write(|tx| Job::Ban(submitter, reason, at, tx)).await
    }

    async fn banned(&self, submitter: String) -> StoreResult<Option<String>> {
        self.read(move |c| Ok(c.prepare_cached(sql::BANNED)?.query_row([submitter], |r| r.get(0)).optional()?)).await
    }

    async fn stored_since(&self, submitter: String, since: i64) -> StoreResult<(i64, Option<i64>)> {
        self.read(move |c| {
            Ok(c.prepare_cached(sql::STORED_SINCE)?
                .query_row(params![submitter, since], |r| Ok((r.get(0)?, r.get(1)?)))?)
        })
        .await
    }

    async fn filter_choices(&self) -> StoreResult<FilterChoices> {
        self.read(|c| {
            let list = |q: &str| -> rusqlite::Result<Vec<String>> {
                c.prepare_cached(q)?.query_map([], |r| r.get(0))?.collect()
            };
            let pairs: Vec<(String, String)> = c
                .prepare_cached(sql::DISTINCT_BOARDS)?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(FilterChoices {
                kinds: list(sql::DISTINCT_KINDS)?,
                boards: super::query::by_family(pairs),
                buses: list(sql::DISTINCT_BUSES)?,
            })
        })
        .await
    }

    fn submitter_salt(&self) -> &[u8] {
        &self.salt
    }

    async fn close(&self) {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner()).take();
        let handle = self.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(handle) = handle {
            let _ = tokio::task::spawn_blocking(move || handle.join()).await;
        }
    }
}
