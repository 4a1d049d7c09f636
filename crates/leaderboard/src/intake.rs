//! What happens to a submitted body before anything is stored: parse it,
//! check it against the `storage-score/1` schema, check every figure and
//! every string, strip what must not be stored (docs/leaderboard.md#privacy), and
//! recompute the score and the verdict. The client's own `score` and
//! `verdict` are thrown away.
//!
//! The answer to each kind of bad input:
//! - not JSON, not an object, a wrong `schema`, a value of the wrong type,
//!   an unknown measurement key, no `measurements`: **400**;
//! - a string with control characters, or one too long; a name-like field
//!   (product name, board, register text, …) holding markup or quoting
//!   characters (`<>"'\`;\`): **400**, naming the field. Free-text fields
//!   (notes, hint messages, skip reasons, advice) may hold any printable
//!   text; the pages escape it;
//! - a figure that is negative, not finite (`NaN`, `Infinity`, `1e400`), or
//!   beyond anything a storage device does (`1e300`): **422**, refused;
//! - a figure beyond what the report's own bus can carry (10 GB/s over a
//!   50 MHz SD bus): **stored, flagged** with the reason, never ranked. The
//!   figure is possible for some device, so the result is kept for review
//!   rather than lost, and the reply says `flagged` and why.
//!
//! Other flags (stored, not ranked, the reply says why): an incomplete run
//! (a figure of the score missing), the `quick` profile, no device
//! identification.

use serde_json::Value;
use storage_scoring::privacy::{Redaction, redact};
use storage_scoring::schema::{Measurements, Report, SCHEMA, Score, Verdict};
use storage_scoring::{score, verdict};

use crate::card::{Bus, Card, board};
use crate::error::ApiError;

/// The score formula, stored beside every result (docs/leaderboard.md#grouping-and-ranking): results
/// scored by another formula never share a leaderboard row.
pub const FORMULA_VERSION: &str = "pibenchmarks-1";

/// The verdict rules' version, stored beside every verdict. Bump it when
/// `storage_scoring::verdict` changes what it decides.
/// `verdict-2`: a figure measured while the machine was throttled is not
/// judged (docs/doctor.md#figures-measured-while-throttled).
pub const VERDICT_VERSION: &str = "verdict-2";

/// The longest name-like string (a product name, a board, a register's hex).
pub const MAX_NAME_CHARS: usize = 256;
/// The longest free-text string (a note, a hint's message).
pub const MAX_TEXT_CHARS: usize = 2000;

/// Characters refused in name-like fields: markup and SQL/shell quoting.
const FORBIDDEN_IN_NAMES: [char; 7] = ['<', '>', '"', '\'', '`', ';', '\\'];

/// Fields whose value is prose; all other strings are names. `evidence`,
/// `fix` and `source` are doctor's advice (docs/doctor.md#advice): commands
/// and udev rules, with their quotes.
const FREE_TEXT_FIELDS: [&str; 9] =
    ["notes", "message", "reason", "summary", "requirement", "why", "evidence", "fix", "source"];

/// Figures no storage device reaches, by unit: 100 GB/s (PCIe 5.0 x16 is
/// 63 GB/s) and 100 million IOPS (the fastest SSDs do a few million).
const MAX_MB_S: f64 = 100_000.0;
const MAX_IOPS: f64 = 100_000_000.0;
const MAX_KIB_S: f64 = MAX_MB_S * 1e6 / 1024.0;

/// Over the bus ceiling by more than this share is impossible, not noise.
const BUS_MARGIN: f64 = 1.10;

/// A report that passed: what to store and what to say.
#[derive(Debug, Clone)]
pub struct Accepted {
    /// The report as stored: redacted, with the server's score and verdict.
    pub report: Report,
    pub score: Score,
    pub verdict: Verdict,
    /// Why it is not public; empty when it is.
    pub reasons: Vec<String>,
    pub card: Card,
    pub board: String,
    pub bus: Bus,
}

