//! `storage-score compare A.json B.json [C.json …] [--from URL/results/ID]`
//! (docs/compare.md): reads the reports (files, or results fetched from a
//! leaderboard), compares each with the first ([`storage_session::compare`]),
//! and prints the table or the JSON, and writes
//! `--export-csv`/`--export-markdown` (one row per figure).

use std::time::Duration;

use serde::Serialize;
use storage_session::compare::{Comparison, Input, api_address, comparisons, parse};

use crate::{CompareArgs, Failure, compare_render};

/// How long to wait for a leaderboard's answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Serialize)]
struct CompareDoc<'a> {
    comparisons: &'a [Comparison],
}

pub fn compare(args: &CompareArgs) -> Result<(), Failure> {
    let count = args.reports.len() + args.from.len();
    if count < 2 {
        return Err(Failure::Usage(format!(
            "compare needs two reports or more, and got {count}: give the report to compare with first, e.g. storage-score compare old.json new.json"
        )));
    }
    let exports = crate::settings::exports(&args.export, args.json)?;
    let mut inputs = Vec::with_capacity(count);
    for name in &args.reports {
        let bytes = storage_session::saved::read(name)?;
        let value =
            storage_scoring::input::parse_json(&bytes).map_err(|e| storage_session::saved::refused(name, &e))?;
        inputs.push(parse(name, value)?);
    }
    for url in &args.from {
        inputs.push(fetch(url)?);
    }
    let comparisons = comparisons(&inputs);
    if exports.takes_stdout() {
        // The export stands in for the table.
    } else if args.json {
        let doc = CompareDoc { comparisons: &comparisons };
        crate::terminal::json_outln(&storage_session::document::encode(storage_session::document::COMPARE, &doc)?);
    } else {
        crate::terminal::out(&compare_render::render(&inputs, &comparisons));
    }
    if !exports.is_empty() {
        exports.write(&storage_session::export_sheets::compare(&comparisons))?;
    }
    Ok(())
}

fn fetch(url: &str) -> Result<Input, Failure> {
    let api = api_address(url).ok_or_else(|| {
        Failure::Usage(format!(
            "--from {url}: not a leaderboard result's address; give it as https://HOST/results/ID (the result's page) or https://HOST/api/v1/results/ID"
        ))
    })?;
    let mut notify = |line: &str| crate::terminal::errln(&format!("storage-score: {url}: {line}"));
    let value = storage_session::submit::fetch(&api, FETCH_TIMEOUT, &mut notify)?;
    parse(url, value)
}
