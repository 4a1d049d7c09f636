//! Results: submit (`POST /api/v1/results`), read, delete with the
//! submitter's token, and moderate with the admin token.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Json;
use axum::body::Body;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::{base_url, clip, no_such_result, parse_id, unix_now};
use crate::error::ApiError;
use crate::intake::{self, Submission};
use crate::store::{Deleted, Moderation, Receipt, Status, Storage, Submitted, held_reason};
use crate::{App, auth, peer};

/// The largest body read (docs/leaderboard.md#status-codes); a report is a few KiB.
pub const MAX_BODY: usize = 256 * 1024;

/// The largest body accepted unless it is a `profile` report (whose curves
/// and sweep make it larger): a run's report is a few KiB.
pub const MAX_REPORT_BODY: usize = 64 * 1024;

/// The idempotency header and its bounds.
pub const IDEMPOTENCY_KEY: &str = "idempotency-key";

/// The window of a network's storage quota: a day.
pub const QUOTA_WINDOW: i64 = 86_400;

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
        if let Err(seconds) = limiter.take(app.networks.network_of(client), Instant::now()) {
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
    let wear = super::wear::is_wear_body(&bytes);
    if bytes.len() > MAX_REPORT_BODY && !is_profile_report(&bytes) && !wear {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "body: {} KiB, larger than the {} KiB a report may be (a profile report up to {} KiB); send one storage-score report, as `storage-score run --json` wrote it",
                bytes.len().div_ceil(1024),
                MAX_REPORT_BODY / 1024,
                MAX_BODY / 1024
            ),
        ));
    }
    let submitter = app.networks.submitter_id(app.store.submitter_salt(), client);
    if let Some(why) = app.store.banned(submitter.clone()).await.map_err(ApiError::unavailable)? {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "network: a moderator banned this network from submitting ({}); ask the server's operator",
                clip(&why)
            ),
        ));
    }
    let base = base_url(&headers);
    if wear {
        // An endurance or power-loss report: the same trust rules, its own checks.
        return super::wear::submit(&app, key, &bytes, submitter, &base).await;
    }
    let accepted = intake::accept(&bytes)?;
    let token = auth::new_token();
    let now = unix_now();
    let new = accepted.into_new(Submission {
        idempotency_key: key,
        body_hash: auth::hex(&Sha256::digest(&bytes)),
        delete_hash: auth::token_hash(&token),
        submitter,
        created_at: now,
    });
    within_quota(&app, &new.submitter, new.report_json.len(), now).await?;
    match app.store.submit(new).await.map_err(ApiError::unavailable)? {
        Submitted::Created(receipt) => Ok(created(&base, &receipt, Some(&token), false)),
        Submitted::Replayed(receipt) => Ok(created(&base, &receipt, None, true)),
        Submitted::KeyReused => Err(ApiError::unprocessable(
            "Idempotency-Key: this key was already used for a different report; make a new key for each report (reuse a key only to retry the same body)",
        )),
    }
}

/// Refuses (429 with `Retry-After`) a report of `len` bytes that would take
/// the network past its storage quota for the last 24 hours; run, endurance
/// and power-loss reports count alike.
pub(super) async fn within_quota<S: Storage>(
    app: &App<S>,
    submitter: &str,
    len: usize,
    now: i64,
) -> Result<(), ApiError> {
    if app.quota_bytes <= 0 {
        return Ok(());
    }
    let (stored, oldest) =
        app.store.stored_since(submitter.to_owned(), now - QUOTA_WINDOW).await.map_err(ApiError::unavailable)?;
    if stored + len as i64 <= app.quota_bytes {
        return Ok(());
    }
    let seconds = oldest.map_or(QUOTA_WINDOW, |t| t + QUOTA_WINDOW - now).clamp(1, QUOTA_WINDOW) as u64;
    let mut e = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        format!(
            "quota: this network stored {} KiB of reports in the last 24 hours, the most one network may; wait {seconds} s (Retry-After) and send again",
            stored / 1024
        ),
    );
    e.retry_after = Some(seconds);
    Err(e)
}

/// Whether a body is a `profile` report: its `profile` key holds the studies.
fn is_profile_report(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(bytes).is_ok_and(|v| v.get("profile").is_some_and(|p| p.is_object()))
}

