//! `storage-score-leaderboard`: parse the command line, serve until
//! SIGTERM. Exit codes: 0 after a clean stop, 1 when the server cannot
//! start or fails, 2 for bad usage.

use std::process::ExitCode;

use clap::Parser;
use storage_score_leaderboard::config::{Args, Config};

fn main() -> ExitCode {
    let config = match Config::from_args(Args::parse()) {
        Ok(config) => config,
        Err(e) => {
            eprintln!("storage-score-leaderboard: {e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("storage-score-leaderboard: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(storage_score_leaderboard::serve(config)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("storage-score-leaderboard: {e}");
            ExitCode::from(1)
        }
    }
}
