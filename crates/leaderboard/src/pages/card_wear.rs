//! What a card page shows of its endurance and power-loss results
//! (docs/leaderboard.md#pages), and the page of one such result.
//!
//! - **Endurance:** per network, its newest run: the bytes written by the
//!   first failed block and by each milestone reached (1%, 10%, 25%, 50%
//!   of the blocks), with the pass it was reached in; how the run stopped;
//!   and the total written.
//! - **Power loss:** per network, its newest run: the cuts survived (the
//!   card came back, nothing lost, torn, misplaced or damaged) out of the
//!   cuts, the totals of each kind of harm, and the verdict.
//!
//! The figures are the server's own summary of the checked report
//! (`storage_scoring::wear`), never a number the client sent beside it.
//! Every string is escaped.

use std::fmt::Write;

use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;
use storage_scoring::endurance::Milestone;

use super::{error_page, esc, layout};
use crate::store::wear::{StoredWear, WearCard, WearEntry};
use crate::store::{Status, date_of, datetime_of};

/// Bytes as people read them (`1.23 TB`, decimal units as a card's
/// capacity is sold), with the exact count in a title.
fn bytes_text(bytes: u64) -> String {
    format!("<span title=\"{bytes} bytes\">{}</span>", human_bytes(bytes))
}

/// Three significant digits in B, kB, MB, GB, TB or PB.
pub fn human_bytes(bytes: u64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    match unit {
        0 => format!("{bytes} B"),
        _ if value >= 100.0 => format!("{value:.0} {}", units[unit]),
        _ if value >= 10.0 => format!("{value:.1} {}", units[unit]),
        _ => format!("{value:.2} {}", units[unit]),
    }
}

fn number(summary: &Value, key: &str) -> u64 {
    summary.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn text<'a>(summary: &'a Value, key: &str) -> &'a str {
    summary.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `(and 3 more from this network)`, or nothing.
fn more_text(more: i64) -> String {
    match more {
        0 => String::new(),
        1 => " (and 1 more from this network)".to_owned(),
        n => format!(" (and {n} more from this network)"),
    }
}

/// How an endurance run ended, in words.
fn stopped_words(stopped: &str, pass: Option<u64>) -> String {
    let at = pass.map(|p| format!(" in pass {p}")).unwrap_or_default();
    match stopped {
        "" => "still running (the report was sent mid-run)".to_owned(),
        "until" => format!("reached its --until milestone{at}"),
        "passes" => format!("made its --passes{at}"),
        "hours" => format!("ran its --hours{at}"),
        "read-only" => format!("the card turned read-only{at}"),
        "ignores-writes" => format!("the card ignored writes{at} (old data read back)"),
        "vanished" => format!("the card vanished{at}"),
        "interrupted" => format!("interrupted{at}"),
        other => format!("{}{at}", esc(other)),
    }
}

/// The link to a result, its date, and its status when not plainly public.
fn result_cell(e: &WearEntry) -> String {
    let mut cell = format!(
        "<a href=\"/results/{0}\">result {0}</a> <span class=\"sub\">{1}{2}</span>",
        e.id,
        date_of(e.created_at),
        more_text(e.more)
    );
    if e.status != Status::Public {
        let _ = write!(cell, "<span class=\"sub flag\">{}</span>", esc(&e.reasons.join("; ")));
    }
    cell
}

/// One endurance run's milestone cells: `pass N` and the bytes written by then.
fn milestone_cells(summary: &Value) -> String {
    let reached = summary.get("milestones").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut cells = String::new();
    for (i, m) in Milestone::ALL.iter().enumerate() {
        let wide = if i > 1 { " wide" } else { "" };
        match reached.iter().find(|r| text(r, "milestone") == m.as_str()) {
            Some(r) => {
                let _ = write!(
                    cells,
                    "<td class=\"n{wide}\">{}<span class=\"sub\">pass {}</span></td>",
                    bytes_text(number(r, "bytes_written")),
                    number(r, "pass")
                );
            }
            None => {
                let _ = write!(cells, "<td class=\"n{wide} muted\">not reached</td>");
            }
        }
    }
    cells
}

