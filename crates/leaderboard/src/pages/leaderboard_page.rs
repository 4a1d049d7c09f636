//! `/`: find a card and read how it does. A search box (maker, product
//! name, the name on the label), filters in a plain GET form (kind, board
//! family or model, claimed class, bus mode), a table sortable by its
//! header links (the median score or any of the figures people pick
//! cards by), the true number of rows and links to the pages around.
//!
//! On a phone the columns one can do without are dropped (`.wide`), so
//! that the rank, the card and its median score are on the first screen.

use std::collections::HashMap;
use std::sync::Arc;
use storage_scoring::figure::BOARD;

use axum::extract::{Query, State};
use axum::response::Response;
use maud::{Markup, html};

use super::{error_page, figure_class, figure_text, layout};
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
/// only on wide screens), unit, shown on a phone. The figures' come from
/// their table, the first of them shown on a phone too.
fn columns() -> Vec<(SortKey, &'static str, &'static str, bool)> {
    let figures =
        BOARD.iter().filter_map(|&f| f.board().map(|b| (SortKey::Figure(f), b.title, f.unit().symbol(), b.place == 1)));
    let mut columns = vec![(SortKey::Score, "Median|score", "", true)];
    columns.extend(figures);
    columns.extend([
        (SortKey::Submitters, "Submitters", "", false),
        (SortKey::Samples, "Results", "", false),
        (SortKey::Latest, "Latest", "", false),
    ]);
    columns
}

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
    let published: Vec<_> = app.reference.iter().collect();
    let body = html! {
        (search_form(&query, &choices))
        (pager(&query, &page, "pager-top"))
        (table(&query, &page))
        @if page.rows.is_empty() {
            p {
                "No public results match. Try fewer words or filters, or submit one with "
                code { "storage-score run --submit URL" } "."
            }
        } @else {
            (pager(&query, &page, "pager-bottom"))
        }
        p.muted {
            "Scores are PiBenchmarks-compatible and recomputed by this server. Each row is one card on \
             one board and bus mode; its figures are medians over submitters (one sample per network, however many \
             results it sent), never means. Rows with fewer than " (MIN_RANKED_SUBMITTERS) " submitters are listed \
             after the ranked ones, without a rank. "
            a href="/about" { "How it works." }
        }
        (super::published::section(&published, "shipped with storage-score"))
    };
    layout("Leaderboard", body)
}

fn search_form(query: &LeaderboardQuery, choices: &FilterChoices) -> Markup {
    let filtering = query.kind.is_some() || query.board.is_some() || query.class.is_some() || query.bus.is_some();
    let classes: Vec<String> = CLASSES.iter().map(|c| c.to_string()).collect();
    html! {
        form.search method="get" action="/" role="search" {
            input type="search" name="q" value=(query.q.as_deref().unwrap_or(""))
                placeholder="Find a card: maker, model or the name on its label" aria-label="Search";
            input type="hidden" name="sort" value=(query.sort.as_str());
            button type="submit" { "Search" }
        }
        details.filters open[filtering] {
            summary { "Filters: board, class, kind, bus" }
            form method="get" action="/" {
                div.fields {
                    @if let Some(q) = &query.q {
                        input type="hidden" name="q" value=(q);
                    }
                    (board_select(&choices.boards, query.board.as_deref()))
                    (select("class", "Claimed class", &classes, query.class.as_deref()))
                    (select("kind", "Kind", &choices.kinds, query.kind.as_deref()))
                    (select("bus", "Bus mode", &choices.buses, query.bus.as_deref()))
                    input type="hidden" name="sort" value=(query.sort.as_str());
                    button type="submit" { "Filter" } " " a href="/" { "clear" }
                }
            }
        }
    }
}

/// "1–100 of 1996" and the links to the pages before and after.
fn pager(query: &LeaderboardQuery, page: &Page, id: &str) -> Markup {
    let first = if page.rows.is_empty() { 0 } else { query.offset + 1 };
    let last = query.offset + page.rows.len() as i64;
    html! {
        div.pager id=(id) {
            span.count { (first) "–" (last) " of " strong { (page.total) } " rows" }
            @if query.offset > 0 {
                @let to = (query.offset - query.limit).max(0);
                a rel="prev" href={ "/?" (query_string(query, query.sort, query.descending, to)) } {
                    "← previous " (query.limit.min(query.offset))
                }
            }
            @if last < page.total {
                a rel="next" href={ "/?" (query_string(query, query.sort, query.descending, last)) } {
                    "next " (query.limit.min(page.total - last)) " →"
                }
            }
        }
    }
}

