//! `storage-score score FILE`: the score of a saved report or a bare
//! measurements object, and the verdict when the input carries
//! identification ([`storage_session::score`]), printed.

use crate::{Failure, ScoreArgs, render};

pub fn score(args: &ScoreArgs) -> Result<(), Failure> {
    let scored = storage_session::score::score(&args.file)?;
    if args.json {
        crate::terminal::json_outln(&storage_session::score::json(&scored)?);
    } else {
        crate::terminal::out(&render::score_lines(&scored.score, scored.verdict.as_ref()));
        // The board, when the input is a report that names one.
        if let Some(line) = render::context_line(&scored.score, scored.kind, scored.board.as_deref()) {
            crate::terminal::outln(&line);
        }
    }
    Ok(())
}
