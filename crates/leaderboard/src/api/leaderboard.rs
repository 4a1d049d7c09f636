//! `GET /api/v1/leaderboard`: the rows a search and filters leave, a page
//! at a time, with the true total and the links to the pages around it.
//! The HTML leaderboard reads its parameters the same way
//! ([`leaderboard_query`]).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use storage_report::html::url_encode;

use super::clip;
use crate::App;
use crate::board::filter_key;
use crate::error::ApiError;
use crate::store::{LeaderboardQuery, MAX_SEARCH_CHARS, MAX_SEARCH_WORDS, SortKey, Storage};

/// The most rows one request gets.
pub const MAX_LIMIT: i64 = 500;

/// Reads a leaderboard request's parameters: `q`, `kind`, `board` (a
/// family or a model), `class`, `bus`, `sort`, `dir`, `limit` (1 to
/// [`MAX_LIMIT`], `default_limit` when absent) and `offset`.
pub fn leaderboard_query(params: &HashMap<String, String>, default_limit: i64) -> Result<LeaderboardQuery, ApiError> {
    let text = |name: &str| -> Result<Option<String>, ApiError> {
        match params.get(name).map(|v| v.trim()) {
            None | Some("") => Ok(None),
            Some(v) if v.chars().count() > 256 || v.chars().any(char::is_control) => Err(ApiError::bad_request(
                format!("{name}: at most 256 characters without control characters; pick a value from the leaderboard"),
            )),
            Some(v) => Ok(Some(v.to_owned())),
        }
    };
    let mut query = LeaderboardQuery { limit: default_limit.clamp(1, MAX_LIMIT), ..LeaderboardQuery::default() };
    if let Some(q) = text("q")? {
        if q.chars().count() > MAX_SEARCH_CHARS {
            return Err(ApiError::bad_request(format!(
                "q: at most {MAX_SEARCH_CHARS} characters; search by maker, product name or the name on the label"
            )));
        }
        let words: Vec<String> = q.to_lowercase().split_whitespace().map(str::to_owned).collect();
        if words.len() > MAX_SEARCH_WORDS {
            return Err(ApiError::bad_request(format!(
                "q: at most {MAX_SEARCH_WORDS} words; e.g. \"sandisk extreme 64\""
            )));
        }
        query.words = words;
        query.q = Some(q);
    }
    query.kind = text("kind")?;
    query.board = text("board")?;
    query.board_key = query.board.as_deref().map(filter_key);
    // LIKE's wildcards in a class filter would match more than the mark.
    query.class = text("class")?.map(|c| c.replace(['%', '_'], ""));
    query.bus = text("bus")?;
    if let Some(sort) = text("sort")? {
        query.sort = SortKey::parse(&sort).ok_or_else(|| {
            let names: Vec<&str> = SortKey::all().map(|k| k.as_str()).collect();
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
            limit.parse::<i64>().ok().filter(|l| (1..=MAX_LIMIT).contains(l)).ok_or_else(|| {
                ApiError::bad_request(format!("limit: expected a whole number from 1 to {MAX_LIMIT}"))
            })?;
    }
    if let Some(offset) = text("offset")? {
        query.offset = offset
            .parse::<i64>()
            .ok()
            .filter(|o| (0..=1_000_000_000).contains(o))
            .ok_or_else(|| ApiError::bad_request("offset: expected a whole number, 0 or more"))?;
    }
    Ok(query)
}

/// The query string of `query` with another sort and offset: the search,
/// filters and page size stay.
pub fn query_string(query: &LeaderboardQuery, sort: SortKey, descending: bool, offset: i64) -> String {
    let mut text = format!("sort={}&dir={}", sort.as_str(), if descending { "desc" } else { "asc" });
    for (name, value) in
        [("q", &query.q), ("kind", &query.kind), ("board", &query.board), ("class", &query.class), ("bus", &query.bus)]
    {
        if let Some(value) = value {
            let _ = write!(text, "&{name}={}", url_encode(value));
        }
    }
    if query.limit != LeaderboardQuery::default().limit {
        let _ = write!(text, "&limit={}", query.limit);
    }
    if offset > 0 {
        let _ = write!(text, "&offset={offset}");
    }
    text
}

/// `GET /api/v1/leaderboard?q=&kind=&board=&class=&bus=&sort=&dir=&limit=&offset=`.
pub async fn leaderboard<S: Storage>(
    State(app): State<Arc<App<S>>>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(params) = query.map_err(|e| ApiError::bad_request(format!("query: {e}; fix the URL's parameters")))?;
    let query = leaderboard_query(&params, LeaderboardQuery::default().limit)?;
    let page = app.store.leaderboard(query.clone()).await.map_err(ApiError::unavailable)?;
    let rows: Vec<serde_json::Value> = page
        .rows
        .iter()
        .map(|row| {
            let mut value = serde_json::to_value(row).unwrap_or_default();
            value["url"] = json!(format!("/cards/{}", row.card_key));
            value
        })
        .collect();
    let link =
        |offset: i64| format!("/api/v1/leaderboard?{}", query_string(&query, query.sort, query.descending, offset));
    let next = (query.offset + query.limit < page.total).then(|| link(query.offset + query.limit));
    let previous = (query.offset > 0).then(|| link((query.offset - query.limit).max(0)));
    Ok(Json(json!({
        "total": page.total,
        "offset": query.offset,
        "limit": query.limit,
        "rows": rows,
        "next": next,
        "previous": previous,
    }))
    .into_response())
}
