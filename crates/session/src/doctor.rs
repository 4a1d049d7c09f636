//! `doctor`'s examination (docs/doctor.md): what to examine, each target's
//! report (identification, the device's own health, advice, the
//! temperature now), its exit bits, this boot's bytes written, and
//! `--log`'s history lines; `--history`'s trends of what was logged.
//! Printing it, as text, JSON or metrics, is the command line's.

use std::path::{Path, PathBuf};

use storage_history::HistoryError;
use storage_history::dir::History;
use storage_history::trend::{Trend, trend};
use storage_identify::checkup::checkup;
use storage_platform::Roots;
use storage_scoring::health::{Health, Thermal, ThermalSnapshot};
use storage_scoring::schema::Report;

use crate::Failure;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `doctor --json` with several devices.
pub const DOCTOR: &str = "storage-score-doctor/1";

/// What `doctor` found of its targets, in their order.
#[derive(Debug)]
pub struct Examined {
    pub reports: Vec<Report>,
    /// Each report's exit bits ([`crate::doctor_status::exit_mask`]).
    pub masks: Vec<i32>,
    /// The bytes this boot wrote to each device, from the kernel's counter.
    pub written: Vec<Option<u64>>,
    /// The history files appended to (`--log`).
    pub logged: Vec<PathBuf>,
}

/// Examines every target and, with `log` (the history directory), appends
/// each device's snapshot to its history.
pub fn examine_all(targets: &[String], roots: &Roots, log: Option<&Path>) -> Result<Examined, Failure> {
    let reports = targets.iter().map(|t| examine(t, roots)).collect::<Result<Vec<Report>, Failure>>()?;
    let masks: Vec<i32> = reports.iter().map(crate::doctor_status::exit_mask).collect();
    let written: Vec<Option<u64>> = reports
        .iter()
        .map(|r| storage_history::disk_name(r).and_then(|d| storage_history::boot_written(roots, &d)))
        .collect();
    let mut logged = Vec::new();
    if let Some(dir) = log {
        for (report, written) in reports.iter().zip(&written) {
            logged.push(storage_history::log(dir, report, roots, *written).map_err(history_failure)?);
        }
    }
    Ok(Examined { reports, masks, written, logged })
}

/// A history's error, with its exit code: bad usage (2) or a failed run (1).
pub fn history_failure(e: HistoryError) -> Failure {
    if e.is_usage() { Failure::Usage(e.to_string()) } else { Failure::Run(e.to_string()) }
}

/// `doctor --json` of several devices (and `show --json` of it): one document.
pub fn machine_json(reports: &[Report]) -> Result<String, Failure> {
    #[derive(serde::Serialize)]
    struct Machine<'a> {
        devices: &'a [Report],
    }
    crate::document::encode(DOCTOR, &Machine { devices: reports })
}

/// `doctor --prometheus`: the metrics of what was examined.
pub fn metrics(examined: &Examined) -> String {
    let Examined { reports, masks, written, .. } = examined;
    let examined: Vec<storage_history::prometheus::Examined> = reports
        .iter()
        .zip(written)
        .zip(masks)
        .map(|((report, written), mask)| storage_history::prometheus::Examined {
            report,
            written: *written,
            mask: *mask,
        })
        .collect();
    storage_history::prometheus::render(&examined)
}

/// `identify --json`: the report's `target`, `device`, `system`,
/// `health`, `advice` and `thermal` blocks, as one document.
pub fn identify_json(report: &Report) -> Result<String, Failure> {
    use storage_scoring::schema::{Advice, Device, System, Target};
    #[derive(serde::Serialize)]
    struct IdentifyDoc<'a> {
        target: &'a Target,
        #[serde(skip_serializing_if = "Option::is_none")]
        device: Option<&'a Device>,
        system: &'a System,
        #[serde(skip_serializing_if = "Option::is_none")]
        health: Option<&'a Health>,
        #[serde(skip_serializing_if = "<[Advice]>::is_empty")]
        advice: &'a [Advice],
        #[serde(skip_serializing_if = "Option::is_none")]
        thermal: Option<&'a Thermal>,
    }
    let (Some(target), Some(system)) = (&report.target, &report.system) else {
        return Err(Failure::Run("identification produced no target".to_owned()));
    };
    let doc = IdentifyDoc {
        target,
        device: report.device.as_ref(),
        system,
        health: report.health.as_ref(),
        advice: &report.advice,
        thermal: report.thermal.as_ref(),
    };
    crate::document::encode(crate::document::IDENTIFY, &doc)
}

