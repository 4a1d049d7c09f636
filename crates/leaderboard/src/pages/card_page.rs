//! `/cards/{key}`: one card's results on every board and bus mode, as a
//! strip plot (storage-report) and tables, with what the card claims beside
//! what it measured. Its name is the label its submitters agreed on, else
//! its CID's; its fields are its submitters' majority.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use storage_report::plot::strip::{StripPlot, StripRow};

use super::figure_text;
use super::{error_page, esc, layout};
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
    let mut body = String::new();
    let _ = write!(body, "<h2 id=\"card-name\">{}</h2>", esc(&name));
    if data.label.is_some() {
        let _ = write!(
            body,
            "<p class=\"muted\">{}: the name on the label that its submitters agree on.</p>",
            esc(&card.display_name())
        );
    }

    body.push_str("<div class=\"scroll\"><table class=\"facts\">");
    let mid = card.manufacturer_id.map(|m| format!("0x{m:02x} ({m})")).unwrap_or_default();
    let capacity = card.capacity_bytes.map(|c| format!("{} ({c} bytes)", format_capacity(c))).unwrap_or_default();
    for (label, value) in [
        ("Kind", card.kind.as_str()),
        ("Manufacturer ID", mid.as_str()),
        ("Manufacturer", card.manufacturer.as_deref().unwrap_or("")),
        ("OEM ID", card.oem_id.as_str()),
        ("Product name", card.product_name.as_str()),
        ("Revision", card.product_revision.as_str()),
        ("Capacity", capacity.as_str()),
        ("Claimed class (most submitters' SSR)", card.class_label.as_deref().unwrap_or("")),
    ] {
        if !value.is_empty() {
            let _ = write!(body, "<tr><th>{label}</th><td>{}</td></tr>", esc(value));
        }
    }
    body.push_str("</table></div>");
    if data.rows.is_empty() && data.points.is_empty() && data.flagged.is_empty() && data.held.is_empty() {
        body.push_str("<p id=\"no-runs\">No benchmark runs of this card yet.</p>");
        super::card_wear::sections(&mut body, &wear);
        return Html(layout(&name, &body)).into_response();
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
    let _ = write!(body, "<figure id=\"strip-plot\">{}</figure>", plot.render(1000.0));

    body.push_str("<h3>By board and bus mode</h3><div class=\"scroll\"><table id=\"rows\"><thead><tr><th>Board</th><th class=\"n\">Median score</th><th class=\"n\">Random write IOPS</th><th class=\"n wide\">Random read IOPS</th><th class=\"n wide\">Seq. write MB/s</th><th class=\"n wide\">p10–p90</th><th class=\"n\">Networks</th><th class=\"n wide\">Results</th><th class=\"wide\">Latest</th></tr></thead><tbody>");
    for row in &shown {
        let f = &row.median_figures;
        let _ = write!(
            body,
            "<tr><td>{}<span class=\"sub\">{} · {}</span></td><td class=\"n score\">{}</td><td class=\"n\">{}</td><td class=\"n wide\">{}</td><td class=\"n wide\">{}</td><td class=\"n wide\">{}–{}</td><td class=\"n\">{}</td><td class=\"n wide\">{}</td><td class=\"wide\">{}</td></tr>",
            esc(&row.board),
            esc(&row.bus),
            esc(&row.formula),
            row.median_score,
            figure_text(f.rand_write_4k_qd64_iops),
            figure_text(f.rand_read_4k_qd64_iops),
            figure_text(f.seq_write_mb_s),
            row.p10_score,
            row.p90_score,
            if row.held > 0 { format!("{} (+{} held)", row.submitters, row.held) } else { row.submitters.to_string() },
            row.samples,
            esc(&row.latest),
        );
    }
    body.push_str("</tbody></table></div>");
    if !few.is_empty() {
        let results: i64 = few.iter().map(|r| r.samples).sum();
        let _ = write!(
            body,
            "<p class=\"muted\" id=\"few-rows\">And {} more boards or bus modes with fewer than {MIN_RANKED_SUBMITTERS} networks each ({results} results), not shown.</p>",
            few.len()
        );
    }
    if data.rows.is_empty() {
        body.push_str("<p>No public results: every result of this card is flagged (see below).</p>");
    }

    body.push_str("<h3>Claimed vs measured classes</h3><div class=\"scroll\"><table id=\"classes\"><thead><tr><th>Claimed (from the card's SSR)</th><th>Measured</th><th class=\"n\">Networks</th></tr></thead><tbody>");
    for (claimed, measured, count) in &data.classes {
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{count}</td></tr>",
            esc(if claimed.is_empty() { "none claimed" } else { claimed }),
            esc(if measured.is_empty() { "not measured" } else { measured })
        );
    }
    body.push_str("</tbody></table></div>");
    super::card_wear::sections(&mut body, &wear);

    body.push_str("<h3>Recent results</h3><p class=\"muted\">The newest of each network.</p><ul id=\"recent\">");
    for point in data.points.iter().take(LISTED) {
        let _ = write!(
            body,
            "<li><a href=\"/results/{0}\">result {0}</a>: score {1}, {2}{3}</li>",
            point.id,
            point.score,
            date_of(point.created_at),
            more_text(point.more)
        );
    }
    body.push_str("</ul>");
    for (id, title, what, listed) in [
        (
            "held",
            "Held results (not counted)",
            "Public, but from networks that contradict a row five or more networks established, or came in a burst that would move it by more than 5%: they are in no median, standing or plot until networks from other days move the row to them, time corroborates them, or a moderator accepts them.",
            &data.held,
        ),
        ("flagged", "Flagged results (not ranked)", "", &data.flagged),
    ] {
        if listed.is_empty() {
            continue;
        }
        let _ = write!(body, "<h3>{title}</h3>");
        if !what.is_empty() {
            let _ = write!(body, "<p class=\"muted\">{what}</p>");
        }
        let _ = write!(body, "<ul id=\"{id}\">");
        for entry in listed {
            let _ = write!(
                body,
                "<li><a href=\"/results/{0}\">result {0}</a>: <span class=\"flag\">{1}</span>{2}</li>",
                entry.id,
                esc(&entry.reasons.join("; ")),
                more_text(entry.more)
            );
        }
        body.push_str("</ul>");
    }
    let kinds = super::published::kinds_of(&card.kind);
    let published: Vec<_> = app.reference.iter().filter(|r| kinds.contains(&r.kind.as_str())).collect();
    super::published::section(&mut body, &published, &format!("of the same kind ({})", card.kind));
    Html(layout(&name, &body)).into_response()
}
