//! `cargo xtask vm-raspi`: the aarch64 release binary on an emulated
//! Raspberry Pi 3B (`qemu-system-aarch64 -M raspi3b`, TCG).
//!
//! Unlike `vm-identify`'s PC, this machine has the Pi's own SD host
//! (bcm2835-sdhost, at 0x3f202000) and boots Debian's arm64 kernel with the
//! kernel's own `bcm2837-rpi-3-b.dtb`. The guest runs `identify` on
//! `/dev/mmcblk0` and then the quick benchmark on the whole card
//! (`run --profile quick --destructive --yes --json`; the 4 GiB image is made
//! for the run and removed after it).
//!
//! - The kernel and a static busybox are trixie's arm64 packages, fetched by
//!   the trixie chroot's apt ([`xtask::cross`]), which knows arm64; the host's
//!   dpkg is left with its own architectures. Cached in
//!   `target/vm/raspi/kernel/`.
//! - The binary is the one `cargo xtask dist` ships
//!   (`aarch64-unknown-linux-gnu`, static), built in the chroot, or
//!   `--binary PATH`.
//! - Modules: the sdhost driver (`bcm2835`) and the watchdog
//!   (`bcm2835_wdt`): raspi3b has no power-off, so the guest leaves with
//!   `reboot -f`, a watchdog reset that QEMU's `-no-reboot` turns into an exit.
//! - The clock is set from the host's first: the raspi3b has no RTC and
//!   would start in 1970, where a real Pi keeps the time (fake-hwclock, NTP).
//!
//! Checks: the PC's checks against QEMU's card (4 GiB: a high-capacity card,
//! CSD 2.0) and the guest's registers, plus: the card sits on the Pi's own
//! host, and the quick run exits 0 with every figure and a score.
//! `target/vm/raspi/run/` keeps `serial.log`, `identify.json` and `run.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::Value;
use storage_scoring::schema::MEASUREMENT_KEYS;

use super::checks::{self, Check};
use super::guest::{self, GuestOutput, GuestPlan};
use super::host::{apt_get, is_root, which, workspace_and_target};
use super::kernel::{self, Apt, Kernel, Source};
use super::runner::{self, Prepared, Task};
use super::{Options, Paths, qemu, step};
use xtask::cross::{AARCH64, Chroot};

/// The emulated card: a power of two (QEMU refuses others), and over 2 GiB
/// so that it is a high-capacity card like every card sold today.
pub const SD_IMAGE_BYTES: u64 = 4 << 30;

/// The sdhost driver and the watchdog, with their dependencies added by
/// [`kernel::prepare`]; `mmc_core` and `mmc_block` are built in.
pub const MODULES: &[&str] = &["bcm2835", "bcm2835_wdt"];

/// The Pi 3B's device tree, as Debian's arm64 kernel package ships it.
const DTB: &str = "broadcom/bcm2837-rpi-3-b.dtb";

/// bcm2835-sdhost's platform device: the card is on the Pi's own SD host.
const SDHOST: &str = "3f202000.mmc";

/// `cargo xtask vm-raspi`.
pub fn main(opts: &Options) -> ExitCode {
    runner::main(&mut Raspi, opts)
}

/// The task: an emulated Raspberry Pi 3B with its own SD host.
#[derive(Debug)]
struct Raspi;

