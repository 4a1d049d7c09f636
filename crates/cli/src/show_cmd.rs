//! `storage-score show DOCUMENT`: any document the tool writes, printed
//! again as the command that wrote it printed it, each read through its
//! validator: a run report (and a leaderboard result), a batch report, an
//! endurance or power-loss report, a machine's doctor report, a scan. With
//! `--export-csv`/`--export-markdown`, also as a table ([`storage_session::export`]).

use storage_session::saved::{Document, read_document, sheet};

use crate::terminal::{json_outln, out, outln};
use crate::{Failure, doctor_render, render};

/// `storage-score show DOCUMENT [--json] [--export-csv FILE] [--export-markdown FILE]`.
pub fn show(args: &storage_score::args::ShowArgs) -> Result<(), Failure> {
    let exports = crate::settings::exports(&args.export, args.json)?;
    let document = read_document(&args.report)?;
    // An export on stdout stands in for the tables.
    if !exports.takes_stdout() {
        print(&document, args.json)?;
    }
    if !exports.is_empty() {
        exports.write(&sheet(&document)?)?;
    }
    Ok(())
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
                json_outln(&storage_session::doctor::machine_json(reports)?);
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
            match json {
                true => json_outln(&storage_session::scan::json(entries)?),
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
