//! The validator of endurance (`storage-score-endurance/1`) and power-loss
//! (`storage-score-power-loss/1`) reports, as `submit` reads them and the
//! leaderboard takes them: the same bytes → JSON step, the same string
//! rules, the card's `identity` checked as a run report's `device` is, and
//! then what only these reports can get wrong, each a 422 naming the field:
//!
//! - a negative number anywhere, a count that is not a whole number up to
//!   10^18, a rate or time that is not finite or beyond any device;
//! - passes or cycles not numbered 1, 2, 3…; a pass that writes more than
//!   twice the surface (a resume redoes at most a segment);
//! - failed blocks that do not add up (`bad_blocks` is the running sum of
//!   `new_bad_blocks`, never above the surface's blocks), or whose kinds do
//!   not (`mismatches` is the sum of `mismatch_kinds`);
//! - milestones inconsistent with the passes: each one listed exactly when
//!   the failed blocks reached it, at the first pass that did;
//! - totals that are not the sums of the passes or cycles, a verdict that
//!   is not the one the totals give, a cycle after one the card did not
//!   return from.
//!
//! A report without `identity` cannot join a card, and is refused as well.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{InputError, Use, json as input_json, strings};
use crate::endurance::{self, EnduranceReport, Milestone};
use crate::power_loss::{self, PowerLossReport, Totals};
use crate::wear::{WearReport, is_wear_schema};

/// The largest count or size taken: no card holds 10^18 bytes.
pub const MAX_COUNT: u64 = 1_000_000_000_000_000_000;

/// Numbers that may have a fraction, and the most each may be.
const FRACTIONAL: [(&str, f64); 6] = [
    ("write_mb_s", super::MAX_MB_S),
    ("read_mb_s", super::MAX_MB_S),
    ("write_p99_ms", 1e8),
    ("read_p99_ms", 1e8),
    ("seconds", 1e10),
    ("back_after_s", 1e7),
];

/// Numbers that are pass or cycle numbers (32 bits).
const NUMBERS: [&str; 5] = ["pass", "cycle", "segments", "resumes", "stopped_at_pass"];

/// The schema of a JSON object, when it names an endurance or power-loss one.
pub fn wear_schema(value: &Value) -> Option<&str> {
    value.get("schema").and_then(Value::as_str).filter(|s| is_wear_schema(s))
}

/// Any bytes to a checked endurance or power-loss report.
pub fn parse_wear(bytes: &[u8]) -> Result<WearReport, InputError> {
    wear_from(input_json::parse(input_json::utf8(bytes)?)?)
}

/// A JSON value to a checked endurance or power-loss report.
pub fn wear_from(value: Value) -> Result<WearReport, InputError> {
    let Value::Object(mut object) = value else {
        return Err(InputError::NotAnObject { found: input_json::describe(&value) });
    };
    let schema = match object.get("schema") {
        Some(Value::String(s)) if is_wear_schema(s) => s.clone(),
        Some(Value::String(s)) => return Err(InputError::Schema { found: super::figures::clip(s) }),
        _ => return Err(InputError::MissingSchema),
    };
    let identity = object.remove("identity");
    for (key, item) in &object {
        numbers(item, key, key)?;
    }
    let identity = match identity {
        None | Some(Value::Null) => {
            return Err(InputError::Inconsistent {
                path: "identity".to_owned(),
                detail: "missing: the report does not say which card it is, so it cannot join the card's page; make it again with this version of storage-score".to_owned(),
            });
        }
        Some(device) => checked_identity(device)?,
    };
    object.insert("identity".to_owned(), identity);
    let value = Value::Object(object);
    let mut report = if schema == endurance::SCHEMA {
        let r: EnduranceReport = typed(value)?;
        endurance_rules(&r)?;
        WearReport::Endurance(Box::new(r))
    } else {
        let r: PowerLossReport = typed(value)?;
        power_loss_rules(&r)?;
        WearReport::PowerLoss(Box::new(r))
    };
    // Every string kept, as a run report's: names bounded and free of
    // markup, notes free text; the identity was checked as a device.
    let identity = report.identity_mut().take();
    let plain = match &report {
        WearReport::Endurance(r) => serde_json::to_value(r),
        WearReport::PowerLoss(r) => serde_json::to_value(r),
    }
    .map_err(|e| InputError::Shape { path: "report".to_owned(), detail: e.to_string() })?;
    let mut plain = plain;
    // The fingerprint is what the run's state is bound to (`size=…;cid=…`,
    // a backing file's path): never shown, and hashed before it is sent,
    // so any printable text.
    if let Some(Value::String(fingerprint)) = plain.as_object_mut().and_then(|o| o.remove("fingerprint")) {
        let chars = fingerprint.chars().count();
        if chars > strings::MAX_TEXT_CHARS {
            let problem = super::TextProblem::TooLong { chars, max: strings::MAX_TEXT_CHARS };
            return Err(InputError::Text { path: "fingerprint".to_owned(), problem });
        }
        if let Some(c) = fingerprint.chars().find(|c| c.is_control()) {
            return Err(InputError::Text { path: "fingerprint".to_owned(), problem: super::TextProblem::Control(c) });
        }
    }
    strings::check(&plain)?;
    *report.identity_mut() = identity;
    Ok(report)
}