/// The device `--history` names: `--history` takes the next word only
/// when it comes right after, so `doctor --history --json sda` names the
/// device as the one target.
pub fn history_device<'a>(flag: &'a str, targets: &'a [String]) -> &'a str {
    match (flag, targets) {
        ("", [one]) => one.as_str(),
        (device, _) => device,
    }
}

/// `--prometheus FILE` opened, so that a file that cannot be written is
/// refused before anything is read; none for `-` (stdout) or without it.
pub fn metrics_file(dest: Option<&str>) -> Result<Option<crate::outputs::OutputFile>, Failure> {
    match dest {
        Some(dest) if dest != "-" => Ok(Some(crate::outputs::OutputFile::prepare(Path::new(dest), "--prometheus")?)),
        _ => Ok(None),
    }
}

/// `doctor --history [DEVICE]`: the trend of each device logged in
/// `dir` that `which` selects (a device ID's start, or the disk it was
/// last seen as; "" = all), against `endurance_tbw` terabytes when given.
pub fn history_trends(dir: &Path, which: &str, endurance_tbw: Option<f64>) -> Result<Vec<Trend>, Failure> {
    if endurance_tbw.is_some_and(|t| !(t.is_finite() && t > 0.0)) {
        return Err(Failure::Usage("--endurance-tbw must be a number of terabytes above 0".to_owned()));
    }
    let history = History::open(dir, false).map_err(history_failure)?;
    let mut trends = Vec::new();
    for (name, snapshots, bad) in history.read_all().map_err(history_failure)? {
        let id = name.to_string_lossy().trim_end_matches(".jsonl").to_owned();
        let disk = snapshots.last().and_then(|s| s.disk.as_deref());
        if !which.is_empty() && !id.starts_with(which) && disk != Some(which) {
            continue;
        }
        let mut t = trend(&id, &snapshots, endurance_tbw);
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
            dir.display()
        )));
    }
    Ok(trends)
}

/// `doctor --history --json`: the trends as one document.
pub fn history_json(dir: &Path, trends: &[Trend]) -> Result<String, Failure> {
    #[derive(serde::Serialize)]
    struct Document<'a> {
        schema: &'static str,
        created: String,
        history_dir: String,
        devices: &'a [Trend],
    }
    let doc = Document {
        schema: "storage-score-history-trend/1",
        created: crate::document::now(),
        history_dir: dir.display().to_string(),
        devices: trends,
    };
    serde_json::to_string_pretty(&doc).map_err(|e| Failure::Run(format!("cannot encode the history as JSON: {e}")))
}

/// What to examine: the targets named, every disk with `--all`, or `/`.
pub fn targets(all: bool, named: &[String], roots: &Roots) -> Result<Vec<String>, Failure> {
    if all {
        let disks: Vec<String> = crate::scan::entries(roots)?.into_iter().map(|e| e.name).collect();
        if disks.is_empty() {
            return Err(Failure::Usage("doctor --all: this machine has no disk to examine".to_owned()));
        }
        return Ok(disks);
    }
    let mut targets = named.to_vec();
    if targets.is_empty() {
        targets.push("/".to_owned());
    }
    targets.dedup();
    Ok(targets)
}

