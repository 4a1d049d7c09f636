//! `doctor`'s terminal output, and the health and advice sections that
//! `identify` and `run` print too: a health table (and the ATA attribute
//! table, as smartctl shows it), the machine's temperature and throttling,
//! then each piece of advice with its evidence, fix and source.

use std::fmt::Write;
use std::time::Duration;

use comfy_table::Table;

use crate::plain::table;
use storage_scoring::health::{Advice, Health, HealthStatus, Severity, Thermal, ThermalSnapshot};
use storage_scoring::schema::Report;

fn row(t: &mut Table, name: &str, value: Option<String>) {
    if let Some(value) = value.filter(|v| !v.is_empty()) {
        t.add_row(vec![name.to_owned(), value]);
    }
}

/// Decimal bytes as drive makers count them, with the binary size beside.
fn bytes(n: u64) -> String {
    if n >= 1_000_000_000_000 { format!("{:.2} TB", n as f64 / 1e12) } else { format!("{:.2} GB", n as f64 / 1e9) }
}

/// The whole `doctor` output.
pub fn render(report: &Report, took: Duration) -> String {
    let mut out = String::new();
    let target = report.target.as_ref();
    let disk =
        target.and_then(|t| t.disk.clone()).unwrap_or_else(|| target.map(|t| t.input.clone()).unwrap_or_default());
    let what = report.device.as_ref().map(|d| {
        let name = [d.vendor.as_deref(), d.model.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
        if name.is_empty() { d.kind.as_str().to_owned() } else { format!("{}, {name}", d.kind.as_str()) }
    });
    let board = report.system.as_ref().and_then(|s| s.board.clone());
    let _ = writeln!(
        out,
        "doctor: {disk}{}{}",
        what.map(|w| format!(" ({w})")).unwrap_or_default(),
        board.map(|b| format!(" on {b}")).unwrap_or_default()
    );
    out.push_str(&sections(report));
    let _ = writeln!(out, "doctor took {:.3} s; it read, and wrote nothing", took.as_secs_f64());
    out
}

/// Health, machine and advice: what `identify` and `run` add to their output.
pub fn sections(report: &Report) -> String {
    let mut out = String::new();
    if let Some(h) = &report.health {
        out.push_str(&health(h));
    }
    if let Some(t) = &report.thermal {
        out.push_str(&machine(t));
    }
    out.push_str(&advice(&report.advice));
    out
}

fn status_word(s: HealthStatus) -> String {
    match s {
        HealthStatus::Ok => "ok".to_owned(),
        HealthStatus::Warn => "WARN: worn or warning, keep backups".to_owned(),
        HealthStatus::Failing => "FAILING: copy off what matters".to_owned(),
        HealthStatus::Unknown => "unknown".to_owned(),
    }
}

fn health(h: &Health) -> String {
    let mut out = String::new();
    let Some(source) = h.source else {
        let _ = writeln!(out, "health: no source: {}", h.why.as_deref().unwrap_or("this device reports none"));
        for note in &h.notes {
            let _ = writeln!(out, "  note: {note}");
        }
        return out;
    };
    let mut t = table(["health", source.as_str()]);
    row(&mut t, "status", h.status.map(status_word));
    row(&mut t, "vendor layout", h.format.map(|f| f.as_str().to_owned()));
    row(&mut t, "life used", h.percentage_used.map(|p| format!("{p}%")));
    row(&mut t, "life used (band)", h.percentage_used_range.map(|[lo, hi]| format!("{lo}-{hi}%")));
    row(
        &mut t,
        "available spare",
        h.available_spare_percent.map(|s| match h.available_spare_threshold_percent {
            Some(th) => format!("{s}% (threshold {th}%)"),
            None => format!("{s}%"),
        }),
    );
    row(
        &mut t,
        "temperature",
        h.temperature_c.map(|c| {
            let limits: Vec<String> = [("warning", h.temperature_warning_c), ("critical", h.temperature_critical_c)]
                .iter()
                .filter_map(|(n, v)| v.map(|v| format!("{n} {v} °C")))
                .collect();
            if limits.is_empty() { format!("{c} °C") } else { format!("{c} °C ({})", limits.join(", ")) }
        }),
    );
    row(
        &mut t,
        "critical warning",
        h.critical_warning.as_ref().map(|w| {
            if w.is_empty() { "none".to_owned() } else { w.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ") }
        }),
    );
    row(&mut t, "SMART self-assessment", h.smart_passed.map(|p| if p { "PASSED" } else { "FAILED" }.to_owned()));
    row(&mut t, "power-on hours", h.power_on_hours.map(|v| v.to_string()));
    row(&mut t, "power cycles", h.power_cycles.map(|v| v.to_string()));
    row(&mut t, "unsafe shutdowns", h.unsafe_shutdowns.map(|v| v.to_string()));
    row(&mut t, "data written", h.data_written_bytes.map(bytes));
    row(&mut t, "data read", h.data_read_bytes.map(bytes));
    row(&mut t, "media errors", h.media_errors.map(|v| v.to_string()));
    row(&mut t, "error log entries", h.error_log_entries.map(|v| v.to_string()));
    row(&mut t, "reallocated sectors", h.reallocated_sectors.map(|v| v.to_string()));
    row(&mut t, "pending sectors", h.pending_sectors.map(|v| v.to_string()));
    row(&mut t, "uncorrectable sectors", h.uncorrectable_sectors.map(|v| v.to_string()));
    row(&mut t, "interface CRC errors", h.interface_crc_errors.map(|v| v.to_string()));
    row(
        &mut t,
        "life time est. A / B",
        h.life_time_est_a
            .map(|a| format!("{a:#04x} / {}", h.life_time_est_b.map(|b| format!("{b:#04x}")).unwrap_or_default())),
    );
    row(&mut t, "pre-EOL", h.pre_eol.map(|p| p.as_str().to_owned()));
    row(&mut t, "grown bad blocks", h.grown_bad_blocks.map(|v| v.to_string()));
    row(&mut t, "spare blocks", h.spare_blocks.map(|v| v.to_string()));
    row(&mut t, "average erase count", h.average_erase_count.map(|v| v.to_string()));
    let _ = writeln!(out, "{t}");
    if !h.attributes.is_empty() {
        let mut a = table(["ID", "attribute", "value", "worst", "thresh", "raw", "type", "state"]);
        for attr in &h.attributes {
            a.add_row(vec![
                attr.id.to_string(),
                attr.name.clone().unwrap_or_else(|| "vendor-specific".to_owned()),
                attr.value.to_string(),
                attr.worst.to_string(),
                attr.threshold.map(|t| t.to_string()).unwrap_or_else(|| "-".to_owned()),
                attr.raw.to_string(),
                if attr.prefailure { "pre-fail" } else { "old-age" }.to_owned(),
                if attr.failing_now {
                    "FAILING NOW".to_owned()
                } else if attr.failed_in_past {
                    "failed in past".to_owned()
                } else {
                    "-".to_owned()
                },
            ]);
        }
        let _ = writeln!(out, "{a}");
    }
    if let Some(why) = &h.why {
        let _ = writeln!(out, "  note: {why}");
    }
    for note in &h.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

fn snapshot_rows(t: &mut Table, label: &str, s: &ThermalSnapshot) {
    row(
        t,
        &format!("SoC temperature{label}"),
        s.soc_temperature_c.map(|c| match s.soc_limit_c {
            Some(l) => format!("{c:.1} °C (slows down from {l:.0} °C)"),
            None => format!("{c:.1} °C"),
        }),
    );
    row(
        t,
        &format!("get_throttled{label}"),
        s.get_throttled.as_ref().map(|w| {
            let names = |f: &[storage_scoring::health::ThrottleFlag]| {
                if f.is_empty() {
                    "nothing".to_owned()
                } else {
                    f.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ")
                }
            };
            format!("{w}: now {}; since boot {}", names(&s.throttled_now), names(&s.throttled_since_boot))
        }),
    );
    row(
        t,
        &format!("under-voltage alarm{label}"),
        s.under_voltage_alarm.map(|a| if a { "ON".to_owned() } else { "off".to_owned() }),
    );
    row(t, &format!("drive temperature{label}"), s.drive_temperature_c.map(|c| format!("{c:.0} °C")));
}

fn machine(t: &Thermal) -> String {
    let mut table = table(["machine", ""]);
    if let Some(now) = &t.now {
        snapshot_rows(&mut table, "", now);
    }
    if let Some(b) = &t.before {
        snapshot_rows(&mut table, " before", b);
    }
    if let Some(w) = &t.during {
        row(
            &mut table,
            "during",
            Some(format!(
                "{} samples every {} ms; {} throttled{}{}",
                w.samples,
                w.interval_ms,
                w.throttled_samples,
                w.max_soc_temperature_c.map(|c| format!("; SoC up to {c:.1} °C")).unwrap_or_default(),
                w.max_drive_temperature_c.map(|c| format!("; drive up to {c:.0} °C")).unwrap_or_default()
            )),
        );
    }
    if let Some(a) = &t.after {
        snapshot_rows(&mut table, " after", a);
    }
    if let Some(d) = t.throttled_during {
        row(&mut table, "throttled while measuring", Some(if d { "YES".to_owned() } else { "no".to_owned() }));
    }
    let mut out = String::new();
    if !table.is_empty() {
        let _ = writeln!(out, "{table}");
    } else {
        let _ = writeln!(out, "machine: no temperature or throttling source on this machine");
    }
    for note in &t.notes {
        let _ = writeln!(out, "  note: {note}");
    }
    out
}

fn advice(items: &[Advice]) -> String {
    let mut out = String::new();
    if items.is_empty() {
        let _ = writeln!(out, "advice: none; nothing found on this machine that holds this storage back");
        return out;
    }
    let _ = writeln!(out, "advice ({}):", items.len());
    for a in items {
        let tag = match a.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warn => "warn",
            Severity::Info => "info",
            Severity::Unknown => "?",
        };
        let width = crate::plain::width();
        out.push_str(&crate::plain::hanging("- ", &format!("[{tag}] {}: {}", a.code.as_str(), a.code.title()), width));
        out.push_str(&crate::plain::hanging("    seen:   ", &a.evidence, width));
        out.push_str(&crate::plain::hanging("    fix:    ", &a.fix, width));
        out.push_str(&crate::plain::hanging("    source: ", &a.source, width));
    }
    out
}
