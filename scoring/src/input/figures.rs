//! The figures of a report: each measurement a finite number from 0 to what
//! any storage device could do in its unit, and the numbers of each test's
//! detail (latencies, seconds, interval rates) within what they can be.

use serde_json::{Map, Value};

use super::InputError;
use super::json::describe;
use crate::figure::{Figure, Unit};
use crate::schema::{MEASUREMENT_KEYS, Measurements, Report};

pub use crate::figure::{MAX_IOPS, MAX_MB_S};

/// The largest plausible value of a measurement key, and its unit (MB/s
/// for a key that names no figure).
pub fn unit_limit(key: &str) -> (f64, &'static str) {
    let unit = Figure::from_key(key).map_or(Unit::MbPerS, Figure::unit);
    (unit.limit(), unit.symbol())
}

/// A figure of `key` in MB/s of data moved (IOPS count 4 KiB transfers).
pub fn as_mb_s(key: &str, v: f64) -> f64 {
    Figure::from_key(key).map_or(v, |f| f.unit().as_mb_s(v))
}

/// Checks each figure of a measurements object; `prefix` is the path to it
/// (`measurements.` in a report, empty for a bare object).
pub fn measurements(object: &Map<String, Value>, prefix: &str) -> Result<Measurements, InputError> {
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
                        "\"{}\" is not a measured figure: write the figure as a number, or leave the key out if it was not measured",
                        clip(t)
                    )
                } else if t.parse::<f64>().is_ok_and(f64::is_finite) {
                    format!("write it without quotes: \"{key}\": {}", clip(t))
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
        let (max, unit) = unit_limit(key);
        if figure > max {
            return Err(InputError::TooLarge { path, value: figure, max, unit });
        }
        m.set(key, figure);
    }
    Ok(m)
}

/// The numbers of each test's detail, and the device's capacity.
pub fn details(report: &Report) -> Result<(), InputError> {
    for (key, detail) in &report.details {
        let figures = [
            ("seconds", detail.seconds),
            ("latency.p50_us", detail.latency.p50_us),
            ("latency.p99_us", detail.latency.p99_us),
            ("latency.p99_9_us", detail.latency.p99_9_us),
            ("latency.max_us", detail.latency.max_us),
            ("latency.mean_us", detail.latency.mean_us),
        ];
        for (name, v) in figures {
            plausible(v, 1e12, || format!("details.{key}.{name}"))?;
        }
        for (i, v) in detail.intervals_mib_s.iter().enumerate() {
            plausible(*v, MAX_MB_S, || format!("details.{key}.intervals_mib_s[{i}]"))?;
        }
    }
    // `run --repeat`'s samples are figures too: a measurement key each, and
    // every value one its unit allows.
    for (key, samples) in &report.samples {
        if !MEASUREMENT_KEYS.contains(&key.as_str()) {
            return Err(InputError::UnknownKey { path: format!("samples.{key}") });
        }
        let (max, _) = unit_limit(key);
        for (i, v) in samples.values.iter().enumerate() {
            plausible(*v, max, || format!("samples.{key}.values[{i}]"))?;
        }
        for (name, v) in [("median", samples.median), ("min", samples.min), ("max", samples.max)] {
            plausible(v, max, || format!("samples.{key}.{name}"))?;
        }
    }
    if let Some(capacity) = report.device.as_ref().and_then(|d| d.capacity_bytes) {
        // 10^18 B: a thousand petabytes; also keeps it inside SQL's signed 64 bits.
        if capacity > 1_000_000_000_000_000_000 {
            return Err(InputError::Implausible {
                path: "device.capacity_bytes".to_owned(),
                value: capacity as f64,
                max: 1e18,
            });
        }
    }
    Ok(())
}

fn plausible(v: f64, max: f64, path: impl FnOnce() -> String) -> Result<(), InputError> {
    if !v.is_finite() || v < 0.0 || v > max {
        return Err(InputError::Implausible { path: path(), value: v, max });
    }
    Ok(())
}

/// A string cut short for quoting in an error.
pub fn clip(s: &str) -> String {
    let cut: String = s.chars().take(40).filter(|c| !c.is_control()).collect();
    if cut.len() < s.len() { format!("{cut}…") } else { cut }
}
