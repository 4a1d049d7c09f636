//! The SQLite writer thread: batches of jobs, each in a savepoint of one
//! transaction, the touched submitter samples, rows and cards recomputed
//! once per batch, one commit, then the answers.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::mpsc;

use rusqlite::{Connection, OptionalExtension, ToSql, params};
use tokio::sync::oneshot;

use super::rows::{counted_from_row, entry_from_row, result_from_row};
use crate::card::Card;
use crate::store::aggregate::{self, CardDisplay, SubmitterEntry};
use crate::store::held;
use crate::store::{
    Deleted, Moderation, NewResult, Receipt, Standing, Status, StoreError, StoreResult, Submitted, note_json,
    reasons_of, sql,
};

/// The most jobs committed together.
pub(super) const BATCH: usize = 256;

pub(super) enum Job {
    Submit(Box<NewResult>, oneshot::Sender<StoreResult<Submitted>>),
    Delete(i64, String, oneshot::Sender<StoreResult<Deleted>>),
    Moderate(i64, Moderation, oneshot::Sender<StoreResult<Option<Receipt>>>),
    Ban(String, Option<String>, i64, oneshot::Sender<StoreResult<()>>),
    /// An endurance or power-loss result's write ([`super::wear`]).
    Wear(Box<dyn super::wear::WearJob>),
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Job")
    }
}

/// What a batch changed, recomputed once before the commit.
#[derive(Debug, Default)]
pub(crate) struct Touched {
    /// (group, submitter) samples.
    pub pairs: BTreeSet<(String, String)>,
    pub groups: BTreeSet<String>,
    /// Cards, with their identity for the name.
    pub cards: BTreeMap<String, Card>,
}

impl Touched {
    fn add(&mut self, group: &str, submitter: &str, card_key: &str, card: &Card) {
        self.pairs.insert((group.to_owned(), submitter.to_owned()));
        self.groups.insert(group.to_owned());
        self.cards.entry(card_key.to_owned()).or_insert_with(|| card.clone());
    }
}

/// The writer thread: batches, savepoints, one commit per batch.
pub(super) fn write_loop(conn: &mut Connection, jobs: &mpsc::Receiver<Job>) {
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

/// An answer held back until the batch is committed; a public submission
/// learns its standing once the batch's rows are recomputed.
enum Reply {
    Submit(oneshot::Sender<StoreResult<Submitted>>, StoreResult<Submitted>, Option<Place>),
    Delete(oneshot::Sender<StoreResult<Deleted>>, StoreResult<Deleted>),
    Moderate(oneshot::Sender<StoreResult<Option<Receipt>>>, StoreResult<Option<Receipt>>),
    Ban(oneshot::Sender<StoreResult<()>>, StoreResult<()>),
    Wear(Box<dyn super::wear::WearJob>, bool),
}

/// Where a submitted result sits, for its standing.
pub(crate) struct Place {
    pub group: String,
    pub submitter: String,
    pub board: String,
    pub family: String,
}

fn run_batch(conn: &mut Connection, batch: Vec<Job>) {
    let mut replies = Vec::with_capacity(batch.len());
    let mut touched = Touched::default();
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
        if let Err(e) = tx.execute_batch("SAVEPOINT job") {
            fail(job, &e.into());
            continue;
        }
        let reply = match job {
            Job::Submit(new, reply) => {
                let (result, place) = match submit_in(&tx, &new, &mut touched) {
                    Ok((submitted, place)) => (Ok(submitted), place),
                    Err(e) => (Err(e), None),
                };
                Reply::Submit(reply, result, place)
            }
            Job::Delete(id, hash, reply) => Reply::Delete(reply, delete_in(&tx, id, &hash, &mut touched)),
            Job::Moderate(id, action, reply) => Reply::Moderate(reply, moderate_in(&tx, id, &action, &mut touched)),
            Job::Ban(submitter, reason, at, reply) => Reply::Ban(reply, ban_in(&tx, &submitter, reason.as_deref(), at)),
            Job::Wear(mut work) => {
                let ok = work.run(&tx);
                Reply::Wear(work, ok)
            }
        };
        let ok = match &reply {
            Reply::Submit(_, r, _) => r.is_ok(),
            Reply::Delete(_, r) => r.is_ok(),
            Reply::Moderate(_, r) => r.is_ok(),
            Reply::Ban(_, r) => r.is_ok(),
            Reply::Wear(_, ok) => *ok,
        };
        let end = if ok { "RELEASE job" } else { "ROLLBACK TO job; RELEASE job" };
        let _ = tx.execute_batch(end);
        replies.push(reply);
    }
    let mut result = recompute(&tx, &touched);
    if result.is_ok() {
        for reply in &mut replies {
            if let Reply::Submit(_, Ok(Submitted::Created(receipt) | Submitted::Replayed(receipt)), Some(place)) = reply
            {
                match standing_of(&tx, place, receipt) {
                    Ok((standing, held)) => (receipt.standing, receipt.held) = (standing, held),
                    Err(e) => result = Err(e),
                }
            }
        }
    }
    let result = result.and_then(|()| tx.commit().map_err(StoreError::from));
    for reply in replies {
        match reply {
            Reply::Submit(tx, r, _) => drop(tx.send(result.clone().and(r))),
            Reply::Delete(tx, r) => drop(tx.send(result.clone().and(r))),
            Reply::Moderate(tx, r) => drop(tx.send(result.clone().and(r))),
            Reply::Ban(tx, r) => drop(tx.send(result.clone().and(r))),
            Reply::Wear(work, _) => work.finish(result.clone()),
        }
    }
}

