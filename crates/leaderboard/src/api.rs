//! The JSON API of docs/leaderboard.md#api: submit, read, delete, moderate, leaderboard.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::App;
use crate::auth;
use crate::card::group_key;
use crate::error::ApiError;
use crate::intake::{self, FORMULA_VERSION, VERDICT_VERSION};
use crate::store::{Deleted, LeaderboardQuery, Moderation, NewResult, Receipt, SortKey, Status, Storage, Submitted};

/// The largest body accepted (docs/leaderboard.md#status-codes); a report is a few KiB.
pub const MAX_BODY: usize = 256 * 1024;

/// The idempotency header and its bounds.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// `POST /api/v1/results`.
pub async fn submit<S: Storage>(
    State(app): State<Arc<App<S>>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if let Some(limiter) = &app.limiter {
        if let Err(seconds) = limiter.take(client.ip(), Instant::now()) {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many submissions from this address; wait {seconds} s (Retry-After) and send again"),
            );
            e.retry_after = Some(seconds);
            return Err(e);
        }
    }
    let key = idempotency_key(&headers)?;
    let too_large = || {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "body: larger than {} KiB; send one storage-score report, as `storage-score run --json` wrote it",
                MAX_BODY / 1024
            ),
        )
    };
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|e| {
        if e.to_string().contains("length limit")
            || std::error::Error::source(&e).is_some_and(|s| s.to_string().contains("length limit"))
        {
            too_large()
        } else {
            ApiError::bad_request(format!("body: could not be read ({e}); send it again"))
        }
    })?;
    let accepted = intake::accept(&bytes)?;
    let token = auth::new_token();
    let card_key = accepted.card.key();
    let new = NewResult {
        idempotency_key: key,
        body_hash: auth::hex(&Sha256::digest(&bytes)),
        delete_hash: auth::token_hash(&token),
        created_at: unix_now(),
        reasons: accepted.reasons.clone(),
        group_key: group_key(&card_key, &accepted.board, &accepted.bus.label, FORMULA_VERSION),
        card_key,
        card: accepted.card.clone(),
        board: accepted.board.clone(),
        bus: accepted.bus.label.clone(),
        formula: FORMULA_VERSION.to_owned(),
        verdict_version: VERDICT_VERSION.to_owned(),
        score: accepted.score.pibenchmarks.and_then(|s| i64::try_from(s).ok()),
        claimed: accepted.verdict.claimed.clone(),
        measured: accepted.verdict.measured.clone(),
        report_json: serde_json::to_string(&accepted.report).expect("a report serializes"),
        verdict_json: serde_json::to_string(&accepted.verdict).expect("a verdict serializes"),
    };
    let base = base_url(&headers);
    match app.store.submit(new).await.map_err(ApiError::unavailable)? {
        Submitted::Created(receipt) => Ok(created(&base, &receipt, Some(&token), false)),
        Submitted::Replayed(receipt) => Ok(created(&base, &receipt, None, true)),
        Submitted::KeyReused => Err(ApiError::unprocessable(
            "Idempotency-Key: this key was already used for a different report; make a new key for each report (reuse a key only to retry the same body)",
        )),
    }
}

/// The 201 answer. A replay carries no delete token: it is shown once, and
/// only its hash is kept.
fn created(base: &str, receipt: &Receipt, token: Option<&str>, replayed: bool) -> Response {
    let mut body = json!({
        "id": receipt.id,
        "url": format!("{base}/results/{}", receipt.id),
        "status": receipt.status,
        "reasons": receipt.reasons,
        "score": {"pibenchmarks": receipt.score, "formula": receipt.formula},
    });
    if let Some(token) = token {
        body["delete_token"] = json!(token);
    }
    let mut response = (StatusCode::CREATED, Json(body)).into_response();
    let location = format!("/api/v1/results/{}", receipt.id);
    if let Ok(value) = HeaderValue::from_str(&location) {
        response.headers_mut().insert(header::LOCATION, value);
    }
    if replayed {
        response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(value) = headers.get(IDEMPOTENCY_KEY) else {
        return Err(ApiError::bad_request(
            "Idempotency-Key: the header is missing; send a new random key (8 to 128 visible ASCII characters) with each report, and the same key when you retry it",
        ));
    };
    let bytes = value.as_bytes();
    if !(8..=128).contains(&bytes.len()) || !bytes.iter().all(|b| (0x21..=0x7e).contains(b)) {
        return Err(ApiError::bad_request(format!(
            "Idempotency-Key: expected 8 to 128 visible ASCII characters (no spaces), got {} bytes; use e.g. a UUID",
            bytes.len()
        )));
    }
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// `http://HOST` as the client addressed us, for the links we hand out.
pub fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty() && h.len() <= 255 && h.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        })
        .unwrap_or("localhost");
    let scheme = match headers.get("x-forwarded-proto").and_then(|h| h.to_str().ok()) {
        Some("https") => "https",
        _ => "http",
    };
    format!("{scheme}://{host}")
}

