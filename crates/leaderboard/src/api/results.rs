//! Results: submit (`POST /api/v1/results`), read, delete with the
//! submitter's token, and moderate with the admin token.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{base_url, clip, parse_id, unix_now};
use crate::error::ApiError;
use crate::intake::{self, Submission};
use crate::store::{Deleted, Moderation, Receipt, Status, Storage, Submitted};
use crate::{App, auth, peer};

/// The largest body accepted (docs/leaderboard.md#status-codes); a report is a few KiB.
pub const MAX_BODY: usize = 256 * 1024;

/// The idempotency header and its bounds.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// How long a client has to send a whole body; a stalled upload is
/// answered 408 and its connection closed.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// `POST /api/v1/results`.
pub async fn submit<S: Storage>(
    State(app): State<Arc<App<S>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let client = peer::client_address(peer.ip(), &headers, &app.trusted_proxies);
    if let Some(limiter) = &app.limiter {
        if let Err(seconds) = limiter.take(peer::network_of(client), Instant::now()) {
            let mut e = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                format!("too many submissions from this network; wait {seconds} s (Retry-After) and send again"),
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
    let read = tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY)).await.map_err(|_| {
        ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!("body: not received within {} s; send the report again", BODY_TIMEOUT.as_secs()),
        )
    })?;
    let bytes = read.map_err(|e| {
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
    let new = accepted.into_new(Submission {
        idempotency_key: key,
        body_hash: auth::hex(&Sha256::digest(&bytes)),
        delete_hash: auth::token_hash(&token),
        submitter: peer::submitter_id(app.store.submitter_salt(), client),
        created_at: unix_now(),
    });
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
        "standing": receipt.standing,
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
        "name": stored.card.display_name(),
        "label": stored.label,
        "board": stored.board,
        "board_revision": stored.board_revision,
        "family": stored.family,
        "bus": stored.bus,
        "standing": stored.standing,
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
    let bytes = tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, 16 * 1024))
        .await
        .map_err(|_| ApiError::new(StatusCode::REQUEST_TIMEOUT, "body: not received in time; send it again"))?
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
