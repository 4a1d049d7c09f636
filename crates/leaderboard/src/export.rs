//! `/export.json` (one public result per line) and `/export.csv` (one per
//! row), streamed in pages so that a large database is never held in memory.

use std::fmt::Write;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use storage_scoring::figure::Figure;
use storage_scoring::schema::Report;

use crate::App;
use crate::store::{Storage, StoreError, StoredResult, datetime_of};

/// Results read per database round trip.
const PAGE: i64 = 500;

/// Streams every public result through `render`, page by page.
fn stream<S: Storage>(app: Arc<App<S>>, header_line: Option<String>, render: fn(&StoredResult) -> String) -> Body {
    let state = (app, 0i64, header_line, false);
    let pages = futures_util::stream::unfold(state, move |(app, after, header_line, done)| async move {
        if done {
            return None;
        }
        let mut chunk = header_line.unwrap_or_default();
        match app.store.export_page(after, PAGE).await {
            Ok(results) => {
                let last = results.last().map(|r| r.id);
                for result in &results {
                    chunk.push_str(&render(result));
                }
                let finished = results.len() < PAGE as usize;
                Some((Ok::<_, StoreError>(Bytes::from(chunk)), (app, last.unwrap_or(after), None, finished)))
            }
            // The client sees a truncated download rather than a silent end.
            Err(e) => Some((Err(e), (app, after, None, true))),
        }
    });
    Body::from_stream(futures_util::StreamExt::map(pages, |r| r.map_err(|e| std::io::Error::other(e.0))))
}

/// `GET /export.json`: one JSON object per line.
pub async fn json<S: Storage>(State(app): State<Arc<App<S>>>) -> Response {
    let body = stream(app, None, json_line);
    ([(header::CONTENT_TYPE, "application/x-ndjson; charset=utf-8")], body).into_response()
}

fn json_line(r: &StoredResult) -> String {
    // The stored report and verdict are JSON already; they are embedded as is.
    let text = |s: &str| serde_json::to_string(s).expect("strings serialize");
    format!(
        "{{\"id\":{},\"created_at\":{},\"status\":\"{}\",\"score\":{{\"pibenchmarks\":{},\"formula\":{}}},\"card_key\":{},\"board\":{},\"family\":{},\"bus\":{},\"verdict_version\":{},\"report\":{},\"verdict\":{}}}\n",
        r.id,
        text(&datetime_of(r.created_at)),
        r.status.as_str(),
        r.score.map_or("null".to_owned(), |s| s.to_string()),
        text(&r.formula),
        text(&r.card_key),
        text(&r.board),
        text(&r.family),
        text(&r.bus),
        text(&r.verdict_version),
        r.report_json,
        r.verdict_json
    )
}

/// The CSV columns.
pub fn csv_header() -> String {
    let mut line = "id,created_at,kind,manufacturer_id,manufacturer,oem_id,product_name,product_revision,capacity_bytes,class_label,measured_class,board,bus,score,formula".to_owned();
    line.extend(first_figures().map(|f| format!(",{}", f.key())));
    // Columns added later go last, so that readers of the first ones keep working.
    line.push_str(",label,board_family,board_revision");
    line.extend(later_figures().map(|f| format!(",{}", f.key())));
    line.push_str("\r\n");
    line
}

/// The figures the export had from the start: those Storage.sh prints, in
/// table order.
fn first_figures() -> impl Iterator<Item = Figure> {
    Figure::ALL.into_iter().filter(|f| f.storage_sh().is_some())
}

/// The figures added since (the sustained write), after the columns that
/// came before them.
fn later_figures() -> impl Iterator<Item = Figure> {
    Figure::ALL.into_iter().filter(|f| f.storage_sh().is_none())
}

/// `GET /export.csv`: RFC 4180, one result per row.
pub async fn csv<S: Storage>(State(app): State<Arc<App<S>>>) -> Response {
    let body = stream(app, Some(csv_header()), csv_row);
    (
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"storage-score-results.csv\""),
        ],
        body,
    )
        .into_response()
}

fn csv_row(r: &StoredResult) -> String {
    let card = &r.card;
    let measurements = serde_json::from_str::<Report>(&r.report_json).ok().and_then(|report| report.measurements);
    let mut fields = vec![
        r.id.to_string(),
        datetime_of(r.created_at),
        card.kind.clone(),
        card.manufacturer_id.map(|m| m.to_string()).unwrap_or_default(),
        card.manufacturer.clone().unwrap_or_default(),
        card.oem_id.clone(),
        card.product_name.clone(),
        card.product_revision.clone(),
        card.capacity_bytes.map(|c| c.to_string()).unwrap_or_default(),
        card.class_label.clone().unwrap_or_default(),
        r.measured.clone().unwrap_or_default(),
        r.board.clone(),
        r.bus.clone(),
        r.score.map(|s| s.to_string()).unwrap_or_default(),
        r.formula.clone(),
    ];
    let figure = |f: Figure| measurements.and_then(|m| m.figure(f)).map(|v| v.to_string()).unwrap_or_default();
    fields.extend(first_figures().map(figure));
    fields.push(r.label.clone().unwrap_or_default());
    fields.push(r.family.clone());
    fields.push(r.board_revision.clone().unwrap_or_default());
    fields.extend(later_figures().map(figure));
    let mut line = String::new();
    for (i, field) in fields.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        let _ = write!(line, "{}", csv_field(field));
    }
    line.push_str("\r\n");
    line
}

/// Quotes a field when it needs it (RFC 4180), and defuses text that a
/// spreadsheet would run as a formula (a leading `=`, `+`, `-`, `@`).
pub fn csv_field(text: &str) -> String {
    let numeric = text.parse::<f64>().is_ok();
    let text = if !numeric && text.starts_with(['=', '+', '-', '@']) { format!("'{text}") } else { text.to_owned() };
    if text.contains([',', '"', '\r', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_defused() {
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(csv_field("=cmd()"), "'=cmd()");
        assert_eq!(csv_field("-5"), "-5");
    }
}
