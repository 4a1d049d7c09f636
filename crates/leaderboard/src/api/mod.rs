//! The JSON API of docs/leaderboard.md: results (submit, read, delete,
//! moderate: [`results`]) and the leaderboard ([`leaderboard`]), with the
//! helpers both use; endurance and power-loss results ([`wear`]) go through
//! the same routes.

mod leaderboard;
mod results;
pub mod wear;

use axum::http::{HeaderMap, header};

pub use leaderboard::{MAX_LIMIT, leaderboard, leaderboard_query, query_string};
pub use results::{
    BODY_TIMEOUT, IDEMPOTENCY_KEY, MAX_BODY, delete_result, get_result, moderate, moderate_network, submit,
};

use crate::error::ApiError;

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

pub use crate::clock::unix_now;

/// A result id from the path: 404 for anything that cannot be one.
pub fn parse_id(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        ApiError::not_found(format!("results/{}: no such result; ids are positive whole numbers", clip(text)))
    })
}

/// The 404 of a result that is not there, or hidden from this client: the
/// two answer alike, so that nobody without the admin token can tell a
/// hidden result from a missing one.
pub fn no_such_result(id: i64) -> ApiError {
    ApiError::not_found(format!("results/{id}: no such result (never stored, or deleted)"))
}

/// Text from a request cut short and made printable, for an error message.
pub fn clip(text: &str) -> String {
    text.chars().take(40).filter(|c| !c.is_control()).collect()
}
