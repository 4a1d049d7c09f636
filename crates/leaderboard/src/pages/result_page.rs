//! `/results/{id}`: one result with every figure and its latency
//! percentiles, the server's verdict with each check, and every note, all
//! escaped.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;
use maud::{Markup, html};
use storage_scoring::schema::{Figure, Report, Verdict};

use super::{error_page, layout, score_text, standing_text};
use crate::App;
use crate::api::parse_id;
use crate::error::ApiError;
use crate::store::{Status, Storage, datetime_of};

fn figure(v: f64) -> String {
    if v.fract() == 0.0 { format!("{v:.0}") } else { format!("{v:.2}") }
}

pub async fn result<S: Storage>(State(app): State<Arc<App<S>>>, Path(id): Path<String>) -> Response {
    let id = match parse_id(&id) {
        Ok(id) => id,
        Err(e) => return error_page(e),
    };
    let stored = match app.store.get(id).await {
        Ok(Some(stored)) if stored.status != Status::Hidden => stored,
        // Not a run result: an endurance or power-loss one, or nothing.
        Ok(None) => {
            return match app.store.wear_get(id).await {
                Ok(Some(wear)) => super::card_wear::result_page(&wear),
                Ok(None) => error_page(crate::api::no_such_result(id)),
                Err(e) => error_page(ApiError::unavailable(e)),
            };
        }
        // A hidden result answers exactly as a missing one does.
        Ok(_) => return error_page(crate::api::no_such_result(id)),
        Err(e) => return error_page(ApiError::unavailable(e)),
    };
    let report: Report = serde_json::from_str(&stored.report_json).unwrap_or_default();
    let verdict: Verdict = serde_json::from_str(&stored.verdict_json).unwrap_or_default();
    let name = stored.card.display_name();
    let system = report.system.clone().unwrap_or_default();
    let board = match &stored.board_revision {
        Some(revision) => format!("{} Rev {revision} ({})", stored.board, stored.family),
        None => format!("{} ({})", stored.board, stored.family),
    };
    let facts = [
        ("PiBenchmarks score", format!("{} (formula {})", score_text(stored.score), stored.formula)),
        ("Name on the label", stored.label.clone().unwrap_or_default()),
        ("Verdict rules", stored.verdict_version.clone()),
        ("Submitted", datetime_of(stored.created_at)),
        ("Board", board),
        ("Bus mode", stored.bus.clone()),
        ("Kernel", system.kernel.unwrap_or_default()),
        ("Architecture", system.arch.unwrap_or_default()),
        ("OS", system.os.unwrap_or_default()),
        ("Profile", storage_scoring::run_profile::RunProfile::of(report.profile.as_deref()).to_string()),
        ("Tool", format!("{} {}", report.tool.name, report.tool.version)),
        ("Claimed class", verdict.claimed.clone().unwrap_or_default()),
        ("Measured class", verdict.measured.clone().unwrap_or_default()),
    ];
    let body = html! {
        h2 { "Result " (id) ": " a href={ "/cards/" (stored.card_key) } { (name) } }
        p #status class=[(stored.status != Status::Public).then_some("flag")] {
            "Status: " strong { (stored.status.as_str()) }
            @if !stored.reasons.is_empty() { " — " (stored.reasons.join("; ")) }
        }
        @if let (Some(standing), Some(score)) = (&stored.standing, stored.score) {
            p.standing #standing {
                (standing_text(score, standing)) " · " a href={ "/cards/" (stored.card_key) } { "the card's page" }
            }
        }
        div.scroll { table.facts {
            @for (label, value) in facts {
                @if !value.trim().is_empty() { tr { th { (label) } td { (value) } } }
            }
        } }
        (figures(&report))
        (super::health::section(&report))
        (checks(&verdict))
        (notes(&report, &verdict))
        p.muted { "The report as stored: " a href={ "/api/v1/results/" (id) } { "JSON" } "." }
    };
    layout(&format!("Result {id}"), body)
}

/// Every figure with its latency percentiles, and the tests skipped.
fn figures(report: &Report) -> Markup {
    let measurements = report.measurements.unwrap_or_default();
    let cell = |v: Option<f64>| v.map(figure).unwrap_or_default();
    html! {
        h3 { "Figures" }
        div.scroll { table #figures {
            thead { tr {
                th { "Test" } th.n { "Result" } th { "Unit" } th.n { "p50 µs" } th.n { "p99 µs" } th.n { "p99.9 µs" }
                th.n { "max µs" }
            } }
            tbody {
                @for measured in Figure::ALL {
                    @let key = measured.key();
                    @let latency = report.details.get(key).map(|d| d.latency);
                    tr data-key=(key) {
                        td { (measured.label()) " " span.muted { (key) } }
                        td.n { (measurements.figure(measured).map(figure).unwrap_or_else(|| "not measured".into())) }
                        td { (measured.unit().symbol()) }
                        td.n { (cell(latency.map(|l| l.p50_us))) }
                        td.n { (cell(latency.map(|l| l.p99_us))) }
                        td.n { (cell(latency.map(|l| l.p99_9_us))) }
                        td.n { (cell(latency.map(|l| l.max_us))) }
                    }
                }
            }
        } }
        @for skipped in &report.skipped {
            p.muted { "skipped " (skipped.key) ": " (skipped.reason) }
        }
    }
}

/// The server's own verdict, check by check.
fn checks(verdict: &Verdict) -> Markup {
    html! {
        h3 { "Verdict (this server's own)" }
        @if let Some(summary) = &verdict.summary { p #verdict-summary { (summary) } }
        div.scroll { table #checks {
            thead { tr { th { "Mark" } th { "Requirement" } th.n { "Measured" } th { "Result" } th { "Claimed" } } }
            tbody {
                @for check in &verdict.checks {
                    @let (class, word) = match check.pass {
                        Some(true) => ("pass", "pass"),
                        Some(false) => ("fail", "fail"),
                        None => ("unknown", "inconclusive"),
                    };
                    tr {
                        td { (check.mark) }
                        td { (check.requirement) }
                        td.n { (check.measured.map(figure).unwrap_or_else(|| "–".into())) " " (check.unit) }
                        td class=(class) { (word) @if let Some(why) = &check.why { ": " (why) } }
                        td { @if check.claimed { "yes" } }
                    }
                }
            }
        } }
    }
}

/// The verdict's, the report's and the device's notes, and the device's hints.
fn notes(report: &Report, verdict: &Verdict) -> Markup {
    let notes: Vec<&String> =
        verdict.notes.iter().chain(&report.notes).chain(report.device.iter().flat_map(|d| d.notes.iter())).collect();
    let hints: Vec<String> =
        report.device.iter().flat_map(|d| d.hints.iter()).map(|h| format!("{}: {}", h.code, h.message)).collect();
    html! {
        @if !notes.is_empty() || !hints.is_empty() {
            h3 { "Notes" }
            ul #notes {
                @for note in notes { li { (note) } }
                @for hint in hints { li.flag { (hint) } }
            }
        }
    }
}
