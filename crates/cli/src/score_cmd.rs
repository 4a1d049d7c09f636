//! `storage-score score FILE`: score a saved report or a bare measurements
//! object, and give the verdict when the input carries identification.

use std::io::Read;

use serde::Serialize;
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
    let verdict = input
        .device
        .as_ref()
        .map(|d| storage_scoring::verdict::verdict_for(Some(d), &input.measurements, input.profile.as_deref()));
    if args.json {
        let doc = ScoreDoc { score, verdict };
        let json = serde_json::to_string_pretty(&doc).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", render::score_lines(&score, verdict.as_ref()));
    }
    Ok(())
}

fn read_input(file: &str) -> Result<String, Failure> {
    let mut bytes = Vec::new();
    let result = if file == "-" {
        std::io::stdin().read_to_end(&mut bytes).map(drop)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut bytes)).map(drop)
    };
    result.map_err(|e| {
        Failure::Usage(format!(
            "cannot read {file}: {e}; give a report file written by `storage-score run --output FILE`, or - for stdin"
        ))
    })?;
    String::from_utf8(bytes).map_err(|_| Failure::Usage(format!("{file} is not UTF-8 text; expected a JSON report")))
}