impl Task for Raspi {
    fn name(&self) -> &'static str {
        "vm-raspi"
    }

    fn prepare(&mut self, opts: &Options) -> Result<Prepared> {
        let (qemu, cpio) = host_tools()?;
        let (workspace, target_dir) = workspace_and_target()?;
        let raspi = target_dir.join("vm").join("raspi");
        let paths = Paths { workspace: workspace.clone(), kernel: raspi.join("kernel"), run: raspi.join("run") };
        runner::fresh_run_dir(&paths)?;

        let chroot = Chroot::prepare(&workspace, &target_dir, &[AARCH64])?;
        let source = Source { meta_package: "linux-image-arm64:arm64", apt: Apt::Chroot(&chroot), dtbs: &[DTB] };
        let kernel = kernel::prepare(&paths, &source, MODULES)?;
        let busybox = busybox(&paths, &source)?;
        let binary = runner::guest_binary(opts, || {
            step("building storage-score for aarch64 in the trixie chroot");
            let dir = chroot.cargo_build(&["storage-score"], &[AARCH64])?.into_iter().next();
            Ok(dir.context("the chroot's cargo built nothing")?.join("storage-score"))
        })?;
        Ok(Prepared { paths, qemu, cpio, busybox, kernel, binary })
    }

    fn init_script(&self, modules: &[String]) -> String {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        let plan = GuestPlan { clock: Some(now), run_quick: true, doctor: true, exit: "reboot -f" };
        guest::init_script(modules, &plan)
    }

    fn disks(&self, run: &Path) -> Result<Vec<PathBuf>> {
        Ok(vec![qemu::create_sd_image(run, SD_IMAGE_BYTES)?])
    }

    fn machine<'a>(&self, kernel: &'a Kernel, _: &'a [PathBuf]) -> Result<qemu::Machine<'a>> {
        let dtb = kernel.dtbs.first().context("the kernel was prepared without its device tree")?;
        Ok(qemu::Machine::Raspi3b { dtb })
    }

    fn checks(&self, run: &Path, outcome: &qemu::Outcome) -> Result<Vec<Check>> {
        let out = guest::parse(&outcome.log);
        guest::print_summary(&out);
        print_run(&out);
        for (name, text) in
            [("identify.json", &out.identify_json), ("run.json", &out.run_json), ("doctor.json", &out.doctor_json)]
        {
            if let Some(text) = text {
                let _ = std::fs::write(run.join(name), text);
            }
        }
        let mut results = checks::run(&checks::Expected::qemu_card(SD_IMAGE_BYTES), &out, outcome.timed_out);
        results.extend(pi_checks(&out));
        Ok(results)
    }
}

/// qemu-system-aarch64 (Debian's qemu-system-arm) and cpio, installed with
/// apt-get when missing and we are root; a skip otherwise.
fn host_tools() -> Result<(PathBuf, PathBuf)> {
    let find = || Some((which("qemu-system-aarch64")?, which("cpio")?));
    if let Some(tools) = find() {
        return Ok(tools);
    }
    if !is_root() || which("apt-get").is_none() {
        return Err(super::skip("qemu-system-aarch64 or cpio is missing: `apt-get install qemu-system-arm cpio`"));
    }
    step("installing qemu-system-arm and cpio with apt-get");
    apt_get(&["update"])?;
    apt_get(&["install", "-y", "--no-install-recommends", "qemu-system-arm", "cpio"])?;
    find().context("apt-get installed qemu-system-arm and cpio, but they are still missing")
}

/// A static arm64 busybox from `busybox-static:arm64`, cached beside the kernel.
fn busybox(paths: &Paths, source: &Source<'_>) -> Result<PathBuf> {
    let cached = paths.kernel.join("busybox-arm64");
    if cached.is_file() {
        return Ok(cached);
    }
    let deb = kernel::download(paths, source, "busybox-static")?;
    let scratch = paths.kernel.join("busybox.tmp");
    let _ = std::fs::remove_dir_all(&scratch);
    let status = Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&scratch).status()?;
    let found = ["usr/bin/busybox", "bin/busybox"].iter().map(|p| scratch.join(p)).find(|p| p.is_file());
    let result = match (status.success(), found) {
        (true, Some(path)) => std::fs::copy(&path, &cached).map(|_| cached.clone()).map_err(anyhow::Error::from),
        _ => Err(anyhow::anyhow!("{} holds no busybox", deb.display())),
    };
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

/// What only the Pi run shows: the card on the Pi's own host, and the quick
/// benchmark's report.
fn pi_checks(out: &GuestOutput) -> Vec<Check> {
    let device_path = out.sysfs.get("sysfs_device_path").map(String::as_str).unwrap_or("");
    let mut checks = vec![Check::new(
        "the card is on the Pi's SD host (bcm2835-sdhost)",
        device_path.contains(SDHOST),
        if device_path.is_empty() { "no sysfs path printed" } else { device_path },
    )];
    checks.extend(doctor_checks(out));
    let seconds = out.run_seconds.map_or("?".to_owned(), |s| s.to_string());
    checks.push(Check::new(
        "run --profile quick exit code",
        out.run_exit == Some(0),
        format!("expected 0, got {} after {seconds} s", out.run_exit.map_or("nothing".to_owned(), |c| c.to_string())),
    ));
    match out.run_json.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(report)) => checks.extend(report_checks(&report)),
        Some(Err(e)) => checks.push(Check::new("run --json is one JSON document", false, e.to_string())),
        None => checks.push(Check::new("run --json is one JSON document", false, "the guest printed no run report")),
    }
    checks
}

