//! The SQL both backends run. Parameters are written `$1`, `$2`…: PostgreSQL
//! numbers them, and SQLite reads each as a named parameter bound in order
//! of first appearance, which must be the same order (`$1` first, then
//! `$2`, …) in every statement here.
//!
//! Every user-supplied value goes in as a parameter, never into the text;
//! the only text that varies is a column name chosen from a closed enum
//! ([`super::SortKey`]). Texts built from shared column lists are built
//! once (`LazyLock`): they are asked for on every submission.
//!
//! The figure columns (`seq_read`, `rand_write`, …) are not spelled here:
//! every table, column list, parameter list and update that holds figures
//! is built from the figures' table ([`BOARD`], each figure's
//! [`Figure::board`]), with the figures last in each list, so a figure the
//! table adds to the leaderboard needs no SQL written ([`super::migrate`]
//! adds its columns to an existing database).

use std::sync::LazyLock;

use storage_scoring::figure::{BOARD, Figure};

/// The database column of a figure the leaderboard keeps.
pub fn figure_column(figure: Figure) -> Option<&'static str> {
    figure.board().map(|b| b.column)
}

/// The figure columns, each with `prefix` (`r.`, `excluded.`), joined by `, `.
fn figure_columns(prefix: &str) -> String {
    BOARD.iter().filter_map(|&f| figure_column(f)).map(|c| format!("{prefix}{c}")).collect::<Vec<_>>().join(", ")
}

/// The figure columns as lines of a `CREATE TABLE`, each ending in a comma.
fn figure_definitions() -> String {
    BOARD.iter().filter_map(|&f| figure_column(f)).map(|c| format!("    {c} DOUBLE PRECISION,\n")).collect()
}

/// Parameters `$first`, `$first + 1`, … one per figure column, with a
/// leading `, `.
fn figure_params(first: usize) -> String {
    (first..first + BOARD.len()).map(|i| format!(", ${i}")).collect()
}

/// `column = excluded.column` for each figure column, with a leading `, `.
fn figure_updates() -> String {
    BOARD.iter().filter_map(|&f| figure_column(f)).map(|c| format!(", {c} = excluded.{c}")).collect()
}

/// The tables that hold figure columns: every figure the leaderboard keeps
/// has a column in each.
pub const FIGURE_TABLES: [&str; 3] = ["results", "submitters", "groups"];

/// The kept figures whose column a table lacks, from the columns it has
/// (none when it has none: a table not made yet is made with them all).
pub fn missing_figure_columns(have: &[String]) -> Vec<(Figure, &'static str)> {
    if have.is_empty() {
        return Vec::new();
    }
    BOARD
        .iter()
        .filter_map(|&f| figure_column(f).map(|c| (f, c)))
        .filter(|(_, column)| !have.iter().any(|c| c == column))
        .collect()
}

/// Adds a kept figure's column to a table made before the figures' table
/// kept it.
pub fn add_figure_column(table: &str, column: &str) -> String {
    format!("ALTER TABLE {table} ADD COLUMN {column} DOUBLE PRECISION")
}

/// Every network with a public result in a row, by row.
pub const PUBLIC_PAIRS: &str =
    "SELECT DISTINCT group_key, submitter FROM results WHERE status = 'public' ORDER BY group_key, submitter";

/// Fills a figure column just added to `results` from each stored report,
/// with `number` the backend's expression for the report's
/// `measurements.{key}` as a number (NULL when it is not one). The
/// aggregates (`submitters`, `groups`) are then computed again.
pub fn backfill_figure(column: &str, number: &str) -> String {
    format!("UPDATE results SET {column} = {number}")
}

/// The schema's version, kept in `meta`; [`super::migrate`] brings an older
/// database up to it on start.
pub const SCHEMA_VERSION: i64 = 3;

/// Key-value facts about the database itself: the schema version and the
/// secret salt of submitter ids.
pub const META: &str = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

/// Tables and indexes; `id` is the backend's auto-increment key type (one
/// that never hands out an id again after a delete).
///
/// - `results`: every result, whatever its status, with the columns the
///   leaderboard groups, counts and sorts by.
/// - `submitters`: one row per group and submitter, their own medians over
///   their counted results (a repeated report counts once).
/// - `groups`: one leaderboard row per card × board × bus × formula, the
///   medians over submitters, and the card's display fields (by majority,
///   never from the newest result).
///
/// The card page's queries are answered from covering indexes
/// (`results_card_points`, `results_card_classes`), so a card with ten
/// thousand results never reads its reports.
pub fn schema(id: &str) -> String {
    format!("{};\n{}", results_table("results", id), indexes_and_aggregates())
}

