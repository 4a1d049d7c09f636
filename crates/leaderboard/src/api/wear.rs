//! Endurance and power-loss results through the API
//! (docs/leaderboard.md#endurance-and-power-loss-results): `POST
//! /api/v1/results` hands a body whose `schema` names one of them here,
//! after the rate limit, the key, the body limits and the ban, as for a
//! run's report; `GET`, `DELETE` and moderation of `/api/v1/results/{id}`
//! fall back here for an id that is not a run result's; and `GET
//! /api/v1/cards/{key}/wear` lists a card's.
//!
//! What a body must pass: the one validator (`storage_scoring::input::wear`:
//! 400 for what is malformed, 422 for numbers that cannot be or contradict
//! each other), the card's names as a run's (`identity::settle`), a named
//! card, at most 4 KiB of notes; then the privacy filter strips it as it
//! strips a run's report. The server keeps no number of the client's that
//! it does not check: the card page's figures are recomputed from the
//! passes and cycles.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use storage_scoring::privacy::Redaction;
use storage_scoring::schema::Report;
use storage_scoring::wear::{EnduranceSummary, PowerLossSummary, WearReport};

use super::{clip, no_such_result};
use crate::card::Card;
use crate::error::ApiError;
use crate::intake::{MAX_NOTES_BYTES, refusal};
use crate::store::wear::{NewWear, StoredWear, WearReceipt, WearSubmitted};
use crate::store::{Deleted, Moderation, Status, Storage, datetime_of};
use crate::{App, auth, identity};

/// Whether a body names an endurance or a power-loss schema (it is then
/// taken up to the whole body limit: a long run has many passes).
pub fn is_wear_body(bytes: &[u8]) -> bool {
    serde_json::from_slice::<Value>(bytes).is_ok_and(|v| storage_scoring::input::wear_schema(&v).is_some())
}

/// A wear report that passed, ready to store.
#[derive(Debug, Clone)]
pub struct AcceptedWear {
    pub report: WearReport,
    pub card: Card,
    pub report_json: String,
    pub content_hash: String,
    pub summary: Value,
}

/// The summary a card page shows of a report.
pub fn summary_of(report: &WearReport) -> Value {
    match report {
        WearReport::Endurance(r) => json!(EnduranceSummary::of(r)),
        WearReport::PowerLoss(r) => json!(PowerLossSummary::of(r)),
    }
}

/// Checks a submitted endurance or power-loss body and prepares it.
pub fn accept(body: &[u8]) -> Result<AcceptedWear, ApiError> {
    let mut report = storage_scoring::input::parse_wear(body).map_err(|e| refusal(&e))?;
    let notes: usize = match &report {
        WearReport::Endurance(r) => r.notes.iter().map(String::len).sum(),
        WearReport::PowerLoss(_) => 0,
    };
    if notes > MAX_NOTES_BYTES {
        return Err(ApiError::unprocessable(format!(
            "notes: {notes} bytes in all, at most {MAX_NOTES_BYTES} are accepted; send the report as storage-score wrote it"
        )));
    }
    // The card's names pass the run report's rules, said of `identity`.
    let mut shell = Report { device: report.identity_mut().take(), ..Report::default() };
    identity::settle(&mut shell).map_err(|mut e| {
        if let Some(rest) = e.message.strip_prefix("device") {
            e.message = format!("identity{rest}");
        }
        e
    })?;
    *report.identity_mut() = shell.device;
    let card = Card::of(report.identity());
    if !card.is_named() {
        return Err(ApiError::unprocessable(
            "identity: names no card (no product name, no OEM ID or model), so the result cannot join a card's page; make the report again on the card itself",
        ));
    }
    let report = report.redact(&Redaction::server()).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    let report_json = report.to_json().map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    let content_hash = auth::hex(&Sha256::digest(report_json.as_bytes()));
    let summary = summary_of(&report);
    Ok(AcceptedWear { report, card, report_json, content_hash, summary })
}