/// `doctor` on the emulated Pi: it runs, within two seconds, and says the
/// card has no health source rather than guessing one (QEMU's card, MID
/// 0xaa, is no maker with a public CMD56 layout).
fn doctor_checks(out: &GuestOutput) -> Vec<Check> {
    // doctor's exit status is the bit mask of what its report found.
    let report = out.doctor_json.as_deref().and_then(|j| serde_json::from_str::<Value>(j).ok());
    let mask = report.as_ref().map(super::doctor::exit_mask);
    let mut checks = vec![Check::new(
        "doctor /dev/mmcblk0 exit code: the bit mask of its findings",
        mask.is_some() && out.doctor_exit == mask && out.doctor_json_exit == mask,
        format!("table {:?}, --json {:?}, findings {mask:?}", out.doctor_exit, out.doctor_json_exit),
    )];
    let seconds = out.doctor_table.as_deref().and_then(super::doctor::real_seconds);
    checks.push(Check::new(
        format!("doctor takes under {} s on the emulated Pi 3B", super::doctor::DOCTOR_SECONDS),
        seconds.is_some_and(|s| s < super::doctor::DOCTOR_SECONDS),
        seconds.map_or("no timing printed".to_owned(), |s| format!("{s:.2} s")),
    ));
    match out.doctor_json.as_deref().map(serde_json::from_str::<Value>) {
        Some(Ok(report)) => {
            checks.push(checks::field_check(&report, "/health/source", &Value::Null));
            let why = report["health"]["why"].as_str().unwrap_or("");
            checks.push(Check::new(
                "doctor says why the card has no health source",
                why.contains("no standard health report"),
                why,
            ));
            checks.push(checks::field_check(&report, "/system/board", &Value::from("Raspberry Pi 3 Model B")));
        }
        Some(Err(e)) => checks.push(Check::new("doctor --json is one JSON document", false, e.to_string())),
        None => {
            checks.push(Check::new("doctor --json is one JSON document", false, "the guest printed no doctor report"))
        }
    }
    checks
}

fn report_checks(report: &Value) -> Vec<Check> {
    let mut checks = vec![
        checks::field_check(report, "/schema", &Value::from("storage-score/1")),
        checks::field_check(report, "/profile", &Value::from("quick")),
        checks::field_check(report, "/device/sd/host/timing", &Value::from("sd high-speed")),
    ];
    let figures: Vec<String> = MEASUREMENT_KEYS
        .iter()
        .filter_map(|key| report["measurements"][key].as_f64().filter(|v| *v > 0.0).map(|v| format!("{key}={v}")))
        .collect();
    checks.push(Check::new(
        "every figure measured",
        figures.len() == MEASUREMENT_KEYS.len(),
        match report.get("skipped").filter(|s| !s.is_null()) {
            Some(skipped) => format!("{}; skipped: {skipped}", figures.join(" ")),
            None => figures.join(" "),
        },
    ));
    let score = &report["score"]["pibenchmarks"];
    checks.push(Check::new("a score", score.as_u64().is_some_and(|s| s > 0), format!("pibenchmarks {score}")));
    checks
}

/// Prints doctor's table and the quick run's stderr (its progress and
/// notes) after the summary.
fn print_run(out: &GuestOutput) {
    if let Some(table) = out.doctor_table.as_deref() {
        println!("--- storage-score doctor /dev/mmcblk0 (exit {:?})", out.doctor_exit);
        for line in table.lines() {
            println!("    {line}");
        }
    }
    if let Some(stderr) = out.run_stderr.as_deref().filter(|s| !s.is_empty()) {
        println!("--- storage-score run --profile quick: stderr");
        for line in stderr.lines() {
            println!("    {line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_without_figures_fails() {
        let report = serde_json::json!({"schema": "storage-score/1", "profile": "quick", "measurements": {}});
        let checks = report_checks(&report);
        assert!(checks.iter().any(|c| c.name == "every figure measured" && !c.passed));
        assert!(checks.iter().any(|c| c.name == "a score" && !c.passed));
    }

    #[test]
    fn the_card_must_be_on_the_sdhost() {
        let mut out = GuestOutput::default();
        out.sysfs.insert("sysfs_device_path".into(), "/sys/devices/platform/soc/3f300000.mmc/mmc_host/mmc0".into());
        assert!(!pi_checks(&out)[0].passed);
        out.sysfs.insert("sysfs_device_path".into(), format!("/sys/devices/platform/soc/{SDHOST}/mmc_host/mmc0"));
        assert!(pi_checks(&out)[0].passed);
    }
}