/// The `results` table under `name` (a migration builds it beside the old one).
pub fn results_table(name: &str, id: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {name} (
    id {id},
    created_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    auto_reasons TEXT NOT NULL,
    moderation TEXT,
    idem_key TEXT NOT NULL UNIQUE,
    body_hash TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    delete_hash TEXT NOT NULL,
    submitter TEXT NOT NULL,
    group_key TEXT NOT NULL,
    card_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    manufacturer_id BIGINT,
    manufacturer TEXT,
    oem_id TEXT NOT NULL,
    product_name TEXT NOT NULL,
    product_revision TEXT NOT NULL,
    capacity_bytes BIGINT,
    class_label TEXT,
    label TEXT,
    label_key TEXT,
    board TEXT NOT NULL,
    board_key TEXT NOT NULL,
    board_revision TEXT,
    family TEXT NOT NULL,
    family_key TEXT NOT NULL,
    bus TEXT NOT NULL,
    formula TEXT NOT NULL,
    verdict_version TEXT NOT NULL,
    score BIGINT,
    claimed TEXT,
    measured TEXT,
    report TEXT NOT NULL,
{figures}    verdict TEXT NOT NULL
)",
        figures = figure_definitions()
    )
}

/// Everything but the `results` table. Every index costs each submission
/// an insert: the card page reads a card's networks from `submitters`, so
/// the two indexes over a card's results that it once walked are dropped
/// (`CREATE`/`DROP … IF EXISTS`, run on every start, bring an existing
/// database along).
pub fn indexes_and_aggregates() -> &'static str {
    static TEXT: LazyLock<String> =
        LazyLock::new(|| INDEXES_AND_AGGREGATES.replace("{figures}", &figure_definitions()));
    &TEXT
}

/// [`indexes_and_aggregates`] with `{figures}` where the figure columns go.
const INDEXES_AND_AGGREGATES: &str = "
DROP INDEX IF EXISTS results_group_submitter;
CREATE INDEX IF NOT EXISTS results_network_newest ON results (group_key, submitter, status, id);
CREATE INDEX IF NOT EXISTS results_group_content ON results (group_key, content_hash, status, id);
DROP INDEX IF EXISTS results_card_points;
DROP INDEX IF EXISTS results_card_classes;
CREATE INDEX IF NOT EXISTS results_status_id ON results (status, id);
CREATE INDEX IF NOT EXISTS results_group_first ON results (group_key, status, id);
CREATE INDEX IF NOT EXISTS results_card_first ON results (card_key, status, id);
CREATE INDEX IF NOT EXISTS results_submitter_time ON results (submitter, created_at);
CREATE TABLE IF NOT EXISTS submitters (
    group_key TEXT NOT NULL,
    submitter TEXT NOT NULL,
    card_key TEXT NOT NULL,
    results BIGINT NOT NULL,
    score BIGINT NOT NULL,
{figures}    class_label TEXT,
    label TEXT,
    label_key TEXT,
    board TEXT NOT NULL,
    latest BIGINT NOT NULL,
    first_id BIGINT NOT NULL,
    accepted BIGINT NOT NULL,
    held BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (group_key, submitter)
);
CREATE INDEX IF NOT EXISTS submitters_card ON submitters (card_key);
CREATE TABLE IF NOT EXISTS groups (
    group_key TEXT PRIMARY KEY,
    card_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    manufacturer_id BIGINT,
    manufacturer TEXT,
    oem_id TEXT NOT NULL,
    product_name TEXT NOT NULL,
    product_revision TEXT NOT NULL,
    capacity_bytes BIGINT,
    class_label TEXT,
    name TEXT NOT NULL,
    label TEXT,
    search TEXT NOT NULL,
    board TEXT NOT NULL,
    board_key TEXT NOT NULL,
    family TEXT NOT NULL,
    family_key TEXT NOT NULL,
    bus TEXT NOT NULL,
    formula TEXT NOT NULL,
    samples BIGINT NOT NULL,
    submitters BIGINT NOT NULL,
    median BIGINT NOT NULL,
    p10 BIGINT NOT NULL,
    p90 BIGINT NOT NULL,
{figures}    latest BIGINT NOT NULL,
    held BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS groups_median ON groups (median);
CREATE TABLE IF NOT EXISTS bans (submitter TEXT PRIMARY KEY, reason TEXT NOT NULL, created_at BIGINT NOT NULL);
CREATE INDEX IF NOT EXISTS groups_card ON groups (card_key);
";

/// The indexes of the first schema, whose names the new ones reuse.
pub const V1_INDEXES: [&str; 4] =
    ["results_group_score", "results_card_points", "results_card_classes", "results_status_id"];

/// The columns of a result (the mappers read them by name).
pub fn result_columns() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "id, created_at, status, auto_reasons, moderation, group_key, card_key, kind, manufacturer_id, \
             manufacturer, oem_id, product_name, product_revision, capacity_bytes, class_label, board, bus, formula, \
             verdict_version, score, claimed, measured, report, verdict, submitter, label, board_key, \
             board_revision, family, family_key, content_hash, {}",
            figure_columns("")
        )
    });
    &TEXT
}