/// The identity, checked by the run report's own rules for its `device`.
fn checked_identity(device: Value) -> Result<Value, InputError> {
    let shell: Map<String, Value> = [
        ("schema".to_owned(), json!(crate::schema::SCHEMA)),
        ("tool".to_owned(), json!({"name": "storage-score", "version": ""})),
        ("device".to_owned(), device),
    ]
    .into_iter()
    .collect();
    let report = super::validate(shell, Use::Saved).map_err(reroot)?;
    serde_json::to_value(report.device)
        .map_err(|e| InputError::Shape { path: "identity".to_owned(), detail: e.to_string() })
}

/// An error of the `device` the identity was checked as, said of `identity`.
fn reroot(e: InputError) -> InputError {
    let moved = |path: String| match path.strip_prefix("device") {
        Some(rest) => format!("identity{rest}"),
        None => path,
    };
    match e {
        InputError::WrongType { path, expected, found, hint } => {
            InputError::WrongType { path: moved(path), expected, found, hint }
        }
        InputError::Negative { path, value } => InputError::Negative { path: moved(path), value },
        InputError::TooLarge { path, value, max, unit } => InputError::TooLarge { path: moved(path), value, max, unit },
        InputError::Implausible { path, value, max } => InputError::Implausible { path: moved(path), value, max },
        InputError::NegativeCount { path, detail } => InputError::NegativeCount { path: moved(path), detail },
        InputError::Shape { path, detail } => InputError::Shape { path: moved(path), detail },
        InputError::Text { path, problem } => InputError::Text { path: moved(path), problem },
        other => other,
    }
}

