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
//! Every string is escaped (maud writes each `(expression)` escaped).

use axum::response::Response;
use maud::{Markup, html};
use serde_json::Value;
use storage_scoring::endurance::Milestone;

use super::{error_page, layout};
use crate::store::wear::{StoredWear, WearCard, WearEntry};
use crate::store::{Status, date_of, datetime_of};

/// Bytes as people read them (`1.23 TB`, decimal units as a card's
/// capacity is sold), with the exact count in a title.
fn bytes_text(bytes: u64) -> Markup {
    html! { span title={ (bytes) " bytes" } { (human_bytes(bytes)) } }
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
        other => format!("{other}{at}"),
    }
}

/// The link to a result, its date, and its status when not plainly public.
fn result_cell(e: &WearEntry) -> Markup {
    html! {
        a href={ "/results/" (e.id) } { "result " (e.id) }
        " " span.sub { (date_of(e.created_at)) (more_text(e.more)) }
        @if e.status != Status::Public { span."sub"."flag" { (e.reasons.join("; ")) } }
    }
}

/// One endurance run's milestone cells: `pass N` and the bytes written by then.
fn milestone_cells(summary: &Value) -> Markup {
    let reached = summary.get("milestones").and_then(Value::as_array).cloned().unwrap_or_default();
    html! {
        @for (i, m) in Milestone::ALL.iter().enumerate() {
            @match reached.iter().find(|r| text(r, "milestone") == m.as_str()) {
                Some(r) => {
                    td.n.wide[i > 1] { (bytes_text(number(r, "bytes_written"))) span.sub { "pass " (number(r, "pass")) } }
                }
                None => { td.n.wide[i > 1].muted { "not reached" } }
            }
        }
    }
}

/// The Endurance and Power loss sections of a card page (nothing when the
/// card has no such results).
pub fn sections(wear: &WearCard) -> Markup {
    let endurance: Vec<&WearEntry> = wear.of_schema(storage_scoring::endurance::SCHEMA).collect();
    let power: Vec<&WearEntry> = wear.of_schema(storage_scoring::power_loss::SCHEMA).collect();
    html! {
        @if !endurance.is_empty() {
            h3 #endurance-title { "Endurance" }
            p.muted {
                "Whole-card write passes until blocks fail (" code { "storage-score endurance" } "): bytes written by \
                 the first failed 4 KiB block and by each share of failed blocks, the newest run of each network."
            }
            div.scroll { table #endurance {
                thead { tr {
                    th { "Run" } th.n { "First failed block" } th.n { "1% failed" } th.n.wide { "10%" }
                    th.n.wide { "25%" } th.n.wide { "50%" } th { "Stopped" } th.n { "Written in all" }
                } }
                tbody {
                    @for e in &endurance {
                        @let s = &e.summary;
                        tr {
                            td { (result_cell(e)) }
                            (milestone_cells(s))
                            td {
                                (stopped_words(text(s, "stopped"), s.get("stopped_at_pass").and_then(Value::as_u64)))
                                span.sub { (number(s, "passes")) " passes of " (bytes_text(number(s, "surface_bytes"))) }
                            }
                            td.n { (bytes_text(number(s, "total_written_bytes"))) }
                        }
                    }
                }
            } }
        }
        @if !power.is_empty() {
            h3 #power-loss-title { "Power loss" }
            p.muted {
                "Power cut with writes in flight (" code { "storage-score power-loss" } "): cuts after which the card \
                 came back with everything it acknowledged, and what it lost otherwise; the newest run of each network."
            }
            div.scroll { table #power-loss {
                thead { tr {
                    th { "Run" } th.n { "Cuts survived" } th { "Verdict" } th.n { "Lost" } th.n { "Torn" }
                    th.n.wide { "Misplaced" } th.n.wide { "Damaged" } th.n.wide { "Acknowledged" }
                } }
                tbody {
                    @for e in &power {
                        @let s = &e.summary;
                        @let verdict = text(s, "verdict");
                        tr {
                            td { (result_cell(e)) }
                            td.n.score { (number(s, "survived")) " of " (number(s, "cycles")) }
                            td class=(if verdict == "kept" { "pass" } else { "fail" }) { (verdict) }
                            td.n { (number(s, "lost")) }
                            td.n { (number(s, "torn")) }
                            td.n.wide { (number(s, "misplaced")) }
                            td.n.wide { (number(s, "damaged")) }
                            td.n.wide { (number(s, "acknowledged")) }
                        }
                    }
                }
            } }
        }
    }
}

/// `/results/{id}` of an endurance or power-loss result.
pub fn result_page(stored: &StoredWear) -> Response {
    if stored.status == Status::Hidden {
        return error_page(crate::api::no_such_result(stored.id));
    }
    let name = stored.card.display_name();
    let what = if stored.schema == storage_scoring::endurance::SCHEMA { "Endurance" } else { "Power loss" };
    let entry = WearEntry {
        id: stored.id,
        created_at: stored.created_at,
        schema: stored.schema.clone(),
        status: Status::Public,
        reasons: Vec::new(),
        summary: serde_json::from_str(&stored.summary_json).unwrap_or_default(),
        more: 0,
    };
    let wear = WearCard { card: Some(stored.card.clone()), entries: vec![entry] };
    let report: Value = serde_json::from_str(&stored.report_json).unwrap_or_default();
    let notes: Vec<&str> =
        report.get("notes").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let body = html! {
        h2 { "Result " (stored.id) ": " (what) " of " a href={ "/cards/" (stored.card_key) } { (name) } }
        p { (stored.status.as_str()) " · " (datetime_of(stored.created_at)) }
        @if !stored.reasons.is_empty() { p.flag { (stored.reasons.join("; ")) } }
        (sections(&wear))
        @if !notes.is_empty() {
            h3 { "Notes" }
            ul #notes { @for note in &notes { li { (note) } } }
        }
        p.muted {
            "The whole report: " a href={ "/api/v1/results/" (stored.id) } { "/api/v1/results/" (stored.id) } "."
        }
    };
    layout(&format!("{what} of {name}"), body)
}