fn table(query: &LeaderboardQuery, page: &Page) -> Markup {
    html! {
        div.scroll { table #leaderboard {
            thead { tr {
                th.n { "#" }
                (header_link(query, SortKey::Card, "Card", "", false, true))
                @for (key, title, unit, narrow) in columns() {
                    (header_link(query, key, title, unit, true, narrow))
                }
                th."n"."wide" { "p10–p90" }
            } }
            tbody {
                @for row in &page.rows {
                    @let f = &row.median_figures;
                    tr data-card=(row.card_key) data-median=(row.median_score) {
                        td.n {
                            @match row.rank {
                                Some(rank) => (rank),
                                None => span.muted title={ "fewer than " (MIN_RANKED_SUBMITTERS) " submitters: not ranked" } { "–" },
                            }
                        }
                        td {
                            a href={ "/cards/" (row.card_key) } { (row.name) }
                            span.sub {
                                @if row.label.is_some() { (row.card.display_name()) " · " }
                                (row.board) " · " (row.bus)
                                @if let Some(class) = &row.card.class_label { " · " (class) }
                            }
                        }
                        td."n"."score" { (row.median_score) }
                        @for figure in BOARD {
                            td class=(figure_class(figure)) { (figure_text(f[figure])) }
                        }
                        td."n"."wide" { (row.submitters) }
                        td."n"."wide" { (row.samples) }
                        td."n"."wide" { (row.latest) }
                        td."n"."wide" { (row.p10_score) "–" (row.p90_score) }
                    }
                }
            }
        } }
    }
}

/// A column's title as the link that sorts by it (again: the other way).
fn header_link(query: &LeaderboardQuery, key: SortKey, title: &str, unit: &str, numeric: bool, narrow: bool) -> Markup {
    let dir = if query.sort == key { !query.descending } else { key.default_descending() };
    let arrow = match (query.sort == key, query.descending) {
        (true, true) => " ▼",
        (true, false) => " ▲",
        _ => "",
    };
    let classes = [numeric.then_some("n"), (!narrow).then_some("wide")].into_iter().flatten().collect::<Vec<_>>();
    let class = (!classes.is_empty()).then(|| classes.join(" "));
    html! {
        th class=[class] {
            a data-sort=(key.as_str()) href={ "/?" (query_string(query, key, dir, 0)) } {
                // "Median|score": "Median score" on a wide screen, "score" on a phone.
                @match title.split_once('|') {
                    Some((wide, rest)) => { span.wide { (wide) " " } (rest) },
                    None => (title),
                }
                (arrow)
            }
            @if !unit.is_empty() { span.sub { (unit) } }
        }
    }
}

fn select(name: &str, label: &str, options: &[String], current: Option<&str>) -> Markup {
    let seen = options.iter().any(|o| current == Some(o.as_str()));
    html! {
        label { (label) select name=(name) {
            option value="" { "any" }
            @for option in options {
                option value=(option) selected[current == Some(option.as_str())] { (option) }
            }
            @if let (Some(current), false) = (current, seen) {
                option value=(current) selected { (current) }
            }
        } }
    }
}

/// Families first, each with its models.
fn board_select(boards: &[(String, Vec<String>)], current: Option<&str>) -> Markup {
    let selected = |value: &str| current.is_some_and(|c| c.eq_ignore_ascii_case(value));
    let seen = boards.iter().any(|(family, models)| selected(family) || models.iter().any(|m| selected(m)));
    html! {
        label { "Board" select name="board" {
            option value="" { "any" }
            @for (family, models) in boards {
                optgroup label=(family) {
                    @let all = models.len() > 1 || models.first() != Some(family);
                    option value=(family) selected[selected(family)] { (family) @if all { " (all)" } }
                    @for model in models.iter().filter(|m| *m != family) {
                        option value=(model) selected[selected(model)] { (model) }
                    }
                }
            }
            @if let (Some(current), false) = (current, seen) {
                option value=(current) selected { (current) }
            }
        } }
    }
}
