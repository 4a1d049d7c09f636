//! `power-loss`: the refusals of verify-capacity --destructive (preflight,
//! confirmation, an exclusive open), then `storage-powerloss`'s cycles, the
//! report, and the verdict as the exit code (docs/power-loss.md).

use std::io::IsTerminal;
use std::time::Duration;

use storage_capacity::preflight::{self, Cleared, Refusal};
use storage_capacity::{RawDisk, Watch};
use storage_powerloss::host::CommandHost;
use storage_scoring::power_loss::{PowerLossReport, PowerLossVerdict};

use crate::terminal::{errln, json_outln, outln};
use crate::{Failure, PowerLossArgs};
use storage_score::args::PowerLossMode;
use storage_session::outputs::OutputFile;

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
    if dir.is_dir() {
        return file_mode(args, device, &power, dir, &options, &output, &identity);
    }
    if !args.destructive {
        return Err(Failure::Usage(format!(
            "power-loss writes all over {}, and every byte on it is lost: add --destructive (or give a directory on the mounted card for the file mode)",
            device
        )));
    }
    let cleared = clear(device)?;
    let disk =
        RawDisk::open(&cleared.node, cleared.dev).map_err(|e| storage_session::capacity::open_failure(device, e))?;
    if !args.yes {
        crate::confirm::confirm_data_loss(device, "writes all over, and cuts the power of,")?;
    }
    let mut host = CommandHost {
        power_off: power.off.clone(),
        power_on: power.on.clone(),
        fingerprint: cleared.fingerprint.clone(),
        last_seen: device.to_owned(),
    };
    let watch = Stages { show: !args.json && std::io::stderr().is_terminal() };
    let cycles = storage_powerloss::engine::run(Box::new(disk), &mut host, &options, &watch)
        .map_err(|e| engine_failure(e, device))?;
    finish(device, args.json, &identity, cycles, &host.last_seen, &output)
}

/// The file mode: a test file in `dir`, removed at the end whatever
/// happened (docs/power-loss.md#the-file-mode).
fn file_mode(
    args: &PowerLossArgs,
    device: &str,
    power: &Power,
    dir: &std::path::Path,
    options: &storage_powerloss::Options,
    output: &Outputs,
    identity: &Option<storage_scoring::schema::Device>,
) -> Result<(), Failure> {
    use std::os::unix::fs::MetadataExt;
    let bytes = args.file_mib << 20;
    let (path, disk) =
        storage_powerloss::file::create(dir, bytes, &options.run).map_err(|e| engine_failure(e, device))?;
    let inode = std::fs::metadata(&path).map(|m| m.ino()).unwrap_or(0);
    let mut host = storage_powerloss::file::FileHost {
        power_off: power.off.clone(),
        power_on: power.on.clone(),
        path: path.clone(),
        inode,
        size: bytes,
    };
    let watch = Stages { show: !args.json && std::io::stderr().is_terminal() };
    let result = storage_powerloss::engine::run(disk, &mut host, options, &watch);
    // The filesystem may not be back (did-not-return); then there is
    // nothing to remove, and its name says what it was.
    let _ = std::fs::remove_file(&path);
    let cycles = result.map_err(|e| engine_failure(e, device))?;
    finish(device, args.json, identity, cycles, &path.display().to_string(), output)
}

/// The card under `target` (a device, or a directory on its filesystem) as
/// `identify` reads it; none when it cannot be told.
pub fn identity_of(target: &str, roots: &storage_platform::Roots) -> Option<storage_scoring::schema::Device> {
    storage_identify::identify(target, roots).ok().and_then(|(_, device)| device)
}

/// The refusals of a destructive run: a whole device nothing uses.
pub(crate) fn clear(device: &str) -> Result<Cleared, Failure> {
    preflight::check(device).map_err(|r| match r {
        Refusal::Usage(m) => Failure::Usage(m.replace("verify-capacity", "power-loss")),
        Refusal::Unsafe(m) => Failure::Refused(m.replace("verify-capacity", "power-loss")),
    })
}

/// The user's power commands.
struct Power {
    off: String,
    on: String,
}

pub(crate) fn engine_failure(e: storage_powerloss::Error, device: &str) -> Failure {
    match e {
        storage_powerloss::Error::Refused(m) => Failure::Refused(m),
        storage_powerloss::Error::TooSmall(_) => Failure::Usage(format!("{device}: {e}")),
        storage_powerloss::Error::Usage(m) => Failure::Usage(m),
        other => Failure::Run(other.to_string()),
    }
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
    let mut report = PowerLossReport::new(storage_session::document::now(), device.to_owned(), cycles);
    report.identity = identity.clone();

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
    let line = summary(&report, last_seen);
    match report.verdict {
        PowerLossVerdict::Kept => Ok(()),
        PowerLossVerdict::Lost => Err(Failure::PowerLoss(7, line)),
        PowerLossVerdict::Damaged => Err(Failure::PowerLoss(9, line)),
        PowerLossVerdict::DidNotReturn => Err(Failure::PowerLoss(10, line)),
    }
}

/// One line: the verdict, the cuts, the counts.
pub(crate) fn summary(report: &PowerLossReport, now_at: &str) -> String {
    let t = &report.totals;
    let counts = format!(
        "{} acknowledged records; lost {}, torn {}, misplaced {}, damaged {}",
        t.acknowledged, t.lost, t.torn, t.misplaced, t.damaged
    );
    match report.verdict {
        PowerLossVerdict::Kept => {
            format!("{}: kept everything it acknowledged over {} power cuts ({counts})", report.device, t.cycles)
        }
        PowerLossVerdict::Lost => format!(
            "{}: LOST acknowledged writes over {} power cuts ({counts}); do not trust its flushes",
            report.device, t.cycles
        ),
        PowerLossVerdict::Damaged => format!(
            "{}: DAMAGED data it had kept over {} power cuts ({counts}); do not use it where power can fail",
            report.device, t.cycles
        ),
        PowerLossVerdict::DidNotReturn => format!(
            "{}: did not come back within the wait after power cut {} (last seen as {now_at}; {counts})",
            report.device, t.cycles
        ),
    }
}