/// The part of `POST /api/v1/results` after the checks every body passes:
/// validate, keep under the network's quota, store, answer 201.
pub async fn submit<S: Storage>(
    app: &App<S>,
    key: String,
    bytes: &[u8],
    submitter: String,
    base: &str,
) -> Result<Response, ApiError> {
    let accepted = accept(bytes)?;
    let token = auth::new_token();
    let now = super::unix_now();
    super::results::within_quota(app, &submitter, accepted.report_json.len(), now).await?;
    let new = NewWear {
        idempotency_key: key,
        body_hash: auth::hex(&Sha256::digest(bytes)),
        content_hash: accepted.content_hash.clone(),
        delete_hash: auth::token_hash(&token),
        submitter,
        created_at: now,
        card_key: accepted.card.key(),
        card: accepted.card.clone(),
        schema: accepted.report.schema().to_owned(),
        report_json: accepted.report_json.clone(),
        summary_json: accepted.summary.to_string(),
    };
    let (card_key, schema) = (new.card_key.clone(), new.schema.clone());
    let answer = |receipt: &WearReceipt, token: Option<&str>, replayed: bool| {
        let mut body = json!({
            "id": receipt.id,
            "url": format!("{base}/results/{}", receipt.id),
            "status": receipt.status,
            "reasons": receipt.reasons,
            "schema": schema,
            "card_key": card_key,
            "card_url": format!("{base}/cards/{card_key}"),
            "summary": accepted.summary,
        });
        if let Some(token) = token {
            body["delete_token"] = json!(token);
        }
        let mut response = (StatusCode::CREATED, Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&format!("/api/v1/results/{}", receipt.id)) {
            response.headers_mut().insert(header::LOCATION, value);
        }
        if replayed {
            response.headers_mut().insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        response
    };
    match app.store.wear_submit(new).await.map_err(ApiError::unavailable)? {
        WearSubmitted::Created(receipt) => Ok(answer(&receipt, Some(&token), false)),
        WearSubmitted::Replayed(receipt) => Ok(answer(&receipt, None, true)),
        WearSubmitted::KeyReused => Err(ApiError::unprocessable(
            "Idempotency-Key: this key was already used for a different report; make a new key for each report (reuse a key only to retry the same body)",
        )),
    }
}

/// `GET /api/v1/results/{id}` of a wear result (`None`: no such one, or
/// hidden from this client; the caller answers 404).
pub fn result_json(stored: &StoredWear) -> Value {
    json!({
        "id": stored.id,
        "status": stored.status,
        "reasons": stored.reasons,
        "schema": stored.schema,
        "created_at": datetime_of(stored.created_at),
        "card_key": stored.card_key,
        "name": stored.card.display_name(),
        "summary": serde_json::from_str::<Value>(&stored.summary_json).unwrap_or_default(),
        "report": serde_json::from_str::<Value>(&stored.report_json).unwrap_or_default(),
    })
}

/// The wear result `id` as `GET /api/v1/results/{id}` answers it.
pub async fn get<S: Storage>(app: &App<S>, id: i64, admin: bool) -> Result<Response, ApiError> {
    match app.store.wear_get(id).await.map_err(ApiError::unavailable)? {
        Some(stored) if stored.status != Status::Hidden || admin => Ok(Json(result_json(&stored)).into_response()),
        _ => Err(no_such_result(id)),
    }
}

/// `DELETE /api/v1/results/{id}` of a wear result.
pub async fn delete<S: Storage>(app: &App<S>, id: i64, delete_hash: String) -> Result<Response, ApiError> {
    match app.store.wear_delete(id, delete_hash).await.map_err(ApiError::unavailable)? {
        Deleted::Deleted => Ok(Json(json!({"id": id, "deleted": true})).into_response()),
        Deleted::NotFound => Err(no_such_result(id)),
        Deleted::WrongToken
            if app
                .store
                .wear_get(id)
                .await
                .map_err(ApiError::unavailable)?
                .is_none_or(|r| r.status == Status::Hidden) =>
        {
            Err(no_such_result(id))
        }
        Deleted::WrongToken => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!("Authorization: this is not the delete token of result {id}; use the one its 201 reply carried"),
        )),
    }
}

