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

use storage_scoring::input::{InputError, as_mb_s};
use storage_scoring::privacy::{Redaction, redact};
use storage_scoring::schema::{Measurements, Report, Score, Verdict};
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
    let mut report = storage_scoring::input::parse_report(body).map_err(|e| refusal(&e))?;
    crate::identity::settle(&mut report)?;
    // The client's score and verdict are not trusted, nor stored.
    report.score = None;
    report.verdict = None;
    let mut report = redact(&report, &Redaction::server()).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;

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

/// The answer to a report the validator refused: 422 for an impossible
/// figure, 400 for the rest; whole-body errors are said of `body`.
pub fn refusal(e: &InputError) -> ApiError {
    let message = if e.field().is_some() { e.to_string() } else { format!("body: {e}") };
    if e.is_implausible() { ApiError::unprocessable(message) } else { ApiError::bad_request(message) }
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 { format!("{}", v as i64) } else { format!("{v}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::StatusCode;
    use serde_json::Value;

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
        r["system"]["board"] = serde_json::json!("<b>x</b>");
        let err = submit(&r).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(err.message.starts_with("system.board: "), "{}", err.message);
        // The CID's text holds what a CID holds, or it is forged.
        let mut r = report();
        r["device"]["sd"]["cid"]["product_name"] = serde_json::json!("<b>x</b>");
        let err = submit(&r).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
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
