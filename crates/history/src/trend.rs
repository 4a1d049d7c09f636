//! The arithmetic of `doctor --history`, pure: bytes written per calendar
//! day (UTC), wear per day and the date wear reaches 100% by least squares,
//! and the host's writes against an endurance the user gives. Nothing is
//! projected without at least two snapshots a day apart.

use serde::Serialize;

use crate::Snapshot;
use crate::time;

const DAY: f64 = 86_400.0;

/// Bytes written on one UTC day.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DayWritten {
    pub date: String,
    pub bytes: u64,
}

/// A figure's least-squares line and where it reaches its end.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Projection {
    /// What is projected: `percentage_used`, or `host_written_bytes`.
    pub figure: String,
    pub first: f64,
    pub last: f64,
    /// The fitted slope, per day.
    pub per_day: Option<f64>,
    /// The date (UTC) the fitted line reaches the end, when it rises.
    pub projected_date: Option<String>,
    /// How it was worked out, or why nothing was projected.
    pub method: String,
}

/// The trend of one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    pub device_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disk: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub snapshots: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<String>,
    /// Written by this host over the logged time (last total − first).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_written_bytes: Option<u64>,
    pub written_per_day: Vec<DayWritten>,
    /// Mean bytes per day over the logged span; null under a day of data.
    pub average_written_bytes_per_day: Option<f64>,
    /// Wear, where the device reports it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wear: Option<Projection>,
    /// Host writes against `--endurance-tbw`, only when it was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endurance: Option<Projection>,
    pub notes: Vec<String>,
}

/// Least squares over (day, value): (slope per day, intercept).
pub fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    Some((slope, my - slope * mx))
}

/// Spreads each interval's bytes over the UTC days it spans, in
/// proportion to the time in each, so that a missed day is not a zero.
pub fn per_day(points: &[(i64, u64)]) -> Vec<DayWritten> {
    let Some(&(start, _)) = points.first() else { return Vec::new() };
    let first_day = start.div_euclid(86_400);
    let last_day = points.last().map(|p| p.0.div_euclid(86_400)).unwrap_or(first_day);
    let mut days = vec![0f64; (last_day - first_day + 1).max(1) as usize];
    for w in points.windows(2) {
        let ((t0, b0), (t1, b1)) = (w[0], w[1]);
        let grown = b1.saturating_sub(b0) as f64;
        if t1 <= t0 {
            days[(t1.div_euclid(86_400) - first_day) as usize] += grown;
            continue;
        }
        let mut t = t0;
        while t < t1 {
            let day = t.div_euclid(86_400);
            let end = ((day + 1) * 86_400).min(t1);
            days[(day - first_day) as usize] += grown * (end - t) as f64 / (t1 - t0) as f64;
            t = end;
        }
    }
    days.iter()
        .enumerate()
        .map(|(i, b)| DayWritten { date: time::date(first_day + i as i64), bytes: b.round() as u64 })
        .collect()
}

/// Where `points` (time, value) reach `end`, with the method said.
fn project(figure: &str, what: &str, points: &[(i64, f64)], end: f64) -> Projection {
    let first = points.first().map(|p| p.1).unwrap_or(0.0);
    let last = points.last().map(|p| p.1).unwrap_or(0.0);
    let span = points.last().map(|p| p.0).unwrap_or(0) - points.first().map(|p| p.0).unwrap_or(0);
    let mut p = Projection {
        figure: figure.to_owned(),
        first,
        last,
        per_day: None,
        projected_date: None,
        method: String::new(),
    };
    if points.len() < 2 || (span as f64) < DAY {
        p.method = format!(
            "not enough data: {} snapshot(s) over {:.1} days; a projection needs 2 or more at least a day apart",
            points.len(),
            span as f64 / DAY
        );
        return p;
    }
    let origin = points[0].0;
    let xy: Vec<(f64, f64)> = points.iter().map(|&(t, v)| ((t - origin) as f64 / DAY, v)).collect();
    let Some((slope, intercept)) = least_squares(&xy) else {
        p.method = "not enough data: every snapshot has the same time".to_owned();
        return p;
    };
    p.per_day = Some(slope);
    let how = format!("least squares over {} snapshots across {:.1} days of {what}", points.len(), span as f64 / DAY);
    if slope <= 0.0 {
        p.method = format!("{how}: it has not risen, so no date is projected");
        return p;
    }
    let days = (end - intercept) / slope;
    // Beyond a century the line says "not in this device's life".
    if days.is_finite() && days < 36_525.0 {
        let at = origin + (days * DAY).round() as i64;
        p.projected_date = Some(time::date(at.div_euclid(86_400)));
        p.method = how;
    } else {
        p.method = format!("{how}: at this rate it takes more than a century");
    }
    p
}

