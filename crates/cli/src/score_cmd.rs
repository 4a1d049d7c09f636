//! `storage-score score FILE`: score a saved report or a bare measurements
//! object, and give the verdict when the input carries identification.

use serde::Serialize;
use storage_scoring::run_profile::RunProfile;
use storage_scoring::schema::{Score, Verdict};

use crate::{Failure, ScoreArgs, render};

#[derive(Serialize)]
struct ScoreDoc {
    score: Score,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict: Option<Verdict>,
}

pub fn score(args: &ScoreArgs) -> Result<(), Failure> {
    let bytes = storage_session::saved::read(&args.file)?;
    let input = storage_scoring::input::parse_score_bytes(&bytes)
        .map_err(|e| storage_session::saved::refused(&args.file, &e))?;
    let score = storage_scoring::score::pibenchmarks(&input.measurements, input.comparable());
    let verdict = input.device.as_ref().map(|d| {
        storage_scoring::verdict::verdict_for(Some(d), &input.measurements, &RunProfile::of(input.profile.as_deref()))
    });
    if args.json {
        let doc = ScoreDoc { score, verdict };
        crate::terminal::json_outln(&storage_session::document::encode(storage_session::document::SCORE, &doc)?);
    } else {
        crate::terminal::out(&render::score_lines(&score, verdict.as_ref()));
        // The board, when the input is a report that names one.
        let board = storage_scoring::input::parse_json(&bytes)
            .ok()
            .and_then(|v| v.pointer("/system/board").and_then(serde_json::Value::as_str).map(str::to_owned));
        let report = storage_scoring::schema::Report { device: input.device.clone(), ..Default::default() };
        let kind = storage_scoring::reference::kind_of_report(&report);
        if let Some(line) = render::context_line(&score, kind, board.as_deref()) {
            crate::terminal::outln(&line);
        }
    }
    Ok(())
}
