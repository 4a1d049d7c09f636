//! Reading what `storage-score score FILE` is given: a saved report or a bare
//! measurements object.
//!
//! The text is parsed to a `serde_json::Value` and checked by hand, key by
//! key, so that every error names the key at fault, what was expected, and
//! how to fix it, in one line. Derived deserialization would say only
//! "invalid type: string, expected f64" without the key. Nothing here panics,
//! whatever the input.

use std::fmt;

use serde_json::{Map, Value};

use crate::schema::{Device, MEASUREMENT_KEYS, Measurements, SCHEMA};

/// The largest figure accepted. No storage device comes near it (1e15 KiB/s
/// is an exabyte per second); a larger figure means a damaged report, and
/// refusing it keeps the score's arithmetic far from overflow.
pub const MAX_FIGURE: f64 = 1e15;

/// Keys of a full report (docs/report.md) besides `measurements`; an object with
/// some of these and no `measurements` is a report without figures.
const REPORT_KEYS: [&str; 10] =
    ["schema", "tool", "target", "device", "profile", "details", "skipped", "score", "verdict", "notes"];

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
        matches!(self.profile.as_deref(), None | Some("compat"))
    }
}

/// Why the input cannot be scored. `Display` is one line: the key at fault,
/// what was expected, and how to fix it.
#[derive(Debug, Clone, PartialEq)]
pub enum InputError {
    /// Nothing but whitespace.
    Empty,
    /// Not JSON. `line` and `column` are 1-based, as serde_json reports them.
    NotJson { line: usize, column: usize, detail: String },
    /// JSON has no NaN or Infinity; the text tried to use one.
    NonFinite { line: usize, column: usize, token: String },
    /// A number too large for a double (e.g. `1e400`).
    NumberOutOfRange { line: usize, column: usize },
    /// Valid JSON, but not an object.
    NotAnObject { found: &'static str },
    /// `{}`.
    EmptyObject,
    /// An object that looks like a report but has no `measurements`.
    NoMeasurements,
    /// A value of the wrong JSON type.
    WrongType { path: String, expected: &'static str, found: &'static str, hint: String },
    /// A figure below zero.
    Negative { path: String, value: f64 },
    /// A figure above [`MAX_FIGURE`].
    TooLarge { path: String, value: f64 },
    /// A key that is not a measurement key, in a measurements object.
    UnknownKey { path: String },
    /// A `schema` other than `storage-score/1`.
    Schema { found: String },
    /// The `device` block does not match the schema.
    Device { detail: String },
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const EXPECTED: &str = "expected a storage-score report or a measurements object";
        match self {
            InputError::Empty => {
                write!(f, "the input is empty: {EXPECTED}; save one with `storage-score run --json --output FILE`")
            }
            InputError::NotJson { line, column, detail } => write!(
                f,
                "the input is not valid JSON (line {line}, column {column}: {detail}): {EXPECTED}; check the file is the one `storage-score run --json` wrote"
            ),
            InputError::NonFinite { line, column, token } => write!(
                f,
                "the input is not valid JSON (line {line}, column {column}): `{token}` is not a JSON number, as JSON has no NaN or Infinity; write the measured figure as a number, or leave the key out if it was not measured"
            ),
            InputError::NumberOutOfRange { line, column } => write!(
                f,
                "the number at line {line}, column {column} is too large to be a figure (beyond the range of a double); correct it or leave the key out"
            ),
            InputError::NotAnObject { found } => write!(
                f,
                "the input is {found}, not an object: {EXPECTED}, e.g. {{\"seq_write_mb_s\": 20.1, \"rand_read_4k_qd64_iops\": 3000}}"
            ),
            InputError::EmptyObject => write!(
                f,
                "the input is an empty object: {EXPECTED} with at least one of the keys {}",
                MEASUREMENT_KEYS.join(", ")
            ),
            InputError::NoMeasurements => write!(
                f,
                "measurements: the report has no \"measurements\" key, so there is nothing to score; run `storage-score run --json --output FILE` to make a report with figures"
            ),
            InputError::WrongType { path, expected, found, hint } => {
                write!(f, "{path}: expected {expected}, got {found}; {hint}")
            }
            InputError::Negative { path, value } => write!(
                f,
                "{path}: expected a figure of 0 or more, got {value}; a measured rate cannot be negative, so correct the figure or leave the key out"
            ),
            InputError::TooLarge { path, value } => write!(
                f,
                "{path}: expected a figure of at most {MAX_FIGURE:e}, got {value:e}, which no storage device measures; the report looks damaged, so correct the figure or leave the key out"
            ),
            InputError::UnknownKey { path } => write!(
                f,
                "{path}: unknown measurement key; expected one of {}; correct the key or remove it",
                MEASUREMENT_KEYS.join(", ")
            ),
            InputError::Schema { found } => write!(
                f,
                "schema: expected \"{SCHEMA}\", got \"{found}\"; {}",
                if found.starts_with("storage-score/") {
                    "the report comes from another version of storage-score: score it with that version, or upgrade"
                } else {
                    "this is not a storage-score report"
                }
            ),
            InputError::Device { detail } => write!(
                f,
                "device: {detail}; the identification block does not match the storage-score/1 schema: fix it, or remove the \"device\" key to score the figures alone"
            ),
        }
    }
}

