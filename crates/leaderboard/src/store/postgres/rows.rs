//! Reading PostgreSQL rows into the store's types, column by column in the
//! order [`crate::store::sql`]'s column lists give. Every read is
//! `try_get`: a value of an unexpected type (a column altered by hand, a
//! NULL where none belongs) is an error with its column, never a panic.

use tokio_postgres::Row as PgRow;

use crate::card::Card;
use crate::store::aggregate::{CountedRow, SubmitterEntry};
use crate::store::{Figures, Row, Status, StoreResult, StoredResult, date_of, reasons_of};

pub(super) fn card_from(r: &PgRow, first: usize) -> StoreResult<Card> {
    Ok(Card {
        kind: r.try_get(first)?,
        manufacturer_id: r.try_get::<_, Option<i64>>(first + 1)?.and_then(|m| u8::try_from(m).ok()),
        manufacturer: r.try_get(first + 2)?,
        oem_id: r.try_get(first + 3)?,
        product_name: r.try_get(first + 4)?,
        product_revision: r.try_get(first + 5)?,
        capacity_bytes: r.try_get::<_, Option<i64>>(first + 6)?.and_then(|c| u64::try_from(c).ok()),
        class_label: r.try_get(first + 7)?,
    })
}

fn figures_from(r: &PgRow, first: usize) -> StoreResult<Figures> {
    Ok(Figures {
        seq_read_mib_s: r.try_get(first)?,
        seq_write_mb_s: r.try_get(first + 1)?,
        rand_read_4k_qd64_iops: r.try_get(first + 2)?,
        rand_write_4k_qd64_iops: r.try_get(first + 3)?,
    })
}

/// A row of [`crate::store::sql::RESULT_COLUMNS`].
pub(super) fn result_from_row(r: &PgRow) -> StoreResult<StoredResult> {
    let auto: String = r.try_get(3)?;
    let moderation: Option<String> = r.try_get(4)?;
    let (_, reasons) = reasons_of(&auto, moderation.as_deref());
    Ok(StoredResult {
        id: r.try_get(0)?,
        created_at: r.try_get(1)?,
        status: Status::parse(r.try_get(2)?),
        reasons,
        group_key: r.try_get(5)?,
        card_key: r.try_get(6)?,
        card: card_from(r, 7)?,
        board: r.try_get(15)?,
        bus: r.try_get(16)?,
        formula: r.try_get(17)?,
        verdict_version: r.try_get(18)?,
        score: r.try_get(19)?,
        claimed: r.try_get(20)?,
        measured: r.try_get(21)?,
        report_json: r.try_get(22)?,
        verdict_json: r.try_get(23)?,
        submitter: r.try_get(24)?,
        label: r.try_get(25)?,
        board_key: r.try_get(26)?,
        board_revision: r.try_get(27)?,
        family: r.try_get(28)?,
        family_key: r.try_get(29)?,
        figures: figures_from(r, 30)?,
        content_hash: r.try_get(34)?,
        standing: None,
    })
}

/// A row of [`crate::store::sql::GROUP_COLUMNS`] with `rank` and `total` after it.
pub(super) fn group_from_row(r: &PgRow) -> StoreResult<(Row, i64)> {
    let latest: i64 = r.try_get(25)?;
    let row = Row {
        group_key: r.try_get(0)?,
        card_key: r.try_get(1)?,
        card: card_from(r, 2)?,
        name: r.try_get(10)?,
        label: r.try_get(11)?,
        board: r.try_get(12)?,
        family: r.try_get(13)?,
        bus: r.try_get(14)?,
        formula: r.try_get(15)?,
        samples: r.try_get(16)?,
        submitters: r.try_get(17)?,
        median_score: r.try_get(18)?,
        p10_score: r.try_get(19)?,
        p90_score: r.try_get(20)?,
        median_figures: figures_from(r, 21)?,
        latest_unix: latest,
        latest: date_of(latest),
        rank: r.try_get(26)?,
    };
    Ok((row, r.try_get(27)?))
}

/// A row of [`crate::store::sql::COUNTED`].
pub(super) fn counted_from_row(r: &PgRow) -> StoreResult<CountedRow> {
    Ok(CountedRow {
        id: r.try_get(0)?,
        created_at: r.try_get(1)?,
        score: r.try_get(2)?,
        figures: figures_from(r, 3)?,
        class_label: r.try_get(7)?,
        label: r.try_get(8)?,
        label_key: r.try_get(9)?,
        board: r.try_get(10)?,
        card_key: r.try_get(11)?,
    })
}

/// A row of [`crate::store::sql::SUBMITTER_COLUMNS`].
pub(super) fn entry_from_row(r: &PgRow) -> StoreResult<SubmitterEntry> {
    Ok(SubmitterEntry {
        group_key: r.try_get(0)?,
        submitter: r.try_get(1)?,
        card_key: r.try_get(2)?,
        results: r.try_get(3)?,
        score: r.try_get(4)?,
        figures: figures_from(r, 5)?,
        class_label: r.try_get(9)?,
        label: r.try_get(10)?,
        label_key: r.try_get(11)?,
        board: r.try_get(12)?,
        latest: r.try_get(13)?,
    })
}

/// Every row through `map`, stopping at the first error.
pub(super) fn all<T>(rows: &[PgRow], map: fn(&PgRow) -> StoreResult<T>) -> StoreResult<Vec<T>> {
    rows.iter().map(map).collect()
}
