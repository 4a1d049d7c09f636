//! The one validator of `storage-score/1` reports: what `storage-score
//! score FILE` reads and what the leaderboard server accepts pass the same
//! checks, with the same messages and the same limits.
//!
//! The input is parsed to a `serde_json::Value` and the figures checked by
//! hand, key by key, so that every error names the key at fault, what was
//! expected, and how to fix it, in one line (derived deserialization would
//! say only "invalid type: string, expected f64"). Then the typed report is
//! read with the failing path named, its detail numbers checked, and every
//! string it keeps checked ([`strings`]). Nothing here panics, whatever the
//! bytes.
//!
//! The uses differ only where they must ([`Use`]): `score` also takes a
//! bare measurements object, or figures under `measurements` with no
//! `schema`; a report that names its `schema` must name its `tool` in
//! every use; a submission must be a whole report that says what it is;
//! `show` and `compare` also take a report without figures (`doctor`'s).

mod error;
mod figures;
mod json;
mod strings;
pub mod wear;

use serde_json::{Map, Value, json};

pub use error::{InputError, TextProblem};
pub use figures::{MAX_IOPS, MAX_MB_S, as_mb_s, unit_limit};
pub use strings::{FORBIDDEN_IN_NAMES, FREE_TEXT_KEYS, MAX_NAME_CHARS, MAX_TEXT_CHARS};
pub use wear::{parse_wear, wear_from, wear_schema};

use crate::figure::Figure;
use crate::schema::{Device, MEASUREMENT_KEYS, Measurements, Report, SCHEMA};

/// Keys of a full report (docs/report.md) besides `measurements`; an object with
/// some of these and no `measurements` is a report without figures.
const REPORT_KEYS: [&str; 10] =
    ["schema", "tool", "target", "device", "profile", "details", "skipped", "score", "verdict", "notes"];

/// Who reads the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// `storage-score score`: `schema` and `tool` may be left out.
    Score,
    /// A leaderboard submission: a whole report, `schema` included.
    Submission,
    /// A saved report for `show`, `compare` and `submit`'s reading: as a
    /// submission, but figures may be absent (a `doctor --json` report).
    Saved,
}

/// What the score command works on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ScoreInput {
    /// The identification, when the input is a report that carries one.
    pub device: Option<Device>,
    pub measurements: Measurements,
    /// The report's profile (`compat`, `quick`), when it names one.
    pub profile: Option<String>,
}

impl ScoreInput {
    /// Whether the figures are comparable with PiBenchmarks: true for the
    /// `compat` profile and for input that names none (a bare measurements
    /// object is taken at its word), false for `quick` or any other profile.
    pub fn comparable(&self) -> bool {
        crate::run_profile::RunProfile::of(self.profile.as_deref()).comparable()
    }
}

/// Parses what `score` is given: a saved report or a bare measurements object.
///
/// - A report is an object with a `measurements` key: it is validated as a
///   whole ([`Use::Score`]); its `device` and `profile` are kept (the score
///   and verdict are recomputed).
/// - A bare measurements object has only measurement keys (docs/report.md#measurements).
/// - A figure may be `null` or left out (not measured); otherwise it must be
///   a finite number from 0 to what any device does in its unit.
pub fn parse_score_input(text: &str) -> Result<ScoreInput, InputError> {
    let value = json::parse(text)?;
    let Value::Object(object) = value else {
        return Err(InputError::NotAnObject { found: json::describe(&value) });
    };
    if object.is_empty() {
        return Err(InputError::EmptyObject);
    }
    if object.contains_key("measurements") {
        let report = validate(object, Use::Score)?;
        let measurements = report.measurements.unwrap_or_default();
        return Ok(ScoreInput { device: report.device, measurements, profile: report.profile });
    }
    if object.keys().all(|k| MEASUREMENT_KEYS.contains(&k.as_str())) {
        return Ok(ScoreInput { device: None, measurements: figures::measurements(&object, "")?, profile: None });
    }
    if object.keys().any(|k| REPORT_KEYS.contains(&k.as_str())) {
        return Err(InputError::NoMeasurements);
    }
    // A bare object with a key we do not know: name the first such key.
    let unknown = object.keys().find(|k| !MEASUREMENT_KEYS.contains(&k.as_str())).cloned().unwrap_or_default();
    Err(InputError::UnknownKey { path: unknown })
}

/// [`parse_score_input`] over any bytes: UTF-8 first.
pub fn parse_score_bytes(bytes: &[u8]) -> Result<ScoreInput, InputError> {
    parse_score_input(json::utf8(bytes)?)
}

