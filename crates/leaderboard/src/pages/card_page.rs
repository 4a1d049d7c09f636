//! `/cards/{key}`: one card's results on every board and bus mode, as a
//! strip plot (storage-report) and tables, with what the card claims beside
//! what it measured. Its name is the label its submitters agreed on, else
//! its CID's; its fields are its submitters' majority.

use std::collections::HashMap;
use std::sync::Arc;
use storage_scoring::figure::BOARD;

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, PreEscaped, html};
use storage_report::plot::strip::{StripPlot, StripRow};

use super::{error_page, layout};
use super::{figure_class, figure_text, figure_title};
use crate::App;
use crate::card::format_capacity;
use crate::error::ApiError;
use crate::store::{CardData, LISTED, MIN_RANKED_SUBMITTERS, Row, Storage, date_of};

/// Up to this many rows, a card page shows every row, however few networks
/// made it (a new card has only such rows).
const FEW_ROWS: usize = 4;

/// `(and 3 more from this network)`, or nothing.
fn more_text(more: i64) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more from this network)".to_owned(),
        n => format!(" (and {n} more from this network)"),
    }
}

pub async fn card<S: Storage>(State(app): State<Arc<App<S>>>, Path(key): Path<String>) -> Response {
    if key.len() != 16 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return error_page(ApiError::not_found("cards: no such card; follow a link from the leaderboard"));
    }
    // Its endurance and power-loss results, keyed as its runs are.
    let wear = match app.store.wear_card(key.clone()).await {
        Ok(wear) => wear,
        Err(e) => return error_page(ApiError::unavailable(e)),
    };
    let data = match (app.store.card(key.clone()).await, &wear.card) {
        (Ok(Some(data)), _) => data,
        (Ok(None), Some(card)) => CardData::without_runs(card.clone()),
        (Ok(None), None) => {
            return error_page(ApiError::not_found("cards: no such card, or all its results were deleted"));
        }
        (Err(e), _) => return error_page(ApiError::unavailable(e)),
    };
    let card = &data.card;
    let name = data.name.clone();
    let mid = card.manufacturer_id.map(|m| format!("0x{m:02x} ({m})")).unwrap_or_default();
    let capacity = card.capacity_bytes.map(|c| format!("{} ({c} bytes)", format_capacity(c))).unwrap_or_default();
    let facts = [
        ("Kind", card.kind.as_str()),
        ("Manufacturer ID", mid.as_str()),
        ("Manufacturer", card.manufacturer.as_deref().unwrap_or("")),
        ("OEM ID", card.oem_id.as_str()),
        ("Product name", card.product_name.as_str()),
        ("Revision", card.product_revision.as_str()),
        ("Capacity", capacity.as_str()),
        ("Claimed class (most submitters' SSR)", card.class_label.as_deref().unwrap_or("")),
    ];
    let head = html! {
        h2 #card-name { (name) }
        @if data.label.is_some() {
            p.muted { (card.display_name()) ": the name on the label that its submitters agree on." }
        }
        div.scroll { table.facts {
            @for (label, value) in facts {
                @if !value.is_empty() { tr { th { (label) } td { (value) } } }
            }
        } }
    };
    if data.rows.is_empty() && data.points.is_empty() && data.flagged.is_empty() && data.held.is_empty() {
        let body = html! {
            (head)
            p #no-runs { "No benchmark runs of this card yet." }
            (super::card_wear::sections(&wear))
        };
        return layout(&name, body);
    }

    // The strip plot: one row per board and bus mode.
    let mut by_group: HashMap<&str, Vec<(f64, String)>> = HashMap::new();
    for point in &data.points {
        by_group.entry(point.group_key.as_str()).or_default().push((
            point.score as f64,
            format!(
                "result {}: score {} ({}){}",
                point.id,
                point.score,
                date_of(point.created_at),
                more_text(point.more)
            ),
        ));
    }
    // Rows that fewer than three networks made are counted, not drawn or
    // listed: one network cannot fill the page with boards of its own.
    let (shown, few): (Vec<&Row>, Vec<&Row>) =
        data.rows.iter().partition(|row| row.submitters >= MIN_RANKED_SUBMITTERS || data.rows.len() <= FEW_ROWS);
    let plot = StripPlot {
        title: format!("PiBenchmarks scores of {name}"),
        x_title: "PiBenchmarks score".to_owned(),
        rows: shown
            .iter()
            .map(|row| StripRow {
                label: format!("{} · {}", row.board, row.bus),
                points: by_group.remove(row.group_key.as_str()).unwrap_or_default(),
                band: (row.submitters >= MIN_RANKED_SUBMITTERS).then_some((
                    row.p10_score as f64,
                    row.median_score as f64,
                    row.p90_score as f64,
                )),
            })
            .collect(),
    };
    let kinds = super::published::kinds_of(&card.kind);
    let published: Vec<_> = app.reference.iter().filter(|r| kinds.contains(&r.kind.as_str())).collect();
    let body = html! {
        (head)
        // The SVG is storage-report's own drawing: numbers it formats and
        // text it escapes itself (its test `draws_every_point_and_escapes_labels`).
        figure #strip-plot { (PreEscaped(plot.render(1000.0))) }
        (rows_table(&shown))
        @if !few.is_empty() {
            p.muted #few-rows {
                "And " (few.len()) " more boards or bus modes with fewer than " (MIN_RANKED_SUBMITTERS)
                " networks each (" (few.iter().map(|r| r.samples).sum::<i64>()) " results), not shown."
            }
        }
        @if data.rows.is_empty() {
            p { "No public results: every result of this card is flagged (see below)." }
        }
        h3 { "Claimed vs measured classes" }
        div.scroll { table #classes {
            thead { tr { th { "Claimed (from the card's SSR)" } th { "Measured" } th.n { "Networks" } } }
            tbody {
                @for (claimed, measured, count) in &data.classes {
                    tr {
                        td { (if claimed.is_empty() { "none claimed" } else { claimed }) }
                        td { (if measured.is_empty() { "not measured" } else { measured }) }
                        td.n { (count) }
                    }
                }
            }
        } }
        (super::card_wear::sections(&wear))
        h3 { "Recent results" }
        p.muted { "The newest of each network." }
        ul #recent {
            @for point in data.points.iter().take(LISTED) {
                li {
                    a href={ "/results/" (point.id) } { "result " (point.id) }
                    ": score " (point.score) ", " (date_of(point.created_at)) (more_text(point.more))
                }
            }
        }
        (listed(&data))
        (super::published::section(&published, &format!("of the same kind ({})", card.kind)))
    };
    layout(&name, body)
}

