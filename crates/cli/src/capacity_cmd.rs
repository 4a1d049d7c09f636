//! `verify-capacity`: the arguments, the stage lines, and the report
//! rendered; refusing or clearing the device, replaying an unfinished
//! journal, the probe and the exit codes (0 genuine, 4 fake) are
//! [`storage_session::capacity`]'s.

use std::io::IsTerminal;

use storage_session::capacity::{self, ProbeOptions, probe};

use crate::progress::Stages;
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

/// `storage-score verify-capacity`. Everything it checks before writing
/// reads the live system, whatever `--sysfs-root` says.
pub fn verify_capacity(args: &VerifyCapacityArgs) -> Result<(), Failure> {
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let watch = Stages { prefix: "verify-capacity: ".to_owned(), show: !args.json && std::io::stderr().is_terminal() };
    if args.files {
        return files(args, &watch);
    }
    let report = probe(&probe_options(args), &watch)?;

    if args.json {
        json_outln(&storage_session::document::encode(storage_session::document::CAPACITY, &report)?);
    } else {
        out(&report.text());
    }
    capacity::verdict(&report)
}

fn files(args: &VerifyCapacityArgs, watch: &Stages) -> Result<(), Failure> {
    let report = capacity::files(&args.device, watch)?;
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
    capacity::files_verdict(&report)
}
