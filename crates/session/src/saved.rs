//! Reading a saved report, the one way `score`, `compare`, `show` and
//! `submit` do it: the file as the user behind sudo (or standard input for
//! `-`), capped, then `storage_scoring::input`, the validator the
//! leaderboard's intake uses too, so one file gets one message everywhere;
//! and any document `show` takes ([`Document`]), with its export rows.

use serde_json::Value;
use storage_scoring::batch::BatchReport;
use storage_scoring::endurance::EnduranceReport;
use storage_scoring::input::{self, InputError, Use};
use storage_scoring::power_loss::PowerLossReport;
use storage_scoring::schema::Report;
use storage_scoring::wear::WearReport;

use crate::Failure;
use crate::export::Sheet;
use crate::export_sheets as sheets;
use crate::scan::Entry;

/// The most read of a report: far more than any report (tens of KiB), far
/// less than memory.
pub const LIMIT: u64 = 64 << 20;

/// A report and, when it came from a leaderboard, when that stored it.
#[derive(Debug)]
pub struct Saved {
    pub report: Report,
    /// The leaderboard's `created_at`, when the input was one of its results.
    pub stored_at: Option<String>,
}

/// The bytes of `name`, or of standard input for `-`.
pub fn read(name: &str) -> Result<Vec<u8>, Failure> {
    // A regular file only (a FIFO would hang, /dev/zero fill memory), and
    // never more than the limit, from stdin too.
    let result = if name == "-" {
        storage_platform::safe_fs::read_capped(std::io::stdin().lock(), LIMIT)
    } else {
        // Under sudo, as the user: root's rights never read a file for them.
        storage_platform::safe_fs::as_identity(storage_platform::sudo::sudo_user(), || {
            storage_platform::safe_fs::read_file(std::path::Path::new(name), LIMIT)
        })
    };
    result.map_err(|e| {
        Failure::Usage(format!(
            "cannot read {name}: {e}; give a report written by `storage-score run --output FILE`, or - for standard input"
        ))
    })
}

/// A report, or a leaderboard's result that holds one (`{"report": …}`, as
/// its API answers and its JSON export has on each line).
pub fn from_value(name: &str, value: Value) -> Result<Saved, Failure> {
    let stored_at = value.get("created_at").and_then(Value::as_str).map(|s| storage_upload::client::one_line(s, 40));
    let value = match value {
        Value::Object(mut map) if !map.contains_key("schema") && map.get("report").is_some_and(Value::is_object) => {
            map.remove("report").unwrap_or_default()
        }
        other => other,
    };
    let report = input::report_from(value, Use::Saved).map_err(|e| refused(name, &e))?;
    Ok(Saved { report, stored_at })
}

/// The validator's one line, after the input's name (exit 2).
pub fn refused(name: &str, e: &InputError) -> Failure {
    Failure::Usage(format!("{name}: {e}"))
}

/// A document `show` read, checked.
#[derive(Debug)]
pub enum Document {
    Run(Box<Report>),
    Batch(Box<BatchReport>),
    Endurance(Box<EnduranceReport>),
    PowerLoss(Box<PowerLossReport>),
    Machine(Vec<Report>),
    Scan(Vec<Entry>),
}

/// The document, by its `schema`, through its validator.
pub fn read_document(name: &str) -> Result<Document, Failure> {
    let bytes = read(name)?;
    let value = storage_scoring::input::parse_json(&bytes).map_err(|e| refused(name, &e))?;
    let schema = value.get("schema").and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(match schema.as_str() {
        storage_scoring::batch::SCHEMA => {
            storage_scoring::input::batch_figures(&value).map_err(|e| refused(name, &e))?;
            Document::Batch(Box::new(serde_json::from_value(value).map_err(|e| unreadable(name, "batch report", &e))?))
        }
        s if storage_scoring::wear::is_wear_schema(s) => {
            match storage_scoring::input::wear_from(value).map_err(|e| refused(name, &e))? {
                WearReport::Endurance(r) => Document::Endurance(r),
                WearReport::PowerLoss(r) => Document::PowerLoss(r),
            }
        }
        crate::doctor::DOCTOR => {
            let devices = value.get("devices").and_then(Value::as_array).cloned().unwrap_or_default();
            if devices.is_empty() {
                return Err(Failure::Usage(format!("{name}: a doctor report with no devices; was it edited by hand?")));
            }
            Document::Machine(
                devices
                    .into_iter()
                    .map(|d| from_value(name, d).map(|s| s.report))
                    .collect::<Result<Vec<_>, Failure>>()?,
            )
        }
        crate::document::SCAN => Document::Scan(
            serde_json::from_value(value.get("devices").cloned().unwrap_or(Value::Null))
                .map_err(|e| unreadable(name, "scan", &e))?,
        ),
        _ => Document::Run(Box::new(from_value(name, value)?.report)),
    })
}

/// The document's rows for `--export-csv` and `--export-markdown`.
pub fn sheet(document: &Document) -> Result<Sheet, Failure> {
    let values = |items: Result<Value, serde_json::Error>| match items {
        Ok(Value::Array(items)) => Ok(items),
        Ok(_) => Ok(Vec::new()),
        Err(e) => Err(Failure::Run(format!("cannot encode the rows: {e}"))),
    };
    Ok(match document {
        Document::Run(report) => sheets::reports(std::slice::from_ref(report)),
        Document::Machine(reports) => sheets::reports(reports),
        Document::Batch(batch) => sheets::batch(batch),
        Document::Scan(entries) => sheets::scan(entries),
        Document::Endurance(r) => sheets::records(&values(serde_json::to_value(&r.passes))?),
        Document::PowerLoss(r) => sheets::records(&values(serde_json::to_value(&r.cycles))?),
    })
}

fn unreadable(name: &str, what: &str, e: &serde_json::Error) -> Failure {
    Failure::Usage(format!("{name}: the {what} does not read as one ({e}); was it edited by hand?"))
}

#[cfg(test)]
mod tests {
    use storage_scoring::figure::Figure;

    #[test]
    fn a_leaderboard_result_holds_its_report() {
        let result = serde_json::json!({"id": 3, "created_at": "2025-01-02T03:04:05Z",
            "report": {"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
                       "measurements": {"seq_write_mb_s": 20.5}}});
        let Ok(saved) = super::from_value("r.json", result) else { panic!("a result") };
        assert_eq!(saved.stored_at.as_deref(), Some("2025-01-02T03:04:05Z"));
        assert_eq!(saved.report.measurements.and_then(|m| m[Figure::SeqWrite]), Some(20.5));
        let Err(err) = super::from_value("x.json", serde_json::json!({"measurements": {}})) else {
            panic!("no schema")
        };
        assert!(err.to_string().starts_with("x.json: schema: the key is missing"), "{err}");
    }
}