/// Every number under `key` (at `path`): never negative; a fraction only
/// where the schema has one, finite and within its bound; a count a whole
/// number up to [`MAX_COUNT`], a pass or cycle number one of 32 bits.
fn numbers(value: &Value, key: &str, path: &str) -> Result<(), InputError> {
    match value {
        Value::Number(n) => {
            let v = n.as_f64().unwrap_or(f64::INFINITY);
            if v < 0.0 {
                return Err(InputError::NegativeCount { path: path.to_owned(), detail: format!("got {n}") });
            }
            if let Some((_, max)) = FRACTIONAL.iter().find(|(k, _)| *k == key) {
                if !v.is_finite() || v > *max {
                    return Err(InputError::Implausible { path: path.to_owned(), value: v, max: *max });
                }
                return Ok(());
            }
            let max =
                if NUMBERS.contains(&key) || path.starts_with("milestones.") { u64::from(u32::MAX) } else { MAX_COUNT };
            match n.as_u64() {
                Some(whole) if whole <= max => Ok(()),
                _ => Err(InputError::Implausible { path: path.to_owned(), value: v, max: max as f64 }),
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                numbers(item, key, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        Value::Object(fields) => {
            for (k, item) in fields {
                numbers(item, k, &format!("{path}.{k}"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn typed<T: DeserializeOwned>(value: Value) -> Result<T, InputError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        InputError::Shape { path, detail: e.into_inner().to_string() }
    })
}

fn inconsistent(path: impl Into<String>, detail: String) -> InputError {
    InputError::Inconsistent { path: path.into(), detail }
}

/// What an endurance report's numbers must agree on.
fn endurance_rules(r: &EnduranceReport) -> Result<(), InputError> {
    if r.block_bytes != endurance::BLOCK_BYTES {
        return Err(inconsistent(
            "block_bytes",
            format!("{}, but blocks are {} bytes", r.block_bytes, endurance::BLOCK_BYTES),
        ));
    }
    if r.surface_bytes % r.block_bytes != 0 {
        return Err(inconsistent("surface_bytes", format!("{} is not a whole number of blocks", r.surface_bytes)));
    }
    let blocks = r.surface_bytes / r.block_bytes;
    let (mut bad, mut written, mut read) = (0u64, 0u64, 0u64);
    for (i, p) in r.passes.iter().enumerate() {
        let at = |field: &str| format!("passes[{i}].{field}");
        if u64::from(p.pass) != i as u64 + 1 {
            return Err(inconsistent(at("pass"), format!("{}, but passes are numbered from 1 in order", p.pass)));
        }
        if p.bytes_written > r.surface_bytes.saturating_mul(2) || p.bytes_read > r.surface_bytes.saturating_mul(2) {
            return Err(inconsistent(
                at("bytes_written"),
                format!("a pass moves at most twice the {} bytes of the surface", r.surface_bytes),
            ));
        }
        let k = p.mismatch_kinds;
        if p.mismatches != k.old_data.saturating_add(k.other_block).saturating_add(k.garbage) {
            return Err(inconsistent(at("mismatches"), format!("{}, not the sum of its mismatch_kinds", p.mismatches)));
        }
        bad = bad.saturating_add(p.new_bad_blocks);
        if p.bad_blocks != bad || bad > blocks {
            return Err(inconsistent(
                at("bad_blocks"),
                format!("{}, but the passes' new_bad_blocks so far sum to {bad} (of {blocks} blocks)", p.bad_blocks),
            ));
        }
        written = written.saturating_add(p.bytes_written);
        read = read.saturating_add(p.bytes_read);
    }
    if r.total_written_bytes != written || r.total_read_bytes != read {
        return Err(inconsistent(
            "total_written_bytes",
            format!(
                "{} written and {} read, but the passes sum to {written} and {read}",
                r.total_written_bytes, r.total_read_bytes
            ),
        ));
    }
    if r.bad_blocks < bad || r.bad_blocks > blocks {
        return Err(inconsistent(
            "bad_blocks",
            format!("{}, but the passes found {bad} of {blocks} blocks", r.bad_blocks),
        ));
    }
    for m in Milestone::ALL {
        let first = r.passes.iter().find(|p| m.reached(p.bad_blocks, blocks)).map(|p| p.pass);
        let listed = r.milestones.get(&m).copied();
        if listed != first {
            let said = listed.map_or("not reached".to_owned(), |p| format!("pass {p}"));
            let truth = first.map_or("no pass reached it".to_owned(), |p| format!("pass {p} first reached it"));
            return Err(inconsistent(format!("milestones.{}", m.as_str()), format!("{said}, but {truth}")));
        }
    }
    let passes = r.passes.len() as u64;
    match (r.stopped, r.stopped_at_pass) {
        (None, None) => {}
        (Some(_), Some(p)) if u64::from(p) <= passes + 1 => {}
        _ => {
            return Err(inconsistent(
                "stopped_at_pass",
                format!(
                    "{:?}, but the report has {passes} passes and says stopped {:?}",
                    r.stopped_at_pass,
                    r.stopped.map(|s| s.as_str())
                ),
            ));
        }
    }
    if !r.seconds.is_finite() {
        return Err(inconsistent("seconds", "not a number of seconds".to_owned()));
    }
    Ok(())
}

/// What a power-loss report's numbers must agree on.
fn power_loss_rules(r: &PowerLossReport) -> Result<(), InputError> {
    if r.record_bytes != power_loss::RECORD_BYTES {
        return Err(inconsistent(
            "record_bytes",
            format!("{}, but records are {} bytes", r.record_bytes, power_loss::RECORD_BYTES),
        ));
    }
    for (i, c) in r.cycles.iter().enumerate() {
        let at = |field: &str| format!("cycles[{i}].{field}");
        if u64::from(c.cycle) != i as u64 + 1 {
            return Err(inconsistent(at("cycle"), format!("{}, but cycles are numbered from 1 in order", c.cycle)));
        }
        if c.acknowledged > c.written {
            return Err(inconsistent(
                at("acknowledged"),
                format!("{}, more than the {} written", c.acknowledged, c.written),
            ));
        }
        if c.lost.saturating_add(c.torn) > c.acknowledged {
            return Err(inconsistent(
                at("lost"),
                format!("lost {} and torn {}, more than the {} acknowledged", c.lost, c.torn, c.acknowledged),
            ));
        }
        if c.returned > 1 || (c.returned == 0) != c.back_after_s.is_none() {
            return Err(inconsistent(
                at("returned"),
                format!("{}, but a cycle returns once or not (back_after_s only when it did)", c.returned),
            ));
        }
        if c.returned == 0 && i + 1 != r.cycles.len() {
            return Err(inconsistent(
                at("returned"),
                "0, yet later cycles were run on a card that did not come back".to_owned(),
            ));
        }
    }
    // The sums first, bounded: `Totals::of` adds without checking.
    let fields: [fn(&power_loss::Cycle) -> u64; 6] =
        [|c| c.acknowledged, |c| c.lost, |c| c.torn, |c| c.misplaced, |c| c.damaged, |c| c.returned];
    for field in fields {
        let sum = r.cycles.iter().fold(0u64, |sum, c| sum.saturating_add(field(c)));
        if sum > MAX_COUNT {
            return Err(inconsistent("totals", format!("the cycles sum to more than {MAX_COUNT:e}")));
        }
    }
    let totals = Totals::of(&r.cycles);
    if r.totals != totals {
        return Err(inconsistent("totals", format!("not the sums of the cycles ({totals:?})")));
    }
    if r.verdict != totals.verdict() {
        return Err(inconsistent(
            "verdict",
            format!("{}, but the totals say {}", r.verdict.as_str(), totals.verdict().as_str()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
