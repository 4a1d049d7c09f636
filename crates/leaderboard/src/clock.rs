//! The server's clock, in Unix seconds: the system's, unless a test names
//! a file in `STORAGE_SCORE_LEADERBOARD_TEST_CLOCK`, whose one number is
//! then the time (read at every call, so the test moves time by rewriting
//! it). It stamps results when they arrive, and when a network joins a row
//! decides which newcomers are one burst (docs/leaderboard.md#held-results),
//! so days of arrivals are tested in seconds. Only tests set it: the
//! variable is read nowhere else and is not an option.

use std::time::{SystemTime, UNIX_EPOCH};

/// The variable naming a test's clock file.
pub const TEST_CLOCK_ENV: &str = "STORAGE_SCORE_LEADERBOARD_TEST_CLOCK";

/// Now, in Unix seconds.
pub fn unix_now() -> i64 {
    if let Some(path) = std::env::var_os(TEST_CLOCK_ENV) {
        // A test's clock that cannot be read is a broken test: say so
        // loudly rather than fall back to a time the test does not expect.
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        match text.trim().parse::<i64>() {
            Ok(now) => return now,
            Err(_) => eprintln!("{TEST_CLOCK_ENV}: {} holds no Unix time; using the system clock", text.trim()),
        }
    }
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0)
}
