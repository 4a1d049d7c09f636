//! `doctor --prometheus [FILE]` (docs/doctor.md#prometheus): the findings
//! in the Prometheus text exposition format, as node_exporter's textfile
//! collector reads it: a `# HELP` and a `# TYPE` line before each metric's
//! samples, every sample labelled `device`, `kind` and `model`, label values
//! escaped (backslash, double quote, newline), base units (bytes, seconds,
//! Celsius, ratios), counters ending in `_total`. A FILE is written whole
//! or not at all (a temp file renamed over it), so the collector never
//! reads half of one.

use std::fmt::Write;

use storage_scoring::health::{HealthStatus, PreEol, Severity, ThrottleFlag};
use storage_scoring::schema::Report;

/// A label value as the exposition format wants it.
pub fn escape_label(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// One metric family: its HELP and TYPE once, then every sample of it,
/// whichever device it is of (the format wants a family's samples together).
struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<String>,
}

/// The families, in the order first written; `labels` are the device's
/// (empty for the machine's own series).
#[derive(Default)]
struct Metrics {
    families: Vec<Family>,
    labels: String,
}

impl Metrics {
    /// Samples of one family (`extra` labels, value).
    fn family(&mut self, name: &'static str, kind: &'static str, help: &'static str, samples: &[(String, f64)]) {
        if samples.is_empty() {
            return;
        }
        let at = match self.families.iter().position(|f| f.name == name) {
            Some(at) => at,
            None => {
                self.families.push(Family { name, kind, help, samples: Vec::new() });
                self.families.len() - 1
            }
        };
        for (extra, value) in samples {
            let labels = format!("{}{extra}", self.labels);
            let labels = labels.trim_start_matches(',');
            let sample =
                if labels.is_empty() { format!("{name} {value}") } else { format!("{name}{{{labels}}} {value}") };
            self.families[at].samples.push(sample);
        }
    }

    fn one(&mut self, name: &'static str, kind: &'static str, help: &'static str, value: Option<f64>) {
        let samples: Vec<(String, f64)> = value.into_iter().map(|v| (String::new(), v)).collect();
        self.family(name, kind, help, &samples);
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for f in &self.families {
            let _ = writeln!(out, "# HELP {} {}", f.name, f.help.replace('\\', "\\\\").replace('\n', "\\n"));
            let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
            for sample in &f.samples {
                let _ = writeln!(out, "{sample}");
            }
        }
        out
    }
}

/// One examined device: its report, this boot's counter of bytes written
/// to it, and doctor's exit status for it.
#[derive(Debug)]
pub struct Examined<'a> {
    pub report: &'a Report,
    pub written: Option<u64>,
    pub mask: i32,
}

