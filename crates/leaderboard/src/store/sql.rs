//! The SQL both backends run. Parameters are written `$1`, `$2`…: PostgreSQL
//! numbers them, and SQLite reads each as a named parameter bound in order
//! of first appearance, which is the same order here.
//!
//! Every user-supplied value goes in as a parameter, never into the text.

/// Tables and indexes; `{id}` becomes the backend's auto-increment key type.
///
/// The card page's queries are answered from covering indexes
/// (`results_card_points`, `results_card_classes`), so a card with ten
/// thousand results never reads its reports.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS results (
    id {id},
    created_at BIGINT NOT NULL,
    status TEXT NOT NULL,
    auto_reasons TEXT NOT NULL,
    moderation TEXT,
    idem_key TEXT NOT NULL UNIQUE,
    body_hash TEXT NOT NULL,
    delete_hash TEXT NOT NULL,
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
    board TEXT NOT NULL,
    bus TEXT NOT NULL,
    formula TEXT NOT NULL,
    verdict_version TEXT NOT NULL,
    score BIGINT,
    claimed TEXT,
    measured TEXT,
    report TEXT NOT NULL,
    verdict TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS results_group_score ON results (group_key, status, score);
CREATE INDEX IF NOT EXISTS results_card_points ON results (card_key, status, created_at, score, group_key);
CREATE INDEX IF NOT EXISTS results_card_classes ON results (card_key, status, claimed, measured);
CREATE INDEX IF NOT EXISTS results_status_id ON results (status, id);
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
    board TEXT NOT NULL,
    bus TEXT NOT NULL,
    formula TEXT NOT NULL,
    samples BIGINT NOT NULL,
    median BIGINT NOT NULL,
    p10 BIGINT NOT NULL,
    p90 BIGINT NOT NULL,
    latest BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS groups_median ON groups (median);
CREATE INDEX IF NOT EXISTS groups_card ON groups (card_key);
";

/// The columns of a result, in the order the mappers read them.
pub const RESULT_COLUMNS: &str = "id, created_at, status, auto_reasons, moderation, group_key, card_key, kind, \
    manufacturer_id, manufacturer, oem_id, product_name, product_revision, capacity_bytes, class_label, board, bus, \
    formula, verdict_version, score, claimed, measured, report, verdict";

pub const INSERT_RESULT: &str = "INSERT INTO results (created_at, status, auto_reasons, moderation, idem_key, \
    body_hash, delete_hash, group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
    product_revision, capacity_bytes, class_label, board, bus, formula, verdict_version, score, claimed, measured, \
    report, verdict) VALUES ($1, $2, $3, NULL, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
    $19, $20, $21, $22, $23, $24, $25)";

/// The stored body hash and receipt of an idempotency key.
pub const FIND_KEY: &str =
    "SELECT id, body_hash, status, auto_reasons, moderation, score, formula FROM results WHERE idem_key = $1";

/// The public, scored results of a group: count and newest.
pub const GROUP_COUNT: &str =
    "SELECT COUNT(*), MAX(created_at) FROM results WHERE group_key = $1 AND status = 'public' AND score IS NOT NULL";

/// The score at a 0-based position of a group's sorted public scores.
pub const GROUP_NTH: &str = "SELECT score FROM results WHERE group_key = $1 AND status = 'public' \
    AND score IS NOT NULL ORDER BY score LIMIT 1 OFFSET $2";

pub const UPSERT_GROUP: &str = "INSERT INTO groups (group_key, card_key, kind, manufacturer_id, manufacturer, \
    oem_id, product_name, product_revision, capacity_bytes, class_label, board, bus, formula, samples, median, p10, \
    p90, latest) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18) \
    ON CONFLICT (group_key) DO UPDATE SET samples = excluded.samples, median = excluded.median, p10 = excluded.p10, \
    p90 = excluded.p90, latest = excluded.latest, class_label = excluded.class_label";

pub const DELETE_GROUP: &str = "DELETE FROM groups WHERE group_key = $1";

