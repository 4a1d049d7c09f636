//! `storage-score doctor` (docs/doctor.md): the device's own health and the
//! advice on how this machine uses it, read-only, in a few seconds. The
//! JSON is a `storage-score/1` report without measurements.

use std::time::Instant;

use storage_platform::Roots;
use storage_session::doctor::{self, Examined};
use storage_session::doctor_status;

use crate::{DoctorArgs, Failure, doctor_render, history_cmd};

/// Runs `doctor`; the exit status is [`doctor_status::exit_mask`] of what
/// was found (0: nothing), or of every device found, or the failure's own
/// code.
pub fn doctor(args: &DoctorArgs, roots: &Roots) -> Result<i32, Failure> {
    if let Some(device) = &args.history {
        history_cmd::show(args, doctor::history_device(device, &args.targets))?;
        return Ok(0);
    }
    let started = Instant::now();
    let metrics_file = doctor::metrics_file(args.prometheus.as_deref())?;
    let targets = doctor::targets(args.all, &args.targets, roots)?;
    let examined = doctor::examine_all(&targets, roots, args.log.then_some(args.history_dir.as_path()))?;
    if args.prometheus.is_some() {
        let text = doctor::metrics(&examined);
        match &metrics_file {
            Some(file) => file.write(text.as_bytes())?,
            None => crate::terminal::out_records(&text),
        }
    }
    let Examined { reports, masks, logged, .. } = examined;
    let machine = reports.len() > 1 || args.all;
    if args.prometheus.as_deref() == Some("-") {
        // stdout carries the metrics alone, for a collector to read.
    } else if args.json && machine {
        crate::terminal::json_outln(&doctor::machine_json(&reports)?);
    } else if args.json {
        let json = serde_json::to_string_pretty(&reports[0])
            .map_err(|e| Failure::Run(format!("cannot encode the report as JSON: {e}")))?;
        crate::terminal::json_outln(&json);
    } else if args.quiet {
        crate::terminal::out_records(&doctor_status::quiet(&reports, &targets));
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
