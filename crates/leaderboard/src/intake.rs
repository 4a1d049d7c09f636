//! What happens to a submitted body before anything is stored: the one
//! validator of reports (`storage_scoring::input`), the card's identity and
//! names ([`crate::identity`]), what its bus and host can carry
//! ([`crate::ceilings`]), what must not be stored (docs/leaderboard.md's
//! privacy), and the server's own score and verdict. The client's own
//! `score` and `verdict` are thrown away.
//!
//! The answer to each kind of bad input:
//! - not UTF-8, not JSON, not an object, a wrong `schema`, a value of the
//!   wrong type, an unknown measurement key, no `measurements`, a string
//!   with control characters or too long, markup or quoting in a name-like
//!   field (free text, such as notes, hint messages and advice, may hold any
//!   printable text; the pages escape it): **400**, naming the field;
//! - a figure that is negative, not finite, or beyond anything a storage
//!   device does; a figure beyond every bus of its kind of device; CID text
//!   no CID holds; a name with invisible characters or mixed scripts; a
//!   label over 80 characters: **422**, naming the field;
//! - a figure beyond what its own bus, host or kind carries: **stored,
//!   flagged** with the reason, never ranked.
//!
//! Other flags (stored, not ranked, the reply says why): an incomplete run
//! (a figure of the score missing), the `quick` profile, no device
//! identification.

use sha2::{Digest, Sha256};
use storage_scoring::input::InputError;
use storage_scoring::privacy::{Redaction, redact};
use storage_scoring::run_profile::RunProfile;
use storage_scoring::schema::{Report, Score, Verdict};
use storage_scoring::{score, verdict};

use crate::board::Board;
use crate::card::{Card, group_key};
use crate::ceilings::{self, Bus};
use crate::error::ApiError;
use crate::identity;
use crate::store::{Figures, NewResult};

/// The score formula, stored beside every result (docs/leaderboard.md#grouping-and-ranking): results
/// scored by another formula never share a leaderboard row.
pub const FORMULA_VERSION: &str = "pibenchmarks-1";

/// The verdict rules' version, stored beside every verdict. Bump it when
/// `storage_scoring::verdict` changes what it decides.
/// `verdict-2`: a figure measured while the machine was throttled is not
/// judged (docs/doctor.md#figures-measured-while-throttled).
pub const VERDICT_VERSION: &str = "verdict-2";

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
    pub board: Board,
    pub bus: Bus,
    pub figures: Figures,
    /// The label as sent (normalised), and folded for agreement.
    pub label: Option<String>,
    pub label_key: Option<String>,
    /// The report as stored, and its hash: the same report sent twice, in
    /// any whitespace or key order, has the same.
    pub report_json: String,
    pub content_hash: String,
}

/// Who sent a result and how, for [`Accepted::into_new`].
#[derive(Debug, Clone)]
pub struct Submission {
    pub idempotency_key: String,
    pub body_hash: String,
    pub delete_hash: String,
    pub submitter: String,
    pub created_at: i64,
}

impl Accepted {
    /// The result to store.
    pub fn into_new(self, how: Submission) -> NewResult {
        let card_key = self.card.key();
        NewResult {
            idempotency_key: how.idempotency_key,
            body_hash: how.body_hash,
            content_hash: self.content_hash,
            delete_hash: how.delete_hash,
            submitter: how.submitter,
            created_at: how.created_at,
            reasons: self.reasons,
            group_key: group_key(&card_key, &self.board.key, &self.bus.label, FORMULA_VERSION),
            card_key,
            card: self.card,
            board: self.board,
            bus: self.bus.label,
            formula: FORMULA_VERSION.to_owned(),
            verdict_version: VERDICT_VERSION.to_owned(),
            score: self.score.pibenchmarks.and_then(|s| i64::try_from(s).ok()),
            figures: self.figures,
            label: self.label,
            label_key: self.label_key,
            claimed: self.verdict.claimed.clone(),
            measured: self.verdict.measured.clone(),
            report_json: self.report_json,
            verdict_json: serde_json::to_string(&self.verdict).unwrap_or_else(|_| "{}".to_owned()),
        }
    }
}

/// The most a report's `notes` may hold, in all (bytes of UTF-8): what
/// one run writes is a few hundred; the rest would be stored, and shown,
/// for a spammer.
pub const MAX_NOTES_BYTES: usize = 4096;

