//! `/`: find a card and read how it does. A search box (maker, product
//! name, the name on the label), filters in a plain GET form (kind, board
//! family or model, claimed class, bus mode), a table sortable by its
//! header links (the median score or any of the four figures people pick
//! cards by), the true number of rows and links to the pages around.
//!
//! On a phone the columns one can do without are dropped (`.wide`), so
//! that the rank, the card and its median score are on the first screen.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};

use super::{error_page, esc, figure_text, layout};
use crate::App;
use crate::api::{leaderboard_query, query_string};
use crate::error::ApiError;
use crate::store::{FilterChoices, LeaderboardQuery, MIN_RANKED_SUBMITTERS, Page, SortKey, Storage};

/// The class marks the filter offers (docs/score.md#the-sd-class-table).
const CLASSES: [&str; 13] =
    ["A1", "A2", "Class 2", "Class 4", "Class 6", "Class 10", "U1", "U3", "V6", "V10", "V30", "V60", "V90"];

/// Rows on a page unless `limit` says otherwise.
const PAGE_ROWS: i64 = 100;

/// The sortable columns after the card: key, title (its first word shown
/// only on wide screens), unit, shown on a phone.
const COLUMNS: [(SortKey, &str, &str, bool); 8] = [
    (SortKey::Score, "Median|score", "", true),
    (SortKey::RandWrite, "Random|write", "IOPS", true),
    (SortKey::RandRead, "Random read", "IOPS", false),
    (SortKey::SeqWrite, "Seq. write", "MB/s", false),
    (SortKey::SeqRead, "Seq. read", "MiB/s", false),
    (SortKey::Submitters, "Submitters", "", false),
    (SortKey::Samples, "Results", "", false),
    (SortKey::Latest, "Latest", "", false),
];

pub async fn leaderboard<S: Storage>(
    State(app): State<Arc<App<S>>>,
    query: Result<Query<HashMap<String, String>>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let params = match query {
        Ok(Query(params)) => params,
        Err(e) => return error_page(ApiError::bad_request(format!("query: {e}"))),
    };
    let query = match leaderboard_query(&params, PAGE_ROWS) {
        Ok(q) => q,
        Err(e) => return error_page(e),
    };
    let (page, choices) = match tokio::join!(app.store.leaderboard(query.clone()), app.store.filter_choices()) {
        (Ok(page), Ok(choices)) => (page, choices),
        (Err(e), _) | (_, Err(e)) => return error_page(ApiError::unavailable(e)),
    };
    let mut body = String::new();
    search_form(&mut body, &query, &choices);
    pager(&mut body, &query, &page, "pager-top");
    table(&mut body, &query, &page);
    if page.rows.is_empty() {
        body.push_str(
            "<p>No public results match. Try fewer words or filters, or submit one with \
             <code>storage-score run --submit URL</code>.</p>",
        );
    } else {
        pager(&mut body, &query, &page, "pager-bottom");
    }
    let _ = write!(
        body,
        "<p class=\"muted\">Scores are PiBenchmarks-compatible and recomputed by this server. Each row is one card on \
         one board and bus mode; its figures are medians over submitters (one sample per network, however many \
         results it sent), never means. Rows with fewer than {MIN_RANKED_SUBMITTERS} submitters are listed after the \
         ranked ones, without a rank. <a href=\"/about\">How it works.</a></p>"
    );
    let published: Vec<_> = app.reference.iter().collect();
    super::published::section(&mut body, &published, "shipped with storage-score");
    Html(layout("Leaderboard", &body)).into_response()
}

fn search_form(out: &mut String, query: &LeaderboardQuery, choices: &FilterChoices) {
    out.push_str("<form class=\"search\" method=\"get\" action=\"/\" role=\"search\">");
    let _ = write!(
        out,
        "<input type=\"search\" name=\"q\" value=\"{}\" placeholder=\"Find a card: maker, model or the name on its label\" aria-label=\"Search\">",
        esc(query.q.as_deref().unwrap_or(""))
    );
    let _ = write!(out, "<input type=\"hidden\" name=\"sort\" value=\"{}\">", query.sort.as_str());
    out.push_str("<button type=\"submit\">Search</button></form>");
    let filtering = query.kind.is_some() || query.board.is_some() || query.class.is_some() || query.bus.is_some();
    let _ = write!(
        out,
        "<details class=\"filters\"{}><summary>Filters: board, class, kind, bus</summary>\
         <form method=\"get\" action=\"/\"><div class=\"fields\">",
        if filtering { " open" } else { "" }
    );
    if let Some(q) = &query.q {
        let _ = write!(out, "<input type=\"hidden\" name=\"q\" value=\"{}\">", esc(q));
    }
    board_select(out, &choices.boards, query.board.as_deref());
    let classes: Vec<String> = CLASSES.iter().map(|c| c.to_string()).collect();
    select(out, "class", "Claimed class", &classes, query.class.as_deref());
    select(out, "kind", "Kind", &choices.kinds, query.kind.as_deref());
    select(out, "bus", "Bus mode", &choices.buses, query.bus.as_deref());
    let _ = write!(out, "<input type=\"hidden\" name=\"sort\" value=\"{}\">", query.sort.as_str());
    out.push_str("<button type=\"submit\">Filter</button> <a href=\"/\">clear</a></div></form></details>");
}