impl std::error::Error for InputError {}

/// Parses a saved report or a bare measurements object.
///
/// - A report is an object with a `measurements` key; its `device` and
///   `profile` are kept, other report keys are ignored (the score and verdict
///   are recomputed).
/// - A bare measurements object has only measurement keys (docs/report.md#measurements).
/// - A figure may be `null` or left out (not measured); otherwise it must be
///   a finite number from 0 to [`MAX_FIGURE`].
pub fn parse_score_input(text: &str) -> Result<ScoreInput, InputError> {
    if text.trim().is_empty() {
        return Err(InputError::Empty);
    }
    let value: Value = serde_json::from_str(text).map_err(|e| json_error(text, &e))?;
    let Value::Object(object) = value else {
        return Err(InputError::NotAnObject { found: describe(&value) });
    };
    if object.is_empty() {
        return Err(InputError::EmptyObject);
    }
    if let Some(measurements) = object.get("measurements") {
        return parse_report(&object, measurements);
    }
    if object.keys().all(|k| MEASUREMENT_KEYS.contains(&k.as_str())) {
        return Ok(ScoreInput { device: None, measurements: parse_measurements(&object, "")?, profile: None });
    }
    if object.keys().any(|k| REPORT_KEYS.contains(&k.as_str())) {
        return Err(InputError::NoMeasurements);
    }
    // A bare object with a key we do not know: name the first such key.
    let unknown = object.keys().find(|k| !MEASUREMENT_KEYS.contains(&k.as_str())).cloned().unwrap_or_default();
    Err(InputError::UnknownKey { path: unknown })
}

fn parse_report(object: &Map<String, Value>, measurements: &Value) -> Result<ScoreInput, InputError> {
    match object.get("schema") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) => return Err(InputError::Schema { found: s.clone() }),
        Some(other) => {
            return Err(InputError::WrongType {
                path: "schema".to_owned(),
                expected: "a string",
                found: describe(other),
                hint: format!("a report says \"schema\": \"{SCHEMA}\""),
            });
        }
    }
    let measurements = match measurements {
        Value::Object(m) => parse_measurements(m, "measurements.")?,
        Value::Null => return Err(InputError::NoMeasurements),
        other => {
            return Err(InputError::WrongType {
                path: "measurements".to_owned(),
                expected: "an object of figures",
                found: describe(other),
                hint: "write it as {\"seq_write_mb_s\": 20.1, …}".to_owned(),
            });
        }
    };
    let profile = match object.get("profile") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(InputError::WrongType {
                path: "profile".to_owned(),
                expected: "a string",
                found: describe(other),
                hint: "write \"compat\" or \"quick\", or leave the key out".to_owned(),
            });
        }
    };
    let device = match object.get("device") {
        None | Some(Value::Null) => None,
        Some(d @ Value::Object(_)) => Some(
            serde_json::from_value::<Device>(d.clone()).map_err(|e| InputError::Device { detail: e.to_string() })?,
        ),
        Some(other) => {
            return Err(InputError::WrongType {
                path: "device".to_owned(),
                expected: "an object",
                found: describe(other),
                hint: "remove the \"device\" key to score the figures alone".to_owned(),
            });
        }
    };
    Ok(ScoreInput { device, measurements, profile })
}