/// Parses a submitted report: any bytes in, a checked [`Report`] or one
/// error out.
pub fn parse_report(bytes: &[u8]) -> Result<Report, InputError> {
    report_from(parse_json(bytes)?, Use::Submission)
}

/// Any bytes to JSON: UTF-8 first, then JSON with NaN and Infinity named.
pub fn parse_json(bytes: &[u8]) -> Result<Value, InputError> {
    json::parse(json::utf8(bytes)?)
}

/// A JSON value as a checked [`Report`] for `how` (not [`Use::Score`],
/// whose bare measurements object [`parse_score_input`] reads).
pub fn report_from(value: Value, how: Use) -> Result<Report, InputError> {
    let Value::Object(object) = value else {
        return Err(InputError::NotAnObject { found: json::describe(&value) });
    };
    if object.is_empty() {
        return Err(InputError::EmptyObject);
    }
    validate(object, how)
}

/// Checks every card's figures of a `storage-score-batch/1` report with
/// the rules and messages of a report's `measurements` (`compare` reads a
/// batch's cards as samples, so one edited card must not slip through).
pub fn batch_figures(batch: &Value) -> Result<(), InputError> {
    let Some(cards) = batch.get("cards").and_then(Value::as_array) else { return Ok(()) };
    for (i, card) in cards.iter().enumerate() {
        match card.get("figures") {
            Some(Value::Object(figures)) => {
                figures::measurements(figures, &format!("cards[{i}].figures."))?;
            }
            None | Some(Value::Null) => {}
            Some(other) => {
                return Err(InputError::WrongType {
                    path: format!("cards[{i}].figures"),
                    expected: "an object of figures",
                    found: json::describe(other),
                    hint: format!("a card's figures are written as {{\"{}\": 20.1, …}}", Figure::SeqWrite.key()),
                });
            }
        }
    }
    Ok(())
}

/// Checks a report object and reads it as a [`Report`].
pub fn validate(mut object: Map<String, Value>, how: Use) -> Result<Report, InputError> {
    // A report that says what it is says who wrote it, in every use.
    if !object.contains_key("tool") && (how != Use::Score || object.contains_key("schema")) {
        if !object.contains_key("schema") {
            return Err(InputError::MissingSchema);
        }
        if matches!(object.get("schema"), Some(Value::String(s)) if s == SCHEMA) {
            return Err(InputError::MissingTool);
        }
    }
    match object.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) => return Err(InputError::Schema { found: figures::clip(s) }),
        None | Some(Value::Null) if how == Use::Score => {
            object.insert("schema".to_owned(), json!(SCHEMA));
        }
        None => return Err(InputError::MissingSchema),
        Some(other) => {
            return Err(InputError::WrongType {
                path: "schema".to_owned(),
                expected: "the string \"storage-score/1\"",
                found: json::describe(other),
                hint: format!("a report says \"schema\": \"{SCHEMA}\""),
            });
        }
    }
    match object.get("measurements") {
        Some(Value::Object(m)) => {
            figures::measurements(m, "measurements.")?;
        }
        None | Some(Value::Null) if how == Use::Saved => {}
        None | Some(Value::Null) => return Err(InputError::NoMeasurements),
        Some(other) => {
            return Err(InputError::WrongType {
                path: "measurements".to_owned(),
                expected: "an object of figures",
                found: json::describe(other),
                hint: format!("write it as {{\"{}\": 20.1, …}}", Figure::SeqWrite.key()),
            });
        }
    }
    match object.get("profile") {
        None | Some(Value::Null | Value::String(_)) => {}
        Some(other) => {
            return Err(InputError::WrongType {
                path: "profile".to_owned(),
                expected: "a string",
                found: json::describe(other),
                hint: "write \"compat\" or \"quick\", or leave the key out".to_owned(),
            });
        }
    }
    if how == Use::Score && !object.contains_key("tool") {
        object.insert("tool".to_owned(), json!({"name": "", "version": ""}));
    }
    let report: Report = serde_path_to_error::deserialize(Value::Object(object)).map_err(|e| {
        let path = e.path().to_string();
        let detail = e.into_inner().to_string();
        if detail.contains("integer `-") {
            // A negative count or size: a number, but an impossible one.
            InputError::NegativeCount { path, detail }
        } else {
            InputError::Shape { path, detail }
        }
    })?;
    figures::details(&report)?;
    let typed = serde_json::to_value(&report)
        .map_err(|e| InputError::Shape { path: "report".to_owned(), detail: e.to_string() })?;
    strings::check(&typed)?;
    Ok(report)
}

#[cfg(test)]
mod tests;