/// The table of the rows shown, one per board and bus mode.
fn rows_table(shown: &[&Row]) -> Markup {
    html! {
        h3 { "By board and bus mode" }
        div.scroll { table #rows {
            thead { tr {
                th { "Board" } th.n { "Median score" }
                @for figure in BOARD {
                    th class=(figure_class(figure)) { (figure_title(figure)) }
                }
                th.n.wide { "p10–p90" } th.n { "Networks" } th.n.wide { "Results" }
                th.wide { "Latest" }
            } }
            tbody {
                @for row in shown {
                    @let f = &row.median_figures;
                    tr {
                        td { (row.board) span.sub { (row.bus) " · " (row.formula) } }
                        td.n.score { (row.median_score) }
                        @for figure in BOARD {
                            td class=(figure_class(figure)) { (figure_text(f[figure])) }
                        }
                        td.n.wide { (row.p10_score) "–" (row.p90_score) }
                        td.n { (row.submitters) @if row.held > 0 { " (+" (row.held) " held)" } }
                        td.n.wide { (row.samples) }
                        td.wide { (row.latest) }
                    }
                }
            }
        } }
    }
}

/// The held and the flagged results, each list when it has any.
fn listed(data: &CardData) -> Markup {
    let lists = [
        (
            "held",
            "Held results (not counted)",
            "Public, but from networks that contradict a row five or more networks established, or came in a burst that would move it by more than 5%: they are in no median, standing or plot until networks from other days move the row to them, time corroborates them, or a moderator accepts them.",
            &data.held,
        ),
        ("flagged", "Flagged results (not ranked)", "", &data.flagged),
    ];
    html! {
        @for (id, title, what, listed) in lists {
            @if !listed.is_empty() {
                h3 { (title) }
                @if !what.is_empty() { p.muted { (what) } }
                ul id=(id) {
                    @for entry in listed.iter() {
                        li {
                            a href={ "/results/" (entry.id) } { "result " (entry.id) }
                            ": " span.flag { (entry.reasons.join("; ")) } (more_text(entry.more))
                        }
                    }
                }
            }
        }
    }
}
