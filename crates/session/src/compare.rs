//! `compare`'s inputs and comparisons (docs/compare.md): a report, a
//! batch report (its cards' figures as samples) or a leaderboard's result,
//! read through the one validator; each compared with the first through
//! `storage_scoring::compare`; a result page's API address, and the
//! results fetched from it; and `compare --json`'s document.

use serde::Serialize;
use serde_json::Value;
use storage_scoring::compare::{self, Figure};
use storage_scoring::schema::Report;

use crate::Failure;

/// One report and what to call it.
#[derive(Debug)]
pub struct Input {
    /// The file or address as given.
    pub name: String,
    pub report: Report,
    /// When a leaderboard stored it (`created_at`), if it came from one.
    pub stored_at: Option<String>,
    /// A batch report's number of cards: `report` then holds their figures
    /// as samples (docs/compare.md#batch-reports).
    pub cards: Option<usize>,
}

/// One report set against the first.
#[derive(Debug, Serialize)]
pub struct Comparison {
    pub base: String,
    pub other: String,
    pub figures: Vec<Figure>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// How long to wait for a leaderboard's answer.
const FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// `compare A B [C …] [--from URL …]`'s inputs, counted: two or more.
pub fn check_count(count: usize) -> Result<(), Failure> {
    if count < 2 {
        return Err(Failure::Usage(format!(
            "compare needs two reports or more, and got {count}: give the report to compare with first, e.g. storage-score compare old.json new.json"
        )));
    }
    Ok(())
}

/// The reports named (files, "-" for stdin), then the leaderboard results
/// at `from`, each read through the one validator; what a fetch says
/// (a retry) goes to `errln`.
pub fn read_inputs(reports: &[String], from: &[String], errln: fn(&str)) -> Result<Vec<Input>, Failure> {
    let mut inputs = Vec::with_capacity(reports.len() + from.len());
    for name in reports {
        let bytes = crate::saved::read(name)?;
        let value = storage_scoring::input::parse_json(&bytes).map_err(|e| crate::saved::refused(name, &e))?;
        inputs.push(parse(name, value)?);
    }
    for url in from {
        let api = api_address(url).ok_or_else(|| {
            Failure::Usage(format!(
                "--from {url}: not a leaderboard result's address; give it as https://HOST/results/ID (the result's page) or https://HOST/api/v1/results/ID"
            ))
        })?;
        let mut notify = |line: &str| errln(&format!("storage-score: {url}: {line}"));
        let value = crate::submit::fetch(&api, FETCH_TIMEOUT, &mut notify)?;
        inputs.push(parse(url, value)?);
    }
    Ok(inputs)
}

/// `compare --json`.
pub fn json(comparisons: &[Comparison]) -> Result<String, Failure> {
    #[derive(Serialize)]
    struct CompareDoc<'a> {
        comparisons: &'a [Comparison],
    }
    crate::document::encode(crate::document::COMPARE, &CompareDoc { comparisons })
}

/// Every report after the first, against the first.
pub fn comparisons(inputs: &[Input]) -> Vec<Comparison> {
    let Some((base, others)) = inputs.split_first() else { return Vec::new() };
    others
        .iter()
        .map(|other| Comparison {
            base: base.name.clone(),
            other: other.name.clone(),
            figures: compare::reports(&base.report, &other.report),
            notes: compare::notes(&base.report, &other.report),
        })
        .collect()
}