pub fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}

/// A result id from the path: 404 for anything that cannot be one.
pub fn parse_id(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::not_found(format!("results/{}: no such result; ids are positive whole numbers", clip(text)))
    })
}

fn clip(text: &str) -> String {
    text.chars().take(40).filter(|c| !c.is_control()).collect()
}

/// Whether the request carries the admin token.
fn is_admin<S>(app: &App<S>, headers: &HeaderMap) -> bool {
    match (&app.admin_token, auth::bearer(headers, "")) {
        (Some(admin), Ok(token)) => auth::same_secret(admin, &token),
        _ => false,
    }
}

/// `GET /api/v1/results/{id}`.
pub async fn get_result<S: Storage>(
    State(app): State<Arc<App<S>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let Some(stored) = app.store.get(id).await.map_err(ApiError::unavailable)? else {
        return Err(ApiError::not_found(format!("results/{id}: no such result (never stored, or deleted)")));
    };
    if stored.status == Status::Hidden && !is_admin(&app, &headers) {
        return Err(ApiError::not_found(format!("results/{id}: hidden by a moderator")));
    }
    let report: serde_json::Value = serde_json::from_str(&stored.report_json).unwrap_or_default();
    let verdict: serde_json::Value = serde_json::from_str(&stored.verdict_json).unwrap_or_default();
    Ok(Json(json!({
        "id": stored.id,
        "status": stored.status,
        "reasons": stored.reasons,
        "created_at": crate::store::datetime_of(stored.created_at),
        "card_key": stored.card_key,
        "board": stored.board,
        "bus": stored.bus,
        "report": report,
        "score": {"pibenchmarks": stored.score, "formula": stored.formula},
        "verdict": verdict,
        "verdict_version": stored.verdict_version,
    }))
    .into_response())
}

/// `DELETE /api/v1/results/{id}` with the submitter's delete token.
pub async fn delete_result<S: Storage>(
    State(app): State<Arc<App<S>>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let token = auth::bearer(&headers, "the delete token that the submission's 201 reply carried")?;
    match app.store.delete(id, auth::token_hash(&token)).await.map_err(ApiError::unavailable)? {
        Deleted::Deleted => Ok(Json(json!({"id": id, "deleted": true})).into_response()),
        Deleted::NotFound => {
            Err(ApiError::not_found(format!("results/{id}: no such result (never stored, or deleted)")))
        }
        Deleted::WrongToken => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Authorization: this is not the delete token of result {id}; use the one its 201 reply carried"),
        )),
    }
}