/// Checks a submitted body and prepares it for storage.
pub fn accept(body: &[u8]) -> Result<Accepted, ApiError> {
    let mut report = storage_scoring::input::parse_report(body).map_err(|e| refusal(&e))?;
    let notes: usize = report.notes.iter().map(String::len).sum();
    if notes > MAX_NOTES_BYTES {
        return Err(ApiError::unprocessable(format!(
            "notes: {notes} bytes in all, at most {MAX_NOTES_BYTES} are accepted; send the report as storage-score wrote it"
        )));
    }
    identity::settle(&mut report)?;
    let measurements = report.measurements.unwrap_or_default();
    ceilings::beyond_any_bus(report.device.as_ref(), &measurements)?;
    assess(report, Vec::new())
}

/// A stored report judged again by today's rules (a migration): what
/// [`accept`] would make of it, or, when those rules refuse it, the same
/// kept as a flagged result that says why. Nothing is lost either way.
pub fn reassess(stored_report: &str) -> Accepted {
    match accept(stored_report.as_bytes()) {
        Ok(accepted) => accepted,
        Err(refused) => {
            let report: Report = serde_json::from_str(stored_report).unwrap_or_default();
            let why =
                format!("refused by the rules this server applies since it stored the result: {}", refused.message);
            assess(report, vec![why]).unwrap_or_else(|e| Accepted::unreadable(stored_report, &e.message))
        }
    }
}

/// Strips, scores, judges and flags a checked report.
fn assess(mut report: Report, mut reasons: Vec<String>) -> Result<Accepted, ApiError> {
    // The client's score and verdict are not trusted, nor stored.
    report.score = None;
    report.verdict = None;
    let mut report = redact(&report, &Redaction::server()).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;

    let measurements = report.measurements.unwrap_or_default();
    // One profile for the score, the verdict and the flag, as the client reads it.
    let profile = RunProfile::of(report.profile.as_deref());
    let comparable = profile.comparable();
    let score = score::pibenchmarks(&measurements, comparable);
    let verdict = verdict::verdict_under(report.device.as_ref(), &measurements, &profile, report.thermal.as_ref());
    let card = Card::of(report.device.as_ref());
    let bus = Bus::of(report.device.as_ref());
    let board = Board::of(report.system.as_ref().and_then(|s| s.board.as_deref()));

    if !score.missing.is_empty() {
        reasons.push(format!(
            "incomplete run: not measured: {}; the score needs all seven figures",
            score.missing.join(", ")
        ));
    }
    if !comparable {
        reasons.push(format!(
            "quick profile: the {profile} profile's figures are not comparable with PiBenchmarks results"
        ));
    }
    if report.thermal.as_ref().and_then(|t| t.throttled_during) == Some(true) {
        // An under-voltage or thermal throttle halves figures: they describe
        // the machine's power supply or cooling, and would pull a card's
        // median down for every owner of the card.
        reasons.push(
            "throttled: the machine was throttled (under-voltage or heat) while figures were measured; they describe its power supply or cooling, not the card"
                .to_owned(),
        );
    }
    reasons.extend(ceilings::flags(report.device.as_ref(), &bus, &board, &measurements));
    if !card.is_named() {
        reasons.push(
            "no identification: the report names no device, so it cannot join a card's row; submit a report with its device section"
                .to_owned(),
        );
    }
    report.score = Some(score.clone());
    report.verdict = Some(verdict.clone());
    let report_json = serde_json::to_string(&report).map_err(|e| ApiError::bad_request(format!("body: {e}")))?;
    let content_hash = crate::auth::hex(&Sha256::digest(report_json.as_bytes()));
    let label = report.label.clone();
    Ok(Accepted {
        figures: Figures::of(&measurements),
        label_key: label.as_deref().map(identity::fold),
        label,
        report,
        score,
        verdict,
        reasons,
        card,
        board,
        bus,
        report_json,
        content_hash,
    })
}

impl Accepted {
    /// A stored report that no longer reads as one: kept, flagged, unnamed.
    fn unreadable(stored: &str, why: &str) -> Accepted {
        let report = Report::default();
        Accepted {
            score: Score::default(),
            verdict: Verdict::default(),
            reasons: vec![format!("unreadable report: {why}")],
            card: Card::of(None),
            board: Board::of(None),
            bus: Bus::of(None),
            figures: Figures::default(),
            label: None,
            label_key: None,
            content_hash: crate::auth::hex(&Sha256::digest(stored.as_bytes())),
            report_json: stored.to_owned(),
            report,
        }
    }
}

