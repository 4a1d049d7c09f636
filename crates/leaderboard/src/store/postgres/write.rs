//! PostgreSQL writes: one transaction each, on a pooled connection, with
//! statements prepared once per connection ([`Prepared`]).
//!
//! Every change to a leaderboard row's results takes a transaction-scoped
//! advisory lock on the row (its group) before it recomputes the samples
//! and the row, so the last writer to a row always sees every committed
//! result of it, whichever replica it runs on. The insert takes it in its
//! `RETURNING` (one round trip less); the statements after it see
//! everything committed before the lock.
//!
//! The card's display (majority class, agreed label), shared by all its
//! rows, is refreshed after that commit, in a short transaction of its own
//! under a lock on the card ([`refresh_card`]): so the rows of a popular
//! card are written in parallel, not one card-wide commit at a time. The
//! display is derived data: that transaction does not wait for its WAL
//! flush, and the next write to the card recomputes it anyway.

use std::collections::BTreeMap;

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, GenericClient, Statement};

use super::rows::{all, borrowed, counted_from_row, entry_from_row, result_from_row};
use crate::card::Card;
use crate::store::aggregate::{self, CardDisplay, SubmitterEntry};
use crate::store::held;
use crate::store::{NewResult, Standing, StoreResult, sql};

/// The statements every write uses, prepared when a connection is made.
pub(super) struct Prepared {
    pub insert: Statement,
    pub find_key: Statement,
    pub counted: Statement,
    pub upsert_submitter: Statement,
    pub delete_submitter: Statement,
    pub card_submitters: Statement,
    pub group_sample: Statement,
    pub upsert_group: Statement,
    pub delete_group: Statement,
    pub set_group_display: Statement,
    pub find_for_change: Statement,
    pub submitters_of_content: Statement,
    pub lock_group: Statement,
    pub lock_card: Statement,
    pub set_status: Statement,
    pub delete_result: Statement,
    pub get_result: Statement,
    pub group_submitters: Statement,
    pub set_submitter_held: Statement,
    pub card_first: Statement,
    pub card_group_displays: Statement,
}

impl Prepared {
    pub async fn new(client: &Client) -> StoreResult<Prepared> {
        let insert = format!(
            "{} ON CONFLICT (idem_key) DO NOTHING RETURNING id, (SELECT 1 FROM pg_advisory_xact_lock(hashtext(${})))",
            sql::insert_result("results", false),
            sql::INSERT_PARAMS + 1
        );
        let upsert_group = format!("{} RETURNING class_label, name, label, search", sql::upsert_group());
        let find_for_change = format!("{} FOR UPDATE", sql::FIND_FOR_CHANGE);
        Ok(Prepared {
            insert: client.prepare(&insert).await?,
            find_key: client.prepare(sql::FIND_KEY).await?,
            counted: client.prepare(sql::counted()).await?,
            upsert_submitter: client.prepare(sql::upsert_submitter()).await?,
            delete_submitter: client.prepare(sql::DELETE_SUBMITTER).await?,
            card_submitters: client.prepare(sql::card_submitters()).await?,
            group_sample: client.prepare(sql::group_sample()).await?,
            upsert_group: client.prepare(&upsert_group).await?,
            delete_group: client.prepare(sql::DELETE_GROUP).await?,
            set_group_display: client.prepare(sql::SET_GROUP_DISPLAY).await?,
            find_for_change: client.prepare(&find_for_change).await?,
            submitters_of_content: client.prepare(sql::SUBMITTERS_OF_CONTENT).await?,
            lock_group: client.prepare("SELECT 1 FROM pg_advisory_xact_lock(hashtext($1))").await?,
            lock_card: client.prepare("SELECT 1 FROM pg_advisory_xact_lock(hashtext('card:' || $1))").await?,
            set_status: client.prepare(sql::SET_STATUS).await?,
            delete_result: client.prepare(sql::DELETE_RESULT).await?,
            get_result: client.prepare(sql::get_result()).await?,
            group_submitters: client.prepare(sql::group_submitters()).await?,
            set_submitter_held: client.prepare(sql::SET_SUBMITTER_HELD).await?,
            card_first: client.prepare(sql::card_first()).await?,
            card_group_displays: client.prepare(sql::CARD_GROUP_DISPLAYS).await?,
        })
    }
}

/// The parameters of [`sql::insert_result`], then the group key to lock.
pub(super) fn insert_params(new: &NewResult) -> Vec<Box<dyn ToSql + Sync + Send>> {
    let mut params: Vec<Box<dyn ToSql + Sync + Send>> = sql::insert_result_params!(dyn ToSql + Sync + Send, new);
    params.push(Box::new(new.group_key.clone()));
    params
}

/// What a leaderboard row is made from besides its figures.
#[derive(Debug, Clone)]
pub(super) struct GroupIdentity {
    pub card: Card,
    pub card_key: String,
    pub board_key: String,
    pub family: String,
    pub family_key: String,
    pub bus: String,
    pub formula: String,
}

