//! `doctor --history [DEVICE] [--json]`: each logged device's trend, as
//! text with a sparkline of bytes written per day, or as one JSON document
//! (`storage-score-history-trend/1`).

use std::fmt::Write;

use serde::Serialize;
use storage_report::sparkline::sparkline;

use storage_history::dir::History;
use storage_history::trend::{Projection, Trend, trend};
use storage_session::doctor::history_failure;

use crate::{DoctorArgs, Failure};

#[derive(Serialize)]
struct Document<'a> {
    schema: &'static str,
    created: String,
    history_dir: String,
    devices: &'a [Trend],
}

/// Prints the trend of the devices `which` selects ("" = all).
pub fn show(args: &DoctorArgs, which: &str) -> Result<(), Failure> {
    if args.endurance_tbw.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(Failure::Usage("--endurance-tbw must be a number of terabytes above 0".to_owned()));
    }
    let history = History::open(&args.history_dir, false).map_err(history_failure)?;
    let mut trends = Vec::new();
    for (name, snapshots, bad) in history.read_all().map_err(history_failure)? {
        let id = name.to_string_lossy().trim_end_matches(".jsonl").to_owned();
        let disk = snapshots.last().and_then(|s| s.disk.as_deref());
        if !which.is_empty() && !id.starts_with(which) && disk != Some(which) {
            continue;
        }
        let mut t = trend(&id, &snapshots, args.endurance_tbw);
        if bad > 0 {
            t.notes.push(format!("{bad} line(s) of the file were not snapshots and were left out"));
        }
        trends.push(t);
    }
    if trends.is_empty() {
        let what = if which.is_empty() { "any device".to_owned() } else { format!("a device {which:?}") };
        return Err(Failure::Usage(format!(
            "{} holds no history of {what}; `storage-score doctor --log TARGET` writes one (the .deb's \
             storage-score-doctor.timer does it daily)",
            args.history_dir.display()
        )));
    }
    if args.json {
        let doc = Document {
            schema: "storage-score-history-trend/1",
            created: storage_session::document::now(),
            history_dir: args.history_dir.display().to_string(),
            devices: &trends,
        };
        let json = serde_json::to_string_pretty(&doc)
            .map_err(|e| Failure::Run(format!("cannot encode the history as JSON: {e}")))?;
        crate::terminal::json_outln(&json);
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