pub const SET_STATUS: &str = "UPDATE results SET status = $1, moderation = $2 WHERE id = $3";

pub const DELETE_RESULT: &str = "DELETE FROM results WHERE id = $1";

pub const FIND_DELETE_HASH: &str = "SELECT delete_hash FROM results WHERE id = $1";

/// The columns of a group row, in the order the mappers read them.
pub const GROUP_COLUMNS: &str = "group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
    product_revision, capacity_bytes, class_label, board, bus, formula, samples, median, p10, p90, latest";

/// The leaderboard: filtered groups, ranked by median among rows with
/// enough samples, then ordered and cut. `$1`..`$4` filter (NULL = any):
/// kind, board, a class mark or label (matched as whole words of the label),
/// bus; `$5` limit, `$6` offset. The casts tell PostgreSQL the parameters'
/// type where `IS NULL` alone would leave it unknown.
pub fn leaderboard(order_by: &str, descending: bool) -> String {
    let dir = if descending { "DESC" } else { "ASC" };
    format!(
        "SELECT {GROUP_COLUMNS}, CASE WHEN samples >= 3 THEN RANK() OVER (PARTITION BY samples >= 3 ORDER BY median DESC) END AS rank \
         FROM groups \
         WHERE (CAST($1 AS TEXT) IS NULL OR kind = $1) AND (CAST($2 AS TEXT) IS NULL OR board = $2) \
         AND (CAST($3 AS TEXT) IS NULL OR (' ' || COALESCE(class_label, '') || ' ') LIKE ('% ' || $3 || ' %') OR class_label = $3) \
         AND (CAST($4 AS TEXT) IS NULL OR bus = $4) \
         ORDER BY {order_by} {dir}, group_key LIMIT $5 OFFSET $6"
    )
}

pub const CARD_GROUPS: &str = "SELECT group_key, card_key, kind, manufacturer_id, manufacturer, oem_id, product_name, \
    product_revision, capacity_bytes, class_label, board, bus, formula, samples, median, p10, p90, latest, \
    CASE WHEN samples >= 3 THEN CAST(0 AS BIGINT) END AS rank FROM groups WHERE card_key = $1 ORDER BY samples DESC, group_key";

pub const CARD_POINTS: &str = "SELECT id, score, group_key, created_at FROM results \
    WHERE card_key = $1 AND status = 'public' AND score IS NOT NULL ORDER BY created_at DESC LIMIT $2";

pub const CARD_CLASSES: &str = "SELECT COALESCE(claimed, ''), COALESCE(measured, ''), COUNT(*) FROM results \
    WHERE card_key = $1 AND status = 'public' GROUP BY COALESCE(claimed, ''), COALESCE(measured, '') \
    ORDER BY COUNT(*) DESC";

pub const CARD_FLAGGED: &str = "SELECT id, auto_reasons, moderation FROM results \
    WHERE card_key = $1 AND status = 'flagged' ORDER BY id DESC LIMIT 50";

/// The identity of a card from any of its results (the card page of a card
/// whose results are all flagged still has a name).
pub fn card_any() -> String {
    format!("SELECT {RESULT_COLUMNS} FROM results WHERE card_key = $1 AND status <> 'hidden' ORDER BY id DESC LIMIT 1")
}

pub fn get_result() -> String {
    format!("SELECT {RESULT_COLUMNS} FROM results WHERE id = $1")
}

pub fn export_page() -> String {
    format!("SELECT {RESULT_COLUMNS} FROM results WHERE status = 'public' AND id > $1 ORDER BY id LIMIT $2")
}

pub const DISTINCT_KINDS: &str = "SELECT DISTINCT kind FROM groups ORDER BY kind";
pub const DISTINCT_BOARDS: &str = "SELECT DISTINCT board FROM groups ORDER BY board";
pub const DISTINCT_BUSES: &str = "SELECT DISTINCT bus FROM groups ORDER BY bus";