fn fail(job: Job, e: &StoreError) {
    match job {
        Job::Submit(_, tx) => drop(tx.send(Err(e.clone()))),
        Job::Delete(_, _, tx) => drop(tx.send(Err(e.clone()))),
        Job::Moderate(_, _, tx) => drop(tx.send(Err(e.clone()))),
        Job::Ban(_, _, _, tx) => drop(tx.send(Err(e.clone()))),
        Job::Wear(work) => work.finish(Err(e.clone())),
    }
}

/// The parameters of [`sql::insert_result`], in its column order.
pub(crate) fn insert_params(new: &NewResult) -> Vec<Box<dyn ToSql>> {
    sql::insert_result_params!(dyn ToSql, new)
}

fn submit_in(conn: &Connection, new: &NewResult, touched: &mut Touched) -> StoreResult<(Submitted, Option<Place>)> {
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
                Place { group: r.get(7)?, submitter: r.get(8)?, board: r.get(9)?, family: r.get(10)? },
            ))
        })
        .optional()?;
    if let Some((id, body_hash, auto, moderation, score, formula, place)) = known {
        if body_hash != new.body_hash {
            return Ok((Submitted::KeyReused, None));
        }
        let (status, reasons) = reasons_of(&auto, moderation.as_deref());
        let place = (status == Status::Public).then_some(place);
        return Ok((
            Submitted::Replayed(Receipt { id, status, reasons, score, formula, standing: None, held: false }),
            place,
        ));
    }
    let status = new.status();
    let params = insert_params(new);
    let refs: Vec<&dyn ToSql> = params.iter().map(|p| p.as_ref()).collect();
    conn.prepare_cached(&sql::insert_result("results", false))?.execute(refs.as_slice())?;
    let id = conn.last_insert_rowid();
    let place = (status == Status::Public).then(|| {
        touched.add(&new.group_key, &new.submitter, &new.card_key, &new.card);
        Place {
            group: new.group_key.clone(),
            submitter: new.submitter.clone(),
            board: new.board.model.clone(),
            family: new.board.family.clone(),
        }
    });
    let receipt = Receipt {
        id,
        status,
        reasons: new.reasons.clone(),
        score: new.score,
        formula: new.formula.clone(),
        standing: None,
        held: false,
    };
    Ok((Submitted::Created(receipt), place))
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

fn find(conn: &Connection, id: i64) -> StoreResult<Option<Found>> {
    Ok(conn
        .prepare_cached(sql::FIND_FOR_CHANGE)?
        .query_row([id], |r| {
            Ok(Found {
                delete_hash: r.get(0)?,
                group: r.get(1)?,
                card_key: r.get(2)?,
                submitter: r.get(3)?,
                content_hash: r.get(4)?,
                auto: r.get(5)?,
                score: r.get(6)?,
                formula: r.get(7)?,
            })
        })
        .optional()?)
}

/// Everything a change to this result may move: every submitter of its
/// group who sent the same content (the first copy counts, so another's may
/// start or stop counting), its group and its card.
fn touch_result(conn: &Connection, id: i64, found: &Found, touched: &mut Touched) -> StoreResult<()> {
    let card = conn.query_row(sql::get_result(), [id], result_from_row)?.card;
    touched.add(&found.group, &found.submitter, &found.card_key, &card);
    let mut stmt = conn.prepare_cached(sql::SUBMITTERS_OF_CONTENT)?;
    let others = stmt.query_map(params![found.group, found.content_hash], |r| r.get::<_, String>(0))?;
    for submitter in others {
        touched.pairs.insert((found.group.clone(), submitter?));
    }
    Ok(())
}

fn delete_in(conn: &Connection, id: i64, hash: &str, touched: &mut Touched) -> StoreResult<Deleted> {
    let Some(found) = find(conn, id)? else { return Ok(Deleted::NotFound) };
    if !crate::auth::same_secret(&found.delete_hash, hash) {
        return Ok(Deleted::WrongToken);
    }
    touch_result(conn, id, &found, touched)?;
    conn.execute(sql::DELETE_RESULT, [id])?;
    Ok(Deleted::Deleted)
}

fn moderate_in(conn: &Connection, id: i64, action: &Moderation, touched: &mut Touched) -> StoreResult<Option<Receipt>> {
    let Some(found) = find(conn, id)? else { return Ok(None) };
    let note = note_json(action.note().as_ref());
    let (status, reasons) = reasons_of(&found.auto, note.as_deref());
    conn.execute(sql::SET_STATUS, params![status.as_str(), note, id])?;
    touch_result(conn, id, &found, touched)?;
    Ok(Some(Receipt { id, status, reasons, score: found.score, formula: found.formula, standing: None, held: false }))
}

