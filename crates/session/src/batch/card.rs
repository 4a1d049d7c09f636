//! One card of a batch: refuse or clear it, identify it, verify its
//! capacity, run the profile, judge it. Each step is the one its own
//! command uses (`verify-capacity`'s probe, `run`'s measurement); a step
//! that fails ends that card with a reason, never the batch.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use storage_bench::Profile;
use storage_capacity::Watch;
use storage_capacity::preflight::{self, Refusal};
use storage_platform::Roots;
use storage_scoring::batch::require::Facts;
use storage_scoring::batch::{Capacity, Card, Require, Status};
use storage_scoring::run_profile;
use storage_scoring::schema::{Device, Measurements};

use super::BatchOptions;
use crate::Failure;
use crate::capacity::ProbeOptions;
use crate::measure::Measured;

/// Held by the card whose capacity is being verified.
static VERIFY_TURN: Mutex<()> = Mutex::new(());

/// What every card of the batch is put through.
pub struct Steps<'a> {
    pub options: &'a BatchOptions,
    pub require: Option<&'a Require>,
    pub roots: &'a Roots,
    /// A line on stderr (the command line's terminal), as it is.
    pub errln: fn(&str),
    /// Measures the card at a target: `run`'s measurement with the batch's
    /// profile, its progress heard as `run`'s is.
    pub measure: &'a (dyn Fn(&str) -> Result<Measured, Failure> + Sync),
}

impl std::fmt::Debug for Steps<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Steps").field("options", &self.options).field("require", &self.require).finish_non_exhaustive()
    }
}

impl Steps<'_> {
    /// Progress, one line per step, each naming its card (cards run side by side).
    pub fn say(&self, target: &str, what: &str) {
        (self.errln)(&format!("batch: {target}: {what}"));
    }
}

/// verify-capacity's stages, named with the card.
struct Stages<'a>(&'a str, &'a Steps<'a>);

impl Watch for Stages<'_> {
    fn stage(&self, what: &str) {
        self.1.say(self.0, &format!("verify-capacity: {what}"));
    }

    fn stop(&self) -> Option<&'static str> {
        storage_bench::interrupt::requested()
    }
}

/// Tests one card. The device comes back whole (serials and all) for the
/// summary's clone check; the caller hashes the serials.
pub fn test(target: &str, steps: &Steps<'_>) -> Card {
    let started = Instant::now();
    let mut card = Card { target: target.to_owned(), ..Card::default() };
    let end = |mut card: Card, status: Status, reason: Option<String>| {
        card.status = status;
        card.reason = reason.map(|r| r.replace('\n', " "));
        card.seconds = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
        card
    };
    if steps.options.unmount {
        for line in unmount_auto_mounted(Path::new(target)) {
            steps.say(target, &line);
        }
    }
    // The checks verify-capacity makes before it writes: a whole disk,
    // nothing mounted, not the root disk, not held, not swap.
    if let Err(refusal) = preflight::check(target) {
        return match refusal {
            Refusal::Unsafe(why) => end(card, Status::Refused, Some(why)),
            Refusal::Usage(why) => end(card, Status::Error, Some(why)),
        };
    }
    match storage_identify::identify(target, steps.roots) {
        Ok((_, Some(device))) => {
            card.reader = reader_port(&device, target, steps.roots);
            steps.say(target, &identified(&device));
            card.device = Some(device);
        }
        Ok((_, None)) => return end(card, Status::Error, Some(format!("{target}: no disk found behind it"))),
        Err(e) => return end(card, Status::Error, Some(e.to_string())),
    }

    let mut genuine = None;
    if steps.options.verify {
        let verify = ProbeOptions {
            device: target.to_owned(),
            destructive: steps.options.destructive,
            yes: true,
            thorough: false,
            journal_dir: steps.options.journal_dir.clone(),
            // Never asked: the batch asked once, up front (`yes`).
            confirm: |_, _| Ok(()),
            note: steps.errln,
        };
        // One probe at a time: the probes share the journal directory, whose
        // key one of them may be making while another reads it, and each
        // looks there for unfinished runs, where it would find the other's
        // live journal. Only this step takes turns; the measuring does not.
        let probed = {
            let _turn = VERIFY_TURN.lock().unwrap_or_else(|p| p.into_inner());
            crate::capacity::probe(&verify, &Stages(target, steps))
        };
        match probed {
            Ok(found) => {
                let fake = found.verdict.is_fake();
                genuine = Some(!fake);
                card.capacity = Some(Capacity {
                    verdict: found.verdict.as_str().to_owned(),
                    fake,
                    announced_bytes: found.announced_bytes,
                    usable_bytes: found.usable_bytes,
                    mode: found.mode.clone(),
                });
                if fake {
                    // Its reads past the real size fail or lie: no figure of
                    // it means anything, so none is measured; --require is
                    // still judged, to name the terms it fails.
                    if let Some(require) = steps.require {
                        let facts = Facts { measurements: &Measurements::default(), score: None, genuine };
                        card.require = Some(require.judge(&facts));
                    }
                    return end(card, Status::Fake, Some(found.summary_alone()));
                }
                steps.say(target, "verify-capacity: genuine");
            }
            Err(failure) => return failed(card, failure, end),
        }
    }

    let mut measurements = Measurements::default();
    let mut score = None;
    if let Some(profile) = steps.options.profile {
        let name = if profile == Profile::Compat { run_profile::COMPAT } else { run_profile::QUICK };
        steps.say(target, &format!("measuring ({name} profile)"));
        match (steps.measure)(target) {
            Ok(measured) => {
                measurements = measured.report.measurements.unwrap_or_default();
                card.figures = storage_scoring::schema::MEASUREMENT_KEYS
                    .iter()
                    .filter_map(|k| measurements.get(k).filter(|v| v.is_finite()).map(|v| ((*k).to_owned(), v)))
                    .collect();
                score = measured.report.score.as_ref().and_then(|s| s.pibenchmarks);
                card.score = measured.report.score;
                if let Some(e) = measured.error {
                    return failed(card, crate::measure::run_failure(e, &measured.plan), end);
                }
            }
            Err(failure) => return failed(card, failure, end),
        }
    }

    if let Some(require) = steps.require {
        let result = require.judge(&Facts { measurements: &measurements, score, genuine });
        let pass = result.pass;
        let why = result.failed.iter().zip(&result.why).map(|(t, w)| format!("{t} ({w})")).collect::<Vec<_>>();
        card.require = Some(result);
        if !pass {
            return end(card, Status::Fail, Some(format!("fails --require: {}", why.join("; "))));
        }
    }
    end(card, Status::Pass, None)
}

