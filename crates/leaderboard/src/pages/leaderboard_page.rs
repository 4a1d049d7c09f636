//! `/`: the leaderboard table, sortable by links in its header and
//! filterable by a plain GET form.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};
use storage_report::html::url_encode;

use super::{error_page, esc, layout};
use crate::App;
use crate::api::leaderboard_query;
use crate::error::ApiError;
use crate::store::{LeaderboardQuery, MIN_RANKED_SAMPLES, SortKey, Storage};

/// The class marks the filter offers (docs/score.md#the-sd-class-table).
const CLASSES: [&str; 13] =
    ["A1", "A2", "Class 2", "Class 4", "Class 6", "Class 10", "U1", "U3", "V6", "V10", "V30", "V60", "V90"];

/// The rows shown at most; the form narrows the rest.
const PAGE_ROWS: i64 = 500;

pub async fn leaderboard<S: Storage>(
    State(app): State<Arc<App<S>>>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let params = match query {
        Ok(Query(params)) => params,
        Err(e) => return error_page(ApiError::bad_request(format!("query: {e}"))),
    };
    let query = match leaderboard_query(&params, PAGE_ROWS) {
        Ok(q) => LeaderboardQuery { limit: PAGE_ROWS, ..q },
        Err(e) => return error_page(e),
    };
    let (rows, choices) = match tokio::join!(app.store.leaderboard(query.clone()), app.store.filter_choices()) {
        (Ok(rows), Ok(choices)) => (rows, choices),
        (Err(e), _) | (_, Err(e)) => return error_page(ApiError::unavailable(e)),
    };

    let mut body = String::new();
    body.push_str("<p class=\"muted\">Scores are PiBenchmarks-compatible and recomputed by this server. Each row is one card on one board and bus mode: median, p10–p90 and the number of results, never a mean. Rows with fewer than 3 results are listed without a rank.</p>");
    body.push_str("<form class=\"filters\" method=\"get\" action=\"/\">");
    select(&mut body, "kind", "Kind", &choices.kinds, query.kind.as_deref());
    select(&mut body, "board", "Board", &choices.boards, query.board.as_deref());
    let classes: Vec<String> = CLASSES.iter().map(|c| c.to_string()).collect();
    select(&mut body, "class", "Claimed class", &classes, query.class.as_deref());
    select(&mut body, "bus", "Bus mode", &choices.buses, query.bus.as_deref());
    let _ = write!(body, "<input type=\"hidden\" name=\"sort\" value=\"{}\">", query.sort.as_str());
    body.push_str("<button type=\"submit\">Filter</button> <a href=\"/\">clear</a></form>");

    let _ = write!(body, "<p class=\"muted\" id=\"row-count\">{} rows</p>", rows.len());
    body.push_str("<table id=\"leaderboard\"><thead><tr><th class=\"n\">Rank</th>");
    for (key, title, numeric) in [
        (SortKey::Card, "Card", false),
        (SortKey::Board, "Board", false),
        (SortKey::Median, "Median score", true),
        (SortKey::P10, "p10", true),
        (SortKey::P90, "p90", true),
        (SortKey::Samples, "Results", true),
        (SortKey::Latest, "Latest", true),
    ] {
        let dir = if query.sort == key { !query.descending } else { key.default_descending() };
        let arrow = match (query.sort == key, query.descending) {
            (true, true) => " ▼",
            (true, false) => " ▲",
            _ => "",
        };
        let href = sort_href(&query, key, dir);
        let class = if numeric { " class=\"n\"" } else { "" };
        let _ = write!(
            body,
            "<th{class}><a data-sort=\"{}\" href=\"{}\">{title}{arrow}</a></th>",
            key.as_str(),
            esc(&href)
        );
        if key == SortKey::Board {
            body.push_str("<th>Bus</th><th>Claimed class</th>");
        }
    }
    body.push_str("</tr></thead><tbody>");
    for row in &rows {
        let rank = match row.rank {
            Some(rank) => rank.to_string(),
            None => {
                format!("<span class=\"muted\" title=\"fewer than {MIN_RANKED_SAMPLES} results: not ranked\">–</span>")
            }
        };
        let _ = write!(
            body,
            "<tr data-card=\"{key}\" data-median=\"{median}\"><td class=\"n\">{rank}</td><td><a href=\"/cards/{key}\">{name}</a> <span class=\"muted\">{kind}</span></td><td>{board}</td><td>{bus}</td><td>{class}</td>\
             <td class=\"n\">{median}</td><td class=\"n\">{p10}</td><td class=\"n\">{p90}</td><td class=\"n\">{samples}</td><td class=\"n\">{latest}</td></tr>",
            key = esc(&row.card_key),
            name = esc(&row.card.display_name()),
            kind = esc(&row.card.kind),
            board = esc(&row.board),
            bus = esc(&row.bus),
            class = esc(row.card.class_label.as_deref().unwrap_or("")),
            median = row.median_score,
            p10 = row.p10_score,
            p90 = row.p90_score,
            samples = row.samples,
            latest = esc(&row.latest),
        );
    }
    body.push_str("</tbody></table>");
    if rows.is_empty() {
        body.push_str("<p>No public results match. Submit one with <code>storage-score run --submit URL</code>.</p>");
    }
    Html(layout("Leaderboard", &body)).into_response()
}

fn select(out: &mut String, name: &str, label: &str, options: &[String], current: Option<&str>) {
    let _ = write!(out, "<label>{label}<select name=\"{name}\"><option value=\"\">any</option>");
    let mut seen = false;
    for option in options {
        let selected = if current == Some(option.as_str()) {
            seen = true;
            " selected"
        } else {
            ""
        };
        let _ = write!(out, "<option value=\"{0}\"{selected}>{0}</option>", esc(option));
    }
    if let (Some(current), false) = (current, seen) {
        let _ = write!(out, "<option value=\"{0}\" selected>{0}</option>", esc(current));
    }
    out.push_str("</select></label>");
}

/// The link that sorts the current view by `key`.
fn sort_href(query: &LeaderboardQuery, key: SortKey, descending: bool) -> String {
    let mut href = format!("/?sort={}&dir={}", key.as_str(), if descending { "desc" } else { "asc" });
    for (name, value) in [("kind", &query.kind), ("board", &query.board), ("class", &query.class), ("bus", &query.bus)]
    {
        if let Some(value) = value {
            let _ = write!(href, "&{name}={}", url_encode(value));
        }
    }
    href
}
