//! `power-loss`'s runs (docs/power-loss.md): the refusals of
//! verify-capacity --destructive (preflight, confirmation, an exclusive
//! open), then `storage-powerloss`'s cycles on the device or in a test
//! file, the report, and the verdict as the exit code.

use std::path::Path;

use storage_capacity::preflight::{self, Cleared, Refusal};
use storage_capacity::{RawDisk, Watch};
use storage_powerloss::host::CommandHost;
use storage_scoring::power_loss::{Cycle, PowerLossReport, PowerLossVerdict};
use storage_scoring::schema::Device;

use crate::Failure;
use crate::failure::Confirm;

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
