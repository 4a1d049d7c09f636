//! The result page's health section (docs/doctor.md#health): what the
//! device said about its own wear when the result was made, and whether the
//! figures were measured while the machine was throttled. Shown, never
//! ranked by.

use maud::{Markup, html};
use storage_scoring::health::HealthStatus;
use storage_scoring::schema::Report;

/// `<h3>Health</h3>` and its table; empty when the report carries neither
/// health nor a throttling record (reports from before `doctor`).
pub fn section(report: &Report) -> Markup {
    let throttled = report.thermal.as_ref().and_then(|t| t.throttled_during) == Some(true);
    html! {
        @if let Some(h) = &report.health {
            h3 { "Health" }
            @match h.source {
                None => p #health .muted { "No health source: " (h.why.as_deref().unwrap_or("the device reports none")) },
                Some(source) => {
                    // One class attribute (a second is ignored), no inline style (the
                    // Content-Security-Policy allows only the stylesheet).
                    table #health .facts .flag[matches!(h.status, Some(HealthStatus::Failing | HealthStatus::Warn))] {
                        @for (label, value) in rows(h, source) { tr { th { (label) } td { (value) } } }
                    }
                }
            }
        }
        @if throttled {
            p #throttled .flag {
                "Measured while the machine was throttled or under-volted: the figures say more about its power \
                 supply or cooling than about the card, and the verdict does not judge them."
            }
        }
    }
}

/// The health table's rows: what the device reported, in words.
fn rows(
    h: &storage_scoring::health::Health,
    source: storage_scoring::health::HealthSource,
) -> Vec<(&'static str, String)> {
    let mut rows: Vec<(&str, String)> = vec![("Source", source.as_str().to_owned())];
    if let Some(status) = h.status {
        rows.push(("Status", status.as_str().to_owned()));
    }
    if let Some(p) = h.percentage_used {
        rows.push(("Life used", format!("{p}%")));
    }
    if let Some([lo, hi]) = h.percentage_used_range {
        rows.push(("Life used", format!("{lo}-{hi}%")));
    }
    if let Some(s) = h.available_spare_percent {
        rows.push(("Available spare", format!("{s}%")));
    }
    if let Some(t) = h.temperature_c {
        rows.push(("Temperature", format!("{t} °C")));
    }
    if let Some(p) = h.smart_passed {
        rows.push(("SMART self-assessment", if p { "passed" } else { "FAILED" }.to_owned()));
    }
    if let Some(w) = h.critical_warning.as_ref().filter(|w| !w.is_empty()) {
        rows.push(("Critical warning", w.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ")));
    }
    if let Some(hours) = h.power_on_hours {
        rows.push(("Power-on hours", hours.to_string()));
    }
    if let Some(bytes) = h.data_written_bytes {
        rows.push(("Data written", format!("{:.1} GB", bytes as f64 / 1e9)));
    }
    for (label, count) in [
        ("Media errors", h.media_errors),
        ("Reallocated sectors", h.reallocated_sectors),
        ("Pending sectors", h.pending_sectors),
    ] {
        if let Some(n) = count {
            rows.push((label, n.to_string()));
        }
    }
    if let Some(eol) = h.pre_eol {
        rows.push(("Pre-EOL", eol.as_str().to_owned()));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::health::{CriticalWarning, Health, HealthSource, Thermal};

    #[test]
    fn shows_the_source_its_figures_and_throttling_escaped() {
        let report = Report {
            health: Some(Health {
                source: Some(HealthSource::NvmeSmartLog),
                status: Some(HealthStatus::Failing),
                percentage_used: Some(3),
                temperature_c: Some(41),
                critical_warning: Some(vec![CriticalWarning::ReadOnly]),
                ..Health::default()
            }),
            thermal: Some(Thermal { throttled_during: Some(true), ..Thermal::default() }),
            ..Report::new("0.1.0")
        };
        let html = section(&report).into_string();
        assert!(html.contains("<th>Source</th><td>nvme-smart-log</td>"), "{html}");
        assert!(html.contains("<th>Critical warning</th><td>read-only</td>"), "{html}");
        assert!(html.contains("class=\"flag\""));
        assert!(html.contains("id=\"throttled\""));
        let none = Report { health: Some(Health::none("a <loop> device")), ..Report::new("0.1.0") };
        assert!(section(&none).into_string().contains("No health source: a &lt;loop&gt; device"));
        assert_eq!(section(&Report::new("0.1.0")).into_string(), "");
    }
}