impl GroupIdentity {
    pub fn of_new(new: &NewResult) -> GroupIdentity {
        GroupIdentity {
            card: new.card.clone(),
            card_key: new.card_key.clone(),
            board_key: new.board.key.clone(),
            family: new.board.family.clone(),
            family_key: new.board.family_key.clone(),
            bus: new.bus.clone(),
            formula: new.formula.clone(),
        }
    }
}

/// Recomputes the samples of `submitters` in `group` and the group's row,
/// under the group's lock (taken by the caller). `identity` is the group's
/// when the caller knows it (a new result of it); otherwise its newest
/// public result is read. A new row starts with the card's CID name; its
/// display is the card's once [`refresh_card`] has run. Returns the group's
/// submitter samples (for a standing).
pub(super) async fn recompute(
    tx: &impl GenericClient,
    p: &Prepared,
    group: &str,
    card: &Card,
    submitters: &[String],
    identity: Option<GroupIdentity>,
) -> StoreResult<Vec<SubmitterEntry>> {
    for submitter in submitters {
        let rows = all(&tx.query(&p.counted, &[&group, submitter]).await?, counted_from_row)?;
        match aggregate::submitter_entry(group, submitter, &rows) {
            Some(e) => {
                let params: Vec<Box<dyn ToSql + Sync + Send>> =
                    sql::upsert_submitter_params!(dyn ToSql + Sync + Send, &e);
                tx.execute(&p.upsert_submitter, &borrowed(&params)).await?;
            }
            None => {
                tx.execute(&p.delete_submitter, &[&group, submitter]).await?;
            }
        }
    }
    let mut entries = all(&tx.query(&p.group_submitters, &[&group]).await?, entry_from_row)?;
    let (stats, changed) = held::settle_group(&mut entries);
    for (submitter, held) in changed {
        tx.execute(&p.set_submitter_held, &[&held, &group, &submitter]).await?;
    }
    let Some(stats) = stats else {
        tx.execute(&p.delete_group, &[&group]).await?;
        return Ok(entries);
    };
    let identity = match identity {
        Some(identity) => identity,
        None => {
            let sample = result_from_row(&tx.query_one(&p.group_sample, &[&group]).await?)?;
            GroupIdentity {
                card: sample.card.clone(),
                card_key: sample.card_key.clone(),
                board_key: sample.board_key.clone(),
                family: sample.family.clone(),
                family_key: sample.family_key.clone(),
                bus: sample.bus.clone(),
                formula: sample.formula.clone(),
            }
        }
    };
    let params: Vec<Box<dyn ToSql + Sync + Send>> = sql::upsert_group_params!(
        dyn ToSql + Sync + Send,
        group,
        identity.card_key,
        &identity.card,
        card,
        &identity,
        &stats
    );
    tx.execute(&p.upsert_group, &borrowed(&params)).await?;
    Ok(entries)
}

/// Sets the display (majority class, each row's agreed label, name,
/// search text) of every row of a card from the samples of all its rows.
pub(super) async fn update_card_display(
    tx: &impl GenericClient,
    p: &Prepared,
    card_key: &str,
    card: &Card,
) -> StoreResult<()> {
    let entries = all(&tx.query(&p.card_submitters, &[&card_key]).await?, entry_from_row)?;
    if entries.is_empty() {
        return Ok(());
    }
    // Spelled as its first public result spelled it.
    let first = match tx.query_opt(&p.card_first, &[&card_key]).await? {
        Some(row) => Some(result_from_row(&row)?),
        None => None,
    };
    let card = first.as_ref().map_or(card, |r| &r.card);
    let mut now = BTreeMap::new();
    for row in tx.query(&p.card_group_displays, &[&card_key]).await? {
        let display = CardDisplay {
            class_label: row.try_get(1)?,
            name: row.try_get(2)?,
            label: row.try_get(3)?,
            search: row.try_get(4)?,
        };
        now.insert(row.try_get::<_, String>(0)?, display);
    }
    for (group, display) in aggregate::displays_to_write(aggregate::card_display(card, &entries), &now) {
        tx.execute(
            &p.set_group_display,
            &[&display.class_label, &display.name, &display.label, &display.search, &group],
        )
        .await?;
    }
    Ok(())
}

/// [`update_card_display`] after a change is committed: its own short
/// transaction under the card's lock, so that concurrent refreshes of one
/// card run one after the other and the last sees every committed row.
pub(super) async fn refresh_card(
    client: &mut tokio_postgres::Client,
    p: &Prepared,
    card_key: &str,
    card: &Card,
) -> StoreResult<()> {
    let tx = client.transaction().await?;
    // Derived data: a crash before it reaches the disk loses nothing the
    // next write to the card does not recompute.
    tx.batch_execute("SET LOCAL synchronous_commit = off").await?;
    tx.query_one(&p.lock_card, &[&card_key]).await?;
    update_card_display(&tx, p, card_key, card).await?;
    tx.commit().await?;
    Ok(())
}

/// The standing of `score` given its group's samples.
pub(super) fn standing(
    entries: &[SubmitterEntry],
    submitter: &str,
    score: i64,
    board: &str,
    family: &str,
) -> Option<Standing> {
    aggregate::standing(entries, submitter, score, board, family)
}