/// The columns a new result is written with, in the order of its
/// parameters, before the figures'.
const INSERT_COLUMNS: &str = "created_at, status, auto_reasons, moderation, idem_key, body_hash, content_hash, \
    delete_hash, submitter, group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
    product_revision, capacity_bytes, class_label, label, label_key, board, board_key, board_revision, family, \
    family_key, bus, formula, verdict_version, score, claimed, measured, report, verdict";

/// How many parameters [`insert_result`] takes (one more with the id): its
/// columns', then one per figure column.
pub const INSERT_PARAMS: usize = 34 + BOARD.len();

/// Inserts a result into `table`. The backend gives the id, except in a
/// migration, which keeps the old one (`with_id`: it comes last, as
/// `$INSERT_PARAMS + 1`).
pub fn insert_result(table: &str, with_id: bool) -> String {
    let params: Vec<String> = (1..=INSERT_PARAMS + usize::from(with_id)).map(|i| format!("${i}")).collect();
    let id = if with_id { ", id" } else { "" };
    format!("INSERT INTO {table} ({INSERT_COLUMNS}, {}{id}) VALUES ({})", figure_columns(""), params.join(", "))
}

/// Appends one boxed parameter per figure column, from `figures`, to
/// `params` (the statements built here take the figures last).
macro_rules! push_figure_params {
    ($params:expr, $figures:expr) => {{
        let figures: &$crate::store::Figures = $figures;
        for figure in storage_scoring::figure::BOARD {
            $params.push(Box::new(figures[figure]));
        }
    }};
}
pub(crate) use push_figure_params;

/// The values of [`insert_result`]'s parameters for a `NewResult`, in its
/// column order, each in a `Box` of the driver's `ToSql` that the caller
/// names (`$boxed`): the two backends bind the same values, listed once
/// here beside the columns they fill.
macro_rules! insert_result_params {
    ($boxed:ty, $new:expr) => {{
        let new: &$crate::store::NewResult = $new;
        let card = &new.card;
        let mut params: Vec<Box<$boxed>> = vec![
            Box::new(new.created_at),
            Box::new(new.status().as_str().to_owned()),
            Box::new($crate::store::reasons_json(&new.reasons)),
            Box::new(None::<String>),
            Box::new(new.idempotency_key.clone()),
            Box::new(new.body_hash.clone()),
            Box::new(new.content_hash.clone()),
            Box::new(new.delete_hash.clone()),
            Box::new(new.submitter.clone()),
            Box::new(new.group_key.clone()),
            Box::new(new.card_key.clone()),
            Box::new(card.kind.clone()),
            Box::new(card.manufacturer_id.map(i64::from)),
            Box::new(card.manufacturer.clone()),
            Box::new(card.oem_id.clone()),
            Box::new(card.product_name.clone()),
            Box::new(card.product_revision.clone()),
            Box::new(card.capacity_bytes.and_then(|c| i64::try_from(c).ok())),
            Box::new(card.class_label.clone()),
            Box::new(new.label.clone()),
            Box::new(new.label_key.clone()),
            Box::new(new.board.model.clone()),
            Box::new(new.board.key.clone()),
            Box::new(new.board.revision.clone()),
            Box::new(new.board.family.clone()),
            Box::new(new.board.family_key.clone()),
            Box::new(new.bus.clone()),
            Box::new(new.formula.clone()),
            Box::new(new.verdict_version.clone()),
            Box::new(new.score),
            Box::new(new.claimed.clone()),
            Box::new(new.measured.clone()),
            Box::new(new.report_json.clone()),
            Box::new(new.verdict_json.clone()),
        ];
        $crate::store::sql::push_figure_params!(params, &new.figures);
        params
    }};
}
pub(crate) use insert_result_params;

