//! Reading a row of either database into the store's types, column by
//! column, by name: [`super::sql`] builds the column lists (the figures'
//! from the figures' table), and a reader never depends on their order. The
//! two drivers name the same checked read differently (`get`, `try_get`)
//! and return their own errors, so one macro writes the readers for each:
//! a column added to a list is read in one place. Every read is checked: a
//! value of an unexpected type (a column altered by hand, a NULL where none
//! belongs) is an error, never a panic.

/// Defines `card_from`, `result_from_row`, `group_from_row`,
/// `counted_from_row` and `entry_from_row` for rows of type `$row`, read
/// with the driver's checked getter `$get`, whose errors are `$error`.
macro_rules! row_readers {
    ($row:ty, $get:ident, $error:ty) => {
        use crate::card::Card;
        use crate::store::aggregate::{CountedRow, SubmitterEntry};
        use crate::store::{Figures, Row, Status, StoredResult, date_of, reasons_of};

        fn card_from(r: &$row) -> Result<Card, $error> {
            Ok(Card {
                kind: r.$get("kind")?,
                manufacturer_id: r.$get::<_, Option<i64>>("manufacturer_id")?.and_then(|m| u8::try_from(m).ok()),
                manufacturer: r.$get("manufacturer")?,
                oem_id: r.$get("oem_id")?,
                product_name: r.$get("product_name")?,
                product_revision: r.$get("product_revision")?,
                capacity_bytes: r.$get::<_, Option<i64>>("capacity_bytes")?.and_then(|c| u64::try_from(c).ok()),
                class_label: r.$get("class_label")?,
            })
        }

        /// The figure columns, each under the name the figures' table gives it.
        fn figures_from(r: &$row) -> Result<Figures, $error> {
            let mut figures = Figures::default();
            for figure in storage_scoring::figure::BOARD {
                if let Some(column) = crate::store::sql::figure_column(figure) {
                    figures.set(figure, r.$get(column)?);
                }
            }
            Ok(figures)
        }

        /// A row of [`crate::store::sql::result_columns`].
        pub(super) fn result_from_row(r: &$row) -> Result<StoredResult, $error> {
            let auto: String = r.$get("auto_reasons")?;
            let moderation: Option<String> = r.$get("moderation")?;
            let (_, reasons) = reasons_of(&auto, moderation.as_deref());
            Ok(StoredResult {
                id: r.$get("id")?,
                created_at: r.$get("created_at")?,
                status: Status::parse(&r.$get::<_, String>("status")?),
                reasons,
                group_key: r.$get("group_key")?,
                card_key: r.$get("card_key")?,
                card: card_from(r)?,
                board: r.$get("board")?,
                bus: r.$get("bus")?,
                formula: r.$get("formula")?,
                verdict_version: r.$get("verdict_version")?,
                score: r.$get("score")?,
                claimed: r.$get("claimed")?,
                measured: r.$get("measured")?,
                report_json: r.$get("report")?,
                verdict_json: r.$get("verdict")?,
                submitter: r.$get("submitter")?,
                label: r.$get("label")?,
                board_key: r.$get("board_key")?,
                board_revision: r.$get("board_revision")?,
                family: r.$get("family")?,
                family_key: r.$get("family_key")?,
                figures: figures_from(r)?,
                content_hash: r.$get("content_hash")?,
                standing: None,
                held: false,
            })
        }

        /// A row of the groups' columns with `rank` and `total` after it.
        pub(super) fn group_from_row(r: &$row) -> Result<(Row, i64), $error> {
            let latest: i64 = r.$get("latest")?;
            let row = Row {
                group_key: r.$get("group_key")?,
                card_key: r.$get("card_key")?,
                card: card_from(r)?,
                name: r.$get("name")?,
                label: r.$get("label")?,
                board: r.$get("board")?,
                family: r.$get("family")?,
                bus: r.$get("bus")?,
                formula: r.$get("formula")?,
                samples: r.$get("samples")?,
                submitters: r.$get("submitters")?,
                median_score: r.$get("median")?,
                p10_score: r.$get("p10")?,
                p90_score: r.$get("p90")?,
                median_figures: figures_from(r)?,
                latest_unix: latest,
                latest: date_of(latest),
                held: r.$get("held")?,
                rank: r.$get("rank")?,
            };
            Ok((row, r.$get("total")?))
        }

        /// A row of [`crate::store::sql::counted`].
        pub(super) fn counted_from_row(r: &$row) -> Result<CountedRow, $error> {
            Ok(CountedRow {
                id: r.$get("id")?,
                created_at: r.$get("created_at")?,
                score: r.$get("score")?,
                figures: figures_from(r)?,
                class_label: r.$get("class_label")?,
                label: r.$get("label")?,
                label_key: r.$get("label_key")?,
                board: r.$get("board")?,
                card_key: r.$get("card_key")?,
                accepted: crate::store::is_accepted(r.$get::<_, Option<String>>("moderation")?.as_deref()),
            })
        }

        /// A row of the submitters' columns.
        pub(super) fn entry_from_row(r: &$row) -> Result<SubmitterEntry, $error> {
            let held: i64 = r.$get("held")?;
            Ok(SubmitterEntry {
                group_key: r.$get("group_key")?,
                submitter: r.$get("submitter")?,
                card_key: r.$get("card_key")?,
                results: r.$get("results")?,
                score: r.$get("score")?,
                figures: figures_from(r)?,
                class_label: r.$get("class_label")?,
                label: r.$get("label")?,
                label_key: r.$get("label_key")?,
                board: r.$get("board")?,
                latest: r.$get("latest")?,
                first_id: r.$get("first_id")?,
                accepted: r.$get::<_, i64>("accepted")? != 0,
                held: held != 0,
                hold: crate::store::held::Hold::from_code(held),
                joined_at: r.$get("joined_at")?,
            })
        }
    };
}

pub(super) use row_readers;