/// The 201 answer. A replay carries no delete token: it is shown once, and
/// only its hash is kept.
fn created(base: &str, receipt: &Receipt, token: Option<&str>, replayed: bool) -> Response {
    let held = receipt.held;
    let mut body = json!({
        "id": receipt.id,
        "url": format!("{base}/results/{}", receipt.id),
        "status": receipt.status,
        "reasons": receipt.reasons,
        "held": held,
        "score": {"pibenchmarks": receipt.score, "formula": receipt.formula},
        "standing": receipt.standing,
    });
    if held {
        body["held_reason"] = json!(held_reason(receipt.score, None, None));
    }
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

/// Whether the request carries the admin token. A wrong token counts
/// against its network's few tries a minute; once they are spent, no token
/// from that network is even compared (429) until the next is due.
fn check_admin<S>(app: &App<S>, headers: &HeaderMap, client: IpAddr) -> Result<(), ApiError> {
    let Some(admin) = &app.admin_token else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "moderation is off on this server; start it with STORAGE_SCORE_LEADERBOARD_ADMIN_TOKEN set to enable it",
        ));
    };
    let network = app.networks.network_of(client);
    let throttled = |seconds: u64| {
        let mut e = ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            format!("Authorization: too many wrong admin tokens from this network; wait {seconds} s (Retry-After)"),
        );
        e.retry_after = Some(seconds);
        e
    };
    if let Some(seconds) = app.admin_failures.exhausted(network, Instant::now()) {
        return Err(throttled(seconds));
    }
    let token = auth::bearer(headers, "the admin token")?;
    if auth::same_secret(admin, &token) {
        return Ok(());
    }
    if let Err(seconds) = app.admin_failures.take(network, Instant::now()) {
        return Err(throttled(seconds));
    }
    Err(ApiError::new(StatusCode::FORBIDDEN, "Authorization: wrong admin token; nothing was changed"))
}

/// Whether the request carries the admin token (a read that shows hidden
/// results to a moderator; a wrong token counts as a failed try).
fn is_admin<S>(app: &App<S>, headers: &HeaderMap, client: IpAddr) -> bool {
    headers.contains_key(header::AUTHORIZATION) && check_admin(app, headers, client).is_ok()
}

/// `GET /api/v1/results/{id}`.
pub async fn get_result<S: Storage>(
    State(app): State<Arc<App<S>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = parse_id(&id)?;
    let client = peer::client_address(peer.ip(), &headers, &app.trusted_proxies);
    let Some(stored) = app.store.get(id).await.map_err(ApiError::unavailable)? else {
        // Not a run result: an endurance or power-loss one, or nothing.
        let admin = headers.contains_key(header::AUTHORIZATION) && is_admin(&app, &headers, client);
        return super::wear::get(&app, id, admin).await;
    };
    if stored.status == Status::Hidden && !is_admin(&app, &headers, client) {
        return Err(no_such_result(id));
    }
    let report: serde_json::Value = serde_json::from_str(&stored.report_json).unwrap_or_default();
    let verdict: serde_json::Value = serde_json::from_str(&stored.verdict_json).unwrap_or_default();
    let held = stored.held;
    Ok(Json(json!({
        "id": stored.id,
        "status": stored.status,
        "reasons": stored.reasons,
        "held": held,
        "held_reason": held.then(|| held_reason(stored.score, None, None)),
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
        Deleted::NotFound => super::wear::delete(&app, id, auth::token_hash(&token)).await,
        Deleted::WrongToken
            if app.store.get(id).await.map_err(ApiError::unavailable)?.is_none_or(|r| r.status == Status::Hidden) =>
        {
            // A wrong token on a hidden result: as if it were not there.
            Err(no_such_result(id))
        }
        Deleted::WrongToken => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Authorization: this is not the delete token of result {id}; use the one its 201 reply carried"),
        )),
    }
}

/// `POST /api/v1/results/{id}/flag|hide|accept|restore` with the admin
/// token; flag, hide and accept take `{"reason": "…"}`. Accept counts a
/// held result (its network's sample joins its row).
pub async fn moderate<S: Storage>(
    State(app): State<Arc<App<S>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    check_admin(&app, &headers, peer::client_address(peer.ip(), &headers, &app.trusted_proxies))?;
    let id = parse_id(&id)?;
    let bytes = read_small(body).await?;
    let reason = || moderator_reason(&bytes);
    let action = match action.as_str() {
        "flag" => Moderation::Flag(reason()?),
        "hide" => Moderation::Hide(reason()?),
        "accept" => Moderation::Accept(reason()?),
        "restore" => Moderation::Restore,
        other => {
            return Err(ApiError::not_found(format!(
                "results/{id}/{}: no such action; use flag, hide, accept or restore",
                clip(other)
            )));
        }
    };
    match app.store.moderate(id, action.clone()).await.map_err(ApiError::unavailable)? {
        Some(receipt) => {
            Ok(Json(json!({"id": id, "status": receipt.status, "reasons": receipt.reasons})).into_response())
        }
        None => super::wear::moderate(&app, id, action).await,
    }
}

/// A moderator's small JSON body, read within the body timeout.
async fn read_small(body: Body) -> Result<axum::body::Bytes, ApiError> {
    tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, 16 * 1024))
        .await
        .map_err(|_| ApiError::new(StatusCode::REQUEST_TIMEOUT, "body: not received in time; send it again"))?
        .map_err(|_| ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "body: at most 16 KiB; send {\"reason\": \"…\"}"))
}

