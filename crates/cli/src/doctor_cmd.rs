//! `storage-score doctor` (docs/doctor.md): the device's own health and the
//! advice on how this machine uses it, read-only, in a few seconds. The
//! JSON is a `storage-score/1` report without measurements.

use std::path::Path;
use std::time::Instant;

use storage_history::prometheus;
use storage_identify::checkup::checkup;
use storage_platform::Roots;
use storage_scoring::health::{Health, Thermal, ThermalSnapshot};
use storage_scoring::schema::Report;

use crate::outputs::OutputFile;
use crate::{DoctorArgs, Failure, doctor_render, doctor_status, history_cmd};

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `doctor --json` with several devices.
pub const DOCTOR: &str = "storage-score-doctor/1";

/// Runs `doctor`; the exit status is [`doctor_status::exit_mask`] of what
/// was found (0: nothing), or of every device found, or the failure's own
/// code.
pub fn doctor(args: &DoctorArgs, roots: &Roots) -> Result<i32, Failure> {
    if let Some(device) = &args.history {
        // `--history` takes the next word only when it comes right after;
        // `doctor --history --json sda` names the device as a target.
        let device = match (device.as_str(), args.targets.as_slice()) {
            ("", [one]) => one.as_str(),
            (device, _) => device,
        };
        history_cmd::show(args, device)?;
        return Ok(0);
    }
    let started = Instant::now();
    // A file that cannot be written is refused before anything is read.
    let metrics_file = match args.prometheus.as_deref() {
        Some(dest) if dest != "-" => Some(OutputFile::prepare(Path::new(dest), "--prometheus")?),
        _ => None,
    };
    let targets = targets(args, roots)?;
    let reports = targets.iter().map(|t| examine(t, roots)).collect::<Result<Vec<Report>, Failure>>()?;
    let masks: Vec<i32> = reports.iter().map(doctor_status::exit_mask).collect();
    let written: Vec<Option<u64>> = reports
        .iter()
        .map(|r| storage_history::disk_name(r).and_then(|d| storage_history::boot_written(roots, &d)))
        .collect();
    let mut logged = Vec::new();
    if args.log {
        for (report, written) in reports.iter().zip(&written) {
            logged
                .push(storage_history::log(&args.history_dir, report, roots, *written).map_err(history_cmd::failure)?);
        }
    }
    if args.prometheus.is_some() {
        let examined: Vec<prometheus::Examined> = reports
            .iter()
            .zip(&written)
            .zip(&masks)
            .map(|((report, written), mask)| prometheus::Examined { report, written: *written, mask: *mask })
            .collect();
        let text = prometheus::render(&examined);
        match &metrics_file {
            Some(file) => file.write(text.as_bytes())?,
            None => crate::terminal::out_records(&text),
        }
    }
    let machine = reports.len() > 1 || args.all;
    if args.prometheus.as_deref() == Some("-") {
        // stdout carries the metrics alone, for a collector to read.
    } else if args.json && machine {
        #[derive(serde::Serialize)]
        struct Machine<'a> {
            devices: &'a [Report],
        }
        crate::terminal::json_outln(&crate::document::encode(DOCTOR, &Machine { devices: &reports })?);
    } else if args.json {
        let json = serde_json::to_string_pretty(&reports[0])
            .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
        crate::terminal::json_outln(&json);
    } else if args.quiet {
        for (report, target) in reports.iter().zip(&targets) {
            let disk = report.target.as_ref().and_then(|t| t.disk.clone()).unwrap_or_else(|| target.clone());
            for line in doctor_status::findings(report) {
                crate::terminal::out_records(&format!("{disk}: {line}\n"));
            }
        }
    } else {
        for (i, report) in reports.iter().enumerate() {
            if i > 0 {
                crate::terminal::outln("");
            }
            crate::terminal::out(&doctor_render::render(report, started.elapsed()));
        }
        for path in logged {
            crate::terminal::outln(&format!("logged: {} (the history, not the device)", path.display()));
        }
    }
    Ok(masks.iter().fold(0, |all, mask| all | mask))
}

/// What to examine: the targets named, every disk with `--all`, or `/`.
fn targets(args: &DoctorArgs, roots: &Roots) -> Result<Vec<String>, Failure> {
    if args.all {
        let disks: Vec<String> = crate::scan_cmd::entries(roots)?.into_iter().map(|e| e.name).collect();
        if disks.is_empty() {
            return Err(Failure::Usage("doctor --all: this machine has no disk to examine".to_owned()));
        }
        return Ok(disks);
    }
    let mut targets = args.targets.clone();
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