/// A batch report (its cards' figures as samples), or a report or a
/// leaderboard result through the one validator ([`storage_session::saved`]).
pub fn parse(name: &str, value: Value) -> Result<Input, Failure> {
    if value.get("schema").and_then(Value::as_str) == Some(storage_scoring::batch::SCHEMA) {
        let stored_at =
            value.get("created_at").and_then(Value::as_str).map(|s| storage_upload::client::one_line(s, 40));
        storage_scoring::input::batch_figures(&value).map_err(|e| crate::saved::refused(name, &e))?;
        let batch: storage_scoring::batch::BatchReport = serde_json::from_value(value).map_err(|e| {
            Failure::Usage(format!("{name}: the batch report does not read as one ({e}); was it edited by hand?"))
        })?;
        let report = batch.as_samples();
        if report.samples.is_empty() {
            return Err(Failure::Usage(format!(
                "{name}: nothing measured: none of the batch's {} cards got as far as a measurement (refused or failed first); nothing to compare",
                batch.cards.len()
            )));
        }
        return Ok(Input { name: name.to_owned(), report, stored_at, cards: Some(batch.cards.len()) });
    }
    let saved = crate::saved::from_value(name, value)?;
    Ok(Input { name: name.to_owned(), report: saved.report, stored_at: saved.stored_at, cards: None })
}

/// The API address of a leaderboard result given as its page
/// (`…/results/ID`) or its API address (`…/api/v1/results/ID`).
pub fn api_address(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let rest = url.strip_prefix("https://").or_else(|| url.strip_prefix("http://"))?;
    let (host, path) = rest.split_once('/')?;
    let (before, id) = path.rsplit_once("results/")?;
    if host.is_empty()
        || id.is_empty()
        || !id.bytes().all(|b| b.is_ascii_digit())
        || !(before.is_empty() || before.ends_with('/'))
    {
        return None;
    }
    let scheme = &url[..url.len() - rest.len()];
    let root = before.strip_suffix("api/v1/").unwrap_or(before);
    Some(format!("{scheme}{host}/{root}api/v1/results/{id}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_pages_map_to_their_api_address() {
        assert_eq!(
            api_address("https://lb.example/results/42").as_deref(),
            Some("https://lb.example/api/v1/results/42")
        );
        assert_eq!(
            api_address("http://127.0.0.1:8080/api/v1/results/7/").as_deref(),
            Some("http://127.0.0.1:8080/api/v1/results/7")
        );
        assert_eq!(
            api_address("https://x.org/scores/results/3").as_deref(),
            Some("https://x.org/scores/api/v1/results/3"),
            "a leaderboard below a path prefix"
        );
        for bad in [
            "lb.example/results/4",
            "https://lb.example/results/",
            "https://lb.example/results/x1",
            "ftp://a/results/1",
            "https://a/myresults/1",
        ] {
            assert_eq!(api_address(bad), None, "{bad}");
        }
    }

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/reports/raspi3b-qemu-quick.json");

    #[test]
    fn two_reports_or_more_are_read_and_compared() {
        assert_eq!(check_count(1).expect_err("one").exit_code(), 2);
        assert!(check_count(2).is_ok());
        let dir = tempfile::tempdir().expect("tempdir");
        let copy = dir.path().join("again.json");
        std::fs::copy(FIXTURE, &copy).expect("copy");
        let names = [FIXTURE.to_owned(), copy.display().to_string()];
        let inputs = read_inputs(&names, &[], |_| {}).expect("read");
        assert_eq!(inputs.len(), 2);
        let found = comparisons(&inputs);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].other, names[1]);
        let doc: Value = serde_json::from_str(&json(&found).expect("json")).expect("parse");
        assert_eq!(doc["schema"], crate::document::COMPARE);
        assert_eq!(doc["comparisons"][0]["base"], FIXTURE);
    }

    #[test]
    fn a_bad_input_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "{}").expect("write");
        let name = junk.display().to_string();
        let e = read_inputs(&[FIXTURE.to_owned(), name.clone()], &[], |_| {}).expect_err("not a report");
        assert!(e.to_string().contains(&name), "{e}");
        let e = read_inputs(&[], &["https://lb.example/nothing".to_owned()], |_| {}).expect_err("not a result");
        assert!(e.to_string().starts_with("--from https://lb.example/nothing: not a leaderboard result's address"));
    }
}