/// The `reason` of a moderator's `{"reason": "…"}`.
fn moderator_reason(bytes: &[u8]) -> Result<String, ApiError> {
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|_| {
        ApiError::bad_request("reason: expected a body {\"reason\": \"why\"}; say why, it is shown beside the result")
    })?;
    let reason = value.get("reason").and_then(|r| r.as_str()).unwrap_or("").trim().to_owned();
    if reason.is_empty() || reason.chars().count() > 500 || reason.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "reason: expected 1 to 500 characters without control characters; say why, it is shown beside the result",
        ));
    }
    Ok(reason)
}

/// `POST /api/v1/results/{id}/network/flag|hide|accept|restore|ban|unban`
/// with the admin token: the same to every result of the network that
/// sent result `id`, in one request; `ban` also refuses that network's
/// submissions from now on (and hides what it sent), `unban` lifts that.
pub async fn moderate_network<S: Storage>(
    State(app): State<Arc<App<S>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path((id, action)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    check_admin(&app, &headers, peer::client_address(peer.ip(), &headers, &app.trusted_proxies))?;
    let id = parse_id(&id)?;
    let bytes = read_small(body).await?;
    let reason = || moderator_reason(&bytes);
    let (action, ban) = match action.as_str() {
        "flag" => (Some(Moderation::Flag(reason()?)), None),
        "hide" => (Some(Moderation::Hide(reason()?)), None),
        "accept" => (Some(Moderation::Accept(reason()?)), None),
        "restore" => (Some(Moderation::Restore), None),
        "ban" => {
            let why = reason()?;
            (Some(Moderation::Hide(format!("network banned: {why}"))), Some(Some(why)))
        }
        "unban" => (None, Some(None)),
        other => {
            return Err(ApiError::not_found(format!(
                "results/{id}/network/{}: no such action; use flag, hide, accept, restore, ban or unban",
                clip(other)
            )));
        }
    };
    let (network, ids) = match app.store.network_results(id).await.map_err(ApiError::unavailable)? {
        Some(found) => found,
        None => match app.store.wear_network(id).await.map_err(ApiError::unavailable)? {
            Some(network) => (network, Vec::new()),
            None => return Err(ApiError::not_found(format!("results/{id}: no such result"))),
        },
    };
    // Its endurance and power-loss results too.
    let wear = app.store.wear_of_network(network.clone()).await.map_err(ApiError::unavailable)?;
    if let Some(reason) = ban {
        app.store.ban(network.clone(), reason, unix_now()).await.map_err(ApiError::unavailable)?;
    }
    let mut changed = 0;
    if let Some(action) = action {
        for result in &ids {
            if app.store.moderate(*result, action.clone()).await.map_err(ApiError::unavailable)?.is_some() {
                changed += 1;
            }
        }
        for result in &wear {
            if app.store.wear_moderate(*result, action.clone()).await.map_err(ApiError::unavailable)?.is_some() {
                changed += 1;
            }
        }
    }
    Ok(Json(json!({"id": id, "network_results": ids.len() + wear.len(), "changed": changed, "banned": app.store.banned(network).await.map_err(ApiError::unavailable)?.is_some()})).into_response())
}