/// `POST /api/v1/results/{id}/flag|hide|restore` with the admin token;
/// flag and hide take `{"reason": "…"}`.
pub async fn moderate<S: Storage>(
    State(app): State<Arc<App<S>>>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let Some(admin) = &app.admin_token else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "moderation is off on this server; start it with STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN set to enable it",
        ));
    };
    let token = auth::bearer(&headers, "the admin token")?;
    if !auth::same_secret(admin, &token) {
        return Err(ApiError::new(StatusCode::FORBIDDEN, "Authorization: wrong admin token; nothing was changed"));
    }
    let id = parse_id(&id)?;
    let bytes = axum::body::to_bytes(body, 16 * 1024)
        .await
        .map_err(|_| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "body: at most 16 KiB; send {\"reason\": \"…\"}"))?;
    let reason = || -> Result<String, ApiError> {
        let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| {
            ApiError::bad_request(
                "reason: expected a body {\"reason\": \"why\"}; say why, it is shown beside the result",
            )
        })?;
        let reason = value.get("reason").and_then(|r| r.as_str()).unwrap_or("").trim().to_owned();
        if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "reason: expected 1 to 500 characters without control characters; say why, it is shown beside the result",
            ));
        }
        Ok(reason)
    };
    let action = match action.as_str() {
        "flag" => Moderation::Flag(reason()?),
        "hide" => Moderation::Hide(reason()?),
        "restore" => Moderation::Restore,
        other => {
            return Err(ApiError::not_found(format!(
                "results/{id}/{}: no such action; use flag, hide or restore",
                clip(other)
            )));
        }
    };
    match app.store.moderate(id, action).await.map_err(ApiError::unavailable)? {
        Some(receipt) => {
            Ok(Json(json!({"id": id, "status": receipt.status, "reasons": receipt.reasons})).into_response())
        }
        None => Err(ApiError::not_found(format!("results/{id}: no such result"))),
    }
}

/// Reads the leaderboard's query parameters (shared with the HTML page).
pub fn leaderboard_query(params: &HashMap<String, String>, max_limit: i64) -> Result<LeaderboardQuery, ApiError> {
    let text = |name: &str| -> Result<Option<String>, ApiError> {
        match params.get(name).map(|v| v.trim()) {
            None | Some("") => Ok(None),
            Some(v) if v.chars().count() > 256 || v.chars().any(char::is_control) => Err(ApiError::bad_request(
                format!("{name}: at most 256 characters without control characters; pick a value from the leaderboard"),
            )),
            Some(v) => Ok(Some(v.to_owned())),
        }
    };
    let mut query = LeaderboardQuery { limit: max_limit.min(500), ..LeaderboardQuery::default() };
    query.kind = text("kind")?;
    query.board = text("board")?;
    // LIKE's wildcards in a class filter would match more than the mark.
    query.class = text("class")?.map(|c| c.replace(['%', '_'], ""));
    query.bus = text("bus")?;
    if let Some(sort) = text("sort")? {
        query.sort = SortKey::parse(&sort).ok_or_else(|| {
            let names: Vec<&str> = SortKey::ALL.iter().map(|k| k.as_str()).collect();
            ApiError::bad_request(format!("sort: expected one of {}, got {:?}", names.join(", "), clip(&sort)))
        })?;
    }
    query.descending = match text("dir")?.as_deref() {
        None => query.sort.default_descending(),
        Some("desc") => true,
        Some("asc") => false,
        Some(_) => return Err(ApiError::bad_request("dir: expected asc or desc")),
    };
    if let Some(limit) = text("limit")? {
        query.limit =
            limit.parse::<i64>().ok().filter(|l| (1..=max_limit).contains(l)).ok_or_else(|| {
                ApiError::bad_request(format!("limit: expected a whole number from 1 to {max_limit}"))
            })?;
    }
    if let Some(offset) = text("offset")? {
        query.offset = offset
            .parse::<i64>()
            .ok()
            .filter(|o| *o >= 0)
            .ok_or_else(|| ApiError::bad_request("offset: expected a whole number, 0 or more"))?;
    }
    Ok(query)
}

/// `GET /api/v1/leaderboard?kind=&board=&class=&bus=&sort=&dir=&limit=&offset=`.
pub async fn leaderboard<S: Storage>(
    State(app): State<Arc<App<S>>>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = query.map_err(|e| ApiError::bad_request(format!("query: {e}; fix the URL's parameters")))?;
    let query = leaderboard_query(&params, 5000)?;
    let rows = app.store.leaderboard(query).await.map_err(ApiError::unavailable)?;
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).expect("a row serializes");
            value["url"] = json!(format!("/cards/{}", row.card_key));
            value
        })
        .collect();
    Ok(Json(json!({ "rows": rows })).into_response())
}
