//! `storage-score compare A.json B.json [C.json …] [--from URL/results/ID]`
//! (docs/compare.md): the reports are read (files, or results fetched from
//! a leaderboard) and compared with the first by
//! [`storage_session::compare`]; here the table or the JSON is printed,
//! and `--export-csv`/`--export-markdown` written (one row per figure).

use storage_session::compare::{check_count, comparisons, read_inputs};

use crate::{CompareArgs, Failure, compare_render};

pub fn compare(args: &CompareArgs) -> Result<(), Failure> {
    check_count(args.reports.len() + args.from.len())?;
    let exports = crate::settings::exports(&args.export, args.json)?;
    let inputs = read_inputs(&args.reports, &args.from, crate::terminal::errln)?;
    let comparisons = comparisons(&inputs);
    if exports.takes_stdout() {
        // The export stands in for the table.
    } else if args.json {
        crate::terminal::json_outln(&storage_session::compare::json(&comparisons)?);
    } else {
        crate::terminal::out(&compare_render::render(&inputs, &comparisons));
    }
    if !exports.is_empty() {
        exports.write(&storage_session::export_sheets::compare(&comparisons))?;
    }
    Ok(())
}
