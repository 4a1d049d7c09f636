//! `power-loss`'s runs (docs/power-loss.md): the refusals of
//! verify-capacity --destructive (preflight, confirmation, an exclusive
//! open), then `storage-powerloss`'s cycles on the device or in a test
//! file, the report written to the files asked for, and the verdict as
//! the exit code.

use std::path::{Path, PathBuf};
use std::time::Duration;

use storage_capacity::preflight::{self, Cleared, Refusal};
use storage_capacity::{RawDisk, Watch};
use storage_powerloss::host::CommandHost;
use storage_scoring::power_loss::{Cycle, PowerLossReport, PowerLossVerdict};
use storage_scoring::schema::Device;

use crate::Failure;
use crate::failure::Confirm;
use crate::outputs::OutputFile;

/// What `power-loss DEVICE` (or a directory on it) was asked for.
#[derive(Debug, Clone)]
pub struct PowerLossOptions {
    /// The card's whole device, or a directory on its mounted filesystem
    /// (the file mode).
    pub device: String,
    pub power: Power,
    /// `--cycles`.
    pub cycles: u32,
    /// `--cut-within`, in seconds (0.01 to 3600).
    pub cut_within: f64,
    /// `--wait-s`: how long the card may take to come back.
    pub wait: Duration,
    /// The file mode's test file, in bytes.
    pub file_bytes: u64,
    pub destructive: bool,
    pub yes: bool,
    pub output: Option<PathBuf>,
    pub html: Option<PathBuf>,
}

/// A run's end: the report, as written to the files asked for, and the
/// name the card was last seen as (or the test file's).
#[derive(Debug)]
pub struct Cut {
    pub report: PowerLossReport,
    /// The report as JSON, for stdout.
    pub json: String,
    pub last_seen: String,
}

/// `power-loss DEVICE`: the arguments checked, the files opened, then the
/// file mode in a directory, or the device mode (with `--destructive`,
/// `confirm` asked unless `--yes`). Each stage is told to `watch`.
pub fn power_loss(
    options: &PowerLossOptions,
    roots: &storage_platform::Roots,
    confirm: Confirm,
    watch: &dyn Watch,
) -> Result<Cut, Failure> {
    let device = options.device.as_str();
    if !options.cut_within.is_finite() || !(0.01..=3600.0).contains(&options.cut_within) {
        return Err(Failure::Usage(format!(
            "--cut-within {}: give seconds between 0.01 and 3600, e.g. --cut-within 2",
            options.cut_within
        )));
    }
    let outputs = Outputs::prepare(options.output.as_deref(), options.html.as_deref())?;
    storage_bench::interrupt::install().map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    let run = storage_powerloss::Options {
        cycles: options.cycles,
        cut_within: Duration::from_secs_f64(options.cut_within),
        wait: options.wait,
        run: storage_powerloss::fresh_run_id(),
    };
    let dir = Path::new(device);
    let in_a_file = mode(device, options.destructive)?;
    // Which card this is, read before the first cut (it may not come
    // back): what a leaderboard keys the result by (docs/power-loss.md#the-report).
    let identity = identity_of(device, roots);
    let (cycles, last_seen) = if in_a_file {
        file_mode(device, dir, options.file_bytes, &options.power, &run, watch)?
    } else {
        let confirm = (!options.yes).then_some(confirm);
        device_mode(device, &options.power, &run, confirm, watch)?
    };
    outputs.write(device, &identity, cycles, last_seen)
}

/// Whether `device` is run in the file mode (a directory, without
/// `--destructive`) or the device mode (with it); a refusal otherwise.
pub fn mode(device: &str, destructive: bool) -> Result<bool, Failure> {
    match (Path::new(device).is_dir(), destructive) {
        (true, false) => Ok(true),
        (false, true) => Ok(false),
        (true, true) => Err(Failure::Usage(format!(
            "{device} is a directory: the file mode writes a test file there and needs no --destructive; leave it out, or give the card's whole device (e.g. /dev/sdb)"
        ))),
        (false, false) => Err(Failure::Usage(format!(
            "power-loss writes all over {device}, and every byte on it is lost: add --destructive (or give a directory on the mounted card for the file mode)"
        ))),
    }
}

