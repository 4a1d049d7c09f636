//! `storage-score show DOCUMENT`: any document the tool writes, printed
//! again as the command that wrote it printed it, each read through its
//! validator: a run report (and a leaderboard result), a batch report, an
//! endurance or power-loss report, a machine's doctor report, a scan. With
//! `--export-csv`/`--export-markdown`, also as a table ([`storage_session::export`]).

use serde_json::Value;
use storage_scoring::batch::BatchReport;
use storage_scoring::endurance::EnduranceReport;
use storage_scoring::power_loss::PowerLossReport;
use storage_scoring::schema::Report;
use storage_scoring::wear::WearReport;

use crate::terminal::{json_outln, out, outln};
use crate::{Failure, doctor_render, render};
use storage_session::export::Sheet;
use storage_session::export_sheets as sheets;
use storage_session::scan::Entry;

/// A document `show` read, checked.
enum Document {
    Run(Box<Report>),
    Batch(Box<BatchReport>),
    Endurance(Box<EnduranceReport>),
    PowerLoss(Box<PowerLossReport>),
    Machine(Vec<Report>),
    Scan(Vec<Entry>),
}

/// `storage-score show DOCUMENT [--json] [--export-csv FILE] [--export-markdown FILE]`.
pub fn show(args: &storage_score::args::ShowArgs) -> Result<(), Failure> {
    let exports = crate::settings::exports(&args.export, args.json)?;
    let document = read(&args.report)?;
    // An export on stdout stands in for the tables.
    if !exports.takes_stdout() {
        print(&document, args.json)?;
    }
    if !exports.is_empty() {
        exports.write(&sheet(&document)?)?;
    }
    Ok(())
}

/// The document, by its `schema`, through its validator.
fn read(name: &str) -> Result<Document, Failure> {
    let bytes = storage_session::saved::read(name)?;
    let value = storage_scoring::input::parse_json(&bytes).map_err(|e| storage_session::saved::refused(name, &e))?;
    let schema = value.get("schema").and_then(Value::as_str).unwrap_or_default().to_owned();
    Ok(match schema.as_str() {
        storage_scoring::batch::SCHEMA => {
            storage_scoring::input::batch_figures(&value).map_err(|e| storage_session::saved::refused(name, &e))?;
            Document::Batch(Box::new(serde_json::from_value(value).map_err(|e| unreadable(name, "batch report", &e))?))
        }
        s if storage_scoring::wear::is_wear_schema(s) => {
            match storage_scoring::input::wear_from(value).map_err(|e| storage_session::saved::refused(name, &e))? {
                WearReport::Endurance(r) => Document::Endurance(r),
                WearReport::PowerLoss(r) => Document::PowerLoss(r),
            }
        }
        storage_session::doctor::DOCTOR => {
            let devices = value.get("devices").and_then(Value::as_array).cloned().unwrap_or_default();
            if devices.is_empty() {
                return Err(Failure::Usage(format!("{name}: a doctor report with no devices; was it edited by hand?")));
            }
            Document::Machine(
                devices
                    .into_iter()
                    .map(|d| storage_session::saved::from_value(name, d).map(|s| s.report))
                    .collect::<Result<Vec<_>, Failure>>()?,
            )
        }
        storage_session::document::SCAN => Document::Scan(
            serde_json::from_value(value.get("devices").cloned().unwrap_or(Value::Null))
                .map_err(|e| unreadable(name, "scan", &e))?,
        ),
        _ => Document::Run(Box::new(storage_session::saved::from_value(name, value)?.report)),
    })
}

/// The document as the command that wrote it printed it, or as JSON.
fn print(document: &Document, json: bool) -> Result<(), Failure> {
    match document {
        Document::Batch(batch) => as_json_or(json, batch, || out(&crate::batch::render::table(batch))),
        Document::Endurance(r) => as_json_or(json, r, || crate::endurance_cmd::summary(r)),
        Document::PowerLoss(r) => as_json_or(json, r, || {
            outln(&storage_session::powerloss::summary(r, &r.device));
            for c in &r.cycles {
                outln(&format!(
                    "  cut {:>3}: {} written, {} acknowledged; lost {}, torn {}, misplaced {}, damaged {}; {}",
                    c.cycle,
                    c.written,
                    c.acknowledged,
                    c.lost,
                    c.torn,
                    c.misplaced,
                    c.damaged,
                    match (c.returned, c.back_after_s) {
                        (0, _) => "did not return".to_owned(),
                        (_, Some(s)) => format!("back after {s:.1} s"),
                        (_, None) => "back".to_owned(),
                    }
                ));
            }
        }),
        Document::Machine(reports) => {
            if json {
                #[derive(serde::Serialize)]
                struct Machine<'a> {
                    devices: &'a [Report],
                }
                json_outln(&storage_session::document::encode(
                    storage_session::doctor::DOCTOR,
                    &Machine { devices: reports },
                )?);
            } else {
                for (i, report) in reports.iter().enumerate() {
                    if i > 0 {
                        outln("");
                    }
                    out(&doctor_render::render(report, std::time::Duration::ZERO));
                }
            }
            Ok(())
        }
        Document::Scan(entries) => {
            #[derive(serde::Serialize)]
            struct Scan<'a> {
                devices: &'a [Entry],
            }
            match json {
                true => json_outln(&storage_session::document::encode(
                    storage_session::document::SCAN,
                    &Scan { devices: entries },
                )?),
                false => out(&crate::scan_cmd::table(entries)),
            }
            Ok(())
        }
        Document::Run(report) => {
            if json {
                json_outln(&crate::run::to_json(report)?);
            } else {
                out(&render::report(report));
                out(&doctor_render::sections(report));
            }
            Ok(())
        }
    }
}

/// The document's rows for `--export-csv` and `--export-markdown`.
fn sheet(document: &Document) -> Result<Sheet, Failure> {
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

/// The document, checked, as JSON; or as the command printed it.
fn as_json_or<T: serde::Serialize>(json: bool, doc: &T, text: impl FnOnce()) -> Result<(), Failure> {
    if json {
        let encoded =
            serde_json::to_string_pretty(doc).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
        json_outln(&encoded);
    } else {
        text();
    }
    Ok(())
}

fn unreadable(name: &str, what: &str, e: &serde_json::Error) -> Failure {
    Failure::Usage(format!("{name}: the {what} does not read as one ({e}); was it edited by hand?"))
}
