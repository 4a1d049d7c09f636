//! `power-loss`: the arguments, the stage lines, the files and the summary;
//! the cycles, the report and the verdict as the exit code are
//! [`storage_session::powerloss`]'s (docs/power-loss.md).

use std::io::IsTerminal;
use std::time::Duration;

use storage_capacity::Watch;
use storage_score::args::PowerLossMode;
use storage_session::outputs::OutputFile;
use storage_session::powerloss::{self, Power, identity_of, summary};

use crate::terminal::{errln, json_outln, outln};
use crate::{Failure, PowerLossArgs};

/// Stage lines on stderr unless --json; Ctrl-C asks to stop between cycles.
pub(crate) struct Stages {
    pub(crate) show: bool,
}

impl Watch for Stages {
    fn stage(&self, what: &str) {
        if self.show {
            errln(&format!("power-loss: {what}"));
        }
    }

    fn stop(&self) -> Option<&'static str> {
        storage_bench::interrupt::requested()
    }
}

/// `--output` and `--html`, checked before anything is written.
pub(crate) struct Outputs {
    pub(crate) json: Option<OutputFile>,
    pub(crate) html: Option<OutputFile>,
}

impl Outputs {
    pub(crate) fn prepare(
        output: Option<&std::path::Path>,
        html: Option<&std::path::Path>,
    ) -> Result<Outputs, Failure> {
        Ok(Outputs {
            json: output.map(|path| OutputFile::prepare(path, "--output")).transpose()?,
            html: html.map(|path| OutputFile::prepare(path, "--html")).transpose()?,
        })
    }
}

/// `storage-score power-loss`.
pub fn power_loss(args: &PowerLossArgs, roots: &storage_platform::Roots) -> Result<(), Failure> {
    match &args.mode {
        Some(PowerLossMode::Witness(witness)) => return crate::witness_cmd::witness(witness),
        Some(PowerLossMode::Write(write)) => return crate::witness_cmd::write(write),
        Some(PowerLossMode::Check(check)) => return crate::witness_cmd::check(check),
        None => {}
    }
    // clap requires these without a subcommand.
    let (Some(device), Some(power_off), Some(power_on)) = (&args.device, &args.power_off, &args.power_on) else {
        return Err(Failure::Usage(
            "power-loss needs DEVICE, --power-off and --power-on (or witness, write or check)".to_owned(),
        ));
    };
    let power = Power { off: power_off.clone(), on: power_on.clone() };
    if !args.cut_within.is_finite() || !(0.01..=3600.0).contains(&args.cut_within) {
        return Err(Failure::Usage(format!(
            "--cut-within {}: give seconds between 0.01 and 3600, e.g. --cut-within 2",
            args.cut_within
        )));
    }
    let output = Outputs::prepare(args.output.as_deref(), args.html.as_deref())?;
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let run = storage_powerloss::fresh_run_id();
    let options = storage_powerloss::Options {
        cycles: args.cycles,
        cut_within: Duration::from_secs_f64(args.cut_within),
        wait: Duration::from_secs(args.wait_s),
        run,
    };
    let dir = std::path::Path::new(device.as_str());
    if dir.is_dir() && args.destructive {
        return Err(Failure::Usage(format!(
            "{} is a directory: the file mode writes a test file there and needs no --destructive; leave it out, or give the card's whole device (e.g. /dev/sdb)",
            device
        )));
    }
    // Which card this is, read before the first cut (it may not come
    // back): what a leaderboard keys the result by (docs/power-loss.md#the-report).
    let identity = identity_of(device, roots);
    let watch = Stages { show: !args.json && std::io::stderr().is_terminal() };
    if dir.is_dir() {
        let (cycles, path) = powerloss::file_mode(device, dir, args.file_mib << 20, &power, &options, &watch)?;
        return finish(device, args.json, &identity, cycles, &path, &output);
    }
    if !args.destructive {
        return Err(Failure::Usage(format!(
            "power-loss writes all over {}, and every byte on it is lost: add --destructive (or give a directory on the mounted card for the file mode)",
            device
        )));
    }
    let confirm = (!args.yes).then_some(crate::confirm::confirm_data_loss as storage_session::failure::Confirm);
    let (cycles, last_seen) = powerloss::device_mode(device, &power, &options, confirm, &watch)?;
    finish(device, args.json, &identity, cycles, &last_seen, &output)
}

/// The report out, and the verdict as the exit code.
pub(crate) fn finish(
    device: &str,
    json_out: bool,
    identity: &Option<storage_scoring::schema::Device>,
    cycles: Vec<storage_scoring::power_loss::Cycle>,
    last_seen: &str,
    output: &Outputs,
) -> Result<(), Failure> {
    let report = powerloss::report(device, identity, cycles);

    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
    if let Some(file) = &output.json {
        file.write(format!("{json}\n").as_bytes())?;
    }
    if let Some(file) = &output.html {
        file.write(storage_report::power_loss_page::render(&report).as_bytes())?;
    }
    if json_out {
        json_outln(&json);
    } else {
        outln(&summary(&report, last_seen));
    }
    powerloss::verdict(&report, last_seen)
}