/// Checks a submitted body and prepares it for storage.
pub fn accept(body: &[u8]) -> Result<Accepted, ApiError> {
    let value: Value = serde_json::from_slice(body).map_err(|e| json_error(body, &e))?;
    let Value::Object(object) = &value else {
        return Err(ApiError::bad_request(format!(
            "body: expected a storage-score/1 report (a JSON object), got {}; send the file that `storage-score run --json --output FILE` wrote",
            describe(&value)
        )));
    };
    match object.get("schema") {
        Some(Value::String(s)) if s == SCHEMA => {}
        Some(Value::String(s)) => {
            return Err(ApiError::bad_request(format!(
                "schema: expected \"{SCHEMA}\", got \"{}\"; send a report made by storage-score 0.x",
                clip(s)
            )));
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "schema: expected the string \"{SCHEMA}\", got {}; send a storage-score report",
                describe(other)
            )));
        }
        None => {
            return Err(ApiError::bad_request(format!(
                "schema: the key is missing; a storage-score report says \"schema\": \"{SCHEMA}\""
            )));
        }
    }
    if !matches!(object.get("measurements"), Some(Value::Object(_))) {
        return Err(ApiError::bad_request(
            "measurements: expected an object of figures; the report has none, so there is nothing to rank: submit a report from `storage-score run`",
        ));
    }
    let report: Report = serde_path_to_error::deserialize(&value).map_err(|e| {
        let path = e.path().to_string();
        let detail = e.into_inner().to_string();
        if detail.contains("integer `-") {
            ApiError::unprocessable(format!("{path}: {detail}; a count or size cannot be negative, correct it"))
        } else {
            ApiError::bad_request(format!(
                "{path}: {detail}; the report does not match the storage-score/1 schema, send it as storage-score wrote it"
            ))
        }
    })?;
    check_figures(&report)?;
    let mut report = report;
    // The client's score and verdict are not trusted, nor stored.
    report.score = None;
    report.verdict = None;
    // Every string as sent (keys this version does not know are dropped by
    // the typed report, so they are neither checked nor stored).
    let sent = serde_json::to_value(&report).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    check_strings(&sent, &mut String::new(), None)?;
    let mut report = redact(&report, &Redaction::server());

    let measurements = report.measurements.unwrap_or_default();
    let comparable = matches!(report.profile.as_deref(), None | Some("compat"));
    let score = score::pibenchmarks(&measurements, comparable);
    let verdict = verdict::verdict_under(report.device.as_ref(), &measurements, None, report.thermal.as_ref());
    let card = Card::of(report.device.as_ref());
    let bus = Bus::of(report.device.as_ref());

    let mut reasons = Vec::new();
    if !score.missing.is_empty() {
        reasons.push(format!(
            "incomplete run: not measured: {}; the score needs all seven figures",
            score.missing.join(", ")
        ));
    }
    if !comparable {
        reasons.push(format!(
            "quick profile: the {} profile's figures are not comparable with PiBenchmarks results",
            report.profile.as_deref().unwrap_or("")
        ));
    }
    reasons.extend(beyond_bus(&measurements, &bus));
    if !card.is_named() {
        reasons.push(
            "no identification: the report names no device, so it cannot join a card's row; submit a report with its device section"
                .to_owned(),
        );
    }
    report.score = Some(score.clone());
    report.verdict = Some(verdict.clone());
    let board = board(&report);
    Ok(Accepted { report, score, verdict, reasons, card, board, bus })
}

/// Every figure: not negative, not beyond what any device does.
fn check_figures(report: &Report) -> Result<(), ApiError> {
    if let Some(m) = &report.measurements {
        for key in storage_scoring::schema::MEASUREMENT_KEYS {
            let Some(v) = m.get(key) else { continue };
            let (max, unit) = unit_limit(key);
            if !v.is_finite() {
                return Err(ApiError::unprocessable(format!(
                    "measurements.{key}: {v} is not a finite figure; correct it or leave the key out"
                )));
            }
            if v < 0.0 {
                return Err(ApiError::unprocessable(format!(
                    "measurements.{key}: {v} is negative; a measured rate cannot be, correct it or leave the key out"
                )));
            }
            if v > max {
                return Err(ApiError::unprocessable(format!(
                    "measurements.{key}: {v:e} {unit} is beyond what any storage device does (at most {max:e}); the report is damaged or forged, correct the figure"
                )));
            }
        }
    }
    for (key, detail) in &report.details {
        let figures = [
            ("seconds", detail.seconds),
            ("latency.p50_us", detail.latency.p50_us),
            ("latency.p99_us", detail.latency.p99_us),
            ("latency.p99_9_us", detail.latency.p99_9_us),
            ("latency.max_us", detail.latency.max_us),
            ("latency.mean_us", detail.latency.mean_us),
        ];
        let intervals = detail.intervals_mib_s.iter().enumerate().map(|(i, v)| (i, *v));
        for (name, v) in figures {
            plausible(v, 1e12, &format!("details.{key}.{name}"))?;
        }
        for (i, v) in intervals {
            plausible(v, MAX_MB_S, &format!("details.{key}.intervals_mib_s[{i}]"))?;
        }
    }
    if let Some(capacity) = report.device.as_ref().and_then(|d| d.capacity_bytes) {
        // 10^18 B: a thousand petabytes; also keeps it inside SQL's signed 64 bits.
        if capacity > 1_000_000_000_000_000_000 {
            return Err(ApiError::unprocessable(format!(
                "device.capacity_bytes: {capacity} bytes is beyond any storage device; correct it"
            )));
        }
    }
    Ok(())
}