/// The trend of one device's snapshots (in file order).
pub fn trend(id: &str, snapshots: &[Snapshot], endurance_tbw: Option<f64>) -> Trend {
    let timed: Vec<(i64, &Snapshot)> = snapshots.iter().filter_map(|s| time::parse(&s.time).map(|t| (t, s))).collect();
    let last = timed.last().map(|t| t.1);
    let mut t = Trend {
        device_id: id.to_owned(),
        disk: last.and_then(|s| s.disk.clone()),
        kind: last.and_then(|s| s.kind.clone()),
        model: last.and_then(|s| s.model.clone()),
        snapshots: timed.len(),
        first: timed.first().map(|p| p.1.time.clone()),
        last: last.map(|s| s.time.clone()),
        host_written_bytes: None,
        written_per_day: Vec::new(),
        average_written_bytes_per_day: None,
        wear: None,
        endurance: None,
        notes: Vec::new(),
    };
    if timed.len() < snapshots.len() {
        t.notes.push(format!("{} snapshot(s) without a readable time were left out", snapshots.len() - timed.len()));
    }
    let written: Vec<(i64, u64)> = timed.iter().filter_map(|(at, s)| s.host_written_bytes.map(|b| (*at, b))).collect();
    if let (Some(a), Some(b)) = (written.first(), written.last()) {
        t.host_written_bytes = Some(b.1.saturating_sub(a.1));
        t.written_per_day = per_day(&written);
        let span = (b.0 - a.0) as f64;
        if written.len() >= 2 && span >= DAY {
            t.average_written_bytes_per_day = Some(b.1.saturating_sub(a.1) as f64 / (span / DAY));
        }
    } else {
        t.notes.push("no snapshot has host-written bytes (the kernel's counter was not readable)".to_owned());
    }
    // Wear: the device's own figure (NVMe, SD vendor), else the middle of
    // its band (eMMC reports 10% steps).
    let wear: Vec<(i64, f64, bool)> = timed
        .iter()
        .filter_map(|(at, s)| {
            let h = s.health.as_ref()?;
            match (h.percentage_used, h.percentage_used_range) {
                (Some(p), _) => Some((*at, f64::from(p), false)),
                (None, Some([lo, hi])) => Some((*at, (f64::from(lo) + f64::from(hi)) / 2.0, true)),
                _ => None,
            }
        })
        .collect();
    if !wear.is_empty() {
        let banded = wear.iter().any(|w| w.2);
        let what = if banded {
            "life used (the middle of the device's band: eMMC reports 10% steps)"
        } else {
            "the device's own percentage of life used"
        };
        let points: Vec<(i64, f64)> = wear.iter().map(|w| (w.0, w.1)).collect();
        let mut p = project("percentage_used", what, &points, 100.0);
        p.method = format!("{}; to 100%", p.method);
        t.wear = Some(p);
    }
    if let Some(tbw) = endurance_tbw {
        let points: Vec<(i64, f64)> = written.iter().map(|&(at, b)| (at, b as f64)).collect();
        let end = tbw * 1e12;
        let mut p = project("host_written_bytes", "this host's writes", &points, end);
        p.method = format!(
            "{}; to the --endurance-tbw given ({tbw} TB); writes before the first snapshot, and by other hosts, are not counted",
            p.method
        );
        t.endurance = Some(p);
    } else if t.wear.is_none() {
        t.notes.push(
            "the device reports no wear: give --endurance-tbw (from its datasheet) to set the host's writes against it"
                .to_owned(),
        );
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::health::Health;

    fn snap(day: f64, written: u64, used: Option<u16>) -> Snapshot {
        let at = 1_796_256_000 + (day * DAY) as i64; // 2026-12-03T00:00:00Z
        Snapshot {
            schema: super::super::SCHEMA.to_owned(),
            time: time::from_unix(at),
            host_written_bytes: Some(written),
            health: used.map(|p| Health { percentage_used: Some(p), ..Health::default() }),
            ..Snapshot::default()
        }
    }

    #[test]
    fn least_squares_fits_a_line() {
        let (m, b) = least_squares(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]).unwrap();
        assert!((m - 2.0).abs() < 1e-12 && (b - 1.0).abs() < 1e-12);
        assert_eq!(least_squares(&[(1.0, 1.0)]), None);
        assert_eq!(least_squares(&[(1.0, 1.0), (1.0, 2.0)]), None);
    }

    #[test]
    fn bytes_spread_over_the_days_they_were_written_in() {
        // 12:00 day 0 to 12:00 day 2: 2 GB, half a day, a day, half a day.
        let at = |d: f64| 1_796_256_000 + (d * DAY) as i64;
        let days = per_day(&[(at(0.5), 0), (at(2.5), 2_000_000_000)]);
        let bytes: Vec<u64> = days.iter().map(|d| d.bytes).collect();
        assert_eq!(bytes, [500_000_000, 1_000_000_000, 500_000_000]);
        assert_eq!(days[0].date, "2026-12-03");
    }

    #[test]
    fn wear_is_projected_only_with_data() {
        let one = trend("x", &[snap(0.0, 0, Some(10))], None);
        assert!(one.wear.as_ref().unwrap().method.starts_with("not enough data"), "{:?}", one.wear);
        assert_eq!(one.average_written_bytes_per_day, None);
        let close = trend("x", &[snap(0.0, 0, Some(10)), snap(0.5, 10, Some(11))], None);
        assert_eq!(close.wear.as_ref().unwrap().projected_date, None, "half a day is not enough");
        // 1% a day from 10% at day 0: 100% at day 90 = 2027-03-03.
        let s: Vec<Snapshot> =
            (0..=10).map(|d| snap(f64::from(d), u64::from(d as u32) * 1_000, Some(10 + d as u16))).collect();
        let t = trend("x", &s, None);
        let wear = t.wear.unwrap();
        assert_eq!(wear.projected_date.as_deref(), Some("2027-03-03"));
        assert!((wear.per_day.unwrap() - 1.0).abs() < 1e-9);
        assert!(wear.method.starts_with("least squares over 11 snapshots across 10.0 days"), "{}", wear.method);
        assert_eq!(t.average_written_bytes_per_day, Some(1_000.0));
        assert_eq!(t.written_per_day.len(), 11);
        let flat: Vec<Snapshot> = (0..5).map(|d| snap(f64::from(d), 0, Some(3))).collect();
        assert!(trend("x", &flat, None).wear.unwrap().projected_date.is_none());
    }

    #[test]
    fn endurance_only_when_given() {
        let s: Vec<Snapshot> =
            (0..=4).map(|d| snap(f64::from(d), u64::from(d as u32) * 10_000_000_000, None)).collect();
        let t = trend("x", &s, None);
        assert!(t.endurance.is_none() && t.wear.is_none());
        assert!(t.notes.iter().any(|n| n.contains("--endurance-tbw")));
        // 10 GB a day against 1 TB: 100 days from day 0 = 2027-03-13.
        let e = trend("x", &s, Some(1.0)).endurance.unwrap();
        assert_eq!(e.projected_date.as_deref(), Some("2027-03-13"));
    }
}