/// Checks each figure of a measurements object; `prefix` is the path to it
/// (`measurements.` in a report, empty for a bare object).
fn parse_measurements(object: &Map<String, Value>, prefix: &str) -> Result<Measurements, InputError> {
    let mut m = Measurements::default();
    for (key, value) in object {
        let path = format!("{prefix}{key}");
        if !MEASUREMENT_KEYS.contains(&key.as_str()) {
            return Err(InputError::UnknownKey { path });
        }
        let figure = match value {
            Value::Null => continue,
            Value::Number(n) => match n.as_f64() {
                Some(v) => v,
                // serde_json without arbitrary_precision always has an f64;
                // say so plainly if that ever changes.
                None => {
                    return Err(InputError::WrongType {
                        path,
                        expected: "a number a double can hold",
                        found: "a number out of range",
                        hint: "correct the figure or leave the key out".to_owned(),
                    });
                }
            },
            Value::String(s) => {
                let t = s.trim();
                let lower = t.to_ascii_lowercase();
                let hint = if ["nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"]
                    .contains(&lower.as_str())
                {
                    format!(
                        "\"{t}\" is not a measured figure: write the figure as a number, or leave the key out if it was not measured"
                    )
                } else if t.parse::<f64>().is_ok_and(f64::is_finite) {
                    format!("write it without quotes: \"{key}\": {t}")
                } else {
                    "write the figure as a bare number such as 20.1".to_owned()
                };
                return Err(InputError::WrongType { path, expected: "a number", found: "a string", hint });
            }
            other => {
                return Err(InputError::WrongType {
                    path,
                    expected: "a number",
                    found: describe(other),
                    hint: "write the figure as a bare number such as 20.1".to_owned(),
                });
            }
        };
        // serde_json never yields a non-finite f64, but guard anyway: the
        // score must not see one.
        if !figure.is_finite() {
            return Err(InputError::WrongType {
                path,
                expected: "a finite number",
                found: "a non-finite number",
                hint: "write the measured figure, or leave the key out".to_owned(),
            });
        }
        if figure < 0.0 {
            return Err(InputError::Negative { path, value: figure });
        }
        if figure > MAX_FIGURE {
            return Err(InputError::TooLarge { path, value: figure });
        }
        m.set(key, figure);
    }
    Ok(m)
}

/// "a string", "an array", … for messages.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a JSON array",
        Value::Object(_) => "an object",
    }
}

/// Turns a serde_json syntax error into an [`InputError`], recognising the
/// NaN/Infinity tokens that other JSON writers (Python's json, JavaScript's
/// String()) emit and that JSON does not allow.
fn json_error(text: &str, e: &serde_json::Error) -> InputError {
    let (line, column) = (e.line(), e.column());
    let message = e.to_string();
    // serde_json appends " at line L column C"; the position is given apart.
    let detail = match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    };
    if detail.starts_with("number out of range") {
        return InputError::NumberOutOfRange { line, column };
    }
    if let Some(token) = non_finite_token(text, line, column) {
        return InputError::NonFinite { line, column, token };
    }
    InputError::NotJson { line, column, detail }
}