/// The Endurance and Power loss sections of a card page (nothing when the
/// card has no such results).
pub fn sections(body: &mut String, wear: &WearCard) {
    let endurance: Vec<&WearEntry> = wear.of_schema(storage_scoring::endurance::SCHEMA).collect();
    if !endurance.is_empty() {
        body.push_str("<h3 id=\"endurance-title\">Endurance</h3><p class=\"muted\">Whole-card write passes until blocks fail (<code>storage-score endurance</code>): bytes written by the first failed 4 KiB block and by each share of failed blocks, the newest run of each network.</p>");
        body.push_str("<div class=\"scroll\"><table id=\"endurance\"><thead><tr><th>Run</th><th class=\"n\">First failed block</th><th class=\"n\">1% failed</th><th class=\"n wide\">10%</th><th class=\"n wide\">25%</th><th class=\"n wide\">50%</th><th>Stopped</th><th class=\"n\">Written in all</th></tr></thead><tbody>");
        for e in &endurance {
            let s = &e.summary;
            let pass = s.get("stopped_at_pass").and_then(Value::as_u64);
            let _ = write!(
                body,
                "<tr><td>{}</td>{}<td>{}<span class=\"sub\">{} passes of {}</span></td><td class=\"n\">{}</td></tr>",
                result_cell(e),
                milestone_cells(s),
                stopped_words(text(s, "stopped"), pass),
                number(s, "passes"),
                bytes_text(number(s, "surface_bytes")),
                bytes_text(number(s, "total_written_bytes")),
            );
        }
        body.push_str("</tbody></table></div>");
    }
    let power: Vec<&WearEntry> = wear.of_schema(storage_scoring::power_loss::SCHEMA).collect();
    if !power.is_empty() {
        body.push_str("<h3 id=\"power-loss-title\">Power loss</h3><p class=\"muted\">Power cut with writes in flight (<code>storage-score power-loss</code>): cuts after which the card came back with everything it acknowledged, and what it lost otherwise; the newest run of each network.</p>");
        body.push_str("<div class=\"scroll\"><table id=\"power-loss\"><thead><tr><th>Run</th><th class=\"n\">Cuts survived</th><th>Verdict</th><th class=\"n\">Lost</th><th class=\"n\">Torn</th><th class=\"n wide\">Misplaced</th><th class=\"n wide\">Damaged</th><th class=\"n wide\">Acknowledged</th></tr></thead><tbody>");
        for e in &power {
            let s = &e.summary;
            let verdict = text(s, "verdict");
            let class = if verdict == "kept" { "pass" } else { "fail" };
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"n score\">{} of {}</td><td class=\"{class}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n wide\">{}</td><td class=\"n wide\">{}</td><td class=\"n wide\">{}</td></tr>",
                result_cell(e),
                number(s, "survived"),
                number(s, "cycles"),
                esc(verdict),
                number(s, "lost"),
                number(s, "torn"),
                number(s, "misplaced"),
                number(s, "damaged"),
                number(s, "acknowledged"),
            );
        }
        body.push_str("</tbody></table></div>");
    }
}

/// `/results/{id}` of an endurance or power-loss result.
pub fn result_page(stored: &StoredWear) -> Response {
    if stored.status == Status::Hidden {
        return error_page(crate::api::no_such_result(stored.id));
    }
    let name = stored.card.display_name();
    let what = if stored.schema == storage_scoring::endurance::SCHEMA { "Endurance" } else { "Power loss" };
    let mut body = String::new();
    let _ = write!(
        body,
        "<h2>Result {}: {what} of <a href=\"/cards/{}\">{}</a></h2><p>{} · {}</p>",
        stored.id,
        esc(&stored.card_key),
        esc(&name),
        esc(stored.status.as_str()),
        datetime_of(stored.created_at)
    );
    if !stored.reasons.is_empty() {
        let _ = write!(body, "<p class=\"flag\">{}</p>", esc(&stored.reasons.join("; ")));
    }
    let entry = WearEntry {
        id: stored.id,
        created_at: stored.created_at,
        schema: stored.schema.clone(),
        status: Status::Public,
        reasons: Vec::new(),
        summary: serde_json::from_str(&stored.summary_json).unwrap_or_default(),
        more: 0,
    };
    sections(&mut body, &WearCard { card: Some(stored.card.clone()), entries: vec![entry] });
    let report: Value = serde_json::from_str(&stored.report_json).unwrap_or_default();
    if let Some(notes) = report.get("notes").and_then(Value::as_array).filter(|n| !n.is_empty()) {
        body.push_str("<h3>Notes</h3><ul id=\"notes\">");
        for note in notes.iter().filter_map(Value::as_str) {
            let _ = write!(body, "<li>{}</li>", esc(note));
        }
        body.push_str("</ul>");
    }
    let _ = write!(
        body,
        "<p class=\"muted\">The whole report: <a href=\"/api/v1/results/{}\">/api/v1/results/{}</a>.</p>",
        stored.id, stored.id
    );
    Html(layout(&format!("{what} of {name}"), &body)).into_response()
}
