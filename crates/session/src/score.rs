//! `score FILE` (docs/score.md): a saved report or a bare measurements
//! object, read through the one validator, scored, and judged when it
//! carries identification; `score --json`'s document.

use serde::Serialize;
use storage_scoring::run_profile::RunProfile;
use storage_scoring::schema::{Score, Verdict};

use crate::Failure;

/// A file scored.
#[derive(Debug, Serialize)]
pub struct Scored {
    pub score: Score,
    /// The verdict on the class the card claims, when the input says what
    /// the card is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    /// The board the report was measured on, when it names one.
    #[serde(skip)]
    pub board: Option<String>,
    /// The kind of the published results to set the score beside.
    #[serde(skip)]
    pub kind: Option<&'static str>,
}

/// Reads `file` ("-": stdin) and scores it.
pub fn score(file: &str) -> Result<Scored, Failure> {
    let bytes = crate::saved::read(file)?;
    let input = storage_scoring::input::parse_score_bytes(&bytes).map_err(|e| crate::saved::refused(file, &e))?;
    let score = storage_scoring::score::pibenchmarks(&input.measurements, input.comparable());
    let verdict = input.device.as_ref().map(|d| {
        storage_scoring::verdict::verdict_for(Some(d), &input.measurements, &RunProfile::of(input.profile.as_deref()))
    });
    let board = storage_scoring::input::parse_json(&bytes)
        .ok()
        .and_then(|v| v.pointer("/system/board").and_then(serde_json::Value::as_str).map(str::to_owned));
    let report = storage_scoring::schema::Report { device: input.device.clone(), ..Default::default() };
    let kind = storage_scoring::reference::kind_of_report(&report);
    Ok(Scored { score, verdict, board, kind })
}

/// `score --json`: the score, and the verdict when there is one.
pub fn json(scored: &Scored) -> Result<String, Failure> {
    crate::document::encode(crate::document::SCORE, scored)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/reports/raspi3b-qemu-quick.json");

    #[test]
    fn a_report_is_scored_and_judged() {
        let scored = score(FIXTURE).expect("score");
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(FIXTURE).expect("read")).expect("json");
        assert_eq!(scored.board.as_deref(), saved.pointer("/system/board").and_then(|b| b.as_str()));
        let doc: serde_json::Value = serde_json::from_str(&json(&scored).expect("json")).expect("parse");
        assert_eq!(doc["schema"], crate::document::SCORE);
        assert!(doc.get("score").is_some());
        assert_eq!(doc.get("verdict").is_some(), scored.verdict.is_some());
        assert!(doc.get("board").is_none() && doc.get("kind").is_none(), "{doc}");
    }

    #[test]
    fn measurements_alone_are_scored_without_a_verdict() {
        let dir = tempfile::tempdir().expect("tempdir");
        let saved: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(FIXTURE).expect("read")).expect("json");
        let bare = dir.path().join("measurements.json");
        std::fs::write(&bare, saved["measurements"].to_string()).expect("write");
        let scored = score(bare.to_str().expect("utf-8")).expect("score");
        assert!(scored.verdict.is_none() && scored.board.is_none());
        let junk = dir.path().join("junk.json");
        std::fs::write(&junk, "not json").expect("write");
        assert_eq!(score(junk.to_str().expect("utf-8")).expect_err("junk").exit_code(), 2);
    }
}
