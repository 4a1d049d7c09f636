//! `storage-score compare A.json B.json [C.json …] [--from URL/results/ID]`
//! (docs/compare.md): reads the reports (files, or results fetched from a
//! leaderboard), compares each with the first through
//! `storage_scoring::compare`, and prints the table or the JSON.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use storage_scoring::compare::{self, Figure};
use storage_scoring::schema::Report;

use crate::{CompareArgs, Failure, compare_render, upload};

/// The largest report read. Reports are tens of KiB; a file far larger is
/// not one, and reading it whole would only waste memory.
const MAX_REPORT: u64 = 64 << 20;

/// How long to wait for a leaderboard's answer.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// One report and what to call it.
#[derive(Debug)]
pub struct Input {
    /// The file or address as given.
    pub name: String,
    pub report: Report,
    /// When a leaderboard stored it (`created_at`), if it came from one.
    pub stored_at: Option<String>,
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
    let mut inputs = Vec::with_capacity(count);
    for name in &args.reports {
        inputs.push(read_file(name)?);
    }
    for url in &args.from {
        inputs.push(fetch(url)?);
    }
    let comparisons = comparisons(&inputs);
    if args.json {
        let doc = CompareDoc { comparisons: &comparisons };
        crate::terminal::json_outln(&crate::document::encode(crate::document::COMPARE, &doc)?);
    } else {
        crate::terminal::out(&compare_render::render(&inputs, &comparisons));
    }
    Ok(())
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

fn read_file(name: &str) -> Result<Input, Failure> {
    // A regular file only (a FIFO would hang, /dev/zero fill memory), capped.
    // Under sudo, as the user: root's rights never read a file for them.
    let who = crate::outputs::sudo_user();
    let bytes = storage_identify::safe_fs::as_identity(who, || {
        storage_identify::safe_fs::read_file(std::path::Path::new(name), MAX_REPORT)
    })
    .map_err(|e| {
        Failure::Usage(format!("cannot read {name}: {e}; give a report written by `storage-score run --output FILE`"))
    })?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| {
        Failure::Usage(format!("{name} is not JSON ({e}); give a report written by `storage-score run --output FILE`"))
    })?;
    parse(name, value)
}

fn fetch(url: &str) -> Result<Input, Failure> {
    let api = api_address(url).ok_or_else(|| {
        Failure::Usage(format!(
            "--from {url}: not a leaderboard result's address; give it as https://HOST/results/ID (the result's page) or https://HOST/api/v1/results/ID"
        ))
    })?;
    let value = upload::fetch(&api, FETCH_TIMEOUT)?;
    parse(url, value)
}

/// A report, or a leaderboard's result that holds one (`{"report": …}`,
/// as its API answers and its JSON export has on each line).
fn parse(name: &str, value: Value) -> Result<Input, Failure> {
    let stored_at = value.get("created_at").and_then(Value::as_str).map(|s| upload::one_line(s, 40));
    let value = match value {
        Value::Object(mut map) if !map.contains_key("schema") && map.get("report").is_some_and(Value::is_object) => {
            map.remove("report").unwrap_or_default()
        }
        other => other,
    };
    if value.get("schema").and_then(Value::as_str) != Some(storage_scoring::schema::SCHEMA) {
        return Err(Failure::Usage(format!(
            "{name} is not a storage-score report (no \"schema\": \"{}\"); give a report written by `storage-score run --output FILE`",
            storage_scoring::schema::SCHEMA
        )));
    }
    let report: Report = serde_json::from_value(value).map_err(|e| {
        Failure::Usage(format!("{name}: the report does not read as one ({e}); was it edited by hand?"))
    })?;
    Ok(Input { name: name.to_owned(), report, stored_at })
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

    #[test]
    fn a_leaderboard_result_holds_its_report() {
        let result = serde_json::json!({"id": 3, "created_at": "2025-01-02T03:04:05Z",
            "report": {"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
                       "measurements": {"seq_write_mb_s": 20.5}}});
        let input = parse("r.json", result).expect("a result");
        assert_eq!(input.stored_at.as_deref(), Some("2025-01-02T03:04:05Z"));
        assert_eq!(input.report.measurements.and_then(|m| m.seq_write_mb_s), Some(20.5));
        let err = parse("x.json", serde_json::json!({"measurements": {}})).expect_err("no schema");
        assert!(err.to_string().starts_with("x.json is not a storage-score report"), "{err}");
    }
}