fn flag(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

/// The metrics of one machine: its own series (SoC temperature,
/// throttling, under-voltage) once, from the first device's snapshot, then
/// every device's series, labelled `device`, `kind` and `model`.
pub fn render(devices: &[Examined]) -> String {
    let mut m = Metrics::default();
    if let Some(first) = devices.first() {
        machine(&mut m, first.report);
    }
    for examined in devices {
        device(&mut m, examined);
    }
    m.text()
}

/// The machine's series, without device labels.
fn machine(m: &mut Metrics, report: &Report) {
    m.labels.clear();
    let thermal = report.thermal.as_ref().and_then(|t| t.now.clone()).unwrap_or_default();
    m.one(
        "storage_score_soc_temperature_celsius",
        "gauge",
        "The SoC's (CPU thermal zone's) temperature.",
        thermal.soc_temperature_c,
    );
    if thermal.get_throttled.is_some() {
        let mut flags = Vec::new();
        for f in ThrottleFlag::ALL {
            flags.push((format!(",flag=\"{}\",when=\"now\"", f.as_str()), flag(thermal.throttled_now.contains(&f))));
            flags.push((
                format!(",flag=\"{}\",when=\"since_boot\"", f.as_str()),
                flag(thermal.throttled_since_boot.contains(&f)),
            ));
        }
        m.family(
            "storage_score_throttled",
            "gauge",
            "The Raspberry Pi firmware's get_throttled flags (under-voltage, arm-frequency-capped, throttled, soft-temperature-limit), now and since boot.",
            &flags,
        );
    }
    m.one(
        "storage_score_under_voltage_alarm",
        "gauge",
        "The rpi_volt hwmon under-voltage alarm (in0_lcrit_alarm).",
        thermal.under_voltage_alarm.map(flag),
    );
}

/// One device's series.
fn device(m: &mut Metrics, examined: &Examined) {
    let Examined { report, written, mask } = *examined;
    let device = report.device.as_ref();
    let disk = crate::disk_name(report).unwrap_or_default();
    let kind = device.map(|d| d.kind.as_str()).unwrap_or("other");
    let model = device
        .and_then(|d| {
            d.model.clone().or_else(|| d.sd.as_ref().and_then(|s| s.cid.as_ref()).map(|c| c.product_name.clone()))
        })
        .unwrap_or_default();
    m.labels = format!(
        "device=\"{}\",kind=\"{}\",model=\"{}\"",
        escape_label(&disk),
        escape_label(kind),
        escape_label(model.trim())
    );
    m.one(
        "storage_score_doctor_status",
        "gauge",
        "doctor's exit status: a bit mask, 8 health failing, 16 a warning, 32 the device could not be read (0: nothing found).",
        Some(f64::from(mask)),
    );
    let h = report.health.clone().unwrap_or_default();
    m.one(
        "storage_score_health_source",
        "gauge",
        "1 when the device has a health source this tool read, 0 when it has none or it could not be read.",
        Some(flag(h.source.is_some())),
    );
    m.one(
        "storage_score_health_status",
        "gauge",
        "The device's own verdict: 0 ok, 1 warn (worn or warning), 2 failing.",
        h.status.and_then(|s| match s {
            HealthStatus::Ok => Some(0.0),
            HealthStatus::Warn => Some(1.0),
            HealthStatus::Failing => Some(2.0),
            HealthStatus::Unknown => None,
        }),
    );
    m.one(
        "storage_score_life_used_ratio",
        "gauge",
        "The device's estimate of its rated life used (1 = all of it; may pass 1): NVMe Percentage Used, SD vendor health, eMMC the upper bound of its 10% band.",
        h.percentage_used.or(h.percentage_used_range.map(|r| r[1])).map(|p| f64::from(p) / 100.0),
    );
    let est: Vec<(String, f64)> = [("a", h.life_time_est_a), ("b", h.life_time_est_b)]
        .iter()
        .filter_map(|(t, v)| v.map(|v| (format!(",type=\"{t}\""), f64::from(v))))
        .collect();
    m.family(
        "storage_score_emmc_life_time_estimate",
        "gauge",
        "eMMC DEVICE_LIFE_TIME_EST_TYP_A/B as the device gives it: 1 = 0-10% used ... 10 = 90-100%, 11 = past its rated life.",
        &est,
    );
    m.one(
        "storage_score_emmc_pre_eol",
        "gauge",
        "eMMC PRE_EOL_INFO: 1 normal, 2 warning (80% of the reserved blocks used), 3 urgent (90%).",
        h.pre_eol.and_then(|p| match p {
            PreEol::Normal => Some(1.0),
            PreEol::Warning => Some(2.0),
            PreEol::Urgent => Some(3.0),
            PreEol::Unknown => None,
        }),
    );
    m.one(
        "storage_score_available_spare_ratio",
        "gauge",
        "NVMe Available Spare: the spare capacity left (1 = all).",
        h.available_spare_percent.map(|p| f64::from(p) / 100.0),
    );
    m.one(
        "storage_score_available_spare_threshold_ratio",
        "gauge",
        "NVMe Available Spare Threshold: the spare level the drive warns at.",
        h.available_spare_threshold_percent.map(|p| f64::from(p) / 100.0),
    );
    m.one(
        "storage_score_media_errors_total",
        "counter",
        "Unrecovered media and data-integrity errors over the device's life (NVMe).",
        h.media_errors.map(|v| v as f64),
    );
    let warnings: Vec<(String, f64)> = h
        .critical_warning
        .iter()
        .flatten()
        .map(|w| (format!(",warning=\"{}\"", escape_label(w.as_str())), 1.0))
        .collect();
    m.family(
        "storage_score_nvme_critical_warning",
        "gauge",
        "An NVMe Critical Warning bit that is set (one sample per bit; none when none is).",
        &warnings,
    );
    m.one(
        "storage_score_smart_passed",
        "gauge",
        "ATA SMART RETURN STATUS: 1 passed, 0 threshold exceeded.",
        h.smart_passed.map(flag),
    );
    let sectors: Vec<(String, f64)> = [
        ("reallocated", h.reallocated_sectors),
        ("pending", h.pending_sectors),
        ("uncorrectable", h.uncorrectable_sectors),
    ]
    .iter()
    .filter_map(|(t, v)| v.map(|v| (format!(",state=\"{t}\""), v as f64)))
    .collect();
    m.family(
        "storage_score_ata_sectors",
        "gauge",
        "ATA reallocated, pending and uncorrectable sector counts (raw).",
        &sectors,
    );
    let thermal = report.thermal.as_ref().and_then(|t| t.now.clone()).unwrap_or_default();
    m.one(
        "storage_score_drive_temperature_celsius",
        "gauge",
        "The drive's temperature, from its health report or its hwmon sensor.",
        h.temperature_c.map(f64::from).or(thermal.drive_temperature_c),
    );
    m.one(
        "storage_score_drive_temperature_warning_celsius",
        "gauge",
        "The drive's own warning temperature (NVMe WCTEMP).",
        h.temperature_warning_c.map(f64::from),
    );
    m.one(
        "storage_score_host_written_bytes_total",
        "counter",
        "Bytes this host has written to the device since boot or since the device appeared (sysfs stat, sectors written x 512); it restarts at each boot.",
        written.map(|w| w as f64),
    );
    m.one(
        "storage_score_device_written_bytes_total",
        "counter",
        "Bytes written as the device itself counts them over its life (NVMe Data Units Written x 512000).",
        h.data_written_bytes.map(|v| v as f64),
    );
    m.one(
        "storage_score_power_on_seconds_total",
        "counter",
        "Time powered on over the device's life, as it counts it (in hours, given here in seconds).",
        h.power_on_hours.map(|v| v as f64 * 3600.0),
    );
    let advice: Vec<(String, f64)> = report
        .advice
        .iter()
        .map(|a| {
            let sev = match a.severity {
                Severity::Critical => "critical",
                Severity::Warn => "warn",
                Severity::Info => "info",
                Severity::Unknown => "unknown",
            };
            (format!(",code=\"{}\",severity=\"{sev}\"", escape_label(a.code.as_str())), 1.0)
        })
        .collect();
    m.family(
        "storage_score_advice",
        "gauge",
        "A piece of advice doctor gave (one sample per code raised; none when none was).",
        &advice,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/grafana-dashboard.json asks only for metrics this writes.
    #[test]
    fn the_dashboard_uses_only_metrics_that_exist() {
        use storage_scoring::health::{CriticalWarning, Health, HealthSource, ThermalSnapshot};
        let mut r = Report::new("0");
        r.health = Some(Health {
            source: Some(HealthSource::NvmeSmartLog),
            status: Some(HealthStatus::Ok),
            percentage_used: Some(3),
            available_spare_percent: Some(100),
            available_spare_threshold_percent: Some(10),
            temperature_c: Some(40),
            temperature_warning_c: Some(70),
            media_errors: Some(0),
            critical_warning: Some(vec![CriticalWarning::Temperature]),
            smart_passed: Some(true),
            reallocated_sectors: Some(0),
            data_written_bytes: Some(1),
            power_on_hours: Some(1),
            life_time_est_a: Some(1),
            pre_eol: Some(PreEol::Normal),
            ..Health::default()
        });
        let thermal = ThermalSnapshot {
            soc_temperature_c: Some(50.0),
            get_throttled: Some("0x0".to_owned()),
            under_voltage_alarm: Some(false),
            ..ThermalSnapshot::default()
        };
        r.thermal = Some(storage_scoring::health::Thermal { now: Some(thermal), ..Default::default() });
        r.advice.push(storage_scoring::health::Advice {
            code: storage_scoring::health::AdviceCode::Hot,
            severity: Severity::Warn,
            evidence: String::new(),
            fix: String::new(),
            source: String::new(),
        });
        let text = render(&[Examined { report: &r, written: Some(1), mask: 16 }]);
        let dashboard = include_str!("../../../docs/grafana-dashboard.json");
        let mut asked = 0;
        for (i, _) in dashboard.match_indices("storage_score_") {
            let name: String = dashboard[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            assert!(text.contains(&format!("# TYPE {name} ")), "the dashboard asks for {name}, which is not written");
            asked += 1;
        }
        assert!(asked >= 15, "{asked}");
        // Hosts are told apart: an `instance` variable, and every query
        // asks for it.
        let doc: serde_json::Value = serde_json::from_str(dashboard).expect("the dashboard is JSON");
        let variables: Vec<&str> = doc["templating"]["list"]
            .as_array()
            .expect("variables")
            .iter()
            .filter_map(|v| v["name"].as_str())
            .collect();
        assert_eq!(variables, ["instance", "device"]);
        let exprs: Vec<&str> = dashboard.lines().filter(|l| l.trim_start().starts_with("\"expr\"")).collect();
        assert!(exprs.len() >= 15 && exprs.iter().all(|e| e.contains("instance=~")), "{exprs:?}");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a "b" \c"#), r#"a \"b\" \\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
    }

    #[test]
    fn every_family_has_help_and_type_and_the_labels() {
        let mut r = Report::new("0");
        r.health = Some(storage_scoring::health::Health {
            source: Some(storage_scoring::health::HealthSource::NvmeSmartLog),
            percentage_used: Some(3),
            media_errors: Some(0),
            ..Default::default()
        });
        let text = render(&[Examined { report: &r, written: Some(4096), mask: 0 }]);
        assert!(text.contains("storage_score_life_used_ratio{device=\"\",kind=\"other\",model=\"\"} 0.03\n"), "{text}");
        assert!(text.contains("storage_score_host_written_bytes_total{device=\"\",kind=\"other\",model=\"\"} 4096\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split('{').next().unwrap();
            assert!(text.contains(&format!("# HELP {name} ")) && text.contains(&format!("# TYPE {name} ")), "{name}");
        }
    }

    /// Two devices of one machine: each family's HELP and TYPE once with
    /// the samples of both together, the machine's series once and without
    /// device labels.
    #[test]
    fn two_devices_share_families_and_the_machine_is_written_once() {
        use storage_scoring::health::{Thermal, ThermalSnapshot};
        let mut sd = Report::new("0");
        sd.target = Some(storage_scoring::schema::Target { disk: Some("mmcblk0".into()), ..Default::default() });
        let thermal = ThermalSnapshot { soc_temperature_c: Some(51.5), ..ThermalSnapshot::default() };
        sd.thermal = Some(Thermal { now: Some(thermal), ..Thermal::default() });
        let mut ssd = sd.clone();
        ssd.target = Some(storage_scoring::schema::Target { disk: Some("sda".into()), ..Default::default() });
        let text = render(&[
            Examined { report: &sd, written: Some(1), mask: 0 },
            Examined { report: &ssd, written: Some(2), mask: 16 },
        ]);
        assert_eq!(text.matches("# HELP storage_score_doctor_status ").count(), 1, "{text}");
        assert_eq!(text.matches("# TYPE storage_score_host_written_bytes_total ").count(), 1, "{text}");
        assert!(text.contains("storage_score_doctor_status{device=\"mmcblk0\",kind=\"other\",model=\"\"} 0\nstorage_score_doctor_status{device=\"sda\",kind=\"other\",model=\"\"} 16\n"), "{text}");
        assert_eq!(text.matches("storage_score_soc_temperature_celsius 51.5\n").count(), 1, "{text}");
        assert!(!text.contains("storage_score_soc_temperature_celsius{"), "{text}");
    }
}
