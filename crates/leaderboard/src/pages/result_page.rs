//! `/results/{id}`: one result with every figure and its latency
//! percentiles, the server's verdict with each check, and every note, all
//! escaped.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{Html, IntoResponse, Response};
use storage_scoring::schema::{Figure, Report, Verdict};

use super::{error_page, esc, layout, score_text, standing_text};
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
    let mut body = String::new();
    let _ = write!(body, "<h2>Result {id}: <a href=\"/cards/{}\">{}</a></h2>", esc(&stored.card_key), esc(&name));
    let status_class = if stored.status == Status::Public { "" } else { " class=\"flag\"" };
    let _ = write!(
        body,
        "<p id=\"status\"{status_class}>Status: <strong>{}</strong>{}</p>",
        stored.status.as_str(),
        if stored.reasons.is_empty() { String::new() } else { format!(" — {}", esc(&stored.reasons.join("; "))) }
    );
    if let (Some(standing), Some(score)) = (&stored.standing, stored.score) {
        let _ = write!(
            body,
            "<p class=\"standing\" id=\"standing\">{} · <a href=\"/cards/{}\">the card's page</a></p>",
            esc(&standing_text(score, standing)),
            esc(&stored.card_key)
        );
    }
    body.push_str("<div class=\"scroll\"><table class=\"facts\">");
    let system = report.system.clone().unwrap_or_default();
    let board = match &stored.board_revision {
        Some(revision) => format!("{} Rev {revision} ({})", stored.board, stored.family),
        None => format!("{} ({})", stored.board, stored.family),
    };
    let rows = [
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
    for (label, value) in rows {
        if !value.trim().is_empty() {
            let _ = write!(body, "<tr><th>{label}</th><td>{}</td></tr>", esc(&value));
        }
    }
    body.push_str("</table></div>");

    body.push_str("<h3>Figures</h3><div class=\"scroll\"><table id=\"figures\"><thead><tr><th>Test</th><th class=\"n\">Result</th><th>Unit</th><th class=\"n\">p50 µs</th><th class=\"n\">p99 µs</th><th class=\"n\">p99.9 µs</th><th class=\"n\">max µs</th></tr></thead><tbody>");
    let measurements = report.measurements.unwrap_or_default();
    for measured in Figure::ALL {
        let (key, what, unit) = (measured.key(), measured.label(), measured.unit().symbol());
        let value = measurements.figure(measured).map(figure).unwrap_or_else(|| "not measured".into());
        let latency = report.details.get(key).map(|d| d.latency);
        let cell = |v: Option<f64>| v.map(figure).unwrap_or_default();
        let _ = write!(
            body,
            "<tr data-key=\"{key}\"><td>{what} <span class=\"muted\">{key}</span></td><td class=\"n\">{}</td><td>{unit}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
            esc(&value),
            cell(latency.map(|l| l.p50_us)),
            cell(latency.map(|l| l.p99_us)),
            cell(latency.map(|l| l.p99_9_us)),
            cell(latency.map(|l| l.max_us)),
        );
    }
    body.push_str("</tbody></table></div>");
    for skipped in &report.skipped {
        let _ = write!(body, "<p class=\"muted\">skipped {}: {}</p>", esc(&skipped.key), esc(&skipped.reason));
    }
    body.push_str(&super::health::section(&report));

    body.push_str("<h3>Verdict (this server's own)</h3>");
    if let Some(summary) = &verdict.summary {
        let _ = write!(body, "<p id=\"verdict-summary\">{}</p>", esc(summary));
    }
    body.push_str("<div class=\"scroll\"><table id=\"checks\"><thead><tr><th>Mark</th><th>Requirement</th><th class=\"n\">Measured</th><th>Result</th><th>Claimed</th></tr></thead><tbody>");
    for check in &verdict.checks {
        let (class, word) = match check.pass {
            Some(true) => ("pass", "pass"),
            Some(false) => ("fail", "fail"),
            None => ("unknown", "inconclusive"),
        };
        let _ = write!(
            body,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{} {}</td><td class=\"{class}\">{word}{}</td><td>{}</td></tr>",
            esc(&check.mark),
            esc(&check.requirement),
            check.measured.map(figure).unwrap_or_else(|| "–".into()),
            esc(&check.unit),
            check.why.as_deref().map(|why| format!(": {}", esc(why))).unwrap_or_default(),
            if check.claimed { "yes" } else { "" }
        );
    }
    body.push_str("</tbody></table></div>");

    let notes: Vec<&String> =
        verdict.notes.iter().chain(&report.notes).chain(report.device.iter().flat_map(|d| d.notes.iter())).collect();
    let hints: Vec<String> =
        report.device.iter().flat_map(|d| d.hints.iter()).map(|h| format!("{}: {}", h.code, h.message)).collect();
    if !notes.is_empty() || !hints.is_empty() {
        body.push_str("<h3>Notes</h3><ul id=\"notes\">");
        for note in notes {
            let _ = write!(body, "<li>{}</li>", esc(note));
        }
        for hint in hints {
            let _ = write!(body, "<li class=\"flag\">{}</li>", esc(&hint));
        }
        body.push_str("</ul>");
    }
    let _ = write!(body, "<p class=\"muted\">The report as stored: <a href=\"/api/v1/results/{id}\">JSON</a>.</p>");
    Html(layout(&format!("Result {id}"), &body)).into_response()
}
