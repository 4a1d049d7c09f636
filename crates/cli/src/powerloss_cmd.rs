//! `power-loss` and its `witness`, `write` and `check`: the arguments, the
//! stage lines and the summary; the checks, the cycles, the files and the
//! verdict as the exit code are [`storage_session::powerloss`]'s and
//! [`storage_session::witness`]'s (docs/power-loss.md).

use std::io::IsTerminal;
use std::time::Duration;

use storage_score::args::PowerLossMode;
use storage_session::powerloss::{self, Cut, Power, PowerLossOptions, summary};
use storage_session::witness::{self, WriteOptions};

use crate::progress::Stages;
use crate::terminal::{errln, json_outln, outln};
use crate::{Failure, PowerLossArgs};

/// Stage lines on stderr, when `show`.
fn stages(show: bool) -> Stages {
    Stages { prefix: "power-loss: ".to_owned(), show }
}

/// `storage-score power-loss`.
pub fn power_loss(args: &PowerLossArgs, roots: &storage_platform::Roots) -> Result<(), Failure> {
    let confirm = crate::confirm::confirm_data_loss;
    match &args.mode {
        Some(PowerLossMode::Witness(witness)) => return witness::serve(&witness.listen, errln),
        Some(PowerLossMode::Write(write)) => {
            let options = WriteOptions {
                device: write.device.clone(),
                witness: write.witness.clone(),
                destructive: write.destructive,
                yes: write.yes,
                new: write.new,
            };
            return witness::write(&options, confirm, &stages(true));
        }
        Some(PowerLossMode::Check(check)) => {
            let watch = stages(!check.json && std::io::stderr().is_terminal());
            let cut =
                witness::check(&check.device, &check.witness, check.output.as_deref(), check.html.as_deref(), &watch)?;
            return finish(check.json, &cut);
        }
        None => {}
    }
    // clap requires these without a subcommand.
    let (Some(device), Some(power_off), Some(power_on)) = (&args.device, &args.power_off, &args.power_on) else {
        return Err(Failure::Usage(
            "power-loss needs DEVICE, --power-off and --power-on (or witness, write or check)".to_owned(),
        ));
    };
    let options = PowerLossOptions {
        device: device.clone(),
        power: Power { off: power_off.clone(), on: power_on.clone() },
        cycles: args.cycles,
        cut_within: args.cut_within,
        wait: Duration::from_secs(args.wait_s),
        file_bytes: args.file_mib << 20,
        destructive: args.destructive,
        yes: args.yes,
        output: args.output.clone(),
        html: args.html.clone(),
    };
    let watch = stages(!args.json && std::io::stderr().is_terminal());
    finish(args.json, &powerloss::power_loss(&options, roots, confirm, &watch)?)
}

/// The report out, and the verdict as the exit code.
fn finish(json: bool, cut: &Cut) -> Result<(), Failure> {
    if json {
        json_outln(&cut.json);
    } else {
        outln(&summary(&cut.report, &cut.last_seen));
    }
    powerloss::verdict(&cut.report, &cut.last_seen)
}
