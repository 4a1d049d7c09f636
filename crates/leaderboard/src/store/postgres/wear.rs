//! Wear results on PostgreSQL ([`crate::store::wear`]): each write one
//! transaction on a pooled connection; the id from the `results` id
//! sequence, so run and wear results share one id space across replicas;
//! idempotency by the unique key, as for run results.

use tokio_postgres::Row as PgRow;
use tokio_postgres::types::ToSql;

use super::PgStore;
use crate::store::wear::{
    self, NewWear, StoredWear, WearCard, WearEntry, WearReceipt, WearStore, WearSubmitted, card_of, moderated,
};
use crate::store::{Deleted, Moderation, Status, StoreResult, reasons_of};

/// The next id of the one id space of run and wear results.
const NEXT_ID: &str = "SELECT nextval(pg_get_serial_sequence('results', 'id'))";

fn stored_of(r: &PgRow) -> StoreResult<StoredWear> {
    Ok(StoredWear::of(
        r.try_get(0)?,
        r.try_get(1)?,
        &r.try_get::<_, String>(2)?,
        r.try_get::<_, Option<String>>(3)?.as_deref(),
        r.try_get(4)?,
        &r.try_get::<_, String>(5)?,
        r.try_get(6)?,
        r.try_get(7)?,
        r.try_get(8)?,
        r.try_get(9)?,
    ))
}

impl WearStore for PgStore {
    async fn wear_submit(&self, new: NewWear) -> StoreResult<WearSubmitted> {
        let mut lease = self.lease().await?;
        let conn = lease.conn()?;
        let tx = conn.client.transaction().await?;
        if let Some(run) = tx.query_opt(wear::FIND_RUN_KEY, &[&new.idempotency_key]).await? {
            let _: i64 = run.try_get(0)?;
            tx.rollback().await?;
            return Ok(WearSubmitted::KeyReused);
        }
        let id: i64 = tx.query_one(NEXT_ID, &[]).await?.try_get(0)?;
        let (created_at, v) = new.values();
        let mut params: Vec<&(dyn ToSql + Sync)> = vec![&id, &created_at];
        params.extend(v.iter().map(|s| s as &(dyn ToSql + Sync)));
        let insert = format!("{} ON CONFLICT (idem_key) DO NOTHING RETURNING id", wear::INSERT);
        if tx.query_opt(&insert, &params).await?.is_some() {
            tx.commit().await?;
            return Ok(WearSubmitted::Created(WearReceipt { id, status: Status::Public, reasons: Vec::new() }));
        }
        // The key is taken, perhaps by a concurrent request now committed.
        let known = tx.query_one(wear::FIND_KEY, &[&new.idempotency_key]).await?;
        tx.rollback().await?;
        let body_hash: String = known.try_get(1)?;
        if body_hash != new.body_hash {
            return Ok(WearSubmitted::KeyReused);
        }
        let moderation: Option<String> = known.try_get(3)?;
        let (status, reasons) = reasons_of("[]", moderation.as_deref());
        Ok(WearSubmitted::Replayed(WearReceipt { id: known.try_get(0)?, status, reasons }))
    }

    async fn wear_get(&self, id: i64) -> StoreResult<Option<StoredWear>> {
        self.query(wear::GET, &[&id]).await?.first().map(stored_of).transpose()
    }

    async fn wear_delete(&self, id: i64, delete_hash: String) -> StoreResult<Deleted> {
        let mut lease = self.lease().await?;
        let conn = lease.conn()?;
        let tx = conn.client.transaction().await?;
        let Some(row) = tx.query_opt(&format!("{} FOR UPDATE", wear::DELETE_HASH), &[&id]).await? else {
            return Ok(Deleted::NotFound);
        };
        let stored: String = row.try_get(0)?;
        if !crate::auth::same_secret(&stored, &delete_hash) {
            return Ok(Deleted::WrongToken);
        }
        tx.execute(wear::DELETE, &[&id]).await?;
        tx.commit().await?;
        Ok(Deleted::Deleted)
    }

    async fn wear_moderate(&self, id: i64, action: Moderation) -> StoreResult<Option<WearReceipt>> {
        let (status, note) = moderated(&action);
        let rows = self.query(&format!("{} RETURNING id", wear::SET_STATUS), &[&status.as_str(), &note, &id]).await?;
        if rows.is_empty() {
            return Ok(None);
        }
        let (status, reasons) = reasons_of("[]", note.as_deref());
        Ok(Some(WearReceipt { id, status, reasons }))
    }

    async fn wear_network(&self, id: i64) -> StoreResult<Option<String>> {
        Ok(self.query(wear::NETWORK_OF, &[&id]).await?.first().map(|r| r.try_get(0)).transpose()?)
    }

    async fn wear_of_network(&self, submitter: String) -> StoreResult<Vec<i64>> {
        let rows = self.query(wear::OF_NETWORK, &[&submitter]).await?;
        Ok(rows.iter().map(|r| r.try_get(0)).collect::<Result<_, _>>()?)
    }

    async fn wear_card(&self, card_key: String) -> StoreResult<WearCard> {
        let card: Option<String> =
            self.query(wear::CARD_FIRST, &[&card_key]).await?.first().map(|r| r.try_get(0)).transpose()?;
        let mut rows = Vec::new();
        for schema in wear::SCHEMAS {
            rows.extend(self.query(wear::CARD_ENTRIES, &[&card_key, &schema, &wear::LISTED]).await?);
        }
        let entries = rows
            .iter()
            .map(|r| {
                Ok(WearEntry::of((
                    r.try_get(0)?,
                    r.try_get(1)?,
                    r.try_get(2)?,
                    r.try_get(3)?,
                    r.try_get(4)?,
                    r.try_get(5)?,
                    r.try_get(6)?,
                )))
            })
            .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
        Ok(WearCard { card: card.as_deref().map(card_of), entries })
    }
}