/// The NaN or Infinity spelling near the error position, if any.
fn non_finite_token(text: &str, line: usize, column: usize) -> Option<String> {
    let line_text = text.lines().nth(line.checked_sub(1)?)?;
    // Byte window around the column (serde_json counts bytes); decoded
    // lossily so that a cut through a multibyte character cannot panic.
    let bytes = line_text.as_bytes();
    let start = column.saturating_sub(3).min(bytes.len());
    let end = column.saturating_add(12).min(bytes.len());
    let window = String::from_utf8_lossy(&bytes[start..end]).to_string();
    let lower = window.to_ascii_lowercase();
    for token in ["-infinity", "+infinity", "infinity", "-inf", "+inf", "inf", "-nan", "nan"] {
        if let Some(i) = lower.find(token) {
            // Report it as written.
            return Some(window.get(i..i + token.len()).unwrap_or(token).to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> InputError {
        parse_score_input(text).expect_err(text)
    }

    #[test]
    fn empty_input() {
        for text in ["", "   \n\t"] {
            let e = err(text);
            assert_eq!(e, InputError::Empty);
            assert!(
                e.to_string()
                    .starts_with("the input is empty: expected a storage-score report or a measurements object")
            );
        }
    }

    #[test]
    fn not_objects() {
        assert_eq!(err("[]"), InputError::NotAnObject { found: "a JSON array" });
        assert_eq!(err("42"), InputError::NotAnObject { found: "a number" });
        assert_eq!(err("\"x\""), InputError::NotAnObject { found: "a string" });
        assert_eq!(err("null"), InputError::NotAnObject { found: "null" });
        assert_eq!(err("true"), InputError::NotAnObject { found: "a boolean" });
        assert!(err("[]").to_string().starts_with("the input is a JSON array, not an object"));
        assert_eq!(err("{}"), InputError::EmptyObject);
    }

    #[test]
    fn not_json_names_the_position() {
        let e = err("{\"seq_write_mb_s\": 20.1,\n  oops}");
        match &e {
            InputError::NotJson { line, column, .. } => assert_eq!((*line, *column), (2, 3)),
            other => panic!("{other:?}"),
        }
        let msg = e.to_string();
        assert!(msg.contains("line 2, column 3"), "{msg}");
        assert!(!msg.contains('\n'));
        assert!(matches!(err("{"), InputError::NotJson { .. }));
    }

    #[test]
    fn string_where_a_number_belongs() {
        let e = err(r#"{"measurements": {"seq_write_mb_s": "20.1"}}"#);
        assert_eq!(
            e.to_string(),
            "measurements.seq_write_mb_s: expected a number, got a string; write it without quotes: \"seq_write_mb_s\": 20.1"
        );
        let e = err(r#"{"seq_write_mb_s": "fast"}"#);
        assert!(e.to_string().starts_with("seq_write_mb_s: expected a number, got a string;"), "{e}");
        let e = err(r#"{"seq_write_mb_s": [1]}"#);
        assert!(e.to_string().starts_with("seq_write_mb_s: expected a number, got a JSON array;"), "{e}");
        let e = err(r#"{"measurements": [1]}"#);
        assert!(e.to_string().starts_with("measurements: expected an object of figures, got a JSON array"), "{e}");
        let e = err(r#"{"measurements": {}, "profile": 3}"#);
        assert!(e.to_string().starts_with("profile: expected a string, got a number"), "{e}");
        let e = err(r#"{"measurements": {}, "device": "sd"}"#);
        assert!(e.to_string().starts_with("device: expected an object, got a string"), "{e}");
    }

    #[test]
    fn negative_figures() {
        let e = err(r#"{"rand_read_4k_qd64_iops": -5}"#);
        assert_eq!(e, InputError::Negative { path: "rand_read_4k_qd64_iops".into(), value: -5.0 });
        assert!(e.to_string().starts_with("rand_read_4k_qd64_iops: expected a figure of 0 or more, got -5;"));
        // -0 is zero.
        let ok = parse_score_input(r#"{"rand_read_4k_qd64_iops": -0.0}"#).unwrap();
        assert_eq!(ok.measurements.rand_read_4k_qd64_iops, Some(0.0));
    }

    #[test]
    fn nan_and_infinity() {
        for (text, token) in [
            (r#"{"seq_write_mb_s": NaN}"#, "NaN"),
            (r#"{"seq_write_mb_s": nan}"#, "nan"),
            (r#"{"seq_write_mb_s": Infinity}"#, "Infinity"),
            (r#"{"seq_write_mb_s": -Infinity}"#, "-Infinity"),
            ("{\n  \"measurements\": {\"seq_write_mb_s\": 1,\n  \"rand_read_4k_qd64_iops\": NaN}}", "NaN"),
        ] {
            let e = err(text);
            match &e {
                InputError::NonFinite { token: t, .. } => assert_eq!(t, token, "{text}"),
                other => panic!("{text}: {other:?}"),
            }
            let msg = e.to_string();
            assert!(msg.contains("JSON has no NaN or Infinity"), "{msg}");
        }
        // Quoted, it is a string: say why it cannot be a figure.
        let e = err(r#"{"seq_write_mb_s": "NaN"}"#);
        assert!(e.to_string().contains("\"NaN\" is not a measured figure"), "{e}");
    }

    #[test]
    fn huge_numbers() {
        // Beyond f64: serde_json refuses it; say so.
        let e = err(r#"{"seq_write_mb_s": 1e400}"#);
        assert!(matches!(e, InputError::NumberOutOfRange { line: 1, .. }), "{e:?}");
        // Within f64 but beyond any device: refused before it reaches the score.
        let e = err(r#"{"seq_write_mb_s": 1e308}"#);
        assert_eq!(e, InputError::TooLarge { path: "seq_write_mb_s".into(), value: 1e308 });
        assert!(e.to_string().starts_with("seq_write_mb_s: expected a figure of at most 1e15, got 1e308"), "{e}");
        // The limit itself is accepted, and scores without overflow.
        let ok = parse_score_input(
            r#"{"seq_write_mb_s": 1e15, "rand_read_4k_qd64_iops": 1e15, "rand_write_4k_qd64_iops": 1e15,
                "seq_read_4k_qd1_kib_s": 1e15, "seq_write_4k_qd1_kib_s": 1e15,
                "rand_read_4k_qd1_kib_s": 1e15, "rand_write_4k_qd1_kib_s": 1e15}"#,
        )
        .unwrap();
        let s = crate::score::pibenchmarks(&ok.measurements, true);
        // dd's figure from 1000 MB/s on is scored as dd prints it, in GB/s
        // (see score.rs): 1024 * 1e12 + (4 + 10 + 1 + 1 + 4 + 10) * 1e15,
        // / 100 = 310.24 * 1e12
        assert_eq!(s.pibenchmarks, Some(310_240_000_000_000));
    }

    #[test]
    fn unknown_keys() {
        let e = err(r#"{"seq_write_mb_s": 1, "seq_wrte_mb_s": 2}"#);
        assert_eq!(e, InputError::UnknownKey { path: "seq_wrte_mb_s".into() });
        let msg = e.to_string();
        assert!(msg.starts_with("seq_wrte_mb_s: unknown measurement key; expected one of seq_read_mib_s,"), "{msg}");
        assert!(msg.contains("rand_write_4k_qd1_kib_s"));
        let e = err(r#"{"measurements": {"iops": 2}}"#);
        assert_eq!(e, InputError::UnknownKey { path: "measurements.iops".into() });
        // A report without figures.
        assert_eq!(err(r#"{"schema": "storage-score/1", "tool": {}}"#), InputError::NoMeasurements);
        assert_eq!(err(r#"{"schema": "storage-score/1", "measurements": null}"#), InputError::NoMeasurements);
    }

    #[test]
    fn schema_mismatch() {
        let e = err(r#"{"schema": "storage-score/2", "measurements": {}}"#);
        assert!(e.to_string().contains("another version of storage-score"), "{e}");
        let e = err(r#"{"schema": "fio", "measurements": {}}"#);
        assert!(e.to_string().contains("not a storage-score report"), "{e}");
    }

    #[test]
    fn bad_device_block() {
        let e = err(r#"{"measurements": {}, "device": {"kind": "floppy"}}"#);
        let msg = e.to_string();
        assert!(msg.starts_with("device: "), "{msg}");
        assert!(msg.contains("remove the \"device\" key"), "{msg}");
    }

    #[test]
    fn valid_bare_object() {
        let input = parse_score_input(
            r#"{"seq_write_mb_s": 20.0, "rand_read_4k_qd64_iops": 3000, "rand_write_4k_qd64_iops": 800,
                "seq_write_4k_qd1_kib_s": 4000, "seq_read_4k_qd1_kib_s": 10000,
                "rand_read_4k_qd1_kib_s": 8000, "rand_write_4k_qd1_kib_s": 3000, "seq_read_mib_s": null}"#,
        )
        .unwrap();
        assert_eq!(input.device, None);
        assert_eq!(input.profile, None);
        assert!(input.comparable());
        assert_eq!(input.measurements.seq_read_mib_s, None);
        assert_eq!(crate::score::pibenchmarks(&input.measurements, input.comparable()).pibenchmarks, Some(1164));
    }

    #[test]
    fn valid_full_report() {
        let text = r#"{
          "schema": "storage-score/1",
          "tool": {"name": "storage-score", "version": "0.1.0"},
          "profile": "quick",
          "device": {"kind": "sd", "sd": {"class_label": "A2 Class 10 V30 U3",
                     "host": {"clock_hz": 50000000, "timing": "sd high-speed"}}},
          "measurements": {"seq_write_mb_s": 20.0, "rand_read_4k_qd64_iops": 3000,
                           "rand_write_4k_qd64_iops": 800},
          "score": {"pibenchmarks": 1}
        }"#;
        let input = parse_score_input(text).unwrap();
        assert_eq!(input.profile.as_deref(), Some("quick"));
        assert!(!input.comparable());
        let device = input.device.as_ref().unwrap();
        assert_eq!(device.sd.as_ref().unwrap().class_label.as_deref(), Some("A2 Class 10 V30 U3"));
        assert_eq!(input.measurements.rand_write_4k_qd64_iops, Some(800.0));
        let v = crate::verdict::verdict(input.device.as_ref(), &input.measurements);
        assert_eq!(v.claimed.as_deref(), Some("A2 Class 10 V30 U3"));
        assert_eq!(v.measured.as_deref(), Some("A1 Class 10 V10 U1"));
    }
}
