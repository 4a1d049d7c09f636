//! `storage-score doctor` (docs/doctor.md): the device's own health and the
//! advice on how this machine uses it, read-only, in a few seconds. The
//! JSON is a `storage-score/1` report without measurements.

use std::path::Path;
use std::time::Instant;

use storage_history::prometheus;
use storage_platform::Roots;
use storage_scoring::schema::Report;
use storage_session::doctor::{self, Examined};
use storage_session::doctor_status;
use storage_session::outputs::OutputFile;

use crate::{DoctorArgs, Failure, doctor_render, history_cmd};

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
    let targets = doctor::targets(args.all, &args.targets, roots)?;
    let Examined { reports, masks, written, logged } =
        doctor::examine_all(&targets, roots, args.log.then_some(args.history_dir.as_path()))?;
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
        crate::terminal::json_outln(&storage_session::document::encode(
            doctor::DOCTOR,
            &Machine { devices: &reports },
        )?);
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
