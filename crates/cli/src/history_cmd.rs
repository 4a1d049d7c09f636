//! `doctor --history [DEVICE] [--json]`: each logged device's trend, as
//! text with a sparkline of bytes written per day, or as one JSON document
//! (`storage-score-history-trend/1`); the trends are
//! [`storage_session::doctor::history_trends`].

use std::fmt::Write;

use storage_history::trend::{Projection, Trend};
use storage_report::sparkline::sparkline;
use storage_session::doctor;

use crate::{DoctorArgs, Failure};

/// Prints the trend of the devices `which` selects ("" = all).
pub fn show(args: &DoctorArgs, which: &str) -> Result<(), Failure> {
    let trends = doctor::history_trends(&args.history_dir, which, args.endurance_tbw)?;
    if args.json {
        crate::terminal::json_outln(&doctor::history_json(&args.history_dir, &trends)?);
    } else {
        crate::terminal::out(&trends.iter().map(render).collect::<Vec<_>>().join("\n"));
    }
    Ok(())
}

fn gb(bytes: f64) -> String {
    if bytes >= 1e12 { format!("{:.2} TB", bytes / 1e12) } else { format!("{:.2} GB", bytes / 1e9) }
}

fn projection(out: &mut String, label: &str, p: &Projection, unit: &dyn Fn(f64) -> String) {
    let _ = write!(out, "{label}: from {} to {}", unit(p.first), unit(p.last));
    if let Some(d) = p.per_day {
        let _ = write!(out, ", {} a day", unit(d));
    }
    match &p.projected_date {
        Some(date) => {
            let _ = writeln!(out, "; projected to reach the end on {date}");
        }
        None => {
            let _ = writeln!(out);
        }
    }
    let _ = writeln!(out, "  method: {}", p.method);
}

/// One device's trend as text.
pub fn render(t: &Trend) -> String {
    let mut out = String::new();
    let name = [t.kind.as_deref(), t.model.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(", ");
    let _ = writeln!(
        out,
        "history: {}{}{}",
        t.device_id,
        t.disk.as_deref().map(|d| format!(" (last seen as {d})")).unwrap_or_default(),
        if name.is_empty() { String::new() } else { format!(": {name}") }
    );
    let _ = writeln!(
        out,
        "snapshots: {} from {} to {}",
        t.snapshots,
        t.first.as_deref().unwrap_or("?"),
        t.last.as_deref().unwrap_or("?")
    );
    if let Some(w) = t.host_written_bytes {
        let avg =
            t.average_written_bytes_per_day.map(|a| format!(", {} a day on average", gb(a))).unwrap_or_else(|| {
                ", not enough data for a daily average (2 or more snapshots at least a day apart)".to_owned()
            });
        let _ = writeln!(out, "written by this host: {}{avg}", gb(w as f64));
    }
    if t.written_per_day.len() > 1 {
        let values: Vec<f64> = t.written_per_day.iter().map(|d| d.bytes as f64).collect();
        let top = values.iter().copied().fold(0.0, f64::max);
        let first = &t.written_per_day[0].date;
        let last = &t.written_per_day[t.written_per_day.len() - 1].date;
        let _ = writeln!(out, "per day: {} ({first} to {last}, top {})", sparkline(&values, 60, top), gb(top));
    }
    if let Some(p) = &t.wear {
        projection(&mut out, "wear", p, &|v| format!("{v:.1}%"));
    }
    if let Some(p) = &t.endurance {
        projection(&mut out, "endurance", p, &|v| gb(v));
    }
    for note in &t.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}