/// A moderator's action on a wear result.
pub async fn moderate<S: Storage>(app: &App<S>, id: i64, action: Moderation) -> Result<Response, ApiError> {
    match app.store.wear_moderate(id, action).await.map_err(ApiError::unavailable)? {
        Some(r) => Ok(Json(json!({"id": id, "status": r.status, "reasons": r.reasons})).into_response()),
        None => Err(ApiError::not_found(format!("results/{id}: no such result"))),
    }
}

/// `GET /api/v1/cards/{key}/wear`: the card's endurance and power-loss
/// results, the newest of each network, with their summaries.
pub async fn card<S: Storage>(
    State(app): State<Arc<App<S>>>,
    Path(key): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if key.len() != 16 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::not_found(format!("cards/{}: no such card; card keys are 16 hex digits", clip(&key))));
    }
    let wear = app.store.wear_card(key.clone()).await.map_err(ApiError::unavailable)?;
    let Some(card) = wear.card.clone() else {
        return Err(ApiError::not_found(format!("cards/{key}: no endurance or power-loss results for this card")));
    };
    let base = super::base_url(&headers);
    let list = |schema: &str| -> Vec<Value> {
        wear.of_schema(schema)
            .map(|e| {
                json!({
                    "id": e.id,
                    "url": format!("{base}/results/{}", e.id),
                    "created_at": datetime_of(e.created_at),
                    "status": e.status,
                    "reasons": e.reasons,
                    "more_from_network": e.more,
                    "summary": e.summary,
                })
            })
            .collect()
    };
    Ok(Json(json!({
        "card_key": key,
        "name": card.display_name(),
        "card": card,
        "endurance": list(storage_scoring::endurance::SCHEMA),
        "power_loss": list(storage_scoring::power_loss::SCHEMA),
    }))
    .into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENDURANCE: &str = include_str!("../../../../tests/fixtures/leaderboard/endurance.json");
    const POWER_LOSS: &str = include_str!("../../../../tests/fixtures/leaderboard/power-loss.json");

    #[test]
    fn the_runs_reports_are_taken_without_their_serials() {
        for body in [ENDURANCE, POWER_LOSS] {
            let accepted = accept(body.as_bytes()).expect("a real run's report");
            assert_eq!(accepted.card.product_name, "SD64G");
            assert!(!accepted.report_json.contains("1217398282"), "the PSN stays out");
            assert!(!accepted.report_json.contains("backing_file"), "so does the fingerprint");
            assert_eq!(accepted.card.key(), Card::of(accepted.report.identity()).key());
        }
    }

    /// The intake over any change to a real report: never a panic, 400 or
    /// 422 in one line, and what it takes keeps no serial.
    #[test]
    fn mutated_bodies_never_panic() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..4000 {
            let mut bytes = [ENDURANCE, POWER_LOSS][round % 2].as_bytes().to_vec();
            for _ in 0..1 + next() % 3 {
                let at = (next() as usize) % bytes.len();
                match next() % 3 {
                    0 => bytes[at] = b"-019e.\"{}[],:x"[(next() % 14) as usize],
                    1 => drop(bytes.remove(at)),
                    _ => bytes.insert(at, b'9'),
                }
            }
            match accept(&bytes) {
                Ok(accepted) => assert!(!accepted.report_json.contains("1217398282")),
                Err(e) => {
                    assert!(matches!(e.status.as_u16(), 400 | 422), "{}: {}", e.status, e.message);
                    assert!(!e.message.is_empty() && !e.message.contains('\n'), "{:?}", e.message);
                }
            }
        }
    }
}
