//! `cargo xtask vm-doctor`: `storage-score doctor` against the real Linux
//! `nvme` and `ahci` drivers, under QEMU (TCG), compared with what QEMU is
//! set to report.
//!
//! The guest has two NVMe controllers, one SATA disk and one USB disk:
//! - `nvme0n1`: QEMU's `nvme`, untouched; the guest writes 64 MiB to it
//!   first, so that its data-written counter has something to count, with
//!   a `doctor --log` snapshot before and after (the history's host-written
//!   bytes and the drive's Data Units must both move by 64 MiB, within 5%);
//! - `nvme1n1`: the same with `smart_critical_warning=7` (spare below
//!   threshold, temperature, reliability degraded), the property QEMU offers
//!   to raise a critical warning;
//! - `sda`: an `ide-hd` on an `ahci` controller: libata translates SG_IO's
//!   ATA PASS-THROUGH into the ATA SMART commands that QEMU's IDE core
//!   answers from its built-in attribute table; `identify` names it from
//!   ATA IDENTIFY DEVICE through the same SG_IO path a USB SAT bridge
//!   takes;
//! - `sdb`: a `usb-storage` disk on `qemu-xhci`, loaded after `sda` is
//!   there so that the names hold: QEMU's SCSI emulation (hw/scsi/
//!   scsi-disk.c) refuses ATA PASS-THROUGH as an invalid opcode, as a
//!   bridge without SAT does, so the name stays the INQUIRY strings, with
//!   the note that says so.
//!
//! What QEMU reports (hw/nvme/ctrl.c `nvme_smart_info` and Identify; hw/ide/
//! core.c `cmd_smart`, `smart_attributes`):
//! - NVMe: composite temperature 323 K (50 °C), WCTEMP 343 K (70 °C),
//!   CCTEMP 373 K (100 °C); available spare, its threshold and percentage
//!   used all 0 (QEMU fills none of them); power-on hours from the VM's
//!   clock (0 in a short run); data units written = ⌈sectors written / 1000⌉;
//!   critical warning = the property, plus the temperature bit when the
//!   temperature passes its threshold (never, by default).
//! - IDE: SMART RETURN STATUS "passed" (QEMU counts no errors); attributes
//!   1, 3, 4, 5, 9, 12 and 190 with fixed values: spin-up raw 16, start/stop
//!   raw 100, power-on hours raw 1, airflow temperature raw 0x1f1f001f
//!   (31 °C); thresholds 6, 0, 20, 36, 0, 0, 50. QEMU has no property to
//!   change any of them, so no failing ATA drive can be made here.
//! - IDE IDENTIFY DEVICE (hw/ide/core.c `ide_identify`): `padstr` puts
//!   the serial in words 10-19 (the `serial` property, set here), the
//!   firmware in words 23-26 (`s->version`: the `ver` property, else
//!   `qemu_hw_version()`, "2.5+" on every machine type since QEMU 2.5)
//!   and the model in words 27-46 (`drive_model_str`: "QEMU HARDDISK"
//!   for an `ide-hd`), each padded with spaces and byte-swapped per word.
//! - SCSI INQUIRY of `usb-storage`'s disk (hw/scsi/scsi-disk.c): vendor
//!   "QEMU", product "QEMU HARDDISK", revision `qemu_hw_version()`.
//!
//! `target/vm/doctor/run/` keeps `serial.log` and each device's JSON.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::checks::{self, Check};
use super::guest::{GUEST_BINARY, GUEST_MOUNTS, section};
use super::kernel::{self, Kernel};
use super::runner::{self, Prepared, Task};
use super::{Options, Paths, host, initramfs, qemu};

/// The drivers and what they need, dependencies added by [`kernel::prepare`].
pub const MODULES: &[&str] = &["nvme", "ahci", "sd_mod", "xhci-pci", "usb-storage"];

/// The module loaded last, once `sda` is there, so that the USB disk is `sdb`.
const LATE_MODULE: &str = "usb-storage";