/// What a network stored since a time: bytes of reports, and its oldest
/// such result's time (the quota's window).
/// Endurance and power-loss results count against the same quota.
pub const STORED_SINCE: &str = "SELECT COALESCE(SUM(n), 0), MIN(t) FROM (\
    SELECT LENGTH(report) AS n, created_at AS t FROM results WHERE submitter = $1 AND created_at > $2 \
    UNION ALL SELECT LENGTH(report), created_at FROM wear_results WHERE submitter = $1 AND created_at > $2) AS s";

/// Every result a network sent, by the id of one of them.
pub const NETWORK_RESULTS: &str = "SELECT r.submitter, r.id FROM results r WHERE r.submitter = (SELECT submitter FROM results WHERE id = $1) ORDER BY r.id";

/// A ban on a network, and its lifting.
pub const BAN: &str = "INSERT INTO bans (submitter, reason, created_at) VALUES ($1, $2, $3) \
    ON CONFLICT (submitter) DO UPDATE SET reason = excluded.reason, created_at = excluded.created_at";
pub const UNBAN: &str = "DELETE FROM bans WHERE submitter = $1";
pub const BANNED: &str = "SELECT reason FROM bans WHERE submitter = $1";

/// The stored body hash and receipt of an idempotency key.
pub const FIND_KEY: &str = "SELECT id, body_hash, status, auto_reasons, moderation, score, formula, group_key, \
    submitter, board, family FROM results WHERE idem_key = $1";

/// A group and submitter's counted results: public, scored, and each the
/// first public result of the group with its content (the same report sent
/// again, under any key or from any address, counts once).
pub fn counted() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT r.id, r.created_at, r.score, r.class_label, r.label, r.label_key, r.board, r.card_key, \
             r.moderation, {} FROM results r \
             WHERE r.group_key = $1 AND r.submitter = $2 AND r.status = 'public' AND r.score IS NOT NULL \
             AND r.id = (SELECT MIN(e.id) FROM results e WHERE e.group_key = r.group_key \
             AND e.content_hash = r.content_hash AND e.status = 'public')",
            figure_columns("r.")
        )
    });
    &TEXT
}

/// Submitters whose counted results may change when a result with this
/// content changes state (it, or a copy of it, becomes or stops being the
/// first of its content).
pub const SUBMITTERS_OF_CONTENT: &str =
    "SELECT DISTINCT submitter FROM results WHERE group_key = $1 AND content_hash = $2";

/// A network's entry in a row: 12 parameters ([`upsert_submitter_params`]),
/// then the figures.
pub fn upsert_submitter() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "INSERT INTO submitters (group_key, submitter, card_key, results, score, class_label, label, label_key, \
             board, latest, first_id, accepted, {}) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12{}) \
             ON CONFLICT (group_key, submitter) DO UPDATE SET card_key = excluded.card_key, \
             results = excluded.results, score = excluded.score, class_label = excluded.class_label, \
             label = excluded.label, label_key = excluded.label_key, board = excluded.board, \
             latest = excluded.latest, first_id = excluded.first_id, accepted = excluded.accepted{}",
            figure_columns(""),
            figure_params(13),
            figure_updates()
        )
    });
    &TEXT
}

