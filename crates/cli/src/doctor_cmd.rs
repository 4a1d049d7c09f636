//! `storage-score doctor` (docs/doctor.md): the device's own health and the
//! advice on how this machine uses it, read-only, in a few seconds. The
//! JSON is a `storage-score/1` report without measurements.

use std::path::Path;
use std::time::Instant;

use storage_identify::checkup::checkup;
use storage_platform::Roots;
use storage_scoring::health::{Health, Thermal, ThermalSnapshot};
use storage_scoring::schema::Report;

use crate::outputs::OutputFile;
use crate::{DoctorArgs, Failure, doctor_render, doctor_status, history, prometheus};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Runs `doctor`; the exit status is [`doctor_status::exit_mask`] of what
/// was found (0: nothing), or the failure's own code.
pub fn doctor(args: &DoctorArgs, roots: &Roots) -> Result<i32, Failure> {
    if let Some(device) = &args.history {
        history::show(args, device)?;
        return Ok(0);
    }
    let started = Instant::now();
    // A file that cannot be written is refused before anything is read.
    let metrics_file = match args.prometheus.as_deref() {
        Some(dest) if dest != "-" => Some(OutputFile::prepare(Path::new(dest), "--prometheus")?),
        _ => None,
    };
    let report = examine(&args.target, roots)?;
    let mask = doctor_status::exit_mask(&report);
    let written = history::disk_name(&report).and_then(|d| history::boot_written(roots, &d));
    let logged = if args.log { Some(history::log(&args.history_dir, &report, roots, written)?) } else { None };
    let metrics_on_stdout = args.prometheus.as_deref() == Some("-");
    if args.prometheus.is_some() {
        let text = prometheus::render(&report, written, mask);
        match &metrics_file {
            Some(file) => file.write(text.as_bytes())?,
            None => crate::terminal::out(&text),
        }
    }
    if metrics_on_stdout {
        // stdout carries the metrics alone, for a collector to read.
    } else if args.json {
        let json = serde_json::to_string_pretty(&report)
            .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
        crate::terminal::json_outln(&json);
    } else if args.quiet {
        let disk = report.target.as_ref().and_then(|t| t.disk.clone()).unwrap_or_else(|| args.target.clone());
        for line in doctor_status::findings(&report) {
            crate::terminal::outln(&format!("{disk}: {line}"));
        }
    } else {
        crate::terminal::out(&doctor_render::render(&report, started.elapsed()));
        if let Some(path) = logged {
            crate::terminal::outln(&format!("logged: {} (the history, not the device)", path.display()));
        }
    }
    Ok(mask)
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
