//! `doctor`'s examination (docs/doctor.md): what to examine, each target's
//! report (identification, the device's own health, advice, the
//! temperature now), its exit bits, this boot's bytes written, and
//! `--log`'s history lines. Printing it, as text, JSON or metrics, is the
//! command line's.

use std::path::{Path, PathBuf};

use storage_history::HistoryError;
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
