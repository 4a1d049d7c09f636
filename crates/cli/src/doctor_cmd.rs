//! `storage-score doctor` (docs/doctor.md): the device's own health and the
//! advice on how this machine uses it, read-only, in a few seconds. The
//! JSON is a `storage-score/1` report without measurements.

use std::time::Instant;

use storage_identify::Roots;
use storage_identify::checkup::checkup;
use storage_scoring::health::{Health, Thermal, ThermalSnapshot};
use storage_scoring::schema::Report;

use crate::{DoctorArgs, Failure, doctor_render};

const VERSION: &str = env!("CARGO_PKG_VERSION");

pub fn doctor(args: &DoctorArgs, roots: &Roots) -> Result<(), Failure> {
    let started = Instant::now();
    let report = examine(&args.target, roots)?;
    if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
        crate::terminal::json_outln(&json);
    } else {
        crate::terminal::out(&doctor_render::render(&report, started.elapsed()));
    }
    Ok(())
}

/// The report `doctor` prints: identification, health, advice, thermal now.
pub fn examine(target: &str, roots: &Roots) -> Result<Report, Failure> {
    let (resolved, device) = storage_identify::identify(target, roots)?;
    let system = storage_identify::system::system(roots);
    let mut report = Report::new(VERSION);
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