/// The values of [`upsert_submitter`]'s parameters for a `SubmitterEntry`,
/// boxed as the caller's driver wants them (see [`insert_result_params`]).
macro_rules! upsert_submitter_params {
    ($boxed:ty, $entry:expr) => {{
        let e: &$crate::store::aggregate::SubmitterEntry = $entry;
        let mut params: Vec<Box<$boxed>> = vec![
            Box::new(e.group_key.clone()),
            Box::new(e.submitter.clone()),
            Box::new(e.card_key.clone()),
            Box::new(e.results),
            Box::new(e.score),
            Box::new(e.class_label.clone()),
            Box::new(e.label.clone()),
            Box::new(e.label_key.clone()),
            Box::new(e.board.clone()),
            Box::new(e.latest),
            Box::new(e.first_id),
            Box::new(i64::from(e.accepted)),
        ];
        $crate::store::sql::push_figure_params!(params, &e.figures);
        params
    }};
}
pub(crate) use upsert_submitter_params;

/// Whether a network is held back from its row, and why: 0 counted, else
/// the code of its [`super::held::Hold`].
pub const SET_SUBMITTER_HELD: &str = "UPDATE submitters SET held = $1 WHERE group_key = $2 AND submitter = $3";

pub const DELETE_SUBMITTER: &str = "DELETE FROM submitters WHERE group_key = $1 AND submitter = $2";

/// The columns of a submitter row, in the order the mappers read them; the
/// last is when the network joined the row (its first counted result's time).
fn submitter_columns() -> String {
    format!(
        "group_key, submitter, card_key, results, score, class_label, label, label_key, board, latest, first_id, \
         accepted, held, COALESCE((SELECT j.created_at FROM results j WHERE j.id = submitters.first_id), 0) \
         AS joined_at, {}",
        figure_columns("")
    )
}

pub fn group_submitters() -> &'static str {
    static TEXT: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {} FROM submitters WHERE group_key = $1", submitter_columns()));
    &TEXT
}

pub fn card_submitters() -> &'static str {
    static TEXT: LazyLock<String> =
        LazyLock::new(|| format!("SELECT {} FROM submitters WHERE card_key = $1", submitter_columns()));
    &TEXT
}

/// The first public result of a group: its card identity and board (a
/// row's identity never changes with a later result).
pub fn group_sample() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {} FROM results WHERE group_key = $1 AND status = 'public' ORDER BY id LIMIT 1",
            result_columns()
        )
    });
    &TEXT
}

/// The first public result of a card: how its name is spelled.
pub fn card_first() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {} FROM results WHERE card_key = $1 AND status = 'public' ORDER BY id LIMIT 1",
            result_columns()
        )
    });
    &TEXT
}

/// A leaderboard row: 26 parameters (the row's identity, display and
/// counts), then the figures' medians.
pub fn upsert_group() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        let params: String = (1..=26).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ");
        format!(
            "INSERT INTO groups (group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
             product_revision, capacity_bytes, class_label, name, label, search, board, board_key, family, \
             family_key, bus, formula, samples, submitters, median, p10, p90, latest, held, {}) \
             VALUES ({params}{}) \
             ON CONFLICT (group_key) DO UPDATE SET board = excluded.board, samples = excluded.samples, \
             submitters = excluded.submitters, median = excluded.median, p10 = excluded.p10, p90 = excluded.p90, \
             latest = excluded.latest, held = excluded.held{}",
            figure_columns(""),
            figure_params(27),
            figure_updates()
        )
    });
    &TEXT
}

/// The values of [`upsert_group`]'s parameters, boxed as the caller's
/// driver wants them (see [`insert_result_params`]): the row's key and
/// card key, the card it is of (`card`: its CID fields) and the card as
/// shown (`display`: the class, name and search text, which the card's
/// other rows may have settled), where it was measured (`place`: anything
/// with `board_key`, `family`, `family_key`, `bus` and `formula`), and its
/// [`super::aggregate::GroupStats`].
macro_rules! upsert_group_params {
    ($boxed:ty, $group:expr, $card_key:expr, $card:expr, $display:expr, $place:expr, $stats:expr) => {{
        let card: &$crate::card::Card = $card;
        let display: &$crate::card::Card = $display;
        let stats: &$crate::store::aggregate::GroupStats = $stats;
        let place = $place;
        let mut params: Vec<Box<$boxed>> = vec![
            Box::new($group.to_owned()),
            Box::new($card_key.clone()),
            Box::new(card.kind.clone()),
            Box::new(card.manufacturer_id.map(i64::from)),
            Box::new(card.manufacturer.clone()),
            Box::new(card.oem_id.clone()),
            Box::new(card.product_name.clone()),
            Box::new(card.product_revision.clone()),
            Box::new(card.capacity_bytes.and_then(|c| i64::try_from(c).ok())),
            Box::new(display.class_label.clone()),
            Box::new(display.display_name()),
            Box::new(None::<String>),
            Box::new(display.search_text()),
            Box::new(stats.board.clone()),
            Box::new(place.board_key.clone()),
            Box::new(place.family.clone()),
            Box::new(place.family_key.clone()),
            Box::new(place.bus.clone()),
            Box::new(place.formula.clone()),
            Box::new(stats.samples),
            Box::new(stats.submitters),
            Box::new(stats.median),
            Box::new(stats.p10),
            Box::new(stats.p90),
            Box::new(stats.latest),
            Box::new(stats.held),
        ];
        $crate::store::sql::push_figure_params!(params, &stats.figures);
        params
    }};
}
pub(crate) use upsert_group_params;