/// The report `doctor` prints: identification, health, advice, thermal now.
pub fn examine(target: &str, roots: &Roots) -> Result<Report, Failure> {
    let (resolved, device) = storage_identify::identify(target, roots)?;
    let system = storage_identify::system::system(roots);
    let mut report = Report::new(VERSION);
    report.created = Some(crate::document::now());
    match (&resolved.disk, &device) {
        (Some(disk), Some(device)) => {
            let found = checkup(disk, device, roots, system.board.as_deref());
            report.health = Some(found.health);
            report.advice = found.advice;
            // A machine with no sensor at all gets no thermal section.
            if found.thermal != ThermalSnapshot::default() {
                report.thermal = Some(Thermal { now: Some(found.thermal), ..Thermal::default() });
            }
        }
        _ => {
            report.health =
                Some(Health::none(format!("nothing block-backed lies under {target}: there is no device to examine")));
        }
    }
    report.target = Some(resolved.target);
    report.device = device;
    report.system = Some(system);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(id: &str, time: &str, disk: &str, written: u64) -> String {
        format!(
            r#"{{"schema":"{}","time":"{time}","device_id":"{id}","disk":"{disk}","host_written_bytes":{written}}}"#,
            storage_history::SCHEMA
        )
    }

    #[test]
    fn the_history_of_each_device_selected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = [
            snapshot("aaaa", "2026-12-01T00:00:00Z", "mmcblk0", 1_000_000_000),
            snapshot("aaaa", "2026-12-03T00:00:00Z", "mmcblk0", 3_000_000_000),
            "not a snapshot".to_owned(),
        ];
        std::fs::write(dir.path().join("aaaa.jsonl"), a.join("\n")).expect("write");
        std::fs::write(dir.path().join("bbbb.jsonl"), snapshot("bbbb", "2026-12-01T00:00:00Z", "sda", 5))
            .expect("write");

        let all = history_trends(dir.path(), "", None).expect("trends");
        assert_eq!(all.len(), 2);
        let by_disk = history_trends(dir.path(), "mmcblk0", None).expect("trends");
        assert_eq!(by_disk.len(), 1);
        assert_eq!(by_disk[0].device_id, "aaaa");
        assert_eq!(
            by_disk[0].notes.last().map(String::as_str),
            Some("1 line(s) of the file were not snapshots and were left out")
        );
        assert_eq!(history_trends(dir.path(), "bb", None).expect("by id")[0].device_id, "bbbb");

        let json: serde_json::Value =
            serde_json::from_str(&history_json(dir.path(), &by_disk).expect("json")).expect("parse");
        assert_eq!(json["schema"], "storage-score-history-trend/1");
        assert_eq!(json["devices"][0]["device_id"], "aaaa");
    }

    #[test]
    fn a_machine_is_one_document_and_its_metrics_name_each_device() {
        let report = Report::new(VERSION);
        let doc: serde_json::Value =
            serde_json::from_str(&machine_json(&[report.clone(), report.clone()]).expect("json")).expect("parse");
        assert_eq!(doc["schema"], DOCTOR);
        assert_eq!(doc["devices"].as_array().map(Vec::len), Some(2));
        let examined = Examined { reports: vec![report], masks: vec![0], written: vec![Some(7)], logged: Vec::new() };
        let text = metrics(&examined);
        assert!(text.lines().any(|l| l.starts_with("# TYPE ")), "{text}");
    }

    #[test]
    fn history_names_a_device_or_takes_the_one_target() {
        let targets = ["sda".to_owned()];
        assert_eq!(history_device("", &targets), "sda");
        assert_eq!(history_device("mmcblk0", &targets), "mmcblk0");
        assert_eq!(history_device("", &[]), "");
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(metrics_file(Some("-")).expect("stdout").is_none());
        assert!(metrics_file(None).expect("none").is_none());
        let path = dir.path().join("doctor.prom");
        assert!(metrics_file(path.to_str()).expect("file").is_some());
        let missing = dir.path().join("missing").join("doctor.prom");
        assert!(metrics_file(missing.to_str()).expect_err("no directory").to_string().starts_with("--prometheus "));
    }

    #[test]
    fn identify_needs_a_target_and_a_system() {
        let mut report = Report::new(VERSION);
        assert_eq!(identify_json(&report).expect_err("no target").to_string(), "identification produced no target");
        report.target = Some(storage_scoring::schema::Target::default());
        report.system = Some(storage_scoring::schema::System::default());
        let doc: serde_json::Value = serde_json::from_str(&identify_json(&report).expect("json")).expect("parse");
        assert_eq!(doc["schema"], crate::document::IDENTIFY);
        assert!(doc.get("target").is_some() && doc.get("system").is_some());
        assert!(doc.get("device").is_none() && doc.get("advice").is_none(), "{doc}");
    }

    #[test]
    fn nothing_logged_and_a_bad_tbw_are_bad_usage() {
        let dir = tempfile::tempdir().expect("tempdir");
        let e = history_trends(dir.path(), "sdz", None).expect_err("empty");
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("holds no history of a device \"sdz\""), "{e}");
        let e = history_trends(dir.path(), "", Some(0.0)).expect_err("tbw");
        assert_eq!(e.to_string(), "--endurance-tbw must be a number of terabytes above 0");
        assert_eq!(history_trends(&dir.path().join("missing"), "", None).expect_err("no dir").exit_code(), 2);
    }
}