fn ban_in(conn: &Connection, submitter: &str, reason: Option<&str>, at: i64) -> StoreResult<()> {
    match reason {
        Some(reason) => conn.prepare_cached(sql::BAN)?.execute(params![submitter, reason, at])?,
        None => conn.prepare_cached(sql::UNBAN)?.execute([submitter])?,
    };
    Ok(())
}

/// Recomputes what a batch touched: submitter samples, then rows, then
/// the cards' display.
pub(crate) fn recompute(conn: &Connection, touched: &Touched) -> StoreResult<()> {
    for (group, submitter) in &touched.pairs {
        recompute_submitter(conn, group, submitter)?;
    }
    for group in &touched.groups {
        recompute_group(conn, group)?;
    }
    for (card_key, card) in &touched.cards {
        recompute_card(conn, card_key, card)?;
    }
    Ok(())
}

fn recompute_submitter(conn: &Connection, group: &str, submitter: &str) -> StoreResult<()> {
    let rows = conn
        .prepare_cached(sql::counted())?
        .query_map(params![group, submitter], counted_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    match aggregate::submitter_entry(group, submitter, &rows) {
        Some(e) => {
            let params: Vec<Box<dyn ToSql>> = sql::upsert_submitter_params!(dyn ToSql, &e);
            conn.prepare_cached(sql::upsert_submitter())?.execute(rusqlite::params_from_iter(params))?;
        }
        None => {
            conn.prepare_cached(sql::DELETE_SUBMITTER)?.execute(params![group, submitter])?;
        }
    }
    Ok(())
}

fn entries(conn: &Connection, query: &str, key: &str) -> StoreResult<Vec<SubmitterEntry>> {
    Ok(conn.prepare_cached(query)?.query_map([key], entry_from_row)?.collect::<rusqlite::Result<Vec<_>>>()?)
}

fn recompute_group(conn: &Connection, group: &str) -> StoreResult<()> {
    let mut entries = entries(conn, sql::group_submitters(), group)?;
    let (stats, changed) = held::settle_group(&mut entries);
    for (submitter, held) in changed {
        conn.prepare_cached(sql::SET_SUBMITTER_HELD)?.execute(params![held, group, submitter])?;
    }
    let Some(stats) = stats else {
        conn.prepare_cached(sql::DELETE_GROUP)?.execute([group])?;
        return Ok(());
    };
    let sample = conn.prepare_cached(sql::group_sample())?.query_row([group], result_from_row)?;
    let card = &sample.card;
    let params: Vec<Box<dyn ToSql>> =
        sql::upsert_group_params!(dyn ToSql, group, sample.card_key, card, card, &sample, &stats);
    conn.prepare_cached(sql::upsert_group())?.execute(rusqlite::params_from_iter(params))?;
    Ok(())
}

fn recompute_card(conn: &Connection, card_key: &str, card: &Card) -> StoreResult<()> {
    let entries = entries(conn, sql::card_submitters(), card_key)?;
    if entries.is_empty() {
        return Ok(());
    }
    // Spelled as its first public result spelled it: later results of the
    // same key (in another case, say) rename nothing.
    let first = conn.prepare_cached(sql::card_first())?.query_row([card_key], result_from_row).optional()?;
    let card = first.as_ref().map_or(card, |r| &r.card);
    let now = conn
        .prepare_cached(sql::CARD_GROUP_DISPLAYS)?
        .query_map([card_key], |r| {
            let display = CardDisplay { class_label: r.get(1)?, name: r.get(2)?, label: r.get(3)?, search: r.get(4)? };
            Ok((r.get::<_, String>(0)?, display))
        })?
        .collect::<rusqlite::Result<BTreeMap<_, _>>>()?;
    for (group, display) in aggregate::displays_to_write(aggregate::card_display(card, &entries), &now) {
        conn.prepare_cached(sql::SET_GROUP_DISPLAY)?.execute(params![
            display.class_label,
            display.name,
            display.label,
            display.search,
            group
        ])?;
    }
    Ok(())
}

/// The standing of a result in its group, after the batch's recompute.
fn standing_of(conn: &Connection, place: &Place, receipt: &Receipt) -> StoreResult<(Option<Standing>, bool)> {
    let Some(score) = receipt.score.filter(|_| receipt.status == Status::Public) else { return Ok((None, false)) };
    standing(conn, &place.group, &place.submitter, score, &place.board, &place.family)
}

/// Where `score` stands among the submitters of `group`.
pub(crate) fn standing(
    conn: &Connection,
    group: &str,
    submitter: &str,
    score: i64,
    board: &str,
    family: &str,
) -> StoreResult<(Option<Standing>, bool)> {
    let entries = entries(conn, sql::group_submitters(), group)?;
    Ok((aggregate::standing(&entries, submitter, score, board, family), held::is_held(&entries, submitter)))
}