/// `--output` and `--html`, checked before anything is written.
#[derive(Debug)]
pub struct Outputs {
    json: Option<OutputFile>,
    html: Option<OutputFile>,
}

impl Outputs {
    pub fn prepare(output: Option<&Path>, html: Option<&Path>) -> Result<Outputs, Failure> {
        Ok(Outputs {
            json: output.map(|path| OutputFile::prepare(path, "--output")).transpose()?,
            html: html.map(|path| OutputFile::prepare(path, "--html")).transpose()?,
        })
    }

    /// The [`report`] of `device`'s cycles, written to the files.
    pub fn write(
        &self,
        device: &str,
        identity: &Option<Device>,
        cycles: Vec<Cycle>,
        last_seen: String,
    ) -> Result<Cut, Failure> {
        let report = report(device, identity, cycles);
        let json =
            serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(format!("cannot encode JSON: {e}")))?;
        if let Some(file) = &self.json {
            file.write(format!("{json}\n").as_bytes())?;
        }
        if let Some(file) = &self.html {
            file.write(storage_report::power_loss_page::render(&report).as_bytes())?;
        }
        Ok(Cut { report, json, last_seen })
    }
}

/// The device mode: the card cleared and opened exclusively, `confirm`
/// asked (unless `--yes`), then the cycles. Returns them and the name the
/// card was last seen as.
pub fn device_mode(
    device: &str,
    power: &Power,
    options: &storage_powerloss::Options,
    confirm: Option<Confirm>,
    watch: &dyn Watch,
) -> Result<(Vec<Cycle>, String), Failure> {
    let cleared = clear(device)?;
    let disk = RawDisk::open(&cleared.node, cleared.dev).map_err(|e| crate::capacity::open_failure(device, e))?;
    if let Some(confirm) = confirm {
        confirm(device, "writes all over, and cuts the power of,")?;
    }
    let mut host = CommandHost {
        power_off: power.off.clone(),
        power_on: power.on.clone(),
        fingerprint: cleared.fingerprint.clone(),
        last_seen: device.to_owned(),
    };
    let cycles = storage_powerloss::engine::run(Box::new(disk), &mut host, options, watch)
        .map_err(|e| engine_failure(e, device))?;
    Ok((cycles, host.last_seen))
}

/// The file mode: a test file in `dir`, removed at the end whatever
/// happened (docs/power-loss.md#the-file-mode).
/// Returns the cycles and the test file's path.
pub fn file_mode(
    device: &str,
    dir: &Path,
    bytes: u64,
    power: &Power,
    options: &storage_powerloss::Options,
    watch: &dyn Watch,
) -> Result<(Vec<Cycle>, String), Failure> {
    use std::os::unix::fs::MetadataExt;
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
    let result = storage_powerloss::engine::run(disk, &mut host, options, watch);
    // The filesystem may not be back (did-not-return); then there is
    // nothing to remove, and its name says what it was.
    let _ = std::fs::remove_file(&path);
    let cycles = result.map_err(|e| engine_failure(e, device))?;
    Ok((cycles, path.display().to_string()))
}

/// The card under `target` (a device, or a directory on its filesystem) as
/// `identify` reads it; none when it cannot be told.
pub fn identity_of(target: &str, roots: &storage_platform::Roots) -> Option<storage_scoring::schema::Device> {
    storage_identify::identify(target, roots).ok().and_then(|(_, device)| device)
}

/// The refusals of a destructive run: a whole device nothing uses.
pub fn clear(device: &str) -> Result<Cleared, Failure> {
    preflight::check(device).map_err(|r| match r {
        Refusal::Usage(m) => Failure::Usage(m.replace("verify-capacity", "power-loss")),
        Refusal::Unsafe(m) => Failure::Refused(m.replace("verify-capacity", "power-loss")),
    })
}

/// The user's power commands.
#[derive(Debug, Clone)]
pub struct Power {
    /// The command that cuts the card's power.
    pub off: String,
    /// The command that gives it back.
    pub on: String,
}

