//! `verify-capacity`: refuse or clear the device, replay an unfinished
//! journal, probe, render. The work is `storage-capacity`'s; this maps its
//! answers and errors onto output and exit codes (0 genuine, 4 fake).

use std::io::IsTerminal;
use std::path::Path;

use storage_capacity::{ProbeError, Watch};
use storage_session::capacity::{ProbeOptions, probe};

use crate::terminal::{errln, json_outln, out, outln};
use crate::{Failure, VerifyCapacityArgs};

/// `verify-capacity`'s options as the probe takes them.
pub fn probe_options(args: &VerifyCapacityArgs) -> ProbeOptions {
    ProbeOptions {
        device: args.device.clone(),
        destructive: args.destructive,
        yes: args.yes,
        thorough: args.thorough,
        journal_dir: args.journal_dir.clone(),
        confirm: crate::confirm::confirm_data_loss,
        note: errln,
    }
}

/// Stage lines on a terminal; Ctrl-C and SIGTERM ask the probe to stop.
struct Stages {
    show: bool,
}

impl Watch for Stages {
    fn stage(&self, what: &str) {
        if self.show {
            errln(&format!("verify-capacity: {what}"));
        }
    }

    fn stop(&self) -> Option<&'static str> {
        storage_bench::interrupt::requested()
    }
}

/// `storage-score verify-capacity`. Everything it checks before writing
/// reads the live system, whatever `--sysfs-root` says.
pub fn verify_capacity(args: &VerifyCapacityArgs) -> Result<(), Failure> {
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let watch = Stages { show: !args.json && std::io::stderr().is_terminal() };
    if args.files {
        return files(args, &watch);
    }
    let report = probe(&probe_options(args), &watch)?;

    if args.json {
        json_outln(&storage_session::document::encode(storage_session::document::CAPACITY, &report)?);
    } else {
        out(&report.text());
    }
    if report.verdict.is_fake() { Err(Failure::Fake(report.summary())) } else { Ok(()) }
}

fn files(args: &VerifyCapacityArgs, watch: &Stages) -> Result<(), Failure> {
    let dir = Path::new(&args.device);
    if !dir.is_dir() {
        return Err(Failure::Usage(format!(
            "--files wants a directory on the mounted card, and {} is not one; for the whole device, leave --files out",
            args.device
        )));
    }
    // The links on the path are followed here, once, as for any path a
    // user gives; from then on none is: the directory is opened by its real
    // path, and every file made relative to that handle.
    let real = std::fs::canonicalize(dir)
        .map_err(|e| Failure::Usage(format!("{}: {e}; give a directory on the mounted card", args.device)))?;
    let report = storage_capacity::files::verify_files(&real, watch).map_err(|e| match e {
        storage_capacity::files::FilesError::Stopped(ProbeError::Interrupted(signal)) => {
            Failure::Run(format!("interrupted by {signal}; the scratch files had no names and are gone"))
        }
        storage_capacity::files::FilesError::NoRoom { .. } => Failure::Refused(e.to_string()),
        other => Failure::Usage(other.to_string()),
    })?;
    if args.json {
        json_outln(&storage_session::document::encode(storage_session::document::CAPACITY, &report)?);
    } else {
        let size = storage_capacity::verdict::size;
        outln(&format!(
            "{}: {}: {} of free space written and read back, {} held its data, {} did not ({} left free for the system)",
            report.dir,
            if report.verdict.is_fake() { format!("FAKE ({})", report.verdict.as_str()) } else { "genuine".to_owned() },
            size(report.tested_bytes),
            size(report.usable_bytes),
            size(report.bad_bytes),
            size(report.reserve_bytes)
        ));
        for note in &report.notes {
            outln(&format!("  note: {note}"));
        }
    }
    if report.verdict.is_fake() {
        Err(Failure::Fake(format!(
            "{} is on a fake card ({}): {} of the {} written there did not hold its data; copy your files off it",
            report.dir,
            report.verdict.as_str(),
            storage_capacity::verdict::size(report.bad_bytes),
            storage_capacity::verdict::size(report.tested_bytes)
        )))
    } else {
        Ok(())
    }
}