fn plausible(v: f64, max: f64, path: &str) -> Result<(), ApiError> {
    if !v.is_finite() || v < 0.0 || v > max {
        return Err(ApiError::unprocessable(format!(
            "{path}: {v} is not a plausible figure (expected 0 to {max:e}); correct it or leave the detail out"
        )));
    }
    Ok(())
}

/// The largest plausible figure for a key, and its unit.
fn unit_limit(key: &str) -> (f64, &'static str) {
    if key.ends_with("_iops") {
        (MAX_IOPS, "IOPS")
    } else if key.ends_with("_kib_s") {
        (MAX_KIB_S, "KiB/s")
    } else if key.ends_with("_mib_s") {
        (MAX_MB_S / 1.048576, "MiB/s")
    } else {
        (MAX_MB_S, "MB/s")
    }
}

/// A figure in MB/s (10^6 B/s) of data over the bus.
fn as_mb_s(key: &str, v: f64) -> f64 {
    if key.ends_with("_iops") {
        v * 4096.0 / 1e6
    } else if key.ends_with("_kib_s") {
        v * 1024.0 / 1e6
    } else if key.ends_with("_mib_s") {
        v * 1.048576
    } else {
        v
    }
}

/// Flags for figures that the report's own bus cannot carry.
fn beyond_bus(m: &Measurements, bus: &Bus) -> Vec<String> {
    let Some(ceiling) = bus.ceiling_mb_s else { return Vec::new() };
    storage_scoring::schema::MEASUREMENT_KEYS
        .iter()
        .filter_map(|key| {
            let v = m.get(key)?;
            let rate = as_mb_s(key, v);
            (rate > ceiling * BUS_MARGIN).then(|| {
                format!(
                    "impossible figure: {key} {} is {:.1} MB/s, beyond the {:.1} MB/s that {} carries",
                    trim(v),
                    rate,
                    ceiling,
                    bus.how
                )
            })
        })
        .collect()
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

/// Every string of the report: no control characters, a bounded length, and
/// no markup or quoting characters in name-like fields.
fn check_strings(value: &Value, path: &mut String, field: Option<&str>) -> Result<(), ApiError> {
    match value {
        Value::String(text) => check_string(text, path, field.is_some_and(|f| FREE_TEXT_FIELDS.contains(&f))),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                check_strings(item, path, field)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(fields) => {
            for (key, item) in fields {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                check_string(key, path, false)?;
                check_strings(item, path, Some(key))?;
                path.truncate(len);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_string(text: &str, path: &str, free_text: bool) -> Result<(), ApiError> {
    let max = if free_text { MAX_TEXT_CHARS } else { MAX_NAME_CHARS };
    let chars = text.chars().count();
    if chars > max {
        return Err(ApiError::bad_request(format!(
            "{path}: {chars} characters, at most {max} are accepted; shorten it"
        )));
    }
    if let Some(c) = text.chars().find(|&c| c.is_control() || is_invisible_format(c)) {
        return Err(ApiError::bad_request(format!(
            "{path}: contains the control character U+{:04X}; remove it",
            u32::from(c)
        )));
    }
    if !free_text {
        if let Some(c) = text.chars().find(|c| FORBIDDEN_IN_NAMES.contains(c)) {
            return Err(ApiError::bad_request(format!(
                "{path}: the character {c:?} is not accepted in a name; use letters, digits, spaces and . , - _ + / : ( ) # only"
            )));
        }
    }
    Ok(())
}

/// Bidirectional overrides and line separators: they can make a page show
/// text in another order than it is stored.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}' | '\u{feff}')
}

/// The error for a body serde_json could not parse: NaN, Infinity and
/// out-of-range numbers are figures (422, naming the key); the rest is
/// malformed JSON (400).
fn json_error(body: &[u8], e: &serde_json::Error) -> ApiError {
    let text = String::from_utf8_lossy(body);
    let offset = offset_of(&text, e.line(), e.column());
    let rest = text[offset.min(text.len())..].trim_start_matches([':', ' ', '\t', '\r', '\n']);
    let key = key_before(&text[..offset.min(text.len())]);
    let field = key.map(|k| format!("{k}: ")).unwrap_or_default();
    for token in ["NaN", "-NaN", "Infinity", "-Infinity", "inf", "-inf", "nan"] {
        if rest.starts_with(token) || text[..offset.min(text.len())].ends_with(token) {
            return ApiError::unprocessable(format!(
                "{field}{token} is not a finite figure (JSON has no NaN or Infinity); send the measured number or leave the key out"
            ));
        }
    }
    if e.to_string().contains("number out of range") {
        return ApiError::unprocessable(format!(
            "{field}the number at line {}, column {} is beyond the range of a double, so not a measured figure; correct it",
            e.line(),
            e.column()
        ));
    }
    if e.is_eof() && body.iter().all(u8::is_ascii_whitespace) {
        return ApiError::bad_request(
            "body: empty; send the report that `storage-score run --json --output FILE` wrote",
        );
    }
    ApiError::bad_request(format!(
        "body: not valid JSON ({e}); send the report file unchanged, as storage-score wrote it"
    ))
}

/// The byte offset of a 1-based line and column (serde_json counts columns
/// in bytes).
fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let mut offset = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            return (offset + column.saturating_sub(1)).min(text.len());
        }
        offset += l.len();
    }
    text.len()
}

/// The last `"key":` before `offset`, for naming the field a bad value sits in.
fn key_before(text: &str) -> Option<String> {
    let colon = text.trim_end().strip_suffix(':').map(str::trim_end).or_else(|| {
        let at = text.rfind(':')?;
        Some(text[..at].trim_end())
    })?;
    let without_quote = colon.strip_suffix('"')?;
    let start = without_quote.rfind('"')?;
    let key = &without_quote[start + 1..];
    (key.len() <= 64 && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).then(|| key.to_owned())
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A string cut short for quoting in an error.
fn clip(s: &str) -> String {
    let cut: String = s.chars().take(40).filter(|c| !c.is_control()).collect();
    if cut.len() < s.len() { format!("{cut}…") } else { cut }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;

    fn report() -> Value {
        serde_json::json!({
            "schema": "storage-score/1",
            "tool": {"name": "storage-score", "version": "0.1.0"},
            "device": {"kind": "sd", "capacity_bytes": 62277025792u64,
                "sd": {"cid": {"manufacturer_id": 159, "oem_id": "TI", "oem_id_raw": 21577, "product_name": "SD64G",
                               "product_revision": "6.1", "serial": 915931237, "manufactured": "2019-11"},
                       "class_label": "A1 Class 10 V10 U1",
                       "host": {"clock_hz": 50000000, "timing": "sd high-speed"}}},
            "system": {"board": "Raspberry Pi 4 Model B Rev 1.4"},
            "measurements": {"seq_read_mib_s": 22.0, "cached_read_mib_s": 22.5, "seq_write_mb_s": 20.0,
                "rand_read_4k_qd64_iops": 3000, "rand_write_4k_qd64_iops": 800,
                "seq_write_4k_qd1_kib_s": 4000, "seq_read_4k_qd1_kib_s": 10000,
                "rand_read_4k_qd1_kib_s": 8000, "rand_write_4k_qd1_kib_s": 3000},
            "score": {"pibenchmarks": 99999}
        })
    }

    fn submit(value: &Value) -> Result<Accepted, ApiError> {
        accept(value.to_string().as_bytes())
    }

    #[test]
    fn the_score_is_recomputed_and_the_serial_dropped() {
        let accepted = submit(&report()).unwrap();
        assert_eq!(accepted.score.pibenchmarks, Some(1164));
        assert_eq!(accepted.report.score.as_ref().unwrap().pibenchmarks, Some(1164));
        assert!(accepted.reasons.is_empty(), "{:?}", accepted.reasons);
        let stored = serde_json::to_string(&accepted.report).unwrap();
        assert!(!stored.contains("915931237"));
        assert_eq!(accepted.board, "Raspberry Pi 4 Model B Rev 1.4");
        assert_eq!(accepted.bus.label, "High Speed");
    }

    #[test]
    fn impossible_figures_are_refused_or_flagged() {
        for (figure, status) in [("-1", 422), ("1e300", 422), ("NaN", 422), ("Infinity", 422), ("1e400", 422)] {
            let text = report().to_string().replace("\"seq_write_mb_s\":20.0", &format!("\"seq_write_mb_s\":{figure}"));
            let err = accept(text.as_bytes()).expect_err(figure);
            assert_eq!(err.status.as_u16(), status, "{figure}: {}", err.message);
            assert!(err.message.contains("seq_write_mb_s"), "{figure}: {}", err.message);
        }
        // 10 GB/s over a 50 MHz SD bus: stored, flagged.
        let mut r = report();
        r["measurements"]["seq_write_mb_s"] = serde_json::json!(10000.0);
        let accepted = submit(&r).unwrap();
        assert_eq!(accepted.reasons.len(), 1, "{:?}", accepted.reasons);
        assert!(
            accepted.reasons[0]
                .starts_with("impossible figure: seq_write_mb_s 10000 is 10000.0 MB/s, beyond the 25.0 MB/s")
        );
    }

    #[test]
    fn names_refuse_markup_and_notes_keep_it() {
        let mut r = report();
        r["device"]["sd"]["cid"]["product_name"] = serde_json::json!("<b>x</b>");
        let err = submit(&r).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(err.message.starts_with("device.sd.cid.product_name: "), "{}", err.message);
        let mut r = report();
        r["notes"] = serde_json::json!(["<script>alert(1)</script>"]);
        assert_eq!(submit(&r).unwrap().report.notes, ["<script>alert(1)</script>"]);
        let mut r = report();
        r["notes"] = serde_json::json!(["bell\u{7}"]);
        assert!(submit(&r).unwrap_err().message.starts_with("notes[0]: contains the control character U+0007"));
    }

    /// `health`, `advice` and `thermal` are stored as sent (after the
    /// privacy filter), and the server's verdict leaves figures measured
    /// while throttled unjudged, as the client's does.
    #[test]
    fn health_advice_and_thermal_are_stored_and_judged() {
        let mut r = report();
        r["health"] = serde_json::json!({"source": "nvme-smart-log", "status": "ok", "percentage_used": 3,
            "critical_warning": [], "notes": ["from /media/alice/x"]});
        r["advice"] = serde_json::json!([{"code": "trim-not-scheduled", "severity": "warn",
            "evidence": "/ (ext4 on /dev/mmcblk0p2) mounted without discard", "fix": "`sudo systemctl enable --now fstrim.timer`",
            "source": "util-linux fstrim(8)"}]);
        r["thermal"] = serde_json::json!({"throttled_during": true, "figures": [{"key": "seq_write_mb_s", "samples": 4,
            "throttled": true, "flags": ["under-voltage"]}]});
        let accepted = submit(&r).unwrap();
        let health = accepted.report.health.as_ref().expect("health kept");
        assert_eq!(health.percentage_used, Some(3));
        assert_eq!(health.notes, ["from /media/…"], "the privacy filter reaches health notes");
        assert_eq!(accepted.report.advice.len(), 1);
        let verdict = &accepted.verdict;
        let seq = verdict.checks.iter().filter(|c| c.key == "seq_write_mb_s").collect::<Vec<_>>();
        assert!(!seq.is_empty() && seq.iter().all(|c| c.pass.is_none()), "{seq:?}");
    }

    #[test]
    fn schema_errors_name_the_field() {
        let mut r = report();
        r["measurements"]["seq_write_mb_s"] = serde_json::json!("fast");
        let err = submit(&r).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(err.message.starts_with("measurements.seq_write_mb_s: "), "{}", err.message);
        let err = accept(b"{\"schema\": \"storage-score/1\",").unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(err.message.starts_with("body: not valid JSON"));
        let mut r = report();
        r["schema"] = serde_json::json!("other/2");
        assert!(submit(&r).unwrap_err().message.starts_with("schema: "));
        let mut r = report();
        r["device"]["capacity_bytes"] = serde_json::json!(-5);
        assert_eq!(submit(&r).unwrap_err().status, StatusCode::UNPROCESSABLE_ENTITY);
    }

    #[test]
    fn flags_say_why() {
        let mut r = report();
        r["profile"] = serde_json::json!("quick");
        r["measurements"].as_object_mut().unwrap().remove("rand_write_4k_qd1_kib_s");
        let reasons = submit(&r).unwrap().reasons;
        assert!(reasons[0].starts_with("incomplete run: not measured: rand_write_4k_qd1_kib_s"));
        assert!(reasons[1].starts_with("quick profile"));
    }
}