pub const DELETE_GROUP: &str = "DELETE FROM groups WHERE group_key = $1";

/// A row's display fields: the card's class, the row's own label and name.
/// What every row of a card shows now, to write only what changes.
pub const CARD_GROUP_DISPLAYS: &str =
    "SELECT group_key, class_label, name, label, search FROM groups WHERE card_key = $1";

pub const SET_GROUP_DISPLAY: &str =
    "UPDATE groups SET class_label = $1, name = $2, label = $3, search = $4 WHERE group_key = $5";

pub const SET_STATUS: &str = "UPDATE results SET status = $1, moderation = $2 WHERE id = $3";

pub const DELETE_RESULT: &str = "DELETE FROM results WHERE id = $1";

/// What a delete or a moderation needs to know of a result.
pub const FIND_FOR_CHANGE: &str = "SELECT delete_hash, group_key, card_key, submitter, content_hash, auto_reasons, score, formula FROM results \
     WHERE id = $1";

/// The columns of a group row (the mappers read them by name).
fn group_columns() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, product_revision, \
             capacity_bytes, class_label, name, label, board, family, bus, formula, samples, submitters, median, \
             p10, p90, latest, held, {}",
            figure_columns("")
        )
    });
    &TEXT
}

/// The leaderboard: filtered groups, ranked among rows with enough
/// submitters by `rank_by` (highest first), ranked rows before unranked
/// ones, then ordered by `order_by` and cut. `$1`..`$4` filter (NULL = any):
/// kind, a board or family key, a class mark or label (matched as whole
/// words of the label), bus; `$5`..`$8` are search words as LIKE patterns
/// over the row's search text; `$9` limit, `$10` offset. `total` is the
/// number of rows the filters leave. The casts tell PostgreSQL the
/// parameters' type where `IS NULL` alone would leave it unknown.
pub fn leaderboard(rank_by: &str, order_by: &str, descending: bool, min_submitters: i64) -> String {
    let dir = if descending { "DESC" } else { "ASC" };
    let ranked = format!("(submitters >= {min_submitters} AND {rank_by} IS NOT NULL)");
    let columns = group_columns();
    format!(
        "SELECT {columns}, \
         CASE WHEN {ranked} THEN RANK() OVER (PARTITION BY {ranked} ORDER BY {rank_by} DESC) END AS rank, \
         COUNT(*) OVER () AS total \
         FROM groups \
         WHERE (CAST($1 AS TEXT) IS NULL OR kind = $1) \
         AND (CAST($2 AS TEXT) IS NULL OR board_key = $2 OR family_key = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR (' ' || COALESCE(class_label, '') || ' ') LIKE ('% ' || $3 || ' %') OR class_label = $3) \
         AND (CAST($4 AS TEXT) IS NULL OR bus = $4) \
         AND (CAST($5 AS TEXT) IS NULL OR search LIKE $5 ESCAPE '\\') \
         AND (CAST($6 AS TEXT) IS NULL OR search LIKE $6 ESCAPE '\\') \
         AND (CAST($7 AS TEXT) IS NULL OR search LIKE $7 ESCAPE '\\') \
         AND (CAST($8 AS TEXT) IS NULL OR search LIKE $8 ESCAPE '\\') \
         ORDER BY CASE WHEN {ranked} THEN 0 ELSE 1 END, {order_by} {dir} NULLS LAST, group_key LIMIT $9 OFFSET $10"
    )
}