/// "1–100 of 1996" and the links to the pages before and after.
fn pager(out: &mut String, query: &LeaderboardQuery, page: &Page, id: &str) {
    let first = if page.rows.is_empty() { 0 } else { query.offset + 1 };
    let last = query.offset + page.rows.len() as i64;
    let _ = write!(
        out,
        "<div class=\"pager\" id=\"{id}\"><span class=\"count\">{first}–{last} of <strong>{}</strong> rows</span>",
        page.total
    );
    if query.offset > 0 {
        let to = (query.offset - query.limit).max(0);
        let _ = write!(
            out,
            "<a rel=\"prev\" href=\"/?{}\">← previous {}</a>",
            esc(&query_string(query, query.sort, query.descending, to)),
            query.limit.min(query.offset)
        );
    }
    if last < page.total {
        let _ = write!(
            out,
            "<a rel=\"next\" href=\"/?{}\">next {} →</a>",
            esc(&query_string(query, query.sort, query.descending, last)),
            query.limit.min(page.total - last)
        );
    }
    out.push_str("</div>");
}

fn table(out: &mut String, query: &LeaderboardQuery, page: &Page) {
    out.push_str("<div class=\"scroll\"><table id=\"leaderboard\"><thead><tr><th class=\"n\">#</th>");
    header_link(out, query, SortKey::Card, "Card", "", false, true);
    for (key, title, unit, narrow) in COLUMNS {
        header_link(out, query, key, title, unit, true, narrow);
    }
    out.push_str("<th class=\"n wide\">p10–p90</th></tr></thead><tbody>");
    for row in &page.rows {
        let rank = match row.rank {
            Some(rank) => rank.to_string(),
            None => format!(
                "<span class=\"muted\" title=\"fewer than {MIN_RANKED_SUBMITTERS} submitters: not ranked\">–</span>"
            ),
        };
        let cid_name = row.card.display_name();
        let also = if row.label.is_some() { format!("{} · ", esc(&cid_name)) } else { String::new() };
        let class = row.card.class_label.as_deref().map(|c| format!(" · {}", esc(c))).unwrap_or_default();
        let f = &row.median_figures;
        let _ = write!(
            out,
            "<tr data-card=\"{key}\" data-median=\"{median}\"><td class=\"n\">{rank}</td>\
             <td><a href=\"/cards/{key}\">{name}</a><span class=\"sub\">{also}{board} · {bus}{class}</span></td>\
             <td class=\"n score\">{median}</td><td class=\"n\">{rw}</td><td class=\"n wide\">{rr}</td>\
             <td class=\"n wide\">{sw}</td><td class=\"n wide\">{sr}</td><td class=\"n wide\">{submitters}</td>\
             <td class=\"n wide\">{samples}</td><td class=\"n wide\">{latest}</td>\
             <td class=\"n wide\">{p10}–{p90}</td></tr>",
            key = esc(&row.card_key),
            name = esc(&row.name),
            board = esc(&row.board),
            bus = esc(&row.bus),
            median = row.median_score,
            rw = figure_text(f.rand_write_4k_qd64_iops),
            rr = figure_text(f.rand_read_4k_qd64_iops),
            sw = figure_text(f.seq_write_mb_s),
            sr = figure_text(f.seq_read_mib_s),
            submitters = row.submitters,
            samples = row.samples,
            latest = esc(&row.latest),
            p10 = row.p10_score,
            p90 = row.p90_score,
        );
    }
    out.push_str("</tbody></table></div>");
}

/// A column's title as the link that sorts by it (again: the other way).
fn header_link(
    out: &mut String,
    query: &LeaderboardQuery,
    key: SortKey,
    title: &str,
    unit: &str,
    numeric: bool,
    narrow: bool,
) {
    let dir = if query.sort == key { !query.descending } else { key.default_descending() };
    let arrow = match (query.sort == key, query.descending) {
        (true, true) => " ▼",
        (true, false) => " ▲",
        _ => "",
    };
    let classes = [numeric.then_some("n"), (!narrow).then_some("wide")].into_iter().flatten().collect::<Vec<_>>();
    let class = if classes.is_empty() { String::new() } else { format!(" class=\"{}\"", classes.join(" ")) };
    let unit = if unit.is_empty() { String::new() } else { format!("<span class=\"sub\">{unit}</span>") };
    // "Median|score": "Median score" on a wide screen, "score" on a phone.
    let title = match title.split_once('|') {
        Some((wide, rest)) => format!("<span class=\"wide\">{wide} </span>{rest}"),
        None => title.to_owned(),
    };
    let _ = write!(
        out,
        "<th{class}><a data-sort=\"{}\" href=\"/?{}\">{title}{arrow}</a>{unit}</th>",
        key.as_str(),
        esc(&query_string(query, key, dir, 0))
    );
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

/// Families first, each with its models.
fn board_select(out: &mut String, boards: &[(String, Vec<String>)], current: Option<&str>) {
    out.push_str("<label>Board<select name=\"board\"><option value=\"\">any</option>");
    let mut seen = false;
    let mut option = |out: &mut String, value: &str, text: &str| {
        let selected = current.is_some_and(|c| c.eq_ignore_ascii_case(value));
        seen |= selected;
        let _ = write!(
            out,
            "<option value=\"{}\"{}>{}</option>",
            esc(value),
            if selected { " selected" } else { "" },
            esc(text)
        );
    };
    for (family, models) in boards {
        let _ = write!(out, "<optgroup label=\"{}\">", esc(family));
        let all =
            if models.len() > 1 || models.first() != Some(family) { format!("{family} (all)") } else { family.clone() };
        option(out, family, &all);
        for model in models.iter().filter(|m| *m != family) {
            option(out, model, model);
        }
        out.push_str("</optgroup>");
    }
    if let (Some(current), false) = (current, seen) {
        let _ = write!(out, "<option value=\"{0}\" selected>{0}</option>", esc(current));
    }
    out.push_str("</select></label>");
}