/// `smart_critical_warning` of the second controller: bits 0-2.
pub const CRITICAL_WARNING: u8 = 0x07;

/// Each disk image (sparse).
const IMAGE_BYTES: u64 = 1 << 30;

/// What the guest writes to `nvme0n1` before asking it.
const WRITTEN_BYTES: u64 = 64 << 20;

/// The devices, in the order the guest asks them.
const DEVICES: [&str; 4] = ["nvme0n1", "nvme1n1", "sda", "sdb"];

/// `cargo xtask vm-doctor`.
pub fn main(opts: &Options) -> ExitCode {
    runner::main(&mut Doctor, opts)
}

/// The task: a PC with two NVMe controllers and a SATA disk.
#[derive(Debug)]
struct Doctor;

impl Task for Doctor {
    fn name(&self) -> &'static str {
        "vm-doctor"
    }

    fn prepare(&mut self, opts: &Options) -> Result<Prepared> {
        let tools = host::ensure_prerequisites()?;
        let shared = host::paths()?;
        let root = shared.run.parent().context("target/vm")?.join("doctor");
        let paths = Paths { workspace: shared.workspace.clone(), kernel: root.join("kernel"), run: root.join("run") };
        runner::fresh_run_dir(&paths)?;
        std::fs::create_dir_all(&paths.kernel)?;
        reuse_download(&shared.kernel, &paths.kernel);
        let kernel = kernel::prepare(&paths, &kernel::AMD64, MODULES)?;
        let binary = runner::guest_binary(opts, || initramfs::build_storage_score(&paths, opts.release))?;
        Ok(Prepared { paths, qemu: tools.qemu, cpio: tools.cpio, busybox: tools.busybox, kernel, binary })
    }

    fn init_script(&self, modules: &[String]) -> String {
        init_script(modules)
    }

    fn disks(&self, run: &Path) -> Result<Vec<PathBuf>> {
        let images: Vec<PathBuf> =
            ["nvme0.img", "nvme1.img", "sata.img", "usb.img"].iter().map(|n| run.join(n)).collect();
        for image in &images {
            std::fs::File::create(image)?.set_len(IMAGE_BYTES)?;
        }
        Ok(images)
    }

    fn machine<'a>(&self, _: &'a Kernel, disks: &'a [PathBuf]) -> Result<qemu::Machine<'a>> {
        let [nvme0, nvme1, sata, usb] = disks else { bail!("vm-doctor needs four disks, not {}", disks.len()) };
        Ok(qemu::Machine::PcStorage { nvme: [nvme0, nvme1], critical_warning: CRITICAL_WARNING, sata, usb })
    }

    fn checks(&self, run: &Path, outcome: &qemu::Outcome) -> Result<Vec<Check>> {
        let lines: Vec<&str> = outcome.log.lines().collect();
        let mut results = Vec::new();
        for dev in DEVICES {
            let json = section(&lines, &format!("===SS-JSON-BEGIN=== {dev}"), "===SS-JSON-END===");
            let table = section(&lines, &format!("===SS-TABLE-BEGIN=== {dev}"), "===SS-TABLE-END===");
            if let Some((text, _)) = &table {
                println!("--- storage-score doctor /dev/{dev} (in the guest)");
                for line in text.lines() {
                    println!("    {line}");
                }
            }
            if let Some((text, _)) = &json {
                let _ = std::fs::write(run.join(format!("{dev}.json")), text);
            }
            results.extend(device_checks(dev, json, table));
        }
        let history = section(&lines, "===SS-HISTORY-BEGIN===", "===SS-HISTORY-END===").map(|(text, _)| text);
        if let Some(text) = &history {
            let _ = std::fs::write(run.join("history.jsonl"), text);
        }
        results.extend(history_checks(history.as_deref()));
        if let Some((metrics, exit)) = section(&lines, "===SS-PROM-BEGIN===", "===SS-PROM-END===") {
            let file = run.join("nvme1n1.prom");
            std::fs::write(&file, format!("{metrics}\n"))?;
            results.push(promtool_check(&file, &metrics, exit));
        }
        if let Some((dmesg, _)) = section(&lines, "===SS-DMESG-BEGIN===", "===SS-DMESG-END===") {
            println!("--- guest dmesg (nvme, ata)");
            for line in dmesg.lines() {
                println!("    {line}");
            }
        }
        Ok(results)
    }
}

