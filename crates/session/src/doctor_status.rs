//! `doctor`'s exit status (docs/doctor.md#exit-status): a bit mask, as
//! smartctl's, so that a script or a systemd unit can tell what was found
//! without reading the output; and the one-line findings `--quiet` prints.
//!
//! The bits start at 8 so that no combination of them is one of the codes
//! every command shares (1 run failed, 2 bad usage, 3 refused, 4 fake):
//! any status of 8 or more is a finding, any below it is the tool's own.
//! 8 is also smartctl's bit 3, "DISK FAILING".

use storage_scoring::health::{Health, HealthStatus, Severity};
use storage_scoring::schema::Report;

/// The device says it is failing (NVMe critical warning, SMART failed,
/// eMMC pre-EOL urgent or past its life, an SD card past its life).
pub const FAILING: i32 = 8;
/// A warning: advice of severity warn or critical, the device's own
/// warning status, or wear at or past [`WEAR_WARN_PERCENT`].
pub const WARNING: i32 = 16;
/// The device has a health source, and it could not be read.
pub const UNREADABLE: i32 = 32;

/// Life used from which wear alone is a warning: where eMMC raises its
/// pre-EOL warning (80% of the reserved blocks), and early enough to buy a
/// replacement before the device's own 90% warning.
pub const WEAR_WARN_PERCENT: u16 = 80;

/// The most life used the device reports (the band's upper bound).
pub fn life_used(h: &Health) -> Option<u16> {
    h.percentage_used.or(h.percentage_used_range.map(|[_, hi]| hi))
}

/// The exit status for one examined device: 0 when nothing was found.
pub fn exit_mask(report: &Report) -> i32 {
    let mut mask = 0;
    if let Some(h) = &report.health {
        if h.status == Some(HealthStatus::Failing) {
            mask |= FAILING;
        }
        if h.status == Some(HealthStatus::Warn) || life_used(h).is_some_and(|p| p >= WEAR_WARN_PERCENT) {
            mask |= WARNING;
        }
        if h.unreadable {
            mask |= UNREADABLE;
        }
    }
    if report.advice.iter().any(|a| matches!(a.severity, Severity::Warn | Severity::Critical)) {
        mask |= WARNING;
    }
    mask
}

/// What was found, one line each, most severe first: what `--quiet`
/// prints (nothing at all when nothing was found). Advice of severity
/// `info` is listed too; it sets no bit.
pub fn findings(report: &Report) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(h) = &report.health {
        let source = h.source.map(|s| s.as_str()).unwrap_or("no source");
        match h.status {
            Some(HealthStatus::Failing) => {
                lines.push(format!("[FAILING] health ({source}): the device says it is failing; copy off what matters"))
            }
            Some(HealthStatus::Warn) => {
                lines.push(format!("[warn] health ({source}): worn or warning; keep backups, plan a replacement"))
            }
            _ => {}
        }
        if let Some(p) = life_used(h).filter(|&p| p >= WEAR_WARN_PERCENT && h.status != Some(HealthStatus::Warn)) {
            lines.push(format!("[warn] wear: {p}% of the rated life used (a warning from {WEAR_WARN_PERCENT}%)"));
        }
        if h.unreadable {
            lines.push(format!(
                "[unreadable] health: {}",
                h.why.as_deref().unwrap_or("the device's health could not be read")
            ));
        }
    }
    for a in &report.advice {
        let tag = match a.severity {
            Severity::Critical => "CRITICAL",
            Severity::Warn => "warn",
            Severity::Info => "info",
            Severity::Unknown => "?",
        };
        lines.push(format!("[{tag}] {}: {}; seen: {}", a.code.as_str(), a.code.title(), a.evidence));
    }
    lines
}

/// `doctor --quiet`: each report's [`findings`], each line after the disk
/// it is about (the target as named, when the report names no disk).
pub fn quiet(reports: &[Report], targets: &[String]) -> String {
    let mut text = String::new();
    for (report, target) in reports.iter().zip(targets) {
        let disk = report.target.as_ref().and_then(|t| t.disk.clone()).unwrap_or_else(|| target.clone());
        for line in findings(report) {
            text.push_str(&format!("{disk}: {line}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage_scoring::health::{Advice, AdviceCode};

    fn advice(severity: Severity) -> Advice {
        Advice {
            code: AdviceCode::Hot,
            severity,
            evidence: "e".to_owned(),
            fix: "f".to_owned(),
            source: "s".to_owned(),
        }
    }

    #[test]
    fn each_finding_sets_its_bit_and_nothing_sets_none() {
        let mut r = Report::new("0");
        assert_eq!(exit_mask(&r), 0);
        r.health = Some(Health { status: Some(HealthStatus::Ok), percentage_used: Some(79), ..Health::default() });
        assert_eq!(exit_mask(&r), 0, "79% is below the wear threshold");
        r.advice.push(advice(Severity::Info));
        assert_eq!(exit_mask(&r), 0, "info sets no bit");
        assert_eq!(findings(&r).len(), 1, "but --quiet lists it");
        r.health.as_mut().unwrap().percentage_used = Some(80);
        assert_eq!(exit_mask(&r), WARNING);
        r.health = Some(Health { percentage_used_range: Some([80, 90]), ..Health::default() });
        assert_eq!(exit_mask(&r), WARNING, "a band counts by its upper bound");
        r.health = Some(Health { status: Some(HealthStatus::Failing), ..Health::default() });
        r.advice.push(advice(Severity::Critical));
        assert_eq!(exit_mask(&r), FAILING | WARNING);
        r.health = Some(Health::unreadable("needs root"));
        assert_eq!(exit_mask(&r), WARNING | UNREADABLE);
        assert!(findings(&r).iter().any(|l| l == "[unreadable] health: needs root"));
        r.health = Some(Health::none("a loop device is a file"));
        r.advice.clear();
        assert_eq!(exit_mask(&r), 0, "no source is not a finding");
    }

    #[test]
    fn no_combination_of_bits_is_a_shared_exit_code() {
        for mask in 1..8 {
            let code = (mask & 1) * FAILING + (mask >> 1 & 1) * WARNING + (mask >> 2 & 1) * UNREADABLE;
            assert!((8..64).contains(&code), "{code}");
        }
    }

    #[test]
    fn quiet_names_the_disk_of_each_finding() {
        let mut warned = Report::new("0.1.0");
        warned.advice.push(advice(Severity::Warn));
        warned.target =
            Some(storage_scoring::schema::Target { disk: Some("mmcblk0".to_owned()), ..Default::default() });
        let quiet_one = Report::new("0.1.0");
        let text = quiet(&[warned.clone(), quiet_one], &["/".to_owned(), "/dev/sda".to_owned()]);
        let expected: String = findings(&warned).iter().map(|l| format!("mmcblk0: {l}\n")).collect();
        assert!(!expected.is_empty());
        assert_eq!(text, expected, "nothing found is no line");
        warned.target = None;
        assert!(quiet(&[warned], &["/srv".to_owned()]).starts_with("/srv: "));
    }
}