/// A step's failure as the card's end: a refusal is a refusal, anything
/// else (the card pulled out, an I/O error) an error of this card.
fn failed(card: Card, failure: Failure, end: impl Fn(Card, Status, Option<String>) -> Card) -> Card {
    match failure {
        Failure::Refused(why) => end(card, Status::Refused, Some(why)),
        Failure::Fake(why) => end(card, Status::Fake, Some(why)),
        Failure::Run(why)
        | Failure::Usage(why)
        | Failure::Require(why)
        | Failure::Died(why)
        | Failure::PowerLoss(_, why) => end(card, Status::Error, Some(why)),
    }
}

fn identified(device: &Device) -> String {
    let size = device.capacity_bytes.map(crate::scan::size_words).unwrap_or_else(|| "size unknown".to_owned());
    let name = crate::scan::model(device).unwrap_or_else(|| "no model".to_owned());
    format!("identified: {}, {name}, {size}", device.kind.as_str())
}

/// `--unmount`: unmounts, one at a time, the filesystems mounted straight
/// from the card or its partitions (what a desktop mounts under
/// `/media/USER/` when a card goes in), and says what it did. Never the
/// running system's disk, nor a filesystem mounted through another device
/// (a loop device, device-mapper), which someone set up on purpose. A
/// plain `umount` (never a lazy one) fails with EBUSY while a file is open
/// on it: that filesystem stays, and the card is then refused as mounted.
fn unmount_auto_mounted(node: &Path) -> Vec<String> {
    use storage_platform::usage::{self, InUse};
    let mut said = Vec::new();
    // Each pass finds the next mount; the bound ends a mount that will not go.
    for _ in 0..16 {
        match usage::check(node) {
            Err(InUse::Mounted { source, mount_point, through: None }) => {
                match nix::mount::umount2(&mount_point, nix::mount::MntFlags::empty()) {
                    Ok(()) => said.push(format!("unmounted {source} from {} (--unmount)", mount_point.display())),
                    Err(e) => {
                        let why = if e == nix::errno::Errno::EBUSY {
                            "files are open on it".to_owned()
                        } else {
                            e.to_string()
                        };
                        said.push(format!("left {source} mounted at {}: {why}", mount_point.display()));
                        break;
                    }
                }
            }
            _ => break,
        }
    }
    said
}

/// The USB port path (`1-1.3`) of the reader the card sits in: the last
/// USB device (not interface) on its sysfs path.
pub fn reader_port(device: &Device, target: &str, roots: &Roots) -> Option<String> {
    device.usb.as_ref()?;
    let name = Path::new(target).file_name()?.to_str()?;
    let disk = storage_platform::target::block_by_name(roots, name)?;
    usb_port(&disk.sys_dir)
}

/// The last component of `path` shaped like a USB port path (`1-1`,
/// `2-1.4.2`), not an interface (`1-1:1.0`).
pub fn usb_port(path: &Path) -> Option<String> {
    path.components()
        .rev()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| {
            let Some((bus, ports)) = c.split_once('-') else { return false };
            !bus.is_empty()
                && bus.bytes().all(|b| b.is_ascii_digit())
                && !ports.is_empty()
                && ports.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        })
        .map(str::to_owned)
}

/// The bus a card is on, for `--jobs`: cards on one USB reader or one host
/// controller take turns, others run side by side; a loop device is its
/// own bus.
pub fn bus_of(target: &str, roots: &Roots) -> String {
    let disk = Path::new(target)
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|name| storage_platform::target::block_by_name(roots, name));
    let Some(disk) = disk else { return target.to_owned() };
    let device = storage_platform::sysfs::resolve_dir(&disk.sys_dir.join("device"));
    if disk.name.starts_with("loop") || !device.exists() {
        return target.to_owned();
    }
    if let Some(port) = usb_port(&device) {
        return format!("usb:{port}");
    }
    // An MMC host, an NVMe controller, an ATA port: the device's parent.
    device.parent().map(|p| p.to_string_lossy().into_owned()).unwrap_or_else(|| target.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_is_the_last_usb_port_on_the_path() {
        let path = Path::new(
            "/sys/devices/platform/scb/fd500000.pcie/pci0000:00/0000:00:00.0/0000:01:00.0/usb2/2-1/2-1.3/2-1.3:1.0/host0/target0:0:0/0:0:0:0",
        );
        assert_eq!(usb_port(path).as_deref(), Some("2-1.3"));
        assert_eq!(usb_port(Path::new("/sys/devices/platform/emmc2bus/fe340000.mmc/mmc_host/mmc0/mmc0:aaaa")), None);
    }
}