/// The answer to a report the validator refused: 422 for an impossible
/// figure, 400 for the rest; whole-body errors are said of `body`.
pub fn refusal(e: &InputError) -> ApiError {
    let message = if e.field().is_some() { e.to_string() } else { format!("body: {e}") };
    if e.is_implausible() { ApiError::unprocessable(message) } else { ApiError::bad_request(message) }
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
        assert_eq!(accepted.board.model, "Raspberry Pi 4 Model B");
        assert_eq!(accepted.board.revision.as_deref(), Some("1.4"));
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
        // 100 MB/s over a 50 MHz SD bus: stored, flagged.
        let mut r = report();
        r["measurements"]["seq_write_mb_s"] = serde_json::json!(100.0);
        let accepted = submit(&r).unwrap();
        assert_eq!(accepted.reasons.len(), 1, "{:?}", accepted.reasons);
        assert!(
            accepted.reasons[0]
                .starts_with("impossible figure: seq_write_mb_s 100 is 100.0 MB/s, beyond the 25.0 MB/s"),
            "{}",
            accepted.reasons[0]
        );
        // 10 GB/s on an SD card: no SD bus carries it, refused.
        r["measurements"]["seq_write_mb_s"] = serde_json::json!(10000.0);
        let err = submit(&r).unwrap_err();
        assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(err.message.starts_with("measurements.seq_write_mb_s: 10000 is 10000.0 MB/s, beyond the 3938 MB/s"));
    }

    #[test]
    fn a_key_with_a_newline_is_named_on_one_line() {
        // Found by the intake fuzz target: an unknown measurement key with an
        // escaped newline in it was echoed into the message as a line break.
        let text = report().to_string().replace("\"seq_read_4k_qd1_kib_s\"", "\"seq_read_4k_qd\\n\\\\torage\"");
        let err = accept(text.as_bytes()).unwrap_err();
        assert_eq!(err.status, StatusCode::BAD_REQUEST);
        assert!(!err.message.contains('\n'), "{:?}", err.message);
        assert!(err.message.starts_with("measurements.seq_read_4k_qd\\n"), "{:?}", err.message);
    }

    #[test]
    fn the_same_report_in_other_whitespace_has_one_content_hash() {
        let a = submit(&report()).unwrap();
        let b = accept(serde_json::to_string_pretty(&report()).unwrap().as_bytes()).unwrap();
        assert_eq!(a.content_hash, b.content_hash);
        let mut r = report();
        r["measurements"]["seq_write_mb_s"] = serde_json::json!(20.5);
        assert_ne!(submit(&r).unwrap().content_hash, a.content_hash);
    }

    #[test]
    fn a_report_that_todays_rules_refuse_is_kept_flagged_on_reassessment() {
        let mut r = report();
        r["device"]["sd"]["cid"]["product_name"] = serde_json::json!("SD64\u{200b}G");
        let again = reassess(&r.to_string());
        assert!(
            again.reasons[0].starts_with(
                "refused by the rules this server applies since it stored the result: device.sd.cid.product_name: "
            ),
            "{:?}",
            again.reasons
        );
        assert_eq!(reassess(&report().to_string()).reasons, Vec::<String>::new());
        assert!(reassess("not json").reasons.len() >= 2, "kept, flagged");
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
    /// while throttled unjudged, as the client's does; such a result is
    /// flagged, so it stays out of its card's row.
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
        assert!(accepted.reasons.iter().any(|r| r.starts_with("throttled: ")), "{:?}", accepted.reasons);
        let mut calm = r.clone();
        calm["thermal"]["throttled_during"] = serde_json::json!(false);
        assert!(!submit(&calm).unwrap().reasons.iter().any(|r| r.starts_with("throttled")));
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

    /// The server's verdict is the client's: a quick report's is indicative.
    #[test]
    fn the_verdict_of_a_quick_report_is_the_clients() {
        let mut r = report();
        r["profile"] = serde_json::json!("quick");
        let accepted = submit(&r).unwrap();
        let report: Report = serde_json::from_value(r).unwrap();
        let client = verdict::report_verdict(&report);
        assert_eq!(accepted.verdict, client);
        assert!(accepted.verdict.indicative, "{:?}", accepted.verdict);
    }
}
