//! Reading a saved report, the one way `score`, `compare`, `show` and
//! `submit` do it: the file as the user behind sudo (or standard input for
//! `-`), capped, then `storage_scoring::input`, the validator the
//! leaderboard's intake uses too, so one file gets one message everywhere.

use serde_json::Value;
use storage_scoring::input::{self, InputError, Use};
use storage_scoring::schema::Report;

use crate::Failure;

/// The most read of a report: far more than any report (tens of KiB), far
/// less than memory.
pub const LIMIT: u64 = 64 << 20;

/// A report and, when it came from a leaderboard, when that stored it.
pub struct Saved {
    pub report: Report,
    /// The leaderboard's `created_at`, when the input was one of its results.
    pub stored_at: Option<String>,
}

/// The bytes of `name`, or of standard input for `-`.
pub fn read(name: &str) -> Result<Vec<u8>, Failure> {
    // A regular file only (a FIFO would hang, /dev/zero fill memory), and
    // never more than the limit, from stdin too.
    let result = if name == "-" {
        storage_platform::safe_fs::read_capped(std::io::stdin().lock(), LIMIT)
    } else {
        // Under sudo, as the user: root's rights never read a file for them.
        storage_platform::safe_fs::as_identity(storage_platform::sudo::sudo_user(), || {
            storage_platform::safe_fs::read_file(std::path::Path::new(name), LIMIT)
        })
    };
    result.map_err(|e| {
        Failure::Usage(format!(
            "cannot read {name}: {e}; give a report written by `storage-score run --output FILE`, or - for standard input"
        ))
    })
}

/// A report, or a leaderboard's result that holds one (`{"report": …}`, as
/// its API answers and its JSON export has on each line).
pub fn from_value(name: &str, value: Value) -> Result<Saved, Failure> {
    let stored_at = value.get("created_at").and_then(Value::as_str).map(|s| storage_upload::client::one_line(s, 40));
    let value = match value {
        Value::Object(mut map) if !map.contains_key("schema") && map.get("report").is_some_and(Value::is_object) => {
            map.remove("report").unwrap_or_default()
        }
        other => other,
    };
    let report = input::report_from(value, Use::Saved).map_err(|e| refused(name, &e))?;
    Ok(Saved { report, stored_at })
}

/// The validator's one line, after the input's name (exit 2).
pub fn refused(name: &str, e: &InputError) -> Failure {
    Failure::Usage(format!("{name}: {e}"))
}

#[cfg(test)]
mod tests {
    use storage_scoring::figure::Figure;

    #[test]
    fn a_leaderboard_result_holds_its_report() {
        let result = serde_json::json!({"id": 3, "created_at": "2025-01-02T03:04:05Z",
            "report": {"schema": "storage-score/1", "tool": {"name": "storage-score", "version": "0.1.0"},
                       "measurements": {"seq_write_mb_s": 20.5}}});
        let Ok(saved) = super::from_value("r.json", result) else { panic!("a result") };
        assert_eq!(saved.stored_at.as_deref(), Some("2025-01-02T03:04:05Z"));
        assert_eq!(saved.report.measurements.and_then(|m| m[Figure::SeqWrite]), Some(20.5));
        let Err(err) = super::from_value("x.json", serde_json::json!({"measurements": {}})) else {
            panic!("no schema")
        };
        assert!(err.to_string().starts_with("x.json: schema: the key is missing"), "{err}");
    }
}
