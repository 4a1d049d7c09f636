//! `storage-score show DOCUMENT`: any document the tool writes, printed
//! again as the command that wrote it printed it, each read through its
//! validator: a run report (and a leaderboard result), a batch report, an
//! endurance or power-loss report, a machine's doctor report, a scan.

use serde_json::Value;
use storage_scoring::batch::BatchReport;
use storage_scoring::wear::WearReport;

use crate::terminal::{json_outln, out, outln};
use crate::{Failure, doctor_render, render};

/// `storage-score show DOCUMENT [--json]`.
pub fn show(args: &storage_score::args::ShowArgs) -> Result<(), Failure> {
    let name = &args.report;
    let bytes = crate::saved::read(name)?;
    let value = storage_scoring::input::parse_json(&bytes).map_err(|e| crate::saved::refused(name, &e))?;
    let schema = value.get("schema").and_then(Value::as_str).unwrap_or_default().to_owned();
    match schema.as_str() {
        storage_scoring::batch::SCHEMA => {
            storage_scoring::input::batch_figures(&value).map_err(|e| crate::saved::refused(name, &e))?;
            let batch: BatchReport = serde_json::from_value(value).map_err(|e| unreadable(name, "batch report", &e))?;
            print(args.json, &batch, || out(&crate::batch::render::table(&batch)))
        }
        s if storage_scoring::wear::is_wear_schema(s) => {
            match storage_scoring::input::wear_from(value).map_err(|e| crate::saved::refused(name, &e))? {
                WearReport::Endurance(r) => print(args.json, &r, || crate::endurance_cmd::summary(&r)),
                WearReport::PowerLoss(r) => print(args.json, &r, || {
                    outln(&crate::powerloss_cmd::summary(&r, &r.device));
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
            }
        }
        crate::doctor_cmd::DOCTOR => {
            let devices = value.get("devices").and_then(Value::as_array).cloned().unwrap_or_default();
            if devices.is_empty() {
                return Err(Failure::Usage(format!("{name}: a doctor report with no devices; was it edited by hand?")));
            }
            let reports = devices
                .into_iter()
                .map(|d| crate::saved::from_value(name, d).map(|s| s.report))
                .collect::<Result<Vec<_>, Failure>>()?;
            if args.json {
                #[derive(serde::Serialize)]
                struct Machine<'a> {
                    devices: &'a [storage_scoring::schema::Report],
                }
                json_outln(&crate::document::encode(crate::doctor_cmd::DOCTOR, &Machine { devices: &reports })?);
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
        crate::document::SCAN => {
            let entries: Vec<crate::scan_cmd::Entry> =
                serde_json::from_value(value.get("devices").cloned().unwrap_or(Value::Null))
                    .map_err(|e| unreadable(name, "scan", &e))?;
            #[derive(serde::Serialize)]
            struct Scan<'a> {
                devices: &'a [crate::scan_cmd::Entry],
            }
            match args.json {
                true => json_outln(&crate::document::encode(crate::document::SCAN, &Scan { devices: &entries })?),
                false => out(&crate::scan_cmd::table(&entries)),
            }
            Ok(())
        }
        _ => {
            let report = crate::saved::from_value(name, value)?.report;
            if args.json {
                json_outln(&crate::run::to_json(&report)?);
            } else {
                out(&render::report(&report));
                out(&doctor_render::sections(&report));
            }
            Ok(())
        }
    }
}

/// The document, checked, as JSON; or as the command printed it.
fn print<T: serde::Serialize>(json: bool, doc: &T, text: impl FnOnce()) -> Result<(), Failure> {
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
