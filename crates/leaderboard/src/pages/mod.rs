//! Server-rendered HTML pages that work without JavaScript (docs/leaderboard.md#pages):
//! the leaderboard (`/`), a card (`/cards/{key}`) and a result
//! (`/results/{id}`). Every string that came from a report or a visitor
//! goes through [`esc`] (storage-report's escaping) before it is written.

mod card_page;
mod health;
mod leaderboard_page;
mod result_page;

pub use card_page::card;
pub use leaderboard_page::leaderboard;
pub use result_page::result;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use storage_report::html::escape;

use crate::error::ApiError;

/// Escapes text for HTML.
pub fn esc(text: &str) -> String {
    escape(text)
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1200px;padding:0 1rem 2rem;color:#222}
header{display:flex;gap:1.5rem;align-items:baseline;border-bottom:1px solid #ccc;margin-bottom:1rem}
header a{color:#0b5394;text-decoration:none}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}
th,td{padding:.3rem .5rem;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
th a{color:inherit}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.flag{color:#a33}.pass{color:#17702d}.fail{color:#a33}.unknown{color:#876}
form.filters{display:flex;flex-wrap:wrap;gap:.75rem;align-items:end;margin:.5rem 0}
form.filters label{display:flex;flex-direction:column;font-size:.85rem}
.muted{color:#666;font-size:.9rem}
svg{max-width:100%;height:auto}
";

/// A whole page around `body`.
pub fn layout(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · storage-score leaderboard</title><style>{STYLE}</style></head><body>\
         <header><h1><a href=\"/\">storage-score leaderboard</a></h1>\
         <a href=\"/export.csv\">export CSV</a><a href=\"/export.json\">export JSON</a></header>\n{body}\n</body></html>\n",
        esc(title)
    )
}

/// An HTML error page with the API error's status and message.
pub fn error_page(e: ApiError) -> Response {
    let body = format!(
        "<h2>{}</h2><p>{}</p><p><a href=\"/\">back to the leaderboard</a></p>",
        e.status.as_u16(),
        esc(&e.message)
    );
    (e.status, Html(layout(&e.status.to_string(), &body))).into_response()
}

/// Anything else: 404, as JSON under `/api/`, as a page elsewhere.
pub async fn not_found(uri: axum::http::Uri) -> Response {
    let e = ApiError::not_found(format!("{}: no such page or endpoint; see the leaderboard at /", clip(uri.path())));
    if uri.path().starts_with("/api/") { e.into_response() } else { error_page(e) }
}

fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

/// A score, or a dash.
pub fn score_text(score: Option<i64>) -> String {
    score.map_or("–".to_owned(), |s| s.to_string())
}

pub fn not_found_status() -> StatusCode {
    StatusCode::NOT_FOUND
}
