//! Reading a row of either database into the store's types, column by
//! column in the order [`super::sql`]'s column lists give. The two drivers
//! name the same checked read differently (`get`, `try_get`) and return
//! their own errors, so one macro writes the readers for each: a column
//! added to a list is read in one place. Every read is checked: a value of
//! an unexpected type (a column altered by hand, a NULL where none
//! belongs) is an error, never a panic.

/// Defines `card_from`, `result_from_row`, `group_from_row`,
/// `counted_from_row` and `entry_from_row` for rows of type `$row`, read
/// with the driver's checked getter `$get`, whose errors are `$error`.
macro_rules! row_readers {
    ($row:ty, $get:ident, $error:ty) => {
        use crate::card::Card;
        use crate::store::aggregate::{CountedRow, SubmitterEntry};
        use crate::store::{Figures, Row, Status, StoredResult, date_of, reasons_of};

        fn card_from(r: &$row, first: usize) -> Result<Card, $error> {
            Ok(Card {
                kind: r.$get(first)?,
                manufacturer_id: r.$get::<_, Option<i64>>(first + 1)?.and_then(|m| u8::try_from(m).ok()),
                manufacturer: r.$get(first + 2)?,
                oem_id: r.$get(first + 3)?,
                product_name: r.$get(first + 4)?,
                product_revision: r.$get(first + 5)?,
                capacity_bytes: r.$get::<_, Option<i64>>(first + 6)?.and_then(|c| u64::try_from(c).ok()),
                class_label: r.$get(first + 7)?,
            })
        }

        fn figures_from(r: &$row, first: usize) -> Result<Figures, $error> {
            Ok(Figures {
                seq_read_mib_s: r.$get(first)?,
                seq_write_mb_s: r.$get(first + 1)?,
                rand_read_4k_qd64_iops: r.$get(first + 2)?,
                rand_write_4k_qd64_iops: r.$get(first + 3)?,
            })
        }

        /// A row of [`crate::store::sql::RESULT_COLUMNS`].
        pub(super) fn result_from_row(r: &$row) -> Result<StoredResult, $error> {
            let auto: String = r.$get(3)?;
            let moderation: Option<String> = r.$get(4)?;
            let (_, reasons) = reasons_of(&auto, moderation.as_deref());
            Ok(StoredResult {
                id: r.$get(0)?,
                created_at: r.$get(1)?,
                status: Status::parse(&r.$get::<_, String>(2)?),
                reasons,
                group_key: r.$get(5)?,
                card_key: r.$get(6)?,
                card: card_from(r, 7)?,
                board: r.$get(15)?,
                bus: r.$get(16)?,
                formula: r.$get(17)?,
                verdict_version: r.$get(18)?,
                score: r.$get(19)?,
                claimed: r.$get(20)?,
                measured: r.$get(21)?,
                report_json: r.$get(22)?,
                verdict_json: r.$get(23)?,
                submitter: r.$get(24)?,
                label: r.$get(25)?,
                board_key: r.$get(26)?,
                board_revision: r.$get(27)?,
                family: r.$get(28)?,
                family_key: r.$get(29)?,
                figures: figures_from(r, 30)?,
                content_hash: r.$get(34)?,
                standing: None,
                held: false,
            })
        }

        /// A row of [`crate::store::sql::GROUP_COLUMNS`] with `rank` and `total` after it.
        pub(super) fn group_from_row(r: &$row) -> Result<(Row, i64), $error> {
            let latest: i64 = r.$get(25)?;
            let row = Row {
                group_key: r.$get(0)?,
                card_key: r.$get(1)?,
                card: card_from(r, 2)?,
                name: r.$get(10)?,
                label: r.$get(11)?,
                board: r.$get(12)?,
                family: r.$get(13)?,
                bus: r.$get(14)?,
                formula: r.$get(15)?,
                samples: r.$get(16)?,
                submitters: r.$get(17)?,
                median_score: r.$get(18)?,
                p10_score: r.$get(19)?,
                p90_score: r.$get(20)?,
                median_figures: figures_from(r, 21)?,
                latest_unix: latest,
                latest: date_of(latest),
                held: r.$get(26)?,
                rank: r.$get(27)?,
            };
            Ok((row, r.$get(28)?))
        }

        /// A row of [`crate::store::sql::COUNTED`].
        pub(super) fn counted_from_row(r: &$row) -> Result<CountedRow, $error> {
            Ok(CountedRow {
                id: r.$get(0)?,
                created_at: r.$get(1)?,
                score: r.$get(2)?,
                figures: figures_from(r, 3)?,
                class_label: r.$get(7)?,
                label: r.$get(8)?,
                label_key: r.$get(9)?,
                board: r.$get(10)?,
                card_key: r.$get(11)?,
                accepted: crate::store::is_accepted(r.$get::<_, Option<String>>(12)?.as_deref()),
            })
        }

        /// A row of [`crate::store::sql::SUBMITTER_COLUMNS`].
        pub(super) fn entry_from_row(r: &$row) -> Result<SubmitterEntry, $error> {
            Ok(SubmitterEntry {
                group_key: r.$get(0)?,
                submitter: r.$get(1)?,
                card_key: r.$get(2)?,
                results: r.$get(3)?,
                score: r.$get(4)?,
                figures: figures_from(r, 5)?,
                class_label: r.$get(9)?,
                label: r.$get(10)?,
                label_key: r.$get(11)?,
                board: r.$get(12)?,
                latest: r.$get(13)?,
                first_id: r.$get(14)?,
                accepted: r.$get::<_, i64>(15)? != 0,
                held: r.$get::<_, i64>(16)? != 0,
                hold: crate::store::held::Hold::from_code(r.$get(16)?),
                joined_at: r.$get(17)?,
            })
        }
    };
}

pub(super) use row_readers;
