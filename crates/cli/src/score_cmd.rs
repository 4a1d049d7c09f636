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
    let text = read_input(&args.file)?;
    let input =
        storage_scoring::input::parse_score_input(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.file)))?;
    let score = storage_scoring::score::pibenchmarks(&input.measurements, input.comparable());
    let verdict = input.device.as_ref().map(|d| {
        storage_scoring::verdict::verdict_for(Some(d), &input.measurements, &RunProfile::of(input.profile.as_deref()))
    });
    if args.json {
        let doc = ScoreDoc { score, verdict };
        crate::terminal::json_outln(&crate::document::encode(crate::document::SCORE, &doc)?);
    } else {
        crate::terminal::out(&render::score_lines(&score, verdict.as_ref()));
    }
    Ok(())
}

/// The most read of a report: far more than any report, far less than memory.
const INPUT_LIMIT: u64 = 64 << 20;

fn read_input(file: &str) -> Result<String, Failure> {
    // A regular file only (a FIFO or /dev/zero would hang or fill memory),
    // and never more than the limit, from stdin too.
    let result = if file == "-" {
        storage_identify::safe_fs::read_capped(std::io::stdin().lock(), INPUT_LIMIT)
    } else {
        // Under sudo, as the user: root's rights never read a file for them.
        storage_identify::safe_fs::as_identity(crate::outputs::sudo_user(), || {
            storage_identify::safe_fs::read_file(std::path::Path::new(file), INPUT_LIMIT)
        })
    };
    let bytes = result.map_err(|e| {
        Failure::Usage(format!(
            "cannot read {file}: {e}; give a report file written by `storage-score run --output FILE`, or - for stdin"
        ))
    })?;
    String::from_utf8(bytes).map_err(|_| Failure::Usage(format!("{file} is not UTF-8 text; expected a JSON report")))
}
