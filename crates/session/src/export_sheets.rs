//! The rows of each export (docs/cli.md#exports): what a spreadsheet user
//! wants of each document, one row per card or result. A run report (or
//! a leaderboard result) is one row, a machine's doctor report one per
//! device, a batch one per card, a scan one per disk, an endurance report
//! one per pass, a power-loss report one per cut, and `compare` one per
//! figure of each comparison. Figures are in their own units, named in
//! the header (`seq read (MiB/s)`); sizes in bytes.

use serde_json::Value;
use storage_scoring::batch::BatchReport;
use storage_scoring::figure::Figure;
use storage_scoring::schema::{Device, Report};

use crate::compare::Comparison;
use crate::export::{Cell, Sheet};
use crate::scan::{Entry, maker, model};

/// A figure's column: its short label and its unit.
fn figure_header(figure: Figure) -> String {
    format!("{} ({})", figure.short_label(), figure.unit().symbol())
}

fn device_cells(device: Option<&Device>) -> [Cell; 4] {
    [
        Cell::text(device.map(|d| d.kind.as_str())),
        Cell::text(device.and_then(maker)),
        Cell::text(device.and_then(model)),
        Cell::count(device.and_then(|d| d.capacity_bytes)),
    ]
}

fn class_claimed(device: Option<&Device>) -> Cell {
    Cell::text(device.and_then(|d| d.sd.as_ref()).and_then(|sd| sd.class_label.clone()))
}

/// One row per report: a run, a leaderboard result, each device of a
/// machine's doctor report.
pub fn reports(reports: &[Report]) -> Sheet {
    let mut header: Vec<String> = [
        "device",
        "kind",
        "maker",
        "model",
        "capacity (bytes)",
        "class claimed",
        "class measured",
        "profile",
        "created",
    ]
    .map(str::to_owned)
    .into();
    header.extend(Figure::ALL.map(figure_header));
    header.extend(["score (PiBenchmarks)", "verdict", "label"].map(str::to_owned));
    let rows = reports
        .iter()
        .map(|r| {
            let device = r.device.as_ref();
            let name = r
                .target
                .as_ref()
                .and_then(|t| t.disk.clone().or_else(|| Some(t.input.clone())))
                .or_else(|| device.and_then(|d| d.name.clone()));
            let mut row = vec![Cell::text(name)];
            row.extend(device_cells(device));
            row.push(class_claimed(device));
            row.push(Cell::text(r.verdict.as_ref().and_then(|v| v.measured.clone())));
            row.push(Cell::text(r.profile.clone()));
            row.push(Cell::text(r.created.clone()));
            row.extend(Figure::ALL.map(|f| Cell::number(r.measurements.as_ref().and_then(|m| m.figure(f)))));
            row.push(Cell::count(r.score.as_ref().and_then(|s| s.pibenchmarks)));
            row.push(Cell::text(r.verdict.as_ref().and_then(|v| v.summary.clone())));
            row.push(Cell::text(r.label.clone()));
            row
        })
        .collect();
    Sheet { header, rows }
}

/// One row per card of a batch (or station) report.
pub fn batch(report: &BatchReport) -> Sheet {
    let mut header: Vec<String> = [
        "card",
        "sequence",
        "label",
        "status",
        "reason",
        "reader",
        "kind",
        "maker",
        "model",
        "capacity (bytes)",
        "class claimed",
        "capacity verdict",
        "usable (bytes)",
    ]
    .map(str::to_owned)
    .into();
    header.extend(Figure::ALL.map(figure_header));
    header.extend(["score (PiBenchmarks)", "require", "time (s)"].map(str::to_owned));
    let rows = report
        .cards
        .iter()
        .map(|card| {
            let device = card.device.as_ref();
            let mut row = vec![
                Cell::Text(card.target.clone()),
                Cell::count(card.sequence.map(u64::from)),
                Cell::text(card.label.clone()),
                Cell::Text(card.status.as_str().to_owned()),
                Cell::text(card.reason.clone()),
                Cell::text(card.reader.clone()),
            ];
            row.extend(device_cells(device));
            row.push(class_claimed(device));
            row.push(Cell::text(card.capacity.as_ref().map(|c| c.verdict.clone())));
            row.push(Cell::count(card.capacity.as_ref().map(|c| c.usable_bytes)));
            row.extend(Figure::ALL.map(|f| Cell::number(card.figures.get(f.key()).copied())));
            row.push(Cell::count(card.score.as_ref().and_then(|s| s.pibenchmarks)));
            row.push(Cell::text(
                card.require
                    .as_ref()
                    .map(|r| if r.pass { "pass".to_owned() } else { format!("fail: {}", r.failed.join(" ")) }),
            ));
            row.push(Cell::Number(card.seconds));
            row
        })
        .collect();
    Sheet { header, rows }
}