pub fn engine_failure(e: storage_powerloss::Error, device: &str) -> Failure {
    match e {
        storage_powerloss::Error::Refused(m) => Failure::Refused(m),
        storage_powerloss::Error::TooSmall(_) => Failure::Usage(format!("{device}: {e}")),
        storage_powerloss::Error::Usage(m) => Failure::Usage(m),
        other => Failure::Run(other.to_string()),
    }
}

/// The report of `device`'s cycles, as of now.
pub fn report(device: &str, identity: &Option<Device>, cycles: Vec<Cycle>) -> PowerLossReport {
    let mut report = PowerLossReport::new(crate::document::now(), device.to_owned(), cycles);
    report.identity = identity.clone();
    report
}

/// The verdict as the exit code (docs/power-loss.md#verdict-and-exit-codes),
/// with the [`summary`] line.
pub fn verdict(report: &PowerLossReport, last_seen: &str) -> Result<(), Failure> {
    let line = summary(report, last_seen);
    match report.verdict {
        PowerLossVerdict::Kept => Ok(()),
        PowerLossVerdict::Lost => Err(Failure::PowerLoss(7, line)),
        PowerLossVerdict::Damaged => Err(Failure::PowerLoss(9, line)),
        PowerLossVerdict::DidNotReturn => Err(Failure::PowerLoss(10, line)),
    }
}

/// One line: the verdict, the cuts, the counts.
pub fn summary(report: &PowerLossReport, now_at: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn options(device: &str) -> PowerLossOptions {
        PowerLossOptions {
            device: device.to_owned(),
            power: Power { off: "false".to_owned(), on: "false".to_owned() },
            cycles: 1,
            cut_within: 2.0,
            wait: Duration::from_secs(1),
            file_bytes: 1 << 20,
            destructive: false,
            yes: false,
            output: None,
            html: None,
        }
    }

    fn refused(options: &PowerLossOptions) -> String {
        let no = |_: &str, _: &str| Err(Failure::Refused("no".to_owned()));
        power_loss(options, &storage_platform::Roots::live(), no, &storage_capacity::Quiet)
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn the_arguments_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut fast = options(dir.path().to_str().expect("utf-8"));
        fast.cut_within = 0.001;
        assert_eq!(refused(&fast), "--cut-within 0.001: give seconds between 0.01 and 3600, e.g. --cut-within 2");
        fast.cut_within = f64::NAN;
        assert!(refused(&fast).starts_with("--cut-within NaN"));
        let mut unwritable = options(dir.path().to_str().expect("utf-8"));
        unwritable.output = Some(dir.path().join("missing").join("report.json"));
        assert!(refused(&unwritable).starts_with("--output "));
    }

    #[test]
    fn a_directory_is_the_file_mode_and_a_device_needs_destructive() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_str().expect("utf-8");
        assert!(mode(path, false).expect("file mode"));
        assert!(mode(path, true).expect_err("no --destructive").to_string().contains("needs no --destructive"));
        assert!(!mode("/dev/nonexistent-card", true).expect("device mode"));
        let line = mode("/dev/nonexistent-card", false).expect_err("destructive").to_string();
        assert!(line.starts_with("power-loss writes all over /dev/nonexistent-card"), "{line}");
    }

    #[test]
    fn the_report_goes_to_the_files_and_its_verdict_to_the_exit_code() {
        let dir = tempfile::tempdir().expect("tempdir");
        let output = dir.path().join("cuts.json");
        let html = dir.path().join("cuts.html");
        let outputs = Outputs::prepare(Some(&output), Some(&html)).expect("prepare");
        let cut = outputs.write("/dev/sdx", &None, Vec::new(), "/dev/sdy".to_owned()).expect("write");
        assert_eq!(std::fs::read_to_string(&output).expect("json"), format!("{}\n", cut.json));
        assert!(std::fs::read_to_string(&html).expect("html").contains("/dev/sdx"));
        assert_eq!(cut.last_seen, "/dev/sdy");
        let kept = verdict(&cut.report, &cut.last_seen);
        assert_eq!(kept.is_ok(), cut.report.verdict == PowerLossVerdict::Kept);
    }
}