/// The rows of one card, most submitters first; `rank` is a placeholder
/// (a card page ranks nothing).
pub fn card_groups() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {}, CAST(NULL AS BIGINT) AS rank, CAST(0 AS BIGINT) AS total FROM groups \
             WHERE card_key = $1 ORDER BY submitters DESC, samples DESC, group_key",
            group_columns()
        )
    });
    &TEXT
}

/// The newest public result of a network in a row (`s`), found at the end
/// of its `results_network_newest` range.
const NEWEST_OF_NETWORK: &str = "(SELECT e.id FROM results e WHERE e.group_key = s.group_key \
    AND e.submitter = s.submitter AND e.status = 'public' AND e.score IS NOT NULL ORDER BY e.id DESC LIMIT 1)";

/// A card's plot and recent list: one point per counted network (its newest
/// result on the card) with how many more it sent, never from a held
/// network. Walks the card's networks (`submitters`), never its results, so
/// a card with a hundred thousand results costs what one with a hundred does.
pub fn card_points() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT r.id, r.score, r.group_key, r.created_at, x.n FROM (SELECT s.submitter, \
             CAST(SUM(s.results) AS BIGINT) AS n, \
             MAX({NEWEST_OF_NETWORK}) AS id FROM submitters s WHERE s.card_key = $1 AND s.held = 0 \
             GROUP BY s.submitter) x JOIN results r ON r.id = x.id ORDER BY r.created_at DESC, r.id DESC LIMIT $2"
        )
    });
    &TEXT
}

/// A card's held results (public, from a network held back from its row),
/// newest first: by the held networks, few, then their results. (`CROSS
/// JOIN` keeps SQLite from walking every public result newest first
/// instead, which it prefers for the `ORDER BY` when none is held.)
pub const CARD_HELD: &str = "SELECT r.id, r.submitter, r.score, r.group_key, s.held FROM submitters s CROSS JOIN results r \
    WHERE s.card_key = $1 AND s.held <> 0 AND r.group_key = s.group_key AND r.submitter = s.submitter \
    AND r.status = 'public' ORDER BY r.id DESC LIMIT 500";

/// A card's claimed and measured classes, with how many networks say so:
/// each counted network's newest result in each row votes, so one
/// network's many results count once and a held network's not at all.
pub fn card_classes() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT COALESCE(r.claimed, ''), COALESCE(r.measured, ''), COUNT(DISTINCT s.submitter) \
             FROM submitters s JOIN results r ON r.id = {NEWEST_OF_NETWORK} \
             WHERE s.card_key = $1 AND s.held = 0 GROUP BY COALESCE(r.claimed, ''), COALESCE(r.measured, '') \
             ORDER BY COUNT(DISTINCT s.submitter) DESC, COALESCE(r.claimed, ''), COALESCE(r.measured, '')"
        )
    });
    &TEXT
}

pub const CARD_FLAGGED: &str = "SELECT id, submitter, auto_reasons, moderation FROM results \
    WHERE card_key = $1 AND status = 'flagged' ORDER BY id DESC LIMIT 500";

/// The identity of a card from any of its results (the card page of a card
/// whose results are all flagged still has a name).
pub fn card_any() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!(
            "SELECT {} FROM results WHERE card_key = $1 AND status <> 'hidden' ORDER BY id DESC LIMIT 1",
            result_columns()
        )
    });
    &TEXT
}

pub fn get_result() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| format!("SELECT {} FROM results WHERE id = $1", result_columns()));
    &TEXT
}

pub fn export_page() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(|| {
        format!("SELECT {} FROM results WHERE status = 'public' AND id > $1 ORDER BY id LIMIT $2", result_columns())
    });
    &TEXT
}

// The filter form's choices: values of rows with at least three counted
// networks ([`super::MIN_RANKED_SUBMITTERS`]), so that one network cannot
// add a choice to everybody's page.
pub const DISTINCT_KINDS: &str = "SELECT DISTINCT kind FROM groups WHERE submitters >= 3 ORDER BY kind";
pub const DISTINCT_BOARDS: &str =
    "SELECT DISTINCT family, board FROM groups WHERE submitters >= 3 ORDER BY family, board";
pub const DISTINCT_BUSES: &str = "SELECT DISTINCT bus FROM groups WHERE submitters >= 3 ORDER BY bus";
