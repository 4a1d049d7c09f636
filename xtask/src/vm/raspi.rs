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
//!   the trixie chroot's apt ([`crate::cross`]), which knows arm64; the host's
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
//! host, and the quick run exits 0 with all nine figures and a score.
//! `target/vm/raspi/run/` keeps `serial.log`, `identify.json` and `run.json`.

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde_json::Value;
use storage_scoring::schema::MEASUREMENT_KEYS;

use super::checks::{self, Check};
use super::guest::{self, GuestOutput, GuestPlan};
use super::host::{apt_get, is_root, which, workspace_and_target};
use super::kernel::{self, Apt, Source};
use super::{Options, Paths, Skip, initramfs, qemu, step};
use crate::cross::{AARCH64, Chroot};

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

pub fn main(opts: &Options) -> ExitCode {
    let started = Instant::now();
    let result = run(opts);
    let elapsed = started.elapsed().as_secs_f64();
    match result {
        Ok(results) => {
            let failed = results.iter().filter(|c| !c.passed).count();
            eprintln!("vm-raspi: took {elapsed:.0} s");
            println!("vm-raspi: {} passed, {failed} failed", results.len() - failed);
            if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE }
        }
        Err(e) => match e.downcast_ref::<Skip>() {
            Some(Skip(reason)) => {
                println!("vm-raspi: skipped: {reason}");
                println!("vm-raspi: 0 passed, 0 failed, 1 skipped");
                ExitCode::SUCCESS
            }
            None => {
                println!("FAIL vm-raspi did not get as far as the checks: {e:#}");
                println!("vm-raspi: 0 passed, 1 failed");
                ExitCode::FAILURE
            }
        },
    }
}

fn run(opts: &Options) -> Result<Vec<Check>> {
    let (qemu_bin, cpio) = host_tools()?;
    let (workspace, target_dir) = workspace_and_target()?;
    let raspi = target_dir.join("vm").join("raspi");
    let paths = Paths { workspace: workspace.clone(), kernel: raspi.join("kernel"), run: raspi.join("run") };
    let _ = std::fs::remove_dir_all(&paths.run);
    std::fs::create_dir_all(&paths.run)?;

    let chroot = Chroot::prepare(&workspace, &target_dir, &[AARCH64])?;
    let source = Source { meta_package: "linux-image-arm64:arm64", apt: Apt::Chroot(&chroot), dtbs: &[DTB] };
    let kernel = kernel::prepare(&paths, &source, MODULES)?;
    step(&format!("kernel {} ({}; modules: {})", kernel.package, kernel.release, kernel.module_names().join(" ")));
    let busybox = busybox(&paths, &source)?;

    let binary = match &opts.binary {
        Some(path) => path.canonicalize().with_context(|| format!("no binary at {}", path.display()))?,
        None => {
            step("building storage-score for aarch64 in the trixie chroot");
            chroot.cargo_build(&["storage-score"], &[AARCH64])?.remove(0).join("storage-score")
        }
    };
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let plan = GuestPlan { clock: Some(now), run_quick: true, doctor: true, exit: "reboot -f" };
    let init = guest::init_script(&kernel.module_names(), &plan);
    let contents = initramfs::Contents { busybox: &busybox, cpio: &cpio, binary: &binary, init: &init };
    let initrd = initramfs::pack(&paths, &contents, &kernel)?;

    let image = qemu::create_sd_image(&paths.run, SD_IMAGE_BYTES)?;
    let dtb = kernel.dtbs.first().context("the kernel was prepared without its device tree")?;
    let boot = qemu::Boot {
        machine: qemu::Machine::Raspi3b { dtb },
        kernel: &kernel.vmlinuz,
        initrd: &initrd,
        sd_image: &image,
        timeout: opts.timeout,
    };
    step(&format!("booting: {}", boot.command_line(&qemu_bin)));
    let outcome = qemu::run(&qemu_bin, &boot, &paths.run.join("serial.log"));
    let _ = std::fs::remove_file(&image);
    let outcome = outcome?;
    step(&format!(
        "guest finished in {:.1} s{}; serial log: {}",
        outcome.elapsed.as_secs_f64(),
        if outcome.timed_out { " (TIMED OUT, killed)" } else { "" },
        outcome.log_path.display()
    ));

    let out = guest::parse(&outcome.log);
    guest::print_summary(&out);
    print_run(&out);
    for (name, text) in
        [("identify.json", &out.identify_json), ("run.json", &out.run_json), ("doctor.json", &out.doctor_json)]
    {
        if let Some(text) = text {
            let _ = std::fs::write(paths.run.join(name), text);
        }
    }
    let mut results = checks::run(&checks::Expected::qemu_card(SD_IMAGE_BYTES), &out, outcome.timed_out);
    results.extend(pi_checks(&out));
    for check in &results {
        println!("{check}");
    }
    Ok(results)
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
        "doctor takes under 2 s on the emulated Pi 3B",
        seconds.is_some_and(|s| s < 2.0),
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
        "all nine figures measured",
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
        assert!(checks.iter().any(|c| c.name == "all nine figures measured" && !c.passed));
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