/// One row per disk of a scan.
pub fn scan(entries: &[Entry]) -> Sheet {
    let header =
        ["name", "node", "kind", "maker", "model", "size (bytes)", "class", "mounts", "holds /", "health source"]
            .map(str::to_owned)
            .into();
    let rows = entries
        .iter()
        .map(|e| {
            vec![
                Cell::Text(e.name.clone()),
                Cell::Text(e.node.clone()),
                Cell::Text(e.kind.as_str().to_owned()),
                Cell::text(e.maker.clone()),
                Cell::text(e.model.clone()),
                Cell::count(e.size_bytes),
                Cell::text(e.class.clone()),
                Cell::text((!e.mounts.is_empty()).then(|| e.mounts.join(" "))),
                Cell::Text(if e.holds_root { "yes" } else { "no" }.to_owned()),
                Cell::text(e.health_source.clone()),
            ]
        })
        .collect();
    Sheet { header, rows }
}

/// One row per comparison and figure: the two values, the ratio, its 95%
/// interval and the verdict (`real`, `noise`, `cannot-tell`).
pub fn compare(comparisons: &[Comparison]) -> Sheet {
    let header = [
        "base",
        "other",
        "figure",
        "unit",
        "base value",
        "other value",
        "ratio (other/base)",
        "95% low",
        "95% high",
        "difference",
        "runs base",
        "runs other",
    ]
    .map(str::to_owned)
    .into();
    let mut rows = Vec::new();
    for c in comparisons {
        for f in &c.figures {
            let figure = Figure::from_key(&f.key);
            rows.push(vec![
                Cell::Text(c.base.clone()),
                Cell::Text(c.other.clone()),
                Cell::Text(figure.map_or_else(|| f.key.clone(), |fig| fig.short_label().to_owned())),
                Cell::text(figure.map(|fig| fig.unit().symbol())),
                Cell::number(f.base),
                Cell::number(f.other),
                Cell::number(f.ratio),
                Cell::number(f.ci95.map(|[lo, _]| lo)),
                Cell::number(f.ci95.map(|[_, hi]| hi)),
                Cell::Text(f.difference.as_str().to_owned()),
                Cell::Count(f.runs[0] as u64),
                Cell::Count(f.runs[1] as u64),
            ]);
        }
    }
    Sheet { header, rows }
}

/// One row per element of a list of flat records (an endurance report's
/// passes, a power-loss report's cuts): each key a column (a nested
/// object's as `outer.inner`), in the order of the first record.
pub fn records(records: &[Value]) -> Sheet {
    fn flatten(prefix: &str, value: &Value, out: &mut Vec<(String, Cell)>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                    flatten(&key, v, out);
                }
            }
            Value::Number(n) => {
                out.push((prefix.to_owned(), n.as_u64().map_or_else(|| Cell::number(n.as_f64()), Cell::Count)))
            }
            Value::String(s) => out.push((prefix.to_owned(), Cell::Text(s.clone()))),
            Value::Bool(b) => out.push((prefix.to_owned(), Cell::Text(b.to_string()))),
            Value::Null => out.push((prefix.to_owned(), Cell::Empty)),
            Value::Array(items) => out.push((prefix.to_owned(), Cell::Text(items.len().to_string()))),
        }
    }
    let flat: Vec<Vec<(String, Cell)>> = records
        .iter()
        .map(|r| {
            let mut cells = Vec::new();
            flatten("", r, &mut cells);
            cells
        })
        .collect();
    let mut header: Vec<String> = Vec::new();
    for (key, _) in flat.iter().flatten() {
        if !header.contains(key) {
            header.push(key.clone());
        }
    }
    // The record's number first: a pass, a cut.
    if let Some(at) = header.iter().position(|h| h == "pass" || h == "cycle") {
        let key = header.remove(at);
        header.insert(0, key);
    }
    let rows = flat
        .into_iter()
        .map(|cells| {
            header.iter().map(|h| cells.iter().find(|(k, _)| k == h).map_or(Cell::Empty, |(_, c)| c.clone())).collect()
        })
        .collect();
    Sheet { header, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_as_long_as_its_header() {
        let sheet = reports(&[Report::new("0.1.0")]);
        assert!(sheet.rows.iter().all(|r| r.len() == sheet.header.len()));
        let batch_sheet = batch(&BatchReport { cards: vec![Default::default()], ..Default::default() });
        assert!(batch_sheet.rows.iter().all(|r| r.len() == batch_sheet.header.len()));
        assert!(batch_sheet.header.contains(&"seq read (MiB/s)".to_owned()), "{:?}", batch_sheet.header);
        let flat = records(&[serde_json::json!({"a": 1, "b": {"c": "x"}}), serde_json::json!({"a": 2.5, "d": null})]);
        assert_eq!(flat.header, ["a", "b.c", "d"]);
        assert_eq!(flat.rows[1], [Cell::Number(2.5), Cell::Empty, Cell::Empty]);
    }
}