/// The kernel `.deb` that `vm-identify` already downloaded, hard-linked
/// (or copied) into this task's cache, so it is fetched once.
fn reuse_download(from: &Path, to: &Path) {
    let Ok(entries) = std::fs::read_dir(from) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_deb = name.to_string_lossy().starts_with("linux-image-") && name.to_string_lossy().ends_with(".deb");
        let dest = to.join(&name);
        if is_deb && !dest.exists() && std::fs::hard_link(entry.path(), &dest).is_err() {
            let _ = std::fs::copy(entry.path(), &dest);
        }
    }
}

/// The guest's `/init`: load the drivers, wait for the disks, write to the
/// first NVMe drive, then `doctor` on each disk, as JSON and as the table
/// (timed by busybox `time`).
fn init_script(modules: &[String]) -> String {
    format!(
        r#"#!/bin/busybox sh
# Generated by `cargo xtask vm-doctor` (lab/src/vm/doctor.rs).
{mounts}echo "===SS-GUEST=== kernel $(uname -r)"
for m in {modules}; do
  [ $m = {late} ] && continue
  insmod /lib/modules/$m.ko || echo "===SS-INSMOD-FAILED=== $m"
done
n=0
while {{ [ ! -b /dev/nvme0n1 ] || [ ! -b /dev/nvme1n1 ] || [ ! -b /dev/sda ]; }} && [ $n -lt 60 ]; do sleep 0.5; n=$((n+1)); done
insmod /lib/modules/{late}.ko || echo "===SS-INSMOD-FAILED=== {late}"
n=0
while [ ! -b /dev/sdb ] && [ $n -lt 60 ]; do sleep 0.5; n=$((n+1)); done
echo 1 > /proc/sys/kernel/printk
{bin} doctor /dev/nvme0n1 --log --quiet >/dev/null 2>/tmp/err
echo "===SS-LOG=== before exit=$?"; cat /tmp/err
dd if=/dev/zero of=/dev/nvme0n1 bs=1048576 count={written_mib} conv=fsync 2>/dev/null
{bin} doctor /dev/nvme0n1 --log --quiet >/dev/null 2>/tmp/err
echo "===SS-LOG=== after exit=$?"; cat /tmp/err
echo "===SS-HISTORY-BEGIN==="
cat /var/lib/storage-score/history/*.jsonl
echo "===SS-HISTORY-END==="
echo "===SS-PROM-BEGIN==="
{bin} doctor /dev/nvme1n1 --prometheus
echo "===SS-PROM-END=== exit=$?"
for d in {devices}; do
  echo "===SS-JSON-BEGIN=== $d"
  {bin} doctor /dev/$d --json 2>/tmp/err
  echo "===SS-JSON-END=== exit=$?"
  cat /tmp/err
  echo "===SS-TABLE-BEGIN=== $d"
  time {bin} doctor /dev/$d 2>&1
  echo "===SS-TABLE-END=== exit=$?"
done
echo ===SS-DMESG-BEGIN===
dmesg | grep -i -e nvme -e 'ata[0-9]' -e ahci -e 'sd [0-9]:' -e usb
echo ===SS-DMESG-END===
poweroff -f
"#,
        mounts = GUEST_MOUNTS,
        modules = modules.join(" "),
        devices = DEVICES.join(" "),
        late = LATE_MODULE,
        written_mib = WRITTEN_BYTES >> 20,
        bin = GUEST_BINARY,
    )
}

/// busybox `time`'s `real\t0m 0.12s` as seconds.
pub(super) fn real_seconds(table: &str) -> Option<f64> {
    let line = table.lines().find(|l| l.trim_start().starts_with("real"))?;
    let value = line.trim_start().strip_prefix("real")?.trim();
    let (minutes, seconds) = value.split_once('m')?;
    Some(minutes.trim().parse::<f64>().ok()? * 60.0 + seconds.trim().trim_end_matches('s').parse::<f64>().ok()?)
}

/// The checks for one device, against what QEMU is set to report.
/// Doctor only reads what the device and kernel already know: no test,
/// no wait. Under TCG it takes about 1 s; a bound of 10 s still catches a
/// doctor that starts a self-test or a benchmark, while a loaded host (2.03 s
/// once, with benchmarks beside it) does not fail it. How fast it is, is
/// not a test's to say.
pub const DOCTOR_SECONDS: f64 = 10.0;

fn device_checks(dev: &str, json: Option<(String, Option<i32>)>, table: Option<(String, Option<i32>)>) -> Vec<Check> {
    let mut out = Vec::new();
    let Some((text, exit)) = json else {
        return vec![Check::new(format!("{dev}: doctor --json ran"), false, "the guest printed nothing")];
    };
    let report: Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => {
            out.push(Check::new(format!("{dev}: one JSON document"), false, e.to_string()));
            return out;
        }
    };
    let mask = exit_mask(&report);
    out.push(Check::new(
        format!("{dev}: doctor's exit status is the bit mask of its findings ({mask})"),
        exit == Some(mask) && (dev != "nvme1n1" || mask & 8 != 0),
        format!("{exit:?}"),
    ));
    let seconds = table.as_ref().and_then(|(t, _)| real_seconds(t));
    out.push(Check::new(
        format!("{dev}: doctor takes under {DOCTOR_SECONDS} s (TCG guest)"),
        seconds.is_some_and(|s| s < DOCTOR_SECONDS),
        seconds.map_or("no timing printed".to_owned(), |s| format!("{s:.2} s")),
    ));
    let expected: Vec<(&str, Value)> = match dev {
        "nvme0n1" => vec![
            ("/device/kind", json!("nvme")),
            ("/device/model", json!("QEMU NVMe Ctrl")),
            ("/health/source", json!("nvme-smart-log")),
            ("/health/status", json!("ok")),
            ("/health/critical_warning", json!([])),
            ("/health/temperature_c", json!(50)),
            ("/health/temperature_warning_c", json!(70)),
            ("/health/temperature_critical_c", json!(100)),
            ("/health/percentage_used", json!(0)),
            ("/health/available_spare_percent", json!(0)),
            ("/health/power_on_hours", json!(0)),
            ("/health/media_errors", json!(0)),
            // ⌈131072 sectors / 1000⌉ = 132 units of 512000 bytes.
            ("/health/data_written_bytes", json!(WRITTEN_BYTES.div_ceil(512).div_ceil(1000) * 512_000)),
        ],
        "nvme1n1" => vec![
            ("/health/source", json!("nvme-smart-log")),
            ("/health/status", json!("failing")),
            ("/health/critical_warning", json!(["spare-below-threshold", "temperature", "reliability-degraded"])),
            ("/health/temperature_c", json!(50)),
            ("/health/data_written_bytes", json!(0)),
        ],
        "sdb" => vec![
            ("/device/kind", json!("usb")),
            ("/device/model_source", json!("scsi-inquiry")),
            ("/device/vendor", json!("QEMU")),
            ("/device/model", json!("QEMU HARDDISK")),
            ("/device/firmware", json!("2.5+")),
            ("/device/usb/scsi_model", json!("QEMU HARDDISK")),
        ],
        _ => vec![
            ("/device/kind", json!("sata")),
            // From ATA IDENTIFY DEVICE, not libata's INQUIRY (vendor "ATA").
            ("/device/model_source", json!("ata-identify")),
            ("/device/model", json!("QEMU HARDDISK")),
            ("/device/serial", json!("SSDOCTOR2")),
            ("/device/firmware", json!("2.5+")),
            ("/health/source", json!("ata-smart")),
            ("/health/status", json!("ok")),
            ("/health/smart_passed", json!(true)),
            ("/health/temperature_c", json!(31)),
            ("/health/power_on_hours", json!(1)),
            ("/health/power_cycles", json!(0)),
            ("/health/reallocated_sectors", json!(0)),
        ],
    };
    for (path, value) in expected {
        out.push(named(dev, checks::field_check(&report, path, &value)));
    }
    if dev == "sda" {
        out.extend(ata_table_checks(&report));
        out.push(Check::new(
            "sda: no vendor beside the ATA model (ATA has none; libata's INQUIRY says \"ATA\")",
            report.pointer("/device/vendor").is_none(),
            report["device"]["vendor"].to_string(),
        ));
    }
    if dev == "sdb" {
        out.extend(usb_fallback_checks(&report));
    }
    if dev == "nvme1n1" {
        let hot = report["advice"].as_array().is_some_and(|a| a.iter().any(|x| x["code"] == "hot"));
        out.push(Check::new(
            "nvme1n1: the raised temperature warning gives `hot` advice",
            hot,
            report["advice"].to_string(),
        ));
    }
    out
}

/// The USB disk whose "bridge" refuses ATA PASS-THROUGH: no serial made
/// up, and the one note saying the name is the INQUIRY translation.
fn usb_fallback_checks(report: &Value) -> Vec<Check> {
    let notes = report["device"]["notes"].as_array().cloned().unwrap_or_default();
    let inquiry: Vec<&Value> =
        notes.iter().filter(|n| n.as_str().is_some_and(|n| n.contains("SCSI INQUIRY translation"))).collect();
    vec![
        Check::new(
            "sdb: one note says the name is the bridge's INQUIRY translation (IDENTIFY refused)",
            inquiry.len() == 1 && inquiry[0].as_str().is_some_and(|n| n.ends_with("SAT: got no ATA answer)")),
            format!("{inquiry:?}"),
        ),
        Check::new(
            "sdb: no serial without an ATA answer",
            report.pointer("/device/serial").is_none(),
            report["device"]["serial"].to_string(),
        ),
    ]
}

/// docs/doctor.md#exit-status, from the report: 8 failing, 16 a warning
/// (advice warn or critical, health warn, 80% or more used), 32 unreadable.
pub(super) fn exit_mask(report: &Value) -> i32 {
    let h = &report["health"];
    let mut mask = 0;
    if h["status"] == "failing" {
        mask |= 8;
    }
    let used = h["percentage_used"].as_u64().or_else(|| h["percentage_used_range"][1].as_u64());
    let advice = report["advice"].as_array().cloned().unwrap_or_default();
    if h["status"] == "warn"
        || used.is_some_and(|p| p >= 80)
        || advice.iter().any(|a| a["severity"] == "warn" || a["severity"] == "critical")
    {
        mask |= 16;
    }
    if h["unreadable"] == true {
        mask |= 32;
    }
    mask
}

/// `doctor --log` before and after the guest wrote [`WRITTEN_BYTES`] to
/// nvme0n1: both the host's counter and the drive's Data Units Written
/// move by what was written, within 5%.
fn history_checks(history: Option<&str>) -> Vec<Check> {
    let Some(text) = history else {
        return vec![Check::new("nvme0n1: doctor --log wrote a history", false, "the guest printed none")];
    };
    let lines: Vec<Value> = text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let [before, after] = lines.as_slice() else {
        return vec![Check::new("nvme0n1: two snapshots logged", false, format!("{} lines: {text}", lines.len()))];
    };
    let delta =
        |pointer: &str| Some(after.pointer(pointer)?.as_u64()? as f64 - before.pointer(pointer)?.as_u64()? as f64);
    let within = |d: Option<f64>| d.is_some_and(|d| (d / WRITTEN_BYTES as f64 - 1.0).abs() <= 0.05);
    let show = |d: Option<f64>| {
        d.map_or("absent".to_owned(), |d| format!("{d:.0} bytes, {:+.2}%", (d / WRITTEN_BYTES as f64 - 1.0) * 100.0))
    };
    let host = delta("/host_written_bytes");
    let device = delta("/health/data_written_bytes");
    vec![
        Check::new(
            "nvme0n1: the two snapshots are one device in one boot",
            before["device_id"] == after["device_id"]
                && before["boot_id"] == after["boot_id"]
                && before["boot_id"].is_string(),
            format!("{} {}", after["device_id"], after["boot_id"]),
        ),
        Check::new("nvme0n1: host_written_bytes moved by the 64 MiB written, within 5%", within(host), show(host)),
        Check::new(
            "nvme0n1: the drive's data written (Data Units) moved by the 64 MiB, within 5%",
            within(device),
            show(device),
        ),
    ]
}

/// `promtool check metrics` on the failing drive's metrics, where the
/// host has promtool (Debian's `prometheus`).
fn promtool_check(file: &Path, metrics: &str, exit: Option<i32>) -> Check {
    let name = "nvme1n1: doctor --prometheus passes promtool check metrics";
    let has = |m: &str| metrics.lines().any(|l| l.starts_with(m));
    let complete = exit == Some(24)
        && has("storage_score_nvme_critical_warning{")
        && has("storage_score_media_errors_total{")
        && has("storage_score_available_spare_ratio{");
    let Ok(input) = std::fs::File::open(file) else { return Check::new(name, false, "cannot reopen the metrics") };
    match std::process::Command::new("promtool").args(["check", "metrics"]).stdin(input).output() {
        Ok(out) => Check::new(
            name,
            out.status.success() && complete,
            format!("exit {exit:?}; {}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
                .trim()
                .to_owned(),
        ),
        Err(e) => Check::new(name, false, format!("promtool did not run ({e}): apt-get install prometheus")),
    }
}

fn named(dev: &str, mut check: Check) -> Check {
    check.name = format!("{dev}: {}", check.name);
    check
}

/// QEMU's IDE attribute table, attribute by attribute: (id, value, worst,
/// raw, threshold).
const QEMU_IDE: [(u64, u64, u64, u64, u64); 7] = [
    (1, 100, 100, 0, 6),
    (3, 100, 100, 16, 0),
    (4, 100, 100, 100, 20),
    (5, 100, 100, 0, 36),
    (9, 100, 100, 1, 0),
    (12, 100, 100, 0, 0),
    (190, 69, 69, 0x1f1f_001f, 50),
];

fn ata_table_checks(report: &Value) -> Vec<Check> {
    let attrs = report["health"]["attributes"].as_array().cloned().unwrap_or_default();
    let got: Vec<(u64, u64, u64, u64, u64)> = attrs
        .iter()
        .map(|a| {
            let n = |k: &str| a[k].as_u64().unwrap_or(u64::MAX);
            (n("id"), n("value"), n("worst"), n("raw"), a["threshold"].as_u64().unwrap_or(0))
        })
        .collect();
    vec![Check::new(
        "sda: the SMART attribute table is QEMU's (id, value, worst, raw, threshold)",
        got == QEMU_IDE,
        format!("{got:?}"),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_busybox_time() {
        assert_eq!(real_seconds("doctor took 0.05 s\nreal\t0m 0.12s\nuser\t0m 0.01s\n"), Some(0.12));
        assert_eq!(real_seconds("real 1m 2.50s"), Some(62.5));
        assert_eq!(real_seconds("nothing"), None);
    }

    #[test]
    fn the_written_bytes_are_counted_in_qemus_units() {
        assert_eq!(WRITTEN_BYTES.div_ceil(512).div_ceil(1000) * 512_000, 67_584_000);
    }
}
